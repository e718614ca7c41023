//! A FIFO of packet handles with byte accounting: the storage under every discipline.

use crate::ids::PacketId;
use std::collections::VecDeque;

#[derive(Default)]
pub struct Fifo {
    items: VecDeque<PacketId>,
    bytes: u64,
}

impl Fifo {
    #[inline]
    pub fn push(&mut self, pkt: PacketId, size: u32) {
        self.items.push_back(pkt);
        self.bytes += size as u64;
    }

    #[inline]
    pub fn pop(&mut self, size_of: impl Fn(PacketId) -> u32) -> Option<PacketId> {
        let pkt = self.items.pop_front()?;
        self.bytes -= size_of(pkt) as u64;
        Some(pkt)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn len(&self) -> u32 {
        self.items.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}
