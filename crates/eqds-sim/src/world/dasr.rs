//! The state behind Blitz's DASR (`transport::roce::dasr` has the mechanism and its
//! reasons): per receiving host, the sender hosts it hears from, each with its flows
//! in the middle of a message and when it was last heard from.
//!
//! `n` is the number of sender hosts in a table, `k_s` a sender's count of flows. A
//! sender host heard from by no packet for `timeout` leaves the table with all its
//! flows. Expiry needs no timer: a table is read only when a packet arrives at its
//! host, and each access first drops what has been quiet for `timeout`; the table
//! keeps the earliest time anything can expire, so it scans only when that passes.
//!
//! A receiver endpoint holds a [`Membership`]: the epoch of the entry it was counted
//! in. A timeout drops an entry; a later entry for the same host gets a new epoch, so
//! a flow counted in the dropped one neither uncounts the new entry at its message's
//! end nor believes itself counted: its next packet counts it again.
//!
//! It lives beside the rest of the run's state (`World::dasr`), below the transports
//! that use it.

use crate::ids::HostId;
use crate::units::Time;
use std::collections::BTreeMap;

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

    /// (n, k_s) for the flow holding `m`, from sender host `tx`, at receiver `rx`. A
    /// flow not counted (its packet was a duplicate of a finished message) gets the
    /// count it would make if it sent: itself added.
    pub fn counts(&self, rx: HostId, tx: HostId, m: Membership) -> (u32, u32) {
        let t = &self.tables[rx as usize];
        let (mut senders, mut flows) = (t.senders(), t.flows_of(tx));
        if !t.is_member(tx, m) {
            senders += u32::from(flows == 0);
            flows += 1;
        }
        (senders, flows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{MS, US};

    const RX: HostId = 0;

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
}
