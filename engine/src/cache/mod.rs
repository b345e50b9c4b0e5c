//! The buffer cache: whole pages between the indexes and the device, with a pluggable
//! replacement policy, a write path and hooks for prefetching and warm-up.
//!
//! - `buffer`: [`BufferCache`], page contents in frames behind one lock. Disk components read every
//!   page through [`BufferCache::read`]: a hit costs no device I/O, a miss reads the device and may
//!   evict a victim. [`BufferCache::write`] updates a page in place (dirty until written back on
//!   eviction, [`BufferCache::flush_dirty`] or [`BufferCache::clear`]). [`BufferCache::admit`],
//!   [`BufferCache::prefetch`] and [`BufferCache::evict`] let a prefetcher put predicted-hot pages
//!   in and take predicted-cold ones out; a retired component's pages are invalidated.
//! - `policy`: the [`ReplacementPolicy`] trait (which frame leaves next), chosen by a
//!   serialisable [`CacheConfig`]; `lru` is exact LRU (the counted figures' policy), `clock`
//!   is CLOCK.
//! - `sink`: the [`PageSink`] bulk loads write new runs through; every device is one, and a
//!   [`CacheSink`] lets the cache admit the pages being written.
//! - `stats`: the counters, [`CacheStats`].

mod buffer;
mod clock;
mod lru;
mod policy;
mod sink;
mod stats;

pub use buffer::{BufferCache, PageNote, PageRef};
pub use policy::{Arrival, CacheConfig, FrameId, PolicyDef, PolicyKind, ReplacementPolicy};

/// The policy table: every named replacement policy, in the order experiments list them. A new
/// policy is its file here (the policy and its `PolicyDef` row), its `mod` line above and its row
/// below (the steps are in `docs/extending.md`).
pub static POLICIES: &[&PolicyDef] = &[&lru::LRU, &clock::CLOCK];
pub use sink::{AdmitAll, AdmitNone, CacheSink, PageSink, WarmUp};
pub use stats::CacheStats;

#[cfg(test)]
mod tests;
