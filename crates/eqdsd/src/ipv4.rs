//! What the daemon reads of an inner IPv4 packet: enough to route it to a tunnel and
//! to check its source, plus ECN marking. Nothing here trusts the packet: a short or
//! inconsistent header is an error, never a panic.

use std::net::Ipv4Addr;

/// Why an inner packet was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipv4Error {
    /// Shorter than an IPv4 header.
    Truncated,
    /// Version is not 4 (IPv6 is not tunnelled yet).
    NotIpv4,
    /// Header length or total length inconsistent with the bytes read.
    BadLength,
}

/// The fields of an inner packet the daemon uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Summary {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// The ECN field (0 not ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    pub ecn: u8,
}

/// Checks `pkt` is one whole IPv4 packet and reads its addresses.
pub fn inspect(pkt: &[u8]) -> Result<Ipv4Summary, Ipv4Error> {
    if pkt.len() < 20 {
        return Err(Ipv4Error::Truncated);
    }
    if pkt[0] >> 4 != 4 {
        return Err(Ipv4Error::NotIpv4);
    }
    let ihl = usize::from(pkt[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([pkt[2], pkt[3]]));
    if ihl < 20 || total < ihl || total != pkt.len() {
        return Err(Ipv4Error::BadLength);
    }
    Ok(Ipv4Summary {
        src: Ipv4Addr::new(pkt[12], pkt[13], pkt[14], pkt[15]),
        dst: Ipv4Addr::new(pkt[16], pkt[17], pkt[18], pkt[19]),
        ecn: pkt[1] & 0x03,
    })
}

/// Whether `pkt` (a whole IPv4 packet, as [`inspect`] accepted) is a pure TCP ACK:
/// an unfragmented TCP segment with ACK set, no SYN, FIN or RST, and no payload.
/// Such packets are what the other direction's data waits on.
pub fn is_pure_tcp_ack(pkt: &[u8]) -> bool {
    if pkt.len() < 20 || pkt[9] != crate::tcp::PROTOCOL {
        return false;
    }
    // More-fragments or a fragment offset: not a whole segment.
    if u16::from_be_bytes([pkt[6], pkt[7]]) & 0x3fff != 0 {
        return false;
    }
    let ihl = usize::from(pkt[0] & 0x0f) * 4;
    pkt.get(ihl..).is_some_and(crate::tcp::is_pure_ack)
}

/// Whether the packet is ECN-capable and not yet marked: ECT(0) or ECT(1).
pub fn is_ect(pkt: &[u8]) -> bool {
    pkt.len() >= 20 && matches!(pkt[1] & 0x03, 1 | 2)
}

/// Sets the ECN field of an ECN-capable packet to CE, updating the header checksum
/// incrementally (RFC 1624). Returns false, changing nothing, for a packet that is
/// not ECN-capable (or already CE).
pub fn mark_ce(pkt: &mut [u8]) -> bool {
    if !is_ect(pkt) {
        return false;
    }
    let old = u16::from_be_bytes([pkt[0], pkt[1]]);
    pkt[1] |= 0x03;
    let new = u16::from_be_bytes([pkt[0], pkt[1]]);
    let check = u16::from_be_bytes([pkt[10], pkt[11]]);
    // HC' = ~(~HC + ~m + m')
    let mut sum = u32::from(!check) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let updated = !(sum as u16);
    pkt[10..12].copy_from_slice(&updated.to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 20-byte header with a correct checksum around `payload`.
    fn packet(tos: u8, payload: usize) -> Vec<u8> {
        let total = (20 + payload) as u16;
        let mut p = vec![0u8; 20 + payload];
        p[0] = 0x45;
        p[1] = tos;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 88, 1, 1]);
        p[16..20].copy_from_slice(&[10, 88, 2, 1]);
        let c = checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p
    }

    fn checksum(h: &[u8]) -> u16 {
        let mut sum: u32 = h
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    #[test]
    fn reads_addresses_and_rejects_malformed() {
        let p = packet(0, 10);
        let s = inspect(&p).unwrap();
        assert_eq!(s.src, Ipv4Addr::new(10, 88, 1, 1));
        assert_eq!(s.dst, Ipv4Addr::new(10, 88, 2, 1));
        assert_eq!(inspect(&p[..19]), Err(Ipv4Error::Truncated));
        assert_eq!(inspect(&p[..25]), Err(Ipv4Error::BadLength));
        let mut v6 = p.clone();
        v6[0] = 0x60;
        assert_eq!(inspect(&v6), Err(Ipv4Error::NotIpv4));
        let mut short_ihl = p.clone();
        short_ihl[0] = 0x44;
        assert_eq!(inspect(&short_ihl), Err(Ipv4Error::BadLength));
    }

    #[test]
    fn ce_marking_keeps_the_checksum_valid() {
        for tos in [0x01, 0x02, 0xb9, 0xba] {
            let mut p = packet(tos, 4);
            assert!(mark_ce(&mut p));
            assert_eq!(p[1] & 3, 3);
            assert_eq!(checksum(&p[..20]), 0, "tos {tos:#x}");
        }
        let mut not_ect = packet(0x00, 4);
        assert!(!mark_ce(&mut not_ect));
        let mut ce = packet(0x03, 4);
        assert!(!mark_ce(&mut ce));
    }

    /// A TCP segment over IPv4 with `flags`, `options` bytes of TCP options and
    /// `payload` bytes of data.
    fn tcp_segment(flags: u8, options: usize, payload: usize) -> Vec<u8> {
        let tcp_len = 20 + options;
        let total = 20 + tcp_len + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[9] = 6;
        p[20 + 12] = ((tcp_len / 4) as u8) << 4;
        p[20 + 13] = flags;
        p
    }

    #[test]
    fn pure_tcp_acks_are_told_apart() {
        assert!(is_pure_tcp_ack(&tcp_segment(0x10, 0, 0)));
        assert!(is_pure_tcp_ack(&tcp_segment(0x10, 12, 0)), "timestamps");
        assert!(
            is_pure_tcp_ack(&tcp_segment(0x18, 0, 0)),
            "PSH without data"
        );
        assert!(!is_pure_tcp_ack(&tcp_segment(0x10, 12, 1)), "carries data");
        assert!(!is_pure_tcp_ack(&tcp_segment(0x12, 0, 0)), "SYN-ACK");
        assert!(!is_pure_tcp_ack(&tcp_segment(0x11, 0, 0)), "FIN");
        assert!(!is_pure_tcp_ack(&tcp_segment(0x14, 0, 0)), "RST");
        assert!(!is_pure_tcp_ack(&tcp_segment(0x00, 0, 0)), "no ACK");
        let mut udp = tcp_segment(0x10, 0, 0);
        udp[9] = 17;
        assert!(!is_pure_tcp_ack(&udp));
        let mut fragment = tcp_segment(0x10, 0, 0);
        fragment[6] = 0x20;
        assert!(!is_pure_tcp_ack(&fragment));
        // Truncated or inconsistent headers are not ACKs, and never panic.
        let ack = tcp_segment(0x10, 0, 0);
        for len in 0..ack.len() {
            assert!(!is_pure_tcp_ack(&ack[..len]));
        }
        let mut bad_offset = tcp_segment(0x10, 0, 0);
        bad_offset[20 + 12] = 0x20;
        assert!(!is_pure_tcp_ack(&bad_offset));
    }
}
