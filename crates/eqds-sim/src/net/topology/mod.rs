//! Topologies as written in scenario files, and their builders.
//!
//! Each builder numbers hosts so that every switch reaches a contiguous range of them
//! (see `net::switch`), which is all that routing needs.

mod clos3;
mod dumbbell;
mod fat_tree;
mod leaf_spine;
mod single_switch;

use super::{LinkSpec, Network, NetworkBuilder};
use crate::units::value::{Duration, Rate};
use serde::Deserialize;

/// A link in a scenario file: `{ rate = "10Gbps", latency = "1us" }`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkToml {
    pub rate: Rate,
    pub latency: Duration,
}

impl From<LinkToml> for LinkSpec {
    fn from(l: LinkToml) -> Self {
        LinkSpec {
            rate_bps: l.rate.0,
            latency: l.latency.0,
        }
    }
}

/// The `[topology]` table (`kind = "..."` selects the variant).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// 3-tier k-ary fat tree: k pods of k/2 ToRs and k/2 aggregation switches,
    /// (k/2)^2 cores; k/2 hosts per ToR unless `hosts_per_tor` oversubscribes it.
    FatTree {
        k: u32,
        hosts_per_tor: Option<u32>,
        /// Default for every tier.
        link: LinkToml,
        host_link: Option<LinkToml>,
        tor_agg_link: Option<LinkToml>,
        agg_core_link: Option<LinkToml>,
    },
    /// 2-tier leaf-spine: every leaf connects to every spine.
    LeafSpine {
        leaves: u32,
        spines: u32,
        hosts_per_leaf: u32,
        link: LinkToml,
        host_link: Option<LinkToml>,
        /// One host link per leaf, overriding `host_link` (servers and clients on
        /// NICs of different speeds).
        leaf_host_links: Option<Vec<LinkToml>>,
        leaf_spine_link: Option<LinkToml>,
    },
    /// 3-tier Clos: pods of `tors_per_pod` ToRs and `leaves_per_pod` leaves (each
    /// ToR linked to each leaf of its pod), every leaf linked to every spine. The
    /// defaults make the DCQCN paper's testbed (Fig. 2) of `tors` ToRs: 4 ToRs, 4
    /// leaves, 2 spines.
    Clos3 {
        /// ToRs in all (default 4); a multiple of `tors_per_pod`.
        tors: Option<u32>,
        /// ToRs per pod (default 2).
        tors_per_pod: Option<u32>,
        /// Leaves per pod (default 2): each ToR's uplinks, and each spine's
        /// equal-cost links into a pod.
        leaves_per_pod: Option<u32>,
        /// Spines (default 2): each leaf's uplinks.
        spines: Option<u32>,
        hosts_per_tor: u32,
        /// Default for every tier.
        link: LinkToml,
        host_link: Option<LinkToml>,
        tor_leaf_link: Option<LinkToml>,
        leaf_spine_link: Option<LinkToml>,
    },
    /// N hosts on one switch (incast and switch-model experiments).
    SingleSwitch { hosts: u32, link: LinkToml },
    /// Two switches joined by one bottleneck link, `left` and `right` hosts on each.
    Dumbbell {
        left: u32,
        right: u32,
        link: LinkToml,
        bottleneck: LinkToml,
    },
}

/// Largest network we agree to build (a k=48 fat tree has 27,648 hosts).
const MAX_HOSTS: u64 = 1 << 22;
/// Largest number of ports (two per link) we agree to build: a k=256 fat tree has
/// 25 million.
const MAX_PORTS: u64 = 1 << 28;

impl TopologySpec {
    /// The sizes of a `clos3`, defaults filled in (`None` for other kinds).
    fn clos3_shape(&self) -> Option<clos3::Shape> {
        match *self {
            TopologySpec::Clos3 {
                tors,
                tors_per_pod,
                leaves_per_pod,
                spines,
                hosts_per_tor,
                ..
            } => Some(clos3::Shape {
                tors: tors.unwrap_or(4),
                tors_per_pod: tors_per_pod.unwrap_or(2),
                leaves_per_pod: leaves_per_pod.unwrap_or(2),
                spines: spines.unwrap_or(2),
                hosts_per_tor,
            }),
            _ => None,
        }
    }

    pub fn n_hosts(&self) -> u64 {
        match self {
            TopologySpec::FatTree {
                k, hosts_per_tor, ..
            } => {
                let half = (*k / 2) as u64;
                *k as u64 * half * hosts_per_tor.map_or(half, |h| h as u64)
            }
            TopologySpec::LeafSpine {
                leaves,
                hosts_per_leaf,
                ..
            } => *leaves as u64 * *hosts_per_leaf as u64,
            TopologySpec::Clos3 { .. } => {
                let c = self.clos3_shape().unwrap();
                c.tors as u64 * c.hosts_per_tor as u64
            }
            TopologySpec::SingleSwitch { hosts, .. } => *hosts as u64,
            TopologySpec::Dumbbell { left, right, .. } => *left as u64 + *right as u64,
        }
    }

    /// Switches the topology builds.
    pub fn n_switches(&self) -> u64 {
        match self {
            TopologySpec::FatTree { k, .. } => {
                let (k, half) = (*k as u64, (*k / 2) as u64);
                // k*k/2 ToRs and as many aggregation switches, (k/2)^2 cores.
                2 * k * half + half * half
            }
            TopologySpec::LeafSpine { leaves, spines, .. } => *leaves as u64 + *spines as u64,
            TopologySpec::Clos3 { .. } => {
                let c = self.clos3_shape().unwrap();
                let pods = (c.tors / c.tors_per_pod.max(1)) as u64;
                c.tors as u64 + pods * c.leaves_per_pod as u64 + c.spines as u64
            }
            TopologySpec::SingleSwitch { .. } => 1,
            TopologySpec::Dumbbell { .. } => 2,
        }
    }

    /// Full-duplex links the topology builds (two ports each).
    pub fn n_links(&self) -> u64 {
        let hosts = self.n_hosts();
        match self {
            TopologySpec::FatTree { k, .. } => {
                let (k, half) = (*k as u64, (*k / 2) as u64);
                // Host links, then ToR-aggregation and aggregation-core links: each
                // pod has (k/2)^2 of both.
                hosts + 2 * k * half * half
            }
            TopologySpec::LeafSpine { leaves, spines, .. } => {
                hosts + *leaves as u64 * *spines as u64
            }
            TopologySpec::Clos3 { .. } => {
                // Host links, one link from every ToR to every leaf of its pod, one
                // from every leaf to every spine.
                let c = self.clos3_shape().unwrap();
                let pods = (c.tors / c.tors_per_pod.max(1)) as u64;
                let leaves = pods * c.leaves_per_pod as u64;
                // Saturating: absurd sizes must reach the port limit's error intact.
                (leaves.saturating_mul(c.spines as u64))
                    .saturating_add(hosts + c.tors as u64 * c.leaves_per_pod as u64)
            }
            TopologySpec::SingleSwitch { .. } => hosts,
            TopologySpec::Dumbbell { .. } => hosts + 1,
        }
    }

    /// Tiers of the switch ports this topology builds (the names `ports.csv` gives
    /// them), in the order of the table in `docs/scenarios.md`.
    pub fn switch_tiers(&self) -> &'static [&'static str] {
        match self {
            TopologySpec::FatTree { .. } => {
                &["tor_down", "tor_up", "agg_down", "agg_up", "core_down"]
            }
            TopologySpec::LeafSpine { .. } => &["leaf_down", "leaf_up", "spine_down"],
            TopologySpec::Clos3 { .. } => {
                &["tor_down", "tor_up", "leaf_down", "leaf_up", "spine_down"]
            }
            TopologySpec::SingleSwitch { .. } => &["switch_down"],
            TopologySpec::Dumbbell { .. } => &["switch_down", "bottleneck_lr", "bottleneck_rl"],
        }
    }

    /// Links on the longest path from one host to another.
    pub fn max_hops(&self) -> u32 {
        match self {
            TopologySpec::FatTree { .. } => 6,
            TopologySpec::LeafSpine { .. } => 4,
            // Host, ToR, leaf, spine, leaf, ToR, host.
            TopologySpec::Clos3 { .. } => 6,
            TopologySpec::SingleSwitch { .. } => 2,
            TopologySpec::Dumbbell { .. } => 3,
        }
    }

    /// Every kind of link the scenario file gives (not one per link built).
    pub fn links(&self) -> Vec<LinkToml> {
        match self {
            TopologySpec::FatTree {
                link,
                host_link,
                tor_agg_link,
                agg_core_link,
                ..
            } => [Some(*link), *host_link, *tor_agg_link, *agg_core_link]
                .into_iter()
                .flatten()
                .collect(),
            TopologySpec::LeafSpine {
                link,
                host_link,
                leaf_host_links,
                leaf_spine_link,
                ..
            } => [Some(*link), *host_link, *leaf_spine_link]
                .into_iter()
                .flatten()
                .chain(leaf_host_links.iter().flatten().copied())
                .collect(),
            TopologySpec::Clos3 {
                link,
                host_link,
                tor_leaf_link,
                leaf_spine_link,
                ..
            } => [Some(*link), *host_link, *tor_leaf_link, *leaf_spine_link]
                .into_iter()
                .flatten()
                .collect(),
            TopologySpec::SingleSwitch { link, .. } => vec![*link],
            TopologySpec::Dumbbell {
                link, bottleneck, ..
            } => vec![*link, *bottleneck],
        }
    }

    /// Checks sizes; the message names the offending field.
    pub fn validate(&self) -> Result<(), String> {
        let positive = |name: &str, v: u32| -> Result<(), String> {
            if v == 0 {
                Err(format!("{name}: must be at least 1"))
            } else {
                Ok(())
            }
        };
        match self {
            TopologySpec::FatTree {
                k, hosts_per_tor, ..
            } => {
                if *k < 2 || k % 2 != 0 || *k > 256 {
                    return Err(format!("k: must be an even number from 2 to 256, got {k}"));
                }
                if let Some(h) = hosts_per_tor {
                    positive("hosts_per_tor", *h)?;
                }
            }
            TopologySpec::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
                leaf_host_links,
                ..
            } => {
                positive("leaves", *leaves)?;
                positive("spines", *spines)?;
                positive("hosts_per_leaf", *hosts_per_leaf)?;
                if let Some(links) = leaf_host_links {
                    if links.len() != *leaves as usize {
                        return Err(format!(
                            "leaf_host_links: needs one link per leaf ({leaves}), got {}",
                            links.len()
                        ));
                    }
                }
            }
            TopologySpec::Clos3 { .. } => {
                let c = self.clos3_shape().unwrap();
                positive("tors", c.tors)?;
                positive("tors_per_pod", c.tors_per_pod)?;
                positive("leaves_per_pod", c.leaves_per_pod)?;
                positive("spines", c.spines)?;
                positive("hosts_per_tor", c.hosts_per_tor)?;
                if c.tors % c.tors_per_pod != 0 {
                    return Err(format!(
                        "tors: must be a multiple of tors_per_pod ({}), got {}",
                        c.tors_per_pod, c.tors
                    ));
                }
            }
            TopologySpec::SingleSwitch { hosts, .. } => {
                if *hosts < 2 {
                    return Err(format!(
                        "hosts: a network needs at least 2 hosts, got {hosts}"
                    ));
                }
            }
            TopologySpec::Dumbbell { left, right, .. } => {
                positive("left", *left)?;
                positive("right", *right)?;
            }
        }
        let n = self.n_hosts();
        if n < 2 {
            return Err(format!(
                "the topology has {n} host(s); at least 2 are needed"
            ));
        }
        if n > MAX_HOSTS {
            return Err(format!(
                "the topology has {n} hosts; at most {MAX_HOSTS} are supported"
            ));
        }
        // Ports are numbered in 32 bits; a few spines too many must not wrap them.
        let ports = 2 * self.n_links();
        if ports > MAX_PORTS {
            return Err(format!(
                "the topology has {ports} ports; at most {MAX_PORTS} are supported"
            ));
        }
        Ok(())
    }

    /// Builds the network. Call [`validate`](Self::validate) first.
    pub fn build(&self, builder: impl FnOnce(u32) -> NetworkBuilder) -> Network {
        let b = builder(self.n_hosts() as u32);
        match self {
            TopologySpec::FatTree {
                k,
                hosts_per_tor,
                link,
                host_link,
                tor_agg_link,
                agg_core_link,
            } => {
                let links = fat_tree::Links {
                    host: host_link.unwrap_or(*link).into(),
                    tor_agg: tor_agg_link.unwrap_or(*link).into(),
                    agg_core: agg_core_link.unwrap_or(*link).into(),
                };
                fat_tree::build(b, *k, hosts_per_tor.unwrap_or(k / 2), links)
            }
            TopologySpec::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
                link,
                host_link,
                leaf_host_links,
                leaf_spine_link,
            } => {
                let host_links: Vec<LinkSpec> = match leaf_host_links {
                    Some(links) => links.iter().map(|&l| l.into()).collect(),
                    None => vec![host_link.unwrap_or(*link).into(); *leaves as usize],
                };
                leaf_spine::build(
                    b,
                    *spines,
                    *hosts_per_leaf,
                    &host_links,
                    leaf_spine_link.unwrap_or(*link).into(),
                )
            }
            TopologySpec::Clos3 {
                link,
                host_link,
                tor_leaf_link,
                leaf_spine_link,
                ..
            } => {
                let links = clos3::Links {
                    host: host_link.unwrap_or(*link).into(),
                    tor_leaf: tor_leaf_link.unwrap_or(*link).into(),
                    leaf_spine: leaf_spine_link.unwrap_or(*link).into(),
                };
                clos3::build(b, self.clos3_shape().unwrap(), links)
            }
            TopologySpec::SingleSwitch { hosts, link } => {
                single_switch::build(b, *hosts, (*link).into())
            }
            TopologySpec::Dumbbell {
                left,
                right,
                link,
                bottleneck,
            } => dumbbell::build(b, *left, *right, (*link).into(), (*bottleneck).into()),
        }
    }
}
