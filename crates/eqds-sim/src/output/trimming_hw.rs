//! The hardware trimming switch's outputs (`net::trimming_hw`): its columns of
//! `ports.csv`, `pipelines.csv`, the mode transitions in `modes.csv` (the paper's
//! Figure 7), and its part of `summary.json`.

use crate::net::trimming_hw::counters::ModeChange;
use crate::net::trimming_hw::feedback::Mode;
use crate::net::trimming_hw::{Model, TrimmingHw};
use crate::net::Network;
use crate::units::{Time, US};
use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// The header of the columns `ports.csv` gets in runs with a hardware switch.
pub const PORT_COLUMNS: &str =
    ",ingress_trims,deflections,dod_trims,mod_trims,notifications,pessimistic_us,half_us";

/// Per port, the time its pipelines spent PESSIMISTIC (or trimming all) and HALF,
/// the largest over the pipelines (zero for ports that are no switch's).
pub fn port_mode_times(net: &Network, hw: &TrimmingHw, times: &[[Time; 4]]) -> Vec<[Time; 2]> {
    let mut out = vec![[0; 2]; net.ports.len()];
    if times.is_empty() {
        return out;
    }
    let mut i = 0;
    for sp in &hw.switches {
        for _pipe in 0..sp.n_pipes {
            for port in sp.first_port..sp.first_port + sp.n_ports {
                let t = times[i];
                let o = &mut out[port as usize];
                o[0] = o[0].max(t[Mode::Pessimistic as usize] + t[Mode::TrimAll as usize]);
                o[1] = o[1].max(t[Mode::Half as usize]);
                i += 1;
            }
        }
    }
    out
}

/// One port's columns (after [`PORT_COLUMNS`]).
pub fn write_port_columns(
    out: &mut impl Write,
    hw: &TrimmingHw,
    port: usize,
    modes: &[[Time; 2]],
) -> std::io::Result<()> {
    let s = hw.port_stats[port];
    let us = |t: Time| t as f64 / US as f64;
    write!(
        out,
        ",{},{},{},{},{},{:.3},{:.3}",
        s.trims.ingress,
        s.deflections,
        s.trims.dod,
        s.trims.mirrored,
        s.notifications,
        us(modes[port][0]),
        us(modes[port][1])
    )
}

/// `pipelines.csv`: one row per ingress pipeline.
pub fn write_pipelines_csv(path: &Path, net: &Network) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(
        out,
        "switch,pipe,recirc_port,ingress_trims,deflections,dod_trims,mod_trims,\
         recirc_peak_packets,recirc_drops,notifies_sent"
    )?;
    if let Some(hw) = net.trimming_hw.as_deref() {
        for (i, p) in hw.pipe_stats.iter().enumerate() {
            let recirc = hw.first_recirc as usize + i;
            writeln!(
                out,
                "{},{},{recirc},{},{},{},{},{},{},{}",
                p.switch,
                p.pipe,
                p.trims.ingress,
                p.deflections,
                p.trims.dod,
                p.trims.mirrored,
                p.recirc_peak_packets,
                net.ports[recirc].stats.drops,
                p.notifies_sent
            )?;
        }
    }
    out.flush()
}

/// `modes.csv`: every mode transition of every (pipeline, port), in time order.
/// Before its first row a (pipeline, port) is OPTIMISTIC.
pub fn write_modes_csv(path: &Path, log: &[ModeChange]) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(out, "time_ps,switch,pipe,port,mode")?;
    for c in log {
        writeln!(
            out,
            "{},{},{},{},{}",
            c.time,
            c.switch,
            c.pipe,
            c.port,
            c.mode.name()
        )?;
    }
    out.flush()
}

/// The hardware switch's part of the summary: the model and its settings as
/// resolved, the totals of each trimming path, and the recirculation queues.
pub fn summary(net: &Network) -> Option<Value> {
    let hw = net.trimming_hw.as_deref()?;
    let s = &hw.settings;
    let sum = |f: fn(&crate::net::trimming_hw::counters::PortHwStats) -> u64| {
        hw.port_stats.iter().map(f).sum::<u64>()
    };
    let recirc = &net.ports[hw.first_recirc as usize..];
    let recirc_drops: u64 = recirc.iter().map(|p| p.stats.drops).sum();
    let header_drops: u64 = net.ports[..hw.first_recirc as usize]
        .iter()
        .map(|p| p.stats.drops)
        .sum();
    let mut v = json!({
        "model": s.model.name(),
        "pipelines": hw.pipe_stats.len(),
        "ports_per_pipeline": s.ports_per_pipeline,
        "recirculation_rate_bps": recirc.first().map(|p| p.rate_bps),
        "recirculation_latency_ps": s.recirculation_latency,
        "recirculation_limit_packets": s.recirculation_limit_packets,
        "ingress_trims": sum(|p| p.trims.ingress),
        "deflections": sum(|p| p.deflections),
        "dod_trims": sum(|p| p.trims.dod),
        "mod_trims": sum(|p| p.trims.mirrored),
        "notifications": sum(|p| p.notifications),
        "notifies_sent": hw.pipe_stats.iter().map(|p| p.notifies_sent).sum::<u64>(),
        "recirc_peak_packets": hw.pipe_stats.iter().map(|p| p.recirc_peak_packets).max(),
        "recirc_drops": recirc_drops,
        "invariant_losses": recirc_drops + header_drops,
    });
    if matches!(s.model, Model::DeflectOnDrop | Model::Tofino) {
        v["meters"] = json!(format!("{:?}", s.meters).to_lowercase());
        v["meter_rates"] = json!(s.meter_rates);
        v["meter_burst_bytes"] = json!(s.meter_burst_bytes);
    }
    if s.model == Model::Tofino {
        v["t0_ps"] = json!(s.t0);
        v["t1_ps"] = json!(s.t1);
        v["modes"] = json!(format!("{:?}", s.modes));
        v["response"] = json!(format!("{:?}", s.response));
        v["notify_scope"] = json!(format!("{:?}", s.notify_scope).to_lowercase());
        v["notify_latency_ps"] = json!(hw.notify_latency);
    }
    if s.model == Model::Tofino2 {
        v["ingress_lag_ps"] = json!(hw.ingress_lag);
    }
    if s.model == Model::MirrorOnDrop {
        v["mod_target"] = json!(format!("{:?}", s.mod_target).to_lowercase());
    }
    Some(v)
}

/// `arrivals.csv`: the arrival log, in arrival order.
pub fn write_arrivals_csv(
    path: &Path,
    log: &crate::world::arrivals::ArrivalLog,
) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(
        out,
        "time_ps,host,flow,seq,sent_ps,size,trimmed_by,returned"
    )?;
    for a in &log.rows {
        let by = if a.trimmed {
            crate::net::trimming_hw::trim_path::name(u32::from(a.path))
        } else {
            ""
        };
        writeln!(
            out,
            "{},{},{},{},{},{},{by},{}",
            a.time,
            a.host,
            a.flow,
            a.seq,
            a.sent,
            a.size,
            u8::from(a.returned)
        )?;
    }
    out.flush()
}
