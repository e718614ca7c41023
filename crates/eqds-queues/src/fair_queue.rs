//! Ideal per-flow fair queueing: deficit round robin over one FIFO per flow, and
//! longest-queue drop when the shared buffer is full (both in [`super::drr`]).
//!
//! This is the switch the EQDS paper compares against in its incast (Figure 14): a
//! bottleneck that shares itself equally whatever the senders do. DRR (Shreedhar and
//! Varghese, 1995) serves each backlogged flow up to `quantum` bytes per round; when
//! an arrival finds the buffer full, the flow holding the most bytes loses its last
//! packet (the arrival itself if its flow is that one), so no flow can hold another
//! flow's share of the buffer.

use crate::drr::Drr;
use crate::{Limit, PacketId, PacketStore, QueueCore, QueueCtx, QueueDiscipline, Verdict};
use std::collections::HashMap;

pub struct FairQueue {
    /// One DRR FIFO per flow, added as flows first arrive.
    drr: Drr,
    /// Each flow's FIFO.
    index: HashMap<u32, usize>,
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
    fn flow_queue(&mut self, flow: u32) -> usize {
        *self
            .index
            .entry(flow)
            .or_insert_with(|| self.drr.add_lane())
    }
}

impl<S: PacketStore, R: ?Sized> QueueDiscipline<S, R> for FairQueue {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) -> Verdict {
        let (size, flow) = (ctx.pkts.size(pkt), ctx.pkts.flow(pkt));
        let q = self.flow_queue(flow);
        self.drr.enqueue(q, pkt, size, ctx)
    }
}

impl QueueCore for FairQueue {
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
    use crate::testing::{Rig, TestPacket};

    fn offer(q: &mut FairQueue, rig: &mut Rig, flow: u32) -> Verdict {
        let p = TestPacket {
            flow,
            size: 1000,
            ..Default::default()
        };
        rig.offer_or_free(q, p)
    }

    #[test]
    fn serves_backlogged_flows_in_turn_whatever_their_arrival_order() {
        let mut rig = Rig::new(0);
        let mut q = FairQueue::new(Limit::UNLIMITED, 1000);
        for _ in 0..6 {
            offer(&mut q, &mut rig, 1);
        }
        for _ in 0..2 {
            offer(&mut q, &mut rig, 2);
        }
        assert_eq!(rig.drain_flows(&mut q), [1, 2, 1, 2, 1, 1, 1, 1]);
    }

    #[test]
    fn a_full_buffer_drops_from_the_longest_flow() {
        let mut rig = Rig::new(0);
        let mut q = FairQueue::new(
            Limit {
                packets: Some(4),
                bytes: None,
            },
            1000,
        );
        for _ in 0..4 {
            assert_eq!(offer(&mut q, &mut rig, 1), Verdict::Queued);
        }
        // Flow 2 gets in at flow 1's expense, twice; then they are even and the
        // arrival (flow 2 would be longest) is refused.
        assert_eq!(offer(&mut q, &mut rig, 2), Verdict::Queued);
        assert_eq!(offer(&mut q, &mut rig, 2), Verdict::Queued);
        assert_eq!(offer(&mut q, &mut rig, 2), Verdict::Dropped);
        assert_eq!(rig.stats.drops, 2);
        assert_eq!(q.backlog_packets(), 4);
        assert_eq!(rig.pkts.live(), 4);
        // The longest flow refuses its own arrival.
        assert_eq!(offer(&mut q, &mut rig, 1), Verdict::Dropped);
    }
}
