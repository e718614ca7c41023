//! Queue disciplines: what a port does with packets waiting for its transmitter.
//!
//! They live in the `eqds-queues` crate (`crates/eqds-queues`), shared with the
//! user-space switch `eqds-switch`, one file per discipline: drop-tail, RED/ECN
//! (DCTCP's step marking is a case of it), strict priority, per-flow fair queueing,
//! SFQ, Ideal-FQ, AFQ with its count-min sketch, the NDP trimming queue, random
//! loss, and their scenario form `QueueSpec`. This module names them as the
//! simulator uses them: over its packet slab ([`PacketSlab`] implements
//! [`eqds_queues::PacketStore`], in `net::packet`) and its generator ([`SimRng`]).

use crate::engine::SimRng;
use crate::net::packet::{Packet, PacketSlab};

pub use eqds_queues::{
    count_min, AfqCounters, PortStats, QueueCore, QueueDiscipline, QueueSpec, Verdict,
};

/// A port's discipline, as the network holds it (`Network::queues`).
pub type DynQueue = dyn QueueDiscipline<PacketSlab, SimRng>;

/// What a discipline is handed on each call.
pub type QueueCtx<'a> = eqds_queues::QueueCtx<'a, PacketSlab, SimRng>;

/// The flow a packet belongs to, as a switch's hash sees it (see
/// [`eqds_queues::flow_key`]).
#[inline]
pub fn flow_key(p: &Packet) -> u64 {
    eqds_queues::flow_key(p.flow, p.src)
}

/// Starts loading a discipline's own state (a few cache lines behind its box).
#[inline]
pub fn prefetch_state(queue: &DynQueue) {
    eqds_queues::prefetch_state(queue);
}
