//! A run: the world built from a scenario (`build`), each flow's endpoints made when
//! it starts (`endpoints`), time series sampled (`sample`), and here the event loop,
//! which hands every event to the network, the EQDS layer or an endpoint.
//!
//! The world (`crate::world`) is what endpoints see; this module owns the endpoints
//! themselves and so depends on both, and nothing below depends on it.

mod build;
mod endpoints;
mod sample;

pub use crate::output::{RunStats, StopReason};
pub use build::build_network;

use crate::engine::Event;
use crate::eqds::EqdsLayer;
use crate::flow::{FlowRecord, FlowSpec};
use crate::ids::{EndpointId, FlowId, HostId, Node, PacketId, PortId, SwitchId};
use crate::net::packet::flags;
use crate::net::port::Port;
use crate::net::Network;
use crate::transport::{Ctx, Endpoint};
use crate::units::Time;
use crate::workload::FollowUp;
use crate::world::{PullPacer, World};
use endpoints::EndpointFactory;
use sample::Sampler;

/// One run: its world, the endpoints of the flows under way, and the loop's state.
pub struct Simulation {
    world: World,
    /// By endpoint id; `None` before a flow starts and after it completes.
    endpoints: Vec<Option<Box<dyn Endpoint>>>,
    /// Every protocol's parameters, to make each flow's endpoints with.
    factory: EndpointFactory,
    /// Per workload, what adds flows as its flows complete (closed loops, pings).
    follow_ups: Vec<Option<FollowUp>>,
    stop_time: Time,
    stop_when_complete: bool,
    warmup: Time,
    warmed_up: bool,
    /// See [`RunStats::warmed_at`].
    warmed_at: Option<(u64, std::time::Instant)>,
    /// Finite flows not yet complete.
    unfinished: u64,
    /// Flows that never end exist (or a closed loop keeps making flows).
    endless: bool,
    now: Time,
    events_processed: u64,
    sampler: Sampler,
    /// Load ahead what the next events will touch (`prefetch_ahead`): on for a
    /// network of at least `LOOK_AHEAD_MIN_HOSTS` hosts.
    look_ahead: bool,
    /// `[output] event_costs` (`perf.json`).
    #[cfg(feature = "event-costs")]
    timing: crate::engine::event_costs::Timing,
}

/// Hosts from which the run loop loads ahead what the next events will touch. On a
/// small network the look-ahead costs more than it saves: its state nearly fits the
/// caches, and the loop's stages cost about 30 ns an event to save 10 in the
/// handlers (EQDS permutation at k = 8, 128 hosts: 26% faster without; NDP 28%). From
/// k = 16 (1,024 hosts) on it pays: 6% there, 41% at k = 32 (BENCHMARKS.md, "Fifth
/// pass"). It starts to pay between 432 and 686 hosts (k = 12 and 14): at 432, EQDS
/// gains 1-5% from it and NDP loses 9-11%; at 686 both gain 3-9% ("Sixth pass").
pub const LOOK_AHEAD_MIN_HOSTS: u32 = 512;

impl Simulation {
    pub fn network(&self) -> &Network {
        &self.world.net
    }

    pub fn flows(&self) -> &[FlowRecord] {
        &self.world.flows
    }

    /// RoCE senders' rate changes, if the scenario asked for `rates.csv`.
    pub fn rate_log(&self) -> Option<&[(Time, FlowId, f64)]> {
        self.world.rate_log.as_deref()
    }

    /// The data packets that reached their hosts, if `[output] arrivals` asked.
    pub fn arrivals(&self) -> Option<&crate::world::arrivals::ArrivalLog> {
        self.world.arrival_log.as_deref()
    }

    /// The EQDS layer, if any host runs EQDS.
    pub fn eqds(&self) -> Option<&EqdsLayer> {
        self.world.eqds.as_deref()
    }

    /// EQDS counters for the run summary, if the run used EQDS.
    pub fn eqds_summary(&self) -> Option<serde_json::Value> {
        let eqds = self.world.eqds.as_ref()?;
        Some(serde_json::json!({
            // The window as resolved (the default depends on the topology); with
            // per-tunnel windows (NICs of several rates) the fastest host's.
            "window_packets": eqds.settings.config.window,
            "per_tunnel_windows": eqds.settings.per_tunnel_windows,
            "packets": eqds.counters,
            "tunnels": eqds.tunnel_totals(),
            "peak_in_flight_bytes_per_host": eqds.hosts.iter().map(|h| h.host.uplink().peak_in_flight_bytes()).max(),
        }))
        .map(|mut v| {
            // Only runs whose receivers may send them count spare PULLs.
            if eqds.settings.config.spare_pulls {
                let spare: u64 = eqds.hosts.iter().map(|h| h.host.credit().spare_pulls_sent()).sum();
                v["spare_pulls"] = spare.into();
            }
            // Only runs with an RDMA EQIF report one.
            if let Some(rdma) = eqds.rdma_totals(self.now) {
                v["rdma"] = serde_json::to_value(rdma).unwrap_or_default();
            }
            v
        })
    }

    /// RoCE and DCQCN totals for the run summary, if any flow ran RoCE.
    pub fn roce_summary(&self) -> Option<serde_json::Value> {
        let roce = crate::flow::Protocol::Roce;
        if !self.world.flows.iter().any(|f| f.spec.protocol == roce) {
            return None;
        }
        let mut summary = serde_json::to_value(self.world.roce).ok()?;
        if let Some(dasr) = &self.world.dasr {
            summary["dasr"] = serde_json::to_value(dasr.counters).ok()?;
        }
        Some(summary)
    }

    pub fn now(&self) -> Time {
        self.now
    }

    pub fn stop_time(&self) -> Time {
        self.stop_time
    }

    pub fn warmup(&self) -> Time {
        self.warmup
    }

    /// Whether the run loop loads ahead what the next events will touch (see
    /// [`LOOK_AHEAD_MIN_HOSTS`]).
    pub fn looks_ahead(&self) -> bool {
        self.look_ahead
    }

    /// Runs to the end. `progress(now, events)` is called every 65,536 events.
    pub fn run(&mut self, progress: &mut dyn FnMut(Time, u64)) -> Result<RunStats, String> {
        if self.warmed_up && self.warmed_at.is_none() {
            // No warm-up: the rate past start-up is the event loop's.
            self.warmed_at = Some((self.events_processed, std::time::Instant::now()));
            #[cfg(feature = "event-costs")]
            self.timing.warmed();
        }
        let reason = if self.look_ahead {
            self.event_loop::<true>(progress)?
        } else {
            self.event_loop::<false>(progress)?
        };
        let end_time = match reason {
            StopReason::Time => self.stop_time,
            _ => self.now,
        };
        if !self.warmed_up {
            // The run ended before warm-up did: measure over nothing rather than lie.
            for f in &mut self.world.flows {
                f.received_at_warmup = f.received;
            }
        }
        self.now = end_time;
        self.sampler.finish(&self.world.net.tier_names)?;
        Ok(RunStats {
            end_time,
            reason,
            events: self.events_processed,
            peak_packets: self.world.pkts.peak(),
            warmed_at: self.warmed_at,
            #[cfg(feature = "event-costs")]
            event_costs: self.timing.finish(),
        })
    }

    /// The event loop: pops and handles events until the run stops, loading ahead
    /// what the next events will touch if `LOOK_AHEAD` (see `LOOK_AHEAD_MIN_HOSTS`).
    /// Two copies, so that neither pays a test per event for the choice.
    fn event_loop<const LOOK_AHEAD: bool>(
        &mut self,
        progress: &mut dyn FnMut(Time, u64),
    ) -> Result<StopReason, String> {
        Ok(loop {
            if self.stop_when_complete && !self.endless && self.unfinished == 0 {
                break StopReason::FlowsComplete;
            }
            let Some((t, event)) = self.world.events.pop() else {
                break StopReason::Idle;
            };
            if t > self.stop_time {
                break StopReason::Time;
            }
            if !self.warmed_up && t >= self.warmup {
                self.warmed_up = true;
                self.warmed_at = Some((self.events_processed, std::time::Instant::now()));
                #[cfg(feature = "event-costs")]
                self.timing.warmed();
                for f in &mut self.world.flows {
                    f.received_at_warmup = f.received;
                }
            }
            self.now = t;
            self.events_processed += 1;
            if LOOK_AHEAD {
                self.prefetch_ahead();
            }
            if self.events_processed & 0xffff == 0 {
                progress(t, self.events_processed);
            }
            #[cfg(feature = "event-costs")]
            let handled = if self.timing.on
                && self.warmed_up
                && crate::engine::event_costs::EventCosts::samples(self.events_processed)
            {
                self.dispatch_timed(t, event)
            } else {
                self.dispatch(t, event)
            };
            #[cfg(not(feature = "event-costs"))]
            let handled = self.dispatch(t, event);
            handled.map_err(|e| format!("writing a time series: {e}"))?;
            if !self.world.completed.is_empty() {
                self.on_completions(t);
            }
        })
    }

    /// Starts loading what the next events will touch, in stages so that each load
    /// has time to arrive before the next stage needs it. Counting the next event as
    /// one ahead:
    ///
    /// - `PACKET_LEAD + 1` ahead: the packet of an arrival (and at a host, its NIC
    ///   port and the address of that port's queue; under EQDS also the packet's
    ///   EQDS header and the host's EQDS state); the port of a transmitter freeing
    ///   up and its queue's state; for an EQDS timer, the host's EQDS state and NIC
    ///   as for an arrival; for a pull slot, the host's pull pacer and NIC; for an
    ///   endpoint's timer, its entry in the endpoint table.
    /// - `EQDS_STATE_LEAD + 1` ahead: for an arrival at an EQDS host and an EQDS
    ///   timer, the host's EQDS state that lives apart from its struct (its first
    ///   tunnel and peer, its protocol queues: `Host::hot_state`), found through
    ///   the struct loaded one event earlier.
    /// - `ROUTE_LEAD + 2` ahead: a host's NIC queue state (its address loaded by
    ///   then) for an arrival at the host, an EQDS timer or a pull slot, as the host
    ///   answers or pumps; for an arrival for an endpoint, the endpoint's entry in
    ///   the table and its flow's record (the packet naming them is loaded); for a
    ///   pull slot, the pacer's next endpoint in its queue; for an endpoint's timer,
    ///   the endpoint.
    /// - `ROUTE_LEAD + 1` ahead: for an arrival at a switch, the output port it will
    ///   be routed to and that port's queue state; for an arrival at a host for an
    ///   endpoint, and for a pull slot, the endpoint.
    /// - The next event: the head of the freeing port's queue.
    ///
    /// Instructions per event do not grow with the network; what grows is the share
    /// of these loads that miss every cache (BENCHMARKS.md, "Per-event cost against
    /// network size").
    #[inline]
    fn prefetch_ahead(&self) {
        const PACKET_LEAD: usize = 4;
        const ROUTE_LEAD: usize = 1;
        const EQDS_STATE_LEAD: usize = 3;
        /// Lines of a host's EQDS struct loaded ahead (of 20), besides the fields
        /// `Host::hot_state` reads (`EqdsLayer::prefetch_host`): the first 4 hold
        /// what nearly every EQDS event on the host reads (`EqdsHost`'s layout).
        /// More is no faster on a large network: with all 20 here, no faster
        /// (BENCHMARKS.md, "Third pass"); with 5, no faster than 4 ("Fourth pass").
        /// Nor are longer leads, or a further stage for the queue entries a host
        /// event reads ("Fifth pass"): the core already overlaps those misses, and
        /// each load ahead costs the loop time of its own.
        const EQDS_HOST_LINES: usize = 4;
        let w = &self.world;
        let ahead = w.events.ahead();
        if let Some(&Event::TxDone { port }) = ahead.get(0) {
            if let Some(q) = w.net.queues.get(port as usize) {
                q.prefetch_head();
            }
        }
        match ahead.get(ROUTE_LEAD) {
            Some(&Event::Arrive {
                at: Node::Switch(s),
                pkt,
            }) => self.prefetch_route(s, pkt),
            // An arrival saying which link it came on (PFC, the hardware trimming
            // switch): the link's far end is in the port the arrival names.
            Some(&Event::ArriveFrom { port, pkt }) => {
                if let Some(&Port {
                    peer: Node::Switch(s),
                    ..
                }) = w.net.ports.get(port as usize)
                {
                    self.prefetch_route(s, pkt);
                }
            }
            Some(&Event::Arrive {
                at: Node::Host(_),
                pkt,
            }) => {
                if let Some(p) = w.pkts.try_get(pkt).filter(|p| !p.has(flags::EQDS)) {
                    self.prefetch_endpoint(p.dst_endpoint, true);
                }
            }
            Some(&Event::PullSlot { host }) => {
                if let Some(ep) = w.pacers.get(host as usize).and_then(PullPacer::next_turn) {
                    self.prefetch_endpoint(ep, true);
                }
            }
            _ => {}
        }
        match ahead.get(ROUTE_LEAD + 1) {
            // EQDS at a host pumps its NIC queue after every event there: that
            // queue's state (its address loaded since `PACKET_LEAD`). An arrival
            // for an endpoint: the endpoint's entry in the table.
            Some(&Event::Arrive {
                at: Node::Host(h),
                pkt,
            }) => match w.pkts.try_get(pkt) {
                Some(p) if p.has(flags::EQDS) => self.prefetch_nic_queue(h),
                Some(p) => {
                    self.prefetch_endpoint(p.dst_endpoint, false);
                    self.prefetch_nic_queue(h);
                    if let Some(f) = w.flows.get(p.flow as usize) {
                        crate::engine::prefetch(f);
                    }
                }
                None => {}
            },
            Some(&Event::EqdsTimer { host }) => self.prefetch_nic_queue(host),
            Some(&Event::PullSlot { host }) => {
                self.prefetch_nic_queue(host);
                if let Some(pacer) = w.pacers.get(host as usize) {
                    pacer.prefetch_next_turn();
                }
            }
            Some(&Event::Timer { endpoint }) => self.prefetch_endpoint(endpoint, true),
            _ => {}
        }
        // A host's EQDS state beside its struct, which `PACKET_LEAD` loaded.
        if let (
            Some(&Event::Arrive {
                at: Node::Host(host),
                ..
            })
            | Some(&Event::EqdsTimer { host }),
            Some(eqds),
        ) = (ahead.get(EQDS_STATE_LEAD), &w.eqds)
        {
            eqds.prefetch_host_state(host);
        }
        match ahead.get(PACKET_LEAD) {
            Some(&Event::ArriveFrom { pkt, .. }) => w.pkts.prefetch(pkt),
            Some(&Event::Arrive { at, pkt }) => {
                w.pkts.prefetch(pkt);
                if let Node::Host(h) = at {
                    if let Some(eqds) = &w.eqds {
                        eqds.tags.prefetch(pkt);
                        eqds.prefetch_host(h, EQDS_HOST_LINES);
                    }
                    self.prefetch_nic(h);
                }
            }
            Some(&Event::PullSlot { host }) => {
                if let Some(pacer) = w.pacers.get(host as usize) {
                    crate::engine::prefetch(pacer);
                }
                self.prefetch_nic(host);
            }
            Some(&Event::TxDone { port }) => self.prefetch_port(port as usize),
            Some(&Event::EqdsTimer { host }) => {
                if let Some(eqds) = &w.eqds {
                    eqds.prefetch_host(host, EQDS_HOST_LINES);
                    self.prefetch_nic(host);
                }
            }
            Some(&Event::Timer { endpoint }) => self.prefetch_endpoint(endpoint, false),
            _ => {}
        }
    }

    /// Starts loading the output port switch `s` will route packet `pkt` to, and
    /// that port's queue state.
    #[inline]
    fn prefetch_route(&self, s: SwitchId, pkt: PacketId) {
        let w = &self.world;
        if let (Some(p), Some(sw)) = (w.pkts.try_get(pkt), w.net.switches.get(s as usize)) {
            let out = sw.route(p.dst, p.entropy, w.net.load_balancing) as usize;
            self.prefetch_port(out);
        }
    }

    /// Starts loading the state of host `host`'s NIC queue: EQDS pumps it after
    /// every event on the host, and an endpoint answers most packets.
    #[inline]
    fn prefetch_nic_queue(&self, host: HostId) {
        let w = &self.world;
        if let Some(q) = w.net.queues.get(w.net.host_port(host) as usize) {
            crate::net::queue::prefetch_state(&**q);
        }
    }

    /// Starts loading endpoint `ep`'s entry in the table, or (`deref`) the endpoint.
    #[inline]
    fn prefetch_endpoint(&self, ep: EndpointId, deref: bool) {
        if let Some(e) = self.endpoints.get(ep as usize) {
            if !deref {
                crate::engine::prefetch(e);
            } else if let Some(b) = e {
                let p = &**b as *const dyn Endpoint as *const u8;
                crate::engine::prefetch(p);
                crate::engine::prefetch(p.wrapping_add(64));
            }
        }
    }

    /// Starts loading host `host`'s NIC port and the address of its queue
    /// discipline (whose state `prefetch_ahead` loads a few events later).
    #[inline]
    fn prefetch_nic(&self, host: HostId) {
        let nic = self.world.net.host_port(host) as usize;
        if let Some(p) = self.world.net.ports.get(nic) {
            p.prefetch();
        }
        if let Some(q) = self.world.net.queues.get(nic) {
            crate::engine::prefetch(q);
        }
    }

    /// Starts loading a port and its queue discipline's state.
    #[inline]
    fn prefetch_port(&self, port: usize) {
        if let (Some(p), Some(q)) = (
            self.world.net.ports.get(port),
            self.world.net.queues.get(port),
        ) {
            p.prefetch();
            crate::net::queue::prefetch_state(&**q);
        }
    }

    /// [`Simulation::dispatch`] for an event `perf.json`'s `event_costs` times: out
    /// of line, so that the loop pays one test an event for the timing.
    #[cfg(feature = "event-costs")]
    #[cold]
    #[inline(never)]
    fn dispatch_timed(&mut self, now: Time, event: Event) -> std::io::Result<()> {
        let start = crate::engine::event_costs::ticks();
        let handled = self.dispatch(now, event);
        self.timing.costs.record(&event, start);
        handled
    }

    #[inline]
    fn dispatch(&mut self, now: Time, event: Event) -> std::io::Result<()> {
        match event {
            Event::Arrive { at, pkt } => self.dispatch_arrival(now, at, pkt),
            Event::ArriveFrom { port, pkt } => self.arrive_from(now, port, pkt),
            Event::PfcFrame {
                port,
                priority,
                quanta,
            } => {
                let (net, mut ctx) = self.world.ports(now);
                let frame = crate::net::pfc::pause::PauseFrame { priority, quanta };
                net.pfc_frame(port, frame, &mut ctx);
            }
            Event::PfcTimer { port } => {
                let (net, mut ctx) = self.world.ports(now);
                net.pfc_timer(port, &mut ctx);
            }
            Event::PfcScan => {
                let (net, mut ctx) = self.world.ports(now);
                net.pfc_scan(&mut ctx);
            }
            Event::TxDone { port } => self.world.tx_done(now, port),
            Event::Timer { endpoint } => {
                if self
                    .world
                    .timers
                    .fire(endpoint, now, &mut self.world.events)
                {
                    if let Some(ep) = self
                        .endpoints
                        .get_mut(endpoint as usize)
                        .and_then(Option::as_mut)
                    {
                        ep.on_timer(&mut Ctx {
                            now,
                            me: endpoint,
                            world: &mut self.world,
                        });
                    }
                }
            }
            Event::PullSlot { host } => self.pull_slot(now, host),
            Event::EqdsTimer { host } => {
                self.world.eqds_timer(now, host);
                self.hand_over_eqds_deliveries(now);
            }
            Event::FlowStart { flow } => self.start_flow(now, flow),
            Event::IofdRelease { switch, flow } => {
                let (net, mut ctx) = self.world.ports(now);
                net.iofd_release(switch, flow, &mut ctx);
            }
            Event::IofdGapCheck { flow } => {
                let (net, mut ctx) = self.world.ports(now);
                net.resequencer_check(flow, &mut ctx);
            }
            Event::HwNotify { port, pipe } => self.world.net.hw_notify(port, pipe, now),
            Event::HwEnterTm { port, pkt } => {
                let (net, mut ctx) = self.world.ports(now);
                net.hw_enter_tm(port, pkt, &mut ctx);
            }
            Event::Sample { series } => self.sampler.sample(now, series, &mut self.world)?,
        }
        Ok(())
    }

    /// A packet reached the far end of a link: a switch routes it on, a host's EQDS
    /// or the endpoint it is for takes it.
    #[inline(always)]
    fn dispatch_arrival(&mut self, now: Time, at: Node, pkt: PacketId) {
        match at {
            Node::Switch(s) => {
                if self.world.net.iofd.is_some() {
                    let (net, mut ctx) = self.world.ports(now);
                    return net.forward_with_iofd(s, pkt, None, &mut ctx);
                }
                let p = self.world.pkts.get(pkt);
                let out = self.world.net.switches[s as usize].route(
                    p.dst,
                    p.entropy,
                    self.world.net.load_balancing,
                );
                self.world.enqueue(now, out, pkt);
            }
            Node::Host(host) if self.world.pkts.get(pkt).has(flags::EQDS) => {
                self.world.eqds_arrive(now, host, pkt);
                self.hand_over_eqds_deliveries(now);
            }
            Node::Host(host) => {
                if let Some(log) = self.world.arrival_log.as_deref_mut() {
                    log.record(now, host, self.world.pkts.get(pkt));
                }
                let ep = self.world.pkts.get(pkt).dst_endpoint;
                match self.endpoints.get_mut(ep as usize).and_then(Option::as_mut) {
                    Some(endpoint) => {
                        let mut ctx = Ctx {
                            now,
                            me: ep,
                            world: &mut self.world,
                        };
                        endpoint.on_packet(&mut ctx, pkt);
                    }
                    // The flow is over; late packets are simply consumed.
                    None => self.world.pkts.free(pkt),
                }
            }
        }
    }

    /// A packet reached the far end of `port`'s link, a switch doing PFC: it is
    /// routed and charged to the switch's port on that link.
    fn arrive_from(&mut self, now: Time, port: PortId, pkt: PacketId) {
        let net = &self.world.net;
        let Node::Switch(s) = net.ports[port as usize].peer else {
            // Only links into switches carry arrivals this way.
            return self.dispatch_arrival(now, net.ports[port as usize].peer, pkt);
        };
        let ingress = net.reverse[port as usize];
        if net.trimming_hw.is_some() {
            let (net, mut ctx) = self.world.ports(now);
            return net.forward_hw(s, pkt, ingress, &mut ctx);
        }
        if net.iofd.is_some() {
            let (net, mut ctx) = self.world.ports(now);
            return net.forward_with_iofd(s, pkt, Some(ingress), &mut ctx);
        }
        let p = self.world.pkts.get(pkt);
        let out = net.switches[s as usize].route(p.dst, p.entropy, net.load_balancing);
        let (net, mut ctx) = self.world.ports(now);
        net.enqueue_from(out, pkt, ingress, &mut ctx);
    }

    /// A flow starts: its endpoints are made (`endpoints.rs`) and its sender begins.
    fn start_flow(&mut self, now: Time, flow: FlowId) {
        let rec = &self.world.flows[flow as usize];
        let (s, r) = (rec.sender, rec.receiver);
        let (sender, receiver) = self.factory.create(&mut self.world, flow);
        let need = r as usize + 1;
        if self.endpoints.len() < need {
            self.endpoints.resize_with(need, || None);
            self.world.timers.grow(need);
        }
        self.endpoints[s as usize] = Some(sender);
        self.endpoints[r as usize] = Some(receiver);
        let sender = self.endpoints[s as usize].as_mut().expect("just created");
        sender.on_start(&mut Ctx {
            now,
            me: s,
            world: &mut self.world,
        });
    }

    /// Gives the inner packets EQDS released to the endpoints they are for.
    fn hand_over_eqds_deliveries(&mut self, now: Time) {
        let Some(eqds) = self.world.eqds.as_mut() else {
            return;
        };
        if eqds.delivered.is_empty() {
            return;
        }
        let mut delivered = std::mem::take(&mut eqds.delivered);
        eqds.counters.delivered += delivered.len() as u64;
        for &pkt in &delivered {
            let ep = self.world.pkts.get(pkt).dst_endpoint;
            match self.endpoints.get_mut(ep as usize).and_then(Option::as_mut) {
                Some(endpoint) => endpoint.on_packet(
                    &mut Ctx {
                        now,
                        me: ep,
                        world: &mut self.world,
                    },
                    pkt,
                ),
                None => self.world.pkts.free(pkt),
            }
        }
        delivered.clear();
        if let Some(eqds) = self.world.eqds.as_mut() {
            eqds.delivered = delivered;
        }
    }

    /// A host's pull pacer has a slot: the first endpoint in line that still owes a
    /// PULL sends one.
    fn pull_slot(&mut self, now: Time, host: HostId) {
        while let Some(ep) = self.world.pacers[host as usize].take_turn() {
            let Some(endpoint) = self.endpoints.get_mut(ep as usize).and_then(Option::as_mut)
            else {
                continue; // the flow ended while it waited
            };
            let turn = endpoint.on_pull_slot(&mut Ctx {
                now,
                me: ep,
                world: &mut self.world,
            });
            if turn.sent {
                self.world.pacers[host as usize].sent(now, ep, turn.owes_more);
                break;
            }
        }
        if let Some(at) = self.world.pacers[host as usize].reschedule(now) {
            self.world.events.push(at, Event::PullSlot { host });
        }
    }

    fn on_completions(&mut self, now: Time) {
        let done = std::mem::take(&mut self.world.completed);
        for flow in done {
            let rec = &self.world.flows[flow as usize];
            // Free both ends: late ACKs and timers find no endpoint and are dropped.
            self.endpoints[rec.sender as usize] = None;
            self.endpoints[rec.receiver as usize] = None;
            if self.world.net.iofd.is_some() {
                self.world.net.resequencer_forget(flow);
            }
            if rec.spec.size.is_some() {
                self.unfinished -= 1;
            }
            let follow_up = &self.follow_ups[rec.spec.origin as usize];
            if let Some(next) = follow_up
                .as_ref()
                .and_then(|f| f.next(&mut self.world.rng, rec, now))
            {
                add_flow(&mut self.world, next);
                self.unfinished += 1;
            }
        }
    }
}

/// Records a flow and schedules its start. Endpoint ids are assigned here so that a
/// flow's pair is known before it starts.
fn add_flow(world: &mut World, spec: FlowSpec) {
    let id = world.flows.len() as FlowId;
    let sender: EndpointId = 2 * id;
    world.flows.push(FlowRecord::new(spec, sender, sender + 1));
    world.events.push(spec.start, Event::FlowStart { flow: id });
}
