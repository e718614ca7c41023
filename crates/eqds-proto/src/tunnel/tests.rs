//! Unit and property tests of the tunnel state machines (Appendix A).

use super::*;
use crate::reorder::{InsertOutcome, ReorderConfig, ReorderQueue};
use crate::wire::EPOCH_BLOCK;
use proptest::prelude::*;

const MAX_EPOCH: u32 = EPOCH_MASK;

fn list<A: Copy>(actions: Actions<A>) -> Vec<A> {
    actions.into_iter().collect()
}

/// A receiver in `state`; if established, one that has been for a while (its
/// epoch confirmed by SYN-less data).
fn rx_in(state: RxState) -> RxTunnel {
    let mut rx = RxTunnel::new(RxConfig::default());
    rx.state = state;
    rx.confirmed = matches!(state, RxState::Established { .. });
    rx
}

fn tx_in(state: TxState) -> TxTunnel {
    TxTunnel { state }
}

fn data(seq: u32, syn: bool, expected: u32) -> RxEvent {
    RxEvent::Data {
        seq,
        syn,
        expected,
        awaited: false,
    }
}

fn syn_ack(epoch: u32) -> TxEvent {
    TxEvent::SynAck {
        ack_no: isn_for_epoch(epoch) + 3,
    }
}

/// What a sender does to open `epoch`: start numbering from its ISN, with SYN.
fn opens(epoch: u32) -> [TxAction; 2] {
    let isn = isn_for_epoch(epoch);
    [TxAction::StartEpoch { epoch, isn }, TxAction::SetSyn]
}

/// What a sender does to move its unACKed packets to `epoch`: [`opens`] it and
/// resends them there.
fn reopens(epoch: u32) -> [TxAction; 3] {
    let [start, syn] = opens(epoch);
    [start, syn, TxAction::ResendUnacked]
}

// ---- receiver state machine (Appendix A, Figure 27), one test per row ----

#[test]
fn rx_closed_syn_establishes_from_any_packet_of_the_initial_window() {
    let mut rx = rx_in(RxState::Closed);
    // The 6th packet of epoch 77 arrives first: the ISN is still the block start.
    let seq = isn_for_epoch(77) + 5;
    assert_eq!(
        list(rx.handle(data(seq, true, 0))),
        [
            RxAction::ResetSequence {
                isn: isn_for_epoch(77)
            },
            RxAction::Accept { syn_ack: true }
        ]
    );
    assert_eq!(rx.state(), RxState::Established { epoch: 77 });
}

#[test]
fn rx_closed_data_without_syn_gets_rst_and_is_dropped() {
    let mut rx = rx_in(RxState::Closed);
    assert_eq!(
        list(rx.handle(data(1234, false, 0))),
        [RxAction::SendRst, RxAction::Drop]
    );
    assert_eq!(rx.state(), RxState::Closed);
}

#[test]
fn rx_established_syn_same_epoch_is_data_with_syn_ack() {
    let mut rx = rx_in(RxState::Established { epoch: 9 });
    let seq = isn_for_epoch(9) + 700;
    assert_eq!(
        list(rx.handle(data(seq, true, isn_for_epoch(9)))),
        [RxAction::Accept { syn_ack: true }]
    );
    assert_eq!(rx.state(), RxState::Established { epoch: 9 });
}

#[test]
fn rx_established_syn_greater_epoch_reestablishes_releasing_the_queue() {
    let mut rx = rx_in(RxState::Established { epoch: 9 });
    let seq = isn_for_epoch(10) + 2;
    assert_eq!(
        list(rx.handle(data(seq, true, 0))),
        [
            RxAction::ReleaseReorderQueue,
            RxAction::ResetSequence {
                isn: isn_for_epoch(10)
            },
            RxAction::Accept { syn_ack: true }
        ]
    );
    assert_eq!(rx.state(), RxState::Established { epoch: 10 });
}

#[test]
fn rx_established_syn_lesser_epoch_is_stale_and_answered_with_current_epoch() {
    let mut rx = rx_in(RxState::Established { epoch: 9 });
    assert_eq!(
        list(rx.handle(data(isn_for_epoch(8), true, 0))),
        [RxAction::SendSynAck { epoch: 9 }, RxAction::Drop]
    );
    assert_eq!(rx.state(), RxState::Established { epoch: 9 });
}

#[test]
fn rx_established_close_sends_rst_and_frees_state() {
    let mut rx = rx_in(RxState::Established { epoch: 9 });
    assert_eq!(
        list(rx.handle(RxEvent::Close)),
        [RxAction::SendRst, RxAction::FreeState]
    );
    assert_eq!(rx.state(), RxState::Closed);
    // Closing a closed tunnel does nothing.
    assert!(rx.handle(RxEvent::Close).is_empty());
    assert_eq!(rx.state(), RxState::Closed);
}

#[test]
fn rx_established_data_without_syn_takes_the_normal_path() {
    let mut rx = rx_in(RxState::Established { epoch: 9 });
    let expected = isn_for_epoch(9) + 2000;
    for seq in [expected - 300, expected, expected + 300] {
        assert_eq!(
            list(rx.handle(data(seq, false, expected))),
            [RxAction::Accept { syn_ack: false }]
        );
    }
    assert_eq!(rx.state(), RxState::Established { epoch: 9 });
}

#[test]
fn rx_fresh_from_a_syn_takes_syn_less_data_of_the_next_epoch_for_foreign() {
    // A stale SYN of epoch 7 (offset 874) establishes a closed receiver while the
    // sender runs epoch 8: 8's first packets sit within 2W of the in-order point.
    let mut rx = rx_in(RxState::Closed);
    rx.handle(data(isn_for_epoch(7) + 874, true, 0));
    let expected = isn_for_epoch(7) + 874 - 149;
    let theirs = isn_for_epoch(8) + 3;
    assert_eq!(
        list(rx.handle(data(theirs, false, expected))),
        [RxAction::SendRst, RxAction::Drop]
    );
    assert_eq!(rx.state(), RxState::Established { epoch: 7 });
    // SYN-less data of epoch 7's own block confirms it; after that the sequence
    // runs on past the block as usual.
    let ours = isn_for_epoch(7) + 900;
    assert_eq!(
        list(rx.handle(data(ours, false, expected))),
        [RxAction::Accept { syn_ack: false }]
    );
    assert_eq!(
        list(rx.handle(data(theirs, false, expected + 150))),
        [RxAction::Accept { syn_ack: false }]
    );
}

#[test]
fn rx_reestablished_by_a_greater_syn_waits_for_confirmation_again() {
    let mut rx = rx_in(RxState::Established { epoch: 9 });
    rx.handle(data(isn_for_epoch(10) + 1000, true, 0));
    assert_eq!(
        list(rx.handle(data(isn_for_epoch(11) + 1, false, isn_for_epoch(10) + 1000))),
        [RxAction::SendRst, RxAction::Drop]
    );
}

#[test]
fn rx_established_data_far_from_the_in_order_point_gets_rst() {
    // [choice]: outside [expected - 2W, expected + 2W] with W = 150.
    let mut rx = rx_in(RxState::Established { epoch: 9 });
    let expected = 5u32;
    for seq in [expected.wrapping_sub(301), expected + 301, 1 << 31] {
        assert_eq!(
            list(rx.handle(data(seq, false, expected))),
            [RxAction::SendRst, RxAction::Drop],
            "seq {seq}"
        );
    }
    assert_eq!(rx.state(), RxState::Established { epoch: 9 });
}

#[test]
fn rx_established_awaited_data_far_behind_is_accepted() {
    // A resend for a hole the reorder queue skipped, an RTO later.
    let mut rx = rx_in(RxState::Established { epoch: 9 });
    let seq = isn_for_epoch(9) + 3;
    let event = RxEvent::Data {
        seq,
        syn: false,
        expected: seq + 5000,
        awaited: true,
    };
    assert_eq!(
        list(rx.handle(event)),
        [RxAction::Accept { syn_ack: false }]
    );
    assert_eq!(
        list(rx.handle(data(seq, false, seq + 5000))),
        [RxAction::SendRst, RxAction::Drop],
        "not awaited: a stray of another epoch"
    );
}

#[test]
fn rx_epochs_compare_across_the_wrap() {
    let mut rx = rx_in(RxState::Established { epoch: MAX_EPOCH });
    // Epoch 0 follows 2^22 - 1.
    let actions = rx.handle(data(isn_for_epoch(0), true, 0));
    assert!(actions.contains(&RxAction::ReleaseReorderQueue));
    assert_eq!(rx.state(), RxState::Established { epoch: 0 });
    // And 2^22 - 1 is now stale.
    assert_eq!(
        list(rx.handle(data(isn_for_epoch(MAX_EPOCH), true, 0))),
        [RxAction::SendSynAck { epoch: 0 }, RxAction::Drop]
    );
}

#[test]
fn epochs_half_the_space_apart_count_as_greater() {
    let half = 1 << (EPOCH_BITS - 1);
    assert_eq!(epoch_order(half, 0), EpochOrder::Greater);
    assert_eq!(epoch_order(0, half), EpochOrder::Greater);
    assert_eq!(epoch_order(3, MAX_EPOCH), EpochOrder::Greater);
    assert_eq!(epoch_order(MAX_EPOCH, 3), EpochOrder::Lesser);
    assert_eq!(next_epoch(MAX_EPOCH), 0);
}

// ---- sender state machine (Appendix A), one test per row ----

#[test]
fn tx_closed_packet_to_send_picks_a_random_epoch_and_sets_syn() {
    let mut tx = TxTunnel::new();
    let random = 0xFFFF_FFFF;
    assert_eq!(
        list(tx.handle(TxEvent::PacketToSend { random })),
        opens(MAX_EPOCH)
    );
    assert_eq!(tx.state(), TxState::SynSent { epoch: MAX_EPOCH });
    assert!(tx.syn());
}

#[test]
fn tx_closed_packet_to_send_uses_old_plus_one_when_remembered_even_across_the_wrap() {
    for (old, new) in [(41, 42), (MAX_EPOCH, 0)] {
        let mut tx = tx_in(TxState::Closed {
            last_epoch: Some(old),
        });
        assert_eq!(
            list(tx.handle(TxEvent::PacketToSend { random: 7 })),
            opens(new)
        );
        assert_eq!(tx.state(), TxState::SynSent { epoch: new });
    }
}

#[test]
fn tx_packet_to_send_when_open_changes_nothing() {
    for state in [
        TxState::SynSent { epoch: 4 },
        TxState::Established { epoch: 4 },
    ] {
        let mut tx = tx_in(state);
        assert!(tx.handle(TxEvent::PacketToSend { random: 1 }).is_empty());
        assert_eq!(tx.state(), state);
    }
}

#[test]
fn tx_syn_sent_syn_ack_with_our_epoch_establishes() {
    let mut tx = tx_in(TxState::SynSent { epoch: 4 });
    assert_eq!(
        list(tx.handle(syn_ack(4))),
        [TxAction::StopSyn, TxAction::Process]
    );
    assert_eq!(tx.state(), TxState::Established { epoch: 4 });
    assert!(!tx.syn());
}

#[test]
fn tx_syn_sent_syn_ack_with_greater_epoch_restarts_past_it() {
    let mut tx = tx_in(TxState::SynSent { epoch: 4 });
    assert_eq!(list(tx.handle(syn_ack(20))), reopens(21));
    assert_eq!(tx.state(), TxState::SynSent { epoch: 21 });
}

#[test]
fn tx_syn_sent_or_established_ignores_syn_ack_with_lesser_epoch() {
    for state in [
        TxState::SynSent { epoch: 4 },
        TxState::Established { epoch: 4 },
    ] {
        let mut tx = tx_in(state);
        assert_eq!(list(tx.handle(syn_ack(3))), [TxAction::Ignore]);
        assert_eq!(tx.state(), state);
    }
}

#[test]
fn tx_established_syn_ack_with_our_epoch_is_processed() {
    let mut tx = tx_in(TxState::Established { epoch: 4 });
    assert_eq!(list(tx.handle(syn_ack(4))), [TxAction::Process]);
    assert_eq!(tx.state(), TxState::Established { epoch: 4 });
}

#[test]
fn tx_established_syn_ack_with_greater_epoch_resyncs() {
    let mut tx = tx_in(TxState::Established { epoch: 4 });
    assert_eq!(list(tx.handle(syn_ack(5))), reopens(6));
    assert_eq!(tx.state(), TxState::SynSent { epoch: 6 });
}

#[test]
fn tx_syn_ack_epochs_compare_across_the_wrap() {
    // Epoch 0 is greater than 2^22 - 1: the next attempt is epoch 1.
    let mut tx = tx_in(TxState::SynSent { epoch: MAX_EPOCH });
    assert!(tx.handle(syn_ack(0)).contains(&TxAction::ResendUnacked));
    assert_eq!(tx.state(), TxState::SynSent { epoch: 1 });
    // A SYN-ACK for 2^22 - 1 is now stale.
    assert_eq!(list(tx.handle(syn_ack(MAX_EPOCH))), [TxAction::Ignore]);
    // A receiver at 2^22 - 1 advertising to a sender that wrapped to the start.
    let mut tx = tx_in(TxState::SynSent {
        epoch: MAX_EPOCH - 1,
    });
    tx.handle(syn_ack(MAX_EPOCH));
    assert_eq!(tx.state(), TxState::SynSent { epoch: 0 });
}

#[test]
fn tx_rst_with_backlog_reestablishes_at_once_with_a_greater_epoch() {
    for state in [
        TxState::SynSent { epoch: MAX_EPOCH },
        TxState::Established { epoch: MAX_EPOCH },
    ] {
        let mut tx = tx_in(state);
        assert_eq!(list(tx.handle(TxEvent::Rst { backlog: true })), reopens(0));
        assert_eq!(tx.state(), TxState::SynSent { epoch: 0 });
    }
}

#[test]
fn tx_rst_without_backlog_frees_state_remembering_the_epoch() {
    for state in [
        TxState::SynSent { epoch: 4 },
        TxState::Established { epoch: 4 },
    ] {
        let mut tx = tx_in(state);
        assert_eq!(
            list(tx.handle(TxEvent::Rst { backlog: false })),
            [TxAction::FreeState]
        );
        assert_eq!(
            tx.state(),
            TxState::Closed {
                last_epoch: Some(4)
            }
        );
    }
}

#[test]
fn tx_closed_ignores_control_packets() {
    for event in [syn_ack(4), TxEvent::Rst { backlog: true }] {
        let mut tx = TxTunnel::new();
        assert_eq!(list(tx.handle(event)), [TxAction::Ignore]);
        assert_eq!(tx.state(), TxState::Closed { last_epoch: None });
    }
}

#[test]
fn tx_too_many_rtos_reestablishes_in_a_fresh_epoch() {
    for state in [
        TxState::SynSent { epoch: 4 },
        TxState::Established { epoch: 4 },
    ] {
        let mut tx = tx_in(state);
        assert_eq!(list(tx.handle(TxEvent::TooManyRtos)), reopens(5));
        assert_eq!(tx.state(), TxState::SynSent { epoch: 5 });
    }
    let mut tx = TxTunnel::new();
    assert!(tx.handle(TxEvent::TooManyRtos).is_empty());
}

#[test]
fn tx_close_frees_state_without_telling_the_peer() {
    for state in [
        TxState::SynSent { epoch: 4 },
        TxState::Established { epoch: 4 },
    ] {
        let mut tx = tx_in(state);
        assert_eq!(list(tx.handle(TxEvent::Close)), [TxAction::FreeState]);
        assert_eq!(
            tx.state(),
            TxState::Closed {
                last_epoch: Some(4)
            }
        );
    }
    let mut tx = TxTunnel::new();
    assert!(tx.handle(TxEvent::Close).is_empty());
}

// ---- self-synchronisation of a sender and receiver pair ----

/// Packets of the initial window a SYN-SENT sender sends before it only repeats
/// them (as its RTO would).
const INITIAL_WINDOW: u32 = 8;

#[derive(Debug, Clone, Copy)]
struct DataPkt {
    seq: u32,
    syn: bool,
}

#[derive(Debug, Clone, Copy)]
enum CtlPkt {
    Ack { ack_no: u32, syn: bool },
    Rst,
}

/// A sending EQIF reduced to what the tunnel state needs: it always has backlog.
struct TxSide {
    fsm: TxTunnel,
    isn: u32,
    next_seq: u32,
    /// RSTs seen while synchronised, to check that a settled pair stays settled.
    restarts: u32,
}

impl TxSide {
    fn new() -> Self {
        Self {
            fsm: TxTunnel::new(),
            isn: 0,
            next_seq: 0,
            restarts: 0,
        }
    }

    fn apply(&mut self, actions: Actions<TxAction>, net: &mut Vec<DataPkt>) {
        for action in actions {
            match action {
                TxAction::StartEpoch { isn, .. } => {
                    self.isn = isn;
                    self.next_seq = isn;
                    self.restarts += 1;
                }
                TxAction::ResendUnacked => self.emit(net),
                _ => {}
            }
        }
    }

    fn emit(&mut self, net: &mut Vec<DataPkt>) {
        let syn = self.fsm.syn();
        net.push(DataPkt {
            seq: self.next_seq,
            syn,
        });
        self.next_seq = self.next_seq.wrapping_add(1);
    }

    fn send(&mut self, random: u32, net: &mut Vec<DataPkt>) {
        let actions = self.fsm.handle(TxEvent::PacketToSend { random });
        self.apply(actions, net);
        let sent = self.next_seq.wrapping_sub(self.isn);
        if self.fsm.syn() && sent >= INITIAL_WINDOW {
            // Window used up: repeat one of it, as a retransmission would.
            let seq = self.isn + random % INITIAL_WINDOW;
            net.push(DataPkt { seq, syn: true });
        } else {
            self.emit(net);
        }
    }

    fn receive(&mut self, pkt: CtlPkt, backlog: bool, net: &mut Vec<DataPkt>) {
        let event = match pkt {
            CtlPkt::Ack { syn: false, .. } => return,
            CtlPkt::Ack { ack_no, syn: true } => TxEvent::SynAck { ack_no },
            CtlPkt::Rst => TxEvent::Rst { backlog },
        };
        let actions = self.fsm.handle(event);
        self.apply(actions, net);
    }
}

/// A receiving EQIF reduced to the tunnel and its real reorder queue.
struct RxSide {
    fsm: RxTunnel,
    queue: ReorderQueue<u32>,
}

impl RxSide {
    fn new() -> Self {
        Self {
            fsm: RxTunnel::new(RxConfig::default()),
            queue: ReorderQueue::new(
                ReorderConfig {
                    window: RxConfig::default().window,
                    hole_timeout: u64::MAX,
                },
                0,
            ),
        }
    }

    fn receive(&mut self, pkt: DataPkt, net: &mut Vec<CtlPkt>) {
        let event = RxEvent::Data {
            seq: pkt.seq,
            syn: pkt.syn,
            expected: self.queue.next_seq(),
            awaited: self.queue.awaits(pkt.seq),
        };
        for action in self.fsm.handle(event) {
            match action {
                RxAction::ReleaseReorderQueue => self.queue.release_all().for_each(drop),
                RxAction::ResetSequence { isn } => self.queue.reset(isn),
                RxAction::Accept { syn_ack } => {
                    let outcome = self.queue.insert(0, pkt.seq, false, pkt.seq);
                    assert!(!matches!(outcome, InsertOutcome::Dropped(_)));
                    while self.queue.poll_deliver(0).is_some() {}
                    net.push(CtlPkt::Ack {
                        ack_no: pkt.seq,
                        syn: syn_ack,
                    });
                }
                RxAction::SendSynAck { epoch } => net.push(CtlPkt::Ack {
                    ack_no: isn_for_epoch(epoch),
                    syn: true,
                }),
                RxAction::SendRst => net.push(CtlPkt::Rst),
                RxAction::Drop | RxAction::FreeState => {}
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Step {
    Send(u32),
    DeliverData(prop::sample::Index, bool),
    DeliverCtl(prop::sample::Index, bool, bool),
    LoseData(prop::sample::Index),
    LoseCtl(prop::sample::Index),
    ReplayOld(prop::sample::Index),
    StaleSynAck(u32),
    StaleSyn(u32, u32),
    RxDropState,
    RxClose,
    TxDropState,
    TxClose,
    TxTooManyRtos,
}

fn random_epoch_bits() -> impl Strategy<Value = u32> {
    prop_oneof![any::<u32>(), (EPOCH_MASK - 3)..=EPOCH_MASK, 0u32..4]
}

fn step() -> impl Strategy<Value = Step> {
    use prop::sample::Index;
    prop_oneof![
        6 => random_epoch_bits().prop_map(Step::Send),
        6 => (any::<Index>(), any::<bool>()).prop_map(|(i, d)| Step::DeliverData(i, d)),
        6 => (any::<Index>(), any::<bool>(), any::<bool>())
            .prop_map(|(i, d, b)| Step::DeliverCtl(i, d, b)),
        2 => any::<Index>().prop_map(Step::LoseData),
        2 => any::<Index>().prop_map(Step::LoseCtl),
        2 => any::<Index>().prop_map(Step::ReplayOld),
        1 => random_epoch_bits().prop_map(Step::StaleSynAck),
        1 => (random_epoch_bits(), 0..EPOCH_BLOCK).prop_map(|(e, o)| Step::StaleSyn(e, o)),
        1 => Just(Step::RxDropState),
        1 => Just(Step::RxClose),
        1 => Just(Step::TxDropState),
        1 => Just(Step::TxClose),
        1 => Just(Step::TxTooManyRtos),
    ]
}

fn take<T: Copy>(pool: &mut Vec<T>, at: &prop::sample::Index, keep: bool) -> Option<T> {
    if pool.is_empty() {
        return None;
    }
    let i = at.index(pool.len());
    Some(if keep { pool[i] } else { pool.swap_remove(i) })
}

/// Delivers everything in flight, both ways, until the network is empty.
fn drain(tx: &mut TxSide, rx: &mut RxSide, fwd: &mut Vec<DataPkt>, rev: &mut Vec<CtlPkt>) {
    for _ in 0..10_000 {
        if let Some(p) = fwd.pop() {
            rx.receive(p, rev);
        } else if let Some(c) = rev.pop() {
            tx.receive(c, true, fwd);
        } else {
            return;
        }
    }
    panic!("control packets ping-pong forever");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn sender_and_receiver_always_resynchronise(
        steps in prop::collection::vec(step(), 0..120),
        first_epoch in random_epoch_bits(),
    ) {
        let (mut tx, mut rx) = (TxSide::new(), RxSide::new());
        let (mut fwd, mut rev) = (Vec::new(), Vec::new());
        let (mut old_data, mut old_ctl): (Vec<DataPkt>, Vec<CtlPkt>) = (Vec::new(), Vec::new());
        tx.send(first_epoch, &mut fwd);
        for step in steps {
            match step {
                Step::Send(r) => tx.send(r, &mut fwd),
                Step::DeliverData(i, dup) => if let Some(p) = take(&mut fwd, &i, dup) {
                    old_data.push(p);
                    rx.receive(p, &mut rev);
                },
                Step::DeliverCtl(i, dup, backlog) => if let Some(c) = take(&mut rev, &i, dup) {
                    old_ctl.push(c);
                    tx.receive(c, backlog, &mut fwd);
                },
                Step::LoseData(i) => { take(&mut fwd, &i, false); }
                Step::LoseCtl(i) => { take(&mut rev, &i, false); }
                Step::ReplayOld(i) => {
                    if let Some(p) = take(&mut old_data, &i, true) { fwd.push(p); }
                    if let Some(c) = take(&mut old_ctl, &i, true) { rev.push(c); }
                }
                Step::StaleSynAck(e) => rev.push(CtlPkt::Ack {
                    ack_no: isn_for_epoch(e & EPOCH_MASK) + 1, syn: true,
                }),
                Step::StaleSyn(e, o) => fwd.push(DataPkt {
                    seq: isn_for_epoch(e & EPOCH_MASK) + o, syn: true,
                }),
                // Unilateral state drop: the peer is not told.
                Step::RxDropState => rx.fsm = RxTunnel::new(RxConfig::default()),
                Step::RxClose => {
                    let actions = rx.fsm.handle(RxEvent::Close);
                    if actions.contains(&RxAction::SendRst) { rev.push(CtlPkt::Rst); }
                }
                Step::TxDropState => tx.fsm = TxTunnel::new(),
                Step::TxClose => { tx.fsm.handle(TxEvent::Close); }
                Step::TxTooManyRtos => {
                    let actions = tx.fsm.handle(TxEvent::TooManyRtos);
                    tx.apply(actions, &mut fwd);
                }
            }
        }
        // Quiet period: whatever is still in flight (stale or not) lands, then the
        // sender keeps sending over a clean network.
        drain(&mut tx, &mut rx, &mut fwd, &mut rev);
        for round in 0..4 {
            tx.send(round, &mut fwd);
            drain(&mut tx, &mut rx, &mut fwd, &mut rev);
        }
        let epoch = tx.fsm.epoch();
        prop_assert!(epoch.is_some());
        prop_assert_eq!(tx.fsm.state(), TxState::Established { epoch: epoch.unwrap() });
        prop_assert_eq!(rx.fsm.state(), RxState::Established { epoch: epoch.unwrap() });
        // Settled for good: more clean traffic changes nothing.
        let restarts = tx.restarts;
        for round in 0..8 {
            tx.send(round, &mut fwd);
            drain(&mut tx, &mut rx, &mut fwd, &mut rev);
        }
        prop_assert_eq!(tx.restarts, restarts);
        prop_assert_eq!(tx.fsm.state(), TxState::Established { epoch: epoch.unwrap() });
        prop_assert_eq!(rx.fsm.state(), RxState::Established { epoch: epoch.unwrap() });
    }
}
