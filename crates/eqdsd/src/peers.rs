//! Who the daemon tunnels to and accepts tunnels from.
//!
//! A peer is a remote daemon, named by the IPv4 address of its tunnel endpoint; its
//! [`PeerId`] (a dense index, the peer's *slot*) is what the protocol core sees. Peers
//! come from the configuration one by one (`[[peer]]`) or are created on first use
//! inside a `[[peer_range]]`. The table answers the two questions of the fast path:
//!
//! - sending: which peer owns inner destination D? (the longest `allowed_ips` prefix
//!   among named peers, IPv4 or IPv6, else the IPv4 range that maps D to an endpoint);
//! - receiving: is a datagram from address A a peer's, and may that peer use inner
//!   source S? (anti-spoofing: anything else is dropped and counted).
//!
//! No peer owns this host's own addresses: a range that contains the daemon's own
//! tunnel address (the usual case: one file for a whole rack) creates no peer there,
//! nor one owning the interface's own inner address, and a range peer whose inner
//! address a named peer owns is not created either (it could send from an address
//! routed to someone else).
//!
//! # Eviction
//!
//! The table holds at most `eqds.max_peers` peers. A datagram from any address of a
//! range creates a peer, so without eviction one packet from each of `max_peers`
//! addresses (spoofed or not) would fill the table and lock every later peer out, in
//! both directions, until a restart. So each range peer has a standing:
//!
//! - **unconfirmed** from creation, whether by a datagram from it or by local traffic
//!   routed to it;
//! - **confirmed** once it proved that it receives at its address: a sending tunnel of
//!   ours to it reached ESTABLISHED in an epoch we chose (see below).
//!
//! Named peers are never evicted. When a new range peer finds the table full, the
//! slot of an unconfirmed peer is taken, chosen by the CLOCK algorithm (second
//! chance): the unconfirmed slots form a ring swept by a hand; a slot heard from (or
//! routed to) since the hand last passed is spared once and marked, an unmarked one is
//! taken. A new peer starts unmarked, so an address that sent one packet, as a
//! spoofed source does, goes before one that keeps talking. Confirmed peers are not
//! evicted: when every range slot holds one, a new range peer is refused
//! (`peer_table_full`), as before. The caller must reset every per-peer state the
//! protocol core and the engine keep under the taken slot before using it for the new
//! peer ([`Peers::take_evicted`]), or the newcomer inherits the old peer's tunnels,
//! credit and counters.
//!
//! Slots are reused rather than numbered afresh: ids then stay below `max_peers`, and
//! so does every per-peer structure in the core (tunnels, credit state, path
//! statistics), however many addresses come and go. Fresh ids would need those
//! structures to shrink as well, and would run out of the 24 bits a receiving EQIF's
//! peer id gives the slot after 16 million evictions.
//!
//! # What confirmation proves, and against whom
//!
//! The tunnel has no authentication; the underlay's source addresses are trusted
//! (`docs/eqdsd.md`). Confirmation only has to show that a peer receives at its
//! address, which an attacker that forges source addresses but does not see the
//! traffic to them (off path) cannot fake:
//!
//! - Anything a peer *sends* proves nothing. A receiving tunnel established by a SYN
//!   and confirmed by later SYN-less data proves nothing either: the sender chooses
//!   the epoch and so knows which sequence numbers will be accepted, and PULL numbers
//!   count from zero. An off-path attacker can establish a receiving tunnel, have
//!   inner packets delivered (with the source the range maps its address to) and be
//!   granted credit, without ever seeing a reply.
//! - Our sending tunnel reaches ESTABLISHED only on a SYN-ACK (or SYN-NACK) naming
//!   its epoch, 22 bits drawn from the sender's generator when the tunnel starts, and
//!   sent only to the peer's address. An off-path attacker guesses it with
//!   probability 2^-22 per forged packet.
//! - But Appendix A's self-synchronisation lets the receiver *choose* the epoch: a
//!   SYN-ACK naming a greater epoch moves the tunnel to the one after it. A forged
//!   SYN-ACK with a random epoch does so half of the time, and a second one naming
//!   the epoch it chose then establishes the tunnel. So a tunnel whose epoch a
//!   SYN-ACK moved is *steered*, and its ESTABLISHED state proves nothing; only one
//!   established in an epoch we drew (or derived from ours: the epoch after an RST or
//!   repeated timeouts) confirms the peer. An attacker can also have us open a
//!   tunnel to a spoofed address at will (a ping delivered from it is answered), so
//!   this matters.
//!
//! What remains possible:
//!
//! - An attacker on the path to an address of a range (one that sees our packets to
//!   it) can confirm that address, as the host there could: the range's
//!   configuration lets any host at its addresses be a peer. Such an attacker can
//!   fill the range slots with confirmed peers and lock new range peers out, not
//!   named peers nor range peers confirmed before.
//! - Off path, an attacker can keep a new range peer from being confirmed only by
//!   evicting it first: between two packets of that peer it must send from about one
//!   to two ring lengths (the unconfirmed slots) of fresh addresses. Until evicted
//!   the peer works normally; once evicted, its state is gone as after a restart of
//!   this daemon, and its next packet makes it a peer again.
//! - A peer whose receiver held an epoch of an older tunnel of ours (we forgot the
//!   tunnel, it did not) is steered half of the time on reconnecting, and stays
//!   unconfirmed for as long as it holds its slot: the steered mark is cleared
//!   only by eviction, since even an idle re-open continues from the steered epoch.
//!   It works, and is evicted only when idle across a sweep of the hand (under an
//!   address-spraying flood, each time it goes idle).
//! - Epochs come from a fast generator seeded from the clock, not a cryptographic
//!   one: an attacker that learns the seed could predict them.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddrV4};

use eqds_proto::sender::PeerId;
use ipnet::{IpNet, Ipv4Net};

use crate::config::{Config, PeerConfig, PeerRange};

/// One remote daemon.
#[derive(Debug, Clone)]
pub struct Peer {
    /// Where its tunnel listens.
    pub endpoint: SocketAddrV4,
    /// Inner source addresses it may use, IPv4 and IPv6.
    pub allowed_ips: Vec<IpNet>,
}

/// How a peer came to be in the table, and whether it may be evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// A `[[peer]]`: never evicted.
    Named,
    /// From a range, and proved that it receives at its address: not evicted.
    Confirmed,
    /// From a range, not yet confirmed: its slot may go to a new range peer.
    Unconfirmed,
}

/// A peer whose slot went to another: reset everything kept under `id` before using
/// it for the new peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    /// The slot, now the new peer's.
    pub id: PeerId,
    /// The evicted peer's tunnel address.
    pub endpoint: SocketAddrV4,
}

/// One slot of the table.
#[derive(Debug)]
struct Slot {
    peer: Peer,
    standing: Standing,
    /// Unconfirmed: heard from or routed to since the eviction hand last passed.
    referenced: bool,
    /// Unconfirmed: its position in the eviction ring.
    ring_pos: usize,
    /// Sending EQIFs (a bit per sender id) whose tunnel to this peer had its epoch
    /// chosen by a SYN-ACK: their ESTABLISHED state does not confirm it.
    steered: u8,
}

/// The peer table.
#[derive(Debug)]
pub struct Peers {
    slots: Vec<Slot>,
    /// Keyed by addresses an attacker may choose: the default SipHash keeps the
    /// lookups constant-time.
    by_addr: HashMap<Ipv4Addr, PeerId>,
    /// Named peers' prefixes, longest first: (prefix, peer).
    named_routes: Vec<(IpNet, PeerId)>,
    ranges: Vec<PeerRange>,
    max_peers: usize,
    /// The unconfirmed peers' slots, swept by `hand` (CLOCK).
    ring: Vec<PeerId>,
    hand: usize,
    /// The eviction the last lookup made, for [`Peers::take_evicted`].
    evicted: Option<Evicted>,
    /// This daemon's own tunnel address, never a peer's.
    own_endpoint: Option<Ipv4Addr>,
    /// This daemon's own inner IPv4 address, owned by no range peer.
    own_inner: Option<Ipv4Addr>,
}

/// Why a lookup found no peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerError {
    /// No named peer or range covers the address.
    Unknown,
    /// A range covers it but every slot holds a named or confirmed peer.
    TableFull,
}

impl Peers {
    /// The table of the configured peers and ranges.
    pub fn new(named: &[PeerConfig], ranges: &[PeerRange], max_peers: u32) -> Self {
        let mut t = Self {
            slots: Vec::new(),
            by_addr: HashMap::new(),
            named_routes: Vec::new(),
            ranges: ranges.to_vec(),
            max_peers: (max_peers as usize).max(named.len()),
            ring: Vec::new(),
            hand: 0,
            evicted: None,
            own_endpoint: None,
            own_inner: None,
        };
        for p in named {
            let id = t.slots.len() as PeerId;
            t.by_addr.insert(*p.endpoint.ip(), id);
            t.slots.push(Slot {
                peer: Peer {
                    endpoint: p.endpoint,
                    allowed_ips: p.allowed_ips.clone(),
                },
                standing: Standing::Named,
                referenced: false,
                ring_pos: 0,
                steered: 0,
            });
            for net in &p.allowed_ips {
                t.named_routes.push((*net, id));
            }
        }
        t.named_routes
            .sort_by_key(|(net, _)| std::cmp::Reverse(net.prefix_len()));
        t
    }

    /// The table for `config`, which knows this daemon's own addresses.
    pub fn from_config(config: &Config) -> Self {
        let listen = *config.listen.ip();
        Self::new(&config.peers, &config.peer_ranges, config.max_peers).with_own_addresses(
            (!listen.is_unspecified()).then_some(listen),
            config.address.addr(),
        )
    }

    /// Names this daemon's own tunnel address (if it listens on one) and inner IPv4
    /// address: no range peer is created at the one, nor owning the other.
    pub fn with_own_addresses(mut self, endpoint: Option<Ipv4Addr>, inner: Ipv4Addr) -> Self {
        self.own_endpoint = endpoint;
        self.own_inner = Some(inner);
        self
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
        self.range_peer(addr)
    }

    /// The peer at `addr`: a named one, or one of a range, created if new.
    fn range_peer(&mut self, addr: Ipv4Addr) -> Result<PeerId, PeerError> {
        debug_assert!(
            self.evicted.is_none(),
            "the caller must take an eviction before the next lookup"
        );
        if let Some(&id) = self.by_addr.get(&addr) {
            let slot = &mut self.slots[id as usize];
            if slot.standing == Standing::Unconfirmed {
                slot.referenced = true;
            }
            return Ok(id);
        }
        if self.own_endpoint == Some(addr) {
            return Err(PeerError::Unknown);
        }
        let (range, inner) = self
            .ranges
            .iter()
            .find_map(|r| r.inner_for(addr).map(|i| (r, i)))
            .ok_or(PeerError::Unknown)?;
        let inner_ip = IpAddr::V4(inner);
        if self.own_inner == Some(inner)
            || self.named_routes.iter().any(|(n, _)| n.contains(&inner_ip))
        {
            return Err(PeerError::Unknown);
        }
        let peer = Peer {
            endpoint: SocketAddrV4::new(addr, range.port),
            allowed_ips: vec![IpNet::V4(
                Ipv4Net::new(inner, 32).expect("/32 is a valid prefix"),
            )],
        };
        if self.slots.len() < self.max_peers {
            let id = self.slots.len() as PeerId;
            self.slots.push(Slot {
                peer,
                standing: Standing::Unconfirmed,
                referenced: false,
                ring_pos: self.ring.len(),
                steered: 0,
            });
            self.ring.push(id);
            self.by_addr.insert(addr, id);
            return Ok(id);
        }
        let id = self.victim().ok_or(PeerError::TableFull)?;
        let slot = &mut self.slots[id as usize];
        let old = std::mem::replace(&mut slot.peer, peer);
        // It keeps the slot's place in the ring, behind the hand: the last one there
        // the hand reaches.
        slot.referenced = false;
        slot.steered = 0;
        self.by_addr.remove(old.endpoint.ip());
        self.by_addr.insert(addr, id);
        self.evicted = Some(Evicted {
            id,
            endpoint: old.endpoint,
        });
        Ok(id)
    }

    /// The unconfirmed slot the CLOCK hand stops at: the first one not referenced
    /// since the hand last passed, clearing the marks it passes. At most two sweeps.
    fn victim(&mut self) -> Option<PeerId> {
        if self.ring.is_empty() {
            return None;
        }
        loop {
            if self.hand >= self.ring.len() {
                self.hand = 0;
            }
            let id = self.ring[self.hand];
            self.hand += 1;
            let slot = &mut self.slots[id as usize];
            if !std::mem::take(&mut slot.referenced) {
                return Some(id);
            }
        }
    }

    /// The eviction the last [`Peers::route`] or [`Peers::accept`] made to create its
    /// peer, if any: the slot it returned held another peer, whose state the caller
    /// must reset first. Take it after every lookup that may create a peer.
    pub fn take_evicted(&mut self) -> Option<Evicted> {
        self.evicted.take()
    }

    /// How `peer` stands (see the module documentation).
    pub fn standing(&self, peer: PeerId) -> Standing {
        self.slots[peer as usize].standing
    }

    /// Whether `peer` is a range peer not yet confirmed: the caller watches its
    /// sending tunnels ([`Peers::steered`], [`Peers::confirm`]).
    pub fn needs_confirmation(&self, peer: PeerId) -> bool {
        self.standing(peer) == Standing::Unconfirmed
    }

    /// Marks the tunnel of sending EQIF `eqif` to `peer` as steered: a SYN-ACK chose
    /// its epoch, which an off-path attacker may therefore know. Its ESTABLISHED
    /// state no longer confirms the peer.
    pub fn steered(&mut self, peer: PeerId, eqif: usize) {
        self.slots[peer as usize].steered |= 1 << eqif.min(7);
    }

    /// Whether [`Peers::steered`] marked that tunnel.
    pub fn is_steered(&self, peer: PeerId, eqif: usize) -> bool {
        self.slots[peer as usize].steered & (1 << eqif.min(7)) != 0
    }

    /// `peer` proved it receives at its address: it is no longer evicted. No effect
    /// on a named or confirmed peer.
    pub fn confirm(&mut self, peer: PeerId) {
        let slot = &mut self.slots[peer as usize];
        if slot.standing != Standing::Unconfirmed {
            return;
        }
        slot.standing = Standing::Confirmed;
        let pos = slot.ring_pos;
        self.ring.swap_remove(pos);
        if let Some(&moved) = self.ring.get(pos) {
            self.slots[moved as usize].ring_pos = pos;
        }
    }

    /// Whether `peer` may send inner packets from `src` (an address of either family;
    /// prefixes of the other family never match).
    pub fn may_use(&self, peer: PeerId, src: IpAddr) -> bool {
        self.slots[peer as usize]
            .peer
            .allowed_ips
            .iter()
            .any(|n| n.contains(&src))
    }

    /// The peer named `id`.
    pub fn get(&self, id: PeerId) -> &Peer {
        &self.slots[id as usize].peer
    }

    /// Every peer, by id.
    pub fn iter(&self) -> impl Iterator<Item = (PeerId, &Peer)> {
        self.slots
            .iter()
            .enumerate()
            .map(|(i, s)| (i as PeerId, &s.peer))
    }

    /// Peers in the table.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the table is empty (no named peer, no range peer yet).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

#[cfg(test)]
mod tests;
