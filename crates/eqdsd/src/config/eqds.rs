//! `[eqds]`: the protocol's settings and the daemon's own.
//!
//! The protocol's keys (`mode`, `window`, `rto`, `policy`, ...) are shared with the
//! simulator's scenarios, with the same names, units and values: they are
//! `eqds_proto`'s [`EqdsTable`], applied to the daemon's profile
//! ([`EqdsConfig::daemon`]) and checked by `eqds_proto` itself. [`Config::parse`]
//! moves them out of the section before it is deserialized (`split_shared`). The
//! keys here are the daemon's own: its link rates, its timer granularity and its
//! peer limit.
//!
//! # Deprecated keys
//!
//! Before the keys were shared, the daemon spelled some of them in its own way.
//! Those spellings keep working for one release, each with a warning naming its
//! replacement: `rto_us`, `reorder_timeout_us`, `path_avoidance_us` and
//! `loss_reorder_window_us` (now durations with a unit: `rto = "2ms"`), `pacing`
//! (now `pull_rate`) and `policy = "priority"` (now `"strict_priority"`).
//!
//! [`Config::parse`]: super::Config::parse

use eqds_proto::config::{EqdsConfig, EqdsTable};
use eqds_proto::time::PS_PER_US;
use eqds_proto::units::value::Duration;
use serde::Deserialize;

use super::{invalid, parse_rate, ConfigError, MAX_PEERS};

/// Where [`split_shared`] puts the shared keys: a name no file can mean, since a
/// file giving it is refused.
pub(super) const SHARED_KEYS: &str = "(shared)";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EqdsSection {
    #[serde(default = "default_link_rate")]
    link_rate: String,
    #[serde(default)]
    uplink_rate: Option<String>,
    #[serde(default = "default_timer_granularity_us")]
    timer_granularity_us: u64,
    #[serde(default = "default_max_peers")]
    max_peers: u32,
    /// Deprecated spellings (see the module documentation).
    rto_us: Option<u64>,
    reorder_timeout_us: Option<u64>,
    path_avoidance_us: Option<u64>,
    loss_reorder_window_us: Option<u64>,
    pacing: Option<f64>,
    /// The keys shared with the simulator.
    #[serde(default, rename = "(shared)")]
    shared: EqdsTable,
}

impl Default for EqdsSection {
    fn default() -> Self {
        toml::from_str("").expect("every [eqds] key has a default")
    }
}

fn default_link_rate() -> String {
    "10gbit".into()
}
fn default_timer_granularity_us() -> u64 {
    40
}
fn default_max_peers() -> u32 {
    1024
}

/// Moves the shared keys of the file's `[eqds]` section into a table of their own
/// under [`SHARED_KEYS`], where [`EqdsSection`] reads them.
pub(super) fn split_shared(file: &mut toml::Table) -> Result<(), ConfigError> {
    let Some(toml::Value::Table(section)) = file.get_mut("eqds") else {
        return Ok(());
    };
    if section.contains_key(SHARED_KEYS) {
        return Err(invalid(
            format!("eqds.{SHARED_KEYS}"),
            "unknown key".to_string(),
        ));
    }
    let shared: toml::Table = EqdsTable::KEYS
        .iter()
        .filter_map(|&k| section.remove(k).map(|v| (k.to_string(), v)))
        .collect();
    section.insert(SHARED_KEYS.into(), toml::Value::Table(shared));
    Ok(())
}

/// The validated section.
pub(super) struct Eqds {
    /// The protocol's settings.
    pub(super) eqds: EqdsConfig,
    pub(super) link_rate_bps: u64,
    pub(super) uplink_rate_bps: Option<u64>,
    pub(super) timer_granularity_us: u64,
    pub(super) max_peers: u32,
    /// Deprecated spellings the file used, each with what to write instead.
    pub(super) deprecations: Vec<String>,
}

/// Checks the daemon's keys, then the protocol's: names and rates, then the shared
/// keys (in `eqds_proto`'s order), then the peer limit.
pub(super) fn validate(e: EqdsSection) -> Result<Eqds, ConfigError> {
    let link_rate_bps = parse_rate(&e.link_rate).map_err(|m| invalid("eqds.link_rate", m))?;
    let uplink_rate_bps = e
        .uplink_rate
        .as_deref()
        .map(parse_rate)
        .transpose()
        .map_err(|m| invalid("eqds.uplink_rate", m))?;
    if e.timer_granularity_us > 1000 {
        return Err(invalid("eqds.timer_granularity_us", "must be 0..=1000"));
    }
    let mut shared = e.shared;
    let mut deprecations = shared.deprecations();
    // Each old key, its new name, and the value in the new key's units.
    let us = |v: Option<u64>| v.map(|us| Duration(us.saturating_mul(PS_PER_US)));
    let renamed: [(&str, &str, bool); 5] = [
        ("rto_us", "rto", e.rto_us.is_some()),
        (
            "reorder_timeout_us",
            "reorder_timeout",
            e.reorder_timeout_us.is_some(),
        ),
        (
            "path_avoidance_us",
            "path_avoidance",
            e.path_avoidance_us.is_some(),
        ),
        (
            "loss_reorder_window_us",
            "loss_reorder_window",
            e.loss_reorder_window_us.is_some(),
        ),
        ("pacing", "pull_rate", e.pacing.is_some()),
    ];
    for (old, new, given) in renamed {
        if !given {
            continue;
        }
        let both = match new {
            "rto" => replace(&mut shared.rto, us(e.rto_us)),
            "reorder_timeout" => replace(&mut shared.reorder_timeout, us(e.reorder_timeout_us)),
            "path_avoidance" => replace(&mut shared.path_avoidance, us(e.path_avoidance_us)),
            "loss_reorder_window" => replace(
                &mut shared.loss_reorder_window,
                us(e.loss_reorder_window_us),
            ),
            _ => replace(&mut shared.pull_rate, e.pacing),
        };
        if both {
            return Err(invalid(
                format!("eqds.{old}"),
                format!("is the deprecated spelling of eqds.{new}, which is given too"),
            ));
        }
        deprecations.push(format!(
            "eqds.{old} is deprecated: write eqds.{new}{}",
            if old.ends_with("_us") {
                " with a unit (e.g. \"2ms\")"
            } else {
                ""
            }
        ));
    }
    let eqds = shared.apply(&EqdsConfig::daemon()).map_err(|err| {
        // Name the key as the file spelled it.
        let key = renamed
            .iter()
            .find(|&&(_, new, given)| given && new == err.key)
            .map_or(err.key, |&(old, _, _)| old);
        invalid(format!("eqds.{key}"), err.message)
    })?;
    if e.max_peers == 0 || e.max_peers > MAX_PEERS {
        return Err(invalid(
            "eqds.max_peers",
            format!("must be 1..={MAX_PEERS}"),
        ));
    }
    Ok(Eqds {
        eqds,
        link_rate_bps,
        uplink_rate_bps,
        timer_granularity_us: e.timer_granularity_us,
        max_peers: e.max_peers,
        deprecations,
    })
}

/// Puts a deprecated key's value in the shared key's place; whether the shared key
/// was given too.
fn replace<T>(field: &mut Option<T>, old: Option<T>) -> bool {
    let both = field.is_some();
    if old.is_some() {
        *field = old;
    }
    both
}
