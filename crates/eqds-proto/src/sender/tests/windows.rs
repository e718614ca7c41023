//! Per-destination windows set with `set_window` and the credit they bound.

use super::*;

#[test]
fn a_destination_with_its_own_window_bursts_asks_and_holds_only_that() {
    let mut s = Sender::new(config(Mode::Ndp));
    s.set_window(2, 2 * MTU);
    assert_eq!((s.window(1), s.window(2)), (W, 2 * MTU));
    for dst in [1, 2] {
        for i in 0..6 {
            s.enqueue(0, dst, FULL, dst * 10 + i).unwrap();
        }
    }
    let sent = drain(&mut s, 0);
    let count = |dst| sent.iter().filter(|t| t.dst == dst).count();
    // NDP mode bursts one window: four packets to 1, two to 2.
    assert_eq!((count(1), count(2)), (4, 2));
    // Pull targets ask for the backlog up to the window, no further.
    let last_target = |dst| {
        sent.iter()
            .rev()
            .find(|t| t.dst == dst)
            .map(|t| t.header.pull_target)
            .unwrap()
    };
    assert_eq!(last_target(1), 2, "backlog 2 packets, within W");
    assert_eq!(last_target(2), 2, "backlog 4 packets, capped at 2");
    // Credit from many PULLs is clamped at the tunnel's window.
    s.handle_control(1, 2, &pull(4));
    assert_eq!(s.tunnel(2).unwrap().credit, i64::from(2 * MTU));
    // Shrinking an existing tunnel's window gives up credit beyond it.
    s.set_window(2, MTU);
    assert_eq!(s.tunnel(2).unwrap().credit, i64::from(MTU));
}

#[test]
fn an_explicit_initial_window_shrinks_to_a_smaller_tunnel_window() {
    let mut cfg = config(Mode::Rts);
    cfg.initial_window = Some(3 * MTU);
    let mut s = Sender::new(cfg);
    s.set_window(1, 2 * MTU);
    for i in 0..5 {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    let data = drain(&mut s, 0)
        .iter()
        .filter(|t| t.header.kind == DataKind::Data)
        .count();
    assert_eq!(data, 2);
}

#[test]
#[should_panic(expected = "at least one MTU")]
fn a_window_below_one_mtu_is_refused() {
    Sender::<u32>::new(config(Mode::Ndp)).set_window(1, MTU - 1);
}
