//! Building a run from a scenario: the network, the workloads' flows, the world with
//! its pull pacers and EQDS layer, the endpoints' parameters and the time series.
//!
//! Everything random is drawn from the scenario's one generator in a fixed order
//! (switch hash seeds, then the workloads, then the EQDS hosts' seeds), so the same
//! file and seed give the same run.

use super::endpoints::EndpointFactory;
use super::sample::Sampler;
use super::{add_flow, Simulation};
use crate::engine::SimRng;
use crate::eqds::{EqdsLayer, EqdsSettings};
use crate::flow::{FlowSpec, Protocol};
use crate::net::{Network, NetworkBuilder};
use crate::scenario::{Loaded, Scenario};
use crate::units::Time;
use crate::workload::{FollowUp, GenCtx};
use crate::world::{PullPacer, World};
use rand::{Rng, SeedableRng};
use std::path::Path;

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
        .with_edge_queue(sw.edge_queue.clone())
        .with_tier_queues(
            sw.tier_queue
                .iter()
                .map(|(t, q)| (t.clone(), q.clone()))
                .collect(),
        )
        .with_queue_seed(scenario.seed)
    })
}

/// What receiver-driven windows (NDP's, EQDS's credit) are sized by.
struct Credit {
    /// The longest loaded round trip of the network.
    rtt: Time,
    /// Full packets that round trip holds at the fastest NIC's rate.
    bdp: u32,
    /// Every host's NIC rate.
    rates: Vec<u64>,
}

impl Credit {
    fn of(net: &Network, mtu: u32, header: u32) -> Credit {
        // Receiver-driven windows cover the loaded round trip, not the idle one: the
        // transient queues of a sprayed fabric with traffic both ways about double
        // it at jumbo frames, and a window of one idle BDP then caps every flow well
        // below line rate (66% for NDP at k=8, 70% for TCP over EQDS on the T1
        // model).
        let rtt = net.max_loaded_rtt(mtu, header);
        let rates: Vec<u64> = (0..net.n_hosts).map(|h| net.host_rate(h)).collect();
        // At the fastest NIC's rate: a window must cover the fastest host.
        let fastest = rates.iter().copied().max().unwrap_or(0);
        let bdp = crate::eqds::bdp_packets(rtt, fastest, mtu);
        Credit { rtt, bdp, rates }
    }
}

impl Simulation {
    /// Builds the world: network, workload flows (scheduled), time-series writers in
    /// `out_dir` if the scenario asks for them.
    pub fn new(loaded: &Loaded, out_dir: Option<&Path>) -> Result<Self, String> {
        let sc = &loaded.scenario;
        let mut rng = SimRng::seed_from_u64(sc.seed);
        let net = build_network(sc, &mut rng);
        let stop = sc.stop.time.map(|t| t.0);
        let (flows, follow_ups) = generate_flows(loaded, &net, &mut rng, stop)?;
        if !sc.transport.sack && flows.iter().any(|f| f.protocol == Protocol::Bbr) {
            return Err(format!(
                "{}: transport.sack: BBR needs sack = true (its delivery-rate samples \
                 count SACKed segments, as Linux's do; without SACK a long recovery \
                 reads as a collapse of the path's bandwidth)",
                loaded.file
            ));
        }
        if sc.eqds.enabled
            && flows
                .iter()
                .any(|f| f.protocol == Protocol::PacketPair && !f.legacy)
        {
            return Err(format!(
                "{}: eqds.enabled: packet-pair flows cannot run inside EQDS tunnels (the \
                 pair gap would measure EQDS's pacing, not the network's fair share); list \
                 their workloads in eqds.legacy_workloads",
                loaded.file
            ));
        }
        let endless = flows.iter().any(|f| f.size.is_none())
            || follow_ups.iter().flatten().any(FollowUp::is_endless);
        let unfinished = flows.iter().filter(|f| f.size.is_some()).count() as u64;

        let mut net = net;
        build_pfc(sc, &mut net)?;
        if let Some(iofd) = sc.iofd.build(&net).map_err(|e| format!("iofd.{e}"))? {
            net.install_iofd(iofd);
        }
        let t = &sc.transport;
        let (mtu, header) = (t.mtu.0 as u32, t.header.0 as u32);
        let hw = sc.switch.hw_settings().map_err(|e| format!("switch.{e}"))?;
        net.install_trimming_hw(hw, mtu, sc.output.mode_series)?;
        let look_ahead = net.n_hosts >= super::LOOK_AHEAD_MIN_HOSTS;
        let mut world = World::new(net, rng, flows.len());
        let credit = Credit::of(&world.net, mtu, header);
        world.pacers = (0..world.net.n_hosts)
            .map(|h| {
                let slot = crate::units::serialisation_time(mtu, world.net.host_rate(h));
                PullPacer::new((slot as f64 / t.ndp.pull_rate).round() as Time)
            })
            .collect();
        build_eqds(sc, &flows, &mut world, &credit)?;
        let factory = EndpointFactory::new(t, &sc.eqds, world.net.path_count(), credit.bdp);
        check_roce(loaded, &flows, &factory, &credit.rates)?;
        if t.roce.dasr.enabled && flows.iter().any(|f| f.protocol == Protocol::Roce) {
            let dasr =
                crate::transport::roce::dasr::Dasr::new(world.net.n_hosts, t.roce.dasr.timeout.0);
            world.dasr = Some(Box::new(dasr));
        }
        for spec in flows {
            add_flow(&mut world, spec);
        }
        if sc.output.rates_csv {
            world.rate_log = Some(Vec::new());
        }
        if let Some(a) = &sc.output.arrivals {
            if let Some(bad) = a
                .flows
                .iter()
                .flatten()
                .find(|&&f| f as usize >= world.flows.len())
            {
                return Err(format!(
                    "{}: output.arrivals.flows: flow {bad} does not exist (the workloads make {} flows up front)",
                    loaded.file,
                    world.flows.len()
                ));
            }
            world.arrival_log = Some(Box::new(crate::world::arrivals::ArrivalLog::new(
                a.trimmed_only,
                a.flows.clone(),
            )));
        }
        let sampler = Sampler::new(&sc.output, out_dir, &mut world)?;
        Ok(Simulation {
            world,
            endpoints: Vec::new(),
            factory,
            follow_ups,
            stop_time: stop.unwrap_or(Time::MAX),
            stop_when_complete: sc.stop.when_flows_complete,
            warmup: sc.stop.warmup.0,
            warmed_up: sc.stop.warmup.0 == 0,
            warmed_at: None,
            unfinished,
            endless,
            now: 0,
            events_processed: 0,
            look_ahead,
            #[cfg(feature = "event-costs")]
            timing: crate::engine::event_costs::Timing::new(sc.output.event_costs),
            sampler,
        })
    }
}

/// PFC on every switch and NIC, if the scenario turns it on: thresholds and
/// headroom worked out for this network, and the ports told what to record.
fn build_pfc(sc: &Scenario, net: &mut Network) -> Result<(), String> {
    let fastest = net.ports.iter().map(|p| p.rate_bps).max().unwrap_or(1);
    let Some(settings) = sc
        .pfc
        .resolve(sc.transport.mtu.0 as u32, fastest)
        .map_err(|e| format!("pfc.{e}"))?
    else {
        return Ok(());
    };
    let fabric = crate::net::pfc::fabric::PfcFabric::new(settings, net)?;
    use crate::ids::Node;
    use crate::net::port::pfc_flags;
    for p in &mut net.ports {
        if matches!(p.peer, Node::Switch(_)) {
            p.pfc_flags |= pfc_flags::ARRIVE_FROM;
        }
        if matches!(p.owner, Node::Switch(_)) {
            p.pfc_flags |= pfc_flags::RECORD_TX;
        }
    }
    net.pfc = Some(Box::new(fabric));
    Ok(())
}

/// RoCE flows' settings that depend on the network: DCQCN's parameters at each
/// sender's line rate, and an RDMA EQIF, and only RoCE in it, when EQDS tunnels them.
fn check_roce(
    loaded: &Loaded,
    flows: &[FlowSpec],
    factory: &EndpointFactory,
    rates: &[u64],
) -> Result<(), String> {
    let sc = &loaded.scenario;
    let senders: Vec<u64> = flows
        .iter()
        .filter(|f| f.protocol == Protocol::Roce)
        .map(|f| rates[f.src as usize])
        .collect();
    // Inside EQDS, RDMA writes into an RDMA EQIF (paper §6): the TCP-compatible
    // one would mark its packets CE for a remote NP and drop them when full.
    let eqif_of = |workload: u32| {
        sc.eqds
            .eqifs
            .iter()
            .position(|e| e.workloads.contains(&workload))
            .unwrap_or(0)
    };
    let is_rdma = |e: usize| {
        sc.eqds
            .eqifs
            .get(e)
            .is_some_and(|e| e.kind == crate::scenario::EqifKind::Rdma)
    };
    let tunnelled = flows.iter().filter(|f| sc.eqds.enabled && !f.legacy);
    for f in tunnelled {
        let e = eqif_of(u32::from(f.origin));
        let roce = f.protocol == Protocol::Roce;
        if roce && !is_rdma(e) {
            return Err(format!(
                "{}: eqds.eqifs: RoCE flows (workload {}) inside EQDS tunnels need an RDMA \
                 EQIF: add one ([[eqds.eqifs]] kind = \"rdma\", workloads = [{}]), or list \
                 the workload in eqds.legacy_workloads",
                loaded.file, f.origin, f.origin
            ));
        }
        if !roce && is_rdma(e) {
            return Err(format!(
                "{}: eqds.eqifs[{e}]: an RDMA EQIF carries RoCE flows only; workload {} is not \
                 RoCE",
                loaded.file, f.origin
            ));
        }
    }
    if senders.is_empty() {
        return Ok(());
    }
    factory
        .check_dcqcn(&senders)
        .map_err(|e| format!("{}: transport.roce.dcqcn.{e}", loaded.file))?;
    Ok(())
}

/// Every workload's initial flows, tagged with the workload they come from, and per
/// workload what adds flows as its flows complete.
fn generate_flows(
    loaded: &Loaded,
    net: &Network,
    rng: &mut SimRng,
    stop: Option<Time>,
) -> Result<(Vec<FlowSpec>, Vec<Option<FollowUp>>), String> {
    let sc = &loaded.scenario;
    let mut flows: Vec<FlowSpec> = Vec::new();
    let mut follow_ups = Vec::new();
    for (i, w) in sc.workload.as_slice().iter().enumerate() {
        let name = if sc.workload.as_slice().len() == 1 {
            "workload".into()
        } else {
            format!("workload[{i}]")
        };
        let mut ctx = GenCtx {
            net,
            rng: &mut *rng,
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
    Ok((flows, follow_ups))
}

/// EQDS on every host, if the scenario turns it on or a flow runs over it natively:
/// its settings resolved against this network, and each host's seed drawn from the
/// run's generator. Asking for `paths.csv` without EQDS is an error.
fn build_eqds(
    sc: &Scenario,
    flows: &[FlowSpec],
    world: &mut World,
    credit: &Credit,
) -> Result<(), String> {
    let mtu = sc.transport.mtu.0 as u32;
    let rates = &credit.rates;
    let uses_eqds = sc.eqds.enabled || flows.iter().any(|f| f.protocol == Protocol::Eqds);
    if uses_eqds {
        let settings = EqdsSettings::resolve(
            &sc.eqds,
            mtu,
            world.net.path_count(),
            credit.bdp,
            rates,
            sc.output.paths_csv,
        )?;
        let seeds: Vec<u64> = rates.iter().map(|_| world.rng.random()).collect();
        world.eqds = Some(Box::new(EqdsLayer::new(
            settings, rates, &seeds, credit.rtt,
        )));
    } else if sc.output.paths_csv {
        return Err(
            "output.paths_csv: no host runs EQDS (set eqds.enabled = true, or \
                    give a flow protocol = \"eqds\")"
                .into(),
        );
    }
    Ok(())
}
