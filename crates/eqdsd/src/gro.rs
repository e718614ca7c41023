//! Coalescing of TCP segments written to the TUN device (receive offload).
//!
//! The reorder queue releases a tunnel's packets in order, so the segments of one TCP
//! flow leave it back to back. Written one by one, each costs a system call and a trip
//! through the kernel's TCP receive path; the kernel's own GRO would have merged them
//! had they come from a NIC. With `IFF_VNET_HDR` the daemon can do that merging
//! itself: consecutive segments of one flow become one super-packet with a virtio-net
//! header asking for `GSO_TCPV4`, which the kernel takes as if GRO had built it.
//!
//! Segments merge under the rules of the kernel's TCP GRO, so that the super-packet is
//! indistinguishable from what GRO would have made: IPv4 without options or
//! fragmentation, equal TOS, TTL and DF; the same ports, ACK number, window, header
//! length and options; no flag but ACK and PSH (PSH ends the run); sequence numbers
//! that follow on; every segment as long as the first but the last, which may be
//! shorter and then ends the run. Anything else is written as it came.
//!
//! The coalescer copies only the first segment's headers: the write is gathered
//! (`writev`) from them and the payloads where they lie in the packet buffers.

use crate::gso::{fold, set_ip_checksum, sum_words, VNET_HDR_LEN};

const NEEDS_CSUM: u8 = 1;
const GSO_TCPV4: u8 = 1;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;
/// The largest IPv4 packet.
const MAX_IP_LEN: usize = 65_535;
/// Segments per run at most, so that a gathered write stays within
/// [`GATHER_MAX`](crate::sys::tun::GATHER_MAX) parts however small they are.
pub const MAX_SEGMENTS: usize = 64;

/// The fields of a TCP/IPv4 segment that decide whether it can join a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    /// IP header length plus TCP header length.
    headers: usize,
    /// Payload bytes.
    payload: usize,
    seq: u32,
    flags: u8,
}

/// Parses `pkt` as a TCP/IPv4 segment that may be coalesced; `None` if it may not.
fn parse(pkt: &[u8]) -> Option<Segment> {
    if pkt.len() < 40 || pkt[0] != 0x45 || pkt[9] != 6 {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([pkt[2], pkt[3]]));
    // MF set or a fragment offset: a fragment, never merged.
    let fragment = u16::from_be_bytes([pkt[6], pkt[7]]) & 0x3fff != 0;
    if total != pkt.len() || fragment {
        return None;
    }
    let thl = usize::from(pkt[32] >> 4) * 4;
    let flags = pkt[33];
    if thl < 20 || pkt.len() < 20 + thl || flags & !(TCP_ACK | TCP_PSH) != 0 {
        return None;
    }
    if flags & TCP_ACK == 0 {
        return None;
    }
    let payload = pkt.len() - 20 - thl;
    (payload > 0).then(|| Segment {
        headers: 20 + thl,
        payload,
        seq: u32::from_be_bytes([pkt[24], pkt[25], pkt[26], pkt[27]]),
        flags,
    })
}

/// Whether `b`'s headers match `a`'s in everything GRO requires to be equal: TOS,
/// DF, TTL, protocol, addresses, ports, ACK number, header length, window and options
/// (not the IP length, id and checksum, the sequence number, PSH or the TCP checksum).
fn same_flow(a: &[u8], b: &[u8], headers: usize) -> bool {
    a[1] == b[1]
        && a[6] & 0x40 == b[6] & 0x40
        && a[8..10] == b[8..10]
        && a[12..24] == b[12..24]
        && a[28..33] == b[28..33]
        && a[34..36] == b[34..36]
        && a[40..headers] == b[40..headers]
}

/// Builds the coalesced writes: feed it packets in the order they are to be written,
/// and write what it hands back followed by the payloads of the packets it took.
#[derive(Debug)]
pub struct Coalescer {
    /// Virtio-net header and the headers of the run's first segment.
    buf: Vec<u8>,
    /// Payload bytes in the run.
    payload: usize,
    /// The run's first segment.
    first: Option<Segment>,
    /// Segments in the run.
    count: usize,
    /// Sequence number the next segment must have.
    next_seq: u32,
    /// The run cannot grow (its last segment was short or had PSH).
    closed: bool,
}

impl Default for Coalescer {
    fn default() -> Self {
        Self::new()
    }
}

impl Coalescer {
    /// An empty coalescer.
    pub fn new() -> Self {
        Self {
            buf: Vec::with_capacity(VNET_HDR_LEN + 120),
            payload: 0,
            first: None,
            count: 0,
            next_seq: 0,
            closed: false,
        }
    }

    /// Segments in the pending run.
    pub fn pending(&self) -> usize {
        self.count
    }

    /// Adds `pkt` to the pending run if it can join it, and returns whether it did.
    /// If not, the caller writes [`Coalescer::take`] and then either starts a new run
    /// with `push` or writes `pkt` alone (when `push` refuses an empty coalescer).
    pub fn push(&mut self, pkt: &[u8]) -> bool {
        let Some(seg) = parse(pkt) else {
            return false;
        };
        let Some(first) = self.first else {
            self.start(pkt, seg);
            return true;
        };
        let joins = !self.closed
            && self.count < MAX_SEGMENTS
            && seg.headers == first.headers
            && seg.seq == self.next_seq
            && seg.payload <= first.payload
            && first.headers + self.payload + seg.payload <= MAX_IP_LEN
            && same_flow(&self.buf[VNET_HDR_LEN..], pkt, first.headers);
        if !joins {
            return false;
        }
        self.payload += seg.payload;
        self.count += 1;
        self.next_seq = seg.seq.wrapping_add(seg.payload as u32);
        if seg.flags & TCP_PSH != 0 {
            // The super-packet carries PSH: the last segment's flag.
            self.buf[VNET_HDR_LEN + 33] |= TCP_PSH;
        }
        self.closed = seg.payload < first.payload || seg.flags & TCP_PSH != 0;
        true
    }

    fn start(&mut self, pkt: &[u8], seg: Segment) {
        self.buf.clear();
        self.buf.extend_from_slice(&[0; VNET_HDR_LEN]);
        self.buf.extend_from_slice(&pkt[..seg.headers]);
        self.payload = seg.payload;
        self.first = Some(seg);
        self.count = 1;
        self.next_seq = seg.seq.wrapping_add(seg.payload as u32);
        self.closed = seg.flags & TCP_PSH != 0;
    }

    /// The pending run's write: a virtio-net header and the super-packet's headers,
    /// to be followed by the payload (everything after `headers` bytes) of each packet
    /// the run took, in order; and an empty coalescer. `None` if nothing is pending. A
    /// run of one is the packet unchanged behind an all-zero header.
    pub fn take(&mut self) -> Option<Run<'_>> {
        let first = self.first.take()?;
        let count = std::mem::take(&mut self.count);
        if count > 1 {
            let pkt = &mut self.buf[VNET_HDR_LEN..];
            let total = first.headers + self.payload;
            pkt[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            set_ip_checksum(pkt, 20);
            // Partial checksum, as GRO leaves it: the field holds the pseudo-header
            // sum (not complemented), the kernel adds the rest if it ever needs it.
            let tcp_len = (total - 20) as u32;
            let pseudo = fold(sum_words(&pkt[12..20], 6 + tcp_len));
            pkt[36..38].copy_from_slice(&pseudo.to_be_bytes());
            let hdr = &mut self.buf[..VNET_HDR_LEN];
            hdr[0] = NEEDS_CSUM;
            hdr[1] = GSO_TCPV4;
            // virtio-net headers on a TUN device are little endian (see gso.rs).
            hdr[2..4].copy_from_slice(&(first.headers as u16).to_le_bytes());
            hdr[4..6].copy_from_slice(&(first.payload as u16).to_le_bytes());
            hdr[6..8].copy_from_slice(&20u16.to_le_bytes());
            hdr[8..10].copy_from_slice(&16u16.to_le_bytes());
        }
        self.closed = false;
        Some(Run {
            header: &self.buf,
            headers: first.headers,
        })
    }
}

/// A coalesced write, from [`Coalescer::take`].
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// The virtio-net header and the IP and TCP headers.
    pub header: &'a [u8],
    /// Where each packet's payload starts.
    pub headers: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gso::segment;

    /// A TCP/IPv4 segment of flow `port` at `seq` with `len` payload bytes (a pattern
    /// of its sequence numbers), flags ACK plus `extra`, valid checksums.
    fn seg(port: u16, seq: u32, len: usize, extra: u8) -> Vec<u8> {
        let mut p = vec![0u8; 52 + len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&((52 + len) as u16).to_be_bytes());
        p[6] = 0x40;
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p[20..22].copy_from_slice(&port.to_be_bytes());
        p[22..24].copy_from_slice(&5201u16.to_be_bytes());
        p[24..28].copy_from_slice(&seq.to_be_bytes());
        p[28..32].copy_from_slice(&7u32.to_be_bytes());
        p[32] = 8 << 4; // 32-byte header: 12 bytes of options (timestamps)
        p[33] = TCP_ACK | extra;
        p[34..36].copy_from_slice(&512u16.to_be_bytes());
        p[40..52].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 3]);
        for (i, b) in p[52..].iter_mut().enumerate() {
            *b = (seq as usize + i) as u8;
        }
        crate::gso::set_ip_checksum(&mut p, 20);
        crate::gso::set_tcp_checksum(&mut p, 20);
        p
    }

    /// Coalesces `pkts` as the daemon does and returns the writes, gathered.
    fn coalesce(pkts: &[Vec<u8>]) -> Vec<Vec<u8>> {
        fn gather(run: Run, taken: &[&Vec<u8>]) -> Vec<u8> {
            let mut w = run.header.to_vec();
            for p in taken {
                w.extend_from_slice(&p[run.headers..]);
            }
            w
        }
        let mut c = Coalescer::new();
        let mut writes = Vec::new();
        let mut taken = Vec::new();
        for p in pkts {
            if c.push(p) {
                taken.push(p);
                continue;
            }
            if let Some(run) = c.take() {
                writes.push(gather(run, &taken));
            }
            taken.clear();
            if c.push(p) {
                taken.push(p);
            } else {
                let mut alone = vec![0u8; VNET_HDR_LEN];
                alone.extend_from_slice(p);
                writes.push(alone);
            }
        }
        if let Some(run) = c.take() {
            writes.push(gather(run, &taken));
        }
        writes
    }

    /// Cuts a write back into segments (at its gso_size) as the kernel would to
    /// forward it, with the daemon's own segmentation of TUN reads.
    fn resegment(write: &[u8]) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = Vec::new();
        segment(write, MAX_IP_LEN, &mut out).unwrap();
        out
    }

    #[test]
    fn a_run_of_one_flow_becomes_one_write_that_segments_back_to_the_same_packets() {
        let pkts: Vec<_> = (0..5).map(|i| seg(1, 1000 + i * 100, 100, 0)).collect();
        let writes = coalesce(&pkts);
        assert_eq!(writes.len(), 1);
        let w = &writes[0];
        assert_eq!(w[0], NEEDS_CSUM);
        assert_eq!(w[1], GSO_TCPV4);
        assert_eq!(u16::from_le_bytes([w[4], w[5]]), 100);
        assert_eq!(w.len(), VNET_HDR_LEN + 52 + 500);
        let back = resegment(w);
        assert_eq!(back.len(), 5);
        for (b, p) in back.iter().zip(&pkts) {
            // Same bytes but the IP id, which segmentation numbers afresh, and so
            // the IP checksum.
            assert_eq!(b[..4], p[..4]);
            assert_eq!(b[8..10], p[8..10]);
            assert_eq!(b[12..], p[12..]);
        }
    }

    #[test]
    fn psh_and_a_short_segment_end_a_run_and_the_flag_is_kept() {
        let pkts = vec![
            seg(1, 0, 100, 0),
            seg(1, 100, 100, TCP_PSH),
            seg(1, 200, 100, 0),
            seg(1, 300, 40, 0),
            seg(1, 340, 100, 0),
        ];
        let writes = coalesce(&pkts);
        assert_eq!(writes.len(), 3);
        assert_eq!(writes[0][VNET_HDR_LEN + 33] & TCP_PSH, TCP_PSH);
        assert_eq!(writes[1].len(), VNET_HDR_LEN + 52 + 140);
        assert_eq!(writes[2].len(), VNET_HDR_LEN + 52 + 100);
        assert_eq!(writes[2][1], 0, "a run of one is written as it came");
        assert_eq!(&writes[2][VNET_HDR_LEN..], &pkts[4][..]);
    }

    #[test]
    fn gaps_other_flows_and_other_headers_are_never_merged() {
        let mut other_window = seg(1, 200, 100, 0);
        other_window[35] ^= 1;
        crate::gso::set_tcp_checksum(&mut other_window, 20);
        let pkts = vec![
            seg(1, 0, 100, 0),
            seg(1, 150, 100, 0), // a gap
            seg(2, 250, 100, 0), // another flow
            other_window,
            seg(1, 300, 100, 0x01), // FIN
        ];
        assert_eq!(coalesce(&pkts).len(), 5);
    }

    #[test]
    fn pure_acks_fragments_and_non_tcp_pass_alone() {
        let ack = seg(1, 0, 0, 0);
        let mut fragment = seg(1, 0, 100, 0);
        fragment[6] |= 0x20;
        let mut udp = seg(1, 100, 100, 0);
        udp[9] = 17;
        let mut c = Coalescer::new();
        for p in [&ack, &fragment, &udp] {
            assert!(!c.push(p));
            assert_eq!(c.pending(), 0);
        }
    }

    #[test]
    fn a_run_of_small_segments_stops_at_the_segment_limit() {
        let pkts: Vec<_> = (0..100).map(|i| seg(1, i * 10, 10, 0)).collect();
        let writes = coalesce(&pkts);
        assert_eq!(writes.len(), 2);
        assert_eq!(writes[0].len(), VNET_HDR_LEN + 52 + 10 * MAX_SEGMENTS);
    }

    #[test]
    fn a_run_stops_short_of_the_largest_ip_packet() {
        let pkts: Vec<_> = (0..70).map(|i| seg(1, i * 1400, 1400, 0)).collect();
        let writes = coalesce(&pkts);
        assert!(writes.len() >= 2);
        assert!(writes.iter().all(|w| w.len() - VNET_HDR_LEN <= MAX_IP_LEN));
        let segments: usize = writes.iter().map(|w| resegment(w).len()).sum();
        assert_eq!(segments, 70);
    }
}
