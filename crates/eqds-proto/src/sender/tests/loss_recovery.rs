//! Loss recovery: ACK, NACK, RTO, loss window, strays, returned headers, resends.

use super::*;

#[test]
fn retransmissions_go_before_new_data() {
    let mut s = loaded(Mode::Rts, 3);
    drain(&mut s, 0);
    s.handle_control(1, 1, &pull(1));
    assert_eq!(drain(&mut s, 1)[0].header.seq, 0);
    s.handle_control(2, 1, &control(ControlKind::Nack, 0, 1, 0));
    let st = s.tunnel(1).unwrap();
    assert_eq!(
        (st.in_flight_packets, st.retransmit_bytes),
        (0, u64::from(MTU))
    );
    s.handle_control(3, 1, &pull(2));
    let tx = drain(&mut s, 3);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.seq, 0, "the NACKed packet first");
    assert_eq!(tx[0].payload, Some(0));
    s.handle_control(4, 1, &pull(3));
    assert_eq!(drain(&mut s, 4)[0].header.seq, 1);
    assert_eq!(s.tunnel(1).unwrap().retransmits, 1);
}

#[test]
fn ack_frees_and_nack_only_moves_packets_in_flight() {
    let mut s = loaded(Mode::Ndp, 2);
    assert_eq!(drain(&mut s, 0).len(), 2);
    s.handle_control(5, 1, &control(ControlKind::Ack, 1, 0, 0));
    let acked = s.poll_acked().unwrap();
    assert_eq!((acked.dst, acked.payload, acked.rtt), (1, 1, Some(5)));
    assert!(s.poll_acked().is_none());
    // A duplicate ACK and a NACK for the ACKed packet change nothing.
    s.handle_control(6, 1, &control(ControlKind::Ack, 1, 0, 0));
    s.handle_control(6, 1, &control(ControlKind::Nack, 1, 0, 0));
    assert!(s.poll_acked().is_none());
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.in_flight_packets, st.retransmit_bytes), (1, 0));
    // A NACK twice (duplicated trimmed header) queues one resend.
    s.handle_control(7, 1, &control(ControlKind::Nack, 0, 0, 0));
    s.handle_control(7, 1, &control(ControlKind::Nack, 0, 0, 0));
    assert_eq!(s.tunnel(1).unwrap().retransmit_bytes, u64::from(MTU));
    // The burst left 2 MTUs of credit: the resend goes at once.
    let tx = drain(&mut s, 8);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.seq, 0);
}

/// An NDP burst of W in which packet 0 comes back trimmed while 1-3 are ACKed after
/// 10 ns (the tunnel's fastest round trip), and one PULL pays for the resend of 0 at
/// 10 ns. Then an ACK for 0 arrives at `ack_at`.
fn resent_then_acked(ack_at: Time) -> Sender<u32> {
    let mut s = loaded(Mode::Ndp, 4);
    assert_eq!(drain(&mut s, 0).len(), 4);
    for seq in 1..4 {
        s.handle_control(10_000, 1, &control(ControlKind::Ack, seq, 0, 0));
    }
    s.handle_control(10_000, 1, &control(ControlKind::Nack, 0, 1, 0));
    let tx = drain(&mut s, 10_000);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.seq, 0);
    s.handle_control(ack_at, 1, &control(ControlKind::Ack, 0, 1, 0));
    assert_eq!(s.poll_acked().map(|a| a.payload), Some(1));
    std::iter::from_fn(|| s.poll_acked()).for_each(drop);
    assert_eq!(s.tunnel(1).unwrap().in_flight_packets, 0);
    s
}

#[test]
fn an_ack_too_fast_for_the_resend_leaves_it_counted_until_its_own_answer() {
    // 2 ns after the resend, faster than any round trip: the ACK answers a copy of
    // the original (the network duplicated it), so the resend is still on its way.
    let mut s = resent_then_acked(12_000);
    assert_eq!(s.tunnel(1).unwrap().stray_packets, 1);
    // The tunnel is idle by its queues, but a fresh burst of W would join the stray
    // on the receiver's link: it asks instead.
    s.enqueue(13_000, 1, FULL, 9).unwrap();
    let tx = drain(&mut s, 13_000);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Rts);
    assert_eq!(s.tunnel(1).unwrap().bursts, 1);
    // The resend's own ACK ends the stray.
    s.handle_control(20_000, 1, &control(ControlKind::Ack, 0, 1, 0));
    assert_eq!(s.tunnel(1).unwrap().stray_packets, 0);
    assert!(s.poll_acked().is_none(), "freed once only");
}

#[test]
fn an_ack_as_slow_as_a_round_trip_answers_the_resend() {
    let mut s = resent_then_acked(21_000);
    assert_eq!(s.tunnel(1).unwrap().stray_packets, 0);
    s.enqueue(22_000, 1, FULL, 9).unwrap();
    let tx = drain(&mut s, 22_000);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Data);
    assert_eq!(s.tunnel(1).unwrap().bursts, 2);
}

#[test]
fn a_stray_is_forgotten_one_timeout_after_its_send() {
    let mut s = resent_then_acked(12_000);
    s.handle_timeout(10_000 + RTO - 1);
    assert_eq!(s.tunnel(1).unwrap().stray_packets, 1);
    s.handle_timeout(10_000 + RTO);
    assert_eq!(s.tunnel(1).unwrap().stray_packets, 0);
    // A NACK for a copy the sender no longer tracks changes nothing.
    s.handle_control(10_000 + RTO, 1, &control(ControlKind::Nack, 0, 1, 0));
    assert_eq!(s.tunnel(1).unwrap().retransmit_bytes, 0);
    s.enqueue(10_000 + RTO, 1, FULL, 9).unwrap();
    assert_eq!(drain(&mut s, 10_000 + RTO)[0].header.kind, DataKind::Data);
}

#[test]
fn cumulative_ack_frees_everything_up_to_ack_no() {
    let mut s = loaded(Mode::Ndp, 4);
    drain(&mut s, 0);
    let mut ack = control(ControlKind::Ack, 2, 0, 0);
    ack.cumulative = true;
    s.handle_control(1, 1, &ack);
    let freed: Vec<u32> = std::iter::from_fn(|| s.poll_acked())
        .map(|a| a.payload)
        .collect();
    assert_eq!(freed, vec![0, 1, 2]);
    assert_eq!(s.tunnel(1).unwrap().in_flight_packets, 1);
}

#[test]
fn rto_moves_the_packet_to_the_retransmit_queue() {
    let mut s = loaded(Mode::Ndp, 1);
    drain(&mut s, 0);
    assert_eq!(s.poll_timeout(), Some(RTO));
    s.handle_timeout(RTO - 1);
    assert_eq!(s.tunnel(1).unwrap().in_flight_packets, 1);
    s.handle_timeout(RTO);
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.in_flight_packets, st.rto_expiries), (0, 1));
    // NDP burst credit remains (3 MTUs), so the resend goes at once.
    let tx = drain(&mut s, RTO);
    assert_eq!(tx.len(), 1);
    assert_eq!((tx[0].header.seq, tx[0].payload), (0, Some(0)));
    assert_eq!(s.poll_timeout(), Some(2 * RTO));
    // The original's ACK arrives late: freed, but no RTT sample (Karn).
    s.handle_control(RTO + 1, 1, &control(ControlKind::Ack, 0, 0, 0));
    assert_eq!(s.poll_acked().unwrap().rtt, None);
    assert_eq!(s.poll_timeout(), None);
}

/// RTS mode with `loss_reorder_window` 15: packets 0-3 sent one per PULL at 10, 20,
/// 30 and 40.
fn paced_with_loss_window() -> Sender<u32> {
    let mut s = Sender::new(SenderConfig {
        loss_reorder_window: 15,
        ..config(Mode::Rts)
    });
    s.open_tunnel(1, 0);
    for i in 0..4 {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    drain(&mut s, 0);
    for pull_no in 1..=4 {
        let now = Time::from(pull_no) * 10;
        s.handle_control(now, 1, &pull(pull_no));
        assert_eq!(drain(&mut s, now).len(), 1);
    }
    s
}

#[test]
fn an_ack_for_a_later_packet_declares_those_sent_a_window_before_it_lost() {
    let mut s = paced_with_loss_window();
    // Packet 2 (sent at 30) is ACKed: 0 (sent at 10) is more than 15 older.
    s.handle_control(45, 1, &control(ControlKind::Ack, 2, 4, 0));
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.reorder_losses, st.rto_expiries), (1, 0));
    assert_eq!(st.retransmit_bytes, u64::from(MTU));
    // Packet 3 (sent at 40): 1 (sent at 20) goes too, exactly at the boundary it
    // would not (25 + 15 = 40 is not before 40).
    s.handle_control(55, 1, &control(ControlKind::Ack, 3, 4, 0));
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.reorder_losses, st.in_flight_packets), (2, 0));
    // Both wait for credit (and, with nothing in flight, ask for it with an RTS);
    // the oldest goes first when it comes.
    s.handle_control(60, 1, &pull(5));
    let data: Vec<u32> = drain(&mut s, 60)
        .iter()
        .filter(|t| t.header.kind == DataKind::Data)
        .map(|t| t.header.seq)
        .collect();
    assert_eq!(data, [0]);
}

#[test]
fn packets_sent_within_the_loss_window_wait_for_their_timeout() {
    let mut s = paced_with_loss_window();
    // Packet 1 (sent at 20) is ACKed: 0 (sent at 10) is only 10 older.
    s.handle_control(35, 1, &control(ControlKind::Ack, 1, 4, 0));
    assert_eq!(s.tunnel(1).unwrap().reorder_losses, 0);
    // Off by default: the same ACKs take nothing for lost.
    let mut s = loaded(Mode::Ndp, 4);
    drain(&mut s, 0);
    s.handle_control(RTO / 2, 1, &control(ControlKind::Ack, 3, 0, 0));
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.reorder_losses, st.in_flight_packets), (0, 3));
}

#[test]
fn a_resent_packets_ack_does_not_move_the_loss_window() {
    let mut s = paced_with_loss_window();
    // 3 is NACKed and resent at 100; the ACK may answer the copy sent at 40, so it
    // says nothing about what was sent by 100.
    s.handle_control(50, 1, &control(ControlKind::Nack, 3, 4, 0));
    s.handle_control(100, 1, &pull(5));
    assert_eq!(drain(&mut s, 100)[0].header.seq, 3);
    s.handle_control(110, 1, &control(ControlKind::Ack, 3, 5, 0));
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.reorder_losses, st.in_flight_packets), (0, 3));
}

#[test]
fn a_returned_header_is_resent_first_and_asks_for_credit_only_when_nothing_is_in_flight() {
    let mut s = loaded(Mode::Ndp, 6);
    let burst = drain(&mut s, 0);
    assert_eq!(burst.len(), 4, "one window of credit");
    // The switch returns packet 2. Packets 0, 1 and 3 are still in flight and
    // will earn PULLs, so no RTS yet.
    s.handle_returned(10, 1, 2);
    assert!(drain(&mut s, 10).is_empty());
    // The first PULL pays for the resend, ahead of new data, and its target counts
    // the resend and the two queued packets.
    s.handle_control(20, 1, &pull(1));
    let tx = drain(&mut s, 20);
    assert_eq!(tx.len(), 1);
    assert_eq!((tx[0].header.seq, tx[0].payload), (2, Some(2)));
    assert_eq!(tx[0].header.pull_target, 3);
    // When every packet in flight comes back, nothing is left to earn credit: an
    // RTS asks for it at once.
    for seq in [0, 1, 3, 2] {
        s.handle_returned(30, 1, seq);
    }
    let tx = drain(&mut s, 30);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Rts);
    // Six packets wait; the target asks for at most a window of them.
    assert_eq!(tx[0].header.pull_target, 1 + W / MTU);
    assert_eq!(s.tunnel(1).unwrap().returned, 5);
    // Returns for unknown tunnels or packets not in flight change nothing.
    s.handle_returned(40, 9, 0);
    s.handle_returned(40, 1, 77);
    assert!(drain(&mut s, 40).is_empty());
}

#[test]
fn resends_go_lowest_sequence_number_first() {
    let mut s = loaded(Mode::Ndp, 4);
    drain(&mut s, 0);
    // Losses noticed out of order: 3, then 1, then 2.
    s.handle_control(1, 1, &control(ControlKind::Nack, 3, 0, 0));
    s.handle_returned(2, 1, 1);
    s.handle_control(3, 1, &control(ControlKind::Nack, 2, 0, 0));
    s.handle_control(4, 1, &pull(3));
    let seqs: Vec<u32> = drain(&mut s, 4).iter().map(|t| t.header.seq).collect();
    assert_eq!(seqs, [1, 2, 3]);
}
