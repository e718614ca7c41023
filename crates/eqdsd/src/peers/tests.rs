use super::*;

fn table(max: u32) -> Peers {
    let named = [PeerConfig {
        endpoint: "192.168.0.9:9".parse().unwrap(),
        allowed_ips: vec![
            "10.88.9.0/24".parse().unwrap(),
            "10.99.0.0/16".parse().unwrap(),
        ],
    }];
    let ranges = [PeerRange {
        endpoints: "10.77.0.0/16".parse().unwrap(),
        port: 7700,
        allowed_ips: "10.88.0.0/16".parse().unwrap(),
    }];
    Peers::new(&named, &ranges, max)
}

#[test]
fn named_prefixes_win_over_ranges() {
    let mut t = table(8);
    assert_eq!(t.route("10.88.9.7".parse().unwrap()), Ok(0));
    assert_eq!(t.route("10.99.1.1".parse().unwrap()), Ok(0));
    let id = t.route("10.88.3.1".parse().unwrap()).unwrap();
    assert_eq!(id, 1);
    assert_eq!(t.get(id).endpoint, "10.77.3.1:7700".parse().unwrap());
    assert_eq!(t.accept("10.77.3.1".parse().unwrap()), Ok(id));
    assert_eq!(
        t.route("172.16.0.1".parse().unwrap()),
        Err(PeerError::Unknown)
    );
}

#[test]
fn anti_spoofing_and_table_limit() {
    let mut t = table(2);
    let a = t.accept("10.77.4.2".parse().unwrap()).unwrap();
    assert!(t.may_use(a, "10.88.4.2".parse().unwrap()));
    assert!(!t.may_use(a, "10.88.4.3".parse().unwrap()));
    assert!(t.may_use(0, "10.88.9.200".parse().unwrap()));
    assert!(!t.may_use(0, "10.88.4.2".parse().unwrap()));
    assert_eq!(
        t.accept("10.66.0.1".parse().unwrap()),
        Err(PeerError::Unknown)
    );
    // The range slot holds an unconfirmed peer: a new one takes it.
    assert_eq!(t.take_evicted(), None);
    let b = t.accept("10.77.5.5".parse().unwrap()).unwrap();
    assert_eq!(
        t.take_evicted(),
        Some(Evicted {
            id: b,
            endpoint: "10.77.4.2:7700".parse().unwrap()
        })
    );
    assert!(t.may_use(b, "10.88.5.5".parse().unwrap()));
    assert!(!t.may_use(b, "10.88.4.2".parse().unwrap()));
    // Once confirmed it stays, and the table is full.
    t.confirm(b);
    assert_eq!(
        t.accept("10.77.4.2".parse().unwrap()),
        Err(PeerError::TableFull)
    );
    assert_eq!(t.take_evicted(), None);
    assert_eq!(t.accept("10.77.5.5".parse().unwrap()), Ok(b));
}

/// Two named peers with IPv6 prefixes, one nested in the other, beside IPv4 ones,
/// and an IPv4 range.
fn dual_stack() -> Peers {
    let named = [
        PeerConfig {
            endpoint: "192.168.0.9:9".parse().unwrap(),
            allowed_ips: vec![
                "10.88.9.0/24".parse().unwrap(),
                "fd00:88:9::/48".parse().unwrap(),
            ],
        },
        PeerConfig {
            endpoint: "192.168.0.10:9".parse().unwrap(),
            allowed_ips: vec!["fd00:88::/32".parse().unwrap()],
        },
    ];
    let ranges = [PeerRange {
        endpoints: "10.77.0.0/16".parse().unwrap(),
        port: 7700,
        allowed_ips: "10.88.0.0/16".parse().unwrap(),
    }];
    Peers::new(&named, &ranges, 8)
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn ipv6_destinations_take_the_longest_prefix() {
    let mut t = dual_stack();
    assert_eq!(t.route(ip("fd00:88:9::1")), Ok(0), "the /48 beats the /32");
    assert_eq!(t.route(ip("fd00:88:9:ffff::7")), Ok(0));
    assert_eq!(t.route(ip("fd00:88:a::1")), Ok(1));
    assert_eq!(t.route(ip("fd00:88::1")), Ok(1));
    assert_eq!(t.route(ip("fd00:89::1")), Err(PeerError::Unknown));
    // An IPv4-mapped address is not the IPv4 address: ranges are IPv4 only.
    assert_eq!(t.route(ip("::ffff:10.88.3.1")), Err(PeerError::Unknown));
    assert_eq!(t.route(ip("10.88.9.1")), Ok(0));
    // No peer was created for the IPv6 misses.
    assert_eq!(t.iter().count(), 2);
    let id = t.route(ip("10.88.3.1")).unwrap();
    assert_eq!(id, 2);
}

#[test]
fn ipv6_sources_are_checked_against_the_peers_prefixes() {
    let mut t = dual_stack();
    assert!(t.may_use(0, ip("fd00:88:9::42")));
    assert!(t.may_use(0, ip("10.88.9.1")));
    assert!(!t.may_use(0, ip("fd00:88:a::1")), "peer 1's, not peer 0's");
    assert!(t.may_use(1, ip("fd00:88:a::1")));
    assert!(t.may_use(1, ip("fd00:88:9::1")), "inside peer 1's /32 too");
    assert!(!t.may_use(1, ip("10.88.9.1")), "peer 1 has no IPv4 prefix");
    assert!(!t.may_use(1, ip("fd01::1")));
    // A range peer owns one IPv4 address and no IPv6 one, not even the mapped form.
    let r = t.accept("10.77.4.2".parse().unwrap()).unwrap();
    assert!(t.may_use(r, ip("10.88.4.2")));
    assert!(!t.may_use(r, ip("::ffff:10.88.4.2")));
    assert!(!t.may_use(r, ip("fd00:88:4::2")));
}

fn addr(i: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 77, 0, 0)) | (i & 0xffff))
}

/// One packet from each of many range addresses, with room for few peers, takes
/// only unconfirmed slots: the named peer and a confirmed range peer keep theirs and
/// work both ways, every slot taken is reported once, and a newcomer after the flood
/// gets a slot.
#[test]
fn one_packet_from_each_of_many_range_addresses_locks_no_peer_out() {
    let mut t = table(4);
    let talking = t.route(ip("10.88.3.1")).unwrap();
    t.confirm(talking);
    let mut evicted = std::collections::HashSet::new();
    for i in 1000..2000 {
        let id = t.accept(addr(i)).expect("an unconfirmed slot is taken");
        assert!(id != 0 && id != talking);
        if let Some(e) = t.take_evicted() {
            assert_eq!(e.id, id);
            assert!(evicted.insert(e.endpoint), "{e:?} evicted twice");
        }
    }
    assert_eq!(t.len(), 4);
    assert_eq!(evicted.len(), 1000 - 2, "two slots were free");
    // Both ways, for the named and the confirmed range peer.
    assert_eq!(t.route(ip("10.88.9.7")), Ok(0));
    assert_eq!(t.accept("192.168.0.9".parse().unwrap()), Ok(0));
    assert_eq!(t.route(ip("10.88.3.1")), Ok(talking));
    assert_eq!(t.accept("10.77.3.1".parse().unwrap()), Ok(talking));
    assert!(t.may_use(talking, ip("10.88.3.1")));
    assert_eq!(t.take_evicted(), None);
    // A new peer, either way round.
    let new = t.route(ip("10.88.200.1")).unwrap();
    assert_eq!(t.get(new).endpoint, "10.77.200.1:7700".parse().unwrap());
    assert!(t.take_evicted().is_some());
    assert_eq!(t.accept("10.77.200.1".parse().unwrap()), Ok(new));
    assert_eq!(t.standing(new), Standing::Unconfirmed);
    assert_eq!(t.standing(talking), Standing::Confirmed);
    assert_eq!(t.standing(0), Standing::Named);
}

/// CLOCK's second chance: an unconfirmed peer that sends between every two
/// one-packet addresses is never the one evicted.
#[test]
fn an_unconfirmed_peer_that_keeps_talking_outlasts_one_packet_addresses() {
    let mut t = table(4);
    let legit: Ipv4Addr = "10.77.50.50".parse().unwrap();
    let id = t.accept(legit).unwrap();
    for i in 0..300 {
        t.accept(addr(1000 + i)).unwrap();
        if let Some(e) = t.take_evicted() {
            assert_ne!(*e.endpoint.ip(), legit, "evicted after {i} others");
        }
        assert_eq!(t.accept(legit), Ok(id));
    }
    // Once it falls silent it goes within two sweeps of the three-slot ring.
    let gone = (0..6).any(|i| {
        t.accept(addr(3000 + i)).unwrap();
        t.take_evicted().is_some_and(|e| *e.endpoint.ip() == legit)
    });
    assert!(gone);
}

/// A slot given to a new peer comes back clean: unconfirmed, not steered, its old
/// address no longer its own; confirming ring members in any order keeps the ring
/// consistent.
#[test]
fn a_reused_slot_starts_clean_and_confirmation_keeps_the_ring_consistent() {
    let mut t = table(5);
    let ids: Vec<PeerId> = (1..=4).map(|i| t.accept(addr(i)).unwrap()).collect();
    t.steered(ids[0], 1);
    assert!(t.is_steered(ids[0], 1) && !t.is_steered(ids[0], 0));
    // Confirm the second: the last ring member moves into its place.
    t.confirm(ids[1]);
    t.confirm(ids[1]);
    let mut taken = Vec::new();
    for i in 100..106 {
        t.accept(addr(i)).unwrap();
        taken.push(t.take_evicted().unwrap().id);
    }
    assert!(!taken.contains(&ids[1]), "a confirmed peer is never taken");
    assert!(taken.contains(&ids[0]) && taken.contains(&ids[2]) && taken.contains(&ids[3]));
    assert!(!t.is_steered(ids[0], 1), "the new peer inherits no mark");
    assert_eq!(t.standing(ids[0]), Standing::Unconfirmed);
    // The first address, evicted, is a new peer again.
    let again = t.accept(addr(1)).unwrap();
    assert_eq!(t.get(again).endpoint.ip(), &addr(1));
    assert!(t.take_evicted().is_some());
    // Confirm everything: the table is full.
    for id in [ids[0], ids[2], ids[3]] {
        t.confirm(id);
    }
    assert_eq!(t.accept(addr(999)), Err(PeerError::TableFull));
}

/// A range containing this host makes no peer of it, nor of the address owning its
/// inner address, nor one owning a named peer's inner address.
#[test]
fn no_range_peer_at_this_host_or_owning_a_named_peers_address() {
    let mut t = table(8).with_own_addresses(
        Some("10.77.1.1".parse().unwrap()),
        "10.88.1.2".parse().unwrap(),
    );
    assert_eq!(
        t.accept("10.77.1.1".parse().unwrap()),
        Err(PeerError::Unknown)
    );
    assert_eq!(
        t.accept("10.77.1.2".parse().unwrap()),
        Err(PeerError::Unknown)
    );
    assert_eq!(t.route(ip("10.88.1.2")), Err(PeerError::Unknown));
    // 10.88.9.0/24 is the named peer's: 10.77.9.7 could send from its 10.88.9.7.
    assert_eq!(
        t.accept("10.77.9.7".parse().unwrap()),
        Err(PeerError::Unknown)
    );
    assert_eq!(t.route(ip("10.88.9.7")), Ok(0));
    assert_eq!(t.len(), 1);
    assert!(t.accept("10.77.1.3".parse().unwrap()).is_ok());
}
