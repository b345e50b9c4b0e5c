//! The LSM framework every index builds on.
//!
//! - [`version`]: runs as metadata (id, level, pages, entries, key range, flush sequence range)
//!   and the [`Version`] that orders them in levels;
//! - [`strategy`]: [`CompactionStrategy::choose`] answers a [`Choice`] (do nothing, merge into a
//!   level with a target run size, move, drop) as data, after fjall's `choose -> Choice` and
//!   mini-lsm's compaction tasks; [`prefix`] (AsterixDB), [`leveled`] (RocksDB) and
//!   [`NoCompaction`], built from a serialisable [`CompactionConfig`];
//! - [`memory`]: the [`MemoryLevel`] of one or many memtables, its flush budget and flush order;
//! - [`executor`]: [`RunStore`], the one flush and compaction executor, given a [`RunFormat`] and
//!   a [`MergeFilter`]; merges are k-way ([`merge`]); it is fail-stop (outputs are built before
//!   inputs go) and tells [`events`] observers what it does;
//! - [`btree`] ([`LsmBTree`], prefix-merged) and [`kv`] ([`LsmKv`], leveled) are indexes on it.
//!
//! [`DiskComponents`] and [`MergePolicy`] are the older, range-picking lifecycle that the LSM
//! R-tree still drives; [`PrefixStrategy`] picks exactly what [`PrefixMergePolicy`] picks.

mod btree;
pub mod config;
pub mod events;
pub mod executor;
pub mod kv;
pub mod leveled;
pub mod memory;
pub mod merge;
mod policy;
pub mod prefix;
pub mod strategy;
pub mod version;

pub use btree::{BTreeRuns, LsmBTree, Slot};
pub use config::CompactionConfig;
pub use events::{CompactionKind, EventLog, Extent, LifecycleEvent, LifecycleObserver, RunExtents};
pub use executor::{KWay, KeepAll, MergeFilter, MergePlan, Merger, RunFormat, RunInfo, RunStore};
pub use kv::LsmKv;
pub use leveled::{LeveledParams, LeveledStrategy};
pub use memory::{MemoryLevel, Memtable, SortedMemtable};
pub use policy::{MergePolicy, MergePolicyConfig, NoMergePolicy, PrefixMergePolicy};
pub use prefix::PrefixStrategy;
pub use strategy::{Choice, CompactionStrategy, NoCompaction};
pub use version::{KeyRange, RunId, RunKey, RunMeta, Version};

use crate::storage::IoStats;
use serde::{Deserialize, Serialize};
use std::ops::Range;
use std::time::{Duration, Instant};

/// What a merge policy knows of a disk component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComponentInfo {
    /// Size on the device in pages (AsterixDB's prefix policy compares component sizes).
    pub pages: u64,
    pub entries: u64,
}

/// A disk component as the lifecycle sees it.
pub trait DiskComponent {
    fn info(&self) -> ComponentInfo;
}

/// Flush and merge counters and times of one LSM index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LifecycleStats {
    pub flushes: u64,
    pub merges: u64,
    /// Wall time spent in flushes.
    pub flush_time: Duration,
    /// Wall time spent in merges.
    pub merge_time: Duration,
    /// Entries written by flushes and by merges.
    pub flushed_entries: u64,
    pub merged_entries: u64,
    /// Runs moved to another level without rewriting (trivial moves).
    #[serde(default)]
    pub moves: u64,
    /// Runs dropped whole.
    #[serde(default)]
    pub drops: u64,
    /// Device I/O during flushes (device counter deltas, so it includes any other access to the
    /// same device made meanwhile).
    #[serde(default)]
    pub flush_io: IoStats,
    /// Device I/O during compactions, measured likewise.
    #[serde(default)]
    pub merge_io: IoStats,
}

/// The disk components of one LSM index, newest first, and the policy that merges them.
pub struct DiskComponents<D> {
    components: Vec<D>,
    policy: Box<dyn MergePolicy>,
    stats: LifecycleStats,
}

impl<D: DiskComponent> DiskComponents<D> {
    pub fn new(policy: Box<dyn MergePolicy>) -> Self {
        DiskComponents {
            components: Vec::new(),
            policy,
            stats: LifecycleStats::default(),
        }
    }

    /// Components, newest first.
    pub fn components(&self) -> &[D] {
        &self.components
    }

    pub fn len(&self) -> usize {
        self.components.len()
    }

    pub fn is_empty(&self) -> bool {
        self.components.is_empty()
    }

    pub fn stats(&self) -> LifecycleStats {
        self.stats
    }

    pub fn total_entries(&self) -> u64 {
        self.components.iter().map(|c| c.info().entries).sum()
    }

    pub fn total_pages(&self) -> u64 {
        self.components.iter().map(|c| c.info().pages).sum()
    }

    /// Installs the component produced by a flush (the newest) that took `elapsed`.
    pub fn add_flushed(&mut self, component: D, elapsed: Duration) {
        self.stats.flushes += 1;
        self.stats.flush_time += elapsed;
        self.stats.flushed_entries += component.info().entries;
        self.components.insert(0, component);
    }

    /// Asks the policy for the next merge: a range of positions in [`Self::components`].
    pub fn next_merge(&self) -> Option<Range<usize>> {
        let infos: Vec<ComponentInfo> = self.components.iter().map(|c| c.info()).collect();
        let range = self.policy.pick(&infos)?;
        assert!(
            range.start < range.end && range.end <= infos.len() && range.len() >= 2,
            "merge policy {:?} chose an invalid range {range:?} of {} components",
            self.policy,
            infos.len()
        );
        Some(range)
    }

    /// Takes the components of `range` out for merging, oldest last. The flag tells whether the
    /// oldest component of the index is among them (then deletion markers can be dropped).
    pub fn take(&mut self, range: Range<usize>) -> (Vec<D>, bool) {
        let includes_oldest = range.end == self.components.len();
        let taken = self.components.drain(range).collect();
        (taken, includes_oldest)
    }

    /// Puts the merged component where the merged range was.
    pub fn install_merged(&mut self, at: usize, component: D, elapsed: Duration) {
        self.stats.merges += 1;
        self.stats.merge_time += elapsed;
        self.stats.merged_entries += component.info().entries;
        self.components.insert(at, component);
    }

    /// Runs merges until the policy is satisfied. `merge` receives the components (newest first)
    /// and whether the oldest component is among them, and returns the merged component.
    pub fn merge_while_needed<E>(
        &mut self,
        mut merge: impl FnMut(Vec<D>, bool) -> Result<D, E>,
    ) -> Result<(), E> {
        while let Some(range) = self.next_merge() {
            let at = range.start;
            let start = Instant::now();
            let (taken, includes_oldest) = self.take(range);
            let merged = merge(taken, includes_oldest)?;
            self.install_merged(at, merged, start.elapsed());
        }
        Ok(())
    }

    /// Removes and returns every component (tear-down).
    pub fn take_all(&mut self) -> Vec<D> {
        std::mem::take(&mut self.components)
    }
}
