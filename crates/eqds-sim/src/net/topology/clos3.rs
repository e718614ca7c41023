//! A 3-tier Clos of pods under a full mesh of spines: the DCQCN paper's testbed
//! (SIGCOMM 2015, Fig. 2) and its relatives.
//!
//! ToRs are grouped into pods of `tors_per_pod`; each ToR has one uplink to each of
//! its pod's `leaves_per_pod` leaves, and every leaf one uplink to every spine. With
//! the defaults (4 ToRs, 2 per pod, 2 leaves per pod, 2 spines) that is the paper's
//! testbed: T1 and T2 uplink to L1 and L2, T3 and T4 to L3 and L4, and each leaf to
//! both spines.
//!
//! Unlike the `fat_tree`, where aggregation switch `j` of a pod reaches only core
//! group `j`, every leaf here reaches every spine, so a spine has `leaves_per_pod`
//! equal-cost links into each pod, any of which reaches all the pod's hosts: its
//! down ports come in groups (`down_width = leaves_per_pod`, see `net::switch`), and
//! the spine's ECMP hash (or, spraying, the path id's highest digit) picks the leaf.
//! Hence the name: the paper calls its testbed a 3-tier Clos, and the fat tree is
//! only one wiring of one.
//!
//! Hosts are numbered ToR by ToR, ToRs pod by pod: with `h` hosts per ToR, ToR `t`
//! (the paper's T(t+1)) has hosts `t*h .. (t+1)*h`. The paper's "H11 .. H14 under T1"
//! and "H31, H32 under T3" are then hosts `0..4` and `2h, 2h+1`: host `Hij` (the
//! `j`-th under `Ti`) is `(i-1)*h + (j-1)`.
//!
//! With spraying, a path id's lowest base-`leaves_per_pod` digit picks the ToR's
//! uplink, the next base-`spines` digit the leaf's uplink, and the next
//! base-`leaves_per_pod` digit the spine's leaf in the destination pod:
//! `leaves_per_pod^2 * spines` distinct paths between pods (8 in the testbed).

use crate::net::{LinkSpec, Network, NetworkBuilder};

/// Sizes of the network (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub tors: u32,
    pub tors_per_pod: u32,
    pub leaves_per_pod: u32,
    pub spines: u32,
    pub hosts_per_tor: u32,
}

impl Shape {
    pub fn pods(&self) -> u32 {
        self.tors / self.tors_per_pod
    }
}

pub struct Links {
    pub host: LinkSpec,
    pub tor_leaf: LinkSpec,
    pub leaf_spine: LinkSpec,
}

pub fn build(mut b: NetworkBuilder, shape: Shape, links: Links) -> Network {
    let Shape {
        tors_per_pod,
        leaves_per_pod,
        spines,
        hosts_per_tor,
        ..
    } = shape;
    let pods = shape.pods();
    let hosts_per_pod = tors_per_pod * hosts_per_tor;
    let mut tor_ids = Vec::with_capacity(shape.tors as usize);
    let mut leaf_ids = Vec::with_capacity((pods * leaves_per_pod) as usize);
    for pod in 0..pods {
        for t in 0..tors_per_pod {
            let lo = pod * hosts_per_pod + t * hosts_per_tor;
            tor_ids.push(b.switch(lo, hosts_per_tor, 1, leaves_per_pod, 1));
        }
        for _ in 0..leaves_per_pod {
            let lo = pod * hosts_per_pod;
            leaf_ids.push(b.switch(lo, tors_per_pod, hosts_per_tor, spines, leaves_per_pod));
        }
    }
    let spine_ids: Vec<_> = (0..spines)
        .map(|_| {
            b.switch_with_groups(
                0,
                pods,
                leaves_per_pod,
                hosts_per_pod,
                0,
                leaves_per_pod * spines,
            )
        })
        .collect();

    for (t, &tor) in tor_ids.iter().enumerate() {
        for h in 0..hosts_per_tor {
            let host = t as u32 * hosts_per_tor + h;
            b.link(host, b.down_port(tor, h), links.host, "host_up", "tor_down");
        }
    }
    for pod in 0..pods {
        for l in 0..leaves_per_pod {
            let leaf = leaf_ids[(pod * leaves_per_pod + l) as usize];
            for t in 0..tors_per_pod {
                let tor = tor_ids[(pod * tors_per_pod + t) as usize];
                b.link(
                    b.up_port(tor, l),
                    b.down_port(leaf, t),
                    links.tor_leaf,
                    "tor_up",
                    "leaf_down",
                );
            }
            // Spine down port `pod * leaves_per_pod + l`: group `pod`, member `l`.
            for (s, &spine) in spine_ids.iter().enumerate() {
                b.link(
                    b.up_port(leaf, s as u32),
                    b.down_port(spine, pod * leaves_per_pod + l),
                    links.leaf_spine,
                    "leaf_up",
                    "spine_down",
                );
            }
        }
    }
    b.finish(hosts_per_tor)
}

#[cfg(test)]
mod tests {
    use crate::ids::{HostId, Node, PortId};
    use crate::net::queue::QueueSpec;
    use crate::net::switch::{mix32, LoadBalancing};
    use crate::net::topology::{LinkToml, TopologySpec};
    use crate::net::{Network, NetworkBuilder};
    use crate::units::value::{Duration, Rate};
    use crate::units::{serialisation_time, US};

    fn link(gbps: u64, us: u64) -> LinkToml {
        LinkToml {
            rate: Rate(gbps * 1_000_000_000),
            latency: Duration(us * US),
        }
    }

    fn spec(
        tors: u32,
        tors_per_pod: u32,
        leaves_per_pod: u32,
        spines: u32,
        h: u32,
    ) -> TopologySpec {
        TopologySpec::Clos3 {
            tors: Some(tors),
            tors_per_pod: Some(tors_per_pod),
            leaves_per_pod: Some(leaves_per_pod),
            spines: Some(spines),
            hosts_per_tor: h,
            link: link(40, 1),
            host_link: None,
            tor_leaf_link: None,
            leaf_spine_link: None,
        }
    }

    /// The DCQCN testbed with `h` hosts per ToR, every default left to apply.
    fn testbed(h: u32) -> TopologySpec {
        TopologySpec::Clos3 {
            tors: None,
            tors_per_pod: None,
            leaves_per_pod: None,
            spines: None,
            hosts_per_tor: h,
            link: link(40, 1),
            host_link: None,
            tor_leaf_link: None,
            leaf_spine_link: None,
        }
    }

    fn build(topology: &TopologySpec, lb: LoadBalancing) -> Network {
        topology.validate().unwrap();
        let queue = QueueSpec::DropTail {
            limit_packets: None,
            limit_bytes: None,
        };
        let mut n = 0;
        topology.build(|hosts| {
            NetworkBuilder::new(
                hosts,
                queue.clone(),
                queue,
                0,
                lb,
                Box::new(move || {
                    n += 1;
                    mix32(n)
                }),
            )
        })
    }

    /// The ports a packet from `src` to `dst` leaves by, following `route` as the
    /// simulator does; panics if it lands anywhere but at `dst`.
    fn walk(net: &Network, src: HostId, dst: HostId, entropy: u32) -> Vec<PortId> {
        let mut port = net.host_port(src);
        let mut ports = vec![port];
        loop {
            match net.ports[port as usize].peer {
                Node::Host(h) => {
                    assert_eq!(h, dst, "{src} -> {dst} (entropy {entropy}) landed at {h}");
                    return ports;
                }
                Node::Switch(s) => {
                    port = net.switches[s as usize].route(dst, entropy, net.load_balancing);
                    assert!(ports.len() < 16, "{src} -> {dst} loops: {ports:?}");
                    ports.push(port);
                }
            }
        }
    }

    /// Links from host `a` to host `b`: 2 under one ToR, 4 within a pod, 6 across.
    fn expected_hops(a: HostId, b: HostId, h: u32, tors_per_pod: u32) -> usize {
        let (ta, tb) = (a / h, b / h);
        if ta == tb {
            2
        } else if ta / tors_per_pod == tb / tors_per_pod {
            4
        } else {
            6
        }
    }

    #[test]
    fn every_host_reaches_every_host_by_a_shortest_path() {
        // The testbed, and three pods of three ToRs under two leaves, three spines.
        for (topology, h, tors_per_pod) in [(testbed(5), 5, 2), (spec(9, 3, 2, 3, 2), 2, 3)] {
            for lb in [LoadBalancing::Ecmp, LoadBalancing::Spray] {
                let net = build(&topology, lb);
                let paths = net.path_count();
                for a in 0..net.n_hosts {
                    for b in (0..net.n_hosts).filter(|&b| b != a) {
                        for entropy in (0..paths).chain([12_345, u32::MAX]) {
                            let hops = walk(&net, a, b, entropy).len();
                            assert_eq!(hops, expected_hops(a, b, h, tors_per_pod), "{a} -> {b}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_testbed_has_its_switches_links_and_tiers() {
        let topology = testbed(5);
        assert_eq!(topology.n_hosts(), 20);
        assert_eq!(topology.n_switches(), 10);
        // 20 host links, 8 ToR-leaf and 8 leaf-spine links.
        assert_eq!(topology.n_links(), 36);
        let net = build(&topology, LoadBalancing::Ecmp);
        assert_eq!(net.ports.len() as u64, 2 * topology.n_links());
        assert_eq!(net.switches.len() as u64, topology.n_switches());
        let mut tiers = net.tier_names.clone();
        tiers.sort();
        assert_eq!(
            tiers,
            [
                "host_up",
                "leaf_down",
                "leaf_up",
                "spine_down",
                "tor_down",
                "tor_up"
            ]
        );
        // T1 reaches L1 and L2, T3 L3 and L4; a spine has two links into each pod.
        let spine = net.switches.last().unwrap();
        assert_eq!((spine.n_down, spine.down_width, spine.n_up), (4, 2, 0));
        assert_eq!((spine.lo, spine.hi, spine.span), (0, 20, 10));
        // What the limits and the memory estimate count is what gets built.
        let variant = spec(9, 3, 2, 3, 2);
        let net = build(&variant, LoadBalancing::Ecmp);
        assert_eq!(net.n_hosts as u64, variant.n_hosts());
        assert_eq!(net.ports.len() as u64, 2 * variant.n_links());
        assert_eq!(net.switches.len() as u64, variant.n_switches());
    }

    #[test]
    fn a_spine_splits_flows_between_the_leaves_of_a_pod() {
        let net = build(&testbed(5), LoadBalancing::Ecmp);
        let spine = net.switches.last().unwrap();
        for (dst, first) in [(0, spine.first_down), (15, spine.first_down + 2)] {
            let mut on_first = 0;
            for entropy in 0..1000 {
                let out = spine.route(dst, mix32(entropy), LoadBalancing::Ecmp);
                assert!(out == first || out == first + 1, "{out}");
                on_first += (out == first) as u32;
            }
            assert!((400..=600).contains(&on_first), "{on_first} of 1000");
        }
    }

    #[test]
    fn sprayed_path_ids_name_distinct_paths_between_pods() {
        for (topology, paths, far) in [(testbed(5), 8, 10), (spec(9, 3, 2, 3, 2), 12, 6)] {
            let net = build(&topology, LoadBalancing::Spray);
            assert_eq!(net.path_count(), paths);
            let mut seen: Vec<Vec<PortId>> = (0..paths).map(|p| walk(&net, 0, far, p)).collect();
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len() as u32, paths);
            // The next id comes back round to path 0.
            assert_eq!(walk(&net, 0, far, paths), walk(&net, 0, far, 0));
        }
    }

    #[test]
    fn base_rtt_counts_six_links_each_way() {
        let mut topology = testbed(5);
        if let TopologySpec::Clos3 {
            host_link,
            tor_leaf_link,
            leaf_spine_link,
            ..
        } = &mut topology
        {
            *host_link = Some(link(40, 1));
            *tor_leaf_link = Some(link(100, 2));
            *leaf_spine_link = Some(link(400, 3));
        }
        let net = build(&topology, LoadBalancing::Ecmp);
        let one_way = |size| {
            2 * (serialisation_time(size, 40_000_000_000) + US)
                + 2 * (serialisation_time(size, 100_000_000_000) + 2 * US)
                + 2 * (serialisation_time(size, 400_000_000_000) + 3 * US)
        };
        // T1 to T3: host, ToR, leaf, spine, leaf, ToR, host.
        assert_eq!(net.unloaded_delay(0, 10, 1500), one_way(1500));
        assert_eq!(net.base_rtt(0, 10, 1500, 64), one_way(1500) + one_way(64));
        assert_eq!(net.max_base_rtt(1500, 64), one_way(1500) + one_way(64));
        // T1 to T2 stays in the pod: two links fewer each way.
        let in_pod = one_way(1500) - 2 * (serialisation_time(1500, 400_000_000_000) + 3 * US);
        assert_eq!(net.unloaded_delay(0, 5, 1500), in_pod);
    }
}
