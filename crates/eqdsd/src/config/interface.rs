//! `[interface]`: the TUN device, the prefixes it routes into EQDS, and how its
//! sending EQIF shares the uplink.

use eqds_proto::uplink::Share;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::Deserialize;

use super::{default_weight, invalid, share, ConfigError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct InterfaceSection {
    #[serde(default = "default_ifname")]
    name: String,
    address: Ipv4Net,
    #[serde(default)]
    address6: Option<Ipv6Net>,
    #[serde(default)]
    routes: Vec<IpNet>,
    #[serde(default = "default_weight")]
    weight: u32,
    #[serde(default)]
    priority: u8,
}

fn default_ifname() -> String {
    "eqds0".into()
}

/// The validated section.
pub(super) struct Interface {
    pub(super) name: String,
    pub(super) address: Ipv4Net,
    pub(super) address6: Option<Ipv6Net>,
    /// Truncated to their networks.
    pub(super) routes: Vec<IpNet>,
    pub(super) share: Share,
}

impl Interface {
    /// Whether the interface carries IPv6: an IPv6 address or an IPv6 route.
    pub(super) fn carries_ipv6(&self) -> bool {
        self.address6.is_some() || self.routes.iter().any(|r| matches!(r, IpNet::V6(_)))
    }

    /// This host's own subnets, each with the host's address in it.
    pub(super) fn own_subnets(&self) -> impl Iterator<Item = IpNet> {
        [Some(IpNet::V4(self.address)), self.address6.map(IpNet::V6)]
            .into_iter()
            .flatten()
    }
}

pub(super) fn validate(s: InterfaceSection) -> Result<Interface, ConfigError> {
    let name = s.name;
    if name.is_empty()
        || name.len() > 15
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    {
        return Err(invalid(
            "interface.name",
            format!("'{name}' is not a Linux interface name (1-15 of [A-Za-z0-9._-])"),
        ));
    }
    if s.address.prefix_len() == 32
        && s.address6.is_none_or(|a| a.prefix_len() == 128)
        && s.routes.is_empty()
    {
        return Err(invalid(
            "interface.address",
            "a /32 routes nothing into EQDS: give a prefix or interface.routes",
        ));
    }
    if let Some(a) = s.address6 {
        if a.addr().is_unspecified() || a.addr().is_multicast() || a.addr().is_loopback() {
            return Err(invalid(
                "interface.address6",
                format!("{} is not a unicast address for an interface", a.addr()),
            ));
        }
    }
    Ok(Interface {
        name,
        address: s.address,
        address6: s.address6,
        routes: s.routes.iter().map(|n| n.trunc()).collect(),
        share: share("interface", s.weight, s.priority)?,
    })
}
