//! Where a run's wall time goes, by kind of event: `perf.json`'s `event_costs`.
//!
//! One event in [`SAMPLE_EVERY`] past warm-up is timed, from the start of its
//! handling to its end, with the processor's time-stamp counter where there is one
//! (a few cycles to read; elsewhere the monotonic clock). Sampling keeps the cost to a
//! test per event, and one in 64 of a run's millions of events gives a mean to well
//! under a percent. Ticks become nanoseconds by the wall clock over the same span.
//! What no event's handling accounts for (taking events from the queue, loading what
//! the next ones will need) is the run loop's, reported as the rest.
//!
//! The timing reads no state of the run and changes none: outputs stay
//! byte-identical, and only `perf.json`, which is not, carries it.

use super::Event;
use crate::ids::Node;
use serde_json::{json, Value};

/// One event in this many is timed.
pub const SAMPLE_EVERY: u64 = 64;

/// The kinds reported, by the index [`kind`] gives.
const KINDS: [&str; 7] = [
    "switch_arrival",
    "host_arrival",
    "tx_done",
    "eqds_timer",
    "endpoint_timer",
    "pull_slot",
    "other",
];

fn kind(event: &Event) -> usize {
    match event {
        Event::Arrive {
            at: Node::Switch(_),
            ..
        }
        | Event::ArriveFrom { .. } => 0,
        Event::Arrive { .. } => 1,
        Event::TxDone { .. } => 2,
        Event::EqdsTimer { .. } => 3,
        Event::Timer { .. } => 4,
        Event::PullSlot { .. } => 5,
        _ => 6,
    }
}

/// A clock for short spans: the time-stamp counter on x86-64 (constant-rate on any
/// processor of the last fifteen years), nanoseconds of the monotonic clock elsewhere.
#[inline]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` exists on every x86-64 processor and has no preconditions.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
}

/// A run's timing: whether it is on (`[output] event_costs`), the events timed, and
/// the clock when warm-up ended.
#[derive(Debug, Default)]
pub struct Timing {
    pub on: bool,
    pub costs: EventCosts,
    warm_ticks: u64,
}

impl Timing {
    pub fn new(on: bool) -> Self {
        Timing {
            on,
            ..Default::default()
        }
    }

    /// Warm-up ended: the timed span starts.
    pub fn warmed(&mut self) {
        self.warm_ticks = ticks();
    }

    /// The run ended: the events timed and the clock's ticks since warm-up, if on.
    pub fn finish(&mut self) -> Option<(EventCosts, u64)> {
        self.on.then(|| {
            (
                std::mem::take(&mut self.costs),
                ticks().wrapping_sub(self.warm_ticks),
            )
        })
    }
}

/// The timed events so far, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EventCosts {
    ticks: [u64; KINDS.len()],
    timed: [u64; KINDS.len()],
}

impl EventCosts {
    /// Whether the event numbered `n` (counting from 1) is one to time.
    #[inline]
    pub fn samples(n: u64) -> bool {
        n % SAMPLE_EVERY == 0
    }

    /// Adds `event`, whose handling began at `start` ([`ticks`]) and just ended.
    #[inline]
    pub fn record(&mut self, event: &Event, start: u64) {
        let k = kind(event);
        self.ticks[k] += ticks().wrapping_sub(start);
        self.timed[k] += 1;
    }

    /// The report: per kind its share of the timed events and its mean wall time,
    /// and the run loop's nanoseconds per event, given the span timed (`span_ticks`
    /// of the clock, `span_ns` of wall time) and the events processed in it.
    pub fn report(&self, span_ticks: u64, span_ns: f64, events: u64) -> Value {
        let timed: u64 = self.timed.iter().sum();
        if timed == 0 || span_ticks == 0 || events == 0 {
            return Value::Null;
        }
        let ns_per_tick = span_ns / span_ticks as f64;
        let mut kinds = serde_json::Map::new();
        let mut handled_ns = 0.0;
        for (k, name) in KINDS.iter().enumerate() {
            if self.timed[k] == 0 {
                continue;
            }
            let share = self.timed[k] as f64 / timed as f64;
            let ns = self.ticks[k] as f64 * ns_per_tick / self.timed[k] as f64;
            handled_ns += share * ns;
            kinds.insert(
                (*name).into(),
                json!({ "share": share, "ns_per_event": ns, "timed": self.timed[k] }),
            );
        }
        json!({
            "sampled_one_in": SAMPLE_EVERY,
            "kinds": kinds,
            "run_loop_ns_per_event": span_ns / events as f64 - handled_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_means_by_kind() {
        let mut c = EventCosts::default();
        let (tx, arrive) = (
            Event::TxDone { port: 3 },
            Event::Arrive {
                at: Node::Switch(1),
                pkt: 9,
            },
        );
        // Three transmitters and one arrival, timed by hand.
        c.ticks[kind(&tx)] = 300;
        c.timed[kind(&tx)] = 3;
        c.ticks[kind(&arrive)] = 500;
        c.timed[kind(&arrive)] = 1;
        // 3000 ticks of 1 ns over 10 events: 300 ns an event, of which the timed
        // kinds account for 0.75 * 100 + 0.25 * 500 = 200; the loop for the rest.
        let r = c.report(3000, 3000.0, 10);
        assert_eq!(r["kinds"]["tx_done"]["share"], 0.75);
        assert_eq!(r["kinds"]["tx_done"]["ns_per_event"], 100.0);
        assert_eq!(r["kinds"]["switch_arrival"]["ns_per_event"], 500.0);
        assert_eq!(r["run_loop_ns_per_event"], 100.0);
        assert!(r["kinds"].get("host_arrival").is_none());
        assert_eq!(EventCosts::default().report(1000, 1.0, 10), Value::Null);
    }

    #[test]
    fn samples_one_in_sample_every() {
        let n = (1..=640).filter(|&n| EventCosts::samples(n)).count();
        assert_eq!(n as u64, 640 / SAMPLE_EVERY);
    }
}
