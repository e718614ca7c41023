//! `[transport]`: the protocol flows use and its parameters, as written; `sim`
//! turns them into each transport's configuration when it builds a run.

use crate::flow::Protocol;
use crate::units::value::{Bytes, Duration, Rate};
use serde::Deserialize;

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
        Ok(())
    }
}
