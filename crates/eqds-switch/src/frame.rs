//! What the switch reads and writes of an Ethernet frame: enough to route IPv4, to tell
//! EQDS data from EQDS headers, to trim, to mark ECN and to answer ARP.
//!
//! Nothing here trusts a frame. Every length is checked against the bytes received
//! before it is used, and a frame that is short, inconsistent or of a kind the switch
//! does not forward is an [`FrameError`] naming why, which the switch counts and drops:
//! never a panic (the property tests at the bottom feed arbitrary bytes).

use std::net::Ipv4Addr;

use eqds_proto::wire::{self, DataKind, Header, HEADER_LEN as EQDS_HEADER_LEN};
use thiserror::Error;

/// Ethernet header without a VLAN tag.
pub const ETH_HEADER_LEN: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;
/// The IPv4 header's fixed part.
const IPV4_MIN_HEADER: usize = 20;
const UDP_HEADER_LEN: usize = 8;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
/// An Ethernet ARP packet for IPv4 (RFC 826): 28 bytes after the Ethernet header.
const ARP_LEN: usize = 28;

/// Why a frame is not forwarded. One variant per counter of the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum FrameError {
    #[error("frame of {0} bytes is shorter than an Ethernet header")]
    Runt(usize),
    #[error("ethertype {0:#06x} is neither IPv4 nor ARP")]
    NotIpv4(u16),
    #[error("IPv4 header is malformed ({0})")]
    BadIpv4(&'static str),
    #[error("IPv4 header checksum is wrong")]
    BadChecksum,
    #[error("ARP packet is malformed or not Ethernet/IPv4")]
    BadArp,
}

/// How a trimming queue may treat a packet (the switch's view of the simulator's
/// packet kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// An intact EQDS DATA packet: a trimming queue may cut it to its header.
    EqdsData,
    /// An EQDS header on its own: a trimmed DATA packet, an RTS, or a control packet
    /// (PULL, ACK, NACK, RST). It rides a trimming queue's header queue.
    EqdsHeader,
    /// Anything else: queued, dropped or ECN-marked as the discipline says, never
    /// trimmed (the switch cannot cut a packet whose receiver would not understand it).
    Other,
}

/// An IPv4 packet as the switch sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Info {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    pub proto: u8,
    /// The TOS byte: DSCP in the high six bits, ECN in the low two.
    pub tos: u8,
    /// IP header length in bytes.
    pub ihl: usize,
    /// Bytes of the IP packet (header and payload), from its total-length field.
    pub total_len: usize,
    /// TCP or UDP ports of an unfragmented (or first-fragment) packet.
    pub ports: Option<(u16, u16)>,
    pub class: Class,
}

impl Ipv4Info {
    /// Ethernet header plus the IP packet: the frame's meaningful length (a frame may
    /// carry Ethernet padding beyond it).
    pub fn frame_len(&self) -> usize {
        ETH_HEADER_LEN + self.total_len
    }

    /// Whether the packet is ECN-capable (ECT(0) or ECT(1)).
    pub fn ect(&self) -> bool {
        matches!(self.tos & 0x03, 1 | 2)
    }

    /// Whether the packet carries congestion experienced.
    pub fn ce(&self) -> bool {
        self.tos & 0x03 == 3
    }

    /// The priority class a queue sees (a discipline with a queue per class): the IP
    /// precedence, the DSCP's top three bits, 0 to 7.
    pub fn priority(&self) -> u8 {
        self.tos >> 5
    }
}

/// An ARP request or reply for IPv4 over Ethernet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arp {
    /// 1 request, 2 reply.
    pub op: u16,
    pub sender_mac: [u8; 6],
    pub sender_ip: Ipv4Addr,
    pub target_ip: Ipv4Addr,
}

/// A frame the switch understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    Ipv4(Ipv4Info),
    Arp(Arp),
}

/// The destination MAC address of a frame of at least [`ETH_HEADER_LEN`] bytes.
pub fn dst_mac(frame: &[u8]) -> [u8; 6] {
    let mut m = [0; 6];
    m.copy_from_slice(&frame[..6]);
    m
}

/// Parses `frame` (from its Ethernet header). `eqds_ports` are the UDP destination
/// ports on which EQDS tunnels listen: only packets to them are read as EQDS.
pub fn parse(frame: &[u8], eqds_ports: &[u16]) -> Result<Parsed, FrameError> {
    if frame.len() < ETH_HEADER_LEN {
        return Err(FrameError::Runt(frame.len()));
    }
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let body = &frame[ETH_HEADER_LEN..];
    match ethertype {
        ETHERTYPE_IPV4 => parse_ipv4(body, eqds_ports).map(Parsed::Ipv4),
        ETHERTYPE_ARP => parse_arp(body).map(Parsed::Arp),
        other => Err(FrameError::NotIpv4(other)),
    }
}

fn parse_ipv4(ip: &[u8], eqds_ports: &[u16]) -> Result<Ipv4Info, FrameError> {
    if ip.len() < IPV4_MIN_HEADER {
        return Err(FrameError::BadIpv4("shorter than 20 bytes"));
    }
    if ip[0] >> 4 != 4 {
        return Err(FrameError::BadIpv4("version is not 4"));
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    if ihl < IPV4_MIN_HEADER {
        return Err(FrameError::BadIpv4("header length below 20 bytes"));
    }
    let total_len = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if total_len < ihl {
        return Err(FrameError::BadIpv4("total length below the header length"));
    }
    if total_len > ip.len() {
        return Err(FrameError::BadIpv4("total length beyond the frame"));
    }
    if internet_checksum(&ip[..ihl], 0) != 0 {
        return Err(FrameError::BadChecksum);
    }
    let proto = ip[9];
    let frag = u16::from_be_bytes([ip[6], ip[7]]);
    let first_fragment = frag & 0x1fff == 0;
    let l4 = &ip[ihl..total_len];
    let ports =
        (first_fragment && matches!(proto, PROTO_TCP | PROTO_UDP) && l4.len() >= 4).then(|| {
            (
                u16::from_be_bytes([l4[0], l4[1]]),
                u16::from_be_bytes([l4[2], l4[3]]),
            )
        });
    let unfragmented = frag & 0x3fff == 0;
    let class = match ports {
        Some((_, dport)) if proto == PROTO_UDP && unfragmented && eqds_ports.contains(&dport) => {
            eqds_class(l4)
        }
        _ => Class::Other,
    };
    Ok(Ipv4Info {
        src: Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
        dst: Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]),
        ttl: ip[8],
        proto,
        tos: ip[1],
        ihl,
        total_len,
        ports,
        class,
    })
}

/// The class of a UDP datagram to an EQDS port. A datagram that is not a well-formed
/// EQDS packet is forwarded as [`Class::Other`]: the switch does not judge what its
/// receiver will accept, it only declines to trim what it cannot read.
fn eqds_class(udp: &[u8]) -> Class {
    if udp.len() < UDP_HEADER_LEN + EQDS_HEADER_LEN {
        return Class::Other;
    }
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    if udp_len < UDP_HEADER_LEN + EQDS_HEADER_LEN || udp_len > udp.len() {
        return Class::Other;
    }
    let payload = &udp[UDP_HEADER_LEN..udp_len];
    match wire::decode(payload) {
        Ok((Header::Data(h), _)) if h.kind == DataKind::Data && !h.trimmed => Class::EqdsData,
        Ok(_) => Class::EqdsHeader,
        Err(_) => Class::Other,
    }
}

fn parse_arp(arp: &[u8]) -> Result<Arp, FrameError> {
    if arp.len() < ARP_LEN {
        return Err(FrameError::BadArp);
    }
    // Ethernet hardware (1), IPv4 protocol, 6- and 4-byte addresses.
    if arp[0..6] != [0, 1, 8, 0, 6, 4] {
        return Err(FrameError::BadArp);
    }
    let op = u16::from_be_bytes([arp[6], arp[7]]);
    if op != 1 && op != 2 {
        return Err(FrameError::BadArp);
    }
    let mut sender_mac = [0; 6];
    sender_mac.copy_from_slice(&arp[8..14]);
    Ok(Arp {
        op,
        sender_mac,
        sender_ip: Ipv4Addr::new(arp[14], arp[15], arp[16], arp[17]),
        target_ip: Ipv4Addr::new(arp[24], arp[25], arp[26], arp[27]),
    })
}

/// Writes a broadcast ARP request for `target` from `mac`/`ip` into `out` (at least
/// 42 bytes; the caller's transmit path pads to the Ethernet minimum). Returns its
/// length.
pub fn arp_request(out: &mut [u8], mac: [u8; 6], ip: Ipv4Addr, target: Ipv4Addr) -> usize {
    let len = ETH_HEADER_LEN + ARP_LEN;
    let f = &mut out[..len];
    f[0..6].copy_from_slice(&[0xff; 6]);
    f[6..12].copy_from_slice(&mac);
    f[12..14].copy_from_slice(&ETHERTYPE_ARP.to_be_bytes());
    let a = &mut f[ETH_HEADER_LEN..];
    a[0..6].copy_from_slice(&[0, 1, 8, 0, 6, 4]);
    a[6..8].copy_from_slice(&1u16.to_be_bytes());
    a[8..14].copy_from_slice(&mac);
    a[14..18].copy_from_slice(&ip.octets());
    a[18..24].copy_from_slice(&[0; 6]);
    a[24..28].copy_from_slice(&target.octets());
    len
}

/// The one's-complement sum of `data` folded with `initial`, complemented: zero over
/// a header whose checksum is right (RFC 1071).
pub fn internet_checksum(data: &[u8], initial: u32) -> u16 {
    let mut sum = initial as u64;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn fill_ipv4_checksum(ip: &mut [u8], ihl: usize) {
    ip[10..12].copy_from_slice(&[0, 0]);
    let c = internet_checksum(&ip[..ihl], 0);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
}

/// Readies a parsed IPv4 frame for its next hop, in place: new MAC addresses, TTL one
/// lower and the header checksum updated (RFC 1624). The caller has checked that the
/// TTL is above 1.
pub fn rewrite_for_next_hop(frame: &mut [u8], info: &Ipv4Info, src: [u8; 6], dst: [u8; 6]) {
    frame[0..6].copy_from_slice(&dst);
    frame[6..12].copy_from_slice(&src);
    let ip = &mut frame[ETH_HEADER_LEN..];
    let old = u16::from_be_bytes([ip[8], ip[9]]);
    ip[8] = info.ttl - 1;
    let new = u16::from_be_bytes([ip[8], ip[9]]);
    incremental_update(ip, old, new);
}

/// RFC 1624's HC' = ~(~HC + ~m + m') on the IPv4 header checksum.
fn incremental_update(ip: &mut [u8], old: u16, new: u16) {
    let check = u16::from_be_bytes([ip[10], ip[11]]);
    let mut sum = u32::from(!check) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// Sets CE on an ECN-capable packet (and its checksum); false if it is not ECN-capable.
pub fn mark_ce(frame: &mut [u8]) -> bool {
    eqdsd::ipv4::mark_ce(&mut frame[ETH_HEADER_LEN..])
}

/// Cuts an intact EQDS DATA frame to its Ethernet, IP, UDP and EQDS headers and marks
/// it TRIMMED (the trimming paper's header, §3.1): the IP total length, the UDP length
/// and the IP checksum follow, and the UDP checksum becomes 0 ("none", which IPv4
/// allows) since the payload it covered is gone. Returns the new frame length.
pub fn trim_eqds(frame: &mut [u8], info: &Ipv4Info) -> usize {
    debug_assert_eq!(info.class, Class::EqdsData);
    let ihl = info.ihl;
    let ip_len = ihl + UDP_HEADER_LEN + EQDS_HEADER_LEN;
    let ip = &mut frame[ETH_HEADER_LEN..];
    ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
    fill_ipv4_checksum(ip, ihl);
    let udp = &mut ip[ihl..];
    udp[4..6].copy_from_slice(&((UDP_HEADER_LEN + EQDS_HEADER_LEN) as u16).to_be_bytes());
    udp[6..8].copy_from_slice(&[0, 0]);
    let hdr: &mut [u8; EQDS_HEADER_LEN] = (&mut udp
        [UDP_HEADER_LEN..UDP_HEADER_LEN + EQDS_HEADER_LEN])
        .try_into()
        .expect("16 bytes");
    wire::mark_trimmed(hdr);
    ETH_HEADER_LEN + ip_len
}

/// Computes the TCP or UDP checksum of a frame whose sender left it to hardware (a
/// frame from a local stack over veth, which the kernel hands to a packet socket with
/// its checksum not yet filled in: `TP_STATUS_CSUMNOTREADY`). Other protocols and
/// fragments are left alone; so is a UDP checksum of 0 ("none").
pub fn fill_l4_checksum(frame: &mut [u8], info: &Ipv4Info) {
    let offset = match info.proto {
        PROTO_TCP => 16,
        PROTO_UDP => 6,
        _ => return,
    };
    if info.ports.is_none() {
        return;
    }
    let ip = &mut frame[ETH_HEADER_LEN..ETH_HEADER_LEN + info.total_len];
    let l4_len = info.total_len - info.ihl;
    if l4_len < offset + 2 {
        return;
    }
    let mut pseudo = 0u32;
    for w in [
        u16::from_be_bytes([ip[12], ip[13]]),
        u16::from_be_bytes([ip[14], ip[15]]),
        u16::from_be_bytes([ip[16], ip[17]]),
        u16::from_be_bytes([ip[18], ip[19]]),
        u16::from(info.proto),
        l4_len as u16,
    ] {
        pseudo += u32::from(w);
    }
    let l4 = &mut ip[info.ihl..];
    l4[offset..offset + 2].copy_from_slice(&[0, 0]);
    let mut c = internet_checksum(l4, pseudo);
    if info.proto == PROTO_UDP && c == 0 {
        c = 0xffff;
    }
    l4[offset..offset + 2].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use eqds_proto::wire::{DataHeader, NextProto};
    use proptest::prelude::*;

    pub const EQDS_PORT: u16 = 7000;

    /// An Ethernet + IPv4 + UDP frame to `dst:dport` with `payload`, checksums right.
    pub fn udp_frame(
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        payload: &[u8],
    ) -> Vec<u8> {
        let total = IPV4_MIN_HEADER + UDP_HEADER_LEN + payload.len();
        let mut f = vec![0u8; ETH_HEADER_LEN + total];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let ip = &mut f[ETH_HEADER_LEN..];
        ip[0] = 0x45;
        ip[1] = 0x02; // ECT(0)
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = PROTO_UDP;
        ip[12..16].copy_from_slice(&src);
        ip[16..20].copy_from_slice(&dst);
        fill_ipv4_checksum(ip, 20);
        let udp = &mut ip[20..];
        udp[0..2].copy_from_slice(&sport.to_be_bytes());
        udp[2..4].copy_from_slice(&dport.to_be_bytes());
        udp[4..6].copy_from_slice(&((UDP_HEADER_LEN + payload.len()) as u16).to_be_bytes());
        udp[8..].copy_from_slice(payload);
        f
    }

    /// An intact EQDS DATA packet with `inner` bytes of payload.
    pub fn eqds_data(inner: usize) -> Vec<u8> {
        let mut p = vec![0u8; EQDS_HEADER_LEN + inner];
        let h = Header::Data(DataHeader {
            kind: DataKind::Data,
            syn: false,
            trimmed: false,
            unordered: false,
            next_proto: NextProto::Ipv4,
            seq: 7,
            pull_target: 9,
            path_id: 3,
            sender_id: 1,
        });
        h.encode(&mut p).unwrap();
        p
    }

    /// An EQDS control packet (PULL, ACK, NACK or RST): a header and nothing after it.
    pub fn eqds_control(kind: eqds_proto::wire::ControlKind) -> Vec<u8> {
        let mut p = vec![0u8; EQDS_HEADER_LEN];
        let h = Header::Control(eqds_proto::wire::ControlHeader {
            kind,
            syn: false,
            cumulative: false,
            sender_id: 1,
            ack_no: 5,
            pull_no: 6,
            busy_time_ns: 0,
        });
        h.encode(&mut p).unwrap();
        p
    }

    fn l4_checksum_ok(frame: &[u8], info: &Ipv4Info) -> bool {
        let ip = &frame[ETH_HEADER_LEN..ETH_HEADER_LEN + info.total_len];
        let l4 = &ip[info.ihl..];
        let mut pseudo = 0u32;
        for i in (12..20).step_by(2) {
            pseudo += u32::from(u16::from_be_bytes([ip[i], ip[i + 1]]));
        }
        pseudo += u32::from(info.proto) + l4.len() as u32;
        internet_checksum(l4, pseudo) == 0
    }

    #[test]
    fn eqds_data_is_trimmed_to_a_valid_header() {
        let mut f = udp_frame(
            [10, 0, 0, 1],
            [10, 0, 1, 1],
            40000,
            EQDS_PORT,
            &eqds_data(1400),
        );
        let Parsed::Ipv4(info) = parse(&f, &[EQDS_PORT]).unwrap() else {
            panic!()
        };
        assert_eq!(info.class, Class::EqdsData);
        let len = trim_eqds(&mut f, &info);
        assert_eq!(len, 14 + 20 + 8 + 16);
        f.truncate(len);
        let Parsed::Ipv4(t) = parse(&f, &[EQDS_PORT]).unwrap() else {
            panic!()
        };
        // Now a header: what a second trimming queue must not cut again.
        assert_eq!(t.class, Class::EqdsHeader);
        let (h, payload) = wire::decode(&f[42..]).unwrap();
        let Header::Data(h) = h else { panic!() };
        assert!(h.trimmed && payload.is_empty());
        assert_eq!((h.seq, h.path_id), (7, 3));
    }

    #[test]
    fn other_ports_and_malformed_eqds_are_other() {
        let f = udp_frame([10, 0, 0, 1], [10, 0, 1, 1], 1, 53, &eqds_data(100));
        let Parsed::Ipv4(info) = parse(&f, &[EQDS_PORT]).unwrap() else {
            panic!()
        };
        assert_eq!(info.class, Class::Other);
        let mut bad = eqds_data(100);
        bad[0] = 0x20; // version 2
        let f = udp_frame([10, 0, 0, 1], [10, 0, 1, 1], 1, EQDS_PORT, &bad);
        let Parsed::Ipv4(info) = parse(&f, &[EQDS_PORT]).unwrap() else {
            panic!()
        };
        assert_eq!(info.class, Class::Other);
    }

    #[test]
    fn ttl_rewrite_keeps_the_checksum_right() {
        let mut f = udp_frame([10, 0, 0, 1], [10, 0, 1, 1], 1, 2, b"hello");
        let Parsed::Ipv4(info) = parse(&f, &[]).unwrap() else {
            panic!()
        };
        rewrite_for_next_hop(&mut f, &info, [2, 9, 9, 9, 9, 9], [2, 8, 8, 8, 8, 8]);
        let Parsed::Ipv4(after) = parse(&f, &[]).unwrap() else {
            panic!()
        };
        assert_eq!(after.ttl, 63);
        assert_eq!(dst_mac(&f), [2, 8, 8, 8, 8, 8]);
        assert!(mark_ce(&mut f));
        let Parsed::Ipv4(marked) = parse(&f, &[]).unwrap() else {
            panic!()
        };
        assert!(marked.ce());
        assert!(!mark_ce(&mut f), "CE is not ECN-capable any more");
    }

    #[test]
    fn l4_checksum_is_filled() {
        let mut f = udp_frame([10, 0, 0, 1], [10, 0, 1, 1], 1, 2, b"hello world");
        let Parsed::Ipv4(info) = parse(&f, &[]).unwrap() else {
            panic!()
        };
        assert!(!l4_checksum_ok(&f, &info));
        fill_l4_checksum(&mut f, &info);
        assert!(l4_checksum_ok(&f, &info));
    }

    #[test]
    fn bad_frames_name_their_fault() {
        assert_eq!(parse(&[0; 10], &[]), Err(FrameError::Runt(10)));
        let mut f = udp_frame([10, 0, 0, 1], [10, 0, 1, 1], 1, 2, b"x");
        f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
        assert_eq!(parse(&f, &[]), Err(FrameError::NotIpv4(0x86dd)));
        let mut f = udp_frame([10, 0, 0, 1], [10, 0, 1, 1], 1, 2, b"x");
        f[ETH_HEADER_LEN + 8] ^= 1; // TTL changed, checksum not
        assert_eq!(parse(&f, &[]), Err(FrameError::BadChecksum));
        let f = udp_frame([10, 0, 0, 1], [10, 0, 1, 1], 1, 2, b"xyz");
        assert!(matches!(
            parse(&f[..f.len() - 1], &[]),
            Err(FrameError::BadIpv4(_))
        ));
    }

    #[test]
    fn arp_round_trip() {
        let mut buf = [0u8; 64];
        let n = arp_request(
            &mut buf,
            [2, 1, 2, 3, 4, 5],
            Ipv4Addr::new(10, 0, 0, 254),
            Ipv4Addr::new(10, 0, 0, 1),
        );
        let Parsed::Arp(a) = parse(&buf[..n], &[]).unwrap() else {
            panic!()
        };
        assert_eq!(a.op, 1);
        assert_eq!(a.sender_mac, [2, 1, 2, 3, 4, 5]);
        assert_eq!(a.target_ip, Ipv4Addr::new(10, 0, 0, 1));
    }

    proptest! {
        /// Arbitrary bytes never panic the parser, and whatever it accepts as IPv4 can
        /// be rewritten, marked, trimmed and checksummed without panicking either.
        #[test]
        fn arbitrary_frames_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut f = bytes;
            if let Ok(Parsed::Ipv4(info)) = parse(&f, &[EQDS_PORT]) {
                fill_l4_checksum(&mut f, &info);
                if info.ttl > 1 {
                    rewrite_for_next_hop(&mut f, &info, [0; 6], [0; 6]);
                }
                mark_ce(&mut f);
                if info.class == Class::EqdsData {
                    trim_eqds(&mut f, &info);
                }
            }
        }

        /// Corrupting or truncating a valid EQDS frame anywhere never panics, and a
        /// frame still accepted keeps its lengths within the bytes received.
        #[test]
        fn mutated_eqds_frames_never_panic(
            cut in 0usize..100,
            flips in proptest::collection::vec((0usize..100, any::<u8>()), 0..6),
        ) {
            let mut f = udp_frame([10, 0, 0, 1], [10, 0, 1, 1], 9, EQDS_PORT, &eqds_data(40));
            for (i, x) in flips {
                let n = f.len();
                f[i % n] ^= x;
            }
            f.truncate(f.len().saturating_sub(cut));
            if let Ok(Parsed::Ipv4(info)) = parse(&f, &[EQDS_PORT]) {
                prop_assert!(info.frame_len() <= f.len());
                if info.class == Class::EqdsData {
                    let n = trim_eqds(&mut f, &info);
                    prop_assert!(n <= f.len());
                }
            }
        }
    }
}
