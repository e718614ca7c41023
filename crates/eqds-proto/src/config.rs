//! One configuration of EQDS for both front ends.
//!
//! [`EqdsConfig`] holds every protocol setting of a host's EQDS in the paper's units:
//! packets of one MTU and time. The simulator and the daemon build it the same way:
//!
//! 1. start from their profile, [`EqdsConfig::simulator`] or [`EqdsConfig::daemon`]
//!    (the paper's values where the paper gives one, and where the two environments
//!    differ, each profile's departure with its reason);
//! 2. apply the `[eqds]` table of their file, [`EqdsTable::apply`] (feature
//!    `config`): the same keys, units and enums in a scenario and a daemon
//!    configuration, checked by one function;
//! 3. hand the result with the host's own facts ([`crate::host::HostParams`]: MTU,
//!    link rate, seed, EQIFs) to [`crate::host::Host::new`], which derives the
//!    sender, receiver, tunnel and reorder configurations of the core from it.
//!
//! Nothing else converts an EQDS setting, so a rule such as "the reorder span is four
//! windows" exists once.

#[cfg(feature = "config")]
mod table;
#[cfg(feature = "config")]
pub use table::EqdsTable;

use crate::receiver::Policy;
use crate::sender::Mode;
use crate::time::{Time, PS_PER_MS, PS_PER_SEC, PS_PER_US};
use crate::units::format_time;

/// Largest credit window, initial window and demand lookahead, in packets: a tunnel
/// numbers its first window inside one 1024-packet epoch block (Appendix A).
pub const MAX_WINDOW: u32 = 1000;

/// Largest reorder queue span per tunnel, in packets: each tunnel allocates its span
/// up front, and 65,536 is 16 times the largest span the default rules give.
pub const MAX_REORDER_WINDOW: u32 = 65_536;

/// Longest timeout (retransmit, credit loss, reorder hole, path avoidance): 10 s, far
/// beyond any datacenter round trip.
pub const MAX_TIMEOUT: Time = 10 * PS_PER_SEC;

/// How many packets a tunnel's reorder queue spans (the paper's W at the receiver,
/// §4.3), when the file does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReorderSpan {
    /// Exactly this many packets.
    Packets(u32),
    /// This many credit windows. A hole lasts about one round trip (NACK, then the
    /// resend goes first), in which about a window of later packets arrives; four
    /// windows hold them with room to spare.
    Windows(u32),
    /// What the access link carries in this many minimum retransmit timeouts, and at
    /// least four windows, at most 16,384 packets. Without trimming a loss is found
    /// only by the retransmit timeout (and its credit by the credit-loss timeout),
    /// while the sender keeps sending: the span must hold what arrives meanwhile, or
    /// the hole falls out of it and the packet is lost for good.
    Rtos(u32),
}

/// A host's EQDS settings. See the module documentation; [`EqdsConfig::default`]
/// has the paper's values.
#[derive(Debug, Clone, PartialEq)]
pub struct EqdsConfig {
    /// How a tunnel spends its first round trip: NDP mode bursts a window and relies
    /// on trimming switches, RTS mode asks first (§4.2).
    pub mode: Mode,
    /// The credit window W per tunnel, in packets of one MTU (§4.2): nominally one
    /// bandwidth-delay product.
    pub window: u32,
    /// Packets a new or idle tunnel sends before any credit when its receiver is not
    /// busy; `None`: as the mode says (NDP the whole window, RTS none).
    pub initial_window: Option<u32>,
    /// Credit asked for beyond the backlog while packets are in flight, in packets;
    /// `None`: the whole window (what a tunnel carrying TCP needs: each packet in
    /// flight turns into one to send).
    pub demand_lookahead: Option<u32>,
    /// Send queue per destination, in full packets' worth of bytes: the
    /// TCP-compatible EQIF's drop-tail buffer (§6: 100 packets per destination).
    pub send_queue: u32,
    /// Queue pure transport ACKs ahead of the data waiting for the same destination.
    pub acks_first: bool,
    /// Send-queue depth in packets from which ECN-capable inner packets may be marked
    /// CE (RED's lower threshold, §6); `None`: a quarter of `send_queue`.
    pub ecn_threshold: Option<u32>,
    /// Depth from which every ECN-capable packet is marked; `None`: `ecn_threshold`,
    /// a step as DCTCP wants.
    pub ecn_max_threshold: Option<u32>,
    /// Marking probability at the top of RED's ramp, in millionths.
    pub ecn_max_p_ppm: u32,
    /// Minimum retransmit timeout; each tunnel's is `srtt + 4 rttvar` of its own
    /// samples when longer. The paper leaves it open; trimming makes it a safety net.
    pub rto: Time,
    /// Quiet time after which a stalled tunnel sends an RTS to recover lost credit;
    /// `None`: the retransmit timeout.
    pub credit_loss_timeout: Option<Time>,
    /// How the receiver shares its link between the senders it pulls (§4.4).
    pub policy: Policy,
    /// In-order packets are acknowledged by one cumulative ACK per this many.
    pub ack_coalesce: u32,
    /// Longest an ACK is deferred.
    pub ack_delay: Time,
    /// PULL rate as a fraction of the receiver's link rate, in thousandths (§4.2:
    /// PULLs are paced at the access link's rate).
    pub pull_rate_permille: u32,
    /// PULLs a late timer may send at once to catch up.
    pub pull_burst: u32,
    /// Control packets arriving on the access link delay the next PULL by their time
    /// on the link, so that the data pulled and the control arriving together fit it.
    pub pace_control: bool,
    /// PULL slots that no sender with demand takes go to senders whose demand was
    /// met, up to one window beyond their targets (the receiver's spare PULLs, as
    /// the authors' htsim model sends them; the paper keeps the window constant).
    pub spare_pulls: bool,
    /// The reorder queue's span per tunnel.
    pub reorder_window: ReorderSpan,
    /// How long a hole may hold a reorder queue back before it is skipped.
    pub reorder_timeout: Time,
    /// How long a tunnel sprays around a path that trimmed or lost a packet (0: off,
    /// every path in turn as in the paper).
    pub path_avoidance: Time,
    /// Time-based loss detection after RACK (0: off, as in the paper).
    pub loss_reorder_window: Time,
    /// A small packet restarting an idle tunnel may spend up to one MTU of stale
    /// credit rather than send an RTS.
    pub thin_stream_credit: bool,
    /// Keep per-path counters and round-trip times in every tunnel.
    pub path_stats: bool,
}

impl Default for EqdsConfig {
    /// The paper's values, and for what it leaves open, the ones its evaluation
    /// implies: NDP mode, since the testbeds trim (§8); a window of 50 packets, the
    /// DPDK implementation's (§8.5); 100 packets of send queue per destination (§6);
    /// PULLs at line rate (§4.2); FIFO round robin between senders, the paper's
    /// default policy (§4.4); a reorder span of four windows.
    fn default() -> Self {
        Self {
            mode: Mode::Ndp,
            window: 50,
            initial_window: None,
            demand_lookahead: None,
            send_queue: 100,
            acks_first: false,
            ecn_threshold: None,
            ecn_max_threshold: None,
            ecn_max_p_ppm: 1_000_000,
            rto: PS_PER_MS,
            credit_loss_timeout: None,
            policy: Policy::Fifo,
            ack_coalesce: 4,
            ack_delay: 10 * PS_PER_US,
            pull_rate_permille: 1000,
            pull_burst: 1,
            pace_control: true,
            spare_pulls: false,
            reorder_window: ReorderSpan::Windows(4),
            reorder_timeout: 5 * PS_PER_MS,
            path_avoidance: 0,
            loss_reorder_window: 0,
            thin_stream_credit: false,
            path_stats: false,
        }
    }
}

/// Default demand lookahead of native EQDS applications, in packets: they queue all
/// they have, and these keep a thin stream from sending an RTS whenever its queue
/// empties.
pub const NATIVE_DEMAND_LOOKAHEAD: u32 = 4;

impl EqdsConfig {
    /// The simulator's profile: the paper's values, with a window of `bdp_packets`
    /// (one bandwidth-delay product of the network's longest loaded round trip, the
    /// paper's sizing, §4.2), and, when only native applications write into EQDS
    /// (`transports_tunnelled` false), a small demand lookahead (they queue all
    /// they have) and spare PULLs, as the authors' htsim model of native EQDS runs
    /// (its pull pacer's PULLs to idle senders): the simulated results that native
    /// EQDS is compared against come from that model. Tunnelled transports keep
    /// the paper's constant window, as the kernel and DPDK builds it describes, and
    /// so does RTS mode (`EqdsTable::apply`: without trimming, credit beyond the
    /// window is loss).
    pub fn simulator(bdp_packets: u32, transports_tunnelled: bool) -> Self {
        Self {
            window: bdp_packets.clamp(1, MAX_WINDOW),
            demand_lookahead: (!transports_tunnelled).then_some(NATIVE_DEMAND_LOOKAHEAD),
            spare_pulls: !transports_tunnelled,
            credit_loss_timeout: Some(PS_PER_MS),
            ..Self::default()
        }
    }

    /// The daemon's profile, for kernel TCP over UDP on Linux hosts whose network
    /// does not trim by default:
    /// - RTS mode: an ordinary switch drops the burst of an NDP start;
    /// - a window of 32 packets, a 2 ms retransmit timeout (also the credit-loss
    ///   timeout) and a 10 ms hole timeout, for a loop woken by the kernel's timers
    ///   at tens of microseconds;
    /// - a reorder span of two retransmit timeouts of the link: without trimming, a
    ///   hole lasts that long;
    /// - 8 packets per ACK and 50 us of ACK delay, since each datagram costs a system
    ///   call; up to 4 PULLs at once after a late wakeup;
    /// - thin-stream credit, for kernel TCP's request-response traffic.
    pub fn daemon() -> Self {
        Self {
            mode: Mode::Rts,
            window: 32,
            rto: 2 * PS_PER_MS,
            credit_loss_timeout: None,
            ack_coalesce: 8,
            ack_delay: 50 * PS_PER_US,
            pull_burst: 4,
            reorder_window: ReorderSpan::Rtos(2),
            reorder_timeout: 10 * PS_PER_MS,
            thin_stream_credit: true,
            ..Self::default()
        }
    }

    /// The initial window in packets, if one is set, never more than the window.
    pub fn initial_window_packets(&self) -> Option<u32> {
        self.initial_window.map(|p| p.min(self.window))
    }

    /// Credit asked for beyond the backlog, in packets.
    pub fn demand_lookahead_packets(&self) -> u32 {
        self.demand_lookahead.unwrap_or(self.window)
    }

    /// The credit-loss timeout.
    pub fn credit_loss_timeout(&self) -> Time {
        self.credit_loss_timeout.unwrap_or(self.rto)
    }

    /// RED's thresholds on a send queue, in packets: (lower, upper).
    pub fn ecn_thresholds(&self) -> (u32, u32) {
        let min = self.ecn_threshold.unwrap_or(self.send_queue.div_ceil(4));
        let max = self.ecn_max_threshold.unwrap_or(min).max(min);
        (min, max)
    }

    /// The reorder queue's span in packets, for a host whose access link carries
    /// `link_rate_bps` in packets of `mtu` bytes.
    pub fn reorder_window_packets(&self, link_rate_bps: u64, mtu: u32) -> u32 {
        match self.reorder_window {
            ReorderSpan::Packets(n) => n,
            ReorderSpan::Windows(n) => n.saturating_mul(self.window),
            ReorderSpan::Rtos(n) => {
                let rto_us = self.rto / PS_PER_US;
                let per_rto = link_rate_bps / 8 * rto_us / 1_000_000 / u64::from(mtu.max(1));
                let span = u64::from(n).saturating_mul(per_rto).min(1 << 14) as u32;
                span.clamp(self.window.saturating_mul(4).min(1 << 14), 1 << 14)
            }
        }
    }

    /// The shortest of the timeouts whose timers are set at least that long after
    /// the moment they are armed: retransmit, credit loss and reorder hole. A host
    /// with many tunnels scans them for the earliest only when this much time may
    /// have brought one due (see [`crate::host`]).
    pub fn slow_timer_slack(&self) -> Time {
        self.rto
            .min(self.credit_loss_timeout())
            .min(self.reorder_timeout)
    }

    /// Checks the settings against each other and their ranges. Errors name the
    /// `[eqds]` key to change.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let window_range = 1..=MAX_WINDOW;
        if !window_range.contains(&self.window) {
            return Err(ConfigError::new(
                "window",
                format!(
                    "must be 1..={MAX_WINDOW} packets (a tunnel numbers its first window \
                     inside one 1024-packet epoch block), got {}",
                    self.window
                ),
            ));
        }
        if let Some(iw) = self.initial_window.filter(|&p| p > MAX_WINDOW) {
            return Err(ConfigError::new(
                "initial_window",
                format!("must be 0..={MAX_WINDOW} packets, got {iw}"),
            ));
        }
        if let Some(p) = self.demand_lookahead.filter(|&p| p > MAX_WINDOW) {
            return Err(ConfigError::new(
                "demand_lookahead",
                format!("must be 0..={MAX_WINDOW} packets, got {p}"),
            ));
        }
        if !(1..=100_000).contains(&self.send_queue) {
            return Err(ConfigError::new(
                "send_queue",
                format!("must be 1..=100000 packets, got {}", self.send_queue),
            ));
        }
        let (min, max) = self.ecn_thresholds();
        if self.ecn_max_threshold.is_some_and(|m| m < min) {
            return Err(ConfigError::new(
                "ecn_max_threshold",
                format!("{max} packets is below ecn_threshold ({min})"),
            ));
        }
        if !(1..=1_000_000).contains(&self.ecn_max_p_ppm) {
            return Err(ConfigError::new(
                "ecn_max_p",
                "must be within [1e-6, 1] (marking probabilities are counted in millionths)",
            ));
        }
        for (key, t) in [
            ("rto", self.rto),
            ("credit_loss_timeout", self.credit_loss_timeout()),
            ("reorder_timeout", self.reorder_timeout),
        ] {
            if t == 0 || t > MAX_TIMEOUT {
                return Err(ConfigError::new(key, "must be positive and at most 10s"));
            }
        }
        if self.path_avoidance > MAX_TIMEOUT {
            return Err(ConfigError::new("path_avoidance", "must be at most 10s"));
        }
        if self.loss_reorder_window >= self.rto {
            return Err(ConfigError::new(
                "loss_reorder_window",
                format!(
                    "must be below rto ({}), got {}: it finds losses sooner than the \
                     timeout, or not at all",
                    format_time(self.rto),
                    format_time(self.loss_reorder_window)
                ),
            ));
        }
        if self.reorder_timeout <= 3 * self.rto {
            return Err(ConfigError::new(
                "reorder_timeout",
                format!(
                    "must exceed 3 x rto ({}), got {}: repairing a loss takes a \
                     retransmit timeout, a credit-loss timeout of the same length and a \
                     round trip, and a hole skipped sooner releases the packets behind it \
                     before the resend, which then reaches the transport out of order",
                    format_time(self.rto),
                    format_time(self.reorder_timeout)
                ),
            ));
        }
        if !(1..=64).contains(&self.ack_coalesce) {
            return Err(ConfigError::new(
                "ack_coalesce",
                format!("must be 1..=64 packets, got {}", self.ack_coalesce),
            ));
        }
        if self.ack_coalesce > 1 && self.ack_delay == 0 {
            return Err(ConfigError::new(
                "ack_delay",
                "must be positive when ACKs are coalesced",
            ));
        }
        if self.ack_delay > MAX_TIMEOUT {
            return Err(ConfigError::new("ack_delay", "must be at most 10s"));
        }
        if !(1..=2000).contains(&self.pull_rate_permille) {
            return Err(ConfigError::new("pull_rate", "must be within (0, 2]"));
        }
        if !(1..=64).contains(&self.pull_burst) {
            return Err(ConfigError::new(
                "pull_burst",
                format!("must be 1..=64, got {}", self.pull_burst),
            ));
        }
        if let ReorderSpan::Packets(n) = self.reorder_window {
            if n == 0 || n > MAX_REORDER_WINDOW {
                return Err(ConfigError::new(
                    "reorder_window",
                    format!("must be from 1 to {MAX_REORDER_WINDOW} packets, got {n}"),
                ));
            }
        }
        Ok(())
    }
}

/// An EQDS setting that is out of range or contradicts another, naming its key in
/// the `[eqds]` table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct ConfigError {
    /// The key, as written in the `[eqds]` table.
    pub key: &'static str,
    /// What is wrong with it.
    pub message: String,
}

impl ConfigError {
    fn new(key: &'static str, message: impl Into<String>) -> Self {
        Self {
            key,
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests;
