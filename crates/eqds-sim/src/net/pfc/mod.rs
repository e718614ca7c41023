//! Priority flow control (IEEE 802.1Qbb) as the DCQCN paper uses it (§2, §4): what a
//! lossless class needs from switches and NICs.
//!
//! - [`thresholds`]: headroom per (port, priority), the shared buffer's static and
//!   dynamic PAUSE thresholds, and the largest ECN threshold that marks first (§4).
//! - [`pause`]: PAUSE and RESUME frames: the ingress side that sends them as its
//!   counter crosses the thresholds (XOFF/XON, or pause quanta with refresh), and
//!   the egress side that stops a priority while paused and counts the time.
//! - [`deadlock`]: a cycle of paused links, named port by port.
//! - [`fabric`]: all of it at run time, wired into the network's ports.
//! - [`watchdog`]: the PFC watchdog switch operating systems ship: a queue paused too
//!   long drops or forwards for a restoration time.

pub mod deadlock;
pub mod fabric;
pub mod pause;
pub mod thresholds;
pub mod watchdog;

pub use thresholds::{headroom_bytes, HeadroomInputs, SharedBuffer};
