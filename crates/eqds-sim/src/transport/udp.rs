//! Unresponsive constant-bit-rate UDP: the sender puts one full packet on its NIC
//! every packet-time at its configured rate, whatever happens to them; the receiver
//! counts what arrives. The EQDS paper's sharing experiment pits one such sender
//! against TCP flows: without EQDS it takes the receiver's link, with EQDS the
//! receiver's PULLs give it its share and its excess waits (and is dropped) in its
//! own EQIF queue.

use crate::ids::{FlowId, PacketId};
use crate::net::packet::{flags, Packet, PacketKind};
use crate::transport::{Ctx, Endpoint, Ends};
use crate::units::{serialisation_time, Time};
use rand::Rng;

/// Per-flow UDP parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpConfig {
    /// Payload bytes per packet.
    pub mss: u32,
    pub header: u32,
    /// Sending rate in bits per second (0: the host's link rate).
    pub rate_bps: u64,
    pub class: u8,
}

pub struct UdpSender {
    cfg: UdpConfig,
    ends: Ends,
    /// Bytes still to send (`u64::MAX`: for ever).
    left: u64,
    sent: u64,
    /// Time between two packets.
    gap: Time,
}

impl UdpSender {
    pub fn new(cfg: UdpConfig, ends: Ends, size: Option<u64>) -> Self {
        UdpSender {
            cfg,
            ends,
            left: size.unwrap_or(u64::MAX),
            sent: 0,
            gap: 1,
        }
    }

    fn send_one(&mut self, ctx: &mut Ctx) {
        let payload = u64::from(self.cfg.mss).min(self.left) as u32;
        ctx.send(Packet {
            size: payload + self.cfg.header,
            // One 5-tuple: one ECMP path, as a real UDP socket.
            entropy: self.ends.flow.wrapping_mul(0x9E37_79B9),
            seq: self.sent,
            timestamp: ctx.now,
            payload,
            kind: PacketKind::Data,
            class: self.cfg.class,
            ..self.ends.packet()
        });
        self.sent += u64::from(payload);
        self.left -= u64::from(payload);
        if self.left > 0 {
            // Gaps vary uniformly by ±50% around the mean, as an application's
            // timer does: perfectly regular arrivals phase-lock with an ACK-clocked
            // TCP at a drop-tail queue and always lose the race for the slot a
            // departure frees.
            let jitter = ctx.rng().random_range(0..=self.gap);
            ctx.set_timer(ctx.now + self.gap / 2 + jitter);
        }
    }
}

impl Endpoint for UdpSender {
    fn on_start(&mut self, ctx: &mut Ctx) {
        let rate = match self.cfg.rate_bps {
            0 => ctx.host_rate(self.ends.host),
            r => r,
        };
        self.gap = serialisation_time(self.cfg.mss + self.cfg.header, rate).max(1);
        self.send_one(ctx);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        // Nothing comes back to a UDP sender.
        ctx.free(pkt);
    }

    fn on_timer(&mut self, ctx: &mut Ctx) {
        self.send_one(ctx);
    }
}

pub struct UdpReceiver {
    flow: FlowId,
    /// The flow completes if this many bytes arrive (`u64::MAX`: never).
    size: u64,
    received: u64,
}

impl UdpReceiver {
    pub fn new(flow: FlowId, size: Option<u64>) -> Self {
        UdpReceiver {
            flow,
            size: size.unwrap_or(u64::MAX),
            received: 0,
        }
    }
}

impl Endpoint for UdpReceiver {
    fn on_start(&mut self, _ctx: &mut Ctx) {}

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        // A header whose payload a switch trimmed away delivers nothing: UDP has no
        // one to ask for the payload again, so it is lost like a dropped packet.
        let p = ctx.packet(pkt);
        let bytes = if p.has(flags::TRIMMED) {
            0
        } else {
            u64::from(p.payload)
        };
        ctx.free(pkt);
        let f = ctx.flow(self.flow);
        f.received += bytes;
        f.delivered += bytes;
        self.received += bytes;
        if self.received >= self.size {
            // Only if nothing was lost: UDP does not resend.
            ctx.complete_flow(self.flow);
        }
    }

    fn on_timer(&mut self, _ctx: &mut Ctx) {}
}
