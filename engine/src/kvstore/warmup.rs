//! Cache warm-up policies: what the block cache does about the data blocks a flush or compaction
//! writes and the ones it retires (Leaper, PVLDB 13(11) 2020, §2.2 and §6).
//!
//! A flush or compaction writes new blocks and retires old ones; cached copies of retired blocks
//! are invalidated and the next reads of their keys miss. A [`WarmUpPolicy`] sees every foreground
//! access, is told when a background operation begins (with the input runs' blocks, so it may
//! evict inputs it predicts cold: Leaper's phase 1), and decides for each output block, once the
//! block is complete, whether the cache admits it without a device read (the block is in memory
//! while it is written: prepopulation, incremental warm-up, Leaper's phase 2).

use crate::cache::BufferCache;
use crate::lsm::{KeyRange, RunId};
use crate::storage::PageId;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A data block as warm-up policies see it: its page and the keys it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// The block's page on the device.
    pub page: PageId,
    /// The smallest key it holds.
    pub first_key: u64,
    /// The largest key it holds.
    pub last_key: u64,
}

/// A run taking part in a background operation, with its data blocks in key order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunBlocks {
    /// The run's id.
    pub run: RunId,
    /// The level it lies at.
    pub level: usize,
    /// Its data blocks in key order.
    pub blocks: Vec<BlockInfo>,
}

/// The kind of background operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Background {
    /// A memtable written out as a level-0 run.
    Flush,
    /// Runs merged (or moved) into a deeper level.
    Compaction,
}

/// What a policy is told when a flush or compaction begins.
#[derive(Clone, Copy, Debug)]
pub struct BackgroundStart<'a> {
    /// A flush or a compaction.
    pub kind: Background,
    /// The store's virtual time, in seconds (set by the driver, see `KvStore::set_now`).
    pub now: f64,
    /// The runs the operation reads and retires (empty for a flush), blocks in key order.
    pub inputs: &'a [RunBlocks],
    /// The keys the outputs will hold (the memtable's for a flush, the inputs' cover otherwise).
    pub keys: Option<KeyRange<u64>>,
    /// Data blocks the operation reads (a compaction's input blocks; 0 for a flush): the N of
    /// the paper's T1 = alpha * N (§6.2).
    pub blocks_to_merge: u64,
}

/// The kind of a foreground access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A get or a scan.
    Read,
    /// A put or a delete.
    Write,
}

/// A cache warm-up policy. The store calls it synchronously: [`WarmUpPolicy::on_access`] on every
/// foreground operation, [`WarmUpPolicy::begin`] before a flush or compaction writes anything,
/// [`WarmUpPolicy::admit`] once per output data block after the block is written, and
/// [`WarmUpPolicy::end`] when the operation is installed or has failed.
pub trait WarmUpPolicy: Send {
    /// The policy's name, as [`WarmUpKind`] spells it.
    fn name(&self) -> &'static str;

    /// Keys `lo..=hi` were accessed at virtual time `now` (a point operation has `lo == hi`).
    fn on_access(&mut self, _now: f64, _lo: u64, _hi: u64, _access: Access) {}

    /// A background operation begins. The policy may evict pages from `cache` now (Leaper's phase
    /// 1 evicts cached input blocks predicted cold during the operation); the store counts those
    /// evictions apart.
    fn begin(&mut self, _start: &BackgroundStart<'_>, _cache: &BufferCache) -> Result<()> {
        Ok(())
    }

    /// Output `block` of the operation in progress has been written: should the cache admit it
    /// (no extra device I/O)? A policy may also evict pages it replaces (incremental warm-up
    /// evicts the cached input blocks the new block overlaps).
    fn admit(&mut self, _block: &BlockInfo, _cache: &BufferCache) -> bool {
        false
    }

    /// The operation begun last was installed (`ok`) or failed and changed nothing.
    fn end(&mut self, _now: f64, _ok: bool) {}
}

/// The warm-up policies by name: the switch the Leaper experiments compare.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WarmUpKind {
    /// No warm-up: new blocks enter the cache only when read (plain LRU).
    #[default]
    Lru,
    /// X-Engine's incremental warm-up: an output block that overlaps an input block cached when
    /// the operation began is admitted, and the old blocks it replaces are evicted.
    IncrementalWarmup,
    /// RocksDB's `prepopulate_block_cache = kFlushOnly`: every block a flush writes is admitted.
    PrepopulateFlush,
    /// Every block written by a flush or a compaction is admitted.
    PrepopulateAll,
    /// Leaper's learned prefetcher (`crate::leaper`).
    Leaper,
}

impl WarmUpKind {
    /// Every policy.
    pub const ALL: [WarmUpKind; 5] = [
        WarmUpKind::Lru,
        WarmUpKind::IncrementalWarmup,
        WarmUpKind::PrepopulateFlush,
        WarmUpKind::PrepopulateAll,
        WarmUpKind::Leaper,
    ];

    /// The policy's name in configs and result files.
    pub fn name(self) -> &'static str {
        match self {
            WarmUpKind::Lru => "lru",
            WarmUpKind::IncrementalWarmup => "incremental-warmup",
            WarmUpKind::PrepopulateFlush => "prepopulate-flush",
            WarmUpKind::PrepopulateAll => "prepopulate-all",
            WarmUpKind::Leaper => "leaper",
        }
    }
}

impl fmt::Display for WarmUpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for WarmUpKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        WarmUpKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = WarmUpKind::ALL.iter().map(|k| k.name()).collect();
                Error::Config(format!(
                    "unknown warm-up policy {s:?} (expected one of {})",
                    names.join(", ")
                ))
            })
    }
}
