//! The daemon's contact with the kernel: the TUN device, UDP sockets, the monotonic
//! clock and a timer. All `unsafe` code of the crate lives under this module.

pub mod tun;
pub mod udp;

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use eqds_proto::time::{Time, PS_PER_NS, PS_PER_SEC};

/// CLOCK_MONOTONIC in picoseconds, the protocol core's unit.
pub fn monotonic_ps() -> Time {
    // SAFETY: an all-zero timespec is valid; clock_gettime fills it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: CLOCK_MONOTONIC always exists and `ts` outlives the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as Time * PS_PER_SEC + ts.tv_nsec as Time * PS_PER_NS
}

/// Asks the kernel to wake this thread's timers without slack (default 50 µs).
pub fn exact_timers() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and affects only the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// Whether this thread runs in a real-time scheduling class (SCHED_FIFO or SCHED_RR),
/// under which a polling loop's yields let no ordinary task in.
pub fn real_time_scheduled() -> bool {
    // SAFETY: sched_getscheduler takes a pid (0: the caller) and touches no memory.
    let policy = unsafe { libc::sched_getscheduler(0) };
    policy == libc::SCHED_FIFO || policy == libc::SCHED_RR
}

/// Moves the calling thread to the ordinary scheduling class at nice 10: for a helper
/// thread (metrics) of a daemon that may run SCHED_FIFO, which must never take a core
/// from the data path.
pub fn background_priority() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` outlives the call. Leaving a
    // real-time class needs no privilege.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: on Linux, PRIO_PROCESS with who 0 sets the calling thread's nice value;
    // raising it needs no privilege.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A timerfd on CLOCK_MONOTONIC, armed with absolute deadlines at nanosecond
/// resolution (epoll's own timeout has only milliseconds; PULLs are paced in µs).
#[derive(Debug)]
pub struct Timer {
    fd: OwnedFd,
    armed: Option<Time>,
}

impl Timer {
    /// A disarmed, non-blocking timer.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; the result is checked and wrapped.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is ours.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(Self { fd, armed: None })
    }

    /// Fires at `deadline` (monotonic picoseconds), replacing any earlier setting.
    pub fn arm(&mut self, deadline: Time) -> io::Result<()> {
        if self.armed == Some(deadline) {
            return Ok(());
        }
        let ns = (deadline / PS_PER_NS).max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `spec` lives across the call; the old value is not asked for.
        let r = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed = Some(deadline);
        Ok(())
    }

    /// Clears the expiry count after the timer fired.
    pub fn acknowledge(&mut self) {
        let mut count = 0u64;
        // SAFETY: reads 8 bytes into a u64 that outlives the call; EAGAIN is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut count as *mut u64).cast(), 8) };
        self.armed = None;
    }
}

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
