//! Who the daemon tunnels to and accepts tunnels from.
//!
//! A peer is a remote daemon, named by the IPv4 address of its tunnel endpoint; its
//! [`PeerId`] (a dense index) is what the protocol core sees. Peers come from the
//! configuration one by one (`[[peer]]`) or are created on first use inside a
//! `[[peer_range]]`. The table answers the two questions of the fast path:
//!
//! - sending: which peer owns inner destination D? (the longest `allowed_ips` prefix
//!   among named peers, IPv4 or IPv6, else the IPv4 range that maps D to an endpoint);
//! - receiving: is a datagram from address A a peer's, and may that peer use inner
//!   source S? (anti-spoofing: anything else is dropped and counted).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddrV4};

use eqds_proto::sender::PeerId;
use ipnet::{IpNet, Ipv4Net};

use crate::config::{PeerConfig, PeerRange};

/// One remote daemon.
#[derive(Debug, Clone)]
pub struct Peer {
    /// Where its tunnel listens.
    pub endpoint: SocketAddrV4,
    /// Inner source addresses it may use, IPv4 and IPv6.
    pub allowed_ips: Vec<IpNet>,
}

/// The peer table.
#[derive(Debug)]
pub struct Peers {
    peers: Vec<Peer>,
    by_addr: HashMap<Ipv4Addr, PeerId>,
    /// Named peers' prefixes, longest first: (prefix, peer).
    named_routes: Vec<(IpNet, PeerId)>,
    ranges: Vec<PeerRange>,
    max_peers: usize,
}

/// Why a lookup found no peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerError {
    /// No named peer or range covers the address.
    Unknown,
    /// A range covers it but `max_peers` peers exist already.
    TableFull,
}

impl Peers {
    /// The table of the configured peers and ranges.
    pub fn new(named: &[PeerConfig], ranges: &[PeerRange], max_peers: u32) -> Self {
        let mut t = Self {
            peers: Vec::new(),
            by_addr: HashMap::new(),
            named_routes: Vec::new(),
            ranges: ranges.to_vec(),
            max_peers: (max_peers as usize).max(named.len()),
        };
        for p in named {
            let id = t.insert(Peer {
                endpoint: p.endpoint,
                allowed_ips: p.allowed_ips.clone(),
            });
            for net in &p.allowed_ips {
                t.named_routes.push((*net, id));
            }
        }
        t.named_routes
            .sort_by_key(|(net, _)| std::cmp::Reverse(net.prefix_len()));
        t
    }

    fn insert(&mut self, peer: Peer) -> PeerId {
        let id = self.peers.len() as PeerId;
        self.by_addr.insert(*peer.endpoint.ip(), id);
        self.peers.push(peer);
        id
    }

    /// The peer an inner packet for `dst` goes to.
    /// Prefixes of the other family never match; peer ranges are IPv4 only.
    pub fn route(&mut self, dst: IpAddr) -> Result<PeerId, PeerError> {
        if let Some(&(_, id)) = self.named_routes.iter().find(|(n, _)| n.contains(&dst)) {
            return Ok(id);
        }
        let IpAddr::V4(dst) = dst else {
            return Err(PeerError::Unknown);
        };
        let endpoint = self
            .ranges
            .iter()
            .find_map(|r| r.endpoint_for(dst))
            .ok_or(PeerError::Unknown)?;
        self.range_peer(*endpoint.ip())
    }

    /// The peer whose datagrams come from `addr`.
    pub fn accept(&mut self, addr: Ipv4Addr) -> Result<PeerId, PeerError> {
        match self.by_addr.get(&addr) {
            Some(&id) => Ok(id),
            None => self.range_peer(addr),
        }
    }

    /// The peer at endpoint address `addr` of a range, created if new.
    fn range_peer(&mut self, addr: Ipv4Addr) -> Result<PeerId, PeerError> {
        if let Some(&id) = self.by_addr.get(&addr) {
            return Ok(id);
        }
        let (range, inner) = self
            .ranges
            .iter()
            .find_map(|r| r.inner_for(addr).map(|i| (r, i)))
            .ok_or(PeerError::Unknown)?;
        if self.peers.len() >= self.max_peers {
            return Err(PeerError::TableFull);
        }
        let peer = Peer {
            endpoint: SocketAddrV4::new(addr, range.port),
            allowed_ips: vec![IpNet::V4(
                Ipv4Net::new(inner, 32).expect("/32 is a valid prefix"),
            )],
        };
        Ok(self.insert(peer))
    }

    /// Whether `peer` may send inner packets from `src` (an address of either family;
    /// prefixes of the other family never match).
    pub fn may_use(&self, peer: PeerId, src: IpAddr) -> bool {
        self.peers[peer as usize]
            .allowed_ips
            .iter()
            .any(|n| n.contains(&src))
    }

    /// The peer named `id`.
    pub fn get(&self, id: PeerId) -> &Peer {
        &self.peers[id as usize]
    }

    /// Every peer, by id.
    pub fn iter(&self) -> impl Iterator<Item = (PeerId, &Peer)> {
        self.peers.iter().enumerate().map(|(i, p)| (i as PeerId, p))
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!(
            t.accept("10.77.5.5".parse().unwrap()),
            Err(PeerError::TableFull)
        );
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
}
