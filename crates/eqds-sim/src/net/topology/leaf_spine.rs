//! 2-tier leaf-spine: each leaf (ToR) has its hosts and one link to every spine.

use crate::net::{LinkSpec, Network, NetworkBuilder};

/// `host_links[l]` is the link of every host under leaf `l`.
pub fn build(
    mut b: NetworkBuilder,
    spines: u32,
    hosts_per_leaf: u32,
    host_links: &[LinkSpec],
    leaf_spine_link: LinkSpec,
) -> Network {
    let leaves = host_links.len() as u32;
    let leaf_ids: Vec<_> = (0..leaves)
        .map(|l| b.switch(l * hosts_per_leaf, hosts_per_leaf, 1, spines, 1))
        .collect();
    let spine_ids: Vec<_> = (0..spines)
        .map(|_| b.switch(0, leaves, hosts_per_leaf, 0, 1))
        .collect();
    for (l, &leaf) in leaf_ids.iter().enumerate() {
        for h in 0..hosts_per_leaf {
            let host = l as u32 * hosts_per_leaf + h;
            b.link(
                host,
                b.down_port(leaf, h),
                host_links[l],
                "host_up",
                "leaf_down",
            );
        }
        for (s, &spine) in spine_ids.iter().enumerate() {
            b.link(
                b.up_port(leaf, s as u32),
                b.down_port(spine, l as u32),
                leaf_spine_link,
                "leaf_up",
                "spine_down",
            );
        }
    }
    b.finish(hosts_per_leaf)
}
