//! [`Maintenance`]: what a strategy of the LSM R-tree does to keep query answers right while objects
//! move. The index ([`super::LsmRTree`]) owns the memory R-tree, the disk components and the clock;
//! the strategy owns everything else (deleted keys, key indexes, the Update Memo) and is asked at
//! each step: on a write, on a flush (which entries leave memory, what antimatter goes beside
//! them), on a merge (a per-entry filter), and for each query candidate.
//!
//! The flush and merge hooks are shaped as the filters of a generic LSM executor: a per-entry
//! keep/drop decision, plus antimatter that survives a merge unless it includes the oldest
//! component. Deciding is pure: what a decision changes beside the index (Update Memo releases,
//! cleaning counters) is collected as a [`Cleanup`] and committed only once the flush or merge has
//! succeeded, so a failed one leaves the strategy exactly as it was.

use super::component::SpatialComponent;
use super::stats::CleaningCounts;
use super::um::UpdateMemo;
use crate::cache::BufferCache;
use crate::geom::Point;
use crate::lsm::LifecycleStats;
use crate::rtree::{MemRTree, NodeId, SpatialEntry};
use crate::Result;
use std::sync::Arc;

/// Where a query candidate came from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// The memory R-tree.
    Memory,
    /// A disk component.
    Disk {
        /// The disk components newer than it, newest first.
        newer: &'a [&'a SpatialComponent],
    },
}

/// How an entry entered the memory R-tree, for the cleaning counters.
#[derive(Clone, Copy, Debug)]
pub struct MemoryWrite {
    /// An update (a later version of a known object), not an object's first insert.
    pub update: bool,
    /// The insert split its leaf.
    pub split: bool,
}

/// What a strategy reports beside the R-tree's own lifecycle.
#[derive(Clone, Copy, Debug, Default)]
pub struct MaintenanceStats {
    /// The key index's flushes and merges and its lookups, if the strategy keeps one.
    pub key_index: Option<(LifecycleStats, u64)>,
    /// Entries the Update Memo holds now (0 without one).
    pub um_entries: u64,
    /// The most entries the Update Memo held at once (0 without one).
    pub um_max_entries: u64,
    /// Obsolete entries removed, by mechanism.
    pub cleaned: CleaningCounts,
    /// Entries flushed marked superseded (Eager(buddy) and Validation: the authors' `LSMRTree`).
    pub superseded_flushed: u64,
    /// Antimatter entries flushed into disk R-trees (Eager with antimatter entries).
    pub antimatter_flushed: u64,
}

/// Passes every entry of the index (memory and disk) to its argument as `(oid, ts)`, one at a time,
/// without holding them: what the UM audit reads, so that it needs memory for the objects only,
/// not for the entries (the paper's BerlinMOD stream leaves 56M of them).
pub type StampScan<'a> = dyn Fn(&mut dyn FnMut(u64, u64)) -> Result<()> + 'a;

/// What a flush or merge did beside writing its output, applied by [`Maintenance::commit`] once
/// the output is installed.
#[derive(Clone, Debug, Default)]
pub struct Cleanup {
    /// Obsolete entries dropped, by object: one Update Memo release each (Algorithm 7).
    pub releases: Vec<u64>,
    /// Entries removed, by mechanism.
    pub cleaned: CleaningCounts,
    /// Entries a flush wrote marked superseded.
    pub superseded: u64,
    /// Antimatter entries a flush wrote into the disk R-tree.
    pub antimatter: u64,
}

impl CleaningCounts {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &CleaningCounts) {
        self.buffered += other.buffered;
        self.vacuum += other.vacuum;
        self.flush += other.flush;
        self.merge += other.merge;
        self.merge_repair += other.merge_repair;
        self.annihilated += other.annihilated;
        self.memory_deletes += other.memory_deletes;
    }
}

/// The per-entry filter of one merge, fed every entry of the merged components, newest component
/// first and each component in scan order.
pub trait MergeFilter {
    /// Whether entry `e` of input `input` (0 = the newest merged component) goes into the output.
    fn keep(&mut self, input: usize, e: &SpatialEntry) -> Result<bool>;

    /// The antimatter (ascending oids) the merged component keeps, once every entry was seen, and
    /// the cleanup to commit if the merge succeeds.
    fn finish(self: Box<Self>) -> (Vec<u64>, Cleanup);
}

/// A filter that keeps every entry and carries no antimatter.
pub struct KeepAll;

impl MergeFilter for KeepAll {
    fn keep(&mut self, _: usize, _: &SpatialEntry) -> Result<bool> {
        Ok(true)
    }

    fn finish(self: Box<Self>) -> (Vec<u64>, Cleanup) {
        (Vec::new(), Cleanup::default())
    }
}

/// Index maintenance of one strategy (see the module documentation). Writes receive the entry
/// already stamped by the index's clock.
pub trait Maintenance: Send {
    /// A new object `e.oid` at `e.point`.
    fn insert(&mut self, memory: &mut MemRTree, e: SpatialEntry) -> Result<()>;

    /// Where object `oid` is before an update or delete: `from` (the stream's knowledge), unless
    /// the strategy looks it up itself. Called before the write is stamped; a failure here changes
    /// nothing.
    fn locate(&mut self, _oid: u64, from: Option<Point>) -> Result<Option<Point>> {
        Ok(from)
    }

    /// Object `e.oid` moved to `e.point`; `from` is its old location as [`Self::locate`] gave it.
    /// An error after the entry is in memory (a key index's failed flush) leaves the write applied.
    fn update(&mut self, memory: &mut MemRTree, from: Option<Point>, e: SpatialEntry) -> Result<()>;

    /// Object `oid` was deleted at `ts`; `from` as in [`Self::update`].
    fn delete(&mut self, memory: &mut MemRTree, oid: u64, from: Option<Point>, ts: u64) -> Result<()>;

    /// The Update Memo, for strategies that keep one (concurrent ingestion updates it directly).
    fn update_memo(&self) -> Option<&Arc<UpdateMemo>> {
        None
    }

    /// After an entry stamped by a concurrent caller entered memory leaf `leaf` (the caller has
    /// updated the Update Memo itself). An error (a cleaning that met an entry the Update Memo
    /// does not count) leaves the write applied.
    fn after_external_insert(
        &mut self,
        _memory: &mut MemRTree,
        _leaf: NodeId,
        _write: MemoryWrite,
    ) -> Result<()> {
        Ok(())
    }

    /// Pages of the memory component beside the memory R-tree (a deleted-key B+-tree or the
    /// antimatter tuples of Eager's variants and Validation).
    fn memory_antimatter_pages(&self) -> u64 {
        0
    }

    /// Whether memory holds antimatter to flush even when the memory R-tree is empty.
    fn has_memory_antimatter(&self) -> bool {
        false
    }

    /// Clean Upon Flush: whether an entry leaving memory is written to the flushed component; an
    /// entry dropped is recorded in `cleanup`.
    fn keep_on_flush(&self, _e: &SpatialEntry, _cleanup: &mut Cleanup) -> bool {
        true
    }

    /// Whether an entry the flush writes is superseded: a newer version of its object (or its
    /// deletion) is in memory, yet the strategy writes it as the authors' `LSMRTree` does. It is
    /// written marked ([`SpatialEntry::mark_superseded`]) and is never a query result.
    fn superseded_on_flush(&self, _e: &SpatialEntry) -> bool {
        false
    }

    /// The memory component's antimatter for the flushed component, ascending oids (kept in
    /// memory until the flush succeeds).
    fn memory_antimatter(&self) -> Vec<u64> {
        Vec::new()
    }

    /// The memory component's antimatter entries ([`SpatialEntry::ANTIMATTER`]), which the flush
    /// writes into the disk R-tree among the entries (kept in memory until the flush succeeds).
    /// On disk an antimatter entry shadows the entry it names (same point, object and stamp) in
    /// every older component: the query never returns either, and never validates them.
    fn memory_antimatter_entries(&self) -> Vec<SpatialEntry> {
        Vec::new()
    }

    /// Whether `cleanup` can be committed: checked before a flush or merge installs its output,
    /// so that one whose decisions contradict the strategy's bookkeeping (an entry read back
    /// garbled, [`crate::Error::CorruptEntry`]) fails with nothing changed.
    fn check(&self, _cleanup: &Cleanup) -> Result<()> {
        Ok(())
    }

    /// A flush succeeded: the memory R-tree was emptied (its leaf ids are void from now on), the
    /// memory antimatter is on disk, and `cleanup` is committed.
    fn flushed(&mut self, cleanup: Cleanup) -> Result<()> {
        self.commit(cleanup)
    }

    /// Applies what a successful flush or merge decided: Update Memo releases and counters. Fails
    /// only where [`Self::check`] would have.
    fn commit(&mut self, cleanup: Cleanup) -> Result<()>;

    /// Flushes the key indexes kept beside the R-tree (together with every R-tree flush, as
    /// AsterixDB flushes every index of a dataset).
    fn flush_key_indexes(&mut self) -> Result<()> {
        Ok(())
    }

    /// The filter of a merge whose inputs (newest first) carry `antimatter` (ascending oids each);
    /// `includes_oldest` tells whether the oldest disk component is among them.
    fn merge_filter<'a>(
        &'a mut self,
        antimatter: Vec<Vec<u64>>,
        includes_oldest: bool,
    ) -> Box<dyn MergeFilter + 'a>;

    /// Whether query candidate `e` from `source` is fresh (the object's current entry); adds every
    /// probe made to `lookups`.
    fn is_fresh(
        &self,
        cache: &BufferCache,
        source: Source<'_>,
        e: &SpatialEntry,
        lookups: &mut u64,
    ) -> Result<bool>;

    /// What the strategy has done so far, beside the R-tree's own lifecycle.
    fn stats(&self) -> MaintenanceStats;

    /// Checks the strategy's own bookkeeping against the index's contents, read by `stamps` only
    /// if needed. The default has nothing to check.
    fn audit(&self, _stamps: &StampScan<'_>) -> Result<std::result::Result<(), String>> {
        Ok(Ok(()))
    }
}
