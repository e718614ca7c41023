//! `[switch] tier_queue`: a queue discipline per port tier, over `edge_queue` and
//! `queue`.

mod common;

use common::{load_error, run};
use eqds_sim::scenario::Scenario;
use eqds_sim::sim::Simulation;
use std::collections::BTreeMap;

/// Two leaves of four hosts under one spine, 10 Gbps links; hosts 0 and 1 (first
/// leaf) and 5 and 6 (second leaf) each send 300 KB to host 4 at once, so the first
/// leaf's uplink backs up (20 Gbps in) and so does host 4's last hop (30 Gbps in),
/// but not the spine's downlink (as fast as the uplink that feeds it). `switch` is
/// the `[switch]` table's body.
fn cross_leaf(switch: &str) -> String {
    format!(
        r#"
        [topology]
        kind = "leaf_spine"
        leaves = 2
        spines = 1
        hosts_per_leaf = 4
        link = {{ rate = "10Gbps", latency = "1us" }}

        [switch]
        {switch}

        [transport]
        protocol = "newreno"
        min_rto = "200us"
        initial_rto = "200us"

        [workload]
        kind = "flows"
        flows = [
            {{ src = 0, dst = 4, size = "300KB" }},
            {{ src = 1, dst = 4, size = "300KB" }},
            {{ src = 5, dst = 4, size = "300KB" }},
            {{ src = 6, dst = 4, size = "300KB" }},
        ]

        [stop]
        time = "100ms"
        "#
    )
}

/// Drops per tier of a run of `text`, every flow having completed.
fn drops_by_tier(text: &str) -> BTreeMap<&'static str, u64> {
    let (flows, _, sim) = run(text);
    assert!(
        flows.iter().all(|f| f.end.is_some()),
        "a flow did not finish"
    );
    let net = sim.network();
    let mut by_tier = BTreeMap::new();
    for p in &net.ports {
        *by_tier.entry(net.tier_names[p.tier as usize]).or_insert(0) += p.stats.drops;
    }
    by_tier
}

#[test]
fn a_tier_queue_replaces_the_switch_queue_on_that_tier_only() {
    let roomy = "queue = { kind = \"drop_tail\", limit_packets = 1000 }";
    let base = drops_by_tier(&cross_leaf(roomy));
    assert_eq!(base.values().sum::<u64>(), 0, "{base:?}");
    // Only the leaves' uplinks get a small buffer: only they drop.
    let small_up = drops_by_tier(&cross_leaf(&format!(
        "{roomy}\ntier_queue = {{ leaf_up = {{ kind = \"drop_tail\", limit_packets = 8 }} }}"
    )));
    assert!(small_up["leaf_up"] > 0, "{small_up:?}");
    assert_eq!(small_up.values().sum::<u64>(), small_up["leaf_up"]);
    // A tier's queue wins over edge_queue on host-facing ports.
    let edge = "edge_queue = { kind = \"drop_tail\", limit_packets = 1 }";
    let small_edge = drops_by_tier(&cross_leaf(&format!("{roomy}\n{edge}")));
    assert!(small_edge["leaf_down"] > 0, "{small_edge:?}");
    let overridden = drops_by_tier(&cross_leaf(&format!(
        "{roomy}\n{edge}\ntier_queue = {{ leaf_down = {{ kind = \"drop_tail\", limit_packets = 1000 }} }}"
    )));
    assert_eq!(overridden.values().sum::<u64>(), 0, "{overridden:?}");
}

#[test]
fn every_topology_names_its_switch_tiers_as_it_builds_them() {
    let topologies = [
        "kind = \"fat_tree\"\nk = 4",
        "kind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2",
        "kind = \"clos3\"\nhosts_per_tor = 2",
        "kind = \"single_switch\"\nhosts = 3",
        "kind = \"dumbbell\"\nleft = 2\nright = 2\nbottleneck = { rate = \"10Gbps\", latency = \"1us\" }",
    ];
    for topo in topologies {
        let text = format!(
            "[topology]\n{topo}\nlink = {{ rate = \"10Gbps\", latency = \"1us\" }}\n\
             [workload]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 1, size = \"1KB\" }}]\n[stop]\ntime = \"1ms\"\n"
        );
        let loaded = Scenario::from_str_with(&text, "t.toml", ".".into(), &[]).unwrap();
        let sim = Simulation::new(&loaded, None).unwrap();
        let net = sim.network();
        let mut built: Vec<&str> = net
            .ports
            .iter()
            .filter(|p| matches!(p.owner, eqds_sim::ids::Node::Switch(_)))
            .map(|p| net.tier_names[p.tier as usize])
            .collect();
        built.sort_unstable();
        built.dedup();
        let mut named = loaded.scenario.topology.switch_tiers().to_vec();
        named.sort_unstable();
        assert_eq!(built, named, "{topo}");
    }
}

#[test]
fn bad_tier_queues_are_refused_by_name() {
    let e = load_error(&cross_leaf(
        "tier_queue = { core_down = { kind = \"drop_tail\", limit_packets = 8 } }",
    ));
    assert!(
        e.contains("switch.tier_queue.core_down: this topology has no switch port tier")
            && e.contains("leaf_down, leaf_up, spine_down"),
        "{e}"
    );
    // The hosts' NIC tier is [host] queue's.
    let e = load_error(&cross_leaf(
        "tier_queue = { host_up = { kind = \"drop_tail\", limit_packets = 8 } }",
    ));
    assert!(e.contains("switch.tier_queue.host_up"), "{e}");
    let e = load_error(&cross_leaf(
        "tier_queue = { leaf_up = { kind = \"drop_tail\", limit_packets = 0 } }",
    ));
    assert!(e.contains("switch.tier_queue.leaf_up"), "{e}");
    let e = load_error(&cross_leaf(
        "tier_queue = { leaf_up = { kind = \"droptail\" } }",
    ));
    assert!(e.contains("switch.tier_queue.leaf_up"), "{e}");
}

/// `queue_series.flows`: the histogram of packets per flow in the sampled queues
/// accounts for every packet `queues.csv` sees, tier by tier, and sees the flows
/// apart (an incast's four senders share host 4's last hop).
#[test]
fn queue_flows_counts_every_sampled_packet_by_its_flow() {
    let text = cross_leaf("queue = { kind = \"drop_tail\", limit_packets = 1000 }")
        + "[output]\nqueue_series = { interval = \"5us\", flows = true }\n";
    let dir = tempfile::tempdir().unwrap();
    common::run_dir(&text, dir.path());
    let read = |file: &str| std::fs::read_to_string(dir.path().join(file)).unwrap();
    let mut backlog: BTreeMap<String, u64> = BTreeMap::new();
    for line in read("queues.csv").lines().skip(1) {
        let v: Vec<&str> = line.split(',').collect();
        *backlog.entry(v[2].to_string()).or_insert(0) += v[4].parse::<u64>().unwrap();
    }
    let mut held: BTreeMap<String, u64> = BTreeMap::new();
    let mut largest: BTreeMap<String, u64> = BTreeMap::new();
    for line in read("queue_flows.csv").lines().skip(1) {
        let v: Vec<&str> = line.split(',').collect();
        let (packets, count): (u64, u64) = (v[1].parse().unwrap(), v[2].parse().unwrap());
        assert!(packets > 0 && count > 0, "{line}");
        *held.entry(v[0].to_string()).or_insert(0) += packets * count;
        let l = largest.entry(v[0].to_string()).or_insert(0);
        *l = (*l).max(packets);
    }
    backlog.retain(|_, b| *b > 0);
    assert_eq!(held, backlog);
    // Host 4's last hop holds the three flows that reach it whole (one via the
    // spine): no flow ever holds all of that queue alone at its peak.
    let peak_last_hop: u64 = read("queues.csv")
        .lines()
        .skip(1)
        .filter(|l| l.contains(",leaf_down,"))
        .map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap())
        .max()
        .unwrap();
    assert!(
        largest["leaf_down"] < peak_last_hop,
        "{largest:?} vs {peak_last_hop}"
    );
}
