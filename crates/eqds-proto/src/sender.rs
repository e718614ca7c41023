//! The sending EQIF: per-destination tunnels that spend receiver-granted credit
//! (paper §4-§5; digest `shared/spec/eqds.md` 1.C items 12-16, 1.E items 24-28,
//! 1.F items 29-31, 1.I item 42; questions Q4, Q6, Q8, Q10, Q11, Q12, Q15).
//!
//! One [`Sender`] is one sending EQIF. Packets handed to [`Sender::enqueue`] wait in
//! their destination tunnel's send queue until the tunnel holds enough credit, then
//! come out of [`Sender::poll_transmit`] with a filled-in [`DataHeader`]. Each tunnel
//! keeps the paper's three queues: send queue, in-flight queue (sent, not ACKed) and
//! retransmit queue (NACKed or timed out), served retransmit queue first.
//!
//! # Credit
//!
//! Credit is a signed byte counter per tunnel (item 12). Every control packet carries
//! the receiver's cumulative pull number; when the highest one seen rises by `n` the
//! tunnel gains `n` MTUs (item 13), so lost or reordered PULLs lose nothing. A packet
//! is sent only when the credit covers its whole charged length (Q4's exact option),
//! so the counter never goes negative in practice.
//!
//! Every DATA or RTS packet carries a pull target:
//!
//! ```text
//! pull_target = highest_pull + ceil(max(0, min(backlog, W) - credit) / MTU)
//! ```
//!
//! This is Q6's formula with the cap moved: Q6 writes `clamp(backlog - credit, 0, W)`,
//! which lets a tunnel holding credit ask for W *more* (a window of up to 2W right
//! after an NDP burst). Capping the backlog before subtracting the credit makes the
//! held credit count towards the window, and the target then equals
//! `packets sent + W/MTU - initial credit` while demand lasts: every packet that
//! reaches the receiver earns exactly one PULL back, which is the conservation
//! invariant of item 15. It never decreases while a tunnel is busy (the lookahead
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
//! tunnel's idleness (Q6). Until then it pays for a restart, which is what keeps a
//! thin stream whose packets are further apart than its round trip from sending an
//! RTS per packet.
//!
//! # Starting and restarting
//!
//! A tunnel (re)starts when data arrives while it has no backlog and expects no more
//! PULLs. If nothing is in flight either, the tunnel was idle, and the first-RTT mode
//! decides what happens (item 29-31):
//! - [`Mode::Ndp`], receiver not known to be busy: the tunnel is granted a window W
//!   of credit and bursts it;
//! - [`Mode::Rts`], receiver not busy, and the tunnel went quiet (its last send or
//!   control packet) no longer than one smoothed RTT ago: the credit it still holds
//!   is current and pays for the new data (a "warm" restart, Q6's grace period);
//! - otherwise, and always within the last advertised busy time: the credit held is
//!   dropped (Q6: stale credit must not be burst into a receiver that has moved on),
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
//! the per-packet retransmit timer moves it to the retransmit queue (item 25-26).
//! Optionally (`SenderConfig::loss_reorder_window`, off by default) a packet is also
//! taken for lost once a packet sent sufficiently later has been ACKed, as RACK does
//! for TCP: on a network that does not trim, a loss then costs about a round trip
//! instead of an RTO. A tunnel with backlog, not enough credit and nothing in flight that has heard nothing
//! for `credit_loss_timeout` sends an RTS (item 27, Q11); the receiver answers an RTS
//! at once with its current pull number, which repairs a lost final PULL.
//!
//! # Tunnel lifecycle
//!
//! Each tunnel is driven by a [`TxTunnel`] (Appendix A, `tunnel.rs`). A tunnel that
//! gets data while CLOSED picks an epoch (random from the sender's own generator, or
//! the remembered one plus one) and numbers its packets from `isn_for_epoch(epoch)`;
//! [`Sender::open_tunnel`] instead starts SYN-SENT at a given sequence number. While
//! SYN-SENT every DATA and RTS carries SYN, and no new packet is numbered past
//! `isn + 1023`, so the initial window fits in the epoch's block (item 33). ACKs and
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
//! [`Sender::drop_tunnel`] forgets a tunnel unilaterally (item 37) and hands back its
//! payloads. The receiver keeps its cumulative pull number, so the re-created tunnel
//! takes the pull number of the first control packet it hears as its baseline, without
//! credit, rather than comparing against a count it forgot.

use rustc_hash::FxHashMap;
use std::collections::VecDeque;

use crate::paths::{PathStats, PathTable};
use crate::rtt::RttEstimator;
use crate::time::{Time, PS_PER_MS, PS_PER_NS};
use crate::tunnel::{Actions, TxAction, TxEvent, TxState, TxTunnel};
use crate::wire::{
    epoch_of, seq_diff, seq_le, seq_lt, ControlHeader, ControlKind, DataHeader, DataKind,
    NextProto, EPOCH_BLOCK,
};

/// Names the far end of a tunnel: the destination host (or host and EQIF) as the
/// owner of this EQIF numbers it. The core never interprets it.
pub type PeerId = u32;

/// How a tunnel spends its first RTT after a (re)start (item 29-32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The network trims: a (re)starting tunnel owns one window of credit and bursts
    /// it; overflow is trimmed and the headers tell the receiver the demand.
    Ndp,
    /// The network does not trim: a (re)starting tunnel sends an RTS carrying its
    /// pull target and waits for PULLs (one extra RTT, 1RMA style).
    Rts,
}

/// Configuration of one sending EQIF.
#[derive(Debug, Clone)]
pub struct SenderConfig {
    /// First-RTT mode. Default [`Mode::Ndp`]: the paper's testbeds trim (§8).
    pub mode: Mode,
    /// Tunnel MTU in bytes: the largest packet as charged, overhead included, and the
    /// credit one PULL grants (item 13, Q4). Default 1500.
    pub mtu: u32,
    /// Bytes charged per packet on top of the inner packet: by default 44, outer IPv4
    /// (20), UDP (8) and the EQDS header (16), since credit pays for what occupies
    /// the receiver's link (Q4). An RTS goes on the wire with exactly this length.
    pub overhead: u32,
    /// The per-tunnel credit window W in bytes, nominally one BDP. Default 50 MTUs,
    /// the paper's DPDK window (§8.5, digest section 2).
    pub window: u32,
    /// Bytes a new or idle tunnel sends before any credit arrives, when its receiver
    /// is not busy (items 29-31); the pull targets they carry ask for the rest.
    /// `None` lets the mode decide: NDP bursts one window, RTS sends nothing and asks
    /// first. `Some(n)` in RTS mode saves its round trip when the receiver is idle,
    /// at the risk of losing those `n` bytes in an incast on a network that does not
    /// trim. A value smaller than the first packet means ask first.
    pub initial_window: Option<u32>,
    /// Credit asked for beyond the backlog while packets are in flight, in bytes, at
    /// most the bytes in flight (see the module doc, "Lookahead"). Default 4 MTUs.
    /// A writer whose queue empties between bursts (TCP's ACK clock, above all a
    /// stream of pure ACKs) then finds credit waiting instead of asking with an RTS
    /// each time; the price is up to this much credit granted and left unused when
    /// a stream stops. 0 asks for exactly the backlog.
    pub demand_lookahead: u32,
    /// Send-queue capacity per tunnel, in packets. Default 100, the paper's default
    /// TX buffering per destination (§6, item 52).
    pub send_queue_packets: usize,
    /// Send-queue capacity per tunnel in charged bytes, on top of the packet limit.
    /// Default unlimited. A byte limit lets a burst of small packets (the TCP ACKs
    /// a receiver sends when its reorder queue releases a run of segments) through
    /// where a packet count sized for full packets would drop them.
    pub send_queue_bytes: u64,
    /// Minimum retransmit timeout per in-flight packet; each tunnel's timeout is
    /// `srtt + 4 rttvar` from its own samples when that is longer (Q10, `rtt.rs`).
    /// Default 1 ms: the upper end of Q10's simulator range; trims make it a safety
    /// net, not the main loss signal.
    pub rto: Time,
    /// Quiet time after which a stalled tunnel (backlog, no usable credit, nothing in
    /// flight) sends an RTS (Q11). Default 1 ms, one RTO.
    pub credit_loss_timeout: Time,
    /// Number of path ids sprayed over (Q15: P at least the number of equal-cost
    /// paths). Default 64. Must be at least 1.
    pub paths: u16,
    /// This EQIF's id, written into every header and expected back in control
    /// packets (Q2). Default 0.
    pub sender_id: u16,
    /// Inner protocol of the packets of this EQIF. Default IPv4.
    pub next_proto: NextProto,
    /// Seed of the path permutations, so runs are reproducible. Default 0.
    pub seed: u64,
    /// Keep per-path statistics in every tunnel ([`crate::paths`]): one entry per
    /// path id per tunnel. Default false.
    pub path_stats: bool,
    /// After a trim (NACK or returned header), a retransmit timeout or a loss found
    /// by `loss_reorder_window` of a packet sent on a path, the tunnel sprays around
    /// that path for this long
    /// (`PathCycle`). Default 0: off, every path in turn whatever happened on it.
    pub path_avoidance: Time,
    /// Time-based loss detection \[choice, beyond the paper\], after RACK (RFC 8985):
    /// once a packet sent at time `t` is ACKed on its only transmission, packets
    /// still in flight that were sent before `t - loss_reorder_window` are taken for
    /// lost and queued for resend without waiting for their retransmit timeout.
    /// Without trimming (RTS mode on a drop-tail network) a loss otherwise costs a
    /// whole RTO. The window must cover the spread of delays across the sprayed
    /// paths, and the receiver's `ack_delay` when it coalesces ACKs, or packets that
    /// merely arrived late or were ACKed late are resent. Default 0: off, as in the
    /// paper (NACKs and the RTO only).
    pub loss_reorder_window: Time,
}

impl SenderConfig {
    /// Credit a (re)starting idle tunnel whose window is `window` grants itself when
    /// its receiver is not busy.
    pub fn first_rtt_credit(&self, window: u32) -> u32 {
        match (self.initial_window, self.mode) {
            (Some(initial), _) => initial.min(window),
            (None, Mode::Ndp) => window,
            (None, Mode::Rts) => 0,
        }
    }
}

impl Default for SenderConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Ndp,
            mtu: 1500,
            overhead: 44,
            window: 50 * 1500,
            initial_window: None,
            demand_lookahead: 4 * 1500,
            send_queue_packets: 100,
            send_queue_bytes: u64::MAX,
            rto: PS_PER_MS,
            credit_loss_timeout: PS_PER_MS,
            paths: 64,
            sender_id: 0,
            next_proto: NextProto::Ipv4,
            seed: 0,
            path_stats: false,
            path_avoidance: 0,
            loss_reorder_window: 0,
        }
    }
}

/// Why [`Sender::enqueue`] refused a packet. The payload is handed back so the
/// caller can free or requeue it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueueError<P> {
    /// The tunnel's send queue is full: the higher layer must hold the packet (the
    /// EQIF's backpressure, item 24).
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
    /// Path of its last transmission (item 43; see [`crate::paths`]).
    pub path_id: u16,
    /// Time from its transmission to the ACK, if it was sent exactly once (Karn's
    /// rule: a resent packet's ACK is ambiguous).
    pub rtt: Option<Time>,
}

/// A read-only snapshot of one tunnel, for metrics and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunnelStats {
    /// Unspent credit in bytes.
    pub credit: i64,
    /// Highest pull number seen (serial order).
    pub highest_pull: u32,
    /// Pull target carried by the last DATA or RTS sent.
    pub last_pull_target: u32,
    /// Charged bytes waiting in the send queue.
    pub send_queue_bytes: u64,
    /// Charged bytes waiting in the retransmit queue.
    pub retransmit_bytes: u64,
    /// Charged bytes sent and not yet ACKed, NACKed or timed out.
    pub in_flight_bytes: u64,
    /// Packets sent and not yet ACKed, NACKed or timed out.
    pub in_flight_packets: usize,
    /// Until when the receiver said its link stays saturated (item 31, Q8).
    pub busy_until: Time,
    /// Smoothed round-trip time of the tunnel's DATA (0 before the first sample).
    pub srtt: Time,
    /// The retransmit timeout now in force (`rtt.rs`).
    pub rto: Time,
    /// Credit granted without any PULL, by NDP (re)starts.
    pub free_credit_bytes: u64,
    /// NDP (re)starts that granted credit.
    pub bursts: u64,
    /// Idle restarts that spent credit still held from a round trip ago instead of
    /// asking with an RTS (Q6).
    pub warm_restarts: u64,
    /// RTS packets sent (starts in RTS mode, busy-time rule, credit-loss recovery).
    pub rts_sent: u64,
    /// Credit-loss recoveries started (item 27).
    pub credit_loss_rts: u64,
    /// Charged bytes of DATA sent, retransmissions included.
    pub bytes_sent: u64,
    /// DATA packets resent.
    pub retransmits: u64,
    /// Retransmit timer expiries.
    pub rto_expiries: u64,
    /// Packets taken for lost before their timeout because one sent more than
    /// `SenderConfig::loss_reorder_window` later was ACKed.
    pub reorder_losses: u64,
    /// Credit refused because it would have exceeded W: a faulty or hostile receiver
    /// (a correct one never causes it).
    pub credit_clamped_bytes: u64,
    /// Epochs started (the first one included).
    pub epochs: u64,
    /// Packets renumbered into a new epoch by a re-establishment.
    pub renumbered: u64,
    /// RSTs ignored because they answer a packet of an earlier epoch.
    pub stale_rsts: u64,
    /// Trimmed headers a switch returned to us (see [`Sender::handle_returned`]).
    pub returned: u64,
    /// ACKed packets with a resent copy still on its way (see `Stray`).
    pub stray_packets: usize,
}

/// A packet that has been given a sequence number: in flight or awaiting resend.
#[derive(Debug)]
struct Sent<P> {
    seq: u32,
    /// Charged length (inner packet plus overhead).
    len: u32,
    /// Path of the latest transmission (item 43): answers are counted against it.
    path_id: u16,
    /// Time of the latest transmission; the retransmit timer runs from it.
    sent_at: Time,
    /// Transmissions under this sequence number. More than one, and an ACK gives no
    /// RTT sample (Karn's rule).
    sends: u16,
    /// NACKs and returned headers received for it: transmissions answered without
    /// freeing it. `sends - echoes` copies may still be on their way.
    echoes: u16,
    payload: P,
}

impl<P> Sent<P> {
    /// Copies still unanswered once the echo now arriving is counted, at least one if
    /// that echo came back faster than any round trip of the tunnel took, since it
    /// cannot then answer the latest transmission. Duplication in the network can
    /// make the count alone come out too low; the timing catches the usual case.
    fn copies_left_after_echo(&self, now: Time, min_rtt: Option<Time>) -> u16 {
        let by_count = self.sends.saturating_sub(self.echoes + 1);
        let too_soon = self.sends > 1 && min_rtt.is_none_or(|m| now < self.sent_at + m);
        by_count.max(u16::from(too_soon))
    }
}

/// A packet freed by an ACK while another of its transmissions was still on the
/// way. The copy holds no payload, but it holds a share of the receiver's link: a
/// tunnel that counted nothing in flight and started a fresh NDP burst would put W
/// plus the stray on the wire. Strays end when their copies are answered or one
/// retransmit timeout after the latest transmission.
#[derive(Debug, Clone, Copy)]
struct Stray {
    seq: u32,
    copies: u16,
    sent_at: Time,
}

/// A random permutation of the path ids, walked round robin and reshuffled at every
/// wrap, so that each tunnel covers all paths evenly but unpredictably (item 42, Q15).
///
/// With path avoidance on ([`SenderConfig::path_avoidance`]), a path that trimmed or
/// lost a packet is skipped until its avoidance ends, unless every path is avoided,
/// when spraying goes on as if none were: a first step towards the load-aware path
/// choice the paper leaves to future work.
#[derive(Debug)]
struct PathCycle {
    order: Vec<u16>,
    next: usize,
    /// Per path id, the time until which it is skipped; empty when avoidance is off.
    avoid_until: Vec<Time>,
}

impl PathCycle {
    fn new(paths: u16, avoidance: bool) -> Self {
        Self {
            order: (0..paths).collect(),
            next: 0,
            avoid_until: if avoidance {
                vec![0; usize::from(paths)]
            } else {
                Vec::new()
            },
        }
    }

    /// The path for the next packet sent at `now`.
    fn next(&mut self, rng: &mut SplitMix64, now: Time) -> u16 {
        if !self.avoid_until.is_empty() {
            for _ in 0..self.order.len() {
                let path = self.step(rng);
                if self.avoid_until[usize::from(path)] <= now {
                    return path;
                }
            }
        }
        self.step(rng)
    }

    /// Skips `path` until `until` (no-op when avoidance is off).
    fn avoid(&mut self, path: u16, until: Time) {
        if let Some(t) = self.avoid_until.get_mut(usize::from(path)) {
            *t = (*t).max(until);
        }
    }

    /// The next path of the permutation, reshuffling at the wrap.
    fn step(&mut self, rng: &mut SplitMix64) -> u16 {
        if self.next == 0 {
            // Fisher-Yates.
            for i in (1..self.order.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                self.order.swap(i, j);
            }
        }
        let path = self.order[self.next];
        self.next = (self.next + 1) % self.order.len();
        path
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, seedable and good enough to shuffle
/// path ids. Owning it keeps the core free of global randomness and of a dependency.
#[derive(Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-enough integer in `0..n` (multiply-shift; the bias is below 2^-50 for
    /// the path counts used here).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// One tunnel: the sending half of the credit loop towards one destination.
#[derive(Debug)]
struct Tunnel<P> {
    /// Destination.
    peer: PeerId,
    /// Sequence number of the next new packet.
    next_seq: u32,
    /// New packets waiting for credit: (charged length, payload).
    send_queue: VecDeque<(u32, P)>,
    /// How many packets at the head of `send_queue` were queued ahead of the rest
    /// ([`Sender::enqueue_ahead`]); they keep their order among themselves.
    ahead: usize,
    /// Charged bytes in `send_queue`.
    send_bytes: u64,
    /// NACKed or timed-out packets, served before `send_queue` (item 25).
    retransmit: VecDeque<Sent<P>>,
    /// Charged bytes in `retransmit`.
    retransmit_bytes: u64,
    /// Sent and not yet ACKed, in order of (latest) send time.
    in_flight: VecDeque<Sent<P>>,
    /// ACKed packets with copies still on their way; usually empty.
    strays: Vec<Stray>,
    /// Round-trip samples of packets sent once: the retransmit timeout.
    rtt: RttEstimator,
    /// Latest send time of a packet ACKed on its only transmission: what has surely
    /// crossed the network, for `SenderConfig::loss_reorder_window`.
    newest_delivered_send: Option<Time>,
    /// Charged bytes in `in_flight`.
    in_flight_bytes: u64,
    /// `in_flight_bytes` as last added to the sender's total.
    counted_in_flight: u64,
    /// Unspent credit in bytes (item 12).
    credit: i64,
    /// The credit window W in bytes: `SenderConfig::window` unless
    /// [`Sender::set_window`] gave this destination its own.
    window: u32,
    /// Highest pull number seen, in serial order (item 13).
    highest_pull: u32,
    /// Pull target carried by the last DATA or RTS sent.
    last_target: u32,
    /// End of the receiver's last advertised busy period (Q8).
    busy_until: Time,
    /// Last time this tunnel sent anything or heard a control packet: the
    /// credit-loss timer runs from it.
    quiet_since: Time,
    /// An RTS is due.
    rts_pending: bool,
    /// Member of the sender's ready list.
    ready: bool,
    /// Path ids of this tunnel.
    paths: PathCycle,
    /// What each path id saw (empty unless `SenderConfig::path_stats`).
    path_stats: PathTable,
    /// The Appendix A state machine.
    fsm: TxTunnel,
    /// First sequence number of the current epoch.
    isn: u32,
    /// Re-created by [`Sender::drop_tunnel`]: the next control packet's pull number
    /// is the baseline, not credit.
    pull_unsynced: bool,
    stats: TunnelStats,
}

impl<P> Tunnel<P> {
    fn new(peer: PeerId, first_seq: u32, cfg: &SenderConfig, fsm: TxTunnel) -> Self {
        Self {
            peer,
            fsm,
            isn: first_seq & !(EPOCH_BLOCK - 1),
            pull_unsynced: false,
            next_seq: first_seq,
            send_queue: VecDeque::new(),
            ahead: 0,
            send_bytes: 0,
            retransmit: VecDeque::new(),
            retransmit_bytes: 0,
            in_flight: VecDeque::new(),
            strays: Vec::new(),
            rtt: RttEstimator::default(),
            newest_delivered_send: None,
            in_flight_bytes: 0,
            counted_in_flight: 0,
            credit: 0,
            window: cfg.window,
            highest_pull: 0,
            last_target: 0,
            busy_until: 0,
            quiet_since: 0,
            rts_pending: false,
            ready: false,
            paths: PathCycle::new(cfg.paths, cfg.path_avoidance > 0),
            path_stats: PathTable::new(cfg.path_stats, cfg.paths),
            stats: TunnelStats {
                credit: 0,
                highest_pull: 0,
                last_pull_target: 0,
                send_queue_bytes: 0,
                retransmit_bytes: 0,
                in_flight_bytes: 0,
                in_flight_packets: 0,
                busy_until: 0,
                srtt: 0,
                rto: 0,
                free_credit_bytes: 0,
                bursts: 0,
                warm_restarts: 0,
                rts_sent: 0,
                credit_loss_rts: 0,
                bytes_sent: 0,
                retransmits: 0,
                rto_expiries: 0,
                reorder_losses: 0,
                credit_clamped_bytes: 0,
                epochs: 0,
                renumbered: 0,
                stale_rsts: 0,
                returned: 0,
                stray_packets: 0,
            },
        }
    }

    /// Bytes still to be sent: send queue plus retransmit queue (Q6).
    fn backlog(&self) -> u64 {
        self.send_bytes + self.retransmit_bytes
    }

    /// Charged length of the packet that would be sent next.
    fn head_len(&self) -> Option<u32> {
        self.retransmit
            .front()
            .map(|p| p.len)
            .or_else(|| self.send_queue.front().map(|&(len, _)| len))
    }

    /// The next packet is paid for (Q4: only when the credit covers all of it) and,
    /// while SYN-SENT, a new one still fits in the epoch's block (item 33).
    fn can_send_data(&self) -> bool {
        if self.retransmit.is_empty() && self.block_full() {
            return false;
        }
        self.head_len()
            .is_some_and(|len| i64::from(len) <= self.credit)
    }

    /// SYN-SENT with every sequence number of the epoch's block used.
    fn block_full(&self) -> bool {
        self.fsm.syn() && self.next_seq.wrapping_sub(self.isn) >= EPOCH_BLOCK
    }

    /// A NACK or returned header for `seq` at `now`: the packet moves to the
    /// retransmit queue if it is in flight (and its path is avoided for `avoidance`),
    /// or one copy of a stray is accounted for. Returns whether the packet was in
    /// flight.
    fn echo(&mut self, seq: u32, now: Time, avoidance: Time) -> bool {
        if let Some(pos) = self.in_flight.iter().position(|p| p.seq == seq) {
            let mut pkt = self.in_flight.remove(pos).expect("position is in range");
            pkt.echoes = pkt.echoes.saturating_add(1);
            self.path_failed(pkt.path_id, now, avoidance, |p| p.trimmed += 1);
            move_to_retransmit(self, pkt);
            true
        } else {
            self.stray_answered(seq);
            false
        }
    }

    /// Queues for resend the packets in flight sent more than `window` before the
    /// latest transmission known to have arrived (`SenderConfig::loss_reorder_window`).
    /// The in-flight queue is in send order, so they are at its front.
    fn declare_reordered_losses(&mut self, now: Time, window: Time, avoidance: Time) {
        let Some(newest) = self.newest_delivered_send else {
            return;
        };
        while self
            .in_flight
            .front()
            .is_some_and(|p| p.sent_at.saturating_add(window) < newest)
        {
            let pkt = self.in_flight.pop_front().expect("front exists");
            self.stats.reorder_losses += 1;
            self.path_failed(pkt.path_id, now, avoidance, |p| p.timed_out += 1);
            move_to_retransmit(self, pkt);
        }
    }

    /// A packet sent on `path` was trimmed or lost: counted (by `count`) if
    /// statistics are kept, and the path avoided until `now + avoidance`.
    fn path_failed(&mut self, path: u16, now: Time, avoidance: Time, count: fn(&mut PathStats)) {
        if let Some(stats) = self.path_stats.get_mut(path) {
            count(stats);
        }
        self.paths.avoid(path, now.saturating_add(avoidance));
    }

    /// One copy of stray `seq` was answered (ACK, NACK or returned header).
    fn stray_answered(&mut self, seq: u32) {
        if let Some(i) = self.strays.iter().position(|s| s.seq == seq) {
            self.strays[i].copies -= 1;
            if self.strays[i].copies == 0 {
                self.strays.swap_remove(i);
            }
        }
    }

    /// Forgets strays one retransmit timeout after their latest transmission: by
    /// then they were lost, or their answer was.
    fn expire_strays(&mut self, now: Time, rto: Time) {
        self.strays.retain(|s| s.sent_at + rto > now);
    }

    /// Nothing of this tunnel is on its way to the receiver, as far as it knows.
    fn nothing_on_the_wire(&self) -> bool {
        self.in_flight.is_empty() && self.strays.is_empty()
    }

    /// Packets are queued, awaiting resend or unacknowledged.
    fn has_unacked(&self) -> bool {
        self.backlog() > 0 || !self.in_flight.is_empty()
    }

    /// Carries out the state machine's actions. Returns whether the control packet
    /// that caused them is to be processed as an ACK or NACK.
    fn apply(&mut self, actions: Actions<TxAction>) -> bool {
        let mut process = false;
        for action in actions {
            match action {
                TxAction::StartEpoch { isn, .. } => {
                    let mut isn = isn;
                    if self.next_seq != self.isn {
                        let last_used = self.next_seq.wrapping_sub(1);
                        if let Some(TxAction::StartEpoch { isn: later, .. }) =
                            self.fsm.skip_past(last_used)
                        {
                            isn = later;
                        }
                    }
                    self.isn = isn;
                    self.next_seq = isn;
                    self.stats.epochs += 1;
                }
                TxAction::ResendUnacked => self.renumber_unacked(),
                TxAction::Process => process = true,
                TxAction::FreeState => {
                    self.credit = 0;
                    self.rts_pending = false;
                }
                TxAction::SetSyn | TxAction::StopSyn | TxAction::Ignore => {}
            }
        }
        process
    }

    /// Moves every unacknowledged packet to the retransmit queue, renumbered in order
    /// from the new epoch's ISN; what does not fit in the block goes back to the head
    /// of the send queue. Without credit to resend, an RTS (with SYN) asks for it.
    fn renumber_unacked(&mut self) {
        let mut unacked: Vec<Sent<P>> = self
            .in_flight
            .drain(..)
            .chain(self.retransmit.drain(..))
            .collect();
        // Every old seq lies serially before the new ISN, so this is the old order.
        let isn = self.isn;
        unacked.sort_by_key(|p| p.seq.wrapping_sub(isn));
        self.in_flight_bytes = 0;
        self.retransmit_bytes = 0;
        let mut overflow = Vec::new();
        for mut pkt in unacked {
            if self.next_seq.wrapping_sub(self.isn) < EPOCH_BLOCK {
                // A new number is a new packet as far as ACKs go: answers to the old
                // one cannot be taken for its own.
                (pkt.sends, pkt.echoes) = (0, 0);
                pkt.seq = self.next_seq;
                self.next_seq = self.next_seq.wrapping_add(1);
                self.retransmit_bytes += u64::from(pkt.len);
                self.stats.renumbered += 1;
                self.retransmit.push_back(pkt);
            } else {
                overflow.push((pkt.len, pkt.payload));
            }
        }
        for (len, payload) in overflow.into_iter().rev() {
            self.send_bytes += u64::from(len);
            self.send_queue.push_front((len, payload));
            // Renumbered packets go first of all; the ahead lane follows them.
            self.ahead = 0;
        }
        if self.backlog() > 0 && !self.can_send_data() {
            self.rts_pending = true;
        }
    }

    fn wants_service(&self) -> bool {
        self.rts_pending || self.can_send_data()
    }

    /// Has backlog it cannot pay for and nothing in flight whose ACK or NACK could
    /// bring credit: only a PULL or the credit-loss timer can unblock it.
    fn stalled(&self) -> bool {
        self.backlog() > 0
            && !self.can_send_data()
            && self.in_flight.is_empty()
            && !self.rts_pending
    }

    /// The pull target to advertise now; see the module doc for why the window caps
    /// the backlog rather than the difference, and for the lookahead.
    fn pull_target(&self, cfg: &SenderConfig) -> u32 {
        let lookahead = self.in_flight_bytes.min(u64::from(cfg.demand_lookahead));
        let demand = (self.backlog() + lookahead).min(u64::from(self.window));
        let wanted = demand as i64 - self.credit;
        let pulls = if wanted > 0 {
            (wanted as u64).div_ceil(u64::from(cfg.mtu))
        } else {
            0
        };
        // `pulls` <= W/MTU + 1, far below 2^31, so the cast cannot truncate.
        let target = self.highest_pull.wrapping_add(pulls as u32);
        // Never below a target already sent: the receiver keeps the highest it has
        // seen, so a lower one would leave PULLs owed that the restart test (every
        // PULL asked for has arrived) does not know of. The backlog term alone never
        // lowers the target; the lookahead does when ACKs shrink what is in flight.
        if seq_lt(target, self.last_target) {
            self.last_target
        } else {
            target
        }
    }

    fn snapshot(&self, min_rto: Time) -> TunnelStats {
        TunnelStats {
            srtt: self.rtt.srtt().unwrap_or(0),
            rto: self.rtt.rto(min_rto),
            credit: self.credit,
            highest_pull: self.highest_pull,
            last_pull_target: self.last_target,
            send_queue_bytes: self.send_bytes,
            retransmit_bytes: self.retransmit_bytes,
            in_flight_bytes: self.in_flight_bytes,
            in_flight_packets: self.in_flight.len(),
            busy_until: self.busy_until,
            stray_packets: self.strays.len(),
            ..self.stats
        }
    }
}

/// One sending EQIF: a tunnel per destination, credit-driven transmission, and loss
/// recovery. See the module documentation.
///
/// `P` is the caller's packet handle (a slab index in the simulator, a buffer in the
/// daemon). It is cloned once per transmission, since the sender keeps the packet
/// until it is ACKed: use a cheap handle.
#[derive(Debug)]
pub struct Sender<P> {
    config: SenderConfig,
    /// Tunnels, indexed by position; never removed (teardown belongs to the tunnel
    /// state machines).
    tunnels: Vec<Tunnel<P>>,
    /// Position of each destination's tunnel (Fx hashing: see `Receiver::index`).
    index: FxHashMap<PeerId, usize>,
    /// Tunnels that can send now (credit for their next packet, or an RTS due),
    /// served round robin one packet per turn (Q12).
    ready: VecDeque<usize>,
    /// ACKed packets, handed back by [`Sender::poll_acked`].
    acked: VecDeque<Acked<P>>,
    rng: SplitMix64,
    /// Control packets ignored: wrong sender id or unknown source.
    ignored_control: u64,
    /// RST packets received (handled by the tunnel state machines, not here).
    rst_received: u64,
    /// Charged bytes sent and not yet ACKed, NACKed or timed out, over all tunnels.
    in_flight_total: u64,
    /// The most `in_flight_total` has been.
    in_flight_peak: u64,
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
        Self {
            config,
            tunnels: Vec::new(),
            index: FxHashMap::default(),
            ready: VecDeque::new(),
            acked: VecDeque::new(),
            rng,
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
        let Some(&idx) = self.index.get(&dst) else {
            return Vec::new();
        };
        let mut fresh = Tunnel::new(dst, 0, &self.config, TxTunnel::new());
        let t = &mut self.tunnels[idx];
        // Keep the ready-list membership bit: the index may still be on the list.
        fresh.ready = t.ready;
        fresh.pull_unsynced = true;
        fresh.counted_in_flight = t.counted_in_flight;
        fresh.window = t.window;
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
        t.credit = t.credit.min(i64::from(window));
    }

    /// The index of the tunnel to `dst`, created CLOSED if there is none.
    fn tunnel_index(&mut self, dst: PeerId) -> usize {
        *self.index.entry(dst).or_insert_with(|| {
            self.tunnels
                .push(Tunnel::new(dst, 0, &self.config, TxTunnel::new()));
            self.tunnels.len() - 1
        })
    }

    /// The credit window of the tunnel to `dst` in bytes (the configured one for a
    /// destination without a tunnel).
    pub fn window(&self, dst: PeerId) -> u32 {
        self.index
            .get(&dst)
            .map_or(self.config.window, |&i| self.tunnels[i].window)
    }

    /// The state of the tunnel to `dst`, if one exists.
    pub fn tunnel_state(&self, dst: PeerId) -> Option<TxState> {
        self.index.get(&dst).map(|&i| self.tunnels[i].fsm.state())
    }

    /// Queues an inner packet of `len` bytes for `dst`, creating the tunnel if needed.
    /// A CLOSED tunnel starts an epoch (item 33).
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
                // stale (Q6) unless the tunnel went quiet less than a round trip ago
                // and the receiver is not busy: then it is what the last PULLs (or
                // the lookahead) granted for data like this, and spending it saves
                // the RTS's round trip. A busy receiver gets an RTS whatever is held,
                // so leftover NDP credit is never burst into it.
                let free = cfg.first_rtt_credit(t.window);
                let idle = now >= t.busy_until;
                let srtt = t.rtt.srtt().unwrap_or(0);
                let warm = idle && now.saturating_sub(t.quiet_since) <= srtt;
                if free >= charged && idle {
                    t.credit = i64::from(free);
                    t.stats.free_credit_bytes += u64::from(free);
                    t.stats.bursts += 1;
                } else if warm && t.credit >= i64::from(charged) {
                    t.stats.warm_restarts += 1;
                } else {
                    t.credit = 0;
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
        let Some(&idx) = self
            .index
            .get(&src)
            .filter(|_| header.sender_id == self.config.sender_id)
        else {
            self.ignored_control += 1;
            return;
        };
        let cfg = &self.config;
        let t = &mut self.tunnels[idx];
        t.quiet_since = now;
        t.busy_until = now + Time::from(header.busy_time_ns) * PS_PER_NS;

        if t.pull_unsynced {
            // Re-created by `drop_tunnel`: the receiver's count goes on from where it
            // was; take it as the baseline.
            t.pull_unsynced = false;
            t.highest_pull = header.pull_no;
            // Targets sent before this counted from our own zero; the receiver saw
            // them as behind its count. Nothing is owed beyond it.
            t.last_target = header.pull_no;
        }
        // Every control type carries the cumulative pull number (Q3).
        let gained = seq_diff(header.pull_no, t.highest_pull);
        if gained > 0 {
            t.highest_pull = header.pull_no;
            let window = i64::from(t.window);
            let credit = t.credit + i64::from(gained) * i64::from(cfg.mtu);
            if credit > window {
                t.stats.credit_clamped_bytes += (credit - window) as u64;
            }
            t.credit = credit.min(window);
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
                    free_where(t, &mut self.acked, now, |seq| {
                        seq_le(isn, seq) && seq_le(seq, ack)
                    });
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
        let Some(&idx) = self.index.get(&dst) else {
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
        self.index
            .get(&dst)
            .map_or(0, |&i| self.tunnels[i].send_bytes)
    }

    /// Packets waiting in the send queue of the tunnel to `dst` (0 if there is no
    /// tunnel): how much room a writer blocked by backpressure has.
    pub fn send_queue_len(&self, dst: PeerId) -> usize {
        self.index
            .get(&dst)
            .map_or(0, |&i| self.tunnels[i].send_queue.len())
    }

    /// The next packet to send, if any tunnel can send one now.
    ///
    /// Tunnels take turns, one packet per turn (Q12). Within a tunnel an RTS goes
    /// first (it unlocks credit and costs none), then retransmissions, then new data
    /// (item 25).
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
                    .then(|| t.quiet_since + self.config.credit_loss_timeout);
                [rto, stall]
            })
            .flatten()
            .min()
    }

    /// Runs the timers due at `now`: expired packets move to the retransmit queue
    /// (item 26) and stalled tunnels schedule an RTS (item 27).
    pub fn handle_timeout(&mut self, now: Time) {
        for idx in 0..self.tunnels.len() {
            let cfg = &self.config;
            let t = &mut self.tunnels[idx];
            let rto = t.rtt.rto(cfg.rto);
            while t.in_flight.front().is_some_and(|p| p.sent_at + rto <= now) {
                let pkt = t.in_flight.pop_front().expect("front exists");
                t.stats.rto_expiries += 1;
                t.path_failed(pkt.path_id, now, cfg.path_avoidance, |p| p.timed_out += 1);
                move_to_retransmit(t, pkt);
            }
            t.expire_strays(now, rto);
            if t.stalled() && t.quiet_since + cfg.credit_loss_timeout <= now {
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

fn send_rts<P>(
    t: &mut Tunnel<P>,
    cfg: &SenderConfig,
    rng: &mut SplitMix64,
    now: Time,
) -> Transmit<P> {
    t.rts_pending = false;
    t.last_target = t.pull_target(cfg);
    t.quiet_since = now;
    t.stats.rts_sent += 1;
    let syn = t.fsm.syn();
    // The next seq, consuming none (Q5); with SYN it must stay in the epoch's block.
    let seq = if t.block_full() {
        t.isn.wrapping_add(EPOCH_BLOCK - 1)
    } else {
        t.next_seq
    };
    Transmit {
        dst: t.peer,
        header: DataHeader {
            kind: DataKind::Rts,
            syn,
            trimmed: false,
            unordered: false,
            next_proto: NextProto::None,
            seq,
            pull_target: t.last_target,
            path_id: t.paths.next(rng, now),
            sender_id: cfg.sender_id,
        },
        payload: None,
        wire_len: cfg.overhead,
    }
}

/// Sends the head packet, which the caller checked is paid for.
fn send_data<P: Clone>(
    t: &mut Tunnel<P>,
    cfg: &SenderConfig,
    rng: &mut SplitMix64,
    now: Time,
) -> Transmit<P> {
    let (seq, len, sends, echoes, payload) = if let Some(pkt) = t.retransmit.pop_front() {
        t.retransmit_bytes -= u64::from(pkt.len);
        t.stats.retransmits += 1;
        let sends = pkt.sends.saturating_add(1);
        (pkt.seq, pkt.len, sends, pkt.echoes, pkt.payload)
    } else {
        let (len, payload) = t.send_queue.pop_front().expect("caller checked a head");
        t.ahead = t.ahead.saturating_sub(1);
        t.send_bytes -= u64::from(len);
        let seq = t.next_seq;
        t.next_seq = seq.wrapping_add(1);
        (seq, len, 1, 0, payload)
    };
    t.credit -= i64::from(len);
    t.stats.bytes_sent += u64::from(len);
    t.quiet_since = now;
    let path_id = t.paths.next(rng, now);
    if let Some(path) = t.path_stats.get_mut(path_id) {
        path.sent += 1;
    }
    t.in_flight.push_back(Sent {
        seq,
        len,
        path_id,
        sent_at: now,
        sends,
        echoes,
        payload: payload.clone(),
    });
    t.in_flight_bytes += u64::from(len);
    // Computed after the packet left the backlog and the credit, so the target says
    // what is wanted beyond this packet (and after it joined the bytes in flight,
    // which bound the lookahead).
    t.last_target = t.pull_target(cfg);
    Transmit {
        dst: t.peer,
        header: DataHeader {
            kind: DataKind::Data,
            syn: t.fsm.syn(),
            trimmed: false,
            unordered: false,
            next_proto: cfg.next_proto,
            seq,
            pull_target: t.last_target,
            path_id,
            sender_id: cfg.sender_id,
        },
        payload: Some(payload),
        wire_len: len,
    }
}

/// Queues a packet for resending, lowest sequence number first: the receiver's
/// reorder queue holds everything behind the earliest hole, so that hole is the one
/// to fill first. In an incast a tunnel may wait many PULL intervals per resend, and
/// resending in the order losses were noticed could leave its first hole open past
/// the receiver's hole timeout.
fn move_to_retransmit<P>(t: &mut Tunnel<P>, pkt: Sent<P>) {
    t.in_flight_bytes -= u64::from(pkt.len);
    t.retransmit_bytes += u64::from(pkt.len);
    let at = t
        .retransmit
        .iter()
        .rposition(|p| seq_lt(p.seq, pkt.seq))
        .map_or(0, |i| i + 1);
    t.retransmit.insert(at, pkt);
}

/// Frees every in-flight or queued-for-resend packet whose seq matches: an ACK for a
/// packet already moved to the retransmit queue (late ACK after an RTO) still frees
/// it, saving the resend.
fn free_where<P>(
    t: &mut Tunnel<P>,
    acked: &mut VecDeque<Acked<P>>,
    now: Time,
    matches: impl Fn(u32) -> bool,
) {
    let mut i = 0;
    while i < t.in_flight.len() {
        if matches(t.in_flight[i].seq) {
            release(t, Held::InFlight, i, acked, now);
        } else {
            i += 1;
        }
    }
    let mut i = 0;
    while i < t.retransmit.len() {
        if matches(t.retransmit[i].seq) {
            release(t, Held::Retransmit, i, acked, now);
        } else {
            i += 1;
        }
    }
}

/// Frees the one packet with sequence number `seq` (a selective ACK): [`free_where`]
/// for a single match, stopping at it. A seq is in flight or queued for resend at most
/// once, and an ACK usually names one of the oldest packets in flight.
fn free_one<P>(t: &mut Tunnel<P>, acked: &mut VecDeque<Acked<P>>, now: Time, seq: u32) {
    if let Some(i) = t.in_flight.iter().position(|p| p.seq == seq) {
        release(t, Held::InFlight, i, acked, now);
    } else if let Some(i) = t.retransmit.iter().position(|p| p.seq == seq) {
        release(t, Held::Retransmit, i, acked, now);
    } else {
        t.stray_answered(seq);
    }
}

/// Where an unacknowledged packet waits.
#[derive(Clone, Copy)]
enum Held {
    InFlight,
    /// Queued for resend.
    Retransmit,
}

/// Removes packet `i` of the `held` queue as acknowledged. An in-flight packet sent
/// exactly once gives an RTT sample (Karn's rule); one awaiting resend gives none.
/// Copies of it still on their way stay counted as a stray.
fn release<P>(t: &mut Tunnel<P>, held: Held, i: usize, acked: &mut VecDeque<Acked<P>>, now: Time) {
    let (pkt, rtt) = match held {
        Held::InFlight => {
            let pkt = t.in_flight.remove(i).expect("index is in range");
            t.in_flight_bytes -= u64::from(pkt.len);
            let rtt = (pkt.sends == 1).then(|| now.saturating_sub(pkt.sent_at));
            if let Some(sample) = rtt {
                t.rtt.sample(sample);
                t.newest_delivered_send = t.newest_delivered_send.max(Some(pkt.sent_at));
            }
            (pkt, rtt)
        }
        Held::Retransmit => {
            let pkt = t.retransmit.remove(i).expect("index is in range");
            t.retransmit_bytes -= u64::from(pkt.len);
            (pkt, None)
        }
    };
    if let Some(path) = t.path_stats.get_mut(pkt.path_id) {
        path.acked += 1;
        if let Some(sample) = rtt {
            path.sample(sample);
        }
    }
    let copies = pkt.copies_left_after_echo(now, t.rtt.min_rtt());
    if copies > 0 {
        t.strays.push(Stray {
            seq: pkt.seq,
            copies,
            sent_at: pkt.sent_at,
        });
    }
    acked.push_back(Acked {
        dst: t.peer,
        payload: pkt.payload,
        path_id: pkt.path_id,
        rtt,
    });
}

#[cfg(test)]
mod tests;
