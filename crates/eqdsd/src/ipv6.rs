//! What the daemon reads of an inner IPv6 packet, the counterpart of [`crate::ipv4`]:
//! the addresses to route by and to check the source against, the ECN bits of the
//! traffic class, CE marking and pure TCP ACK recognition. Nothing here trusts the
//! packet: a short or inconsistent header is an error, never a panic.

use std::net::Ipv6Addr;

/// The fixed IPv6 header's length; extension headers, if any, count as payload.
pub const HEADER_LEN: usize = 40;

/// Why an inner packet was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipv6Error {
    /// Shorter than the fixed IPv6 header.
    Truncated,
    /// Version is not 6.
    NotIpv6,
    /// The payload length disagrees with the bytes read (a jumbogram's zero payload
    /// length included: the tunnel MTU is far below 64 KB).
    BadLength,
}

/// The fields of an inner IPv6 packet the daemon uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Summary {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// The ECN field, the traffic class's two low bits (0 not ECT, 1 ECT(1), 2 ECT(0),
    /// 3 CE).
    pub ecn: u8,
}

fn addr(b: &[u8]) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[..16]);
    Ipv6Addr::from(a)
}

/// Checks `pkt` is one whole IPv6 packet and reads its addresses.
pub fn inspect(pkt: &[u8]) -> Result<Ipv6Summary, Ipv6Error> {
    if pkt.len() < HEADER_LEN {
        return Err(Ipv6Error::Truncated);
    }
    if pkt[0] >> 4 != 6 {
        return Err(Ipv6Error::NotIpv6);
    }
    let payload = usize::from(u16::from_be_bytes([pkt[4], pkt[5]]));
    if HEADER_LEN + payload != pkt.len() {
        return Err(Ipv6Error::BadLength);
    }
    Ok(Ipv6Summary {
        src: addr(&pkt[8..24]),
        dst: addr(&pkt[24..40]),
        // Traffic class: the low nibble of byte 0 and the high nibble of byte 1; ECN
        // is its two low bits, bits 4 and 5 of byte 1.
        ecn: (pkt[1] >> 4) & 0x03,
    })
}

/// Whether `pkt` (a whole IPv6 packet, as [`inspect`] accepted) is a pure TCP ACK: a
/// TCP segment directly behind the fixed header (no extension headers, so no
/// fragment) with ACK set, no SYN, FIN or RST, and no payload.
pub fn is_pure_tcp_ack(pkt: &[u8]) -> bool {
    pkt.len() >= HEADER_LEN
        && pkt[6] == crate::tcp::PROTOCOL
        && crate::tcp::is_pure_ack(&pkt[HEADER_LEN..])
}

/// Whether the packet is ECN-capable and not yet marked: ECT(0) or ECT(1).
pub fn is_ect(pkt: &[u8]) -> bool {
    pkt.len() >= HEADER_LEN && matches!((pkt[1] >> 4) & 0x03, 1 | 2)
}

/// Sets the ECN field of an ECN-capable packet to CE. IPv6 has no header checksum,
/// and the traffic class is in no upper-layer pseudo-header, so nothing else changes.
/// Returns false, changing nothing, for a packet that is not ECN-capable (or already
/// CE) or too short to hold the field.
pub fn mark_ce(pkt: &mut [u8]) -> bool {
    if !is_ect(pkt) {
        return false;
    }
    pkt[1] |= 0x30;
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: [u8; 16] = [0xfd, 0, 0, 0x88, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    const DST: [u8; 16] = [0xfd, 0, 0, 0x88, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

    /// A packet with traffic class `tc`, flow label 0x12345, next header `next` and
    /// `payload` bytes of payload.
    fn packet(tc: u8, next: u8, payload: usize) -> Vec<u8> {
        let mut p = vec![0u8; HEADER_LEN + payload];
        p[0] = 0x60 | (tc >> 4);
        p[1] = (tc << 4) | 0x1;
        p[2..4].copy_from_slice(&[0x23, 0x45]);
        p[4..6].copy_from_slice(&(payload as u16).to_be_bytes());
        p[6] = next;
        p[7] = 64;
        p[8..24].copy_from_slice(&SRC);
        p[24..40].copy_from_slice(&DST);
        for (i, b) in p[HEADER_LEN..].iter_mut().enumerate() {
            *b = i as u8;
        }
        p
    }

    #[test]
    fn reads_addresses_and_ecn() {
        let p = packet(0xb8 | 0x02, 17, 12);
        let s = inspect(&p).unwrap();
        assert_eq!(s.src, "fd00:88:1::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(s.dst, "fd00:88:2::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(s.ecn, 2);
        assert_eq!(inspect(&packet(0x01, 17, 0)).unwrap().ecn, 1);
        assert_eq!(inspect(&packet(0xfc, 59, 0)).unwrap().ecn, 0);
    }

    #[test]
    fn every_truncation_is_refused() {
        let p = packet(0, 17, 30);
        for len in 0..p.len() {
            let want = if len < HEADER_LEN {
                Ipv6Error::Truncated
            } else {
                Ipv6Error::BadLength
            };
            assert_eq!(inspect(&p[..len]), Err(want), "length {len}");
        }
        assert!(inspect(&p).is_ok());
    }

    #[test]
    fn inconsistent_payload_lengths_and_other_versions_are_refused() {
        let p = packet(0, 17, 30);
        for claimed in [0u16, 29, 31, 0xffff] {
            let mut bad = p.clone();
            bad[4..6].copy_from_slice(&claimed.to_be_bytes());
            assert_eq!(inspect(&bad), Err(Ipv6Error::BadLength), "{claimed}");
        }
        let mut trailing = p.clone();
        trailing.push(0);
        assert_eq!(inspect(&trailing), Err(Ipv6Error::BadLength));
        for version in [0u8, 4, 5, 7, 15] {
            let mut other = p.clone();
            other[0] = (version << 4) | (other[0] & 0x0f);
            assert_eq!(inspect(&other), Err(Ipv6Error::NotIpv6), "{version}");
        }
    }

    #[test]
    fn ce_marking_touches_only_the_ecn_bits() {
        for tc in [0x01, 0x02, 0xb9, 0xba] {
            let mut p = packet(tc, 17, 8);
            let before = p.clone();
            assert!(mark_ce(&mut p));
            let s = inspect(&p).unwrap();
            assert_eq!(s.ecn, 3);
            // Version, DSCP and flow label are as they were.
            assert_eq!(p[0], before[0]);
            assert_eq!(p[1] & 0xcf, before[1] & 0xcf);
            assert_eq!(p[2..], before[2..], "tc {tc:#x}");
        }
        for tc in [0x00, 0x03, 0xbc, 0xbf] {
            let mut p = packet(tc, 17, 8);
            let before = p.clone();
            assert!(!mark_ce(&mut p), "tc {tc:#x}");
            assert_eq!(p, before);
        }
        let mut short = packet(0x02, 17, 0);
        short.truncate(HEADER_LEN - 1);
        assert!(!mark_ce(&mut short));
    }

    /// A TCP segment over IPv6 with `flags`, `options` bytes of options and `data`
    /// bytes of data.
    fn tcp_segment(flags: u8, options: usize, data: usize) -> Vec<u8> {
        let tcp_len = 20 + options;
        let mut p = packet(0, 6, tcp_len + data);
        p[HEADER_LEN + 12] = ((tcp_len / 4) as u8) << 4;
        p[HEADER_LEN + 13] = flags;
        p
    }

    #[test]
    fn pure_tcp_acks_are_told_apart() {
        assert!(is_pure_tcp_ack(&tcp_segment(0x10, 0, 0)));
        assert!(is_pure_tcp_ack(&tcp_segment(0x10, 12, 0)), "timestamps");
        assert!(!is_pure_tcp_ack(&tcp_segment(0x10, 12, 1)), "carries data");
        assert!(!is_pure_tcp_ack(&tcp_segment(0x12, 0, 0)), "SYN-ACK");
        assert!(!is_pure_tcp_ack(&tcp_segment(0x11, 0, 0)), "FIN");
        assert!(!is_pure_tcp_ack(&tcp_segment(0x14, 0, 0)), "RST");
        assert!(!is_pure_tcp_ack(&tcp_segment(0x00, 0, 0)), "no ACK");
        let mut udp = tcp_segment(0x10, 0, 0);
        udp[6] = 17;
        assert!(!is_pure_tcp_ack(&udp));
        let mut fragment = tcp_segment(0x10, 0, 0);
        fragment[6] = 44;
        assert!(!is_pure_tcp_ack(&fragment), "behind a fragment header");
        let ack = tcp_segment(0x10, 0, 0);
        for len in 0..ack.len() {
            assert!(!is_pure_tcp_ack(&ack[..len]));
        }
        let mut bad_offset = tcp_segment(0x10, 0, 0);
        bad_offset[HEADER_LEN + 12] = 0x20;
        assert!(!is_pure_tcp_ack(&bad_offset));
    }
}
