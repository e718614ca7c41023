//! HyStart (Ha and Rhee, "Taming the elephants", 2011), the slow-start exit Linux's
//! Cubic runs by default (`tcp_cubic.c`, `hystart=1`, both detectors on).
//!
//! Slow start doubles the window every round trip until a loss, which overshoots the
//! path by up to a whole window. HyStart ends it early, setting the slow-start
//! threshold to the current window, on either sign that the window has reached the
//! path's capacity:
//! - **ACK train**: the ACKs of one round arrive over more than about half the
//!   minimum RTT (the window is as long as the path), with Linux's allowance for TSO
//!   and GRO batching added to the minimum RTT: the time four 64 KiB GSO packets take
//!   at the slow-start pacing rate (twice the window per smoothed RTT), at most 1 ms;
//! - **delay increase**: the smallest RTT of a round's first eight samples exceeds the
//!   minimum RTT by an eighth of it, clamped to 4-16 ms (so in a datacenter only a
//!   queue of milliseconds triggers it).
//!
//! Both act only once the window holds at least 16 segments (`hystart_low_window`).

use super::AckEvent;
use crate::units::{Time, MS};

/// Windows below this many segments never leave slow start early.
const LOW_WINDOW: u64 = 16;
/// ACKs further apart than this break a train.
const ACK_DELTA: Time = 2 * MS;
/// RTT samples per round before the delay detector judges.
const MIN_SAMPLES: u32 = 8;
/// Bounds of the delay detector's threshold.
const DELAY_MIN: Time = 4 * MS;
const DELAY_MAX: Time = 16 * MS;
/// Linux's GSO size (64 KiB): four of them at the pacing rate cushion the ACK train.
const GSO_BYTES: u64 = 65_536;

/// Per-connection HyStart state.
#[derive(Clone, Debug, Default)]
pub struct HyStart {
    /// When the current round's first ACK came.
    round_start: Time,
    /// When the latest ACK of the current train came.
    last_ack: Time,
    /// The round ends when this byte is acknowledged (snd_nxt at its start).
    end_seq: u64,
    /// Smallest RTT sampled in the current round.
    round_min_rtt: Time,
    /// RTT samples taken in the current round (up to `MIN_SAMPLES`).
    samples: u32,
    /// Smallest RTT ever sampled (0: none yet).
    delay_min: Time,
    /// Smoothed RTT (RFC 6298's gain of 1/8), for the pacing rate.
    srtt: Time,
}

impl HyStart {
    /// Starts over after a timeout: the next slow start is judged afresh.
    pub fn reset(&mut self) {
        self.end_seq = 0;
    }

    /// Folds in one ACK of slow start with a window of `cwnd` bytes; true when slow
    /// start should end here.
    pub fn on_ack(&mut self, ack: &AckEvent, cwnd: u64) -> bool {
        let Some(rtt) = ack.rtt else {
            return false;
        };
        let rtt = rtt.max(1);
        if self.delay_min == 0 || rtt < self.delay_min {
            self.delay_min = rtt;
        }
        self.srtt = if self.srtt == 0 {
            rtt
        } else {
            (7 * self.srtt + rtt) / 8
        };
        if cwnd < LOW_WINDOW * ack.mss {
            return false;
        }
        if ack.snd_una > self.end_seq {
            self.round_start = ack.now;
            self.last_ack = ack.now;
            self.end_seq = ack.snd_nxt;
            self.round_min_rtt = Time::MAX;
            self.samples = 0;
        }
        if ack.now - self.last_ack <= ACK_DELTA {
            self.last_ack = ack.now;
            let cushion = (GSO_BYTES * 4 * self.srtt / (2 * cwnd)).min(MS);
            // Without pacing, a train longer than half the path's RTT fills it.
            let threshold = (self.delay_min + cushion) / 2;
            if ack.now - self.round_start > threshold {
                return true;
            }
        }
        self.round_min_rtt = self.round_min_rtt.min(rtt);
        if self.samples < MIN_SAMPLES {
            self.samples += 1;
            return false;
        }
        let allowance = (self.delay_min / 8).clamp(DELAY_MIN, DELAY_MAX);
        self.round_min_rtt > self.delay_min + allowance
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::US;

    /// An ACK at `now` for a round that started at byte 0 and runs to `snd_nxt`.
    fn ack(now: Time, rtt: Time, snd_una: u64, snd_nxt: u64) -> AckEvent {
        AckEvent {
            now,
            acked: 1000,
            delivered: 1000,
            ce: 0,
            rtt: Some(rtt),
            snd_una,
            snd_nxt,
            mss: 1000,
            rate: None,
            in_flight: 0,
        }
    }

    #[test]
    fn a_train_longer_than_half_the_rtt_ends_slow_start() {
        // 20 us path, a 32-segment window of 1000 B: the cushion is
        // 4 * 64 KiB * 20 us / 64 kB = 81.92 us, capped by nothing; the threshold
        // (20 + 81.92) / 2 = 50.96 us after the round's first ACK.
        let mut h = HyStart::default();
        let cwnd = 32_000;
        assert!(!h.on_ack(&ack(100 * US, 20 * US, 1000, 40_000), cwnd));
        assert!(!h.on_ack(&ack(150 * US, 20 * US, 2000, 40_000), cwnd));
        assert!(h.on_ack(&ack(151 * US, 20 * US, 3000, 40_000), cwnd));
    }

    #[test]
    fn small_windows_and_short_trains_stay_in_slow_start() {
        let mut h = HyStart::default();
        // Below 16 segments nothing is judged, however long the train.
        assert!(!h.on_ack(&ack(0, 20 * US, 1000, 10_000), 15_000));
        assert!(!h.on_ack(&ack(900 * US, 20 * US, 2000, 10_000), 15_000));
        // A new round (snd_una past end_seq) restarts the train.
        let cwnd = 32_000;
        assert!(!h.on_ack(&ack(1000 * US, 20 * US, 11_000, 50_000), cwnd));
        assert!(!h.on_ack(&ack(1040 * US, 20 * US, 12_000, 50_000), cwnd));
        assert!(!h.on_ack(&ack(1100 * US, 20 * US, 51_000, 90_000), cwnd));
    }

    #[test]
    fn a_queue_of_milliseconds_ends_slow_start_by_delay() {
        let cwnd = 1_000_000;
        // The first round sets the minimum RTT, 20 us; in the next, ACKs come 3 ms
        // apart (no train) with 5 ms RTTs, beyond the 4 ms floor of the allowance:
        // the round's ninth sample ends slow start. RTTs of 3 ms never do.
        for (rtt, ends) in [(5 * MS, true), (3 * MS, false)] {
            let mut h = HyStart::default();
            assert!(!h.on_ack(&ack(0, 20 * US, 1000, 10_000), cwnd));
            let mut now = 0;
            let mut ended = vec![];
            for i in 0..2 * MIN_SAMPLES {
                now += 3 * MS;
                ended.push(h.on_ack(
                    &ack(now, rtt, 12_000 + 1000 * u64::from(i), 10_000_000),
                    cwnd,
                ));
            }
            let first = ended.iter().position(|&e| e);
            assert_eq!(
                first,
                ends.then_some(MIN_SAMPLES as usize),
                "{rtt} ps: {ended:?}"
            );
        }
    }
}
