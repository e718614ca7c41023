//! NDP (Handley et al., SIGCOMM 2017): the receiver-driven transport that EQDS's
//! control loop descends from.
//!
//! The sender bursts an initial window at line rate, sprays every packet over its own
//! path, and afterwards sends one packet per PULL. Trimming switches cut what does not
//! fit to a header, which still reaches the receiver: it NACKs the header and owes a
//! PULL for it, so the retransmission is paid for like any other packet. The receiver
//! ACKs every data packet and queues one PULL per arrival on its host's pull pacer,
//! which releases them at the host's link rate, round robin across flows.
//!
//! Credit is counted as NDP does: PULLs carry a cumulative pull number, so a lost PULL
//! costs nothing once a later control packet gets through. Every packet in flight is a
//! token that comes back as a PULL; a header returned by a switch is resent at once,
//! and a packet lost outright is resent by the safety timeout, so the number of tokens
//! only falls when the sender has nothing left to send.

mod receiver;
mod sender;

pub use receiver::NdpReceiver;
pub use sender::NdpSender;

use crate::engine::SimRng;
use crate::units::Time;
use rand::seq::SliceRandom;

/// Per-flow NDP parameters, resolved from `[transport.ndp]` and the topology.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NdpConfig {
    /// Payload bytes in a full packet.
    pub mss: u32,
    /// Header bytes; control packets and trimmed headers are this big.
    pub header: u32,
    /// Packets sent before the first PULL.
    pub initial_window: u32,
    /// Safety timeout for a packet neither ACKed nor NACKed, and for a sender with
    /// data but no credit and no news from its receiver.
    pub rto: Time,
    /// Path ids the sender sprays over.
    pub paths: u32,
    /// Priority class of data packets (control packets use class 0).
    pub class: u8,
}

/// Path ids in a random order, reshuffled on every wrap (NDP's permuted round robin):
/// each path gets one packet per round, and no two senders march in lock step.
pub struct PathCycle {
    order: Vec<u32>,
    next: usize,
}

impl PathCycle {
    pub fn new(paths: u32) -> Self {
        PathCycle {
            order: (0..paths.max(1)).collect(),
            // Shuffle before the first use.
            next: usize::MAX,
        }
    }

    pub fn next(&mut self, rng: &mut SimRng) -> u32 {
        if self.next >= self.order.len() {
            self.order.shuffle(rng);
            self.next = 0;
        }
        self.next += 1;
        self.order[self.next - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn every_path_once_per_round() {
        let mut rng = SimRng::seed_from_u64(3);
        let mut cycle = PathCycle::new(16);
        for _ in 0..4 {
            let mut round: Vec<u32> = (0..16).map(|_| cycle.next(&mut rng)).collect();
            round.sort_unstable();
            assert_eq!(round, (0..16).collect::<Vec<_>>());
        }
    }
}
