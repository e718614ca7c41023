//! One port: its egress queue discipline, the token bucket that sets its rate, and
//! its counters.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use eqds_queues::{PacketId, PortStats, QueueDiscipline, QueueSpec};
use rand_chacha::ChaCha8Rng;

use crate::pool::FramePool;
use crate::token_bucket::TokenBucket;

/// A discipline over the switch's frames, drawing from the switch's seeded generator.
pub type Queue = Box<dyn QueueDiscipline<FramePool, ChaCha8Rng>>;

/// Checks that the switch can run `spec` (which [`QueueSpec::from_toml`] already
/// validated as a discipline): a trimming queue needs EQDS ports to know what it may
/// cut, and cannot return headers to their senders, since eqdsd does not take
/// returned headers (its resends come from NACKs and timeouts).
pub fn check_queue(spec: &QueueSpec, has_eqds_ports: bool) -> Result<(), String> {
    match spec {
        QueueSpec::Trimming {
            return_to_sender, ..
        } => {
            if !has_eqds_ports {
                return Err(
                    "a trimming queue cuts only EQDS data: list the UDP ports eqdsd \
                            listens on in switch.eqds_ports"
                        .into(),
                );
            }
            if *return_to_sender {
                return Err(
                    "return_to_sender = true: eqdsd does not take returned headers; \
                            set return_to_sender = false (a full header queue then drops)"
                        .into(),
                );
            }
            Ok(())
        }
        QueueSpec::StrictPriority { classes } => classes
            .iter()
            .try_for_each(|c| check_queue(c, has_eqds_ports)),
        QueueSpec::RandomLoss { queue, .. } => check_queue(queue, has_eqds_ports),
        _ => Ok(()),
    }
}

/// Counts of a port beyond its discipline's [`PortStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Frames and bytes received on the port (every frame, forwarded or not).
    pub rx_frames: u64,
    pub rx_bytes: u64,
    /// Frames offered to the port's discipline and queued by it.
    pub enqueued: u64,
    /// ARP requests the switch sent on the port.
    pub arp_requests: u64,
    /// Frames the kernel refused to transmit, to be tried again.
    pub tx_retries: u64,
}

pub struct Port {
    pub name: String,
    pub mac: [u8; 6],
    pub addrs: Vec<Ipv4Addr>,
    pub bucket: TokenBucket,
    pub queue: Queue,
    pub stats: PortStats,
    pub counters: PortCounters,
    /// A frame taken from the discipline that the kernel has not yet accepted.
    pub staged: Option<(PacketId, u32)>,
    /// ARP requests waiting to go out (ahead of the queue: they are the switch's own).
    pub arp_out: VecDeque<Vec<u8>>,
}

impl Port {
    /// Frames waiting: in the discipline and the staged one.
    pub fn backlog_packets(&self) -> u64 {
        u64::from(self.queue.backlog_packets()) + u64::from(self.staged.is_some())
    }

    pub fn backlog_bytes(&self) -> u64 {
        self.queue.backlog_bytes() + self.staged.map_or(0, |(_, s)| u64::from(s))
    }

    /// Whether the port has anything to send.
    pub fn has_work(&self) -> bool {
        self.staged.is_some() || !self.arp_out.is_empty() || self.queue.backlog_packets() > 0
    }
}
