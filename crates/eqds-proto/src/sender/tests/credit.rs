//! Credit from PULLs: pull numbers and targets, the window cap, credit-loss timer.

use super::*;

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
    // A huge jump (half the space) is not credit: the first number a tunnel hears,
    // it is a receiver's long history, and the baseline.
    s.handle_control(1, 1, &pull(1 << 31));
    let st = s.tunnel(1).unwrap();
    assert_eq!(
        (st.credit, st.highest_pull, st.pull_rebases),
        (0, 1 << 31, 1)
    );
    // Half the space on from there is neither credit nor, without evidence of a
    // restart, a new count.
    s.handle_control(1, 1, &pull(0));
    let st = s.tunnel(1).unwrap();
    assert_eq!(
        (st.credit, st.highest_pull, st.pull_rebases),
        (0, 1 << 31, 1)
    );
    // u32::MAX is one "before" 0 on a fresh tunnel: within a window behind, it
    // could be an overtaken packet, and changes nothing.
    let mut s = loaded(Mode::Rts, 4);
    drain(&mut s, 0);
    s.handle_control(1, 1, &pull(u32::MAX));
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.credit, st.highest_pull), (0, 0));
}

/// A sender that restarted against a receiver whose count for it lies more than
/// half the serial space from zero: the first number it hears, behind zero, is the
/// baseline (the review of issue 24 found such a tunnel ignored every PULL).
#[test]
fn a_fresh_tunnel_takes_a_count_past_half_the_space_as_its_baseline() {
    let mut s = loaded(Mode::Rts, 6);
    drain(&mut s, 0);
    let n = 3u32 << 30;
    s.handle_control(1, 1, &pull(n));
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.highest_pull, st.credit, st.pull_rebases), (n, 0, 1));
    let rts = drain(&mut s, 1);
    assert_eq!(rts[0].header.pull_target, n + 4);
    s.handle_control(2, 1, &pull(n + 2));
    assert_eq!(drain(&mut s, 2).len(), 2);
}

/// The old count stops being special one quarantine after the rebase: the new count
/// reaching its neighbourhood later is credit, not the old count coming back.
#[test]
fn the_old_count_is_forgotten_after_its_quarantine() {
    let mut s = loaded(Mode::Rts, 6);
    drain(&mut s, 0);
    s.handle_control(1, 1, &pull(1000));
    drain(&mut s, 1);
    s.handle_control(2, 1, &pull(1002));
    let sent = drain(&mut s, 2);
    s.handle_control(3, 1, &control(ControlKind::Rst, sent[0].header.seq, 3, 0));
    assert_eq!(s.tunnel(1).unwrap().highest_pull, 3);
    drain(&mut s, 3);
    // Long after the quarantine, a number of the new count.
    s.handle_control(100 * RTO, 1, &pull(4));
    let st = s.tunnel(1).unwrap();
    assert_eq!(
        (st.highest_pull, st.pulls_credited, st.pull_rebases),
        (4, 3, 2)
    );
    // Numbers near 1002 are now plain numbers: far past our targets, a new
    // baseline; never the "old count alive" rule.
    s.handle_control(100 * RTO + 1, 1, &pull(1001));
    assert_eq!(s.tunnel(1).unwrap().stale_pulls, 0);
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

/// A tunnel with backlog whose one packet was paid for and then ACKed at 20 ps by a
/// receiver saying it stays busy for `busy_ns` more: stalled from then on.
fn stalled_behind_a_busy_receiver(busy_ns: u32) -> Sender<u32> {
    let mut s = loaded(Mode::Rts, 3);
    drain(&mut s, 0);
    s.handle_control(10, 1, &pull(1));
    drain(&mut s, 10);
    s.handle_control(20, 1, &control(ControlKind::Ack, 0, 1, busy_ns));
    s
}

#[test]
fn a_busy_receiver_gets_its_busy_time_before_a_stalled_tunnel_asks_again() {
    // Busy for 10 us: its next PULL to us may take that long in a large incast.
    let mut s = stalled_behind_a_busy_receiver(10_000);
    let busy_until = 20 + 10_000 * 1_000;
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
fn a_long_busy_time_delays_the_credit_loss_rts_by_eight_timeouts_at_most() {
    // Busy for 5 ms, the PULLs owed to every sender: a PULL owed to this tunnel
    // comes within one round of them, far sooner, so a lost one is repaired after
    // BUSY_WAIT_TIMEOUTS credit-loss timeouts (2 RTO each here).
    let mut s = stalled_behind_a_busy_receiver(5_000_000);
    let capped = 20 + super::super::tunnel::BUSY_WAIT_TIMEOUTS * 2 * RTO;
    assert_eq!(s.poll_timeout(), Some(capped));
    s.handle_timeout(capped);
    assert_eq!(drain(&mut s, capped)[0].header.kind, DataKind::Rts);
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
    // Target 2; PULL 6 grants 6 MTUs, a window more than was asked for.
    s.handle_control(1, 1, &pull(6));
    let st = s.tunnel(1).unwrap();
    assert_eq!(st.credit, i64::from(W));
    assert_eq!(st.credit_clamped_bytes, u64::from(2 * MTU));
}

/// A sender that restarted (a fresh tunnel) talking to a receiver that kept counting
/// for its previous incarnation: sender.rs, "Pull numbers across restarts".
fn following_a_long_count(mode: Mode) -> Sender<u32> {
    let mut s = loaded(mode, 6);
    let first = drain(&mut s, 0);
    assert!(first[0].header.pull_target <= 4);
    // The receiver's count for us is 1000: far past any target we sent. It is the
    // baseline, not credit (crediting it would burst a window nobody paced).
    s.handle_control(1, 1, &pull(1000));
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.highest_pull, st.pull_rebases), (1000, 1));
    assert_eq!(st.pulls_credited, 0);
    s
}

#[test]
fn a_pull_number_far_past_every_target_is_a_baseline_not_credit() {
    let mut s = following_a_long_count(Mode::Rts);
    assert_eq!(s.tunnel(1).unwrap().credit, 0);
    // Stalled on the new count: an RTS asks at once, in its numbers.
    let rts = drain(&mut s, 1);
    assert_eq!(rts.len(), 1);
    assert_eq!(rts[0].header.kind, DataKind::Rts);
    assert_eq!(rts[0].header.pull_target, 1004);
    s.handle_control(2, 1, &pull(1002));
    assert_eq!(drain(&mut s, 2).len(), 2);
    assert_eq!(s.tunnel(1).unwrap().pulls_credited, 2);
}

#[test]
fn an_rst_far_behind_moves_to_the_restarted_receivers_count() {
    let mut s = following_a_long_count(Mode::Rts);
    drain(&mut s, 1);
    s.handle_control(2, 1, &pull(1002));
    let sent = drain(&mut s, 2);
    assert_eq!(sent.len(), 2);
    // The receiver restarts and answers our data with an RST: its count is 3.
    let rst = control(ControlKind::Rst, sent[0].header.seq, 3, 0);
    s.handle_control(3, 1, &rst);
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.highest_pull, st.pull_rebases, st.epochs), (3, 2, 2));
    // Its PULLs are credit again, one MTU each.
    drain(&mut s, 3);
    s.handle_control(4, 1, &pull(4));
    assert_eq!(s.tunnel(1).unwrap().pulls_credited, 3);
    // A PULL of the old incarnation, still on its way, changes nothing...
    s.handle_control(5, 1, &pull(1003));
    let st = s.tunnel(1).unwrap();
    assert_eq!(
        (st.highest_pull, st.stale_pulls, st.pull_rebases),
        (4, 1, 2)
    );
    // ...but one a retransmit timeout later means the old count is alive: the RST
    // was stale, and the tunnel goes back to it.
    s.handle_control(100 * RTO, 1, &pull(1004));
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.highest_pull, st.pull_rebases), (1004, 3));
}

#[test]
fn a_pull_far_behind_is_an_overtaken_packet_without_evidence_of_a_restart() {
    let mut s = following_a_long_count(Mode::Ndp);
    // A plain PULL or ACK far behind: overtaken, not a restart.
    s.handle_control(2, 1, &pull(3));
    s.handle_control(2, 1, &control(ControlKind::Ack, 0, 3, 0));
    // Nor a SYN-ACK in the tunnel's first epoch: its initial window's SYN-ACKs may
    // be overtaken by PULLs.
    s.handle_control(2, 1, &syn_ack(ControlKind::Ack, 0, 3));
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.highest_pull, st.pull_rebases, st.epochs), (1000, 1, 1));
}

#[test]
fn a_restarting_tunnel_takes_a_pull_far_behind_as_the_new_count() {
    let mut s = following_a_long_count(Mode::Rts);
    drain(&mut s, 1);
    s.handle_control(2, 1, &pull(1002));
    let sent = drain(&mut s, 2);
    // The receiver closes our tunnel as it shuts down: its RST carries its old
    // count, so nothing to rebase, but the tunnel restarts in a new epoch.
    let rst = control(ControlKind::Rst, sent[0].header.seq, 1002, 0);
    s.handle_control(3, 1, &rst);
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.highest_pull, st.pull_rebases, st.epochs), (1002, 1, 2));
    assert_eq!(s.tunnel_state(1), Some(TxState::SynSent { epoch: 1 }));
    // The new receiver answers the SYN-SENT tunnel's RTS with a PULL of its count.
    drain(&mut s, 3);
    s.handle_control(4, 1, &pull(1));
    let st = s.tunnel(1).unwrap();
    assert_eq!((st.highest_pull, st.pull_rebases), (1, 2));
}
