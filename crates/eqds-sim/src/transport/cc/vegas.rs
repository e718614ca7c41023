//! TCP Vegas (Brakmo and Peterson, 1994), as Linux's `tcp_vegas.c` runs it: a
//! delay-based controller that aims to keep between `ALPHA` and `BETA` of its own
//! packets queued in the network.
//!
//! Once per round trip it compares the window with what the path's base RTT (the
//! smallest ever seen) says it needs, with `rtt` the smallest sample of the round:
//! `diff = cwnd (rtt - base) / base` (Linux's form; Brakmo and Peterson divide by
//! `rtt`, which lets more queue build before it reacts). Below `ALPHA`: one more
//! packet; above `BETA`: one fewer; in between the window holds. Slow start runs as
//! Reno's until a round finds `diff` above `GAMMA`, then the window drops to what the
//! base RTT needs, `cwnd base / rtt`. Rounds with fewer than three RTT samples tell
//! too little (delayed ACKs) and grow as Reno would. Losses, timeouts and ECN echoes
//! are answered as Reno does, and a new round starts after them (Linux re-enables
//! Vegas when it returns to the Open state). The base RTT is forgotten whenever the
//! sender transmits with nothing in flight (Linux's `CA_EVENT_TX_START`): after an
//! idle period the path may have changed.
//!
//! The paper's Figure 18 names it as the exception to EQDS's fair sharing: the time
//! packets wait in the sending EQIF counts as queueing to Vegas, so it stops growing
//! where a loss-based controller would not.

use super::{AckEvent, CongestionControl, LossEvent, NewReno};
use crate::units::Time;

/// Fewer packets than this queued: grow by one per round (Linux's `alpha`).
const ALPHA: u64 = 2;
/// More than this queued: shrink by one per round (`beta`).
const BETA: u64 = 4;
/// More than this queued ends slow start (`gamma`).
const GAMMA: u64 = 1;
/// Rounds with fewer RTT samples than this run Reno's growth instead.
const MIN_SAMPLES: u32 = 3;

#[derive(Clone)]
pub struct Vegas {
    /// Reno's growth where Vegas has no verdict, and its loss and ECN response.
    reno: NewReno,
    mss: u64,
    /// Smallest RTT ever sampled (`Time::MAX`: none yet).
    base_rtt: Time,
    /// Smallest RTT sampled in the current round.
    round_min_rtt: Time,
    /// RTT samples taken in the current round.
    samples: u32,
    /// The round ends when this byte is acknowledged (snd_nxt at its start).
    round_end: u64,
    /// A loss or timeout intervened: the next ACK starts a new round, undecided.
    restart: bool,
}

impl Vegas {
    pub fn new(initial_window: u64, mss: u64) -> Self {
        Self {
            reno: NewReno::new(initial_window),
            mss,
            base_rtt: Time::MAX,
            round_min_rtt: Time::MAX,
            samples: 0,
            round_end: 0,
            restart: false,
        }
    }

    /// Forgets the round in progress: what it sampled predates the loss.
    fn reset_round(&mut self) {
        self.round_min_rtt = Time::MAX;
        self.samples = 0;
        self.restart = true;
    }

    /// The end-of-round verdict, on the ACK that closed the round.
    fn adjust(&mut self, ack: &AckEvent) {
        let (rtt, base) = (self.round_min_rtt, self.base_rtt);
        let (cwnd, ssthresh) = (self.reno.window(), self.reno.ssthresh());
        let packets = u128::from(cwnd / self.mss);
        let (rtt, base) = (u128::from(rtt), u128::from(base));
        // Packets this window keeps queued, and the window the base RTT needs.
        let queued = (packets * (rtt - base) / base) as u64;
        let target = (packets * base / rtt) as u64;
        let (cwnd, ssthresh) = if self.reno.in_slow_start() {
            if queued <= GAMMA {
                self.reno.on_ack(ack);
                return;
            }
            let cwnd = cwnd.min((target + 1) * self.mss);
            (cwnd, ssthresh.min(cwnd.saturating_sub(self.mss)))
        } else if queued > BETA {
            let cwnd = cwnd - self.mss;
            (cwnd, ssthresh.min(cwnd.saturating_sub(self.mss)))
        } else if queued < ALPHA {
            (cwnd + self.mss, ssthresh)
        } else {
            return;
        };
        self.reno.set(cwnd.max(2 * self.mss), ssthresh);
    }
}

impl CongestionControl for Vegas {
    fn window(&self) -> u64 {
        self.reno.window()
    }

    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if let Some(rtt) = ack.rtt {
            let rtt = rtt.max(1);
            self.base_rtt = self.base_rtt.min(rtt);
            self.round_min_rtt = self.round_min_rtt.min(rtt);
            self.samples += 1;
        }
        if self.restart {
            self.restart = false;
            self.round_end = ack.snd_nxt;
            self.reno.on_ack(ack);
        } else if ack.snd_una > self.round_end {
            self.round_end = ack.snd_nxt;
            if self.samples < MIN_SAMPLES {
                self.reno.on_ack(ack);
            } else {
                self.adjust(ack);
            }
            self.round_min_rtt = Time::MAX;
            self.samples = 0;
        } else if self.reno.in_slow_start() {
            self.reno.on_ack(ack);
        }
    }

    fn on_ecn(&mut self, ack: &AckEvent) {
        self.reno.on_ecn(ack);
    }

    fn on_loss(&mut self, loss: &LossEvent) {
        self.reno.on_loss(loss);
        self.reset_round();
    }

    fn on_tx_start(&mut self, _now: Time) {
        self.base_rtt = Time::MAX;
        self.reset_round();
    }

    fn on_timeout(&mut self, loss: &LossEvent) {
        self.reno.on_timeout(loss);
        self.reset_round();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::US;

    const MSS: u64 = 1000;

    /// Feeds one round trip of `n` ACKs of one MSS each, all with RTT `rtt`, for the
    /// round of the data up to byte `start + n MSS`: the last ACK closes the round.
    /// Returns where the next round starts.
    fn round(v: &mut Vegas, start: u64, n: u64, rtt: Time) -> u64 {
        v.round_end = start + n * MSS - 1;
        for i in 1..=n {
            v.on_ack(&AckEvent {
                now: 0,
                acked: MSS,
                delivered: MSS,
                ce: 0,
                rtt: Some(rtt),
                snd_una: start + i * MSS,
                snd_nxt: start + 2 * n * MSS,
                mss: MSS,
                rate: None,
                in_flight: 0,
            });
        }
        start + n * MSS
    }

    /// A Vegas flow in congestion avoidance with a window of `packets` that has seen
    /// a base RTT of 10 us.
    fn avoiding(packets: u64) -> Vegas {
        let mut v = Vegas::new(packets * MSS, MSS);
        v.reno.set(packets * MSS, 0);
        v.base_rtt = 10 * US;
        v
    }

    #[test]
    fn sending_from_an_empty_pipe_forgets_the_base_rtt() {
        // The path's RTT rose to 20 us while the sender was idle. Against the old
        // 10 us base the window would shrink every round; after the restart the new
        // RTT is the base, and a round at it finds nothing queued: +1.
        let mut v = avoiding(20);
        v.on_tx_start(0);
        assert_eq!(v.base_rtt, Time::MAX);
        let at = round(&mut v, 0, 20, 20 * US);
        assert_eq!(v.base_rtt, 20 * US);
        let before = v.window();
        round(&mut v, at, 20, 20 * US);
        assert_eq!(v.window(), before + MSS);
    }

    #[test]
    fn holds_the_window_while_alpha_to_beta_packets_are_queued() {
        // 20 packets at 12 us against a 10 us base: diff = 20 * 2/10 = 4.
        let mut v = avoiding(20);
        let mut at = 0;
        for _ in 0..5 {
            at = round(&mut v, at, 20, 12 * US);
        }
        assert_eq!(v.window(), 20 * MSS);
    }

    #[test]
    fn grows_by_one_per_round_below_alpha_and_shrinks_above_beta() {
        // At the base RTT nothing is queued: +1 packet per round.
        let mut v = avoiding(20);
        let at = round(&mut v, 0, 20, 10 * US);
        assert_eq!(v.window(), 21 * MSS);
        round(&mut v, at, 21, 10 * US);
        assert_eq!(v.window(), 22 * MSS);
        // At twice the base RTT diff is the whole window: -1 per round.
        let mut v = avoiding(20);
        round(&mut v, 0, 20, 20 * US);
        assert_eq!(v.window(), 19 * MSS);
    }

    #[test]
    fn slow_start_ends_at_what_the_base_rtt_needs_once_a_queue_forms() {
        let mut v = Vegas::new(10 * MSS, MSS);
        // A round at the base RTT: slow start goes on, one MSS per ACK.
        let at = round(&mut v, 0, 10, 10 * US);
        assert_eq!(v.window(), 20 * MSS);
        // The next round sees 15 us. Slow start grows through it (19 more packets)
        // until its last ACK finds diff = 39 * 5/10 = 19: the window drops to the
        // 39 * 10/15 = 26 the base RTT needs, plus one.
        round(&mut v, at, 20, 15 * US);
        assert_eq!(v.window(), 27 * MSS);
        assert_eq!(v.ssthresh(), 26 * MSS);
    }

    #[test]
    fn rounds_with_too_few_samples_grow_as_reno() {
        let mut v = avoiding(20);
        // Two ACKs of a whole window each (stretch ACKs): too few to judge.
        round(&mut v, 0, 2, 20 * US);
        assert_eq!(v.window(), 20 * MSS);
    }

    #[test]
    fn a_loss_starts_a_new_round_without_judging_the_old_one() {
        let mut v = avoiding(20);
        // Half a round of samples at twice the base RTT, then a loss.
        v.round_end = 20 * MSS;
        for i in 1..=10 {
            v.on_ack(&AckEvent {
                now: 0,
                acked: MSS,
                delivered: MSS,
                ce: 0,
                rtt: Some(20 * US),
                snd_una: i * MSS,
                snd_nxt: 40 * MSS,
                mss: MSS,
                rate: None,
                in_flight: 0,
            });
        }
        v.on_loss(&LossEvent::plain(0, 20 * MSS));
        assert_eq!(v.window(), 10 * MSS);
        // The first ACK after recovery opens a round; its samples alone decide it.
        let at = 30 * MSS;
        v.on_ack(&AckEvent {
            now: 0,
            acked: MSS,
            delivered: MSS,
            ce: 0,
            rtt: Some(10 * US),
            snd_una: at,
            snd_nxt: at + 10 * MSS,
            mss: MSS,
            rate: None,
            in_flight: 0,
        });
        assert_eq!(v.window(), 10 * MSS, "no verdict on the stale samples");
        round(&mut v, at + 10 * MSS, 10, 10 * US);
        assert_eq!(v.window(), 11 * MSS, "nothing queued in the new round: +1");
    }
}
