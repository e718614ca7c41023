//! Unit and property tests of the reorder queue.

use super::*;
use proptest::prelude::*;

const MS: u64 = 1_000_000_000;

fn queue(window: u32, isn: u32) -> ReorderQueue<u32> {
    ReorderQueue::new(
        ReorderConfig {
            window,
            hole_timeout: MS,
        },
        isn,
    )
}

/// Inserts ordered packets whose payload is their seq, draining after each.
fn feed(q: &mut ReorderQueue<u32>, now: u64, seqs: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    for &s in seqs {
        assert_eq!(q.insert(now, s, false, s), InsertOutcome::Queued, "seq {s}");
        out.extend(std::iter::from_fn(|| q.poll_deliver(now)));
    }
    out
}

#[test]
fn in_order_packets_pass_straight_through() {
    let mut q = queue(8, 100);
    assert_eq!(feed(&mut q, 0, &[100, 101, 102]), [100, 101, 102]);
    assert!(q.is_empty());
    assert_eq!(q.next_seq(), 103);
    assert_eq!(q.poll_timeout(), None);
    assert_eq!(q.stats().delivered, 3);
}

#[test]
fn out_of_order_packets_wait_for_the_hole_then_release_in_order() {
    let mut q = queue(8, 0);
    assert_eq!(feed(&mut q, 0, &[2, 3, 1]), Vec::<u32>::new());
    assert_eq!(q.len(), 3);
    assert_eq!(q.poll_timeout(), Some(MS));
    assert_eq!(feed(&mut q, 5, &[0]), [0, 1, 2, 3]);
    assert_eq!(q.poll_timeout(), None);
    assert_eq!(
        q.stats().holes_skipped_bound + q.stats().holes_skipped_timeout,
        0
    );
}

#[test]
fn duplicates_below_the_in_order_point_or_held_are_handed_back() {
    let mut q = queue(8, 0);
    feed(&mut q, 0, &[0, 2]);
    assert_eq!(q.insert(0, 0, false, 0), InsertOutcome::Duplicate(0));
    assert_eq!(q.insert(0, 2, false, 2), InsertOutcome::Duplicate(2));
    // Far below, across half the space: still "below".
    let far = q.next_seq().wrapping_add((1 << 31) + 1);
    assert_eq!(q.insert(0, far, false, 9), InsertOutcome::Duplicate(9));
    assert_eq!(q.stats().duplicates, 3);
    assert_eq!(q.len(), 1);
}

#[test]
fn bound_overflow_skips_the_head_hole_and_releases_in_order() {
    let mut q = queue(4, 0);
    // 0 missing; 1, 2 held. 5 is W=4 past the in-order point: seqs before 2 go.
    assert!(feed(&mut q, 0, &[1, 2]).is_empty());
    assert_eq!(feed(&mut q, 0, &[5]), [1, 2]);
    assert_eq!(q.next_seq(), 3);
    assert_eq!(q.stats().holes_skipped_bound, 1);
    assert_eq!(q.len(), 1);
    // The skipped 0 is delivered late, once; 3 and 4 complete the rest in order.
    assert!(q.awaits_skipped());
    assert_eq!(q.insert(0, 0, false, 0), InsertOutcome::Late(0));
    assert!(!q.awaits_skipped());
    assert_eq!(q.insert(0, 0, false, 0), InsertOutcome::Duplicate(0));
    assert_eq!(feed(&mut q, 0, &[4, 3]), [3, 4, 5]);
    assert_eq!((q.stats().late, q.stats().duplicates), (1, 1));
}

#[test]
fn a_skipped_run_is_delivered_late_in_any_order_each_seq_once() {
    let mut q = queue(4, 0);
    // 0..=5 skipped as one run by the jump to 9 (9 - 4 + 1 = 6).
    assert_eq!(feed(&mut q, 0, &[9]), Vec::<u32>::new());
    assert_eq!(q.next_seq(), 6);
    assert!((0..6).all(|seq| q.awaits(seq)));
    assert!(!q.awaits(6) && !q.awaits(9) && !q.awaits(u32::MAX));
    for seq in [3, 0, 5, 1, 4, 2] {
        assert_eq!(q.insert(0, seq, false, seq), InsertOutcome::Late(seq));
        assert!(!q.awaits(seq));
        assert_eq!(q.insert(0, seq, false, seq), InsertOutcome::Duplicate(seq));
    }
    assert!(!q.awaits_skipped());
    // Never skipped: 6..=8 are still ahead, in order.
    assert_eq!(feed(&mut q, 0, &[7, 8, 6]), [6, 7, 8, 9]);
    assert_eq!(q.stats().late, 6);
}

#[test]
fn a_hole_skipped_by_the_timeout_is_delivered_late_but_not_unordered_seqs() {
    let mut q = queue(8, 0);
    assert_eq!(q.insert(0, 1, true, 1), InsertOutcome::Unordered(1));
    assert!(feed(&mut q, 0, &[3]).is_empty());
    assert_eq!(q.poll_deliver(MS), Some(3));
    // 0 and 2 were holes; 1 had arrived unordered.
    assert_eq!(q.insert(MS, 1, false, 1), InsertOutcome::Duplicate(1));
    assert_eq!(q.insert(MS, 2, false, 2), InsertOutcome::Late(2));
    assert_eq!(q.insert(MS, 0, false, 0), InsertOutcome::Late(0));
    assert!(!q.awaits_skipped());
}

#[test]
fn the_oldest_skipped_runs_are_forgotten_beyond_the_cap() {
    let mut q = queue(2, 0);
    // Each round skips one hole (an even seq) and delivers the odd one after it.
    let runs = SKIPPED_RUNS_KEPT as u32 + 3;
    for i in 0..runs {
        assert!(feed(&mut q, 0, &[2 * i + 1]).is_empty());
        assert_eq!(q.poll_deliver(MS * u64::from(i + 1)), Some(2 * i + 1));
    }
    assert_eq!(q.stats().skips_forgotten, 3);
    assert_eq!(q.insert(0, 0, false, 0), InsertOutcome::Duplicate(0));
    assert_eq!(q.insert(0, 6, false, 6), InsertOutcome::Late(6));
    let last = 2 * (runs - 1);
    assert_eq!(q.insert(0, last, false, last), InsertOutcome::Late(last));
}

#[test]
fn skipped_runs_further_back_than_the_horizon_are_forgotten() {
    let mut q = queue(4, 0);
    // 0 and 1 skipped; 2..=5 delivered.
    assert_eq!(feed(&mut q, 0, &[5, 2, 3, 4]), [2, 3, 4, 5]);
    // A jump to the horizon skips 6.. as one run and leaves 0 and 1 behind it.
    let far = 6 + SKIPPED_HORIZON;
    assert_eq!(feed(&mut q, 0, &[far]), Vec::<u32>::new());
    assert_eq!(q.stats().skips_forgotten, 2);
    assert_eq!(q.insert(0, 0, false, 0), InsertOutcome::Duplicate(0));
    assert_eq!(q.insert(0, 6, false, 6), InsertOutcome::Late(6));
    // A jump of more than the horizon keeps only the horizon's worth.
    let farther = far + SKIPPED_HORIZON + SKIPPED_HORIZON / 2;
    assert_eq!(feed(&mut q, 0, &[farther]), [far]);
    assert_eq!(q.insert(0, far + 1, false, 1), InsertOutcome::Duplicate(1));
    // The in-order point is now `farther - 3` (W = 4).
    let oldest_kept = farther - 3 - (SKIPPED_HORIZON - 1);
    assert_eq!(
        q.insert(0, oldest_kept - 1, false, 2),
        InsertOutcome::Duplicate(2)
    );
    assert_eq!(q.insert(0, oldest_kept, false, 3), InsertOutcome::Late(3));
}

#[test]
fn reset_forgets_the_old_spaces_skipped_holes() {
    let mut q = queue(4, 0);
    assert_eq!(feed(&mut q, 0, &[5]), Vec::<u32>::new());
    assert!(q.awaits_skipped());
    q.release_all().for_each(drop);
    q.reset(100);
    assert!(!q.awaits_skipped());
    assert_eq!(q.insert(0, 0, false, 0), InsertOutcome::Duplicate(0));
}

#[test]
fn a_far_jump_releases_everything_held_and_skips_to_the_new_window() {
    let mut q = queue(4, 0);
    assert!(feed(&mut q, 0, &[2]).is_empty());
    assert_eq!(feed(&mut q, 0, &[1_000]), [2]);
    assert_eq!(q.next_seq(), 997);
    assert_eq!(q.stats().holes_skipped_bound, 2);
    assert_eq!(feed(&mut q, 0, &[999, 997, 998]), [997, 998, 999, 1_000]);
}

#[test]
fn a_second_overflow_before_draining_is_refused() {
    let mut q = queue(2, 0);
    assert_eq!(q.insert(0, 1, false, 1), InsertOutcome::Queued);
    assert_eq!(q.insert(0, 5, false, 5), InsertOutcome::Queued);
    assert_eq!(q.insert(0, 5, false, 5), InsertOutcome::Duplicate(5));
    assert_eq!(q.insert(0, 9, false, 9), InsertOutcome::Dropped(9));
    assert!(q.len() <= 2);
    // Holes 0 and 2..4 are skipped; 5 then waits behind the new head hole, 4.
    assert_eq!(
        std::iter::from_fn(|| q.poll_deliver(0)).collect::<Vec<_>>(),
        [1]
    );
    assert_eq!((q.next_seq(), q.len()), (4, 1));
    assert_eq!(q.stats().dropped, 1);
    assert_eq!(q.stats().holes_skipped_bound, 2);
}

#[test]
fn hole_timeout_skips_the_head_hole() {
    let mut q = queue(8, 0);
    assert!(feed(&mut q, 10, &[1, 2, 4]).is_empty());
    assert_eq!(q.poll_timeout(), Some(10 + MS));
    assert_eq!(q.poll_deliver(10 + MS - 1), None);
    assert_eq!(q.poll_deliver(10 + MS), Some(1));
    assert_eq!(q.poll_deliver(10 + MS), Some(2));
    // Hole at 3 is new: its timer starts now.
    assert_eq!(q.poll_deliver(10 + MS), None);
    assert_eq!(q.poll_timeout(), Some(10 + 2 * MS));
    assert_eq!(q.poll_deliver(10 + 2 * MS), Some(4));
    assert_eq!(q.stats().holes_skipped_timeout, 2);
    assert_eq!(q.poll_timeout(), None);
}

#[test]
fn unordered_packets_bypass_the_queue_and_leave_no_hole() {
    let mut q = queue(8, 0);
    assert!(feed(&mut q, 0, &[2]).is_empty());
    assert_eq!(q.insert(0, 1, true, 1), InsertOutcome::Unordered(1));
    assert_eq!(q.insert(0, 1, true, 1), InsertOutcome::Duplicate(1));
    assert_eq!(feed(&mut q, 0, &[0]), [0, 2]);
    // Beyond the window: delivered anyway.
    assert_eq!(q.insert(0, 50, true, 50), InsertOutcome::Unordered(50));
    assert_eq!(q.stats().unordered, 2);
}

#[test]
fn skipping_a_hole_clears_unordered_marks_passed_over() {
    let mut q = queue(4, 0);
    assert_eq!(q.insert(0, 1, true, 1), InsertOutcome::Unordered(1));
    assert!(feed(&mut q, 0, &[3]).is_empty());
    assert_eq!(q.poll_deliver(MS), Some(3));
    // 5 reuses the slot 1 had: it must not look like a duplicate.
    assert_eq!(q.insert(MS, 5, false, 5), InsertOutcome::Queued);
    assert_eq!(feed(&mut q, MS, &[4]), [4, 5]);
}

#[test]
fn release_all_hands_out_everything_then_reset_starts_a_new_space() {
    let mut q = queue(4, 0);
    assert!(feed(&mut q, 0, &[1, 3]).is_empty());
    assert_eq!(q.insert(0, 2, true, 2), InsertOutcome::Unordered(2));
    assert_eq!(q.release_all().collect::<Vec<_>>(), [1, 3]);
    assert!(q.is_empty());
    assert_eq!(q.poll_timeout(), None);
    q.reset(4096);
    assert_eq!(q.next_seq(), 4096);
    assert_eq!(feed(&mut q, 0, &[4097, 4096]), [4096, 4097]);
    assert_eq!(q.stats().released, 2);
}

#[test]
fn release_all_includes_a_parked_packet_and_early_drop_empties_the_queue() {
    let mut q = queue(2, 0);
    assert_eq!(q.insert(0, 1, false, 1), InsertOutcome::Queued);
    assert_eq!(q.insert(0, 7, false, 7), InsertOutcome::Queued);
    assert_eq!(q.release_all().collect::<Vec<_>>(), [1, 7]);
    assert_eq!(q.insert(0, 9, false, 9), InsertOutcome::Queued);
    drop(q.release_all());
    assert!(q.is_empty());
}

#[test]
fn sequence_numbers_wrap() {
    let isn = u32::MAX - 2;
    let mut q = queue(6, isn);
    let seqs: Vec<u32> = (0..6).map(|i| isn.wrapping_add(i)).collect();
    assert!(feed(&mut q, 0, &[seqs[1], seqs[3], seqs[5]]).is_empty());
    assert_eq!(feed(&mut q, 0, &[seqs[0]]), seqs[..2]);
    assert_eq!(feed(&mut q, 0, &[seqs[4], seqs[2]]), seqs[2..]);
    assert_eq!(q.next_seq(), 3);
}

#[test]
fn bound_overflow_works_across_the_wrap() {
    let mut q = queue(4, u32::MAX - 1);
    assert!(feed(&mut q, 0, &[u32::MAX]).is_empty());
    // 3 is 5 past the in-order point: seqs before 0 go, hole u32::MAX - 1 skipped.
    assert_eq!(feed(&mut q, 0, &[3]), [u32::MAX]);
    assert_eq!(q.next_seq(), 0);
    assert_eq!(q.stats().holes_skipped_bound, 1);
    assert_eq!(feed(&mut q, 0, &[1, 2, 0]), [0, 1, 2, 3]);
    let skipped = u32::MAX - 1;
    assert_eq!(q.insert(0, skipped, false, 7), InsertOutcome::Late(7));
}

/// A window of `n` packets in any order, with some sent twice.
fn arrivals() -> impl Strategy<Value = (u32, u32, u32, Vec<u32>)> {
    (1u32..40, 1u32..24, any::<u32>()).prop_flat_map(|(n, w, isn)| {
        let order = Just((0..n).collect::<Vec<_>>()).prop_shuffle();
        let dups = prop::collection::vec((0..n, any::<prop::sample::Index>()), 0..10);
        (Just(n), Just(w), Just(isn), order, dups).prop_map(|(n, w, isn, mut order, dups)| {
            for (d, at) in dups {
                let at = at.index(order.len() + 1);
                order.insert(at, d);
            }
            (n, w, isn, order)
        })
    })
}

proptest! {
    #[test]
    fn every_packet_is_delivered_exactly_once((n, w, isn, order) in arrivals()) {
        let mut q = ReorderQueue::new(ReorderConfig { window: w, hole_timeout: u64::MAX }, isn);
        let mut in_order: Vec<u32> = Vec::new();
        let mut late: Vec<u32> = Vec::new();
        for (now, &i) in order.iter().enumerate() {
            let seq = isn.wrapping_add(i);
            match q.insert(now as u64, seq, false, i) {
                InsertOutcome::Late(i) => late.push(i),
                InsertOutcome::Queued | InsertOutcome::Duplicate(_) => {}
                other => prop_assert!(false, "{:?}", other),
            }
            prop_assert!(q.len() <= w as usize);
            in_order.extend(std::iter::from_fn(|| q.poll_deliver(now as u64)));
            prop_assert!(q.len() <= w as usize);
        }
        // Released in order: strictly increasing offsets.
        prop_assert!(in_order.windows(2).all(|p| p[0] < p[1]), "{:?}", in_order);
        let stats = *q.stats();
        if stats.holes_skipped_bound == 0 {
            prop_assert!(late.is_empty());
            prop_assert_eq!(&in_order, &(0..n).collect::<Vec<_>>());
        }
        if w >= n {
            prop_assert_eq!(stats.holes_skipped_bound, 0);
        }
        // Every packet arrived at least once, so each was delivered exactly once
        // (in order or late) or is still held behind a hole, and every other
        // arrival was a duplicate.
        let held: Vec<u32> = q.release_all().collect();
        let mut all: Vec<u32> = in_order.iter().chain(&late).chain(&held).copied().collect();
        all.sort_unstable();
        prop_assert_eq!(all, (0..n).collect::<Vec<_>>());
        prop_assert_eq!(stats.duplicates as usize + n as usize, order.len());
        prop_assert!(!q.awaits_skipped(), "every skipped packet came late");
        prop_assert_eq!(stats.skips_forgotten, 0);
    }
}
