//! Packet buffers, recycled: the fast path allocates nothing per packet.
//!
//! A buffer is named by a 4-byte [`BufId`], the handle the protocol core keeps in its
//! queues (it clones it per transmission). Every buffer has the same layout, so a
//! packet never moves between reading and writing it:
//!
//! ```text
//! [0 .. 16)            EQDS header (filled from the UDP datagram, or left for the
//!                      sender to fill at transmit time)
//! [16 .. 16 + len)     inner IP packet
//! ```
//!
//! Buffers are created on demand up to a cap and then reused through a free list, so
//! memory follows the peak number of packets held, which EQDS bounds (send queues,
//! one window in flight per tunnel, reorder queues).

use eqds_proto::wire::{NextProto, HEADER_LEN};

/// Handle of a pooled buffer.
pub type BufId = u32;

/// Offset of the inner packet in a buffer.
pub const INNER: usize = HEADER_LEN;

/// The buffer pool.
#[derive(Debug)]
pub struct Pool {
    bufs: Vec<Box<[u8]>>,
    /// Inner packet length of each buffer.
    lens: Vec<u32>,
    /// What each buffer's inner packet is (an IPv4 packet or a native payload).
    protos: Vec<NextProto>,
    free: Vec<BufId>,
    size: usize,
    cap: usize,
}

impl Pool {
    /// A pool of buffers of `size` bytes (header included), at most `cap` of them.
    pub fn new(size: usize, cap: usize) -> Self {
        assert!(size > INNER, "a buffer must hold a header and some data");
        Self {
            bufs: Vec::new(),
            lens: Vec::new(),
            protos: Vec::new(),
            free: Vec::new(),
            size,
            cap,
        }
    }

    /// A free buffer, or `None` when all `cap` are in use.
    pub fn alloc(&mut self) -> Option<BufId> {
        if let Some(id) = self.free.pop() {
            return Some(id);
        }
        if self.bufs.len() >= self.cap {
            return None;
        }
        self.bufs.push(vec![0u8; self.size].into_boxed_slice());
        self.lens.push(0);
        self.protos.push(NextProto::Ipv4);
        Some((self.bufs.len() - 1) as BufId)
    }

    /// Returns a buffer to the pool.
    pub fn free(&mut self, id: BufId) {
        debug_assert!(!self.free.contains(&id), "buffer {id} freed twice");
        self.free.push(id);
    }

    /// The whole buffer, for reading into.
    pub fn raw_mut(&mut self, id: BufId) -> &mut [u8] {
        &mut self.bufs[id as usize]
    }

    /// The whole buffer.
    pub fn raw(&self, id: BufId) -> &[u8] {
        &self.bufs[id as usize]
    }

    /// Records the inner packet's length.
    pub fn set_len(&mut self, id: BufId, len: usize) {
        debug_assert!(INNER + len <= self.size);
        self.lens[id as usize] = len as u32;
    }

    /// Records what the inner packet is; the sender's header names it.
    pub fn set_proto(&mut self, id: BufId, proto: NextProto) {
        self.protos[id as usize] = proto;
    }

    /// What the inner packet is, as last recorded.
    pub fn proto(&self, id: BufId) -> NextProto {
        self.protos[id as usize]
    }

    /// The inner packet.
    pub fn inner(&self, id: BufId) -> &[u8] {
        &self.bufs[id as usize][INNER..INNER + self.lens[id as usize] as usize]
    }

    /// The inner packet, mutable (ECN marking).
    pub fn inner_mut(&mut self, id: BufId) -> &mut [u8] {
        let len = self.lens[id as usize] as usize;
        &mut self.bufs[id as usize][INNER..INNER + len]
    }

    /// Buffer size in bytes.
    pub fn buffer_size(&self) -> usize {
        self.size
    }

    /// Buffers created so far.
    pub fn created(&self) -> usize {
        self.bufs.len()
    }

    /// Buffers in use.
    pub fn in_use(&self) -> usize {
        self.bufs.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycles_and_respects_the_cap() {
        let mut p = Pool::new(64, 2);
        let a = p.alloc().unwrap();
        let b = p.alloc().unwrap();
        assert_eq!(p.alloc(), None);
        p.raw_mut(a)[INNER..INNER + 3].copy_from_slice(b"abc");
        p.set_len(a, 3);
        assert_eq!(p.inner(a), b"abc");
        p.free(b);
        assert_eq!(p.in_use(), 1);
        assert_eq!(p.alloc(), Some(b));
        assert_eq!(p.created(), 2);
    }
}
