//! The receiving EQIF joined up: per sending peer, the Appendix A tunnel state
//! machine ([`RxTunnel`]) and a reorder queue ([`ReorderQueue`]), next to the credit
//! scheduler ([`Receiver`]) that serves the whole access link (paper §5 and
//! Appendix A).
//!
//! [`ReceivingEqif::handle_data`] takes a DATA packet, trimmed header or RTS and:
//! 1. counts its demand in the credit scheduler (always: its sender spent credit on
//!    it, even if the packet is then dropped);
//! 2. runs it through the tunnel state machine, carrying out the actions: a SYN
//!    from a greater epoch releases the whole reorder queue out of order and resets
//!    it to the new ISN; data without SYN for an unknown tunnel is answered with an
//!    RST; a stale SYN is dropped and answered with a SYN-NACK advertising the
//!    current epoch;
//! 3. for an accepted packet, puts the payload into the reorder queue (unordered
//!    packets bypass it; duplicates are dropped but still ACKed, as their first ACK
//!    may have been lost) and queues the ACK, or NACK when trimmed, with SYN when the
//!    state machine says so. An RTS gets the credit scheduler's PULL answer, never
//!    with SYN: a PULL carries no sequence number that could name an epoch.
//!
//! Delivered packets come out of [`ReceivingEqif::poll_deliver`]; control packets
//! (ACK, NACK, RST, paced PULLs) out of [`ReceivingEqif::poll_control`].
//! [`ReceivingEqif::poll_timeout`] is the earliest of the PULL pacer and the reorder
//! queues' hole timers.
//!
//! # Choices
//!
//! - The stale-SYN answer (Appendix A's "SYN-ACK advertising its current epoch") is
//!   sent as a **SYN-NACK for the current ISN** \[choice\]. A sender in an older epoch
//!   only reads its epoch; a sender in the current epoch processes it, and a NACK
//!   at worst resends one packet, where an ACK for a sequence number never received
//!   would lose it.
//! - [`ReceivingEqif::drop_peer`] forgets the tunnel state and the reorder queue,
//!   not the credit state \[choice\]: pull numbers are cumulative and the sender keeps
//!   the serial maximum of those it saw, so restarting them from 0 would starve it.
//!   [`ReceivingEqif::forget_peer`] forgets the credit state too, for a caller that
//!   gives the peer's id to another host.
//!
//! # What a receiver state drop loses
//!
//! Packets held in the reorder queue were ACKed, so their sender will not resend
//! them: they are lost, and `drop_peer` hands them back so the caller can count and
//! free them. Packets already handed out (including those waiting in the
//! `poll_deliver` queue) are not affected. With no state left, a late duplicate of a
//! SYN packet of an old epoch re-establishes that epoch and is delivered, so after a
//! drop a packet of an initial window may be delivered twice (EQDS is a best-effort
//! datagram service; the paper accepts at-most-once only as long as state is kept).

use peer_map::PeerMap;
use std::collections::VecDeque;

use crate::receiver::{Receiver, ReceiverConfig};
use crate::reorder::{InsertOutcome, ReorderConfig, ReorderQueue};
use crate::sender::PeerId;
use crate::time::Time;
use crate::tunnel::{RxAction, RxConfig, RxEvent, RxState, RxTunnel};
use crate::wire::{isn_for_epoch, ControlHeader, ControlKind, DataHeader};

/// Configuration of a [`ReceivingEqif`].
#[derive(Debug, Clone, Default)]
pub struct ReceivingEqifConfig {
    /// The credit scheduler's parameters.
    pub credit: ReceiverConfig,
    /// The tunnel state machines' parameters.
    pub tunnel: RxConfig,
    /// Every reorder queue's parameters.
    pub reorder: ReorderConfig,
}

/// How a delivered packet left the tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryKind {
    /// Released in sequence order by the reorder queue.
    InOrder {
        /// Its sequence number.
        seq: u32,
    },
    /// Flagged unordered: it bypassed the reorder queue.
    Unordered {
        /// Its sequence number.
        seq: u32,
    },
    /// Released regardless of holes because a greater epoch re-established the
    /// tunnel (Appendix A).
    Released,
    /// Arrived after the reorder queue had skipped its hole: delivered out of order
    /// rather than dropped.
    Late {
        /// Its sequence number.
        seq: u32,
    },
}

/// A packet for the host, from [`ReceivingEqif::poll_deliver`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery<P> {
    /// The sending peer.
    pub src: PeerId,
    /// The receiving tunnel's epoch the packet belonged to.
    pub epoch: u32,
    /// How it was released.
    pub kind: DeliveryKind,
    /// The payload.
    pub payload: P,
}

/// Counters of the tunnel layer, for metrics and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EqifStats {
    /// Tunnels established from CLOSED.
    pub established: u64,
    /// Re-establishments by a greater epoch.
    pub reestablished: u64,
    /// Packets released out of order by a re-establishment.
    pub released: u64,
    /// RSTs sent.
    pub rst_sent: u64,
    /// Stale SYNs answered with the current epoch.
    pub stale_syns: u64,
    /// Duplicates dropped (and ACKed).
    pub duplicates: u64,
    /// Packets delivered late, out of order, after their hole had been skipped.
    pub late: u64,
    /// Runs of missing packets the reorder queues skipped, because the span would
    /// be exceeded or the hole timed out: reordering (or a loss) longer than the
    /// queue waits.
    pub holes_skipped: u64,
    /// Payloads held when a peer's state was dropped.
    pub lost_on_drop: u64,
    /// Most packets any one tunnel's reorder queue held behind a hole at once (the
    /// paper: under 10 in practice, §8.5).
    pub peak_reorder_held: u64,
}

/// One sending peer's tunnel state.
#[derive(Debug)]
struct PeerTunnel<P> {
    /// The Appendix A state machine.
    fsm: RxTunnel,
    /// Packets waiting for the holes before them.
    queue: ReorderQueue<P>,
}

/// A receiving EQIF: credit scheduler, tunnel state machines and reorder queues. See
/// the module documentation.
///
/// Fields are kept in this order (`repr(C)`): the credit scheduler's hot fields first (see
/// [`Receiver`]), configuration last.
#[derive(Debug)]
#[repr(C)]
pub struct ReceivingEqif<P> {
    /// The credit scheduler of the access link.
    credit: Receiver,
    /// Packets released and not yet handed out.
    deliveries: VecDeque<Delivery<P>>,
    /// Payloads of packets not delivered (trimmed headers, RTSs, duplicates, drops),
    /// handed back so the caller can recycle their buffers.
    discarded: Vec<P>,
    /// Tunnel state per sending peer; absent means CLOSED.
    tunnels: PeerMap<PeerTunnel<P>>,
    /// Counters.
    stats: EqifStats,
    /// Parameters.
    config: ReceivingEqifConfig,
}

impl<P> ReceivingEqif<P> {
    /// A receiving EQIF with no tunnels.
    ///
    /// # Panics
    ///
    /// As [`Receiver::new`].
    pub fn new(config: ReceivingEqifConfig) -> Self {
        Self {
            credit: Receiver::new(config.credit.clone()),
            config,
            tunnels: PeerMap::default(),
            deliveries: VecDeque::new(),
            discarded: Vec::new(),
            stats: EqifStats::default(),
        }
    }

    /// The credit scheduler (per-sender credit state, busy time).
    pub fn credit(&self) -> &Receiver {
        &self.credit
    }

    /// The credit scheduler, to set weights and classes.
    pub fn credit_mut(&mut self) -> &mut Receiver {
        &mut self.credit
    }

    /// The tunnel state for `src` (CLOSED when none is kept).
    pub fn tunnel_state(&self, src: PeerId) -> RxState {
        self.tunnels
            .get(src)
            .map_or(RxState::Closed, |t| t.fsm.state())
    }

    /// Packets held in `src`'s reorder queue, waiting for the holes before them.
    pub fn reorder_len(&self, src: PeerId) -> usize {
        self.tunnels.get(src).map_or(0, |t| t.queue.len())
    }

    /// Counters so far.
    pub fn stats(&self) -> EqifStats {
        self.stats
    }

    /// Handles a DATA packet, trimmed header or RTS from `src`. `payload` is the
    /// caller's handle for the packet, `payload_len` its inner length for the credit
    /// scheduler's counters. Afterwards drain [`ReceivingEqif::poll_deliver`],
    /// [`ReceivingEqif::poll_control`] and [`ReceivingEqif::poll_discarded`]: every
    /// payload comes back out of one of them or stays queued for reordering.
    pub fn handle_data(
        &mut self,
        now: Time,
        src: PeerId,
        header: &DataHeader,
        payload: P,
        payload_len: usize,
    ) {
        let answer = self.credit.account(now, src, header, payload_len);
        let Self {
            config,
            credit,
            tunnels,
            deliveries,
            discarded,
            stats,
        } = self;
        let t = tunnels.get_or_insert_with(src, || PeerTunnel {
            fsm: RxTunnel::new(config.tunnel),
            queue: ReorderQueue::new(config.reorder, 0),
        });
        let old_epoch = t.fsm.epoch();
        let event = RxEvent::Data {
            seq: header.seq,
            syn: header.syn,
            expected: t.queue.next_seq(),
            awaited: t.queue.awaits(header.seq),
        };
        let mut payload = Some(payload);
        // An in-order packet's ACK may be deferred [choice] once the reorder queue has
        // moved past it; anything else is answered at once.
        let mut in_order_ack = false;
        for action in t.fsm.handle(event) {
            match action {
                RxAction::ReleaseReorderQueue => {
                    let epoch = old_epoch.unwrap_or_default();
                    stats.reestablished += 1;
                    for payload in t.queue.release_all() {
                        stats.released += 1;
                        deliveries.push_back(Delivery {
                            src,
                            epoch,
                            kind: DeliveryKind::Released,
                            payload,
                        });
                    }
                }
                RxAction::ResetSequence { isn } => {
                    if old_epoch.is_none() {
                        stats.established += 1;
                    }
                    credit.cancel_deferred_ack(src);
                    t.queue.reset(isn);
                }
                RxAction::Accept { syn_ack } => {
                    let epoch = t.fsm.epoch().unwrap_or_default();
                    let ack = match answer {
                        ControlKind::Ack => match payload
                            .take()
                            .map(|p| t.queue.insert(now, header.seq, header.unordered, p))
                        {
                            Some(InsertOutcome::Queued) => true,
                            Some(InsertOutcome::Unordered(payload)) => {
                                deliveries.push_back(Delivery {
                                    src,
                                    epoch,
                                    kind: DeliveryKind::Unordered { seq: header.seq },
                                    payload,
                                });
                                true
                            }
                            Some(InsertOutcome::Late(payload)) => {
                                stats.late += 1;
                                deliveries.push_back(Delivery {
                                    src,
                                    epoch,
                                    kind: DeliveryKind::Late { seq: header.seq },
                                    payload,
                                });
                                true
                            }
                            Some(InsertOutcome::Duplicate(p)) => {
                                stats.duplicates += 1;
                                discarded.push(p);
                                true
                            }
                            // Not ACKed, so the sender resends it.
                            Some(InsertOutcome::Dropped(p)) => {
                                discarded.push(p);
                                false
                            }
                            None => false,
                        },
                        // A NACK for a trimmed header; the PULL answer to an RTS.
                        _ => true,
                    };
                    let in_order = answer == ControlKind::Ack
                        && !syn_ack
                        && !header.unordered
                        && header.seq == t.queue.next_seq();
                    if ack && in_order && credit.config().ack_coalesce > 1 {
                        in_order_ack = true;
                    } else if ack {
                        let syn = syn_ack && answer != ControlKind::Pull;
                        credit.queue_control(src, answer, header.seq, syn);
                    }
                }
                RxAction::SendSynAck { epoch } => {
                    stats.stale_syns += 1;
                    credit.queue_control(src, ControlKind::Nack, isn_for_epoch(epoch), true);
                }
                RxAction::SendRst => {
                    stats.rst_sent += 1;
                    credit.queue_control(src, ControlKind::Rst, header.seq, false);
                }
                RxAction::Drop | RxAction::FreeState => {}
            }
        }
        // Trimmed headers, RTSs and packets the state machine dropped.
        discarded.extend(payload);
        stats.holes_skipped += drain_in_order(src, t, now, deliveries);
        // What is left waits behind a hole: the reorder queue's real occupancy.
        stats.peak_reorder_held = stats.peak_reorder_held.max(t.queue.len() as u64);
        if in_order_ack {
            if t.queue.awaits_skipped() {
                // A cumulative ACK would cover the skipped packet, and the sender
                // would stop resending it.
                credit.queue_control(src, ControlKind::Ack, header.seq, false);
            } else {
                // Everything before the in-order point has arrived.
                credit.defer_ack(now, src, t.queue.next_seq().wrapping_sub(1));
            }
        }
    }

    /// The payload of a packet [`ReceivingEqif::handle_data`] did not deliver and
    /// will not (a trimmed header, an RTS, a duplicate, a drop), for the caller to
    /// free. Call until `None`.
    pub fn poll_discarded(&mut self) -> Option<P> {
        self.discarded.pop()
    }

    /// The next packet for the host: released in order, unordered, or released by a
    /// re-establishment. Call until `None`. Holes whose timeout passed are skipped by
    /// [`ReceivingEqif::handle_timeout`], not here: this costs O(1) whatever the
    /// number of peers.
    pub fn poll_deliver(&mut self, _now: Time) -> Option<Delivery<P>> {
        self.deliveries.pop_front()
    }

    /// The next control packet and its destination: ACK, NACK (either with SYN when
    /// the tunnel state machine says so), RST, or a paced PULL.
    pub fn poll_control(&mut self, now: Time) -> Option<(PeerId, ControlHeader)> {
        self.credit.poll_control(now)
    }

    /// The earliest time [`ReceivingEqif::handle_timeout`] has work: the next PULL or
    /// a reorder queue's head-hole timeout.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.poll_hole_timeout()
            .into_iter()
            .chain(self.credit.poll_timeout())
            .min()
    }

    /// The earliest reorder-queue hole timeout: the part of
    /// [`ReceivingEqif::poll_timeout`] that scans every peer.
    pub fn poll_hole_timeout(&self) -> Option<Time> {
        self.tunnels
            .values()
            .filter_map(|t| t.queue.poll_timeout())
            .min()
    }

    /// When the PULL pacer next has work, if any sender is owed a PULL: the cheap
    /// part of [`ReceivingEqif::poll_timeout`], which also scans every peer's reorder
    /// queue. A host with many peers can poll this on every packet and the full
    /// timeout only when a hole timer may be due (hole timers are set `hole_timeout`
    /// after the hole appears, never earlier).
    pub fn poll_pull_timeout(&self) -> Option<Time> {
        self.credit.poll_timeout()
    }

    /// Runs the PULL pacer only: [`ReceivingEqif::handle_timeout`] without the scan
    /// of the reorder queues. Then drain [`ReceivingEqif::poll_control`].
    pub fn handle_pull_timeout(&mut self, now: Time) {
        if self.credit.poll_timeout().is_some_and(|at| at <= now) {
            self.credit.handle_timeout(now);
        }
    }

    /// Runs the PULL pacer and skips timed-out holes; then drain
    /// [`ReceivingEqif::poll_control`] and [`ReceivingEqif::poll_deliver`].
    pub fn handle_timeout(&mut self, now: Time) {
        if self.credit.poll_timeout().is_some_and(|at| at <= now) {
            self.credit.handle_timeout(now);
        }
        self.release_timed_out(now);
    }

    /// Forgets the tunnel state of `src` unilaterally, without telling it (§5),
    /// and hands back the payloads its reorder queue held: ACKed, never to be resent,
    /// so lost. The credit state is kept (see the module documentation).
    pub fn drop_peer(&mut self, src: PeerId) -> Vec<P> {
        self.credit.cancel_deferred_ack(src);
        let Some(mut t) = self.tunnels.remove(src) else {
            return Vec::new();
        };
        let lost: Vec<P> = t.queue.release_all().collect();
        self.stats.lost_on_drop += lost.len() as u64;
        lost
    }

    /// Forgets everything kept for `src`: what [`ReceivingEqif::drop_peer`] drops,
    /// its packets released but not yet polled from [`ReceivingEqif::poll_deliver`],
    /// and its credit state ([`Receiver::forget`]). Hands back the payloads held,
    /// which are lost (counted in `lost_on_drop`). Nothing is sent to `src`.
    ///
    /// For a caller that reuses peer ids: after this, the next packet under the id
    /// `src` is a new sender's, with no tunnel, reorder queue, credit, ACK owed or
    /// place in the active sender list inherited. A delivery left queued would carry
    /// `src` and be taken for the new sender's.
    pub fn forget_peer(&mut self, src: PeerId) -> Vec<P> {
        let mut lost = self.drop_peer(src);
        let before = lost.len();
        let mut kept = VecDeque::with_capacity(self.deliveries.len());
        for d in self.deliveries.drain(..) {
            if d.src == src {
                lost.push(d.payload);
            } else {
                kept.push_back(d);
            }
        }
        self.deliveries = kept;
        self.stats.lost_on_drop += (lost.len() - before) as u64;
        self.credit.forget(src);
        lost
    }

    /// Closes the tunnel of `src` (admin command, memory pressure, idle): like
    /// [`ReceivingEqif::drop_peer`], but an RST tells the sender (Appendix A).
    pub fn close_peer(&mut self, src: PeerId) -> Vec<P> {
        let Some(t) = self.tunnels.get_mut(src) else {
            return Vec::new();
        };
        if t.fsm.handle(RxEvent::Close).contains(&RxAction::SendRst) {
            self.stats.rst_sent += 1;
            // The in-order point lies in the current epoch, so the sender takes the
            // RST as current rather than stale.
            let seq = t.queue.next_seq();
            self.credit.queue_control(src, ControlKind::Rst, seq, false);
        }
        self.drop_peer(src)
    }

    /// The fields [`ReceivingEqif::hot_state`] reads (see [`crate::host::Host::hot_fields`]).
    pub(crate) fn hot_fields(&self, visit: &mut impl FnMut(*const u8)) {
        self.credit.hot_fields(visit);
        visit((&raw const self.deliveries).cast());
        visit((&raw const self.discarded).cast());
        visit((&raw const self.tunnels).cast());
    }

    /// The addresses of the state beside the EQIF that most events read: the
    /// credit scheduler's (see `Receiver::hot_state`), the delivery and discard
    /// queues, and the first sending peer's tunnel state machine and reorder queue.
    pub(crate) fn hot_state(&self, visit: &mut impl FnMut(*const u8)) {
        self.credit.hot_state(visit);
        visit(self.deliveries.as_slices().0.as_ptr().cast());
        visit(self.discarded.as_ptr().cast());
        if let Some(t) = self.tunnels.first_value_address() {
            let p: *const u8 = t.cast();
            for line in 0..std::mem::size_of::<PeerTunnel<P>>().div_ceil(64) {
                visit(p.wrapping_add(64 * line));
            }
        }
    }

    /// Hands out what the hole timers let through at `now`.
    fn release_timed_out(&mut self, now: Time) {
        for (src, t) in self.tunnels.iter_mut() {
            if t.queue.poll_timeout().is_some_and(|at| at <= now) {
                self.stats.holes_skipped += drain_in_order(src, t, now, &mut self.deliveries);
            }
        }
    }
}

/// Moves what the reorder queue releases in order at `now` to the delivery queue.
/// Returns how many holes the queue skipped meanwhile.
fn drain_in_order<P>(
    src: PeerId,
    t: &mut PeerTunnel<P>,
    now: Time,
    deliveries: &mut VecDeque<Delivery<P>>,
) -> u64 {
    let skips = |t: &PeerTunnel<P>| {
        let s = t.queue.stats();
        s.holes_skipped_bound + s.holes_skipped_timeout
    };
    let Some(epoch) = t.fsm.epoch() else {
        return 0;
    };
    let before = skips(t);
    while let Some(payload) = t.queue.poll_deliver(now) {
        // The in-order point moved just past the released packet.
        let seq = t.queue.next_seq().wrapping_sub(1);
        deliveries.push_back(Delivery {
            src,
            epoch,
            kind: DeliveryKind::InOrder { seq },
            payload,
        });
    }
    skips(t) - before
}

mod peer_map;
#[cfg(test)]
mod tests;
