//! Prometheus metrics: a [`Snapshot`] of the daemon's numbers, taken by the event loop,
//! and its exposition in the Prometheus text format (version 0.0.4), written by the
//! `prometheus-client` crate on the metrics thread ([`server`]).
//!
//! The split keeps the data path's share small. Taking a snapshot only copies numbers
//! the engine already keeps (counters, per-tunnel statistics) into plain vectors, a few
//! microseconds even with many peers; formatting text, which costs far more, happens on
//! the metrics thread.

pub mod server;

use std::net::Ipv4Addr;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use eqds_proto::eqif::EqifStats;
use eqds_proto::paths::PathStats;
use eqds_proto::receiver::SenderState;
use eqds_proto::sender::{Sender, TunnelStats};
use eqds_proto::time::PS_PER_US;

use crate::counters::Counters;
use crate::engine::{Engine, NATIVE_EQIF, TUN_EQIF};

/// Every number the metrics show, copied out of the engine at one instant.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub counters: Counters,
    /// Bytes sent per path id.
    pub path_bytes: Vec<u64>,
    pub buffers_in_use: u64,
    pub buffers_created: u64,
    pub in_flight_bytes: u64,
    /// RSTs received, summed over the sending EQIFs.
    pub rst_received: u64,
    /// The receiving EQIF's tunnel events, summed over peers.
    pub rx: EqifStats,
    /// One entry per peer and sending EQIF that has either side of a tunnel.
    pub tunnels: Vec<TunnelSnapshot>,
    /// Per tunnel and path id (only with `eqds.path_stats`, and only paths used).
    pub paths: Vec<PathSnapshot>,
}

/// One tunnel: the sending side's statistics (if this EQIF sends to the peer) and the
/// receiving side's (if the peer's EQIF of the same index sends to us).
#[derive(Debug, Clone)]
pub struct TunnelSnapshot {
    /// The peer's tunnel address.
    pub peer: Ipv4Addr,
    /// [`TUN_EQIF`] or [`NATIVE_EQIF`].
    pub eqif: usize,
    pub tx: Option<TunnelStats>,
    pub rx: Option<SenderState>,
    /// Packets in the receiving side's reorder queue (with `rx`).
    pub reorder_packets: u64,
}

/// What one tunnel's sending EQIF saw on one path id.
#[derive(Debug, Clone)]
pub struct PathSnapshot {
    pub peer: Ipv4Addr,
    pub eqif: usize,
    pub path: usize,
    pub stats: PathStats,
}

impl Snapshot {
    /// Copies the numbers out of `engine`. Runs on the data path: it formats nothing.
    pub fn take(engine: &Engine) -> Self {
        let mut tunnels = Vec::new();
        let mut paths = Vec::new();
        for (slot, peer) in engine.peers().iter() {
            let ip = *peer.endpoint.ip();
            for eqif in [TUN_EQIF, NATIVE_EQIF] {
                let tx = engine
                    .uplink()
                    .eqifs()
                    .nth(eqif)
                    .and_then(|s| s.tunnel(slot));
                let rx_peer = engine.receiving_peer(slot, eqif as u16);
                let rx = engine.receiver().credit().sender(rx_peer);
                if tx.is_some() || rx.is_some() {
                    tunnels.push(TunnelSnapshot {
                        peer: ip,
                        eqif,
                        tx,
                        rx,
                        reorder_packets: engine.receiver().reorder_len(rx_peer) as u64,
                    });
                }
            }
            for (eqif, sender) in engine.uplink().eqifs().enumerate() {
                let per_path = sender.path_stats(slot).unwrap_or_default();
                for (path, stats) in per_path.iter().enumerate().filter(|(_, p)| p.sent > 0) {
                    paths.push(PathSnapshot {
                        peer: ip,
                        eqif,
                        path,
                        stats: *stats,
                    });
                }
            }
        }
        let pool = engine.pool();
        Self {
            counters: *engine.counters(),
            path_bytes: engine.path_bytes().to_vec(),
            buffers_in_use: pool.in_use() as u64,
            buffers_created: pool.created() as u64,
            in_flight_bytes: engine.uplink().in_flight_bytes(),
            rst_received: engine.uplink().eqifs().map(Sender::rst_received).sum(),
            rx: engine.receiver().stats(),
            tunnels,
            paths,
        }
    }
}

/// What the metrics server did with its clients: connections cut off, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Past their deadline before they were done.
    pub deadline: u64,
    /// Requests longer than the limit.
    pub too_large: u64,
    /// Closed to make room for a new connection at the cap.
    pub evicted: u64,
}

/// Renders `snapshot` and the metrics server's own `server` counters in the Prometheus
/// text format (version 0.0.4), the body of a scrape; its content type is
/// [`CONTENT_TYPE`].
pub fn render_with(snapshot: Snapshot, server: &ServerStats) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Exposition {
        snapshot,
        server: *server,
    }));
    let mut out = String::new();
    // Writing into a String cannot fail, and every name and label is ours.
    prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
        .expect("encoding metrics into a String");
    out
}

/// The content type of [`render_with`]'s text.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// A tunnel's labels: the peer's tunnel address, and for the native EQIF `eqif`.
fn labels(peer: Ipv4Addr, eqif: usize) -> Vec<(&'static str, String)> {
    let mut l = vec![("peer", peer.to_string())];
    if eqif == NATIVE_EQIF {
        l.push(("eqif", "native".to_owned()));
    }
    l
}

/// What encoding a metric family returns.
pub type Fmt = Result<(), std::fmt::Error>;

/// A metric family with one unlabelled sample.
pub fn single(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    value: impl Into<i128>,
) -> Fmt {
    let e = encoder.encode_descriptor(name, help, None, kind)?;
    encode_value(e, kind, value.into())
}

/// One sample: a counter as an unsigned, a gauge as a signed integer (credit can be
/// negative), each clamped to its range.
fn encode_value(e: prometheus_client::encoding::MetricEncoder, kind: MetricType, v: i128) -> Fmt {
    match kind {
        MetricType::Counter => ConstCounter::new(v.clamp(0, u64::MAX.into()) as u64).encode(e),
        _ => ConstGauge::new(v.clamp(i64::MIN.into(), i64::MAX.into()) as i64).encode(e),
    }
}

/// A metric family with one sample per label set.
pub fn family<L>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    samples: impl Iterator<Item = (L, i128)>,
) -> Fmt
where
    L: prometheus_client::encoding::EncodeLabelSet,
{
    let mut e = encoder.encode_descriptor(name, help, None, kind)?;
    for (labels, value) in samples {
        encode_value(e.encode_family(&labels)?, kind, value)?;
    }
    Ok(())
}

use MetricType::{Counter, Gauge};

/// The sending side's per-tunnel metrics: name (after `eqdsd_tunnel_`, without the
/// `_total` a counter gets), kind, help, value.
type TxGetter = fn(&TunnelStats) -> i128;
const TX_METRICS: [(&str, MetricType, &str, TxGetter); 17] = [
    (
        "tx_send_queue_bytes",
        Gauge,
        "Bytes queued for the tunnel",
        |s| s.send_queue_bytes.into(),
    ),
    (
        "tx_retransmit_queue_bytes",
        Gauge,
        "Bytes waiting for resend",
        |s| s.retransmit_bytes.into(),
    ),
    (
        "tx_in_flight_bytes",
        Gauge,
        "Bytes sent and not yet ACKed",
        |s| s.in_flight_bytes.into(),
    ),
    ("tx_credit_bytes", Gauge, "Credit held by the sender", |s| {
        s.credit.into()
    }),
    (
        "tx_pulls_received",
        Gauge,
        "Highest pull number received",
        |s| s.highest_pull.into(),
    ),
    (
        "tx_bytes",
        Counter,
        "Bytes sent, retransmissions included",
        |s| s.bytes_sent.into(),
    ),
    ("tx_retransmits", Counter, "Packets retransmitted", |s| {
        s.retransmits.into()
    }),
    ("tx_rto_expiries", Counter, "Retransmit timeouts", |s| {
        s.rto_expiries.into()
    }),
    (
        "tx_reorder_losses",
        Counter,
        "Packets resent before their timeout: one sent a loss reorder window later was ACKed",
        |s| s.reorder_losses.into(),
    ),
    (
        "tx_srtt_us",
        Gauge,
        "Smoothed round-trip time of DATA in microseconds (0 before a sample)",
        |s| (s.srtt / PS_PER_US).into(),
    ),
    (
        "tx_rto_us",
        Gauge,
        "Retransmit timeout in force, microseconds",
        |s| (s.rto / PS_PER_US).into(),
    ),
    (
        "tx_stray_packets",
        Gauge,
        "ACKed packets with a resent copy still on its way",
        |s| s.stray_packets as i128,
    ),
    (
        "tx_warm_restarts",
        Counter,
        "Idle restarts paid for by credit held from the last round trip, not an RTS",
        |s| s.warm_restarts.into(),
    ),
    (
        "tx_thin_restarts",
        Counter,
        "Idle restarts of a small packet paid for by at most an MTU of stale credit, not an RTS",
        |s| s.thin_restarts.into(),
    ),
    ("tx_epochs", Counter, "Tunnel epochs started", |s| {
        s.epochs.into()
    }),
    (
        "tx_pull_rebases",
        Counter,
        "Times the peer's pull count was taken as a new baseline, not credit: the peer restarted, or this daemon did",
        |s| s.pull_rebases.into(),
    ),
    (
        "tx_stale_pulls",
        Counter,
        "Pull numbers ignored as a restarted peer's previous incarnation's, still in flight",
        |s| s.stale_pulls.into(),
    ),
];

/// What one scrape shows.
#[derive(Debug)]
struct Exposition {
    snapshot: Snapshot,
    server: ServerStats,
}

impl Collector for Exposition {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Fmt {
        self.snapshot.encode_all(&mut encoder)?;
        encode_server(&mut encoder, "eqdsd_metrics_connections_cut", &self.server)
    }
}

/// The metrics server's own counters, as the family `name`: connections it cut off,
/// by reason.
pub fn encode_server(encoder: &mut DescriptorEncoder, name: &str, s: &ServerStats) -> Fmt {
    family(
        encoder,
        name,
        "Metrics connections cut off, by reason: past their deadline, request too \
         large, or evicted at the connection cap",
        Counter,
        [
            ("deadline", s.deadline),
            ("too_large", s.too_large),
            ("evicted", s.evicted),
        ]
        .into_iter()
        .map(|(reason, v)| ([("reason", reason)], v.into())),
    )
}

impl Snapshot {
    fn encode_all(&self, enc: &mut DescriptorEncoder) -> Fmt {
        let entries = self.counters.entries();
        family(
            enc,
            "eqdsd_drops",
            "Packets dropped, by reason",
            Counter,
            entries.iter().filter_map(|(name, _, v)| {
                let reason = name.strip_prefix("drop:")?;
                Some(([("reason", reason)], (*v).into()))
            }),
        )?;
        for (name, help, v) in entries.iter().filter(|(n, _, _)| !n.starts_with("drop:")) {
            single(enc, &format!("eqdsd_{name}"), help, Counter, *v)?;
        }
        family(
            enc,
            "eqdsd_path_bytes",
            "Bytes sent per path id (UDP source port)",
            Counter,
            self.path_bytes
                .iter()
                .enumerate()
                .map(|(p, b)| ([("path", p.to_string())], (*b).into())),
        )?;
        single(
            enc,
            "eqdsd_buffers_in_use",
            "Packet buffers in use",
            Gauge,
            self.buffers_in_use,
        )?;
        single(
            enc,
            "eqdsd_buffers_created",
            "Packet buffers allocated so far",
            Gauge,
            self.buffers_created,
        )?;
        single(
            enc,
            "eqdsd_in_flight_bytes",
            "Bytes sent and not yet ACKed, over every tunnel",
            Gauge,
            self.in_flight_bytes,
        )?;
        single(
            enc,
            "eqdsd_rst_received",
            "RSTs received: a peer closed or lost our tunnel",
            Counter,
            self.rst_received,
        )?;
        self.encode_receiver_events(enc)?;
        self.encode_tunnels(enc)?;
        self.encode_paths(enc)
    }

    /// The receiving EQIF's tunnel events, summed over peers: what the Appendix A state
    /// machines and the reorder queues did with the data that came in.
    fn encode_receiver_events(&self, enc: &mut DescriptorEncoder) -> Fmt {
        let rx = &self.rx;
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
            single(enc, &format!("eqdsd_rx_{name}"), help, Counter, v)?;
        }
        single(
            enc,
            "eqdsd_rx_peak_reorder_held",
            "Most packets one reorder queue held behind a hole",
            Gauge,
            rx.peak_reorder_held,
        )
    }

    /// Per tunnel: the sending side's queues and credit, the receiving side's pulls and
    /// reorder depth. One sample per metric per peer and EQIF, labelled by the peer's
    /// endpoint, and the native EQIF's also by `eqif="native"`.
    fn encode_tunnels(&self, enc: &mut DescriptorEncoder) -> Fmt {
        for (name, kind, help, get) in TX_METRICS {
            family(
                enc,
                &format!("eqdsd_tunnel_{name}"),
                help,
                kind,
                self.tunnels
                    .iter()
                    .filter_map(|t| Some((labels(t.peer, t.eqif), get(t.tx.as_ref()?)))),
            )?;
        }
        type RxGetter = fn(&TunnelSnapshot) -> Option<u64>;
        let rx_metrics: [(&str, MetricType, &str, RxGetter); 5] = [
            ("rx_pulls_sent", Counter, "PULLs sent to the peer", |t| {
                t.rx.map(|s| s.pulls_sent.into())
            }),
            (
                "rx_data_packets",
                Counter,
                "DATA packets received whole",
                |t| t.rx.map(|s| s.data_packets),
            ),
            (
                "rx_trimmed_packets",
                Counter,
                "DATA headers received trimmed (each answered with a NACK)",
                |t| t.rx.map(|s| s.trimmed_packets),
            ),
            ("rx_bytes", Counter, "Payload bytes received", |t| {
                t.rx.map(|s| s.payload_bytes)
            }),
            (
                "rx_reorder_packets",
                Gauge,
                "Packets waiting in the reorder queue",
                |t| t.rx.map(|_| t.reorder_packets),
            ),
        ];
        for (name, kind, help, get) in rx_metrics {
            family(
                enc,
                &format!("eqdsd_tunnel_{name}"),
                help,
                kind,
                self.tunnels
                    .iter()
                    .filter_map(|t| Some((labels(t.peer, t.eqif), get(t)?.into()))),
            )?;
        }
        Ok(())
    }

    /// Per tunnel and path id, what the sending EQIF saw (`eqds.path_stats`; nothing
    /// when it is off): the paths a tunnel sprays over are routes through the fabric,
    /// and a slow or lossy one shows here.
    fn encode_paths(&self, enc: &mut DescriptorEncoder) -> Fmt {
        type Get = fn(&PathStats) -> Option<u64>;
        let metrics: [(&str, MetricType, &str, Get); 6] = [
            ("sent", Counter, "DATA transmissions", |p| Some(p.sent)),
            (
                "acked",
                Counter,
                "Packets ACKed, by the path of their latest transmission",
                |p| Some(p.acked),
            ),
            (
                "trimmed",
                Counter,
                "NACKs and returned headers: trimmed on this path",
                |p| Some(p.trimmed),
            ),
            ("timed_out", Counter, "Retransmit timeouts", |p| {
                Some(p.timed_out)
            }),
            (
                "srtt_us",
                Gauge,
                "Smoothed round-trip time of packets sent once, microseconds",
                |p| (p.rtt_samples > 0).then_some(p.srtt / PS_PER_US),
            ),
            (
                "min_rtt_us",
                Gauge,
                "Smallest round-trip time of packets sent once, microseconds",
                |p| (p.rtt_samples > 0).then_some(p.min_rtt / PS_PER_US),
            ),
        ];
        for (name, kind, help, get) in metrics {
            family(
                enc,
                &format!("eqdsd_tunnel_path_{name}"),
                help,
                kind,
                self.paths.iter().filter_map(|p| {
                    let mut l = labels(p.peer, p.eqif);
                    l.push(("path", p.path.to_string()));
                    Some((l, get(&p.stats)?.into()))
                }),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sample line as (name{labels}, value), as `eqdsctl` and the Python
    /// tooling read them; and that each sample's family was declared first.
    pub(super) fn samples(text: &str) -> Vec<(String, f64)> {
        let mut typed = Vec::new();
        let mut out = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("TYPE line");
                assert!(["counter", "gauge"].contains(&kind), "{line}");
                typed.push(name.to_owned());
            } else if !line.starts_with('#') {
                let (key, value) = line.rsplit_once(' ').expect("sample line");
                let name = key.split('{').next().unwrap();
                assert!(typed.iter().any(|t| t == name), "{name} has no TYPE");
                out.push((key.to_owned(), value.parse().expect("numeric value")));
            }
        }
        out
    }

    #[test]
    fn names_and_labels_are_those_the_tools_read() {
        let mut s = Snapshot {
            path_bytes: vec![7, 9],
            ..Snapshot::default()
        };
        s.counters.drop_spoofed = 3;
        s.counters.udp_rx_datagrams = 11;
        s.rx.established = 2;
        let stats = PathStats {
            sent: 5,
            rtt_samples: 1,
            srtt: 40 * PS_PER_US,
            ..PathStats::default()
        };
        for eqif in [TUN_EQIF, NATIVE_EQIF] {
            s.paths.push(PathSnapshot {
                peer: Ipv4Addr::new(10, 77, 2, 1),
                eqif,
                path: 3,
                stats,
            });
        }
        let text = render_with(s, &ServerStats::default());
        let m: std::collections::HashMap<_, _> = samples(&text).into_iter().collect();
        assert_eq!(m[r#"eqdsd_drops_total{reason="spoofed"}"#], 3.0, "{text}");
        assert_eq!(m[r#"eqdsd_drops_total{reason="no_buffer"}"#], 0.0);
        assert_eq!(m["eqdsd_udp_rx_datagrams_total"], 11.0);
        assert_eq!(m[r#"eqdsd_path_bytes_total{path="1"}"#], 9.0);
        assert_eq!(m["eqdsd_rx_established_total"], 2.0);
        assert_eq!(m["eqdsd_rx_peak_reorder_held"], 0.0);
        assert_eq!(m["eqdsd_buffers_in_use"], 0.0);
        assert_eq!(m["eqdsd_rst_received_total"], 0.0);
        assert_eq!(
            m[r#"eqdsd_tunnel_path_sent_total{peer="10.77.2.1",path="3"}"#],
            5.0
        );
        assert_eq!(
            m[r#"eqdsd_tunnel_path_srtt_us{peer="10.77.2.1",eqif="native",path="3"}"#],
            40.0
        );
        assert!(text.contains("# TYPE eqdsd_tunnel_tx_bytes_total counter\n"));
        assert!(text.contains("# TYPE eqdsd_tunnel_tx_credit_bytes gauge\n"));
        assert!(text.contains("# HELP eqdsd_drops_total Packets dropped, by reason\n"));
    }
}
