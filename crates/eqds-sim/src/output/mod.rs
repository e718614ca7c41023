//! What a run writes: `flows.csv`, `summary.json`, optional `ports.csv`, `paths.csv` and time
//! series, and `perf.json` (wall time and memory, kept apart because they differ from
//! run to run while everything else is byte-identical for the same scenario and seed).

pub mod series;
mod stats;
pub mod trimming_hw;

pub use stats::{jain_index, percentile};

use crate::eqds::EqdsLayer;
use crate::flow::FlowRecord;
use crate::net::Network;
use crate::scenario::Loaded;
use crate::units::{Time, SEC};
use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Why the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `stop.time` was reached.
    Time,
    /// Every flow completed.
    FlowsComplete,
    /// Nothing was left to happen.
    Idle,
}

/// What a finished run reports besides its flows and ports. The run loop (`sim`)
/// fills it in; it is defined here, beside the summary that reports it, so that
/// `sim` can write its time series through this module without a cycle back.
#[derive(Clone, Copy, Debug)]
pub struct RunStats {
    pub end_time: Time,
    pub reason: StopReason,
    pub events: u64,
    pub peak_packets: u32,
    /// Events processed before the first one at or after warm-up, and the wall clock
    /// then (`None` if the run ended first): `perf.json` measures the run's rate past
    /// its start-up from here. Not part of the deterministic outputs.
    pub warmed_at: Option<(u64, std::time::Instant)>,
    /// One event in 64 past warm-up timed by kind, and the clock's ticks from
    /// warm-up to the end of the run (see `engine::event_costs`). Not deterministic.
    /// `None` unless the scenario asked for them (`[output] event_costs`).
    #[cfg(feature = "event-costs")]
    pub event_costs: Option<(crate::engine::event_costs::EventCosts, u64)>,
}

/// A flow's mean throughput in bits/s: size over FCT for a completed flow, otherwise
/// distinct bytes received since warm-up over the time since warm-up (or its start).
pub fn flow_throughput_bps(f: &FlowRecord, warmup: Time, end: Time) -> f64 {
    if let Some(fct) = f.fct() {
        return if fct == 0 {
            0.0
        } else {
            f.delivered as f64 * 8.0 * SEC as f64 / fct as f64
        };
    }
    let from = warmup.max(f.spec.start);
    if end <= from {
        return 0.0;
    }
    (f.received - f.received_at_warmup) as f64 * 8.0 * SEC as f64 / (end - from) as f64
}

pub fn write_flows_csv(
    path: &Path,
    flows: &[FlowRecord],
    warmup: Time,
    end: Time,
) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(
        out,
        "id,src,dst,protocol,workload,size_bytes,start_ps,end_ps,fct_ps,bytes_delivered,bytes_received,retransmits,timeouts,\
         spurious_timeouts,rtt_samples,rtt_mean_ps,rtt_min_ps,rtt_max_ps,mean_throughput_bps"
    )?;
    for (id, f) in flows.iter().enumerate() {
        let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let rtt_mean = (f.rtt_samples > 0).then(|| f.rtt_sum / f.rtt_samples);
        let rtt_min = (f.rtt_samples > 0).then_some(f.rtt_min);
        let rtt_max = (f.rtt_samples > 0).then_some(f.rtt_max);
        writeln!(
            out,
            "{id},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.0}",
            f.spec.src,
            f.spec.dst,
            f.spec.protocol.name(),
            f.spec.origin,
            opt(f.spec.size),
            f.spec.start,
            opt(f.end),
            opt(f.fct()),
            f.delivered,
            f.received,
            f.retransmits,
            f.timeouts,
            f.spurious_timeouts,
            f.rtt_samples,
            opt(rtt_mean),
            opt(rtt_min),
            opt(rtt_max),
            flow_throughput_bps(f, warmup, end),
        )?;
    }
    out.flush()
}

/// One row per path id that carried DATA, per tunnel: what the sending EQIF (`eqif`,
/// 0 unless a host has several) saw on it (`eqds_proto::paths`). RTT columns are
/// empty without samples.
pub fn write_paths_csv(path: &Path, eqds: &EqdsLayer) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(
        out,
        "src,eqif,dst,path,sent,acked,trimmed,timed_out,rtt_samples,rtt_mean_ps,rtt_min_ps,rtt_max_ps,srtt_ps"
    )?;
    let tunnels = eqds.hosts.iter().enumerate().flat_map(|(src, h)| {
        h.host
            .uplink()
            .eqifs()
            .enumerate()
            .flat_map(move |(eqif, tx)| tx.tunnels().map(move |(dst, _)| (src, eqif, tx, dst)))
    });
    for (src, eqif, tx, dst) in tunnels {
        let paths = tx.path_stats(dst).unwrap_or_default();
        for (id, p) in paths.iter().enumerate().filter(|(_, p)| p.sent > 0) {
            let sampled = |v: u64| {
                if p.rtt_samples > 0 {
                    v.to_string()
                } else {
                    String::new()
                }
            };
            writeln!(
                out,
                "{src},{eqif},{dst},{id},{},{},{},{},{},{},{},{},{}",
                p.sent,
                p.acked,
                p.trimmed,
                p.timed_out,
                p.rtt_samples,
                p.mean_rtt().map(|m| m.to_string()).unwrap_or_default(),
                sampled(p.min_rtt),
                sampled(p.max_rtt),
                sampled(p.srtt),
            )?;
        }
    }
    out.flush()
}

pub fn write_ports_csv(path: &Path, net: &Network, end: Time) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    write!(
        out,
        "port,tier,owner,peer,rate_bps,tx_packets,tx_bytes,utilisation,drops,dropped_bytes,marks,trims,returns,max_backlog_bytes"
    )?;
    let pfc = net.pfc.as_deref();
    if pfc.is_some() {
        // PFC's columns, only in runs with PFC so that other runs' files stay as
        // they were. Sent/received count frames on this port's link: sent up it by
        // this port's device as the link's receiving end, received by it as the
        // sending end; paused_us is how long its lossless priorities could not send.
        write!(
            out,
            ",pause_sent,resume_sent,pause_received,paused_us,headroom_bytes,\
             max_ingress_bytes,max_headroom_bytes,headroom_drops,lossless_drops,\
             watchdog_drops,storms"
        )?;
    }
    let iofd = net.iofd.as_deref();
    if iofd.is_some() {
        // IOFD's columns, likewise only in runs with IOFD: flows moved off and onto
        // the port, and data packets it sent although ECMP chose another port.
        write!(out, ",iofd_moves_out,iofd_moves_in,iofd_deflected_packets")?;
    }
    let hw = net.trimming_hw.as_deref();
    let hw_modes = match hw {
        Some(hw) => {
            // The hardware switch's columns, only in runs with one.
            write!(out, "{}", trimming_hw::PORT_COLUMNS)?;
            trimming_hw::port_mode_times(net, hw, &hw.modes_at_end(end).0)
        }
        None => Vec::new(),
    };
    let afq = net.queues.iter().any(|q| q.afq_counters().is_some());
    if afq {
        // AFQ's columns, only in runs with an AFQ port (empty on other ports): its
        // two kinds of drop (also in `drops`), packets served after a later round's,
        // and, with `count_misqueued`, arrivals whose sketch bid fell in a later
        // round than their exact bid, out of those compared.
        write!(
            out,
            ",afq_horizon_drops,afq_buffer_drops,afq_out_of_order,afq_misqueued,afq_compared"
        )?;
    }
    writeln!(out)?;
    let node = |n: crate::ids::Node| match n {
        crate::ids::Node::Host(h) => format!("h{h}"),
        crate::ids::Node::Switch(s) => format!("s{s}"),
    };
    for (id, p) in net.ports.iter().enumerate() {
        let s = &p.stats;
        write!(
            out,
            "{id},{},{},{},{},{},{},{:.6},{},{},{},{},{},{}",
            net.tier_names[p.tier as usize],
            node(p.owner),
            node(p.peer),
            p.rate_bps,
            s.tx_packets,
            s.tx_bytes,
            utilisation(s.tx_bytes, p.rate_bps, end),
            s.drops,
            s.dropped_bytes,
            s.marks,
            s.trims,
            s.returns,
            s.max_backlog_bytes
        )?;
        if let Some(pfc) = pfc {
            let f = pfc.port_stats(end, id as u32);
            write!(
                out,
                ",{},{},{},{:.3},{},{},{},{},{},{},{}",
                f.frames.pause_sent,
                f.frames.resume_sent,
                f.frames.pause_received,
                f.frames.paused_time as f64 / crate::units::US as f64,
                f.headroom_bytes,
                f.max_ingress_bytes,
                f.max_headroom_bytes,
                f.headroom_drops,
                f.lossless_drops,
                f.watchdog_drops,
                f.storms
            )?;
        }
        if let Some(iofd) = iofd {
            let f = iofd.port_stats[id];
            write!(
                out,
                ",{},{},{}",
                f.moves_out, f.moves_in, f.deflected_packets
            )?;
        }
        if let Some(hw) = hw {
            trimming_hw::write_port_columns(&mut out, hw, id, &hw_modes)?;
        }
        if afq {
            match net.queues[id].afq_counters() {
                Some(c) => {
                    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
                    write!(
                        out,
                        ",{},{},{},{},{}",
                        c.horizon_drops,
                        c.buffer_drops,
                        c.out_of_order,
                        opt(c.misqueued),
                        opt(c.compared)
                    )?;
                }
                None => write!(out, ",,,,,")?,
            }
        }
        writeln!(out)?;
    }
    out.flush()
}

/// IOFD's part of the summary: its settings as resolved, the run totals, and the
/// moves per port tier.
pub fn iofd_summary(net: &Network) -> Option<Value> {
    let iofd = net.iofd.as_deref()?;
    let s = &iofd.settings;
    let mut tiers = serde_json::Map::new();
    for (t, name) in net.tier_names.iter().enumerate() {
        if s.tiers & (1 << t) == 0 {
            continue;
        }
        let of_tier = || {
            net.ports
                .iter()
                .zip(&iofd.port_stats)
                .filter(move |(p, _)| p.tier as usize == t)
                .map(|(_, s)| s)
        };
        tiers.insert(
            name.to_string(),
            json!({
                "moves_out": of_tier().map(|s| s.moves_out).sum::<u64>(),
                "deflected_packets": of_tier().map(|s| s.deflected_packets).sum::<u64>(),
            }),
        );
    }
    let mut v = serde_json::to_value(iofd.counters).expect("counters serialise");
    v["threshold_bytes"] = json!(s.threshold_bytes);
    v["max_deflections"] = json!(s.max_deflections);
    v["move_gap_ps"] = json!(s.move_gap);
    v["idle_timeout_ps"] = json!(s.idle_timeout);
    v["max_flows_per_switch"] = json!(iofd.max_table_len());
    v["tiers"] = Value::Object(tiers);
    if let Some(r) = &iofd.resequencer {
        let mut rv = serde_json::to_value(r.counters).expect("counters serialise");
        rv["timeout_ps"] = json!(r.settings.timeout);
        rv["buffer_bytes"] = json!(r.settings.buffer_bytes);
        rv["flows_at_end"] = json!(r.flows());
        v["resequencer"] = rv;
    }
    Some(v)
}

/// PFC's part of the summary: frames, time paused and drops per link tier and per
/// switch, the invariants' counters, thresholds, and any deadlock found.
pub fn pfc_summary(net: &Network, end: Time) -> Option<Value> {
    let pfc = net.pfc.as_deref()?;
    let stats: Vec<_> = (0..net.ports.len() as u32)
        .map(|p| pfc.port_stats(end, p))
        .collect();
    let mut tiers = serde_json::Map::new();
    for (t, name) in net.tier_names.iter().enumerate() {
        let of_tier = || {
            net.ports
                .iter()
                .zip(&stats)
                .filter(move |(p, _)| p.tier as usize == t)
                .map(|(_, s)| s)
        };
        tiers.insert(
            name.to_string(),
            json!({
                // Frames sent by the far end of these links to stop their senders.
                "pause_received": of_tier().map(|s| s.frames.pause_received).sum::<u64>(),
                "paused_us_total": of_tier().map(|s| s.frames.paused_time).sum::<u64>() as f64 / crate::units::US as f64,
                "paused_us_max": of_tier().map(|s| s.frames.paused_time).max().unwrap_or(0) as f64 / crate::units::US as f64,
            }),
        );
    }
    let per_switch: Vec<Value> = net
        .switches
        .iter()
        .zip(pfc.max_buffer_used())
        .zip(pfc.thresholds())
        .map(|((sw, used), (xoff, xon))| {
            let ports = sw.first_down as usize..(sw.first_up + sw.n_up) as usize;
            json!({
                "pause_sent": stats[ports.clone()].iter().map(|s| s.frames.pause_sent).sum::<u64>(),
                "resume_sent": stats[ports.clone()].iter().map(|s| s.frames.resume_sent).sum::<u64>(),
                "max_shared_bytes": used,
                "xoff_empty_bytes": xoff,
                "xon_empty_bytes": xon,
                "headroom_bytes": stats[ports].iter().map(|s| s.headroom_bytes).max().unwrap_or(0),
            })
        })
        .collect();
    let sum =
        |f: fn(&crate::net::pfc::fabric::PortPfcStats) -> u64| stats.iter().map(f).sum::<u64>();
    Some(json!({
        "first_pause_ps": pfc.first_pause,
        "pause_sent": sum(|s| s.frames.pause_sent),
        "resume_sent": sum(|s| s.frames.resume_sent),
        "pause_received": sum(|s| s.frames.pause_received),
        "host_paused_us_total": stats[..net.n_hosts as usize].iter().map(|s| s.frames.paused_time).sum::<u64>() as f64 / crate::units::US as f64,
        "headroom_drops": sum(|s| s.headroom_drops),
        "lossless_drops": sum(|s| s.lossless_drops),
        "watchdog_drops": sum(|s| s.watchdog_drops),
        "storms": sum(|s| s.storms),
        "max_headroom_used_bytes": stats.iter().map(|s| s.max_headroom_bytes).max().unwrap_or(0),
        "links": tiers,
        "switches": per_switch,
        "deadlocks": pfc.deadlocks.iter().map(|d| json!({
            "since_ps": d.since,
            "ports": d.ports,
        })).collect::<Vec<_>>(),
    }))
}

fn utilisation(tx_bytes: u64, rate_bps: u64, end: Time) -> f64 {
    if end == 0 {
        return 0.0;
    }
    tx_bytes as f64 * 8.0 * SEC as f64 / (rate_bps as f64 * end as f64)
}

/// Percentile summary of a sample (empty object if there are no values).
fn distribution(mut values: Vec<f64>) -> Value {
    if values.is_empty() {
        return json!({ "count": 0 });
    }
    values.sort_by(f64::total_cmp);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    json!({
        "count": values.len(),
        "mean": mean,
        "min": values[0],
        "p1": percentile(&values, 1.0),
        "p10": percentile(&values, 10.0),
        "p50": percentile(&values, 50.0),
        "p90": percentile(&values, 90.0),
        "p95": percentile(&values, 95.0),
        "p99": percentile(&values, 99.0),
        "max": values[values.len() - 1],
    })
}

/// The deterministic run summary.
pub fn summary(
    loaded: &Loaded,
    net: &Network,
    flows: &[FlowRecord],
    stats: &RunStats,
    warmup: Time,
) -> Value {
    let end = stats.end_time;
    let throughputs: Vec<f64> = flows
        .iter()
        .filter(|f| f.spec.start < end)
        .map(|f| flow_throughput_bps(f, warmup, end))
        .collect();
    let fractions: Vec<f64> = flows
        .iter()
        .filter(|f| f.spec.start < end)
        .map(|f| {
            flow_throughput_bps(f, warmup, end)
                / net.host_rate(f.spec.src).min(net.host_rate(f.spec.dst)) as f64
        })
        .collect();
    let fcts: Vec<f64> = flows
        .iter()
        .filter_map(|f| f.fct())
        .map(|t| t as f64)
        .collect();
    let mut tiers = serde_json::Map::new();
    for (t, name) in net.tier_names.iter().enumerate() {
        let ports: Vec<_> = net.ports.iter().filter(|p| p.tier as usize == t).collect();
        let utils: Vec<f64> = ports
            .iter()
            .map(|p| utilisation(p.stats.tx_bytes, p.rate_bps, end))
            .collect();
        tiers.insert(
            name.to_string(),
            json!({
                "ports": ports.len(),
                "mean_utilisation": utils.iter().sum::<f64>() / utils.len().max(1) as f64,
                "max_utilisation": utils.iter().cloned().fold(0.0, f64::max),
                "tx_bytes": ports.iter().map(|p| p.stats.tx_bytes).sum::<u64>(),
                "drops": ports.iter().map(|p| p.stats.drops).sum::<u64>(),
                "marks": ports.iter().map(|p| p.stats.marks).sum::<u64>(),
                "trims": ports.iter().map(|p| p.stats.trims).sum::<u64>(),
                "returns": ports.iter().map(|p| p.stats.returns).sum::<u64>(),
                "max_backlog_bytes": ports.iter().map(|p| p.stats.max_backlog_bytes).max().unwrap_or(0),
            }),
        );
    }
    let sum = |f: fn(&FlowRecord) -> u64| flows.iter().map(f).sum::<u64>();
    let mut summary = json!({
        "simulator": concat!("eqds-sim ", env!("CARGO_PKG_VERSION")),
        "scenario_file": loaded.file,
        "scenario": loaded.table,
        "seed": loaded.scenario.seed,
        "end_time_ps": end,
        "stop_reason": stats.reason,
        "warmup_ps": warmup,
        "flows": {
            "total": flows.len(),
            "started": flows.iter().filter(|f| f.spec.start <= end).count(),
            "completed": flows.iter().filter(|f| f.end.is_some()).count(),
            "bytes_delivered": sum(|f| f.delivered),
            "retransmits": sum(|f| f.retransmits),
            "timeouts": sum(|f| f.timeouts),
            "spurious_timeouts": sum(|f| f.spurious_timeouts),
        },
        "throughput_bps": distribution(throughputs.clone()),
        "throughput_fraction_of_line_rate": distribution(fractions),
        "jain_index": jain_index(&throughputs),
        "fct_ps": distribution(fcts),
        "links": tiers,
        "totals": {
            "drops": net.ports.iter().map(|p| p.stats.drops).sum::<u64>(),
            "marks": net.ports.iter().map(|p| p.stats.marks).sum::<u64>(),
            "trims": net.ports.iter().map(|p| p.stats.trims).sum::<u64>(),
            "returns": net.ports.iter().map(|p| p.stats.returns).sum::<u64>(),
            "tx_packets": net.ports.iter().map(|p| p.stats.tx_packets).sum::<u64>(),
        },
        "engine": {
            "events": stats.events,
            "peak_packets_in_flight": stats.peak_packets,
            "hosts": net.n_hosts,
            "switches": net.switches.len(),
            "ports": net.ports.len(),
        },
    });
    // Only runs with a `random_loss` queue have the key, so others read as before.
    let sc = &loaded.scenario;
    if sc.switch.queue.loses_at_random() || sc.host.queue.loses_at_random() {
        let losses: u64 = net.ports.iter().map(|p| p.stats.random_losses).sum();
        summary["totals"]["random_losses"] = json!(losses);
    }
    summary
}
