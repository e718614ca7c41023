//! What the hardware switch counts (§6's metrics): per egress port, per pipeline,
//! and the time series of each (pipeline, port)'s mode (Figure 7).

use super::feedback::Mode;
use super::trim_path;
use crate::ids::{PortId, SwitchId};
use crate::units::Time;

/// Data packets cut to their header, by where.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrimCounts {
    /// By an ingress meter (or Tofino 2's depth check).
    pub ingress: u64,
    /// Deflected whole and cut after recirculation.
    pub dod: u64,
    /// Mirrored on drop: cut in the traffic manager, the header recirculated.
    pub mirrored: u64,
}

impl TrimCounts {
    /// Counts a trim on `path` (`trim_path`).
    pub fn count(&mut self, path: u32) {
        match path {
            trim_path::INGRESS => self.ingress += 1,
            trim_path::DOD => self.dod += 1,
            _ => self.mirrored += 1,
        }
    }
}

/// Per egress port (indexed by port id).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortHwStats {
    /// Data packets bound for the port, cut to their header.
    pub trims: TrimCounts,
    /// Data packets the traffic manager deflected whole to a DoD port.
    pub deflections: u64,
    /// Notifications that reached a pipeline's state for this port.
    pub notifications: u64,
}

/// Per pipeline (indexed by recirculation port, in port order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipeStats {
    pub switch: SwitchId,
    pub pipe: u32,
    /// Data packets that came in on the pipeline, cut to their header.
    pub trims: TrimCounts,
    pub deflections: u64,
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
