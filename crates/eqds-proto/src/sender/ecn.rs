//! ECN marking in the TCP-compatible sending EQIF (§6): RED on each tunnel's
//! send queue for ECN-capable packets, so that ECN TCPs slow down before the queue
//! drops (packets that are not ECN-capable meet only the drop-tail limit).
//!
//! The queue is judged as it stands when a packet joins it, not by the EWMA average
//! of router RED: a per-destination queue of about 100 packets in the host is the one
//! TCP's own window fills, and the averaging that keeps a router from punishing short
//! bursts would only delay the signal by many round trips. Between the two thresholds
//! the marking probability rises linearly to `max_p` (Floyd and Jacobson's ramp); from
//! the upper threshold on every packet is marked. Equal thresholds make a step at K,
//! the paper's DCTCP setting (K = 16 packets).

use super::spray::SplitMix64;

/// Marking probabilities are in millionths.
pub const CERTAIN: u32 = 1_000_000;

/// RED thresholds of one sending EQIF, in bytes of backlog per tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Red {
    /// A packet joining a shorter queue is never marked.
    pub min_bytes: u64,
    /// A packet joining a queue at least this long is always marked. If not above
    /// `min_bytes`, a step: every packet is marked from `min_bytes` on.
    pub max_bytes: u64,
    /// Marking probability just below `max_bytes`, in millionths (0 to [`CERTAIN`]).
    pub max_p_ppm: u32,
}

impl Red {
    /// Marks every ECN-capable packet that joins a queue of at least `bytes`.
    pub fn step(bytes: u64) -> Self {
        Self {
            min_bytes: bytes,
            max_bytes: bytes,
            max_p_ppm: CERTAIN,
        }
    }

    /// The probability, in millionths, that a packet joining a queue of `backlog`
    /// bytes is marked.
    pub fn probability_ppm(&self, backlog: u64) -> u32 {
        if backlog < self.min_bytes {
            0
        } else if backlog >= self.max_bytes {
            CERTAIN
        } else {
            let ramp = u128::from(backlog - self.min_bytes) * u128::from(self.max_p_ppm)
                / u128::from(self.max_bytes - self.min_bytes);
            // Below `max_p_ppm`, which is at most CERTAIN.
            ramp as u32
        }
    }

    /// Whether a packet joining a queue of `backlog` bytes is marked. Draws from
    /// `rng` only on the ramp, so a step never consumes randomness.
    pub(super) fn decide(&self, backlog: u64, rng: &mut SplitMix64) -> bool {
        match self.probability_ppm(backlog) {
            0 => false,
            CERTAIN => true,
            p => rng.below(u64::from(CERTAIN)) < u64::from(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_marks_from_its_threshold_on() {
        let red = Red::step(16_000);
        assert_eq!(red.probability_ppm(15_999), 0);
        assert_eq!(red.probability_ppm(16_000), CERTAIN);
        assert_eq!(red.probability_ppm(u64::MAX), CERTAIN);
    }

    #[test]
    fn the_ramp_rises_linearly_to_max_p_and_jumps_to_certain() {
        let red = Red {
            min_bytes: 10_000,
            max_bytes: 50_000,
            max_p_ppm: 100_000,
        };
        assert_eq!(red.probability_ppm(9_999), 0);
        assert_eq!(red.probability_ppm(10_000), 0);
        assert_eq!(red.probability_ppm(30_000), 50_000);
        assert_eq!(red.probability_ppm(49_999), 99_997);
        assert_eq!(red.probability_ppm(50_000), CERTAIN);
    }

    #[test]
    fn marks_on_the_ramp_come_at_the_ramps_rate() {
        let red = Red {
            min_bytes: 0,
            max_bytes: 100,
            max_p_ppm: 400_000,
        };
        let mut rng = SplitMix64(7);
        // Halfway up: 20% of packets.
        let marked = (0..100_000).filter(|_| red.decide(50, &mut rng)).count();
        assert!((19_000..21_000).contains(&marked), "{marked}");
    }

    proptest::proptest! {
        /// Whatever the thresholds: no mark below the lower one, certain marks from
        /// the upper one, and in between a probability that never falls as the queue
        /// grows and never exceeds `max_p` before the upper threshold.
        #[test]
        fn the_probability_rises_with_the_queue_within_its_bounds(
            min in 0u64..1_000_000,
            span in 0u64..1_000_000,
            max_p in 1u32..=CERTAIN,
            a in 0u64..3_000_000,
            b in 0u64..3_000_000,
        ) {
            let red = Red { min_bytes: min, max_bytes: min + span, max_p_ppm: max_p };
            let (lo, hi) = (a.min(b), a.max(b));
            proptest::prop_assert!(red.probability_ppm(lo) <= red.probability_ppm(hi));
            for q in [lo, hi] {
                let p = red.probability_ppm(q);
                if q < min {
                    proptest::prop_assert_eq!(p, 0);
                } else if q >= min + span {
                    proptest::prop_assert_eq!(p, CERTAIN);
                } else {
                    proptest::prop_assert!(p <= max_p);
                }
            }
        }
    }
}
