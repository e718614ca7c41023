//! EQDS in the simulator: one `eqds-proto` [`Host`] on every host, the same protocol
//! code the Linux daemon runs, joined to the simulated network.
//!
//! ```text
//!   transports ──write/hold──▶ EqdsLayer ──Host::handle_*──▶ eqds_proto::host::Host
//!   run loop ──arrive/timer──▶ (adapter.rs)◀──Host::poll_*───  (EQIFs, credit, tunnels)
//!                                 │
//!                                 └──▶ NIC queue (Network::enqueue), EqdsTimer events,
//!                                      delivered inner packets back to the run loop
//! ```
//!
//! Each host's `Host` does the protocol (EQIFs, uplink scheduler, receiving EQIF,
//! peer ids, windows, timers at scale); this module supplies only what the daemon gets
//! from the kernel:
//! - **Packets.** The core's packet handle is a [`Payload`]: the simulator's
//!   [`PacketId`], or a native application's datagram not yet made into a packet
//!   (`payload.rs`). A packet written into EQDS stays in the slab, owned by the
//!   sending EQIF until its ACK; a datagram is made into one only as it is sent.
//!   Each transmission is a copy of it, `overhead` bytes bigger, whose 16-byte EQDS
//!   header is encoded into a side table (`encap.rs`) rather than widening every
//!   packet: switches only read the packet, receivers decode the real wire format.
//! - **Time.** One lazily re-armed timer event per host.
//! - **The NIC.** Whatever the sending EQIFs release goes straight to the host's NIC
//!   queue while it holds fewer than `nic_limit` packets; credit arrives paced at the
//!   receivers' link rates, so that queue stays short.
//! - **Topology.** Peer ids are host numbers; control packets are sprayed over the
//!   paths round robin, as data is.
//!
//! Writers are of two kinds (the paper's EQIF classes, §6): a transport such as TCP,
//! whose packets are dropped when their destination's send queue is full (the
//! TCP-compatible EQIF's drop-tail queue), and a native application
//! (`protocol = "eqds"`), which is told to wait and woken through its timer when the
//! queue has drained to half.

mod adapter;
mod encap;
mod payload;

pub use adapter::{HostIo, Writer};
pub use encap::TagTable;
pub use eqds_proto::host::bdp_packets;
pub use payload::{Held, NativeFlow, Payload};

use std::sync::Arc;

use crate::flow::FlowRecord;
use crate::ids::{EndpointId, FlowId, HostId, PacketId};
use crate::scenario::EqdsSpec;
use crate::scenario::RdmaEqif;
use crate::units::Time;
use eqds_proto::config::EqdsConfig;
use eqds_proto::host::{Host, HostParams, TunnelWindows};
use eqds_proto::rdma::RdmaFeedback;
use eqds_proto::sender::Sender;
use eqds_proto::uplink::Share;

/// The simulator's EQDS settings: the core's [`EqdsConfig`] and what only the
/// simulator has (which flows EQDS carries, the NIC queue limit, the paths).
#[derive(Clone, Debug)]
pub struct EqdsSettings {
    /// The protocol's settings, as every host's [`Host`] gets them.
    pub config: EqdsConfig,
    /// Tunnel every transport's packets, not only native EQDS flows'.
    pub tunnel_all: bool,
    /// Tunnel MTU: the wire size of a full packet and the credit of one PULL.
    pub mtu: u32,
    pub overhead: u32,
    /// Path ids a tunnel sprays over.
    pub paths: u16,
    /// Packets the NIC queue may hold before EQDS stops handing it more.
    pub nic_limit: u32,
    pub backpressure: bool,
    /// Some flows are legacy traffic that goes around EQDS (`legacy_workloads`):
    /// only then does sending look up the flow.
    pub has_legacy: bool,
    /// Windows are per tunnel, one loaded BDP at the slower of its two hosts (NICs
    /// of several rates and no `window` given); `config.window` is then the fastest
    /// host's, for the receivers.
    pub per_tunnel_windows: bool,
    /// Each host's sending EQIFs, by index (and sender id).
    eqifs: Vec<Share>,
    /// EQIF of each workload's flows, indexed by workload; workloads beyond the
    /// end use EQIF 0.
    eqif_of_workload: Vec<u8>,
    /// Each EQIF's RDMA settings if it is an RDMA EQIF; empty if none is.
    pub rdma: Vec<Option<RdmaEqif>>,
}

impl EqdsSettings {
    /// Resolves `spec` for a network of `paths` equal-cost paths whose longest
    /// loaded round trip holds `bdp_packets` full packets at the fastest NIC, and
    /// whose NICs run at `rates`. `path_stats` asks every tunnel for per-path
    /// counters (`[output] paths_csv`).
    pub fn resolve(
        spec: &EqdsSpec,
        mtu: u32,
        paths: u32,
        bdp_packets: u32,
        rates: &[u64],
        path_stats: bool,
    ) -> Result<Self, String> {
        let mut config = spec.config(bdp_packets).map_err(|e| format!("eqds.{e}"))?;
        config.path_stats |= path_stats;
        let fastest = rates.iter().copied().max().unwrap_or(0);
        let mut rdma = Vec::new();
        for (i, e) in spec.eqifs.iter().enumerate() {
            rdma.push(e.rdma().map_err(|err| format!("eqds.eqifs[{i}].{err}"))?);
        }
        if rdma.iter().all(Option::is_none) {
            rdma.clear();
        }
        Ok(EqdsSettings {
            rdma,
            config,
            tunnel_all: spec.enabled,
            mtu,
            overhead: spec.overhead.0 as u32,
            paths: spec.paths.unwrap_or(paths).clamp(1, u32::from(u16::MAX)) as u16,
            nic_limit: spec.nic_limit,
            backpressure: spec.backpressure,
            has_legacy: !spec.legacy_workloads.is_empty(),
            // With NICs of several rates, a window sized for the fastest would keep
            // several BDPs of a slower receiver in flight, queued in the network.
            per_tunnel_windows: !spec.sets_window() && rates.iter().any(|&r| r != fastest),
            eqifs: if spec.eqifs.is_empty() {
                vec![Share::default()]
            } else {
                spec.eqifs
                    .iter()
                    .map(|e| Share {
                        weight: e.weight,
                        priority: e.priority,
                    })
                    .collect()
            },
            eqif_of_workload: {
                let mut of = Vec::new();
                for (e, eqif) in spec.eqifs.iter().enumerate() {
                    for &w in &eqif.workloads {
                        let w = w as usize;
                        if of.len() <= w {
                            of.resize(w + 1, 0);
                        }
                        of[w] = e as u8;
                    }
                }
                of
            },
        })
    }

    /// The sending EQIF that `flow` writes into: its workload's.
    #[inline]
    pub fn eqif_of_flow(&self, flows: &[FlowRecord], flow: FlowId) -> usize {
        if self.eqif_of_workload.is_empty() {
            return 0;
        }
        flows
            .get(flow as usize)
            .and_then(|f| self.eqif_of_workload.get(usize::from(f.spec.origin)))
            .map_or(0, |&e| usize::from(e))
    }

    /// EQIF `eqif`'s RDMA settings, if it is an RDMA EQIF.
    #[inline]
    pub fn rdma(&self, eqif: usize) -> Option<&RdmaEqif> {
        self.rdma.get(eqif).and_then(Option::as_ref)
    }

    /// Largest inner packet a writer may hand to EQDS.
    pub fn max_inner(&self) -> u32 {
        self.mtu - self.overhead
    }
}

/// Layer-wide counters, reported in the run summary.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct EqdsCounters {
    /// Inner packets written into EQDS.
    pub written: u64,
    /// Inner packets dropped because their destination's send queue was full
    /// (TCP-compatible writers), or refused (native writers, who retry).
    pub send_queue_full: u64,
    /// ECN-capable inner packets marked CE on joining a long send queue.
    pub ecn_marked: u64,
    /// Inner packets handed to receiving transports.
    pub delivered: u64,
    /// Data packets put on the wire, retransmissions included.
    pub data_sent: u64,
    /// RTS packets put on the wire.
    pub rts_sent: u64,
    /// Control packets (ACK, NACK, PULL, RST) put on the wire.
    pub control_sent: u64,
    /// Trimmed headers that reached a receiver.
    pub trimmed_received: u64,
    /// Headers a switch returned to their sender.
    pub returned: u64,
    /// Returned control packets (dropped: what they said comes again).
    pub returned_control: u64,
    /// Packets whose EQDS header failed to decode (dropped).
    pub malformed: u64,
}

/// What the RDMA EQIFs did over a run (summed over hosts), for the summary.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct RdmaCounters {
    /// Packets the RDMA engines wrote into RDMA EQIFs.
    pub written: u64,
    /// Packets dropped because their destination's queue was at `limit`.
    pub overflow: u64,
    /// The longest any destination's queue grew, in charged bytes.
    pub peak_queue_bytes: u64,
    /// Packets the marking ramp picked.
    pub marked: u64,
    /// CNPs sent to RDMA engines.
    pub cnps: u64,
    /// Marks inside a queue pair's CNP interval, not sent.
    pub cnps_suppressed: u64,
    /// PAUSEs and RESUMEs sent to RDMA engines.
    pub pauses: u64,
    pub resumes: u64,
    /// Host-seconds of RDMA engines paused.
    pub paused_s: f64,
}

/// One host's EQDS and the simulator's state around it.
///
/// Fields are kept in this order (`repr(C)`), each host on its own cache lines: the
/// simulator's fields that every event on the host reads come first, and the core's
/// struct follows with its own hot fields first (`Host`'s layout), so that what
/// nearly every event reads is in the first 4 lines, which the run loop loads ahead
/// of the host's events (`prefetch_host`).
#[repr(C, align(64))]
pub struct EqdsHost {
    /// Earliest `EqdsTimer` event queued for this host (`Time::MAX` if none).
    timer_queued: Time,
    /// The NIC queue was full with the sending EQIFs possibly holding more: pump
    /// again when the NIC finishes its current packet (`Time::MAX` if not).
    nic_wake: Time,
    /// Writers waiting for room towards a destination: (EQIF, destination, writer).
    blocked: Vec<(u8, HostId, EndpointId)>,
    /// A writer joined `blocked` since the pump last looked for room. Otherwise only
    /// a transmission can make room (the simulator never drops tunnels), so the pump
    /// looks only then: the look costs a tunnel lookup per blocked writer.
    blocked_new: bool,
    /// Path id of the next control packet. The core leaves control packets' paths
    /// to the host; they are sprayed round robin like data, since on one path the
    /// control of every host of a pod (two per data packet) would overload that
    /// path's links (k=16 at 100 Gbps: 200 Gb/s on one agg uplink).
    next_control_path: u16,
    /// The RDMA EQIFs' feedback state, by EQIF index (empty without RDMA EQIFs).
    rdma: Vec<Option<RdmaFeedback>>,
    pub host: Host<Payload>,
    /// When the host's RDMA engine is paused by a Stingray-style RDMA EQIF:
    /// from the first time to the second (`(MAX, MAX)`: never).
    engine_pause: (Time, Time),
}

impl EqdsHost {
    /// Writer `ep` waits for room in EQIF `eqif`'s send queue towards `dst`.
    fn block(&mut self, eqif: usize, dst: HostId, ep: EndpointId) {
        let entry = (eqif as u8, dst, ep);
        if !self.blocked.contains(&entry) {
            self.blocked.push(entry);
            self.blocked_new = true;
        }
    }
}

impl EqdsLayer {
    /// Starts loading host `host`'s EQDS state: its first `lines` cache lines (what
    /// nearly every EQDS event on the host reads: `EqdsHost`'s layout) and the fields
    /// through which [`EqdsLayer::prefetch_host_state`] will find the rest
    /// (`Host::hot_fields`), wherever they are in the struct.
    #[inline]
    pub fn prefetch_host(&self, host: HostId, lines: usize) {
        if let Some(h) = self.hosts.get(host as usize) {
            let p = h as *const EqdsHost as *const u8;
            let n = std::mem::size_of::<EqdsHost>().div_ceil(64).min(lines);
            for line in 0..n {
                crate::engine::prefetch(p.wrapping_add(64 * line));
            }
            h.host.hot_fields(&mut |p| crate::engine::prefetch(p));
        }
    }
}

impl EqdsLayer {
    /// Starts loading the state of host `host`'s EQDS that lives apart from its
    /// struct (`Host::hot_state`: the first tunnel, peer and queues, and the
    /// blocked writers). Reads the struct to find them, so best called once
    /// [`EqdsLayer::prefetch_host`] has loaded it.
    #[inline]
    pub fn prefetch_host_state(&self, host: HostId) {
        if let Some(h) = self.hosts.get(host as usize) {
            h.host.hot_state(&mut |p| crate::engine::prefetch(p));
            crate::engine::prefetch(h.blocked.as_ptr());
        }
    }
}

/// EQDS on every host of a run.
pub struct EqdsLayer {
    pub settings: EqdsSettings,
    pub hosts: Vec<EqdsHost>,
    pub tags: TagTable,
    pub counters: EqdsCounters,
    /// Inner packets released to their transports, for the run loop to hand over.
    pub delivered: Vec<PacketId>,
    /// Native applications' flows by flow id (`None` for the others): what makes
    /// their datagrams into packets (`payload.rs`).
    natives: Vec<Option<NativeFlow>>,
    /// The RDMA EQIFs' counters kept by the layer (the rest is in each host's
    /// feedback state: [`EqdsLayer::rdma_totals`]).
    rdma: RdmaCounters,
}

impl EqdsLayer {
    /// `link_rates[h]` is host `h`'s NIC rate; `seeds[h]` seeds its epochs and path
    /// shuffles; `rtt` is the round trip per-tunnel windows cover.
    pub fn new(settings: EqdsSettings, link_rates: &[u64], seeds: &[u64], rtt: Time) -> Self {
        let peer_rates: Arc<[u64]> = Arc::from(link_rates);
        let hosts = link_rates
            .iter()
            .zip(seeds)
            .enumerate()
            .map(|(h, (&rate, &seed))| EqdsHost {
                host: Host::new(
                    &settings.config,
                    HostParams {
                        mtu: settings.mtu,
                        overhead: settings.overhead,
                        link_rate_bps: rate,
                        paths: settings.paths,
                        seed,
                        eqifs: settings.eqifs.clone(),
                        // Every host has the same EQIFs.
                        peer_eqifs: settings.eqifs.clone(),
                        tunnel_windows: settings.per_tunnel_windows.then(|| TunnelWindows {
                            rtt,
                            peer_rates: peer_rates.clone(),
                        }),
                        queues: settings.rdma.iter().map(|r| r.map(|r| r.queue)).collect(),
                    },
                ),
                timer_queued: Time::MAX,
                nic_wake: Time::MAX,
                blocked: Vec::new(),
                blocked_new: false,
                next_control_path: (h % usize::from(settings.paths)) as u16,
                rdma: settings
                    .rdma
                    .iter()
                    .map(|r| r.map(|r| RdmaFeedback::new(r.feedback)))
                    .collect(),
                engine_pause: (Time::MAX, Time::MAX),
            })
            .collect();
        EqdsLayer {
            settings,
            hosts,
            tags: TagTable::default(),
            counters: EqdsCounters::default(),
            delivered: Vec::new(),
            natives: Vec::new(),
            rdma: RdmaCounters::default(),
        }
    }

    /// The RDMA EQIFs' totals at `now`, if there are RDMA EQIFs.
    pub fn rdma_totals(&self, now: Time) -> Option<RdmaCounters> {
        if self.settings.rdma.is_empty() {
            return None;
        }
        let mut t = self.rdma;
        let mut paused = 0;
        for f in self.hosts.iter().flat_map(|h| h.rdma.iter().flatten()) {
            let s = f.stats(now);
            t.marked += s.marked;
            t.cnps += s.cnps;
            t.cnps_suppressed += s.cnps_suppressed;
            t.pauses += s.pauses;
            t.resumes += s.resumes;
            paused += s.paused_ps;
        }
        t.paused_s = paused as f64 / crate::units::SEC as f64;
        Some(t)
    }

    /// Tunnel-level totals over every host, for the summary.
    pub fn tunnel_totals(&self) -> TunnelTotals {
        let mut t = TunnelTotals::default();
        for h in &self.hosts {
            for (_, s) in h.host.uplink().eqifs().flat_map(Sender::tunnels) {
                t.tunnels += 1;
                t.retransmits += s.retransmits;
                t.rto_expiries += s.rto_expiries;
                t.reorder_losses += s.reorder_losses;
                t.credit_loss_rts += s.credit_loss_rts;
                t.bursts += s.bursts;
                t.warm_restarts += s.warm_restarts;
                t.epochs += s.epochs;
            }
            let e = h.host.receiver().stats();
            t.duplicates += e.duplicates;
            t.late += e.late;
            t.holes_skipped += e.holes_skipped;
            t.rst_sent += e.rst_sent;
            t.peak_reorder_held = t.peak_reorder_held.max(e.peak_reorder_held);
        }
        t
    }
}

/// Sums of the per-tunnel counters (and the reorder queues' peak).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct TunnelTotals {
    pub tunnels: u64,
    pub retransmits: u64,
    pub rto_expiries: u64,
    /// Packets resent before their timeout by `loss_reorder_window`.
    pub reorder_losses: u64,
    pub credit_loss_rts: u64,
    /// NDP-mode (re)starts that burst a window.
    pub bursts: u64,
    /// Idle restarts paid for by credit held from the last round trip.
    pub warm_restarts: u64,
    pub epochs: u64,
    pub duplicates: u64,
    /// Packets delivered out of order after the reorder queue skipped their hole.
    pub late: u64,
    /// Holes the reorder queues skipped (span exceeded or hole timed out).
    pub holes_skipped: u64,
    pub rst_sent: u64,
    /// Most packets any one reorder queue held behind a hole at once (a maximum,
    /// not a sum).
    pub peak_reorder_held: u64,
}
