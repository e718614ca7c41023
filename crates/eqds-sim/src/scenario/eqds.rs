//! `[eqds]`: the edge-queued datagram service that hosts run under their transports.

use crate::units::value::{Bytes, Duration};
use serde::Deserialize;

/// Most sending EQIFs a host may have: receivers tell them apart by their sender id,
/// kept in the top 8 bits of a 32-bit peer id above the host number.
pub const MAX_EQIFS: usize = 256;

/// Largest reorder queue span per tunnel, in packets: 16 times the largest default
/// (four windows of 1000), and each tunnel allocates its span up front.
pub const MAX_REORDER_WINDOW: u32 = 65_536;

/// How a tunnel spends its first RTT (`eqds_proto::sender::Mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EqdsMode {
    /// Burst one window without credit; needs trimming switches.
    #[default]
    Ndp,
    /// Ask for credit first with a request-to-send; no trimming needed.
    Rts,
}

/// How a receiver shares its link between the senders it pulls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EqdsPolicy {
    /// Round robin: equal shares (the paper's default).
    #[default]
    Fifo,
    /// Shares proportional to per-sender weights.
    Weighted,
    /// Lower class first.
    StrictPriority,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EqdsSpec {
    /// Tunnel everything hosts send (TCP, MPTCP, ...) through EQDS, as the paper's
    /// "TCP over EQDS". Flows with `protocol = "eqds"` (an application writing
    /// straight into EQDS) use it either way.
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub mode: EqdsMode,
    /// Credit window W per tunnel, in MTU-sized packets (default: one BDP of the
    /// longest path's loaded round trip, where data and PULLs each wait behind one
    /// full packet at every hop, rounded up).
    pub window: Option<u32>,
    /// Packets a new or idle tunnel sends before any credit, when its receiver is not
    /// busy (default: the whole window in NDP mode, none in RTS mode).
    pub initial_window: Option<u32>,
    /// Credit a tunnel asks for beyond its backlog while packets are in flight, in
    /// packets, at most what is in flight; 0 asks for the backlog only. Default: the
    /// whole window when EQDS tunnels the transports (`enabled`: TCP's ACK clock turns
    /// every packet in flight into a packet to send), 4 for native EQDS applications
    /// (they queue what they have; the 4 keep a thin stream from sending an RTS each
    /// time its queue empties).
    pub demand_lookahead: Option<u32>,
    /// Send queue per destination, in packets: the TCP-compatible EQIF's drop-tail
    /// buffer (default 100, the paper's).
    #[serde(default = "default_send_queue")]
    pub send_queue: u32,
    /// Hold a transport's new data while its destination's send queue is three
    /// quarters full, and wake it at half (the EQIF's backpressure, as Linux's TCP
    /// small queues; default true). False: TCP writes until the queue drops.
    #[serde(default = "yes")]
    pub backpressure: bool,
    /// Queue a transport's pure ACKs ahead of the data waiting for the same
    /// destination, as a Linux qdisc's sparse-flow priority would (default false:
    /// one FIFO per destination, as the paper's TCP-compatible EQIF).
    #[serde(default)]
    pub acks_first: bool,
    /// ECN-capable packets may be marked CE when they join a send queue already
    /// holding this many packets (the TCP-compatible EQIF's RED; default a quarter
    /// of `send_queue`). Traffic without ECN sees only drops.
    pub ecn_threshold: Option<u32>,
    /// From this many packets on, every ECN-capable packet is marked; between
    /// `ecn_threshold` and this the marking probability rises linearly to
    /// `ecn_max_p` (RED's ramp). Default `ecn_threshold`: a step, as DCTCP wants.
    pub ecn_max_threshold: Option<u32>,
    /// Marking probability at the top of the ramp, in (0, 1] (default 1).
    #[serde(default = "default_ecn_max_p")]
    pub ecn_max_p: f64,
    /// Bytes EQDS adds to every inner packet and the size of its control packets
    /// (default 44: outer IPv4, UDP and the 16-byte EQDS header).
    #[serde(default = "default_overhead")]
    pub overhead: Bytes,
    /// Retransmit timeout of a packet neither ACKed nor NACKed.
    #[serde(default = "default_timeout")]
    pub rto: Duration,
    /// Quiet time after which a tunnel with backlog and no credit sends an RTS.
    #[serde(default = "default_timeout")]
    pub credit_loss_timeout: Duration,
    /// Distinct path ids a tunnel sprays over (default: every equal-cost path).
    pub paths: Option<u32>,
    #[serde(default)]
    pub policy: EqdsPolicy,
    /// In-order packets are ACKed by one cumulative ACK per this many (default 4),
    /// or sooner by the next PULL to their sender, which then is that ACK (Q9's
    /// deferred ACKs). 1 ACKs every packet on its own.
    #[serde(default = "default_ack_coalesce")]
    pub ack_coalesce: u32,
    /// Longest an ACK is deferred (default 10 us).
    #[serde(default = "default_ack_delay")]
    pub ack_delay: Duration,
    /// EQDS hands the NIC a packet only while fewer than this many wait in its
    /// queue (default 2): credit beyond what the uplink can carry waits in the EQIF,
    /// where retransmissions and other tunnels can still go first, not in a FIFO.
    #[serde(default = "default_nic_limit")]
    pub nic_limit: u32,
    /// PULL rate as a fraction of the receiver's link rate (default 1.0).
    #[serde(default = "default_pull_rate")]
    pub pull_rate: f64,
    /// PULL pacing makes room on a receiver's access link for the control packets
    /// arriving on it for the host's own sending (ACKs, NACKs and PULLs of its
    /// tunnels): each delays the next PULL by its time on the link (default true, as
    /// eqdsd's `pace_control`). Without it, a host that receives while it also
    /// sends (TCP's ACKs, above all) has its link overloaded by that control
    /// stream: a few per cent at a 1500-byte MTU, which trimming turns into trims
    /// and a drop-tail network into a queue that grows until it drops.
    #[serde(default = "yes")]
    pub pace_control: bool,
    /// Reorder queue span per tunnel, in packets (default: four times the window).
    pub reorder_window: Option<u32>,
    /// How long a hole may hold the reorder queue back before it is skipped
    /// (default 5 ms). Longer than the retransmit and credit-loss timeouts with room
    /// to spare: a hole skipped before its resend arrives is delivered late, out of
    /// order.
    #[serde(default = "default_reorder_timeout")]
    pub reorder_timeout: Duration,
    /// Workloads (indices into the scenario's workload list) whose flows are legacy
    /// traffic: with `enabled` they still go around EQDS, as traffic to addresses
    /// outside the tunnelled ranges does (the paper's incremental deployment).
    #[serde(default)]
    pub legacy_workloads: Vec<u32>,
    /// Switch priority class of the legacy workloads' packets (default: the
    /// transport's `class`), to keep legacy traffic in a queue of its own as the
    /// paper's testbed does.
    pub legacy_class: Option<u8>,
    /// After a trim or a retransmit timeout on a path, a tunnel sprays around that
    /// path for this long (default 0: off).
    #[serde(default)]
    pub path_avoidance: Duration,
    /// The sending EQIFs of every host and how they share its uplink (default: one
    /// EQIF that every workload writes into). With several, credit that different
    /// receivers grant beyond what the uplink carries is spent by deficit round
    /// robin between the EQIFs by `weight`, and strict priority between `priority`
    /// levels; a receiver with `policy = "weighted"` or `"strict_priority"` pulls
    /// each EQIF's tunnels by the same weight or level.
    #[serde(default)]
    pub eqifs: Vec<EqifSpec>,
    /// Time-based loss detection (RACK-like, default 0: off): a packet in flight
    /// is resent once one sent more than this later has been ACKed, without
    /// waiting for its retransmit timeout.
    #[serde(default)]
    pub loss_reorder_window: Duration,
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
fn default_ecn_max_p() -> f64 {
    1.0
}
fn default_send_queue() -> u32 {
    100
}
fn yes() -> bool {
    true
}
fn default_ack_coalesce() -> u32 {
    4
}
fn default_ack_delay() -> Duration {
    Duration(10 * crate::units::US)
}
fn default_nic_limit() -> u32 {
    2
}
fn default_overhead() -> Bytes {
    Bytes(44)
}
fn default_timeout() -> Duration {
    Duration(crate::units::MS)
}
fn default_reorder_timeout() -> Duration {
    Duration(5 * crate::units::MS)
}
fn default_pull_rate() -> f64 {
    1.0
}

impl Default for EqdsSpec {
    fn default() -> Self {
        toml::from_str("").expect("every EQDS field has a default")
    }
}

impl EqdsSpec {
    /// Checks against the transport's MTU and header, which EQDS packets must fit.
    pub fn validate(&self, mtu: u64, header: u64) -> Result<(), String> {
        if self.overhead.0 == 0 || self.overhead.0 + header >= mtu {
            return Err(format!(
                "overhead: {} B plus the {header} B transport header must leave payload room \
                 in the {mtu} B MTU",
                self.overhead.0
            ));
        }
        if self.window == Some(0) {
            return Err("window: must be at least 1 packet".into());
        }
        // A tunnel numbers its first window inside one 1024-packet epoch block.
        if self.window.is_some_and(|w| w > 1000) {
            return Err("window: at most 1000 packets (one epoch block)".into());
        }
        if let (Some(iw), Some(w)) = (self.initial_window, self.window) {
            if iw > w {
                return Err(format!(
                    "initial_window: at most the window ({w} packets), got {iw}"
                ));
            }
        }
        if self.initial_window.is_some_and(|iw| iw > 1000) {
            return Err("initial_window: at most 1000 packets (one epoch block)".into());
        }
        if let Some(lookahead) = self.demand_lookahead.filter(|&p| p > 1000) {
            return Err(format!(
                "demand_lookahead: at most 1000 packets, got {lookahead}"
            ));
        }
        if self.ack_coalesce == 0 {
            return Err("ack_coalesce: must be at least 1 packet".into());
        }
        if self.ack_coalesce > 1 && self.ack_delay.0 == 0 {
            return Err("ack_delay: must be positive when ACKs are coalesced".into());
        }
        if self.nic_limit == 0 {
            return Err("nic_limit: must be at least 1 packet".into());
        }
        let ecn_min = self.ecn_threshold.unwrap_or(self.send_queue.div_ceil(4));
        if let Some(max) = self.ecn_max_threshold.filter(|&m| m < ecn_min) {
            return Err(format!(
                "ecn_max_threshold: {max} packets is below ecn_threshold ({ecn_min})"
            ));
        }
        if !(self.ecn_max_p >= 1e-6 && self.ecn_max_p <= 1.0) {
            return Err(format!(
                "ecn_max_p: must be within [1e-6, 1] (marking probabilities are counted \
                 in millionths), got {}",
                self.ecn_max_p
            ));
        }
        if self.send_queue == 0 {
            return Err("send_queue: must be at least 1 packet".into());
        }
        for (name, d) in [
            ("rto", self.rto),
            ("credit_loss_timeout", self.credit_loss_timeout),
            ("reorder_timeout", self.reorder_timeout),
        ] {
            if d.0 == 0 {
                return Err(format!("{name}: must be positive"));
            }
        }
        if self
            .paths
            .is_some_and(|p| p == 0 || p > u32::from(u16::MAX))
        {
            return Err("paths: must be from 1 to 65535".into());
        }
        if !(self.pull_rate > 0.0 && self.pull_rate <= 1.0) {
            return Err(format!(
                "pull_rate: must be within (0, 1], got {}",
                self.pull_rate
            ));
        }
        // Every tunnel's reorder queue is a ring of this many slots.
        if self
            .reorder_window
            .is_some_and(|w| w == 0 || w > MAX_REORDER_WINDOW)
        {
            return Err(format!(
                "reorder_window: must be from 1 to {MAX_REORDER_WINDOW} packets"
            ));
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
