//! `[eqds]`: the edge-queued datagram service that hosts run under their transports.
//!
//! The protocol's keys (`mode`, `window`, `rto`, `policy`, ...) are the ones the
//! daemon's `[eqds]` section has too, with the same names, units and values: they
//! are `eqds_proto`'s [`EqdsTable`], which the scenario loader splits off this table
//! before deserializing (`retag.rs`), and which resolves against the simulator's
//! profile ([`EqdsConfig::simulator`]). The keys here are the simulator's own:
//! which flows EQDS carries, its packets' overhead, the NIC and the EQIFs.

use crate::units::value::{Bytes, Duration};
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
    /// What the EQIF is (paper §6): `"tcp"`, the TCP-compatible one (default: a
    /// drop-tail queue per destination, RED/ECN for ECN-capable packets), or
    /// `"rdma"`, the RDMA EQIF: a deeper queue per destination that never marks a
    /// packet but slows the local RDMA engine, by CNPs to its DCQCN or by PAUSE. The
    /// keys below are the RDMA EQIF's.
    #[serde(default)]
    pub kind: EqifKind,
    /// `"cnp"` (BlueField-2, default) or `"pause"` (Stingray).
    pub feedback: Option<FeedbackKind>,
    /// Backlog where marking starts (default 72 kB, Appendix B's EQDS K_low).
    pub k_low: Option<Bytes>,
    /// Backlog where every packet is marked (default 584 kB: Appendix B's K_high,
    /// §8.5's 375 packets).
    pub k_high: Option<Bytes>,
    /// Marking probability just below `k_high` (default 1: the ramp rises from 0 at
    /// K_low to certain at K_high \[choice: the paper gives no P_max\]).
    pub p_max: Option<f64>,
    /// Bytes a destination's queue may hold; a packet beyond is dropped and counted
    /// (default twice `k_high`).
    pub limit: Option<Bytes>,
    /// Least time between two CNPs to one queue pair (default 4 µs: the firmware's
    /// minimum CNP gap, Appendix B's R_d).
    pub cnp_interval: Option<Duration>,
    /// Time from a mark to its CNP reaching the engine's rate limiter, and from a
    /// PAUSE or RESUME to the engine obeying it (default 2 µs \[choice\]: a loop
    /// inside one SmartNIC).
    pub feedback_delay: Option<Duration>,
    /// `feedback = "pause"`: a destination's backlog that pauses the engine
    /// (default `k_high`).
    pub pause_at: Option<Bytes>,
    /// `feedback = "pause"`: the engine resumes when no destination's backlog is
    /// above this (default `k_low`).
    pub resume_at: Option<Bytes>,
}

/// What a sending EQIF is (`[[eqds.eqifs]] kind`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EqifKind {
    #[default]
    Tcp,
    Rdma,
}

/// How an RDMA EQIF slows the RDMA engine (`[[eqds.eqifs]] feedback`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackKind {
    #[default]
    Cnp,
    Pause,
}

/// An RDMA EQIF as resolved from its [`EqifSpec`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RdmaEqif {
    pub queue: eqds_proto::host::EqifQueue,
    pub feedback: eqds_proto::rdma::Feedback,
    /// See [`EqifSpec::feedback_delay`].
    pub delay: crate::units::Time,
}

impl EqifSpec {
    /// The RDMA EQIF this spec describes (`None` for a TCP-compatible one), or what
    /// is wrong with its keys (named relative to the EQIF's table).
    pub fn rdma(&self) -> Result<Option<RdmaEqif>, String> {
        use eqds_proto::rdma::Feedback;
        if self.kind != EqifKind::Rdma {
            let given = [
                ("feedback", self.feedback.is_some()),
                ("k_low", self.k_low.is_some()),
                ("k_high", self.k_high.is_some()),
                ("p_max", self.p_max.is_some()),
                ("limit", self.limit.is_some()),
                ("cnp_interval", self.cnp_interval.is_some()),
                ("feedback_delay", self.feedback_delay.is_some()),
                ("pause_at", self.pause_at.is_some()),
                ("resume_at", self.resume_at.is_some()),
            ];
            if let Some((key, _)) = given.iter().find(|(_, g)| *g) {
                return Err(format!("{key}: only an RDMA EQIF has it (kind = \"rdma\")"));
            }
            return Ok(None);
        }
        let k_low = self.k_low.map_or(72_000, |b| b.0);
        let k_high = self.k_high.map_or(584_000, |b| b.0);
        if k_high == 0 || k_low > k_high {
            return Err(format!(
                "k_low, k_high: need 0 <= k_low <= k_high and k_high > 0, got {k_low} B and \
                 {k_high} B"
            ));
        }
        let p_max = self.p_max.unwrap_or(1.0);
        if !(p_max > 0.0 && p_max <= 1.0) {
            return Err(format!("p_max: must be in (0, 1], got {p_max}"));
        }
        let limit = self.limit.map_or(2 * k_high, |b| b.0);
        if limit == 0 {
            return Err("limit: must be at least 1 byte".into());
        }
        let feedback = match self.feedback.unwrap_or_default() {
            FeedbackKind::Cnp => {
                if self.pause_at.is_some() || self.resume_at.is_some() {
                    return Err("pause_at, resume_at: only with feedback = \"pause\"".into());
                }
                Feedback::Cnp {
                    interval: self.cnp_interval.map_or(4 * crate::units::US, |d| d.0),
                }
            }
            FeedbackKind::Pause => {
                if self.cnp_interval.is_some() {
                    return Err("cnp_interval: only with feedback = \"cnp\"".into());
                }
                let xoff = self.pause_at.map_or(k_high, |b| b.0);
                let xon = self.resume_at.map_or(k_low, |b| b.0);
                if xoff == 0 || xon >= xoff {
                    return Err(format!(
                        "pause_at, resume_at: need resume_at < pause_at, got {xon} B and \
                         {xoff} B"
                    ));
                }
                Feedback::Pause {
                    xoff_bytes: xoff,
                    xon_bytes: xon,
                }
            }
        };
        Ok(Some(RdmaEqif {
            queue: eqds_proto::host::EqifQueue {
                limit_bytes: limit,
                ecn: Some(eqds_proto::sender::Red {
                    min_bytes: k_low,
                    max_bytes: k_high,
                    max_p_ppm: (p_max * f64::from(eqds_proto::sender::ECN_CERTAIN)).round() as u32,
                }),
            },
            feedback,
            delay: self.feedback_delay.map_or(2 * crate::units::US, |d| d.0),
        }))
    }
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
        for (i, e) in self.eqifs.iter().enumerate() {
            e.rdma().map_err(|err| format!("eqifs[{i}].{err}"))?;
        }
        Ok(())
    }
}
