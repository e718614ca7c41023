//! The receiving EQIF's credit scheduler (paper §5; where the paper leaves a detail
//! open, such as the busy-time formula or the policies' ranks, the text says so).
//!
//! One [`Receiver`] serves one access link. It learns each sender's demand from the
//! pull targets of its DATA packets, trimmed headers and RTSs, keeps the senders with
//! demand in the **active sender list** (ASL), and grants one MTU of credit (one PULL)
//! per MTU-time at the link rate to the sender at the head of the list (§5).
//! Every data packet is answered with an ACK, or a NACK when trimmed (§5):
//! at once by default, or, with `ack_coalesce` above 1, in-order packets by one
//! cumulative ACK that may ride the next PULL (deferred ACKs, as in §7's DPDK build;
//! [`Receiver::defer_ack`]). Delivery and reordering are the reorder queue's
//! business, not this module's. [`Receiver::handle_data`] does both halves at once; the joined receiving
//! EQIF (`eqif.rs`) calls them apart, [`Receiver::account`] then
//! [`Receiver::queue_control`], because the tunnel state machine decides whether a
//! packet is answered and whether the answer carries SYN.
//!
//! Per sender the receiver keeps the pull number sent, the pull target, and an ASL
//! membership bit so a sender appears at most once (§5's ASL). [`Receiver::forget`]
//! removes all of it, for a caller that hands a sender's id to another host.
//!
//! # Choices the paper leaves open, and why
//!
//! - The stored pull target is the serial **maximum** of the targets seen, not the
//!   one of the highest seq (§5 does not say which to keep). The sender's targets
//!   never decrease while it is busy (see `sender.rs`), so the two agree on ordinary
//!   traffic, but a retransmission carries an old seq and a current target, and
//!   keeping only the highest-seq target would drop the credit that retransmission
//!   consumed.
//! - A target more than W beyond the pulls already sent is cut to W (§5's one-BDP cap,
//!   enforced here too): a correct sender never asks for more, and a faulty one must
//!   not make the receiver pull without bound.
//! - An RTS is answered at once with a PULL-type packet carrying the current pull
//!   number without raising it. It cannot be an ACK: the RTS's seq is the next one the
//!   sender will use, so a late ACK for it would free a data packet that never
//!   arrived. The answer repairs a lost final PULL (`sender.rs`, "Loss recovery")
//!   even when the RTS brings no new demand.
//!
//! # Spare PULLs (off in `ReceiverConfig::default`; not in the paper)
//!
//! Under §5's invariant a tunnel's credit loop holds W: one PULL per packet that
//! arrives, and none beyond the target. A tunnel whose loaded round trip exceeds W's
//! time at the link rate is therefore window-bound: its receiver's ASL runs empty
//! between PULLs although the sender has data waiting, and the link idles. (At
//! 100 Gbps, 4150-byte MTUs and W = 50, a k = 16 fat tree's loaded credit loop is
//! about 18.5 us against W's 16.6 us: every flow of a permutation loses about 8%.)
//! With [`ReceiverConfig::spare_pulls`], a PULL slot that no sender on the ASL takes
//! goes instead, round robin, to a sender whose demand was met, up to one window
//! beyond its target: the receiver keeps its link busy while it has nothing better
//! to do, and the credit in a tunnel's loop is bounded by 2W rather than W. This is
//! what the authors' public htsim model of EQDS does (its pull pacer's "slow"
//! PULLs to idle senders); the paper's text keeps W constant, so it is an option.
//! Spare PULLs never delay a PULL owed to a sender on the ASL, add nothing to the
//! busy time, and a sender that has no use for the credit holds it (clamped to W)
//! until it expires.
//!
//! # Policies
//!
//! The ASL is a PIFO ranked by the configured [`Policy`] (§5; the ranks are ours):
//! FIFO round robin, weighted share by virtual finish time, or strict priority by
//! class with round robin inside a class. One PULL timer serves the whole EQIF (§5).

use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::sender::PeerId;
use crate::time::{Time, PS_PER_NS, PS_PER_SEC, PS_PER_US};
use crate::wire::{seq_diff, seq_lt, ControlHeader, ControlKind, DataHeader, DataKind};

/// How the active sender list orders senders (§5: a FIFO by default, a PIFO for other
/// policies; the ranks are ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Round robin: equal shares (the paper's default).
    Fifo,
    /// Shares proportional to each sender's weight: rank = virtual finish time,
    /// `max(virtual time, last finish) + MTU / weight`.
    Weighted,
    /// Lower class first; round robin among senders of the same class.
    StrictPriority,
}

/// Configuration of one receiving EQIF.
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    /// Access-link rate in bits per second. Default 25 Gbps, the paper's T1 testbed
    /// (App. B).
    pub link_rate_bps: u64,
    /// Tunnel MTU in bytes, overhead included: the credit one PULL grants and the
    /// packet whose serialisation time is the MTU-time (§5). Default 1500.
    pub mtu: u32,
    /// The credit window W in bytes: a sender is never owed more than this. Default
    /// 50 MTUs (§8.5).
    pub window: u32,
    /// PULL rate as a fraction of the link rate, in thousandths. Default 1000 (line
    /// rate, §5); we suggest 990-1000: lower values leave headroom for jitter.
    pub pacing_permille: u32,
    /// How many PULLs a late timer may send at once to catch up (our choice; §7 reports
    /// the timer jitter of the kernel build). Default 1: no catching up, which suits
    /// exact simulated timers; a daemon wants a few.
    pub pull_burst: u32,
    /// The ASL policy. Default [`Policy::Fifo`].
    pub policy: Policy,
    /// Deferred ACKs (as in §7's DPDK build; the rule is ours): in-order DATA is
    /// acknowledged by one cumulative ACK per this many packets, or sooner by the next
    /// PULL to the same sender, which then goes out as that ACK (it carries the new
    /// pull number either way). Default 1: every packet is ACKed at once, on its own.
    pub ack_coalesce: u32,
    /// Longest an in-order packet's ACK is deferred. Default 10 µs (our choice).
    pub ack_delay: Time,
    /// PULL slots the ASL leaves unused go to senders whose demand was met, up to
    /// one window beyond their targets (see "Spare PULLs" above). Default false:
    /// the paper's constant window.
    pub spare_pulls: bool,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        Self {
            link_rate_bps: 25_000_000_000,
            mtu: 1500,
            window: 50 * 1500,
            pacing_permille: 1000,
            pull_burst: 1,
            policy: Policy::Fifo,
            ack_coalesce: 1,
            ack_delay: 10 * PS_PER_US,
            spare_pulls: false,
        }
    }
}

/// A read-only snapshot of one sender's state, for metrics and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderState {
    /// PULLs sent to this sender: the current pull number (§5).
    pub pulls_sent: u32,
    /// The stored pull target.
    pub pull_target: u32,
    /// In the active sender list.
    pub active: bool,
    /// Weight under [`Policy::Weighted`].
    pub weight: u32,
    /// Class under [`Policy::StrictPriority`] (0 first).
    pub class: u8,
    /// DATA packets received intact.
    pub data_packets: u64,
    /// Trimmed headers received.
    pub trimmed_packets: u64,
    /// RTS packets received.
    pub rts_packets: u64,
    /// Inner bytes received intact.
    pub payload_bytes: u64,
    /// Pull targets cut to the window (a correct sender never causes it).
    pub targets_capped: u64,
    /// PULLs sent beyond the target, in slots no active sender took
    /// ([`ReceiverConfig::spare_pulls`]).
    pub spare_pulls: u64,
}

#[derive(Debug)]
struct Peer {
    id: PeerId,
    /// The sender id its packets carry, echoed in control packets (Fig. 4's sender ID;
    /// that it names the sending EQIF is our reading).
    sender_id: u16,
    /// Weight for [`Policy::Weighted`], at least 1.
    weight: u32,
    /// Class for [`Policy::StrictPriority`].
    class: u8,
    /// Virtual finish time of its last ASL entry ([`Policy::Weighted`]).
    finish: u64,
    /// A cumulative ACK owed but deferred: (ack number, packets it covers, time
    /// deferral began).
    deferred: Option<(u32, u32, Time)>,
    /// On the list of senders that may take spare PULLs.
    spare: bool,
    stats: SenderState,
}

impl Peer {
    /// A sender never heard from.
    fn new(id: PeerId) -> Self {
        Self {
            id,
            sender_id: 0,
            weight: 1,
            class: 0,
            finish: 0,
            deferred: None,
            spare: false,
            stats: SenderState {
                pulls_sent: 0,
                pull_target: 0,
                active: false,
                weight: 1,
                class: 0,
                data_packets: 0,
                trimmed_packets: 0,
                rts_packets: 0,
                payload_bytes: 0,
                targets_capped: 0,
                spare_pulls: 0,
            },
        }
    }

    /// Pulls still owed: the credit this sender's ASL entry implies (§5's invariant).
    fn owed(&self) -> u64 {
        u64::try_from(seq_diff(self.stats.pull_target, self.stats.pulls_sent)).unwrap_or(0)
    }

    /// Whether a spare PULL may go to this sender: none is owed to it (it is not on
    /// the ASL) and fewer than `window_pulls` were sent beyond its target.
    fn takes_spare(&self, window_pulls: u32) -> bool {
        !self.stats.active
            && seq_diff(self.stats.pulls_sent, self.stats.pull_target) < window_pulls as i32
    }
}

/// Scale of virtual time under [`Policy::Weighted`]: one MTU served at weight 1
/// advances a sender's finish time by this much, so integer division by any weight up
/// to 2^16 stays exact enough.
const VIRTUAL_MTU: u64 = 1 << 32;

/// The active sender list: a PIFO of peer indices. FIFO and strict priority rank by
/// insertion order (within class); weighted by virtual finish time.
#[derive(Debug, Default)]
struct ActiveSenderList {
    /// (primary rank, insertion order, peer index), smallest first.
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    /// Insertion counter: ties break first in, first out.
    order: u64,
    /// Finish time of the entry served last ([`Policy::Weighted`]).
    virtual_time: u64,
}

impl ActiveSenderList {
    fn push(&mut self, policy: Policy, idx: usize, peer: &mut Peer) {
        let rank = match policy {
            Policy::Fifo => 0,
            Policy::StrictPriority => u64::from(peer.class),
            Policy::Weighted => {
                // A sender returning from idleness starts at the current virtual time,
                // so it cannot claim the service it did not use.
                let start = peer.finish.max(self.virtual_time);
                peer.finish = start + VIRTUAL_MTU / u64::from(peer.weight);
                peer.finish
            }
        };
        self.order += 1;
        self.heap.push(Reverse((rank, self.order, idx)));
    }

    fn pop(&mut self, policy: Policy) -> Option<usize> {
        let Reverse((rank, _, idx)) = self.heap.pop()?;
        if policy == Policy::Weighted {
            self.virtual_time = rank;
        }
        Some(idx)
    }

    fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Takes peer index `idx` off the list, wherever it is. Linear in the list's
    /// length, which is fine for [`Receiver::forget`], not for the fast path.
    fn remove(&mut self, idx: usize) {
        self.heap.retain(|&Reverse((_, _, i))| i != idx);
    }
}

/// A control packet decided but not yet handed out; its header is built when polled
/// so it carries the latest pull number and busy time.
#[derive(Debug, Clone, Copy)]
struct Queued {
    peer: usize,
    kind: ControlKind,
    ack_no: u32,
    /// SYN flag: a SYN-ACK or SYN-NACK (set by the tunnel state machine).
    syn: bool,
    /// A deferred ACK covering every sequence number up to `ack_no`.
    cumulative: bool,
}

/// One receiving EQIF: per-sender credit state, the active sender list and the PULL
/// pacer. See the module documentation.
///
/// Fields are kept in this order (`repr(C)`): what nearly every event on the host reads
/// first (the queues a pump polls, the PULL clock), then the rest of what packets
/// read, configuration and lookup tables last. On a large network each cache line is
/// a miss; with this order (and [`crate::host::Host`]'s) an EQDS event in the simulator
/// reads 9.1 lines of its host's state struct on average, against 10.5 before, and
/// the lines nearly every event reads are the first 4 (eqds-sim's BENCHMARKS.md,
/// "Fourth pass").
#[derive(Debug)]
#[repr(C)]
pub struct Receiver {
    asl: ActiveSenderList,
    /// Senders whose demand was met, in the order it was, that may take spare PULLs
    /// ([`ReceiverConfig::spare_pulls`]); empty when that is off. A sender back on
    /// the ASL, or a window beyond its target, leaves when it reaches the front.
    spare: VecDeque<usize>,
    /// Control packets to hand out, oldest first.
    control: VecDeque<Queued>,
    /// Peers with a deferred ACK, in order of deferral: (time it began, peer). An
    /// entry is stale once the peer's ACK went out or was deferred afresh.
    deferred: VecDeque<(Time, usize)>,
    /// Earliest time the next PULL may go.
    next_pull_at: Time,
    /// Serialisation time of one MTU at the paced rate (§5's MTU-time).
    pull_interval: Time,
    /// Spare PULLs sent, to all senders.
    spare_sent: u64,
    /// Senders, indexed by position. A forgotten sender's position goes to `free`
    /// and is reused for the next new one, so the list is as long as the most senders
    /// known at once.
    peers: Vec<Peer>,
    /// Sum of the pulls owed to all senders: the busy-time numerator.
    owed_total: u64,
    /// Window in PULLs: the cap on what a sender may be owed.
    window_pulls: u32,
    /// The sender `peer_index` found last and its position: a host mostly hears
    /// from one sender at a time (a permutation: only ever one), and this spares
    /// it the map's memory, a cache miss per packet on a large network.
    last: Option<(PeerId, usize)>,
    config: ReceiverConfig,
    /// Position of each sender. Fx hashing: peer ids are chosen by the caller (host
    /// numbers, peer-table slots), never by the network, so a keyed hash buys nothing
    /// and costs a SipHash per packet.
    index: FxHashMap<PeerId, usize>,
    /// Positions in `peers` of forgotten senders, free for new ones.
    free: Vec<usize>,
}

impl Receiver {
    /// Creates a receiving EQIF with no known senders.
    ///
    /// # Panics
    ///
    /// If `link_rate_bps`, `mtu`, `pacing_permille` or `pull_burst` is 0, or `window`
    /// is below one MTU.
    pub fn new(config: ReceiverConfig) -> Self {
        assert!(
            config.link_rate_bps > 0 && config.pacing_permille > 0,
            "rate must be positive"
        );
        assert!(
            config.mtu > 0 && config.window >= config.mtu,
            "window must hold one MTU"
        );
        assert!(config.pull_burst > 0, "pull_burst must be at least 1");
        let bits = u128::from(config.mtu) * 8;
        let interval = (bits * u128::from(PS_PER_SEC) * 1000)
            .div_ceil(u128::from(config.link_rate_bps) * u128::from(config.pacing_permille));
        Self {
            pull_interval: Time::try_from(interval).unwrap_or(Time::MAX),
            window_pulls: config.window / config.mtu,
            config,
            peers: Vec::new(),
            free: Vec::new(),
            index: FxHashMap::default(),
            last: None,
            asl: ActiveSenderList::default(),
            spare: VecDeque::new(),
            spare_sent: 0,
            next_pull_at: 0,
            owed_total: 0,
            control: VecDeque::new(),
            deferred: VecDeque::new(),
        }
    }

    /// The configuration this EQIF runs with.
    pub fn config(&self) -> &ReceiverConfig {
        &self.config
    }

    /// Time between two PULLs: one MTU-time at the paced rate (§5).
    pub fn pull_interval(&self) -> Time {
        self.pull_interval
    }

    /// Sets the weight of `src` under [`Policy::Weighted`] (0 is taken as 1). Takes
    /// effect from its next ASL entry.
    pub fn set_weight(&mut self, src: PeerId, weight: u32) {
        let idx = self.peer_index(src);
        self.peers[idx].weight = weight.max(1);
    }

    /// Sets the class of `src` under [`Policy::StrictPriority`] (0 is served first).
    /// Takes effect from its next ASL entry.
    pub fn set_class(&mut self, src: PeerId, class: u8) {
        let idx = self.peer_index(src);
        self.peers[idx].class = class;
    }

    /// Accounts for a DATA packet, trimmed header or RTS from `src` carrying
    /// `payload_len` bytes after its header: updates the sender's demand and ASL
    /// membership and queues the ACK, NACK or RTS answer. Call
    /// [`Receiver::poll_control`] afterwards.
    pub fn handle_data(&mut self, now: Time, src: PeerId, header: &DataHeader, payload_len: usize) {
        let answer = self.account(now, src, header, payload_len);
        self.queue_control(src, answer, header.seq, false);
    }

    /// The credit half of [`Receiver::handle_data`]: counts the packet and its demand
    /// and returns the answer it calls for (ACK, NACK, or PULL for an RTS) without
    /// queueing it, for a caller (the tunnel layer) that decides the answer's flags
    /// or drops the packet. Demand is counted even for a dropped packet: its sender
    /// spent the credit and wants it back.
    pub fn account(
        &mut self,
        now: Time,
        src: PeerId,
        header: &DataHeader,
        payload_len: usize,
    ) -> ControlKind {
        let idx = self.peer_index(src);
        let peer = &mut self.peers[idx];
        peer.sender_id = header.sender_id;
        let answer = match header.kind {
            DataKind::Rts => {
                peer.stats.rts_packets += 1;
                ControlKind::Pull
            }
            DataKind::Data if header.trimmed => {
                peer.stats.trimmed_packets += 1;
                ControlKind::Nack
            }
            DataKind::Data => {
                peer.stats.data_packets += 1;
                peer.stats.payload_bytes += payload_len as u64;
                ControlKind::Ack
            }
        };

        let cap = peer.stats.pulls_sent.wrapping_add(self.window_pulls);
        let mut target = header.pull_target;
        if seq_lt(cap, target) {
            target = cap;
            peer.stats.targets_capped += 1;
        }
        if seq_lt(peer.stats.pull_target, target) {
            self.owed_total -= peer.owed();
            peer.stats.pull_target = target;
            self.owed_total += peer.owed();
        }
        if peer.owed() > 0 && !peer.stats.active {
            // Back from the inactive set (§5). An idle pacer does not bank PULLs.
            if self.asl.is_empty() {
                self.next_pull_at = self.next_pull_at.max(now);
            }
            peer.stats.active = true;
            self.asl.push(self.config.policy, idx, peer);
        }
        answer
    }

    /// Queues a control packet for `src`: an answer from [`Receiver::account`], an
    /// RST, or a SYN-ACK the tunnel layer decided on. `ack_no` is ignored for PULLs.
    pub fn queue_control(&mut self, src: PeerId, kind: ControlKind, ack_no: u32, syn: bool) {
        let idx = self.peer_index(src);
        self.control.push_back(Queued {
            peer: idx,
            kind,
            ack_no,
            syn,
            cumulative: false,
        });
    }

    /// Acknowledges in-order DATA from `src` up to and including `ack_no`, deferred
    /// when `ack_coalesce` allows (our rule): the ACK goes out cumulative once it
    /// covers `ack_coalesce` packets, rides the next PULL to `src`, or leaves after
    /// `ack_delay`, whichever comes first. With `ack_coalesce` 1 it is queued at
    /// once, as an ordinary ACK for `ack_no`.
    pub fn defer_ack(&mut self, now: Time, src: PeerId, ack_no: u32) {
        let idx = self.peer_index(src);
        if self.config.ack_coalesce <= 1 {
            self.queue_control(src, ControlKind::Ack, ack_no, false);
            return;
        }
        let peer = &mut self.peers[idx];
        let (count, since) = match peer.deferred {
            Some((_, count, since)) => (count + 1, since),
            None => {
                self.deferred.push_back((now, idx));
                (1, now)
            }
        };
        if count >= self.config.ack_coalesce {
            peer.deferred = None;
            self.push_cumulative(idx, ack_no);
            self.drop_stale_deferred();
        } else {
            peer.deferred = Some((ack_no, count, since));
        }
    }

    /// Forgets a deferred ACK of `src`: its sequence numbers belong to a tunnel
    /// state that was dropped or replaced by a new epoch.
    pub fn cancel_deferred_ack(&mut self, src: PeerId) {
        if let Some(&idx) = self.index.get(&src) {
            self.peers[idx].deferred = None;
            self.drop_stale_deferred();
        }
    }

    /// Pops the entries at the front of `deferred` whose ACK already went out, so
    /// that [`Receiver::poll_timeout`] finds the oldest live one first rather than
    /// walking past every ACK that rode a PULL since.
    fn drop_stale_deferred(&mut self) {
        while let Some(&(since, idx)) = self.deferred.front() {
            if matches!(self.peers[idx].deferred, Some((_, _, began)) if began == since) {
                return;
            }
            self.deferred.pop_front();
        }
    }

    fn push_cumulative(&mut self, peer: usize, ack_no: u32) {
        self.control.push_back(Queued {
            peer,
            kind: ControlKind::Ack,
            ack_no,
            syn: false,
            cumulative: true,
        });
    }

    /// Sends the deferred ACKs whose delay ran out at `now`.
    fn flush_deferred(&mut self, now: Time) {
        while let Some(&(since, idx)) = self.deferred.front() {
            match self.peers[idx].deferred {
                Some((ack_no, _, began)) if began == since => {
                    if since + self.config.ack_delay > now {
                        return;
                    }
                    self.peers[idx].deferred = None;
                    self.push_cumulative(idx, ack_no);
                }
                // Sent already, or deferred again later (a newer entry exists).
                _ => {}
            }
            self.deferred.pop_front();
        }
    }

    /// When the oldest deferred ACK must go, skipping entries already sent.
    fn deferred_timeout(&self) -> Option<Time> {
        self.deferred
            .iter()
            .find(
                |&&(since, idx)| matches!(self.peers[idx].deferred, Some((_, _, b)) if b == since),
            )
            .map(|&(since, _)| since + self.config.ack_delay)
    }

    /// The next control packet to send and its destination: ACKs, NACKs and RTS
    /// answers as soon as their packet was handled, PULLs when the pacer released
    /// them in [`Receiver::handle_timeout`]. Every one carries the sender's current
    /// pull number and the link's busy time (§5).
    pub fn poll_control(&mut self, _now: Time) -> Option<(PeerId, ControlHeader)> {
        let q = self.control.pop_front()?;
        let peer = &self.peers[q.peer];
        let header = ControlHeader {
            kind: q.kind,
            syn: q.syn,
            cumulative: q.cumulative,
            sender_id: peer.sender_id,
            ack_no: if q.kind == ControlKind::Pull {
                0
            } else {
                q.ack_no
            },
            pull_no: peer.stats.pulls_sent,
            busy_time_ns: self.busy_time_ns(),
        };
        Some((peer.id, header))
    }

    /// Charges `bytes` that reached the access link without a PULL (control packets
    /// for this host's own sending, chiefly) against the pacer: while senders are
    /// owed PULLs the next one waits the time those bytes took on the link. The
    /// pacer otherwise fills the link with pulled data alone, and the control stream
    /// overloads it by its own size (a few per cent at a 1500-byte MTU): a queue that
    /// grows without bound where the network neither trims nor prioritises control.
    pub fn charge_unpulled(&mut self, bytes: u32) {
        if !self.pacing() {
            return;
        }
        let delay =
            u128::from(self.pull_interval) * u128::from(bytes) / u128::from(self.config.mtu);
        self.next_pull_at = self
            .next_pull_at
            .saturating_add(Time::try_from(delay).unwrap_or(Time::MAX));
    }

    /// When the pacer next has work: the next PULL, if any sender is owed one (or
    /// may take a spare one), or the oldest deferred ACK's deadline.
    pub fn poll_timeout(&self) -> Option<Time> {
        let pull = self.pacing().then_some(self.next_pull_at);
        match (pull, self.deferred_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the pacer: releases the PULLs due at `now` (one per MTU-time, at most
    /// `pull_burst` at once when late) to the head of the ASL, re-inserting each
    /// sender at its new rank or dropping it once its target is met (§5).
    pub fn handle_timeout(&mut self, now: Time) {
        self.flush_deferred(now);
        if !self.pacing() {
            return;
        }
        let late_floor =
            now.saturating_sub(Time::from(self.config.pull_burst - 1) * self.pull_interval);
        self.next_pull_at = self.next_pull_at.max(late_floor);
        while self.next_pull_at <= now {
            let idx = if let Some(idx) = self.asl.pop(self.config.policy) {
                let peer = &mut self.peers[idx];
                peer.stats.pulls_sent = peer.stats.pulls_sent.wrapping_add(1);
                self.owed_total -= 1;
                if peer.owed() > 0 {
                    self.asl.push(self.config.policy, idx, peer);
                } else {
                    peer.stats.active = false;
                    if self.config.spare_pulls && !peer.spare {
                        peer.spare = true;
                        self.spare.push_back(idx);
                    }
                }
                idx
            } else if let Some(idx) = self.next_spare() {
                let peer = &mut self.peers[idx];
                peer.stats.pulls_sent = peer.stats.pulls_sent.wrapping_add(1);
                peer.stats.spare_pulls += 1;
                self.spare_sent += 1;
                self.spare.push_back(idx);
                idx
            } else {
                break;
            };
            let peer = &mut self.peers[idx];
            // A deferred ACK to this sender goes now, as this PULL: every control
            // packet carries the pull number.
            let q = match peer.deferred.take() {
                Some((ack_no, _, _)) => Queued {
                    peer: idx,
                    kind: ControlKind::Ack,
                    ack_no,
                    syn: false,
                    cumulative: true,
                },
                None => Queued {
                    peer: idx,
                    kind: ControlKind::Pull,
                    ack_no: 0,
                    syn: false,
                    cumulative: false,
                },
            };
            self.control.push_back(q);
            self.next_pull_at += self.pull_interval;
        }
        self.drop_stale_deferred();
    }

    /// Whether the pacer runs: a sender is owed a PULL, or may take a spare one.
    fn pacing(&self) -> bool {
        !self.asl.is_empty() || !self.spare.is_empty()
    }

    /// Takes off the front of the spare list the first sender that may still take a
    /// spare PULL, dropping those that may not (back on the ASL, or a window
    /// beyond their target).
    fn next_spare(&mut self) -> Option<usize> {
        while let Some(idx) = self.spare.pop_front() {
            let peer = &mut self.peers[idx];
            if peer.takes_spare(self.window_pulls) {
                return Some(idx);
            }
            peer.spare = false;
        }
        None
    }

    /// A snapshot of the state kept for `src`.
    pub fn sender(&self, src: PeerId) -> Option<SenderState> {
        self.index.get(&src).map(|&i| {
            let p = &self.peers[i];
            SenderState {
                weight: p.weight,
                class: p.class,
                ..p.stats
            }
        })
    }

    /// Spare PULLs sent so far, to all senders ([`ReceiverConfig::spare_pulls`]).
    pub fn spare_pulls_sent(&self) -> u64 {
        self.spare_sent
    }

    /// The minimum time the access link stays busy with the demand already known,
    /// in nanoseconds (§5, which says only that the pull targets make it computable;
    /// the formula is ours): pulls owed to all senders times the MTU-time.
    pub fn busy_time_ns(&self) -> u32 {
        let ps = u128::from(self.owed_total) * u128::from(self.pull_interval);
        u32::try_from(ps / u128::from(PS_PER_NS)).unwrap_or(u32::MAX)
    }

    /// Forgets everything kept for `src`, as if it had never sent: its pull number
    /// and target, the PULLs still owed to it (and with them its share of the busy
    /// time), its place in the active sender list, its weight and class, a deferred
    /// ACK and the control packets queued for it but not yet polled. Returns whether
    /// `src` was known.
    ///
    /// For a caller that gives `src` to another host (the daemon's peer table
    /// evicts a peer and reuses its slot): the new host would otherwise inherit
    /// credit it never asked for, ACKs and PULLs meant for the old one, and the old
    /// one's place and rank in the list. A sender forgotten while it still talks
    /// starts again from pull number 0: its tunnel must re-synchronise as after a
    /// receiver restart. Linear in the active sender list and the control queue.
    pub fn forget(&mut self, src: PeerId) -> bool {
        let Some(idx) = self.index.remove(&src) else {
            return false;
        };
        self.last = None;
        let peer = &self.peers[idx];
        // Owed PULLs and ASL membership go together (`account`, `handle_timeout`).
        self.owed_total -= peer.owed();
        if peer.stats.active {
            self.asl.remove(idx);
        }
        self.control.retain(|q| q.peer != idx);
        self.deferred.retain(|&(_, i)| i != idx);
        self.spare.retain(|&i| i != idx);
        self.peers[idx] = Peer::new(src);
        self.free.push(idx);
        true
    }

    /// The fields [`Receiver::hot_state`] reads (see [`crate::host::Host::hot_fields`]).
    pub(crate) fn hot_fields(&self, visit: &mut impl FnMut(*const u8)) {
        visit((&raw const self.peers).cast());
        visit((&raw const self.asl).cast());
        visit((&raw const self.deferred).cast());
    }

    /// The addresses of the state beside the `Receiver` that most events read: the
    /// first line of its first sender's record and its queues (see
    /// `Host::hot_state`).
    pub(crate) fn hot_state(&self, visit: &mut impl FnMut(*const u8)) {
        if let Some(p) = self.peers.first() {
            visit((p as *const Peer).cast());
        }
        visit(self.asl.heap.as_slice().as_ptr().cast());
        visit(self.spare.as_slices().0.as_ptr().cast());
        visit(self.control.as_slices().0.as_ptr().cast());
        visit(self.deferred.as_slices().0.as_ptr().cast());
    }

    fn peer_index(&mut self, src: PeerId) -> usize {
        if let Some((id, i)) = self.last {
            if id == src {
                return i;
            }
        }
        let i = self.peer_index_slow(src);
        self.last = Some((src, i));
        i
    }

    fn peer_index_slow(&mut self, src: PeerId) -> usize {
        if let Some(&i) = self.index.get(&src) {
            return i;
        }
        let i = match self.free.pop() {
            Some(i) => {
                self.peers[i] = Peer::new(src);
                i
            }
            None => {
                self.peers.push(Peer::new(src));
                self.peers.len() - 1
            }
        };
        self.index.insert(src, i);
        i
    }
}

#[cfg(test)]
mod tests;
