//! Flows: what the workload asks for, and what the transports report back.

use crate::ids::{EndpointId, HostId};
use crate::units::Time;
use serde::Deserialize;

/// The transport protocol of a flow (`[transport] protocol`, or a workload's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// TCP NewReno (RFC 5681 / RFC 6582).
    #[serde(alias = "tcp")]
    Newreno,
    /// TCP Cubic (RFC 9438).
    Cubic,
    /// DCTCP (RFC 8257), with ECN marking expected at the switches.
    Dctcp,
    /// TCP Vegas (delay-based; Linux's alpha 2, beta 4, gamma 1).
    Vegas,
    /// TCP BBR, version 1 (model-based, paced; Linux's `tcp_bbr.c`).
    Bbr,
    /// NDP (Handley et al., SIGCOMM 2017): receiver-pulled, sprayed, needs trimming
    /// switches. Parameters in `[transport.ndp]`.
    Ndp,
    /// MPTCP with linked-increases coupled congestion control (RFC 6356) over
    /// NewReno subflows. Parameters in `[transport.mptcp]`.
    Mptcp,
    /// An application writing datagrams straight into EQDS (the paper's eqdsperf):
    /// EQDS alone carries the flow. Parameters in `[eqds]`.
    Eqds,
    /// Unresponsive constant-bit-rate UDP. Parameters in `[transport.udp]`.
    Udp,
    /// RoCEv2 reliable connection (go-back-N) with DCQCN (Zhu et al., SIGCOMM 2015).
    /// Parameters in `[transport.roce]`.
    Roce,
    /// Packet-pair flow control as the AFQ paper adapts it (NSDI 2018, §5): pairs at
    /// line rate, rate from their gap, for fair-queueing switches. Parameters in
    /// `[transport.packet_pair]`.
    PacketPair,
}

impl Protocol {
    /// Every protocol, in declaration order: `ALL[p as usize] == p`.
    pub const ALL: [Protocol; 11] = [
        Protocol::Newreno,
        Protocol::Cubic,
        Protocol::Dctcp,
        Protocol::Vegas,
        Protocol::Bbr,
        Protocol::Ndp,
        Protocol::Mptcp,
        Protocol::Eqds,
        Protocol::Udp,
        Protocol::Roce,
        Protocol::PacketPair,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Newreno => "newreno",
            Protocol::Cubic => "cubic",
            Protocol::Dctcp => "dctcp",
            Protocol::Vegas => "vegas",
            Protocol::Bbr => "bbr",
            Protocol::Ndp => "ndp",
            Protocol::Mptcp => "mptcp",
            Protocol::Eqds => "eqds",
            Protocol::Udp => "udp",
            Protocol::Roce => "roce",
            Protocol::PacketPair => "packet_pair",
        }
    }
}

/// A flow the workload wants: `size` bytes from `src` to `dst` from `start` on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub src: HostId,
    pub dst: HostId,
    /// Bytes to deliver; `None` sends for ever (until the run stops).
    pub size: Option<u64>,
    pub start: Time,
    /// Transport protocol of the flow.
    pub protocol: Protocol,
    /// Index of the workload that made it (the scenario's `workload` list).
    pub origin: u16,
    /// Legacy traffic: never tunnelled, even when EQDS tunnels every transport
    /// (`[eqds] legacy_workloads`).
    pub legacy: bool,
}

/// A flow's record: its spec plus every counter the outputs report.
#[derive(Clone, Debug)]
pub struct FlowRecord {
    pub spec: FlowSpec,
    pub sender: EndpointId,
    pub receiver: EndpointId,
    /// When the receiver held every byte.
    pub end: Option<Time>,
    /// Payload bytes delivered in order to the receiver.
    pub delivered: u64,
    /// Distinct payload bytes that reached the receiver, in order or not. Steady-state
    /// throughput uses this, so a hole filled late does not count its backlog twice.
    pub received: u64,
    /// `received` when the warm-up period ended.
    pub received_at_warmup: u64,
    /// `delivered` at the last time-series sample.
    pub delivered_at_sample: u64,
    /// Data packets sent again.
    pub retransmits: u64,
    pub timeouts: u64,
    /// Of `timeouts`, those found spurious and undone (Eifel).
    pub spurious_timeouts: u64,
    pub rtt_samples: u64,
    pub rtt_sum: Time,
    pub rtt_min: Time,
    pub rtt_max: Time,
}

impl FlowRecord {
    pub fn new(spec: FlowSpec, sender: EndpointId, receiver: EndpointId) -> Self {
        FlowRecord {
            spec,
            sender,
            receiver,
            end: None,
            delivered: 0,
            received: 0,
            received_at_warmup: 0,
            delivered_at_sample: 0,
            retransmits: 0,
            timeouts: 0,
            spurious_timeouts: 0,
            rtt_samples: 0,
            rtt_sum: 0,
            rtt_min: Time::MAX,
            rtt_max: 0,
        }
    }

    pub fn record_rtt(&mut self, rtt: Time) {
        self.rtt_samples += 1;
        self.rtt_sum += rtt;
        self.rtt_min = self.rtt_min.min(rtt);
        self.rtt_max = self.rtt_max.max(rtt);
    }

    pub fn fct(&self) -> Option<Time> {
        self.end.map(|e| e - self.spec.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_protocols_are_listed_in_declaration_order() {
        for (i, p) in Protocol::ALL.iter().enumerate() {
            assert_eq!(*p as usize, i, "{}", p.name());
        }
    }
}
