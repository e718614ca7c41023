//! The EQDS layer's side of a run: writes from transports, arrivals from the
//! network, the per-host timer, and pumping what the EQIFs release onto the NIC.
//!
//! Each entry point takes the layer out of the [`World`] for the duration of the
//! call, so the EQIFs and the network can be used together, and puts it back.
//!
//! # Timers at scale
//!
//! A host may have hundreds of tunnels (an incast receiver), and finding the
//! earliest retransmit, credit-loss or reorder-hole timer means scanning them all.
//! Doing that per packet made an 850-to-1 incast 40 times slower than plain TCP.
//! Those timers are all set at least `slack` (the shortest of the three timeouts)
//! after the moment they are created, so a scan's result stays the earliest slow
//! deadline until `slack` before it: the host rescans only when `now + slack` has
//! passed the last result (or, when a scan found nothing, `slack` after it). The
//! PULL pacer, the only frequent timer, is polled on its own in O(1).
//! Inner packets released to transports are left in [`EqdsLayer::delivered`] for
//! the run loop, which owns the endpoints.

use super::encap::{self, NO_FLOW};
use super::{rx_peer, rx_peer_host, EqdsLayer};
use crate::engine::Event;
use crate::ids::{flow_of, EndpointId, HostId, PacketId};
use crate::net::packet::{flags, Packet, PacketKind};
use crate::units::Time;
use crate::world::World;
use eqds_proto::receiver::Policy;
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

impl World {
    fn take_eqds(&mut self) -> Box<EqdsLayer> {
        self.eqds
            .take()
            .expect("EQDS entry points run only when the layer exists")
    }

    /// Hands an inner packet to its source host's sending EQIF (the one its flow's
    /// workload writes into). Returns whether it was accepted.
    pub fn eqds_write(&mut self, now: Time, mut pkt: Packet, writer: Writer) -> bool {
        let mut eqds = self.take_eqds();
        let (host, dst, len) = (pkt.src, pkt.dst, pkt.size);
        let eqif = eqds.settings.eqif_of_flow(&self.flows, pkt.flow);
        if pkt.has(flags::ECT) && eqds.hosts[host as usize].tx.eqif_mut(eqif).mark_ce(dst) {
            pkt.flags |= flags::CE;
            eqds.counters.ecn_marked += 1;
        }
        let id = self.pkts.alloc(pkt);
        eqds.size_new_tunnel(host, eqif, dst);
        let tx = eqds.hosts[host as usize].tx.eqif_mut(eqif);
        let queued = if eqds.settings.acks_first && pkt.kind == PacketKind::Ack {
            tx.enqueue_ahead(now, dst, len, id)
        } else {
            tx.enqueue(now, dst, len, id)
        };
        let accepted = match queued {
            Ok(()) => {
                eqds.counters.written += 1;
                true
            }
            Err(EnqueueError::Backpressure(id)) => {
                self.pkts.free(id);
                eqds.counters.send_queue_full += 1;
                if let Writer::Native(ep) = writer {
                    eqds.hosts[host as usize].block(eqif, dst, ep);
                }
                false
            }
            Err(EnqueueError::TooLarge(id)) => {
                // Transports are configured to fit; a writer that does not is a bug,
                // counted rather than fatal.
                self.pkts.free(id);
                eqds.counters.malformed += 1;
                false
            }
        };
        self.pump(now, host, &mut eqds);
        self.eqds = Some(eqds);
        accepted
    }

    /// Whether a transport on `host` should hold new data for `dst` rather than
    /// write it: the destination's send queue is three-quarters full (the EQIF's
    /// backpressure, as Linux's TCP small queues hold a socket whose packets wait in
    /// the qdisc). If so, endpoint `ep` is woken through its timer once the queue
    /// has drained to half. Always false when EQDS does not tunnel transports.
    pub fn eqds_hold(&mut self, host: HostId, dst: HostId, ep: EndpointId) -> bool {
        let Some(eqds) = self.eqds.as_mut().filter(|e| e.settings.tunnel_all) else {
            return false;
        };
        if !eqds.settings.backpressure {
            return false;
        }
        let eqif = eqds.settings.eqif_of_flow(&self.flows, flow_of(ep));
        let limit = eqds.settings.send_queue_bytes() / 4 * 3;
        let h = &mut eqds.hosts[host as usize];
        if h.tx.eqif(eqif).send_queue_bytes(dst) < limit {
            return false;
        }
        h.block(eqif, dst, ep);
        true
    }

    /// An EQDS packet reached `host`.
    pub fn eqds_arrive(&mut self, now: Time, host: HostId, id: PacketId) {
        let mut eqds = self.take_eqds();
        let pkt = *self.pkts.get(id);
        let overhead = eqds.settings.overhead;
        let trimmed = pkt.has(flags::TRIMMED);
        // What followed the header on the wire: the inner packet, unless trimmed.
        let payload_len = match pkt.kind {
            PacketKind::Data if !trimmed => pkt.size.saturating_sub(overhead),
            _ => 0,
        };
        if trimmed {
            eqds.tags.mark_trimmed(id);
        }
        let h = &mut eqds.hosts[host as usize];
        match eqds.tags.get(id, payload_len as usize) {
            Err(_) => {
                eqds.counters.malformed += 1;
                self.pkts.free(id);
            }
            Ok((Header::Data(hdr), _)) if pkt.has(flags::RETURNED) => {
                // Turned around by a switch: `src` is now where it was going.
                eqds.counters.returned += 1;
                h.tx.handle_returned(now, pkt.src, &hdr);
                self.pkts.free(id);
            }
            Ok((Header::Data(hdr), _)) if usize::from(hdr.sender_id) >= h.tx.eqif_count() => {
                // Every host has the same EQIFs; an id beyond them is not ours.
                eqds.counters.malformed += 1;
                self.pkts.free(id);
            }
            Ok((Header::Control(_), _)) if pkt.has(flags::RETURNED) => {
                eqds.counters.returned_control += 1;
                self.pkts.free(id);
            }
            Ok((Header::Data(hdr), _)) => {
                if hdr.trimmed {
                    eqds.counters.trimmed_received += 1;
                }
                let peer = rx_peer(pkt.src, hdr.sender_id);
                if eqds.settings.policy != Policy::Fifo && h.tx.eqif_count() > 1 {
                    // Pull each sending EQIF by its own share (a fair FIFO has none).
                    let share = eqds.settings.eqifs[usize::from(hdr.sender_id)];
                    let credit = h.rx.credit_mut();
                    credit.set_weight(peer, share.weight);
                    credit.set_class(peer, share.priority);
                }
                h.rx.handle_data(now, peer, &hdr, id, payload_len as usize);
                while let Some(d) = h.rx.poll_deliver(now) {
                    self.release(&mut eqds.delivered, d.payload, &eqds.tags, overhead);
                }
                while let Some(x) = h.rx.poll_discarded() {
                    self.pkts.free(x);
                }
            }
            Ok((Header::Control(hdr), _)) => {
                if eqds.settings.pace_control {
                    // It took the link's time without a PULL asking for it.
                    h.rx.credit_mut().charge_unpulled(pkt.size);
                }
                h.tx.handle_control(now, pkt.src, &hdr);
                self.pkts.free(id);
                while let Some((_, acked)) = h.tx.poll_acked() {
                    let inner = *self.pkts.get(acked.payload);
                    if let (Some(rtt), Some(f)) =
                        (acked.rtt, self.flows.get_mut(inner.flow as usize))
                    {
                        f.record_rtt(rtt);
                    }
                    self.pkts.free(acked.payload);
                }
            }
        }
        self.pump(now, host, &mut eqds);
        self.eqds = Some(eqds);
    }

    /// The host's EQDS timer event fired.
    pub fn eqds_timer(&mut self, now: Time, host: HostId) {
        let mut eqds = self.take_eqds();
        let overhead = eqds.settings.overhead;
        let h = &mut eqds.hosts[host as usize];
        if h.timer_queued != now {
            // Superseded: an earlier timer was queued after this one, and every pump
            // since queued one for the earliest thing due. Nothing is due now.
            self.eqds = Some(eqds);
            return;
        }
        h.timer_queued = Time::MAX;
        h.rx.handle_pull_timeout(now);
        if now >= h.slow_due {
            h.tx.handle_timeout(now);
            h.rx.handle_timeout(now);
            while let Some(d) = h.rx.poll_deliver(now) {
                self.release(&mut eqds.delivered, d.payload, &eqds.tags, overhead);
            }
            // Handled: `pump` rescans.
            h.slow_due = Time::MAX;
        }
        self.pump(now, host, &mut eqds);
        self.eqds = Some(eqds);
    }

    /// Decapsulates a delivered wire packet for its transport.
    fn release(
        &mut self,
        delivered: &mut Vec<PacketId>,
        id: PacketId,
        tags: &encap::TagTable,
        overhead: u32,
    ) {
        let p = self.pkts.get_mut(id);
        let payload_len = p.size.saturating_sub(overhead) as usize;
        match tags.get(id, payload_len) {
            Ok((_, inner)) => {
                encap::decapsulate(p, inner, overhead);
                delivered.push(id);
            }
            // Decoded once already on arrival; cannot fail now.
            Err(_) => self.pkts.free(id),
        }
    }

    /// Puts on the wire the control packets the host's receiving EQIF released and
    /// what its sending EQIF releases while the NIC queue has room, wakes native
    /// writers that have room again, and re-arms the host's timer.
    fn pump(&mut self, now: Time, host: HostId, eqds: &mut EqdsLayer) {
        let overhead = eqds.settings.overhead;
        let port = self.net.host_port(host);
        let h = &mut eqds.hosts[host as usize];
        while let Some((peer, hdr)) = h.rx.poll_control(now) {
            let path = h.next_control_path;
            h.next_control_path = (path + 1) % eqds.settings.paths;
            let pkt = encap::header_packet(host, rx_peer_host(peer), overhead, path);
            let id = self.pkts.alloc(pkt);
            eqds.tags.set(id, &Header::Control(hdr), Default::default());
            eqds.counters.control_sent += 1;
            self.enqueue(now, port, id);
        }
        h.nic_wake = Time::MAX;
        let mut sent_data = false;
        loop {
            if self.net.queues[port as usize].backlog_packets() >= eqds.settings.nic_limit {
                h.nic_wake = self.net.ports[port as usize].busy_until.max(now);
                break;
            }
            let Some((_, tx)) = h.tx.poll_transmit(now) else {
                break;
            };
            let hdr = Header::Data(tx.header);
            let (pkt, inner) = match tx.payload {
                Some(inner_id) => {
                    let inner = self.pkts.get(inner_id);
                    eqds.counters.data_sent += 1;
                    sent_data = true;
                    (
                        encap::data_packet(inner, tx.wire_len, tx.header.path_id),
                        (inner.kind, inner.flags),
                    )
                }
                None => {
                    eqds.counters.rts_sent += 1;
                    let p = encap::header_packet(host, tx.dst, tx.wire_len, tx.header.path_id);
                    (p, Default::default())
                }
            };
            debug_assert!(tx.payload.is_some() || pkt.flow == NO_FLOW);
            let id = self.pkts.alloc(pkt);
            eqds.tags.set(id, &hdr, inner);
            self.enqueue(now, port, id);
        }
        if !h.blocked.is_empty() && (sent_data || h.blocked_new) {
            h.blocked_new = false;
            let half = eqds.settings.send_queue_bytes() / 2;
            let (tx, timers, events) = (&h.tx, &mut self.timers, &mut self.events);
            h.blocked.retain(|&(eqif, dst, ep)| {
                let room = tx.eqif(usize::from(eqif)).send_queue_bytes(dst) <= half;
                if room {
                    timers.set(ep, now, events);
                }
                !room
            });
        }
        let slack = eqds.settings.slow_slack();
        if now.saturating_add(slack) < h.slow_due {
            let scan = [h.tx.poll_timeout(), h.rx.poll_hole_timeout()]
                .into_iter()
                .flatten()
                .min();
            h.slow_due = scan.unwrap_or(now + slack);
        }
        let next =
            h.rx.poll_pull_timeout()
                .map_or(h.nic_wake, |t| t.min(h.nic_wake))
                .min(h.slow_due);
        if next != Time::MAX {
            let at = next.max(now);
            if at < h.timer_queued {
                h.timer_queued = at;
                self.events.push(at, Event::EqdsTimer { host });
            }
        }
    }
}
