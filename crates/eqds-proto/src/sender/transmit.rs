//! Putting a tunnel's next packet on the wire: an RTS that asks for credit and uses no
//! sequence number (our encoding), or a DATA packet, resent or new (§6), that spends
//! it. Both carry the tunnel's current pull target and a sprayed path id (§5).

use super::spray::SplitMix64;
use super::tunnel::{Sent, Tunnel};
use super::{SenderConfig, Transmit};
use crate::time::Time;
use crate::wire::{DataHeader, DataKind, NextProto, EPOCH_BLOCK};

pub(super) fn send_rts<P>(
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
    // The next seq, consuming none [choice]; with SYN it must stay in the epoch's block.
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
pub(super) fn send_data<P: Clone>(
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
    if sends > 1 {
        t.resent_in_flight += 1;
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
