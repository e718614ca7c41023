//! The packet-pair sender (§5, Appendix A): one pair, then pairs paced at the rate
//! the controller gives, under its in-flight cap, with TCP's NewReno reliability.

use super::control::{Adjust, RateControl};
use super::{pair_tag, PacketPairConfig};
use crate::ids::PacketId;
use crate::net::packet::{flags, Packet, PacketKind};
use crate::transport::tcp::RttEstimator;
use crate::transport::{Ctx, Endpoint, Ends};
use crate::units::{serialisation_time, Time, SEC};

/// Where the flow is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No estimate yet: the first pair is due (`false`) or sent, waiting for its
    /// ACKs (`true`).
    Startup(bool),
    /// Pairs paced at the controller's rate.
    Paced,
}

pub struct PacketPairSender {
    cfg: PacketPairConfig,
    ends: Ends,
    /// ECMP hash input: this flow's 5-tuple hash.
    entropy: u32,
    /// Bytes to send; `u64::MAX` for a never-ending flow.
    size: u64,
    ctl: RateControl,
    phase: Phase,
    /// Oldest unacknowledged byte.
    snd_una: u64,
    /// Next byte to send.
    snd_nxt: u64,
    /// One past the highest byte ever sent.
    high_tx: u64,
    dupacks: u32,
    /// In fast recovery until this byte is acknowledged (snd_nxt at entry).
    recover: Option<u64>,
    /// After a timeout, until this byte is acknowledged: duplicate ACKs are echoes
    /// of the go-back-N resend, not a new loss (RFC 6582).
    timeout_recover: Option<u64>,
    rtt: RttEstimator,
    /// Consecutive timeouts without progress.
    backoff: u32,
    /// When the retransmission timer expires, if armed.
    rto_deadline: Option<Time>,
    /// The next pair may leave at this time.
    next_pair_at: Time,
    /// The pacer holds the next pair; the timer is set for it.
    pace_wake: Option<Time>,
    /// The first pair's second packet waits until then (`bytes_per_round` spacing).
    second_at: Option<Time>,
    /// Bytes owed by rate increases, sent beside the pairs (§5's injection).
    inject: f64,
    /// Pairs sent so far (the next one's number is one more).
    pairs: u64,
    /// The sender's link rate, bits/s.
    line_bps: u64,
    /// The rate last written to the rate log (`[output] rates_csv`).
    logged_bps: f64,
}

impl PacketPairSender {
    pub fn new(
        cfg: PacketPairConfig,
        ends: Ends,
        entropy: u32,
        size: Option<u64>,
        line_bps: u64,
    ) -> Self {
        PacketPairSender {
            ctl: RateControl::new(cfg, line_bps),
            rtt: RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto),
            cfg,
            ends,
            entropy,
            size: size.unwrap_or(u64::MAX),
            phase: Phase::Startup(false),
            snd_una: 0,
            snd_nxt: 0,
            high_tx: 0,
            dupacks: 0,
            recover: None,
            timeout_recover: None,
            backoff: 0,
            rto_deadline: None,
            next_pair_at: 0,
            pace_wake: None,
            second_at: None,
            inject: 0.0,
            pairs: 0,
            line_bps,
            logged_bps: 0.0,
        }
    }

    fn mss(&self) -> u64 {
        u64::from(self.cfg.mss)
    }

    fn wire(&self) -> u64 {
        u64::from(self.cfg.wire())
    }

    /// Packets still to be sent from `snd_nxt` on.
    fn packets_left(&self) -> u64 {
        (self.size - self.snd_nxt).div_ceil(self.mss())
    }

    /// Wire bytes in the network: what is unacknowledged, less a packet for each
    /// duplicate ACK (each says one left the network, as NewReno's window inflation
    /// counts them).
    fn pipe(&self) -> u64 {
        let packets = (self.snd_nxt - self.snd_una).div_ceil(self.mss());
        packets.saturating_sub(u64::from(self.dupacks)) * self.wire()
    }

    /// Whether `n` more full packets fit under the cap (never below one pair).
    fn room(&self, n: u64) -> bool {
        self.pipe() + n * self.wire() <= self.ctl.cap_bytes(2 * self.wire())
    }

    /// Sends the packet starting at byte `seq` with pair tag `tag`; returns its
    /// wire bytes.
    fn send_packet(&mut self, ctx: &mut Ctx, seq: u64, tag: u64) -> u64 {
        let len = self.mss().min(self.size - seq) as u32;
        let mut f = if self.cfg.ecn { flags::ECT } else { 0 };
        if seq < self.high_tx {
            f |= flags::RETRANSMIT;
            ctx.flow(self.ends.flow).retransmits += 1;
        }
        self.high_tx = self.high_tx.max(seq + u64::from(len));
        ctx.send(Packet {
            size: len + self.cfg.header,
            entropy: self.entropy,
            seq,
            ack: tag,
            timestamp: ctx.now,
            payload: len,
            kind: PacketKind::Data,
            flags: f,
            class: self.cfg.class,
            ..self.ends.packet()
        });
        if self.rto_deadline.is_none() {
            self.arm_rto(ctx);
        }
        u64::from(len + self.cfg.header)
    }

    /// Sends the next new (or, after a timeout, resent) packet.
    fn send_next(&mut self, ctx: &mut Ctx, tag: u64) -> u64 {
        let seq = self.snd_nxt;
        self.snd_nxt = (seq + self.mss()).min(self.size);
        self.send_packet(ctx, seq, tag)
    }

    /// Sends a pair (or a flow's lone last packet); returns the wire bytes sent.
    /// With `spaced`, the second packet waits for the `bytes_per_round` spacing.
    fn send_pair(&mut self, ctx: &mut Ctx, spaced: bool) -> u64 {
        if self.packets_left() < 2 {
            return self.send_next(ctx, 0);
        }
        self.pairs += 1;
        let first = self.send_next(ctx, pair_tag(self.pairs, false));
        let bpr = u64::from(self.cfg.bytes_per_round);
        if spaced && bpr > 2 * self.mss() {
            let gap = (bpr - self.mss()) as u32;
            self.second_at = Some(ctx.now + serialisation_time(gap, self.line_bps));
            self.sync_timer(ctx);
            return first;
        }
        first + self.send_next(ctx, pair_tag(self.pairs, true))
    }

    /// Sends what the phase, the pacer and the cap allow.
    fn push(&mut self, ctx: &mut Ctx) {
        match self.phase {
            Phase::Startup(false) if self.snd_nxt < self.size => {
                self.phase = Phase::Startup(true);
                self.send_pair(ctx, true);
                return;
            }
            Phase::Startup(_) => return,
            Phase::Paced => {}
        }
        let Some(rate) = self.ctl.rate_bps() else {
            return;
        };
        // Injection: whole packets owed by a rate increase, now.
        let wire = self.wire() as f64;
        while self.inject >= wire && self.snd_nxt < self.size && self.room(1) {
            self.inject -= self.send_next(ctx, 0) as f64;
        }
        while self.snd_nxt < self.size {
            if ctx.now < self.next_pair_at {
                self.pace_wake = Some(self.next_pair_at);
                self.sync_timer(ctx);
                return;
            }
            if !self.room(self.packets_left().min(2)) {
                // An ACK makes room.
                return;
            }
            let bytes = self.send_pair(ctx, false);
            self.next_pair_at = ctx.now + (bytes as f64 * 8.0 * SEC as f64 / rate) as Time;
        }
    }

    /// Applies a rate change's make-up (`control::Adjust`): owed bytes are injected;
    /// bytes sent too many hold the next pair back for as long as the new rate
    /// takes to send them, less any injection still owed.
    fn adjust(&mut self, ctx: &mut Ctx, adjust: Adjust) {
        let rate = self.ctl.rate_bps().unwrap_or(0.0);
        if rate != self.logged_bps && ctx.logs_rates() {
            ctx.log_rate(self.ends.flow, rate);
        }
        self.logged_bps = rate;
        self.inject += adjust;
        if self.inject < 0.0 {
            if let Some(rate) = self.ctl.rate_bps() {
                let skip = (-self.inject * 8.0 * SEC as f64 / rate) as Time;
                self.next_pair_at = self.next_pair_at.max(ctx.now) + skip;
            }
            self.inject = 0.0;
        }
        // Never more than the cap at once.
        self.inject = self.inject.min(self.ctl.cap_bytes(0) as f64);
    }

    fn arm_rto(&mut self, ctx: &mut Ctx) {
        self.rto_deadline = Some(ctx.now + self.rtt.rto_with_backoff(self.backoff));
        self.sync_timer(ctx);
    }

    fn next_deadline(&self) -> Option<Time> {
        [self.rto_deadline, self.pace_wake, self.second_at]
            .into_iter()
            .flatten()
            .min()
    }

    fn sync_timer(&self, ctx: &mut Ctx) {
        if let Some(at) = self.next_deadline() {
            ctx.set_timer(at);
        }
    }

    fn on_ack(&mut self, ctx: &mut Ctx, p: &Packet) {
        let now = ctx.now;
        let rtt = now.checked_sub(p.timestamp);
        if let Some(rtt) = rtt {
            self.ctl.on_rtt(rtt);
        }
        if p.seq > 0 {
            let adjust = self
                .ctl
                .on_pair_gap(now, p.payload + self.cfg.header, p.seq);
            self.adjust(ctx, adjust);
        }
        let (ack, ce) = (p.ack, u64::from(p.ce_bytes));
        if ack > self.snd_una && ack <= self.high_tx {
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            self.dupacks = 0;
            self.backoff = 0;
            if let Some(rtt) = rtt {
                self.rtt.sample(rtt);
                ctx.flow(self.ends.flow).record_rtt(rtt);
            }
            if self.timeout_recover.is_some_and(|r| ack >= r) {
                self.timeout_recover = None;
            }
            match self.recover {
                Some(r) if ack >= r => self.recover = None,
                // A partial ACK: the next hole is lost too (RFC 6582).
                Some(_) => {
                    self.send_packet(ctx, ack, 0);
                }
                None => {}
            }
            if self.snd_una >= self.size {
                self.rto_deadline = None;
                self.pace_wake = None;
                ctx.cancel_timer();
                return;
            }
            if self.snd_una == self.snd_nxt {
                self.rto_deadline = None;
            } else {
                self.arm_rto(ctx);
            }
        } else if ack == self.snd_una && self.snd_nxt > self.snd_una {
            self.dupacks += 1;
            let echo = self.timeout_recover.is_some_and(|r| self.snd_una < r);
            if self.dupacks == self.cfg.dupack_threshold && self.recover.is_none() && !echo {
                self.recover = Some(self.snd_nxt);
                let seq = self.snd_una;
                self.send_packet(ctx, seq, 0);
            }
        }
        let adjust = self
            .ctl
            .on_ack(u64::from(p.payload), ce, self.snd_una, self.snd_nxt);
        self.adjust(ctx, adjust);
        if self.phase != Phase::Paced && self.ctl.rate_bps().is_some() {
            self.phase = Phase::Paced;
            self.next_pair_at = self.next_pair_at.max(now);
        } else if self.phase == Phase::Startup(true) && self.snd_una == self.snd_nxt {
            // Everything sent is acknowledged and no gap came: after a timeout the
            // original packets, delivered late, acknowledged the resent pair's bytes
            // too. Its own ACKs would bring the gap, but if the pair was dropped
            // nothing is in flight and no timer runs: send another pair, as at the
            // start (waiting here left the flow stuck for good).
            self.phase = Phase::Startup(false);
        }
        self.push(ctx);
    }

    /// A retransmission timeout: everything outstanding is taken for lost; the flow
    /// goes back to its first unacknowledged byte and starts again with a pair.
    fn on_timeout(&mut self, ctx: &mut Ctx) {
        ctx.flow(self.ends.flow).timeouts += 1;
        self.backoff += 1;
        self.timeout_recover = Some(self.high_tx);
        self.recover = None;
        self.dupacks = 0;
        self.snd_nxt = self.snd_una;
        self.rto_deadline = None;
        self.pace_wake = None;
        self.second_at = None;
        self.inject = 0.0;
        self.ctl.restart();
        // Logs the rate's going (nothing else: the injection is void).
        self.adjust(ctx, 0.0);
        self.phase = Phase::Startup(false);
        self.next_pair_at = ctx.now;
        self.push(ctx);
    }
}

impl Endpoint for PacketPairSender {
    fn on_start(&mut self, ctx: &mut Ctx) {
        self.push(ctx);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        let p = *ctx.packet(pkt);
        ctx.free(pkt);
        if p.kind == PacketKind::Ack && !p.has(flags::TRIMMED | flags::RETURNED) {
            self.on_ack(ctx, &p);
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx) {
        let now = ctx.now;
        if self.snd_una >= self.size {
            return;
        }
        if self.rto_deadline.is_some_and(|at| at <= now) {
            self.on_timeout(ctx);
            return;
        }
        if self.second_at.is_some_and(|at| at <= now) {
            self.second_at = None;
            // The spaced first pair's second packet, unless a timeout resent it.
            if self.snd_nxt < self.size && self.phase == Phase::Startup(true) {
                self.send_next(ctx, pair_tag(self.pairs, true));
            }
        }
        if self.pace_wake.is_some_and(|at| at <= now) {
            self.pace_wake = None;
        }
        self.push(ctx);
        self.sync_timer(ctx);
    }
}
