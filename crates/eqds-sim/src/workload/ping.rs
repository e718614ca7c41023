//! Ping: one host sends a small request to another every `interval`, and the other
//! answers each request the moment it has arrived, as ICMP echo does (the EQDS paper's
//! Figures 10 and 16 measure latency this way). Requests go out on schedule whatever
//! became of earlier ones, so a lost request or reply loses that ping only.
//!
//! Both are ordinary one-way flows in `flows.csv`, tagged with the workload's index: a
//! reply starts at exactly the time its request ended, so a ping's round trip is its
//! reply's end minus its request's start (`eqds_lab.ping_rtts` pairs them).

use crate::flow::{FlowRecord, FlowSpec, Protocol};
use crate::ids::HostId;
use crate::units::Time;

pub struct Ping {
    /// The host that sends requests and times the replies.
    pub pinger: HostId,
    /// The host that answers.
    pub target: HostId,
    /// Bytes of each request and each reply.
    pub size: u64,
    pub protocol: Protocol,
}

impl Ping {
    /// The requests: one at `start`, then one every `interval`, `count` in all.
    pub fn requests(&self, start: Time, interval: Time, count: u64) -> Vec<FlowSpec> {
        (0..count)
            .map(|k| self.flow(self.pinger, self.target, start + k * interval))
            .collect()
    }

    /// The reply to `done` if it is a request (it ended at `now`); nothing for a reply.
    pub fn reply(&self, done: &FlowRecord, now: Time) -> Option<FlowSpec> {
        (done.spec.src == self.pinger).then(|| FlowSpec {
            origin: done.spec.origin,
            legacy: done.spec.legacy,
            ..self.flow(self.target, self.pinger, now)
        })
    }

    fn flow(&self, src: HostId, dst: HostId, start: Time) -> FlowSpec {
        FlowSpec {
            src,
            dst,
            size: Some(self.size),
            start,
            protocol: self.protocol,
            origin: 0,
            legacy: false,
        }
    }
}
