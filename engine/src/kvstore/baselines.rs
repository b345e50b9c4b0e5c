//! The warm-up policies Leaper is compared with (Leaper, PVLDB 13(11) 2020, §2.2 and §7.1): no
//! warm-up, X-Engine's incremental warm-up and RocksDB's block-cache prepopulation.

use super::warmup::{Background, BackgroundStart, BlockInfo, WarmUpKind, WarmUpPolicy};
use crate::cache::BufferCache;
use crate::storage::PageId;
use crate::Result;

impl WarmUpKind {
    /// A fresh instance of a baseline policy; `None` for [`WarmUpKind::Leaper`], which needs a
    /// trained model (`crate::leaper`).
    pub fn baseline(self) -> Option<Box<dyn WarmUpPolicy>> {
        match self {
            WarmUpKind::Lru => Some(Box::new(NoWarmUp)),
            WarmUpKind::IncrementalWarmup => Some(Box::new(IncrementalWarmup::default())),
            WarmUpKind::PrepopulateFlush => Some(Box::new(PrepopulateFlush::default())),
            WarmUpKind::PrepopulateAll => Some(Box::new(PrepopulateAll)),
            WarmUpKind::Leaper => None,
        }
    }
}

/// No warm-up: new blocks enter the cache only when a read misses on them, and the replacement
/// policy (LRU) alone decides what stays. The paper's "LRU" baseline.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoWarmUp;

impl WarmUpPolicy for NoWarmUp {
    fn name(&self) -> &'static str {
        WarmUpKind::Lru.name()
    }
}

/// X-Engine's incremental warm-up as Leaper describes it (§2.2, its reference \[1\]; the baseline
/// of §7.1): the blocks of a compaction's output "whose key ranges overlap with blocks in the
/// block cache" are moved into the cache, and "before they are moved, the blocks in the block
/// cache are evicted".
///
/// Here: when an operation begins, the policy remembers which of its input blocks are cached, with
/// their key ranges. Each output block that overlaps any of them is admitted, and the cached input
/// blocks it overlaps are evicted just before. A remembered block may overlap several output
/// blocks, and all of them are admitted (the second weakness Leaper names: infrequently read
/// blocks get prefetched). A flush has no input blocks, so it admits nothing.
///
/// Checked against that description step by step, this is neither weaker nor stronger: the
/// same blocks are evicted (the cached ones the new block overlaps, before it moves in), the same
/// outputs are admitted (every one overlapping a cached input, in key order as the compaction
/// writes them, as X-Engine's walk over pre-sorted smallest keys does), and an admission costs no
/// device read, as a block "moved" from the compaction's buffer does not. The remembered set is
/// taken when the operation begins: a compaction here runs at once, so no block can leave the
/// cache between that moment and the admissions.
#[derive(Clone, Debug, Default)]
pub struct IncrementalWarmup {
    /// Input blocks cached when the operation began, by first key.
    cached: Vec<BlockInfo>,
}

impl WarmUpPolicy for IncrementalWarmup {
    fn name(&self) -> &'static str {
        WarmUpKind::IncrementalWarmup.name()
    }

    fn begin(&mut self, start: &BackgroundStart<'_>, cache: &BufferCache) -> Result<()> {
        self.cached = start
            .inputs
            .iter()
            .flat_map(|r| r.blocks.iter())
            .filter(|b| cache.contains(b.page))
            .copied()
            .collect();
        self.cached.sort_by_key(|b| (b.first_key, b.page));
        Ok(())
    }

    fn admit(&mut self, block: &BlockInfo, cache: &BufferCache) -> bool {
        let candidates = self.cached.partition_point(|b| b.first_key <= block.last_key);
        let mut overlaps = false;
        for old in &self.cached[..candidates] {
            if old.last_key >= block.first_key {
                overlaps = true;
                // Input blocks are clean (runs are written once, straight to the device), so the
                // eviction writes nothing back and cannot fail; one already gone is a no-op.
                let _ = cache.evict(old.page);
            }
        }
        overlaps
    }

    fn end(&mut self, _now: f64, _ok: bool) {
        self.cached.clear();
    }
}

/// RocksDB's `BlockBasedTableOptions::prepopulate_block_cache = kFlushOnly`: every data block a
/// flush writes is put into the block cache as it is written; compaction outputs are not.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrepopulateFlush {
    in_flush: bool,
}

impl WarmUpPolicy for PrepopulateFlush {
    fn name(&self) -> &'static str {
        WarmUpKind::PrepopulateFlush.name()
    }

    fn begin(&mut self, start: &BackgroundStart<'_>, _cache: &BufferCache) -> Result<()> {
        self.in_flush = start.kind == Background::Flush;
        Ok(())
    }

    fn admit(&mut self, _block: &BlockInfo, _cache: &BufferCache) -> bool {
        self.in_flush
    }

    fn admit_unkeyed(&mut self, _page: PageId, _cache: &BufferCache) -> bool {
        self.in_flush
    }

    fn end(&mut self, _now: f64, _ok: bool) {
        self.in_flush = false;
    }
}

/// Prepopulation extended to compactions: every data block a flush or a compaction writes is put
/// into the cache (what RocksDB's `kFlushOnly` would do if it also covered compaction outputs; the
/// "flush and compaction" variant of the baselines).
#[derive(Clone, Copy, Debug, Default)]
pub struct PrepopulateAll;

impl WarmUpPolicy for PrepopulateAll {
    fn name(&self) -> &'static str {
        WarmUpKind::PrepopulateAll.name()
    }

    fn admit(&mut self, _block: &BlockInfo, _cache: &BufferCache) -> bool {
        true
    }

    fn admit_unkeyed(&mut self, _page: PageId, _cache: &BufferCache) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kvstore::warmup::RunBlocks;
    use crate::storage::{Device, MemDevice};
    use std::sync::Arc;

    fn block(page: u64, first_key: u64, last_key: u64) -> BlockInfo {
        BlockInfo {
            page,
            first_key,
            last_key,
        }
    }

    #[test]
    fn every_baseline_is_built_by_its_kind_and_answers_to_its_name() {
        for kind in WarmUpKind::ALL {
            match kind.baseline() {
                Some(p) => assert_eq!(p.name(), kind.name()),
                None => assert_eq!(kind, WarmUpKind::Leaper),
            }
        }
    }

    #[test]
    fn incremental_warmup_admits_overlapping_outputs_and_evicts_what_they_replace() {
        let dev: Arc<dyn Device> = Arc::new(MemDevice::new(128));
        let first = dev.allocate(8);
        let page = vec![0u8; 128];
        for p in first..first + 8 {
            dev.write_page(p, &page).unwrap();
        }
        let cache = BufferCache::new(dev, 16);
        // Inputs: run 1 blocks [0,9] [10,19] [20,29]; run 2 blocks [5,25] [40,50]. Cached: [10,19]
        // and [40,50].
        let inputs = vec![
            RunBlocks {
                run: 1,
                level: 0,
                blocks: vec![
                    block(first, 0, 9),
                    block(first + 1, 10, 19),
                    block(first + 2, 20, 29),
                ],
            },
            RunBlocks {
                run: 2,
                level: 1,
                blocks: vec![block(first + 3, 5, 25), block(first + 4, 40, 50)],
            },
        ];
        cache.read(first + 1).unwrap();
        cache.read(first + 4).unwrap();
        let mut p = IncrementalWarmup::default();
        let start = BackgroundStart {
            kind: Background::Compaction,
            now: 0.0,
            inputs: &inputs,
            keys: None,
            blocks_to_merge: 5,
        };
        p.begin(&start, &cache).unwrap();
        assert!(
            !p.admit(&block(first + 5, 0, 9), &cache),
            "overlaps no cached block"
        );
        assert!(p.admit(&block(first + 6, 12, 30), &cache));
        assert!(!cache.contains(first + 1), "the replaced block is evicted");
        assert!(
            p.admit(&block(first + 7, 19, 19), &cache),
            "overlaps a remembered block"
        );
        assert!(!p.admit(&block(first + 7, 31, 39), &cache));
        assert!(p.admit(&block(first + 7, 45, 99), &cache));
        assert!(!cache.contains(first + 4));
        assert_eq!(cache.stats().evictions, 2);
        p.end(0.0, true);
        // A flush has no inputs: nothing is admitted.
        let flush = BackgroundStart {
            kind: Background::Flush,
            inputs: &[],
            ..start
        };
        p.begin(&flush, &cache).unwrap();
        assert!(!p.admit(&block(first, 0, 100), &cache));
    }

    #[test]
    fn prepopulation_admits_flushes_only_or_everything() {
        let cache = BufferCache::new(Arc::new(MemDevice::new(128)), 4);
        let start = |kind| BackgroundStart {
            kind,
            now: 0.0,
            inputs: &[],
            keys: None,
            blocks_to_merge: 0,
        };
        let b = block(0, 1, 2);
        let mut flush_only = PrepopulateFlush::default();
        let mut all = PrepopulateAll;
        for (kind, want) in [(Background::Flush, true), (Background::Compaction, false)] {
            flush_only.begin(&start(kind), &cache).unwrap();
            assert_eq!(flush_only.admit(&b, &cache), want);
            flush_only.end(0.0, true);
            all.begin(&start(kind), &cache).unwrap();
            assert!(all.admit(&b, &cache));
        }
        assert!(!NoWarmUp.admit(&b, &cache));
    }
}
