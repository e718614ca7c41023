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

/// Splits `"12.5Gbps"` into (12.5, "Gbps"), accepting an optional space between them.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '_'))
        .unwrap_or(s.len());
    // "e" may begin a unit ("e" is not a unit we use), so only accept it inside a number.
    let (num, unit) = s.split_at(end);
    let num: f64 = num.replace('_', "").parse().ok()?;
    if !num.is_finite() || num < 0.0 {
        return None;
    }
    Some((num, unit.trim()))
}

fn scaled(num: f64, scale: f64, what: &str, s: &str) -> Result<u64, String> {
    let v = num * scale;
    if v > u64::MAX as f64 / 2.0 {
        return Err(format!("{what} `{s}` is too large"));
    }
    let r = v.round();
    if (r - v).abs() > 1e-6 * v.max(1.0) {
        return Err(format!("{what} `{s}` is not a whole number of base units"));
    }
    Ok(r as u64)
}

/// Parses a duration such as `"1us"`, `"2.5ms"`, `"100ns"`, `"1s"` or `"350ps"`.
pub fn parse_time(s: &str) -> Result<Time, String> {
    let (num, unit) = split_number(s).ok_or_else(|| format!("`{s}` is not a duration"))?;
    let scale = match unit {
        "ps" => PS,
        "ns" => NS,
        "us" | "µs" => US,
        "ms" => MS,
        "s" => SEC,
        "" => return Err(format!("duration `{s}` needs a unit (ps, ns, us, ms, s)")),
        _ => {
            return Err(format!(
                "unknown time unit `{unit}` in `{s}` (ps, ns, us, ms, s)"
            ))
        }
    };
    check_time(scaled(num, scale as f64, "duration", s)?, s)
}

/// Parses a rate such as `"10Gbps"`, `"400Mbps"`, `"100G"` into bits per second.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (num, unit) = split_number(s).ok_or_else(|| format!("`{s}` is not a rate"))?;
    let scale: f64 = match unit.trim_end_matches("bps").trim_end_matches("bit/s") {
        "" if unit.is_empty() => {
            return Err(format!(
                "rate `{s}` needs a unit (bps, Kbps, Mbps, Gbps, Tbps)"
            ))
        }
        "" => 1.0,
        "K" | "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => {
            return Err(format!(
                "unknown rate unit `{unit}` in `{s}` (bps, Kbps, Mbps, Gbps, Tbps)"
            ))
        }
    };
    check_rate(scaled(num, scale, "rate", s)?, s)
}

/// The fastest link rate a scenario may give: 1 Pbit/s, far beyond any NIC, and low
/// enough that a rate times any duration a scenario may give (bandwidth-delay
/// products) fits in 128-bit arithmetic with room to spare.
pub const MAX_RATE: u64 = 1_000_000_000_000_000;

/// The longest duration a scenario may give: one day of simulated time. Sums of a
/// few hundred of them (a path's latencies, a start time plus timeouts) still fit
/// the picosecond clock's 64 bits (213 days), so event times never wrap.
pub const MAX_DURATION: Time = 86_400 * SEC;

/// Checks a rate in bit/s, however it was written (`spelled`): a link of rate 0
/// would take for ever to send anything (and divide by zero on the way).
pub fn check_rate(bps: u64, spelled: &str) -> Result<u64, String> {
    if bps == 0 {
        return Err(format!("rate `{spelled}` must be positive"));
    }
    if bps > MAX_RATE {
        return Err(format!("rate `{spelled}` is above the 1 Pbps we support"));
    }
    Ok(bps)
}

/// Checks a duration in picoseconds, however it was written (`spelled`).
pub fn check_time(ps: Time, spelled: &str) -> Result<Time, String> {
    if ps > MAX_DURATION {
        return Err(format!(
            "duration `{spelled}` is longer than the one day (86400s) we support"
        ));
    }
    Ok(ps)
}

/// Checks a size in bytes, however it was written (`spelled`). Any size fits, but
/// not one at `u64::MAX`, which stands for a flow that never ends.
pub fn check_bytes(bytes: u64, spelled: &str) -> Result<u64, String> {
    if bytes == u64::MAX {
        return Err(format!("size `{spelled}` is too large"));
    }
    Ok(bytes)
}

/// Parses a size such as `"9000B"`, `"64KiB"`, `"1MB"` into bytes.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (num, unit) = split_number(s).ok_or_else(|| format!("`{s}` is not a size"))?;
    let scale: f64 = match unit {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "unknown size unit `{unit}` in `{s}` (B, KB, MB, GB, KiB, MiB, GiB)"
            ))
        }
    };
    check_bytes(scaled(num, scale, "size", s)?, s)
}

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

    #[test]
    fn parses_units() {
        assert_eq!(parse_time("1us").unwrap(), US);
        assert_eq!(parse_time("2.5ms").unwrap(), 2_500 * US);
        assert_eq!(parse_rate("10Gbps").unwrap(), 10_000_000_000);
        assert_eq!(parse_rate("25G").unwrap(), 25_000_000_000);
        assert_eq!(parse_bytes("64KiB").unwrap(), 65536);
        assert_eq!(parse_bytes("1MB").unwrap(), 1_000_000);
        assert!(parse_time("5").is_err());
        assert!(parse_time("5 parsecs").is_err());
        assert!(parse_rate("0Gbps").is_err());
        assert!(parse_rate("-1Gbps").is_err());
        assert!(parse_time("0.5ps").is_err());
        assert!(parse_bytes("1e30GB").is_err());
    }
}

/// Scenario-file values that accept a plain integer in base units or a string with a
/// unit. Each wraps the base-unit integer.
pub mod value {
    use serde::de::{self, Deserializer, Visitor};
    use serde::Deserialize;
    use std::fmt;

    macro_rules! unit_value {
        ($name:ident, $parse:path, $check:path, $what:literal, $base:literal) => {
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
            pub struct $name(pub u64);

            impl<'de> Deserialize<'de> for $name {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    struct V;
                    impl Visitor<'_> for V {
                        type Value = $name;
                        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                            write!(
                                f,
                                concat!(
                                    "a ",
                                    $what,
                                    " (an integer in ",
                                    $base,
                                    " or a string with a unit)"
                                )
                            )
                        }
                        fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                            let v = u64::try_from(v).map_err(|_| {
                                E::custom(format!(
                                    concat!("a ", $what, " cannot be negative, got {}"),
                                    v
                                ))
                            })?;
                            self.visit_u64(v)
                        }
                        // The same range checks as the string form: `rate = 0` is as
                        // wrong as `rate = "0Gbps"`.
                        fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                            $check(v, &v.to_string()).map($name).map_err(E::custom)
                        }
                        fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                            $parse(v).map($name).map_err(E::custom)
                        }
                    }
                    d.deserialize_any(V)
                }
            }
        };
    }

    unit_value!(
        Duration,
        super::parse_time,
        super::check_time,
        "duration",
        "picoseconds"
    );
    unit_value!(
        Rate,
        super::parse_rate,
        super::check_rate,
        "rate",
        "bits per second"
    );
    unit_value!(
        Bytes,
        super::parse_bytes,
        super::check_bytes,
        "size",
        "bytes"
    );
}
