//! MPTCP (RFC 8684) as the Figure 8 comparison needs it: one connection spread over
//! N TCP NewReno subflows, each on its own ECMP hash, with linked-increases coupled
//! congestion control (RFC 6356).
//!
//! Each subflow is a plain [`TcpSender`]/[`TcpReceiver`] with its own sequence space.
//! The connection keeps the data and hands it out one segment at a time, as Linux's
//! default scheduler does: to the subflow with the lowest smoothed RTT that has window
//! room. Like Linux's TCP small queues, it stops handing out data while the host's
//! NIC queue holds `nic_limit` packets, and resumes as soon as the NIC frees a slot
//! (TSQ's transmit-completion callback, not the next ACK); so the host's own queue
//! never drops, and subflows on congested paths lose data to the others instead of
//! sharing the NIC equally. The subflows' retransmission timers and that wake-up are
//! multiplexed onto the endpoint's one timer. The connection completes when the
//! receiver holds every byte, whichever subflows carried them. Not modelled:
//! reinjection of data stuck on a stalled subflow, and the receive window.

use crate::ids::{FlowId, HostId, PacketId};
use crate::transport::cc::lia_alpha;
use crate::transport::tcp::{TcpConfig, TcpReceiver, TcpSender};
use crate::transport::{Ctx, Endpoint, Ends};
use crate::units::Time;

pub struct MptcpSender {
    subflows: Vec<TcpSender>,
    host: HostId,
    /// Connection bytes not yet given to a subflow (`u64::MAX`: never ends).
    unassigned: u64,
    mss: u64,
    /// Hand out no data while the NIC queue holds this many packets.
    nic_limit: u32,
    /// When the NIC frees a slot, if the scheduler stopped at `nic_limit` with window
    /// room left.
    nic_wake: Option<Time>,
}

impl MptcpSender {
    /// `entropies[i]` is subflow i's 5-tuple hash.
    pub fn new(
        cfg: TcpConfig,
        ends: Ends,
        entropies: &[u32],
        size: Option<u64>,
        nic_limit: u32,
    ) -> Self {
        // The connection, not each subflow, keeps the NIC queue short; subflows
        // recover with NewReno, as the multipath experiments were calibrated.
        let cfg = TcpConfig {
            sack: false,
            nic_limit: None,
            ..cfg
        };
        MptcpSender {
            subflows: entropies
                .iter()
                .enumerate()
                .map(|(i, &e)| TcpSender::new(cfg, ends, e, Some(0)).as_subflow(i as u8))
                .collect(),
            host: ends.host,
            unassigned: size.unwrap_or(u64::MAX),
            mss: cfg.mss as u64,
            nic_limit,
            nic_wake: None,
        }
    }

    /// Sets subflow `i`'s coupling from the current windows and RTTs of all of them.
    fn couple(&mut self, i: usize) {
        let views = self
            .subflows
            .iter()
            .map(|s| (s.cwnd(), s.srtt().unwrap_or(1)));
        // Until every subflow has an RTT sample, treat the paths as equal.
        let alpha = if self.subflows.iter().all(|s| s.srtt().is_some()) {
            lia_alpha(views)
        } else {
            lia_alpha(views.map(|(w, _)| (w, 1)))
        };
        let total = self.subflows.iter().map(TcpSender::cwnd).sum();
        self.subflows[i].couple(alpha, total);
    }

    /// Hands out data one segment at a time to the fastest subflow with room, while
    /// the NIC queue is short.
    fn schedule(&mut self, ctx: &mut Ctx) {
        while self.unassigned > 0 && ctx.nic_backlog_packets(self.host) < self.nic_limit {
            // Subflows without an RTT sample yet go first: they have to be tried.
            let best = (0..self.subflows.len())
                .filter(|&i| self.subflows[i].room() > 0)
                .min_by_key(|&i| self.subflows[i].srtt().unwrap_or(0));
            let Some(i) = best else {
                break;
            };
            let give = self.mss.min(self.unassigned);
            if self.unassigned != u64::MAX {
                self.unassigned -= give;
            }
            self.subflows[i].extend(ctx, give);
        }
        // Stopped by the NIC with window left: resume when the packet on the wire is
        // done and the queue shrinks, whether or not an ACK has come in by then.
        self.nic_wake = (self.unassigned > 0
            && ctx.nic_backlog_packets(self.host) >= self.nic_limit
            && self.subflows.iter().any(|s| s.room() > 0))
        .then(|| ctx.nic_busy_until(self.host).max(ctx.now) + 1);
    }

    /// Arms the endpoint timer for the earliest subflow deadline or NIC wake-up.
    fn sync_timer(&self, ctx: &mut Ctx) {
        match self
            .subflows
            .iter()
            .filter_map(TcpSender::next_deadline)
            .chain(self.nic_wake)
            .min()
        {
            Some(at) => ctx.set_timer(at),
            None => ctx.cancel_timer(),
        }
    }
}

impl Endpoint for MptcpSender {
    fn on_start(&mut self, ctx: &mut Ctx) {
        self.schedule(ctx);
        self.sync_timer(ctx);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        let i = ctx.packet(pkt).subflow as usize;
        if i >= self.subflows.len() {
            ctx.free(pkt);
            return;
        }
        self.couple(i);
        self.subflows[i].on_packet(ctx, pkt);
        self.schedule(ctx);
        self.sync_timer(ctx);
    }

    fn on_timer(&mut self, ctx: &mut Ctx) {
        let woken_by_eqds = ctx.eqds_tunnels_transports();
        for s in &mut self.subflows {
            if s.next_deadline().is_some_and(|at| at <= ctx.now) {
                s.on_timer(ctx);
            } else if woken_by_eqds {
                // EQDS may have held data a subflow was given; send it now.
                s.extend(ctx, 0);
            }
        }
        self.schedule(ctx);
        self.sync_timer(ctx);
    }
}

pub struct MptcpReceiver {
    flow: FlowId,
    size: u64,
    subflows: Vec<TcpReceiver>,
    complete: bool,
}

impl MptcpReceiver {
    pub fn new(cfg: TcpConfig, ends: Ends, entropies: &[u32], size: Option<u64>) -> Self {
        // One endpoint timer cannot serve several subflows' delayed-ACK deadlines
        // without reordering them; subflows ACK every segment.
        let cfg = TcpConfig {
            delayed_ack: None,
            ..cfg
        };
        MptcpReceiver {
            flow: ends.flow,
            size: size.unwrap_or(u64::MAX),
            subflows: entropies
                .iter()
                .enumerate()
                .map(|(i, &e)| TcpReceiver::new(cfg, ends, e, None).as_subflow(i as u8))
                .collect(),
            complete: false,
        }
    }
}

impl Endpoint for MptcpReceiver {
    fn on_start(&mut self, _ctx: &mut Ctx) {}

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        let i = ctx.packet(pkt).subflow as usize;
        let Some(s) = self.subflows.get_mut(i) else {
            ctx.free(pkt);
            return;
        };
        s.on_packet(ctx, pkt);
        // Subflows carry disjoint data: the connection is whole when their distinct
        // bytes add up to its size.
        if !self.complete && ctx.flow(self.flow).received >= self.size {
            self.complete = true;
            ctx.complete_flow(self.flow);
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx) {
        for s in &mut self.subflows {
            s.on_timer(ctx);
        }
    }
}
