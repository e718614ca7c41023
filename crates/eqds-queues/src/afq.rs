//! Approximate Fair Queueing (AFQ): Sharma et al., "Approximating Fair Queueing on
//! Reconfigurable Switches", NSDI 2018, §3-§4 (digest `spec/afq.md` §1.1-§1.6).
//!
//! Bit-by-bit round robin (BR) gives each packet a *bid*, the byte count at which its
//! last byte would leave if every backlogged flow sent one byte per round, and sends
//! packets in bid order. AFQ approximates it in O(1) per packet with fixed-size state:
//!
//! - each flow's last bid lives in a count-min sketch (§3.1; [`CountMinSketch`]),
//!   or, to compare, in an exact per-flow table;
//! - rounds are coarse: every flow may send `bytes_per_round` (BpR) bytes per round,
//!   and a packet's departure round is its bid divided by BpR;
//! - the port has N FIFO queues holding the next N rounds, round `r` in queue
//!   `r mod N`, served by rotating strict priority (RSP): the current round's queue
//!   first, and once it is empty the round advances and that queue becomes the
//!   lowest priority, holding the round N ahead (§3.2, Figure 5).
//!
//! The enqueue and dequeue pseudocode (the paper's Figure 3) is lost with the figures;
//! [`Afq::enqueue`] and the `dequeue` of each [`Scheduler`] are the reconstruction of
//! digest §1.3-§1.4. The open questions of digest §4 are answered as it recommends:
//!
//! - the round of a bid is `bid / BpR` (the literal text, Q2), or, with `round_of =
//!   "last_byte"`, `ceil(bid / BpR) - 1`, the round in which the packet's last byte
//!   leaves under BR;
//! - a packet whose round is N or more ahead of the current round is dropped (Q3): it
//!   can never wrap onto the queue of the current round;
//! - a dropped packet leaves its flow's bid as it was (Q4);
//! - the sketch is written by max-update (Q5), or by increment with `sketch_update =
//!   "increment"`;
//! - per-flow ECN (§5.2): a packet whose round is more than `ecn_rounds` (8) ahead of
//!   the current round is marked (Q6); `ecn = "port"` marks on the port's backlog
//!   instead, as a DCTCP switch does;
//! - the round does not advance while every queue is empty (Q7);
//! - the two-group scheduler swaps on tau or on an empty group, as written, and its
//!   late packets are counted (Q8);
//! - the port's buffer is shared by the N queues and overflows by tail drop (Q9):
//!   AFQ never evicts a queued packet.
//!
//! The hardware realisations of RSP (§4; digest §1.5) are the [`Scheduler`] variants.
//! Each counts the packets it serves out of round order, after a packet of a later
//! round ([`AfqCounters::out_of_order`]): never for the ideal RSP, which is the check
//! that the others are measured against.

use crate::count_min::{mix64, CountMinSketch, SketchUpdate, Slots};
use crate::{
    flags, Limit, PacketId, PacketStore, QueueCore, QueueCtx, QueueDiscipline, Time, Verdict,
};
use std::collections::{HashMap, VecDeque};

/// Most FIFO queues per port: the set of non-empty queues is one 64-bit mask, so
/// finding the next backlogged round is one instruction. Switches offer 8-32 (§6.4).
pub const MAX_QUEUES: u32 = 64;

/// How a bid maps to its departure round (digest §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundOf {
    /// `bid / BpR`, the paper's words (§3.2): a fresh flow's full-size first packet
    /// lands one round ahead when BpR is one packet.
    Floor,
    /// `ceil(bid / BpR) - 1`: the round in which the last byte leaves, BR's meaning.
    LastByte,
}

/// Which packets AFQ marks CE (ECT packets only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfqEcn {
    Off,
    /// Per-flow marking (§5.2): the packet's round is more than this many rounds
    /// ahead of the current one, i.e. its flow holds that many rounds of bytes.
    PerFlow {
        rounds: u64,
    },
    /// DCTCP-style step marking on the port's whole backlog: at least `k` packets
    /// (`in_packets`) or bytes waiting.
    Port {
        k: u64,
        in_packets: bool,
    },
}

/// How rotating strict priority is realised (digest §1.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RspVariant {
    /// The ideal scheduler: the round is shared by enqueue and dequeue (a
    /// disaggregated RMT switch, §4).
    Ideal,
    /// Deficit round robin over the queues in index order with `quantum` bytes per
    /// visit (§4, "Emulating RSP using a generic DRR scheduler"): RSP exactly while
    /// no round holds more than `quantum` bytes; a round that does is left unfinished
    /// and its rest is served N - 1 rounds late.
    Drr { quantum: u64 },
    /// Two groups of N/2 strict-priority queues with a priority swap between them
    /// every `tau` or when the high group is empty (§4, "Emulating RSP using strict
    /// priority queues"): what remains of the high group at a timed swap is served
    /// after the next group's rounds.
    TwoGroups { tau: Time },
    /// RSP dequeue, but the enqueue side keeps its own estimate of the round from
    /// the queues' occupancy, as an RMT pipeline must (§4, "Synchronizing the
    /// enqueue and dequeue modules"). The enqueue side passes an empty queue as
    /// soon as an arrival sees it; the dequeue side only at its next transmission.
    /// A packet queued in between for the round N ahead of the estimate lands in
    /// the queue the dequeue side still holds current, and is served before the
    /// rounds below it (counted in `out_of_order`). Occupancy is read exactly here;
    /// the coarse levels of real pipelines would widen that window.
    RmtEstimate,
}

/// AFQ's settings, as checked by the scenario loader.
#[derive(Clone, Copy, Debug)]
pub struct AfqParams {
    /// The port's buffer, shared by all queues.
    pub limit: Limit,
    /// FIFO queues (N), 1..=[`MAX_QUEUES`] (even for [`RspVariant::TwoGroups`]).
    pub queues: u32,
    /// Bytes each flow may send per round (BpR).
    pub bytes_per_round: u64,
    /// `Some((rows, columns, update))` for a sketch, `None` for an exact table.
    pub sketch: Option<(u32, u32, SketchUpdate)>,
    pub round_of: RoundOf,
    pub ecn: AfqEcn,
    pub scheduler: RspVariant,
    /// Keep an exact bid beside the sketch's to count mis-queued packets (A15).
    pub count_misqueued: bool,
    /// Seed of the sketch's hash functions.
    pub seed: u64,
}

/// AFQ's counters for one port (`ports.csv`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AfqCounters {
    /// Arrivals dropped because their round was N or more rounds ahead.
    pub horizon_drops: u64,
    /// Arrivals dropped because the port's buffer was full.
    pub buffer_drops: u64,
    /// Packets served after a packet of a later round (not by the ideal RSP).
    pub out_of_order: u64,
    /// Arrivals whose sketch bid fell in a later round than their exact bid would
    /// (`None` unless `count_misqueued`).
    pub misqueued: Option<u64>,
    /// Arrivals whose sketch bid was compared with the exact one.
    pub compared: Option<u64>,
}

impl AfqCounters {
    /// Both ports' counts together (a port with AFQ in several classes).
    pub fn plus(&self, o: &AfqCounters) -> AfqCounters {
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            _ => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        AfqCounters {
            horizon_drops: self.horizon_drops + o.horizon_drops,
            buffer_drops: self.buffer_drops + o.buffer_drops,
            out_of_order: self.out_of_order + o.out_of_order,
            misqueued: add(self.misqueued, o.misqueued),
            compared: add(self.compared, o.compared),
        }
    }
}

/// Exact per-flow bids (the comparison mode, and the shadow that counts mis-queued
/// packets). A bid at or below the current round's start is the same as none (it is
/// pushed up to it), so such entries are pruned now and then: the table holds the
/// flows with bytes queued, not every flow ever seen.
#[derive(Default)]
struct ExactBids {
    bids: HashMap<u64, u64>,
    /// Prune when the table grows past this.
    prune_at: usize,
}

impl ExactBids {
    fn read(&self, key: u64) -> u64 {
        self.bids.get(&key).copied().unwrap_or(0)
    }

    /// Records `bid`; `floor` is the current round's first bid (entries at or below
    /// it can go).
    fn write(&mut self, key: u64, bid: u64, floor: u64) {
        self.bids.insert(key, bid);
        if self.bids.len() > self.prune_at {
            self.bids.retain(|_, b| *b > floor);
            self.prune_at = (2 * self.bids.len()).max(1024);
        }
    }
}

enum Bids {
    Sketch(CountMinSketch),
    Exact(ExactBids),
}

/// A packet waiting in one of the FIFOs, with the bid it was queued at.
#[derive(Clone, Copy)]
struct Entry {
    pkt: PacketId,
    size: u32,
    bid: u64,
}

/// Scheduler state beside the queues; see [`RspVariant`].
enum Scheduler {
    Ideal,
    Drr {
        quantum: u64,
        /// Per queue, the bytes it may still send (DRR's deficit counter).
        deficit: Vec<u64>,
        /// The queue under the pointer has had this visit's quantum.
        credited: bool,
    },
    TwoGroups {
        tau: Time,
        /// First round of the high-priority group's block of N/2 rounds; the low
        /// group holds the next block. A multiple of N/2.
        base: u64,
        /// When the groups last swapped (or the port last became busy).
        last_swap: Time,
    },
    RmtEstimate {
        /// The enqueue side's estimate of the current round.
        estimate: u64,
        /// One past the highest round the enqueue side ever assigned.
        next_unassigned: u64,
    },
}

pub struct Afq {
    /// The N FIFOs; round `r` waits in `queues[r mod N]` (two groups: see
    /// [`Afq::group_queue`]).
    queues: Vec<VecDeque<Entry>>,
    /// Bit `i` set when `queues[i]` holds packets.
    nonempty: u64,
    /// N, the number of queues.
    n: u64,
    /// Bytes per round (BpR).
    bpr: u64,
    round_of: RoundOf,
    /// The port's buffer, shared by the queues.
    limit: Limit,
    ecn: AfqEcn,
    /// Each flow's last bid: the sketch, or the exact table.
    bids: Bids,
    /// Exact bids beside a sketch, to count mis-queued packets.
    shadow: Option<ExactBids>,
    sched: Scheduler,
    /// The current round as the dequeue side (the RSP) sees it.
    round: u64,
    /// The highest round served so far (for `out_of_order`).
    max_served: u64,
    /// The latest time seen (for the two-group timer on paused dequeues).
    clock: Time,
    /// Packets and bytes waiting, all queues together.
    packets: u32,
    bytes: u64,
    counters: AfqCounters,
}

impl Afq {
    /// Builds the discipline. The parameters were validated by the scenario loader.
    pub fn new(p: AfqParams) -> Self {
        assert!((1..=MAX_QUEUES).contains(&p.queues) && p.bytes_per_round > 0);
        let n = u64::from(p.queues);
        let bids = match p.sketch {
            Some((rows, columns, update)) => {
                Bids::Sketch(CountMinSketch::new(rows, columns, update, mix64(p.seed)))
            }
            None => Bids::Exact(ExactBids::default()),
        };
        let sched = match p.scheduler {
            RspVariant::Ideal => Scheduler::Ideal,
            RspVariant::Drr { quantum } => Scheduler::Drr {
                quantum: quantum.max(1),
                deficit: vec![0; p.queues as usize],
                credited: false,
            },
            RspVariant::TwoGroups { tau } => {
                assert!(
                    n >= 2 && n % 2 == 0,
                    "two groups need an even number of queues"
                );
                Scheduler::TwoGroups {
                    tau: tau.max(1),
                    base: 0,
                    last_swap: 0,
                }
            }
            RspVariant::RmtEstimate => Scheduler::RmtEstimate {
                estimate: 0,
                next_unassigned: 0,
            },
        };
        let counting = p.count_misqueued && p.sketch.is_some();
        Afq {
            queues: (0..p.queues).map(|_| VecDeque::new()).collect(),
            nonempty: 0,
            n,
            bpr: p.bytes_per_round,
            round_of: p.round_of,
            limit: p.limit,
            ecn: p.ecn,
            bids,
            shadow: counting.then(ExactBids::default),
            sched,
            round: 0,
            max_served: 0,
            clock: 0,
            packets: 0,
            bytes: 0,
            counters: AfqCounters {
                misqueued: counting.then_some(0),
                compared: counting.then_some(0),
                ..Default::default()
            },
        }
    }

    /// The departure round of a bid.
    #[inline]
    fn round_of(&self, bid: u64) -> u64 {
        match self.round_of {
            RoundOf::Floor => bid / self.bpr,
            // A bid of 0 (only a zero-byte packet of a fresh flow) is round 0.
            RoundOf::LastByte => bid.saturating_sub(1) / self.bpr,
        }
    }

    /// Distance from queue `from` to the next non-empty queue, going round (0 if
    /// `from` itself holds packets); `None` if all are empty.
    #[inline]
    fn next_busy(&self, from: u64) -> Option<u64> {
        if self.nonempty == 0 {
            return None;
        }
        let n = self.n as u32;
        let from = (from % self.n) as u32;
        let mask = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        // Rotate the n-bit mask right by `from`: bit 0 is then queue `from`.
        let rotated = if from == 0 {
            self.nonempty
        } else {
            ((self.nonempty >> from) | (self.nonempty << (n - from))) & mask
        };
        Some(u64::from(rotated.trailing_zeros()))
    }

    /// Half the queues: a group of the two-group scheduler.
    #[inline]
    fn half(&self) -> u64 {
        self.n / 2
    }

    /// Two groups: the queue of round `r`. Block `r / (N/2)` lives in group
    /// `block mod 2`, round `r` at position `r mod (N/2)` within it.
    #[inline]
    fn group_queue(&self, r: u64) -> u64 {
        let h = self.half();
        ((r / h) % 2) * h + r % h
    }

    /// Two groups: the mask of the group holding the block that starts at `base`.
    #[inline]
    fn group_mask(&self, base: u64) -> u64 {
        let h = self.half();
        let low = (1u64 << h) - 1;
        if (base / h) % 2 == 0 {
            low
        } else {
            low << h
        }
    }

    /// Runs the two-group scheduler's timer up to `now`: every `tau` the groups swap
    /// while the port holds packets; an idle port restarts the period when it next
    /// receives one.
    fn tick(&mut self, now: Time) {
        self.clock = self.clock.max(now);
        let busy = self.packets > 0;
        let h = self.half();
        if let Scheduler::TwoGroups {
            tau,
            base,
            last_swap,
        } = &mut self.sched
        {
            if !busy {
                *last_swap = now;
                return;
            }
            let swaps = (now.saturating_sub(*last_swap)) / *tau;
            if swaps > 0 {
                *base += swaps * h;
                *last_swap += swaps * *tau;
            }
        }
    }

    /// The round the enqueue side holds current: the one bids are pushed up to, and
    /// that the horizon and ECN thresholds count from; with the first round beyond
    /// the horizon.
    fn enqueue_round(&mut self, now: Time) -> (u64, u64) {
        match self.sched {
            Scheduler::Ideal | Scheduler::Drr { .. } => (self.round, self.round + self.n),
            Scheduler::TwoGroups { .. } => {
                self.tick(now);
                let Scheduler::TwoGroups { base, .. } = self.sched else {
                    unreachable!()
                };
                // The round the dequeue side serves, shared as with the ideal RSP (the
                // emulation replaces the scheduler, not the round), and never below
                // the high group's block: a timed swap moves every flow up to it.
                (self.round.max(base), base + self.n)
            }
            Scheduler::RmtEstimate {
                estimate,
                next_unassigned,
            } => {
                // Past a drained queue to the next one holding packets, but never
                // past the first round no packet was assigned to.
                let mut e = estimate;
                if e < next_unassigned && self.queues[(e % self.n) as usize].is_empty() {
                    let jump = self.next_busy(e).unwrap_or(u64::MAX);
                    e = e.saturating_add(jump).min(next_unassigned);
                }
                if let Scheduler::RmtEstimate { estimate, .. } = &mut self.sched {
                    *estimate = e;
                }
                (e, e + self.n)
            }
        }
    }

    #[inline]
    fn queue_of(&self, r: u64) -> usize {
        match self.sched {
            Scheduler::TwoGroups { .. } => self.group_queue(r) as usize,
            _ => (r % self.n) as usize,
        }
    }

    /// Takes the head of queue `q`, with the bookkeeping every scheduler shares.
    #[inline]
    fn pop(&mut self, q: usize) -> Option<(PacketId, u32)> {
        let e = self.queues[q].pop_front()?;
        if self.queues[q].is_empty() {
            self.nonempty &= !(1u64 << q);
        }
        self.packets -= 1;
        self.bytes -= u64::from(e.size);
        let r = self.round_of(e.bid);
        if r < self.max_served {
            self.counters.out_of_order += 1;
        } else {
            self.max_served = r;
        }
        Some((e.pkt, e.size))
    }

    pub fn counters(&self) -> AfqCounters {
        self.counters
    }

    fn dequeue_ideal(&mut self) -> Option<(PacketId, u32)> {
        // Rotate past drained rounds; the round stays put while all are empty.
        let skip = self.next_busy(self.round)?;
        self.round += skip;
        self.pop((self.round % self.n) as usize)
    }

    /// RSP as a hardware scheduler does it: a queue drops to the lowest priority the
    /// moment it drains (§3.2), so after the last packet of a busy period the round
    /// is one past the last served. The RMT enqueue side, which stops at the first
    /// round it never assigned, then agrees with it; with the lazy rotation of
    /// [`Afq::dequeue_ideal`] the estimate would run one round ahead after every idle
    /// period, and the round N ahead of the estimate would alias onto the queue the
    /// dequeue side still holds current.
    fn dequeue_eager(&mut self) -> Option<(PacketId, u32)> {
        let skip = self.next_busy(self.round)?;
        self.round += skip;
        let q = (self.round % self.n) as usize;
        let out = self.pop(q);
        if self.queues[q].is_empty() {
            self.round += 1;
        }
        out
    }

    fn dequeue_drr(&mut self) -> Option<(PacketId, u32)> {
        if self.packets == 0 {
            return None;
        }
        loop {
            let q = (self.round % self.n) as usize;
            let Scheduler::Drr {
                quantum,
                deficit,
                credited,
            } = &mut self.sched
            else {
                unreachable!()
            };
            let Some(head) = self.queues[q].front() else {
                // DRR passes over an empty queue (its deficit is 0).
                deficit[q] = 0;
                *credited = false;
                self.round += 1;
                continue;
            };
            if !*credited {
                deficit[q] += *quantum;
                *credited = true;
            }
            if u64::from(head.size) <= deficit[q] {
                deficit[q] -= u64::from(head.size);
                let out = self.pop(q);
                if let Scheduler::Drr {
                    deficit, credited, ..
                } = &mut self.sched
                {
                    if self.queues[q].is_empty() {
                        // Emptied: DRR zeroes its deficit and moves on.
                        deficit[q] = 0;
                        *credited = false;
                        self.round += 1;
                    }
                }
                return out;
            }
            // The quantum is spent with packets left: the next queue's turn.
            *credited = false;
            self.round += 1;
        }
    }

    fn dequeue_two_groups(&mut self, now: Time) -> Option<(PacketId, u32)> {
        self.tick(now);
        if self.packets == 0 {
            return None;
        }
        let Scheduler::TwoGroups { base, .. } = self.sched else {
            unreachable!()
        };
        let mut base = base;
        if self.nonempty & self.group_mask(base) == 0 {
            // The high group is empty: swap now, and the period restarts.
            base += self.half();
            if let Scheduler::TwoGroups {
                base: b, last_swap, ..
            } = &mut self.sched
            {
                *b = base;
                *last_swap = now.max(*last_swap);
            }
        }
        let high = self.nonempty & self.group_mask(base);
        let q = high.trailing_zeros() as usize;
        self.round = base + (q as u64 % self.half());
        self.pop(q)
    }
}

impl<S: PacketStore, R: ?Sized> QueueDiscipline<S, R> for Afq {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) -> Verdict {
        let p = &*ctx.pkts;
        let (size, key, ect) = (p.size(pkt), p.flow_key(pkt), p.has(pkt, flags::ECT));
        let (cur, horizon) = self.enqueue_round(ctx.now);
        let start = cur * self.bpr;
        // The bid of the flow's previous packet, pushed up to the current round.
        let (read, slots): (u64, Option<Slots>) = match &self.bids {
            Bids::Sketch(s) => {
                let (read, slots) = s.read(key);
                (read, Some(slots))
            }
            Bids::Exact(t) => (t.read(key), None),
        };
        let bid = read.max(start) + u64::from(size);
        let r = self.round_of(bid);
        let exact_bid = self
            .shadow
            .as_ref()
            .map(|t| t.read(key).max(start) + u64::from(size));
        if let Some(exact) = exact_bid {
            debug_assert!(bid >= exact, "the sketch never under-estimates");
            *self.counters.compared.as_mut().expect("counting") += 1;
            if r > self.round_of(exact) {
                *self.counters.misqueued.as_mut().expect("counting") += 1;
            }
        }
        if r >= horizon {
            // N or more rounds ahead: its queue would be the current round's.
            self.counters.horizon_drops += 1;
            return Verdict::Dropped;
        }
        if !self.limit.admits(self.packets, self.bytes, size) {
            self.counters.buffer_drops += 1;
            return Verdict::Dropped;
        }
        let mark = match self.ecn {
            AfqEcn::Off => false,
            AfqEcn::PerFlow { rounds } => r - cur > rounds,
            AfqEcn::Port { k, in_packets } => {
                let backlog = if in_packets {
                    u64::from(self.packets)
                } else {
                    self.bytes
                };
                backlog >= k
            }
        };
        if mark && ect {
            ctx.pkts.set_flags(pkt, flags::CE);
            ctx.stats.marks += 1;
        }
        let q = self.queue_of(r);
        self.queues[q].push_back(Entry { pkt, size, bid });
        self.nonempty |= 1u64 << q;
        self.packets += 1;
        self.bytes += u64::from(size);
        match (&mut self.bids, slots) {
            (Bids::Sketch(s), Some(slots)) => s.write(&slots, read, bid),
            (Bids::Exact(t), _) => t.write(key, bid, start),
            (Bids::Sketch(_), None) => unreachable!("a sketch read gives slots"),
        }
        if let (Some(t), Some(exact)) = (&mut self.shadow, exact_bid) {
            t.write(key, exact, start);
        }
        if let Scheduler::RmtEstimate {
            next_unassigned, ..
        } = &mut self.sched
        {
            *next_unassigned = (*next_unassigned).max(r + 1);
        }
        Verdict::Queued
    }
}

impl QueueCore for Afq {
    fn for_each_queued(&self, f: &mut dyn FnMut(PacketId)) {
        self.queues.iter().flatten().for_each(|e| f(e.pkt));
    }

    fn dequeue(&mut self) -> Option<(PacketId, u32)> {
        self.dequeue_at(self.clock)
    }

    fn dequeue_at(&mut self, now: Time) -> Option<(PacketId, u32)> {
        match self.sched {
            Scheduler::Ideal => self.dequeue_ideal(),
            Scheduler::RmtEstimate { .. } => self.dequeue_eager(),
            Scheduler::Drr { .. } => self.dequeue_drr(),
            Scheduler::TwoGroups { .. } => self.dequeue_two_groups(now),
        }
    }

    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }

    fn backlog_packets(&self) -> u32 {
        self.packets
    }

    /// Every packet's bid must reach the sketch, even at an idle port.
    fn bypass_when_idle(&self) -> bool {
        false
    }

    fn afq_counters(&self) -> Option<AfqCounters> {
        Some(self.counters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Rig, TestPacket, VecStore};
    use crate::IdealFq;
    use eqds_proto::time::PS_PER_US as US;
    use proptest::prelude::*;
    use rand_chacha::ChaCha8Rng;

    /// Exact bids, ideal RSP, no limit, no ECN: the plainest AFQ.
    fn params(queues: u32, bpr: u64) -> AfqParams {
        AfqParams {
            limit: Limit::UNLIMITED,
            queues,
            bytes_per_round: bpr,
            sketch: None,
            round_of: RoundOf::Floor,
            ecn: AfqEcn::Off,
            scheduler: RspVariant::Ideal,
            count_misqueued: false,
            seed: 1,
        }
    }

    /// A discipline with its packets, driven by hand.
    struct Bench<Q> {
        q: Q,
        rig: Rig,
    }

    impl<Q: QueueDiscipline<VecStore, ChaCha8Rng>> Bench<Q> {
        fn new(q: Q) -> Self {
            Bench {
                q,
                rig: Rig::new(0),
            }
        }

        /// Offers a packet of `flow`; returns it if queued.
        fn offer_at(&mut self, now: Time, flow: u32, size: u32, ect: bool) -> Option<PacketId> {
            let p = TestPacket {
                flow,
                size,
                flags: if ect { flags::ECT } else { 0 },
                ..Default::default()
            };
            match self.rig.offer_at(&mut self.q, now, 10_000_000_000, p) {
                (pkt, Verdict::Queued) => Some(pkt),
                (pkt, _) => {
                    self.rig.pkts.free(pkt);
                    None
                }
            }
        }

        fn offer(&mut self, flow: u32, size: u32) -> Option<PacketId> {
            self.offer_at(0, flow, size, false)
        }

        fn take_at(&mut self, now: Time) -> Option<PacketId> {
            self.q.dequeue_at(now).map(|(p, _)| p)
        }

        fn flows(&mut self) -> Vec<u32> {
            self.rig.drain_flows(&mut self.q)
        }
    }

    #[test]
    fn serves_rounds_in_order_and_each_round_in_arrival_order() {
        let mut b = Bench::new(Afq::new(params(8, 1000)));
        for _ in 0..3 {
            b.offer(1, 1000); // rounds 1, 2, 3
        }
        b.offer(2, 1000); // round 1
        b.offer(3, 500); // round 0: half a round
        b.offer(3, 1000); // round 1 (bid 1500)
        assert_eq!(b.flows(), [3, 1, 2, 3, 1, 1]);
        assert_eq!(b.q.counters().out_of_order, 0);
    }

    /// With BpR one packet, a fresh flow's first full packet lands in the next round
    /// by the paper's `bid / BpR` (digest §4.2), in the current one by the round of its
    /// last byte.
    #[test]
    fn the_round_of_a_bid_is_the_floor_or_the_last_bytes() {
        for (round_of, queue) in [(RoundOf::Floor, 1), (RoundOf::LastByte, 0)] {
            let mut b = Bench::new(Afq::new(AfqParams {
                round_of,
                ..params(8, 1000)
            }));
            b.offer(1, 1000);
            assert_eq!(b.q.queues[queue].len(), 1, "{round_of:?}");
        }
    }

    #[test]
    fn a_packet_n_rounds_ahead_is_dropped_and_its_bid_left_alone() {
        let mut b = Bench::new(Afq::new(params(4, 1000)));
        let queued: Vec<bool> = (0..5).map(|_| b.offer(1, 1000).is_some()).collect();
        // Rounds 1, 2, 3 fit; round 4 would be queue 0, the current round's: dropped,
        // and the flow's bid stays at round 3, so the next is dropped too.
        assert_eq!(queued, [true, true, true, false, false]);
        assert_eq!(b.q.counters().horizon_drops, 2);
        // Once round 1 is served and round 0's queue drained, round 4 fits.
        b.take_at(0);
        assert!(b.offer(1, 1000).is_some());
        assert_eq!(b.q.queues[0].len(), 1);
    }

    #[test]
    fn a_full_buffer_drops_the_arrival_and_nothing_queued() {
        let mut b = Bench::new(Afq::new(AfqParams {
            limit: Limit {
                packets: Some(2),
                bytes: None,
            },
            ..params(8, 1000)
        }));
        assert!(b.offer(1, 1000).is_some());
        assert!(b.offer(1, 1000).is_some());
        // Flow 2's packet would be served first, but AFQ never evicts.
        assert!(b.offer(2, 100).is_none());
        assert_eq!(b.q.counters().buffer_drops, 1);
        assert_eq!(b.flows(), [1, 1]);
        // The dropped packet did not move flow 2's bid: its next is in round 0.
        b.offer(2, 100);
        assert_eq!(b.q.queues[b.q.round as usize % 8].len(), 1);
    }

    /// Per-flow ECN (§5.2): a packet more than 8 rounds ahead is marked, whatever the
    /// other flows hold; only ECN-capable packets are.
    #[test]
    fn marks_a_flow_more_than_eight_rounds_ahead() {
        let mut b = Bench::new(Afq::new(AfqParams {
            ecn: AfqEcn::PerFlow { rounds: 8 },
            ..params(32, 1000)
        }));
        let marked: Vec<bool> = (0..12)
            .map(|_| {
                let p = b.offer_at(0, 1, 1000, true).unwrap();
                b.rig.pkts.get(p).has(flags::CE)
            })
            .collect();
        // Rounds 1..=12: marked from round 9.
        assert_eq!(marked.iter().filter(|&&m| m).count(), 4);
        assert!(!marked[7] && marked[8]);
        let p = b.offer_at(0, 1, 1000, false).unwrap();
        assert!(!b.rig.pkts.get(p).has(flags::CE));
        // Another flow, alone in its first rounds, is not.
        let p = b.offer_at(0, 2, 1000, true).unwrap();
        assert!(!b.rig.pkts.get(p).has(flags::CE));
        assert_eq!(b.rig.stats.marks, 4);
    }

    #[test]
    fn port_marking_counts_the_whole_backlog() {
        let mut b = Bench::new(Afq::new(AfqParams {
            ecn: AfqEcn::Port {
                k: 2,
                in_packets: true,
            },
            ..params(32, 1000)
        }));
        let marked: Vec<bool> = [1, 2, 3, 4]
            .iter()
            .map(|&f| {
                let p = b.offer_at(0, f, 1000, true).unwrap();
                b.rig.pkts.get(p).has(flags::CE)
            })
            .collect();
        assert_eq!(marked, [false, false, true, true]);
    }

    /// DRR with a quantum below a round's bytes leaves the round unfinished: its
    /// rest is served after later rounds and counted. A quantum above serves as RSP.
    #[test]
    fn drr_emulates_rsp_only_with_a_quantum_above_a_rounds_bytes() {
        let run = |quantum| {
            let mut b = Bench::new(Afq::new(AfqParams {
                scheduler: RspVariant::Drr { quantum },
                ..params(8, 1000)
            }));
            for f in 1..=4 {
                for _ in 0..3 {
                    b.offer(f, 1000);
                }
            }
            (b.flows(), b.q.counters().out_of_order)
        };
        let mut rsp = Bench::new(Afq::new(params(8, 1000)));
        for f in 1..=4 {
            for _ in 0..3 {
                rsp.offer(f, 1000);
            }
        }
        assert_eq!(run(1 << 20), (rsp.flows(), 0));
        let (_, late) = run(2000);
        assert!(late > 0, "a 2000 B quantum splits 4000 B rounds");
    }

    /// Two groups of two queues, tau 1 us: a timed swap with the high group still
    /// holding packets serves them after the next block's rounds. With a tau longer
    /// than the run it serves as RSP.
    #[test]
    fn two_groups_serve_late_after_a_timed_swap() {
        let run = |tau| {
            let mut b = Bench::new(Afq::new(AfqParams {
                scheduler: RspVariant::TwoGroups { tau },
                ..params(4, 1000)
            }));
            // Rounds 1..=3 for three flows, 3 packets a round.
            for f in 1..=3 {
                for _ in 0..3 {
                    b.offer_at(0, f, 1000, false);
                }
            }
            let mut order = Vec::new();
            let mut now = 0;
            while let Some(p) = b.take_at(now) {
                order.push(b.rig.pkts.get(p).flow);
                now += US / 2;
            }
            (order, b.q.counters().out_of_order)
        };
        let mut rsp = Bench::new(Afq::new(params(4, 1000)));
        for f in 1..=3 {
            for _ in 0..3 {
                rsp.offer(f, 1000);
            }
        }
        assert_eq!(run(1_000 * US), (rsp.flows(), 0));
        let (order, late) = run(US);
        assert_eq!(order.len(), 9);
        assert!(late > 0);
    }

    /// A one-column sketch makes every flow share one bid: the second flow's packets
    /// land in later rounds than their exact bids, and are counted.
    #[test]
    fn counts_packets_the_sketch_puts_in_a_later_round() {
        let run = |columns| {
            let mut b = Bench::new(Afq::new(AfqParams {
                sketch: Some((1, columns, SketchUpdate::Max)),
                count_misqueued: true,
                ..params(32, 1000)
            }));
            for _ in 0..4 {
                b.offer(1, 1000);
                b.offer(2, 1000);
            }
            b.q.counters()
        };
        let c = run(1);
        assert_eq!(c.compared, Some(8));
        assert!(c.misqueued.unwrap() >= 4, "{c:?}");
        assert_eq!(run(1 << 16).misqueued, Some(0));
    }

    /// The rounds a queue may hold, as the enqueue side sees them: `[start, end)`,
    /// round `r` in queue `queue_of(r)`.
    fn check_window(q: &Afq) -> Result<(), String> {
        let (start, end) = match q.sched {
            Scheduler::Ideal | Scheduler::Drr { .. } => (q.round, q.round + q.n),
            Scheduler::RmtEstimate { estimate, .. } => (estimate, estimate + q.n),
            Scheduler::TwoGroups { base, .. } => (base, base + q.n),
        };
        for (i, fifo) in q.queues.iter().enumerate() {
            assert_eq!(
                fifo.is_empty(),
                q.nonempty & (1 << i) == 0,
                "mask of queue {i}"
            );
            for e in fifo {
                let r = q.round_of(e.bid);
                if r < start || r >= end || q.queue_of(r) != i {
                    return Err(format!(
                        "queue {i} holds round {r}, window [{start}, {end})"
                    ));
                }
            }
        }
        Ok(())
    }

    fn scheduler(i: u8) -> RspVariant {
        match i {
            0 => RspVariant::Ideal,
            1 => RspVariant::RmtEstimate,
            2 => RspVariant::Drr { quantum: 1 << 40 },
            // A tau no run reaches: only empty-group swaps.
            _ => RspVariant::TwoGroups { tau: Time::MAX / 2 },
        }
    }

    proptest! {
        /// Whatever arrives and leaves, no queue holds a round outside
        /// [round, round + N) of the enqueue side's round (at its place
        /// `round mod N`, or its group's). The ideal RSP, DRR with a quantum above any
        /// round and two groups without timed swaps never serve a round after a later
        /// one; the RMT estimate may (see [`RspVariant::RmtEstimate`]).
        #[test]
        fn no_queue_holds_a_round_outside_the_window(
            sched in 0u8..4,
            half_queues in 1u32..=8,
            bpr in 1u64..3000,
            sketch in any::<bool>(),
            ops in proptest::collection::vec((0u32..6, 1u32..3000, 0u8..3), 1..400),
        ) {
            let mut b = Bench::new(Afq::new(AfqParams {
                sketch: sketch.then_some((2, 4, SketchUpdate::Max)),
                limit: Limit { packets: Some(64), bytes: None },
                scheduler: scheduler(sched),
                ..params(2 * half_queues, bpr)
            }));
            for (flow, size, op) in ops {
                if op == 0 {
                    b.take_at(0);
                } else {
                    b.offer(flow, size);
                }
                if let Err(e) = check_window(&b.q) {
                    prop_assert!(false, "{e}");
                }
            }
            while b.take_at(0).is_some() {}
            if !matches!(b.q.sched, Scheduler::RmtEstimate { .. }) {
                prop_assert_eq!(b.q.counters().out_of_order, 0);
            }
            prop_assert_eq!(b.q.backlog_packets(), 0);
        }

        /// A burst at an idle port (every packet arrives before any leaves), with
        /// exact bids and enough queues that none is dropped. Ideal-FQ's virtual
        /// time stays at 0, so a packet's bid there is its flow's bytes up to and
        /// including it, the same number AFQ computes. Then:
        /// - AFQ serves the same sequence of rounds (bid / BpR) as Ideal-FQ, so
        ///   each packet's place differs only among the packets of its round (at most
        ///   one round's bytes, the bound of §3.2);
        /// - within a round AFQ serves in arrival order;
        /// - with a BpR of one byte a round is a bid, and the orders are identical.
        #[test]
        fn afq_serves_a_burst_as_ideal_fq_up_to_the_order_within_a_round(
            one_byte in any::<bool>(),
            arrivals in proptest::collection::vec((0u32..5, 0u32..1500), 1..60),
        ) {
            let (bpr, n) = if one_byte { (1, 64) } else { (1500, 64) };
            let mut afq = Bench::new(Afq::new(params(n, bpr)));
            let mut ideal = Bench::new(IdealFq::new(Limit::UNLIMITED));
            // Keep every flow within the 63 rounds ahead that 64 queues hold.
            let mut sent = [0u64; 5];
            let mut order = Vec::new();
            for (flow, size) in arrivals {
                let size = if one_byte { 1 + size % 3 } else { 64 + size % 1437 };
                if sent[flow as usize] + u64::from(size) >= (n as u64 - 1) * bpr {
                    continue;
                }
                sent[flow as usize] += u64::from(size);
                let a = afq.offer(flow, size).expect("no drop");
                let i = ideal.offer(flow, size).expect("no drop");
                prop_assert_eq!(a, i, "both slabs hand out the same ids");
                order.push((a, sent[flow as usize] / bpr));
            }
            let round: std::collections::HashMap<PacketId, u64> = order.iter().copied().collect();
            let arrival: std::collections::HashMap<PacketId, usize> =
                order.iter().enumerate().map(|(i, &(p, _))| (p, i)).collect();
            let a: Vec<PacketId> = std::iter::from_fn(|| afq.q.dequeue()).map(|(p, _)| p).collect();
            let i: Vec<PacketId> = std::iter::from_fn(|| ideal.q.dequeue()).map(|(p, _)| p).collect();
            let rounds = |v: &[PacketId]| v.iter().map(|p| round[p]).collect::<Vec<_>>();
            prop_assert_eq!(rounds(&a), rounds(&i));
            for w in a.windows(2) {
                if round[&w[0]] == round[&w[1]] {
                    prop_assert!(arrival[&w[0]] < arrival[&w[1]], "FIFO within a round");
                }
            }
            if one_byte {
                prop_assert_eq!(a, i);
            }
        }
    }
}
