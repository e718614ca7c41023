//! The NDP sender: an initial window at line rate, then one packet per PULL;
//! retransmissions (NACKed, returned or timed-out packets) before new data.

use super::{NdpConfig, PathCycle};
use crate::ids::PacketId;
use crate::net::packet::{flags, Packet, PacketKind};
use crate::transport::{Ctx, Endpoint, Ends};
use crate::units::Time;
use std::collections::VecDeque;

/// `state` entry of a packet that was ACKed.
const ACKED: Time = Time::MAX;
/// `state` entry of a packet waiting in the retransmit queue.
const WAITING: Time = Time::MAX - 1;

pub struct NdpSender {
    cfg: NdpConfig,
    ends: Ends,
    /// Payload bytes to send; `u64::MAX` for a never-ending flow.
    size: u64,
    /// Packets in the flow.
    packets: u64,
    /// First packet never sent.
    next_new: u64,
    /// Packet `base + i` was last sent at `state[i]`, or is `WAITING` or `ACKED`.
    /// Entries below the first unACKed packet are dropped, so this spans the packets
    /// in flight plus whatever reordering spraying causes.
    state: VecDeque<Time>,
    base: u64,
    /// Packets to send again, served before new data. May hold stale entries
    /// (ACKed meanwhile); they are skipped.
    rtx: VecDeque<u64>,
    /// Packets sent and neither ACKed, NACKed nor returned yet.
    in_flight: u64,
    /// Unspent credit in packets (PULLs received with nothing to send).
    credit: u64,
    /// Highest pull number seen: the receiver's PULLs are cumulative.
    pull_seen: u64,
    /// When the receiver was last heard from.
    last_heard: Time,
    paths: PathCycle,
    /// When the safety timer fires, if armed.
    timer: Option<Time>,
}

impl NdpSender {
    pub fn new(cfg: NdpConfig, ends: Ends, size: Option<u64>) -> Self {
        let size = size.unwrap_or(u64::MAX);
        NdpSender {
            packets: size.div_ceil(cfg.mss as u64),
            paths: PathCycle::new(cfg.paths),
            cfg,
            ends,
            size,
            next_new: 0,
            state: VecDeque::new(),
            base: 0,
            rtx: VecDeque::new(),
            in_flight: 0,
            credit: 0,
            pull_seen: 0,
            last_heard: 0,
            timer: None,
        }
    }

    fn payload_of(&self, index: u64) -> u32 {
        let mss = self.cfg.mss as u64;
        mss.min(self.size - index * mss) as u32
    }

    /// The state slot of a packet already sent, if it is not below the ACKed prefix.
    fn slot(&mut self, index: u64) -> Option<&mut Time> {
        let i = index.checked_sub(self.base)?;
        self.state.get_mut(i as usize)
    }

    fn has_backlog(&self) -> bool {
        self.next_new < self.packets || !self.rtx.is_empty()
    }

    /// Next packet of the retransmit queue that still needs sending.
    fn pop_rtx(&mut self) -> Option<u64> {
        while let Some(index) = self.rtx.pop_front() {
            if self.slot(index).is_some_and(|s| *s == WAITING) {
                return Some(index);
            }
        }
        None
    }

    /// Sends the next packet owed (a retransmission first); false if there is none.
    fn send_next(&mut self, ctx: &mut Ctx) -> bool {
        if let Some(index) = self.pop_rtx() {
            ctx.flow(self.ends.flow).retransmits += 1;
            self.transmit(ctx, index, true);
            return true;
        }
        if self.next_new < self.packets {
            let index = self.next_new;
            self.next_new += 1;
            self.state.push_back(ACKED);
            self.transmit(ctx, index, false);
            return true;
        }
        false
    }

    fn transmit(&mut self, ctx: &mut Ctx, index: u64, retransmit: bool) {
        *self.slot(index).expect("a packet being sent has a slot") = ctx.now;
        self.in_flight += 1;
        let payload = self.payload_of(index);
        let mut f = if retransmit { flags::RETRANSMIT } else { 0 };
        // Nothing queued behind this packet: its arrival need not be paid with a
        // PULL (a trim of it still is, through its NACK).
        if !self.has_backlog() {
            f |= flags::LAST;
        }
        self.send_data(ctx, index, payload, f, self.cfg.class);
        if self.timer.is_none() {
            self.arm(ctx, ctx.now + self.cfg.rto);
        }
    }

    /// A header with no payload asking the receiver for a PULL: what a sender with data
    /// but no credit and nothing in flight sends when its receiver has gone quiet.
    fn send_probe(&mut self, ctx: &mut Ctx) {
        let index = self.rtx.front().copied().unwrap_or(self.next_new);
        self.send_data(ctx, index, 0, flags::TRIMMED, 0);
    }

    /// Puts packet `index` (or its header, for `payload` 0) on the next sprayed path.
    fn send_data(&mut self, ctx: &mut Ctx, index: u64, payload: u32, flags: u8, class: u8) {
        let path = self.paths.next(ctx.rng());
        ctx.send(Packet {
            size: payload + self.cfg.header,
            entropy: path,
            seq: index * self.cfg.mss as u64,
            timestamp: ctx.now,
            payload,
            kind: PacketKind::Data,
            flags,
            class,
            ..self.ends.packet()
        });
    }

    fn arm(&mut self, ctx: &mut Ctx, at: Time) {
        self.timer = Some(at);
        ctx.set_timer(at);
    }

    /// Credit carried by any control packet: the receiver's cumulative pull number.
    fn take_credit(&mut self, pull_no: u64) {
        if pull_no > self.pull_seen {
            self.credit += pull_no - self.pull_seen;
            self.pull_seen = pull_no;
        }
    }

    /// Spends credit on whatever is owed; keeps at most one initial window unspent.
    fn spend(&mut self, ctx: &mut Ctx) {
        while self.credit > 0 && self.send_next(ctx) {
            self.credit -= 1;
        }
        self.credit = self.credit.min(self.cfg.initial_window as u64);
    }

    fn on_ack(&mut self, ctx: &mut Ctx, index: u64, echo: Time) {
        let Some(&state) = self.slot(index).map(|s| &*s) else {
            return;
        };
        match state {
            ACKED => return,
            WAITING => {}
            _ => self.in_flight -= 1,
        }
        *self.slot(index).expect("checked above") = ACKED;
        if let Some(rtt) = ctx.now.checked_sub(echo) {
            ctx.flow(self.ends.flow).record_rtt(rtt);
        }
        while self.state.front() == Some(&ACKED) && self.base < self.next_new {
            self.state.pop_front();
            self.base += 1;
        }
    }

    /// The packet did not arrive whole: queue it for retransmission. Returns whether
    /// it was in flight (a stale NACK for a packet already handled changes nothing).
    fn on_lost(&mut self, index: u64, front: bool) -> bool {
        if index >= self.next_new {
            return false;
        }
        let Some(slot) = self.slot(index) else {
            return false;
        };
        if matches!(*slot, ACKED | WAITING) {
            return false;
        }
        *slot = WAITING;
        self.in_flight -= 1;
        if front {
            self.rtx.push_front(index);
        } else {
            self.rtx.push_back(index);
        }
        true
    }

    fn on_timeout(&mut self, ctx: &mut Ctx) {
        let now = ctx.now;
        let rto = self.cfg.rto;
        let expired: Vec<u64> = self
            .state
            .iter()
            .enumerate()
            .filter(|(_, &t)| t < WAITING && t + rto <= now)
            .map(|(i, _)| self.base + i as u64)
            .collect();
        for index in expired.into_iter().rev() {
            // Lost outright: its token is gone, so resend without waiting for credit.
            self.on_lost(index, true);
            ctx.flow(self.ends.flow).timeouts += 1;
            self.send_next(ctx);
        }
        if self.in_flight == 0 && self.has_backlog() && self.last_heard + rto <= now {
            self.last_heard = now;
            self.send_probe(ctx);
        }
        let oldest = self.state.iter().copied().filter(|&t| t < WAITING).min();
        let next = match oldest {
            Some(t) => Some(t + rto),
            None if self.has_backlog() => Some(self.last_heard + rto),
            None => None,
        };
        match next {
            Some(at) => self.arm(ctx, at.max(now + 1)),
            None => {
                self.timer = None;
                ctx.cancel_timer();
            }
        }
    }
}

impl Endpoint for NdpSender {
    fn on_start(&mut self, ctx: &mut Ctx) {
        self.last_heard = ctx.now;
        for _ in 0..self.cfg.initial_window {
            if !self.send_next(ctx) {
                break;
            }
        }
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        let p = *ctx.packet(pkt);
        ctx.free(pkt);
        let index = p.seq / self.cfg.mss as u64;
        match p.kind {
            PacketKind::Data if p.has(flags::RETURNED) => {
                // A switch sent our header back: the token came home, so resend now.
                if self.on_lost(index, true) {
                    self.send_next(ctx);
                }
                return;
            }
            // Nothing else is addressed to an NDP sender.
            PacketKind::Data | PacketKind::Control | PacketKind::Cnp => return,
            PacketKind::Ack => self.on_ack(ctx, index, p.timestamp),
            PacketKind::Nack => {
                self.on_lost(index, false);
            }
            PacketKind::Pull => {}
        }
        self.last_heard = ctx.now;
        self.take_credit(p.ack);
        self.spend(ctx);
    }

    fn on_timer(&mut self, ctx: &mut Ctx) {
        match self.timer {
            Some(at) if at <= ctx.now => {
                self.timer = None;
                self.on_timeout(ctx);
            }
            Some(at) => ctx.set_timer(at),
            None => {}
        }
    }
}
