//! Import of htsim connection-matrix files, so the same traffic can run in both
//! simulators.
//!
//! Grammar (as htsim's loader reads it): a header of `Nodes N`, `Connections C`,
//! `Triggers T`, `Failures F` lines (any order, `#` comments allowed), then one line
//! per flow: `SRC->DST` followed by key/value pairs `id K`, `start T` (absolute
//! picoseconds), `size BYTES`, `prio P`. A flow without `size` never ends. Trigger
//! keys and `trigger`/`failure` lines are not supported yet and are rejected with the
//! line number; so are unknown keys, hosts beyond the topology, and a count that does
//! not match its header.

use crate::flow::FlowSpec;
use crate::scenario::Protocol;
use crate::units::Time;
use std::path::Path;

pub fn load(path: &Path, n_hosts: u32, protocol: Protocol) -> Result<Vec<FlowSpec>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    parse(&text, n_hosts, protocol).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn parse(text: &str, n_hosts: u32, protocol: Protocol) -> Result<Vec<FlowSpec>, String> {
    let mut nodes: Option<u32> = None;
    let mut connections: Option<usize> = None;
    let mut flows = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let at = |m: String| format!("line {lineno}: {m}");
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let count = |v: Option<&&str>| -> Result<u64, String> {
            v.and_then(|s| s.parse().ok())
                .ok_or_else(|| at(format!("`{}` needs a non-negative number", tokens[0])))
        };
        match tokens[0] {
            "Nodes" => nodes = Some(count(tokens.get(1))? as u32),
            "Connections" => connections = Some(count(tokens.get(1))? as usize),
            "Triggers" | "Failures" => {
                if count(tokens.get(1))? != 0 {
                    return Err(at(format!(
                        "{} are not supported yet",
                        tokens[0].to_lowercase()
                    )));
                }
            }
            "trigger" | "failure" => {
                return Err(at(format!("`{}` lines are not supported yet", tokens[0])))
            }
            pair if pair.contains("->") => {
                flows
                    .push(parse_flow(pair, &tokens[1..], n_hosts, protocol, &mut ids).map_err(at)?);
            }
            other => {
                return Err(at(format!(
                    "unexpected `{other}` (expected a header keyword or SRC->DST)"
                )))
            }
        }
    }
    if let Some(n) = nodes {
        if n > n_hosts {
            return Err(format!(
                "the matrix has {n} nodes but the topology only {n_hosts} hosts"
            ));
        }
    }
    match connections {
        None => return Err("missing `Connections C` header".into()),
        Some(c) if c != flows.len() => {
            return Err(format!(
                "`Connections {c}` but {} connection lines",
                flows.len()
            ));
        }
        _ => {}
    }
    Ok(flows)
}

fn parse_flow(
    pair: &str,
    rest: &[&str],
    n_hosts: u32,
    protocol: Protocol,
    ids: &mut std::collections::HashSet<u64>,
) -> Result<FlowSpec, String> {
    let (src, dst) = pair.split_once("->").expect("caller checked");
    let host = |s: &str| -> Result<u32, String> {
        let h: u32 = s
            .parse()
            .map_err(|_| format!("`{s}` is not a host number"))?;
        if h >= n_hosts {
            return Err(format!(
                "host {h} does not exist (the topology has {n_hosts} hosts)"
            ));
        }
        Ok(h)
    };
    let (src, dst) = (host(src)?, host(dst)?);
    if src == dst {
        return Err(format!("flow from host {src} to itself"));
    }
    let mut start: Option<Time> = None;
    let mut size: Option<u64> = None;
    if rest.len() % 2 != 0 {
        return Err(format!("key `{}` has no value", rest[rest.len() - 1]));
    }
    for kv in rest.chunks(2) {
        let (key, value) = (kv[0], kv[1]);
        let number = || -> Result<f64, String> {
            value
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("`{key}` needs a non-negative number, got `{value}`"))
        };
        match key {
            "id" => {
                let id = number()? as u64;
                if id == 0 || !ids.insert(id) {
                    return Err(format!("id {id} is zero or used twice"));
                }
            }
            "start" => start = Some(number()?.round() as Time),
            "size" => size = Some(number()? as u64).filter(|&s| s > 0),
            "prio" => {
                number()?;
            }
            "trigger" | "send_done_trigger" | "recv_done_trigger" => {
                return Err(format!("`{key}` is not supported yet"));
            }
            other => return Err(format!("unknown key `{other}`")),
        }
    }
    let start = start.ok_or("the flow has no `start`")?;
    Ok(FlowSpec {
        src,
        dst,
        size,
        start,
        protocol,
        origin: 0,
        legacy: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_htsim_matrices() {
        let text = "Nodes 4\nConnections 2\n# comment\n0->1 id 1 start 0 size 90000\n2->3 id 2 start 5000000 size 100 prio 3\n";
        let flows = parse(text, 8, Protocol::Newreno).unwrap();
        assert_eq!(flows.len(), 2);
        assert_eq!(
            (flows[1].src, flows[1].dst, flows[1].start, flows[1].size),
            (2, 3, 5_000_000, Some(100))
        );
    }

    #[test]
    fn rejects_what_it_cannot_honour() {
        let bad = [
            "Nodes 4\nConnections 2\n0->1 id 1 start 0 size 9\n",
            "Connections 1\n0->9 id 1 start 0 size 9\n",
            "Connections 1\n0->1 id 1 size 9\n",
            "Connections 1\n0->1 id 1 start 0 trigger 1\n",
            "Connections 1\nTriggers 1\n0->1 id 1 start 0\ntrigger id 1 oneshot\n",
            "Connections 1\n0->1 id 1 start 0 bogus 3\n",
            "Connections 1\n0->1 id 1 start\n",
            "Connections 1\n1->1 id 1 start 0\n",
            "Connections 2\n0->1 id 1 start 0\n1->2 id 1 start 0\n",
            "0->1 id 1 start 0\n",
            "Nodes 99\nConnections 1\n0->1 id 1 start 0\n",
        ];
        for text in bad {
            assert!(
                parse(text, 8, Protocol::Newreno).is_err(),
                "accepted: {text}"
            );
        }
    }
}
