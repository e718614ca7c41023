//! Switch queue disciplines: what a port does with packets waiting for its
//! transmitter. Shared by the simulator (`eqds-sim`) and the user-space switch
//! (`eqds-switch`), so both run the same code from the same configuration
//! ([`QueueSpec`]).
//!
//! A discipline decides, on arrival, whether a packet is queued (possibly marked or
//! trimmed) or dropped, and on each transmit opportunity which packet goes next. The
//! packet being serialised has already left the discipline: limits count waiting
//! packets only, as a Linux qdisc does (htsim counts the one on the wire too, so its
//! N-packet queue is our N-1).
//!
//! The crate does no I/O and keeps no clock: the caller owns the packets (a
//! [`PacketStore`]), the random generator and the time, and hands them in through a
//! [`QueueCtx`] on each call. Disciplines are generic over the store and the
//! generator, so the simulator's calls are monomorphised and inlined, and boxed as
//! `Box<dyn QueueDiscipline<S, R>>` to pick one per port at run time.
//!
//! # Driving a discipline
//!
//! ```
//! use eqds_queues::{flags, PacketId, PacketStore, PortStats, QueueCtx, QueueSpec, Verdict};
//!
//! /// A caller's packets: here just sizes and flags in a vector.
//! #[derive(Default)]
//! struct Frames(Vec<(u32, u8)>);
//!
//! impl PacketStore for Frames {
//!     fn size(&self, p: PacketId) -> u32 { self.0[p as usize].0 }
//!     fn flags(&self, p: PacketId) -> u8 { self.0[p as usize].1 }
//!     fn set_flags(&mut self, p: PacketId, bits: u8) { self.0[p as usize].1 |= bits }
//!     fn class(&self, _: PacketId) -> u8 { 0 }
//!     fn is_data(&self, _: PacketId) -> bool { true }
//!     fn flow(&self, p: PacketId) -> u32 { p % 4 }
//!     fn flow_key(&self, p: PacketId) -> u64 { u64::from(p % 4) }
//!     fn trim_to_header(&mut self, p: PacketId, header: u32) -> Option<u32> {
//!         let f = &mut self.0[p as usize];
//!         f.0 = f.0.min(header);
//!         f.1 |= flags::TRIMMED;
//!         Some(f.0)
//!     }
//!     fn free(&mut self, _: PacketId) {}
//! }
//!
//! // A port's queue in a config file: 8 data packets, then trim.
//! let table: toml::Table = r#"queue = { kind = "trimming", data_packets = 8 }"#.parse().unwrap();
//! // Checked; errors name the key ("ports.eth1.queue.trimming.data_packets: ...").
//! let spec = QueueSpec::from_toml(table["queue"].clone(), "ports.eth1.queue").unwrap();
//! let mut queue = spec.build_seeded::<Frames, rand::rngs::StdRng>(1);
//!
//! let mut frames = Frames::default();
//! let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(1);
//! let mut stats = PortStats::default();
//! for i in 0..10u32 {
//!     frames.0.push((1500, 0));
//!     let mut ctx = QueueCtx {
//!         pkts: &mut frames,
//!         rng: &mut rng,
//!         stats: &mut stats,
//!         now: 0,
//!         rate_bps: 1_000_000_000,
//!     };
//!     // Dropped: free the packet and count it; Returned: send it back; both are the
//!     // caller's to do (see `Verdict`).
//!     assert_eq!(queue.enqueue(i, &mut ctx), Verdict::Queued);
//! }
//! assert_eq!(stats.trims, 2);
//! // Each transmit opportunity: the next packet and its size on the wire.
//! let (first, size) = queue.dequeue_at(0).unwrap();
//! assert_eq!((first, size), (8, 64), "headers first under WFQ's first turn");
//! ```

pub mod afq;
pub mod config;
pub mod count_min;
mod drop_tail;
mod drr;
mod fair_queue;
mod fifo;
mod ideal_fq;
mod random_loss;
mod red;
mod sfq;
mod spec;
mod store;
mod strict_priority;
#[cfg(test)]
mod testing;
mod trimming;

pub use afq::{Afq, AfqCounters};
pub use drop_tail::DropTail;
pub use fair_queue::FairQueue;
pub use fifo::Fifo;
pub use ideal_fq::IdealFq;
pub use random_loss::RandomLoss;
pub use red::{Red, RedParams};
pub use sfq::{Sfq, SfqDrop};
pub use spec::{Limit, QueueSpec};
pub use store::{flags, prefetch, PacketId, PacketStore, Time};
pub use strict_priority::StrictPriority;
pub use trimming::{TrimScheduler, Trimming};

/// What the port and its discipline count. All counters are totals over the run.
/// In declaration order (`repr(C)`): first the three that every packet through a
/// port may change, for a port that embeds these and wants them in one cache line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct PortStats {
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Largest backlog seen, in bytes (excluding the packet on the wire).
    pub max_backlog_bytes: u64,
    pub drops: u64,
    pub dropped_bytes: u64,
    /// Of `drops`, the packets a [`RandomLoss`] wrapper lost (corruption, not
    /// congestion): PFC's lossless-drop invariant leaves them out.
    pub random_losses: u64,
    pub marks: u64,
    /// Data packets cut to their header by a trimming queue.
    pub trims: u64,
    /// Headers sent back to their source because the header queue was full.
    pub returns: u64,
}

/// The flow key of the simulator's packets: its 5-tuple, here the flow and the
/// sending host (a flow's data and its ACKs are two flows). AFQ, SFQ and Ideal-FQ
/// keep their per-flow state by a store's [`PacketStore::flow_key`].
#[inline]
pub fn flow_key(flow: u32, src: u32) -> u64 {
    (u64::from(flow) << 32) | u64::from(src)
}

/// What the discipline needs from its surroundings while admitting a packet: the
/// caller's packets (`S`), its random generator (`R`), the port's counters, the time
/// and the port's rate.
pub struct QueueCtx<'a, S, R: ?Sized> {
    pub pkts: &'a mut S,
    pub rng: &'a mut R,
    pub stats: &'a mut PortStats,
    /// The time of the arrival (or departure).
    pub now: Time,
    /// The port's transmit rate in bits per second: Ideal-FQ's virtual time runs at
    /// this rate shared among the backlogged flows.
    pub rate_bps: u64,
}

impl<S: PacketStore, R: ?Sized> QueueCtx<'_, S, R> {
    /// Counts the drop of `pkt`, already queued (pushed out for an arrival), and
    /// frees it; the discipline has taken it out of its own backlog.
    #[inline]
    pub fn drop_queued(&mut self, pkt: PacketId, size: u32) {
        self.stats.drops += 1;
        self.stats.dropped_bytes += u64::from(size);
        self.pkts.free(pkt);
    }
}

/// The outcome of offering a packet to a discipline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Queued,
    /// The discipline refused the packet; the caller frees it and counts the drop.
    Dropped,
    /// The (already trimmed) packet must go back to its source; the caller swaps its
    /// addresses and routes it, and counts the return.
    Returned,
    /// A data packet the discipline would have trimmed (or dropped), untouched: a
    /// traffic manager that cannot trim hands it back for the switch model to deflect
    /// or mirror (the simulator's `net::trimming_hw`). Only a discipline told to
    /// ([`QueueDiscipline::deflect_on_drop`]) answers this.
    Deflected,
}

/// What a traffic manager told to deflect reports about itself
/// ([`QueueDiscipline::deflect_on_drop`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeflectingQueue {
    /// Size the switch cuts a data packet to (the discipline's header size).
    pub header_bytes: u32,
    /// The data queue's limit (the meters' default burst is its byte capacity).
    pub data_limit: Limit,
}

/// A port's queueing behaviour over packets in a store `S`, drawing randomness from
/// `R`: the calls that look at packets. The rest, serving and reporting, is the
/// supertrait [`QueueCore`], callable on a `dyn QueueDiscipline` too.
/// Implementations are small and each lives in its own file; compose them (e.g.
/// [`StrictPriority`] over per-class disciplines). Object-safe: ports hold
/// `Box<dyn QueueDiscipline<S, R>>`.
pub trait QueueDiscipline<S, R: ?Sized>: QueueCore {
    /// Offers `pkt`; may mark or trim it. Must not free it.
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) -> Verdict;
    /// The port took `pkt` (by `dequeue`) and starts sending it: a discipline that
    /// marks at dequeue does it here, with the queue left behind the packet. Called
    /// only if [`QueueCore::wants_departures`].
    fn departed(&mut self, _pkt: PacketId, _ctx: &mut QueueCtx<S, R>) {}
}

/// What a discipline does without looking at packets: hands out the next one, and
/// reports its backlog and abilities. Apart from [`QueueDiscipline`] so that these
/// calls need no store type, on a concrete discipline as on a boxed one.
pub trait QueueCore {
    /// Takes the next packet to transmit, with its size in bytes.
    fn dequeue(&mut self) -> Option<(PacketId, u32)>;
    /// Calls `f` with every packet the discipline holds, in no particular order:
    /// snapshots of who holds the buffer (`queue_series.flows`, the AFQ paper's
    /// packets per flow in a queue, Figure 10c).
    fn for_each_queued(&self, f: &mut dyn FnMut(PacketId));
    /// [`QueueCore::dequeue`] at time `now`, for disciplines whose service order
    /// depends on the clock (AFQ's two-group scheduler swaps its groups every tau);
    /// the port calls this one. The default ignores the time.
    fn dequeue_at(&mut self, _now: Time) -> Option<(PacketId, u32)> {
        self.dequeue()
    }
    /// Takes the next packet to transmit among those of priorities not in `paused`
    /// (bit `p` for class `p`; PFC). The default, for disciplines that keep every
    /// class in one queue, serves nothing while any priority is paused: a packet of a
    /// paused priority at the head blocks those behind it, as in a switch that maps
    /// every priority to one queue. Disciplines with a queue per class
    /// ([`StrictPriority`]) pass over the paused ones.
    fn dequeue_unpaused(&mut self, paused: u8) -> Option<(PacketId, u32)> {
        if paused == 0 {
            self.dequeue()
        } else {
            None
        }
    }
    /// Whether [`QueueCore::dequeue_unpaused`] can hand out one class while others
    /// wait (a queue per class), rather than holding all behind a paused one.
    fn serves_classes_apart(&self) -> bool {
        false
    }
    /// Bytes waiting.
    fn backlog_bytes(&self) -> u64;
    /// Packets waiting.
    fn backlog_packets(&self) -> u32;
    /// Whether the port must call [`QueueDiscipline::departed`] with each packet it
    /// takes (default: no).
    fn wants_departures(&self) -> bool {
        false
    }
    /// True if a packet arriving at an empty queue and an idle transmitter would be
    /// sent untouched, so the port may skip the discipline (a fast path). Disciplines
    /// that keep state per packet (averages, per-flow accounting) return false.
    fn bypass_when_idle(&self) -> bool {
        true
    }
    /// Starts loading the storage of the packets `dequeue` would take next (a hint
    /// for large runs; the default does nothing).
    fn prefetch_head(&self) {}
    /// From now on, answer [`Verdict::Deflected`] for data the discipline cannot hold
    /// instead of cutting or dropping it (a hardware switch's traffic manager, the
    /// simulator's `net::trimming_hw`). `None`: this discipline cannot (only the
    /// trimming queue can).
    fn deflect_on_drop(&mut self) -> Option<DeflectingQueue> {
        None
    }
    /// Bytes of full data packets waiting (Tofino 2's queue-depth registers read
    /// this); the default counts everything.
    fn data_backlog_bytes(&self) -> u64 {
        self.backlog_bytes()
    }
    /// AFQ's own counters, if this discipline is AFQ or holds one.
    fn afq_counters(&self) -> Option<AfqCounters> {
        None
    }
}

/// Starts loading a discipline's own state (a few cache lines behind its box).
#[inline]
pub fn prefetch_state<S, R: ?Sized>(queue: &dyn QueueDiscipline<S, R>) {
    let q = queue as *const dyn QueueDiscipline<S, R> as *const u8;
    for line in 0..3 {
        prefetch(q.wrapping_add(64 * line));
    }
}
