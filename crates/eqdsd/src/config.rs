//! The daemon's TOML configuration: parsing, defaults and validation.
//!
//! Every error names the key (`eqds.link_rate`, `peer[2].allowed_ips`, ...) and what is
//! wrong with it, because an operator reads it on a host that will not start. The file
//! format is documented with an example in `docs/eqdsd.md`.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};

use eqds_proto::receiver::Policy;
use eqds_proto::sender::Mode;
use eqds_proto::uplink::Share;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::Deserialize;

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

fn invalid(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        message: message.into(),
    }
}

/// The whole file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    interface: InterfaceSection,
    tunnel: TunnelSection,
    #[serde(default)]
    eqds: EqdsSection,
    #[serde(default)]
    metrics: MetricsSection,
    #[serde(default)]
    native: NativeSection,
    #[serde(default)]
    peer: Vec<PeerSection>,
    #[serde(default)]
    peer_range: Vec<PeerRangeSection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InterfaceSection {
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

fn default_thin_stream_credit() -> bool {
    true
}

fn default_weight() -> u32 {
    1
}

fn default_ifname() -> String {
    "eqds0".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TunnelSection {
    listen: SocketAddrV4,
    #[serde(default = "default_mtu")]
    mtu: u32,
    #[serde(default = "default_paths")]
    paths: u16,
    #[serde(default = "default_link_overhead")]
    link_overhead: u32,
    #[serde(default = "default_offload")]
    offload: bool,
    #[serde(default = "default_udp_offload")]
    udp_offload: bool,
    #[serde(default)]
    busy_poll: bool,
    #[serde(default)]
    poll_us: u64,
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EqdsSection {
    #[serde(default = "default_mode")]
    mode: String,
    #[serde(default = "default_link_rate")]
    link_rate: String,
    #[serde(default)]
    uplink_rate: Option<String>,
    #[serde(default = "default_window")]
    window: u32,
    initial_window: Option<u32>,
    demand_lookahead: Option<u32>,
    #[serde(default = "default_thin_stream_credit")]
    thin_stream_credit: bool,
    #[serde(default)]
    acks_first: bool,
    #[serde(default)]
    path_stats: bool,
    #[serde(default)]
    path_avoidance_us: u64,
    #[serde(default)]
    loss_reorder_window_us: u64,
    #[serde(default = "default_pace_control")]
    pace_control: bool,
    #[serde(default = "default_send_queue")]
    send_queue: u32,
    #[serde(default = "default_policy")]
    policy: String,
    #[serde(default = "default_pacing")]
    pacing: f64,
    #[serde(default = "default_pull_burst")]
    pull_burst: u32,
    #[serde(default = "default_timer_granularity_us")]
    timer_granularity_us: u64,
    #[serde(default = "default_ecn_threshold")]
    ecn_threshold: u32,
    ecn_max_threshold: Option<u32>,
    #[serde(default = "default_ecn_max_p")]
    ecn_max_p: f64,
    #[serde(default = "default_rto_us")]
    rto_us: u64,
    #[serde(default = "default_reorder_timeout_us")]
    reorder_timeout_us: u64,
    #[serde(default = "default_ack_coalesce")]
    ack_coalesce: u32,
    #[serde(default = "default_max_peers")]
    max_peers: u32,
}

impl Default for EqdsSection {
    fn default() -> Self {
        toml::from_str("").expect("every [eqds] key has a default")
    }
}

fn default_mode() -> String {
    "rts".into()
}
fn default_link_rate() -> String {
    "10gbit".into()
}
fn default_window() -> u32 {
    32
}
fn default_pace_control() -> bool {
    true
}
fn default_send_queue() -> u32 {
    100
}
fn default_policy() -> String {
    "fifo".into()
}
fn default_pacing() -> f64 {
    1.0
}
fn default_pull_burst() -> u32 {
    4
}
fn default_timer_granularity_us() -> u64 {
    40
}
fn default_ecn_threshold() -> u32 {
    25
}
fn default_ecn_max_p() -> f64 {
    1.0
}
fn default_rto_us() -> u64 {
    2_000
}
fn default_reorder_timeout_us() -> u64 {
    10_000
}
fn default_ack_coalesce() -> u32 {
    8
}
fn default_max_peers() -> u32 {
    1024
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MetricsSection {
    #[serde(default = "default_metrics")]
    listen: Option<SocketAddrV4>,
}

impl Default for MetricsSection {
    fn default() -> Self {
        Self {
            listen: default_metrics(),
        }
    }
}

fn default_metrics() -> Option<SocketAddrV4> {
    Some(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9477))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeSection {
    #[serde(default)]
    socket: Option<String>,
    #[serde(default = "default_weight")]
    weight: u32,
    #[serde(default)]
    priority: u8,
}

impl Default for NativeSection {
    fn default() -> Self {
        toml::from_str("").expect("every [native] key has a default")
    }
}

/// Longest path a Unix socket address holds (`sun_path` less its terminating NUL).
const UNIX_PATH_MAX: usize = 107;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerSection {
    endpoint: SocketAddrV4,
    allowed_ips: Vec<IpNet>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerRangeSection {
    endpoints: Ipv4Net,
    port: u16,
    allowed_ips: Ipv4Net,
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
    /// First-RTT mode.
    pub mode: Mode,
    /// Receiving access link rate, bits per second: PULLs are paced at it.
    pub link_rate_bps: u64,
    /// Sending access link rate, bits per second, if the sending EQIFs are to pace
    /// what they release at it: credit beyond it then waits in the EQIFs, where the
    /// EQIFs' weights and priorities decide who goes, rather than in the kernel's
    /// queues. `None`: release whatever credit pays for.
    pub uplink_rate_bps: Option<u64>,
    /// Credit window per tunnel, in packets.
    pub window_packets: u32,
    /// Packets an idle tunnel sends to an idle receiver before any credit; `None`:
    /// as the mode says (NDP the window, RTS none).
    pub initial_window_packets: Option<u32>,
    /// Credit a tunnel asks for beyond its backlog while packets are in flight, in
    /// packets (`SenderConfig::demand_lookahead`).
    pub demand_lookahead_packets: u32,
    /// A small packet restarting an idle tunnel may spend up to one MTU of stale
    /// credit rather than send an RTS (`SenderConfig::thin_stream_credit`).
    pub thin_stream_credit: bool,
    /// Pure TCP ACKs join their tunnel's send queue ahead of waiting data.
    pub acks_first: bool,
    /// Keep per-path statistics in every tunnel and export them as metrics.
    pub path_stats: bool,
    /// How long a tunnel sprays around a path that trimmed or lost a packet, in
    /// microseconds (0: never).
    pub path_avoidance_us: u64,
    /// Time-based loss detection (`SenderConfig::loss_reorder_window`), in
    /// microseconds (0: off).
    pub loss_reorder_window_us: u64,
    /// PULL pacing leaves room on the access link for the control packets that
    /// arrive on it (`Receiver::charge_unpulled`).
    pub pace_control: bool,
    /// Send queue per destination, in full packets' worth of bytes.
    pub send_queue_packets: u32,
    /// ASL policy.
    pub policy: Policy,
    /// PULL rate as a fraction of the link rate, in thousandths.
    pub pacing_permille: u32,
    /// PULLs a late timer may send at once.
    pub pull_burst: u32,
    /// Shortest sleep of the event loop when only timers are pending: PULLs due within
    /// it go out together as one datagram (see `Engine::pump`), which saves a wakeup
    /// and a send per PULL at the price of bursts of a few packets.
    pub timer_granularity_us: u64,
    /// Send-queue depth (packets) from which ECN-capable inner packets may be
    /// CE-marked (RED's lower threshold).
    pub ecn_threshold_packets: u32,
    /// Depth from which every ECN-capable packet is marked; in between the
    /// probability rises linearly to `ecn_max_p_ppm`. Equal to the lower
    /// threshold: a step.
    pub ecn_max_threshold_packets: u32,
    /// Marking probability at the top of RED's ramp, in millionths.
    pub ecn_max_p_ppm: u32,
    /// Retransmit timeout.
    pub rto_us: u64,
    /// Reorder hole timeout.
    pub reorder_timeout_us: u64,
    /// Packets per deferred cumulative ACK.
    pub ack_coalesce: u32,
    /// Most peers kept at once.
    pub max_peers: u32,
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
        let de = toml::Deserializer::parse(text).map_err(|e| invalid("(file)", e.to_string()))?;
        let file: File = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
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

    fn validate(f: File) -> Result<Self, ConfigError> {
        let ifname = f.interface.name;
        if ifname.is_empty()
            || ifname.len() > 15
            || !ifname
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        {
            return Err(invalid(
                "interface.name",
                format!("'{ifname}' is not a Linux interface name (1-15 of [A-Za-z0-9._-])"),
            ));
        }
        let address6 = f.interface.address6;
        if f.interface.address.prefix_len() == 32
            && address6.is_none_or(|a| a.prefix_len() == 128)
            && f.interface.routes.is_empty()
        {
            return Err(invalid(
                "interface.address",
                "a /32 routes nothing into EQDS: give a prefix or interface.routes",
            ));
        }
        if let Some(a) = address6 {
            if a.addr().is_unspecified() || a.addr().is_multicast() || a.addr().is_loopback() {
                return Err(invalid(
                    "interface.address6",
                    format!("{} is not a unicast address for an interface", a.addr()),
                ));
            }
        }
        let mtu = f.tunnel.mtu;
        if !(576..=65000).contains(&mtu) {
            return Err(invalid(
                "tunnel.mtu",
                format!("{mtu} is outside 576..=65000"),
            ));
        }
        // Linux turns IPv6 off on a device whose MTU is below the IPv6 minimum, 1280.
        let ipv6_routed =
            address6.is_some() || f.interface.routes.iter().any(|r| matches!(r, IpNet::V6(_)));
        if ipv6_routed && mtu < IPV6_MIN_MTU + TUNNEL_OVERHEAD {
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
        if f.tunnel.paths == 0 || f.tunnel.paths > 256 {
            return Err(invalid("tunnel.paths", "must be 1..=256"));
        }
        if f.tunnel.link_overhead > 100 {
            return Err(invalid("tunnel.link_overhead", "more than 100 bytes"));
        }
        if f.tunnel.poll_us > 1_000_000 {
            return Err(invalid(
                "tunnel.poll_us",
                "must be 0..=1000000 (for a daemon that never sleeps, set tunnel.busy_poll)",
            ));
        }
        let e = f.eqds;
        let mode = match e.mode.as_str() {
            "rts" => Mode::Rts,
            "ndp" => Mode::Ndp,
            other => return Err(invalid("eqds.mode", format!("'{other}' is not rts or ndp"))),
        };
        let link_rate_bps = parse_rate(&e.link_rate).map_err(|m| invalid("eqds.link_rate", m))?;
        let uplink_rate_bps = e
            .uplink_rate
            .as_deref()
            .map(parse_rate)
            .transpose()
            .map_err(|m| invalid("eqds.uplink_rate", m))?;
        let policy = match e.policy.as_str() {
            "fifo" => Policy::Fifo,
            "weighted" => Policy::Weighted,
            "priority" => Policy::StrictPriority,
            other => {
                return Err(invalid(
                    "eqds.policy",
                    format!("'{other}' is not fifo, weighted or priority"),
                ))
            }
        };
        if !(1..=1000).contains(&e.window) {
            return Err(invalid("eqds.window", "must be 1..=1000 packets"));
        }
        if e.initial_window.is_some_and(|iw| iw > e.window) {
            return Err(invalid(
                "eqds.initial_window",
                format!("must be at most eqds.window ({} packets)", e.window),
            ));
        }
        if e.demand_lookahead.is_some_and(|p| p > 1000) {
            return Err(invalid("eqds.demand_lookahead", "must be 0..=1000 packets"));
        }
        if !(1..=100_000).contains(&e.send_queue) {
            return Err(invalid("eqds.send_queue", "must be 1..=100000 packets"));
        }
        if !(e.pacing > 0.0 && e.pacing <= 2.0) {
            return Err(invalid("eqds.pacing", "must be in (0, 2]"));
        }
        let ecn_max = e.ecn_max_threshold.unwrap_or(e.ecn_threshold);
        if ecn_max < e.ecn_threshold {
            return Err(invalid(
                "eqds.ecn_max_threshold",
                format!(
                    "{ecn_max} is below eqds.ecn_threshold ({})",
                    e.ecn_threshold
                ),
            ));
        }
        if !(e.ecn_max_p >= 1e-6 && e.ecn_max_p <= 1.0) {
            return Err(invalid(
                "eqds.ecn_max_p",
                "must be in [1e-6, 1] (marking probabilities are counted in millionths)",
            ));
        }
        if !(1..=64).contains(&e.pull_burst) {
            return Err(invalid("eqds.pull_burst", "must be 1..=64"));
        }
        if e.timer_granularity_us > 1000 {
            return Err(invalid("eqds.timer_granularity_us", "must be 0..=1000"));
        }
        if e.path_avoidance_us > 10_000_000 {
            return Err(invalid("eqds.path_avoidance_us", "must be 0..=10000000"));
        }
        if e.loss_reorder_window_us >= e.rto_us {
            return Err(invalid(
                "eqds.loss_reorder_window_us",
                format!(
                    "{} must be below eqds.rto_us ({}): it finds losses sooner than \
                     the timeout, or not at all",
                    e.loss_reorder_window_us, e.rto_us
                ),
            ));
        }
        if e.rto_us == 0 || e.rto_us > 10_000_000 {
            return Err(invalid("eqds.rto_us", "must be 1..=10000000"));
        }
        if e.reorder_timeout_us == 0 || e.reorder_timeout_us > 10_000_000 {
            return Err(invalid("eqds.reorder_timeout_us", "must be 1..=10000000"));
        }
        if e.reorder_timeout_us <= 3 * e.rto_us {
            return Err(invalid(
                "eqds.reorder_timeout_us",
                format!(
                    "{} must exceed 3 x eqds.rto_us ({}): repairing a loss takes an RTO, \
                     a credit-loss timeout of the same length and an RTT, and a hole \
                     skipped sooner releases the packets behind it before the resend, \
                     which then reaches TCP out of order",
                    e.reorder_timeout_us, e.rto_us
                ),
            ));
        }
        if !(1..=64).contains(&e.ack_coalesce) {
            return Err(invalid("eqds.ack_coalesce", "must be 1..=64"));
        }
        if e.max_peers == 0 || e.max_peers > MAX_PEERS {
            return Err(invalid(
                "eqds.max_peers",
                format!("must be 1..={MAX_PEERS}"),
            ));
        }
        for (key, weight) in [
            ("interface.weight", f.interface.weight),
            ("native.weight", f.native.weight),
        ] {
            if weight == 0 {
                return Err(invalid(key, "must be at least 1"));
            }
        }
        let mut peers = Vec::new();
        for (i, p) in f.peer.into_iter().enumerate() {
            if p.allowed_ips.is_empty() {
                return Err(invalid(format!("peer[{i}].allowed_ips"), "is empty"));
            }
            if peers
                .iter()
                .any(|q: &PeerConfig| q.endpoint.ip() == p.endpoint.ip())
            {
                return Err(invalid(
                    format!("peer[{i}].endpoint"),
                    format!("{} is named twice", p.endpoint.ip()),
                ));
            }
            if is_own_endpoint(p.endpoint, f.tunnel.listen) {
                return Err(invalid(
                    format!("peer[{i}].endpoint"),
                    format!(
                        "{} is this daemon's own tunnel.listen ({}): a host is not its own peer",
                        p.endpoint, f.tunnel.listen
                    ),
                ));
            }
            let allowed_ips: Vec<IpNet> = p.allowed_ips.iter().map(|n| n.trunc()).collect();
            let own_subnets = [
                Some(IpNet::V4(f.interface.address)),
                address6.map(IpNet::V6),
            ];
            for net in &allowed_ips {
                for own in own_subnets.iter().flatten() {
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
            // Nested prefixes of two peers are fine: the longer one wins (a host
            // inside a gateway's prefix). The same prefix twice names no winner.
            for (j, q) in peers.iter().enumerate() {
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
            peers.push(PeerConfig {
                endpoint: p.endpoint,
                allowed_ips,
            });
        }
        let mut peer_ranges = Vec::new();
        for (i, r) in f.peer_range.into_iter().enumerate() {
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
            for (j, q) in peer_ranges.iter().enumerate() {
                let q: &PeerRange = q;
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
            peer_ranges.push(range);
        }
        let native_socket = match f.native.socket {
            None => None,
            Some(p) if p.is_empty() => {
                return Err(invalid("native.socket", "is empty (leave the key out to disable)"))
            }
            Some(p) if !p.starts_with('/') => {
                return Err(invalid(
                    "native.socket",
                    format!("'{p}' is not an absolute path"),
                ))
            }
            Some(p) if p.len() > UNIX_PATH_MAX || p.ends_with('/') || p.contains('\0') => {
                return Err(invalid(
                    "native.socket",
                    format!("'{p}' is not a Unix socket path (a file name of at most {UNIX_PATH_MAX} bytes)"),
                ))
            }
            Some(p) => Some(PathBuf::from(p)),
        };
        if peers.is_empty() && peer_ranges.is_empty() {
            return Err(invalid(
                "peer",
                "no [[peer]] or [[peer_range]]: the daemon would accept no tunnel",
            ));
        }
        Ok(Self {
            ifname,
            address: f.interface.address,
            address6,
            routes: f.interface.routes.iter().map(|n| n.trunc()).collect(),
            listen: f.tunnel.listen,
            mtu,
            paths: f.tunnel.paths,
            link_overhead: f.tunnel.link_overhead,
            offload: f.tunnel.offload,
            udp_offload: f.tunnel.udp_offload,
            busy_poll: f.tunnel.busy_poll,
            poll_us: f.tunnel.poll_us,
            mode,
            link_rate_bps,
            uplink_rate_bps,
            window_packets: e.window,
            initial_window_packets: e.initial_window,
            // The TUN carries kernel TCP, whose ACK clock turns each packet in flight
            // into one to send: by default a tunnel asks for its whole window.
            demand_lookahead_packets: e.demand_lookahead.unwrap_or(e.window),
            thin_stream_credit: e.thin_stream_credit,
            acks_first: e.acks_first,
            path_stats: e.path_stats,
            path_avoidance_us: e.path_avoidance_us,
            loss_reorder_window_us: e.loss_reorder_window_us,
            pace_control: e.pace_control,
            send_queue_packets: e.send_queue,
            policy,
            pacing_permille: (e.pacing * 1000.0).round() as u32,
            pull_burst: e.pull_burst,
            timer_granularity_us: e.timer_granularity_us,
            ecn_threshold_packets: e.ecn_threshold,
            ecn_max_threshold_packets: ecn_max,
            ecn_max_p_ppm: (e.ecn_max_p * 1e6).round() as u32,
            rto_us: e.rto_us,
            reorder_timeout_us: e.reorder_timeout_us,
            ack_coalesce: e.ack_coalesce,
            max_peers: e.max_peers,
            metrics: f.metrics.listen,
            native_socket,
            tun_share: Share {
                weight: f.interface.weight,
                priority: f.interface.priority,
            },
            native_share: Share {
                weight: f.native.weight,
                priority: f.native.priority,
            },
            peers,
            peer_ranges,
        })
    }
}

/// Whether two prefixes share an address (never across families).
fn overlaps(a: &IpNet, b: &IpNet) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
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
