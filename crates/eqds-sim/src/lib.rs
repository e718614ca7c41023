//! eqds-sim: a fast, deterministic packet-level simulator of datacenter networks.
//!
//! Layout, lower layers first: `units`, `ids` and `engine` (event queue); `net`
//! (packets, ports, queue disciplines, switches, topologies); `flow` (a flow's spec,
//! protocol and counters); `workload` (which flows run); `scenario` (the TOML files);
//! `memory` (a run's memory, estimated before it starts); `eqds` (EQDS on every
//! host: one `eqds_proto::host::Host` each, and the adapter that gives it packets,
//! the NIC and a timer); `world` (everything a run holds but its endpoints); `transport` (endpoints
//! and congestion controllers, which see the world); `output` (CSV and JSON results);
//! `sim` (building a run, making endpoints, the event loop, time series); `run` (one
//! scenario into a directory).
//!
//! A module uses only modules before it in that list, so no two import each other,
//! directly or round a longer loop; `tests/module_cycles.rs` checks that for sibling
//! modules at every level. See `docs/architecture.md`.

pub mod engine;
pub mod eqds;
pub mod flow;
pub mod ids;
pub mod memory;
pub mod net;
pub mod output;
pub mod run;
pub mod scenario;
pub mod sim;
pub mod transport;
pub mod units;
pub mod workload;
pub mod world;
