//! The per-egress-port meters of each ingress pipeline (§4, §5).
//!
//! Tofino's traffic manager cannot trim, so the paper trims in ingress instead: each
//! ingress pipeline keeps, for every egress port, byte meters that measure what *this
//! pipeline* sends to the port (a "virtual output queue", §4). A packet the meter
//! colours RED is trimmed before it reaches the TM. One pipeline alone behaves like
//! the ideal switch; several pipelines each pass up to the meter's rate, and what the
//! TM cannot hold is deflected (DoD), which is what the feedback loop (`feedback`)
//! answers by switching the meters a pipeline consults to slower ones.
//!
//! Two arrangements are modelled (spec Q20):
//! - [`MeterSet::Three`]: ndp.p4's one meter per mode (100 %, 50 %, 25 % of line
//!   rate), what the paper's §6 simulations model;
//! - [`MeterSet::Two`]: switch.p4's pair (§5), `opti` a two-rate meter (peak = line
//!   rate, committed = half) and `pesi` (a quarter), read through the action table
//!   of §5.
//!
//! The paper gives no burst sizes (spec Q4); the caller passes one (by default the
//! egress port's data-queue capacity, so the OPTIMISTIC meter of a pipeline that is the
//! only source behaves like the real queue). Every meter sees every metered packet,
//! whatever the mode (ndp.p4 runs all of them "so every meter sees all of the
//! traffic"), so a mode change finds its meter warm.
//!
//! Arithmetic is exact: a bucket's credit is kept in units of 10^-12 bit (bits x
//! `SEC`), so a rate in bit/s times an interval in picoseconds adds exactly the credit
//! earned, with no rounding to drift over a long run.

use super::feedback::{Mode, ModeRules};
use super::Meters;
use crate::units::{Time, SEC};

/// A meter's verdict on one packet (RFC 2698's colours).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colour {
    /// Within the committed rate (or, for a single-rate bucket, conforming).
    Green,
    /// Over the committed rate but within the peak rate.
    Yellow,
    /// Over the peak rate: trimmed in ingress.
    Red,
}

/// Credit, in units of 10^-12 bit, that `bytes` need.
#[inline]
fn credit_for(bytes: u64) -> u128 {
    u128::from(bytes) * 8 * u128::from(SEC)
}

/// A single-rate token bucket of `rate_bps` and depth `burst_bytes`, starting full.
///
/// Credit is refilled lazily, on each packet, from the time since the last one: the
/// product `rate_bps * dt` is taken in `u128` (a 64-by-64-bit product always fits) and
/// clamped at the depth, so even an idle gap of years cannot overflow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    rate_bps: u64,
    /// Depth, in units of 10^-12 bit.
    depth: u128,
    /// Credit held, in units of 10^-12 bit; never above `depth`.
    credit: u128,
    /// Time the credit was last brought up to date.
    last: Time,
}

impl TokenBucket {
    pub fn new(rate_bps: u64, burst_bytes: u64) -> Self {
        let depth = credit_for(burst_bytes);
        TokenBucket {
            rate_bps,
            depth,
            credit: depth,
            last: 0,
        }
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Credit held at the last update, in units of 10^-12 bit (8 x 10^12 per byte).
    pub fn credit(&self) -> u128 {
        self.credit
    }

    /// Whether the bucket holds its whole depth (as of its last update).
    pub fn is_full(&self) -> bool {
        self.credit == self.depth
    }

    /// Adds the credit earned between the last update and `now`. A time earlier than
    /// the last update earns nothing (and does not move the clock back).
    #[inline]
    pub fn refill(&mut self, now: Time) {
        if now <= self.last {
            return;
        }
        let earned = u128::from(self.rate_bps) * u128::from(now - self.last);
        self.credit = self.credit.saturating_add(earned).min(self.depth);
        self.last = now;
    }

    /// Refills to `until` at `rate_bps` instead of the bucket's own rate (a meter
    /// whose rate changes with the mode refills piece by piece).
    fn earn(&mut self, until: Time, rate_bps: u64) {
        if until <= self.last {
            return;
        }
        let earned = u128::from(rate_bps) * u128::from(until - self.last);
        self.credit = self.credit.saturating_add(earned).min(self.depth);
        self.last = until;
    }

    /// Whether the bucket, refilled to `now`, holds `bytes`, without taking them.
    #[inline]
    fn holds(&mut self, now: Time, bytes: u32) -> bool {
        self.refill(now);
        self.credit >= credit_for(u64::from(bytes))
    }

    /// Takes `bytes` from a bucket that [`holds`](Self::holds) them.
    #[inline]
    fn spend(&mut self, bytes: u32) {
        self.credit -= credit_for(u64::from(bytes));
    }

    /// Refills to `now`, then takes `bytes` if the bucket holds them: `true` means the
    /// packet conforms. A non-conforming packet takes nothing (RFC 2698: a RED packet
    /// leaves the buckets as they were), so a burst over the rate does not starve the
    /// packets after it.
    #[inline]
    pub fn take(&mut self, now: Time, bytes: u32) -> bool {
        let ok = self.holds(now, bytes);
        if ok {
            self.spend(bytes);
        }
        ok
    }
}

/// RFC 2698 two-rate three-colour meter, colour-blind: a peak bucket P and a committed
/// bucket C, both of the same burst. RED if P lacks the bytes (nothing is taken);
/// YELLOW if only C lacks them (they are taken from P alone); GREEN takes them from
/// both. switch.p4's `opti` meter (§5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrTcm {
    peak: TokenBucket,
    committed: TokenBucket,
}

impl TrTcm {
    pub fn new(peak_bps: u64, committed_bps: u64, burst_bytes: u64) -> Self {
        TrTcm {
            peak: TokenBucket::new(peak_bps, burst_bytes),
            committed: TokenBucket::new(committed_bps, burst_bytes),
        }
    }

    pub fn peak(&self) -> &TokenBucket {
        &self.peak
    }

    pub fn committed(&self) -> &TokenBucket {
        &self.committed
    }

    /// Colours one packet of `bytes` at `now` and takes its tokens accordingly.
    #[inline]
    pub fn colour(&mut self, now: Time, bytes: u32) -> Colour {
        if !self.peak.holds(now, bytes) {
            // Bring C up to `now` as well, so both buckets read as of the same instant
            // (refilling is path-independent: this changes no verdict).
            self.committed.refill(now);
            return Colour::Red;
        }
        self.peak.spend(bytes);
        if self.committed.take(now, bytes) {
            Colour::Green
        } else {
            Colour::Yellow
        }
    }
}

/// Index of each mode's meter in `HwSettings::meter_rates` and in
/// [`MeterSet::Three`]: OPTIMISTIC, HALF, PESSIMISTIC.
const OPTIMISTIC: usize = 0;
const HALF: usize = 1;
const PESSIMISTIC: usize = 2;

/// The meters one ingress pipeline keeps for one egress port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MeterSet {
    /// ndp.p4: one single-rate meter per mode, indexed OPTIMISTIC, HALF, PESSIMISTIC.
    Three([TokenBucket; 3]),
    /// switch.p4 (§5): `opti`, a two-rate meter (peak = OPTIMISTIC rate, committed =
    /// HALF rate), and `pesi`, a single rate at the PESSIMISTIC rate. The paper's
    /// `pesi` is a trTCM with PIR = CIR; with equal rates and bursts its two buckets
    /// never differ (YELLOW cannot happen), so one bucket is the same meter.
    Two { opti: TrTcm, pesi: TokenBucket },
    /// One bucket whose refill rate is the current mode's, emptied by every
    /// notification: the meter of the paper authors' simulator (htsim's public
    /// `Meter`, whose "pessimistic" response serves at a quarter of the rate for N
    /// packet times and half until 4N, starting from no credit). `rates` are the
    /// OPTIMISTIC, HALF and PESSIMISTIC rates in bit/s.
    Single {
        bucket: TokenBucket,
        rates: [u64; 3],
    },
}

/// Whether switch.p4's action table (§5; spec item 44) trims a packet of colours
/// `pesi_green` / `opti` in `mode`. TRIM_ALL trims everything.
#[inline]
pub fn two_meter_trims(mode: Mode, pesi_green: bool, opti: Colour) -> bool {
    match mode {
        Mode::TrimAll => true,
        Mode::Pessimistic => !pesi_green,
        Mode::Half => opti != Colour::Green,
        Mode::Optimistic => opti == Colour::Red,
    }
}

/// `line_rate_bps * fraction`, rounded to the nearest bit/s.
fn meter_rate(line_rate_bps: u64, fraction: f64) -> u64 {
    (line_rate_bps as f64 * fraction).round() as u64
}

impl MeterSet {
    /// The meters for an egress port of `line_rate_bps`. `rates` are the fractions of
    /// line rate the OPTIMISTIC, HALF and PESSIMISTIC meters pass
    /// (`HwSettings::meter_rates`, [1.0, 0.5, 0.25] by default, §4); every meter has
    /// the burst `burst_bytes` (spec Q4).
    pub fn new(kind: Meters, line_rate_bps: u64, rates: [f64; 3], burst_bytes: u64) -> Self {
        let rate = |i: usize| meter_rate(line_rate_bps, rates[i]);
        match kind {
            Meters::Three => MeterSet::Three([
                TokenBucket::new(rate(OPTIMISTIC), burst_bytes),
                TokenBucket::new(rate(HALF), burst_bytes),
                TokenBucket::new(rate(PESSIMISTIC), burst_bytes),
            ]),
            Meters::Two => MeterSet::Two {
                opti: TrTcm::new(rate(OPTIMISTIC), rate(HALF), burst_bytes),
                pesi: TokenBucket::new(rate(PESSIMISTIC), burst_bytes),
            },
            Meters::Single => MeterSet::Single {
                bucket: TokenBucket::new(rate(OPTIMISTIC), burst_bytes),
                rates: [rate(OPTIMISTIC), rate(HALF), rate(PESSIMISTIC)],
            },
        }
    }

    /// Meters one packet of `bytes` at `now` for a (pipeline, port) whose last
    /// notification was at `last` (`None`: never), under `rules`: what the switch
    /// model calls. The mode-picked meters ([`MeterSet::judge`]) see the mode at
    /// `now`; the single bucket refills at each mode's rate for the time spent in it.
    #[inline]
    pub fn judge_scheduled(
        &mut self,
        now: Time,
        bytes: u32,
        last: Option<Time>,
        rules: &ModeRules,
    ) -> bool {
        let mode = rules.mode(last, now);
        let MeterSet::Single { bucket, rates } = self else {
            return self.judge(now, bytes, mode);
        };
        if let (Some(n), true) = (last, rules.t0 > 0) {
            // Piece by piece through the modes since the bucket's last update
            // (the last notification emptied it, so none falls in between).
            for (end, segment) in [
                (n.saturating_add(rules.t0), rules.response()),
                (n.saturating_add(rules.t1), Mode::Half),
            ] {
                let rate = match segment {
                    Mode::Pessimistic => rates[PESSIMISTIC],
                    Mode::Half => rates[HALF],
                    _ => 0,
                };
                bucket.earn(end.min(now), rate);
            }
        }
        bucket.earn(now, rates[OPTIMISTIC]);
        let conforms = bucket.holds(now, bytes);
        if conforms {
            bucket.spend(bytes);
        }
        mode == Mode::TrimAll || !conforms
    }

    /// A notification reached this (pipeline, port) at `now`: the single bucket
    /// starts again from no credit (the others keep theirs).
    pub fn notified(&mut self, now: Time, last: Option<Time>, rules: &ModeRules) {
        if let MeterSet::Single { .. } = self {
            // Bring the bucket to `now` under the old schedule, then empty it.
            self.judge_scheduled(now, 0, last, rules);
            if let MeterSet::Single { bucket, .. } = self {
                bucket.credit = 0;
            }
        }
    }

    /// Meters one packet of `bytes` (already including any per-packet adjustment) at
    /// `now` in `mode`, and says whether ingress trims it.
    ///
    /// Every meter sees the packet whatever the mode (ndp.p4), each taking the bytes
    /// only if it holds them; the mode picks whose verdict counts. With three meters
    /// that is the mode's own bucket; with two it is the action table of §5
    /// ([`two_meter_trims`]). In TRIM_ALL every packet is trimmed, and the meters still
    /// count it, as they would on the switch.
    #[inline]
    pub fn judge(&mut self, now: Time, bytes: u32, mode: Mode) -> bool {
        match self {
            MeterSet::Three(buckets) => {
                let mut conforms = [false; 3];
                for (ok, bucket) in conforms.iter_mut().zip(buckets.iter_mut()) {
                    *ok = bucket.take(now, bytes);
                }
                match mode {
                    Mode::TrimAll => true,
                    Mode::Pessimistic => !conforms[PESSIMISTIC],
                    Mode::Half => !conforms[HALF],
                    Mode::Optimistic => !conforms[OPTIMISTIC],
                }
            }
            MeterSet::Two { opti, pesi } => {
                let opti_colour = opti.colour(now, bytes);
                let pesi_green = pesi.take(now, bytes);
                two_meter_trims(mode, pesi_green, opti_colour)
            }
            // The mode alone cannot say how the bucket refilled: metered as if the
            // whole gap had been in `mode`.
            MeterSet::Single { bucket, rates } => {
                let rate = match mode {
                    Mode::TrimAll => 0,
                    Mode::Pessimistic => rates[PESSIMISTIC],
                    Mode::Half => rates[HALF],
                    Mode::Optimistic => rates[OPTIMISTIC],
                };
                bucket.earn(now, rate);
                let conforms = bucket.holds(now, bytes);
                if conforms {
                    bucket.spend(bytes);
                }
                mode == Mode::TrimAll || !conforms
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{serialisation_time, US};

    const LINE: u64 = 100_000_000_000;
    const MTU: u32 = 1500;

    fn bytes_credit(bytes: u64) -> u128 {
        credit_for(bytes)
    }

    /// Sends `n` packets of `MTU` spaced by `gap`, returns how many were trimmed.
    fn stream(m: &mut MeterSet, mode: Mode, gap: Time, n: u64) -> u64 {
        (0..n).filter(|&i| m.judge(i * gap, MTU, mode)).count() as u64
    }

    #[test]
    fn a_line_rate_stream_is_never_trimmed_when_optimistic() {
        let gap = serialisation_time(MTU, LINE);
        for kind in [Meters::Three, Meters::Two] {
            // A burst of one packet: any lost picosecond of credit would show.
            let mut m = MeterSet::new(kind, LINE, [1.0, 0.5, 0.25], u64::from(MTU));
            assert_eq!(
                stream(&mut m, Mode::Optimistic, gap, 100_000),
                0,
                "{kind:?}"
            );
        }
    }

    #[test]
    fn a_bucket_passes_its_rate_over_the_long_run() {
        // 2x line rate into a line-rate bucket of 10 packets: after the burst,
        // every other packet passes.
        let burst = 10 * u64::from(MTU);
        let gap = serialisation_time(MTU, 2 * LINE);
        let mut b = TokenBucket::new(LINE, burst);
        let n = 10_000u64;
        let passed: Vec<bool> = (0..n).map(|i| b.take(i * gap, MTU)).collect();
        let passed_bytes = passed.iter().filter(|&&p| p).count() as u128 * u128::from(MTU);
        let duration = (n - 1) * gap;
        // Tokens are conserved: the burst plus what the rate earned, less what is left
        // (under one packet, as the stream is over the rate and never lets it clamp).
        let earned = burst as u128 + u128::from(LINE) * u128::from(duration) / bytes_credit(1);
        assert!(passed_bytes <= earned, "{passed_bytes} > {earned}");
        assert!(
            passed_bytes + u128::from(MTU) > earned,
            "{passed_bytes} vs {earned}"
        );
        // After the burst, about half the packets are trimmed.
        let late = &passed[100..];
        let frac = late.iter().filter(|&&p| !p).count() as f64 / late.len() as f64;
        assert!((frac - 0.5).abs() < 0.01, "{frac}");
    }

    #[test]
    fn a_red_packet_takes_no_tokens() {
        let mut b = TokenBucket::new(LINE, 1000);
        // Holds 1000 bytes: 1500 is RED and leaves them all ...
        assert!(!b.take(0, MTU));
        assert!(b.is_full());
        // ... so a 1000-byte packet still fits, and then nothing does.
        assert!(b.take(0, 1000));
        assert!(!b.take(0, 1));
        assert_eq!(b.credit(), 0);

        // trTCM: RED leaves both buckets as they were.
        let mut m = TrTcm::new(LINE, LINE / 2, 1000);
        assert_eq!(m.colour(0, MTU), Colour::Red);
        assert!(m.peak().is_full() && m.committed().is_full());
    }

    #[test]
    fn a_yellow_packet_takes_peak_tokens_only() {
        let mut m = TrTcm::new(LINE, LINE / 2, 2 * u64::from(MTU));
        assert_eq!(m.colour(0, MTU), Colour::Green);
        assert_eq!(m.colour(0, MTU), Colour::Green);
        // One packet time later P has earned a packet, C half of one.
        let t = serialisation_time(MTU, LINE);
        assert_eq!(m.colour(t, MTU), Colour::Yellow);
        assert_eq!(m.peak().credit(), 0);
        assert_eq!(m.committed().credit(), bytes_credit(750));
        // P is empty: 500 bytes are RED, and C, though it holds them, keeps its 750.
        assert_eq!(m.colour(t, 500), Colour::Red);
        assert_eq!(m.committed().credit(), bytes_credit(750));
        // Another packet time: both hold a packet again, so GREEN empties both.
        assert_eq!(m.colour(2 * t, MTU), Colour::Green);
        assert_eq!(m.peak().credit(), 0);
        assert_eq!(m.committed().credit(), 0);
        // Half a packet time later P holds 750 bytes: 1000 is RED and takes nothing.
        assert_eq!(m.colour(2 * t + t / 2, 1000), Colour::Red);
        assert_eq!(m.peak().credit(), bytes_credit(750));
        assert_eq!(m.committed().credit(), bytes_credit(375));
    }

    #[test]
    fn a_long_idle_gap_fills_the_bucket_without_overflow() {
        // Deep and fast: 1 GB at 1.6 Tb/s.
        let mut b = TokenBucket::new(16 * LINE, 1 << 30);
        assert!(b.take(0, 1 << 29));
        assert!(!b.is_full());
        for now in [SEC, 1000 * SEC, Time::MAX] {
            b.refill(now);
            assert!(b.is_full(), "at {now}");
            assert!(b.take(now, MTU));
        }
        // A clock that goes back earns nothing and does not panic.
        assert!(b.take(0, MTU));
        assert!(!b.is_full());
    }

    #[test]
    fn the_two_meter_action_table() {
        use Colour::*;
        // Every combination against the six rows of §5's table.
        for mode in [Mode::Pessimistic, Mode::Half, Mode::Optimistic] {
            for pesi_green in [false, true] {
                for opti in [Green, Yellow, Red] {
                    let expect = match mode {
                        // row 1 / row 4
                        Mode::Pessimistic => !pesi_green,
                        // row 2 / row 5
                        Mode::Half => matches!(opti, Yellow | Red),
                        // row 3 / row 6
                        Mode::Optimistic => opti == Red,
                        Mode::TrimAll => unreachable!(),
                    };
                    assert_eq!(
                        two_meter_trims(mode, pesi_green, opti),
                        expect,
                        "{mode:?} pesi_green={pesi_green} opti={opti:?}"
                    );
                }
                assert!(two_meter_trims(Mode::TrimAll, pesi_green, Green));
            }
        }
    }

    /// Fraction of a long line-rate stream of MTU packets that passes, burst 4 packets.
    fn passed_fraction(kind: Meters, mode: Mode) -> f64 {
        let mut m = MeterSet::new(kind, LINE, [1.0, 0.5, 0.25], 4 * u64::from(MTU));
        let n = 20_000;
        let trimmed = stream(&mut m, mode, serialisation_time(MTU, LINE), n);
        (n - trimmed) as f64 / n as f64
    }

    #[test]
    fn each_mode_passes_its_share_of_a_line_rate_stream() {
        for kind in [Meters::Three, Meters::Two] {
            for (mode, share) in [
                (Mode::Optimistic, 1.0),
                (Mode::Half, 0.5),
                (Mode::Pessimistic, 0.25),
                (Mode::TrimAll, 0.0),
            ] {
                let got = passed_fraction(kind, mode);
                assert!((got - share).abs() < 0.002, "{kind:?} {mode:?}: {got}");
            }
        }
    }

    #[test]
    fn every_meter_sees_every_packet() {
        // Trimmed in TRIM_ALL or passed by OPTIMISTIC, a packet still drains the
        // PESSIMISTIC meter, so switching to PESSIMISTIC finds it spent: of the next
        // four packets at most one passes, where a fresh meter would pass its burst of
        // four.
        let gap = serialisation_time(MTU, LINE);
        let new = |kind| MeterSet::new(kind, LINE, [1.0, 0.5, 0.25], 4 * u64::from(MTU));
        for kind in [Meters::Three, Meters::Two] {
            assert_eq!(stream(&mut new(kind), Mode::Pessimistic, gap, 4), 0);
            for first in [Mode::TrimAll, Mode::Optimistic] {
                let mut m = new(kind);
                let trimmed = stream(&mut m, first, gap, 100);
                assert_eq!(trimmed, if first == Mode::TrimAll { 100 } else { 0 });
                let later = (100..104)
                    .filter(|&i| m.judge(i * gap, MTU, Mode::Pessimistic))
                    .count();
                assert!(later >= 3, "{kind:?} after {first:?}: {later} trimmed");
            }
        }
    }

    #[test]
    fn meter_rates_are_fractions_of_line_rate() {
        let m = MeterSet::new(Meters::Three, 25_000_000_000, [1.0, 0.5, 1.0 / 3.0], 9000);
        let MeterSet::Three(b) = &m else { panic!() };
        let rates: Vec<u64> = b.iter().map(TokenBucket::rate_bps).collect();
        assert_eq!(rates, [25_000_000_000, 12_500_000_000, 8_333_333_333]);
        let m = MeterSet::new(Meters::Two, 400_000_000_000, [1.0, 0.5, 0.25], 9000);
        let MeterSet::Two { opti, pesi } = &m else {
            panic!()
        };
        assert_eq!(opti.peak().rate_bps(), 400_000_000_000);
        assert_eq!(opti.committed().rate_bps(), 200_000_000_000);
        assert_eq!(pesi.rate_bps(), 100_000_000_000);
    }

    #[test]
    fn the_single_bucket_starts_empty_after_a_notification_and_refills_at_each_modes_rate() {
        use crate::net::trimming_hw::Modes;
        let rules = ModeRules {
            modes: Modes::PessHalfOpt,
            t0: 6 * US,
            t1: 24 * US,
        };
        let gap = serialisation_time(MTU, LINE);
        let mut m = MeterSet::new(Meters::Single, LINE, [1.0, 0.5, 0.25], 9 * u64::from(MTU));
        // Full before any notification: a line-rate stream passes.
        let passed = |m: &mut MeterSet, from: u64, to: u64, last| {
            (from..to)
                .filter(|&i| !m.judge_scheduled(i * gap, MTU, last, &rules))
                .count() as u64
        };
        assert_eq!(passed(&mut m, 0, 100, None), 100);
        // A notification at packet 100 empties it: the next packet is trimmed, and
        // over the 6 us of PESSIMISTIC (50 packet times) a quarter passes.
        let n = 100 * gap;
        m.notified(n, None, &rules);
        assert!(m.judge_scheduled(n, MTU, Some(n), &rules), "no credit left");
        let pess = passed(&mut m, 101, 150, Some(n));
        assert!((11..=13).contains(&pess), "{pess} of 49 passed at 25%");
        // HALF from 6 us to 24 us (150 packet times): half of them.
        let half = passed(&mut m, 150, 300, Some(n));
        assert!((74..=76).contains(&half), "{half} of 150 passed at 50%");
        // Then OPTIMISTIC: the bucket refills at line rate and, never deeper than
        // its burst, passes every packet of a line-rate stream.
        assert_eq!(passed(&mut m, 320, 400, Some(n)), 80);
        // A gap spanning every mode earns each mode's rate for its part only: idle
        // from the notification to its end of HALF, the bucket holds 6 us at 25% and
        // 18 us at 50%, more than its 9 packets.
        let mut m = MeterSet::new(Meters::Single, LINE, [1.0, 0.5, 0.25], 9 * u64::from(MTU));
        m.notified(0, None, &rules);
        assert_eq!(passed(&mut m, 200, 209, Some(0)), 9);
    }
}
