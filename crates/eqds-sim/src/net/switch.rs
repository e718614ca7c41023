//! Switch forwarding: up/down routing over contiguous host ranges, and load balancing.
//!
//! Every switch in the topologies we build reaches a contiguous range of hosts through
//! its down ports, `span` hosts per port. A packet for a host in that range goes down
//! the port that covers it; any other packet goes up, on an uplink chosen by the load
//! balancer. Forwarding is two comparisons and a division: no tables, no per-pair
//! paths, so a 27,648-host fat tree costs a few bytes per switch.

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
    /// 0..P map one-to-one onto the P distinct up-paths (NDP/EQDS source spraying).
    Spray,
}

#[derive(Clone, Debug)]
pub struct Switch {
    /// First down port; down ports are contiguous.
    pub first_down: PortId,
    pub n_down: u32,
    /// First up port; up ports are contiguous.
    pub first_up: PortId,
    pub n_up: u32,
    /// Hosts reachable downwards: `lo..hi`.
    pub lo: HostId,
    pub hi: HostId,
    /// Hosts behind each down port.
    pub span: u32,
    /// Spraying: this tier uses digit `(path / path_divisor) % n_up` of the path id.
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
            return self.first_down + (dst - self.lo) / self.span;
        }
        debug_assert!(self.n_up > 0, "top-tier switch asked to route upwards");
        let choice = match lb {
            LoadBalancing::Ecmp => {
                // Multiply-shift maps the hash onto 0..n_up without a division.
                ((mix32(entropy ^ self.salt) as u64 * self.n_up as u64) >> 32) as u32
            }
            LoadBalancing::Spray => (entropy / self.path_divisor) % self.n_up,
        };
        self.first_up + choice
    }
}
