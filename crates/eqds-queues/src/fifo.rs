//! A FIFO of packet handles with byte accounting: the storage under every discipline.
//!
//! Each entry keeps the packet's size next to its handle, so taking a packet out never
//! touches the packet itself (a cache miss in a large run).

use crate::PacketId;
use std::collections::VecDeque;

#[derive(Default)]
pub struct Fifo {
    items: VecDeque<(PacketId, u32)>,
    bytes: u64,
}

impl Fifo {
    #[inline]
    pub fn push(&mut self, pkt: PacketId, size: u32) {
        self.items.push_back((pkt, size));
        self.bytes += size as u64;
    }

    #[inline]
    /// Takes the oldest packet, with its size.
    pub fn pop(&mut self) -> Option<(PacketId, u32)> {
        let (pkt, size) = self.items.pop_front()?;
        self.bytes -= size as u64;
        Some((pkt, size))
    }

    /// Takes the newest packet, with its size (a drop from the tail).
    pub fn pop_back(&mut self) -> Option<(PacketId, u32)> {
        let (pkt, size) = self.items.pop_back()?;
        self.bytes -= size as u64;
        Some((pkt, size))
    }

    /// Starts loading the oldest entry (the next `pop`).
    #[inline]
    pub fn prefetch_front(&self) {
        if let Some(front) = self.items.front() {
            crate::prefetch(front);
        }
    }

    /// Size of the oldest packet.
    #[inline]
    pub fn front_size(&self) -> Option<u32> {
        self.items.front().map(|&(_, size)| size)
    }

    /// Calls `f` with every packet, oldest first.
    pub fn for_each(&self, f: &mut dyn FnMut(PacketId)) {
        self.items.iter().for_each(|&(pkt, _)| f(pkt));
    }

    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    #[inline]
    pub fn len(&self) -> u32 {
        self.items.len() as u32
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}
