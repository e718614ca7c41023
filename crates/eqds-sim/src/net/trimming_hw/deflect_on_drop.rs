//! Deflect-on-drop (§3): a data packet the traffic manager would drop goes, whole, to
//! the DoD (recirculation) port of the pipeline it entered on (§6.3); after
//! recirculation it is cut to its header, which joins the header queue of the port it
//! was bound for. Leaving the DoD queue is what notifies the pipelines (`hw_departed`,
//! the full Tofino model).

use super::trim_path;
use crate::ids::{Node, PacketId, PortId};
use crate::net::port::PortCtx;
use crate::net::Network;

impl Network {
    /// The traffic manager could not hold `pkt` for `d`: it goes whole to the DoD
    /// port `recirc`. A full DoD queue loses it (counted there: the only loss).
    pub(super) fn deflect(&mut self, d: PortId, recirc: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        let hw = self.trimming_hw.as_deref_mut().expect("a hardware switch");
        hw.port_stats[d as usize].deflections += 1;
        hw.pipe_stats[(recirc - hw.first_recirc) as usize].deflections += 1;
        self.recirculate(recirc, pkt, ctx);
    }

    /// A deflected packet is back from the DoD port: its header goes to the header
    /// queue of the port it is bound for (the paper leaves which copy carries it
    /// open, Q9: here the recirculated packet itself, cut down).
    pub(super) fn deflected_back(&mut self, recirc: PortId, pkt: PacketId, ctx: &mut PortCtx) {
        let Node::Switch(s) = self.ports[recirc as usize].owner else {
            return self.drop_at(recirc, pkt, ctx);
        };
        let p = ctx.pkts.get(pkt);
        let d = self.switches[s as usize].route(p.dst, p.entropy, self.load_balancing);
        self.cut(d, recirc, pkt, trim_path::DOD, ctx);
        self.enqueue(d, pkt, ctx);
    }
}
