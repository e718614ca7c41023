//! PFC buffer thresholds (IEEE 802.1Qbb as the DCQCN paper configures it, §4):
//! how much headroom a (port, priority) needs, where the PAUSE (XOFF) and RESUME
//! (XON) thresholds of a shared-buffer switch lie, static or dynamic, and the largest
//! ECN threshold that still marks before PFC pauses.
//!
//! The paper's switch (Broadcom Trident II) has a shared buffer B (12 MB) for n ports
//! (32) and 8 priorities. Every (port, priority) keeps `t_flight` of headroom for what
//! still arrives after it sent a PAUSE, so `8 n t_flight` of the buffer is reserved.
//! - Static threshold: every ingress queue must be able to reach it, so
//!   `t_PFC <= (B - 8 n t_flight) / (8 n)` (24.47 KB).
//! - ECN must mark before PFC pauses. ECN is per egress queue, PFC per ingress queue,
//!   and at worst the backlog of all n egress queues came from one ingress queue:
//!   `t_PFC > n t_ECN`, so with the static threshold `t_ECN < 0.76 KB`, below one
//!   MTU: infeasible (the paper prints 0.85 KB).
//! - Dynamic threshold (Trident II): `t_PFC = beta (B - 8 n t_flight - s) / 8`, s the
//!   bytes the shared buffer holds now. Before any queue passed t_ECN, s is at most
//!   `8 n t_ECN`, which gives `t_ECN < beta (B - 8 n t_flight) / (8 n (beta + 1))`:
//!   21.75 KB for beta = 8.
//!
//! Here the 8 is the number of priorities the buffer serves (`priorities`), so a
//! switch with fewer lossless classes gets the same reasoning with its own numbers.
//! Sizes are bytes; the paper's arithmetic is decimal (12 MB = 12,000,000 B).

use crate::units::{Time, SEC};

/// What the headroom of one (port, priority) must absorb after the PAUSE is sent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeadroomInputs {
    /// The link's rate, bit/s.
    pub rate_bps: u64,
    /// One-way propagation delay of the link.
    pub propagation: Time,
    /// How long the upstream device takes from receiving a PAUSE to stopping (its
    /// processing; 802.1Qbb allows a few hundred ns at these rates).
    pub response: Time,
    /// The largest frame.
    pub mtu: u32,
    /// Extra whole frames of safety \[choice\]: 1.
    pub margin_mtus: u32,
}

/// Bytes one (port, priority) can still receive after deciding to pause: a round
/// trip of the cable at line rate (the PAUSE travels up while data keeps coming
/// down), what the upstream sends while it reacts, one frame the PAUSE waits behind
/// at this end and one the upstream has started and finishes, plus the margin. The
/// paper quotes 22.4 KB at 40 Gbps from a vendor guideline; this is the formula
/// behind such guidelines, so other rates and cables get their own number.
pub fn headroom_bytes(h: &HeadroomInputs) -> u64 {
    let bytes_in = |t: Time| (u128::from(t) * u128::from(h.rate_bps)).div_ceil(8 * u128::from(SEC));
    let wire = bytes_in(2 * h.propagation) + bytes_in(h.response);
    let frames = u128::from(2 + h.margin_mtus) * u128::from(h.mtu);
    u64::try_from(wire + frames).unwrap_or(u64::MAX)
}

/// A shared-buffer switch's PFC accounting, as the DCQCN paper's §4 reasons about it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SharedBuffer {
    /// The whole shared buffer B, bytes.
    pub buffer_bytes: u64,
    /// Ports n.
    pub ports: u32,
    /// Priorities the buffer serves, each with headroom on every port (the paper: 8).
    pub priorities: u32,
    /// Headroom per (port, priority), bytes (`t_flight`).
    pub headroom_bytes: u64,
    /// The dynamic threshold's beta (the paper: 8).
    pub beta: f64,
}

impl SharedBuffer {
    /// The paper's switch: 12 MB, 32 ports, 8 priorities, 22.4 KB of headroom, beta 8.
    pub fn trident2() -> Self {
        SharedBuffer {
            buffer_bytes: 12_000_000,
            ports: 32,
            priorities: 8,
            headroom_bytes: 22_400,
            beta: 8.0,
        }
    }

    /// Bytes reserved as headroom: `priorities n t_flight`.
    pub fn reserved_headroom(&self) -> u64 {
        u64::from(self.priorities) * u64::from(self.ports) * self.headroom_bytes
    }

    /// The shared part: the buffer less the headroom.
    pub fn shared_bytes(&self) -> u64 {
        self.buffer_bytes.saturating_sub(self.reserved_headroom())
    }

    /// The largest static PAUSE threshold every ingress queue can reach at once:
    /// `(B - priorities n t_flight) / (priorities n)`.
    pub fn static_xoff(&self) -> f64 {
        self.shared_bytes() as f64 / f64::from(self.priorities * self.ports)
    }

    /// The dynamic PAUSE threshold while the shared buffer holds `occupied` bytes:
    /// `beta (B - priorities n t_flight - s) / priorities`.
    pub fn dynamic_xoff(&self, occupied: u64) -> f64 {
        self.beta * self.shared_bytes().saturating_sub(occupied) as f64 / f64::from(self.priorities)
    }

    /// The RESUME threshold for a PAUSE threshold `xoff`: two frames below it.
    pub fn xon(xoff: f64, mtu: u32) -> f64 {
        (xoff - 2.0 * f64::from(mtu)).max(0.0)
    }

    /// The largest ECN threshold (Kmin) that marks before a static threshold pauses:
    /// `static_xoff / n`.
    pub fn max_ecn_static(&self) -> f64 {
        self.static_xoff() / f64::from(self.ports)
    }

    /// The largest ECN threshold that marks before the dynamic threshold pauses:
    /// `beta (B - priorities n t_flight) / (priorities n (beta + 1))`.
    pub fn max_ecn_dynamic(&self) -> f64 {
        self.beta * self.shared_bytes() as f64
            / (f64::from(self.priorities * self.ports) * (self.beta + 1.0))
    }

    /// Checks the configuration can work at all; errors name the field.
    pub fn validate(&self, mtu: u32) -> Result<(), String> {
        if self.ports == 0 || self.priorities == 0 || self.priorities > 8 {
            return Err("ports, priorities: need at least one port and 1-8 priorities".into());
        }
        if self.headroom_bytes < 2 * u64::from(mtu) {
            return Err(format!(
                "headroom: {} B cannot hold the two frames in flight at each end of a link \
                 ({} B)",
                self.headroom_bytes,
                2 * u64::from(mtu)
            ));
        }
        if self.reserved_headroom() >= self.buffer_bytes {
            return Err(format!(
                "buffer: {} B is not more than the headroom it must reserve ({} ports x \
                 {} priorities x {} B = {} B)",
                self.buffer_bytes,
                self.ports,
                self.priorities,
                self.headroom_bytes,
                self.reserved_headroom()
            ));
        }
        if !(self.beta > 0.0 && self.beta.is_finite()) {
            return Err(format!("beta: must be positive, got {}", self.beta));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{NS, US};

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// §4's numbers: 24.47 KB static threshold, 0.76 KB (printed 0.85 KB) static ECN
    /// bound, 21.75 KB dynamic ECN bound with beta = 8.
    #[test]
    fn the_papers_arithmetic() {
        let b = SharedBuffer::trident2();
        b.validate(1500).unwrap();
        assert_eq!(b.reserved_headroom(), 5_734_400);
        assert!(close(b.static_xoff(), 24_475.0, 1.0), "{}", b.static_xoff());
        assert!(
            close(b.max_ecn_static(), 764.8, 0.1),
            "{}",
            b.max_ecn_static()
        );
        assert!(
            close(b.max_ecn_dynamic(), 21_755.6, 1.0),
            "{}",
            b.max_ecn_dynamic()
        );
        // Empty buffer: the dynamic threshold is beta times the static one's share.
        assert!(close(b.dynamic_xoff(0), 8.0 * 24_475.0 * 32.0, 8.0));
        assert!(close(SharedBuffer::xon(24_475.0, 1500), 21_475.0, 1e-9));
    }

    /// The ECN-before-PFC condition holds for any ECN threshold below the dynamic
    /// bound, whatever the (unmarked) backlog: with every egress queue at most
    /// t_ECN and all of one priority's egress backlog from one ingress queue, that
    /// ingress queue stays at or below the dynamic threshold; just above the bound a
    /// backlog exists that pauses before any mark.
    #[test]
    fn ecn_marks_before_the_dynamic_threshold_pauses() {
        let b = SharedBuffer::trident2();
        let bound = b.max_ecn_dynamic();
        let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m.max(1)
        };
        for _ in 0..2_000 {
            let t_ecn = (bound * (next(1000) as f64 / 1000.0)).floor() as u64;
            // Every (egress port, priority) queue at most t_ECN: no mark yet.
            let queues: Vec<u64> = (0..b.ports * b.priorities)
                .map(|_| next(t_ecn + 1))
                .collect();
            let s: u64 = queues.iter().sum();
            // Worst case: one ingress queue fed one priority's queue on every port.
            let ingress = u64::from(b.ports) * t_ecn;
            assert!(
                ingress as f64 <= b.dynamic_xoff(s),
                "t_ECN {t_ecn}: ingress {ingress} B above the threshold {} B at s {s}",
                b.dynamic_xoff(s)
            );
        }
        // Just above the bound, every queue at t_ECN pauses before a mark.
        let t_ecn = bound.ceil() as u64 + 1;
        let s = u64::from(b.ports * b.priorities) * t_ecn;
        assert!((u64::from(b.ports) * t_ecn) as f64 > b.dynamic_xoff(s));
    }

    /// The headroom formula: 40 Gbps, 100 m of cable (500 ns), a 1 us reaction and
    /// 1500 B frames: 2 x 2500 B + 5000 B + 3 x 1500 B.
    #[test]
    fn headroom_from_link_and_reaction_time() {
        let h = HeadroomInputs {
            rate_bps: 40_000_000_000,
            propagation: 500 * NS,
            response: US,
            mtu: 1500,
            margin_mtus: 1,
        };
        assert_eq!(headroom_bytes(&h), 5_000 + 5_000 + 4_500);
        // Faster links need more: not 22.4 KB at every speed.
        let fast = HeadroomInputs {
            rate_bps: 100_000_000_000,
            ..h
        };
        assert!(headroom_bytes(&fast) > headroom_bytes(&h));
    }

    #[test]
    fn impossible_buffers_are_named_errors() {
        let small = SharedBuffer {
            buffer_bytes: 5_000_000,
            ..SharedBuffer::trident2()
        };
        assert!(small.validate(1500).unwrap_err().starts_with("buffer:"));
        let thin = SharedBuffer {
            headroom_bytes: 2_000,
            ..SharedBuffer::trident2()
        };
        assert!(thin.validate(1500).unwrap_err().starts_with("headroom:"));
        let nine = SharedBuffer {
            priorities: 9,
            ..SharedBuffer::trident2()
        };
        assert!(nine.validate(1500).is_err());
    }
}
