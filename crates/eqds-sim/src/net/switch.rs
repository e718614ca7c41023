//! Switch forwarding: up/down routing over contiguous host ranges, and load balancing.
//!
//! Every switch in the topologies we build reaches a contiguous range of hosts through
//! its down ports, `span` hosts per port. A packet for a host in that range goes down
//! the port that covers it; any other packet goes up, on an uplink chosen by the load
//! balancer. Forwarding is two comparisons and a division: no tables, no per-pair
//! paths, so a 27,648-host fat tree costs a few bytes per switch.
//!
//! Down ports may also come in groups of `down_width` equal-cost ports that all reach
//! the same `span` hosts: a spine of the DCQCN paper's testbed (Fig. 2) has two links
//! into each pod, one per leaf, and either leaf reaches every host of the pod. The
//! load balancer then picks the port within the group, as it picks an uplink. Every
//! other topology has `down_width = 1`, and pays one well-predicted branch for it.

use crate::ids::{HostId, PortId};
use serde::Deserialize;

/// How a switch picks among its equal-cost uplinks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadBalancing {
    /// Hash the packet's entropy (its flow's 5-tuple hash, or a sender's path id) with
    /// a per-switch seed, as a real ECMP switch hashes headers.
    #[default]
    Ecmp,
    /// Use the sender's path id directly: each tier takes one digit of it, so path ids
    /// 0..P map one-to-one onto the P distinct paths (NDP/EQDS source spraying): the
    /// up-paths and, where a top-tier switch has several equal-cost ports down, its
    /// choice among them.
    Spray,
}

#[derive(Clone, Debug)]
pub struct Switch {
    /// First down port; down ports are contiguous.
    pub first_down: PortId,
    pub n_down: u32,
    /// Equal-cost down ports per group: ports `first_down + g * down_width ..` all
    /// reach the `span` hosts of group `g`. 1 but for the spines of `clos3`.
    pub down_width: u32,
    /// First up port; up ports are contiguous.
    pub first_up: PortId,
    pub n_up: u32,
    /// Hosts reachable downwards: `lo..hi`.
    pub lo: HostId,
    pub hi: HostId,
    /// Hosts behind each down port (each group of `down_width` ports).
    pub span: u32,
    /// Spraying: this tier uses digit `(path / path_divisor) % n_up` of the path id,
    /// or `(path / path_divisor) % down_width` going down. Only a switch without
    /// uplinks may have `down_width > 1` (the builder checks), so a switch uses its
    /// digit for one choice only: the tiers below take the lower digits going up, the
    /// top tier the highest going down, and `Network::path_count` multiplies them
    /// all, so path ids `0..path_count` still name distinct paths between the
    /// farthest hosts.
    pub path_divisor: u32,
    /// Per-switch ECMP hash seed, drawn from the run's generator.
    pub salt: u32,
}

/// A 32-bit avalanche mixer (the finaliser of MurmurHash3): cheap, and every input
/// bit affects every output bit, so per-switch salts give independent choices.
#[inline]
pub fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x85eb_ca6b);
    x ^= x >> 13;
    x = x.wrapping_mul(0xc2b2_ae35);
    x ^ (x >> 16)
}

impl Switch {
    /// The output port for a packet to `dst` with load-balancing input `entropy`.
    #[inline]
    pub fn route(&self, dst: HostId, entropy: u32, lb: LoadBalancing) -> PortId {
        if dst >= self.lo && dst < self.hi {
            let group = (dst - self.lo) / self.span;
            if self.down_width == 1 {
                return self.first_down + group;
            }
            return self.route_down_wide(group, entropy, lb);
        }
        debug_assert!(self.n_up > 0, "top-tier switch asked to route upwards");
        self.first_up + self.choose(entropy, self.n_up, lb)
    }

    /// A port of down group `group` when it has several. Kept out of line so that
    /// `route`, which every switch hop calls, stays small enough to inline.
    #[inline(never)]
    fn route_down_wide(&self, group: u32, entropy: u32, lb: LoadBalancing) -> PortId {
        self.first_down + group * self.down_width + self.choose(entropy, self.down_width, lb)
    }

    /// One of `n` equal-cost ports for load-balancing input `entropy`.
    #[inline]
    fn choose(&self, entropy: u32, n: u32, lb: LoadBalancing) -> u32 {
        match lb {
            LoadBalancing::Ecmp => {
                // Multiply-shift maps the hash onto 0..n without a division.
                ((mix32(entropy ^ self.salt) as u64 * n as u64) >> 32) as u32
            }
            LoadBalancing::Spray => (entropy / self.path_divisor) % n,
        }
    }
}
