use super::*;
use crate::eqif::DeliveryKind;
use crate::sender::Mode;
use crate::time::PS_PER_US;

const MTU: u32 = 1500;
const OVERHEAD: u32 = 44;
const RATE: u64 = 10_000_000_000;

fn params(seed: u64, eqifs: usize) -> HostParams {
    let shares: Vec<Share> = (0..eqifs)
        .map(|i| Share {
            weight: 1 + i as u32,
            priority: 0,
        })
        .collect();
    HostParams {
        mtu: MTU,
        overhead: OVERHEAD,
        link_rate_bps: RATE,
        paths: 4,
        seed,
        peer_eqifs: shares.clone(),
        eqifs: shares,
        tunnel_windows: None,
        queues: Vec::new(),
    }
}

fn config(mode: Mode) -> EqdsConfig {
    EqdsConfig {
        mode,
        window: 8,
        ..EqdsConfig::default()
    }
}

/// Carries packets between hosts 0 and 1 over a lossless wire with a fixed delay,
/// running each host's timers, until nothing is left to do or `until`. Returns the
/// payloads each host delivered, in order, with their sender.
fn run(hosts: &mut [Host<u32>; 2], until: Time) -> [Vec<(PeerId, u32)>; 2] {
    const DELAY: Time = 2 * PS_PER_US;
    enum Wire {
        Data(DataHeader, Option<u32>, u32),
        Control(ControlHeader, u32),
    }
    let mut in_flight: Vec<(Time, usize, Wire)> = Vec::new();
    let mut delivered = [Vec::new(), Vec::new()];
    let mut now = 0;
    loop {
        for (me, host) in hosts.iter_mut().enumerate() {
            let peer = 1 - me;
            while let Some((dst, header)) = host.poll_control(now) {
                assert_eq!(dst as usize, peer);
                in_flight.push((now + DELAY, peer, Wire::Control(header, OVERHEAD)));
            }
            while let Some((_, t)) = host.poll_transmit(now) {
                assert_eq!(t.dst as usize, peer);
                in_flight.push((
                    now + DELAY,
                    peer,
                    Wire::Data(t.header, t.payload, t.wire_len),
                ));
            }
        }
        let next_arrival = in_flight.iter().map(|w| w.0).min();
        let next_timer = [0, 1]
            .iter()
            .filter_map(|&h| hosts[h].poll_timeout(now))
            .min();
        let Some(next) = [next_arrival, next_timer].into_iter().flatten().min() else {
            break;
        };
        if next > until {
            break;
        }
        now = next.max(now);
        let (due, later): (Vec<_>, Vec<_>) = in_flight.into_iter().partition(|w| w.0 <= now);
        in_flight = later;
        for (_, at, wire) in due {
            let from = (1 - at) as PeerId;
            let host = &mut hosts[at];
            match wire {
                Wire::Data(h, payload, len) => {
                    let p = payload.unwrap_or(u32::MAX);
                    let inner = if payload.is_some() { len - OVERHEAD } else { 0 };
                    host.handle_data(now, from, &h, p, inner as usize).unwrap();
                }
                Wire::Control(h, len) => host.handle_control(now, from, &h, len),
            }
        }
        for (me, host) in hosts.iter_mut().enumerate() {
            host.handle_timeout(now);
            while let Some(d) = host.poll_deliver(now) {
                assert!(matches!(d.kind, DeliveryKind::InOrder { .. }));
                delivered[me].push((d.src, d.payload));
            }
            while host.poll_discarded().is_some() {}
            while host.poll_acked().is_some() {}
        }
    }
    delivered
}

/// Two hosts carry a stream each way through every EQIF: everything arrives once
/// and in order, named by the peer id the caller uses, whatever the sender id.
#[test]
fn two_hosts_exchange_in_order() {
    for mode in [Mode::Ndp, Mode::Rts] {
        let c = config(mode);
        let mut hosts = [Host::new(&c, params(1, 2)), Host::new(&c, params(2, 2))];
        for (me, host) in hosts.iter_mut().enumerate() {
            for i in 0..100u32 {
                let eqif = (i % 2) as usize;
                host.handle_write(0, eqif, 1 - me as PeerId, 1000, i, false)
                    .unwrap();
            }
        }
        let delivered = run(&mut hosts, 100 * crate::time::PS_PER_MS);
        for (me, got) in delivered.iter().enumerate() {
            assert!(got.iter().all(|&(src, _)| src as usize == 1 - me));
            // Each EQIF is its own tunnel: in order within it.
            for eqif in 0..2 {
                let seq: Vec<u32> = got
                    .iter()
                    .map(|&(_, p)| p)
                    .filter(|p| (p % 2) as usize == eqif)
                    .collect();
                let want: Vec<u32> = (0..100).filter(|p| (p % 2) as usize == eqif).collect();
                assert_eq!(seq, want, "{mode:?}, host {me}, EQIF {eqif}");
            }
        }
        // Every peer EQIF has a receiving tunnel of its own.
        for host in &hosts {
            assert_eq!(host.receiver().stats().established, 2);
        }
    }
}

#[test]
fn peer_ids_keep_the_sender_id_apart() {
    assert_eq!(Host::<u32>::rx_peer(5, 0), 5);
    assert_eq!(Host::<u32>::rx_peer(5, 3), (3 << 24) | 5);
    assert_eq!(Host::<u32>::peer_of((3 << 24) | 5), 5);
    assert_eq!(
        Host::<u32>::peer_of(Host::<u32>::rx_peer(MAX_PEER, 255)),
        MAX_PEER
    );
}

/// Data from a sender id that peers do not have is refused, payload handed back,
/// and leaves no state behind.
#[test]
fn unknown_sender_id_is_refused() {
    let mut host = Host::new(&config(Mode::Rts), params(1, 1));
    let header = DataHeader {
        kind: crate::wire::DataKind::Data,
        syn: true,
        trimmed: false,
        unordered: false,
        next_proto: NextProto::Ipv4,
        seq: 0,
        pull_target: 1,
        path_id: 0,
        sender_id: 1,
    };
    assert_eq!(host.handle_data(0, 7, &header, 42u32, 100), Err(42));
    assert!(host.credit().sender(Host::<u32>::rx_peer(7, 1)).is_none());
    assert!(host.poll_control(0).is_none());
}

/// Per-tunnel windows: one BDP at the slower end, whichever end that is.
#[test]
fn tunnel_windows_follow_the_slower_end() {
    let rtt = 12 * PS_PER_US;
    let rates: Arc<[u64]> = Arc::from(vec![RATE, RATE / 10, RATE * 4]);
    let mut p = params(1, 1);
    p.tunnel_windows = Some(TunnelWindows {
        rtt,
        peer_rates: rates,
    });
    let mut host = Host::new(&config(Mode::Rts), p);
    for dst in 1..3 {
        host.handle_write(0, 0, dst, 100, dst, false).unwrap();
    }
    // 12 us at 1 Gbit/s: 1500 B, one packet; at 10 Gbit/s (ours): 15000 B, 10.
    assert_eq!(host.sender(0).window(1), MTU);
    assert_eq!(host.sender(0).window(2), 10 * MTU);
    assert_eq!(bdp_packets(rtt, RATE, MTU), 10);
}

/// The slow timers are scanned once per `slack`, and still fire on time.
#[test]
fn slow_timers_are_found_without_a_scan_per_call() {
    let c = config(Mode::Rts);
    let mut host = Host::new(&c, params(1, 1));
    // Nothing to do: no timer, but a look again one slack later.
    assert_eq!(host.poll_timeout(0), Some(c.slow_timer_slack()));
    // An RTS goes out, and with it the credit-loss timer is armed.
    host.handle_write(0, 0, 1, 100, 1, false).unwrap();
    let (_, rts) = host.poll_transmit(0).unwrap();
    assert!(rts.payload.is_none());
    let due = host.poll_timeout(0).unwrap();
    assert!(due >= c.credit_loss_timeout());
    host.handle_timeout(due);
    // The credit-loss timer sent a new RTS.
    let (_, again) = host.poll_transmit(due).unwrap();
    assert!(again.payload.is_none());
}

/// A window beyond 32 bits saturates instead of wrapping to a small one (the
/// longest round trip and fastest rate a scenario allows).
#[test]
fn bdp_saturates() {
    let day = 86_400 * PS_PER_SEC;
    assert_eq!(bdp_packets(day, 1_000_000_000_000_000, 64), u32::MAX);
    assert_eq!(bdp_packets(12 * PS_PER_US, 10_000_000_000, 1500), 10);
}

#[test]
fn an_eqif_with_its_own_queue_has_its_own_limit_and_marking_ramp() {
    // EQIF 1 is an RDMA EQIF's kind of queue: 10 packets deep, marking everything
    // from 2 packets on; EQIF 0 keeps the configuration's (100 packets, RED from 25).
    let mut p = params(1, 2);
    p.queues = vec![
        None,
        Some(EqifQueue {
            limit_bytes: 10 * u64::from(MTU),
            ecn: Some(Red::step(2 * u64::from(MTU))),
        }),
    ];
    let mut host: Host<u32> = Host::new(&config(Mode::Rts), p);
    assert_eq!(host.send_queue_limit(0), 100 * u64::from(MTU));
    assert_eq!(host.send_queue_limit(1), 10 * u64::from(MTU));
    let len = MTU - OVERHEAD;
    let mut accepted = [0, 0];
    let mut marked = [0, 0];
    for i in 0..20 {
        for eqif in 0..2 {
            marked[eqif] += u32::from(host.mark_ce(eqif, 1));
            if host.handle_write(0, eqif, 1, len, i, false).is_ok() {
                accepted[eqif] += 1;
            }
        }
    }
    // Nothing has been sent (no credit yet in RTS mode): the queues hold what fits.
    assert_eq!(accepted, [20, 10]);
    // EQIF 0's ramp starts at 25 packets: no mark below; EQIF 1 marks from 2 on.
    assert_eq!(marked, [0, 18]);
}
