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
//! Expiry needs no timer: the table is only read when a packet arrives at its host
//! (an ACK answers a packet), and each access first drops what has been quiet for
//! `timeout`. The table remembers the earliest time anything can expire, so the
//! drop scans the table at most once per expiry candidate, not per packet.
//!
//! A receiver endpoint holds a [`Membership`]: the epoch of the table entry it was
//! counted in. A timeout drops an entry; a later entry for the same host gets a new
//! epoch, so a flow counted in the dropped one neither uncounts the new entry at its
//! message's end nor believes itself counted: its next packet counts it again.

use crate::ids::HostId;
use crate::units::Time;
use std::collections::BTreeMap;

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

/// DASR's totals over a run, for `summary.json`'s `roce.dasr`.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct DasrCounters {
    /// Flows counted in their receiver's table (a message's first packet, or a
    /// packet after the sender's entry timed out).
    pub flows_counted: u64,
    /// Flows uncounted by their message's last packet.
    pub flows_finished: u64,
    /// Sender hosts dropped because nothing came from them for `timeout`.
    pub senders_expired: u64,
    /// Flows those dropped hosts still had counted.
    pub flows_expired: u64,
    /// ACKs and NAKs that carried an advertisement.
    pub adverts: u64,
    /// Advertisements that changed their flow's DASR rate (the first one included).
    pub rate_updates: u64,
    /// Data packets paced at the DASR rate because it was below DCQCN's (or, without
    /// DCQCN, the line rate).
    pub dasr_paced_packets: u64,
    /// The largest n any receiver advertised.
    pub peak_senders: u32,
    /// The largest k_s any receiver advertised.
    pub peak_flows_per_sender: u32,
}

/// A receiver endpoint's place in its host's table: the epoch of the entry it was
/// counted in, or none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Membership(Option<u64>);

/// One sender host in a receiver's table.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Its flows counted here (at least 1: an entry at 0 is removed).
    flows: u32,
    /// When a packet from it last arrived.
    heard: Time,
    /// Tells this entry from an earlier one for the same host that timed out.
    epoch: u64,
}

/// The senders one host is receiving from.
#[derive(Debug, Default)]
pub struct SenderTable {
    senders: BTreeMap<HostId, Entry>,
    /// Nothing expires before this (`None`: the table is empty).
    next_expiry: Option<Time>,
}

impl SenderTable {
    /// n.
    pub fn senders(&self) -> u32 {
        self.senders.len() as u32
    }

    /// k_s of sender host `tx` (0 if it is not counted).
    pub fn flows_of(&self, tx: HostId) -> u32 {
        self.senders.get(&tx).map_or(0, |e| e.flows)
    }

    /// Whether the flow holding `m` is counted in `tx`'s current entry.
    fn is_member(&self, tx: HostId, m: Membership) -> bool {
        m.0.is_some() && self.senders.get(&tx).map(|e| e.epoch) == m.0
    }
}

/// DASR on every host of a run: the tables, the quiet timeout and the counters. It
/// exists only when the scenario turns DASR on (`World::dasr`).
#[derive(Debug)]
pub struct Dasr {
    timeout: Time,
    tables: Vec<SenderTable>,
    next_epoch: u64,
    pub counters: DasrCounters,
}

impl Dasr {
    /// DASR for `hosts` hosts, forgetting a sender host after `timeout` of silence.
    pub fn new(hosts: u32, timeout: Time) -> Self {
        Dasr {
            timeout,
            tables: (0..hosts).map(|_| SenderTable::default()).collect(),
            next_epoch: 0,
            counters: DasrCounters::default(),
        }
    }

    /// Host `rx`'s table as it stands (expiry is applied by the calls that change it).
    pub fn table(&self, rx: HostId) -> &SenderTable {
        &self.tables[rx as usize]
    }

    /// Drops from `rx`'s table the sender hosts quiet for `timeout` at `now`.
    pub fn expire(&mut self, now: Time, rx: HostId) {
        let t = &mut self.tables[rx as usize];
        if t.next_expiry.is_none_or(|at| now < at) {
            return;
        }
        let timeout = self.timeout;
        let c = &mut self.counters;
        t.senders.retain(|_, e| {
            let live = now < e.heard.saturating_add(timeout);
            if !live {
                c.senders_expired += 1;
                c.flows_expired += u64::from(e.flows);
            }
            live
        });
        t.next_expiry = t
            .senders
            .values()
            .map(|e| e.heard.saturating_add(timeout))
            .min();
    }

    /// A data packet of a flow from sender host `tx` reached `rx` at `now`: the host
    /// is heard from, and, if `active` (the flow is sending a message the receiver
    /// has not finished) and the flow is not counted, it is counted now.
    pub fn heard(&mut self, now: Time, rx: HostId, tx: HostId, m: &mut Membership, active: bool) {
        self.expire(now, rx);
        let t = &mut self.tables[rx as usize];
        let member = t.is_member(tx, *m);
        if let Some(e) = t.senders.get_mut(&tx) {
            e.heard = now;
            if !member && active {
                e.flows += 1;
                *m = Membership(Some(e.epoch));
                self.counters.flows_counted += 1;
            }
        } else if active {
            let epoch = self.next_epoch;
            self.next_epoch += 1;
            t.senders.insert(
                tx,
                Entry {
                    flows: 1,
                    heard: now,
                    epoch,
                },
            );
            *m = Membership(Some(epoch));
            self.counters.flows_counted += 1;
        }
        // The entry heard last cannot expire before the earliest one.
        let at = now.saturating_add(self.timeout);
        if !t.senders.is_empty() {
            t.next_expiry = Some(t.next_expiry.map_or(at, |e| e.min(at)));
        }
    }

    /// The flow holding `m` finished its message: it no longer counts (nothing
    /// happens if a timeout already dropped it).
    pub fn finished(&mut self, rx: HostId, tx: HostId, m: &mut Membership) {
        let t = &mut self.tables[rx as usize];
        if t.is_member(tx, *m) {
            let e = t.senders.get_mut(&tx).expect("a member's entry exists");
            e.flows -= 1;
            if e.flows == 0 {
                t.senders.remove(&tx);
                if t.senders.is_empty() {
                    t.next_expiry = None;
                }
            }
            self.counters.flows_finished += 1;
        }
        *m = Membership(None);
    }

    /// What to tell the flow holding `m`, from sender host `tx`, about receiver
    /// `rx` whose link runs at `capacity_bps`. A flow not counted (its packet was a
    /// duplicate of a finished message) is told the share it would get if it sent:
    /// itself added to the count.
    pub fn advert(&mut self, rx: HostId, tx: HostId, m: Membership, capacity_bps: u64) -> Advert {
        let t = &self.tables[rx as usize];
        let (mut senders, mut flows) = (t.senders(), t.flows_of(tx));
        if !t.is_member(tx, m) {
            senders += u32::from(flows == 0);
            flows += 1;
        }
        let c = &mut self.counters;
        c.adverts += 1;
        c.peak_senders = c.peak_senders.max(senders);
        c.peak_flows_per_sender = c.peak_flows_per_sender.max(flows);
        Advert {
            senders,
            flows,
            capacity_mbps: u32::try_from(capacity_bps / 1_000_000).unwrap_or(u32::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{MS, US};

    const RX: HostId = 0;
    const C: u64 = 40_000_000_000;

    fn dasr() -> Dasr {
        Dasr::new(4, MS)
    }

    #[test]
    fn a_message_counts_from_its_first_packet_to_its_last() {
        let mut d = dasr();
        let mut m = Membership::default();
        // A packet that starts nothing (a stray duplicate) does not count.
        d.heard(0, RX, 1, &mut m, false);
        assert_eq!(d.table(RX).senders(), 0);
        d.heard(US, RX, 1, &mut m, true);
        assert_eq!((d.table(RX).senders(), d.table(RX).flows_of(1)), (1, 1));
        // Later packets of the message do not count it again.
        d.heard(2 * US, RX, 1, &mut m, true);
        assert_eq!(d.table(RX).flows_of(1), 1);
        d.finished(RX, 1, &mut m);
        assert_eq!(d.table(RX).senders(), 0);
        assert_eq!(m, Membership::default());
        // Finishing twice uncounts once.
        d.finished(RX, 1, &mut m);
        let c = d.counters;
        assert_eq!((c.flows_counted, c.flows_finished), (1, 1));
        // Other hosts' tables are their own.
        assert_eq!(d.table(1).senders(), 0);
    }

    #[test]
    fn n_counts_hosts_and_k_counts_a_hosts_flows() {
        let mut d = dasr();
        let (mut a1, mut a2, mut b) = Default::default();
        d.heard(0, RX, 1, &mut a1, true);
        d.heard(0, RX, 1, &mut a2, true);
        d.heard(0, RX, 2, &mut b, true);
        let adv = d.advert(RX, 1, a1, C);
        assert_eq!((adv.senders, adv.flows, adv.capacity_mbps), (2, 2, 40_000));
        // Host 1's two QPs split its half: a quarter each; host 2 gets its half.
        assert_eq!(adv.rate_bps(), 10e9);
        assert_eq!(d.advert(RX, 2, b, C).rate_bps(), 20e9);
        // When one of host 1's QPs ends, the other takes the host's whole half.
        d.finished(RX, 1, &mut a2);
        assert_eq!(d.advert(RX, 1, a1, C).rate_bps(), 20e9);
        // When host 2 ends, host 1's QP gets the link.
        d.finished(RX, 2, &mut b);
        assert_eq!(d.advert(RX, 1, a1, C).rate_bps(), 40e9);
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
        let adv = d.advert(RX, 2, outside, C);
        assert_eq!((adv.senders, adv.flows), (2, 1));
        // A second QP of host 1 that is not counted would be host 1's second.
        let adv = d.advert(RX, 1, outside, C);
        assert_eq!((adv.senders, adv.flows), (1, 2));
        d.heard(0, RX, 2, &mut b, true);
        assert_eq!(d.advert(RX, 2, b, C).senders, 2);
    }

    #[test]
    fn a_quiet_sender_host_expires_after_the_timeout() {
        let mut d = dasr();
        let (mut a, mut b) = Default::default();
        d.heard(0, RX, 1, &mut a, true);
        d.heard(0, RX, 2, &mut b, true);
        // Host 2 keeps talking, host 1 falls silent.
        d.heard(MS / 2, RX, 2, &mut b, true);
        d.heard(MS - 1, RX, 2, &mut b, true);
        assert_eq!(d.table(RX).senders(), 2, "1 ms has not passed");
        d.heard(MS, RX, 2, &mut b, true);
        assert_eq!(d.table(RX).senders(), 1, "host 1 was quiet for 1 ms");
        assert_eq!(d.table(RX).flows_of(1), 0);
        assert_eq!(
            (d.counters.senders_expired, d.counters.flows_expired),
            (1, 1)
        );
        // Host 1's flow ends late: its old membership uncounts nothing.
        let stale = a;
        d.finished(RX, 1, &mut a);
        assert_eq!(d.counters.flows_finished, 0);
        // Or it resumes: a new entry, a new epoch, counted again.
        let mut a = stale;
        d.heard(2 * MS, RX, 1, &mut a, true);
        assert_ne!(a, stale);
        assert_eq!(d.table(RX).flows_of(1), 1);
        // Host 2 is quiet from MS to 2 MS: the access at 2 MS drops it.
        assert_eq!(d.table(RX).senders(), 1);
        assert_eq!(d.counters.senders_expired, 2);
    }

    #[test]
    fn expiry_waits_for_the_earliest_candidate() {
        let mut d = dasr();
        let mut a = Membership::default();
        d.heard(0, RX, 1, &mut a, true);
        assert_eq!(d.table(RX).next_expiry, Some(MS));
        // Hearing from host 1 again leaves the earlier bound: it is a lower bound,
        // and the scan at MS finds nothing to drop and moves it on.
        d.heard(MS / 2, RX, 1, &mut a, true);
        assert_eq!(d.table(RX).next_expiry, Some(MS));
        d.expire(MS, RX);
        assert_eq!(d.table(RX).next_expiry, Some(MS + MS / 2));
        assert_eq!(d.table(RX).senders(), 1);
        d.finished(RX, 1, &mut a);
        assert_eq!(d.table(RX).next_expiry, None);
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
