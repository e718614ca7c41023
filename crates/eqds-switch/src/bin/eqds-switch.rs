//! `eqds-switch --config FILE`: forwards IPv4 between the configured ports until
//! SIGINT or SIGTERM, then prints what each port did.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Parser;
use eqds_switch::config::Config;

#[derive(Parser)]
#[command(
    version,
    about = "A user-space IPv4 switch with the simulator's queue disciplines"
)]
struct Args {
    /// The switch's TOML configuration.
    #[arg(long, short)]
    config: PathBuf,
    /// Check the configuration and exit.
    #[arg(long)]
    check: bool,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = match Config::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("eqds-switch: {}: {e}", args.config.display());
            return ExitCode::from(2);
        }
    };
    if args.check {
        println!(
            "{}: ok ({} ports)",
            args.config.display(),
            config.ports.len()
        );
        return ExitCode::SUCCESS;
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&stop)) {
            eprintln!("eqds-switch: cannot handle signal {sig}: {e}");
            return ExitCode::FAILURE;
        }
    }
    match eqds_switch::daemon::run(&config, stop) {
        Ok(report) => {
            for p in &report.snapshot.ports {
                println!(
                    "port {}: rx {} frames, sent {} frames / {} bytes, trimmed {}, dropped {}, marked {}, ring drops {}",
                    p.name,
                    p.counters.rx_frames,
                    p.stats.tx_packets,
                    p.stats.tx_bytes,
                    p.stats.trims,
                    p.stats.drops,
                    p.stats.marks,
                    p.ring_drops
                );
            }
            let c = &report.snapshot.counters;
            println!(
                "not forwarded: no_route {}, no_neighbour {}, no_buffer {}, ttl_expired {}, bad_ipv4 {}, not_ipv4 {}, runt {}, unsupported {}",
                c.no_route, c.no_neighbour, c.no_buffer, c.ttl_expired, c.bad_ipv4, c.not_ipv4, c.runt, c.unsupported
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("eqds-switch: {e:#}");
            ExitCode::FAILURE
        }
    }
}
