//! The LSM framework every index builds on.
//!
//! - `version`: runs as metadata (id, level, pages, entries, key range, flush sequence range)
//!   and the [`Version`] that orders them in levels;
//! - `strategy`: [`CompactionStrategy::choose`] answers a [`Choice`] (do nothing, merge into a
//!   level with a target run size, move, drop) as data, after fjall's `choose -> Choice` and
//!   mini-lsm's compaction tasks; `prefix` (AsterixDB), `leveled` (RocksDB) and
//!   [`NoCompaction`], built from a serialisable [`CompactionConfig`];
//! - `memory`: the [`MemoryLevel`] of one or many memtables, its flush budget and flush order;
//! - `executor`: [`RunStore`], the one flush and compaction executor, given a [`RunFormat`] and
//!   a [`MergeFilter`]; merges are k-way (`merge`); it is fail-stop (outputs are built before
//!   inputs go) and tells `events` observers what it does;
//! - `btree` ([`LsmBTree`], prefix-merged) and `kv` ([`LsmKv`], leveled) are indexes on it, as
//!   is the LSM R-tree (`crate::spatial`), which merges through its own [`Merger`];
//! - [`MergePolicyConfig`]: the serialisable prefix-or-none choice the LSM RUM-tree experiments
//!   configure, turned into a compaction strategy by [`MergePolicyConfig::strategy`].

mod btree;
mod config;
mod events;
mod executor;
mod kv;
mod leveled;
mod memory;
pub(crate) mod merge;
mod policy;
mod prefix;
mod strategy;
mod version;

pub use btree::{BTreeRuns, LsmBTree, Slot};
pub use config::CompactionConfig;
pub use events::{
    no_blocks, BlockKeys, BlockSink, CompactionKind, EventLog, Extent, LifecycleEvent, LifecycleObserver,
    RunExtents, WrittenBlock,
};
pub use executor::{KWay, KeepAll, MergeFilter, MergePlan, Merger, RunFormat, RunInfo, RunStore};
pub use kv::{LsmKv, RunProbe};
pub use leveled::{LeveledParams, LeveledStrategy};
pub use memory::{HashMemtable, MemoryLevel, Memtable};
pub use policy::MergePolicyConfig;
pub use prefix::PrefixStrategy;
pub use strategy::{Choice, CompactionStrategy, NoCompaction};
pub use version::{KeyRange, RunId, RunKey, RunMeta, Version};

use crate::storage::IoStats;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Flush and merge counters and times of one LSM index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LifecycleStats {
    /// Flushes completed.
    pub flushes: u64,
    /// Merges completed (moves and drops are counted apart).
    pub merges: u64,
    /// Wall time spent in flushes.
    pub flush_time: Duration,
    /// Wall time spent in merges.
    pub merge_time: Duration,
    /// Entries written by flushes.
    pub flushed_entries: u64,
    /// Entries written by merges.
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
