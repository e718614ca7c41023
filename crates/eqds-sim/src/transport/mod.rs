//! Host transports: endpoints that react to packets and timers.
//!
//! An endpoint sees the world only through [`Ctx`]: it can build and send packets from
//! its host, arm its one timer, and report what happened to its flow. Endpoints never
//! hold references to each other or to the network.

pub mod cc;
pub mod tcp;

use crate::flow::FlowRecord;
use crate::ids::{EndpointId, FlowId, HostId, PacketId};
use crate::net::packet::Packet;
use crate::sim::World;
use crate::units::Time;

/// A protocol endpoint living on one host.
pub trait Endpoint {
    /// The flow starts (senders begin sending).
    fn on_start(&mut self, ctx: &mut Ctx);
    /// A packet addressed to this endpoint arrived. The endpoint owns it and must free it.
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId);
    /// The endpoint's timer fired.
    fn on_timer(&mut self, ctx: &mut Ctx);
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

    /// Link rate of a host's NIC.
    pub fn host_rate(&self, host: HostId) -> u64 {
        self.world.net.host_rate(host)
    }
}
