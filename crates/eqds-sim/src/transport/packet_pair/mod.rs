//! Packet-pair flow control as the AFQ paper adapts it to fair-queueing switches
//! (Sharma et al., NSDI 2018, §5 and Appendix A; digest `spec/afq.md` §1.7; Keshav's
//! packet-pair, SIGCOMM 1991).
//!
//! Behind a fair queue a flow's share shows in the spacing of two packets sent back
//! to back: the queue serves one packet of every other backlogged flow between them.
//! So:
//!
//! - a flow starts with one pair at line rate and waits for its ACKs;
//! - the receiver measures the pair's arrival gap and returns it on the ACK of the
//!   pair's second packet (no reverse-path noise); the sample is the second packet's
//!   wire size over the gap;
//! - the sender keeps an EWMA of the samples over about one base round trip
//!   (`control.rs`) and from the first on sends pairs, back to back at line rate,
//!   pair after pair paced at its rate (digest §4 question 11: pairs spaced by the
//!   two packets' wire bytes at the rate);
//! - a rate change is made up for (§5: "skipped … injected, proportional to the
//!   rate"): by (new − old) × base RTT bytes, sent at once when positive, held back
//!   from the next pair when negative;
//! - the rate is estimate × (1 − α/2), α DCTCP's running fraction of marked bytes,
//!   marked by AFQ's per-flow rule (8 rounds ahead) at the switches;
//! - bytes in flight stay under 1.5 × estimate × base RTT (as BBR bounds its
//!   flight), so when new flows arrive the old ones stop at once;
//! - reliability is TCP's (the paper's "standard TCP sequencing, fast retransmit and
//!   recovery"): byte sequence numbers, cumulative ACKs, NewReno fast retransmit on
//!   three duplicates, and a retransmission timeout (RFC 6298, minimum 200 µs as in
//!   the paper's simulations, §6.2) after which the flow goes back to the first
//!   unacknowledged byte and starts again with one pair.
//!
//! Where the paper leaves a choice the digest's default is taken (question 10: α's
//! gain 1/16, an EWMA over the last base round trip, skip and inject of the rate
//! change times the base RTT); `docs/afq.md` lists them with the others.
//!
//! On the wire: a data packet of a pair carries its tag in `Packet::ack`, which data
//! does not otherwise use: `pair << 1 | second`, `pair` counted from 1, so 0 marks a
//! packet outside any pair (injected packets, retransmissions in recovery, a flow's
//! lone last packet). An ACK carries the cumulative ACK in `ack`, the triggering
//! packet's send time in `timestamp`, its payload in `payload` and, if CE-marked,
//! again in `ce_bytes`, and the pair gap in picoseconds in `seq` (0: not the second
//! of a pair whose first arrived just before it).

mod control;
mod receiver;
mod sender;
#[cfg(test)]
mod tests;

pub use control::RateControl;
pub use receiver::PacketPairReceiver;
pub use sender::PacketPairSender;

use crate::units::{Time, MS, US};

/// Per-flow packet-pair parameters, resolved from `[transport]` and
/// `[transport.packet_pair]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PacketPairConfig {
    /// Payload bytes in a full packet.
    pub mss: u32,
    /// Header bytes on every packet; an ACK is exactly this big.
    pub header: u32,
    /// Smallest retransmission timeout (§6.2: 200 µs "for all schemes").
    pub min_rto: Time,
    /// Timeout before the first round-trip sample.
    pub initial_rto: Time,
    /// Largest timeout after back-off.
    pub max_rto: Time,
    /// Duplicate ACKs that start fast retransmit (RFC 5681: 3).
    pub dupack_threshold: u32,
    /// Time constant of the bandwidth EWMA, in base round trips (§5: "a running
    /// EWMA of bandwidth estimates in the last RTT"; digest question 10: 1).
    pub ewma_rtts: f64,
    /// α's gain g (digest question 10: 1/16, DCTCP's).
    pub alpha_gain: f64,
    /// The in-flight cap in bandwidth-delay products (§5: 1.5).
    pub inflight_bdp: f64,
    /// Make up for rate changes by skipping or injecting (§5).
    pub skip_inject: bool,
    /// Send data ECN-capable and slow down by α/2 (§5).
    pub ecn: bool,
    /// The switches' bytes per round, if above two packets: then the first pair's
    /// packets leave `bytes_per_round − mss` bytes of line-rate time apart, so that
    /// they fall in different rounds (§5, "Robust bandwidth estimation"); 0 (the
    /// paper's BpR of one MSS) sends them back to back.
    pub bytes_per_round: u32,
    /// Priority class of the flow's packets.
    pub class: u8,
}

impl Default for PacketPairConfig {
    /// The paper's simulation settings (§5, §6.2) with 1500 B packets.
    fn default() -> Self {
        PacketPairConfig {
            mss: 1436,
            header: 64,
            min_rto: 200 * US,
            initial_rto: MS,
            max_rto: 60_000 * MS,
            dupack_threshold: 3,
            ewma_rtts: 1.0,
            alpha_gain: 1.0 / 16.0,
            inflight_bdp: 1.5,
            skip_inject: true,
            ecn: true,
            bytes_per_round: 0,
            class: 0,
        }
    }
}

impl PacketPairConfig {
    /// A full packet's bytes on the wire.
    pub fn wire(&self) -> u32 {
        self.mss + self.header
    }
}

/// `Packet::ack` of packet `second` (0 or 1) of pair `pair` (from 1).
pub fn pair_tag(pair: u64, second: bool) -> u64 {
    pair << 1 | u64::from(second)
}
