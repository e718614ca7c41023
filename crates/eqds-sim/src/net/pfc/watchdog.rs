//! A PFC watchdog, as switch operating systems ship one (SONiC's "PFC Watchdog",
//! Juniper's PFC watchdog): not in the DCQCN paper, which predates them, but what
//! operators run against PAUSE storms and deadlocks.
//!
//! Per (egress port, priority) queue: when the queue has been paused without a break
//! for `detection` while holding packets, it is declared stormed. For `restoration`
//! it then ignores PAUSE, either dropping what it holds and what arrives
//! ([`StormAction::Drop`]) or sending regardless ([`StormAction::Forward`]). After
//! the restoration time it obeys PAUSE again, and a new detection period begins.
//! Polling granularity is not modelled: detection is exact.

use crate::units::Time;

/// What a stormed queue does until restoration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StormAction {
    /// Drop its packets (SONiC's default).
    Drop,
    /// Send them, ignoring the PAUSE.
    Forward,
}

/// The watchdog's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchdogConfig {
    /// How long a queue must stay paused, holding packets, to be declared stormed.
    pub detection: Time,
    /// How long a stormed queue ignores PAUSE.
    pub restoration: Time,
    pub action: StormAction,
}

/// The watchdog's verdict on a queue at a moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueVerdict {
    /// Obey PAUSE as usual.
    Normal,
    /// Stormed: apply the action until this time.
    Stormed { until: Time, action: StormAction },
}

/// The watchdog of one (egress port, priority) queue.
#[derive(Clone, Debug)]
pub struct Watchdog {
    config: WatchdogConfig,
    /// Since when the queue has been paused and non-empty, if it is.
    stuck_since: Option<Time>,
    stormed_until: Option<Time>,
    storms: u64,
}

impl Watchdog {
    pub fn new(config: WatchdogConfig) -> Self {
        Self {
            config,
            stuck_since: None,
            stormed_until: None,
            storms: 0,
        }
    }

    /// Storms declared so far.
    pub fn storms(&self) -> u64 {
        self.storms
    }

    /// The queue's state changed at `now`: whether it is paused, and whether it
    /// holds packets. Returns the verdict as of `now`.
    pub fn update(&mut self, now: Time, paused: bool, backlogged: bool) -> QueueVerdict {
        if let Some(until) = self.stormed_until {
            if now < until {
                return QueueVerdict::Stormed {
                    until,
                    action: self.config.action,
                };
            }
            self.stormed_until = None;
            self.stuck_since = None;
        }
        if paused && backlogged {
            let since = *self.stuck_since.get_or_insert(now);
            if now >= since + self.config.detection {
                return self.storm(now);
            }
        } else {
            self.stuck_since = None;
        }
        QueueVerdict::Normal
    }

    /// When the verdict changes by itself (detection or restoration), if it does.
    pub fn poll_timeout(&self) -> Option<Time> {
        match (self.stormed_until, self.stuck_since) {
            (Some(until), _) => Some(until),
            (None, Some(since)) => Some(since + self.config.detection),
            (None, None) => None,
        }
    }

    fn storm(&mut self, now: Time) -> QueueVerdict {
        self.storms += 1;
        let until = now + self.config.restoration;
        self.stormed_until = Some(until);
        QueueVerdict::Stormed {
            until,
            action: self.config.action,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MS;

    fn juniper() -> WatchdogConfig {
        // Juniper's defaults: 200 ms detection, 200 ms restoration.
        WatchdogConfig {
            detection: 200 * MS,
            restoration: 200 * MS,
            action: StormAction::Drop,
        }
    }

    #[test]
    fn a_queue_paused_too_long_is_stormed_then_restored() {
        let mut w = Watchdog::new(juniper());
        assert_eq!(w.update(0, true, true), QueueVerdict::Normal);
        assert_eq!(w.poll_timeout(), Some(200 * MS));
        assert_eq!(w.update(199 * MS, true, true), QueueVerdict::Normal);
        let stormed = w.update(200 * MS, true, true);
        assert_eq!(
            stormed,
            QueueVerdict::Stormed {
                until: 400 * MS,
                action: StormAction::Drop
            }
        );
        assert_eq!(w.poll_timeout(), Some(400 * MS));
        // Still paused after restoration: a new detection period, not an instant storm.
        assert_eq!(w.update(400 * MS, true, true), QueueVerdict::Normal);
        assert_eq!(w.poll_timeout(), Some(600 * MS));
        assert_eq!(w.storms(), 1);
    }

    #[test]
    fn a_break_in_the_pause_or_an_empty_queue_resets_detection() {
        let mut w = Watchdog::new(juniper());
        w.update(0, true, true);
        w.update(150 * MS, false, true); // resumed for a moment
        w.update(160 * MS, true, true);
        assert_eq!(w.update(250 * MS, true, true), QueueVerdict::Normal);
        w.update(300 * MS, true, false); // paused but nothing to send: harmless
        assert_eq!(w.poll_timeout(), None);
        assert_eq!(w.storms(), 0);
    }
}
