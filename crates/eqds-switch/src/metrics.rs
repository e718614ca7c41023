//! Prometheus metrics per port (received, enqueued, sent, trimmed, dropped, marked,
//! queue depth) and switch-wide (frames not forwarded, by reason; buffers).
//!
//! Served by eqdsd's metrics server (`eqdsd::metrics::server`), on its own thread: the
//! forwarding loop only copies its counters into a [`Snapshot`] when a scrape asks,
//! and the text is formatted off the data path.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType::{self, Counter, Gauge};
use prometheus_client::registry::Registry;

use eqds_queues::PortStats;
use eqdsd::metrics::server::Exposition;
use eqdsd::metrics::ServerStats;
use eqdsd::metrics::{encode_server, family, single, Fmt};

use crate::port::PortCounters;
use crate::switch::{Counters, Switch};

/// One port's numbers.
#[derive(Debug, Clone)]
pub struct PortSnapshot {
    pub name: String,
    pub counters: PortCounters,
    pub stats: PortStats,
    pub backlog_bytes: u64,
    pub backlog_packets: u64,
    /// Frames the kernel dropped because the port's receive ring was full: loss in
    /// the switch itself, not in a queue it models.
    pub ring_drops: u64,
}

/// Every number a scrape shows, copied out of the switch at one instant.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub ports: Vec<PortSnapshot>,
    pub counters: Counters,
    pub buffers_in_use: u64,
    pub buffers: u64,
    pub neighbours: u64,
}

impl Snapshot {
    /// Copies the numbers out of `switch`; `ring_drops[i]` is port `i`'s running total.
    pub fn take(switch: &Switch, ring_drops: &[u64]) -> Self {
        Snapshot {
            ports: switch
                .ports()
                .iter()
                .enumerate()
                .map(|(i, p)| PortSnapshot {
                    name: p.name.clone(),
                    counters: p.counters,
                    stats: p.stats,
                    backlog_bytes: p.backlog_bytes(),
                    backlog_packets: p.backlog_packets(),
                    ring_drops: ring_drops.get(i).copied().unwrap_or(0),
                })
                .collect(),
            counters: *switch.counters(),
            buffers_in_use: switch.pool().in_use() as u64,
            buffers: switch.pool().capacity() as u64,
            neighbours: switch.neighbours().len() as u64,
        }
    }
}

type PortGetter = fn(&PortSnapshot) -> u64;

/// Per-port metrics: name (after `eqds_switch_port_`), kind, help, value.
const PORT_METRICS: [(&str, MetricType, &str, PortGetter); 16] = [
    ("rx_frames", Counter, "Frames received on the port", |p| {
        p.counters.rx_frames
    }),
    ("rx_bytes", Counter, "Bytes received on the port", |p| {
        p.counters.rx_bytes
    }),
    (
        "enqueued",
        Counter,
        "Frames queued by the port's discipline",
        |p| p.counters.enqueued,
    ),
    ("sent_frames", Counter, "Frames sent by the port", |p| {
        p.stats.tx_packets
    }),
    ("sent_bytes", Counter, "Bytes sent by the port", |p| {
        p.stats.tx_bytes
    }),
    (
        "trimmed",
        Counter,
        "EQDS data frames cut to their header",
        |p| p.stats.trims,
    ),
    (
        "returned",
        Counter,
        "Headers returned to their sender",
        |p| p.stats.returns,
    ),
    ("dropped", Counter, "Frames the discipline dropped", |p| {
        p.stats.drops
    }),
    (
        "dropped_bytes",
        Counter,
        "Bytes the discipline dropped",
        |p| p.stats.dropped_bytes,
    ),
    ("marked", Counter, "Frames marked CE", |p| p.stats.marks),
    (
        "queue_bytes",
        Gauge,
        "Bytes waiting in the port's queue",
        |p| p.backlog_bytes,
    ),
    (
        "queue_frames",
        Gauge,
        "Frames waiting in the port's queue",
        |p| p.backlog_packets,
    ),
    ("max_queue_bytes", Gauge, "Largest queue seen, bytes", |p| {
        p.stats.max_backlog_bytes
    }),
    (
        "ring_drops",
        Counter,
        "Frames lost because the receive ring was full (the switch fell behind)",
        |p| p.ring_drops,
    ),
    ("arp_requests", Counter, "ARP requests sent", |p| {
        p.counters.arp_requests
    }),
    (
        "tx_retries",
        Counter,
        "Sends the kernel refused, tried again",
        |p| p.counters.tx_retries,
    ),
];

impl Snapshot {
    fn encode_all(&self, enc: &mut DescriptorEncoder) -> Fmt {
        for (name, kind, help, get) in PORT_METRICS {
            family(
                enc,
                &format!("eqds_switch_port_{name}"),
                help,
                kind,
                self.ports
                    .iter()
                    .map(|p| ([("port", p.name.clone())], get(p).into())),
            )?;
        }
        let c = &self.counters;
        family(
            enc,
            "eqds_switch_not_forwarded",
            "Frames not forwarded, by reason",
            Counter,
            [
                ("runt", c.runt),
                ("not_ipv4", c.not_ipv4),
                ("bad_ipv4", c.bad_ipv4),
                ("bad_arp", c.bad_arp),
                ("unsupported", c.unsupported),
                ("not_for_us", c.not_for_us),
                ("local", c.local),
                ("ttl_expired", c.ttl_expired),
                ("no_route", c.no_route),
                ("no_neighbour", c.no_neighbour),
                ("no_buffer", c.no_buffer),
            ]
            .into_iter()
            .map(|(reason, v)| ([("reason", reason)], v.into())),
        )?;
        single(
            enc,
            "eqds_switch_arp_seen",
            "ARP packets learnt from",
            Counter,
            c.arp_seen,
        )?;
        single(
            enc,
            "eqds_switch_buffers_in_use",
            "Frame buffers in use",
            Gauge,
            self.buffers_in_use,
        )?;
        single(
            enc,
            "eqds_switch_buffers",
            "Frame buffers in the pool",
            Gauge,
            self.buffers,
        )?;
        single(
            enc,
            "eqds_switch_neighbours",
            "Entries in the ARP cache",
            Gauge,
            self.neighbours,
        )
    }
}

#[derive(Debug)]
struct Scrape {
    snapshot: Snapshot,
    server: ServerStats,
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Fmt {
        self.snapshot.encode_all(&mut encoder)?;
        encode_server(
            &mut encoder,
            "eqds_switch_metrics_connections_cut",
            &self.server,
        )
    }
}

impl Exposition for Snapshot {
    fn render(self, server: &ServerStats) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Scrape {
            snapshot: self,
            server: *server,
        }));
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
            .expect("encoding metrics into a String");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_port_metric_is_rendered_with_its_label() {
        let mut s = Snapshot::default();
        let stats = PortStats {
            trims: 17,
            ..Default::default()
        };
        s.ports.push(PortSnapshot {
            name: "up1".into(),
            counters: PortCounters::default(),
            stats,
            backlog_bytes: 3000,
            backlog_packets: 2,
            ring_drops: 0,
        });
        s.counters.no_route = 4;
        let text = s.render(&ServerStats::default());
        assert!(
            text.contains("eqds_switch_port_trimmed_total{port=\"up1\"} 17"),
            "{text}"
        );
        assert!(text.contains("eqds_switch_port_queue_bytes{port=\"up1\"} 3000"));
        assert!(text.contains("eqds_switch_not_forwarded_total{reason=\"no_route\"} 4"));
        for (name, ..) in PORT_METRICS {
            assert!(text.contains(&format!("eqds_switch_port_{name}")), "{name}");
        }
    }
}
