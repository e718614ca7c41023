//! The feedback loop: PESSIMISTIC / HALF / OPTIMISTIC per (pipeline, port) (§4).
