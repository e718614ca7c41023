//! eqdsd: EQDS as a Linux daemon. Unmodified TCP and UDP enter a TUN device, cross
//! the network as EQDS-over-UDP and leave the far daemon's TUN device in order.
//!
//! The protocol itself is `eqds-proto`, shared with the simulator; this crate only
//! joins it to the host:
//! - [`config`]: the TOML configuration and its validation;
//! - [`peers`]: which remote daemons exist and which inner addresses each owns;
//! - [`pool`]: recycled packet buffers;
//! - [`ipv4`]: the little the daemon reads of inner packets;
//! - [`gso`]: cutting the TUN device's TCP super-packets into MTU-sized segments;
//! - [`gro`]: merging in-order TCP segments into super-packets for the TUN device;
//! - [`engine`]: the protocol state joined to peers and buffers, without I/O;
//! - [`tx_pacer`]: pacing what the sending EQIFs release at the host's own link;
//! - [`native`]: the header of the native interface (applications without IP);
//! - [`counters`] and [`metrics`]: drop reasons and the Prometheus endpoint;
//! - [`sys`]: TUN, UDP sockets with batched I/O, clock and timer (all `unsafe` code);
//! - [`daemon`]: the event loop.
//!
//! `unsafe` code is refused everywhere but in [`sys`], so that what needs an audit
//! stays in one place: a new `unsafe` block elsewhere does not compile.

#![deny(unsafe_code)]

pub mod config;
pub mod counters;
pub mod daemon;
pub mod engine;
pub mod gro;
pub mod gso;
pub mod ipv4;
pub mod ipv6;
pub mod metrics;
pub mod native;
pub mod peers;
pub mod pool;
#[allow(unsafe_code)]
pub mod sys;
pub mod tcp;
pub mod tx_pacer;
