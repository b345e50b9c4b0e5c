//! lsmlab-engine: one storage engine with orthogonal switches.
//!
//! The pieces, bottom up:
//! - [`storage`]: fixed-size pages on a [`storage::Device`] (counted in memory, or real checksummed
//!   files) and a cost model that turns counted I/O into modelled time;
//! - [`cache`]: the buffer cache every index reads through (pluggable replacement policy, exact
//!   LRU by default; in-place writes; prefetch admission) and the page sinks bulk loads write to;
//! - [`btree`] and [`rtree`]: immutable bulk-loaded disk components and the memory R-tree;
//! - [`lsm`]: the LSM framework every index builds on: runs in a versioned level layout,
//!   compaction strategies that answer with data (AsterixDB's prefix, RocksDB's leveled, none), a
//!   memory level, one fail-stop flush and k-way merge executor with lifecycle events, and two
//!   indexes on it (the prefix-merged [`lsm::LsmBTree`] and the leveled key-value [`lsm::LsmKv`]);
//! - [`spatial`]: the LSM R-tree secondary index with its maintenance strategies
//!   (Eager, Validation and the Update Memo of the LSM RUM-tree paper);
//! - [`kvstore`]: the block-based key-value store of the Leaper experiments, with its cache
//!   warm-up policies, and [`leaper`], the learned prefetcher;
//! - [`series`]: the time-series store and memory levels of the DIOL experiments;
//! - [`cluster`]: the paginated and single-page record clusters of OrientDB OEP 7.
//!
//! The engine knows nothing about experiments; it counts what it does and lets callers time it.

#![forbid(unsafe_code)]
// Tests may unwrap: a panic there is the failure report.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod btree;
mod bytes;
pub mod cache;
pub mod cluster;
pub mod combined;
mod error;
pub mod geom;
pub mod kvstore;
pub mod leaper;
pub mod lsm;
pub mod rtree;
pub mod series;
pub mod spatial;
pub mod storage;

pub use error::{Error, Result};
