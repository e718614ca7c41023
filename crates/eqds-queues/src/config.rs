//! Reading a [`QueueSpec`] from TOML, as the simulator's scenarios and the switch's
//! configuration write it: `{ kind = "trimming", data_packets = 8 }`.
//!
//! Deserialised directly as an internally tagged enum, serde buffers the table and
//! forgets where a bad value sat, so "expected u32" could not say which key. A
//! `kind`-tagged table is therefore first rewritten into serde's external tagging,
//! `{ trimming = { data_packets = 8 } }` ([`retag_kind`], [`retag_queue`]); serde then
//! reports full paths such as `queue.trimming.data_packets`.

use crate::QueueSpec;
use toml::{Table, Value};

/// `{ kind = "x", rest.. }` becomes `{ x = { rest.. } }`. Anything else but a table
/// is left for serde to reject with its own message; a missing or non-string `kind`
/// is an error naming `path`.
pub fn retag_kind(v: &mut Value, path: &str) -> Result<(), String> {
    let Value::Table(t) = v else { return Ok(()) };
    let kind = match t.remove("kind") {
        Some(Value::String(k)) => k,
        Some(other) => return Err(format!("{path}.kind: expected a string, got `{other}`")),
        None => return Err(format!("{path}: missing `kind`")),
    };
    let rest: Table = std::mem::take(t);
    t.insert(kind, Value::Table(rest));
    Ok(())
}

/// Retags a queue table and the queues nested in it (strict priority's `classes`,
/// random loss's `queue`); `path` names it in errors.
pub fn retag_queue(q: &mut Value, path: &str) -> Result<(), String> {
    retag_kind(q, path)?;
    if let Value::Table(outer) = q {
        if let Some(Value::Table(inner)) = outer.get_mut("strict_priority") {
            if let Some(Value::Array(classes)) = inner.get_mut("classes") {
                for (i, c) in classes.iter_mut().enumerate() {
                    retag_queue(c, &format!("{path}.classes[{i}]"))?;
                }
            }
        }
        if let Some(Value::Table(inner)) = outer.get_mut("random_loss") {
            if let Some(q) = inner.get_mut("queue") {
                retag_queue(q, &format!("{path}.queue"))?;
            }
        }
    }
    Ok(())
}

impl QueueSpec {
    /// Reads and checks the queue table `value`, found at `path` of its file (e.g.
    /// `ports.eth1.queue`): every error names the key that is wrong, prefixed with
    /// `path`. The result is ready to [`build`](QueueSpec::build).
    pub fn from_toml(mut value: Value, path: &str) -> Result<QueueSpec, String> {
        retag_queue(&mut value, path)?;
        let spec: QueueSpec = serde_path_to_error::deserialize(value).map_err(|e| {
            let key = e.path().to_string();
            let inner = e.into_inner().to_string();
            // toml appends its own (pre-retag) key path; ours is more precise.
            let inner = inner
                .rsplit_once("\nin `")
                .map_or(inner.as_str(), |(m, _)| m);
            if key.is_empty() || key == "." {
                format!("{path}: {inner}")
            } else {
                format!("{path}.{key}: {inner}")
            }
        })?;
        spec.validate().map_err(|e| format!("{path}: {e}"))?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<QueueSpec, String> {
        let t: Table = text.parse().unwrap();
        QueueSpec::from_toml(t["queue"].clone(), "port.queue")
    }

    #[test]
    fn reads_nested_kind_tagged_queues() {
        let q = read(
            r#"queue = { kind = "strict_priority", classes = [
                { kind = "trimming", data_packets = 8 },
                { kind = "random_loss", rate = 0.01, queue = { kind = "drop_tail", limit_packets = 4 } },
            ] }"#,
        )
        .unwrap();
        let QueueSpec::StrictPriority { classes } = q else {
            panic!("{q:?}")
        };
        assert!(matches!(
            classes[0],
            QueueSpec::Trimming {
                data_packets: 8,
                ..
            }
        ));
        assert!(matches!(classes[1], QueueSpec::RandomLoss { .. }));
    }

    #[test]
    fn errors_name_the_key() {
        let e = |t| read(t).unwrap_err();
        assert_eq!(
            e("queue = { data_packets = 8 }"),
            "port.queue: missing `kind`"
        );
        assert!(
            e(r#"queue = { kind = "trimming", data_packets = "x" }"#)
                .starts_with("port.queue.trimming.data_packets: "),
            "{}",
            e(r#"queue = { kind = "trimming", data_packets = "x" }"#)
        );
        assert!(e(r#"queue = { kind = "trimming", bogus = 1 }"#).contains("bogus"));
        assert_eq!(
            e(r#"queue = { kind = "trimming", data_packets = 0 }"#),
            "port.queue: data_packets: a queue limit of 0 would drop every packet"
        );
        assert!(
            e(r#"queue = { kind = "strict_priority", classes = [{ limit_packets = 1 }] }"#)
                .contains("port.queue.classes[0]: missing `kind`")
        );
    }
}
