//! AsterixDB's Eager strategy (Alsubaiee et al. 2014): an update or delete removes the old entry
//! physically if it is in the memory R-tree and records a deleted key in any case; the deleted keys
//! are flushed as an antimatter B+-tree beside each disk R-tree, shadow older components at query
//! time, and annihilate their targets when a merge brings both together.

use super::maintenance::{Cleanup, Maintenance, MaintenanceStats, MergeFilter, Source};
use super::stats::CleaningCounts;
use crate::btree::BTreeComponent;
use crate::cache::BufferCache;
use crate::geom::Point;
use crate::lsm::LsmBTree;
use crate::rtree::{MemRTree, SpatialEntry};
use crate::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};

/// Eager's state: the memory component's deleted keys and, optionally, a primary index that gives
/// the old location of an object instead of the stream.
pub(crate) struct Eager {
    /// The in-memory deleted-key B+-tree, keyed like AsterixDB's by the whole deleted tuple
    /// (oid, x bits, y bits): every update and delete adds one key, so it grows with the stream.
    memory_deleted: BTreeSet<(u64, u64, u64)>,
    /// Deleted tuples per B+-tree leaf page, to size the in-memory deleted-key tree in pages.
    deleted_leaf_capacity: usize,
    /// oid -> location, when the old location is looked up (timed) rather than taken from the
    /// stream, as the paper did when it excluded that lookup.
    primary_index: Option<LsmBTree<Point>>,
    cleaned: CleaningCounts,
}

impl Eager {
    pub fn new(page_size: usize, primary_index: Option<LsmBTree<Point>>) -> Self {
        Eager {
            memory_deleted: BTreeSet::new(),
            // a deleted tuple is an oid plus a point, 24 bytes, as a B+-tree entry keyed by oid with a Point
            deleted_leaf_capacity: BTreeComponent::<Point>::leaf_capacity(page_size),
            primary_index,
            cleaned: CleaningCounts::default(),
        }
    }

    /// The first half of an update or delete, as AsterixDB's LSM R-tree deletes the old entry at
    /// `old`: remove it from the memory R-tree if it is there, and insert the deleted tuple into the
    /// memory component's deleted-key B+-tree in any case (it shadows the tuple in older
    /// components).
    fn retire_old(&mut self, memory: &mut MemRTree, oid: u64, old: Option<Point>) {
        if let Some(old) = old {
            if memory.remove(old, oid).is_some() {
                self.cleaned.memory_deletes += 1;
            }
            self.memory_deleted
                .insert((oid, old.x.to_bits(), old.y.to_bits()));
        }
    }

    /// Records `new` (or the deletion) in the primary index, if there is one.
    fn record_primary(&mut self, oid: u64, new: Option<Point>) -> Result<()> {
        match (&mut self.primary_index, new) {
            (Some(p), Some(to)) => p.upsert(oid, to),
            (Some(p), None) => p.delete(oid),
            (None, _) => Ok(()),
        }
    }
}

impl Maintenance for Eager {
    fn insert(&mut self, memory: &mut MemRTree, e: SpatialEntry) -> Result<()> {
        memory.insert(e);
        if let Some(p) = &mut self.primary_index {
            p.upsert(e.oid, e.point)?;
        }
        Ok(())
    }

    /// The old location from the primary index (a lookup that may fail before anything changed),
    /// or else from the stream.
    fn locate(&mut self, oid: u64, from: Option<Point>) -> Result<Option<Point>> {
        match &mut self.primary_index {
            Some(p) => p.get(oid),
            None => Ok(Some(from.ok_or_else(|| {
                Error::Config(format!(
                    "Eager needs the old location of object {oid} to update or delete it"
                ))
            })?)),
        }
    }

    /// `old` as [`Self::locate`] found it; the primary index then records the new location (its
    /// flush may fail after the write is applied).
    fn update(&mut self, memory: &mut MemRTree, old: Option<Point>, e: SpatialEntry) -> Result<()> {
        self.retire_old(memory, e.oid, old);
        memory.insert(e);
        self.record_primary(e.oid, Some(e.point))
    }

    fn delete(&mut self, memory: &mut MemRTree, oid: u64, old: Option<Point>, _ts: u64) -> Result<()> {
        self.retire_old(memory, oid, old);
        self.record_primary(oid, None)
    }

    fn memory_antimatter_pages(&self) -> u64 {
        self.memory_deleted.len().div_ceil(self.deleted_leaf_capacity) as u64
    }

    fn has_memory_antimatter(&self) -> bool {
        !self.memory_deleted.is_empty()
    }

    /// On disk one key per object suffices: an Eager update or delete kills every older version of
    /// the object, whatever its location (a deviation from AsterixDB's per-tuple keys that only
    /// makes the disk deleted-key trees smaller).
    fn memory_antimatter(&self) -> Vec<u64> {
        let mut keys: Vec<u64> = self.memory_deleted.iter().map(|&(oid, _, _)| oid).collect();
        keys.dedup();
        keys
    }

    fn flushed(&mut self, cleanup: Cleanup) {
        self.memory_deleted.clear();
        self.commit(cleanup);
    }

    fn commit(&mut self, cleanup: Cleanup) {
        self.cleaned.add(&cleanup.cleaned);
    }

    fn flush_key_indexes(&mut self) -> Result<()> {
        match &mut self.primary_index {
            Some(k) => k.flush(),
            None => Ok(()),
        }
    }

    fn merge_filter<'a>(
        &'a mut self,
        antimatter: Vec<Vec<u64>>,
        includes_oldest: bool,
    ) -> Box<dyn MergeFilter + 'a> {
        Box::new(Annihilation {
            antimatter,
            includes_oldest,
            input: 0,
            current: Vec::new(),
            shadow: BTreeMap::new(),
            consumed: BTreeSet::new(),
            annihilated: 0,
        })
    }

    /// A memory entry is fresh (the memory R-tree lost the old one on update); a disk entry is fresh
    /// unless a deleted key of memory or of a newer component names its object.
    fn is_fresh(
        &self,
        cache: &BufferCache,
        source: Source<'_>,
        e: &SpatialEntry,
        lookups: &mut u64,
    ) -> Result<bool> {
        let Source::Disk { newer } = source else {
            return Ok(true);
        };
        *lookups += 1;
        if self
            .memory_deleted
            .range((e.oid, 0, 0)..=(e.oid, u64::MAX, u64::MAX))
            .next()
            .is_some()
        {
            return Ok(false);
        }
        for c in newer.iter() {
            if let Some(d) = &c.antimatter {
                *lookups += 1;
                if d.get(cache, e.oid)?.is_some() {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn stats(&self) -> MaintenanceStats {
        MaintenanceStats {
            key_index: self.primary_index.as_ref().map(|k| (k.stats(), k.lookups())),
            cleaned: self.cleaned,
            ..MaintenanceStats::default()
        }
    }
}

/// The object's nearest touch in a newer input of the merge: its input and whether that input
/// deletes the object (a deleted key applies before the input's own entries).
#[derive(Clone, Copy)]
struct Touch {
    input: usize,
    deletes: bool,
}

/// Eager's merge filter. Replaying the merged components from the oldest, a deleted key removes
/// the live entry of its object from older inputs (annihilation, counted once per key) or else is
/// kept for older components; a newer entry of an object replaces an older one. Seen newest first,
/// as the filter sees them, an entry survives iff no newer input touches (deletes or holds) its
/// object, and it is annihilated iff the nearest newer input that touches it deletes it. Unless the
/// merge includes the oldest component, deleted keys that annihilated nothing are kept.
struct Annihilation {
    /// Per input, newest first: the oids it deletes, ascending.
    antimatter: Vec<Vec<u64>>,
    includes_oldest: bool,
    /// The input whose entries are arriving; every newer input is folded into `shadow`.
    input: usize,
    /// Objects of the current input's entries seen so far (folded in when the input ends).
    current: Vec<u64>,
    /// Each object's nearest touch among the inputs folded so far.
    shadow: BTreeMap<u64, Touch>,
    /// Deleted keys (input, oid) that annihilated an entry.
    consumed: BTreeSet<(usize, u64)>,
    annihilated: u64,
}

impl Annihilation {
    /// Folds every input before `input` into the shadow: its entries' objects, then its deleted
    /// keys (a deletion decides the touch's kind: it applies before the input's own entries).
    fn advance_to(&mut self, input: usize) {
        while self.input < input {
            let done = self.input;
            for oid in std::mem::take(&mut self.current) {
                self.shadow.insert(
                    oid,
                    Touch {
                        input: done,
                        deletes: false,
                    },
                );
            }
            for &oid in &self.antimatter[done] {
                self.shadow.insert(
                    oid,
                    Touch {
                        input: done,
                        deletes: true,
                    },
                );
            }
            self.input += 1;
        }
    }
}

impl MergeFilter for Annihilation {
    fn keep(&mut self, input: usize, e: &SpatialEntry) -> Result<bool> {
        self.advance_to(input);
        self.current.push(e.oid);
        match self.shadow.get(&e.oid) {
            None => Ok(true),
            Some(t) => {
                if t.deletes && self.consumed.insert((t.input, e.oid)) {
                    self.annihilated += 1;
                }
                Ok(false)
            }
        }
    }

    fn finish(self: Box<Self>) -> (Vec<u64>, Cleanup) {
        let cleanup = Cleanup {
            releases: Vec::new(),
            cleaned: CleaningCounts {
                annihilated: self.annihilated,
                ..CleaningCounts::default()
            },
        };
        if self.includes_oldest {
            return (Vec::new(), cleanup);
        }
        let mut kept = BTreeSet::new();
        for (input, oids) in self.antimatter.iter().enumerate() {
            for &oid in oids {
                if !self.consumed.contains(&(input, oid)) {
                    kept.insert(oid);
                }
            }
        }
        (kept.into_iter().collect(), cleanup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One merge input, newest first: its deleted keys (ascending) and its entries' oids (at most one
    /// entry per object, as every Eager component holds).
    type Input = (Vec<u64>, Vec<u64>);

    /// The merge as a replay from the oldest input: deleted keys remove the live entry of their
    /// object (annihilation) or are kept; entries replace older ones. Returns the surviving
    /// (input, oid) pairs, the annihilation count and the kept deleted keys.
    fn replay(inputs: &[Input], includes_oldest: bool) -> (Vec<(usize, u64)>, u64, Vec<u64>) {
        let mut live: BTreeMap<u64, usize> = BTreeMap::new();
        let mut kept = BTreeSet::new();
        let mut annihilated = 0;
        for (i, (deleted, entries)) in inputs.iter().enumerate().rev() {
            for oid in deleted {
                if live.remove(oid).is_some() {
                    annihilated += 1;
                } else {
                    kept.insert(*oid);
                }
            }
            for &oid in entries {
                live.insert(oid, i);
            }
        }
        if includes_oldest {
            kept.clear();
        }
        let mut survivors: Vec<(usize, u64)> = live.into_iter().map(|(oid, i)| (i, oid)).collect();
        survivors.sort_unstable();
        (survivors, annihilated, kept.into_iter().collect())
    }

    fn filtered(inputs: &[Input], includes_oldest: bool) -> (Vec<(usize, u64)>, u64, Vec<u64>) {
        let mut eager = Eager::new(256, None);
        let antimatter = inputs.iter().map(|(d, _)| d.clone()).collect();
        let mut survivors = Vec::new();
        let mut filter = eager.merge_filter(antimatter, includes_oldest);
        for (i, (_, entries)) in inputs.iter().enumerate() {
            for &oid in entries {
                let e = SpatialEntry::new(Point::new(0.0, 0.0), oid, i as u64);
                if filter.keep(i, &e).unwrap() {
                    survivors.push((i, oid));
                }
            }
        }
        let (kept, cleanup) = filter.finish();
        eager.commit(cleanup);
        survivors.sort_unstable();
        (survivors, eager.cleaned.annihilated, kept)
    }

    fn input() -> impl Strategy<Value = Input> {
        (
            prop::collection::btree_set(0u64..12, 0..6),
            prop::collection::btree_set(0u64..12, 0..8),
        )
            .prop_map(|(d, e)| (d.into_iter().collect(), e.into_iter().rev().collect()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Seen newest first, one entry at a time, the filter keeps exactly the entries, counts
        /// exactly the annihilations and keeps exactly the deleted keys of the replay.
        #[test]
        fn annihilation_filter_equals_the_replay_from_the_oldest(
            inputs in prop::collection::vec(input(), 1..6),
            includes_oldest in any::<bool>(),
        ) {
            prop_assert_eq!(filtered(&inputs, includes_oldest), replay(&inputs, includes_oldest));
        }
    }

    #[test]
    fn a_deletion_annihilates_once_and_the_nearest_touch_decides() {
        // input 0 deletes 1 and 2; input 1 holds 1 (annihilated) and deletes 3; input 2 holds 1, 3.
        let inputs: Vec<Input> = vec![(vec![1, 2], vec![]), (vec![3], vec![1]), (vec![], vec![1, 3])];
        let (survivors, annihilated, kept) = filtered(&inputs, false);
        assert_eq!(survivors, vec![]);
        // (0, 1) annihilates input 1's entry; (1, 3) annihilates input 2's entry of 3; input 2's
        // entry of 1 is replaced by input 1's (no annihilation); (0, 2) finds nothing and is kept.
        assert_eq!(annihilated, 2);
        assert_eq!(kept, vec![2]);
        assert_eq!(filtered(&inputs, true).2, Vec::<u64>::new());
    }
}
