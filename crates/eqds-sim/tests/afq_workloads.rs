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

/// The AFQ testbed's traffic (§6.1): 8 hosts on one switch, servers 4-7 answering
/// clients 0-3.
fn one_way(lists: &str) -> String {
    format!(
        r#"
        [topology]
        kind = "single_switch"
        hosts = 8
        link = {{ rate = "10Gbps", latency = "1us" }}
        [workload]
        kind = "poisson"
        load = 0.5
        cdf = "enterprise"
        {lists}
        [stop]
        time = "20ms"
        "#
    )
}

fn pairs(text: &str) -> Vec<(u32, u32, u64, u64)> {
    let loaded = common::load(text);
    let sim = eqds_sim::sim::Simulation::new(&loaded, None).unwrap();
    sim.flows()
        .iter()
        .map(|f| (f.spec.src, f.spec.dst, f.spec.size.unwrap(), f.spec.start))
        .collect()
}

#[test]
fn poisson_sender_and_receiver_lists_keep_traffic_one_way() {
    let flows = pairs(&one_way(
        r#"sender_hosts = "4-7"
        receiver_hosts = [0, 1, 2, 3]"#,
    ));
    assert!(flows.iter().all(|&(s, d, ..)| s >= 4 && d < 4));
    // Every sender and every receiver is drawn.
    for h in 0..8 {
        assert!(flows.iter().any(|&(s, d, ..)| s == h || d == h), "host {h}");
    }
    // The load is of the receivers' 40 Gbps (the smaller side), not of all 80:
    // 0.5 x 40 Gbps x 20 ms / 157 KB is about 80 flows.
    let everyone = pairs(&one_way("")).len();
    assert!(
        (flows.len() as f64 / everyone as f64 - 0.5).abs() < 0.2,
        "{} one-way flows against {everyone} among all hosts",
        flows.len()
    );
    // Lists of every host draw exactly what no lists draw.
    let all = pairs(&one_way(
        r#"sender_hosts = "0-7"
        receiver_hosts = "0-7""#,
    ));
    assert_eq!(all, pairs(&one_way("")));
    // A host on both lists never sends to itself.
    let mixed = pairs(&one_way(r#"receiver_hosts = [2, 5]"#));
    assert!(mixed.iter().all(|&(s, d, ..)| s != d && (d == 2 || d == 5)));
}

#[test]
fn bad_poisson_host_lists_are_refused_by_name() {
    for (lists, want) in [
        ("sender_hosts = []", "sender_hosts: must not be empty"),
        (
            "receiver_hosts = [1, 8]",
            "receiver_hosts[1]: host 8 does not exist",
        ),
        (
            "sender_hosts = [3, 4, 3]",
            "sender_hosts[2]: host 3 is listed twice",
        ),
        (r#"sender_hosts = "5-2""#, "runs backwards"),
        (
            "receiver_hosts = [3]",
            "host 3 is the only receiver and also a sender",
        ),
        (
            "sender_hosts = [3]\n        receiver_hosts = [3]",
            "the only receiver",
        ),
    ] {
        let msg = common::load_error(&one_way(lists));
        assert!(
            msg.contains("workload") && msg.contains(want),
            "{lists}: {msg}"
        );
    }
    // A lone receiver is fine when it does not send.
    common::load(&one_way(
        "sender_hosts = [1, 2]\n        receiver_hosts = [0]",
    ));
}
