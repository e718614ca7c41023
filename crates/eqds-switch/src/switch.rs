//! The switch without I/O: frames in, frames out, time passed in by the caller.
//!
//! Like the protocol core (`eqds-proto`), this state machine owns no socket and reads
//! no clock, so every forwarding decision (routing, ECMP, queueing, trimming, pacing,
//! ARP) is tested with plain byte arrays (`tests` below), and the daemon around it
//! (`daemon.rs`) only moves frames between the kernel and these calls:
//!
//! - [`Switch::handle_frame`] with each frame a port received;
//! - [`Switch::transmit`] for each port, which hands out the frames its token bucket
//!   lets go now;
//! - [`Switch::poll_timeout`] / [`Switch::handle_timeout`] for the next time something
//!   is due (a frame's turn on a paced port, an ARP request).

use std::net::Ipv4Addr;

use eqds_proto::time::Time;
use eqds_queues::{PacketStore, PortStats, QueueCtx, Verdict};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::frame::{self, FrameError, Parsed};
use crate::neighbours::Neighbours;
use crate::pool::FramePool;
use crate::port::{Port, PortCounters, Queue};
use crate::route::RouteTable;
use crate::sys::packet_socket::RxMeta;
use crate::token_bucket::TokenBucket;

/// Why frames were not forwarded, switch-wide.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames shorter than an Ethernet header.
    pub runt: u64,
    /// Neither IPv4 nor ARP (IPv6, LLDP, ...): left to the kernel, not forwarded.
    pub not_ipv4: u64,
    /// IPv4 headers that are malformed or whose checksum is wrong.
    pub bad_ipv4: u64,
    /// ARP packets the switch could not read.
    pub bad_arp: u64,
    /// Frames the kernel cut short (larger than a ring frame) or that carried a VLAN tag.
    pub unsupported: u64,
    /// IPv4 frames for another MAC address, or broadcast/multicast: not routed.
    pub not_for_us: u64,
    /// IPv4 packets to one of the switch's own addresses: the kernel answers them.
    pub local: u64,
    /// TTL of 1 or 0: dropped (the switch sends no ICMP time-exceeded).
    pub ttl_expired: u64,
    /// No route covers the destination.
    pub no_route: u64,
    /// The next hop's MAC address is not known yet (an ARP request is on its way).
    pub no_neighbour: u64,
    /// Every frame buffer is taken.
    pub no_buffer: u64,
    /// ARP packets learnt from.
    pub arp_seen: u64,
}

/// What became of a frame handed to [`Switch::handle_frame`] (for tests and tracing;
/// the counters say the same in aggregate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Queued on `port`.
    Queued { port: usize },
    /// Offered to `port`'s discipline, which dropped it.
    QueueDropped { port: usize },
    /// Not forwarded, for the reason the counters name.
    NotForwarded,
    /// For the kernel (an ARP packet, or IPv4 to the switch's own address).
    Kernel,
}

/// How a port is set up.
pub struct PortSetup {
    pub name: String,
    pub mac: [u8; 6],
    pub addrs: Vec<Ipv4Addr>,
    pub rate_bps: u64,
    pub burst_bytes: u64,
    pub queue: Queue,
}

pub struct Switch {
    ports: Vec<Port>,
    routes: RouteTable,
    neighbours: Neighbours,
    pool: FramePool,
    eqds_ports: Vec<u16>,
    rng: ChaCha8Rng,
    counters: Counters,
}

impl Switch {
    /// A switch of `ports`, routing by `routes`, with `buffers` frame buffers of
    /// `slot_size` bytes. `seed` seeds the disciplines' random draws (RED, loss).
    pub fn new(
        ports: Vec<PortSetup>,
        routes: RouteTable,
        eqds_ports: Vec<u16>,
        buffers: u32,
        slot_size: usize,
        seed: u64,
    ) -> Self {
        let mut neighbours = Neighbours::default();
        for (port, ip) in routes.gateways() {
            neighbours.want(port, ip);
        }
        Switch {
            ports: ports
                .into_iter()
                .map(|p| Port {
                    name: p.name,
                    mac: p.mac,
                    addrs: p.addrs,
                    bucket: TokenBucket::new(p.rate_bps, p.burst_bytes),
                    queue: p.queue,
                    stats: PortStats::default(),
                    counters: PortCounters::default(),
                    staged: None,
                    arp_out: Default::default(),
                })
                .collect(),
            routes,
            neighbours,
            pool: FramePool::new(buffers, slot_size, seed),
            eqds_ports,
            rng: ChaCha8Rng::seed_from_u64(seed),
            counters: Counters::default(),
        }
    }

    pub fn ports(&self) -> &[Port] {
        &self.ports
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    pub fn pool(&self) -> &FramePool {
        &self.pool
    }

    pub fn neighbours(&self) -> &Neighbours {
        &self.neighbours
    }

    fn is_local(&self, ip: Ipv4Addr) -> bool {
        self.ports.iter().any(|p| p.addrs.contains(&ip))
    }

    /// A frame received on `port` at `now`, with what the kernel said of it.
    pub fn handle_frame(&mut self, now: Time, port: usize, bytes: &[u8], meta: RxMeta) -> Outcome {
        let p = &mut self.ports[port];
        p.counters.rx_frames += 1;
        p.counters.rx_bytes += bytes.len() as u64;
        if meta.truncated || meta.vlan {
            self.counters.unsupported += 1;
            return Outcome::NotForwarded;
        }
        let info = match frame::parse(bytes, &self.eqds_ports) {
            Ok(Parsed::Ipv4(info)) => info,
            Ok(Parsed::Arp(arp)) => {
                self.counters.arp_seen += 1;
                self.neighbours
                    .learn(port, arp.sender_ip, arp.sender_mac, now);
                return Outcome::Kernel;
            }
            Err(e) => {
                match e {
                    FrameError::Runt(_) => self.counters.runt += 1,
                    FrameError::NotIpv4(_) => self.counters.not_ipv4 += 1,
                    FrameError::BadIpv4(_) | FrameError::BadChecksum => self.counters.bad_ipv4 += 1,
                    FrameError::BadArp => self.counters.bad_arp += 1,
                }
                return Outcome::NotForwarded;
            }
        };
        if meta.other_host || frame::dst_mac(bytes) != p.mac {
            self.counters.not_for_us += 1;
            return Outcome::NotForwarded;
        }
        if self.is_local(info.dst) {
            self.counters.local += 1;
            return Outcome::Kernel;
        }
        if info.dst.is_broadcast() || info.dst.is_multicast() || info.dst.is_unspecified() {
            self.counters.not_for_us += 1;
            return Outcome::NotForwarded;
        }
        if info.ttl <= 1 {
            self.counters.ttl_expired += 1;
            return Outcome::NotForwarded;
        }
        let Some(hop) = self.routes.lookup(&info) else {
            self.counters.no_route += 1;
            return Outcome::NotForwarded;
        };
        let Some(next_mac) = self.neighbours.resolve(hop.port, hop.neighbour(info.dst)) else {
            self.counters.no_neighbour += 1;
            return Outcome::NotForwarded;
        };
        let Some(id) = self.pool.insert(&bytes[..info.frame_len()], info) else {
            self.counters.no_buffer += 1;
            return Outcome::NotForwarded;
        };
        let out = &mut self.ports[hop.port];
        {
            let f = self.pool.frame_mut(id);
            if meta.csum_not_ready {
                frame::fill_l4_checksum(f, &info);
            }
            frame::rewrite_for_next_hop(f, &info, out.mac, next_mac);
        }
        let mut ctx = QueueCtx {
            pkts: &mut self.pool,
            rng: &mut self.rng,
            stats: &mut out.stats,
            now,
            rate_bps: out.bucket.rate_bps(),
        };
        let verdict = out.queue.enqueue(id, &mut ctx);
        let backlog = out.queue.backlog_bytes();
        out.stats.max_backlog_bytes = out.stats.max_backlog_bytes.max(backlog);
        match verdict {
            Verdict::Queued => {
                out.counters.enqueued += 1;
                Outcome::Queued { port: hop.port }
            }
            // Returns are refused by the configuration and deflection is never asked
            // for, so every other verdict is a drop.
            Verdict::Dropped | Verdict::Returned | Verdict::Deflected => {
                let size = self.pool.frame(id).len();
                out.stats.drops += 1;
                out.stats.dropped_bytes += size as u64;
                self.pool.free(id);
                Outcome::QueueDropped { port: hop.port }
            }
        }
    }

    /// Hands `send` the frames `port` may transmit at `now`, in order, until its token
    /// bucket is empty, it has nothing left, or `send` refuses one (the kernel's queue
    /// is full: that frame is kept and offered first next time). Returns how many
    /// `send` took.
    pub fn transmit(
        &mut self,
        now: Time,
        port: usize,
        mut send: impl FnMut(&[u8]) -> bool,
    ) -> usize {
        let p = &mut self.ports[port];
        let mut n = 0;
        while let Some(arp) = p.arp_out.front() {
            if !send(arp) {
                p.counters.tx_retries += 1;
                return n;
            }
            p.arp_out.pop_front();
            n += 1;
        }
        while p.bucket.ready(now) {
            let (id, size) = match p.staged.take() {
                Some(s) => s,
                None => match p.queue.dequeue_at(now) {
                    Some(s) => {
                        if p.queue.wants_departures() {
                            let mut ctx = QueueCtx {
                                pkts: &mut self.pool,
                                rng: &mut self.rng,
                                stats: &mut p.stats,
                                now,
                                rate_bps: p.bucket.rate_bps(),
                            };
                            p.queue.departed(s.0, &mut ctx);
                        }
                        s
                    }
                    None => break,
                },
            };
            if !send(self.pool.frame(id)) {
                p.counters.tx_retries += 1;
                p.staged = Some((id, size));
                break;
            }
            let len = self.pool.frame(id).len() as u32;
            p.bucket.send(now, len);
            p.stats.tx_packets += 1;
            p.stats.tx_bytes += u64::from(len);
            self.pool.free(id);
            n += 1;
        }
        n
    }

    /// The next time [`Switch::transmit`] or [`Switch::handle_timeout`] has something
    /// to do, if any: the earliest paced departure of a port with a backlog, or the
    /// next ARP request.
    pub fn poll_timeout(&self) -> Option<Time> {
        let ports = self.ports.iter().filter(|p| p.has_work()).map(|p| {
            if p.arp_out.is_empty() {
                p.bucket.free_at()
            } else {
                0
            }
        });
        ports.chain(self.neighbours.next_due()).min()
    }

    /// Queues the ARP requests due at `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        let ports = &mut self.ports;
        self.neighbours.due(now, |port, target| {
            let p = &mut ports[port];
            let src = p.addrs.first().copied().unwrap_or(Ipv4Addr::UNSPECIFIED);
            let mut f = vec![0u8; 60];
            frame::arp_request(&mut f, p.mac, src, target);
            p.arp_out.push_back(f);
            p.counters.arp_requests += 1;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::tests::{eqds_data, udp_frame, EQDS_PORT};
    use crate::frame::{Class, Ipv4Info, ETH_HEADER_LEN};
    use eqds_proto::time::PS_PER_US;
    use eqds_queues::QueueSpec;

    const MAC: [[u8; 6]; 3] = [
        [2, 0, 0, 0, 0, 0xa0],
        [2, 0, 0, 0, 0, 0xa1],
        [2, 0, 0, 0, 0, 0xa2],
    ];
    const HOST_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x99];

    fn queue(toml_text: &str) -> Queue {
        let v: toml::Table = format!("q = {toml_text}").parse().unwrap();
        QueueSpec::from_toml(v["q"].clone(), "q")
            .unwrap()
            .build_seeded(1)
    }

    /// Three ports at 1 Gb/s; 10.0.1.0/24 on port 1, 10.0.2.0/24 on port 2, and
    /// 10.0.9.0/24 over both (ECMP).
    fn switch(q: &str) -> Switch {
        let mut routes = RouteTable::new(7);
        use crate::route::NextHop;
        routes.add(
            "10.0.1.0/24".parse().unwrap(),
            vec![NextHop {
                port: 1,
                via: Some([10, 0, 1, 1].into()),
            }],
        );
        routes.add(
            "10.0.2.0/24".parse().unwrap(),
            vec![NextHop {
                port: 2,
                via: Some([10, 0, 2, 1].into()),
            }],
        );
        routes.add(
            "10.0.9.0/24".parse().unwrap(),
            vec![
                NextHop {
                    port: 1,
                    via: Some([10, 0, 1, 1].into()),
                },
                NextHop {
                    port: 2,
                    via: Some([10, 0, 2, 1].into()),
                },
            ],
        );
        let ports = (0..3)
            .map(|i| PortSetup {
                name: format!("p{i}"),
                mac: MAC[i],
                addrs: vec![Ipv4Addr::new(10, 0, i as u8, 254)],
                rate_bps: 1_000_000_000,
                burst_bytes: 3000,
                queue: queue(q),
            })
            .collect();
        let mut s = Switch::new(ports, routes, vec![EQDS_PORT], 256, 2048, 1);
        // The neighbours answer the switch's first ARP requests.
        s.handle_timeout(0);
        for (port, last) in [(1usize, 1u8), (2, 2)] {
            let mut f = vec![0u8; 60];
            let n = frame::arp_request(
                &mut f,
                HOST_MAC,
                Ipv4Addr::new(10, 0, last, 1),
                Ipv4Addr::new(10, 0, last, 254),
            );
            assert_eq!(
                s.handle_frame(0, port, &f[..n], RxMeta::default()),
                Outcome::Kernel
            );
        }
        s
    }

    fn to_switch(mut f: Vec<u8>, port: usize) -> Vec<u8> {
        f[0..6].copy_from_slice(&MAC[port]);
        f
    }

    fn drain(s: &mut Switch, now: Time, port: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        s.transmit(now, port, |f| {
            out.push(f.to_vec());
            true
        });
        out
    }

    fn info(f: &[u8]) -> Ipv4Info {
        match frame::parse(f, &[EQDS_PORT]).unwrap() {
            Parsed::Ipv4(i) => i,
            _ => panic!("not IPv4"),
        }
    }

    #[test]
    fn routes_rewrites_and_paces() {
        let mut s = switch(r#"{ kind = "drop_tail", limit_packets = 100 }"#);
        let arps: usize = (0..3).map(|p| drain(&mut s, 0, p).len()).sum();
        assert_eq!(arps, 2, "one ARP request per gateway");
        for i in 0..10u16 {
            let f = to_switch(
                udp_frame([10, 0, 0, 1], [10, 0, 2, 7], 1000 + i, 53, &[0; 1458]),
                0,
            );
            assert_eq!(
                s.handle_frame(0, 0, &f, RxMeta::default()),
                Outcome::Queued { port: 2 }
            );
        }
        // At 1 Gb/s with a 3000 B burst, three 1500 B frames go at once.
        let now = 1_000 * PS_PER_US;
        let first = drain(&mut s, now, 2);
        assert_eq!(first.len(), 3);
        let f = &first[0];
        assert_eq!(frame::dst_mac(f), HOST_MAC);
        assert_eq!(&f[6..12], &MAC[2]);
        assert_eq!(info(f).ttl, 63, "and the header checksum still checks");
        // The next one waits 12 us.
        assert!(drain(&mut s, now + 11 * PS_PER_US, 2).is_empty());
        assert_eq!(drain(&mut s, now + 12 * PS_PER_US, 2).len(), 1);
        assert_eq!(s.poll_timeout(), Some(now + 24 * PS_PER_US));
        assert_eq!(s.ports()[2].stats.tx_packets, 4);
    }

    #[test]
    fn frames_not_to_route_are_counted_not_forwarded() {
        let mut s = switch(r#"{ kind = "drop_tail", limit_packets = 100 }"#);
        let f = udp_frame([10, 0, 0, 1], [10, 0, 2, 7], 1, 2, b"x");
        // Another host's MAC.
        assert_eq!(
            s.handle_frame(0, 0, &f, RxMeta::default()),
            Outcome::NotForwarded
        );
        // No route.
        let g = to_switch(udp_frame([10, 0, 0, 1], [10, 5, 0, 1], 1, 2, b"x"), 0);
        assert_eq!(
            s.handle_frame(0, 0, &g, RxMeta::default()),
            Outcome::NotForwarded
        );
        // The switch's own address: the kernel's.
        let h = to_switch(udp_frame([10, 0, 0, 1], [10, 0, 2, 254], 1, 2, b"x"), 0);
        assert_eq!(s.handle_frame(0, 0, &h, RxMeta::default()), Outcome::Kernel);
        // TTL 1.
        let mut t = to_switch(udp_frame([10, 0, 0, 1], [10, 0, 2, 7], 1, 2, b"x"), 0);
        t[ETH_HEADER_LEN + 8] = 1;
        t[ETH_HEADER_LEN + 10..ETH_HEADER_LEN + 12].copy_from_slice(&[0, 0]);
        let c = frame::internet_checksum(&t[ETH_HEADER_LEN..ETH_HEADER_LEN + 20], 0);
        t[ETH_HEADER_LEN + 10..ETH_HEADER_LEN + 12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(
            s.handle_frame(0, 0, &t, RxMeta::default()),
            Outcome::NotForwarded
        );
        // Garbage.
        assert_eq!(
            s.handle_frame(0, 0, &[1, 2, 3], RxMeta::default()),
            Outcome::NotForwarded
        );
        let c = s.counters();
        assert_eq!(
            (c.not_for_us, c.no_route, c.local, c.ttl_expired, c.runt),
            (1, 1, 1, 1, 1)
        );
    }

    #[test]
    fn trimming_cuts_eqds_data_and_drops_other_data() {
        let mut s = switch(r#"{ kind = "trimming", data_packets = 2, return_to_sender = false }"#);
        for p in 0..3 {
            drain(&mut s, 0, p);
        }
        let mut kinds = Vec::new();
        for i in 0..4u16 {
            let f = to_switch(
                udp_frame(
                    [10, 0, 0, 1],
                    [10, 0, 2, 7],
                    40000 + i,
                    EQDS_PORT,
                    &eqds_data(1400),
                ),
                0,
            );
            kinds.push(s.handle_frame(0, 0, &f, RxMeta::default()));
        }
        let other = to_switch(
            udp_frame([10, 0, 0, 1], [10, 0, 2, 7], 5, 53, &[0; 1400]),
            0,
        );
        kinds.push(s.handle_frame(0, 0, &other, RxMeta::default()));
        assert_eq!(kinds[..4], [Outcome::Queued { port: 2 }; 4]);
        assert_eq!(
            kinds[4],
            Outcome::QueueDropped { port: 2 },
            "not EQDS: cannot be trimmed"
        );
        let st = s.ports()[2].stats;
        assert_eq!((st.trims, st.drops), (2, 1));
        // Everything that leaves is whole or a valid trimmed header.
        let mut out = Vec::new();
        for t in 0..100 {
            out.extend(drain(&mut s, t * 20 * PS_PER_US, 2));
        }
        assert_eq!(out.len(), 4);
        let headers: Vec<_> = out
            .iter()
            .filter(|f| info(f).class == Class::EqdsHeader)
            .collect();
        assert_eq!(headers.len(), 2);
        for h in headers {
            assert_eq!(h.len(), 58);
            let (hdr, _) = eqds_proto::wire::decode(&h[42..]).unwrap();
            assert!(matches!(hdr, eqds_proto::wire::Header::Data(d) if d.trimmed));
        }
    }

    #[test]
    fn a_full_trimming_queue_treats_each_packet_class_as_the_paper_says() {
        use crate::frame::tests::eqds_control;
        use eqds_proto::wire::ControlKind;
        let mut s = switch(r#"{ kind = "trimming", data_packets = 1, return_to_sender = false }"#);
        for p in 0..3 {
            drain(&mut s, 0, p);
        }
        let send = |s: &mut Switch, payload: &[u8], dport: u16| {
            let f = to_switch(
                udp_frame([10, 0, 0, 1], [10, 0, 2, 7], 40000, dport, payload),
                0,
            );
            s.handle_frame(0, 0, &f, RxMeta::default())
        };
        // The data queue takes one packet; the next EQDS DATA packet is cut.
        send(&mut s, &eqds_data(1400), EQDS_PORT);
        assert_eq!(s.ports()[2].stats.trims, 0);
        send(&mut s, &eqds_data(1400), EQDS_PORT);
        assert_eq!(s.ports()[2].stats.trims, 1);
        // Control packets and an already trimmed header ride the header queue whole.
        let mut trimmed = udp_frame(
            [10, 0, 0, 1],
            [10, 0, 2, 7],
            40000,
            EQDS_PORT,
            &eqds_data(1400),
        );
        let i = info(&trimmed);
        let n = frame::trim_eqds(&mut trimmed, &i);
        trimmed.truncate(n);
        for kind in [
            ControlKind::Pull,
            ControlKind::Ack,
            ControlKind::Nack,
            ControlKind::Rst,
        ] {
            assert_eq!(
                send(&mut s, &eqds_control(kind), EQDS_PORT),
                Outcome::Queued { port: 2 }
            );
        }
        let t = to_switch(trimmed, 0);
        assert_eq!(
            s.handle_frame(0, 0, &t, RxMeta::default()),
            Outcome::Queued { port: 2 }
        );
        assert_eq!(s.ports()[2].stats.trims, 1, "headers are never cut again");
        // Other traffic cannot be cut: the full data queue drops it.
        assert_eq!(
            send(&mut s, &[0; 1400], 53),
            Outcome::QueueDropped { port: 2 }
        );
        // A datagram to the EQDS port that is not EQDS is other traffic too.
        assert_eq!(
            send(&mut s, &[0xff; 1400], EQDS_PORT),
            Outcome::QueueDropped { port: 2 }
        );
        let out: Vec<_> = (0..50)
            .flat_map(|t| drain(&mut s, t * 50 * PS_PER_US, 2))
            .collect();
        assert_eq!(
            out.len(),
            7,
            "one whole, one trimmed, four control, one trimmed relayed"
        );
        let whole = out
            .iter()
            .filter(|f| info(f).class == Class::EqdsData)
            .count();
        assert_eq!(whole, 1);
    }

    #[test]
    fn ecmp_spreads_sprayed_packets_and_ecn_marks() {
        let mut s = switch(r#"{ kind = "ecn", limit_packets = 100, k_packets = 1 }"#);
        for p in 0..3 {
            drain(&mut s, 0, p);
        }
        let mut on = [0usize; 3];
        for i in 0..200u16 {
            let f = to_switch(
                udp_frame(
                    [10, 0, 0, 1],
                    [10, 0, 9, 1],
                    40000 + i,
                    EQDS_PORT,
                    &eqds_data(100),
                ),
                0,
            );
            if let Outcome::Queued { port } = s.handle_frame(0, 0, &f, RxMeta::default()) {
                on[port] += 1;
            }
        }
        assert_eq!(on[0], 0);
        assert!(on[1] > 70 && on[2] > 70, "{on:?}");
        // After an idle millisecond the burst (3000 B) goes: all but the first marked.
        let out = drain(&mut s, 1_000 * PS_PER_US, 1);
        let marked = out.iter().filter(|f| info(f).ce()).count();
        assert!(
            out.len() > 10 && marked == out.len() - 1,
            "{marked} of {}",
            out.len()
        );
        let marks = s.ports()[1].stats.marks + s.ports()[2].stats.marks;
        assert!(
            marks > 150,
            "{marks}: most packets find a queue of at least 1"
        );
    }

    #[test]
    fn a_refused_send_is_kept_and_retried() {
        let mut s = switch(r#"{ kind = "drop_tail", limit_packets = 100 }"#);
        for p in 0..3 {
            drain(&mut s, 0, p);
        }
        let f = to_switch(udp_frame([10, 0, 0, 1], [10, 0, 2, 7], 1, 53, &[7; 100]), 0);
        s.handle_frame(0, 0, &f, RxMeta::default());
        assert_eq!(s.transmit(PS_PER_US, 2, |_| false), 0);
        assert_eq!(s.ports()[2].backlog_packets(), 1);
        assert_eq!(drain(&mut s, 2 * PS_PER_US, 2).len(), 1);
        assert_eq!(s.pool().in_use(), 0, "its buffer is back");
    }
}
