//! Deficit round robin (Shreedhar and Varghese, SIGCOMM'95) over a few queues, with
//! strict priority between levels: the turn-taking half of [`super::Uplink`], apart
//! from the EQIFs so that it can be tested on made-up queues.
//!
//! Each queue has a quantum (its weight in bytes) and a deficit. The queue whose turn
//! it is adds its quantum to its deficit once per turn and sends while its head
//! packet fits in the deficit; then the turn passes on. A queue found with nothing to
//! send loses its deficit, so an idle queue cannot save up a burst. Over any interval
//! in which two queues stay backlogged their bytes sent are in the ratio of their
//! quanta, within one quantum plus one packet.
//!
//! Only queues of the most urgent priority level holding something take turns; the
//! others keep their deficit and wait. With a single level this is plain DRR.

/// Turn state of a deficit round robin over queues numbered from 0.
#[derive(Debug, Clone, Default)]
pub(crate) struct Drr {
    /// Bytes a queue may send per turn.
    quantum: Vec<u64>,
    /// Lower is served first.
    priority: Vec<u8>,
    deficit: Vec<u64>,
    /// Whose turn it is.
    current: usize,
    /// `current`'s turn has begun but its quantum has not been added yet: a turn is
    /// paid for when the queue is first found with something to send in it.
    fresh: bool,
}

impl Drr {
    /// Adds a queue, last in the round.
    pub(crate) fn push(&mut self, quantum: u64, priority: u8) {
        assert!(quantum > 0, "a queue's quantum must be positive");
        self.quantum.push(quantum);
        self.priority.push(priority);
        self.deficit.push(0);
        if self.quantum.len() == 1 {
            self.fresh = true;
        }
    }

    /// Sets queue `i`'s quantum (for weights given in MTUs when the MTU changes).
    pub(crate) fn set_quantum(&mut self, i: usize, quantum: u64) {
        assert!(quantum > 0, "a queue's quantum must be positive");
        self.quantum[i] = quantum;
    }

    /// The queue to take a packet from, given the length of every queue's head
    /// packet (`None`: nothing to send). Charges that length to the queue's deficit,
    /// so the caller must send exactly that packet. `None` if every queue is empty.
    pub(crate) fn pick(&mut self, heads: &[Option<u32>]) -> Option<usize> {
        debug_assert_eq!(heads.len(), self.quantum.len());
        let top = heads
            .iter()
            .zip(&self.priority)
            .filter_map(|(head, &p)| head.map(|_| p))
            .min()?;
        // Terminates: a queue of the top level gains a quantum on every visit of a
        // fresh turn and loses none of it until it sends.
        loop {
            let i = self.current;
            match heads[i] {
                Some(len) if self.priority[i] == top => {
                    if self.fresh {
                        self.deficit[i] += self.quantum[i];
                        self.fresh = false;
                    }
                    if u64::from(len) <= self.deficit[i] {
                        self.deficit[i] -= u64::from(len);
                        return Some(i);
                    }
                }
                None => self.deficit[i] = 0,
                // A less urgent queue waits with what it has.
                Some(_) => {}
            }
            self.current = (i + 1) % self.quantum.len();
            self.fresh = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Serves `rounds` packets from queues that never empty, whose packets have the
    /// lengths in `sizes[q]` (cycled), and returns the bytes each sent.
    fn serve_backlogged(drr: &mut Drr, sizes: &[Vec<u32>], rounds: usize) -> Vec<u64> {
        let mut next = vec![0usize; sizes.len()];
        let mut sent = vec![0u64; sizes.len()];
        for _ in 0..rounds {
            let heads: Vec<_> = (0..sizes.len())
                .map(|q| Some(sizes[q][next[q] % sizes[q].len()]))
                .collect();
            let q = drr.pick(&heads).expect("every queue is backlogged");
            sent[q] += u64::from(heads[q].unwrap());
            next[q] += 1;
        }
        sent
    }

    #[test]
    fn equal_quanta_alternate_full_packets() {
        let mut drr = Drr::default();
        drr.push(1500, 0);
        drr.push(1500, 0);
        let heads = [Some(1500), Some(1500)];
        let order: Vec<_> = (0..6).map(|_| drr.pick(&heads).unwrap()).collect();
        assert_eq!(order, [0, 1, 0, 1, 0, 1]);
    }

    #[test]
    fn small_packets_fill_a_turn_before_it_passes() {
        let mut drr = Drr::default();
        drr.push(1500, 0);
        drr.push(1500, 0);
        // Queue 0 sends 500-byte packets: three per 1500-byte turn.
        let heads = [Some(500), Some(1500)];
        let order: Vec<_> = (0..8).map(|_| drr.pick(&heads).unwrap()).collect();
        assert_eq!(order, [0, 0, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn a_packet_larger_than_the_quantum_waits_for_enough_turns() {
        let mut drr = Drr::default();
        drr.push(1000, 0);
        drr.push(1000, 0);
        let heads = [Some(2500), Some(1000)];
        let order: Vec<_> = (0..4).map(|_| drr.pick(&heads).unwrap()).collect();
        // Queue 0 saves up 3000 over three turns, queue 1 sends on each of them.
        assert_eq!(order, [1, 1, 0, 1]);
    }

    #[test]
    fn an_empty_queue_loses_its_deficit() {
        let mut drr = Drr::default();
        drr.push(3000, 0);
        drr.push(3000, 0);
        // Queue 0 sends one 1000-byte packet of its 3000 and empties.
        assert_eq!(drr.pick(&[Some(1000), None]), Some(0));
        assert_eq!(drr.pick(&[None, Some(1000)]), Some(1));
        // Its next turn starts from one quantum, not from the 2000 it left unused.
        let heads = [Some(1000), Some(1000)];
        let order: Vec<_> = (0..6).map(|_| drr.pick(&heads).unwrap()).collect();
        assert_eq!(order, [1, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn a_more_urgent_level_is_served_while_it_has_anything() {
        let mut drr = Drr::default();
        drr.push(1500, 1);
        drr.push(1500, 0);
        let both = [Some(1500), Some(1500)];
        assert!((0..5).all(|_| drr.pick(&both) == Some(1)));
        assert_eq!(drr.pick(&[Some(1500), None]), Some(0));
        assert_eq!(drr.pick(&[None, None]), None);
    }

    #[test]
    fn queues_of_one_level_share_by_quantum_while_another_level_waits() {
        let mut drr = Drr::default();
        drr.push(3000, 0);
        drr.push(1000, 0);
        drr.push(1000, 1);
        let sizes = vec![vec![1000], vec![1000], vec![1000]];
        let sent = serve_backlogged(&mut drr, &sizes, 400);
        assert_eq!(sent, [300_000, 100_000, 0]);
    }

    proptest! {
        /// Backlogged queues of one level get bytes in proportion to their quanta:
        /// each is within one quantum plus one packet of its exact share.
        #[test]
        fn backlogged_queues_share_in_proportion_to_their_quanta(
            weights in prop::collection::vec(1u64..5, 1..5),
            sizes in prop::collection::vec(prop::collection::vec(64u32..=1500, 1..6), 5),
            rounds in 200usize..2000,
        ) {
            let n = weights.len();
            let mut drr = Drr::default();
            for &w in &weights {
                drr.push(w * 1500, 0);
            }
            let sent = serve_backlogged(&mut drr, &sizes[..n], rounds);
            let total: u64 = sent.iter().sum();
            let weight_sum: u64 = weights.iter().sum();
            for q in 0..n {
                let fair = total as f64 * weights[q] as f64 / weight_sum as f64;
                let slack = (weights[q] * 1500 + 1500) as f64 * n as f64;
                prop_assert!(
                    (sent[q] as f64 - fair).abs() <= slack,
                    "queue {q}: {} bytes, fair share {fair:.0}, slack {slack}", sent[q]
                );
            }
        }

        /// Whatever the queues hold, a queue is picked exactly when one has something,
        /// and never an empty one or one below the most urgent level present.
        #[test]
        fn picks_only_a_most_urgent_queue_with_something_to_send(
            steps in prop::collection::vec(
                prop::collection::vec(prop::option::of(1u32..=3000), 3), 1..200),
            priorities in prop::collection::vec(0u8..3, 3),
        ) {
            let mut drr = Drr::default();
            for &p in &priorities {
                drr.push(1500, p);
            }
            for heads in &steps {
                let top = heads.iter().zip(&priorities)
                    .filter_map(|(h, &p)| h.map(|_| p)).min();
                match drr.pick(heads) {
                    Some(q) => {
                        prop_assert!(heads[q].is_some());
                        prop_assert_eq!(Some(priorities[q]), top);
                    }
                    None => prop_assert!(top.is_none()),
                }
            }
        }
    }
}
