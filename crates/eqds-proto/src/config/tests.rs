use super::*;

#[test]
fn both_profiles_are_valid() {
    EqdsConfig::default().validate().unwrap();
    EqdsConfig::daemon().validate().unwrap();
    for bdp in [0, 1, 37, 5000] {
        let c = EqdsConfig::simulator(bdp, true);
        c.validate().unwrap();
        assert_eq!(c.window, bdp.clamp(1, MAX_WINDOW));
    }
}

#[test]
fn rules_derived_from_other_settings() {
    let c = EqdsConfig {
        window: 40,
        send_queue: 101,
        ..EqdsConfig::default()
    };
    // The whole window unless set; a quarter of the send queue, rounded up.
    assert_eq!(c.demand_lookahead_packets(), 40);
    assert_eq!(c.ecn_thresholds(), (26, 26));
    assert_eq!(c.credit_loss_timeout(), c.rto);
    assert_eq!(c.reorder_window_packets(100_000_000_000, 1500), 160);
    let native = EqdsConfig::simulator(40, false);
    assert_eq!(native.demand_lookahead_packets(), NATIVE_DEMAND_LOOKAHEAD);
    let clipped = EqdsConfig {
        initial_window: Some(60),
        ..c
    };
    assert_eq!(clipped.initial_window_packets(), Some(40));
}

/// The daemon's reorder span: two retransmit timeouts of the link, at least four
/// windows, at most 16,384 packets.
#[test]
fn reorder_span_of_two_timeouts() {
    let d = EqdsConfig::daemon();
    // 10 Gbit/s, 2 ms, 1514 B: 1651 packets per RTO.
    assert_eq!(d.reorder_window_packets(10_000_000_000, 1514), 3302);
    // A slow link: four windows.
    assert_eq!(d.reorder_window_packets(100_000_000, 1514), 128);
    // A fast one: capped.
    assert_eq!(d.reorder_window_packets(400_000_000_000, 1514), 16_384);
}

#[test]
fn errors_name_the_key() {
    let bad = |f: fn(&mut EqdsConfig)| {
        let mut c = EqdsConfig::default();
        f(&mut c);
        c.validate().unwrap_err().key
    };
    assert_eq!(bad(|c| c.window = 0), "window");
    assert_eq!(bad(|c| c.window = 1001), "window");
    assert_eq!(bad(|c| c.initial_window = Some(1001)), "initial_window");
    assert_eq!(bad(|c| c.demand_lookahead = Some(1001)), "demand_lookahead");
    assert_eq!(bad(|c| c.send_queue = 0), "send_queue");
    assert_eq!(
        bad(|c| {
            c.ecn_threshold = Some(20);
            c.ecn_max_threshold = Some(10);
        }),
        "ecn_max_threshold"
    );
    assert_eq!(bad(|c| c.rto = 0), "rto");
    assert_eq!(
        bad(|c| c.credit_loss_timeout = Some(0)),
        "credit_loss_timeout"
    );
    assert_eq!(bad(|c| c.reorder_timeout = 3 * c.rto), "reorder_timeout");
    assert_eq!(
        bad(|c| c.loss_reorder_window = c.rto),
        "loss_reorder_window"
    );
    assert_eq!(bad(|c| c.ack_coalesce = 65), "ack_coalesce");
    assert_eq!(bad(|c| c.ack_delay = 0), "ack_delay");
    assert_eq!(bad(|c| c.pull_burst = 0), "pull_burst");
    assert_eq!(bad(|c| c.pull_rate_permille = 0), "pull_rate");
    assert_eq!(
        bad(|c| c.reorder_window = ReorderSpan::Packets(0)),
        "reorder_window"
    );
    assert_eq!(
        bad(|c| c.path_avoidance = MAX_TIMEOUT + 1),
        "path_avoidance"
    );
}

#[cfg(feature = "config")]
mod table {
    use super::*;
    use crate::time::PS_PER_US;

    fn parse(text: &str) -> EqdsTable {
        toml::from_str(text).unwrap()
    }

    /// `KEYS` lists every field, and only fields: a table setting each key parses,
    /// leaves no field unset, and any other key is refused.
    #[test]
    fn keys_list_every_field() {
        let value = |k: &str| match k {
            "mode" => "\"rts\"",
            "policy" => "\"fifo\"",
            "ecn_max_p" | "pull_rate" => "0.5",
            "acks_first" | "pace_control" | "spare_pulls" | "thin_stream_credit" | "path_stats" => {
                "true"
            }
            "rto"
            | "credit_loss_timeout"
            | "ack_delay"
            | "reorder_timeout"
            | "path_avoidance"
            | "loss_reorder_window" => "\"1us\"",
            _ => "1",
        };
        let text: String = EqdsTable::KEYS
            .iter()
            .map(|k| format!("{k} = {}\n", value(k)))
            .collect();
        let t = parse(&text);
        assert!(!format!("{t:?}").contains("None"), "{t:?}");
        assert!(toml::from_str::<EqdsTable>("link_rate = \"10gbit\"").is_err());
    }

    #[test]
    fn keys_units_and_enums() {
        let t = parse(
            r#"
            mode = "rts"
            window = 12
            rto = "3ms"
            credit_loss_timeout = "500us"
            reorder_timeout = "20ms"
            policy = "strict_priority"
            pull_rate = 0.5
            ecn_max_p = 0.25
            reorder_window = 99
            "#,
        );
        let c = t.apply(&EqdsConfig::daemon()).unwrap();
        assert_eq!(c.mode, Mode::Rts);
        assert_eq!(c.window, 12);
        assert_eq!(c.rto, 3000 * PS_PER_US);
        assert_eq!(c.credit_loss_timeout(), 500 * PS_PER_US);
        assert_eq!(c.policy, Policy::StrictPriority);
        assert_eq!(c.pull_rate_permille, 500);
        assert_eq!(c.ecn_max_p_ppm, 250_000);
        assert_eq!(c.reorder_window, ReorderSpan::Packets(99));
        // What is not set keeps the profile's value.
        assert_eq!(c.ack_coalesce, 8);
        assert!(t.deprecations().is_empty());
    }

    #[test]
    fn bad_values_name_the_key() {
        let err = |text: &str| parse(text).apply(&EqdsConfig::default()).unwrap_err();
        let e = err(r#"mode = "tcp""#);
        assert_eq!(e.key, "mode");
        assert!(e.message.contains("'tcp'"), "{e}");
        assert_eq!(err(r#"policy = "lottery""#).key, "policy");
        assert_eq!(err("window = 8\ninitial_window = 9").key, "initial_window");
        assert_eq!(err("ecn_max_p = 0.0").key, "ecn_max_p");
        assert_eq!(err("pull_rate = 2.5").key, "pull_rate");
        assert_eq!(err(r#"rto = "6ms""#).key, "reorder_timeout");
        assert!(toml::from_str::<EqdsTable>(r#"rto = "1 parsec""#).is_err());
    }

    #[test]
    fn old_policy_spelling_still_works_with_a_warning() {
        let t = parse(r#"policy = "priority""#);
        let c = t.apply(&EqdsConfig::daemon()).unwrap();
        assert_eq!(c.policy, Policy::StrictPriority);
        assert_eq!(t.deprecations().len(), 1);
    }
}

/// Spare PULLs: on for native EQDS in the simulator's NDP profile, off for tunnelled
/// transports and the daemon; RTS mode turns a profile's off (no trimming repairs
/// what they overflow) unless the table sets them itself.
#[cfg(feature = "config")]
#[test]
fn spare_pulls_default_to_ndp_mode_native_eqds_only() {
    assert!(EqdsConfig::simulator(50, false).spare_pulls);
    assert!(!EqdsConfig::simulator(50, true).spare_pulls);
    assert!(!EqdsConfig::daemon().spare_pulls);
    let native = EqdsConfig::simulator(50, false);
    let table = |mode: Option<&str>, spare: Option<bool>| EqdsTable {
        mode: mode.map(String::from),
        spare_pulls: spare,
        ..EqdsTable::default()
    };
    assert!(table(None, None).apply(&native).unwrap().spare_pulls);
    assert!(table(Some("ndp"), None).apply(&native).unwrap().spare_pulls);
    assert!(!table(Some("rts"), None).apply(&native).unwrap().spare_pulls);
    assert!(
        table(Some("rts"), Some(true))
            .apply(&native)
            .unwrap()
            .spare_pulls
    );
    assert!(!table(None, Some(false)).apply(&native).unwrap().spare_pulls);
    let tunnelled = EqdsConfig::simulator(50, true);
    assert!(
        table(None, Some(true))
            .apply(&tunnelled)
            .unwrap()
            .spare_pulls
    );
}
