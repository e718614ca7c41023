//! The tunnel state machines of the paper's Appendix A: zero-RTT setup, epochs and
//! self-synchronisation (with §5's "Tunnel setup and teardown"; where the paper leaves
//! a case open, the text says so).
//!
//! A sending EQIF sends data at once, with SYN on every packet, until a SYN-ACK (or
//! SYN-NACK) for its epoch comes back. The first SYN of an epoch has its low 10 bits
//! zero, so a receiver can tell the epoch from any packet of the initial window, which
//! may arrive out of order. Either side may drop its state at any time without telling
//! the other; epochs let the two agree again which connection is the current one.
//!
//! Both machines are pure: an event goes in, the new state is stored and a short list
//! of [`Actions`] comes out for the caller to carry out in order (the caller owns the
//! reorder queue, the send buffers and the packets). No clocks, no randomness: the
//! sender's random epoch comes in as a `u32`.
//!
//! Epochs are 22 bits ([`EPOCH_BITS`]) and compared with serial arithmetic (our
//! choice: the paper does not say how), so random epochs near the wrap and `old + 1`
//! across it order correctly. Two epochs exactly half the space apart are neither less
//! nor greater in RFC 1982; both machines treat that case as **greater** \[choice\]:
//! the receiver accepts such a SYN, and the sender re-synchronises on such a SYN-ACK,
//! so either way one more attempt settles it.

use crate::wire::{epoch_lt, epoch_of, isn_for_epoch, seq_diff, EPOCH_BITS};

/// Mask of the epoch bits.
const EPOCH_MASK: u32 = (1 << EPOCH_BITS) - 1;

/// How an epoch compares with a reference epoch, in 22-bit serial order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpochOrder {
    /// Before the reference: stale.
    Lesser,
    /// The reference epoch.
    Same,
    /// After the reference, or exactly half the space away \[choice\].
    Greater,
}

/// Compares `epoch` with `reference` over [`EPOCH_BITS`] bits (bits above are ignored).
pub fn epoch_order(epoch: u32, reference: u32) -> EpochOrder {
    let (a, b) = (epoch & EPOCH_MASK, reference & EPOCH_MASK);
    if a == b {
        EpochOrder::Same
    } else if epoch_lt(a, b) {
        EpochOrder::Lesser
    } else {
        EpochOrder::Greater
    }
}

/// The epoch after `epoch`, wrapping at 2^22.
pub fn next_epoch(epoch: u32) -> u32 {
    epoch.wrapping_add(1) & EPOCH_MASK
}

/// Most actions one event can produce.
pub const MAX_ACTIONS: usize = 4;

/// The actions one event produced, in the order to carry them out. Held inline: no
/// allocation per packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Actions<A> {
    /// The first `len` entries are `Some`.
    items: [Option<A>; MAX_ACTIONS],
    /// How many actions there are.
    len: usize,
}

impl<A: Copy> Actions<A> {
    fn of(list: &[A]) -> Self {
        let mut items = [None; MAX_ACTIONS];
        for (slot, action) in items.iter_mut().zip(list) {
            *slot = Some(*action);
        }
        Self {
            items,
            len: list.len(),
        }
    }

    /// Number of actions.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No action: the event changed nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The actions in order.
    pub fn iter(&self) -> impl Iterator<Item = A> + '_ {
        self.items.iter().flatten().copied()
    }

    /// Whether `action` is among them.
    pub fn contains(&self, action: &A) -> bool
    where
        A: PartialEq,
    {
        self.iter().any(|a| a == *action)
    }
}

impl<A: Copy> IntoIterator for Actions<A> {
    type Item = A;
    type IntoIter = std::iter::Flatten<std::array::IntoIter<Option<A>, MAX_ACTIONS>>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter().flatten()
    }
}

// ---------------------------------------------------------------------------------
// Receiver (Appendix A, Figure 27)
// ---------------------------------------------------------------------------------

/// Receiving-side tunnel parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxConfig {
    /// W, the tunnel's credit window in packets. Non-SYN data more than 2W away from
    /// the in-order point is answered with RST \[choice\]. Default 150, the paper's
    /// kernel EQDS window (§8.5).
    pub window: u32,
}

impl Default for RxConfig {
    fn default() -> Self {
        Self { window: 150 }
    }
}

/// State of a receiving tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxState {
    /// No state: the epoch is unknown.
    Closed,
    /// Accepting data of `epoch`.
    Established {
        /// The epoch of the SYN that established the tunnel.
        epoch: u32,
    },
}

/// What happened to a receiving tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxEvent {
    /// A DATA packet (or RTS) arrived.
    Data {
        /// Its sequence number; for a SYN, `epoch_of(seq)` is its epoch.
        seq: u32,
        /// Its SYN flag.
        syn: bool,
        /// The reorder queue's in-order point (`ReorderQueue::next_seq`), for the stray
        /// check \[choice\]. Ignored when CLOSED.
        expected: u32,
        /// Whether the reorder queue skipped `seq` as a hole and still awaits it
        /// (`ReorderQueue::awaits`): a resend of this epoch, however far behind the
        /// in-order point. Ignored when CLOSED.
        awaited: bool,
    },
    /// Admin command, memory pressure or idle timeout: drop the tunnel.
    Close,
}

/// What the caller of [`RxTunnel::handle`] must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxAction {
    /// Hand every packet in the reorder queue to the host regardless of holes
    /// (`ReorderQueue::release_all`): the old sequence space will never fill.
    ReleaseReorderQueue,
    /// Start the sequence space at `isn` (`ReorderQueue::reset`).
    ResetSequence {
        /// The epoch's first sequence number: the SYN's seq, low 10 bits cleared.
        isn: u32,
    },
    /// Accept the packet: into the reorder queue (or a NACK if trimmed) and ACK it.
    /// With `syn_ack` the ACK/NACK carries SYN: it is the SYN-ACK/SYN-NACK.
    Accept {
        /// Set SYN on this packet's ACK or NACK.
        syn_ack: bool,
    },
    /// Send a SYN-ACK advertising `epoch` without accepting the packet. Its `ack_no`
    /// must lie in `epoch`; use a seq actually received (for example the last one
    /// released in order), because a sender in that epoch processes it as an ACK.
    SendSynAck {
        /// The receiver's current epoch.
        epoch: u32,
    },
    /// Send an RST: "this receiver holds no state for you".
    SendRst,
    /// Drop the packet: do not deliver it.
    Drop,
    /// Free the tunnel's state (reorder queue, credit state).
    FreeState,
}

/// The receiving side of one tunnel.
#[derive(Debug, Clone)]
pub struct RxTunnel {
    /// Parameters.
    config: RxConfig,
    /// Current state.
    state: RxState,
    /// Non-SYN data of the established epoch's first block has arrived since a SYN
    /// (re)established the tunnel. Until then, non-SYN data outside that block is
    /// taken for another epoch's (see [`RxTunnel::handle`]).
    confirmed: bool,
}

impl RxTunnel {
    /// A CLOSED receiving tunnel.
    pub fn new(config: RxConfig) -> Self {
        Self {
            config,
            state: RxState::Closed,
            confirmed: false,
        }
    }

    /// The current state.
    pub fn state(&self) -> RxState {
        self.state
    }

    /// The established epoch, if any.
    pub fn epoch(&self) -> Option<u32> {
        match self.state {
            RxState::Closed => None,
            RxState::Established { epoch } => Some(epoch),
        }
    }

    /// Runs one event through the receiver state machine (Appendix A, Figure 27) and
    /// returns what to do.
    pub fn handle(&mut self, event: RxEvent) -> Actions<RxAction> {
        use RxAction::*;
        match (self.state, event) {
            (RxState::Closed, RxEvent::Close) => Actions::of(&[]),
            (RxState::Established { .. }, RxEvent::Close) => {
                self.state = RxState::Closed;
                Actions::of(&[SendRst, FreeState])
            }
            (RxState::Closed, RxEvent::Data { seq, syn: true, .. }) => {
                let epoch = epoch_of(seq);
                self.state = RxState::Established { epoch };
                self.confirmed = false;
                let isn = isn_for_epoch(epoch);
                Actions::of(&[ResetSequence { isn }, Accept { syn_ack: true }])
            }
            // "RST means the receiver is closed" [inferred].
            (RxState::Closed, RxEvent::Data { syn: false, .. }) => Actions::of(&[SendRst, Drop]),
            (RxState::Established { epoch }, RxEvent::Data { seq, syn: true, .. }) => {
                let theirs = epoch_of(seq);
                match epoch_order(theirs, epoch) {
                    EpochOrder::Same => Actions::of(&[Accept { syn_ack: true }]),
                    EpochOrder::Greater => {
                        self.state = RxState::Established { epoch: theirs };
                        self.confirmed = false;
                        let isn = isn_for_epoch(theirs);
                        Actions::of(&[
                            ReleaseReorderQueue,
                            ResetSequence { isn },
                            Accept { syn_ack: true },
                        ])
                    }
                    // Stale: not delivered [choice], since its sequence space is not
                    // the queue's.
                    EpochOrder::Lesser => Actions::of(&[SendSynAck { epoch }, Drop]),
                }
            }
            (
                RxState::Established { epoch },
                RxEvent::Data {
                    seq,
                    syn: false,
                    expected,
                    awaited,
                },
            ) => {
                // [choice], a case the paper leaves open: non-SYN data far from the
                // in-order point belongs to another epoch (say we were re-established
                // by a stale SYN). RST makes the sender re-establish; our state is
                // kept, since the packet may just be a stray.
                //
                // Right after a SYN that test is not enough. A stale SYN of epoch E can
                // re-establish us while the sender runs E + 1 (it resynchronised on an
                // earlier SYN-ACK of ours for E), and E + 1's block starts where E's
                // ends, inside the 2W tolerance. A sender sends no SYN-less data until
                // its SYN-ACK, and no SYN beyond its epoch's first block, so the first
                // SYN-less data of our epoch lies in that block [choice]. Anything else
                // first is answered with RST, which moves the sender to a fresh epoch
                // that our SYN handling accepts. A sender that used its whole block
                // before its SYN-ACK came back pays one needless restart.
                //
                // A packet whose hole the reorder queue skipped is awaited whatever
                // its distance: without trimming its resend comes an RTO later, many
                // windows behind, and an RST would restart the tunnel for it.
                let limit = 2 * i64::from(self.config.window);
                let foreign = !self.confirmed && epoch_of(seq) != epoch;
                let far = i64::from(seq_diff(seq, expected)).abs() > limit;
                if foreign || (far && !awaited) {
                    Actions::of(&[SendRst, Drop])
                } else {
                    self.confirmed = true;
                    Actions::of(&[Accept { syn_ack: false }])
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Sender (Appendix A; the paper's Figure 26 is lost, this is rebuilt from its text)
// ---------------------------------------------------------------------------------

/// State of a sending tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxState {
    /// No tunnel.
    Closed {
        /// The epoch of the tunnel this one replaced, when still known: the next one
        /// uses the epoch after it rather than a random one.
        last_epoch: Option<u32>,
    },
    /// Sending with SYN, waiting for a SYN-ACK/SYN-NACK of `epoch`.
    SynSent {
        /// Our epoch.
        epoch: u32,
    },
    /// The receiver confirmed `epoch`; data goes without SYN.
    Established {
        /// Our epoch.
        epoch: u32,
    },
}

/// What happened to a sending tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxEvent {
    /// A packet is waiting to be sent. `random` is a uniformly random number from the
    /// caller, read only when CLOSED with no remembered epoch.
    PacketToSend {
        /// Random bits for a fresh epoch (the low 22 are used).
        random: u32,
    },
    /// A SYN-ACK or SYN-NACK (an ACK or NACK with SYN) arrived.
    SynAck {
        /// Its `ack_no`; `epoch_of(ack_no)` is the epoch it confirms or advertises.
        ack_no: u32,
    },
    /// An RST arrived: the receiver holds no state for this tunnel.
    Rst {
        /// Packets are queued or unacknowledged in flight.
        backlog: bool,
    },
    /// Too many retransmit timeouts in a row: the tunnel is unhealthy (Appendix A; the
    /// paper gives no number, so how many is the caller's choice).
    TooManyRtos,
    /// Idle timeout, memory pressure or admin command: drop the tunnel.
    Close,
}

/// What the caller of [`TxTunnel::handle`] must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxAction {
    /// A new epoch was picked: number the tunnel's packets from `isn` on.
    StartEpoch {
        /// The new epoch.
        epoch: u32,
        /// Its first sequence number, `epoch << 10`.
        isn: u32,
    },
    /// Set SYN on every DATA and RTS packet from now on.
    SetSyn,
    /// Stop setting SYN.
    StopSyn,
    /// Resend every unacknowledged packet (the initial window) renumbered in the new
    /// sequence space, with SYN, ahead of new data.
    ResendUnacked,
    /// Process the ACK/NACK as usual.
    Process,
    /// Ignore the control packet (stale, or no tunnel).
    Ignore,
    /// Free the tunnel's state (buffers, credit).
    FreeState,
}

/// The sending side of one tunnel.
///
/// While SYN-SENT the caller must not send past `isn + EPOCH_BLOCK - 1`: the whole
/// initial window must fit in the epoch's 1024-seq block (Appendix A), or a later SYN
/// would look like the next epoch to the receiver.
#[derive(Debug, Clone)]
pub struct TxTunnel {
    /// Current state.
    state: TxState,
}

impl Default for TxTunnel {
    fn default() -> Self {
        Self::new()
    }
}

impl TxTunnel {
    /// A CLOSED sending tunnel with no remembered epoch.
    pub fn new() -> Self {
        Self {
            state: TxState::Closed { last_epoch: None },
        }
    }

    /// A tunnel already SYN-SENT in `epoch`, for a caller that chose the epoch itself
    /// (`Sender::open_tunnel`). Its packets carry SYN as usual.
    pub fn syn_sent(epoch: u32) -> Self {
        Self {
            state: TxState::SynSent {
                epoch: epoch & EPOCH_MASK,
            },
        }
    }

    /// After a restart of a tunnel that already used sequence numbers up to
    /// `last_used`: if the new epoch's block does not start after `last_used`, moves
    /// to the first epoch whose block does and returns its `StartEpoch`.
    ///
    /// \[choice\] An ESTABLISHED tunnel numbers past its epoch's block, so `old + 1`
    /// can start inside sequence numbers still in flight; late ACKs and data of the
    /// old epoch would then be taken for new ones. Starting after them makes every
    /// stale packet fall below the new in-order point, where it is a duplicate.
    pub fn skip_past(&mut self, last_used: u32) -> Option<TxAction> {
        let TxState::SynSent { epoch } = self.state else {
            return None;
        };
        if crate::wire::seq_lt(last_used, isn_for_epoch(epoch)) {
            return None;
        }
        let epoch = next_epoch(epoch_of(last_used));
        self.state = TxState::SynSent { epoch };
        Some(TxAction::StartEpoch {
            epoch,
            isn: isn_for_epoch(epoch),
        })
    }

    /// The current state.
    pub fn state(&self) -> TxState {
        self.state
    }

    /// Our epoch, unless CLOSED.
    pub fn epoch(&self) -> Option<u32> {
        match self.state {
            TxState::Closed { .. } => None,
            TxState::SynSent { epoch } | TxState::Established { epoch } => Some(epoch),
        }
    }

    /// Whether data packets must carry SYN now.
    pub fn syn(&self) -> bool {
        matches!(self.state, TxState::SynSent { .. })
    }

    /// Runs one event through the sender state machine (Appendix A) and returns what to
    /// do.
    pub fn handle(&mut self, event: TxEvent) -> Actions<TxAction> {
        use TxAction::*;
        match (self.state, event) {
            (TxState::Closed { last_epoch }, TxEvent::PacketToSend { random }) => {
                let epoch = last_epoch.map_or(random & EPOCH_MASK, next_epoch);
                self.start(epoch, false)
            }
            (_, TxEvent::PacketToSend { .. }) => Actions::of(&[]),

            (TxState::Closed { .. }, TxEvent::SynAck { .. } | TxEvent::Rst { .. }) => {
                Actions::of(&[Ignore])
            }
            (TxState::SynSent { epoch }, TxEvent::SynAck { ack_no }) => {
                match epoch_order(epoch_of(ack_no), epoch) {
                    EpochOrder::Same => {
                        self.state = TxState::Established { epoch };
                        Actions::of(&[StopSyn, Process])
                    }
                    // Setup failed: the receiver holds a later epoch. One past it is
                    // sure to be accepted.
                    EpochOrder::Greater => self.start(next_epoch(epoch_of(ack_no)), true),
                    EpochOrder::Lesser => Actions::of(&[Ignore]),
                }
            }
            (TxState::Established { epoch }, TxEvent::SynAck { ack_no }) => {
                match epoch_order(epoch_of(ack_no), epoch) {
                    // The receiver sets SYN on the ACK of every SYN packet, so these
                    // keep coming for the rest of the initial window.
                    EpochOrder::Same => Actions::of(&[Process]),
                    EpochOrder::Greater => self.start(next_epoch(epoch_of(ack_no)), true),
                    EpochOrder::Lesser => Actions::of(&[Ignore]),
                }
            }

            (
                TxState::SynSent { epoch } | TxState::Established { epoch },
                TxEvent::Rst { backlog: true },
            ) => self.start(next_epoch(epoch), true),
            (
                TxState::SynSent { epoch } | TxState::Established { epoch },
                TxEvent::Rst { backlog: false },
            ) => self.free(epoch),

            // [choice] on Appendix A's "closing it and re-establishing a new tunnel,
            // possibly after a timeout": RTOs imply unacknowledged data, so
            // re-establish at once in a fresh epoch; the back-off is the caller's
            // pacing of the resends. Applied in SYN-SENT too, where the receiver may
            // be unreachable.
            (TxState::Closed { .. }, TxEvent::TooManyRtos) => Actions::of(&[]),
            (TxState::SynSent { epoch } | TxState::Established { epoch }, TxEvent::TooManyRtos) => {
                self.start(next_epoch(epoch), true)
            }

            // The wire format has no sender-to-receiver teardown notice (our encoding,
            // `wire.rs`), and telling the peer is only an optimisation (§5): nothing is
            // sent.
            (TxState::Closed { .. }, TxEvent::Close) => Actions::of(&[]),
            (TxState::SynSent { epoch } | TxState::Established { epoch }, TxEvent::Close) => {
                self.free(epoch)
            }
        }
    }

    /// Enters SYN-SENT in `epoch`; `resend` after a failed or broken tunnel.
    fn start(&mut self, epoch: u32, resend: bool) -> Actions<TxAction> {
        self.state = TxState::SynSent { epoch };
        let start = TxAction::StartEpoch {
            epoch,
            isn: isn_for_epoch(epoch),
        };
        if resend {
            Actions::of(&[start, TxAction::SetSyn, TxAction::ResendUnacked])
        } else {
            Actions::of(&[start, TxAction::SetSyn])
        }
    }

    /// Goes CLOSED, remembering `epoch` so the next tunnel can use the one after it.
    fn free(&mut self, epoch: u32) -> Actions<TxAction> {
        self.state = TxState::Closed {
            last_epoch: Some(epoch),
        };
        Actions::of(&[TxAction::FreeState])
    }
}

#[cfg(test)]
mod tests;
