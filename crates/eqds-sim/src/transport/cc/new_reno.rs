//! NewReno's window growth (RFC 5681): slow start below ssthresh, then one MSS per
//! window of ACKed data. Recovery itself (RFC 6582) lives in the TCP sender.

use super::{half_flight, AckEvent, CongestionControl};
use crate::units::Time;

pub struct NewReno {
    cwnd: u64,
    ssthresh: u64,
    /// Bytes ACKed since the window last grew in congestion avoidance.
    acked_in_ca: u64,
}

impl NewReno {
    pub fn new(initial_window: u64) -> Self {
        Self {
            cwnd: initial_window,
            ssthresh: u64::MAX,
            acked_in_ca: 0,
        }
    }

    /// Below the slow-start threshold.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Adds `bytes` to the window (a controller's own growth rule, e.g. LIA's).
    pub fn grow(&mut self, bytes: u64) {
        self.cwnd += bytes;
    }

    /// Sets window and threshold to `cwnd` (a controller's own reduction, e.g. DCTCP's).
    pub fn reduce_to(&mut self, cwnd: u64) {
        self.cwnd = cwnd;
        self.ssthresh = cwnd;
        self.acked_in_ca = 0;
    }
}

impl CongestionControl for NewReno {
    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if self.cwnd < self.ssthresh {
            // Slow start, with RFC 3465 appropriate byte counting limited to one MSS.
            self.cwnd += ack.acked.min(ack.mss);
        } else {
            self.acked_in_ca += ack.acked;
            if self.acked_in_ca >= self.cwnd {
                self.acked_in_ca -= self.cwnd;
                self.cwnd += ack.mss;
            }
        }
    }

    fn on_loss(&mut self, _now: Time, flight: u64, mss: u64) {
        self.ssthresh = half_flight(flight, mss);
        self.cwnd = self.ssthresh;
        self.acked_in_ca = 0;
    }

    fn on_timeout(&mut self, _now: Time, flight: u64, mss: u64) {
        self.ssthresh = half_flight(flight, mss);
        self.cwnd = mss;
        self.acked_in_ca = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(acked: u64) -> AckEvent {
        AckEvent {
            now: 0,
            acked,
            ce: 0,
            rtt: None,
            snd_una: 0,
            snd_nxt: 0,
            mss: 1000,
        }
    }

    #[test]
    fn slow_start_doubles_then_linear() {
        let mut cc = NewReno::new(10_000);
        for _ in 0..10 {
            cc.on_ack(&ack(1000));
        }
        assert_eq!(cc.window(), 20_000);
        cc.on_loss(0, 20_000, 1000);
        assert_eq!(cc.window(), 10_000);
        // One window of ACKs grows the window by one MSS.
        for _ in 0..10 {
            cc.on_ack(&ack(1000));
        }
        assert_eq!(cc.window(), 11_000);
        cc.on_timeout(0, 11_000, 1000);
        assert_eq!(cc.window(), 1000);
        assert_eq!(cc.ssthresh(), 5500);
    }
}
