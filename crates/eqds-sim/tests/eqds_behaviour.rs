//! EQDS in the simulator: native EQDS incasts complete near the ideal with every
//! byte delivered once, TCP over EQDS shares a receiver fairly where plain TCP does
//! not, and runs are deterministic.

mod common;

use eqds_sim::flow::FlowRecord;
use eqds_sim::ids::Node;
use eqds_sim::output::{flow_throughput_bps, jain_index};
use eqds_sim::sim::Simulation;
use eqds_sim::units::{SEC, US};

/// The paper's htsim incast setting: k-ary fat tree at 100 Gbps, MTU 4150 B,
/// 35-packet trimming queues, window 50 packets; an N-to-1 native EQDS incast.
fn native_incast(k: u32, n: u32, size: &str) -> String {
    format!(
        r#"
        [topology]
        kind = "fat_tree"
        k = {k}
        link = {{ rate = "100Gbps", latency = "1us" }}
        [switch]
        load_balancing = "spray"
        queue = {{ kind = "trimming", data_packets = 35 }}
        [host]
        queue = {{ kind = "trimming", data_packets = 1000 }}
        [transport]
        protocol = "eqds"
        mtu = "4150B"
        header = "64B"
        [eqds]
        window = 50
        overhead = "64B"
        [workload]
        kind = "incast"
        receiver = 0
        senders = {n}
        size = "{size}"
        [stop]
        when_flows_complete = true
        time = "1s"
        "#
    )
}

/// Every flow complete with every byte, nothing dropped, no datagram delivered
/// twice; returns the last completion over the time the receiver's link needs to
/// carry every packet.
fn check_native_incast(flows: &[FlowRecord], sim: &Simulation, size: u64) -> f64 {
    for f in flows {
        assert!(f.end.is_some(), "flow from {} stalled", f.spec.src);
        assert_eq!(f.delivered, size, "flow from {}", f.spec.src);
    }
    let net = sim.network();
    let drops: u64 = net.ports.iter().map(|p| p.stats.drops).sum();
    assert_eq!(drops, 0, "packets were dropped");
    let eqds = sim.eqds_summary().expect("the run uses EQDS");
    assert_eq!(eqds["tunnels"]["duplicates"], 0);
    assert_eq!(eqds["packets"]["malformed"], 0);
    let packets = size.div_ceil(4150 - 64) * flows.len() as u64;
    let ideal = packets as f64 * 4150.0 * 8.0 / 100e9 * SEC as f64;
    let last = flows.iter().filter_map(|f| f.end).max().unwrap();
    last as f64 / ideal
}

#[test]
fn native_eqds_512_to_1_completes_within_10_percent_of_ideal() {
    // htsim reaches about 70% efficiency here.
    let (flows, _, sim) = common::run(&native_incast(16, 512, "256KiB"));
    assert_eq!(flows.len(), 512);
    let ratio = check_native_incast(&flows, &sim, 256 * 1024);
    eprintln!("512-to-1: last completion at {ratio:.4} x ideal");
    assert!(ratio <= 1.10, "last completion {ratio:.3} x ideal");
}

#[test]
fn native_eqds_incast_of_flows_smaller_than_the_window() {
    // 4 datagrams per flow against a 50-packet window: the whole flow goes in the
    // first RTT, mostly trimmed or returned, and still arrives exactly once.
    let (flows, _, sim) = common::run(&native_incast(8, 100, "16KiB"));
    let ratio = check_native_incast(&flows, &sim, 16 * 1024);
    assert!(ratio <= 1.5, "last completion {ratio:.3} x ideal");
    let trims: u64 = sim.network().ports.iter().map(|p| p.stats.trims).sum();
    assert!(trims > 0, "an incast this large should trim");
}

/// 15 TCP NewReno senders into one receiver behind a 15-packet bottleneck, plain
/// (drop-tail, ECMP) or over EQDS (trimming queues, spraying: the paper's setting).
fn tcp_incast(eqds: &str) -> String {
    let (lb, queue) = if eqds.is_empty() {
        ("ecmp", r#"{ kind = "drop_tail", limit_packets = 15 }"#)
    } else {
        ("spray", r#"{ kind = "trimming", data_packets = 15 }"#)
    };
    format!(
        r#"
        [topology]
        kind = "fat_tree"
        k = 4
        link = {{ rate = "10Gbps", latency = "1us" }}
        [switch]
        load_balancing = "{lb}"
        queue = {queue}
        [transport]
        protocol = "newreno"
        min_rto = "1ms"
        {eqds}
        [workload]
        kind = "incast"
        receiver = 0
        senders = 15
        start_spread = "10us"
        [stop]
        time = "30ms"
        warmup = "5ms"
        "#
    )
}

fn rates(text: &str) -> Vec<f64> {
    let (flows, stats, sim) = common::run(text);
    flows
        .iter()
        .map(|f| flow_throughput_bps(f, sim.warmup(), stats.end_time))
        .collect()
}

#[test]
fn tcp_over_eqds_shares_a_receiver_almost_perfectly() {
    let plain = jain_index(&rates(&tcp_incast("")));
    for (mode, min_jain) in [("ndp", 0.99), ("rts", 0.98)] {
        // ECN-capable TCP: the EQIF marks instead of dropping (RFC 3168 NewReno).
        let over = rates(&tcp_incast(&format!(
            "ecn = true\n[eqds]\nenabled = true\nmode = \"{mode}\""
        )));
        let jain = jain_index(&over);
        let total: f64 = over.iter().sum();
        eprintln!("TCP Jain {plain:.3}; TCP over EQDS ({mode}) Jain {jain:.4}, {total:.3e} b/s");
        assert!(jain >= min_jain, "{mode}: Jain {jain}, rates {over:?}");
        assert!(jain > plain, "{mode}: EQDS {jain} vs plain TCP {plain}");
        assert!(total >= 0.85 * 10e9, "{mode}: aggregate {total}");
    }
}

#[test]
fn eqds_runs_are_deterministic() {
    let text = native_incast(4, 12, "200KB");
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    common::run_dir(&text, a.path());
    common::run_dir(&text, b.path());
    for file in ["flows.csv", "summary.json"] {
        let x = std::fs::read(a.path().join(file)).unwrap();
        let y = std::fs::read(b.path().join(file)).unwrap();
        assert!(x == y, "{file} differs between two runs");
    }
}

#[test]
fn native_eqds_permutation_runs_near_line_rate_at_100g() {
    // The htsim benchmark setting at k=8, 0.4 ms. Control packets spray like data:
    // on one path, the PULLs and ACKs of a whole pod overloaded it (55% at k=16).
    let text = native_incast(8, 1, "1KB")
        .replace(
            "kind = \"incast\"\n        receiver = 0\n        senders = 1\n        size = \"1KB\"",
            "kind = \"permutation\"",
        )
        .replace(
            "when_flows_complete = true\n        time = \"1s\"",
            "time = \"400us\"\n        warmup = \"100us\"",
        );
    assert!(text.contains("permutation") && text.contains("400us"));
    let (flows, stats, sim) = common::run(&text);
    let rates: Vec<f64> = flows
        .iter()
        .map(|f| flow_throughput_bps(f, sim.warmup(), stats.end_time) / 100e9)
        .collect();
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    let min = rates.iter().copied().fold(f64::MAX, f64::min);
    eprintln!("k=8 permutation: mean {mean:.3}, min {min:.3} of line rate");
    assert!(mean >= 0.85, "mean {mean}");
    assert!(min >= 0.75, "min {min}");
}

/// 4 TCP senders and, from 2 ms, a line-rate UDP sender into one 25 Gbps receiver.
fn udp_blaster(eqds: bool) -> Vec<(String, f64)> {
    let (queue, eqds) = if eqds {
        (
            r#"{ kind = "trimming", data_packets = 15 }"#,
            "[eqds]\nenabled = true",
        )
    } else {
        (r#"{ kind = "drop_tail", limit_packets = 100 }"#, "")
    };
    let text = format!(
        r#"
        [topology]
        kind = "single_switch"
        hosts = 6
        link = {{ rate = "25Gbps", latency = "1us" }}
        [switch]
        queue = {queue}
        [transport]
        min_rto = "1ms"
        initial_rto = "1ms"
        {eqds}
        [[workload]]
        kind = "incast"
        sender_hosts = [1, 2, 3, 4]
        [[workload]]
        kind = "incast"
        sender_hosts = [5]
        start = "2ms"
        protocol = "udp"
        [stop]
        time = "10ms"
        warmup = "4ms"
        "#
    );
    let (flows, stats, sim) = common::run(&text);
    flows
        .iter()
        .map(|f| {
            let bps = flow_throughput_bps(f, sim.warmup(), stats.end_time);
            (f.spec.protocol.name().to_string(), bps / 25e9)
        })
        .collect()
}

#[test]
fn eqds_holds_a_line_rate_udp_sender_to_its_share() {
    let plain = udp_blaster(false);
    let udp: f64 = plain.iter().filter(|(p, _)| p == "udp").map(|x| x.1).sum();
    let tcp: f64 = plain.iter().filter(|(p, _)| p != "udp").map(|x| x.1).sum();
    assert!(udp > 0.7 && tcp < 0.25, "without EQDS: {plain:?}");
    let over = udp_blaster(true);
    let rates: Vec<f64> = over.iter().map(|x| x.1).collect();
    assert!(jain_index(&rates) >= 0.99, "with EQDS: {over:?}");
    assert!(rates.iter().all(|&r| r > 0.17), "with EQDS: {over:?}");
}

#[test]
fn a_senders_in_flight_data_stays_near_one_bdp_whatever_its_destinations() {
    // Host 0 sends 2 MB to each of N hosts of a k=8 fat tree at 100 Gbps. Every
    // tunnel may hold a window, but the NIC takes packets only as fast as it sends
    // them, so what is in flight (sent, not yet ACKed) is about one BDP of the
    // host's link plus the NIC queue, not N windows (the paper's memory claim).
    let mut peaks = Vec::new();
    for n in [1u32, 8, 32, 100] {
        let flows: Vec<String> = (1..=n)
            .map(|d| format!("{{ src = 0, dst = {}, size = \"2MB\" }}", d + 3))
            .collect();
        let text = native_incast(8, 1, "1KB").replace(
            "kind = \"incast\"\n        receiver = 0\n        senders = 1\n        size = \"1KB\"",
            &format!("kind = \"flows\"\n        flows = [{}]", flows.join(", ")),
        );
        assert!(text.contains("kind = \"flows\""));
        let (flows, _, sim) = common::run(&text);
        assert!(flows.iter().all(|f| f.delivered == 2_000_000));
        let eqds = sim.eqds_summary().unwrap();
        let peak = eqds["peak_in_flight_bytes_per_host"].as_u64().unwrap();
        peaks.push((n, peak));
    }
    let net_bdp = {
        let (flows, _, sim) = common::run(&native_incast(8, 1, "1KB"));
        drop(flows);
        let rtt = sim.network().max_base_rtt(4150, 64) as f64;
        (rtt * 100e9 / SEC as f64 / 8.0) as u64
    };
    eprintln!("BDP {net_bdp} B; peak in flight by destinations: {peaks:?}");
    let window = 50 * 4150;
    for &(n, peak) in &peaks {
        // One window (a tunnel's NDP burst) or two BDPs, whichever is more, plus
        // the NIC queue: never N windows.
        let bound = window.max(2 * net_bdp) + 2 * 4150;
        assert!(
            peak <= bound,
            "{n} destinations: {peak} B in flight > {bound}"
        );
    }
}

#[test]
fn bound_closed_loop_clients_download_only_from_their_servers() {
    let text = r#"
        [topology]
        kind = "leaf_spine"
        leaves = 2
        spines = 2
        hosts_per_leaf = 4
        link = { rate = "25Gbps", latency = "1us" }
        [transport]
        min_rto = "1ms"
        [workload]
        kind = "closed_loop"
        size = "100KB"
        client_hosts = [4, 5, 6]
        server_hosts = [0, 1]
        [stop]
        time = "2ms"
    "#;
    let (flows, _, _) = common::run(text);
    assert!(
        flows.len() > 6,
        "the loop keeps going: {} flows",
        flows.len()
    );
    for f in &flows {
        let expected = match f.spec.dst {
            4 | 6 => 0,
            5 => 1,
            other => panic!("host {other} is not a client"),
        };
        assert_eq!(f.spec.src, expected, "client {} server", f.spec.dst);
    }
}

/// Two racks of two hosts under two spines, every link at `rate` with 1 us of
/// latency, 15-packet trimming queues and spraying: the smallest network with two
/// paths between racks. The `[topology]` and `[switch]` tables.
fn two_racks_two_spines(rate: &str) -> String {
    two_racks_two_spines_trimming_at(rate, "data_packets = 15")
}

/// [`two_racks_two_spines`] with the trimming queues' data limit `limit`.
fn two_racks_two_spines_trimming_at(rate: &str, limit: &str) -> String {
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

/// Closed-loop 1 MB TCP Cubic downloads over EQDS on a small 25 Gbps leaf-spine
/// (2 x 2 hosts, 15-packet trimming queues, spraying), `clients[i]` fetching from
/// `servers[i]` for `time`, with `eqds` added to the `[eqds]` table: the median FCT
/// and the RTS packets sent.
fn downloads_over_eqds(eqds: &str, clients: &str, servers: &str, time: &str) -> (u64, u64) {
    let network = two_racks_two_spines("25Gbps");
    let text = format!(
        r#"
        {network}
        [transport]
        protocol = "cubic"
        min_rto = "1ms"
        initial_rto = "1ms"
        [eqds]
        enabled = true
        {eqds}
        [workload]
        kind = "closed_loop"
        size = "1MB"
        client_hosts = {clients}
        server_hosts = {servers}
        [stop]
        time = "{time}"
    "#
    );
    let (flows, _, sim) = common::run(&text);
    let mut fcts: Vec<u64> = flows.iter().filter_map(FlowRecord::fct).collect();
    assert!(fcts.len() >= 10, "only {} downloads completed", fcts.len());
    fcts.sort_unstable();
    let rts = sim.eqds_summary().unwrap()["packets"]["rts_sent"]
        .as_u64()
        .unwrap();
    (fcts[fcts.len() / 2], rts)
}

/// Median FCT of downloads between two hosts in both directions at once, NDP mode,
/// with or without `acks_first`.
fn two_way_downloads_median_fct(acks_first: bool) -> u64 {
    let eqds = format!("acks_first = {acks_first}");
    downloads_over_eqds(&eqds, "[0, 2]", "[2, 0]", "15ms").0
}

#[test]
fn acks_queued_ahead_of_data_speed_up_downloads_both_ways() {
    let fifo = two_way_downloads_median_fct(false);
    let acks_first = two_way_downloads_median_fct(true);
    // Each host's TCP ACKs share its tunnel with its own uploads: in one FIFO they
    // wait behind up to a send queue of data, which stretches the downloads' RTT.
    assert!(
        (acks_first as f64) < 0.92 * fifo as f64,
        "median FCT {acks_first} ps with ACKs first, {fifo} ps without"
    );
}

/// Downloads from one server to one client in RTS mode with the given demand
/// lookahead: (median FCT, RTS packets sent).
fn one_way_downloads(lookahead: u32) -> (u64, u64) {
    let eqds = format!("mode = \"rts\"\n        demand_lookahead = {lookahead}");
    downloads_over_eqds(&eqds, "[0]", "[2]", "10ms")
}

#[test]
fn demand_lookahead_spares_tcp_the_rts_round_trips() {
    let (fct_exact, rts_exact) = one_way_downloads(0);
    let (fct_ahead, rts_ahead) = one_way_downloads(4);
    eprintln!(
        "lookahead 0: median {fct_exact} ps, {rts_exact} RTS; 4: {fct_ahead} ps, {rts_ahead} RTS"
    );
    // Without lookahead both tunnels stall whenever their queue empties: the data
    // tunnel at the start of each download, the client's pure-ACK tunnel every
    // MTU's worth of ACKs once its first credit is spent.
    assert!(
        rts_ahead * 10 < rts_exact,
        "{rts_ahead} RTS with lookahead, {rts_exact} without"
    );
    assert!(
        (fct_ahead as f64) < 0.95 * fct_exact as f64,
        "median FCT {fct_ahead} ps with lookahead, {fct_exact} ps without"
    );
}

/// A flow of `protocol` from host 0 to host 2, sprayed over two spines, while an
/// unresponsive line-rate UDP flow from host 1 to host 3 hashes onto one of them:
/// the paper's legacy elephant (Figure 22). `eqds` is the `[eqds]` table's body.
fn elephant_on_one_spine(protocol: &str, eqds: &str, paths_csv: bool) -> String {
    let network = two_racks_two_spines("10Gbps");
    format!(
        r#"
        {network}
        [transport]
        protocol = "{protocol}"
        mtu = 1500
        min_rto = "1ms"
        [eqds]
        {eqds}
        [output]
        paths_csv = {paths_csv}
        [[workload]]
        kind = "flows"
        flows = [{{ src = 0, dst = 2 }}]
        [[workload]]
        kind = "flows"
        protocol = "udp"
        flows = [{{ src = 1, dst = 3 }}]
        [stop]
        time = "2ms"
        "#
    )
}

/// One row of `paths.csv`, the columns the test reads.
#[derive(Debug)]
struct PathRow {
    sent: u64,
    acked: u64,
    trimmed: u64,
    timed_out: u64,
    rtt_mean_ps: u64,
}

fn read_paths_csv(dir: &std::path::Path) -> Vec<PathRow> {
    let text = std::fs::read_to_string(dir.join("paths.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (sent, acked, trimmed, timed_out, rtt) = (
        col("sent"),
        col("acked"),
        col("trimmed"),
        col("timed_out"),
        col("rtt_mean_ps"),
    );
    lines
        .map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            let n = |i: usize| v[i].parse::<u64>().unwrap();
            PathRow {
                sent: n(sent),
                acked: n(acked),
                trimmed: n(trimmed),
                timed_out: n(timed_out),
                rtt_mean_ps: n(rtt),
            }
        })
        .collect()
}

#[test]
fn per_path_statistics_find_the_spine_an_elephant_fills() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = common::run_dir(&elephant_on_one_spine("eqds", "", true), dir.path());
    let mut rows = read_paths_csv(dir.path());
    assert_eq!(rows.len(), 2, "one tunnel over two path ids: {rows:?}");
    rows.sort_by_key(|r| r.trimmed);
    let (cool, hot) = (&rows[0], &rows[1]);
    // Spraying splits the packets evenly, whatever the paths' state.
    assert!(cool.sent.abs_diff(hot.sent) <= 2, "{rows:?}");
    // Only the elephant's spine trims, and it trims a good part of what it gets. How
    // much moves with the window (10% to 75% for 10-20 packets here): the tunnel's
    // arrivals phase-lock with the constant-rate UDP at the full queue.
    assert_eq!(cool.trimmed, 0, "{rows:?}");
    assert!(hot.trimmed * 20 >= hot.sent, "{rows:?}");
    // Its full queue shows in the round trip too.
    assert!(hot.rtt_mean_ps >= 2 * cool.rtt_mean_ps, "{rows:?}");
    // Every transmission is on some path, and ends at most once in a trim or a
    // timeout; nothing timed out here.
    let sent: u64 = rows.iter().map(|r| r.sent).sum();
    assert_eq!(sent, outcome.summary["eqds"]["packets"]["data_sent"]);
    for r in &rows {
        assert_eq!(r.timed_out, 0, "{r:?}");
        assert!(r.acked + r.trimmed <= r.sent, "{r:?}");
    }
}

#[test]
fn per_path_statistics_without_eqds_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = common::load(&elephant_on_one_spine("udp", "", true));
    let err = eqds_sim::run::run_to_dir(&loaded, dir.path(), &mut |_, _| {})
        .err()
        .expect("paths.csv needs EQDS");
    assert!(err.contains("output.paths_csv"), "{err}");
    // Without the request, the same scenario runs and writes no paths.csv.
    common::run_dir(&elephant_on_one_spine("udp", "", false), dir.path());
    assert!(!dir.path().join("paths.csv").exists());
}

#[test]
fn legacy_workloads_go_around_eqds_and_keep_their_ecmp_path() {
    // TCP over EQDS with the UDP elephant as legacy traffic: the elephant keeps its
    // one ECMP path and fills it, which the tunnel's per-path statistics show.
    let dir = tempfile::tempdir().unwrap();
    let legacy = common::run_dir(
        &elephant_on_one_spine("newreno", "enabled = true\nlegacy_workloads = [1]", true),
        dir.path(),
    );
    let mut rows = read_paths_csv(dir.path());
    rows.sort_by_key(|r| r.trimmed);
    assert_eq!(
        rows.len(),
        4,
        "a tunnel each way (data, ACKs) over two paths: {rows:?}"
    );
    let hot = rows.iter().filter(|r| r.trimmed > 0).count();
    assert!(
        (1..=2).contains(&hot),
        "only the elephant's spine trims: {rows:?}"
    );
    // Tunnelled, the same UDP flow is paced by its receiver's PULLs and sprayed:
    // its packets now count in EQDS, and nothing is trimmed on any path.
    let tunnelled = common::run_dir(
        &elephant_on_one_spine("newreno", "enabled = true", true),
        dir.path(),
    );
    let written =
        |o: &eqds_sim::run::Outcome| o.summary["eqds"]["packets"]["written"].as_u64().unwrap();
    assert!(
        written(&tunnelled) > written(&legacy) + 1000,
        "the elephant's packets join EQDS"
    );
    let rows = read_paths_csv(dir.path());
    assert!(rows.iter().all(|r| r.trimmed == 0), "{rows:?}");
}

#[test]
fn legacy_workloads_must_exist() {
    let text = elephant_on_one_spine("newreno", "enabled = true\nlegacy_workloads = [2]", false);
    let err = eqds_sim::scenario::Scenario::from_str_with(&text, "t.toml", ".".into(), &[])
        .err()
        .expect("workload 2 does not exist");
    let err = err.to_string();
    assert!(
        err.contains("eqds.legacy_workloads: no workload 2"),
        "{err}"
    );
}

#[test]
fn path_avoidance_steers_a_tunnel_off_the_elephants_spine() {
    let legacy = "enabled = true\nlegacy_workloads = [1]";
    let run = |eqds: &str| {
        let dir = tempfile::tempdir().unwrap();
        common::run_dir(&elephant_on_one_spine("newreno", eqds, true), dir.path());
        let flows = std::fs::read_to_string(dir.path().join("flows.csv")).unwrap();
        let tcp = flows.lines().nth(1).unwrap().rsplit(',').next().unwrap();
        let mut rows = read_paths_csv(dir.path());
        rows.truncate(2); // the data tunnel, 0 -> 2
        rows.sort_by_key(|r| r.sent);
        (tcp.parse::<f64>().unwrap(), rows)
    };
    let (spraying, _) = run(legacy);
    let (avoiding, rows) = run(&format!("{legacy}\npath_avoidance = \"500us\""));
    // Half its packets went into the elephant's full queue; now few do.
    assert!(rows[0].sent * 10 < rows[1].sent, "{rows:?}");
    assert!(
        avoiding > 1.3 * spraying,
        "{avoiding} against {spraying} bit/s"
    );
}

#[test]
fn a_legacy_class_keeps_the_elephant_out_of_eqds_queues() {
    // The paper's testbed: EQDS in one priority class with small trimming queues,
    // legacy traffic in another with a deep drop-tail queue, EQDS served first.
    let two_classes = "enabled = true\nlegacy_workloads = [1]\nlegacy_class = 1";
    let mut text = elephant_on_one_spine("newreno", two_classes, true);
    text = text.replace(
        "queue = { kind = \"trimming\", data_packets = 15 }",
        "queue = { kind = \"strict_priority\", classes = [\
         { kind = \"trimming\", data_packets = 15 }, { kind = \"drop_tail\", limit_packets = 200 }] }",
    );
    let dir = tempfile::tempdir().unwrap();
    common::run_dir(&text, dir.path());
    // No EQDS packet meets the elephant's queue: nothing trimmed on any path...
    let rows = read_paths_csv(dir.path());
    assert!(rows.iter().all(|r| r.trimmed == 0), "{rows:?}");
    // ...and the tunnelled flow runs near the 9.57 Gbit/s of payload a 10 Gbit/s link
    // carries (8.76 measured), while the elephant gets what is left on its spine
    // (4.98; in the EQDS class with the tunnel it took 9.43, the tunnel 6.06).
    let flows = std::fs::read_to_string(dir.path().join("flows.csv")).unwrap();
    let bps: Vec<f64> = flows
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(bps[0] > 8.0e9, "TCP over EQDS {bps:?}");
    assert!(bps[1] < 7.0e9, "legacy elephant {bps:?}");
    // The class needs legacy workloads to apply to.
    let lonely = elephant_on_one_spine("newreno", "enabled = true\nlegacy_class = 1", false);
    let err = eqds_sim::scenario::Scenario::from_str_with(&lonely, "t.toml", ".".into(), &[])
        .err()
        .expect("a class for no workload")
        .to_string();
    assert!(err.contains("eqds.legacy_class"), "{err}");
}

/// Four 100 Gbps servers each send 2 MB of native EQDS to their own 25 Gbps client
/// across a 50 Gbps core (two spines) of 50-packet drop-tail queues, in RTS mode
/// (no trimming), with `window` added to the `[eqds]` table, for up to 20 ms: the
/// simulation and its flows.
fn fast_senders_to_slow_receivers(window: &str) -> (Vec<FlowRecord>, Simulation) {
    let topology = common::fast_and_slow_leaves(4);
    let text = format!(
        r#"
        {topology}
        [switch]
        load_balancing = "spray"
        queue = {{ kind = "drop_tail", limit_packets = 50 }}
        [transport]
        protocol = "eqds"
        [eqds]
        mode = "rts"
        {window}
        [workload]
        kind = "flows"
        flows = [
            {{ src = 0, dst = 4, size = "2MB" }}, {{ src = 1, dst = 5, size = "2MB" }},
            {{ src = 2, dst = 6, size = "2MB" }}, {{ src = 3, dst = 7, size = "2MB" }},
        ]
        [stop]
        when_flows_complete = true
        time = "20ms"
        "#
    );
    let (flows, _, sim) = common::run(&text);
    (flows, sim)
}

fn rto_expiries(sim: &Simulation) -> u64 {
    sim.eqds_summary().unwrap()["tunnels"]["rto_expiries"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_tunnel_to_a_slower_receiver_holds_only_the_receivers_bdp_or_must_find_losses_fast() {
    // The default window is one BDP at the slower NIC of each tunnel: four tunnels
    // of a 25 Gbps BDP fit the core's queues, nothing times out, and the flows
    // share the 50 Gbps core. Sized for the 100 Gbps senders (the longest path's
    // BDP at their rate, as one window for all would be), the four keep 4x that in
    // flight, the core overflows, and without trimming each loss waits for the
    // retransmit timeout, unless the loss reorder window finds it sooner.
    let (flows, sim) = fast_senders_to_slow_receivers("");
    assert!(flows.iter().all(|f| f.delivered == 2_000_000));
    let last = flows.iter().filter_map(|f| f.end).max().unwrap();
    // 8 MB over 50 Gbps take 1.28 ms.
    assert!(last < 1_500 * US, "last completion at {last} ps");
    assert_eq!(rto_expiries(&sim), 0);

    let rtt = sim.network().max_base_rtt(1500, 64) as f64;
    let fast_bdp = (rtt * 100e9 / SEC as f64 / 8.0 / 1500.0).ceil() as u32;
    let (flows, sim) = fast_senders_to_slow_receivers(&format!("window = {fast_bdp}"));
    let rto = rto_expiries(&sim);
    assert!(rto > 20, "window of {fast_bdp} packets: {rto} RTO expiries");
    // Each loss waits for its timeout while the tunnel runs on past the reorder
    // span, so the receiver skips the hole; the resend is then delivered late, and
    // every flow still completes (these flows have no recovery of their own).
    let tunnels = &sim.eqds_summary().unwrap()["tunnels"];
    assert!(tunnels["holes_skipped"].as_u64().unwrap() > 0, "{tunnels}");
    assert!(tunnels["late"].as_u64().unwrap() > 0, "{tunnels}");
    assert!(flows.iter().all(|f| f.delivered == 2_000_000), "{flows:?}");
    let slow_last = flows.iter().filter_map(|f| f.end).max().unwrap();
    assert!(slow_last > 1_500 * US, "last completion at {slow_last} ps");

    // The same overflow, with losses found from later packets' ACKs: every loss is
    // resent about a round trip after it, none waits for its timeout, and the
    // flows finish nearly as soon as with the right window.
    let (flows, sim) = fast_senders_to_slow_receivers(&format!(
        "window = {fast_bdp}\nloss_reorder_window = \"5us\""
    ));
    let tunnels = &sim.eqds_summary().unwrap()["tunnels"];
    assert_eq!(tunnels["rto_expiries"].as_u64(), Some(0), "{tunnels}");
    assert!(
        tunnels["reorder_losses"].as_u64().unwrap() > 100,
        "{tunnels}"
    );
    assert!(flows.iter().all(|f| f.delivered == 2_000_000), "{flows:?}");
    let last = flows.iter().filter_map(|f| f.end).max().unwrap();
    assert!(last < 1_400 * US, "last completion at {last} ps");
}

/// One long `protocol` flow over EQDS between two racks of a 25 Gbps leaf-spine,
/// with a 30-packet drop-tail EQIF that marks ECN-capable packets from 16 packets
/// on (no backpressure: TCP writes until the EQIF drops, as the paper's kernel EQIF),
/// and `eqds` added to the `[eqds]` table: its throughput as a fraction of the
/// link's payload rate.
fn one_flow_through_a_30_packet_eqif(protocol: &str, eqds: &str) -> f64 {
    let text = format!(
        r#"
        {}
        [transport]
        protocol = "{protocol}"
        mtu = 1500
        min_rto = "1ms"
        [eqds]
        enabled = true
        backpressure = false
        send_queue = 30
        ecn_threshold = 16
        {eqds}
        [workload]
        kind = "flows"
        flows = [{{ src = 0, dst = 2 }}]
        [stop]
        time = "10ms"
        warmup = "3ms"
        "#,
        two_racks_two_spines("25Gbps")
    );
    let (flows, stats, sim) = common::run(&text);
    // 1500 B on the wire carry 1392 B of payload under 64 B of TCP and 44 of EQDS.
    flow_throughput_bps(&flows[0], sim.warmup(), stats.end_time) / (25e9 * 1392.0 / 1500.0)
}

#[test]
fn tcp_over_eqds_fills_the_link_from_a_small_eqif_whatever_its_congestion_control() {
    // The paper (Appendix B): from a one-BDP EQIF buffer every TCP variant reaches
    // line rate, and DCTCP does with K = 16. The tunnel must count TCP's packets in
    // flight as demand to come (the default lookahead of tunnelled transports): asking
    // only for what waits in the EQIF, DCTCP, which keeps about K packets there, ran
    // at 84% here and NewReno at 89%; the whole window gives 99% to all three.
    for protocol in ["dctcp", "newreno", "cubic"] {
        let fraction = one_flow_through_a_30_packet_eqif(protocol, "");
        assert!(fraction > 0.97, "{protocol}: {fraction:.3} of the link");
    }
    let short = one_flow_through_a_30_packet_eqif("dctcp", "demand_lookahead = 4");
    assert!(short < 0.9, "DCTCP with 4 packets of lookahead: {short:.3}");
}

/// TCP Cubic over EQDS in a permutation across two racks of a 25 Gbps leaf-spine at
/// MTU 9000, every host sending and receiving, with `eqds` added to the `[eqds]`
/// table: each flow's throughput as a fraction of the link's payload rate, and the
/// window the run resolved, in packets. The switches trim at 135,000 B of data (15
/// full packets), counted in bytes so that the reverse flows' 108-byte ACKs do not
/// take full packets' places.
fn permutation_both_ways(eqds: &str) -> (Vec<f64>, u64) {
    let network = two_racks_two_spines_trimming_at("25Gbps", "data_bytes = \"135000B\"");
    let text = format!(
        r#"
        {network}
        [transport]
        protocol = "cubic"
        mtu = 9000
        min_rto = "1ms"
        sack = true
        [eqds]
        enabled = true
        {eqds}
        [workload]
        kind = "permutation"
        exclude_same_rack = true
        [stop]
        time = "6ms"
        warmup = "1ms"
        "#
    );
    let (flows, stats, sim) = common::run(&text);
    // 9000 B on the wire carry 8892 B of payload under 64 B of TCP and 44 of EQDS.
    let payload_rate = 25e9 * 8892.0 / 9000.0;
    let fractions = flows
        .iter()
        .map(|f| flow_throughput_bps(f, sim.warmup(), stats.end_time) / payload_rate)
        .collect();
    let window = sim.eqds_summary().unwrap()["window_packets"]
        .as_u64()
        .unwrap();
    (fractions, window)
}

#[test]
fn the_default_window_covers_the_credit_loop_of_a_loaded_fabric() {
    // With every host sending and receiving, data waits behind data at each sprayed
    // hop and PULLs wait behind the reverse direction's data: the credit loop runs
    // at about twice its idle round trip. The default window (one BDP of that loaded
    // round trip, 15 packets here) fills the links; one idle BDP (7 packets) leaves
    // every flow near 70%.
    let (default, window) = permutation_both_ways("");
    assert_eq!(window, 15);
    assert!(default.iter().all(|&f| f > 0.95), "{default:?}");
    let (idle_bdp, _) = permutation_both_ways("window = 7");
    assert!(idle_bdp.iter().all(|&f| f < 0.8), "{idle_bdp:?}");
}

#[test]
fn a_host_slowed_by_a_link_override_gets_tunnels_sized_for_it() {
    // One client at 10 Gbps among 25 Gbps hosts ([host] links): windows become per
    // tunnel, and the 1 MB download to it runs at its 10 Gbps.
    let network = two_racks_two_spines("25Gbps");
    let text = format!(
        r#"
        {network}
        [host]
        links = [{{ hosts = [3], rate = "10Gbps" }}]
        [transport]
        protocol = "cubic"
        mtu = 9000
        min_rto = "1ms"
        [eqds]
        enabled = true
        [workload]
        kind = "flows"
        flows = [{{ src = 0, dst = 3, size = "1MB" }}]
        [stop]
        time = "5ms"
        "#
    );
    let (flows, _, sim) = common::run(&text);
    let eqds = sim.eqds_summary().unwrap();
    assert_eq!(eqds["per_tunnel_windows"], true, "{eqds}");
    let fct = flows[0].fct().expect("the download completes") as f64;
    // 1 MB at 10 Gbps takes 800 us of payload; at 25 Gbps it would take 320.
    assert!((800e6..1000e6).contains(&fct), "FCT {fct} ps");
}

/// 32 Cubic senders into one receiver over EQDS in RTS mode, on a single switch
/// with one deep drop-tail queue per port and no priority classes (a legacy
/// network such as EC2's); returns the receiver downlink's largest backlog in
/// packets and the packets it dropped.
fn rts_incast_on_a_deep_fifo(pace_control: bool) -> (u64, u64) {
    let text = format!(
        r#"
        [topology]
        kind = "single_switch"
        hosts = 33
        link = {{ rate = "10Gbps", latency = "1us" }}
        [switch]
        queue = {{ kind = "drop_tail", limit_packets = 2000 }}
        [transport]
        protocol = "cubic"
        sack = true
        [eqds]
        enabled = true
        mode = "rts"
        pace_control = {pace_control}
        [workload]
        kind = "incast"
        receiver = 0
        senders = 32
        start_spread = "10us"
        [stop]
        time = "20ms"
        "#
    );
    let (_, _, sim) = common::run(&text);
    let net = sim.network();
    let down = net
        .ports
        .iter()
        .filter(|p| p.peer == Node::Host(0))
        .max_by_key(|p| p.stats.max_backlog_bytes)
        .expect("the receiver has a downlink");
    (down.stats.max_backlog_bytes / 1500, down.stats.drops)
}

#[test]
fn pull_pacing_leaves_room_for_the_control_packets_a_receiver_gets() {
    // The receiver sends TCP's ACKs through its own tunnels; their EQDS ACKs and
    // PULLs come back over the link its senders' data fills. Pacing PULLs at the
    // full link rate regardless overloads the link by that control stream, which
    // without trimming or priority grows the queue until it drops.
    let (paced, paced_drops) = rts_incast_on_a_deep_fifo(true);
    let (blind, blind_drops) = rts_incast_on_a_deep_fifo(false);
    eprintln!("downlink peak: {paced} packets paced, {blind} ({blind_drops} drops) without");
    assert_eq!(paced_drops, 0);
    assert!(paced <= 64, "paced: peak backlog {paced} packets");
    assert!(blind >= 4 * paced, "without: peak backlog {blind} packets");
}

#[test]
fn senders_waiting_their_turn_at_a_busy_receiver_do_not_take_it_for_lost_credit() {
    // 128 native senders share one 10 Gbps receiver: each gets one PULL per round of
    // about 128 x 1.2 us = 160 us, longer than the 100 us credit-loss timeout. The
    // receiver's advertised busy time covers the round, so no tunnel asks again.
    let text = r#"
        [topology]
        kind = "single_switch"
        hosts = 129
        link = { rate = "10Gbps", latency = "1us" }
        [switch]
        queue = { kind = "drop_tail", limit_packets = 2000 }
        [transport]
        protocol = "eqds"
        [eqds]
        mode = "rts"
        credit_loss_timeout = "100us"
        [workload]
        kind = "incast"
        receiver = 0
        senders = 128
        size = "200KB"
        [stop]
        when_flows_complete = true
        time = "100ms"
        "#;
    let (flows, _, sim) = common::run(text);
    assert!(
        flows.iter().all(|f| f.end.is_some()),
        "an incast flow stalled"
    );
    let tunnels = &sim.eqds_summary().unwrap()["tunnels"];
    assert_eq!(tunnels["credit_loss_rts"], 0, "{tunnels}");
    assert_eq!(tunnels["rto_expiries"], 0, "{tunnels}");
}

#[test]
fn red_in_the_eqif_keeps_an_ecn_tcp_off_its_drop_limit_at_line_rate() {
    // RED on the 30-packet EQIF: marking from 5 packets, rising to 1 in 10 at 25.
    // ECN Cubic backs off on the marks before the queue drops, and the link stays
    // full; without ECN the same Cubic fills the queue until it drops.
    let red = "ecn_threshold = 5\necn_max_threshold = 25\necn_max_p = 0.1";
    let run = |ecn: bool| {
        let text = format!(
            r#"
            {}
            [transport]
            protocol = "cubic"
            ecn = {ecn}
            min_rto = "1ms"
            [eqds]
            enabled = true
            backpressure = false
            send_queue = 30
            {red}
            [workload]
            kind = "flows"
            flows = [{{ src = 0, dst = 2 }}]
            [stop]
            time = "10ms"
            warmup = "3ms"
            "#,
            two_racks_two_spines("25Gbps")
        );
        let (flows, stats, sim) = common::run(&text);
        let packets = &sim.eqds_summary().unwrap()["packets"];
        let f = &flows[0];
        Run {
            fraction: flow_throughput_bps(f, sim.warmup(), stats.end_time)
                / (25e9 * 1392.0 / 1500.0),
            marked: packets["ecn_marked"].as_u64().unwrap(),
            dropped: packets["send_queue_full"].as_u64().unwrap(),
            rtt_max: f.rtt_max,
        }
    };
    #[derive(Debug)]
    struct Run {
        fraction: f64,
        marked: u64,
        dropped: u64,
        rtt_max: u64,
    }
    let (ecn, plain) = (run(true), run(false));
    eprintln!("ECN: {ecn:?}\nwithout: {plain:?}");
    assert!(ecn.fraction > 0.97, "{ecn:?}");
    assert!(ecn.marked > 0 && plain.marked == 0);
    // Slow start's last doubling may still overrun the queue before the first mark
    // is echoed; after that the marks keep it short.
    assert!(4 * ecn.dropped < plain.dropped, "{ecn:?} against {plain:?}");
    assert!(ecn.rtt_max < plain.rtt_max, "{ecn:?} against {plain:?}");
}
