//! A run: building the world from a scenario, and the event loop.

use crate::engine::{Event, SimRng};
use crate::eqds::{EqdsLayer, EqdsSettings};
use crate::flow::{FlowRecord, FlowSpec, Protocol};
use crate::ids::{EndpointId, FlowId, Node};
use crate::net::packet::flags;
use crate::net::{Network, NetworkBuilder};
use crate::output::series::{FlowSeries, QueueSeries};
use crate::scenario::{Loaded, Scenario};
use crate::transport::eqds_app::{EqdsAppReceiver, EqdsAppSender};
use crate::transport::mptcp::{MptcpReceiver, MptcpSender};
use crate::transport::ndp::{NdpConfig, NdpReceiver, NdpSender};
use crate::transport::tcp::{TcpConfig, TcpReceiver, TcpSender};
use crate::transport::udp::{UdpConfig, UdpReceiver, UdpSender};
use crate::transport::{Ctx, Endpoint, Ends};
use crate::units::Time;
use crate::workload::{FollowUp, GenCtx};
use crate::world::{PullPacer, World};
use rand::{Rng, SeedableRng};
use std::path::Path;

/// Series ids carried by `Event::Sample`.
const QUEUE_SERIES: u8 = 0;
const FLOW_SERIES: u8 = 1;

/// Why the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `stop.time` was reached.
    Time,
    /// Every flow completed.
    FlowsComplete,
    /// Nothing was left to happen.
    Idle,
}

/// Builds the network of a scenario; switch hash seeds come from `rng`.
pub fn build_network(scenario: &Scenario, rng: &mut SimRng) -> Network {
    let salts = SimRng::seed_from_u64(rng.random());
    let mut salts = salts;
    let sw = &scenario.switch;
    scenario.topology.build(|n_hosts| {
        NetworkBuilder::new(
            n_hosts,
            scenario.host.queue.clone(),
            sw.queue.clone(),
            sw.latency.0,
            sw.load_balancing,
            Box::new(move || salts.random()),
        )
        .with_host_links(scenario.host.link_overrides(n_hosts))
    })
}

pub struct Simulation {
    world: World,
    endpoints: Vec<Option<Box<dyn Endpoint>>>,
    /// TCP parameters per protocol (indexed by `Protocol as usize`; MPTCP's entry
    /// is its subflows'): for every flow (segments shrunk to fit when EQDS tunnels
    /// them), and for legacy flows (full-size segments, `[eqds] legacy_class`).
    tcp: [TcpConfig; Protocol::ALL.len()],
    tcp_legacy: [TcpConfig; Protocol::ALL.len()],
    udp_rate: u64,
    ndp: NdpConfig,
    mptcp_subflows: u32,
    mptcp_nic_limit: u32,
    /// Closed-loop drivers by workload index.
    /// Per workload, what adds flows as its flows complete (closed loops, pings).
    follow_ups: Vec<Option<FollowUp>>,
    stop_time: Time,
    stop_when_complete: bool,
    warmup: Time,
    warmed_up: bool,
    /// Finite flows not yet complete.
    unfinished: u64,
    /// Flows that never end exist (or a closed loop keeps making flows).
    endless: bool,
    now: Time,
    events_processed: u64,
    queue_series: Option<(Time, QueueSeries)>,
    flow_series: Option<(Time, FlowSeries)>,
}

/// What a finished run reports besides its flows and ports.
#[derive(Clone, Copy, Debug)]
pub struct RunStats {
    pub end_time: Time,
    pub reason: StopReason,
    pub events: u64,
    pub peak_packets: u32,
}

impl Simulation {
    /// Builds the world: network, workload flows (scheduled), time-series writers in
    /// `out_dir` if the scenario asks for them.
    pub fn new(loaded: &Loaded, out_dir: Option<&Path>) -> Result<Self, String> {
        let sc = &loaded.scenario;
        let mut rng = SimRng::seed_from_u64(sc.seed);
        let net = build_network(sc, &mut rng);
        let stop = sc.stop.time.map(|t| t.0);
        let mut flows: Vec<FlowSpec> = Vec::new();
        let mut follow_ups = Vec::new();
        for (i, w) in sc.workload.as_slice().iter().enumerate() {
            let name = if sc.workload.as_slice().len() == 1 {
                "workload".into()
            } else {
                format!("workload[{i}]")
            };
            let mut ctx = GenCtx {
                net: &net,
                rng: &mut rng,
                stop,
                base_dir: &loaded.base_dir,
                protocol: sc.transport.protocol,
                matrix: loaded.matrices.get(i).and_then(|m| m.as_deref()),
            };
            let plan = w
                .generate(&mut ctx)
                .map_err(|e| format!("{}: {name}.{e}", loaded.file))?;
            let legacy = sc.eqds.legacy_workloads.contains(&(i as u32));
            flows.extend(plan.flows.into_iter().map(|f| FlowSpec {
                origin: i as u16,
                legacy,
                ..f
            }));
            follow_ups.push(plan.follow_up);
        }
        if !sc.transport.sack && flows.iter().any(|f| f.protocol == Protocol::Bbr) {
            return Err(format!(
                "{}: transport.sack: BBR needs sack = true (its delivery-rate samples \
                 count SACKed segments, as Linux's do; without SACK a long recovery \
                 reads as a collapse of the path's bandwidth)",
                loaded.file
            ));
        }
        let endless = flows.iter().any(|f| f.size.is_none())
            || follow_ups.iter().flatten().any(FollowUp::is_endless);
        let unfinished = flows.iter().filter(|f| f.size.is_some()).count() as u64;

        let mut world = World::new(net, rng, flows.len());
        let t = &sc.transport;
        let (mtu, header) = (t.mtu.0 as u32, t.header.0 as u32);
        // Receiver-driven windows (NDP's, EQDS's credit) cover the loaded round
        // trip, not the idle one: the transient queues of a sprayed fabric with
        // traffic both ways about double it at jumbo frames, and a window of one idle
        // BDP then caps every flow well below line rate (66% for NDP at k=8, 70% for
        // TCP over EQDS on the T1 model).
        let credit_rtt = world.net.max_loaded_rtt(mtu, header);
        let rates: Vec<u64> = (0..world.net.n_hosts)
            .map(|h| world.net.host_rate(h))
            .collect();
        // At the fastest NIC's rate: a window must cover the fastest host.
        let fastest = rates.iter().copied().max().unwrap_or(0);
        let credit_bdp = crate::eqds::bdp_packets(credit_rtt, fastest, mtu);
        let ndp = t.ndp_config(world.net.path_count(), credit_bdp);
        world.pacers = (0..world.net.n_hosts)
            .map(|h| {
                let slot = crate::units::serialisation_time(mtu, world.net.host_rate(h));
                PullPacer::new((slot as f64 / t.ndp.pull_rate).round() as Time)
            })
            .collect();
        let uses_eqds = sc.eqds.enabled || flows.iter().any(|f| f.protocol == Protocol::Eqds);
        if uses_eqds {
            let mut settings =
                EqdsSettings::resolve(&sc.eqds, mtu, world.net.path_count(), credit_bdp);
            settings.path_stats = sc.output.paths_csv;
            // With NICs of several rates, a window sized for the fastest would keep
            // several BDPs of a slower receiver in flight, queued in the network.
            if sc.eqds.window.is_none() && rates.iter().any(|&r| r != fastest) {
                settings.tunnel_rtt = Some(credit_rtt);
            }
            let seeds: Vec<u64> = rates.iter().map(|_| world.rng.random()).collect();
            world.eqds = Some(Box::new(EqdsLayer::new(settings, &rates, &seeds)));
        } else if sc.output.paths_csv {
            return Err(
                "output.paths_csv: no host runs EQDS (set eqds.enabled = true, or \
                        give a flow protocol = \"eqds\")"
                    .into(),
            );
        }
        let mut tcp = Protocol::ALL.map(|p| t.tcp_config(p));
        let mut tcp_legacy = tcp;
        if let Some(class) = sc.eqds.legacy_class {
            for cfg in &mut tcp_legacy {
                cfg.class = class;
            }
        }
        if sc.eqds.enabled {
            // TCP over EQDS: segments shrink so that encapsulated they fit the MTU.
            for cfg in &mut tcp {
                cfg.mss -= sc.eqds.overhead.0 as u32;
            }
        }
        for spec in flows {
            add_flow(&mut world, spec);
        }
        let mut queue_series = None;
        let mut flow_series = None;
        if let Some(dir) = out_dir {
            if let Some(q) = &sc.output.queue_series {
                let series = QueueSeries::create(dir, &world.net, q).map_err(|e| e.to_string())?;
                world.events.push(
                    0,
                    Event::Sample {
                        series: QUEUE_SERIES,
                    },
                );
                queue_series = Some((q.interval.0, series));
            }
            if let Some(f) = &sc.output.flow_series {
                let series = FlowSeries::create(dir).map_err(|e| e.to_string())?;
                world.events.push(
                    f.interval.0,
                    Event::Sample {
                        series: FLOW_SERIES,
                    },
                );
                flow_series = Some((f.interval.0, series));
            }
        }
        Ok(Simulation {
            world,
            endpoints: Vec::new(),
            tcp,
            tcp_legacy,
            udp_rate: t.udp.rate.map_or(0, |r| r.0),
            ndp,
            mptcp_subflows: t.mptcp.subflows,
            mptcp_nic_limit: t.mptcp.nic_limit,
            follow_ups,
            stop_time: stop.unwrap_or(Time::MAX),
            stop_when_complete: sc.stop.when_flows_complete,
            warmup: sc.stop.warmup.0,
            warmed_up: sc.stop.warmup.0 == 0,
            unfinished,
            endless,
            now: 0,
            events_processed: 0,
            queue_series,
            flow_series,
        })
    }

    pub fn network(&self) -> &Network {
        &self.world.net
    }

    pub fn flows(&self) -> &[FlowRecord] {
        &self.world.flows
    }

    /// EQDS counters for the run summary, if the run used EQDS.
    /// The EQDS layer, if any host runs EQDS.
    pub fn eqds(&self) -> Option<&EqdsLayer> {
        self.world.eqds.as_deref()
    }

    pub fn eqds_summary(&self) -> Option<serde_json::Value> {
        let eqds = self.world.eqds.as_ref()?;
        Some(serde_json::json!({
            // The window as resolved (the default depends on the topology); with
            // per-tunnel windows (NICs of several rates) the fastest host's.
            "window_packets": eqds.settings.window_packets,
            "per_tunnel_windows": eqds.settings.tunnel_rtt.is_some(),
            "packets": eqds.counters,
            "tunnels": eqds.tunnel_totals(),
            "peak_in_flight_bytes_per_host": eqds.hosts.iter().map(|h| h.tx.peak_in_flight_bytes()).max(),
        }))
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

    /// Runs to the end. `progress(now, events)` is called every 65,536 events.
    pub fn run(&mut self, progress: &mut dyn FnMut(Time, u64)) -> Result<RunStats, String> {
        let reason = loop {
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
                for f in &mut self.world.flows {
                    f.received_at_warmup = f.received;
                }
            }
            self.now = t;
            self.events_processed += 1;
            self.prefetch_ahead();
            if self.events_processed & 0xffff == 0 {
                progress(t, self.events_processed);
            }
            self.dispatch(t, event)
                .map_err(|e| format!("writing a time series: {e}"))?;
            if !self.world.completed.is_empty() {
                self.on_completions(t);
            }
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
        if let Some((_, s)) = &mut self.queue_series {
            s.finish().map_err(|e| e.to_string())?;
        }
        if let Some((_, s)) = &mut self.flow_series {
            s.finish().map_err(|e| e.to_string())?;
        }
        Ok(RunStats {
            end_time,
            reason,
            events: self.events_processed,
            peak_packets: self.world.pkts.peak(),
        })
    }

    /// Starts loading what the next events will touch, in stages so that each load
    /// has time to arrive before the next stage needs it. `PACKET_LEAD + 1` events
    /// ahead: the packet of an arrival (and its EQDS header at a host); the port of a transmitter freeing up and its
    /// queue's state. `ROUTE_LEAD + 1` events ahead (the packet is loaded by then):
    /// for an arrival at a switch, the output port it will be routed to and that
    /// port's queue state. The next event: the head of the freeing port's queue.
    #[inline]
    fn prefetch_ahead(&self) {
        const PACKET_LEAD: usize = 4;
        const ROUTE_LEAD: usize = 1;
        let w = &self.world;
        if let Some(&Event::TxDone { port }) = w.events.peek_cheap(0) {
            if let Some(q) = w.net.queues.get(port as usize) {
                q.prefetch_head();
            }
        }
        if let Some(&Event::Arrive {
            at: Node::Switch(s),
            pkt,
        }) = w.events.peek_cheap(ROUTE_LEAD)
        {
            if let (Some(p), Some(sw)) = (w.pkts.try_get(pkt), w.net.switches.get(s as usize)) {
                let out = sw.route(p.dst, p.entropy, w.net.load_balancing) as usize;
                self.prefetch_port(out);
            }
        }
        match w.events.peek_cheap(PACKET_LEAD) {
            Some(&Event::Arrive { at, pkt }) => {
                w.pkts.prefetch(pkt);
                if let (Node::Host(_), Some(eqds)) = (at, &w.eqds) {
                    eqds.tags.prefetch(pkt);
                }
            }
            Some(&Event::TxDone { port }) => self.prefetch_port(port as usize),
            _ => {}
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

    #[inline]
    fn dispatch(&mut self, now: Time, event: Event) -> std::io::Result<()> {
        match event {
            Event::Arrive { at, pkt } => match at {
                Node::Switch(s) => {
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
                Node::Host(_) => {
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
            },
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
            Event::Sample { series } => self.sample(now, series)?,
        }
        Ok(())
    }

    fn start_flow(&mut self, now: Time, flow: FlowId) {
        let rec = &self.world.flows[flow as usize];
        let spec = rec.spec;
        let (s, r) = (rec.sender, rec.receiver);
        let cfg = if spec.legacy {
            self.tcp_legacy[spec.protocol as usize]
        } else {
            self.tcp[spec.protocol as usize]
        };
        // A random 5-tuple hash: what ECMP switches see of this flow.
        let entropy: u32 = self.world.rng.random();
        let need = r as usize + 1;
        if self.endpoints.len() < need {
            self.endpoints.resize_with(need, || None);
            self.world.timers.grow(need);
        }
        let ends = Ends {
            flow,
            host: spec.src,
            me: s,
            peer_host: spec.dst,
            peer: r,
        };
        let (sender, receiver): (Box<dyn Endpoint>, Box<dyn Endpoint>) = match spec.protocol {
            Protocol::Ndp => (
                Box::new(NdpSender::new(self.ndp, ends, spec.size)),
                Box::new(NdpReceiver::new(self.ndp, ends.reversed(), spec.size)),
            ),
            Protocol::Udp => {
                let udp = UdpConfig {
                    mss: cfg.mss,
                    header: cfg.header,
                    rate_bps: self.udp_rate,
                    class: cfg.class,
                };
                (
                    Box::new(UdpSender::new(udp, ends, spec.size)),
                    Box::new(UdpReceiver::new(flow, spec.size)),
                )
            }
            Protocol::Eqds => (
                Box::new(EqdsAppSender::new(ends, spec.size, cfg.class)),
                Box::new(EqdsAppReceiver::new(
                    flow,
                    spec.size,
                    self.world
                        .eqds
                        .as_ref()
                        .map_or(1, |e| e.settings.max_inner()),
                )),
            ),
            Protocol::Mptcp => {
                // Subflow 0 uses the flow's hash; the others draw their own.
                let entropies: Vec<u32> = std::iter::once(entropy)
                    .chain((1..self.mptcp_subflows).map(|_| self.world.rng.random()))
                    .collect();
                (
                    Box::new(MptcpSender::new(
                        cfg,
                        ends,
                        &entropies,
                        spec.size,
                        self.mptcp_nic_limit,
                    )),
                    Box::new(MptcpReceiver::new(
                        cfg,
                        ends.reversed(),
                        &entropies,
                        spec.size,
                    )),
                )
            }
            _ => (
                Box::new(TcpSender::new(cfg, ends, entropy, spec.size)),
                Box::new(TcpReceiver::new(cfg, ends.reversed(), entropy, spec.size)),
            ),
        };
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
    fn pull_slot(&mut self, now: Time, host: crate::ids::HostId) {
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

    fn sample(&mut self, now: Time, series: u8) -> std::io::Result<()> {
        match series {
            QUEUE_SERIES => {
                if let Some((interval, s)) = &mut self.queue_series {
                    s.sample(now, &self.world.net)?;
                    self.world
                        .events
                        .push(now + *interval, Event::Sample { series });
                }
            }
            _ => {
                if let Some((interval, s)) = &mut self.flow_series {
                    s.sample(now, *interval, &mut self.world.flows)?;
                    self.world
                        .events
                        .push(now + *interval, Event::Sample { series });
                }
            }
        }
        Ok(())
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
