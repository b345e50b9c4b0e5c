//! Validation in three variants ([`ValidationVariant`]).
//!
//! **Probe** (`Validation`, the default): the index the RUM-tree paper's authors ran as their
//! Validation baseline. Their driver's `run_all` runs the validation experiments through
//! `UMTest.setUp` and `UMTest.runTest` of the competitor repository: an `LSMRTree` (no primary key
//! index anywhere) updated through `LSMRTree.modify` (the new entry inserted, the object recorded
//! in the memory buddy B-tree, the old entry left in memory) and queried through
//! `LSMRTreeSearchCursor`, which validates each candidate by probing the buddy B-tree of every
//! newer component, the Bloom test inverted as it reads. That cursor is the only validation their
//! Validation runs do, so it is the default; it shares Eager(buddy)'s writes, flushes and merges
//! and is built from the same state (`eager.rs`, [`Kind::Probe`], where the probe path is
//! described).
//!
//! **KeyIndex** (`Validation(key-index)`), Luo & Carey's Validation (PVLDB 2019): blind inserts into
//! the R-tree; a primary key index of each object's latest timestamp validates query candidates,
//! one lookup each. **Repair** (`Validation(repair)`) adds Luo & Carey's merge repair: merges drop
//! the entries the key index shows obsolete.

use super::eager::{Eager, Kind};
use super::{by_names, key_index, StrategyDef};
use crate::cache::BufferCache;
use crate::geom::Point;
use crate::lsm::LsmBTree;
use crate::rtree::{MemRTree, SpatialEntry};
use crate::spatial::maintenance::{Cleanup, KeepAll, Maintenance, MaintenanceStats, MergeFilter, Source};
use crate::spatial::stats::CleaningCounts;
use crate::spatial::strategy::ValidationVariant;
use crate::Result;

/// The table's row: `Validation` as the RUM-tree paper's authors ran it (the probe path, option 2),
/// `Validation(key-index)` (Luo & Carey's key index, option 0) and `Validation(repair)` (with Luo &
/// Carey's merge repair, option 1).
pub(crate) static VALIDATION: StrategyDef = StrategyDef {
    family: "Validation",
    forms: "Validation, Validation(key-index), Validation(repair)",
    parse: |name| {
        by_names(
            name,
            &[
                ("Validation", 2),
                ("Validation(key-index)", 0),
                ("Validation(repair)", 1),
            ],
        )
    },
    name: |option| {
        match ValidationVariant::from_option(option) {
            ValidationVariant::Probe => "Validation",
            ValidationVariant::KeyIndex => "Validation(key-index)",
            ValidationVariant::Repair => "Validation(repair)",
        }
        .to_string()
    },
    build: |option, cfg, cache| match ValidationVariant::from_option(option) {
        ValidationVariant::Probe => Ok(Box::new(Eager::new(Kind::Probe, cache.page_size(), None))),
        v => Ok(Box::new(Validation::new(
            key_index(cfg, cache)?,
            v == ValidationVariant::Repair,
        ))),
    },
};

/// Validation's state: the primary key index (oid -> latest ts) and the merge-repair switch.
pub(crate) struct Validation {
    key_index: LsmBTree<u64>,
    /// Drop obsolete entries during merges after checking them against the key index.
    merge_repair: bool,
    cleaned: CleaningCounts,
}

impl Validation {
    pub fn new(key_index: LsmBTree<u64>, merge_repair: bool) -> Self {
        Validation {
            key_index,
            merge_repair,
            cleaned: CleaningCounts::default(),
        }
    }
}

impl Maintenance for Validation {
    fn insert(&mut self, memory: &mut MemRTree, e: SpatialEntry) -> Result<()> {
        memory.insert(e);
        self.key_index.upsert(e.oid, e.ts)
    }

    fn update(&mut self, memory: &mut MemRTree, _from: Option<Point>, e: SpatialEntry) -> Result<()> {
        memory.insert(e);
        self.key_index.upsert(e.oid, e.ts)
    }

    fn delete(&mut self, _memory: &mut MemRTree, oid: u64, _from: Option<Point>, _ts: u64) -> Result<()> {
        self.key_index.delete(oid)
    }

    fn flush_key_indexes(&mut self) -> Result<()> {
        self.key_index.flush()
    }

    fn commit(&mut self, cleanup: Cleanup) -> Result<()> {
        self.cleaned.add(&cleanup.cleaned);
        Ok(())
    }

    fn merge_filter<'a>(&'a mut self, _antimatter: Vec<Vec<u64>>, _: bool) -> Box<dyn MergeFilter + 'a> {
        if !self.merge_repair {
            return Box::new(KeepAll);
        }
        Box::new(MergeRepair {
            key_index: &mut self.key_index,
            repaired: 0,
        })
    }

    fn is_fresh(&self, _: &BufferCache, _: Source<'_>, e: &SpatialEntry, lookups: &mut u64) -> Result<bool> {
        *lookups += 1;
        Ok(self.key_index.peek(e.oid)? == Some(e.ts))
    }

    fn stats(&self) -> MaintenanceStats {
        MaintenanceStats {
            key_index: Some((self.key_index.stats(), self.key_index.lookups())),
            cleaned: self.cleaned,
            ..MaintenanceStats::default()
        }
    }
}

/// Luo & Carey's merge repair: an entry survives iff the key index holds its timestamp. Its
/// lookups only read the key index, so a failed one leaves everything as it was.
struct MergeRepair<'a> {
    key_index: &'a mut LsmBTree<u64>,
    repaired: u64,
}

impl MergeFilter for MergeRepair<'_> {
    fn keep(&mut self, _: usize, e: &SpatialEntry) -> Result<bool> {
        let fresh = self.key_index.get(e.oid)? == Some(e.ts);
        if !fresh {
            self.repaired += 1;
        }
        Ok(fresh)
    }

    fn finish(self: Box<Self>) -> (Vec<u64>, Cleanup) {
        let mut cleanup = Cleanup::default();
        cleanup.cleaned.merge_repair = self.repaired;
        (Vec::new(), cleanup)
    }
}
