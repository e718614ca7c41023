//! Open-loop Poisson flow arrivals between uniformly random host pairs.
//!
//! The arrival rate makes the offered load `load` times the hosts' aggregate NIC
//! rate: lambda = load * sum(rate) / (8 * mean size) flows per second.
//!
//! With `sender_hosts` and/or `receiver_hosts` the source is uniform among the
//! senders and the destination among the receivers other than the source, and the
//! aggregate is the smaller of the senders' and the receivers' NIC rates: the links
//! every flow must cross (for the AFQ testbed's 4 servers answering 4 clients, the
//! clients' 40 Gbps). Lists that name every host draw exactly what no lists draw.

use super::pareto::Pareto;
use super::FlowSizeCdf;
use crate::engine::SimRng;
use crate::flow::{FlowSpec, Protocol};
use crate::net::Network;
use crate::units::{Time, SEC};
use rand::Rng;
use std::collections::HashMap;

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

/// The hosts that may send and receive: every host (the unrestricted workload), or
/// lists, checked by the workload's validation (non-empty, existing, distinct, a
/// receiver other than itself for every sender).
enum Pairs {
    All(u32),
    Listed {
        senders: Vec<u32>,
        receivers: Vec<u32>,
        /// Each receiver's index in `receivers`, to skip the source among them.
        index: HashMap<u32, usize>,
    },
}

impl Pairs {
    fn new(n: u32, senders: Option<&[u32]>, receivers: Option<&[u32]>) -> Pairs {
        if senders.is_none() && receivers.is_none() {
            return Pairs::All(n);
        }
        let all = || (0..n).collect::<Vec<u32>>();
        let receivers = receivers.map_or_else(all, <[u32]>::to_vec);
        Pairs::Listed {
            senders: senders.map_or_else(all, <[u32]>::to_vec),
            index: receivers.iter().enumerate().map(|(i, &h)| (h, i)).collect(),
            receivers,
        }
    }

    /// Draws a source, then a destination other than it. `All(n)` draws as the
    /// workload always has (the same random numbers, so outputs stay the same).
    fn draw(&self, rng: &mut SimRng) -> (u32, u32) {
        match self {
            Pairs::All(n) => {
                let src = rng.random_range(0..*n);
                let mut dst = rng.random_range(0..*n - 1);
                if dst >= src {
                    dst += 1;
                }
                (src, dst)
            }
            Pairs::Listed {
                senders,
                receivers,
                index,
            } => {
                let src = senders[rng.random_range(0..senders.len())];
                let dst = match index.get(&src) {
                    Some(&skip) => {
                        let mut i = rng.random_range(0..receivers.len() - 1);
                        if i >= skip {
                            i += 1;
                        }
                        receivers[i]
                    }
                    None => receivers[rng.random_range(0..receivers.len())],
                };
                (src, dst)
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub fn arrivals(
    net: &Network,
    rng: &mut SimRng,
    cdf: &Sizes,
    load: f64,
    start: Time,
    stop: Time,
    protocol: Protocol,
    sender_hosts: Option<&[u32]>,
    receiver_hosts: Option<&[u32]>,
) -> Vec<FlowSpec> {
    let n = net.n_hosts;
    let pairs = Pairs::new(n, sender_hosts, receiver_hosts);
    let rate = |hosts: &mut dyn Iterator<Item = u32>| -> f64 {
        hosts.map(|h| net.host_rate(h) as f64).sum()
    };
    let capacity: f64 = match &pairs {
        Pairs::All(n) => rate(&mut (0..*n)),
        Pairs::Listed {
            senders, receivers, ..
        } => rate(&mut senders.iter().copied()).min(rate(&mut receivers.iter().copied())),
    };
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
        let (src, dst) = pairs.draw(rng);
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
