//! A port's packet socket: `AF_PACKET` with a memory-mapped receive ring
//! (`TPACKET_V2`); frames leave with one `send` each, as the port's pacing lets them.
//!
//! Why these choices (measurements in `docs/eqds-switch.md`):
//! - `TPACKET_V2` rather than `V3`: a V3 block is handed to user space when it is full
//!   or its timer (at least 1 ms) expires, so a lightly loaded port would add up to a
//!   millisecond to every packet. V2 hands over each frame as it lands, which the ping
//!   test needs (tens of microseconds, not milliseconds).
//! - The ring: frames are read in place, with no system call per frame; one `poll`
//!   waits when every ring is empty.
//! - `PACKET_IGNORE_OUTGOING`: frames the switch sends are not looped back into its
//!   own ring. `PACKET_QDISC_BYPASS`: they skip the kernel's qdisc, so the only queue
//!   on the path is the switch's discipline.

use std::cell::Cell;
use std::ffi::CString;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

/// `ETH_P_ALL` in network byte order: every protocol.
const ETH_P_ALL_BE: u16 = (libc::ETH_P_ALL as u16).to_be();
/// Where a `TPACKET_V2` frame's `sockaddr_ll` starts: after the header, aligned to 16.
const SOCKADDR_OFFSET: usize = 32;
/// `sll_pkttype` inside `sockaddr_ll`.
const PKTTYPE_OFFSET: usize = 10;
/// Ring block size: a multiple of the page size (the kernel allocates it as one).
const BLOCK_SIZE: usize = 1 << 17;

/// What the kernel says about a received frame beyond its bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxMeta {
    /// The sender left the TCP/UDP checksum to hardware (a local stack over veth).
    pub csum_not_ready: bool,
    /// The frame was longer than the ring's frames and is cut short.
    pub truncated: bool,
    /// The frame was not addressed to this interface (promiscuous or other host).
    pub other_host: bool,
    /// The kernel took a VLAN tag off the frame (the switch forwards untagged only).
    pub vlan: bool,
}

/// One port's packet socket and its receive ring.
pub struct PacketSocket {
    fd: OwnedFd,
    ring: NonNull<u8>,
    ring_len: usize,
    frame_size: usize,
    block_size: usize,
    frames_per_block: usize,
    frame_nr: usize,
    /// The next ring frame to read (a `Cell`: reading takes `&self`, so the loop may
    /// send on one port from inside another's receive callback).
    next: Cell<usize>,
    ifindex: i32,
}

// SAFETY: the ring is owned by this value alone; nothing else maps it.
unsafe impl Send for PacketSocket {}

impl PacketSocket {
    /// Opens a packet socket on `ifname` with a receive ring of at least `frames`
    /// frames, each able to hold `max_frame` bytes.
    pub fn open(ifname: &str, max_frame: usize, frames: usize) -> io::Result<Self> {
        let ifindex = ifindex(ifname)?;
        // SAFETY: plain socket(2) call; the result is checked.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                i32::from(ETH_P_ALL_BE),
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        setsockopt(
            &fd,
            libc::PACKET_VERSION,
            libc::tpacket_versions::TPACKET_V2 as i32,
        )?;
        setsockopt(&fd, libc::PACKET_IGNORE_OUTGOING, 1)?;
        setsockopt(&fd, libc::PACKET_QDISC_BYPASS, 1)?;

        // The frame holds the header, the sockaddr_ll and the frame, aligned to 16.
        let frame_size = (max_frame + 128).div_ceil(16) * 16;
        let block_size = BLOCK_SIZE.max(frame_size.div_ceil(4096) * 4096);
        let frames_per_block = block_size / frame_size;
        let block_nr = frames.div_ceil(frames_per_block).max(2);
        let req = libc::tpacket_req {
            tp_block_size: block_size as u32,
            tp_block_nr: block_nr as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: (frames_per_block * block_nr) as u32,
        };
        // SAFETY: `req` is a valid tpacket_req and outlives the call.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_RX_RING,
                (&req as *const libc::tpacket_req).cast(),
                std::mem::size_of::<libc::tpacket_req>() as u32,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let ring_len = block_size * block_nr;
        // SAFETY: maps the ring the kernel just allocated for this socket.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let sock = PacketSocket {
            fd,
            ring: NonNull::new(ring.cast()).expect("mmap returned a mapping"),
            ring_len,
            frame_size,
            block_size,
            frames_per_block,
            frame_nr: frames_per_block * block_nr,
            next: Cell::new(0),
            ifindex,
        };
        // Bind last: no frame lands in the ring before it exists.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL_BE;
        sll.sll_ifindex = ifindex;
        // SAFETY: `sll` is a valid sockaddr_ll and outlives the call.
        let rc = unsafe {
            libc::bind(
                sock.fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(sock)
    }

    fn frame_ptr(&self, i: usize) -> *mut u8 {
        let block = i / self.frames_per_block;
        let within = i % self.frames_per_block;
        let off = block * self.block_size + within * self.frame_size;
        debug_assert!(off + self.frame_size <= self.ring_len);
        // SAFETY: `off` is inside the mapping (checked above in debug builds; by
        // construction of the ring's geometry in all).
        unsafe { self.ring.as_ptr().add(off) }
    }

    /// Hands up to `budget` received frames to `f`, in order, and gives their slots
    /// back to the kernel. Returns how many it handed.
    pub fn receive(&self, budget: usize, mut f: impl FnMut(&[u8], RxMeta)) -> usize {
        let mut n = 0;
        while n < budget {
            let hdr = self.frame_ptr(self.next.get()) as *mut libc::tpacket2_hdr;
            // SAFETY: `hdr` points at a frame header inside the ring; the kernel
            // writes it before setting TP_STATUS_USER, which we read with a volatile
            // load and an acquire fence before reading anything else.
            let status = unsafe { std::ptr::read_volatile(&(*hdr).tp_status) };
            if status & libc::TP_STATUS_USER == 0 {
                break;
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            // SAFETY: as above; the frame is ours until we hand it back.
            let (mac, snaplen, len) = unsafe {
                (
                    usize::from((*hdr).tp_mac),
                    (*hdr).tp_snaplen as usize,
                    (*hdr).tp_len as usize,
                )
            };
            let base = hdr as *const u8;
            // SAFETY: the kernel keeps tp_mac + tp_snaplen within the frame.
            let pkttype = unsafe { *base.add(SOCKADDR_OFFSET + PKTTYPE_OFFSET) };
            let meta = RxMeta {
                csum_not_ready: status & libc::TP_STATUS_CSUMNOTREADY != 0,
                truncated: snaplen < len,
                other_host: pkttype == libc::PACKET_OTHERHOST,
                vlan: status & libc::TP_STATUS_VLAN_VALID != 0,
            };
            let within = mac + snaplen <= self.frame_size;
            if within {
                // SAFETY: checked to lie inside this frame of the ring.
                let bytes = unsafe { std::slice::from_raw_parts(base.add(mac), snaplen) };
                f(bytes, meta);
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            // SAFETY: hands the frame back to the kernel.
            unsafe { std::ptr::write_volatile(&mut (*hdr).tp_status, libc::TP_STATUS_KERNEL) };
            self.next.set((self.next.get() + 1) % self.frame_nr);
            n += 1;
        }
        n
    }

    /// Sends one whole Ethernet frame. `Ok(false)`: the kernel's transmit queue is
    /// full, and the caller keeps the frame to try again.
    pub fn send(&self, frame: &[u8]) -> io::Result<bool> {
        // SAFETY: `frame` is valid for reads of its length during the call.
        let rc = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS) {
                return Ok(false);
            }
            return Err(e);
        }
        Ok(true)
    }

    /// Frames the kernel dropped because the ring was full since the last call (the
    /// switch itself losing packets), read with `PACKET_STATISTICS`, which resets it.
    pub fn ring_drops(&self) -> io::Result<u64> {
        let mut st = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as u32;
        // SAFETY: `st` and `len` are valid for the kernel to write.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(u64::from(st.tp_drops))
    }

    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }
}

impl AsRawFd for PacketSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // SAFETY: unmaps the ring mapped in `open`; nothing refers to it any more.
        unsafe { libc::munmap(self.ring.as_ptr().cast(), self.ring_len) };
    }
}

fn setsockopt(fd: &OwnedFd, opt: i32, value: i32) -> io::Result<()> {
    // SAFETY: `value` is an int and outlives the call.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            opt,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::other(format!(
            "setsockopt(SOL_PACKET, {opt}): {}",
            io::Error::last_os_error()
        )));
    }
    Ok(())
}

fn ifindex(ifname: &str) -> io::Result<i32> {
    let c = CString::new(ifname).map_err(|_| io::Error::other("interface name has a NUL"))?;
    // SAFETY: `c` is a valid C string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        return Err(io::Error::other(format!("no interface named {ifname:?}")));
    }
    Ok(i as i32)
}

/// What the switch needs to know of an interface: its MAC address, MTU and IPv4
/// addresses.
#[derive(Debug, Clone)]
pub struct InterfaceInfo {
    pub mac: [u8; 6],
    pub mtu: usize,
    pub addrs: Vec<Ipv4Addr>,
}

/// Reads `ifname`'s MAC address, MTU and IPv4 addresses from the kernel.
pub fn interface_info(ifname: &str) -> io::Result<InterfaceInfo> {
    ifindex(ifname)?;
    // SAFETY: a datagram socket only to issue interface ioctls on.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // struct ifreq: 16 bytes of name, then a 24-byte union.
    let mut req = [0u8; 40];
    req[..ifname.len().min(15)].copy_from_slice(&ifname.as_bytes()[..ifname.len().min(15)]);
    // SAFETY: `req` is a buffer the size of struct ifreq.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFHWADDR, req.as_mut_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&req[18..24]);
    // SAFETY: as above.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFMTU, req.as_mut_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mtu = i32::from_ne_bytes(req[16..20].try_into().expect("4 bytes")) as usize;

    let mut addrs = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates a list we free below.
    if unsafe { libc::getifaddrs(&mut list) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` walks the list getifaddrs returned, which is valid until freed.
        let ifa = unsafe { &*cur };
        // SAFETY: ifa_name is a C string for every entry.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
        if name.to_bytes() == ifname.as_bytes() && !ifa.ifa_addr.is_null() {
            // SAFETY: ifa_addr is non-null and at least a sockaddr.
            let family = unsafe { (*ifa.ifa_addr).sa_family };
            if i32::from(family) == libc::AF_INET {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                addrs.push(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: frees the list returned above; no reference to it survives.
    unsafe { libc::freeifaddrs(list) };
    Ok(InterfaceInfo { mac, mtu, addrs })
}

/// Waits until one of `fds` is readable or `timeout_ns` passes (`None`: no limit).
/// An interrupted wait (a signal) returns normally.
pub fn wait_readable(fds: &[RawFd], timeout_ns: Option<u64>) -> io::Result<()> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `pfds` and `ts` outlive the call; no signal mask is changed.
    let rc = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}
