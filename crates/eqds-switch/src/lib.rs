//! `eqds-switch`: a user-space IPv4 switch for Linux testbeds, running the
//! simulator's queue disciplines (`eqds-queues`) on real ports, so that EQDS's NDP
//! mode meets a trimming switch outside the simulator (trimming paper §3; EQDS paper
//! §4.2, §6.1).
//!
//! The layout follows the daemon's: a sans-IO core and a thin loop around it.
//!
//! - [`frame`]: parsing and rewriting Ethernet/IPv4/UDP/EQDS frames (never trusting one);
//! - [`route`]: longest-prefix routes and ECMP by 5-tuple hash (spraying included);
//! - [`neighbours`]: the switch's own ARP cache;
//! - [`token_bucket`]: each port's egress rate, so queues form in the discipline;
//! - [`pool`]: the frame buffers, and what a discipline reads of a frame
//!   (`eqds_queues::PacketStore`: ECN from the IP header, trimming to the EQDS header);
//! - [`port`], [`switch`]: the state machine, frames in and frames out, no I/O;
//! - [`config`]: the TOML file; [`metrics`]: Prometheus;
//! - [`sys`]: `AF_PACKET` sockets with a receive ring; [`daemon`]: the loop.
//!
//! `docs/eqds-switch.md` says how to run it, in namespaces and on real hosts.

pub mod config;
pub mod daemon;
pub mod frame;
pub mod metrics;
pub mod neighbours;
pub mod pool;
pub mod port;
pub mod route;
pub mod switch;
pub mod sys;
pub mod token_bucket;
