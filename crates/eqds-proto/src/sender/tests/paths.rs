//! Spraying over path ids: the per-tunnel permutation, statistics and avoidance.

use super::*;

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
