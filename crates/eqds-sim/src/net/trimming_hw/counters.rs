//! What the hardware switch counts (§6's metrics): per egress port, per pipeline,
//! and the time series of each (pipeline, port)'s mode (Figure 7).

use super::feedback::Mode;
use crate::ids::{PortId, SwitchId};
use crate::units::Time;

/// Per egress port (indexed by port id).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortHwStats {
    /// Data packets the ingress meters (or Tofino 2's depth check) trimmed.
    pub ingress_trims: u64,
    /// Data packets the traffic manager deflected whole to a DoD port.
    pub deflections: u64,
    /// Deflected packets cut to their header after recirculation.
    pub dod_trims: u64,
    /// Headers mirrored on drop and recirculated.
    pub mod_trims: u64,
    /// Notifications that reached a pipeline's state for this port.
    pub notifications: u64,
}

/// Per pipeline (indexed by recirculation port, in port order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipeStats {
    pub switch: SwitchId,
    pub pipe: u32,
    pub ingress_trims: u64,
    pub deflections: u64,
    pub dod_trims: u64,
    pub mod_trims: u64,
    /// Most packets its recirculation (DoD or MoD) queue held, the one on the wire
    /// included.
    pub recirc_peak_packets: u64,
    /// Notifications its DoD port sent.
    pub notifies_sent: u64,
}

/// One mode transition of one (pipeline, port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModeChange {
    pub time: Time,
    pub switch: SwitchId,
    pub pipe: u32,
    pub port: PortId,
    pub mode: Mode,
}
