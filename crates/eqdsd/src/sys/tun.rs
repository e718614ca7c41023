//! The TUN device: created non-persistent, so that everything the daemon installs (the
//! interface, its address, the routes through it) disappears with the file descriptor,
//! including when the daemon is killed.

use std::ffi::CString;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;

use ipnet::Ipv4Net;

/// An open TUN device (IFF_TUN, no packet information header, non-blocking).
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    name: String,
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
    /// Creates TUN device `name` with `address`, `mtu`, up, and routes `routes`
    /// through it (the address's own prefix is routed by the kernel).
    pub fn create(name: &str, address: Ipv4Net, mtu: u32, routes: &[Ipv4Net]) -> io::Result<Self> {
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
        let mut req = ifreq(name)?;
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF takes a pointer to an ifreq, which outlives the call.
        check(
            unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) },
            "TUNSETIFF",
        )?;
        let tun = Self {
            fd,
            name: name.to_owned(),
        };
        tun.configure(address, mtu)?;
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
        let mut req = ifreq(&self.name)?;
        req.ifr_ifru.ifru_mtu = mtu as libc::c_int;
        // SAFETY (this and the following ioctls): each takes a pointer to an ifreq that
        // lives across the call; results are checked.
        check(
            unsafe { libc::ioctl(s, libc::SIOCSIFMTU, &mut req) },
            "SIOCSIFMTU",
        )?;
        let mut req = ifreq(&self.name)?;
        req.ifr_ifru.ifru_addr = sockaddr_in(address.addr());
        check(
            unsafe { libc::ioctl(s, libc::SIOCSIFADDR, &mut req) },
            "SIOCSIFADDR",
        )?;
        let mut req = ifreq(&self.name)?;
        req.ifr_ifru.ifru_netmask = sockaddr_in(address.netmask());
        check(
            unsafe { libc::ioctl(s, libc::SIOCSIFNETMASK, &mut req) },
            "SIOCSIFNETMASK",
        )?;
        let mut req = ifreq(&self.name)?;
        check(
            unsafe { libc::ioctl(s, libc::SIOCGIFFLAGS, &mut req) },
            "SIOCGIFFLAGS",
        )?;
        // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
        unsafe {
            req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        }
        check(
            unsafe { libc::ioctl(s, libc::SIOCSIFFLAGS, &mut req) },
            "SIOCSIFFLAGS",
        )?;
        Ok(())
    }

    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one packet into `buf`; `WouldBlock` when none is waiting.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for writes of its length.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Writes one packet.
    pub fn write(&self, pkt: &[u8]) -> io::Result<usize> {
        // SAFETY: `pkt` is valid for reads of its length.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), pkt.as_ptr().cast(), pkt.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
