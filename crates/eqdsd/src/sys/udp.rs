//! The tunnel's UDP sockets, with batched I/O (recvmmsg, sendmmsg).
//!
//! Path spraying is by UDP source port: socket 0 is bound to the listen address, and
//! each further path gets a socket of its own on an ephemeral port of the same address.
//! Peers always send to the listen port, so only socket 0 is read.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;

use crate::engine::Datagram;
use crate::pool::{BufId, Pool};

/// Datagrams per recvmmsg/sendmmsg call.
pub const BATCH: usize = 32;

/// Kernel socket buffer size asked for: a burst of a few windows from many peers.
const SOCKET_BUFFER: libc::c_int = 8 << 20;

/// The tunnel's sockets.
#[derive(Debug)]
pub struct Sockets {
    socks: Vec<UdpSocket>,
}

/// One received datagram.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    /// The buffer it was read into, from offset 0.
    pub buf: BufId,
    /// Its sender.
    pub from: SocketAddrV4,
    /// Its length.
    pub len: usize,
    /// Whether it was longer than the buffer.
    pub truncated: bool,
}

fn set_buffer(fd: libc::c_int, opt: libc::c_int, size: libc::c_int) {
    // SAFETY: a setsockopt with an int argument that lives across the call. The FORCE
    // variants need CAP_NET_ADMIN; without it the plain option is capped by sysctl,
    // which is still correct, only slower under bursts.
    unsafe {
        let p = (&size as *const libc::c_int).cast();
        let n = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        if libc::setsockopt(fd, libc::SOL_SOCKET, opt, p, n) != 0 {
            let plain = if opt == libc::SO_RCVBUFFORCE {
                libc::SO_RCVBUF
            } else {
                libc::SO_SNDBUF
            };
            libc::setsockopt(fd, libc::SOL_SOCKET, plain, p, n);
        }
    }
}

fn sockaddr(addr: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*addr.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

impl Sockets {
    /// Binds the listen socket and `paths - 1` more, all non-blocking.
    pub fn bind(listen: SocketAddrV4, paths: u16) -> io::Result<Self> {
        let mut socks = Vec::with_capacity(usize::from(paths));
        for i in 0..paths {
            let addr = if i == 0 {
                listen
            } else {
                SocketAddrV4::new(*listen.ip(), 0)
            };
            let s = UdpSocket::bind(addr)
                .map_err(|e| io::Error::new(e.kind(), format!("bind UDP {addr}: {e}")))?;
            s.set_nonblocking(true)?;
            set_buffer(s.as_raw_fd(), libc::SO_SNDBUFFORCE, SOCKET_BUFFER);
            if i == 0 {
                set_buffer(s.as_raw_fd(), libc::SO_RCVBUFFORCE, SOCKET_BUFFER);
            }
            socks.push(s);
        }
        Ok(Self { socks })
    }

    /// The listen socket, for the event loop to register.
    pub fn listen_socket(&self) -> &UdpSocket {
        &self.socks[0]
    }

    /// The source port of each path.
    pub fn ports(&self) -> Vec<u16> {
        self.socks
            .iter()
            .map(|s| s.local_addr().map_or(0, |a| a.port()))
            .collect()
    }

    /// Receives up to [`BATCH`] datagrams into `bufs` (buffers the caller took from
    /// `pool`; those filled are listed in `out` in order, the rest stay the caller's).
    /// Returns `WouldBlock` when nothing is waiting.
    pub fn recv_batch(
        &self,
        pool: &mut Pool,
        bufs: &[BufId],
        out: &mut Vec<Received>,
    ) -> io::Result<()> {
        let n = bufs.len().min(BATCH);
        let size = pool.buffer_size();
        // SAFETY: all-zero sockaddr_in and mmsghdr are valid values.
        let mut addrs: [libc::sockaddr_in; BATCH] = unsafe { std::mem::zeroed() };
        let mut iovs: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for i in 0..n {
            iovs[i] = libc::iovec {
                iov_base: pool.raw_mut(bufs[i]).as_mut_ptr().cast(),
                iov_len: size,
            };
            msgs[i].msg_hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
            msgs[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
            msgs[i].msg_hdr.msg_iov = &mut iovs[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: every msghdr points at an address and an iovec of this frame, each
        // iovec at a distinct pool buffer of `size` bytes that is not otherwise
        // borrowed during the call.
        let got = unsafe {
            libc::recvmmsg(
                self.socks[0].as_raw_fd(),
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        for i in 0..got as usize {
            let a = &addrs[i];
            out.push(Received {
                buf: bufs[i],
                from: SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                    u16::from_be(a.sin_port),
                ),
                len: msgs[i].msg_len as usize,
                truncated: msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            });
        }
        Ok(())
    }

    /// The number of sockets, one per path.
    pub fn paths(&self) -> usize {
        self.socks.len()
    }

    /// Sends `datagrams` (header, then the inner packet of the payload buffer) through
    /// socket `path`, [`BATCH`] per sendmmsg. Returns how many the kernel refused; they
    /// are dropped (EQDS recovers DATA by retransmission and credit by pull numbers).
    pub fn send_all(&self, pool: &Pool, datagrams: &[Datagram], path: usize) -> usize {
        datagrams
            .chunks(BATCH)
            .map(|run| self.send_run(pool, run, path))
            .sum()
    }

    /// One sendmmsg of at most [`BATCH`] datagrams.
    fn send_run(&self, pool: &Pool, run: &[Datagram], path: usize) -> usize {
        let n = run.len();
        let sock = &self.socks[path % self.socks.len()];
        // SAFETY: all-zero sockaddr_in, iovec and mmsghdr are valid values.
        let mut addrs: [libc::sockaddr_in; BATCH] = unsafe { std::mem::zeroed() };
        let mut iovs: [[libc::iovec; 2]; BATCH] = unsafe { std::mem::zeroed() };
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for (i, d) in run.iter().enumerate() {
            addrs[i] = sockaddr(d.dst);
            iovs[i][0] = libc::iovec {
                iov_base: d.header.as_ptr() as *mut libc::c_void,
                iov_len: d.header.len(),
            };
            let parts = match d.payload {
                Some(b) => {
                    let inner = pool.inner(b);
                    iovs[i][1] = libc::iovec {
                        iov_base: inner.as_ptr() as *mut libc::c_void,
                        iov_len: inner.len(),
                    };
                    2
                }
                None => 1,
            };
            msgs[i].msg_hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
            msgs[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
            msgs[i].msg_hdr.msg_iov = iovs[i].as_mut_ptr();
            msgs[i].msg_hdr.msg_iovlen = parts;
        }
        let (mut sent, mut refused) = (0, 0);
        while sent < n {
            // SAFETY: the message headers point at addresses, iovecs and buffers that
            // live across the call and are only read by the kernel.
            let r = unsafe {
                libc::sendmmsg(
                    sock.as_raw_fd(),
                    msgs[sent..].as_mut_ptr(),
                    (n - sent) as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if r <= 0 {
                // The first unsent datagram failed (a full socket buffer, no route):
                // skip it and go on with the rest.
                refused += 1;
                sent += 1;
            } else {
                sent += r as usize;
            }
        }
        refused
    }
}
