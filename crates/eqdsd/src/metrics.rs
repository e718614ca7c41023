//! Prometheus text metrics, served over plain HTTP on a loopback port.
//!
//! The event loop owns the protocol state, so it answers a scrape itself: it accepts,
//! reads the request line (clients send it at once; a client that does not is cut
//! off after a short timeout), renders and writes. Scrapes are rare and small.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use eqds_proto::paths::PathStats;
use eqds_proto::time::PS_PER_US;

use eqds_proto::sender::{Sender, TunnelStats};

use crate::engine::{Engine, NATIVE_EQIF, TUN_EQIF};

/// Renders every metric of `engine` in the Prometheus text format.
pub fn render(engine: &Engine, out: &mut String) {
    out.clear();
    let c = engine.counters();
    out.push_str("# HELP eqdsd_drops_total Packets dropped, by reason\n");
    out.push_str("# TYPE eqdsd_drops_total counter\n");
    let entries = c.entries();
    for (name, _, v) in &entries {
        if let Some(reason) = name.strip_prefix("drop:") {
            let _ = writeln!(out, "eqdsd_drops_total{{reason=\"{reason}\"}} {v}");
        }
    }
    for (name, help, v) in &entries {
        if !name.starts_with("drop:") {
            let _ = writeln!(out, "# HELP eqdsd_{name}_total {help}");
            let _ = writeln!(out, "# TYPE eqdsd_{name}_total counter");
            let _ = writeln!(out, "eqdsd_{name}_total {v}");
        }
    }
    out.push_str("# HELP eqdsd_path_bytes_total Bytes sent per path id (UDP source port)\n");
    out.push_str("# TYPE eqdsd_path_bytes_total counter\n");
    for (p, b) in engine.path_bytes().iter().enumerate() {
        let _ = writeln!(out, "eqdsd_path_bytes_total{{path=\"{p}\"}} {b}");
    }
    let pool = engine.pool();
    let _ = writeln!(
        out,
        "# TYPE eqdsd_buffers_in_use gauge\neqdsd_buffers_in_use {}",
        pool.in_use()
    );
    let _ = writeln!(
        out,
        "# TYPE eqdsd_buffers_created gauge\neqdsd_buffers_created {}",
        pool.created()
    );
    let _ = writeln!(
        out,
        "# TYPE eqdsd_in_flight_bytes gauge\neqdsd_in_flight_bytes {}",
        engine.uplink().in_flight_bytes()
    );
    let _ = writeln!(
        out,
        "# HELP eqdsd_rst_received_total RSTs received: a peer closed or lost our tunnel\n\
         # TYPE eqdsd_rst_received_total counter\neqdsd_rst_received_total {}",
        engine
            .uplink()
            .eqifs()
            .map(Sender::rst_received)
            .sum::<u64>()
    );
    render_receiver_events(engine, out);

    // Per tunnel: the sending side's queues and credit, the receiving side's pulls and
    // reorder depth. One line per metric per peer and EQIF, labelled by the peer's
    // endpoint, and the native EQIF's also by `eqif="native"`.
    type Getter = fn(&Engine, Tunnel) -> Option<i128>;
    let tunnel_metrics: [(&str, &str, &str, Getter); 18] = [
        (
            "tx_send_queue_bytes",
            "gauge",
            "Bytes queued for the tunnel",
            |e, t| t.tx(e).map(|s| s.send_queue_bytes.into()),
        ),
        (
            "tx_retransmit_queue_bytes",
            "gauge",
            "Bytes waiting for resend",
            |e, t| t.tx(e).map(|s| s.retransmit_bytes.into()),
        ),
        (
            "tx_in_flight_bytes",
            "gauge",
            "Bytes sent and not yet ACKed",
            |e, t| t.tx(e).map(|s| s.in_flight_bytes.into()),
        ),
        (
            "tx_credit_bytes",
            "gauge",
            "Credit held by the sender",
            |e, t| t.tx(e).map(|s| s.credit.into()),
        ),
        (
            "tx_pulls_received",
            "gauge",
            "Highest pull number received",
            |e, t| t.tx(e).map(|s| s.highest_pull.into()),
        ),
        (
            "tx_bytes_total",
            "counter",
            "Bytes sent, retransmissions included",
            |e, t| t.tx(e).map(|s| s.bytes_sent.into()),
        ),
        (
            "tx_retransmits_total",
            "counter",
            "Packets retransmitted",
            |e, t| t.tx(e).map(|s| s.retransmits.into()),
        ),
        (
            "tx_rto_expiries_total",
            "counter",
            "Retransmit timeouts",
            |e, t| t.tx(e).map(|s| s.rto_expiries.into()),
        ),
        (
            "tx_reorder_losses_total",
            "counter",
            "Packets resent before their timeout: one sent a loss reorder window later was ACKed",
            |e, t| t.tx(e).map(|s| s.reorder_losses.into()),
        ),
        (
            "tx_srtt_us",
            "gauge",
            "Smoothed round-trip time of DATA in microseconds (0 before a sample)",
            |e, t| t.tx(e).map(|s| (s.srtt / PS_PER_US).into()),
        ),
        (
            "tx_rto_us",
            "gauge",
            "Retransmit timeout in force, microseconds",
            |e, t| t.tx(e).map(|s| (s.rto / PS_PER_US).into()),
        ),
        (
            "tx_stray_packets",
            "gauge",
            "ACKed packets with a resent copy still on its way",
            |e, t| t.tx(e).map(|s| s.stray_packets as i128),
        ),
        (
            "tx_warm_restarts_total",
            "counter",
            "Idle restarts paid for by credit held from the last round trip, not an RTS",
            |e, t| t.tx(e).map(|s| s.warm_restarts.into()),
        ),
        (
            "tx_thin_restarts_total",
            "counter",
            "Idle restarts of a small packet paid for by at most an MTU of stale credit, not an RTS",
            |e, t| t.tx(e).map(|s| s.thin_restarts.into()),
        ),
        (
            "tx_epochs_total",
            "counter",
            "Tunnel epochs started",
            |e, t| t.tx(e).map(|s| s.epochs.into()),
        ),
        (
            "rx_pulls_sent_total",
            "counter",
            "PULLs sent to the peer",
            |e, t| {
                e.receiver()
                    .credit()
                    .sender(t.rx_peer(e))
                    .map(|s| s.pulls_sent.into())
            },
        ),
        (
            "rx_bytes_total",
            "counter",
            "Payload bytes received",
            |e, t| {
                e.receiver()
                    .credit()
                    .sender(t.rx_peer(e))
                    .map(|s| s.payload_bytes.into())
            },
        ),
        (
            "rx_reorder_packets",
            "gauge",
            "Packets waiting in the reorder queue",
            |e, t| {
                let peer = t.rx_peer(e);
                let known = e.receiver().credit().sender(peer).is_some();
                known.then(|| e.receiver().reorder_len(peer) as i128)
            },
        ),
    ];
    for (name, kind, help, get) in tunnel_metrics {
        let _ = writeln!(out, "# HELP eqdsd_tunnel_{name} {help}");
        let _ = writeln!(out, "# TYPE eqdsd_tunnel_{name} {kind}");
        for (slot, peer) in engine.peers().iter() {
            for eqif in [TUN_EQIF, NATIVE_EQIF] {
                if let Some(v) = get(engine, Tunnel { slot, eqif }) {
                    let ip = peer.endpoint.ip();
                    let _ = writeln!(out, "eqdsd_tunnel_{name}{{{}}} {v}", labels(ip, eqif));
                }
            }
        }
    }
    render_path_stats(engine, out);
}

/// Per tunnel and path id, what the sending EQIF saw (`eqds.path_stats`; nothing
/// when it is off): the paths a tunnel sprays over are routes through the fabric,
/// and a slow or lossy one shows here.
/// The receiving EQIF's tunnel events, summed over peers: what the Appendix A state
/// machines and the reorder queues did with the data that came in.
fn render_receiver_events(engine: &Engine, out: &mut String) {
    let rx = engine.receiver().stats();
    let events = [
        (
            "established",
            "Receiving tunnels established from CLOSED",
            rx.established,
        ),
        (
            "reestablished",
            "Receiving tunnels re-established by a greater epoch",
            rx.reestablished,
        ),
        (
            "released",
            "Packets released regardless of holes by a re-establishment",
            rx.released,
        ),
        (
            "rst_sent",
            "RSTs sent for data of no current tunnel",
            rx.rst_sent,
        ),
        (
            "stale_syns",
            "SYNs of an older epoch answered with the current one",
            rx.stale_syns,
        ),
        (
            "duplicates",
            "Duplicate DATA dropped (and ACKed)",
            rx.duplicates,
        ),
        (
            "holes_skipped",
            "Reorder-queue holes skipped: the span would be exceeded or the hole timed out",
            rx.holes_skipped,
        ),
        (
            "late",
            "DATA delivered out of order after its reorder-queue hole was skipped",
            rx.late,
        ),
        (
            "lost_on_drop",
            "Packets held for reordering when a peer's state was dropped",
            rx.lost_on_drop,
        ),
    ];
    for (name, help, v) in events {
        let _ = writeln!(
            out,
            "# HELP eqdsd_rx_{name}_total {help}\n\
             # TYPE eqdsd_rx_{name}_total counter\neqdsd_rx_{name}_total {v}"
        );
    }
    let _ = writeln!(
        out,
        "# HELP eqdsd_rx_peak_reorder_held Most packets one reorder queue held behind a hole\n\
         # TYPE eqdsd_rx_peak_reorder_held gauge\neqdsd_rx_peak_reorder_held {}",
        rx.peak_reorder_held
    );
}

fn render_path_stats(engine: &Engine, out: &mut String) {
    type Get = fn(&PathStats) -> Option<u64>;
    let metrics: [(&str, &str, &str, Get); 6] = [
        ("sent_total", "counter", "DATA transmissions", |p| {
            Some(p.sent)
        }),
        (
            "acked_total",
            "counter",
            "Packets ACKed, by the path of their latest transmission",
            |p| Some(p.acked),
        ),
        (
            "trimmed_total",
            "counter",
            "NACKs and returned headers: trimmed on this path",
            |p| Some(p.trimmed),
        ),
        ("timed_out_total", "counter", "Retransmit timeouts", |p| {
            Some(p.timed_out)
        }),
        (
            "srtt_us",
            "gauge",
            "Smoothed round-trip time of packets sent once, microseconds",
            |p| (p.rtt_samples > 0).then_some(p.srtt / PS_PER_US),
        ),
        (
            "min_rtt_us",
            "gauge",
            "Smallest round-trip time of packets sent once, microseconds",
            |p| (p.rtt_samples > 0).then_some(p.min_rtt / PS_PER_US),
        ),
    ];
    for (name, kind, help, get) in metrics {
        let _ = writeln!(out, "# HELP eqdsd_tunnel_path_{name} {help}");
        let _ = writeln!(out, "# TYPE eqdsd_tunnel_path_{name} {kind}");
        for (slot, peer) in engine.peers().iter() {
            for (eqif, tx) in engine.uplink().eqifs().enumerate() {
                let paths = tx.path_stats(slot).unwrap_or_default();
                for (path, p) in paths.iter().enumerate().filter(|(_, p)| p.sent > 0) {
                    if let Some(v) = get(p) {
                        let labels = labels(peer.endpoint.ip(), eqif);
                        let _ = writeln!(
                            out,
                            "eqdsd_tunnel_path_{name}{{{labels},path=\"{path}\"}} {v}"
                        );
                    }
                }
            }
        }
    }
}

/// One tunnel: a peer table slot and a sending EQIF (for the receiving side, the
/// peer's EQIF with that sender id).
#[derive(Clone, Copy)]
struct Tunnel {
    slot: u32,
    eqif: usize,
}

impl Tunnel {
    /// The sending side's snapshot, if this EQIF has a tunnel to the peer.
    fn tx(self, engine: &Engine) -> Option<TunnelStats> {
        engine.uplink().eqifs().nth(self.eqif)?.tunnel(self.slot)
    }

    /// The receiving EQIF's peer id for the peer's EQIF of this index.
    fn rx_peer(self, engine: &Engine) -> u32 {
        engine.receiving_peer(self.slot, self.eqif as u16)
    }
}

/// A tunnel's labels: the peer's tunnel address, and for the native EQIF `eqif`.
fn labels(ip: &std::net::Ipv4Addr, eqif: usize) -> String {
    if eqif == NATIVE_EQIF {
        format!("peer=\"{ip}\",eqif=\"native\"")
    } else {
        format!("peer=\"{ip}\"")
    }
}

/// Answers one HTTP request on `stream` with `body` for `GET /metrics` (or `/`), 404
/// otherwise.
pub fn answer(mut stream: TcpStream, body: &str) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_millis(200)))?;
    stream.set_write_timeout(Some(Duration::from_millis(200)))?;
    let mut req = [0u8; 1024];
    let mut n = 0;
    while n < req.len() {
        let got = stream.read(&mut req[n..])?;
        if got == 0 {
            break;
        }
        n += got;
        if req[..n].windows(4).any(|w| w == b"\r\n\r\n") || req[..n].contains(&b'\n') {
            break;
        }
    }
    let line = String::from_utf8_lossy(&req[..n]);
    let path = line.split_whitespace().nth(1).unwrap_or("");
    let (status, body) = match path {
        "/metrics" | "/" => ("200 OK", body),
        _ => ("404 Not Found", "not found: try /metrics\n"),
    };
    write!(
        stream,
        "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}
