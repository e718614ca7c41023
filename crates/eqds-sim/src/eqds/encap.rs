//! Encapsulation: EQDS wire packets built from inner packets, and back.
//!
//! A packet is one cache line and every byte of it is used, so the 16-byte EQDS
//! header does not live in it: [`TagTable`] keeps it, encoded exactly as on the wire,
//! in a slot beside the packet's slab index, together with the inner packet's kind
//! (what the transport at the far end must see once EQDS has delivered it). The
//! packet itself says what the network sees: an EQDS DATA packet is trimmable data
//! whatever it carries, an RTS or control packet rides the header queue.

use crate::ids::{FlowId, HostId, PacketId};
use crate::net::packet::{flags, Packet, PacketKind};
use eqds_proto::wire::{decode_header, mark_trimmed, Header, WireError, HEADER_LEN};

/// Flow id of EQDS's own packets (RTS and control), which belong to no flow.
pub const NO_FLOW: FlowId = FlowId::MAX;

#[derive(Clone, Copy, Default)]
struct Tag {
    header: [u8; HEADER_LEN],
    inner_kind: PacketKind,
    inner_flags: u8,
}

/// Tags per chunk of the table, as packets per chunk of the slab.
const CHUNK_SHIFT: u32 = 14;
const CHUNK: usize = 1 << CHUNK_SHIFT;
const CHUNK_MASK: usize = CHUNK - 1;

/// The EQDS header of every packet on the wire, by packet id.
///
/// In fixed chunks, for the packet slab's reason (`PacketSlab`): one vector grown as
/// packet ids grow would copy every header to fresh memory at each doubling.
#[derive(Default)]
pub struct TagTable {
    chunks: Vec<Box<[Tag]>>,
    /// One past the highest id ever set: ids from here on have no header.
    len: usize,
}

impl TagTable {
    /// Records `header` (and, for DATA, the inner packet's kind and flags) for packet
    /// `id`.
    pub fn set(&mut self, id: PacketId, header: &Header, inner: (PacketKind, u8)) {
        let i = id as usize;
        while self.chunks.len() <= i >> CHUNK_SHIFT {
            self.chunks
                .push(vec![Tag::default(); CHUNK].into_boxed_slice());
        }
        self.len = self.len.max(i + 1);
        let tag = &mut self.chunks[i >> CHUNK_SHIFT][i & CHUNK_MASK];
        header
            .encode(&mut tag.header)
            .expect("a 16-byte buffer holds any EQDS header");
        (tag.inner_kind, tag.inner_flags) = inner;
    }

    #[inline]
    fn tag(&self, id: PacketId) -> Option<&Tag> {
        let i = id as usize;
        if i >= self.len {
            return None;
        }
        self.chunks.get(i >> CHUNK_SHIFT)?.get(i & CHUNK_MASK)
    }

    /// Starts loading packet `id`'s header (a hint, for arrivals coming up).
    #[inline]
    pub fn prefetch(&self, id: PacketId) {
        if let Some(tag) = self.tag(id) {
            crate::engine::prefetch(tag);
        }
    }

    /// A switch cut packet `id` to its header: the header says so from now on.
    pub fn mark_trimmed(&mut self, id: PacketId) {
        let i = id as usize;
        if i < self.len {
            if let Some(tag) = self
                .chunks
                .get_mut(i >> CHUNK_SHIFT)
                .and_then(|c| c.get_mut(i & CHUNK_MASK))
            {
                mark_trimmed(&mut tag.header);
            }
        }
    }

    /// Decodes packet `id`'s header as a receiver would, given the bytes that follow
    /// it on the wire.
    pub fn get(
        &self,
        id: PacketId,
        payload_len: usize,
    ) -> Result<(Header, (PacketKind, u8)), WireError> {
        let tag = self.tag(id).ok_or(WireError::Truncated { len: 0 })?;
        let inner = (tag.inner_kind, tag.inner_flags);
        Ok((decode_header(&tag.header, payload_len)?, inner))
    }
}

/// The wire copy of inner packet `inner`: `wire_len` bytes, sprayed on `path_id`.
/// It keeps the inner packet's addressing, flow and ECN capability.
pub fn data_packet(inner: &Packet, wire_len: u32, path_id: u16) -> Packet {
    Packet {
        size: wire_len,
        entropy: u32::from(path_id),
        kind: PacketKind::Data,
        flags: (inner.flags & flags::ECT) | flags::EQDS,
        ..*inner
    }
}

/// An EQDS packet with no inner packet (RTS or control) of `size` bytes.
pub fn header_packet(src: HostId, dst: HostId, size: u32, path_id: u16) -> Packet {
    Packet {
        src,
        dst,
        flow: NO_FLOW,
        size,
        entropy: u32::from(path_id),
        kind: PacketKind::Control,
        flags: flags::EQDS,
        ..Default::default()
    }
}

/// Turns a delivered wire packet back into the inner packet its transport sent,
/// keeping a congestion mark the network set on the way (ECN decapsulation).
pub fn decapsulate(pkt: &mut Packet, (kind, inner_flags): (PacketKind, u8), overhead: u32) {
    pkt.size -= overhead;
    pkt.kind = kind;
    pkt.flags = inner_flags | (pkt.flags & flags::CE);
}

#[cfg(test)]
mod tests {
    use super::*;
    use eqds_proto::wire::{ControlHeader, ControlKind};

    fn pull(pull_no: u32) -> Header {
        Header::Control(ControlHeader {
            kind: ControlKind::Pull,
            syn: false,
            cumulative: false,
            sender_id: 7,
            ack_no: 0,
            pull_no,
            busy_time_ns: 0,
        })
    }

    /// Headers set on either side of a chunk boundary read back as set, and an id
    /// past the highest one set has none (not a blank header), as with one growing
    /// vector.
    #[test]
    fn headers_across_chunks() {
        let mut t = TagTable::default();
        let ids = [0, CHUNK as u32 - 1, CHUNK as u32, 2 * CHUNK as u32 + 5];
        for &id in &ids {
            t.set(id, &pull(id), (PacketKind::Ack, flags::ECT));
        }
        for &id in &ids {
            let (h, inner) = t.get(id, 0).expect("set above");
            assert_eq!(h, pull(id));
            assert_eq!(inner, (PacketKind::Ack, flags::ECT));
        }
        let none = Err(WireError::Truncated { len: 0 });
        assert_eq!(t.get(2 * CHUNK as u32 + 6, 0), none);
        assert_eq!(t.get(3 * CHUNK as u32, 0), none);
    }
}
