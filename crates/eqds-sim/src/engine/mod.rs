//! The discrete-event engine: a deterministic event queue and the events it carries.
//!
//! Everything that happens in a run is an [`Event`] popped from one [`EventQueue`] in
//! time order; events at the same picosecond are processed in the order they were
//! scheduled. Together with one seeded generator per run ([`SimRng`]) this makes every
//! run exactly reproducible.

#[cfg(feature = "event-costs")]
pub mod event_costs;
mod event_queue;
mod timers;

pub use event_queue::EventQueue;
pub use timers::Timers;

/// Asks the CPU to start loading the cache line at `p`. Processing an event takes a
/// few hundred nanoseconds, about a memory access: prefetching what the next event
/// will read (its packet, its port) hides that access behind the current event. (The
/// queue disciplines' crate has the one definition.)
pub use eqds_queues::prefetch;

use crate::ids::{EndpointId, FlowId, HostId, Node, PacketId, PortId, SwitchId};

/// The run's only source of randomness. ChaCha8 is portable and its stream is stable
/// across platforms and crate versions, which byte-identical outputs require.
pub type SimRng = rand_chacha::ChaCha8Rng;

/// One thing that happens at one instant. Kept small and `Copy`: the queue moves
/// millions of these per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The port finished serialising a packet and has more waiting.
    TxDone { port: PortId },
    /// A packet reaches the far end of a link: the switch or host `at`.
    /// The node is the far end's, so that handling the arrival never reads the port
    /// the packet came from.
    Arrive { at: Node, pkt: PacketId },
    /// A packet reaches the far end of `port`'s link, a switch that charges it to its
    /// ingress for PFC (used instead of `Arrive` on such links).
    ArriveFrom { port: PortId, pkt: PacketId },
    /// A PFC PAUSE (or RESUME, 0 quanta) for `priority` reaches the sending end of
    /// `port`'s link.
    PfcFrame {
        port: PortId,
        priority: u8,
        quanta: u16,
    },
    /// A PFC timer of `port`: a pause expiring, a PAUSE to refresh, the watchdog.
    PfcTimer { port: PortId },
    /// Search the paused links for a deadlock.
    PfcScan,
    /// A transport endpoint's timer may be due (see `transport::timers`).
    Timer { endpoint: EndpointId },
    /// A host's pull pacer may release its next PULL.
    PullSlot { host: HostId },
    /// A host's EQDS layer may have a timer due (PULL pacer, retransmit, reorder).
    EqdsTimer { host: HostId },
    /// A flow of the workload starts.
    FlowStart { flow: FlowId },
    /// IOFD: a flow that moved at switch `switch` may release the packets it held
    /// back (its last packet on the old port has left, and the move gap passed).
    IofdRelease { switch: SwitchId, flow: FlowId },
    /// IOFD's last-hop re-sequencer: a gap in `flow` may have waited its timeout.
    IofdGapCheck { flow: FlowId },
    /// A hardware switch's DoD port sent a packet for egress port `port`: the
    /// notification reaches pipeline `pipe`'s ingress (`u8::MAX`: every pipeline).
    HwNotify { port: PortId, pipe: u8 },
    /// Tofino 2: a packet that passed the queue-depth check in ingress reaches the
    /// traffic manager, for egress port `port` (its ingress pipeline rides in the
    /// packet meanwhile, `trimming_hw::queue_depth`: the event has no room for it).
    HwEnterTm { port: PortId, pkt: PacketId },
    /// Periodic sampling for one of the time-series outputs.
    Sample { series: u8 },
}
