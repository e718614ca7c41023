//! A two-host network for testing one transport endpoint on its own: host 1 sends to
//! host 0 through one switch, a small loop runs the network's events, and what the
//! endpoint sends is collected where it reaches the switch instead of going on: the
//! test plays the far end. Used by the RoCE and packet-pair unit tests.

use crate::engine::{Event, SimRng};
use crate::flow::{FlowRecord, FlowSpec, Protocol};
use crate::ids::EndpointId;
use crate::net::packet::{Packet, PacketKind};
use crate::net::{LinkSpec, NetworkBuilder};
use crate::transport::{Ctx, Endpoint, Ends};
use crate::units::{Time, US};
use crate::world::World;
use rand::SeedableRng;

/// Host 1 sends to host 0: the sender is endpoint 0, the receiver endpoint 1.
pub const SENDER: EndpointId = 0;
pub const RECEIVER: EndpointId = 1;

/// The sender's addressing.
pub fn ends() -> Ends {
    Ends {
        flow: 0,
        host: 1,
        me: SENDER,
        peer_host: 0,
        peer: RECEIVER,
    }
}

pub struct Rig {
    pub world: World,
    pub now: Time,
    /// What the endpoint under test sent, with when it reached the switch.
    pub out: Vec<(Time, Packet)>,
}

impl Rig {
    /// Links of `rate_bps` and 1 us; one flow of `size` bytes and `protocol`.
    pub fn new(rate_bps: u64, protocol: Protocol, size: u64) -> Rig {
        let mut b = NetworkBuilder::for_tests(2);
        let link = LinkSpec {
            rate_bps,
            latency: US,
        };
        // One switch, as `single_switch` builds it.
        let sw = b.switch(0, 2, 1, 0, 1);
        for h in 0..2 {
            b.link(h, b.down_port(sw, h), link, "host_up", "switch_down");
        }
        let mut world = World::new(b.finish(2), SimRng::seed_from_u64(1), 1);
        let spec = FlowSpec {
            src: 1,
            dst: 0,
            size: Some(size),
            start: 0,
            protocol,
            origin: 0,
            legacy: false,
        };
        world.flows.push(FlowRecord::new(spec, SENDER, RECEIVER));
        world.timers.grow(2);
        Rig {
            world,
            now: 0,
            out: Vec::new(),
        }
    }

    pub fn ctx(&mut self, me: EndpointId) -> Ctx<'_> {
        Ctx {
            now: self.now,
            me,
            world: &mut self.world,
        }
    }

    /// Hands `pkt` to the endpoint under test (`me`) at the rig's time.
    pub fn deliver(&mut self, ep: &mut dyn Endpoint, me: EndpointId, pkt: Packet) {
        let id = self.world.pkts.alloc(pkt);
        ep.on_packet(&mut self.ctx(me), id);
    }

    /// Runs the network and `ep`'s timer until `end`, collecting what reaches the
    /// switch; the clock stops at `end`. (A marker event stops it: the calendar
    /// queue must not be popped past the time the test goes on from.)
    pub fn run(&mut self, ep: &mut dyn Endpoint, me: EndpointId, end: Time) {
        self.world
            .events
            .push(end, Event::Sample { series: u8::MAX });
        while let Some((t, e)) = self.world.events.pop() {
            self.now = t;
            match e {
                Event::Arrive { pkt, .. } => {
                    self.out.push((t, *self.world.pkts.get(pkt)));
                    self.world.pkts.free(pkt);
                }
                Event::TxDone { port } => self.world.tx_done(t, port),
                Event::Timer { endpoint } => {
                    if self.world.timers.fire(endpoint, t, &mut self.world.events) {
                        ep.on_timer(&mut self.ctx(me));
                    }
                }
                Event::Sample { .. } => break,
                _ => unreachable!("the rig makes no other events"),
            }
        }
        self.now = end;
    }

    /// Everything collected so far, taken out.
    pub fn take(&mut self) -> Vec<(Time, Packet)> {
        std::mem::take(&mut self.out)
    }

    /// The packets of `kind` collected so far, taken out.
    pub fn take_of(&mut self, kind: PacketKind) -> Vec<(Time, Packet)> {
        let (mine, rest) = std::mem::take(&mut self.out)
            .into_iter()
            .partition(|(_, p)| p.kind == kind);
        self.out = rest;
        mine
    }
}
