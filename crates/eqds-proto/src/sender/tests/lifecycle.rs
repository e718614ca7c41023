//! The tunnel state machine driven by the sender (Appendix A): epochs, SYN, RST.

use super::*;

#[test]
fn open_tunnel_sets_the_first_sequence_number() {
    let mut s = Sender::new(config(Mode::Ndp));
    assert!(s.open_tunnel(1, 5 << 10));
    assert!(!s.open_tunnel(1, 0));
    s.enqueue(0, 1, FULL, 0).unwrap();
    assert_eq!(drain(&mut s, 0)[0].header.seq, 5 << 10);
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

/// A sender whose window and send queue hold 2000 packets: room to number more
/// packets than an epoch block has.
fn roomy(mode: Mode) -> Sender<u32> {
    Sender::new(SenderConfig {
        window: 2000 * MTU,
        send_queue_packets: 2000,
        send_queue_bytes: u64::MAX,
        ..config(mode)
    })
}

/// A [`roomy`] NDP sender with its tunnel to peer 1 established in epoch 0 and `n`
/// one-byte packets (payloads 0..n) queued there at time 0.
fn established_with_tiny_packets(n: u32) -> Sender<u32> {
    let mut s = roomy(Mode::Ndp);
    s.open_tunnel(1, 0);
    s.handle_control(0, 1, &syn_ack(ControlKind::Ack, 0, 0));
    for i in 0..n {
        s.enqueue(0, 1, 1, i).unwrap();
    }
    s
}

#[test]
fn restarted_epoch_starts_after_every_sequence_number_used() {
    // Established epoch 0 ran past its block: 1030 packets numbered.
    let mut s = established_with_tiny_packets(1030);
    assert_eq!(drain(&mut s, 0).len(), 1030);
    s.handle_control(1, 1, &control(ControlKind::Rst, 0, 0, 0));
    // Epoch 1's block holds seqs 1024..1029 already used: epoch 2 it is.
    assert_eq!(s.tunnel_state(1), Some(TxState::SynSent { epoch: 2 }));
}

#[test]
fn syn_sent_tunnel_stops_at_the_end_of_the_epoch_block() {
    let mut s = roomy(Mode::Rts);
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
    let mut s = established_with_tiny_packets(1100);
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
