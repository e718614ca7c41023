//! Workloads: which flows a run has, and when they start.
//!
//! Most workloads are a list of flows fixed before the run (permutation, incast,
//! all-to-all, Poisson arrivals, an htsim connection matrix, an explicit list). Two
//! follow flows up as they complete ([`FollowUp`]): in the closed loop each completion
//! starts the next download, and a ping's request, once arrived, starts its reply.

mod cdf;
mod closed_loop;
mod hosts;
mod htsim_cm;
mod pareto;
mod patterns;
mod ping;
mod poisson;

pub use hosts::HostList;

pub use cdf::FlowSizeCdf;
pub use closed_loop::ClosedLoop;
pub use pareto::{Pareto, ParetoSpec};
pub use ping::Ping;
pub use poisson::Sizes;

use crate::engine::SimRng;
use crate::flow::{FlowRecord, FlowSpec, Protocol};
use crate::ids::HostId;
use crate::net::Network;
use crate::units::value::{Bytes, Duration};
use crate::units::Time;
use rand::Rng;
use serde::Deserialize;
use std::path::Path;

/// One `[workload]` table (`kind = "..."` selects the variant). Every variant may set
/// `protocol` to override `transport.protocol` for its flows.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// Every host sends to exactly one other host and receives from exactly one.
    Permutation {
        /// Bytes per flow; absent for flows that never end.
        size: Option<Bytes>,
        /// Flows start at `start`, or uniformly within `[start, start + start_spread)`.
        #[serde(default)]
        start: Duration,
        #[serde(default)]
        start_spread: Duration,
        /// Never pair two hosts under the same ToR.
        #[serde(default)]
        exclude_same_rack: bool,
        protocol: Option<Protocol>,
    },
    /// `senders` hosts (chosen at random, or the listed `sender_hosts`) send to `receiver`.
    Incast {
        #[serde(default)]
        receiver: u32,
        senders: Option<u32>,
        sender_hosts: Option<HostList>,
        size: Option<Bytes>,
        /// Flows start at `start`, or uniformly within `[start, start + start_spread)`.
        #[serde(default)]
        start: Duration,
        #[serde(default)]
        start_spread: Duration,
        protocol: Option<Protocol>,
    },
    /// Every one of the first `hosts` hosts (all by default) sends to every other.
    AllToAll {
        size: Option<Bytes>,
        hosts: Option<u32>,
        /// Flows start at `start`, or uniformly within `[start, start + start_spread)`.
        #[serde(default)]
        start: Duration,
        #[serde(default)]
        start_spread: Duration,
        protocol: Option<Protocol>,
    },
    /// Each client keeps `concurrency` downloads of `size` bytes from random servers
    /// running back to back (the EQDS paper's 1 MB storage workload).
    ClosedLoop {
        size: Bytes,
        /// Hosts that download (the first `clients`; all by default).
        clients: Option<u32>,
        /// The hosts that download, instead of the first `clients`.
        client_hosts: Option<HostList>,
        /// Bind the clients to these servers, client k to `server_hosts[k % len]`
        /// (default: each download from a random other host).
        server_hosts: Option<HostList>,
        #[serde(default = "one")]
        concurrency: u32,
        /// Pause between a completion and the next request.
        #[serde(default)]
        think_time: Duration,
        /// Flows start at `start`, or uniformly within `[start, start + start_spread)`.
        #[serde(default)]
        start: Duration,
        #[serde(default)]
        start_spread: Duration,
        protocol: Option<Protocol>,
    },
    /// Open-loop Poisson arrivals at `load` (fraction of the hosts' aggregate link
    /// rate) between random pairs, sizes drawn from a CDF (a file, or the bundled
    /// `websearch` / `datamining` / `enterprise`) or a Pareto distribution: one of
    /// `cdf` and `pareto`.
    Poisson {
        load: f64,
        cdf: Option<String>,
        pareto: Option<ParetoSpec>,
        #[serde(default)]
        start: Duration,
        /// Only these hosts send (all by default).
        sender_hosts: Option<HostList>,
        /// Only these hosts receive (all by default): with `sender_hosts`, traffic in
        /// one direction, as from the AFQ testbed's servers to its clients (§6.1).
        receiver_hosts: Option<HostList>,
        protocol: Option<Protocol>,
    },
    /// An htsim connection-matrix file (`Nodes N`, `Connections C`, `a->b ...` lines).
    Htsim {
        file: String,
        protocol: Option<Protocol>,
    },
    /// `src` pings `dst`: a request of `size` bytes every `interval` from `start`
    /// (`count` of them, or until `stop.time`), each answered by a reply of the same
    /// size the moment it arrives (ICMP echo).
    Ping {
        src: u32,
        dst: u32,
        interval: Duration,
        #[serde(default = "ping_size")]
        size: Bytes,
        count: Option<u64>,
        #[serde(default)]
        start: Duration,
        protocol: Option<Protocol>,
    },
    /// Flows listed one by one.
    Flows {
        flows: Vec<FlowEntry>,
        protocol: Option<Protocol>,
    },
}

fn one() -> u32 {
    1
}

/// An ICMP echo of ping's default 56 data bytes: 8 bytes of ICMP header on top.
fn ping_size() -> Bytes {
    Bytes(64)
}

/// A start time: `start`, or uniform within `[start, start + spread)`.
fn draw_start(start: Duration, spread: Duration, rng: &mut SimRng) -> Time {
    if spread.0 == 0 {
        start.0
    } else {
        start.0 + rng.random_range(0..spread.0)
    }
}

/// One flow of a `flows` workload.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowEntry {
    pub src: u32,
    pub dst: u32,
    pub size: Option<Bytes>,
    #[serde(default)]
    pub start: Duration,
}

/// What a workload gives the run: flows known up front and, for a closed loop or a
/// ping, what makes the rest.
pub struct Plan {
    pub flows: Vec<FlowSpec>,
    pub follow_up: Option<FollowUp>,
}

/// A workload that adds flows as its flows complete.
pub enum FollowUp {
    ClosedLoop(ClosedLoop),
    Ping(Ping),
}

impl FollowUp {
    /// The flow that `done` (one of this workload's, ended at `now`) starts, if any.
    pub fn next(&self, rng: &mut SimRng, done: &FlowRecord, now: Time) -> Option<FlowSpec> {
        match self {
            FollowUp::ClosedLoop(driver) => Some(driver.next(rng, done, now)),
            FollowUp::Ping(ping) => ping.reply(done, now),
        }
    }

    /// True if it never stops adding flows.
    pub fn is_endless(&self) -> bool {
        matches!(self, FollowUp::ClosedLoop(_))
    }
}

/// What generating a workload may look at.
pub struct GenCtx<'a> {
    pub net: &'a Network,
    pub rng: &'a mut SimRng,
    /// The run's end, if it has one.
    pub stop: Option<Time>,
    /// Directory relative file names resolve against.
    pub base_dir: &'a Path,
    /// The scenario's default protocol.
    pub protocol: Protocol,
    /// The flows of this workload's htsim matrix, read when the scenario loaded.
    pub matrix: Option<&'a [FlowSpec]>,
}

/// A Poisson workload's sizes: its `cdf` (read relative to `base_dir`) or its
/// `pareto`; errors start with the key.
pub fn poisson_sizes(
    cdf: Option<&str>,
    pareto: Option<ParetoSpec>,
    base_dir: &Path,
) -> Result<Sizes, String> {
    match (cdf, pareto) {
        (_, Some(p)) => p.validate().map(Sizes::Pareto),
        (Some(c), None) => FlowSizeCdf::load(c, base_dir)
            .map(Sizes::Cdf)
            .map_err(|e| format!("cdf: {e}")),
        (None, None) => Err("cdf: missing".into()),
    }
}

fn check_host(field: &str, h: u32, n_hosts: u32) -> Result<(), String> {
    if h >= n_hosts {
        Err(format!(
            "{field}: host {h} does not exist (the topology has hosts 0..{})",
            n_hosts - 1
        ))
    } else {
        Ok(())
    }
}

/// A Poisson workload's `sender_hosts` and `receiver_hosts` (either may be absent: all
/// hosts): each non-empty, hosts that exist, none listed twice, and a receiver other
/// than itself for every sender.
fn check_pairs(
    senders: Option<&[u32]>,
    receivers: Option<&[u32]>,
    n_hosts: u32,
) -> Result<(), String> {
    for (name, list) in [("sender_hosts", senders), ("receiver_hosts", receivers)] {
        let Some(list) = list else { continue };
        if list.is_empty() {
            return Err(format!(
                "{name}: must not be empty (leave it out for every host)"
            ));
        }
        let mut seen = std::collections::HashSet::with_capacity(list.len());
        for (i, &h) in list.iter().enumerate() {
            check_host(&format!("{name}[{i}]"), h, n_hosts)?;
            if !seen.insert(h) {
                return Err(format!("{name}[{i}]: host {h} is listed twice"));
            }
        }
    }
    // Only a lone receiver can leave a sender without a peer: the sender itself.
    if let Some(&[r]) = receivers {
        if senders.is_none_or(|s| s.contains(&r)) {
            return Err(format!(
                "receiver_hosts: host {r} is the only receiver and also a sender, so it would \
                 have no one to send to (leave it out of sender_hosts)"
            ));
        }
    }
    Ok(())
}

fn check_size(size: Option<Bytes>) -> Result<(), String> {
    if size == Some(Bytes(0)) {
        Err("size: must be at least 1 byte (leave it out for a flow that never ends)".into())
    } else {
        Ok(())
    }
}

impl WorkloadSpec {
    pub fn kind_name(&self) -> &'static str {
        match self {
            WorkloadSpec::Permutation { .. } => "permutation",
            WorkloadSpec::Incast { .. } => "incast",
            WorkloadSpec::AllToAll { .. } => "all_to_all",
            WorkloadSpec::ClosedLoop { .. } => "closed_loop",
            WorkloadSpec::Poisson { .. } => "poisson",
            WorkloadSpec::Htsim { .. } => "htsim",
            WorkloadSpec::Ping { .. } => "ping",
            WorkloadSpec::Flows { .. } => "flows",
        }
    }

    /// True if the workload never finishes by itself (so the run needs `stop.time`).
    pub fn is_unbounded(&self) -> bool {
        match self {
            WorkloadSpec::Permutation { size, .. }
            | WorkloadSpec::Incast { size, .. }
            | WorkloadSpec::AllToAll { size, .. } => size.is_none(),
            WorkloadSpec::ClosedLoop { .. } | WorkloadSpec::Poisson { .. } => true,
            WorkloadSpec::Ping { count, .. } => count.is_none(),
            WorkloadSpec::Flows { flows, .. } => flows.iter().any(|f| f.size.is_none()),
            // Flows without a size never end: `Scenario::from_str_with` reads the
            // matrix to tell.
            WorkloadSpec::Htsim { .. } => false,
        }
    }

    /// Reads an htsim workload's matrix (relative to `base_dir`), so that its
    /// mistakes, and endless flows in a run without an end, are found when the
    /// scenario loads (`eqds-sim check`), not when it runs. `None` for other kinds.
    pub fn read_matrix(
        &self,
        base_dir: &Path,
        n_hosts: u32,
        default_protocol: Protocol,
    ) -> Result<Option<Vec<FlowSpec>>, String> {
        let WorkloadSpec::Htsim { file, protocol } = self else {
            return Ok(None);
        };
        let path = base_dir.join(file);
        htsim_cm::load(&path, n_hosts, protocol.unwrap_or(default_protocol))
            .map(Some)
            .map_err(|e| format!("file: {e}"))
    }

    /// Checks what can be checked without generating; errors start with the field.
    pub fn validate(&self, n_hosts: u32) -> Result<(), String> {
        match self {
            WorkloadSpec::Permutation { size, .. } => check_size(*size),
            WorkloadSpec::Incast {
                receiver,
                senders,
                sender_hosts,
                size,
                ..
            } => {
                check_size(*size)?;
                check_host("receiver", *receiver, n_hosts)?;
                match (senders, sender_hosts) {
                    (Some(_), Some(_)) => {
                        Err("senders: give `senders` or `sender_hosts`, not both".into())
                    }
                    (None, None) => {
                        Err("senders: missing (how many hosts send to the receiver)".into())
                    }
                    (Some(n), None) => {
                        if *n == 0 || *n >= n_hosts {
                            Err(format!("senders: must be from 1 to {} (hosts other than the receiver), got {n}", n_hosts - 1))
                        } else {
                            Ok(())
                        }
                    }
                    (None, Some(list)) => {
                        if list.is_empty() {
                            return Err("sender_hosts: must not be empty".into());
                        }
                        for (i, &h) in list.iter().enumerate() {
                            check_host(&format!("sender_hosts[{i}]"), h, n_hosts)?;
                            if h == *receiver {
                                return Err(format!("sender_hosts[{i}]: host {h} is the receiver"));
                            }
                        }
                        Ok(())
                    }
                }
            }
            WorkloadSpec::AllToAll { size, hosts, .. } => {
                check_size(*size)?;
                match hosts {
                    Some(h) if *h < 2 || *h > n_hosts => {
                        Err(format!("hosts: must be from 2 to {n_hosts}, got {h}"))
                    }
                    _ => Ok(()),
                }
            }
            WorkloadSpec::ClosedLoop {
                size,
                clients,
                client_hosts,
                server_hosts,
                concurrency,
                ..
            } => {
                check_size(Some(*size))?;
                if let Some(c) = clients {
                    if *c == 0 || *c > n_hosts {
                        return Err(format!("clients: must be from 1 to {n_hosts}, got {c}"));
                    }
                }
                if clients.is_some() && client_hosts.is_some() {
                    return Err("clients: give `clients` or `client_hosts`, not both".into());
                }
                for (name, list) in [
                    ("client_hosts", client_hosts),
                    ("server_hosts", server_hosts),
                ] {
                    if let Some(list) = list {
                        if list.is_empty() {
                            return Err(format!("{name}: must not be empty"));
                        }
                        for &h in list.iter() {
                            check_host(name, h, n_hosts)?;
                        }
                    }
                }
                if let (Some(c), Some(s)) = (client_hosts, server_hosts) {
                    if let Some((k, h)) = c.iter().enumerate().find(|&(k, h)| s[k % s.len()] == *h)
                    {
                        return Err(format!(
                            "server_hosts: client {h} (client_hosts[{k}]) would download from itself"
                        ));
                    }
                }
                if *concurrency == 0 {
                    return Err("concurrency: must be at least 1".into());
                }
                Ok(())
            }
            WorkloadSpec::Poisson {
                load,
                cdf,
                pareto,
                sender_hosts,
                receiver_hosts,
                ..
            } => {
                if !(*load > 0.0 && *load <= 1.0) {
                    return Err(format!("load: must be within (0, 1], got {load}"));
                }
                check_pairs(sender_hosts.as_deref(), receiver_hosts.as_deref(), n_hosts)?;
                match (cdf, pareto) {
                    (Some(_), Some(_)) => {
                        Err("pareto: give `cdf` or `pareto` for the sizes, not both".into())
                    }
                    (None, None) => Err(
                        "cdf: missing (give `cdf`, a CDF file or a bundled name, or `pareto`)"
                            .into(),
                    ),
                    (None, Some(p)) => p.validate().map(|_| ()),
                    (Some(_), None) => Ok(()),
                }
            }
            WorkloadSpec::Htsim { .. } => Ok(()),
            WorkloadSpec::Ping {
                src,
                dst,
                interval,
                size,
                count,
                start,
                ..
            } => {
                check_host("src", *src, n_hosts)?;
                check_host("dst", *dst, n_hosts)?;
                if src == dst {
                    return Err(format!("dst: host {dst} would ping itself"));
                }
                if interval.0 == 0 {
                    return Err("interval: must be longer than 0".into());
                }
                if *count == Some(0) {
                    return Err("count: must be at least 1".into());
                }
                if let Some(c) = count {
                    // The last request must start within the simulated time.
                    let last = (c - 1)
                        .checked_mul(interval.0)
                        .and_then(|t| t.checked_add(start.0))
                        .filter(|&t| t <= crate::units::MAX_DURATION);
                    if last.is_none() {
                        return Err(format!(
                            "count: {c} pings every {} would go on past the one day of \
                             simulated time we support",
                            crate::units::DisplayTime(interval.0)
                        ));
                    }
                }
                check_size(Some(*size))
            }
            WorkloadSpec::Flows { flows, .. } => {
                if flows.is_empty() {
                    return Err("flows: must not be empty".into());
                }
                for (i, f) in flows.iter().enumerate() {
                    check_host(&format!("flows[{i}].src"), f.src, n_hosts)?;
                    check_host(&format!("flows[{i}].dst"), f.dst, n_hosts)?;
                    if f.src == f.dst {
                        return Err(format!("flows[{i}]: src and dst are both host {}", f.src));
                    }
                    check_size(f.size).map_err(|e| format!("flows[{i}].{e}"))?;
                }
                Ok(())
            }
        }
    }

    /// Produces the flows. Errors (unreadable files, impossible pairings) name the field.
    pub fn generate(&self, ctx: &mut GenCtx) -> Result<Plan, String> {
        let n = ctx.net.n_hosts;
        let proto = |p: &Option<Protocol>| p.unwrap_or(ctx.protocol);
        let flow =
            |src: HostId, dst: HostId, size: Option<Bytes>, start: Time, protocol: Protocol| {
                FlowSpec {
                    src,
                    dst,
                    size: size.map(|b| b.0),
                    start,
                    protocol,
                    origin: 0,
                    legacy: false,
                }
            };
        let fixed = |flows| {
            Ok(Plan {
                flows,
                follow_up: None,
            })
        };
        match self {
            WorkloadSpec::Permutation {
                size,
                start,
                start_spread,
                exclude_same_rack,
                protocol,
            } => {
                let p = proto(protocol);
                let dsts = patterns::permutation(ctx.net, ctx.rng, *exclude_same_rack)?;
                let flows = (0..n)
                    .map(|s| {
                        flow(
                            s,
                            dsts[s as usize],
                            *size,
                            draw_start(*start, *start_spread, ctx.rng),
                            p,
                        )
                    })
                    .collect();
                fixed(flows)
            }
            WorkloadSpec::Incast {
                receiver,
                senders,
                sender_hosts,
                size,
                start,
                start_spread,
                protocol,
            } => {
                let p = proto(protocol);
                let list = match (senders, sender_hosts) {
                    (_, Some(list)) => list.to_vec(),
                    (Some(k), None) => patterns::choose_others(ctx.rng, n, *receiver, *k),
                    (None, None) => unreachable!("validated"),
                };
                fixed(
                    list.iter()
                        .map(|&s| {
                            flow(
                                s,
                                *receiver,
                                *size,
                                draw_start(*start, *start_spread, ctx.rng),
                                p,
                            )
                        })
                        .collect(),
                )
            }
            WorkloadSpec::AllToAll {
                size,
                hosts,
                start,
                start_spread,
                protocol,
            } => {
                let p = proto(protocol);
                let m = hosts.unwrap_or(n);
                let mut flows = Vec::with_capacity((m * (m - 1)) as usize);
                for s in 0..m {
                    for d in (0..m).filter(|&d| d != s) {
                        flows.push(flow(
                            s,
                            d,
                            *size,
                            draw_start(*start, *start_spread, ctx.rng),
                            p,
                        ));
                    }
                }
                fixed(flows)
            }
            WorkloadSpec::ClosedLoop {
                size,
                clients,
                client_hosts,
                server_hosts,
                concurrency,
                think_time,
                start,
                start_spread,
                protocol,
            } => {
                let mut driver = ClosedLoop::new(n, size.0, think_time.0, proto(protocol));
                let hosts: Vec<u32> = match client_hosts {
                    Some(list) => list.to_vec(),
                    None => (0..clients.unwrap_or(n)).collect(),
                };
                if let Some(servers) = server_hosts {
                    for (k, &c) in hosts.iter().enumerate() {
                        driver.bind(c, servers[k % servers.len()]);
                    }
                }
                let mut flows = Vec::new();
                for &c in &hosts {
                    for _ in 0..*concurrency {
                        let at = draw_start(*start, *start_spread, ctx.rng);
                        flows.push(driver.request(ctx.rng, c, at));
                    }
                }
                Ok(Plan {
                    flows,
                    follow_up: Some(FollowUp::ClosedLoop(driver)),
                })
            }
            WorkloadSpec::Poisson {
                load,
                cdf,
                pareto,
                start,
                sender_hosts,
                receiver_hosts,
                protocol,
            } => {
                let cdf = poisson_sizes(cdf.as_deref(), *pareto, ctx.base_dir)?;
                let stop = ctx
                    .stop
                    .ok_or("stop.time: a Poisson workload needs an end time")?;
                fixed(poisson::arrivals(
                    ctx.net,
                    ctx.rng,
                    &cdf,
                    *load,
                    start.0,
                    stop,
                    proto(protocol),
                    sender_hosts.as_deref(),
                    receiver_hosts.as_deref(),
                ))
            }
            WorkloadSpec::Htsim { file, protocol } => match ctx.matrix {
                Some(flows) => fixed(flows.to_vec()),
                None => {
                    let path = ctx.base_dir.join(file);
                    let flows = htsim_cm::load(&path, n, proto(protocol))
                        .map_err(|e| format!("file: {e}"))?;
                    fixed(flows)
                }
            },
            WorkloadSpec::Ping {
                src,
                dst,
                interval,
                size,
                count,
                start,
                protocol,
            } => {
                let count = match (count, ctx.stop) {
                    (Some(c), _) => *c,
                    // Every request that starts before the run ends.
                    (None, Some(stop)) => stop.saturating_sub(start.0).div_ceil(interval.0),
                    (None, None) => {
                        return Err("count: needed when the run has no stop.time".into())
                    }
                };
                let ping = Ping {
                    pinger: *src,
                    target: *dst,
                    size: size.0,
                    protocol: proto(protocol),
                };
                Ok(Plan {
                    flows: ping.requests(start.0, interval.0, count),
                    follow_up: Some(FollowUp::Ping(ping)),
                })
            }
            WorkloadSpec::Flows { flows, protocol } => {
                let p = proto(protocol);
                fixed(
                    flows
                        .iter()
                        .map(|f| flow(f.src, f.dst, f.size, f.start.0, p))
                        .collect(),
                )
            }
        }
    }
}
