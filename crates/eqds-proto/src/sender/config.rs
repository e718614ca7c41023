//! How a sending EQIF is set up: the first-RTT [`Mode`] of a (re)starting tunnel
//! (paper §4.1 and §5) and the [`SenderConfig`] all its tunnels share, with its defaults.

use super::ecn::Red;
use crate::time::{Time, PS_PER_MS};
use crate::wire::NextProto;

/// How a tunnel spends its first RTT after a (re)start (§4.1, §5).
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
    /// credit one PULL grants (§5). Default 1500.
    pub mtu: u32,
    /// Bytes charged per packet on top of the inner packet: by default 44, outer IPv4
    /// (20), UDP (8) and the EQDS header (16), since credit pays for what occupies
    /// the receiver's link (§5 does not say whether credit counts the encapsulation; we charge it). An RTS goes on the wire with exactly this length.
    pub overhead: u32,
    /// The per-tunnel credit window W in bytes, nominally one BDP. Default 50 MTUs,
    /// the paper's DPDK window (§8.5).
    pub window: u32,
    /// Bytes a new or idle tunnel sends before any credit arrives, when its receiver
    /// is not busy (§4.1, §5); the pull targets they carry ask for the rest.
    /// `None` lets the mode decide: NDP bursts one window, RTS sends nothing and asks
    /// first. `Some(n)` in RTS mode saves its round trip when the receiver is idle,
    /// at the risk of losing those `n` bytes in an incast on a network that does not
    /// trim. A value smaller than the first packet means ask first.
    pub initial_window: Option<u32>,
    /// Credit asked for beyond the backlog while packets are in flight, in bytes, at
    /// most the bytes in flight (see the `sender` module doc, "Lookahead"). Default 4
    /// MTUs. A writer whose queue empties between bursts (TCP's ACK clock, above all a
    /// stream of pure ACKs) then finds credit waiting instead of asking with an RTS
    /// each time; the price is up to this much credit granted and left unused when
    /// a stream stops. 0 asks for exactly the backlog.
    pub demand_lookahead: u32,
    /// Send-queue capacity per tunnel, in packets. Default 100, the paper's default
    /// TX buffering per destination (§8.5 and Appendix B).
    pub send_queue_packets: usize,
    /// Send-queue capacity per tunnel in charged bytes, on top of the packet limit.
    /// Default unlimited. A byte limit lets a burst of small packets (the TCP ACKs
    /// a receiver sends when its reorder queue releases a run of segments) through
    /// where a packet count sized for full packets would drop them.
    pub send_queue_bytes: u64,
    /// Minimum retransmit timeout per in-flight packet; each tunnel's timeout is
    /// `srtt + 4 rttvar` from its own samples when that is longer (`rtt.rs`; the paper gives no RTO for EQDS).
    /// Default 1 ms \[choice\]: the paper gives none; the top of the usual 100 µs to 1 ms minimum; trims make it a safety
    /// net, not the main loss signal.
    pub rto: Time,
    /// Quiet time after which a stalled tunnel (backlog, no usable credit, nothing in
    /// flight) sends an RTS (credit-loss recovery, see the `sender` module doc). Default 1 ms, one RTO.
    pub credit_loss_timeout: Time,
    /// Number of path ids sprayed over (our choice: P at least the number of equal-cost
    /// paths). Default 64. Must be at least 1.
    pub paths: u16,
    /// This EQIF's id, written into every header and expected back in control
    /// packets (our reading of Fig. 4's sender ID). Default 0.
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
    /// RED on each tunnel's send queue for ECN-capable packets
    /// ([`super::Sender::mark_ce`], §6). Default `None`: no marking.
    pub ecn: Option<Red>,
    /// Let a small packet (at most half an MTU) that restarts an idle tunnel spend
    /// up to one MTU of credit however stale, even into a busy receiver, one packet
    /// per restart (see the `sender` module doc, "Thin streams"). Default false:
    /// such a restart sends an RTS, as any other does.
    pub thin_stream_credit: bool,
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
            ecn: None,
            thin_stream_credit: false,
        }
    }
}
