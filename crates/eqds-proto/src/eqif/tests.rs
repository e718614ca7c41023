//! Unit tests of the receiving EQIF's glue: one tunnel transition per test.

use super::*;
use crate::wire::{DataKind, NextProto};

const SRC: PeerId = 3;

fn eqif() -> ReceivingEqif<u32> {
    ReceivingEqif::new(ReceivingEqifConfig::default())
}

fn data(seq: u32, syn: bool) -> DataHeader {
    DataHeader {
        kind: DataKind::Data,
        syn,
        trimmed: false,
        unordered: false,
        next_proto: NextProto::Ipv4,
        seq,
        pull_target: 0,
        path_id: 0,
        sender_id: 9,
    }
}

fn controls(rx: &mut ReceivingEqif<u32>) -> Vec<(ControlKind, u32, bool)> {
    std::iter::from_fn(|| rx.poll_control(0))
        .map(|(dst, h)| {
            assert_eq!((dst, h.sender_id), (SRC, 9));
            (h.kind, h.ack_no, h.syn)
        })
        .collect()
}

fn delivered(rx: &mut ReceivingEqif<u32>) -> Vec<(DeliveryKind, u32)> {
    std::iter::from_fn(|| rx.poll_deliver(0))
        .map(|d| (d.kind, d.payload))
        .collect()
}

#[test]
fn syn_establishes_and_every_answer_to_a_syn_carries_syn() {
    let mut rx = eqif();
    let isn = isn_for_epoch(40);
    // The second packet of the initial window arrives first.
    rx.handle_data(0, SRC, &data(isn + 1, true), 11, 100);
    assert_eq!(rx.tunnel_state(SRC), RxState::Established { epoch: 40 });
    assert!(
        delivered(&mut rx).is_empty(),
        "waits for the hole at the ISN"
    );
    rx.handle_data(0, SRC, &data(isn, true), 10, 100);
    assert_eq!(
        delivered(&mut rx),
        [
            (DeliveryKind::InOrder { seq: isn }, 10),
            (DeliveryKind::InOrder { seq: isn + 1 }, 11)
        ]
    );
    // Once the sender saw a SYN-ACK it drops SYN; those ACKs carry none.
    rx.handle_data(0, SRC, &data(isn + 2, false), 12, 100);
    assert_eq!(
        controls(&mut rx),
        [
            (ControlKind::Ack, isn + 1, true),
            (ControlKind::Ack, isn, true),
            (ControlKind::Ack, isn + 2, false)
        ]
    );
}

#[test]
fn data_without_syn_to_an_unknown_tunnel_gets_rst_and_is_not_delivered() {
    let mut rx = eqif();
    rx.handle_data(0, SRC, &data(5000, false), 1, 100);
    assert_eq!(controls(&mut rx), [(ControlKind::Rst, 5000, false)]);
    assert!(delivered(&mut rx).is_empty());
    assert_eq!(rx.tunnel_state(SRC), RxState::Closed);
    assert_eq!(rx.stats().rst_sent, 1);
}

#[test]
fn greater_epoch_releases_the_reorder_queue_out_of_order() {
    let mut rx = eqif();
    let old = isn_for_epoch(7);
    rx.handle_data(0, SRC, &data(old, true), 0, 100);
    // Held behind the hole at old + 1.
    rx.handle_data(0, SRC, &data(old + 3, false), 3, 100);
    rx.handle_data(0, SRC, &data(old + 2, false), 2, 100);
    assert_eq!(delivered(&mut rx).len(), 1);
    let new = isn_for_epoch(8);
    rx.handle_data(0, SRC, &data(new, true), 100, 100);
    assert_eq!(
        delivered(&mut rx),
        [
            (DeliveryKind::Released, 2),
            (DeliveryKind::Released, 3),
            (DeliveryKind::InOrder { seq: new }, 100)
        ]
    );
    assert_eq!(rx.tunnel_state(SRC), RxState::Established { epoch: 8 });
    assert_eq!(rx.stats().reestablished, 1);
}

#[test]
fn stale_syn_is_dropped_and_answered_with_the_current_epoch() {
    let mut rx = eqif();
    rx.handle_data(0, SRC, &data(isn_for_epoch(8), true), 0, 100);
    controls(&mut rx);
    delivered(&mut rx);
    rx.handle_data(0, SRC, &data(isn_for_epoch(7) + 4, true), 1, 100);
    assert!(delivered(&mut rx).is_empty());
    assert_eq!(
        controls(&mut rx),
        [(ControlKind::Nack, isn_for_epoch(8), true)]
    );
    assert_eq!(rx.tunnel_state(SRC), RxState::Established { epoch: 8 });
}

#[test]
fn duplicates_are_acked_not_delivered_and_unordered_bypasses() {
    let mut rx = eqif();
    let isn = isn_for_epoch(1);
    rx.handle_data(0, SRC, &data(isn, true), 0, 100);
    rx.handle_data(0, SRC, &data(isn, true), 0, 100);
    let mut h = data(isn + 2, false);
    h.unordered = true;
    rx.handle_data(0, SRC, &h, 2, 100);
    assert_eq!(
        delivered(&mut rx),
        [
            (DeliveryKind::InOrder { seq: isn }, 0),
            (DeliveryKind::Unordered { seq: isn + 2 }, 2)
        ]
    );
    assert_eq!(controls(&mut rx).len(), 3, "the duplicate is ACKed too");
    assert_eq!(rx.stats().duplicates, 1);
}

#[test]
fn trimmed_syn_header_gets_a_syn_nack_and_rts_a_plain_pull() {
    let mut rx = eqif();
    let isn = isn_for_epoch(2);
    let mut h = data(isn, true);
    h.trimmed = true;
    rx.handle_data(0, SRC, &h, 0, 0);
    h.kind = DataKind::Rts;
    h.trimmed = false;
    h.seq = isn + 1;
    rx.handle_data(0, SRC, &h, 0, 0);
    assert_eq!(
        controls(&mut rx),
        [
            (ControlKind::Nack, isn, true),
            (ControlKind::Pull, 0, false)
        ]
    );
    assert!(delivered(&mut rx).is_empty());
}

#[test]
fn drop_peer_hands_back_held_packets_and_forgets_the_epoch() {
    let mut rx = eqif();
    let isn = isn_for_epoch(5);
    rx.handle_data(0, SRC, &data(isn + 1, true), 1, 100);
    rx.handle_data(0, SRC, &data(isn + 2, true), 2, 100);
    assert_eq!(rx.drop_peer(SRC), [1, 2]);
    assert_eq!(rx.tunnel_state(SRC), RxState::Closed);
    assert_eq!(rx.stats().lost_on_drop, 2);
    controls(&mut rx);
    rx.handle_data(0, SRC, &data(isn + 3, false), 3, 100);
    assert_eq!(controls(&mut rx), [(ControlKind::Rst, isn + 3, false)]);
}

/// The id of a forgotten peer given to another host: nothing of the old one's
/// tunnel, reorder queue, undelivered packets, credit or queued answers remains.
#[test]
fn forget_peer_leaves_nothing_for_the_next_host_under_the_id() {
    const OTHER: PeerId = 4;
    let mut rx = eqif();
    let isn = isn_for_epoch(900);
    let wants = |seq, syn, pull_target| DataHeader {
        pull_target,
        ..data(seq, syn)
    };
    // Released in order but not yet polled, then held behind a hole.
    rx.handle_data(0, SRC, &wants(isn, true, 5), 1, 100);
    rx.handle_data(0, SRC, &wants(isn + 2, true, 6), 2, 100);
    rx.handle_data(0, OTHER, &wants(isn, true, 1), 7, 100);
    // Some PULLs go out, and every answer so far is polled.
    for _ in 0..3 {
        let at = rx.poll_timeout().unwrap();
        rx.handle_timeout(at);
    }
    while rx.poll_control(0).is_some() {}
    assert!(rx.credit().sender(SRC).unwrap().pulls_sent > 0);
    // One more answer for the old peer waits, and one for the other peer.
    rx.handle_data(0, SRC, &wants(isn + 3, true, 6), 3, 100);
    rx.handle_data(0, OTHER, &wants(isn + 1, true, 1), 8, 100);

    let mut lost = rx.forget_peer(SRC);
    lost.sort();
    assert_eq!(lost, [1, 2, 3]);
    assert_eq!(rx.stats().lost_on_drop, 3);
    assert_eq!(rx.tunnel_state(SRC), RxState::Closed);
    assert_eq!(rx.reorder_len(SRC), 0);
    assert_eq!(rx.credit().sender(SRC), None);
    assert_eq!(
        delivered(&mut rx),
        [
            (DeliveryKind::InOrder { seq: isn }, 7),
            (DeliveryKind::InOrder { seq: isn + 1 }, 8)
        ],
        "only the other peer's packets are left"
    );
    let left: Vec<PeerId> = std::iter::from_fn(|| rx.poll_control(0))
        .map(|(dst, _)| dst)
        .collect();
    assert_eq!(left, [OTHER], "the old peer's SYN-ACK is not sent");
    assert_eq!(rx.credit().busy_time_ns(), 0, "no PULL is owed to anyone");

    // A new host under the id, in an epoch the old tunnel would have taken for
    // stale: established afresh, and its answer carries pull number 0.
    let isn = isn_for_epoch(3);
    rx.handle_data(0, SRC, &data(isn, true), 9, 100);
    assert_eq!(rx.tunnel_state(SRC), RxState::Established { epoch: 3 });
    assert_eq!(
        delivered(&mut rx),
        [(DeliveryKind::InOrder { seq: isn }, 9)]
    );
    let (dst, h) = rx.poll_control(0).unwrap();
    assert_eq!(
        (dst, h.kind, h.syn, h.pull_no),
        (SRC, ControlKind::Ack, true, 0)
    );
    assert!(rx.forget_peer(PeerId::MAX).is_empty());
}

#[test]
fn close_peer_tells_the_sender() {
    let mut rx = eqif();
    rx.handle_data(0, SRC, &data(isn_for_epoch(5), true), 1, 100);
    controls(&mut rx);
    assert!(rx.close_peer(SRC).is_empty());
    let isn = isn_for_epoch(5);
    assert_eq!(controls(&mut rx), [(ControlKind::Rst, isn + 1, false)]);
}

#[test]
fn the_reorder_peak_counts_only_packets_waiting_behind_a_hole() {
    let mut rx = eqif();
    let isn = isn_for_epoch(7);
    // In order: each packet leaves at once, nothing waits.
    for i in 0..3 {
        rx.handle_data(0, SRC, &data(isn + i, i == 0), i, 100);
    }
    assert_eq!(rx.stats().peak_reorder_held, 0);
    // isn + 3 is missing: three packets wait behind it, then it fills the hole.
    for i in 4..7 {
        rx.handle_data(0, SRC, &data(isn + i, false), i, 100);
    }
    rx.handle_data(0, SRC, &data(isn + 3, false), 3, 100);
    assert_eq!(delivered(&mut rx).len(), 7);
    assert_eq!(rx.stats().peak_reorder_held, 3);
}

#[test]
fn hole_timeout_is_a_timer_of_the_eqif() {
    let mut rx = eqif();
    let isn = isn_for_epoch(5);
    rx.handle_data(10, SRC, &data(isn + 1, true), 1, 100);
    let at = rx.poll_timeout().unwrap();
    assert_eq!(at, 10 + ReorderConfig::default().hole_timeout);
    assert!(rx.poll_deliver(at - 1).is_none());
    assert_eq!(rx.stats().holes_skipped, 0);
    rx.handle_timeout(at);
    assert_eq!(rx.poll_deliver(at).unwrap().payload, 1);
    assert_eq!(rx.stats().holes_skipped, 1);
}

#[test]
fn every_payload_not_delivered_is_handed_back() {
    let mut rx = eqif();
    let isn = isn_for_epoch(5);
    rx.handle_data(0, SRC, &data(isn, true), 1, 100);
    // A trimmed header, an RTS and a duplicate carry payloads nobody will deliver.
    let trimmed = DataHeader {
        trimmed: true,
        ..data(isn + 1, true)
    };
    rx.handle_data(0, SRC, &trimmed, 2, 0);
    let rts = DataHeader {
        kind: DataKind::Rts,
        ..data(isn + 2, true)
    };
    rx.handle_data(0, SRC, &rts, 3, 0);
    rx.handle_data(0, SRC, &data(isn, true), 4, 100);
    assert_eq!(
        delivered(&mut rx),
        [(DeliveryKind::InOrder { seq: isn }, 1)]
    );
    let mut back: Vec<u32> = std::iter::from_fn(|| rx.poll_discarded()).collect();
    back.sort_unstable();
    assert_eq!(back, [2, 3, 4]);
}

/// A receiving EQIF of `config` with reorder queues 4 packets long, whose tunnel
/// from `SRC` (epoch 2) has delivered its first packet and answered it; and the
/// tunnel's ISN.
fn established_with_reorder_span_4(mut config: ReceivingEqifConfig) -> (ReceivingEqif<u32>, u32) {
    config.reorder.window = 4;
    let mut rx = ReceivingEqif::new(config);
    let isn = isn_for_epoch(2);
    rx.handle_data(0, SRC, &data(isn, true), 0, 100);
    assert_eq!(delivered(&mut rx).len(), 1);
    controls(&mut rx);
    (rx, isn)
}

#[test]
fn a_skipped_holes_packet_is_delivered_late_and_blocks_cumulative_acks_until_then() {
    let mut config = ReceivingEqifConfig::default();
    config.credit.ack_coalesce = 4;
    let (mut rx, isn) = established_with_reorder_span_4(config);
    // isn + 1 is lost; isn + 5 lies W past the in-order point, so the hole is skipped.
    for seq in 2..=5 {
        rx.handle_data(0, SRC, &data(isn + seq, false), seq, 100);
    }
    let released = delivered(&mut rx);
    assert_eq!(released.len(), 4);
    controls(&mut rx);
    // In order, but a cumulative ACK would cover isn + 1: ACKed on its own, at once.
    rx.handle_data(0, SRC, &data(isn + 6, false), 6, 100);
    assert_eq!(controls(&mut rx), [(ControlKind::Ack, isn + 6, false)]);
    // The resend arrives: delivered out of order, ACKed.
    rx.handle_data(0, SRC, &data(isn + 1, false), 1, 100);
    assert_eq!(
        delivered(&mut rx),
        [
            (DeliveryKind::InOrder { seq: isn + 6 }, 6),
            (DeliveryKind::Late { seq: isn + 1 }, 1)
        ]
    );
    assert_eq!(controls(&mut rx), [(ControlKind::Ack, isn + 1, false)]);
    assert_eq!((rx.stats().late, rx.stats().holes_skipped), (1, 1));
    // Nothing is awaited any more: in-order ACKs are deferred again.
    rx.handle_data(0, SRC, &data(isn + 7, false), 7, 100);
    assert!(controls(&mut rx).is_empty());
    // A second copy is a duplicate.
    rx.handle_data(0, SRC, &data(isn + 1, false), 1, 100);
    assert!(delivered(&mut rx)
        .iter()
        .all(|d| d.0 != DeliveryKind::Late { seq: isn + 1 }));
    assert_eq!(rx.stats().duplicates, 1);
}

#[test]
fn a_resend_for_a_skipped_hole_far_behind_is_delivered_without_an_rst() {
    let mut config = ReceivingEqifConfig::default();
    config.tunnel.window = 4;
    let (mut rx, isn) = established_with_reorder_span_4(config);
    // isn + 1 is lost and skipped; the tunnel runs on 20 packets, 5 windows.
    for seq in 2..=20 {
        rx.handle_data(0, SRC, &data(isn + seq, false), seq, 100);
    }
    assert_eq!(delivered(&mut rx).len(), 19);
    controls(&mut rx);
    rx.handle_data(0, SRC, &data(isn + 1, false), 1, 100);
    assert_eq!(
        delivered(&mut rx),
        [(DeliveryKind::Late { seq: isn + 1 }, 1)]
    );
    assert_eq!(controls(&mut rx), [(ControlKind::Ack, isn + 1, false)]);
    // A second copy far behind is no longer awaited, and could as well be another
    // epoch's: the RST for far-off data [choice].
    rx.handle_data(0, SRC, &data(isn + 1, false), 1, 100);
    assert_eq!(controls(&mut rx), [(ControlKind::Rst, isn + 1, false)]);
    assert_eq!(rx.stats().rst_sent, 1);
}
