//! Simulated time, link rates and sizes, and their human-friendly spellings.
//!
//! Time is an integer count of picoseconds everywhere in the simulator: no floating
//! point ever touches the event clock, so runs are exactly reproducible. Rates are
//! bits per second. Scenario files may write either plain integers in these base
//! units or strings with a unit (`"1us"`, `"10Gbps"`, `"9000B"`, `"64KiB"`).

use std::fmt;

/// Simulated time in picoseconds.
pub type Time = u64;

pub const PS: Time = 1;
pub const NS: Time = 1_000;
pub const US: Time = 1_000_000;
pub const MS: Time = 1_000_000_000;
pub const SEC: Time = 1_000_000_000_000;

/// Time to serialise `bytes` onto a link of `rate_bps`, rounded up to a whole picosecond.
#[inline]
pub fn serialisation_time(bytes: u32, rate_bps: u64) -> Time {
    // bytes * 8 * 1e12 / rate. Any packet fits the product in 64 bits, whose division
    // is one instruction; u128's is a library call (1% of a 100 Gbps run's time).
    const U64_MAX_BYTES: u32 = (u64::MAX / (8 * SEC)) as u32;
    if bytes <= U64_MAX_BYTES {
        return (u64::from(bytes) * 8 * SEC).div_ceil(rate_bps);
    }
    let num = bytes as u128 * 8 * SEC as u128;
    num.div_ceil(rate_bps as u128) as Time
}

/// Formats a picosecond time with the largest unit that keeps it readable.
pub struct DisplayTime(pub Time);

impl fmt::Display for DisplayTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0;
        if t >= SEC {
            write!(f, "{:.3}s", t as f64 / SEC as f64)
        } else if t >= MS {
            write!(f, "{:.3}ms", t as f64 / MS as f64)
        } else if t >= US {
            write!(f, "{:.3}us", t as f64 / US as f64)
        } else {
            write!(f, "{}ns", t as f64 / NS as f64)
        }
    }
}

// The spellings of durations, rates and sizes are shared with the daemon's
// configuration: one parser for both front ends.
pub use eqds_proto::units::{
    check_bytes, check_rate, check_time, parse_bytes, parse_rate, parse_time, MAX_DURATION,
    MAX_RATE,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialisation_is_exact() {
        // 1500 B at 10 Gbps is exactly 1.2 us.
        assert_eq!(serialisation_time(1500, 10_000_000_000), 1_200_000);
        // 9000 B at 100 Gbps is 720 ns.
        assert_eq!(serialisation_time(9000, 100_000_000_000), 720_000);
        // Rounds up: 1 B at 3 bps is 2.666.. s.
        assert_eq!(serialisation_time(1, 3), 2_666_666_666_667);
        // Either side of the switch from 64-bit to 128-bit arithmetic.
        assert_eq!(serialisation_time(2_305_843, 8), 2_305_843 * SEC);
        assert_eq!(serialisation_time(2_305_844, 8), 2_305_844 * SEC);
    }
}

/// Scenario-file values that accept a plain integer in base units or a string with a
/// unit (shared with the daemon's configuration).
pub mod value {
    pub use eqds_proto::units::value::{Bytes, Duration, Rate};
}
