//! Two daemons' engines joined in memory: what one reads from its TUN device comes
//! out of the other's, and bad datagrams only move counters. No sockets, no root.

#![deny(unsafe_code)]

use std::net::SocketAddrV4;

use eqds_proto::time::{Time, PS_PER_US};
use eqds_proto::wire::HEADER_LEN;
use eqdsd::config::Config;
use eqdsd::engine::{Engine, TUN_EQIF};
use eqdsd::pool::INNER;

fn config(host: u8, mode: &str) -> Config {
    Config::parse(&config_text(host, mode)).unwrap()
}

fn config_text(host: u8, mode: &str) -> String {
    format!(
        r#"
[interface]
address = "10.88.{host}.1/16"
[tunnel]
listen = "10.77.{host}.1:7700"
[eqds]
mode = "{mode}"
link_rate = "1gbit"
[[peer_range]]
endpoints = "10.77.0.0/16"
port = 7700
allowed_ips = "10.88.0.0/16"
"#
    )
}

fn endpoint(host: u8) -> SocketAddrV4 {
    format!("10.77.{host}.1:7700").parse().unwrap()
}

/// An IPv4 packet from `src` to `dst` whose payload is `tag` repeated.
fn ip_packet(src: [u8; 4], dst: [u8; 4], tag: u32, len: usize) -> Vec<u8> {
    let mut p = vec![0u8; len];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
    for (i, b) in p[20..].iter_mut().enumerate() {
        *b = (tag as usize + i) as u8;
    }
    p[20..24].copy_from_slice(&tag.to_be_bytes());
    p
}

struct Pair {
    a: Engine,
    b: Engine,
    now: Time,
    /// Drop every n-th datagram from a to b (0: none).
    lose_every: usize,
    sent: usize,
}

impl Pair {
    fn new(mode: &str) -> Self {
        Self {
            a: Engine::new(&config(1, mode), 1),
            b: Engine::new(&config(2, mode), 2),
            now: 0,
            lose_every: 0,
            sent: 0,
        }
    }

    fn write_tun(e: &mut Engine, now: Time, pkt: &[u8]) {
        let id = e.alloc().unwrap();
        e.pool_mut().raw_mut(id)[INNER..INNER + pkt.len()].copy_from_slice(pkt);
        e.handle_tun(now, id, pkt.len());
    }

    fn inject(e: &mut Engine, now: Time, from: SocketAddrV4, bytes: &[u8]) {
        let id = e.alloc().unwrap();
        e.pool_mut().raw_mut(id)[..bytes.len()].copy_from_slice(bytes);
        e.handle_datagram(now, from, id, bytes.len(), false);
    }

    /// Moves every pending datagram across (one hop), then advances time by `step`
    /// running due timers. Returns the inner packets b wrote to its TUN.
    fn step(&mut self, step: Time) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (from, to, from_ep) in [(0, 1, endpoint(1)), (1, 0, endpoint(2))] {
            let mut wire = Vec::new();
            {
                let src = if from == 0 { &mut self.a } else { &mut self.b };
                while let Some(d) = src.pop_datagram() {
                    let mut bytes = d.header.to_vec();
                    if let Some(p) = d.payload {
                        bytes.extend_from_slice(src.pool().inner(p));
                    }
                    wire.push(bytes);
                }
            }
            let dst = if to == 0 { &mut self.a } else { &mut self.b };
            for bytes in wire {
                self.sent += 1;
                // A fixed pseudo-random pattern (Knuth's multiplicative hash).
                let draw = (self.sent as u64).wrapping_mul(2_654_435_761) >> 7;
                if from == 0 && self.lose_every > 0 && draw % self.lose_every as u64 == 0 {
                    continue;
                }
                Self::inject(dst, self.now, from_ep, &bytes);
            }
        }
        while let Some(id) = self.b.pop_tun() {
            out.push(self.b.pool().inner(id).to_vec());
            self.b.tun_written(id, true);
        }
        while let Some(id) = self.a.pop_tun() {
            self.a.tun_written(id, true);
        }
        self.now += step;
        for e in [&mut self.a, &mut self.b] {
            if e.poll_timeout().is_some_and(|t| t <= self.now) {
                e.handle_timeout(self.now);
            }
        }
        out
    }
}

fn run_transfer(mode: &str, lose_every: usize) -> (Pair, Vec<u32>) {
    let mut p = Pair::new(mode);
    p.lose_every = lose_every;
    let mut got = Vec::new();
    let total = 300u32;
    for tag in 0..total {
        let pkt = ip_packet([10, 88, 1, 1], [10, 88, 2, 1], tag, 1400);
        // Like a TCP sender that resends what the full queue refused.
        loop {
            let refused = p.a.counters().drop_send_queue_full;
            Pair::write_tun(&mut p.a, p.now, &pkt);
            if p.a.counters().drop_send_queue_full == refused {
                break;
            }
            for _ in 0..20 {
                for pkt in p.step(5 * PS_PER_US) {
                    got.push(u32::from_be_bytes(pkt[20..24].try_into().unwrap()));
                }
            }
        }
        if tag % 20 == 19 {
            for pkt in p.step(5 * PS_PER_US) {
                got.push(u32::from_be_bytes(pkt[20..24].try_into().unwrap()));
            }
        }
    }
    for _ in 0..20_000 {
        for pkt in p.step(5 * PS_PER_US) {
            got.push(u32::from_be_bytes(pkt[20..24].try_into().unwrap()));
        }
        if got.len() == total as usize {
            break;
        }
    }
    (p, got)
}

#[test]
fn every_packet_arrives_in_order_in_both_modes() {
    for mode in ["rts", "ndp"] {
        let (p, got) = run_transfer(mode, 0);
        assert_eq!(got, (0..300).collect::<Vec<_>>(), "mode {mode}");
        assert_eq!(p.b.counters().tun_tx_packets, 300);
    }
}

#[test]
fn losses_are_repaired_and_order_kept() {
    let (p, got) = run_transfer("rts", 7);
    assert_eq!(got, (0..300).collect::<Vec<_>>());
    let retransmits: u64 =
        p.a.uplink()
            .eqif(TUN_EQIF)
            .tunnels()
            .map(|(_, t)| t.retransmits)
            .sum();
    assert!(retransmits > 0, "every 7th datagram was lost");
}

#[test]
fn bad_datagrams_only_move_counters() {
    let mut p = Pair::new("rts");
    let now = 0;
    // Garbage from a peer, a truncated header, a stranger, a bad version.
    Pair::inject(&mut p.b, now, endpoint(1), b"garbage that is long enough..");
    Pair::inject(&mut p.b, now, endpoint(1), &[0x10, 0, 0]);
    Pair::inject(&mut p.b, now, "192.0.2.1:7700".parse().unwrap(), &[0u8; 40]);
    let mut bad_version = [0u8; HEADER_LEN + 20];
    bad_version[0] = 0x70;
    Pair::inject(&mut p.b, now, endpoint(1), &bad_version);
    let c = p.b.counters();
    assert_eq!(c.drop_malformed, 3);
    assert_eq!(c.drop_unknown_peer, 1);
    assert_eq!(c.tun_tx_packets, 0);
    assert_eq!(p.b.pool().in_use(), 0, "every buffer came back");
}

#[test]
fn spoofed_inner_sources_are_dropped() {
    let mut p = Pair::new("ndp");
    // Host 1 may only use 10.88.1.1; this claims to be 10.88.3.1.
    let spoofed = ip_packet([10, 88, 3, 1], [10, 88, 2, 1], 7, 200);
    let honest = ip_packet([10, 88, 1, 1], [10, 88, 2, 1], 8, 200);
    Pair::write_tun(&mut p.a, 0, &spoofed);
    Pair::write_tun(&mut p.a, 0, &honest);
    let mut got = Vec::new();
    for _ in 0..100 {
        got.extend(p.step(5 * PS_PER_US));
    }
    assert_eq!(got, vec![honest]);
    assert_eq!(p.b.counters().drop_spoofed, 1);
}

#[test]
fn tun_packets_without_a_peer_or_malformed_are_counted() {
    let mut p = Pair::new("rts");
    Pair::write_tun(
        &mut p.a,
        0,
        &ip_packet([10, 88, 1, 1], [172, 16, 0, 1], 1, 100),
    );
    Pair::write_tun(&mut p.a, 0, &[0x45, 0, 0]);
    let mut v6 = ip_packet([10, 88, 1, 1], [10, 88, 2, 1], 1, 100);
    v6[0] = 0x60;
    Pair::write_tun(&mut p.a, 0, &v6);
    let c = p.a.counters();
    assert_eq!(c.drop_no_route, 1);
    assert_eq!(c.drop_tun_malformed, 2);
    assert_eq!(p.a.datagrams_pending(), 0);
}

#[test]
fn a_restarted_receiver_resynchronises() {
    let mut p = Pair::new("rts");
    let mut got = Vec::new();
    // One 1000-byte packet per 5 µs step, tagged from `tags`.
    let send = |p: &mut Pair, tags: std::ops::Range<u32>, got: &mut Vec<Vec<u8>>| {
        for tag in tags {
            let pkt = ip_packet([10, 88, 1, 1], [10, 88, 2, 1], tag, 1000);
            Pair::write_tun(&mut p.a, p.now, &pkt);
            got.extend(p.step(5 * PS_PER_US));
        }
    };
    send(&mut p, 0..50, &mut got);
    // The receiving daemon restarts: a fresh engine knows nothing of the tunnel.
    p.b = Engine::new(&config(2, "rts"), 99);
    send(&mut p, 50..100, &mut got);
    for _ in 0..5_000 {
        got.extend(p.step(5 * PS_PER_US));
    }
    let tags: Vec<u32> = got
        .iter()
        .map(|pkt| u32::from_be_bytes(pkt[20..24].try_into().unwrap()))
        .collect();
    // Everything written after the restart arrives (packets in flight at the moment
    // of the restart may be lost: EQDS is a datagram service; TCP resends them).
    for tag in 50..100 {
        assert!(
            tags.contains(&tag),
            "packet {tag} lost after the restart: {tags:?}"
        );
    }
    assert!(
        p.a.uplink()
            .eqif(TUN_EQIF)
            .tunnels()
            .any(|(_, t)| t.epochs >= 2),
        "a new epoch began"
    );
}

#[test]
fn a_clean_shutdown_tells_the_senders() {
    let mut p = Pair::new("rts");
    for tag in 0..20u32 {
        let pkt = ip_packet([10, 88, 1, 1], [10, 88, 2, 1], tag, 500);
        Pair::write_tun(&mut p.a, p.now, &pkt);
        p.step(5 * PS_PER_US);
    }
    assert_eq!(p.a.uplink().eqif(TUN_EQIF).rst_received(), 0);
    p.b.close_all(p.now);
    assert!(p.b.datagrams_pending() > 0, "an RST is queued");
    p.step(5 * PS_PER_US);
    assert!(
        p.a.uplink().eqif(TUN_EQIF).rst_received() >= 1,
        "the sender heard the RST"
    );
    assert_eq!(p.b.pool().in_use(), 0, "every buffer came back");
}

/// A native datagram as the daemon reads it: into a buffer at `NATIVE_AT`.
fn write_native(e: &mut Engine, now: Time, dgram: &[u8]) -> eqdsd::engine::NativeOutcome {
    let id = e.alloc().unwrap();
    let at = eqdsd::engine::NATIVE_AT;
    e.pool_mut().raw_mut(id)[at..at + dgram.len()].copy_from_slice(dgram);
    e.handle_native(now, id, dgram.len())
}

fn native_dgram(peer: [u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut d = eqdsd::native::NativeHeader::data(peer.into())
        .encode()
        .to_vec();
    d.extend_from_slice(payload);
    d
}

#[test]
fn native_payloads_cross_in_order_beside_ip_packets_and_refusals_are_answered() {
    use eqdsd::engine::NativeOutcome;
    use eqdsd::native::{Kind, Reject};
    let native_config = |host: u8| {
        let mut c = config(host, "rts");
        c.native_socket = Some("/run/eqdsd/native.sock".into());
        c
    };
    let mut p = Pair::new("rts");
    p.a = Engine::new(&native_config(1), 1);
    p.b = Engine::new(&native_config(2), 2);
    let mut delivered = Vec::new();
    let mut tun = Vec::new();
    for i in 0..40u32 {
        let payload = format!("native payload {i}").into_bytes();
        let out = write_native(&mut p.a, p.now, &native_dgram([10, 77, 2, 1], &payload));
        assert_eq!(out, NativeOutcome::Queued);
        Pair::write_tun(
            &mut p.a,
            p.now,
            &ip_packet([10, 88, 1, 1], [10, 88, 2, 1], i, 200),
        );
        for _ in 0..3 {
            tun.extend(p.step(20 * PS_PER_US));
            while let Some((id, src)) = p.b.front_native() {
                assert_eq!(src, std::net::Ipv4Addr::new(10, 77, 1, 1));
                let dgram = p.b.stamp_native(id, src).to_vec();
                let (h, body) = eqdsd::native::decode(&dgram).unwrap();
                assert_eq!(h.kind, Kind::Data);
                delivered.push(body.to_vec());
                p.b.native_written(Some(true));
            }
        }
    }
    for _ in 0..200 {
        tun.extend(p.step(20 * PS_PER_US));
        while p.b.front_native().is_some() {
            let (id, src) = p.b.front_native().unwrap();
            let body = p.b.stamp_native(id, src)[8..].to_vec();
            delivered.push(body);
            p.b.native_written(Some(true));
        }
    }
    let want: Vec<Vec<u8>> = (0..40)
        .map(|i| format!("native payload {i}").into_bytes())
        .collect();
    assert_eq!(delivered, want, "every native payload, in order, unchanged");
    assert_eq!(tun.len(), 40, "IP packets still go to the TUN device");
    assert_eq!(p.b.counters().native_delivered, 40);
    assert_eq!(p.a.counters().native_enqueued, 40);

    // Refusals: unknown peer, oversize, malformed, and a full send queue (BUSY).
    let out = write_native(&mut p.a, p.now, &native_dgram([192, 0, 2, 1], b"x"));
    assert!(matches!(out, NativeOutcome::Refused(h)
        if h.kind == Kind::Reject && h.reason == Some(Reject::UnknownPeer)));
    let big = vec![0u8; 1457];
    let out = write_native(&mut p.a, p.now, &native_dgram([10, 77, 2, 1], &big));
    assert!(matches!(out, NativeOutcome::Refused(h)
        if h.kind == Kind::Reject && h.reason == Some(Reject::TooLarge)));
    assert_eq!(
        write_native(&mut p.a, p.now, &[1, 0, 0]),
        NativeOutcome::Malformed
    );
    let mut busy = 0;
    for _ in 0..300 {
        let out = write_native(&mut p.a, p.now, &native_dgram([10, 77, 3, 1], &[7; 1400]));
        match out {
            NativeOutcome::Queued => {}
            NativeOutcome::Refused(h) if h.kind == Kind::Busy => busy += 1,
            other => panic!("{other:?}"),
        }
    }
    let c = p.a.counters();
    assert!(busy > 0, "a 100-packet send queue refuses some of 300");
    assert_eq!(c.drop_native_send_queue_full, busy);
    assert_eq!(c.drop_native_unknown_peer, 1);
    assert_eq!(c.drop_native_too_large, 1);
    assert_eq!(c.drop_native_malformed, 1);
}

#[test]
fn native_payloads_for_a_daemon_without_the_socket_are_counted() {
    let mut p = Pair::new("rts");
    let mut on = config(1, "rts");
    on.native_socket = Some("/tmp/n.sock".into());
    p.a = Engine::new(&on, 1);
    for i in 0..5u8 {
        write_native(&mut p.a, p.now, &native_dgram([10, 77, 2, 1], &[i; 100]));
    }
    for _ in 0..100 {
        p.step(20 * PS_PER_US);
    }
    assert_eq!(p.b.counters().drop_native_no_app, 5);
    assert_eq!(p.b.native_pending(), 0);
}

/// Config of host `host` in `mode` with the native socket on; `interface` and
/// `native` are extra keys of those sections (weights and priorities).
fn two_eqif_config(host: u8, mode: &str, interface: &str, native: &str) -> Config {
    let text = config_text(host, mode)
        .replace(
            "[[peer_range]]",
            &format!("[native]\nsocket = \"/run/eqds{host}.sock\"\n{native}\n[[peer_range]]"),
        )
        .replace("[tunnel]", &format!("{interface}\n[tunnel]"));
    Config::parse(&text).unwrap()
}

/// A PULL from host 2 for sender id `sender_id` with cumulative pull number `pull_no`.
fn pull(sender_id: u16, pull_no: u32) -> Vec<u8> {
    let mut header = [0u8; HEADER_LEN];
    let control = eqds_proto::wire::ControlHeader {
        kind: eqds_proto::wire::ControlKind::Pull,
        syn: false,
        cumulative: false,
        sender_id,
        ack_no: 0,
        pull_no,
        busy_time_ns: 0,
    };
    eqds_proto::wire::Header::Control(control)
        .encode(&mut header)
        .unwrap();
    header.to_vec()
}

/// Which EQIF (sender id) each DATA datagram host 1 releases comes from when 20
/// PULLs for each of its two EQIFs arrive in one batch (one `pump`, as
/// the event loop does for what one read returned), both EQIFs holding 40 packets
/// for host 2 in RTS mode.
fn release_order(interface: &str, native: &str) -> Vec<u16> {
    let mut a = Engine::new(&two_eqif_config(1, "rts", interface, native), 1);
    assert_eq!(a.uplink().eqif_count(), 2);
    for i in 0..40u32 {
        Pair::write_tun(
            &mut a,
            0,
            &ip_packet([10, 88, 1, 1], [10, 88, 2, 1], i, 1000),
        );
        write_native(&mut a, 0, &native_dgram([10, 77, 2, 1], &[i as u8; 1000]));
    }
    while a.pop_datagram().is_some() {} // the two RTSs
    for sender_id in [0, 1] {
        let bytes = pull(sender_id, 20);
        let id = a.alloc().unwrap();
        a.pool_mut().raw_mut(id)[..bytes.len()].copy_from_slice(&bytes);
        a.receive_datagram(0, endpoint(2), id, bytes.len(), false);
    }
    a.pump(0);
    data_sender_ids(&mut a)
}

/// Sender ids of the DATA datagrams `e` has ready, in order.
fn data_sender_ids(e: &mut Engine) -> Vec<u16> {
    let mut ids = Vec::new();
    while let Some(d) = e.pop_datagram() {
        let Some(payload) = d.payload else { continue };
        let len = e.pool().inner(payload).len();
        if let Ok(eqds_proto::wire::Header::Data(h)) =
            eqds_proto::wire::decode_header(&d.header, len)
        {
            ids.push(h.sender_id);
        }
    }
    ids
}

#[test]
fn tun_and_native_payloads_share_released_credit_by_their_eqifs_weights() {
    // Equal weights: the EQIFs alternate.
    let ids = release_order("", "");
    // 20 PULLs of a full packet's credit pay for 28 packets of 1,000 bytes.
    assert_eq!(ids.len(), 56, "{ids:?}");
    // Turns are in bytes (a quantum of one full packet, 1,558 B, for packets of
    // 1,058 B), so the order is not strict alternation, but no prefix is more than
    // one quantum out of balance.
    let native_in = |ids: &[u16]| ids.iter().filter(|&&id| id == 1).count();
    for n in 1..=ids.len() {
        let native = native_in(&ids[..n]) as i64;
        assert!((2 * native - n as i64).abs() <= 2, "prefix {n}: {ids:?}");
    }
    // Native weight 3: three quarters of the bytes until its credit is spent.
    let ids = release_order("", "weight = 3");
    for n in 8..=36 {
        let native = native_in(&ids[..n]) as f64;
        assert!(
            (native - 0.75 * n as f64).abs() <= 2.0,
            "prefix {n}: {ids:?}"
        );
    }
    // The TUN's EQIF at a less urgent level: the native credit is spent first.
    let ids = release_order("priority = 1", "");
    assert!(ids[..28].iter().all(|&id| id == 1), "{ids:?}");
    assert!(ids[28..].iter().all(|&id| id == 0), "{ids:?}");
}

#[test]
fn with_an_uplink_rate_the_eqifs_weights_share_a_congested_uplink() {
    // Both EQIFs burst an NDP window (32 packets each) at once: far more than a
    // 100 Mbit/s uplink carries. Paced at that rate, the excess waits in the EQIFs,
    // and what goes each moment is the weights' choice.
    let text = config_text(1, "ndp")
        .replace(
            "[[peer_range]]",
            "[native]\nsocket = \"/run/eqds1.sock\"\nweight = 3\n[[peer_range]]",
        )
        .replace(
            "link_rate = \"1gbit\"",
            "link_rate = \"1gbit\"\nuplink_rate = \"100mbit\"",
        );
    let mut a = Engine::new(&Config::parse(&text).unwrap(), 1);
    for i in 0..40u32 {
        Pair::write_tun(
            &mut a,
            0,
            &ip_packet([10, 88, 1, 1], [10, 88, 2, 1], i, 1000),
        );
        write_native(&mut a, 0, &native_dgram([10, 77, 2, 1], &[i as u8; 1000]));
    }
    let at_once = data_sender_ids(&mut a);
    // The bucket: four packets' worth of credit bytes (1,558 each), 1,058-byte packets.
    assert_eq!(at_once.len(), 6, "{at_once:?}");
    let mut ids = at_once;
    let mut now = 0;
    let mut timeline = Vec::new();
    while ids.len() < 60 {
        now = a.poll_timeout().expect("the pacer has packets waiting");
        a.handle_timeout(now);
        ids.extend(data_sender_ids(&mut a));
        timeline.push((now, ids.len()));
    }
    // 54 packets of 1,058 bytes after the bucket: 4.57 ms at 100 Mbit/s.
    let ms = now as f64 / 1e9;
    assert!((4.4..4.8).contains(&ms), "60 packets by {ms:.2} ms");
    let native = ids[..40].iter().filter(|&&id| id == 1).count();
    assert!(
        (28..=32).contains(&native),
        "native {native} of 40: {ids:?}"
    );
}

#[test]
fn a_peers_two_eqifs_are_two_senders_to_the_receiver() {
    let mut p = Pair::new("ndp");
    p.a = Engine::new(&two_eqif_config(1, "ndp", "", ""), 1);
    p.b = Engine::new(&two_eqif_config(2, "ndp", "", ""), 2);
    let mut tun = 0;
    let mut native = 0;
    for i in 0..60u32 {
        Pair::write_tun(
            &mut p.a,
            p.now,
            &ip_packet([10, 88, 1, 1], [10, 88, 2, 1], i, 1000),
        );
        write_native(
            &mut p.a,
            p.now,
            &native_dgram([10, 77, 2, 1], &[i as u8; 1000]),
        );
    }
    for _ in 0..300 {
        tun += p.step(20 * PS_PER_US).len();
        while p.b.front_native().is_some() {
            native += 1;
            p.b.native_written(Some(true));
        }
    }
    assert_eq!((tun, native), (60, 60), "both streams arrive whole");
    let rx = p.b.receiver().stats();
    assert_eq!(rx.established, 2, "one receiving tunnel per sending EQIF");
    assert_eq!((rx.rst_sent, rx.duplicates, rx.late), (0, 0, 0));
    for sender_id in [0, 1] {
        let peer = p.b.receiving_peer(0, sender_id);
        let pulled = p.b.receiver().credit().sender(peer).unwrap();
        assert_eq!(pulled.payload_bytes, 60_000, "{sender_id}: {pulled:?}");
    }
    // Data naming a third EQIF is dropped and counted, not taken for either.
    let mut header = [0u8; HEADER_LEN];
    let data = eqds_proto::wire::DataHeader {
        kind: eqds_proto::wire::DataKind::Data,
        syn: true,
        trimmed: false,
        unordered: false,
        next_proto: eqds_proto::wire::NextProto::Native,
        seq: 0,
        pull_target: 1,
        path_id: 0,
        sender_id: 2,
    };
    eqds_proto::wire::Header::Data(data)
        .encode(&mut header)
        .unwrap();
    let mut dgram = header.to_vec();
    dgram.extend_from_slice(&[0u8; 100]);
    Pair::inject(&mut p.b, p.now, endpoint(1), &dgram);
    assert_eq!(p.b.counters().drop_unknown_eqif, 1);
    assert_eq!(p.b.receiver().stats().established, 2);
}

/// A pure TCP ACK (20-byte IPv4 and TCP headers, ACK set, no payload).
fn tcp_ack(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut p = ip_packet(src, dst, 0, 40);
    p[9] = 6;
    p[20..40].fill(0);
    p[32] = 5 << 4;
    p[33] = 0x10;
    p
}

/// The order in which b's TUN gets five queued data packets and a pure TCP ACK
/// written after them: the ACK's index.
fn ack_position(acks_first: bool) -> usize {
    let text = |h| {
        config_text(h, "rts").replace("[eqds]\n", &format!("[eqds]\nacks_first = {acks_first}\n"))
    };
    let mut p = Pair {
        a: Engine::new(&Config::parse(&text(1)).unwrap(), 1),
        b: Engine::new(&Config::parse(&text(2)).unwrap(), 2),
        now: 0,
        lose_every: 0,
        sent: 0,
    };
    let (src, dst) = ([10, 88, 1, 1], [10, 88, 2, 1]);
    for tag in 0..5 {
        Pair::write_tun(&mut p.a, p.now, &ip_packet(src, dst, tag, 1400));
    }
    Pair::write_tun(&mut p.a, p.now, &tcp_ack(src, dst));
    let mut got = Vec::new();
    for _ in 0..1_000 {
        got.extend(p.step(5 * PS_PER_US));
        if got.len() == 6 {
            break;
        }
    }
    assert_eq!(got.len(), 6, "every packet arrives");
    got.iter()
        .position(|pkt| pkt[9] == 6)
        .expect("the ACK arrives")
}

#[test]
fn with_acks_first_a_pure_tcp_ack_overtakes_waiting_data() {
    // RTS mode: everything waits for the first PULL, so the queue order shows.
    assert_eq!(ack_position(false), 5, "one FIFO per peer");
    assert_eq!(ack_position(true), 0);
}

/// Host `host`'s config with IPv6: its own addresses in both families, and the other
/// host (of 1 and 2) named as a peer owning 10.88.O.0/24 and fd00:88:O::/48.
fn dual_stack_config(host: u8, extra: &str) -> Config {
    let other = 3 - host;
    Config::parse(&format!(
        r#"
[interface]
address = "10.88.{host}.1/16"
address6 = "fd00:88:{host}::1/48"
[tunnel]
listen = "10.77.{host}.1:7700"
[eqds]
mode = "rts"
link_rate = "1gbit"
{extra}
[[peer]]
endpoint = "10.77.{other}.1:7700"
allowed_ips = ["10.88.{other}.0/24", "fd00:88:{other}::/48"]
"#
    ))
    .unwrap()
}

/// An IPv6 UDP packet from fd00:88:S::1 to fd00:88:D::1 with traffic class `tc`,
/// `len` bytes in all, whose payload starts with `tag`.
fn ip6_packet(src_host: u8, dst_host: u8, tc: u8, tag: u32, len: usize) -> Vec<u8> {
    let addr = |h: u8| {
        let mut a = [0u8; 16];
        a[..6].copy_from_slice(&[0xfd, 0, 0, 0x88, 0, h]);
        a[15] = 1;
        a
    };
    let mut p = vec![0u8; len];
    p[0] = 0x60 | (tc >> 4);
    p[1] = tc << 4;
    p[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
    p[6] = 17;
    p[7] = 64;
    p[8..24].copy_from_slice(&addr(src_host));
    p[24..40].copy_from_slice(&addr(dst_host));
    for (i, b) in p[40..].iter_mut().enumerate() {
        *b = (tag as usize + i) as u8;
    }
    p[40..44].copy_from_slice(&tag.to_be_bytes());
    p
}

impl Pair {
    fn dual_stack(extra: &str) -> Self {
        Self {
            a: Engine::new(&dual_stack_config(1, extra), 1),
            b: Engine::new(&dual_stack_config(2, extra), 2),
            now: 0,
            lose_every: 0,
            sent: 0,
        }
    }
}

#[test]
fn ipv6_packets_cross_in_order_beside_ipv4_and_spoofed_ones_are_dropped() {
    let mut p = Pair::dual_stack("");
    let mut sent = Vec::new();
    let mut got = Vec::new();
    for tag in 0..200u32 {
        let pkt = if tag % 3 == 0 {
            ip_packet([10, 88, 1, 1], [10, 88, 2, 1], tag, 700)
        } else {
            ip6_packet(1, 2, 0, tag, 600 + tag as usize)
        };
        Pair::write_tun(&mut p.a, p.now, &pkt);
        sent.push(pkt);
        if tag == 100 {
            // A source outside fd00:88:1::/48, which is all host 1 may use, and one
            // in host 2's own prefix.
            Pair::write_tun(&mut p.a, p.now, &ip6_packet(3, 2, 0, 9000, 200));
            Pair::write_tun(&mut p.a, p.now, &ip6_packet(2, 2, 0, 9001, 200));
        }
        if tag % 10 == 9 {
            got.extend(p.step(5 * PS_PER_US));
        }
    }
    for _ in 0..2000 {
        got.extend(p.step(5 * PS_PER_US));
    }
    assert_eq!(p.a.counters().drop_send_queue_full, 0);
    assert_eq!(got.len(), sent.len(), "every honest packet, nothing else");
    assert!(got == sent, "the same bytes in the same order");
    let c = p.b.counters();
    assert_eq!(c.drop_spoofed, 2);
    assert_eq!(c.drop_inner_malformed, 0);
    assert_eq!(c.tun_tx_packets, 200);
    assert_eq!(p.b.pool().in_use(), 0, "every buffer came back");
    // The other way, and a destination no peer owns.
    Pair::write_tun(&mut p.b, p.now, &ip6_packet(2, 1, 0, 1, 100));
    Pair::write_tun(&mut p.b, p.now, &ip6_packet(2, 7, 0, 2, 100));
    for _ in 0..200 {
        p.step(5 * PS_PER_US);
    }
    assert_eq!(p.b.counters().drop_no_route, 1);
    assert_eq!(p.a.counters().tun_tx_packets, 1);
}

#[test]
fn malformed_ipv6_from_the_tun_is_counted() {
    let mut p = Pair::dual_stack("");
    let good = ip6_packet(1, 2, 0, 1, 120);
    for len in [0, 1, 39, 40, 119] {
        Pair::write_tun(&mut p.a, 0, &good[..len]);
    }
    let mut long_claim = good.clone();
    long_claim[4..6].copy_from_slice(&500u16.to_be_bytes());
    Pair::write_tun(&mut p.a, 0, &long_claim);
    let c = p.a.counters();
    assert_eq!(c.drop_tun_malformed, 6);
    assert_eq!(c.drop_no_route, 0);
    assert_eq!(
        p.a.uplink().eqif(TUN_EQIF).tunnels().count(),
        0,
        "nothing was queued"
    );
    assert_eq!(p.a.pool().in_use(), 0);
}

#[test]
fn a_long_send_queue_marks_ipv6_ecn_capable_packets() {
    let mut p = Pair::dual_stack("ecn_threshold = 2");
    // rts mode: nothing leaves before credit arrives, so the queue builds at once.
    let tcs = [0x02, 0x01, 0x00, 0xb8 | 0x02, 0x02, 0x00];
    for (tag, &tc) in tcs.iter().enumerate() {
        Pair::write_tun(&mut p.a, 0, &ip6_packet(1, 2, tc, tag as u32, 1400));
    }
    // The first three found less than two full packets queued; of the three behind
    // them, the two ECN-capable ones were marked.
    assert_eq!(p.a.counters().ecn_marked, 2);
    let mut got = Vec::new();
    for _ in 0..500 {
        got.extend(p.step(5 * PS_PER_US));
    }
    let ecn: Vec<u8> = got.iter().map(|q| (q[1] >> 4) & 3).collect();
    assert_eq!(ecn, vec![2, 1, 0, 3, 3, 0]);
    let dscp: Vec<u8> = got
        .iter()
        .map(|q| ((q[0] & 0x0f) << 2) | (q[1] >> 6))
        .collect();
    assert_eq!(dscp[3], 0xb8 >> 2, "the DSCP is left alone");
}

#[test]
fn red_marks_a_share_of_ecn_capable_packets_that_grows_with_the_queue() {
    // A ramp from an empty queue to 100 packets: the k-th packet of a burst finds
    // k - 1 queued and is marked with probability (k - 1) / 100, about 18 of 60.
    let mut p = Pair::dual_stack("ecn_threshold = 0\necn_max_threshold = 100\nsend_queue = 100");
    for tag in 0..60 {
        Pair::write_tun(&mut p.a, 0, &ip6_packet(1, 2, 0x02, tag, 1400));
    }
    let marked = p.a.counters().ecn_marked;
    eprintln!("{marked} of 60 marked");
    assert!((8..=30).contains(&marked), "{marked} of 60 marked");
}
