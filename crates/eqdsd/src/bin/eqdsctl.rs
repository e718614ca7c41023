//! eqdsctl: lists a running eqdsd's tunnels and counters from its metrics endpoint.

#![deny(unsafe_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

/// Queries a running eqdsd (run it in the daemon's network namespace).
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The daemon's metrics address (`[metrics] listen`).
    #[arg(long, default_value = "127.0.0.1:9477")]
    metrics: SocketAddr,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// One line per tunnel: queues, credit, pulls, retransmits, reorder depth (default).
    Tunnels,
    /// Every counter, drops by reason included.
    Counters,
    /// The raw Prometheus text.
    Raw,
}

fn fetch(addr: SocketAddr) -> Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .with_context(|| format!("connecting to eqdsd metrics at {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let Some((head, body)) = resp.split_once("\r\n\r\n") else {
        bail!("malformed HTTP response from {addr}");
    };
    if !head.starts_with("HTTP/1.0 200") {
        bail!("{addr} answered {}", head.lines().next().unwrap_or(""));
    }
    Ok(body.to_owned())
}

/// (metric name, labels, value) of each sample line.
fn samples(text: &str) -> impl Iterator<Item = (&str, &str, &str)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (key, value) = l.rsplit_once(' ')?;
            let (name, labels) = match key.split_once('{') {
                Some((n, rest)) => (n, rest.trim_end_matches('}')),
                None => (key, ""),
            };
            Some((name, labels, value))
        })
}

fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    labels.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| v.trim_matches('"'))
    })
}

fn tunnels(text: &str) {
    let columns = [
        ("tx_send_queue_bytes", "sendq_B"),
        ("tx_in_flight_bytes", "inflight_B"),
        ("tx_credit_bytes", "credit_B"),
        ("tx_bytes_total", "tx_B"),
        ("tx_retransmits_total", "retx"),
        ("rx_pulls_sent_total", "pulls_out"),
        ("rx_bytes_total", "rx_B"),
        ("rx_reorder_packets", "reorder"),
    ];
    let mut rows: BTreeMap<String, BTreeMap<&str, String>> = BTreeMap::new();
    for (name, labels, value) in samples(text) {
        let Some(metric) = name.strip_prefix("eqdsd_tunnel_") else {
            continue;
        };
        if let Some(peer) = label(labels, "peer") {
            rows.entry(peer.to_owned())
                .or_default()
                .insert(metric, value.to_owned());
        }
    }
    print!("{:<16}", "peer");
    for (_, head) in &columns {
        print!(" {head:>12}");
    }
    println!();
    for (peer, m) in &rows {
        print!("{peer:<16}");
        for (metric, _) in &columns {
            print!(" {:>12}", m.get(metric).map_or("-", String::as_str));
        }
        println!();
    }
    if rows.is_empty() {
        println!("(no tunnels yet)");
    }
}

fn counters(text: &str) {
    for (name, labels, value) in samples(text) {
        if name.starts_with("eqdsd_tunnel_") {
            continue;
        }
        let name = name.trim_start_matches("eqdsd_");
        match label(labels, "reason").or_else(|| label(labels, "path")) {
            Some(l) => println!("{name}[{l}] {value}"),
            None => println!("{name} {value}"),
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let text = match fetch(args.metrics) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("eqdsctl: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    match args.command.unwrap_or(Command::Tunnels) {
        Command::Tunnels => tunnels(&text),
        Command::Counters => counters(&text),
        Command::Raw => print!("{text}"),
    }
    ExitCode::SUCCESS
}
