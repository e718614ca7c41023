//! Retransmission timer computation (RFC 6298), in integer picoseconds.

use crate::units::Time;

#[derive(Clone, Copy, Debug)]
pub struct RttEstimator {
    srtt: Option<Time>,
    rttvar: Time,
    min_rto: Time,
    max_rto: Time,
    initial_rto: Time,
}

impl RttEstimator {
    pub fn new(initial_rto: Time, min_rto: Time, max_rto: Time) -> Self {
        Self {
            srtt: None,
            rttvar: 0,
            min_rto,
            max_rto,
            initial_rto,
        }
    }

    /// Folds in one RTT measurement (RFC 6298 §2.2-2.3, alpha = 1/8, beta = 1/4).
    pub fn sample(&mut self, rtt: Time) {
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let err = srtt.abs_diff(rtt);
                self.rttvar = (3 * self.rttvar + err) / 4;
                self.srtt = Some((7 * srtt + rtt) / 8);
            }
        }
    }

    /// Current RTO before back-off.
    pub fn rto(&self) -> Time {
        match self.srtt {
            None => self.initial_rto,
            Some(srtt) => (srtt + 4 * self.rttvar).clamp(self.min_rto, self.max_rto),
        }
    }

    /// RTO after `backoff` consecutive timeouts (doubling, capped).
    pub fn rto_with_backoff(&self, backoff: u32) -> Time {
        self.rto()
            .saturating_mul(1 << backoff.min(16))
            .min(self.max_rto)
    }

    pub fn srtt(&self) -> Option<Time> {
        self.srtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc6298() {
        let mut e = RttEstimator::new(1000, 10, 100_000);
        assert_eq!(e.rto(), 1000);
        e.sample(100);
        assert_eq!(e.srtt(), Some(100));
        assert_eq!(e.rto(), 100 + 4 * 50);
        e.sample(200);
        // rttvar = (3*50 + 100)/4 = 62, srtt = (700 + 200)/8 = 112
        assert_eq!(e.srtt(), Some(112));
        assert_eq!(e.rto(), 112 + 4 * 62);
        assert_eq!(e.rto_with_backoff(2), 4 * (112 + 4 * 62));
        let mut low = RttEstimator::new(1000, 500, 100_000);
        low.sample(1);
        assert_eq!(low.rto(), 500);
    }
}
