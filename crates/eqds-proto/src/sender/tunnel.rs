//! One tunnel: the sending half of the credit loop towards one destination. Its send,
//! in-flight and retransmit queues (§6, Fig. 5), credit and pull target (§5), strays,
//! and the Appendix A [`TxTunnel`] (`crate::tunnel`) that numbers its packets in
//! epochs. [`Sender`](super::Sender) keeps one per destination and drives it; sending
//! is in `transmit.rs`, ACKs in `acks.rs`.

use std::collections::VecDeque;

use super::spray::PathCycle;
use super::{PeerId, SenderConfig, TunnelStats};
use crate::paths::{PathStats, PathTable};
use crate::rtt::RttEstimator;
use crate::time::Time;
use crate::tunnel::{epoch_order, Actions, EpochOrder, TxAction, TxTunnel};
use crate::wire::{epoch_of, seq_diff, seq_lt, ControlHeader, ControlKind, EPOCH_BLOCK};

/// The longest a stalled tunnel waits on its receiver's busy time before asking
/// again, in credit-loss timeouts (`credit_loss_deadline`): rounds of PULLs up to
/// eight timeouts long (about 6,500 senders sharing 10 Gbps at 1,500 B with the
/// 1 ms default) cost no spurious RTS.
pub(super) const BUSY_WAIT_TIMEOUTS: u64 = 8;

/// A packet that has been given a sequence number: in flight or awaiting resend.
#[derive(Debug)]
pub(super) struct Sent<P> {
    pub(super) seq: u32,
    /// Charged length (inner packet plus overhead).
    pub(super) len: u32,
    /// Path of the latest transmission (per-path statistics, §5): answers are counted
    /// against it.
    pub(super) path_id: u16,
    /// Time of the latest transmission; the retransmit timer runs from it.
    pub(super) sent_at: Time,
    /// Transmissions under this sequence number. More than one, and an ACK gives no
    /// RTT sample (Karn's rule).
    pub(super) sends: u16,
    /// NACKs and returned headers received for it: transmissions answered without
    /// freeing it. `sends - echoes` copies may still be on their way.
    pub(super) echoes: u16,
    pub(super) payload: P,
}

impl<P> Sent<P> {
    /// Copies still unanswered once the echo now arriving is counted, at least one if
    /// that echo came back faster than any round trip of the tunnel took, since it
    /// cannot then answer the latest transmission. Duplication in the network can
    /// make the count alone come out too low; the timing catches the usual case.
    pub(super) fn copies_left_after_echo(&self, now: Time, min_rtt: Option<Time>) -> u16 {
        let by_count = self.sends.saturating_sub(self.echoes + 1);
        let too_soon = self.sends > 1 && min_rtt.is_none_or(|m| now < self.sent_at + m);
        by_count.max(u16::from(too_soon))
    }
}

/// A packet freed by an ACK while another of its transmissions was still on the
/// way. The copy holds no payload, but it holds a share of the receiver's link: a
/// tunnel that counted nothing in flight and started a fresh NDP burst would put W
/// plus the stray on the wire. Strays end when their copies are answered or one
/// retransmit timeout after the latest transmission.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stray {
    pub(super) seq: u32,
    pub(super) copies: u16,
    pub(super) sent_at: Time,
}

/// One tunnel: the sending half of the credit loop towards one destination.
///
/// Fields are kept in this order (`repr(C)`): what nearly every event that reads the
/// tunnel reads fills its first 4 lines (which `Sender::hot_state` names for a caller
/// to load ahead), then path and timing state, then the counters, whose two hot ones
/// lead them. Counted with valgrind lackey in the simulator (k=4 permutation), an
/// event that reads the tunnel reads 5.9 of its 10 lines, against 7.8 before this
/// order, when the sequence and window fields sat behind 224 bytes of counters
/// (eqds-sim's BENCHMARKS.md, "Fourth pass").
#[derive(Debug)]
#[repr(C)]
pub(super) struct Tunnel<P> {
    /// The Appendix A state machine.
    pub(super) fsm: TxTunnel,
    /// Unspent credit in bytes (§5).
    pub(super) credit: i64,
    /// Charged bytes in `in_flight`.
    pub(super) in_flight_bytes: u64,
    /// `in_flight_bytes` as last added to the sender's total.
    pub(super) counted_in_flight: u64,
    /// Charged bytes in `send_queue`.
    pub(super) send_bytes: u64,
    /// Charged bytes in `retransmit`.
    pub(super) retransmit_bytes: u64,
    /// Last time this tunnel sent anything or heard a control packet: the
    /// credit-loss timer runs from it.
    pub(super) quiet_since: Time,
    /// Stale credit, at most one MTU, set aside for the next small packet that
    /// restarts the tunnel (`SenderConfig::thin_stream_credit`). It counts as held
    /// for the pull target and the window, and is never spent in a burst.
    pub(super) spare: i64,
    /// End of the receiver's last advertised busy period (§5).
    pub(super) busy_until: Time,
    /// How many packets at the head of `send_queue` were queued ahead of the rest
    /// ([`Sender::enqueue_ahead`](super::Sender::enqueue_ahead)); they keep their
    /// order among themselves.
    pub(super) ahead: usize,
    /// Packets in `in_flight` sent more than once, which may sit anywhere in it.
    pub(super) resent_in_flight: usize,
    /// Destination.
    pub(super) peer: PeerId,
    /// Sequence number of the next new packet.
    pub(super) next_seq: u32,
    /// The credit window W in bytes: `SenderConfig::window` unless
    /// [`Sender::set_window`](super::Sender::set_window) gave this destination its
    /// own.
    pub(super) window: u32,
    /// `window` in MTUs, rounded up: how far a pull number may lie from the count
    /// this tunnel follows (see `hear_pull_number`).
    pub(super) window_pulls: i32,
    /// Highest pull number seen, in serial order (§5).
    pub(super) highest_pull: u32,
    /// Pull target carried by the last DATA or RTS sent.
    pub(super) last_target: u32,
    /// First sequence number of the current epoch.
    pub(super) isn: u32,
    /// An RTS is due.
    pub(super) rts_pending: bool,
    /// Member of the sender's ready list.
    pub(super) ready: bool,
    /// Re-created by [`Sender::drop_tunnel`](super::Sender::drop_tunnel): the next
    /// control packet's pull number is the baseline, not credit.
    pub(super) pull_unsynced: bool,
    /// A pull number has been heard since the tunnel was created. Until then a
    /// number far behind our zero is a receiver with a long history (past half the
    /// serial space), not an overtaken packet: it becomes the baseline.
    pub(super) heard_pulls: bool,
    /// New packets waiting for credit: (charged length, payload).
    pub(super) send_queue: VecDeque<(u32, P)>,
    /// NACKed or timed-out packets, served before `send_queue` (§6).
    pub(super) retransmit: VecDeque<Sent<P>>,
    /// Sent and not yet ACKed, in order of (latest) send time. Those sent once are
    /// in sequence order too: new packets take increasing numbers, and renumbering
    /// empties it first.
    pub(super) in_flight: VecDeque<Sent<P>>,
    /// What each path id saw (empty unless `SenderConfig::path_stats`).
    pub(super) path_stats: PathTable,
    /// Path ids of this tunnel.
    pub(super) paths: PathCycle,
    /// A pull count given up for a restarted receiver's (its last number), and until
    /// when numbers near it are taken for the old incarnation's packets still in
    /// flight rather than for a count alive again.
    pub(super) forsaken: Option<(u32, Time)>,
    /// Latest send time of a packet ACKed on its only transmission: what has surely
    /// crossed the network, for `SenderConfig::loss_reorder_window`.
    pub(super) newest_delivered_send: Option<Time>,
    /// Round-trip samples of packets sent once: the retransmit timeout.
    pub(super) rtt: RttEstimator,
    pub(super) stats: TunnelStats,
    /// ACKed packets with copies still on their way; usually empty.
    pub(super) strays: Vec<Stray>,
}

impl<P> Tunnel<P> {
    pub(super) fn new(peer: PeerId, first_seq: u32, cfg: &SenderConfig, fsm: TxTunnel) -> Self {
        Self {
            peer,
            fsm,
            isn: first_seq & !(EPOCH_BLOCK - 1),
            pull_unsynced: false,
            forsaken: None,
            heard_pulls: false,
            next_seq: first_seq,
            send_queue: VecDeque::new(),
            ahead: 0,
            send_bytes: 0,
            retransmit: VecDeque::new(),
            retransmit_bytes: 0,
            in_flight: VecDeque::new(),
            resent_in_flight: 0,
            strays: Vec::new(),
            rtt: RttEstimator::default(),
            newest_delivered_send: None,
            in_flight_bytes: 0,
            counted_in_flight: 0,
            credit: 0,
            spare: 0,
            window: cfg.window,
            window_pulls: cfg.window.div_ceil(cfg.mtu) as i32,
            highest_pull: 0,
            last_target: 0,
            busy_until: 0,
            quiet_since: 0,
            rts_pending: false,
            ready: false,
            paths: PathCycle::new(cfg.paths, cfg.path_avoidance > 0),
            path_stats: PathTable::new(cfg.path_stats, cfg.paths),
            stats: TunnelStats {
                credit: 0,
                highest_pull: 0,
                last_pull_target: 0,
                send_queue_bytes: 0,
                retransmit_bytes: 0,
                in_flight_bytes: 0,
                in_flight_packets: 0,
                busy_until: 0,
                srtt: 0,
                rto: 0,
                free_credit_bytes: 0,
                bursts: 0,
                warm_restarts: 0,
                thin_restarts: 0,
                rts_sent: 0,
                credit_loss_rts: 0,
                bytes_sent: 0,
                retransmits: 0,
                rto_expiries: 0,
                reorder_losses: 0,
                credit_clamped_bytes: 0,
                pull_rebases: 0,
                pulls_credited: 0,
                stale_pulls: 0,
                epochs: 0,
                renumbered: 0,
                stale_rsts: 0,
                returned: 0,
                stray_packets: 0,
            },
        }
    }

    /// The common cases of [`Tunnel::hear_pull_number`], cheap enough for every
    /// control packet: a rise up to a window past the targets we sent becomes credit
    /// (past them: a receiver's spare PULLs), a number at most a window behind is an
    /// overtaken packet. Returns `false`, changing nothing, when the number needs
    /// the full rules.
    pub(super) fn credit_pull_number(&mut self, pull_no: u32, mtu: u32) -> bool {
        if self.pull_unsynced || self.forsaken.is_some() {
            return false;
        }
        let gained = seq_diff(pull_no, self.highest_pull);
        let common = if gained > 0 && seq_diff(pull_no, self.last_target) <= self.window_pulls {
            self.credit_pulls(pull_no, gained, mtu);
            true
        } else {
            (-self.window_pulls..=0).contains(&gained)
        };
        self.heard_pulls |= common;
        common
    }

    /// Credit for the PULLs up to `pull_no`, `gained` of them, clamped to the window.
    fn credit_pulls(&mut self, pull_no: u32, gained: i32, mtu: u32) {
        self.highest_pull = pull_no;
        self.stats.pulls_credited += gained as u64;
        let window = i64::from(self.window) - self.spare;
        let credit = self.credit + i64::from(gained) * i64::from(mtu);
        if credit > window {
            self.stats.credit_clamped_bytes += (credit - window) as u64;
        }
        self.credit = credit.min(window);
    }

    /// What [`Tunnel::credit_pull_number`] left: works out whether `header` is
    /// evidence of a restarted receiver and applies the full rules. Kept out of line:
    /// it runs on restarts, not per packet.
    #[cold]
    #[inline(never)]
    pub(super) fn hear_unusual_pull_number(
        &mut self,
        now: Time,
        header: &ControlHeader,
        cfg: &SenderConfig,
    ) {
        // A restarted receiver shows itself by an RST, or by any answer while our
        // tunnel is restarting (SYN-SENT in an epoch after its first, or still
        // receiving the SYN-ACKs of such an epoch): all carry its fresh count.
        // The first number a tunnel hears is evidence too: far behind our zero, it
        // is a count past half the serial space.
        let restarting = self.stats.epochs > 1 && self.fsm.syn();
        let recount = !self.heard_pulls
            || restarting
            || match header.kind {
                ControlKind::Rst => {
                    !(seq_lt(header.ack_no, self.isn) && self.fsm.epoch().is_some())
                }
                // Not in a tunnel's first epoch: its count is too young to stall on,
                // and its initial window's SYN-ACKs, overtaken by PULLs, would look
                // like one.
                ControlKind::Ack | ControlKind::Nack => {
                    header.syn
                        && self.stats.epochs > 1
                        && self.fsm.epoch().is_some_and(|e| {
                            epoch_order(epoch_of(header.ack_no), e) == EpochOrder::Same
                        })
                }
                ControlKind::Pull => false,
            };
        let quarantine = self.rtt.rto(cfg.rto);
        self.hear_pull_number(now, header.pull_no, recount, cfg.mtu, quarantine);
        self.heard_pulls = true;
    }

    /// Takes the cumulative pull number every control packet carries (§5):
    /// credit for the PULLs it reveals, or a new baseline when the number cannot be
    /// part of the count this tunnel follows (see "Pull numbers across restarts" in
    /// the `sender` module documentation). `recount` says the packet is evidence
    /// that the receiver may have started counting afresh: an RST, or a SYN-ACK of
    /// our current epoch. `quarantine` is how long numbers of a count given up may
    /// still arrive: the tunnel's retransmit timeout.
    pub(super) fn hear_pull_number(
        &mut self,
        now: Time,
        pull_no: u32,
        recount: bool,
        mtu: u32,
        quarantine: Time,
    ) {
        if self.pull_unsynced {
            // Re-created by `drop_tunnel`: the receiver's count goes on from where it
            // was; targets sent before this counted from our own zero, so nothing is
            // owed beyond it.
            self.pull_unsynced = false;
            self.rebase_pulls(pull_no);
            return;
        }
        let window_pulls = self.window_pulls;
        if let Some((old, until)) = self.forsaken {
            let near_old = seq_diff(pull_no, old).unsigned_abs() <= window_pulls as u32;
            match (near_old, now < until) {
                // The previous incarnation's, still on its way.
                (true, true) => {
                    self.stats.stale_pulls += 1;
                    return;
                }
                // The count we gave up is alive after all: the evidence that moved
                // us off it was an overtaken packet.
                (true, false) => {
                    self.rebase_pulls(pull_no);
                    return;
                }
                // The old incarnation has had its time: forget it, so that the new
                // count does not take it for the old one when it gets there.
                (false, false) => self.forsaken = None,
                (false, true) => {}
            }
        }
        let gained = seq_diff(pull_no, self.highest_pull);
        if gained > 0 && seq_diff(pull_no, self.last_target) <= window_pulls {
            self.credit_pulls(pull_no, gained, mtu);
        } else if gained > 0 {
            // More than a window past every target we sent: a receiver counts PULLs
            // only up to the targets it has seen, so this count is mostly PULLs
            // someone else asked for (our previous incarnation, or a tunnel we
            // forgot). Crediting it would burst a window the receiver never paced.
            self.rebase_pulls(pull_no);
        } else if recount && gained < -window_pulls {
            // More than a window behind, on a packet a restarted receiver sends
            // first: its count started again from zero. Waiting for it to pass ours
            // would stall the tunnel for as many PULLs as it ever received. Numbers
            // near the old count are the old incarnation's for a while.
            let old = self.highest_pull;
            self.rebase_pulls(pull_no);
            self.forsaken = Some((old, now.saturating_add(quarantine)));
        }
        // Otherwise behind: a control packet overtaken by later ones. Nothing new.
    }

    /// Follows the receiver's count from `pull_no` on, without credit for it.
    fn rebase_pulls(&mut self, pull_no: u32) {
        if pull_no != self.highest_pull {
            self.stats.pull_rebases += 1;
        }
        self.highest_pull = pull_no;
        self.last_target = pull_no;
        self.forsaken = None;
    }

    /// Bytes still to be sent: send queue plus retransmit queue (the pull target's
    /// backlog, see `sender.rs`).
    pub(super) fn backlog(&self) -> u64 {
        self.send_bytes + self.retransmit_bytes
    }

    /// Charged length of the packet that would be sent next.
    pub(super) fn head_len(&self) -> Option<u32> {
        self.retransmit
            .front()
            .map(|p| p.len)
            .or_else(|| self.send_queue.front().map(|&(len, _)| len))
    }

    /// The next packet is paid for (§5: only when the credit covers all of it) and,
    /// while SYN-SENT, a new one still fits in the epoch's block (Appendix A).
    pub(super) fn can_send_data(&self) -> bool {
        if self.retransmit.is_empty() && self.block_full() {
            return false;
        }
        self.head_len()
            .is_some_and(|len| i64::from(len) <= self.credit)
    }

    /// SYN-SENT with every sequence number of the epoch's block used.
    pub(super) fn block_full(&self) -> bool {
        self.fsm.syn() && self.next_seq.wrapping_sub(self.isn) >= EPOCH_BLOCK
    }

    /// A NACK or returned header for `seq` at `now`: the packet moves to the
    /// retransmit queue if it is in flight (and its path is avoided for `avoidance`),
    /// or one copy of a stray is accounted for. Returns whether the packet was in
    /// flight.
    pub(super) fn echo(&mut self, seq: u32, now: Time, avoidance: Time) -> bool {
        if let Some(pos) = self.in_flight.iter().position(|p| p.seq == seq) {
            let mut pkt = self.in_flight.remove(pos).expect("position is in range");
            self.landed(&pkt);
            pkt.echoes = pkt.echoes.saturating_add(1);
            self.path_failed(pkt.path_id, now, avoidance, |p| p.trimmed += 1);
            move_to_retransmit(self, pkt);
            true
        } else {
            self.stray_answered(seq);
            false
        }
    }

    /// Queues for resend the packets in flight sent more than `window` before the
    /// latest transmission known to have arrived (`SenderConfig::loss_reorder_window`).
    /// The in-flight queue is in send order, so they are at its front.
    pub(super) fn declare_reordered_losses(&mut self, now: Time, window: Time, avoidance: Time) {
        let Some(newest) = self.newest_delivered_send else {
            return;
        };
        while self
            .in_flight
            .front()
            .is_some_and(|p| p.sent_at.saturating_add(window) < newest)
        {
            let pkt = self.in_flight.pop_front().expect("front exists");
            self.landed(&pkt);
            self.stats.reorder_losses += 1;
            self.path_failed(pkt.path_id, now, avoidance, |p| p.timed_out += 1);
            move_to_retransmit(self, pkt);
        }
    }

    /// Accounts for `pkt` leaving `in_flight`.
    pub(super) fn landed(&mut self, pkt: &Sent<P>) {
        if pkt.sends > 1 {
            self.resent_in_flight -= 1;
        }
    }

    /// A packet sent on `path` was trimmed or lost: counted (by `count`) if
    /// statistics are kept, and the path avoided until `now + avoidance`.
    pub(super) fn path_failed(
        &mut self,
        path: u16,
        now: Time,
        avoidance: Time,
        count: fn(&mut PathStats),
    ) {
        if let Some(stats) = self.path_stats.get_mut(path) {
            count(stats);
        }
        self.paths.avoid(path, now.saturating_add(avoidance));
    }

    /// One copy of stray `seq` was answered (ACK, NACK or returned header).
    pub(super) fn stray_answered(&mut self, seq: u32) {
        if let Some(i) = self.strays.iter().position(|s| s.seq == seq) {
            self.strays[i].copies -= 1;
            if self.strays[i].copies == 0 {
                self.strays.swap_remove(i);
            }
        }
    }

    /// Forgets strays one retransmit timeout after their latest transmission: by
    /// then they were lost, or their answer was.
    pub(super) fn expire_strays(&mut self, now: Time, rto: Time) {
        self.strays.retain(|s| s.sent_at + rto > now);
    }

    /// Nothing of this tunnel is on its way to the receiver, as far as it knows.
    pub(super) fn nothing_on_the_wire(&self) -> bool {
        self.in_flight.is_empty() && self.strays.is_empty()
    }

    /// Packets are queued, awaiting resend or unacknowledged.
    pub(super) fn has_unacked(&self) -> bool {
        self.backlog() > 0 || !self.in_flight.is_empty()
    }

    /// Carries out the state machine's actions. Returns whether the control packet
    /// that caused them is to be processed as an ACK or NACK.
    pub(super) fn apply(&mut self, actions: Actions<TxAction>) -> bool {
        let mut process = false;
        for action in actions {
            match action {
                TxAction::StartEpoch { isn, .. } => {
                    let mut isn = isn;
                    if self.next_seq != self.isn {
                        let last_used = self.next_seq.wrapping_sub(1);
                        if let Some(TxAction::StartEpoch { isn: later, .. }) =
                            self.fsm.skip_past(last_used)
                        {
                            isn = later;
                        }
                    }
                    self.isn = isn;
                    self.next_seq = isn;
                    self.stats.epochs += 1;
                }
                TxAction::ResendUnacked => self.renumber_unacked(),
                TxAction::Process => process = true,
                TxAction::FreeState => {
                    self.credit = 0;
                    self.spare = 0;
                    self.rts_pending = false;
                }
                TxAction::SetSyn | TxAction::StopSyn | TxAction::Ignore => {}
            }
        }
        process
    }

    /// Moves every unacknowledged packet to the retransmit queue, renumbered in order
    /// from the new epoch's ISN; what does not fit in the block goes back to the head
    /// of the send queue. Without credit to resend, an RTS (with SYN) asks for it.
    fn renumber_unacked(&mut self) {
        let mut unacked: Vec<Sent<P>> = self
            .in_flight
            .drain(..)
            .chain(self.retransmit.drain(..))
            .collect();
        self.resent_in_flight = 0;
        // Every old seq lies serially before the new ISN, so this is the old order.
        let isn = self.isn;
        unacked.sort_by_key(|p| p.seq.wrapping_sub(isn));
        self.in_flight_bytes = 0;
        self.retransmit_bytes = 0;
        let mut overflow = Vec::new();
        for mut pkt in unacked {
            if self.next_seq.wrapping_sub(self.isn) < EPOCH_BLOCK {
                // A new number is a new packet as far as ACKs go: answers to the old
                // one cannot be taken for its own.
                (pkt.sends, pkt.echoes) = (0, 0);
                pkt.seq = self.next_seq;
                self.next_seq = self.next_seq.wrapping_add(1);
                self.retransmit_bytes += u64::from(pkt.len);
                self.stats.renumbered += 1;
                self.retransmit.push_back(pkt);
            } else {
                overflow.push((pkt.len, pkt.payload));
            }
        }
        for (len, payload) in overflow.into_iter().rev() {
            self.send_bytes += u64::from(len);
            self.send_queue.push_front((len, payload));
            // Renumbered packets go first of all; the ahead lane follows them.
            self.ahead = 0;
        }
        if self.backlog() > 0 && !self.can_send_data() {
            self.rts_pending = true;
        }
    }

    pub(super) fn wants_service(&self) -> bool {
        self.rts_pending || self.can_send_data()
    }

    /// Has backlog it cannot pay for and nothing in flight whose ACK or NACK could
    /// bring credit: only a PULL or the credit-loss timer can unblock it.
    pub(super) fn stalled(&self) -> bool {
        self.backlog() > 0
            && !self.can_send_data()
            && self.in_flight.is_empty()
            && !self.rts_pending
    }

    /// When a stalled tunnel stops waiting for a PULL and sends an RTS: `timeout`
    /// after it last heard from its receiver, and not before the busy time that
    /// receiver last advertised has run out, up to [`BUSY_WAIT_TIMEOUTS`] timeouts.
    /// A busy receiver serves its senders in turn, so a PULL owed to this tunnel may
    /// come as late as one round of them; in an incast of several hundred senders a
    /// round outlasts a millisecond, and a timer blind to it sends an RTS on every
    /// round. The busy time counts every PULL owed to every sender, many rounds'
    /// worth, hence the cap: a PULL really lost is repaired within it.
    pub(super) fn credit_loss_deadline(&self, timeout: Time) -> Time {
        let patience = timeout.saturating_mul(BUSY_WAIT_TIMEOUTS);
        let busy = self
            .busy_until
            .min(self.quiet_since.saturating_add(patience));
        self.quiet_since.saturating_add(timeout).max(busy)
    }

    /// The pull target to advertise now; see the `sender` module doc for why the window
    /// caps the backlog rather than the difference, and for the lookahead.
    pub(super) fn pull_target(&self, cfg: &SenderConfig) -> u32 {
        let lookahead = self.in_flight_bytes.min(u64::from(cfg.demand_lookahead));
        // Credit set aside for a thin stream's next packet pays for what the
        // lookahead expects to come, not for what waits: only a restart spends it.
        // Held all the same, it counts towards the window.
        let spare = self.spare.unsigned_abs();
        let lookahead = lookahead.saturating_sub(spare);
        let demand = (self.backlog() + lookahead).min(u64::from(self.window).saturating_sub(spare));
        let wanted = demand as i64 - self.credit;
        let pulls = if wanted > 0 {
            (wanted as u64).div_ceil(u64::from(cfg.mtu))
        } else {
            0
        };
        // `pulls` <= W/MTU + 1, far below 2^31, so the cast cannot truncate.
        let target = self.highest_pull.wrapping_add(pulls as u32);
        // Never below a target already sent: the receiver keeps the highest it has
        // seen, so a lower one would leave PULLs owed that the restart test (every
        // PULL asked for has arrived) does not know of. The backlog term alone never
        // lowers the target; the lookahead does when ACKs shrink what is in flight.
        if seq_lt(target, self.last_target) {
            self.last_target
        } else {
            target
        }
    }

    pub(super) fn snapshot(&self, min_rto: Time) -> TunnelStats {
        TunnelStats {
            srtt: self.rtt.srtt().unwrap_or(0),
            rto: self.rtt.rto(min_rto),
            credit: self.credit + self.spare,
            highest_pull: self.highest_pull,
            last_pull_target: self.last_target,
            send_queue_bytes: self.send_bytes,
            retransmit_bytes: self.retransmit_bytes,
            in_flight_bytes: self.in_flight_bytes,
            in_flight_packets: self.in_flight.len(),
            busy_until: self.busy_until,
            stray_packets: self.strays.len(),
            ..self.stats
        }
    }
}

/// Queues a packet for resending, lowest sequence number first: the receiver's
/// reorder queue holds everything behind the earliest hole, so that hole is the one
/// to fill first. In an incast a tunnel may wait many PULL intervals per resend, and
/// resending in the order losses were noticed could leave its first hole open past
/// the receiver's hole timeout.
pub(super) fn move_to_retransmit<P>(t: &mut Tunnel<P>, pkt: Sent<P>) {
    t.in_flight_bytes -= u64::from(pkt.len);
    t.retransmit_bytes += u64::from(pkt.len);
    let at = t
        .retransmit
        .iter()
        .rposition(|p| seq_lt(p.seq, pkt.seq))
        .map_or(0, |i| i + 1);
    t.retransmit.insert(at, pkt);
}
