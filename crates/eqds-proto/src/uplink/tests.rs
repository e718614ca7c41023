//! Unit tests of the uplink: EQIFs taking turns by weight and priority, and control
//! packets finding their EQIF by sender id.

use super::*;
use crate::sender::Mode;
use crate::wire::{ControlKind, NextProto};

const MTU: u32 = 1000;
const OVERHEAD: u32 = 100;
const FULL: u32 = MTU - OVERHEAD;

fn config(sender_id: u16) -> SenderConfig {
    SenderConfig {
        mode: Mode::Ndp,
        mtu: MTU,
        overhead: OVERHEAD,
        // Room for a long burst, so that the turns, not the credit, decide the order.
        window: 64 * MTU,
        initial_window: None,
        demand_lookahead: 0,
        send_queue_packets: 1000,
        send_queue_bytes: u64::MAX,
        rto: 1_000_000_000,
        credit_loss_timeout: 1_000_000_000,
        paths: 1,
        sender_id,
        next_proto: NextProto::Ipv4,
        seed: u64::from(sender_id),
        path_stats: false,
        path_avoidance: 0,
        loss_reorder_window: 0,
        ecn: None,
        thin_stream_credit: false,
    }
}

/// An uplink of EQIFs with sender ids 1, 2, ... and the given shares, each with
/// `backlog` full packets queued for peer 10 (payload: the EQIF's index).
fn uplink(shares: &[Share], backlog: u32) -> Uplink<usize> {
    let mut up = Uplink::new(config(1), shares[0]);
    for (i, &share) in shares.iter().enumerate() {
        let idx = if i == 0 {
            0
        } else {
            up.add(config(i as u16 + 1), share)
        };
        for _ in 0..backlog {
            up.eqif_mut(idx).enqueue(0, 10, FULL, idx).unwrap();
        }
    }
    up
}

fn weight(weight: u32) -> Share {
    Share {
        weight,
        priority: 0,
    }
}

/// Which EQIF each of the next `n` packets comes from.
fn order(up: &mut Uplink<usize>, n: usize) -> Vec<EqifIndex> {
    (0..n)
        .map(|_| {
            let (i, tx) = up.poll_transmit(0).expect("a packet to send");
            assert_eq!(tx.payload, Some(i), "the packet is from the EQIF named");
            i
        })
        .collect()
}

#[test]
fn equal_weights_alternate() {
    let mut up = uplink(&[weight(1), weight(1)], 20);
    assert_eq!(order(&mut up, 6), [0, 1, 0, 1, 0, 1]);
}

#[test]
fn weights_set_the_share_of_full_packets() {
    let mut up = uplink(&[weight(3), weight(1)], 60);
    let sent = order(&mut up, 40);
    assert_eq!(sent[..8], [0, 0, 0, 1, 0, 0, 0, 1]);
    assert_eq!(sent.iter().filter(|&&i| i == 0).count(), 30);
}

#[test]
fn an_eqif_with_nothing_to_send_leaves_the_link_to_the_others() {
    let mut up = uplink(&[weight(1), weight(1)], 0);
    for _ in 0..5 {
        up.eqif_mut(1).enqueue(0, 10, FULL, 1).unwrap();
    }
    assert_eq!(order(&mut up, 5), [1; 5]);
    assert!(up.poll_transmit(0).is_none());
}

#[test]
fn a_more_urgent_eqif_goes_first_until_its_credit_runs_out() {
    let urgent = Share {
        weight: 1,
        priority: 0,
    };
    let background = Share {
        weight: 1,
        priority: 1,
    };
    // The background EQIF is added first: the order of the round does not matter.
    let mut up = uplink(&[background, urgent], 100);
    // The urgent EQIF's NDP burst is its window, 64 packets; then it waits for PULLs.
    let sent = order(&mut up, 80);
    assert!(sent[..64].iter().all(|&i| i == 1));
    assert!(sent[64..].iter().all(|&i| i == 0));
}

#[test]
fn small_packets_take_a_turn_of_the_same_bytes() {
    let mut up = Uplink::new(config(1), weight(1));
    up.add(config(2), weight(1));
    for _ in 0..30 {
        // 250 bytes charged: four per full-packet quantum.
        up.eqif_mut(0).enqueue(0, 10, 150, 0).unwrap();
        up.eqif_mut(1).enqueue(0, 10, FULL, 1).unwrap();
    }
    assert_eq!(order(&mut up, 10), [0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
}

fn pull(sender_id: u16, pull_no: u32) -> ControlHeader {
    ControlHeader {
        kind: ControlKind::Pull,
        syn: false,
        cumulative: false,
        sender_id,
        ack_no: 0,
        pull_no,
        busy_time_ns: 0,
    }
}

#[test]
fn control_packets_reach_the_eqif_their_sender_id_names() {
    let mut up = uplink(&[weight(1), weight(1)], 100);
    // Spend both bursts.
    while up.poll_transmit(0).is_some() {}
    // Three PULLs for sender id 2 (EQIF 1), none for EQIF 0.
    up.handle_control(1, 10, &pull(2, 3));
    assert_eq!(order(&mut up, 3), [1, 1, 1]);
    assert!(up.poll_transmit(1).is_none());
    // An id no EQIF has is counted and changes nothing.
    up.handle_control(1, 10, &pull(9, 50));
    assert!(up.poll_transmit(1).is_none());
    assert_eq!(up.ignored_control(), 1);
    // A known id from an unknown source is ignored by its EQIF, and counted too.
    up.handle_control(1, 11, &pull(1, 50));
    assert_eq!(up.ignored_control(), 2);
}

#[test]
fn acks_come_back_from_the_eqif_that_sent_the_packet() {
    let mut up = uplink(&[weight(1), weight(1)], 1);
    let mut seqs = [0; 2];
    while let Some((i, tx)) = up.poll_transmit(0) {
        seqs[i] = tx.header.seq;
    }
    let mut ack = pull(2, 0);
    ack.kind = ControlKind::Ack;
    ack.ack_no = seqs[1];
    up.handle_control(5, 10, &ack);
    let (i, acked) = up.poll_acked().expect("EQIF 1's packet was ACKed");
    assert_eq!((i, acked.payload), (1, 1));
    assert!(up.poll_acked().is_none());
    assert_eq!(up.in_flight_bytes(), u64::from(MTU));
    assert_eq!(up.peak_in_flight_bytes(), 2 * u64::from(MTU));
}

#[test]
fn a_returned_header_goes_back_to_its_eqif() {
    let mut up = uplink(&[weight(1), weight(1)], 1);
    let mut sent = Vec::new();
    while let Some((i, tx)) = up.poll_transmit(0) {
        sent.push((i, tx.header));
    }
    let (i, header) = sent[1];
    up.handle_returned(1, 10, &header);
    assert_eq!(up.eqif(i).tunnel(10).unwrap().returned, 1);
    assert_eq!(up.eqif(1 - i).tunnel(10).unwrap().returned, 0);
    // Resent at once, ahead of anything else.
    let (again, tx) = up.poll_transmit(1).unwrap();
    assert_eq!((again, tx.header.seq), (i, header.seq));
}

#[test]
fn one_eqif_behaves_as_the_sender_alone() {
    let mut up = Uplink::single(config(1));
    let mut alone = Sender::new(config(1));
    for n in 0..100 {
        up.eqif_mut(0).enqueue(0, 10 + n % 3, FULL, 0).unwrap();
        alone.enqueue(0, 10 + n % 3, FULL, 0).unwrap();
    }
    let a: Vec<_> = std::iter::from_fn(|| up.poll_transmit(0).map(|(_, t)| t)).collect();
    let b: Vec<_> = std::iter::from_fn(|| alone.poll_transmit(0)).collect();
    assert_eq!(a, b);
    assert_eq!(up.peak_in_flight_bytes(), alone.peak_in_flight_bytes());
}

#[test]
#[should_panic(expected = "sender id 1 is taken")]
fn two_eqifs_cannot_share_a_sender_id() {
    let mut up: Uplink<usize> = Uplink::single(config(1));
    up.add(config(1), Share::default());
}

#[test]
#[should_panic(expected = "weight must be at least 1")]
fn a_weight_of_zero_is_refused() {
    let mut up: Uplink<usize> = Uplink::single(config(1));
    up.add(config(2), weight(0));
}
