//! Time-series outputs, streamed to CSV while the run goes on.
//!
//! `queues.csv`: `time_ps,port,tier,backlog_bytes,backlog_packets` for the selected
//! ports at every sample. `flow_series.csv`: `time_ps,flow,throughput_bps` for every
//! flow that delivered bytes during the interval ending at `time_ps`.
//! `rates.csv`: `time_ps,flow,rate_bps`, a line each time a RoCE sender's pacing
//! rate changes (written at the end, from the run's log).
//! `queue_flows.csv` (with `queue_series.flows`): `tier,packets,count`: over every
//! sample and selected port of the tier, how many times a flow held exactly
//! `packets` packets in the port's queue (flows holding none are not counted).

use crate::flow::FlowRecord;
use crate::ids::{IdHasher, PortId};
use crate::net::packet::PacketSlab;
use crate::net::queue::flow_key;
use crate::net::Network;
use crate::scenario::QueueSeriesSpec;
use crate::units::{Time, SEC};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::hash::BuildHasherDefault;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

pub struct QueueSeries {
    out: BufWriter<File>,
    ports: Vec<PortId>,
    /// With `flows`: the per-flow occupancy counts and where they go.
    flows: Option<FlowOccupancy>,
}

/// Packets per flow in the sampled queues, summed over the samples.
struct FlowOccupancy {
    path: PathBuf,
    /// Scratch: one port's packets per flow key.
    held: HashMap<u64, u32, BuildHasherDefault<IdHasher>>,
    /// (tier, packets a flow held) → times seen.
    counts: BTreeMap<(u8, u32), u64>,
}

impl QueueSeries {
    pub fn create(dir: &Path, net: &Network, spec: &QueueSeriesSpec) -> std::io::Result<Self> {
        let ports = (0..net.ports.len() as PortId)
            .filter(|&p| spec.ports.as_ref().is_none_or(|list| list.contains(&p)))
            .filter(|&p| {
                let tier = net.tier_names[net.ports[p as usize].tier as usize];
                spec.tiers
                    .as_ref()
                    .is_none_or(|list| list.iter().any(|t| t == tier))
            })
            .collect();
        let mut out = BufWriter::new(File::create(dir.join("queues.csv"))?);
        writeln!(out, "time_ps,port,tier,backlog_bytes,backlog_packets")?;
        let flows = spec.flows.then(|| FlowOccupancy {
            path: dir.join("queue_flows.csv"),
            held: HashMap::default(),
            counts: BTreeMap::new(),
        });
        Ok(QueueSeries { out, ports, flows })
    }

    pub fn sample(&mut self, now: Time, net: &Network, pkts: &PacketSlab) -> std::io::Result<()> {
        for &p in &self.ports {
            let tier = net.ports[p as usize].tier;
            let queue = &net.queues[p as usize];
            let (b, n) = (queue.backlog_bytes(), queue.backlog_packets());
            let name = net.tier_names[tier as usize];
            writeln!(self.out, "{now},{p},{name},{b},{n}")?;
            if let Some(occ) = &mut self.flows {
                if n > 0 {
                    occ.held.clear();
                    queue.for_each_queued(&mut |pkt| {
                        *occ.held.entry(flow_key(pkts.get(pkt))).or_insert(0) += 1;
                    });
                    for &held in occ.held.values() {
                        *occ.counts.entry((tier, held)).or_insert(0) += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// Flushes `queues.csv` and writes `queue_flows.csv`; `tier_names` names the
    /// tiers.
    pub fn finish(&mut self, tier_names: &[&str]) -> std::io::Result<()> {
        if let Some(occ) = &self.flows {
            let mut out = BufWriter::new(File::create(&occ.path)?);
            writeln!(out, "tier,packets,count")?;
            for (&(tier, packets), count) in &occ.counts {
                writeln!(out, "{},{packets},{count}", tier_names[tier as usize])?;
            }
            out.flush()?;
        }
        self.out.flush()
    }
}

pub struct FlowSeries {
    out: BufWriter<File>,
}

impl FlowSeries {
    pub fn create(dir: &Path) -> std::io::Result<Self> {
        let mut out = BufWriter::new(File::create(dir.join("flow_series.csv"))?);
        writeln!(out, "time_ps,flow,throughput_bps")?;
        Ok(FlowSeries { out })
    }

    pub fn sample(
        &mut self,
        now: Time,
        interval: Time,
        flows: &mut [FlowRecord],
    ) -> std::io::Result<()> {
        for (id, f) in flows.iter_mut().enumerate() {
            let bytes = f.delivered - f.delivered_at_sample;
            if bytes > 0 {
                let bps = bytes as u128 * 8 * SEC as u128 / interval as u128;
                writeln!(self.out, "{now},{id},{bps}")?;
                f.delivered_at_sample = f.delivered;
            }
        }
        Ok(())
    }

    pub fn finish(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Writes `rates.csv` from the run's log of RoCE senders' rate changes.
pub fn write_rates_csv(
    path: &Path,
    log: &[(Time, crate::ids::FlowId, f64)],
) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(out, "time_ps,flow,rate_bps")?;
    for &(t, flow, rate) in log {
        writeln!(out, "{t},{flow},{}", rate.round() as u64)?;
    }
    out.flush()
}
