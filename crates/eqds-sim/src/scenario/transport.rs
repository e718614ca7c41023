//! `[transport]`: the protocol flows use and its parameters.

use crate::transport::cc::CcKind;
use crate::transport::tcp::{DelayedAck, TcpConfig};
use crate::units::value::{Bytes, Duration};
use serde::Deserialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// TCP NewReno (RFC 5681 / RFC 6582).
    #[serde(alias = "tcp")]
    Newreno,
    /// TCP Cubic (RFC 9438).
    Cubic,
    /// DCTCP (RFC 8257), with ECN marking expected at the switches.
    Dctcp,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Newreno => "newreno",
            Protocol::Cubic => "cubic",
            Protocol::Dctcp => "dctcp",
        }
    }
}

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
        Ok(())
    }

    /// The TCP parameters for a flow of this transport, optionally with another
    /// protocol (a workload's `protocol` override).
    pub fn tcp_config(&self, protocol: Protocol) -> TcpConfig {
        let cc = match protocol {
            Protocol::Newreno => CcKind::NewReno,
            Protocol::Cubic => CcKind::Cubic,
            Protocol::Dctcp => CcKind::Dctcp,
        };
        TcpConfig {
            cc,
            mss: (self.mtu.0 - self.header.0) as u32,
            header: self.header.0 as u32,
            initial_window: self.initial_window,
            min_rto: self.min_rto.0,
            initial_rto: self.initial_rto.0,
            max_rto: self.max_rto.0,
            delayed_ack: self.delayed_ack.then_some(DelayedAck {
                segments: self.delayed_ack_segments,
                timeout: self.delayed_ack_timeout.0,
            }),
            ecn: self.ecn.unwrap_or(protocol == Protocol::Dctcp),
            dctcp_g: self.dctcp_g,
            dupack_threshold: self.dupack_threshold,
            class: self.class,
        }
    }
}
