//! The RoCE responder: takes only the PSN it expects, ACKs every `ack_every`
//! packets and at each message's end, NAKs a gap at most once per `nak_interval`
//! for the same PSN, and runs DCQCN's notification point, which answers CE-marked
//! packets with CNPs (at most one per `cnp_interval`, on the endpoint timer).
//!
//! With DASR on, the responder also keeps its flow's place in its host's sender
//! table (`dasr`): counted while a message is arriving, uncounted when its last
//! packet is accepted, and every ACK and NAK carries the table's advertisement.

use super::dasr::{self, Membership};
use super::dcqcn::NotificationPoint;
use super::{encode_advert, Layout, RoceConfig};
use crate::ids::PacketId;
use crate::net::packet::{flags, Packet, PacketKind};
use crate::transport::{Ctx, Endpoint, Ends};
use crate::units::Time;

pub struct RoceReceiver {
    cfg: RoceConfig,
    ends: Ends,
    entropy: u32,
    layout: Layout,
    /// The next PSN to accept.
    expected: u64,
    /// Data packets (new or duplicate) since the last ACK.
    since_ack: u32,
    /// The PSN last NAKed, and until when another NAK for it is held back.
    nak: Option<(u64, Time)>,
    np: Option<NotificationPoint>,
    /// What the endpoint timer is set to (the NP's interval end).
    timer: Option<Time>,
    complete: bool,
    /// This flow's place in its host's DASR table.
    dasr: Membership,
}

impl RoceReceiver {
    /// The responder of a flow of `size` bytes (`None`: endless); with DCQCN, its NP
    /// sends at most one CNP per `cnp_interval`.
    pub fn new(
        cfg: RoceConfig,
        ends: Ends,
        entropy: u32,
        size: Option<u64>,
        cnp_interval: Option<Time>,
    ) -> Self {
        RoceReceiver {
            layout: Layout::new(size, cfg.message_size, cfg.mss, cfg.first_extra),
            np: cnp_interval.map(NotificationPoint::new),
            cfg,
            ends,
            entropy,
            expected: 0,
            since_ack: 0,
            nak: None,
            timer: None,
            complete: false,
            dasr: Membership::default(),
        }
    }

    /// An ACK, NAK or CNP: a header-sized packet in the control class.
    fn send_control(&mut self, ctx: &mut Ctx, kind: PacketKind, echo: Time) {
        let (rx, tx, m) = (self.ends.host, self.ends.peer_host, self.dasr);
        let capacity = ctx.host_rate(rx);
        let advert = match (kind, ctx.dasr()) {
            (PacketKind::Ack | PacketKind::Nack, Some(d)) => {
                encode_advert(dasr::advert(d, rx, tx, m, capacity))
            }
            _ => 0,
        };
        ctx.send(Packet {
            size: self.cfg.header,
            seq: advert,
            entropy: self.entropy,
            ack: self.expected,
            timestamp: echo,
            kind,
            class: self.cfg.ack_class,
            ..self.ends.packet()
        });
        let c = ctx.roce_counters();
        match kind {
            PacketKind::Ack => c.acks += 1,
            PacketKind::Nack => c.naks += 1,
            _ => c.cnps_sent += 1,
        }
    }

    /// A data packet counts towards the next ACK; it goes now if this is the
    /// `ack_every`-th since the last, or its message's last packet.
    fn count_for_ack(&mut self, ctx: &mut Ctx, psn: u64, echo: Time) {
        self.since_ack += 1;
        if self.since_ack >= self.cfg.ack_every || self.layout.is_last_of_message(psn) {
            self.since_ack = 0;
            self.send_control(ctx, PacketKind::Ack, echo);
        }
    }

    fn accept(&mut self, ctx: &mut Ctx, p: &Packet) {
        let bytes = u64::from(p.payload);
        let f = ctx.flow(self.ends.flow);
        f.delivered += bytes;
        f.received += bytes;
        self.expected += 1;
        self.count_for_ack(ctx, p.seq, p.timestamp);
        if self.layout.is_last_of_message(p.seq) {
            // After the ACK: it still tells the share this message had.
            let (rx, tx) = (self.ends.host, self.ends.peer_host);
            if let Some(d) = ctx.dasr() {
                d.finished(rx, tx, &mut self.dasr);
            }
        }
        if self.expected >= self.layout.packets() && !self.complete {
            self.complete = true;
            ctx.complete_flow(self.ends.flow);
        }
    }

    /// A packet past the expected one: dropped, and NAKed unless that PSN was
    /// NAKed less than `nak_interval` ago.
    fn gap(&mut self, ctx: &mut Ctx, echo: Time) {
        ctx.roce_counters().out_of_order += 1;
        let now = ctx.now;
        match self.nak {
            Some((psn, until)) if psn == self.expected && now < until => {
                ctx.roce_counters().naks_suppressed += 1;
            }
            _ => {
                self.nak = Some((self.expected, now + self.cfg.nak_interval));
                self.since_ack = 0;
                self.send_control(ctx, PacketKind::Nack, echo);
            }
        }
    }

    fn arm_np(&mut self, ctx: &mut Ctx) {
        let next = self.np.as_ref().and_then(NotificationPoint::poll_timeout);
        if next != self.timer {
            match next {
                Some(at) => ctx.set_timer(at),
                None => ctx.cancel_timer(),
            }
            self.timer = next;
        }
    }
}

impl Endpoint for RoceReceiver {
    fn on_start(&mut self, _ctx: &mut Ctx) {}

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        let p = *ctx.packet(pkt);
        ctx.free(pkt);
        if p.kind != PacketKind::Data {
            return;
        }
        // The NP sees every data packet, whatever becomes of it.
        if let Some(np) = &mut self.np {
            if np.on_packet(ctx.now, p.has(flags::CE)) {
                self.send_control(ctx, PacketKind::Cnp, 0);
            }
            self.arm_np(ctx);
        }
        // DASR hears from the sender host; new data (or a resend inside a message
        // the receiver has begun) means the flow is sending and counts.
        let (rx, tx, now) = (self.ends.host, self.ends.peer_host, ctx.now);
        let unfinished = self.expected < self.layout.packets();
        let active = unfinished && (p.seq >= self.expected || !self.layout.is_first(self.expected));
        if let Some(d) = ctx.dasr() {
            d.heard(now, rx, tx, &mut self.dasr, active);
        }
        if p.seq == self.expected {
            self.accept(ctx, &p);
        } else if p.seq > self.expected {
            self.gap(ctx, p.timestamp);
        } else {
            // Sent again after a timeout, or a go-back-0 restart: the first ACK may
            // have been lost, so it is answered like new data.
            ctx.roce_counters().duplicates += 1;
            self.count_for_ack(ctx, p.seq, p.timestamp);
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx) {
        self.timer = None;
        if let Some(np) = &mut self.np {
            if np.handle_timeout(ctx.now) {
                self.send_control(ctx, PacketKind::Cnp, 0);
            }
        }
        self.arm_np(ctx);
    }
}
