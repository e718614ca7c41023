//! How much memory a run will need, estimated from the scenario alone before anything
//! is built, so that a scenario far too large for the machine (an all-to-all on a
//! k=64 fat tree: 4.3e9 flows) is refused at once with a message that says why,
//! instead of growing until the operating system kills it.
//!
//! The estimate adds up what a run keeps: the network (ports with their queue
//! disciplines, switches, hosts), one record per flow the run will ever have, the
//! endpoints of the flows that may be open at once, the packets that may exist at once
//! (in queues, on links, in EQDS send queues), and the EQDS tunnels. Each item's
//! cost is a round figure above what runs measured (peak RSS with
//! `/usr/bin/time -v`; `docs/scenarios.md`, "Memory"), with room for vectors that
//! grow by doubling. Counts are upper bounds: all flows of a fixed workload may be
//! open together, a closed loop cannot complete downloads faster than its clients'
//! links carry them, and no more packets exist than either the flows' windows or
//! the network's buffers hold, whichever is fewer. So the estimate is meant to be
//! above the peak of a run, within a small factor for large runs; for small ones
//! the fixed cost of the process dominates.

use crate::flow::Protocol;
use crate::net::queue::QueueSpec;
use crate::scenario::{Loaded, Scenario};
use crate::units::{self, Time, SEC};
use crate::workload::WorkloadSpec;
use eqds_proto::config::EqdsConfig;
use std::fmt;

/// The process before any scenario: code, allocator, the event queue's ring.
const BASE: f64 = 16.0 * MIB;
/// A port: its state, its boxed queue discipline, counters, and its share of the
/// switch or host it belongs to (measured: 320-490 B on fat trees of k=16-48).
const PER_PORT: f64 = 512.0;
/// A flow's record, its spec while the workload is generated, its start event, and
/// its endpoints' slots and timers (measured: 250 B).
const PER_FLOW: f64 = 320.0;
/// A started flow's sender and receiver (measured: about 950 B for TCP).
const PER_OPEN_FLOW: f64 = 1024.0;
/// A packet: its slot in the packet slab (grown a 1 MiB chunk at a time), its events, its
/// place in a queue, and what its sender keeps about it until it is answered
/// (measured: 160-300 B).
const PER_PACKET: f64 = 320.0;
/// What a packet that EQDS carries costs besides: its EQDS header in the tag table,
/// its place in a send queue (measured: the native k=16 permutation at 100 Gbps,
/// 214 packets per flow, 112 MiB in all).
const PER_EQDS_PACKET: f64 = 192.0;
/// An EQDS tunnel: both ends' state in eqds-proto, reorder queue included.
const PER_TUNNEL: f64 = 2048.0;
/// A slot of a tunnel's reorder queue.
const PER_REORDER_SLOT: f64 = 16.0;
/// A host's EQDS state beside its tunnels.
const PER_EQDS_HOST: f64 = 1024.0;
/// Packets a flow may have in flight when its queues are unlimited.
const UNLIMITED_WINDOW: f64 = 10_000.0;
const MIB: f64 = 1024.0 * 1024.0;

/// The estimate, and what it is made of.
#[derive(Clone, Debug)]
pub struct Estimate {
    /// Bytes, the sum of `parts`.
    pub bytes: u64,
    /// What each kind of item costs, in bytes.
    pub parts: Vec<(&'static str, u64)>,
}

impl Estimate {
    /// The part that costs most.
    pub fn largest(&self) -> (&'static str, u64) {
        self.parts
            .iter()
            .copied()
            .max_by_key(|&(_, b)| b)
            .unwrap_or(("nothing", 0))
    }

    /// An error if the estimate exceeds `limit` bytes, naming both and the largest part.
    pub fn check(&self, limit: u64) -> Result<(), String> {
        if self.bytes <= limit {
            return Ok(());
        }
        let (what, bytes) = self.largest();
        Err(format!(
            "the run would need about {} of memory, more than the {} allowed; most of it \
             is {what} ({}). Make the scenario smaller, or raise the limit with \
             --max-memory if the machine has the memory",
            Size(self.bytes),
            Size(limit),
            Size(bytes),
        ))
    }
}

/// A byte count written for people: `12.3 GiB`.
pub struct Size(pub u64);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        let units = [
            ("TiB", 1u64 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ];
        for (name, scale) in units {
            if b >= scale as f64 {
                return write!(f, "{:.1} {name}", b / scale as f64);
            }
        }
        write!(f, "{} B", self.0)
    }
}

/// mimalloc's `mi_option_purge_delay` (its `mimalloc.h`, v3; `libmimalloc-sys` names
/// no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Sets mimalloc's options for a run, for a binary whose global allocator is mimalloc
/// (the `eqds-sim` command, `examples/memory_model.rs`): huge pages, and memory kept
/// once freed. A run's memory rises to a plateau and stays there; handing freed pages
/// back to the kernel (mimalloc's default, after a delay) only means taking them back
/// moments later, each cleared again and, under a hypervisor, backed again. At k=32
/// (EQDS, 40 us) that was 1.2 s of system time in 10 s; peak RSS grows by a few
/// percent.
pub fn configure_allocator() {
    // SAFETY: these set mimalloc's global options; each takes effect for the memory
    // mimalloc asks the OS for (or would return to it) from now on, and has no other
    // precondition.
    unsafe {
        libmimalloc_sys::mi_option_set(libmimalloc_sys::mi_option_large_os_pages, 1);
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1);
    }
}

/// The memory the system can give a new process without swapping (`MemAvailable` in
/// `/proc/meminfo`), if the system says.
pub fn available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Flows a workload makes: all it will ever make, and how many may be open at once.
#[derive(Clone, Copy, Debug, Default)]
struct Flows {
    total: f64,
    open: f64,
    /// Packets each open flow may hold at once, at most (its size in packets).
    packets_each: f64,
}

/// Estimates the peak memory of running `loaded`.
pub fn estimate(loaded: &Loaded) -> Estimate {
    let sc = &loaded.scenario;
    let topo = &sc.topology;
    let hosts = topo.n_hosts() as f64;
    let links = topo.n_links() as f64;
    let ports = 2.0 * links;
    let t = &sc.transport;
    let mtu = t.mtu.0 as f64;
    let mss = (t.mtu.0 - t.header.0) as f64;
    let stop = sc.stop.time.map(|d| d.0);

    let rates: Vec<u64> = topo
        .links()
        .iter()
        .map(|l| l.rate.0)
        .chain(sc.host.links.iter().map(|l| l.rate.0))
        .collect();
    let fastest = rates.iter().copied().max().unwrap_or(1) as f64;
    let slowest = rates.iter().copied().min().unwrap_or(1);
    let latency = topo
        .links()
        .iter()
        .map(|l| l.latency.0)
        .chain(sc.host.links.iter().filter_map(|l| l.latency.map(|d| d.0)))
        .max()
        .unwrap_or(0);
    // The longest loaded round trip (every hop's latency, switch latency, and two
    // packets' serialisation each way at the slowest link), in full packets at the
    // fastest rate: what the default NDP and EQDS windows come to, and more.
    let hop =
        latency + sc.switch.latency.0 + 2 * units::serialisation_time(t.mtu.0 as u32, slowest);
    let rtt = 2.0 * f64::from(topo.max_hops()) * hop as f64;
    let bdp = (rtt * fastest / (8.0 * SEC as f64) / mtu).ceil() + 1.0;

    let mut flows = Flows::default();
    let mut windows = 0.0;
    let mut eqds_windows = 0.0;
    let eqds_everywhere = sc.eqds.enabled;
    let mut eqds_flows = 0.0;
    for (i, w) in sc.workload.as_slice().iter().enumerate() {
        let matrix = loaded.matrices.get(i).and_then(|m| m.as_deref());
        let f = workload_flows(w, matrix, loaded, stop, mss);
        let protocol = protocol_of(w).unwrap_or(t.protocol);
        let uses_eqds = protocol == Protocol::Eqds
            || (eqds_everywhere && !sc.eqds.legacy_workloads.contains(&(i as u32)));
        let window = window(sc, protocol, uses_eqds, bdp).min(f.packets_each);
        windows += f.open * window;
        flows.total += f.total;
        flows.open += f.open;
        if uses_eqds {
            eqds_flows += f.open;
            eqds_windows += f.open * window;
        }
    }

    // What the network's buffers hold: every port's queue full, every link carrying
    // a bandwidth-delay product of full packets each way.
    let host_q = queue_packets(&sc.host.queue, t.header.0);
    let switch_q = queue_packets(&sc.switch.queue, t.header.0);
    let on_links =
        2.0 * links * ((latency as f64 * fastest / (8.0 * SEC as f64) / mtu).ceil() + 1.0);
    let buffers = hosts * host_q + (ports - hosts) * switch_q + on_links;
    // Tunnels: one per communicating pair and direction (TCP over EQDS sends its
    // ACKs back through a tunnel of their own), at most one per ordered pair.
    let tunnels = if eqds_flows > 0.0 {
        let per_flow = if eqds_everywhere { 2.0 } else { 1.0 };
        (eqds_flows * per_flow).min(hosts * (hosts - 1.0))
    } else {
        0.0
    };
    let eqds = eqds_config(sc, bdp);
    let eqif_queued = tunnels * f64::from(eqds.send_queue);
    let packets = windows.min(buffers + eqif_queued);
    let eqds_packets = eqds_windows.min(packets);

    let series = match &sc.output.queue_series {
        Some(_) => ports * 4.0,
        None => 0.0,
    } + sc
        .output
        .flow_series
        .as_ref()
        .map_or(0.0, |_| flows.total * 8.0);
    let eqds_hosts = if eqds_flows > 0.0 { hosts } else { 0.0 };
    // Each tunnel's reorder queue is a ring of slots, allocated whole.
    let reorder_slots = f64::from(eqds.reorder_window_packets(fastest as u64, mtu as u32));
    let pfc = if sc.pfc.enabled {
        use crate::net::pfc::fabric::{bytes_per_port, BYTES_PER_PACKET};
        ports * bytes_per_port(sc.pfc.watchdog.is_some()) as f64 + packets * BYTES_PER_PACKET as f64
    } else {
        0.0
    };
    // AFQ's sketches (u64 counters) and FIFOs, SFQ's buckets: fixed per port.
    let state = |q: &QueueSpec| q.fixed_state_bytes() as f64;
    // An upper bound: every switch port at the largest of the disciplines it may have.
    let switch_state = sc
        .switch
        .tier_queue
        .values()
        .chain(&sc.switch.edge_queue)
        .map(state)
        .fold(state(&sc.switch.queue), f64::max);
    let queue_states = hosts * state(&sc.host.queue) + (ports - hosts) * switch_state;
    // A hardware trimming switch's per (pipeline, egress port) state and its
    // recirculation ports, at the switches' mean radix.
    let hw = match sc.switch.hw_settings() {
        Ok(hw) if hw.model != crate::net::trimming_hw::Model::OutputQueued => {
            use crate::net::trimming_hw::{feedback, ingress_meter};
            let switches = (topo.n_switches() as f64).max(1.0);
            let radix = (ports - hosts) / switches;
            let pipes = (radix / f64::from(hw.ports_per_pipeline.max(1))).ceil();
            let entry = std::mem::size_of::<ingress_meter::MeterSet>()
                + std::mem::size_of::<feedback::ModeClock>()
                + std::mem::size_of::<feedback::TrimBudget>();
            switches * pipes * (radix * entry as f64 + PER_PORT)
        }
        _ => 0.0,
    };
    let parts = [
        ("the process", BASE),
        (
            "the queues' fixed per-flow state (AFQ sketches)",
            queue_states,
        ),
        ("the network's ports and queues", ports * PER_PORT),
        ("the flow records", flows.total * PER_FLOW),
        ("the open flows' endpoints", flows.open * PER_OPEN_FLOW),
        (
            "the packets in flight",
            packets * PER_PACKET + eqds_packets * PER_EQDS_PACKET,
        ),
        (
            "the EQDS tunnels",
            tunnels * (PER_TUNNEL + reorder_slots * PER_REORDER_SLOT) + eqds_hosts * PER_EQDS_HOST,
        ),
        ("the time series", series),
        ("PFC's per-port state", pfc),
        ("the hardware switches' pipelines", hw),
    ];
    let parts: Vec<(&'static str, u64)> = parts
        .into_iter()
        .map(|(what, b)| (what, saturate(b)))
        .collect();
    Estimate {
        bytes: parts
            .iter()
            .fold(0u64, |sum, &(_, b)| sum.saturating_add(b)),
        parts,
    }
}

fn saturate(b: f64) -> u64 {
    if b.is_finite() && b < u64::MAX as f64 {
        b.max(0.0) as u64
    } else {
        u64::MAX
    }
}

/// Packets a queue discipline may hold: its packet limit, or its byte limit in the
/// smallest packets (headers alone); unlimited as a large window per flow decides.
fn queue_packets(q: &QueueSpec, header: u64) -> f64 {
    let limit = |packets: &Option<u32>, bytes: &Option<units::value::Bytes>| -> f64 {
        match (packets, bytes) {
            (Some(p), _) => f64::from(*p),
            (None, Some(b)) => (b.0 / header.max(1)) as f64,
            (None, None) => f64::INFINITY,
        }
    };
    match q {
        QueueSpec::DropTail {
            limit_packets,
            limit_bytes,
        }
        | QueueSpec::Ecn {
            limit_packets,
            limit_bytes,
            ..
        }
        | QueueSpec::Red {
            limit_packets,
            limit_bytes,
            ..
        }
        | QueueSpec::FairQueue {
            limit_packets,
            limit_bytes,
            ..
        }
        | QueueSpec::Afq {
            limit_packets,
            limit_bytes,
            ..
        }
        | QueueSpec::Sfq {
            limit_packets,
            limit_bytes,
            ..
        }
        | QueueSpec::IdealFq {
            limit_packets,
            limit_bytes,
        } => limit(limit_packets, limit_bytes),
        QueueSpec::StrictPriority { classes } => {
            classes.iter().map(|c| queue_packets(c, header)).sum()
        }
        QueueSpec::RandomLoss { queue, .. } => queue_packets(queue, header),
        QueueSpec::Trimming {
            data_packets,
            data_bytes,
            header_packets,
            ..
        } => {
            let data = match data_bytes {
                Some(b) => (b.0 / header.max(1)) as f64,
                None => f64::from(*data_packets),
            };
            data + f64::from(header_packets.unwrap_or(data_packets.saturating_mul(64)))
        }
    }
}

/// Packets one open flow of `protocol` may keep in the network at once.
fn window(sc: &Scenario, protocol: Protocol, uses_eqds: bool, bdp: f64) -> f64 {
    let per_queue = |q: &QueueSpec| queue_packets(q, sc.transport.header.0).min(UNLIMITED_WINDOW);
    // A window-limited sender keeps what its own NIC queue and one full bottleneck
    // queue hold, beside a round trip's worth on the wire.
    let queued = per_queue(&sc.host.queue) + per_queue(&sc.switch.queue) + bdp;
    let eqds = eqds_config(sc, bdp);
    let eqds_window = f64::from(eqds.window);
    match protocol {
        Protocol::Ndp => 2.0 * sc.transport.ndp.initial_window.map_or(bdp, f64::from),
        // A full send queue in the EQIF, a window in flight and the control
        // packets that answer it.
        _ if uses_eqds => f64::from(eqds.send_queue) + 3.0 * eqds_window,
        _ => queued,
    }
}

/// EQDS's settings as the run will resolve them, with a window of `bdp` packets
/// unless the scenario gives one.
fn eqds_config(sc: &Scenario, bdp: f64) -> EqdsConfig {
    // The scenario was validated, so this cannot fail; if it did, the estimate
    // would use the paper's defaults.
    sc.eqds
        .config(bdp.clamp(1.0, 1000.0) as u32)
        .unwrap_or_default()
}

fn protocol_of(w: &WorkloadSpec) -> Option<Protocol> {
    match w {
        WorkloadSpec::Permutation { protocol, .. }
        | WorkloadSpec::Incast { protocol, .. }
        | WorkloadSpec::AllToAll { protocol, .. }
        | WorkloadSpec::ClosedLoop { protocol, .. }
        | WorkloadSpec::Poisson { protocol, .. }
        | WorkloadSpec::Htsim { protocol, .. }
        | WorkloadSpec::Ping { protocol, .. }
        | WorkloadSpec::Flows { protocol, .. } => *protocol,
    }
}

/// Packets of a flow of `size` bytes (none: it never ends).
fn packets_of(size: Option<u64>, mss: f64) -> f64 {
    size.map_or(f64::INFINITY, |s| (s as f64 / mss).ceil() + 1.0)
}

/// The flows of one workload, as upper bounds.
fn workload_flows(
    w: &WorkloadSpec,
    matrix: Option<&[crate::flow::FlowSpec]>,
    loaded: &Loaded,
    stop: Option<Time>,
    mss: f64,
) -> Flows {
    let sc = &loaded.scenario;
    let n = sc.topology.n_hosts() as f64;
    let fixed = |count: f64, size: Option<u64>| Flows {
        total: count,
        open: count,
        packets_each: packets_of(size, mss),
    };
    match w {
        WorkloadSpec::Permutation { size, .. } => fixed(n, size.map(|b| b.0)),
        WorkloadSpec::Incast {
            senders,
            sender_hosts,
            size,
            ..
        } => {
            let count = sender_hosts
                .as_ref()
                .map_or(senders.unwrap_or(0) as f64, |l| l.len() as f64);
            fixed(count, size.map(|b| b.0))
        }
        WorkloadSpec::AllToAll { size, hosts, .. } => {
            let m = hosts.map_or(n, f64::from);
            fixed(m * (m - 1.0), size.map(|b| b.0))
        }
        WorkloadSpec::Flows { flows, .. } => Flows {
            total: flows.len() as f64,
            open: flows.len() as f64,
            packets_each: flows
                .iter()
                .map(|f| packets_of(f.size.map(|b| b.0), mss))
                .fold(0.0, f64::max),
        },
        WorkloadSpec::Htsim { .. } => {
            let flows = matrix.unwrap_or(&[]);
            Flows {
                total: flows.len() as f64,
                open: flows.len() as f64,
                packets_each: flows
                    .iter()
                    .map(|f| packets_of(f.size, mss))
                    .fold(0.0, f64::max),
            }
        }
        WorkloadSpec::ClosedLoop {
            size,
            clients,
            client_hosts,
            concurrency,
            start,
            ..
        } => {
            let clients = client_hosts
                .as_ref()
                .map_or(clients.map_or(n, f64::from), |l| l.len() as f64);
            let open = clients * f64::from(*concurrency);
            // No client downloads faster than the fastest link carries.
            let fastest = fastest_rate(sc);
            let span = stop.unwrap_or(0).saturating_sub(start.0) as f64 / SEC as f64;
            let downloads = clients * fastest * span / (8.0 * size.0.max(1) as f64);
            Flows {
                total: open + downloads,
                open,
                packets_each: packets_of(Some(size.0), mss),
            }
        }
        WorkloadSpec::Poisson {
            load,
            cdf,
            pareto,
            start,
            ..
        } => {
            // The expected arrivals, with room for chance; a CDF that cannot be read
            // is an error the run reports by name.
            let mean = crate::workload::poisson_sizes(cdf.as_deref(), *pareto, &loaded.base_dir)
                .map(|c| c.mean())
                .unwrap_or(1.0)
                .max(1.0);
            let span = stop.unwrap_or(0).saturating_sub(start.0) as f64 / SEC as f64;
            let expected = load * n * fastest_rate(sc) * span / (8.0 * mean);
            let total = 1.1 * expected + 100.0;
            Flows {
                total,
                open: total,
                packets_each: f64::INFINITY,
            }
        }
        WorkloadSpec::Ping {
            interval,
            size,
            count,
            start,
            ..
        } => {
            let requests = count.map_or_else(
                || {
                    stop.unwrap_or(0).saturating_sub(start.0) as f64 / interval.0.max(1) as f64
                        + 1.0
                },
                |c| c as f64,
            );
            Flows {
                total: 2.0 * requests,
                open: 2.0 * requests,
                packets_each: packets_of(Some(size.0), mss),
            }
        }
    }
}

fn fastest_rate(sc: &Scenario) -> f64 {
    sc.topology
        .links()
        .iter()
        .map(|l| l.rate.0)
        .chain(sc.host.links.iter().map(|l| l.rate.0))
        .max()
        .unwrap_or(1) as f64
}
