//! RoCEv2 over lossless Ethernet: the pieces of the RDMA fabric the DCQCN paper
//! (SIGCOMM 2015) describes, on the host side.
//!
//! - [`dcqcn`]: DCQCN's congestion control, the NP and RP state machines (Figures 6
//!   and 7) with named parameter profiles. The CP is the switches' RED queue.
//! - [`sender`]: the requester of a reliable connection (one queue pair per flow):
//!   messages packetised at the MTU, paced at the RP's rate, resent go-back-N (or
//!   go-back-0) on a NAK or a timeout.
//! - [`receiver`]: the responder: in-order acceptance only, coalesced ACKs,
//!   rate-limited NAKs, and the NP that answers CE marks with CNPs.
//! - [`dasr`]: Blitz's DASR (optional): each receiving host counts its senders and
//!   every ACK and NAK tells its sender its share of the receiver's link.
//!
//! Packets are numbered by PSN, the packet sequence number, from 0 for each flow
//! (`Packet::seq`); ACKs and NAKs carry the next PSN the receiver expects
//! (`Packet::ack`). With DASR, ACKs and NAKs also carry the receiver's
//! [`dasr::Advert`] in `Packet::seq`, which they do not otherwise use (a packet
//! stays one 64-byte cache line): bits 0-15 hold n, the receiver's sender hosts,
//! bits 16-31 k_s, the flows of this sender host it counts, and bits 32-63 C_r, its
//! link rate in Mbps ([`encode_advert`], [`advert_of`]). Each saturates at its
//! field's maximum; n is at least 1 in an advertisement, so `seq = 0` (every ACK
//! without DASR) carries none. The receiver's NIC keeps no out-of-order packets, as RoCE NICs
//! without selective repeat do (the DCQCN authors' ns-3 model, §1.6 of our spec).
//! PFC is the network's (`net`), not the transport's: a paused NIC queue simply
//! stops draining, and [`RoceConfig::nic_limit`] keeps the sender from queueing
//! behind it.

pub mod dasr;
pub mod dcqcn;
mod receiver;
mod sender;

pub use receiver::RoceReceiver;
pub use sender::RoceSender;

use crate::net::packet::{Packet, PacketKind};
use crate::units::Time;
use dasr::Advert;

/// `Packet::seq` of an ACK or a NAK carrying `a` (see the module's layout).
pub fn encode_advert(a: Advert) -> u64 {
    let field = |v: u32| u64::from(v.min(u32::from(u16::MAX)));
    field(a.senders) | field(a.flows) << 16 | u64::from(a.capacity_mbps) << 32
}

/// The advertisement an ACK or NAK carries, if any.
pub fn advert_of(p: &Packet) -> Option<Advert> {
    let carries = matches!(p.kind, PacketKind::Ack | PacketKind::Nack) && p.seq & 0xffff != 0;
    carries.then_some(Advert {
        senders: (p.seq & 0xffff) as u32,
        flows: (p.seq >> 16 & 0xffff) as u32,
        capacity_mbps: (p.seq >> 32) as u32,
    })
}

/// What a NAK or a timeout resends from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// From the first PSN the receiver lacks (IB's go-back-N).
    GoBackN,
    /// From the first packet of the message that PSN belongs to, as ConnectX-3 and
    /// the DCQCN authors' ns-3 model's "back to zero" option do.
    GoBack0,
}

/// Per-flow RoCE parameters, resolved from `[transport]` and `[transport.roce]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoceConfig {
    /// Payload bytes in a full packet (MTU minus `header`).
    pub mss: u32,
    /// Header bytes of every packet; ACKs, NAKs and CNPs are this big.
    pub header: u32,
    /// Extra header bytes of a message's first packet: the RETH of a WRITE (16 B),
    /// 0 for a SEND. The packet's payload shrinks by as much, so it still fits the
    /// MTU.
    pub first_extra: u32,
    /// Bytes per message; `None`: the whole flow is one message.
    pub message_size: Option<u64>,
    /// One ACK per this many data packets (and always on a message's last).
    pub ack_every: u32,
    pub recovery: Recovery,
    /// At most one NAK per this time for the same expected PSN.
    pub nak_interval: Time,
    /// Retransmission timeout after the last ACK progress, doubled on each expiry
    /// without progress up to `rto_max`.
    pub rto: Time,
    pub rto_max: Time,
    /// The sender puts no packet on its NIC while the NIC queue holds this many.
    pub nic_limit: u32,
    /// Priority class of data packets.
    pub class: u8,
    /// Priority class of ACKs, NAKs and CNPs.
    pub ack_class: u8,
}

/// How a flow's bytes fall into messages and packets, which both ends work out the
/// same way: messages of `message` bytes (the last may be shorter), each cut into
/// packets of `mss` payload bytes, the first `first_extra` bytes shorter. PSNs run
/// over the whole flow; a full message takes `per_message` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    size: u64,
    message: u64,
    mss: u64,
    /// Payload of a message's first packet.
    first: u64,
    per_message: u64,
    packets: u64,
}

impl Layout {
    /// The layout of a flow of `size` bytes (`None`: endless) in messages of
    /// `message` bytes (`None`: one message).
    pub fn new(size: Option<u64>, message: Option<u64>, mss: u32, first_extra: u32) -> Layout {
        let size = size.unwrap_or(u64::MAX);
        let message = message.unwrap_or(size).clamp(1, size.max(1));
        let mss = u64::from(mss);
        let first = mss - u64::from(first_extra);
        let count = |len: u64| {
            if len <= first {
                1
            } else {
                1 + (len - first).div_ceil(mss)
            }
        };
        let per_message = count(message);
        let packets = if size == u64::MAX {
            u64::MAX
        } else {
            let rest = size % message;
            (size / message) * per_message + if rest > 0 { count(rest) } else { 0 }
        };
        Layout {
            size,
            message,
            mss,
            first,
            per_message,
            packets,
        }
    }

    /// PSNs in the flow (`u64::MAX` if endless).
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Whether `psn` is its message's first packet.
    pub fn is_first(&self, psn: u64) -> bool {
        psn % self.per_message == 0
    }

    /// The first PSN of the message holding `psn`.
    pub fn message_start(&self, psn: u64) -> u64 {
        psn - psn % self.per_message
    }

    /// The flow offset of `psn`'s first payload byte, and where its message ends.
    fn span(&self, psn: u64) -> (u64, u64) {
        let (k, i) = (psn / self.per_message, psn % self.per_message);
        let start = k.saturating_mul(self.message);
        let offset = if i == 0 {
            start
        } else {
            start + self.first + (i - 1) * self.mss
        };
        (offset, start.saturating_add(self.message).min(self.size))
    }

    /// Payload bytes of `psn`.
    pub fn payload(&self, psn: u64) -> u32 {
        let (offset, end) = self.span(psn);
        let full = if self.is_first(psn) {
            self.first
        } else {
            self.mss
        };
        full.min(end - offset) as u32
    }

    /// Whether `psn` is the last packet of its message.
    pub fn is_last_of_message(&self, psn: u64) -> bool {
        let (offset, end) = self.span(psn);
        offset + u64::from(self.payload(psn)) >= end
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    /// Sums every packet's payload and checks the message boundaries.
    fn walk(l: &Layout) -> (u64, Vec<u64>) {
        let mut bytes = 0;
        let mut lasts = Vec::new();
        for psn in 0..l.packets() {
            let p = u64::from(l.payload(psn));
            assert!(p > 0, "psn {psn} is empty");
            bytes += p;
            if l.is_last_of_message(psn) {
                lasts.push(psn);
            }
        }
        (bytes, lasts)
    }

    #[test]
    fn one_message_flow_is_cut_at_the_mss() {
        let l = Layout::new(Some(10_000), None, 1000, 0);
        assert_eq!(l.packets(), 10);
        assert_eq!(walk(&l), (10_000, vec![9]));
        let l = Layout::new(Some(10_001), None, 1000, 0);
        assert_eq!(l.packets(), 11);
        assert_eq!(l.payload(10), 1);
    }

    #[test]
    fn writes_carry_the_reth_in_each_message_first_packet() {
        // 2500 B messages, 1000 B MSS, 16 B RETH: 984 + 1000 + 516.
        let l = Layout::new(Some(6000), Some(2500), 1000, 16);
        // The last, 1000 B message needs two packets: 984 + 16.
        assert_eq!(l.packets(), 3 + 3 + 2);
        assert_eq!(
            (0..8).map(|p| l.payload(p)).collect::<Vec<_>>(),
            vec![984, 1000, 516, 984, 1000, 516, 984, 16]
        );
        assert_eq!(walk(&l), (6000, vec![2, 5, 7]));
        assert!(l.is_first(3) && !l.is_first(4));
        assert_eq!(l.message_start(5), 3);
        assert_eq!(l.message_start(6), 6);
    }

    #[test]
    fn small_and_empty_flows() {
        let l = Layout::new(Some(1), None, 1000, 16);
        assert_eq!((l.packets(), l.payload(0)), (1, 1));
        assert!(l.is_last_of_message(0));
        assert_eq!(Layout::new(Some(0), None, 1000, 16).packets(), 0);
        // A message larger than the flow is the flow.
        let l = Layout::new(Some(3000), Some(1 << 30), 1000, 0);
        assert_eq!(walk(&l), (3000, vec![2]));
    }

    #[test]
    fn endless_flows_have_messages_too() {
        let l = Layout::new(None, Some(2000), 1000, 0);
        assert_eq!(l.packets(), u64::MAX);
        assert!(l.is_last_of_message(1) && l.is_last_of_message(3));
        assert!(!l.is_last_of_message(2));
        let l = Layout::new(None, None, 1000, 0);
        assert!(!l.is_last_of_message(1_000_000));
        assert_eq!(l.payload(1_000_000), 1000);
    }
}

#[cfg(test)]
mod tests;
