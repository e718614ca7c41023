//! The metrics server alone, against a stand-in for the event loop: a thread that
//! answers each snapshot request with a fixed snapshot.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use super::{spawn, Limits, Server};
use crate::metrics::tests::samples;
use crate::metrics::Snapshot;

/// A server with `limits` and its stand-in event loop; the requests it made so far.
struct Fixture {
    server: Option<Server>,
    requests: Arc<AtomicUsize>,
    event_loop: Option<thread::JoinHandle<()>>,
}

impl Fixture {
    fn new(limits: Limits) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let (ask, asked) = mpsc::channel::<()>();
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&requests);
        let request = move || {
            counted.fetch_add(1, Ordering::SeqCst);
            let _ = ask.send(());
        };
        let (server, publisher) = spawn(listener, request, limits).unwrap();
        // Ends when the server's thread drops the request hook.
        let event_loop = thread::spawn(move || {
            for () in asked {
                let mut s = Snapshot::default();
                s.counters.udp_rx_datagrams = 42;
                publisher.publish(s);
            }
        });
        Self {
            server: Some(server),
            requests,
            event_loop: Some(event_loop),
        }
    }

    fn addr(&self) -> SocketAddr {
        self.server.as_ref().unwrap().local_addr()
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr()).unwrap();
        // Only a failing test waits this long.
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s
    }

    /// A whole scrape: the response.
    fn scrape(&self) -> String {
        let mut s = self.connect();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n")
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        drop(self.server.take());
        if let Some(t) = self.event_loop.take() {
            t.join().unwrap();
        }
    }
}

/// Whether the server has closed `s`: its next read ends (EOF or a reset) rather than
/// timing out.
fn closed(s: &mut TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            // A status line the server sent as it closed.
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn a_scrape_gets_valid_exposition_text() {
    let f = Fixture::new(Limits::default());
    let response = f.scrape();
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP head");
    assert!(head.starts_with("HTTP/1.0 200 OK\r\n"), "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    assert!(
        head.contains(&format!("Content-Length: {}\r\n", body.len())),
        "{head}"
    );
    let m: std::collections::HashMap<_, _> = samples(body).into_iter().collect();
    assert_eq!(m["eqdsd_udp_rx_datagrams_total"], 42.0, "{body}");
    assert_eq!(
        m[r#"eqdsd_metrics_connections_cut_total{reason="deadline"}"#],
        0.0
    );
    assert_eq!(f.requests.load(Ordering::SeqCst), 1);

    // Other paths and methods are refused without asking the event loop.
    let mut s = f.connect();
    s.write_all(b"GET /nothing HTTP/1.0\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.0 404 "), "{out}");
    let mut s = f.connect();
    s.write_all(b"POST /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.0 405 "), "{out}");
    assert_eq!(f.requests.load(Ordering::SeqCst), 1);
}

#[test]
fn an_oversized_request_is_refused() {
    let f = Fixture::new(Limits {
        max_request_bytes: 256,
        ..Limits::default()
    });
    let mut s = f.connect();
    // Headers that never end, far past the limit (the server stops reading at it).
    let mut request = b"GET /metrics HTTP/1.1\r\n".to_vec();
    request.extend(std::iter::repeat_n(b'x', 4000));
    s.write_all(&request).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(
        out.starts_with("HTTP/1.0 431 Request Header Fields Too Large\r\n"),
        "{out}"
    );
    assert_eq!(f.requests.load(Ordering::SeqCst), 0, "the loop was asked");
    let m: std::collections::HashMap<_, _> = samples(f.scrape().split_once("\r\n\r\n").unwrap().1)
        .into_iter()
        .collect();
    assert_eq!(
        m[r#"eqdsd_metrics_connections_cut_total{reason="too_large"}"#],
        1.0
    );
}

#[test]
fn a_slow_client_is_cut_off_at_its_deadline() {
    let f = Fixture::new(Limits {
        deadline: Duration::from_millis(300),
        ..Limits::default()
    });
    let mut s = f.connect();
    let request = b"GET /metrics HTTP/1.0\r\n\r\n";
    // One byte every 50 ms: the whole request would take 1.3 s, four deadlines.
    let sent = Arc::new(AtomicUsize::new(0));
    let mut writer = s.try_clone().unwrap();
    let counter = Arc::clone(&sent);
    let dribbler = thread::spawn(move || {
        for byte in request {
            if writer.write_all(&[*byte]).is_err() {
                return;
            }
            counter.fetch_add(1, Ordering::SeqCst);
            thread::sleep(Duration::from_millis(50));
        }
    });
    let mut out = Vec::new();
    // Ends when the server closes; a reset after the 408 (the client kept writing)
    // is as good.
    let _ = s.read_to_end(&mut out);
    let sent_by_then = sent.load(Ordering::SeqCst);
    dribbler.join().unwrap();
    assert!(
        sent_by_then < request.len(),
        "the server waited for the whole slow request"
    );
    let out = String::from_utf8_lossy(&out);
    assert!(out.is_empty() || out.starts_with("HTTP/1.0 408 "), "{out}");
    assert_eq!(f.requests.load(Ordering::SeqCst), 0, "the loop was asked");
}

#[test]
fn the_connection_cap_evicts_idle_connections_first() {
    let f = Fixture::new(Limits {
        max_connections: 2,
        deadline: Duration::from_secs(30),
        ..Limits::default()
    });
    let mut idle: Vec<TcpStream> = Vec::new();
    for _ in 0..3 {
        idle.push(f.connect());
        // Accepted in order, so that "oldest" is well defined.
        thread::sleep(Duration::from_millis(20));
    }
    // Three idle connections against a cap of two: the first went.
    assert!(closed(&mut idle[0], Duration::from_secs(10)));
    assert!(!closed(&mut idle[1], Duration::from_millis(200)));
    assert!(!closed(&mut idle[2], Duration::from_millis(200)));
    // A scrape still gets through, in the place of the oldest idle connection.
    let response = f.scrape();
    assert!(response.starts_with("HTTP/1.0 200 OK\r\n"), "{response}");
    let m: std::collections::HashMap<_, _> = samples(response.split_once("\r\n\r\n").unwrap().1)
        .into_iter()
        .collect();
    assert_eq!(
        m[r#"eqdsd_metrics_connections_cut_total{reason="evicted"}"#],
        2.0
    );
    assert!(closed(&mut idle[1], Duration::from_secs(10)));
    assert!(!closed(&mut idle[2], Duration::from_millis(200)));
}

#[test]
fn concurrent_scrapes_share_snapshots() {
    let f = Fixture::new(Limits {
        max_connections: 32,
        min_snapshot_interval: Duration::from_millis(500),
        ..Limits::default()
    });
    let interval = Duration::from_millis(500);
    let started = std::time::Instant::now();
    assert!(f.scrape().starts_with("HTTP/1.0 200 OK\r\n"));
    let addr = f.addr();
    let scrapers: Vec<_> = (0..8)
        .map(|_| {
            thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
                let mut out = String::new();
                s.read_to_string(&mut out).unwrap();
                out
            })
        })
        .collect();
    for s in scrapers {
        assert!(s.join().unwrap().starts_with("HTTP/1.0 200 OK\r\n"));
    }
    // Nine scrapes, and snapshot requests at least an interval apart: however the
    // scrapes fell, no more than the time taken allows.
    let allowed = 1 + (started.elapsed().as_millis() / interval.as_millis()) as usize;
    let asked = f.requests.load(Ordering::SeqCst);
    assert!(
        (2..=allowed).contains(&asked),
        "{asked} snapshots for 9 scrapes, {allowed} allowed"
    );
}
