//! A port's egress rate: a token bucket, so that a queue forms in the switch's queue
//! discipline, where a real switch's would, rather than in the kernel or nowhere.
//!
//! Kept as the time the link becomes free rather than as a count of tokens: sending
//! `b` bytes at `t` moves `free_at` to `max(free_at, t - burst) + b / rate`, and a
//! packet may start once `free_at <= now`. After an idle spell `burst` bytes, and the
//! packet that then finds the link free, go back to back; under a backlog the port
//! sends at exactly its rate. Integer picoseconds: no drift, no floating point.

use eqds_proto::time::{Time, PS_PER_SEC};

#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate_bps: u64,
    /// Depth of the bucket, as time at `rate_bps`.
    burst: Time,
    /// When everything sent so far has left the link at `rate_bps`.
    free_at: Time,
}

impl TokenBucket {
    /// A bucket draining at `rate_bps` that lets `burst_bytes` (and one packet more) go
    /// back to back after an idle spell.
    pub fn new(rate_bps: u64, burst_bytes: u64) -> Self {
        assert!(
            rate_bps > 0,
            "a port's rate is checked positive by the configuration"
        );
        TokenBucket {
            rate_bps,
            burst: Self::time_of(burst_bytes, rate_bps),
            free_at: 0,
        }
    }

    fn time_of(bytes: u64, rate_bps: u64) -> Time {
        ((u128::from(bytes) * 8 * u128::from(PS_PER_SEC)).div_ceil(u128::from(rate_bps))) as Time
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// The earliest time a packet may start (now, if it may start now).
    pub fn ready_at(&self, now: Time) -> Time {
        now.max(self.free_at)
    }

    /// Whether a packet may start at `now`.
    pub fn ready(&self, now: Time) -> bool {
        self.ready_at(now) <= now
    }

    /// Accounts for `bytes` sent at `now` (which the caller checked was ready).
    pub fn send(&mut self, now: Time, bytes: u32) {
        let start = self.free_at.max(now.saturating_sub(self.burst));
        self.free_at = start + Self::time_of(u64::from(bytes), self.rate_bps);
    }

    /// When the link will have sent everything handed to it so far.
    pub fn free_at(&self) -> Time {
        self.free_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eqds_proto::time::PS_PER_US;

    #[test]
    fn holds_the_rate_over_a_backlog() {
        // 1 Gb/s, 1500 B packets: 12 us each. Sending whenever ready for 10 ms moves
        // 10 ms of bytes plus the burst, no more.
        let mut b = TokenBucket::new(1_000_000_000, 3000);
        let mut now = 0;
        let mut sent = 0u64;
        while now < 10_000 * PS_PER_US {
            if b.ready(now) {
                b.send(now, 1500);
                sent += 1500;
            } else {
                now = b.ready_at(now);
            }
        }
        let ideal = 1_250_000; // 10 ms at 1 Gb/s
        assert!(sent >= ideal && sent <= ideal + 3000 + 1500, "{sent}");
    }

    #[test]
    fn idle_refills_only_up_to_the_burst() {
        let mut b = TokenBucket::new(1_000_000_000, 3000);
        b.send(0, 1500);
        // After a long idle spell, the burst (two packets) and one more go at once and
        // the fourth waits 12 us.
        let t = 1_000 * PS_PER_US;
        for _ in 0..3 {
            assert!(b.ready(t));
            b.send(t, 1500);
        }
        assert!(!b.ready(t));
        assert_eq!(b.ready_at(t), t + 12 * PS_PER_US);
    }
}
