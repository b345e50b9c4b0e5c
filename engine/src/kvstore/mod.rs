//! The block-based key-value store of the Leaper experiments: a memtable over leveled runs of
//! data blocks (SSTable-like: data blocks, an index, a Bloom filter), read through the shared
//! buffer cache by block id, with a switchable cache warm-up policy (`warmup`) deciding what the
//! cache does about the blocks every flush and compaction rewrites.
//!
//! - `sst`: the run format (page layout, point lookups, range scans, merge scans);
//! - `store`: [`KvStore`] with its [`BackgroundOp`] records and [`KvStats`]; `timed`: merges that
//!   last their duration on the virtual clock ([`KvConfig::background_bytes_per_s`]);
//! - `warmup`: the policy contract and [`CacheWarmer`], which drives a policy from an LSM
//!   index's lifecycle events; `baselines`: no warm-up, X-Engine's incremental warm-up,
//!   RocksDB's prepopulation on flush, and prepopulation on flush and compaction.

mod baselines;
mod sst;
mod store;
mod timed;
mod warmup;

pub use baselines::{IncrementalWarmup, NoWarmUp, PrepopulateAll, PrepopulateFlush};
pub use sst::{KvValue, MetaLookups, SstFormat, SstRun, HEADER_SIZE as BLOCK_HEADER_SIZE, SLOT_SIZE};
pub use store::{BackgroundOp, KvConfig, KvStats, KvStore};
pub use warmup::{
    Access, Background, BackgroundStart, BlockInfo, CacheWarmer, RunBlocks, WarmCounts, WarmKey, WarmUpKind,
    WarmUpPolicy,
};

#[cfg(test)]
mod tests;
