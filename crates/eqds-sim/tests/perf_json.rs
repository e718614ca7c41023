//! `perf.json`: the rate past warm-up that per-event costs are compared by.

mod common;

use serde_json::Value;

/// An EQDS permutation on a k=4 fat tree, stopping at `stop` with `warmup` (if any);
/// with `size`, flows of that size, and the run stops when they all complete.
fn permutation(stop: &str, warmup: Option<&str>, size: Option<&str>) -> String {
    let warmup = warmup.map_or(String::new(), |w| format!("warmup = \"{w}\""));
    let (size, complete) = match size {
        Some(s) => (format!("size = \"{s}\""), "when_flows_complete = true"),
        None => (String::new(), ""),
    };
    format!(
        r#"
        {}
        [transport]
        protocol = "eqds"
        mtu = "4150B"
        [workload]
        kind = "permutation"
        {size}
        [stop]
        time = "{stop}"
        {warmup}
        {complete}
        "#,
        common::sprayed_fat_tree(4, "100Gbps", 35)
    )
}

fn perf(text: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    common::run_dir(text, dir.path());
    let perf = std::fs::read_to_string(dir.path().join("perf.json")).unwrap();
    serde_json::from_str(&perf).unwrap()
}

#[test]
fn the_rate_past_warm_up_counts_the_events_after_it() {
    let whole = perf(&permutation("60us", None, None));
    let events = whole["events"].as_u64().unwrap();
    // Without a warm-up, everything but building the network.
    assert_eq!(whole["after_warmup"]["events"].as_u64(), Some(events));
    let wall = whole["wall_time_s"].as_f64().unwrap();
    assert!(whole["after_warmup"]["wall_time_s"].as_f64().unwrap() <= wall);

    // The same run measured from 30 us: the events after it, fewer than all.
    let half = perf(&permutation("60us", Some("30us"), None));
    assert_eq!(half["events"].as_u64(), Some(events), "same run");
    let after = &half["after_warmup"];
    let n = after["events"].as_u64().unwrap();
    assert!(n > 0 && n < events, "{n} of {events}");
    let rate = after["events_per_second"].as_f64().unwrap();
    let expected = n as f64 / after["wall_time_s"].as_f64().unwrap();
    assert!(
        (rate - expected).abs() <= 1e-6 * expected,
        "{rate} != {expected}"
    );

    // A run whose flows all complete before its warm-up has no such rate.
    let early = perf(&permutation("1ms", Some("500us"), Some("64KB")));
    assert!(early["after_warmup"].is_null(), "{early}");
}

/// `[output] event_costs` needs a build with the `event-costs` feature; without it
/// the scenario is refused by name rather than run without the timing asked for.
#[cfg(not(feature = "event-costs"))]
#[test]
fn event_costs_without_the_feature_is_refused() {
    let text = permutation("20us", None, None) + "\n[output]\nevent_costs = true\n";
    let e = common::load_error(&text);
    assert!(
        e.contains("output.event_costs") && e.contains("--features event-costs"),
        "{e}"
    );
}

/// With the feature: where the time past warm-up goes, by kind of event, sampled
/// one in 64; and the run's other outputs are the same as without the timing.
#[cfg(feature = "event-costs")]
#[test]
fn event_costs_by_kind_past_warm_up() {
    let text = permutation("60us", Some("20us"), None);
    let timed_text = text.clone() + "\n[output]\nevent_costs = true\n";
    let (plain_dir, timed_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    common::run_dir(&text, plain_dir.path());
    common::run_dir(&timed_text, timed_dir.path());
    let read = |d: &tempfile::TempDir, file| std::fs::read(d.path().join(file)).unwrap();
    assert!(read(&plain_dir, "flows.csv") == read(&timed_dir, "flows.csv"));
    // The summary repeats the scenario, which differs by the option itself.
    let summary = |d| {
        let mut v: Value = serde_json::from_slice(&read(d, "summary.json")).unwrap();
        v.as_object_mut().unwrap().remove("scenario");
        v
    };
    assert_eq!(summary(&plain_dir), summary(&timed_dir));
    let plain: Value =
        serde_json::from_slice(&std::fs::read(plain_dir.path().join("perf.json")).unwrap())
            .unwrap();
    assert!(plain["after_warmup"].get("event_costs").is_none());

    let perf: Value =
        serde_json::from_slice(&std::fs::read(timed_dir.path().join("perf.json")).unwrap())
            .unwrap();
    let after = &perf["after_warmup"];
    let costs = &after["event_costs"];
    assert_eq!(costs["sampled_one_in"], 64);
    let kinds = costs["kinds"].as_object().unwrap();
    for kind in ["switch_arrival", "tx_done", "host_arrival", "eqds_timer"] {
        assert!(kinds.contains_key(kind), "no {kind} in {kinds:?}");
    }
    let (mut share, mut timed) = (0.0, 0);
    for (kind, k) in kinds {
        assert!(k["ns_per_event"].as_f64().unwrap() > 0.0, "{kind}: {k}");
        share += k["share"].as_f64().unwrap();
        timed += k["timed"].as_u64().unwrap();
    }
    assert!((share - 1.0).abs() < 1e-9, "shares add up to {share}");
    // One event in 64 of those past warm-up (numbered from the run's start).
    let events = after["events"].as_u64().unwrap();
    assert!(
        timed.abs_diff(events / 64) <= 1,
        "{timed} timed of {events}"
    );
    // The loop's share is what the kinds leave of the wall time per event.
    let per_event = 1e9 * after["wall_time_s"].as_f64().unwrap() / events as f64;
    let handled: f64 = kinds
        .values()
        .map(|k| k["share"].as_f64().unwrap() * k["ns_per_event"].as_f64().unwrap())
        .sum();
    let run_loop = costs["run_loop_ns_per_event"].as_f64().unwrap();
    assert!((handled + run_loop - per_event).abs() < 1e-6 * per_event);
}

/// The run loop loads ahead only on a network large enough for it to pay
/// (`LOOK_AHEAD_MIN_HOSTS`), and says so; the outputs do not depend on it.
#[test]
fn look_ahead_from_a_network_size_on() {
    use eqds_sim::sim::LOOK_AHEAD_MIN_HOSTS;
    let small = perf(&permutation("5us", None, None));
    assert_eq!(small["look_ahead"], false, "k=4: 16 hosts");
    let large = permutation("5us", None, None).replace(
        &common::sprayed_fat_tree(4, "100Gbps", 35),
        &common::sprayed_fat_tree(16, "100Gbps", 35),
    );
    const { assert!(16 < LOOK_AHEAD_MIN_HOSTS && 1024 >= LOOK_AHEAD_MIN_HOSTS) };
    assert_eq!(perf(&large)["look_ahead"], true, "k=16: 1024 hosts");
}
