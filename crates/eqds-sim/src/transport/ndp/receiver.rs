//! The NDP receiver: ACK every data packet, NACK every trimmed header, and owe the
//! sender one PULL for each arrival, paid out by the host's pull pacer.

use super::{NdpConfig, PathCycle};
use crate::ids::PacketId;
use crate::net::packet::{flags, Packet, PacketKind};
use crate::transport::{Ctx, Endpoint, Ends, PullTurn};
use std::collections::VecDeque;

pub struct NdpReceiver {
    cfg: NdpConfig,
    ends: Ends,
    size: u64,
    /// Next packet expected in order.
    next: u64,
    /// `ooo[i]`: packet `next + i` is here. `ooo[0]` is always false.
    ooo: VecDeque<bool>,
    /// PULLs sent so far: the pull number.
    pulls_sent: u64,
    /// PULLs owed to the sender, waiting for the pacer.
    pulls_owed: u64,
    paths: PathCycle,
    complete: bool,
}

impl NdpReceiver {
    pub fn new(cfg: NdpConfig, ends: Ends, size: Option<u64>) -> Self {
        NdpReceiver {
            paths: PathCycle::new(cfg.paths),
            cfg,
            ends,
            size: size.unwrap_or(u64::MAX),
            next: 0,
            ooo: VecDeque::new(),
            pulls_sent: 0,
            pulls_owed: 0,
            complete: false,
        }
    }

    fn payload_of(&self, index: u64) -> u64 {
        let mss = self.cfg.mss as u64;
        mss.min(self.size - index * mss)
    }

    /// Records packet `index`; false if it is a duplicate.
    fn accept(&mut self, ctx: &mut Ctx, index: u64) -> bool {
        if index < self.next || index * (self.cfg.mss as u64) >= self.size {
            return false;
        }
        let offset = (index - self.next) as usize;
        if self.ooo.len() <= offset {
            self.ooo.resize(offset + 1, false);
        }
        if offset > 0 {
            if self.ooo[offset] {
                return false;
            }
            self.ooo[offset] = true;
            ctx.flow(self.ends.flow).received += self.payload_of(index);
            return true;
        }
        ctx.flow(self.ends.flow).received += self.payload_of(index);
        let mut delivered = 0;
        loop {
            delivered += self.payload_of(self.next);
            self.next += 1;
            self.ooo.pop_front();
            if self.ooo.front() != Some(&true) {
                break;
            }
        }
        if let Some(head) = self.ooo.front_mut() {
            *head = false;
        }
        ctx.flow(self.ends.flow).delivered += delivered;
        if self.next * self.cfg.mss as u64 >= self.size && !self.complete {
            self.complete = true;
            self.pulls_owed = 0;
            ctx.complete_flow(self.ends.flow);
        }
        true
    }

    fn send_control(&mut self, ctx: &mut Ctx, kind: PacketKind, seq: u64, echo: u64) {
        let path = self.paths.next(ctx.rng());
        ctx.send(Packet {
            size: self.cfg.header,
            entropy: path,
            seq,
            ack: self.pulls_sent,
            timestamp: echo,
            kind,
            ..self.ends.packet()
        });
    }

    fn owe_pull(&mut self, ctx: &mut Ctx) {
        if self.complete {
            return;
        }
        self.pulls_owed += 1;
        if self.pulls_owed == 1 {
            ctx.join_pull_queue(self.ends.host);
        }
    }
}

impl Endpoint for NdpReceiver {
    fn on_start(&mut self, _ctx: &mut Ctx) {}

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        let p = *ctx.packet(pkt);
        ctx.free(pkt);
        if p.kind != PacketKind::Data {
            return;
        }
        if p.has(flags::TRIMMED) {
            self.send_control(ctx, PacketKind::Nack, p.seq, p.timestamp);
            self.owe_pull(ctx);
            return;
        }
        self.accept(ctx, p.seq / self.cfg.mss as u64);
        // Duplicates are ACKed too: the first ACK may have been lost.
        self.send_control(ctx, PacketKind::Ack, p.seq, p.timestamp);
        if !p.has(flags::LAST) {
            self.owe_pull(ctx);
        }
    }

    fn on_timer(&mut self, _ctx: &mut Ctx) {}

    fn on_pull_slot(&mut self, ctx: &mut Ctx) -> PullTurn {
        if self.pulls_owed == 0 {
            return PullTurn::default();
        }
        self.pulls_owed -= 1;
        self.pulls_sent += 1;
        self.send_control(ctx, PacketKind::Pull, 0, 0);
        PullTurn {
            sent: true,
            owes_more: self.pulls_owed > 0,
        }
    }
}
