//! AsterixDB's Eager strategy (Alsubaiee et al. 2014) in two variants ([`EagerVariant`]).
//!
//! **Authors** (the default), as the RUM-tree paper's authors ran their baseline
//! (`LSMRTree.modify`, flush, `LSMRTreeSearchCursor`, `LSMRTreeSortedCursor` and `doMerge` of the
//! competitor repository; the driver `UMTest` of the RUM repository keys the buddy B-tree by the
//! object id alone):
//! - an update inserts the new entry into the memory R-tree and the object id into the memory
//!   deleted-key B-tree (a duplicate is ignored: one key per object); the memory delete of the old
//!   entry is commented out, so every version stays in memory. A delete (absent from their
//!   driver) records the object id the same way. A first insert touches only the R-tree.
//! - a flush writes every memory R-tree entry (`fill`, not `filteredFill`), stale versions included,
//!   plus the deleted keys;
//! - a query returns a candidate of component k unless the deleted-key tree of memory or of a newer
//!   disk component holds its id, so their queries also return stale versions from memory and from
//!   within one component;
//! - a merge drops an entry of input k iff a newer input's deleted-key tree holds its id, and keeps
//!   the union of the inputs' deleted keys unless the merge includes the oldest component.
//!
//! lsmlab keeps those costs (memory fill, flush count, pages written, component sizes, deleted-key
//! probes) but answers every query exactly: memory keeps, per object updated or deleted in it, the
//! timestamp of the latest such operation (the memory deleted-key tree, keyed by object id, with a
//! timestamp beside each key; no I/O), so a stale memory entry is never a result; a flush writes
//! the stale entries marked superseded ([`SpatialEntry::SUPERSEDED`]), so they take their pages and
//! are read and probed as the authors' query reads and probes them, but are never returned; merges
//! keep or drop them by the authors' rule, mark and all. On disk the deleted keys are object ids,
//! as in the authors' buddy B-tree.
//!
//! **Physical**, AsterixDB's Eager: an update or delete removes the old entry physically if it is
//! in the memory R-tree (found at the old location the stream or the primary index gives) and
//! records the object id in the memory deleted-key tree in any case; the flush writes the deleted
//! keys beside the disk R-tree; they shadow older components at query time and annihilate their
//! targets when a merge brings both together (a key that annihilated something is dropped).
//!
//! Both key the deleted-key trees by object id alone, in memory and on disk, one key per object, as
//! the authors' driver configures the buddy B-tree (`UMTest`: B-tree fields = the id field), so
//! the two variants differ only in the memory delete (and Physical's merge).
//!
//! Both probe a newer disk component's deleted keys through its Bloom filter, as intended. The
//! authors' query cursor inverts that test (it skips the probe when the filter says the key may be
//! present), so as their code reads no disk deleted-key tree ever kills a query candidate: a key
//! present is skipped, a key absent is probed and not found. lsmlab does not copy that; their
//! merge cursor probes without the filter and is followed exactly.

use super::{by_names, key_index, StrategyDef};
use crate::btree::BTreeComponent;
use crate::cache::BufferCache;
use crate::geom::Point;
use crate::lsm::LsmBTree;
use crate::rtree::{MemRTree, SpatialEntry};
use crate::spatial::maintenance::{Cleanup, Maintenance, MaintenanceStats, MergeFilter, Source};
use crate::spatial::stats::CleaningCounts;
use crate::spatial::strategy::EagerVariant;
use crate::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};

/// The table's row: `Eager` (the authors' semantics, option 0) and `Eager(physical)` (option 1).
pub(crate) static EAGER: StrategyDef = StrategyDef {
    family: "Eager",
    forms: "Eager, Eager(physical)",
    parse: |name| by_names(name, &[("Eager", 0), ("Eager(physical)", 1)]),
    name: |option| match EagerVariant::from_option(option) {
        EagerVariant::Authors => "Eager".to_string(),
        EagerVariant::Physical => "Eager(physical)".to_string(),
    },
    build: |option, cfg, cache| {
        let primary_index = cfg
            .eager_primary_lookup
            .then(|| key_index(cfg, cache))
            .transpose()?;
        Ok(Box::new(Eager::new(
            EagerVariant::from_option(option),
            cache.page_size(),
            primary_index,
        )))
    },
};

/// Eager's state: the memory component's deleted keys and, optionally, a primary index that gives
/// the old location of an object instead of the stream.
pub(crate) struct Eager {
    variant: EagerVariant,
    /// The in-memory deleted-key B+-tree, keyed by object id as the authors' buddy B-tree (one key
    /// per object), with the timestamp of the object's latest update or delete in this memory
    /// component beside it (what keeps the authors' stale memory entries out of answers).
    memory_deleted: BTreeMap<u64, u64>,
    /// Deleted keys per B+-tree leaf page, to size the in-memory deleted-key tree in pages.
    deleted_leaf_capacity: usize,
    /// oid -> location, when the old location is looked up (timed) rather than taken from the
    /// stream, as the paper did when it excluded that lookup.
    primary_index: Option<LsmBTree<Point>>,
    cleaned: CleaningCounts,
    superseded_flushed: u64,
}

impl Eager {
    pub fn new(variant: EagerVariant, page_size: usize, primary_index: Option<LsmBTree<Point>>) -> Self {
        Eager {
            variant,
            memory_deleted: BTreeMap::new(),
            // a deleted key is an object id alone
            deleted_leaf_capacity: BTreeComponent::<()>::leaf_capacity(page_size),
            primary_index,
            cleaned: CleaningCounts::default(),
            superseded_flushed: 0,
        }
    }

    /// The first half of an update or delete stamped `ts` of object `oid`, last at `old`: record
    /// the object id (and `ts`) in the memory deleted-key tree, where it shadows the object's
    /// entries in older components. Physical, as AsterixDB's LSM R-tree, also removes the old
    /// entry from the memory R-tree if it is there; Authors leaves it there.
    fn retire_old(&mut self, memory: &mut MemRTree, oid: u64, old: Option<Point>, ts: u64) {
        if let (EagerVariant::Physical, Some(old)) = (self.variant, old) {
            if memory.remove(old, oid).is_some() {
                self.cleaned.memory_deletes += 1;
            }
        }
        self.memory_deleted.insert(oid, ts);
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
    /// or else from the stream (required by Physical only: Authors never needs it).
    fn locate(&mut self, oid: u64, from: Option<Point>) -> Result<Option<Point>> {
        match (&mut self.primary_index, self.variant) {
            (Some(p), _) => p.get(oid),
            (None, EagerVariant::Authors) => Ok(from),
            (None, EagerVariant::Physical) => Ok(Some(from.ok_or_else(|| {
                Error::Config(format!(
                    "Eager(physical) needs the old location of object {oid} to update or delete it"
                ))
            })?)),
        }
    }

    /// `old` as [`Self::locate`] found it; the primary index then records the new location (its
    /// flush may fail after the write is applied).
    fn update(&mut self, memory: &mut MemRTree, old: Option<Point>, e: SpatialEntry) -> Result<()> {
        self.retire_old(memory, e.oid, old, e.ts);
        memory.insert(e);
        self.record_primary(e.oid, Some(e.point))
    }

    fn delete(&mut self, memory: &mut MemRTree, oid: u64, old: Option<Point>, ts: u64) -> Result<()> {
        self.retire_old(memory, oid, old, ts);
        self.record_primary(oid, None)
    }

    fn memory_antimatter_pages(&self) -> u64 {
        self.memory_deleted.len().div_ceil(self.deleted_leaf_capacity) as u64
    }

    fn has_memory_antimatter(&self) -> bool {
        !self.memory_deleted.is_empty()
    }

    /// An entry older than its object's latest update or delete in memory: what the authors'
    /// flush writes all the same (Physical has removed such entries, unless the old location it
    /// was given was wrong).
    fn superseded_on_flush(&self, e: &SpatialEntry) -> bool {
        self.memory_deleted.get(&e.oid).is_some_and(|&t| e.ts < t)
    }

    /// One key per object: an Eager update or delete kills every older version of the object,
    /// whatever its location.
    fn memory_antimatter(&self) -> Vec<u64> {
        self.memory_deleted.keys().copied().collect()
    }

    fn flushed(&mut self, cleanup: Cleanup) -> Result<()> {
        self.memory_deleted.clear();
        self.commit(cleanup)
    }

    fn commit(&mut self, cleanup: Cleanup) -> Result<()> {
        self.cleaned.add(&cleanup.cleaned);
        self.superseded_flushed += cleanup.superseded;
        Ok(())
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
        match self.variant {
            EagerVariant::Physical => Box::new(Annihilation {
                antimatter,
                includes_oldest,
                input: 0,
                current: Vec::new(),
                shadow: BTreeMap::new(),
                consumed: BTreeSet::new(),
                annihilated: 0,
            }),
            EagerVariant::Authors => Box::new(SortedCursorMerge {
                antimatter,
                includes_oldest,
                killed: 0,
            }),
        }
    }

    /// A memory entry: fresh unless older than its object's latest update or delete in memory (no
    /// probe: the authors' query returns every memory entry; Physical has removed the old ones). A disk entry: memory's deleted keys, then each
    /// newer component's, are probed until one holds the object (the authors' cursor order); it is
    /// fresh iff none does and it is not marked superseded (a superseded entry is probed all the
    /// same, as the authors' query probes it).
    fn is_fresh(
        &self,
        cache: &BufferCache,
        source: Source<'_>,
        e: &SpatialEntry,
        lookups: &mut u64,
    ) -> Result<bool> {
        let Source::Disk { newer } = source else {
            return Ok(self.memory_deleted.get(&e.oid).is_none_or(|&t| e.ts >= t));
        };
        *lookups += 1;
        if self.memory_deleted.contains_key(&e.oid) {
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
        Ok(!e.is_superseded())
    }

    fn stats(&self) -> MaintenanceStats {
        MaintenanceStats {
            key_index: self.primary_index.as_ref().map(|k| (k.stats(), k.lookups())),
            cleaned: self.cleaned,
            superseded_flushed: self.superseded_flushed,
            ..MaintenanceStats::default()
        }
    }
}

/// The authors' merge (`LSMRTreeSortedCursor` feeding `loadMergeBulkLoader`): an entry of input k
/// is dropped iff a newer input's deleted keys hold its object (counted as annihilated); entries of
/// one input never kill each other, so superseded entries flushed together survive, marked. The
/// output keeps the union of the inputs' deleted keys (`mergeLoadBTree`) unless the merge includes
/// the oldest component.
struct SortedCursorMerge {
    /// Per input, newest first: the oids it deletes, ascending.
    antimatter: Vec<Vec<u64>>,
    includes_oldest: bool,
    killed: u64,
}

impl MergeFilter for SortedCursorMerge {
    fn keep(&mut self, input: usize, e: &SpatialEntry) -> Result<bool> {
        let killed = self.antimatter[..input]
            .iter()
            .any(|keys| keys.binary_search(&e.oid).is_ok());
        self.killed += u64::from(killed);
        Ok(!killed)
    }

    fn finish(self: Box<Self>) -> (Vec<u64>, Cleanup) {
        let cleanup = Cleanup {
            cleaned: CleaningCounts {
                annihilated: self.killed,
                ..CleaningCounts::default()
            },
            ..Cleanup::default()
        };
        if self.includes_oldest {
            return (Vec::new(), cleanup);
        }
        let union: BTreeSet<u64> = self.antimatter.into_iter().flatten().collect();
        (union.into_iter().collect(), cleanup)
    }
}

/// The object's nearest touch in a newer input of the merge: its input and whether that input
/// deletes the object (a deleted key applies before the input's own entries).
#[derive(Clone, Copy)]
struct Touch {
    input: usize,
    deletes: bool,
}

/// Eager(physical)'s merge filter. Replaying the merged components from the oldest, a deleted key removes
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
            cleaned: CleaningCounts {
                annihilated: self.annihilated,
                ..CleaningCounts::default()
            },
            ..Cleanup::default()
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
        let mut eager = Eager::new(EagerVariant::Physical, 256, None);
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
        eager.commit(cleanup).unwrap();
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

    /// The authors' merge: an entry of input k dies iff a newer input deletes its object; versions
    /// within one input survive (marks kept); the deleted keys' union is kept unless the merge
    /// includes the oldest component.
    #[test]
    fn the_authors_merge_kills_by_newer_inputs_only_and_keeps_the_union_of_keys() {
        let mut eager = Eager::new(EagerVariant::Authors, 256, None);
        let antimatter = vec![vec![1, 4], vec![2], vec![1, 3]];
        let e = |oid, ts| SpatialEntry::new(Point::new(0.0, 0.0), oid, ts);
        let mut stale = e(2, 5);
        stale.mark_superseded();
        // (input, entry, kept?)
        let cases = [
            (0, e(1, 9), true),
            (0, e(2, 8), true),
            (1, e(2, 7), true),
            (1, stale, true),
            (1, e(1, 6), false),
            (2, e(2, 3), false),
            (2, e(3, 2), true),
            (2, e(4, 1), false),
        ];
        let mut filter = eager.merge_filter(antimatter.clone(), false);
        for (input, entry, kept) in cases {
            assert_eq!(filter.keep(input, &entry).unwrap(), kept, "{input} {entry:?}");
        }
        let (keys, cleanup) = filter.finish();
        assert_eq!(keys, vec![1, 2, 3, 4]);
        assert_eq!(cleanup.cleaned.annihilated, 3);
        eager.commit(cleanup).unwrap();
        let (keys, _) = eager.merge_filter(antimatter, true).finish();
        assert!(keys.is_empty());
    }
}
