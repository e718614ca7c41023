//! What the protocol core holds for each packet: a packet in the slab, or a native
//! application's datagram that becomes a packet only when it is sent.
//!
//! A native application (`protocol = "eqds"`, the paper's eqdsperf) keeps its send
//! queue full: on a permutation that is 100 datagrams a host waiting for credit, on
//! top of the ones in flight. Made into packets when written, each would take a slot
//! of the packet slab (a cache line) from its write to its ACK, and the pump would
//! read it back, long evicted, to copy it onto the wire. Its contents follow from
//! its flow and its place in the flow, so EQDS holds a [`Payload::datagram`] instead:
//! the flow and the datagram's number, and the pump makes the packet from the flow's
//! [`NativeFlow`] when the core sends it.

use super::encap::NO_FLOW;
use crate::ids::{EndpointId, FlowId, HostId, PacketId};
use crate::net::packet::{Packet, PacketKind};
use crate::units::Time;

/// A packet in the slab, or datagram `index` of native flow `flow`: two words, so
/// that a handle costs the core's queues 8 bytes with 4-byte alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Payload {
    /// The datagram's flow, or [`Payload::PACKET`].
    flow: FlowId,
    /// The datagram's number in its flow, or the packet.
    index: u32,
}

/// What a [`Payload`] stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    Packet(PacketId),
    Datagram { flow: FlowId, index: u32 },
}

impl Payload {
    /// The flow field of a packet: `NO_FLOW`, which no native flow has.
    const PACKET: FlowId = NO_FLOW;

    #[inline]
    pub fn packet(id: PacketId) -> Self {
        Payload {
            flow: Self::PACKET,
            index: id,
        }
    }

    /// Datagram `index` of flow `flow` (not `NO_FLOW`).
    #[inline]
    pub fn datagram(flow: FlowId, index: u32) -> Self {
        debug_assert!(flow != Self::PACKET);
        Payload { flow, index }
    }

    #[inline]
    pub fn held(self) -> Held {
        if self.flow == Self::PACKET {
            Held::Packet(self.index)
        } else {
            Held::Datagram {
                flow: self.flow,
                index: self.index,
            }
        }
    }

    /// The packet, for payloads that can only be packets (what arrives from the
    /// network: receivers hold wire packets).
    #[inline]
    pub fn expect_packet(self) -> PacketId {
        debug_assert!(
            self.flow == Self::PACKET,
            "a receiver holds only wire packets"
        );
        self.index
    }
}

/// A native application's flow, as EQDS needs it to make the flow's datagrams into
/// packets: datagram `i` carries bytes `i * datagram ..` of the flow, `datagram` of
/// them but for the last.
#[derive(Clone, Copy, Debug)]
pub struct NativeFlow {
    pub flow: FlowId,
    /// The sending host and endpoint.
    pub src: HostId,
    pub sender: EndpointId,
    /// The receiving host and endpoint.
    pub dst: HostId,
    pub receiver: EndpointId,
    /// Bytes the flow sends (`u64::MAX`: for ever).
    pub size: u64,
    /// Bytes in every datagram but the last.
    pub datagram: u32,
    pub class: u8,
}

impl NativeFlow {
    /// The number of the datagram that starts at byte `seq`, if that is a datagram
    /// boundary a [`Payload`] can name.
    #[inline]
    pub fn index_of(&self, seq: u64) -> Option<u32> {
        let d = u64::from(self.datagram.max(1));
        if seq % d != 0 || self.flow == NO_FLOW {
            return None;
        }
        u32::try_from(seq / d).ok()
    }

    /// The first byte of datagram `index`.
    #[inline]
    pub fn seq_of(&self, index: u32) -> u64 {
        u64::from(index) * u64::from(self.datagram)
    }

    /// The length of the datagram that starts at byte `seq`.
    #[inline]
    pub fn len_at(&self, seq: u64) -> u32 {
        u64::from(self.datagram).min(self.size.saturating_sub(seq)) as u32
    }

    /// The datagram that starts at byte `seq` as the application writes it
    /// (`transport::eqds_app`), made at `now`. Its timestamp is then rather than
    /// its write, which nothing reads: the receiving application counts bytes, and
    /// EQDS times its own round trips.
    #[inline]
    pub fn packet(&self, seq: u64, now: Time) -> Packet {
        let len = self.len_at(seq);
        Packet {
            size: len,
            seq,
            timestamp: now,
            payload: len,
            kind: PacketKind::Data,
            class: self.class,
            src: self.src,
            dst: self.dst,
            flow: self.flow,
            dst_endpoint: self.receiver,
            src_endpoint: self.sender,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip() {
        for id in [0, 1, PacketId::MAX] {
            assert_eq!(Payload::packet(id).held(), Held::Packet(id));
        }
        for (flow, index) in [(0, 0), (7, u32::MAX), (NO_FLOW - 1, 3)] {
            assert_eq!(
                Payload::datagram(flow, index).held(),
                Held::Datagram { flow, index }
            );
        }
    }

    #[test]
    fn datagrams_are_the_flows_bytes_in_order() {
        let native = NativeFlow {
            flow: 3,
            src: 1,
            sender: 6,
            dst: 2,
            receiver: 7,
            size: 2500,
            datagram: 1000,
            class: 2,
        };
        assert_eq!(native.index_of(2000), Some(2));
        assert_eq!(native.index_of(1500), None);
        assert_eq!(native.seq_of(2), 2000);
        let last = native.packet(2000, 9);
        assert_eq!((last.seq, last.size, last.payload), (2000, 500, 500));
        assert_eq!((last.src, last.dst, last.flow), (1, 2, 3));
        assert_eq!((last.src_endpoint, last.dst_endpoint), (6, 7));
        assert_eq!((last.class, last.timestamp), (2, 9));
        assert_eq!(native.packet(0, 0).size, 1000);
        assert_eq!(native.len_at(1000), 1000);
    }
}
