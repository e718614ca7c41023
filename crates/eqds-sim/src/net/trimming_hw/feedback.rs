//! The feedback loop: PESSIMISTIC / HALF / OPTIMISTIC per (pipeline, port) (§4).
//!
//! Ingress meters alone trim each pipeline's traffic to line rate, so several
//! pipelines sending to one port overload it and the excess is deflected (DoD). When
//! a deflected packet leaves its DoD port, a notification for its egress port reaches
//! the ingress pipelines, which then meter that port's traffic harder for a while (§4,
//! Figure 3). The state is soft: nothing ever says "all clear", a notification makes
//! the port PESSIMISTIC (25 % of line rate) for T0, HALF (50 %) until T1 after it, and
//! then it relaxes to OPTIMISTIC (100 %) by itself. A later notification restarts both
//! timers. So the only state per (pipeline, port) is the time of its last
//! notification, as in switch.p4's single timestamp register (§5), and the mode is
//! derived from it on every packet ([`ModeRules::mode`]).
//!
//! The paper's timers disagree (spec Q5); the defaults are §6.2's T0 = 6 µs and
//! T1 = 24 µs, both counted from the notification as in Figure 3's pseudo-code.
//! The ablations of §6.3 change the modes: PESSIMISTIC then OPTIMISTIC (no HALF), or
//! trimming everything during the response. Trim-N, which §4 considered and rejected,
//! is [`TrimBudget`].
//!
//! [`ModeClock`] keeps, beside the last notification, what the outputs need: the time
//! each (pipeline, port) spent in each mode and its transitions (Figure 7's timeline).

use super::{HwSettings, Modes};
use crate::units::Time;

/// The mode of a (pipeline, egress port): which meter decides (§4). Ordered from the
/// harshest to the most lenient; `as usize` indexes [`ModeClock::finish`]'s times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// Trim every packet (the response of the §6.3 ablation, Figure 9c).
    TrimAll,
    /// Trim to 25 % of line rate: right after a notification.
    Pessimistic,
    /// Trim to 50 %: after T0 without a notification, until T1.
    Half,
    /// Trim to line rate, as if the pipeline were the port's only source.
    Optimistic,
}

impl Mode {
    /// Every mode, in `as usize` order.
    pub const ALL: [Mode; 4] = [
        Mode::TrimAll,
        Mode::Pessimistic,
        Mode::Half,
        Mode::Optimistic,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::TrimAll => "trim_all",
            Mode::Pessimistic => "pessimistic",
            Mode::Half => "half",
            Mode::Optimistic => "optimistic",
        }
    }
}

/// The rules that turn the time since a notification into a mode: which modes follow
/// a notification, and T0 and T1 (both counted from the notification).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModeRules {
    pub modes: Modes,
    pub t0: Time,
    /// Ignored unless `modes` is `PessHalfOpt`; a T1 at or below T0 leaves no HALF.
    pub t1: Time,
}

impl ModeRules {
    pub fn from_settings(s: &HwSettings) -> Self {
        ModeRules {
            modes: s.modes,
            t0: s.t0,
            t1: s.t1,
        }
    }

    /// The mode a notification starts: PESSIMISTIC, or TRIM_ALL under `TrimAllOpt`.
    #[inline]
    pub fn response(&self) -> Mode {
        match self.modes {
            Modes::TrimAllOpt => Mode::TrimAll,
            Modes::PessHalfOpt | Modes::PessOpt => Mode::Pessimistic,
        }
    }

    /// The mode at `now` of a (pipeline, port) whose last notification acted at `last`
    /// (`None`: never). On half-open intervals from the notification n:
    /// `[n, n+T0)` the response mode, `[n+T0, n+T1)` HALF (`PessHalfOpt` only), then
    /// OPTIMISTIC. T0 = 0 switches the response off altogether (always OPTIMISTIC,
    /// whatever T1: the zero point of Figure 8's sweep, where the half phase, kept at
    /// 3 x T0 (spec Q5), is zero too). A `now` before `last` counts as the instant of
    /// the notification.
    #[inline]
    pub fn mode(&self, last: Option<Time>, now: Time) -> Mode {
        let Some(n) = last else {
            return Mode::Optimistic;
        };
        if self.t0 == 0 {
            return Mode::Optimistic;
        }
        let since = now.saturating_sub(n);
        if since < self.t0 {
            self.response()
        } else if since < self.t1 && self.modes == Modes::PessHalfOpt {
            Mode::Half
        } else {
            Mode::Optimistic
        }
    }

    /// The times after a notification at `n` where the mode changes (each strictly
    /// after `n`), in order; at most two (to HALF, to OPTIMISTIC).
    #[inline]
    fn changes_after(&self, n: Time) -> impl Iterator<Item = Time> + '_ {
        let (a, b) = (self.t0.min(self.t1), self.t0.max(self.t1));
        [n.checked_add(a), n.checked_add(b)]
            .into_iter()
            .flatten()
            .filter(move |&c| c > n && self.mode(Some(n), c - 1) != self.mode(Some(n), c))
    }
}

/// One (pipeline, egress port)'s soft state: the time of its last notification, plus
/// the time it spent in each mode and the transitions it made, for the outputs.
///
/// Before its first notification a port is OPTIMISTIC, from time 0; that initial mode
/// is not logged as a transition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModeClock {
    last: Option<Time>,
    /// Time up to which `time_in` is accumulated and transitions are logged.
    done: Time,
    /// The mode as of `done`, as last logged.
    shown: Mode,
    /// Time spent in each mode, indexed by `Mode as usize`, over `[0, done)`.
    time_in: [Time; 4],
}

impl Default for ModeClock {
    fn default() -> Self {
        ModeClock {
            last: None,
            done: 0,
            shown: Mode::Optimistic,
            time_in: [0; 4],
        }
    }
}

impl ModeClock {
    pub fn new() -> Self {
        Self::default()
    }

    /// When the last notification acted (`None`: never), for [`ModeRules::mode`].
    #[inline]
    pub fn last(&self) -> Option<Time> {
        self.last
    }

    /// Accounts the time from `done` to `to` under the current notification, and logs
    /// its transitions after `done` and before `to` (or at `to` too, if `at_to`).
    fn advance(
        &mut self,
        to: Time,
        at_to: bool,
        rules: &ModeRules,
        log: &mut impl FnMut(Time, Mode),
    ) {
        if to < self.done {
            return;
        }
        let mut from = self.done;
        if let Some(n) = self.last {
            for c in rules.changes_after(n) {
                if c <= self.done || c > to || (c == to && !at_to) {
                    continue;
                }
                // The mode up to `c` was the one before it.
                self.time_in[rules.mode(self.last, from) as usize] += c - from;
                from = c;
                let m = rules.mode(self.last, c);
                if m != self.shown {
                    log(c, m);
                    self.shown = m;
                }
            }
        }
        self.time_in[rules.mode(self.last, from) as usize] += to - from;
        self.done = to;
    }

    /// A notification acts at `now` (calls come in non-decreasing time, all with the
    /// same `rules`). Logs, in time order, every transition since the previous
    /// notification, then the one the notification makes.
    ///
    /// A transition of the old schedule at exactly `now` is superseded by the
    /// notification and not logged: at `now` the port is in the response mode, and
    /// that is logged (once) only if the port was in another mode just before. So a
    /// re-notification during the response restarts the timers without a transition,
    /// and one exactly at n+T0 too (PESSIMISTIC continues; no HALF for 0 ps).
    pub fn notify(&mut self, now: Time, rules: &ModeRules, log: &mut impl FnMut(Time, Mode)) {
        self.advance(now, false, rules, log);
        self.last = Some(now);
        let m = rules.mode(self.last, now);
        if m != self.shown {
            log(now, m);
            self.shown = m;
        }
    }

    /// Closes the accounting at the end of the run (`end` at or after the last
    /// notification): logs the transitions up to and including `end`, and returns the
    /// time spent in each mode over `[0, end)`, indexed by `Mode as usize` (they sum
    /// to `end`).
    pub fn finish(
        &mut self,
        end: Time,
        rules: &ModeRules,
        log: &mut impl FnMut(Time, Mode),
    ) -> [Time; 4] {
        self.advance(end, true, rules, log);
        self.time_in
    }
}

/// Trim-N (§4, rejected by the paper; an ablation): each notification adds N to its
/// (pipeline, port)'s budget, and while the budget lasts every packet for the port is
/// trimmed and spends one. The paper's objection is visible here: after an incast the
/// budget outlives it and trims unrelated traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrimBudget(u32);

impl TrimBudget {
    /// A notification: `n` more packets to trim (saturating).
    #[inline]
    pub fn add(&mut self, n: u32) {
        self.0 = self.0.saturating_add(n);
    }

    /// Whether this packet is trimmed (and spends one from the budget).
    #[inline]
    pub fn take(&mut self) -> bool {
        if self.0 > 0 {
            self.0 -= 1;
            true
        } else {
            false
        }
    }

    pub fn remaining(self) -> u32 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::US;
    use proptest::prelude::*;

    fn rules(modes: Modes, t0: Time, t1: Time) -> ModeRules {
        ModeRules { modes, t0, t1 }
    }

    #[test]
    fn the_defaults_are_the_papers() {
        let r = ModeRules::from_settings(&HwSettings::default());
        assert_eq!(r, rules(Modes::PessHalfOpt, 6 * US, 24 * US));
        assert_eq!(
            Mode::ALL.map(Mode::name),
            ["trim_all", "pessimistic", "half", "optimistic"]
        );
        for (i, m) in Mode::ALL.into_iter().enumerate() {
            assert_eq!(m as usize, i);
        }
    }

    #[test]
    fn the_timers_run_on_half_open_intervals() {
        let r = rules(Modes::PessHalfOpt, 6 * US, 24 * US);
        let n = 100 * US;
        assert_eq!(r.mode(None, n), Mode::Optimistic);
        assert_eq!(r.mode(Some(n), n), Mode::Pessimistic);
        assert_eq!(r.mode(Some(n), n + 6 * US - 1), Mode::Pessimistic);
        assert_eq!(r.mode(Some(n), n + 6 * US), Mode::Half);
        assert_eq!(r.mode(Some(n), n + 24 * US - 1), Mode::Half);
        assert_eq!(r.mode(Some(n), n + 24 * US), Mode::Optimistic);
        assert_eq!(r.mode(Some(n), Time::MAX), Mode::Optimistic);
    }

    #[test]
    fn a_renotification_restarts_both_timers() {
        let r = rules(Modes::PessHalfOpt, 6 * US, 24 * US);
        let mut c = ModeClock::new();
        let mut log = vec![];
        let mut push = |t, m| log.push((t, m));
        c.notify(0, &r, &mut push);
        c.notify(5 * US, &r, &mut push);
        // Still PESSIMISTIC past the first T0, HALF past the first T1.
        assert_eq!(r.mode(c.last(), 10 * US), Mode::Pessimistic);
        assert_eq!(r.mode(c.last(), 11 * US), Mode::Half);
        assert_eq!(r.mode(c.last(), 28 * US), Mode::Half);
        assert_eq!(r.mode(c.last(), 29 * US), Mode::Optimistic);
        let times = c.finish(40 * US, &r, &mut push);
        assert_eq!(
            log,
            [
                (0, Mode::Pessimistic),
                (11 * US, Mode::Half),
                (29 * US, Mode::Optimistic)
            ]
        );
        assert_eq!(times, [0, 11 * US, 18 * US, 11 * US]);
    }

    #[test]
    fn a_zero_t0_is_no_response() {
        for modes in [Modes::PessHalfOpt, Modes::PessOpt, Modes::TrimAllOpt] {
            let r = rules(modes, 0, 24 * US);
            let mut c = ModeClock::new();
            let mut log = vec![];
            let mut push = |t, m| log.push((t, m));
            for t in [0, US, 2 * US] {
                c.notify(t, &r, &mut push);
                assert_eq!(r.mode(c.last(), t), Mode::Optimistic);
                assert_eq!(r.mode(c.last(), t + 10 * US), Mode::Optimistic);
            }
            assert_eq!(c.finish(30 * US, &r, &mut push), [0, 0, 0, 30 * US]);
            assert!(log.is_empty(), "{log:?}");
        }
    }

    #[test]
    fn the_ablations_change_the_modes() {
        let n = 7 * US;
        let pess_opt = rules(Modes::PessOpt, 6 * US, 24 * US);
        let trim_all = rules(Modes::TrimAllOpt, 6 * US, 24 * US);
        for t in (n..n + 30 * US).step_by(100_000) {
            assert_ne!(pess_opt.mode(Some(n), t), Mode::Half, "at {t}");
        }
        assert_eq!(pess_opt.mode(Some(n), n + 6 * US - 1), Mode::Pessimistic);
        assert_eq!(pess_opt.mode(Some(n), n + 6 * US), Mode::Optimistic);
        assert_eq!(trim_all.mode(Some(n), n), Mode::TrimAll);
        assert_eq!(trim_all.mode(Some(n), n + 6 * US - 1), Mode::TrimAll);
        assert_eq!(trim_all.mode(Some(n), n + 6 * US), Mode::Optimistic);
    }

    #[test]
    fn a_transition_superseded_at_the_notification_is_not_logged() {
        let r = rules(Modes::PessHalfOpt, 6, 24);
        let mut log = vec![];
        let mut push = |t, m| log.push((t, m));
        let mut c = ModeClock::new();
        c.notify(10, &r, &mut push);
        c.notify(16, &r, &mut push); // exactly at n+T0: PESSIMISTIC goes on
        c.notify(40, &r, &mut push); // exactly at n+T1: HALF ends straight in PESSIMISTIC
        c.finish(64, &r, &mut push); // exactly at n+T1: OPTIMISTIC at the end is logged
        assert_eq!(
            log,
            [
                (10, Mode::Pessimistic),
                (22, Mode::Half),
                (40, Mode::Pessimistic),
                (46, Mode::Half),
                (64, Mode::Optimistic)
            ]
        );
    }

    #[test]
    fn trim_n_trims_exactly_n_per_notification() {
        for notifications in [0u32, 1, 5, 40] {
            let mut b = TrimBudget::default();
            let mut trimmed = 0;
            // Notifications among the packets, then a long tail of unrelated traffic.
            for i in 0..2000 {
                if i % 3 == 0 && i / 3 < notifications {
                    b.add(12);
                }
                trimmed += u32::from(b.take());
            }
            assert_eq!(trimmed, 12 * notifications);
            assert_eq!(b.remaining(), 0);
        }
        let mut b = TrimBudget::default();
        b.add(u32::MAX);
        b.add(12);
        assert_eq!(b.remaining(), u32::MAX);
    }

    /// The mode the notifications at `times` (sorted) give at `t`, straight from the
    /// rules.
    fn truth(r: &ModeRules, times: &[Time], t: Time) -> Mode {
        r.mode(times.iter().copied().rfind(|&n| n <= t), t)
    }

    fn modes_strategy() -> impl Strategy<Value = Modes> {
        prop_oneof![
            Just(Modes::PessHalfOpt),
            Just(Modes::PessOpt),
            Just(Modes::TrimAllOpt)
        ]
    }

    proptest! {
        #[test]
        fn the_log_and_times_match_the_rules(
            modes in modes_strategy(),
            t0 in 0u64..20,
            t1 in 0u64..60,
            gaps in prop::collection::vec(0u64..40, 0..20),
            tail in 0u64..100,
        ) {
            let r = rules(modes, t0, t1);
            let times: Vec<Time> = gaps
                .iter()
                .scan(0, |t, g| { *t += g; Some(*t) })
                .collect();
            let end = times.last().copied().unwrap_or(0) + tail;
            let mut log = vec![];
            let mut push = |t, m| log.push((t, m));
            let mut c = ModeClock::new();
            for &n in &times {
                c.notify(n, &r, &mut push);
            }
            let spent = c.finish(end, &r, &mut push);

            // Every entry is a real change, at most one per instant, in time order, by
            // `end`.
            let mut prev = (None, Mode::Optimistic);
            for &(t, m) in &log {
                prop_assert!(prev.0.is_none_or(|p| t > p) && t <= end, "{log:?}");
                prop_assert_ne!(m, prev.1, "{:?}", log);
                prev = (Some(t), m);
            }
            // Replaying the log gives the rules' mode at every picosecond up to `end`.
            let mut grid = [0; 4];
            for t in 0..=end {
                let replay = log
                    .iter()
                    .rfind(|&&(at, _)| at <= t)
                    .map_or(Mode::Optimistic, |&(_, m)| m);
                let want = truth(&r, &times, t);
                prop_assert_eq!(replay, want, "at {} in {:?}", t, log);
                if t < end {
                    grid[want as usize] += 1;
                }
            }
            prop_assert_eq!(spent, grid);
            prop_assert_eq!(spent.iter().sum::<Time>(), end);
        }
    }
}
