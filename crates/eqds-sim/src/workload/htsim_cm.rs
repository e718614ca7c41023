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

use crate::flow::{FlowSpec, Protocol};
use crate::units::{Time, MAX_DURATION};
use std::path::Path;

pub fn load(path: &Path, n_hosts: u32, protocol: Protocol) -> Result<Vec<FlowSpec>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    parse(&text, n_hosts, protocol).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn parse(text: &str, n_hosts: u32, protocol: Protocol) -> Result<Vec<FlowSpec>, String> {
    let mut nodes: Option<u64> = None;
    let mut connections: Option<u64> = None;
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
        let count = || -> Result<u64, String> {
            let value = tokens.get(1).copied().unwrap_or("");
            whole(tokens[0], value).map_err(at)
        };
        match tokens[0] {
            "Nodes" => nodes = Some(count()?),
            "Connections" => connections = Some(count()?),
            "Triggers" | "Failures" => {
                if count()? != 0 {
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
        if n > u64::from(n_hosts) {
            return Err(format!(
                "the matrix has {n} nodes but the topology only {n_hosts} hosts"
            ));
        }
    }
    match connections {
        None => return Err("missing `Connections C` header".into()),
        Some(c) if c != flows.len() as u64 => {
            return Err(format!(
                "`Connections {c}` but {} connection lines",
                flows.len()
            ));
        }
        _ => {}
    }
    Ok(flows)
}

/// A whole number that fits in 64 bits, the value of `key`: sizes, ids and counts
/// are integers in htsim's format, and one beyond `u64` is a mistake, not a request
/// for the largest flow there is.
fn whole(key: &str, value: &str) -> Result<u64, String> {
    if value.is_empty() {
        return Err(format!("`{key}` needs a value"));
    }
    if !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "`{key}` needs a non-negative whole number, got `{value}`"
        ));
    }
    value
        .parse()
        .map_err(|_| format!("`{key}` {value} is too large (at most {})", u64::MAX))
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
    let mut seen: Vec<&str> = Vec::new();
    for kv in rest.chunks(2) {
        let (key, value) = (kv[0], kv[1]);
        if seen.contains(&key) {
            return Err(format!("`{key}` is given twice"));
        }
        seen.push(key);
        match key {
            "id" => {
                let id = whole(key, value)?;
                if id == 0 || !ids.insert(id) {
                    return Err(format!("id {id} is zero or used twice"));
                }
            }
            // Picoseconds, and htsim reads a fraction; it must name a time the
            // simulator can reach.
            "start" => {
                let ps = value
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| {
                        format!("`start` needs a non-negative number of picoseconds, got `{value}`")
                    })?
                    .round();
                if ps > MAX_DURATION as f64 {
                    return Err(format!(
                        "`start` {value} ps is later than the one day we support"
                    ));
                }
                start = Some(ps as Time);
            }
            // htsim runs a flow of size 0 for ever (its mains set a size only when it
            // is positive); here a flow that never ends has no `size`, so that a
            // stray 0 is not read as a flow that never ends.
            "size" => match whole(key, value)? {
                0 => {
                    return Err(
                        "`size 0`: a flow must carry at least 1 byte (leave `size` out \
                         for a flow that never ends)"
                            .into(),
                    )
                }
                u64::MAX => return Err(format!("`size` {value} is too large")),
                s => size = Some(s),
            },
            "prio" => {
                whole(key, value)?;
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

    /// Issue 24: `size 0` became a flow that never ends, a size beyond u64
    /// saturated, and a key given twice kept the last.
    #[test]
    fn rejects_zero_oversize_and_repeated_values() {
        let one = |flow: &str| parse(&format!("Connections 1\n{flow}\n"), 8, Protocol::Newreno);
        for (flow, expect) in [
            ("0->1 id 1 start 0 size 0", "`size 0`"),
            (
                "0->1 id 1 start 0 size 18446744073709551616",
                "`size` 18446744073709551616 is too large",
            ),
            (
                "0->1 id 1 start 0 size 18446744073709551615",
                "`size` 18446744073709551615 is too large",
            ),
            ("0->1 id 1 start 0 size 1.5", "whole number"),
            ("0->1 id 1 start 0 size 9 size 10", "`size` is given twice"),
            (
                "0->1 id 1 start 0 start 5 size 10",
                "`start` is given twice",
            ),
            ("0->1 id 1 id 2 start 0", "`id` is given twice"),
            ("0->1 id 99999999999999999999 start 0", "`id`"),
            ("0->1 id 1 start 1e30 size 10", "`start`"),
        ] {
            let err = one(flow).expect_err(flow);
            assert!(
                err.contains("line 2") && err.contains(expect),
                "{flow}: {err}"
            );
        }
        let err = parse("Nodes 4294967297\nConnections 0\n", 8, Protocol::Newreno).unwrap_err();
        assert!(err.contains("4294967297 nodes"), "{err}");
        // Leaving `size` out is how a flow that never ends is written.
        assert_eq!(one("0->1 id 1 start 0").unwrap()[0].size, None);
    }
}
