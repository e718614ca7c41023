//! Deficit round robin (Shreedhar and Varghese, SIGCOMM 1995) over a set of FIFOs,
//! with longest-queue drop when the shared buffer is full: the scheduler under
//! [`FairQueue`](super::FairQueue) (one FIFO per flow) and [`Sfq`](super::Sfq) (one
//! FIFO per hash bucket). Which FIFO a packet joins is theirs to say; this file only
//! serves the FIFOs and guards the buffer.
//!
//! Service: backlogged FIFOs wait on an active list in turn. The one at the front
//! sends head packets while its deficit covers them; when it does not, the FIFO gets
//! `quantum` more bytes and goes to the back of the list. A FIFO joining the list
//! starts with no deficit: its first visit only earns it a quantum.
//!
//! Buffer: when an arrival does not fit, the FIFO holding the most bytes loses its
//! last packet, as long as it holds more than the arrival's FIFO would with the
//! arrival; otherwise the arrival itself is refused. No FIFO can so keep another's
//! share of the buffer.

use crate::{Fifo, Limit, PacketId, PacketStore, QueueCtx, Verdict};
use std::collections::VecDeque;

struct Lane {
    fifo: Fifo,
    /// Bytes this FIFO may still send in its current turn.
    deficit: u64,
    /// On the active list.
    active: bool,
}

impl Lane {
    fn new() -> Self {
        Lane {
            fifo: Fifo::default(),
            deficit: 0,
            active: false,
        }
    }
}

pub(super) struct Drr {
    limit: Limit,
    quantum: u64,
    lanes: Vec<Lane>,
    /// Backlogged FIFOs in service order; the front is being served.
    active: VecDeque<usize>,
    packets: u32,
    bytes: u64,
}

impl Drr {
    /// `lanes` FIFOs to start with (more may be added); a zero quantum counts as 1.
    pub(super) fn new(limit: Limit, quantum: u32, lanes: usize) -> Self {
        Drr {
            limit,
            quantum: u64::from(quantum.max(1)),
            lanes: (0..lanes).map(|_| Lane::new()).collect(),
            active: VecDeque::new(),
            packets: 0,
            bytes: 0,
        }
    }

    /// Adds an empty FIFO and returns its index.
    pub(super) fn add_lane(&mut self) -> usize {
        self.lanes.push(Lane::new());
        self.lanes.len() - 1
    }

    /// Whether an arrival of `size` bytes fits without a drop.
    #[inline]
    pub(super) fn admits(&self, size: u32) -> bool {
        self.limit.admits(self.packets, self.bytes, size)
    }

    /// The FIFO holding the most bytes (lowest index on ties, for determinism).
    fn longest(&self) -> Option<usize> {
        self.active
            .iter()
            .copied()
            .max_by_key(|&i| (self.lanes[i].fifo.bytes(), std::cmp::Reverse(i)))
    }

    /// Queues `pkt` of `size` bytes in FIFO `lane`, dropping from the longest FIFO
    /// to make room; `Dropped` if the arrival is the one to go.
    // The inlining hints here and on `dequeue` keep the instructions per packet at
    // what they were before DRR moved out of `fair_queue.rs` (callgrind): a call to
    // `enqueue` costs ~30 more, and `dequeue` inlined into its caller ends up with an
    // out-of-line `rotate_left`, ~18 more.
    #[inline(always)]
    pub(super) fn enqueue<S: PacketStore, R: ?Sized>(
        &mut self,
        lane: usize,
        pkt: PacketId,
        size: u32,
        ctx: &mut QueueCtx<S, R>,
    ) -> Verdict {
        if !self.admits(size) && !self.make_room(lane, size, ctx) {
            return Verdict::Dropped;
        }
        let l = &mut self.lanes[lane];
        l.fifo.push(pkt, size);
        if !l.active {
            l.active = true;
            l.deficit = 0;
            self.active.push_back(lane);
        }
        self.packets += 1;
        self.bytes += u64::from(size);
        Verdict::Queued
    }

    /// Drops tails of the longest FIFO until `size` more bytes fit in `lane`; false
    /// if the arrival's FIFO would be (one of) the longest, so the arrival loses.
    fn make_room<S: PacketStore, R: ?Sized>(
        &mut self,
        lane: usize,
        size: u32,
        ctx: &mut QueueCtx<S, R>,
    ) -> bool {
        while !self.admits(size) {
            let Some(victim) = self.longest().filter(|&v| v != lane) else {
                return false;
            };
            if self.lanes[victim].fifo.bytes() <= self.lanes[lane].fifo.bytes() + u64::from(size) {
                return false;
            }
            let (dropped, dropped_size) = self.lanes[victim]
                .fifo
                .pop_back()
                .expect("an active FIFO holds packets");
            self.packets -= 1;
            self.bytes -= u64::from(dropped_size);
            ctx.drop_queued(dropped, dropped_size);
            // A FIFO emptied by the drop leaves the list when its turn comes.
        }
        true
    }

    /// Takes the next packet in DRR order.
    #[inline(never)] // see `enqueue`
    pub(super) fn dequeue(&mut self) -> Option<(PacketId, u32)> {
        while let Some(&lane) = self.active.front() {
            let l = &mut self.lanes[lane];
            match l.fifo.front_size() {
                None => {
                    l.active = false;
                    self.active.pop_front();
                }
                Some(size) if u64::from(size) <= l.deficit => {
                    l.deficit -= u64::from(size);
                    let item = l.fifo.pop();
                    self.packets -= 1;
                    self.bytes -= u64::from(size);
                    return item;
                }
                Some(_) => {
                    // Not enough for the head packet: a new turn for this FIFO, at
                    // the back of the list.
                    l.deficit += self.quantum;
                    self.active.rotate_left(1);
                }
            }
        }
        None
    }

    /// Calls `f` with every packet of every FIFO.
    pub(super) fn for_each(&self, f: &mut dyn FnMut(PacketId)) {
        self.lanes.iter().for_each(|l| l.fifo.for_each(f));
    }

    pub(super) fn backlog_bytes(&self) -> u64 {
        self.bytes
    }

    pub(super) fn backlog_packets(&self) -> u32 {
        self.packets
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Rig, TestPacket};

    /// FIFOs share bytes, not packets: with a 1000 B quantum, one FIFO of 1500 B
    /// packets and one of 500 B packets each send 1000 B a turn on average, so the
    /// small packets go two for each large one (a packet round robin would alternate).
    #[test]
    fn deficits_share_bytes_between_fifos_of_unequal_packets() {
        let mut rig = Rig::new(0);
        let mut drr = Drr::new(Limit::UNLIMITED, 1000, 2);
        for (lane, size, count) in [(0, 1500, 3), (1, 500, 6)] {
            for _ in 0..count {
                let pkt = rig.pkts.alloc(TestPacket {
                    size,
                    ..Default::default()
                });
                let v = drr.enqueue(lane, pkt, size, &mut rig.ctx(0, 1));
                assert_eq!(v, Verdict::Queued);
            }
        }
        let sizes: Vec<u32> = std::iter::from_fn(|| drr.dequeue())
            .map(|(_, size)| size)
            .collect();
        assert_eq!(sizes, [500, 500, 1500, 500, 500, 1500, 500, 500, 1500]);
        assert_eq!((drr.backlog_packets(), drr.backlog_bytes()), (0, 0));
    }
}
