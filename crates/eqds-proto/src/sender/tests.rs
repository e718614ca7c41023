//! Unit tests of the sending EQIF: one behaviour per test, driven by hand-made
//! control packets.

use super::*;
use crate::wire::{isn_for_epoch, DataKind, NextProto, EPOCH_BLOCK};

/// 1000-byte MTU with 100 bytes of overhead (900-byte inner packets fill it) and a
/// window of 4 MTUs: small enough to count by hand.
const MTU: u32 = 1000;
const OVERHEAD: u32 = 100;
const FULL: u32 = MTU - OVERHEAD;
const W: u32 = 4 * MTU;
const RTO: Time = 1_000_000;

fn config(mode: Mode) -> SenderConfig {
    SenderConfig {
        mode,
        mtu: MTU,
        overhead: OVERHEAD,
        window: W,
        initial_window: None,
        // Exact targets, so that each test counts PULLs by hand; the lookahead has its
        // own tests.
        demand_lookahead: 0,
        send_queue_packets: 16,
        send_queue_bytes: u64::MAX,
        rto: RTO,
        credit_loss_timeout: 2 * RTO,
        paths: 8,
        sender_id: 7,
        next_proto: NextProto::Ipv4,
        seed: 42,
        path_stats: false,
        path_avoidance: 0,
        loss_reorder_window: 0,
        ecn: None,
    }
}

fn control(kind: ControlKind, ack_no: u32, pull_no: u32, busy_time_ns: u32) -> ControlHeader {
    ControlHeader {
        kind,
        syn: false,
        cumulative: false,
        sender_id: 7,
        ack_no,
        pull_no,
        busy_time_ns,
    }
}

fn pull(pull_no: u32) -> ControlHeader {
    control(ControlKind::Pull, 0, pull_no, 0)
}

fn drain(s: &mut Sender<u32>, now: Time) -> Vec<Transmit<u32>> {
    std::iter::from_fn(|| s.poll_transmit(now)).collect()
}

/// A sender with `n` full packets (payloads 0..n) queued for peer 1 at time 0.
fn loaded(mode: Mode, n: u32) -> Sender<u32> {
    let mut s = Sender::new(config(mode));
    // Epoch 0, so sequence numbers count from 0.
    s.open_tunnel(1, 0);
    for i in 0..n {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    s
}

#[test]
fn ndp_new_tunnel_bursts_exactly_one_window() {
    let mut s = loaded(Mode::Ndp, 10);
    let tx = drain(&mut s, 0);
    assert_eq!(tx.len(), (W / MTU) as usize);
    for (i, t) in tx.iter().enumerate() {
        assert_eq!(t.header.kind, DataKind::Data);
        assert_eq!(t.header.seq, i as u32);
        assert_eq!(t.payload, Some(i as u32));
        assert_eq!(t.wire_len, MTU);
        assert_eq!(t.header.sender_id, 7);
        // Held credit counts towards the window: packet k asks for k PULLs, one per
        // packet that reaches the receiver, not Q6's literal W beyond the pull number.
        assert_eq!(t.header.pull_target, i as u32 + 1);
    }
    let st = s.tunnel(1).unwrap();
    assert_eq!(st.credit, 0);
    assert_eq!(st.free_credit_bytes, u64::from(W));
    assert_eq!(st.bursts, 1);
    assert_eq!(st.rts_sent, 0);
}

#[test]
fn rts_mode_sends_rts_then_waits_for_credit() {
    let mut s = loaded(Mode::Rts, 10);
    let tx = drain(&mut s, 0);
    assert_eq!(tx.len(), 1);
    let rts = &tx[0];
    assert_eq!(rts.header.kind, DataKind::Rts);
    assert_eq!(rts.header.next_proto, NextProto::None);
    assert_eq!(rts.header.seq, 0, "an RTS carries the next seq");
    assert_eq!(rts.header.pull_target, W / MTU, "asks for one window");
    assert_eq!(rts.payload, None);
    assert_eq!(rts.wire_len, OVERHEAD);
    assert!(drain(&mut s, 10).is_empty(), "no data without credit");
    assert_eq!(s.tunnel(1).unwrap().free_credit_bytes, 0);

    s.handle_control(20, 1, &pull(1));
    let tx = drain(&mut s, 20);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Data);
    assert_eq!(tx[0].header.seq, 0, "the RTS consumed no seq");
    assert_eq!(tx[0].header.pull_target, 1 + W / MTU);
}

#[test]
fn credit_follows_highest_pull_number_through_loss_and_reordering() {
    let mut s = loaded(Mode::Rts, 10);
    drain(&mut s, 0);
    // PULL 1 is lost; PULL 2 carries both MTUs.
    s.handle_control(1, 1, &pull(2));
    assert_eq!(drain(&mut s, 1).len(), 2);
    // The lost PULL 1 turns up late: nothing new.
    s.handle_control(2, 1, &pull(1));
    assert!(drain(&mut s, 2).is_empty());
    assert_eq!(s.tunnel(1).unwrap().highest_pull, 2);
    // An ACK repairs PULLs 3 and 4, both lost.
    s.handle_control(3, 1, &control(ControlKind::Ack, 0, 4, 0));
    assert_eq!(drain(&mut s, 3).len(), 2);
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.highest_pull, st.credit), (4, 0));
}

#[test]
fn pull_numbers_compare_across_the_wrap() {
    let mut s = loaded(Mode::Rts, 4);
    drain(&mut s, 0);
    // A huge jump (half the space) is not credit.
    s.handle_control(1, 1, &pull(1 << 31));
    assert_eq!(s.tunnel(1).unwrap().credit, 0);
    // u32::MAX is "before" 0: no credit either.
    s.handle_control(1, 1, &pull(u32::MAX));
    assert_eq!(s.tunnel(1).unwrap().credit, 0);
}

#[test]
fn pull_target_caps_the_backlog_before_subtracting_credit() {
    let mut s = loaded(Mode::Rts, 10);
    drain(&mut s, 0);
    s.handle_control(1, 1, &pull(3));
    let tx = drain(&mut s, 1);
    assert_eq!(tx.len(), 3);
    // First send: backlog 9 MTUs, credit 2: 3 + (min(9, 4) - 2).
    assert_eq!(tx[0].header.pull_target, 5);
    assert_eq!(tx[1].header.pull_target, 6);
    assert_eq!(tx[2].header.pull_target, 7);

    // A short packet asks for a whole MTU (ceil), and no more.
    let mut s = Sender::new(config(Mode::Rts));
    s.enqueue(0, 1, 400, 0).unwrap();
    let tx = drain(&mut s, 0);
    assert_eq!(tx[0].header.pull_target, 1);
}

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
fn restart_within_busy_time_uses_rts_even_in_ndp_mode() {
    let mut s = loaded(Mode::Ndp, 1);
    drain(&mut s, 0);
    // The ACK says the receiver stays busy for 50 us.
    s.handle_control(1_000, 1, &control(ControlKind::Ack, 0, 0, 50_000));
    assert_eq!(s.tunnel(1).unwrap().busy_until, 1_000 + 50_000_000);
    // Idle now; new data within the busy time: RTS, no burst, no stale credit.
    s.enqueue(2_000, 1, FULL, 1).unwrap();
    let tx = drain(&mut s, 2_000);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Rts);
    assert_eq!(s.tunnel(1).unwrap().credit, 0);
    // It is served by a PULL, then ACKed with the link no longer busy.
    s.handle_control(3_000, 1, &pull(1));
    assert_eq!(drain(&mut s, 3_000)[0].header.kind, DataKind::Data);
    s.handle_control(4_000, 1, &control(ControlKind::Ack, 1, 1, 0));
    // Restarting after the busy time bursts again.
    s.enqueue(5_000, 1, FULL, 2).unwrap();
    s.enqueue(5_000, 1, FULL, 3).unwrap();
    let tx = drain(&mut s, 5_000);
    assert_eq!(tx.len(), 2);
    assert!(tx.iter().all(|t| t.header.kind == DataKind::Data));
    assert_eq!(s.tunnel(1).unwrap().bursts, 2);
}

#[test]
fn restart_with_packets_in_flight_keeps_its_credit_and_takes_no_free_window() {
    let mut s = loaded(Mode::Ndp, 1);
    drain(&mut s, 0);
    // Nothing queued, no PULL expected, one packet unACKed and W - MTU of credit
    // left: the loop is live, so the credit is kept and spent.
    s.enqueue(1, 1, FULL, 1).unwrap();
    let tx = drain(&mut s, 1);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Data);
    let st = s.tunnel(1).unwrap();
    assert_eq!(st.credit, i64::from(W - 2 * MTU));
    assert_eq!((st.bursts, st.free_credit_bytes), (1, u64::from(W)));
    // Credit spent, packets still in flight: the next one asks with an RTS rather
    // than granting itself another window.
    for i in 2..4 {
        s.enqueue(2, 1, FULL, i).unwrap();
    }
    assert_eq!(drain(&mut s, 2).len(), 2);
    s.enqueue(3, 1, FULL, 9).unwrap();
    let tx = drain(&mut s, 3);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Rts);
    assert_eq!(s.tunnel(1).unwrap().bursts, 1);
}

/// An RTS-mode tunnel that sends one packet, gets its ACK-clocked next packet a
/// moment later (the PULLs for the first having arrived), and says what it sent.
fn ack_clocked_pair(lookahead: u32) -> Vec<Transmit<u32>> {
    let mut s = Sender::new(SenderConfig {
        demand_lookahead: lookahead,
        ..config(Mode::Rts)
    });
    s.open_tunnel(1, 0);
    s.enqueue(0, 1, FULL, 0).unwrap();
    let mut tx = drain(&mut s, 0);
    // Every PULL asked for so far arrives: the backlog is served, the packet is in
    // flight, and a new packet comes in before its ACK.
    let target = tx.last().unwrap().header.pull_target;
    s.handle_control(10, 1, &pull(target));
    tx.extend(drain(&mut s, 10));
    let target = tx.last().unwrap().header.pull_target;
    s.handle_control(20, 1, &pull(target));
    s.enqueue(30, 1, FULL, 1).unwrap();
    tx.extend(drain(&mut s, 30));
    tx
}

#[test]
fn without_lookahead_a_queue_that_empties_asks_again_with_an_rts() {
    let kinds: Vec<_> = ack_clocked_pair(0).iter().map(|t| t.header.kind).collect();
    assert_eq!(
        kinds,
        [DataKind::Rts, DataKind::Data, DataKind::Rts],
        "the second packet waits a round trip for its credit"
    );
}

#[test]
fn lookahead_keeps_credit_waiting_for_the_next_packet() {
    let tx = ack_clocked_pair(2 * MTU);
    let kinds: Vec<_> = tx.iter().map(|t| t.header.kind).collect();
    assert_eq!(kinds, [DataKind::Rts, DataKind::Data, DataKind::Data]);
    // The RTS had nothing in flight to look ahead from: it asked for its backlog.
    assert_eq!(tx[0].header.pull_target, 1);
    // The first packet asked for one more PULL, bounded by its own bytes in flight
    // (one MTU), not the two MTUs of lookahead; the second for two.
    assert_eq!(tx[1].header.pull_target, 2);
    assert_eq!(tx[2].header.pull_target, 4);
}

/// An NDP-mode sender with a lookahead of a whole window and `n` full packets
/// (payloads 0..n) queued for peer 1 at time 0.
fn ndp_looking_a_window_ahead(n: u32) -> Sender<u32> {
    let mut s = Sender::new(SenderConfig {
        demand_lookahead: W,
        ..config(Mode::Ndp)
    });
    s.open_tunnel(1, 0);
    for i in 0..n {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    s
}

#[test]
fn lookahead_changes_nothing_while_the_backlog_fills_the_window() {
    let mut s = ndp_looking_a_window_ahead(10);
    let tx = drain(&mut s, 0);
    let targets: Vec<_> = tx.iter().map(|t| t.header.pull_target).collect();
    assert_eq!(
        targets,
        [1, 2, 3, 4],
        "one PULL per packet, as without lookahead"
    );
    // With the queue nearly empty the lookahead fills the window up to W.
    s.handle_control(10, 1, &pull(4));
    let tx = drain(&mut s, 10);
    let targets: Vec<_> = tx.iter().map(|t| t.header.pull_target).collect();
    assert_eq!(targets, [5, 6, 7, 8]);
}

/// An RTS-mode tunnel with a lookahead of one MTU sends a packet at 0 and gets
/// its PULLs, then an ACK at 1000 (one sample: srtt 1000 ps) that leaves it idle,
/// holding the MTU of credit the lookahead asked for; new data arrives at `at`.
fn idle_with_credit_then_data_at(at: Time) -> (Sender<u32>, Vec<Transmit<u32>>) {
    let mut s = Sender::new(SenderConfig {
        demand_lookahead: MTU,
        ..config(Mode::Rts)
    });
    s.open_tunnel(1, 0);
    s.enqueue(0, 1, FULL, 0).unwrap();
    drain(&mut s, 0);
    s.handle_control(0, 1, &pull(1));
    let data = drain(&mut s, 0);
    assert_eq!(data[0].header.pull_target, 2, "one MTU of lookahead");
    s.handle_control(0, 1, &pull(2));
    s.handle_control(1_000, 1, &control(ControlKind::Ack, 0, 2, 0));
    assert_eq!(s.tunnel(1).unwrap().credit, i64::from(MTU));
    s.enqueue(at, 1, FULL, 1).unwrap();
    let tx = drain(&mut s, at);
    (s, tx)
}

#[test]
fn credit_held_from_a_round_trip_ago_pays_for_a_restart() {
    let (s, tx) = idle_with_credit_then_data_at(2_000);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Data, "no RTS round trip");
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.warm_restarts, st.rts_sent, st.credit), (1, 1, 0));
}

#[test]
fn credit_held_longer_than_a_round_trip_is_stale() {
    let (s, tx) = idle_with_credit_then_data_at(2_001);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Rts);
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.warm_restarts, st.rts_sent, st.credit), (0, 2, 0));
}

#[test]
fn a_target_never_falls_below_one_already_sent() {
    let mut s = ndp_looking_a_window_ahead(4);
    let targets: Vec<_> = drain(&mut s, 0)
        .iter()
        .map(|t| t.header.pull_target)
        .collect();
    assert_eq!(
        targets,
        [1, 2, 3, 4],
        "the last asks for its whole window in flight"
    );
    // Three ACKs shrink what is in flight, a NACK queues the fourth for a resend,
    // and one PULL pays for it.
    for seq in 0..3 {
        s.handle_control(10, 1, &control(ControlKind::Ack, seq, 0, 0));
    }
    s.handle_control(10, 1, &control(ControlKind::Nack, 3, 0, 0));
    s.handle_control(20, 1, &pull(1));
    let tx = drain(&mut s, 20);
    assert_eq!(tx.len(), 1);
    // Its own lookahead would ask for 1 + 1; the receiver still owes PULLs up to 4,
    // and the sender must keep counting on them.
    assert_eq!(tx[0].header.pull_target, 4);
    assert_eq!(s.tunnel(1).unwrap().last_pull_target, 4);
}

#[test]
fn stalled_tunnel_sends_rts_after_the_credit_loss_timeout() {
    let mut s = loaded(Mode::Rts, 2);
    drain(&mut s, 0);
    // The RTS is lost. Only the credit-loss timer runs.
    assert_eq!(s.poll_timeout(), Some(2 * RTO));
    s.handle_timeout(2 * RTO);
    let tx = drain(&mut s, 2 * RTO);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Rts);
    assert_eq!(s.tunnel(1).unwrap().credit_loss_rts, 1);

    // One packet is paid for and ACKed; the last PULL is lost. The tunnel has
    // backlog, no credit, nothing in flight: after the timeout it asks again.
    let t0 = 3 * RTO;
    s.handle_control(t0, 1, &pull(1));
    drain(&mut s, t0);
    s.handle_control(t0 + 10, 1, &control(ControlKind::Ack, 0, 1, 0));
    assert!(drain(&mut s, t0 + 10).is_empty());
    assert_eq!(s.poll_timeout(), Some(t0 + 10 + 2 * RTO));
    s.handle_timeout(t0 + 10 + 2 * RTO);
    let tx = drain(&mut s, t0 + 10 + 2 * RTO);
    assert_eq!(tx[0].header.kind, DataKind::Rts);
    assert_eq!(tx[0].header.pull_target, 2);
}

#[test]
fn a_busy_receiver_gets_its_busy_time_before_a_stalled_tunnel_asks_again() {
    let mut s = loaded(Mode::Rts, 3);
    drain(&mut s, 0);
    // One packet paid for and ACKed by a receiver busy for 5 ms more (ns): its
    // next PULL to us may take that long in a large incast.
    s.handle_control(10, 1, &pull(1));
    drain(&mut s, 10);
    let busy_ns = 5_000_000;
    s.handle_control(20, 1, &control(ControlKind::Ack, 0, 1, busy_ns));
    let busy_until = 20 + Time::from(busy_ns) * 1_000;
    assert!(busy_until > 20 + 2 * RTO);
    assert_eq!(s.poll_timeout(), Some(busy_until));
    s.handle_timeout(20 + 2 * RTO);
    assert!(drain(&mut s, 20 + 2 * RTO).is_empty(), "no RTS while busy");
    assert_eq!(s.tunnel(1).unwrap().credit_loss_rts, 0);
    // The busy time has passed without a PULL: the credit is taken for lost.
    s.handle_timeout(busy_until);
    let tx = drain(&mut s, busy_until);
    assert_eq!(tx[0].header.kind, DataKind::Rts);
    assert_eq!(s.tunnel(1).unwrap().credit_loss_rts, 1);
}

#[test]
fn trimmed_tail_asks_for_credit_at_once() {
    // Two packets are paid for by the two PULLs their RTS asked for; both are
    // trimmed. Their headers carried a target the receiver had already met, so it
    // owes nothing: without new demand the resends would wait for the credit-loss
    // timer.
    let mut s = loaded(Mode::Rts, 2);
    drain(&mut s, 0);
    s.handle_control(10, 1, &pull(2));
    let sent = drain(&mut s, 10);
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|t| t.header.pull_target == 2));
    s.handle_control(20, 1, &control(ControlKind::Nack, 0, 2, 0));
    assert!(
        drain(&mut s, 20).is_empty(),
        "packet 1 is in flight and may still earn a PULL"
    );
    s.handle_control(21, 1, &control(ControlKind::Nack, 1, 2, 0));
    let tx = drain(&mut s, 21);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Rts);
    assert_eq!(tx[0].header.pull_target, 4, "one PULL per resend");
    assert_eq!(s.tunnel(1).unwrap().credit_loss_rts, 0);
}

#[test]
fn initial_window_sends_a_few_packets_unasked_in_rts_mode_and_caps_the_ndp_burst() {
    let rts_one = SenderConfig {
        initial_window: Some(MTU),
        ..config(Mode::Rts)
    };
    let mut s = Sender::new(rts_one);
    s.open_tunnel(1, 0);
    for i in 0..3 {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    // The receiver is not known to be busy: one packet goes at once, asking for
    // the other two as an RTS would.
    let tx = drain(&mut s, 0);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Data);
    assert_eq!(tx[0].header.pull_target, 2);
    assert_eq!(s.tunnel(1).unwrap().rts_sent, 0);
    // Its ACK says the receiver is busy for 50 us: a restart then asks first.
    s.handle_control(1_000, 1, &control(ControlKind::Ack, 0, 2, 50_000));
    drain(&mut s, 1_000);
    s.handle_control(2_000, 1, &control(ControlKind::Ack, 1, 2, 50_000));
    s.handle_control(2_000, 1, &control(ControlKind::Ack, 2, 2, 50_000));
    s.enqueue(3_000, 1, FULL, 3).unwrap();
    let tx = drain(&mut s, 3_000);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Rts);

    // In NDP mode it caps the burst.
    let ndp_two = SenderConfig {
        initial_window: Some(2 * MTU),
        ..config(Mode::Ndp)
    };
    let mut s = Sender::new(ndp_two);
    s.open_tunnel(1, 0);
    for i in 0..5 {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    assert_eq!(drain(&mut s, 0).len(), 2);
    assert_eq!(s.tunnel(1).unwrap().free_credit_bytes, u64::from(2 * MTU));
}

#[test]
fn packets_queued_ahead_leave_before_waiting_data_and_in_their_own_order() {
    // RTS mode: nothing leaves until a PULL, so the queue order is what we see.
    let mut s = loaded(Mode::Rts, 3);
    s.enqueue_ahead(0, 1, 40, 100).unwrap();
    s.enqueue(0, 1, FULL, 3).unwrap();
    s.enqueue_ahead(0, 1, 40, 101).unwrap();
    drain(&mut s, 0);
    s.handle_control(10, 1, &pull(4));
    let order: Vec<u32> = drain(&mut s, 10).iter().filter_map(|t| t.payload).collect();
    assert_eq!(order, vec![100, 101, 0, 1, 2]);
    // Packet 3 did not fit in that credit and still waits; a later packet queued
    // ahead passes it too, one queued the ordinary way does not.
    s.enqueue(20, 1, FULL, 4).unwrap();
    s.enqueue_ahead(20, 1, 40, 102).unwrap();
    s.handle_control(30, 1, &pull(6));
    let order: Vec<u32> = drain(&mut s, 30).iter().filter_map(|t| t.payload).collect();
    assert_eq!(order, vec![102, 3, 4]);
}

#[test]
fn tunnels_holding_credit_take_turns() {
    let mut s = Sender::new(config(Mode::Ndp));
    for dst in [1, 2, 3] {
        for i in 0..3 {
            s.enqueue(0, dst, FULL, dst * 10 + i).unwrap();
        }
    }
    let order: Vec<PeerId> = drain(&mut s, 0).iter().map(|t| t.dst).collect();
    assert_eq!(order, vec![1, 2, 3, 1, 2, 3, 1, 2, 3]);
}

#[test]
fn path_ids_cycle_through_a_fresh_permutation() {
    let mut cfg = config(Mode::Ndp);
    cfg.window = 16 * MTU;
    let run = |cfg: SenderConfig| {
        let mut s = Sender::new(cfg);
        for i in 0..16 {
            s.enqueue(0, 1, FULL, i).unwrap();
        }
        drain(&mut s, 0)
            .iter()
            .map(|t| t.header.path_id)
            .collect::<Vec<u16>>()
    };
    let paths = run(cfg.clone());
    for cycle in paths.chunks(8) {
        let mut sorted = cycle.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..8).collect::<Vec<u16>>());
    }
    assert_eq!(paths, run(cfg.clone()), "same seed, same paths");
    cfg.seed = 43;
    assert_ne!(paths, run(cfg), "another seed, other paths");
}

#[test]
fn enqueue_refuses_full_queues_and_oversized_packets() {
    let mut s = Sender::new(config(Mode::Rts));
    assert_eq!(
        s.enqueue(0, 1, FULL + 1, 99),
        Err(EnqueueError::TooLarge(99))
    );
    for i in 0..16 {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    assert_eq!(
        s.enqueue(0, 1, FULL, 16),
        Err(EnqueueError::Backpressure(16))
    );
}

#[test]
fn control_for_another_sender_id_or_peer_is_ignored() {
    let mut s = loaded(Mode::Rts, 2);
    drain(&mut s, 0);
    let mut other = pull(2);
    other.sender_id = 8;
    s.handle_control(1, 1, &other);
    s.handle_control(1, 9, &pull(2));
    assert_eq!(s.tunnel(1).unwrap().credit, 0);
    assert_eq!(s.ignored_control(), 2);
}

#[test]
fn credit_beyond_the_window_is_refused() {
    let mut s = loaded(Mode::Rts, 2);
    drain(&mut s, 0);
    s.handle_control(1, 1, &pull(10));
    let st = s.tunnel(1).unwrap();
    assert_eq!(st.credit, i64::from(W));
    assert_eq!(st.credit_clamped_bytes, u64::from(6 * MTU));
}

#[test]
fn open_tunnel_sets_the_first_sequence_number() {
    let mut s = Sender::new(config(Mode::Ndp));
    assert!(s.open_tunnel(1, 5 << 10));
    assert!(!s.open_tunnel(1, 0));
    s.enqueue(0, 1, FULL, 0).unwrap();
    assert_eq!(drain(&mut s, 0)[0].header.seq, 5 << 10);
}

// ---- the tunnel state machine driven by the sender (Appendix A) ----

fn syn_ack(kind: ControlKind, ack_no: u32, pull_no: u32) -> ControlHeader {
    ControlHeader {
        syn: true,
        ..control(kind, ack_no, pull_no, 0)
    }
}

#[test]
fn new_tunnel_picks_an_epoch_and_sets_syn_until_its_syn_ack() {
    let mut s = Sender::new(config(Mode::Ndp));
    s.enqueue(0, 1, FULL, 0).unwrap();
    s.enqueue(0, 1, FULL, 1).unwrap();
    let tx = drain(&mut s, 0);
    let isn = tx[0].header.seq;
    assert_eq!(isn % EPOCH_BLOCK, 0, "the first SYN starts a block");
    assert!(tx.iter().all(|t| t.header.syn));
    let epoch = epoch_of(isn);
    assert_eq!(s.tunnel_state(1), Some(TxState::SynSent { epoch }));
    // A plain ACK (an older epoch's) does not establish the tunnel.
    s.handle_control(1, 1, &control(ControlKind::Ack, isn + 1, 0, 0));
    assert_eq!(s.tunnel_state(1), Some(TxState::SynSent { epoch }));
    s.handle_control(2, 1, &syn_ack(ControlKind::Ack, isn, 0));
    assert_eq!(s.tunnel_state(1), Some(TxState::Established { epoch }));
    assert_eq!(s.poll_acked().unwrap().payload, 1);
    assert_eq!(
        s.poll_acked().unwrap().payload,
        0,
        "the SYN-ACK is an ACK too"
    );
    s.enqueue(3, 1, FULL, 2).unwrap();
    let tx = drain(&mut s, 3);
    assert_eq!((tx[0].header.seq, tx[0].header.syn), (isn + 2, false));
}

#[test]
fn the_epoch_comes_from_the_seeded_generator() {
    let first_seq = |seed| {
        let mut s = Sender::new(SenderConfig {
            seed,
            ..config(Mode::Ndp)
        });
        s.enqueue(0, 1, FULL, 0).unwrap();
        drain(&mut s, 0)[0].header.seq
    };
    assert_eq!(first_seq(1), first_seq(1));
    assert_ne!(first_seq(1), first_seq(2));
}

#[test]
fn greater_epoch_syn_ack_renumbers_the_unacked_window_with_syn() {
    let mut s = loaded(Mode::Ndp, 3);
    assert_eq!(drain(&mut s, 0).len(), 3);
    // Packet 1 was ACKed in epoch 0 before the receiver moved on.
    s.handle_control(1, 1, &control(ControlKind::Ack, 1, 0, 0));
    s.handle_control(2, 1, &syn_ack(ControlKind::Ack, isn_for_epoch(9) + 4, 2));
    assert_eq!(s.tunnel_state(1), Some(TxState::SynSent { epoch: 10 }));
    let tx = drain(&mut s, 3);
    let sent: Vec<_> = tx
        .iter()
        .map(|t| (t.header.seq, t.header.syn, t.payload.unwrap()))
        .collect();
    let isn = isn_for_epoch(10);
    assert_eq!(sent, [(isn, true, 0), (isn + 1, true, 2)]);
    assert_eq!(s.tunnel(1).unwrap().renumbered, 2);
}

#[test]
fn stale_syn_ack_is_ignored() {
    let mut s = Sender::new(config(Mode::Ndp));
    let isn = isn_for_epoch(5);
    s.open_tunnel(1, isn);
    s.enqueue(0, 1, FULL, 0).unwrap();
    drain(&mut s, 0);
    // An epoch-4 SYN-ACK: neither establishes nor frees anything.
    s.handle_control(1, 1, &syn_ack(ControlKind::Ack, isn_for_epoch(4), 0));
    assert_eq!(s.tunnel_state(1), Some(TxState::SynSent { epoch: 5 }));
    assert!(s.poll_acked().is_none());
    assert_eq!(s.tunnel(1).unwrap().in_flight_packets, 1);
    // Established, the same holds.
    s.handle_control(2, 1, &syn_ack(ControlKind::Ack, isn, 0));
    s.handle_control(3, 1, &syn_ack(ControlKind::Nack, isn_for_epoch(4), 0));
    assert_eq!(s.tunnel_state(1), Some(TxState::Established { epoch: 5 }));
    assert_eq!(s.poll_acked().unwrap().payload, 0);
}

#[test]
fn rst_with_backlog_reestablishes_after_the_used_sequence_space() {
    let mut s = loaded(Mode::Ndp, 2);
    drain(&mut s, 0);
    s.handle_control(1, 1, &syn_ack(ControlKind::Ack, 0, 0));
    s.handle_control(2, 1, &control(ControlKind::Rst, 1, 1, 0));
    assert_eq!(s.tunnel_state(1), Some(TxState::SynSent { epoch: 1 }));
    let tx = drain(&mut s, 2);
    assert_eq!(tx.len(), 1);
    assert_eq!(
        (tx[0].header.seq, tx[0].header.syn, tx[0].payload),
        (isn_for_epoch(1), true, Some(1))
    );
}

#[test]
fn rst_with_nothing_unacked_frees_the_tunnel_and_the_next_epoch_follows() {
    let mut s = loaded(Mode::Ndp, 1);
    drain(&mut s, 0);
    s.handle_control(1, 1, &syn_ack(ControlKind::Ack, 0, 0));
    s.handle_control(2, 1, &control(ControlKind::Rst, 0, 0, 0));
    assert_eq!(
        s.tunnel_state(1),
        Some(TxState::Closed {
            last_epoch: Some(0)
        })
    );
    assert_eq!(s.tunnel(1).unwrap().credit, 0);
    s.enqueue(3, 1, FULL, 1).unwrap();
    let tx = drain(&mut s, 3);
    assert_eq!(
        (tx[0].header.seq, tx[0].header.syn),
        (isn_for_epoch(1), true)
    );
}

#[test]
fn restarted_epoch_starts_after_every_sequence_number_used() {
    // Established epoch 0 ran past its block: 1030 packets numbered.
    let mut s = Sender::new(SenderConfig {
        window: 2000 * MTU,
        send_queue_packets: 2000,
        send_queue_bytes: u64::MAX,
        ..config(Mode::Ndp)
    });
    s.open_tunnel(1, 0);
    s.handle_control(0, 1, &syn_ack(ControlKind::Ack, 0, 0));
    for i in 0..1030 {
        s.enqueue(0, 1, 1, i).unwrap();
    }
    assert_eq!(drain(&mut s, 0).len(), 1030);
    s.handle_control(1, 1, &control(ControlKind::Rst, 0, 0, 0));
    // Epoch 1's block holds seqs 1024..1029 already used: epoch 2 it is.
    assert_eq!(s.tunnel_state(1), Some(TxState::SynSent { epoch: 2 }));
}

#[test]
fn syn_sent_tunnel_stops_at_the_end_of_the_epoch_block() {
    let mut s = Sender::new(SenderConfig {
        window: 2000 * MTU,
        send_queue_packets: 2000,
        send_queue_bytes: u64::MAX,
        ..config(Mode::Rts)
    });
    let isn = isn_for_epoch(3);
    s.open_tunnel(1, isn);
    for i in 0..1100 {
        s.enqueue(0, 1, 1, i).unwrap();
    }
    s.handle_control(0, 1, &pull(1500));
    let tx = drain(&mut s, 0);
    let data: Vec<_> = tx.iter().filter(|t| t.payload.is_some()).collect();
    assert_eq!(data.len(), EPOCH_BLOCK as usize);
    assert_eq!(data.last().unwrap().header.seq, isn + EPOCH_BLOCK - 1);
    assert!(tx
        .iter()
        .all(|t| epoch_of(t.header.seq) == 3 && t.header.syn));
    s.handle_control(1, 1, &syn_ack(ControlKind::Ack, isn, 1500));
    let tx = drain(&mut s, 1);
    assert_eq!(tx.len(), 1100 - EPOCH_BLOCK as usize);
    assert!(tx.iter().all(|t| !t.header.syn));
}

#[test]
fn drop_tunnel_hands_back_everything_and_syncs_on_the_next_pull_number() {
    let mut s = loaded(Mode::Ndp, 6);
    drain(&mut s, 0);
    s.handle_control(1, 1, &control(ControlKind::Ack, 0, 3, 0));
    let mut back = s.drop_tunnel(1);
    back.sort_unstable();
    assert_eq!(back, [1, 2, 3, 4, 5]);
    assert_eq!(
        s.tunnel_state(1),
        Some(TxState::Closed { last_epoch: None })
    );
    s.enqueue(2, 1, FULL, 6).unwrap();
    assert!(drain(&mut s, 2)[0].header.syn);
    // The receiver's pull number 7 is the baseline: no credit from it.
    s.handle_control(3, 1, &pull(7));
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.highest_pull, st.credit), (7, i64::from(3 * MTU)));
    s.handle_control(4, 1, &pull(8));
    assert_eq!(s.tunnel(1).unwrap().credit, i64::from(4 * MTU));
}

#[test]
fn rst_for_a_packet_of_an_earlier_epoch_is_stale() {
    let mut s = loaded(Mode::Ndp, 3);
    drain(&mut s, 0);
    // The first RST restarts in epoch 1; the receiver RSTs the other two packets
    // of epoch 0 as well, and those must not restart the tunnel again.
    s.handle_control(1, 1, &control(ControlKind::Rst, 0, 0, 0));
    assert_eq!(s.tunnel_state(1), Some(TxState::SynSent { epoch: 1 }));
    s.handle_control(2, 1, &control(ControlKind::Rst, 1, 0, 0));
    s.handle_control(2, 1, &control(ControlKind::Rst, 2, 0, 0));
    assert_eq!(s.tunnel_state(1), Some(TxState::SynSent { epoch: 1 }));
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.stale_rsts, st.renumbered), (2, 3));
    // One for a packet of epoch 1 is current.
    s.handle_control(3, 1, &control(ControlKind::Rst, isn_for_epoch(1), 0, 0));
    assert_eq!(s.tunnel_state(1), Some(TxState::SynSent { epoch: 2 }));
}

#[test]
fn renumbering_keeps_the_initial_window_inside_the_block() {
    let mut s = Sender::new(SenderConfig {
        window: 2000 * MTU,
        send_queue_packets: 2000,
        send_queue_bytes: u64::MAX,
        ..config(Mode::Ndp)
    });
    s.open_tunnel(1, 0);
    s.handle_control(0, 1, &syn_ack(ControlKind::Ack, 0, 0));
    for i in 0..1100 {
        s.enqueue(0, 1, 1, i).unwrap();
    }
    assert_eq!(drain(&mut s, 0).len(), 1100);
    s.handle_control(1, 1, &control(ControlKind::Ack, 0, 0, 0));
    // The other 1099 are renumbered: 1024 fit in the block, 75 wait.
    s.handle_control(1, 1, &control(ControlKind::Rst, 5, 0, 0));
    let isn = isn_for_epoch(2);
    assert_eq!(s.tunnel_state(1), Some(TxState::SynSent { epoch: 2 }));
    let st = s.tunnel(1).unwrap();
    assert_eq!(st.renumbered, u64::from(EPOCH_BLOCK));
    assert_eq!(st.send_queue_bytes, 75 * u64::from(1 + OVERHEAD));
    let tx = drain(&mut s, 1);
    assert_eq!(tx.len(), EPOCH_BLOCK as usize);
    assert_eq!(tx[0].payload, Some(1));
    assert_eq!(tx.last().unwrap().header.seq, isn + EPOCH_BLOCK - 1);
    // Once established, the rest goes, in order.
    s.handle_control(2, 1, &syn_ack(ControlKind::Ack, isn, 0));
    let rest: Vec<_> = drain(&mut s, 2)
        .iter()
        .map(|t| t.payload.unwrap())
        .collect();
    assert_eq!(rest, (1025..1100).collect::<Vec<_>>());
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
fn send_queue_len_counts_packets_awaiting_credit() {
    let mut s = loaded(Mode::Rts, 5);
    assert_eq!(s.send_queue_len(1), 5);
    assert_eq!(s.send_queue_len(2), 0);
    drain(&mut s, 0);
    s.handle_control(1, 1, &pull(2));
    drain(&mut s, 1);
    assert_eq!(s.send_queue_len(1), 3);
}

#[test]
fn packets_written_one_by_one_past_the_window_ask_with_an_rts() {
    // A writer that trickles packets in: each is sent at once on the burst credit, so
    // none carries demand beyond itself. The first that finds the window all in
    // flight must tell the receiver, or the tunnel waits for the credit-loss timer.
    let mut s = Sender::new(config(Mode::Ndp));
    s.open_tunnel(1, 0);
    let mut sent = Vec::new();
    for i in 0..(W / MTU) + 1 {
        s.enqueue(0, 1, FULL, i).unwrap();
        sent.extend(drain(&mut s, 0));
    }
    let kinds: Vec<DataKind> = sent.iter().map(|t| t.header.kind).collect();
    assert_eq!(kinds.len(), (W / MTU) as usize + 1);
    assert!(kinds[..(W / MTU) as usize]
        .iter()
        .all(|&k| k == DataKind::Data));
    assert_eq!(kinds[(W / MTU) as usize], DataKind::Rts);
    assert_eq!(sent.last().unwrap().header.pull_target, 1);
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

#[test]
fn in_flight_total_follows_every_tunnel() {
    let mut s = Sender::new(config(Mode::Ndp));
    let sum = |s: &Sender<u32>| -> u64 {
        [1, 2]
            .iter()
            .filter_map(|&d| s.tunnel(d))
            .map(|t| t.in_flight_bytes)
            .sum()
    };
    for dst in [1, 2] {
        for i in 0..3 {
            s.enqueue(0, dst, FULL, 10 * dst + i).unwrap();
        }
    }
    drain(&mut s, 0);
    assert_eq!(s.in_flight_bytes(), u64::from(6 * MTU));
    assert_eq!(s.in_flight_bytes(), sum(&s));
    // An ACK, a NACK, an RTO and a dropped tunnel each take their packets out.
    let seq_of = |s: &mut Sender<u32>, dst| {
        s.enqueue(1, dst, FULL, 99).unwrap();
        let tx = drain(s, 1);
        tx.last().map(|t| t.header.seq).unwrap()
    };
    let seq = seq_of(&mut s, 1);
    assert_eq!(s.in_flight_bytes(), u64::from(7 * MTU));
    let mut ack = control(ControlKind::Ack, seq, 0, 0);
    ack.sender_id = 7;
    s.handle_control(2, 1, &ack);
    assert_eq!(s.in_flight_bytes(), u64::from(6 * MTU));
    assert_eq!(s.in_flight_bytes(), sum(&s));
    s.drop_tunnel(2);
    assert_eq!(s.in_flight_bytes(), u64::from(3 * MTU));
    s.handle_timeout(10 * RTO);
    assert_eq!(s.in_flight_bytes(), 0);
    assert_eq!(s.in_flight_bytes(), sum(&s));
    assert_eq!(s.peak_in_flight_bytes(), u64::from(7 * MTU));
}

#[test]
fn a_byte_limit_admits_many_small_packets_and_few_large_ones() {
    let mut s = Sender::new(SenderConfig {
        send_queue_packets: usize::MAX,
        send_queue_bytes: u64::from(4 * MTU),
        ..config(Mode::Rts)
    });
    // RTS mode: nothing leaves before credit, so the queue only fills.
    for i in 0..4 {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    assert!(matches!(
        s.enqueue(0, 1, FULL, 9),
        Err(EnqueueError::Backpressure(9))
    ));
    assert_eq!(s.send_queue_bytes(1), u64::from(4 * MTU));
    // 100-byte charged packets (no inner bytes): forty fit in the same space.
    for i in 0..40 {
        s.enqueue(0, 2, 0, i).unwrap();
    }
    assert!(s.enqueue(0, 2, 0, 99).is_err());
    assert_eq!(s.send_queue_len(2), 40);
}

#[test]
fn path_statistics_count_each_answer_against_the_path_it_came_back_from() {
    let mut s = Sender::new(SenderConfig {
        path_stats: true,
        ..config(Mode::Ndp)
    });
    s.open_tunnel(1, 0);
    for i in 0..4 {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    let tx = drain(&mut s, 0);
    assert_eq!(tx.len(), 4);
    let path = |seq: usize| usize::from(tx[seq].header.path_id);
    // Seq 0 ACKed after 500 ps, seq 1 NACKed, seq 2 ACKed after 700 ps, seq 3 lost.
    s.handle_control(500, 1, &control(ControlKind::Ack, 0, 1, 0));
    s.handle_control(600, 1, &control(ControlKind::Nack, 1, 2, 0));
    s.handle_control(700, 1, &control(ControlKind::Ack, 2, 3, 0));
    s.handle_timeout(RTO);
    let paths = s.path_stats(1).unwrap();
    assert_eq!(paths.len(), 8, "one entry per path id");
    let sent: u64 = paths.iter().map(|p| p.sent).sum();
    assert_eq!(sent, 4);
    // A tunnel cycles through a permutation: four packets, four distinct paths.
    assert_eq!(paths.iter().filter(|p| p.sent == 1).count(), 4);
    let p0 = paths[path(0)];
    assert_eq!(
        (p0.acked, p0.rtt_samples, p0.min_rtt, p0.srtt),
        (1, 1, 500, 500)
    );
    assert_eq!((paths[path(1)].trimmed, paths[path(1)].acked), (1, 0));
    assert_eq!(paths[path(2)].mean_rtt(), Some(700));
    assert_eq!((paths[path(3)].timed_out, paths[path(3)].acked), (1, 0));

    // The resend of seq 1 goes out on a fresh path; its ACK counts there, with no
    // RTT sample (Karn's rule).
    let resend = drain(&mut s, RTO)
        .into_iter()
        .find(|t| t.header.seq == 1)
        .expect("seq 1 is resent");
    let on = usize::from(resend.header.path_id);
    let before = s.path_stats(1).unwrap()[on];
    s.handle_control(RTO + 900, 1, &control(ControlKind::Ack, 1, 4, 0));
    let after = s.path_stats(1).unwrap()[on];
    assert_eq!(after.acked, before.acked + 1);
    assert_eq!(after.rtt_samples, before.rtt_samples);
}

#[test]
fn path_statistics_are_off_unless_asked_for() {
    let mut s = loaded(Mode::Ndp, 2);
    drain(&mut s, 0);
    assert_eq!(s.path_stats(1), Some(&[][..]));
    assert_eq!(s.path_stats(2), None, "no tunnel");
}

/// A path-avoiding NDP sender (4-MTU window, 8 path ids) with `n` packets queued for
/// peer 1, its first window sent at time 0.
fn avoiding(avoid: Time, n: u32) -> (Sender<u32>, Vec<Transmit<u32>>) {
    let mut s = Sender::new(SenderConfig {
        path_avoidance: avoid,
        send_queue_packets: 64,
        ..config(Mode::Ndp)
    });
    s.open_tunnel(1, 0);
    for i in 0..n {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    let burst = drain(&mut s, 0);
    (s, burst)
}

/// ACKs packets `seqs` one by one at `now`, each with one more PULL (counting on
/// from `pulls`), and returns what the sender sent in answer.
fn ack_with_pulls(
    s: &mut Sender<u32>,
    now: Time,
    seqs: std::ops::Range<u32>,
    pulls: u32,
) -> Vec<Transmit<u32>> {
    let mut out = Vec::new();
    for (k, seq) in seqs.enumerate() {
        s.handle_control(
            now,
            1,
            &control(ControlKind::Ack, seq, pulls + k as u32 + 1, 0),
        );
        out.extend(drain(s, now));
    }
    out
}

#[test]
fn path_avoidance_sprays_around_a_path_that_trimmed_until_it_expires() {
    let avoid = 1_000;
    let (mut s, burst) = avoiding(avoid, 40);
    assert_eq!(burst.len(), 4);
    let bad = burst[0].header.path_id;
    // Seq 0 comes back trimmed at time 10 with a PULL: its resend and the next 12
    // packets, all sent before 10 + avoid, keep off its path.
    s.handle_control(10, 1, &control(ControlKind::Nack, 0, 1, 0));
    let mut during = drain(&mut s, 10);
    during.extend(ack_with_pulls(&mut s, 20, 1..13, 1));
    assert_eq!(during.len(), 13);
    assert_eq!(during[0].header.seq, 0, "the resend goes first");
    assert!(during.iter().all(|t| t.header.path_id != bad), "{during:?}");
    // Once the avoidance has run out the path is back in the rotation: a full
    // cycle of the 8 paths uses it.
    let after = ack_with_pulls(&mut s, 10 + avoid, 13..21, 13);
    assert_eq!(after.len(), 8);
    assert!(after.iter().any(|t| t.header.path_id == bad), "{after:?}");
}

#[test]
fn a_loss_found_by_the_loss_window_counts_against_its_path_and_is_avoided() {
    let mut s = Sender::new(SenderConfig {
        path_avoidance: 1_000,
        path_stats: true,
        loss_reorder_window: 5,
        send_queue_packets: 64,
        ..config(Mode::Ndp)
    });
    s.open_tunnel(1, 0);
    for i in 0..40 {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    // The NDP burst (seqs 0-3) goes at 0; seq 0's ACK at 20 brings a PULL, which
    // pays for seq 4.
    let burst = drain(&mut s, 0);
    let bad = burst[2].header.path_id;
    s.handle_control(20, 1, &control(ControlKind::Ack, 0, 1, 0));
    assert_eq!(drain(&mut s, 20).len(), 1);
    // Seq 4, sent at 20, is ACKed at 30: seqs 1-3, sent at 0, are more than 5
    // older. They go again first, and none of them uses seq 2's path.
    s.handle_control(30, 1, &control(ControlKind::Ack, 4, 4, 0));
    assert_eq!(s.tunnel(1).unwrap().reorder_losses, 3);
    assert_eq!(s.path_stats(1).unwrap()[usize::from(bad)].timed_out, 1);
    let resent = drain(&mut s, 30);
    assert_eq!(
        resent.iter().map(|t| t.header.seq).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(resent.iter().all(|t| t.header.path_id != bad), "{resent:?}");
}

#[test]
fn path_avoidance_off_keeps_every_path_in_turn() {
    let (mut s, burst) = avoiding(0, 40);
    let bad = burst[0].header.path_id;
    s.handle_control(10, 1, &control(ControlKind::Nack, 0, 1, 0));
    let mut next = drain(&mut s, 10);
    next.extend(ack_with_pulls(&mut s, 20, 1..13, 1));
    assert!(next.iter().any(|t| t.header.path_id == bad), "{next:?}");
}

#[test]
fn path_avoidance_of_every_path_sprays_as_if_none_were_avoided() {
    let (mut s, burst) = avoiding(1_000_000, 40);
    // Trim the whole window, then each resend, until all 8 paths are avoided.
    let mut trimmed: std::collections::HashSet<u16> = std::collections::HashSet::new();
    let mut pending = burst;
    let mut pulls = 0;
    for now in 1..20 {
        for t in &pending {
            trimmed.insert(t.header.path_id);
            pulls += 1;
            s.handle_control(now, 1, &control(ControlKind::Nack, t.header.seq, pulls, 0));
        }
        pending = drain(&mut s, now);
        if trimmed.len() == 8 {
            break;
        }
    }
    assert_eq!(trimmed.len(), 8, "every path trimmed a packet");
    // The tunnel still sends: avoiding every path is avoiding none.
    assert!(!pending.is_empty());
    let more = ack_with_pulls(&mut s, 30, 0..4, pulls);
    assert!(!more.is_empty());
}

#[test]
fn a_destination_with_its_own_window_bursts_asks_and_holds_only_that() {
    let mut s = Sender::new(config(Mode::Ndp));
    s.set_window(2, 2 * MTU);
    assert_eq!((s.window(1), s.window(2)), (W, 2 * MTU));
    for dst in [1, 2] {
        for i in 0..6 {
            s.enqueue(0, dst, FULL, dst * 10 + i).unwrap();
        }
    }
    let sent = drain(&mut s, 0);
    let count = |dst| sent.iter().filter(|t| t.dst == dst).count();
    // NDP mode bursts one window: four packets to 1, two to 2.
    assert_eq!((count(1), count(2)), (4, 2));
    // Pull targets ask for the backlog up to the window, no further.
    let last_target = |dst| {
        sent.iter()
            .rev()
            .find(|t| t.dst == dst)
            .map(|t| t.header.pull_target)
            .unwrap()
    };
    assert_eq!(last_target(1), 2, "backlog 2 packets, within W");
    assert_eq!(last_target(2), 2, "backlog 4 packets, capped at 2");
    // Credit from many PULLs is clamped at the tunnel's window.
    s.handle_control(1, 2, &pull(10));
    assert_eq!(s.tunnel(2).unwrap().credit, i64::from(2 * MTU));
    // Shrinking an existing tunnel's window gives up credit beyond it.
    s.set_window(2, MTU);
    assert_eq!(s.tunnel(2).unwrap().credit, i64::from(MTU));
}

#[test]
fn an_explicit_initial_window_shrinks_to_a_smaller_tunnel_window() {
    let mut cfg = config(Mode::Rts);
    cfg.initial_window = Some(3 * MTU);
    let mut s = Sender::new(cfg);
    s.set_window(1, 2 * MTU);
    for i in 0..5 {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    let data = drain(&mut s, 0)
        .iter()
        .filter(|t| t.header.kind == DataKind::Data)
        .count();
    assert_eq!(data, 2);
}

#[test]
#[should_panic(expected = "at least one MTU")]
fn a_window_below_one_mtu_is_refused() {
    Sender::<u32>::new(config(Mode::Ndp)).set_window(1, MTU - 1);
}
