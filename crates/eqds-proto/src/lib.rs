//! eqds-proto: the sans-IO core of EQDS, the edge-queued datagram service (NSDI'22).
//!
//! Both pillars of the project run the same protocol code: the simulator (`eqds-sim`)
//! drives it with simulated time and packet handles, the Linux daemon (`eqdsd`) with
//! the wall clock, a TUN device and UDP sockets. To make that possible this crate owns
//! no I/O: no sockets, no clocks, no threads. Bytes and the current time come in as
//! arguments; what to send comes out of `poll_*` calls, in the style of quinn-proto
//! and smoltcp (see `docs/architecture.md`).
//!
//! Modules:
//! - [`wire`]: the EQDS data and control headers, their encoding and strict decoding,
//!   and the serial-number and epoch arithmetic the tunnel state machines build on.
//! - [`time`]: picosecond [`time::Time`], the only notion of time the core has.
//! - [`sender`]: the sending EQIF: per-destination tunnels that spend credit, keep
//!   send, in-flight and retransmit queues, and start in NDP or RTS mode.
//! - [`receiver`]: the receiving EQIF's credit scheduler: the active sender list,
//!   paced PULLs, ACK/NACK and busy time.
//! - [`paths`]: per-path counters and RTTs of a tunnel (§5 and §6), when asked for.
//! - [`reorder`]: the receiving EQIF's per-tunnel reorder queue: in-order release,
//!   bounded by W, with a hole timeout and an unordered bypass.
//! - [`tunnel`]: the sender and receiver tunnel state machines of Appendix A: zero-RTT
//!   setup, epochs and self-synchronisation.
//! - [`uplink`]: several sending EQIFs of a host sharing its link by deficit round
//!   robin (weighted, with optional strict priority levels).
//! - [`eqif`]: the receiving EQIF joined up: per peer a tunnel state machine and a
//!   reorder queue next to the credit scheduler, delivering payloads to the host.
//! - [`host`]: one host's EQDS, the entry point both front ends drive: its sending
//!   EQIFs, uplink scheduler and receiving EQIF behind `handle_*`/`poll_*` calls.
//! - [`rdma`]: the RDMA EQIF's flow control of an unmodified RDMA engine: CNPs to
//!   its DCQCN (BlueField-2) or PFC PAUSE (Stingray).
//! - [`config`]: the one configuration of EQDS ([`config::EqdsConfig`]), the front
//!   ends' profiles, and (feature `config`) the `[eqds]` table both files share.
//! - [`units`]: durations, rates and sizes as configuration files spell them.
//!
//! The sender drives its tunnel state machines itself ([`sender::Sender`]); the
//! receiving side's equivalent is [`eqif::ReceivingEqif`].

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod eqif;
pub mod host;
pub mod paths;
pub mod rdma;
pub mod receiver;
pub mod reorder;
pub mod rtt;
pub mod sender;
pub mod time;
pub mod tunnel;
pub mod units;
pub mod uplink;
pub mod wire;
