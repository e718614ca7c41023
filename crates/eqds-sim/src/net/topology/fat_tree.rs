//! The 3-tier k-ary fat tree (Al-Fares et al., SIGCOMM 2008).
//!
//! Pod `p` has ToRs `p*k/2 ..` and aggregation switches `j = 0..k/2`; aggregation
//! switch `j` of every pod connects to cores `j*k/2 .. (j+1)*k/2`. A ToR with more than
//! k/2 hosts is oversubscribed. With spraying, a path id's lowest base-(k/2) digit picks
//! the ToR uplink and the next digit the aggregation uplink: (k/2)^2 distinct paths.

use crate::net::{LinkSpec, Network, NetworkBuilder};

pub struct Links {
    pub host: LinkSpec,
    pub tor_agg: LinkSpec,
    pub agg_core: LinkSpec,
}

pub fn build(mut b: NetworkBuilder, k: u32, hosts_per_tor: u32, links: Links) -> Network {
    let half = k / 2;
    let hosts_per_pod = half * hosts_per_tor;
    let mut tors = Vec::with_capacity((k * half) as usize);
    let mut aggs = Vec::with_capacity((k * half) as usize);
    for pod in 0..k {
        for t in 0..half {
            let lo = pod * hosts_per_pod + t * hosts_per_tor;
            tors.push(b.switch(lo, hosts_per_tor, 1, half, 1));
        }
        for _ in 0..half {
            aggs.push(b.switch(pod * hosts_per_pod, half, hosts_per_tor, half, half));
        }
    }
    let cores: Vec<_> = (0..half * half)
        .map(|_| b.switch(0, k, hosts_per_pod, 0, 1))
        .collect();

    for (t, &tor) in tors.iter().enumerate() {
        for h in 0..hosts_per_tor {
            let host = t as u32 * hosts_per_tor + h;
            b.link(host, b.down_port(tor, h), links.host, "host_up", "tor_down");
        }
    }
    for pod in 0..k {
        for t in 0..half {
            let tor = tors[(pod * half + t) as usize];
            for j in 0..half {
                let agg = aggs[(pod * half + j) as usize];
                b.link(
                    b.up_port(tor, j),
                    b.down_port(agg, t),
                    links.tor_agg,
                    "tor_up",
                    "agg_down",
                );
            }
        }
        for j in 0..half {
            let agg = aggs[(pod * half + j) as usize];
            for c in 0..half {
                let core = cores[(j * half + c) as usize];
                b.link(
                    b.up_port(agg, c),
                    b.down_port(core, pod),
                    links.agg_core,
                    "agg_up",
                    "core_down",
                );
            }
        }
    }
    b.finish(hosts_per_tor)
}
