//! The packet-pair receiver: TCP's in-order delivery and cumulative ACK for every
//! data packet, plus the pair gap (§5: the receiver "records the packet-pair arrival
//! gap … and piggybacks it on the acknowledgment").

use super::PacketPairConfig;
use crate::ids::PacketId;
use crate::net::packet::{flags, Packet, PacketKind};
use crate::transport::{Ctx, Endpoint, Ends};
use crate::units::Time;
use std::collections::VecDeque;

pub struct PacketPairReceiver {
    cfg: PacketPairConfig,
    ends: Ends,
    /// ECMP hash input (the flow's, as its data's).
    entropy: u32,
    size: u64,
    /// Next byte expected in order.
    rcv_nxt: u64,
    /// `ooo[i]`: packet `rcv_nxt / mss + i` is buffered; `ooo[0]` is always false.
    ooo: VecDeque<bool>,
    /// The pair whose first packet arrived last, and when.
    first: Option<(u64, Time)>,
    complete: bool,
}

impl PacketPairReceiver {
    pub fn new(cfg: PacketPairConfig, ends: Ends, entropy: u32, size: Option<u64>) -> Self {
        PacketPairReceiver {
            cfg,
            ends,
            entropy,
            size: size.unwrap_or(u64::MAX),
            rcv_nxt: 0,
            ooo: VecDeque::new(),
            first: None,
            complete: false,
        }
    }

    fn mss(&self) -> u64 {
        u64::from(self.cfg.mss)
    }

    fn len_of(&self, index: u64) -> u64 {
        self.mss().min(self.size - index * self.mss())
    }

    /// Records the packet starting at byte `seq`.
    fn accept(&mut self, ctx: &mut Ctx, seq: u64) {
        let mss = self.mss();
        if seq < self.rcv_nxt || seq % mss != 0 || seq >= self.size {
            return;
        }
        let offset = ((seq - self.rcv_nxt) / mss) as usize;
        if offset > 0 {
            if self.ooo.len() <= offset {
                self.ooo.resize(offset + 1, false);
            }
            if !self.ooo[offset] {
                self.ooo[offset] = true;
                ctx.flow(self.ends.flow).received += self.len_of(seq / mss);
            }
            return;
        }
        ctx.flow(self.ends.flow).received += self.len_of(seq / mss);
        let before = self.rcv_nxt;
        loop {
            self.rcv_nxt += self.len_of(self.rcv_nxt / mss);
            self.ooo.pop_front();
            if self.ooo.front() != Some(&true) {
                break;
            }
        }
        if let Some(head) = self.ooo.front_mut() {
            *head = false;
        }
        ctx.flow(self.ends.flow).delivered += self.rcv_nxt - before;
        if self.rcv_nxt >= self.size && !self.complete {
            self.complete = true;
            ctx.complete_flow(self.ends.flow);
        }
    }

    /// The gap to report for a packet with pair tag `tag` arriving now: the time
    /// since its pair's first packet if that arrived just before it, else 0.
    fn gap(&mut self, now: Time, tag: u64) -> Time {
        if tag == 0 {
            return 0;
        }
        let pair = tag >> 1;
        if tag & 1 == 0 {
            self.first = Some((pair, now));
            return 0;
        }
        match self.first.take() {
            Some((p, at)) if p == pair => now - at,
            _ => 0,
        }
    }
}

impl Endpoint for PacketPairReceiver {
    fn on_start(&mut self, _ctx: &mut Ctx) {}

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        let p = *ctx.packet(pkt);
        ctx.free(pkt);
        if p.kind != PacketKind::Data || p.has(flags::TRIMMED) {
            return;
        }
        let gap = self.gap(ctx.now, p.ack);
        self.accept(ctx, p.seq);
        // Every packet is ACKed, duplicates too (the first ACK may have been lost).
        ctx.send(Packet {
            size: self.cfg.header,
            entropy: self.entropy,
            ack: self.rcv_nxt,
            seq: gap,
            timestamp: p.timestamp,
            payload: p.payload,
            ce_bytes: if p.has(flags::CE) { p.payload } else { 0 },
            kind: PacketKind::Ack,
            class: self.cfg.class,
            ..self.ends.packet()
        });
    }

    fn on_timer(&mut self, _ctx: &mut Ctx) {}
}
