//! `[[peer_range]]`: a rack of remote daemons accepted without naming each.

use std::net::{Ipv4Addr, SocketAddrV4};

use ipnet::{IpNet, Ipv4Net};
use serde::Deserialize;

use super::{invalid, ConfigError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PeerRangeSection {
    endpoints: Ipv4Net,
    port: u16,
    allowed_ips: Ipv4Net,
}

/// A range of peers accepted without naming each: the peer at `endpoints` host bits H
/// (port `port`) owns inner address `allowed_ips` host bits H, so one file serves a
/// whole rack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerRange {
    /// Tunnel addresses of the range.
    pub endpoints: Ipv4Net,
    /// Their tunnel port.
    pub port: u16,
    /// Inner addresses, host bits mapped one to one onto `endpoints`.
    pub allowed_ips: Ipv4Net,
}

impl PeerRange {
    /// The tunnel endpoint owning inner address `inner`, if it is in the range.
    pub fn endpoint_for(&self, inner: Ipv4Addr) -> Option<SocketAddrV4> {
        if !self.allowed_ips.contains(&inner) {
            return None;
        }
        let host = u32::from(inner) & u32::from(self.allowed_ips.hostmask());
        let addr = Ipv4Addr::from(u32::from(self.endpoints.network()) | host);
        Some(SocketAddrV4::new(addr, self.port))
    }

    /// The one inner address the peer at `endpoint` may use, if it is in the range.
    pub fn inner_for(&self, endpoint: Ipv4Addr) -> Option<Ipv4Addr> {
        if !self.endpoints.contains(&endpoint) {
            return None;
        }
        let host = u32::from(endpoint) & u32::from(self.endpoints.hostmask());
        Some(Ipv4Addr::from(u32::from(self.allowed_ips.network()) | host))
    }
}

/// Validates every `[[peer_range]]` in order, each against the ranges before it.
/// A range may hold this host itself (one file serves the whole rack): the peer table
/// makes no peer of it.
pub(super) fn validate(sections: Vec<PeerRangeSection>) -> Result<Vec<PeerRange>, ConfigError> {
    let mut ranges = Vec::new();
    for (i, r) in sections.into_iter().enumerate() {
        let range = validate_one(i, r, &ranges)?;
        ranges.push(range);
    }
    Ok(ranges)
}

/// Validates `peer_range[i]`, given the ranges before it.
fn validate_one(
    i: usize,
    r: PeerRangeSection,
    earlier: &[PeerRange],
) -> Result<PeerRange, ConfigError> {
    if r.endpoints.prefix_len() != r.allowed_ips.prefix_len() {
        return Err(invalid(
            format!("peer_range[{i}].allowed_ips"),
            format!(
                "prefix /{} differs from endpoints' /{}: host bits map one to one",
                r.allowed_ips.prefix_len(),
                r.endpoints.prefix_len()
            ),
        ));
    }
    if r.port == 0 {
        return Err(invalid(format!("peer_range[{i}].port"), "must not be 0"));
    }
    let range = PeerRange {
        endpoints: r.endpoints.trunc(),
        port: r.port,
        allowed_ips: r.allowed_ips.trunc(),
    };
    for (j, q) in earlier.iter().enumerate() {
        for (key, mine, theirs, what) in [
            (
                "allowed_ips",
                range.allowed_ips,
                q.allowed_ips,
                "two hosts would own one inner address",
            ),
            (
                "endpoints",
                range.endpoints,
                q.endpoints,
                "one host would own two inner addresses",
            ),
        ] {
            if overlaps(&IpNet::V4(mine), &IpNet::V4(theirs)) {
                return Err(invalid(
                    format!("peer_range[{i}].{key}"),
                    format!("{mine} overlaps peer_range[{j}].{key} {theirs}: {what}"),
                ));
            }
        }
    }
    Ok(range)
}

/// Whether two prefixes share an address (never across families).
fn overlaps(a: &IpNet, b: &IpNet) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}
