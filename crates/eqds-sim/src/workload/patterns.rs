//! Host pairings: random permutations and random subsets.

use crate::engine::SimRng;
use crate::ids::HostId;
use crate::net::Network;
use rand::seq::SliceRandom;
use rand::Rng;

/// A random permutation with no host sending to itself (and, if asked, none to a host
/// under its own ToR). Returns `dst[src]`.
pub fn permutation(
    net: &Network,
    rng: &mut SimRng,
    exclude_same_rack: bool,
) -> Result<Vec<HostId>, String> {
    let n = net.n_hosts;
    let bad = |s: u32, d: u32| s == d || (exclude_same_rack && net.rack_of(s) == net.rack_of(d));
    if exclude_same_rack && net.rack_of(0) == net.rack_of(n - 1) {
        return Err("exclude_same_rack: every host is in the same rack".into());
    }
    let mut dst: Vec<HostId> = (0..n).collect();
    dst.shuffle(rng);
    // Repair conflicts by swapping with random partners; each swap must leave both
    // positions valid. Random swaps converge quickly for any topology with two racks.
    for s in 0..n {
        let mut tries = 0u64;
        while bad(s, dst[s as usize]) {
            let o = rng.random_range(0..n);
            let (ds, dofs) = (dst[s as usize], dst[o as usize]);
            if !bad(s, dofs) && !bad(o, ds) {
                dst.swap(s as usize, o as usize);
            }
            tries += 1;
            if tries > 1000 * n as u64 {
                return Err("could not find a permutation that meets the constraints".into());
            }
        }
    }
    Ok(dst)
}

/// `k` distinct hosts other than `except`, in random order.
pub fn choose_others(rng: &mut SimRng, n: u32, except: HostId, k: u32) -> Vec<HostId> {
    let mut others: Vec<HostId> = (0..n).filter(|&h| h != except).collect();
    others.shuffle(rng);
    others.truncate(k as usize);
    others
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::QueueSpec;
    use crate::net::switch::LoadBalancing;
    use crate::net::topology::{LinkToml, TopologySpec};
    use crate::net::NetworkBuilder;
    use crate::units::value::{Duration, Rate};
    use rand::SeedableRng;

    #[test]
    fn permutations_are_derangements() {
        // A k = 4 fat tree: 16 hosts, two under each ToR.
        let link = LinkToml {
            rate: Rate(10_000_000_000),
            latency: Duration(crate::units::US),
        };
        let topology = TopologySpec::FatTree {
            k: 4,
            hosts_per_tor: None,
            link,
            host_link: None,
            tor_agg_link: None,
            agg_core_link: None,
        };
        let queue = QueueSpec::DropTail {
            limit_packets: None,
            limit_bytes: None,
        };
        let net = topology.build(|n| {
            NetworkBuilder::new(
                n,
                queue.clone(),
                queue,
                0,
                LoadBalancing::Ecmp,
                Box::new(|| 0),
            )
        });
        for seed in 0..50 {
            let mut rng = SimRng::seed_from_u64(seed);
            for exclude in [false, true] {
                let dst = permutation(&net, &mut rng, exclude).unwrap();
                let mut seen = vec![false; dst.len()];
                for (s, &d) in dst.iter().enumerate() {
                    assert_ne!(s as u32, d);
                    if exclude {
                        assert_ne!(net.rack_of(s as u32), net.rack_of(d));
                    }
                    assert!(!seen[d as usize]);
                    seen[d as usize] = true;
                }
            }
        }
    }
}
