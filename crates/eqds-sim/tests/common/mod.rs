//! Helpers shared by the integration tests.
#![allow(dead_code)]

use eqds_sim::flow::FlowRecord;
use eqds_sim::output::flow_throughput_bps;
use eqds_sim::run::{run_to_dir, Outcome};
use eqds_sim::scenario::{Loaded, Scenario};
use eqds_sim::sim::{RunStats, Simulation};
use std::path::Path;

pub fn load(text: &str) -> Loaded {
    Scenario::from_str_with(text, "test.toml", ".".into(), &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// A `[topology]` table of two leaves under two 25 Gbps spines with
/// `hosts_per_leaf` hosts each, 1 us links: the first leaf's hosts have 100 Gbps NICs
/// (servers), the second's 25 Gbps (clients), so a server outruns a spine link, as
/// in the oversubscribed experiment.
pub fn fast_and_slow_leaves(hosts_per_leaf: u32) -> String {
    format!(
        r#"
        [topology]
        kind = "leaf_spine"
        leaves = 2
        spines = 2
        hosts_per_leaf = {hosts_per_leaf}
        link = {{ rate = "25Gbps", latency = "1us" }}
        leaf_host_links = [
            {{ rate = "100Gbps", latency = "1us" }},
            {{ rate = "25Gbps", latency = "1us" }},
        ]
        "#
    )
}

/// The error loading `text` gives; panics if it loads.
pub fn load_error(text: &str) -> String {
    match Scenario::from_str_with(text, "bad.toml", ".".into(), &[]) {
        Ok(_) => panic!("accepted a bad scenario:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// The error building a simulation of `text` gives (it loads); panics if it builds.
pub fn build_error(text: &str) -> String {
    match Simulation::new(&load(text), None) {
        Ok(_) => panic!("built a bad scenario:\n{text}"),
        Err(e) => e,
    }
}

/// Runs in memory; returns the flow records and run statistics.
pub fn run(text: &str) -> (Vec<FlowRecord>, RunStats, Simulation) {
    let loaded = load(text);
    let mut sim = Simulation::new(&loaded, None).unwrap();
    let stats = sim.run(&mut |_, _| {}).unwrap();
    (sim.flows().to_vec(), stats, sim)
}

/// Runs with outputs written to `dir`.
pub fn run_dir(text: &str, dir: &Path) -> Outcome {
    run_to_dir(&load(text), dir, &mut |_, _| {}).unwrap()
}

/// A `k`-ary fat tree of `rate` links with 1 us of latency, its switches spraying
/// over `queue`-packet trimming queues and its hosts behind 1000-packet ones: the
/// `[topology]`, `[switch]` and `[host]` tables.
pub fn sprayed_fat_tree(k: u32, rate: &str, queue: u32) -> String {
    format!(
        r#"
        [topology]
        kind = "fat_tree"
        k = {k}
        link = {{ rate = "{rate}", latency = "1us" }}
        [switch]
        load_balancing = "spray"
        queue = {{ kind = "trimming", data_packets = {queue} }}
        [host]
        queue = {{ kind = "trimming", data_packets = 1000 }}
        "#
    )
}

/// An N-to-1 incast of `size` bytes per sender into host 0 of a [`sprayed_fat_tree`],
/// run until every flow completes (1 s at most); `transport` is the body of the
/// `[transport]` table, and may add tables after it.
pub fn sprayed_fat_tree_incast(
    k: u32,
    rate: &str,
    queue: u32,
    transport: &str,
    n: u32,
    size: &str,
) -> String {
    // The workload and stop tables keep this indentation: tests rewrite them by
    // text (`eqds_windows.rs`).
    format!(
        r#"
        {}
        [transport]
        {transport}
        [workload]
        kind = "incast"
        receiver = 0
        senders = {n}
        size = "{size}"
        [stop]
        when_flows_complete = true
        time = "1s"
        "#,
        sprayed_fat_tree(k, rate, queue)
    )
}

/// The paper's htsim incast setting: k-ary fat tree at 100 Gbps, MTU 4150 B,
/// 35-packet trimming queues, window 50 packets; an N-to-1 native EQDS incast.
pub fn native_incast(k: u32, n: u32, size: &str) -> String {
    let transport = "protocol = \"eqds\"\nmtu = \"4150B\"\nheader = \"64B\"\n\
                     [eqds]\nwindow = 50\noverhead = \"64B\"";
    sprayed_fat_tree_incast(k, "100Gbps", 35, transport, n, size)
}

/// Runs in memory; each flow's throughput after the warm-up, in b/s.
pub fn throughputs(text: &str) -> Vec<f64> {
    let (flows, stats, sim) = run(text);
    flows
        .iter()
        .map(|f| flow_throughput_bps(f, sim.warmup(), stats.end_time))
        .collect()
}

/// Runs `text` twice, into two directories, and asserts that the flows and the
/// summary come out byte for byte the same.
pub fn assert_runs_are_deterministic(text: &str) {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    run_dir(text, a.path());
    run_dir(text, b.path());
    for file in ["flows.csv", "summary.json"] {
        let x = std::fs::read(a.path().join(file)).unwrap();
        let y = std::fs::read(b.path().join(file)).unwrap();
        assert!(x == y, "{file} differs between two runs");
    }
}

/// Two racks of two hosts under two spines, every link at `rate` with 1 us of
/// latency, 15-packet trimming queues and spraying: the smallest network with two
/// paths between racks. The `[topology]` and `[switch]` tables.
pub fn two_racks_two_spines(rate: &str) -> String {
    two_racks_two_spines_trimming_at(rate, "data_packets = 15")
}

/// [`two_racks_two_spines`] with the trimming queues' data limit `limit`.
pub fn two_racks_two_spines_trimming_at(rate: &str, limit: &str) -> String {
    format!(
        r#"
        [topology]
        kind = "leaf_spine"
        leaves = 2
        spines = 2
        hosts_per_leaf = 2
        link = {{ rate = "{rate}", latency = "1us" }}
        [switch]
        queue = {{ kind = "trimming", {limit} }}
        load_balancing = "spray"
        "#
    )
}
