//! NDP over ideal trimming switches: incasts complete at line rate with nothing lost,
//! receivers share fairly, nothing stalls; MPTCP's coupling and data delivery.

mod common;

use eqds_sim::flow::FlowRecord;
use eqds_sim::output::{flow_throughput_bps, jain_index};
use eqds_sim::sim::Simulation;
use eqds_sim::units::{Time, SEC};

/// An N-to-1 NDP incast of `size` bytes per sender on a fat tree.
fn ndp_incast(
    k: u32,
    rate: &str,
    mtu: u32,
    queue: u32,
    iw: Option<u32>,
    n: u32,
    size: &str,
) -> String {
    let iw = iw.map_or(String::new(), |w| {
        format!("ndp = {{ initial_window = {w} }}")
    });
    let transport = format!("protocol = \"ndp\"\nmtu = {mtu}\n{iw}");
    common::sprayed_fat_tree_incast(k, rate, queue, &transport, n, size)
}

/// NDP on a k=4 fat tree at 10 Gbps with 8-packet trimming queues and spraying,
/// followed by `rest` (workload and stop tables).
fn ndp_k4(rest: &str) -> String {
    format!(
        r#"
        {}
        [transport]
        protocol = "ndp"
        mtu = 9000
        {rest}
        "#,
        common::sprayed_fat_tree(4, "10Gbps", 8)
    )
}

/// Checks an incast run: every flow complete with every byte, no packet dropped
/// anywhere, and the last completion within 10% of the ideal.
fn check_incast(flows: &[FlowRecord], sim: &Simulation, size: u64, mtu: u32) -> f64 {
    let net = sim.network();
    for f in flows {
        assert!(
            f.end.is_some(),
            "flow {} from {} stalled",
            f.delivered,
            f.spec.src
        );
        assert_eq!(f.delivered, size);
    }
    let drops: u64 = net.ports.iter().map(|p| p.stats.drops).sum();
    assert_eq!(drops, 0, "packets were dropped");
    let n = flows.len() as u64;
    let rate = net.host_rate(0);
    let rtt = net.max_base_rtt(mtu, 64);
    // The receiver's link carries every byte once, headers included.
    let packets = size.div_ceil((mtu - 64) as u64);
    let wire = n * (size + packets * 64);
    let ideal = (wire as f64 * 8.0 / rate as f64 * SEC as f64) as Time + rtt;
    let last = flows.iter().filter_map(|f| f.end).max().unwrap();
    let ratio = last as f64 / ideal as f64;
    assert!(
        ratio <= 1.10,
        "last completion {last} ps is {ratio:.3} x the ideal {ideal} ps"
    );
    ratio
}

#[test]
fn ndp_incasts_of_8_64_and_256_complete_near_ideal_with_nothing_lost() {
    for (k, n) in [(4, 8), (8, 64), (16, 256)] {
        let text = ndp_incast(k, "10Gbps", 9000, 8, None, n, "256KiB");
        let (flows, _, sim) = common::run(&text);
        assert_eq!(flows.len(), n as usize);
        let ratio = check_incast(&flows, &sim, 256 * 1024, 9000);
        eprintln!("N={n}: last completion at {ratio:.4} x ideal");
    }
}

#[test]
fn ndp_512_to_1_at_100g_never_stalls() {
    // The scenario on which htsim leaves 187 of 512 flows stalled.
    let text = ndp_incast(16, "100Gbps", 9000, 15, Some(15), 512, "256KiB");
    let (flows, _, sim) = common::run(&text);
    check_incast(&flows, &sim, 256 * 1024, 9000);
}

#[test]
fn ndp_incast_of_flows_smaller_than_the_initial_window() {
    // 2 packets per flow against an initial window of 15: the first RTT carries
    // everything, most of it as trimmed headers, and all of it gets through.
    let text = ndp_incast(16, "100Gbps", 9000, 15, Some(15), 300, "16KiB");
    let (flows, _, sim) = common::run(&text);
    check_incast(&flows, &sim, 16 * 1024, 9000);
    let trims: u64 = sim.network().ports.iter().map(|p| p.stats.trims).sum();
    assert!(trims > 0, "an incast this large should trim");
}

#[test]
fn ndp_senders_to_one_receiver_share_equally() {
    let text = ndp_k4(
        r#"
        [workload]
        kind = "incast"
        receiver = 0
        senders = 12
        start_spread = "20us"
        [stop]
        time = "12ms"
        warmup = "2ms"
        "#,
    );
    let rates = common::throughputs(&text);
    let jain = jain_index(&rates);
    assert!(jain >= 0.99, "Jain index {jain}, rates {rates:?}");
    let total: f64 = rates.iter().sum();
    assert!(total >= 0.95 * 10e9 * 8936.0 / 9000.0, "aggregate {total}");
}

#[test]
fn ndp_permutation_sprays_over_every_core_link() {
    let text = ndp_k4(
        r#"
        [workload]
        kind = "permutation"
        size = "2MB"
        exclude_same_rack = true
        [stop]
        when_flows_complete = true
        time = "100ms"
        "#,
    );
    let (flows, _, sim) = common::run(&text);
    assert!(flows.iter().all(|f| f.delivered == 2_000_000));
    let net = sim.network();
    let core = net
        .tier_names
        .iter()
        .position(|t| *t == "core_down")
        .unwrap() as u8;
    let sent: Vec<u64> = net
        .ports
        .iter()
        .filter(|p| p.tier == core)
        .map(|p| p.stats.tx_packets)
        .collect();
    assert!(sent.iter().all(|&s| s > 0), "idle core links: {sent:?}");
}

/// Mean throughput of an endless NDP permutation on the k=4 fat tree as a fraction
/// of the 10 Gbps links' payload rate, with `rest` added to `[transport]`.
fn ndp_permutation_share(rest: &str) -> f64 {
    let text = ndp_k4(&format!(
        r#"
        {rest}
        [workload]
        kind = "permutation"
        [stop]
        time = "6ms"
        warmup = "2ms"
        "#
    ));
    let rates = common::throughputs(&text);
    let payload_rate = 10e9 * (9000.0 - 64.0) / 9000.0;
    let total: f64 = rates.iter().sum();
    total / rates.len() as f64 / payload_rate
}

#[test]
fn ndp_default_window_covers_the_loaded_round_trip() {
    // Sprayed packets meet a packet or so of queue at every hop, and PULLs meet the
    // reverse direction's data: the default window, one BDP of that loaded round
    // trip (20 packets here), keeps the links full where one idle BDP (8) cannot.
    let default = ndp_permutation_share("");
    assert!(default > 0.95, "default window: {default:.3}");
    let idle_bdp = ndp_permutation_share("ndp = { initial_window = 8 }");
    assert!(idle_bdp < 0.8, "one idle BDP: {idle_bdp:.3}");
}

#[test]
fn ndp_runs_are_deterministic() {
    let text = ndp_incast(4, "10Gbps", 1500, 8, None, 12, "200KB");
    common::assert_runs_are_deterministic(&text);
}

fn dumbbell(protocol_flows: &str, subflows: u32) -> String {
    // RED drops in proportion to rate; a deterministic drop-tail queue instead drops
    // whichever packet a window increase squeezes in, which is the flow that grows
    // fastest, and would hide what coupling does.
    format!(
        r#"
        [topology]
        kind = "dumbbell"
        left = 2
        right = 2
        link = {{ rate = "40Gbps", latency = "1us" }}
        bottleneck = {{ rate = "10Gbps", latency = "2us" }}
        [switch]
        queue = {{ kind = "red", limit_packets = 200, min_packets = 20, max_packets = 100, p_max = 0.1, drop_non_ect = true }}
        [transport]
        mtu = 1500
        min_rto = "1ms"
        initial_rto = "1ms"
        mptcp = {{ subflows = {subflows} }}
        {protocol_flows}
        [stop]
        time = "200ms"
        warmup = "50ms"
        "#
    )
}

/// Share of the bottleneck taken by host 0's flows, against one NewReno flow from host 1.
fn share_of_host_0(host_0_flows: &str) -> f64 {
    let text = dumbbell(
        &format!(
            r#"[[workload]]
            kind = "flows"
            {host_0_flows}
            [[workload]]
            kind = "flows"
            protocol = "newreno"
            flows = [{{ src = 1, dst = 3 }}]"#
        ),
        4,
    );
    let (flows, stats, sim) = common::run(&text);
    let rate = |f: &FlowRecord| flow_throughput_bps(f, sim.warmup(), stats.end_time);
    let mine: f64 = flows.iter().filter(|f| f.spec.src == 0).map(rate).sum();
    let total: f64 = flows.iter().map(rate).sum();
    assert!(total >= 0.9 * 10e9 * 1436.0 / 1500.0, "aggregate {total}");
    mine / total
}

#[test]
fn coupled_subflows_take_far_less_than_as_many_tcp_flows() {
    // RFC 6356: 4 coupled subflows through one bottleneck should be about as
    // aggressive as one TCP flow. Four independent NewReno flows take 4/5. Subflows
    // whose windows drop to a few packets time out and slow-start uncoupled, so the
    // connection still takes somewhat more than half.
    let coupled = share_of_host_0(
        r#"protocol = "mptcp"
            flows = [{ src = 0, dst = 2 }]"#,
    );
    let uncoupled = share_of_host_0(
        r#"protocol = "newreno"
            flows = [{ src = 0, dst = 2 }, { src = 0, dst = 2 }, { src = 0, dst = 2 }, { src = 0, dst = 2 }]"#,
    );
    assert!(
        (0.75..=0.85).contains(&uncoupled),
        "4 TCP flows took {uncoupled:.3}"
    );
    assert!(
        (0.4..=0.68).contains(&coupled) && coupled < uncoupled - 0.1,
        "MPTCP took {coupled:.3} of the bottleneck (4 TCP flows: {uncoupled:.3})"
    );
}

#[test]
fn finite_mptcp_connections_deliver_every_byte_once() {
    let text = dumbbell(
        r#"[workload]
        kind = "flows"
        protocol = "mptcp"
        flows = [{ src = 0, dst = 2, size = 3_000_001 }, { src = 1, dst = 3, size = 1436 },
                 { src = 1, dst = 2, size = 100, start = "1ms" }]"#,
        8,
    );
    let (flows, _, _) = common::run(&text);
    for (f, size) in flows.iter().zip([3_000_001, 1436, 100]) {
        assert!(f.end.is_some(), "connection of {size} B did not complete");
        assert_eq!(f.received, size);
        assert_eq!(f.delivered, size);
    }
}

#[test]
fn one_mptcp_connection_fills_four_parallel_paths() {
    // A 40 Gbps host behind four 10 Gbps spine paths: one TCP flow is stuck on one
    // path; 8 subflows spread over all four and the scheduler keeps every one busy,
    // without the host ever dropping its own packets.
    let text = |protocol: &str| {
        format!(
            r#"
            [topology]
            kind = "leaf_spine"
            leaves = 2
            spines = 4
            hosts_per_leaf = 1
            link = {{ rate = "10Gbps", latency = "1us" }}
            host_link = {{ rate = "40Gbps", latency = "1us" }}
            [switch]
            queue = {{ kind = "drop_tail", limit_packets = 100 }}
            [transport]
            protocol = "{protocol}"
            mtu = 9000
            min_rto = "1ms"
            initial_rto = "1ms"
            [workload]
            kind = "flows"
            flows = [{{ src = 0, dst = 1 }}]
            [stop]
            time = "30ms"
            warmup = "10ms"
            "#
        )
    };
    let rate = |protocol: &str| {
        let (flows, stats, sim) = common::run(&text(protocol));
        let host_drops = sim.network().ports[0].stats.drops;
        (
            flow_throughput_bps(&flows[0], sim.warmup(), stats.end_time),
            host_drops,
        )
    };
    let (tcp, _) = rate("newreno");
    let (mptcp, host_drops) = rate("mptcp");
    let payload = 8936.0 / 9000.0;
    assert!(tcp <= 10e9 * payload * 1.001, "TCP beat one path: {tcp}");
    assert!(mptcp >= 0.95 * 40e9 * payload, "MPTCP reached only {mptcp}");
    assert_eq!(host_drops, 0, "the sending host dropped its own packets");
}

#[test]
fn mptcp_keeps_its_nic_busy_in_a_permutation() {
    // Every host sends and receives, so ACKs come back in bunches behind data. A
    // sender that resumed only on ACKs once its NIC queue was full, or subflows whose
    // windows grew while unused, capped every connection near 0.8 (mean 0.72 here).
    let text = r#"
        [topology]
        kind = "fat_tree"
        k = 4
        link = { rate = "10Gbps", latency = "1us" }
        [switch]
        queue = { kind = "drop_tail", limit_packets = 100 }
        [transport]
        protocol = "mptcp"
        mtu = 9000
        min_rto = "10ms"
        initial_rto = "10ms"
        [workload]
        kind = "permutation"
        start_spread = "100us"
        [stop]
        time = "40ms"
        warmup = "10ms"
    "#;
    let rates: Vec<f64> = common::throughputs(text)
        .iter()
        .map(|bps| bps / 10e9)
        .collect();
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    let best = rates.iter().cloned().fold(0.0, f64::max);
    assert!(mean >= 0.8, "mean {mean:.3} of line rate, rates {rates:?}");
    assert!(best >= 0.95, "no connection got past {best:.3}");
}
