//! Flow-size distributions given as cumulative points, sampled by inverse transform
//! with linear interpolation between points.
//!
//! File format: `#` comments, then `SIZE_BYTES CUMULATIVE_PROBABILITY` per line, both
//! non-decreasing, the last probability exactly 1. A repeated size makes a step (a
//! probability mass at that size). The bundled `websearch` (DCTCP, SIGCOMM 2010),
//! `datamining` (VL2, SIGCOMM 2009) and `enterprise` (the AFQ paper's enterprise
//! workload, most likely CONGA's, SIGCOMM 2014) distributions live in
//! `scenarios/cdf/` with their sources and are also compiled in, so the names work
//! anywhere.

use crate::engine::SimRng;
use rand::Rng;
use std::path::Path;

const WEBSEARCH: &str = include_str!("../../../../scenarios/cdf/websearch.cdf");
const DATAMINING: &str = include_str!("../../../../scenarios/cdf/datamining.cdf");
const ENTERPRISE: &str = include_str!("../../../../scenarios/cdf/enterprise.cdf");

#[derive(Clone, Debug)]
pub struct FlowSizeCdf {
    /// (size in bytes, cumulative probability), validated.
    points: Vec<(f64, f64)>,
}

impl FlowSizeCdf {
    /// A bundled name (`websearch`, `datamining`, `enterprise`) or a file relative to
    /// `base_dir`.
    pub fn load(name: &str, base_dir: &Path) -> Result<Self, String> {
        match name {
            "websearch" => Self::parse(WEBSEARCH),
            "datamining" => Self::parse(DATAMINING),
            "enterprise" => Self::parse(ENTERPRISE),
            file => {
                let path = base_dir.join(file);
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    format!(
                        "cannot read `{}` ({e}); bundled names are `websearch`, `datamining` and \
                         `enterprise`",
                        path.display()
                    )
                })?;
                Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
            }
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let mut points: Vec<(f64, f64)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let lineno = i + 1;
            let mut fields = line.split_whitespace();
            let (Some(size), Some(p), None) = (fields.next(), fields.next(), fields.next()) else {
                return Err(format!("line {lineno}: expected `SIZE PROBABILITY`"));
            };
            let size: f64 = size
                .parse()
                .map_err(|_| format!("line {lineno}: `{size}` is not a size"))?;
            let p: f64 = p
                .parse()
                .map_err(|_| format!("line {lineno}: `{p}` is not a probability"))?;
            if !(size.is_finite() && size >= 1.0) {
                return Err(format!("line {lineno}: size must be at least 1 byte"));
            }
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("line {lineno}: probability {p} is outside [0, 1]"));
            }
            if let Some(&(ps, pp)) = points.last() {
                if size < ps || p < pp {
                    return Err(format!(
                        "line {lineno}: sizes and probabilities must not decrease"
                    ));
                }
            }
            points.push((size, p));
        }
        match points.last() {
            None => Err("no points".into()),
            Some(&(_, p)) if p != 1.0 => Err(format!("the last probability must be 1, not {p}")),
            _ => Ok(FlowSizeCdf { points }),
        }
    }

    /// Mean size in bytes under linear interpolation.
    pub fn mean(&self) -> f64 {
        let (s0, p0) = self.points[0];
        let mut mean = s0 * p0;
        for w in self.points.windows(2) {
            let ((sa, pa), (sb, pb)) = (w[0], w[1]);
            mean += (pb - pa) * (sa + sb) / 2.0;
        }
        mean
    }

    /// Draws one size in bytes (at least 1).
    pub fn sample(&self, rng: &mut SimRng) -> u64 {
        let u: f64 = rng.random();
        let i = self.points.partition_point(|&(_, p)| p < u);
        let (sb, pb) = self.points[i.min(self.points.len() - 1)];
        if i == 0 {
            return sb.round().max(1.0) as u64;
        }
        let (sa, pa) = self.points[i - 1];
        let size = if pb > pa {
            sa + (sb - sa) * (u - pa) / (pb - pa)
        } else {
            sb
        };
        size.round().max(1.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn bundled_distributions_parse_and_sample_their_mean() {
        for (name, mean) in [
            ("websearch", 1_711_250.0),
            ("datamining", 7_470_236.0),
            ("enterprise", 157_357.0),
        ] {
            let cdf = FlowSizeCdf::load(name, Path::new(".")).unwrap();
            assert!(
                (cdf.mean() - mean).abs() / mean < 0.01,
                "{name}: mean {}",
                cdf.mean()
            );
            let mut rng = SimRng::seed_from_u64(3);
            let n = 200_000;
            let avg = (0..n).map(|_| cdf.sample(&mut rng) as f64).sum::<f64>() / n as f64;
            // Heavy tails: the sample mean converges slowly; 10% is ample at this n.
            assert!(
                (avg - cdf.mean()).abs() / cdf.mean() < 0.1,
                "{name}: sample mean {avg}"
            );
        }
    }

    #[test]
    fn rejects_bad_files() {
        assert!(FlowSizeCdf::parse("").is_err());
        assert!(FlowSizeCdf::parse("100 0.5\n").is_err());
        assert!(FlowSizeCdf::parse("100 0.5\n50 1\n").is_err());
        assert!(FlowSizeCdf::parse("100 1.5\n").is_err());
        assert!(FlowSizeCdf::parse("0 1\n").is_err());
        assert!(FlowSizeCdf::parse("abc 1\n").is_err());
        assert!(FlowSizeCdf::parse("100 1 7\n").is_err());
        assert!(FlowSizeCdf::parse("100 1\n").is_ok());
    }
}
