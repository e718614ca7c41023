//! Per-packet path choice for spraying (§5; how to choose is left open by the paper,
//! so this is our choice): each tunnel walks a fresh random permutation of the path
//! ids ([`PathCycle`]), optionally skipping paths that recently trimmed or lost a
//! packet (path avoidance). The permutations come from the sender's own seedable
//! generator ([`SplitMix64`]), so runs are reproducible.

use crate::time::Time;

/// A random permutation of the path ids, walked round robin and reshuffled at every
/// wrap, so that each tunnel covers all paths evenly but unpredictably \[choice\].
///
/// With path avoidance on
/// ([`SenderConfig::path_avoidance`](super::SenderConfig::path_avoidance)), a path
/// that trimmed or lost a packet is skipped until its avoidance ends, unless every
/// path is avoided, when spraying goes on as if none were: a first step towards the
/// load-aware path choice the paper leaves to future work.
#[derive(Debug)]
pub(super) struct PathCycle {
    order: Vec<u16>,
    next: usize,
    /// Per path id, the time until which it is skipped; empty when avoidance is off.
    avoid_until: Vec<Time>,
}

impl PathCycle {
    pub(super) fn new(paths: u16, avoidance: bool) -> Self {
        Self {
            order: (0..paths).collect(),
            next: 0,
            avoid_until: if avoidance {
                vec![0; usize::from(paths)]
            } else {
                Vec::new()
            },
        }
    }

    /// The path for the next packet sent at `now`.
    pub(super) fn next(&mut self, rng: &mut SplitMix64, now: Time) -> u16 {
        if !self.avoid_until.is_empty() {
            for _ in 0..self.order.len() {
                let path = self.step(rng);
                if self.avoid_until[usize::from(path)] <= now {
                    return path;
                }
            }
        }
        self.step(rng)
    }

    /// Skips `path` until `until` (no-op when avoidance is off).
    pub(super) fn avoid(&mut self, path: u16, until: Time) {
        if let Some(t) = self.avoid_until.get_mut(usize::from(path)) {
            *t = (*t).max(until);
        }
    }

    /// The next path of the permutation, reshuffling at the wrap.
    fn step(&mut self, rng: &mut SplitMix64) -> u16 {
        if self.next == 0 {
            // Fisher-Yates.
            for i in (1..self.order.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                self.order.swap(i, j);
            }
        }
        let path = self.order[self.next];
        self.next = (self.next + 1) % self.order.len();
        path
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, seedable and good enough to shuffle
/// path ids. Owning it keeps the core free of global randomness and of a dependency.
#[derive(Debug)]
pub(super) struct SplitMix64(pub(super) u64);

impl SplitMix64 {
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-enough integer in `0..n` (multiply-shift; the bias is below 2^-50 for
    /// the path counts used here).
    pub(super) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}
