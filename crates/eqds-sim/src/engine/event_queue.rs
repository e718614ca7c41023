//! The pending events of a run: a calendar queue ordered by (time, insertion number).
//!
//! The insertion number makes equal-time events pop in the order they were pushed,
//! which is what makes runs deterministic without any care from callers.
//!
//! Why a calendar and not a binary heap: a large network keeps hundreds of thousands
//! of events pending, almost all within a few microseconds of now (serialisation and
//! propagation). A heap pays ~log2(n) cache misses per operation for that; here time
//! is cut into buckets of 2^SHIFT ps, a ring of NBUCKETS buckets covers the near
//! future, and a bucket is sorted only when the clock reaches it (a few dozen
//! entries). Events beyond the ring's horizon (RTOs, flow starts) wait in a heap and
//! move into the ring as the clock approaches them. A bitmap finds the next non-empty
//! bucket without visiting empty ones.

use super::Event;
use crate::units::Time;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Bucket width: 2^12 ps = 4.1 ns, a fraction of a packet time at 100 Gbps. At 100
/// Gbps on a k=16 fat tree a 16 ns bucket held ~370 events to sort; 4 ns buckets are
/// about 7% faster there (best of five) and no slower at 10 Gbps.
const SHIFT: u32 = 12;
/// Buckets in the ring: 2^14 of them cover 67 us ahead, past any link's latency and
/// serialisation; timeouts and flow starts wait in the far heap.
const NBUCKETS: usize = 1 << 14;
const MASK: u64 = NBUCKETS as u64 - 1;

/// An event in the ring: 16 bytes, so that sorting a bucket moves little. It needs
/// no insertion number: within a bucket entries are stored in insertion order (see
/// `place`), and a stable sort on time keeps it. Its time is kept as the offset into
/// its bucket, whose start the ring knows.
#[derive(Clone, Copy, Debug)]
struct Entry {
    offset: u32,
    event: Event,
}

const _: () = assert!(std::mem::size_of::<Entry>() == 16);

/// How far past a bucket's end a push prefetches: one cache line of entries.
const PREFETCH_ENTRIES: usize = 64 / std::mem::size_of::<Entry>();

/// An event beyond the ring's horizon, ordered in the heap by (time, insertion number).
#[derive(Clone, Copy, Debug)]
struct FarEntry {
    time: Time,
    seq: u64,
    event: Event,
}

impl FarEntry {
    fn key(&self) -> (Time, u64) {
        (self.time, self.seq)
    }
}

impl PartialEq for FarEntry {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for FarEntry {}
impl PartialOrd for FarEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for FarEntry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// The next events in the bucket being drained (`EventQueue::ahead`).
pub struct Ahead<'a>(&'a [Entry]);

impl Ahead<'_> {
    /// The event `depth + 1` pops from now, if it is in the bucket being drained.
    #[inline]
    pub fn get(&self, depth: usize) -> Option<&Event> {
        self.0.get(depth).map(|e| &e.event)
    }
}

pub struct EventQueue {
    /// The ring. Bucket `b & MASK` holds events of absolute bucket `b` for
    /// `cur <= b < cur + NBUCKETS`.
    buckets: Vec<Vec<Entry>>,
    /// One bit per non-empty bucket.
    occupied: Vec<u64>,
    /// Absolute index of the bucket the clock is in.
    cur: u64,
    /// The current bucket is sorted (ascending); its entries before `head` are popped.
    cur_sorted: bool,
    head: usize,
    /// Events beyond the ring's horizon.
    far: BinaryHeap<Reverse<FarEntry>>,
    len: usize,
    /// Insertion counter; also the number of events ever scheduled.
    next_seq: u64,
    /// Emptied bucket storage, reused by the next bucket that fills. Without it every
    /// one of the ring's buckets would keep the capacity of its busiest moment: at
    /// 100 Gbps with thousands of ports that is a hundred times the pending events.
    spare: Vec<Vec<Entry>>,
    /// Working space of the bucket sort.
    scratch: Vec<Entry>,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue {
            buckets: (0..NBUCKETS).map(|_| Vec::new()).collect(),
            occupied: vec![0; NBUCKETS / 64],
            cur: 0,
            cur_sorted: false,
            head: 0,
            far: BinaryHeap::new(),
            len: 0,
            next_seq: 0,
            spare: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Schedules `event` at `time` (never earlier than the last popped event).
    #[inline]
    pub fn push(&mut self, time: Time, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.len += 1;
        // An event in the past of the current bucket cannot happen in a causal run;
        // treat it as "now" so that the queue stays consistent regardless.
        let b = (time >> SHIFT).max(self.cur);
        if b - self.cur >= NBUCKETS as u64 {
            self.far.push(Reverse(FarEntry { time, seq, event }));
            return;
        }
        self.place(b, time, event);
    }

    /// Puts an entry in ring bucket `b`. Entries reach a bucket in insertion-number
    /// order: an event goes to the far heap only while its bucket is beyond the
    /// horizon, and the heap hands it over (in order) as soon as the bucket comes
    /// within reach, before any later push can land there.
    #[inline]
    fn place(&mut self, b: u64, time: Time, event: Event) {
        // A past event (see `push`) is filed at the start of the current bucket.
        let entry = Entry {
            offset: time.saturating_sub(b << SHIFT) as u32,
            event,
        };
        let i = (b & MASK) as usize;
        let bucket = &mut self.buckets[i];
        if bucket.capacity() == 0 {
            if let Some(storage) = self.spare.pop() {
                *bucket = storage;
            }
        }
        if b == self.cur && self.cur_sorted {
            // Keep the bucket being drained sorted: insert after every entry at the
            // same time, as the newest of them.
            let pos = self.head + bucket[self.head..].partition_point(|e| e.offset <= entry.offset);
            bucket.insert(pos, entry);
        } else {
            bucket.push(entry);
            // The entry after the next ones goes to a line of this bucket's storage
            // that nothing has touched since the storage was last drained, long ago
            // on a large network: start loading it now. Hundreds of events pass
            // between two pushes to one bucket, time enough for it to arrive.
            super::prefetch(
                bucket
                    .as_ptr()
                    .wrapping_add(bucket.len() + PREFETCH_ENTRIES),
            );
        }
        self.occupied[i / 64] |= 1 << (i % 64);
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        loop {
            let i = (self.cur & MASK) as usize;
            if !self.buckets[i].is_empty() {
                if !self.cur_sorted {
                    // A bucket's entries arrive in insertion-number order, so a
                    // stable sort on time alone gives (time, insertion number) order.
                    sort_by_offset(&mut self.buckets[i], &mut self.scratch);
                    self.cur_sorted = true;
                    self.head = 0;
                }
                let e = self.buckets[i][self.head];
                self.head += 1;
                if self.head == self.buckets[i].len() {
                    self.buckets[i].clear();
                    self.head = 0;
                    self.occupied[i / 64] &= !(1 << (i % 64));
                    self.spare.push(std::mem::take(&mut self.buckets[i]));
                }
                self.len -= 1;
                return Some(((self.cur << SHIFT) + e.offset as u64, e.event));
            }
            if self.len == 0 {
                return None;
            }
            self.advance();
        }
    }

    /// Moves the clock's bucket to the next one holding events, pulling far events
    /// that come within the horizon into the ring.
    fn advance(&mut self) {
        self.cur_sorted = false;
        match self.next_occupied() {
            Some(distance) => self.cur += distance,
            None => {
                let Reverse(first) = self.far.peek().expect("len > 0 and the ring is empty");
                self.cur = first.time >> SHIFT;
            }
        }
        while let Some(Reverse(e)) = self.far.peek() {
            if (e.time >> SHIFT) - self.cur >= NBUCKETS as u64 {
                break;
            }
            let Reverse(e) = self.far.pop().expect("peeked");
            self.place(e.time >> SHIFT, e.time, e.event);
        }
    }

    /// Distance (1..NBUCKETS) from the current bucket to the next non-empty one.
    fn next_occupied(&self) -> Option<u64> {
        let start = ((self.cur + 1) & MASK) as usize;
        let words = self.occupied.len();
        let (w0, b0) = (start / 64, start % 64);
        // The first word from bit b0, then whole words around the ring, then the
        // first word's low bits.
        let first = self.occupied[w0] & (!0u64 << b0);
        if first != 0 {
            return Some(self.distance_to(w0 * 64 + first.trailing_zeros() as usize));
        }
        for k in 1..=words {
            let w = (w0 + k) % words;
            let mut bits = self.occupied[w];
            if w == w0 {
                bits &= !(!0u64 << b0);
            }
            if bits != 0 {
                return Some(self.distance_to(w * 64 + bits.trailing_zeros() as usize));
            }
        }
        None
    }

    fn distance_to(&self, slot: usize) -> u64 {
        (slot as u64).wrapping_sub(self.cur) & MASK
    }

    /// The events `pop` will return next from the bucket being drained, in order
    /// (none while that bucket is unsorted): what the run loop prefetches for. One
    /// call serves every look ahead of an event.
    #[inline]
    pub fn ahead(&self) -> Ahead<'_> {
        if !self.cur_sorted {
            return Ahead(&[]);
        }
        let bucket = &self.buckets[(self.cur & MASK) as usize];
        Ahead(bucket.get(self.head..).unwrap_or(&[]))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of events ever scheduled.
    pub fn scheduled(&self) -> u64 {
        self.next_seq
    }
}

/// Sorts a bucket by offset, stably: a least-significant-digit radix sort in two
/// passes of `SHIFT / 2` bits. A bucket holds about a hundred entries at 100 Gbps;
/// this is linear where a comparison sort pays n log n comparisons and branch misses.
fn sort_by_offset(bucket: &mut [Entry], scratch: &mut Vec<Entry>) {
    const BITS: u32 = SHIFT / 2;
    const RADIX: usize = 1 << BITS;
    const _: () = assert!(SHIFT % 2 == 0, "two equal digits cover an offset");
    if bucket.len() <= 16 {
        // Small buckets: insertion sort, also stable.
        for i in 1..bucket.len() {
            let e = bucket[i];
            let mut j = i;
            while j > 0 && bucket[j - 1].offset > e.offset {
                bucket[j] = bucket[j - 1];
                j -= 1;
            }
            bucket[j] = e;
        }
        return;
    }
    let digit = |e: &Entry, pass: u32| (e.offset >> (pass * BITS)) as usize & (RADIX - 1);
    let mut starts = [[0u32; RADIX]; 2];
    for e in bucket.iter() {
        starts[0][digit(e, 0)] += 1;
        starts[1][digit(e, 1)] += 1;
    }
    for counts in &mut starts {
        let mut sum = 0;
        for c in counts.iter_mut() {
            (*c, sum) = (sum, sum + *c);
        }
    }
    scratch.clear();
    scratch.extend_from_slice(bucket);
    for e in bucket.iter() {
        let d = digit(e, 0);
        scratch[starts[0][d] as usize] = *e;
        starts[0][d] += 1;
    }
    for e in scratch.iter() {
        let d = digit(e, 1);
        bucket[starts[1][d] as usize] = *e;
        starts[1][d] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(5, Event::Sample { series: 0 });
        q.push(3, Event::FlowStart { flow: 1 });
        q.push(5, Event::FlowStart { flow: 2 });
        q.push(3, Event::FlowStart { flow: 3 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (3, Event::FlowStart { flow: 1 }),
                (3, Event::FlowStart { flow: 3 }),
                (5, Event::Sample { series: 0 }),
                (5, Event::FlowStart { flow: 2 }),
            ]
        );
    }

    proptest! {
        /// The radix sort is a stable sort by offset, small buckets and large alike.
        #[test]
        fn bucket_sort_is_stable(offsets in prop::collection::vec(0u32..1 << SHIFT, 0..300)) {
            let mut bucket: Vec<Entry> = offsets
                .iter()
                .enumerate()
                .map(|(i, &offset)| Entry { offset, event: Event::FlowStart { flow: i as u32 } })
                .collect();
            let mut want = bucket.clone();
            want.sort_by_key(|e| e.offset);
            sort_by_offset(&mut bucket, &mut Vec::new());
            let key = |v: &[Entry]| v.iter().map(|e| (e.offset, e.event)).collect::<Vec<_>>();
            prop_assert_eq!(key(&bucket), key(&want));
        }

        /// Any causal interleaving of pushes and pops gives exactly the order of a
        /// reference heap on (time, insertion number), near and far events alike.
        #[test]
        fn matches_a_reference_heap(ops in prop::collection::vec((0u8..4, 0u64..1u64 << 36), 1..2000)) {
            let mut q = EventQueue::new();
            let mut reference = BinaryHeap::new();
            let (mut now, mut seq) = (0u64, 0u32);
            for (op, delay) in ops {
                if op == 0 {
                    let got = q.pop();
                    let want = reference.pop().map(|Reverse((t, s))| (t, Event::FlowStart { flow: s }));
                    prop_assert_eq!(got, want);
                    if let Some((t, _)) = got { now = t; }
                } else {
                    // Mostly near-future delays, some far beyond the horizon.
                    let delay = if op == 1 { delay } else { delay >> 20 };
                    q.push(now + delay, Event::FlowStart { flow: seq });
                    reference.push(Reverse((now + delay, seq)));
                    seq += 1;
                }
            }
            while let Some(want) = reference.pop() {
                let Reverse((t, s)) = want;
                prop_assert_eq!(q.pop(), Some((t, Event::FlowStart { flow: s })));
            }
            prop_assert!(q.pop().is_none());
        }
    }
}
