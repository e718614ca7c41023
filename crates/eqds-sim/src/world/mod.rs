//! Everything a run holds except the endpoints: the network, the packet slab, the
//! event queue, the generator, the flow table, the timers and pull pacers, and the
//! EQDS layer. Endpoints get `&mut World` through `transport::Ctx` while the run loop
//! (`sim`) holds the endpoint table.
//!
//! It sits below both: `transport` uses it, `sim` builds it and runs it, so neither
//! of those two needs the other's insides.

pub mod arrivals;
pub mod dasr;
mod pull_pacer;

pub use pull_pacer::PullPacer;

use dasr::Dasr;

use crate::engine::{Event, EventQueue, SimRng, Timers};
use crate::eqds::{EqdsLayer, HostIo, Writer};
use crate::flow::FlowRecord;
use crate::ids::{EndpointId, FlowId, HostId, PacketId, PortId};
use crate::net::packet::{Packet, PacketSlab};
use crate::net::port::PortCtx;
use crate::net::Network;
use crate::units::Time;

/// The state of a run that endpoints and the EQDS layer act on.
pub struct World {
    pub net: Network,
    pub pkts: PacketSlab,
    pub events: EventQueue,
    pub rng: SimRng,
    pub flows: Vec<FlowRecord>,
    /// One lazily cancelled timer per endpoint.
    pub timers: Timers,
    /// Flows completed since the run loop last looked.
    pub completed: Vec<FlowId>,
    /// One pull queue per host, for receiver-driven transports.
    pub pacers: Vec<PullPacer>,
    /// EQDS on every host, if the scenario uses it.
    pub eqds: Option<Box<EqdsLayer>>,
    /// RoCE's run totals (zero without RoCE flows).
    pub roce: RoceCounters,
    /// Blitz's DASR sender tables, one per host, if the scenario turns DASR on.
    pub dasr: Option<Box<Dasr>>,
    /// Each change of a RoCE sender's pacing rate: when, which flow, the new rate
    /// in bits per second (`[output] rates_csv`; `None` when not asked for).
    pub rate_log: Option<Vec<(Time, FlowId, f64)>>,
    /// Data packets reaching their hosts (`[output] arrivals`; `None` when not
    /// asked for).
    pub arrival_log: Option<Box<arrivals::ArrivalLog>>,
}

/// What RoCE flows and their DCQCN did over a run, for `summary.json`. The endpoints
/// add to it as it happens: they are dropped when their flow completes.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct RoceCounters {
    /// Data packets sent, resends included.
    pub data_packets: u64,
    /// Of those, packets sent again (after a NAK or a timeout).
    pub retransmitted_packets: u64,
    pub acks: u64,
    pub naks: u64,
    /// NAKs not sent: the same PSN was NAKed within `nak_interval`.
    pub naks_suppressed: u64,
    /// NAKs that moved a sender back.
    pub nak_go_backs: u64,
    pub timeouts: u64,
    /// Data packets past the expected PSN, discarded by the receiver.
    pub out_of_order: u64,
    /// Data packets below the expected PSN (already received).
    pub duplicates: u64,
    /// Times a sender found its NIC queue at `nic_limit` and waited.
    pub nic_waits: u64,
    pub cnps_sent: u64,
    pub cnps_received: u64,
    pub rate_cuts: u64,
    /// Cuts the minimum rate bounded.
    pub min_rate_bound: u64,
    pub fast_recovery: u64,
    pub additive_increase: u64,
    pub hyper_increase: u64,
    /// The lowest rate any reaction point was cut to, bits per second.
    pub lowest_rate_bps: Option<f64>,
}

impl World {
    /// A world with nothing in flight: no packets, no events, room for `flows` flow
    /// records, no pull pacers and no EQDS (the builder adds those it needs).
    pub fn new(net: Network, rng: SimRng, flows: usize) -> World {
        World {
            net,
            pkts: PacketSlab::new(),
            events: EventQueue::new(),
            rng,
            flows: Vec::with_capacity(flows),
            timers: Timers::default(),
            completed: Vec::new(),
            pacers: Vec::new(),
            eqds: None,
            roce: RoceCounters::default(),
            dasr: None,
            rate_log: None,
            arrival_log: None,
        }
    }

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

    /// Offers a packet to a port (see [`Network::enqueue`]).
    #[inline]
    pub fn enqueue(&mut self, now: Time, port: PortId, pkt: PacketId) {
        let (net, mut ctx) = self.ports(now);
        net.enqueue(port, pkt, &mut ctx);
    }

    /// The port's transmitter is free again.
    #[inline]
    pub fn tx_done(&mut self, now: Time, port: PortId) {
        let (net, mut ctx) = self.ports(now);
        net.tx_done(port, &mut ctx);
    }

    /// The network, and apart from it the pieces of the world its ports need.
    #[inline]
    pub fn ports(&mut self, now: Time) -> (&mut Network, PortCtx<'_>) {
        let ctx = PortCtx {
            now,
            events: &mut self.events,
            pkts: &mut self.pkts,
            rng: &mut self.rng,
        };
        (&mut self.net, ctx)
    }

    /// The EQDS layer, and apart from it the rest of the world it works with.
    ///
    /// # Panics
    /// If no host runs EQDS: the EQDS entry points are reached only when one does.
    #[inline]
    fn eqds_io(&mut self) -> (&mut EqdsLayer, HostIo<'_>) {
        let World {
            net,
            pkts,
            events,
            rng,
            flows,
            timers,
            eqds,
            ..
        } = self;
        let eqds = eqds
            .as_deref_mut()
            .expect("EQDS entry points run only when the layer exists");
        let io = HostIo {
            net,
            pkts,
            events,
            rng,
            timers,
            flows,
        };
        (eqds, io)
    }

    /// Hands an inner packet to its source host's EQDS (see [`EqdsLayer::write`]).
    /// Returns whether it was accepted.
    pub fn eqds_write(&mut self, now: Time, pkt: Packet, writer: Writer) -> bool {
        let (eqds, mut io) = self.eqds_io();
        eqds.write(now, pkt, writer, &mut io)
    }

    /// Whether a transport on `host` should hold new data for `dst` (see
    /// [`EqdsLayer::hold`]). Always false when EQDS does not tunnel transports.
    /// Native flow `native` starts writing datagrams into EQDS.
    pub fn eqds_open_native(&mut self, native: crate::eqds::NativeFlow) {
        if let Some(eqds) = self.eqds.as_deref_mut() {
            eqds.open_native(native);
        }
    }

    /// Writes the datagram of native flow `flow` that starts at byte `seq`.
    pub fn eqds_write_datagram(&mut self, now: Time, flow: FlowId, seq: u64) -> bool {
        let (eqds, mut io) = self.eqds_io();
        eqds.write_datagram(now, flow, seq, &mut io)
    }

    pub fn eqds_hold(&mut self, host: HostId, dst: HostId, ep: EndpointId) -> bool {
        let Some(eqds) = self.eqds.as_deref_mut() else {
            return false;
        };
        eqds.hold(host, dst, ep, &self.flows)
    }

    /// An EQDS packet reached `host`.
    pub fn eqds_arrive(&mut self, now: Time, host: HostId, pkt: PacketId) {
        let (eqds, mut io) = self.eqds_io();
        eqds.arrive(now, host, pkt, &mut io);
    }

    /// The host's EQDS timer event fired.
    pub fn eqds_timer(&mut self, now: Time, host: HostId) {
        let (eqds, mut io) = self.eqds_io();
        eqds.timer(now, host, &mut io);
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
