//! N hosts attached to one switch.

use crate::net::{LinkSpec, Network, NetworkBuilder};

pub fn build(mut b: NetworkBuilder, hosts: u32, link: LinkSpec) -> Network {
    let sw = b.switch(0, hosts, 1, 0, 1);
    for h in 0..hosts {
        b.link(h, b.down_port(sw, h), link, "host_up", "switch_down");
    }
    b.finish(hosts)
}
