//! Pieces shared by the integration tests' simulated networks: the network's
//! dimensions, the senders' and the receiver's configuration, the faults a network
//! may inject, a seeded generator and a time-ordered event queue.
#![allow(dead_code)]

use eqds_proto::receiver::{Policy, ReceiverConfig};
use eqds_proto::sender::{Mode, PeerId, Sender, SenderConfig};
use eqds_proto::time::{Time, PS_PER_US};
use eqds_proto::wire::NextProto;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

pub const MTU: u32 = 1500;
pub const OVERHEAD: u32 = 44;
/// One BDP: the RTT (10 us) is about 8 MTU-times at 10 Gbps.
pub const W: u32 = 8 * MTU;
/// One-way delay.
pub const DELAY: Time = 5 * PS_PER_US;
pub const RTO: Time = 200 * PS_PER_US;
/// The receiver as the senders name it.
pub const RX: PeerId = 1000;
pub const MAX_STEPS: usize = 400_000;

/// Demand lookaheads worth trying: none (the backlog only), the default 4 MTUs, and
/// anything up to beyond the window.
pub fn lookahead() -> impl proptest::strategy::Strategy<Value = u32> {
    use proptest::prelude::*;
    prop_oneof![Just(0), Just(4 * MTU), 0..W + 2 * MTU]
}

/// Network faults, each in thousandths per packet.
#[derive(Debug, Clone, Copy)]
pub struct Chaos {
    pub data_loss: u32,
    pub data_dup: u32,
    pub data_trim: u32,
    /// Extra random delay of data packets, which reorders them.
    pub data_jitter: Time,
    pub ctrl_loss: u32,
    pub ctrl_jitter: Time,
}

impl Chaos {
    pub const NONE: Self = Self {
        data_loss: 0,
        data_dup: 0,
        data_trim: 0,
        data_jitter: 0,
        ctrl_loss: 0,
        ctrl_jitter: 0,
    };

    pub fn is_lossless_in_order(&self) -> bool {
        self.data_loss == 0
            && self.data_dup == 0
            && self.data_trim == 0
            && self.data_jitter == 0
            && self.ctrl_loss == 0
            && self.ctrl_jitter == 0
    }

    /// How long one copy of a data packet takes through the network.
    pub fn data_delay(&self, rng: &mut Rng) -> Time {
        DELAY + rng.below(self.data_jitter + 1)
    }

    /// How long a control packet takes through the network, or `None` if it is lost.
    pub fn control_delay(&self, rng: &mut Rng) -> Option<Time> {
        if rng.chance(self.ctrl_loss) {
            return None;
        }
        Some(DELAY + rng.below(self.ctrl_jitter + 1))
    }
}

/// Faults up to `max_loss` thousandths lost (data and control alike), up to 100
/// duplicated, up to `max_trim` trimmed, and jitter up to four one-way delays (or none).
pub fn chaos(max_loss: u32, max_trim: u32) -> impl proptest::strategy::Strategy<Value = Chaos> {
    use proptest::prelude::*;
    (
        0..max_loss,
        0..100u32,
        0..max_trim,
        prop_oneof![Just(0), 0..4 * DELAY],
        0..max_loss,
        prop_oneof![Just(0), 0..4 * DELAY],
    )
        .prop_map(
            |(data_loss, data_dup, data_trim, data_jitter, ctrl_loss, ctrl_jitter)| Chaos {
                data_loss,
                data_dup,
                data_trim,
                data_jitter,
                ctrl_loss,
                ctrl_jitter,
            },
        )
}

/// Sender `id` of the simulated network, in first-RTT `mode`, asking for
/// `lookahead` bytes beyond its backlog while it has packets in flight. Senders with
/// an odd `seed` avoid a path for two round trips after it trims or loses a packet,
/// so that the harnesses cover spraying with and without path avoidance. Bits 3-4 of
/// `seed` choose the loss reorder window: off, or one or four one-way delays, which
/// the data jitter (up to four) and the receivers' deferred ACKs often exceed, so
/// that packets merely late are resent too. Bit 2 turns on `thin_stream_credit`.
pub fn sender_config(mode: Mode, id: u16, lookahead: u32, seed: u64) -> SenderConfig {
    SenderConfig {
        mode,
        mtu: MTU,
        overhead: OVERHEAD,
        window: W,
        initial_window: None,
        demand_lookahead: lookahead,
        send_queue_packets: 100,
        send_queue_bytes: u64::MAX,
        rto: RTO,
        credit_loss_timeout: RTO,
        paths: 4,
        sender_id: id,
        next_proto: NextProto::Ipv4,
        seed,
        // On, so that the harnesses check its bookkeeping too.
        path_stats: true,
        path_avoidance: if seed % 2 == 1 { 4 * DELAY } else { 0 },
        loss_reorder_window: match (seed >> 3) & 3 {
            1 => DELAY,
            2 => 4 * DELAY,
            _ => 0,
        },
        ecn: None,
        thin_stream_credit: (seed >> 2) & 1 == 1,
    }
}

/// `count` senders with ids 0.., each seeded from `seed` and its id. Every tunnel
/// to `RX` has the window `W`: for half the seeds it is configured so, for the
/// other half it is set per destination (`Sender::set_window`) over a configured
/// window three times larger, so that the harnesses check both ways.
pub fn senders(count: usize, mode: Mode, lookahead: u32, seed: u64) -> Vec<Sender<u64>> {
    (0..count)
        .map(|i| {
            let mut cfg = sender_config(mode, i as u16, lookahead, seed ^ i as u64);
            let own_window = seed & 2 != 0;
            if own_window {
                cfg.window = 3 * W;
            }
            let mut sender = Sender::new(cfg);
            if own_window {
                sender.set_window(RX, W);
            }
            assert_eq!(sender.window(RX), W);
            sender
        })
        .collect()
}

/// Fires the timers of `senders` that are due at `now`.
pub fn handle_due_timeouts(senders: &mut [Sender<u64>], now: Time) {
    for s in senders {
        if s.poll_timeout().is_some_and(|t| t <= now) {
            s.handle_timeout(now);
        }
    }
}

/// One sender's workload: one to four batches of 1 to 40 packets, the first at time
/// 0 and the others at random times within 300 us, as (time, inner length, payload
/// id) in time order, with ids from `next_id` on. Inner lengths are random from 1
/// byte to a full MTU's worth, or all full if `full_size`.
pub fn random_workload(rng: &mut Rng, next_id: &mut u64, full_size: bool) -> Vec<(Time, u32, u64)> {
    let full = MTU - OVERHEAD;
    let mut workload = Vec::new();
    for batch in 0..1 + rng.below(4) {
        let at = if batch == 0 {
            0
        } else {
            rng.below(300) * PS_PER_US
        };
        for _ in 0..1 + rng.below(40) {
            let len = if full_size {
                full
            } else {
                1 + rng.below(u64::from(full)) as u32
            };
            workload.push((at, len, *next_id));
            *next_id += 1;
        }
    }
    workload.sort_by_key(|&(at, _, id)| (at, id));
    workload
}

/// The receiver's credit scheduler at 10 Gbps, FIFO, ACKing as `ack_coalesce` and
/// `ack_delay` say.
pub fn receiver_config(ack_coalesce: u32, ack_delay: Time) -> ReceiverConfig {
    ReceiverConfig {
        link_rate_bps: 10_000_000_000,
        mtu: MTU,
        window: W,
        pacing_permille: 1000,
        pull_burst: 1,
        policy: Policy::Fifo,
        ack_coalesce,
        ack_delay,
        spare_pulls: false,
    }
}

/// The tests' own generator (SplitMix64), seeded by proptest: deterministic and
/// independent of the crate's internals.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An integer in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `permille` / 1000.
    pub fn chance(&mut self, permille: u32) -> bool {
        self.below(1000) < u64::from(permille)
    }
}

/// Events in the simulated network, earliest first, ties in the order scheduled.
pub struct EventQueue<E> {
    heap: BinaryHeap<Scheduled<E>>,
    scheduled: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self {
            heap: BinaryHeap::new(),
            scheduled: 0,
        }
    }
}

impl<E> EventQueue<E> {
    /// Schedules `event` at `at`.
    pub fn push(&mut self, at: Time, event: E) {
        self.scheduled += 1;
        self.heap.push(Scheduled {
            at,
            order: self.scheduled,
            event,
        });
    }

    /// When the next event is due.
    pub fn next_at(&self) -> Option<Time> {
        self.heap.peek().map(|s| s.at)
    }

    /// Takes the next event.
    pub fn pop(&mut self) -> Option<E> {
        self.heap.pop().map(|s| s.event)
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// An event due at `at`; `order` breaks ties in scheduling order.
struct Scheduled<E> {
    at: Time,
    order: u64,
    event: E,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}
impl<E> Eq for Scheduled<E> {}
impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Scheduled<E> {
    /// Earliest first, then first scheduled: a min-heap on a `BinaryHeap`.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.order).cmp(&(self.at, self.order))
    }
}
