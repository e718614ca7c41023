//! eqdsperf: throughput and round-trip latency over eqdsd's native interface.
//!
//! Both ends talk to their local daemon through its native Unix socket
//! (`native.socket`); the daemons carry the payloads as native EQDS DATA. The server
//! counts what arrives and echoes pings; the client sends for `--time` seconds, then
//! asks the server what it received, so both sides' byte counts are reported.
//!
//! Payload layout (after the daemon's 8-byte native header), big endian:
//! `type:u8, reserved:3, session:u32, a:u64, b:u64, c:u64`, padded to `--size`.
//! DATA: a = sequence number. PING/PONG: a = sequence number, b = send time (ns).
//! END: a = packets, b = bytes the client's daemon took. REPORT: a = packets, b =
//! bytes, c = nanoseconds from the session's first to its last DATA at the server.

#![deny(unsafe_code)]

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::Ipv4Addr;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use eqdsd::native::{self, Kind, NativeHeader, NATIVE_HEADER_LEN};

const DATA: u8 = 1;
const PING: u8 = 2;
const PONG: u8 = 3;
const END: u8 = 4;
const REPORT: u8 = 5;
/// Smallest payload: the message header.
const MSG_LEN: usize = 32;
/// Largest datagram read.
const RECV_MAX: usize = 70_000;

#[derive(Parser)]
#[command(
    name = "eqdsperf",
    about = "Throughput and latency between two eqdsd daemons over their native interface"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Count what arrives and answer pings, until SIGINT or SIGTERM.
    Server {
        /// The local daemon's native socket (`native.socket`).
        #[arg(long)]
        socket: PathBuf,
        /// This program's own socket [default: SOCKET.eqdsperf-PID].
        #[arg(long)]
        bind: Option<PathBuf>,
        /// One JSON object per line instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Send to a server for a while and report throughput, or ping-pong RTTs.
    Client {
        /// The local daemon's native socket (`native.socket`).
        #[arg(long)]
        socket: PathBuf,
        /// The server's daemon: its tunnel IPv4 address.
        #[arg(long)]
        to: Ipv4Addr,
        /// Seconds to run.
        #[arg(long, default_value_t = 5.0)]
        time: f64,
        /// Payload bytes per datagram (32 up to the daemon's inner MTU).
        #[arg(long, default_value_t = 1400)]
        size: usize,
        /// Ping-pong one message at a time and report round-trip times.
        #[arg(long)]
        latency: bool,
        /// This program's own socket [default: SOCKET.eqdsperf-PID].
        #[arg(long)]
        bind: Option<PathBuf>,
        /// A JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Server { socket, bind, json } => server(Endpoint::open(&socket, bind)?, json),
        Command::Client {
            socket,
            to,
            time,
            size,
            latency,
            bind,
            json,
        } => {
            if !(MSG_LEN..=65_000).contains(&size) {
                bail!("--size must be {MSG_LEN}..=65000 bytes");
            }
            if !(time > 0.0 && time <= 86_400.0) {
                bail!("--time must be in (0, 86400] seconds");
            }
            let mut ep = Endpoint::open(&socket, bind)?;
            let run = Duration::from_secs_f64(time);
            if latency {
                let r = ping_pong(&mut ep, to, run, size)?;
                print_latency(&r, to, size, json);
            } else {
                let r = blast(&mut ep, to, run, size)?;
                print_throughput(&r, to, size, json);
            }
            Ok(())
        }
    }
}

/// This program's bound socket, talking to the daemon's; removed on drop.
struct Endpoint {
    sock: UnixDatagram,
    daemon: PathBuf,
    own: PathBuf,
    buf: Vec<u8>,
}

/// One datagram from the daemon.
enum Incoming<'a> {
    Data(Ipv4Addr, &'a [u8]),
    Busy,
    Reject(String),
    /// The daemon's answer to our HELLO: it has handled everything we sent before.
    Hello,
}

impl Endpoint {
    fn open(daemon: &Path, bind: Option<PathBuf>) -> Result<Self> {
        let own = bind.unwrap_or_else(|| {
            let mut p = daemon.as_os_str().to_owned();
            p.push(format!(".eqdsperf-{}", std::process::id()));
            PathBuf::from(p)
        });
        let _ = std::fs::remove_file(&own);
        let sock =
            UnixDatagram::bind(&own).with_context(|| format!("binding {}", own.display()))?;
        let ep = Self {
            sock,
            daemon: daemon.to_owned(),
            own,
            buf: vec![0; RECV_MAX],
        };
        ep.hello()
            .with_context(|| format!("no daemon at {}", ep.daemon.display()))?;
        Ok(ep)
    }

    fn hello(&self) -> std::io::Result<usize> {
        let hello = NativeHeader {
            kind: Kind::Hello,
            peer: Ipv4Addr::UNSPECIFIED,
            reason: None,
        };
        self.sock.send_to(&hello.encode(), &self.daemon)
    }

    /// Waits until the daemon has handled every datagram sent so far: it answers a
    /// HELLO after the BUSY and REJECT replies to what came before it. Returns the
    /// BUSY replies seen meanwhile.
    fn sync(&mut self) -> Result<u64> {
        self.hello()
            .with_context(|| format!("sending HELLO to {}", self.daemon.display()))?;
        let mut busy = 0;
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            match self.recv()? {
                Some(Incoming::Hello) => return Ok(busy),
                Some(Incoming::Busy) => busy += 1,
                Some(Incoming::Reject(why)) => bail!("the daemon rejected a payload: {why}"),
                Some(Incoming::Data(..)) => {}
                None => std::thread::sleep(Duration::from_micros(100)),
            }
        }
        bail!("the daemon did not answer HELLO within 10 s")
    }

    /// Sends `payload` to `peer`; `false` if the socket would block.
    fn send(&self, peer: Ipv4Addr, datagram: &mut [u8]) -> Result<bool> {
        datagram[..NATIVE_HEADER_LEN].copy_from_slice(&NativeHeader::data(peer).encode());
        match self.sock.send_to(datagram, &self.daemon) {
            Ok(_) => Ok(true),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                Ok(false)
            }
            Err(e) => Err(e).with_context(|| format!("sending to {}", self.daemon.display())),
        }
    }

    /// The next datagram, or `None` when none came (non-blocking, or timed out).
    fn recv(&mut self) -> Result<Option<Incoming<'_>>> {
        let n = match self.sock.recv(&mut self.buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                return Ok(None)
            }
            Err(e) => return Err(e).context("receiving from the daemon"),
        };
        let Ok((h, payload)) = native::decode(&self.buf[..n]) else {
            return Ok(None);
        };
        Ok(Some(match h.kind {
            Kind::Data => Incoming::Data(h.peer, payload),
            Kind::Busy => Incoming::Busy,
            Kind::Reject => Incoming::Reject(format!("{:?} for {}", h.reason, h.peer)),
            Kind::Hello => Incoming::Hello,
        }))
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.own);
    }
}

/// A message in a datagram buffer (native header space first).
fn message(buf: &mut [u8], kind: u8, session: u32, a: u64, b: u64, c: u64) {
    let m = &mut buf[NATIVE_HEADER_LEN..];
    m[..4].copy_from_slice(&[kind, 0, 0, 0]);
    m[4..8].copy_from_slice(&session.to_be_bytes());
    m[8..16].copy_from_slice(&a.to_be_bytes());
    m[16..24].copy_from_slice(&b.to_be_bytes());
    m[24..32].copy_from_slice(&c.to_be_bytes());
}

/// (type, session, a, b, c) of a received payload.
fn parse(p: &[u8]) -> Option<(u8, u32, u64, u64, u64)> {
    if p.len() < MSG_LEN {
        return None;
    }
    let u64_at = |i: usize| u64::from_be_bytes(p[i..i + 8].try_into().expect("8 bytes"));
    let session = u32::from_be_bytes(p[4..8].try_into().expect("4 bytes"));
    Some((p[0], session, u64_at(8), u64_at(16), u64_at(24)))
}

#[derive(Default)]
struct Session {
    packets: u64,
    bytes: u64,
    first: Option<Instant>,
    last: Option<Instant>,
    reported: bool,
}

fn server(mut ep: Endpoint, json: bool) -> Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    ep.sock.set_read_timeout(Some(Duration::from_millis(200)))?;
    // Received payloads borrow the endpoint's buffer; answers go out on a clone.
    let sender = ep.sock.try_clone()?;
    let daemon = ep.daemon.clone();
    if !json {
        eprintln!(
            "eqdsperf server on {} (daemon {})",
            ep.own.display(),
            daemon.display()
        );
    }
    let mut sessions: HashMap<(Ipv4Addr, u32), Session> = HashMap::new();
    let mut reply = vec![0u8; RECV_MAX];
    while !stop.load(Ordering::Relaxed) {
        let Some(Incoming::Data(src, payload)) = ep.recv()? else {
            continue;
        };
        let now = Instant::now();
        let Some((kind, session, a, b, _)) = parse(payload) else {
            continue;
        };
        let len = payload.len();
        let answer = match kind {
            DATA => {
                let s = sessions.entry((src, session)).or_default();
                s.packets += 1;
                s.bytes += len as u64;
                s.first.get_or_insert(now);
                s.last = Some(now);
                None
            }
            PING => {
                reply[NATIVE_HEADER_LEN..NATIVE_HEADER_LEN + len].copy_from_slice(payload);
                reply[NATIVE_HEADER_LEN] = PONG;
                Some(NATIVE_HEADER_LEN + len)
            }
            END => {
                let s = sessions.entry((src, session)).or_default();
                let span = match (s.first, s.last) {
                    (Some(f), Some(l)) => l.duration_since(f).as_nanos() as u64,
                    _ => 0,
                };
                if !s.reported {
                    s.reported = true;
                    let gbps = rate_gbps(s.bytes, span);
                    if json {
                        println!(
                            "{{\"mode\":\"server\",\"peer\":\"{src}\",\"session\":{session},\
                             \"packets\":{},\"bytes\":{},\"seconds\":{:.6},\"gbit_per_s\":{gbps:.6},\
                             \"client_packets\":{a},\"client_bytes\":{b}}}",
                            s.packets,
                            s.bytes,
                            span as f64 / 1e9
                        );
                    } else {
                        println!(
                            "from {src} session {session}: {} packets, {} bytes in {:.3} s, \
                             {gbps:.4} Gbit/s (client's daemon took {a} packets, {b} bytes)",
                            s.packets,
                            s.bytes,
                            span as f64 / 1e9
                        );
                    }
                }
                message(&mut reply, REPORT, session, s.packets, s.bytes, span);
                Some(NATIVE_HEADER_LEN + MSG_LEN)
            }
            _ => None,
        };
        if let Some(n) = answer {
            reply[..NATIVE_HEADER_LEN].copy_from_slice(&NativeHeader::data(src).encode());
            // A refused answer (BUSY) is retried by the client, which times out.
            let _ = sender.send_to(&reply[..n], &daemon);
        }
    }
    Ok(())
}

fn rate_gbps(bytes: u64, nanos: u64) -> f64 {
    if nanos == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / nanos as f64
    }
}

fn session_id() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    nanos ^ std::process::id().rotate_left(16)
}

struct Throughput {
    seconds: f64,
    packets: u64,
    bytes: u64,
    busy: u64,
    server_packets: u64,
    server_bytes: u64,
    server_seconds: f64,
}

/// Sends for `run`, backing off when the daemon answers BUSY, then fetches the
/// server's count.
fn blast(ep: &mut Endpoint, to: Ipv4Addr, run: Duration, size: usize) -> Result<Throughput> {
    ep.sock.set_nonblocking(true)?;
    let session = session_id();
    let mut dgram = vec![0u8; NATIVE_HEADER_LEN + size];
    let (mut sent, mut busy) = (0u64, 0u64);
    let start = Instant::now();
    let deadline = start + run;
    while Instant::now() < deadline {
        message(&mut dgram, DATA, session, sent, 0, 0);
        if ep.send(to, &mut dgram)? {
            sent += 1;
        } else {
            // The daemon's socket is full: it is behind on reading.
            std::thread::sleep(Duration::from_micros(20));
        }
        let mut backoff = false;
        while let Some(m) = ep.recv()? {
            match m {
                Incoming::Busy => {
                    busy += 1;
                    backoff = true;
                }
                Incoming::Reject(why) => bail!("the daemon rejected the payload: {why}"),
                Incoming::Data(..) | Incoming::Hello => {}
            }
        }
        if backoff {
            // The send queue to the server is full: let it drain a little.
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    // The daemon may not have read the last payloads yet, nor told us which it
    // refused: the totals are final once it answers a HELLO sent behind them.
    busy += ep.sync()?;
    let packets = sent - busy;
    let bytes = packets * size as u64;
    // END travels behind the data in the same tunnel, in order: its REPORT counts all
    // of it. Retried while refused or unanswered.
    ep.sock.set_nonblocking(false)?;
    ep.sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut end = vec![0u8; NATIVE_HEADER_LEN + MSG_LEN];
    for _ in 0..50 {
        message(&mut end, END, session, packets, bytes, 0);
        ep.send(to, &mut end)?;
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until {
            match ep.recv()? {
                Some(Incoming::Data(_, p)) => {
                    if let Some((REPORT, s, a, b, c)) = parse(p) {
                        if s == session {
                            return Ok(Throughput {
                                seconds,
                                packets,
                                bytes,
                                busy,
                                server_packets: a,
                                server_bytes: b,
                                server_seconds: c as f64 / 1e9,
                            });
                        }
                    }
                }
                Some(Incoming::Busy) => break,
                Some(Incoming::Reject(why)) => bail!("the daemon rejected END: {why}"),
                Some(Incoming::Hello) | None => {}
            }
        }
    }
    bail!("no report from the server at {to} within 10 s");
}

fn print_throughput(r: &Throughput, to: Ipv4Addr, size: usize, json: bool) {
    let tx_gbps = r.bytes as f64 * 8.0 / r.seconds / 1e9;
    let rx_gbps = rate_gbps(r.server_bytes, (r.server_seconds * 1e9) as u64);
    let tx_pps = r.packets as f64 / r.seconds;
    let rx_pps = if r.server_seconds > 0.0 {
        r.server_packets as f64 / r.server_seconds
    } else {
        0.0
    };
    if json {
        println!(
            "{{\"mode\":\"throughput\",\"to\":\"{to}\",\"size\":{size},\
             \"seconds\":{:.6},\"packets\":{},\"bytes\":{},\"busy\":{},\
             \"gbit_per_s\":{tx_gbps:.6},\"packets_per_s\":{tx_pps:.1},\
             \"server_packets\":{},\"server_bytes\":{},\"server_seconds\":{:.6},\
             \"server_gbit_per_s\":{rx_gbps:.6},\"server_packets_per_s\":{rx_pps:.1}}}",
            r.seconds,
            r.packets,
            r.bytes,
            r.busy,
            r.server_packets,
            r.server_bytes,
            r.server_seconds
        );
    } else {
        println!("eqdsperf to {to}, {size}-byte payloads");
        println!(
            "  sent     {:>12} packets {:>14} bytes in {:.3} s: {tx_gbps:.4} Gbit/s, {tx_pps:.0} packets/s ({} refused busy, resent)",
            r.packets, r.bytes, r.seconds, r.busy
        );
        println!(
            "  received {:>12} packets {:>14} bytes in {:.3} s: {rx_gbps:.4} Gbit/s, {rx_pps:.0} packets/s",
            r.server_packets, r.server_bytes, r.server_seconds
        );
        if r.server_bytes != r.bytes {
            println!(
                "  MISMATCH: {} bytes taken, {} received",
                r.bytes, r.server_bytes
            );
        }
    }
}

struct Latency {
    rtts_ns: Vec<u64>,
    lost: u64,
    busy: u64,
}

/// One ping in flight at a time for `run`; a ping unanswered within a second is lost.
fn ping_pong(ep: &mut Endpoint, to: Ipv4Addr, run: Duration, size: usize) -> Result<Latency> {
    let session = session_id();
    let mut dgram = vec![0u8; NATIVE_HEADER_LEN + size];
    let mut r = Latency {
        rtts_ns: Vec::new(),
        lost: 0,
        busy: 0,
    };
    ep.sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    let start = Instant::now();
    let mut seq = 0u64;
    while start.elapsed() < run {
        seq += 1;
        let t0 = Instant::now();
        let stamp = start.elapsed().as_nanos() as u64;
        message(&mut dgram, PING, session, seq, stamp, 0);
        if !ep.send(to, &mut dgram)? {
            continue;
        }
        let mut answered = false;
        while t0.elapsed() < Duration::from_secs(1) {
            match ep.recv()? {
                Some(Incoming::Data(_, p)) => {
                    if let Some((PONG, s, a, _, _)) = parse(p) {
                        if s == session && a == seq {
                            r.rtts_ns.push(t0.elapsed().as_nanos() as u64);
                            answered = true;
                            break;
                        }
                    }
                }
                Some(Incoming::Busy) => {
                    r.busy += 1;
                    std::thread::sleep(Duration::from_millis(1));
                    answered = true;
                    break;
                }
                Some(Incoming::Reject(why)) => bail!("the daemon rejected the ping: {why}"),
                Some(Incoming::Hello) | None => {}
            }
        }
        if !answered {
            r.lost += 1;
        }
    }
    if r.rtts_ns.is_empty() {
        bail!("no ping to {to} was answered");
    }
    r.rtts_ns.sort_unstable();
    Ok(r)
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn print_latency(r: &Latency, to: Ipv4Addr, size: usize, json: bool) {
    let us = |ns: u64| ns as f64 / 1e3;
    let v = &r.rtts_ns;
    let (min, p50, p99, max) = (
        v[0],
        percentile(v, 50.0),
        percentile(v, 99.0),
        v[v.len() - 1],
    );
    let mean = v.iter().sum::<u64>() as f64 / v.len() as f64 / 1e3;
    if json {
        println!(
            "{{\"mode\":\"latency\",\"to\":\"{to}\",\"size\":{size},\"samples\":{},\
             \"lost\":{},\"busy\":{},\"rtt_us\":{{\"min\":{:.3},\"mean\":{mean:.3},\
             \"p50\":{:.3},\"p99\":{:.3},\"max\":{:.3}}}}}",
            v.len(),
            r.lost,
            r.busy,
            us(min),
            us(p50),
            us(p99),
            us(max)
        );
    } else {
        println!(
            "eqdsperf ping-pong to {to}, {size}-byte payloads: {} round trips, {} lost",
            v.len(),
            r.lost
        );
        println!(
            "  RTT us: min {:.1}  mean {mean:.1}  p50 {:.1}  p99 {:.1}  max {:.1}",
            us(min),
            us(p50),
            us(p99),
            us(max)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let mut buf = vec![0u8; NATIVE_HEADER_LEN + 64];
        message(&mut buf, END, 7, 1, 2, 3);
        assert_eq!(parse(&buf[NATIVE_HEADER_LEN..]), Some((END, 7, 1, 2, 3)));
        assert_eq!(parse(&buf[NATIVE_HEADER_LEN..NATIVE_HEADER_LEN + 31]), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 100.0), 100);
        assert_eq!(percentile(&[5], 99.0), 5);
        assert_eq!(percentile(&[1, 2], 50.0), 1);
    }
}
