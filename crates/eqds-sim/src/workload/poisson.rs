//! Open-loop Poisson flow arrivals between uniformly random host pairs.
//!
//! The arrival rate makes the offered load `load` times the hosts' aggregate NIC
//! rate: lambda = load * sum(rate) / (8 * mean size) flows per second.

use super::pareto::Pareto;
use super::FlowSizeCdf;
use crate::engine::SimRng;
use crate::flow::{FlowSpec, Protocol};
use crate::net::Network;
use crate::units::{Time, SEC};
use rand::Rng;

/// Where a Poisson workload's flow sizes come from.
#[derive(Clone, Debug)]
pub enum Sizes {
    /// Cumulative points (`cdf`).
    Cdf(FlowSizeCdf),
    /// A Pareto distribution (`pareto`).
    Pareto(Pareto),
}

impl Sizes {
    /// Mean size in bytes.
    pub fn mean(&self) -> f64 {
        match self {
            Sizes::Cdf(c) => c.mean(),
            Sizes::Pareto(p) => p.mean(),
        }
    }

    /// Draws one size in bytes (at least 1).
    pub fn sample(&self, rng: &mut SimRng) -> u64 {
        match self {
            Sizes::Cdf(c) => c.sample(rng),
            Sizes::Pareto(p) => p.sample(rng),
        }
    }
}

pub fn arrivals(
    net: &Network,
    rng: &mut SimRng,
    cdf: &Sizes,
    load: f64,
    start: Time,
    stop: Time,
    protocol: Protocol,
) -> Vec<FlowSpec> {
    let n = net.n_hosts;
    let capacity: f64 = (0..n).map(|h| net.host_rate(h) as f64).sum();
    let per_second = load * capacity / (8.0 * cdf.mean());
    let mean_gap_ps = SEC as f64 / per_second;
    let mut flows = Vec::new();
    let mut t = start as f64;
    loop {
        // Exponential inter-arrival time by inversion; 1 - u avoids ln(0).
        let u: f64 = rng.random();
        t += -(1.0 - u).ln() * mean_gap_ps;
        if t >= stop as f64 {
            break;
        }
        let src = rng.random_range(0..n);
        let mut dst = rng.random_range(0..n - 1);
        if dst >= src {
            dst += 1;
        }
        let size = cdf.sample(rng);
        flows.push(FlowSpec {
            src,
            dst,
            size: Some(size),
            start: t as Time,
            protocol,
            origin: 0,
            legacy: false,
        });
    }
    flows
}
