//! The switch's ARP cache: the MAC address of each next hop, per port.
//!
//! The switch forwards in user space, so the kernel's neighbour table is not the one
//! it reads: it sends its own ARP requests and learns from every ARP packet it sees on
//! a port (the kernel still answers requests for the port's own addresses). Next hops
//! named by routes are asked for at start, so that a testbed's first packets find them
//! resolved; others are asked for when a packet first needs them, and that packet is
//! dropped and counted (`no_neighbour`), as a kernel does once its small queue of
//! unresolved packets is full.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use eqds_proto::time::{Time, PS_PER_MS, PS_PER_SEC};

/// How long an unanswered request waits before it is sent again.
pub const RETRY: Time = 100 * PS_PER_MS;
/// How often a known neighbour is asked again (a MAC that changed is learnt by then).
pub const REFRESH: Time = 30 * PS_PER_SEC;
/// Entries kept at most: an ARP flood cannot grow the table without bound.
pub const MAX_ENTRIES: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Entry {
    mac: Option<[u8; 6]>,
    /// When the next request for it is due.
    due: Time,
}

#[derive(Debug, Default)]
pub struct Neighbours {
    entries: HashMap<(usize, Ipv4Addr), Entry>,
    /// ARP packets not learnt from because the table was full.
    pub table_full: u64,
}

impl Neighbours {
    /// The MAC address of `ip` on `port`, if known. An unknown neighbour is added, to
    /// be asked for by the next [`Neighbours::due`].
    pub fn resolve(&mut self, port: usize, ip: Ipv4Addr) -> Option<[u8; 6]> {
        if let Some(e) = self.entries.get(&(port, ip)) {
            return e.mac;
        }
        self.want(port, ip);
        None
    }

    /// Asks for `ip` on `port` at the next [`Neighbours::due`] unless already known.
    pub fn want(&mut self, port: usize, ip: Ipv4Addr) {
        if self.entries.len() >= MAX_ENTRIES {
            self.table_full += 1;
            return;
        }
        self.entries
            .entry((port, ip))
            .or_insert(Entry { mac: None, due: 0 });
    }

    /// Learns `ip`'s address from an ARP packet seen on `port`.
    pub fn learn(&mut self, port: usize, ip: Ipv4Addr, mac: [u8; 6], now: Time) {
        if ip.is_unspecified() {
            return;
        }
        if self.entries.len() >= MAX_ENTRIES && !self.entries.contains_key(&(port, ip)) {
            self.table_full += 1;
            return;
        }
        self.entries.insert(
            (port, ip),
            Entry {
                mac: Some(mac),
                due: now + REFRESH,
            },
        );
    }

    /// Calls `ask` with every (port, address) whose request is due at `now`, and
    /// schedules its next one.
    pub fn due(&mut self, now: Time, mut ask: impl FnMut(usize, Ipv4Addr)) {
        for (&(port, ip), e) in self.entries.iter_mut() {
            if e.due <= now {
                ask(port, ip);
                e.due = now + if e.mac.is_some() { REFRESH } else { RETRY };
            }
        }
    }

    /// When the next request is due.
    pub fn next_due(&self) -> Option<Time> {
        self.entries.values().map(|e| e.due).min()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_neighbours_are_asked_for_until_answered() {
        let mut n = Neighbours::default();
        let ip = Ipv4Addr::new(10, 0, 0, 1);
        assert_eq!(n.resolve(1, ip), None);
        let mut asked = Vec::new();
        n.due(0, |p, i| asked.push((p, i)));
        assert_eq!(asked, [(1, ip)]);
        asked.clear();
        n.due(RETRY - 1, |p, i| asked.push((p, i)));
        assert!(asked.is_empty(), "not before the retry interval");
        n.due(RETRY, |p, i| asked.push((p, i)));
        assert_eq!(asked.len(), 1);
        n.learn(1, ip, [2, 0, 0, 0, 0, 9], RETRY + 5);
        assert_eq!(n.resolve(1, ip), Some([2, 0, 0, 0, 0, 9]));
        assert_eq!(n.resolve(0, ip), None, "per port");
        assert_eq!(n.next_due(), Some(0), "port 0's is now due");
    }

    #[test]
    fn the_table_is_bounded() {
        let mut n = Neighbours::default();
        for i in 0..(MAX_ENTRIES as u32 + 10) {
            n.learn(0, Ipv4Addr::from(i + 1), [0; 6], 0);
        }
        assert_eq!(n.len(), MAX_ENTRIES);
        assert_eq!(n.table_full, 10);
    }
}
