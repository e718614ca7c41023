//! Quantities as configuration files spell them: durations, rates and sizes.
//!
//! Both front ends read EQDS's settings from TOML (the simulator's scenario `[eqds]`
//! table and the daemon's `[eqds]` section), and both accept the same spellings: a
//! plain integer in the base unit (picoseconds, bits per second, bytes) or a string
//! with a unit (`"1us"`, `"10Gbps"`, `"64KiB"`). The parsers live here, in the one
//! crate both front ends share, so a value means the same thing in either file. The
//! `serde` types that wrap them ([`value`]) come with the `config` feature.

use crate::time::Time;

const PS: Time = 1;
const NS: Time = crate::time::PS_PER_NS;
const US: Time = crate::time::PS_PER_US;
const MS: Time = crate::time::PS_PER_MS;
const SEC: Time = crate::time::PS_PER_SEC;

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

/// Parses a duration such as `"1us"`, `"2.5ms"`, `"100ns"`, `"1s"` or `"350ps"` into
/// picoseconds.
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

/// A duration in picoseconds as a file would spell it, in the largest unit that
/// keeps it whole: `"2ms"`, `"350us"`, `"1500ps"`.
pub fn format_time(ps: Time) -> String {
    for (unit, scale) in [("s", SEC), ("ms", MS), ("us", US), ("ns", NS)] {
        if ps >= scale && ps % scale == 0 {
            return format!("{}{unit}", ps / scale);
        }
    }
    format!("{ps}ps")
}

#[cfg(feature = "config")]
pub mod value;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_time("1us").unwrap(), US);
        assert_eq!(parse_time("2.5ms").unwrap(), 2_500 * US);
        assert_eq!(parse_time("350ps").unwrap(), 350 * PS);
        assert_eq!(parse_time("1s").unwrap(), SEC);
        assert_eq!(parse_time("100ns").unwrap(), 100 * NS);
        assert_eq!(parse_time("1ms").unwrap(), MS);
        assert_eq!(parse_rate("10Gbps").unwrap(), 10_000_000_000);
        assert_eq!(parse_rate("25G").unwrap(), 25_000_000_000);
        assert_eq!(parse_bytes("64KiB").unwrap(), 65536);
        assert_eq!(parse_bytes("1MB").unwrap(), 1_000_000);
        assert!(parse_time("5").is_err());
        assert!(parse_time("5 parsecs").is_err());
        assert!(parse_time("2days").is_err());
        assert!(parse_rate("0Gbps").is_err());
        assert!(parse_rate("-1Gbps").is_err());
        assert!(parse_time("0.5ps").is_err());
        assert!(parse_bytes("1e30GB").is_err());
    }

    #[test]
    fn formats_times_as_files_spell_them() {
        for t in ["2ms", "350us", "1s", "1500ps", "0ps", "7ns"] {
            assert_eq!(format_time(parse_time(t).unwrap()), t);
        }
    }
}
