//! One host's EQDS: the entry point both front ends drive.
//!
//! A [`Host`] owns everything EQDS keeps on one machine: its sending EQIFs and the
//! uplink scheduler between them ([`Uplink`]), and its receiving EQIF with the credit
//! scheduler, tunnel state machines and reorder queues ([`ReceivingEqif`]). Like
//! quinn-proto's `Endpoint`, it does no I/O and reads no clock: the caller feeds in
//! what arrives and the time, then drains what is to be done.
//!
//! ```text
//!   writes ──handle_write──▶ ┌────────────────────────────┐ ──poll_transmit──▶ DATA, RTS
//!                            │ Host                       │ ──poll_control───▶ ACK, NACK,
//!   DATA, RTS ─handle_data─▶ │  Uplink (sending EQIFs)    │                    PULL, RST
//!   control ─handle_control▶ │  ReceivingEqif (credit,    │ ──poll_deliver───▶ to the host
//!   returned ─handle_returned│   tunnels, reorder queues) │ ──poll_acked─────▶ buffers to
//!   time ──handle_timeout──▶ └────────────────────────────┘ ──poll_discarded─▶   free
//!                                          └──poll_timeout──▶ when to call again
//! ```
//!
//! What it works out so that callers do not:
//! - **Peer ids.** Callers name a remote host by a [`PeerId`] below 2^24 (the
//!   simulator's host number, the daemon's peer table slot). Each sending EQIF of a
//!   peer is a sender of its own to the receiving EQIF (its own tunnel, credit and
//!   epochs), so the host keys receiving state by the peer and the header's sender id
//!   together ([`Host::rx_peer`]); everything handed out names the peer again.
//! - **Configurations.** The sender, receiver, tunnel and reorder configurations of
//!   the core, from one [`EqdsConfig`] and the host's facts ([`HostParams`]).
//! - **Seeds.** EQIF `i` is seeded with the host's seed mixed with `i`, and EQIF 0
//!   keeps the host's seed, so adding EQIFs changes no epoch or path choice of the
//!   first.
//! - **Windows.** One window for every tunnel, or, when hosts' link rates differ, a
//!   window per tunnel of one bandwidth-delay product at the slower of its two ends
//!   ([`TunnelWindows`]): the receiver paces PULLs at its own rate and a sender can
//!   send no faster than its own.
//! - **Weights.** A receiver with a weighted or strict-priority policy pulls each of
//!   a peer's EQIFs by the share the host gives its own EQIF of that sender id.
//!
//! # Timers at scale
//!
//! A host may have hundreds of tunnels (an incast receiver), and finding the earliest
//! retransmit, credit-loss or reorder-hole timer means scanning them all. Doing that
//! per packet made an 850-to-1 incast 40 times slower than plain TCP in the
//! simulator. Those timers are all set at least `slack` after the moment they are
//! armed ([`EqdsConfig::slow_timer_slack`]: the shortest of the three timeouts), so
//! a scan's result stays the earliest slow deadline until `slack` before it:
//! [`Host::poll_timeout`] rescans only when `now + slack` has passed the last result
//! (or, when a scan found nothing, `slack` after it). The PULL pacer, the only
//! frequent timer, is polled on its own in O(1).

use std::sync::Arc;

use crate::config::{EqdsConfig, MAX_WINDOW};
use crate::eqif::{Delivery, ReceivingEqif, ReceivingEqifConfig};
use crate::receiver::{Policy, Receiver, ReceiverConfig};
use crate::reorder::ReorderConfig;
use crate::sender::{Acked, EnqueueError, PeerId, Red, Sender, SenderConfig, Transmit};
use crate::time::{Time, PS_PER_SEC};
use crate::tunnel::RxConfig;
use crate::uplink::{EqifIndex, Share, Uplink};
use crate::wire::{ControlHeader, DataHeader, NextProto};

/// Largest peer id a caller may use: the receiving EQIF keeps a peer's sender id in
/// the top 8 bits of its own 32-bit peer ids.
pub const MAX_PEER: PeerId = (1 << 24) - 1;

/// Most sending EQIFs a host may have (sender ids fit the 8 bits above a peer id).
pub const MAX_EQIFS: usize = 256;

/// Per-tunnel windows: each tunnel's window is one bandwidth-delay product of `rtt`
/// at the slower of its two ends' link rates.
#[derive(Debug, Clone)]
pub struct TunnelWindows {
    /// The round trip a window must cover (the simulator's longest loaded one).
    pub rtt: Time,
    /// Every peer's link rate in bit/s, by peer id.
    pub peer_rates: Arc<[u64]>,
}

/// What a [`Host`] needs to know about its machine, beyond [`EqdsConfig`].
#[derive(Debug, Clone)]
pub struct HostParams {
    /// Tunnel MTU in bytes as charged: the largest packet, overhead included, and
    /// the credit of one PULL.
    pub mtu: u32,
    /// Bytes charged per packet beyond the inner packet (outer headers, the EQDS
    /// header, link framing); an RTS and a control packet are this long.
    pub overhead: u32,
    /// The access link's rate in bit/s: PULLs are paced at it.
    pub link_rate_bps: u64,
    /// Path ids a tunnel sprays over.
    pub paths: u16,
    /// Seed of the epochs and path permutations.
    pub seed: u64,
    /// The host's sending EQIFs by sender id, each with its share of the uplink. At
    /// least one.
    pub eqifs: Vec<Share>,
    /// The sending EQIFs peers have, by sender id: data from a sender id beyond them
    /// is refused. When there are several and the policy is weighted or strict
    /// priority, the receiver pulls each by its share. Usually `eqifs`.
    pub peer_eqifs: Vec<Share>,
    /// Per-tunnel windows; `None`: every tunnel has the configured window.
    pub tunnel_windows: Option<TunnelWindows>,
    /// Per sending EQIF (by sender id), a send queue other than the configuration's
    /// TCP-compatible one: an RDMA EQIF's ([`crate::rdma`]), with its own limit and
    /// marking ramp. Missing or `None`: the configuration's.
    pub queues: Vec<Option<EqifQueue>>,
}

/// A sending EQIF's per-destination send queue, where it is not the TCP-compatible
/// one [`EqdsConfig`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EqifQueue {
    /// Charged bytes the queue to one destination may hold.
    pub limit_bytes: u64,
    /// Its marking ramp; `None`: it never marks.
    pub ecn: Option<Red>,
}

/// A host's EQDS. See the module documentation.
///
/// Fields are kept in this order (`repr(C)`): what every event reads (timers, flags), then
/// the receiving side, whose hot fields lead it, then the sending side (see
/// [`Receiver`]).
#[derive(Debug)]
#[repr(C)]
pub struct Host<P> {
    /// See "Timers at scale".
    slack: Time,
    /// Earliest of the slow timers (retransmit, credit loss, reorder holes) as of
    /// the last scan, or when to look again.
    slow_due: Time,
    mtu: u32,
    /// Pull each of a peer's EQIFs by its share.
    weigh_peers: bool,
    pace_control: bool,
    acks_first: bool,
    rx: ReceivingEqif<P>,
    tx: Uplink<P>,
    /// Send-queue limit per destination of each sending EQIF, in charged bytes.
    send_queue_bytes: Vec<u64>,
    peer_eqifs: Vec<Share>,
    tunnel_windows: Option<TunnelWindows>,
    link_rate_bps: u64,
}

impl<P: Clone> Host<P> {
    /// A host with no tunnels.
    ///
    /// # Panics
    /// If `params.eqifs` is empty or longer than [`MAX_EQIFS`], or a share's weight
    /// is 0 (front ends check these when they read their files).
    pub fn new(config: &EqdsConfig, params: HostParams) -> Self {
        assert!(
            !params.eqifs.is_empty() && params.eqifs.len() <= MAX_EQIFS,
            "a host has 1..=256 sending EQIFs"
        );
        let mtu = params.mtu;
        let window = config.window * mtu;
        let send_queue_bytes = u64::from(config.send_queue) * u64::from(mtu);
        let (ecn_min, ecn_max) = config.ecn_thresholds();
        let queue = |sender_id: usize| params.queues.get(sender_id).copied().flatten();
        let sender = |sender_id: usize| SenderConfig {
            mode: config.mode,
            mtu,
            overhead: params.overhead,
            window,
            initial_window: config.initial_window_packets().map(|p| p * mtu),
            demand_lookahead: config.demand_lookahead_packets() * mtu,
            // Counted in bytes, `send_queue` full packets' worth: a burst of small
            // packets (the TCP ACKs a reorder queue's release triggers) fits where a
            // packet count sized for full packets would drop them.
            send_queue_packets: usize::MAX,
            send_queue_bytes: queue(sender_id).map_or(send_queue_bytes, |q| q.limit_bytes),
            rto: config.rto,
            credit_loss_timeout: config.credit_loss_timeout(),
            paths: params.paths,
            sender_id: sender_id as u16,
            next_proto: NextProto::Ipv4,
            seed: params.seed ^ (sender_id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            path_stats: config.path_stats,
            path_avoidance: config.path_avoidance,
            loss_reorder_window: config.loss_reorder_window,
            ecn: queue(sender_id).map_or(
                Some(Red {
                    min_bytes: u64::from(ecn_min) * u64::from(mtu),
                    max_bytes: u64::from(ecn_max) * u64::from(mtu),
                    max_p_ppm: config.ecn_max_p_ppm,
                }),
                |q| q.ecn,
            ),
            thin_stream_credit: config.thin_stream_credit,
        };
        let mut tx = Uplink::new(sender(0), params.eqifs[0]);
        for (i, &share) in params.eqifs.iter().enumerate().skip(1) {
            tx.add(sender(i), share);
        }
        let reorder_window = config.reorder_window_packets(params.link_rate_bps, mtu);
        let rx = ReceivingEqif::new(ReceivingEqifConfig {
            credit: ReceiverConfig {
                link_rate_bps: params.link_rate_bps,
                mtu,
                window,
                pacing_permille: config.pull_rate_permille,
                pull_burst: config.pull_burst,
                policy: config.policy,
                ack_coalesce: config.ack_coalesce,
                ack_delay: config.ack_delay,
                spare_pulls: config.spare_pulls,
            },
            // Data more than two reorder spans away is from another epoch.
            tunnel: RxConfig {
                window: reorder_window,
            },
            reorder: ReorderConfig {
                window: reorder_window,
                hole_timeout: config.reorder_timeout,
            },
        });
        Self {
            tx,
            rx,
            mtu,
            link_rate_bps: params.link_rate_bps,
            weigh_peers: config.policy != Policy::Fifo && params.peer_eqifs.len() > 1,
            peer_eqifs: params.peer_eqifs,
            pace_control: config.pace_control,
            acks_first: config.acks_first,
            send_queue_bytes: (0..params.eqifs.len())
                .map(|i| queue(i).map_or(send_queue_bytes, |q| q.limit_bytes))
                .collect(),
            tunnel_windows: params.tunnel_windows,
            slack: config.slow_timer_slack(),
            slow_due: Time::MAX,
        }
    }

    /// The receiving EQIF's peer id for sending EQIF `sender_id` of peer `peer`: the
    /// sender id in the top 8 bits, so a peer with one EQIF is known by its own id.
    #[inline]
    pub fn rx_peer(peer: PeerId, sender_id: u16) -> PeerId {
        debug_assert!(peer <= MAX_PEER && usize::from(sender_id) < MAX_EQIFS);
        (u32::from(sender_id) << 24) | peer
    }

    /// The peer of a receiving EQIF's peer id ([`Host::rx_peer`]).
    #[inline]
    pub fn peer_of(rx_peer: PeerId) -> PeerId {
        rx_peer & MAX_PEER
    }

    /// The sending EQIFs and the scheduler between them.
    pub fn uplink(&self) -> &Uplink<P> {
        &self.tx
    }

    /// Sending EQIF `eqif`.
    ///
    /// # Panics
    /// If there is no such EQIF.
    pub fn sender(&self, eqif: EqifIndex) -> &Sender<P> {
        self.tx.eqif(eqif)
    }

    /// The receiving EQIF (tunnels, reorder queues, counters).
    pub fn receiver(&self) -> &ReceivingEqif<P> {
        &self.rx
    }

    /// The credit scheduler of the access link (per-sender credit state).
    pub fn credit(&self) -> &Receiver {
        self.rx.credit()
    }

    /// Send-queue limit per destination of EQIF `eqif`, in charged bytes.
    ///
    /// # Panics
    /// If there is no such EQIF.
    pub fn send_queue_limit(&self, eqif: EqifIndex) -> u64 {
        self.send_queue_bytes[eqif]
    }

    /// Bytes waiting in EQIF `eqif`'s send queue to `dst`.
    pub fn send_queue_bytes(&self, eqif: EqifIndex, dst: PeerId) -> u64 {
        self.tx.eqif(eqif).send_queue_bytes(dst)
    }

    /// Whether an ECN-capable packet that EQIF `eqif` is about to take for `dst` is
    /// to be marked CE (RED on the send queue, §6). Ask before
    /// [`Host::handle_write`], and mark the packet if so.
    pub fn mark_ce(&mut self, eqif: EqifIndex, dst: PeerId) -> bool {
        self.tx.eqif_mut(eqif).mark_ce(dst)
    }

    /// An inner packet of `len` bytes for `dst`, written into sending EQIF `eqif`. A
    /// pure transport ACK (`pure_ack`) goes ahead of waiting data when `acks_first`
    /// is on. On error the payload comes back: the send queue is full, or the packet
    /// does not fit the MTU.
    #[inline]
    pub fn handle_write(
        &mut self,
        now: Time,
        eqif: EqifIndex,
        dst: PeerId,
        len: u32,
        payload: P,
        pure_ack: bool,
    ) -> Result<(), EnqueueError<P>> {
        if self.tunnel_windows.is_some() {
            self.size_new_tunnel(eqif, dst);
        }
        let tx = self.tx.eqif_mut(eqif);
        if self.acks_first && pure_ack {
            tx.enqueue_ahead(now, dst, len, payload)
        } else {
            tx.enqueue(now, dst, len, payload)
        }
    }

    /// Sizes the window of the tunnel to `dst` before it first exists (see
    /// [`TunnelWindows`]).
    #[cold]
    fn size_new_tunnel(&mut self, eqif: EqifIndex, dst: PeerId) {
        let Some(w) = &self.tunnel_windows else {
            return;
        };
        let tx = self.tx.eqif_mut(eqif);
        if tx.tunnel_state(dst).is_some() {
            return;
        }
        let peer_rate = w.peer_rates.get(dst as usize).copied();
        let rate = peer_rate.map_or(self.link_rate_bps, |r| r.min(self.link_rate_bps));
        let packets = bdp_packets(w.rtt, rate, self.mtu).clamp(1, MAX_WINDOW);
        tx.set_window(dst, packets * self.mtu);
    }

    /// A DATA packet, trimmed header or RTS from `src`, `payload_len` bytes after its
    /// header. Refused, with the payload handed back, when its sender id names no
    /// EQIF peers have. Then drain [`Host::poll_deliver`] and
    /// [`Host::poll_discarded`].
    #[inline]
    pub fn handle_data(
        &mut self,
        now: Time,
        src: PeerId,
        header: &DataHeader,
        payload: P,
        payload_len: usize,
    ) -> Result<(), P> {
        let Some(&share) = self.peer_eqifs.get(usize::from(header.sender_id)) else {
            return Err(payload);
        };
        let rx_peer = Self::rx_peer(src, header.sender_id);
        if self.weigh_peers {
            let credit = self.rx.credit_mut();
            credit.set_weight(rx_peer, share.weight);
            credit.set_class(rx_peer, share.priority);
        }
        self.rx
            .handle_data(now, rx_peer, header, payload, payload_len);
        Ok(())
    }

    /// A control packet (ACK, NACK, PULL, RST) from `src` for one of the sending
    /// EQIFs, which took `wire_len` bytes of the access link. Then drain
    /// [`Host::poll_acked`].
    #[inline]
    pub fn handle_control(
        &mut self,
        now: Time,
        src: PeerId,
        header: &ControlHeader,
        wire_len: u32,
    ) {
        if self.pace_control {
            // It took the link's time without a PULL asking for it.
            self.rx.credit_mut().charge_unpulled(wire_len);
        }
        self.tx.handle_control(now, src, header);
    }

    /// A header of ours that a switch trimmed and returned: the packet to `dst` is to
    /// be resent.
    #[inline]
    pub fn handle_returned(&mut self, now: Time, dst: PeerId, header: &DataHeader) {
        self.tx.handle_returned(now, dst, header);
    }

    /// The next packet for the host, with `src` the peer that sent it.
    #[inline]
    pub fn poll_deliver(&mut self, now: Time) -> Option<Delivery<P>> {
        let mut d = self.rx.poll_deliver(now)?;
        d.src = Self::peer_of(d.src);
        Some(d)
    }

    /// The payload of a packet that arrived and will not be delivered (a trimmed
    /// header, an RTS, a duplicate), for the caller to free.
    #[inline]
    pub fn poll_discarded(&mut self) -> Option<P> {
        self.rx.poll_discarded()
    }

    /// A packet the far end acknowledged, and the EQIF that sent it: its buffer is
    /// the caller's again.
    #[inline]
    pub fn poll_acked(&mut self) -> Option<(EqifIndex, Acked<P>)> {
        self.tx.poll_acked()
    }

    /// The next control packet to send, and the peer it goes to.
    #[inline]
    pub fn poll_control(&mut self, now: Time) -> Option<(PeerId, ControlHeader)> {
        let (peer, header) = self.rx.poll_control(now)?;
        Some((Self::peer_of(peer), header))
    }

    /// The next DATA or RTS packet the sending EQIFs' credit pays for, and its EQIF.
    #[inline]
    pub fn poll_transmit(&mut self, now: Time) -> Option<(EqifIndex, Transmit<P>)> {
        self.tx.poll_transmit(now)
    }

    /// Whether some EQIF has a packet its credit pays for.
    pub fn has_transmit(&mut self) -> bool {
        self.tx.has_transmit()
    }

    /// Runs the timers due at `now`: the PULL pacer and deferred ACKs always, and the
    /// retransmit, credit-loss and reorder-hole timers when the earliest of them may
    /// be due. Then drain the `poll_*` queues.
    #[inline]
    pub fn handle_timeout(&mut self, now: Time) {
        self.rx.handle_pull_timeout(now);
        if now >= self.slow_due {
            self.handle_slow_timeouts(now);
        }
    }

    /// The retransmit, credit-loss and reorder-hole timers due at `now`.
    fn handle_slow_timeouts(&mut self, now: Time) {
        self.tx.handle_timeout(now);
        self.rx.handle_timeout(now);
        // Handled: the next `poll_timeout` rescans.
        self.slow_due = Time::MAX;
    }

    /// When [`Host::handle_timeout`] next has work, as of `now`. Cheap on most calls;
    /// see "Timers at scale".
    #[inline]
    pub fn poll_timeout(&mut self, now: Time) -> Option<Time> {
        if now.saturating_add(self.slack) < self.slow_due {
            self.scan_slow_timers(now);
        }
        let next = self
            .rx
            .poll_pull_timeout()
            .map_or(self.slow_due, |t| t.min(self.slow_due));
        (next != Time::MAX).then_some(next)
    }

    /// Finds the earliest slow timer by scanning every tunnel (see "Timers at
    /// scale"); with none, looks again `slack` from now.
    fn scan_slow_timers(&mut self, now: Time) {
        let scan = [self.tx.poll_timeout(), self.rx.poll_hole_timeout()]
            .into_iter()
            .flatten()
            .min();
        self.slow_due = scan.unwrap_or(now.saturating_add(self.slack));
    }

    /// Calls `visit` with the address of each field of the `Host` that
    /// [`Host::hot_state`] reads, without reading any: a caller may start loading
    /// them first, so that `hot_state` does not wait for them.
    pub fn hot_fields(&self, visit: &mut impl FnMut(*const u8)) {
        self.tx.eqif(0).hot_fields(visit);
        self.rx.hot_fields(visit);
        visit((&raw const self.send_queue_bytes).cast());
    }

    /// Calls `visit` with the address of each piece of this host's state that lives
    /// apart from the `Host` itself and that most events read: the first sending
    /// EQIF's first tunnel and queues, the receiving EQIF's first peer and queues.
    /// Only the `Host` is read to find them. A caller that runs many hosts may start
    /// loading them before the host's next event: on a large network each is
    /// otherwise a cache miss, one after the other.
    pub fn hot_state(&self, visit: &mut impl FnMut(*const u8)) {
        self.tx.eqif(0).hot_state(visit);
        self.rx.hot_state(visit);
        visit(self.send_queue_bytes.as_ptr().cast());
    }

    /// Forgets everything kept for `peer`, unilaterally, for a caller that gives its
    /// id to another host: each sending EQIF's tunnel to it (queues, credit, epoch)
    /// and the receiving state of each of its EQIFs (tunnels, reorder queues, credit,
    /// deliveries not yet polled). Hands back every payload held, which is lost.
    pub fn forget_peer(&mut self, peer: PeerId) -> Vec<P> {
        let mut dropped = Vec::new();
        for eqif in 0..self.tx.eqif_count() {
            dropped.extend(self.tx.eqif_mut(eqif).drop_tunnel(peer));
        }
        for sender_id in 0..self.peer_eqifs.len() {
            dropped.extend(self.rx.forget_peer(Self::rx_peer(peer, sender_id as u16)));
        }
        dropped
    }

    /// Closes every tunnel with `peer` for a clean shutdown: the sending tunnels are
    /// dropped, and each receiving tunnel answers with an RST so that its sender
    /// starts a new epoch at once (Appendix A). Returns what the sending side held
    /// (never sent or not yet acknowledged) and what the receiving side held (ACKed,
    /// so lost).
    pub fn close_peer(&mut self, peer: PeerId) -> (Vec<P>, Vec<P>) {
        let mut unsent = Vec::new();
        for eqif in 0..self.tx.eqif_count() {
            unsent.extend(self.tx.eqif_mut(eqif).drop_tunnel(peer));
        }
        let mut lost = Vec::new();
        for sender_id in 0..self.peer_eqifs.len() {
            lost.extend(self.rx.close_peer(Self::rx_peer(peer, sender_id as u16)));
        }
        (unsent, lost)
    }
}

/// Full packets of `mtu` bytes that a round trip of `rtt` holds at `rate` bit/s,
/// rounded up (saturating).
pub fn bdp_packets(rtt: Time, rate: u64, mtu: u32) -> u32 {
    let bytes = u128::from(rtt) * u128::from(rate) / (8 * u128::from(PS_PER_SEC));
    u32::try_from(bytes.div_ceil(u128::from(mtu.max(1)))).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;
