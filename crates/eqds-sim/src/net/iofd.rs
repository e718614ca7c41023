//! IOFD, Blitz's in-order flow deflection (Xue et al., SIGCOMM'18 poster, §2): a switch
//! whose ECMP-chosen port is congested moves the packet's flow to a less-loaded
//! equal-cost port, but only when that cannot reorder the flow.
//!
//! The poster states the intent ("Blitz simply deflects the affected packets under the
//! premise that an alternate path is faster than being queued up in the shortest
//! path"; "allows only a few deflections for a packet"; "provides hardware support in
//! the switch to keep a flow's packets in order") and leaves the mechanism open. What
//! is built here, and why (each choice is in `docs/blitz-iofd.md` with the sentence
//! it implements):
//!
//! - **Flows, not packets, move.** Each switch keeps a small table of the flows it
//!   forwards on ports that have equal-cost alternatives: the port the flow uses
//!   now, how many of its packets wait at this switch, and when its last one left.
//!   A packet follows its flow's entry; a flow without an entry uses its ECMP port.
//! - **When a flow moves.** Its port's backlog is above `threshold` bytes, some other
//!   port of the same equal-cost group is at or below it (the least loaded is
//!   taken), and the packet's deflection budget is not spent. Otherwise the packet
//!   is queued where its flow goes and the port's own discipline marks it: with
//!   every alternative congested this is DCQCN's fallback for dispersed congestion
//!   (poster: "Blitz falls back on DCQCN's throttling").
//! - **The in-order rule**, one of two ([`InOrder`]). `Refuse`: the flow moves only
//!   if none of its packets waits at this switch and the last one left at least
//!   `move_gap` ago (a flowlet gap: the old path's downstream queues may still hold
//!   it). `Hold` (the default): the flow moves at once, and its packets that arrive
//!   while any of its packets still waits on the old port are held back at the
//!   switch (still charged to PFC's ingress counters: they occupy its buffer) and
//!   released to the new port, in order, `move_gap` after the last old one has
//!   been serialised. Under a standing queue a line-rate flow always has a packet
//!   in it, so `Refuse` almost never lets it move (measured: `docs/blitz-iofd.md`);
//!   `Hold` is the switch "hardware support to keep a flow's packets in order".
//! - **Pins.** A moved flow stays on its new port until it moves again or goes idle
//!   for `idle_timeout` (then, with the same in-order rule, its entry is forgotten
//!   and it is back on ECMP).
//! - **Minimal paths only.** Deflection chooses among a switch's equal-cost ports
//!   (the uplinks, or a `clos3` spine's parallel down ports), so every path stays an
//!   up*/down* path: the channel dependency graph of up/down routing has no cycle
//!   whichever minimal port is taken, and no virtual channels (the poster's Duato
//!   scheme, spec Q10) are needed. Non-minimal detours (up again on the way down)
//!   are not built.
//! - **Budget.** A data packet counts the switches that sent it off its ECMP port in
//!   its `ce_bytes` field, which only ACKs use (`Packet` stays one cache line); a
//!   packet whose count reached `max_deflections` cannot move its flow. It still
//!   follows its flow's pin: order comes first. With minimal deflection a packet
//!   meets at most one choice per up tier (and one at a `clos3` spine), so livelock
//!   is impossible anyway; the budget bounds how many switches override ECMP.
//!
//! Only data packets are steered (not ACKs, CNPs, returned headers or EQDS wire
//! packets). Counting is conservative: a packet that leaves a switch without being
//! transmitted (a watchdog flush, a headroom drop) is never uncounted, which can only
//! stop its flow from moving, never reorder it.

use crate::engine::Event;
use crate::ids::{FlowId, IdHasher, Node, PacketId, PortId, SwitchId};
use crate::net::packet::{flags, Packet, PacketKind};
use crate::net::port::{pfc_flags, PortCtx};
use crate::net::queue::DynQueue;
use crate::net::resequencer::{Held, Resequencer, ResequencerSettings};
use crate::net::Network;
use crate::units::Time;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;

/// How a switch keeps a moving flow in order (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InOrder {
    /// Move only a flow with nothing queued here and a quiet `move_gap`.
    Refuse,
    /// Move at once; hold the flow's new packets until the old ones have gone.
    Hold,
}

/// IOFD as the scenario configures it (`[iofd]`), resolved against the network.
#[derive(Clone, Debug, PartialEq)]
pub struct IofdSettings {
    pub in_order: InOrder,
    /// A port is congested when its backlog is above this many bytes.
    pub threshold_bytes: u64,
    /// Switches that may send one packet off its ECMP port (D_MAX).
    pub max_deflections: u32,
    /// A flow moves only if its last packet left this switch at least this long ago.
    pub move_gap: Time,
    /// A flow not seen for this long (and with nothing queued) is forgotten.
    pub idle_timeout: Time,
    /// Bit `t` set: ports of tier `t` (`Network::tier_names`) deflect.
    pub tiers: u64,
    /// The last-hop re-sequencer, if on (`net::resequencer`).
    pub resequence: Option<ResequencerSettings>,
}

/// An equal-cost group a port belongs to: ports `first .. first + n`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Group {
    first: PortId,
    /// 0: the port does not deflect (no alternative, or its tier is off).
    n: u32,
}

/// What one switch knows about a flow it forwards on a deflecting port.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// The port the flow's packets take now.
    port: PortId,
    /// Its packets offered to `port` and not yet transmitted.
    queued: u32,
    /// The port it moved off, and its packets still waiting there (`Hold`).
    old_port: PortId,
    draining: u32,
    /// A release of held packets is scheduled (`Hold`).
    releasing: bool,
    /// When its last packet left (started transmission), if one has.
    last_left: Option<Time>,
    /// When its last packet arrived.
    last_seen: Time,
}

type FlowMap = HashMap<FlowId, Entry, BuildHasherDefault<IdHasher>>;
type HeldMap = HashMap<(SwitchId, FlowId), VecDeque<PacketId>, BuildHasherDefault<IdHasher>>;

/// One switch's flow table.
#[derive(Default)]
struct Table {
    flows: FlowMap,
    /// Size at which idle entries are next swept out.
    sweep_at: usize,
    max_len: usize,
}

/// Per-port counters for `ports.csv`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortIofdStats {
    /// Flows moved off this port (it was congested).
    pub moves_out: u64,
    /// Flows moved onto this port (the least-loaded alternative).
    pub moves_in: u64,
    /// Data packets sent on this port although ECMP chose another.
    pub deflected_packets: u64,
}

/// Run totals for `summary.json`. A packet that finds its flow's port congested
/// either moves the flow or is counted under exactly one refusal, checked in this
/// order: no alternative, budget, in-order rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IofdCounters {
    /// Flows moved to another port.
    pub moves: u64,
    /// Every alternative was congested too (dispersed congestion: DCQCN's case).
    pub refused_no_alternative: u64,
    /// The packet had been deflected `max_deflections` times already.
    pub budget_exhausted: u64,
    /// `Refuse`: the flow had packets queued at the switch, or its last one left
    /// less than `move_gap` ago. `Hold`: the flow was still moving (its packets were
    /// held).
    pub refused_in_order: u64,
    /// `Hold`: packets held back while their flow's old packets drained.
    pub held_packets: u64,
    /// Data packets sent off their ECMP port (moved or following a pin).
    pub deflected_packets: u64,
    /// Pinned flows that went idle and went back to their ECMP port.
    pub pins_expired: u64,
}

/// IOFD state of a whole run.
pub struct Iofd {
    pub settings: IofdSettings,
    /// Per port.
    groups: Vec<Group>,
    /// Per switch.
    tables: Vec<Table>,
    /// Packets held back, per (switch, flow), in arrival order.
    held: HeldMap,
    pub port_stats: Vec<PortIofdStats>,
    pub counters: IofdCounters,
    /// Restores each RoCE flow's order where its paths meet again.
    pub resequencer: Option<Resequencer>,
    /// Packets the re-sequencer releases, reused between calls.
    pub(crate) released: Vec<Held>,
}

/// Entries a table holds before its first sweep.
const FIRST_SWEEP: usize = 64;

impl Iofd {
    /// IOFD for `net`: which ports deflect. Errors name the `[iofd]` key (`tiers`:
    /// a tier that has no alternatives).
    pub fn new(settings: IofdSettings, net: &Network) -> Result<Iofd, String> {
        let mut groups = vec![Group::default(); net.ports.len()];
        let mut has_choice = 0u64;
        for sw in &net.switches {
            let mut mark = |first: PortId, n: u32| {
                for p in first..first + n {
                    let tier = net.ports[p as usize].tier;
                    has_choice |= 1 << tier;
                    if settings.tiers & (1 << tier) != 0 {
                        groups[p as usize] = Group { first, n };
                    }
                }
            };
            if sw.n_up > 1 {
                mark(sw.first_up, sw.n_up);
            }
            if sw.down_width > 1 {
                for g in 0..sw.n_down / sw.down_width {
                    mark(sw.first_down + g * sw.down_width, sw.down_width);
                }
            }
        }
        if has_choice == 0 {
            return Err(
                "enabled: this topology has no switch with equal-cost ports to deflect \
                 between"
                    .into(),
            );
        }
        let without = settings.tiers & !has_choice;
        if without != 0 {
            let t = without.trailing_zeros() as usize;
            let name = net.tier_names.get(t).copied().unwrap_or("?");
            return Err(format!(
                "tiers: `{name}` ports have no equal-cost alternative to deflect to \
                 (tiers that have: {})",
                tier_list(net, has_choice)
            ));
        }
        let resequencer = settings
            .resequence
            .map(|r| Resequencer::new(r, net.switches.len()));
        Ok(Iofd {
            settings,
            groups,
            tables: (0..net.switches.len()).map(|_| Table::default()).collect(),
            held: HeldMap::default(),
            port_stats: vec![PortIofdStats::default(); net.ports.len()],
            counters: IofdCounters::default(),
            resequencer,
            released: Vec::new(),
        })
    }

    /// Tiers whose ports have equal-cost alternatives (the default of `iofd.tiers`).
    pub fn choice_tiers(net: &Network) -> u64 {
        let mut bits = 0u64;
        for sw in &net.switches {
            if sw.n_up > 1 {
                bits |= 1 << net.ports[sw.first_up as usize].tier;
            }
            if sw.down_width > 1 {
                bits |= 1 << net.ports[sw.first_down as usize].tier;
            }
        }
        bits
    }

    /// Whether packets routed to `port` may be deflected (and are counted).
    #[inline]
    pub fn deflects(&self, port: PortId) -> bool {
        self.groups[port as usize].n > 1
    }

    /// The largest flow table any switch held.
    pub fn max_table_len(&self) -> usize {
        self.tables.iter().map(|t| t.max_len).max().unwrap_or(0)
    }

    /// Whether `p` is steered: data, not a returned header, not an EQDS wire packet.
    #[inline]
    fn steered(p: &Packet) -> bool {
        p.kind == PacketKind::Data && p.flags & (flags::RETURNED | flags::EQDS) == 0
    }

    /// Whether nothing of the flow is on its way out of this switch: none of its
    /// packets waits on any port or is held, and the last one left `gap` ago.
    #[inline]
    fn settled(e: &Entry, now: Time, gap: Time) -> bool {
        e.queued == 0
            && e.draining == 0
            && !e.releasing
            && e.last_left.is_none_or(|t| now.saturating_sub(t) >= gap)
    }

    fn idle(e: &Entry, now: Time, s: &IofdSettings) -> bool {
        now.saturating_sub(e.last_seen) >= s.idle_timeout && Self::settled(e, now, s.move_gap)
    }

    /// Where data packet `p`, arriving at switch `sw` with ECMP port `ecmp` (a
    /// deflecting port), goes: its flow's port, moved first if that is congested and
    /// the rules allow. A packet forwarded is counted as queued there; a held one
    /// waits for [`Network::iofd_release`].
    pub fn steer(
        &mut self,
        queues: &[Box<DynQueue>],
        sw: SwitchId,
        ecmp: PortId,
        p: &mut Packet,
        now: Time,
    ) -> Steer {
        let s = &self.settings;
        let table = &mut self.tables[sw as usize];
        if table.flows.len() >= table.sweep_at {
            table.flows.retain(|_, e| !Self::idle(e, now, s));
            table.sweep_at = (2 * table.flows.len()).max(FIRST_SWEEP);
        }
        let fresh = Entry {
            port: ecmp,
            queued: 0,
            old_port: ecmp,
            draining: 0,
            releasing: false,
            last_left: None,
            last_seen: now,
        };
        let len = table.flows.len() + usize::from(!table.flows.contains_key(&p.flow));
        table.max_len = table.max_len.max(len);
        let e = table.flows.entry(p.flow).or_insert(fresh);
        if Self::idle(e, now, s) {
            if e.port != ecmp {
                self.counters.pins_expired += 1;
            }
            *e = fresh;
        }
        e.last_seen = now;
        let moving = e.draining > 0 || e.releasing;
        let cur = e.port;
        let backlog = |q: PortId| queues[q as usize].backlog_bytes();
        let mut release_at = None;
        // The flow's own packets do not make its port congested: moving away from
        // itself would only make it flap (seen with a move gap: a released burst
        // sent its flow off again).
        let own = u64::from(e.queued) * u64::from(p.size);
        if backlog(cur).saturating_sub(own) > s.threshold_bytes {
            let g = self.groups[cur as usize];
            let mut best: Option<(PortId, u64)> = None;
            for q in g.first..g.first + g.n {
                if q == cur {
                    continue;
                }
                let b = backlog(q);
                if b <= s.threshold_bytes && best.is_none_or(|(_, bb)| b < bb) {
                    best = Some((q, b));
                }
            }
            let may_move = match s.in_order {
                InOrder::Refuse => Self::settled(e, now, s.move_gap),
                InOrder::Hold => !moving,
            };
            let c = &mut self.counters;
            match best {
                None => c.refused_no_alternative += 1,
                Some(_) if p.ce_bytes >= s.max_deflections => c.budget_exhausted += 1,
                Some(_) if !may_move => c.refused_in_order += 1,
                Some((alt, _)) => {
                    c.moves += 1;
                    self.port_stats[cur as usize].moves_out += 1;
                    self.port_stats[alt as usize].moves_in += 1;
                    e.old_port = cur;
                    e.draining = e.queued;
                    e.queued = 0;
                    e.port = alt;
                    if e.draining == 0 {
                        // Nothing of it waits here, but the last packet may still
                        // be on the wire or just ahead downstream.
                        let at = e.last_left.map_or(0, |t| t + s.move_gap);
                        if at > now {
                            e.releasing = true;
                            release_at = Some(at);
                        }
                    }
                }
            }
        }
        let out = e.port;
        if out != ecmp {
            p.ce_bytes = p.ce_bytes.saturating_add(1);
            self.counters.deflected_packets += 1;
            self.port_stats[out as usize].deflected_packets += 1;
        }
        if e.draining > 0 || e.releasing {
            self.counters.held_packets += 1;
            return Steer::Hold {
                port: out,
                release_at,
            };
        }
        e.queued += 1;
        Steer::Forward(out)
    }

    /// Packet `p`, counted at `port` of switch `sw`, left the switch (transmitted,
    /// or refused by the port's discipline), taking `serialise` to go. Returns when
    /// to release the flow's held packets, if this was its last one on the old port.
    #[inline]
    pub fn left(
        &mut self,
        sw: SwitchId,
        port: PortId,
        p: &Packet,
        now: Time,
        serialise: Time,
    ) -> Option<Time> {
        if !self.deflects(port) || !Self::steered(p) {
            return None;
        }
        let e = self.tables[sw as usize].flows.get_mut(&p.flow)?;
        e.last_left = Some(now + serialise);
        if port == e.port && e.queued > 0 {
            e.queued -= 1;
        } else if port == e.old_port && e.draining > 0 {
            e.draining -= 1;
            if e.draining == 0 {
                e.releasing = true;
                return Some(now + serialise + self.settings.move_gap);
            }
        }
        None
    }
}

/// What a switch does with a steered packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Steer {
    /// Offer it to this port.
    Forward(PortId),
    /// Hold it for `port` until its flow's release; schedule that at `release_at`
    /// if given (otherwise the last old packet's departure will).
    Hold {
        port: PortId,
        release_at: Option<Time>,
    },
}

/// Tier names of the bits in `bits`, for messages.
fn tier_list(net: &Network, bits: u64) -> String {
    let names: Vec<_> = (0..net.tier_names.len())
        .filter(|&t| bits & (1 << t) != 0)
        .map(|t| format!("`{}`", net.tier_names[t]))
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

impl Network {
    /// Turns IOFD on: its ports record what they transmit, so that departures reach
    /// the flow tables (`Network::after_transmit`).
    pub fn install_iofd(&mut self, iofd: Iofd) {
        for (p, port) in self.ports.iter_mut().enumerate() {
            if iofd.deflects(p as PortId) {
                port.pfc_flags |= pfc_flags::RECORD_TX;
            }
        }
        self.iofd = Some(Box::new(iofd));
    }

    /// A packet arrived at switch `sw` (through `ingress`, with PFC) while IOFD is
    /// on: routed, steered if it may be, and offered to its port or held. Kept out
    /// of line, so that runs without IOFD pay one branch for it.
    #[cold]
    #[inline(never)]
    pub fn forward_with_iofd(
        &mut self,
        sw: SwitchId,
        pkt: PacketId,
        ingress: Option<PortId>,
        ctx: &mut PortCtx,
    ) {
        let p = ctx.pkts.get(pkt);
        let ecmp = self.switches[sw as usize].route(p.dst, p.entropy, self.load_balancing);
        let iofd = self.iofd.as_deref_mut().expect("called with IOFD on");
        if !(iofd.deflects(ecmp) && Iofd::steered(p)) {
            if iofd.resequencer.is_some()
                && Resequencer::applies(p)
                && matches!(self.ports[ecmp as usize].peer, Node::Host(_))
            {
                return self.resequence(sw, pkt, ecmp, ingress, ctx);
            }
            return self.forward_plain(ecmp, pkt, ingress, ctx);
        }
        let flow = p.flow;
        match iofd.steer(&self.queues, sw, ecmp, ctx.pkts.get_mut(pkt), ctx.now) {
            Steer::Forward(out) => {
                if let Some(i) = ingress {
                    if !self.pfc_charge(out, pkt, i, ctx) {
                        return self.iofd_lost(sw, out, flow);
                    }
                }
                self.offer_counted(sw, out, pkt, ctx);
            }
            Steer::Hold { port, release_at } => {
                if let Some(i) = ingress {
                    if !self.pfc_charge(port, pkt, i, ctx) {
                        return; // never counted as queued
                    }
                }
                let iofd = self.iofd.as_deref_mut().expect("called with IOFD on");
                iofd.held.entry((sw, flow)).or_default().push_back(pkt);
                if let Some(at) = release_at {
                    ctx.events.push(at, Event::IofdRelease { switch: sw, flow });
                }
            }
        }
    }

    /// Forwards a packet IOFD leaves alone to `port`, charged to `ingress` for PFC.
    pub(crate) fn forward_plain(
        &mut self,
        port: PortId,
        pkt: PacketId,
        ingress: Option<PortId>,
        ctx: &mut PortCtx,
    ) {
        match ingress {
            Some(i) => self.enqueue_from(port, pkt, i, ctx),
            None => self.enqueue(port, pkt, ctx),
        }
        // A packet sent at once (an idle port) left the switch already.
        self.after_transmit(port, ctx);
    }

    /// Offers a packet counted at `port` (charged to PFC already, if PFC is on); if
    /// the port refuses it, it is uncounted.
    fn offer_counted(&mut self, sw: SwitchId, port: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        let copy = *ctx.pkts.get(pkt);
        let refused = |s: &crate::net::queue::PortStats| s.drops + s.returns;
        let before = refused(&self.ports[port as usize].stats);
        self.pfc_offer(port, pkt, ctx);
        if refused(&self.ports[port as usize].stats) != before {
            let iofd = self.iofd.as_deref_mut().expect("called with IOFD on");
            if let Some(at) = iofd.left(sw, port, &copy, ctx.now, 0) {
                ctx.events.push(
                    at,
                    Event::IofdRelease {
                        switch: sw,
                        flow: copy.flow,
                    },
                );
            }
        }
        // A packet sent at once (an idle port) left the switch already.
        self.after_transmit(port, ctx);
    }

    /// A counted packet PFC dropped before its port saw it.
    fn iofd_lost(&mut self, sw: SwitchId, port: PortId, flow: FlowId) {
        let iofd = self.iofd.as_deref_mut().expect("called with IOFD on");
        if let Some(e) = iofd.tables[sw as usize].flows.get_mut(&flow) {
            if e.port == port {
                e.queued = e.queued.saturating_sub(1);
            }
        }
    }

    /// The flow's packets held at switch `sw` go to its new port, in order.
    pub fn iofd_release(&mut self, sw: SwitchId, flow: FlowId, ctx: &mut PortCtx) {
        let Some(iofd) = self.iofd.as_deref_mut() else {
            return;
        };
        let Some(e) = iofd.tables[sw as usize].flows.get_mut(&flow) else {
            return;
        };
        if e.draining > 0 {
            return; // the flow moved again meanwhile; its next release comes later
        }
        e.releasing = false;
        let port = e.port;
        let held = iofd.held.remove(&(sw, flow)).unwrap_or_default();
        e.queued += held.len() as u32;
        for pkt in held {
            self.offer_counted(sw, port, pkt, ctx);
        }
    }

    /// The IOFD side of a switch port's transmission: its flow's count goes down,
    /// and a flow whose last packet left its old port has its release scheduled.
    #[inline]
    pub(crate) fn iofd_departed(&mut self, port: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        let (Some(iofd), Node::Switch(s)) =
            (self.iofd.as_deref_mut(), self.ports[port as usize].owner)
        else {
            return;
        };
        let p = ctx.pkts.get(pkt);
        let serialise =
            crate::units::serialisation_time(p.size, self.ports[port as usize].rate_bps);
        if let Some(at) = iofd.left(s, port, p, ctx.now, serialise) {
            let flow = p.flow;
            ctx.events.push(at, Event::IofdRelease { switch: s, flow });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EventQueue, SimRng};
    use crate::net::packet::PacketSlab;
    use crate::net::queue::QueueSpec;
    use crate::net::switch::LoadBalancing;
    use crate::net::{LinkSpec, NetworkBuilder};
    use crate::units::value::Bytes;
    use crate::units::US;
    use rand::SeedableRng;

    const MTU: u32 = 1500;
    const LEAF: SwitchId = 0;

    /// Two leaves of one host each under `spines` spines, 40 Gbps links of 1 us,
    /// DCTCP-style marking at 5 KB on every switch port, and IOFD at 5 KB.
    fn network(spines: u32, in_order: InOrder, move_gap: Time) -> Network {
        let marking = QueueSpec::Ecn {
            limit_packets: None,
            limit_bytes: None,
            k_packets: None,
            k_bytes: Some(Bytes(5_000)),
        };
        let b = NetworkBuilder::new(
            2,
            QueueSpec::DropTail {
                limit_packets: None,
                limit_bytes: None,
            },
            marking,
            0,
            LoadBalancing::Ecmp,
            Box::new(|| 0),
        );
        let link = LinkSpec {
            rate_bps: 40_000_000_000,
            latency: US,
        };
        let mut b = b;
        let leaves: Vec<SwitchId> = (0..2).map(|l| b.switch(l, 1, 1, spines, 1)).collect();
        let tops: Vec<SwitchId> = (0..spines).map(|_| b.switch(0, 2, 1, 0, 1)).collect();
        for (l, &leaf) in leaves.iter().enumerate() {
            b.link(l as u32, b.down_port(leaf, 0), link, "host_up", "leaf_down");
            for (s, &spine) in tops.iter().enumerate() {
                let (up, down) = (b.up_port(leaf, s as u32), b.down_port(spine, l as u32));
                b.link(up, down, link, "leaf_up", "spine_down");
            }
        }
        let mut net = b.finish(1);
        let settings = IofdSettings {
            in_order,
            threshold_bytes: 5_000,
            max_deflections: 2,
            move_gap,
            idle_timeout: 100 * US,
            tiers: Iofd::choice_tiers(&net),
            resequence: None,
        };
        let iofd = Iofd::new(settings, &net).unwrap();
        net.install_iofd(iofd);
        net
    }

    struct World {
        net: Network,
        events: EventQueue,
        pkts: PacketSlab,
        rng: SimRng,
    }

    impl World {
        fn new(net: Network) -> World {
            World {
                net,
                events: EventQueue::new(),
                pkts: PacketSlab::new(),
                rng: SimRng::seed_from_u64(1),
            }
        }

        fn ctx(&mut self, now: Time) -> (&mut Network, PortCtx<'_>) {
            let ctx = PortCtx {
                now,
                events: &mut self.events,
                pkts: &mut self.pkts,
                rng: &mut self.rng,
            };
            (&mut self.net, ctx)
        }

        /// A data packet of `flow` from host 0 to host 1.
        fn packet(&mut self, flow: FlowId, seq: u64) -> PacketId {
            self.pkts.alloc(Packet {
                src: 0,
                dst: 1,
                flow,
                size: MTU,
                entropy: 7,
                seq,
                flags: flags::ECT,
                ..Default::default()
            })
        }

        /// `bytes` of other traffic (ACK-sized control packets, which IOFD leaves
        /// alone) waiting at `port`, behind one on the wire.
        fn load(&mut self, now: Time, port: PortId, packets: u32) {
            for _ in 0..=packets {
                let pkt = self.pkts.alloc(Packet {
                    dst: 1,
                    flow: 999,
                    size: MTU,
                    kind: PacketKind::Ack,
                    ..Default::default()
                });
                let (net, mut ctx) = self.ctx(now);
                net.enqueue(port, pkt, &mut ctx);
            }
        }

        fn forward(&mut self, now: Time, pkt: PacketId) {
            let (net, mut ctx) = self.ctx(now);
            net.forward_with_iofd(LEAF, pkt, None, &mut ctx);
        }

        /// The leaf's uplink ECMP gives packets of entropy 7.
        fn ecmp(&self) -> PortId {
            self.net.switches[LEAF as usize].route(1, 7, LoadBalancing::Ecmp)
        }

        fn uplinks(&self) -> std::ops::Range<PortId> {
            let sw = &self.net.switches[LEAF as usize];
            sw.first_up..sw.first_up + sw.n_up
        }

        fn backlog(&self, port: PortId) -> u64 {
            self.net.queues[port as usize].backlog_bytes()
        }

        fn counters(&self) -> IofdCounters {
            self.net.iofd.as_ref().unwrap().counters
        }

        /// Runs the events due up to `until`: transmissions, releases; arrivals
        /// at the spines are recorded as (time, spine, seq) and consumed.
        fn run(&mut self, until: Time) -> Vec<(Time, SwitchId, u64)> {
            let mut arrivals = Vec::new();
            while let Some((t, ev)) = self.events.pop() {
                if t > until {
                    self.events.push(t, ev);
                    break;
                }
                match ev {
                    Event::TxDone { port } => {
                        let (net, mut ctx) = self.ctx(t);
                        net.tx_done(port, &mut ctx);
                    }
                    Event::IofdRelease { switch, flow } => {
                        let (net, mut ctx) = self.ctx(t);
                        net.iofd_release(switch, flow, &mut ctx);
                    }
                    Event::Arrive {
                        at: Node::Switch(s),
                        pkt,
                    } => {
                        let p = *self.pkts.get(pkt);
                        if p.flow != 999 {
                            arrivals.push((t, s, p.seq));
                        }
                        self.pkts.free(pkt);
                    }
                    _ => {}
                }
            }
            arrivals
        }
    }

    /// The flow's packet finds its ECMP port over the threshold and two others below
    /// it: the flow moves to the least loaded, and the packet counts a deflection.
    #[test]
    fn a_flow_moves_off_a_congested_port_to_the_least_loaded_alternative() {
        let mut w = World::new(network(3, InOrder::Hold, 0));
        let ecmp = w.ecmp();
        let others: Vec<PortId> = w.uplinks().filter(|&p| p != ecmp).collect();
        w.load(0, ecmp, 5); // 7.5 KB: congested
        w.load(0, others[0], 2); // 3 KB
        w.load(0, others[1], 1); // 1.5 KB: the least loaded
        let pkt = w.packet(1, 0);
        w.forward(0, pkt);
        assert_eq!(w.backlog(others[1]), 2 * 1500, "queued on the least loaded");
        assert_eq!(w.backlog(ecmp), 5 * 1500);
        assert_eq!(w.pkts.get(pkt).ce_bytes, 1, "one deflection counted");
        let c = w.counters();
        assert_eq!((c.moves, c.deflected_packets), (1, 1));
        let s = w.net.iofd.as_ref().unwrap().port_stats[others[1] as usize];
        assert_eq!((s.moves_in, s.deflected_packets), (1, 1));
        // The flow stays pinned there though its ECMP port drains.
        w.run(50 * US);
        let next = w.packet(1, 1);
        w.forward(50 * US, next);
        assert_eq!(w.counters().deflected_packets, 2);
        assert_eq!(w.pkts.get(next).ce_bytes, 1);
    }

    /// Every uplink is congested (dispersed congestion): the packet stays on its
    /// ECMP port and is marked there, for DCQCN to slow its sender.
    #[test]
    fn with_every_alternative_congested_the_packet_is_queued_and_marked() {
        let mut w = World::new(network(3, InOrder::Hold, 0));
        let ecmp = w.ecmp();
        for p in w.uplinks() {
            w.load(0, p, 5);
        }
        let pkt = w.packet(1, 0);
        w.forward(0, pkt);
        assert_eq!(w.backlog(ecmp), 6 * 1500);
        assert!(w.pkts.get(pkt).has(flags::CE), "marked for DCQCN");
        assert_eq!(w.pkts.get(pkt).ce_bytes, 0);
        let c = w.counters();
        assert_eq!((c.moves, c.refused_no_alternative), (0, 1));
    }

    /// A queue of the flow's own packets is not congestion to flee: moving would
    /// only make the flow flap between ports.
    #[test]
    fn a_flow_does_not_flee_its_own_queue() {
        let mut w = World::new(network(2, InOrder::Hold, 0));
        let ecmp = w.ecmp();
        for seq in 0..7 {
            let p = w.packet(1, seq);
            w.forward(0, p);
        }
        assert_eq!(w.backlog(ecmp), 6 * 1500, "one on the wire, six waiting");
        assert_eq!(w.counters().moves, 0);
        // Another flow's packets behind them make it congested.
        w.load(0, ecmp, 4);
        let p = w.packet(1, 7);
        w.forward(0, p);
        assert_eq!(w.counters().moves, 1);
    }

    /// A packet that has used its budget does not move its flow.
    #[test]
    fn a_packet_with_its_budget_spent_is_not_deflected() {
        let mut w = World::new(network(2, InOrder::Hold, 0));
        let ecmp = w.ecmp();
        w.load(0, ecmp, 5);
        let pkt = w.packet(1, 0);
        w.pkts.get_mut(pkt).ce_bytes = 2;
        w.forward(0, pkt);
        assert_eq!(w.backlog(ecmp), 6 * 1500);
        let c = w.counters();
        assert_eq!((c.moves, c.budget_exhausted), (0, 1));
        // One deflection left: the next packet moves the flow.
        let pkt = w.packet(1, 1);
        w.pkts.get_mut(pkt).ce_bytes = 1;
        w.forward(0, pkt);
        assert_eq!(w.counters().moves, 1);
        assert_eq!(w.pkts.get(pkt).ce_bytes, 2);
    }

    /// `refuse`: while a packet of the flow waits on its port, the flow does not
    /// move; once it has left (and the gap passed), it does.
    #[test]
    fn the_refuse_rule_waits_for_the_flow_to_leave_the_switch() {
        let gap = 2 * US;
        let mut w = World::new(network(2, InOrder::Refuse, gap));
        let ecmp = w.ecmp();
        w.load(0, ecmp, 2); // 3 KB: below the threshold
        let first = w.packet(1, 0);
        w.forward(0, first); // queued behind the load
        w.load(0, ecmp, 2); // now 7.5 KB
        let second = w.packet(1, 1);
        w.forward(0, second);
        let c = w.counters();
        assert_eq!(
            (c.moves, c.refused_in_order),
            (0, 1),
            "the first still waits"
        );
        assert_eq!(w.backlog(ecmp), 7 * 1500);
        // Serve the queue until both flow packets have left; keep the port loaded.
        let arrivals = w.run(5 * US);
        assert_eq!(arrivals.iter().map(|a| a.2).collect::<Vec<_>>(), [0, 1]);
        let last_left = |w: &World| {
            let e = w.net.iofd.as_ref().unwrap().tables[LEAF as usize].flows[&1];
            e.last_left.unwrap()
        };
        let left = last_left(&w);
        w.load(5 * US, ecmp, 6);
        let third = w.packet(1, 2);
        w.forward(left + gap - 1, third);
        assert_eq!(w.counters().refused_in_order, 2, "within the gap");
        // The third packet waits on the ECMP port in its turn; once it has left
        // and the gap has passed, the flow moves.
        let until = left + gap + 10 * US;
        assert_eq!(w.run(until).len(), 1);
        let at = until.max(last_left(&w) + gap);
        w.load(at, ecmp, 6);
        let fourth = w.packet(1, 3);
        w.forward(at, fourth);
        assert_eq!(w.counters().moves, 1, "after the gap");
    }

    /// `hold`: the flow moves at once, its later packets wait at the switch until
    /// its packets on the old port have gone, and every packet reaches the spines
    /// in order (the two links are equally long).
    #[test]
    fn held_packets_follow_the_old_ones_in_order() {
        let mut w = World::new(network(2, InOrder::Hold, 0));
        let ecmp = w.ecmp();
        let alt = w.uplinks().find(|&p| p != ecmp).unwrap();
        w.load(0, ecmp, 2);
        for seq in 0..2 {
            let p = w.packet(1, seq);
            w.forward(0, p); // below the threshold: queued on the ECMP port
        }
        w.load(0, ecmp, 4); // congested, with two of the flow's packets inside
        for seq in 2..6 {
            let p = w.packet(1, seq);
            w.forward(0, p);
        }
        let c = w.counters();
        assert_eq!((c.moves, c.held_packets), (1, 4));
        assert_eq!(w.backlog(alt), 0, "held, not yet queued");
        let arrivals = w.run(50 * US);
        let seqs: Vec<u64> = arrivals.iter().map(|a| a.2).collect();
        assert_eq!(seqs, [0, 1, 2, 3, 4, 5], "in order: {arrivals:?}");
        let spines: Vec<SwitchId> = arrivals.iter().map(|a| a.1).collect();
        assert!(spines[..2].iter().all(|&s| s == spines[0]));
        assert!(spines[2..].iter().all(|&s| s != spines[0]), "{spines:?}");
        // Arrival times grow strictly: a held packet started after the last old one.
        assert!(arrivals.windows(2).all(|a| a[0].0 < a[1].0), "{arrivals:?}");
        // The flow has moved for good: the next packet goes straight to `alt`.
        let p = w.packet(1, 6);
        w.forward(50 * US, p);
        assert_eq!(w.counters().held_packets, 4);
        let e = w.net.iofd.as_ref().unwrap().tables[LEAF as usize].flows[&1];
        assert_eq!((e.port, e.draining, e.releasing), (alt, 0, false));
    }
}
