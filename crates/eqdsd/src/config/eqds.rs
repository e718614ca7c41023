//! `[eqds]`: the protocol's knobs, checked and turned into the units `Config` keeps.
//!
//! Everything of the section is here (keys, defaults, checks and the conversion into
//! [`Eqds`], which `Config` copies field by field), so that the section can be
//! replaced without touching the others.

use eqds_proto::receiver::Policy;
use eqds_proto::sender::Mode;
use serde::Deserialize;

use super::{invalid, parse_rate, ConfigError, MAX_PEERS};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EqdsSection {
    #[serde(default = "default_mode")]
    mode: String,
    #[serde(default = "default_link_rate")]
    link_rate: String,
    #[serde(default)]
    uplink_rate: Option<String>,
    #[serde(default = "default_window")]
    window: u32,
    initial_window: Option<u32>,
    demand_lookahead: Option<u32>,
    #[serde(default = "default_thin_stream_credit")]
    thin_stream_credit: bool,
    #[serde(default)]
    acks_first: bool,
    #[serde(default)]
    path_stats: bool,
    #[serde(default)]
    path_avoidance_us: u64,
    #[serde(default)]
    loss_reorder_window_us: u64,
    #[serde(default = "default_pace_control")]
    pace_control: bool,
    #[serde(default = "default_send_queue")]
    send_queue: u32,
    #[serde(default = "default_policy")]
    policy: String,
    #[serde(default = "default_pacing")]
    pacing: f64,
    #[serde(default = "default_pull_burst")]
    pull_burst: u32,
    #[serde(default = "default_timer_granularity_us")]
    timer_granularity_us: u64,
    #[serde(default = "default_ecn_threshold")]
    ecn_threshold: u32,
    ecn_max_threshold: Option<u32>,
    #[serde(default = "default_ecn_max_p")]
    ecn_max_p: f64,
    #[serde(default = "default_rto_us")]
    rto_us: u64,
    #[serde(default = "default_reorder_timeout_us")]
    reorder_timeout_us: u64,
    #[serde(default = "default_ack_coalesce")]
    ack_coalesce: u32,
    #[serde(default = "default_max_peers")]
    max_peers: u32,
}

impl Default for EqdsSection {
    fn default() -> Self {
        toml::from_str("").expect("every [eqds] key has a default")
    }
}

fn default_mode() -> String {
    "rts".into()
}
fn default_link_rate() -> String {
    "10gbit".into()
}
fn default_window() -> u32 {
    32
}
fn default_thin_stream_credit() -> bool {
    true
}
fn default_pace_control() -> bool {
    true
}
fn default_send_queue() -> u32 {
    100
}
fn default_policy() -> String {
    "fifo".into()
}
fn default_pacing() -> f64 {
    1.0
}
fn default_pull_burst() -> u32 {
    4
}
fn default_timer_granularity_us() -> u64 {
    40
}
fn default_ecn_threshold() -> u32 {
    25
}
fn default_ecn_max_p() -> f64 {
    1.0
}
fn default_rto_us() -> u64 {
    2_000
}
fn default_reorder_timeout_us() -> u64 {
    10_000
}
fn default_ack_coalesce() -> u32 {
    8
}
fn default_max_peers() -> u32 {
    1024
}

/// The validated section: the fields of `Config` of the same names, documented there.
pub(super) struct Eqds {
    pub(super) mode: Mode,
    pub(super) link_rate_bps: u64,
    pub(super) uplink_rate_bps: Option<u64>,
    pub(super) window_packets: u32,
    pub(super) initial_window_packets: Option<u32>,
    pub(super) demand_lookahead_packets: u32,
    pub(super) thin_stream_credit: bool,
    pub(super) acks_first: bool,
    pub(super) path_stats: bool,
    pub(super) path_avoidance_us: u64,
    pub(super) loss_reorder_window_us: u64,
    pub(super) pace_control: bool,
    pub(super) send_queue_packets: u32,
    pub(super) policy: Policy,
    pub(super) pacing_permille: u32,
    pub(super) pull_burst: u32,
    pub(super) timer_granularity_us: u64,
    pub(super) ecn_threshold_packets: u32,
    pub(super) ecn_max_threshold_packets: u32,
    pub(super) ecn_max_p_ppm: u32,
    pub(super) rto_us: u64,
    pub(super) reorder_timeout_us: u64,
    pub(super) ack_coalesce: u32,
    pub(super) max_peers: u32,
}

/// Checks the keys in a fixed order, so that the first error found is the one
/// reported: names and rates, credit, ECN, timers, then the peer limit.
pub(super) fn validate(e: EqdsSection) -> Result<Eqds, ConfigError> {
    let mode = match e.mode.as_str() {
        "rts" => Mode::Rts,
        "ndp" => Mode::Ndp,
        other => return Err(invalid("eqds.mode", format!("'{other}' is not rts or ndp"))),
    };
    let link_rate_bps = parse_rate(&e.link_rate).map_err(|m| invalid("eqds.link_rate", m))?;
    let uplink_rate_bps = e
        .uplink_rate
        .as_deref()
        .map(parse_rate)
        .transpose()
        .map_err(|m| invalid("eqds.uplink_rate", m))?;
    let policy = match e.policy.as_str() {
        "fifo" => Policy::Fifo,
        "weighted" => Policy::Weighted,
        "priority" => Policy::StrictPriority,
        other => {
            return Err(invalid(
                "eqds.policy",
                format!("'{other}' is not fifo, weighted or priority"),
            ))
        }
    };
    check_credit(&e)?;
    let ecn_max_threshold_packets = check_ecn(&e)?;
    check_timers(&e)?;
    if e.max_peers == 0 || e.max_peers > MAX_PEERS {
        return Err(invalid(
            "eqds.max_peers",
            format!("must be 1..={MAX_PEERS}"),
        ));
    }
    Ok(Eqds {
        mode,
        link_rate_bps,
        uplink_rate_bps,
        window_packets: e.window,
        initial_window_packets: e.initial_window,
        // The TUN carries kernel TCP, whose ACK clock turns each packet in flight
        // into one to send: by default a tunnel asks for its whole window.
        demand_lookahead_packets: e.demand_lookahead.unwrap_or(e.window),
        thin_stream_credit: e.thin_stream_credit,
        acks_first: e.acks_first,
        path_stats: e.path_stats,
        path_avoidance_us: e.path_avoidance_us,
        loss_reorder_window_us: e.loss_reorder_window_us,
        pace_control: e.pace_control,
        send_queue_packets: e.send_queue,
        policy,
        pacing_permille: (e.pacing * 1000.0).round() as u32,
        pull_burst: e.pull_burst,
        timer_granularity_us: e.timer_granularity_us,
        ecn_threshold_packets: e.ecn_threshold,
        ecn_max_threshold_packets,
        ecn_max_p_ppm: (e.ecn_max_p * 1e6).round() as u32,
        rto_us: e.rto_us,
        reorder_timeout_us: e.reorder_timeout_us,
        ack_coalesce: e.ack_coalesce,
        max_peers: e.max_peers,
    })
}

/// The window, the send queue and the PULL rate.
fn check_credit(e: &EqdsSection) -> Result<(), ConfigError> {
    if !(1..=1000).contains(&e.window) {
        return Err(invalid("eqds.window", "must be 1..=1000 packets"));
    }
    if e.initial_window.is_some_and(|iw| iw > e.window) {
        return Err(invalid(
            "eqds.initial_window",
            format!("must be at most eqds.window ({} packets)", e.window),
        ));
    }
    if e.demand_lookahead.is_some_and(|p| p > 1000) {
        return Err(invalid("eqds.demand_lookahead", "must be 0..=1000 packets"));
    }
    if !(1..=100_000).contains(&e.send_queue) {
        return Err(invalid("eqds.send_queue", "must be 1..=100000 packets"));
    }
    if !(e.pacing > 0.0 && e.pacing <= 2.0) {
        return Err(invalid("eqds.pacing", "must be in (0, 2]"));
    }
    Ok(())
}

/// RED's thresholds and top probability; returns the upper threshold, which defaults
/// to the lower one (a step).
fn check_ecn(e: &EqdsSection) -> Result<u32, ConfigError> {
    let ecn_max = e.ecn_max_threshold.unwrap_or(e.ecn_threshold);
    if ecn_max < e.ecn_threshold {
        return Err(invalid(
            "eqds.ecn_max_threshold",
            format!(
                "{ecn_max} is below eqds.ecn_threshold ({})",
                e.ecn_threshold
            ),
        ));
    }
    if !(e.ecn_max_p >= 1e-6 && e.ecn_max_p <= 1.0) {
        return Err(invalid(
            "eqds.ecn_max_p",
            "must be in [1e-6, 1] (marking probabilities are counted in millionths)",
        ));
    }
    Ok(ecn_max)
}

/// PULL bursts, the timers and ACK coalescing, each timer against the others.
fn check_timers(e: &EqdsSection) -> Result<(), ConfigError> {
    if !(1..=64).contains(&e.pull_burst) {
        return Err(invalid("eqds.pull_burst", "must be 1..=64"));
    }
    if e.timer_granularity_us > 1000 {
        return Err(invalid("eqds.timer_granularity_us", "must be 0..=1000"));
    }
    if e.path_avoidance_us > 10_000_000 {
        return Err(invalid("eqds.path_avoidance_us", "must be 0..=10000000"));
    }
    if e.loss_reorder_window_us >= e.rto_us {
        return Err(invalid(
            "eqds.loss_reorder_window_us",
            format!(
                "{} must be below eqds.rto_us ({}): it finds losses sooner than \
                 the timeout, or not at all",
                e.loss_reorder_window_us, e.rto_us
            ),
        ));
    }
    if e.rto_us == 0 || e.rto_us > 10_000_000 {
        return Err(invalid("eqds.rto_us", "must be 1..=10000000"));
    }
    if e.reorder_timeout_us == 0 || e.reorder_timeout_us > 10_000_000 {
        return Err(invalid("eqds.reorder_timeout_us", "must be 1..=10000000"));
    }
    if e.reorder_timeout_us <= 3 * e.rto_us {
        return Err(invalid(
            "eqds.reorder_timeout_us",
            format!(
                "{} must exceed 3 x eqds.rto_us ({}): repairing a loss takes an RTO, \
                 a credit-loss timeout of the same length and an RTT, and a hole \
                 skipped sooner releases the packets behind it before the resend, \
                 which then reaches TCP out of order",
                e.reorder_timeout_us, e.rto_us
            ),
        ));
    }
    if !(1..=64).contains(&e.ack_coalesce) {
        return Err(invalid("eqds.ack_coalesce", "must be 1..=64"));
    }
    Ok(())
}
