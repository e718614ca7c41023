//! The TCP sender: window-limited transmission and the retransmission timeout
//! (RFC 6298), with one of two loss recoveries:
//! - NewReno (RFC 6582): fast retransmit on duplicate ACKs, one hole per round trip,
//!   go-back-N after a timeout (htsim's TCP, the default);
//! - SACK (`sack`), as Linux recovers: a [`Scoreboard`] of SACKed and lost segments,
//!   RFC 6675's pipe against the window, RACK's time-based loss marks and a tail-loss
//!   probe (RFC 8985), and after a timeout a resend of only what was not SACKed.
//!
//! With `undo_spurious_rto` a timeout keeps what it changed until the first ACK that
//! advances the cumulative point: if that ACK echoes a send time from before the
//! timeout's first resend, an original transmission arrived and the timeout was
//! spurious (Eifel detection, RFC 3522), so the window, the slow-start threshold and
//! the send point go back to where they were (Eifel response, RFC 4015). TCP over EQDS
//! needs it: packets that wait for credit in a busy EQIF can outlast the RTO.
//!
//! A controller that paces (BBR, [`CongestionControl::pacing_rate`]) spaces the
//! segments at its rate, and one that models the path from every ACK
//! ([`CongestionControl::sees_every_ack`]) gets a delivery-rate sample with each
//! (`rate.rs`).
//!
//! With `nic_limit` it stops writing while its host's NIC queue holds that many
//! packets and resumes when the NIC frees a slot, as Linux's TCP small queues do, so a
//! fast sender does not drop its own packets at its own NIC.

use super::rate::DeliveryRate;
use super::scoreboard::Scoreboard;
use super::{RttEstimator, TcpConfig};
use crate::ids::PacketId;
use crate::net::packet::{flags, Packet, PacketKind};
use crate::transport::cc::{AckEvent, CongestionControl, LossEvent, RateSample};
use crate::transport::{Ctx, Endpoint, Ends};
use crate::units::{Time, SEC};

/// What a retransmission timeout changed, kept until the first new ACK after it says
/// whether the timeout was spurious.
struct RtoUndo {
    /// When the timeout fired: its resends left at or after this, so an ACK echoing
    /// an earlier send time was triggered by an original transmission.
    fired_at: Time,
    /// The congestion controller as it was before the timeout.
    cc: Box<dyn CongestionControl>,
    /// The send point before a NewReno timeout moved it back (go-back-N).
    snd_nxt: u64,
}

/// NewReno fast-recovery state.
#[derive(Clone, Copy, Debug)]
struct Recovery {
    /// Recovery ends when this byte is acknowledged (snd_nxt at entry).
    recover: u64,
    /// Window inflation from duplicate ACKs, deflated by partial ACKs (may go negative).
    inflation: i64,
    /// SACK: recovering from a timeout, where the window slow-starts from one segment.
    after_timeout: bool,
}

pub struct TcpSender {
    cfg: TcpConfig,
    ends: Ends,
    /// ECMP hash input: this flow's 5-tuple hash.
    entropy: u32,
    /// Bytes to send; `u64::MAX` for a never-ending flow.
    size: u64,
    cc: Box<dyn CongestionControl>,
    /// Oldest unacknowledged byte.
    snd_una: u64,
    /// Next byte to send.
    snd_nxt: u64,
    /// One past the highest byte ever sent (to tell retransmissions apart).
    high_tx: u64,
    dupacks: u32,
    recovery: Option<Recovery>,
    /// RFC 6582's `recover` after a timeout: no fast retransmit for duplicate ACKs
    /// below it (they are echoes of the go-back-N resend).
    timeout_recover: Option<u64>,
    /// CE-marked bytes reported by duplicate ACKs, folded into the next new ACK.
    pending_ce: u64,
    rtt: RttEstimator,
    /// Consecutive timeouts without progress.
    backoff: u32,
    /// When the retransmission timer expires, if armed.
    rto_deadline: Option<Time>,
    /// Subflow index stamped on packets (MPTCP); 0 for plain TCP.
    subflow: u8,
    /// SACK: the state of every outstanding segment.
    board: Scoreboard,
    /// SACK: when the tail-loss probe is due, if armed.
    tlp_deadline: Option<Time>,
    /// SACK: smallest RTT seen (RACK's reordering window is a quarter of it).
    min_rtt: Time,
    /// When the NIC frees a slot, if the sender stopped at `nic_limit`.
    nic_wake: Option<Time>,
    /// With `undo_spurious_rto`: what the first of a run of timeouts changed, until
    /// the first new ACK after it.
    rto_undo: Option<RtoUndo>,
    /// Delivery-rate sampling, for a controller that sees every ACK.
    rate: Option<DeliveryRate>,
    /// Pacing: the next segment may leave at this time.
    pace_at: Time,
    /// Pacing held a segment back; the timer is set for it.
    pace_wake: Option<Time>,
}

impl TcpSender {
    pub fn new(cfg: TcpConfig, ends: Ends, entropy: u32, size: Option<u64>) -> Self {
        let mss = cfg.mss as u64;
        let cc = cfg.cc.build(
            cfg.initial_window as u64 * mss,
            mss,
            cfg.dctcp_g,
            cfg.hystart,
            entropy,
        );
        TcpSender {
            rate: cc.sees_every_ack().then(DeliveryRate::default),
            pace_at: 0,
            pace_wake: None,
            cc,
            rtt: RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto),
            cfg,
            ends,
            entropy,
            size: size.unwrap_or(u64::MAX),
            snd_una: 0,
            snd_nxt: 0,
            high_tx: 0,
            dupacks: 0,
            recovery: None,
            timeout_recover: None,
            pending_ce: 0,
            backoff: 0,
            rto_deadline: None,
            subflow: 0,
            board: Scoreboard::default(),
            tlp_deadline: None,
            min_rtt: Time::MAX,
            nic_wake: None,
            rto_undo: None,
        }
    }

    /// Makes this sender subflow `index` of a multipath connection.
    pub fn as_subflow(mut self, index: u8) -> Self {
        self.subflow = index;
        self
    }

    /// When this sender's timer is next due, if armed (a multipath connection
    /// multiplexes its subflows' timers onto its one timer).
    pub fn next_deadline(&self) -> Option<Time> {
        [
            self.rto_deadline,
            self.tlp_deadline,
            self.nic_wake,
            self.pace_wake,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.cc.window()
    }

    /// Smoothed RTT, if measured.
    pub fn srtt(&self) -> Option<Time> {
        self.rtt.srtt()
    }

    /// Hands the coupling of its connection to the congestion controller.
    pub fn couple(&mut self, alpha: f64, total_window: u64) {
        self.cc.couple(alpha, total_window);
    }

    /// New bytes the window would let this sender send now, beyond what it was given.
    pub fn room(&self) -> u64 {
        if self.snd_nxt < self.size {
            return 0;
        }
        self.window().saturating_sub(self.snd_nxt - self.snd_una)
    }

    /// Gives the sender `bytes` more to send (a multipath scheduler's assignment) and
    /// sends what the window allows.
    pub fn extend(&mut self, ctx: &mut Ctx, bytes: u64) {
        self.size = self.size.saturating_add(bytes);
        self.push(ctx);
    }

    fn mss(&self) -> u64 {
        self.cfg.mss as u64
    }

    /// The window in force: the controller's, plus NewReno's inflation in recovery.
    fn window(&self) -> u64 {
        let base = self.cc.window() as i64;
        let inflation = self.recovery.map_or(0, |r| r.inflation);
        (base + inflation).max(self.mss() as i64) as u64
    }

    fn send_segment(&mut self, ctx: &mut Ctx, seq: u64) {
        let len = self.mss().min(self.size - seq) as u32;
        let retransmit = seq < self.high_tx;
        let mut f = if self.cfg.ecn { flags::ECT } else { 0 };
        if retransmit {
            f |= flags::RETRANSMIT;
            ctx.flow(self.ends.flow).retransmits += 1;
        }
        self.high_tx = self.high_tx.max(seq + len as u64);
        let idle = if self.cfg.sack {
            self.board.pipe() == 0
        } else {
            self.snd_nxt == self.snd_una
        };
        if idle {
            self.cc.on_tx_start(ctx.now);
        }
        if let Some(rate) = &mut self.rate {
            rate.on_send(seq / self.cfg.mss as u64, ctx.now, idle);
        }
        if let Some(bps) = self.cc.pacing_rate() {
            // Payload bytes, the unit of the delivery-rate samples the rate comes
            // from (Linux too spaces segments by their payload, `skb->len`).
            let bits = u128::from(len) * 8 * u128::from(SEC);
            let gap = (bits / u128::from(bps.max(1))) as Time;
            self.pace_at = self.pace_at.max(ctx.now) + gap;
        }
        ctx.send(Packet {
            size: len + self.cfg.header,
            entropy: self.entropy,
            seq,
            timestamp: ctx.now,
            payload: len,
            kind: PacketKind::Data,
            flags: f,
            class: self.cfg.class,
            subflow: self.subflow,
            ..self.ends.packet()
        });
        if self.rto_deadline.is_none() {
            self.arm_rto(ctx);
        }
    }

    /// Whether the host may not take a packet now: EQDS pushes back (and wakes us
    /// through the timer when there is room), or the NIC queue is at `nic_limit` (and
    /// the timer is set for when its packet on the wire is done).
    fn held_back(&mut self, ctx: &mut Ctx) -> bool {
        if self.pace_at > ctx.now && self.cc.pacing_rate().is_some() {
            self.pace_wake = Some(self.pace_at);
            self.sync_timer(ctx);
            return true;
        }
        if ctx.eqds_hold(self.ends.host, self.ends.peer_host) {
            return true;
        }
        let Some(limit) = self.cfg.nic_limit else {
            return false;
        };
        if ctx.nic_backlog_packets(self.ends.host) < limit {
            return false;
        }
        self.nic_wake = Some(ctx.nic_busy_until(self.ends.host).max(ctx.now) + 1);
        self.sync_timer(ctx);
        true
    }

    /// Sends what the window allows: new data, or with SACK lost segments first.
    fn push(&mut self, ctx: &mut Ctx) {
        if self.cfg.sack {
            return self.push_sack(ctx);
        }
        let wnd = self.window();
        while self.snd_nxt < self.size && self.snd_nxt - self.snd_una < wnd {
            if self.held_back(ctx) {
                return;
            }
            let seq = self.snd_nxt;
            self.send_segment(ctx, seq);
            self.snd_nxt = (seq + self.mss()).min(self.size);
        }
        if self.snd_nxt >= self.size {
            let in_flight = self.snd_nxt - self.snd_una;
            if let Some(rate) = &mut self.rate {
                rate.mark_app_limited(in_flight);
            }
        }
    }

    /// RFC 6675's NextSeg loop: while the pipe is below the window, resend the lowest
    /// lost segment, or else send a new one.
    fn push_sack(&mut self, ctx: &mut Ctx) {
        let mss = self.mss();
        while (self.board.pipe() as u64) * mss < self.cc.window() {
            let resend = self.board.first_lost();
            if resend.is_none() && self.snd_nxt >= self.size {
                let in_flight = self.board.pipe() as u64 * mss;
                if let Some(rate) = &mut self.rate {
                    rate.mark_app_limited(in_flight);
                }
                return;
            }
            if self.held_back(ctx) {
                return;
            }
            match resend {
                Some(index) => {
                    self.send_segment(ctx, index * mss);
                    self.board.resent(index, ctx.now);
                }
                None => self.send_new_sack(ctx),
            }
        }
    }

    fn send_new_sack(&mut self, ctx: &mut Ctx) {
        let seq = self.snd_nxt;
        self.send_segment(ctx, seq);
        self.board.sent_new(seq / self.mss(), ctx.now);
        self.snd_nxt = (seq + self.mss()).min(self.size);
    }

    fn arm_rto(&mut self, ctx: &mut Ctx) {
        let at = ctx.now + self.rtt.rto_with_backoff(self.backoff);
        self.rto_deadline = Some(at);
        self.sync_timer(ctx);
    }

    /// Sets the endpoint's one timer for the earliest of its deadlines.
    fn sync_timer(&self, ctx: &mut Ctx) {
        if let Some(at) = self.next_deadline() {
            ctx.set_timer(at);
        }
    }

    fn on_ack(&mut self, ctx: &mut Ctx, ack: u64, sacked: u64, echo: Time, ce: u64) {
        if self.cfg.sack {
            self.on_ack_sack(ctx, ack, sacked, echo, ce);
            return;
        }
        if ack > self.snd_una && ack <= self.high_tx {
            self.on_new_ack(ctx, ack, echo, ce);
        } else if ack == self.snd_una && self.snd_nxt > self.snd_una {
            self.pending_ce += ce;
            self.on_dup_ack(ctx);
        }
        self.push(ctx);
    }

    fn on_new_ack(&mut self, ctx: &mut Ctx, ack: u64, echo: Time, ce: u64) {
        if let Some(snd_nxt) = self.spurious_timeout(ctx, echo) {
            // Back to where the timeout found us: no go-back-N resend of what is
            // still on its way, and no echo of it to ignore.
            self.snd_nxt = self.snd_nxt.max(snd_nxt);
            self.timeout_recover = None;
            self.recovery = None;
            self.cc.on_recovery_end(ctx.now);
        }
        let acked = ack - self.snd_una;
        // Grow the window only if it limited what was sent (RFC 7661, like Linux's
        // tcp_is_cwnd_limited): an application-limited sender's window says nothing
        // about the path.
        let cwnd_limited = self.snd_nxt - self.snd_una + self.mss() >= self.window();
        let sample = self.deliver(ctx.now, (self.snd_una, ack), true, None);
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        self.dupacks = 0;
        self.backoff = 0;
        let rtt = ctx.now.checked_sub(echo);
        if let Some(rtt) = rtt {
            self.rtt.sample(rtt);
            ctx.flow(self.ends.flow).record_rtt(rtt);
        }
        let event = AckEvent {
            now: ctx.now,
            acked,
            delivered: acked,
            ce: ce + std::mem::take(&mut self.pending_ce),
            rtt,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            mss: self.mss(),
            rate: sample,
            in_flight: self.snd_nxt - self.snd_una,
        };
        if self.cfg.ecn && (self.recovery.is_none() || self.cc.ecn_in_recovery()) {
            self.cc.on_ecn(&event);
        }
        let every = self.cc.sees_every_ack();
        if every && self.recovery.is_some() {
            self.cc.on_ack(&event);
        }
        if self.timeout_recover.is_some_and(|r| ack >= r) {
            // Everything sent before the timeout is acknowledged.
            self.timeout_recover = None;
            self.cc.on_recovery_end(ctx.now);
        }
        match self.recovery {
            Some(r) if ack >= r.recover => {
                self.recovery = None;
                self.cc.on_recovery_end(ctx.now);
            }
            Some(mut r) => {
                // Partial ACK: the next hole is lost too. Resend it, deflate the window
                // by what was acknowledged and add back one segment.
                r.inflation = r.inflation - acked as i64 + self.mss() as i64;
                self.recovery = Some(r);
                self.send_segment(ctx, ack);
            }
            None if cwnd_limited || every => self.cc.on_ack(&event),
            None => {}
        }
        if self.snd_una >= self.size {
            self.rto_deadline = None;
            ctx.cancel_timer();
        } else if self.snd_una == self.snd_nxt {
            self.rto_deadline = None;
        } else {
            self.arm_rto(ctx);
        }
    }

    fn on_dup_ack(&mut self, ctx: &mut Ctx) {
        self.dupacks += 1;
        let mss = self.mss() as i64;
        if let Some(r) = &mut self.recovery {
            r.inflation += mss;
            return;
        }
        let after_timeout_echo = self.timeout_recover.is_some_and(|r| self.snd_una < r);
        if self.dupacks == self.cfg.dupack_threshold && !after_timeout_echo {
            let flight = self.snd_nxt - self.snd_una;
            // Without SACK each duplicate ACK says a segment left the network.
            let arrived = u64::from(self.dupacks) * self.mss();
            self.cc.on_loss(&LossEvent {
                now: ctx.now,
                flight,
                pipe: flight.saturating_sub(arrived),
                delivered: self.mss(),
                mss: self.mss(),
            });
            self.recovery = Some(Recovery {
                recover: self.snd_nxt,
                inflation: self.cfg.dupack_threshold as i64 * self.mss() as i64,
                after_timeout: false,
            });
            let seq = self.snd_una;
            self.send_segment(ctx, seq);
        }
    }

    /// An ACK with SACK: update the scoreboard from its block and its echoed send
    /// time, mark what that shows lost, enter recovery on the first loss, and send.
    fn on_ack_sack(&mut self, ctx: &mut Ctx, ack: u64, sacked: u64, echo: Time, ce: u64) {
        let mss = self.mss();
        let now = ctx.now;
        // The receiver names the segment that triggered the ACK; above the
        // cumulative point that is a SACK block.
        let mut sample = None;
        // Bytes this ACK newly delivered, cumulatively or by SACK.
        let mut delivered = 0;
        if sacked >= ack && sacked < self.high_tx {
            if self.board.sacked(sacked / mss) {
                delivered += mss;
            }
            sample = self.deliver(now, (sacked, sacked + 1), false, None);
        }
        self.board.delivered(echo, now);
        if ack > self.snd_una && ack <= self.high_tx {
            if self.spurious_timeout(ctx, echo).is_some() {
                // What the timeout marked lost is still on its way: out of recovery
                // (the restored controller's too, if the timeout came during a fast
                // recovery), and RACK judges those segments again.
                self.recovery = None;
                self.cc.on_recovery_end(now);
                self.board.unmark_lost();
            }
            let cwnd_limited = (self.board.pipe() as u64 + 1) * mss >= self.cc.window();
            let acked = ack - self.snd_una;
            let sample = self.deliver(now, (self.snd_una, ack), true, sample);
            self.snd_una = ack;
            // What SACK reported before is not delivered again.
            let sacked_before = u64::from(self.board.acked_to(ack.div_ceil(mss)));
            delivered += acked.saturating_sub(sacked_before * mss);
            self.dupacks = 0;
            self.backoff = 0;
            let rtt = now.checked_sub(echo);
            if let Some(rtt) = rtt {
                self.rtt.sample(rtt);
                self.min_rtt = self.min_rtt.min(rtt);
                ctx.flow(self.ends.flow).record_rtt(rtt);
            }
            let event = AckEvent {
                now,
                acked,
                delivered,
                ce: ce + std::mem::take(&mut self.pending_ce),
                rtt,
                snd_una: self.snd_una,
                snd_nxt: self.snd_nxt,
                mss,
                rate: sample,
                in_flight: self.board.pipe() as u64 * mss,
            };
            if self.cfg.ecn && (self.recovery.is_none() || self.cc.ecn_in_recovery()) {
                self.cc.on_ecn(&event);
            }
            let every = self.cc.sees_every_ack();
            match self.recovery {
                Some(r) if ack >= r.recover => {
                    // As Linux: the window comes back, then this ACK grows it (and
                    // BBR caps it at its target).
                    self.recovery = None;
                    self.cc.on_recovery_end(now);
                    if r.after_timeout || every {
                        self.cc.on_ack(&event);
                    }
                }
                // After a timeout the window slow-starts again while the resends go.
                Some(r) if r.after_timeout || every => self.cc.on_ack(&event),
                Some(_) => {}
                None if cwnd_limited || every => self.cc.on_ack(&event),
                None => {}
            }
            // A new ACK ends any probe; the next one may be armed.
            self.tlp_deadline = None;
            if self.snd_una >= self.size {
                self.rto_deadline = None;
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
            self.pending_ce += ce;
            if self.cc.sees_every_ack() && (sample.is_some() || delivered > 0) {
                // A SACK alone delivers data too: the model hears of it.
                let event = AckEvent {
                    now,
                    acked: 0,
                    delivered,
                    ce: 0,
                    rtt: None,
                    snd_una: self.snd_una,
                    snd_nxt: self.snd_nxt,
                    mss,
                    rate: sample,
                    in_flight: self.board.pipe() as u64 * mss,
                };
                self.cc.on_ack(&event);
            }
        }
        let reorder_window = if self.min_rtt == Time::MAX {
            0
        } else {
            self.min_rtt / 4
        };
        self.board.mark_losses(now, reorder_window);
        if self.recovery.is_none() && self.dupacks >= self.cfg.dupack_threshold {
            // Duplicate ACKs whose SACK blocks were lost still say the head is gone.
            self.board.mark_lost(self.snd_una / mss);
        }
        if self.recovery.is_none() && self.board.lost() > 0 {
            self.cc.on_loss(&LossEvent {
                now,
                flight: self.snd_nxt - self.snd_una,
                pipe: self.board.pipe() as u64 * mss,
                delivered,
                mss,
            });
            self.recovery = Some(Recovery {
                recover: self.high_tx,
                inflation: 0,
                after_timeout: false,
            });
        }
        self.push_sack(ctx);
        self.arm_tail_loss_probe(ctx);
    }

    /// Counts bytes `from..to` delivered at `now` (cumulatively ACKed if
    /// `cumulative`, else one SACKed segment) for the delivery-rate sampler, and
    /// returns the sample of the latest sent of them, or `earlier` if none gives one.
    /// Nothing without a sampler.
    fn deliver(
        &mut self,
        now: Time,
        (from, to): (u64, u64),
        cumulative: bool,
        earlier: Option<RateSample>,
    ) -> Option<RateSample> {
        let mss = self.mss();
        let size = self.size;
        let rate = self.rate.as_mut()?;
        let mut best = earlier;
        for index in from / mss..to.div_ceil(mss) {
            let bytes = mss.min(size.saturating_sub(index * mss));
            if let Some(s) = rate.on_delivered(index, bytes, now) {
                if best.is_none_or(|b| s.prior_delivered >= b.prior_delivered) {
                    best = Some(s);
                }
            }
        }
        if cumulative {
            rate.acked_to(to / mss);
        }
        best
    }

    /// Arms the tail-loss probe (RFC 8985 §7.2) two smoothed RTTs out, plus the
    /// delayed-ACK timeout when a single segment is out, and never after the RTO.
    fn arm_tail_loss_probe(&mut self, ctx: &mut Ctx) {
        let Some(srtt) = self.rtt.srtt() else {
            return;
        };
        if self.recovery.is_some() || self.tlp_deadline.is_some() || self.snd_nxt == self.snd_una {
            return;
        }
        let mut pto = 2 * srtt;
        if self.board.outstanding() == 1 {
            pto += self.cfg.delayed_ack.map_or(0, |d| d.timeout);
        }
        let at = ctx.now + pto;
        if self.rto_deadline.is_some_and(|rto| rto <= at) {
            return;
        }
        self.tlp_deadline = Some(at);
        self.sync_timer(ctx);
    }

    /// The probe: one new segment if there is one, else the last one not SACKed again,
    /// so that the ACK it draws reveals a lost tail to RACK.
    fn send_tail_loss_probe(&mut self, ctx: &mut Ctx) {
        if self.held_back(ctx) {
            if self.pace_wake.is_some() {
                // Held by pacing: the probe goes when the pacer allows, not never.
                self.tlp_deadline = self.pace_wake;
                self.sync_timer(ctx);
            }
            return;
        }
        if self.snd_nxt < self.size {
            self.send_new_sack(ctx);
        } else if let Some(index) = self.board.last_unsacked() {
            self.send_segment(ctx, index * self.mss());
            self.board.resent(index, ctx.now);
        }
        self.arm_rto(ctx);
    }

    /// Called with the first ACK that advances the cumulative point: whether it ends
    /// a timeout that was spurious (it echoes a send time from before the timeout),
    /// and if so puts the congestion controller back and returns the rest of what the
    /// send point the timeout found, for the caller's recovery to undo the rest.
    fn spurious_timeout(&mut self, ctx: &mut Ctx, echo: Time) -> Option<u64> {
        let undo = self.rto_undo.take()?;
        if echo >= undo.fired_at {
            return None;
        }
        ctx.flow(self.ends.flow).spurious_timeouts += 1;
        self.cc = undo.cc;
        Some(undo.snd_nxt)
    }

    fn on_timeout(&mut self, ctx: &mut Ctx) {
        ctx.flow(self.ends.flow).timeouts += 1;
        if self.cfg.undo_spurious_rto && self.rto_undo.is_none() {
            // The first of a run of timeouts: later ones back off from its state.
            self.rto_undo = Some(RtoUndo {
                fired_at: ctx.now,
                cc: self.cc.save(),
                snd_nxt: self.snd_nxt,
            });
        }
        // A timeout takes everything outstanding for lost: nothing is in the network.
        self.cc.on_timeout(&LossEvent {
            now: ctx.now,
            flight: self.snd_nxt - self.snd_una,
            pipe: 0,
            delivered: 0,
            mss: self.mss(),
        });
        if self.cfg.sack {
            // Resend only what was not SACKed, slow-starting from one segment.
            self.board.mark_all_lost();
            self.recovery = Some(Recovery {
                recover: self.high_tx,
                inflation: 0,
                after_timeout: true,
            });
            self.dupacks = 0;
            self.backoff += 1;
            self.rto_deadline = None;
            self.tlp_deadline = None;
            self.push(ctx);
            return;
        }
        self.timeout_recover = Some(self.high_tx);
        self.recovery = None;
        self.dupacks = 0;
        self.backoff += 1;
        self.snd_nxt = self.snd_una;
        self.rto_deadline = None;
        self.push(ctx);
    }
}

impl Endpoint for TcpSender {
    fn on_start(&mut self, ctx: &mut Ctx) {
        self.push(ctx);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        let p = *ctx.packet(pkt);
        ctx.free(pkt);
        // TCP cannot use trimmed or returned headers: to it they are losses.
        if p.kind == PacketKind::Ack && !p.has(flags::TRIMMED | flags::RETURNED) {
            self.on_ack(ctx, p.ack, p.seq, p.timestamp, p.ce_bytes as u64);
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx) {
        let now = ctx.now;
        if self.rto_deadline.is_some_and(|at| at <= now) && self.snd_una < self.size {
            self.on_timeout(ctx);
            return;
        }
        if self.nic_wake.is_some_and(|at| at <= now) {
            self.nic_wake = None;
        }
        if self.pace_wake.is_some_and(|at| at <= now) {
            self.pace_wake = None;
        }
        if self.tlp_deadline.is_some_and(|at| at <= now) {
            self.tlp_deadline = None;
            self.send_tail_loss_probe(ctx);
        }
        if self.next_deadline().is_some_and(|at| at > now) {
            self.sync_timer(ctx);
        }
        // Early: EQDS woke us after pushing back (the timer is shared); send what
        // the window allows. Without EQDS this finds nothing to do.
        self.push(ctx);
    }
}
