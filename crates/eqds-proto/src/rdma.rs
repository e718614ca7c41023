//! The RDMA EQIF's flow control of an unmodified RDMA engine (EQDS paper §6, "RDMA
//! EQIF"; §8.5; Appendix B).
//!
//! RDMA gets a sending EQIF of its own, so that it neither fights other traffic in
//! one queue nor loses packets: the NIC's RDMA engine (RoCEv2, go-back-N) writes into
//! the EQIF's per-destination queues, which EQDS drains as receivers grant credit.
//! The engine cannot be changed, so the EQIF slows it with the signals it already
//! obeys. The paper built two:
//!
//! - **CNPs** (BlueField-2, [`Feedback::Cnp`]): a packet joining a destination's
//!   queue is marked with a probability that rises between K_low and K_high of that
//!   queue's backlog (the upper threshold is 375 packets, 584 kB), and a mark becomes
//!   a congestion notification packet sent by the EQIF itself, straight to the local
//!   sender's DCQCN reaction point. No ECN bit crosses the network and no remote
//!   notification point answers it: the loop is short and of constant delay, so DCQCN
//!   can be tuned once (Appendix B's table). Only the queue pair whose packet was
//!   marked slows down.
//! - **PAUSE** (Stingray, [`Feedback::Pause`]): when a destination's queue grows past
//!   a threshold, a PFC PAUSE stops the RDMA engine; a RESUME restarts it once every
//!   queue is short again. This works, but PFC acts on the whole engine: every queue
//!   pair stops, also those whose destinations have credit and an empty queue, which
//!   is why the paper prefers CNPs.
//!
//! [`RdmaFeedback`] is that logic alone, without I/O: the caller asks the sending
//! EQIF's RED whether a joining packet is marked ([`crate::host::Host::mark_ce`], with
//! the ramp of [`crate::host::EqifQueue`]), tells it of every packet that joins or
//! leaves a queue, and carries out the [`EngineSignal`]s it returns.
//!
//! # Choices
//!
//! - A CNP names the queue pair of the marked packet. RoCE packets carry only the
//!   destination QP; the paper's EQIF learns the pairs from RDMA CM traffic. Callers
//!   here name the sending QP (`qp`) directly.
//! - At most one CNP per queue pair per [`Feedback::Cnp`] `interval` \[choice\], as a
//!   NIC's notification point sends (the Mellanox firmware's minimum time between
//!   CNPs, 4 µs, equal to Appendix B's R_d); marks inside the interval are counted
//!   and dropped. The paper says only that the EQIF sends CNPs.
//! - PAUSE and RESUME are level-triggered with hysteresis \[choice\]: PAUSE when a
//!   packet joins a queue at or above `xoff_bytes`, RESUME when no queue is above
//!   `xon_bytes` any more. The paper gives no thresholds.

use std::collections::{BTreeMap, BTreeSet};

use crate::sender::PeerId;
use crate::time::Time;

/// How the RDMA EQIF slows the RDMA engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feedback {
    /// Marks become CNPs sent to the marked packet's queue pair (BlueField-2), at
    /// most one per queue pair per `interval`.
    Cnp {
        /// Least time between two CNPs to one queue pair.
        interval: Time,
    },
    /// PFC PAUSE to the whole engine while any destination's queue is long
    /// (Stingray).
    Pause {
        /// A packet joining a queue of at least this many bytes pauses the engine.
        xoff_bytes: u64,
        /// The engine resumes when every queue holds at most this many bytes.
        xon_bytes: u64,
    },
}

/// What the RDMA engine is to be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineSignal {
    /// A congestion notification for queue pair `qp`'s reaction point.
    Cnp {
        /// The queue pair whose packet was marked.
        qp: u64,
    },
    /// Stop sending (PFC PAUSE for the RDMA priority).
    Pause,
    /// Send again (PFC RESUME).
    Resume,
}

/// Counters of one RDMA EQIF.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RdmaStats {
    /// Packets the marking ramp picked.
    pub marked: u64,
    /// CNPs sent to the engine.
    pub cnps: u64,
    /// Marks not sent as CNPs: their queue pair had one less than `interval` ago.
    pub cnps_suppressed: u64,
    /// PAUSEs sent to the engine.
    pub pauses: u64,
    /// RESUMEs sent to the engine.
    pub resumes: u64,
    /// Time the engine spent paused, up to the last RESUME.
    pub paused_ps: Time,
}

/// The RDMA EQIF's feedback state. See the module documentation.
#[derive(Debug, Clone)]
pub struct RdmaFeedback {
    feedback: Feedback,
    /// When each queue pair last got a CNP (pruned of entries older than the
    /// interval when it grows).
    last_cnp: BTreeMap<u64, Time>,
    /// Size of `last_cnp` after its last pruning.
    pruned_len: usize,
    /// Destinations whose queue went above `xoff_bytes` and has not yet come down to
    /// `xon_bytes`.
    long: BTreeSet<PeerId>,
    /// Since when the engine is paused.
    paused_since: Option<Time>,
    stats: RdmaStats,
}

impl RdmaFeedback {
    /// Feedback of kind `feedback`, with the engine running.
    pub fn new(feedback: Feedback) -> Self {
        Self {
            feedback,
            last_cnp: BTreeMap::new(),
            pruned_len: 0,
            long: BTreeSet::new(),
            paused_since: None,
            stats: RdmaStats::default(),
        }
    }

    /// The kind of feedback.
    pub fn feedback(&self) -> Feedback {
        self.feedback
    }

    /// Whether the engine is paused.
    pub fn is_paused(&self) -> bool {
        self.paused_since.is_some()
    }

    /// Counters so far (`paused_ps` counts a pause still on up to `now`).
    pub fn stats(&self, now: Time) -> RdmaStats {
        let mut s = self.stats;
        if let Some(since) = self.paused_since {
            s.paused_ps += now.saturating_sub(since);
        }
        s
    }

    /// A packet of queue pair `qp` joined the queue to `dst`, which now holds
    /// `backlog` bytes; `marked` is the marking ramp's verdict on it (asked before
    /// it joined). Returns what to tell the engine.
    pub fn on_enqueue(
        &mut self,
        now: Time,
        qp: u64,
        dst: PeerId,
        marked: bool,
        backlog: u64,
    ) -> Option<EngineSignal> {
        match self.feedback {
            Feedback::Cnp { interval } => {
                if !marked {
                    return None;
                }
                self.stats.marked += 1;
                if let Some(&last) = self.last_cnp.get(&qp) {
                    if now < last.saturating_add(interval) {
                        self.stats.cnps_suppressed += 1;
                        return None;
                    }
                }
                self.last_cnp.insert(qp, now);
                if self.last_cnp.len() > 2 * self.pruned_len.max(64) {
                    self.last_cnp
                        .retain(|_, &mut t| now < t.saturating_add(interval));
                    self.pruned_len = self.last_cnp.len();
                }
                self.stats.cnps += 1;
                Some(EngineSignal::Cnp { qp })
            }
            Feedback::Pause { xoff_bytes, .. } => {
                if backlog < xoff_bytes {
                    return None;
                }
                self.long.insert(dst);
                if self.paused_since.is_some() {
                    return None;
                }
                self.paused_since = Some(now);
                self.stats.pauses += 1;
                Some(EngineSignal::Pause)
            }
        }
    }

    /// A packet left the queue to `dst`, which now holds `backlog` bytes. Returns
    /// what to tell the engine.
    pub fn on_dequeue(&mut self, now: Time, dst: PeerId, backlog: u64) -> Option<EngineSignal> {
        let Feedback::Pause { xon_bytes, .. } = self.feedback else {
            return None;
        };
        if backlog > xon_bytes || !self.long.remove(&dst) || !self.long.is_empty() {
            return None;
        }
        let since = self.paused_since.take()?;
        self.stats.paused_ps += now.saturating_sub(since);
        self.stats.resumes += 1;
        Some(EngineSignal::Resume)
    }

    /// The queue to `dst` was dropped with everything in it (its tunnel closed):
    /// it no longer holds the engine paused.
    pub fn on_flush(&mut self, now: Time, dst: PeerId) -> Option<EngineSignal> {
        self.on_dequeue(now, dst, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Time = 1_000_000;

    #[test]
    fn marks_become_cnps_at_most_one_per_queue_pair_per_interval() {
        let mut f = RdmaFeedback::new(Feedback::Cnp { interval: 4 * US });
        // Unmarked packets say nothing, whatever the backlog.
        assert_eq!(f.on_enqueue(0, 1, 9, false, 1 << 30), None);
        assert_eq!(
            f.on_enqueue(US, 1, 9, true, 100),
            Some(EngineSignal::Cnp { qp: 1 })
        );
        // Within the interval: suppressed for QP 1, not for QP 2.
        assert_eq!(f.on_enqueue(4 * US, 1, 9, true, 100), None);
        assert_eq!(
            f.on_enqueue(4 * US, 2, 9, true, 100),
            Some(EngineSignal::Cnp { qp: 2 })
        );
        assert_eq!(
            f.on_enqueue(5 * US, 1, 9, true, 100),
            Some(EngineSignal::Cnp { qp: 1 })
        );
        let s = f.stats(5 * US);
        assert_eq!((s.marked, s.cnps, s.cnps_suppressed), (4, 3, 1));
        assert!(!f.is_paused());
    }

    #[test]
    fn the_cnp_table_stays_small_over_many_queue_pairs() {
        let mut f = RdmaFeedback::new(Feedback::Cnp { interval: US });
        for qp in 0..100_000u64 {
            f.on_enqueue(qp * 10 * US, qp, 0, true, 0);
        }
        assert!(f.last_cnp.len() <= 128, "{} entries kept", f.last_cnp.len());
        assert_eq!(f.stats(0).cnps, 100_000);
    }

    #[test]
    fn one_long_queue_pauses_the_whole_engine_until_every_queue_is_short() {
        let mut f = RdmaFeedback::new(Feedback::Pause {
            xoff_bytes: 10_000,
            xon_bytes: 5_000,
        });
        assert_eq!(f.on_enqueue(0, 1, 7, true, 9_999), None);
        assert_eq!(
            f.on_enqueue(US, 1, 7, false, 10_000),
            Some(EngineSignal::Pause)
        );
        assert!(f.is_paused());
        // A second long queue while paused: no second PAUSE.
        assert_eq!(f.on_enqueue(2 * US, 2, 8, false, 12_000), None);
        // Queue 7 drains, but 8 is still long: the engine stays paused.
        assert_eq!(f.on_dequeue(3 * US, 7, 5_000), None);
        assert_eq!(f.on_dequeue(4 * US, 8, 6_000), None);
        assert!(f.is_paused());
        assert_eq!(f.on_dequeue(6 * US, 8, 4_000), Some(EngineSignal::Resume));
        assert!(!f.is_paused());
        // A queue that was never long says nothing on the way down.
        assert_eq!(f.on_dequeue(7 * US, 9, 0), None);
        let s = f.stats(10 * US);
        assert_eq!((s.pauses, s.resumes, s.paused_ps), (1, 1, 5 * US));
        assert_eq!(s.cnps, 0);
    }

    #[test]
    fn a_flushed_queue_releases_the_pause() {
        let mut f = RdmaFeedback::new(Feedback::Pause {
            xoff_bytes: 100,
            xon_bytes: 0,
        });
        assert_eq!(f.on_enqueue(0, 1, 3, false, 500), Some(EngineSignal::Pause));
        assert_eq!(f.stats(2 * US).paused_ps, 2 * US);
        assert_eq!(f.on_flush(2 * US, 3), Some(EngineSignal::Resume));
    }
}
