//! Packets and the slab they live in.
//!
//! A packet is created once by a transport, travels through ports and switches as a
//! 4-byte [`PacketId`], and is freed by whoever consumes it (the receiving endpoint, or
//! a queue that drops it). Freed slots are reused, so a run in steady state allocates
//! no memory per packet.

use crate::ids::{EndpointId, FlowId, HostId, PacketId};
use crate::units::Time;

/// What a packet is, as far as the network and transports need to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum PacketKind {
    #[default]
    Data,
    Ack,
    /// NDP: a NACK for a trimmed packet (`seq` names it).
    Nack,
    /// NDP: credit for one more packet (`ack` carries the pull number).
    Pull,
    /// EQDS: an RTS or control packet; its header is in the EQDS layer's tag table.
    Control,
    /// RoCEv2: a congestion notification packet from a DCQCN notification point to
    /// its flow's sender (the BTH opcode 0x81 of RoCEv2's annex).
    Cnp,
}

impl PacketKind {
    /// Control packets ride a trimming queue's header queue.
    #[inline]
    pub fn is_control(self) -> bool {
        self != PacketKind::Data
    }
}

/// Bit flags carried in [`Packet::flags`]. The four the queue disciplines read and
/// set (ECT, CE, TRIMMED, RETURNED) are `eqds_queues::flags`'; the others are ours,
/// in the bits it leaves free.
pub mod flags {
    pub use eqds_queues::flags::{CE, ECT, RETURNED, TRIMMED};
    /// The sender retransmitted this packet.
    pub const RETRANSMIT: u8 = 1 << 2;
    /// NDP: the sender had nothing queued behind this packet, so its arrival needs no
    /// PULL in return.
    pub const LAST: u8 = 1 << 5;
    /// An EQDS wire packet: its EQDS header is in the EQDS layer's tag table, and
    /// the receiving host's EQDS layer takes it, not an endpoint.
    pub const EQDS: u8 = 1 << 6;
    /// `seq` is a packet sequence number counting packets from 0 per flow (RoCE's
    /// PSN), not a byte offset: a switch may re-sequence by it (`net::resequencer`).
    pub const PSN: u8 = 1 << 7;
}

/// One packet in flight. Fields that a kind does not use stay zero. Aligned to a
/// cache line so that reading a packet costs one miss, not two.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
pub struct Packet {
    pub src: HostId,
    pub dst: HostId,
    /// Flow the packet belongs to (for statistics).
    pub flow: FlowId,
    /// Endpoint at `dst` that consumes the packet.
    pub dst_endpoint: EndpointId,
    /// Endpoint at `src` that sent it (where a returned header goes).
    pub src_endpoint: EndpointId,
    /// Bytes on the wire, headers included.
    pub size: u32,
    /// Input to the switches' load balancing: a per-flow hash for ECMP, or the
    /// sender-chosen path id for spraying.
    pub entropy: u32,
    /// Data: first payload byte (RoCE: the packet sequence number, PSN). NDP
    /// ACK/NACK: first byte of the packet answered. Packet-pair ACK: the pair's
    /// arrival gap in picoseconds (`transport::packet_pair`).
    pub seq: u64,
    /// TCP ACK: next byte expected (cumulative). NDP PULL/ACK/NACK: the receiver's
    /// pull number for this flow (the sender takes the highest it has seen). RoCE
    /// ACK/NAK: the next PSN expected. Packet-pair data: the packet's place in its
    /// pair (`transport::packet_pair::pair_tag`, 0 outside a pair).
    pub ack: u64,
    /// Time the sender sent it (data), or the echoed send time (ACK).
    pub timestamp: Time,
    /// Payload bytes carried (data).
    pub payload: u32,
    /// ACK: payload bytes that arrived CE-marked since the previous ACK (accurate ECN).
    /// Data (which never uses it otherwise): the switches that sent the packet off
    /// its ECMP port (IOFD's deflection budget, `net::iofd`).
    pub ce_bytes: u32,
    pub kind: PacketKind,
    pub flags: u8,
    /// Priority class for strict-priority queues (0 is served first).
    pub class: u8,
    /// Subflow of a multipath connection (MPTCP) the packet belongs to.
    pub subflow: u8,
}

impl Packet {
    /// Turns the packet around towards its source (return-to-sender).
    pub fn reverse(&mut self) {
        std::mem::swap(&mut self.src, &mut self.dst);
        std::mem::swap(&mut self.src_endpoint, &mut self.dst_endpoint);
        self.flags |= flags::RETURNED;
    }

    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Packets per chunk of the slab: 2^14 packets, 1 MiB.
const CHUNK_SHIFT: u32 = 14;
const CHUNK: usize = 1 << CHUNK_SHIFT;
const CHUNK_MASK: usize = CHUNK - 1;

/// Owner of every live packet.
///
/// Slots live in fixed chunks rather than one vector: a large run holds millions of
/// packets at its peak (1.8 M on a k=32 fat tree under EQDS, 115 MB), and a vector
/// that doubles to get there copies every packet into fresh memory at each step and
/// leaves the old copies behind. Freshly touched memory is the dearest there is
/// (the kernel clears every page, and under a hypervisor backs it first). A chunk,
/// once made, stays put; the chunk table is small enough to stay in cache, so an
/// access costs one more load that hits.
#[derive(Default)]
pub struct PacketSlab {
    /// Whole chunks, so that indexing within one needs no check.
    chunks: Vec<Box<[Packet; CHUNK]>>,
    /// Slots ever used (the next new slot's id).
    len: u32,
    free: Vec<PacketId>,
    live: u32,
    /// Most packets alive at once (sizing aid, reported in the summary).
    peak: u32,
}

impl PacketSlab {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn alloc(&mut self, pkt: Packet) -> PacketId {
        self.live += 1;
        self.peak = self.peak.max(self.live);
        let id = match self.free.pop() {
            Some(id) => id,
            None => self.new_slot(),
        };
        *self.get_mut(id) = pkt;
        id
    }

    /// A slot never used before, at the end (a new chunk every `CHUNK` slots).
    #[inline(never)]
    fn new_slot(&mut self) -> PacketId {
        let id = self.len;
        if id as usize & CHUNK_MASK == 0 {
            let chunk: Box<[Packet]> = vec![Packet::default(); CHUNK].into_boxed_slice();
            self.chunks
                .push(chunk.try_into().expect("the chunk has CHUNK packets"));
        }
        self.len += 1;
        id
    }

    #[inline]
    pub fn free(&mut self, id: PacketId) {
        debug_assert!(self.live > 0);
        self.live -= 1;
        self.free.push(id);
    }

    /// Counts among the live packets one that exists outside the slab: a native
    /// application's datagram that EQDS holds unmade (`eqds::payload`), so that the
    /// peak reports every packet of the run whatever its form.
    #[inline]
    pub fn count_unmade(&mut self) {
        self.live += 1;
        self.peak = self.peak.max(self.live);
    }

    /// A packet counted by [`PacketSlab::count_unmade`] is gone.
    #[inline]
    pub fn uncount_unmade(&mut self) {
        debug_assert!(self.live > 0);
        self.live -= 1;
    }

    #[inline]
    pub fn prefetch(&self, id: PacketId) {
        if let Some(p) = self.try_get(id) {
            crate::engine::prefetch(p);
        }
    }

    /// The packet, if `id` names a slot (live or not); for prefetch decisions only.
    #[inline]
    pub fn try_get(&self, id: PacketId) -> Option<&Packet> {
        if id >= self.len {
            return None;
        }
        let id = id as usize;
        Some(&self.chunks.get(id >> CHUNK_SHIFT)?[id & CHUNK_MASK])
    }

    #[inline]
    pub fn get(&self, id: PacketId) -> &Packet {
        let id = id as usize;
        &self.chunks[id >> CHUNK_SHIFT][id & CHUNK_MASK]
    }

    #[inline]
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        let id = id as usize;
        &mut self.chunks[id >> CHUNK_SHIFT][id & CHUNK_MASK]
    }

    pub fn live(&self) -> u32 {
        self.live
    }

    pub fn peak(&self) -> u32 {
        self.peak
    }
}

/// The queue disciplines see packets through the slab.
impl eqds_queues::PacketStore for PacketSlab {
    #[inline]
    fn size(&self, pkt: PacketId) -> u32 {
        self.get(pkt).size
    }

    #[inline]
    fn flags(&self, pkt: PacketId) -> u8 {
        self.get(pkt).flags
    }

    #[inline]
    fn set_flags(&mut self, pkt: PacketId, bits: u8) {
        self.get_mut(pkt).flags |= bits;
    }

    #[inline]
    fn class(&self, pkt: PacketId) -> u8 {
        self.get(pkt).class
    }

    #[inline]
    fn is_data(&self, pkt: PacketId) -> bool {
        !self.get(pkt).kind.is_control()
    }

    #[inline]
    fn flow(&self, pkt: PacketId) -> FlowId {
        self.get(pkt).flow
    }

    #[inline]
    fn flow_key(&self, pkt: PacketId) -> u64 {
        let p = self.get(pkt);
        eqds_queues::flow_key(p.flow, p.src)
    }

    /// The simulator cuts any data packet: its header is `header_bytes`.
    #[inline]
    fn trim_to_header(&mut self, pkt: PacketId, header_bytes: u32) -> Option<u32> {
        let p = self.get_mut(pkt);
        p.size = p.size.min(header_bytes);
        p.flags |= flags::TRIMMED;
        Some(p.size)
    }

    #[inline]
    fn free(&mut self, pkt: PacketId) {
        PacketSlab::free(self, pkt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Packet>(), 64);
    }

    #[test]
    fn slots_are_reused() {
        let mut slab = PacketSlab::new();
        let a = slab.alloc(Packet {
            size: 1,
            ..Default::default()
        });
        let b = slab.alloc(Packet {
            size: 2,
            ..Default::default()
        });
        slab.free(a);
        let c = slab.alloc(Packet {
            size: 3,
            ..Default::default()
        });
        assert_eq!(c, a);
        assert_eq!(slab.get(b).size, 2);
        assert_eq!(slab.get(c).size, 3);
        assert_eq!(slab.live(), 2);
        assert_eq!(slab.peak(), 2);
    }

    #[test]
    fn ids_cross_chunks_in_order() {
        let mut slab = PacketSlab::new();
        let n = 2 * CHUNK as u32 + 3;
        for i in 0..n {
            let id = slab.alloc(Packet {
                size: i,
                ..Default::default()
            });
            assert_eq!(id, i);
        }
        for i in [0, CHUNK as u32 - 1, CHUNK as u32, n - 1] {
            assert_eq!(slab.get(i).size, i);
            assert_eq!(slab.try_get(i).map(|p| p.size), Some(i));
        }
        assert!(slab.try_get(n).is_none());
        slab.free(CHUNK as u32);
        let again = slab.alloc(Packet::default());
        assert_eq!(again, CHUNK as u32);
        assert_eq!(slab.alloc(Packet::default()), n);
    }
}
