//! `[eqds]`: the edge-queued datagram service that hosts run under their transports.
//!
//! The protocol's keys (`mode`, `window`, `rto`, `policy`, ...) are the ones the
//! daemon's `[eqds]` section has too, with the same names, units and values: they
//! are `eqds_proto`'s [`EqdsTable`], which the scenario loader splits off this table
//! before deserializing (`retag.rs`), and which resolves against the simulator's
//! profile ([`EqdsConfig::simulator`]). The keys here are the simulator's own:
//! which flows EQDS carries, its packets' overhead, the NIC and the EQIFs.

use crate::units::value::Bytes;
use eqds_proto::config::{ConfigError, EqdsConfig, EqdsTable};
use serde::Deserialize;

pub use eqds_proto::host::MAX_EQIFS;

/// The key under which the loader puts the shared keys of `[eqds]`: a name no file
/// can mean, since a file giving it is refused.
pub const SHARED_KEYS: &str = "(shared)";

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EqdsSpec {
    /// Tunnel everything hosts send (TCP, MPTCP, ...) through EQDS, as the paper's
    /// "TCP over EQDS". Flows with `protocol = "eqds"` (an application writing
    /// straight into EQDS) use it either way.
    #[serde(default)]
    pub enabled: bool,
    /// Hold a transport's new data while its destination's send queue is three
    /// quarters full, and wake it at half (the EQIF's backpressure, as Linux's TCP
    /// small queues; default true). False: TCP writes until the queue drops.
    #[serde(default = "yes")]
    pub backpressure: bool,
    /// Bytes EQDS adds to every inner packet and the size of its control packets
    /// (default 44: outer IPv4, UDP and the 16-byte EQDS header).
    #[serde(default = "default_overhead")]
    pub overhead: Bytes,
    /// Distinct path ids a tunnel sprays over (default: every equal-cost path).
    pub paths: Option<u32>,
    /// EQDS hands the NIC a packet only while fewer than this many wait in its
    /// queue (default 2): credit beyond what the uplink can carry waits in the EQIF,
    /// where retransmissions and other tunnels can still go first, not in a FIFO.
    #[serde(default = "default_nic_limit")]
    pub nic_limit: u32,
    /// Workloads (indices into the scenario's workload list) whose flows are legacy
    /// traffic: with `enabled` they still go around EQDS, as traffic to addresses
    /// outside the tunnelled ranges does (the paper's incremental deployment).
    #[serde(default)]
    pub legacy_workloads: Vec<u32>,
    /// Switch priority class of the legacy workloads' packets (default: the
    /// transport's `class`), to keep legacy traffic in a queue of its own as the
    /// paper's testbed does.
    pub legacy_class: Option<u8>,
    /// The sending EQIFs of every host and how they share its uplink (default: one
    /// EQIF that every workload writes into). With several, credit that different
    /// receivers grant beyond what the uplink carries is spent by deficit round
    /// robin between the EQIFs by `weight`, and strict priority between `priority`
    /// levels; a receiver with `policy = "weighted"` or `"strict_priority"` pulls
    /// each EQIF's tunnels by the same weight or level.
    #[serde(default)]
    pub eqifs: Vec<EqifSpec>,
    /// The keys shared with the daemon (see the module documentation).
    #[serde(default, rename = "(shared)")]
    pub shared: EqdsTable,
}

/// One sending EQIF of each host (`[[eqds.eqifs]]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EqifSpec {
    /// Workloads (indices into the scenario's workload list) whose flows write into
    /// this EQIF. Workloads no EQIF names write into the first.
    #[serde(default)]
    pub workloads: Vec<u32>,
    /// Share of the uplink among the EQIFs of its priority level: a DRR quantum of
    /// this many MTUs (default 1).
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// Strict priority level, 0 most urgent (default 0): an EQIF sends only while
    /// no EQIF of a more urgent level has a packet it may send.
    #[serde(default)]
    pub priority: u8,
}

fn default_weight() -> u32 {
    1
}
fn yes() -> bool {
    true
}
fn default_nic_limit() -> u32 {
    2
}
fn default_overhead() -> Bytes {
    Bytes(44)
}

impl Default for EqdsSpec {
    fn default() -> Self {
        toml::from_str("").expect("every EQDS field has a default")
    }
}

impl EqdsSpec {
    /// The protocol's settings: the simulator's profile for a network whose loaded
    /// round trip holds `bdp_packets` (the default window), with this table's keys
    /// applied.
    pub fn config(&self, bdp_packets: u32) -> Result<EqdsConfig, ConfigError> {
        self.shared
            .apply(&EqdsConfig::simulator(bdp_packets, self.enabled))
    }

    /// Whether the file gives the window (otherwise it is one loaded BDP).
    pub fn sets_window(&self) -> bool {
        self.shared.window.is_some()
    }

    /// Checks against the transport's MTU and header, which EQDS packets must fit.
    pub fn validate(&self, mtu: u64, header: u64) -> Result<(), String> {
        // The window that the topology will give is not known yet; any valid one
        // checks the rest.
        self.config(1).map_err(|e| e.to_string())?;
        if self.overhead.0 == 0 || self.overhead.0 + header >= mtu {
            return Err(format!(
                "overhead: {} B plus the {header} B transport header must leave payload room \
                 in the {mtu} B MTU",
                self.overhead.0
            ));
        }
        if self.nic_limit == 0 {
            return Err("nic_limit: must be at least 1 packet".into());
        }
        if self
            .paths
            .is_some_and(|p| p == 0 || p > u32::from(u16::MAX))
        {
            return Err("paths: must be from 1 to 65535".into());
        }
        if self.eqifs.len() > MAX_EQIFS {
            return Err(format!(
                "eqifs: at most {MAX_EQIFS} EQIFs per host, got {}",
                self.eqifs.len()
            ));
        }
        if let Some(i) = self.eqifs.iter().position(|e| e.weight == 0) {
            return Err(format!("eqifs[{i}].weight: must be at least 1"));
        }
        Ok(())
    }
}
