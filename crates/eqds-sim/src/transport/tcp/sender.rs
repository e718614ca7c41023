//! The TCP sender: window-limited transmission, NewReno fast retransmit and recovery
//! (RFC 6582), and the retransmission timeout with go-back-N (RFC 6298 §5).

use super::{RttEstimator, TcpConfig};
use crate::ids::{EndpointId, FlowId, HostId, PacketId};
use crate::net::packet::{flags, Packet, PacketKind};
use crate::transport::cc::{AckEvent, CongestionControl};
use crate::transport::{Ctx, Endpoint};
use crate::units::Time;

/// NewReno fast-recovery state.
#[derive(Clone, Copy, Debug)]
struct Recovery {
    /// Recovery ends when this byte is acknowledged (snd_nxt at entry).
    recover: u64,
    /// Window inflation from duplicate ACKs, deflated by partial ACKs (may go negative).
    inflation: i64,
}

pub struct TcpSender {
    cfg: TcpConfig,
    flow: FlowId,
    src: HostId,
    dst: HostId,
    /// The receiving endpoint at `dst`.
    peer: EndpointId,
    /// This endpoint.
    me: EndpointId,
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
}

impl TcpSender {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: TcpConfig,
        flow: FlowId,
        src: HostId,
        dst: HostId,
        me: EndpointId,
        peer: EndpointId,
        entropy: u32,
        size: Option<u64>,
    ) -> Self {
        let mss = cfg.mss as u64;
        TcpSender {
            cc: cfg
                .cc
                .build(cfg.initial_window as u64 * mss, mss, cfg.dctcp_g),
            rtt: RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto),
            cfg,
            flow,
            src,
            dst,
            peer,
            me,
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
        }
    }

    /// Makes this sender subflow `index` of a multipath connection.
    pub fn as_subflow(mut self, index: u8) -> Self {
        self.subflow = index;
        self
    }

    /// When the retransmission timer is due, if armed (a multipath connection
    /// multiplexes its subflows' timers onto its one timer).
    pub fn rto_deadline(&self) -> Option<Time> {
        self.rto_deadline
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
            ctx.flow(self.flow).retransmits += 1;
        }
        self.high_tx = self.high_tx.max(seq + len as u64);
        ctx.send(Packet {
            src: self.src,
            dst: self.dst,
            flow: self.flow,
            dst_endpoint: self.peer,
            src_endpoint: self.me,
            size: len + self.cfg.header,
            entropy: self.entropy,
            seq,
            timestamp: ctx.now,
            payload: len,
            kind: PacketKind::Data,
            flags: f,
            class: self.cfg.class,
            subflow: self.subflow,
            ..Default::default()
        });
        if self.rto_deadline.is_none() {
            self.arm_rto(ctx);
        }
    }

    /// Sends new data while the window allows.
    fn push(&mut self, ctx: &mut Ctx) {
        let wnd = self.window();
        while self.snd_nxt < self.size && self.snd_nxt - self.snd_una < wnd {
            if ctx.eqds_hold(self.src, self.dst) {
                // EQDS pushes back; the timer wakes us when there is room.
                return;
            }
            let seq = self.snd_nxt;
            self.send_segment(ctx, seq);
            self.snd_nxt = (seq + self.mss()).min(self.size);
        }
    }

    fn arm_rto(&mut self, ctx: &mut Ctx) {
        let at = ctx.now + self.rtt.rto_with_backoff(self.backoff);
        self.rto_deadline = Some(at);
        ctx.set_timer(at);
    }

    fn on_ack(&mut self, ctx: &mut Ctx, ack: u64, echo: Time, ce: u64) {
        if ack > self.snd_una && ack <= self.high_tx {
            self.on_new_ack(ctx, ack, echo, ce);
        } else if ack == self.snd_una && self.snd_nxt > self.snd_una {
            self.pending_ce += ce;
            self.on_dup_ack(ctx);
        }
        self.push(ctx);
    }

    fn on_new_ack(&mut self, ctx: &mut Ctx, ack: u64, echo: Time, ce: u64) {
        let acked = ack - self.snd_una;
        // Grow the window only if it limited what was sent (RFC 7661, like Linux's
        // tcp_is_cwnd_limited): an application-limited sender's window says nothing
        // about the path.
        let cwnd_limited = self.snd_nxt - self.snd_una + self.mss() >= self.window();
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        self.dupacks = 0;
        self.backoff = 0;
        let rtt = ctx.now.checked_sub(echo);
        if let Some(rtt) = rtt {
            self.rtt.sample(rtt);
            ctx.flow(self.flow).record_rtt(rtt);
        }
        let event = AckEvent {
            now: ctx.now,
            acked,
            ce: ce + std::mem::take(&mut self.pending_ce),
            rtt,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            mss: self.mss(),
        };
        if self.cfg.ecn {
            self.cc.on_ecn(&event);
        }
        match self.recovery {
            Some(r) if ack >= r.recover => self.recovery = None,
            Some(mut r) => {
                // Partial ACK: the next hole is lost too. Resend it, deflate the window
                // by what was acknowledged and add back one segment.
                r.inflation = r.inflation - acked as i64 + self.mss() as i64;
                self.recovery = Some(r);
                self.send_segment(ctx, ack);
            }
            None if cwnd_limited => self.cc.on_ack(&event),
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
            self.cc.on_loss(ctx.now, flight, self.mss());
            self.recovery = Some(Recovery {
                recover: self.snd_nxt,
                inflation: self.cfg.dupack_threshold as i64 * self.mss() as i64,
            });
            let seq = self.snd_una;
            self.send_segment(ctx, seq);
        }
    }

    fn on_timeout(&mut self, ctx: &mut Ctx) {
        ctx.flow(self.flow).timeouts += 1;
        let flight = self.snd_nxt - self.snd_una;
        self.cc.on_timeout(ctx.now, flight, self.mss());
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
            self.on_ack(ctx, p.ack, p.timestamp, p.ce_bytes as u64);
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx) {
        match self.rto_deadline {
            Some(at) if at <= ctx.now && self.snd_una < self.size => {
                self.on_timeout(ctx);
                return;
            }
            Some(at) if at > ctx.now => ctx.set_timer(at),
            _ => {}
        }
        // Early: EQDS woke us after pushing back (the timer is shared); send what
        // the window allows. Without EQDS this finds nothing to do.
        self.push(ctx);
    }
}
