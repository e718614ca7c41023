//! eqds-sim: a fast, deterministic packet-level simulator of datacenter networks.
//!
//! Layout: `engine` (event queue), `net` (packets, ports, queue disciplines,
//! switches, topologies), `transport` (endpoints and congestion controllers),
//! `workload` (which flows run), `scenario` (the TOML files), `sim` (a run's world
//! and event loop), `output` (CSV and JSON results). See `docs/architecture.md`.

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
