//! The closed loop: every completion of a client's download starts its next one,
//! from a fresh random server, after the think time.

use crate::engine::SimRng;
use crate::flow::{FlowRecord, FlowSpec};
use crate::ids::HostId;
use crate::scenario::Protocol;
use crate::units::Time;
use rand::Rng;

pub struct ClosedLoop {
    n_hosts: u32,
    size: u64,
    think_time: Time,
    protocol: Protocol,
}

impl ClosedLoop {
    pub fn new(n_hosts: u32, size: u64, think_time: Time, protocol: Protocol) -> Self {
        ClosedLoop {
            n_hosts,
            size,
            think_time,
            protocol,
        }
    }

    /// A download by `client` from a random other host, starting at `start`.
    pub fn request(&self, rng: &mut SimRng, client: HostId, start: Time) -> FlowSpec {
        let mut server = rng.random_range(0..self.n_hosts - 1);
        if server >= client {
            server += 1;
        }
        FlowSpec {
            src: server,
            dst: client,
            size: Some(self.size),
            start,
            protocol: self.protocol,
            origin: 0,
        }
    }

    /// The next request after `done` (one of this loop's flows) completed at `now`.
    pub fn next(&self, rng: &mut SimRng, done: &FlowRecord, now: Time) -> FlowSpec {
        let mut next = self.request(rng, done.spec.dst, now + self.think_time);
        next.origin = done.spec.origin;
        next
    }
}
