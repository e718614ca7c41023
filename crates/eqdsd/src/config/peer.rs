//! `[[peer]]`: remote daemons named one by one, with the inner prefixes each owns.

use std::net::SocketAddrV4;

use ipnet::IpNet;
use serde::Deserialize;

use super::interface::Interface;
use super::tunnel::TunnelSection;
use super::{invalid, ConfigError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PeerSection {
    endpoint: SocketAddrV4,
    allowed_ips: Vec<IpNet>,
}

/// A peer named in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerConfig {
    /// Its tunnel address.
    pub endpoint: SocketAddrV4,
    /// Inner addresses it may use as a source, and that are routed to it: IPv4 and
    /// IPv6 prefixes.
    pub allowed_ips: Vec<IpNet>,
}

/// Validates every `[[peer]]` in order: each against this host (`interface`,
/// `tunnel`) and against the peers before it.
pub(super) fn validate(
    sections: Vec<PeerSection>,
    interface: &Interface,
    tunnel: &TunnelSection,
) -> Result<Vec<PeerConfig>, ConfigError> {
    let mut peers = Vec::new();
    for (i, p) in sections.into_iter().enumerate() {
        let peer = validate_one(i, p, &peers, interface, tunnel)?;
        peers.push(peer);
    }
    Ok(peers)
}

/// Validates `peer[i]`, given the peers before it.
fn validate_one(
    i: usize,
    p: PeerSection,
    earlier: &[PeerConfig],
    interface: &Interface,
    tunnel: &TunnelSection,
) -> Result<PeerConfig, ConfigError> {
    if p.allowed_ips.is_empty() {
        return Err(invalid(format!("peer[{i}].allowed_ips"), "is empty"));
    }
    if earlier.iter().any(|q| q.endpoint.ip() == p.endpoint.ip()) {
        return Err(invalid(
            format!("peer[{i}].endpoint"),
            format!("{} is named twice", p.endpoint.ip()),
        ));
    }
    if is_own_endpoint(p.endpoint, tunnel.listen) {
        return Err(invalid(
            format!("peer[{i}].endpoint"),
            format!(
                "{} is this daemon's own tunnel.listen ({}): a host is not its own peer",
                p.endpoint, tunnel.listen
            ),
        ));
    }
    let allowed_ips: Vec<IpNet> = p.allowed_ips.iter().map(|n| n.trunc()).collect();
    for net in &allowed_ips {
        for own in interface.own_subnets() {
            if net.contains(&own.addr()) && net.prefix_len() > own.prefix_len() {
                return Err(invalid(
                    format!("peer[{i}].allowed_ips"),
                    format!(
                        "{net} holds this host's own address {} and lies inside its \
                         own subnet {}: that is this host's share, so peer[{i}] ({}) \
                         looks like this host itself",
                        own.addr(),
                        own.trunc(),
                        p.endpoint
                    ),
                ));
            }
        }
    }
    // Nested prefixes of two peers are fine: the longer one wins (a host inside a
    // gateway's prefix). The same prefix twice names no winner.
    for (j, q) in earlier.iter().enumerate() {
        if let Some(n) = allowed_ips.iter().find(|n| q.allowed_ips.contains(n)) {
            return Err(invalid(
                format!("peer[{i}].allowed_ips"),
                format!(
                    "{n} is also peer[{j}]'s ({}): the same prefix on two peers \
                     leaves open which one owns its addresses",
                    q.endpoint
                ),
            ));
        }
    }
    Ok(PeerConfig {
        endpoint: p.endpoint,
        allowed_ips,
    })
}

/// Whether a peer at `endpoint` is this daemon, listening on `listen`: the same
/// address and port, or, listening on every address, a loopback one with its port.
/// (Other addresses of this host are not known from the file; the peer table also
/// refuses a range peer at the listen address.)
fn is_own_endpoint(endpoint: SocketAddrV4, listen: SocketAddrV4) -> bool {
    endpoint.port() == listen.port()
        && (endpoint.ip() == listen.ip()
            || (listen.ip().is_unspecified() && endpoint.ip().is_loopback()))
}
