//! CUBIC (Ha, Rhee, Xu 2008; RFC 9438).
//!
//! After a loss at window `W_max` the window follows `W(t) = C (t - K)^3 + W_max`, with
//! `K = cbrt(W_max (1 - beta) / C)`, never growing slower than Reno would (the
//! "TCP-friendly" estimate). C = 0.4 and beta = 0.7 as in the RFC; windows are in MSS
//! units inside the cubic formula. Floating point is used for the window only; the
//! clock stays integer.

use super::{AckEvent, CongestionControl, HyStart, LossEvent};
use crate::units::{Time, SEC};

const C: f64 = 0.4;
const BETA: f64 = 0.7;

#[derive(Clone)]
pub struct Cubic {
    cwnd: u64,
    ssthresh: u64,
    mss: f64,
    /// Window (in MSS) before the last reduction.
    w_max: f64,
    /// Time the current congestion-avoidance epoch began, if one has.
    epoch_start: Option<Time>,
    /// Seconds from the epoch start to the plateau at `w_max`.
    k: f64,
    /// Reno-equivalent window estimate (in MSS) for the TCP-friendly region.
    w_est: f64,
    /// Smallest RTT seen, seconds.
    min_rtt: f64,
    /// Early exit from slow start, if on (Linux's default).
    hystart: Option<HyStart>,
    /// An ECN echo reduces the window once per window of data: not again until this
    /// byte is acknowledged (RFC 3168's CWR).
    cwr_until: u64,
}

impl Cubic {
    pub fn new(initial_window: u64, mss: u64, hystart: bool) -> Self {
        Self {
            cwnd: initial_window,
            ssthresh: u64::MAX,
            mss: mss as f64,
            w_max: 0.0,
            epoch_start: None,
            k: 0.0,
            w_est: 0.0,
            min_rtt: f64::INFINITY,
            hystart: hystart.then(HyStart::default),
            cwr_until: 0,
        }
    }

    fn reduce(&mut self, now: Time) {
        let w = self.cwnd as f64 / self.mss;
        // Fast convergence (RFC 9438 §4.7): release bandwidth to newer flows.
        self.w_max = if w < self.w_max {
            w * (1.0 + BETA) / 2.0
        } else {
            w
        };
        self.ssthresh = ((self.cwnd as f64 * BETA) as u64).max(2 * self.mss as u64);
        self.epoch_start = None;
        let _ = now;
    }
}

impl CongestionControl for Cubic {
    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if let Some(rtt) = ack.rtt {
            self.min_rtt = self.min_rtt.min(rtt as f64 / SEC as f64);
        }
        if self.cwnd < self.ssthresh {
            let exit = self
                .hystart
                .as_mut()
                .is_some_and(|h| h.on_ack(ack, self.cwnd));
            if !exit {
                self.cwnd += ack.acked.min(ack.mss);
                return;
            }
            // The window has reached the path: congestion avoidance from here, as
            // Linux does on the ACK that found it.
            self.ssthresh = self.cwnd;
        }
        let cwnd = self.cwnd as f64 / self.mss;
        let start = *self.epoch_start.get_or_insert_with(|| {
            if self.w_max < cwnd {
                self.w_max = cwnd;
            }
            self.k = ((self.w_max - cwnd) / C).cbrt();
            self.w_est = cwnd;
            ack.now
        });
        let rtt = if self.min_rtt.is_finite() {
            self.min_rtt
        } else {
            0.0
        };
        let t = (ack.now - start) as f64 / SEC as f64 + rtt;
        let target = C * (t - self.k).powi(3) + self.w_max;
        // Reno-friendly estimate grows by alpha per window, alpha = 3(1-beta)/(1+beta).
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        self.w_est += alpha * (ack.acked as f64 / self.mss) / cwnd;
        let next = if target < self.w_est {
            self.w_est
        } else {
            // Grow towards the cubic target, at most by half the window per RTT-worth of ACKs.
            let target = target.min(1.5 * cwnd);
            cwnd + (target - cwnd).max(0.0) * (ack.acked as f64 / self.mss) / cwnd
        };
        self.cwnd = ((next * self.mss) as u64).max(self.cwnd);
    }

    /// A CE echo is taken as a loss would be, once per window (RFC 3168 §6.1.2;
    /// Linux's Cubic enters CWR with the same multiplicative decrease).
    fn on_ecn(&mut self, ack: &AckEvent) {
        if ack.ce == 0 || ack.snd_una < self.cwr_until {
            return;
        }
        self.reduce(ack.now);
        self.cwnd = self.ssthresh;
        self.cwr_until = ack.snd_nxt;
    }

    fn on_loss(&mut self, loss: &LossEvent) {
        self.reduce(loss.now);
        self.cwnd = self.ssthresh;
    }

    fn on_timeout(&mut self, loss: &LossEvent) {
        self.reduce(loss.now);
        self.cwnd = loss.mss;
        if let Some(h) = &mut self.hystart {
            h.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MS;

    #[test]
    fn recovers_to_w_max_around_k() {
        let mss = 1000;
        let mut cc = Cubic::new(100 * mss, mss, false);
        cc.ssthresh = 0; // force congestion avoidance
        cc.on_loss(&LossEvent::plain(0, 100 * mss));
        assert_eq!(cc.window(), 70 * mss);
        // K = cbrt(100 * 0.3 / 0.4) ~ 4.2 s. Feed a window of ACKs every 100 ms RTT:
        // with so few RTTs the cubic curve, not the Reno-friendly estimate, governs.
        let mut now = 0;
        let mut trace = vec![];
        while now < 4 * SEC {
            now += 100 * MS;
            let w = cc.window();
            let rtt = Some(100 * MS);
            cc.on_ack(&AckEvent {
                now,
                acked: w,
                delivered: w,
                ce: 0,
                rtt,
                snd_una: 0,
                snd_nxt: 0,
                mss,
                rate: None,
                in_flight: 0,
            });
            trace.push(cc.window());
        }
        // Concave approach: fast growth first, slowing down near W_max.
        let early = trace[5] - trace[0];
        let late = trace[39] - trace[34];
        assert!(
            early > late,
            "growth {early} early vs {late} near the plateau"
        );
        let w = cc.window() as f64 / mss as f64;
        assert!((90.0..=101.0).contains(&w), "window {w} MSS after ~K");
    }

    #[test]
    fn a_ce_echo_reduces_the_window_once_per_window() {
        let mss = 1000;
        let mut cc = Cubic::new(100 * mss, mss, false);
        let echo = |snd_una, snd_nxt| AckEvent {
            now: MS,
            acked: mss,
            delivered: mss,
            ce: mss,
            rtt: None,
            snd_una,
            snd_nxt,
            mss,
            rate: None,
            in_flight: 0,
        };
        cc.on_ecn(&echo(0, 100 * mss));
        assert_eq!(cc.window(), 70 * mss);
        // Echoes of the same window of data are the same congestion event.
        cc.on_ecn(&echo(50 * mss, 170 * mss));
        assert_eq!(cc.window(), 70 * mss);
        // Data sent after the reduction is marked too: a new event.
        cc.on_ecn(&echo(100 * mss, 170 * mss));
        assert_eq!(cc.window(), 49 * mss);
    }
}
