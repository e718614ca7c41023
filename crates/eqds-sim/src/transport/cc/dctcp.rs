//! DCTCP (Alizadeh et al., SIGCOMM 2010; RFC 8257).
//!
//! The sender estimates the fraction of marked bytes, `alpha <- (1-g)*alpha + g*F`,
//! once per window of data, and in a window that saw marks cuts the window once by
//! `alpha/2`. Growth and loss response are NewReno's. The paper's g = 1/16.

use super::{AckEvent, CongestionControl, LossEvent, NewReno};

#[derive(Clone)]
pub struct Dctcp {
    /// Window growth and loss response.
    reno: NewReno,
    /// Estimated fraction of marked bytes.
    alpha: f64,
    /// EWMA gain (paper: 1/16).
    g: f64,
    /// Bytes ACKed and of those CE-marked in the current observation window.
    window_acked: u64,
    window_marked: u64,
    /// The observation window ends when snd_una passes this sequence number.
    window_end: u64,
    /// No further ECN cut before snd_una passes this point (one cut per window).
    cut_until: u64,
}

impl Dctcp {
    pub fn new(initial_window: u64, g: f64) -> Self {
        Self {
            reno: NewReno::new(initial_window),
            alpha: 1.0,
            g,
            window_acked: 0,
            window_marked: 0,
            window_end: 0,
            cut_until: 0,
        }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl CongestionControl for Dctcp {
    fn window(&self) -> u64 {
        self.reno.window()
    }

    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        self.reno.on_ack(ack);
    }

    fn ecn_in_recovery(&self) -> bool {
        true
    }

    fn on_ecn(&mut self, ack: &AckEvent) {
        self.window_acked += ack.acked;
        self.window_marked += ack.ce;
        if ack.snd_una >= self.window_end {
            if self.window_acked > 0 {
                let f = self.window_marked as f64 / self.window_acked as f64;
                self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
            }
            self.window_acked = 0;
            self.window_marked = 0;
            self.window_end = ack.snd_nxt;
        }
        if ack.ce > 0 && ack.snd_una >= self.cut_until {
            let cwnd = self.reno.window();
            let cut = (cwnd as f64 * self.alpha / 2.0) as u64;
            self.reno.reduce_to((cwnd - cut).max(ack.mss));
            self.cut_until = ack.snd_nxt;
        }
    }

    fn on_loss(&mut self, loss: &LossEvent) {
        self.reno.on_loss(loss);
    }

    fn on_timeout(&mut self, loss: &LossEvent) {
        self.reno.on_timeout(loss);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_tracks_marked_fraction() {
        let mut cc = Dctcp::new(100_000, 1.0 / 16.0);
        let mut una = 0;
        // Many windows with every byte marked: alpha converges to 1 and stays there.
        // Then many unmarked windows: alpha decays towards 0.
        for round in 0..200 {
            let marked = round < 100;
            una += 10_000;
            let ack = AckEvent {
                now: 0,
                acked: 10_000,
                delivered: 10_000,
                ce: if marked { 10_000 } else { 0 },
                rtt: None,
                snd_una: una,
                snd_nxt: una + 1,
                mss: 1000,
                rate: None,
                in_flight: 0,
            };
            cc.on_ecn(&ack);
            if round == 99 {
                assert!(cc.alpha() > 0.99);
            }
        }
        assert!(cc.alpha() < 0.01, "alpha = {}", cc.alpha());
    }
}
