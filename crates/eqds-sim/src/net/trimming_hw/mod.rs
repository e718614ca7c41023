//! Trimming on switches whose traffic manager cannot trim (the trimming paper:
//! "Packet trimming on real switch hardware", §3-§6): Tofino's ingress meters,
//! deflect-on-drop (DoD) and the soft-state feedback loop, and Trident 4 / Spectrum 2
//! mirror-on-drop (MoD).
//!
//! The switch keeps the output-queued model of `net::port` for its traffic manager
//! (TM): every output port holds the ideal NDP trimming queue (`queue::Trimming`),
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

pub mod feedback;
pub mod ingress_meter;

use crate::units::Time;

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
    /// port's data queue (the paper gives none, spec Q4).
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
    /// Tofino 2: ingress trims once the data queue holds more bytes than this;
    /// `None`: the data queue's byte capacity.
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
