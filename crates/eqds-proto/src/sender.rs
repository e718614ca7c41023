//! The sending EQIF: per-destination tunnels that spend receiver-granted credit
//! (paper §4.1, §5 and §6 with Fig. 5; where the paper leaves a detail open, such as
//! the pull-target formula, the timeouts or the path choice, the text says so).
//!
//! One [`Sender`] is one sending EQIF. Packets handed to [`Sender::enqueue`] wait in
//! their destination tunnel's send queue until the tunnel holds enough credit, then
//! come out of [`Sender::poll_transmit`] with a filled-in [`DataHeader`]. Each tunnel
//! keeps the paper's three queues: send queue, in-flight queue (sent, not ACKed) and
//! retransmit queue (NACKed or timed out), served retransmit queue first.
//!
//! # Credit
//!
//! Credit is a signed byte counter per tunnel (§5). Every control packet carries
//! the receiver's cumulative pull number; when the highest one seen rises by `n` the
//! tunnel gains `n` MTUs (§5), so lost or reordered PULLs lose nothing. A packet
//! is sent only when the credit covers its whole charged length (§5: a packet of `b`
//! bytes needs `b` bytes of credit), so the counter never goes negative in practice.
//!
//! Every DATA or RTS packet carries a pull target:
//!
//! ```text
//! pull_target = highest_pull + ceil(max(0, min(backlog, W) - credit) / MTU)
//! ```
//!
//! The paper (§5) says only that the target asks for credit beyond the current pull
//! number, capped at one BDP; the formula is ours. Its plain reading,
//! `clamp(backlog - credit, 0, W)` beyond the pull number, moves the cap:
//! it lets a tunnel holding credit ask for W *more* (a window of up to 2W right
//! after an NDP burst). Capping the backlog before subtracting the credit makes the
//! held credit count towards the window, and the target then equals
//! `packets sent + W/MTU - initial credit` while demand lasts: every packet that
//! reaches the receiver earns exactly one PULL back, which is the one-BDP credit
//! window invariant of §5. It never decreases while a tunnel is busy (the lookahead
//! below could lower it, so the sender never sends a target below its last), and the
//! receiver may keep the serial maximum of the targets it has seen (retransmissions
//! carry old sequence numbers but current targets).
//!
//! # Lookahead
//!
//! The formula's backlog is extended by [`SenderConfig::demand_lookahead`], bounded
//! by the bytes in flight:
//!
//! ```text
//! backlog' = backlog + min(in_flight, lookahead)
//! ```
//!
//! A tunnel asks only for what it has queued, so a writer whose queue empties between
//! bursts runs out of credit just as its next packet arrives: TCP's ACK clock does
//! this every round trip in slow start, and a stream of pure ACKs after every packet.
//! The PULL that pays for the next packet can then only be asked for by an RTS, a
//! round trip later. A tunnel with packets in flight is likely to get more, so it asks
//! for a little credit ahead. Bounding the extra by what is in flight keeps it small
//! for a thin stream (a few ACKs' worth) and zero for a tunnel that was idle; the
//! window cap still applies, so the conservation bound is untouched and a tunnel
//! whose backlog fills the window asks exactly as before. When a stream stops, up to
//! the lookahead is granted and not used; it expires one round trip into the
//! tunnel's idleness (our choice: the paper does not say when unspent credit
//! expires). Until then it pays for a restart, which is what keeps a
//! thin stream whose packets are further apart than its round trip from sending an
//! RTS per packet.
//!
//! A lookahead of the whole window goes further: every packet in flight counts as
//! one to come. That is what TCP's ACK clock makes of them, and without it a tunnel
//! keeps no more in the network than waits in its queue, so TCP fills the link only
//! while it keeps about a window queued in the EQIF (DCTCP, which keeps a few
//! packets there, does not). Both front ends use the window for tunnelled TCP
//! (`eqds-sim` with `[eqds] enabled`, `eqdsd`'s TUN); native writers, which queue
//! all they have, keep a few packets.
//!
//! # Thin streams
//!
//! A stream of small packets further apart than its round trip (TCP's ACKs at a low
//! rate) finds its tunnel idle at every packet, its credit stale, and, if the
//! receiver is busy receiving, an RTS due each time; each RTS costs that receiver a
//! PULL, an MTU-time of its link, for a packet of a few dozen bytes. With
//! [`SenderConfig::thin_stream_credit`] such a restart may spend up to one MTU of
//! the credit held, however stale, on that one small packet (at most half an MTU);
//! the rest of that MTU is set aside (`spare`) for the next one. Set-aside credit
//! counts against the lookahead and the window in the pull target, so the thin
//! stream asks for a PULL only when it runs out, and is never spent by packets
//! queued behind, so it cannot burst. On the namespace testbed it took a host that
//! serves while it downloads from 295 to 202 ms per 1 MB download
//! (`experiments/eqdsd-fct`).
//!
//! # Starting and restarting
//!
//! A tunnel (re)starts when data arrives while it has no backlog and expects no more
//! PULLs. If nothing is in flight either, the tunnel was idle, and the first-RTT mode
//! decides what happens (§4.1, §5):
//! - [`Mode::Ndp`], receiver not known to be busy: the tunnel is granted a window W
//!   of credit and bursts it;
//! - [`Mode::Rts`], receiver not busy, and the tunnel went quiet (its last send or
//!   control packet) no longer than one smoothed RTT ago: the credit it still holds
//!   is current and pays for the new data (a "warm" restart; the grace period is ours);
//! - otherwise, and always within the last advertised busy time: the credit held is
//!   dropped (our choice: stale credit must not burst into a receiver that moved on),
//!   and the tunnel sends an RTS carrying its pull target and owns nothing until
//!   PULLs arrive.
//!
//! [`SenderConfig::initial_window`] overrides the burst of either mode: a smaller NDP
//! burst, or in RTS mode a few packets sent unasked to an idle receiver (they carry
//! the pull target an RTS would have).
//!
//! With packets still in flight the loop is live (a bursty writer such as TCP empties
//! the send queue between ACKs): the credit held is kept and spent, and only if it
//! cannot pay for the new packet does an RTS carry the new demand. Granting a free
//! window here, on top of PULLs already on their way, would overrun the receiver.
//!
//! # Loss recovery
//!
//! ACK frees a packet (its payload comes back from [`Sender::poll_acked`]); NACK or
//! the per-packet retransmit timer moves it to the retransmit queue (§6, Fig. 5).
//! Optionally (`SenderConfig::loss_reorder_window`, off by default) a packet is also
//! taken for lost once a packet sent sufficiently later has been ACKed, as RACK does
//! for TCP: on a network that does not trim, a loss then costs about a round trip
//! instead of an RTO. A tunnel with backlog, not enough credit and nothing in flight that has heard nothing
//! for `credit_loss_timeout`, and past the busy time its receiver last advertised, sends
//! an RTS (our choice: §5 keeps the window constant when control packets are lost,
//! but does not say how); the receiver answers an RTS
//! at once with its current pull number, which repairs a lost final PULL.
//!
//! # Tunnel lifecycle
//!
//! Each tunnel is driven by a [`TxTunnel`] (Appendix A, `tunnel.rs`). A tunnel that
//! gets data while CLOSED picks an epoch (random from the sender's own generator, or
//! the remembered one plus one) and numbers its packets from `isn_for_epoch(epoch)`;
//! [`Sender::open_tunnel`] instead starts SYN-SENT at a given sequence number. While
//! SYN-SENT every DATA and RTS carries SYN, and no new packet is numbered past
//! `isn + 1023`, so the initial window fits in the epoch's block (Appendix A). ACKs and
//! NACKs with SYN go through the state machine: our epoch establishes the tunnel, a
//! lesser one is ignored, a greater one (or an RST while packets are unacknowledged,
//! unless it answers a packet sent before the current epoch began)
//! starts a greater epoch and renumbers every unacknowledged packet into it, in
//! order, with SYN, ahead of new data; what does not fit in the block goes back to
//! the send queue. An RST with nothing unacknowledged frees the tunnel's credit.
//!
//! A restarted tunnel's new block starts after every sequence number it used
//! ([`TxTunnel::skip_past`]), so late ACKs and data of the old epoch can never be
//! taken for new ones. ACKs and NACKs without SYN are processed in any state: the
//! receiver sets SYN on every answer to a SYN packet, so in SYN-SENT they come from an
//! older epoch and, by the rule above, match nothing.
//!
//! [`Sender::drop_tunnel`] forgets a tunnel unilaterally (§5) and hands back its
//! payloads. The receiver keeps its cumulative pull number, so the re-created tunnel
//! takes the pull number of the first control packet it hears as its baseline, without
//! credit, rather than comparing against a count it forgot.
//!
//! # Pull numbers across restarts
//!
//! Pull numbers count PULLs per (receiver, sender) pair for as long as the receiver
//! keeps that pair's credit state, across epochs, while either end may lose its state
//! at any time (Appendix A). Two rules keep a tunnel following the count of the
//! receiver it is talking to, so that a restart on either side costs a round trip or
//! two rather than the tunnel's history:
//!
//! - **Far beyond our targets.** A receiver pulls only up to the highest target it
//!   has seen, and this tunnel's targets never exceed `last_target`. A pull number
//!   more than a window past it counts PULLs someone else asked for: this sender's
//!   previous incarnation, or a tunnel it dropped. It becomes the baseline, without
//!   credit, and the stalled-tunnel rule asks with an RTS at once. Credited, clamped
//!   to the window as before, it would burst a window into a receiver that paced
//!   none of it. (A smaller overshoot is credited, clamped: it is bounded by the
//!   window either way. A receiver's spare PULLs, at most a window past the targets
//!   it has seen, are one.)
//! - **Far behind, with evidence.** A restarted receiver counts from zero again, so
//!   its numbers lie behind ours, by as many PULLs as the tunnel ever received; taken
//!   for stale packets they would be ignored until they caught up (20-35 s on the
//!   namespace testbed after a few hundred thousand PULLs). Behind is also what an
//!   overtaken control packet looks like, so a number is taken for a new count only
//!   when it is more than a window behind, further than reordering among one
//!   receiver's packets reaches in practice, and only on a packet a restarted
//!   receiver sends first: an RST, which answers our data when it has no tunnel
//!   state, or anything while the tunnel is restarting (SYN-SENT in an epoch that
//!   is not its first, or hearing that epoch's SYN-ACKs). A receiver that closes
//!   its tunnels as it shuts down sends its RST before the restart, so the tunnel
//!   is SYN-SENT by the time the new one answers, and everything it sends then
//!   carries SYN, which a fresh receiver accepts without an RST; its RTSs are
//!   answered by PULLs. A first epoch's count is too young to stall on, and its
//!   initial window's SYN-ACKs, overtaken by PULLs, would look like a new count.
//!   For one retransmit timeout afterwards, numbers within a window of the old
//!   count are taken for the old incarnation's packets still in flight and ignored
//!   (by the first rule they would move the baseline back); after it, they mean
//!   the old count is alive (the evidence was an overtaken packet), and the tunnel
//!   goes back to it, until the first other number forgets the old count.
//! - **The first number heard.** A new tunnel counts from zero, and a receiver with
//!   a long history may be anywhere in the serial space: more than half of it away,
//!   its count looks far *behind* zero. The first number a tunnel hears is
//!   therefore evidence of its own: far behind, it is the baseline.
//!
//! A rebase never grants credit; a wrong one costs the credit of the PULLs until the
//! tunnel is back on the right count (at most a retransmit timeout).
//! `tests/restart.rs` replaces a receiver mid-transfer, with its packets still in
//! flight, after histories of up to thousands of PULLs: the senders finish within a
//! few round trips of the same run without the restart.

use rustc_hash::FxHashMap;
use std::collections::VecDeque;

use crate::paths::PathStats;
use crate::time::{Time, PS_PER_NS};
use crate::tunnel::{TxEvent, TxState, TxTunnel};
use crate::wire::{epoch_of, seq_le, seq_lt, ControlHeader, ControlKind, DataHeader};

mod acks;
mod config;
mod ecn;
mod spray;
mod stats;
mod transmit;
mod tunnel;

pub use config::{Mode, SenderConfig};
pub use ecn::{Red, CERTAIN as ECN_CERTAIN};
pub use stats::TunnelStats;

use acks::{free_one, free_range};
use spray::SplitMix64;
use transmit::{send_data, send_rts};
use tunnel::{move_to_retransmit, Tunnel};

/// Names the far end of a tunnel: the destination host (or host and EQIF) as the
/// owner of this EQIF numbers it. The core never interprets it.
pub type PeerId = u32;

/// Why [`Sender::enqueue`] refused a packet. The payload is handed back so the
/// caller can free or requeue it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueueError<P> {
    /// The tunnel's send queue is full: the higher layer must hold the packet (the
    /// EQIF's backpressure, §6).
    Backpressure(P),
    /// The packet plus overhead exceeds the tunnel MTU.
    TooLarge(P),
}

/// One packet to put on the wire, from [`Sender::poll_transmit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit<P> {
    /// Destination of the tunnel.
    pub dst: PeerId,
    /// The EQDS header: DATA (new or retransmitted) or RTS.
    pub header: DataHeader,
    /// The inner packet for DATA, `None` for RTS.
    pub payload: Option<P>,
    /// Bytes on the wire (inner packet plus overhead); also the credit charged for
    /// DATA.
    pub wire_len: u32,
}

/// A packet the receiver ACKed, from [`Sender::poll_acked`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acked<P> {
    /// Destination of its tunnel.
    pub dst: PeerId,
    /// The payload, for the caller to free.
    pub payload: P,
    /// Path of its last transmission (per-path statistics, §5 and §6; see
    /// [`crate::paths`]).
    pub path_id: u16,
    /// Time from its transmission to the ACK, if it was sent exactly once (Karn's
    /// rule: a resent packet's ACK is ambiguous).
    pub rtt: Option<Time>,
}

/// One sending EQIF: a tunnel per destination, credit-driven transmission, and loss
/// recovery. See the module documentation.
///
/// `P` is the caller's packet handle (a slab index in the simulator, a buffer in the
/// daemon). It is cloned once per transmission, since the sender keeps the packet
/// until it is ACKed: use a cheap handle.
///
/// Fields are kept in this order (`repr(C)`): what a transmission or an ACK reads first,
/// configuration and lookup tables last (see [`crate::receiver::Receiver`]).
#[derive(Debug)]
#[repr(C)]
pub struct Sender<P> {
    /// Tunnels, indexed by position; never removed (teardown belongs to the tunnel
    /// state machines).
    tunnels: Vec<Tunnel<P>>,
    /// Tunnels that can send now (credit for their next packet, or an RTS due),
    /// served round robin one packet per turn (our choice: §6 prescribes DRR only
    /// between EQIFs).
    ready: VecDeque<usize>,
    /// ACKed packets, handed back by [`Sender::poll_acked`].
    acked: VecDeque<Acked<P>>,
    /// The tunnel looked up last, and its position: a sender mostly talks to one
    /// destination at a time (a permutation: only ever one), and this spares it the
    /// map's memory, a cache miss per packet on a large network. Tunnels never move,
    /// so it never goes stale.
    last: Option<(PeerId, usize)>,
    /// Charged bytes sent and not yet ACKed, NACKed or timed out, over all tunnels.
    in_flight_total: u64,
    /// The most `in_flight_total` has been.
    in_flight_peak: u64,
    rng: SplitMix64,
    /// Draws for RED's marking ramp, apart from `rng` so that marking does not move
    /// the epochs and path permutations of a seed.
    ecn_rng: SplitMix64,
    config: SenderConfig,
    /// Position of each destination's tunnel (Fx hashing: see `Receiver::index`).
    index: FxHashMap<PeerId, usize>,
    /// Control packets ignored: wrong sender id or unknown source.
    ignored_control: u64,
    /// RST packets received (handled by the tunnel state machines, not here).
    rst_received: u64,
}

impl<P: Clone> Sender<P> {
    /// Creates an EQIF with no tunnels.
    ///
    /// # Panics
    ///
    /// If the configuration is unusable: `overhead >= mtu`, `window < mtu` (a tunnel
    /// could never afford a full packet) or `paths == 0`.
    pub fn new(config: SenderConfig) -> Self {
        assert!(
            config.overhead < config.mtu,
            "overhead must leave room in the MTU"
        );
        assert!(
            config.window >= config.mtu,
            "the window must hold at least one MTU"
        );
        assert!(config.paths > 0, "at least one path id is needed");
        assert!(
            config.initial_window.is_none_or(|w| w <= config.window),
            "the initial window must fit in the window"
        );
        let rng = SplitMix64(config.seed);
        let ecn_rng = SplitMix64(config.seed ^ 0x5EC0_0ECE);
        Self {
            config,
            tunnels: Vec::new(),
            index: FxHashMap::default(),
            last: None,
            ready: VecDeque::new(),
            acked: VecDeque::new(),
            rng,
            ecn_rng,
            ignored_control: 0,
            rst_received: 0,
            in_flight_total: 0,
            in_flight_peak: 0,
        }
    }

    /// The configuration this EQIF runs with.
    pub fn config(&self) -> &SenderConfig {
        &self.config
    }

    /// Creates the tunnel to `dst` SYN-SENT in the epoch of `first_seq`, numbering
    /// from `first_seq` (which should be the epoch's ISN or close after it: the
    /// initial window ends with the block). For callers that choose the epoch
    /// themselves; [`Sender::enqueue`] picks one. Returns `false`, changing nothing,
    /// if the tunnel exists.
    pub fn open_tunnel(&mut self, dst: PeerId, first_seq: u32) -> bool {
        if self.index.contains_key(&dst) {
            return false;
        }
        let fsm = TxTunnel::syn_sent(epoch_of(first_seq));
        let mut t = Tunnel::new(dst, first_seq, &self.config, fsm);
        t.stats.epochs = 1;
        self.index.insert(dst, self.tunnels.len());
        self.tunnels.push(t);
        true
    }

    /// Forgets the tunnel to `dst` unilaterally, without telling the receiver (item
    /// 37), and hands back every payload it held: queued, awaiting resend and
    /// unacknowledged (some of which may have been delivered). The next packet for
    /// `dst` starts a new tunnel in a random epoch.
    pub fn drop_tunnel(&mut self, dst: PeerId) -> Vec<P> {
        let Some(idx) = self.find(dst) else {
            return Vec::new();
        };
        let mut fresh = Tunnel::new(dst, 0, &self.config, TxTunnel::new());
        let t = &mut self.tunnels[idx];
        // Keep the ready-list membership bit: the index may still be on the list.
        fresh.ready = t.ready;
        fresh.pull_unsynced = true;
        fresh.counted_in_flight = t.counted_in_flight;
        fresh.window = t.window;
        fresh.window_pulls = t.window_pulls;
        let old = std::mem::replace(t, fresh);
        self.settle(idx);
        old.in_flight
            .into_iter()
            .chain(old.retransmit)
            .map(|p| p.payload)
            .chain(old.send_queue.into_iter().map(|(_, p)| p))
            .collect()
    }

    /// Gives the tunnel to `dst` a credit window of its own, `window` bytes instead of
    /// `SenderConfig::window`, creating its state (CLOSED) if there is none yet; it
    /// lasts until the sender forgets the tunnel. For destinations whose round trip
    /// or link rate differs from the one the configured window was sized for: with
    /// receivers slower than the sender, a window sized for the sender's rate keeps
    /// several of their BDPs in flight, all of it queued in the network. Credit
    /// already held beyond the new window is given up.
    ///
    /// An explicit `SenderConfig::initial_window` larger than `window` shrinks to it.
    ///
    /// # Panics
    /// If `window` is below one MTU: the tunnel could never send a packet.
    pub fn set_window(&mut self, dst: PeerId, window: u32) {
        assert!(
            window >= self.config.mtu,
            "the window must hold at least one MTU"
        );
        let idx = self.tunnel_index(dst);
        let t = &mut self.tunnels[idx];
        t.window = window;
        t.window_pulls = window.div_ceil(self.config.mtu) as i32;
        t.credit = t.credit.min(i64::from(window));
        t.spare = t.spare.min(i64::from(window) - t.credit);
    }

    /// The index of the tunnel to `dst`, created CLOSED if there is none.
    fn tunnel_index(&mut self, dst: PeerId) -> usize {
        if let Some(idx) = self.find_mut(dst) {
            return idx;
        }
        let idx = *self.index.entry(dst).or_insert_with(|| {
            self.tunnels
                .push(Tunnel::new(dst, 0, &self.config, TxTunnel::new()));
            self.tunnels.len() - 1
        });
        self.last = Some((dst, idx));
        idx
    }

    /// The position of the tunnel to `dst`, if there is one.
    #[inline]
    fn find(&self, dst: PeerId) -> Option<usize> {
        match self.last {
            Some((d, idx)) if d == dst => Some(idx),
            _ => self.index.get(&dst).copied(),
        }
    }

    /// [`Sender::find`], remembered for the next lookup.
    #[inline]
    fn find_mut(&mut self, dst: PeerId) -> Option<usize> {
        let idx = self.find(dst)?;
        self.last = Some((dst, idx));
        Some(idx)
    }

    /// The credit window of the tunnel to `dst` in bytes (the configured one for a
    /// destination without a tunnel).
    pub fn window(&self, dst: PeerId) -> u32 {
        self.find(dst)
            .map_or(self.config.window, |i| self.tunnels[i].window)
    }

    /// The state of the tunnel to `dst`, if one exists.
    pub fn tunnel_state(&self, dst: PeerId) -> Option<TxState> {
        self.find(dst).map(|i| self.tunnels[i].fsm.state())
    }

    /// Queues an inner packet of `len` bytes for `dst`, creating the tunnel if needed.
    /// A CLOSED tunnel starts an epoch (Appendix A).
    ///
    /// If the tunnel had nothing left to send and expected no more PULLs, this
    /// (re)starts it: NDP mode grants it a window to burst unless the receiver's last
    /// advertised busy time has not passed; otherwise an RTS is scheduled.
    pub fn enqueue(
        &mut self,
        now: Time,
        dst: PeerId,
        len: u32,
        payload: P,
    ) -> Result<(), EnqueueError<P>> {
        self.enqueue_in_lane(now, dst, len, payload, false)
    }

    /// [`Sender::enqueue`] ahead of the packets already waiting that were queued
    /// the ordinary way (after those queued ahead before it). For small packets
    /// that others wait on, such as the pure TCP ACKs of a connection in the other
    /// direction, which would otherwise queue behind a window of bulk data to the
    /// same host, as a Linux qdisc's sparse-flow priority (fq_codel) would spare
    /// them.
    pub fn enqueue_ahead(
        &mut self,
        now: Time,
        dst: PeerId,
        len: u32,
        payload: P,
    ) -> Result<(), EnqueueError<P>> {
        self.enqueue_in_lane(now, dst, len, payload, true)
    }

    fn enqueue_in_lane(
        &mut self,
        now: Time,
        dst: PeerId,
        len: u32,
        payload: P,
        ahead: bool,
    ) -> Result<(), EnqueueError<P>> {
        let Some(charged) = len
            .checked_add(self.config.overhead)
            .filter(|&c| c <= self.config.mtu)
        else {
            return Err(EnqueueError::TooLarge(payload));
        };
        let idx = self.tunnel_index(dst);
        let cfg = &self.config;
        let t = &mut self.tunnels[idx];
        if t.send_queue.len() >= cfg.send_queue_packets
            || t.send_bytes + u64::from(charged) > cfg.send_queue_bytes
        {
            return Err(EnqueueError::Backpressure(payload));
        }
        if matches!(t.fsm.state(), TxState::Closed { .. }) {
            let random = self.rng.next_u64() as u32;
            let actions = t.fsm.handle(TxEvent::PacketToSend { random });
            t.apply(actions);
        }
        let restart = t.backlog() == 0 && !t.rts_pending && seq_le(t.last_target, t.highest_pull);
        if restart {
            t.expire_strays(now, t.rtt.rto(cfg.rto));
            if t.nothing_on_the_wire() {
                // Idle. The mode decides the fresh window. Credit still held is
                // stale [choice] unless the tunnel went quiet less than an RTT ago
                // and the receiver is not busy: then it is what the last PULLs (or
                // the lookahead) granted for data like this, and spending it saves
                // the RTS's round trip. A busy receiver gets an RTS whatever is held,
                // so leftover NDP credit is never burst into it.
                let free = cfg.first_rtt_credit(t.window);
                let idle = now >= t.busy_until;
                let srtt = t.rtt.srtt().unwrap_or(0);
                let warm = idle && now.saturating_sub(t.quiet_since) <= srtt;
                let charged = i64::from(charged);
                let mtu = i64::from(cfg.mtu);
                // Thin streams (`thin_stream_credit`): what is held, capped at one
                // MTU, may pay for this small packet alone; the rest is set aside.
                let thin = (t.credit + t.spare).min(mtu);
                if warm {
                    t.credit += std::mem::take(&mut t.spare);
                }
                if i64::from(free) >= charged && idle {
                    t.credit = i64::from(free);
                    t.spare = 0;
                    t.stats.free_credit_bytes += u64::from(free);
                    t.stats.bursts += 1;
                } else if warm && t.credit >= charged {
                    t.stats.warm_restarts += 1;
                } else if cfg.thin_stream_credit && 2 * charged <= mtu && thin >= charged {
                    t.credit = charged;
                    t.spare = thin - charged;
                    t.stats.thin_restarts += 1;
                } else {
                    t.credit = 0;
                    t.spare = 0;
                    t.rts_pending = true;
                }
            } else if t.credit < i64::from(charged) {
                // Still busy: the packets in flight keep the credit loop alive and
                // the credit held is current, but none of them asked for this one.
                // An RTS does; a free window on top of the PULLs already on their
                // way (or of a stray resend) would overrun the receiver's link.
                t.rts_pending = true;
            }
        }
        if ahead {
            t.send_queue.insert(t.ahead, (charged, payload));
            t.ahead += 1;
        } else {
            t.send_queue.push_back((charged, payload));
        }
        t.send_bytes += u64::from(charged);
        if restart {
            // The credit-loss timer of an RTS start runs from now.
            t.quiet_since = now;
        }
        self.schedule(idx);
        Ok(())
    }

    /// Processes a control packet from `src` (PULL, ACK, NACK or RST).
    ///
    /// Packets for another sender id or from an unknown source are counted and
    /// ignored.
    pub fn handle_control(&mut self, now: Time, src: PeerId, header: &ControlHeader) {
        let idx = if header.sender_id == self.config.sender_id {
            self.find_mut(src)
        } else {
            None
        };
        let Some(idx) = idx else {
            self.ignored_control += 1;
            return;
        };
        let cfg = &self.config;
        let t = &mut self.tunnels[idx];
        t.quiet_since = now;
        t.busy_until = now + Time::from(header.busy_time_ns) * PS_PER_NS;

        // Every control type carries the cumulative pull number (our encoding; §5's
        // pull numbers are cumulative, so a repeat is harmless).
        if !t.credit_pull_number(header.pull_no, cfg.mtu) {
            t.hear_unusual_pull_number(now, header, cfg);
        }

        // Appendix A: SYN-ACKs, SYN-NACKs and RSTs go through the state machine first.
        let process = match header.kind {
            // An RST names the packet it answers; one for a packet sent before the
            // current epoch is stale [choice]: the restart it asks for happened, and
            // acting on it again would renumber, and so duplicate, packets the receiver
            // may already have delivered in the current epoch.
            ControlKind::Rst if seq_lt(header.ack_no, t.isn) && t.fsm.epoch().is_some() => {
                self.rst_received += 1;
                t.stats.stale_rsts += 1;
                false
            }
            ControlKind::Rst => {
                self.rst_received += 1;
                let backlog = t.has_unacked();
                let actions = t.fsm.handle(TxEvent::Rst { backlog });
                t.apply(actions);
                false
            }
            ControlKind::Ack | ControlKind::Nack if header.syn => {
                let actions = t.fsm.handle(TxEvent::SynAck {
                    ack_no: header.ack_no,
                });
                t.apply(actions)
            }
            _ => true,
        };
        if !process {
            self.schedule(idx);
            return;
        }
        match header.kind {
            ControlKind::Pull | ControlKind::Rst => {}
            ControlKind::Ack if header.cumulative => {
                // Only within the current epoch's numbers: a cumulative ACK from
                // another epoch would compare with them by accident.
                let (ack, isn, next) = (header.ack_no, t.isn, t.next_seq);
                if seq_le(isn, ack) && seq_lt(ack, next) {
                    free_range(t, &mut self.acked, now, isn, ack);
                }
            }
            ControlKind::Ack => {
                free_one(t, &mut self.acked, now, header.ack_no);
            }
            ControlKind::Nack => {
                // Only a packet still in flight moves: a NACK for one already queued
                // for resend (duplicate trim) or already ACKed changes nothing, but
                // for a stray's copy.
                t.echo(header.ack_no, now, cfg.path_avoidance);
            }
        }
        if cfg.loss_reorder_window > 0 {
            t.declare_reordered_losses(now, cfg.loss_reorder_window, cfg.path_avoidance);
        }
        if t.stalled() && seq_le(t.last_target, t.highest_pull) {
            // Demand the receiver has not heard of: every PULL asked for has come,
            // nothing in flight can earn another, and the credit held cannot pay for
            // the backlog (a NACKed packet, or a partial PULL's leftover short of a
            // full packet). Ask now; the credit-loss timer is for lost control
            // packets, not for this.
            t.rts_pending = true;
        }
        self.schedule(idx);
    }

    /// A switch sent the trimmed header of packet `seq` of the tunnel to `dst` back
    /// to us instead of forwarding it (NDP's return-to-sender, for a header queue
    /// that is full too). The receiver never saw it, so no NACK will come: the
    /// packet goes to the retransmit queue now rather than at its RTO.
    ///
    /// Its demand never reached the receiver either. The next packet this tunnel
    /// sends carries a pull target that includes it, so that is enough while other
    /// packets are in flight to earn PULLs. Only when none is left (the whole window
    /// came back) does an RTS ask for credit at once: an RTS per returned header
    /// would add headers to the very queues that are overflowing.
    /// Unknown tunnels and sequence numbers not in flight are ignored.
    pub fn handle_returned(&mut self, now: Time, dst: PeerId, seq: u32) {
        let Some(idx) = self.find_mut(dst) else {
            return;
        };
        let t = &mut self.tunnels[idx];
        if !t.echo(seq, now, self.config.path_avoidance) {
            return;
        }
        t.stats.returned += 1;
        if t.in_flight.is_empty() && !t.can_send_data() {
            t.rts_pending = true;
            t.quiet_since = now;
        }
        self.schedule(idx);
    }

    /// Charged bytes waiting in the send queue of the tunnel to `dst` (0 if there is
    /// no tunnel).
    pub fn send_queue_bytes(&self, dst: PeerId) -> u64 {
        self.find(dst).map_or(0, |i| self.tunnels[i].send_bytes)
    }

    /// Whether an ECN-capable packet about to join the send queue of the tunnel to
    /// `dst` should carry CE, by [`SenderConfig::ecn`]'s RED on that queue as it
    /// stands (§6's TCP-compatible EQIF). Ask only for ECN-capable packets: each answer
    /// on RED's ramp draws a random number.
    pub fn mark_ce(&mut self, dst: PeerId) -> bool {
        let Some(red) = self.config.ecn else {
            return false;
        };
        red.decide(self.send_queue_bytes(dst), &mut self.ecn_rng)
    }

    /// Packets waiting in the send queue of the tunnel to `dst` (0 if there is no
    /// tunnel): how much room a writer blocked by backpressure has.
    pub fn send_queue_len(&self, dst: PeerId) -> usize {
        self.find(dst)
            .map_or(0, |i| self.tunnels[i].send_queue.len())
    }

    /// The next packet to send, if any tunnel can send one now.
    ///
    /// Tunnels take turns, one packet per turn (our choice). Within a tunnel an RTS
    /// goes first (it unlocks credit and costs none), then retransmissions, then new
    /// data (§6).
    pub fn poll_transmit(&mut self, now: Time) -> Option<Transmit<P>> {
        while let Some(idx) = self.ready.pop_front() {
            let cfg = &self.config;
            let t = &mut self.tunnels[idx];
            t.ready = false;
            let tx = if t.rts_pending {
                Some(send_rts(t, cfg, &mut self.rng, now))
            } else if t.can_send_data() {
                Some(send_data(t, cfg, &mut self.rng, now))
            } else {
                None
            };
            if t.wants_service() {
                t.ready = true;
                self.ready.push_back(idx);
            }
            if tx.is_some() {
                self.settle(idx);
                return tx;
            }
        }
        None
    }

    /// Bytes on the wire of the packet [`Sender::poll_transmit`] would return now,
    /// without sending it: what an uplink scheduler shared with other EQIFs
    /// ([`crate::uplink`]) needs to charge a turn before taking it. Tunnels left on
    /// the ready list that can no longer send are dropped from it, as
    /// `poll_transmit` would.
    pub fn peek_transmit_len(&mut self) -> Option<u32> {
        while let Some(&idx) = self.ready.front() {
            let t = &mut self.tunnels[idx];
            if t.rts_pending {
                return Some(self.config.overhead);
            }
            if t.can_send_data() {
                return t.head_len();
            }
            t.ready = false;
            self.ready.pop_front();
        }
        None
    }

    /// A packet the receiver ACKed, whose payload the caller frees. Call after
    /// [`Sender::handle_control`] until it returns `None`.
    pub fn poll_acked(&mut self) -> Option<Acked<P>> {
        self.acked.pop_front()
    }

    /// The earliest time [`Sender::handle_timeout`] has work: a retransmit timer or a
    /// credit-loss timer. `None` if no timer runs.
    ///
    /// This scans every tunnel; a timer wheel can replace it when tunnel counts grow.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.tunnels
            .iter()
            .flat_map(|t| {
                let rto = t
                    .in_flight
                    .front()
                    .map(|p| p.sent_at + t.rtt.rto(self.config.rto));
                let stall = t
                    .stalled()
                    .then(|| t.credit_loss_deadline(self.config.credit_loss_timeout));
                [rto, stall]
            })
            .flatten()
            .min()
    }

    /// Runs the timers due at `now`: expired packets move to the retransmit queue
    /// (§6) and stalled tunnels schedule an RTS (credit-loss recovery, module doc).
    pub fn handle_timeout(&mut self, now: Time) {
        for idx in 0..self.tunnels.len() {
            let cfg = &self.config;
            let t = &mut self.tunnels[idx];
            let rto = t.rtt.rto(cfg.rto);
            while t.in_flight.front().is_some_and(|p| p.sent_at + rto <= now) {
                let pkt = t.in_flight.pop_front().expect("front exists");
                t.landed(&pkt);
                t.stats.rto_expiries += 1;
                t.path_failed(pkt.path_id, now, cfg.path_avoidance, |p| p.timed_out += 1);
                move_to_retransmit(t, pkt);
            }
            t.expire_strays(now, rto);
            if t.stalled() && t.credit_loss_deadline(cfg.credit_loss_timeout) <= now {
                t.rts_pending = true;
                t.stats.credit_loss_rts += 1;
            }
            self.schedule(idx);
        }
    }

    /// A snapshot of the tunnel to `dst`.
    pub fn tunnel(&self, dst: PeerId) -> Option<TunnelStats> {
        self.index
            .get(&dst)
            .map(|&i| self.tunnels[i].snapshot(self.config.rto))
    }

    /// What the tunnel to `dst` saw on each path id, indexed by path id: empty
    /// unless [`SenderConfig::path_stats`] is set, `None` if there is no tunnel.
    pub fn path_stats(&self, dst: PeerId) -> Option<&[PathStats]> {
        self.index
            .get(&dst)
            .map(|&i| self.tunnels[i].path_stats.as_slice())
    }

    /// A snapshot of every tunnel, with its destination, in creation order.
    pub fn tunnels(&self) -> impl Iterator<Item = (PeerId, TunnelStats)> + '_ {
        self.tunnels
            .iter()
            .map(|t| (t.peer, t.snapshot(self.config.rto)))
    }

    /// Control packets ignored because of a wrong sender id or unknown source.
    pub fn ignored_control(&self) -> u64 {
        self.ignored_control
    }

    /// RST packets received.
    pub fn rst_received(&self) -> u64 {
        self.rst_received
    }

    /// Charged bytes sent and not yet ACKed, NACKed or timed out, over every tunnel:
    /// the sender's share of the memory EQDS holds (the paper's claim is that it
    /// stays near one BDP whatever the number of destinations).
    pub fn in_flight_bytes(&self) -> u64 {
        self.in_flight_total
    }

    /// The most [`Sender::in_flight_bytes`] has been.
    pub fn peak_in_flight_bytes(&self) -> u64 {
        self.in_flight_peak
    }

    /// The fields [`Sender::hot_state`] reads (see [`crate::host::Host::hot_fields`]).
    pub(crate) fn hot_fields(&self, visit: &mut impl FnMut(*const u8)) {
        visit((&raw const self.tunnels).cast());
        visit((&raw const self.acked).cast());
    }

    /// The addresses of the state beside the `Sender` that most events read: the
    /// first four lines of its first tunnel (of ten: those nearly every event that
    /// reads the tunnel reads, by `Tunnel`'s layout; every line named costs a caller's
    /// memory bandwidth, read or not), the ready list and the ACKed list (see
    /// `Host::hot_state`).
    pub(crate) fn hot_state(&self, visit: &mut impl FnMut(*const u8)) {
        if let Some(t) = self.tunnels.first() {
            let p: *const u8 = (t as *const Tunnel<P>).cast();
            for line in 0..std::mem::size_of::<Tunnel<P>>().div_ceil(64).min(4) {
                visit(p.wrapping_add(64 * line));
            }
        }
        if let Some(r) = self.ready.front() {
            visit((r as *const usize).cast());
        }
        visit(self.acked.as_slices().0.as_ptr().cast());
    }

    /// Brings the all-tunnel in-flight total up to date with tunnel `idx`. Every
    /// path that changes a tunnel's in-flight bytes ends in `schedule` or calls this.
    fn settle(&mut self, idx: usize) {
        let t = &mut self.tunnels[idx];
        self.in_flight_total = self.in_flight_total - t.counted_in_flight + t.in_flight_bytes;
        t.counted_in_flight = t.in_flight_bytes;
        self.in_flight_peak = self.in_flight_peak.max(self.in_flight_total);
    }

    /// Puts a tunnel on the ready list if it can send and is not there yet.
    fn schedule(&mut self, idx: usize) {
        self.settle(idx);
        let t = &mut self.tunnels[idx];
        if !t.ready && t.wants_service() {
            t.ready = true;
            self.ready.push_back(idx);
        }
    }
}

#[cfg(test)]
mod tests;
