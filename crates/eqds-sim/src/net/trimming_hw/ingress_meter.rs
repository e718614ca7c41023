//! The per-egress-port meters of each ingress pipeline (§4, §5).
