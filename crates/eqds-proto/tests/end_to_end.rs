//! The joined-up EQDS end to end: sending EQIFs (credit, queues, tunnel state
//! machines) and one receiving EQIF (credit scheduler, tunnel state machines, reorder
//! queues) talking through a network that loses, duplicates, reorders and trims data
//! packets and loses or delays control packets, while either side drops a tunnel's
//! state unilaterally at random steps.
//!
//! Checked:
//! - **exactly once**: every payload enqueued is delivered to the receiving host
//!   exactly once, with documented exceptions, all counted:
//!   - *lost* (delivered at most once): payloads the receiver held in its reorder
//!     queue when it dropped that peer's state. They were ACKed, so the sender will
//!     not resend them (`ReceivingEqif::drop_peer` hands them back);
//!   - *abandoned* (at most once): payloads the sender held when it dropped its
//!     tunnel (handed back by `Sender::drop_tunnel`; some may have been delivered);
//!   - *maybe twice* (at least once): a sender that re-establishes resends its
//!     whole unacknowledged window in the new epoch (Appendix A), so a packet already
//!     delivered whose ACK was lost or still on the way is delivered again. The test
//!     watches each sender's `renumbered` counter and excuses what was unacknowledged
//!     when it rose. Re-establishments follow drops: an RST after a receiver drop, or
//!     a stale RST or SYN-ACK reaching a sender that dropped its tunnel and so cannot
//!     tell it from a current one. Likewise a late duplicate of an old SYN packet
//!     re-establishes the old epoch at a receiver that dropped its state, so payloads
//!     sent with SYN before a receiver drop are excused too. Runs without faults
//!     must have no exception at all;
//! - **in order**: per sender, packets released in order within one receiver epoch
//!   carry increasing sequence numbers and payloads in enqueue order, between
//!   re-establishments. Some runs give the reorder queue a short span or hole
//!   timeout, so holes are skipped: a skipped packet is then delivered late, out of
//!   order, and still exactly once;
//! - **liveness**: within a step bound after the last fault everything is delivered
//!   and ACKed;
//! - **agreement**: at the end both ends of every tunnel are ESTABLISHED in the same
//!   epoch.

use std::collections::{HashMap, HashSet, VecDeque};

use eqds_proto::eqif::{DeliveryKind, EqifStats, ReceivingEqif, ReceivingEqifConfig};
use eqds_proto::reorder::ReorderConfig;
use eqds_proto::sender::{Mode, PeerId, Sender};
use eqds_proto::time::Time;
use eqds_proto::tunnel::{RxConfig, RxState, TxState};
use eqds_proto::wire::{seq_lt, ControlHeader, DataHeader, DataKind};
use proptest::prelude::*;

mod common;
use common::{
    chaos, handle_due_timeouts, lookahead, random_workload, receiver_config, senders, Chaos,
    EventQueue, Rng, DELAY, MAX_STEPS, MTU, OVERHEAD, RTO, RX,
};

#[derive(Debug, Clone, Copy)]
enum Fault {
    /// The receiver forgets sender `i`'s tunnel.
    RxDrop(usize),
    /// Sender `i` forgets its tunnel.
    TxDrop(usize),
}

#[derive(Debug, Clone)]
struct Params {
    senders: usize,
    mode: Mode,
    chaos: Chaos,
    /// (step, fault), sorted by step.
    faults: Vec<(usize, Fault)>,
    /// The senders' demand lookahead in bytes.
    lookahead: u32,
    /// The receiver's reorder queues.
    reorder: ReorderConfig,
    /// The receiver's tunnels' W: non-SYN data more than 2W from the in-order point
    /// is answered with RST, unless awaited.
    rst_window: u32,
    seed: u64,
}

enum Event {
    Data {
        from: usize,
        header: DataHeader,
        id: u64,
        len: usize,
    },
    Control {
        to: usize,
        header: ControlHeader,
    },
}

/// What the test knows about one sender.
#[derive(Default)]
struct Flow {
    /// (time, inner length, payload id), in enqueue order.
    workload: VecDeque<(Time, u32, u64)>,
    /// Every payload id of this flow.
    ids: Vec<u64>,
    /// Ids sent at least once with SYN since the receiver last dropped this flow.
    syn_sent: HashSet<u64>,
    /// Ids enqueued and not yet ACKed.
    unacked: HashSet<u64>,
    /// Enqueue position of each id.
    rank: HashMap<u64, usize>,
    /// The sender's `renumbered` counter when last looked at.
    renumbered: u64,
    /// Last in-order release: (epoch, seq, id), reset at every re-establishment.
    last_in_order: Option<(u32, u32, u64)>,
}

struct World {
    p: Params,
    now: Time,
    senders: Vec<Sender<u64>>,
    rx: ReceivingEqif<u64>,
    events: EventQueue<Event>,
    rng: Rng,
    flows: Vec<Flow>,
    delivered: HashMap<u64, u32>,
    lost: HashSet<u64>,
    abandoned: HashSet<u64>,
    maybe_twice: HashSet<u64>,
    steps: usize,
    next_fault: usize,
}

impl World {
    fn new(p: Params) -> Self {
        let mut rng = Rng(p.seed);
        let senders = senders(p.senders, p.mode, p.lookahead, p.seed);
        let rx = ReceivingEqif::new(ReceivingEqifConfig {
            // Deferred, cumulative ACKs under the same loss, reordering,
            // duplication and state drops as everything else.
            credit: receiver_config(4, 20_000_000),
            tunnel: RxConfig {
                window: p.rst_window,
            },
            reorder: p.reorder,
        });
        let mut next_id = 0;
        let flows = (0..p.senders)
            .map(|_| {
                let mut flow = Flow::default();
                let batches = random_workload(&mut rng, &mut next_id, false);
                flow.ids = batches.iter().map(|w| w.2).collect();
                flow.workload = batches.into();
                flow
            })
            .collect();
        Self {
            p,
            now: 0,
            senders,
            rx,
            events: EventQueue::default(),
            rng,
            flows,
            delivered: HashMap::new(),
            lost: HashSet::new(),
            abandoned: HashSet::new(),
            maybe_twice: HashSet::new(),
            steps: 0,
            next_fault: 0,
        }
    }

    fn schedule(&mut self, delay: Time, event: Event) {
        self.events.push(self.now + delay, event);
    }

    /// After the last fault, a final batch per sender, so every tunnel carries
    /// traffic again and has to settle.
    fn final_batch(&mut self) {
        let base = 1_000_000 + 1000 * self.steps as u64;
        for (i, flow) in self.flows.iter_mut().enumerate() {
            for k in 0..5 {
                let id = base + 100 * i as u64 + k;
                flow.workload.push_back((self.now, 700, id));
                flow.ids.push(id);
            }
        }
    }

    fn apply_fault(&mut self, fault: Fault) {
        match fault {
            Fault::RxDrop(i) => {
                self.lost.extend(self.rx.drop_peer(i as PeerId));
                let flow = &mut self.flows[i];
                self.maybe_twice.extend(flow.syn_sent.drain());
                flow.last_in_order = None;
            }
            Fault::TxDrop(i) => {
                self.flows[i].renumbered = 0;
                for id in self.senders[i].drop_tunnel(RX) {
                    self.flows[i].unacked.remove(&id);
                    self.abandoned.insert(id);
                }
            }
        }
    }

    fn faults_left(&self) -> bool {
        self.next_fault < self.p.faults.len()
    }

    fn enqueue_due(&mut self) {
        for (i, flow) in self.flows.iter_mut().enumerate() {
            while let Some(&(at, len, id)) = flow.workload.front() {
                if at > self.now || self.senders[i].enqueue(self.now, RX, len, id).is_err() {
                    break;
                }
                flow.workload.pop_front();
                flow.unacked.insert(id);
                let rank = flow.rank.len();
                flow.rank.insert(id, rank);
            }
        }
    }

    fn drain(&mut self) {
        loop {
            let mut progress = false;
            for i in 0..self.senders.len() {
                while let Some(tx) = self.senders[i].poll_transmit(self.now) {
                    progress = true;
                    self.send_data(i, tx.header, tx.payload, tx.wire_len);
                }
                let renumbered = self.senders[i].tunnel(RX).map_or(0, |t| t.renumbered);
                let flow = &mut self.flows[i];
                if renumbered > flow.renumbered {
                    flow.renumbered = renumbered;
                    self.maybe_twice.extend(flow.unacked.iter().copied());
                }
                while let Some(acked) = self.senders[i].poll_acked() {
                    assert!(self.flows[i].unacked.remove(&acked.payload), "ACKed twice");
                }
            }
            while let Some((dst, header)) = self.rx.poll_control(self.now) {
                progress = true;
                if let Some(delay) = self.p.chaos.control_delay(&mut self.rng) {
                    let to = dst as usize;
                    self.schedule(delay, Event::Control { to, header });
                }
            }
            while let Some(d) = self.rx.poll_deliver(self.now) {
                progress = true;
                self.check_delivery(d.src as usize, d.epoch, d.kind, d.payload);
            }
            if !progress {
                break;
            }
        }
    }

    fn check_delivery(&mut self, from: usize, epoch: u32, kind: DeliveryKind, id: u64) {
        let count = self.delivered.entry(id).or_default();
        *count += 1;
        let twice_ok = self.maybe_twice.contains(&id);
        assert!(*count == 1 || twice_ok, "payload {id} delivered twice");
        let flow = &mut self.flows[from];
        match kind {
            DeliveryKind::InOrder { seq } => {
                if let Some((e, s, last_id)) = flow.last_in_order {
                    if e == epoch {
                        assert!(seq_lt(s, seq), "seq {seq} released after {s}");
                        let redelivery = [id, last_id]
                            .iter()
                            .any(|i| self.maybe_twice.contains(i) || self.abandoned.contains(i));
                        let in_order = flow.rank[&last_id] < flow.rank[&id];
                        assert!(redelivery || in_order, "id {id} after {last_id}");
                    }
                }
                flow.last_in_order = Some((epoch, seq, id));
            }
            DeliveryKind::Released => flow.last_in_order = None,
            // Its hole was skipped: out of order by design, and exactly once as
            // checked above.
            DeliveryKind::Late { .. } => {}
            DeliveryKind::Unordered { .. } => panic!("nothing is sent unordered"),
        }
    }

    fn send_data(&mut self, from: usize, header: DataHeader, payload: Option<u64>, wire_len: u32) {
        let c = self.p.chaos;
        let id = payload.unwrap_or(u64::MAX);
        if header.syn && payload.is_some() {
            self.flows[from].syn_sent.insert(id);
        }
        if self.rng.chance(c.data_loss) {
            return;
        }
        let copies = if self.rng.chance(c.data_dup) { 2 } else { 1 };
        for _ in 0..copies {
            let mut h = header;
            let mut len = (wire_len - OVERHEAD) as usize;
            if h.kind == DataKind::Rts {
                len = 0;
            } else if self.rng.chance(c.data_trim) {
                h.trimmed = true;
                len = 0;
            }
            let delay = c.data_delay(&mut self.rng);
            let event = Event::Data {
                from,
                header: h,
                id,
                len,
            };
            self.schedule(delay, event);
        }
    }

    fn deliver(&mut self, event: Event) {
        match event {
            Event::Data {
                from,
                header,
                id,
                len,
            } => self
                .rx
                .handle_data(self.now, from as PeerId, &header, id, len),
            Event::Control { to, header } => self.senders[to].handle_control(self.now, RX, &header),
        }
    }

    fn step(&mut self) -> bool {
        self.steps += 1;
        while self
            .p
            .faults
            .get(self.next_fault)
            .is_some_and(|&(at, _)| at <= self.steps)
        {
            let fault = self.p.faults[self.next_fault].1;
            self.next_fault += 1;
            self.apply_fault(fault);
            if !self.faults_left() {
                self.final_batch();
            }
            self.enqueue_due();
            self.drain();
        }
        let next_workload = self
            .flows
            .iter()
            .filter_map(|f| f.workload.front().map(|w| w.0))
            .filter(|&at| at > self.now)
            .min();
        let next_event = self.events.next_at();
        let sender_timers = self.senders.iter().filter_map(|s| s.poll_timeout()).min();
        let rx_timer = self.rx.poll_timeout();
        let candidates = [next_event, sender_timers, rx_timer, next_workload];
        let Some(at) = candidates.into_iter().flatten().min() else {
            // Idle: the next fault (if any) happens now.
            if let Some(&(at, _)) = self.p.faults.get(self.next_fault) {
                self.steps = self.steps.max(at - 1);
                return true;
            }
            return false;
        };
        self.now = self.now.max(at);
        if next_event == Some(at) {
            let event = self.events.pop().unwrap();
            self.deliver(event);
        } else if sender_timers == Some(at) {
            handle_due_timeouts(&mut self.senders, self.now);
        } else if rx_timer == Some(at) {
            self.rx.handle_timeout(self.now);
        }
        self.enqueue_due();
        self.drain();
        true
    }

    /// Everything that must be delivered was, and no sender holds anything.
    fn done(&self) -> bool {
        let flows_done = self.flows.iter().all(|f| {
            f.workload.is_empty()
                && f.ids.iter().all(|id| {
                    self.delivered.contains_key(id)
                        || self.lost.contains(id)
                        || self.abandoned.contains(id)
                })
        });
        let senders_idle = self.senders.iter().all(|s| {
            s.tunnel(RX).is_none_or(|t| {
                t.send_queue_bytes + t.retransmit_bytes == 0 && t.in_flight_packets == 0
            })
        });
        flows_done && senders_idle && !self.faults_left()
    }
}

/// What a run excused and how the receiving tunnels got there.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    lost: usize,
    abandoned: usize,
    maybe_twice: usize,
    rx: EqifStats,
}

/// Runs to the end, checking as it goes.
fn run(p: Params) -> Outcome {
    let mut world = World::new(p);
    if !world.faults_left() {
        world.final_batch();
    }
    world.enqueue_due();
    world.drain();
    let mut after_last_fault = 0;
    while !world.done() {
        if !world.step() {
            let st: Vec<_> = (0..world.senders.len())
                .map(|i| {
                    (
                        world.senders[i].tunnel_state(RX),
                        world.senders[i].tunnel(RX),
                        world.rx.tunnel_state(i as PeerId),
                        world.rx.credit().sender(i as PeerId),
                    )
                })
                .collect();
            let missing: Vec<_> = world
                .flows
                .iter()
                .flat_map(|f| f.ids.iter())
                .filter(|id| {
                    !world.delivered.contains_key(id)
                        && !world.lost.contains(id)
                        && !world.abandoned.contains(id)
                })
                .collect();
            panic!(
                "stalled at {} ps, missing {missing:?}, lost {:?}: {st:#?} {:?}",
                world.now,
                world.lost,
                world.rx.stats()
            );
        }
        if !world.faults_left() {
            after_last_fault += 1;
            assert!(
                after_last_fault < MAX_STEPS,
                "not live after the last fault"
            );
        }
    }
    // Let whatever is still in flight land.
    while !world.events.is_empty() {
        assert!(world.step());
        after_last_fault += 1;
        assert!(after_last_fault < MAX_STEPS, "control packets ping-pong");
    }
    assert!(world.done(), "late packets undid the end state");
    for i in 0..world.senders.len() {
        let tx = world.senders[i].tunnel_state(RX);
        let rx = world.rx.tunnel_state(i as PeerId);
        match tx {
            Some(TxState::Established { epoch }) => {
                assert_eq!(rx, RxState::Established { epoch }, "sender {i}")
            }
            other => panic!("sender {i} ended in {other:?}, receiver in {rx:?}"),
        }
    }
    for flow in &world.flows {
        for id in &flow.ids {
            let n = world.delivered.get(id).copied().unwrap_or(0);
            let at_most_once = world.lost.contains(id) || world.abandoned.contains(id);
            let twice_ok = world.maybe_twice.contains(id);
            match (at_most_once, twice_ok) {
                (false, false) => assert_eq!(n, 1, "payload {id}"),
                (false, true) => assert!(n >= 1, "payload {id} lost"),
                (true, false) => assert!(n <= 1, "payload {id}"),
                (true, true) => {}
            }
        }
    }
    Outcome {
        lost: world.lost.len(),
        abandoned: world.abandoned.len(),
        maybe_twice: world.maybe_twice.len(),
        rx: world.rx.stats(),
    }
}

fn faults(senders: usize) -> impl Strategy<Value = Vec<(usize, Fault)>> {
    let fault = (0..senders, any::<bool>()).prop_map(|(i, rx)| {
        if rx {
            Fault::RxDrop(i)
        } else {
            Fault::TxDrop(i)
        }
    });
    prop::collection::vec((1..3000usize, fault), 0..5).prop_map(|mut f| {
        f.sort_by_key(|&(at, _)| at);
        f
    })
}

fn params() -> impl Strategy<Value = Params> {
    (prop_oneof![Just(1usize), Just(3usize)], any::<bool>())
        .prop_flat_map(|(senders, rts)| {
            (
                Just(senders),
                Just(if rts { Mode::Rts } else { Mode::Ndp }),
                chaos(150, 250),
                faults(senders),
                lookahead(),
                reorder(),
                any::<u64>(),
            )
        })
        .prop_map(
            |(senders, mode, chaos, faults, lookahead, reorder, seed)| Params {
                senders,
                mode,
                chaos,
                faults,
                lookahead,
                reorder,
                rst_window: RST_WINDOW,
                seed,
            },
        )
}

/// Reorder queues that never skip a hole here (in packets, a span of 300: with
/// 45-byte packets a window of 8 MTUs is 266 of them; a hole timeout of 50 RTOs, far
/// above any recovery), or that skip often: a span of a few packets, or a hole
/// timeout shorter than the RTO.
fn reorder() -> impl Strategy<Value = ReorderConfig> {
    prop_oneof![
        Just(NEVER_SKIPS),
        (2..40u32, prop_oneof![Just(50 * RTO), RTO / 8..2 * RTO]).prop_map(
            |(window, hole_timeout)| ReorderConfig {
                window,
                hole_timeout
            }
        ),
    ]
}

/// In packets: with 45-byte packets a window of 8 MTUs is 266 of them, and a
/// duplicate may lag behind by a few RTTs' worth.
const RST_WINDOW: u32 = 1024;

const NEVER_SKIPS: ReorderConfig = ReorderConfig {
    window: 300,
    hole_timeout: 50 * RTO,
};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_payload_arrives_once_in_order_and_both_ends_agree(p in params()) {
        let faultless = p.faults.is_empty();
        let out = run(p);
        if faultless {
            prop_assert_eq!((out.lost, out.abandoned, out.maybe_twice), (0, 0, 0));
            prop_assert_eq!(out.rx.reestablished, 0);
        }
    }
}

/// The exceptions are real: drops on both sides happen mid-transfer and the runs
/// still complete; and without faults nothing is excused.
#[test]
fn drops_mid_transfer_are_survived_and_counted() {
    let clean = Chaos::NONE;
    let (mut lost, mut abandoned, mut twice) = (0, 0, 0);
    let mut rx = EqifStats::default();
    for seed in 0..20 {
        let p = Params {
            senders: 3,
            mode: Mode::Ndp,
            chaos: Chaos {
                data_jitter: 3 * DELAY,
                ..clean
            },
            faults: vec![
                (40, Fault::RxDrop(0)),
                (60, Fault::TxDrop(1)),
                (90, Fault::RxDrop(2)),
            ],
            lookahead: 4 * MTU,
            reorder: NEVER_SKIPS,
            rst_window: RST_WINDOW,
            seed,
        };
        let out = run(p);
        lost += out.lost;
        abandoned += out.abandoned;
        twice += out.maybe_twice;
        rx.rst_sent += out.rx.rst_sent;
        rx.reestablished += out.rx.reestablished;
        rx.stale_syns += out.rx.stale_syns;
    }
    println!("lost {lost}, abandoned {abandoned}, maybe twice {twice}, {rx:?}");
    assert!(lost > 0 && abandoned > 0);
    // Receiver drops are repaired through RSTs, sender drops through a random epoch
    // that is either greater (re-establishment) or lesser (stale SYN answered).
    assert!(rx.rst_sent > 0 && rx.reestablished > 0 && rx.stale_syns > 0);
    for seed in 0..20 {
        let p = Params {
            senders: 3,
            mode: Mode::Rts,
            chaos: clean,
            faults: Vec::new(),
            lookahead: 4 * MTU,
            reorder: NEVER_SKIPS,
            rst_window: RST_WINDOW,
            seed,
        };
        let out = run(p);
        assert_eq!((out.lost, out.abandoned, out.maybe_twice), (0, 0, 0));
        assert_eq!((out.rx.rst_sent, out.rx.reestablished), (0, 0));
    }
}

/// Holes are skipped (a short span and hole timeout, lossy data without trimming)
/// and yet, without faults, every payload is delivered exactly once: the skipped
/// ones late, when their resends arrive, however far behind the in-order point
/// (here up to 20 times the RST tolerance) and without restarting the tunnel.
#[test]
fn skipped_holes_are_filled_late_exactly_once() {
    let mut late = 0;
    // Seeds whose senders keep the loss reorder window off (`common::sender_config`):
    // its spurious resends of packets already delivered can arrive more than 2W
    // behind, and this small W answers those with RST.
    for seed in (0..40).filter(|s| (s >> 3) & 3 == 0) {
        let p = Params {
            senders: 3,
            mode: Mode::Rts,
            chaos: Chaos {
                data_loss: 100,
                data_jitter: 2 * DELAY,
                ..Chaos::NONE
            },
            faults: Vec::new(),
            lookahead: 4 * MTU,
            reorder: ReorderConfig {
                window: 8,
                hole_timeout: RTO / 4,
            },
            rst_window: 8,
            seed,
        };
        let out = run(p);
        assert_eq!((out.lost, out.abandoned, out.maybe_twice), (0, 0, 0));
        assert_eq!((out.rx.rst_sent, out.rx.reestablished), (0, 0));
        late += out.rx.late;
    }
    println!("{late} late deliveries");
    assert!(late > 20, "{late} late deliveries");
}
