//! Trimming on switches whose traffic manager cannot trim (the trimming paper:
//! "Packet trimming on real switch hardware", §3-§6): Tofino's ingress meters,
//! deflect-on-drop (DoD) and the soft-state feedback loop, and Trident 4 / Spectrum 2
//! mirror-on-drop (MoD).
//!
//! The switch keeps the output-queued model of `net::port` for its traffic manager
//! (TM): every output port holds the ideal NDP trimming queue (`eqds_queues::Trimming`),
//! which here *deflects* a data packet it would have trimmed instead
//! (`Verdict::Deflected`); what happens to it then is the switch model's:
//!
//! | model | data the TM cannot hold | ingress | paper |
//! |---|---|---|---|
//! | `output_queued` | trimmed in the TM (the Ideal switch) | - | §2, §6 "Ideal" |
//! | `deflect_on_drop` | whole packet to its ingress pipeline's DoD port, trimmed after recirculation | optimistic meters (100 %) | §3, §6 "DoD" |
//! | `tofino` | as `deflect_on_drop`, and each DoD departure notifies the pipelines | meters in the mode the feedback loop sets | §4, §6 "Tofino" |
//! | `mirror_on_drop` | only its header is mirrored to the pipeline's MoD port | none | §3, §6 "MoD" |
//! | `tofino2` | as `deflect_on_drop` | trims once the data queue is deeper than a threshold, read a few pipeline stages late | §3 (analysed only) |
//!
//! Files, one per term of the paper: `pipelines` (ingress pipelines and their
//! recirculation ports), `ingress_meter` (the per-egress-port meters), `feedback`
//! (PESSIMISTIC / HALF / OPTIMISTIC and the response), `deflect_on_drop`,
//! `mirror_on_drop`, `queue_depth` (Tofino 2) and `counters`.

pub mod counters;
mod deflect_on_drop;
pub mod feedback;
pub mod ingress_meter;
mod mirror_on_drop;
pub mod pipelines;
mod queue_depth;

use crate::engine::Event;
use crate::ids::{Node, PacketId, PortId, SwitchId};
use crate::net::packet::{flags, Packet, PacketKind};
use crate::net::port::{Handback, PortCtx};
use crate::net::Network;
use crate::units::Time;
use counters::{ModeChange, PipeStats, PortHwStats};
use feedback::{Mode, ModeClock, ModeRules, TrimBudget};
use ingress_meter::MeterSet;
use pipelines::{add_pipelines, Recirculation, SwitchPipes};

/// Which switch the scenario's switches are (`[switch] model`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// The output-queued switch every other experiment uses; with a trimming queue
    /// it is the paper's Ideal switch.
    OutputQueued,
    /// Optimistic ingress meters and deflect-on-drop, no feedback (§6, "DoD").
    DeflectOnDrop,
    /// The paper's full design (§4): meters in three modes, DoD, notifications.
    Tofino,
    /// Mirror-on-drop: the TM mirrors the header of a packet it drops (§3).
    MirrorOnDrop,
    /// Ingress trimming on queue depth read with a lag (Tofino 2, §3), over DoD.
    Tofino2,
}

impl Model {
    pub fn name(self) -> &'static str {
        match self {
            Model::OutputQueued => "output_queued",
            Model::DeflectOnDrop => "deflect_on_drop",
            Model::Tofino => "tofino",
            Model::MirrorOnDrop => "mirror_on_drop",
            Model::Tofino2 => "tofino2",
        }
    }

    /// Whether the TM deflects whole packets to a DoD port.
    pub fn deflects(self) -> bool {
        matches!(self, Model::DeflectOnDrop | Model::Tofino | Model::Tofino2)
    }

    /// Whether ingress runs the per-egress-port meters.
    pub fn meters(self) -> bool {
        matches!(self, Model::DeflectOnDrop | Model::Tofino)
    }
}

/// The meters a pipeline keeps per egress port (§4, §5; spec Q20).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meters {
    /// One single-rate meter per mode, every one updated by every packet (ndp.p4,
    /// what the paper's §6 simulations model).
    Three,
    /// switch.p4's pair: `opti`, a two-rate meter (peak = line rate, committed =
    /// half), and `pesi` (a quarter), with the action table of §5.
    Two,
    /// One bucket refilling at the current mode's rate, emptied by each
    /// notification: the meter of the paper authors' simulator (htsim's `Meter`).
    Single,
}

/// The modes the feedback loop moves a (pipeline, port) through after a
/// notification (§4; the ablations of §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modes {
    /// PESSIMISTIC for T0, HALF until T1, then OPTIMISTIC: the paper's design.
    PessHalfOpt,
    /// PESSIMISTIC for T0, then OPTIMISTIC (Figure 9a).
    PessOpt,
    /// Trim every packet for T0, then OPTIMISTIC (Figure 9c).
    TrimAllOpt,
}

/// What a notification asks of ingress (§4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response {
    /// Trim harder for a time (the paper's choice: the modes above).
    Time,
    /// Trim the next `n` packets for the port, whatever their rate (trim-N, rejected
    /// by the paper: the response outlives the incast).
    Count(u32),
}

/// Which pipelines a notification reaches (§4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotifyScope {
    /// Every pipeline of the switch (the paper's choice).
    All,
    /// Only the pipeline whose DoD port sent it (an ablation, §6.3).
    Origin,
}

/// Where a mirrored header is queued (§3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModTarget {
    /// At the header priority of the port it was bound for (NDP).
    Original,
    /// Turned round, at the header priority of the port back to its sender (SFC).
    Sender,
}

/// Everything a hardware switch model needs, resolved from `[switch.pipelines]`.
/// `None` stands for a default that depends on the network (stated per field).
#[derive(Clone, Debug, PartialEq)]
pub struct HwSettings {
    pub model: Model,
    /// Ports per ingress pipeline: a switch's ports, down then up, are cut into
    /// pipelines of this many (Tofino 1: 4 x 16 at 100 Gb/s).
    pub ports_per_pipeline: u32,
    /// Rate of each pipeline's recirculation (DoD or MoD) port; `None`: the
    /// switch's fastest port ("100 Gb/s each", §3).
    pub recirculation_rate_bps: Option<u64>,
    /// Time from a recirculation port's last bit to the packet's return to ingress
    /// (1 µs, §6.1 and §6.2).
    pub recirculation_latency: Time,
    /// Packets a recirculation port may hold beyond the one it sends; `None`:
    /// unbounded (the ~14,000-packet DoD queue of §6.3 was never cut).
    pub recirculation_limit_packets: Option<u32>,
    pub meters: Meters,
    /// Fractions of the egress port's line rate the OPTIMISTIC, HALF and
    /// PESSIMISTIC meters pass (1, 0.5, 0.25; §4).
    pub meter_rates: [f64; 3],
    /// Burst of every meter, in bytes; `None`: the byte capacity of the egress
    /// port's data queue and one MTU for the packet on the wire, so that one pipeline
    /// alone trims as the ideal switch (the paper gives none, spec Q4).
    pub meter_burst_bytes: Option<u64>,
    /// Bytes added to each packet's size as the meters count it (Ethernet's
    /// preamble and gap; 0: our links carry none).
    pub meter_adjust_bytes: u32,
    /// A notification makes the port PESSIMISTIC until T0 after it (6 µs)...
    pub t0: Time,
    /// ... and HALF until T1 after it (24 µs, §6.2; spec Q5).
    pub t1: Time,
    pub modes: Modes,
    pub response: Response,
    pub notify_scope: NotifyScope,
    /// Time from the DoD port taking a packet to its notification acting in the
    /// pipelines; `None`: the recirculation latency (spec Q7).
    pub notify_latency: Option<Time>,
    pub mod_target: ModTarget,
    /// Tofino 2: how late ingress reads the queue depth; `None`: the time four
    /// MTU-sized packets take at the pipeline's aggregate rate ("4 stages", §3).
    pub ingress_lag: Option<Time>,
    /// Tofino 2: ingress trims a packet that would take the data queue above this
    /// many bytes; `None`: the data queue's byte capacity less one MTU per pipeline
    /// of the switch (packets that pass the check at once all reach the queue).
    pub depth_threshold_bytes: Option<u64>,
}

impl Default for HwSettings {
    /// The output-queued switch, with the paper's values for everything else.
    fn default() -> Self {
        HwSettings {
            model: Model::OutputQueued,
            ports_per_pipeline: 16,
            recirculation_rate_bps: None,
            recirculation_latency: crate::units::US,
            recirculation_limit_packets: None,
            meters: Meters::Three,
            meter_rates: [1.0, 0.5, 0.25],
            meter_burst_bytes: None,
            meter_adjust_bytes: 0,
            t0: 6 * crate::units::US,
            t1: 24 * crate::units::US,
            modes: Modes::PessHalfOpt,
            response: Response::Time,
            notify_scope: NotifyScope::All,
            notify_latency: None,
            mod_target: ModTarget::Original,
            ingress_lag: None,
            depth_threshold_bytes: None,
        }
    }
}

/// The path that cut a trimmed data packet, kept in its `ce_bytes` (which data
/// never uses otherwise; IOFD, which does, cannot run on these switches) for the
/// arrival log (`arrivals.csv`, the paper's Figure 5).
pub mod trim_path {
    /// The traffic manager of an output-queued (Ideal) switch.
    pub const TM: u32 = 0;
    /// An ingress meter or Tofino 2's depth check.
    pub const INGRESS: u32 = 1;
    /// Deflect-on-drop, after recirculation.
    pub const DOD: u32 = 2;
    /// Mirror-on-drop.
    pub const MOD: u32 = 3;

    pub fn name(tag: u32) -> &'static str {
        match tag {
            INGRESS => "ingress",
            DOD => "dod",
            MOD => "mod",
            _ => "tm",
        }
    }
}

/// Every hardware switch's state: the layout of its pipelines, the meters and mode
/// registers per (pipeline, egress port), and the counters.
pub struct TrimmingHw {
    pub settings: HwSettings,
    pub rules: ModeRules,
    /// Indexed by switch id.
    pub switches: Vec<SwitchPipes>,
    /// The network's first recirculation port: every port from here on is one.
    pub first_recirc: PortId,
    /// Per (pipeline, egress port) entry: the meters (models that meter).
    meters: Vec<MeterSet>,
    /// Per entry: the time of the last notification, and time in each mode.
    pub clocks: Vec<ModeClock>,
    /// Per entry, under trim-N: packets still to trim.
    budgets: Vec<TrimBudget>,
    /// Per port: the size its traffic manager cuts data to (0: not a switch's).
    header_bytes: Vec<u32>,
    /// Per port (Tofino 2): ingress trims above this data backlog.
    pub(super) depth_threshold: Vec<u64>,
    /// Tofino 2: how late the depth is read.
    pub ingress_lag: Time,
    pub notify_latency: Time,
    /// Per port.
    pub port_stats: Vec<PortHwStats>,
    /// Per pipeline, in recirculation-port order.
    pub pipe_stats: Vec<PipeStats>,
    /// Every mode transition, if `[output] mode_series` asks for them.
    pub mode_log: Option<Vec<ModeChange>>,
}

impl TrimmingHw {
    /// The pipeline and switch a recirculation port belongs to.
    #[inline]
    fn recirc_owner(&self, port: PortId) -> (SwitchId, u32) {
        let s = &self.pipe_stats[(port - self.first_recirc) as usize];
        (s.switch, s.pipe)
    }

    /// Whether ingress trims this data packet for `egress`, arriving on pipeline
    /// `pipe` of switch `s` (the meters in the current mode, §4).
    #[inline]
    fn ingress_trims(
        &mut self,
        s: SwitchId,
        pipe: u32,
        egress: PortId,
        size: u32,
        now: Time,
    ) -> bool {
        let i = self.switches[s as usize].idx(pipe, egress);
        let bytes = size + self.settings.meter_adjust_bytes;
        match self.settings.model {
            Model::DeflectOnDrop => self.meters[i].judge(now, bytes, Mode::Optimistic),
            Model::Tofino => match self.settings.response {
                Response::Time => {
                    let last = self.clocks[i].last();
                    self.meters[i].judge_scheduled(now, bytes, last, &self.rules)
                }
                Response::Count(_) => {
                    // The meters see every packet; the budget trims on top of them.
                    let metered = self.meters[i].judge(now, bytes, Mode::Optimistic);
                    self.budgets[i].take() || metered
                }
            },
            _ => false,
        }
    }
}

impl Network {
    /// Makes every switch the hardware model `settings` asks for (nothing for the
    /// output-queued switch). `mtu` sizes the meters' default burst when a data
    /// queue is limited in packets.
    pub fn install_trimming_hw(
        &mut self,
        settings: HwSettings,
        mtu: u32,
        log_modes: bool,
    ) -> Result<(), String> {
        if settings.model == Model::OutputQueued {
            return Ok(());
        }
        let n = self.ports.len();
        let mut header_bytes = vec![0u32; n];
        let mut data_capacity = vec![0u64; n];
        for p in 0..n {
            if !matches!(self.ports[p].owner, Node::Switch(_)) {
                continue;
            }
            let Some(tm) = self.queues[p].deflect_on_drop() else {
                return Err(format!(
                    "switch.queue: the traffic manager of a \"{}\" switch holds NDP trimming queues (kind = \"trimming\"); port {p} (tier {}) has another discipline",
                    settings.model.name(),
                    self.tier_names[self.ports[p].tier as usize]
                ));
            };
            header_bytes[p] = tm.header_bytes;
            let by_packets = tm.data_limit.packets.map(|k| u64::from(k) * u64::from(mtu));
            data_capacity[p] = match (by_packets, tm.data_limit.bytes) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => u64::MAX,
            };
        }
        let recirc = Recirculation {
            rate_bps: settings.recirculation_rate_bps,
            latency: settings.recirculation_latency,
            limit_packets: settings.recirculation_limit_packets,
        };
        let first_recirc = n as PortId;
        let switches = add_pipelines(self, settings.ports_per_pipeline, &recirc)?;
        header_bytes.resize(self.ports.len(), 0);
        let entries: usize = switches.iter().map(SwitchPipes::entries).sum();
        let mut meters = Vec::new();
        let mut depth_threshold = Vec::new();
        if settings.model.meters() {
            meters.reserve(entries);
            for sp in &switches {
                for _pipe in 0..sp.n_pipes {
                    for egress in sp.first_port..sp.first_port + sp.n_ports {
                        let burst = match settings.meter_burst_bytes {
                            Some(b) => b,
                            None if data_capacity[egress as usize] == u64::MAX => {
                                return Err("switch.pipelines.meter_burst: the data queue is unlimited, so the meters' burst must be given".into());
                            }
                            // The queue's waiting room plus the packet on the wire:
                            // one pipeline alone then trims exactly what the ideal
                            // switch would (§4: "one pipeline sending to a port
                            // behaves exactly like the ideal switch").
                            None => data_capacity[egress as usize] + u64::from(mtu),
                        };
                        let rate = self.ports[egress as usize].rate_bps;
                        meters.push(MeterSet::new(
                            settings.meters,
                            rate,
                            settings.meter_rates,
                            burst,
                        ));
                    }
                }
            }
        }
        if settings.model == Model::Tofino2 {
            // By default, room is left above the threshold for one packet from every
            // pipeline: packets that pass the check together all reach the queue.
            depth_threshold = (0..n)
                .map(
                    |p| match (settings.depth_threshold_bytes, self.ports[p].owner) {
                        (Some(t), _) => t,
                        (None, Node::Switch(s)) => {
                            let pipes = u64::from(switches[s as usize].n_pipes);
                            let room = pipes * u64::from(mtu);
                            data_capacity[p].saturating_sub(room).max(u64::from(mtu))
                        }
                        (None, Node::Host(_)) => u64::MAX,
                    },
                )
                .collect();
            depth_threshold.resize(self.ports.len(), u64::MAX);
        }
        let ingress_lag = settings.ingress_lag.unwrap_or_else(|| {
            let fastest = self.ports.iter().map(|p| p.rate_bps).max().unwrap_or(1);
            let pipe_rate = fastest.saturating_mul(u64::from(settings.ports_per_pipeline));
            crate::units::serialisation_time(4 * mtu, pipe_rate)
        });
        let mut pipe_stats = Vec::new();
        for (s, sp) in switches.iter().enumerate() {
            for pipe in 0..sp.n_pipes {
                pipe_stats.push(PipeStats {
                    switch: s as SwitchId,
                    pipe,
                    ..Default::default()
                });
            }
        }
        let uses_clocks = settings.model == Model::Tofino;
        self.trimming_hw = Some(Box::new(TrimmingHw {
            rules: ModeRules::from_settings(&settings),
            notify_latency: settings
                .notify_latency
                .unwrap_or(settings.recirculation_latency),
            switches,
            first_recirc,
            meters,
            clocks: if uses_clocks {
                vec![ModeClock::new(); entries]
            } else {
                Vec::new()
            },
            budgets: if uses_clocks {
                vec![TrimBudget::default(); entries]
            } else {
                Vec::new()
            },
            header_bytes,
            depth_threshold,
            ingress_lag,
            port_stats: vec![PortHwStats::default(); self.ports.len()],
            pipe_stats,
            mode_log: log_modes.then(Vec::new),
            settings,
        }));
        Ok(())
    }

    /// A packet arrives at hardware switch `s` through its port `ingress` (the
    /// switch's end of the link it came on, or a recirculation port): the whole
    /// per-packet path of §3-§4.
    pub fn forward_hw(&mut self, s: SwitchId, pkt: PacketId, ingress: PortId, ctx: &mut PortCtx) {
        let hw = self.trimming_hw.as_deref_mut().expect("a hardware switch");
        if ingress >= hw.first_recirc {
            return self.recirculated(ingress, pkt, ctx);
        }
        let pipe = hw.switches[s as usize].pipe_of(ingress);
        let p = ctx.pkts.get(pkt);
        let d = self.switches[s as usize].route(p.dst, p.entropy, self.load_balancing);
        if p.kind != PacketKind::Data || p.has(flags::TRIMMED) {
            // Control packets and headers are not metered: the header queue.
            return self.enqueue(d, pkt, ctx);
        }
        let size = p.size;
        let trim = match hw.settings.model {
            Model::DeflectOnDrop | Model::Tofino => hw.ingress_trims(s, pipe, d, size, ctx.now),
            Model::Tofino2 => {
                if !self.over_depth(d, size) {
                    return self.pass_depth_check(d, pipe, pkt, ctx);
                }
                true
            }
            Model::MirrorOnDrop | Model::OutputQueued => false,
        };
        if trim {
            self.trim_at_ingress(s, pipe, d, pkt, ctx);
        } else {
            self.enter_traffic_manager(s, pipe, d, pkt, ctx);
        }
    }

    /// Cuts a data packet to its header in ingress; the header goes to `d`'s header
    /// queue (a truncated clone, the original dropped: §4).
    fn trim_at_ingress(
        &mut self,
        s: SwitchId,
        pipe: u32,
        d: PortId,
        pkt: PacketId,
        ctx: &mut PortCtx,
    ) {
        let hw = self.trimming_hw.as_deref().expect("a hardware switch");
        let recirc = hw.switches[s as usize].first_recirc + pipe;
        self.cut(d, recirc, pkt, trim_path::INGRESS, ctx);
        self.enqueue(d, pkt, ctx);
    }

    /// Cuts a data packet bound for `d` to its header on `path`, counting the trim
    /// for `d`, for the pipeline whose recirculation port is `recirc`, and in `d`'s
    /// own `trims` (so that trims compare across switch models).
    pub(super) fn cut(
        &mut self,
        d: PortId,
        recirc: PortId,
        pkt: PacketId,
        path: u32,
        ctx: &mut PortCtx,
    ) {
        let hw = self.trimming_hw.as_deref_mut().expect("a hardware switch");
        cut_to_header(ctx.pkts.get_mut(pkt), hw.header_bytes[d as usize], path);
        hw.port_stats[d as usize].trims.count(path);
        hw.pipe_stats[(recirc - hw.first_recirc) as usize]
            .trims
            .count(path);
        self.ports[d as usize].stats.trims += 1;
    }

    /// Offers a data packet to `d`'s output queue in the traffic manager: what does
    /// not fit is deflected (DoD) or mirrored (MoD).
    pub(super) fn enter_traffic_manager(
        &mut self,
        s: SwitchId,
        pipe: u32,
        d: PortId,
        pkt: PacketId,
        ctx: &mut PortCtx,
    ) {
        match self.offer(d, pkt, ctx) {
            None => {}
            Some(Handback::Returned(p)) => self.return_to_sender(d, p, ctx),
            Some(Handback::Deflected(p)) => {
                let hw = self.trimming_hw.as_deref().expect("a hardware switch");
                let recirc = hw.switches[s as usize].first_recirc + pipe;
                if hw.settings.model == Model::MirrorOnDrop {
                    self.mirror(d, recirc, p, ctx);
                } else {
                    self.deflect(d, recirc, p, ctx);
                }
            }
        }
    }

    /// Puts a packet on a recirculation port, counting its queue's peak.
    fn recirculate(&mut self, recirc: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        if let Some(Handback::Returned(p) | Handback::Deflected(p)) = self.offer(recirc, pkt, ctx) {
            // A drop-tail queue hands nothing back; if it did, the packet is lost here.
            self.drop_at(recirc, p, ctx);
        }
        let held = u64::from(self.queues[recirc as usize].backlog_packets())
            + u64::from(self.ports[recirc as usize].busy_until > ctx.now);
        let hw = self.trimming_hw.as_deref_mut().expect("a hardware switch");
        let stats = &mut hw.pipe_stats[(recirc - hw.first_recirc) as usize];
        stats.recirc_peak_packets = stats.recirc_peak_packets.max(held);
        // A packet that went straight onto the wire has left the DoD queue already.
        self.after_transmit(recirc, ctx);
    }

    /// A recirculated packet is back at its pipeline's ingress.
    fn recirculated(&mut self, recirc: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        let hw = self.trimming_hw.as_deref().expect("a hardware switch");
        if hw.settings.model == Model::MirrorOnDrop {
            self.mirrored_back(recirc, pkt, ctx);
        } else {
            self.deflected_back(recirc, pkt, ctx);
        }
    }

    /// A recirculation port started sending `pkt` (it left the DoD/MoD queue).
    pub(crate) fn hw_departed(&mut self, port: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        let hw = self.trimming_hw.as_deref_mut().expect("a hardware switch");
        if port < hw.first_recirc || hw.settings.model != Model::Tofino {
            return;
        }
        let (s, pipe) = hw.recirc_owner(port);
        let p = ctx.pkts.get(pkt);
        let d = self.switches[s as usize].route(p.dst, p.entropy, self.load_balancing);
        hw.pipe_stats[(port - hw.first_recirc) as usize].notifies_sent += 1;
        let scope = match hw.settings.notify_scope {
            NotifyScope::All => u8::MAX,
            NotifyScope::Origin => pipe as u8,
        };
        ctx.events.push(
            ctx.now + hw.notify_latency,
            Event::HwNotify {
                port: d,
                pipe: scope,
            },
        );
    }

    /// A notification for egress port `d` reaches the pipelines (`pipe`, or all for
    /// `u8::MAX`): each goes PESSIMISTIC for it (§4, Figure 3), or adds trim-N's
    /// budget.
    pub fn hw_notify(&mut self, d: PortId, pipe: u8, now: Time) {
        let Node::Switch(s) = self.ports[d as usize].owner else {
            return;
        };
        let hw = self.trimming_hw.as_deref_mut().expect("a hardware switch");
        let sp = hw.switches[s as usize];
        let pipes = if pipe == u8::MAX {
            0..sp.n_pipes
        } else {
            u32::from(pipe)..u32::from(pipe) + 1
        };
        for p in pipes {
            let i = sp.idx(p, d);
            hw.port_stats[d as usize].notifications += 1;
            match hw.settings.response {
                Response::Count(n) => hw.budgets[i].add(n),
                Response::Time => {
                    hw.meters[i].notified(now, hw.clocks[i].last(), &hw.rules);
                    let log = &mut hw.mode_log;
                    hw.clocks[i].notify(now, &hw.rules, &mut |time, mode| {
                        if let Some(log) = log.as_mut() {
                            log.push(ModeChange {
                                time,
                                switch: s,
                                pipe: p,
                                port: d,
                                mode,
                            });
                        }
                    });
                }
            }
        }
    }
}

impl TrimmingHw {
    /// The mode clocks closed at the end of the run (`end`): per (pipeline, port)
    /// entry, the time in each mode (indexed by `Mode as usize`), and the whole
    /// transition log, the run's and the closing one's (empty unless
    /// `mode_series`), in time order.
    pub fn modes_at_end(&self, end: Time) -> (Vec<[Time; 4]>, Vec<ModeChange>) {
        let mut times = Vec::with_capacity(self.clocks.len());
        let mut log = self.mode_log.clone().unwrap_or_default();
        let logging = self.mode_log.is_some();
        if self.clocks.is_empty() {
            return (times, log);
        }
        for (s, sp) in self.switches.iter().enumerate() {
            for pipe in 0..sp.n_pipes {
                for port in sp.first_port..sp.first_port + sp.n_ports {
                    let mut clock = self.clocks[sp.idx(pipe, port)].clone();
                    times.push(clock.finish(end, &self.rules, &mut |time, mode| {
                        if logging {
                            let switch = s as SwitchId;
                            log.push(ModeChange {
                                time,
                                switch,
                                pipe,
                                port,
                                mode,
                            });
                        }
                    }));
                }
            }
        }
        // Stable: equal times keep the order they were logged in.
        log.sort_by_key(|c| c.time);
        (times, log)
    }
}

/// Cuts a data packet to its header, as a trimming queue would, and records the
/// path that did it.
#[inline]
pub(crate) fn cut_to_header(p: &mut Packet, header_bytes: u32, path: u32) {
    p.size = p.size.min(header_bytes);
    p.flags |= flags::TRIMMED;
    p.ce_bytes = path;
}
