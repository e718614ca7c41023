//! The last-hop re-sequencer of Blitz's IOFD (Xue et al., SIGCOMM'18 poster, §2:
//! "Because RDMA does not support packet reordering, Blitz provides hardware support
//! in the switch to keep a flow's packets in order").
//!
//! Holding a moving flow at the deflecting switch (`net::iofd`, `InOrder::Hold`)
//! keeps it in order *there*, but the old and the new path go through different
//! queues downstream, and a packet on the shorter one overtakes (measured:
//! `docs/blitz-iofd.md`). No local rule can know those queues. All of a flow's paths
//! meet again at one place, the switch whose port faces the destination host, so
//! that is where order is restored: that switch keeps, per flow, the next packet
//! sequence number (PSN) it expects, forwards a packet carrying it (and then every
//! held packet it unblocks), holds a packet from further ahead, and passes an older
//! one (a go-back-N resend) straight on.
//!
//! - **Which packets.** RoCE data packets (`flags::PSN`: their `seq` counts packets
//!   from 0 per flow), which are what cannot take reordering. TCP's sequence numbers
//!   count bytes from an offset the switch cannot know, and TCP copes with reordering;
//!   it passes.
//! - **Buffer.** A held packet is in the switch like any other: with PFC it is
//!   charged to its ingress on arrival, so holding pushes back on the link it came
//!   through (released into the port's queue without a second charge). At most
//!   `buffer_bytes` are held per switch; a packet that would overflow that ends
//!   its flow's wait (everything held for it goes out in order now). Charging
//!   holds to PFC can in principle pause the link a missing predecessor must come
//!   through; the timeout below ends such a wait, counted.
//! - **Gaps that never fill.** In a lossy fabric the missing packet may be gone; its
//!   flow's held packets go out in order `timeout` after the gap opened, and the
//!   receiver's go-back-N recovers as it would have.
//! - **Duplicates.** A packet whose PSN is already held is a resend of it: the held
//!   copy is delivered, the duplicate is dropped and counted.
//! - **Forgetting.** A flow's entry is dropped when the flow completes.

use crate::engine::Event;
use crate::ids::{FlowId, IdHasher, PacketId, PortId, SwitchId};
use crate::net::packet::{flags, Packet, PacketKind};
use crate::net::port::PortCtx;
use crate::net::Network;
use crate::units::Time;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// The re-sequencer as the scenario configures it (`[iofd] resequence`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResequencerSettings {
    /// A gap not filled after this long is given up.
    pub timeout: Time,
    /// Bytes one switch may hold.
    pub buffer_bytes: u64,
}

/// A packet waiting for its predecessors.
#[derive(Clone, Copy, Debug)]
pub struct Held {
    pub seq: u64,
    pub pkt: PacketId,
    pub port: PortId,
    size: u32,
    since: Time,
}

/// What one last-hop switch knows about one flow.
#[derive(Debug)]
struct Entry {
    switch: SwitchId,
    /// The PSN the switch forwards next.
    next: u64,
    /// Held packets, in PSN order.
    held: Vec<Held>,
    /// When the oldest open gap opened (meaningful with `held` non-empty).
    gap_since: Time,
}

/// Run totals for `summary.json` (`iofd.resequencer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResequencerCounters {
    /// Packets that arrived ahead of a predecessor and waited.
    pub held_packets: u64,
    /// Held packets released because their gap filled.
    pub released_in_order: u64,
    /// Gaps given up after `timeout` (their packets left out of order).
    pub timeouts: u64,
    /// Gaps given up because the buffer was full.
    pub overflows: u64,
    /// Packets released by a timeout or an overflow.
    pub released_early: u64,
    /// Resends of a packet already held, dropped.
    pub duplicates_dropped: u64,
    /// Most bytes any one switch held at once.
    pub peak_held_bytes: u64,
    /// Longest a released packet waited (ps).
    pub max_wait_ps: u64,
}

/// What to do with an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Forward it now; if `unblocked`, then release the flow's [`Resequencer::ready`]
    /// packets after it.
    Forward { unblocked: bool },
    /// It waits; schedule the flow's timeout check at this time, if given.
    Held { check_at: Option<Time> },
    /// It waits, but the buffer was full: release the flow's
    /// [`Resequencer::give_up`] packets now.
    Overflow,
    /// A resend of a held packet: free it.
    Duplicate,
}

type Map = HashMap<FlowId, Entry, BuildHasherDefault<IdHasher>>;

/// The re-sequencers of every last-hop switch of a run.
pub struct Resequencer {
    pub settings: ResequencerSettings,
    flows: Map,
    /// Bytes held, per switch.
    held_bytes: Vec<u64>,
    pub counters: ResequencerCounters,
}

impl Resequencer {
    pub fn new(settings: ResequencerSettings, n_switches: usize) -> Resequencer {
        Resequencer {
            settings,
            flows: Map::default(),
            held_bytes: vec![0; n_switches],
            counters: ResequencerCounters::default(),
        }
    }

    /// Whether `p` is re-sequenced: a RoCE data packet, not a returned header.
    #[inline]
    pub fn applies(p: &Packet) -> bool {
        p.kind == PacketKind::Data
            && p.flags & flags::PSN != 0
            && p.flags & (flags::RETURNED | flags::EQDS) == 0
    }

    /// Packet `pkt` (`p`) arrived at `sw`, the last switch before its host, for
    /// `port`.
    pub fn arrive(
        &mut self,
        sw: SwitchId,
        p: &Packet,
        pkt: PacketId,
        port: PortId,
        now: Time,
    ) -> Arrival {
        let e = self.flows.entry(p.flow).or_insert(Entry {
            switch: sw,
            next: 0,
            held: Vec::new(),
            gap_since: now,
        });
        if p.seq < e.next {
            return Arrival::Forward { unblocked: false }; // a resend of a delivered one
        }
        if p.seq == e.next {
            e.next += 1;
            let unblocked = e.held.first().is_some_and(|h| h.seq == e.next);
            return Arrival::Forward { unblocked };
        }
        let at = match e.held.binary_search_by_key(&p.seq, |h| h.seq) {
            Ok(_) => {
                self.counters.duplicates_dropped += 1;
                return Arrival::Duplicate;
            }
            Err(at) => at,
        };
        let first = e.held.is_empty();
        e.held.insert(
            at,
            Held {
                seq: p.seq,
                pkt,
                port,
                size: p.size,
                since: now,
            },
        );
        self.counters.held_packets += 1;
        let bytes = &mut self.held_bytes[sw as usize];
        *bytes += u64::from(p.size);
        self.counters.peak_held_bytes = self.counters.peak_held_bytes.max(*bytes);
        if *bytes > self.settings.buffer_bytes {
            self.counters.overflows += 1;
            return Arrival::Overflow;
        }
        if first {
            e.gap_since = now;
            return Arrival::Held {
                check_at: Some(now + self.settings.timeout),
            };
        }
        Arrival::Held { check_at: None }
    }

    /// Whether a packet of `flow` with PSN `seq` is held already (an arrival of it is
    /// a resend, dropped).
    pub fn holds(&self, flow: FlowId, seq: u64) -> bool {
        self.flows
            .get(&flow)
            .is_some_and(|e| e.held.binary_search_by_key(&seq, |h| h.seq).is_ok())
    }

    /// After a forwarded packet unblocked `flow`: its held packets that are now in
    /// sequence, appended to `out` in order. Returns when to check the gap that
    /// remains open, if one does and it is new.
    pub fn ready(&mut self, flow: FlowId, now: Time, out: &mut Vec<Held>) -> Option<Time> {
        let e = self.flows.get_mut(&flow)?;
        let n = e
            .held
            .iter()
            .zip(e.next..)
            .take_while(|(h, s)| h.seq == *s)
            .count();
        e.next += n as u64;
        self.counters.released_in_order += n as u64;
        let c = &mut self.counters;
        let bytes = &mut self.held_bytes[e.switch as usize];
        for h in e.held.drain(..n) {
            *bytes -= u64::from(h.size);
            c.max_wait_ps = c.max_wait_ps.max(now - h.since);
            out.push(h);
        }
        if n > 0 && !e.held.is_empty() {
            e.gap_since = now;
            return Some(now + self.settings.timeout);
        }
        None
    }

    /// The timeout check of `flow`: if its oldest gap has been open `timeout`, every
    /// held packet goes to `out` (in order) and `None` is returned; if a younger gap
    /// is open, when to check again.
    pub fn check(&mut self, flow: FlowId, now: Time, out: &mut Vec<Held>) -> Option<Time> {
        let e = self.flows.get(&flow)?;
        if e.held.is_empty() {
            return None;
        }
        let due = e.gap_since + self.settings.timeout;
        if now < due {
            return Some(due);
        }
        self.counters.timeouts += 1;
        self.give_up(flow, now, out);
        None
    }

    /// Stops waiting for `flow`'s missing packets: everything held for it goes to
    /// `out`, in order, and it expects the PSN after the last.
    pub fn give_up(&mut self, flow: FlowId, now: Time, out: &mut Vec<Held>) {
        let Some(e) = self.flows.get_mut(&flow) else {
            return;
        };
        if let Some(last) = e.held.last() {
            e.next = last.seq + 1;
        }
        let c = &mut self.counters;
        c.released_early += e.held.len() as u64;
        let bytes = &mut self.held_bytes[e.switch as usize];
        for h in e.held.drain(..) {
            *bytes -= u64::from(h.size);
            c.max_wait_ps = c.max_wait_ps.max(now - h.since);
            out.push(h);
        }
    }

    /// `flow` completed: its entry goes, unless packets still wait in it (their
    /// timeout will release them).
    pub fn forget(&mut self, flow: FlowId) {
        if self.flows.get(&flow).is_some_and(|e| e.held.is_empty()) {
            self.flows.remove(&flow);
        }
    }

    /// Flows with an entry now.
    pub fn flows(&self) -> usize {
        self.flows.len()
    }
}

impl Network {
    /// A RoCE data packet `pkt` reached `sw`, the last switch before its host, with
    /// the re-sequencer on: forwarded to `port` (with what it unblocks) or held.
    #[cold]
    #[inline(never)]
    pub(crate) fn resequence(
        &mut self,
        sw: SwitchId,
        pkt: PacketId,
        port: PortId,
        ingress: Option<PortId>,
        ctx: &mut PortCtx,
    ) {
        let (r, _) = self.resequencer_parts();
        let p = ctx.pkts.get(pkt);
        if r.holds(p.flow, p.seq) {
            r.counters.duplicates_dropped += 1;
            return ctx.pkts.free(pkt);
        }
        // In the switch now, held or not: charged to its ingress for PFC.
        if let Some(i) = ingress {
            if !self.pfc_charge(port, pkt, i, ctx) {
                return; // dropped (and counted) by PFC: a gap the timeout covers
            }
        }
        let (r, released) = self.resequencer_parts();
        let mut out = std::mem::take(released);
        let p = ctx.pkts.get(pkt);
        let flow = p.flow;
        match r.arrive(sw, p, pkt, port, ctx.now) {
            Arrival::Forward { unblocked } => {
                let check = if unblocked {
                    r.ready(flow, ctx.now, &mut out)
                } else {
                    None
                };
                if let Some(at) = check {
                    ctx.events.push(at, Event::IofdGapCheck { flow });
                }
                self.pfc_offer(port, pkt, ctx);
                self.after_transmit(port, ctx);
            }
            Arrival::Held { check_at } => {
                if let Some(at) = check_at {
                    ctx.events.push(at, Event::IofdGapCheck { flow });
                }
            }
            Arrival::Overflow => r.give_up(flow, ctx.now, &mut out),
            Arrival::Duplicate => unreachable!("resends of held packets are dropped above"),
        }
        self.release_held(out, ctx);
    }

    /// IOFD's re-sequencer and its buffer of released packets (only called with
    /// both on).
    fn resequencer_parts(&mut self) -> (&mut Resequencer, &mut Vec<Held>) {
        let iofd = self.iofd.as_deref_mut().expect("called with IOFD on");
        let r = iofd
            .resequencer
            .as_mut()
            .expect("called with the re-sequencer on");
        (r, &mut iofd.released)
    }

    /// A gap of `flow` may have waited its timeout (`Event::IofdGapCheck`).
    pub fn resequencer_check(&mut self, flow: FlowId, ctx: &mut PortCtx) {
        let Some(iofd) = self.iofd.as_deref_mut() else {
            return;
        };
        let Some(r) = iofd.resequencer.as_mut() else {
            return;
        };
        let mut out = std::mem::take(&mut iofd.released);
        if let Some(at) = r.check(flow, ctx.now, &mut out) {
            ctx.events.push(at, Event::IofdGapCheck { flow });
        }
        self.release_held(out, ctx);
    }

    /// `flow` completed: the re-sequencer forgets it.
    pub fn resequencer_forget(&mut self, flow: FlowId) {
        if let Some(r) = self
            .iofd
            .as_deref_mut()
            .and_then(|i| i.resequencer.as_mut())
        {
            r.forget(flow);
        }
    }

    /// Offers released packets (charged on arrival) in order and hands the buffer
    /// back.
    fn release_held(&mut self, mut out: Vec<Held>, ctx: &mut PortCtx) {
        for h in out.drain(..) {
            self.pfc_offer(h.port, h.pkt, ctx);
            self.after_transmit(h.port, ctx);
        }
        if let Some(iofd) = self.iofd.as_deref_mut() {
            iofd.released = out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::US;

    fn packet(seq: u64) -> Packet {
        Packet {
            flow: 3,
            size: 1000,
            seq,
            flags: flags::PSN,
            ..Default::default()
        }
    }

    fn reseq(buffer_bytes: u64) -> Resequencer {
        Resequencer::new(
            ResequencerSettings {
                timeout: 100 * US,
                buffer_bytes,
            },
            1,
        )
    }

    /// Feeds PSNs in arrival order; returns the PSNs in the order they leave.
    fn run(r: &mut Resequencer, arrivals: &[u64]) -> Vec<u64> {
        let mut left = Vec::new();
        let mut out = Vec::new();
        for (i, &seq) in arrivals.iter().enumerate() {
            let now = i as Time * US;
            match r.arrive(0, &packet(seq), i as PacketId, 9, now) {
                Arrival::Forward { unblocked } => {
                    left.push(seq);
                    if unblocked {
                        r.ready(3, now, &mut out);
                    }
                }
                Arrival::Overflow => r.give_up(3, now, &mut out),
                Arrival::Held { .. } | Arrival::Duplicate => {}
            }
            left.extend(out.drain(..).map(|h| h.seq));
        }
        left
    }

    #[test]
    fn overtaking_packets_wait_for_their_predecessors() {
        let mut r = reseq(1 << 20);
        assert_eq!(run(&mut r, &[0, 3, 4, 1, 2, 5]), vec![0, 1, 2, 3, 4, 5]);
        let c = r.counters;
        assert_eq!((c.held_packets, c.released_in_order), (2, 2));
        assert_eq!(c.peak_held_bytes, 2000);
        assert_eq!(c.max_wait_ps, 3 * US);
    }

    #[test]
    fn the_first_packet_of_a_flow_may_be_overtaken_too() {
        let mut r = reseq(1 << 20);
        assert_eq!(run(&mut r, &[2, 1, 0, 3]), vec![0, 1, 2, 3]);
    }

    #[test]
    fn resends_pass_and_duplicates_of_held_packets_are_dropped() {
        let mut r = reseq(1 << 20);
        // 0-2 delivered; go-back-N resends 1 (passes); 4 held, its resend dropped.
        assert_eq!(run(&mut r, &[0, 1, 2, 1, 4, 4, 3]), vec![0, 1, 2, 1, 3, 4]);
        assert_eq!(r.counters.duplicates_dropped, 1);
    }

    #[test]
    fn a_gap_that_never_fills_is_given_up_after_the_timeout() {
        let mut r = reseq(1 << 20);
        let mut out = Vec::new();
        let p = |s| packet(s);
        assert_eq!(
            r.arrive(0, &p(1), 1, 9, 0),
            Arrival::Held {
                check_at: Some(100 * US)
            }
        );
        assert_eq!(
            r.arrive(0, &p(2), 2, 9, 50 * US),
            Arrival::Held { check_at: None }
        );
        assert_eq!(r.check(3, 100 * US, &mut out), None);
        assert_eq!(out.iter().map(|h| h.seq).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!((r.counters.timeouts, r.counters.released_early), (1, 2));
        // The flow now expects 3; a late 0 passes.
        assert_eq!(
            r.arrive(0, &p(0), 0, 9, 120 * US),
            Arrival::Forward { unblocked: false }
        );
        assert_eq!(
            r.arrive(0, &p(3), 3, 9, 121 * US),
            Arrival::Forward { unblocked: false }
        );
    }

    #[test]
    fn a_check_before_the_gap_is_due_asks_to_come_back() {
        let mut r = reseq(1 << 20);
        let mut out = Vec::new();
        r.arrive(0, &packet(2), 2, 9, 0);
        r.arrive(0, &packet(0), 0, 9, 10 * US);
        // 0 fills nothing (1 is missing): the gap is still the first one.
        assert_eq!(r.ready(3, 10 * US, &mut out), None);
        r.arrive(0, &packet(1), 1, 9, 20 * US);
        r.ready(3, 20 * US, &mut out);
        assert_eq!(out.iter().map(|h| h.seq).collect::<Vec<_>>(), vec![2]);
        // Nothing held: the stale check does nothing.
        out.clear();
        assert_eq!(r.check(3, 100 * US, &mut out), None);
        assert!(out.is_empty());
        // A new gap opened at 30 us is checked at 130, not at 100.
        r.arrive(0, &packet(4), 4, 9, 30 * US);
        assert_eq!(r.check(3, 100 * US, &mut out), Some(130 * US));
    }

    #[test]
    fn a_full_buffer_gives_up_the_wait() {
        let mut r = reseq(2500);
        assert_eq!(run(&mut r, &[0, 2, 3, 4, 1, 5]), vec![0, 2, 3, 4, 1, 5]);
        assert_eq!(r.counters.overflows, 1);
    }

    #[test]
    fn other_packets_do_not_apply() {
        let mut p = packet(0);
        assert!(Resequencer::applies(&p));
        p.flags = flags::ECT;
        assert!(!Resequencer::applies(&p), "TCP data counts bytes");
        p.flags = flags::PSN | flags::RETURNED;
        assert!(!Resequencer::applies(&p));
        p.flags = flags::PSN;
        p.kind = PacketKind::Ack;
        assert!(!Resequencer::applies(&p));
    }
}
