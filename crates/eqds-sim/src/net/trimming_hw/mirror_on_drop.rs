//! Mirror-on-drop (Trident 4, Spectrum 2; §3): the traffic manager cuts a packet it
//! drops to its header and mirrors only that to the pipeline's MoD (recirculation)
//! port, 100 Gb/s with 1 µs of latency (§6.1); back in ingress the header is queued at
//! the header priority of the port it was bound for (NDP), or turned round towards its
//! sender (SFC). Every trimmed header is recirculated, so each arrives a little late.

use super::{trim_path, ModTarget};
use crate::ids::{Node, PacketId, PortId};
use crate::net::port::PortCtx;
use crate::net::Network;

impl Network {
    /// The traffic manager drops `pkt` for `d` and mirrors its header to `recirc`.
    pub(super) fn mirror(&mut self, d: PortId, recirc: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        self.cut(d, recirc, pkt, trim_path::MOD, ctx);
        self.recirculate(recirc, pkt, ctx);
    }

    /// A mirrored header is back in ingress.
    pub(super) fn mirrored_back(&mut self, recirc: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        let Node::Switch(s) = self.ports[recirc as usize].owner else {
            return self.drop_at(recirc, pkt, ctx);
        };
        let hw = self.trimming_hw.as_deref().expect("a hardware switch");
        let p = ctx.pkts.get_mut(pkt);
        if hw.settings.mod_target == ModTarget::Sender {
            p.reverse();
        }
        let d = self.switches[s as usize].route(p.dst, p.entropy, self.load_balancing);
        self.enqueue(d, pkt, ctx);
    }
}
