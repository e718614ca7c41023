//! Linked increases (RFC 6356), MPTCP's coupled congestion control for one subflow.
//!
//! Slow start and the response to loss are NewReno's, per subflow. In congestion
//! avoidance an ACK of `acked` bytes grows this subflow's window by
//! `min(alpha * acked * mss / total, acked * mss / cwnd)`: never faster than a single
//! TCP on this path, and all subflows together no faster than one TCP on the best
//! path. The connection computes `alpha` and `total` over its subflows and hands them
//! over through [`CongestionControl::couple`] before each ACK.

use super::{AckEvent, CongestionControl, LossEvent, NewReno};
use crate::units::Time;

#[derive(Clone)]
pub struct Lia {
    /// Slow start and loss response are NewReno's.
    reno: NewReno,
    alpha: f64,
    total: u64,
    /// Fractional bytes of growth not yet added to the window.
    carry: f64,
}

impl Lia {
    pub fn new(initial_window: u64) -> Self {
        Lia {
            reno: NewReno::new(initial_window),
            alpha: 1.0,
            total: initial_window,
            carry: 0.0,
        }
    }
}

/// RFC 6356's alpha over subflows given as (window in bytes, smoothed RTT):
/// `total * max(cwnd / rtt^2) / (sum(cwnd / rtt))^2`.
pub fn lia_alpha(subflows: impl Iterator<Item = (u64, Time)> + Clone) -> f64 {
    let total: f64 = subflows.clone().map(|(w, _)| w as f64).sum();
    let best = subflows
        .clone()
        .map(|(w, rtt)| w as f64 / (rtt.max(1) as f64).powi(2))
        .fold(0.0, f64::max);
    let sum: f64 = subflows.map(|(w, rtt)| w as f64 / rtt.max(1) as f64).sum();
    if sum <= 0.0 {
        return 1.0;
    }
    total * best / (sum * sum)
}

impl CongestionControl for Lia {
    fn window(&self) -> u64 {
        self.reno.window()
    }

    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if self.reno.in_slow_start() {
            self.reno.on_ack(ack);
            return;
        }
        let bytes = ack.acked as f64 * ack.mss as f64;
        let coupled = self.alpha * bytes / self.total.max(1) as f64;
        let uncoupled = bytes / self.window() as f64;
        self.carry += coupled.min(uncoupled);
        let whole = self.carry.floor();
        self.reno.grow(whole as u64);
        self.carry -= whole;
    }

    fn on_loss(&mut self, loss: &LossEvent) {
        self.reno.on_loss(loss);
        self.carry = 0.0;
    }

    fn on_timeout(&mut self, loss: &LossEvent) {
        self.reno.on_timeout(loss);
        self.carry = 0.0;
    }

    fn couple(&mut self, alpha: f64, total_window: u64) {
        self.alpha = alpha;
        self.total = total_window.max(self.window());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_paths_give_alpha_one_over_n() {
        // n equal subflows: alpha = n*w * (w/r^2) / (n*w/r)^2 = 1/n.
        let alpha = lia_alpha([(10_000u64, 100u64); 4].into_iter());
        assert!((alpha - 0.25).abs() < 1e-12, "{alpha}");
    }

    #[test]
    fn two_equal_subflows_grow_by_alpha_mss_per_window() {
        // In congestion avoidance, a total window of ACKs spread over two equal
        // subflows adds alpha = 1/2 MSS to the sum. At equal loss rates this makes the
        // total settle where one TCP on one of the paths would: sqrt(2/p).
        let mut subflows = [Lia::new(20_000), Lia::new(20_000)];
        for s in &mut subflows {
            s.on_loss(&LossEvent::plain(0, 40_000)); // cwnd = ssthresh = 20 kB: congestion avoidance
        }
        let before: u64 = subflows.iter().map(|s| s.window()).sum();
        for _ in 0..20 {
            for i in 0..2 {
                let ws: Vec<(u64, Time)> = subflows.iter().map(|s| (s.window(), 100)).collect();
                let total = ws.iter().map(|w| w.0).sum();
                subflows[i].couple(lia_alpha(ws.into_iter()), total);
                subflows[i].on_ack(&AckEvent::plain(1000));
            }
        }
        let grown = subflows.iter().map(|s| s.window()).sum::<u64>() - before;
        // 40 kB of ACKs at total 40 kB: half an MSS (the carry may hold a byte).
        assert!((490..=510).contains(&grown), "grew by {grown}");
    }
}
