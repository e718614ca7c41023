//! Segmentation of what the TUN device hands over with offloads on.
//!
//! With `IFF_VNET_HDR` and TSO offered to the kernel, one TUN read returns a 10-byte
//! virtio-net header and up to 64 KB of one TCP flow: a single read instead of forty.
//! EQDS carries packets no larger than the tunnel MTU, so the daemon cuts such a
//! super-packet into MTU-sized TCP segments itself, as a NIC would: copy the IP and TCP
//! headers, advance the sequence number, set the lengths and IP ids, keep FIN and PSH
//! for the last segment and CWR for the first, and compute both checksums. A packet
//! that is not segmented may still carry a partial checksum (`NEEDS_CSUM`): the kernel
//! summed the pseudo-header and left the rest to the "device".

/// Length of `struct virtio_net_hdr`, the prefix of every TUN read and write.
pub const VNET_HDR_LEN: usize = 10;

const NEEDS_CSUM: u8 = 1;
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;
const GSO_ECN: u8 = 0x80;

const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// Why a super-packet could not be segmented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GsoError {
    /// Shorter than the virtio-net header, or its offsets point outside the packet.
    Malformed,
    /// A GSO type the daemon did not offer (UDP, IPv6).
    Unsupported,
}

/// The fields of a virtio-net header the daemon uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct VnetHdr {
    flags: u8,
    gso_type: u8,
    gso_size: u16,
    csum_start: u16,
    csum_offset: u16,
}

fn parse_vnet(b: &[u8]) -> Result<VnetHdr, GsoError> {
    if b.len() < VNET_HDR_LEN {
        return Err(GsoError::Malformed);
    }
    // virtio-net headers on a TUN device are in host byte order (little endian on
    // every platform this runs on; TUNSETVNETLE is not used).
    Ok(VnetHdr {
        flags: b[0],
        gso_type: b[1],
        gso_size: u16::from_le_bytes([b[4], b[5]]),
        csum_start: u16::from_le_bytes([b[6], b[7]]),
        csum_offset: u16::from_le_bytes([b[8], b[9]]),
    })
}

/// Folds a 32-bit one's-complement sum into 16 bits.
pub(crate) fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// One's-complement sum of `data` (big-endian 16-bit words), added to `sum`; the
/// result is folded to 16 bits.
///
/// This is the daemon's hottest loop when it segments TCP super-packets, so it sums
/// native-endian 32-bit words into a 64-bit accumulator, a loop the compiler
/// vectorises. That is the same sum: the one's-complement sum of 32-bit words folds to
/// the sum of their 16-bit halves (2^16 is 1 modulo 2^16 - 1), and summing
/// byte-swapped words gives the byte-swapped sum (RFC 1071, 2.B). The accumulator
/// cannot overflow on anything shorter than 2^32 words.
pub(crate) fn sum_words(data: &[u8], sum: u32) -> u32 {
    let mut acc = u64::from(fold(sum).to_be());
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        acc += u64::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]));
    }
    let mut pairs = words.remainder().chunks_exact(2);
    for p in &mut pairs {
        acc += u64::from(u16::from_ne_bytes([p[0], p[1]]));
    }
    if let [last] = pairs.remainder() {
        // An odd last byte is the high byte of a zero-padded word.
        acc += u64::from(u16::from_ne_bytes([*last, 0]));
    }
    let folded = (acc & 0xffff_ffff) + (acc >> 32);
    let folded = (folded & 0xffff_ffff) + (folded >> 32);
    u32::from(u16::from_be(fold(folded as u32)))
}

/// Sets the IPv4 header checksum of `ip` (header length `ihl` bytes).
pub(crate) fn set_ip_checksum(ip: &mut [u8], ihl: usize) {
    ip[10] = 0;
    ip[11] = 0;
    let c = !fold(sum_words(&ip[..ihl], 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
}

/// Sets the TCP checksum of the IPv4 packet `pkt` (IP header `ihl` bytes long).
pub(crate) fn set_tcp_checksum(pkt: &mut [u8], ihl: usize) {
    let tcp_len = pkt.len() - ihl;
    let mut sum = sum_words(&pkt[12..20], 0);
    sum += 6 + tcp_len as u32;
    pkt[ihl + 16] = 0;
    pkt[ihl + 17] = 0;
    let c = !fold(sum_words(&pkt[ihl..], sum));
    pkt[ihl + 16..ihl + 18].copy_from_slice(&c.to_be_bytes());
}

/// Where [`segment`] puts the packets it makes: each is built straight in a buffer the
/// sink lends (so a segment is copied once, from the read into its packet buffer).
pub trait SegmentSink {
    /// A buffer of exactly `len` bytes for the next packet, or `None` to drop it (the
    /// sink counts why).
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]>;
    /// The packet built in the last buffer is complete.
    fn commit(&mut self);
}

/// Collects packets as vectors (tests and tools).
impl SegmentSink for Vec<Vec<u8>> {
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        self.push(vec![0; len]);
        self.last_mut().map(|v| &mut v[..])
    }
    fn commit(&mut self) {}
}

/// Splits what one TUN read returned (`read`: virtio-net header, then the packet) into
/// packets of at most `mtu` bytes with valid checksums, built in buffers from `sink`.
/// A packet that needs no segmenting is passed on as it is (its checksum completed if
/// the kernel left it partial). Returns the number of packets made.
pub fn segment(read: &[u8], mtu: usize, sink: &mut impl SegmentSink) -> Result<usize, GsoError> {
    let vnet = parse_vnet(read)?;
    let pkt = &read[VNET_HDR_LEN..];
    match vnet.gso_type & !GSO_ECN {
        GSO_NONE => {
            let partial = vnet.flags & NEEDS_CSUM != 0;
            let start = usize::from(vnet.csum_start);
            let at = start + usize::from(vnet.csum_offset);
            if partial && at + 2 > pkt.len() {
                return Err(GsoError::Malformed);
            }
            let Some(out) = sink.buffer(pkt.len()) else {
                return Ok(0);
            };
            out.copy_from_slice(pkt);
            if partial {
                // The field holds the pseudo-header sum; the sum over everything from
                // csum_start, field included, completes it.
                let c = !fold(sum_words(&out[start..], 0));
                out[at..at + 2].copy_from_slice(&c.to_be_bytes());
            }
            sink.commit();
            Ok(1)
        }
        GSO_TCPV4 => segment_tcp4(pkt, usize::from(vnet.gso_size), mtu, sink),
        _ => Err(GsoError::Unsupported),
    }
}

fn segment_tcp4(
    pkt: &[u8],
    gso_size: usize,
    mtu: usize,
    sink: &mut impl SegmentSink,
) -> Result<usize, GsoError> {
    if pkt.len() < 40 || pkt[0] >> 4 != 4 || pkt[9] != 6 {
        return Err(GsoError::Malformed);
    }
    let ihl = usize::from(pkt[0] & 0x0f) * 4;
    if ihl < 20 || pkt.len() < ihl + 20 {
        return Err(GsoError::Malformed);
    }
    let thl = usize::from(pkt[ihl + 12] >> 4) * 4;
    let hdrs = ihl + thl;
    if thl < 20 || pkt.len() < hdrs || gso_size == 0 {
        return Err(GsoError::Malformed);
    }
    // Never larger than the tunnel MTU, whatever the kernel chose.
    let seg = gso_size.min(mtu.saturating_sub(hdrs)).max(1);
    let payload = &pkt[hdrs..];
    let seq0 = u32::from_be_bytes([pkt[ihl + 4], pkt[ihl + 5], pkt[ihl + 6], pkt[ihl + 7]]);
    let id0 = u16::from_be_bytes([pkt[4], pkt[5]]);
    let flags = pkt[ihl + 13];
    let count = payload.len().div_ceil(seg).max(1);
    for i in 0..count {
        let chunk = &payload[(i * seg).min(payload.len())..((i + 1) * seg).min(payload.len())];
        let Some(out) = sink.buffer(hdrs + chunk.len()) else {
            continue;
        };
        out[..hdrs].copy_from_slice(&pkt[..hdrs]);
        out[hdrs..].copy_from_slice(chunk);
        let total = out.len() as u16;
        out[2..4].copy_from_slice(&total.to_be_bytes());
        out[4..6].copy_from_slice(&id0.wrapping_add(i as u16).to_be_bytes());
        let seq = seq0.wrapping_add((i * seg) as u32);
        out[ihl + 4..ihl + 8].copy_from_slice(&seq.to_be_bytes());
        let mut f = flags;
        if i + 1 < count {
            f &= !(TCP_FIN | TCP_PSH);
        }
        if i > 0 {
            f &= !TCP_CWR;
        }
        out[ihl + 13] = f;
        set_ip_checksum(out, ihl);
        set_tcp_checksum(out, ihl);
        sink.commit();
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP/IPv4 packet with `payload`, valid checksums, and flags `flags`.
    fn tcp_packet(payload: &[u8], flags: u8, seq: u32) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[1] = 0x02; // ECT(0)
        p[4..6].copy_from_slice(&100u16.to_be_bytes());
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 88, 1, 1]);
        p[16..20].copy_from_slice(&[10, 88, 2, 1]);
        p[20..22].copy_from_slice(&40000u16.to_be_bytes());
        p[22..24].copy_from_slice(&5201u16.to_be_bytes());
        p[24..28].copy_from_slice(&seq.to_be_bytes());
        p[32] = 5 << 4;
        p[33] = flags;
        p[34..36].copy_from_slice(&512u16.to_be_bytes());
        p.extend_from_slice(payload);
        let total = p.len() as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        set_ip_checksum(&mut p, 20);
        set_tcp_checksum(&mut p, 20);
        p
    }

    fn valid(p: &[u8]) -> bool {
        let ip_ok = fold(sum_words(&p[..20], 0)) == 0xffff;
        let mut sum = sum_words(&p[12..20], 0);
        sum += 6 + (p.len() - 20) as u32;
        ip_ok && fold(sum_words(&p[20..], sum)) == 0xffff
    }

    fn vnet(gso_type: u8, gso_size: u16, flags: u8, csum_start: u16, csum_offset: u16) -> Vec<u8> {
        let mut h = vec![flags, gso_type];
        h.extend_from_slice(&40u16.to_le_bytes());
        h.extend_from_slice(&gso_size.to_le_bytes());
        h.extend_from_slice(&csum_start.to_le_bytes());
        h.extend_from_slice(&csum_offset.to_le_bytes());
        h
    }

    #[test]
    fn a_super_packet_becomes_valid_segments_with_the_same_bytes() {
        let payload: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        let sup = tcp_packet(&payload, TCP_PSH | TCP_FIN | TCP_CWR | 0x10, 1000);
        let mut read = vnet(GSO_TCPV4 | GSO_ECN, 1400, NEEDS_CSUM, 20, 16);
        read.extend_from_slice(&sup);
        let mut segs: Vec<Vec<u8>> = Vec::new();
        let n = segment(&read, 1456, &mut segs).unwrap();
        assert_eq!(n, 8);
        let mut joined = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            assert!(s.len() <= 1456);
            assert!(valid(s), "segment {i} checksums");
            let seq = u32::from_be_bytes(s[24..28].try_into().unwrap());
            assert_eq!(seq, 1000 + (i * 1400) as u32);
            assert_eq!(u16::from_be_bytes([s[4], s[5]]), 100 + i as u16);
            let last = i + 1 == segs.len();
            assert_eq!(s[33] & (TCP_FIN | TCP_PSH) != 0, last, "FIN/PSH only last");
            assert_eq!(s[33] & TCP_CWR != 0, i == 0, "CWR only first");
            assert_eq!(s[1], 0x02, "ECN field kept");
            joined.extend_from_slice(&s[40..]);
        }
        assert_eq!(joined, payload);
    }

    #[test]
    fn segments_never_exceed_the_tunnel_mtu() {
        let payload = vec![1u8; 5000];
        let mut read = vnet(GSO_TCPV4, 4000, NEEDS_CSUM, 20, 16);
        read.extend_from_slice(&tcp_packet(&payload, 0x10, 1));
        let mut segs: Vec<Vec<u8>> = Vec::new();
        segment(&read, 1000, &mut segs).unwrap();
        let sizes: Vec<usize> = segs.iter().map(Vec::len).collect();
        assert!(sizes.iter().all(|&l| l <= 1000), "{sizes:?}");
        assert_eq!(sizes.iter().map(|l| l - 40).sum::<usize>(), 5000);
    }

    #[test]
    fn a_partial_checksum_is_completed() {
        let mut p = tcp_packet(b"hello", 0x18, 5);
        // As the kernel leaves it: the pseudo-header sum, not complemented.
        let mut pseudo = sum_words(&p[12..20], 0);
        pseudo += 6 + (p.len() - 20) as u32;
        p[36..38].copy_from_slice(&fold(pseudo).to_be_bytes());
        let mut read = vnet(GSO_NONE, 0, NEEDS_CSUM, 20, 16);
        read.extend_from_slice(&p);
        let mut out: Vec<Vec<u8>> = Vec::new();
        segment(&read, 1500, &mut out).unwrap();
        assert!(valid(&out[0]));
    }

    #[test]
    fn the_wide_checksum_sum_matches_the_word_by_word_definition() {
        let naive = |data: &[u8], sum: u32| {
            let mut s = u64::from(sum);
            for w in data.chunks(2) {
                s += u64::from(w[0]) << 8 | u64::from(*w.get(1).unwrap_or(&0));
            }
            while s > 0xffff {
                s = (s & 0xffff) + (s >> 16);
            }
            s as u32
        };
        let data: Vec<u8> = (0..9001u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in [0, 1, 2, 7, 8, 9, 15, 16, 17, 1499, 1500, 9001] {
            for start in [0u32, 6 + 1480, 0xffff, 0x1_fffe] {
                assert_eq!(
                    sum_words(&data[..len], start),
                    naive(&data[..len], start),
                    "{len}"
                );
            }
        }
        assert_eq!(sum_words(&[0xff; 64], 0), 0xffff);
    }

    #[test]
    fn bad_input_is_an_error() {
        let mut s: Vec<Vec<u8>> = Vec::new();
        assert_eq!(segment(&[0; 5], 1500, &mut s), Err(GsoError::Malformed));
        let mut read = vnet(GSO_TCPV4, 1400, 0, 0, 0);
        read.extend_from_slice(&[0x45; 30]);
        assert_eq!(segment(&read, 1500, &mut s), Err(GsoError::Malformed));
        let mut udp = vnet(5, 1400, 0, 0, 0);
        udp.extend_from_slice(&[0; 60]);
        assert_eq!(segment(&udp, 1500, &mut s), Err(GsoError::Unsupported));
        let mut far = vnet(GSO_NONE, 0, NEEDS_CSUM, 200, 16);
        far.extend_from_slice(&[0x45; 60]);
        assert_eq!(segment(&far, 1500, &mut s), Err(GsoError::Malformed));
    }
}
