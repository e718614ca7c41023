//! The forwarding loop: packet sockets in, [`Switch`] in the middle, packet sockets
//! out, on one thread.
//!
//! Each turn reads every port's receive ring (up to a budget per port, so one busy
//! port cannot starve the others), sends what each port's token bucket lets go, and,
//! when a turn did nothing, either keeps polling or sleeps in `ppoll` until a frame
//! arrives, the next paced departure is due, or a scrape asks for numbers.
//!
//! A wakeup from `ppoll` costs tens of microseconds on a virtual machine (about 60 µs
//! on the test VM, `docs/eqdsd.md`, and up to a millisecond when the machine is
//! loaded), while a backlogged 1 Gb/s port sends a 1500 B frame every 12 µs. Two
//! remedies, both measured in `docs/eqds-switch.md`:
//! - the ports' token buckets hold a millisecond of their rate by default, so a late
//!   wakeup sends what the link would have sent meanwhile, back to back;
//! - `spin_us`: within that long of the last frame handled, or of the next departure,
//!   the loop polls instead of sleeping, yielding the core on every idle turn so that
//!   hosts sharing it still run (only at ordinary priority: under SCHED_FIFO a yield
//!   lets no ordinary task in). `busy_poll` never sleeps.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};
use eqds_proto::time::{Time, PS_PER_NS, PS_PER_US};
use tracing::{info, warn};

use crate::config::Config;
use crate::frame::ETH_HEADER_LEN;
use crate::metrics::Snapshot;
use crate::switch::{Outcome, PortSetup, Switch};
use crate::sys::packet_socket::{interface_info, wait_readable, PacketSocket};
use crate::sys::{exact_timers, kernel_forwards_ipv4, monotonic_ps, yield_now, Wakeup};

/// Frames read from one port per turn.
const RX_BUDGET: usize = 64;
/// Receive ring frames per port.
const RING_FRAMES: usize = 4096;

/// How late a wakeup may be without costing the port its rate: what the token bucket
/// holds by default. Measured on the 2-core test VM under load (a compile beside the
/// testbed): with a bucket of two frames a 200 Mb/s port sent 148 Mb/s even at
/// SCHED_FIFO, since wakeups came up to about a millisecond late; with 1 ms of the
/// rate it sent 191 Mb/s. Set `burst` lower on a quiet or dedicated host.
const DEFAULT_BURST_TIME_US: u64 = 1000;

/// The default bucket: `DEFAULT_BURST_TIME_US` at the port's rate, at least two
/// frames of its MTU.
fn default_burst(rate_bps: u64, mtu: usize) -> u64 {
    let frames = 2 * (mtu + ETH_HEADER_LEN) as u64;
    (rate_bps / 8 * DEFAULT_BURST_TIME_US / 1_000_000).max(frames)
}

/// Sends `frame` on `sock` (port `port`): false if the kernel's queue is full, to try
/// again later. A frame the kernel rejects outright would be offered forever, so it
/// counts as sent, and the error is logged once in a while.
fn send(sock: &PacketSocket, port: usize, frame: &[u8], errors: &mut u64) -> bool {
    match sock.send(frame) {
        Ok(sent) => sent,
        Err(e) => {
            *errors += 1;
            if errors.is_power_of_two() {
                warn!(port, "send failed ({errors} so far): {e}");
            }
            true
        }
    }
}

/// What the switch did, for the log line at exit.
pub struct Report {
    pub snapshot: Snapshot,
}

/// Runs the switch until `stop` is set (SIGINT or SIGTERM in the binary).
pub fn run(config: &Config, stop: Arc<AtomicBool>) -> anyhow::Result<Report> {
    if kernel_forwards_ipv4().unwrap_or(false) {
        bail!(
            "net.ipv4.ip_forward is 1 in this network namespace: the kernel would forward \
             every packet a second time. Set it to 0 here (sysctl -w net.ipv4.ip_forward=0)"
        );
    }
    exact_timers();
    if config.spin_us > 0 && eqdsd::sys::real_time_scheduled() {
        warn!(
            "spin_us > 0 in a real-time scheduling class: the loop's yields let no ordinary \
             task onto its core (hosts sharing it starve); run at ordinary priority or set \
             spin_us = 0"
        );
    }
    let mut infos = Vec::new();
    for p in &config.ports {
        let i = interface_info(&p.interface)
            .with_context(|| format!("port {}: interface {:?}", p.name, p.interface))?;
        infos.push(i);
    }
    let max_frame = infos.iter().map(|i| i.mtu).max().unwrap_or(1500) + ETH_HEADER_LEN + 4;
    let mut sockets = Vec::new();
    for p in &config.ports {
        let s = PacketSocket::open(&p.interface, max_frame, RING_FRAMES).with_context(|| {
            format!(
                "port {}: packet socket on {:?} (root needed)",
                p.name, p.interface
            )
        })?;
        sockets.push(s);
    }
    let ports = config
        .ports
        .iter()
        .zip(&infos)
        .map(|(p, i)| PortSetup {
            name: p.name.clone(),
            mac: i.mac,
            addrs: i.addrs.clone(),
            rate_bps: p.rate_bps,
            burst_bytes: p
                .burst_bytes
                .unwrap_or_else(|| default_burst(p.rate_bps, i.mtu)),
            queue: p.queue.build_seeded(config.seed),
        })
        .collect();
    let mut switch = Switch::new(
        ports,
        config.routes.clone(),
        config.eqds_ports.clone(),
        config.buffers,
        max_frame,
        config.seed,
    );
    for (p, i) in config.ports.iter().zip(&infos) {
        info!(
            port = %p.name, interface = %p.interface, rate_bps = p.rate_bps, mtu = i.mtu,
            addrs = ?i.addrs, "port up"
        );
    }

    let wakeup = Arc::new(Wakeup::new().context("eventfd")?);
    let (_server, publisher) = match config.metrics {
        Some(addr) => {
            let listener = std::net::TcpListener::bind(addr)
                .with_context(|| format!("switch.metrics: cannot listen on {addr}"))?;
            let w = Arc::clone(&wakeup);
            let (server, publisher) = eqdsd::metrics::server::spawn::<Snapshot>(
                listener,
                move || w.wake(),
                Default::default(),
            )
            .context("metrics server")?;
            info!(addr = %server.local_addr(), "metrics");
            (Some(server), Some(publisher))
        }
        None => (None, None),
    };

    let mut fds: Vec<i32> = sockets.iter().map(|s| s.as_raw_fd()).collect();
    fds.push(wakeup.as_raw_fd());
    let mut ring_drops = vec![0u64; sockets.len()];
    let spin = config.spin_us * PS_PER_US;
    let mut last_work: Time = 0;
    let mut send_errors = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let now = monotonic_ps();
        let mut work = 0;
        for (i, sock) in sockets.iter().enumerate() {
            work += sock.receive(RX_BUDGET, |bytes, meta| {
                // Straight out if the egress port may send now: a burst read from the
                // ring in one turn must not pile up in a queue the port would have
                // drained as it arrived.
                if let Outcome::Queued { port } = switch.handle_frame(now, i, bytes, meta) {
                    switch.transmit(now, port, |f| {
                        send(&sockets[port], port, f, &mut send_errors)
                    });
                }
            });
        }
        if switch.poll_timeout().is_some_and(|t| t <= now) {
            switch.handle_timeout(now);
        }
        for (i, sock) in sockets.iter().enumerate() {
            work += switch.transmit(now, i, |f| send(sock, i, f, &mut send_errors));
        }
        if wakeup.take() {
            if let Some(p) = &publisher {
                for (t, s) in ring_drops.iter_mut().zip(&sockets) {
                    *t += s.ring_drops().unwrap_or(0);
                }
                p.publish(Snapshot::take(&switch, &ring_drops));
            }
        }
        if work > 0 {
            last_work = now;
            continue;
        }
        let now = monotonic_ps();
        let due = switch.poll_timeout();
        if due.is_some_and(|t| t <= now) {
            continue;
        }
        if config.busy_poll
            || now.saturating_sub(last_work) < spin
            || due.is_some_and(|t| t - now < spin)
        {
            yield_now();
            continue;
        }
        let timeout_ns = due.map(|t| (t - now).div_ceil(PS_PER_NS));
        wait_readable(&fds, timeout_ns).context("ppoll")?;
    }
    for (t, s) in ring_drops.iter_mut().zip(&sockets) {
        *t += s.ring_drops().unwrap_or(0);
    }
    Ok(Report {
        snapshot: Snapshot::take(&switch, &ring_drops),
    })
}
