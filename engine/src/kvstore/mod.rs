//! The block-based key-value store of the Leaper experiments: a memtable over leveled runs of
//! data blocks (SSTable-like: data blocks, an index, a Bloom filter), read through the shared
//! buffer cache by block id, with a switchable cache warm-up policy ([`warmup`]) deciding what the
//! cache does about the blocks every flush and compaction rewrites.

pub mod warmup;

pub use warmup::{Access, Background, BackgroundStart, BlockInfo, RunBlocks, WarmUpKind, WarmUpPolicy};
