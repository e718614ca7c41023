//! The TUN device: created non-persistent, so that everything the daemon installs (the
//! interface, its address, the routes through it) disappears with the file descriptor,
//! including when the daemon is killed.

use std::ffi::CString;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// An open TUN device (IFF_TUN, no packet information header, non-blocking).
///
/// With offloads, every read and write carries a virtio-net header
/// ([`crate::gso::VNET_HDR_LEN`] bytes) and reads may return TCP super-packets of up to
/// 64 KB (TSO): see [`crate::gso`]. Writes go through the kernel's GRO (`IFF_NAPI`),
/// which merges consecutive segments of a flow before TCP sees them.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    name: String,
    offload: bool,
}

fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    let bytes = name.as_bytes();
    if bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name '{name}'"),
        ));
    }
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

fn sockaddr_in(addr: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(addr).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size; the kernel reads the
    // family and interprets the rest accordingly.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

fn check(ret: libc::c_int, what: &str) -> io::Result<()> {
    if ret < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

impl Tun {
    /// Creates TUN device `name` with `address` (and `address6`, if given), `mtu`,
    /// up, and routes `routes` through it (the addresses' own prefixes are routed by
    /// the kernel). IFF_NO_PI: packets of both IP versions are read and written bare,
    /// and the kernel tells them apart by their version nibble.
    pub fn create(
        name: &str,
        address: Ipv4Net,
        address6: Option<Ipv6Net>,
        mtu: u32,
        routes: &[IpNet],
        offload: bool,
    ) -> io::Result<Self> {
        let path = CString::new("/dev/net/tun").expect("no NUL in a literal");
        // SAFETY: a valid C string and flags; the result is checked.
        let raw = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        check(raw, "open /dev/net/tun")?;
        // SAFETY: `raw` is a descriptor we just opened and own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut flags = libc::IFF_TUN | libc::IFF_NO_PI;
        if offload {
            flags |= libc::IFF_VNET_HDR | libc::IFF_NAPI;
        }
        let mut req = ifreq(name)?;
        req.ifr_ifru.ifru_flags = flags as libc::c_short;
        // SAFETY: TUNSETIFF takes a pointer to an ifreq, which outlives the call.
        check(
            unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) },
            "TUNSETIFF",
        )?;
        if offload {
            let features = libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO_ECN;
            // SAFETY: TUNSETOFFLOAD takes the feature bits by value.
            check(
                unsafe {
                    libc::ioctl(
                        fd.as_raw_fd(),
                        libc::TUNSETOFFLOAD,
                        features as libc::c_ulong,
                    )
                },
                "TUNSETOFFLOAD",
            )?;
        }
        let tun = Self {
            fd,
            name: name.to_owned(),
            offload,
        };
        tun.configure(address, mtu)?;
        if let Some(a) = address6 {
            tun.add_address6(a)?;
        }
        for route in routes {
            let out = Command::new("ip")
                .args(["route", "replace", &route.to_string(), "dev", name])
                .output()?;
            if !out.status.success() {
                return Err(io::Error::other(format!(
                    "ip route replace {route} dev {name}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
        }
        Ok(tun)
    }

    /// Address, netmask, MTU and up, through the classic interface ioctls.
    fn configure(&self, address: Ipv4Net, mtu: u32) -> io::Result<()> {
        // SAFETY: a plain socket call; the descriptor is wrapped at once.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        check(raw, "socket for interface ioctls")?;
        // SAFETY: `raw` was just created and is owned here.
        let sock = unsafe { OwnedFd::from_raw_fd(raw) };
        let s = sock.as_raw_fd();
        // One interface ioctl: a fresh ifreq for this device, filled by `fill`.
        let ioctl = |request, what: &str, fill: &dyn Fn(&mut libc::ifreq)| {
            let mut req = ifreq(&self.name)?;
            fill(&mut req);
            // SAFETY: each request takes a pointer to an ifreq that lives across the
            // call; the result is checked.
            check(unsafe { libc::ioctl(s, request, &mut req) }, what)?;
            Ok::<_, io::Error>(req)
        };
        ioctl(libc::SIOCSIFMTU, "SIOCSIFMTU", &|r| {
            r.ifr_ifru.ifru_mtu = mtu as libc::c_int
        })?;
        ioctl(libc::SIOCSIFADDR, "SIOCSIFADDR", &|r| {
            r.ifr_ifru.ifru_addr = sockaddr_in(address.addr())
        })?;
        ioctl(libc::SIOCSIFNETMASK, "SIOCSIFNETMASK", &|r| {
            r.ifr_ifru.ifru_netmask = sockaddr_in(address.netmask())
        })?;
        // SAFETY: SIOCGIFFLAGS fills the flags member of the union.
        let flags = unsafe {
            ioctl(libc::SIOCGIFFLAGS, "SIOCGIFFLAGS", &|_| {})?
                .ifr_ifru
                .ifru_flags
        };
        let up = flags | (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        ioctl(libc::SIOCSIFFLAGS, "SIOCSIFFLAGS", &|r| {
            r.ifr_ifru.ifru_flags = up
        })?;
        Ok(())
    }

    /// Adds an IPv6 address and prefix length, through the same interface ioctl as
    /// IPv4's (SIOCSIFADDR) on an IPv6 socket. It goes with the device, like the rest.
    fn add_address6(&self, address: Ipv6Net) -> io::Result<()> {
        let cname = CString::new(self.name.as_str()).expect("no NUL in a checked name");
        // SAFETY: a valid C string; 0 (no such device) is checked.
        let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if index == 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("if_nametoindex: {e}")));
        }
        // SAFETY: a plain socket call; the descriptor is wrapped at once.
        let raw = unsafe { libc::socket(libc::AF_INET6, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        check(raw, "IPv6 socket for the address ioctl")?;
        // SAFETY: `raw` was just created and is owned here.
        let sock = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = libc::in6_ifreq {
            ifr6_addr: libc::in6_addr {
                s6_addr: address.addr().octets(),
            },
            ifr6_prefixlen: u32::from(address.prefix_len()),
            ifr6_ifindex: index as libc::c_int,
        };
        // SAFETY: SIOCSIFADDR on an AF_INET6 socket takes a pointer to an in6_ifreq,
        // which lives across the call; the result is checked.
        check(
            unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFADDR, &mut req) },
            &format!("SIOCSIFADDR {address}"),
        )
    }

    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether reads and writes carry a virtio-net header.
    pub fn offload(&self) -> bool {
        self.offload
    }

    /// Reads one packet into `buf` (after a virtio-net header with offloads);
    /// `WouldBlock` when none is waiting.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for writes of its length.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Writes one IP packet (behind an all-zero virtio-net header with offloads: no
    /// segmentation, checksums complete).
    pub fn write(&self, pkt: &[u8]) -> io::Result<usize> {
        let vnet = [0u8; crate::gso::VNET_HDR_LEN];
        let iov = [
            libc::iovec {
                iov_base: vnet.as_ptr() as *mut libc::c_void,
                iov_len: vnet.len(),
            },
            libc::iovec {
                iov_base: pkt.as_ptr() as *mut libc::c_void,
                iov_len: pkt.len(),
            },
        ];
        let parts = if self.offload { &iov[..] } else { &iov[1..] };
        // SAFETY: the iovecs point at buffers valid for reads of their lengths.
        let n = unsafe { libc::writev(self.fd.as_raw_fd(), parts.as_ptr(), parts.len() as i32) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }
}

/// Most payload parts of one gathered write (the coalescer's run limit).
pub const GATHER_MAX: usize = crate::gro::MAX_SEGMENTS;

impl Tun {
    /// Writes one packet gathered from `header` (a virtio-net header and the packet's
    /// headers) and `parts` (offloads on only). At most [`GATHER_MAX`] parts.
    pub fn write_gathered<'a>(
        &self,
        header: &[u8],
        parts: impl Iterator<Item = &'a [u8]>,
    ) -> io::Result<usize> {
        debug_assert!(self.offload, "a virtio-net header without IFF_VNET_HDR");
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; GATHER_MAX + 1];
        iov[0] = libc::iovec {
            iov_base: header.as_ptr() as *mut libc::c_void,
            iov_len: header.len(),
        };
        let mut n = 1;
        for part in parts {
            if n > GATHER_MAX {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "too many parts",
                ));
            }
            iov[n] = libc::iovec {
                iov_base: part.as_ptr() as *mut libc::c_void,
                iov_len: part.len(),
            };
            n += 1;
        }
        // SAFETY: the first `n` iovecs point at buffers valid for reads of their
        // lengths for the duration of the call.
        let w = unsafe { libc::writev(self.fd.as_raw_fd(), iov.as_ptr(), n as i32) };
        if w < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(w as usize)
    }
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
