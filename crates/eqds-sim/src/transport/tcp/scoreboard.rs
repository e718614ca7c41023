//! The SACK scoreboard: what became of every segment between the cumulative ACK
//! point and the highest segment sent, for loss recovery as Linux does it (RFC 6675's
//! scoreboard and pipe, with RACK's time-based loss marks, RFC 8985).
//!
//! Segments are indexed by `seq / mss` (the sender cuts them at fixed MSS boundaries,
//! so a retransmission always covers the same bytes). The simulated receiver reports
//! one SACK block per ACK, the segment that triggered it, which is the block RFC 2018
//! puts first; the redundancy of the further blocks is not modelled, so a lost ACK
//! loses its block (the RACK and RTO paths recover that case).

use crate::units::Time;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Sent once and not heard of since.
    InFlight,
    /// Judged lost and not resent yet.
    Lost,
    /// Judged lost and resent; the resend is in flight.
    Resent,
    /// Reported received by a SACK block.
    Sacked,
}

#[derive(Clone, Copy, Debug)]
struct Segment {
    state: State,
    /// When its latest transmission left.
    sent_at: Time,
}

/// The segment-state table of one TCP sender with SACK.
#[derive(Debug, Default)]
pub struct Scoreboard {
    /// Index of `segments[0]`: the first unacknowledged segment.
    base: u64,
    segments: VecDeque<Segment>,
    in_flight: u32,
    lost: u32,
    resent: u32,
    sacked: u32,
    /// The `DUP_THRESH` highest SACKed indexes, highest first (0: none). A segment
    /// below the lowest of them has that many SACKed segments above it: RFC 6675's
    /// IsLost.
    top_sacks: [u64; DUP_THRESH],
    /// Send time of the latest-sent segment known to have arrived (RACK.xmit_ts).
    rack_sent_at: Time,
    /// The RTT that delivery measured (RACK.rtt).
    rack_rtt: Time,
}

/// SACKed segments above a hole that declare it lost (RFC 6675's DupThresh).
pub const DUP_THRESH: usize = 3;

impl Scoreboard {
    /// Segments judged lost and not resent.
    pub fn lost(&self) -> u32 {
        self.lost
    }

    /// RFC 6675's pipe, in segments: original transmissions not SACKed nor judged
    /// lost, plus resends in flight.
    pub fn pipe(&self) -> u32 {
        self.in_flight + self.resent
    }

    /// Segments sent and not cumulatively acknowledged.
    pub fn outstanding(&self) -> u32 {
        self.segments.len() as u32
    }

    /// Records the first transmission of segment `index`, the next one in order.
    pub fn sent_new(&mut self, index: u64, now: Time) {
        debug_assert_eq!(index, self.base + self.segments.len() as u64);
        self.segments.push_back(Segment {
            state: State::InFlight,
            sent_at: now,
        });
        self.in_flight += 1;
    }

    /// Records a resend of segment `index`: a lost one is now in flight again; any
    /// other (a tail-loss probe) keeps its state with a new send time.
    pub fn resent(&mut self, index: u64, now: Time) {
        let Some(seg) = self.segment_mut(index) else {
            return;
        };
        let was_lost = seg.state == State::Lost;
        seg.sent_at = now;
        if was_lost {
            seg.state = State::Resent;
            self.lost -= 1;
            self.resent += 1;
        }
    }

    /// The cumulative ACK point moved to segment `index`: forget everything below,
    /// and say how many of those segments SACK had already reported.
    pub fn acked_to(&mut self, index: u64) -> u32 {
        let mut sacked = 0;
        while self.base < index {
            let Some(seg) = self.segments.pop_front() else {
                self.base = index;
                break;
            };
            self.base += 1;
            sacked += u32::from(seg.state == State::Sacked);
            self.count(seg.state, -1);
        }
        sacked
    }

    /// A SACK block reports segment `index` received; whether that is news (the
    /// segment is outstanding and was not SACKed before).
    pub fn sacked(&mut self, index: u64) -> bool {
        let Some(seg) = self.segment_mut(index) else {
            return false;
        };
        let old = seg.state;
        if old == State::Sacked {
            return false;
        }
        seg.state = State::Sacked;
        self.count(old, -1);
        self.count(State::Sacked, 1);
        if index > self.top_sacks[DUP_THRESH - 1] && !self.top_sacks.contains(&index) {
            self.top_sacks[DUP_THRESH - 1] = index;
            self.top_sacks.sort_unstable_by(|a, b| b.cmp(a));
        }
        true
    }

    /// An ACK echoed the send time `sent_at` of the segment that triggered it, at
    /// `now`: the RACK state follows the latest-sent delivery.
    pub fn delivered(&mut self, sent_at: Time, now: Time) {
        if sent_at >= self.rack_sent_at {
            self.rack_sent_at = sent_at;
            self.rack_rtt = now.saturating_sub(sent_at);
        }
    }

    /// Marks as lost every segment in flight that has `DUP_THRESH` SACKed segments
    /// above it, or that left before a segment already delivered and has been out
    /// for longer than RACK's RTT plus `reorder_window`. Returns how many it marked.
    pub fn mark_losses(&mut self, now: Time, reorder_window: Time) -> u32 {
        if self.sacked == 0 && self.resent == 0 {
            // Everything sent arrived in order so far (or nothing did): no evidence.
            return 0;
        }
        let dup_thresh_below = self.top_sacks[DUP_THRESH - 1];
        let deadline = self.rack_rtt + reorder_window;
        let mut marked = 0;
        for (i, seg) in self.segments.iter_mut().enumerate() {
            let index = self.base + i as u64;
            let by_count = seg.state == State::InFlight && index < dup_thresh_below;
            let by_time = matches!(seg.state, State::InFlight | State::Resent)
                && seg.sent_at < self.rack_sent_at
                && now >= seg.sent_at + deadline;
            if by_count || by_time {
                if seg.state == State::InFlight {
                    self.in_flight -= 1;
                } else {
                    self.resent -= 1;
                }
                seg.state = State::Lost;
                self.lost += 1;
                marked += 1;
            }
        }
        marked
    }

    /// Marks segment `index` lost if it is in flight (fast retransmit on duplicate
    /// ACKs when SACK blocks went missing).
    pub fn mark_lost(&mut self, index: u64) {
        if let Some(seg) = self.segment_mut(index) {
            if matches!(seg.state, State::InFlight | State::Resent) {
                let old = seg.state;
                seg.state = State::Lost;
                self.count(old, -1);
                self.count(State::Lost, 1);
            }
        }
    }

    /// A retransmission timeout: every segment not SACKed is lost (RFC 6675 §5.1).
    pub fn mark_all_lost(&mut self) {
        for seg in self.segments.iter_mut() {
            if matches!(seg.state, State::InFlight | State::Resent) {
                seg.state = State::Lost;
            }
        }
        self.lost += self.in_flight + self.resent;
        self.in_flight = 0;
        self.resent = 0;
    }

    /// A timeout turned out spurious: every segment judged lost and not resent is in
    /// flight again, with its original send time, for RACK to judge afresh. Resends
    /// already sent stay in flight as resends.
    pub fn unmark_lost(&mut self) {
        for seg in self.segments.iter_mut() {
            if seg.state == State::Lost {
                seg.state = State::InFlight;
            }
        }
        self.in_flight += self.lost;
        self.lost = 0;
    }

    /// The lowest segment judged lost and not resent yet.
    pub fn first_lost(&self) -> Option<u64> {
        if self.lost == 0 {
            return None;
        }
        let i = self.segments.iter().position(|s| s.state == State::Lost)?;
        Some(self.base + i as u64)
    }

    /// The highest segment sent and not SACKed (what a tail-loss probe resends).
    pub fn last_unsacked(&self) -> Option<u64> {
        let i = self
            .segments
            .iter()
            .rposition(|s| s.state != State::Sacked)?;
        Some(self.base + i as u64)
    }

    fn segment_mut(&mut self, index: u64) -> Option<&mut Segment> {
        let offset = index.checked_sub(self.base)?;
        self.segments.get_mut(offset as usize)
    }

    fn count(&mut self, state: State, delta: i32) {
        let counter = match state {
            State::InFlight => &mut self.in_flight,
            State::Lost => &mut self.lost,
            State::Resent => &mut self.resent,
            State::Sacked => &mut self.sacked,
        };
        *counter = counter.wrapping_add_signed(delta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One step a sender may take on its scoreboard.
    #[derive(Clone, Debug)]
    enum Op {
        Send,
        Sack(u64),
        AckTo(u64),
        Delivered(u64),
        MarkLosses(u64),
        ResendFirstLost,
        Timeout,
        /// Eifel found the last timeout spurious.
        Undo,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => Just(Op::Send),
            3 => (0u64..64).prop_map(Op::Sack),
            1 => (0u64..64).prop_map(Op::AckTo),
            2 => (0u64..2_000).prop_map(Op::Delivered),
            2 => (0u64..50).prop_map(Op::MarkLosses),
            2 => Just(Op::ResendFirstLost),
            1 => Just(Op::Timeout),
            1 => Just(Op::Undo),
        ]
    }

    proptest! {
        /// Whatever the sender does, the four counters match a recount of the
        /// segments' states, the pipe never exceeds what is outstanding, and the
        /// first lost segment is the lowest one in state Lost.
        #[test]
        fn counters_always_match_the_segment_states(ops in prop::collection::vec(op(), 0..200)) {
            let mut b = Scoreboard::default();
            let mut now: Time = 0;
            for op in ops {
                now += 10;
                match op {
                    Op::Send => b.sent_new(b.base + b.segments.len() as u64, now),
                    Op::Sack(i) => {
                        b.sacked(b.base + i);
                    }
                    Op::AckTo(i) => {
                        let top = b.base + b.segments.len() as u64;
                        b.acked_to((b.base + i).min(top));
                    }
                    Op::Delivered(at) => b.delivered(at.min(now), now),
                    Op::MarkLosses(window) => {
                        b.mark_losses(now, window);
                    }
                    Op::ResendFirstLost => {
                        if let Some(i) = b.first_lost() {
                            b.resent(i, now);
                        }
                    }
                    Op::Timeout => b.mark_all_lost(),
                    Op::Undo => {
                        b.unmark_lost();
                        prop_assert_eq!(b.first_lost(), None);
                    }
                }
                let count = |st: State| b.segments.iter().filter(|s| s.state == st).count() as u32;
                prop_assert_eq!(b.in_flight, count(State::InFlight));
                prop_assert_eq!(b.lost, count(State::Lost));
                prop_assert_eq!(b.resent, count(State::Resent));
                prop_assert_eq!(b.sacked, count(State::Sacked));
                prop_assert!(b.pipe() <= b.outstanding());
                let lowest_lost = b
                    .segments
                    .iter()
                    .position(|s| s.state == State::Lost)
                    .map(|i| b.base + i as u64);
                prop_assert_eq!(b.first_lost(), lowest_lost);
            }
        }
    }

    fn board(segments: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..segments {
            b.sent_new(i, i * 10);
        }
        b
    }

    #[test]
    fn the_cumulative_point_says_how_many_it_passed_were_sacked() {
        let mut b = board(6);
        b.sacked(1);
        b.sacked(3);
        // Segments 0-2 are acknowledged: of them only 1 was SACKed before, so the
        // ACK delivers two segments, not three.
        assert_eq!(b.acked_to(3), 1);
        assert_eq!(b.acked_to(3), 0, "nothing passed twice");
        assert_eq!(b.acked_to(6), 1);
    }

    #[test]
    fn three_sacks_above_a_hole_declare_it_lost() {
        let mut b = board(6);
        assert!(b.sacked(2), "news");
        assert!(!b.sacked(2), "a repeated SACK is not news");
        assert!(!b.sacked(9), "nor one of a segment never sent");
        b.sacked(3);
        assert_eq!(b.mark_losses(1_000, 0), 0, "two SACKs are not enough");
        b.sacked(4);
        // Segments 0 and 1 each have three SACKed segments above them.
        assert_eq!(b.mark_losses(1_000, 0), 2);
        assert_eq!(b.first_lost(), Some(0));
        assert_eq!(b.pipe(), 1, "only segment 5 is still in flight");
        b.resent(0, 2_000);
        assert_eq!((b.lost(), b.pipe()), (1, 2));
        assert_eq!(b.first_lost(), Some(1));
    }

    #[test]
    fn a_later_delivery_declares_earlier_sends_lost_after_the_reorder_window() {
        let mut b = board(4);
        // Segment 3 (sent at 30) arrives at 130: RACK's RTT is 100.
        b.sacked(3);
        b.delivered(30, 130);
        // With a reorder window of 40, a segment is lost once out for 140.
        assert_eq!(b.mark_losses(130, 40), 0, "within RTT + reorder window");
        assert_eq!(b.mark_losses(150, 40), 2, "segments 0 and 1");
        assert_eq!(b.mark_losses(160, 40), 1, "segment 2 too");
        assert_eq!(b.pipe(), 0);
    }

    #[test]
    fn a_lost_resend_is_lost_again_by_time() {
        let mut b = board(5);
        for i in 1..5 {
            b.sacked(i);
        }
        assert_eq!(b.mark_losses(100, 0), 1);
        b.resent(0, 100);
        // A probe sent at 300 arrives: the resend of 0 (sent at 100) is older.
        b.delivered(300, 310);
        assert_eq!(b.mark_losses(400, 5), 1);
        assert_eq!(b.first_lost(), Some(0));
    }

    #[test]
    fn acks_and_timeouts_keep_the_counters_consistent() {
        let mut b = board(8);
        b.sacked(5);
        b.sacked(6);
        b.sacked(7);
        b.mark_losses(1_000, 0);
        b.resent(0, 1_000);
        b.acked_to(2);
        assert_eq!(b.outstanding(), 6);
        b.mark_all_lost();
        assert_eq!((b.lost(), b.pipe()), (3, 0));
        assert_eq!(b.last_unsacked(), Some(4));
        b.acked_to(8);
        assert_eq!((b.outstanding(), b.lost(), b.pipe()), (0, 0, 0));
        assert_eq!(b.first_lost(), None);
    }

    #[test]
    fn a_spurious_timeout_puts_back_what_it_marked_lost_but_not_the_resends() {
        let mut b = board(6);
        b.sacked(4);
        b.mark_all_lost();
        assert_eq!((b.lost(), b.pipe()), (5, 0));
        // One resend went before the first ACK showed the timeout spurious.
        b.resent(0, 2_000);
        b.unmark_lost();
        assert_eq!((b.lost(), b.pipe()), (0, 5));
        assert_eq!(b.first_lost(), None);
        // The originals keep their send times: RACK can still find a real loss
        // among them once a later-sent segment is delivered.
        b.sacked(5);
        b.delivered(50, 100);
        assert_eq!(b.mark_losses(1_000, 0), 3, "segments 1-3, not the resent 0");
        assert_eq!(b.first_lost(), Some(1));
    }
}
