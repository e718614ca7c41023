//! NewReno's window growth (RFC 5681): slow start below ssthresh, then one MSS per
//! window of ACKed data. Recovery itself (RFC 6582) lives in the TCP sender. With ECN
//! (RFC 3168 §6.1.2) a congestion mark halves the window as a loss would, at most once
//! per window of data.

use super::{half_flight, AckEvent, CongestionControl, LossEvent};

#[derive(Clone)]
pub struct NewReno {
    cwnd: u64,
    ssthresh: u64,
    /// Bytes ACKed since the window last grew in congestion avoidance.
    acked_in_ca: u64,
    /// After an ECN reduction, marks are ignored until the ACK point passes this
    /// (the data in flight when the window was cut).
    cwr_until: u64,
}

impl NewReno {
    pub fn new(initial_window: u64) -> Self {
        Self {
            cwnd: initial_window,
            ssthresh: u64::MAX,
            acked_in_ca: 0,
            cwr_until: 0,
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
        self.set(cwnd, cwnd);
    }

    /// Sets window and threshold (a controller's own rule, e.g. Vegas's per-round
    /// step).
    pub fn set(&mut self, cwnd: u64, ssthresh: u64) {
        self.cwnd = cwnd;
        self.ssthresh = ssthresh;
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

    fn on_ecn(&mut self, ack: &AckEvent) {
        if ack.ce == 0 || ack.snd_una < self.cwr_until {
            return;
        }
        self.ssthresh = (self.cwnd / 2).max(2 * ack.mss);
        self.cwnd = self.ssthresh;
        self.acked_in_ca = 0;
        self.cwr_until = ack.snd_nxt;
    }

    fn on_loss(&mut self, loss: &LossEvent) {
        self.ssthresh = half_flight(loss.flight, loss.mss);
        self.cwnd = self.ssthresh;
        self.acked_in_ca = 0;
    }

    fn on_timeout(&mut self, loss: &LossEvent) {
        self.ssthresh = half_flight(loss.flight, loss.mss);
        self.cwnd = loss.mss;
        self.acked_in_ca = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ecn_mark_halves_the_window_once_per_window() {
        let mut cc = NewReno::new(20_000);
        let marked = |una, nxt| AckEvent {
            ce: 1000,
            snd_una: una,
            snd_nxt: nxt,
            ..AckEvent::plain(1000)
        };
        cc.on_ecn(&marked(1000, 21_000));
        assert_eq!((cc.window(), cc.ssthresh()), (10_000, 10_000));
        // More marks from the same window change nothing.
        cc.on_ecn(&marked(5000, 21_000));
        assert_eq!(cc.window(), 10_000);
        // Once that window is ACKed, a mark cuts again; unmarked ACKs never do.
        cc.on_ecn(&AckEvent::plain(1000));
        cc.on_ecn(&marked(21_000, 31_000));
        assert_eq!(cc.window(), 5000);
        cc.on_ecn(&marked(40_000, 50_000));
        assert_eq!(cc.window(), 2500);
        cc.on_ecn(&marked(60_000, 70_000));
        assert_eq!(cc.window(), 2000, "never below two segments");
    }

    #[test]
    fn slow_start_doubles_then_linear() {
        let mut cc = NewReno::new(10_000);
        for _ in 0..10 {
            cc.on_ack(&AckEvent::plain(1000));
        }
        assert_eq!(cc.window(), 20_000);
        cc.on_loss(&LossEvent::plain(0, 20_000));
        assert_eq!(cc.window(), 10_000);
        // One window of ACKs grows the window by one MSS.
        for _ in 0..10 {
            cc.on_ack(&AckEvent::plain(1000));
        }
        assert_eq!(cc.window(), 11_000);
        cc.on_timeout(&LossEvent::plain(0, 11_000));
        assert_eq!(cc.window(), 1000);
        assert_eq!(cc.ssthresh(), 5500);
    }
}
