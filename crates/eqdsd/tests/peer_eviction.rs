//! The peer table under a flood of one-packet range addresses (issue 24, item 5):
//! two daemons' engines joined in memory keep talking both ways while spoofed
//! sources send an RTS each, with room for only four peers; evicted slots carry
//! nothing over to their next peer; and a forged SYN-ACK that steers a tunnel's
//! epoch does not confirm a spoofed peer.

#![deny(unsafe_code)]

use std::net::{Ipv4Addr, SocketAddrV4};

use eqds_proto::time::{Time, PS_PER_US};
use eqds_proto::tunnel::{next_epoch, TxState};
use eqds_proto::wire::{
    isn_for_epoch, ControlHeader, ControlKind, DataHeader, DataKind, Header, NextProto, HEADER_LEN,
};
use eqdsd::config::Config;
use eqdsd::engine::{Engine, TUN_EQIF};
use eqdsd::peers::Standing;
use eqdsd::pool::INNER;

/// Host `host` of a range, with room for `max_peers` peers.
fn config(host: u8, max_peers: u32) -> Config {
    Config::parse(&format!(
        r#"
[interface]
address = "10.88.{host}.1/16"
[tunnel]
listen = "10.77.{host}.1:7700"
[eqds]
link_rate = "1gbit"
max_peers = {max_peers}
[[peer_range]]
endpoints = "10.77.0.0/16"
port = 7700
allowed_ips = "10.88.0.0/16"
"#
    ))
    .unwrap()
}

fn endpoint(host: u8) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(10, 77, host, 1), 7700)
}

/// The `i`-th spoofed source, none of them a real host's.
fn spoofed(i: u32) -> SocketAddrV4 {
    SocketAddrV4::new(
        Ipv4Addr::new(10, 77, 100 + (i / 200) as u8, 2 + (i % 200) as u8),
        7700,
    )
}

/// An IPv4 UDP packet from `src` to `dst` carrying `tag`.
fn ip_packet(src: [u8; 4], dst: [u8; 4], tag: u32) -> Vec<u8> {
    let mut p = vec![0u8; 200];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&200u16.to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
    p[20..24].copy_from_slice(&tag.to_be_bytes());
    p
}

fn tag(pkt: &[u8]) -> u32 {
    u32::from_be_bytes(pkt[20..24].try_into().unwrap())
}

/// A SYN RTS asking for a window of credit, as a flood would send it.
fn rts(epoch: u32) -> Vec<u8> {
    let mut b = [0u8; HEADER_LEN];
    Header::Data(DataHeader {
        kind: DataKind::Rts,
        syn: true,
        trimmed: false,
        unordered: false,
        next_proto: NextProto::None,
        seq: isn_for_epoch(epoch),
        pull_target: 32,
        path_id: 0,
        sender_id: 0,
    })
    .encode(&mut b)
    .unwrap();
    b.to_vec()
}

/// A SYN-ACK for sender id 0's tunnel, naming `epoch`.
fn syn_ack(epoch: u32) -> Vec<u8> {
    let mut b = [0u8; HEADER_LEN];
    Header::Control(ControlHeader {
        kind: ControlKind::Ack,
        syn: true,
        cumulative: false,
        sender_id: 0,
        ack_no: isn_for_epoch(epoch),
        pull_no: 0,
        busy_time_ns: 0,
    })
    .encode(&mut b)
    .unwrap();
    b.to_vec()
}

fn inject(e: &mut Engine, now: Time, from: SocketAddrV4, bytes: &[u8]) {
    let id = e.alloc().unwrap();
    e.pool_mut().raw_mut(id)[..bytes.len()].copy_from_slice(bytes);
    e.handle_datagram(now, from, id, bytes.len(), false);
}

fn write_tun(e: &mut Engine, now: Time, pkt: &[u8]) {
    let id = e.alloc().unwrap();
    e.pool_mut().raw_mut(id)[INNER..INNER + pkt.len()].copy_from_slice(pkt);
    e.handle_tun(now, id, pkt.len());
}

/// The slot `e` gives the peer at `addr`, if it has one.
fn slot_of(e: &Engine, addr: SocketAddrV4) -> Option<u32> {
    e.peers()
        .iter()
        .find(|(_, p)| p.endpoint == addr)
        .map(|(id, _)| id)
}

/// Hosts 1 and 2, and what each wrote to its TUN device.
struct Pair {
    a: Engine,
    b: Engine,
    now: Time,
    to_a: Vec<u32>,
    to_b: Vec<u32>,
}

impl Pair {
    fn new(max_peers: u32) -> Self {
        Self {
            a: Engine::new(&config(1, max_peers), 1),
            b: Engine::new(&config(2, max_peers), 2),
            now: 0,
            to_a: Vec::new(),
            to_b: Vec::new(),
        }
    }

    /// Moves what each host sends to the other across, drops what b sends to the
    /// spoofed addresses (nobody is there), then runs the timers 5 us on.
    fn step(&mut self) {
        for (src, to, from) in [(0, endpoint(2), endpoint(1)), (1, endpoint(1), endpoint(2))] {
            let (s, d) = if src == 0 {
                (&mut self.a, &mut self.b)
            } else {
                (&mut self.b, &mut self.a)
            };
            let mut wire = Vec::new();
            while let Some(dg) = s.pop_datagram() {
                if dg.dst != to {
                    continue;
                }
                let mut bytes = dg.header.to_vec();
                if let Some(p) = dg.payload {
                    bytes.extend_from_slice(s.pool().inner(p));
                }
                wire.push(bytes);
            }
            for bytes in wire {
                inject(d, self.now, from, &bytes);
            }
        }
        while let Some(id) = self.a.pop_tun() {
            self.to_a.push(tag(self.a.pool().inner(id)));
            self.a.tun_written(id, true);
        }
        while let Some(id) = self.b.pop_tun() {
            self.to_b.push(tag(self.b.pool().inner(id)));
            self.b.tun_written(id, true);
        }
        self.now += 5 * PS_PER_US;
        for e in [&mut self.a, &mut self.b] {
            if e.poll_timeout().is_some_and(|t| t <= self.now) {
                e.handle_timeout(self.now);
            }
        }
    }

    /// `n` spoofed RTSs into b, from sources `first..first + n`.
    fn flood(&mut self, first: u32, n: u32) {
        for i in first..first + n {
            inject(&mut self.b, self.now, spoofed(i), &rts(i));
            // Each slot given to a spoofed source is fresh: its RTS is the only
            // packet the receiving EQIF knows of from it.
            let Some(slot) = slot_of(&self.b, spoofed(i)) else {
                continue; // refused: the table is full
            };
            let rx = self.b.receiving_peer(slot, 0);
            let credit = self.b.receiver().credit().sender(rx).unwrap();
            assert_eq!((credit.rts_packets, credit.pulls_sent), (1, 0));
        }
    }

    /// Host 1 and host 2 send each other `n` packets tagged from `first`.
    fn exchange(&mut self, first: u32, n: u32) {
        for t in first..first + n {
            write_tun(
                &mut self.a,
                self.now,
                &ip_packet([10, 88, 1, 1], [10, 88, 2, 1], t),
            );
            write_tun(
                &mut self.b,
                self.now,
                &ip_packet([10, 88, 2, 1], [10, 88, 1, 1], t),
            );
            self.step();
        }
    }
}

#[test]
fn a_peer_keeps_talking_both_ways_while_a_thousand_spoofed_sources_send_an_rts_each() {
    let mut p = Pair::new(4);
    // The flood fills b's table before host 1 ever talks to it.
    p.flood(0, 1000);
    p.exchange(0, 50);
    // And goes on while the two talk.
    for round in 0..10 {
        p.flood(1000 + round * 100, 100);
        p.exchange(50 + round * 10, 10);
    }
    for _ in 0..2000 {
        p.step();
    }
    let sent: Vec<u32> = (0..150).collect();
    assert_eq!(p.to_b, sent, "host 1 to host 2");
    assert_eq!(p.to_a, sent, "host 2 to host 1");
    assert_eq!(p.b.counters().drop_peer_table_full, 0);
    assert_eq!(p.b.counters().peers_evicted, 2000 - 3);
    let a_at_b = slot_of(&p.b, endpoint(1)).unwrap();
    assert_eq!(p.b.peers().standing(a_at_b), Standing::Confirmed);
    assert_eq!(p.b.peers().len(), 4);
}

/// A slot taken from a peer b was sending to hands its next peer a fresh tunnel,
/// and the packets queued for the old one are dropped, counted and their buffers
/// freed.
#[test]
fn an_evicted_peers_sending_tunnel_and_buffers_are_not_inherited() {
    let mut p = Pair::new(4);
    let in_use = p.b.pool().in_use();
    // b has data for the host at spoofed(0), which never answers.
    for t in 0..5 {
        write_tun(&mut p.b, 0, &ip_packet([10, 88, 2, 1], [10, 88, 100, 2], t));
    }
    let slot = slot_of(&p.b, spoofed(0)).unwrap();
    let tx = p.b.uplink().eqif(TUN_EQIF);
    assert!(matches!(
        tx.tunnel_state(slot),
        Some(TxState::SynSent { .. })
    ));
    assert_eq!(p.b.pool().in_use(), in_use + 5);
    while p.b.pop_datagram().is_some() {}
    p.flood(1, 10);
    assert_eq!(p.b.counters().drop_evicted, 5);
    assert_eq!(p.b.pool().in_use(), in_use, "no buffer is leaked");
    let tx = p.b.uplink().eqif(TUN_EQIF);
    assert!(matches!(
        tx.tunnel_state(slot),
        None | Some(TxState::Closed { .. })
    ));
    let stats = tx.tunnel(slot).unwrap();
    assert_eq!(
        (stats.send_queue_bytes, stats.rts_sent, stats.epochs),
        (0, 0, 0)
    );
}

/// A spoofer that forges SYN-ACKs can move b's tunnel to its address into an
/// epoch of its choosing and then establish it; that does not confirm the address,
/// which a flood can still evict.
#[test]
fn a_tunnel_established_in_an_epoch_a_syn_ack_chose_confirms_nothing() {
    let mut p = Pair::new(4);
    write_tun(&mut p.b, 0, &ip_packet([10, 88, 2, 1], [10, 88, 100, 2], 0));
    let slot = slot_of(&p.b, spoofed(0)).unwrap();
    let tx = p.b.uplink().eqif(TUN_EQIF);
    let Some(TxState::SynSent { epoch }) = tx.tunnel_state(slot) else {
        panic!("a new tunnel starts SYN-SENT");
    };
    // A greater epoch (an off-path attacker picks one blindly: half are greater),
    // then the one it moved the tunnel to.
    let chosen = (epoch + 5) & ((1 << 22) - 1);
    inject(&mut p.b, 0, spoofed(0), &syn_ack(chosen));
    inject(&mut p.b, 0, spoofed(0), &syn_ack(next_epoch(chosen)));
    let tx = p.b.uplink().eqif(TUN_EQIF);
    assert_eq!(
        tx.tunnel_state(slot),
        Some(TxState::Established {
            epoch: next_epoch(chosen)
        })
    );
    assert_eq!(p.b.peers().standing(slot), Standing::Unconfirmed);
    p.flood(1, 10);
    assert_ne!(slot_of(&p.b, spoofed(0)), Some(slot), "evicted");

    // Established in the epoch b drew itself, it confirms the peer.
    let mut p = Pair::new(4);
    write_tun(&mut p.b, 0, &ip_packet([10, 88, 2, 1], [10, 88, 100, 2], 0));
    let slot = slot_of(&p.b, spoofed(0)).unwrap();
    let Some(TxState::SynSent { epoch }) = p.b.uplink().eqif(TUN_EQIF).tunnel_state(slot) else {
        panic!("a new tunnel starts SYN-SENT");
    };
    inject(&mut p.b, 0, spoofed(0), &syn_ack(epoch));
    assert_eq!(p.b.peers().standing(slot), Standing::Confirmed);
    p.flood(1, 10);
    assert_eq!(slot_of(&p.b, spoofed(0)), Some(slot), "kept");
}
