//! AsterixDB's Eager strategy (Alsubaiee et al. 2014) in three variants ([`EagerVariant`]), and
//! the index the RUM-tree paper's authors ran as their Validation baseline, which is built from the
//! same parts ([`Kind::Probe`]).
//!
//! **Antimatter** (`Eager`, the default), the index the authors' Eager runs use: their driver
//! (`UMTest.run_antimatters_test` of the competitor repository, set up by `setUpAntiMatters`)
//! builds an `LSMRTreeWithAntiMatterTuples` and turns an update into `delete(old tuple)` then
//! `insert(new tuple)`; the delete is `AbstractLSMRTree.modify`:
//! - the old entry (its point, object id and timestamp, which their stream carries) is removed
//!   physically from the memory R-tree if it is there, and its antimatter tuple is inserted into
//!   the memory component's antimatter B-tree in any case (keyed by the whole tuple, so one per
//!   update). That B-tree's pages count toward the memory budget (their virtual buffer cache holds
//!   both trees), so flushes come as theirs do. A delete does the same without the insert;
//! - the flush (`LSMRTreeWithAntiMatterTuples.doFlush` with
//!   `LSMRTreeWithAntiMatterTuplesFlushCursor`) writes the memory entries and the antimatter tuples
//!   together, in Hilbert order, into one disk R-tree: the antimatter takes leaf slots beside the
//!   entries, also the antimatter whose target was removed from memory and shadows nothing. (The
//!   cursor writes the entry and drops the antimatter when both are equal; the physical delete
//!   removed that entry first, so lsmlab never meets the tie.)
//! - a query (`LSMRTreeWithAntiMatterTuplesSearchCursor`) returns every memory entry unprobed (the
//!   only memory component has no newer B-tree to probe); a disk entry is merged with the other
//!   disk components' entries (`LSMIndexSearchCursor.checkPriorityQueue`): an antimatter entry is
//!   never returned and its target in an older component is dropped with it; a surviving disk
//!   entry is then probed in the memory antimatter B-tree (`searchMemBTrees`, no I/O) and returned
//!   unless found there;
//! - a merge (`doMerge` through the same cursor) drops every target whose antimatter is in a
//!   newer input (annihilation); the antimatter itself is written to the output unless the merge
//!   includes the oldest component (`createMergeOperation` sets `returnDeletedTuples` exactly when
//!   the merged components stop short of the oldest), where every antimatter entry is dropped.
//!
//! lsmlab keeps the authors' antimatter as [`SpatialEntry::ANTIMATTER`] entries: in memory beside
//! the memory R-tree (the antimatter B-tree, a leaf holding as many tuples as an R-tree leaf, since
//! it holds the same tuple), on disk inside the R-tree, shadowed by the index's query path
//! (`index/query.rs`) and annihilated by [`TombstoneMerge`]. The old entry's location and stamp are
//! what the authors' stream gives; lsmlab keeps each object's current entry beside the index for
//! that (uncounted, like the stream's old location; a primary index lookup, when configured, gives
//! the location instead and is counted).
//!
//! **Buddy** (`Eager(buddy)`), the index of `LSMRTree.modify` (named after the buddy deleted-key
//! B-tree it keeps beside each R-tree, where Antimatter keeps tombstones inside the R-tree): its
//! memory delete is commented out, so every version stays in memory; it is the index the authors'
//! Validation runs use (`UMTest.runTest`, set up by `setUp`), kept as a named variant beside the
//! authors' Eager (`flush`, `LSMRTreeSearchCursor`, `LSMRTreeSortedCursor` and `doMerge` of the
//! competitor repository; the RUM repository's `UMTest` keys the buddy B-tree by the object id
//! alone):
//! - an update inserts the new entry into the memory R-tree and the object id into the memory
//!   deleted-key B-tree (a duplicate is ignored: one key per object); every version stays in
//!   memory. A delete (absent from their driver) records the object id the same way. A first
//!   insert touches only the R-tree.
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
//! as in the authors' buddy B-tree. Buddy probes a newer disk component's deleted keys through its
//! Bloom filter, as intended.
//!
//! **Physical** (`Eager(physical)`), AsterixDB's Eager with a buddy B-tree: an update or delete
//! removes the old entry physically if it is in the memory R-tree (found at the old location the
//! stream or the primary index gives) and records the object id in the memory deleted-key tree in
//! any case; the flush writes the deleted keys beside the disk R-tree; they shadow older
//! components at query time and annihilate their targets when a merge brings both together (a key
//! that annihilated something is dropped).
//!
//! **Probe** (`Validation`, built by the Validation row): Buddy's writes, flushes and merges with
//! the authors' query path as `LSMRTreeSearchCursor.doHasNext` reads: per candidate of component
//! k, the memory deleted-key tree is probed, then each newer disk component's, until one holds the
//! object, and the Bloom test is inverted: a component whose filter says the key may be present is
//! skipped, one whose filter rules it out is searched (and finds nothing). So no disk deleted-key
//! tree ever kills a candidate, and a candidate pays a B-tree search in every newer component whose
//! filter rules its object out. lsmlab counts those probes and their page reads, and answers
//! exactly from each object's current stamp, kept beside the index (uncounted): the authors'
//! cursor returns the stale versions its skipped probes would have killed.

use super::{by_names, key_index, StrategyDef};
use crate::btree::BTreeComponent;
use crate::cache::BufferCache;
use crate::geom::Point;
use crate::lsm::LsmBTree;
use crate::rtree::{DiskRTree, MemRTree, SpatialEntry};
use crate::spatial::maintenance::{Cleanup, Maintenance, MaintenanceStats, MergeFilter, Source};
use crate::spatial::stats::CleaningCounts;
use crate::spatial::strategy::EagerVariant;
use crate::{Error, Result};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};

/// The table's row: `Eager` (antimatter entries, option 2), `Eager(buddy)` (option 0) and
/// `Eager(physical)` (option 1).
pub(crate) static EAGER: StrategyDef = StrategyDef {
    family: "Eager",
    forms: "Eager, Eager(buddy), Eager(physical)",
    parse: |name| by_names(name, &[("Eager", 2), ("Eager(buddy)", 0), ("Eager(physical)", 1)]),
    name: |option| match EagerVariant::from_option(option) {
        EagerVariant::Antimatter => "Eager".to_string(),
        EagerVariant::Buddy => "Eager(buddy)".to_string(),
        EagerVariant::Physical => "Eager(physical)".to_string(),
    },
    build: |option, cfg, cache| {
        let primary_index = cfg
            .eager_primary_lookup
            .then(|| key_index(cfg, cache))
            .transpose()?;
        Ok(Box::new(Eager::new(
            Kind::from(EagerVariant::from_option(option)),
            cache.page_size(),
            primary_index,
        )))
    },
};

/// What the state below runs: one of the Eager variants or the authors' Validation index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `Eager`: `LSMRTreeWithAntiMatterTuples` (antimatter entries in the R-trees).
    Antimatter,
    /// `Eager(buddy)`: `LSMRTree.modify` with the Bloom test as intended.
    Buddy,
    /// `Eager(physical)`: AsterixDB's physical memory delete with a buddy B-tree.
    Physical,
    /// `Validation`: `LSMRTree.modify` with `LSMRTreeSearchCursor`'s probe path as it reads.
    Probe,
}

impl From<EagerVariant> for Kind {
    fn from(v: EagerVariant) -> Self {
        match v {
            EagerVariant::Antimatter => Kind::Antimatter,
            EagerVariant::Buddy => Kind::Buddy,
            EagerVariant::Physical => Kind::Physical,
        }
    }
}

/// Eager's state: the memory component's deleted keys or antimatter and, optionally, a primary
/// index that gives the old location of an object instead of the stream.
pub(crate) struct Eager {
    kind: Kind,
    /// The in-memory deleted-key B+-tree (Buddy, Physical, Probe), keyed by object id as the
    /// authors' buddy B-tree (one key per object), with the timestamp of the object's latest update
    /// or delete in this memory component beside it (what keeps stale memory entries out of
    /// answers). Held in a hash map: the tree is counted in pages (its size), its probes are
    /// in-memory and uncounted, and it is flushed in key order (sorted then), as the B+-tree
    /// would give it. A `BTreeMap` here, probed once per query candidate, held a third of a
    /// Validation cell's samples in `rum-mixed` at small (5.2 s before this map and the query's kept
    /// buffers, 2.7 s after).
    memory_deleted: FxHashMap<u64, u64>,
    /// Deleted keys per B+-tree leaf page, to size the in-memory deleted-key tree in pages.
    deleted_leaf_capacity: usize,
    /// The in-memory antimatter B-tree (Antimatter): the antimatter entry of every update or
    /// delete since the last flush, keyed by (object id, stamp of the entry it kills), with the
    /// killed entry's point (the rest of the antimatter entry). A hash map flushed in key order, as
    /// `memory_deleted`; 33 B a bucket (49 with the whole entry as the value: the map's share of a
    /// paper-scale BerlinMOD cell's peak was 411 MB at 8 million buckets).
    memory_tombstones: FxHashMap<(u64, u64), Point>,
    /// Antimatter tuples per leaf page: the whole entry, as many as an R-tree leaf holds.
    tombstone_leaf_capacity: usize,
    /// Each live object's current entry (location, stamp), for Antimatter (the old entry its
    /// antimatter names, as the authors' stream gives it) and Probe (exact answers). Uncounted.
    current: FxHashMap<u64, (Point, u64)>,
    /// oid -> location, when the old location is looked up (timed) rather than taken from the
    /// stream, as the paper did when it excluded that lookup.
    primary_index: Option<LsmBTree<Point>>,
    cleaned: CleaningCounts,
    superseded_flushed: u64,
    antimatter_flushed: u64,
}

impl Eager {
    pub fn new(kind: Kind, page_size: usize, primary_index: Option<LsmBTree<Point>>) -> Self {
        Eager {
            kind,
            memory_deleted: FxHashMap::default(),
            // a deleted key is an object id alone
            deleted_leaf_capacity: BTreeComponent::<()>::leaf_capacity(page_size).max(1),
            memory_tombstones: FxHashMap::default(),
            tombstone_leaf_capacity: DiskRTree::leaf_capacity(page_size).max(1),
            current: FxHashMap::default(),
            primary_index,
            cleaned: CleaningCounts::default(),
            superseded_flushed: 0,
            antimatter_flushed: 0,
        }
    }

    /// Whether the kind writes deleted keys into a buddy B-tree (every kind but Antimatter).
    fn has_buddy(&self) -> bool {
        self.kind != Kind::Antimatter
    }

    /// Whether the kind keeps each object's current entry.
    fn tracks_current(&self) -> bool {
        matches!(self.kind, Kind::Antimatter | Kind::Probe)
    }

    /// The first half of an update or delete stamped `ts` of object `oid`, last at `old`.
    /// Antimatter removes the old entry from the memory R-tree if it is there and records its
    /// antimatter in any case (`AbstractLSMRTree.modify`). The others record the object id (and
    /// `ts`) in the memory deleted-key tree, where it shadows the object's entries in older
    /// components; Physical, as AsterixDB's LSM R-tree, also removes the old entry from the memory
    /// R-tree if it is there; Buddy and Probe leave it there.
    fn retire_old(&mut self, memory: &mut MemRTree, oid: u64, old: Option<Point>, ts: u64) {
        if self.kind == Kind::Antimatter {
            if let Some(&(at, stamp)) = self.current.get(&oid) {
                // The object's current entry: the old tuple the authors' stream gives. `old`, as
                // the stream or the primary index located it, names the same place on a consistent
                // stream; the entry kept here is used, so a wrong `old` cannot misplace antimatter.
                let _ = old;
                let target = SpatialEntry::new(at, oid, stamp);
                if memory.remove(target.point, oid).is_some() {
                    self.cleaned.memory_deletes += 1;
                }
                self.memory_tombstones.insert((oid, stamp), target.point);
            }
            return;
        }
        if let (Kind::Physical, Some(old)) = (self.kind, old) {
            if memory.remove(old, oid).is_some() {
                self.cleaned.memory_deletes += 1;
            }
        }
        self.memory_deleted.insert(oid, ts);
    }

    /// Records `new` (or the deletion) in the primary index, if there is one, and as the object's
    /// current entry where the kind keeps it.
    fn record_current(&mut self, oid: u64, new: Option<(Point, u64)>) -> Result<()> {
        if self.tracks_current() {
            match new {
                Some(v) => self.current.insert(oid, v),
                None => self.current.remove(&oid),
            };
        }
        match (&mut self.primary_index, new) {
            (Some(p), Some((to, _))) => p.upsert(oid, to),
            (Some(p), None) => p.delete(oid),
            (None, _) => Ok(()),
        }
    }

    /// The Probe kind's query path for a disk candidate not killed in memory: each newer disk
    /// component's deleted-key tree is searched unless its Bloom filter says the key may be present
    /// (the authors' inverted test), until a search finds the key. Returns whether one did.
    fn probe_inverted(
        &self,
        cache: &BufferCache,
        newer: &[&crate::spatial::SpatialComponent],
        oid: u64,
        lookups: &mut u64,
    ) -> Result<bool> {
        for c in newer {
            let Some(d) = &c.antimatter else { continue };
            if d.has_bloom() && d.may_contain(oid) {
                continue;
            }
            *lookups += 1;
            if d.get_unfiltered(cache, oid)?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl Maintenance for Eager {
    fn insert(&mut self, memory: &mut MemRTree, e: SpatialEntry) -> Result<()> {
        memory.insert(e);
        self.record_current(e.oid, Some((e.point, e.ts)))
    }

    /// The old location from the primary index (a lookup that may fail before anything changed),
    /// or else from the stream (required by Physical only: the other kinds never need it).
    fn locate(&mut self, oid: u64, from: Option<Point>) -> Result<Option<Point>> {
        match (&mut self.primary_index, self.kind) {
            (Some(p), _) => p.get(oid),
            (None, Kind::Physical) => Ok(Some(from.ok_or_else(|| {
                Error::Config(format!(
                    "Eager(physical) needs the old location of object {oid} to update or delete it"
                ))
            })?)),
            (None, _) => Ok(from),
        }
    }

    /// `old` as [`Self::locate`] found it; the primary index then records the new location (its
    /// flush may fail after the write is applied).
    fn update(&mut self, memory: &mut MemRTree, old: Option<Point>, e: SpatialEntry) -> Result<()> {
        self.retire_old(memory, e.oid, old, e.ts);
        memory.insert(e);
        self.record_current(e.oid, Some((e.point, e.ts)))
    }

    fn delete(&mut self, memory: &mut MemRTree, oid: u64, old: Option<Point>, ts: u64) -> Result<()> {
        self.retire_old(memory, oid, old, ts);
        self.record_current(oid, None)
    }

    fn memory_antimatter_pages(&self) -> u64 {
        if self.has_buddy() {
            self.memory_deleted.len().div_ceil(self.deleted_leaf_capacity) as u64
        } else {
            self.memory_tombstones
                .len()
                .div_ceil(self.tombstone_leaf_capacity) as u64
        }
    }

    fn has_memory_antimatter(&self) -> bool {
        !self.memory_deleted.is_empty() || !self.memory_tombstones.is_empty()
    }

    /// An entry older than its object's latest update or delete in memory: what the authors'
    /// `LSMRTree` flush writes all the same (Physical and Antimatter have removed such entries,
    /// unless the old location Physical was given was wrong).
    fn superseded_on_flush(&self, e: &SpatialEntry) -> bool {
        self.memory_deleted.get(&e.oid).is_some_and(|&t| e.ts < t)
    }

    /// One key per object: an update or delete kills every older version of the object, whatever
    /// its location.
    fn memory_antimatter(&self) -> Vec<u64> {
        let mut keys: Vec<u64> = self.memory_deleted.keys().copied().collect();
        keys.sort_unstable();
        keys
    }

    fn memory_antimatter_entries(&self) -> Vec<SpatialEntry> {
        let mut entries: Vec<SpatialEntry> = (self.memory_tombstones.iter())
            .map(|(&(oid, stamp), &at)| SpatialEntry::new(at, oid, stamp).antimatter())
            .collect();
        entries.sort_unstable_by_key(|e| (e.oid, e.stamp()));
        entries
    }

    /// The maps are dropped, not cleared: a cleared hash map keeps its buckets, and the flush is
    /// followed by any merge it triggers, which then ran beside the last memory period's largest
    /// table (411 MB of a paper-scale BerlinMOD cell's heap peak under Eager, in a merge).
    fn flushed(&mut self, cleanup: Cleanup) -> Result<()> {
        self.memory_deleted = FxHashMap::default();
        self.memory_tombstones = FxHashMap::default();
        self.commit(cleanup)
    }

    fn commit(&mut self, cleanup: Cleanup) -> Result<()> {
        self.cleaned.add(&cleanup.cleaned);
        self.superseded_flushed += cleanup.superseded;
        self.antimatter_flushed += cleanup.antimatter;
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
        match self.kind {
            Kind::Physical => Box::new(Annihilation {
                antimatter,
                includes_oldest,
                input: 0,
                current: Vec::new(),
                shadow: BTreeMap::new(),
                consumed: BTreeSet::new(),
                annihilated: 0,
            }),
            Kind::Buddy | Kind::Probe => Box::new(SortedCursorMerge {
                antimatter,
                includes_oldest,
                killed: 0,
            }),
            Kind::Antimatter => Box::new(TombstoneMerge::new(includes_oldest)),
        }
    }

    /// A memory entry: Antimatter's are all current (the old ones were removed; no probe, as the
    /// authors' cursor has no newer memory B-tree to probe); the others' are fresh unless older
    /// than their object's latest update or delete in memory (no probe: the authors' query returns
    /// every memory entry). A disk entry (Antimatter's survived the newer components' antimatter
    /// already): one probe of the memory antimatter; the buddy kinds probe memory's deleted keys,
    /// then each newer component's until one holds the object (the authors' cursor order, the
    /// Bloom test as intended for Buddy and Physical, inverted for Probe); it is fresh iff none
    /// does and it is not marked superseded (a superseded entry is probed all the same, as the
    /// authors' query probes it). Probe answers from the object's current stamp.
    fn is_fresh(
        &self,
        cache: &BufferCache,
        source: Source<'_>,
        e: &SpatialEntry,
        lookups: &mut u64,
    ) -> Result<bool> {
        let Source::Disk { newer } = source else {
            return Ok(
                self.kind == Kind::Antimatter || self.memory_deleted.get(&e.oid).is_none_or(|&t| e.ts >= t)
            );
        };
        *lookups += 1;
        if self.kind == Kind::Antimatter {
            return Ok(!self.memory_tombstones.contains_key(&(e.oid, e.stamp())));
        }
        if self.memory_deleted.contains_key(&e.oid) {
            return Ok(false);
        }
        if self.kind == Kind::Probe {
            let killed = self.probe_inverted(cache, newer, e.oid, lookups)?;
            let current = self.current.get(&e.oid).is_some_and(|&(_, ts)| ts == e.stamp());
            return Ok(!killed && current && !e.is_superseded());
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
            antimatter_flushed: self.antimatter_flushed,
            ..MaintenanceStats::default()
        }
    }
}

/// The authors' antimatter merge (`LSMRTreeWithAntiMatterTuples.doMerge` through
/// `LSMRTreeWithAntiMatterTuplesSearchCursor` and `LSMIndexSearchCursor.checkPriorityQueue`): an
/// entry whose antimatter is in a newer input is dropped (annihilated); an antimatter entry is
/// written to the output unless the merge includes the oldest component (`returnDeletedTuples`
/// false), where every one is dropped. Inputs arrive newest first, each whole before the next, so
/// an antimatter entry is seen before its target. No buddy B-tree: the antimatter lives in the
/// R-tree.
///
/// The antimatter seen is held as one sorted run of (oid, stamp) per finished input, 16 B a key,
/// probed by binary search. A hash map of key to input (25 B a bucket, 29-57 B a key with its
/// load, old and new tables together while it grows) made the peak of a paper-scale `rum-mixed`
/// cell under Eager on BerlinMOD: 1.26 GB of the run's 2.39 GB heap peak (heaptrack), the map
/// growing from 16 to 32 million buckets in a merge.
struct TombstoneMerge {
    includes_oldest: bool,
    /// Per finished input, newest first: the (oid, stamp) of its antimatter entries, ascending.
    sealed: Vec<Vec<(u64, u64)>>,
    /// The antimatter of the input being read, sealed when the next input starts: an input's
    /// antimatter never kills its own entries.
    pending: Vec<(u64, u64)>,
    /// The input being read.
    input: usize,
    annihilated: u64,
}

impl TombstoneMerge {
    fn new(includes_oldest: bool) -> Self {
        TombstoneMerge {
            includes_oldest,
            sealed: Vec::new(),
            pending: Vec::new(),
            input: 0,
            annihilated: 0,
        }
    }

    /// Seals the antimatter of the inputs before `input`.
    fn start(&mut self, input: usize) {
        assert!(
            input >= self.input,
            "merge inputs arrive newest first: {input} after {}",
            self.input
        );
        if input > self.input && !self.pending.is_empty() {
            let mut run = std::mem::take(&mut self.pending);
            run.sort_unstable();
            run.shrink_to_fit();
            self.sealed.push(run);
        }
        self.input = input;
    }
}

impl MergeFilter for TombstoneMerge {
    fn keep(&mut self, input: usize, e: &SpatialEntry) -> Result<bool> {
        if input != self.input {
            self.start(input);
        }
        let key = (e.oid, e.stamp());
        if e.is_antimatter() {
            self.pending.push(key);
            return Ok(!self.includes_oldest);
        }
        let killed = self.sealed.iter().any(|run| run.binary_search(&key).is_ok());
        self.annihilated += u64::from(killed);
        Ok(!killed)
    }

    fn finish(self: Box<Self>) -> (Vec<u64>, Cleanup) {
        let cleanup = Cleanup {
            cleaned: CleaningCounts {
                annihilated: self.annihilated,
                ..CleaningCounts::default()
            },
            ..Cleanup::default()
        };
        (Vec::new(), cleanup)
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
        let mut eager = Eager::new(Kind::Physical, 256, None);
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
        let mut eager = Eager::new(Kind::Buddy, 256, None);
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

    /// The antimatter of any newer input kills, however many inputs lie between; an input's own
    /// antimatter never kills its entries, before or after them in the input.
    #[test]
    fn the_antimatter_merge_kills_by_any_newer_input_and_never_within_one() {
        let e = |oid, ts| SpatialEntry::new(Point::new(0.0, 0.0), oid, ts);
        let mut eager = Eager::new(Kind::Antimatter, 256, None);
        let mut filter = eager.merge_filter(Vec::new(), false);
        // (input, entry, kept?)
        let cases = [
            (0, e(1, 2).antimatter(), true),
            (0, e(5, 7), true),
            (0, e(5, 7).antimatter(), true),
            (0, e(8, 8).antimatter(), true),
            (0, e(8, 8), true),
            (1, e(3, 4).antimatter(), true),
            (1, e(6, 1), true),
            (1, e(6, 1).antimatter(), true),
            (2, e(1, 2), false),
            (2, e(3, 4), false),
            (2, e(6, 1), false),
            (2, e(1, 3), true),
            (2, e(9, 9).antimatter(), true),
            (3, e(9, 9), false),
            (3, e(5, 7), false),
        ];
        for (input, entry, kept) in cases {
            assert_eq!(filter.keep(input, &entry).unwrap(), kept, "{input} {entry:?}");
        }
        let (_, cleanup) = filter.finish();
        assert_eq!(cleanup.cleaned.annihilated, 5);
    }

    /// The memory component's antimatter goes to the flush in key order (the buddy B-tree is built
    /// from ascending keys; antimatter tuples by object and stamp), whatever order the updates
    /// came in: the maps that hold them have no order of their own.
    #[test]
    fn memory_antimatter_is_flushed_in_key_order() {
        let mut memory = MemRTree::new(256);
        let mut buddy = Eager::new(Kind::Buddy, 256, None);
        let mut tombstones = Eager::new(Kind::Antimatter, 256, None);
        let oids = [7u64, 3, 11, 1, 9, 5];
        for (i, &oid) in oids.iter().cycle().take(3 * oids.len()).enumerate() {
            let ts = i as u64 + 1;
            buddy.retire_old(&mut memory, oid, None, ts);
            tombstones.retire_old(&mut memory, oid, None, ts);
            tombstones
                .record_current(oid, Some((Point::new(0.0, 0.0), ts)))
                .unwrap();
        }
        assert_eq!(buddy.memory_antimatter(), vec![1, 3, 5, 7, 9, 11]);
        let keys: Vec<(u64, u64)> = (tombstones.memory_antimatter_entries().iter())
            .map(|e| (e.oid, e.stamp()))
            .collect();
        // Each object's first update had no older entry to kill: two antimatter tuples per object.
        assert_eq!(keys.len(), 2 * oids.len());
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    }

    /// The authors' antimatter merge: a target whose antimatter is in a newer input is dropped
    /// (annihilated); antimatter is written unless the merge includes the oldest component
    /// (`returnDeletedTuples`), and an antimatter entry names one version (object and stamp).
    #[test]
    fn the_antimatter_merge_annihilates_targets_and_keeps_antimatter_unless_it_includes_the_oldest() {
        let e = |oid, ts| SpatialEntry::new(Point::new(0.0, 0.0), oid, ts);
        for includes_oldest in [false, true] {
            let mut eager = Eager::new(Kind::Antimatter, 256, None);
            let mut filter = eager.merge_filter(Vec::new(), includes_oldest);
            // input 0: the antimatter of (1, 3) and of (2, 9), whose target is not merged; (1, 5)
            assert_eq!(filter.keep(0, &e(1, 3).antimatter()).unwrap(), !includes_oldest);
            assert_eq!(filter.keep(0, &e(2, 9).antimatter()).unwrap(), !includes_oldest);
            assert!(filter.keep(0, &e(1, 5)).unwrap());
            // input 1: (1, 3) annihilated; (2, 4) is another version than the antimatter names
            assert!(!filter.keep(1, &e(1, 3)).unwrap());
            assert!(filter.keep(1, &e(2, 4)).unwrap());
            let (keys, cleanup) = filter.finish();
            assert!(keys.is_empty(), "no buddy B-tree");
            assert_eq!(cleanup.cleaned.annihilated, 1);
        }
    }
}
