//! RED with ECN marking (Floyd & Jacobson 1993; RFC 3168 for the marking).
//!
//! On each arrival the (optionally averaged) backlog is compared with `min` and `max`:
//! below `min` nothing happens, above `max` the packet is marked with certainty, in
//! between with a probability rising linearly to `p_max`. ECN-capable packets are
//! marked CE; others are dropped only if `drop_non_ect` is set, and otherwise face
//! just the tail limit (the EQDS paper's TCP EQIF: drop-tail for non-ECN, RED/ECN for
//! ECT). DCTCP's step marking is the special case `min == max == K` on the
//! instantaneous queue; DCQCN's switch marking (Kmin, Kmax, Pmax) is the general one.

use super::{DropTail, Limit, QueueCtx, QueueDiscipline, Verdict};
use crate::ids::PacketId;
use crate::net::packet::flags;
use rand::Rng;

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

impl QueueDiscipline for Red {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx) -> Verdict {
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
        let congested = p >= 1.0 || (p > 0.0 && ctx.rng.random::<f64>() < p);
        let ect = ctx.pkts.get(pkt).has(flags::ECT);
        if congested && !ect && self.params.drop_non_ect {
            return Verdict::Dropped;
        }
        let verdict = self.tail.enqueue(pkt, ctx);
        if congested && ect && verdict == Verdict::Queued {
            ctx.pkts.get_mut(pkt).flags |= flags::CE;
            ctx.stats.marks += 1;
        }
        verdict
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
        self.params.weight >= 1.0 && self.params.min > 0
    }
}
