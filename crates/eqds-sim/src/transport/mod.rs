//! Host transports: endpoints that react to packets and timers.
//!
//! An endpoint sees the world only through [`Ctx`]: it can build and send packets from
//! its host, arm its one timer, and report what happened to its flow. Endpoints never
//! hold references to each other or to the network.

pub mod cc;
pub mod eqds_app;
pub mod mptcp;
pub mod ndp;
pub mod packet_pair;
pub mod roce;
pub mod tcp;
pub mod udp;

use crate::flow::FlowRecord;
use crate::ids::{EndpointId, FlowId, HostId, PacketId};
use crate::net::packet::Packet;
use crate::units::Time;
use crate::world::World;

/// A protocol endpoint living on one host.
pub trait Endpoint {
    /// The flow starts (senders begin sending).
    fn on_start(&mut self, ctx: &mut Ctx);
    /// A packet addressed to this endpoint arrived. The endpoint owns it and must free it.
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId);
    /// The endpoint's timer fired.
    fn on_timer(&mut self, ctx: &mut Ctx);
    /// It is this endpoint's turn on its host's pull pacer (it joined with
    /// [`Ctx::join_pull_queue`]). Returns whether it sent a PULL and whether it still
    /// owes more; an endpoint that sent nothing gives its turn to the next in line.
    fn on_pull_slot(&mut self, _ctx: &mut Ctx) -> PullTurn {
        PullTurn::default()
    }
}

/// A flow's two endpoints as one of them sees it: where its packets leave from and
/// where they go. A sender's `host` is the flow's source, a receiver's its
/// destination; [`Ends::reversed`] turns one into the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ends {
    pub flow: FlowId,
    /// This endpoint's host.
    pub host: HostId,
    /// This endpoint.
    pub me: EndpointId,
    /// The other endpoint's host.
    pub peer_host: HostId,
    /// The other endpoint.
    pub peer: EndpointId,
}

impl Ends {
    /// The same flow seen from its other end.
    pub fn reversed(self) -> Ends {
        Ends {
            flow: self.flow,
            host: self.peer_host,
            me: self.peer,
            peer_host: self.host,
            peer: self.me,
        }
    }

    /// A packet from this end to the other with every other field at its default;
    /// callers set the rest with `..ends.packet()`.
    pub fn packet(self) -> Packet {
        Packet {
            src: self.host,
            dst: self.peer_host,
            flow: self.flow,
            dst_endpoint: self.peer,
            src_endpoint: self.me,
            ..Default::default()
        }
    }
}

/// What an endpoint did with its turn on the pull pacer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PullTurn {
    pub sent: bool,
    pub owes_more: bool,
}

/// What an endpoint may do while it handles an event.
pub struct Ctx<'a> {
    pub now: Time,
    /// The endpoint being run.
    pub me: EndpointId,
    pub(crate) world: &'a mut World,
}

impl Ctx<'_> {
    /// Reads a packet.
    #[inline]
    pub fn packet(&self, pkt: PacketId) -> &Packet {
        self.world.pkts.get(pkt)
    }

    /// Releases a packet the endpoint consumed.
    #[inline]
    pub fn free(&mut self, pkt: PacketId) {
        self.world.pkts.free(pkt);
    }

    /// Sends a packet from its `src` host's NIC.
    #[inline]
    pub fn send(&mut self, pkt: Packet) {
        self.world.send_from_host(self.now, pkt);
    }

    /// Tells its source host's EQDS that native flow `native` starts: it will
    /// write its datagrams with [`Ctx::eqds_write_datagram`].
    #[inline]
    pub fn eqds_open_native(&mut self, native: crate::eqds::NativeFlow) {
        self.world.eqds_open_native(native);
    }

    /// Writes the datagram of native flow `flow` (opened with
    /// [`Ctx::eqds_open_native`]) that starts at byte `seq` into its source host's
    /// EQDS (the scenario must use EQDS): false if the destination's send queue is
    /// full, in which case this endpoint's timer fires once it has room. EQDS makes
    /// the datagram into a packet only when it sends it.
    #[inline]
    pub fn eqds_write_datagram(&mut self, flow: FlowId, seq: u64) -> bool {
        self.world.eqds_write_datagram(self.now, flow, seq)
    }

    /// Whether to hold new data for `dst` because EQDS pushes back (its send queue
    /// towards `dst` is nearly full); this endpoint's timer then fires when there is
    /// room. Always false without `[eqds] enabled`.
    #[inline]
    pub fn eqds_hold(&mut self, src: HostId, dst: HostId) -> bool {
        let me = self.me;
        self.world.tunnels_flow(crate::ids::flow_of(me)) && self.world.eqds_hold(src, dst, me)
    }

    /// EQDS tunnels every transport (`[eqds] enabled`), so writes may be held back.
    #[inline]
    pub fn eqds_tunnels_transports(&self) -> bool {
        self.world.tunnels_flow(crate::ids::flow_of(self.me))
    }

    /// Whether `host`'s RDMA engine is paused now by its RDMA EQIF (`feedback =
    /// "pause"`, the Stingray design). Always false without one.
    #[inline]
    pub fn rdma_engine_paused(&self, host: HostId) -> bool {
        self.world
            .eqds
            .as_ref()
            .is_some_and(|e| e.engine_paused(self.now, host))
    }

    /// Largest inner packet EQDS accepts (0 if the scenario does not use EQDS).
    pub fn eqds_max_inner(&self) -> u32 {
        self.world
            .eqds
            .as_ref()
            .map_or(0, |e| e.settings.max_inner())
    }

    /// Arms this endpoint's timer for `at`, replacing any earlier setting.
    #[inline]
    pub fn set_timer(&mut self, at: Time) {
        let me = self.me;
        self.world.timers.set(me, at, &mut self.world.events);
    }

    /// Disarms this endpoint's timer.
    #[inline]
    pub fn cancel_timer(&mut self) {
        self.world.timers.cancel(self.me);
    }

    /// The record of a flow, for counters.
    #[inline]
    pub fn flow(&mut self, flow: FlowId) -> &mut FlowRecord {
        &mut self.world.flows[flow as usize]
    }

    /// The receiver holds every byte of `flow`.
    pub fn complete_flow(&mut self, flow: FlowId) {
        self.world.complete_flow(self.now, flow);
    }

    /// Queues this endpoint, living on `host`, on the host's pull pacer. Call it when
    /// the endpoint's owed PULLs go from zero to one; it is then called back through
    /// [`Endpoint::on_pull_slot`].
    #[inline]
    pub fn join_pull_queue(&mut self, host: HostId) {
        self.world.join_pull_queue(self.now, host, self.me);
    }

    /// Packets waiting in a host's NIC queue (not counting the one on the wire).
    #[inline]
    pub fn nic_backlog_packets(&self, host: HostId) -> u32 {
        let port = self.world.net.host_port(host);
        self.world.net.queues[port as usize].backlog_packets()
    }

    /// When a host's NIC finishes the packet now on the wire (in the past if idle).
    #[inline]
    pub fn nic_busy_until(&self, host: HostId) -> Time {
        let port = self.world.net.host_port(host);
        self.world.net.ports[port as usize].busy_until
    }

    /// The run's random generator.
    #[inline]
    pub fn rng(&mut self) -> &mut crate::engine::SimRng {
        &mut self.world.rng
    }

    /// Link rate of a host's NIC.
    pub fn host_rate(&self, host: HostId) -> u64 {
        self.world.net.host_rate(host)
    }

    /// The run's RoCE totals, which RoCE endpoints add to.
    #[inline]
    pub fn roce_counters(&mut self) -> &mut crate::world::RoceCounters {
        &mut self.world.roce
    }

    /// Whether the run logs RoCE senders' rates (`[output] rates_csv`).
    #[inline]
    pub fn logs_rates(&self) -> bool {
        self.world.rate_log.is_some()
    }

    /// Logs that `flow`'s sender now paces at `rate_bps` (if the run logs rates).
    pub fn log_rate(&mut self, flow: FlowId, rate_bps: f64) {
        if let Some(log) = &mut self.world.rate_log {
            log.push((self.now, flow, rate_bps));
        }
    }

    /// DASR's sender tables and counters, if the scenario turns DASR on.
    #[inline]
    pub fn dasr(&mut self) -> Option<&mut roce::dasr::Dasr> {
        self.world.dasr.as_deref_mut()
    }
}

#[cfg(test)]
pub(crate) mod test_rig;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_address_packets_to_the_other_end_and_reverse() {
        let sender = Ends {
            flow: 7,
            host: 1,
            me: 10,
            peer_host: 2,
            peer: 20,
        };
        let p = sender.packet();
        assert_eq!((p.src, p.dst, p.flow), (1, 2, 7));
        assert_eq!((p.src_endpoint, p.dst_endpoint), (10, 20));
        let receiver = sender.reversed();
        let back = receiver.packet();
        assert_eq!((back.src, back.dst, back.flow), (2, 1, 7));
        assert_eq!((back.src_endpoint, back.dst_endpoint), (20, 10));
        assert_eq!(receiver.reversed(), sender);
    }
}
