//! `[tunnel]`: the underlay UDP socket(s), the outer MTU and the I/O style.

use std::net::SocketAddrV4;

use serde::Deserialize;

use super::interface::Interface;
use super::{invalid, ConfigError, IPV6_MIN_MTU, TUNNEL_OVERHEAD};

/// The section as written; once [`validate`]d it is its own validated form, since
/// `Config` takes its keys unchanged.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TunnelSection {
    pub(super) listen: SocketAddrV4,
    #[serde(default = "default_mtu")]
    pub(super) mtu: u32,
    #[serde(default = "default_paths")]
    pub(super) paths: u16,
    #[serde(default = "default_link_overhead")]
    pub(super) link_overhead: u32,
    #[serde(default = "default_offload")]
    pub(super) offload: bool,
    #[serde(default = "default_udp_offload")]
    pub(super) udp_offload: bool,
    #[serde(default)]
    pub(super) busy_poll: bool,
    #[serde(default)]
    pub(super) poll_us: u64,
}

fn default_offload() -> bool {
    false
}
fn default_udp_offload() -> bool {
    true
}
fn default_mtu() -> u32 {
    1500
}
fn default_paths() -> u16 {
    8
}
fn default_link_overhead() -> u32 {
    14
}

/// Checks the section; the inner MTU must suit IPv6 if `interface` carries it.
pub(super) fn validate(
    t: TunnelSection,
    interface: &Interface,
) -> Result<TunnelSection, ConfigError> {
    let mtu = t.mtu;
    if !(576..=65000).contains(&mtu) {
        return Err(invalid(
            "tunnel.mtu",
            format!("{mtu} is outside 576..=65000"),
        ));
    }
    // Linux turns IPv6 off on a device whose MTU is below the IPv6 minimum, 1280.
    if interface.carries_ipv6() && mtu < IPV6_MIN_MTU + TUNNEL_OVERHEAD {
        return Err(invalid(
            "tunnel.mtu",
            format!(
                "{mtu} leaves an inner MTU of {}, below IPv6's minimum of {IPV6_MIN_MTU}: \
                 interface.address6 and IPv6 interface.routes need at least {}",
                mtu - TUNNEL_OVERHEAD,
                IPV6_MIN_MTU + TUNNEL_OVERHEAD
            ),
        ));
    }
    if t.paths == 0 || t.paths > 256 {
        return Err(invalid("tunnel.paths", "must be 1..=256"));
    }
    if t.link_overhead > 100 {
        return Err(invalid("tunnel.link_overhead", "more than 100 bytes"));
    }
    if t.poll_us > 1_000_000 {
        return Err(invalid(
            "tunnel.poll_us",
            "must be 0..=1000000 (for a daemon that never sleeps, set tunnel.busy_poll)",
        ));
    }
    Ok(t)
}
