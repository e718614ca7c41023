//! Drop-tail: queue while under the limit, drop arrivals that would exceed it.

use crate::{Fifo, Limit, PacketId, PacketStore, QueueCore, QueueCtx, QueueDiscipline, Verdict};

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

impl<S: PacketStore, R: ?Sized> QueueDiscipline<S, R> for DropTail {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) -> Verdict {
        let size = ctx.pkts.size(pkt);
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), size) {
            return Verdict::Dropped;
        }
        self.fifo.push(pkt, size);
        Verdict::Queued
    }
}

impl QueueCore for DropTail {
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
