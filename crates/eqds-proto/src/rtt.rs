//! The retransmit timeout of one tunnel, from its round-trip samples (the paper gives
//! no RTO for EQDS itself; this estimator is our choice).
//!
//! A fixed timeout suits one link speed only: at 30 Mbit/s a window of 1500-byte
//! packets takes 13 ms to cross the bottleneck, and a 2 ms timeout fires on packets
//! that are merely queued, resending half of what the tunnel carries. So the timeout
//! follows RFC 6298's estimator, `srtt + 4 rttvar`, never below the configured
//! minimum (which alone applies until the first sample) and never above
//! [`MAX_RTO`]. Samples come only from packets sent once (Karn's rule, applied by the
//! caller). There is no back-off on expiry: trims and NACKs are EQDS's loss signal,
//! and the timeout is the safety net behind them.
//!
//! The estimator also keeps the smallest sample seen: an ACK that comes back sooner
//! than that after a retransmission cannot be the retransmission's own, which is how
//! the sender tells that a resent copy is still on its way (`sender.rs`, strays).

use crate::time::{Time, PS_PER_SEC};

/// Upper bound of the timeout, whatever the samples say.
pub const MAX_RTO: Time = PS_PER_SEC;

/// Smoothed round-trip time and its mean deviation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RttEstimator {
    /// Smoothed RTT; 0 until the first sample.
    srtt: Time,
    /// Mean deviation of the samples from `srtt`.
    rttvar: Time,
    /// Smallest sample; 0 until the first.
    min: Time,
}

impl RttEstimator {
    /// Takes one round-trip sample (RFC 6298, section 2: gains 1/8 and 1/4).
    pub fn sample(&mut self, rtt: Time) {
        self.min = if self.min == 0 {
            rtt.max(1)
        } else {
            self.min.min(rtt.max(1))
        };
        if self.srtt == 0 {
            self.srtt = rtt.max(1);
            self.rttvar = rtt / 2;
        } else {
            let deviation = self.srtt.abs_diff(rtt);
            self.rttvar = self.rttvar - self.rttvar / 4 + deviation / 4;
            self.srtt = (self.srtt - self.srtt / 8 + rtt / 8).max(1);
        }
    }

    /// The smoothed RTT, if any sample has been taken.
    pub fn srtt(&self) -> Option<Time> {
        (self.srtt > 0).then_some(self.srtt)
    }

    /// The smallest round-trip sample, if any has been taken.
    pub fn min_rtt(&self) -> Option<Time> {
        (self.min > 0).then_some(self.min)
    }

    /// The retransmit timeout: `srtt + 4 rttvar`, clamped to `[min, MAX_RTO]`.
    pub fn rto(&self, min: Time) -> Time {
        if self.srtt == 0 {
            return min;
        }
        (self.srtt + 4 * self.rttvar).clamp(min, MAX_RTO.max(min))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{PS_PER_MS, PS_PER_US};

    #[test]
    fn the_minimum_applies_until_a_sample_and_while_samples_are_small() {
        let mut e = RttEstimator::default();
        assert_eq!(e.rto(2 * PS_PER_MS), 2 * PS_PER_MS);
        assert_eq!(e.srtt(), None);
        for _ in 0..20 {
            e.sample(30 * PS_PER_US);
        }
        assert_eq!(e.rto(2 * PS_PER_MS), 2 * PS_PER_MS);
    }

    #[test]
    fn the_first_sample_gives_three_times_the_rtt() {
        let mut e = RttEstimator::default();
        e.sample(4 * PS_PER_MS);
        assert_eq!(e.srtt(), Some(4 * PS_PER_MS));
        assert_eq!(e.rto(PS_PER_MS), 12 * PS_PER_MS);
    }

    #[test]
    fn steady_samples_converge_and_the_deviation_decays() {
        let mut e = RttEstimator::default();
        e.sample(20 * PS_PER_MS);
        for _ in 0..200 {
            e.sample(5 * PS_PER_MS);
        }
        let srtt = e.srtt().unwrap();
        assert!(srtt.abs_diff(5 * PS_PER_MS) < 10 * PS_PER_US, "{srtt}");
        let rto = e.rto(PS_PER_MS);
        assert!(rto < 5 * PS_PER_MS + 100 * PS_PER_US, "{rto}");
    }

    #[test]
    fn jitter_widens_the_timeout_beyond_the_mean() {
        let mut e = RttEstimator::default();
        for i in 0..100 {
            e.sample(if i % 2 == 0 { 2 } else { 6 } * PS_PER_MS);
        }
        let rto = e.rto(PS_PER_MS);
        assert!(rto > 10 * PS_PER_MS, "{rto}");
    }

    #[test]
    fn the_smallest_sample_is_kept() {
        let mut e = RttEstimator::default();
        assert_eq!(e.min_rtt(), None);
        for us in [40, 25, 90, 30] {
            e.sample(us * PS_PER_US);
        }
        assert_eq!(e.min_rtt(), Some(25 * PS_PER_US));
    }

    #[test]
    fn the_timeout_is_capped() {
        let mut e = RttEstimator::default();
        e.sample(10 * PS_PER_SEC);
        assert_eq!(e.rto(PS_PER_MS), MAX_RTO);
        // A minimum above the cap wins.
        assert_eq!(e.rto(2 * MAX_RTO), 2 * MAX_RTO);
    }
}
