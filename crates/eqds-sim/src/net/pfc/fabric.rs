//! PFC at run time: the switches' shared buffers, the (ingress port, priority)
//! counters that send PAUSE and RESUME, the frames on the wire, the senders that obey
//! them, the watchdog and the deadlock detector, wired into the network.
//!
//! What happens to a packet of a lossless priority (DCQCN paper, §2 and §4):
//! - It reaches a switch through the link whose switch-side port is `ingress` (the
//!   port that sends back up that link). It is charged to the counter of
//!   (`ingress`, priority): to the shared buffer while the counter is below the PAUSE
//!   threshold, to the (port, priority)'s headroom beyond it. A packet the headroom
//!   cannot hold is dropped and counted (`headroom_drops`): with thresholds computed
//!   as here, that never happens, and the tests check it.
//! - When the counter passes the threshold (static, or dynamic: beta times the free
//!   shared buffer), the switch sends PAUSE for that priority back up the link; when
//!   it falls two frames below, RESUME. A frame waits for the one on the wire at the
//!   switch's port, is serialised (`frame_bytes`), crosses the link, and takes
//!   `response` to act on at the far end. Frames are link-local and take priority
//!   over data: they wait behind no queue and use no transmitter time \[choice: at
//!   64 B against 1500 B frames their share of the link is negligible\].
//! - The upstream port (a switch's, or a host's NIC: hosts pause too) then starts no
//!   frame of that priority until it is resumed or its pause quanta run out; the
//!   frame already on the wire finishes. Its queue discipline serves the other
//!   priorities (`QueueDiscipline::dequeue_unpaused`).
//! - When the packet leaves the switch, its bytes come off the counter (headroom
//!   first, as Broadcom's buffer manager returns them) and off the shared buffer.
//!   RESUME waits for the headroom to be empty as well \[choice: the dynamic
//!   threshold may rise past the counter while the headroom still holds the last
//!   pause's stragglers; resuming then would leave the next pause less than a full
//!   headroom, and the tests found it overflowing\].
//!
//! Lossy priorities keep their ports' own limits and are not charged here. Hosts
//! never send PAUSE (their receive path drains at line rate: the spec's Q11).

use super::deadlock::{pause_cycle, PausedLink};
use super::pause::{quanta_time, EgressPause, IngressPfc, PauseFrame, PauseMode, PfcCounters};
use super::thresholds::{headroom_bytes, HeadroomInputs, SharedBuffer};
use super::watchdog::{QueueVerdict, StormAction, Watchdog, WatchdogConfig};
use crate::engine::Event;
use crate::ids::{Node, PacketId, PortId, SwitchId};
use crate::net::port::PortCtx;
use crate::net::Network;
use crate::units::{serialisation_time, Time};

/// No ingress recorded for a packet.
const NONE: PortId = PortId::MAX;

/// How the PAUSE threshold is set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Threshold {
    /// Trident II's dynamic threshold: `beta (B - reserved headroom - s) / priorities`.
    Dynamic { beta: f64 },
    /// The largest static threshold every ingress queue can reach at once.
    Static,
}

/// PFC as a scenario configures it (`[pfc]`), resolved and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct PfcSettings {
    /// Bit `p` set: priority `p` is lossless.
    pub lossless: u8,
    pub mode: PauseMode,
    pub threshold: Threshold,
    /// Every switch's shared buffer, bytes.
    pub buffer_bytes: u64,
    /// Priorities every port reserves headroom for (the paper: all 8).
    pub reserved_priorities: u32,
    /// Time a device takes from receiving a PAUSE to stopping.
    pub response: Time,
    /// Extra frames of headroom.
    pub margin_mtus: u32,
    /// Headroom per (port, priority) given by the scenario instead of computed; it
    /// must hold at least the computed amount.
    pub headroom_override: Option<u64>,
    pub mtu: u32,
    /// Size of a PAUSE frame on the wire.
    pub frame_bytes: u32,
    pub watchdog: Option<WatchdogConfig>,
    /// How often the paused links are searched for a cycle while any link is paused.
    pub deadlock_scan: Time,
}

/// One switch's shared buffer.
#[derive(Clone, Debug)]
struct Buffer {
    config: SharedBuffer,
    /// Lossless bytes in the shared part now (s).
    used: u64,
    max_used: u64,
}

/// The (ingress port, priority) counters of one switch port.
#[derive(Clone, Debug)]
struct Ingress {
    /// Headroom per priority, bytes.
    headroom: u64,
    pfc: [IngressPfc; 8],
    /// Bytes charged per priority (shared and headroom).
    bytes: [u64; 8],
    /// Of `bytes`, in the headroom.
    in_headroom: [u64; 8],
    max_bytes: u64,
    max_headroom: u64,
}

/// Counters of one port for `ports.csv`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortPfcStats {
    /// PAUSE and RESUME frames this port sent up its link, PAUSE frames it received,
    /// and the time its lossless priorities were paused (the longest of them).
    pub frames: PfcCounters,
    /// Lossless packets dropped because the headroom was full.
    pub headroom_drops: u64,
    /// Lossless packets a queue discipline dropped (a configuration that lets it is
    /// refused, so this stays 0). A `random_loss` wrapper's losses are corruption,
    /// not overflow, and are not counted here.
    pub lossless_drops: u64,
    /// Packets dropped by the watchdog.
    pub watchdog_drops: u64,
    pub storms: u64,
    /// Largest (ingress, priority) counter and headroom use seen, bytes.
    pub max_ingress_bytes: u64,
    pub max_headroom_bytes: u64,
    pub headroom_bytes: u64,
}

/// A cycle of paused links that held for at least one scan interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    /// When it was first seen.
    pub since: Time,
    /// Its ports, in order round the loop.
    pub ports: Vec<PortId>,
}

/// PFC state of a whole run.
pub struct PfcFabric {
    pub settings: PfcSettings,
    /// Per port, the port at the other end of its link.
    reverse: Vec<PortId>,
    /// Per port, what the far end paused.
    egress: Vec<EgressPause>,
    /// Per port (switch ports only are used), its counters as an ingress.
    ingress: Vec<Ingress>,
    /// Per switch.
    buffers: Vec<Buffer>,
    /// Per packet, the ingress port it is charged to.
    ingress_of: Vec<PortId>,
    /// Per port and lossless priority, if configured.
    watchdogs: Vec<[Watchdog; 8]>,
    /// Per port, priorities the watchdog lets through or drops despite PAUSE.
    stormed: Vec<(u8, u8)>,
    stats: Vec<PortPfcStats>,
    /// Ports with a priority paused now.
    paused_ports: u32,
    scan_pending: bool,
    /// The cycle seen at the previous scan.
    last_cycle: Option<(Time, Vec<PortId>)>,
    pub deadlocks: Vec<Deadlock>,
    /// When the first PAUSE was sent, if one was.
    pub first_pause: Option<Time>,
}

/// Distinct deadlocks kept for the summary.
const MAX_DEADLOCKS: usize = 16;

impl PfcSettings {
    /// Headroom of the link `port` transmits on: what can still arrive at its far end
    /// after that end decides to pause it.
    pub fn headroom_for(&self, rate_bps: u64, latency: Time) -> u64 {
        headroom_bytes(&HeadroomInputs {
            rate_bps,
            propagation: latency,
            response: self.response,
            mtu: self.mtu,
            margin_mtus: self.margin_mtus,
        })
    }
}

/// Bytes of PFC state per port, with or without a watchdog (for the memory
/// estimate), and per packet in flight (its ingress record).
pub fn bytes_per_port(watchdog: bool) -> usize {
    use std::mem::size_of;
    size_of::<PortId>()
        + size_of::<EgressPause>()
        + size_of::<Ingress>()
        + size_of::<(u8, u8)>()
        + size_of::<PortPfcStats>()
        + if watchdog {
            size_of::<[Watchdog; 8]>()
        } else {
            0
        }
}

/// See [`bytes_per_port`].
pub const BYTES_PER_PACKET: usize = std::mem::size_of::<PortId>();

impl PfcFabric {
    /// PFC for `net`: every switch's buffer and every port's headroom worked out and
    /// checked. Errors name the setting and the switch or port that cannot work.
    pub fn new(settings: PfcSettings, net: &Network) -> Result<PfcFabric, String> {
        let n = net.ports.len();
        let mut headroom = vec![0u64; n];
        for (id, p) in net.ports.iter().enumerate() {
            let back = &net.ports[net.reverse[id] as usize];
            // Packets on this port's link arrive at the far end; the PAUSE goes back
            // on the reverse port. The longer of the two latencies bounds both ways.
            let need = settings.headroom_for(p.rate_bps, p.latency.max(back.latency));
            let have = match settings.headroom_override {
                Some(h) if h < need => {
                    return Err(format!(
                        "pfc.headroom: {h} B cannot hold what arrives after a PAUSE on the \
                         {} link of port {id} ({need} B at {} bit/s over {} ps with a {} ps \
                         response)",
                        net.tier_names[p.tier as usize], p.rate_bps, p.latency, settings.response
                    ))
                }
                Some(h) => h,
                None => need,
            };
            // The headroom is the far end's: the ingress that receives this link.
            headroom[net.reverse[id] as usize] = have;
        }
        let mut buffers = Vec::with_capacity(net.switches.len());
        for (s, sw) in net.switches.iter().enumerate() {
            let ports = sw.n_down + sw.n_up;
            let first = sw.first_down as usize;
            let worst = headroom[first..first + ports as usize]
                .iter()
                .copied()
                .max()
                .unwrap_or(0);
            let config = SharedBuffer {
                buffer_bytes: settings.buffer_bytes,
                ports,
                priorities: settings.reserved_priorities,
                headroom_bytes: worst,
                beta: match settings.threshold {
                    Threshold::Dynamic { beta } => beta,
                    Threshold::Static => 1.0,
                },
            };
            config
                .validate(settings.mtu)
                .map_err(|e| format!("pfc: switch {s} ({ports} ports): {e}"))?;
            let xoff = match settings.threshold {
                Threshold::Static => config.static_xoff(),
                Threshold::Dynamic { .. } => config.dynamic_xoff(0),
            };
            if xoff < 3.0 * f64::from(settings.mtu) {
                return Err(format!(
                    "pfc: switch {s}: its PAUSE threshold ({xoff:.0} B) leaves no room for \
                     RESUME two frames below it and a frame above; enlarge pfc.buffer"
                ));
            }
            buffers.push(Buffer {
                config,
                used: 0,
                max_used: 0,
            });
        }
        if let PauseMode::Quanta { quanta, refresh } = settings.mode {
            let fastest = net.ports.iter().map(|p| p.rate_bps).max().unwrap_or(1);
            let shortest = quanta_time(quanta, fastest);
            if refresh >= shortest {
                return Err(format!(
                    "pfc.refresh: {refresh} ps must be shorter than the pause it renews \
                     ({quanta} quanta = {shortest} ps at {fastest} bit/s)"
                ));
            }
        }
        let lossless_mode = settings.mode;
        let ingress = headroom
            .iter()
            .map(|&h| Ingress {
                headroom: h,
                pfc: std::array::from_fn(|p| IngressPfc::new(p as u8, lossless_mode)),
                bytes: [0; 8],
                in_headroom: [0; 8],
                max_bytes: 0,
                max_headroom: 0,
            })
            .collect();
        let watchdogs = match settings.watchdog {
            Some(w) => vec![std::array::from_fn(|_| Watchdog::new(w)); n],
            None => Vec::new(),
        };
        Ok(PfcFabric {
            reverse: net.reverse.clone(),
            egress: net
                .ports
                .iter()
                .map(|p| EgressPause::new(p.rate_bps))
                .collect(),
            ingress,
            buffers,
            ingress_of: Vec::new(),
            watchdogs,
            stormed: vec![(0, 0); n],
            stats: headroom
                .iter()
                .map(|&h| PortPfcStats {
                    headroom_bytes: h,
                    ..Default::default()
                })
                .collect(),
            paused_ports: 0,
            scan_pending: false,
            last_cycle: None,
            deadlocks: Vec::new(),
            first_pause: None,
            settings,
        })
    }

    #[inline]
    pub fn is_lossless(&self, class: u8) -> bool {
        self.settings.lossless & (1 << class.min(7)) != 0
    }

    /// The port at the other end of `port`'s link.
    #[inline]
    pub fn reverse(&self, port: PortId) -> PortId {
        self.reverse[port as usize]
    }

    /// The PAUSE threshold of switch `s` now.
    fn xoff(&self, s: SwitchId) -> f64 {
        let b = &self.buffers[s as usize];
        match self.settings.threshold {
            Threshold::Static => b.config.static_xoff(),
            Threshold::Dynamic { .. } => b.config.dynamic_xoff(b.used),
        }
    }

    fn record_ingress(&mut self, pkt: PacketId, ingress: PortId) {
        let i = pkt as usize;
        if self.ingress_of.len() <= i {
            self.ingress_of.resize(i + 1, NONE);
        }
        self.ingress_of[i] = ingress;
    }

    /// Charges a lossless packet arriving at switch `s` through `ingress`. Returns
    /// whether it fits (headroom overflow drops it) and the frame to send up, if any.
    fn admit(
        &mut self,
        now: Time,
        s: SwitchId,
        ingress: PortId,
        pkt: PacketId,
        size: u32,
        prio: u8,
    ) -> (bool, Option<PauseFrame>) {
        let xoff = self.xoff(s);
        let p = usize::from(prio.min(7));
        let ing = &mut self.ingress[ingress as usize];
        let size = u64::from(size);
        if ing.bytes[p] as f64 >= xoff {
            if ing.in_headroom[p] + size > ing.headroom {
                self.stats[ingress as usize].headroom_drops += 1;
                return (false, None);
            }
            ing.in_headroom[p] += size;
            ing.max_headroom = ing.max_headroom.max(ing.in_headroom[p]);
        } else {
            let b = &mut self.buffers[s as usize];
            b.used += size;
            b.max_used = b.max_used.max(b.used);
        }
        ing.bytes[p] += size;
        ing.max_bytes = ing.max_bytes.max(ing.bytes[p]);
        let bytes = ing.bytes[p];
        self.record_ingress(pkt, ingress);
        let xoff = self.xoff(s);
        let xon = SharedBuffer::xon(xoff, self.settings.mtu);
        let frame = self.ingress[ingress as usize].pfc[p].update(now, bytes, xoff, xon);
        (true, frame)
    }

    /// A packet left switch `s`: its bytes come off its ingress counter (headroom
    /// first) and the shared buffer. Returns its ingress port and the frame to send
    /// up, if any.
    fn depart(
        &mut self,
        now: Time,
        s: SwitchId,
        pkt: PacketId,
        size: u32,
        prio: u8,
    ) -> Option<(PortId, Option<PauseFrame>)> {
        let ingress = std::mem::replace(self.ingress_of.get_mut(pkt as usize)?, NONE);
        if ingress == NONE {
            return None;
        }
        let p = usize::from(prio.min(7));
        let ing = &mut self.ingress[ingress as usize];
        let size = u64::from(size).min(ing.bytes[p]);
        let from_headroom = size.min(ing.in_headroom[p]);
        ing.in_headroom[p] -= from_headroom;
        ing.bytes[p] -= size;
        let bytes = ing.bytes[p];
        let headroom_empty = ing.in_headroom[p] == 0;
        let b = &mut self.buffers[s as usize];
        b.used = b.used.saturating_sub(size - from_headroom);
        let xoff = self.xoff(s);
        let xon = SharedBuffer::xon(xoff, self.settings.mtu);
        // RESUME only once the headroom is empty too: the dynamic threshold can rise
        // past the counter while the headroom still holds the last pause's
        // stragglers, and a new pause would then find less than a full headroom.
        let bytes = if headroom_empty {
            bytes
        } else {
            bytes.max(xon as u64 + 1)
        };
        let frame = self.ingress[ingress as usize].pfc[p].update(now, bytes, xoff, xon);
        Some((ingress, frame))
    }

    /// Priorities `port` may not send now: paused by the far end, less those the
    /// watchdog forwards regardless.
    fn mask(&self, now: Time, port: PortId) -> u8 {
        let e = &self.egress[port as usize];
        let mut m = 0u8;
        for p in 0..8u8 {
            if !e.may_send(now, p) {
                m |= 1 << p;
            }
        }
        m & !self.stormed[port as usize].0
    }

    /// Per port counters for `ports.csv`, with pauses still running counted to `now`.
    pub fn port_stats(&self, now: Time, port: PortId) -> PortPfcStats {
        let i = port as usize;
        let mut s = self.stats[i];
        let ing = &self.ingress[i];
        for p in 0..8u8 {
            if self.is_lossless(p) {
                let sent = ing.pfc[usize::from(p)].counters();
                s.frames.pause_sent += sent.pause_sent;
                s.frames.resume_sent += sent.resume_sent;
                let got = self.egress[i].counters(now, p);
                s.frames.pause_received += got.pause_received;
                s.frames.paused_time = s.frames.paused_time.max(got.paused_time);
            }
        }
        s.max_ingress_bytes = ing.max_bytes;
        s.max_headroom_bytes = ing.max_headroom;
        if let Some(w) = self.watchdogs.get(i) {
            s.storms = w.iter().map(Watchdog::storms).sum();
        }
        s
    }

    /// Per switch, the largest shared-buffer occupancy seen (lossless bytes).
    pub fn max_buffer_used(&self) -> Vec<u64> {
        self.buffers.iter().map(|b| b.max_used).collect()
    }

    /// The PAUSE threshold of each switch with an empty buffer, and its RESUME.
    pub fn thresholds(&self) -> Vec<(f64, f64)> {
        (0..self.buffers.len() as SwitchId)
            .map(|s| {
                let b = &self.buffers[s as usize].config;
                let xoff = match self.settings.threshold {
                    Threshold::Static => b.static_xoff(),
                    Threshold::Dynamic { .. } => b.dynamic_xoff(0),
                };
                (xoff, SharedBuffer::xon(xoff, self.settings.mtu))
            })
            .collect()
    }
}

impl Network {
    /// A packet arrived at a switch through `ingress` (the switch's port on the link
    /// it came in on) and is routed to `port`: PFC charges it, then it is offered to
    /// the port as usual.
    pub fn enqueue_from(
        &mut self,
        port: PortId,
        pkt: PacketId,
        ingress: PortId,
        ctx: &mut PortCtx,
    ) {
        if self.pfc_charge(port, pkt, ingress, ctx) {
            self.pfc_offer(port, pkt, ctx);
        }
    }

    /// The first half of [`Network::enqueue_from`]: a lossless packet is charged to
    /// its ingress (which may send a PAUSE). False if it was dropped (and freed)
    /// instead. IOFD charges a packet it holds back this way, and offers it later.
    #[inline]
    pub(crate) fn pfc_charge(
        &mut self,
        port: PortId,
        pkt: PacketId,
        ingress: PortId,
        ctx: &mut PortCtx,
    ) -> bool {
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return true;
        };
        let Node::Switch(s) = self.ports[port as usize].owner else {
            return true;
        };
        let (class, size) = {
            let p = ctx.pkts.get(pkt);
            (p.class, p.size)
        };
        if pfc.is_lossless(class) {
            if pfc.stormed[port as usize].1 & (1 << class.min(7)) != 0 {
                pfc.stats[port as usize].watchdog_drops += 1;
                ctx.pkts.free(pkt);
                return false;
            }
            let (fits, frame) = pfc.admit(ctx.now, s, ingress, pkt, size, class);
            if !fits {
                ctx.pkts.free(pkt);
                return false;
            }
            if let Some(f) = frame {
                self.send_frame(ingress, f, ctx);
            }
        }
        true
    }

    /// The second half of [`Network::enqueue_from`]: a packet already charged is
    /// offered to `port`.
    #[inline]
    pub(crate) fn pfc_offer(&mut self, port: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return self.enqueue(port, pkt, ctx);
        };
        let Node::Switch(s) = self.ports[port as usize].owner else {
            return self.enqueue(port, pkt, ctx);
        };
        let (class, size) = {
            let p = ctx.pkts.get(pkt);
            (p.class, p.size)
        };
        let lossless = pfc.is_lossless(class);
        let counts = |s: &crate::net::queue::PortStats| (s.drops, s.random_losses);
        let (drops, losses) = counts(&self.ports[port as usize].stats);
        self.enqueue(port, pkt, ctx);
        let (drops_after, losses_after) = counts(&self.ports[port as usize].stats);
        if lossless && drops_after != drops {
            // The discipline refused it after all: take it off the counters.
            let corrupted = losses_after != losses;
            let pfc = self.pfc.as_deref_mut().expect("checked above");
            if !corrupted {
                pfc.stats[port as usize].lossless_drops += 1;
            }
            if let Some((ing, Some(f))) = pfc.depart(ctx.now, s, pkt, size, class) {
                self.send_frame(ing, f, ctx);
            }
        }
        if self.ports[port as usize].paused != 0
            && self.queues[port as usize].backlog_packets() == 1
        {
            // A paused queue that just got a packet: the watchdog's clock starts.
            self.watch(port, ctx);
        }
        self.after_transmit(port, ctx);
    }

    /// After `port` may have started a packet: if it was charged to an ingress
    /// counter, the packet has left the switch (IOFD's flow tables hear of it too).
    #[inline]
    pub(crate) fn after_transmit(&mut self, port: PortId, ctx: &mut PortCtx) {
        let Some(pkt) = self.ports[port as usize].take_last_tx() else {
            return;
        };
        if self.trimming_hw.is_some() {
            return self.hw_departed(port, pkt, ctx);
        }
        if self.iofd.is_some() {
            self.iofd_departed(port, pkt, ctx);
        }
        let Node::Switch(s) = self.ports[port as usize].owner else {
            return;
        };
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return;
        };
        let (class, size) = {
            let p = ctx.pkts.get(pkt);
            (p.class, p.size)
        };
        if let Some((ing, Some(f))) = pfc.depart(ctx.now, s, pkt, size, class) {
            self.send_frame(ing, f, ctx);
        }
    }

    /// Sends a PAUSE or RESUME out of `from`, up its link: it waits for the frame on
    /// the wire there, is serialised, crosses the link, and acts `response` later.
    fn send_frame(&mut self, from: PortId, f: PauseFrame, ctx: &mut PortCtx) {
        let pfc = self
            .pfc
            .as_deref_mut()
            .expect("PFC frames exist only with PFC");
        let p = &self.ports[from as usize];
        let at = ctx.now.max(p.busy_until)
            + serialisation_time(pfc.settings.frame_bytes, p.rate_bps)
            + p.latency
            + pfc.settings.response;
        if !f.is_resume() {
            pfc.first_pause.get_or_insert(ctx.now);
            if let PauseMode::Quanta { .. } = pfc.settings.mode {
                // The refresh of this PAUSE.
                if let Some(due) =
                    pfc.ingress[from as usize].pfc[usize::from(f.priority)].poll_timeout()
                {
                    ctx.events.push(due, Event::PfcTimer { port: from });
                }
            }
        }
        ctx.events.push(
            at,
            Event::PfcFrame {
                port: pfc.reverse[from as usize],
                priority: f.priority,
                quanta: f.quanta,
            },
        );
    }

    /// A PAUSE or RESUME reached the sending end of `port`'s link.
    pub fn pfc_frame(&mut self, port: PortId, f: PauseFrame, ctx: &mut PortCtx) {
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return;
        };
        let now = ctx.now;
        if !pfc.egress[port as usize].on_frame(now, f) {
            return;
        }
        if let Some(until) = pfc.egress[port as usize].paused_until(f.priority) {
            ctx.events.push(until, Event::PfcTimer { port });
        }
        self.refresh_mask(port, ctx);
        self.watch(port, ctx);
    }

    /// Recomputes what `port` may send; restarts it if a priority was released.
    fn refresh_mask(&mut self, port: PortId, ctx: &mut PortCtx) {
        let pfc = self.pfc.as_deref_mut().expect("called with PFC");
        let now = ctx.now;
        let old = self.ports[port as usize].paused;
        let new = pfc.mask(now, port);
        if old == new {
            return;
        }
        self.ports[port as usize].paused = new;
        match (old == 0, new == 0) {
            (true, false) => {
                pfc.paused_ports += 1;
                if !pfc.scan_pending {
                    pfc.scan_pending = true;
                    ctx.events
                        .push(now + pfc.settings.deadlock_scan, Event::PfcScan);
                }
            }
            (false, true) => pfc.paused_ports -= 1,
            _ => {}
        }
        if old & !new != 0 {
            let queue = &mut *self.queues[port as usize];
            self.ports[port as usize].kick(queue, port, ctx);
            self.after_transmit(port, ctx);
        }
    }

    /// A PFC timer of `port`: a pause that expires by itself (quanta), a PAUSE to
    /// refresh, or the watchdog's detection or restoration time.
    pub fn pfc_timer(&mut self, port: PortId, ctx: &mut PortCtx) {
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return;
        };
        let now = ctx.now;
        // Refresh PAUSEs this port sends up its link (quanta mode).
        let mut frames = [None; 8];
        for (p, frame) in frames.iter_mut().enumerate() {
            if pfc.is_lossless(p as u8) {
                *frame = pfc.ingress[port as usize].pfc[p].handle_timeout(now);
            }
        }
        for f in frames.into_iter().flatten() {
            self.send_frame(port, f, ctx);
        }
        self.watch(port, ctx);
        self.refresh_mask(port, ctx);
    }

    /// The watchdog of `port`'s lossless queues.
    fn watch(&mut self, port: PortId, ctx: &mut PortCtx) {
        let pfc = self.pfc.as_deref_mut().expect("called with PFC");
        if pfc.watchdogs.is_empty() {
            return;
        }
        let now = ctx.now;
        let i = port as usize;
        let backlogged = self.queues[i].backlog_packets() > 0;
        let mut forward = 0u8;
        let mut drop = 0u8;
        for p in 0..8u8 {
            if !pfc.is_lossless(p) {
                continue;
            }
            let paused = !pfc.egress[i].may_send(now, p);
            let w = &mut pfc.watchdogs[i][usize::from(p)];
            let before = w.poll_timeout();
            match w.update(now, paused, backlogged) {
                QueueVerdict::Normal => {}
                QueueVerdict::Stormed { action, .. } => match action {
                    StormAction::Forward => forward |= 1 << p,
                    StormAction::Drop => drop |= 1 << p,
                },
            }
            if let Some(t) = w.poll_timeout() {
                if Some(t) != before && t >= now {
                    ctx.events.push(t, Event::PfcTimer { port });
                }
            }
        }
        pfc.stormed[i] = (forward | drop, drop);
        if drop != 0 {
            // Flush what the stormed priorities hold. A discipline with one queue for
            // every class cannot hand out one class alone (its head blocks the rest
            // anyway): it is flushed whole.
            let keep = !drop;
            let per_class = self.queues[i].serves_classes_apart();
            let next = |q: &mut crate::net::queue::DynQueue| {
                if per_class {
                    q.dequeue_unpaused(keep)
                } else {
                    q.dequeue()
                }
            };
            while let Some((pkt, size)) = next(&mut *self.queues[i]) {
                let pfc = self.pfc.as_deref_mut().expect("called with PFC");
                pfc.stats[i].watchdog_drops += 1;
                self.ports[i].stats.drops += 1;
                self.ports[i].stats.dropped_bytes += u64::from(size);
                if let Node::Switch(s) = self.ports[i].owner {
                    let class = ctx.pkts.get(pkt).class;
                    if let Some((ing, Some(f))) = pfc.depart(now, s, pkt, size, class) {
                        self.send_frame(ing, f, ctx);
                    }
                }
                ctx.pkts.free(pkt);
            }
        }
    }

    /// Looks for a cycle of paused links; reschedules itself while any is paused.
    pub fn pfc_scan(&mut self, ctx: &mut PortCtx) {
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return;
        };
        pfc.scan_pending = false;
        if pfc.paused_ports == 0 {
            pfc.last_cycle = None;
            return;
        }
        let n_hosts = self.n_hosts;
        let device = |n: Node| match n {
            Node::Host(h) => h,
            Node::Switch(s) => n_hosts + s,
        };
        let links: Vec<PausedLink> = self
            .ports
            .iter()
            .enumerate()
            .filter(|(_, p)| p.paused != 0)
            .map(|(id, p)| PausedLink {
                port: id as u32,
                from: device(p.owner),
                to: device(p.peer),
            })
            .collect();
        let cycle = pause_cycle(&links);
        let now = ctx.now;
        match (cycle, pfc.last_cycle.take()) {
            (Some(c), Some((since, last))) if c == last => {
                if !pfc.deadlocks.iter().any(|d| d.ports == c)
                    && pfc.deadlocks.len() < MAX_DEADLOCKS
                {
                    pfc.deadlocks.push(Deadlock {
                        since,
                        ports: c.clone(),
                    });
                }
                pfc.last_cycle = Some((since, c));
            }
            (Some(c), _) => pfc.last_cycle = Some((now, c)),
            (None, _) => {}
        }
        pfc.scan_pending = true;
        ctx.events
            .push(now + pfc.settings.deadlock_scan, Event::PfcScan);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EventQueue, SimRng};
    use crate::net::packet::PacketSlab;
    use crate::net::{LinkSpec, NetworkBuilder};
    use crate::units::{MS, US};
    use rand::SeedableRng;

    fn settings() -> PfcSettings {
        PfcSettings {
            lossless: 1,
            mode: PauseMode::XoffXon,
            threshold: Threshold::Dynamic { beta: 8.0 },
            buffer_bytes: 12_000_000,
            reserved_priorities: 8,
            response: 500 * crate::units::NS,
            margin_mtus: 1,
            headroom_override: None,
            mtu: 1500,
            frame_bytes: 64,
            watchdog: None,
            deadlock_scan: 100 * US,
        }
    }

    /// Three switches in a ring, one host each: switch `i`'s port `up0` goes to
    /// switch `i + 1`, its `up1` comes from switch `i - 1`.
    fn ring() -> (Network, Vec<PortId>) {
        let mut b = NetworkBuilder::for_tests(3);
        let link = LinkSpec {
            rate_bps: 40_000_000_000,
            latency: US,
        };
        let sw: Vec<SwitchId> = (0..3).map(|h| b.switch(h, 1, 1, 2, 1)).collect();
        for h in 0..3 {
            let down = b.down_port(sw[h as usize], 0);
            b.link(h, down, link, "host_up", "down");
        }
        let mut forward = Vec::new();
        for i in 0..3 {
            let (a, c) = (sw[i], sw[(i + 1) % 3]);
            let (out, into) = (b.up_port(a, 0), b.up_port(c, 1));
            b.link(out, into, link, "ring", "ring_back");
            forward.push(out);
        }
        (b.finish(1), forward)
    }

    /// Every switch paused by the next one round the ring: after two scans the
    /// cycle is reported, port by port; a RESUME anywhere breaks it.
    #[test]
    fn a_ring_of_pauses_is_reported_as_a_deadlock() {
        let (mut net, forward) = ring();
        net.pfc = Some(Box::new(PfcFabric::new(settings(), &net).unwrap()));
        let mut events = EventQueue::new();
        let mut pkts = PacketSlab::new();
        let mut rng = SimRng::seed_from_u64(1);
        let pause = PauseFrame {
            priority: 0,
            quanta: u16::MAX,
        };
        let mut at =
            |now: Time, net: &mut Network, f: &mut dyn FnMut(&mut Network, &mut PortCtx)| {
                let mut ctx = PortCtx {
                    now,
                    events: &mut events,
                    pkts: &mut pkts,
                    rng: &mut rng,
                };
                f(net, &mut ctx);
            };
        for &p in &forward {
            at(10 * US, &mut net, &mut |n, c| n.pfc_frame(p, pause, c));
        }
        assert!(forward.iter().all(|&p| net.ports[p as usize].paused == 1));
        at(110 * US, &mut net, &mut |n, c| n.pfc_scan(c));
        assert!(
            net.pfc.as_ref().unwrap().deadlocks.is_empty(),
            "seen once only"
        );
        at(210 * US, &mut net, &mut |n, c| n.pfc_scan(c));
        let d = net.pfc.as_ref().unwrap().deadlocks.clone();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].since, 110 * US);
        let mut ports = d[0].ports.clone();
        ports.sort();
        assert_eq!(ports, forward);
        // Resume one link: the cycle is gone, and no new deadlock is recorded.
        let resume = PauseFrame {
            priority: 0,
            quanta: 0,
        };
        at(300 * US, &mut net, &mut |n, c| {
            n.pfc_frame(forward[1], resume, c)
        });
        at(310 * US, &mut net, &mut |n, c| n.pfc_scan(c));
        at(410 * US, &mut net, &mut |n, c| n.pfc_scan(c));
        assert_eq!(net.pfc.as_ref().unwrap().deadlocks.len(), 1);
        let s = net.pfc.as_ref().unwrap().port_stats(MS, forward[1]);
        assert_eq!(s.frames.pause_received, 1);
        assert_eq!(s.frames.paused_time, 290 * US);
    }

    /// A queue paused for good (nothing ever resumes it) is stormed after the
    /// detection time: with `drop` its packets go and are taken off the ingress
    /// counters; with `forward` it sends them despite the PAUSE.
    #[test]
    fn the_watchdog_breaks_a_pause_that_never_ends() {
        use crate::net::packet::Packet;
        use crate::net::pfc::watchdog::{StormAction, WatchdogConfig};
        for action in [StormAction::Drop, StormAction::Forward] {
            let (mut net, forward) = ring();
            let mut cfg = settings();
            cfg.watchdog = Some(WatchdogConfig {
                detection: MS,
                restoration: MS,
                action,
            });
            net.pfc = Some(Box::new(PfcFabric::new(cfg, &net).unwrap()));
            let mut events = EventQueue::new();
            let mut pkts = PacketSlab::new();
            let mut rng = SimRng::seed_from_u64(1);
            let port = forward[0];
            let ingress = net.reverse[0]; // switch 0's port facing host 0
            let mut ctx = PortCtx {
                now: 0,
                events: &mut events,
                pkts: &mut pkts,
                rng: &mut rng,
            };
            let pause = PauseFrame {
                priority: 0,
                quanta: u16::MAX,
            };
            net.pfc_frame(port, pause, &mut ctx);
            for _ in 0..5 {
                let pkt = ctx.pkts.alloc(Packet {
                    src: 0,
                    dst: 2,
                    size: 1500,
                    ..Default::default()
                });
                net.enqueue_from(port, pkt, ingress, &mut ctx);
            }
            assert_eq!(net.queues[port as usize].backlog_packets(), 5, "paused");
            assert_eq!(net.ports[port as usize].stats.tx_packets, 0);
            // Just before the detection time nothing happens; at it, the storm.
            ctx.now = MS - 1;
            net.pfc_timer(port, &mut ctx);
            assert_eq!(net.queues[port as usize].backlog_packets(), 5);
            ctx.now = MS;
            net.pfc_timer(port, &mut ctx);
            let stats = net.pfc.as_ref().unwrap().port_stats(MS, port);
            assert_eq!(stats.storms, 1);
            match action {
                StormAction::Drop => {
                    assert_eq!(net.queues[port as usize].backlog_packets(), 0);
                    assert_eq!(stats.watchdog_drops, 5);
                    assert_eq!(ctx.pkts.live(), 0, "dropped packets are freed");
                    let ing = &net.pfc.as_ref().unwrap().ingress[ingress as usize];
                    assert_eq!(ing.bytes[0], 0, "and taken off their ingress counter");
                }
                StormAction::Forward => {
                    assert_eq!(net.ports[port as usize].paused, 0);
                    assert_eq!(
                        net.ports[port as usize].stats.tx_packets, 1,
                        "sending again"
                    );
                }
            }
        }
    }
}
