//! The `eqds-sim` command line.

/// mimalloc with its memory on transparent huge pages. A large run touches tens of
/// megabytes at random (packets, ports, queues, event buckets): with 4 KiB pages most
/// of those touches also miss the TLB, which under virtualisation costs a nested page
/// walk. Huge pages made the k=16 NDP permutation about 10% faster.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn use_huge_pages() {
    // SAFETY: sets one of mimalloc's global options; it takes effect for the memory
    // mimalloc asks the OS for from now on and has no other precondition.
    unsafe { libmimalloc_sys::mi_option_set(libmimalloc_sys::mi_option_large_os_pages, 1) };
}
use clap::{Parser, Subcommand};
use eqds_sim::run::run_to_dir;
use eqds_sim::scenario::Scenario;
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
    },
    /// Validate scenario files without running them.
    Check {
        /// Scenario files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Overrides applied before validation, as for `run`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
    },
}

fn main() -> ExitCode {
    use_huge_pages();
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            file,
            mut overrides,
            seed,
            out,
            quiet,
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
                    ExitCode::FAILURE
                }
            }
        }
        Command::Check { files, overrides } => {
            let mut ok = true;
            for f in &files {
                match Scenario::load(f, &overrides) {
                    Ok(l) => println!(
                        "{}: ok ({} hosts)",
                        f.display(),
                        l.scenario.topology.n_hosts()
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
