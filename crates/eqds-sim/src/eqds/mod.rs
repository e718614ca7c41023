//! EQDS in the simulator: the layer between the transports and the NIC of every host.
//!
//! Each host runs one or more sending EQIFs ([`Sender`]s, sharing its uplink
//! through an [`Uplink`]) and one receiving EQIF ([`ReceivingEqif`]) from
//! `eqds-proto`, the same protocol code the Linux daemon runs. A flow writes into
//! the EQIF its workload is assigned to (`[[eqds.eqifs]]`); a receiver keeps each
//! sending EQIF of a host apart as its own peer ([`rx_peer`]). The simulator only supplies what the daemon gets from the kernel:
//! - **Packets.** The EQIFs' packet handle is the simulator's [`PacketId`]. A packet
//!   written into EQDS stays in the slab, owned by the sending EQIF until its ACK.
//!   Each transmission is a copy of it, `overhead` bytes bigger, whose 16-byte EQDS
//!   header is encoded into a side table (`encap.rs`) rather than widening every
//!   packet: switches only read the packet, receivers decode the real wire format.
//! - **Time.** One lazily re-armed timer event per host covers the PULL pacer, the
//!   retransmit and credit-loss timers and the reorder queues' hole timers.
//! - **The NIC.** Whatever the sending EQIF releases goes straight to the host's NIC
//!   queue; credit arrives paced at the receivers' link rates, so that queue stays
//!   short.
//!
//! Writers are of two kinds (the paper's EQIF classes): a transport such as TCP,
//! whose packets are dropped when their destination's send queue is full (the
//! TCP-compatible EQIF's drop-tail queue), and a native application
//! (`protocol = "eqds"`), which is told to wait and woken through its timer when the
//! queue has drained to half.

mod encap;
mod world;

pub use encap::TagTable;
pub use world::Writer;

use crate::flow::FlowRecord;
use crate::ids::{EndpointId, FlowId, HostId};
use crate::scenario::{EqdsMode, EqdsPolicy, EqdsSpec, MAX_EQIFS};
use crate::units::Time;
use eqds_proto::eqif::{ReceivingEqif, ReceivingEqifConfig};
use eqds_proto::receiver::{Policy, ReceiverConfig};
use eqds_proto::reorder::ReorderConfig;
use eqds_proto::sender::{Mode, PeerId, Red, Sender, SenderConfig, ECN_CERTAIN};
use eqds_proto::tunnel::RxConfig;
use eqds_proto::uplink::{Share, Uplink};

use crate::ids::PacketId;

/// Default `demand_lookahead` of native EQDS applications, in packets: they queue all
/// they have, and this keeps a thin stream from sending an RTS whenever its queue
/// empties.
const NATIVE_DEMAND_LOOKAHEAD: u32 = 4;

/// `[eqds]` resolved against the topology and transport.
#[derive(Clone, Debug)]
pub struct EqdsSettings {
    /// Tunnel every transport's packets, not only native EQDS flows'.
    pub tunnel_all: bool,
    pub mode: Mode,
    /// Tunnel MTU: the wire size of a full packet and the credit of one PULL.
    pub mtu: u32,
    pub overhead: u32,
    pub window_packets: u32,
    /// Set when `window` is not given and the hosts' NICs differ: the longest loaded
    /// RTT (`Network::loaded_rtt`), from which each tunnel's window is sized at the
    /// slower of its two hosts' rates (`window_packets` is then the fastest host's,
    /// for the receivers).
    pub tunnel_rtt: Option<Time>,
    /// Packets an idle tunnel sends unasked; `None`: as the mode says.
    pub initial_window_packets: Option<u32>,
    /// Credit asked for beyond the backlog while packets are in flight, in packets.
    pub demand_lookahead_packets: u32,
    pub send_queue: u32,
    pub backpressure: bool,
    /// Pure transport ACKs join their send queue ahead of waiting data.
    pub acks_first: bool,
    /// RED on each send queue for ECN-capable packets (bytes of backlog).
    pub ecn: Red,
    pub nic_limit: u32,
    pub rto: Time,
    pub credit_loss_timeout: Time,
    pub paths: u16,
    pub policy: Policy,
    pub ack_coalesce: u32,
    pub ack_delay: Time,
    pub pull_permille: u32,
    /// Arriving control packets delay the next PULL (`Receiver::charge_unpulled`).
    pub pace_control: bool,
    pub reorder_window: u32,
    pub reorder_timeout: Time,
    /// Keep per-path statistics in every tunnel (for `paths.csv`).
    pub path_stats: bool,
    /// How long a tunnel avoids a path that trimmed or lost a packet (0: never).
    pub path_avoidance: Time,
    /// `SenderConfig::loss_reorder_window` (0: off).
    pub loss_reorder_window: Time,
    /// Some flows are legacy traffic that goes around EQDS (`legacy_workloads`):
    /// only then does sending look up the flow.
    pub has_legacy: bool,
    /// Each host's sending EQIFs, by index (and sender id): how they share the
    /// uplink, and how receivers with a weighted or priority policy pull them.
    pub eqifs: Vec<Share>,
    /// EQIF of each workload's flows, indexed by workload; workloads beyond the
    /// end use EQIF 0.
    eqif_of_workload: Vec<u8>,
}

impl EqdsSettings {
    /// Resolves `spec` for a network whose longest loaded round trip
    /// (`Network::loaded_rtt`) holds `bdp_packets` full packets and that has `paths`
    /// equal-cost paths.
    pub fn resolve(spec: &EqdsSpec, mtu: u32, paths: u32, bdp_packets: u32) -> Self {
        let window_packets = spec.window.unwrap_or(bdp_packets.clamp(1, 1000));
        EqdsSettings {
            tunnel_all: spec.enabled,
            mode: match spec.mode {
                EqdsMode::Ndp => Mode::Ndp,
                EqdsMode::Rts => Mode::Rts,
            },
            mtu,
            overhead: spec.overhead.0 as u32,
            window_packets,
            // Set by the caller, who knows the hosts' rates.
            tunnel_rtt: None,
            initial_window_packets: spec.initial_window.map(|p| p.min(window_packets)),
            demand_lookahead_packets: spec.demand_lookahead.unwrap_or(if spec.enabled {
                // At least any tunnel's window: in flight is never more.
                window_packets
            } else {
                NATIVE_DEMAND_LOOKAHEAD
            }),
            send_queue: spec.send_queue,
            backpressure: spec.backpressure,
            acks_first: spec.acks_first,
            ecn: {
                let min = spec.ecn_threshold.unwrap_or(spec.send_queue.div_ceil(4));
                let max = spec.ecn_max_threshold.unwrap_or(min).max(min);
                Red {
                    min_bytes: u64::from(min) * u64::from(mtu),
                    max_bytes: u64::from(max) * u64::from(mtu),
                    max_p_ppm: (spec.ecn_max_p * f64::from(ECN_CERTAIN)).round() as u32,
                }
            },
            nic_limit: spec.nic_limit,
            rto: spec.rto.0,
            credit_loss_timeout: spec.credit_loss_timeout.0,
            paths: spec.paths.unwrap_or(paths).clamp(1, u32::from(u16::MAX)) as u16,
            policy: match spec.policy {
                EqdsPolicy::Fifo => Policy::Fifo,
                EqdsPolicy::Weighted => Policy::Weighted,
                EqdsPolicy::StrictPriority => Policy::StrictPriority,
            },
            ack_coalesce: spec.ack_coalesce,
            ack_delay: spec.ack_delay.0,
            pull_permille: (spec.pull_rate * 1000.0).round().max(1.0) as u32,
            pace_control: spec.pace_control,
            // A hole lasts about one RTT (NACK, then the resend goes first), in which
            // about a window of later packets arrives: twice the window holds them.
            reorder_window: spec.reorder_window.unwrap_or(4 * window_packets),
            reorder_timeout: spec.reorder_timeout.0,
            // Asked for by `[output] paths_csv`, set by the caller.
            path_stats: false,
            path_avoidance: spec.path_avoidance.0,
            loss_reorder_window: spec.loss_reorder_window.0,
            has_legacy: !spec.legacy_workloads.is_empty(),
            eqifs: if spec.eqifs.is_empty() {
                vec![Share::default()]
            } else {
                spec.eqifs
                    .iter()
                    .map(|e| Share {
                        weight: e.weight,
                        priority: e.priority,
                    })
                    .collect()
            },
            eqif_of_workload: {
                let mut of = Vec::new();
                for (e, eqif) in spec.eqifs.iter().enumerate() {
                    for &w in &eqif.workloads {
                        let w = w as usize;
                        if of.len() <= w {
                            of.resize(w + 1, 0);
                        }
                        of[w] = e as u8;
                    }
                }
                of
            },
        }
    }

    /// The sending EQIF that `flow` writes into: its workload's.
    #[inline]
    pub fn eqif_of_flow(&self, flows: &[FlowRecord], flow: FlowId) -> usize {
        if self.eqif_of_workload.is_empty() {
            return 0;
        }
        flows
            .get(flow as usize)
            .and_then(|f| self.eqif_of_workload.get(usize::from(f.spec.origin)))
            .map_or(0, |&e| usize::from(e))
    }

    /// The shortest slow timer: no retransmit, credit-loss or hole timer set at
    /// time `t` is due before `t + slow_slack()`.
    pub fn slow_slack(&self) -> Time {
        self.rto
            .min(self.credit_loss_timeout)
            .min(self.reorder_timeout)
    }

    /// The send-queue limit per destination in charged bytes: `send_queue` full
    /// packets. Counting bytes lets the burst of small TCP ACKs that a reorder
    /// queue's release triggers fit where a packet count would drop them.
    pub fn send_queue_bytes(&self) -> u64 {
        u64::from(self.send_queue) * u64::from(self.mtu)
    }

    /// Largest inner packet a writer may hand to EQDS.
    pub fn max_inner(&self) -> u32 {
        self.mtu - self.overhead
    }
}

/// Layer-wide counters, reported in the run summary.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct EqdsCounters {
    /// Inner packets written into EQDS.
    pub written: u64,
    /// Inner packets dropped because their destination's send queue was full
    /// (TCP-compatible writers), or refused (native writers, who retry).
    pub send_queue_full: u64,
    /// ECN-capable inner packets marked CE on joining a long send queue.
    pub ecn_marked: u64,
    /// Inner packets handed to receiving transports.
    pub delivered: u64,
    /// Data packets put on the wire, retransmissions included.
    pub data_sent: u64,
    /// RTS packets put on the wire.
    pub rts_sent: u64,
    /// Control packets (ACK, NACK, PULL, RST) put on the wire.
    pub control_sent: u64,
    /// Trimmed headers that reached a receiver.
    pub trimmed_received: u64,
    /// Headers a switch returned to their sender.
    pub returned: u64,
    /// Returned control packets (dropped: what they said comes again).
    pub returned_control: u64,
    /// Packets whose EQDS header failed to decode (dropped).
    pub malformed: u64,
}

/// One host's EQDS: its sending EQIFs, its receiving EQIF and its timer.
pub struct EqdsHost {
    pub tx: Uplink<PacketId>,
    pub rx: ReceivingEqif<PacketId>,
    /// Earliest `EqdsTimer` event queued for this host (`Time::MAX` if none).
    timer_queued: Time,
    /// The NIC queue was full with the sending EQIF possibly holding more: pump
    /// again when the NIC finishes its current packet (`Time::MAX` if not).
    nic_wake: Time,
    /// Earliest of the slow timers (retransmit, credit loss, reorder holes) as of
    /// the last scan of every tunnel, or when to look again; see `world.rs`.
    slow_due: Time,
    /// Writers waiting for room towards a destination: (EQIF, destination, writer).
    blocked: Vec<(u8, HostId, EndpointId)>,
    /// A writer joined `blocked` since the pump last looked for room. Otherwise only
    /// a transmission can make room (the simulator never drops tunnels), so the pump
    /// looks only then: the look costs a tunnel lookup per blocked writer.
    blocked_new: bool,
    /// Path id of the next control packet. The core leaves control packets'
    /// paths to the host; they are sprayed round robin like data, since on one
    /// path the control of every host of a pod (two per data packet) would
    /// overload that path's links (k=16 at 100 Gbps: 200 Gb/s on one agg uplink).
    next_control_path: u16,
}

impl EqdsHost {
    /// Writer `ep` waits for room in EQIF `eqif`'s send queue towards `dst`.
    fn block(&mut self, eqif: usize, dst: HostId, ep: EndpointId) {
        let entry = (eqif as u8, dst, ep);
        if !self.blocked.contains(&entry) {
            self.blocked.push(entry);
            self.blocked_new = true;
        }
    }
}

/// EQDS on every host of a run.
pub struct EqdsLayer {
    pub settings: EqdsSettings,
    pub hosts: Vec<EqdsHost>,
    pub tags: TagTable,
    pub counters: EqdsCounters,
    /// Inner packets released to their transports, for the run loop to hand over.
    pub delivered: Vec<PacketId>,
    /// Each host's NIC rate in bit/s.
    link_rates: Vec<u64>,
}

impl EqdsLayer {
    /// `link_rates[h]` is host `h`'s NIC rate; `seeds[h]` seeds its path shuffles.
    pub fn new(settings: EqdsSettings, link_rates: &[u64], seeds: &[u64]) -> Self {
        let window = settings.window_packets * settings.mtu;
        let hosts = link_rates
            .iter()
            .zip(seeds)
            .enumerate()
            .map(|(h, (&rate, &seed))| EqdsHost {
                tx: sending_eqifs(&settings.eqifs, |eqif| SenderConfig {
                    mode: settings.mode,
                    mtu: settings.mtu,
                    overhead: settings.overhead,
                    window,
                    initial_window: settings.initial_window_packets.map(|p| p * settings.mtu),
                    demand_lookahead: settings.demand_lookahead_packets * settings.mtu,
                    // Counted in bytes, `send_queue` full packets' worth: see
                    // `EqdsSettings::send_queue_bytes`.
                    send_queue_packets: usize::MAX,
                    send_queue_bytes: settings.send_queue_bytes(),
                    rto: settings.rto,
                    credit_loss_timeout: settings.credit_loss_timeout,
                    paths: settings.paths,
                    // Receivers tell a host's EQIFs apart by it (`rx_peer`).
                    sender_id: eqif as u16,
                    next_proto: eqds_proto::wire::NextProto::Ipv4,
                    // The first EQIF keeps the host's seed, so adding EQIFs moves no
                    // epoch or path choice of the first.
                    seed: seed ^ (eqif as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    path_stats: settings.path_stats,
                    path_avoidance: settings.path_avoidance,
                    loss_reorder_window: settings.loss_reorder_window,
                    ecn: Some(settings.ecn),
                    // Not a scenario key (yet): at the simulated rates TCP's ACKs come
                    // closer together than a round trip, so thin-stream restarts do not
                    // arise, and runs stay as they were.
                    thin_stream_credit: false,
                }),
                rx: ReceivingEqif::new(ReceivingEqifConfig {
                    credit: ReceiverConfig {
                        link_rate_bps: rate,
                        mtu: settings.mtu,
                        window,
                        pacing_permille: settings.pull_permille,
                        pull_burst: 1,
                        policy: settings.policy,
                        ack_coalesce: settings.ack_coalesce,
                        ack_delay: settings.ack_delay,
                    },
                    // Data more than two reorder spans away is from another epoch.
                    tunnel: RxConfig {
                        window: settings.reorder_window,
                    },
                    reorder: ReorderConfig {
                        window: settings.reorder_window,
                        hole_timeout: settings.reorder_timeout,
                    },
                }),
                timer_queued: Time::MAX,
                nic_wake: Time::MAX,
                slow_due: Time::MAX,
                blocked: Vec::new(),
                blocked_new: false,
                next_control_path: (h % usize::from(settings.paths)) as u16,
            })
            .collect();
        EqdsLayer {
            settings,
            hosts,
            tags: TagTable::default(),
            counters: EqdsCounters::default(),
            delivered: Vec::new(),
            link_rates: link_rates.to_vec(),
        }
    }

    /// Sizes the window of `host`'s tunnel to `dst` before the tunnel first exists,
    /// when windows are per tunnel (`EqdsSettings::tunnel_rtt`): one loaded BDP at
    /// the slower of the two NICs, since the receiver paces PULLs at its own rate and a
    /// sender can send no faster than its own.
    #[inline]
    pub fn size_new_tunnel(&mut self, host: HostId, eqif: usize, dst: HostId) {
        let Some(rtt) = self.settings.tunnel_rtt else {
            return;
        };
        let tx = self.hosts[host as usize].tx.eqif_mut(eqif);
        if tx.tunnel_state(dst).is_some() {
            return;
        }
        let rate = self.link_rates[host as usize].min(self.link_rates[dst as usize]);
        let packets = bdp_packets(rtt, rate, self.settings.mtu).clamp(1, 1000);
        tx.set_window(dst, packets * self.settings.mtu);
    }

    /// Tunnel-level totals over every host, for the summary.
    pub fn tunnel_totals(&self) -> TunnelTotals {
        let mut t = TunnelTotals::default();
        for host in &self.hosts {
            for (_, s) in host.tx.eqifs().flat_map(Sender::tunnels) {
                t.tunnels += 1;
                t.retransmits += s.retransmits;
                t.rto_expiries += s.rto_expiries;
                t.reorder_losses += s.reorder_losses;
                t.credit_loss_rts += s.credit_loss_rts;
                t.bursts += s.bursts;
                t.warm_restarts += s.warm_restarts;
                t.epochs += s.epochs;
            }
            let e = host.rx.stats();
            t.duplicates += e.duplicates;
            t.late += e.late;
            t.holes_skipped += e.holes_skipped;
            t.rst_sent += e.rst_sent;
            t.peak_reorder_held = t.peak_reorder_held.max(e.peak_reorder_held);
        }
        t
    }
}

/// The sending EQIFs of one host: EQIF `i` has sender id `i` and `config(i)`.
fn sending_eqifs(shares: &[Share], config: impl Fn(usize) -> SenderConfig) -> Uplink<PacketId> {
    let mut uplink = Uplink::new(config(0), shares[0]);
    for (eqif, &share) in shares.iter().enumerate().skip(1) {
        uplink.add(config(eqif), share);
    }
    uplink
}

/// The receiving EQIF's peer id for sending EQIF `eqif` (its sender id) of `host`:
/// the host number with the EQIF in the top 8 bits, so a host's EQIFs are distinct
/// senders and a host with one EQIF is known by its number.
#[inline]
pub fn rx_peer(host: HostId, eqif: u16) -> PeerId {
    debug_assert!(usize::from(eqif) < MAX_EQIFS && host < 1 << 24);
    (u32::from(eqif) << 24) | host
}

/// The host of a receiving EQIF's peer id ([`rx_peer`]).
#[inline]
pub fn rx_peer_host(peer: PeerId) -> HostId {
    peer & 0x00FF_FFFF
}

/// Full packets of `mtu` bytes that a round trip of `rtt` holds at `rate` bit/s,
/// rounded up.
pub fn bdp_packets(rtt: Time, rate: u64, mtu: u32) -> u32 {
    let bytes = u128::from(rtt) * u128::from(rate) / (8 * u128::from(crate::units::SEC));
    u32::try_from(bytes.div_ceil(u128::from(mtu))).unwrap_or(u32::MAX)
}

/// Sums of the per-tunnel counters (and the reorder queues' peak).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct TunnelTotals {
    pub tunnels: u64,
    pub retransmits: u64,
    pub rto_expiries: u64,
    /// Packets resent before their timeout by `loss_reorder_window`.
    pub reorder_losses: u64,
    pub credit_loss_rts: u64,
    /// NDP-mode (re)starts that burst a window.
    pub bursts: u64,
    /// Idle restarts paid for by credit held from the last round trip.
    pub warm_restarts: u64,
    pub epochs: u64,
    pub duplicates: u64,
    /// Packets delivered out of order after the reorder queue skipped their hole.
    pub late: u64,
    /// Holes the reorder queues skipped (span exceeded or hole timed out).
    pub holes_skipped: u64,
    pub rst_sent: u64,
    /// Most packets any one reorder queue held behind a hole at once (a maximum,
    /// not a sum).
    pub peak_reorder_held: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window beyond 32 bits saturates instead of wrapping to a small one (the
    /// default NDP window at the longest latency and fastest rate a scenario allows).
    #[test]
    fn bdp_saturates() {
        assert_eq!(
            bdp_packets(crate::units::MAX_DURATION, crate::units::MAX_RATE, 64),
            u32::MAX
        );
        assert_eq!(bdp_packets(12 * crate::units::US, 10_000_000_000, 1500), 10);
    }
}
