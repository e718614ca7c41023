//! The sender and the receiver each on its own, on a two-host network whose events a
//! small loop runs: what the endpoint sends is collected at the switch and the test
//! plays the far end.

use super::{pair_tag, PacketPairConfig, PacketPairReceiver, PacketPairSender};
use crate::flow::Protocol;
use crate::net::packet::{flags, Packet, PacketKind};
use crate::transport::test_rig::{ends, Rig, RECEIVER, SENDER};
use crate::transport::Endpoint;
use crate::units::{serialisation_time, Time, SEC, US};

const RATE: u64 = 10_000_000_000;
/// 1436 B of payload plus 64 B of header.
const WIRE: u32 = 1500;
const MSS: u64 = 1436;

/// The rig with this file's links and a flow of `size` bytes.
fn two_hosts(size: u64) -> Rig {
    Rig::new(RATE, Protocol::PacketPair, size)
}

/// The sender's ACK for the data packet `d`: cumulative point `ack`, gap `gap`.
fn ack_for(d: &Packet, ack: u64, gap: Time) -> Packet {
    Packet {
        kind: PacketKind::Ack,
        ack,
        seq: gap,
        timestamp: d.timestamp,
        payload: d.payload,
        size: 64,
        ..ends().reversed().packet()
    }
}

/// Two hosts and a sender of `size` bytes (the default configuration) that has just
/// started.
fn begun(size: u64) -> (Rig, PacketPairSender) {
    let mut rig = two_hosts(size);
    let mut tx = PacketPairSender::new(PacketPairConfig::default(), ends(), 5, Some(size), RATE);
    tx.on_start(&mut rig.ctx(SENDER));
    (rig, tx)
}

/// The gap of a full packet at `bps`.
fn gap_at(bps: f64) -> Time {
    (f64::from(WIRE) * 8.0 * SEC as f64 / bps).round() as Time
}

/// A sender of `size` bytes that has sent its first pair and had both ACKed at
/// 10 us, the second's ACK reporting a share of `share_bps`; returns what it sent
/// after the ACKs until `until`.
fn started(size: u64, share_bps: f64, until: Time) -> (Rig, PacketPairSender, Vec<(Time, Packet)>) {
    let (mut rig, mut tx) = begun(size);
    rig.run(&mut tx, SENDER, 10 * US);
    let first = rig.take();
    assert_eq!(first.len(), 2);
    rig.deliver(&mut tx, SENDER, ack_for(&first[0].1, MSS, 0));
    rig.deliver(
        &mut tx,
        SENDER,
        ack_for(&first[1].1, 2 * MSS, gap_at(share_bps)),
    );
    rig.run(&mut tx, SENDER, until);
    let after = rig.take();
    (rig, tx, after)
}

#[test]
fn a_flow_starts_with_one_pair_at_line_rate_and_waits() {
    let (mut rig, mut tx) = begun(100 * MSS);
    rig.run(&mut tx, SENDER, 500 * US);
    let sent = rig.take();
    assert_eq!(sent.len(), 2, "one pair, then nothing until its ACKs");
    let (a, b) = (sent[0], sent[1]);
    // Back to back: the second leaves the NIC one packet time after the first.
    assert_eq!(b.0 - a.0, serialisation_time(WIRE, RATE));
    assert_eq!((a.1.seq, b.1.seq), (0, MSS));
    assert_eq!((a.1.ack, b.1.ack), (pair_tag(1, false), pair_tag(1, true)));
    assert!(a.1.has(flags::ECT) && b.1.has(flags::ECT));
}

#[test]
fn a_pair_acknowledged_without_a_gap_is_followed_by_another() {
    // One cumulative ACK covers the pair without a gap (as when the original packets,
    // queued past a timeout, arrive after the resent pair left and the pair is then
    // dropped): nothing is in flight, so waiting for the pair's gap would wait for
    // ever with no timer running.
    let (mut rig, mut tx) = begun(100 * MSS);
    rig.run(&mut tx, SENDER, 10 * US);
    let first = rig.take();
    assert_eq!(first.len(), 2);
    rig.deliver(&mut tx, SENDER, ack_for(&first[1].1, 2 * MSS, 0));
    // Before the retransmission timer (200 us after the ACK's 10 us sample) could.
    rig.run(&mut tx, SENDER, 150 * US);
    let next = rig.take();
    assert_eq!(
        next.iter().map(|p| p.1.seq).collect::<Vec<_>>(),
        vec![2 * MSS, 3 * MSS],
        "another pair at once, and only that"
    );
    assert_eq!(next[0].1.ack >> 1, next[1].1.ack >> 1);
}

#[test]
fn after_the_first_gap_pairs_are_paced_at_the_measured_share() {
    // A 5 Gbps share: three pairs fit under the cap (the next test).
    let (_, _, sent) = started(200 * MSS, 5e9, 60 * US);
    assert!(sent.len() >= 6, "{}", sent.len());
    let pairs: Vec<_> = sent.chunks(2).take(3).collect();
    for p in &pairs {
        assert_eq!(p[0].1.ack >> 1, p[1].1.ack >> 1, "two packets of one pair");
        assert_eq!(p[0].1.ack & 1, 0);
        assert_eq!(p[1].0 - p[0].0, serialisation_time(WIRE, RATE));
    }
    // Pair after pair: two packets at 5 Gbps.
    let spacing = pairs[1][0].0 - pairs[0][0].0;
    let want = 2 * gap_at(5e9);
    assert!(spacing.abs_diff(want) <= 2, "{spacing} vs {want}");
}

#[test]
fn bytes_in_flight_stop_at_one_and_a_half_bdps() {
    // No ACK after the first two: the base RTT is 10 us, so the cap is 1.5 x
    // 5 Gbps x 10 us = 9375 B, six packets of 1500 B (until the RTO, 200 us after
    // the last ACK).
    let (_, _, sent) = started(200 * MSS, 5e9, 150 * US);
    assert_eq!(
        sent.len(),
        6,
        "{:?}",
        sent.iter().map(|p| p.0).collect::<Vec<_>>()
    );
    // With 3 BDPs, twice as many.
    let mut rig = two_hosts(200 * MSS);
    let cfg = PacketPairConfig {
        inflight_bdp: 3.0,
        ..PacketPairConfig::default()
    };
    let mut tx = PacketPairSender::new(cfg, ends(), 5, Some(200 * MSS), RATE);
    tx.on_start(&mut rig.ctx(SENDER));
    rig.run(&mut tx, SENDER, 10 * US);
    let first = rig.take();
    rig.deliver(&mut tx, SENDER, ack_for(&first[0].1, MSS, 0));
    rig.deliver(&mut tx, SENDER, ack_for(&first[1].1, 2 * MSS, gap_at(5e9)));
    rig.run(&mut tx, SENDER, 150 * US);
    assert_eq!(rig.take().len(), 12);
}

#[test]
fn a_lower_share_skips_and_a_higher_one_injects() {
    let (mut rig, mut tx, sent) = started(400 * MSS, 5e9, 30 * US);
    let last = sent.last().unwrap().1;
    let acked = last.seq + MSS;
    // Many base round trips later (the EWMA takes the new sample whole; before the
    // RTO) the share halves: the next pair waits (5 - 2.5) Gbps x 10 us = 3125 B
    // at 2.5 Gbps = 10 us beyond its pacing.
    let cut = 150 * US;
    rig.now = cut;
    rig.deliver(&mut tx, SENDER, ack_for(&last, acked, gap_at(2.5e9)));
    rig.run(&mut tx, SENDER, cut + 40 * US);
    let sent = rig.take();
    // Sent 10 us after the cut, at the switch a packet time and a microsecond later.
    let first = sent.first().unwrap().0 - cut - serialisation_time(WIRE, RATE) - US;
    assert!(
        first.abs_diff(10 * US) <= 100,
        "the next pair left {first} ps after the cut"
    );
    // Doubling the share sends (5 - 2.5) Gbps x 10 us = 3125 B, two packets, at
    // once, outside any pair.
    let last = sent.last().unwrap().1;
    rig.now = 300 * US;
    rig.deliver(&mut tx, SENDER, ack_for(&last, last.seq + MSS, gap_at(5e9)));
    rig.run(&mut tx, SENDER, 330 * US);
    let sent = rig.take();
    let injected: Vec<_> = sent.iter().filter(|(_, p)| p.ack == 0).collect();
    assert_eq!(injected.len(), 2, "{sent:?}");
}

#[test]
fn three_duplicate_acks_resend_the_first_hole() {
    let (mut rig, mut tx, sent) = started(200 * MSS, 5e9, 25 * US);
    // The packet at 2 MSS is lost; three later ones arrive.
    assert!(sent.len() >= 4);
    for (_, d) in &sent[1..4] {
        rig.deliver(&mut tx, SENDER, ack_for(d, 2 * MSS, 0));
    }
    rig.run(&mut tx, SENDER, rig.now + 5 * US);
    let resent: Vec<_> = rig
        .take()
        .into_iter()
        .filter(|(_, p)| p.has(flags::RETRANSMIT))
        .collect();
    assert_eq!(resent.len(), 1);
    assert_eq!(resent[0].1.seq, 2 * MSS);
    assert_eq!(rig.world.flows[0].retransmits, 1);
}

#[test]
fn a_timeout_goes_back_and_starts_again_with_one_pair() {
    let (mut rig, mut tx) = begun(100 * MSS);
    // Nothing comes back: the initial RTO (1 ms) resends the first pair, and the
    // doubled one (2 ms later) again.
    rig.run(&mut tx, SENDER, 3500 * US);
    let sent = rig.take();
    let times: Vec<Time> = sent.iter().map(|p| p.0 / US).collect();
    assert_eq!(sent.len(), 6, "{times:?}");
    assert!(sent[2..].iter().all(|(_, p)| p.has(flags::RETRANSMIT)));
    assert_eq!((sent[2].1.seq, sent[3].1.seq), (0, MSS));
    assert_eq!(sent[3].1.ack >> 1, sent[2].1.ack >> 1);
    assert_eq!(rig.world.flows[0].timeouts, 2);
}

#[test]
fn a_one_packet_flow_sends_one_packet_outside_any_pair() {
    let (mut rig, mut tx) = begun(100);
    rig.run(&mut tx, SENDER, 100 * US);
    let sent = rig.take();
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].1.ack, sent[0].1.payload), (0, 100));
}

#[test]
fn a_large_bpr_spaces_the_first_pair() {
    let mut rig = two_hosts(100 * MSS);
    let cfg = PacketPairConfig {
        bytes_per_round: 6000,
        ..PacketPairConfig::default()
    };
    let mut tx = PacketPairSender::new(cfg, ends(), 5, Some(100 * MSS), RATE);
    tx.on_start(&mut rig.ctx(SENDER));
    rig.run(&mut tx, SENDER, 100 * US);
    let sent = rig.take();
    assert_eq!(sent.len(), 2);
    // BpR - MSS = 4564 B at line rate between the two sends.
    let want = serialisation_time(6000 - MSS as u32, RATE);
    assert_eq!(sent[1].0 - sent[0].0, want);
}

/// A data packet for the receiver.
fn data(seq: u64, tag: u64, ce: bool) -> Packet {
    Packet {
        kind: PacketKind::Data,
        seq,
        ack: tag,
        payload: MSS as u32,
        size: WIRE,
        timestamp: 7,
        flags: if ce {
            flags::ECT | flags::CE
        } else {
            flags::ECT
        },
        ..ends().packet()
    }
}

#[test]
fn the_receiver_returns_the_pair_gap_on_the_second_packets_ack() {
    let mut rig = two_hosts(4 * MSS);
    let mut rx = PacketPairReceiver::new(
        PacketPairConfig::default(),
        ends().reversed(),
        9,
        Some(4 * MSS),
    );
    rig.now = 10 * US;
    rig.deliver(&mut rx, RECEIVER, data(0, pair_tag(1, false), false));
    rig.now = 13 * US;
    rig.deliver(&mut rx, RECEIVER, data(MSS, pair_tag(1, true), true));
    // A second packet whose first never came: no gap.
    rig.now = 20 * US;
    rig.deliver(&mut rx, RECEIVER, data(3 * MSS, pair_tag(2, true), false));
    // A lone packet: no gap; it fills the hole and completes the flow.
    rig.deliver(&mut rx, RECEIVER, data(2 * MSS, 0, false));
    rig.run(&mut rx, RECEIVER, 100 * US);
    let acks: Vec<Packet> = rig.take().into_iter().map(|(_, p)| p).collect();
    let fields: Vec<_> = acks.iter().map(|p| (p.ack, p.seq, p.ce_bytes)).collect();
    assert_eq!(
        fields,
        vec![
            (MSS, 0, 0),
            (2 * MSS, 3 * US, MSS as u32),
            (2 * MSS, 0, 0),
            (4 * MSS, 0, 0)
        ]
    );
    assert!(acks.iter().all(|p| p.kind == PacketKind::Ack
        && p.timestamp == 7
        && p.size == 64
        && p.entropy == 9
        && p.payload == MSS as u32));
    assert!(rig.world.flows[0].end.is_some());
}

#[test]
fn pair_tags_are_never_zero_and_tell_the_two_apart() {
    assert_eq!(pair_tag(1, false), 2);
    assert_eq!(pair_tag(1, true), 3);
    assert_eq!(pair_tag(7, true) >> 1, pair_tag(7, false) >> 1);
}
