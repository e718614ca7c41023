//! The `eqds-sim` command line.

/// mimalloc with its memory on transparent huge pages. A large run touches tens of
/// megabytes at random (packets, ports, queues, event buckets): with 4 KiB pages most
/// of those touches also miss the TLB, which under virtualisation costs a nested page
/// walk. Huge pages made the k=16 NDP permutation about 10% faster.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use eqds_sim::memory::Size;
use eqds_sim::run::{run_to_dir, RunError};
use eqds_sim::scenario::{Loaded, Scenario, ScenarioError};
use eqds_sim::units::{DisplayTime, Time};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const EXAMPLES: &str = "\
Examples:
  eqds-sim run scenarios/default.toml
  eqds-sim run scenarios/fat-tree-permutation.toml --set topology.k=8 --seed 7 --out out/k8
  eqds-sim run scenarios/incast.toml --set workload.senders=64 --set switch.queue.limit_packets=15
  eqds-sim check scenarios/*.toml

Outputs (in --out, default out/<scenario name>): flows.csv, summary.json, perf.json,
and, if the scenario asks, ports.csv, paths.csv, queues.csv, flow_series.csv.
The scenario format is described in docs/scenarios.md.";

#[derive(Parser)]
#[command(name = "eqds-sim", version, about = "Fast deterministic packet-level datacenter network simulator", after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario and write its results.
    Run {
        /// Scenario file (TOML).
        file: PathBuf,
        /// Override a scenario value, e.g. --set topology.k=8 (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
        /// Seed of the run's random generator (overrides the scenario's `seed`).
        #[arg(long)]
        seed: Option<u64>,
        /// Output directory (default: out/<scenario file stem>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print nothing but errors.
        #[arg(long, short)]
        quiet: bool,
        /// Refuse a run whose memory estimate exceeds this (e.g. 8GiB; default: the
        /// memory available on this machine).
        #[arg(long, value_name = "SIZE", value_parser = parse_memory)]
        max_memory: Option<u64>,
    },
    /// Validate scenario files without running them.
    Check {
        /// Scenario files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Overrides applied before validation, as for `run`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
        /// Refuse scenarios whose memory estimate exceeds this, as `run` would.
        #[arg(long, value_name = "SIZE", value_parser = parse_memory)]
        max_memory: Option<u64>,
    },
}

/// `--max-memory`: a size as scenario files write them (`8GiB`, `512MB`, bytes).
fn parse_memory(s: &str) -> Result<u64, String> {
    match eqds_sim::units::parse_bytes(s)? {
        0 => Err("must be more than 0 bytes".into()),
        b => Ok(b),
    }
}

/// The memory limit: `--max-memory`, or what the machine has available now.
fn memory_limit(max_memory: Option<u64>) -> Option<u64> {
    max_memory.or_else(eqds_sim::memory::available)
}

/// Refuses a scenario whose estimated memory exceeds the limit, before anything of
/// it is built.
fn check_memory(loaded: &Loaded, limit: Option<u64>) -> Result<(), String> {
    let Some(limit) = limit else { return Ok(()) };
    eqds_sim::memory::estimate(loaded).check(limit)
}

fn main() -> ExitCode {
    eqds_sim::memory::configure_allocator();
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            file,
            mut overrides,
            seed,
            out,
            quiet,
            max_memory,
        } => {
            if let Some(seed) = seed {
                overrides.push(format!("seed={seed}"));
            }
            let loaded = match Scenario::load(&file, &overrides) {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            if let Err(e) = check_memory(&loaded, memory_limit(max_memory)) {
                eprintln!("error: {}: {e}", loaded.file);
                return ExitCode::from(2);
            }
            let stem = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "run".into());
            let out = out.unwrap_or_else(|| PathBuf::from("out").join(stem));
            let stop = loaded.scenario.stop.time.map(|t| t.0);
            let mut progress = Progress::new(stop, quiet);
            match run_to_dir(&loaded, &out, &mut |now, events| {
                progress.update(now, events)
            }) {
                Ok(outcome) => {
                    progress.finish();
                    if !quiet {
                        let s = &outcome.summary;
                        println!(
                            "{}: {} simulated, {} flows ({} completed), {} events in {:.2} s ({:.2} M events/s), peak RSS {} MiB",
                            file.display(),
                            DisplayTime(outcome.stats.end_time),
                            s["flows"]["total"],
                            s["flows"]["completed"],
                            outcome.stats.events,
                            outcome.wall.as_secs_f64(),
                            outcome.events_per_second() / 1e6,
                            outcome.peak_rss_bytes.map_or("?".into(), |b| (b >> 20).to_string()),
                        );
                        println!("results in {}", out.display());
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    progress.finish();
                    eprintln!("error: {e}");
                    match e {
                        RunError::Input(_) => ExitCode::from(2),
                        RunError::Failed(_) => ExitCode::FAILURE,
                    }
                }
            }
        }
        Command::Check {
            files,
            overrides,
            max_memory,
        } => {
            let mut ok = true;
            let limit = memory_limit(max_memory);
            for f in &files {
                match Scenario::load(f, &overrides).and_then(|l| {
                    check_memory(&l, limit).map_err(|message| ScenarioError {
                        file: f.display().to_string(),
                        message,
                    })?;
                    Ok(l)
                }) {
                    Ok(l) => println!(
                        "{}: ok ({} hosts, about {} of memory)",
                        f.display(),
                        l.scenario.topology.n_hosts(),
                        Size(eqds_sim::memory::estimate(&l).bytes),
                    ),
                    Err(e) => {
                        eprintln!("error: {e}");
                        ok = false;
                    }
                }
            }
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            }
        }
    }
}

/// A progress line on a terminal for runs that last more than a couple of seconds.
struct Progress {
    bar: Option<ProgressBar>,
    enabled: bool,
    started: Instant,
    stop: Option<Time>,
    last: (Instant, u64),
}

impl Progress {
    fn new(stop: Option<Time>, quiet: bool) -> Self {
        let now = Instant::now();
        Progress {
            bar: None,
            enabled: !quiet && std::io::stderr().is_terminal(),
            started: now,
            stop,
            last: (now, 0),
        }
    }

    fn update(&mut self, sim_now: Time, events: u64) {
        if !self.enabled || self.started.elapsed() < Duration::from_secs(2) {
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(self.stop, ProgressDrawTarget::stderr());
            bar.set_style(ProgressStyle::with_template("{bar:30} {msg}").expect("valid template"));
            bar
        });
        let (t0, e0) = self.last;
        let dt = t0.elapsed().as_secs_f64();
        if dt < 0.25 {
            return;
        }
        let rate = (events - e0) as f64 / dt;
        self.last = (Instant::now(), events);
        bar.set_position(sim_now);
        let of = self
            .stop
            .map(|s| format!(" / {}", DisplayTime(s)))
            .unwrap_or_default();
        bar.set_message(format!(
            "simulated {}{of}, {:.2} M events/s",
            DisplayTime(sim_now),
            rate / 1e6
        ));
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
