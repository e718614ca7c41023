//! Delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation, as Linux's
//! `tcp_rate.c`): what a model-based controller such as BBR measures the path by.
//!
//! When a segment is sent the sampler records how much had been delivered by then
//! and when; when the segment is delivered (cumulatively ACKed or SACKed) the bytes
//! delivered since, over the longer of the send and ACK intervals, are a sample of
//! the delivery rate. A sample taken while the sender had nothing more to send is
//! flagged application-limited: it may understate the path.

use crate::transport::cc::RateSample;
use crate::units::{Time, SEC};
use std::collections::VecDeque;

/// The sender's state when a segment left.
#[derive(Clone, Copy, Debug, Default)]
struct Snapshot {
    sent: Time,
    delivered: u64,
    delivered_time: Time,
    first_sent: Time,
    app_limited: bool,
    /// The segment was sent (a default slot of the ring was not).
    recorded: bool,
    /// This was a resend: its delivery may be the original's, so its RTT says
    /// nothing (Karn).
    resent: bool,
    /// Delivered already (a duplicate ACK or SACK must not count it twice).
    done: bool,
}

/// Per-connection delivery accounting, segments indexed by `seq / mss`.
#[derive(Clone, Debug, Default)]
pub struct DeliveryRate {
    /// Bytes delivered so far (cumulatively ACKed or SACKed).
    delivered: u64,
    delivered_time: Time,
    /// Send time of the segment whose delivery started the current interval.
    first_sent: Time,
    /// Samples are application-limited until `delivered` passes this (0: not).
    app_limited_until: u64,
    /// Smallest round trip of a delivered segment: an interval shorter than it is a
    /// burst of ACKs, not a rate.
    min_rtt: Time,
    /// Index of `snapshots[0]`.
    base: u64,
    snapshots: VecDeque<Snapshot>,
}

impl DeliveryRate {
    /// Bytes delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Segment `index` leaves at `now`; `idle` if nothing was in flight before it,
    /// which restarts the interval.
    pub fn on_send(&mut self, index: u64, now: Time, idle: bool) {
        if idle {
            self.first_sent = now;
            self.delivered_time = now;
        }
        if index < self.base {
            return;
        }
        let at = (index - self.base) as usize;
        if at >= self.snapshots.len() {
            self.snapshots.resize(at + 1, Snapshot::default());
        }
        let resent = self.snapshots[at].recorded;
        self.snapshots[at] = Snapshot {
            sent: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent: self.first_sent,
            app_limited: self.app_limited_until != 0,
            recorded: true,
            resent,
            done: false,
        };
    }

    /// The sender has nothing more to send with `in_flight` bytes out: samples stay
    /// application-limited until those are delivered.
    pub fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited_until = (self.delivered + in_flight).max(1);
    }

    /// Segment `index` (`bytes` long) was delivered at `now`. Returns its rate sample,
    /// or `None` for one delivered before or never recorded.
    pub fn on_delivered(&mut self, index: u64, bytes: u64, now: Time) -> Option<RateSample> {
        let at = index.checked_sub(self.base)? as usize;
        let snap = self
            .snapshots
            .get_mut(at)
            .filter(|s| s.recorded && !s.done)?;
        snap.done = true;
        let snap = *snap;
        self.delivered += bytes;
        self.delivered_time = now;
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        // The next interval starts at this segment's transmission.
        self.first_sent = snap.sent;
        let send_elapsed = snap.sent.saturating_sub(snap.first_sent);
        let ack_elapsed = now.saturating_sub(snap.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        let delivered = self.delivered - snap.delivered;
        let rtt = now.saturating_sub(snap.sent);
        if !snap.resent && (self.min_rtt == 0 || rtt < self.min_rtt) {
            self.min_rtt = rtt;
        }
        if interval == 0 || interval < self.min_rtt {
            return None;
        }
        Some(RateSample {
            delivery_rate_bps: (u128::from(delivered) * 8 * u128::from(SEC) / u128::from(interval))
                as u64,
            prior_delivered: snap.delivered,
            delivered: self.delivered,
            rtt,
            app_limited: snap.app_limited,
        })
    }

    /// Segments below `index` are cumulatively acknowledged: forget them.
    pub fn acked_to(&mut self, index: u64) {
        while self.base < index && !self.snapshots.is_empty() {
            self.snapshots.pop_front();
            self.base += 1;
        }
        self.base = self.base.max(index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::US;

    #[test]
    fn a_paced_stream_samples_its_sending_rate() {
        // 1000-byte segments every 1 us (8 Gb/s), each delivered 10 us after it left.
        let mut r = DeliveryRate::default();
        let mut samples = Vec::new();
        for i in 0..100u64 {
            let now = (i + 1) * US;
            r.on_send(i, now, i == 0);
            if i >= 10 {
                samples.extend(r.on_delivered(i - 10, 1000, now));
                r.acked_to(i - 9);
            }
        }
        let last = samples.last().unwrap();
        assert!(
            (last.delivery_rate_bps as f64 / 8e9 - 1.0).abs() < 0.02,
            "{last:?}"
        );
        assert_eq!(last.rtt, 10 * US);
        assert!(!last.app_limited);
    }

    #[test]
    fn segments_sent_at_time_zero_count() {
        let mut r = DeliveryRate::default();
        for i in 0..10 {
            r.on_send(i, 0, i == 0);
        }
        let samples: Vec<_> = (0..10)
            .filter_map(|i| r.on_delivered(i, 1000, 10 * US))
            .collect();
        assert_eq!(r.delivered(), 10_000);
        assert!(!samples.is_empty());
    }

    #[test]
    fn a_resend_delivered_early_does_not_shrink_the_round_trip_floor() {
        let mut r = DeliveryRate::default();
        r.on_send(0, US, true);
        r.on_send(1, 2 * US, false);
        r.on_delivered(0, 1000, 20 * US);
        assert_eq!(r.min_rtt, 19 * US);
        // Segment 1's original was only late; its resend at 50 us "arrives" at 51.
        r.on_send(1, 50 * US, false);
        r.on_delivered(1, 1000, 51 * US);
        assert_eq!(r.min_rtt, 19 * US);
    }

    #[test]
    fn a_segment_is_delivered_once() {
        let mut r = DeliveryRate::default();
        r.on_send(0, US, true);
        r.on_send(1, 2 * US, false);
        r.on_delivered(1, 1000, 20 * US);
        assert_eq!(r.delivered(), 1000);
        assert!(r.on_delivered(1, 1000, 21 * US).is_none());
        assert_eq!(r.delivered(), 1000);
    }

    #[test]
    fn samples_after_an_idle_period_are_flagged_until_its_data_is_delivered() {
        let mut r = DeliveryRate::default();
        r.on_send(0, US, true);
        r.mark_app_limited(1000);
        r.on_send(1, 2 * US, false);
        let s = r.on_delivered(0, 1000, 30 * US).unwrap();
        assert!(!s.app_limited, "sent before the sender ran dry");
        let s = r.on_delivered(1, 1000, 31 * US).unwrap();
        assert!(s.app_limited);
    }
}
