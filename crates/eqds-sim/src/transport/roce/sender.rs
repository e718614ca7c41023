//! The RoCE requester: one queue pair sending a flow's messages, paced at DCQCN's
//! rate, resending go-back-N or go-back-0.
//!
//! One endpoint timer serves three clocks, armed at the earliest: the pacer (the next
//! packet may leave a packet's size at the current rate after the previous one, the
//! NIC's per-QP rate limiter of spec §1.3.2), the RP's α, increase and deferred-cut
//! timers, and the retransmission timeout. Nothing is kept per packet: a go-back
//! sender resends from a PSN, which the layout turns back into bytes.
//!
//! With DASR, each ACK or NAK that carries an advertisement sets the flow's DASR
//! rate, C_r / (n · k_s); the pacer runs at the lower of it and DCQCN's rate (the
//! line rate without DCQCN). DCQCN's own state moves only on CNPs, as the Blitz
//! digest's sender rule has it: a cut starts from DCQCN's rate, not from the DASR
//! share, so it bites only once DCQCN's rate falls below the share.

use super::dcqcn::{DcqcnParams, ReactionPoint, RpStats};
use super::{advert_of, Layout, Recovery, RoceConfig};
use crate::ids::PacketId;
use crate::net::packet::{flags, Packet, PacketKind};
use crate::transport::{Ctx, Endpoint, Ends};
use crate::units::{serialisation_time, Time, SEC};

pub struct RoceSender {
    cfg: RoceConfig,
    ends: Ends,
    entropy: u32,
    layout: Layout,
    /// First PSN not acknowledged.
    una: u64,
    /// Next PSN to send.
    nxt: u64,
    /// First PSN never sent: a send below it is a resend.
    high: u64,
    /// DCQCN's reaction point; `None` sends at line rate.
    rp: Option<ReactionPoint>,
    /// RP counters already added to the run's totals.
    reported: RpStats,
    /// The previous packet's send time and wire size, which pace the next.
    last_send: Option<(Time, u32)>,
    /// The timeout now, doubled from `cfg.rto` on each expiry without progress.
    rto: Time,
    /// When the timeout fires, while packets are unacknowledged.
    rto_at: Option<Time>,
    /// The NIC queue was full: look again then.
    nic_wake: Option<Time>,
    /// What the endpoint timer is set to.
    timer: Option<Time>,
    /// The share the receiver's last advertisement gave this flow, bits per second
    /// (`None`: none heard yet, or DASR is off).
    dasr_bps: Option<f64>,
    /// The pacing rate last written to the run's rate log (0: none yet).
    logged_bps: f64,
}

impl RoceSender {
    /// The requester of a flow of `size` bytes (`None`: endless), hashed `entropy`
    /// onto ECMP paths, with DCQCN run by `dcqcn` (for this host's line rate) or none.
    pub fn new(
        cfg: RoceConfig,
        ends: Ends,
        entropy: u32,
        size: Option<u64>,
        dcqcn: Option<DcqcnParams>,
    ) -> Self {
        RoceSender {
            layout: Layout::new(size, cfg.message_size, cfg.mss, cfg.first_extra),
            rp: dcqcn.map(ReactionPoint::new),
            reported: RpStats::default(),
            rto: cfg.rto,
            cfg,
            ends,
            entropy,
            una: 0,
            nxt: 0,
            high: 0,
            last_send: None,
            rto_at: None,
            nic_wake: None,
            timer: None,
            dasr_bps: None,
            logged_bps: 0.0,
        }
    }

    /// Where a resend for a lost `psn` starts.
    fn recovery_point(&self, psn: u64) -> u64 {
        match self.cfg.recovery {
            Recovery::GoBackN => psn,
            Recovery::GoBack0 => self.layout.message_start(psn),
        }
    }

    /// When the next packet may leave: the previous one's size at the current rate
    /// after it. Computed when asked, so that a cut or an increase in between takes
    /// effect at once, as a NIC's rate limiter does.
    fn pace_at(&self, ctx: &Ctx) -> Time {
        let Some((at, size)) = self.last_send else {
            return 0;
        };
        let gap = match self.limit_bps(ctx) {
            Some(rate) => (f64::from(size) * 8.0 * SEC as f64 / rate).ceil() as Time,
            None => serialisation_time(size, ctx.host_rate(self.ends.host)),
        };
        at + gap
    }

    /// The rate the flow is paced at, if anything holds it below the line rate:
    /// DCQCN's RC, and DASR's share if lower.
    fn limit_bps(&self, ctx: &Ctx) -> Option<f64> {
        let dcqcn = self.rp.as_ref().map(ReactionPoint::rate_bps);
        match (dcqcn, self.dasr_bps) {
            (Some(r), Some(d)) => Some(r.min(d)),
            (r, None) => r,
            (None, Some(d)) => Some(d.min(ctx.host_rate(self.ends.host) as f64)),
        }
    }

    /// Whether DASR's share is what holds the flow back now.
    fn dasr_binds(&self, ctx: &Ctx) -> bool {
        self.dasr_bps.is_some_and(|d| {
            let other = self.rp.as_ref().map_or_else(
                || ctx.host_rate(self.ends.host) as f64,
                ReactionPoint::rate_bps,
            );
            d < other
        })
    }

    /// An ACK or NAK carried the receiver's advertisement: pace at the share it
    /// gives from now on (the next packet's gap already uses it).
    fn on_advert(&mut self, ctx: &mut Ctx, a: super::dasr::Advert) {
        let rate = a.rate_bps();
        if self.dasr_bps != Some(rate) {
            self.dasr_bps = Some(rate);
            if let Some(d) = ctx.dasr() {
                d.counters.rate_updates += 1;
            }
        }
    }

    /// Sends what the pacer and the NIC allow now.
    fn send_due(&mut self, ctx: &mut Ctx) {
        while self.nxt < self.layout.packets() && self.nic_wake.is_none() {
            if self.pace_at(ctx) > ctx.now {
                return;
            }
            let host = self.ends.host;
            if ctx.eqds_tunnels_transports() {
                // Over EQDS the engine writes into the RDMA EQIF, not the NIC queue:
                // what slows it is the EQIF's feedback (CNPs to the RP, or a PAUSE).
                if ctx.rdma_engine_paused(host) {
                    // Obey the PAUSE; look again a packet time later.
                    let mtu = self.cfg.mss + self.cfg.header;
                    self.nic_wake = Some(ctx.now + serialisation_time(mtu, ctx.host_rate(host)));
                    ctx.roce_counters().nic_waits += 1;
                    return;
                }
            } else if ctx.nic_backlog_packets(host) >= self.cfg.nic_limit {
                // The NIC frees a slot when its packet on the wire is done; if it is
                // idle with a queue (paused), look again a packet time later.
                let busy = ctx.nic_busy_until(host);
                let wake = if busy >= ctx.now {
                    busy + 1
                } else {
                    ctx.now
                        + serialisation_time(self.cfg.mss + self.cfg.header, ctx.host_rate(host))
                };
                self.nic_wake = Some(wake);
                ctx.roce_counters().nic_waits += 1;
                return;
            }
            let psn = self.nxt;
            self.transmit(ctx, psn);
            self.nxt += 1;
            self.high = self.high.max(self.nxt);
        }
    }

    fn transmit(&mut self, ctx: &mut Ctx, psn: u64) {
        let payload = self.layout.payload(psn);
        let mut size = payload + self.cfg.header;
        if self.layout.is_first(psn) {
            size += self.cfg.first_extra;
        }
        let resend = psn < self.high;
        let mut f = flags::PSN | if resend { flags::RETRANSMIT } else { 0 };
        if self.rp.is_some() {
            f |= flags::ECT;
        }
        ctx.send(Packet {
            size,
            entropy: self.entropy,
            seq: psn,
            timestamp: ctx.now,
            payload,
            kind: PacketKind::Data,
            flags: f,
            class: self.cfg.class,
            ..self.ends.packet()
        });
        let counters = ctx.roce_counters();
        counters.data_packets += 1;
        if resend {
            counters.retransmitted_packets += 1;
            ctx.flow(self.ends.flow).retransmits += 1;
        }
        self.last_send = Some((ctx.now, size));
        if self.dasr_binds(ctx) {
            if let Some(d) = ctx.dasr() {
                d.counters.dasr_paced_packets += 1;
            }
        }
        if let Some(rp) = &mut self.rp {
            rp.on_sent(u64::from(size));
            self.report(ctx);
        }
        if self.rto_at.is_none() {
            self.rto_at = Some(ctx.now + self.rto);
        }
    }

    /// The receiver expects `ack` next: everything below arrived.
    fn on_ack(&mut self, ctx: &mut Ctx, ack: u64) {
        if ack <= self.una {
            return;
        }
        self.una = ack.min(self.high);
        self.nxt = self.nxt.max(self.una);
        self.rto = self.cfg.rto;
        self.rto_at = (self.una < self.high).then(|| ctx.now + self.rto);
    }

    /// The receiver lacks `expected` and drops what follows it: go back.
    fn on_nak(&mut self, ctx: &mut Ctx, expected: u64) {
        self.on_ack(ctx, expected);
        let to = self.recovery_point(expected);
        if to < self.nxt {
            self.nxt = to;
            ctx.roce_counters().nak_go_backs += 1;
        }
    }

    /// No ACK progress for a timeout: resend from the first unacknowledged packet,
    /// and wait twice as long for the next (capped).
    fn on_timeout(&mut self, ctx: &mut Ctx) {
        if self.una >= self.high {
            self.rto_at = None;
            return;
        }
        ctx.flow(self.ends.flow).timeouts += 1;
        ctx.roce_counters().timeouts += 1;
        self.nxt = self.recovery_point(self.una);
        self.rto = (self.rto * 2).min(self.cfg.rto_max);
        self.rto_at = Some(ctx.now + self.rto);
    }

    /// Adds what the RP counted since the last report to the run's totals.
    fn report(&mut self, ctx: &mut Ctx) {
        let Some(rp) = &self.rp else {
            return;
        };
        let (s, r) = (rp.stats(), self.reported);
        if s == r {
            return;
        }
        let rate = rp.rate_bps();
        let c = ctx.roce_counters();
        c.cnps_received += s.cnps - r.cnps;
        c.rate_cuts += s.cuts - r.cuts;
        c.min_rate_bound += s.floored - r.floored;
        c.fast_recovery += s.fast_recovery - r.fast_recovery;
        c.additive_increase += s.additive - r.additive;
        c.hyper_increase += s.hyper - r.hyper;
        if s.cuts > r.cuts {
            c.lowest_rate_bps = Some(c.lowest_rate_bps.map_or(rate, |l| l.min(rate)));
        }
        self.reported = s;
    }

    /// Sends what is due, then sets the timer for the earliest clock.
    fn pump(&mut self, ctx: &mut Ctx) {
        if ctx.logs_rates() {
            let rate = self
                .limit_bps(ctx)
                .unwrap_or(ctx.host_rate(self.ends.host) as f64);
            if rate != self.logged_bps {
                self.logged_bps = rate;
                ctx.log_rate(self.ends.flow, rate);
            }
        }
        self.send_due(ctx);
        let pace = (self.nxt < self.layout.packets() && self.nic_wake.is_none())
            .then(|| self.pace_at(ctx).max(ctx.now + 1));
        let next = [
            pace,
            self.nic_wake,
            self.rto_at,
            self.rp.as_ref().and_then(ReactionPoint::poll_timeout),
        ]
        .into_iter()
        .flatten()
        .min();
        if next != self.timer {
            match next {
                Some(at) => ctx.set_timer(at),
                None => ctx.cancel_timer(),
            }
            self.timer = next;
        }
    }
}

impl Endpoint for RoceSender {
    fn on_start(&mut self, ctx: &mut Ctx) {
        if self.layout.packets() == 0 {
            // Nothing to send: an empty flow is complete as it starts.
            ctx.complete_flow(self.ends.flow);
            return;
        }
        self.pump(ctx);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        let p = *ctx.packet(pkt);
        ctx.free(pkt);
        if let Some(a) = advert_of(&p) {
            self.on_advert(ctx, a);
        }
        match p.kind {
            PacketKind::Ack => {
                self.on_ack(ctx, p.ack);
                if let Some(rtt) = ctx.now.checked_sub(p.timestamp) {
                    ctx.flow(self.ends.flow).record_rtt(rtt);
                }
            }
            PacketKind::Nack => self.on_nak(ctx, p.ack),
            PacketKind::Cnp => {
                if let Some(rp) = &mut self.rp {
                    rp.on_cnp(ctx.now);
                    self.report(ctx);
                }
            }
            // Nothing else is addressed to a RoCE sender.
            _ => return,
        }
        self.pump(ctx);
    }

    fn on_timer(&mut self, ctx: &mut Ctx) {
        let now = ctx.now;
        self.timer = None;
        if let Some(rp) = &mut self.rp {
            if rp.poll_timeout().is_some_and(|t| t <= now) {
                rp.handle_timeout(now);
                self.report(ctx);
            }
        }
        if self.rto_at.is_some_and(|t| t <= now) {
            self.on_timeout(ctx);
        }
        if self.nic_wake.is_some_and(|t| t <= now) {
            self.nic_wake = None;
        }
        self.pump(ctx);
    }
}
