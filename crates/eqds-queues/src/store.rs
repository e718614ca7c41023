//! How a discipline sees packets: by handle, through the store that owns them.
//!
//! The disciplines never hold a packet, only its [`PacketId`] and size. What they need
//! to know of a packet (its size, ECN bits, class, flow, whether it is data) and the
//! two things they do to one (mark it CE, cut it to its header) go through
//! [`PacketStore`]. The simulator's packet slab implements it over its `Packet`
//! structs; a switch implements it over its frame buffers, reading the IP header's
//! ECN bits for [`flags::ECT`] and [`flags::CE`], DSCP for the class, and cutting an
//! EQDS data frame to its header when asked to trim.
//!
//! The trait is a type parameter of the disciplines, not a trait object: every field
//! read is a direct, inlinable access in the simulator's hot path.

/// Handle of a packet in its store (the simulator's slab index, a switch's frame
/// slot). Stores hand them out; disciplines only keep and return them.
pub type PacketId = u32;

/// Picoseconds, the simulator's clock unit. A switch converts its own clock (e.g.
/// `CLOCK_MONOTONIC` nanoseconds times 1000). Only AFQ's two-group scheduler and
/// Ideal-FQ's virtual time read it.
pub type Time = eqds_proto::time::Time;

/// The packet flag bits the disciplines read or set. The simulator's
/// `net::packet::flags` re-exports these and uses the bits left free (2, 5, 6, 7) for
/// its own. A switch maps them onto its frames (see [`PacketStore::flags`]).
pub mod flags {
    /// ECN-capable transport (ECT(0) or ECT(1)): a marking queue may set CE instead of
    /// dropping.
    pub const ECT: u8 = 1 << 0;
    /// Congestion experienced, set by a marking queue on an ECT packet.
    pub const CE: u8 = 1 << 1;
    /// A trimming queue cut this data packet to its header (NDP's "trimmed" bit).
    pub const TRIMMED: u8 = 1 << 3;
    /// A switch sent this header back to its source (its addresses are swapped).
    pub const RETURNED: u8 = 1 << 4;
}

/// The packets a port's discipline works on, owned by the caller.
///
/// Every method takes a handle the caller offered to the discipline and has not yet
/// freed; a store may panic on any other.
pub trait PacketStore {
    /// Bytes on the wire, headers included (what limits and schedulers count).
    fn size(&self, pkt: PacketId) -> u32;

    /// The packet's [`flags`] bits. A switch reports [`flags::ECT`] for an IP ECN
    /// field of ECT(0), ECT(1) or CE, [`flags::CE`] for CE, and [`flags::TRIMMED`] /
    /// [`flags::RETURNED`] from the EQDS header; other bits may be zero.
    fn flags(&self, pkt: PacketId) -> u8;

    /// Sets the bits in `bits`, leaving the others. The disciplines set only
    /// [`flags::CE`], and only on packets whose flags have [`flags::ECT`] (a switch
    /// writes ECN = CE into the IP header and fixes its checksum).
    fn set_flags(&mut self, pkt: PacketId, bits: u8);

    /// Whether the packet has `flag` set.
    #[inline]
    fn has(&self, pkt: PacketId, flag: u8) -> bool {
        self.flags(pkt) & flag != 0
    }

    /// Priority class, 0 served first ([`StrictPriority`](crate::StrictPriority); with
    /// PFC, the priority). A switch may take it from DSCP.
    fn class(&self, pkt: PacketId) -> u8;

    /// True for a data packet, the kind a trimming queue may cut to its header;
    /// false for control packets (ACKs, NACKs, PULLs, RTS), which ride the header
    /// queue whole.
    fn is_data(&self, pkt: PacketId) -> bool;

    /// The flow, for per-flow queues ([`FairQueue`](crate::FairQueue)): any number
    /// that is the same for a flow's packets and, as far as possible, differs between
    /// flows (a switch may fold its 5-tuple hash to 32 bits).
    fn flow(&self, pkt: PacketId) -> u32;

    /// The flow as a switch's hash sees it, for hashed per-flow state (AFQ's sketch,
    /// SFQ's buckets, Ideal-FQ's bids): the simulator's [`flow_key`](crate::flow_key)
    /// of flow and source host, a switch's 5-tuple hash.
    fn flow_key(&self, pkt: PacketId) -> u64;

    /// Cuts a data packet to its header, at most `header_bytes` on the wire (the
    /// discipline's configured header size), and sets [`flags::TRIMMED`]; returns its
    /// new size. `None` if this packet cannot be trimmed (a switch cannot cut a frame
    /// of a protocol it does not know): the trimming queue then drops it.
    fn trim_to_header(&mut self, pkt: PacketId, header_bytes: u32) -> Option<u32>;

    /// Releases a packet the discipline pushed out of its queue (longest-queue drop,
    /// Ideal-FQ's push-out); the drop is already counted in the port's stats.
    fn free(&mut self, pkt: PacketId);
}

/// Asks the CPU to start loading the cache line at `p` (a hint: it never faults,
/// whatever the address). The disciplines prefetch their own state and their FIFOs'
/// heads ahead of use on large runs.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
