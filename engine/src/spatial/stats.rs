//! What the LSM R-tree reports: cleaning counts by mechanism and the index's statistics.

use crate::lsm::LifecycleStats;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Obsolete entries removed, by the mechanism that removed them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleaningCounts {
    /// Buffered Cleaning of memory leaves (paper Section 4.1).
    pub buffered: u64,
    /// Vacuum Cleaning of memory leaves (paper Section 4.2).
    pub vacuum: u64,
    /// Clean Upon Flush: dropped while leaving memory (paper Section 4.3).
    pub flush: u64,
    /// Clean Upon Merge: dropped while merging disk components (paper Section 4.4).
    pub merge: u64,
    /// Validation's merge repair.
    pub merge_repair: u64,
    /// Eager: entries annihilated with their deleted keys during merges.
    pub annihilated: u64,
    /// Eager: old entries removed physically from the memory R-tree by an update or delete.
    pub memory_deletes: u64,
}

/// What the index did, for result rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpatialStats {
    /// The LSM R-tree's own flushes and merges (the paper's Table 1).
    pub rtree: LifecycleStats,
    /// The key index's (Validation's primary key index or Eager's primary index), if any.
    pub key_index: Option<LifecycleStats>,
    /// Entries the Update Memo holds now (0 without one).
    pub um_entries: u64,
    /// The most entries the Update Memo held at once (the paper's Table 2; 0 without one).
    pub um_max_entries: u64,
    /// Obsolete entries removed, by mechanism.
    pub cleaned: CleaningCounts,
    /// Node splits in the memory R-tree over the index's life.
    pub memory_splits: u64,
    /// Lookups in the key index (0 without one).
    pub key_index_lookups: u64,
    /// Entries flushed although superseded (the authors' `LSMRTree`, `Eager(buddy)` and
    /// `Validation`: its flush writes every memory entry); they take disk pages and are read as
    /// query candidates, never returned.
    pub superseded_flushed: u64,
    /// Antimatter entries the flushes wrote into the disk R-trees (Eager with antimatter entries:
    /// one per update or delete, as AsterixDB's LSM R-tree with antimatter tuples).
    #[serde(default)]
    pub antimatter_flushed: u64,
}

impl SpatialStats {
    /// Flush time of the R-tree plus its key index.
    pub fn flush_time(&self) -> Duration {
        self.rtree.flush_time + self.key_index.map_or(Duration::ZERO, |k| k.flush_time)
    }

    /// Merge time of the R-tree plus its key index.
    pub fn merge_time(&self) -> Duration {
        self.rtree.merge_time + self.key_index.map_or(Duration::ZERO, |k| k.merge_time)
    }
}
