//! The daemon without its I/O: inner packets and datagrams in, datagrams and inner
//! packets out, driven by the caller's clock.
//!
//! [`Engine`] joins the protocol core (one [`Host`] of `eqds-proto`: the sending
//! EQIFs and one receiving EQIF) to the peer table and the buffer pool. Packets from the TUN device
//! go through one sending EQIF and native payloads, when the native socket is on,
//! through a second, the paper's TCP-compatible and native classes side by side:
//! each is a sender of its own to the peer (its own tunnel, credit and epochs, told
//! apart by the header's sender id), and the two share the uplink by deficit round
//! robin (`interface.weight`, `native.weight`) under strict priority levels. The event loop
//! ([`crate::daemon`]) reads into pool buffers, hands them in, and drains
//! [`Engine::pop_datagram`] and [`Engine::pop_tun`]; tests drive two engines against
//! each other in memory with the same calls. Nothing in here blocks or allocates per
//! packet (queues grow to their high-water mark and stay there).
//!
//! Checks on the way in (each failure is a counter, see [`Counters`]):
//! - from the TUN device: a whole IPv4 or IPv6 packet, for a destination a peer owns,
//!   fitting the tunnel MTU, with room in that destination's send queue;
//! - from the network: a datagram from a known peer (or one of a peer range), with an
//!   EQDS header that decodes, and, when delivered, a whole inner packet of the IP
//!   version its header's `next_proto` names, whose source that peer may use. The source check happens at delivery rather than on arrival so
//!   that the credit the sender spent and the ACK it is owed are still accounted.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddrV4};

use eqds_proto::eqif::ReceivingEqif;
use eqds_proto::host::{Host, HostParams};
use eqds_proto::sender::{EnqueueError, PeerId};
use eqds_proto::time::Time;
use eqds_proto::tunnel::TxState;
use eqds_proto::uplink::Uplink;
use eqds_proto::wire::{self, ControlHeader, ControlKind, Header, NextProto, HEADER_LEN};

use crate::config::{Config, MAX_PEERS, TUNNEL_OVERHEAD};
use crate::counters::Counters;
use crate::native::{self, Kind, NativeHeader, Reject, NATIVE_HEADER_LEN};
use crate::peers::{PeerError, Peers};
use crate::pool::{BufId, Pool, INNER};
use crate::tx_pacer::TxPacer;
use crate::{ipv4, ipv6};

/// Native payloads held for the local application at most: beyond this it is not
/// reading, and what arrives for it is dropped (and counted) rather than holding
/// buffers the tunnels need.
pub const NATIVE_QUEUE_MAX: usize = 4096;

/// What became of a datagram read from the native socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeOutcome {
    /// The payload is in its destination's send queue.
    Queued,
    /// An application announced itself (HELLO): it receives from now on.
    Hello,
    /// Not taken: tell the application with this header (BUSY or REJECT).
    Refused(NativeHeader),
    /// Malformed and dropped; nobody to tell.
    Malformed,
}

/// Sender id (and uplink index) of the TUN's sending EQIF.
pub const TUN_EQIF: usize = 0;
/// Sender id (and uplink index) of the native interface's sending EQIF.
pub const NATIVE_EQIF: usize = 1;
// A peer table slot is the core's peer id, which has 24 bits.
const _: () = assert!(MAX_PEERS - 1 == eqds_proto::host::MAX_PEER);

/// Where a native datagram is read into a buffer: its 8-byte header just before
/// [`INNER`], so that the payload sits where a TUN packet would.
pub const NATIVE_AT: usize = INNER - NATIVE_HEADER_LEN;

/// The source and destination of `pkt` read as an inner packet of `proto`, if it is
/// a whole packet of that IP version.
fn inspect_inner(proto: NextProto, pkt: &[u8]) -> Option<(IpAddr, IpAddr)> {
    match proto {
        NextProto::Ipv4 => ipv4::inspect(pkt)
            .ok()
            .map(|s| (IpAddr::V4(s.src), IpAddr::V4(s.dst))),
        NextProto::Ipv6 => ipv6::inspect(pkt)
            .ok()
            .map(|s| (IpAddr::V6(s.src), IpAddr::V6(s.dst))),
        _ => None,
    }
}

/// What a packet read from the TUN device says it is, by its version nibble.
fn tun_proto(pkt: &[u8]) -> NextProto {
    match pkt.first().map(|b| b >> 4) {
        Some(6) => NextProto::Ipv6,
        _ => NextProto::Ipv4,
    }
}

/// One datagram to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram {
    /// Where to.
    pub dst: SocketAddrV4,
    /// The EQDS header.
    pub header: [u8; HEADER_LEN],
    /// The inner packet for DATA; `None` for RTS and control packets. The buffer stays
    /// the sender's until ACKed: the caller only reads it.
    pub payload: Option<BufId>,
}

/// The daemon's protocol state. See the module documentation.
#[derive(Debug)]
pub struct Engine {
    peers: Peers,
    pool: Pool,
    /// The protocol: the sending EQIFs (the TUN's, [`TUN_EQIF`], and with the native
    /// socket the native interface's, [`NATIVE_EQIF`], sharing the uplink by DRR) and
    /// the receiving EQIF. Peers are known by their table slot.
    host: Host<BufId>,
    /// When `host` next has timer work, as of the last pump.
    host_timeout: Option<Time>,
    counters: Counters,
    outbox: VecDeque<Datagram>,
    /// Scratch list of the control packets of one pump.
    control: Vec<(PeerId, ControlHeader)>,
    to_tun: VecDeque<BufId>,
    /// Delivered native payloads and the tunnel address of their sender.
    to_native: VecDeque<(BufId, Ipv4Addr)>,
    native_enabled: bool,
    inner_mtu: usize,
    /// Queue pure TCP ACKs ahead of the data waiting for the same peer.
    acks_first: bool,
    /// Bytes a control datagram takes on the link beyond its payload: outer IPv4 and
    /// UDP headers, link overhead.
    control_link_overhead: u32,
    /// Bytes sent per UDP source socket (path), recorded by the I/O loop.
    path_bytes: Vec<u64>,
    /// Paces DATA and RTS at `eqds.uplink_rate`, if set.
    pacer: Option<TxPacer>,
    /// Bytes a control datagram takes on the link, charged to the pacer.
    control_wire_len: u32,
    /// The pacer held back a packet some EQIF has ready: `poll_timeout` says when it
    /// may go.
    paced_back: bool,
    /// Each DATA and RTS datagram must leave through its header's path id's socket:
    /// per-path statistics or path avoidance are on, and both must describe the
    /// route a packet really took.
    sends_on_header_paths: bool,
}

impl Engine {
    /// An engine for `config`; `seed` varies path permutations and epochs between
    /// runs (the daemon seeds it from the clock).
    pub fn new(config: &Config, seed: u64) -> Self {
        let charged_mtu = config.charged_mtu();
        let overhead = TUNNEL_OVERHEAD + config.link_overhead;
        let mut eqifs = vec![config.tun_share];
        if config.native_socket.is_some() {
            eqifs.push(config.native_share);
        }
        let host = Host::new(
            &config.eqds,
            HostParams {
                mtu: charged_mtu,
                overhead,
                link_rate_bps: config.link_rate_bps,
                paths: config.paths,
                seed,
                eqifs,
                // A peer may run the native interface whether this daemon does or
                // not: both classes are accepted, each pulled by the share this
                // daemon gives its own.
                peer_eqifs: vec![config.tun_share, config.native_share],
                tunnel_windows: None,
                queues: Vec::new(),
            },
        );
        // Enough buffers for every peer's send queue, a window in flight and a full
        // reorder queue, for the peers expected at once; beyond that, drops are counted.
        let per_peer = (config.eqds.send_queue + 6 * config.eqds.window) as usize;
        let peers_expected = (config.peers.len().max(1) + 64).min(config.max_peers as usize);
        let cap = (per_peer * peers_expected).clamp(4096, 1 << 20);
        Self {
            peers: Peers::from_config(config),
            pool: Pool::new(config.mtu as usize + 64, cap),
            host,
            host_timeout: None,
            counters: Counters::default(),
            outbox: VecDeque::new(),
            control: Vec::new(),
            to_tun: VecDeque::new(),
            to_native: VecDeque::new(),
            native_enabled: config.native_socket.is_some(),
            inner_mtu: config.inner_mtu() as usize,
            acks_first: config.eqds.acks_first,
            control_link_overhead: 20 + 8 + config.link_overhead,
            path_bytes: vec![0; usize::from(config.paths)],
            sends_on_header_paths: config.eqds.path_stats || config.eqds.path_avoidance > 0,
            // The bucket holds what the link carries in two of the loop's timer
            // slacks (it may wake that late), and never less than four packets.
            pacer: config.uplink_rate_bps.map(|rate| {
                let slack_bytes = rate / 8 * 2 * config.timer_granularity_us / 1_000_000;
                let depth = slack_bytes.max(4 * u64::from(charged_mtu));
                TxPacer::new(rate, depth.min(u64::from(u32::MAX)) as u32)
            }),
            paced_back: false,
            control_wire_len: overhead,
        }
    }

    /// The buffer pool: the caller reads into buffers it takes from here.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The buffer pool, mutable.
    pub fn pool_mut(&mut self) -> &mut Pool {
        &mut self.pool
    }

    /// A free buffer for the caller to read into; counts a drop if none is left.
    pub fn alloc(&mut self) -> Option<BufId> {
        let b = self.pool.alloc();
        if b.is_none() {
            self.counters.drop_no_buffer += 1;
        }
        b
    }

    /// Counters so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Counters, for the I/O loop's own (send and write errors).
    pub fn counters_mut(&mut self) -> &mut Counters {
        &mut self.counters
    }

    /// The peer table.
    pub fn peers(&self) -> &Peers {
        &self.peers
    }

    /// The sending EQIFs: [`TUN_EQIF`], and [`NATIVE_EQIF`] with the native socket.
    pub fn uplink(&self) -> &Uplink<BufId> {
        self.host.uplink()
    }

    /// The receiving EQIF's peer id for the sending EQIF `sender_id` of the peer in
    /// table slot `slot`.
    pub fn receiving_peer(&self, slot: PeerId, sender_id: u16) -> PeerId {
        Host::<BufId>::rx_peer(slot, sender_id)
    }

    /// The receiving EQIF.
    pub fn receiver(&self) -> &ReceivingEqif<BufId> {
        self.host.receiver()
    }

    /// Bytes sent per UDP source socket.
    pub fn path_bytes(&self) -> &[u64] {
        &self.path_bytes
    }

    /// Whether each DATA and RTS datagram goes out through the socket of its
    /// header's path id (see the field), not with the rest of its flush.
    pub fn sends_on_header_paths(&self) -> bool {
        self.sends_on_header_paths
    }

    /// The I/O loop sent `bytes` through socket `path`.
    pub fn record_path_bytes(&mut self, path: usize, bytes: u64) {
        if let Some(b) = self.path_bytes.get_mut(path) {
            *b += bytes;
        }
    }

    /// An inner packet of `len` bytes, read from the TUN device into buffer `id` at
    /// [`INNER`]. The engine owns the buffer from here on.
    pub fn handle_tun(&mut self, now: Time, id: BufId, len: usize) {
        self.counters.tun_rx_packets += 1;
        self.pool.set_len(id, len);
        let proto = tun_proto(self.pool.inner(id));
        self.pool.set_proto(id, proto);
        let Some((_, dst)) = inspect_inner(proto, self.pool.inner(id)) else {
            self.counters.drop_tun_malformed += 1;
            self.pool.free(id);
            return;
        };
        let peer = match self.lookup(|p| p.route(dst)) {
            Ok(p) => p,
            Err(_) => {
                self.counters.drop_no_route += 1;
                self.pool.free(id);
                return;
            }
        };
        let v6 = proto == NextProto::Ipv6;
        let pkt = self.pool.inner(id);
        let ect = if v6 {
            ipv6::is_ect(pkt)
        } else {
            ipv4::is_ect(pkt)
        };
        if ect && self.host.mark_ce(TUN_EQIF, peer) {
            let pkt = self.pool.inner_mut(id);
            if v6 {
                ipv6::mark_ce(pkt);
            } else {
                ipv4::mark_ce(pkt);
            }
            self.counters.ecn_marked += 1;
        }
        let pure_ack = self.acks_first && {
            let pkt = self.pool.inner(id);
            if v6 {
                ipv6::is_pure_tcp_ack(pkt)
            } else {
                ipv4::is_pure_tcp_ack(pkt)
            }
        };
        match self
            .host
            .handle_write(now, TUN_EQIF, peer, len as u32, id, pure_ack)
        {
            Ok(()) => {}
            Err(EnqueueError::Backpressure(id)) => {
                self.counters.drop_send_queue_full += 1;
                self.pool.free(id);
            }
            Err(EnqueueError::TooLarge(id)) => {
                self.counters.drop_too_large += 1;
                self.pool.free(id);
            }
        }
        self.pump(now);
    }

    /// A datagram of `len` bytes read from the native socket into buffer `id` at
    /// [`NATIVE_AT`]: an 8-byte native header, then the payload, which so lands at
    /// [`INNER`] like a TUN packet. The engine owns the buffer from here on.
    pub fn handle_native(&mut self, now: Time, id: BufId, len: usize) -> NativeOutcome {
        self.counters.native_rx_datagrams += 1;
        let raw = &self.pool.raw(id)[NATIVE_AT..];
        let decoded = native::decode(&raw[..len.min(raw.len())]).map(|(h, p)| (h, p.len()));
        let (header, payload_len) = match decoded {
            Ok((h, n)) if matches!(h.kind, Kind::Data | Kind::Hello) => (h, n),
            _ => {
                self.counters.drop_native_malformed += 1;
                self.pool.free(id);
                return NativeOutcome::Malformed;
            }
        };
        if header.kind == Kind::Hello {
            self.pool.free(id);
            return NativeOutcome::Hello;
        }
        let refuse = |kind, reason| {
            NativeOutcome::Refused(NativeHeader {
                kind,
                peer: header.peer,
                reason,
            })
        };
        if payload_len > self.inner_mtu {
            self.counters.drop_native_too_large += 1;
            self.pool.free(id);
            return refuse(Kind::Reject, Some(Reject::TooLarge));
        }
        let peer = match self.lookup(|p| p.accept(header.peer)) {
            Ok(p) => p,
            Err(_) => {
                self.counters.drop_native_unknown_peer += 1;
                self.pool.free(id);
                return refuse(Kind::Reject, Some(Reject::UnknownPeer));
            }
        };
        self.pool.set_len(id, payload_len);
        self.pool.set_proto(id, NextProto::Native);
        // An engine without the native socket takes no native datagrams; tests may
        // still write some, which then share the TUN's EQIF.
        let eqif = NATIVE_EQIF.min(self.host.uplink().eqif_count() - 1);
        let written = self
            .host
            .handle_write(now, eqif, peer, payload_len as u32, id, false);
        let outcome = match written {
            Ok(()) => {
                self.counters.native_enqueued += 1;
                NativeOutcome::Queued
            }
            Err(EnqueueError::Backpressure(id)) => {
                self.counters.drop_native_send_queue_full += 1;
                self.pool.free(id);
                refuse(Kind::Busy, None)
            }
            Err(EnqueueError::TooLarge(id)) => {
                self.counters.drop_native_too_large += 1;
                self.pool.free(id);
                refuse(Kind::Reject, Some(Reject::TooLarge))
            }
        };
        self.pump(now);
        outcome
    }

    /// A datagram of `len` bytes from `from`, read into buffer `id` from offset 0
    /// (`truncated` if it did not fit). The engine owns the buffer from here on.
    pub fn handle_datagram(
        &mut self,
        now: Time,
        from: SocketAddrV4,
        id: BufId,
        len: usize,
        truncated: bool,
    ) {
        self.receive_datagram(now, from, id, len, truncated);
        self.pump(now);
    }

    /// [`Engine::handle_datagram`] without releasing what it made sendable: for a batch
    /// of datagrams, followed by one [`Engine::pump`]. PULLs owed across the batch
    /// then leave as one control packet per peer rather than one per datagram.
    pub fn receive_datagram(
        &mut self,
        now: Time,
        from: SocketAddrV4,
        id: BufId,
        len: usize,
        truncated: bool,
    ) {
        self.counters.udp_rx_datagrams += 1;
        let peer = match self.lookup(|p| p.accept(*from.ip())) {
            Ok(p) => p,
            Err(e) => {
                match e {
                    PeerError::Unknown => self.counters.drop_unknown_peer += 1,
                    PeerError::TableFull => self.counters.drop_peer_table_full += 1,
                }
                self.pool.free(id);
                return;
            }
        };
        if truncated || len > self.pool.buffer_size() {
            self.counters.drop_oversized += 1;
            self.pool.free(id);
            return;
        }
        let header = match wire::decode(&self.pool.raw(id)[..len]) {
            Ok((h, _)) => h,
            Err(_) => {
                self.counters.drop_malformed += 1;
                self.pool.free(id);
                return;
            }
        };
        match header {
            Header::Data(h) => {
                let inner_len = len - HEADER_LEN;
                self.pool.set_len(id, inner_len);
                self.pool.set_proto(id, h.next_proto);
                match self.host.handle_data(now, peer, &h, id, inner_len) {
                    Ok(()) => self.drain_receiver(now),
                    Err(id) => {
                        self.counters.drop_unknown_eqif += 1;
                        self.pool.free(id);
                    }
                }
            }
            Header::Control(h) => {
                self.pool.free(id);
                // `len` is at most a buffer, far below u32::MAX.
                let wire_len = len as u32 + self.control_link_overhead;
                if self.peers.needs_confirmation(peer) {
                    self.control_from_unconfirmed(now, peer, &h, wire_len);
                } else {
                    self.host.handle_control(now, peer, &h, wire_len);
                }
                while let Some((_, acked)) = self.host.poll_acked() {
                    self.pool.free(acked.payload);
                }
            }
        }
    }

    /// A peer table lookup that may create a peer: if it took an evicted peer's
    /// slot, everything kept under that slot is reset first.
    fn lookup(
        &mut self,
        find: impl FnOnce(&mut Peers) -> Result<PeerId, PeerError>,
    ) -> Result<PeerId, PeerError> {
        let found = find(&mut self.peers);
        if let Some(e) = self.peers.take_evicted() {
            self.forget_slot(e.id, e.endpoint);
        }
        found
    }

    /// Resets every per-peer state kept under slot `slot`, which an evicted peer at
    /// `endpoint` held, so that the new peer given the slot inherits nothing: each
    /// sending EQIF's tunnel (queues, credit, epoch, path statistics), the receiving
    /// tunnels, reorder queues and credit state of the peer's sending EQIFs. What
    /// they held is dropped and counted. Nothing is sent to the evicted peer: its
    /// next packet finds no state here, as after a restart of this daemon.
    fn forget_slot(&mut self, slot: PeerId, endpoint: SocketAddrV4) {
        self.counters.peers_evicted += 1;
        let dropped = self.host.forget_peer(slot);
        if !dropped.is_empty() {
            // Datagrams still waiting to be sent read buffers among these.
            self.outbox
                .retain(|d| d.dst != endpoint || d.payload.is_none());
        }
        self.counters.drop_evicted += dropped.len() as u64;
        for b in dropped {
            self.pool.free(b);
        }
    }

    /// A control packet for our sending tunnel to a range peer not yet confirmed:
    /// handled as any other, and watched. The peer is confirmed once a tunnel of
    /// ours to it reaches ESTABLISHED in an epoch we chose; a SYN-ACK that moves a
    /// tunnel to another epoch marks it steered, and it confirms nothing since
    /// (`peers.rs` explains why).
    fn control_from_unconfirmed(
        &mut self,
        now: Time,
        peer: PeerId,
        h: &ControlHeader,
        wire_len: u32,
    ) {
        let eqif = self.host.uplink().find(h.sender_id);
        let state = |host: &Host<BufId>| eqif.and_then(|i| host.sender(i).tunnel_state(peer));
        let before = state(&self.host);
        self.host.handle_control(now, peer, h, wire_len);
        let (Some(eqif), Some(after)) = (eqif, state(&self.host)) else {
            return;
        };
        let epoch = |s: Option<TxState>| match s {
            Some(TxState::SynSent { epoch } | TxState::Established { epoch }) => Some(epoch),
            _ => None,
        };
        if h.syn && epoch(Some(after)).is_some() && epoch(Some(after)) != epoch(before) {
            self.peers.steered(peer, eqif);
        }
        if matches!(after, TxState::Established { .. }) && !self.peers.is_steered(peer, eqif) {
            self.peers.confirm(peer);
        }
    }

    /// When [`Engine::handle_timeout`] next has work.
    pub fn poll_timeout(&self) -> Option<Time> {
        let paced = self
            .pacer
            .as_ref()
            .filter(|_| self.paced_back)
            .map(TxPacer::ready_at);
        [self.host_timeout, paced].into_iter().flatten().min()
    }

    /// Runs the timers due at `now`: PULL pacing, deferred ACKs, retransmissions,
    /// credit-loss RTSs and reorder hole timeouts.
    pub fn handle_timeout(&mut self, now: Time) {
        self.host.handle_timeout(now);
        self.drain_receiver(now);
        self.pump(now);
    }

    /// The next datagram to send.
    pub fn pop_datagram(&mut self) -> Option<Datagram> {
        self.outbox.pop_front()
    }

    /// Datagrams waiting to be sent.
    pub fn datagrams_pending(&self) -> usize {
        self.outbox.len()
    }

    /// The next inner packet for the TUN device: write `pool().inner(id)`, then give
    /// the buffer back with [`Engine::tun_written`].
    pub fn pop_tun(&mut self) -> Option<BufId> {
        self.to_tun.pop_front()
    }

    /// A packet from [`Engine::pop_tun`] was written (or failed to be: `ok` false).
    pub fn tun_written(&mut self, id: BufId, ok: bool) {
        if ok {
            self.counters.tun_tx_packets += 1;
        } else {
            self.counters.drop_tun_write_error += 1;
        }
        self.pool.free(id);
    }

    /// The oldest native payload for the local application and its sender's tunnel
    /// address: write a native DATA header at [`NATIVE_AT`] (see
    /// [`Engine::stamp_native`]) and send `pool().raw(id)[NATIVE_AT..INNER + len]`,
    /// then report with [`Engine::native_written`]. Left in place until then, so a
    /// write that would block is tried again later.
    pub fn front_native(&self) -> Option<(BufId, Ipv4Addr)> {
        self.to_native.front().copied()
    }

    /// Writes the native DATA header in front of payload `id`; returns the whole
    /// datagram to send.
    pub fn stamp_native(&mut self, id: BufId, src: Ipv4Addr) -> &[u8] {
        let len = self.pool.inner(id).len();
        let raw = self.pool.raw_mut(id);
        raw[NATIVE_AT..INNER].copy_from_slice(&NativeHeader::data(src).encode());
        &raw[NATIVE_AT..INNER + len]
    }

    /// The payload from [`Engine::front_native`] was written (`Some(true)`), failed
    /// (`Some(false)`), or there is no application to write it to (`None`).
    pub fn native_written(&mut self, outcome: Option<bool>) {
        let Some((id, _)) = self.to_native.pop_front() else {
            return;
        };
        match outcome {
            Some(true) => self.counters.native_delivered += 1,
            Some(false) => self.counters.drop_native_app_slow += 1,
            None => self.counters.drop_native_no_app += 1,
        }
        self.pool.free(id);
    }

    /// Native payloads waiting for the application.
    pub fn native_pending(&self) -> usize {
        self.to_native.len()
    }

    /// Tears every tunnel down for a clean shutdown: each receiving tunnel answers
    /// with an RST, so its sender starts a new epoch at once instead of waiting for a
    /// timeout, and every buffer held for or from a peer is freed. Then flush the
    /// outbox (the RSTs) before exiting.
    pub fn close_all(&mut self, now: Time) {
        let ids: Vec<PeerId> = self.peers.iter().map(|(id, _)| id).collect();
        for peer in ids {
            let (unsent, lost) = self.host.close_peer(peer);
            self.counters.drop_lost_on_restart += lost.len() as u64;
            for b in unsent.into_iter().chain(lost) {
                self.pool.free(b);
            }
        }
        self.pump(now);
    }

    /// Hands delivered packets to the TUN queue (after the anti-spoofing check) and
    /// frees what the receiving EQIF discarded.
    fn drain_receiver(&mut self, now: Time) {
        while let Some(d) = self.host.poll_deliver(now) {
            let id = d.payload;
            if self.pool.proto(id) == NextProto::Native {
                if !self.native_enabled {
                    self.counters.drop_native_no_app += 1;
                    self.pool.free(id);
                } else if self.to_native.len() >= NATIVE_QUEUE_MAX {
                    self.counters.drop_native_app_slow += 1;
                    self.pool.free(id);
                } else {
                    let src = *self.peers.get(d.src).endpoint.ip();
                    self.to_native.push_back((id, src));
                }
                continue;
            }
            // The packet must be what its DATA header says it is: an IPv4 header
            // behind `next_proto` IPv6 (or the reverse) is malformed, not routed.
            match inspect_inner(self.pool.proto(id), self.pool.inner(id)) {
                Some((src, _)) if self.peers.may_use(d.src, src) => self.to_tun.push_back(id),
                Some(_) => {
                    self.counters.drop_spoofed += 1;
                    self.pool.free(id);
                }
                None => {
                    self.counters.drop_inner_malformed += 1;
                    self.pool.free(id);
                }
            }
        }
        while let Some(id) = self.host.poll_discarded() {
            self.pool.free(id);
        }
    }

    /// Moves what the EQIFs release into the outbox: control packets first (they
    /// carry credit), then DATA and RTS as credit allows. The `handle_*` calls do this
    /// themselves; after `receive_*` calls the caller does.
    pub fn pump(&mut self, now: Time) {
        // Every control packet carries the receiver's cumulative pull number, so a
        // PULL followed in the same batch by any control packet to the same peer says
        // nothing the later one does not: it is left out. A late timer that releases
        // several PULLs at once then costs one datagram, not several.
        self.control.clear();
        while let Some(c) = self.host.poll_control(now) {
            self.control.push(c);
        }
        for i in 0..self.control.len() {
            let (peer, hdr) = self.control[i];
            let superseded = hdr.kind == ControlKind::Pull
                && self.control[i + 1..].iter().any(|&(p, _)| p == peer);
            if superseded {
                self.counters.pulls_merged += 1;
                continue;
            }
            let mut header = [0u8; HEADER_LEN];
            Header::Control(hdr)
                .encode(&mut header)
                .expect("a control header the core built encodes");
            self.counters.control_sent += 1;
            if let Some(p) = &mut self.pacer {
                // Control goes first and is never held, but it takes link time the
                // data after it must leave.
                p.spend(self.control_wire_len);
            }
            self.push(peer, header, None);
        }
        if let Some(p) = &mut self.pacer {
            p.refill(now);
        }
        self.paced_back = false;
        loop {
            if self.pacer.as_ref().is_some_and(|p| !p.ready()) {
                self.paced_back = self.host.has_transmit();
                break;
            }
            let Some((_, t)) = self.host.poll_transmit(now) else {
                break;
            };
            if let Some(p) = &mut self.pacer {
                p.spend(t.wire_len);
            }
            let mut header = [0u8; HEADER_LEN];
            let mut data = t.header;
            if let Some(b) = t.payload {
                // One tunnel carries IP packets and native payloads alike; each DATA
                // header names what its own payload is.
                data.next_proto = self.pool.proto(b);
            }
            Header::Data(data)
                .encode(&mut header)
                .expect("a data header the core built encodes");
            match t.payload {
                Some(_) => self.counters.data_sent += 1,
                None => self.counters.rts_sent += 1,
            }
            self.push(t.dst, header, t.payload);
        }
        self.host_timeout = self.host.poll_timeout(now);
    }

    fn push(&mut self, peer: PeerId, header: [u8; HEADER_LEN], payload: Option<BufId>) {
        debug_assert!(
            peer < MAX_PEERS,
            "a peer slot, not a receiving EQIF's peer id"
        );
        self.outbox.push_back(Datagram {
            dst: self.peers.get(peer).endpoint,
            header,
            payload,
        });
    }
}
