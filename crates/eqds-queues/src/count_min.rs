//! A count-min sketch of per-flow bid numbers: AFQ's per-flow state (AFQ paper,
//! §3.1, "Storing bid numbers"; digest §1.2).
//!
//! `rows` independent hash functions each pick one counter of their row for a flow;
//! a flow's bid is the smallest of its counters. Every write keeps each of the flow's
//! counters at least at the bid written, so a read never returns less than the last
//! bid written for that flow: a collision can only make a flow look further ahead
//! than it is (its packet is scheduled later, never earlier; paper §3.2).
//!
//! Bids are cumulative byte counts, so counters are u64 and never wrap within a run
//! (digest §1.2.7).

/// How a write moves the counters of a flow (digest §4.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SketchUpdate {
    /// Conservative update: each counter becomes `max(counter, bid)`. Keeps the
    /// never-under-estimate invariant while inflating the counters other flows share
    /// as little as possible (our default; digest §1.2.3).
    Max,
    /// The hardware's "increment by x": every counter of the flow grows by
    /// `bid - read(flow)`, the increase of the flow's estimate.
    Increment,
}

/// Most rows a sketch may have: the hardware budget is a handful of stages (the
/// Cavium prototype used 4, the simulations 2).
pub const MAX_ROWS: usize = 8;

/// The counters a flow maps to, one per row, as found by [`CountMinSketch::read`].
pub struct Slots {
    idx: [usize; MAX_ROWS],
}

pub struct CountMinSketch {
    rows: usize,
    columns: u64,
    update: SketchUpdate,
    /// Row `i`'s counters are `cells[i * columns ..][.. columns]`.
    cells: Vec<u64>,
    /// Per row, the seed of its hash function.
    seeds: [u64; MAX_ROWS],
}

/// A 64-bit finaliser (SplitMix64's): every input bit affects every output bit, so
/// seeds that differ give independent-looking functions.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Maps a hash to `0..n` without a division (Lemire's multiply-shift).
#[inline]
pub fn reduce(hash: u64, n: u64) -> u64 {
    ((u128::from(hash) * u128::from(n)) >> 64) as u64
}

impl CountMinSketch {
    /// A sketch of `rows` x `columns` zero counters; the rows' hash functions derive
    /// from `seed`. Panics on sizes that validation refuses.
    pub fn new(rows: u32, columns: u32, update: SketchUpdate, seed: u64) -> Self {
        let rows = rows as usize;
        assert!((1..=MAX_ROWS).contains(&rows) && columns > 0, "sketch size");
        let mut seeds = [0; MAX_ROWS];
        for (i, s) in seeds.iter_mut().enumerate() {
            *s = mix64(seed ^ mix64(i as u64 + 1));
        }
        CountMinSketch {
            rows,
            columns: u64::from(columns),
            update,
            // Zeroed memory is mapped lazily by the allocator: columns no flow hashes
            // to cost nothing.
            cells: vec![0; rows * columns as usize],
            seeds,
        }
    }

    /// The flow's estimated bid (the minimum over its counters) and where its
    /// counters are, for the write that follows.
    #[inline]
    pub fn read(&self, key: u64) -> (u64, Slots) {
        let mut idx = [0; MAX_ROWS];
        let mut min = u64::MAX;
        for (row, slot) in idx.iter_mut().enumerate().take(self.rows) {
            let col = reduce(mix64(key ^ self.seeds[row]), self.columns);
            *slot = row * self.columns as usize + col as usize;
            min = min.min(self.cells[*slot]);
        }
        (min, Slots { idx })
    }

    /// Records `bid` for the flow whose counters are `slots` and whose estimate was
    /// `read` (at most `bid`). Afterwards every one of its counters is at least `bid`.
    #[inline]
    pub fn write(&mut self, slots: &Slots, read: u64, bid: u64) {
        debug_assert!(bid >= read, "a bid never goes down");
        let rows = &slots.idx[..self.rows];
        match self.update {
            SketchUpdate::Max => {
                for &i in rows {
                    self.cells[i] = self.cells[i].max(bid);
                }
            }
            SketchUpdate::Increment => {
                let x = bid - read;
                for &i in rows {
                    self.cells[i] += x;
                }
            }
        }
    }

    /// Counters held (rows x columns).
    pub fn cells(&self) -> usize {
        self.cells.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn a_lone_flow_reads_back_what_it_wrote() {
        for update in [SketchUpdate::Max, SketchUpdate::Increment] {
            let mut s = CountMinSketch::new(2, 64, update, 9);
            let mut bid = 0;
            for size in [100, 1500, 64] {
                let (read, slots) = s.read(42);
                assert_eq!(read, bid);
                bid += size;
                s.write(&slots, read, bid);
            }
            assert_eq!(s.read(42).0, 1664);
            assert_eq!(s.read(43).0, 0, "{update:?}: an unrelated flow");
        }
    }

    /// Two flows forced into one column: the second reads the first's bid (an
    /// over-estimate, never an under-estimate).
    #[test]
    fn a_collision_over_estimates() {
        let mut s = CountMinSketch::new(1, 1, SketchUpdate::Max, 0);
        let (read, slots) = s.read(1);
        s.write(&slots, read, 3000);
        assert_eq!(s.read(2).0, 3000);
    }

    proptest! {
        /// Whatever the writes, with either update rule and however small the
        /// sketch, a read is at least the last bid written for that flow.
        #[test]
        fn never_under_estimates(
            rows in 1u32..=4,
            columns in 1u32..=16,
            increment in any::<bool>(),
            seed in any::<u64>(),
            writes in proptest::collection::vec((0u64..40, 1u64..3000), 1..300),
        ) {
            let update = if increment { SketchUpdate::Increment } else { SketchUpdate::Max };
            let mut s = CountMinSketch::new(rows, columns, update, seed);
            let mut truth: HashMap<u64, u64> = HashMap::new();
            for (flow, size) in writes {
                let (read, slots) = s.read(flow);
                let exact = truth.get(&flow).copied().unwrap_or(0);
                prop_assert!(read >= exact, "flow {flow}: read {read} < exact {exact}");
                // AFQ's bids grow from the estimate, never from below it.
                let bid = read + size;
                s.write(&slots, read, bid);
                truth.insert(flow, bid);
                for (&f, &b) in &truth {
                    prop_assert!(s.read(f).0 >= b, "flow {f}: read {} < {b}", s.read(f).0);
                }
            }
        }
    }
}
