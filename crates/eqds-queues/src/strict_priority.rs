//! Strict priority over per-class disciplines: class 0 is always served first.
//!
//! A packet's class is `Packet::class`, clamped to the last class. With PFC, class `i`
//! is priority `i`: a paused class waits while the others are served.

use crate::{
    AfqCounters, PacketId, PacketStore, QueueCore, QueueCtx, QueueDiscipline, Time, Verdict,
};

pub struct StrictPriority<S, R: ?Sized> {
    classes: Vec<Box<dyn QueueDiscipline<S, R>>>,
}

impl<S, R: ?Sized> StrictPriority<S, R> {
    pub fn new(classes: Vec<Box<dyn QueueDiscipline<S, R>>>) -> Self {
        assert!(
            !classes.is_empty(),
            "strict priority needs at least one class"
        );
        Self { classes }
    }
}

impl<S: PacketStore, R: ?Sized> QueueDiscipline<S, R> for StrictPriority<S, R> {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) -> Verdict {
        let class = (ctx.pkts.class(pkt) as usize).min(self.classes.len() - 1);
        self.classes[class].enqueue(pkt, ctx)
    }

    fn departed(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) {
        let class = (ctx.pkts.class(pkt) as usize).min(self.classes.len() - 1);
        self.classes[class].departed(pkt, ctx);
    }
}

impl<S, R: ?Sized> QueueCore for StrictPriority<S, R> {
    fn for_each_queued(&self, f: &mut dyn FnMut(PacketId)) {
        self.classes.iter().for_each(|c| c.for_each_queued(f));
    }

    fn dequeue(&mut self) -> Option<(PacketId, u32)> {
        self.classes.iter_mut().find_map(|c| c.dequeue())
    }

    fn dequeue_at(&mut self, now: Time) -> Option<(PacketId, u32)> {
        self.classes.iter_mut().find_map(|c| c.dequeue_at(now))
    }

    /// Class `i` carries priority `i`; the last class also every priority above it,
    /// and waits while any of them is paused.
    fn dequeue_unpaused(&mut self, paused: u8) -> Option<(PacketId, u32)> {
        let last = self.classes.len() - 1;
        self.classes
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| {
                let mine = if *i == last {
                    0xffu8.checked_shl(*i as u32).unwrap_or(0)
                } else {
                    1 << i
                };
                paused & mine == 0
            })
            .find_map(|(_, c)| c.dequeue())
    }

    fn backlog_bytes(&self) -> u64 {
        self.classes.iter().map(|c| c.backlog_bytes()).sum()
    }

    fn backlog_packets(&self) -> u32 {
        self.classes.iter().map(|c| c.backlog_packets()).sum()
    }

    fn serves_classes_apart(&self) -> bool {
        true
    }

    fn wants_departures(&self) -> bool {
        self.classes.iter().any(|c| c.wants_departures())
    }

    fn bypass_when_idle(&self) -> bool {
        self.classes.iter().all(|c| c.bypass_when_idle())
    }

    /// The sum over the classes that are AFQ, if any is.
    fn afq_counters(&self) -> Option<AfqCounters> {
        self.classes
            .iter()
            .filter_map(|c| c.afq_counters())
            .reduce(|a, b| a.plus(&b))
    }
}
