//! ACKs: freeing a tunnel's acknowledged packets, in flight or queued for resend, and
//! handing their payloads back as [`Acked`], with an RTT sample when a packet was sent
//! once (Karn's rule) and a stray for copies of it still on their way.

use std::collections::VecDeque;

use super::tunnel::{Stray, Tunnel};
use super::Acked;
use crate::time::Time;
use crate::wire::{seq_le, seq_lt};

/// Frees every in-flight or queued-for-resend packet numbered from `first` to `last`
/// (serially; a cumulative ACK): an ACK for a packet already moved to the retransmit
/// queue (late ACK after an RTO) still frees it, saving the resend.
///
/// Packets in flight that were sent once are in sequence order (`Tunnel::in_flight`),
/// so past the first of them numbered beyond `last` only those sent again can match,
/// and once every one of those has been seen the scan stops: an ACK then reads the
/// front of the queue, not the whole window.
pub(super) fn free_range<P>(
    t: &mut Tunnel<P>,
    acked: &mut VecDeque<Acked<P>>,
    now: Time,
    first: u32,
    last: u32,
) {
    debug_assert!(sent_once_in_order(t));
    let matches = |seq| seq_le(first, seq) && seq_le(seq, last);
    let mut resent_unseen = t.resent_in_flight;
    let mut i = 0;
    while i < t.in_flight.len() {
        let (seq, resent) = (t.in_flight[i].seq, t.in_flight[i].sends > 1);
        if matches(seq) {
            release(t, Held::InFlight, i, acked, now);
        } else if !resent && resent_unseen == 0 && seq_lt(last, seq) {
            break;
        } else {
            i += 1;
        }
        resent_unseen -= usize::from(resent);
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

/// Whether the packets in flight sent once are in sequence order, and
/// `resent_in_flight` counts the others (checked in debug builds).
fn sent_once_in_order<P>(t: &Tunnel<P>) -> bool {
    let once = t.in_flight.iter().filter(|p| p.sends == 1);
    let in_order = once
        .clone()
        .zip(once.skip(1))
        .all(|(a, b)| seq_lt(a.seq, b.seq));
    let resent = t.in_flight.iter().filter(|p| p.sends > 1).count();
    in_order && resent == t.resent_in_flight
}

/// Frees the one packet with sequence number `seq` (a selective ACK): [`free_range`]
/// for a single match, stopping at it. A seq is in flight or queued for resend at most
/// once, and an ACK usually names one of the oldest packets in flight.
pub(super) fn free_one<P>(t: &mut Tunnel<P>, acked: &mut VecDeque<Acked<P>>, now: Time, seq: u32) {
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
            t.landed(&pkt);
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
