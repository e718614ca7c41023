//! Per-sending-peer state of a receiving EQIF, in peer-id order.
//!
//! A sorted vector of ids beside a vector of values rather than a B-tree: a data
//! packet looks its peer up on every arrival, and a host mostly hears from one sender
//! at a time, so the entry found last is remembered and found without reading the
//! ids; and the first value sits at an address the host's struct holds, which a
//! caller can load ahead (`ReceivingEqif::hot_state`). In a B-tree it sat inside a
//! node of keys, reached only by reading the node. Peers come and go rarely (a
//! tunnel's first packet, a drop), so the shifts on insertion and removal cost little.
//! Iteration is in id order, as the B-tree's was: scans that release packets from
//! several peers at once stay deterministic and unchanged.

use crate::sender::PeerId;
use std::cell::Cell;

#[derive(Debug)]
pub(super) struct PeerMap<V> {
    ids: Vec<PeerId>,
    values: Vec<V>,
    /// The entry found last, and its position; forgotten when positions shift.
    last: Cell<Option<(PeerId, usize)>>,
}

impl<V> Default for PeerMap<V> {
    fn default() -> Self {
        PeerMap {
            ids: Vec::new(),
            values: Vec::new(),
            last: Cell::new(None),
        }
    }
}

impl<V> PeerMap<V> {
    /// Position of `id`, or where it would go.
    #[inline]
    fn find(&self, id: PeerId) -> Result<usize, usize> {
        if let Some((last, i)) = self.last.get() {
            if last == id {
                return Ok(i);
            }
        }
        let found = self.ids.binary_search(&id);
        if let Ok(i) = found {
            self.last.set(Some((id, i)));
        }
        found
    }

    pub(super) fn get(&self, id: PeerId) -> Option<&V> {
        self.find(id).ok().map(|i| &self.values[i])
    }

    pub(super) fn get_mut(&mut self, id: PeerId) -> Option<&mut V> {
        self.find(id).ok().map(|i| &mut self.values[i])
    }

    /// The value of `id`, made by `make` if there is none.
    pub(super) fn get_or_insert_with(&mut self, id: PeerId, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(id) {
            Ok(i) => i,
            Err(i) => {
                self.ids.insert(i, id);
                self.values.insert(i, make());
                self.last.set(Some((id, i)));
                i
            }
        };
        &mut self.values[i]
    }

    pub(super) fn remove(&mut self, id: PeerId) -> Option<V> {
        let i = self.find(id).ok()?;
        self.last.set(None);
        self.ids.remove(i);
        Some(self.values.remove(i))
    }

    /// The values, in id order.
    pub(super) fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.values.iter()
    }

    /// (id, value), in id order.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = (PeerId, &mut V)> + '_ {
        self.ids.iter().copied().zip(self.values.iter_mut())
    }

    /// Where the first value is (the only one, for a host that hears from one sender),
    /// for a caller to load ahead; never dereferenced here.
    pub(super) fn first_value_address(&self) -> Option<*const V> {
        (!self.values.is_empty()).then_some(self.values.as_ptr())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The map against a `BTreeMap` over insertions, lookups, updates and removals
    /// of a few dozen ids, with iteration order checked after each step.
    #[test]
    fn behaves_as_an_ordered_map() {
        let mut map = PeerMap::default();
        let mut model = BTreeMap::new();
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for step in 0..5_000u64 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let id = (rng % 40) as PeerId;
            match (rng >> 8) % 5 {
                0 | 1 => {
                    *map.get_or_insert_with(id, || 0) += step;
                    *model.entry(id).or_insert(0) += step;
                }
                2 => assert_eq!(map.get(id), model.get(&id)),
                3 => {
                    if let (Some(v), Some(m)) = (map.get_mut(id), model.get_mut(&id)) {
                        *v += 1;
                        *m += 1;
                    }
                }
                _ => assert_eq!(map.remove(id), model.remove(&id)),
            }
            let got: Vec<_> = map.iter_mut().map(|(id, v)| (id, *v)).collect();
            let want: Vec<_> = model.iter().map(|(&id, &v)| (id, v)).collect();
            assert_eq!(got, want, "step {step}");
            assert!(map.values().copied().eq(model.values().copied()));
        }
    }
}
