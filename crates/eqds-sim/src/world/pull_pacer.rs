//! One pull queue per receiving host (NDP's pull pacer; EQDS's receiving EQIF will
//! use the same clock).
//!
//! Every receiver endpoint on a host that owes its sender credit queues itself here.
//! The pacer releases one PULL per slot (one MTU serialisation time at the host's link
//! rate, scaled by the configured pull rate), taking endpoints round robin: an
//! endpoint that still owes credit after sending goes to the back. The endpoint
//! decides what its PULL says; the pacer only decides when and whose turn it is.

use crate::ids::EndpointId;
use crate::units::Time;
use std::collections::VecDeque;

pub struct PullPacer {
    /// Endpoints owing credit, in service order. Each appears at most once: an
    /// endpoint joins only when its count of owed PULLs goes from zero to one.
    waiting: VecDeque<EndpointId>,
    /// Time between two PULLs.
    slot: Time,
    /// Earliest time the next PULL may leave.
    next_free: Time,
    /// A `PullSlot` event for this host is in the event queue.
    scheduled: bool,
}

impl PullPacer {
    pub fn new(slot: Time) -> Self {
        PullPacer {
            waiting: VecDeque::new(),
            slot: slot.max(1),
            next_free: 0,
            scheduled: false,
        }
    }

    /// Queues `ep`; returns when a `PullSlot` event must be scheduled, if one is not
    /// already pending.
    pub fn join(&mut self, now: Time, ep: EndpointId) -> Option<Time> {
        self.waiting.push_back(ep);
        if self.scheduled {
            return None;
        }
        self.scheduled = true;
        Some(self.next_free.max(now))
    }

    /// The slot event fired: the endpoint whose turn it is, if any.
    pub fn take_turn(&mut self) -> Option<EndpointId> {
        self.scheduled = false;
        self.waiting.pop_front()
    }

    /// The endpoint given a turn at `now` sent a PULL; it goes to the back of the
    /// queue if it still owes credit.
    pub fn sent(&mut self, now: Time, ep: EndpointId, owes_more: bool) {
        self.next_free = now + self.slot;
        if owes_more {
            self.waiting.push_back(ep);
        }
    }

    /// After a turn: when the next slot event is due, if anyone is waiting.
    pub fn reschedule(&mut self, now: Time) -> Option<Time> {
        if self.waiting.is_empty() || self.scheduled {
            return None;
        }
        self.scheduled = true;
        Some(self.next_free.max(now))
    }

    /// The endpoint whose turn comes next, if any (for prefetching).
    #[inline]
    pub fn next_turn(&self) -> Option<EndpointId> {
        self.waiting.front().copied()
    }

    /// Starts loading the entry of the endpoint whose turn comes next.
    #[inline]
    pub fn prefetch_next_turn(&self) {
        if let Some(ep) = self.waiting.front() {
            crate::engine::prefetch(ep);
        }
    }

    /// Endpoints waiting for a turn (for tests and statistics).
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_one_pull_per_slot() {
        let mut p = PullPacer::new(100);
        assert_eq!(p.join(0, 7), Some(0));
        assert_eq!(p.join(0, 8), None);
        let mut served = vec![];
        let mut now = 0;
        // Endpoint 7 owes three PULLs, endpoint 8 one.
        let mut owed = [3u32, 1];
        while let Some(ep) = p.take_turn() {
            let i = (ep - 7) as usize;
            owed[i] -= 1;
            served.push((now, ep));
            p.sent(now, ep, owed[i] > 0);
            match p.reschedule(now) {
                Some(t) => now = t,
                None => break,
            }
        }
        assert_eq!(served, vec![(0, 7), (100, 8), (200, 7), (300, 7)]);
        // Idle since 300: a newcomer at 1000 is served at once.
        assert_eq!(p.join(1000, 9), Some(1000));
    }
}
