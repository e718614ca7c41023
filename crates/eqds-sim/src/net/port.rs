//! An output port: a queue discipline in front of a transmitter on one link direction.
//! The discipline itself lives in `Network::queues` (see there why) and is handed to
//! the port's methods.
//!
//! Serialisation is exact: a packet of `b` bytes occupies the transmitter for
//! `b * 8 / rate` and reaches the far end `latency` after its last bit leaves. A
//! `TxDone` event is scheduled only when a packet is waiting behind the one on the
//! wire, so ports that never queue cost one event per packet (its arrival).

use super::queue::{DynQueue, PortStats, QueueCtx, Verdict};
use crate::engine::{Event, EventQueue, SimRng};
use crate::ids::{Node, PacketId, PortId};
use crate::net::packet::PacketSlab;
use crate::units::{serialisation_time, Time};

/// Two cache lines, laid out in order (`repr(C)`) so that the first holds all that
/// a packet through the port reads and writes unless it is refused, trimmed or
/// marked: the run loop loads only that line ahead. The second holds the other
/// counters, PFC's record and what only setup and reports read.
#[repr(C, align(64))]
pub struct Port {
    /// Who receives what this port transmits.
    pub peer: Node,
    /// Transmit rate in bits per second.
    pub rate_bps: u64,
    /// Propagation latency of the link plus the forwarding latency of the switch at
    /// the far end (an output-queued switch adds it before the output queue).
    pub latency: Time,
    /// When the transmitter finishes the packet now on the wire.
    pub busy_until: Time,
    /// A `TxDone` event for this port is in the event queue.
    pub tx_done_pending: bool,
    /// The discipline lets an idle port skip it (see `QueueDiscipline::bypass_when_idle`).
    pub bypass_idle: bool,
    /// The discipline asked to see each packet as it leaves (marking at dequeue).
    pub notify_departures: bool,
    /// PFC: priorities (bit `p` for priority `p`) the far end has paused; the port
    /// starts no packet of them.
    pub paused: u8,
    /// PFC bookkeeping this port does as it transmits ([`pfc_flags`]).
    pub pfc_flags: u8,
    /// Counters. `PortStats` puts first the three that every packet through the
    /// port may change, so that they end the first line.
    pub stats: PortStats,
    /// Who transmits on this port.
    pub owner: Node,
    /// The packet this port last started, kept for PFC's accounting when
    /// [`pfc_flags::RECORD_TX`] is set (`u32::MAX`: taken).
    pub last_tx: PacketId,
    /// Topology tier of this link direction (index into `Network::tier_names`).
    pub tier: u8,
}

const _: () = assert!(std::mem::size_of::<Port>() == 128);
const _: () = assert!(std::mem::offset_of!(Port, stats) + 24 <= 64);

/// What a port does for PFC as it transmits.
pub mod pfc_flags {
    /// The far end is a switch that charges arrivals to their ingress: arrivals
    /// carry this port (`Event::ArriveFrom`), the far end's ingress is its reverse.
    pub const ARRIVE_FROM: u8 = 1 << 0;
    /// The port is a switch's: remember the packet started, so that PFC can take it
    /// off its ingress counter and IOFD off its flow's count (`Port::take_last_tx`).
    pub const RECORD_TX: u8 = 1 << 1;
}

/// Borrowed pieces of the world a port needs to move a packet.
pub struct PortCtx<'a> {
    pub now: Time,
    pub events: &'a mut EventQueue,
    pub pkts: &'a mut PacketSlab,
    pub rng: &'a mut SimRng,
}

/// A packet a port hands back to its caller instead of queueing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handback {
    /// A header to send back to its source (counted as a return here).
    Returned(PacketId),
    /// A whole data packet the traffic manager could not hold, for the hardware
    /// switch model to deflect or mirror (counted there).
    Deflected(PacketId),
}

impl Port {
    /// Offers a packet to this port. A refused packet is freed and counted; a packet
    /// the discipline sends back to its source, or deflects, is handed back to the
    /// caller.
    #[must_use]
    pub fn enqueue(
        &mut self,
        queue: &mut DynQueue,
        id: PortId,
        pkt: PacketId,
        ctx: &mut PortCtx,
    ) -> Option<Handback> {
        // No TxDone pending means nothing is waiting: with an idle transmitter the
        // packet goes straight onto the wire, as the discipline would have sent it.
        if self.bypass_idle
            && self.paused == 0
            && !self.tx_done_pending
            && self.busy_until <= ctx.now
        {
            let size = ctx.pkts.get(pkt).size;
            self.transmit(id, pkt, size, ctx);
            return None;
        }
        let mut qctx = QueueCtx {
            pkts: ctx.pkts,
            rng: ctx.rng,
            stats: &mut self.stats,
            now: ctx.now,
            rate_bps: self.rate_bps,
        };
        match queue.enqueue(pkt, &mut qctx) {
            Verdict::Dropped => {
                self.stats.drops += 1;
                self.stats.dropped_bytes += ctx.pkts.get(pkt).size as u64;
                ctx.pkts.free(pkt);
                return None;
            }
            Verdict::Returned => {
                self.stats.returns += 1;
                return Some(Handback::Returned(pkt));
            }
            Verdict::Deflected => return Some(Handback::Deflected(pkt)),
            Verdict::Queued => {}
        }
        if self.tx_done_pending {
            return None;
        }
        if self.busy_until <= ctx.now {
            self.start_next(queue, id, ctx);
        } else {
            self.stats.max_backlog_bytes = self.stats.max_backlog_bytes.max(queue.backlog_bytes());
            ctx.events.push(self.busy_until, Event::TxDone { port: id });
            self.tx_done_pending = true;
        }
        None
    }

    /// Starts loading the port's first line: all that a packet through it needs
    /// unless it is refused, trimmed or marked (see [`Port`]).
    #[inline]
    pub fn prefetch(&self) {
        crate::engine::prefetch(self as *const Port as *const u8);
    }

    /// The transmitter became free and a packet may be waiting.
    pub fn on_tx_done(&mut self, queue: &mut DynQueue, id: PortId, ctx: &mut PortCtx) {
        self.tx_done_pending = false;
        self.start_next(queue, id, ctx);
    }

    /// PFC released a priority: if the transmitter is idle and nothing is scheduled,
    /// the next packet goes (the discipline picks among what may go now).
    pub fn kick(&mut self, queue: &mut DynQueue, id: PortId, ctx: &mut PortCtx) {
        if self.tx_done_pending || queue.backlog_packets() == 0 {
            return;
        }
        if self.busy_until <= ctx.now {
            self.start_next(queue, id, ctx);
        } else {
            ctx.events.push(self.busy_until, Event::TxDone { port: id });
            self.tx_done_pending = true;
        }
    }

    /// The packet started since the last call, if PFC asked to record it.
    #[inline]
    pub fn take_last_tx(&mut self) -> Option<PacketId> {
        let p = std::mem::replace(&mut self.last_tx, PacketId::MAX);
        (p != PacketId::MAX).then_some(p)
    }

    /// Puts the next waiting packet on the wire, scheduling its arrival and, if more
    /// are waiting, the end of its serialisation. Priorities PFC paused wait.
    fn start_next(&mut self, queue: &mut DynQueue, id: PortId, ctx: &mut PortCtx) {
        let next = if self.paused == 0 {
            queue.dequeue_at(ctx.now)
        } else {
            queue.dequeue_unpaused(self.paused)
        };
        if let Some((pkt, size)) = next {
            if self.notify_departures {
                let mut qctx = QueueCtx {
                    pkts: ctx.pkts,
                    rng: ctx.rng,
                    stats: &mut self.stats,
                    now: ctx.now,
                    rate_bps: self.rate_bps,
                };
                queue.departed(pkt, &mut qctx);
            }
            self.transmit(id, pkt, size, ctx);
            if queue.backlog_packets() > 0 {
                self.stats.max_backlog_bytes =
                    self.stats.max_backlog_bytes.max(queue.backlog_bytes());
                ctx.events.push(self.busy_until, Event::TxDone { port: id });
                self.tx_done_pending = true;
            }
        }
    }

    /// Starts serialising `pkt` now. The caller schedules the next `TxDone` if more
    /// packets wait (the idle fast path knows none do without asking the queue).
    fn transmit(&mut self, id: PortId, pkt: PacketId, size: u32, ctx: &mut PortCtx) {
        self.busy_until = ctx.now + serialisation_time(size, self.rate_bps);
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += size as u64;
        let arrive = if self.pfc_flags == 0 {
            Event::Arrive { at: self.peer, pkt }
        } else {
            if self.pfc_flags & pfc_flags::RECORD_TX != 0 {
                self.last_tx = pkt;
            }
            if self.pfc_flags & pfc_flags::ARRIVE_FROM != 0 {
                Event::ArriveFrom { port: id, pkt }
            } else {
                Event::Arrive { at: self.peer, pkt }
            }
        };
        ctx.events.push(self.busy_until + self.latency, arrive);
    }
}
