//! eqdsd: the EQDS daemon. See `docs/eqdsd.md`.

#![deny(unsafe_code)]

use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use eqdsd::config::Config;
use tracing::{error, Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

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
    /// What to log, as a tracing filter: a level (error, warn, info, debug, trace) or
    /// directives such as `info,eqdsd::metrics=debug`. Overrides RUST_LOG; without
    /// either, `info`.
    #[arg(long, value_name = "FILTER")]
    log_level: Option<String>,
}

/// Log lines as the daemon has always written them, `eqdsd: message` (with
/// `warning: `, `error: ` or `debug: ` after the colon below info), then the event's
/// fields. No timestamp: the journal or the test harness that collects stderr adds
/// its own.
struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "error: ",
            Level::WARN => "warning: ",
            Level::INFO => "",
            Level::DEBUG => "debug: ",
            Level::TRACE => "trace: ",
        };
        write!(writer, "eqdsd: {level}")?;
        ctx.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// Installs the stderr logger; the filter's error (naming where it came from) if it
/// does not parse.
fn init_logging(flag: Option<&str>) -> Result<(), String> {
    let (source, directives) = match (flag, std::env::var("RUST_LOG")) {
        (Some(f), _) => ("--log-level", f.to_owned()),
        (None, Ok(env)) if !env.trim().is_empty() => ("RUST_LOG", env),
        _ => ("default", "info".to_owned()),
    };
    let filter = EnvFilter::builder()
        .parse(&directives)
        .map_err(|e| format!("{source}: invalid log filter '{directives}': {e}"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .event_format(Plain)
        .init();
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = init_logging(args.log_level.as_deref()) {
        eprintln!("eqdsd: {e}");
        return ExitCode::from(2);
    }
    // Configuration errors are the command line's answer (as `--check`'s "ok" is),
    // printed whatever the log filter, not log events.
    let config = match Config::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("eqdsd: {}: {e}", args.config.display());
            return ExitCode::from(2);
        }
    };
    // Old spellings still work for one release; say what to write instead, on
    // stderr like the errors, so that `--check` shows it too.
    for d in &config.deprecations {
        eprintln!("eqdsd: {}: warning: {d}", args.config.display());
    }
    if args.check {
        println!("{}: ok", args.config.display());
        return ExitCode::SUCCESS;
    }
    match eqdsd::daemon::run(&config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}
