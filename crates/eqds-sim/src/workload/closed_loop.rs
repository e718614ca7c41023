//! The closed loop: every completion of a client's download starts its next one,
//! after the think time, from a fresh random server or from the client's own server
//! when clients are bound to servers.

use crate::engine::SimRng;
use crate::flow::{FlowRecord, FlowSpec, Protocol};
use crate::ids::HostId;
use crate::units::Time;
use rand::Rng;

pub struct ClosedLoop {
    n_hosts: u32,
    size: u64,
    think_time: Time,
    protocol: Protocol,
    /// `server_of[client]`: the server a bound client always downloads from.
    server_of: Vec<Option<HostId>>,
}

impl ClosedLoop {
    pub fn new(n_hosts: u32, size: u64, think_time: Time, protocol: Protocol) -> Self {
        ClosedLoop {
            n_hosts,
            size,
            think_time,
            protocol,
            server_of: Vec::new(),
        }
    }

    /// Binds `client` to `server`: all its downloads come from there.
    pub fn bind(&mut self, client: HostId, server: HostId) {
        let i = client as usize;
        if self.server_of.len() <= i {
            self.server_of.resize(i + 1, None);
        }
        self.server_of[i] = Some(server);
    }

    /// A download by `client` from its bound server or a random other host,
    /// starting at `start`.
    pub fn request(&self, rng: &mut SimRng, client: HostId, start: Time) -> FlowSpec {
        let server = match self.server_of.get(client as usize).copied().flatten() {
            Some(s) => s,
            None => {
                let mut server = rng.random_range(0..self.n_hosts - 1);
                if server >= client {
                    server += 1;
                }
                server
            }
        };
        FlowSpec {
            src: server,
            dst: client,
            size: Some(self.size),
            start,
            protocol: self.protocol,
            origin: 0,
            legacy: false,
        }
    }

    /// The next request after `done` (one of this loop's flows) completed at `now`.
    pub fn next(&self, rng: &mut SimRng, done: &FlowRecord, now: Time) -> FlowSpec {
        let mut next = self.request(rng, done.spec.dst, now + self.think_time);
        next.origin = done.spec.origin;
        next.legacy = done.spec.legacy;
        next
    }
}
