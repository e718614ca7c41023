//! The `[eqds]` table as both front ends' files spell it.
//!
//! A scenario's `[eqds]` table and a daemon configuration's `[eqds]` section share
//! these keys, with the same names, units (`rto = "1ms"`) and values
//! (`mode = "rts"`). Each front end has keys of its own beside them (the simulator
//! which workloads EQDS carries, the daemon its link rate): before deserializing, a
//! front end moves the keys named in [`EqdsTable::KEYS`] out of its `[eqds]` table
//! into one of these, so that both structs refuse unknown keys and every error
//! names its key exactly. Every key is optional; what a file leaves out comes from
//! the front end's profile ([`EqdsConfig::simulator`], [`EqdsConfig::daemon`]).

use serde::Deserialize;

use super::{ConfigError, EqdsConfig, ReorderSpan};
use crate::receiver::Policy;
use crate::sender::Mode;
use crate::units::value::Duration;

/// The shared keys of an `[eqds]` table, as written; `rest` holds the others. See
/// `docs/scenarios.md` and `docs/eqdsd.md` for each key.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EqdsTable {
    /// `"ndp"` or `"rts"`.
    pub mode: Option<String>,
    /// Credit window per tunnel, in packets.
    pub window: Option<u32>,
    /// Packets an idle tunnel sends before credit.
    pub initial_window: Option<u32>,
    /// Credit asked for beyond the backlog, in packets.
    pub demand_lookahead: Option<u32>,
    /// Send queue per destination, in packets.
    pub send_queue: Option<u32>,
    /// Pure ACKs ahead of waiting data.
    pub acks_first: Option<bool>,
    /// RED's lower threshold, in packets.
    pub ecn_threshold: Option<u32>,
    /// RED's upper threshold, in packets.
    pub ecn_max_threshold: Option<u32>,
    /// Marking probability at the top of RED's ramp.
    pub ecn_max_p: Option<f64>,
    /// Minimum retransmit timeout.
    pub rto: Option<Duration>,
    /// Credit-loss timeout.
    pub credit_loss_timeout: Option<Duration>,
    /// `"fifo"`, `"weighted"` or `"strict_priority"`.
    pub policy: Option<String>,
    /// Packets per cumulative ACK.
    pub ack_coalesce: Option<u32>,
    /// Longest ACK deferral.
    pub ack_delay: Option<Duration>,
    /// PULL rate as a fraction of the link rate.
    pub pull_rate: Option<f64>,
    /// PULLs a late timer may send at once.
    pub pull_burst: Option<u32>,
    /// Arriving control packets delay the next PULL.
    pub pace_control: Option<bool>,
    /// Unused PULL slots go to senders whose demand was met.
    pub spare_pulls: Option<bool>,
    /// Reorder queue span, in packets.
    pub reorder_window: Option<u32>,
    /// Reorder hole timeout.
    pub reorder_timeout: Option<Duration>,
    /// How long a tunnel avoids a path that trimmed or lost a packet.
    pub path_avoidance: Option<Duration>,
    /// Time-based loss detection window.
    pub loss_reorder_window: Option<Duration>,
    /// Stale credit for a thin stream's restart.
    pub thin_stream_credit: Option<bool>,
    /// Per-path counters in every tunnel.
    pub path_stats: Option<bool>,
}

impl EqdsTable {
    /// Every key of the table, as written in a file.
    pub const KEYS: &'static [&'static str] = &[
        "mode",
        "window",
        "initial_window",
        "demand_lookahead",
        "send_queue",
        "acks_first",
        "ecn_threshold",
        "ecn_max_threshold",
        "ecn_max_p",
        "rto",
        "credit_loss_timeout",
        "policy",
        "ack_coalesce",
        "ack_delay",
        "pull_rate",
        "pull_burst",
        "pace_control",
        "spare_pulls",
        "reorder_window",
        "reorder_timeout",
        "path_avoidance",
        "loss_reorder_window",
        "thin_stream_credit",
        "path_stats",
    ];

    /// `base` (a front end's profile) with every key this table sets applied, checked
    /// by [`EqdsConfig::validate`].
    pub fn apply(&self, base: &EqdsConfig) -> Result<EqdsConfig, ConfigError> {
        let mut c = base.clone();
        if let Some(mode) = &self.mode {
            c.mode = match mode.as_str() {
                "ndp" => Mode::Ndp,
                "rts" => Mode::Rts,
                other => {
                    return Err(ConfigError::new(
                        "mode",
                        format!("'{other}' is not rts or ndp"),
                    ))
                }
            };
        }
        if let Some(policy) = &self.policy {
            c.policy = match policy.as_str() {
                "fifo" => Policy::Fifo,
                "weighted" => Policy::Weighted,
                // "priority" is the daemon's spelling before the keys were shared.
                "strict_priority" | "priority" => Policy::StrictPriority,
                other => {
                    return Err(ConfigError::new(
                        "policy",
                        format!("'{other}' is not fifo, weighted or strict_priority"),
                    ))
                }
            };
        }
        if let Some(w) = self.window {
            c.window = w;
        }
        if let (Some(iw), Some(w)) = (self.initial_window, self.window) {
            if iw > w {
                return Err(ConfigError::new(
                    "initial_window",
                    format!("must be at most eqds.window ({w} packets), got {iw}"),
                ));
            }
        }
        set(&mut c.initial_window, self.initial_window.map(Some));
        set(&mut c.demand_lookahead, self.demand_lookahead.map(Some));
        set(&mut c.send_queue, self.send_queue);
        set(&mut c.acks_first, self.acks_first);
        set(&mut c.ecn_threshold, self.ecn_threshold.map(Some));
        set(&mut c.ecn_max_threshold, self.ecn_max_threshold.map(Some));
        if let Some(p) = self.ecn_max_p {
            if !(1e-6..=1.0).contains(&p) {
                return Err(ConfigError::new(
                    "ecn_max_p",
                    format!(
                        "must be within [1e-6, 1] (marking probabilities are counted in \
                         millionths), got {p}"
                    ),
                ));
            }
            c.ecn_max_p_ppm = (p * 1e6).round() as u32;
        }
        set(&mut c.rto, self.rto.map(|d| d.0));
        set(
            &mut c.credit_loss_timeout,
            self.credit_loss_timeout.map(|d| Some(d.0)),
        );
        set(&mut c.ack_coalesce, self.ack_coalesce);
        set(&mut c.ack_delay, self.ack_delay.map(|d| d.0));
        if let Some(r) = self.pull_rate {
            if !(r > 0.0 && r <= 2.0) {
                return Err(ConfigError::new(
                    "pull_rate",
                    format!("must be within (0, 2], got {r}"),
                ));
            }
            c.pull_rate_permille = (r * 1000.0).round().max(1.0) as u32;
        }
        set(&mut c.pull_burst, self.pull_burst);
        set(&mut c.pace_control, self.pace_control);
        // Spare PULLs grant credit beyond the window that bounds a tunnel's queue in
        // the network: a trimming network (NDP mode) cuts what overflows to headers,
        // one that does not (RTS mode) drops it and the tunnel waits for its
        // retransmit timeout. So a profile's spare PULLs hold in NDP mode only,
        // unless the table says otherwise.
        if c.mode == Mode::Rts {
            c.spare_pulls = false;
        }
        set(&mut c.spare_pulls, self.spare_pulls);
        set(
            &mut c.reorder_window,
            self.reorder_window.map(ReorderSpan::Packets),
        );
        set(&mut c.reorder_timeout, self.reorder_timeout.map(|d| d.0));
        set(&mut c.path_avoidance, self.path_avoidance.map(|d| d.0));
        set(
            &mut c.loss_reorder_window,
            self.loss_reorder_window.map(|d| d.0),
        );
        set(&mut c.thin_stream_credit, self.thin_stream_credit);
        set(&mut c.path_stats, self.path_stats);
        c.validate()?;
        Ok(c)
    }

    /// Spellings this table uses that are kept for compatibility only, each with
    /// what to write instead.
    pub fn deprecations(&self) -> Vec<String> {
        let mut d = Vec::new();
        if self.policy.as_deref() == Some("priority") {
            d.push("eqds.policy = \"priority\" is deprecated: write \"strict_priority\"".into());
        }
        d
    }
}

fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *field = v;
    }
}
