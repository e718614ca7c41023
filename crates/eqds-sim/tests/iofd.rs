//! Blitz's in-order flow deflection (IOFD) end to end: colliding RoCE flows on a
//! lossless leaf-spine, the last-hop queue option, and `[iofd]` values refused by
//! name.

mod common;

use common::{load, run, run_dir};
use eqds_sim::scenario::Scenario;
use eqds_sim::sim::Simulation;

/// Four long RoCE WRITEs with DCQCN from leaf 0's hosts to leaf 1's over four 40
/// Gbps spines, PFC on, RED at DCQCN's 5 KB / 200 KB / 1 %. With seed 1, ECMP puts
/// two flows on one uplink (spines enough for all four at line rate).
fn colliding(extra: &str) -> String {
    format!(
        r#"
        seed = 1
        [topology]
        kind = "leaf_spine"
        leaves = 2
        spines = 4
        hosts_per_leaf = 4
        link = {{ rate = "40Gbps", latency = "1us" }}
        [switch]
        queue = {{ kind = "strict_priority", classes = [{{ kind = "drop_tail", limit_packets = 1000 }}, {{ kind = "red", min_bytes = "5KB", max_bytes = "200KB", p_max = 0.01 }}] }}
        [host]
        queue = {{ kind = "strict_priority", classes = [{{ kind = "drop_tail", limit_packets = 1000 }}, {{ kind = "drop_tail" }}] }}
        [transport]
        protocol = "roce"
        mtu = 1500
        class = 1
        [transport.roce]
        opcode = "write"
        dcqcn = {{ profile = "paper" }}
        rto = "67.108864ms"
        [pfc]
        enabled = true
        lossless = [1]
        [workload]
        kind = "flows"
        flows = [{{ src = 0, dst = 4 }}, {{ src = 1, dst = 5 }}, {{ src = 2, dst = 6 }}, {{ src = 3, dst = 7 }}]
        [stop]
        time = "1ms"
        warmup = "500us"
        [output]
        ports_csv = true
        {extra}
        "#
    )
}

/// Total steady-state throughput (Gb/s), and the run's RoCE and IOFD totals.
fn outcome(text: &str) -> (f64, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = run_dir(text, dir.path());
    let flows = std::fs::read_to_string(dir.path().join("flows.csv")).unwrap();
    let total: f64 = flows
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse::<f64>().unwrap())
        .sum();
    let ports = std::fs::read_to_string(dir.path().join("ports.csv")).unwrap();
    let header = ports.lines().next().unwrap();
    assert_eq!(
        header.ends_with("iofd_deflected_packets"),
        out.summary.get("iofd").is_some(),
        "IOFD's columns exactly when IOFD is on: {header}"
    );
    (total / 1e9, out.summary)
}

/// IOFD moves a colliding flow to an idle spine: the fabric carries more, and no
/// receiver ever sees a packet out of order (with PFC nothing is lost, so any
/// out-of-order arrival would be reordering).
#[test]
fn deflection_lifts_colliding_flows_without_reordering() {
    let (off, s_off) = outcome(&colliding(""));
    let (on, s_on) = outcome(&colliding("[iofd]\nenabled = true"));
    assert!(
        on > 1.5 * off,
        "IOFD {on:.1} Gb/s against ECMP alone {off:.1} Gb/s"
    );
    assert!(s_on["iofd"]["moves"].as_u64().unwrap() > 0);
    assert_eq!(s_on["roce"]["out_of_order"], 0, "{}", s_on["roce"]);
    assert_eq!(s_on["pfc"]["lossless_drops"], 0);
    assert_eq!(s_off["roce"]["out_of_order"], 0);
    // Fewer marks: the collision is resolved by moving, not by DCQCN's cuts.
    assert!(
        s_on["roce"]["cnps_sent"].as_u64() < s_off["roce"]["cnps_sent"].as_u64(),
        "{} against {}",
        s_on["roce"]["cnps_sent"],
        s_off["roce"]["cnps_sent"]
    );
}

/// Sixteen RoCE WRITEs across four leaves (host i of leaf l to host i of leaf l+1,
/// the colliding fabric's switches): a moved flow's old and new paths cross
/// different spine downlinks, and a packet on the shorter one overtakes. The
/// last-hop re-sequencer puts every flow back in order; without it the receivers
/// see reordering (which is what makes this test able to fail).
#[test]
fn the_last_hop_re_sequencer_keeps_every_flow_in_order() {
    let four_leaves = |extra: &str| {
        let flows: Vec<String> = (0..16)
            .map(|h| format!("{{ src = {h}, dst = {} }}", (h + 4) % 16))
            .collect();
        colliding(extra)
            .replace("leaves = 2", "leaves = 4")
            .replace(
                "flows = [{ src = 0, dst = 4 }, { src = 1, dst = 5 }, { src = 2, dst = 6 }, { src = 3, dst = 7 }]",
                &format!("flows = [{}]", flows.join(", ")),
            )
            .replace("seed = 1", "seed = 2")
    };
    let (_, off) = outcome(&four_leaves("[iofd]\nenabled = true\nresequence = false"));
    assert!(
        off["roce"]["out_of_order"].as_u64().unwrap() > 0,
        "no reordering to repair: {}",
        off["roce"]
    );
    assert!(off["iofd"].get("resequencer").is_none());
    let (_, on) = outcome(&four_leaves("[iofd]\nenabled = true"));
    assert_eq!(on["roce"]["out_of_order"], 0, "{}", on["roce"]);
    assert_eq!(on["roce"]["retransmitted_packets"], 0);
    let r = &on["iofd"]["resequencer"];
    assert!(r["held_packets"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["held_packets"], r["released_in_order"], "{r}");
    assert_eq!(r["timeouts"], 0);
    assert_eq!(r["overflows"], 0);
}

/// The `refuse` rule cannot move a line-rate flow out of a standing queue (it
/// always has a packet there): the documented reason `hold` is the default.
#[test]
fn the_refuse_rule_leaves_a_standing_collision_alone() {
    let (_, s) = outcome(&colliding("[iofd]\nenabled = true\nin_order = \"refuse\""));
    assert_eq!(s["iofd"]["moves"], 0);
    assert!(s["iofd"]["refused_in_order"].as_u64().unwrap() > 0);
    assert_eq!(s["roce"]["out_of_order"], 0);
}

/// Deterministic: the same scenario gives the same run.
#[test]
fn deflection_is_deterministic() {
    let text = colliding("[iofd]\nenabled = true");
    let (a, sa) = outcome(&text);
    let (b, sb) = outcome(&text);
    assert_eq!(a, b);
    assert_eq!(sa["iofd"], sb["iofd"]);
}

/// `[switch] edge_queue` replaces the discipline of the ports facing hosts only:
/// with a non-marking one there, an incast's last hop marks nothing.
#[test]
fn the_edge_queue_applies_to_the_last_hop_only() {
    let incast = |extra: &str| {
        colliding(extra).replace(
            "flows = [{ src = 0, dst = 4 }, { src = 1, dst = 5 }, { src = 2, dst = 6 }, { src = 3, dst = 7 }]",
            "flows = [{ src = 0, dst = 4 }, { src = 1, dst = 4 }, { src = 5, dst = 4 }]",
        )
    };
    let marks = |text: &str| {
        let (_, _, sim) = run(text);
        let net = sim.network();
        let mut by_tier = std::collections::BTreeMap::new();
        for p in &net.ports {
            *by_tier.entry(net.tier_names[p.tier as usize]).or_insert(0) += p.stats.marks;
        }
        by_tier
    };
    let plain = marks(&incast(""));
    assert!(plain["leaf_down"] > 0, "{plain:?}");
    let edge = marks(&with_edge_queue(
        &incast(""),
        "{ kind = \"strict_priority\", classes = [{ kind = \"drop_tail\", limit_packets = 1000 }, { kind = \"drop_tail\" }] }",
    ));
    assert_eq!(edge["leaf_down"], 0, "{edge:?}");
}

/// `text` with `queue` as `[switch] edge_queue`.
fn with_edge_queue(text: &str, queue: &str) -> String {
    text.replacen(
        "[switch]\n",
        &format!("[switch]\n        edge_queue = {queue}\n"),
        1,
    )
}

fn error_of(extra: &str) -> String {
    error_of_text(&colliding(extra))
}

fn error_of_text(text: &str) -> String {
    match Scenario::from_str_with(text, "bad.toml", ".".into(), &[]) {
        Err(e) => e.to_string(),
        Ok(loaded) => match Simulation::new(&loaded, None) {
            Err(e) => e,
            Ok(_) => panic!("accepted: {text}"),
        },
    }
}

#[test]
fn bad_iofd_values_are_refused_by_name() {
    let cases = [
        ("threshold = 0", "iofd.threshold"),
        ("max_deflections = 0", "iofd.max_deflections"),
        ("max_deflections = 17", "iofd.max_deflections"),
        ("in_order = \"maybe\"", "iofd.in_order: `maybe`"),
        ("idle_timeout = \"0us\"", "iofd.idle_timeout"),
        (
            "move_gap = \"10us\"\nidle_timeout = \"5us\"",
            "iofd.idle_timeout",
        ),
        ("tiers = []", "iofd.tiers"),
        ("resequence_timeout = \"0us\"", "iofd.resequence_timeout"),
        ("resequence_buffer = 0", "iofd.resequence_buffer"),
        (
            "tiers = [\"core_up\"]",
            "iofd.tiers: this topology has no tier `core_up`",
        ),
        (
            "tiers = [\"leaf_down\"]",
            "iofd.tiers: `leaf_down` ports have no equal-cost",
        ),
        ("treshold = \"5KB\"", "treshold"),
        ("threshold = \"lots\"", "`iofd.threshold`"),
    ];
    for (line, want) in cases {
        let e = error_of(&format!("[iofd]\nenabled = true\n{line}"));
        assert!(e.contains(want), "{line}: {e}");
    }
    // Spraying picks a path per packet: there is no flow to move.
    let sprayed = colliding("[iofd]\nenabled = true").replace(
        "[switch]\n",
        "[switch]\n        load_balancing = \"spray\"\n",
    );
    let e = match Scenario::from_str_with(&sprayed, "bad.toml", ".".into(), &[]) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted IOFD with spraying"),
    };
    assert!(e.contains("iofd.enabled"), "{e}");
    // The last-hop queue is checked as the switch queue is, PFC's rule included.
    let e = error_of_text(&with_edge_queue(
        &colliding(""),
        "{ kind = \"drop_tail\", limit_packets = 10 }",
    ));
    assert!(e.contains("switch.edge_queue"), "{e}");
    assert!(
        load(&colliding("[iofd]\nenabled = false\nthreshold = \"1KB\""))
            .scenario
            .iofd
            .threshold
            .0
            == 1000
    );
}

/// The command line exits with 2, naming the key, for a value only the built
/// network can refuse.
#[test]
fn the_cli_exits_2_for_a_tier_without_alternatives() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        colliding("[iofd]\nenabled = true\ntiers = [\"spine_down\"]"),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_eqds-sim"))
        .args(["run", file.to_str().unwrap(), "--out"])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("iofd.tiers"), "{stderr}");
}
