//! RoCE over EQDS through the RDMA EQIF (EQDS paper §6): a lossy trimming fabric
//! without PFC loses no RDMA packet; the EQIF's CNPs keep its queues within their
//! limit, and without DCQCN they overflow; the Stingray PAUSE stops every queue pair
//! of the engine, also one whose destination is idle; bad keys are named.

mod common;

use eqds_sim::flow::FlowRecord;
use serde_json::Value;

/// Four RoCE WRITE senders (hosts 1-4) of `size` to host 0, and host 1 also to host
/// 5, through one 25 Gbps switch with 15-packet trimming queues, inside EQDS with an
/// RDMA EQIF (`eqif` adds keys to it); `roce` is `[transport.roce]`'s body.
fn scenario(size: &str, eqif: &str, roce: &str) -> String {
    format!(
        r#"
        [topology]
        kind = "single_switch"
        hosts = 6
        link = {{ rate = "25Gbps", latency = "1us" }}
        [switch]
        queue = {{ kind = "trimming", data_packets = 15 }}
        [transport]
        protocol = "roce"
        [transport.roce]
        {roce}
        [eqds]
        enabled = true
        [[eqds.eqifs]]
        kind = "rdma"
        workloads = [0, 1]
        {eqif}
        [[workload]]
        kind = "incast"
        receiver = 0
        sender_hosts = [1, 2, 3, 4]
        size = "{size}"
        [[workload]]
        kind = "flows"
        flows = [{{ src = 1, dst = 5, size = "{size}" }}]
        [stop]
        time = "200ms"
        "#
    )
}

/// Runs `text`; returns the flows, the `"roce"` summary and the `"eqds"` one.
fn run(text: &str) -> (Vec<FlowRecord>, Value, Value) {
    let (flows, _, sim) = common::run(text);
    let roce = sim.roce_summary().expect("RoCE flows ran");
    (flows, roce, sim.eqds_summary().expect("EQDS ran"))
}

fn all_complete(flows: &[FlowRecord], size: u64) {
    for f in flows {
        assert!(
            f.end.is_some(),
            "flow {}->{} stalled",
            f.spec.src,
            f.spec.dst
        );
        assert_eq!(f.delivered, size, "flow {}->{}", f.spec.src, f.spec.dst);
    }
}

/// Mean throughput of the flow from host 1 to host 5 (the one whose destination is
/// idle), bits per second.
fn victim_bps(flows: &[FlowRecord]) -> f64 {
    let f = flows.iter().find(|f| f.spec.dst == 5).unwrap();
    let fct = (f.end.unwrap() - f.spec.start) as f64 / 1e12;
    f.delivered as f64 * 8.0 / fct
}

#[test]
fn cnps_from_the_eqif_keep_rdma_lossless_over_a_trimming_fabric() {
    let (flows, roce, eqds) = run(&scenario("2MB", "", "dcqcn = true"));
    all_complete(&flows, 2_000_000);
    let rdma = &eqds["rdma"];
    // The fabric trimmed, EQDS resent, and RoCE saw none of it.
    assert!(eqds["packets"]["trimmed_received"].as_u64().unwrap() > 0);
    assert_eq!(roce["retransmitted_packets"], 0, "{roce}");
    assert_eq!(roce["out_of_order"], 0, "{roce}");
    // The incast's senders were slowed by the EQIF's CNPs, within the limit.
    assert_eq!(rdma["overflow"], 0, "{rdma}");
    assert!(rdma["cnps"].as_u64().unwrap() > 0, "{rdma}");
    assert_eq!(roce["cnps_received"], rdma["cnps"]);
    assert_eq!(
        roce["cnps_sent"], 0,
        "no remote NP answers: nothing is CE-marked"
    );
    assert!(rdma["peak_queue_bytes"].as_u64().unwrap() <= 2 * 584_000);
    assert_eq!(rdma["pauses"], 0);
}

#[test]
fn without_dcqcn_the_rdma_eqif_queue_overflows() {
    // Line-rate go-back-N into a queue drained at a quarter of it: every resend
    // overflows again, and the incast need not finish at all.
    let (_, roce, eqds) = run(&scenario("2MB", "limit = \"100kB\"", "dcqcn = false"));
    assert!(eqds["rdma"]["overflow"].as_u64().unwrap() > 0, "{eqds}");
    assert!(
        roce["retransmitted_packets"].as_u64().unwrap() > 0,
        "{roce}"
    );
    assert_eq!(eqds["rdma"]["cnps"], 0);
}

#[test]
fn a_pause_stops_every_queue_pair_of_the_engine() {
    let cnp = run(&scenario("2MB", "", "dcqcn = true"));
    let pause = run(&scenario(
        "2MB",
        "feedback = \"pause\"\npause_at = \"60kB\"\nresume_at = \"30kB\"",
        "dcqcn = true",
    ));
    all_complete(&pause.0, 2_000_000);
    let rdma = &pause.2["rdma"];
    assert!(rdma["pauses"].as_u64().unwrap() > 0, "{rdma}");
    assert!(rdma["resumes"].as_u64().unwrap() > 0, "{rdma}");
    assert!(rdma["paused_s"].as_f64().unwrap() > 0.0);
    assert_eq!(rdma["cnps"], 0);
    // Host 1's flow to idle host 5 shares the pauses its incast flow causes; with
    // CNPs only the incast flow slows.
    let (with_cnp, with_pause) = (victim_bps(&cnp.0), victim_bps(&pause.0));
    assert!(
        with_cnp > 1.3 * with_pause,
        "victim: {with_cnp:.3e} b/s with CNPs, {with_pause:.3e} with PAUSE"
    );
}

#[test]
fn rdma_eqif_runs_are_deterministic() {
    let text = scenario("500kB", "", "dcqcn = true");
    let (a, ra, ea) = run(&text);
    let (b, rb, eb) = run(&text);
    assert_eq!((ra, ea), (rb, eb));
    let ends = |f: &[FlowRecord]| f.iter().map(|f| f.end).collect::<Vec<_>>();
    assert_eq!(ends(&a), ends(&b));
}

#[test]
fn bad_rdma_eqif_keys_are_named() {
    for (eqif, named) in [
        ("k_low = \"600kB\"", "eqds.eqifs[0].k_low, k_high"),
        ("p_max = 0.0", "eqds.eqifs[0].p_max"),
        ("p_max = 1.5", "eqds.eqifs[0].p_max"),
        ("limit = \"0B\"", "eqds.eqifs[0].limit"),
        ("feedback = \"stop\"", "feedback"),
        ("pause_at = \"10kB\"", "eqds.eqifs[0].pause_at"),
        (
            "feedback = \"pause\"\nresume_at = \"1MB\"",
            "eqds.eqifs[0].pause_at, resume_at",
        ),
        (
            "feedback = \"pause\"\ncnp_interval = \"4us\"",
            "eqds.eqifs[0].cnp_interval",
        ),
    ] {
        let err = common::load_error(&scenario("1MB", eqif, ""));
        assert!(err.contains(named), "{eqif}: {err}");
    }
    // RDMA keys on a TCP-compatible EQIF.
    let tcp = scenario("1MB", "k_low = \"10kB\"", "").replace("kind = \"rdma\"", "kind = \"tcp\"");
    let err = common::load_error(&tcp);
    assert!(
        err.contains("eqds.eqifs[0].k_low: only an RDMA EQIF"),
        "{err}"
    );
}

#[test]
fn roce_inside_eqds_needs_an_rdma_eqif_and_an_rdma_eqif_takes_only_roce() {
    let tcp_eqif = scenario("1MB", "", "").replace("kind = \"rdma\"", "kind = \"tcp\"");
    let err = common::build_error(&tcp_eqif);
    assert!(err.contains("need an RDMA EQIF"), "{err}");
    let tcp_in_rdma = scenario("1MB", "", "").replace(
        "flows = [{ src = 1, dst = 5",
        "protocol = \"cubic\"\n        flows = [{ src = 1, dst = 5",
    );
    let err = common::build_error(&tcp_in_rdma);
    assert!(
        err.contains("eqds.eqifs[0]: an RDMA EQIF carries RoCE flows only"),
        "{err}"
    );
}
