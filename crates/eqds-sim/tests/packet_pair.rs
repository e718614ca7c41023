//! Packet-pair flow control through an AFQ bottleneck, end to end (AFQ paper §5):
//! a new flow's first pair gives it its fair share, the flows share the link, and
//! the queue stays short where TCP's fills the buffer; bad keys refused by name.

mod common;

use eqds_sim::output::{flow_throughput_bps, jain_index};

const GBPS: f64 = 1e9;

/// Four senders into one receiver through a 10 Gbps AFQ bottleneck (300 KB, the
/// paper's incast buffer), flow `i` starting at `i × stagger_us`.
fn staggered(protocol: &str, stagger_us: u64, stop: &str, warmup: &str) -> String {
    let start = |i: u64| format!("\"{}us\"", i * stagger_us);
    let (s1, s2, s3) = (start(1), start(2), start(3));
    format!(
        r#"
        [topology]
        kind = "dumbbell"
        left = 4
        right = 1
        link = {{ rate = "10Gbps", latency = "1us" }}
        bottleneck = {{ rate = "10Gbps", latency = "1us" }}
        [switch]
        queue = {{ kind = "afq", limit_bytes = "300KB" }}
        [transport]
        protocol = "{protocol}"
        min_rto = "200us"
        [workload]
        kind = "flows"
        flows = [
            {{ src = 0, dst = 4 }},
            {{ src = 1, dst = 4, start = {s1} }},
            {{ src = 2, dst = 4, start = {s2} }},
            {{ src = 3, dst = 4, start = {s3} }},
        ]
        [stop]
        time = "{stop}"
        warmup = "{warmup}"
        [output]
        rates_csv = true
        queue_series = {{ interval = "5us", tiers = ["bottleneck_lr"] }}
        "#
    )
}

#[test]
fn a_new_flow_takes_its_fair_share_from_its_first_pair() {
    let (flows, stats, sim) = common::run(&staggered("packet_pair", 500, "2500us", "1700us"));
    let log = sim.rate_log().expect("rates_csv logs packet-pair rates");
    for (k, f) in flows.iter().enumerate().skip(1) {
        let start = f.spec.start;
        let share = 10.0 * GBPS / (k + 1) as f64;
        // The first rate the flow paces at: from its first pair, one round trip
        // (about 10 us here) after it starts.
        let &(at, _, first) = log
            .iter()
            .find(|(_, flow, _)| *flow as usize == k)
            .expect("every flow logs a rate");
        eprintln!(
            "flow {k}: first rate {:.2} Gbps {:.1} us after its start (share {:.2})",
            first / GBPS,
            (at - start) as f64 / 1e6,
            share / GBPS
        );
        assert!(at - start < 30_000_000, "flow {k}: first rate after {at}");
        assert!(
            (first / share - 1.0).abs() < 0.25,
            "flow {k}: first rate {first:.3e}, fair share {share:.3e}"
        );
    }
    // With all four running, they share the link evenly and fill it.
    let tput: Vec<f64> = flows
        .iter()
        .map(|f| flow_throughput_bps(f, sim.warmup(), stats.end_time))
        .collect();
    let total: f64 = tput.iter().sum();
    eprintln!("steady state: {tput:?} b/s, total {total:.3e}");
    assert!(jain_index(&tput) > 0.98, "Jain {}", jain_index(&tput));
    assert!(total > 9.0 * GBPS, "{total:.3e} b/s");
}

/// Mean and largest bottleneck backlog in bytes, the bottleneck's drops and its
/// utilisation, from a run's outputs.
fn bottleneck(text: &str) -> (f64, u64, u64, f64) {
    let dir = tempfile::tempdir().unwrap();
    common::run_dir(text, dir.path());
    let csv = std::fs::read_to_string(dir.path().join("queues.csv")).unwrap();
    let backlog: Vec<f64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap().parse().unwrap())
        .collect();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    let link = &summary["links"]["bottleneck_lr"];
    (
        backlog.iter().sum::<f64>() / backlog.len() as f64,
        link["max_backlog_bytes"].as_u64().unwrap(),
        link["drops"].as_u64().unwrap(),
        link["mean_utilisation"].as_f64().unwrap(),
    )
}

#[test]
fn packet_pair_keeps_the_afq_queue_short_where_tcp_fills_it() {
    let run = |protocol| bottleneck(&staggered(protocol, 500, "2500us", "0us"));
    let (pp_mean, pp_max, pp_drops, pp_util) = run("packet_pair");
    let (tcp_mean, tcp_max, tcp_drops, _) = run("newreno");
    eprintln!(
        "packet-pair: mean {pp_mean:.0} B, max {pp_max} B, {pp_drops} drops, util {pp_util:.3}; \
         NewReno: mean {tcp_mean:.0} B, max {tcp_max} B, {tcp_drops} drops"
    );
    assert!(
        tcp_drops > 0,
        "TCP never overflowed: the test could not fail"
    );
    assert_eq!(pp_drops, 0);
    assert!(pp_mean * 4.0 < tcp_mean, "{pp_mean:.0} vs {tcp_mean:.0}");
    assert!(pp_max * 2 < tcp_max, "{pp_max} vs {tcp_max}");
    // Short, not empty: the link stays busy.
    assert!(pp_util > 0.95, "utilisation {pp_util}");
}

const SMALL: &str = r#"
[topology]
kind = "dumbbell"
left = 1
right = 1
link = { rate = "10Gbps", latency = "1us" }
bottleneck = { rate = "10Gbps", latency = "1us" }
[transport]
protocol = "packet_pair"
[transport.packet_pair]
KEY
[workload]
kind = "flows"
flows = [{ src = 0, dst = 1, size = "100KB" }]
[stop]
time = "10ms"
"#;

#[test]
fn a_flow_completes_and_bad_keys_are_refused_by_name() {
    let (flows, _, _) = common::run(&SMALL.replace("KEY", ""));
    assert!(flows[0].end.is_some(), "the 100 KB flow completes");
    assert_eq!(flows[0].retransmits, 0);
    let cases: &[(&str, &str)] = &[
        ("ewma_rtts = 0", "transport.packet_pair.ewma_rtts"),
        ("ewma_rtts = -1.0", "ewma_rtts: must be within (0, 1000]"),
        ("alpha_gain = 1.5", "transport.packet_pair.alpha_gain"),
        ("inflight_bdp = 0", "transport.packet_pair.inflight_bdp"),
        ("min_rto = \"0us\"", "transport.packet_pair.min_rto"),
        ("initial_rto = \"0us\"", "transport.packet_pair.initial_rto"),
        (
            "bytes_per_round = 0",
            "transport.packet_pair.bytes_per_round",
        ),
        ("skip_inject = \"yes\"", "skip_inject"),
        ("gain = 0.5", "unknown field `gain`"),
    ];
    for (key, want) in cases {
        let msg = common::load_error(&SMALL.replace("KEY", key));
        assert!(msg.contains(want), "{key}: {msg}");
    }
    // Each documented key accepted.
    common::load(&SMALL.replace(
        "KEY",
        "min_rto = \"100us\"\ninitial_rto = \"2ms\"\newma_rtts = 2\nalpha_gain = 0.125\n\
         inflight_bdp = 2\nskip_inject = false\necn = false\nbytes_per_round = \"6KB\"",
    ));
    // Inside an EQDS tunnel the gap would measure EQDS, not the network.
    let msg = common::build_error(&format!(
        "{}\n[eqds]\nenabled = true\n",
        SMALL.replace("KEY", "")
    ));
    assert!(
        msg.contains("packet-pair") && msg.contains("legacy_workloads"),
        "{msg}"
    );
}
