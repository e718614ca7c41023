//! Two switches joined by a bottleneck link; hosts `0..left` on the first,
//! `left..left+right` on the second.

use crate::net::{LinkSpec, Network, NetworkBuilder};

pub fn build(
    mut b: NetworkBuilder,
    left: u32,
    right: u32,
    link: LinkSpec,
    bottleneck: LinkSpec,
) -> Network {
    let a = b.switch(0, left, 1, 1, 1);
    let z = b.switch(left, right, 1, 1, 1);
    for h in 0..left {
        b.link(h, b.down_port(a, h), link, "host_up", "switch_down");
    }
    for h in 0..right {
        b.link(left + h, b.down_port(z, h), link, "host_up", "switch_down");
    }
    b.link(
        b.up_port(a, 0),
        b.up_port(z, 0),
        bottleneck,
        "bottleneck_lr",
        "bottleneck_rl",
    );
    b.finish(left.max(right))
}
