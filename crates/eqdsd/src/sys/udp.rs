//! The tunnel's UDP sockets, with batched I/O (recvmmsg, sendmmsg) and, where the
//! kernel has them, UDP segmentation offloads.
//!
//! Path spraying is by UDP source port: socket 0 is bound to the listen address, and
//! each further path gets a socket of its own on an ephemeral port of the same address.
//! Peers always send to the listen port, so only socket 0 is read.
//!
//! With offloads on, a train of equal-sized datagrams to one peer leaves as one
//! message with `UDP_SEGMENT` (GSO): the kernel carries it through its stack, and over
//! veth to the peer's socket, as one buffer and cuts it into datagrams only where it
//! must. The listen socket asks for `UDP_GRO`, so such trains (and datagrams a NIC
//! merged) arrive as one read of up to 64 KB with the segment size beside it. Per
//! datagram system-call and stack costs are what limit a userspace tunnel; this is
//! where they shrink.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;

use crate::engine::Datagram;
use crate::pool::{BufId, Pool};

/// Datagrams per recvmmsg/sendmmsg call.
pub const BATCH: usize = 32;

/// Kernel socket buffer size asked for: a burst of a few windows from many peers.
const SOCKET_BUFFER: libc::c_int = 8 << 20;

/// The largest UDP payload of an IPv4 datagram: the bound on a GSO train.
const MAX_UDP_PAYLOAD: usize = 65_507;

/// Size of each GRO receive buffer: more than any coalesced read can hold.
const GRO_BUFFER: usize = 1 << 16;

/// Datagrams per GSO message: the kernel's `UDP_MAX_SEGMENTS` before Linux 6.2.
const GSO_MAX_SEGMENTS: usize = 64;

/// Coalesced reads per recvmmsg with GRO on, each into a buffer of `GRO_BUFFER`
/// bytes.
pub const GRO_BATCH: usize = 8;

/// Room for one `cmsghdr` with a 4-byte payload (`CMSG_SPACE(4)` on 64-bit Linux),
/// kept as `u64`s for the header's alignment.
const CMSG_WORDS: usize = 3;

/// The tunnel's sockets.
#[derive(Debug)]
pub struct Sockets {
    socks: Vec<UdpSocket>,
    /// Trains are sent with `UDP_SEGMENT`.
    gso: bool,
    /// Receive buffers for coalesced reads, when the listen socket has `UDP_GRO`.
    gro: Option<Box<[u8]>>,
}

/// What became of a batch of datagrams handed to [`Sockets::send_all`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    /// Datagrams the kernel refused.
    pub refused: usize,
    /// Messages the others left in.
    pub messages: usize,
}

/// One coalesced read (with GRO): datagrams of `segment` bytes, the last possibly
/// shorter, back to back in [`Sockets::coalesced`]`(index)`.
#[derive(Debug, Clone, Copy)]
pub struct Coalesced {
    /// Which of the [`GRO_BATCH`] receive buffers.
    pub index: usize,
    /// The sender.
    pub from: SocketAddrV4,
    /// Bytes read.
    pub len: usize,
    /// Size of each datagram but the last (`len` when not coalesced).
    pub segment: usize,
    /// Longer than the buffer (cannot happen with UDP payloads of at most 64 KB).
    pub truncated: bool,
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

/// Sets an integer socket option; whether the kernel took it.
fn set_int(fd: libc::c_int, level: libc::c_int, opt: libc::c_int, value: libc::c_int) -> bool {
    // SAFETY: a setsockopt with an int argument that lives across the call.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

fn from_sockaddr(a: &libc::sockaddr_in) -> SocketAddrV4 {
    SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
        u16::from_be(a.sin_port),
    )
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
    /// Binds the listen socket and `paths - 1` more, all non-blocking. With `offload`,
    /// asks for UDP GSO and GRO and uses each the kernel grants.
    pub fn bind(listen: SocketAddrV4, paths: u16, offload: bool) -> io::Result<Self> {
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
        // A zero segment size asks for nothing but tells whether the option exists
        // (Linux 4.18); GRO came with 5.0.
        let gso = offload
            && socks
                .iter()
                .all(|s| set_int(s.as_raw_fd(), libc::SOL_UDP, libc::UDP_SEGMENT, 0));
        let gro = (offload && set_int(socks[0].as_raw_fd(), libc::SOL_UDP, libc::UDP_GRO, 1))
            .then(|| vec![0u8; GRO_BATCH * GRO_BUFFER].into_boxed_slice());
        Ok(Self { socks, gso, gro })
    }

    /// Whether trains leave as GSO messages.
    pub fn gso(&self) -> bool {
        self.gso
    }

    /// Whether reads are coalesced: use [`Sockets::recv_coalesced`], not
    /// [`Sockets::recv_batch`].
    pub fn gro(&self) -> bool {
        self.gro.is_some()
    }

    /// Receive buffer `index` of the last [`Sockets::recv_coalesced`].
    pub fn coalesced(&self, index: usize) -> &[u8] {
        let all = self.gro.as_deref().unwrap_or(&[]);
        &all[index * GRO_BUFFER..(index + 1) * GRO_BUFFER]
    }

    /// Receives up to [`GRO_BATCH`] coalesced reads into the GRO buffers and lists them
    /// in `out`. Returns `WouldBlock` when nothing is waiting.
    pub fn recv_coalesced(&mut self, out: &mut Vec<Coalesced>) -> io::Result<()> {
        let fd = self.socks[0].as_raw_fd();
        let Some(bufs) = self.gro.as_deref_mut() else {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "UDP GRO is off"));
        };
        // SAFETY: all-zero sockaddr_in, iovec, mmsghdr and control words are valid.
        let mut addrs: [libc::sockaddr_in; GRO_BATCH] = unsafe { std::mem::zeroed() };
        let mut iovs: [libc::iovec; GRO_BATCH] = unsafe { std::mem::zeroed() };
        let mut msgs: [libc::mmsghdr; GRO_BATCH] = unsafe { std::mem::zeroed() };
        let mut cmsgs = [[0u64; CMSG_WORDS]; GRO_BATCH];
        for (i, chunk) in bufs.chunks_exact_mut(GRO_BUFFER).enumerate() {
            iovs[i] = libc::iovec {
                iov_base: chunk.as_mut_ptr().cast(),
                iov_len: GRO_BUFFER,
            };
            let h = &mut msgs[i].msg_hdr;
            h.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
            h.msg_iov = &mut iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = cmsgs[i].as_mut_ptr().cast();
            h.msg_controllen = std::mem::size_of_val(&cmsgs[i]);
        }
        // SAFETY: every msghdr points at an address, an iovec over its own part of the
        // GRO buffers and control words, all of this frame or `self` and unborrowed
        // during the call.
        let got = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                GRO_BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        for (i, m) in msgs.iter().enumerate().take(got as usize) {
            let len = m.msg_len as usize;
            let mut segment = len;
            // SAFETY: the kernel filled msg_control up to msg_controllen with whole
            // cmsghdrs; the CMSG macros walk exactly that, and a UDP_GRO payload is an
            // int, read unaligned.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&m.msg_hdr);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO {
                        let size =
                            std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                        if size > 0 {
                            segment = size as usize;
                        }
                    }
                    c = libc::CMSG_NXTHDR(&m.msg_hdr, c);
                }
            }
            out.push(Coalesced {
                index: i,
                from: from_sockaddr(&addrs[i]),
                len,
                segment,
                truncated: m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            });
        }
        Ok(())
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
            out.push(Received {
                buf: bufs[i],
                from: from_sockaddr(&addrs[i]),
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
    /// socket `path`, up to `GSO_MAX_SEGMENTS` per sendmmsg. Returns how many the
    /// kernel refused (they are dropped: EQDS recovers DATA by retransmission and credit
    /// by pull numbers) and how many messages carried the rest.
    pub fn send_all(&self, pool: &Pool, datagrams: &[Datagram], path: usize) -> Sent {
        let mut sent = Sent::default();
        for run in datagrams.chunks(GSO_MAX_SEGMENTS) {
            let s = self.send_run(pool, run, path);
            sent.refused += s.refused;
            sent.messages += s.messages;
        }
        sent
    }

    /// One sendmmsg of at most [`GSO_MAX_SEGMENTS`] datagrams. With GSO, each run of
    /// datagrams to one peer of one size (the run's last may be shorter) is one message.
    fn send_run(&self, pool: &Pool, run: &[Datagram], path: usize) -> Sent {
        const N: usize = GSO_MAX_SEGMENTS;
        let sock = &self.socks[path % self.socks.len()];
        let size = |d: &Datagram| d.header.len() + d.payload.map_or(0, |b| pool.inner(b).len());
        // SAFETY: all-zero sockaddr_in, iovec and mmsghdr are valid values.
        let mut addrs: [libc::sockaddr_in; N] = unsafe { std::mem::zeroed() };
        let mut iovs: [libc::iovec; 2 * N] = unsafe { std::mem::zeroed() };
        let mut msgs: [libc::mmsghdr; N] = unsafe { std::mem::zeroed() };
        let mut cmsgs = [[0u64; CMSG_WORDS]; N];
        // Datagrams per message, to count refusals.
        let mut counts = [0usize; N];
        let (mut n_msgs, mut n_iovs, mut i) = (0, 0, 0);
        while i < run.len() {
            let first = &run[i];
            let segment = size(first);
            let iov_start = n_iovs;
            let k = if self.gso {
                train_len(run[i..].iter().map(|d| (d.dst, size(d))))
            } else {
                1
            };
            for d in &run[i..i + k] {
                iovs[n_iovs] = libc::iovec {
                    iov_base: d.header.as_ptr() as *mut libc::c_void,
                    iov_len: d.header.len(),
                };
                n_iovs += 1;
                if let Some(b) = d.payload {
                    let inner = pool.inner(b);
                    iovs[n_iovs] = libc::iovec {
                        iov_base: inner.as_ptr() as *mut libc::c_void,
                        iov_len: inner.len(),
                    };
                    n_iovs += 1;
                }
            }
            addrs[n_msgs] = sockaddr(first.dst);
            let h = &mut msgs[n_msgs].msg_hdr;
            h.msg_name = (&mut addrs[n_msgs] as *mut libc::sockaddr_in).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
            h.msg_iov = iovs[iov_start..].as_mut_ptr();
            h.msg_iovlen = n_iovs - iov_start;
            if k > 1 {
                let space = std::mem::size_of_val(&cmsgs[n_msgs]);
                h.msg_control = cmsgs[n_msgs].as_mut_ptr().cast();
                h.msg_controllen = space;
                // SAFETY: the control words are CMSG_SPACE(4) >= CMSG_SPACE(2) bytes,
                // aligned for cmsghdr; the first header and its u16 payload fit.
                unsafe {
                    let c = libc::CMSG_FIRSTHDR(h);
                    (*c).cmsg_level = libc::SOL_UDP;
                    (*c).cmsg_type = libc::UDP_SEGMENT;
                    (*c).cmsg_len = libc::CMSG_LEN(2) as usize;
                    std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), segment as u16);
                    h.msg_controllen = libc::CMSG_SPACE(2) as usize;
                }
            }
            counts[n_msgs] = k;
            n_msgs += 1;
            i += k;
        }
        let (mut sent, mut refused, mut failed) = (0, 0, 0);
        while sent < n_msgs {
            // SAFETY: the message headers point at addresses, iovecs, control words and
            // buffers that live across the call and are only read by the kernel.
            let r = unsafe {
                libc::sendmmsg(
                    sock.as_raw_fd(),
                    msgs[sent..].as_mut_ptr(),
                    (n_msgs - sent) as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if r <= 0 {
                // The first unsent message failed (a full socket buffer, no route):
                // skip it and go on with the rest.
                refused += counts[sent];
                failed += 1;
                sent += 1;
            } else {
                sent += r as usize;
            }
        }
        Sent {
            refused,
            messages: n_msgs - failed,
        }
    }
}

/// How many of `datagrams` (destination and size, in sending order, at least one)
/// from the front can leave as one GSO message: same destination, the first one's
/// size (only the last may be shorter), within one UDP payload and the segment limit.
fn train_len(mut datagrams: impl Iterator<Item = (SocketAddrV4, usize)>) -> usize {
    let Some((dst, segment)) = datagrams.next() else {
        return 0;
    };
    let (mut k, mut total) = (1, segment);
    for (d, len) in datagrams {
        if k == GSO_MAX_SEGMENTS || d != dst || len > segment || total + len > MAX_UDP_PAYLOAD {
            break;
        }
        k += 1;
        total += len;
        if len < segment {
            break;
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn train(items: &[(u16, usize)]) -> usize {
        train_len(
            items
                .iter()
                .map(|&(port, len)| (SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), port), len)),
        )
    }

    #[test]
    fn a_train_is_one_peer_and_one_size_with_a_shorter_last() {
        assert_eq!(train(&[(1, 1500); 5]), 5);
        assert_eq!(train(&[(1, 1500), (1, 1500), (1, 900), (1, 1500)]), 3);
        assert_eq!(train(&[(1, 1500), (2, 1500), (1, 1500)]), 1);
        assert_eq!(
            train(&[(1, 900), (1, 1500)]),
            1,
            "a longer one never follows"
        );
        assert_eq!(train(&[(1, 60)]), 1);
        assert_eq!(train(&[]), 0);
    }

    #[test]
    fn a_train_stays_within_one_udp_payload_and_the_segment_limit() {
        // 43 x 1500 = 64,500 fits, a 44th does not.
        assert_eq!(train(&[(1, 1500); 50]), 43);
        assert_eq!(train(&[(1, 100); 100]), GSO_MAX_SEGMENTS);
        assert_eq!(train(&[(1, 9000); 10]), 7);
    }
}
