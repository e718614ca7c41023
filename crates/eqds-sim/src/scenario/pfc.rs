//! `[pfc]`: priority flow control (IEEE 802.1Qbb) on every switch and NIC, as the
//! DCQCN paper configures it (§2, §4). `net::pfc::fabric` runs it.

use crate::net::pfc::fabric::{PfcSettings, Threshold};
use crate::net::pfc::pause::PauseMode;
use crate::net::pfc::watchdog::{StormAction, WatchdogConfig};
use crate::net::queue::QueueSpec;
use crate::units::value::{Bytes, Duration};
use crate::units::{NS, US};
use serde::Deserialize;

/// The `[pfc]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcSpec {
    #[serde(default)]
    pub enabled: bool,
    /// Lossless priorities (packet classes 0-7). Required with `enabled`.
    #[serde(default)]
    pub lossless: Vec<u8>,
    /// `"xoff_xon"` (default: PAUSE until RESUME) or `"quanta"` (PAUSE for
    /// `quanta` × 512 bit times, refreshed every `refresh`).
    #[serde(default = "default_mode")]
    pub mode: String,
    /// Pause quanta of a PAUSE frame in `"quanta"` mode (default 65535, the most).
    #[serde(default = "default_quanta")]
    pub quanta: u16,
    /// How often a PAUSE is renewed in `"quanta"` mode (default: half the pause at
    /// the fastest link).
    pub refresh: Option<Duration>,
    /// Every switch's shared buffer (default 12 MB, the paper's Trident II).
    #[serde(default = "default_buffer")]
    pub buffer: Bytes,
    /// `"dynamic"` (default, Trident II: beta times the free buffer) or `"static"`.
    #[serde(default = "default_threshold")]
    pub threshold: String,
    /// The dynamic threshold's beta (default 8, the paper's).
    #[serde(default = "default_beta")]
    pub beta: f64,
    /// Priorities every port reserves headroom for (default 8, as the paper's
    /// arithmetic does).
    #[serde(default = "default_reserved")]
    pub reserved_priorities: u32,
    /// Time from a PAUSE's arrival to the sender stopping (default 500 ns).
    #[serde(default = "default_response")]
    pub response: Duration,
    /// Extra whole frames of headroom (default 1).
    #[serde(default = "one")]
    pub margin_mtus: u32,
    /// Headroom per (port, priority) instead of the computed one; refused if it is
    /// less than what the link needs.
    pub headroom: Option<Bytes>,
    /// A PAUSE frame on the wire (default 64 B).
    #[serde(default = "default_frame")]
    pub frame_bytes: u32,
    /// Deadlock search interval while any link is paused (default 100 µs).
    #[serde(default = "default_scan")]
    pub deadlock_scan: Duration,
    pub watchdog: Option<WatchdogSpec>,
}

/// `[pfc.watchdog]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchdogSpec {
    /// A queue paused this long while holding packets is stormed (default 200 ms,
    /// Juniper's).
    #[serde(default = "default_wd")]
    pub detection: Duration,
    /// How long a stormed queue ignores PAUSE (default 200 ms).
    #[serde(default = "default_wd")]
    pub restoration: Duration,
    /// `"drop"` (default, SONiC's) or `"forward"`.
    #[serde(default = "default_action")]
    pub action: String,
}

fn default_mode() -> String {
    "xoff_xon".into()
}
fn default_quanta() -> u16 {
    u16::MAX
}
fn default_buffer() -> Bytes {
    Bytes(12_000_000)
}
fn default_threshold() -> String {
    "dynamic".into()
}
fn default_beta() -> f64 {
    8.0
}
fn default_reserved() -> u32 {
    8
}
fn default_response() -> Duration {
    Duration(500 * NS)
}
fn one() -> u32 {
    1
}
fn default_frame() -> u32 {
    64
}
fn default_scan() -> Duration {
    Duration(100 * US)
}
fn default_wd() -> Duration {
    Duration(200 * crate::units::MS)
}
fn default_action() -> String {
    "drop".into()
}

impl Default for PfcSpec {
    fn default() -> Self {
        toml::from_str("").expect("every PFC field has a default")
    }
}

impl PfcSpec {
    /// The settings, checked; `mtu` is the transport's, `fastest_bps` the fastest
    /// link's. Errors name the key.
    pub fn resolve(&self, mtu: u32, fastest_bps: u64) -> Result<Option<PfcSettings>, String> {
        if !self.enabled {
            return Ok(None);
        }
        if self.lossless.is_empty() {
            return Err("lossless: name the lossless priorities (0-7), e.g. [1]".into());
        }
        let mut lossless = 0u8;
        for &p in &self.lossless {
            if p > 7 {
                return Err(format!("lossless: priority {p} is not one of 0-7"));
            }
            lossless |= 1 << p;
        }
        let mode = match self.mode.as_str() {
            "xoff_xon" => PauseMode::XoffXon,
            "quanta" => {
                if self.quanta == 0 {
                    return Err("quanta: a PAUSE of 0 quanta is a RESUME; give 1-65535".into());
                }
                let pause = crate::net::pfc::pause::quanta_time(self.quanta, fastest_bps);
                PauseMode::Quanta {
                    quanta: self.quanta,
                    refresh: self.refresh.map_or(pause / 2, |r| r.0),
                }
            }
            other => {
                return Err(format!(
                    "mode: `{other}` is not one of `xoff_xon`, `quanta`"
                ))
            }
        };
        if self.refresh.is_some() && mode == PauseMode::XoffXon {
            return Err("refresh: only `quanta` mode renews PAUSE frames".into());
        }
        if self.refresh.is_some_and(|r| r.0 == 0) {
            return Err("refresh: must be positive".into());
        }
        let threshold = match self.threshold.as_str() {
            "dynamic" => {
                if !(self.beta > 0.0 && self.beta.is_finite()) {
                    return Err(format!("beta: must be positive, got {}", self.beta));
                }
                Threshold::Dynamic { beta: self.beta }
            }
            "static" => Threshold::Static,
            other => {
                return Err(format!(
                    "threshold: `{other}` is not one of `dynamic`, `static`"
                ))
            }
        };
        if !(1..=8).contains(&self.reserved_priorities) {
            return Err(format!(
                "reserved_priorities: must be from 1 to 8, got {}",
                self.reserved_priorities
            ));
        }
        if self.reserved_priorities < self.lossless.len() as u32 {
            return Err(format!(
                "reserved_priorities: {} cannot hold headroom for the {} lossless priorities",
                self.reserved_priorities,
                self.lossless.len()
            ));
        }
        if self.frame_bytes < 64 {
            return Err(format!(
                "frame_bytes: an Ethernet frame is at least 64 B, got {}",
                self.frame_bytes
            ));
        }
        if self.deadlock_scan.0 == 0 {
            return Err("deadlock_scan: must be positive".into());
        }
        let watchdog = match &self.watchdog {
            None => None,
            Some(w) => {
                if w.detection.0 == 0 || w.restoration.0 == 0 {
                    return Err("watchdog: detection and restoration must be positive".into());
                }
                let action = match w.action.as_str() {
                    "drop" => StormAction::Drop,
                    "forward" => StormAction::Forward,
                    other => {
                        return Err(format!(
                            "watchdog.action: `{other}` is not one of `drop`, `forward`"
                        ))
                    }
                };
                Some(WatchdogConfig {
                    detection: w.detection.0,
                    restoration: w.restoration.0,
                    action,
                })
            }
        };
        Ok(Some(PfcSettings {
            lossless,
            mode,
            threshold,
            buffer_bytes: self.buffer.0,
            reserved_priorities: self.reserved_priorities,
            response: self.response.0,
            margin_mtus: self.margin_mtus,
            headroom_override: self.headroom.map(|h| h.0),
            mtu,
            frame_bytes: self.frame_bytes,
            watchdog,
            deadlock_scan: self.deadlock_scan.0,
        }))
    }
}

/// A queue that would drop packets of a lossless priority on its own is refused:
/// PFC, not a tail limit, bounds a lossless queue. `what` names the queue's key.
pub fn check_lossless_queue(q: &QueueSpec, lossless: u8, what: &str) -> Result<(), String> {
    for p in 0..8u8 {
        if lossless & (1 << p) == 0 {
            continue;
        }
        let (class, path) = q.class_for(p);
        if let Some(why) = class.drops_on_its_own() {
            return Err(format!(
                "{what}{path}: priority {p} is lossless ([pfc] lossless) but this queue \
                 {why}; PFC bounds a lossless queue, so give it no limit"
            ));
        }
    }
    Ok(())
}
