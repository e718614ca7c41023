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
