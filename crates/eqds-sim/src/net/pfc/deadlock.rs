//! PFC deadlock: a cycle of paused links.
//!
//! A device whose egress toward its neighbour is paused holds its packets; if that
//! neighbour is itself paused toward the next, and so on round a loop back to the
//! first, no queue on the loop can drain and none will ever resume: a cyclic buffer
//! dependency. The detector sees the paused links of a moment as a directed graph
//! (an edge from the device that may not send to the device that paused it) and
//! reports a cycle by its ports, so a user can see which links and which PAUSE
//! frames closed it.

use std::collections::BTreeMap;

/// A link whose sending end is paused at some priority: `port` is the sender's
/// port; `from` the device that may not send, `to` the one that paused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PausedLink {
    pub port: u32,
    pub from: u32,
    pub to: u32,
}

/// A cycle of paused links, if there is one: their ports in order round the loop,
/// starting from the lowest-numbered device on it. Deterministic for a given set of
/// links, whatever their order.
pub fn pause_cycle(links: &[PausedLink]) -> Option<Vec<u32>> {
    let mut out: BTreeMap<u32, Vec<PausedLink>> = BTreeMap::new();
    for &l in links {
        out.entry(l.from).or_default().push(l);
    }
    for v in out.values_mut() {
        v.sort();
    }
    // Iterative DFS with colours: 0 unseen, 1 on the current path, 2 done.
    let mut colour: BTreeMap<u32, u8> = BTreeMap::new();
    let starts: Vec<u32> = out.keys().copied().collect();
    for start in starts {
        if colour.get(&start).copied().unwrap_or(0) != 0 {
            continue;
        }
        // Stack of (device, next edge index); `path` holds the edges taken.
        let mut stack: Vec<(u32, usize)> = vec![(start, 0)];
        let mut path: Vec<PausedLink> = Vec::new();
        colour.insert(start, 1);
        while let Some(&mut (node, ref mut i)) = stack.last_mut() {
            let edges = out.get(&node).map_or(&[][..], |v| v.as_slice());
            if *i == edges.len() {
                colour.insert(node, 2);
                stack.pop();
                path.pop();
                continue;
            }
            let e = edges[*i];
            *i += 1;
            match colour.get(&e.to).copied().unwrap_or(0) {
                0 => {
                    colour.insert(e.to, 1);
                    path.push(e);
                    stack.push((e.to, 0));
                }
                1 => {
                    // Back to a device on the current path: the loop is the path from
                    // there, closed by this link.
                    path.push(e);
                    let first = path.iter().position(|l| l.from == e.to).unwrap_or(0);
                    let cycle = &path[first..];
                    let low = (0..cycle.len()).min_by_key(|&k| cycle[k].from).unwrap_or(0);
                    let mut ports: Vec<u32> = cycle[low..].iter().map(|l| l.port).collect();
                    ports.extend(cycle[..low].iter().map(|l| l.port));
                    return Some(ports);
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(port: u32, from: u32, to: u32) -> PausedLink {
        PausedLink { port, from, to }
    }

    #[test]
    fn a_chain_of_pauses_is_no_deadlock() {
        // T4 pauses the leaves, the leaves the spines, ...: a cascade, not a loop.
        let links = [
            link(1, 10, 20),
            link(2, 20, 30),
            link(3, 11, 20),
            link(4, 30, 40),
        ];
        assert_eq!(pause_cycle(&links), None);
        assert_eq!(pause_cycle(&[]), None);
    }

    #[test]
    fn a_loop_is_named_by_its_ports_from_the_lowest_device() {
        let links = [
            link(7, 3, 1),
            link(5, 1, 2),
            link(6, 2, 3),
            link(9, 4, 1), // leads into the loop, not part of it
        ];
        assert_eq!(pause_cycle(&links), Some(vec![5, 6, 7]));
        // Order of the input does not matter.
        let mut rev = links;
        rev.reverse();
        assert_eq!(pause_cycle(&rev), Some(vec![5, 6, 7]));
        // Two devices pausing each other.
        assert_eq!(
            pause_cycle(&[link(8, 2, 1), link(4, 1, 2)]),
            Some(vec![4, 8])
        );
    }
}
