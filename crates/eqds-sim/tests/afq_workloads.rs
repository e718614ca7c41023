//! The AFQ paper's workloads (§6.2): Poisson arrivals with Pareto sizes (α 1.1,
//! mean 30 KB) and with the bundled enterprise CDF; bad keys refused by name.

mod common;

fn poisson(sizes: &str) -> String {
    format!(
        r#"
        [topology]
        kind = "leaf_spine"
        leaves = 2
        spines = 2
        hosts_per_leaf = 4
        link = {{ rate = "10Gbps", latency = "1us" }}
        [transport]
        protocol = "packet_pair"
        [workload]
        kind = "poisson"
        load = 0.3
        {sizes}
        [stop]
        time = "20ms"
        "#
    )
}

/// Mean size of the flows a run's workload made.
fn mean_size(sizes: &str) -> (f64, usize) {
    let loaded = common::load(&poisson(sizes));
    let sim = eqds_sim::sim::Simulation::new(&loaded, None).unwrap();
    let flows = sim.flows();
    let total: u64 = flows.iter().map(|f| f.spec.size.unwrap()).sum();
    (total as f64 / flows.len() as f64, flows.len())
}

#[test]
fn pareto_and_enterprise_sizes_follow_their_distributions() {
    // Capped at 1 MB so the sample mean settles; the rate follows the capped mean
    // (about 14.9 KB: at alpha 1.1 half the mean lies above 1 MB), so 30% of 8
    // hosts x 10 Gbps for 20 ms is about 4030 flows.
    let (mean, n) = mean_size(r#"pareto = { alpha = 1.1, mean = "30KB", max = "1MB" }"#);
    eprintln!("pareto: {n} flows, mean {mean:.0} B");
    assert!((mean / 14_890.0 - 1.0).abs() < 0.1, "mean {mean}");
    assert!((3600..4500).contains(&n), "{n} flows");
    let (mean, n) = mean_size(r#"cdf = "enterprise""#);
    eprintln!("enterprise: {n} flows, mean {mean:.0} B");
    // Mean 157 KB: about 380 flows; the heavy tail makes the sample mean loose.
    assert!((250..520).contains(&n), "{n} flows");
    assert!(mean > 30_000.0 && mean < 600_000.0, "mean {mean}");
}

#[test]
fn a_short_pareto_run_completes_flows() {
    let text = poisson("pareto = {}").replace("time = \"20ms\"", "time = \"2ms\"");
    let (flows, _, _) = common::run(&text);
    let done = flows.iter().filter(|f| f.end.is_some()).count();
    assert!(
        done * 2 > flows.len(),
        "{done} of {} completed",
        flows.len()
    );
}

#[test]
fn bad_size_keys_are_refused_by_name() {
    for (sizes, want) in [
        ("", "cdf: missing"),
        (
            r#"cdf = "websearch"
        pareto = {}"#,
            "not both",
        ),
        ("pareto = { alpha = 1.0 }", "pareto.alpha"),
        ("pareto = { mean = 0 }", "pareto.mean"),
        (r#"pareto = { max = "100B" }"#, "pareto.max"),
        ("pareto = { shape = 2 }", "unknown field `shape`"),
    ] {
        let msg = common::load_error(&poisson(sizes));
        assert!(
            msg.contains("workload") && msg.contains(want),
            "{sizes}: {msg}"
        );
    }
}
