//! `[transport]`: the protocol flows use and its parameters, as written; `sim`
//! turns them into each transport's configuration when it builds a run.

use crate::flow::Protocol;
use crate::units::value::{Bytes, Duration, Rate};
use crate::units::{MS, NS};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// Transport parameters. Defaults follow Linux and the RFCs named on each field.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransportSpec {
    #[serde(default = "default_protocol")]
    pub protocol: Protocol,
    /// Largest packet on the wire, headers included (default 1500 B).
    #[serde(default = "default_mtu")]
    pub mtu: Bytes,
    /// Header bytes per packet; an ACK is this big (default 64 B, as htsim).
    #[serde(default = "default_header")]
    pub header: Bytes,
    /// Initial window in packets (RFC 6928: 10).
    #[serde(default = "default_iw")]
    pub initial_window: u32,
    /// Minimum RTO (Linux: 200 ms).
    #[serde(default = "default_min_rto")]
    pub min_rto: Duration,
    /// RTO before the first RTT sample (RFC 6298: 1 s).
    #[serde(default = "default_initial_rto")]
    pub initial_rto: Duration,
    /// Largest RTO after back-off (RFC 6298: at least 60 s).
    #[serde(default = "default_max_rto")]
    pub max_rto: Duration,
    /// Delay ACKs: one ACK per `delayed_ack_segments` segments or per timeout.
    #[serde(default)]
    pub delayed_ack: bool,
    #[serde(default = "default_delack_segments")]
    pub delayed_ack_segments: u32,
    /// Longest an ACK is held (Linux's minimum delayed-ACK timer is 40 ms; datacenter
    /// stacks use far less, so say what you want).
    #[serde(default = "default_delack_timeout")]
    pub delayed_ack_timeout: Duration,
    /// Send data ECN-capable. Defaults to true for DCTCP, false otherwise.
    pub ecn: Option<bool>,
    /// DCTCP's g (paper: 1/16).
    #[serde(default = "default_g")]
    pub dctcp_g: f64,
    /// Duplicate ACKs before fast retransmit (RFC 5681: 3).
    #[serde(default = "default_dupacks")]
    pub dupack_threshold: u32,
    /// Priority class of the flows' packets (strict-priority queues serve 0 first).
    #[serde(default)]
    pub class: u8,
    /// TCP loss recovery with SACK, RACK and tail-loss probes, as Linux recovers;
    /// false (the default, as htsim) is NewReno without SACK.
    #[serde(default)]
    pub sack: bool,
    /// Eifel: tell a spurious retransmission timeout from the timestamp the first new
    /// ACK after it echoes (RFC 3522) and undo what the timeout did (RFC 4015), as
    /// Linux does with TCP timestamps. Default: on with `sack`, off without (htsim).
    pub undo_spurious_rto: Option<bool>,
    /// Cubic: HyStart's early exit from slow start, on in Linux's Cubic by default
    /// (`cc/hystart.rs`). Default: off (as before HyStart was modelled).
    #[serde(default)]
    pub hystart: bool,
    /// TCP small queues: a TCP sender writes nothing while its host's NIC queue holds
    /// this many packets (default: no limit).
    pub nic_limit: Option<u32>,
    /// NDP parameters (used by `protocol = "ndp"` flows).
    #[serde(default)]
    pub ndp: NdpSpec,
    /// MPTCP parameters (used by `protocol = "mptcp"` flows).
    #[serde(default)]
    pub mptcp: MptcpSpec,
    /// UDP parameters (used by `protocol = "udp"` flows).
    #[serde(default)]
    pub udp: UdpSpec,
    /// RoCEv2 parameters (used by `protocol = "roce"` flows).
    #[serde(default)]
    pub roce: RoceSpec,
    /// Packet-pair parameters (used by `protocol = "packet_pair"` flows).
    #[serde(default)]
    pub packet_pair: PacketPairSpec,
}

/// `[transport.packet_pair]`: the AFQ paper's end host (`transport::packet_pair`).
/// Every default is the paper's (§5, §6.2) or, where it is silent, the AFQ digest's
/// (`spec/afq.md` §4 question 10); `docs/afq.md` gives the reasons.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PacketPairSpec {
    /// Smallest retransmission timeout (§6.2: 200 µs for every scheme).
    #[serde(default = "default_pp_min_rto")]
    pub min_rto: Duration,
    /// Timeout before the first round-trip sample (default 1 ms: five minimum RTOs;
    /// the paper does not say).
    #[serde(default = "default_pp_initial_rto")]
    pub initial_rto: Duration,
    /// Time constant of the bandwidth EWMA in base round trips (§5: "in the last
    /// RTT"; default 1).
    #[serde(default = "default_one_f64")]
    pub ewma_rtts: f64,
    /// α's gain (default 1/16, DCTCP's; the paper does not say).
    #[serde(default = "default_g")]
    pub alpha_gain: f64,
    /// In-flight cap in bandwidth-delay products of the estimate (§5: 1.5).
    #[serde(default = "default_inflight_bdp")]
    pub inflight_bdp: f64,
    /// Make up for rate changes by skipping or injecting (§5; default true).
    #[serde(default = "yes")]
    pub skip_inject: bool,
    /// Send data ECN-capable and slow down by α/2 (§5; default true).
    #[serde(default = "yes")]
    pub ecn: bool,
    /// The switches' bytes per round: above two packets' payload the first pair is
    /// spaced by `bytes_per_round − mss` at line rate (§5; default: none, the
    /// paper's BpR of one MSS).
    pub bytes_per_round: Option<Bytes>,
}

impl Default for PacketPairSpec {
    fn default() -> Self {
        toml::from_str("").expect("every packet-pair field has a default")
    }
}

fn default_pp_min_rto() -> Duration {
    Duration(200 * crate::units::US)
}
fn default_pp_initial_rto() -> Duration {
    Duration(MS)
}
fn default_one_f64() -> f64 {
    1.0
}
fn default_inflight_bdp() -> f64 {
    1.5
}

/// `[transport.udp]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpSpec {
    /// Sending rate of every UDP flow (default: its host's link rate).
    pub rate: Option<Rate>,
}

/// `[transport.ndp]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NdpSpec {
    /// Packets sent without waiting for PULLs in the first RTT, and so the window the
    /// PULLs keep (default: one BDP of the longest path's loaded round trip, where
    /// data and PULLs each wait behind one full packet at every hop, rounded up).
    pub initial_window: Option<u32>,
    /// Safety retransmission timeout for packets neither ACKed nor NACKed.
    #[serde(default = "default_ndp_rto")]
    pub rto: Duration,
    /// Distinct path ids a sender sprays over (default: every equal-cost path of the
    /// topology).
    pub paths: Option<u32>,
    /// Rate at which a host's pull queue releases PULLs, as a fraction of its link
    /// rate (default 1.0: one PULL per MTU serialisation time).
    #[serde(default = "default_pull_rate")]
    pub pull_rate: f64,
}

impl Default for NdpSpec {
    fn default() -> Self {
        toml::from_str("").expect("every NDP field has a default")
    }
}

fn default_ndp_rto() -> Duration {
    Duration(crate::units::MS)
}
fn default_pull_rate() -> f64 {
    1.0
}

/// `[transport.roce]`: the RoCEv2 reliable connection and its congestion control.
/// The transport itself is `transport::roce`; `docs/scenarios.md` says why each
/// default is what it is.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoceSpec {
    /// RDMA WRITE (its first packet per message carries a 16 B RETH) or SEND.
    #[serde(default)]
    pub opcode: RoceOpcode,
    /// Bytes per message (default: the whole flow is one message).
    pub message_size: Option<Bytes>,
    /// One ACK per this many data packets, and always on a message's last packet.
    #[serde(default = "one")]
    pub ack_every: u32,
    /// What a NAK or a timeout resends from.
    #[serde(default)]
    pub recovery: RoceRecovery,
    /// At most one NAK per flow per this time for the same expected PSN.
    #[serde(default = "default_nak_interval")]
    pub nak_interval: Duration,
    /// First retransmission timeout after the last ACK progress.
    #[serde(default = "default_roce_rto")]
    pub rto: Duration,
    /// Cap of the timeout's doubling.
    #[serde(default = "default_roce_rto_max")]
    pub rto_max: Duration,
    /// No data onto the host's NIC while its queue holds this many packets.
    #[serde(default = "one")]
    pub nic_limit: u32,
    /// Priority class of ACKs, NAKs and CNPs (data uses `[transport] class`).
    #[serde(default)]
    pub ack_class: u8,
    /// DCQCN: `true` (the default, the `paper` profile), `false`, or a table.
    #[serde(default, deserialize_with = "dcqcn_setting")]
    pub dcqcn: DcqcnSpec,
    /// Blitz's DASR: `false` (the default), `true`, or a table. DASR and DCQCN are
    /// switched on and off independently: both on is the Blitz sender.
    #[serde(default, deserialize_with = "dasr_setting")]
    pub dasr: DasrSpec,
}

/// `[transport.roce.dasr]`: receivers count their senders and apportion their link
/// (`transport::roce::dasr`; `docs/blitz.md` gives the reasons).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DasrSpec {
    /// On unless a table says `enabled = false`; `[transport.roce]` without `dasr`
    /// has it off.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// A sender host no packet has come from for this long is no longer counted
    /// (default 1 ms, the Blitz digest's choice).
    #[serde(default = "default_dasr_timeout")]
    pub timeout: Duration,
}

impl Default for DasrSpec {
    fn default() -> Self {
        DasrSpec {
            enabled: false,
            timeout: default_dasr_timeout(),
        }
    }
}

fn default_dasr_timeout() -> Duration {
    Duration(MS)
}

/// `dasr = true | false`, or a table (DASR on unless it says `enabled = false`).
fn dasr_setting<'de, D: Deserializer<'de>>(d: D) -> Result<DasrSpec, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = DasrSpec;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "true, false or a table of DASR parameters")
        }
        fn visit_bool<E: de::Error>(self, enabled: bool) -> Result<DasrSpec, E> {
            Ok(DasrSpec {
                enabled,
                ..DasrSpec::default()
            })
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<DasrSpec, A::Error> {
            DasrSpec::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V)
}

impl Default for RoceSpec {
    fn default() -> Self {
        toml::from_str("").expect("every RoCE field has a default")
    }
}

/// The RDMA operation a RoCE flow's messages use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoceOpcode {
    #[default]
    Write,
    Send,
}

/// RoCE loss recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoceRecovery {
    /// Resend from the first packet the receiver lacks.
    #[default]
    GoBackN,
    /// Resend the message holding that packet from its first packet.
    #[serde(rename = "go_back_0")]
    GoBack0,
}

/// `[transport.roce.dcqcn]`: a named profile and overrides of its fields. Values are
/// checked against each sender's line rate when the run is built
/// (`DcqcnParams::validate`), since the profiles scale with it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DcqcnSpec {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub profile: DcqcnProfile,
    pub g: Option<f64>,
    pub rai: Option<Rate>,
    pub rhai: Option<Rate>,
    pub alpha_timer: Option<Duration>,
    pub increase_timer: Option<Duration>,
    /// 0 turns the byte counter off.
    pub byte_counter: Option<Bytes>,
    pub fast_recovery_steps: Option<u32>,
    pub min_rate: Option<Rate>,
    pub cnp_interval: Option<Duration>,
    pub min_cut_interval: Option<Duration>,
    pub alpha_first: Option<bool>,
    pub clamp_target: Option<bool>,
}

impl Default for DcqcnSpec {
    fn default() -> Self {
        toml::from_str("").expect("every DCQCN field has a default")
    }
}

/// The DCQCN parameter profiles by the names scenarios give them (the transport's
/// `dcqcn::Profile` documents each one's source).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DcqcnProfile {
    #[default]
    Paper,
    MlxFw,
    HpccNs3,
    Htsim,
}

/// `dcqcn = true | false`, or a table (DCQCN on unless it says `enabled = false`).
/// A visitor rather than an untagged enum, so that a mistake inside the table keeps
/// its own message and key path.
fn dcqcn_setting<'de, D: Deserializer<'de>>(d: D) -> Result<DcqcnSpec, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = DcqcnSpec;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "true, false or a table of DCQCN parameters")
        }
        fn visit_bool<E: de::Error>(self, enabled: bool) -> Result<DcqcnSpec, E> {
            Ok(DcqcnSpec {
                enabled,
                ..DcqcnSpec::default()
            })
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<DcqcnSpec, A::Error> {
            DcqcnSpec::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V)
}

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
/// The DCQCN authors' ns-3 model and HPCC's: at most one NAK per 500 µs for the same
/// expected PSN (spec §1.6).
fn default_nak_interval() -> Duration {
    Duration(500 * crate::units::US)
}
/// ConnectX's local ACK timeout is 4.096 µs × 2^`timeout`; exponent 8 (1.05 ms) to
/// start with, as the firmware's adaptive retransmission starts low and doubles.
fn default_roce_rto() -> Duration {
    Duration((4096 * NS) << 8)
}
/// Exponent 14 (67.1 ms), perftest's and most RDMA applications' QP timeout: the cap.
fn default_roce_rto_max() -> Duration {
    Duration((4096 * NS) << 14)
}

/// The largest RoCE timeout we take: a second is already far beyond any NIC default.
const ROCE_MAX_RTO: crate::units::Time = 10_000 * MS;

/// `[transport.mptcp]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MptcpSpec {
    /// Subflows per connection, each on its own ECMP hash (default 8).
    #[serde(default = "default_subflows")]
    pub subflows: u32,
    /// Congestion control of the subflows: `"lia"` (linked increases, RFC 6356,
    /// the default) or `"uncoupled"` (each subflow an independent NewReno flow).
    #[serde(default)]
    pub coupling: Coupling,
    /// The connection hands out no data while its host's NIC queue holds this many
    /// packets (Linux's TCP small queues keep a host from dropping its own packets).
    #[serde(default = "default_nic_limit")]
    pub nic_limit: u32,
}

fn default_nic_limit() -> u32 {
    4
}

/// How MPTCP's subflows share congestion control.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Coupling {
    #[default]
    Lia,
    Uncoupled,
}

impl Default for MptcpSpec {
    fn default() -> Self {
        MptcpSpec {
            subflows: default_subflows(),
            coupling: Coupling::Lia,
            nic_limit: default_nic_limit(),
        }
    }
}

fn default_subflows() -> u32 {
    8
}

fn default_protocol() -> Protocol {
    Protocol::Newreno
}
fn default_mtu() -> Bytes {
    Bytes(1500)
}
fn default_header() -> Bytes {
    Bytes(64)
}
fn default_iw() -> u32 {
    10
}
fn default_min_rto() -> Duration {
    Duration(200 * crate::units::MS)
}
fn default_initial_rto() -> Duration {
    Duration(crate::units::SEC)
}
fn default_max_rto() -> Duration {
    Duration(60 * crate::units::SEC)
}
fn default_delack_segments() -> u32 {
    2
}
fn default_delack_timeout() -> Duration {
    Duration(40 * crate::units::MS)
}
fn default_g() -> f64 {
    1.0 / 16.0
}
fn default_dupacks() -> u32 {
    3
}

impl Default for TransportSpec {
    fn default() -> Self {
        toml::from_str("").expect("every transport field has a default")
    }
}

impl TransportSpec {
    pub fn validate(&self) -> Result<(), String> {
        if self.header.0 == 0 {
            return Err("header: must be at least 1 byte".into());
        }
        if self.mtu.0 <= self.header.0 {
            return Err(format!(
                "mtu: {} B leaves no room for payload after the {} B header",
                self.mtu.0, self.header.0
            ));
        }
        if self.mtu.0 > 1 << 20 {
            return Err(format!(
                "mtu: {} B is larger than the 1 MiB we support",
                self.mtu.0
            ));
        }
        if self.initial_window == 0 {
            return Err("initial_window: must be at least 1 packet".into());
        }
        if self.min_rto.0 == 0 || self.min_rto.0 > self.max_rto.0 {
            return Err("min_rto: must be positive and at most max_rto".into());
        }
        if self.initial_rto.0 == 0 {
            return Err("initial_rto: must be positive".into());
        }
        if self.delayed_ack && (self.delayed_ack_segments == 0 || self.delayed_ack_timeout.0 == 0) {
            return Err("delayed_ack_segments and delayed_ack_timeout: must be positive".into());
        }
        if !(self.dctcp_g > 0.0 && self.dctcp_g <= 1.0) {
            return Err(format!(
                "dctcp_g: must be within (0, 1], got {}",
                self.dctcp_g
            ));
        }
        if self.dupack_threshold == 0 {
            return Err("dupack_threshold: must be at least 1".into());
        }
        let ndp = &self.ndp;
        if ndp.initial_window == Some(0) {
            return Err("ndp.initial_window: must be at least 1 packet".into());
        }
        if ndp.rto.0 == 0 {
            return Err("ndp.rto: must be positive".into());
        }
        // A sender keeps state per path id.
        if ndp.paths.is_some_and(|p| p == 0 || p > u32::from(u16::MAX)) {
            return Err("ndp.paths: must be from 1 to 65535".into());
        }
        // A PULL per MTU time divided by the rate: below a thousandth, one PULL
        // every thousand packet times, the spacing leaves the simulated time
        // (and means the receiver pulls nothing).
        if !(ndp.pull_rate >= 0.001 && ndp.pull_rate <= 1.0) {
            return Err(format!(
                "ndp.pull_rate: must be within [0.001, 1], got {}",
                ndp.pull_rate
            ));
        }
        if self.udp.rate.is_some_and(|r| r.0 == 0) {
            return Err("udp.rate: must be positive".into());
        }
        if self.nic_limit == Some(0) {
            return Err("nic_limit: must be at least 1 packet".into());
        }
        if self.mptcp.nic_limit == 0 {
            return Err("mptcp.nic_limit: must be at least 1 packet".into());
        }
        if !(1..=64).contains(&self.mptcp.subflows) {
            return Err(format!(
                "mptcp.subflows: must be from 1 to 64, got {}",
                self.mptcp.subflows
            ));
        }
        self.validate_roce().map_err(|e| format!("roce.{e}"))?;
        self.validate_packet_pair()
            .map_err(|e| format!("packet_pair.{e}"))
    }

    fn validate_packet_pair(&self) -> Result<(), String> {
        let p = &self.packet_pair;
        if p.min_rto.0 == 0 || p.min_rto.0 > self.max_rto.0 {
            return Err("min_rto: must be positive and at most transport.max_rto".into());
        }
        if p.initial_rto.0 == 0 || p.initial_rto.0 > self.max_rto.0 {
            return Err("initial_rto: must be positive and at most transport.max_rto".into());
        }
        // Beyond 1000 round trips the estimate would follow nothing a run sees.
        if !(p.ewma_rtts > 0.0 && p.ewma_rtts <= 1000.0) {
            return Err(format!(
                "ewma_rtts: must be within (0, 1000], got {}",
                p.ewma_rtts
            ));
        }
        if !(p.alpha_gain > 0.0 && p.alpha_gain <= 1.0) {
            return Err(format!(
                "alpha_gain: must be within (0, 1], got {}",
                p.alpha_gain
            ));
        }
        // The cap never falls below one pair, so small values are safe; a cap of
        // more than 100 BDPs is no cap.
        if !(p.inflight_bdp > 0.0 && p.inflight_bdp <= 100.0) {
            return Err(format!(
                "inflight_bdp: must be within (0, 100], got {}",
                p.inflight_bdp
            ));
        }
        if p.bytes_per_round.is_some_and(|b| b.0 == 0 || b.0 > 1 << 30) {
            return Err("bytes_per_round: must be from 1 B to 1 GiB".into());
        }
        Ok(())
    }

    fn validate_roce(&self) -> Result<(), String> {
        let r = &self.roce;
        if r.message_size.is_some_and(|m| m.0 == 0) {
            return Err("message_size: must be at least 1 byte".into());
        }
        if r.ack_every == 0 {
            return Err("ack_every: must be at least 1 packet".into());
        }
        if r.nak_interval.0 == 0 {
            return Err("nak_interval: must be positive".into());
        }
        if r.rto.0 == 0 || r.rto.0 > r.rto_max.0 {
            return Err(format!(
                "rto: must be positive and at most rto_max ({})",
                crate::units::DisplayTime(r.rto_max.0)
            ));
        }
        if r.rto_max.0 > ROCE_MAX_RTO {
            return Err("rto_max: must be at most 10 s".into());
        }
        if r.nic_limit == 0 {
            return Err("nic_limit: must be at least 1 packet".into());
        }
        if r.dasr.timeout.0 == 0 || r.dasr.timeout.0 > ROCE_MAX_RTO {
            return Err(format!(
                "dasr.timeout: must be positive and at most 10 s, got {}",
                crate::units::DisplayTime(r.dasr.timeout.0)
            ));
        }
        let mss = self.mtu.0 - self.header.0;
        if r.opcode == RoceOpcode::Write && mss <= ROCE_RETH_BYTES {
            return Err(format!(
                "opcode: a WRITE's first packet carries a {ROCE_RETH_BYTES} B RETH, which \
                 leaves no payload in mtu - header = {mss} B"
            ));
        }
        Ok(())
    }
}

/// Bytes of the RDMA extended transport header (IB spec §9.3.3.2) a WRITE's first
/// packet carries: virtual address, remote key, length.
pub const ROCE_RETH_BYTES: u64 = 16;
