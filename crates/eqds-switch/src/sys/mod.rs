//! The switch's contact with the kernel: packet sockets, a wakeup for the metrics
//! thread, and the clock. All `unsafe` code of the crate lives under this module.

pub mod packet_socket;

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub use eqdsd::sys::{exact_timers, monotonic_ps};

/// An eventfd another thread can set to wake the forwarding loop's `poll`.
#[derive(Debug)]
pub struct Wakeup(OwnedFd);

impl Wakeup {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain eventfd(2) call; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        Ok(Wakeup(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Sets it (from any thread).
    pub fn wake(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer; a full counter (EAGAIN) is
        // already a pending wakeup.
        unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), 8) };
    }

    /// Clears it; true if it was set.
    pub fn take(&self) -> bool {
        let mut v = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a live buffer.
        let n = unsafe { libc::read(self.0.as_raw_fd(), v.as_mut_ptr().cast(), 8) };
        n == 8
    }
}

impl AsRawFd for Wakeup {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Gives the core to any other runnable task (`sched_yield`).
pub fn yield_now() {
    // SAFETY: sched_yield takes no arguments and touches no memory.
    unsafe { libc::sched_yield() };
}

/// Whether the kernel forwards IPv4 in this network namespace: the switch refuses
/// to run beside it, since every packet would then be forwarded twice.
pub fn kernel_forwards_ipv4() -> io::Result<bool> {
    Ok(std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward")?.trim() == "1")
}
