//! The switch's TOML file: ports (interface, rate, queue discipline), static routes and
//! a few switch-wide keys. Every key is checked here, and a bad one is an error naming
//! it; the daemon starts only from a configuration that validated.
//!
//! ```toml
//! [switch]
//! eqds_ports = [7700]          # UDP ports EQDS tunnels listen on: only these are trimmed
//! metrics = "127.0.0.1:9600"   # Prometheus endpoint (optional)
//!
//! [[port]]
//! name = "h1"                  # the port's name in routes and metrics
//! interface = "h1"             # the Linux interface (default: the name)
//! rate = "1Gbps"               # egress rate
//! queue = { kind = "trimming", data_packets = 8, return_to_sender = false }
//!
//! [[route]]
//! prefix = "10.77.1.0/24"
//! next_hops = [{ port = "h1", via = "10.77.1.1" }]
//! ```
//!
//! The `queue` table is the simulator's (`eqds_queues::QueueSpec`, documented in
//! `docs/scenarios.md`): one configuration pipeline for a discipline, whether it runs
//! in simulated time or on a wire.

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

use eqds_proto::units::value::{Bytes, Rate};
use eqds_queues::QueueSpec;
use ipnet::Ipv4Net;
use serde::Deserialize;

use crate::route::{NextHop, RouteTable};

/// The daemon's configuration error, naming the key (one error type for both files).
pub use eqdsd::config::{invalid, ConfigError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    switch: SwitchSection,
    #[serde(default)]
    port: Vec<PortSection>,
    #[serde(default)]
    route: Vec<RouteSection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SwitchSection {
    #[serde(default)]
    eqds_ports: Vec<u16>,
    metrics: Option<SocketAddr>,
    #[serde(default = "default_seed")]
    seed: u64,
    #[serde(default = "default_buffers")]
    buffers: u32,
    #[serde(default)]
    busy_poll: bool,
    #[serde(default = "default_spin_us")]
    spin_us: u64,
}

impl Default for SwitchSection {
    fn default() -> Self {
        SwitchSection {
            eqds_ports: Vec::new(),
            metrics: None,
            seed: default_seed(),
            buffers: default_buffers(),
            busy_poll: false,
            spin_us: default_spin_us(),
        }
    }
}

fn default_spin_us() -> u64 {
    0
}

fn default_seed() -> u64 {
    1
}

fn default_buffers() -> u32 {
    8192
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PortSection {
    name: String,
    interface: Option<String>,
    rate: Rate,
    burst: Option<Bytes>,
    queue: toml::Value,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RouteSection {
    prefix: Ipv4Net,
    next_hops: Vec<HopSection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HopSection {
    port: String,
    via: Option<Ipv4Addr>,
}

/// A port as configured.
#[derive(Debug, Clone)]
pub struct PortConfig {
    pub name: String,
    pub interface: String,
    pub rate_bps: u64,
    /// Bytes that may leave back to back after an idle spell (`None`: the daemon
    /// picks 1 ms of the rate, at least two frames of the interface's MTU).
    pub burst_bytes: Option<u64>,
    pub queue: QueueSpec,
}

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub eqds_ports: Vec<u16>,
    pub metrics: Option<SocketAddr>,
    pub seed: u64,
    pub buffers: u32,
    pub busy_poll: bool,
    /// Keep polling this long after the last frame handled, or before the next paced
    /// departure, rather than sleep (microseconds).
    pub spin_us: u64,
    pub ports: Vec<PortConfig>,
    pub routes: RouteTable,
}

/// Rates the switch can pace: at least 1 Mb/s (a slower port would hold a frame for
/// over 10 ms) and at most 400 Gb/s.
const MIN_RATE: u64 = 1_000_000;
const MAX_RATE: u64 = 400_000_000_000;

impl Config {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text)
    }

    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let value: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| invalid("(file)", e.message().to_string()))?;
        let file: File = serde_path_to_error::deserialize(toml::Value::Table(value))
            .map_err(|e| invalid(e.path().to_string(), e.inner().message().to_string()))?;
        Self::validate(file)
    }

    fn validate(file: File) -> Result<Self, ConfigError> {
        let s = file.switch;
        if s.buffers < 64 {
            return Err(invalid("switch.buffers", "at least 64 frame buffers"));
        }
        if s.spin_us > 1_000_000 {
            return Err(invalid("switch.spin_us", "at most 1000000 (1 s)"));
        }
        if s.eqds_ports.contains(&0) {
            return Err(invalid("switch.eqds_ports", "port 0 is not a UDP port"));
        }
        if file.port.is_empty() {
            return Err(invalid("port", "a switch needs at least one [[port]]"));
        }
        let mut names = HashSet::new();
        let mut interfaces = HashSet::new();
        let mut ports = Vec::new();
        for (i, p) in file.port.into_iter().enumerate() {
            let key = |k: &str| format!("port[{i}].{k}");
            if p.name.is_empty()
                || p.name.len() > 32
                || !p
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(invalid(
                    key("name"),
                    format!("{:?}: want 1-32 of [A-Za-z0-9_-]", p.name),
                ));
            }
            if !names.insert(p.name.clone()) {
                return Err(invalid(
                    key("name"),
                    format!("{:?} names two ports", p.name),
                ));
            }
            let interface = p.interface.unwrap_or_else(|| p.name.clone());
            if interface.is_empty() || interface.len() > 15 {
                return Err(invalid(
                    key("interface"),
                    format!("{interface:?} is not a Linux interface name (1-15 bytes)"),
                ));
            }
            if !interfaces.insert(interface.clone()) {
                return Err(invalid(
                    key("interface"),
                    format!("{interface:?} is used by two ports"),
                ));
            }
            let rate_bps = p.rate.0;
            if !(MIN_RATE..=MAX_RATE).contains(&rate_bps) {
                return Err(invalid(
                    key("rate"),
                    format!("{rate_bps} b/s is outside 1 Mb/s to 400 Gb/s"),
                ));
            }
            if let Some(b) = p.burst {
                if b.0 == 0 || b.0 > 16 << 20 {
                    return Err(invalid(key("burst"), "want 1 B to 16 MiB"));
                }
            }
            let queue = QueueSpec::from_toml(p.queue, &key("queue"))
                .map_err(|m| invalid(key("queue"), m))?;
            crate::port::check_queue(&queue, !s.eqds_ports.is_empty())
                .map_err(|m| invalid(key("queue"), m))?;
            ports.push(PortConfig {
                name: p.name,
                interface,
                rate_bps,
                burst_bytes: p.burst.map(|b| b.0),
                queue,
            });
        }
        let mut routes = RouteTable::new(s.seed);
        let mut prefixes = HashSet::new();
        for (i, r) in file.route.into_iter().enumerate() {
            let key = |k: &str| format!("route[{i}].{k}");
            if r.prefix != r.prefix.trunc() {
                return Err(invalid(
                    key("prefix"),
                    format!(
                        "{} has host bits set (did you mean {}?)",
                        r.prefix,
                        r.prefix.trunc()
                    ),
                ));
            }
            if !prefixes.insert(r.prefix) {
                return Err(invalid(
                    key("prefix"),
                    format!("{} is routed twice", r.prefix),
                ));
            }
            if r.next_hops.is_empty() {
                return Err(invalid(
                    key("next_hops"),
                    "a route needs at least one next hop",
                ));
            }
            let mut hops = Vec::new();
            for (j, h) in r.next_hops.iter().enumerate() {
                let port = ports.iter().position(|p| p.name == h.port).ok_or_else(|| {
                    invalid(
                        format!("route[{i}].next_hops[{j}].port"),
                        format!("no port named {:?}", h.port),
                    )
                })?;
                if let Some(v) = h.via {
                    if v.is_unspecified() || v.is_broadcast() || v.is_multicast() {
                        return Err(invalid(
                            format!("route[{i}].next_hops[{j}].via"),
                            format!("{v} cannot be a next hop"),
                        ));
                    }
                }
                hops.push(NextHop { port, via: h.via });
            }
            routes.add(r.prefix, hops);
        }
        Ok(Config {
            eqds_ports: s.eqds_ports,
            metrics: s.metrics,
            seed: s.seed,
            buffers: s.buffers,
            busy_poll: s.busy_poll,
            spin_us: s.spin_us,
            ports,
            routes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[switch]
eqds_ports = [7700]

[[port]]
name = "h1"
rate = "1Gbps"
queue = { kind = "drop_tail", limit_packets = 100 }

[[port]]
name = "h2"
interface = "veth-h2"
rate = "100Mbps"
burst = "9000B"
queue = { kind = "trimming", data_packets = 8, return_to_sender = false }

[[route]]
prefix = "10.77.1.0/24"
next_hops = [{ port = "h1", via = "10.77.1.1" }]

[[route]]
prefix = "10.77.2.0/24"
next_hops = [{ port = "h2" }, { port = "h1", via = "10.77.1.1" }]
"#;

    fn err(text: &str) -> String {
        Config::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn a_good_file_validates() {
        let c = Config::parse(GOOD).unwrap();
        assert_eq!(c.ports.len(), 2);
        assert_eq!(c.ports[0].interface, "h1");
        assert_eq!(c.ports[1].interface, "veth-h2");
        assert_eq!(c.ports[1].rate_bps, 100_000_000);
        assert_eq!(c.ports[1].burst_bytes, Some(9000));
        assert_eq!(c.routes.gateways().count(), 2);
    }

    #[test]
    fn bad_keys_are_named() {
        assert!(err(&GOOD.replace("eqds_ports", "eqds_portz")).contains("eqds_portz"));
        assert!(err(&GOOD.replace("\"1Gbps\"", "\"fast\"")).starts_with("port[0].rate"));
        assert!(err(&GOOD.replace("\"1Gbps\"", "\"10bps\"")).starts_with("port[0].rate"));
        assert!(err(&GOOD.replace("name = \"h2\"", "name = \"h1\"")).contains("names two ports"));
        assert!(err(&GOOD.replace("{ port = \"h2\" }", "{ port = \"h9\" }"))
            .starts_with("route[1].next_hops[0].port"));
        assert!(err(&GOOD.replace("10.77.2.0/24", "10.77.2.1/24")).contains("host bits"));
        assert!(err(&GOOD.replace("10.77.2.0/24", "10.77.1.0/24")).contains("routed twice"));
        assert!(
            err(&GOOD.replace("data_packets = 8", "data_packetz = 8")).contains("port[1].queue")
        );
        assert!(err(&GOOD.replace(
            "via = \"10.77.1.1\" }]\n\n[[route]]",
            "via = \"255.255.255.255\" }]\n\n[[route]]"
        ))
        .contains("cannot be a next hop"));
        assert!(err("[switch]\n").contains("at least one [[port]]"));
    }

    #[test]
    fn the_guide_s_example_validates() {
        let guide = include_str!("../../../docs/eqds-switch.md");
        let start = guide.find("```toml\n").expect("a TOML example") + "```toml\n".len();
        let end = start + guide[start..].find("```").expect("its end");
        let c = Config::parse(&guide[start..end]).unwrap();
        assert_eq!(c.ports.len(), 3);
    }

    #[test]
    fn trimming_needs_the_eqds_ports_and_no_returns() {
        let e = err(&GOOD.replace("eqds_ports = [7700]", ""));
        assert!(
            e.starts_with("port[1].queue") && e.contains("eqds_ports"),
            "{e}"
        );
        let e = err(&GOOD.replace(", return_to_sender = false", ""));
        assert!(
            e.starts_with("port[1].queue") && e.contains("return_to_sender"),
            "{e}"
        );
    }
}
