//! Closed-loop downloads in the simulator: bound clients download only from their
//! servers, and over EQDS, queueing ACKs ahead of data speeds up downloads both ways
//! and demand lookahead spares TCP the RTS round trips.

mod common;

use common::two_racks_two_spines;
use eqds_sim::flow::FlowRecord;

#[test]
fn bound_closed_loop_clients_download_only_from_their_servers() {
    let text = r#"
        [topology]
        kind = "leaf_spine"
        leaves = 2
        spines = 2
        hosts_per_leaf = 4
        link = { rate = "25Gbps", latency = "1us" }
        [transport]
        min_rto = "1ms"
        [workload]
        kind = "closed_loop"
        size = "100KB"
        client_hosts = [4, 5, 6]
        server_hosts = [0, 1]
        [stop]
        time = "2ms"
    "#;
    let (flows, _, _) = common::run(text);
    assert!(
        flows.len() > 6,
        "the loop keeps going: {} flows",
        flows.len()
    );
    for f in &flows {
        let expected = match f.spec.dst {
            4 | 6 => 0,
            5 => 1,
            other => panic!("host {other} is not a client"),
        };
        assert_eq!(f.spec.src, expected, "client {} server", f.spec.dst);
    }
}

/// Closed-loop 1 MB TCP Cubic downloads over EQDS on a small 25 Gbps leaf-spine
/// (2 x 2 hosts, 15-packet trimming queues, spraying), `clients[i]` fetching from
/// `servers[i]` for `time`, with `eqds` added to the `[eqds]` table: the median FCT
/// and the RTS packets sent.
fn downloads_over_eqds(eqds: &str, clients: &str, servers: &str, time: &str) -> (u64, u64) {
    let network = two_racks_two_spines("25Gbps");
    let text = format!(
        r#"
        {network}
        [transport]
        protocol = "cubic"
        min_rto = "1ms"
        initial_rto = "1ms"
        [eqds]
        enabled = true
        {eqds}
        [workload]
        kind = "closed_loop"
        size = "1MB"
        client_hosts = {clients}
        server_hosts = {servers}
        [stop]
        time = "{time}"
    "#
    );
    let (flows, _, sim) = common::run(&text);
    let mut fcts: Vec<u64> = flows.iter().filter_map(FlowRecord::fct).collect();
    assert!(fcts.len() >= 10, "only {} downloads completed", fcts.len());
    fcts.sort_unstable();
    let rts = sim.eqds_summary().unwrap()["packets"]["rts_sent"]
        .as_u64()
        .unwrap();
    (fcts[fcts.len() / 2], rts)
}

/// Median FCT of downloads between two hosts in both directions at once, NDP mode,
/// with or without `acks_first`.
fn two_way_downloads_median_fct(acks_first: bool) -> u64 {
    let eqds = format!("acks_first = {acks_first}");
    downloads_over_eqds(&eqds, "[0, 2]", "[2, 0]", "15ms").0
}

#[test]
fn acks_queued_ahead_of_data_speed_up_downloads_both_ways() {
    let fifo = two_way_downloads_median_fct(false);
    let acks_first = two_way_downloads_median_fct(true);
    // Each host's TCP ACKs share its tunnel with its own uploads: in one FIFO they
    // wait behind up to a send queue of data, which stretches the downloads' RTT.
    assert!(
        (acks_first as f64) < 0.92 * fifo as f64,
        "median FCT {acks_first} ps with ACKs first, {fifo} ps without"
    );
}

/// Downloads from one server to one client in RTS mode with the given demand
/// lookahead: (median FCT, RTS packets sent).
fn one_way_downloads(lookahead: u32) -> (u64, u64) {
    let eqds = format!("mode = \"rts\"\n        demand_lookahead = {lookahead}");
    downloads_over_eqds(&eqds, "[0]", "[2]", "10ms")
}

#[test]
fn demand_lookahead_spares_tcp_the_rts_round_trips() {
    let (fct_exact, rts_exact) = one_way_downloads(0);
    let (fct_ahead, rts_ahead) = one_way_downloads(4);
    eprintln!(
        "lookahead 0: median {fct_exact} ps, {rts_exact} RTS; 4: {fct_ahead} ps, {rts_ahead} RTS"
    );
    // Without lookahead both tunnels stall whenever their queue empties: the data
    // tunnel at the start of each download, the client's pure-ACK tunnel every
    // MTU's worth of ACKs once its first credit is spent.
    assert!(
        rts_ahead * 10 < rts_exact,
        "{rts_ahead} RTS with lookahead, {rts_exact} without"
    );
    assert!(
        (fct_ahead as f64) < 0.95 * fct_exact as f64,
        "median FCT {fct_ahead} ps with lookahead, {fct_exact} ps without"
    );
}
