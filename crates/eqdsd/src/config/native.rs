//! `[native]`: the native interface's Unix socket, and how its sending EQIF shares
//! the uplink.

use std::path::PathBuf;

use eqds_proto::uplink::Share;
use serde::Deserialize;

use super::{default_weight, invalid, share, ConfigError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NativeSection {
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

/// The validated section.
pub(super) struct Native {
    pub(super) socket: Option<PathBuf>,
    pub(super) share: Share,
}

pub(super) fn validate(s: NativeSection) -> Result<Native, ConfigError> {
    let share = share("native", s.weight, s.priority)?;
    let socket = match s.socket {
        None => None,
        Some(p) if p.is_empty() => {
            return Err(invalid(
                "native.socket",
                "is empty (leave the key out to disable)",
            ))
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
                format!(
                    "'{p}' is not a Unix socket path (a file name of at most \
                     {UNIX_PATH_MAX} bytes)"
                ),
            ))
        }
        Some(p) => Some(PathBuf::from(p)),
    };
    Ok(Native { socket, share })
}
