//! Ideal per-flow fair queueing: deficit round robin over one FIFO per flow, and
//! longest-queue drop when the shared buffer is full.
//!
//! This is the switch the EQDS paper compares against in its incast (Figure 14): a
//! bottleneck that shares itself equally whatever the senders do. DRR (Shreedhar and
//! Varghese, 1995) serves each backlogged flow up to `quantum` bytes per round; when
//! an arrival finds the buffer full, the flow holding the most bytes loses its last
//! packet (the arrival itself if its flow is that one), so no flow can hold another
//! flow's share of the buffer.

use super::{Fifo, Limit, QueueCtx, QueueDiscipline, Verdict};
use crate::ids::{FlowId, PacketId};
use std::collections::{HashMap, VecDeque};

struct FlowQueue {
    fifo: Fifo,
    /// Bytes this flow may still send in the current round.
    deficit: u64,
    /// On the active list.
    active: bool,
}

pub struct FairQueue {
    limit: Limit,
    quantum: u64,
    flows: Vec<FlowQueue>,
    index: HashMap<FlowId, usize>,
    /// Backlogged flows in service order; the front is being served.
    active: VecDeque<usize>,
    packets: u32,
    bytes: u64,
}

impl FairQueue {
    pub fn new(limit: Limit, quantum: u32) -> Self {
        Self {
            limit,
            quantum: u64::from(quantum.max(1)),
            flows: Vec::new(),
            index: HashMap::new(),
            active: VecDeque::new(),
            packets: 0,
            bytes: 0,
        }
    }

    fn flow_queue(&mut self, flow: FlowId) -> usize {
        *self.index.entry(flow).or_insert_with(|| {
            self.flows.push(FlowQueue {
                fifo: Fifo::default(),
                deficit: 0,
                active: false,
            });
            self.flows.len() - 1
        })
    }

    /// The flow holding the most bytes (lowest index on ties, for determinism).
    fn longest(&self) -> Option<usize> {
        self.active
            .iter()
            .copied()
            .max_by_key(|&i| (self.flows[i].fifo.bytes(), std::cmp::Reverse(i)))
    }
}

impl QueueDiscipline for FairQueue {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx) -> Verdict {
        let p = ctx.pkts.get(pkt);
        let (size, flow) = (p.size, p.flow);
        let q = self.flow_queue(flow);
        while !self.limit.admits(self.packets, self.bytes, size) {
            let Some(victim) = self.longest().filter(|&v| v != q) else {
                return Verdict::Dropped;
            };
            if self.flows[victim].fifo.bytes() <= self.flows[q].fifo.bytes() + u64::from(size) {
                // The arrival's flow would be (one of) the longest: it loses.
                return Verdict::Dropped;
            }
            let (dropped, dropped_size) = self.flows[victim]
                .fifo
                .pop_back()
                .expect("an active flow holds packets");
            self.packets -= 1;
            self.bytes -= u64::from(dropped_size);
            ctx.stats.drops += 1;
            ctx.stats.dropped_bytes += u64::from(dropped_size);
            ctx.pkts.free(dropped);
            // A flow emptied by the drop leaves the list when its turn comes.
        }
        let fq = &mut self.flows[q];
        fq.fifo.push(pkt, size);
        if !fq.active {
            fq.active = true;
            fq.deficit = 0;
            self.active.push_back(q);
        }
        self.packets += 1;
        self.bytes += u64::from(size);
        Verdict::Queued
    }

    fn dequeue(&mut self) -> Option<(PacketId, u32)> {
        while let Some(&q) = self.active.front() {
            let fq = &mut self.flows[q];
            match fq.fifo.front_size() {
                None => {
                    fq.active = false;
                    self.active.pop_front();
                }
                Some(size) if u64::from(size) <= fq.deficit => {
                    fq.deficit -= u64::from(size);
                    let item = fq.fifo.pop();
                    self.packets -= 1;
                    self.bytes -= u64::from(size);
                    return item;
                }
                Some(_) => {
                    // Not enough for the head packet: a new round for this flow, at
                    // the back of the list.
                    fq.deficit += self.quantum;
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
