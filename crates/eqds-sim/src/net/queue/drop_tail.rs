//! Drop-tail: queue while under the limit, drop arrivals that would exceed it.

use super::{Fifo, Limit, QueueCtx, QueueDiscipline, Verdict};
use crate::ids::PacketId;

pub struct DropTail {
    fifo: Fifo,
    limit: Limit,
}

impl DropTail {
    pub fn new(limit: Limit) -> Self {
        Self {
            fifo: Fifo::default(),
            limit,
        }
    }
}

impl QueueDiscipline for DropTail {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx) -> Verdict {
        let size = ctx.pkts.get(pkt).size;
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), size) {
            return Verdict::Dropped;
        }
        self.fifo.push(pkt, size);
        Verdict::Queued
    }

    fn for_each_queued(&self, f: &mut dyn FnMut(PacketId)) {
        self.fifo.for_each(f);
    }

    fn dequeue(&mut self) -> Option<(PacketId, u32)> {
        self.fifo.pop()
    }

    fn backlog_bytes(&self) -> u64 {
        self.fifo.bytes()
    }

    fn backlog_packets(&self) -> u32 {
        self.fifo.len()
    }
}
