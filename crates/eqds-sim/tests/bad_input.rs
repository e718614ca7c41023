//! Malformed and nonsensical scenarios give errors that name the field, never panics.

mod common;

use eqds_sim::scenario::Scenario;
use proptest::prelude::*;

const VALID: &str = r#"
seed = 3
[topology]
kind = "fat_tree"
k = 4
link = { rate = "10Gbps", latency = "1us" }
[switch]
queue = { kind = "drop_tail", limit_packets = 20 }
[transport]
protocol = "newreno"
mtu = 1500
[workload]
kind = "permutation"
size = "100KB"
[stop]
time = "10ms"
"#;

#[test]
fn the_reference_scenario_is_valid() {
    Scenario::from_str_with(VALID, "ok.toml", ".".into(), &[]).unwrap();
}

#[test]
fn each_mistake_is_named() {
    let cases: &[(&str, &str, &str)] = &[
        ("k = 4", "k = 5", "k"),
        ("k = 4", "k = 0", "k"),
        // Type errors inside `kind`-tagged tables name the exact field.
        (
            "k = 4",
            "k = -4",
            "`topology.fat_tree.k`: invalid value: integer `-4`",
        ),
        (
            "k = 4",
            "k = \"four\"",
            "`topology.fat_tree.k`: invalid type",
        ),
        ("kind = \"fat_tree\"", "", "topology: missing `kind`"),
        (
            "size = \"100KB\"",
            "size = \"lots\"",
            "`workload[0].permutation.size`",
        ),
        ("kind = \"fat_tree\"", "kind = \"torus\"", "torus"),
        ("rate = \"10Gbps\"", "rate = \"10 parsecs\"", "parsecs"),
        ("rate = \"10Gbps\"", "rate = \"0Gbps\"", "positive"),
        ("latency = \"1us\"", "latency = \"1\"", "unit"),
        ("limit_packets = 20", "limit_packets = 0", "switch.queue"),
        ("limit_packets = 20", "limit_pakets = 20", "limit_pakets"),
        // Random loss: a probability below 1, and the queue it wraps checked too.
        (
            "queue = { kind = \"drop_tail\", limit_packets = 20 }",
            "queue = { kind = \"random_loss\", rate = 1.0, queue = { kind = \"drop_tail\" } }",
            "switch.queue: rate: a loss probability must be within [0, 1), got 1",
        ),
        (
            "queue = { kind = \"drop_tail\", limit_packets = 20 }",
            "queue = { kind = \"random_loss\", rate = -0.01, queue = { kind = \"drop_tail\" } }",
            "switch.queue: rate",
        ),
        (
            "queue = { kind = \"drop_tail\", limit_packets = 20 }",
            "queue = { kind = \"random_loss\", rate = 0.01, queue = { kind = \"drop_tail\", limit_packets = 0 } }",
            "switch.queue: queue: a queue limit of 0",
        ),
        (
            "queue = { kind = \"drop_tail\", limit_packets = 20 }",
            "queue = { kind = \"random_loss\", rate = 0.01, queue = { kind = \"magic\" } }",
            "`switch.queue.random_loss.queue`: unknown variant `magic`",
        ),
        (
            "queue = { kind = \"drop_tail\", limit_packets = 20 }",
            "queue = { kind = \"random_loss\", rate = 0.01 }",
            "missing field `queue`",
        ),
        ("protocol = \"newreno\"", "protocol = \"quic\"", "quic"),
        ("mtu = 1500", "mtu = 40", "mtu"),
        ("mtu = 1500", "mtu = 1500\nbogus = 1", "bogus"),
        ("mtu = 1500", "mtu = 1500\nnic_limit = 0", "nic_limit"),
        (
            "[stop]",
            "[eqds]\nenabled = true\nwindow = 8\ninitial_window = 9\n[stop]",
            "eqds.initial_window: must be at most eqds.window (8 packets), got 9",
        ),
        ("mtu = 1500", "mtu = 1500\nsack = \"yes\"", "sack"),
        (
            "kind = \"fat_tree\"\nk = 4",
            "kind = \"leaf_spine\"\nleaves = 2\nspines = 1\nhosts_per_leaf = 2\n\
             leaf_host_links = [{ rate = \"1Gbps\", latency = \"1us\" }]",
            "leaf_host_links: needs one link per leaf (2), got 1",
        ),
        ("size = \"100KB\"", "size = 0", "size"),
        ("kind = \"permutation\"", "kind = \"incast\"", "senders"),
        ("time = \"10ms\"", "time = \"0ms\"", "stop.time"),
        (
            "[stop]\ntime = \"10ms\"",
            "[stop]\nwarmup = \"1ms\"\ntime = \"1ms\"",
            "warmup",
        ),
        (
            "mtu = 1500",
            "mtu = 1500\nndp = { pull_rate = 1.5 }",
            "ndp.pull_rate",
        ),
        (
            "mtu = 1500",
            "mtu = 1500\nndp = { initial_window = 0 }",
            "ndp.initial_window",
        ),
        (
            "mtu = 1500",
            "mtu = 1500\nndp = { rto = \"0ms\" }",
            "ndp.rto",
        ),
        ("mtu = 1500", "mtu = 1500\nndp = { paths = 0 }", "ndp.paths"),
        ("mtu = 1500", "mtu = 1500\nndp = { windo = 3 }", "windo"),
        (
            "mtu = 1500",
            "mtu = 1500\nmptcp = { subflows = 0 }",
            "mptcp.subflows",
        ),
        (
            "mtu = 1500",
            "mtu = 1500\nmptcp = { subflows = 65 }",
            "mptcp.subflows",
        ),
        (
            "mtu = 1500",
            "mtu = 1500\nudp = { rate = \"0Gbps\" }",
            "udp.rate",
        ),
        (
            "kind = \"permutation\"",
            "kind = \"closed_loop\"\nclient_hosts = [1, 2]\nserver_hosts = [3, 2]",
            "download from itself",
        ),
        (
            "kind = \"permutation\"",
            "kind = \"closed_loop\"\nclient_hosts = [99]",
            "client_hosts",
        ),
        ("[stop]", "[eqds]\nwindow = 0\n[stop]", "eqds.window"),
        ("[stop]", "[eqds]\nwindow = 5000\n[stop]", "eqds.window"),
        ("[stop]", "[eqds]\nmode = \"tcp\"\n[stop]", "eqds.mode: 'tcp' is not rts or ndp"),
        ("[stop]", "[eqds]\nrto = \"0us\"\n[stop]", "eqds.rto"),
        (
            "[stop]",
            "[eqds]\noverhead = \"1500B\"\n[stop]",
            "eqds.overhead",
        ),
        ("[stop]", "[eqds]\npull_rate = 0\n[stop]", "eqds.pull_rate"),
        ("[stop]", "[eqds]\npaths = 70000\n[stop]", "eqds.paths"),
        ("[stop]", "[eqds]\nnic_limit = 0\n[stop]", "eqds.nic_limit"),
        (
            "[stop]",
            "[eqds]\nsend_queue = 0\n[stop]",
            "eqds.send_queue",
        ),
        (
            "[stop]",
            "[eqds]\nreorder_window = 0\n[stop]",
            "eqds.reorder_window",
        ),
        (
            "[stop]",
            "[eqds]\npolicy = \"lifo\"\n[stop]",
            "eqds.policy: 'lifo' is not fifo, weighted or strict_priority",
        ),
        ("[stop]", "[eqds]\nenable = true\n[stop]", "enable"),
        (
            "[stop]",
            "[eqds]\necn_threshold = 20\necn_max_threshold = 10\n[stop]",
            "eqds.ecn_max_threshold",
        ),
        ("[stop]", "[eqds]\necn_max_p = 1.5\n[stop]", "eqds.ecn_max_p"),
        // The keys shared with the daemon are checked by the same code, against
        // each other too, and their errors name the key as written.
        (
            "[stop]",
            "[eqds]\nrto = \"2ms\"\n[stop]",
            "eqds.reorder_timeout: must exceed 3 x rto",
        ),
        ("[stop]", "[eqds]\nrto = \"fast\"\n[stop]", "`eqds.rto`"),
        ("[stop]", "[eqds]\nwindwo = 3\n[stop]", "windwo"),
        (
            "[stop]",
            "[eqds]\n\"(shared)\" = { window = 3 }\n[stop]",
            "eqds.(shared): unknown key",
        ),
        ("[stop]", "[eqds]\necn_max_p = 0\n[stop]", "eqds.ecn_max_p"),
        (
            "[stop]",
            "[[eqds.eqifs]]\nweight = 0\n[stop]",
            "eqds.eqifs[0].weight: must be at least 1",
        ),
        (
            "[stop]",
            "[[eqds.eqifs]]\nweigth = 2\n[stop]",
            "weigth",
        ),
        (
            "[stop]",
            "[[eqds.eqifs]]\npriority = 300\n[stop]",
            "eqds.eqifs",
        ),
        (
            "[stop]",
            "[[eqds.eqifs]]\n[[eqds.eqifs]]\nworkloads = [1]\n[stop]",
            "eqds.eqifs[1].workloads: no workload 1 (there are 1, numbered from 0)",
        ),
        (
            "[stop]",
            "[[eqds.eqifs]]\nworkloads = [0]\n[[eqds.eqifs]]\nworkloads = [0]\n[stop]",
            "eqds.eqifs[1].workloads: workload 0 already writes into eqds.eqifs[0]",
        ),
        (
            "[stop]",
            "[eqds]\nlegacy_workloads = [0]\n[[eqds.eqifs]]\nworkloads = [0]\n[stop]",
            "eqds.eqifs[0].workloads: workload 0 is legacy traffic",
        ),
        (
            "[stop]",
            "[host]\nlinks = [{ hosts = [16], rate = \"1Gbps\" }]\n[stop]",
            "host.links[0].hosts: no host 16 (the topology has 16",
        ),
        (
            "[stop]",
            "[host]\nlinks = [{ hosts = [1], rate = \"1Gbps\" }, { hosts = [2, 1], rate = \"2Gbps\" }]\n[stop]",
            "host.links[1].hosts: host 1 is listed twice",
        ),
        (
            "[stop]",
            "[host]\nlinks = [{ hosts = [], rate = \"1Gbps\" }]\n[stop]",
            "host.links[0].hosts: list at least one host",
        ),
        (
            "[stop]",
            "[host]\nlinks = [{ hosts = [1], rate = \"0Gbps\" }]\n[stop]",
            "host.links[0].rate",
        ),
        (
            "[stop]",
            "[host]\nlinks = [{ hosts = [1], speed = \"1Gbps\" }]\n[stop]",
            "speed",
        ),
        ("seed = 3", "seed = \"x\"", "seed"),
        ("seed = 3", "seed = 3\nseed = 4", "seed"),
        ("[workload]", "[workloads]", "workload"),
        ("[topology]", "[topology", "TOML"),
    ];
    for (from, to, expect) in cases {
        assert!(VALID.contains(from), "test case does not apply: {from}");
        let text = VALID.replacen(from, to, 1);
        let msg = common::load_error(&text);
        assert!(msg.starts_with("bad.toml: "), "no file name in: {msg}");
        assert!(
            msg.contains(expect),
            "`{to}`: message does not mention `{expect}`: {msg}"
        );
    }
}

#[test]
fn bbr_without_sack_is_refused_by_name() {
    let text = VALID.replace("protocol = \"newreno\"", "protocol = \"bbr\"");
    let loaded = Scenario::from_str_with(&text, "bbr.toml", ".".into(), &[]).unwrap();
    let err = match eqds_sim::sim::Simulation::new(&loaded, None) {
        Ok(_) => panic!("BBR ran without SACK"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("transport.sack: BBR needs sack = true"),
        "{err}"
    );
    let text = text.replace("mtu = 1500", "mtu = 1500\nsack = true");
    let loaded = Scenario::from_str_with(&text, "bbr.toml", ".".into(), &[]).unwrap();
    assert!(eqds_sim::sim::Simulation::new(&loaded, None).is_ok());
}

#[test]
fn at_most_256_eqifs_per_host() {
    let text = VALID.replace(
        "[stop]",
        &format!("{}[stop]", "[[eqds.eqifs]]\n".repeat(257)),
    );
    let err = common::load_error(&text);
    assert!(
        err.contains("eqds.eqifs: at most 256 EQIFs per host, got 257"),
        "{err}"
    );
    let text = VALID.replace(
        "[stop]",
        &format!("{}[stop]", "[[eqds.eqifs]]\n".repeat(256)),
    );
    Scenario::from_str_with(&text, "ok.toml", ".".into(), &[]).unwrap();
}

#[test]
fn workload_specific_checks() {
    let swap = |w: &str| VALID.replace("kind = \"permutation\"\nsize = \"100KB\"", w);
    let cases = [
        ("kind = \"incast\"\nsenders = 16", "senders"),
        ("kind = \"incast\"\nreceiver = 99\nsenders = 2", "receiver"),
        ("kind = \"incast\"\nsender_hosts = [0]", "receiver"),
        (
            "kind = \"incast\"\nsender_hosts = \"1-20\"",
            "sender_hosts[15]",
        ),
        (
            "kind = \"incast\"\nsender_hosts = \"3-1\"",
            "runs backwards",
        ),
        (
            "kind = \"flows\"\nflows = [{ src = 1, dst = 1 }]",
            "src and dst",
        ),
        ("kind = \"flows\"\nflows = []", "empty"),
        (
            "kind = \"poisson\"\nload = 1.5\ncdf = \"websearch\"",
            "load",
        ),
        (
            "kind = \"closed_loop\"\nsize = \"1MB\"\nconcurrency = 0",
            "concurrency",
        ),
        ("kind = \"all_to_all\"\nhosts = 1", "hosts"),
        (
            "kind = \"ping\"\nsrc = 2\ndst = 2\ninterval = \"1ms\"",
            "ping itself",
        ),
        (
            "kind = \"ping\"\nsrc = 0\ndst = 99\ninterval = \"1ms\"",
            "dst",
        ),
        (
            "kind = \"ping\"\nsrc = 0\ndst = 1\ninterval = \"0us\"",
            "interval",
        ),
        (
            "kind = \"ping\"\nsrc = 0\ndst = 1\ninterval = \"1ms\"\ncount = 0",
            "count",
        ),
        ("kind = \"ping\"\nsrc = 0\ndst = 1", "interval"),
    ];
    for (w, expect) in cases {
        let msg = common::load_error(&swap(w));
        assert!(msg.contains(expect), "`{w}`: {msg}");
    }
    // Endless flows need an end time.
    let endless = VALID
        .replace("size = \"100KB\"\n", "")
        .replace("time = \"10ms\"", "when_flows_complete = true");
    assert!(common::load_error(&endless).contains("stop.time"));
    // So do pings without a count.
    let ping = swap("kind = \"ping\"\nsrc = 0\ndst = 1\ninterval = \"1ms\"")
        .replace("time = \"10ms\"", "when_flows_complete = true");
    assert!(common::load_error(&ping).contains("stop.time"));
}

#[test]
fn files_that_cannot_be_generated_are_errors_at_build_time() {
    let text = VALID.replace(
        "kind = \"permutation\"\nsize = \"100KB\"",
        "kind = \"poisson\"\nload = 0.5\ncdf = \"no-such.cdf\"",
    );
    let loaded = Scenario::from_str_with(&text, "bad.toml", ".".into(), &[]).unwrap();
    let err = eqds_sim::sim::Simulation::new(&loaded, None)
        .err()
        .expect("should fail");
    assert!(err.contains("cdf") && err.contains("bad.toml"), "{err}");
}

#[test]
fn htsim_matrices_are_read_when_the_scenario_loads() {
    let text = VALID.replace(
        "kind = \"permutation\"\nsize = \"100KB\"",
        "kind = \"htsim\"\nfile = \"no-such.cm\"",
    );
    let msg = common::load_error(&text);
    assert!(
        msg.contains("workload.file") && msg.contains("no-such.cm"),
        "{msg}"
    );
}

#[test]
fn overrides_are_checked_like_the_file() {
    let ok =
        Scenario::from_str_with(VALID, "f.toml", ".".into(), &["topology.k=6".into()]).unwrap();
    assert_eq!(ok.scenario.topology.n_hosts(), 54);
    for bad in [
        "topology.k=7",
        "nonsense",
        "seed.x=1",
        "switch.queue.kind=magic",
    ] {
        let e = Scenario::from_str_with(VALID, "f.toml", ".".into(), &[bad.into()])
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("f.toml: "), "{e}");
    }
}

#[test]
fn the_cli_reports_bad_files_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, VALID.replace("k = 4", "k = 3")).unwrap();
    let bin = env!("CARGO_BIN_EXE_eqds-sim");
    for args in [
        vec!["check", bad.to_str().unwrap()],
        vec!["run", bad.to_str().unwrap()],
    ] {
        let out = std::process::Command::new(bin)
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("bad.toml") && stderr.contains("topology.k"),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"));
    }
    let out = std::process::Command::new(bin)
        .args(["run", "/no/such/file.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Arbitrary text never panics the loader.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = Scenario::from_str_with(&text, "fuzz.toml", ".".into(), &[]);
    }

    /// Replacing any value of the valid scenario by another value never panics the
    /// loader, and what it accepts builds and runs a few microseconds without panics.
    #[test]
    fn mutated_values_never_panic(line in 0usize..40, value in prop_oneof![
        Just("-1".to_string()), Just("0".to_string()), Just("1e308".to_string()),
        Just("\"\"".to_string()), Just("\"1ps\"".to_string()), Just("[]".to_string()),
        Just("{}".to_string()), Just("true".to_string()), Just("4294967296".to_string()),
        Just("\"18446744073709551615B\"".to_string()), Just("2".to_string()),
        Just("\"1e-9Gbps\"".to_string()), Just("9223372036854775807".to_string()),
    ]) {
        let lines: Vec<&str> = VALID.lines().collect();
        let i = line % lines.len();
        let mutated: Vec<String> = lines.iter().enumerate().map(|(j, l)| {
            match (j == i, l.split_once(" = ")) {
                (true, Some((k, _))) => format!("{k} = {value}"),
                _ => l.to_string(),
            }
        }).collect();
        let text = mutated.join("\n").replace("time = \"10ms\"", "time = \"20us\"");
        if let Ok(loaded) = Scenario::from_str_with(&text, "fuzz.toml", ".".into(), &[]) {
            if let Ok(mut sim) = eqds_sim::sim::Simulation::new(&loaded, None) {
                sim.run(&mut |_, _| {}).unwrap();
            }
        }
    }
}

/// Issue 24: `rate = 0` (an integer) passed validation and divided by zero when the
/// network was built, where `rate = "0Gbps"` was refused.
#[test]
fn integer_zero_rates_are_refused_like_string_ones() {
    let dumbbell = VALID.replace(
        "kind = \"fat_tree\"\nk = 4\nlink = { rate = \"10Gbps\", latency = \"1us\" }",
        "kind = \"dumbbell\"\nleft = 2\nright = 2\nlink = { rate = \"10Gbps\", latency = \"1us\" }\n\
         bottleneck = { rate = 0, latency = \"1us\" }",
    );
    let msg = common::load_error(&dumbbell);
    assert!(
        msg.contains("topology.dumbbell.bottleneck.rate") && msg.contains("must be positive"),
        "{msg}"
    );
    for (from, to, key) in [
        (
            "rate = \"10Gbps\"",
            "rate = 0",
            "topology.fat_tree.link.rate",
        ),
        (
            "[stop]",
            "[host]\nlinks = [{ hosts = [1], rate = 0 }]\n[stop]",
            "host.links[0].rate",
        ),
        ("mtu = 1500", "mtu = 1500\nudp = { rate = 0 }", "udp.rate"),
    ] {
        let msg = common::load_error(&VALID.replacen(from, to, 1));
        assert!(
            msg.contains(key) && msg.contains("must be positive"),
            "{to}: {msg}"
        );
    }
}

/// Latencies, intervals and times past what the picosecond clock can add up (a
/// latency of i64::MAX ps overflowed the path delays at run time) are refused.
#[test]
fn durations_beyond_a_day_are_refused_in_both_forms() {
    for value in ["9223372036854775807", "\"9000000s\""] {
        let text = VALID.replacen("latency = \"1us\"", &format!("latency = {value}"), 1);
        let msg = common::load_error(&text);
        assert!(
            msg.contains("topology.fat_tree.link.latency") && msg.contains("one day"),
            "{value}: {msg}"
        );
    }
    // A day is fine.
    let day = VALID.replacen("time = \"10ms\"", "time = \"86400s\"", 1);
    Scenario::from_str_with(&day, "ok.toml", ".".into(), &[]).unwrap();
}

/// `spines = 4294967295` made more ports than 32-bit port ids number (a panic
/// when the network was built).
#[test]
fn topologies_with_more_ports_than_we_number_are_refused() {
    let text = VALID.replacen(
        "kind = \"fat_tree\"\nk = 4",
        "kind = \"leaf_spine\"\nleaves = 2\nspines = 4294967295\nhosts_per_leaf = 2",
        1,
    );
    let msg = common::load_error(&text);
    assert!(msg.contains("topology.") && msg.contains("ports"), "{msg}");
}

/// NDP's path count and PULL rate, and EQDS's reorder span, allocate or divide by
/// what they are given: beyond their ranges they hung or panicked.
#[test]
fn ndp_and_eqds_sizes_out_of_range_are_refused() {
    for (to, key) in [
        (
            "mtu = 1500\nndp = { paths = 4294967295 }",
            "ndp.paths: must be from 1 to 65535",
        ),
        (
            "mtu = 1500\nndp = { pull_rate = 1e-300 }",
            "ndp.pull_rate: must be within [0.001, 1]",
        ),
    ] {
        let msg = common::load_error(&VALID.replacen("mtu = 1500", to, 1));
        assert!(msg.contains(key), "{to}: {msg}");
    }
    let msg = common::load_error(&VALID.replacen(
        "[stop]",
        "[eqds]\nreorder_window = 4294967295\n[stop]",
        1,
    ));
    assert!(msg.contains("eqds.reorder_window"), "{msg}");
}

/// A ping's last request must start within simulated time (`start + k * interval`
/// overflowed).
#[test]
fn pings_that_would_outlast_the_clock_are_refused() {
    let text = VALID.replace(
        "kind = \"permutation\"\nsize = \"100KB\"",
        "kind = \"ping\"\nsrc = 0\ndst = 1\ninterval = \"86400s\"\ncount = 1000",
    );
    let msg = common::load_error(&text);
    assert!(
        msg.contains("workload.count") && msg.contains("one day"),
        "{msg}"
    );
}

/// Every mistake in a `clos3` topology (the DCQCN testbed) names its key.
#[test]
fn clos3_mistakes_are_named() {
    let scenario = |keys: &str| {
        format!(
            "[topology]\nkind = \"clos3\"\n{keys}\n\
             [workload]\nkind = \"permutation\"\nsize = \"100KB\"\n[stop]\ntime = \"1ms\"\n"
        )
    };
    let link = "link = { rate = \"40Gbps\", latency = \"1us\" }";
    Scenario::from_str_with(
        &scenario(&format!("hosts_per_tor = 2\n{link}")),
        "ok.toml",
        ".".into(),
        &[],
    )
    .unwrap();
    for (keys, expected) in [
        (
            "tors = 5\nhosts_per_tor = 2",
            "topology.tors: must be a multiple of tors_per_pod (2), got 5",
        ),
        (
            "tors = 0\nhosts_per_tor = 2",
            "topology.tors: must be at least 1",
        ),
        (
            "tors_per_pod = 0\nhosts_per_tor = 2",
            "topology.tors_per_pod",
        ),
        (
            "leaves_per_pod = 0\nhosts_per_tor = 2",
            "topology.leaves_per_pod",
        ),
        ("spines = 0\nhosts_per_tor = 2", "topology.spines"),
        ("hosts_per_tor = 0", "topology.hosts_per_tor"),
        ("", "missing field `hosts_per_tor`"),
        ("hosts_per_tor = 2\nleaves = 4", "unknown field `leaves`"),
        // Saturating sizes reach the port limit instead of wrapping.
        ("hosts_per_tor = 2\nspines = 4294967295", "ports"),
        (
            "hosts_per_tor = 2\ntor_leaf_link = 40",
            "`topology.clos3.tor_leaf_link`",
        ),
    ] {
        let msg = common::load_error(&scenario(&format!("{keys}\n{link}")));
        assert!(msg.contains(expected), "{keys}: {msg}");
    }
    assert!(common::load_error(&scenario("hosts_per_tor = 2")).contains("missing field `link`"));
}

/// A hardware trimming switch (issue 29) whose every key is valid: the cases below
/// each change one thing.
const HW: &str = r#"
seed = 3
[topology]
kind = "single_switch"
hosts = 8
link = { rate = "100Gbps", latency = "1us" }
[switch]
model = "tofino"
queue = { kind = "trimming", data_packets = 9, scheduling = "strict_priority" }
[switch.pipelines]
ports_per_pipeline = 4
[transport]
protocol = "ndp"
mtu = 1500
[workload]
kind = "permutation"
size = "100KB"
[stop]
time = "1ms"
[output]
ports_csv = false
"#;

#[test]
fn hardware_trimming_mistakes_are_named() {
    Scenario::from_str_with(HW, "ok.toml", ".".into(), &[]).unwrap();
    let trimming =
        "queue = { kind = \"trimming\", data_packets = 9, scheduling = \"strict_priority\" }";
    let ppp = "ports_per_pipeline = 4";
    let cases: &[(&str, &str, &str)] = &[
        // The traffic manager holds NDP trimming queues, on every switch port.
        (
            trimming,
            "queue = { kind = \"drop_tail\", limit_packets = 9 }",
            "switch.queue: the traffic manager of a \"tofino\" switch holds NDP trimming \
             queues (kind = \"trimming\"); got drop_tail",
        ),
        (
            trimming,
            &format!("{trimming}\nedge_queue = {{ kind = \"ecn\", k_packets = 5 }}"),
            "switch.edge_queue: the traffic manager of a \"tofino\" switch holds NDP \
             trimming queues (kind = \"trimming\"); got ecn",
        ),
        (
            trimming,
            &format!("{trimming}\ntier_queue = {{ switch_down = {{ kind = \"afq\" }} }}"),
            "switch.tier_queue.switch_down: the traffic manager of a \"tofino\" switch \
             holds NDP trimming queues (kind = \"trimming\"); got afq",
        ),
        // Lossy by design, and IOFD's state is the tag of trimmed headers.
        (
            "[stop]",
            "[pfc]\nenabled = true\nlossless = [0]\n[stop]",
            "switch.model: \"tofino\" cannot be combined with pfc",
        ),
        (
            "[stop]",
            "[iofd]\nenabled = true\n[stop]",
            "switch.model: \"tofino\" cannot be combined with iofd",
        ),
        // Unknown names list the accepted ones.
        (
            "model = \"tofino\"",
            "model = \"tofino3\"",
            "switch.model: `tofino3` is not one of `output_queued`, `deflect_on_drop`, \
             `tofino`, `mirror_on_drop`, `tofino2`",
        ),
        (
            ppp,
            "meters = \"four\"",
            "switch.pipelines.meters: `four` is not one of `three`, `two`",
        ),
        (
            ppp,
            "modes = \"opt\"",
            "switch.pipelines.modes: `opt` is not one of `pess_half_opt`, `pess_opt`, \
             `trim_all_opt`",
        ),
        (
            ppp,
            "response = \"rate\"",
            "switch.pipelines.response: `rate` is not one of `time`, `count`",
        ),
        (
            ppp,
            "notify_scope = \"none\"",
            "switch.pipelines.notify_scope: `none` is not one of `all`, `origin`",
        ),
        ("model = \"tofino\"", "model = \"mirror_on_drop\"", ""),
        // Values out of range.
        (
            ppp,
            "ports_per_pipeline = 0",
            "switch.pipelines.ports_per_pipeline: must be at least 1",
        ),
        (
            ppp,
            "t0 = \"6us\"\nt1 = \"5us\"",
            "switch.pipelines.t1: 5.000us is shorter than t0 (6.000us)",
        ),
        (
            ppp,
            "t0 = \"30us\"",
            "switch.pipelines.t1: 24.000us (the default) is shorter than t0 (30.000us)",
        ),
        (
            ppp,
            "modes = \"pess_opt\"\nt1 = \"24us\"",
            "switch.pipelines.t1: modes = \"pess_opt\" has no HALF phase",
        ),
        (
            ppp,
            "modes = \"trim_all_opt\"\nt1 = \"24us\"",
            "switch.pipelines.t1: modes = \"trim_all_opt\" has no HALF phase",
        ),
        (
            ppp,
            "response = \"count\"\ntrim_count = 0",
            "switch.pipelines.trim_count: must be at least 1",
        ),
        (
            ppp,
            "trim_count = 12",
            "switch.pipelines.trim_count: only used with response = \"count\"",
        ),
        (
            ppp,
            "response = \"count\"\nt0 = \"3us\"",
            "switch.pipelines.t0: not used with response = \"count\"",
        ),
        (
            ppp,
            "meter_burst = \"1499B\"",
            "switch.pipelines.meter_burst: 1499 B is less than the MTU (transport.mtu = \
             1500 B): every full-size packet would be RED",
        ),
        (
            ppp,
            "meter_rates = [1.0, 0.5, 0.0]",
            "switch.pipelines.meter_rates[2]: a fraction of the line rate must be in (0, \
             1], got 0",
        ),
        (
            ppp,
            "meter_rates = [1.5, 0.5, 0.25]",
            "switch.pipelines.meter_rates[0]: a fraction of the line rate must be in (0, \
             1], got 1.5",
        ),
        (
            ppp,
            "meter_rates = [1.0, 0.25, 0.5]",
            "switch.pipelines.meter_rates: the OPTIMISTIC, HALF and PESSIMISTIC rates must \
             not increase",
        ),
        (
            ppp,
            "meter_rates = [1.0, 0.5]",
            "`switch.pipelines.meter_rates`: invalid length 2",
        ),
        (
            ppp,
            "recirculation_rate = 0",
            "`switch.pipelines.recirculation_rate`: rate `0` must be positive",
        ),
        (
            ppp,
            "recirculation_rate = \"0Gbps\"",
            "`switch.pipelines.recirculation_rate`",
        ),
        (
            ppp,
            "recirculation_limit_packets = 0",
            "switch.pipelines.recirculation_limit_packets: a recirculation port that \
             holds nothing",
        ),
        (ppp, "t0 = -1", "`switch.pipelines.t0`"),
        (
            ppp,
            "ports_per_pipline = 4",
            "unknown field `ports_per_pipline`",
        ),
        // A key the model does not use is refused, never ignored.
        (
            "model = \"tofino\"\nqueue",
            "model = \"deflect_on_drop\"\nqueue",
            "",
        ),
        (
            "model = \"tofino\"",
            "model = \"output_queued\"",
            "switch.pipelines.ports_per_pipeline: only used with a hardware switch model",
        ),
        (
            ppp,
            "mod_target = \"sender\"",
            "switch.pipelines.mod_target: only used with model \"mirror_on_drop\"; this \
             switch's model is \"tofino\"",
        ),
        (
            ppp,
            "ingress_lag = \"100ns\"",
            "switch.pipelines.ingress_lag: only used with model \"tofino2\"",
        ),
        // The [output] keys of the hardware switch.
        (
            "ports_csv = false",
            "mode_series = true\npipelines_csv = true\narrivals = { flows = [] }",
            "output.arrivals.flows: list at least one flow",
        ),
        (
            "ports_csv = false",
            "arrivals = { trimmed = true }",
            "unknown field `trimmed`",
        ),
    ];
    for (from, to, expect) in cases {
        assert!(HW.contains(from), "test case does not apply: {from}");
        let text = HW.replacen(from, to, 1);
        if expect.is_empty() {
            // A model that accepts the base keys: the same text must load.
            Scenario::from_str_with(&text, "ok.toml", ".".into(), &[]).unwrap();
            continue;
        }
        let msg = common::load_error(&text);
        assert!(msg.starts_with("bad.toml: "), "no file name in: {msg}");
        assert!(
            msg.contains(expect),
            "`{to}`: message does not mention `{expect}`: {msg}"
        );
    }
    // Keys of one model, given with another.
    let with = |model: &str, key: &str| {
        HW.replacen("model = \"tofino\"", &format!("model = \"{model}\""), 1)
            .replacen(ppp, key, 1)
    };
    for (model, key, expect) in [
        (
            "deflect_on_drop",
            "t0 = \"6us\"",
            "switch.pipelines.t0: only used with model \"tofino\" (the feedback loop); \
             this switch's model is \"deflect_on_drop\"",
        ),
        (
            "mirror_on_drop",
            "meter_burst = \"15KB\"",
            "switch.pipelines.meter_burst: only used with the models with ingress meters",
        ),
        (
            "tofino2",
            "notify_scope = \"origin\"",
            "switch.pipelines.notify_scope: only used with model \"tofino\"",
        ),
        (
            "deflect_on_drop",
            "depth_threshold = \"15KB\"",
            "switch.pipelines.depth_threshold: only used with model \"tofino2\"",
        ),
        (
            "tofino2",
            "depth_threshold = 0",
            "switch.pipelines.depth_threshold: must be positive",
        ),
        (
            "mirror_on_drop",
            "mod_target = \"back\"",
            "switch.pipelines.mod_target: `back` is not one of `original`, `sender`",
        ),
    ] {
        let msg = common::load_error(&with(model, key));
        assert!(msg.contains(expect), "{model} with `{key}`: {msg}");
    }
    // The output files of a hardware switch need one, and modes.csv the modes.
    let oq = HW
        .replacen("model = \"tofino\"", "model = \"output_queued\"", 1)
        .replacen("[switch.pipelines]\nports_per_pipeline = 4\n", "", 1);
    Scenario::from_str_with(&oq, "ok.toml", ".".into(), &[]).unwrap();
    for (out, expect) in [
        (
            "pipelines_csv = true",
            "output.pipelines_csv: an output-queued switch has no pipelines",
        ),
        (
            "mode_series = true",
            "output.mode_series: only model \"tofino\" has modes (the feedback loop); this \
             switch's model is \"output_queued\"",
        ),
    ] {
        let msg = common::load_error(&oq.replacen("ports_csv = false", out, 1));
        assert!(msg.contains(expect), "{out}: {msg}");
    }
    let dod = HW.replacen("model = \"tofino\"", "model = \"deflect_on_drop\"", 1);
    let msg = common::load_error(&dod.replacen("ports_csv = false", "mode_series = true", 1));
    assert!(
        msg.contains("output.mode_series: only model \"tofino\" has modes"),
        "{msg}"
    );
    // Arrivals are logged whatever the switch (the Ideal switch is a baseline).
    let arrivals = "arrivals = { trimmed_only = true, flows = [0, 3] }";
    Scenario::from_str_with(
        &oq.replacen("ports_csv = false", arrivals, 1),
        "ok.toml",
        ".".into(),
        &[],
    )
    .unwrap();
    // `--set` reaches the new keys and is checked like the file.
    let e = Scenario::from_str_with(
        HW,
        "f.toml",
        ".".into(),
        &["switch.pipelines.t0=30us".into()],
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("switch.pipelines.t1"), "{e}");
}

/// `eqds-sim check` exits 2 with the key, as for any other bad input.
#[test]
fn the_cli_refuses_a_hardware_switch_without_trimming_queues() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    let text = HW.replacen(
        "queue = { kind = \"trimming\", data_packets = 9, scheduling = \"strict_priority\" }",
        "queue = { kind = \"drop_tail\", limit_packets = 9 }",
        1,
    );
    std::fs::write(&bad, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_eqds-sim"))
        .args(["check", bad.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("switch.queue: the traffic manager"),
        "{stderr}"
    );
}
