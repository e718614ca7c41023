//! PAUSE and RESUME for one (link, priority) (IEEE 802.1Qbb; the DCQCN paper, §2).
//!
//! - [`IngressPfc`], at the receiving end of a link: every buffered packet is charged
//!   to its (ingress port, priority) counter. When the counter passes the XOFF
//!   threshold the receiver sends PAUSE upstream; when it falls to XON (two frames
//!   below, §4) it sends RESUME. Frames are either XOFF/XON (a PAUSE holds until the
//!   RESUME) or carry pause quanta, 512 bit times each (12.8 ns at 40 Gbps, at most
//!   65535): a PAUSE then expires by itself, so the receiver refreshes it before it
//!   does while the counter stays above XON, and a RESUME is a PAUSE of 0 quanta.
//! - [`EgressPause`], at the sending end: a priority paused by the far end may not
//!   start a frame until the pause ends (a frame on the wire is finished). It counts
//!   PAUSE frames received and the time spent paused, for `ports.csv`.

use crate::units::{Time, SEC};

/// How PAUSE frames say how long to pause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PauseMode {
    /// PAUSE until RESUME (as HPCC's and htsim's models do).
    XoffXon,
    /// PAUSE for `quanta` (512 bit times each), refreshed every `refresh` while the
    /// counter stays above XON; RESUME is a PAUSE of 0 quanta (802.1Qbb; the DCQCN
    /// authors' ns-3 model pauses 5 us and refreshes every 2.5 us).
    Quanta { quanta: u16, refresh: Time },
}

/// A PAUSE or RESUME frame for one priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseFrame {
    pub priority: u8,
    /// Pause quanta; 0 resumes. In XOFF/XON mode, `u16::MAX` means "until resumed".
    pub quanta: u16,
}

impl PauseFrame {
    /// Whether this frame resumes the priority.
    pub fn is_resume(&self) -> bool {
        self.quanta == 0
    }
}

/// Time of `quanta` pause quanta on a link of `rate_bps`.
pub fn quanta_time(quanta: u16, rate_bps: u64) -> Time {
    (u128::from(quanta) * 512 * u128::from(SEC)).div_ceil(u128::from(rate_bps.max(1))) as Time
}

/// Counters of one (port, priority) for outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PfcCounters {
    pub pause_sent: u64,
    pub resume_sent: u64,
    pub pause_received: u64,
    /// Time this priority could not send because the far end paused it.
    pub paused_time: Time,
}

/// The receiving end of one (link, priority): decides when to send PAUSE and RESUME.
#[derive(Clone, Debug)]
pub struct IngressPfc {
    priority: u8,
    mode: PauseMode,
    /// A PAUSE is in force at the far end (as far as this end knows).
    pausing: bool,
    /// When to refresh the PAUSE (quanta mode), `Time::MAX` if not pausing.
    refresh_due: Time,
    counters: PfcCounters,
}

impl IngressPfc {
    pub fn new(priority: u8, mode: PauseMode) -> Self {
        Self {
            priority,
            mode,
            pausing: false,
            refresh_due: Time::MAX,
            counters: PfcCounters::default(),
        }
    }

    /// Whether the far end is being paused.
    pub fn pausing(&self) -> bool {
        self.pausing
    }

    pub fn counters(&self) -> PfcCounters {
        self.counters
    }

    fn pause_frame(&self) -> PauseFrame {
        PauseFrame {
            priority: self.priority,
            quanta: match self.mode {
                PauseMode::XoffXon => u16::MAX,
                PauseMode::Quanta { quanta, .. } => quanta,
            },
        }
    }

    /// The (ingress port, priority) counter is `bytes` at `now`, against thresholds
    /// `xoff` and `xon` (which move with the shared buffer's occupancy). Returns the
    /// frame to send upstream, if any: PAUSE when the counter passes XOFF, RESUME
    /// when it falls to XON.
    pub fn update(&mut self, now: Time, bytes: u64, xoff: f64, xon: f64) -> Option<PauseFrame> {
        let b = bytes as f64;
        if !self.pausing && b > xoff {
            self.pausing = true;
            self.counters.pause_sent += 1;
            if let PauseMode::Quanta { refresh, .. } = self.mode {
                self.refresh_due = now + refresh;
            }
            return Some(self.pause_frame());
        }
        if self.pausing && b <= xon {
            self.pausing = false;
            self.refresh_due = Time::MAX;
            self.counters.resume_sent += 1;
            return Some(PauseFrame {
                priority: self.priority,
                quanta: 0,
            });
        }
        None
    }

    /// When a PAUSE needs refreshing (quanta mode), if ever.
    pub fn poll_timeout(&self) -> Option<Time> {
        (self.refresh_due != Time::MAX).then_some(self.refresh_due)
    }

    /// The refresh is due: another PAUSE, since the counter is still above XON (it
    /// would have resumed otherwise).
    pub fn handle_timeout(&mut self, now: Time) -> Option<PauseFrame> {
        let PauseMode::Quanta { refresh, .. } = self.mode else {
            return None;
        };
        if !self.pausing || now < self.refresh_due {
            return None;
        }
        self.refresh_due = now + refresh;
        self.counters.pause_sent += 1;
        Some(self.pause_frame())
    }
}

/// The sending end of one link: which priorities the far end paused, until when.
#[derive(Clone, Debug)]
pub struct EgressPause {
    rate_bps: u64,
    /// Per priority: paused until (`Time::MAX`: until resumed; 0: not paused).
    until: [Time; 8],
    /// Per priority: when the current pause began, to account its time.
    since: [Option<Time>; 8],
    counters: [PfcCounters; 8],
}

impl EgressPause {
    /// A link of `rate_bps` (pause quanta are bit times of it), nothing paused.
    pub fn new(rate_bps: u64) -> Self {
        Self {
            rate_bps,
            until: [0; 8],
            since: [None; 8],
            counters: [PfcCounters::default(); 8],
        }
    }

    /// A PAUSE or RESUME arrived at `now`. Frames naming a priority above 7 are
    /// ignored and return false (a bad frame is counted by the caller, not obeyed).
    pub fn on_frame(&mut self, now: Time, f: PauseFrame) -> bool {
        let p = usize::from(f.priority);
        if p >= 8 {
            return false;
        }
        self.settle(now, p);
        if f.is_resume() {
            self.until[p] = 0;
            if let Some(start) = self.since[p].take() {
                self.counters[p].paused_time += now.saturating_sub(start);
            }
            return true;
        }
        self.counters[p].pause_received += 1;
        self.until[p] = if f.quanta == u16::MAX {
            Time::MAX
        } else {
            now + quanta_time(f.quanta, self.rate_bps)
        };
        self.since[p].get_or_insert(now);
        true
    }

    /// Closes a pause that expired by itself before `now`.
    fn settle(&mut self, now: Time, p: usize) {
        if let Some(start) = self.since[p] {
            if self.until[p] <= now {
                self.counters[p].paused_time += self.until[p].saturating_sub(start);
                self.since[p] = None;
            }
        }
    }

    /// Whether priority `p` may start a frame at `now`.
    pub fn may_send(&self, now: Time, p: u8) -> bool {
        self.until.get(usize::from(p)).is_none_or(|&u| u <= now)
    }

    /// When priority `p`'s pause ends by itself, if it does (quanta mode).
    pub fn paused_until(&self, p: u8) -> Option<Time> {
        let u = *self.until.get(usize::from(p))?;
        (u != 0 && u != Time::MAX).then_some(u)
    }

    /// Counters of priority `p`, with a pause still running counted up to `now`.
    pub fn counters(&self, now: Time, p: u8) -> PfcCounters {
        let i = usize::from(p).min(7);
        let mut c = self.counters[i];
        if let Some(start) = self.since[i] {
            c.paused_time += self.until[i].min(now).saturating_sub(start);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{NS, US};

    const RATE: u64 = 40_000_000_000;

    #[test]
    fn one_quantum_is_512_bit_times() {
        assert_eq!(quanta_time(1, RATE), 12_800);
        assert_eq!(quanta_time(u16::MAX, RATE), 838_848_000);
    }

    /// XOFF/XON: PAUSE once above XOFF, RESUME once at XON, nothing in between.
    #[test]
    fn xoff_xon_hysteresis() {
        let mut pfc = IngressPfc::new(3, PauseMode::XoffXon);
        let (xoff, xon) = (24_475.0, 21_475.0);
        assert_eq!(pfc.update(0, 20_000, xoff, xon), None);
        let pause = pfc.update(1, 24_476, xoff, xon).unwrap();
        assert_eq!((pause.priority, pause.is_resume()), (3, false));
        assert_eq!(
            pfc.update(2, 30_000, xoff, xon),
            None,
            "one PAUSE, not one per packet"
        );
        assert_eq!(
            pfc.update(3, 22_000, xoff, xon),
            None,
            "between XON and XOFF: hold"
        );
        assert!(pfc.update(4, 21_475, xoff, xon).unwrap().is_resume());
        assert_eq!(pfc.update(5, 21_000, xoff, xon), None);
        assert_eq!(pfc.poll_timeout(), None, "XOFF/XON needs no refresh");
        let c = pfc.counters();
        assert_eq!((c.pause_sent, c.resume_sent), (1, 1));
    }

    /// Quanta mode: a PAUSE is refreshed while the counter stays up, and the far end
    /// resumes by itself if the refreshes stop.
    #[test]
    fn quanta_are_refreshed_and_expire() {
        let mode = PauseMode::Quanta {
            quanta: 391, // 5 us at 40 Gbps
            refresh: 2_500 * NS,
        };
        let mut pfc = IngressPfc::new(0, mode);
        let mut eg = EgressPause::new(RATE);
        let f = pfc.update(0, 50_000, 24_475.0, 21_475.0).unwrap();
        assert!(eg.on_frame(0, f));
        assert!(!eg.may_send(4 * US, 0));
        assert_eq!(pfc.poll_timeout(), Some(2_500 * NS));
        let again = pfc.handle_timeout(2_500 * NS).unwrap();
        eg.on_frame(2_500 * NS, again);
        assert!(!eg.may_send(6 * US, 0), "the refresh extends the pause");
        assert!(eg.may_send(8 * US, 0), "without more refreshes it expires");
        assert_eq!(eg.counters(10 * US, 0).pause_received, 2);
        let paused = eg.counters(10 * US, 0).paused_time;
        assert_eq!(paused, 2_500 * NS + quanta_time(391, RATE));
        // Other priorities were never paused.
        assert!(eg.may_send(0, 1));
    }

    /// The egress side counts the time paused, including a pause still running.
    #[test]
    fn paused_time_is_counted() {
        let mut eg = EgressPause::new(RATE);
        let pause = PauseFrame {
            priority: 5,
            quanta: u16::MAX,
        };
        eg.on_frame(10 * US, pause);
        assert!(!eg.may_send(100 * US, 5));
        assert_eq!(eg.counters(30 * US, 5).paused_time, 20 * US);
        eg.on_frame(
            50 * US,
            PauseFrame {
                priority: 5,
                quanta: 0,
            },
        );
        assert!(eg.may_send(50 * US, 5));
        assert_eq!(eg.counters(90 * US, 5).paused_time, 40 * US);
        // A frame for a priority that does not exist is not obeyed.
        assert!(!eg.on_frame(
            0,
            PauseFrame {
                priority: 8,
                quanta: 5
            }
        ));
    }
}
