//! Making a flow's two endpoints when it starts, with its protocol's parameters.
//!
//! The parameters are worked out once, when the run is built, from `[transport]` and
//! `[eqds]`; a flow's start only picks its protocol's and draws its ECMP hash.

use crate::flow::Protocol;
use crate::ids::FlowId;
use crate::scenario::{
    Coupling, DcqcnProfile, DcqcnSpec, EqdsSpec, RoceOpcode, RoceRecovery, TransportSpec,
    ROCE_RETH_BYTES,
};
use crate::transport::cc::CcKind;
use crate::transport::eqds_app::{EqdsAppReceiver, EqdsAppSender};
use crate::transport::mptcp::{MptcpReceiver, MptcpSender};
use crate::transport::ndp::{NdpConfig, NdpReceiver, NdpSender};
use crate::transport::packet_pair::{PacketPairConfig, PacketPairReceiver, PacketPairSender};
use crate::transport::roce::dcqcn::{DcqcnParams, Profile};
use crate::transport::roce::{Recovery, RoceConfig, RoceReceiver, RoceSender};
use crate::transport::tcp::{DelayedAck, TcpConfig, TcpReceiver, TcpSender};
use crate::transport::udp::{UdpConfig, UdpReceiver, UdpSender};
use crate::transport::{Endpoint, Ends};
use crate::world::World;
use rand::Rng;

/// A flow's sender and receiver.
pub(super) type Pair = (Box<dyn Endpoint>, Box<dyn Endpoint>);

/// Every protocol's parameters for this run.
pub(super) struct EndpointFactory {
    /// TCP parameters per protocol (indexed by `Protocol as usize`; MPTCP's entry
    /// is its subflows'): for every flow (segments shrunk to fit when EQDS tunnels
    /// them), and for legacy flows (full-size segments, `[eqds] legacy_class`).
    tcp: [TcpConfig; Protocol::ALL.len()],
    tcp_legacy: [TcpConfig; Protocol::ALL.len()],
    udp_rate: u64,
    ndp: NdpConfig,
    mptcp_subflows: u32,
    mptcp_nic_limit: u32,
    roce: RoceConfig,
    /// DCQCN's profile and overrides, if RoCE flows run it.
    dcqcn: Option<DcqcnSpec>,
    packet_pair: PacketPairConfig,
}

impl EndpointFactory {
    /// The parameters of `t`, with EQDS's bearing on them (`eqds`), on a network of
    /// `paths` equal-cost paths whose longest loaded round trip holds `bdp_packets`
    /// full packets (the receiver-driven window, `Network::max_loaded_rtt`).
    pub(super) fn new(t: &TransportSpec, eqds: &EqdsSpec, paths: u32, bdp_packets: u32) -> Self {
        let mut tcp = Protocol::ALL.map(|p| tcp_config(t, p));
        let mut tcp_legacy = tcp;
        if let Some(class) = eqds.legacy_class {
            for cfg in &mut tcp_legacy {
                cfg.class = class;
            }
        }
        if eqds.enabled {
            // TCP over EQDS: segments shrink so that encapsulated they fit the MTU.
            for cfg in &mut tcp {
                cfg.mss -= eqds.overhead.0 as u32;
            }
        }
        EndpointFactory {
            tcp,
            tcp_legacy,
            udp_rate: t.udp.rate.map_or(0, |r| r.0),
            ndp: ndp_config(t, paths, bdp_packets),
            mptcp_subflows: t.mptcp.subflows,
            mptcp_nic_limit: t.mptcp.nic_limit,
            roce: roce_config(t),
            dcqcn: t.roce.dcqcn.enabled.then(|| t.roce.dcqcn.clone()),
            packet_pair: packet_pair_config(t),
        }
    }

    /// DCQCN's parameters for a RoCE sender whose NIC runs at `line_rate_bps`, if
    /// RoCE flows run DCQCN.
    pub(super) fn dcqcn(&self, line_rate_bps: u64) -> Option<DcqcnParams> {
        self.dcqcn.as_ref().map(|d| dcqcn_params(d, line_rate_bps))
    }

    /// Checks DCQCN's parameters at each of the NIC rates in `rates`: a profile
    /// scales with the line rate, and an override may not fit every one.
    pub(super) fn check_dcqcn(&self, rates: &[u64]) -> Result<(), String> {
        let mut rates = rates.to_vec();
        rates.sort_unstable();
        rates.dedup();
        for rate in rates {
            if let Some(p) = self.dcqcn(rate) {
                p.validate()
                    .map_err(|e| format!("{e} (for a sender at {} Gbps)", rate as f64 / 1e9))?;
            }
        }
        Ok(())
    }

    /// The endpoints of `flow`, sender first. Draws the flow's 5-tuple hash (and
    /// MPTCP's other subflows') from the run's generator.
    pub(super) fn create(&self, world: &mut World, flow: FlowId) -> Pair {
        let rec = &world.flows[flow as usize];
        let spec = rec.spec;
        let (s, r) = (rec.sender, rec.receiver);
        let cfg = if spec.legacy {
            self.tcp_legacy[spec.protocol as usize]
        } else {
            self.tcp[spec.protocol as usize]
        };
        // A random 5-tuple hash: what ECMP switches see of this flow.
        let entropy: u32 = world.rng.random();
        let ends = Ends {
            flow,
            host: spec.src,
            me: s,
            peer_host: spec.dst,
            peer: r,
        };
        match spec.protocol {
            Protocol::Ndp => (
                Box::new(NdpSender::new(self.ndp, ends, spec.size)),
                Box::new(NdpReceiver::new(self.ndp, ends.reversed(), spec.size)),
            ),
            Protocol::Udp => {
                let udp = UdpConfig {
                    mss: cfg.mss,
                    header: cfg.header,
                    rate_bps: self.udp_rate,
                    class: cfg.class,
                };
                (
                    Box::new(UdpSender::new(udp, ends, spec.size)),
                    Box::new(UdpReceiver::new(flow, spec.size)),
                )
            }
            Protocol::Eqds => (
                Box::new(EqdsAppSender::new(ends, spec.size, cfg.class)),
                Box::new(EqdsAppReceiver::new(
                    flow,
                    spec.size,
                    world.eqds.as_ref().map_or(1, |e| e.settings.max_inner()),
                )),
            ),
            Protocol::Roce => {
                let dcqcn = self.dcqcn(world.net.host_rate(spec.src));
                let cnp_interval = dcqcn.as_ref().map(|d| d.cnp_interval);
                let mut roce = self.roce;
                if world.tunnels_flow(flow) {
                    // RoCE over EQDS: packets shrink so that encapsulated they fit.
                    roce.mss -= world.eqds.as_ref().map_or(0, |e| e.settings.overhead);
                }
                (
                    Box::new(RoceSender::new(roce, ends, entropy, spec.size, dcqcn)),
                    Box::new(RoceReceiver::new(
                        roce,
                        ends.reversed(),
                        entropy,
                        spec.size,
                        cnp_interval,
                    )),
                )
            }
            Protocol::PacketPair => {
                let line = world.net.host_rate(spec.src);
                let pp = self.packet_pair;
                (
                    Box::new(PacketPairSender::new(pp, ends, entropy, spec.size, line)),
                    Box::new(PacketPairReceiver::new(
                        pp,
                        ends.reversed(),
                        entropy,
                        spec.size,
                    )),
                )
            }
            Protocol::Mptcp => {
                // Subflow 0 uses the flow's hash; the others draw their own.
                let entropies: Vec<u32> = std::iter::once(entropy)
                    .chain((1..self.mptcp_subflows).map(|_| world.rng.random()))
                    .collect();
                (
                    Box::new(MptcpSender::new(
                        cfg,
                        ends,
                        &entropies,
                        spec.size,
                        self.mptcp_nic_limit,
                    )),
                    Box::new(MptcpReceiver::new(
                        cfg,
                        ends.reversed(),
                        &entropies,
                        spec.size,
                    )),
                )
            }
            _ => (
                Box::new(TcpSender::new(cfg, ends, entropy, spec.size)),
                Box::new(TcpReceiver::new(cfg, ends.reversed(), entropy, spec.size)),
            ),
        }
    }
}

/// NDP parameters on a network with `paths` equal-cost paths whose longest loaded
/// round trip (`Network::loaded_rtt`) holds `bdp_packets` full packets.
fn ndp_config(t: &TransportSpec, paths: u32, bdp_packets: u32) -> NdpConfig {
    NdpConfig {
        mss: (t.mtu.0 - t.header.0) as u32,
        header: t.header.0 as u32,
        initial_window: t.ndp.initial_window.unwrap_or(bdp_packets.max(1)),
        rto: t.ndp.rto.0,
        paths: t.ndp.paths.unwrap_or(paths),
        class: t.class,
    }
}

/// Packet-pair parameters from `[transport]` and `[transport.packet_pair]`.
fn packet_pair_config(t: &TransportSpec) -> PacketPairConfig {
    let p = &t.packet_pair;
    PacketPairConfig {
        mss: (t.mtu.0 - t.header.0) as u32,
        header: t.header.0 as u32,
        min_rto: p.min_rto.0,
        initial_rto: p.initial_rto.0,
        max_rto: t.max_rto.0,
        dupack_threshold: t.dupack_threshold,
        ewma_rtts: p.ewma_rtts,
        alpha_gain: p.alpha_gain,
        inflight_bdp: p.inflight_bdp,
        skip_inject: p.skip_inject,
        ecn: p.ecn,
        bytes_per_round: p
            .bytes_per_round
            .map_or(0, |b| b.0.min(u64::from(u32::MAX)) as u32),
        class: t.class,
    }
}

/// RoCE parameters from `[transport]` and `[transport.roce]`.
fn roce_config(t: &TransportSpec) -> RoceConfig {
    let r = &t.roce;
    RoceConfig {
        mss: (t.mtu.0 - t.header.0) as u32,
        header: t.header.0 as u32,
        first_extra: match r.opcode {
            RoceOpcode::Write => ROCE_RETH_BYTES as u32,
            RoceOpcode::Send => 0,
        },
        message_size: r.message_size.map(|m| m.0),
        ack_every: r.ack_every,
        recovery: match r.recovery {
            RoceRecovery::GoBackN => Recovery::GoBackN,
            RoceRecovery::GoBack0 => Recovery::GoBack0,
        },
        nak_interval: r.nak_interval.0,
        rto: r.rto.0,
        rto_max: r.rto_max.0,
        nic_limit: r.nic_limit,
        class: t.class,
        ack_class: r.ack_class,
    }
}

/// DCQCN's parameters: `d`'s profile at `line_rate_bps`, with `d`'s overrides.
fn dcqcn_params(d: &DcqcnSpec, line_rate_bps: u64) -> DcqcnParams {
    let profile = match d.profile {
        DcqcnProfile::Paper => Profile::Paper,
        DcqcnProfile::MlxFw => Profile::MlxFw,
        DcqcnProfile::HpccNs3 => Profile::HpccNs3,
        DcqcnProfile::Htsim => Profile::Htsim,
    };
    let mut p = DcqcnParams::profile(profile, line_rate_bps);
    if let Some(g) = d.g {
        p.g = g;
    }
    if let Some(r) = d.rai {
        p.rai_bps = r.0 as f64;
    }
    if let Some(r) = d.rhai {
        p.rhai_bps = r.0 as f64;
    }
    if let Some(r) = d.min_rate {
        p.min_rate_bps = r.0 as f64;
    }
    if let Some(t) = d.alpha_timer {
        p.alpha_timer = t.0;
    }
    if let Some(t) = d.increase_timer {
        p.increase_timer = t.0;
    }
    if let Some(b) = d.byte_counter {
        p.byte_counter = (b.0 > 0).then_some(b.0);
    }
    if let Some(f) = d.fast_recovery_steps {
        p.fast_recovery_steps = f;
    }
    if let Some(t) = d.cnp_interval {
        p.cnp_interval = t.0;
    }
    if let Some(t) = d.min_cut_interval {
        p.min_cut_interval = t.0;
    }
    if let Some(c) = d.clamp_target {
        p.clamp_target = c;
    }
    if let Some(a) = d.alpha_first {
        p.alpha_first = a;
    }
    p
}

/// The TCP parameters for a flow of transport `t` running `protocol` (the
/// transport's own, or a workload's override).
fn tcp_config(t: &TransportSpec, protocol: Protocol) -> TcpConfig {
    let cc = match protocol {
        Protocol::Newreno
        | Protocol::Ndp
        | Protocol::Eqds
        | Protocol::Udp
        | Protocol::Roce
        | Protocol::PacketPair => CcKind::NewReno,
        Protocol::Cubic => CcKind::Cubic,
        Protocol::Dctcp => CcKind::Dctcp,
        Protocol::Vegas => CcKind::Vegas,
        Protocol::Bbr => CcKind::Bbr,
        Protocol::Mptcp => match t.mptcp.coupling {
            Coupling::Lia => CcKind::Lia,
            Coupling::Uncoupled => CcKind::NewReno,
        },
    };
    TcpConfig {
        cc,
        mss: (t.mtu.0 - t.header.0) as u32,
        header: t.header.0 as u32,
        initial_window: t.initial_window,
        min_rto: t.min_rto.0,
        initial_rto: t.initial_rto.0,
        max_rto: t.max_rto.0,
        delayed_ack: t.delayed_ack.then_some(DelayedAck {
            segments: t.delayed_ack_segments,
            timeout: t.delayed_ack_timeout.0,
        }),
        ecn: t.ecn.unwrap_or(protocol == Protocol::Dctcp),
        dctcp_g: t.dctcp_g,
        dupack_threshold: t.dupack_threshold,
        class: t.class,
        sack: t.sack,
        undo_spurious_rto: t.undo_spurious_rto.unwrap_or(t.sack),
        hystart: t.hystart,
        nic_limit: t.nic_limit,
    }
}
