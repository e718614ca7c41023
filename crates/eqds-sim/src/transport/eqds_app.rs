//! A native EQDS application (the paper's eqdsperf): datagrams written straight into
//! the host's EQDS, with no transport above it.
//!
//! EQDS delivers every datagram once and in order while tunnel state lasts, so the
//! sender only writes and the receiver only counts. The sender fills its
//! destination's send queue until EQDS pushes back, then waits for its timer, which
//! the EQDS layer arms when the queue has room again.

use crate::eqds::NativeFlow;
use crate::ids::{FlowId, PacketId};
use crate::transport::{Ctx, Endpoint, Ends};

pub struct EqdsAppSender {
    ends: Ends,
    /// Bytes to send (`u64::MAX`: for ever).
    size: u64,
    /// Bytes written into EQDS so far.
    written: u64,
    class: u8,
}

impl EqdsAppSender {
    pub fn new(ends: Ends, size: Option<u64>, class: u8) -> Self {
        EqdsAppSender {
            ends,
            size: size.unwrap_or(u64::MAX),
            written: 0,
            class,
        }
    }

    /// Writes datagrams until the flow is written or EQDS pushes back. Each is
    /// `ctx.eqds_max_inner()` bytes but the last: EQDS makes it into a packet as it
    /// sends it ([`NativeFlow::packet`]).
    fn write(&mut self, ctx: &mut Ctx) {
        let max = u64::from(ctx.eqds_max_inner());
        while self.written < self.size {
            if !ctx.eqds_write_datagram(self.ends.flow, self.written) {
                return;
            }
            self.written += max.min(self.size - self.written);
        }
    }
}

impl Endpoint for EqdsAppSender {
    fn on_start(&mut self, ctx: &mut Ctx) {
        ctx.eqds_open_native(NativeFlow {
            flow: self.ends.flow,
            src: self.ends.host,
            sender: self.ends.me,
            dst: self.ends.peer_host,
            receiver: self.ends.peer,
            size: self.size,
            datagram: ctx.eqds_max_inner(),
            class: self.class,
        });
        self.write(ctx);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        // Nothing is addressed to the sending application.
        ctx.free(pkt);
    }

    /// EQDS has room again.
    fn on_timer(&mut self, ctx: &mut Ctx) {
        self.write(ctx);
    }
}

pub struct EqdsAppReceiver {
    flow: FlowId,
    size: u64,
    /// Datagram size: offsets are multiples of it.
    datagram: u64,
    /// Datagrams received, one bit each, for finite flows: a datagram EQDS delivers
    /// twice (after a tunnel lost state) counts once, and one it never delivers keeps
    /// the flow from completing rather than being taken for received.
    seen: Vec<u64>,
    /// Distinct bytes received.
    received: u64,
}

impl EqdsAppReceiver {
    pub fn new(flow: FlowId, size: Option<u64>, datagram: u32) -> Self {
        let size = size.unwrap_or(u64::MAX);
        let datagram = u64::from(datagram.max(1));
        let words = if size == u64::MAX {
            0
        } else {
            size.div_ceil(datagram).div_ceil(64) as usize
        };
        EqdsAppReceiver {
            flow,
            size,
            datagram,
            seen: vec![0; words],
            received: 0,
        }
    }

    /// Marks the datagram at `offset`; false if it was seen before.
    fn first_time(&mut self, offset: u64) -> bool {
        if self.seen.is_empty() {
            // Endless flow: EQDS delivers in order and at most once while tunnel
            // state lasts, so no bookkeeping.
            return true;
        }
        let index = offset / self.datagram;
        let (word, bit) = ((index / 64) as usize, index % 64);
        match self.seen.get_mut(word) {
            Some(w) if *w & (1 << bit) == 0 => {
                *w |= 1 << bit;
                true
            }
            _ => false,
        }
    }
}

impl Endpoint for EqdsAppReceiver {
    fn on_start(&mut self, _ctx: &mut Ctx) {}

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: PacketId) {
        let p = *ctx.packet(pkt);
        ctx.free(pkt);
        if !self.first_time(p.seq) {
            return;
        }
        let bytes = u64::from(p.payload);
        self.received += bytes;
        let f = ctx.flow(self.flow);
        f.received += bytes;
        f.delivered += bytes;
        if self.received >= self.size {
            ctx.complete_flow(self.flow);
        }
    }

    fn on_timer(&mut self, _ctx: &mut Ctx) {}
}
