//! eqdsd: the EQDS daemon. See `docs/eqdsd.md`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use eqdsd::config::Config;

/// Carries this host's traffic for the configured address ranges through EQDS tunnels
/// (a TUN device and UDP), receiver-driven and reordered.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The TOML configuration file.
    #[arg(long)]
    config: PathBuf,
    /// Check the configuration and exit without creating anything.
    #[arg(long)]
    check: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = match Config::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("eqdsd: {}: {e}", args.config.display());
            return ExitCode::from(2);
        }
    };
    if args.check {
        println!("{}: ok", args.config.display());
        return ExitCode::SUCCESS;
    }
    match eqdsd::daemon::run(&config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eqdsd: {e:#}");
            ExitCode::FAILURE
        }
    }
}
