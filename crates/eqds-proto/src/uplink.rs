//! Several sending EQIFs of one host sharing its uplink (paper §6, Fig. 5).
//!
//! Credit granted by many receivers can add up to more than the host's link. Within
//! one EQIF the tunnels holding credit take turns ([`Sender::poll_transmit`]); an
//! [`Uplink`] adds the level above: the EQIFs of a host (a TCP-compatible one under
//! the kernel's stack and a native one for applications, say, or one per tenant)
//! share the link by deficit round robin with a quantum of `weight` MTUs, fair when
//! the weights are equal. EQIFs can also be given strict priority levels; those of
//! one level share by weight (see `drr.rs`).
//!
//! Control packets are addressed to an EQIF by the `sender_id` its data carried, so
//! [`Uplink::handle_control`] hands each to the EQIF with that id. On the receiving
//! host each sending EQIF is a sender of its own: the owner of the receiving EQIF
//! should give `(host, sender_id)` its own peer id.
//!
//! With a single EQIF the uplink adds nothing: every call goes straight to it.

mod drr;

use crate::sender::{Acked, PeerId, Sender, SenderConfig, Transmit};
use crate::time::Time;
use crate::wire::{ControlHeader, DataHeader};
use drr::Drr;

/// Position of an EQIF in its [`Uplink`], in the order they were added.
pub type EqifIndex = usize;

/// How an EQIF shares the uplink with the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// Relative share among the EQIFs of its priority level: the DRR quantum in MTUs
    /// (the largest MTU of the uplink's EQIFs). At least 1.
    pub weight: u32,
    /// Strict priority level: an EQIF is served only while no EQIF of a lower
    /// level has a packet to send.
    pub priority: u8,
}

impl Default for Share {
    /// Weight 1 at level 0: a fair share.
    fn default() -> Self {
        Share {
            weight: 1,
            priority: 0,
        }
    }
}

/// The sending EQIFs of one host and the scheduler between them. See the module
/// documentation.
///
/// The first EQIF is kept inline: a host with one EQIF (the common case, on every
/// host of a large simulation) reaches it without following a pointer.
///
/// Fields are kept in this order (`repr(C)`): what every transmission reads, then the
/// first EQIF, whose hot fields lead it (see [`crate::receiver::Receiver`]).
#[derive(Debug)]
#[repr(C)]
pub struct Uplink<P> {
    /// EQIFs 1, 2, ...
    rest: Vec<Sender<P>>,
    /// Scratch: each EQIF's next packet length, refilled on every poll.
    heads: Vec<Option<u32>>,
    /// EQIF whose ACKed packets `poll_acked` hands back next.
    acked_from: EqifIndex,
    /// The most the EQIFs' bytes in flight have been together (with several).
    in_flight_peak: u64,
    first: Sender<P>,
    /// Control packets whose `sender_id` names none of the EQIFs.
    unknown_sender_id: u64,
    /// Each EQIF's share, by index.
    shares: Vec<Share>,
    drr: Drr,
}

impl<P: Clone> Uplink<P> {
    /// An uplink whose first EQIF (index 0) has `config` and `share`.
    ///
    /// # Panics
    /// As [`Uplink::add`].
    pub fn new(config: SenderConfig, share: Share) -> Self {
        assert!(share.weight > 0, "an EQIF's weight must be at least 1");
        let mut drr = Drr::default();
        drr.push(
            u64::from(share.weight) * u64::from(config.mtu),
            share.priority,
        );
        Uplink {
            first: Sender::new(config),
            rest: Vec::new(),
            shares: vec![share],
            drr,
            heads: vec![None],
            acked_from: 0,
            unknown_sender_id: 0,
            in_flight_peak: 0,
        }
    }

    /// An uplink with one EQIF, which gets all of it.
    pub fn single(config: SenderConfig) -> Self {
        Self::new(config, Share::default())
    }

    /// Adds a sending EQIF, last in the round, and returns its index.
    ///
    /// # Panics
    /// If `share.weight` is 0, if another EQIF has the same `sender_id` (control
    /// packets could not find their EQIF), or as [`Sender::new`] does.
    pub fn add(&mut self, config: SenderConfig, share: Share) -> EqifIndex {
        assert!(share.weight > 0, "an EQIF's weight must be at least 1");
        assert!(
            self.find(config.sender_id).is_none(),
            "sender id {} is taken by another EQIF",
            config.sender_id
        );
        self.rest.push(Sender::new(config));
        self.shares.push(share);
        self.heads.push(None);
        self.drr.push(1, share.priority);
        // Quanta count in the largest MTU, which may have just grown.
        let unit = self.eqifs().map(|s| s.config().mtu).max().unwrap_or(1);
        for (i, s) in self.shares.iter().enumerate() {
            self.drr
                .set_quantum(i, u64::from(s.weight) * u64::from(unit));
        }
        self.rest.len()
    }

    /// Number of EQIFs (at least 1).
    pub fn eqif_count(&self) -> usize {
        1 + self.rest.len()
    }

    /// EQIF `i`.
    ///
    /// # Panics
    /// If there is no EQIF `i`.
    pub fn eqif(&self, i: EqifIndex) -> &Sender<P> {
        match i {
            0 => &self.first,
            _ => &self.rest[i - 1],
        }
    }

    /// EQIF `i`, to write packets into, size windows or ask for ECN marks.
    ///
    /// # Panics
    /// If there is no EQIF `i`.
    pub fn eqif_mut(&mut self, i: EqifIndex) -> &mut Sender<P> {
        match i {
            0 => &mut self.first,
            _ => &mut self.rest[i - 1],
        }
    }

    /// Every EQIF, in index order.
    pub fn eqifs(&self) -> impl Iterator<Item = &Sender<P>> + '_ {
        std::iter::once(&self.first).chain(&self.rest)
    }

    fn eqifs_mut(&mut self) -> impl Iterator<Item = &mut Sender<P>> + '_ {
        std::iter::once(&mut self.first).chain(&mut self.rest)
    }

    /// How EQIF `i` shares the uplink.
    pub fn share(&self, i: EqifIndex) -> Share {
        self.shares[i]
    }

    /// The EQIF whose data carries `sender_id`.
    pub fn find(&self, sender_id: u16) -> Option<EqifIndex> {
        self.eqifs().position(|s| s.config().sender_id == sender_id)
    }

    /// Hands a control packet from `src` to the EQIF its `sender_id` names
    /// ([`Sender::handle_control`]); one naming none is counted and ignored.
    pub fn handle_control(&mut self, now: Time, src: PeerId, header: &ControlHeader) {
        match self.find(header.sender_id) {
            Some(i) => self.eqif_mut(i).handle_control(now, src, header),
            None => self.unknown_sender_id += 1,
        }
    }

    /// A switch returned the trimmed header of a data packet bound for `dst`
    /// ([`Sender::handle_returned`]), to the EQIF that sent it.
    pub fn handle_returned(&mut self, now: Time, dst: PeerId, header: &DataHeader) {
        match self.find(header.sender_id) {
            Some(i) => self.eqif_mut(i).handle_returned(now, dst, header.seq),
            None => self.unknown_sender_id += 1,
        }
    }

    /// The next packet to put on the link, and the EQIF it comes from: the EQIF
    /// whose turn it is by deficit round robin among those of the most urgent
    /// priority level that have one.
    pub fn poll_transmit(&mut self, now: Time) -> Option<(EqifIndex, Transmit<P>)> {
        if self.rest.is_empty() {
            return self.first.poll_transmit(now).map(|tx| (0, tx));
        }
        let mut heads = std::mem::take(&mut self.heads);
        for (head, eqif) in heads.iter_mut().zip(self.eqifs_mut()) {
            *head = eqif.peek_transmit_len();
        }
        let picked = self.drr.pick(&heads);
        let expected = picked.and_then(|i| heads[i]);
        self.heads = heads;
        let i = picked?;
        let tx = self.eqif_mut(i).poll_transmit(now)?;
        debug_assert_eq!(Some(tx.wire_len), expected);
        // In flight grows only here.
        self.in_flight_peak = self.in_flight_peak.max(self.in_flight_bytes());
        Some((i, tx))
    }

    /// Whether some EQIF has a packet [`Uplink::poll_transmit`] would return now.
    pub fn has_transmit(&mut self) -> bool {
        self.eqifs_mut().any(|e| e.peek_transmit_len().is_some())
    }

    /// A packet some EQIF's receiver ACKed ([`Sender::poll_acked`]), and that EQIF.
    pub fn poll_acked(&mut self) -> Option<(EqifIndex, Acked<P>)> {
        let n = self.eqif_count();
        for _ in 0..n {
            let i = self.acked_from;
            if let Some(acked) = self.eqif_mut(i).poll_acked() {
                return Some((i, acked));
            }
            self.acked_from = (i + 1) % n;
        }
        None
    }

    /// The earliest timer of any EQIF ([`Sender::poll_timeout`]).
    pub fn poll_timeout(&self) -> Option<Time> {
        self.eqifs().filter_map(Sender::poll_timeout).min()
    }

    /// Runs every EQIF's timers due at `now` ([`Sender::handle_timeout`]).
    pub fn handle_timeout(&mut self, now: Time) {
        for eqif in self.eqifs_mut() {
            eqif.handle_timeout(now);
        }
    }

    /// Control packets ignored: by an EQIF (unknown source) or for want of one
    /// (unknown sender id).
    pub fn ignored_control(&self) -> u64 {
        self.unknown_sender_id + self.eqifs().map(Sender::ignored_control).sum::<u64>()
    }

    /// Charged bytes in flight over every EQIF ([`Sender::in_flight_bytes`]).
    pub fn in_flight_bytes(&self) -> u64 {
        self.eqifs().map(Sender::in_flight_bytes).sum()
    }

    /// The most [`Uplink::in_flight_bytes`] has been.
    pub fn peak_in_flight_bytes(&self) -> u64 {
        if self.rest.is_empty() {
            self.first.peak_in_flight_bytes()
        } else {
            self.in_flight_peak
        }
    }
}

#[cfg(test)]
mod tests;
