//! DASR, Blitz's direct apportioning of sending rates (Xue et al., SIGCOMM 2018
//! poster, §2): "a receiver of n senders can direct each sender to cut its rate by a
//! factor of n".
//!
//! Each receiving host keeps a [`SenderTable`]: per sender host, how many of its
//! flows are in the middle of a message to this host and when it was last heard
//! from. `n` is the number of sender hosts in the table, `k_s` a sender's count of
//! flows. Every ACK and NAK a receiver sends to a flow of sender `s` carries the
//! [`Advert`] (n, k_s, the receiver's link rate C_r), encoded in the ACK's `seq`
//! (see the module `roce` for the layout); the sender paces the flow at
//! `min(C_r / (n · k_s), DCQCN's rate)` from that ACK on ([`Advert::rate_bps`]).
//! Before its first ACK a flow runs at line rate, as DCQCN's flows do (spec Q3).
//!
//! A flow counts from the first of its packets the receiver hears of a message
//! (normally the message's first packet) until the receiver accepts the message's
//! last packet: the units an RDMA NIC sees are messages, whose FIRST and LAST
//! opcodes mark their ends; the queue pair lives on between them. A sender host
//! heard from by no packet for `timeout` leaves the table with all its flows.
//!
//! The tables themselves ([`Dasr`], with their quiet timeout, lazy expiry and the
//! epochs that keep a timed-out flow from uncounting a newer entry) are run state and
//! live in `world::dasr`, below the transports, as the pull pacers do; this module is
//! the mechanism: what the receiver advertises ([`advert`]) and the share a sender
//! takes from it. `docs/blitz.md` gives the reasons for each choice.

pub use crate::world::dasr::{Dasr, DasrCounters, Membership, SenderTable};

use crate::ids::HostId;

/// What an ACK or a NAK tells its flow's sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Advert {
    /// n: the receiver's sender hosts (at least 1: the flow's own).
    pub senders: u32,
    /// k_s: this sender host's flows in the count (at least 1: this one).
    pub flows: u32,
    /// C_r: the receiver's link rate, in whole megabits per second.
    pub capacity_mbps: u32,
}

impl Advert {
    /// The flow's share of the receiver's link: C_r / (n · k_s), bits per second.
    pub fn rate_bps(&self) -> f64 {
        f64::from(self.capacity_mbps) * 1e6
            / (f64::from(self.senders.max(1)) * f64::from(self.flows.max(1)))
    }
}

/// What to tell the flow holding `m`, from sender host `tx`, about receiver `rx`
/// whose link runs at `capacity_bps`: the table's (n, k_s) ([`Dasr::counts`]: a flow
/// not counted is told the share it would get if it sent), counted in the run's
/// totals.
pub fn advert(d: &mut Dasr, rx: HostId, tx: HostId, m: Membership, capacity_bps: u64) -> Advert {
    let (senders, flows) = d.counts(rx, tx, m);
    let c = &mut d.counters;
    c.adverts += 1;
    c.peak_senders = c.peak_senders.max(senders);
    c.peak_flows_per_sender = c.peak_flows_per_sender.max(flows);
    Advert {
        senders,
        flows,
        capacity_mbps: u32::try_from(capacity_bps / 1_000_000).unwrap_or(u32::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MS;

    const RX: HostId = 0;
    const C: u64 = 40_000_000_000;

    fn dasr() -> Dasr {
        Dasr::new(4, MS)
    }

    #[test]
    fn n_counts_hosts_and_k_counts_a_hosts_flows() {
        let mut d = dasr();
        let (mut a1, mut a2, mut b) = Default::default();
        d.heard(0, RX, 1, &mut a1, true);
        d.heard(0, RX, 1, &mut a2, true);
        d.heard(0, RX, 2, &mut b, true);
        let adv = advert(&mut d, RX, 1, a1, C);
        assert_eq!((adv.senders, adv.flows, adv.capacity_mbps), (2, 2, 40_000));
        // Host 1's two QPs split its half: a quarter each; host 2 gets its half.
        assert_eq!(adv.rate_bps(), 10e9);
        assert_eq!(advert(&mut d, RX, 2, b, C).rate_bps(), 20e9);
        // When one of host 1's QPs ends, the other takes the host's whole half.
        d.finished(RX, 1, &mut a2);
        assert_eq!(advert(&mut d, RX, 1, a1, C).rate_bps(), 20e9);
        // When host 2 ends, host 1's QP gets the link.
        d.finished(RX, 2, &mut b);
        assert_eq!(advert(&mut d, RX, 1, a1, C).rate_bps(), 40e9);
        assert_eq!(
            (d.counters.peak_senders, d.counters.peak_flows_per_sender),
            (2, 2)
        );
    }

    #[test]
    fn a_flow_not_counted_is_told_its_share_with_itself_added() {
        let mut d = dasr();
        let (mut a, mut b) = Default::default();
        d.heard(0, RX, 1, &mut a, true);
        let outside = Membership::default();
        // Host 2 is not counted: it would make two.
        let adv = advert(&mut d, RX, 2, outside, C);
        assert_eq!((adv.senders, adv.flows), (2, 1));
        // A second QP of host 1 that is not counted would be host 1's second.
        let adv = advert(&mut d, RX, 1, outside, C);
        assert_eq!((adv.senders, adv.flows), (1, 2));
        d.heard(0, RX, 2, &mut b, true);
        assert_eq!(advert(&mut d, RX, 2, b, C).senders, 2);
    }

    #[test]
    fn the_share_is_the_capacity_over_n_times_k() {
        let a = Advert {
            senders: 4,
            flows: 2,
            capacity_mbps: 56_000,
        };
        assert_eq!(a.rate_bps(), 7e9);
    }
}
