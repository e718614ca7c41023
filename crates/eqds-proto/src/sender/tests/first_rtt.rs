//! A tunnel's first round trip and restarts: burst or RTS, initial window, lookahead.

use super::*;

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
        // packet that reaches the receiver, not a literal W beyond the pull number.
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

/// An RTS-mode tunnel with `thin_stream_credit` and a lookahead of one MTU: one
/// full packet sent and its PULLs in (one MTU of credit held after it), then an
/// ACK at 1000 that leaves it idle and tells it the receiver is busy for 1 ms.
fn thin_stream_tunnel() -> Sender<u32> {
    let mut s = Sender::new(SenderConfig {
        demand_lookahead: MTU,
        thin_stream_credit: true,
        ..config(Mode::Rts)
    });
    s.open_tunnel(1, 0);
    s.enqueue(0, 1, FULL, 0).unwrap();
    drain(&mut s, 0);
    s.handle_control(0, 1, &pull(1));
    drain(&mut s, 0);
    s.handle_control(0, 1, &pull(2));
    s.handle_control(1_000, 1, &control(ControlKind::Ack, 0, 2, 1_000));
    assert_eq!(s.tunnel(1).unwrap().credit, i64::from(MTU));
    s
}

#[test]
fn a_thin_stream_into_a_busy_receiver_spends_held_credit_not_an_rts_per_packet() {
    let mut s = thin_stream_tunnel();
    // Small packets (a TCP ACK each) long after the last control packet, each on
    // an idle tunnel: each goes on the MTU held, none asks for more.
    let small = MTU / 5;
    for (i, at) in [10_000_000, 20_000_000, 30_000_000].into_iter().enumerate() {
        s.enqueue(at, 1, small - OVERHEAD, 1 + i as u32).unwrap();
        let tx = drain(&mut s, at);
        assert_eq!(tx.len(), 1);
        assert_eq!(tx[0].header.kind, DataKind::Data, "packet {i}: no RTS");
        assert_eq!(tx[0].header.pull_target, 2, "packet {i}: no PULL asked for");
        let seq = tx[0].header.seq;
        s.handle_control(at + 1_000, 1, &control(ControlKind::Ack, seq, 2, 1_000));
    }
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.thin_restarts, st.rts_sent), (3, 1));
    assert_eq!(
        st.credit,
        i64::from(MTU - 3 * small),
        "what is held, set aside"
    );
}

#[test]
fn a_full_packet_or_a_batch_of_small_ones_gets_no_thin_credit_burst() {
    // A full packet restarting the tunnel asks with an RTS, as without the option.
    let mut s = thin_stream_tunnel();
    s.enqueue(10_000_000, 1, FULL, 1).unwrap();
    let tx = drain(&mut s, 10_000_000);
    assert_eq!(tx[0].header.kind, DataKind::Rts);
    // Three small packets at once: the first goes on what is held, the rest wait
    // for the PULLs its target asks for, rather than bursting the stale credit.
    let mut s = thin_stream_tunnel();
    let small = MTU / 5 - OVERHEAD;
    for i in 0..3 {
        s.enqueue(10_000_000, 1, small, 1 + i).unwrap();
    }
    let tx = drain(&mut s, 10_000_000);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.kind, DataKind::Data);
    assert_eq!(tx[0].header.pull_target, 3, "one PULL for the two waiting");
    assert_eq!(s.tunnel(1).unwrap().thin_restarts, 1);
}
