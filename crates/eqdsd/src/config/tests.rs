use super::*;
use eqds_proto::receiver::Policy;
use eqds_proto::sender::Mode;
use eqds_proto::time::PS_PER_US;

const MINIMAL: &str = r#"
[interface]
address = "10.88.1.1/16"
[tunnel]
listen = "10.77.1.1:7700"
[[peer_range]]
endpoints = "10.77.0.0/16"
port = 7700
allowed_ips = "10.88.0.0/16"
"#;

fn err(text: &str) -> String {
    Config::parse(text)
        .expect_err("should be rejected")
        .to_string()
}

#[test]
fn minimal_file_gets_defaults() {
    let c = Config::parse(MINIMAL).unwrap();
    assert_eq!(c.ifname, "eqds0");
    assert_eq!(c.eqds.mode, Mode::Rts);
    assert_eq!(c.mtu, 1500);
    assert_eq!(c.inner_mtu(), 1456);
    assert_eq!(c.charged_mtu(), 1514);
    assert_eq!(c.eqds.send_queue, 100);
    assert_eq!(c.eqds.initial_window_packets(), None);
    // The whole window: kernel TCP's packets in flight are demand to come.
    assert_eq!(c.eqds.demand_lookahead_packets(), 32);
    let small = Config::parse(&format!("{MINIMAL}\n[eqds]\nwindow = 8")).unwrap();
    assert_eq!(small.eqds.demand_lookahead_packets(), 8);
    assert_eq!(c.link_rate_bps, 10_000_000_000);
    assert_eq!(c.metrics, Some("127.0.0.1:9477".parse().unwrap()));
    assert!(!c.busy_poll);
    assert_eq!(c.poll_us, 0);
    assert!(c.eqds.pace_control);
    assert!(!c.eqds.path_stats);
    assert_eq!(c.eqds.path_avoidance, 0);
    assert_eq!(c.eqds, EqdsConfig::daemon());
    assert!(c.deprecations.is_empty());
    let e = err(&format!("{MINIMAL}\n[eqds]\npath_avoidance_us = 10000001"));
    assert!(e.starts_with("eqds.path_avoidance_us:"), "{e}");
    assert_eq!(c.eqds.loss_reorder_window, 0);
    let e = err(&format!(
        "{MINIMAL}\n[eqds]\nrto_us = 2000\nloss_reorder_window_us = 2000"
    ));
    assert!(
        e.starts_with("eqds.loss_reorder_window_us: must be below rto"),
        "{e}"
    );
    let on = Config::parse(&format!("{MINIMAL}\n[eqds]\nloss_reorder_window_us = 500"));
    assert_eq!(on.unwrap().eqds.loss_reorder_window, 500 * PS_PER_US);
    let on = Config::parse(&format!("{MINIMAL}\n[eqds]\npath_stats = true")).unwrap();
    assert!(on.eqds.path_stats);
}

/// The protocol's keys are the simulator's: same names, units and values.
#[test]
fn shared_keys_as_in_a_scenario() {
    let c = Config::parse(&format!(
        "{MINIMAL}\n[eqds]\nmode = \"ndp\"\nrto = \"3ms\"\nreorder_timeout = \"20ms\"\n\
         path_avoidance = \"50ms\"\npull_rate = 0.99\npolicy = \"strict_priority\"\n\
         ack_delay = \"20us\"\nreorder_window = 500\nlink_rate = \"25gbit\""
    ))
    .unwrap();
    assert_eq!(c.eqds.mode, Mode::Ndp);
    assert_eq!(c.eqds.rto, 3000 * PS_PER_US);
    assert_eq!(c.eqds.credit_loss_timeout(), 3000 * PS_PER_US);
    assert_eq!(c.eqds.reorder_timeout, 20_000 * PS_PER_US);
    assert_eq!(c.eqds.path_avoidance, 50_000 * PS_PER_US);
    assert_eq!(c.eqds.pull_rate_permille, 990);
    assert_eq!(c.eqds.policy, Policy::StrictPriority);
    assert_eq!(c.eqds.ack_delay, 20 * PS_PER_US);
    assert_eq!(
        c.eqds.reorder_window,
        eqds_proto::config::ReorderSpan::Packets(500)
    );
    assert_eq!(c.link_rate_bps, 25_000_000_000);
    assert!(c.deprecations.is_empty());
    // Errors name the key as written, shared or not.
    let e = err(&format!("{MINIMAL}\n[eqds]\nrto = \"2 fortnights\""));
    assert!(e.starts_with("eqds.rto:"), "{e}");
    let e = err(&format!("{MINIMAL}\n[eqds]\nwindow = \"many\""));
    assert!(e.starts_with("eqds.window:"), "{e}");
    let e = err(&format!(
        "{MINIMAL}\n[eqds]\n\"(shared)\" = {{ window = 3 }}"
    ));
    assert!(e.starts_with("eqds.(shared):"), "{e}");
}

/// The old spellings keep working for one release, with a warning each, and may
/// not be given together with the new ones.
#[test]
fn deprecated_keys_still_work_with_a_warning() {
    let old = Config::parse(&format!(
        "{MINIMAL}\n[eqds]\nrto_us = 3000\nreorder_timeout_us = 20000\npath_avoidance_us = 50000\n\
         loss_reorder_window_us = 500\npacing = 0.99\npolicy = \"priority\""
    ))
    .unwrap();
    let new = Config::parse(&format!(
        "{MINIMAL}\n[eqds]\nrto = \"3ms\"\nreorder_timeout = \"20ms\"\npath_avoidance = \"50ms\"\n\
         loss_reorder_window = \"500us\"\npull_rate = 0.99\npolicy = \"strict_priority\""
    ))
    .unwrap();
    assert_eq!(old.eqds, new.eqds);
    assert_eq!(old.deprecations.len(), 6, "{:?}", old.deprecations);
    assert!(old
        .deprecations
        .iter()
        .any(|d| d.contains("eqds.rto_us") && d.contains("eqds.rto")));
    let e = err(&format!("{MINIMAL}\n[eqds]\nrto_us = 3000\nrto = \"3ms\""));
    assert!(
        e.starts_with("eqds.rto_us:") && e.contains("given too"),
        "{e}"
    );
}

#[test]
fn peer_range_maps_host_bits_both_ways() {
    let c = Config::parse(MINIMAL).unwrap();
    let r = c.peer_ranges[0];
    assert_eq!(
        r.endpoint_for("10.88.3.1".parse().unwrap()),
        Some("10.77.3.1:7700".parse().unwrap())
    );
    assert_eq!(r.endpoint_for("10.89.3.1".parse().unwrap()), None);
    assert_eq!(
        r.inner_for("10.77.5.1".parse().unwrap()),
        Some("10.88.5.1".parse().unwrap())
    );
    assert_eq!(r.inner_for("10.78.5.1".parse().unwrap()), None);
}

#[test]
fn rates_in_tc_notation() {
    assert_eq!(parse_rate("500mbit"), Ok(500_000_000));
    assert_eq!(parse_rate("1.5Gbit"), Ok(1_500_000_000));
    assert!(parse_rate("500").unwrap_err().contains("no unit"));
    assert!(parse_rate("fastmbit").unwrap_err().contains("number"));
    assert!(parse_rate("1bit").unwrap_err().contains("outside"));
}

#[test]
fn errors_name_the_key() {
    let e = err(&MINIMAL.replace("[tunnel]", "[tunnel]\nmtu = 100"));
    assert!(e.starts_with("tunnel.mtu:"), "{e}");
    let e = err(&format!("{MINIMAL}\n[eqds]\nmode = \"tcp\""));
    assert!(e.starts_with("eqds.mode:") && e.contains("'tcp'"), "{e}");
    let e = err(&format!("{MINIMAL}\n[eqds]\nlink_rate = \"fast\""));
    assert!(e.starts_with("eqds.link_rate:"), "{e}");
    let e = err(&format!("{MINIMAL}\n[eqds]\nwindwo = 3"));
    assert!(e.contains("eqds") && e.contains("windwo"), "{e}");
    let e = err(&MINIMAL.replace("10.77.1.1:7700", "10.77.1.1"));
    assert!(e.starts_with("tunnel.listen:"), "{e}");
    let e = err(&MINIMAL.replace(
        "allowed_ips = \"10.88.0.0/16\"",
        "allowed_ips = \"10.88.0.0/24\"",
    ));
    assert!(e.starts_with("peer_range[0].allowed_ips:"), "{e}");
    let e = err(&format!(
        "{MINIMAL}\n[[peer]]\nendpoint = \"10.77.9.1:1\"\nallowed_ips = [\"10.88.9.300/32\"]"
    ));
    assert!(e.starts_with("peer[0].allowed_ips"), "{e}");
    let e = err("[interface]\naddress = \"10.88.1.1/16\"\n[tunnel]\nlisten = \"1.2.3.4:5\"\n");
    assert!(e.starts_with("peer:"), "{e}");
    let e = err("[interface]\naddress = \"10.88.1.1/16\"\n");
    assert!(e.contains("tunnel"), "{e}");
    let e = err(&MINIMAL.replace("[interface]", "[interface]\nname = \"much-too-long-name\""));
    assert!(e.starts_with("interface.name:"), "{e}");
    let e = err(&format!(
        "{MINIMAL}\n[eqds]\nwindow = 8\ninitial_window = 9"
    ));
    assert!(e.starts_with("eqds.initial_window:"), "{e}");
    let e = err(&format!("{MINIMAL}\n[eqds]\ndemand_lookahead = 1001"));
    assert!(e.starts_with("eqds.demand_lookahead:"), "{e}");
    let e = err(&format!("{MINIMAL}\n[eqds]\nrto_us = 5000"));
    assert!(e.starts_with("eqds.reorder_timeout:"), "{e}");
    let e = err(&MINIMAL.replace("[tunnel]", "weight = 0\n[tunnel]"));
    assert!(e.starts_with("interface.weight: must be at least 1"), "{e}");
    let e = err(&format!("{MINIMAL}\n[native]\nweight = 0"));
    assert!(e.starts_with("native.weight: must be at least 1"), "{e}");
    let e = err(&format!("{MINIMAL}\n[native]\npriority = 256"));
    assert!(e.contains("priority"), "{e}");
    let e = err(&format!("{MINIMAL}\n[eqds]\nuplink_rate = \"fast\""));
    assert!(e.starts_with("eqds.uplink_rate:"), "{e}");
    let e = err(&format!("{MINIMAL}\n[eqds]\nmax_peers = 16777217"));
    assert!(e.starts_with("eqds.max_peers: must be 1..=16777216"), "{e}");
    let e = err(&MINIMAL.replace("[tunnel]", "[tunnel]\npoll_us = 2000000"));
    assert!(
        e.starts_with("tunnel.poll_us:") && e.contains("busy_poll"),
        "{e}"
    );
    let e = err(&format!(
        "{MINIMAL}\n[eqds]\necn_threshold = 20\necn_max_threshold = 10"
    ));
    assert!(e.starts_with("eqds.ecn_max_threshold:"), "{e}");
    let e = err(&format!("{MINIMAL}\n[eqds]\necn_max_p = 0.0"));
    assert!(e.starts_with("eqds.ecn_max_p:"), "{e}");
    let e = err("this is = not toml [");
    assert!(e.starts_with("(file):"), "{e}");
}

#[test]
fn the_packaged_example_is_valid() {
    let text = include_str!("../../../../packaging/eqdsd.toml");
    let c = Config::parse(text).unwrap();
    assert_eq!(c.listen, "10.77.1.1:7700".parse().unwrap());
    assert_eq!(c.peer_ranges.len(), 1);
}

#[test]
fn native_socket_is_off_by_default_and_checked_when_given() {
    assert_eq!(Config::parse(MINIMAL).unwrap().native_socket, None);
    let on = Config::parse(&format!(
        "{MINIMAL}\n[native]\nsocket = \"/run/eqdsd/native.sock\""
    ))
    .unwrap();
    assert_eq!(
        on.native_socket.as_deref(),
        Some(Path::new("/run/eqdsd/native.sock"))
    );
    for (bad, says) in [
        ("\"\"", "is empty"),
        ("\"native.sock\"", "not an absolute path"),
        ("\"/run/eqdsd/\"", "not a Unix socket path"),
        ("7", "invalid type"),
    ] {
        let e = err(&format!("{MINIMAL}\n[native]\nsocket = {bad}"));
        assert!(
            e.starts_with("native.socket: ") && e.contains(says),
            "{bad}: {e}"
        );
    }
    let long = format!("\"/{}\"", "x".repeat(200));
    let e = err(&format!("{MINIMAL}\n[native]\nsocket = {long}"));
    assert!(e.starts_with("native.socket: "), "{e}");
    let e = err(&format!("{MINIMAL}\n[native]\nsockt = \"/x\""));
    assert!(e.contains("native"), "{e}");
}

#[test]
fn ipv6_addresses_routes_and_allowed_ips() {
    let c = Config::parse(MINIMAL).unwrap();
    assert_eq!(c.address6, None);
    let text = MINIMAL.replace(
        "[tunnel]",
        "address6 = \"fd00:88:1::1/48\"\nroutes = [\"10.99.0.0/16\", \"fd00:99::5/32\"]\n[tunnel]",
    ) + "\n[[peer]]\nendpoint = \"10.77.9.1:7700\"\nallowed_ips = [\"10.88.9.0/24\", \"fd00:88:9::/48\"]\n";
    let c = Config::parse(&text).unwrap();
    assert_eq!(c.address6, Some("fd00:88:1::1/48".parse().unwrap()));
    // Routes are truncated to their network, of either family.
    assert_eq!(
        c.routes,
        vec![
            "10.99.0.0/16".parse::<IpNet>().unwrap(),
            "fd00:99::/32".parse().unwrap()
        ]
    );
    assert_eq!(
        c.peers[0].allowed_ips,
        vec![
            "10.88.9.0/24".parse::<IpNet>().unwrap(),
            "fd00:88:9::/48".parse().unwrap()
        ]
    );
    // An IPv4 /32 is fine when the IPv6 address routes a prefix.
    let c = Config::parse(
        &MINIMAL
            .replace("10.88.1.1/16", "10.88.1.1/32")
            .replace("[tunnel]", "address6 = \"fd00:88:1::1/64\"\n[tunnel]"),
    )
    .unwrap();
    assert_eq!(c.address.prefix_len(), 32);
}

#[test]
fn ipv6_errors_name_the_key() {
    let with_interface = |extra: &str| MINIMAL.replace("[tunnel]", &format!("{extra}\n[tunnel]"));
    let e = err(&with_interface("address6 = \"10.88.1.1/16\""));
    assert!(e.starts_with("interface.address6:"), "{e}");
    let e = err(&with_interface("address6 = \"fd00:88::1\""));
    assert!(
        e.starts_with("interface.address6:"),
        "no prefix length: {e}"
    );
    for bad in ["::/64", "ff02::1/64", "::1/128"] {
        let e = err(&with_interface(&format!("address6 = \"{bad}\"")));
        assert!(
            e.starts_with("interface.address6:") && e.contains("not a unicast"),
            "{bad}: {e}"
        );
    }
    let e = err(&MINIMAL.replace("10.88.1.1/16", "fd00:88:1::1/48"));
    assert!(e.starts_with("interface.address:"), "{e}");
    let e = err(&with_interface("routes = [\"fd00:99::/129\"]"));
    assert!(e.starts_with("interface.routes"), "{e}");
    // Both addresses route nothing and no route is given.
    let e = err(&MINIMAL
        .replace("10.88.1.1/16", "10.88.1.1/32")
        .replace("[tunnel]", "address6 = \"fd00:88:1::1/128\"\n[tunnel]"));
    assert!(e.starts_with("interface.address:"), "{e}");
    // IPv6 needs an inner MTU of 1280; IPv4 alone does not.
    let small = |text: &str| text.replace("[tunnel]", "[tunnel]\nmtu = 1323");
    assert_eq!(Config::parse(&small(MINIMAL)).unwrap().inner_mtu(), 1279);
    let e = err(&small(&with_interface("address6 = \"fd00:88:1::1/48\"")));
    assert!(e.starts_with("tunnel.mtu:") && e.contains("1324"), "{e}");
    let e = err(&small(&with_interface("routes = [\"fd00:99::/32\"]")));
    assert!(e.starts_with("tunnel.mtu:"), "{e}");
    let ok = with_interface("address6 = \"fd00:88:1::1/48\"")
        .replace("[tunnel]", "[tunnel]\nmtu = 1324");
    assert_eq!(Config::parse(&ok).unwrap().inner_mtu(), 1280);
    let e = err(&format!(
        "{MINIMAL}\n[[peer]]\nendpoint = \"10.77.9.1:1\"\nallowed_ips = [\"fd00:88:9::/200\"]"
    ));
    assert!(e.starts_with("peer[0].allowed_ips"), "{e}");
    // Peer ranges stay IPv4.
    let e = err(&MINIMAL.replace(
        "allowed_ips = \"10.88.0.0/16\"",
        "allowed_ips = \"fd00:88::/112\"",
    ));
    assert!(e.starts_with("peer_range[0].allowed_ips:"), "{e}");
}

/// `MINIMAL` with `[[peer]]` tables for (endpoint, allowed_ips).
fn with_peers(peers: &[(&str, &str)]) -> String {
    let mut text = MINIMAL.to_string();
    for (endpoint, allowed) in peers {
        text += &format!("\n[[peer]]\nendpoint = \"{endpoint}\"\nallowed_ips = [{allowed}]\n");
    }
    text
}

#[test]
fn the_same_prefix_on_two_peers_is_rejected_naming_both() {
    let e = err(&with_peers(&[
        ("192.168.0.9:9", "\"10.99.0.0/16\", \"fd00:99::/48\""),
        ("192.168.0.10:9", "\"10.98.0.0/16\", \"fd00:99::1/48\""),
    ]));
    assert_eq!(
        e,
        "peer[1].allowed_ips: fd00:99::/48 is also peer[0]'s (192.168.0.9:9): the same \
         prefix on two peers leaves open which one owns its addresses"
    );
    // Nested prefixes name a winner, the longer one: a host inside a gateway's prefix.
    let ok = with_peers(&[
        ("192.168.0.9:9", "\"10.99.0.0/16\""),
        ("192.168.0.10:9", "\"10.99.7.0/24\""),
    ]);
    assert_eq!(Config::parse(&ok).unwrap().peers.len(), 2);
}

#[test]
fn this_host_as_a_peer_is_rejected() {
    // MINIMAL listens on 10.77.1.1:7700.
    let e = err(&with_peers(&[("10.77.1.1:7700", "\"10.99.0.0/16\"")]));
    assert!(
        e.starts_with("peer[0].endpoint: 10.77.1.1:7700 is this daemon's own tunnel.listen"),
        "{e}"
    );
    // Listening on every address, a loopback address with the same port is this host.
    let any = |text: String| text.replace("10.77.1.1:7700", "0.0.0.0:7700");
    let e = err(&any(with_peers(&[("127.0.0.1:7700", "\"10.99.0.0/16\"")])));
    assert!(e.starts_with("peer[0].endpoint: 127.0.0.1:7700"), "{e}");
    // Another daemon on this host, on another port, is a peer.
    let ok = with_peers(&[("10.77.1.1:7701", "\"10.99.0.0/16\"")]);
    assert!(Config::parse(&ok).is_ok());
    // Whatever the endpoint: a prefix inside this host's subnet holding its own
    // address is this host's share (interface.address is 10.88.1.1/16).
    let e = err(&any(with_peers(&[("10.77.5.5:7700", "\"10.88.1.0/24\"")])));
    assert_eq!(
        e,
        "peer[0].allowed_ips: 10.88.1.0/24 holds this host's own address 10.88.1.1 and lies \
         inside its own subnet 10.88.0.0/16: that is this host's share, so peer[0] \
         (10.77.5.5:7700) looks like this host itself"
    );
    let six = with_peers(&[("10.77.5.5:7700", "\"fd00:88:1::1/128\"")])
        .replace("[tunnel]", "address6 = \"fd00:88:1::1/64\"\n[tunnel]");
    assert!(err(&six).starts_with("peer[0].allowed_ips: fd00:88:1::1/128 holds"));
    // A gateway's prefix wider than the subnet holds it too, and is fine.
    let ok = with_peers(&[("10.77.5.5:7700", "\"0.0.0.0/0\"")]);
    assert!(Config::parse(&ok).is_ok());
}

#[test]
fn overlapping_peer_ranges_are_rejected_and_a_range_holding_this_host_is_not() {
    // MINIMAL's range holds this host (10.77.1.1 owning 10.88.1.1), as a file for a
    // whole rack does: the peer table makes no peer of it.
    assert!(Config::parse(MINIMAL).is_ok());
    let range = |endpoints: &str, allowed: &str| {
        format!(
            "{MINIMAL}\n[[peer_range]]\nendpoints = \"{endpoints}\"\nport = 7700\n\
             allowed_ips = \"{allowed}\"\n"
        )
    };
    let e = err(&range("10.66.0.0/24", "10.88.5.0/24"));
    assert_eq!(
        e,
        "peer_range[1].allowed_ips: 10.88.5.0/24 overlaps peer_range[0].allowed_ips \
         10.88.0.0/16: two hosts would own one inner address"
    );
    let e = err(&range("10.77.200.0/24", "10.89.0.0/24"));
    assert!(
        e.starts_with("peer_range[1].endpoints: 10.77.200.0/24 overlaps peer_range[0]"),
        "{e}"
    );
    assert!(Config::parse(&range("10.66.0.0/24", "10.89.0.0/24")).is_ok());
}

#[test]
fn sections_are_checked_in_the_files_order_each_whole_before_the_next() {
    // Two errors: the one in the earlier section is reported, whichever key it is.
    let e = err(&MINIMAL.replace("[tunnel]", "weight = 0\n[tunnel]\nmtu = 100"));
    assert!(e.starts_with("interface.weight:"), "{e}");
    let e = err(&format!(
        "{MINIMAL}\n[eqds]\nwindow = 0\n[native]\nsocket = \"x\""
    ));
    assert!(e.starts_with("eqds.window:"), "{e}");
    // MINIMAL listens on 10.77.1.1:7700.
    let e = err(&with_peers(&[("10.77.1.1:7700", "\"10.99.0.0/16\"")])
        .replace("[tunnel]", "[native]\nsocket = \"x\"\n[tunnel]"));
    assert!(e.starts_with("native.socket:"), "{e}");
}
