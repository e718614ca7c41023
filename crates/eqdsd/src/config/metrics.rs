//! `[metrics]`: the Prometheus endpoint.

use std::net::{Ipv4Addr, SocketAddrV4};

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MetricsSection {
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

/// The metrics address, if any: any address the file parses to is acceptable.
pub(super) fn validate(m: MetricsSection) -> Option<SocketAddrV4> {
    m.listen
}
