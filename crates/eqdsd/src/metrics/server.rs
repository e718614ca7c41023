//! The metrics endpoint: a small HTTP/1.0 server on its own thread, so that no client
//! of the metrics port can hold up the data path.
//!
//! # Why a thread, and how it gets fresh numbers
//!
//! The event loop owns the protocol state and must never wait for anything but its own
//! sockets. It used to answer scrapes itself with blocking reads, and one client that
//! sent a byte every 150 ms stopped every tunnel of the host (issue 24). Here the
//! metrics thread does all the socket work (accepting, reading requests, writing
//! answers, timing clients out) and the event loop only copies its numbers out when
//! asked:
//!
//! 1. A client's whole request is in. The metrics thread asks for a snapshot by
//!    calling the request hook, which in the daemon wakes the event loop's poll (a
//!    `mio::Waker`, one eventfd write).
//! 2. On its next turn the event loop copies its counters into a [`Snapshot`] (no
//!    formatting; linear in the peers known, a few microseconds for a few dozen:
//!    with many thousands of peers the interval below would have to grow with the
//!    table) and hands it over with [`Publisher::publish`]:
//!    a channel send and a wakeup of this thread, neither of which can block.
//! 3. This thread renders the snapshot (`prometheus-client`) and answers every
//!    request that was waiting for it.
//!
//! Snapshots on request rather than published periodically: a periodic snapshot costs
//! the data path all the time, scraped or not, and is up to a period old when read;
//! on request the data path pays only when someone scrapes, and every answer reflects
//! the daemon after the request arrived (tests poll a counter until it moves). One
//! request is outstanding at a time, every client waiting by then shares its
//! snapshot, and requests are at least [`Limits::min_snapshot_interval`] apart, so
//! however many clients scrape however often, the data path spends at most one
//! snapshot per interval.
//!
//! # What a client can do
//!
//! Nothing it does reaches the data path; on this thread it is bounded:
//! - a request (line and headers) longer than [`Limits::max_request_bytes`] is
//!   answered 431 and the connection closed;
//! - each connection has [`Limits::deadline`] from its accept to its close, whatever
//!   it is doing: a client that sends its request slowly (slow loris), or reads its
//!   answer slowly, or never closes, is cut off then (408 if its request was not in);
//! - at most [`Limits::max_connections`] are open. One more evicts a connection whose
//!   request is not yet in, the oldest first (else the oldest of all): idle
//!   connections cannot lock a scraper out, and a scrape, which sends its request at
//!   once, is served in well under a millisecond after its accept.
//!
//! The thread also leaves any real-time scheduling class the daemon runs in, so that
//! even a flood of connections takes CPU only from ordinary tasks, never from the
//! data path.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use tracing::{debug, error, warn};

use super::{render_with, ServerStats, Snapshot, CONTENT_TYPE};

/// What the metrics thread renders: numbers the event loop copied out, formatted here,
/// off the data path. The daemon's is [`Snapshot`]; `eqds-switch` serves its own
/// through the same server.
pub trait Exposition: Send + 'static {
    /// The Prometheus text (version 0.0.4) of these numbers and of the server's own
    /// `server` counters.
    fn render(self, server: &ServerStats) -> String;
}

impl Exposition for Snapshot {
    fn render(self, server: &ServerStats) -> String {
        render_with(self, server)
    }
}

/// The metrics server's bounds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Bytes of request line and headers.
    pub max_request_bytes: usize,
    /// Time from a connection's accept to its close.
    pub deadline: Duration,
    /// Least time between two snapshot requests to the event loop.
    pub min_snapshot_interval: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 16,
            // A scraper's request is a few hundred bytes.
            max_request_bytes: 8192,
            // Loopback scrapes take well under a millisecond.
            deadline: Duration::from_secs(2),
            // At most 200 snapshots a second, whatever the clients do.
            min_snapshot_interval: Duration::from_millis(5),
        }
    }
}

/// The event loop's end: hands snapshots to the metrics thread. Never blocks.
#[derive(Debug)]
pub struct Publisher<S = Snapshot> {
    tx: mpsc::Sender<S>,
    waker: Arc<Waker>,
}

impl<S> Publisher<S> {
    /// Hands `snapshot` to the metrics thread (if it is still there).
    pub fn publish(&self, snapshot: S) {
        if self.tx.send(snapshot).is_ok() {
            // An eventfd write; fails only if the thread's poll is gone.
            let _ = self.waker.wake();
        }
    }
}

/// The running metrics thread; dropping it stops the thread.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.waker.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
/// Connection `i` is `Token(FIRST_CONN + i)`.
const FIRST_CONN: usize = 2;

/// Starts the metrics thread on `listener`. `request` asks the event loop for a
/// snapshot (it must not block; the daemon's wakes the loop's poll), which the loop
/// answers through the returned [`Publisher`].
pub fn spawn<S: Exposition>(
    listener: std::net::TcpListener,
    request: impl Fn() + Send + 'static,
    limits: Limits,
) -> io::Result<(Server, Publisher<S>)> {
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let mut listener = TcpListener::from_std(listener);
    let poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    let (tx, rx) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let state = Thread {
        poll,
        listener,
        rx,
        request: Box::new(request),
        limits,
        stop: Arc::clone(&stop),
        conns: (0..limits.max_connections.max(1)).map(|_| None).collect(),
        requested: 0,
        outstanding: None,
        next_request: Instant::now(),
        stats: ServerStats::default(),
    };
    let thread = std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            // The data path may run SCHED_FIFO; this thread must never compete with it.
            if let Err(e) = crate::sys::background_priority() {
                warn!("metrics: could not lower the metrics thread's priority: {e}");
            }
            if let Err(e) = state.run() {
                error!("metrics: the metrics server stopped: {e}");
            }
        })?;
    Ok((
        Server {
            addr,
            stop,
            waker: Arc::clone(&waker),
            thread: Some(thread),
        },
        Publisher { tx, waker },
    ))
}

/// Where a connection is.
#[derive(Debug)]
enum Phase {
    /// Reading the request into `request`.
    Reading,
    /// The request is in; waiting for the snapshot of request number `ticket` (none
    /// yet: the next one).
    Waiting { ticket: Option<u64> },
    /// Writing `out` from `at`; then `Draining`.
    Writing { out: Vec<u8>, at: usize },
    /// Answered and shut down for writing: reading (and discarding) until the client
    /// closes, so that unread request bytes do not turn the close into a reset that
    /// could destroy the answer before the client read it.
    Draining,
}

#[derive(Debug)]
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    accepted: Instant,
    phase: Phase,
    request: Vec<u8>,
}

/// Why a connection was cut off.
#[derive(Debug, Clone, Copy)]
enum Cut {
    Deadline,
    TooLarge,
    Evicted,
}

impl Cut {
    /// The `reason` label of `eqdsd_metrics_connections_cut_total`.
    fn label(self) -> &'static str {
        match self {
            Cut::Deadline => "deadline",
            Cut::TooLarge => "too_large",
            Cut::Evicted => "evicted",
        }
    }
}

struct Thread<S> {
    poll: Poll,
    listener: TcpListener,
    rx: mpsc::Receiver<S>,
    request: Box<dyn Fn() + Send>,
    limits: Limits,
    stop: Arc<AtomicBool>,
    conns: Vec<Option<Conn>>,
    /// Snapshot requests made so far.
    requested: u64,
    /// When the outstanding request (number `requested`) was made.
    outstanding: Option<Instant>,
    /// No request before this.
    next_request: Instant,
    stats: ServerStats,
}

impl<S: Exposition> Thread<S> {
    fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(64);
        loop {
            let timeout = self.next_wakeup().map(|t| {
                // Round up: waking a hair early would only spin.
                t.saturating_duration_since(Instant::now()) + Duration::from_micros(100)
            });
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if self.stop.load(Ordering::Acquire) {
                return Ok(());
            }
            let mut snapshot = None;
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept(),
                    WAKER => {
                        while let Ok(s) = self.rx.try_recv() {
                            snapshot = Some(s);
                        }
                    }
                    Token(t) => self.advance(t - FIRST_CONN),
                }
            }
            if let Some(s) = snapshot {
                self.answer(s);
            }
            self.maybe_request();
            self.expire();
        }
    }

    /// The earliest of the connections' deadlines and the time the next snapshot
    /// request may be made (for a waiting client, once none is outstanding, or the
    /// outstanding one is taken for lost).
    fn next_wakeup(&self) -> Option<Instant> {
        let deadlines = self
            .conns
            .iter()
            .flatten()
            .map(|c| c.accepted + self.limits.deadline);
        let request = match self.outstanding {
            // The snapshot's arrival wakes the thread.
            Some(at) => Some(at + self.limits.deadline),
            None => self.unrequested().then_some(self.next_request),
        };
        deadlines.chain(request).min()
    }

    /// Whether a connection waits for a snapshot not yet asked for.
    fn unrequested(&self) -> bool {
        self.conns
            .iter()
            .flatten()
            .any(|c| matches!(c.phase, Phase::Waiting { ticket: None }))
    }

    fn accept(&mut self) {
        loop {
            let (stream, peer) = match self.listener.accept() {
                Ok(c) => c,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of file descriptors, say: the client stays in the backlog
                    // and is accepted with the next one.
                    debug!("metrics: accept: {e}");
                    return;
                }
            };
            let slot = match self.conns.iter().position(Option::is_none) {
                Some(i) => i,
                None => {
                    let victim = self.victim();
                    self.cut(victim, Cut::Evicted);
                    victim
                }
            };
            let mut conn = Conn {
                stream,
                peer,
                accepted: Instant::now(),
                phase: Phase::Reading,
                request: Vec::new(),
            };
            let token = Token(FIRST_CONN + slot);
            let interest = Interest::READABLE | Interest::WRITABLE;
            if let Err(e) = self
                .poll
                .registry()
                .register(&mut conn.stream, token, interest)
            {
                debug!("metrics: registering {peer}: {e}");
                continue;
            }
            self.conns[slot] = Some(conn);
            self.advance(slot);
        }
    }

    /// The connection to evict for a new one: the oldest whose request is not in, or
    /// failing that the oldest.
    fn victim(&self) -> usize {
        let oldest = |reading: bool| {
            self.conns
                .iter()
                .enumerate()
                .filter_map(|(i, c)| Some((i, c.as_ref()?)))
                .filter(|(_, c)| !reading || matches!(c.phase, Phase::Reading))
                .min_by_key(|(_, c)| c.accepted)
                .map(|(i, _)| i)
        };
        oldest(true).or_else(|| oldest(false)).unwrap_or(0)
    }

    /// Closes connection `slot`, counting why.
    fn cut(&mut self, slot: usize, why: Cut) {
        let Some(mut conn) = self.conns[slot].take() else {
            return;
        };
        if matches!(conn.phase, Phase::Draining) {
            // Answered already; the client just has not closed yet.
            self.close(conn);
            return;
        }
        match why {
            Cut::Deadline => self.stats.deadline += 1,
            Cut::TooLarge => self.stats.too_large += 1,
            Cut::Evicted => self.stats.evicted += 1,
        }
        debug!(peer = %conn.peer, reason = why.label(), "metrics: connection cut off");
        if matches!(why, Cut::Deadline) && matches!(conn.phase, Phase::Reading) {
            // Best effort, never waiting: the client should know why.
            let _ = conn.stream.write(&status_only("408 Request Timeout"));
        }
        self.close(conn);
    }

    fn close(&mut self, mut conn: Conn) {
        let _ = self.poll.registry().deregister(&mut conn.stream);
    }

    /// Does whatever connection `slot` can do now, until it would block.
    fn advance(&mut self, slot: usize) {
        let Some(mut conn) = self.conns.get_mut(slot).and_then(Option::take) else {
            return;
        };
        match self.step(&mut conn) {
            Ok(true) => self.conns[slot] = Some(conn),
            Ok(false) => self.close(conn),
            Err(Cut::TooLarge) => {
                self.stats.too_large += 1;
                let reason = Cut::TooLarge.label();
                debug!(peer = %conn.peer, reason, "metrics: connection cut off");
                conn.phase = Phase::Writing {
                    out: status_only("431 Request Header Fields Too Large"),
                    at: 0,
                };
                match self.step(&mut conn) {
                    Ok(true) => self.conns[slot] = Some(conn),
                    _ => self.close(conn),
                }
            }
            Err(why) => {
                self.conns[slot] = Some(conn);
                self.cut(slot, why);
            }
        }
    }

    /// Moves `conn` on; false when it is finished (closed by the client, failed, or
    /// done).
    fn step(&self, conn: &mut Conn) -> Result<bool, Cut> {
        loop {
            match conn.phase {
                Phase::Reading => match read_request(conn, self.limits.max_request_bytes)? {
                    None => return Ok(true),
                    Some(Request::Eof) => return Ok(false),
                    Some(Request::Metrics) => {
                        conn.phase = Phase::Waiting { ticket: None };
                        return Ok(true);
                    }
                    Some(Request::Other(status)) => {
                        conn.phase = Phase::Writing {
                            out: status_only(status),
                            at: 0,
                        };
                    }
                },
                Phase::Waiting { .. } => return Ok(true),
                Phase::Writing { .. } => {
                    if !write_out(conn) {
                        return Ok(true);
                    }
                    let _ = conn.stream.shutdown(Shutdown::Write);
                    conn.phase = Phase::Draining;
                }
                Phase::Draining => return Ok(drain(conn)),
            }
        }
    }

    /// Asks the event loop for a snapshot if a connection waits for one, none is
    /// outstanding and the last request was long enough ago. An outstanding request
    /// older than the deadline is taken for lost (it never is, unless the loop has
    /// stopped) so that scrapes do not wait on it forever.
    fn maybe_request(&mut self) {
        let now = Instant::now();
        if let Some(at) = self.outstanding {
            if now.duration_since(at) < self.limits.deadline {
                return;
            }
            self.outstanding = None;
        }
        if now < self.next_request || !self.unrequested() {
            return;
        }
        self.requested += 1;
        for conn in self.conns.iter_mut().flatten() {
            if let Phase::Waiting { ticket: t @ None } = &mut conn.phase {
                *t = Some(self.requested);
            }
        }
        self.outstanding = Some(now);
        self.next_request = now + self.limits.min_snapshot_interval;
        (self.request)();
    }

    /// Answers every connection waiting for the outstanding request with `snapshot`.
    fn answer(&mut self, snapshot: S) {
        self.outstanding = None;
        let answered = self.requested;
        let waiting: Vec<usize> = (0..self.conns.len())
            .filter(|&i| {
                self.conns[i].as_ref().is_some_and(
                    |c| matches!(c.phase, Phase::Waiting { ticket: Some(t) } if t <= answered),
                )
            })
            .collect();
        if waiting.is_empty() {
            return;
        }
        let body = snapshot.render(&self.stats);
        let head = format!(
            "HTTP/1.0 200 OK\r\nContent-Type: {CONTENT_TYPE}\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            body.len()
        );
        for slot in waiting {
            if let Some(conn) = self.conns[slot].as_mut() {
                let mut out = Vec::with_capacity(head.len() + body.len());
                out.extend_from_slice(head.as_bytes());
                out.extend_from_slice(body.as_bytes());
                conn.phase = Phase::Writing { out, at: 0 };
            }
            self.advance(slot);
        }
    }

    /// Cuts off every connection past its deadline.
    fn expire(&mut self) {
        let now = Instant::now();
        for slot in 0..self.conns.len() {
            let late = self.conns[slot]
                .as_ref()
                .is_some_and(|c| now >= c.accepted + self.limits.deadline);
            if late {
                self.cut(slot, Cut::Deadline);
            }
        }
    }
}

/// Writes what is left of a `Writing` connection's answer; true once all is written
/// (or the client is gone: the drain that follows finds it closed), false while the
/// socket is full.
fn write_out(conn: &mut Conn) -> bool {
    let Phase::Writing { out, at } = &mut conn.phase else {
        return true;
    };
    while *at < out.len() {
        match conn.stream.write(&out[*at..]) {
            Ok(n) => *at += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return true,
        }
    }
    true
}

/// Reads and discards until the client closes; false once it has (or failed).
fn drain(conn: &mut Conn) -> bool {
    let mut sink = [0u8; 4096];
    loop {
        match conn.stream.read(&mut sink) {
            Ok(0) => return false,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// What a complete request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    /// `GET /metrics` (or `GET /`).
    Metrics,
    /// Anything else: the status line to answer with.
    Other(&'static str),
    /// The client closed before sending a whole request.
    Eof,
}

/// Reads what `conn` has sent; the request once it is complete (line and headers up
/// to the blank line, or an HTTP/0.9 request line without a version), None while it
/// is not, or [`Cut::TooLarge`] past `limit` bytes.
fn read_request(conn: &mut Conn, limit: usize) -> Result<Option<Request>, Cut> {
    let mut chunk = [0u8; 1024];
    loop {
        // Never more than one byte past the limit: enough to know it was exceeded.
        let room = (limit + 1)
            .saturating_sub(conn.request.len())
            .min(chunk.len());
        match conn.stream.read(&mut chunk[..room]) {
            Ok(0) => return Ok(Some(Request::Eof)),
            Ok(n) => conn.request.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(None),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return Ok(Some(Request::Eof)),
        }
        if let Some(request) = parse(&conn.request) {
            return Ok(Some(request));
        }
        if conn.request.len() > limit {
            return Err(Cut::TooLarge);
        }
    }
}

/// The request in `bytes`, if they hold a complete one.
fn parse(bytes: &[u8]) -> Option<Request> {
    let line_end = bytes.iter().position(|&b| b == b'\n')?;
    let line = String::from_utf8_lossy(&bytes[..line_end]);
    let mut words = line.split_whitespace();
    let (method, target, version) = (words.next(), words.next(), words.next());
    // An HTTP/1.x request ends at its blank line; a version-less (0.9) one at its line.
    let complete = version.is_none()
        || bytes.windows(4).any(|w| w == b"\r\n\r\n")
        || bytes.windows(2).any(|w| w == b"\n\n");
    if !complete {
        return None;
    }
    let path = target.unwrap_or("").split('?').next().unwrap_or("");
    Some(match (method, path) {
        (Some("GET"), "/metrics" | "/") => Request::Metrics,
        (Some("GET"), _) => Request::Other("404 Not Found"),
        _ => Request::Other("405 Method Not Allowed"),
    })
}

/// A response with a status and a one-line body naming it.
fn status_only(status: &str) -> Vec<u8> {
    let body = format!("{status}: eqdsd serves GET /metrics\n");
    format!(
        "HTTP/1.0 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests;
