//! Ingress trimming with queue-depth visibility (Tofino 2, §3; analysed, not built, by
//! the paper): ingress reads each egress port's data-queue depth from registers and
//! trims once it is above a threshold. The depth is read a few pipeline stages before
//! the packet reaches the traffic manager, so packets already in those stages were not
//! counted: each passed packet enters the TM `ingress_lag` later (`Event::HwEnterTm`),
//! and what then overflows goes through deflect-on-drop.

use crate::engine::Event;
use crate::ids::{Node, PacketId, PortId};
use crate::net::port::PortCtx;
use crate::net::Network;

impl Network {
    /// Whether a packet of `size` bytes would take `d`'s data queue above the
    /// threshold, by the depth ingress reads now.
    pub(super) fn over_depth(&self, d: PortId, size: u32) -> bool {
        let hw = self.trimming_hw.as_deref().expect("a hardware switch");
        self.queues[d as usize].data_backlog_bytes() + u64::from(size)
            > hw.depth_threshold[d as usize]
    }

    /// A packet from ingress pipeline `pipe` passed the check: it reaches the TM after
    /// the lag. Data never uses `ce_bytes`, so it holds the pipeline meanwhile (the
    /// event has no room for it).
    pub(super) fn pass_depth_check(
        &mut self,
        d: PortId,
        pipe: u32,
        pkt: PacketId,
        ctx: &mut PortCtx,
    ) {
        let hw = self.trimming_hw.as_deref().expect("a hardware switch");
        ctx.pkts.get_mut(pkt).ce_bytes = pipe;
        ctx.events
            .push(ctx.now + hw.ingress_lag, Event::HwEnterTm { port: d, pkt });
    }

    /// A packet that passed the depth check `ingress_lag` ago reaches the traffic
    /// manager.
    pub fn hw_enter_tm(&mut self, d: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        let Node::Switch(s) = self.ports[d as usize].owner else {
            return self.drop_at(d, pkt, ctx);
        };
        let pipe = std::mem::take(&mut ctx.pkts.get_mut(pkt).ce_bytes);
        self.enter_traffic_manager(s, pipe, d, pkt, ctx);
    }
}
