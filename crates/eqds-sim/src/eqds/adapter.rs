//! The simulator's side of each host's EQDS: packets in and out, the NIC and the
//! timer. What the daemon gets from the kernel, the run gives through [`HostIo`].
//!
//! - **Writes** from transports go into the host's [`Host`] (the sending EQIF their
//!   flow's workload writes into); a full send queue drops a transport's packet and
//!   refuses a native writer's, which is woken through its timer once the queue has
//!   drained to half.
//! - **Arrivals** are decoded from the tag table as a receiver would decode the wire
//!   and handed to the host: DATA, trimmed headers and RTSs to the receiving EQIF,
//!   control packets and returned headers to the sending EQIFs.
//! - **The pump**, after every call, puts on the wire the control packets the host
//!   released and the DATA and RTS packets its credit pays for while the NIC queue has
//!   room, wakes writers that have room again, and re-arms the host's one timer event
//!   for the earliest of the PULL pacer, the slow timers (the host's "Timers at
//!   scale") and a full NIC freeing up.
//!
//! Inner packets released to transports are left in [`EqdsLayer::delivered`] for the
//! run loop, which owns the endpoints.

use super::encap::{self, NO_FLOW};
use super::payload::{Held, NativeFlow, Payload};
use super::EqdsLayer;
use crate::engine::{Event, EventQueue, SimRng, Timers};
use crate::flow::FlowRecord;
use crate::ids::Node;
use crate::ids::{flow_of, EndpointId, FlowId, HostId, PacketId, PortId};
use crate::net::packet::{flags, Packet, PacketKind, PacketSlab};
use crate::net::port::PortCtx;
use crate::net::Network;
use crate::scenario::RdmaEqif;
use crate::units::Time;
use eqds_proto::rdma::EngineSignal;
use eqds_proto::sender::EnqueueError;
use eqds_proto::wire::Header;

/// Who wrote a packet into EQDS, which decides what a full send queue means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writer {
    /// A transport with its own loss recovery (TCP): the packet is dropped.
    Transport,
    /// A native application: the packet is refused and the endpoint woken through
    /// its timer once the queue has drained to half.
    Native(EndpointId),
}

/// The rest of the run, as the EQDS layer sees it: the network and its packets,
/// the event queue, the endpoints' timers and the flow table.
pub struct HostIo<'a> {
    pub net: &'a mut Network,
    pub pkts: &'a mut PacketSlab,
    pub events: &'a mut EventQueue,
    pub rng: &'a mut SimRng,
    pub timers: &'a mut Timers,
    pub flows: &'a mut [FlowRecord],
}

impl HostIo<'_> {
    #[inline]
    fn enqueue(&mut self, now: Time, port: PortId, id: PacketId) {
        let mut ctx = PortCtx {
            now,
            events: &mut *self.events,
            pkts: &mut *self.pkts,
            rng: &mut *self.rng,
        };
        self.net.enqueue(port, id, &mut ctx);
    }
}

impl EqdsLayer {
    /// Hands an inner packet to its source host's sending EQIF (the one its flow's
    /// workload writes into). Returns whether it was accepted.
    pub fn write(&mut self, now: Time, mut pkt: Packet, writer: Writer, io: &mut HostIo) -> bool {
        let (host, dst, len) = (pkt.src, pkt.dst, pkt.size);
        let eqif = self.settings.eqif_of_flow(io.flows, pkt.flow);
        let rdma = self.settings.rdma(eqif).copied();
        let h = &mut self.hosts[host as usize];
        // The RDMA EQIF marks no packet: a mark becomes a CNP to the engine.
        let mut marked = false;
        if pkt.has(flags::ECT) && h.host.mark_ce(eqif, dst) {
            if rdma.is_some() {
                marked = true;
            } else {
                pkt.flags |= flags::CE;
                self.counters.ecn_marked += 1;
            }
        }
        let id = io.pkts.alloc(pkt);
        let pure_ack = pkt.kind == PacketKind::Ack;
        let accepted = match h
            .host
            .handle_write(now, eqif, dst, len, Payload::packet(id), pure_ack)
        {
            Ok(()) => {
                self.counters.written += 1;
                if let Some(r) = rdma {
                    self.rdma_written(now, eqif, &pkt, marked, &r, io);
                }
                true
            }
            Err(EnqueueError::Backpressure(_)) => {
                io.pkts.free(id);
                if rdma.is_some() {
                    self.rdma.overflow += 1;
                } else {
                    self.counters.send_queue_full += 1;
                }
                if let Writer::Native(ep) = writer {
                    h.block(eqif, dst, ep);
                }
                false
            }
            Err(EnqueueError::TooLarge(_)) => {
                // Transports are configured to fit; a writer that does not is a bug,
                // counted rather than fatal.
                io.pkts.free(id);
                self.counters.malformed += 1;
                false
            }
        };
        self.pump(now, host, io);
        accepted
    }

    /// Native flow `native` starts: from now on its sender writes datagrams
    /// ([`EqdsLayer::write_datagram`]).
    pub fn open_native(&mut self, native: NativeFlow) {
        let flow = native.flow as usize;
        if self.natives.len() <= flow {
            self.natives.resize(flow + 1, None);
        }
        self.natives[flow] = Some(native);
    }

    /// Hands the datagram of native flow `flow` that starts at byte `seq` to its
    /// host's sending EQIF, as [`EqdsLayer::write`] a packet from a native writer:
    /// held unmade (`payload.rs`) unless its EQIF is an RDMA one, whose feedback
    /// reads the packet. Returns whether it was accepted.
    pub fn write_datagram(&mut self, now: Time, flow: FlowId, seq: u64, io: &mut HostIo) -> bool {
        let native = self.natives[flow as usize].expect("the flow was opened");
        let writer = Writer::Native(native.sender);
        let eqif = self.settings.eqif_of_flow(io.flows, flow);
        let rdma = self.settings.rdma(eqif).is_some();
        let Some(index) = native.index_of(seq).filter(|_| !rdma) else {
            return self.write(now, native.packet(seq, now), writer, io);
        };
        let (host, dst) = (native.src, native.dst);
        let h = &mut self.hosts[host as usize];
        // Counted as a packet from here, as `write` allocates one before offering it.
        io.pkts.count_unmade();
        let payload = Payload::datagram(flow, index);
        let len = native.len_at(seq);
        let accepted = match h.host.handle_write(now, eqif, dst, len, payload, false) {
            Ok(()) => {
                self.counters.written += 1;
                true
            }
            Err(EnqueueError::Backpressure(_)) => {
                io.pkts.uncount_unmade();
                self.counters.send_queue_full += 1;
                h.block(eqif, dst, native.sender);
                false
            }
            Err(EnqueueError::TooLarge(_)) => {
                io.pkts.uncount_unmade();
                self.counters.malformed += 1;
                false
            }
        };
        self.pump(now, host, io);
        accepted
    }

    /// An RDMA engine's packet `pkt` joined RDMA EQIF `eqif`'s queue, `marked` by its
    /// ramp: the EQIF's feedback to the engine (module `eqds_proto::rdma`). A CNP
    /// reaches the packet's queue pair, the sending endpoint, `delay` later, as a
    /// packet from the destination (what the DCQCN reaction point expects); a PAUSE
    /// or RESUME is obeyed `delay` later.
    #[cold]
    fn rdma_written(
        &mut self,
        now: Time,
        eqif: usize,
        pkt: &Packet,
        marked: bool,
        r: &RdmaEqif,
        io: &mut HostIo,
    ) {
        let h = &mut self.hosts[pkt.src as usize];
        let backlog = h.host.send_queue_bytes(eqif, pkt.dst);
        self.rdma.written += 1;
        self.rdma.peak_queue_bytes = self.rdma.peak_queue_bytes.max(backlog);
        let Some(fb) = h.rdma.get_mut(eqif).and_then(Option::as_mut) else {
            return;
        };
        let qp = u64::from(pkt.src_endpoint);
        match fb.on_enqueue(now, qp, pkt.dst, marked, backlog) {
            Some(EngineSignal::Cnp { .. }) => {
                let cnp = Packet {
                    src: pkt.dst,
                    dst: pkt.src,
                    flow: pkt.flow,
                    dst_endpoint: pkt.src_endpoint,
                    src_endpoint: pkt.dst_endpoint,
                    // It never crosses a link.
                    size: 0,
                    kind: PacketKind::Cnp,
                    class: pkt.class,
                    ..Default::default()
                };
                let id = io.pkts.alloc(cnp);
                io.events.push(
                    now + r.delay,
                    Event::Arrive {
                        at: Node::Host(pkt.src),
                        pkt: id,
                    },
                );
            }
            Some(EngineSignal::Pause) => h.engine_pause = (now + r.delay, Time::MAX),
            Some(EngineSignal::Resume) => h.engine_pause.1 = now + r.delay,
            None => {}
        }
    }

    /// Whether `host`'s RDMA engine is paused by its RDMA EQIF at `now` (the
    /// Stingray design): its queue pairs then send nothing.
    #[inline]
    pub fn engine_paused(&self, now: Time, host: HostId) -> bool {
        let (from, until) = self.hosts[host as usize].engine_pause;
        from <= now && now < until
    }

    /// Whether a transport on `host` should hold new data for `dst` rather than
    /// write it: the destination's send queue is three-quarters full (the EQIF's
    /// backpressure, as Linux's TCP small queues hold a socket whose packets wait in
    /// the qdisc). If so, endpoint `ep` is woken through its timer once the queue
    /// has drained to half. Always false when EQDS does not tunnel transports.
    pub fn hold(
        &mut self,
        host: HostId,
        dst: HostId,
        ep: EndpointId,
        flows: &[FlowRecord],
    ) -> bool {
        if !self.settings.tunnel_all || !self.settings.backpressure {
            return false;
        }
        let eqif = self.settings.eqif_of_flow(flows, flow_of(ep));
        let h = &mut self.hosts[host as usize];
        let limit = h.host.send_queue_limit(eqif) / 4 * 3;
        if h.host.send_queue_bytes(eqif, dst) < limit {
            return false;
        }
        h.block(eqif, dst, ep);
        true
    }

    /// An EQDS packet reached `host`.
    pub fn arrive(&mut self, now: Time, host: HostId, id: PacketId, io: &mut HostIo) {
        let pkt = *io.pkts.get(id);
        let overhead = self.settings.overhead;
        let trimmed = pkt.has(flags::TRIMMED);
        // What followed the header on the wire: the inner packet, unless trimmed.
        let payload_len = match pkt.kind {
            PacketKind::Data if !trimmed => pkt.size.saturating_sub(overhead),
            _ => 0,
        };
        if trimmed {
            self.tags.mark_trimmed(id);
        }
        let Self {
            hosts,
            tags,
            counters,
            delivered,
            ..
        } = self;
        let h = &mut hosts[host as usize].host;
        match tags.get(id, payload_len as usize) {
            Err(_) => {
                counters.malformed += 1;
                io.pkts.free(id);
            }
            Ok((Header::Data(hdr), _)) if pkt.has(flags::RETURNED) => {
                // Turned around by a switch: `src` is now where it was going.
                counters.returned += 1;
                h.handle_returned(now, pkt.src, &hdr);
                io.pkts.free(id);
            }
            Ok((Header::Control(_), _)) if pkt.has(flags::RETURNED) => {
                counters.returned_control += 1;
                io.pkts.free(id);
            }
            Ok((Header::Data(hdr), _)) => {
                let payload = Payload::packet(id);
                match h.handle_data(now, pkt.src, &hdr, payload, payload_len as usize) {
                    Ok(()) => {
                        if hdr.trimmed {
                            counters.trimmed_received += 1;
                        }
                        while let Some(d) = h.poll_deliver(now) {
                            let id = d.payload.expect_packet();
                            release(delivered, id, tags, overhead, io.pkts);
                        }
                        while let Some(x) = h.poll_discarded() {
                            io.pkts.free(x.expect_packet());
                        }
                    }
                    // Every host has the same EQIFs; an id beyond them is not ours.
                    Err(_) => {
                        counters.malformed += 1;
                        io.pkts.free(id);
                    }
                }
            }
            Ok((Header::Control(hdr), _)) => {
                h.handle_control(now, pkt.src, &hdr, pkt.size);
                io.pkts.free(id);
                while let Some((_, acked)) = h.poll_acked() {
                    let flow = match acked.payload.held() {
                        Held::Packet(inner) => {
                            let flow = io.pkts.get(inner).flow;
                            io.pkts.free(inner);
                            flow
                        }
                        Held::Datagram { flow, .. } => {
                            io.pkts.uncount_unmade();
                            flow
                        }
                    };
                    if let (Some(rtt), Some(f)) = (acked.rtt, io.flows.get_mut(flow as usize)) {
                        f.record_rtt(rtt);
                    }
                }
            }
        }
        self.pump(now, host, io);
    }

    /// The host's EQDS timer event fired.
    pub fn timer(&mut self, now: Time, host: HostId, io: &mut HostIo) {
        let overhead = self.settings.overhead;
        let h = &mut self.hosts[host as usize];
        if h.timer_queued != now {
            // Superseded: an earlier timer was queued after this one, and every pump
            // since queued one for the earliest thing due. Nothing is due now.
            return;
        }
        h.timer_queued = Time::MAX;
        h.host.handle_timeout(now);
        while let Some(d) = h.host.poll_deliver(now) {
            release(
                &mut self.delivered,
                d.payload.expect_packet(),
                &self.tags,
                overhead,
                io.pkts,
            );
        }
        self.pump(now, host, io);
    }

    /// Puts on the wire the control packets the host's receiving EQIF released and
    /// what its sending EQIFs release while the NIC queue has room, wakes native
    /// writers that have room again, and re-arms the host's timer.
    fn pump(&mut self, now: Time, host: HostId, io: &mut HostIo) {
        let overhead = self.settings.overhead;
        let paths = self.settings.paths;
        let port = io.net.host_port(host);
        let h = &mut self.hosts[host as usize];
        while let Some((peer, hdr)) = h.host.poll_control(now) {
            let path = h.next_control_path;
            h.next_control_path = (path + 1) % paths;
            let pkt = encap::header_packet(host, peer, overhead, path);
            let id = io.pkts.alloc(pkt);
            self.tags.set(id, &Header::Control(hdr), Default::default());
            self.counters.control_sent += 1;
            io.enqueue(now, port, id);
        }
        h.nic_wake = Time::MAX;
        let mut sent_data = false;
        loop {
            if io.net.queues[port as usize].backlog_packets() >= self.settings.nic_limit {
                h.nic_wake = io.net.ports[port as usize].busy_until.max(now);
                break;
            }
            let Some((eqif, tx)) = h.host.poll_transmit(now) else {
                break;
            };
            if !h.rdma.is_empty() {
                let backlog = h.host.send_queue_bytes(eqif, tx.dst);
                if let Some(fb) = h.rdma.get_mut(eqif).and_then(Option::as_mut) {
                    if let Some(EngineSignal::Resume) = fb.on_dequeue(now, tx.dst, backlog) {
                        let delay = self.settings.rdma(eqif).map_or(0, |r| r.delay);
                        h.engine_pause.1 = now + delay;
                    }
                }
            }
            let hdr = Header::Data(tx.header);
            let (pkt, inner) = match tx.payload.map(Payload::held) {
                Some(Held::Packet(inner_id)) => {
                    let inner = io.pkts.get(inner_id);
                    self.counters.data_sent += 1;
                    sent_data = true;
                    (
                        encap::data_packet(inner, tx.wire_len, tx.header.path_id),
                        (inner.kind, inner.flags),
                    )
                }
                Some(Held::Datagram { flow, index }) => {
                    let native = self.natives[flow as usize].as_ref();
                    let native = native.expect("a datagram's flow was opened");
                    let inner = native.packet(native.seq_of(index), now);
                    self.counters.data_sent += 1;
                    sent_data = true;
                    (
                        encap::data_packet(&inner, tx.wire_len, tx.header.path_id),
                        (inner.kind, inner.flags),
                    )
                }
                None => {
                    self.counters.rts_sent += 1;
                    let p = encap::header_packet(host, tx.dst, tx.wire_len, tx.header.path_id);
                    (p, Default::default())
                }
            };
            debug_assert!(tx.payload.is_some() || pkt.flow == NO_FLOW);
            let id = io.pkts.alloc(pkt);
            self.tags.set(id, &hdr, inner);
            io.enqueue(now, port, id);
        }
        if !h.blocked.is_empty() && (sent_data || h.blocked_new) {
            h.blocked_new = false;
            let (eqds, timers, events) = (&h.host, &mut *io.timers, &mut *io.events);
            h.blocked.retain(|&(eqif, dst, ep)| {
                let half = eqds.send_queue_limit(usize::from(eqif)) / 2;
                let room = eqds.send_queue_bytes(usize::from(eqif), dst) <= half;
                if room {
                    timers.set(ep, now, events);
                }
                !room
            });
        }
        let next = h
            .host
            .poll_timeout(now)
            .map_or(h.nic_wake, |t| t.min(h.nic_wake));
        if next != Time::MAX {
            let at = next.max(now);
            if at < h.timer_queued {
                h.timer_queued = at;
                io.events.push(at, Event::EqdsTimer { host });
            }
        }
    }
}

/// Decapsulates a delivered wire packet for its transport.
fn release(
    delivered: &mut Vec<PacketId>,
    id: PacketId,
    tags: &encap::TagTable,
    overhead: u32,
    pkts: &mut PacketSlab,
) {
    let p = pkts.get_mut(id);
    let payload_len = p.size.saturating_sub(overhead) as usize;
    match tags.get(id, payload_len) {
        Ok((_, inner)) => {
            encap::decapsulate(p, inner, overhead);
            delivered.push(id);
        }
        // Decoded once already on arrival; cannot fail now.
        Err(_) => pkts.free(id),
    }
}
