//! Stochastic fair queueing (McKenney, INFOCOM 1990) served by deficit round robin
//! (Shreedhar and Varghese, SIGCOMM 1995): the SFQ baseline of the AFQ paper's
//! simulations, "TCP-Reno with Stochastic Fair Queueing using DRR ... 32 FIFO
//! queues available at each switch port" (AFQ paper §6.2).
//!
//! A flow's packets go to one of `queues` FIFOs chosen by a hash of the flow; DRR
//! gives every backlogged FIFO `quantum` bytes per turn ([`super::drr`], shared with
//! [`FairQueue`](super::FairQueue)'s FIFO per flow). Flows that hash to the same
//! FIFO share it, so fairness degrades as flows outnumber queues (the paper's
//! explanation for SFQ at high load, §6.2).
//!
//! The hash is seeded per port from the run's seed, so runs are reproducible, and is
//! never perturbed within a run (digest §4.13: the paper gives no perturbation
//! period). When the shared buffer is full, the FIFO holding the most bytes loses its
//! last packet, as Linux's `sfq` does (`drop = "longest"`, our choice: the paper does
//! not say), or the arrival is refused (`drop = "tail"`).

use crate::count_min::{mix64, reduce};
use crate::drr::Drr;
use crate::{Limit, PacketId, PacketStore, QueueCore, QueueCtx, QueueDiscipline, Verdict};

/// What a full buffer drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SfqDrop {
    /// The tail of the FIFO holding the most bytes (the arrival, if that is its own).
    Longest,
    /// The arrival.
    Tail,
}

pub struct Sfq {
    /// The `queues` FIFOs, served by DRR.
    drr: Drr,
    /// How many FIFOs the hash spreads flows over.
    queues: u64,
    drop: SfqDrop,
    seed: u64,
}

impl Sfq {
    pub fn new(limit: Limit, queues: u32, quantum: u32, drop: SfqDrop, seed: u64) -> Self {
        assert!(queues > 0, "SFQ needs a queue");
        Sfq {
            drr: Drr::new(limit, quantum, queues as usize),
            queues: u64::from(queues),
            drop,
            seed: mix64(seed),
        }
    }

    /// The FIFO a flow hashes to.
    #[inline]
    fn bucket_of(&self, key: u64) -> usize {
        reduce(mix64(key ^ self.seed), self.queues) as usize
    }
}

impl<S: PacketStore, R: ?Sized> QueueDiscipline<S, R> for Sfq {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) -> Verdict {
        let size = ctx.pkts.size(pkt);
        let b = self.bucket_of(ctx.pkts.flow_key(pkt));
        if self.drop == SfqDrop::Tail && !self.drr.admits(size) {
            return Verdict::Dropped;
        }
        self.drr.enqueue(b, pkt, size, ctx)
    }
}

impl QueueCore for Sfq {
    fn for_each_queued(&self, f: &mut dyn FnMut(PacketId)) {
        self.drr.for_each(f);
    }

    fn dequeue(&mut self) -> Option<(PacketId, u32)> {
        self.drr.dequeue()
    }

    fn backlog_bytes(&self) -> u64 {
        self.drr.backlog_bytes()
    }

    fn backlog_packets(&self) -> u32 {
        self.drr.backlog_packets()
    }

    fn bypass_when_idle(&self) -> bool {
        // The deficits must see every packet, as in `FairQueue`.
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Rig, TestPacket};

    fn offer(q: &mut Sfq, rig: &mut Rig, flow: u32) -> Verdict {
        let p = TestPacket {
            flow,
            size: 1000,
            ..Default::default()
        };
        rig.offer_or_free(q, p)
    }

    /// Two flows, seeds chosen so they hash apart and together.
    fn seed_where(apart: bool) -> u64 {
        (0..)
            .find(|&s| {
                let q = Sfq::new(Limit::UNLIMITED, 32, 1000, SfqDrop::Longest, s);
                let key = |f: u32| crate::flow_key(f, 0);
                (q.bucket_of(key(1)) != q.bucket_of(key(2))) == apart
            })
            .unwrap()
    }

    fn order(seed: u64) -> Vec<u32> {
        let mut rig = Rig::new(0);
        let mut q = Sfq::new(Limit::UNLIMITED, 32, 1000, SfqDrop::Longest, seed);
        for _ in 0..4 {
            offer(&mut q, &mut rig, 1);
        }
        for _ in 0..2 {
            offer(&mut q, &mut rig, 2);
        }
        rig.drain_flows(&mut q)
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
            let mut rig = Rig::new(0);
            let mut q = Sfq::new(limit, 32, 1000, drop, seed);
            for _ in 0..4 {
                assert_eq!(offer(&mut q, &mut rig, 1), Verdict::Queued);
            }
            let second = offer(&mut q, &mut rig, 2);
            assert_eq!(second == Verdict::Queued, drop == SfqDrop::Longest);
            offer(&mut q, &mut rig, 2);
            assert_eq!(q.backlog_packets(), want_q);
            assert_eq!(rig.stats.drops, want_drops, "{drop:?}");
            assert_eq!(rig.pkts.live(), 4);
        }
    }
}
