//! `--set key.path=value`: edits a scenario's TOML table before it is parsed.
//!
//! The value is read as a TOML value (`42`, `true`, `"text"`, `[1, 2]`, `{ a = 1 }`);
//! anything that does not parse as one is taken as a string, so `--set
//! topology.link.rate=25Gbps` works without quotes. Numeric path segments index
//! arrays (`workload.0.size`).

use toml::{Table, Value};

pub fn apply_override(table: &mut Table, assignment: &str) -> Result<(), String> {
    let (path, raw) = assignment
        .split_once('=')
        .ok_or_else(|| "expected KEY=VALUE, e.g. topology.k=8".to_string())?;
    let keys: Vec<&str> = path.trim().split('.').collect();
    if keys.iter().any(|k| k.is_empty()) {
        return Err(format!("`{path}` is not a key path"));
    }
    let value = parse_value(raw.trim());
    let mut root = Value::Table(std::mem::take(table));
    let result = set_path(&mut root, &keys, 0, value);
    if let Value::Table(t) = root {
        *table = t;
    }
    result
}

/// Sets `keys[depth..]` below `node`, creating tables on the way.
fn set_path(node: &mut Value, keys: &[&str], depth: usize, value: Value) -> Result<(), String> {
    let key = keys[depth];
    let last = depth + 1 == keys.len();
    let here = || keys[..depth].join(".");
    let child = match node {
        Value::Table(t) => {
            if last {
                t.insert(key.to_string(), value);
                return Ok(());
            }
            t.entry(key.to_string())
                .or_insert_with(|| Value::Table(toml::Table::new()))
        }
        Value::Array(items) => {
            let len = items.len();
            let i: usize = key.parse().map_err(|_| {
                format!(
                    "`{}` is an array of {len} entries; index it with a number, not `{key}`",
                    here()
                )
            })?;
            let item = items
                .get_mut(i)
                .ok_or_else(|| format!("`{}` has {len} entries, no entry {i}", here()))?;
            if last {
                *item = value;
                return Ok(());
            }
            item
        }
        _ => return Err(format!("`{}` is not a table", here())),
    };
    set_path(child, keys, depth + 1, value)
}

fn parse_value(raw: &str) -> Value {
    // Parse as the right-hand side of a one-line document.
    format!("v = {raw}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_nested_values() {
        let mut t: Table = "[topology]\nk = 4\n".parse().unwrap();
        apply_override(&mut t, "topology.k=8").unwrap();
        apply_override(&mut t, "topology.link.rate=25Gbps").unwrap();
        apply_override(&mut t, "seed=7").unwrap();
        let mut w: Table = "[[workload]]\nkind = \"a\"\n[[workload]]\nkind = \"b\"\n"
            .parse()
            .unwrap();
        apply_override(&mut w, "workload.1.size=10").unwrap();
        assert_eq!(w["workload"][1]["size"].as_integer(), Some(10));
        assert!(apply_override(&mut w, "workload.5.size=10").is_err());
        assert!(apply_override(&mut w, "workload.x=10").is_err());
        assert_eq!(t["topology"]["k"].as_integer(), Some(8));
        assert_eq!(t["topology"]["link"]["rate"].as_str(), Some("25Gbps"));
        assert_eq!(t["seed"].as_integer(), Some(7));
        assert!(apply_override(&mut t, "nonsense").is_err());
        assert!(apply_override(&mut t, "seed.x=1").is_err());
        assert!(apply_override(&mut t, "a..b=1").is_err());
    }
}
