//! The network model: packets, ports with their queue disciplines, switches, and the
//! topologies that wire them together.

pub mod iofd;
pub mod packet;
pub mod pfc;
pub mod port;
pub mod queue;
pub mod resequencer;
pub mod switch;
pub mod topology;
pub mod trimming_hw;

use crate::ids::{HostId, Node, PacketId, PortId, SwitchId};
use port::{Handback, Port, PortCtx};
use queue::QueueSpec;
use switch::{LoadBalancing, Switch};

/// Rate and latency of one link (both directions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSpec {
    pub rate_bps: u64,
    pub latency: crate::units::Time,
}

/// A host's own link, replacing the one its topology gives it (`[host] links`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostLinkOverride {
    pub rate_bps: u64,
    /// `None` keeps the topology's latency.
    pub latency: Option<crate::units::Time>,
}

/// All ports and switches of a run, in arenas. Host `h`'s NIC is port `h`.
pub struct Network {
    pub ports: Vec<Port>,
    /// Port `p`'s queue discipline is `queues[p]`. Kept beside the ports rather than
    /// in them: this array of pointers is small enough to stay in cache, so finding a
    /// port's queue (to prefetch it) does not wait for the port itself to load.
    pub queues: Vec<Box<queue::DynQueue>>,
    pub switches: Vec<Switch>,
    pub n_hosts: u32,
    pub load_balancing: LoadBalancing,
    /// Names of the tiers that `Port::tier` indexes (e.g. "host_up", "tor_up").
    pub tier_names: Vec<&'static str>,
    /// Hosts under each ToR (leaf), for "exclude same rack" workloads.
    pub hosts_per_rack: u32,
    /// Per port, the port at the other end of its link (the way back).
    pub reverse: Vec<PortId>,
    /// Priority flow control, if the scenario turns it on (`pfc::fabric`).
    pub pfc: Option<Box<pfc::fabric::PfcFabric>>,
    /// Blitz's in-order flow deflection, if the scenario turns it on (`iofd`).
    pub iofd: Option<Box<iofd::Iofd>>,
    /// The hardware trimming switch (`[switch] model`), unless switches are the
    /// output-queued ideal (`trimming_hw`).
    pub trimming_hw: Option<Box<trimming_hw::TrimmingHw>>,
}

impl Network {
    /// The NIC port of a host.
    #[inline]
    pub fn host_port(&self, host: HostId) -> PortId {
        host
    }

    /// Offers a packet to a port. A header the port's discipline returns to its
    /// sender is turned around and routed by the same switch; if that fails too (or
    /// the port is a host's), it is dropped and counted there.
    ///
    /// The rest of the run is passed in (`ctx`) rather than reached through a
    /// `World`, so that whoever holds the network and those pieces, the EQDS layer
    /// included, can put packets on the wire.
    #[inline]
    pub fn enqueue(&mut self, port: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        match self.offer(port, pkt, ctx) {
            None => {}
            Some(Handback::Returned(returned)) => self.return_to_sender(port, returned, ctx),
            Some(Handback::Deflected(p)) => {
                // Only a hardware switch's traffic manager deflects, and packets reach
                // it through `forward_hw`, which takes the deflection: never here.
                debug_assert!(false, "a deflection outside a hardware switch's ingress");
                self.drop_at(port, p, ctx);
            }
        }
    }

    /// Counts the drop of `pkt` at `port` and frees it.
    pub(crate) fn drop_at(&mut self, port: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        let stats = &mut self.ports[port as usize].stats;
        stats.drops += 1;
        stats.dropped_bytes += ctx.pkts.get(pkt).size as u64;
        ctx.pkts.free(pkt);
    }

    /// Turns round a header `port`'s discipline refused and routes it back towards
    /// its sender from the same switch; if that fails too (or `port` is a host's),
    /// it is dropped and counted at `port`.
    pub(crate) fn return_to_sender(&mut self, port: PortId, returned: PacketId, ctx: &mut PortCtx) {
        let packet = ctx.pkts.get_mut(returned);
        packet.reverse();
        let back = match self.ports[port as usize].owner {
            Node::Switch(s) => {
                let sw = &self.switches[s as usize];
                Some(sw.route(packet.dst, packet.entropy, self.load_balancing))
            }
            Node::Host(_) => None,
        };
        let bounced_again = match back {
            Some(out) => match self.offer(out, returned, ctx) {
                None => None,
                Some(Handback::Returned(p) | Handback::Deflected(p)) => Some(p),
            },
            None => Some(returned),
        };
        if let Some(p) = bounced_again {
            // A returned header never bounces twice; drop it where it stands.
            self.drop_at(port, p, ctx);
        }
    }

    /// Offers a packet to one port's discipline: what it hands back, if anything.
    #[inline]
    pub(crate) fn offer(
        &mut self,
        port: PortId,
        pkt: PacketId,
        ctx: &mut PortCtx,
    ) -> Option<Handback> {
        let queue = &mut *self.queues[port as usize];
        self.ports[port as usize].enqueue(queue, port, pkt, ctx)
    }

    /// The port's transmitter is free again: the next packet its discipline picks
    /// goes on the wire.
    #[inline]
    pub fn tx_done(&mut self, port: PortId, ctx: &mut PortCtx) {
        let queue = &mut *self.queues[port as usize];
        self.ports[port as usize].on_tx_done(queue, port, ctx);
        if self.ports[port as usize].pfc_flags & port::pfc_flags::RECORD_TX != 0 {
            self.after_transmit(port, ctx);
        }
    }

    /// Adds an unconnected port owned by `owner` (the builder wires it; a hardware
    /// switch's recirculation ports are added after the topology).
    pub(crate) fn push_port(&mut self, owner: Node, queue: Box<queue::DynQueue>) -> PortId {
        let bypass_idle = queue.bypass_when_idle();
        let notify_departures = queue.wants_departures();
        self.ports.push(Port {
            rate_bps: 1,
            latency: 0,
            owner,
            peer: UNCONNECTED,
            tier: 0,
            busy_until: 0,
            tx_done_pending: false,
            bypass_idle,
            notify_departures,
            paused: 0,
            pfc_flags: 0,
            last_tx: PacketId::MAX,
            stats: Default::default(),
        });
        self.queues.push(queue);
        self.reverse.push(PortId::MAX);
        (self.ports.len() - 1) as PortId
    }

    /// Index of a tier name, registering it on first use.
    pub(crate) fn tier(&mut self, name: &'static str) -> u8 {
        if let Some(i) = self.tier_names.iter().position(|n| *n == name) {
            return i as u8;
        }
        self.tier_names.push(name);
        (self.tier_names.len() - 1) as u8
    }

    /// The rack (ToR) a host sits under.
    pub fn rack_of(&self, host: HostId) -> u32 {
        host / self.hosts_per_rack
    }

    /// Link rate of a host's NIC.
    pub fn host_rate(&self, host: HostId) -> u64 {
        self.ports[host as usize].rate_bps
    }

    /// Equal-cost paths from a host to the farthest hosts: the product of the
    /// uplink counts met going up, times the equal-cost down ports of the top tier
    /// (`clos3`'s spines; 1 elsewhere). With spraying, path ids `0..path_count()`
    /// are distinct.
    pub fn path_count(&self) -> u32 {
        let mut paths: u32 = 1;
        let mut node = self.ports[self.host_port(0) as usize].peer;
        let mut seen = Vec::new();
        while let Node::Switch(s) = node {
            let sw = &self.switches[s as usize];
            // A dumbbell's two switches are each other's uplink: stop going round.
            if sw.n_up == 0 || seen.contains(&s) {
                paths = paths.saturating_mul(sw.down_width);
                break;
            }
            seen.push(s);
            paths = paths.saturating_mul(sw.n_up);
            node = self.ports[sw.first_up as usize].peer;
        }
        paths
    }

    /// Time for one packet of `size` bytes to go from `src` to `dst` through empty
    /// queues (serialisation at every hop plus every link's latency), following the
    /// path that load-balancing input 0 picks.
    pub fn unloaded_delay(&self, src: HostId, dst: HostId, size: u32) -> crate::units::Time {
        let mut total = 0;
        let mut port = self.host_port(src);
        loop {
            let p = &self.ports[port as usize];
            total += crate::units::serialisation_time(size, p.rate_bps) + p.latency;
            match p.peer {
                Node::Host(_) => return total,
                Node::Switch(s) => {
                    port = self.switches[s as usize].route(dst, 0, self.load_balancing)
                }
            }
        }
    }

    /// Base RTT between two hosts: a `data`-byte packet there, a `control`-byte one back.
    pub fn base_rtt(&self, a: HostId, b: HostId, data: u32, control: u32) -> crate::units::Time {
        self.unloaded_delay(a, b, data) + self.unloaded_delay(b, a, control)
    }

    /// Round trip of a `data`-byte packet there and a `control`-byte one back when
    /// each waits behind one `data`-byte packet at every hop: the loop a receiver's
    /// credit runs in while every host both sends and receives (spraying leaves about
    /// a packet of transient queue at each port, and PULLs meet the reverse
    /// direction's data).
    pub fn loaded_rtt(&self, a: HostId, b: HostId, data: u32, control: u32) -> crate::units::Time {
        self.unloaded_delay(a, b, 2 * data) + self.unloaded_delay(b, a, control + data)
    }

    /// The largest base RTT between host 0 and any other host: with the topologies we
    /// build, the longest path of the network.
    pub fn max_base_rtt(&self, data: u32, control: u32) -> crate::units::Time {
        self.max_over_paths(|h| self.base_rtt(0, h, data, control))
    }

    /// [`Network::loaded_rtt`] of the longest path.
    pub fn max_loaded_rtt(&self, data: u32, control: u32) -> crate::units::Time {
        self.max_over_paths(|h| self.loaded_rtt(0, h, data, control))
    }

    /// Largest `rtt_to(h)` over one host `h` per rack (and the last host): every
    /// path length there is from host 0.
    fn max_over_paths(&self, rtt_to: impl Fn(HostId) -> crate::units::Time) -> crate::units::Time {
        (1..self.n_hosts)
            .step_by(self.hosts_per_rack.max(1) as usize)
            .chain(std::iter::once(self.n_hosts - 1))
            .map(rtt_to)
            .max()
            .unwrap_or(0)
    }
}

/// Assembles a [`Network`]: hosts first (so host `h` owns port `h`), then switches,
/// each with its down ports followed by its up ports, then links between them.
pub struct NetworkBuilder {
    net: Network,
    host_queue: QueueSpec,
    switch_queue: QueueSpec,
    /// Queue of switch ports whose link goes to a host, if not `switch_queue`.
    edge_queue: Option<QueueSpec>,
    /// Queue of the switch ports of a tier, if not `edge_queue` or `switch_queue`.
    tier_queues: Vec<(String, QueueSpec)>,
    /// Forwarding latency added to links that end at a switch.
    switch_latency: crate::units::Time,
    next_salt: Box<dyn FnMut() -> u32>,
    /// Per host, the rate (and latency, if given) its link has instead of the one
    /// the topology builder asks for (`[host] links`).
    host_links: Vec<Option<HostLinkOverride>>,
    /// Seed of the queues' hash functions (SFQ's, AFQ's sketch), mixed with each
    /// port's index: the run's seed, so drawing nothing from its generator.
    queue_seed: u64,
}

const UNCONNECTED: Node = Node::Host(u32::MAX);

impl NetworkBuilder {
    pub fn new(
        n_hosts: u32,
        host_queue: QueueSpec,
        switch_queue: QueueSpec,
        switch_latency: crate::units::Time,
        load_balancing: LoadBalancing,
        next_salt: Box<dyn FnMut() -> u32>,
    ) -> Self {
        let mut b = NetworkBuilder {
            net: Network {
                ports: Vec::new(),
                queues: Vec::new(),
                switches: Vec::new(),
                n_hosts,
                load_balancing,
                tier_names: Vec::new(),
                hosts_per_rack: 1,
                reverse: Vec::new(),
                pfc: None,
                iofd: None,
                trimming_hw: None,
            },
            host_queue,
            switch_queue,
            edge_queue: None,
            tier_queues: Vec::new(),
            switch_latency,
            next_salt,
            host_links: Vec::new(),
            queue_seed: 0,
        };
        for h in 0..n_hosts {
            let q = b.host_queue.build_seeded(b.port_seed(h));
            b.push_port(Node::Host(h), q);
        }
        b
    }

    /// The hash seed of port `port`'s queue.
    fn port_seed(&self, port: PortId) -> u64 {
        queue::count_min::mix64(self.queue_seed ^ queue::count_min::mix64(u64::from(port)))
    }

    /// Seeds the queues' hash functions from `seed` (the run's). Hosts' queues were
    /// built already, so they are rebuilt (before any packet exists).
    pub fn with_queue_seed(mut self, seed: u64) -> Self {
        self.queue_seed = seed;
        for h in 0..self.net.n_hosts {
            let q = self.host_queue.build_seeded(self.port_seed(h));
            self.set_queue(h, q);
        }
        self
    }

    fn push_port(&mut self, owner: Node, queue: Box<queue::DynQueue>) -> PortId {
        self.net.push_port(owner, queue)
    }

    /// Replaces port `port`'s discipline (before the run starts).
    fn set_queue(&mut self, port: PortId, queue: Box<queue::DynQueue>) {
        let p = &mut self.net.ports[port as usize];
        p.bypass_idle = queue.bypass_when_idle();
        p.notify_departures = queue.wants_departures();
        self.net.queues[port as usize] = queue;
    }

    /// Index of a tier name, registering it on first use.
    fn tier(&mut self, name: &'static str) -> u8 {
        self.net.tier(name)
    }

    /// Adds a switch reaching hosts `lo..lo + n_down * span` downwards.
    pub fn switch(
        &mut self,
        lo: HostId,
        n_down: u32,
        span: u32,
        n_up: u32,
        path_divisor: u32,
    ) -> SwitchId {
        self.switch_with_groups(lo, n_down, 1, span, n_up, path_divisor)
    }

    /// Adds a switch with `groups` groups of `down_width` equal-cost down ports,
    /// group `g` reaching hosts `lo + g * span ..` (see `net::switch`). Only a
    /// switch without uplinks may have `down_width > 1`: its spraying digit then
    /// picks the port within a group.
    pub fn switch_with_groups(
        &mut self,
        lo: HostId,
        groups: u32,
        down_width: u32,
        span: u32,
        n_up: u32,
        path_divisor: u32,
    ) -> SwitchId {
        assert!(
            down_width >= 1 && (down_width == 1 || n_up == 0),
            "parallel down ports are for switches without uplinks"
        );
        let n_down = groups * down_width;
        let id = self.net.switches.len() as SwitchId;
        let first_down = self.net.ports.len() as PortId;
        for _ in 0..n_down + n_up {
            let port = self.net.ports.len() as PortId;
            let q = self.switch_queue.build_seeded(self.port_seed(port));
            self.push_port(Node::Switch(id), q);
        }
        let salt = (self.next_salt)();
        self.net.switches.push(Switch {
            first_down,
            n_down,
            down_width,
            first_up: first_down + n_down,
            n_up,
            lo,
            hi: lo + groups * span,
            span,
            path_divisor: path_divisor.max(1),
            salt,
        });
        id
    }

    /// Port `i` going down from switch `sw`.
    pub fn down_port(&self, sw: SwitchId, i: u32) -> PortId {
        let s = &self.net.switches[sw as usize];
        debug_assert!(i < s.n_down);
        s.first_down + i
    }

    /// Port `i` going up from switch `sw`.
    pub fn up_port(&self, sw: SwitchId, i: u32) -> PortId {
        let s = &self.net.switches[sw as usize];
        debug_assert!(i < s.n_up);
        s.first_up + i
    }

    /// Gives switch ports that face hosts (the last hop) the discipline `queue`
    /// instead of the switches' own (`[switch] edge_queue`).
    pub fn with_edge_queue(mut self, queue: Option<QueueSpec>) -> Self {
        self.edge_queue = queue;
        self
    }

    /// Gives the switch ports of each named tier the discipline given for it
    /// (`[switch] tier_queue`), over `edge_queue` and the switches' own.
    pub fn with_tier_queues(mut self, queues: Vec<(String, QueueSpec)>) -> Self {
        self.tier_queues = queues;
        self
    }

    /// Gives hosts links of their own (`overrides[h]`), whatever the topology
    /// builder asks for theirs.
    pub fn with_host_links(mut self, overrides: Vec<Option<HostLinkOverride>>) -> Self {
        self.host_links = overrides;
        self
    }

    /// Connects port `a` and port `b` with a full-duplex link.
    pub fn link(
        &mut self,
        a: PortId,
        b: PortId,
        mut spec: LinkSpec,
        tier_ab: &'static str,
        tier_ba: &'static str,
    ) {
        let (ta, tb) = (self.tier(tier_ab), self.tier(tier_ba));
        let (owner_a, owner_b) = (
            self.net.ports[a as usize].owner,
            self.net.ports[b as usize].owner,
        );
        let host = match (owner_a, owner_b) {
            (Node::Host(h), _) | (_, Node::Host(h)) => Some(h),
            _ => None,
        };
        // The port's own discipline if its tier or its place (facing a host) has one;
        // the switches' default was installed when the port was made.
        for (port, owner, peer, tier) in [
            (a, owner_a, owner_b, tier_ab),
            (b, owner_b, owner_a, tier_ba),
        ] {
            if !matches!(owner, Node::Switch(_)) {
                continue;
            }
            let spec = match self.tier_queues.iter().find(|(t, _)| t == tier) {
                Some((_, q)) => Some(q),
                None if matches!(peer, Node::Host(_)) => self.edge_queue.as_ref(),
                None => None,
            };
            if let Some(spec) = spec {
                let q = spec.build_seeded(self.port_seed(port));
                self.set_queue(port, q);
            }
        }
        if let Some(&Some(o)) = host.and_then(|h| self.host_links.get(h as usize)) {
            spec.rate_bps = o.rate_bps;
            spec.latency = o.latency.unwrap_or(spec.latency);
        }
        let latency_to = |n: Node| {
            spec.latency
                + if matches!(n, Node::Switch(_)) {
                    self.switch_latency
                } else {
                    0
                }
        };
        let (lat_ab, lat_ba) = (latency_to(owner_b), latency_to(owner_a));
        let pa = &mut self.net.ports[a as usize];
        pa.peer = owner_b;
        pa.rate_bps = spec.rate_bps;
        pa.latency = lat_ab;
        pa.tier = ta;
        let pb = &mut self.net.ports[b as usize];
        pb.peer = owner_a;
        pb.rate_bps = spec.rate_bps;
        pb.latency = lat_ba;
        pb.tier = tb;
        self.net.reverse[a as usize] = b;
        self.net.reverse[b as usize] = a;
    }

    pub fn finish(mut self, hosts_per_rack: u32) -> Network {
        debug_assert!(
            self.net.ports.iter().all(|p| p.peer != UNCONNECTED),
            "a port was left unconnected"
        );
        self.net.hosts_per_rack = hosts_per_rack.max(1);
        self.net
    }
}

#[cfg(test)]
impl NetworkBuilder {
    /// For unit tests: `n_hosts` hosts, unlimited drop-tail queues everywhere, no
    /// switch latency, ECMP with every switch's salt 0.
    pub(crate) fn for_tests(n_hosts: u32) -> NetworkBuilder {
        let unlimited = QueueSpec::DropTail {
            limit_packets: None,
            limit_bytes: None,
        };
        NetworkBuilder::new(
            n_hosts,
            unlimited.clone(),
            unlimited,
            0,
            LoadBalancing::Ecmp,
            Box::new(|| 0),
        )
    }
}
