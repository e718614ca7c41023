//! The hardware trimming switches (`[switch] model`, the trimming paper §3-§6) run
//! whole: the trimming invariant on every model, the paper's design claims that
//! decide between the models, and determinism.

mod common;

use common::{assert_runs_are_deterministic, run};
use proptest::prelude::*;
use serde_json::Value;

const MODELS: [&str; 5] = [
    "output_queued",
    "deflect_on_drop",
    "tofino",
    "mirror_on_drop",
    "tofino2",
];

/// One switch of 80 hosts at 100 Gb/s (senders are hosts 0-63 on pipelines 0-3,
/// receivers 64-79 on pipeline 4), NDP trimming queues of `data` packets for data and
/// `headers` for headers without return to sender, and UDP flows `(src, dst, start
/// in ns)` of `packets` packets each, sent faster than the link so that every NIC
/// sends at exactly line rate.
fn udp_incast(
    model: &str,
    flows: &[(u32, u32, u64)],
    packets: u32,
    headers: u32,
    pipelines: &str,
) -> String {
    let flows: Vec<String> = flows
        .iter()
        .map(|(s, d, t)| {
            format!(
                "{{ src = {s}, dst = {d}, start = '{t}ns', size = '{}B' }}",
                packets * 1436
            )
        })
        .collect();
    let table = if model == "output_queued" {
        String::new()
    } else {
        format!("[switch.pipelines]\n{pipelines}")
    };
    format!(
        r#"
        [topology]
        kind = "single_switch"
        hosts = 80
        link = {{ rate = "100Gbps", latency = "1us" }}
        [switch]
        model = "{model}"
        queue = {{ kind = "trimming", data_packets = 9, header_packets = {headers}, return_to_sender = false, scheduling = "strict_priority" }}
        {table}
        [host]
        queue = {{ kind = "drop_tail" }}
        [transport]
        protocol = "udp"
        mtu = 1500
        header = "64B"
        [transport.udp]
        rate = "200Gbps"
        [[workload]]
        kind = "flows"
        flows = [{}]
        [stop]
        time = "100ms"
        [output]
        arrivals = {{ trimmed_only = false }}
        "#,
        flows.join(", ")
    )
}

/// What happened to every data packet of a run that ran until nothing was left.
#[derive(Debug, Default, PartialEq)]
struct Fate {
    whole: u64,
    headers: u64,
    /// Headers that came back to their sender.
    returned: u64,
    /// Packets lost in a bounded queue, as the ports counted them.
    dropped: u64,
    /// The hardware switch's own count of its real losses.
    invariant_losses: u64,
}

fn fate(text: &str) -> (Fate, Value) {
    let (_, stats, sim) = run(text);
    // Drained: nothing was left to happen, or every flow had all its bytes (UDP
    // sends nothing else).
    let reason = format!("{:?}", stats.reason);
    assert!(
        reason == "Idle" || reason == "FlowsComplete",
        "the run stopped: {reason}"
    );
    let log = sim.arrivals().expect("arrivals are logged");
    let mut f = Fate::default();
    let mut seen = std::collections::HashSet::new();
    for a in &log.rows {
        assert!(seen.insert((a.flow, a.seq)), "packet {a:?} arrived twice");
        if a.returned {
            f.returned += 1;
        } else if a.trimmed {
            f.headers += 1;
        } else {
            f.whole += 1;
        }
    }
    f.dropped = sim.network().ports.iter().map(|p| p.stats.drops).sum();
    let summary = eqds_sim::output::trimming_hw::summary(sim.network()).unwrap_or(Value::Null);
    f.invariant_losses = summary["invariant_losses"].as_u64().unwrap_or(f.dropped);
    (f, summary)
}

/// The trimming paper's invariant (its §6.4, E12): each packet reaches its
/// destination whole or as its header, unless a bounded queue overflowed and counted
/// the loss.
fn assert_conserved(text: &str, sent: u64) -> (Fate, Value) {
    let (f, summary) = fate(text);
    assert_eq!(
        f.whole + f.headers + f.returned + f.dropped,
        sent,
        "every packet is accounted for: {f:?}"
    );
    assert_eq!(
        f.invariant_losses, f.dropped,
        "the switch counts every loss"
    );
    (f, summary)
}

#[test]
fn every_model_delivers_each_packet_whole_or_as_its_header() {
    // 16 four-to-one incasts whose senders sit on four pipelines: the paper's worst
    // case for ingress meters (§4), 200 packets each.
    let flows: Vec<_> = (0..64).map(|k| (k, 64 + k % 16, 0)).collect();
    for model in MODELS {
        let (f, summary) = assert_conserved(&udp_incast(model, &flows, 200, 1000, ""), 64 * 200);
        assert_eq!(f.dropped, 0, "{model}: no queue is bounded enough to lose");
        assert!(f.headers > 0, "{model}: an incast must trim");
        if model != "output_queued" {
            assert_eq!(summary["model"], model);
        }
    }
}

#[test]
fn a_bounded_dod_queue_loses_whole_packets_and_counts_them() {
    let flows: Vec<_> = (0..64).map(|k| (k, 64 + k % 16, 0)).collect();
    let text = udp_incast(
        "deflect_on_drop",
        &flows,
        200,
        1000,
        "recirculation_limit_packets = 50",
    );
    let (f, summary) = assert_conserved(&text, 64 * 200);
    assert!(
        f.dropped > 0,
        "a 50-packet DoD queue overflows in the worst case"
    );
    assert_eq!(summary["recirc_drops"].as_u64(), Some(f.dropped));
}

#[test]
fn feedback_keeps_the_dod_queue_short_where_deflection_alone_overflows() {
    // §4 and Figure 5c: each pipeline deflects 1.2 Tb/s into its 100 Gb/s DoD port
    // when only the optimistic meters act; the full design's notifications make every
    // pipeline meter harder. (Under a sustained UDP blast the DoD queue still creeps
    // up in the pipeline that loses the ties at the traffic manager: four quarter-rate
    // meters pass the whole line rate, and trimmed headers take a few per cent of it.
    // The paper's 250-packet bound is for its NDP runs: experiments/trimming-tofino.)
    let flows: Vec<_> = (0..64)
        .map(|k| (k, 64 + k % 16, (k as u64 * 37) % 120))
        .collect();
    let peak = |model| {
        let (_, s) = assert_conserved(&udp_incast(model, &flows, 400, 1000, ""), 64 * 400);
        s["recirc_peak_packets"].as_u64().unwrap()
    };
    let (dod, tofino) = (peak("deflect_on_drop"), peak("tofino"));
    assert!(dod > 5000, "DoD only: {dod} packets");
    assert!(
        tofino * 10 < dod,
        "Tofino: {tofino} packets, DoD only {dod}"
    );
}

#[test]
fn mirrored_headers_arrive_one_recirculation_later_than_the_ideal_switchs() {
    let flows = [(0, 64, 0), (16, 64, 0)];
    let median_header_latency = |model| {
        let (_, _, sim) = run(&udp_incast(model, &flows, 300, 1000, ""));
        let mut l: Vec<u64> = sim
            .arrivals()
            .unwrap()
            .rows
            .iter()
            .filter(|a| a.trimmed)
            .map(|a| a.time - a.sent)
            .collect();
        l.sort_unstable();
        l[l.len() / 2]
    };
    let (ideal, mirrored) = (
        median_header_latency("output_queued"),
        median_header_latency("mirror_on_drop"),
    );
    // 1 us of recirculation and 5.12 ns to send the header into it, give or take
    // where its turn in the port's header queue falls (a packet time is 120 ns).
    let extra = mirrored as i64 - ideal as i64;
    assert!(
        (880_000..=1_130_000).contains(&extra),
        "MoD added {extra} ps"
    );
}

#[test]
fn mirror_on_drop_can_send_headers_back_to_their_senders() {
    let flows = [(0, 64, 0), (16, 64, 0)];
    let text = udp_incast("mirror_on_drop", &flows, 300, 1000, "mod_target = 'sender'");
    let (f, _) = assert_conserved(&text, 600);
    assert_eq!(f.headers, 0, "no header reaches the receiver");
    assert!(f.returned > 0);
    let (_, _, sim) = run(&text);
    for a in sim.arrivals().unwrap().rows.iter().filter(|a| a.returned) {
        assert!(
            a.host == 0 || a.host == 16,
            "a header went back to host {}",
            a.host
        );
    }
}

#[test]
fn notifications_reach_every_pipeline_or_only_the_origin() {
    let flows: Vec<_> = (0..64)
        .map(|k| (k, 64 + k % 16, (k as u64 * 37) % 120))
        .collect();
    let counts = |scope| {
        let text = udp_incast(
            "tofino",
            &flows,
            200,
            1000,
            &format!("notify_scope = '{scope}'"),
        );
        let (_, s) = assert_conserved(&text, 64 * 200);
        (
            s["notifies_sent"].as_u64().unwrap(),
            s["notifications"].as_u64().unwrap(),
        )
    };
    let (sent, got) = counts("all");
    assert!(sent > 0);
    // 80 ports in pipelines of 16: five pipelines hear each notification.
    assert_eq!(got, 5 * sent);
    let (sent, got) = counts("origin");
    assert!(sent > 0);
    assert_eq!(got, sent);
}

#[test]
fn hardware_switch_runs_are_deterministic() {
    let flows: Vec<_> = (0..48)
        .map(|k| (k, 64 + k % 4, (k as u64 * 37) % 120))
        .collect();
    for model in ["tofino", "mirror_on_drop"] {
        assert_runs_are_deterministic(&udp_incast(model, &flows, 100, 1000, ""));
    }
}

fn arb_case() -> impl Strategy<Value = (String, Vec<(u32, u32, u64)>, u32, u64)> {
    (
        0..MODELS.len(),
        proptest::sample::subsequence((0..64u32).collect::<Vec<_>>(), 1..24),
        1..=16u32,
        1..=120u32,
        proptest::collection::vec(0..20_000u64, 24),
        prop_oneof![Just(None), (1..=200u32).prop_map(Some)],
        2..=64u32,
        (any::<bool>(), 0..3usize, 0..=30u64),
    )
        .prop_map(
            |(m, senders, receivers, packets, starts, limit, headers, (origin, modes, t0))| {
                let model = MODELS[m];
                let flows: Vec<_> = senders
                    .iter()
                    .zip(&starts)
                    .map(|(&s, &t)| (s, 64 + s % receivers, t))
                    .collect();
                let mut keys = Vec::new();
                if model != "output_queued" {
                    if let Some(l) = limit {
                        keys.push(format!("recirculation_limit_packets = {l}"));
                    }
                }
                if model == "tofino" {
                    keys.push(format!(
                        "notify_scope = '{}'",
                        if origin { "origin" } else { "all" }
                    ));
                    keys.push(format!("t0 = '{t0}us'"));
                    match modes {
                        0 => keys.push(format!("t1 = '{}us'", 4 * t0)),
                        1 => keys.push("modes = 'pess_opt'".into()),
                        _ => keys.push("modes = 'trim_all_opt'".into()),
                    }
                }
                let text = udp_incast(model, &flows, packets, headers, &keys.join("\n"));
                let sent = flows.len() as u64 * u64::from(packets);
                (text, flows, packets, sent)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The invariant under random incasts on every model, with bounded DoD queues and
    /// header queues small enough to overflow.
    #[test]
    fn random_incasts_lose_nothing_they_do_not_count(case in arb_case()) {
        let (text, _, _, sent) = case;
        assert_conserved(&text, sent);
    }
}

#[test]
fn tofino2_trims_in_ingress_and_deflects_only_what_its_lag_lets_through() {
    // §3: ingress reads the queue depth a few stages early, so packets already past
    // the check still reach the queue. With room above the threshold for one packet
    // per pipeline (the default) none of them overflows it; with less room, those
    // that passed together do, and go through DoD.
    let flows: Vec<_> = (0..64)
        .map(|k| (k, 64 + k % 16, (k as u64 * 37) % 120))
        .collect();
    let (_, roomy) = assert_conserved(&udp_incast("tofino2", &flows, 200, 1000, ""), 64 * 200);
    assert_eq!(roomy["deflections"], 0);
    assert!(roomy["ingress_trims"].as_u64().unwrap() > 0);
    // A lag of 200 ns lets about 1.7 packet times of arrivals from every pipeline
    // past the check: the less room above the threshold, the more is deflected.
    let deflections = |threshold: &str| {
        let keys = format!("depth_threshold = '{threshold}'\ningress_lag = '200ns'");
        let (_, s) = assert_conserved(&udp_incast("tofino2", &flows, 200, 1000, &keys), 64 * 200);
        s["deflections"].as_u64().unwrap()
    };
    let (none, some, most) = (
        deflections("1500B"),
        deflections("7500B"),
        deflections("13500B"),
    );
    assert_eq!(none, 0, "room for every pipeline's lagging packets");
    assert!(none < some && some < most, "{none} < {some} < {most}");
}
