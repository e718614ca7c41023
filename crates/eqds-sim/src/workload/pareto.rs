//! Pareto flow sizes: the AFQ paper's synthetic workload (§6.2: "Pareto distributed
//! (α = 1.1) flows with mean flow size 30KB").
//!
//! A Pareto distribution of shape α > 1 and mean m has scale (its smallest value)
//! x_m = m (α − 1) / α, and P(X > x) = (x_m / x)^α. Sizes are drawn by inversion,
//! x = x_m / u^(1/α) with u uniform in (0, 1]. With α near 1 the variance is
//! infinite and a draw can be enormous (α = 1.1, m = 30 KB: one flow in a million is
//! above 780 MB), so `max` may cap each draw; the mean that sets a Poisson
//! workload's arrival rate is then that of the capped sizes, E[min(X, max)].

use crate::engine::SimRng;
use crate::units::value::Bytes;
use rand::Rng;
use serde::Deserialize;

/// `pareto = { alpha, mean, max }` of a Poisson workload.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ParetoSpec {
    /// Shape α (default 1.1, the AFQ paper's).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Mean of the uncapped distribution (default 30 KB, the AFQ paper's).
    #[serde(default = "default_mean")]
    pub mean: Bytes,
    /// Largest size drawn: larger draws are cut to it (default: none).
    pub max: Option<Bytes>,
}

fn default_alpha() -> f64 {
    1.1
}
fn default_mean() -> Bytes {
    Bytes(30_000)
}

impl ParetoSpec {
    /// Checks the parameters; errors start with the key.
    pub fn validate(&self) -> Result<Pareto, String> {
        // Below 1 there is no mean to aim the load at; above 100 the sizes are all
        // the mean and a fixed size says so better.
        if !(self.alpha > 1.0 && self.alpha <= 100.0) {
            return Err(format!(
                "pareto.alpha: must be within (1, 100] (the mean is infinite at 1 and \
                 below), got {}",
                self.alpha
            ));
        }
        if self.mean.0 == 0 {
            return Err("pareto.mean: must be at least 1 byte".into());
        }
        let p = Pareto {
            alpha: self.alpha,
            scale: self.mean.0 as f64 * (self.alpha - 1.0) / self.alpha,
            max: self.max.map(|m| m.0 as f64),
        };
        if let Some(max) = self.max {
            if (max.0 as f64) < p.scale {
                return Err(format!(
                    "pareto.max: {} B is below the smallest size the distribution \
                     draws ({:.0} B)",
                    max.0, p.scale
                ));
            }
        }
        Ok(p)
    }
}

/// A validated Pareto distribution of sizes in bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pareto {
    alpha: f64,
    /// x_m, the smallest size.
    scale: f64,
    max: Option<f64>,
}

impl Pareto {
    /// Mean size of what [`Pareto::sample`] draws (capped at `max` if given).
    pub fn mean(&self) -> f64 {
        let (a, xm) = (self.alpha, self.scale);
        match self.max {
            None => a * xm / (a - 1.0),
            // E[min(X, M)] = a xm / (a - 1) - xm^a M^(1 - a) / (a - 1).
            Some(m) => a * xm / (a - 1.0) - xm.powf(a) * m.powf(1.0 - a) / (a - 1.0),
        }
    }

    /// Draws one size in bytes (at least 1).
    pub fn sample(&self, rng: &mut SimRng) -> u64 {
        let u = 1.0 - rng.random::<f64>();
        let x = self.scale / u.powf(1.0 / self.alpha);
        let x = self.max.map_or(x, |m| x.min(m));
        // Saturates at u64::MAX for the astronomically rare uncapped draw.
        x.round().max(1.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn spec(alpha: f64, mean: u64, max: Option<u64>) -> ParetoSpec {
        ParetoSpec {
            alpha,
            mean: Bytes(mean),
            max: max.map(Bytes),
        }
    }

    #[test]
    fn the_papers_defaults_have_a_30_kb_mean_and_a_2727_b_floor() {
        let p: ParetoSpec = toml::from_str("").unwrap();
        assert_eq!(p, spec(1.1, 30_000, None));
        let d = p.validate().unwrap();
        assert!((d.mean() - 30_000.0).abs() < 1e-6);
        assert!((d.scale - 30_000.0 / 11.0).abs() < 1e-9);
        let mut rng = SimRng::seed_from_u64(5);
        let draws: Vec<u64> = (0..100_000).map(|_| d.sample(&mut rng)).collect();
        assert!(draws.iter().all(|&x| x >= 2727));
        // The tail: P(X > 10 x_m) = 10^-1.1 = 7.9 %.
        let above = draws.iter().filter(|&&x| x as f64 > 10.0 * d.scale).count();
        let frac = above as f64 / draws.len() as f64;
        assert!((frac - 0.0794).abs() < 0.005, "{frac}");
    }

    #[test]
    fn a_cap_cuts_draws_and_the_mean_follows() {
        // A light tail, so that the sample mean settles: alpha 3, mean 30 KB, cap
        // 40 KB.
        let d = spec(3.0, 30_000, Some(40_000)).validate().unwrap();
        let mut rng = SimRng::seed_from_u64(9);
        let n = 200_000;
        let draws: Vec<u64> = (0..n).map(|_| d.sample(&mut rng)).collect();
        assert!(draws.iter().all(|&x| (20_000..=40_000).contains(&x)));
        let avg = draws.iter().sum::<u64>() as f64 / n as f64;
        assert!(d.mean() < 30_000.0);
        assert!(
            (avg / d.mean() - 1.0).abs() < 0.005,
            "{avg} vs {}",
            d.mean()
        );
        // Uncapped, the sample mean is near the nominal one.
        let d = spec(3.0, 30_000, None).validate().unwrap();
        let avg = (0..n).map(|_| d.sample(&mut rng)).sum::<u64>() as f64 / n as f64;
        assert!((avg / 30_000.0 - 1.0).abs() < 0.01, "{avg}");
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        for (s, want) in [
            (spec(1.0, 30_000, None), "pareto.alpha"),
            (spec(0.5, 30_000, None), "pareto.alpha"),
            (spec(f64::NAN, 30_000, None), "pareto.alpha"),
            (spec(1.1, 0, None), "pareto.mean"),
            (spec(1.1, 30_000, Some(100)), "pareto.max"),
        ] {
            let e = s.validate().unwrap_err();
            assert!(e.starts_with(want), "{s:?}: {e}");
        }
    }
}
