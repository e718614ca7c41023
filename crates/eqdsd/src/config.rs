//! The daemon's TOML configuration: parsing, defaults and validation.
//!
//! Every error names the key (`eqds.link_rate`, `peer[2].allowed_ips`, ...) and what is
//! wrong with it, because an operator reads it on a host that will not start. The file
//! format is documented with an example in `docs/eqdsd.md`.
//!
//! Each section has a module of its own below this one, holding its keys as written,
//! their defaults and its validation; [`Config::parse`] validates the sections in the
//! file's order, handing the ones validated so far to a later one that is checked
//! against them (a peer against this host's own subnet and tunnel address).

use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};

use eqds_proto::config::EqdsConfig;
use eqds_proto::uplink::Share;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::Deserialize;

mod eqds;
mod interface;
mod metrics;
mod native;
mod peer;
mod peer_range;
mod tunnel;

pub use peer::PeerConfig;
pub use peer_range::PeerRange;

/// Bytes of every tunnelled packet beyond the inner packet, on the underlay link: outer
/// IPv4 (20), UDP (8) and the EQDS header (16).
pub const TUNNEL_OVERHEAD: u32 = 20 + 8 + eqds_proto::wire::HEADER_LEN as u32;

/// The smallest MTU an IPv6 link may have (RFC 8200).
pub const IPV6_MIN_MTU: u32 = 1280;

/// Most peers the daemon keeps: the receiving EQIF tells a peer's sending EQIFs apart
/// by its sender id above 24 bits of peer slot (`Engine`).
pub const MAX_PEERS: u32 = 1 << 24;

/// A configuration error, naming the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{key}: {message}")]
    Invalid { key: String, message: String },
}

/// An [`ConfigError::Invalid`] for `key` (also the switch's configuration errors).
pub fn invalid(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        message: message.into(),
    }
}

/// The whole file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    interface: interface::InterfaceSection,
    tunnel: tunnel::TunnelSection,
    #[serde(default)]
    eqds: eqds::EqdsSection,
    #[serde(default)]
    metrics: metrics::MetricsSection,
    #[serde(default)]
    native: native::NativeSection,
    #[serde(default)]
    peer: Vec<peer::PeerSection>,
    #[serde(default)]
    peer_range: Vec<peer_range::PeerRangeSection>,
}

/// A sending EQIF's `weight` (from 1) and `priority`, in `[interface]` and `[native]`.
fn default_weight() -> u32 {
    1
}

/// How the sending EQIF of `section` (`interface` or `native`) shares the uplink.
fn share(section: &str, weight: u32, priority: u8) -> Result<Share, ConfigError> {
    if weight == 0 {
        return Err(invalid(format!("{section}.weight"), "must be at least 1"));
    }
    Ok(Share { weight, priority })
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// TUN interface name.
    pub ifname: String,
    /// The TUN interface's address and prefix; the prefix is routed into EQDS.
    pub address: Ipv4Net,
    /// The TUN interface's IPv6 address and prefix, if any; its prefix is routed into
    /// EQDS too.
    pub address6: Option<Ipv6Net>,
    /// Further prefixes routed into EQDS, IPv4 and IPv6.
    pub routes: Vec<IpNet>,
    /// UDP address the tunnel listens on.
    pub listen: SocketAddrV4,
    /// Underlay IP MTU: the largest outer packet. The TUN gets `mtu - TUNNEL_OVERHEAD`.
    pub mtu: u32,
    /// UDP source ports sprayed over (one socket each).
    pub paths: u16,
    /// Bytes the bottleneck link adds per packet beyond the IP packet (Ethernet 14),
    /// so that credit pays for what occupies the link.
    pub link_overhead: u32,
    /// TUN offloads: TSO super-packets in (segmented by the daemon), GRO on writes.
    pub offload: bool,
    /// UDP offloads: trains sent as GSO messages, coalesced reads (GRO), each where
    /// the kernel has it.
    pub udp_offload: bool,
    /// Never sleep: poll the sockets and the TUN device in a loop, as a DPDK
    /// dataplane does, for the latency of a daemon that is always awake.
    pub busy_poll: bool,
    /// After the last packet in or out, keep polling this many microseconds before
    /// sleeping: a reply that comes back within it costs no wakeup.
    pub poll_us: u64,
    // From here to `deprecations`: the fields from `[eqds]`, made by `eqds::validate`.
    /// The protocol's settings: the daemon's profile with the file's shared keys
    /// applied (the same keys as a scenario's `[eqds]` table).
    pub eqds: EqdsConfig,
    /// Receiving access link rate, bits per second: PULLs are paced at it.
    pub link_rate_bps: u64,
    /// Sending access link rate, bits per second, if the sending EQIFs are to pace
    /// what they release at it: credit beyond it then waits in the EQIFs, where the
    /// EQIFs' weights and priorities decide who goes, rather than in the kernel's
    /// queues. `None`: release whatever credit pays for.
    pub uplink_rate_bps: Option<u64>,
    /// Shortest sleep of the event loop when only timers are pending: PULLs due within
    /// it go out together as one datagram (see `Engine::pump`), which saves a wakeup
    /// and a send per PULL at the price of bursts of a few packets.
    pub timer_granularity_us: u64,
    /// Most peers kept at once.
    pub max_peers: u32,
    /// Deprecated spellings the file used, each with what to write instead: the
    /// daemon logs them as warnings when it starts.
    pub deprecations: Vec<String>,
    // The end of the fields from `[eqds]`.
    /// Metrics endpoint, if any.
    pub metrics: Option<SocketAddrV4>,
    /// The native interface's Unix datagram socket, if enabled. Native payloads
    /// then have a sending EQIF of their own beside the TUN's.
    pub native_socket: Option<PathBuf>,
    /// How the TUN's sending EQIF shares the uplink with the native one
    /// (`interface.weight`, `interface.priority`).
    pub tun_share: Share,
    /// How the native sending EQIF shares the uplink (`native.weight`,
    /// `native.priority`).
    pub native_share: Share,
    /// Peers named one by one.
    pub peers: Vec<PeerConfig>,
    /// Peer ranges.
    pub peer_ranges: Vec<PeerRange>,
}

impl Config {
    /// Reads and validates a file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text)
    }

    /// Parses and validates the text of a file.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| invalid("(file)", e.to_string()))?;
        eqds::split_shared(&mut table)?;
        let file: File =
            serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
                // The shared keys of `[eqds]` sit a level down while they are read.
                let key = e
                    .path()
                    .to_string()
                    .replace(&format!(".{}", eqds::SHARED_KEYS), "");
                let message = e.inner().message().to_string();
                invalid(if key == "." { "(file)".into() } else { key }, message)
            })?;
        Self::validate(file)
    }

    /// The TUN device's MTU: the largest inner packet.
    pub fn inner_mtu(&self) -> u32 {
        self.mtu - TUNNEL_OVERHEAD
    }

    /// The charged size of a full packet: credit granted by one PULL.
    pub fn charged_mtu(&self) -> u32 {
        self.mtu + self.link_overhead
    }

    /// Validates the sections in the file's order, each whole before the next, so that
    /// the first error found is the one reported.
    fn validate(f: File) -> Result<Self, ConfigError> {
        let interface = interface::validate(f.interface)?;
        let tunnel = tunnel::validate(f.tunnel, &interface)?;
        let eqds = eqds::validate(f.eqds)?;
        let metrics = metrics::validate(f.metrics);
        let native = native::validate(f.native)?;
        let peers = peer::validate(f.peer, &interface, &tunnel)?;
        let peer_ranges = peer_range::validate(f.peer_range)?;
        if peers.is_empty() && peer_ranges.is_empty() {
            return Err(invalid(
                "peer",
                "no [[peer]] or [[peer_range]]: the daemon would accept no tunnel",
            ));
        }
        Ok(Self {
            ifname: interface.name,
            address: interface.address,
            address6: interface.address6,
            routes: interface.routes,
            listen: tunnel.listen,
            mtu: tunnel.mtu,
            paths: tunnel.paths,
            link_overhead: tunnel.link_overhead,
            offload: tunnel.offload,
            udp_offload: tunnel.udp_offload,
            busy_poll: tunnel.busy_poll,
            poll_us: tunnel.poll_us,
            eqds: eqds.eqds,
            link_rate_bps: eqds.link_rate_bps,
            uplink_rate_bps: eqds.uplink_rate_bps,
            timer_granularity_us: eqds.timer_granularity_us,
            max_peers: eqds.max_peers,
            deprecations: eqds.deprecations,
            metrics,
            native_socket: native.socket,
            tun_share: interface.share,
            native_share: native.share,
            peers,
            peer_ranges,
        })
    }
}

/// Parses a rate in tc's notation: `500mbit`, `1gbit`, `25gbit`, `100kbit`, `1000000bit`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let lower = s.trim().to_ascii_lowercase();
    let (num, mult) = [
        ("tbit", 1e12),
        ("gbit", 1e9),
        ("mbit", 1e6),
        ("kbit", 1e3),
        ("bit", 1.0),
    ]
    .iter()
    .find_map(|&(unit, m)| lower.strip_suffix(unit).map(|n| (n, m)))
    .ok_or_else(|| format!("'{s}' has no unit (bit, kbit, mbit, gbit, tbit)"))?;
    let value: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' does not start with a number"))?;
    let bps = value * mult;
    if !(1e5..=1e13).contains(&bps) {
        return Err(format!("'{s}' is outside 100kbit..10tbit"));
    }
    Ok(bps.round() as u64)
}

#[cfg(test)]
mod tests;
