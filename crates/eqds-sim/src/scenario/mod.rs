//! Scenario files: the TOML a user writes, its validation, and `--set` overrides.
//!
//! A scenario is plain data. Every table denies unknown fields, so a typo is an error
//! that names the field, not a silently ignored setting. Loading never panics: every
//! problem comes back as a [`ScenarioError`] naming the file and the field.

mod eqds;
mod iofd;
mod overrides;
mod pfc;
mod retag;
mod transport;
mod trimming_hw;

pub use eqds::{EqdsSpec, EqifKind, EqifSpec, FeedbackKind, RdmaEqif, MAX_EQIFS, SHARED_KEYS};
pub use iofd::IofdSpec;
pub use overrides::apply_override;
pub use pfc::{PfcSpec, WatchdogSpec};
pub use transport::{
    Coupling, DcqcnProfile, DcqcnSpec, RoceOpcode, RoceRecovery, RoceSpec, TransportSpec,
    ROCE_RETH_BYTES,
};
pub use trimming_hw::{parse_model, PipelinesSpec, DEFAULT_TRIM_COUNT};

use crate::net::queue::QueueSpec;
use crate::net::switch::LoadBalancing;
use crate::net::topology::TopologySpec;
use crate::net::HostLinkOverride;
use crate::units::value::{Duration, Rate};
use crate::workload::WorkloadSpec;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Value;

/// A problem with a scenario file; the message names the file and the field.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ScenarioError {
    pub file: String,
    pub message: String,
}

/// The whole scenario file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Free-form name, echoed in the summary.
    pub name: Option<String>,
    /// Seed of the run's only random generator.
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub topology: TopologySpec,
    #[serde(default)]
    pub switch: SwitchSpec,
    #[serde(default)]
    pub host: HostSpec,
    #[serde(default)]
    pub transport: TransportSpec,
    #[serde(default)]
    pub eqds: EqdsSpec,
    /// Priority flow control on every switch and NIC (off by default).
    #[serde(default)]
    pub pfc: PfcSpec,
    /// Blitz's in-order flow deflection in the switches (off by default).
    #[serde(default)]
    pub iofd: IofdSpec,
    /// `[workload]` for one workload or `[[workload]]` for several.
    pub workload: Vec<WorkloadSpec>,
    pub stop: StopSpec,
    #[serde(default)]
    pub output: OutputSpec,
}

fn default_seed() -> u64 {
    1
}

/// `[switch]`: what every switch port does.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchSpec {
    /// Forwarding latency from input to output queue.
    #[serde(default = "zero")]
    pub latency: Duration,
    #[serde(default)]
    pub load_balancing: LoadBalancing,
    /// Queue discipline of every switch output port.
    #[serde(default = "default_switch_queue")]
    pub queue: QueueSpec,
    /// Queue discipline of the switch ports whose link goes to a host (the last
    /// hop), if not `queue`: Blitz leaves ECN marking off there, since its receivers
    /// apportion their own link (DASR), and only in-network congestion should slow
    /// DCQCN down.
    pub edge_queue: Option<QueueSpec>,
    /// Queue discipline per port tier (`leaf_up`, `spine_down`, ...), overriding
    /// `edge_queue` and `queue` for the switch ports of that tier: buffers and
    /// marking thresholds differ between tiers on real fabrics (the AFQ paper's
    /// leaf-spine has 512 KB at the leaves and 1 MB at the spines, DCTCP's K is 20
    /// packets at 10 Gbps and 80 at 40 Gbps).
    #[serde(default)]
    pub tier_queue: BTreeMap<String, QueueSpec>,
    /// `"output_queued"` (default: every port's queue is the whole switch; with
    /// trimming queues, the trimming paper's Ideal switch), or a switch whose traffic
    /// manager cannot trim: `"deflect_on_drop"`, `"tofino"`, `"mirror_on_drop"`,
    /// `"tofino2"` (the trimming paper, §3-§6; `net::trimming_hw`).
    #[serde(default = "default_model")]
    pub model: String,
    /// `[switch.pipelines]`: the hardware model's parameters (`scenario::trimming_hw`).
    pub pipelines: Option<PipelinesSpec>,
}

impl Default for SwitchSpec {
    fn default() -> Self {
        SwitchSpec {
            latency: zero(),
            load_balancing: LoadBalancing::Ecmp,
            queue: default_switch_queue(),
            edge_queue: None,
            tier_queue: BTreeMap::new(),
            model: default_model(),
            pipelines: None,
        }
    }
}

fn default_model() -> String {
    "output_queued".into()
}

fn zero() -> Duration {
    Duration(0)
}

fn default_switch_queue() -> QueueSpec {
    QueueSpec::DropTail {
        limit_packets: Some(100),
        limit_bytes: None,
    }
}

/// `[host]`: the hosts' NIC queues, and links that differ from the topology's.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// NIC queue (default: drop-tail, 100 packets). A sender whose window outgrows
    /// its own link loses packets here, as a host whose qdisc overflows would.
    #[serde(default = "default_host_queue")]
    pub queue: QueueSpec,
    /// Hosts whose link (both directions) runs at another rate or latency than the
    /// topology gives them: testbeds mix NIC speeds within a rack.
    #[serde(default)]
    pub links: Vec<HostLinks>,
}

/// One entry of `[host] links`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostLinks {
    pub hosts: Vec<u32>,
    pub rate: Rate,
    /// Default: the latency the topology gives the host's link.
    pub latency: Option<Duration>,
}

impl Default for HostSpec {
    fn default() -> Self {
        HostSpec {
            queue: default_host_queue(),
            links: Vec::new(),
        }
    }
}

impl HostSpec {
    /// Checks `links` against a network of `n_hosts` hosts.
    fn validate_links(&self, n_hosts: u32) -> Result<(), String> {
        let mut seen = vec![false; n_hosts as usize];
        for (i, o) in self.links.iter().enumerate() {
            if o.hosts.is_empty() {
                return Err(format!("links[{i}].hosts: list at least one host"));
            }
            if o.rate.0 == 0 {
                return Err(format!("links[{i}].rate: must be positive"));
            }
            for &h in &o.hosts {
                let Some(slot) = seen.get_mut(h as usize) else {
                    return Err(format!(
                        "links[{i}].hosts: no host {h} (the topology has {n_hosts}, \
                         numbered from 0)"
                    ));
                };
                if std::mem::replace(slot, true) {
                    return Err(format!("links[{i}].hosts: host {h} is listed twice"));
                }
            }
        }
        Ok(())
    }

    /// Per host, the link it gets instead of the topology's, if any.
    pub fn link_overrides(&self, n_hosts: u32) -> Vec<Option<HostLinkOverride>> {
        let mut out = vec![None; n_hosts as usize];
        for o in &self.links {
            for &h in &o.hosts {
                out[h as usize] = Some(HostLinkOverride {
                    rate_bps: o.rate.0,
                    latency: o.latency.map(|d| d.0),
                });
            }
        }
        out
    }
}

fn default_host_queue() -> QueueSpec {
    QueueSpec::DropTail {
        limit_packets: Some(100),
        limit_bytes: None,
    }
}

/// `[stop]`: when the run ends.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopSpec {
    /// Simulated time at which the run ends.
    pub time: Option<Duration>,
    /// End as soon as every flow has completed (default true).
    #[serde(default = "yes")]
    pub when_flows_complete: bool,
    /// Steady-state throughput of unfinished flows is measured from here to the end.
    #[serde(default = "zero")]
    pub warmup: Duration,
}

fn yes() -> bool {
    true
}

/// `[output]`: what the run writes besides `flows.csv` and `summary.json`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Per-port counters in `ports.csv`.
    #[serde(default)]
    pub ports_csv: bool,
    /// Per-path counters and RTTs of every EQDS tunnel in `paths.csv`.
    #[serde(default)]
    pub paths_csv: bool,
    /// Queue-occupancy time series in `queues.csv`.
    pub queue_series: Option<QueueSeriesSpec>,
    /// Per-flow delivered-throughput time series in `flow_series.csv`.
    pub flow_series: Option<FlowSeriesSpec>,
    /// Every change of a RoCE sender's pacing rate in `rates.csv`.
    #[serde(default)]
    pub rates_csv: bool,
    /// Per-pipeline counters of a hardware trimming switch in `pipelines.csv`.
    #[serde(default)]
    pub pipelines_csv: bool,
    /// Every mode change of a `tofino` switch's feedback loop in `modes.csv` (the
    /// trimming paper's Figure 7).
    #[serde(default)]
    pub mode_series: bool,
    /// Every data packet, whole or trimmed, reaching a host, in `arrivals.csv`.
    pub arrivals: Option<ArrivalsSpec>,
    /// Where the wall time past warm-up goes, by kind of event, in `perf.json`
    /// (`engine::event_costs`). Needs eqds-sim built with the `event-costs`
    /// feature: a build without it has no trace of the timing in its event loop.
    #[serde(default)]
    pub event_costs: bool,
}

/// `[output] arrivals`: which arrivals `arrivals.csv` lists.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrivalsSpec {
    /// Only trimmed headers (the trimming paper's Figure 5 plots their latency).
    #[serde(default)]
    pub trimmed_only: bool,
    /// Only these flow ids; every flow if absent.
    pub flows: Option<Vec<u32>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSeriesSpec {
    pub interval: Duration,
    /// Only ports of these tiers (e.g. "tor_down"); all tiers if absent.
    pub tiers: Option<Vec<String>>,
    /// Only these port ids; all if absent.
    pub ports: Option<Vec<u32>>,
    /// Also count, at every sample, the packets each flow holds in each selected
    /// port's queue, and write how often a flow held how many per tier to
    /// `queue_flows.csv` (the AFQ paper's Figure 10c).
    #[serde(default)]
    pub flows: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSeriesSpec {
    pub interval: Duration,
}

/// A scenario as loaded: the parsed file, the table it came from (echoed in the
/// summary), and the directory relative paths resolve against.
pub struct Loaded {
    pub scenario: Scenario,
    pub table: toml::Table,
    pub base_dir: PathBuf,
    pub file: String,
    /// Per workload, the flows of its htsim matrix (`None` for other kinds), read
    /// and checked as the scenario loads.
    pub matrices: Vec<Option<Vec<crate::flow::FlowSpec>>>,
}

impl Scenario {
    /// Reads, overrides (`key=value` strings, as `--set` gives them) and validates a
    /// scenario file.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Loaded, ScenarioError> {
        let file = path.display().to_string();
        let err = |message: String| ScenarioError {
            file: file.clone(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
        let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::from_str_with(&text, &file, base_dir, overrides)
    }

    /// Like [`load`](Self::load) for text already in memory (`file` names it in errors).
    pub fn from_str_with(
        text: &str,
        file: &str,
        base_dir: PathBuf,
        overrides: &[String],
    ) -> Result<Loaded, ScenarioError> {
        let err = |message: String| ScenarioError {
            file: file.to_string(),
            message,
        };
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| err(e.to_string()))?;
        for o in overrides {
            apply_override(&mut table, o).map_err(|e| err(format!("--set {o}: {e}")))?;
        }
        let mut shaped = table.clone();
        retag::retag_scenario(&mut shaped).map_err(err)?;
        let scenario: Scenario =
            serde_path_to_error::deserialize(Value::Table(shaped)).map_err(|e| {
                // The shared keys of `[eqds]` sit a level down while they are read.
                let path = e.path().to_string().replace(&format!(".{SHARED_KEYS}"), "");
                let inner = e.into_inner().to_string();
                // toml appends its own (pre-retag) key path; ours is more precise.
                let inner = match inner.rsplit_once("\nin `") {
                    Some((msg, _)) => msg.to_string(),
                    None => inner,
                };
                if path.is_empty() || path == "." {
                    err(inner)
                } else {
                    err(format!("`{path}`: {inner}"))
                }
            })?;
        scenario.validate().map_err(err)?;
        let matrices = scenario.read_matrices(&base_dir).map_err(err)?;
        Ok(Loaded {
            scenario,
            table,
            base_dir,
            file: file.to_string(),
            matrices,
        })
    }

    /// Reads the htsim matrices of the workloads and checks them against the rest
    /// of the scenario: a matrix flow without a `size` never ends, so the run then
    /// needs `stop.time` as any other endless workload does.
    fn read_matrices(
        &self,
        base_dir: &Path,
    ) -> Result<Vec<Option<Vec<crate::flow::FlowSpec>>>, String> {
        let workloads = self.workload.as_slice();
        let n_hosts = self.topology.n_hosts() as u32;
        let mut matrices = Vec::with_capacity(workloads.len());
        for (i, w) in workloads.iter().enumerate() {
            let name = if workloads.len() == 1 {
                "workload".to_string()
            } else {
                format!("workload[{i}]")
            };
            let flows = w
                .read_matrix(base_dir, n_hosts, self.transport.protocol)
                .map_err(|e| format!("{name}.{e}"))?;
            if let (Some(flows), None) = (&flows, self.stop.time) {
                if let Some(f) = flows.iter().find(|f| f.size.is_none()) {
                    return Err(format!(
                        "stop.time: required because {name}'s htsim matrix has a flow \
                         without `size` ({}->{}), which never ends",
                        f.src, f.dst
                    ));
                }
            }
            matrices.push(flows);
        }
        Ok(matrices)
    }

    /// Cross-field checks that serde cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.output.event_costs && !cfg!(feature = "event-costs") {
            return Err(
                "output.event_costs: this eqds-sim was built without timing; \
                 build it with `cargo build --release -p eqds-sim --features event-costs`"
                    .into(),
            );
        }
        self.topology
            .validate()
            .map_err(|e| format!("topology.{e}"))?;
        self.switch
            .queue
            .validate()
            .map_err(|e| format!("switch.queue: {e}"))?;
        if let Some(q) = &self.switch.edge_queue {
            q.validate()
                .map_err(|e| format!("switch.edge_queue: {e}"))?;
        }
        let tiers = self.topology.switch_tiers();
        for (tier, q) in &self.switch.tier_queue {
            if !tiers.contains(&tier.as_str()) {
                return Err(format!(
                    "switch.tier_queue.{tier}: this topology has no switch port tier \
                     `{tier}` (its tiers: {})",
                    tiers.join(", ")
                ));
            }
            q.validate()
                .map_err(|e| format!("switch.tier_queue.{tier}: {e}"))?;
        }
        self.host
            .queue
            .validate()
            .map_err(|e| format!("host.queue: {e}"))?;
        self.iofd
            .validate(self.switch.load_balancing)
            .map_err(|e| format!("iofd.{e}"))?;
        trimming_hw::validate(self)?;
        self.host
            .validate_links(self.topology.n_hosts() as u32)
            .map_err(|e| format!("host.{e}"))?;
        self.transport
            .validate()
            .map_err(|e| format!("transport.{e}"))?;
        self.eqds
            .validate(self.transport.mtu.0, self.transport.header.0)
            .map_err(|e| format!("eqds.{e}"))?;
        if let Some(pfc) = self
            .pfc
            .resolve(self.transport.mtu.0 as u32, 1)
            .map_err(|e| format!("pfc.{e}"))?
        {
            pfc::check_lossless_queue(&self.switch.queue, pfc.lossless, "switch.queue")?;
            pfc::check_lossless_queue(&self.host.queue, pfc.lossless, "host.queue")?;
            if let Some(q) = &self.switch.edge_queue {
                pfc::check_lossless_queue(q, pfc.lossless, "switch.edge_queue")?;
            }
            for (tier, q) in &self.switch.tier_queue {
                pfc::check_lossless_queue(q, pfc.lossless, &format!("switch.tier_queue.{tier}"))?;
            }
        }
        let n_hosts = self.topology.n_hosts() as u32;
        let workloads = self.workload.as_slice();
        if workloads.is_empty() {
            return Err("workload: at least one workload is needed".into());
        }
        if let Some(i) = self
            .eqds
            .legacy_workloads
            .iter()
            .find(|&&i| i as usize >= workloads.len())
        {
            return Err(format!(
                "eqds.legacy_workloads: no workload {i} (there are {}, numbered from 0)",
                workloads.len()
            ));
        }
        let mut eqif_of = vec![None; workloads.len()];
        for (e, eqif) in self.eqds.eqifs.iter().enumerate() {
            for &w in &eqif.workloads {
                let Some(slot) = eqif_of.get_mut(w as usize) else {
                    return Err(format!(
                        "eqds.eqifs[{e}].workloads: no workload {w} (there are {}, numbered \
                         from 0)",
                        workloads.len()
                    ));
                };
                if let Some(other) = slot.replace(e) {
                    return Err(format!(
                        "eqds.eqifs[{e}].workloads: workload {w} already writes into \
                         eqds.eqifs[{other}]"
                    ));
                }
                if self.eqds.legacy_workloads.contains(&w) {
                    return Err(format!(
                        "eqds.eqifs[{e}].workloads: workload {w} is legacy traffic \
                         (eqds.legacy_workloads), which goes around EQDS"
                    ));
                }
            }
        }
        if self.eqds.legacy_class.is_some() && self.eqds.legacy_workloads.is_empty() {
            return Err("eqds.legacy_class: there are no legacy_workloads to give it to".into());
        }
        for (i, w) in workloads.iter().enumerate() {
            let name = if workloads.len() == 1 {
                "workload".to_string()
            } else {
                format!("workload[{i}]")
            };
            w.validate(n_hosts).map_err(|e| format!("{name}.{e}"))?;
        }
        if let Some(Duration(0)) = self.stop.time {
            return Err("stop.time: must be positive".into());
        }
        if self.stop.time.is_none() {
            if !self.stop.when_flows_complete {
                return Err("stop: give `time`, or set `when_flows_complete = true`".into());
            }
            if let Some(w) = workloads.iter().find(|w| w.is_unbounded()) {
                return Err(format!(
                    "stop.time: required because the `{}` workload never finishes on its own",
                    w.kind_name()
                ));
            }
        }
        if let Some(t) = self.stop.time {
            if self.stop.warmup.0 >= t.0 {
                return Err("stop.warmup: must be shorter than stop.time".into());
            }
        }
        for (name, interval) in [
            (
                "output.queue_series.interval",
                self.output.queue_series.as_ref().map(|q| q.interval),
            ),
            (
                "output.flow_series.interval",
                self.output.flow_series.as_ref().map(|q| q.interval),
            ),
        ] {
            if interval == Some(Duration(0)) {
                return Err(format!("{name}: must be positive"));
            }
        }
        Ok(())
    }
}
