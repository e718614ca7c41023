//! Native EQDS incasts and incasts over EQDS in the simulator: native incasts
//! complete near the ideal with every byte delivered once, TCP over EQDS shares a
//! receiver fairly where plain TCP does not, EQDS holds a line-rate UDP sender to
//! its share, PULL pacing leaves room for control packets on a deep FIFO, senders
//! waiting at a busy receiver do not take it for lost credit, and runs are
//! deterministic.

mod common;

use common::{native_incast, throughputs};
use eqds_sim::flow::FlowRecord;
use eqds_sim::ids::Node;
use eqds_sim::output::{flow_throughput_bps, jain_index};
use eqds_sim::sim::Simulation;
use eqds_sim::units::SEC;

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

#[test]
fn tcp_over_eqds_shares_a_receiver_almost_perfectly() {
    let plain = jain_index(&throughputs(&tcp_incast("")));
    for (mode, min_jain) in [("ndp", 0.99), ("rts", 0.98)] {
        // ECN-capable TCP: the EQIF marks instead of dropping (RFC 3168 NewReno).
        let over = throughputs(&tcp_incast(&format!(
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
    common::assert_runs_are_deterministic(&native_incast(4, 12, "200KB"));
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

/// Two line-rate UDP senders into one receiver through a trimming switch: the
/// trimmed headers that reach the receiver carry no payload, so the receiver gets
/// no more than its link carried (the headers used to count their lost payload).
#[test]
fn udp_counts_no_payload_for_trimmed_headers() {
    let text = r#"
        [topology]
        kind = "single_switch"
        hosts = 3
        link = { rate = "10Gbps", latency = "1us" }
        [switch]
        queue = { kind = "trimming", data_packets = 8 }
        [transport]
        protocol = "udp"
        [workload]
        kind = "incast"
        sender_hosts = [1, 2]
        size = "1MB"
        [stop]
        time = "1ms"
    "#;
    let (flows, stats, sim) = common::run(text);
    let trims: u64 = sim.network().ports.iter().map(|p| p.stats.trims).sum();
    assert!(trims > 100, "{trims} trims");
    let received: u64 = flows.iter().map(|f| f.received).sum();
    // The receiver's link carries at most 10 Gbps for the run's millisecond.
    let carried = 10e9 / 8.0 * stats.end_time as f64 / 1e12;
    assert!(
        (received as f64) <= carried,
        "{received} B received through a link that carries {carried} B"
    );
    assert!(
        flows.iter().all(|f| f.end.is_none()),
        "a flow that lost data completed"
    );
}
