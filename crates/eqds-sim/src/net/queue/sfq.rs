//! Stochastic fair queueing (McKenney, INFOCOM 1990) served by deficit round robin
//! (Shreedhar and Varghese, SIGCOMM 1995): the SFQ baseline of the AFQ paper's
//! simulations, "TCP-Reno with Stochastic Fair Queueing using DRR ... 32 FIFO
//! queues available at each switch port" (AFQ paper §6.2).
//!
//! A flow's packets go to one of `queues` FIFOs chosen by a hash of the flow; DRR
//! gives every backlogged FIFO `quantum` bytes per turn. Flows that hash to the same
//! FIFO share it, so fairness degrades as flows outnumber queues (the paper's
//! explanation for SFQ at high load, §6.2).
//!
//! The hash is seeded per port from the run's seed, so runs are reproducible, and is
//! never perturbed within a run (digest §4.13: the paper gives no perturbation
//! period). When the shared buffer is full, the FIFO holding the most bytes loses its
//! last packet, as Linux's `sfq` does (`drop = "longest"`, our choice: the paper does
//! not say), or the arrival is refused (`drop = "tail"`).

use super::count_min::{mix64, reduce};
use super::{flow_key, Fifo, Limit, QueueCtx, QueueDiscipline, Verdict};
use crate::ids::PacketId;
use std::collections::VecDeque;

/// What a full buffer drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SfqDrop {
    /// The tail of the FIFO holding the most bytes (the arrival, if that is its own).
    Longest,
    /// The arrival.
    Tail,
}

struct Bucket {
    fifo: Fifo,
    /// Bytes this FIFO may still send in its current turn.
    deficit: u64,
    /// On the active list.
    active: bool,
}

pub struct Sfq {
    limit: Limit,
    quantum: u64,
    drop: SfqDrop,
    seed: u64,
    buckets: Vec<Bucket>,
    /// Backlogged FIFOs in service order; the front is being served.
    active: VecDeque<usize>,
    packets: u32,
    bytes: u64,
}

impl Sfq {
    pub fn new(limit: Limit, queues: u32, quantum: u32, drop: SfqDrop, seed: u64) -> Self {
        assert!(queues > 0, "SFQ needs a queue");
        Sfq {
            limit,
            quantum: u64::from(quantum.max(1)),
            drop,
            seed: mix64(seed),
            buckets: (0..queues)
                .map(|_| Bucket {
                    fifo: Fifo::default(),
                    deficit: 0,
                    active: false,
                })
                .collect(),
            active: VecDeque::new(),
            packets: 0,
            bytes: 0,
        }
    }

    /// The FIFO a flow hashes to.
    #[inline]
    fn bucket_of(&self, key: u64) -> usize {
        reduce(mix64(key ^ self.seed), self.buckets.len() as u64) as usize
    }

    /// The FIFO holding the most bytes (lowest index on ties, for determinism).
    fn longest(&self) -> Option<usize> {
        self.active
            .iter()
            .copied()
            .max_by_key(|&i| (self.buckets[i].fifo.bytes(), std::cmp::Reverse(i)))
    }
}

impl QueueDiscipline for Sfq {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx) -> Verdict {
        let p = ctx.pkts.get(pkt);
        let size = p.size;
        let b = self.bucket_of(flow_key(p));
        while !self.limit.admits(self.packets, self.bytes, size) {
            if self.drop == SfqDrop::Tail {
                return Verdict::Dropped;
            }
            let Some(victim) = self.longest().filter(|&v| v != b) else {
                return Verdict::Dropped;
            };
            if self.buckets[victim].fifo.bytes() <= self.buckets[b].fifo.bytes() + u64::from(size) {
                // The arrival's FIFO would be (one of) the longest: it loses.
                return Verdict::Dropped;
            }
            let (dropped, dropped_size) = self.buckets[victim]
                .fifo
                .pop_back()
                .expect("an active FIFO holds packets");
            self.packets -= 1;
            self.bytes -= u64::from(dropped_size);
            ctx.stats.drops += 1;
            ctx.stats.dropped_bytes += u64::from(dropped_size);
            ctx.pkts.free(dropped);
        }
        let bucket = &mut self.buckets[b];
        bucket.fifo.push(pkt, size);
        if !bucket.active {
            bucket.active = true;
            bucket.deficit = 0;
            self.active.push_back(b);
        }
        self.packets += 1;
        self.bytes += u64::from(size);
        Verdict::Queued
    }

    fn dequeue(&mut self) -> Option<(PacketId, u32)> {
        while let Some(&b) = self.active.front() {
            let bucket = &mut self.buckets[b];
            match bucket.fifo.front_size() {
                None => {
                    bucket.active = false;
                    self.active.pop_front();
                }
                Some(size) if u64::from(size) <= bucket.deficit => {
                    bucket.deficit -= u64::from(size);
                    let item = bucket.fifo.pop();
                    self.packets -= 1;
                    self.bytes -= u64::from(size);
                    return item;
                }
                Some(_) => {
                    bucket.deficit += self.quantum;
                    self.active.rotate_left(1);
                }
            }
        }
        None
    }

    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }

    fn backlog_packets(&self) -> u32 {
        self.packets
    }

    fn bypass_when_idle(&self) -> bool {
        // The deficits must see every packet, as in `FairQueue`.
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SimRng;
    use crate::net::packet::{Packet, PacketSlab};
    use crate::net::queue::PortStats;
    use rand::SeedableRng;

    fn offer(q: &mut Sfq, slab: &mut PacketSlab, stats: &mut PortStats, flow: u32) -> Verdict {
        let pkt = slab.alloc(Packet {
            flow,
            size: 1000,
            ..Default::default()
        });
        let mut rng = SimRng::seed_from_u64(0);
        let mut ctx = QueueCtx {
            pkts: slab,
            rng: &mut rng,
            stats,
            now: 0,
            rate_bps: 1,
        };
        let v = q.enqueue(pkt, &mut ctx);
        if v == Verdict::Dropped {
            slab.free(pkt);
        }
        v
    }

    /// Two flows, seeds chosen so they hash apart and together.
    fn seed_where(apart: bool) -> u64 {
        (0..)
            .find(|&s| {
                let q = Sfq::new(Limit::UNLIMITED, 32, 1000, SfqDrop::Longest, s);
                let key = |f: u32| {
                    flow_key(&Packet {
                        flow: f,
                        ..Default::default()
                    })
                };
                (q.bucket_of(key(1)) != q.bucket_of(key(2))) == apart
            })
            .unwrap()
    }

    fn order(seed: u64) -> Vec<u32> {
        let (mut slab, mut stats) = (PacketSlab::new(), PortStats::default());
        let mut q = Sfq::new(Limit::UNLIMITED, 32, 1000, SfqDrop::Longest, seed);
        for _ in 0..4 {
            offer(&mut q, &mut slab, &mut stats, 1);
        }
        for _ in 0..2 {
            offer(&mut q, &mut slab, &mut stats, 2);
        }
        std::iter::from_fn(|| q.dequeue())
            .map(|(p, _)| slab.get(p).flow)
            .collect()
    }

    #[test]
    fn flows_in_different_queues_take_turns_and_colliding_ones_do_not() {
        assert_eq!(order(seed_where(true)), [1, 2, 1, 2, 1, 1]);
        // Hashed together, they are one FIFO: arrival order.
        assert_eq!(order(seed_where(false)), [1, 1, 1, 1, 2, 2]);
    }

    #[test]
    fn the_same_seed_gives_the_same_hash_and_another_seed_another() {
        let buckets = |seed| {
            let q = Sfq::new(Limit::UNLIMITED, 32, 1000, SfqDrop::Longest, seed);
            (0..64u64).map(|k| q.bucket_of(k)).collect::<Vec<_>>()
        };
        assert_eq!(buckets(5), buckets(5));
        assert_ne!(buckets(5), buckets(6));
    }

    #[test]
    fn a_full_buffer_drops_from_the_longest_queue_or_the_tail() {
        let seed = seed_where(true);
        let limit = Limit {
            packets: Some(4),
            bytes: None,
        };
        for (drop, want_q, want_drops) in [(SfqDrop::Longest, 4, 2), (SfqDrop::Tail, 4, 0)] {
            let (mut slab, mut stats) = (PacketSlab::new(), PortStats::default());
            let mut q = Sfq::new(limit, 32, 1000, drop, seed);
            for _ in 0..4 {
                assert_eq!(offer(&mut q, &mut slab, &mut stats, 1), Verdict::Queued);
            }
            let second = offer(&mut q, &mut slab, &mut stats, 2);
            assert_eq!(second == Verdict::Queued, drop == SfqDrop::Longest);
            offer(&mut q, &mut slab, &mut stats, 2);
            assert_eq!(q.backlog_packets(), want_q);
            assert_eq!(stats.drops, want_drops, "{drop:?}");
            assert_eq!(slab.live(), 4);
        }
    }
}
