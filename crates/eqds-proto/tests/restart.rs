//! A receiving host that restarts (its daemon killed and started again) forgets
//! everything: tunnel epochs, reorder queues, and the pull numbers it counted for each
//! sender, which start again from zero. Its senders keep theirs. Here senders with an
//! arbitrary history (from nothing to thousands of PULLs, mid-transfer or idle) see
//! their receiver replaced by a fresh one at a random moment, with packets of the old
//! one still in flight and a network that reorders and loses packets, and must get
//! everything they still have through the new receiver within a bounded time of
//! the same run without the restart: a few round trips, plus retransmit timeouts
//! when the network loses packets. Nothing in the bound grows with the history. (Before pull numbers were rebased on a
//! restart, a sender ignored the new receiver's PULLs until they passed its old count:
//! a stall of one credit-loss timeout per window of history.)
//!
//! The mirror case, a sender restarting against a receiver with history, is covered by
//! the sender's unit tests (`sender::tests::credit`).

use eqds_proto::eqif::{ReceivingEqif, ReceivingEqifConfig};
use eqds_proto::reorder::ReorderConfig;
use eqds_proto::sender::{Mode, PeerId, Sender};
use eqds_proto::time::{Time, PS_PER_SEC};
use eqds_proto::tunnel::RxConfig;
use eqds_proto::wire::{ControlHeader, DataHeader, DataKind};
use proptest::prelude::*;

mod common;
use common::{
    handle_due_timeouts, lookahead, receiver_config, senders, Chaos, EventQueue, Rng, DELAY, MTU,
    OVERHEAD, RTO, RX,
};

const FULL: u32 = MTU - OVERHEAD;
/// Packets each sender still has to send after the restart, besides its backlog.
const AFTER: u64 = 20;
/// Retransmit timeouts the bound allows: a loss of the last packet, of the RTS that
/// asks for credit, and of their resends.
const TIMEOUTS: Time = 8;
/// Round trips the bound allows: the RST, the new epoch's SYN-ACK, the RTS and its
/// PULL, and reordering.
const ROUND_TRIPS: Time = 20;

#[derive(Debug, Clone)]
struct Params {
    senders: usize,
    mode: Mode,
    /// Packets each sender sends before the restart (its history).
    history: Vec<u64>,
    /// When the receiver restarts, in thousandths of the time the history takes at
    /// the receiver's link rate (above 1000: after the senders went idle).
    restart_at: u64,
    lookahead: u32,
    /// How long the receiving host is down (its packets lost) before the fresh
    /// receiver starts: up to several retransmit timeouts, as a daemon restart.
    down: Time,
    /// Per-packet loss in thousandths, data and control.
    loss: u32,
    jitter: Time,
    seed: u64,
}

enum Event {
    Data { from: usize, header: DataHeader },
    Control { to: usize, header: ControlHeader },
}

struct World {
    chaos: Chaos,
    now: Time,
    senders: Vec<Sender<u64>>,
    rx: ReceivingEqif<u64>,
    events: EventQueue<Event>,
    rng: Rng,
    /// Packets each sender has yet to enqueue.
    to_enqueue: Vec<u64>,
    /// Packets each sender has enqueued and not yet seen ACKed.
    unacked: Vec<u64>,
    /// Until then the receiving host is down: what reaches it is lost.
    down_until: Time,
}

fn fresh_receiver() -> ReceivingEqif<u64> {
    ReceivingEqif::new(ReceivingEqifConfig {
        credit: receiver_config(1, 0),
        tunnel: RxConfig { window: 1024 },
        reorder: ReorderConfig {
            window: 300,
            hole_timeout: 50 * RTO,
        },
    })
}

impl World {
    fn new(p: &Params) -> Self {
        let chaos = Chaos {
            data_loss: p.loss,
            ctrl_loss: p.loss,
            data_jitter: p.jitter,
            ctrl_jitter: p.jitter,
            ..Chaos::NONE
        };
        Self {
            senders: senders(p.senders, p.mode, p.lookahead, p.seed),
            rx: fresh_receiver(),
            events: EventQueue::default(),
            rng: Rng(p.seed),
            to_enqueue: p.history.clone(),
            unacked: vec![0; p.senders],
            down_until: 0,
            chaos,
            now: 0,
        }
    }

    /// Tops up every send queue from what each sender has yet to send.
    fn enqueue(&mut self) {
        for (i, s) in self.senders.iter_mut().enumerate() {
            while self.to_enqueue[i] > 0 && s.enqueue(self.now, RX, FULL, 0).is_ok() {
                self.to_enqueue[i] -= 1;
                self.unacked[i] += 1;
            }
        }
    }

    fn drain(&mut self) {
        loop {
            let mut progress = false;
            for i in 0..self.senders.len() {
                while let Some(tx) = self.senders[i].poll_transmit(self.now) {
                    progress = true;
                    if !self.rng.chance(self.chaos.data_loss) {
                        let delay = self.chaos.data_delay(&mut self.rng);
                        let event = Event::Data {
                            from: i,
                            header: tx.header,
                        };
                        self.events.push(self.now + delay, event);
                    }
                }
                while self.senders[i].poll_acked().is_some() {
                    self.unacked[i] -= 1;
                }
            }
            while let Some((dst, header)) = self.rx.poll_control(self.now) {
                progress = true;
                if let Some(delay) = self.chaos.control_delay(&mut self.rng) {
                    let to = dst as usize;
                    self.events
                        .push(self.now + delay, Event::Control { to, header });
                }
            }
            while self.rx.poll_deliver(self.now).is_some() || self.rx.poll_discarded().is_some() {
                progress = true;
            }
            if !progress {
                break;
            }
        }
    }

    /// Runs until `until`, until nothing is left to do or, with `stop_when_done`,
    /// until every packet is ACKed; returns the time reached.
    fn run_until(&mut self, until: Time, stop_when_done: bool) -> Time {
        loop {
            self.enqueue();
            self.drain();
            if stop_when_done && self.done() {
                return self.now;
            }
            let next_event = self.events.next_at();
            let sender_timers = self.senders.iter().filter_map(|s| s.poll_timeout()).min();
            let rx_timer = self.rx.poll_timeout();
            let Some(at) = [next_event, sender_timers, rx_timer]
                .into_iter()
                .flatten()
                .min()
            else {
                return self.now;
            };
            if at > until {
                self.now = until;
                return self.now;
            }
            self.now = self.now.max(at);
            if next_event == Some(at) {
                match self.events.pop().unwrap() {
                    Event::Data { .. } if self.now < self.down_until => {}
                    Event::Data { from, header } => {
                        let len = match header.kind {
                            DataKind::Rts => 0,
                            DataKind::Data => FULL as usize,
                        };
                        self.rx
                            .handle_data(self.now, from as PeerId, &header, 0, len);
                    }
                    Event::Control { to, header } => {
                        self.senders[to].handle_control(self.now, RX, &header)
                    }
                }
            } else if sender_timers == Some(at) {
                handle_due_timeouts(&mut self.senders, self.now);
            } else {
                self.rx.handle_timeout(self.now);
            }
        }
    }

    fn done(&self) -> bool {
        self.to_enqueue.iter().all(|&n| n == 0) && self.unacked.iter().all(|&n| n == 0)
    }
}

/// One MTU at the receiver's 10 Gbps.
const MTU_TIME: Time = MTU as Time * 8 * PS_PER_SEC / 10_000_000_000;
/// The longest round trip: both ways at the highest jitter.
const MAX_RTT: Time = 2 * (DELAY + 4 * DELAY);

/// Runs one case up to the restart point, then (with `restart`) replaces the
/// receiver by a fresh one; returns how long the senders took from that point to get
/// everything left ACKed.
fn run(p: &Params, restart: bool) -> Time {
    let mut world = World::new(p);
    let history: u64 = p.history.iter().sum();
    let at = (history * MTU_TIME) * p.restart_at / 1000;
    world.run_until(at, false);
    let pulls_before: Vec<u32> = (0..p.senders)
        .map(|i| {
            world
                .rx
                .credit()
                .sender(i as PeerId)
                .map_or(0, |s| s.pulls_sent)
        })
        .collect();
    if restart {
        // The receiving daemon restarts: all its state is gone. What it had sent is
        // still on its way to the senders, and what they send reaches the new one.
        world.rx = fresh_receiver();
        world.down_until = world.now + p.down;
    }
    for n in &mut world.to_enqueue {
        *n += AFTER;
    }
    let start = world.now;
    world.run_until(start + PS_PER_SEC / 10, true);
    assert!(
        world.done(),
        "not done {} ps after the restart (pull counts before it {pulls_before:?}): {:?}",
        world.now - start,
        (0..p.senders)
            .map(|i| world.senders[i].tunnel(RX))
            .collect::<Vec<_>>()
    );
    world.now - start
}

/// How much longer than without the restart the senders may take: a few round
/// trips, and retransmit timeouts for what the network loses (the two runs draw
/// their losses apart once the restart has changed what is sent).
fn allowance(p: &Params) -> Time {
    let timeouts = if p.loss > 0 || p.down > 0 {
        TIMEOUTS * RTO
    } else {
        0
    };
    p.down + ROUND_TRIPS * MAX_RTT + timeouts
}

fn params() -> impl Strategy<Value = Params> {
    (1..=3usize, any::<bool>())
        .prop_flat_map(|(senders, rts)| {
            (
                Just(senders),
                Just(if rts { Mode::Rts } else { Mode::Ndp }),
                prop::collection::vec(prop_oneof![0..20u64, 0..3000u64], senders),
                0..1300u64,
                prop_oneof![Just(0), 0..5 * RTO],
                lookahead(),
                prop_oneof![Just(0), 0..20u32],
                prop_oneof![Just(0), 0..4 * DELAY],
                any::<u64>(),
            )
        })
        .prop_map(
            |(senders, mode, history, restart_at, down, lookahead, loss, jitter, seed)| Params {
                senders,
                mode,
                history,
                restart_at,
                down,
                lookahead,
                loss,
                jitter,
                seed,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_restarted_receiver_gets_credit_flowing_again_whatever_the_history(p in params()) {
        let without = run(&p, false);
        let with = run(&p, true);
        let allowed = without + allowance(&p);
        prop_assert!(with <= allowed, "took {with} ps, {without} ps without the restart");
    }
}

/// The case the namespace testbed found: one sender with a long history (2500 PULLs)
/// sees its receiver restart mid-transfer on a clean network, and is back at the
/// link's pace within a few round trips: what is left takes at most three round trips
/// longer than without the restart.
#[test]
fn a_long_history_costs_a_few_round_trips_on_a_clean_network() {
    for mode in [Mode::Rts, Mode::Ndp] {
        let p = Params {
            senders: 1,
            mode,
            history: vec![5000],
            restart_at: 500,
            down: 0,
            lookahead: 4 * MTU,
            loss: 0,
            jitter: 0,
            seed: 1,
        };
        let without = run(&p, false);
        let with = run(&p, true);
        let rtt = 2 * DELAY;
        assert!(
            with <= without + 3 * rtt,
            "{mode:?}: {with} ps against {without} ps without the restart"
        );
    }
}
