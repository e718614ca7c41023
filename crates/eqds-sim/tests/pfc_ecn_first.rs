//! DCQCN paper §4 (spec experiment E8): with the dynamic PFC threshold and an ECN
//! threshold below `beta (B - 8 n t_flight) / (8 n (beta + 1))`, ECN marks before PFC
//! pauses, even when all the backlog comes in through one ingress port. Checked by
//! running to the first PAUSE and asking whether a packet was marked by then.

use eqds_sim::net::pfc::SharedBuffer;
use eqds_sim::sim::Simulation;
use proptest::prelude::*;

/// One 40 Gbps sender WRITEs to `receivers` hosts whose links run at `slow` Gbps
/// through one switch of `buffer` bytes: every byte queued there came in on the
/// sender's port (the receivers together take less than 40 Gbps). Marking is a step
/// at `k` bytes (RED with Kmin = Kmax, Pmax 1), so a queue past `k` marks its next
/// arrival. DCQCN reacts to one CNP per second at most, so the backlog keeps
/// growing until PFC pauses the sender.
fn scenario(receivers: u32, slow: u32, buffer: u64, k: u64, stop: &str) -> String {
    let hosts: Vec<String> = (1..=receivers).map(|h| h.to_string()).collect();
    let workloads: String = (1..=receivers)
        .map(|r| format!("[[workload]]\nkind = \"incast\"\nreceiver = {r}\nsender_hosts = [0]\n"))
        .collect();
    format!(
        r#"
        [topology]
        kind = "single_switch"
        hosts = {}
        link = {{ rate = "40Gbps", latency = "1us" }}
        [switch]
        queue = {{ kind = "strict_priority", classes = [{{ kind = "drop_tail", limit_packets = 1000 }}, {{ kind = "red", min_bytes = "{k}B", max_bytes = "{k}B", p_max = 1.0 }}] }}
        [host]
        queue = {{ kind = "strict_priority", classes = [{{ kind = "drop_tail", limit_packets = 1000 }}, {{ kind = "drop_tail" }}] }}
        links = [{{ hosts = [{}], rate = "{slow}Gbps" }}]
        [transport]
        protocol = "roce"
        class = 1
        [transport.roce]
        dcqcn = {{ profile = "paper", cnp_interval = "1s" }}
        [pfc]
        enabled = true
        lossless = [1]
        buffer = "{buffer}B"
{workloads}
        [stop]
        time = "{stop}"
        "#,
        receivers + 1,
        hosts.join(", ")
    )
}

/// Runs to the first PAUSE (or 20 ms); returns whether a packet was marked by then,
/// and whether a PAUSE came at all.
fn marked_before_pause(receivers: u32, slow: u32, buffer: u64, k: u64) -> (bool, bool) {
    let first = {
        let (_, _, sim) = common::run(&scenario(receivers, slow, buffer, k, "20ms"));
        sim.network().pfc.as_ref().unwrap().first_pause
    };
    let Some(t) = first else {
        return (true, false);
    };
    // The same run again, stopped at that instant: events at `t` still run.
    let stop = format!("{t}ps");
    let loaded = common::load(&scenario(receivers, slow, buffer, k, &stop));
    let mut sim = Simulation::new(&loaded, None).unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    let net = sim.network();
    assert_eq!(
        net.pfc.as_ref().unwrap().first_pause,
        Some(t),
        "not the same run"
    );
    let marks: u64 = net.ports.iter().map(|p| p.stats.marks).sum();
    (marks > 0, true)
}

mod common;

/// The ECN bound of a switch of `ports` ports and `buffer` bytes with 40 Gbps, 1 us
/// links and the default response time (17,000 B of headroom).
fn ecn_bound(ports: u32, buffer: u64) -> f64 {
    SharedBuffer {
        buffer_bytes: buffer,
        ports,
        priorities: 8,
        headroom_bytes: 17_000,
        beta: 8.0,
    }
    .max_ecn_dynamic()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn ecn_marks_before_pfc_pauses(
        receivers in 1u32..=3,
        slow in prop::sample::select(vec![5u32, 10]),
        buffer in 1_000_000u64..=4_000_000,
        fraction in 0.05f64..0.95,
    ) {
        let bound = ecn_bound(receivers + 1, buffer);
        let k = (bound * fraction).max(1600.0) as u64;
        prop_assume!((k as f64) < bound);
        let (marked, paused) = marked_before_pause(receivers, slow, buffer, k);
        prop_assert!(paused, "the backlog never reached PFC: the check checks nothing");
        prop_assert!(marked, "PAUSE before any mark with K = {k} B < bound {bound:.0} B");
    }
}

/// The check can fail: with the ECN threshold far above the PAUSE threshold, PFC
/// pauses the sender before any queue reaches it.
#[test]
fn above_the_bound_pfc_pauses_first() {
    let buffer = 1_000_000;
    let k = 500_000;
    assert!(k as f64 > 10.0 * ecn_bound(2, buffer));
    let (marked, paused) = marked_before_pause(1, 10, buffer, k);
    assert!(paused && !marked);
}
