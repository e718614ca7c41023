//! The per-tunnel reorder queue of the receiving EQIF (paper §4, §5 and Appendix A; §5
//! says only that the queue stays within a BDP, so the release rules are ours).
//!
//! Per-packet spraying and trims that await retransmission deliver a tunnel's packets
//! out of order; the host expects them in order. The queue holds what arrived ahead of
//! a hole and releases packets in sequence order as holes fill. Because EQDS is only a
//! best-effort in-order service, a hole is not waited for forever:
//!
//! - **bound** \[choice\]: the queue spans at most W sequence numbers from the
//!   in-order point. A packet that lands W or more past it would make the queue exceed
//!   W, so the in-order point jumps: holes before `seq - W + 1` are skipped and the
//!   packets present there are released in order;
//! - **hole timeout** \[choice\]: once the head hole has had packets waiting behind
//!   it for longer than the hole timeout, it is skipped;
//! - **re-establishment** (Appendix A): [`ReorderQueue::release_all`] hands out
//!   everything held regardless of holes, since the old sequence space will never be
//!   filled;
//! - **unordered** packets (§5's unordered service, for the native EQIF) bypass the
//!   queue.
//!
//! A skipped hole is not given up for lost: the queue remembers the sequence numbers it
//! skipped, and when one of them arrives after all (the sender's retransmission, or a
//! straggler) it is handed out at once, out of order ([`InsertOutcome::Late`])
//! \[choice\]. The sender will go on resending a packet until it is ACKed, so without
//! this every hole skipped before its resend arrived (any loss without trimming waits for
//! the RTO, far longer than the queue holds a hole) would be data ACKed and dropped:
//! silent loss for an application without its own recovery. A transport above EQDS
//! sees a late packet as one more reordered segment. The record holds at most
//! [`SKIPPED_RUNS_KEPT`] runs of skipped numbers; the oldest run is forgotten beyond
//! that (counted in [`ReorderStats::skips_forgotten`]) and its stragglers become
//! duplicates.
//!
//! Duplicates (below the in-order point and not awaited, or already held) are handed
//! back so the caller can still ACK them: the first ACK may have been lost.
//!
//! # Memory
//!
//! A ring of exactly W slots, one per sequence number of the window, allocated once:
//! no search and no allocation per packet. The record of skipped runs allocates only
//! when a hole is first skipped, and is searched (binary search) only for packets
//! below the in-order point. Sequence numbers are compared with serial
//! arithmetic, so the queue works across the 2^32 wrap.
//!
//! # Time
//!
//! Times are `u64` picoseconds, the simulator's unit ([`crate::time`]); the queue
//! only adds and compares them, so any monotonic unit works if the hole timeout uses it
//! too.
//!
//! # Caller contract
//!
//! Drain [`ReorderQueue::poll_deliver`] after every [`ReorderQueue::insert`]. A bound
//! overflow parks the new packet until the packets before it have been handed out;
//! a second overflow before that is refused ([`InsertOutcome::Dropped`]).

use crate::wire::{seq_le, seq_lt};
use std::collections::VecDeque;
use std::mem;

/// Most runs of skipped sequence numbers a queue remembers (see the module
/// documentation). 1024 runs of 8 bytes: a tunnel that skipped a thousand separate
/// holes whose packets have not arrived yet is in far worse trouble than this bound.
pub const SKIPPED_RUNS_KEPT: usize = 1024;

/// Skipped runs further behind the in-order point than this are dropped, so that
/// serial comparisons among the runs and the in-order point stay valid.
const SKIPPED_HORIZON: u32 = 1 << 30;

/// Reorder-queue parameters. Both are configurable: the paper fixes neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReorderConfig {
    /// W: the most sequence numbers (and so packets) the queue spans. Default 150, the
    /// EQDS window of the paper's kernel build (§8.5); its DPDK build used 50. Values
    /// below 1 are treated as 1.
    pub window: u32,
    /// How long the head hole may hold packets back before it is skipped, in
    /// picoseconds. Default 1 ms \[choice\]: about the sender's RTO plus one RTT, so a
    /// resend can fill the hole; the paper gives no RTO, and a minimum RTO of 100 µs
    /// to a few ms is usual.
    pub hole_timeout: u64,
}

impl Default for ReorderConfig {
    fn default() -> Self {
        Self {
            window: 150,
            hole_timeout: 1_000_000_000,
        }
    }
}

/// What [`ReorderQueue::insert`] did with a packet. Payloads the queue does not keep
/// come back, so a simulator can free packet handles and a daemon its buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsertOutcome<P> {
    /// Held; [`ReorderQueue::poll_deliver`] releases it in order. ACK it.
    Queued,
    /// An unordered packet: deliver it to the host now. ACK it.
    Unordered(P),
    /// A packet for a hole the queue skipped: deliver it to the host now, out of
    /// order. ACK it.
    Late(P),
    /// Already delivered or already held: drop it, but ACK it (the first ACK may have
    /// been lost).
    Duplicate(P),
    /// Refused because an earlier bound overflow is still being released (the caller
    /// did not drain `poll_deliver`). Drop it and do not ACK, so the sender resends.
    Dropped(P),
}

/// Counters of a reorder queue, for metrics. Skips should stay near 0 on healthy
/// paths.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReorderStats {
    /// Packets released in order by `poll_deliver`.
    pub delivered: u64,
    /// Unordered packets handed straight back by `insert`.
    pub unordered: u64,
    /// Packets released regardless of holes by `release_all`.
    pub released: u64,
    /// Duplicates handed back by `insert`.
    pub duplicates: u64,
    /// Runs of missing sequence numbers skipped because the queue would exceed W.
    pub holes_skipped_bound: u64,
    /// Head holes skipped because the hole timeout expired.
    pub holes_skipped_timeout: u64,
    /// Packets refused with [`InsertOutcome::Dropped`].
    pub dropped: u64,
    /// Packets for skipped holes handed back as [`InsertOutcome::Late`].
    pub late: u64,
    /// Skipped sequence numbers forgotten before their packet arrived, because the
    /// record of skipped runs was full or they fell too far behind: their packets,
    /// if they ever come, are taken for duplicates.
    pub skips_forgotten: u64,
}

/// One sequence number of the window.
#[derive(Debug)]
enum Slot<P> {
    /// Not arrived.
    Empty,
    /// Arrived and waiting to be released.
    Held(P),
    /// Arrived unordered and already delivered: the seq is consumed, not a hole.
    Passed,
}

/// A per-tunnel reorder queue over payloads of type `P`.
#[derive(Debug)]
pub struct ReorderQueue<P> {
    /// The parameters this queue was built with (window at least 1).
    config: ReorderConfig,
    /// One slot per seq in `[next, next + W)`; `slots[head]` is the slot of `next`.
    slots: Vec<Slot<P>>,
    /// Index in `slots` of the in-order point.
    head: usize,
    /// The in-order point: the next seq to release.
    next: u32,
    /// Number of `Held` slots.
    held: usize,
    /// During a bound overflow: every seq before this is released regardless of holes.
    release_until: Option<u32>,
    /// The packet whose arrival caused the overflow, waiting for its slot to free.
    parked: Option<(u32, P)>,
    /// When the current head hole was first seen with packets waiting behind it.
    hole_since: Option<u64>,
    /// Runs `[start, end)` of sequence numbers skipped as holes whose packets have not
    /// arrived since, oldest first, all behind the in-order point; disjoint, and
    /// never touching (adjacent runs are merged).
    skipped: VecDeque<(u32, u32)>,
    /// Counters.
    stats: ReorderStats,
}

impl<P> ReorderQueue<P> {
    /// An empty queue whose first expected seq is `isn`.
    pub fn new(config: ReorderConfig, isn: u32) -> Self {
        let config = ReorderConfig {
            window: config.window.max(1),
            ..config
        };
        let slots = (0..config.window).map(|_| Slot::Empty).collect();
        Self {
            config,
            slots,
            head: 0,
            next: isn,
            held: 0,
            release_until: None,
            parked: None,
            hole_since: None,
            skipped: VecDeque::new(),
            stats: ReorderStats::default(),
        }
    }

    /// The parameters in force (window clamped to at least 1).
    pub fn config(&self) -> &ReorderConfig {
        &self.config
    }

    /// The in-order point: the next sequence number the queue will release.
    pub fn next_seq(&self) -> u32 {
        self.next
    }

    /// Packets held (never more than W).
    pub fn len(&self) -> usize {
        self.held + usize::from(self.parked.is_some())
    }

    /// Nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether some skipped hole's packet is still awaited. A cumulative ACK up to the
    /// in-order point would then cover a packet that never arrived, and the sender
    /// would stop resending it: ACK packet by packet meanwhile.
    pub fn awaits_skipped(&self) -> bool {
        !self.skipped.is_empty()
    }

    /// The counters so far; `reset` keeps them.
    pub fn stats(&self) -> &ReorderStats {
        &self.stats
    }

    /// Offers the packet `seq` that arrived at `now`. See [`InsertOutcome`].
    pub fn insert(&mut self, now: u64, seq: u32, unordered: bool, payload: P) -> InsertOutcome<P> {
        let outcome = self.place(seq, unordered, payload);
        match &outcome {
            InsertOutcome::Duplicate(_) => self.stats.duplicates += 1,
            InsertOutcome::Unordered(_) => self.stats.unordered += 1,
            InsertOutcome::Dropped(_) => self.stats.dropped += 1,
            InsertOutcome::Late(_) => self.stats.late += 1,
            InsertOutcome::Queued => {}
        }
        self.refresh_hole_timer(now);
        outcome
    }

    fn place(&mut self, seq: u32, unordered: bool, payload: P) -> InsertOutcome<P> {
        if seq_lt(seq, self.next) {
            return if self.take_skipped(seq) {
                InsertOutcome::Late(payload)
            } else {
                InsertOutcome::Duplicate(payload)
            };
        }
        let offset = seq.wrapping_sub(self.next);
        if offset < self.config.window {
            let index = self.index(offset);
            return match self.slots[index] {
                Slot::Empty if unordered => {
                    // Mark the seq consumed so ordered packets behind it are not held
                    // back by a hole that will never fill.
                    self.slots[index] = Slot::Passed;
                    InsertOutcome::Unordered(payload)
                }
                Slot::Empty => {
                    self.slots[index] = Slot::Held(payload);
                    self.held += 1;
                    InsertOutcome::Queued
                }
                Slot::Held(_) | Slot::Passed => InsertOutcome::Duplicate(payload),
            };
        }
        if self.parked.as_ref().is_some_and(|(s, _)| *s == seq) {
            return InsertOutcome::Duplicate(payload);
        }
        if unordered {
            // Beyond the window there is no slot to mark; the seq becomes a hole the
            // bound or the timeout skips later, and the packet is delivered anyway.
            return InsertOutcome::Unordered(payload);
        }
        if self.parked.is_some() || self.held >= self.slots.len() {
            return InsertOutcome::Dropped(payload);
        }
        // Bound [choice]: the queue would exceed W. Everything before `seq - W + 1` is
        // released in order, holes skipped; then `seq` takes the slot the release frees.
        self.release_until = Some(seq.wrapping_sub(self.config.window - 1));
        self.parked = Some((seq, payload));
        InsertOutcome::Queued
    }

    /// The next packet to hand to the host in order, if any is ready at `now`. Skips
    /// the head hole when the bound or the hole timeout says so. Call until `None`.
    pub fn poll_deliver(&mut self, now: u64) -> Option<P> {
        loop {
            if let Some(until) = self.release_until {
                if seq_lt(self.next, until) {
                    if let Some(payload) = self.release_head_forced(until) {
                        self.stats.delivered += 1;
                        return Some(payload);
                    }
                    continue;
                }
                self.release_until = None;
                if let Some((seq, payload)) = self.parked.take() {
                    // `next == until == seq - W + 1`, so `seq` is the last slot.
                    let index = self.index(seq.wrapping_sub(self.next));
                    self.slots[index] = Slot::Held(payload);
                    self.held += 1;
                }
            }
            match mem::replace(&mut self.slots[self.head], Slot::Empty) {
                Slot::Held(payload) => {
                    self.held -= 1;
                    self.advance(1);
                    self.refresh_hole_timer(now);
                    self.stats.delivered += 1;
                    return Some(payload);
                }
                Slot::Passed => self.advance(1),
                Slot::Empty => {
                    if self.held == 0 {
                        self.hole_since = None;
                        return None;
                    }
                    self.refresh_hole_timer(now);
                    if now < self.poll_timeout()? {
                        return None;
                    }
                    let offset = self.first(|s| matches!(s, Slot::Held(_)))?;
                    self.skip(offset);
                    self.stats.holes_skipped_timeout += 1;
                }
            }
        }
    }

    /// One step of a bound overflow: the head packet if present, else skip to the next
    /// occupied slot or to `until`, whichever comes first.
    fn release_head_forced(&mut self, until: u32) -> Option<P> {
        match mem::replace(&mut self.slots[self.head], Slot::Empty) {
            Slot::Held(payload) => {
                self.held -= 1;
                self.advance(1);
                Some(payload)
            }
            Slot::Passed => {
                self.advance(1);
                None
            }
            Slot::Empty => {
                let gap = until.wrapping_sub(self.next);
                let run = self
                    .first(|s| !matches!(s, Slot::Empty))
                    .map_or(gap, |o| o.min(gap));
                self.skip(run);
                self.stats.holes_skipped_bound += 1;
                None
            }
        }
    }

    /// When the head hole times out, if packets wait behind one. `poll_deliver` at or
    /// after this time skips it.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.hole_since
            .map(|since| since.saturating_add(self.config.hole_timeout))
    }

    /// Hands out every held packet regardless of holes, in sequence order, for a
    /// re-establishment (Appendix A). Call [`ReorderQueue::reset`] afterwards. Dropping
    /// the iterator early drops the remaining payloads.
    pub fn release_all(&mut self) -> ReleaseAll<'_, P> {
        ReleaseAll { queue: self }
    }

    /// Starts a new sequence space at `isn`, dropping anything still held (release it
    /// first with [`ReorderQueue::release_all`]). Counters are kept.
    pub fn reset(&mut self, isn: u32) {
        self.clear_slots();
        self.next = isn;
        self.parked = None;
        self.release_until = None;
        self.hole_since = None;
        // The old space's stragglers are the tunnel state machine's business now.
        self.skipped.clear();
    }

    fn clear_slots(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = Slot::Empty);
        self.head = 0;
        self.held = 0;
    }

    /// Index of the slot `offset` seqs past the in-order point (`offset < W`). Slots
    /// are addressed from `head`, not by `seq % W`, because W need not divide 2^32.
    fn index(&self, offset: u32) -> usize {
        (self.head + offset as usize) % self.slots.len()
    }

    /// Offset from the in-order point of the first slot matching `pred`.
    fn first(&self, pred: impl Fn(&Slot<P>) -> bool) -> Option<u32> {
        (0..self.config.window).find(|&o| pred(&self.slots[self.index(o)]))
    }

    /// Moves the in-order point `n` seqs on. Slots passed over must hold no packet;
    /// unordered marks in them are cleared, or they would stand for `seq + W` later.
    fn advance(&mut self, n: u32) {
        for offset in 0..n.min(self.config.window) {
            let index = self.index(offset);
            debug_assert!(!matches!(self.slots[index], Slot::Held(_)));
            self.slots[index] = Slot::Empty;
        }
        self.next = self.next.wrapping_add(n);
        self.head = self.index(n % self.config.window);
        // A new head hole, if any, gets its own timer.
        self.hole_since = None;
        if !self.skipped.is_empty() {
            self.forget_old_skips();
        }
    }

    /// Moves the in-order point `n` seqs on over holes, remembering the empty ones as
    /// skipped. Seqs beyond the window had no slot, so they count as holes too (an
    /// unordered packet delivered there would be delivered again if it came twice:
    /// unordered delivery promises no more).
    fn skip(&mut self, n: u32) {
        let in_ring = n.min(self.config.window);
        for offset in 0..in_ring {
            if matches!(self.slots[self.index(offset)], Slot::Empty) {
                self.remember_skipped(self.next.wrapping_add(offset), 1);
            }
        }
        if n > in_ring {
            self.remember_skipped(self.next.wrapping_add(in_ring), n - in_ring);
        }
        self.advance(n);
    }

    /// Records `len` seqs from `start` (at or after every recorded run) as skipped.
    fn remember_skipped(&mut self, start: u32, len: u32) {
        let end = start.wrapping_add(len);
        match self.skipped.back_mut() {
            Some(last) if last.1 == start => last.1 = end,
            _ => self.skipped.push_back((start, end)),
        }
    }

    /// Forgets the oldest skipped runs beyond [`SKIPPED_RUNS_KEPT`], and the seqs
    /// further back than the horizon. Every run must end at or before the in-order
    /// point.
    fn forget_old_skips(&mut self) {
        let oldest_kept = self.next.wrapping_sub(SKIPPED_HORIZON - 1);
        while let Some(&(start, end)) = self.skipped.front() {
            let full = self.skipped.len() > SKIPPED_RUNS_KEPT;
            if full || seq_le(end, oldest_kept) {
                self.stats.skips_forgotten += u64::from(end.wrapping_sub(start));
                self.skipped.pop_front();
                continue;
            }
            if seq_lt(start, oldest_kept) {
                self.stats.skips_forgotten += u64::from(oldest_kept.wrapping_sub(start));
                self.skipped[0].0 = oldest_kept;
            }
            return;
        }
    }

    /// The index of the skipped run holding `seq`, if any.
    fn skipped_run(&self, seq: u32) -> Option<usize> {
        if !seq_lt(seq, self.next) {
            return None;
        }
        // Runs are in sequence order: find the first that ends after `seq`.
        let i = self.skipped.partition_point(|&(_, end)| seq_le(end, seq));
        let &(start, _) = self.skipped.get(i)?;
        seq_le(start, seq).then_some(i)
    }

    /// Whether `seq` was skipped as a hole and its packet has not arrived since.
    pub fn awaits(&self, seq: u32) -> bool {
        !self.skipped.is_empty() && self.skipped_run(seq).is_some()
    }

    /// Whether `seq` (behind the in-order point) was skipped and not yet seen; if so
    /// it is struck from the record, so a second copy is a duplicate.
    fn take_skipped(&mut self, seq: u32) -> bool {
        let Some(i) = self.skipped_run(seq) else {
            return false;
        };
        let (start, end) = self.skipped[i];
        let after = seq.wrapping_add(1);
        match (start == seq, end == after) {
            (true, true) => {
                self.skipped.remove(i);
            }
            (true, false) => self.skipped[i].0 = after,
            (false, true) => self.skipped[i].1 = seq,
            (false, false) => {
                self.skipped[i].1 = seq;
                self.skipped.insert(i + 1, (after, end));
                self.forget_old_skips();
            }
        }
        true
    }

    /// Starts the hole timer when packets wait behind an empty head slot and stops it
    /// otherwise.
    fn refresh_hole_timer(&mut self, now: u64) {
        let waiting = self.held > 0 || self.parked.is_some();
        if waiting && matches!(self.slots[self.head], Slot::Empty) {
            self.hole_since.get_or_insert(now);
        } else {
            self.hole_since = None;
        }
    }
}

/// Iterator returned by [`ReorderQueue::release_all`].
#[derive(Debug)]
pub struct ReleaseAll<'a, P> {
    /// The queue being emptied.
    queue: &'a mut ReorderQueue<P>,
}

impl<P> Iterator for ReleaseAll<'_, P> {
    type Item = P;

    fn next(&mut self) -> Option<P> {
        let q = &mut *self.queue;
        if q.held > 0 {
            let offset = q.first(|s| matches!(s, Slot::Held(_)))?;
            q.advance(offset);
            let Slot::Held(payload) = mem::replace(&mut q.slots[q.head], Slot::Empty) else {
                unreachable!("first() found a held slot here");
            };
            q.held -= 1;
            q.advance(1);
            q.stats.released += 1;
            return Some(payload);
        }
        // Unordered marks are meaningless once the ring is abandoned.
        q.clear_slots();
        q.release_until = None;
        q.hole_since = None;
        let (seq, payload) = q.parked.take()?;
        q.next = seq.wrapping_add(1);
        q.stats.released += 1;
        Some(payload)
    }
}

impl<P> Drop for ReleaseAll<'_, P> {
    fn drop(&mut self) {
        // Leave the queue empty even if the caller stopped early.
        self.by_ref().for_each(drop);
    }
}

#[cfg(test)]
mod tests;
