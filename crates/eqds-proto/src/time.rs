//! Time in the protocol core.
//!
//! The core owns no clock: every `handle_*`/`poll_*` call is given the current time.
//! Time is an integer count of picoseconds, the unit the simulator uses,
//! so no conversion or rounding happens between the two pillars; the daemon converts
//! its monotonic clock once at the edge. 2^64 ps is about 213 days.

/// A point in time or a duration, in picoseconds.
pub type Time = u64;

/// Picoseconds in one nanosecond: the unit of the wire's `busy_time_ns`.
pub const PS_PER_NS: Time = 1_000;

/// Picoseconds in one microsecond.
pub const PS_PER_US: Time = 1_000_000;

/// Picoseconds in one millisecond.
pub const PS_PER_MS: Time = 1_000_000_000;

/// Picoseconds in one second.
pub const PS_PER_SEC: Time = 1_000_000_000_000;
