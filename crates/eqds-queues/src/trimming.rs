//! The ideal NDP trimming queue (Handley et al., SIGCOMM 2017; the "Ideal" switch of
//! the trimming paper, its §2 and §6).
//!
//! Two queues per port: a small data queue and a header queue. A data packet that does
//! not fit in the data queue is cut to its header, marked TRIMMED and queued as a
//! header. Control packets (anything that is not data) and already-trimmed headers
//! ride the header queue too. When the header queue is also full, the header goes back
//! to its sender (if enabled) or is dropped; a header already returned once is
//! dropped rather than bounced again. Between the two queues the scheduler is either
//! strict priority (headers first) or byte-based weighted fair queuing, the
//! recommended default, so data keeps moving during heavy trimming.

use crate::{
    flags, DeflectingQueue, Fifo, Limit, PacketId, PacketStore, QueueCore, QueueCtx,
    QueueDiscipline, Verdict,
};

/// How the port chooses between the header and the data queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimScheduler {
    /// Headers always first.
    StrictPriority,
    /// Deficit round robin; each turn adds `quantum` bytes of credit per queue
    /// (index 0 headers, 1 data).
    Wfq { quantum: [u64; 2] },
}

const HEADERS: usize = 0;
const DATA: usize = 1;

pub struct Trimming {
    /// Index 0: headers, 1: data.
    queues: [Fifo; 2],
    limits: [Limit; 2],
    /// Size of a trimmed packet on the wire.
    header_bytes: u32,
    scheduler: TrimScheduler,
    return_to_sender: bool,
    /// DRR credit per queue, in bytes.
    deficit: [u64; 2],
    /// Queue whose turn it is under WFQ.
    turn: usize,
    /// A traffic manager that cannot trim: data that does not fit is handed back
    /// whole ([`Verdict::Deflected`]) for the switch model to deflect or mirror.
    deflect: bool,
}

impl Trimming {
    pub fn new(
        data_limit: Limit,
        header_limit: Limit,
        header_bytes: u32,
        scheduler: TrimScheduler,
        return_to_sender: bool,
    ) -> Self {
        Trimming {
            queues: [Fifo::default(), Fifo::default()],
            limits: [header_limit, data_limit],
            header_bytes,
            scheduler,
            return_to_sender,
            deficit: [0, 0],
            turn: HEADERS,
            deflect: false,
        }
    }

    fn admits(&self, q: usize, size: u32) -> bool {
        self.limits[q].admits(self.queues[q].len(), self.queues[q].bytes(), size)
    }

    fn pop(&mut self, q: usize) -> Option<(PacketId, u32)> {
        let item = self.queues[q].pop();
        if self.queues[q].is_empty() {
            // An idle queue keeps no credit (DRR).
            self.deficit[q] = 0;
        }
        item
    }
}

impl<S: PacketStore, R: ?Sized> QueueDiscipline<S, R> for Trimming {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) -> Verdict {
        let (size, f) = (ctx.pkts.size(pkt), ctx.pkts.flags(pkt));
        let is_data = ctx.pkts.is_data(pkt) && f & flags::TRIMMED == 0;
        if is_data && self.admits(DATA, size) {
            self.queues[DATA].push(pkt, size);
            return Verdict::Queued;
        }
        if is_data && self.deflect {
            return Verdict::Deflected;
        }
        let size = if is_data {
            // A packet the store cannot cut (a switch's non-EQDS traffic) is dropped,
            // as a drop-tail queue would.
            let Some(cut) = ctx.pkts.trim_to_header(pkt, self.header_bytes) else {
                return Verdict::Dropped;
            };
            ctx.stats.trims += 1;
            cut
        } else {
            size
        };
        // Trimming set TRIMMED and leaves RETURNED as it was.
        let trimmed = is_data || f & flags::TRIMMED != 0;
        if self.admits(HEADERS, size) {
            self.queues[HEADERS].push(pkt, size);
            Verdict::Queued
        } else if self.return_to_sender && trimmed && f & flags::RETURNED == 0 {
            Verdict::Returned
        } else {
            Verdict::Dropped
        }
    }
}

impl QueueCore for Trimming {
    fn for_each_queued(&self, f: &mut dyn FnMut(PacketId)) {
        self.queues.iter().for_each(|q| q.for_each(f));
    }

    fn dequeue(&mut self) -> Option<(PacketId, u32)> {
        match (
            self.queues[HEADERS].is_empty(),
            self.queues[DATA].is_empty(),
        ) {
            (true, true) => None,
            (false, true) => self.pop(HEADERS),
            (true, false) => self.pop(DATA),
            (false, false) => match self.scheduler {
                TrimScheduler::StrictPriority => self.pop(HEADERS),
                TrimScheduler::Wfq { quantum } => loop {
                    let q = self.turn;
                    let size = self.queues[q]
                        .front_size()
                        .expect("both queues are backlogged") as u64;
                    if self.deficit[q] >= size {
                        self.deficit[q] -= size;
                        return self.pop(q);
                    }
                    self.deficit[q] += quantum[q];
                    self.turn ^= 1;
                },
            },
        }
    }

    fn backlog_bytes(&self) -> u64 {
        self.queues[HEADERS].bytes() + self.queues[DATA].bytes()
    }

    fn backlog_packets(&self) -> u32 {
        self.queues[HEADERS].len() + self.queues[DATA].len()
    }

    /// An idle port with an empty data queue admits any packet untouched, as long as
    /// the data queue holds at least one packet.
    fn bypass_when_idle(&self) -> bool {
        self.limits[DATA].packets != Some(0)
    }

    fn deflect_on_drop(&mut self) -> Option<DeflectingQueue> {
        self.deflect = true;
        Some(DeflectingQueue {
            header_bytes: self.header_bytes,
            data_limit: self.limits[DATA],
        })
    }

    fn data_backlog_bytes(&self) -> u64 {
        self.queues[DATA].bytes()
    }

    fn prefetch_head(&self) {
        self.queues[HEADERS].prefetch_front();
        self.queues[DATA].prefetch_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Rig, TestPacket};

    const DATA_PACKET: bool = false;
    const CONTROL_PACKET: bool = true;

    fn offer(
        rig: &mut Rig,
        q: &mut Trimming,
        control: bool,
        size: u32,
        flags: u8,
    ) -> (PacketId, Verdict) {
        let p = TestPacket {
            control,
            size,
            flags,
            ..Default::default()
        };
        rig.offer(q, p)
    }

    fn packets(n: u32) -> Limit {
        Limit {
            packets: Some(n),
            bytes: None,
        }
    }

    #[test]
    fn overflow_trims_exactly_the_excess() {
        let mut rig = Rig::new(1);
        let mut q = Trimming::new(
            packets(8),
            packets(100),
            64,
            TrimScheduler::StrictPriority,
            true,
        );
        let verdicts: Vec<_> = (0..20)
            .map(|_| offer(&mut rig, &mut q, DATA_PACKET, 9000, 0))
            .collect();
        assert!(verdicts.iter().all(|(_, v)| *v == Verdict::Queued));
        assert_eq!(rig.stats.trims, 12);
        for (i, (id, _)) in verdicts.iter().enumerate() {
            let p = rig.pkts.get(*id);
            assert_eq!(p.has(flags::TRIMMED), i >= 8, "packet {i}");
            assert_eq!(p.size, if i >= 8 { 64 } else { 9000 });
        }
        // Strict priority: the 12 headers leave before any data.
        let order: Vec<u32> = std::iter::from_fn(|| q.dequeue())
            .map(|(_, size)| size)
            .collect();
        assert_eq!(order, [vec![64; 12], vec![9000; 8]].concat());
    }

    #[test]
    fn a_deflecting_traffic_manager_hands_back_whole_data_and_still_queues_headers() {
        let mut rig = Rig::new(1);
        let mut q = Trimming::new(
            packets(2),
            packets(100),
            64,
            TrimScheduler::StrictPriority,
            true,
        );
        let tm = q.deflect_on_drop().expect("a trimming queue can deflect");
        assert_eq!((tm.header_bytes, tm.data_limit), (64, packets(2)));
        let verdicts: Vec<_> = (0..4)
            .map(|_| offer(&mut rig, &mut q, DATA_PACKET, 1500, 0))
            .collect();
        let kinds: Vec<_> = verdicts.iter().map(|(_, v)| *v).collect();
        use Verdict::{Deflected, Queued};
        assert_eq!(kinds, [Queued, Queued, Deflected, Deflected]);
        for (id, _) in &verdicts[2..] {
            let p = rig.pkts.get(*id);
            assert!(!p.has(flags::TRIMMED) && p.size == 1500, "deflected whole");
        }
        assert_eq!(rig.stats.trims, 0, "the switch model counts its own trims");
        assert_eq!(q.data_backlog_bytes(), 3000);
        // A header (cut by the switch) and control still queue.
        let (_, v) = offer(&mut rig, &mut q, DATA_PACKET, 64, flags::TRIMMED);
        assert_eq!(v, Queued);
        let (_, v) = offer(&mut rig, &mut q, CONTROL_PACKET, 64, 0);
        assert_eq!(v, Queued);
        assert_eq!(q.backlog_packets(), 4);
    }

    /// Data the store cannot cut (a switch's non-EQDS traffic) is dropped where it
    /// would have been trimmed, and counted as no trim; it still fills the data queue.
    #[test]
    fn data_the_store_cannot_cut_is_dropped_not_trimmed() {
        let mut rig = Rig::new(1);
        let mut q = Trimming::new(
            packets(1),
            packets(10),
            64,
            TrimScheduler::StrictPriority,
            true,
        );
        let opaque = TestPacket {
            size: 1500,
            uncuttable: true,
            ..Default::default()
        };
        assert_eq!(rig.offer(&mut q, opaque).1, Verdict::Queued);
        let (id, v) = rig.offer(&mut q, opaque);
        assert_eq!(v, Verdict::Dropped);
        assert_eq!((rig.stats.trims, q.backlog_packets()), (0, 1));
        assert_eq!(rig.pkts.get(id).size, 1500);
    }

    #[test]
    fn control_packets_ride_the_header_queue_untrimmed() {
        let mut rig = Rig::new(1);
        let mut q = Trimming::new(
            packets(1),
            packets(10),
            64,
            TrimScheduler::StrictPriority,
            true,
        );
        offer(&mut rig, &mut q, DATA_PACKET, 1500, 0);
        let (ack, v) = offer(&mut rig, &mut q, CONTROL_PACKET, 64, 0);
        assert_eq!(v, Verdict::Queued);
        assert!(!rig.pkts.get(ack).has(flags::TRIMMED));
        assert_eq!(rig.stats.trims, 0);
        assert_eq!(q.dequeue().map(|(p, _)| p), Some(ack));
    }

    #[test]
    fn return_to_sender_only_when_the_header_queue_is_full() {
        let mut rig = Rig::new(1);
        let mut q = Trimming::new(
            packets(1),
            packets(2),
            64,
            TrimScheduler::StrictPriority,
            true,
        );
        let v: Vec<Verdict> = (0..5)
            .map(|_| offer(&mut rig, &mut q, DATA_PACKET, 1500, 0).1)
            .collect();
        assert_eq!(
            v,
            [
                Verdict::Queued,
                Verdict::Queued,
                Verdict::Queued,
                Verdict::Returned,
                Verdict::Returned
            ]
        );
        // A header already returned once is dropped, not bounced again.
        let (_, again) = offer(
            &mut rig,
            &mut q,
            DATA_PACKET,
            64,
            flags::TRIMMED | flags::RETURNED,
        );
        assert_eq!(again, Verdict::Dropped);
        // Without return-to-sender the overflow is dropped.
        let mut q = Trimming::new(
            packets(1),
            packets(2),
            64,
            TrimScheduler::StrictPriority,
            false,
        );
        let v: Vec<Verdict> = (0..4)
            .map(|_| offer(&mut rig, &mut q, DATA_PACKET, 1500, 0).1)
            .collect();
        assert_eq!(v[3], Verdict::Dropped);
    }

    #[test]
    fn wfq_shares_bytes_by_weight_and_keeps_data_moving() {
        let mut rig = Rig::new(1);
        let quantum = [10 * 1500, 1500];
        let mut q = Trimming::new(
            packets(10_000),
            packets(100_000),
            64,
            TrimScheduler::Wfq { quantum },
            true,
        );
        for _ in 0..5_000 {
            offer(&mut rig, &mut q, DATA_PACKET, 1500, 0);
        }
        for _ in 0..100_000 {
            offer(&mut rig, &mut q, CONTROL_PACKET, 64, 0);
        }
        // While both queues are backlogged, bytes served follow the 10:1 weights.
        let (mut header_bytes, mut data_bytes) = (0u64, 0u64);
        for _ in 0..20_000 {
            let (_, size) = q.dequeue().unwrap();
            if size == 64 {
                header_bytes += 64
            } else {
                data_bytes += size as u64
            }
        }
        let ratio = header_bytes as f64 / data_bytes as f64;
        assert!((9.0..=11.0).contains(&ratio), "header:data bytes = {ratio}");
        assert!(data_bytes > 0);
    }
}
