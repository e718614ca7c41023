//! The static routing table: longest prefix match, then a hash of the packet's 5-tuple
//! over the route's next hops (ECMP).
//!
//! The hash covers the UDP/TCP ports, so a flow keeps one path, while eqdsd, which
//! sprays by giving each packet a different UDP source port (EQDS paper §4.2), has its
//! packets spread over every next hop: per-flow ECMP and per-packet spraying are one
//! mechanism, as in the switches the papers assume. Each switch salts the hash with its
//! own seed so that two switches in series do not make the same choice (hash
//! polarisation).

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::frame::Ipv4Info;

/// Where a route sends a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextHop {
    /// Index of the egress port.
    pub port: usize,
    /// The neighbour whose MAC address the frame is sent to; `None` for a directly
    /// connected prefix, where it is the packet's own destination.
    pub via: Option<Ipv4Addr>,
}

impl NextHop {
    /// The IPv4 address to resolve for a packet to `dst`.
    pub fn neighbour(&self, dst: Ipv4Addr) -> Ipv4Addr {
        self.via.unwrap_or(dst)
    }
}

#[derive(Debug, Clone)]
struct Route {
    prefix: Ipv4Net,
    hops: Vec<NextHop>,
}

/// Routes sorted longest prefix first: a testbed has tens of routes, and a scan of a
/// short sorted vector beats a trie at that size.
#[derive(Debug, Clone, Default)]
pub struct RouteTable {
    routes: Vec<Route>,
    seed: u64,
}

impl RouteTable {
    /// A table whose ECMP hash is salted with `seed`.
    pub fn new(seed: u64) -> Self {
        RouteTable {
            routes: Vec::new(),
            seed,
        }
    }

    /// Adds a route. Routes with the same prefix are the caller's error to reject
    /// (the configuration does, naming both).
    pub fn add(&mut self, prefix: Ipv4Net, hops: Vec<NextHop>) {
        assert!(!hops.is_empty(), "a route needs a next hop");
        let at = self
            .routes
            .partition_point(|r| r.prefix.prefix_len() >= prefix.prefix_len());
        self.routes.insert(at, Route { prefix, hops });
    }

    /// The next hop for `info`, or `None` if no route covers its destination.
    pub fn lookup(&self, info: &Ipv4Info) -> Option<NextHop> {
        let route = self.routes.iter().find(|r| r.prefix.contains(&info.dst))?;
        let n = route.hops.len();
        if n == 1 {
            return Some(route.hops[0]);
        }
        let pick = (flow_hash(info, self.seed) % n as u64) as usize;
        Some(route.hops[pick])
    }

    /// Every (port, neighbour) named by a route's `via`: the neighbours to resolve
    /// before traffic needs them.
    pub fn gateways(&self) -> impl Iterator<Item = (usize, Ipv4Addr)> + '_ {
        self.routes
            .iter()
            .flat_map(|r| r.hops.iter())
            .filter_map(|h| h.via.map(|v| (h.port, v)))
    }
}

/// A hash of the 5-tuple salted with `seed` (SplitMix64's finaliser over the packed
/// fields: cheap, and every input bit reaches every output bit).
pub fn flow_hash(info: &Ipv4Info, seed: u64) -> u64 {
    let (sport, dport) = info.ports.unwrap_or((0, 0));
    let addrs = (u64::from(u32::from(info.src)) << 32) | u64::from(u32::from(info.dst));
    let rest = (u64::from(sport) << 32) | (u64::from(dport) << 16) | u64::from(info.proto);
    mix(mix(addrs ^ seed) ^ rest)
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Class;

    fn info(dst: [u8; 4], sport: u16) -> Ipv4Info {
        Ipv4Info {
            src: Ipv4Addr::new(10, 77, 1, 1),
            dst: dst.into(),
            ttl: 64,
            proto: 17,
            tos: 0,
            ihl: 20,
            total_len: 100,
            ports: Some((sport, 7000)),
            class: Class::Other,
        }
    }

    fn hop(port: usize, via: [u8; 4]) -> NextHop {
        NextHop {
            port,
            via: Some(via.into()),
        }
    }

    #[test]
    fn longest_prefix_wins_whatever_the_order() {
        let mut t = RouteTable::new(1);
        t.add("10.77.0.0/16".parse().unwrap(), vec![hop(0, [1, 1, 1, 1])]);
        t.add("10.77.3.0/24".parse().unwrap(), vec![hop(1, [2, 2, 2, 2])]);
        t.add("0.0.0.0/0".parse().unwrap(), vec![hop(2, [3, 3, 3, 3])]);
        assert_eq!(t.lookup(&info([10, 77, 3, 1], 1)).unwrap().port, 1);
        assert_eq!(t.lookup(&info([10, 77, 4, 1], 1)).unwrap().port, 0);
        assert_eq!(t.lookup(&info([192, 168, 0, 1], 1)).unwrap().port, 2);
        let mut empty = RouteTable::new(1);
        assert_eq!(empty.lookup(&info([10, 77, 3, 1], 1)), None);
        empty.add(
            "10.0.0.0/8".parse().unwrap(),
            vec![NextHop { port: 4, via: None }],
        );
        let h = empty.lookup(&info([10, 77, 3, 1], 1)).unwrap();
        assert_eq!(
            h.neighbour(Ipv4Addr::new(10, 77, 3, 1)),
            Ipv4Addr::new(10, 77, 3, 1)
        );
    }

    #[test]
    fn a_flow_keeps_its_path_and_sprayed_ports_spread_evenly() {
        let mut t = RouteTable::new(42);
        t.add(
            "10.77.3.0/24".parse().unwrap(),
            vec![hop(0, [1, 1, 1, 1]), hop(1, [2, 2, 2, 2])],
        );
        let first = t.lookup(&info([10, 77, 3, 1], 5000)).unwrap();
        for _ in 0..10 {
            assert_eq!(t.lookup(&info([10, 77, 3, 1], 5000)).unwrap(), first);
        }
        // eqdsd sprays over consecutive source ports: each next hop gets about half.
        let on_0 = (0..1000u16)
            .filter(|p| t.lookup(&info([10, 77, 3, 1], 40000 + p)).unwrap().port == 0)
            .count();
        assert!((450..=550).contains(&on_0), "{on_0} of 1000 on port 0");
        // Another seed makes other choices (no polarisation between switches).
        let mut u = t.clone();
        u.seed = 43;
        let differ = (0..100u16)
            .filter(|p| {
                let i = info([10, 77, 3, 1], 40000 + p);
                t.lookup(&i) != u.lookup(&i)
            })
            .count();
        assert!(differ > 30, "{differ}");
    }
}
