//! A packet store and a test rig for the disciplines' unit tests: packets as plain
//! structs in a vector, and the generator the simulator uses (ChaCha8), so that the
//! tests draw the numbers they drew in the simulator.

use crate::{flags, PacketId, PacketStore, PortStats, QueueCtx, QueueDiscipline, Time, Verdict};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A test packet: what the disciplines read, nothing more. The default is a
/// 0-byte data packet of flow 0 from host 0, class 0, no flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TestPacket {
    pub flow: u32,
    pub src: u32,
    pub size: u32,
    pub flags: u8,
    pub class: u8,
    /// Not data: an ACK, NACK, PULL (rides a trimming queue's header queue whole).
    pub control: bool,
    /// Data the store cannot cut to a header (a switch's non-EQDS traffic).
    pub uncuttable: bool,
}

impl TestPacket {
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Packets in a vector; freed slots are reused last-freed first, as the simulator's
/// slab does. Reading or freeing a freed packet panics: a discipline that touches a
/// packet it dropped fails its test.
#[derive(Default)]
pub struct VecStore {
    slots: Vec<(TestPacket, bool)>,
    free: Vec<PacketId>,
}

impl VecStore {
    pub fn alloc(&mut self, p: TestPacket) -> PacketId {
        match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = (p, true);
                id
            }
            None => {
                self.slots.push((p, true));
                self.slots.len() as PacketId - 1
            }
        }
    }

    pub fn get(&self, id: PacketId) -> &TestPacket {
        let (p, live) = &self.slots[id as usize];
        assert!(live, "packet {id} was freed");
        p
    }

    fn get_mut(&mut self, id: PacketId) -> &mut TestPacket {
        let (p, live) = &mut self.slots[id as usize];
        assert!(*live, "packet {id} was freed");
        p
    }

    /// Packets allocated and not freed.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

impl PacketStore for VecStore {
    fn size(&self, pkt: PacketId) -> u32 {
        self.get(pkt).size
    }
    fn flags(&self, pkt: PacketId) -> u8 {
        self.get(pkt).flags
    }
    fn set_flags(&mut self, pkt: PacketId, bits: u8) {
        self.get_mut(pkt).flags |= bits;
    }
    fn class(&self, pkt: PacketId) -> u8 {
        self.get(pkt).class
    }
    fn is_data(&self, pkt: PacketId) -> bool {
        !self.get(pkt).control
    }
    fn flow(&self, pkt: PacketId) -> u32 {
        self.get(pkt).flow
    }
    fn flow_key(&self, pkt: PacketId) -> u64 {
        let p = self.get(pkt);
        crate::flow_key(p.flow, p.src)
    }
    fn trim_to_header(&mut self, pkt: PacketId, header_bytes: u32) -> Option<u32> {
        let p = self.get_mut(pkt);
        if p.uncuttable {
            return None;
        }
        p.size = p.size.min(header_bytes);
        p.flags |= flags::TRIMMED;
        Some(p.size)
    }
    fn free(&mut self, pkt: PacketId) {
        self.get_mut(pkt);
        self.slots[pkt as usize].1 = false;
        self.free.push(pkt);
    }
}

/// A discipline's surroundings in a test: its packets, generator and counters.
pub struct Rig {
    pub pkts: VecStore,
    pub rng: ChaCha8Rng,
    pub stats: PortStats,
}

/// What the disciplines under test are boxed as.
pub type TestQueue = dyn QueueDiscipline<VecStore, ChaCha8Rng>;

impl Rig {
    pub fn new(seed: u64) -> Self {
        Rig {
            pkts: VecStore::default(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            stats: PortStats::default(),
        }
    }

    /// The context of a call at `now` on a port of `rate_bps`.
    pub fn ctx(&mut self, now: Time, rate_bps: u64) -> QueueCtx<'_, VecStore, ChaCha8Rng> {
        QueueCtx {
            pkts: &mut self.pkts,
            rng: &mut self.rng,
            stats: &mut self.stats,
            now,
            rate_bps,
        }
    }

    /// Allocates `p` and offers it to `q` at time 0; the packet stays allocated
    /// whatever the verdict.
    pub fn offer<Q>(&mut self, q: &mut Q, p: TestPacket) -> (PacketId, Verdict)
    where
        Q: QueueDiscipline<VecStore, ChaCha8Rng> + ?Sized,
    {
        self.offer_at(q, 0, 1, p)
    }

    /// [`Rig::offer`] at `now` on a port of `rate_bps`.
    pub fn offer_at<Q>(
        &mut self,
        q: &mut Q,
        now: Time,
        rate_bps: u64,
        p: TestPacket,
    ) -> (PacketId, Verdict)
    where
        Q: QueueDiscipline<VecStore, ChaCha8Rng> + ?Sized,
    {
        let id = self.pkts.alloc(p);
        let v = q.enqueue(id, &mut self.ctx(now, rate_bps));
        (id, v)
    }

    /// Like [`Rig::offer`], but frees a dropped packet, as a port does.
    pub fn offer_or_free<Q>(&mut self, q: &mut Q, p: TestPacket) -> Verdict
    where
        Q: QueueDiscipline<VecStore, ChaCha8Rng> + ?Sized,
    {
        let (id, v) = self.offer(q, p);
        if v == Verdict::Dropped {
            self.pkts.free(id);
        }
        v
    }

    /// The flows of the packets `q` serves, to its end.
    pub fn drain_flows<Q>(&self, q: &mut Q) -> Vec<u32>
    where
        Q: QueueDiscipline<VecStore, ChaCha8Rng> + ?Sized,
    {
        std::iter::from_fn(|| q.dequeue())
            .map(|(p, _)| self.pkts.get(p).flow)
            .collect()
    }
}
