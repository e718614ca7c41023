//! Ideal fair queueing: bit-by-bit round robin (Demers, Keshav and Shenker,
//! SIGCOMM 1989) with exact virtual time, and push-out of the largest bid when the
//! buffer is full. The "Ideal-FQ" of the AFQ paper's evaluation (§6.2), the yardstick
//! AFQ approximates (digest §1.1 and §4.12).
//!
//! The round number of BR is GPS virtual time: V(t) grows at C / n(t), the link rate
//! shared among the n(t) flows backlogged in the fluid (bit-by-bit) system, so every
//! such flow sends one byte per unit of V. A packet of L bytes arriving at `t` for a
//! flow whose previous packet finishes at F' gets the bid (finish tag)
//! `F = max(V(t), F') + L`, and packets leave in increasing F. A flow stays
//! backlogged in the fluid system until V reaches its last F, which changes n. This
//! is the exact round number, not SCFQ's or STFQ's approximation by the tag of the
//! packet in service (digest §4.12): V is brought up to the arrival time by walking
//! the fluid system's departures in order of F, so each arrival costs O(log flows).
//!
//! When an arrival finds the buffer full, the packet with the largest F is dropped:
//! the arrival itself if its F is the largest, otherwise a queued one ("drops the
//! packet with the largest round number", §6.2). The largest F queued is always the
//! last packet of its flow, so the flow's bid goes back to where that packet found
//! it, as if it had never arrived (as AFQ leaves a dropped packet's bid unwritten,
//! digest §4.4).
//!
//! Tags count bytes in units of 2^-16 byte, so V's sub-byte progress between
//! arrivals is kept; ties in F are broken by arrival order.

use crate::{Limit, PacketId, PacketStore, QueueCore, QueueCtx, QueueDiscipline, Time, Verdict};
use eqds_proto::time::PS_PER_SEC as SEC;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Tag units per byte.
const SCALE: u64 = 1 << 16;

struct Queued {
    pkt: PacketId,
    size: u32,
    key: u64,
    /// The flow's bid before this packet (its start tag).
    start: u64,
}

pub struct IdealFq {
    limit: Limit,
    /// Waiting packets by (finish tag, arrival number): the first is served next,
    /// the last is pushed out first.
    queued: BTreeMap<(u64, u64), Queued>,
    /// Per flow, the finish tag of its last packet. Entries at or below V are the
    /// same as none and are pruned now and then.
    finish: HashMap<u64, u64>,
    /// Flows backlogged in the fluid system (finish tag above V), by finish tag.
    backlogged: BTreeSet<(u64, u64)>,
    /// Virtual time (the BR round number), in tag units.
    v: u64,
    /// When `v` was last brought up to date.
    v_time: Time,
    arrivals: u64,
    prune_at: usize,
    packets: u32,
    bytes: u64,
}

impl IdealFq {
    pub fn new(limit: Limit) -> Self {
        IdealFq {
            limit,
            queued: BTreeMap::new(),
            finish: HashMap::new(),
            backlogged: BTreeSet::new(),
            v: 0,
            v_time: 0,
            arrivals: 0,
            prune_at: 1024,
            packets: 0,
            bytes: 0,
        }
    }

    /// Runs the fluid system up to `now` on a link of `rate_bps`.
    fn advance(&mut self, now: Time, rate_bps: u64) {
        // Tag units per picosecond, times 8 * SEC: rate_bps * SCALE.
        let per_ps = u128::from(rate_bps.max(1)) * u128::from(SCALE);
        let ps = 8 * u128::from(SEC);
        while self.v_time < now {
            let Some(&(next, _)) = self.backlogged.first() else {
                // Nothing backlogged: V waits (any new flow starts at V).
                break;
            };
            let n = self.backlogged.len() as u128;
            // Time for V to reach the next fluid departure at rate C / n.
            let need = (u128::from(next - self.v) * n * ps).div_ceil(per_ps);
            let left = u128::from(now - self.v_time);
            if need <= left {
                self.v = next;
                self.v_time += need as Time;
                while self.backlogged.first().is_some_and(|&(f, _)| f <= next) {
                    self.backlogged.pop_first();
                }
            } else {
                self.v += (left * per_ps / (n * ps)) as u64;
                break;
            }
        }
        self.v_time = now;
    }

    /// Sets a flow's bid, keeping the set of backlogged flows in step.
    fn set_finish(&mut self, key: u64, old: u64, new: u64) {
        if old > self.v {
            self.backlogged.remove(&(old, key));
        }
        if new > self.v {
            self.backlogged.insert((new, key));
        }
        self.finish.insert(key, new);
        if self.finish.len() > self.prune_at {
            let v = self.v;
            self.finish.retain(|_, f| *f > v);
            self.prune_at = (2 * self.finish.len()).max(1024);
        }
    }

    /// The virtual time now (for tests), in bytes.
    #[cfg(test)]
    fn virtual_bytes(&self) -> f64 {
        self.v as f64 / SCALE as f64
    }
}

impl<S: PacketStore, R: ?Sized> QueueDiscipline<S, R> for IdealFq {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) -> Verdict {
        self.advance(ctx.now, ctx.rate_bps);
        let (size, key) = (ctx.pkts.size(pkt), ctx.pkts.flow_key(pkt));
        let prev = self.finish.get(&key).copied().unwrap_or(0);
        let start = prev.max(self.v);
        let tag = (start + u64::from(size) * SCALE, self.arrivals);
        while !self.limit.admits(self.packets, self.bytes, size) {
            let Some((&largest, _)) = self.queued.last_key_value() else {
                return Verdict::Dropped;
            };
            if tag > largest {
                return Verdict::Dropped;
            }
            let out = self.queued.remove(&largest).expect("the largest is queued");
            self.packets -= 1;
            self.bytes -= u64::from(out.size);
            ctx.drop_queued(out.pkt, out.size);
            // Its flow's bid goes back to before it (it was the flow's last).
            let current = self.finish.get(&out.key).copied().unwrap_or(0);
            debug_assert_eq!(current, largest.0, "the largest tag is its flow's last");
            self.set_finish(out.key, current, out.start);
        }
        // The arrival's tag exceeds every queued tag of its own flow, so a push-out
        // never rolled back `prev`.
        self.arrivals += 1;
        self.queued.insert(
            tag,
            Queued {
                pkt,
                size,
                key,
                start,
            },
        );
        self.set_finish(key, prev, tag.0);
        self.packets += 1;
        self.bytes += u64::from(size);
        Verdict::Queued
    }
}

impl QueueCore for IdealFq {
    fn for_each_queued(&self, f: &mut dyn FnMut(PacketId)) {
        self.queued.values().for_each(|q| f(q.pkt));
    }

    fn dequeue(&mut self) -> Option<(PacketId, u32)> {
        let (_, q) = self.queued.pop_first()?;
        self.packets -= 1;
        self.bytes -= u64::from(q.size);
        Some((q.pkt, q.size))
    }

    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }

    fn backlog_packets(&self) -> u32 {
        self.packets
    }

    /// Virtual time must see every arrival.
    fn bypass_when_idle(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Rig, TestPacket};
    use eqds_proto::time::PS_PER_US as US;

    struct Bench {
        q: IdealFq,
        rig: Rig,
    }

    /// 8 Gbps: one byte per nanosecond.
    const RATE: u64 = 8_000_000_000;

    impl Bench {
        fn new(limit: Limit) -> Self {
            Bench {
                q: IdealFq::new(limit),
                rig: Rig::new(0),
            }
        }

        fn offer(&mut self, now: Time, flow: u32, size: u32) -> Verdict {
            let p = TestPacket {
                flow,
                size,
                ..Default::default()
            };
            let (pkt, v) = self.rig.offer_at(&mut self.q, now, RATE, p);
            if v == Verdict::Dropped {
                self.rig.pkts.free(pkt);
            }
            v
        }

        fn drain(&mut self) -> Vec<(u32, u32)> {
            std::iter::from_fn(|| self.q.dequeue())
                .map(|(p, _)| (self.rig.pkts.get(p).flow, self.rig.pkts.get(p).size))
                .collect()
        }
    }

    #[test]
    fn serves_in_bid_order_across_flows_and_sizes() {
        let mut b = Bench::new(Limit::UNLIMITED);
        // Flow 1: 1000, 1000 (bids 1000, 2000); flow 2: 500 x 3 (500, 1000, 1500).
        for (f, s) in [(1, 1000), (1, 1000), (2, 500), (2, 500), (2, 500)] {
            b.offer(0, f, s);
        }
        let order: Vec<u32> = b.drain().into_iter().map(|(f, _)| f).collect();
        // Ties (1000) go by arrival.
        assert_eq!(order, [2, 1, 2, 2, 1]);
    }

    /// V grows at C / n: one flow backlogged for 1000 B gives V = 500 B after
    /// 500 ns at 1 B/ns; two flows halve the pace; V stops when the fluid system
    /// empties.
    #[test]
    fn virtual_time_is_the_bit_by_bit_round_number() {
        let mut b = Bench::new(Limit::UNLIMITED);
        b.offer(0, 1, 1000);
        b.offer(500 * 1000, 2, 1000); // 500 ns later: V = 500
        assert!((b.q.virtual_bytes() - 500.0).abs() < 1e-3);
        // Flow 1 finishes at 1000 (500 more at half pace: 1000 ns), flow 2 at 1500
        // (500 more alone: 500 ns), then nothing.
        b.offer(1400 * 1000, 3, 1); // 900 ns later: V = 500 + 450
        assert!(
            (b.q.virtual_bytes() - 950.0).abs() < 1e-3,
            "{}",
            b.q.virtual_bytes()
        );
        b.offer(10 * US, 4, 1);
        let v = b.q.virtual_bytes();
        assert!((v - 1500.0).abs() < 1e-3, "{v}");
    }

    /// A flow that was idle starts at the current round, not at its old bid: a
    /// long-gone flow's history does not hold its new packets back, and a flow that
    /// just sent much does not jump the queue.
    #[test]
    fn a_returning_flow_starts_at_the_current_round() {
        let mut b = Bench::new(Limit::UNLIMITED);
        for _ in 0..4 {
            b.offer(0, 1, 1000); // bids 1000..4000
        }
        // 2000 ns later V = 2000: flow 2's packet bids 3000, ahead of flow 1's last two.
        b.offer(2000 * 1000, 2, 1000);
        let order: Vec<u32> = b.drain().into_iter().map(|(f, _)| f).collect();
        assert_eq!(order, [1, 1, 1, 2, 1]);
    }

    #[test]
    fn a_full_buffer_pushes_out_the_largest_bid() {
        let mut b = Bench::new(Limit {
            packets: Some(3),
            bytes: None,
        });
        for _ in 0..3 {
            assert_eq!(b.offer(0, 1, 1000), Verdict::Queued);
        }
        // Flow 2's first packet (bid 1000) pushes out flow 1's third (bid 3000).
        assert_eq!(b.offer(0, 2, 1000), Verdict::Queued);
        assert_eq!(b.rig.stats.drops, 1);
        // Flow 1's bid rolled back to 2000: its next packet bids 3000 again and
        // pushes out nothing with a larger bid than itself; it is the largest.
        assert_eq!(b.offer(0, 1, 1000), Verdict::Dropped);
        // Flow 2's second (2000) pushes out flow 1's second (2000, arrived earlier
        // but a tie goes to the earlier arrival, so the later one is larger: refused).
        assert_eq!(b.offer(0, 2, 1000), Verdict::Dropped);
        // A small packet of flow 3 (bid 100) pushes out flow 1's second.
        assert_eq!(b.offer(0, 3, 100), Verdict::Queued);
        assert_eq!(b.drain(), [(3, 100), (1, 1000), (2, 1000)]);
        assert_eq!(b.rig.stats.drops, 2);
        assert_eq!(b.rig.pkts.live(), 3);
    }
}
