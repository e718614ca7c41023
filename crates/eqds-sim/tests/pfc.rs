//! Priority flow control in a run: the lossless class never drops, headroom is never
//! exceeded, PAUSE propagates hop by hop up to the hosts, and bad settings are
//! refused by name (DCQCN paper, §2 and §4).

mod common;

use eqds_sim::net::Network;
use eqds_sim::scenario::Scenario;

/// Eight unresponsive UDP senders at line rate into host 0 of a k=4 fat tree of
/// 40 Gbps links: far more than the receiver's link takes. `pfc` is the `[pfc]`
/// table's body (empty: no PFC), `queue` the switches' and hosts' queue.
fn incast(pfc: &str, queue: &str) -> String {
    format!(
        r#"
        seed = 7
        [topology]
        kind = "fat_tree"
        k = 4
        link = {{ rate = "40Gbps", latency = "1us" }}
        [switch]
        queue = {queue}
        [host]
        queue = {queue}
        [transport]
        protocol = "udp"
        [pfc]
        {pfc}
        [workload]
        kind = "incast"
        receiver = 0
        sender_hosts = [2, 4, 5, 8, 9, 12, 13, 15]
        start_spread = "5us"
        [stop]
        time = "3ms"
        "#
    )
}

const UNLIMITED: &str = r#"{ kind = "drop_tail" }"#;

fn lossless(extra: &str) -> String {
    format!("enabled = true\nlossless = [0]\nbuffer = \"1MB\"\n{extra}")
}

/// The invariants every PFC run must keep, and what it paused.
fn check_invariants(net: &Network, end: u64) -> (u64, u64) {
    let pfc = net.pfc.as_deref().expect("PFC is on");
    let mut frames = 0;
    let mut hosts_paused = 0;
    for (id, p) in net.ports.iter().enumerate() {
        let s = pfc.port_stats(end, id as u32);
        assert_eq!(p.stats.drops, 0, "port {id} dropped a lossless packet");
        assert_eq!(s.headroom_drops, 0, "port {id}'s headroom overflowed");
        assert_eq!(s.lossless_drops, 0, "port {id}");
        assert!(
            s.max_headroom_bytes <= s.headroom_bytes,
            "port {id}: {} B in a {} B headroom",
            s.max_headroom_bytes,
            s.headroom_bytes
        );
        frames += s.frames.pause_sent;
        if (id as u32) < net.n_hosts {
            hosts_paused += s.frames.pause_received;
        }
    }
    (frames, hosts_paused)
}

#[test]
fn a_lossless_incast_never_drops_and_pause_reaches_the_hosts() {
    let (flows, stats, sim) = common::run(&incast(&lossless(""), UNLIMITED));
    let net = sim.network();
    let (frames, hosts_paused) = check_invariants(net, stats.end_time);
    assert!(frames > 0 && hosts_paused > 0, "{frames} {hosts_paused}");
    // PAUSE cascades: the core and aggregation switches are paused too, not only
    // the receiver's ToR's neighbours.
    let pfc = net.pfc.as_deref().unwrap();
    let paused_tiers: Vec<&str> = net
        .ports
        .iter()
        .enumerate()
        .filter(|(id, _)| {
            pfc.port_stats(stats.end_time, *id as u32)
                .frames
                .pause_received
                > 0
        })
        .map(|(_, p)| net.tier_names[p.tier as usize])
        .collect();
    for tier in ["host_up", "tor_up", "agg_down"] {
        assert!(
            paused_tiers.contains(&tier),
            "{tier} never paused: {paused_tiers:?}"
        );
    }
    // The receiver's link stays busy: 3 ms at 40 Gbps less the start.
    let delivered: u64 = flows.iter().map(|f| f.received).sum();
    assert!(delivered as f64 > 0.9 * 40e9 / 8.0 * 3e-3, "{delivered}");
}

#[test]
fn without_pfc_the_same_incast_drops() {
    let queue = r#"{ kind = "drop_tail", limit_packets = 100 }"#;
    let (_, _, sim) = common::run(&incast("", queue));
    let drops: u64 = sim.network().ports.iter().map(|p| p.stats.drops).sum();
    assert!(drops > 1000, "{drops}");
    assert!(sim.network().pfc.is_none());
}

#[test]
fn static_thresholds_and_pause_quanta_keep_the_invariants() {
    for extra in [
        "threshold = \"static\"",
        "mode = \"quanta\"\nquanta = 400",
        "mode = \"quanta\"\nthreshold = \"static\"",
    ] {
        let (_, stats, sim) = common::run(&incast(&lossless(extra), UNLIMITED));
        let (frames, _) = check_invariants(sim.network(), stats.end_time);
        assert!(frames > 0, "{extra}");
    }
}

/// Random loss on a lossless class models corruption, which PFC cannot prevent: it
/// is allowed, its losses are the only drops, and PFC's invariants still hold
/// (they count overflow, not corruption).
#[test]
fn random_loss_on_a_lossless_class_is_corruption_not_overflow() {
    let lossy = r#"{ kind = "random_loss", rate = 0.001, queue = { kind = "drop_tail" } }"#;
    let text = incast(&lossless(""), UNLIMITED).replacen(
        &format!("[switch]\n        queue = {UNLIMITED}"),
        &format!("[switch]\n        queue = {lossy}"),
        1,
    );
    assert!(
        text.contains("random_loss"),
        "the switch queue was not replaced"
    );
    let (_, stats, sim) = common::run(&text);
    let net = sim.network();
    let pfc = net.pfc.as_deref().unwrap();
    let mut losses = 0;
    for (id, p) in net.ports.iter().enumerate() {
        let s = pfc.port_stats(stats.end_time, id as u32);
        assert_eq!(p.stats.drops, p.stats.random_losses, "port {id}");
        assert_eq!((s.headroom_drops, s.lossless_drops), (0, 0), "port {id}");
        assert!(s.max_headroom_bytes <= s.headroom_bytes, "port {id}");
        losses += p.stats.random_losses;
    }
    assert!(losses > 0);
}

/// With pause quanta, a PAUSE is renewed while the counter stays above XON: many
/// more PAUSE frames than RESUMEs.
#[test]
fn pause_quanta_are_refreshed() {
    let (_, stats, sim) = common::run(&incast(
        &lossless("mode = \"quanta\"\nquanta = 400"),
        UNLIMITED,
    ));
    let net = sim.network();
    let pfc = net.pfc.as_deref().unwrap();
    let (mut pause, mut resume) = (0, 0);
    for id in 0..net.ports.len() as u32 {
        let s = pfc.port_stats(stats.end_time, id);
        pause += s.frames.pause_sent;
        resume += s.frames.resume_sent;
    }
    assert!(pause > 2 * resume, "{pause} PAUSE, {resume} RESUME");
}

/// The headroom covers a round trip of the cable, the response time and three
/// frames. A sender that kept going for longer than the response after the PAUSE
/// arrived would overflow it; one that stops in time fills a good part of it.
#[test]
fn a_pause_stops_the_sender_within_its_response_time() {
    for response in ["100ns", "2us"] {
        let extra = format!("response = \"{response}\"\nmargin_mtus = 0");
        let (_, stats, sim) = common::run(&incast(&lossless(&extra), UNLIMITED));
        check_invariants(sim.network(), stats.end_time);
        let net = sim.network();
        let pfc = net.pfc.as_deref().unwrap();
        let fullest = (0..net.ports.len() as u32)
            .map(|p| pfc.port_stats(stats.end_time, p))
            .max_by_key(|s| s.max_headroom_bytes)
            .unwrap();
        assert!(
            fullest.max_headroom_bytes * 2 > fullest.headroom_bytes,
            "{response}: {} of {} B used",
            fullest.max_headroom_bytes,
            fullest.headroom_bytes
        );
    }
}

#[test]
fn runs_with_pfc_are_deterministic() {
    let text = incast(&lossless("mode = \"quanta\""), UNLIMITED);
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let with_ports = text.replace("[stop]", "[output]\nports_csv = true\n[stop]");
    common::run_dir(&with_ports, a.path());
    common::run_dir(&with_ports, b.path());
    for f in ["summary.json", "ports.csv", "flows.csv"] {
        let x = std::fs::read(a.path().join(f)).unwrap();
        let y = std::fs::read(b.path().join(f)).unwrap();
        assert!(x == y, "{f} differs");
    }
    let summary = std::fs::read_to_string(a.path().join("summary.json")).unwrap();
    assert!(summary.contains("\"pfc\""));
    let ports = std::fs::read_to_string(a.path().join("ports.csv")).unwrap();
    assert!(ports.lines().next().unwrap().ends_with(",storms"));
}

fn error_of(text: &str) -> String {
    let loaded = match Scenario::from_str_with(text, "bad.toml", ".".into(), &[]) {
        Err(e) => return e.to_string(),
        Ok(l) => l,
    };
    match eqds_sim::sim::Simulation::new(&loaded, None) {
        Err(e) => e,
        Ok(_) => panic!("accepted a bad PFC setting:\n{text}"),
    }
}

#[test]
fn bad_pfc_settings_are_named() {
    let limited = r#"{ kind = "drop_tail", limit_packets = 100 }"#;
    let sp_limited = r#"{ kind = "strict_priority", classes = [{ kind = "drop_tail" }, { kind = "red", min_bytes = "5KB", max_bytes = "200KB", p_max = 0.01, limit_packets = 10 }] }"#;
    let cases = [
        (incast("enabled = true", UNLIMITED), "pfc.lossless"),
        (incast(&lossless(""), limited), "switch.queue"),
        (
            incast("enabled = true\nlossless = [1]", sp_limited),
            "switch.queue.classes[1]: priority 1 is lossless",
        ),
        // A random-loss wrapper is allowed, but the queue it wraps is checked.
        (
            incast(
                &lossless(""),
                &format!("{{ kind = \"random_loss\", rate = 0.01, queue = {limited} }}"),
            ),
            "switch.queue.queue: priority 0 is lossless ([pfc] lossless) but this queue has a limit",
        ),
        (
            incast(&lossless("mode = \"sometimes\""), UNLIMITED),
            "pfc.mode",
        ),
        (
            incast("enabled = true\nlossless = [9]", UNLIMITED),
            "pfc.lossless",
        ),
        (
            incast(
                "enabled = true\nlossless = [0]\nbuffer = \"200KB\"",
                UNLIMITED,
            ),
            "pfc: switch",
        ),
        (
            incast(&lossless("headroom = \"4KB\""), UNLIMITED),
            "pfc.headroom",
        ),
        (
            incast(
                &lossless("mode = \"quanta\"\nquanta = 10\nrefresh = \"1us\""),
                UNLIMITED,
            ),
            "pfc.refresh",
        ),
        (
            incast(&lossless("refresh = \"1us\""), UNLIMITED),
            "pfc.refresh",
        ),
        (
            incast(&lossless("threshold = \"sometimes\""), UNLIMITED),
            "pfc.threshold",
        ),
        (incast(&lossless("beta = -1"), UNLIMITED), "pfc.beta"),
        (
            incast(&lossless("watchdog = { action = \"ignore\" }"), UNLIMITED),
            "pfc.watchdog.action",
        ),
    ];
    for (text, want) in cases {
        let e = error_of(&text);
        assert!(e.contains(want), "wanted `{want}` in: {e}");
    }
}
