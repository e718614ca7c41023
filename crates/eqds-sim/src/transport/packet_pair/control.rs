//! The packet-pair rate controller: the bandwidth estimate, the DCTCP-like α, the
//! sending rate they give and the in-flight cap (AFQ paper §5; digest §1.7). No I/O:
//! the sender feeds it what its ACKs say and asks it how fast and how much.

use super::PacketPairConfig;
use crate::units::{Time, SEC};

/// What the sender does about a change of its rate: the bytes it would have sent
/// differently over one base round trip had it known the new rate a round trip
/// earlier, `(new − old) × base RTT` (§5: "skipped, proportional to the rate
/// decrease"; "injected immediately, proportional to the rate increase"). Positive:
/// send that much at once, beside the pairs; negative: hold the next pair back for as
/// long as the new rate takes to send it.
pub type Adjust = f64;

/// The controller's state.
#[derive(Clone, Debug)]
pub struct RateControl {
    cfg: PacketPairConfig,
    /// The sender's link rate, bits/s: no sample or rate exceeds it.
    line_bps: f64,
    /// EWMA of the pairs' bandwidth samples, bits/s on the wire; 0 before the first.
    estimate_bps: f64,
    /// When the last sample came in (the EWMA weighs a sample by the time it covers).
    last_sample: Time,
    /// Smallest round trip seen; `Time::MAX` before the first.
    base_rtt: Time,
    /// DCTCP's α: the EWMA of the fraction of payload bytes that arrived marked.
    alpha: f64,
    /// Payload bytes the current α window's ACKs reported arriving.
    window_bytes: u64,
    /// Of those, bytes that arrived CE-marked.
    window_marked: u64,
    /// The α window ends when the cumulative ACK passes this byte.
    window_end: u64,
    /// The rate the sender paces at, bits/s; 0 before the first estimate.
    rate_bps: f64,
}

impl RateControl {
    pub fn new(cfg: PacketPairConfig, line_bps: u64) -> Self {
        RateControl {
            cfg,
            line_bps: line_bps as f64,
            estimate_bps: 0.0,
            last_sample: 0,
            base_rtt: Time::MAX,
            alpha: 0.0,
            window_bytes: 0,
            window_marked: 0,
            window_end: 0,
            rate_bps: 0.0,
        }
    }

    /// The pacing rate, bits/s, once a pair has been measured.
    pub fn rate_bps(&self) -> Option<f64> {
        (self.rate_bps > 0.0).then_some(self.rate_bps)
    }

    /// The bandwidth estimate, bits/s, once a pair has been measured.
    pub fn estimate_bps(&self) -> Option<f64> {
        (self.estimate_bps > 0.0).then_some(self.estimate_bps)
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Smallest round trip seen, if any.
    pub fn base_rtt(&self) -> Option<Time> {
        (self.base_rtt != Time::MAX).then_some(self.base_rtt)
    }

    /// A round-trip sample (any ACK's echoed send time).
    pub fn on_rtt(&mut self, rtt: Time) {
        self.base_rtt = self.base_rtt.min(rtt.max(1));
    }

    /// A pair's second packet, `bytes` long on the wire, arrived `gap` after its
    /// first (§5, "records the packet-pair arrival gap at the receiver"): the sample
    /// `bytes / gap` goes into the EWMA, and the rate follows.
    pub fn on_pair_gap(&mut self, now: Time, bytes: u32, gap: Time) -> Adjust {
        if gap == 0 {
            return 0.0;
        }
        let sample = (f64::from(bytes) * 8.0 * SEC as f64 / gap as f64).min(self.line_bps);
        if self.estimate_bps == 0.0 {
            self.estimate_bps = sample;
        } else {
            // "A running EWMA of bandwidth estimates in the last RTT": each sample
            // weighs as much as the share of the time constant (ewma_rtts base round
            // trips) since the previous one, so the average spans about that long
            // whether pairs come often or seldom.
            let tau = self.cfg.ewma_rtts * self.base_rtt().unwrap_or(1) as f64;
            let dt = now.saturating_sub(self.last_sample) as f64;
            let w = 1.0 - (-dt / tau.max(1.0)).exp();
            self.estimate_bps += w * (sample - self.estimate_bps);
        }
        self.last_sample = now;
        self.retarget()
    }

    /// A new cumulative ACK or a duplicate: `payload` bytes arrived, `marked` of them
    /// CE-marked; `snd_una` and `snd_nxt` are the sender's after it. α is updated
    /// once per round trip, as DCTCP's (RFC 8257 §3.3), and the rate follows.
    pub fn on_ack(&mut self, payload: u64, marked: u64, snd_una: u64, snd_nxt: u64) -> Adjust {
        if !self.cfg.ecn {
            return 0.0;
        }
        self.window_bytes += payload;
        self.window_marked += marked.min(payload);
        if snd_una < self.window_end || self.window_bytes == 0 {
            return 0.0;
        }
        let fraction = self.window_marked as f64 / self.window_bytes as f64;
        self.alpha += self.cfg.alpha_gain * (fraction - self.alpha);
        self.window_bytes = 0;
        self.window_marked = 0;
        self.window_end = snd_nxt;
        self.retarget()
    }

    /// Sets the rate to estimate × (1 − α/2) (§5, "Per-flow ECN marking") and says
    /// how far the change should be made up for.
    fn retarget(&mut self) -> Adjust {
        if self.estimate_bps == 0.0 {
            return 0.0;
        }
        let old = self.rate_bps;
        let new = self.estimate_bps * (1.0 - self.alpha / 2.0);
        self.rate_bps = new;
        if old == 0.0 || !self.cfg.skip_inject {
            return 0.0;
        }
        let rtt = self.base_rtt().unwrap_or(0) as f64 / SEC as f64;
        (new - old) * rtt / 8.0
    }

    /// The in-flight cap, wire bytes: `inflight_bdp` × estimate × base RTT (§5,
    /// "Bounding burstiness"), never below `floor`.
    pub fn cap_bytes(&self, floor: u64) -> u64 {
        let (Some(bps), Some(rtt)) = (self.estimate_bps(), self.base_rtt()) else {
            return floor;
        };
        let bdp = bps * rtt as f64 / SEC as f64 / 8.0;
        ((self.cfg.inflight_bdp * bdp) as u64).max(floor)
    }

    /// Forgets the bandwidth estimate and the rate (after a retransmission timeout
    /// the flow starts again with a pair); α and the base round trip stay.
    pub fn restart(&mut self) {
        self.estimate_bps = 0.0;
        self.rate_bps = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::US;

    const GBPS: f64 = 1e9;

    fn ctl() -> RateControl {
        let mut c = RateControl::new(PacketPairConfig::default(), 10_000_000_000);
        c.on_rtt(10 * US);
        c
    }

    /// The gap of a `bytes` packet at `bps`.
    fn gap(bytes: u32, bps: f64) -> Time {
        (f64::from(bytes) * 8.0 * SEC as f64 / bps).round() as Time
    }

    #[test]
    fn the_first_pair_sets_the_rate_and_nothing_is_made_up() {
        let mut c = ctl();
        assert_eq!(c.rate_bps(), None);
        let adj = c.on_pair_gap(20 * US, 1500, gap(1500, 2.5 * GBPS));
        assert_eq!(adj, 0.0);
        let r = c.rate_bps().unwrap();
        assert!((r - 2.5 * GBPS).abs() < 1e3, "{r}");
    }

    #[test]
    fn samples_above_the_line_rate_are_clamped() {
        let mut c = ctl();
        c.on_pair_gap(1, 1500, 1);
        assert_eq!(c.rate_bps(), Some(10.0 * GBPS));
    }

    #[test]
    fn the_ewma_spans_about_one_base_round_trip() {
        let mut c = ctl();
        c.on_pair_gap(0, 1500, gap(1500, 10.0 * GBPS));
        // One sample a base RTT later moves the estimate 1 - 1/e of the way.
        c.on_pair_gap(10 * US, 1500, gap(1500, 5.0 * GBPS));
        let e = c.estimate_bps().unwrap();
        let want = 10.0 - 5.0 * (1.0 - (-1.0f64).exp());
        assert!((e / GBPS - want).abs() < 1e-3, "{e}");
        // Samples a tenth of a round trip apart move it much less each.
        let before = c.estimate_bps().unwrap();
        c.on_pair_gap(11 * US, 1500, gap(1500, 5.0 * GBPS));
        let step = before - c.estimate_bps().unwrap();
        assert!(step > 0.0 && step < 0.1 * (before - 5.0 * GBPS), "{step}");
    }

    #[test]
    fn a_lower_estimate_skips_and_a_higher_one_injects_one_rtt_of_the_change() {
        let mut c = ctl();
        c.on_pair_gap(0, 1500, gap(1500, 8.0 * GBPS));
        // A long wait: the new sample is the whole estimate.
        let adj = c.on_pair_gap(SEC, 1500, gap(1500, 4.0 * GBPS));
        // (4 - 8) Gbps over 10 us is -5000 bytes: skip them.
        assert!((adj + 5000.0).abs() < 1.0, "{adj}");
        let adj = c.on_pair_gap(2 * SEC, 1500, gap(1500, 6.0 * GBPS));
        assert!((adj - 2500.0).abs() < 1.0, "{adj}");
        let mut off = RateControl::new(
            PacketPairConfig {
                skip_inject: false,
                ..PacketPairConfig::default()
            },
            10_000_000_000,
        );
        off.on_rtt(10 * US);
        off.on_pair_gap(0, 1500, gap(1500, 8.0 * GBPS));
        assert_eq!(off.on_pair_gap(SEC, 1500, gap(1500, 4.0 * GBPS)), 0.0);
    }

    #[test]
    fn marks_lower_the_rate_by_half_alpha_once_per_round_trip() {
        let mut c = ctl();
        c.on_pair_gap(0, 1500, gap(1500, 8.0 * GBPS));
        // Window 1 ends at byte 0: the first ACK closes it, all marked.
        let adj = c.on_ack(1000, 1000, 1000, 5000);
        assert!((c.alpha() - 1.0 / 16.0).abs() < 1e-12);
        let want = 8.0 * GBPS * (1.0 - 1.0 / 32.0);
        assert!((c.rate_bps().unwrap() - want).abs() < 1.0);
        assert!(adj < 0.0, "a cut skips: {adj}");
        // Within the window (snd_una below 5000) alpha stays.
        assert_eq!(c.on_ack(1000, 1000, 2000, 6000), 0.0);
        assert!((c.alpha() - 1.0 / 16.0).abs() < 1e-12);
        // The window closes with 1 of its 2 KB marked.
        c.on_ack(1000, 0, 5000, 9000);
        let a = 1.0 / 16.0 + (1.0 / 2.0 - 1.0 / 16.0) / 16.0;
        assert!((c.alpha() - a).abs() < 1e-12, "{}", c.alpha());
        // Without ECN marks count for nothing.
        let mut off = RateControl::new(
            PacketPairConfig {
                ecn: false,
                ..PacketPairConfig::default()
            },
            10_000_000_000,
        );
        off.on_pair_gap(0, 1500, gap(1500, 8.0 * GBPS));
        off.on_ack(1000, 1000, 1000, 5000);
        assert_eq!(off.alpha(), 0.0);
    }

    #[test]
    fn the_cap_is_one_and_a_half_bdps_of_the_estimate() {
        let mut c = ctl();
        assert_eq!(c.cap_bytes(3000), 3000);
        c.on_pair_gap(0, 1500, gap(1500, 8.0 * GBPS));
        // 8 Gbps x 10 us = 10 KB; x 1.5.
        let cap = c.cap_bytes(3000);
        assert!((14_999..=15_001).contains(&cap), "{cap}");
        c.restart();
        assert_eq!(c.rate_bps(), None);
        assert_eq!(c.cap_bytes(3000), 3000);
    }
}
