//! BBR, version 1 (Cardwell et al., ACM Queue 2016), as Linux's `tcp_bbr.c` runs it: a
//! model-based controller that paces at its estimate of the bottleneck bandwidth
//! and keeps about two of its estimated BDPs in flight, whatever the losses.
//!
//! The model is two windowed filters over the delivery-rate samples of every ACK
//! (`tcp/rate.rs`): the bottleneck bandwidth, the largest sample of the last ten
//! round trips (samples taken while the sender had nothing to send count only if
//! they raise it), and the round-trip propagation time, the smallest RTT of the last
//! ten seconds. Four states use it:
//! - **Startup**: pacing and window gain 2/ln 2 (2.885), doubling the rate every
//!   round trip until three rounds in a row fail to raise the bandwidth by 25%;
//! - **Drain**: pacing gain 1/2.885 until what is in flight is down to one BDP;
//! - **ProbeBW**: the steady state, cycling the pacing gain through 1.25, 0.75 and
//!   six rounds of 1, each phase one propagation time long (the 1.25 phase until a
//!   BDP and a quarter is in flight or a loss, the 0.75 phase ending early once one
//!   BDP is; Linux adds its burst allowance to both thresholds, see `update_cycle`),
//!   from a phase other than 0.75 drawn at entry from the flow's seed; window gain 2;
//! - **ProbeRTT**: when no smaller propagation time has been seen for ten seconds,
//!   at most 4 segments in flight for 200 ms and one round trip; its samples may
//!   only raise the bandwidth estimate, and the window comes back when it ends.
//!
//! The window is `cwnd_gain` BDPs plus Linux's allowance for segmentation offload:
//! three send bursts of 1/1024 s of the pacing rate each, at most 64 KB, at least 2
//! segments (at 10 Gb/s and more, 135 segments of 1,448 bytes, which in a
//! datacenter is far more than the BDP: there BBR is limited by its pacing, not its
//! window), and 2 segments more in the 1.25 phase. It grows towards that by what
//! each ACK delivers, never below 4 segments. Loss recovery starts a round: for that
//! round the window only keeps what is in the network plus what each ACK delivers
//! (packet conservation), then grows as usual; when recovery ends the window before
//! the loss comes back. A timeout collapses the window to one segment, restored the
//! same way when its recovery ends. Not modelled: Linux also takes the packets each
//! ACK newly marks lost off the window during recovery. ECN is ignored, as BBRv1 does.
//!
//! Until the first RTT sample the sender does not pace: Linux paces from the SYN's
//! RTT, which over a datacenter path is a rate above the link's.

use super::{AckEvent, CongestionControl, LossEvent};
use crate::net::switch::mix32;
use crate::units::{Time, MS, SEC};
use std::collections::VecDeque;

/// Startup's pacing and window gain, 2/ln 2.
const HIGH_GAIN: f64 = 2.885;
/// Drain's pacing gain, the inverse of Startup's.
const DRAIN_GAIN: f64 = 1.0 / HIGH_GAIN;
/// ProbeBW's window gain.
const CWND_GAIN: f64 = 2.0;
/// ProbeBW's pacing gains, one phase each.
const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Round trips the bandwidth filter spans (Linux: the cycle plus two).
const BW_ROUNDS: u64 = 10;
/// How long a propagation-time sample stays valid.
const MIN_RTT_WINDOW: Time = 10 * SEC;
/// Time spent in ProbeRTT once its window is reached.
const PROBE_RTT_TIME: Time = 200 * MS;
/// The bandwidth counts as still growing if a round raises it by this much.
const FULL_BW_GROWTH: f64 = 1.25;
/// Rounds without such growth that end Startup.
const FULL_BW_ROUNDS: u32 = 3;
/// Smallest window, in segments.
const MIN_CWND_SEGMENTS: u64 = 4;
/// Linux sizes a send burst (a TSO/GSO super-packet) at the bytes of 1/1024 s of the
/// pacing rate, at most 64 KB less headers, and adds three bursts to the target
/// window (`bbr_quantization_budget`).
const BURST_SHIFT: u32 = 10;
const MAX_BURST_BYTES: u64 = 65_536 - 1 - 320;
const MIN_BURST_SEGMENTS: u64 = 2;
const MAX_BURST_SEGMENTS: u64 = 127;
const BURSTS_IN_BUDGET: u64 = 3;
/// Pacing runs this fraction below the estimate (Linux: 1%), so queues drain.
const PACING_MARGIN: f64 = 0.01;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

#[derive(Clone, Debug)]
pub struct Bbr {
    mss: u64,
    initial_window: u64,
    mode: BbrMode,
    /// (round, bandwidth in bit/s), decreasing bandwidth front to back: the front is
    /// the filter's maximum.
    bw_filter: VecDeque<(u64, u64)>,
    /// Propagation-time estimate (`Time::MAX`: none yet) and when it was taken.
    min_rtt: Time,
    min_rtt_stamp: Time,
    /// Rounds counted by delivery: a round ends when a segment sent after its start
    /// is delivered.
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    /// Startup's plateau detection.
    full_bw: u64,
    full_bw_rounds: u32,
    full_bw_reached: bool,
    cycle_index: usize,
    cycle_stamp: Time,
    pacing_gain: f64,
    cwnd_gain: f64,
    cwnd: u64,
    /// Window before loss recovery (0: not in recovery), restored when it ends.
    prior_cwnd: u64,
    /// The sender's delivered count at the latest rate sample.
    delivered: u64,
    /// Packet conservation (the first round of loss recovery).
    conserving: bool,
    /// ProbeRTT ends at this time (once in flight is down to the minimum).
    probe_rtt_done: Option<Time>,
    /// Window when ProbeRTT began, restored when it ends.
    probe_rtt_prior: u64,
    /// A loss since the gain phase began: the 1.25 phase ends at its full length
    /// (Linux: `rs->losses`).
    lost_in_phase: bool,
    probe_rtt_round: u64,
    pacing_bps: Option<u64>,
    /// The latest draw of the flow's random sequence for ProbeBW's first phase.
    phase_draw: u32,
}

impl Bbr {
    /// `seed` starts the flow's random sequence (ProbeBW's first phase): give each
    /// flow its own, from the run's generator, for runs that are both reproducible
    /// and not in lockstep.
    pub fn new(initial_window: u64, mss: u64, seed: u32) -> Self {
        Bbr {
            mss,
            initial_window,
            mode: BbrMode::Startup,
            bw_filter: VecDeque::new(),
            min_rtt: Time::MAX,
            min_rtt_stamp: 0,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            full_bw: 0,
            full_bw_rounds: 0,
            full_bw_reached: false,
            cycle_index: 0,
            cycle_stamp: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            cwnd: initial_window,
            prior_cwnd: 0,
            delivered: 0,
            conserving: false,
            probe_rtt_done: None,
            probe_rtt_prior: 0,
            lost_in_phase: false,
            probe_rtt_round: 0,
            pacing_bps: None,
            phase_draw: seed,
        }
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    /// Bottleneck bandwidth estimate in bit/s (0 before a sample).
    pub fn bandwidth(&self) -> u64 {
        self.bw_filter.front().map_or(0, |&(_, bw)| bw)
    }

    /// Bytes `gain` BDPs of the model hold; the initial window before it has both
    /// estimates.
    fn bdp(&self, gain: f64) -> u64 {
        let bw = self.bandwidth();
        if bw == 0 || self.min_rtt == Time::MAX {
            return self.initial_window;
        }
        let bytes = u128::from(bw) * u128::from(self.min_rtt) / (8 * u128::from(SEC));
        (bytes as f64 * gain) as u64
    }

    fn update_bandwidth(&mut self, ack: &AckEvent) {
        self.round_start = false;
        let Some(rs) = ack.rate else { return };
        self.delivered = self.delivered.max(rs.delivered);
        if rs.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = rs.delivered;
            self.round_count += 1;
            self.round_start = true;
            self.conserving = false;
        }
        let bw = rs.delivery_rate_bps;
        // Samples of a sender with too little to send, or held to four segments in
        // ProbeRTT (Linux marks those app-limited), may only raise the estimate. The
        // filter ages only when it takes a sample, as Linux's minmax does: a long
        // ProbeRTT does not empty it.
        let limited = rs.app_limited || self.mode == BbrMode::ProbeRtt;
        if limited && bw < self.bandwidth() {
            return;
        }
        let round = self.round_count;
        while self
            .bw_filter
            .front()
            .is_some_and(|&(r, _)| r + BW_ROUNDS <= round)
        {
            self.bw_filter.pop_front();
        }
        while self.bw_filter.back().is_some_and(|&(_, b)| b <= bw) {
            self.bw_filter.pop_back();
        }
        self.bw_filter.push_back((round, bw));
    }

    fn check_full_bandwidth(&mut self, ack: &AckEvent) {
        let app_limited = ack.rate.is_some_and(|r| r.app_limited);
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        let bw = self.bandwidth();
        if bw as f64 >= self.full_bw as f64 * FULL_BW_GROWTH {
            self.full_bw = bw;
            self.full_bw_rounds = 0;
            return;
        }
        self.full_bw_rounds += 1;
        self.full_bw_reached = self.full_bw_rounds >= FULL_BW_ROUNDS;
    }

    fn enter_probe_bw(&mut self, now: Time) {
        self.mode = BbrMode::ProbeBw;
        // Any phase but the 0.75 one, at random as Linux picks it, from the flow's own
        // sequence: flows that enter together do not probe in step.
        self.phase_draw = mix32(self.phase_draw.wrapping_add(0x9e37_79b9));
        let offset = self.phase_draw % 7;
        self.cycle_index = (2 + offset as usize) % CYCLE.len();
        self.cycle_stamp = now;
    }

    fn update_cycle(&mut self, ack: &AckEvent) {
        if self.mode != BbrMode::ProbeBw {
            return;
        }
        let gain = CYCLE[self.cycle_index];
        let full_length = ack.now.saturating_sub(self.cycle_stamp) > self.min_rtt;
        // Linux compares with `bbr_inflight`, the BDP at the gain plus the burst
        // allowance; at datacenter rates that allowance (about 135 segments) dwarfs
        // the BDP, so Linux's 1.25 phase runs until a loss and its 0.75 phase ends
        // at once, keeping about the allowance queued. We compare with the BDP alone
        // [choice]: the gain cycle then probes and drains as BBR's design intends.
        let next = if gain > 1.0 {
            full_length && (self.lost_in_phase || ack.in_flight >= self.bdp(gain))
        } else if gain < 1.0 {
            full_length || ack.in_flight <= self.bdp(1.0)
        } else {
            full_length
        };
        if next {
            self.cycle_index = (self.cycle_index + 1) % CYCLE.len();
            self.cycle_stamp = ack.now;
            self.lost_in_phase = false;
        }
    }

    fn update_min_rtt(&mut self, ack: &AckEvent) {
        let now = ack.now;
        // The echoed send time first: a rate sample's RTT runs from the segment's
        // latest transmission, which for a resent segment may be after the original
        // that was delivered.
        let sample = ack.rtt.or(ack.rate.map(|r| r.rtt));
        let expired = self.min_rtt != Time::MAX && now > self.min_rtt_stamp + MIN_RTT_WINDOW;
        if let Some(rtt) = sample {
            // Strictly smaller (Linux's test): an equal sample does not refresh the
            // estimate's age, or a path with a constant RTT would never probe it.
            if rtt < self.min_rtt || expired {
                self.min_rtt = rtt;
                self.min_rtt_stamp = now;
            }
        }
        if expired && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt;
            self.probe_rtt_prior = self.cwnd.max(self.prior_cwnd);
            self.probe_rtt_done = None;
        }
        if self.mode != BbrMode::ProbeRtt {
            return;
        }
        match self.probe_rtt_done {
            None if ack.in_flight <= MIN_CWND_SEGMENTS * self.mss => {
                self.probe_rtt_done = Some(now + PROBE_RTT_TIME);
                self.probe_rtt_round = self.round_count + 1;
            }
            Some(done) if now >= done && self.round_count >= self.probe_rtt_round => {
                self.min_rtt_stamp = now;
                self.cwnd = self.cwnd.max(self.probe_rtt_prior);
                self.probe_rtt_prior = 0;
                if self.full_bw_reached {
                    self.enter_probe_bw(now);
                } else {
                    self.mode = BbrMode::Startup;
                }
            }
            _ => {}
        }
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (HIGH_GAIN, HIGH_GAIN),
            BbrMode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            BbrMode::ProbeBw => (CYCLE[self.cycle_index], CWND_GAIN),
            BbrMode::ProbeRtt => (1.0, 1.0),
        };
    }

    fn update_pacing(&mut self) {
        let bw = self.bandwidth();
        if bw == 0 {
            return;
        }
        let rate = (bw as f64 * self.pacing_gain * (1.0 - PACING_MARGIN)) as u64;
        // In Startup the rate only rises: an early small sample must not slow it.
        if self.full_bw_reached || self.pacing_bps.is_none_or(|r| rate > r) {
            self.pacing_bps = Some(rate.max(1));
        }
    }

    /// What Linux adds to the model's window for send bursts (see the module notes).
    fn quantization_budget(&self) -> u64 {
        let rate_bytes = self.pacing_bps.unwrap_or(0) / 8;
        let burst = (rate_bytes >> BURST_SHIFT).min(MAX_BURST_BYTES) / self.mss;
        let segments = burst.clamp(MIN_BURST_SEGMENTS, MAX_BURST_SEGMENTS);
        let probing = self.mode == BbrMode::ProbeBw && self.cycle_index == 0;
        (BURSTS_IN_BUDGET * segments + if probing { 2 } else { 0 }) * self.mss
    }

    fn save_cwnd(&mut self) {
        self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
    }

    fn set_cwnd(&mut self, ack: &AckEvent) {
        let floor = MIN_CWND_SEGMENTS * self.mss;
        if self.conserving {
            self.cwnd = self.cwnd.max(ack.in_flight + ack.delivered);
        } else {
            let target = self.bdp(self.cwnd_gain) + self.quantization_budget();
            let delivered = ack.rate.map_or(u64::MAX, |r| r.delivered);
            if self.full_bw_reached {
                self.cwnd = (self.cwnd + ack.delivered).min(target);
            } else if self.cwnd < target || delivered < self.initial_window {
                self.cwnd += ack.delivered;
            }
        }
        self.cwnd = self.cwnd.max(floor);
        if self.mode == BbrMode::ProbeRtt {
            self.cwnd = self.cwnd.min(floor);
        }
    }
}

impl CongestionControl for Bbr {
    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        u64::MAX
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        self.update_bandwidth(ack);
        self.update_cycle(ack);
        self.check_full_bandwidth(ack);
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
        }
        if self.mode == BbrMode::Drain && ack.in_flight <= self.bdp(1.0) {
            self.enter_probe_bw(ack.now);
        }
        self.update_min_rtt(ack);
        self.update_gains();
        self.update_pacing();
        self.set_cwnd(ack);
    }

    fn on_loss(&mut self, loss: &LossEvent) {
        self.lost_in_phase = true;
        self.save_cwnd();
        // Recovery starts a round (Linux: `next_rtt_delivered = delivered`), and
        // conservation lasts until it ends.
        self.next_round_delivered = self.delivered;
        self.conserving = true;
        self.cwnd = (loss.pipe + loss.delivered).max(MIN_CWND_SEGMENTS * loss.mss);
    }

    fn on_timeout(&mut self, loss: &LossEvent) {
        self.save_cwnd();
        self.conserving = false;
        self.cwnd = loss.mss;
        // The plateau test starts over: rounds of a timeout are not the path's.
        self.full_bw = 0;
        self.full_bw_rounds = 0;
    }

    fn on_recovery_end(&mut self, _now: Time) {
        self.conserving = false;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.prior_cwnd = 0;
    }

    fn sees_every_ack(&self) -> bool {
        true
    }

    fn pacing_rate(&self) -> Option<u64> {
        self.pacing_bps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::RateSample;
    use crate::units::US;

    const MSS: u64 = 1000;

    /// Feeds `rounds` round trips of 10 ACKs each, delivering at `bw` bit/s with a
    /// round trip of `rtt`, `in_flight` bytes out after each ACK. Returns the time
    /// reached.
    fn feed(b: &mut Bbr, mut now: Time, rounds: u64, bw: u64, rtt: Time, in_flight: u64) -> Time {
        for _ in 0..rounds {
            for i in 0..10 {
                now += rtt / 10;
                // The round's first ACK delivers a segment sent after it began (its
                // prior delivered count reaches the round's mark); the rest were
                // sent before.
                let mark = b.next_round_delivered;
                let (prior, delivered) = if i == 0 {
                    (mark, mark + 10 * MSS)
                } else {
                    (mark - 1, mark + i * MSS)
                };
                ack(b, now, (prior, delivered), bw, rtt, in_flight);
            }
        }
        now
    }

    /// One ACK of one segment that was sent when `prior` bytes had been delivered and
    /// brings the count to `delivered`.
    fn ack(
        b: &mut Bbr,
        now: Time,
        (prior, delivered): (u64, u64),
        bw: u64,
        rtt: Time,
        in_flight: u64,
    ) {
        b.on_ack(&AckEvent {
            now,
            acked: MSS,
            delivered: MSS,
            ce: 0,
            rtt: Some(rtt),
            snd_una: delivered,
            snd_nxt: delivered + in_flight,
            mss: MSS,
            rate: Some(RateSample {
                delivery_rate_bps: bw,
                prior_delivered: prior,
                delivered,
                rtt,
                app_limited: false,
            }),
            in_flight,
        });
    }

    #[test]
    fn startup_ends_when_the_bandwidth_stops_growing_and_drain_gives_way_to_probe_bw() {
        let mut b = Bbr::new(10 * MSS, MSS, 1);
        let mut now = 0;
        for bw in [1e9, 2e9, 4e9, 8e9] {
            now = feed(&mut b, now, 1, bw as u64, 10 * US, 20 * MSS);
            assert_eq!(b.mode(), BbrMode::Startup);
        }
        // Three rounds at the same rate: the pipe is full.
        now = feed(&mut b, now, 3, 8e9 as u64, 10 * US, 40 * MSS);
        assert_eq!(b.mode(), BbrMode::Drain);
        assert!(
            b.pacing_rate().unwrap() < 4e9 as u64,
            "drain paces below the estimate"
        );
        // BDP at 8 Gb/s and 10 us: 10,000 bytes. Once in flight is down to it, ProbeBW.
        feed(&mut b, now, 1, 8e9 as u64, 10 * US, 10 * MSS);
        assert_eq!(b.mode(), BbrMode::ProbeBw);
        assert_eq!(b.bandwidth(), 8e9 as u64);
        // The window: two BDPs and Linux's allowance of three bursts of 1/1024 s of
        // the pacing rate (64 KB at most each).
        let budget = b.quantization_budget();
        let probing = if b.cycle_index == 0 { 2 } else { 0 };
        assert_eq!(
            budget,
            (3 * (65_215 / MSS) + probing) * MSS,
            "at 8 Gb/s a burst is the 64 KB cap"
        );
        assert!(b.window() <= 2 * 10 * MSS + budget, "{}", b.window());
    }

    #[test]
    fn flows_entering_probe_bw_together_start_in_their_own_phases() {
        let entry_phase = |seed| {
            let mut b = Bbr::new(10 * MSS, MSS, seed);
            b.enter_probe_bw(5 * US);
            b.cycle_index
        };
        let phases: Vec<usize> = (0..32).map(entry_phase).collect();
        // Never the 0.75 phase, which would drain a queue that is not there yet.
        assert!(phases.iter().all(|&p| p != 1), "{phases:?}");
        let mut seen = phases.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 7, "every other phase in 32 flows: {phases:?}");
        // The same flow (seed) enters the same way: runs are reproducible.
        assert_eq!(phases, (0..32).map(entry_phase).collect::<Vec<_>>());
    }

    #[test]
    fn the_bandwidth_estimate_forgets_a_peak_after_ten_rounds() {
        let mut b = Bbr::new(10 * MSS, MSS, 1);
        let mut now = feed(&mut b, 0, 1, 9e9 as u64, 10 * US, 20 * MSS);
        now = feed(&mut b, now, 9, 5e9 as u64, 10 * US, 20 * MSS);
        assert_eq!(b.bandwidth(), 9e9 as u64, "within ten rounds");
        feed(&mut b, now, 1, 5e9 as u64, 10 * US, 20 * MSS);
        assert_eq!(b.bandwidth(), 5e9 as u64, "the peak aged out");
    }

    #[test]
    fn probe_bw_cycles_its_pacing_gain_once_per_propagation_time() {
        let mut b = Bbr::new(10 * MSS, MSS, 1);
        let mut now = feed(&mut b, 0, 8, 8e9 as u64, 10 * US, 10 * MSS);
        assert_eq!(b.mode(), BbrMode::ProbeBw);
        let mut gains = Vec::new();
        for _ in 0..16 {
            // Enough in flight for the 1.25 phase to end on time.
            now = feed(&mut b, now, 1, 8e9 as u64, 10 * US, 13 * MSS);
            gains.push(b.pacing_gain);
        }
        assert!(gains.contains(&1.25) && gains.contains(&0.75), "{gains:?}");
        let high = gains.iter().position(|&g| g == 1.25).unwrap();
        assert_eq!(gains.get(high + 1), Some(&0.75), "{gains:?}");
    }

    #[test]
    fn a_constant_round_trip_still_gets_probed_every_ten_seconds() {
        // Equal samples do not refresh the estimate's age (Linux's strict test).
        let mut b = Bbr::new(10 * MSS, MSS, 1);
        let mut now = feed(&mut b, 0, 8, 8e9 as u64, 10 * US, 10 * MSS);
        let mut probed = false;
        for _ in 0..12 {
            now = feed(&mut b, now + SEC, 1, 8e9 as u64, 10 * US, 10 * MSS);
            probed |= b.mode() == BbrMode::ProbeRtt;
        }
        assert!(probed, "no ProbeRTT in 12 s at a constant 10 us");
    }

    #[test]
    fn recovery_conserves_for_its_first_round_and_restores_the_window_when_it_ends() {
        let (bw, rtt) = (8e9 as u64, 10 * US);
        let mut b = Bbr::new(10 * MSS, MSS, 1);
        let now = feed(&mut b, 0, 8, bw, rtt, 10 * MSS);
        let before = b.window();
        // 12 segments out, 4 SACKed or lost, and the ACK that found the loss
        // delivered one: the window keeps what is in the network and that one.
        let (flight, pipe) = (12 * MSS, 8 * MSS);
        let loss = LossEvent {
            now,
            flight,
            pipe,
            delivered: MSS,
            mss: MSS,
        };
        b.on_loss(&loss);
        assert_eq!(b.window(), 9 * MSS);
        // The round started with the recovery: ACKs of segments sent before it keep
        // the window at what is in flight plus what they deliver, however many come.
        let mark = b.next_round_delivered;
        for i in 1..=5 {
            ack(
                &mut b,
                now + i * US,
                (mark - 1, mark + i * MSS),
                bw,
                rtt,
                (8 - i) * MSS,
            );
            assert_eq!(b.window(), 9 * MSS, "ACK {i} of the conserving round");
        }
        // A segment sent after it began ends the round and conservation: the window
        // grows by what ACKs deliver again, but the one before the loss is not back
        // while recovery lasts.
        ack(
            &mut b,
            now + 6 * US,
            (mark, mark + 6 * MSS),
            bw,
            rtt,
            3 * MSS,
        );
        assert_eq!(b.window(), 10 * MSS);
        assert!(before > 10 * MSS, "{before}");
        b.on_recovery_end(now + 7 * US);
        assert_eq!(b.window(), before);
    }

    #[test]
    fn a_timeout_collapses_the_window_until_its_recovery_ends() {
        let mut b = Bbr::new(10 * MSS, MSS, 1);
        let now = feed(&mut b, 0, 8, 8e9 as u64, 10 * US, 10 * MSS);
        let before = b.window();
        let flight = 10 * MSS;
        b.on_timeout(&LossEvent {
            now,
            flight,
            pipe: 0,
            delivered: 0,
            mss: MSS,
        });
        assert_eq!(b.window(), MSS);
        b.on_recovery_end(now + 50 * US);
        assert_eq!(b.window(), before);
        // Nothing to restore twice: a later recovery end changes nothing.
        b.on_recovery_end(now + 60 * US);
        assert_eq!(b.window(), before);
    }

    #[test]
    fn probe_rtt_comes_after_ten_seconds_without_a_smaller_rtt() {
        let mut b = Bbr::new(10 * MSS, MSS, 1);
        let now = feed(&mut b, 0, 8, 8e9 as u64, 10 * US, 10 * MSS);
        let (window, bandwidth) = (b.window(), b.bandwidth());
        // Ten seconds later, RTTs no smaller than the estimate.
        let now = feed(
            &mut b,
            now + MIN_RTT_WINDOW,
            1,
            8e9 as u64,
            20 * US,
            10 * MSS,
        );
        assert_eq!(b.mode(), BbrMode::ProbeRtt);
        assert_eq!(b.window(), MIN_CWND_SEGMENTS * MSS);
        let now = feed(&mut b, now, 2, 8e9 as u64, 10 * US, 4 * MSS);
        assert_eq!(b.mode(), BbrMode::ProbeRtt, "200 ms have not passed");
        feed(
            &mut b,
            now + PROBE_RTT_TIME,
            2,
            8e9 as u64,
            10 * US,
            4 * MSS,
        );
        assert_eq!(b.mode(), BbrMode::ProbeBw);
        // The window and the bandwidth estimate from before ProbeRTT come back:
        // its slow samples (four segments in flight) never replaced the estimate.
        assert!(b.window() >= window, "{} < {window}", b.window());
        assert_eq!(b.bandwidth(), bandwidth);
        assert!(b.window() > MIN_CWND_SEGMENTS * MSS);
    }
}
