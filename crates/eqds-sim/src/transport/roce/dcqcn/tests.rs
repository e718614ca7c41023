use super::*;

const LINE: u64 = 40_000_000_000;

fn paper() -> DcqcnParams {
    DcqcnParams::profile(Profile::Paper, LINE)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn every_profile_is_valid_and_named() {
    for p in Profile::ALL {
        for line in [10_000_000_000, LINE, 100_000_000_000] {
            DcqcnParams::profile(p, line).validate().unwrap();
        }
        assert_eq!(Profile::from_name(p.name()), Some(p));
    }
    assert_eq!(Profile::from_name("dcqcn"), None);
    // HPCC scales its steps and thresholds with the link against 25 Gbps.
    let h = DcqcnParams::profile(Profile::HpccNs3, 100_000_000_000);
    assert!(close(h.rai_bps, 20e6));
    assert_eq!(h.marking.kmin_bytes, 400_000);
    // htsim's steps are fractions of the line rate.
    assert!(close(
        DcqcnParams::profile(Profile::Htsim, LINE).rai_bps,
        2e9
    ));
}

#[test]
fn bad_parameters_are_named() {
    let bad = |f: fn(&mut DcqcnParams)| {
        let mut p = paper();
        f(&mut p);
        p.validate().unwrap_err()
    };
    assert!(bad(|p| p.g = 0.0).starts_with("g:"));
    assert!(bad(|p| p.alpha_timer = 0).starts_with("alpha_timer:"));
    assert!(bad(|p| p.byte_counter = Some(0)).starts_with("byte_counter:"));
    assert!(bad(|p| p.marking.kmax_bytes = 1).starts_with("kmax:"));
    assert!(bad(|p| p.marking.pmax = 1.5).starts_with("pmax:"));
    assert!(bad(|p| p.min_rate_bps = 1e12).starts_with("min_rate:"));
}

/// Figure 5: nothing up to Kmin, a ramp to Pmax at Kmax, everything beyond.
#[test]
fn red_ramp_at_the_congestion_point() {
    let m = paper().marking;
    assert_eq!(mark_probability(0, &m), 0.0);
    assert_eq!(mark_probability(5_000, &m), 0.0);
    assert!(close(mark_probability(102_500, &m), 0.005));
    assert!(close(mark_probability(200_000, &m), 0.01));
    assert_eq!(mark_probability(200_001, &m), 1.0);
    // DCTCP's step: Kmin = Kmax = K, Pmax = 1.
    let step = Marking {
        kmin_bytes: 30_000,
        kmax_bytes: 30_000,
        pmax: 1.0,
    };
    assert_eq!(mark_probability(30_000, &step), 0.0);
    assert_eq!(mark_probability(30_001, &step), 1.0);
}

/// Figure 6: the first mark is answered at once; later marks in the interval by one
/// CNP at its end; an interval without marks returns to idle.
#[test]
fn np_sends_at_most_one_cnp_per_interval() {
    let n = 50 * US;
    let mut np = NotificationPoint::new(n);
    assert!(!np.on_packet(0, false), "no CNP without a mark");
    assert_eq!(np.poll_timeout(), None);
    assert!(np.on_packet(US, true), "first mark: CNP at once");
    assert_eq!(np.poll_timeout(), Some(US + n));
    assert!(!np.on_packet(2 * US, true));
    assert!(!np.on_packet(40 * US, true));
    assert!(!np.handle_timeout(50 * US), "not yet due");
    assert!(
        np.handle_timeout(US + n),
        "marks in the interval: one CNP at its end"
    );
    assert_eq!(np.poll_timeout(), Some(US + 2 * n));
    assert!(
        !np.handle_timeout(US + 2 * n),
        "a quiet interval sends nothing"
    );
    assert_eq!(np.poll_timeout(), None, "and returns to idle");
    assert!(
        np.on_packet(200 * US, true),
        "a mark after idling is first again"
    );
    assert_eq!(np.cnps(), 3);
}

/// Over any pattern of marks, CNPs are at least an interval apart and none is sent
/// later than an interval after a mark.
#[test]
fn np_spacing_over_random_marks() {
    let n = 50 * US;
    let mut np = NotificationPoint::new(n);
    let mut rng: u64 = 0x2545_F491_4F6C_DD1D;
    let mut cnps = Vec::new();
    let mut marks = Vec::new();
    let mut now = 0;
    for _ in 0..20_000 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        now += rng % (3 * US);
        while let Some(t) = np.poll_timeout().filter(|&t| t <= now) {
            if np.handle_timeout(t) {
                cnps.push(t);
            }
        }
        let ce = rng % 7 == 0;
        if ce {
            marks.push(now);
        }
        if np.on_packet(now, ce) {
            cnps.push(now);
        }
    }
    assert!(
        cnps.windows(2).all(|w| w[1] - w[0] >= n),
        "CNPs closer than N"
    );
    for m in marks {
        let answered = cnps.iter().any(|&c| c >= m && c <= m + n);
        let last_window = m + n > now;
        assert!(answered || last_window, "mark at {m} got no CNP within N");
    }
}

/// Equation (1) from the start: α = 1, so the first CNP halves the rate; RT keeps
/// the rate before the cut.
#[test]
fn rp_first_cnp_halves_the_rate() {
    let p = paper();
    let mut rp = ReactionPoint::new(p.clone());
    assert_eq!(rp.rate_bps(), 40e9);
    assert_eq!(rp.poll_timeout(), None, "no timers before any CNP");
    rp.on_cnp(0);
    assert!(close(rp.rate_bps(), 20e9));
    assert!(close(rp.target_bps(), 40e9));
    assert!(close(rp.alpha(), 1.0), "(1 - g) * 1 + g");
    assert_eq!(rp.poll_timeout(), Some(p.alpha_timer.min(p.increase_timer)));
}

/// Equation (2): without CNPs α decays by (1 - g) per α period.
#[test]
fn rp_alpha_decays_on_its_timer() {
    let p = paper();
    let mut rp = ReactionPoint::new(p.clone());
    rp.on_cnp(0);
    rp.handle_timeout(10 * p.alpha_timer);
    assert!(close(rp.alpha(), (1.0 - p.g).powi(10)));
}

/// The order of equation (1) against HPCC's: updating α first cuts harder when α
/// has decayed.
#[test]
fn rp_alpha_update_order() {
    let run = |alpha_first: bool| {
        let mut p = paper();
        p.alpha_first = alpha_first;
        let mut rp = ReactionPoint::new(p.clone());
        rp.on_cnp(0);
        rp.handle_timeout(100 * p.alpha_timer);
        let (rc, a) = (rp.rate_bps(), rp.alpha());
        rp.on_cnp(100 * p.alpha_timer);
        (rc, a, rp.rate_bps())
    };
    let (rc, a, paper_cut) = run(false);
    assert!(close(paper_cut, rc * (1.0 - a / 2.0)));
    let (_, _, first_cut) = run(true);
    let g = paper().g;
    assert!(close(first_cut, rc * (1.0 - ((1.0 - g) * a + g) / 2.0)));
    assert!(first_cut < paper_cut);
}

/// Figure 7: F timer events of fast recovery halve the distance to RT; then RT grows
/// by RAI per event (additive increase).
#[test]
fn rp_fast_recovery_then_additive_increase() {
    let mut p = paper();
    p.byte_counter = None;
    let mut rp = ReactionPoint::new(p.clone());
    rp.on_cnp(0);
    let mut rc = rp.rate_bps();
    for i in 1..=p.fast_recovery_steps {
        rp.handle_timeout(u64::from(i) * p.increase_timer);
        rc = (40e9 + rc) / 2.0;
        assert!(close(rp.rate_bps(), rc), "fast recovery step {i}");
        assert!(close(rp.target_bps(), 40e9));
    }
    assert_eq!(rp.stats().fast_recovery, 5);
    // Below line rate RT can grow: cut twice, so RT is below the line too.
    let mut rp = ReactionPoint::new(p.clone());
    rp.on_cnp(0);
    rp.on_cnp(1);
    let rt = rp.target_bps();
    for i in 1..=p.fast_recovery_steps + 2 {
        rp.handle_timeout(1 + u64::from(i) * p.increase_timer);
    }
    assert_eq!(rp.stats().additive, 2);
    assert!(close(rp.target_bps(), rt + 2.0 * p.rai_bps));
}

/// Hyper increase once both the timer and the byte counter passed F, by (min - F)
/// RHAI per event; the byte counter counts bytes sent.
#[test]
fn rp_hyper_increase_needs_both_counters_past_f() {
    let mut p = paper();
    p.byte_counter = Some(1_000);
    let mut rp = ReactionPoint::new(p.clone());
    rp.on_cnp(0);
    rp.on_cnp(0);
    let f = u64::from(p.fast_recovery_steps);
    // Byte counter alone past F: additive, not hyper.
    rp.on_sent(1_000 * (f + 3));
    assert_eq!(rp.stats().hyper, 0);
    assert_eq!(rp.stats().additive, 3);
    // Timer past F too: hyper, by (min(T, BC) - F) RHAI.
    for i in 1..=f + 1 {
        rp.handle_timeout(i * p.increase_timer);
    }
    assert_eq!(rp.stats().hyper, 1);
    let rt = rp.target_bps();
    rp.on_sent(1_000);
    assert_eq!(rp.stats().hyper, 2);
    assert!(close(rp.target_bps(), (rt + p.rhai_bps).min(40e9)));
}

/// A CNP restarts the counters and both timers.
#[test]
fn rp_cnp_restarts_the_increase() {
    let p = paper();
    let mut rp = ReactionPoint::new(p.clone());
    rp.on_cnp(0);
    rp.handle_timeout(3 * p.increase_timer);
    assert_eq!(rp.stats().fast_recovery, 3);
    let t = 3 * p.increase_timer + US;
    rp.on_cnp(t);
    assert_eq!(
        rp.poll_timeout(),
        Some(t + p.increase_timer.min(p.alpha_timer))
    );
    rp.handle_timeout(t + 5 * p.increase_timer);
    // Five more fast-recovery steps, not additive ones.
    assert_eq!(rp.stats().fast_recovery, 8);
    assert_eq!(rp.stats().additive, 0);
}

/// Back at line rate the increase timer stops; α keeps decaying until negligible.
#[test]
fn rp_timers_stop_when_nothing_is_left_to_do() {
    let p = paper();
    let mut rp = ReactionPoint::new(p.clone());
    rp.on_cnp(0);
    let mut now = 0;
    while rp.rate_bps() < 40e9 {
        now = rp.poll_timeout().expect("recovering needs a timer");
        rp.handle_timeout(now);
        assert!(now < 100 * MS, "never recovered");
    }
    // Recovery is geometric: line rate within floating point after a few dozen steps.
    assert!(rp.stats().fast_recovery == 5);
    while let Some(t) = rp.poll_timeout() {
        rp.handle_timeout(t);
        now = t;
    }
    assert!(rp.alpha() < 1e-6);
    assert!(now > 0);
}

/// Cuts never go below the minimum rate, and say how often it bound.
#[test]
fn rp_minimum_rate() {
    let p = paper();
    let mut rp = ReactionPoint::new(p.clone());
    for i in 0..40 {
        rp.on_cnp(i * 50 * US);
    }
    assert_eq!(rp.rate_bps(), p.min_rate_bps);
    assert!(rp.stats().floored > 0);
}

/// With a cut period (the firmware's 4 µs) a CNP soon after a cut waits for the
/// period's end, and several waiting CNPs make one cut.
#[test]
fn rp_cut_period() {
    let p = DcqcnParams::profile(Profile::MlxFw, LINE);
    let mut rp = ReactionPoint::new(p.clone());
    rp.on_cnp(0);
    rp.on_cnp(US);
    rp.on_cnp(2 * US);
    assert_eq!(rp.stats().cuts, 1);
    assert_eq!(rp.poll_timeout(), Some(p.alpha_timer));
    rp.handle_timeout(p.min_cut_interval);
    assert_eq!(rp.stats().cuts, 2);
    assert_eq!(rp.stats().cnps, 3);
}

/// The firmware's target clamp (`clamp_target = false`): a train of cuts with no
/// timer increase between them leaves RT where it was, so the first fast-recovery
/// step goes halfway back to the rate before the congestion; a cut after a timer
/// increase does clamp RT. The paper's rule clamps on every cut.
#[test]
fn rp_target_clamp_only_after_a_timer_increase() {
    let mut p = paper();
    p.min_cut_interval = 0;
    p.byte_counter = None;
    let train = |p: &DcqcnParams| {
        let mut rp = ReactionPoint::new(p.clone());
        for i in 0..6 {
            rp.on_cnp(i * US);
        }
        rp
    };
    let mut always = train(&p);
    assert!(always.rate_bps() < 2e9, "six cuts: {}", always.rate_bps());
    assert!(close(
        always.target_bps(),
        always.rate_bps() * 2.0 / (2.0 - always.alpha())
    ));
    p.clamp_target = false;
    let mut firmware = train(&p);
    assert!(close(firmware.rate_bps(), always.rate_bps()));
    assert!(
        close(firmware.target_bps(), 40e9),
        "{}",
        firmware.target_bps()
    );
    let t = 5 * US + p.increase_timer;
    always.handle_timeout(t);
    firmware.handle_timeout(t);
    assert!(always.rate_bps() < 2e9);
    assert!(firmware.rate_bps() > 20e9, "{}", firmware.rate_bps());
    // After that timer increase, the next cut clamps RT to RC.
    let rc = firmware.rate_bps();
    firmware.on_cnp(t + US);
    assert!(close(firmware.target_bps(), rc));
    // And a second one right after does not move it again.
    firmware.on_cnp(t + 2 * US);
    assert!(close(firmware.target_bps(), rc));
}
