//! Unit tests of the sending EQIF: one behaviour per test, driven by hand-made
//! control packets.

use super::*;
use crate::wire::{isn_for_epoch, DataKind, NextProto, EPOCH_BLOCK};

mod credit;
mod first_rtt;
mod lifecycle;
mod loss_recovery;
mod paths;
mod queues;
mod windows;

/// 1000-byte MTU with 100 bytes of overhead (900-byte inner packets fill it) and a
/// window of 4 MTUs: small enough to count by hand.
const MTU: u32 = 1000;
const OVERHEAD: u32 = 100;
const FULL: u32 = MTU - OVERHEAD;
const W: u32 = 4 * MTU;
const RTO: Time = 1_000_000;

fn config(mode: Mode) -> SenderConfig {
    SenderConfig {
        mode,
        mtu: MTU,
        overhead: OVERHEAD,
        window: W,
        initial_window: None,
        // Exact targets, so that each test counts PULLs by hand; the lookahead has its
        // own tests.
        demand_lookahead: 0,
        send_queue_packets: 16,
        send_queue_bytes: u64::MAX,
        rto: RTO,
        credit_loss_timeout: 2 * RTO,
        paths: 8,
        sender_id: 7,
        next_proto: NextProto::Ipv4,
        seed: 42,
        path_stats: false,
        path_avoidance: 0,
        loss_reorder_window: 0,
        ecn: None,
        thin_stream_credit: false,
    }
}

fn control(kind: ControlKind, ack_no: u32, pull_no: u32, busy_time_ns: u32) -> ControlHeader {
    ControlHeader {
        kind,
        syn: false,
        cumulative: false,
        sender_id: 7,
        ack_no,
        pull_no,
        busy_time_ns,
    }
}

fn pull(pull_no: u32) -> ControlHeader {
    control(ControlKind::Pull, 0, pull_no, 0)
}

fn drain(s: &mut Sender<u32>, now: Time) -> Vec<Transmit<u32>> {
    std::iter::from_fn(|| s.poll_transmit(now)).collect()
}

/// A sender with `n` full packets (payloads 0..n) queued for peer 1 at time 0.
fn loaded(mode: Mode, n: u32) -> Sender<u32> {
    let mut s = Sender::new(config(mode));
    // Epoch 0, so sequence numbers count from 0.
    s.open_tunnel(1, 0);
    for i in 0..n {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    s
}

fn syn_ack(kind: ControlKind, ack_no: u32, pull_no: u32) -> ControlHeader {
    ControlHeader {
        syn: true,
        ..control(kind, ack_no, pull_no, 0)
    }
}
