//! Lists of hosts in a workload (`sender_hosts`, `client_hosts`, `server_hosts`): a
//! TOML array of host ids, or for large workloads an inclusive range written as a
//! string, `"1-850"`.

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::ops::Deref;

/// The longest range a string may spell out (far beyond any topology's hosts; it
/// keeps a typo such as `"1-4000000000"` from allocating gigabytes before the
/// workload's own checks name it).
const MAX_RANGE: u32 = 10_000_000;

/// Host ids, in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostList(Vec<u32>);

impl Deref for HostList {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.0
    }
}

impl From<Vec<u32>> for HostList {
    fn from(hosts: Vec<u32>) -> Self {
        HostList(hosts)
    }
}

/// Parses `"FIRST-LAST"`, both ends included.
fn parse_range(s: &str) -> Result<Vec<u32>, String> {
    let what = |why: String| format!("'{s}' is not a host range ({why}): write \"FIRST-LAST\"");
    let (first, last) = s.split_once('-').ok_or_else(|| what("no '-'".into()))?;
    let id = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|_| what(format!("'{}' is not a host id", x.trim())))
    };
    let (first, last) = (id(first)?, id(last)?);
    if first > last {
        return Err(what("it runs backwards".into()));
    }
    if last - first >= MAX_RANGE {
        return Err(what(format!("more than {MAX_RANGE} hosts")));
    }
    Ok((first..=last).collect())
}

impl<'de> Deserialize<'de> for HostList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct HostsVisitor;
        impl<'de> Visitor<'de> for HostsVisitor {
            type Value = HostList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of host ids, or a range \"FIRST-LAST\"")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<HostList, A::Error> {
                let mut hosts = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(h) = seq.next_element::<u32>()? {
                    hosts.push(h);
                }
                Ok(HostList(hosts))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<HostList, E> {
                parse_range(s).map(HostList).map_err(E::custom)
            }
        }
        d.deserialize_any(HostsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct T {
        hosts: HostList,
    }

    fn parse(text: &str) -> Result<Vec<u32>, String> {
        toml::from_str::<T>(text)
            .map(|t| t.hosts.to_vec())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_list_or_an_inclusive_range() {
        assert_eq!(parse("hosts = [3, 1, 2]").unwrap(), vec![3, 1, 2]);
        assert_eq!(parse("hosts = \"1-4\"").unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(parse("hosts = \" 7 - 7 \"").unwrap(), vec![7]);
    }

    #[test]
    fn malformed_ranges_are_named() {
        for (text, says) in [
            ("hosts = \"1..4\"", "no '-'"),
            ("hosts = \"1-x\"", "'x' is not a host id"),
            ("hosts = \"-3\"", "'' is not a host id"),
            ("hosts = \"5-2\"", "runs backwards"),
            ("hosts = \"0-4000000000\"", "more than"),
            ("hosts = 5", "a list of host ids, or a range"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
