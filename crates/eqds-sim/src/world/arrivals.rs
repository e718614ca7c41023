//! The arrival log (`[output] arrivals`): every data packet, whole or trimmed, as it
//! reaches its receiving host, with when it was sent and which path trimmed it. The
//! trimming paper's header-latency CDFs (its Figure 5) and sequence plots (Figure 12)
//! are drawn from it.

use crate::ids::{FlowId, HostId};
use crate::net::packet::{flags, Packet, PacketKind};
use crate::units::Time;

/// One data packet reaching its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    pub time: Time,
    pub host: HostId,
    pub flow: FlowId,
    pub seq: u64,
    /// When its sender sent it.
    pub sent: Time,
    pub size: u32,
    /// Trimmed on its way (then `path` says where: `trimming_hw::trim_path`).
    pub trimmed: bool,
    pub path: u8,
    /// Sent back to its sender by a switch (it arrived at the sender).
    pub returned: bool,
}

/// What the run logs, and the log.
#[derive(Debug, Default)]
pub struct ArrivalLog {
    /// Only trimmed packets.
    pub trimmed_only: bool,
    /// Only these flows (sorted); all if `None`.
    pub flows: Option<Vec<FlowId>>,
    pub rows: Vec<Arrival>,
}

impl ArrivalLog {
    pub fn new(trimmed_only: bool, flows: Option<Vec<FlowId>>) -> Self {
        let flows = flows.map(|mut f| {
            f.sort_unstable();
            f.dedup();
            f
        });
        ArrivalLog {
            trimmed_only,
            flows,
            rows: Vec::new(),
        }
    }

    /// Logs `p` reaching `host` at `now`, if it is data the log is asked for.
    pub fn record(&mut self, now: Time, host: HostId, p: &Packet) {
        if p.kind != PacketKind::Data {
            return;
        }
        let trimmed = p.has(flags::TRIMMED);
        if (self.trimmed_only && !trimmed)
            || self
                .flows
                .as_ref()
                .is_some_and(|f| f.binary_search(&p.flow).is_err())
        {
            return;
        }
        self.rows.push(Arrival {
            time: now,
            host,
            flow: p.flow,
            seq: p.seq,
            sent: p.timestamp,
            size: p.size,
            trimmed,
            // Only trimmed data carries its trim path in `ce_bytes`.
            path: if trimmed {
                p.ce_bytes.min(u32::from(u8::MAX)) as u8
            } else {
                0
            },
            returned: p.has(flags::RETURNED),
        });
    }
}
