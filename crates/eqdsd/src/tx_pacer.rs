//! Pacing what the sending EQIFs release at the host's own link rate
//! (`eqds.uplink_rate`).
//!
//! Receivers pace their PULLs at their own links, so credit from several of them can
//! add up to more than the sender's link carries. Released at once, the excess waits
//! in the kernel's queues, first come first served; held back by this token bucket, it
//! waits in the EQIFs, where the uplink's deficit round robin (weights, priorities)
//! and resends-first decide what goes next, as in the paper's NIC.

use eqds_proto::time::{Time, PS_PER_SEC};

/// A token bucket in bytes.
#[derive(Debug, Clone)]
pub struct TxPacer {
    rate_bps: u64,
    /// Bytes that may go now; negative after a packet larger than what was left.
    tokens: i64,
    /// The most that may go at once: the loop's timer may wake this late.
    depth: i64,
    /// When `tokens` was last brought up to date.
    last: Time,
}

impl TxPacer {
    /// A full bucket of `depth` bytes refilled at `rate_bps`.
    pub fn new(rate_bps: u64, depth: u32) -> Self {
        TxPacer {
            rate_bps: rate_bps.max(1),
            tokens: i64::from(depth),
            depth: i64::from(depth),
            last: 0,
        }
    }

    /// Adds what the link would have carried since the last call. Only whole bytes
    /// are added, and `last` moves on by their time alone, so that calls closer
    /// together than a byte's time lose nothing.
    pub fn refill(&mut self, now: Time) {
        let elapsed = now.saturating_sub(self.last);
        let per_sec = 8 * u128::from(PS_PER_SEC);
        let bytes = u128::from(elapsed) * u128::from(self.rate_bps) / per_sec;
        let room = (self.depth - self.tokens).max(0) as u128;
        if bytes >= room {
            self.tokens = self.tokens.max(self.depth);
            self.last = now;
        } else {
            self.tokens += bytes as i64;
            self.last += (bytes * per_sec / u128::from(self.rate_bps)) as Time;
        }
    }

    /// Whether a packet may go now.
    pub fn ready(&self) -> bool {
        self.tokens > 0
    }

    /// A packet of `bytes` went.
    pub fn spend(&mut self, bytes: u32) {
        self.tokens -= i64::from(bytes);
    }

    /// When a packet may go again (now or earlier if it already may).
    pub fn ready_at(&self) -> Time {
        if self.tokens > 0 {
            return self.last;
        }
        let missing = (1 - self.tokens) as u128;
        let wait = (missing * 8 * u128::from(PS_PER_SEC)).div_ceil(u128::from(self.rate_bps));
        self.last + wait as Time
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eqds_proto::time::PS_PER_US;

    #[test]
    fn frequent_refills_lose_no_fraction_of_a_byte() {
        // 100 Mbit/s is 80 ns a byte; refilled every 50 ns for 10 ms from empty.
        let mut p = TxPacer::new(100_000_000, 1_000_000);
        p.spend(1_000_000);
        let mut now = 0;
        while now < 10_000 * PS_PER_US {
            now += 50_000;
            p.refill(now);
        }
        assert!((124_990..=125_000).contains(&p.tokens), "{}", p.tokens);
    }

    #[test]
    fn releases_a_bucket_then_the_rate() {
        // 100 Mbit/s: 12.5 bytes per microsecond; a 3000-byte bucket.
        let mut p = TxPacer::new(100_000_000, 3000);
        let mut sent = 0;
        while p.ready() {
            p.spend(1500);
            sent += 1;
        }
        assert_eq!(sent, 2);
        // Empty: one byte's time (80 ns) until a packet may go again.
        assert_eq!(p.ready_at(), 80_000);
        p.refill(PS_PER_US);
        assert!(p.ready());
        // 12 whole bytes came in by 0.96 us; that packet borrows 1488 more, which
        // take 119.12 us from there.
        p.spend(1500);
        assert_eq!(p.ready_at(), 960_000 + 119_120_000);
        p.refill(120 * PS_PER_US);
        assert!(!p.ready());
        p.refill(121 * PS_PER_US);
        assert!(p.ready());
        // A long pause refills no more than the bucket.
        p.refill(PS_PER_SEC);
        let mut burst = 0;
        while p.ready() {
            p.spend(1500);
            burst += 1;
        }
        assert_eq!(burst, 2);
    }
}
