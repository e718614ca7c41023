//! eqds-proto: the sans-IO core of EQDS, the edge-queued datagram service (NSDI'22).
//!
//! Both pillars of the project run the same protocol code: the simulator (`eqds-sim`)
//! drives it with simulated time and packet handles, the Linux daemon (`eqdsd`) with
//! the wall clock, a TUN device and UDP sockets. To make that possible this crate owns
//! no I/O: no sockets, no clocks, no threads. Bytes and the current time come in as
//! arguments; what to send comes out of `poll_*` calls, in the style of quinn-proto
//! and smoltcp (see `shared/design.md`).
//!
//! Modules:
//! - [`wire`]: the EQDS data and control headers, their encoding and strict decoding,
//!   and the serial-number and epoch arithmetic the tunnel state machines build on.
//!   It is the first module; the sending and receiving EQIFs follow.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod wire;
