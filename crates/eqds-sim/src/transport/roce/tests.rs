//! The sender and the receiver each on its own: a two-host network whose events a
//! small loop runs, delivering what the endpoint sends to the test instead of the
//! far end, which the test plays.

use super::dcqcn::{DcqcnParams, Profile};
use super::{Recovery, RoceConfig, RoceReceiver, RoceSender};
use crate::flow::Protocol;
use crate::net::packet::{flags, Packet, PacketKind};
use crate::transport::test_rig::{ends, Rig, RECEIVER, SENDER};
use crate::transport::Endpoint;
use crate::units::{serialisation_time, Time, US};

const RATE: u64 = 40_000_000_000;

fn cfg() -> RoceConfig {
    RoceConfig {
        mss: 1000,
        header: 64,
        first_extra: 0,
        message_size: None,
        ack_every: 1,
        recovery: Recovery::GoBackN,
        nak_interval: 500 * US,
        rto: 1000 * US,
        rto_max: 8000 * US,
        nic_limit: 1,
        class: 0,
        ack_class: 0,
    }
}

/// The rig with this file's links and a flow of `size` bytes.
fn two_hosts(size: u64) -> Rig {
    Rig::new(RATE, Protocol::Roce, size)
}

/// A data packet of PSN `psn` for the receiver, `payload` bytes long.
fn data(psn: u64, payload: u32, ce: bool) -> Packet {
    Packet {
        kind: PacketKind::Data,
        seq: psn,
        payload,
        size: payload + 64,
        flags: if ce {
            flags::ECT | flags::CE
        } else {
            flags::ECT
        },
        ..ends().packet()
    }
}

/// A control packet for the sender.
fn control(kind: PacketKind, ack: u64) -> Packet {
    Packet {
        kind,
        ack,
        size: 64,
        ..ends().reversed().packet()
    }
}

fn acks(sent: &[(Time, Packet)]) -> Vec<u64> {
    sent.iter().map(|(_, p)| p.ack).collect()
}

#[test]
fn receiver_coalesces_acks_and_always_acks_a_message_end() {
    let mut rig = two_hosts(10 * 1000);
    let cfg = RoceConfig {
        ack_every: 4,
        message_size: Some(5000),
        ..cfg()
    };
    let mut rx = RoceReceiver::new(cfg, ends().reversed(), 7, Some(10_000), None);
    for psn in 0..10 {
        rig.deliver(&mut rx, RECEIVER, data(psn, 1000, false));
    }
    rig.run(&mut rx, RECEIVER, 100 * US);
    let sent = rig.take_of(PacketKind::Ack);
    // The 4th packet, the 5th (a message's last), then 4 more, then the flow's last.
    assert_eq!(acks(&sent), vec![4, 5, 9, 10]);
    assert!(sent
        .iter()
        .all(|(_, p)| p.size == 64 && p.dst == 1 && p.entropy == 7));
    let f = &rig.world.flows[0];
    assert_eq!((f.delivered, f.received), (10_000, 10_000));
    assert!(f.end.is_some(), "the flow completes with its last byte");
    assert_eq!(rig.world.roce.acks, 4);
}

#[test]
fn receiver_naks_a_gap_once_per_interval_and_reacks_duplicates() {
    let mut rig = two_hosts(10 * 1000);
    let mut rx = RoceReceiver::new(cfg(), ends().reversed(), 0, Some(10_000), None);
    rig.deliver(&mut rx, RECEIVER, data(0, 1000, false));
    // PSN 1 is lost: 2 and 3 are dropped, and only the first gap is NAKed.
    rig.deliver(&mut rx, RECEIVER, data(2, 1000, false));
    rig.deliver(&mut rx, RECEIVER, data(3, 1000, false));
    rig.run(&mut rx, RECEIVER, 499 * US);
    rig.deliver(&mut rx, RECEIVER, data(4, 1000, false));
    rig.run(&mut rx, RECEIVER, 500 * US);
    // The interval is over: the same gap is NAKed again.
    rig.deliver(&mut rx, RECEIVER, data(5, 1000, false));
    rig.run(&mut rx, RECEIVER, 600 * US);
    let naks = rig.take_of(PacketKind::Nack);
    assert_eq!(acks(&naks), vec![1, 1]);
    assert!(naks[1].0 >= 500 * US);
    assert_eq!(
        rig.world.flows[0].delivered, 1000,
        "nothing past a gap is kept"
    );
    rig.deliver(&mut rx, RECEIVER, data(1, 1000, false));
    rig.deliver(&mut rx, RECEIVER, data(0, 1000, false));
    rig.run(&mut rx, RECEIVER, 700 * US);
    assert_eq!(acks(&rig.take_of(PacketKind::Ack)), vec![1, 2, 2]);
    let c = rig.world.roce;
    assert_eq!((c.out_of_order, c.naks, c.naks_suppressed), (4, 2, 2));
    assert_eq!(c.duplicates, 1);
}

#[test]
fn receiver_np_sends_at_most_one_cnp_per_interval() {
    let mut rig = two_hosts(1000 * 1000);
    let mut rx = RoceReceiver::new(cfg(), ends().reversed(), 0, Some(1_000_000), Some(50 * US));
    // A marked packet every 10 µs for 300 µs.
    for i in 0..30 {
        rig.run(&mut rx, RECEIVER, i * 10 * US);
        rig.deliver(&mut rx, RECEIVER, data(i, 1000, true));
    }
    rig.run(&mut rx, RECEIVER, 400 * US);
    let cnps = rig.take_of(PacketKind::Cnp);
    let times: Vec<Time> = cnps.iter().map(|(t, _)| *t).collect();
    // One at once, then one at the end of each 50 µs interval holding a mark; the
    // last mark (290 µs) is answered when its interval ends at 300 µs.
    assert_eq!(cnps.len(), 7, "CNPs at {times:?}");
    assert!(times.windows(2).all(|w| w[1] - w[0] >= 50 * US));
    assert_eq!(rig.world.roce.cnps_sent, 7);
    // Unmarked packets make none.
    let mut rig = two_hosts(1000 * 1000);
    let mut rx = RoceReceiver::new(cfg(), ends().reversed(), 0, Some(1_000_000), Some(50 * US));
    rig.deliver(&mut rx, RECEIVER, data(0, 1000, false));
    rig.run(&mut rx, RECEIVER, 400 * US);
    assert!(rig.take_of(PacketKind::Cnp).is_empty());
}

/// The PSNs of the data packets collected so far, taken out.
fn psns(rig: &mut Rig) -> Vec<u64> {
    rig.take_of(PacketKind::Data)
        .iter()
        .map(|(_, p)| p.seq)
        .collect()
}

#[test]
fn sender_paces_at_line_rate_and_holds_the_nic_queue_at_its_limit() {
    let mut rig = two_hosts(20 * 1000);
    let mut tx = RoceSender::new(cfg(), ends(), 0, Some(20_000), None);
    tx.on_start(&mut rig.ctx(SENDER));
    rig.run(&mut tx, SENDER, 100 * US);
    let sent = rig.take_of(PacketKind::Data);
    assert_eq!(sent.len(), 20);
    let gap = serialisation_time(1064, RATE);
    assert!(sent.windows(2).all(|w| w[1].0 - w[0].0 == gap));
    assert!(sent.iter().all(|(_, p)| !p.has(flags::ECT)));
    // Another sender on the host fills the NIC queue: this one waits for it.
    let mut rig = two_hosts(20 * 1000);
    let busy = Packet {
        size: 9000,
        ..ends().packet()
    };
    rig.world.send_from_host(0, busy);
    rig.world.send_from_host(0, busy);
    let mut tx = RoceSender::new(cfg(), ends(), 0, Some(20_000), None);
    tx.on_start(&mut rig.ctx(SENDER));
    rig.run(&mut tx, SENDER, 100 * US);
    let first = rig.take_of(PacketKind::Data)[2].0;
    assert!(first >= 2 * serialisation_time(9000, RATE));
    assert!(rig.world.roce.nic_waits >= 1);
}

#[test]
fn sender_goes_back_n_or_to_the_message_start_on_a_nak() {
    for (recovery, resend_from) in [(Recovery::GoBackN, 7), (Recovery::GoBack0, 5)] {
        let cfg = RoceConfig {
            recovery,
            message_size: Some(5000),
            ..cfg()
        };
        let mut rig = two_hosts(20 * 1000);
        let mut tx = RoceSender::new(cfg, ends(), 0, Some(20_000), None);
        tx.on_start(&mut rig.ctx(SENDER));
        rig.run(&mut tx, SENDER, 5 * US);
        let before = psns(&mut rig);
        assert_eq!(before, (0..before.len() as u64).collect::<Vec<_>>());
        assert!(before.len() > 10);
        rig.deliver(&mut tx, SENDER, control(PacketKind::Nack, 7));
        rig.run(&mut tx, SENDER, 8 * US);
        // What was on the wire when the NAK came, then the resends.
        let after: Vec<u64> = psns(&mut rig)
            .into_iter()
            .skip_while(|&p| p > resend_from)
            .collect();
        assert_eq!(after[0], resend_from, "{recovery:?}");
        assert_eq!(after[1], resend_from + 1);
        assert!(rig.world.flows[0].retransmits >= 2, "{recovery:?}");
        assert_eq!(rig.world.roce.nak_go_backs, 1);
    }
}

#[test]
fn sender_times_out_without_ack_progress_and_backs_off() {
    let mut rig = two_hosts(3 * 1000);
    let mut tx = RoceSender::new(cfg(), ends(), 0, Some(3000), None);
    tx.on_start(&mut rig.ctx(SENDER));
    rig.run(&mut tx, SENDER, 10 * US);
    assert_eq!(psns(&mut rig), vec![0, 1, 2]);
    // PSN 0 arrived, the rest did not: the timeout runs from the ACK.
    rig.deliver(&mut tx, SENDER, control(PacketKind::Ack, 1));
    let acked = rig.now;
    rig.run(&mut tx, SENDER, 20_000 * US);
    let resends = rig.take_of(PacketKind::Data);
    let starts: Vec<Time> = resends
        .iter()
        .filter(|(_, p)| p.seq == 1)
        .map(|(t, _)| *t)
        .collect();
    assert!(resends
        .iter()
        .all(|(_, p)| p.seq >= 1 && p.has(flags::RETRANSMIT)));
    // At 1, 1 + 2, 1 + 2 + 4, 1 + 2 + 4 + 8 ms, then every 8 ms (the cap).
    let gaps: Vec<Time> = std::iter::once(starts[0] - acked)
        .chain(starts.windows(2).map(|w| w[1] - w[0]))
        .map(|g| g / (1000 * US))
        .collect();
    assert_eq!(gaps, vec![1, 2, 4, 8], "resends at {starts:?}");
    assert_eq!(rig.world.flows[0].timeouts, 4);
    // Progress resets the timeout.
    rig.deliver(&mut tx, SENDER, control(PacketKind::Ack, 2));
    let acked = rig.now;
    rig.run(&mut tx, SENDER, 40_000 * US);
    let next = rig.take_of(PacketKind::Data);
    assert_eq!(next[0].1.seq, 2);
    assert_eq!((next[0].0 - acked) / (1000 * US), 1);
}

#[test]
fn sender_with_dcqcn_marks_ect_and_slows_down_on_a_cnp() {
    let dcqcn = DcqcnParams::profile(Profile::Paper, RATE);
    let mut rig = two_hosts(1000 * 1000);
    let mut tx = RoceSender::new(cfg(), ends(), 0, Some(1_000_000), Some(dcqcn));
    tx.on_start(&mut rig.ctx(SENDER));
    rig.run(&mut tx, SENDER, 5 * US);
    let before = rig.take_of(PacketKind::Data);
    assert!(before.iter().all(|(_, p)| p.has(flags::ECT)));
    let cut = rig.now;
    rig.deliver(&mut tx, SENDER, control(PacketKind::Cnp, 0));
    rig.run(&mut tx, SENDER, 10 * US);
    let after: Vec<Time> = rig
        .take_of(PacketKind::Data)
        .iter()
        .map(|(_, p)| p.timestamp)
        .filter(|&t| t >= cut)
        .collect();
    // α = 1: the first cut halves the rate, so packets leave twice as far apart.
    let gap = serialisation_time(1064, RATE);
    assert!(after.len() > 5);
    let spaced: Vec<Time> = after.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        spaced.iter().all(|&g| g.abs_diff(2 * gap) <= 1),
        "{spaced:?}"
    );
    let c = rig.world.roce;
    assert_eq!((c.cnps_received, c.rate_cuts), (1, 1));
    assert_eq!(c.lowest_rate_bps, Some(RATE as f64 / 2.0));
}

// DASR: the receiver's table and advertisements, the sender's rate.

use super::dasr::{Advert, Dasr};
use super::{advert_of, encode_advert};
use crate::units::MS;

/// A rig whose world runs DASR.
fn dasr_rig(size: u64) -> Rig {
    let mut rig = two_hosts(size);
    rig.world.dasr = Some(Box::new(Dasr::new(2, MS)));
    rig
}

fn table_of(rig: &Rig) -> (u32, u32) {
    let t = rig.world.dasr.as_ref().unwrap().table(0);
    (t.senders(), t.flows_of(1))
}

#[test]
fn adverts_fit_an_ack_and_saturate() {
    let a = Advert {
        senders: 3,
        flows: 2,
        capacity_mbps: 400_000,
    };
    let ack = Packet {
        kind: PacketKind::Ack,
        seq: encode_advert(a),
        ..Packet::default()
    };
    assert_eq!(advert_of(&ack), Some(a));
    let nak = Packet {
        kind: PacketKind::Nack,
        ..ack
    };
    assert_eq!(advert_of(&nak), Some(a));
    // Data's seq is its PSN, and an ACK without DASR has seq 0.
    let data = Packet {
        kind: PacketKind::Data,
        ..ack
    };
    assert_eq!(advert_of(&data), None);
    assert_eq!(advert_of(&Packet { seq: 0, ..ack }), None);
    let big = Advert {
        senders: 70_000,
        flows: 1,
        capacity_mbps: 1,
    };
    assert_eq!(
        advert_of(&Packet {
            seq: encode_advert(big),
            ..ack
        })
        .unwrap()
        .senders,
        65_535
    );
    assert_eq!(std::mem::size_of::<Packet>(), 64);
}

#[test]
fn receiver_counts_its_flow_per_message_and_advertises_on_acks_and_naks() {
    let mut rig = dasr_rig(4000);
    let cfg = RoceConfig {
        message_size: Some(2000),
        ..cfg()
    };
    let mut rx = RoceReceiver::new(cfg, ends().reversed(), 0, Some(4000), None);
    rig.deliver(&mut rx, RECEIVER, data(0, 1000, false));
    assert_eq!(table_of(&rig), (1, 1), "the first packet counts the sender");
    // A gap: the NAK tells the share too.
    rig.deliver(&mut rx, RECEIVER, data(3, 1000, false));
    // The message's last packet: ACKed with the share, then uncounted.
    rig.deliver(&mut rx, RECEIVER, data(1, 1000, false));
    assert_eq!(
        table_of(&rig),
        (0, 0),
        "the message's last packet uncounts it"
    );
    // The next message counts it again.
    rig.deliver(&mut rx, RECEIVER, data(2, 1000, false));
    assert_eq!(table_of(&rig), (1, 1));
    rig.run(&mut rx, RECEIVER, 10 * US);
    let sent: Vec<Packet> = rig.out.iter().map(|(_, p)| *p).collect();
    let kinds: Vec<PacketKind> = sent.iter().map(|p| p.kind).collect();
    use PacketKind::{Ack, Nack};
    assert_eq!(kinds, vec![Ack, Nack, Ack, Ack]);
    let one = Advert {
        senders: 1,
        flows: 1,
        capacity_mbps: 40_000,
    };
    assert!(sent.iter().all(|p| advert_of(p) == Some(one)), "{sent:?}");
    let c = rig.world.dasr.as_ref().unwrap().counters;
    assert_eq!((c.flows_counted, c.flows_finished, c.adverts), (2, 1, 4));
}

#[test]
fn receiver_counts_a_flow_back_after_its_host_timed_out() {
    let mut rig = dasr_rig(10_000);
    let mut rx = RoceReceiver::new(cfg(), ends().reversed(), 0, Some(10_000), None);
    rig.deliver(&mut rx, RECEIVER, data(0, 1000, false));
    rig.run(&mut rx, RECEIVER, 2 * MS);
    // Quiet for 2 ms: the next packet finds the host expired, and counts it anew.
    rig.deliver(&mut rx, RECEIVER, data(1, 1000, false));
    assert_eq!(table_of(&rig), (1, 1));
    let c = rig.world.dasr.as_ref().unwrap().counters;
    assert_eq!((c.senders_expired, c.flows_counted), (1, 2));
    // A duplicate of a finished message, after the flow is done, counts nothing.
    for psn in 2..10 {
        rig.deliver(&mut rx, RECEIVER, data(psn, 1000, false));
    }
    assert_eq!(table_of(&rig), (0, 0));
    rig.deliver(&mut rx, RECEIVER, data(9, 1000, false));
    assert_eq!(table_of(&rig), (0, 0));
}

/// The gaps between the data packets the rig collected from `from` on.
fn gaps_from(rig: &mut Rig, from: Time) -> Vec<Time> {
    let t: Vec<Time> = rig
        .take_of(PacketKind::Data)
        .iter()
        .map(|(_, p)| p.timestamp)
        .filter(|&t| t >= from)
        .collect();
    t.windows(2).map(|w| w[1] - w[0]).collect()
}

fn ack_with(psn: u64, senders: u32, flows: u32) -> Packet {
    Packet {
        seq: encode_advert(Advert {
            senders,
            flows,
            capacity_mbps: 40_000,
        }),
        ..control(PacketKind::Ack, psn)
    }
}

#[test]
fn sender_paces_at_the_advertised_share_from_the_ack_that_carries_it() {
    let line = serialisation_time(1064, RATE);
    let mut rig = dasr_rig(1000 * 1000);
    let mut tx = RoceSender::new(cfg(), ends(), 0, Some(1_000_000), None);
    tx.on_start(&mut rig.ctx(SENDER));
    rig.run(&mut tx, SENDER, 2 * US);
    // Line rate before any ACK.
    assert!(gaps_from(&mut rig, 0).iter().all(|&g| g == line));
    // n = 4: a quarter of the receiver's link.
    let at = rig.now;
    rig.deliver(&mut tx, SENDER, ack_with(1, 4, 1));
    rig.run(&mut tx, SENDER, 10 * US);
    let g = gaps_from(&mut rig, at);
    assert!(
        g.len() > 3 && g.iter().all(|&g| g.abs_diff(4 * line) <= 1),
        "{g:?}"
    );
    // Two of n = 2 hosts' flows: the host's half, split, is a quarter too; then
    // the host's other flow ends: half.
    rig.deliver(&mut tx, SENDER, ack_with(2, 2, 2));
    let at = rig.now;
    rig.deliver(&mut tx, SENDER, ack_with(3, 2, 1));
    rig.run(&mut tx, SENDER, 20 * US);
    let g = gaps_from(&mut rig, at);
    assert!(g[1..].iter().all(|&g| g.abs_diff(2 * line) <= 1), "{g:?}");
    // A NAK's advert counts as well: alone, line rate again.
    let at = rig.now;
    let nak = Packet {
        kind: PacketKind::Nack,
        ..ack_with(4, 1, 1)
    };
    rig.deliver(&mut tx, SENDER, nak);
    rig.run(&mut tx, SENDER, 30 * US);
    let g = gaps_from(&mut rig, at);
    assert!(g[1..].iter().all(|&g| g == line), "{g:?}");
    let c = rig.world.dasr.as_ref().unwrap().counters;
    // 4, 2x2, 2x1, 1: four changes of rate (2x2 is the same quarter as 4).
    assert_eq!(c.rate_updates, 3);
    assert!(c.dasr_paced_packets > 0);
}

#[test]
fn sender_paces_at_the_lower_of_dasr_and_dcqcn() {
    let line = serialisation_time(1064, RATE);
    let dcqcn = DcqcnParams::profile(Profile::Paper, RATE);
    let mut rig = dasr_rig(1000 * 1000);
    let mut tx = RoceSender::new(cfg(), ends(), 0, Some(1_000_000), Some(dcqcn));
    tx.on_start(&mut rig.ctx(SENDER));
    rig.run(&mut tx, SENDER, 2 * US);
    // DCQCN halves its rate (α = 1): 20 Gbps, below DASR's 40 (n = 1).
    rig.deliver(&mut tx, SENDER, ack_with(1, 1, 1));
    rig.deliver(&mut tx, SENDER, control(PacketKind::Cnp, 0));
    let at = rig.now;
    rig.run(&mut tx, SENDER, 10 * US);
    let g = gaps_from(&mut rig, at);
    assert!(g[1..].iter().all(|&g| g.abs_diff(2 * line) <= 1), "{g:?}");
    // n = 4: DASR's 10 Gbps is lower.
    rig.deliver(&mut tx, SENDER, ack_with(2, 4, 1));
    let at = rig.now;
    rig.run(&mut tx, SENDER, 20 * US);
    let g = gaps_from(&mut rig, at);
    assert!(g[1..].iter().all(|&g| g.abs_diff(4 * line) <= 1), "{g:?}");
    // The CNP moved DCQCN's state only: DASR changed nothing in it.
    assert_eq!(rig.world.roce.rate_cuts, 1);
}
