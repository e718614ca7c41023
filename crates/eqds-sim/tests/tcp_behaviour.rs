//! TCP family behaviour: NewReno fills a bottleneck, DCTCP shares one fairly with a
//! short queue, permutations deliver, and runs are deterministic.

mod common;

use eqds_sim::output::{flow_throughput_bps, jain_index};
use std::collections::HashSet;

/// Payload a 10 Gbps link can carry with 1500 B packets and 64 B headers: throughput
/// counts payload, so this is 100%.
const GOODPUT_CAPACITY: f64 = 10e9 * 1436.0 / 1500.0;

/// One 40 Gbps host, a 10 Gbps bottleneck with a `queue`-packet drop-tail queue,
/// and one receiver, 1 us links: the `[topology]` and `[switch]` tables.
fn from_40g_into_10g(queue: u32) -> String {
    format!(
        r#"
        [topology]
        kind = "dumbbell"
        left = 1
        right = 1
        link = {{ rate = "40Gbps", latency = "1us" }}
        bottleneck = {{ rate = "10Gbps", latency = "1us" }}
        [switch]
        queue = {{ kind = "drop_tail", limit_packets = {queue} }}
        "#
    )
}

/// The backlogs in packets that `queues.csv` in `dir` samples from the 10 ms
/// warm-up on.
fn backlog_after_warmup(dir: &std::path::Path) -> Vec<f64> {
    let csv = std::fs::read_to_string(dir.join("queues.csv")).unwrap();
    csv.lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[0].parse::<u64>().unwrap() >= 10_000_000_000)
        .map(|c| c[4].parse().unwrap())
        .collect()
}

/// One long flow of `protocol` from a 40 Gbps host through a 10 Gbps bottleneck
/// with a 100-packet drop-tail queue for 30 ms, throughput measured after 10 ms;
/// `output` is the `[output]` table's body.
fn one_flow_at_10g(protocol: &str, output: &str) -> String {
    format!(
        r#"
        {}
        [transport]
        protocol = "{protocol}"
        mtu = 1500
        min_rto = "1ms"
        [output]
        {output}
        [workload]
        kind = "flows"
        flows = [{{ src = 0, dst = 1 }}]
        [stop]
        time = "30ms"
        warmup = "10ms"
    "#,
        from_40g_into_10g(100)
    )
}

/// [`one_flow_at_10g`]: the flow's throughput after the warm-up, and its
/// retransmissions.
fn one_flow_through_a_10g_bottleneck(protocol: &str) -> (f64, u64) {
    let (flows, stats, sim) = common::run(&one_flow_at_10g(protocol, ""));
    let bps = flow_throughput_bps(&flows[0], sim.warmup(), stats.end_time);
    (bps, flows[0].retransmits)
}

#[test]
fn one_newreno_flow_fills_a_10g_bottleneck() {
    let (bps, retransmits) = one_flow_through_a_10g_bottleneck("newreno");
    let fraction = bps / 10e9;
    assert!(
        fraction >= 0.95,
        "NewReno reached only {fraction:.3} of the bottleneck"
    );
    assert!(fraction <= 1.0 + 1e-9, "more than line rate: {fraction}");
    // It did probe: the queue overflowed at least once.
    assert!(retransmits > 0);
}

#[test]
fn two_dctcp_flows_share_fairly_with_the_queue_near_k() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
        [topology]
        kind = "dumbbell"
        left = 2
        right = 1
        link = { rate = "10Gbps", latency = "2us" }
        bottleneck = { rate = "10Gbps", latency = "2us" }
        [switch]
        queue = { kind = "ecn", k_packets = 20, limit_packets = 200 }
        [transport]
        protocol = "dctcp"
        mtu = 1500
        min_rto = "1ms"
        [workload]
        kind = "flows"
        flows = [{ src = 0, dst = 2 }, { src = 1, dst = 2, start = "50us" }]
        [stop]
        time = "40ms"
        warmup = "10ms"
        [output]
        queue_series = { interval = "10us", tiers = ["bottleneck_lr"] }
    "#;
    let outcome = common::run_dir(text, dir.path());
    let s = &outcome.summary;
    let rates: Vec<f64> = ["p1", "max"]
        .iter()
        .map(|k| s["throughput_bps"][k].as_f64().unwrap())
        .collect();
    let jain = s["jain_index"].as_f64().unwrap();
    assert!(jain >= 0.99, "Jain index {jain}, rates {rates:?}");
    let total = s["throughput_bps"]["mean"].as_f64().unwrap() * 2.0;
    assert!(total >= 0.95 * 10e9, "aggregate {total}");
    assert_eq!(s["totals"]["drops"].as_u64(), Some(0));
    assert!(s["totals"]["marks"].as_u64().unwrap() > 0);
    // Queue after warm-up: around K, never far above it.
    let backlog = backlog_after_warmup(dir.path());
    let mean = backlog.iter().sum::<f64>() / backlog.len() as f64;
    let max = backlog.iter().cloned().fold(0.0, f64::max);
    assert!(
        (5.0..=30.0).contains(&mean),
        "mean queue {mean} packets with K = 20"
    );
    assert!(max <= 40.0, "queue reached {max} packets with K = 20");
    let _ = jain_index(&rates);
}

#[test]
fn permutation_on_k4_fat_tree_delivers_to_every_receiver() {
    let text = r#"
        [topology]
        kind = "fat_tree"
        k = 4
        link = { rate = "10Gbps", latency = "1us" }
        [transport]
        mtu = 9000
        min_rto = "1ms"
        initial_rto = "1ms"
        [workload]
        kind = "permutation"
        size = "200KB"
        [stop]
        time = "1s"
    "#;
    let (flows, stats, _) = common::run(text);
    assert_eq!(flows.len(), 16);
    assert_eq!(stats.reason, eqds_sim::sim::StopReason::FlowsComplete);
    let receivers: HashSet<u32> = flows.iter().map(|f| f.spec.dst).collect();
    assert_eq!(receivers.len(), 16, "every host receives exactly one flow");
    for f in &flows {
        assert_ne!(f.spec.src, f.spec.dst);
        assert_eq!(
            f.delivered, 200_000,
            "flow {} -> {}",
            f.spec.src, f.spec.dst
        );
        assert!(f.end.is_some());
    }
}

const DETERMINISM: &str = r#"
    seed = 5
    [topology]
    kind = "fat_tree"
    k = 4
    link = { rate = "10Gbps", latency = "1us" }
    [switch]
    queue = { kind = "drop_tail", limit_packets = 20 }
    [transport]
    protocol = "cubic"
    min_rto = "200us"
    [[workload]]
    kind = "permutation"
    start_spread = "20us"
    [[workload]]
    kind = "poisson"
    load = 0.3
    cdf = "websearch"
    protocol = "dctcp"
    [stop]
    time = "3ms"
    [output]
    ports_csv = true
    queue_series = { interval = "50us" }
    flow_series = { interval = "100us" }
"#;

fn outputs(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    [
        "flows.csv",
        "summary.json",
        "ports.csv",
        "queues.csv",
        "flow_series.csv",
    ]
    .iter()
    .map(|f| (f.to_string(), std::fs::read(dir.join(f)).unwrap()))
    .collect()
}

#[test]
fn same_scenario_and_seed_give_identical_bytes() {
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    common::run_dir(DETERMINISM, a.path());
    common::run_dir(DETERMINISM, b.path());
    for ((name, x), (_, y)) in outputs(a.path()).into_iter().zip(outputs(b.path())) {
        assert!(
            x == y,
            "{name} differs between two runs of the same scenario and seed"
        );
        assert!(x.len() > 100, "{name} is suspiciously small");
    }
    // A different seed changes the run (and so the flows file).
    common::run_dir(&DETERMINISM.replace("seed = 5", "seed = 6"), c.path());
    assert_ne!(outputs(a.path())[0].1, outputs(c.path())[0].1);
}

/// One 100-segment flow over an uncongested path; returns (ACKs sent, completion time).
fn acks_for_one_flow(delayed: bool) -> (u64, u64) {
    let text = format!(
        r#"
        [topology]
        kind = "dumbbell"
        left = 1
        right = 1
        link = {{ rate = "10Gbps", latency = "1us" }}
        bottleneck = {{ rate = "10Gbps", latency = "1us" }}
        [switch]
        queue = {{ kind = "drop_tail", limit_packets = 1000 }}
        [transport]
        mtu = 1500
        header = 64
        initial_window = 1000
        delayed_ack = {delayed}
        delayed_ack_timeout = "50us"
        [workload]
        kind = "flows"
        flows = [{{ src = 0, dst = 1, size = 143600 }}]
        [stop]
        time = "10ms"
    "#
    );
    let (flows, _, sim) = common::run(&text);
    // Host 1's NIC sends nothing but ACKs.
    (
        sim.network().ports[1].stats.tx_packets,
        flows[0].fct().unwrap(),
    )
}

#[test]
fn delayed_acks_halve_the_ack_count_and_do_not_stall_the_flow() {
    let (immediate, fct_immediate) = acks_for_one_flow(false);
    let (delayed, fct_delayed) = acks_for_one_flow(true);
    assert_eq!(immediate, 100, "one ACK per segment");
    assert_eq!(delayed, 50, "one ACK per two segments");
    // The receiver completes on the last segment either way.
    assert_eq!(fct_immediate, fct_delayed);
}

#[test]
fn one_cubic_flow_fills_a_10g_bottleneck() {
    let (bps, _) = one_flow_through_a_10g_bottleneck("cubic");
    let fraction = bps / GOODPUT_CAPACITY;
    assert!(
        (0.95..=1.0 + 1e-9).contains(&fraction),
        "Cubic reached {fraction:.3}"
    );
}

/// One 2 MB Cubic flow from a 40 Gbps host through a 10 Gbps bottleneck with a
/// 20-packet queue, starting with a window of 100: slow start overshoots and loses
/// many packets in each window. Returns
/// (completion time, timeouts, drops at the sender's own NIC).
fn overshooting_flow(sack: bool, nic_limit: Option<u32>) -> (u64, u64, u64) {
    let nic_limit = nic_limit.map_or(String::new(), |n| format!("nic_limit = {n}"));
    let text = format!(
        r#"
        {}
        [host]
        queue = {{ kind = "drop_tail", limit_packets = 20 }}
        [transport]
        protocol = "cubic"
        mtu = 1500
        min_rto = "1ms"
        initial_rto = "1ms"
        initial_window = 100
        sack = {sack}
        {nic_limit}
        [workload]
        kind = "flows"
        flows = [{{ src = 0, dst = 1, size = 2000000 }}]
        [stop]
        time = "50ms"
    "#,
        from_40g_into_10g(20)
    );
    let (flows, _, sim) = common::run(&text);
    let f = &flows[0];
    assert_eq!(f.delivered, 2_000_000, "every byte arrives in order");
    let host_nic_drops = sim.network().ports[0].stats.drops;
    (
        f.fct().expect("the flow completes"),
        f.timeouts,
        host_nic_drops,
    )
}

#[test]
fn sack_recovers_a_slow_start_overshoot_without_a_timeout_and_faster_than_newreno() {
    let (newreno_fct, _, _) = overshooting_flow(false, Some(4));
    let (sack_fct, sack_timeouts, _) = overshooting_flow(true, Some(4));
    assert_eq!(sack_timeouts, 0, "SACK and RACK find every loss");
    // NewReno resends one hole per round trip; SACK resends every hole in one.
    assert!(
        (sack_fct as f64) < 0.8 * newreno_fct as f64,
        "SACK took {sack_fct} ps, NewReno {newreno_fct} ps"
    );
    // The bottleneck stays busy: within 25% of 2 MB at 10 Gbps.
    let ideal = 2_000_000.0 * 8.0 / 10e9 * 1500.0 / 1436.0 * 1e12;
    assert!((sack_fct as f64) < 1.25 * ideal, "SACK took {sack_fct} ps");
}

#[test]
fn tcp_small_queues_keep_a_fast_sender_from_dropping_at_its_own_nic() {
    let (_, _, unlimited_drops) = overshooting_flow(true, None);
    let (_, _, limited_drops) = overshooting_flow(true, Some(4));
    assert!(
        unlimited_drops > 0,
        "an initial window of 100 overflows a 20-packet NIC queue"
    );
    assert_eq!(limited_drops, 0);
}

/// The paper's Figure 14 incast, 850 TCP NewReno senders into one 10 Gbps receiver,
/// for 300 ms with a minimum RTO of `min_rto`, `undo` setting Eifel's undo of
/// spurious timeouts, either over EQDS (100-packet EQIF queues, 15-packet trimming
/// bottleneck) or plain into an 850-packet drop-tail bottleneck: the flows'
/// (timeouts, of those found spurious, resends, bytes delivered).
fn incast(over_eqds: bool, undo: bool, min_rto: &str) -> (u64, u64, u64, u64) {
    let network = if over_eqds {
        "[switch]\nqueue = { kind = \"trimming\", data_packets = 15 }\n\
         [eqds]\nenabled = true\nsend_queue = 100"
    } else {
        "[switch]\nqueue = { kind = \"drop_tail\", limit_packets = 850 }"
    };
    let text = format!(
        r#"
        [topology]
        kind = "single_switch"
        hosts = 851
        link = {{ rate = "10Gbps", latency = "1us" }}
        [transport]
        protocol = "newreno"
        min_rto = "{min_rto}"
        undo_spurious_rto = {undo}
        [workload]
        kind = "incast"
        receiver = 0
        senders = 850
        start_spread = "1ms"
        [stop]
        time = "300ms"
        {network}
        "#
    );
    let (flows, _, _) = common::run(&text);
    let sum = |f: fn(&eqds_sim::flow::FlowRecord) -> u64| flows.iter().map(f).sum::<u64>();
    (
        sum(|f| f.timeouts),
        sum(|f| f.spurious_timeouts),
        sum(|f| f.retransmits),
        sum(|f| f.delivered),
    )
}

#[test]
fn eifel_undoes_the_timeouts_of_packets_waiting_for_credit_in_an_eqif() {
    // 850 senders share the receiver's pulls, so each one's ACKs come about 1 ms
    // apart, and the RTO fires while its packets still wait in its EQIF for credit.
    // Go-back-N then resends what is still queued (89 timeouts, 1719 resends).
    let (timeouts, spurious, resends, plain_delivered) = incast(true, false, "1ms");
    assert!(timeouts > 20, "{timeouts} timeouts");
    assert_eq!(spurious, 0, "nothing is undone without Eifel");
    assert!(
        resends > 10 * timeouts,
        "{resends} resends, {timeouts} timeouts"
    );
    // With Eifel, the first ACK after each timeout echoes an original's send time:
    // every timeout is undone after its one resend, and the time go-back-N spent
    // resending carries new data instead.
    let (timeouts, spurious, resends, delivered) = incast(true, true, "1ms");
    assert!(timeouts > 20, "{timeouts} timeouts");
    assert_eq!(spurious, timeouts);
    assert_eq!(resends, timeouts);
    assert!(
        delivered > plain_delivered,
        "{delivered} vs {plain_delivered} bytes"
    );
}

#[test]
fn eifel_leaves_timeouts_of_real_losses_alone() {
    // Into a drop-tail bottleneck whose full queue waits 1 ms, a 10 ms RTO fires only
    // for real losses: the ACK after the resend echoes the resend, none is taken for
    // spurious, and the run is the one without Eifel.
    let without = incast(false, false, "10ms");
    let with = incast(false, true, "10ms");
    assert!(with.0 > 100, "{} timeouts", with.0);
    assert_eq!(with, without);
    // With a 1 ms RTO the same queue outlasts the timer, and Eifel finds most of
    // those timeouts spurious (7,658 of 11,781), as they are.
    let (timeouts, spurious, _, _) = incast(false, true, "1ms");
    assert!(spurious * 2 > timeouts, "{spurious} of {timeouts} spurious");
}

/// One Cubic download of 1 MB from a 100 Gbps server to a 25 Gbps client through a
/// 200-packet fair queue (the oversubscribed experiment's light load), with or
/// without HyStart: its (FCT, resends).
fn download_from_a_faster_server(hystart: bool) -> (u64, u64) {
    let topology = common::fast_and_slow_leaves(2);
    let text = format!(
        r#"
        {topology}
        [switch]
        queue = {{ kind = "fair_queue", limit_packets = 200 }}
        [transport]
        protocol = "cubic"
        min_rto = "1ms"
        sack = true
        nic_limit = 4
        hystart = {hystart}
        [workload]
        kind = "flows"
        flows = [{{ src = 0, dst = 2, size = "1MB" }}]
        [stop]
        when_flows_complete = true
        time = "10ms"
        "#
    );
    let (flows, _, _) = common::run(&text);
    (
        flows[0].fct().expect("the download completes"),
        flows[0].retransmits,
    )
}

#[test]
fn hystart_ends_slow_start_before_it_overflows_a_slower_bottleneck() {
    // Classic slow start doubles into the 25 Gbps hop until the 200-packet queue
    // overflows and loses a large share of a window (SACK resends it while the link
    // stays busy); HyStart leaves slow start once the ACK train shows the window
    // spans the path, loses nothing, and finishes as soon.
    let (classic_fct, classic_resends) = download_from_a_faster_server(false);
    let (fct, resends) = download_from_a_faster_server(true);
    eprintln!("classic: {classic_fct} ps, {classic_resends} resends; HyStart: {fct} ps, {resends}");
    assert!(classic_resends > 50, "{classic_resends} resends");
    assert_eq!(resends, 0);
    assert!(
        (fct as f64) < 1.05 * classic_fct as f64,
        "{fct} ps with HyStart vs {classic_fct} ps without"
    );
}

/// One flow of `protocol` through [`one_flow_at_10g`], with SACK if `sack`: its
/// share of the bottleneck's goodput after the warm-up, its retransmissions and the
/// bottleneck's mean backlog after the warm-up, in packets.
fn share_resends_and_queue(protocol: &str, sack: bool) -> (f64, u64, f64) {
    let text = one_flow_at_10g(
        protocol,
        r#"queue_series = { interval = "100us", tiers = ["bottleneck_lr"] }"#,
    )
    .replace(
        "min_rto = \"1ms\"",
        &format!("min_rto = \"1ms\"\nsack = {sack}"),
    );
    let dir = tempfile::tempdir().unwrap();
    common::run_dir(&text, dir.path());
    let flows = std::fs::read_to_string(dir.path().join("flows.csv")).unwrap();
    let row: Vec<String> = flows
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(String::from)
        .collect();
    let header: Vec<&str> = flows.lines().next().unwrap().split(',').collect();
    let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()].clone();
    let bps: f64 = col("mean_throughput_bps").parse().unwrap();
    let retransmits: u64 = col("retransmits").parse().unwrap();
    let samples = backlog_after_warmup(dir.path());
    let mean_queue = samples.iter().sum::<f64>() / samples.len() as f64;
    (bps / GOODPUT_CAPACITY, retransmits, mean_queue)
}

#[test]
fn one_vegas_flow_fills_a_10g_bottleneck_keeping_a_few_packets_queued() {
    // Vegas aims at 2-4 of its packets queued: after slow start it never fills the
    // 100-packet queue, where NewReno's sawtooth overflows it (the test above).
    let run = |protocol| share_resends_and_queue(protocol, false);
    let (fraction, retransmits, queue) = run("vegas");
    let (_, _, reno_queue) = run("newreno");
    eprintln!("Vegas: {fraction:.3} of the link, {retransmits} resent, {queue:.1} packets queued; NewReno {reno_queue:.1}");
    assert!(fraction > 0.97, "{fraction:.3} of the link");
    assert_eq!(retransmits, 0);
    assert!(
        (1.0..=6.0).contains(&queue),
        "mean queue {queue:.1} packets"
    );
    assert!(reno_queue > 20.0, "NewReno's mean queue {reno_queue:.1}");
}

#[test]
fn one_bbr_flow_fills_a_10g_bottleneck_with_little_queue() {
    // BBR paces at its bandwidth estimate: after Startup the link is full and the
    // queue nearly empty, far from the 76 packets NewReno's sawtooth keeps (the
    // Vegas test). Startup's doubling, with Linux's window allowance of three 64 KB
    // bursts, overshoots the 100-packet queue once (48 resends here), as BBRv1 does.
    let (fraction, retransmits, queue) = share_resends_and_queue("bbr", true);
    eprintln!("BBR: {fraction:.3} of the link, {retransmits} resent, {queue:.1} packets queued");
    assert!(fraction > 0.95, "{fraction:.3} of the link");
    assert!(retransmits < 100, "{retransmits} resent");
    assert!(queue < 5.0, "mean queue {queue:.1} packets");
}
