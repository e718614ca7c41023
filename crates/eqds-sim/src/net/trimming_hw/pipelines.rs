//! Ingress pipelines and their recirculation ports (§3, "Switch architecture"): a
//! switch's ports are cut into pipelines of `ports_per_pipeline`, each pipeline has
//! its own meters and registers (never shared, §3) and one recirculation port at line
//! rate, through which deflected (DoD) or mirrored (MoD) packets come back to the
//! pipeline's ingress.
//!
//! A recirculation port is an ordinary [`Port`](crate::net::port::Port) appended
//! after the topology's ports: owned by the switch and leading back to it, with the
//! recirculation latency as its link's, a drop-tail queue (the DoD queue) and itself
//! as its reverse, so what it sends arrives as `ArriveFrom` on the recirculation port,
//! which is how ingress tells a recirculated packet from a new one.

use crate::ids::{Node, PortId, SwitchId};
use crate::net::port::pfc_flags;
use crate::net::queue::QueueSpec;
use crate::net::Network;
use crate::units::Time;

/// Most pipelines a switch may have (a notification names its pipeline in a byte,
/// and `u8::MAX` means all of them).
pub const MAX_PIPES: u32 = 254;

/// Where one switch's pipelines sit in the network's ports and in the flat per
/// (pipeline, egress port) state arrays.
#[derive(Clone, Copy, Debug)]
pub struct SwitchPipes {
    /// The switch's first port (its ports are contiguous: down, then up).
    pub first_port: PortId,
    pub n_ports: u32,
    pub ports_per_pipeline: u32,
    pub n_pipes: u32,
    /// Pipeline `p`'s recirculation port is `first_recirc + p`.
    pub first_recirc: PortId,
    /// Index of (pipeline 0, the switch's first port) in the per-entry arrays.
    pub base: usize,
}

impl SwitchPipes {
    /// The pipeline port `port` of this switch feeds.
    #[inline]
    pub fn pipe_of(&self, port: PortId) -> u32 {
        (port - self.first_port) / self.ports_per_pipeline
    }

    /// Index of the state pipeline `pipe` keeps for egress port `egress`.
    #[inline]
    pub fn idx(&self, pipe: u32, egress: PortId) -> usize {
        self.base + (pipe * self.n_ports + (egress - self.first_port)) as usize
    }

    /// Entries this switch needs: one per pipeline per port.
    pub fn entries(&self) -> usize {
        (self.n_pipes * self.n_ports) as usize
    }
}

/// What every recirculation port is made of.
pub struct Recirculation {
    /// `None`: the switch's fastest port.
    pub rate_bps: Option<u64>,
    pub latency: Time,
    /// Packets the DoD (MoD) queue may hold; `None`: unbounded.
    pub limit_packets: Option<u32>,
}

/// Cuts every switch into pipelines and appends their recirculation ports, returning
/// the layout of each switch (indexed by switch id). Links into a switch are marked
/// to report the port a packet arrives from, so that ingress knows its pipeline.
pub fn add_pipelines(
    net: &mut Network,
    ports_per_pipeline: u32,
    recirc: &Recirculation,
) -> Result<Vec<SwitchPipes>, String> {
    if ports_per_pipeline == 0 {
        return Err("switch.pipelines.ports_per_pipeline: must be at least 1".into());
    }
    let tier = net.tier("recirculation");
    let mut layout = Vec::with_capacity(net.switches.len());
    let mut base = 0;
    for s in 0..net.switches.len() {
        let sw = &net.switches[s];
        let (first_port, n_ports) = (sw.first_down, sw.n_down + sw.n_up);
        let n_pipes = n_ports.div_ceil(ports_per_pipeline);
        if n_pipes > MAX_PIPES {
            return Err(format!(
                "switch.pipelines.ports_per_pipeline: switch {s} has {n_ports} ports, so {ports_per_pipeline} per pipeline makes {n_pipes} pipelines (at most {MAX_PIPES})"
            ));
        }
        let fastest = (first_port..first_port + n_ports)
            .map(|p| net.ports[p as usize].rate_bps)
            .max()
            .unwrap_or(1);
        let rate = recirc.rate_bps.unwrap_or(fastest);
        let first_recirc = net.ports.len() as PortId;
        for _ in 0..n_pipes {
            let queue = QueueSpec::DropTail {
                limit_packets: recirc.limit_packets,
                limit_bytes: None,
            }
            .build_seeded(0);
            let id = net.push_port(Node::Switch(s as SwitchId), queue);
            let port = &mut net.ports[id as usize];
            port.peer = Node::Switch(s as SwitchId);
            port.rate_bps = rate;
            port.latency = recirc.latency;
            port.tier = tier;
            port.pfc_flags = pfc_flags::ARRIVE_FROM | pfc_flags::RECORD_TX;
            net.reverse[id as usize] = id;
        }
        let pipes = SwitchPipes {
            first_port,
            n_ports,
            ports_per_pipeline,
            n_pipes,
            first_recirc,
            base,
        };
        base += pipes.entries();
        layout.push(pipes);
    }
    // Every link into a switch says which port it comes from.
    for port in net.ports.iter_mut() {
        if matches!(port.peer, Node::Switch(_)) {
            port.pfc_flags |= pfc_flags::ARRIVE_FROM;
        }
    }
    Ok(layout)
}
