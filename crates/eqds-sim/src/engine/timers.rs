//! One lazily cancelled timer per endpoint.
//!
//! Re-arming a timer (a TCP RTO moves on every ACK) must not cost an event each time.
//! We remember the wanted deadline and the earliest event already queued for the
//! endpoint; a new event is pushed only when the deadline moves earlier than that.
//! When a queued event pops early, it re-queues itself at the current deadline.

use crate::engine::{Event, EventQueue};
use crate::ids::EndpointId;
use crate::units::Time;

const NONE: Time = Time::MAX;

#[derive(Default)]
pub struct Timers {
    /// When each endpoint wants to be woken (`NONE` if disarmed).
    deadline: Vec<Time>,
    /// Earliest `Timer` event queued for each endpoint (`NONE` if unknown/none).
    queued: Vec<Time>,
}

impl Timers {
    /// Makes room for endpoint ids below `n`.
    pub fn grow(&mut self, n: usize) {
        self.deadline.resize(n, NONE);
        self.queued.resize(n, NONE);
    }

    pub fn set(&mut self, ep: EndpointId, at: Time, events: &mut EventQueue) {
        let i = ep as usize;
        self.deadline[i] = at;
        if at < self.queued[i] {
            events.push(at, Event::Timer { endpoint: ep });
            self.queued[i] = at;
        }
    }

    pub fn cancel(&mut self, ep: EndpointId) {
        self.deadline[ep as usize] = NONE;
    }

    /// A `Timer` event for `ep` popped at `now`: returns whether the endpoint's timer
    /// is due (and disarms it), re-queuing the event if the deadline moved later.
    pub fn fire(&mut self, ep: EndpointId, now: Time, events: &mut EventQueue) -> bool {
        let i = ep as usize;
        if self.queued[i] == now {
            self.queued[i] = NONE;
        }
        let deadline = self.deadline[i];
        if deadline <= now {
            self.deadline[i] = NONE;
            return true;
        }
        if deadline != NONE && deadline < self.queued[i] {
            events.push(deadline, Event::Timer { endpoint: ep });
            self.queued[i] = deadline;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives the timer through the queue the way the run loop does.
    fn run(timers: &mut Timers, q: &mut EventQueue) -> Vec<Time> {
        let mut fired = vec![];
        while let Some((t, Event::Timer { endpoint })) = q.pop() {
            if timers.fire(endpoint, t, q) {
                fired.push(t);
            }
        }
        fired
    }

    #[test]
    fn rearming_later_costs_no_event_and_fires_once() {
        let mut q = EventQueue::new();
        let mut t = Timers::default();
        t.grow(1);
        t.set(0, 100, &mut q);
        t.set(0, 150, &mut q);
        t.set(0, 200, &mut q);
        assert_eq!(q.len(), 1);
        assert_eq!(run(&mut t, &mut q), vec![200]);
    }

    #[test]
    fn rearming_earlier_and_cancel() {
        let mut q = EventQueue::new();
        let mut t = Timers::default();
        t.grow(2);
        t.set(0, 100, &mut q);
        t.set(0, 50, &mut q);
        t.set(1, 70, &mut q);
        t.cancel(1);
        assert_eq!(run(&mut t, &mut q), vec![50]);
    }
}
