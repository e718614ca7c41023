//! The switch's frame buffers: a fixed pool of equal slots, allocated once, and what
//! the queue disciplines read of each frame ([`PacketStore`]).
//!
//! A frame is copied once, from the receive ring into a slot, and leaves from its slot;
//! every rewrite (MAC addresses, TTL, ECN, trimming) happens in place. When the pool is
//! empty an arriving frame is dropped and counted (`no_buffer`): the switch's buffer is
//! finite, as a real one's is.

use eqds_queues::{flags, PacketId, PacketStore};

use crate::frame::{self, Class, Ipv4Info};
use crate::route::flow_hash;

/// What the switch knows of a frame in a slot.
#[derive(Debug, Clone, Copy)]
struct Meta {
    len: u32,
    flags: u8,
    info: Ipv4Info,
    flow_key: u64,
}

pub struct FramePool {
    bytes: Vec<u8>,
    slot_size: usize,
    meta: Vec<Option<Meta>>,
    free: Vec<PacketId>,
    /// Salt of the flow keys (the switch's seed).
    seed: u64,
}

impl FramePool {
    /// `slots` buffers of `slot_size` bytes each.
    pub fn new(slots: u32, slot_size: usize, seed: u64) -> Self {
        FramePool {
            bytes: vec![0; slots as usize * slot_size],
            slot_size,
            meta: vec![None; slots as usize],
            free: (0..slots).rev().collect(),
            seed,
        }
    }

    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    pub fn in_use(&self) -> usize {
        self.meta.len() - self.free.len()
    }

    pub fn capacity(&self) -> usize {
        self.meta.len()
    }

    /// Copies `bytes` (a parsed IPv4 frame described by `info`) into a free slot, or
    /// `None` if every slot is taken or the frame does not fit one.
    pub fn insert(&mut self, bytes: &[u8], info: Ipv4Info) -> Option<PacketId> {
        if bytes.len() > self.slot_size {
            return None;
        }
        let id = self.free.pop()?;
        let start = id as usize * self.slot_size;
        self.bytes[start..start + bytes.len()].copy_from_slice(bytes);
        let mut f = 0;
        if info.ect() || info.ce() {
            f |= flags::ECT;
        }
        if info.ce() {
            f |= flags::CE;
        }
        self.meta[id as usize] = Some(Meta {
            len: bytes.len() as u32,
            flags: f,
            info,
            flow_key: flow_key(&info, self.seed),
        });
        Some(id)
    }

    fn meta(&self, id: PacketId) -> &Meta {
        self.meta[id as usize]
            .as_ref()
            .expect("a discipline only names frames it holds")
    }

    /// The frame's bytes.
    pub fn frame(&self, id: PacketId) -> &[u8] {
        let start = id as usize * self.slot_size;
        &self.bytes[start..start + self.meta(id).len as usize]
    }

    /// The frame's bytes, to rewrite in place.
    pub fn frame_mut(&mut self, id: PacketId) -> &mut [u8] {
        let start = id as usize * self.slot_size;
        let len = self.meta(id).len as usize;
        &mut self.bytes[start..start + len]
    }

    /// The frame's IPv4 summary.
    pub fn info(&self, id: PacketId) -> Ipv4Info {
        self.meta(id).info
    }
}

/// The flow a discipline keeps per-flow state by. An EQDS packet's UDP source port is
/// path entropy (eqdsd sprays over it), not flow identity, so it is left out: a tunnel
/// is one flow whatever path each packet takes. Other packets use their 5-tuple.
fn flow_key(info: &Ipv4Info, seed: u64) -> u64 {
    if info.class == Class::Other {
        return flow_hash(info, seed);
    }
    let mut i = *info;
    i.ports = i.ports.map(|(_, dport)| (0, dport));
    flow_hash(&i, seed)
}

impl PacketStore for FramePool {
    fn size(&self, pkt: PacketId) -> u32 {
        self.meta(pkt).len
    }

    fn flags(&self, pkt: PacketId) -> u8 {
        self.meta(pkt).flags
    }

    fn set_flags(&mut self, pkt: PacketId, bits: u8) {
        let mut want = bits;
        if want & flags::CE != 0 && !frame::mark_ce(self.frame_mut(pkt)) {
            // Not ECN-capable (or already CE): the IP header says what it says.
            want &= !flags::CE;
        }
        if let Some(m) = self.meta[pkt as usize].as_mut() {
            m.flags |= want;
            if want & flags::CE != 0 {
                m.info.tos |= 0x03;
            }
        }
    }

    fn class(&self, pkt: PacketId) -> u8 {
        self.meta(pkt).info.priority()
    }

    fn is_data(&self, pkt: PacketId) -> bool {
        self.meta(pkt).info.class != Class::EqdsHeader
    }

    fn flow(&self, pkt: PacketId) -> u32 {
        let k = self.meta(pkt).flow_key;
        (k ^ (k >> 32)) as u32
    }

    fn flow_key(&self, pkt: PacketId) -> u64 {
        self.meta(pkt).flow_key
    }

    /// Only an intact EQDS DATA frame can be cut: to its Ethernet, IP, UDP and EQDS
    /// headers, whatever `header_bytes` the discipline was configured with (a real
    /// header has the size it has).
    fn trim_to_header(&mut self, pkt: PacketId, _header_bytes: u32) -> Option<u32> {
        let info = self.meta(pkt).info;
        if info.class != Class::EqdsData {
            return None;
        }
        let len = frame::trim_eqds(self.frame_mut(pkt), &info);
        let m = self.meta[pkt as usize].as_mut().expect("checked above");
        m.len = len as u32;
        m.flags |= flags::TRIMMED;
        m.info.class = Class::EqdsHeader;
        m.info.total_len = len - frame::ETH_HEADER_LEN;
        Some(len as u32)
    }

    fn free(&mut self, pkt: PacketId) {
        if self.meta[pkt as usize].take().is_some() {
            self.free.push(pkt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::tests::{eqds_data, udp_frame, EQDS_PORT};
    use crate::frame::{parse, Parsed};

    fn ipv4(f: &[u8]) -> Ipv4Info {
        match parse(f, &[EQDS_PORT]).unwrap() {
            Parsed::Ipv4(i) => i,
            _ => panic!(),
        }
    }

    #[test]
    fn slots_are_reused_and_bounded() {
        let mut p = FramePool::new(2, 2048, 1);
        let f = udp_frame([10, 0, 0, 1], [10, 0, 1, 1], 1, 2, b"x");
        let a = p.insert(&f, ipv4(&f)).unwrap();
        let b = p.insert(&f, ipv4(&f)).unwrap();
        assert!(p.insert(&f, ipv4(&f)).is_none(), "full");
        p.free(a);
        p.free(a); // a second free is harmless
        assert_eq!(p.in_use(), 1);
        assert!(p.insert(&f, ipv4(&f)).is_some());
        assert_ne!(a, b);
        let big = vec![0u8; 4000];
        p.free(b);
        assert!(p.insert(&big, ipv4(&f)).is_none(), "does not fit a slot");
    }

    #[test]
    fn only_eqds_data_trims_and_marking_reaches_the_header() {
        let mut p = FramePool::new(4, 2048, 1);
        let d = udp_frame(
            [10, 0, 0, 1],
            [10, 0, 1, 1],
            40001,
            EQDS_PORT,
            &eqds_data(1000),
        );
        let o = udp_frame([10, 0, 0, 1], [10, 0, 1, 1], 40001, 53, &eqds_data(1000));
        let (d, o) = (
            p.insert(&d, ipv4(&d)).unwrap(),
            p.insert(&o, ipv4(&o)).unwrap(),
        );
        assert!(p.is_data(d) && p.is_data(o));
        assert_eq!(p.trim_to_header(o, 64), None);
        assert_eq!(p.trim_to_header(d, 64), Some(58));
        assert!(!p.is_data(d), "a header now");
        assert!(p.has(d, flags::TRIMMED));
        assert_eq!(ipv4(p.frame(d)).class, Class::EqdsHeader);
        assert!(p.has(o, flags::ECT));
        p.set_flags(o, flags::CE);
        assert!(ipv4(p.frame(o)).ce() && p.has(o, flags::CE));
    }

    #[test]
    fn a_tunnel_is_one_flow_whatever_its_path() {
        let mut p = FramePool::new(4, 2048, 1);
        let a = udp_frame(
            [10, 0, 0, 1],
            [10, 0, 1, 1],
            40001,
            EQDS_PORT,
            &eqds_data(10),
        );
        let b = udp_frame(
            [10, 0, 0, 1],
            [10, 0, 1, 1],
            40002,
            EQDS_PORT,
            &eqds_data(10),
        );
        let (a, b) = (
            p.insert(&a, ipv4(&a)).unwrap(),
            p.insert(&b, ipv4(&b)).unwrap(),
        );
        assert_eq!(p.flow_key(a), p.flow_key(b));
        let x = udp_frame([10, 0, 0, 1], [10, 0, 1, 1], 40001, 53, b"q");
        let y = udp_frame([10, 0, 0, 1], [10, 0, 1, 1], 40002, 53, b"q");
        let (x, y) = (
            p.insert(&x, ipv4(&x)).unwrap(),
            p.insert(&y, ipv4(&y)).unwrap(),
        );
        assert_ne!(p.flow_key(x), p.flow_key(y));
    }
}
