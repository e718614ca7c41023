//! DCQCN (Zhu et al., SIGCOMM 2015): rate-based congestion control for RoCEv2, in its
//! three roles, each a small state machine with no I/O and no clock of its own.
//!
//! - **CP**, the congestion point (a switch's egress queue): RED on the instantaneous
//!   queue, [`mark_probability`] (§3.1, Figure 5; the fluid model's equation (5)).
//! - **NP**, the notification point (the receiving NIC): [`NotificationPoint`], the
//!   Figure 6 state machine. A CE-marked packet of a flow that got no CNP in the
//!   last `cnp_interval` is answered by a CNP at once; later marks in that interval
//!   by one CNP when it ends. At most one CNP per flow per interval (50 µs).
//! - **RP**, the reaction point (the sending NIC's rate limiter): [`ReactionPoint`],
//!   the Figure 7 state machine with equations (1)-(4): a cut on each CNP, α decaying
//!   on its own timer, and the QCN-style increase (fast recovery, additive, hyper)
//!   driven by a timer and a byte counter.
//!
//! The parameters come in named profiles ([`Profile`]), one engine for all of them:
//! the paper's values, the Mellanox firmware defaults the EQDS paper lists in its
//! Appendix B, HPCC's ns-3 model (the most used open simulator of DCQCN) and htsim's.
//! Where the paper leaves something open the profile says what it chose and why.
//!
//! Times are picoseconds, rates bits per second. Rates and α are `f64`: the
//! equations are real-valued, and Rust's floating point is IEEE without fast-math,
//! so a run stays bit-for-bit reproducible.

use crate::units::{Time, MS, US};

/// Where a parameter set comes from. See [`DcqcnParams::profile`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// The DCQCN paper's values. Kmin = 5 KB, Kmax = 200 KB, Pmax = 1 %, g = 1/256,
    /// Tinc = 55 µs and B = 10 MB are recalled (the seed text stops before §5.2),
    /// corroborated by two public fluid-model implementations; N = 50 µs, K = 55 µs,
    /// F = 5, RAI = 40 Mbps and α starting at 1 are in the text. RHAI is not given:
    /// 200 Mbps (5 RAI, the authors' own ns-3 sample configuration).
    Paper,
    /// Mellanox NIC firmware defaults as the EQDS paper's Appendix B gives them
    /// ("baseline": K_low 150 kB, K_high 1500 kB, R_d 4 µs, R_i 300 µs, R_AI 5 Mbps),
    /// and from the firmware's own knobs: α timer 1 µs, F = 1, RHAI 50 Mbps, a CNP
    /// gap and a cut period of 4 µs. Pmax is not given: 1 %, the paper's. The
    /// firmware's byte counter (`rpg_byte_reset` 32767, in units the sources do not
    /// agree on) is left off, as HPCC's model of the same firmware does. A cut sets
    /// RT to RC only after a timer increase (`clamp_target` off: the firmware's
    /// `clamp_tgt_rate = 0`, HPCC's `CLAMP_TARGET_RATE 0`).
    MlxFw,
    /// HPCC's ns-3 `dcqcn` preset: α updated before the cut, α timer 1 µs, increase
    /// timer 300 µs, no byte counter, F = 1, RAI 5 Mbps and RHAI 50 Mbps (scaled by
    /// link speed / 25 Gbps), at most one cut per 4 µs, marking 100/400 KB × speed /
    /// 25 Gbps with Pmax 0.2, and `CLAMP_TARGET_RATE 0` (a cut sets RT to RC only
    /// after a timer increase).
    HpccNs3,
    /// htsim's DCQCN: the paper's timers and byte counter, F = 5, but RAI = line rate
    /// / 20 and RHAI = line rate / 10, far above the paper's. Use it when comparing
    /// with htsim-based papers (EQDS, trimming), and say so.
    Htsim,
}

impl Profile {
    /// Every profile, for sweeps and tests.
    pub const ALL: [Profile; 4] = [
        Profile::Paper,
        Profile::MlxFw,
        Profile::HpccNs3,
        Profile::Htsim,
    ];

    /// The name a scenario gives it.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Paper => "paper",
            Profile::MlxFw => "mlx-fw",
            Profile::HpccNs3 => "hpcc-ns3",
            Profile::Htsim => "htsim",
        }
    }

    /// The profile of a name, if there is one.
    pub fn from_name(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// RED marking at the congestion point: Kmin, Kmax in bytes, Pmax.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Marking {
    pub kmin_bytes: u64,
    pub kmax_bytes: u64,
    pub pmax: f64,
}

/// One DCQCN parameter set, for a NIC whose line rate is `line_rate_bps`.
#[derive(Clone, Debug, PartialEq)]
pub struct DcqcnParams {
    pub profile: Profile,
    /// The sender's line rate: where a flow starts (no slow start) and the ceiling.
    pub line_rate_bps: f64,
    /// The floor a cut never goes below \[choice: the paper gives none\]: 100 Mbps.
    pub min_rate_bps: f64,
    /// α's gain g (equations (1) and (2)).
    pub g: f64,
    /// α's decay period K (τ′), without a CNP in between (equation (2)).
    pub alpha_timer: Time,
    /// The rate-increase timer's period Tinc.
    pub increase_timer: Time,
    /// Bytes sent per byte-counter expiry B; `None`: no byte counter.
    pub byte_counter: Option<u64>,
    /// Fast-recovery steps F.
    pub fast_recovery_steps: u32,
    /// Additive increase step RAI.
    pub rai_bps: f64,
    /// Hyper increase step RHAI.
    pub rhai_bps: f64,
    /// Update α before the cut (HPCC's and the authors' ns-3 order) rather than after
    /// (the paper's equation (1)).
    pub alpha_first: bool,
    /// On a cut, RT takes RC always (the paper's equation (1)); `false`: only if the
    /// increase timer fired since the previous cut, as the Mellanox firmware does with
    /// its defaults `clamp_tgt_rate = 0`, `clamp_tgt_rate_after_time_inc = 1` (and
    /// HPCC's model of it, whose `CLAMP_TARGET_RATE` is off). Under a train of CNPs
    /// RT then keeps the rate from before the congestion, and fast recovery returns
    /// towards it.
    pub clamp_target: bool,
    /// At most one cut per this period; a CNP within it is applied when it ends. 0:
    /// every CNP cuts at once (the paper).
    pub min_cut_interval: Time,
    /// The NP's CNP interval N (τ): at most one CNP per flow per interval.
    pub cnp_interval: Time,
    /// The CP's RED ramp.
    pub marking: Marking,
}

const MBPS: f64 = 1e6;

impl DcqcnParams {
    /// The parameters of `profile` for a NIC of `line_rate_bps`.
    pub fn profile(profile: Profile, line_rate_bps: u64) -> Self {
        let line = line_rate_bps as f64;
        // HPCC scales its steps and thresholds with the link speed against 25 Gbps.
        let per_25g = line / 25e9;
        let paper = DcqcnParams {
            profile,
            line_rate_bps: line,
            min_rate_bps: 100.0 * MBPS,
            g: 1.0 / 256.0,
            alpha_timer: 55 * US,
            increase_timer: 55 * US,
            byte_counter: Some(10_000_000),
            fast_recovery_steps: 5,
            rai_bps: 40.0 * MBPS,
            rhai_bps: 200.0 * MBPS,
            alpha_first: false,
            clamp_target: true,
            min_cut_interval: 0,
            cnp_interval: 50 * US,
            marking: Marking {
                kmin_bytes: 5_000,
                kmax_bytes: 200_000,
                pmax: 0.01,
            },
        };
        match profile {
            Profile::Paper => paper,
            Profile::MlxFw => DcqcnParams {
                clamp_target: false,
                alpha_timer: US,
                increase_timer: 300 * US,
                byte_counter: None,
                fast_recovery_steps: 1,
                rai_bps: 5.0 * MBPS,
                rhai_bps: 50.0 * MBPS,
                min_cut_interval: 4 * US,
                cnp_interval: 4 * US,
                marking: Marking {
                    kmin_bytes: 150_000,
                    kmax_bytes: 1_500_000,
                    pmax: 0.01,
                },
                ..paper
            },
            Profile::HpccNs3 => DcqcnParams {
                clamp_target: false,
                alpha_timer: US,
                increase_timer: 300 * US,
                byte_counter: None,
                fast_recovery_steps: 1,
                rai_bps: 5.0 * MBPS * per_25g,
                rhai_bps: 50.0 * MBPS * per_25g,
                alpha_first: true,
                min_cut_interval: 4 * US,
                marking: Marking {
                    kmin_bytes: (100_000.0 * per_25g).round() as u64,
                    kmax_bytes: (400_000.0 * per_25g).round() as u64,
                    pmax: 0.2,
                },
                ..paper
            },
            Profile::Htsim => DcqcnParams {
                rai_bps: line / 20.0,
                rhai_bps: line / 10.0,
                ..paper
            },
        }
    }

    /// Checks the parameters; errors name the field.
    pub fn validate(&self) -> Result<(), String> {
        // Written to refuse NaN as well.
        if self.line_rate_bps.is_nan() || self.line_rate_bps <= 0.0 {
            return Err("line_rate: must be positive".into());
        }
        if !(self.min_rate_bps > 0.0 && self.min_rate_bps <= self.line_rate_bps) {
            return Err("min_rate: must be positive and at most the line rate".into());
        }
        if !(self.g > 0.0 && self.g <= 1.0) {
            return Err(format!("g: must be within (0, 1], got {}", self.g));
        }
        for (name, t) in [
            ("alpha_timer", self.alpha_timer),
            ("increase_timer", self.increase_timer),
            ("cnp_interval", self.cnp_interval),
        ] {
            if t == 0 || t > 10_000 * MS {
                return Err(format!("{name}: must be positive and at most 10 s"));
            }
        }
        if self.byte_counter == Some(0) {
            return Err("byte_counter: must be positive (leave it out for none)".into());
        }
        if !(self.rai_bps >= 0.0 && self.rhai_bps >= 0.0) {
            return Err("rai, rhai: must not be negative".into());
        }
        let m = self.marking;
        if m.kmax_bytes < m.kmin_bytes {
            return Err(format!(
                "kmax: {} B is below kmin ({} B)",
                m.kmax_bytes, m.kmin_bytes
            ));
        }
        if !(m.pmax > 0.0 && m.pmax <= 1.0) {
            return Err(format!("pmax: must be within (0, 1], got {}", m.pmax));
        }
        Ok(())
    }
}

/// The CP's marking probability for a packet joining an egress queue of `queue_bytes`
/// (§3.1, Figure 5, equation (5)): 0 up to Kmin, rising linearly to Pmax at Kmax, 1
/// beyond. Kmin = Kmax with Pmax = 1 is DCTCP's step.
pub fn mark_probability(queue_bytes: u64, m: &Marking) -> f64 {
    if queue_bytes <= m.kmin_bytes {
        0.0
    } else if queue_bytes > m.kmax_bytes {
        1.0
    } else {
        m.pmax * (queue_bytes - m.kmin_bytes) as f64 / (m.kmax_bytes - m.kmin_bytes) as f64
    }
}

/// The NP of one flow (Figure 6).
#[derive(Clone, Debug)]
pub struct NotificationPoint {
    interval: Time,
    /// End of the current interval after a CNP; `None`: idle, the next mark sends a
    /// CNP at once.
    window_end: Option<Time>,
    /// A packet was marked since the last CNP.
    marked: bool,
    cnps: u64,
}

impl NotificationPoint {
    /// An idle NP that sends at most one CNP per `interval`.
    pub fn new(interval: Time) -> Self {
        Self {
            interval,
            window_end: None,
            marked: false,
            cnps: 0,
        }
    }

    /// A data packet of the flow arrived at `now`, CE-marked or not. Returns whether to
    /// send a CNP now.
    pub fn on_packet(&mut self, now: Time, ce: bool) -> bool {
        if !ce {
            return false;
        }
        match self.window_end {
            Some(end) if now < end => {
                self.marked = true;
                false
            }
            _ => {
                self.window_end = Some(now + self.interval);
                self.marked = false;
                self.cnps += 1;
                true
            }
        }
    }

    /// When [`NotificationPoint::handle_timeout`] next has work.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.window_end
    }

    /// The interval ended: a CNP if a packet was marked during it (and another
    /// interval starts), otherwise back to idle. Returns whether to send a CNP now.
    pub fn handle_timeout(&mut self, now: Time) -> bool {
        match self.window_end {
            Some(end) if now >= end => {
                if self.marked {
                    self.marked = false;
                    self.window_end = Some(now + self.interval);
                    self.cnps += 1;
                    true
                } else {
                    self.window_end = None;
                    false
                }
            }
            _ => false,
        }
    }

    /// CNPs sent so far.
    pub fn cnps(&self) -> u64 {
        self.cnps
    }
}

/// Counters of one RP, for outputs and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RpStats {
    pub cnps: u64,
    pub cuts: u64,
    /// Cuts the minimum rate stopped.
    pub floored: u64,
    pub fast_recovery: u64,
    pub additive: u64,
    pub hyper: u64,
}

/// The RP of one flow (Figure 7): its current rate RC, target rate RT, α and the
/// increase machinery.
#[derive(Clone, Debug)]
pub struct ReactionPoint {
    p: DcqcnParams,
    rc: f64,
    rt: f64,
    alpha: f64,
    /// Timer expiries (T) and byte-counter expiries (BC) since the last cut.
    timer_count: u32,
    bc_count: u32,
    bytes_since_bc: u64,
    /// Next α decay and next increase-timer expiry (`Time::MAX`: not running).
    alpha_due: Time,
    increase_due: Time,
    /// A CNP arrived within `min_cut_interval` of the last cut: cut at `cut_due`.
    cut_due: Time,
    last_cut: Option<Time>,
    stats: RpStats,
}

impl ReactionPoint {
    /// A flow starting at line rate with α = 1 (the paper: no slow start; the first
    /// CNP halves the rate).
    pub fn new(p: DcqcnParams) -> Self {
        Self {
            rc: p.line_rate_bps,
            rt: p.line_rate_bps,
            alpha: 1.0,
            timer_count: 0,
            bc_count: 0,
            bytes_since_bc: 0,
            alpha_due: Time::MAX,
            increase_due: Time::MAX,
            cut_due: Time::MAX,
            last_cut: None,
            stats: RpStats::default(),
            p,
        }
    }

    /// The current rate RC, bits per second: the flow is paced at it.
    pub fn rate_bps(&self) -> f64 {
        self.rc
    }

    /// The target rate RT.
    pub fn target_bps(&self) -> f64 {
        self.rt
    }

    /// α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The parameters.
    pub fn params(&self) -> &DcqcnParams {
        &self.p
    }

    /// Counters so far.
    pub fn stats(&self) -> RpStats {
        self.stats
    }

    /// A CNP for this flow arrived at `now`.
    pub fn on_cnp(&mut self, now: Time) {
        self.stats.cnps += 1;
        let since = self.last_cut.map(|t| now.saturating_sub(t));
        if self.p.min_cut_interval > 0 && since.is_some_and(|s| s < self.p.min_cut_interval) {
            // At most one cut per period: this one waits for its end.
            let at = self.last_cut.unwrap_or(now) + self.p.min_cut_interval;
            self.cut_due = self.cut_due.min(at);
            return;
        }
        self.cut(now);
    }

    /// Equation (1): RT takes RC, RC is cut by α/2, α moves towards 1; the increase
    /// counters restart, and so do both timers.
    fn cut(&mut self, now: Time) {
        self.stats.cuts += 1;
        self.last_cut = Some(now);
        self.cut_due = Time::MAX;
        if self.p.alpha_first {
            self.alpha = (1.0 - self.p.g) * self.alpha + self.p.g;
        }
        if self.p.clamp_target || self.timer_count > 0 {
            self.rt = self.rc;
        }
        let cut = self.rc * (1.0 - self.alpha / 2.0);
        if cut < self.p.min_rate_bps {
            self.stats.floored += 1;
        }
        self.rc = cut.max(self.p.min_rate_bps);
        if !self.p.alpha_first {
            self.alpha = (1.0 - self.p.g) * self.alpha + self.p.g;
        }
        self.timer_count = 0;
        self.bc_count = 0;
        self.bytes_since_bc = 0;
        self.increase_due = now + self.p.increase_timer;
        self.alpha_due = now + self.p.alpha_timer;
    }

    /// The flow put `bytes` on the wire at `now`: the byte counter may expire, which
    /// is an increase event.
    pub fn on_sent(&mut self, bytes: u64) {
        let Some(b) = self.p.byte_counter else {
            return;
        };
        if self.at_line_rate() {
            return;
        }
        self.bytes_since_bc += bytes;
        while self.bytes_since_bc >= b {
            self.bytes_since_bc -= b;
            self.bc_count += 1;
            self.increase();
        }
    }

    /// When [`ReactionPoint::handle_timeout`] next has work, if ever.
    pub fn poll_timeout(&self) -> Option<Time> {
        let next = self.alpha_due.min(self.increase_due).min(self.cut_due);
        (next != Time::MAX).then_some(next)
    }

    /// Runs what is due at `now`: a deferred cut, α decay (equation (2)), the
    /// increase timer.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.cut_due <= now {
            self.cut(now);
        }
        while self.alpha_due <= now {
            self.alpha *= 1.0 - self.p.g;
            // Negligible from here on: stop the timer rather than run it for ever.
            self.alpha_due = if self.alpha < 1e-6 {
                Time::MAX
            } else {
                self.alpha_due + self.p.alpha_timer
            };
        }
        while self.increase_due <= now {
            self.timer_count += 1;
            self.increase();
            self.increase_due = if self.at_line_rate() {
                Time::MAX
            } else {
                self.increase_due + self.p.increase_timer
            };
        }
    }

    fn at_line_rate(&self) -> bool {
        self.rc >= self.p.line_rate_bps && self.rt >= self.p.line_rate_bps
    }

    /// One increase event (Figure 7), after its counter was bumped: fast recovery
    /// for the first F events of either counter (equation (3)), hyper increase once
    /// both passed F, additive increase in between (equation (4)).
    fn increase(&mut self) {
        let f = self.p.fast_recovery_steps;
        let (t, bc) = (self.timer_count, self.bc_count);
        // Without a byte counter BC stays 0: never hyper increase, as in QCN.
        let (hi, lo) = (t.max(bc), t.min(bc));
        if hi <= f {
            self.stats.fast_recovery += 1;
        } else if lo > f {
            self.stats.hyper += 1;
            self.rt += f64::from(lo - f) * self.p.rhai_bps;
        } else {
            self.stats.additive += 1;
            self.rt += self.p.rai_bps;
        }
        self.rt = self.rt.min(self.p.line_rate_bps);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.p.line_rate_bps);
    }
}

#[cfg(test)]
mod tests;
