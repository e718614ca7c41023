//! RED with ECN marking (Floyd & Jacobson 1993; RFC 3168 for the marking).
//!
//! On each arrival the (optionally averaged) backlog is compared with `min` and `max`:
//! below `min` nothing happens, above `max` the packet is marked with certainty, in
//! between with a probability rising linearly to `p_max`. ECN-capable packets are
//! marked CE; others are dropped only if `drop_non_ect` is set, and otherwise face
//! just the tail limit (the EQDS paper's TCP EQIF: drop-tail for non-ECN, RED/ECN for
//! ECT). DCTCP's step marking is the special case `min == max == K` on the
//! instantaneous queue; DCQCN's switch marking (Kmin, Kmax, Pmax) is the general one.

use crate::{
    flags, DropTail, Limit, PacketId, PacketStore, QueueCore, QueueCtx, QueueDiscipline, Verdict,
};
use rand::{Rng, RngCore};

/// Marking thresholds, all in the unit of `in_packets`.
#[derive(Clone, Copy, Debug)]
pub struct RedParams {
    pub min: u64,
    pub max: u64,
    pub p_max: f64,
    /// Thresholds count packets (true) or bytes (false).
    pub in_packets: bool,
    /// EWMA weight of the average queue; 1.0 uses the instantaneous queue.
    pub weight: f64,
    pub drop_non_ect: bool,
    /// Mark as a packet leaves (judging the queue it leaves behind) rather than as it
    /// arrives. The DCQCN paper marks arriving packets; its authors' ns-3 model, and
    /// HPCC's after it, mark at dequeue, which tells the sender about the queue a
    /// packet's time later. Dropping non-ECT packets still happens on arrival.
    pub at_dequeue: bool,
}

/// RED marking in front of a drop-tail queue (which enforces the limit).
pub struct Red {
    tail: DropTail,
    params: RedParams,
    /// Averaged backlog in the thresholds' unit.
    avg: f64,
}

impl Red {
    pub fn new(limit: Limit, params: RedParams) -> Self {
        Self {
            tail: DropTail::new(limit),
            params,
            avg: 0.0,
        }
    }

    /// Updates the average with the backlog now and draws whether the queue is
    /// congested: RED's decision for one packet.
    fn judge<S, R: RngCore + ?Sized>(&mut self, ctx: &mut QueueCtx<S, R>) -> bool {
        let current = if self.params.in_packets {
            self.tail.backlog_packets() as f64
        } else {
            self.tail.backlog_bytes() as f64
        };
        self.avg = if self.params.weight >= 1.0 {
            current
        } else {
            (1.0 - self.params.weight) * self.avg + self.params.weight * current
        };
        let p = self.mark_probability();
        // Draw only when the outcome is uncertain, so runs with step marking consume
        // no randomness here.
        p >= 1.0 || (p > 0.0 && ctx.rng.random::<f64>() < p)
    }

    /// Probability of marking at the current average backlog.
    fn mark_probability(&self) -> f64 {
        let p = &self.params;
        if self.avg < p.min as f64 {
            0.0
        } else if self.avg >= p.max as f64 {
            1.0
        } else {
            p.p_max * (self.avg - p.min as f64) / (p.max - p.min) as f64
        }
    }
}

impl<S: PacketStore, R: RngCore + ?Sized> QueueDiscipline<S, R> for Red {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) -> Verdict {
        let congested = self.judge(ctx);
        let ect = ctx.pkts.has(pkt, flags::ECT);
        if congested && !ect && self.params.drop_non_ect {
            return Verdict::Dropped;
        }
        let verdict = self.tail.enqueue(pkt, ctx);
        if congested && ect && verdict == Verdict::Queued && !self.params.at_dequeue {
            ctx.pkts.set_flags(pkt, flags::CE);
            ctx.stats.marks += 1;
        }
        verdict
    }

    fn departed(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) {
        if !ctx.pkts.has(pkt, flags::ECT) {
            return;
        }
        if self.judge(ctx) {
            ctx.pkts.set_flags(pkt, flags::CE);
            ctx.stats.marks += 1;
        }
    }
}

impl QueueCore for Red {
    fn wants_departures(&self) -> bool {
        self.params.at_dequeue
    }

    fn for_each_queued(&self, f: &mut dyn FnMut(PacketId)) {
        self.tail.for_each_queued(f);
    }

    fn dequeue(&mut self) -> Option<(PacketId, u32)> {
        self.tail.dequeue()
    }

    fn backlog_bytes(&self) -> u64 {
        self.tail.backlog_bytes()
    }

    fn backlog_packets(&self) -> u32 {
        self.tail.backlog_packets()
    }

    /// An empty queue is never marked if `min > 0`, but an averaged queue must see
    /// every arrival to decay its average.
    fn bypass_when_idle(&self) -> bool {
        self.params.weight >= 1.0 && self.params.min > 0 && !self.params.at_dequeue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Rig, TestPacket};

    /// Step marking at one waiting packet: at enqueue the arrivals that find one
    /// ahead are marked; at dequeue the departures that leave one behind.
    #[test]
    fn marks_on_arrival_or_on_departure() {
        for at_dequeue in [false, true] {
            let params = RedParams {
                min: 1,
                max: 1,
                p_max: 1.0,
                in_packets: true,
                weight: 1.0,
                drop_non_ect: false,
                at_dequeue,
            };
            let mut red = Red::new(Limit::UNLIMITED, params);
            let mut rig = Rig::new(1);
            let ect = TestPacket {
                size: 1000,
                flags: flags::ECT,
                ..Default::default()
            };
            for _ in 0..3 {
                assert_eq!(rig.offer(&mut red, ect).1, Verdict::Queued);
            }
            assert_eq!(red.wants_departures(), at_dequeue);
            let mut marked = Vec::new();
            while let Some((id, _)) = red.dequeue() {
                if red.wants_departures() {
                    red.departed(id, &mut rig.ctx(0, 1));
                }
                marked.push(rig.pkts.get(id).has(flags::CE));
            }
            let want = if at_dequeue {
                [true, true, false] // 2 and then 1 left behind, then none
            } else {
                [false, true, true] // found 0, 1, 2 ahead
            };
            assert_eq!(marked, want, "at_dequeue = {at_dequeue}");
            assert_eq!(rig.stats.marks, 2);
        }
    }
}
