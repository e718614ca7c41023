//! Unit tests of the receiving EQIF's credit scheduler: answers, pacing, and the
//! three ASL policies.

use super::*;
use crate::wire::NextProto;

/// 10 Gbps and 1500-byte MTUs: one MTU-time is 1.2 us.
const MTU_TIME: Time = 1_200_000;

fn config(policy: Policy) -> ReceiverConfig {
    ReceiverConfig {
        link_rate_bps: 10_000_000_000,
        mtu: 1500,
        window: 50 * 1500,
        pacing_permille: 1000,
        pull_burst: 1,
        policy,
        ..ReceiverConfig::default()
    }
}

fn data(seq: u32, pull_target: u32) -> DataHeader {
    DataHeader {
        kind: DataKind::Data,
        syn: false,
        trimmed: false,
        unordered: false,
        next_proto: NextProto::Ipv4,
        seq,
        pull_target,
        path_id: 0,
        sender_id: 3,
    }
}

fn trimmed(seq: u32, pull_target: u32) -> DataHeader {
    DataHeader {
        trimmed: true,
        ..data(seq, pull_target)
    }
}

fn rts(seq: u32, pull_target: u32) -> DataHeader {
    DataHeader {
        kind: DataKind::Rts,
        next_proto: NextProto::None,
        ..data(seq, pull_target)
    }
}

fn drain(r: &mut Receiver, now: Time) -> Vec<(PeerId, ControlHeader)> {
    std::iter::from_fn(|| r.poll_control(now)).collect()
}

/// Runs the pacer exactly on time for `n` PULLs (or until no sender is owed one) and
/// returns (time, destination) of each.
fn run_pulls(r: &mut Receiver, n: usize) -> Vec<(Time, PeerId)> {
    let mut out = Vec::new();
    while out.len() < n {
        let Some(t) = r.poll_timeout() else { break };
        r.handle_timeout(t);
        for (dst, h) in drain(r, t) {
            assert_eq!(h.kind, ControlKind::Pull);
            out.push((t, dst));
        }
    }
    out
}

fn count(pulls: &[(Time, PeerId)], peer: PeerId) -> usize {
    pulls.iter().filter(|&&(_, p)| p == peer).count()
}

#[test]
fn every_packet_is_answered_at_once() {
    let mut r = Receiver::new(config(Policy::Fifo));
    r.handle_data(0, 1, &data(0, 0), 1000);
    r.handle_data(0, 1, &trimmed(1, 0), 0);
    r.handle_data(0, 1, &rts(2, 0), 0);
    let answers = drain(&mut r, 0);
    let kinds: Vec<(ControlKind, u32)> = answers.iter().map(|(_, h)| (h.kind, h.ack_no)).collect();
    assert_eq!(
        kinds,
        vec![
            (ControlKind::Ack, 0),
            (ControlKind::Nack, 1),
            // An RTS gets the pull number back, never an ACK of a seq it did not use.
            (ControlKind::Pull, 0),
        ]
    );
    assert!(answers.iter().all(|&(dst, h)| dst == 1 && h.sender_id == 3));
    let st = r.sender(1).unwrap();
    assert_eq!(
        (
            st.data_packets,
            st.trimmed_packets,
            st.rts_packets,
            st.payload_bytes
        ),
        (1, 1, 1, 1000)
    );
    assert_eq!(r.poll_timeout(), None, "no demand, no PULL timer");
}

#[test]
fn pulls_are_paced_at_exactly_one_per_mtu_time() {
    let mut r = Receiver::new(config(Policy::Fifo));
    assert_eq!(r.pull_interval(), MTU_TIME);
    let t0 = 5_000;
    r.handle_data(t0, 1, &data(0, 10), 1000);
    drain(&mut r, t0);
    let pulls = run_pulls(&mut r, 100);
    let times: Vec<Time> = pulls.iter().map(|&(t, _)| t).collect();
    let expected: Vec<Time> = (0..10).map(|i| t0 + i * MTU_TIME).collect();
    assert_eq!(times, expected, "ten PULLs, one per MTU-time, then none");
    assert_eq!(r.poll_timeout(), None);
    let st = r.sender(1).unwrap();
    assert_eq!((st.pulls_sent, st.active), (10, false));

    // Half the rate: twice the interval.
    let mut cfg = config(Policy::Fifo);
    cfg.pacing_permille = 500;
    assert_eq!(Receiver::new(cfg).pull_interval(), 2 * MTU_TIME);
}

#[test]
fn unpulled_bytes_on_the_link_delay_the_next_pull_only_while_pacing() {
    let mut r = Receiver::new(config(Policy::Fifo));
    // Nobody owed: the link is not full of pulled data, nothing to make room for.
    r.charge_unpulled(1500);
    let t0 = 5_000;
    r.handle_data(t0, 1, &data(0, 4), 1000);
    drain(&mut r, t0);
    assert_eq!(r.poll_timeout(), Some(t0));
    // Two 75-byte control packets arrive: a tenth of an MTU-time later.
    r.charge_unpulled(75);
    r.charge_unpulled(75);
    let times: Vec<Time> = run_pulls(&mut r, 4).iter().map(|&(t, _)| t).collect();
    let first = t0 + MTU_TIME / 10;
    let expected: Vec<Time> = (0..4).map(|i| first + i * MTU_TIME).collect();
    assert_eq!(times, expected);
}

#[test]
fn pull_numbers_count_up_in_the_headers() {
    let mut r = Receiver::new(config(Policy::Fifo));
    r.handle_data(0, 1, &data(0, 3), 1000);
    drain(&mut r, 0);
    let mut numbers = Vec::new();
    while let Some(t) = r.poll_timeout() {
        r.handle_timeout(t);
        numbers.extend(drain(&mut r, t).iter().map(|(_, h)| h.pull_no));
    }
    assert_eq!(numbers, vec![1, 2, 3]);
    // Later ACKs carry the cumulative number, repairing lost PULLs.
    r.handle_data(10 * MTU_TIME, 1, &data(1, 3), 1000);
    assert_eq!(drain(&mut r, 10 * MTU_TIME)[0].1.pull_no, 3);
}

#[test]
fn a_late_timer_catches_up_only_within_the_burst_allowance() {
    for (burst, expected) in [(1, 1), (3, 3)] {
        let mut cfg = config(Policy::Fifo);
        cfg.pull_burst = burst;
        let mut r = Receiver::new(cfg);
        r.handle_data(0, 1, &data(0, 20), 1000);
        drain(&mut r, 0);
        r.handle_timeout(0);
        assert_eq!(drain(&mut r, 0).len(), 1);
        // The timer fires ten MTU-times late.
        let late = 10 * MTU_TIME;
        r.handle_timeout(late);
        assert_eq!(drain(&mut r, late).len(), expected, "burst {burst}");
        assert_eq!(r.poll_timeout(), Some(late + MTU_TIME));
    }
}

#[test]
fn fifo_policy_shares_round_robin_among_three_senders() {
    let mut r = Receiver::new(config(Policy::Fifo));
    for peer in [1, 2, 3] {
        r.handle_data(0, peer, &data(0, 20), 1000);
    }
    drain(&mut r, 0);
    let pulls = run_pulls(&mut r, 30);
    let order: Vec<PeerId> = pulls.iter().map(|&(_, p)| p).collect();
    assert_eq!(order, [1, 2, 3].repeat(10));
}

#[test]
fn weighted_policy_splits_two_to_one() {
    let mut r = Receiver::new(config(Policy::Weighted));
    r.set_weight(1, 2);
    r.set_weight(2, 1);
    for peer in [1, 2] {
        r.handle_data(0, peer, &data(0, 40), 1000);
    }
    drain(&mut r, 0);
    let pulls = run_pulls(&mut r, 30);
    assert_eq!((count(&pulls, 1), count(&pulls, 2)), (20, 10));
    // The split holds over every window of three PULLs, not just on average.
    for w in pulls.chunks(3) {
        assert_eq!(count(w, 1), 2, "{pulls:?}");
    }
}

#[test]
fn weighted_policy_gives_a_returning_sender_no_banked_share() {
    let mut r = Receiver::new(config(Policy::Weighted));
    r.handle_data(0, 1, &data(0, 40), 1000);
    drain(&mut r, 0);
    run_pulls(&mut r, 20);
    // Sender 2 was idle while 1 used the link alone: from now they alternate.
    let now = r.poll_timeout().unwrap();
    r.handle_data(now, 2, &data(0, 40), 1000);
    drain(&mut r, now);
    let pulls = run_pulls(&mut r, 10);
    assert_eq!((count(&pulls, 1), count(&pulls, 2)), (5, 5));
}

#[test]
fn strict_priority_serves_the_lower_class_first() {
    let mut r = Receiver::new(config(Policy::StrictPriority));
    r.set_class(1, 1);
    r.set_class(2, 0);
    r.set_class(3, 0);
    for peer in [1, 2, 3] {
        r.handle_data(0, peer, &data(0, 5), 1000);
    }
    drain(&mut r, 0);
    let order: Vec<PeerId> = run_pulls(&mut r, 15).iter().map(|&(_, p)| p).collect();
    // Class 0 round robin until its demand is met, then class 1.
    let mut expected = [2, 3].repeat(5);
    expected.extend([1; 5]);
    assert_eq!(order, expected);
}

#[test]
fn demand_met_leaves_the_list_and_new_demand_returns() {
    let mut r = Receiver::new(config(Policy::Fifo));
    r.handle_data(0, 1, &data(0, 2), 1000);
    drain(&mut r, 0);
    assert_eq!(run_pulls(&mut r, 10).len(), 2);
    assert!(!r.sender(1).unwrap().active);
    // An older packet with a lower target changes nothing (targets only grow).
    r.handle_data(10 * MTU_TIME, 1, &data(0, 1), 1000);
    drain(&mut r, 10 * MTU_TIME);
    assert_eq!(r.poll_timeout(), None);
    // A trimmed header with a higher target re-activates the sender; the idle pacer
    // saved nothing up, so the first PULL goes now and the next one MTU-time later.
    let t = 20 * MTU_TIME;
    r.handle_data(t, 1, &trimmed(1, 4), 0);
    assert_eq!(drain(&mut r, t)[0].1.kind, ControlKind::Nack);
    assert!(r.sender(1).unwrap().active);
    assert_eq!(r.poll_timeout(), Some(t));
    let pulls = run_pulls(&mut r, 10);
    assert_eq!(pulls, vec![(t, 1), (t + MTU_TIME, 1)]);
}

#[test]
fn busy_time_is_the_owed_pulls_times_the_mtu_time() {
    let mut r = Receiver::new(config(Policy::Fifo));
    r.handle_data(0, 1, &data(0, 3), 1000);
    r.handle_data(0, 2, &data(0, 5), 1000);
    assert_eq!(r.busy_time_ns(), 8 * 1_200);
    let answers = drain(&mut r, 0);
    assert!(answers.iter().all(|(_, h)| h.busy_time_ns == 8 * 1_200));
    r.handle_timeout(0);
    let (_, pull) = drain(&mut r, 0)[0];
    assert_eq!(pull.busy_time_ns, 7 * 1_200, "the PULL itself is paid");
}

#[test]
fn a_target_beyond_one_window_is_cut_to_the_window() {
    let mut r = Receiver::new(config(Policy::Fifo));
    r.handle_data(0, 1, &data(0, 1_000), 1000);
    let st = r.sender(1).unwrap();
    assert_eq!((st.pull_target, st.targets_capped), (50, 1));
    // Targets compare in serial order: one "before" 0 is no demand.
    let mut r = Receiver::new(config(Policy::Fifo));
    r.handle_data(0, 1, &data(0, u32::MAX), 1000);
    assert_eq!(r.sender(1).unwrap().pull_target, 0);
}

fn coalescing(n: u32) -> Receiver {
    Receiver::new(ReceiverConfig {
        ack_coalesce: n,
        ack_delay: 5 * MTU_TIME,
        ..config(Policy::Fifo)
    })
}

#[test]
fn deferred_acks_go_cumulative_every_n_packets() {
    let mut r = coalescing(4);
    for seq in 0..3 {
        r.account(0, 1, &data(seq, 0), 1000);
        r.defer_ack(0, 1, seq);
    }
    assert!(
        drain(&mut r, 0).is_empty(),
        "three packets stay unacknowledged"
    );
    r.account(0, 1, &data(3, 0), 1000);
    r.defer_ack(0, 1, 3);
    let out = drain(&mut r, 0);
    assert_eq!(out.len(), 1);
    let h = out[0].1;
    assert_eq!(
        (h.kind, h.ack_no, h.cumulative),
        (ControlKind::Ack, 3, true)
    );
}

#[test]
fn a_deferred_ack_rides_the_next_pull_to_its_sender() {
    let mut r = coalescing(8);
    // Sender 1 wants two PULLs; its packet 0 is ACKed lazily.
    r.account(0, 1, &data(0, 2), 1000);
    r.defer_ack(0, 1, 0);
    assert!(drain(&mut r, 0).is_empty());
    r.handle_timeout(0);
    let out = drain(&mut r, 0);
    assert_eq!(out.len(), 1, "one packet is both the ACK and the PULL");
    let h = out[0].1;
    assert_eq!(
        (h.kind, h.ack_no, h.cumulative, h.pull_no),
        (ControlKind::Ack, 0, true, 1)
    );
    // The next PULL has no ACK to carry.
    r.handle_timeout(MTU_TIME);
    let out = drain(&mut r, MTU_TIME);
    assert_eq!((out[0].1.kind, out[0].1.pull_no), (ControlKind::Pull, 2));
}

#[test]
fn a_deferred_ack_leaves_after_the_delay_without_a_pull() {
    let mut r = coalescing(8);
    r.account(7, 1, &data(0, 0), 1000);
    r.defer_ack(7, 1, 0);
    assert_eq!(r.poll_timeout(), Some(7 + 5 * MTU_TIME));
    r.handle_timeout(6 + 5 * MTU_TIME);
    assert!(drain(&mut r, 0).is_empty());
    r.handle_timeout(7 + 5 * MTU_TIME);
    let out = drain(&mut r, 0);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].1.kind, out[0].1.cumulative),
        (ControlKind::Ack, true)
    );
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn without_coalescing_every_packet_is_acked_at_once() {
    let mut r = Receiver::new(config(Policy::Fifo));
    r.account(0, 1, &data(5, 0), 1000);
    r.defer_ack(0, 1, 5);
    let out = drain(&mut r, 0);
    assert_eq!(out.len(), 1);
    let h = out[0].1;
    assert_eq!(
        (h.kind, h.ack_no, h.cumulative),
        (ControlKind::Ack, 5, false)
    );
}

/// A sender's id given to another host after `forget`: the newcomer owes nothing,
/// is owed nothing, and nothing meant for the old sender reaches it.
#[test]
fn a_forgotten_sender_leaves_no_credit_state_behind() {
    let mut r = Receiver::new(ReceiverConfig {
        ack_coalesce: 4,
        ..config(Policy::Weighted)
    });
    r.handle_data(0, 1, &data(0, 3), 1000);
    r.handle_data(0, 2, &rts(0, 40), 0);
    r.set_weight(2, 7);
    r.set_class(2, 3);
    drain(&mut r, 0);
    // Sender 2 is owed PULLs, is in the ASL, has a deferred ACK and a queued answer.
    r.account(0, 2, &data(0, 40), 1000);
    r.defer_ack(0, 2, 0);
    r.queue_control(2, ControlKind::Nack, 1, false);
    assert_eq!(r.busy_time_ns(), 43 * 1_200);

    assert!(r.forget(2));
    assert!(!r.forget(2), "forgotten already");
    assert_eq!(r.sender(2), None);
    assert_eq!(
        r.busy_time_ns(),
        3 * 1_200,
        "its owed PULLs no longer count"
    );
    assert!(drain(&mut r, 0).is_empty(), "its queued answer is gone");
    let pulls = run_pulls(&mut r, 100);
    assert_eq!(
        pulls.len(),
        3,
        "no PULL and no deferred ACK for the old sender"
    );
    assert!(pulls.iter().all(|&(_, p)| p == 1));
    assert_eq!(r.poll_timeout(), None);

    // Another host under the same id starts from nothing, in the forgotten one's
    // place in memory.
    let known = r.peers.len();
    r.handle_data(100 * MTU_TIME, 2, &rts(0, 1), 0);
    let st = r.sender(2).unwrap();
    assert_eq!(
        (st.pulls_sent, st.pull_target, st.weight, st.class),
        (0, 1, 1, 0)
    );
    assert_eq!(
        (st.data_packets, st.rts_packets, st.payload_bytes),
        (0, 1, 0)
    );
    assert_eq!(r.peers.len(), known);
    let answer = drain(&mut r, 100 * MTU_TIME);
    assert_eq!(answer.len(), 1);
    assert_eq!((answer[0].0, answer[0].1.pull_no), (2, 0));
    assert_eq!(run_pulls(&mut r, 100).len(), 1, "exactly what it asked for");
    // Forgetting an id never seen changes nothing.
    assert!(!r.forget(99));
}

/// A receiver with spare PULLs and a window of `window_pulls`, which sender 1 has
/// just asked for `target` PULLs.
fn spare(window_pulls: u32, target: u32) -> Receiver {
    let mut r = Receiver::new(ReceiverConfig {
        window: window_pulls * 1500,
        spare_pulls: true,
        ..config(Policy::Fifo)
    });
    r.handle_data(0, 1, &data(0, target), 1000);
    drain(&mut r, 0);
    r
}

/// A window-bound sender's target is met and the ASL runs empty: without spare
/// PULLs the pacer stops; with them it goes on, one per MTU-time, up to one window
/// beyond the target, and then stops too.
#[test]
fn spare_pulls_fill_idle_slots_up_to_one_window_beyond_the_target() {
    let mut off = Receiver::new(config(Policy::Fifo));
    off.handle_data(0, 1, &data(0, 3), 1000);
    drain(&mut off, 0);
    assert_eq!(
        run_pulls(&mut off, 100).len(),
        3,
        "off: the target and no more"
    );
    assert_eq!(off.sender(1).unwrap().spare_pulls, 0);

    let mut r = spare(5, 3);
    let pulls = run_pulls(&mut r, 100);
    let times: Vec<Time> = pulls.iter().map(|&(t, _)| t).collect();
    let expected: Vec<Time> = (0..8).map(|i| i * MTU_TIME).collect();
    assert_eq!(times, expected, "3 owed, then 5 spare at the same pace");
    let st = r.sender(1).unwrap();
    assert_eq!((st.pulls_sent, st.pull_target, st.spare_pulls), (8, 3, 5));
    assert_eq!(
        r.poll_timeout(),
        None,
        "a window beyond the target: the pacer stops"
    );
    assert_eq!(r.busy_time_ns(), 0, "spare PULLs are owed to nobody");

    // The sender spends them and asks for more: its target passes the pulls sent,
    // it is owed PULLs again, and once those are met, spare ones follow anew.
    r.handle_data(10 * MTU_TIME, 1, &data(1, 10), 1000);
    drain(&mut r, 10 * MTU_TIME);
    assert!(r.sender(1).unwrap().active);
    let pulls = run_pulls(&mut r, 100);
    assert_eq!(pulls.len(), 2 + 5);
    assert_eq!(r.sender(1).unwrap().spare_pulls, 10);
}

/// Spare PULLs take only slots that no sender with demand takes: while one sender
/// is owed PULLs, a satisfied one gets none, and it gets them again after.
#[test]
fn spare_pulls_never_take_a_slot_from_a_sender_with_demand() {
    let mut r = spare(50, 2);
    // Sender 1 is met after two PULLs; sender 2 then asks for ten.
    let first = run_pulls(&mut r, 2);
    assert!(first.iter().all(|&(_, p)| p == 1));
    let t = 2 * MTU_TIME;
    r.handle_data(t, 2, &data(0, 10), 1000);
    drain(&mut r, t);
    let pulls = run_pulls(&mut r, 14);
    let order: Vec<PeerId> = pulls.iter().map(|&(_, p)| p).collect();
    assert_eq!(order[..10], [2; 10], "the owed PULLs first, back to back");
    // Then both are met and share the spare slots round robin.
    assert_eq!(order[10..], [1, 2, 1, 2]);
    assert_eq!(r.sender(2).unwrap().pulls_sent, 12);
}

/// A forgotten sender leaves the spare list too: the next sender with its id gets
/// nothing it did not ask for.
#[test]
fn a_forgotten_sender_takes_no_spare_pulls() {
    let mut r = spare(50, 1);
    assert_eq!(run_pulls(&mut r, 3).len(), 3);
    assert!(r.forget(1));
    assert_eq!(r.poll_timeout(), None);
    assert!(r.sender(1).is_none());
}
