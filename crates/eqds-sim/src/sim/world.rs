//! Everything a run holds except the endpoints: the network, the packet slab, the
//! event queue, the generator, the flow table and the timers. Endpoints get `&mut
//! World` through `transport::Ctx` while the run loop holds the endpoint table.

use super::pull_pacer::PullPacer;
use super::timers::Timers;
use crate::engine::{Event, EventQueue, SimRng};
use crate::eqds::{EqdsLayer, Writer};
use crate::flow::FlowRecord;
use crate::ids::{EndpointId, FlowId, HostId, Node, PacketId, PortId};
use crate::net::packet::{Packet, PacketSlab};
use crate::net::port::PortCtx;
use crate::net::Network;
use crate::units::Time;

pub struct World {
    pub net: Network,
    pub pkts: PacketSlab,
    pub events: EventQueue,
    pub rng: SimRng,
    pub flows: Vec<FlowRecord>,
    pub timers: Timers,
    /// Flows completed since the run loop last looked.
    pub completed: Vec<FlowId>,
    /// One pull queue per host, for receiver-driven transports.
    pub pacers: Vec<PullPacer>,
    /// EQDS on every host, if the scenario uses it. Taken out while it runs.
    pub eqds: Option<Box<EqdsLayer>>,
}

impl World {
    /// Puts a new packet on its source host's NIC queue.
    #[inline]
    pub fn send_from_host(&mut self, now: Time, pkt: Packet) {
        if self.tunnels_flow(pkt.flow) {
            self.eqds_write(now, pkt, Writer::Transport);
            return;
        }
        let port = self.net.host_port(pkt.src);
        let id = self.pkts.alloc(pkt);
        self.enqueue(now, port, id);
    }

    /// Whether EQDS tunnels the packets of `flow`: it tunnels every transport, and
    /// the flow is not legacy traffic.
    #[inline]
    pub fn tunnels_flow(&self, flow: FlowId) -> bool {
        self.eqds.as_ref().is_some_and(|e| {
            e.settings.tunnel_all
                && !(e.settings.has_legacy
                    && self.flows.get(flow as usize).is_some_and(|f| f.spec.legacy))
        })
    }

    /// Offers a packet to a port. A header the port's discipline returns to its
    /// sender is turned around and routed by the same switch; if that fails too (or
    /// the port is a host's), it is dropped and counted there.
    #[inline]
    pub fn enqueue(&mut self, now: Time, port: PortId, pkt: PacketId) {
        let Some(returned) = self.offer(now, port, pkt) else {
            return;
        };
        let packet = self.pkts.get_mut(returned);
        packet.reverse();
        let back = match self.net.ports[port as usize].owner {
            Node::Switch(s) => {
                let sw = &self.net.switches[s as usize];
                Some(sw.route(packet.dst, packet.entropy, self.net.load_balancing))
            }
            Node::Host(_) => None,
        };
        let bounced_again = match back {
            Some(out) => self.offer(now, out, returned),
            None => Some(returned),
        };
        if let Some(p) = bounced_again {
            // A returned header never bounces twice; drop it where it stands.
            let stats = &mut self.net.ports[port as usize].stats;
            stats.drops += 1;
            stats.dropped_bytes += self.pkts.get(p).size as u64;
            self.pkts.free(p);
        }
    }

    #[inline]
    fn offer(&mut self, now: Time, port: PortId, pkt: PacketId) -> Option<PacketId> {
        let mut ctx = PortCtx {
            now,
            events: &mut self.events,
            pkts: &mut self.pkts,
            rng: &mut self.rng,
        };
        let queue = &mut *self.net.queues[port as usize];
        self.net.ports[port as usize].enqueue(queue, port, pkt, &mut ctx)
    }

    /// The port's transmitter is free again.
    #[inline]
    pub fn tx_done(&mut self, now: Time, port: PortId) {
        let mut ctx = PortCtx {
            now,
            events: &mut self.events,
            pkts: &mut self.pkts,
            rng: &mut self.rng,
        };
        let queue = &mut *self.net.queues[port as usize];
        self.net.ports[port as usize].on_tx_done(queue, port, &mut ctx);
    }

    /// Queues endpoint `ep` on `host`'s pull pacer.
    pub fn join_pull_queue(&mut self, now: Time, host: HostId, ep: EndpointId) {
        if let Some(at) = self.pacers[host as usize].join(now, ep) {
            self.events.push(at, Event::PullSlot { host });
        }
    }

    pub fn complete_flow(&mut self, now: Time, flow: FlowId) {
        let rec = &mut self.flows[flow as usize];
        if rec.end.is_none() {
            rec.end = Some(now);
            self.completed.push(flow);
        }
    }
}
