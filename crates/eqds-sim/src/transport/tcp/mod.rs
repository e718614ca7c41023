//! TCP with byte sequence numbers, cumulative ACKs, NewReno or SACK loss recovery and
//! a pluggable congestion controller (NewReno, Cubic, DCTCP).
//!
//! Segments are cut at fixed MSS boundaries from byte 0, so every retransmission
//! covers the same bytes as the original. ACKs echo the timestamp of the segment that
//! triggered them (RFC 7323), which gives an RTT sample on every ACK, retransmissions
//! included, and carry the count of CE-marked bytes (accurate ECN, as DCTCP needs).

mod rate;
mod receiver;
mod rtt;
mod scoreboard;
mod sender;

pub use rate::DeliveryRate;
pub use receiver::TcpReceiver;
pub use rtt::RttEstimator;
pub use sender::TcpSender;

use super::cc::CcKind;
use crate::units::{Time, MS, SEC};

/// Delayed-ACK policy (RFC 1122 §4.2.3.2 / RFC 5681 §4.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DelayedAck {
    /// ACK at least every this many full-sized segments.
    pub segments: u32,
    /// Longest an ACK may wait.
    pub timeout: Time,
}

/// Per-flow TCP parameters, resolved from the scenario's transport table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpConfig {
    pub cc: CcKind,
    /// Payload bytes in a full segment.
    pub mss: u32,
    /// Header bytes on every packet; a pure ACK is exactly this big.
    pub header: u32,
    /// Initial window in segments (RFC 6928: 10).
    pub initial_window: u32,
    /// RTO bounds (RFC 6298 says 1 s minimum; datacenter stacks use far less).
    pub min_rto: Time,
    pub initial_rto: Time,
    pub max_rto: Time,
    pub delayed_ack: Option<DelayedAck>,
    /// Mark data packets ECN-capable.
    pub ecn: bool,
    /// DCTCP's EWMA gain (paper: 1/16).
    pub dctcp_g: f64,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681: 3).
    pub dupack_threshold: u32,
    /// Priority class of this flow's packets.
    pub class: u8,
    /// Recover from loss with SACK, RACK and tail-loss probes (Linux's recovery);
    /// false is NewReno without SACK.
    pub sack: bool,
    /// Undo a retransmission timeout that the first new ACK after it shows spurious
    /// (Eifel detection and response, RFC 3522 / RFC 4015).
    pub undo_spurious_rto: bool,
    /// Cubic leaves slow start early by HyStart (`cc/hystart.rs`).
    pub hystart: bool,
    /// Stop writing while the host's NIC queue holds this many packets (Linux's TCP
    /// small queues); `None` writes whatever the window allows.
    pub nic_limit: Option<u32>,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: CcKind::NewReno,
            mss: 1436,
            header: 64,
            initial_window: 10,
            min_rto: 200 * MS,
            initial_rto: SEC,
            max_rto: 60 * SEC,
            delayed_ack: None,
            ecn: false,
            dctcp_g: 1.0 / 16.0,
            dupack_threshold: 3,
            class: 0,
            sack: false,
            undo_spurious_rto: false,
            hystart: false,
            nic_limit: None,
        }
    }
}
