//! The event loop: one thread, one epoll (through mio) over the tunnel socket, the TUN
//! device, a nanosecond timer, the metrics thread's snapshot requests and the
//! termination signals. The metrics endpoint itself runs on its own thread
//! ([`metrics::server`]): the loop only copies its numbers out when asked.
//!
//! Each turn reads what is ready in bounded batches (so neither direction starves the
//! other), runs the timers that are due, then flushes: datagrams with sendmmsg, inner
//! packets with one write each to the TUN device. epoll is edge-triggered, so a source
//! whose batch limit was hit is remembered as still ready and the next turn polls
//! without sleeping.

use std::io::{self, ErrorKind};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use mio::net::UnixDatagram;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook_mio::v1_0::Signals;
use tracing::{info, warn};

use eqds_proto::time::PS_PER_US;
use eqds_proto::wire::path_id_of;

use crate::config::Config;
use crate::counters::Counters;
use crate::engine::{Datagram, Engine, NativeOutcome, NATIVE_AT};
use crate::gro::Coalescer;
use crate::gso;
use crate::metrics;
use crate::native::{Kind, NativeHeader};
use crate::pool::{BufId, INNER};
use crate::sys::tun::Tun;
use crate::sys::udp::{Coalesced, Received, Sockets, BATCH, GRO_BATCH};
use crate::sys::{exact_timers, monotonic_ps, real_time_scheduled, Timer};

const UDP: Token = Token(0);
const TUN: Token = Token(1);
const TIMER: Token = Token(2);
/// The metrics thread asks for a snapshot (a `mio::Waker`).
const METRICS: Token = Token(3);
const SIGNALS: Token = Token(4);
const NATIVE: Token = Token(5);
const NATIVE_APP: Token = Token(6);

/// Native socket reads per turn.
const NATIVE_READS_PER_TURN: usize = 256;

/// The native interface: the daemon's bound socket, and a socket connected to the
/// application that receives (the one heard from last). Connected, so that epoll
/// reports it writable only when the application's receive queue has room.
struct NativeIo {
    sock: UnixDatagram,
    path: PathBuf,
    app: Option<App>,
}

struct App {
    path: PathBuf,
    out: UnixDatagram,
    writable: bool,
    /// A reply (BUSY, REJECT, HELLO) its full receive queue did not take. Until it
    /// is delivered the daemon reads nothing more from the native socket: an
    /// application must hear of every payload refused, in order, or it would count
    /// it as taken.
    pending: Option<NativeHeader>,
}

impl NativeIo {
    fn bind(path: &Path, registry: &mio::Registry) -> Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("native.socket: creating {}", dir.display()))?;
        }
        // A socket file left by an earlier daemon (the path is ours by configuration).
        if std::fs::symlink_metadata(path).is_ok() {
            std::fs::remove_file(path)
                .with_context(|| format!("native.socket: removing stale {}", path.display()))?;
        }
        let mut sock = UnixDatagram::bind(path)
            .with_context(|| format!("native.socket: binding {}", path.display()))?;
        registry.register(&mut sock, NATIVE, Interest::READABLE)?;
        Ok(Self {
            sock,
            path: path.to_owned(),
            app: None,
        })
    }

    /// Makes the application at `from` the receiving one, unless it already is.
    fn heard_from(&mut self, from: &Path, registry: &mio::Registry) {
        if self.app.as_ref().is_some_and(|a| a.path == from) {
            return;
        }
        if let Some(mut old) = self.app.take() {
            let _ = registry.deregister(&mut old.out);
        }
        let Ok(mut out) = UnixDatagram::unbound() else {
            return;
        };
        if out.connect(from).is_err()
            || registry
                .register(&mut out, NATIVE_APP, Interest::WRITABLE)
                .is_err()
        {
            return;
        }
        self.app = Some(App {
            path: from.to_owned(),
            out,
            writable: true,
            pending: None,
        });
    }
}

impl Drop for NativeIo {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// recvmmsg batches per turn.
const UDP_BATCHES_PER_TURN: usize = 8;
/// TUN reads per turn.
const TUN_READS_PER_TURN: usize = 256;

/// Runs the daemon until SIGTERM or SIGINT. Everything it installed goes with it: the
/// TUN device (and so its address and routes) closes when `Tun` drops.
pub fn run(config: &Config) -> Result<()> {
    let tun = Tun::create(
        &config.ifname,
        config.address,
        config.address6,
        config.inner_mtu(),
        &config.routes,
        config.offload,
    )
    .with_context(|| format!("creating TUN device {}", config.ifname))?;
    let mut sockets = Sockets::bind(config.listen, config.paths, config.udp_offload)?;
    // Timers of ordinary tasks may fire up to 50 µs late (timer slack), most of a
    // PULL interval at 200 Mbit/s.
    exact_timers();
    if (config.busy_poll || config.poll_us > 0) && real_time_scheduled() {
        warn!(
            "polling (tunnel.busy_poll or tunnel.poll_us) in a real-time scheduling class \
             keeps ordinary tasks, the applications among them, off this core while it \
             polls; run the daemon at ordinary priority to poll"
        );
    }
    let mut timer = Timer::new().context("timerfd")?;
    let mut poll = Poll::new()?;
    let registry = poll.registry();
    let udp_fd = sockets.listen_socket().as_raw_fd();
    registry.register(&mut SourceFd(&udp_fd), UDP, Interest::READABLE)?;
    let tun_fd = tun.as_raw_fd();
    registry.register(&mut SourceFd(&tun_fd), TUN, Interest::READABLE)?;
    let timer_fd = timer.as_raw_fd();
    registry.register(&mut SourceFd(&timer_fd), TIMER, Interest::READABLE)?;
    // The metrics thread; dropped (stopped) when the loop returns.
    let metrics_server = match config.metrics {
        Some(addr) => {
            let listener = std::net::TcpListener::bind(addr)
                .with_context(|| format!("metrics.listen: binding {addr}"))?;
            let waker = Waker::new(registry, METRICS)?;
            let request = move || {
                // An eventfd write; it cannot block.
                let _ = waker.wake();
            };
            Some(
                metrics::server::spawn(listener, request, metrics::server::Limits::default())
                    .context("starting the metrics thread")?,
            )
        }
        None => None,
    };
    let mut signals = Signals::new([SIGTERM, SIGINT])?;
    registry.register(&mut signals, SIGNALS, Interest::READABLE)?;
    let mut native = match &config.native_socket {
        Some(path) => Some(NativeIo::bind(path, registry)?),
        None => None,
    };

    let epoch = monotonic_ps();
    let mut engine = Engine::new(config, epoch ^ u64::from(std::process::id()));
    info!(
        "{} up ({}{} inner MTU {}), tunnel on {} (source ports {:?}, UDP GSO {}, GRO {}), mode {:?}, link {} bit/s",
        tun.name(),
        config.address,
        config.address6.map(|a| format!(" {a}")).unwrap_or_default(),
        config.inner_mtu(),
        config.listen,
        sockets.ports(),
        on_off(sockets.gso()),
        on_off(sockets.gro()),
        config.eqds.mode,
        config.link_rate_bps
    );

    let granularity = config.timer_granularity_us * PS_PER_US;
    let mut events = Events::with_capacity(64);
    let mut rx_bufs: Vec<BufId> = Vec::with_capacity(BATCH);
    let mut received: Vec<Received> = Vec::with_capacity(BATCH);
    let mut coalesced: Vec<Coalesced> = Vec::with_capacity(GRO_BATCH);
    let mut out = Output {
        outgoing: Vec::with_capacity(4 * BATCH),
        next_path: 0,
        gro: TunGro::default(),
    };
    // With offloads a TUN read is up to 64 KB, cut into MTU-sized packets.
    let mut tun_read = vec![0u8; gso::VNET_HDR_LEN + 65_536];
    let inner_mtu = config.inner_mtu() as usize;
    let (mut udp_ready, mut tun_ready) = (true, true);
    let mut native_ready = native.is_some();
    let mut busy = true;
    let poll_window = config.poll_us * PS_PER_US;
    // When a packet last came in: the loop keeps polling for `poll_window` after it.
    let mut last_packet = 0u64;
    let mut packets_seen = 0u64;
    loop {
        let timeout = busy.then_some(std::time::Duration::ZERO);
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(e.into());
        }
        for ev in events.iter() {
            match ev.token() {
                UDP => udp_ready = true,
                TUN => tun_ready = true,
                TIMER => timer.acknowledge(),
                NATIVE => native_ready = true,
                NATIVE_APP => {
                    if let Some(app) = native.as_mut().and_then(|n| n.app.as_mut()) {
                        app.writable = true;
                        // Reading may have stopped behind an undelivered reply.
                        native_ready = true;
                    }
                }
                METRICS => {
                    if let Some((_, publisher)) = &metrics_server {
                        publisher.publish(metrics::Snapshot::take(&engine));
                    }
                }
                SIGNALS if signals.pending().next().is_some() => {
                    engine.close_all(monotonic_ps() - epoch);
                    out.flush(&sockets, &tun, &mut engine, native.as_mut());
                    info!("terminating; counters: {:?}", engine.counters());
                    return Ok(());
                }
                _ => {}
            }
        }

        if udp_ready {
            udp_ready = if sockets.gro() {
                read_udp_coalesced(&mut sockets, &mut engine, epoch, &mut coalesced)?
            } else {
                read_udp(&sockets, &mut engine, epoch, &mut rx_bufs, &mut received)?
            };
        }
        if tun_ready {
            tun_ready = read_tun(&tun, &mut engine, epoch, inner_mtu, &mut tun_read)?;
        }
        if native_ready {
            if let Some(n) = native.as_mut() {
                native_ready = read_native(n, poll.registry(), &mut engine, epoch)?;
            }
        }
        let now = monotonic_ps() - epoch;
        if engine.poll_timeout().is_some_and(|t| t <= now) {
            engine.handle_timeout(now);
        }
        out.flush(&sockets, &tun, &mut engine, native.as_mut());

        let due = engine.poll_timeout();
        let now = monotonic_ps() - epoch;
        let seen = packets_in(engine.counters());
        if seen != packets_seen {
            (packets_seen, last_packet) = (seen, now);
        }
        // While polling the loop does not sleep, so timers are simply checked on every
        // turn.
        let polling = config.busy_poll || now.saturating_sub(last_packet) < poll_window;
        let more = udp_ready || tun_ready || native_ready;
        busy = more || polling;
        if polling && !more {
            // An idle turn: let whatever else is runnable on this core go first (the
            // application the reply is for), rather than hold the core until preempted.
            std::thread::yield_now();
        }
        if let (Some(t), false) = (due, busy) {
            timer.arm(epoch + t.max(now + granularity))?;
        }
    }
}

/// Packets taken in from the tunnel, the TUN device and native applications: when it
/// moves, the loop has had work.
fn packets_in(c: &Counters) -> u64 {
    c.udp_rx_datagrams + c.tun_rx_packets + c.native_rx_datagrams
}

/// Why a batched read returned nothing.
enum Unread {
    /// Nothing is waiting.
    Empty,
    /// Try again at once.
    Retry,
}

/// Classifies a failed recvmmsg; an error for anything the loop cannot go on after.
fn recv_error(e: io::Error) -> Result<Unread> {
    match e.kind() {
        ErrorKind::WouldBlock => Ok(Unread::Empty),
        // ICMP errors for earlier sends surface here (connection refused when a peer's
        // daemon is down): nothing to read, keep going.
        ErrorKind::Interrupted | ErrorKind::ConnectionRefused => Ok(Unread::Retry),
        _ => Err(e).context("recvmmsg"),
    }
}

/// Reads up to [`UDP_BATCHES_PER_TURN`] batches; returns whether more may be waiting.
fn read_udp(
    sockets: &Sockets,
    engine: &mut Engine,
    epoch: u64,
    bufs: &mut Vec<BufId>,
    received: &mut Vec<Received>,
) -> Result<bool> {
    for _ in 0..UDP_BATCHES_PER_TURN {
        while bufs.len() < BATCH {
            match engine.alloc() {
                Some(b) => bufs.push(b),
                None => break,
            }
        }
        if bufs.is_empty() {
            // Out of buffers: leave the datagrams to the kernel for now.
            return Ok(true);
        }
        received.clear();
        if let Err(e) = sockets.recv_batch(engine.pool_mut(), bufs, received) {
            match recv_error(e)? {
                Unread::Empty => return Ok(false),
                Unread::Retry => continue,
            }
        }
        let now = monotonic_ps() - epoch;
        let got = received.len();
        engine.counters_mut().udp_rx_reads += got as u64;
        bufs.drain(..got);
        for r in received.iter() {
            engine.receive_datagram(now, r.from, r.buf, r.len, r.truncated);
        }
        engine.pump(now);
        if got < BATCH {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Reads up to [`UDP_BATCHES_PER_TURN`] batches of coalesced reads (UDP GRO), cutting
/// each into its datagrams; returns whether more may be waiting.
fn read_udp_coalesced(
    sockets: &mut Sockets,
    engine: &mut Engine,
    epoch: u64,
    reads: &mut Vec<Coalesced>,
) -> Result<bool> {
    for _ in 0..UDP_BATCHES_PER_TURN {
        reads.clear();
        if let Err(e) = sockets.recv_coalesced(reads) {
            match recv_error(e)? {
                Unread::Empty => return Ok(false),
                Unread::Retry => continue,
            }
        }
        let now = monotonic_ps() - epoch;
        engine.counters_mut().udp_rx_reads += reads.len() as u64;
        for r in reads.iter() {
            let data = &sockets.coalesced(r.index)[..r.len];
            let count = data.len().div_ceil(r.segment.max(1));
            for (i, datagram) in data.chunks(r.segment.max(1)).enumerate() {
                // No buffer: `alloc` counts the datagram dropped; so for the rest.
                let Some(b) = engine.alloc() else {
                    continue;
                };
                let raw = engine.pool_mut().raw_mut(b);
                // Longer than a buffer: copy what fits and let the engine count it.
                let n = datagram.len().min(raw.len());
                raw[..n].copy_from_slice(&datagram[..n]);
                // A read cut short cuts only its last datagram.
                let truncated = (r.truncated && i + 1 == count) || n < datagram.len();
                engine.receive_datagram(now, r.from, b, n, truncated);
            }
        }
        engine.pump(now);
        if reads.len() < GRO_BATCH {
            return Ok(false);
        }
    }
    Ok(true)
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// Reads up to [`NATIVE_READS_PER_TURN`] datagrams from local applications; returns
/// whether more may be waiting. Payloads the engine refuses are answered with BUSY or
/// REJECT, so the application knows.
fn read_native(
    native: &mut NativeIo,
    registry: &mio::Registry,
    engine: &mut Engine,
    epoch: u64,
) -> Result<bool> {
    for _ in 0..NATIVE_READS_PER_TURN {
        if !deliver_pending_reply(native) {
            // Resumed by the application's socket turning writable.
            return Ok(false);
        }
        let Some(b) = engine.alloc() else {
            return Ok(true);
        };
        // The buffer holds a whole inner MTU and more after NATIVE_AT; a longer
        // datagram fills it, which the engine counts as too large.
        let (n, from) = match native
            .sock
            .recv_from(&mut engine.pool_mut().raw_mut(b)[NATIVE_AT..])
        {
            Ok(r) => r,
            Err(e) => {
                engine.pool_mut().free(b);
                match e.kind() {
                    ErrorKind::WouldBlock => return Ok(false),
                    ErrorKind::Interrupted => continue,
                    _ => return Err(e).context("native socket read"),
                }
            }
        };
        let outcome = engine.handle_native(monotonic_ps() - epoch, b, n);
        if outcome == NativeOutcome::Malformed {
            continue;
        }
        if let Some(path) = from.as_pathname() {
            native.heard_from(path, registry);
        }
        let reply = match outcome {
            NativeOutcome::Refused(h) => Some(h),
            NativeOutcome::Hello => Some(NativeHeader {
                kind: Kind::Hello,
                peer: Ipv4Addr::UNSPECIFIED,
                reason: None,
            }),
            NativeOutcome::Queued | NativeOutcome::Malformed => None,
        };
        if let (Some(h), Some(app)) = (reply, native.app.as_mut()) {
            app.pending = Some(h);
        }
    }
    Ok(deliver_pending_reply(native))
}

/// Sends the application its pending reply, if any; false while its receive queue
/// is full (it is then marked not writable, and epoll says when it drains).
fn deliver_pending_reply(native: &mut NativeIo) -> bool {
    let Some(app) = native.app.as_mut() else {
        return true;
    };
    let Some(h) = app.pending else {
        return true;
    };
    match app.out.send(&h.encode()) {
        Ok(_) => {
            app.pending = None;
            true
        }
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
            app.writable = false;
            false
        }
        Err(_) => {
            // The application went away; the refusal is counted either way.
            native.app = None;
            true
        }
    }
}

/// Hands delivered native payloads to the application while its socket takes them.
fn flush_native(native: Option<&mut NativeIo>, engine: &mut Engine) {
    let Some(native) = native else {
        // Native payloads are dropped (and counted) by the engine when the socket is
        // off; nothing can be queued here.
        return;
    };
    while let Some((id, src)) = engine.front_native() {
        let Some(app) = native.app.as_mut() else {
            engine.native_written(None);
            continue;
        };
        if !app.writable {
            return;
        }
        match app.out.send(engine.stamp_native(id, src)) {
            Ok(_) => engine.native_written(Some(true)),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                app.writable = false;
                return;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                // The application went away: whatever waits for it has nobody to go to.
                native.app = None;
                engine.native_written(Some(false));
            }
        }
    }
}

/// Reads up to [`TUN_READS_PER_TURN`] packets; returns whether more may be waiting.
fn read_tun(
    tun: &Tun,
    engine: &mut Engine,
    epoch: u64,
    inner_mtu: usize,
    scratch: &mut [u8],
) -> Result<bool> {
    for _ in 0..TUN_READS_PER_TURN {
        if !tun.offload() {
            let Some(b) = engine.alloc() else {
                return Ok(true);
            };
            match tun.read(&mut engine.pool_mut().raw_mut(b)[INNER..]) {
                Ok(n) => engine.handle_tun(monotonic_ps() - epoch, b, n),
                Err(e) => {
                    engine.pool_mut().free(b);
                    if !tun_read_error(e)? {
                        return Ok(false);
                    }
                }
            }
            continue;
        }
        let n = match tun.read(scratch) {
            Ok(n) => n,
            Err(e) => {
                if tun_read_error(e)? {
                    continue;
                }
                return Ok(false);
            }
        };
        let mut sink = TunSink {
            engine,
            now: monotonic_ps() - epoch,
            inner_mtu,
            pending: None,
        };
        if gso::segment(&scratch[..n], inner_mtu, &mut sink).is_err() {
            engine.counters_mut().drop_tun_malformed += 1;
        }
    }
    Ok(true)
}

/// Lends pool buffers to [`gso::segment`] and hands each packet built in one to the
/// engine.
struct TunSink<'a> {
    engine: &'a mut Engine,
    now: u64,
    inner_mtu: usize,
    /// The buffer lent last, and the length asked for.
    pending: Option<(BufId, usize)>,
}

impl gso::SegmentSink for TunSink<'_> {
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        if len > self.inner_mtu {
            self.engine.counters_mut().drop_too_large += 1;
            return None;
        }
        let b = self.engine.alloc()?;
        self.pending = Some((b, len));
        Some(&mut self.engine.pool_mut().raw_mut(b)[INNER..INNER + len])
    }

    fn commit(&mut self) {
        if let Some((b, len)) = self.pending.take() {
            self.engine.handle_tun(self.now, b, len);
        }
    }
}

/// Classifies a TUN read error: `Ok(true)` to retry, `Ok(false)` when nothing is
/// waiting, an error for anything else.
fn tun_read_error(e: io::Error) -> Result<bool> {
    match e.kind() {
        ErrorKind::WouldBlock => Ok(false),
        ErrorKind::Interrupted => Ok(true),
        _ => Err(io::Error::new(e.kind(), format!("TUN read: {e}")).into()),
    }
}

/// What the event loop keeps between flushes: the datagram batch, the path (source
/// socket) the next batch leaves by, and the TUN write coalescer.
struct Output {
    outgoing: Vec<Datagram>,
    next_path: usize,
    gro: TunGro,
}

impl Output {
    /// Hands everything the engine released to the network, the TUN device and the
    /// native application.
    fn flush(
        &mut self,
        sockets: &Sockets,
        tun: &Tun,
        engine: &mut Engine,
        native: Option<&mut NativeIo>,
    ) {
        let Self {
            outgoing,
            next_path,
            gro,
        } = self;
        flush_network(sockets, tun, engine, outgoing, next_path, gro);
        flush_native(native, engine);
    }
}

/// Writes every inner packet the engine has released, then sends every datagram.
///
/// Deliveries go first: a reply the kernel makes to a delivered packet (a TCP ACK, an
/// echo reply) is then ready by the next turn, and the application's wakeup does not
/// wait behind this turn's sends, each of which on a veth runs the peer's receive path.
fn flush_network(
    sockets: &Sockets,
    tun: &Tun,
    engine: &mut Engine,
    outgoing: &mut Vec<Datagram>,
    next_path: &mut usize,
    gro: &mut TunGro,
) {
    flush_tun(tun, engine, gro);
    flush_datagrams(sockets, engine, outgoing, next_path);
}

/// Sends every datagram the engine has released.
///
/// All datagrams of one flush leave through one socket, and the next flush uses the
/// next: spraying moves from packet to packet train. Sending each packet from its own
/// path id's socket would cost one system call per datagram, the dearest thing the
/// daemon does; trains of a few packets spread over the paths as well. Per-path
/// statistics and path avoidance need the route a packet took to be its header's
/// path id, so with either on, each run of DATA and RTS datagrams with one path id
/// goes through that path's socket (control datagrams, which name no path, join the
/// run they are in), at up to a system call per datagram.
fn flush_datagrams(
    sockets: &Sockets,
    engine: &mut Engine,
    outgoing: &mut Vec<Datagram>,
    next_path: &mut usize,
) {
    let paths = sockets.paths();
    let per_packet = engine.sends_on_header_paths();
    while engine.datagrams_pending() > 0 {
        outgoing.clear();
        while outgoing.len() < outgoing.capacity() {
            match engine.pop_datagram() {
                Some(d) => outgoing.push(d),
                None => break,
            }
        }
        let header_path = |d: &Datagram| path_id_of(&d.header).map(|p| usize::from(p) % paths);
        let mut start = 0;
        while start < outgoing.len() {
            let (path, end) = if per_packet {
                let path = header_path(&outgoing[start]).unwrap_or(*next_path);
                let run = outgoing[start..]
                    .iter()
                    .take_while(|d| header_path(d).is_none_or(|p| p == path))
                    .count();
                (path, start + run)
            } else {
                (*next_path, outgoing.len())
            };
            *next_path = (path + 1) % paths;
            let run = &outgoing[start..end];
            let bytes: usize = run
                .iter()
                .map(|d| d.header.len() + d.payload.map_or(0, |b| engine.pool().inner(b).len()))
                .sum();
            let sent = sockets.send_all(engine.pool(), run, path);
            engine.record_path_bytes(path, bytes as u64);
            let c = engine.counters_mut();
            c.udp_tx_datagrams += (run.len() - sent.refused) as u64;
            c.udp_tx_messages += sent.messages as u64;
            c.drop_send_error += sent.refused as u64;
            start = end;
        }
    }
}

/// Writes every inner packet the engine has released to the TUN device.
fn flush_tun(tun: &Tun, engine: &mut Engine, gro: &mut TunGro) {
    if !tun.offload() {
        while let Some(b) = engine.pop_tun() {
            let ok = tun.write(engine.pool().inner(b)).is_ok();
            engine.tun_written(b, ok);
        }
        return;
    }
    // With offloads, runs of one TCP flow's segments go as one write (gro.rs).
    while let Some(b) = engine.pop_tun() {
        if gro.coalescer.push(engine.pool().inner(b)) {
            gro.run.push(b);
            continue;
        }
        write_run(tun, engine, gro);
        if gro.coalescer.push(engine.pool().inner(b)) {
            gro.run.push(b);
        } else {
            let ok = tun.write(engine.pool().inner(b)).is_ok();
            engine.tun_written(b, ok);
        }
    }
    write_run(tun, engine, gro);
}

/// The TUN write coalescer and the buffers of its pending run.
#[derive(Default)]
struct TunGro {
    coalescer: Coalescer,
    run: Vec<BufId>,
}

/// Writes the coalescer's pending run, if any, gathered from its headers and the
/// payloads in the packet buffers, and gives the buffers back.
fn write_run(tun: &Tun, engine: &mut Engine, gro: &mut TunGro) {
    if let Some(run) = gro.coalescer.take() {
        let pool = engine.pool();
        let payloads = gro.run.iter().map(|&b| &pool.inner(b)[run.headers..]);
        let ok = tun.write_gathered(run.header, payloads).is_ok();
        for b in gro.run.drain(..) {
            engine.tun_written(b, ok);
        }
    }
}
