//! Exact serialisation and propagation timing, and drop accounting.

mod common;

use eqds_sim::net::{port::Port, Network};
use eqds_sim::units::{serialisation_time, NS, US};

/// A dumbbell: host 0 - switch - bottleneck - switch - host 1.
fn dumbbell(host_rate: &str, bottleneck_rate: &str, switch_latency: &str, flows: &str) -> String {
    format!(
        r#"
        [topology]
        kind = "dumbbell"
        left = 1
        right = 1
        link = {{ rate = "{host_rate}", latency = "1us" }}
        bottleneck = {{ rate = "{bottleneck_rate}", latency = "2us" }}
        [switch]
        latency = "{switch_latency}"
        [transport]
        mtu = 1500
        header = 64
        [workload]
        kind = "flows"
        flows = [{flows}]
        [stop]
        time = "1ms"
        "#
    )
}

/// Hosts 1..=`senders` each send one TCP flow of `size` bytes to host 0, all at
/// once, under one switch with 10 Gbps links and `queue` as its queue table; the
/// RTO starts at and never falls below `rto`, and the run stops at `time`.
fn into_host_0(senders: u32, size: u32, queue: &str, rto: &str, time: &str) -> String {
    let flows: Vec<String> = (1..=senders)
        .map(|s| format!("{{ src = {s}, dst = 0, size = {size} }}"))
        .collect();
    format!(
        r#"
        [topology]
        kind = "single_switch"
        hosts = {}
        link = {{ rate = "10Gbps", latency = "1us" }}
        [switch]
        queue = {queue}
        [transport]
        mtu = 1500
        min_rto = "{rto}"
        initial_rto = "{rto}"
        [workload]
        kind = "flows"
        flows = [{}]
        [stop]
        time = "{time}"
        "#,
        senders + 1,
        flows.join(", ")
    )
}

/// The switch port that sends to host 0.
fn port_to_host_0(net: &Network) -> &Port {
    net.ports
        .iter()
        .find(|p| p.peer == eqds_sim::ids::Node::Host(0))
        .unwrap()
}

#[test]
fn one_packet_crosses_three_links_store_and_forward() {
    let (flows, _, _) = common::run(&dumbbell(
        "10Gbps",
        "10Gbps",
        "0ns",
        "{ src = 0, dst = 1, size = 1000 }",
    ));
    // 1000 B of payload + 64 B header, three hops of serialisation plus propagation.
    let ser = serialisation_time(1064, 10_000_000_000);
    assert_eq!(flows[0].fct(), Some(3 * ser + 4 * US));
}

#[test]
fn a_host_link_override_sets_that_hosts_rate_and_latency_both_ways() {
    let text = dumbbell(
        "10Gbps",
        "10Gbps",
        "0ns",
        "{ src = 0, dst = 1, size = 1000 }",
    )
    .replace(
        "[workload]",
        "[host]\nlinks = [{ hosts = [1], rate = \"1Gbps\", latency = \"3us\" }]\n[workload]",
    );
    let (flows, _, sim) = common::run(&text);
    // Two 10 Gbps hops, then host 1's own 1 Gbps link with 3 us instead of 1 us.
    let ser = |rate| serialisation_time(1064, rate);
    let expected = 2 * ser(10_000_000_000) + ser(1_000_000_000) + (1 + 2 + 3) * US;
    assert_eq!(flows[0].fct(), Some(expected));
    // Host 1 sends at its own rate too; host 0 keeps the topology's.
    assert_eq!(sim.network().host_rate(1), 1_000_000_000);
    assert_eq!(sim.network().host_rate(0), 10_000_000_000);
}

#[test]
fn packets_pipeline_behind_a_slower_bottleneck() {
    // Two full packets; the 1 Gbps bottleneck serialises them back to back.
    let text = dumbbell(
        "10Gbps",
        "1Gbps",
        "0ns",
        "{ src = 0, dst = 1, size = 2872 }",
    );
    let (flows, _, _) = common::run(&text);
    let fast = serialisation_time(1500, 10_000_000_000);
    let slow = serialisation_time(1500, 1_000_000_000);
    // First packet clears hop 1 at `fast`, the bottleneck then sends both back to back,
    // and the second packet takes one more fast hop: fast + 1us + 2*slow + 2us + fast + 1us.
    assert_eq!(flows[0].fct(), Some(2 * fast + 2 * slow + 4 * US));
}

#[test]
fn switch_latency_adds_once_per_switch() {
    let base = common::run(&dumbbell(
        "10Gbps",
        "10Gbps",
        "0ns",
        "{ src = 0, dst = 1, size = 1000 }",
    ))
    .0;
    let slow = common::run(&dumbbell(
        "10Gbps",
        "10Gbps",
        "500ns",
        "{ src = 0, dst = 1, size = 1000 }",
    ))
    .0;
    assert_eq!(
        slow[0].fct().unwrap() - base[0].fct().unwrap(),
        2 * 500 * NS
    );
}

#[test]
fn drop_tail_overflow_is_counted_exactly() {
    // Ten one-packet flows reach the receiver's switch port at the same instant: one
    // goes on the wire, three wait (limit 3), six are dropped. The run stops before any
    // retransmission timeout, so nothing else is sent.
    let queue = "{ kind = \"drop_tail\", limit_packets = 3 }";
    let text = into_host_0(10, 1000, queue, "1ms", "500us");
    let (flows, _, sim) = common::run(&text);
    let net = sim.network();
    let to_receiver = port_to_host_0(net);
    assert_eq!(to_receiver.stats.drops, 6);
    assert_eq!(to_receiver.stats.dropped_bytes, 6 * 1064);
    assert_eq!(to_receiver.stats.tx_packets, 4);
    let total_drops: u64 = net.ports.iter().map(|p| p.stats.drops).sum();
    assert_eq!(total_drops, 6);
    assert_eq!(flows.iter().filter(|f| f.end.is_some()).count(), 4);
    // The four survivors arrive one serialisation time apart.
    let mut ends: Vec<u64> = flows.iter().filter_map(|f| f.end).collect();
    ends.sort();
    let ser = serialisation_time(1064, 10_000_000_000);
    for w in ends.windows(2) {
        assert_eq!(w[1] - w[0], ser);
    }
}

#[test]
fn a_trimming_switch_trims_returns_and_tcp_still_completes() {
    // Eight one-window bursts into one port with an 8-packet data queue and a
    // 4-header header queue: the excess is trimmed, the headers that do not fit go
    // back to their senders, and TCP (for which a trim is a loss) recovers by RTO.
    let queue = "{ kind = \"trimming\", data_packets = 8, header_packets = 4 }";
    let text = into_host_0(8, 14360, queue, "100us", "100ms");
    let (flows, stats, sim) = common::run(&text);
    assert_eq!(stats.reason, eqds_sim::sim::StopReason::FlowsComplete);
    assert!(flows.iter().all(|f| f.delivered == 14360));
    let net = sim.network();
    let to_receiver = port_to_host_0(net);
    assert!(
        to_receiver.stats.trims > 0 && to_receiver.stats.returns > 0,
        "{:?}",
        to_receiver.stats
    );
    // Returned headers travel back towards the senders: their ports carried them.
    let back: u64 = net
        .ports
        .iter()
        .filter(|p| p.peer != eqds_sim::ids::Node::Host(0))
        .map(|p| p.stats.tx_packets)
        .sum();
    assert!(back > 0);
}

#[test]
fn a_ping_is_answered_the_moment_it_arrives() {
    // Host 0 pings host 1 five times, 100 us apart, with lone 64-byte datagrams on an
    // idle dumbbell: every request leaves on schedule, every reply starts when its
    // request has arrived, and each round trip is exactly two one-way trips.
    let text = dumbbell("10Gbps", "10Gbps", "0ns", "{ src = 0, dst = 1, size = 1 }").replace(
        "kind = \"flows\"\n        flows = [{ src = 0, dst = 1, size = 1 }]",
        "kind = \"ping\"\n        src = 0\n        dst = 1\n        interval = \"100us\"\n        \
         count = 5\n        protocol = \"udp\"",
    );
    let (flows, _, _) = common::run(&text);
    let one_way = 3 * serialisation_time(64 + 64, 10_000_000_000) + 4 * US;
    let (requests, replies): (Vec<_>, Vec<_>) = flows.iter().partition(|f| f.spec.src == 0);
    assert_eq!((requests.len(), replies.len()), (5, 5));
    for (k, req) in requests.iter().enumerate() {
        assert_eq!(req.spec.start, k as u64 * 100 * US);
        assert_eq!(req.fct(), Some(one_way));
        let reply = replies
            .iter()
            .find(|r| r.spec.start == req.end.unwrap())
            .expect("a reply when the request arrived");
        assert_eq!(reply.spec.dst, 0);
        assert_eq!(reply.end.unwrap() - req.spec.start, 2 * one_way);
    }
}
