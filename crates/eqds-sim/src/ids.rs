//! Small integer handles into the simulator's arenas.
//!
//! Components refer to each other by index, never by pointer: a packet is a
//! `PacketId` into the packet slab, a port a `PortId` into the network's port table.

/// Index of a host (0..hosts). Hosts are numbered so that each switch reaches a
/// contiguous range of them downwards; routing relies on it.
pub type HostId = u32;
/// Index of a switch.
pub type SwitchId = u32;
/// Index of an output port (host NIC or switch port).
pub type PortId = u32;
/// Handle of a packet in the packet slab (the queue disciplines' handle type).
pub use eqds_queues::PacketId;
/// Index of a flow in the flow table.
pub type FlowId = u32;
/// Index of a transport endpoint.
/// The flow endpoint `ep` belongs to: flow `f` has sender `2f` and receiver `2f + 1`.
#[inline]
pub fn flow_of(ep: EndpointId) -> FlowId {
    ep / 2
}

pub type EndpointId = u32;

/// A node at the end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    Host(HostId),
    Switch(SwitchId),
}

/// Multiplicative hashing of ids (flows, switches): they are dense small integers,
/// so a cryptographic hasher would only cost time, and a fixed one keeps runs
/// repeatable. For `HashMap`s keyed by ids.
#[derive(Default)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (self.0.rotate_left(29) ^ u64::from(i)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}
