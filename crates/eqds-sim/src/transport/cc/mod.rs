//! Congestion controllers, one per file, all behind [`CongestionControl`].
//!
//! The TCP sender owns loss recovery (fast retransmit, NewReno's window inflation,
//! RTO); a controller only answers "how big may the window be", grows it on ACKs and
//! shrinks it on congestion signals. Adding an algorithm means adding a file here.

mod bbr;
mod cubic;
mod dctcp;
mod hystart;
mod lia;
mod new_reno;
mod vegas;

pub use bbr::{Bbr, BbrMode};
pub use cubic::Cubic;
pub use dctcp::Dctcp;
pub use hystart::HyStart;
pub use lia::{lia_alpha, Lia};
pub use new_reno::NewReno;
pub use vegas::Vegas;

use crate::units::Time;

/// What one delivered segment says about the path: a delivery-rate sample, as the
/// sender's estimator (`tcp::DeliveryRate`) takes them and a model-based controller
/// (BBR) reads them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSample {
    /// Bytes delivered per second over the sample's interval.
    pub delivery_rate_bps: u64,
    /// The sender's delivered count when the segment was sent (rounds count by it).
    pub prior_delivered: u64,
    /// The sender's delivered count now, this segment included.
    pub delivered: u64,
    /// From the segment's (last) transmission to now.
    pub rtt: Time,
    /// The sender was application-limited when the segment was sent.
    pub app_limited: bool,
}

/// What an ACK that advanced the cumulative point tells the controller.
#[derive(Clone, Copy, Debug)]
pub struct AckEvent {
    pub now: Time,
    /// Bytes newly acknowledged (cumulatively).
    pub acked: u64,
    /// Bytes newly delivered: `acked` and what SACK newly reports (Linux's
    /// `acked_sacked`, which BBR's window grows by).
    pub delivered: u64,
    /// Of those, bytes that arrived CE-marked.
    pub ce: u64,
    /// RTT sample carried by this ACK, if any.
    pub rtt: Option<Time>,
    /// Cumulative ACK point after this ACK.
    pub snd_una: u64,
    /// Next new byte the sender would send.
    pub snd_nxt: u64,
    pub mss: u64,
    /// The delivery-rate sample of the segment this ACK delivered, for controllers
    /// that ask for them ([`CongestionControl::sees_every_ack`]); `None` otherwise.
    pub rate: Option<RateSample>,
    /// Bytes in flight after this ACK (the scoreboard's pipe with SACK).
    pub in_flight: u64,
}

/// What the sender knows when it finds a loss or its retransmission timer fires.
#[derive(Clone, Copy, Debug)]
pub struct LossEvent {
    pub now: Time,
    /// Bytes sent and not cumulatively acknowledged (RFC 5681's FlightSize).
    pub flight: u64,
    /// Of those, the bytes the sender believes are still in the network (RFC 6675's
    /// pipe: neither SACKed nor marked lost); `flight` without SACK, 0 after a
    /// timeout.
    pub pipe: u64,
    /// Bytes the ACK that revealed the loss newly delivered (0 for a timeout).
    pub delivered: u64,
    pub mss: u64,
}

pub trait CongestionControl: SaveState {
    /// Congestion window in bytes.
    fn window(&self) -> u64;
    /// Slow-start threshold in bytes.
    fn ssthresh(&self) -> u64;
    /// An ACK advanced the cumulative point outside loss recovery.
    fn on_ack(&mut self, ack: &AckEvent);
    /// Called on every ACK outside loss recovery, and during it too if
    /// [`CongestionControl::ecn_in_recovery`] says so. The default ignores ECN.
    fn on_ecn(&mut self, _ack: &AckEvent) {}
    /// Whether `on_ecn` also sees the ACKs of loss recovery. DCTCP's estimate counts
    /// every window's marks; controllers that answer a mark as a loss must not cut
    /// again for the window the loss already cut (RFC 3168 §6.1.2; Linux enters CWR
    /// only from the Open state).
    fn ecn_in_recovery(&self) -> bool {
        false
    }
    /// Loss detected (duplicate ACKs, SACK or RACK): the sender enters loss recovery;
    /// shrink the window.
    fn on_loss(&mut self, loss: &LossEvent);
    /// Retransmission timeout: collapse to the loss window.
    fn on_timeout(&mut self, loss: &LossEvent);
    /// Loss recovery, entered by [`CongestionControl::on_loss`] or
    /// [`CongestionControl::on_timeout`], is over: everything outstanding when it
    /// began is acknowledged (Linux's return to the Open state). The default does
    /// nothing.
    fn on_recovery_end(&mut self, _now: Time) {}
    /// The sender is about to transmit with nothing in flight (Linux's
    /// `CA_EVENT_TX_START`): after an idle period, or after a timeout marked all it
    /// had sent lost. The default does nothing.
    fn on_tx_start(&mut self, _now: Time) {}
    /// Whether the controller models the path from every ACK (BBR): it then gets
    /// [`CongestionControl::on_ack`] for every ACK that delivers data, in loss
    /// recovery and when the window did not limit the sender too, each with a
    /// delivery-rate sample when one was taken.
    fn sees_every_ack(&self) -> bool {
        false
    }
    /// Bits per second the sender should pace its segments at, if the controller
    /// paces (BBR); `None` sends as fast as the window allows.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    /// Multipath coupling, set by the connection before each ACK of one of its
    /// subflows: the aggressiveness factor and the connection's total window. Only
    /// coupled controllers use it.
    fn couple(&mut self, _alpha: f64, _total_window: u64) {}
}

/// A copy of a controller's whole state, kept so that a TCP sender can put it back
/// when a retransmission timeout turns out to have been spurious (Eifel, RFC 4015).
/// Every `Clone` controller has it.
pub trait SaveState {
    fn save(&self) -> Box<dyn CongestionControl>;
}

impl<T: CongestionControl + Clone + 'static> SaveState for T {
    fn save(&self) -> Box<dyn CongestionControl> {
        Box::new(self.clone())
    }
}

/// Which controller a TCP flow uses (the scenario's `transport.protocol`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcKind {
    NewReno,
    Cubic,
    Dctcp,
    Vegas,
    Bbr,
    /// MPTCP's linked increases (RFC 6356), for the subflows of one connection.
    Lia,
}

impl CcKind {
    /// A controller with a window of `initial_window` bytes; `hystart` is Cubic's;
    /// `seed` is the flow's, for controllers that draw at random (BBR).
    pub fn build(
        self,
        initial_window: u64,
        mss: u64,
        dctcp_g: f64,
        hystart: bool,
        seed: u32,
    ) -> Box<dyn CongestionControl> {
        match self {
            CcKind::NewReno => Box::new(NewReno::new(initial_window)),
            CcKind::Cubic => Box::new(Cubic::new(initial_window, mss, hystart)),
            CcKind::Dctcp => Box::new(Dctcp::new(initial_window, dctcp_g)),
            CcKind::Vegas => Box::new(Vegas::new(initial_window, mss)),
            CcKind::Bbr => Box::new(Bbr::new(initial_window, mss, seed)),
            CcKind::Lia => Box::new(Lia::new(initial_window)),
        }
    }
}

/// Halving after loss (RFC 5681, eq. 4): max(flight / 2, 2 MSS).
pub(crate) fn half_flight(flight: u64, mss: u64) -> u64 {
    (flight / 2).max(2 * mss)
}

impl LossEvent {
    /// A loss with `flight` bytes outstanding, all of them still in the network, a
    /// 1000-byte MSS and nothing newly delivered: what the controllers' unit tests
    /// feed them.
    #[cfg(test)]
    pub(crate) fn plain(now: Time, flight: u64) -> Self {
        LossEvent {
            now,
            flight,
            pipe: flight,
            delivered: 0,
            mss: 1000,
        }
    }
}

impl AckEvent {
    /// An ACK at time 0 of `acked` new bytes with a 1000-byte MSS and nothing else
    /// to tell: what the controllers' unit tests feed them.
    #[cfg(test)]
    pub(crate) fn plain(acked: u64) -> Self {
        AckEvent {
            now: 0,
            acked,
            delivered: acked,
            ce: 0,
            rtt: None,
            snd_una: 0,
            snd_nxt: 0,
            mss: 1000,
            rate: None,
            in_flight: 0,
        }
    }
}
