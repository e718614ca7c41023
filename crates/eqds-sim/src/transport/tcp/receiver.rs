//! The TCP receiver: in-order delivery with an out-of-order segment map, cumulative
//! ACKs, optional delayed ACKs, and accurate echo of CE-marked bytes.

use super::TcpConfig;
use crate::ids::PacketId;
use crate::net::packet::{flags, Packet, PacketKind};
use crate::transport::{Ctx, Endpoint, Ends};
use crate::units::Time;
use std::collections::VecDeque;

pub struct TcpReceiver {
    cfg: TcpConfig,
    ends: Ends,
    entropy: u32,
    size: u64,
    /// Next byte expected in order.
    rcv_nxt: u64,
    /// `ooo[i]`: segment `rcv_nxt / mss + i` is buffered. `ooo[0]` is always false.
    ooo: VecDeque<bool>,
    /// CE-marked payload bytes not yet echoed.
    ce_pending: u32,
    /// Full segments received since the last ACK (delayed ACK).
    unacked_segments: u32,
    /// Timestamp to echo in the next ACK.
    echo: Time,
    /// First byte of the segment that triggers the next ACK: above the cumulative
    /// point it is the ACK's SACK block (a sender without SACK ignores it).
    triggered_by: u64,
    /// Delayed-ACK deadline, if an ACK is being held.
    ack_deadline: Option<Time>,
    complete: bool,
    /// Subflow index of a multipath connection (stamped on ACKs); such a receiver
    /// learns where its stream ends from a short segment and leaves completing the
    /// flow to its connection.
    subflow: Option<u8>,
}

impl TcpReceiver {
    pub fn new(cfg: TcpConfig, ends: Ends, entropy: u32, size: Option<u64>) -> Self {
        TcpReceiver {
            cfg,
            ends,
            entropy,
            size: size.unwrap_or(u64::MAX),
            rcv_nxt: 0,
            ooo: VecDeque::new(),
            ce_pending: 0,
            unacked_segments: 0,
            echo: 0,
            triggered_by: 0,
            ack_deadline: None,
            complete: false,
            subflow: None,
        }
    }

    /// Makes this receiver subflow `index` of a multipath connection.
    pub fn as_subflow(mut self, index: u8) -> Self {
        self.subflow = Some(index);
        self
    }

    fn mss(&self) -> u64 {
        self.cfg.mss as u64
    }

    fn segment_len(&self, index: u64) -> u64 {
        self.mss().min(self.size - index * self.mss())
    }

    /// Records a data segment; returns whether it filled the head of the sequence.
    fn accept(&mut self, ctx: &mut Ctx, seq: u64) -> bool {
        let mss = self.mss();
        if seq < self.rcv_nxt || seq % mss != 0 || seq >= self.size {
            return false; // duplicate (or not a segment boundary we ever send)
        }
        let offset = ((seq - self.rcv_nxt) / mss) as usize;
        if offset > 0 {
            if self.ooo.len() <= offset {
                self.ooo.resize(offset + 1, false);
            }
            if !self.ooo[offset] {
                self.ooo[offset] = true;
                ctx.flow(self.ends.flow).received += self.segment_len(seq / mss);
            }
            return false;
        }
        ctx.flow(self.ends.flow).received += self.segment_len(seq / mss);
        // In order: advance over this segment and every buffered one behind it.
        let before = self.rcv_nxt;
        loop {
            let index = self.rcv_nxt / mss;
            self.rcv_nxt += self.segment_len(index);
            self.ooo.pop_front();
            match self.ooo.front() {
                Some(true) => {}
                _ => break,
            }
        }
        if let Some(head) = self.ooo.front_mut() {
            *head = false;
        }
        ctx.flow(self.ends.flow).delivered += self.rcv_nxt - before;
        if self.rcv_nxt >= self.size && !self.complete && self.subflow.is_none() {
            self.complete = true;
            ctx.complete_flow(self.ends.flow);
        }
        true
    }

    fn send_ack(&mut self, ctx: &mut Ctx) {
        self.unacked_segments = 0;
        self.ack_deadline = None;
        ctx.send(Packet {
            size: self.cfg.header,
            entropy: self.entropy,
            ack: self.rcv_nxt,
            seq: self.triggered_by,
            timestamp: self.echo,
            ce_bytes: std::mem::take(&mut self.ce_pending),
            kind: PacketKind::Ack,
            class: self.cfg.class,
            subflow: self.subflow.unwrap_or(0),
            ..self.ends.packet()
        });
    }
}

impl Endpoint for TcpReceiver {
    fn on_start(&mut self, _ctx: &mut Ctx) {}

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        let p = *ctx.packet(pkt);
        ctx.free(pkt);
        // A trimmed header carries no payload; TCP treats it as the loss it is.
        if p.kind != PacketKind::Data || p.has(flags::TRIMMED) {
            return;
        }
        if p.has(flags::CE) {
            self.ce_pending = self.ce_pending.saturating_add(p.payload);
        }
        self.echo = p.timestamp;
        self.triggered_by = p.seq;
        if self.subflow.is_some() && (p.payload as u64) < self.mss() {
            // Segments are full except a connection's very last one.
            self.size = self.size.min(p.seq + p.payload as u64);
        }
        let in_order = self.accept(ctx, p.seq);
        let Some(delay) = self.cfg.delayed_ack else {
            self.send_ack(ctx);
            return;
        };
        // Out-of-order, duplicate and hole-filling segments are ACKed at once (RFC 5681
        // §4.2) so the sender's loss recovery is not slowed down.
        let hole_filled = in_order && !self.ooo.is_empty();
        self.unacked_segments += 1;
        if !in_order || hole_filled || self.complete || self.unacked_segments >= delay.segments {
            self.send_ack(ctx);
        } else if self.ack_deadline.is_none() {
            let at = ctx.now + delay.timeout;
            self.ack_deadline = Some(at);
            ctx.set_timer(at);
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx) {
        if let Some(at) = self.ack_deadline {
            if at <= ctx.now {
                self.send_ack(ctx);
            }
        }
    }
}
