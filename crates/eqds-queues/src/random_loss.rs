//! Random loss in front of another discipline: each arriving packet is lost with a
//! fixed probability, whatever the queue holds.
//!
//! This models non-congestion loss (bit errors, a bad optic or cable, FCS failures),
//! the loss the DCQCN paper's §7 discusses for RoCEv2 and which PFC cannot prevent:
//! PFC stops a queue from overflowing, not a frame from being corrupted. It is
//! therefore allowed on a lossless priority, where it is the only way a packet is
//! lost. Losses are independent per packet (Bernoulli), whatever its size.
//!
//! The packet is lost as it reaches this port, so it takes no time on the port's
//! link; a corrupted frame would be serialised and then dropped by the far end's FCS
//! check. The difference is one packet time per loss, which does not matter at the
//! loss rates this is for.

use crate::{AfqCounters, PacketId, QueueCore, QueueCtx, QueueDiscipline, Time, Verdict};
use rand::{Rng, RngCore};

pub struct RandomLoss<S, R: ?Sized> {
    inner: Box<dyn QueueDiscipline<S, R>>,
    /// Probability that an arriving packet is lost, in [0, 1).
    rate: f64,
}

impl<S, R: ?Sized> RandomLoss<S, R> {
    pub fn new(rate: f64, inner: Box<dyn QueueDiscipline<S, R>>) -> Self {
        debug_assert!((0.0..1.0).contains(&rate), "loss rate {rate}");
        Self { inner, rate }
    }
}

impl<S, R: RngCore + ?Sized> QueueDiscipline<S, R> for RandomLoss<S, R> {
    fn enqueue(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) -> Verdict {
        // Draw only when loss is possible, so that a rate of 0 leaves the run's
        // random sequence, and with it every other random choice, untouched.
        if self.rate > 0.0 && ctx.rng.random::<f64>() < self.rate {
            ctx.stats.random_losses += 1;
            return Verdict::Dropped;
        }
        self.inner.enqueue(pkt, ctx)
    }

    fn departed(&mut self, pkt: PacketId, ctx: &mut QueueCtx<S, R>) {
        self.inner.departed(pkt, ctx);
    }
}

impl<S, R: ?Sized> QueueCore for RandomLoss<S, R> {
    fn for_each_queued(&self, f: &mut dyn FnMut(PacketId)) {
        self.inner.for_each_queued(f);
    }

    fn dequeue(&mut self) -> Option<(PacketId, u32)> {
        self.inner.dequeue()
    }

    fn dequeue_at(&mut self, now: Time) -> Option<(PacketId, u32)> {
        self.inner.dequeue_at(now)
    }

    fn dequeue_unpaused(&mut self, paused: u8) -> Option<(PacketId, u32)> {
        self.inner.dequeue_unpaused(paused)
    }

    fn serves_classes_apart(&self) -> bool {
        self.inner.serves_classes_apart()
    }

    fn backlog_bytes(&self) -> u64 {
        self.inner.backlog_bytes()
    }

    fn backlog_packets(&self) -> u32 {
        self.inner.backlog_packets()
    }

    fn wants_departures(&self) -> bool {
        self.inner.wants_departures()
    }

    /// Every arrival must face the draw, even at an idle port.
    fn bypass_when_idle(&self) -> bool {
        self.rate == 0.0 && self.inner.bypass_when_idle()
    }

    fn prefetch_head(&self) {
        self.inner.prefetch_head();
    }

    fn afq_counters(&self) -> Option<AfqCounters> {
        self.inner.afq_counters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Rig, TestPacket, TestQueue};
    use crate::{DropTail, Limit, PacketStore, PortStats};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn drop_tail() -> Box<TestQueue> {
        Box::new(DropTail::new(Limit::UNLIMITED))
    }

    /// Offers `n` packets to a lossy unlimited FIFO, emptying it as it goes; returns
    /// the packets lost, the stats, and the generator for a look at its state.
    fn offer(rate: f64, n: u32, seed: u64) -> (u32, PortStats, ChaCha8Rng) {
        let mut q = RandomLoss::new(rate, drop_tail());
        let mut rig = Rig::new(seed);
        let mut lost = 0;
        for _ in 0..n {
            let p = TestPacket {
                size: 1500,
                ..Default::default()
            };
            let (id, v) = rig.offer(&mut q, p);
            match v {
                Verdict::Queued => {
                    let (got, size) = q.dequeue().expect("the packet just queued");
                    assert_eq!((got, size), (id, 1500));
                }
                Verdict::Dropped => lost += 1,
                Verdict::Returned | Verdict::Deflected => panic!("a lossy FIFO hands nothing back"),
            }
            rig.pkts.free(id);
        }
        assert_eq!(q.backlog_packets(), 0);
        (lost, rig.stats, rig.rng)
    }

    /// The fraction lost is the rate, within 4.5 binomial standard deviations (a
    /// fixed seed, so this is a check of the draw, not a flaky statistical test).
    #[test]
    fn loses_the_given_fraction() {
        let n = 200_000u32;
        for rate in [1e-3, 1e-2, 0.3] {
            let (lost, stats, _) = offer(rate, n, 7);
            let mean = rate * f64::from(n);
            let sd = (mean * (1.0 - rate)).sqrt();
            assert!(
                (f64::from(lost) - mean).abs() < 4.5 * sd,
                "rate {rate}: lost {lost} of {n}, expected {mean:.0} ± {:.0}",
                4.5 * sd
            );
            assert_eq!(stats.random_losses, u64::from(lost));
        }
    }

    /// A rate of 0 loses nothing, draws nothing and lets the port bypass the queue
    /// as the inner discipline would.
    #[test]
    fn rate_zero_is_the_inner_discipline() {
        let (lost, stats, rng) = offer(0.0, 1000, 7);
        assert_eq!((lost, stats.random_losses), (0, 0));
        assert_eq!(
            rng,
            ChaCha8Rng::seed_from_u64(7),
            "the generator was drawn from"
        );
        assert!(RandomLoss::new(0.0, drop_tail()).bypass_when_idle());
        assert!(!RandomLoss::new(1e-6, drop_tail()).bypass_when_idle());
    }
}
