//! `[iofd]`: Blitz's in-order flow deflection in the switches (SIGCOMM'18 poster, §2;
//! `net::iofd` runs it, `docs/blitz-iofd.md` gives the choices). Off by default.

use crate::net::iofd::{InOrder, Iofd, IofdSettings};
use crate::net::resequencer::ResequencerSettings;
use crate::net::switch::LoadBalancing;
use crate::net::Network;
use crate::units::value::{Bytes, Duration};
use crate::units::US;
use serde::Deserialize;

/// The `[iofd]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IofdSpec {
    #[serde(default)]
    pub enabled: bool,
    /// How a moving flow is kept in order: `"hold"` (default: move at once, hold
    /// its new packets until the old ones have left) or `"refuse"` (move only a
    /// flow with nothing queued at the switch).
    #[serde(default = "default_in_order")]
    pub in_order: String,
    /// A port is congested above this backlog (default 5 KB, the DCQCN paper's
    /// K_min: a port DCQCN would start marking at is one to deflect from).
    #[serde(default = "default_threshold")]
    pub threshold: Bytes,
    /// Switches that may send one packet off its ECMP port (the poster's "a few";
    /// default 2, the spec's Q8).
    #[serde(default = "default_max")]
    pub max_deflections: u32,
    /// Time between the old port's last packet of a moving flow leaving (its last
    /// bit) and the flow's first packet on the new port (`hold`), or the quiet time
    /// a flow needs to move (`refuse`). Default 0: with the last-hop re-sequencer
    /// restoring order, a gap only costs throughput (measured in
    /// experiments/blitz-iofd; docs/blitz-iofd.md). Without the re-sequencer, 10 µs
    /// kept most runs in order there and none guarantees it.
    #[serde(default = "default_gap")]
    pub move_gap: Duration,
    /// A flow unseen for this long with nothing queued is forgotten (its pin
    /// expires; default 100 µs).
    #[serde(default = "default_idle")]
    pub idle_timeout: Duration,
    /// Restore each RoCE flow's order at the last switch before its host, where its
    /// paths meet again (default true; `net::resequencer`). Off, only the deflecting
    /// switch keeps order, and downstream queues can still reorder.
    #[serde(default = "default_true")]
    pub resequence: bool,
    /// A gap the re-sequencer has waited this long for is given up: the packets it
    /// held go on out of order (default 2 ms: with PFC a gap is a packet behind a
    /// paused link, not a loss, and the 64-sender incast of experiments/blitz had
    /// packets wait 0.9 ms; 500 µs gave up on them and reordered).
    #[serde(default = "default_reseq_timeout")]
    pub resequence_timeout: Duration,
    /// Bytes of held packets one switch's re-sequencer can store (default 1 MB); a
    /// packet that does not fit ends its flow's wait.
    #[serde(default = "default_reseq_buffer")]
    pub resequence_buffer: Bytes,
    /// Names of the port tiers that deflect, e.g. `["leaf_up"]` (default: every tier
    /// whose ports have equal-cost alternatives).
    pub tiers: Option<Vec<String>>,
}

/// Most deflections a packet may be given a budget for.
pub const MAX_DEFLECTIONS: u32 = 16;

fn default_in_order() -> String {
    "hold".into()
}
fn default_threshold() -> Bytes {
    Bytes(5_000)
}
fn default_max() -> u32 {
    2
}
fn default_gap() -> Duration {
    Duration(0)
}
fn default_true() -> bool {
    true
}
fn default_reseq_timeout() -> Duration {
    Duration(2 * crate::units::MS)
}
fn default_reseq_buffer() -> Bytes {
    Bytes(1_000_000)
}
fn default_idle() -> Duration {
    Duration(100 * US)
}

impl Default for IofdSpec {
    fn default() -> Self {
        toml::from_str("").expect("every IOFD field has a default")
    }
}

impl IofdSpec {
    /// Checks what can be checked without the network. Errors name the key (below
    /// `iofd.`).
    pub fn validate(&self, load_balancing: LoadBalancing) -> Result<(), String> {
        self.in_order()?;
        if self.threshold.0 == 0 {
            return Err(
                "threshold: must be positive (a port is congested above it, and an \
                 alternative must be at or below it)"
                    .into(),
            );
        }
        if !(1..=MAX_DEFLECTIONS).contains(&self.max_deflections) {
            return Err(format!(
                "max_deflections: must be from 1 to {MAX_DEFLECTIONS} (the poster's \"a \
                 few\"; set enabled = false to turn IOFD off), got {}",
                self.max_deflections
            ));
        }
        if self.idle_timeout.0 == 0 {
            return Err("idle_timeout: must be positive".into());
        }
        if self.idle_timeout.0 < self.move_gap.0 {
            return Err(format!(
                "idle_timeout: {} ps is shorter than move_gap ({} ps); an idle flow goes \
                 back to ECMP, which is a move too",
                self.idle_timeout.0, self.move_gap.0
            ));
        }
        if self.resequence && self.resequence_timeout.0 == 0 {
            return Err("resequence_timeout: must be positive (or set resequence = false)".into());
        }
        if self.resequence && self.resequence_buffer.0 == 0 {
            return Err("resequence_buffer: must be positive (or set resequence = false)".into());
        }
        if let Some(tiers) = &self.tiers {
            if tiers.is_empty() {
                return Err("tiers: list at least one tier (or set enabled = false)".into());
            }
        }
        if self.enabled && load_balancing == LoadBalancing::Spray {
            return Err(
                "enabled: IOFD moves ECMP-routed flows; with switch.load_balancing = \
                 \"spray\" every packet picks its own path"
                    .into(),
            );
        }
        Ok(())
    }

    fn in_order(&self) -> Result<InOrder, String> {
        match self.in_order.as_str() {
            "hold" => Ok(InOrder::Hold),
            "refuse" => Ok(InOrder::Refuse),
            other => Err(format!(
                "in_order: `{other}` is not one of `hold`, `refuse`"
            )),
        }
    }

    /// IOFD for `net`, if enabled. Errors name the key (below `iofd.`).
    pub fn build(&self, net: &Network) -> Result<Option<Iofd>, String> {
        if !self.enabled {
            return Ok(None);
        }
        let tiers = match &self.tiers {
            None => Iofd::choice_tiers(net),
            Some(names) => {
                let mut bits = 0u64;
                for name in names {
                    let Some(t) = net.tier_names.iter().position(|n| n == name) else {
                        return Err(format!(
                            "tiers: this topology has no tier `{name}` (its tiers: {})",
                            net.tier_names.join(", ")
                        ));
                    };
                    bits |= 1 << t;
                }
                bits
            }
        };
        let settings = IofdSettings {
            in_order: self.in_order()?,
            threshold_bytes: self.threshold.0,
            max_deflections: self.max_deflections,
            move_gap: self.move_gap.0,
            idle_timeout: self.idle_timeout.0,
            tiers,
            resequence: self.resequence.then_some(ResequencerSettings {
                timeout: self.resequence_timeout.0,
                buffer_bytes: self.resequence_buffer.0,
            }),
        };
        Iofd::new(settings, net).map(Some)
    }
}
