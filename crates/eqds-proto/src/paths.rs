//! Per-path statistics of a tunnel (paper §5, "Incremental deployment", and §6).
//!
//! A tunnel sprays its packets over path ids, and with UDP encapsulation each id
//! is one outer source port, so one route through the fabric. The sender already
//! knows, for every packet, the path it took and when it left; counting the answers
//! per path shows which routes are slow or lossy: a core link carrying a legacy
//! elephant flow, a failing cable. The paper's native EQIF exposes these RTTs;
//! choosing paths by them (load-aware spraying) is future work there and here.
//!
//! Answers are attributed to the path of the packet's latest transmission. RTT
//! samples come only from packets sent once (Karn's rule), like the tunnel's own
//! estimator. Keeping the table costs one [`PathStats`] per path id per tunnel, so
//! it is off unless [`SenderConfig::path_stats`](crate::sender::SenderConfig) asks.

use crate::time::Time;

/// What one tunnel saw on one path id.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathStats {
    /// DATA transmissions on this path, resends included.
    pub sent: u64,
    /// Packets ACKed whose latest transmission took this path.
    pub acked: u64,
    /// NACKs and returned headers: the network trimmed the packet on this path.
    pub trimmed: u64,
    /// Retransmit timer expiries, and packets taken for lost by the loss reorder
    /// window: the packet or its answer was lost outright.
    pub timed_out: u64,
    /// Round-trip samples taken (packets ACKed after exactly one transmission).
    pub rtt_samples: u64,
    /// Sum of the samples, for their mean.
    pub rtt_sum: Time,
    /// Smallest sample (0 before the first).
    pub min_rtt: Time,
    /// Largest sample.
    pub max_rtt: Time,
    /// Exponentially weighted mean of the samples, gain 1/8 as RFC 6298's srtt: the
    /// path's recent delay rather than its whole history (0 before the first).
    pub srtt: Time,
}

impl PathStats {
    /// Mean of the RTT samples, if there are any.
    pub fn mean_rtt(&self) -> Option<Time> {
        self.rtt_sum.checked_div(self.rtt_samples)
    }

    /// Takes one round-trip sample.
    pub(crate) fn sample(&mut self, rtt: Time) {
        self.rtt_samples += 1;
        self.rtt_sum = self.rtt_sum.saturating_add(rtt);
        self.max_rtt = self.max_rtt.max(rtt);
        if self.rtt_samples == 1 {
            self.min_rtt = rtt;
            self.srtt = rtt;
        } else {
            self.min_rtt = self.min_rtt.min(rtt);
            // srtt + (rtt - srtt) / 8, without going negative.
            self.srtt = self.srtt - self.srtt / 8 + rtt / 8;
        }
    }
}

/// The per-path table of one tunnel: empty when statistics are off, so that every
/// update is a bounds check that fails.
#[derive(Debug, Default)]
pub(crate) struct PathTable(Vec<PathStats>);

impl PathTable {
    /// A table for path ids `0..paths`, or an empty one if `enabled` is false.
    pub(crate) fn new(enabled: bool, paths: u16) -> Self {
        Self(if enabled {
            vec![PathStats::default(); usize::from(paths)]
        } else {
            Vec::new()
        })
    }

    /// The entry of `path`, if statistics are kept.
    pub(crate) fn get_mut(&mut self, path: u16) -> Option<&mut PathStats> {
        self.0.get_mut(usize::from(path))
    }

    /// Every path's entry, indexed by path id (empty when off).
    pub(crate) fn as_slice(&self) -> &[PathStats] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_give_min_max_mean_and_a_smoothed_rtt() {
        let mut p = PathStats::default();
        assert_eq!(p.mean_rtt(), None);
        p.sample(800);
        assert_eq!((p.min_rtt, p.max_rtt, p.srtt), (800, 800, 800));
        p.sample(1600);
        assert_eq!((p.min_rtt, p.max_rtt), (800, 1600));
        assert_eq!(p.mean_rtt(), Some(1200));
        assert_eq!(p.srtt, 800 - 100 + 200);
    }

    #[test]
    fn a_table_that_is_off_holds_nothing() {
        let mut off = PathTable::new(false, 8);
        assert!(off.get_mut(0).is_none());
        assert!(off.as_slice().is_empty());
        let mut on = PathTable::new(true, 8);
        assert!(on.get_mut(7).is_some());
        assert!(on.get_mut(8).is_none());
    }
}
