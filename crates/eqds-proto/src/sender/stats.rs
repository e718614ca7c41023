//! [`TunnelStats`], the read-only snapshot of one tunnel that `Sender::tunnel` and
//! `Sender::tunnels` hand out for metrics and tests. A tunnel keeps its counters
//! (bursts, RTS sent, retransmissions, epochs, ...) in one as it runs.

use crate::time::Time;

/// A read-only snapshot of one tunnel, for metrics and tests.
///
/// Fields are kept in this order (`repr(C)`): the two counters that a tunnel bumps on
/// nearly every packet first, so that within the tunnel (which keeps one of these as
/// its counters) they share a line with its other hot fields; see `Tunnel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct TunnelStats {
    /// Charged bytes of DATA sent, retransmissions included.
    pub bytes_sent: u64,
    /// PULLs credited: the sum of every rise of the pull number that became credit
    /// (rebases excluded). Bytes sent never exceed these MTUs plus the free credit.
    pub pulls_credited: u64,
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
    /// Until when the receiver said its link stays saturated (§5's busy time).
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
    /// asking with an RTS (our grace period, see `sender.rs`).
    pub warm_restarts: u64,
    /// Idle restarts of a small packet paid for by stale credit of at most one MTU
    /// (`SenderConfig::thin_stream_credit`) instead of an RTS.
    pub thin_restarts: u64,
    /// RTS packets sent (starts in RTS mode, busy-time rule, credit-loss recovery).
    pub rts_sent: u64,
    /// Credit-loss recoveries started (see `sender.rs`, "Loss recovery").
    pub credit_loss_rts: u64,
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
    /// Times the tunnel took a control packet's pull number as a new baseline
    /// rather than as credit: the receiver's count was not the one this tunnel
    /// followed (a restarted receiver, or a receiver still counting for a tunnel
    /// this sender forgot). See `Tunnel::hear_pull_number`.
    pub pull_rebases: u64,
    /// Pull numbers ignored as a restarted receiver's previous incarnation's, still
    /// in flight when the tunnel moved to the new count.
    pub stale_pulls: u64,
    /// Epochs started (the first one included).
    pub epochs: u64,
    /// Packets renumbered into a new epoch by a re-establishment.
    pub renumbered: u64,
    /// RSTs ignored because they answer a packet of an earlier epoch.
    pub stale_rsts: u64,
    /// Trimmed headers a switch returned to us (see
    /// [`Sender::handle_returned`](super::Sender::handle_returned)).
    pub returned: u64,
    /// ACKed packets with a resent copy still on its way (see `Stray`).
    pub stray_packets: usize,
}
