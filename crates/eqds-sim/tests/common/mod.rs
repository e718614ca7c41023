//! Helpers shared by the integration tests.
#![allow(dead_code)]

use eqds_sim::flow::FlowRecord;
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
