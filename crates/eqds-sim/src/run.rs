//! Running one scenario into an output directory: what the CLI and the tests share.

use crate::output;
use crate::scenario::Loaded;
use crate::sim::{RunStats, Simulation};
use crate::units::Time;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// Everything a finished run reports.
pub struct Outcome {
    pub stats: RunStats,
    /// The deterministic summary (also written to `summary.json`).
    pub summary: Value,
    pub wall: Duration,
    /// Peak resident memory of this process, if the OS tells.
    pub peak_rss_bytes: Option<u64>,
}

impl Outcome {
    pub fn events_per_second(&self) -> f64 {
        self.stats.events as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// Why a run did not finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Refused before the simulation started: a workload's file, a combination the
    /// loader cannot see, or an output directory that cannot be made. The CLI exits
    /// 2 for these, as for any other bad input.
    #[error("{0}")]
    Input(String),
    /// The run, or writing its results, failed.
    #[error("{0}")]
    Failed(String),
}

/// Runs `loaded` and writes its outputs into `out_dir` (created if missing).
pub fn run_to_dir(
    loaded: &Loaded,
    out_dir: &Path,
    progress: &mut dyn FnMut(Time, u64),
) -> Result<Outcome, RunError> {
    std::fs::create_dir_all(out_dir)
        .map_err(|e| RunError::Input(format!("cannot create `{}`: {e}", out_dir.display())))?;
    let started = Instant::now();
    let mut sim = Simulation::new(loaded, Some(out_dir)).map_err(RunError::Input)?;
    write_results(loaded, &mut sim, out_dir, progress, started).map_err(RunError::Failed)
}

/// Runs a built simulation to its end and writes its outputs into `out_dir`.
fn write_results(
    loaded: &Loaded,
    sim: &mut Simulation,
    out_dir: &Path,
    progress: &mut dyn FnMut(Time, u64),
    started: Instant,
) -> Result<Outcome, String> {
    let io =
        |what: &str, e: std::io::Error| format!("writing {what} in `{}`: {e}", out_dir.display());
    let stats = sim.run(progress)?;
    let ended = Instant::now();
    let wall = ended - started;
    let (net, flows, warmup) = (sim.network(), sim.flows(), sim.warmup());
    output::write_flows_csv(&out_dir.join("flows.csv"), flows, warmup, stats.end_time)
        .map_err(|e| io("flows.csv", e))?;
    if loaded.scenario.output.ports_csv {
        output::write_ports_csv(&out_dir.join("ports.csv"), net, stats.end_time)
            .map_err(|e| io("ports.csv", e))?;
    }
    if let Some(log) = sim.rate_log() {
        output::series::write_rates_csv(&out_dir.join("rates.csv"), log)
            .map_err(|e| io("rates.csv", e))?;
    }
    if let (true, Some(eqds)) = (loaded.scenario.output.paths_csv, sim.eqds()) {
        output::write_paths_csv(&out_dir.join("paths.csv"), eqds)
            .map_err(|e| io("paths.csv", e))?;
    }
    let mut summary = output::summary(loaded, net, flows, &stats, warmup);
    if let Some(pfc) = output::pfc_summary(net, stats.end_time) {
        summary["pfc"] = pfc;
    }
    if let Some(iofd) = output::iofd_summary(net) {
        summary["iofd"] = iofd;
    }
    if let Some(hw) = output::trimming_hw::summary(net) {
        summary["trimming_hw"] = hw;
    }
    let out = &loaded.scenario.output;
    if let (true, Some(hw)) = (out.mode_series, net.trimming_hw.as_deref()) {
        let (_, log) = hw.modes_at_end(stats.end_time);
        output::trimming_hw::write_modes_csv(&out_dir.join("modes.csv"), &log)
            .map_err(|e| io("modes.csv", e))?;
    }
    if out.pipelines_csv {
        output::trimming_hw::write_pipelines_csv(&out_dir.join("pipelines.csv"), net)
            .map_err(|e| io("pipelines.csv", e))?;
    }
    if let Some(log) = sim.arrivals() {
        output::trimming_hw::write_arrivals_csv(&out_dir.join("arrivals.csv"), log)
            .map_err(|e| io("arrivals.csv", e))?;
    }
    if let Some(eqds) = sim.eqds_summary() {
        summary["eqds"] = eqds;
    }
    if let Some(roce) = sim.roce_summary() {
        summary["roce"] = roce;
    }
    let text = serde_json::to_string_pretty(&summary).expect("JSON values always serialise");
    std::fs::write(out_dir.join("summary.json"), text + "\n").map_err(|e| io("summary.json", e))?;
    let outcome = Outcome {
        stats,
        summary,
        wall,
        peak_rss_bytes: peak_rss_bytes(),
    };
    // The rate from the first event at or after warm-up to the end: per-event cost
    // without building the network and without the start-up transient (memory the
    // run grows into, windows filling), for comparing runs of different sizes.
    let after_warmup = outcome.stats.warmed_at.map(|(before, at)| {
        let (events, wall) = (outcome.stats.events - before, (ended - at).as_secs_f64());
        #[cfg_attr(not(feature = "event-costs"), allow(unused_mut))]
        let mut a = json!({
            "events": events,
            "wall_time_s": wall,
            "events_per_second": events as f64 / wall.max(1e-9),
        });
        #[cfg(feature = "event-costs")]
        if let Some((costs, ticks)) = &outcome.stats.event_costs {
            a["event_costs"] = costs.report(*ticks, wall * 1e9, events);
        }
        a
    });
    let perf = json!({
        "look_ahead": sim.looks_ahead(),
        "wall_time_s": outcome.wall.as_secs_f64(),
        "events": outcome.stats.events,
        "events_per_second": outcome.events_per_second(),
        "after_warmup": after_warmup,
        "peak_rss_bytes": outcome.peak_rss_bytes,
        "simulated_time_ps": outcome.stats.end_time,
    });
    std::fs::write(
        out_dir.join("perf.json"),
        serde_json::to_string_pretty(&perf).expect("valid JSON") + "\n",
    )
    .map_err(|e| io("perf.json", e))?;
    Ok(outcome)
}

/// Peak resident set size (VmHWM) of this process, on Linux.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
