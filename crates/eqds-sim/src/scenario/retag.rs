//! Rewrites `kind`-tagged tables into the shape serde reads without buffering.
//!
//! Scenario files say `[topology] kind = "fat_tree"  k = 16`. Deserialised directly as
//! an internally tagged enum, serde buffers the table and forgets where a bad value
//! sat, so "expected u32" could not say which field. We turn each such table into
//! `{ fat_tree = { k = 16 } }` first; serde then reports full paths such as
//! `topology.fat_tree.k`. A single `[workload]` table also becomes a one-entry list.

use super::SHARED_KEYS;
use eqds_proto::config::EqdsTable;
use eqds_queues::config::{retag_kind as retag, retag_queue};
use toml::{Table, Value};

/// Retags every `kind`-tagged table of a scenario in place.
pub fn retag_scenario(doc: &mut Table) -> Result<(), String> {
    if let Some(t) = doc.get_mut("topology") {
        retag(t, "topology")?;
    }
    for (section, key) in [
        ("switch", "queue"),
        ("switch", "edge_queue"),
        ("host", "queue"),
    ] {
        if let Some(Value::Table(s)) = doc.get_mut(section) {
            if let Some(q) = s.get_mut(key) {
                retag_queue(q, &format!("{section}.{key}"))?;
            }
        }
    }
    if let Some(Value::Table(sw)) = doc.get_mut("switch") {
        if let Some(Value::Table(tiers)) = sw.get_mut("tier_queue") {
            for (tier, q) in tiers.iter_mut() {
                retag_queue(q, &format!("switch.tier_queue.{tier}"))?;
            }
        }
    }
    if let Some(Value::Table(e)) = doc.get_mut("eqds") {
        split_shared_eqds_keys(e)?;
    }
    if let Some(w) = doc.get_mut("workload") {
        if let Value::Table(_) = w {
            *w = Value::Array(vec![w.clone()]);
        }
        if let Value::Array(items) = w {
            for (i, item) in items.iter_mut().enumerate() {
                retag(item, &format!("workload[{i}]"))?;
            }
        }
    }
    Ok(())
}

/// Moves the keys of `[eqds]` that the daemon's configuration has too into a table
/// of their own under [`SHARED_KEYS`], where `EqdsSpec` reads them as
/// `eqds_proto`'s `EqdsTable`: both tables then refuse unknown keys, and the loader
/// drops the extra level from the paths in its errors.
fn split_shared_eqds_keys(eqds: &mut Table) -> Result<(), String> {
    if eqds.contains_key(SHARED_KEYS) {
        return Err(format!("eqds.{SHARED_KEYS}: unknown key"));
    }
    let shared: Table = EqdsTable::KEYS
        .iter()
        .filter_map(|&k| eqds.remove(k).map(|v| (k.to_string(), v)))
        .collect();
    eqds.insert(SHARED_KEYS.into(), Value::Table(shared));
    Ok(())
}

// Queue tables, and the `kind` convention itself, are `eqds_queues::config`'s: the
// switch reads its queues the same way.
