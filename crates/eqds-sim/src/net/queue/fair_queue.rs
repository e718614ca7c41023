//! Ideal per-flow fair queueing: deficit round robin over one FIFO per flow, and
//! longest-queue drop when the shared buffer is full (both in [`super::drr`]).
//!
//! This is the switch the EQDS paper compares against in its incast (Figure 14): a
//! bottleneck that shares itself equally whatever the senders do. DRR (Shreedhar and
//! Varghese, 1995) serves each backlogged flow up to `quantum` bytes per round; when
//! an arrival finds the buffer full, the flow holding the most bytes loses its last
//! packet (the arrival itself if its flow is that one), so no flow can hold another
//! flow's share of the buffer.

use super::drr::Drr;
use super::{Limit, QueueCtx, QueueDiscipline, Verdict};
use crate::ids::{FlowId, PacketId};
use std::collections::HashMap;

pub struct FairQueue {
    /// One DRR FIFO per flow, added as flows first arrive.
    drr: Drr,
    /// Each flow's FIFO.
    index: HashMap<FlowId, usize>,
}

impl FairQueue {
    pub fn new(limit: Limit, quantum: u32) -> Self {
        Self {
            drr: Drr::new(limit, quantum, 0),
            index: HashMap::new(),
        }
    }

    /// The flow's FIFO, new at its first packet: queues are per flow, so no two
    /// flows ever share one (unlike [`Sfq`](super::Sfq)'s hashed buckets).
    fn flow_queue(&mut self, flow: FlowId) -> usize {
        *self
            .index
            .entry(flow)
            .or_insert_with(|| self.drr.add_lane())
    }
}

impl QueueDiscipline for FairQueue {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx) -> Verdict {
        let p = ctx.pkts.get(pkt);
        let (size, flow) = (p.size, p.flow);
        let q = self.flow_queue(flow);
        self.drr.enqueue(q, pkt, size, ctx)
    }

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
        // Per-flow deficits must see every packet.
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

    fn offer(
        q: &mut FairQueue,
        slab: &mut PacketSlab,
        stats: &mut PortStats,
        flow: u32,
    ) -> Verdict {
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

    #[test]
    fn serves_backlogged_flows_in_turn_whatever_their_arrival_order() {
        let (mut slab, mut stats) = (PacketSlab::new(), PortStats::default());
        let mut q = FairQueue::new(Limit::UNLIMITED, 1000);
        for _ in 0..6 {
            offer(&mut q, &mut slab, &mut stats, 1);
        }
        for _ in 0..2 {
            offer(&mut q, &mut slab, &mut stats, 2);
        }
        let order: Vec<u32> = std::iter::from_fn(|| q.dequeue())
            .map(|(p, _)| slab.get(p).flow)
            .collect();
        assert_eq!(order, [1, 2, 1, 2, 1, 1, 1, 1]);
    }

    #[test]
    fn a_full_buffer_drops_from_the_longest_flow() {
        let (mut slab, mut stats) = (PacketSlab::new(), PortStats::default());
        let mut q = FairQueue::new(
            Limit {
                packets: Some(4),
                bytes: None,
            },
            1000,
        );
        for _ in 0..4 {
            assert_eq!(offer(&mut q, &mut slab, &mut stats, 1), Verdict::Queued);
        }
        // Flow 2 gets in at flow 1's expense, twice; then they are even and the
        // arrival (flow 2 would be longest) is refused.
        assert_eq!(offer(&mut q, &mut slab, &mut stats, 2), Verdict::Queued);
        assert_eq!(offer(&mut q, &mut slab, &mut stats, 2), Verdict::Queued);
        assert_eq!(offer(&mut q, &mut slab, &mut stats, 2), Verdict::Dropped);
        assert_eq!(stats.drops, 2);
        assert_eq!(q.backlog_packets(), 4);
        assert_eq!(slab.live(), 4);
        // The longest flow refuses its own arrival.
        assert_eq!(offer(&mut q, &mut slab, &mut stats, 1), Verdict::Dropped);
    }
}
