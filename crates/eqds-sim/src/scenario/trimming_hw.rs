//! `[switch] model` and `[switch.pipelines]`: trimming on real switch hardware (the
//! trimming paper, "Packet trimming on real switch hardware", §3-§6;
//! `net::trimming_hw` runs it; the defaults cite the open questions, Q, of the
//! paper's digest, `spec/trimming.md`). The default model, `output_queued`, is
//! every other experiment's switch, and with it nothing here changes a run.
//!
//! Every key is kept as given (`Option`), so that a key the chosen model has no use
//! for is refused by name, as the `afq` queue refuses the keys of settings it does
//! not run: a `t0` on a switch without the feedback loop would otherwise be
//! silently ignored.

use super::Scenario;
use crate::net::queue::QueueSpec;
use crate::net::trimming_hw::{HwSettings, Meters, ModTarget, Model, Modes, NotifyScope, Response};
use crate::units::value::{Bytes, Duration, Rate};
use crate::units::DisplayTime;
use serde::Deserialize;

/// `[switch.pipelines]`: the hardware switch's parameters. Every key is optional;
/// the defaults are those of [`HwSettings::default`], which cites their sources.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelinesSpec {
    /// Ports per ingress pipeline (default 16: Tofino 1's 4 x 16, §3, digest 1.C).
    pub ports_per_pipeline: Option<u32>,
    /// Rate of each pipeline's recirculation port (default: the switch's fastest
    /// port, "100 Gb/s each", §3).
    pub recirculation_rate: Option<Rate>,
    /// Recirculation latency (default 1 µs, §6.1 and §6.2).
    pub recirculation_latency: Option<Duration>,
    /// Packets a recirculation port may hold (default: unbounded, spec Q8).
    pub recirculation_limit_packets: Option<u32>,
    /// `"three"` (default: ndp.p4, what §6 simulated), `"single"` (the authors' htsim
    /// `Meter`: one bucket at the mode's rate, emptied by each notification) or `"two"` (switch.p4's
    /// `opti`/`pesi`, §5; spec Q20).
    pub meters: Option<String>,
    /// Fractions of line rate of the OPTIMISTIC, HALF and PESSIMISTIC meters
    /// (default [1.0, 0.5, 0.25], §4).
    pub meter_rates: Option<[f64; 3]>,
    /// Every meter's burst (default: the egress data queue's byte capacity, Q4).
    pub meter_burst: Option<Bytes>,
    /// Bytes added to each packet as the meters count it (default 0).
    pub meter_adjust_bytes: Option<u32>,
    /// PESSIMISTIC for `t0` after a notification (default 6 µs, Q5)...
    pub t0: Option<Duration>,
    /// ... and HALF until `t1` after it (default 24 µs, Q5).
    pub t1: Option<Duration>,
    /// `"pess_half_opt"` (default, §4), `"pess_opt"` or `"trim_all_opt"` (§6.3; Q21).
    pub modes: Option<String>,
    /// `"time"` (default: trim-for-time, §4) or `"count"` (trim-N).
    pub response: Option<String>,
    /// N of trim-N (default 12, §4: the DoD queue fills 12x faster than it drains).
    pub trim_count: Option<u32>,
    /// `"all"` (default, §4) or `"origin"` (§6.3).
    pub notify_scope: Option<String>,
    /// DoD departure to notification (default: the recirculation latency, Q7).
    pub notify_latency: Option<Duration>,
    /// `"original"` (default: NDP, §3) or `"sender"` (SFC).
    pub mod_target: Option<String>,
    /// Tofino 2's depth-read lag (default: four MTUs at the pipeline's rate, §3).
    pub ingress_lag: Option<Duration>,
    /// Tofino 2's trimming depth (default: the data queue's byte capacity, §3).
    pub depth_threshold: Option<Bytes>,
}

/// The models that use each key: a key given for another model is an error.
#[derive(Clone, Copy)]
enum Users {
    /// Every hardware model (recirculation and pipelines).
    Hardware,
    /// The models with ingress meters (`deflect_on_drop`, `tofino`).
    Meters,
    /// `tofino` only (the feedback loop).
    Tofino,
    /// `mirror_on_drop` only.
    Mirror,
    /// `tofino2` only.
    Tofino2,
}

impl Users {
    fn admit(self, model: Model) -> bool {
        match self {
            Users::Hardware => model != Model::OutputQueued,
            Users::Meters => model.meters(),
            Users::Tofino => model == Model::Tofino,
            Users::Mirror => model == Model::MirrorOnDrop,
            Users::Tofino2 => model == Model::Tofino2,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Users::Hardware => {
                "a hardware switch model (\"deflect_on_drop\", \"tofino\", \
                 \"mirror_on_drop\" or \"tofino2\")"
            }
            Users::Meters => "the models with ingress meters (\"deflect_on_drop\", \"tofino\")",
            Users::Tofino => "model \"tofino\" (the feedback loop)",
            Users::Mirror => "model \"mirror_on_drop\"",
            Users::Tofino2 => "model \"tofino2\"",
        }
    }
}

/// `[switch] model` as a [`Model`]; the error lists the accepted names.
pub fn parse_model(name: &str) -> Result<Model, String> {
    const ALL: [Model; 5] = [
        Model::OutputQueued,
        Model::DeflectOnDrop,
        Model::Tofino,
        Model::MirrorOnDrop,
        Model::Tofino2,
    ];
    ALL.into_iter().find(|m| m.name() == name).ok_or_else(|| {
        format!(
            "model: `{name}` is not one of {}",
            ALL.map(|m| format!("`{}`", m.name())).join(", ")
        )
    })
}

/// One of `choices` (name, value) by name, or an error naming `key` and listing them.
fn one_of<T: Copy>(key: &str, given: &str, choices: &[(&str, T)]) -> Result<T, String> {
    choices
        .iter()
        .find(|(n, _)| *n == given)
        .map(|&(_, v)| v)
        .ok_or_else(|| {
            let names: Vec<String> = choices.iter().map(|(n, _)| format!("`{n}`")).collect();
            format!("{key}: `{given}` is not one of {}", names.join(", "))
        })
}

impl PipelinesSpec {
    /// The keys given, each with the models that use it, in the table's order.
    fn given(&self) -> Vec<(&'static str, Users)> {
        let keys = [
            (
                "ports_per_pipeline",
                self.ports_per_pipeline.is_some(),
                Users::Hardware,
            ),
            (
                "recirculation_rate",
                self.recirculation_rate.is_some(),
                Users::Hardware,
            ),
            (
                "recirculation_latency",
                self.recirculation_latency.is_some(),
                Users::Hardware,
            ),
            (
                "recirculation_limit_packets",
                self.recirculation_limit_packets.is_some(),
                Users::Hardware,
            ),
            ("meters", self.meters.is_some(), Users::Meters),
            ("meter_rates", self.meter_rates.is_some(), Users::Meters),
            ("meter_burst", self.meter_burst.is_some(), Users::Meters),
            (
                "meter_adjust_bytes",
                self.meter_adjust_bytes.is_some(),
                Users::Meters,
            ),
            ("t0", self.t0.is_some(), Users::Tofino),
            ("t1", self.t1.is_some(), Users::Tofino),
            ("modes", self.modes.is_some(), Users::Tofino),
            ("response", self.response.is_some(), Users::Tofino),
            ("trim_count", self.trim_count.is_some(), Users::Tofino),
            ("notify_scope", self.notify_scope.is_some(), Users::Tofino),
            (
                "notify_latency",
                self.notify_latency.is_some(),
                Users::Tofino,
            ),
            ("mod_target", self.mod_target.is_some(), Users::Mirror),
            ("ingress_lag", self.ingress_lag.is_some(), Users::Tofino2),
            (
                "depth_threshold",
                self.depth_threshold.is_some(),
                Users::Tofino2,
            ),
        ];
        keys.into_iter()
            .filter(|&(_, given, _)| given)
            .map(|(k, _, u)| (k, u))
            .collect()
    }

    /// The settings of a `model` switch. Errors name the key below
    /// `switch.pipelines.` (or `model:`).
    pub fn resolve(&self, model: Model) -> Result<HwSettings, String> {
        for (key, users) in self.given() {
            if !users.admit(model) {
                return Err(format!(
                    "{key}: only used with {}; this switch's model is \"{}\"",
                    users.describe(),
                    model.name()
                ));
            }
        }
        let mut s = HwSettings {
            model,
            ..HwSettings::default()
        };
        if let Some(ppp) = self.ports_per_pipeline {
            if ppp == 0 {
                return Err("ports_per_pipeline: must be at least 1".into());
            }
            s.ports_per_pipeline = ppp;
        }
        s.recirculation_rate_bps = self.recirculation_rate.map(|r| r.0);
        if s.recirculation_rate_bps == Some(0) {
            return Err("recirculation_rate: must be positive".into());
        }
        if let Some(l) = self.recirculation_latency {
            s.recirculation_latency = l.0;
        }
        if self.recirculation_limit_packets == Some(0) {
            return Err(
                "recirculation_limit_packets: a recirculation port that holds nothing \
                 loses every packet it is sent; omit the key for an unbounded port"
                    .into(),
            );
        }
        s.recirculation_limit_packets = self.recirculation_limit_packets;
        if let Some(m) = &self.meters {
            s.meters = one_of(
                "meters",
                m,
                &[
                    ("three", Meters::Three),
                    ("two", Meters::Two),
                    ("single", Meters::Single),
                ],
            )?;
        }
        if let Some(rates) = self.meter_rates {
            for (i, r) in rates.iter().enumerate() {
                if !(*r > 0.0 && *r <= 1.0) {
                    return Err(format!(
                        "meter_rates[{i}]: a fraction of the line rate must be in (0, 1], \
                         got {r}"
                    ));
                }
            }
            if rates[1] > rates[0] || rates[2] > rates[1] {
                return Err(format!(
                    "meter_rates: the OPTIMISTIC, HALF and PESSIMISTIC rates must not \
                     increase (each mode trims at least as hard as the one before), got \
                     {rates:?}"
                ));
            }
            s.meter_rates = rates;
        }
        s.meter_burst_bytes = self.meter_burst.map(|b| b.0);
        if s.meter_burst_bytes == Some(0) {
            return Err("meter_burst: must be positive (every packet would be RED)".into());
        }
        if let Some(a) = self.meter_adjust_bytes {
            s.meter_adjust_bytes = a;
        }
        if let Some(m) = &self.modes {
            s.modes = one_of(
                "modes",
                m,
                &[
                    ("pess_half_opt", Modes::PessHalfOpt),
                    ("pess_opt", Modes::PessOpt),
                    ("trim_all_opt", Modes::TrimAllOpt),
                ],
            )?;
        }
        if let Some(t0) = self.t0 {
            s.t0 = t0.0;
        }
        match s.modes {
            Modes::PessHalfOpt => {
                if let Some(t1) = self.t1 {
                    s.t1 = t1.0;
                }
                if s.t1 < s.t0 {
                    let default = if self.t1.is_none() {
                        " (the default)"
                    } else {
                        ""
                    };
                    return Err(format!(
                        "t1: {}{default} is shorter than t0 ({}); T1 counts from the \
                         notification, as T0 does, so the HALF phase is t1 - t0",
                        DisplayTime(s.t1),
                        DisplayTime(s.t0)
                    ));
                }
            }
            Modes::PessOpt | Modes::TrimAllOpt => {
                if self.t1.is_some() {
                    return Err(format!(
                        "t1: modes = \"{}\" has no HALF phase (it goes straight to \
                         OPTIMISTIC after t0)",
                        self.modes.as_deref().unwrap_or_default()
                    ));
                }
                // No HALF phase: an empty one, so that any reading of T1 agrees.
                s.t1 = s.t0;
            }
        }
        if let Some(r) = &self.response {
            s.response = one_of(
                "response",
                r,
                &[("time", Response::Time), ("count", Response::Count(0))],
            )?;
        }
        match s.response {
            Response::Time => {
                if self.trim_count.is_some() {
                    return Err("trim_count: only used with response = \"count\"".into());
                }
            }
            Response::Count(_) => {
                // Trim-N has no modes: the timers would be ignored.
                for (key, given) in [
                    ("t0", self.t0.is_some()),
                    ("t1", self.t1.is_some()),
                    ("modes", self.modes.is_some()),
                ] {
                    if given {
                        return Err(format!("{key}: not used with response = \"count\" (trim-N trims the next trim_count packets; it has no modes or timers)"));
                    }
                }
                let n = self.trim_count.unwrap_or(DEFAULT_TRIM_COUNT);
                if n == 0 {
                    return Err(
                        "trim_count: must be at least 1 (trim-N with N = 0 never responds)".into(),
                    );
                }
                s.response = Response::Count(n);
            }
        }
        if let Some(n) = &self.notify_scope {
            s.notify_scope = one_of(
                "notify_scope",
                n,
                &[("all", NotifyScope::All), ("origin", NotifyScope::Origin)],
            )?;
        }
        s.notify_latency = self.notify_latency.map(|d| d.0);
        if let Some(t) = &self.mod_target {
            s.mod_target = one_of(
                "mod_target",
                t,
                &[
                    ("original", ModTarget::Original),
                    ("sender", ModTarget::Sender),
                ],
            )?;
        }
        s.ingress_lag = self.ingress_lag.map(|d| d.0);
        s.depth_threshold_bytes = self.depth_threshold.map(|b| b.0);
        if s.depth_threshold_bytes == Some(0) {
            return Err(
                "depth_threshold: must be positive (ingress would trim every packet)".into(),
            );
        }
        Ok(s)
    }
}

/// N of trim-N: "N >= 12", the DoD queue's worst-case overload (§4, digest 1.H item 31).
pub const DEFAULT_TRIM_COUNT: u32 = 12;

impl super::SwitchSpec {
    /// `[switch] model`. Errors name the key below `switch.`.
    pub fn model(&self) -> Result<Model, String> {
        parse_model(&self.model)
    }

    /// The resolved hardware settings (`model = "output_queued"` gives
    /// `HwSettings::default()`, which nothing reads). `None` fields are defaults
    /// that depend on the network, as [`HwSettings`] documents. Errors name the key
    /// below `switch.` (`model: ...`, `pipelines.t0: ...`).
    pub fn hw_settings(&self) -> Result<HwSettings, String> {
        let model = self.model()?;
        match &self.pipelines {
            Some(p) => p.resolve(model).map_err(|e| format!("pipelines.{e}")),
            None => Ok(HwSettings {
                model,
                ..HwSettings::default()
            }),
        }
    }
}

/// The kind name of a queue table, as scenario files spell it.
fn kind_name(q: &QueueSpec) -> &'static str {
    match q {
        QueueSpec::DropTail { .. } => "drop_tail",
        QueueSpec::Ecn { .. } => "ecn",
        QueueSpec::Red { .. } => "red",
        QueueSpec::FairQueue { .. } => "fair_queue",
        QueueSpec::StrictPriority { .. } => "strict_priority",
        QueueSpec::Trimming { .. } => "trimming",
        QueueSpec::RandomLoss { .. } => "random_loss",
        QueueSpec::Afq { .. } => "afq",
        QueueSpec::Sfq { .. } => "sfq",
        QueueSpec::IdealFq { .. } => "ideal_fq",
    }
}

/// The checks of `[switch] model`, `[switch.pipelines]` and the `[output]` keys of
/// the hardware switch against the rest of the scenario. Errors give the full key.
pub fn validate(sc: &Scenario) -> Result<(), String> {
    let hw = sc.switch.hw_settings().map_err(|e| format!("switch.{e}"))?;
    let model = hw.model;
    let name = model.name();
    if model != Model::OutputQueued {
        // The TM is NDP's trimming queue, which deflects instead of trimming (§3).
        let queues = std::iter::once(("switch.queue".to_string(), &sc.switch.queue))
            .chain(
                sc.switch
                    .edge_queue
                    .iter()
                    .map(|q| ("switch.edge_queue".to_string(), q)),
            )
            .chain(
                sc.switch
                    .tier_queue
                    .iter()
                    .map(|(t, q)| (format!("switch.tier_queue.{t}"), q)),
            );
        for (key, q) in queues {
            if !matches!(q, QueueSpec::Trimming { .. }) {
                return Err(format!(
                    "{key}: the traffic manager of a \"{name}\" switch holds NDP trimming \
                     queues (kind = \"trimming\"); got {}",
                    kind_name(q)
                ));
            }
        }
        // Lossy by design; and IOFD keeps its state in the field the hardware
        // switch tags trimmed headers with (`Packet::ce_bytes`).
        if sc.pfc.enabled {
            return Err(format!(
                "switch.model: \"{name}\" cannot be combined with pfc (a trimming switch \
                 is lossy by design)"
            ));
        }
        if sc.iofd.enabled {
            return Err(format!(
                "switch.model: \"{name}\" cannot be combined with iofd"
            ));
        }
        if let Some(burst) = hw.meter_burst_bytes {
            let mtu = sc.transport.mtu.0;
            if burst < mtu {
                return Err(format!(
                    "switch.pipelines.meter_burst: {burst} B is less than the MTU \
                     (transport.mtu = {mtu} B): every full-size packet would be RED"
                ));
            }
        }
    }
    let out = &sc.output;
    if out.pipelines_csv && model == Model::OutputQueued {
        return Err(
            "output.pipelines_csv: an output-queued switch has no pipelines (set \
             switch.model to a hardware model)"
                .into(),
        );
    }
    if out.mode_series && model != Model::Tofino {
        return Err(format!(
            "output.mode_series: only model \"tofino\" has modes (the feedback loop); \
             this switch's model is \"{name}\""
        ));
    }
    if let Some(a) = &out.arrivals {
        if a.flows.as_ref().is_some_and(Vec::is_empty) {
            return Err(
                "output.arrivals.flows: list at least one flow (omit the key for every \
                 flow)"
                    .into(),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::US;

    fn pipelines(text: &str) -> PipelinesSpec {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn no_keys_give_the_papers_defaults_for_every_model() {
        for name in [
            "output_queued",
            "deflect_on_drop",
            "tofino",
            "mirror_on_drop",
            "tofino2",
        ] {
            let model = parse_model(name).unwrap();
            let want = HwSettings {
                model,
                ..HwSettings::default()
            };
            assert_eq!(pipelines("").resolve(model).unwrap(), want, "{name}");
            let mut sw: crate::scenario::SwitchSpec =
                toml::from_str(&format!("model = \"{name}\"")).unwrap();
            assert_eq!(sw.hw_settings().unwrap(), want, "{name}");
            sw.pipelines = Some(PipelinesSpec::default());
            assert_eq!(sw.hw_settings().unwrap(), want, "{name}");
        }
        let sw = crate::scenario::SwitchSpec::default();
        assert_eq!(sw.hw_settings().unwrap(), HwSettings::default());
    }

    #[test]
    fn a_full_tofino_table_resolves_every_key() {
        let p = pipelines(
            r#"
            ports_per_pipeline = 8
            recirculation_rate = "40Gbps"
            recirculation_latency = "2us"
            recirculation_limit_packets = 500
            meters = "two"
            meter_rates = [0.9, 0.4, 0.2]
            meter_burst = "30KB"
            meter_adjust_bytes = 25
            t0 = "3us"
            t1 = "12us"
            modes = "pess_half_opt"
            response = "time"
            notify_scope = "origin"
            notify_latency = "2us"
            "#,
        );
        let s = p.resolve(Model::Tofino).unwrap();
        assert_eq!(
            s,
            HwSettings {
                model: Model::Tofino,
                ports_per_pipeline: 8,
                recirculation_rate_bps: Some(40_000_000_000),
                recirculation_latency: 2 * US,
                recirculation_limit_packets: Some(500),
                meters: Meters::Two,
                meter_rates: [0.9, 0.4, 0.2],
                meter_burst_bytes: Some(30_000),
                meter_adjust_bytes: 25,
                t0: 3 * US,
                t1: 12 * US,
                modes: Modes::PessHalfOpt,
                response: Response::Time,
                notify_scope: NotifyScope::Origin,
                notify_latency: Some(2 * US),
                mod_target: ModTarget::Original,
                ingress_lag: None,
                depth_threshold_bytes: None,
            }
        );
    }

    #[test]
    fn the_other_models_keys_resolve() {
        let s = pipelines("mod_target = \"sender\"\nrecirculation_limit_packets = 9")
            .resolve(Model::MirrorOnDrop)
            .unwrap();
        assert_eq!(s.mod_target, ModTarget::Sender);
        assert_eq!(s.recirculation_limit_packets, Some(9));
        let s = pipelines("ingress_lag = \"100ns\"\ndepth_threshold = \"15KB\"")
            .resolve(Model::Tofino2)
            .unwrap();
        assert_eq!(s.ingress_lag, Some(100_000));
        assert_eq!(s.depth_threshold_bytes, Some(15_000));
        let s = pipelines("response = \"count\"\ntrim_count = 20")
            .resolve(Model::Tofino)
            .unwrap();
        assert_eq!(s.response, Response::Count(20));
        // trim-N defaults to the paper's N = 12.
        let s = pipelines("response = \"count\"")
            .resolve(Model::Tofino)
            .unwrap();
        assert_eq!(s.response, Response::Count(DEFAULT_TRIM_COUNT));
    }

    #[test]
    fn modes_without_a_half_phase_have_an_empty_one() {
        // A t0 beyond the default t1 is fine when there is no HALF phase.
        for modes in ["pess_opt", "trim_all_opt"] {
            let s = pipelines(&format!("modes = \"{modes}\"\nt0 = \"30us\""))
                .resolve(Model::Tofino)
                .unwrap();
            assert_eq!((s.t0, s.t1), (30 * US, 30 * US), "{modes}");
        }
        let e = pipelines("t0 = \"30us\"")
            .resolve(Model::Tofino)
            .unwrap_err();
        assert!(
            e.starts_with("t1: 24.000us (the default) is shorter than t0"),
            "{e}"
        );
    }

    #[test]
    fn keys_of_other_models_are_refused_by_name() {
        let cases = [
            (
                "t0 = \"1us\"",
                Model::DeflectOnDrop,
                "t0: only used with model \"tofino\"",
            ),
            (
                "mod_target = \"sender\"",
                Model::Tofino,
                "mod_target: only used with",
            ),
            (
                "meters = \"two\"",
                Model::MirrorOnDrop,
                "meters: only used with",
            ),
            (
                "depth_threshold = 100",
                Model::Tofino,
                "depth_threshold: only used with",
            ),
            (
                "ports_per_pipeline = 4",
                Model::OutputQueued,
                "ports_per_pipeline: only",
            ),
        ];
        for (text, model, want) in cases {
            let e = pipelines(text).resolve(model).unwrap_err();
            assert!(e.starts_with(want), "{text}: {e}");
        }
    }
}
