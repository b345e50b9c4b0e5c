//! Counted behaviour of the key-value store: block reads per get, invalidations, what each
//! baseline admits, bulk loads, corruption and bad input.

use super::sst::{max_value_len, read_index, HEADER_SIZE};
use super::*;
use crate::cache::BufferCache;
use crate::lsm::LeveledParams;
use crate::storage::{Device, Fault, FaultyDevice, MemDevice, PageId};
use crate::Error;
use std::collections::BTreeSet;
use std::sync::Arc;

const PAGE: usize = 512;

fn config(memtable_bytes: u64) -> KvConfig {
    KvConfig {
        memtable_bytes,
        leveled: LeveledParams {
            l0_trigger: 2,
            base_level_pages: 64,
            size_ratio: 4,
            target_run_pages: 4,
            max_levels: 4,
        },
        bloom_fp: Some(0.01),
        background_bytes_per_s: None,
    }
}

fn store_on(dev: Arc<dyn Device>, capacity: usize, kind: WarmUpKind) -> KvStore {
    let cache = Arc::new(BufferCache::new(dev, capacity));
    KvStore::new(cache, config(1 << 30), kind.baseline().unwrap()).unwrap()
}

fn store(capacity: usize, kind: WarmUpKind) -> (KvStore, Arc<dyn Device>) {
    let dev: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE));
    (store_on(dev.clone(), capacity, kind), dev)
}

/// A value that says which key and version it belongs to.
fn value(key: u64, version: u8) -> Vec<u8> {
    let mut v = vec![version; 40];
    v[..8].copy_from_slice(&key.to_le_bytes());
    v
}

/// Puts `keys` with `version` and flushes them as one run.
fn flush_keys(kv: &mut KvStore, keys: impl IntoIterator<Item = u64>, version: u8) {
    for k in keys {
        kv.put(k, &value(k, version)).unwrap();
    }
    kv.flush().unwrap();
}

fn pages_of(runs: &[RunBlocks]) -> BTreeSet<PageId> {
    runs.iter()
        .flat_map(|r| r.blocks.iter().map(|b| b.page))
        .collect()
}

fn resident(kv: &KvStore) -> BTreeSet<PageId> {
    kv.cache().resident().into_iter().collect()
}

#[test]
fn a_get_reads_one_data_block_cold_and_none_when_cached() {
    let (mut kv, dev) = store(64, WarmUpKind::Lru);
    flush_keys(&mut kv, (0..200).map(|k| k * 2), 1);
    let ops = kv.take_background();
    assert_eq!(ops.len(), 1);
    let run = kv.runs().next().unwrap();
    assert!(run.data_blocks() > 10);
    assert_eq!(ops[0].output_blocks, run.data_blocks());
    assert_eq!(
        ops[0].pages_written,
        run.pages(),
        "data blocks and index pages are written"
    );
    assert!(run.index_pages() >= 1);
    assert_eq!((ops[0].pages_read, ops[0].admitted), (0, 0));
    assert!(kv.cache().is_empty(), "no warm-up: the flush caches nothing");

    let reads = |d: &Arc<dyn Device>| d.stats().page_reads;
    let before = (reads(&dev), kv.cache().stats());
    assert_eq!(kv.get(34).unwrap(), Some(value(34, 1)));
    let c = kv.cache().stats().since(&before.1);
    assert_eq!((reads(&dev) - before.0, c.misses, c.hits), (1, 1, 0));
    // The same block again, and a neighbour in it: cache hits, no device read.
    let before = (reads(&dev), kv.cache().stats());
    assert_eq!(kv.get(34).unwrap(), Some(value(34, 1)));
    assert_eq!(kv.get(36).unwrap(), Some(value(36, 1)));
    let c = kv.cache().stats().since(&before.1);
    assert_eq!((reads(&dev) - before.0, c.misses, c.hits), (0, 0, 2));
    // Outside the run's key range: nothing read. Absent keys inside it: the Bloom filter answers
    // for nearly all of them.
    let before = reads(&dev) + kv.cache().stats().hits;
    assert_eq!(kv.get(10_000).unwrap(), None);
    assert_eq!(reads(&dev) + kv.cache().stats().hits, before);
    let before = reads(&dev) + kv.cache().stats().hits;
    for k in 0..199u64 {
        assert_eq!(kv.get(k * 2 + 1).unwrap(), None);
    }
    let probes = reads(&dev) + kv.cache().stats().hits - before;
    assert!(probes <= 10, "{probes} block reads for 199 absent keys");
    assert_eq!(kv.stats().gets, 4 + 199);
}

#[test]
fn filter_and_index_lookups_miss_once_per_block_then_hit() {
    let (mut kv, _) = store(64, WarmUpKind::Lru);
    flush_keys(&mut kv, (0..200).map(|k| k * 2), 1);
    let run = kv.runs().next().unwrap();
    let (blocks, index_pages) = (run.data_blocks(), run.index_pages());
    assert!(index_pages >= 2, "the test needs a run of several index pages");
    let per_page = blocks.div_ceil(index_pages);
    assert_eq!(kv.stats().meta(), MetaLookups::default());
    // the first get: the run's filter and one index page, both first needs
    kv.get(0).unwrap();
    let m = kv.stats().meta();
    assert_eq!((m.filter_misses, m.index_misses, m.hits()), (1, 1, 0));
    // the same key again: both hit
    kv.get(0).unwrap();
    let m = kv.stats().meta();
    assert_eq!(
        (m.filter_misses, m.index_misses, m.filter_hits, m.index_hits),
        (1, 1, 1, 1)
    );
    // every key: one filter lookup per get inside the run's key range 0..=398, one index lookup
    // per get the filter lets through (each present key), and each index page misses once
    for k in 0..400u64 {
        kv.get(k).unwrap();
    }
    let m = kv.stats().meta();
    assert_eq!(m.filter_hits + m.filter_misses, 2 + 399);
    assert_eq!(m.filter_misses, 1);
    assert_eq!(m.index_misses, index_pages);
    assert!(m.index_hits + m.index_misses >= 2 + 200, "{m:?}");
    assert!(per_page >= 1);
    // a scan positions once per run it reads, on an index page already needed: a hit
    let before = kv.stats().meta();
    kv.scan_blocks(10, 50).unwrap();
    let m = kv.stats().meta();
    assert_eq!(
        (m.index_hits - before.index_hits, m.misses() - before.misses()),
        (1, 0)
    );
    // a flushed run of new blocks starts cold again
    flush_keys(&mut kv, [1, 3], 2);
    let before = kv.stats().meta();
    kv.get(1).unwrap();
    let m = kv.stats().meta();
    assert_eq!(
        m.misses() - before.misses(),
        2,
        "the new run's filter and index page"
    );
}

#[test]
fn the_index_pages_on_the_device_match_the_in_memory_index() {
    let (mut kv, dev) = store(0, WarmUpKind::Lru);
    // 40-byte values: 8 entries per 512-byte block; 20 index entries per index page.
    flush_keys(&mut kv, 0..400, 1);
    let run = kv.runs().next().unwrap();
    assert_eq!(run.data_blocks(), 50);
    assert_eq!(run.index_pages(), 3);
    assert_eq!(read_index(dev.as_ref(), run).unwrap(), run.blocks());
    assert_eq!(kv.data_blocks(), 50);
    assert_eq!(kv.data_bytes(), 50 * PAGE as u64);
    assert_eq!(kv.live_keys_estimate(), 400);
    assert_eq!(dev.allocated_pages(), 53);
}

#[test]
fn corrupt_blocks_are_typed_errors() {
    let (mut kv, dev) = store(0, WarmUpKind::Lru);
    flush_keys(&mut kv, 0..64, 1);
    let blocks = kv.run_blocks()[0].blocks.clone();
    let mut page = vec![0u8; PAGE];
    let corrupt = |dev: &Arc<dyn Device>, b: &BlockInfo, f: &dyn Fn(&mut [u8])| {
        let mut p = vec![0u8; PAGE];
        dev.read_page(b.page, &mut p).unwrap();
        f(&mut p);
        dev.write_page(b.page, &p).unwrap();
    };
    // A bad magic number.
    corrupt(&dev, &blocks[0], &|p| p[0] = b'X');
    let e = kv.get(blocks[0].first_key).unwrap_err();
    assert!(
        matches!(e, Error::Corrupt { page, .. } if page == blocks[0].page),
        "{e}"
    );
    // An entry count larger than the page.
    corrupt(&dev, &blocks[1], &|p| {
        p[4..8].copy_from_slice(&1000u32.to_le_bytes())
    });
    assert!(matches!(kv.get(blocks[1].first_key), Err(Error::Corrupt { .. })));
    // A value pointing past the bytes used.
    corrupt(&dev, &blocks[2], &|p| {
        p[HEADER_SIZE + 8..HEADER_SIZE + 12].copy_from_slice(&(PAGE as u32).to_le_bytes())
    });
    assert!(matches!(kv.get(blocks[2].first_key), Err(Error::Corrupt { .. })));
    assert!(matches!(kv.scan(0, 63), Err(Error::Corrupt { .. })));
    // Keys out of order: found by scans and by the merge's checks against the index.
    dev.read_page(blocks[3].page, &mut page).unwrap();
    page[HEADER_SIZE..HEADER_SIZE + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    dev.write_page(blocks[3].page, &page).unwrap();
    assert!(matches!(
        kv.scan(blocks[3].first_key, blocks[3].last_key),
        Err(Error::Corrupt { .. })
    ));
    // An index page of the wrong kind.
    let run = kv.runs().next().unwrap();
    assert!(read_index(dev.as_ref(), run).is_ok());
    let index_page = run.first_page() + run.data_blocks();
    dev.read_page(index_page, &mut page).unwrap();
    page[2] = 1;
    dev.write_page(index_page, &page).unwrap();
    assert!(matches!(
        read_index(dev.as_ref(), kv.runs().next().unwrap()),
        Err(Error::Corrupt { .. })
    ));
}

#[test]
fn a_merge_of_a_corrupt_run_fails_and_changes_nothing() {
    let (mut kv, dev) = store(0, WarmUpKind::Lru);
    flush_keys(&mut kv, 0..64, 1);
    flush_keys(&mut kv, 0..64, 2); // moves the first run to L1
    let b = kv.run_blocks()[0].blocks[2];
    let mut p = vec![0u8; PAGE];
    dev.read_page(b.page, &mut p).unwrap();
    p[HEADER_SIZE..HEADER_SIZE + 8].copy_from_slice(&(b.last_key + 1).to_le_bytes());
    dev.write_page(b.page, &p).unwrap();
    let before = (kv.version().len(), dev.allocated_pages());
    kv.put(5, &value(5, 3)).unwrap();
    assert!(matches!(kv.flush(), Err(Error::Corrupt { .. })));
    assert_eq!(
        kv.version().len(),
        before.0 + 1,
        "the flush happened, the merge did not"
    );
    assert_eq!(kv.stats().failed, 1);
    let pages: u64 = kv.runs().map(|r| r.pages()).sum();
    assert_eq!(
        dev.allocated_pages(),
        pages,
        "the failed merge's outputs are freed"
    );
}

#[test]
fn a_failed_flush_keeps_the_memtable_and_leaks_nothing() {
    let faulty = Arc::new(FaultyDevice::new(Arc::new(MemDevice::new(PAGE))));
    let dev: Arc<dyn Device> = faulty.clone();
    let mut kv = store_on(dev.clone(), 16, WarmUpKind::PrepopulateAll);
    for k in 0..100 {
        kv.put(k, &value(k, 1)).unwrap();
    }
    faulty.arm(Fault::Never, Fault::Nth(5));
    assert!(matches!(kv.flush(), Err(Error::Io(_))));
    assert_eq!(dev.allocated_pages(), 0);
    assert!(
        kv.cache().is_empty(),
        "blocks admitted before the failure are dropped"
    );
    assert_eq!(kv.memtable_len(), 100);
    assert!(kv.take_background().is_empty());
    kv.flush().unwrap();
    assert_eq!(kv.get(42).unwrap(), Some(value(42, 1)));
    assert_eq!((kv.stats().flushes, kv.stats().failed), (1, 1));
}

#[test]
fn bad_input_is_refused_by_name() {
    let (mut kv, _) = store(8, WarmUpKind::Lru);
    let max = max_value_len(PAGE);
    let e = kv.put(7, &vec![0; max + 1]).unwrap_err();
    assert!(
        matches!(&e, Error::Config(m) if m.contains("key 7") && m.contains("does not fit")),
        "{e}"
    );
    assert_eq!((kv.stats().puts, kv.memtable_len()), (0, 0));
    kv.put(7, &vec![9; max]).unwrap();
    kv.flush().unwrap();
    assert_eq!(kv.get(7).unwrap(), Some(vec![9; max]));
    assert!(matches!(kv.scan(5, 4), Err(Error::Config(_))));
    assert!(matches!(kv.bulk_load([(1, vec![])]), Err(Error::Config(m)) if m.contains("empty")));

    let (mut kv, _) = store(8, WarmUpKind::Lru);
    assert!(
        matches!(kv.bulk_load([(2, vec![]), (2, vec![])]), Err(Error::Config(m)) if m.contains("increasing"))
    );
    assert!(matches!(
        kv.bulk_load([(2, vec![0; max + 1])]),
        Err(Error::Config(_))
    ));
    assert!(kv.version().is_empty());

    let cache = Arc::new(BufferCache::new(Arc::new(MemDevice::new(PAGE)), 4));
    let new = |c: KvConfig| KvStore::new(cache.clone(), c, Box::new(NoWarmUp));
    assert!(matches!(new(config(0)), Err(Error::Config(m)) if m.contains("memtable_bytes")));
    let bad_bloom = KvConfig {
        bloom_fp: Some(1.5),
        ..config(100)
    };
    assert!(matches!(new(bad_bloom), Err(Error::Config(m)) if m.contains("Bloom")));
    let mut bad_levels = config(100);
    bad_levels.leveled.size_ratio = 1;
    assert!(matches!(new(bad_levels), Err(Error::Config(m)) if m.contains("size_ratio")));
}

/// Flushes A (keys 0..200) and B (0..100): B's flush moves A to level 1. Returns the store with
/// both and A's and B's blocks.
fn two_runs(capacity: usize, kind: WarmUpKind) -> (KvStore, Arc<dyn Device>, RunBlocks, RunBlocks) {
    let (mut kv, dev) = store(capacity, kind);
    flush_keys(&mut kv, 0..200, 1);
    flush_keys(&mut kv, 0..100, 2);
    let runs = kv.run_blocks();
    assert_eq!(runs.len(), 2);
    let (b, a) = (runs[0].clone(), runs[1].clone());
    assert_eq!((b.level, a.level), (0, 1));
    let ops = kv.take_background();
    assert_eq!(ops.len(), 3, "two flushes and a trivial move");
    let mv = ops[2];
    assert!(mv.trivial_move && mv.kind == Background::Compaction);
    assert_eq!((mv.pages_read, mv.pages_written, mv.invalidated), (0, 0, 0));
    assert_eq!((mv.input_blocks, mv.output_level), (a.blocks.len() as u64, 1));
    (kv, dev, a, b)
}

/// Flushes C (keys 0..50), which merges C, B and A into level 1; returns C's flush and the merge.
fn merge_third(kv: &mut KvStore) -> (BackgroundOp, BackgroundOp) {
    flush_keys(kv, 0..50, 3);
    let ops = kv.take_background();
    assert_eq!(ops.len(), 2, "{ops:?}");
    assert!(!ops[1].trivial_move);
    assert_eq!((ops[1].input_runs, ops[1].output_level), (3, 1));
    (ops[0], ops[1])
}

#[test]
fn a_compaction_counts_the_cached_blocks_of_its_inputs_as_invalidations() {
    let (mut kv, dev, a, b) = two_runs(1024, WarmUpKind::Lru);
    // Read everything: every block of A and B is cached.
    let all = kv.scan(0, u64::MAX).unwrap();
    assert_eq!(all.len(), 200);
    let cached = pages_of(&[a.clone(), b.clone()]);
    assert_eq!(resident(&kv), cached);
    let (flush, merge) = merge_third(&mut kv);
    assert_eq!(flush.admitted, 0);
    assert_eq!(
        merge.input_blocks,
        (a.blocks.len() + b.blocks.len()) as u64 + flush.output_blocks
    );
    assert_eq!(
        merge.invalidated,
        cached.len() as u64,
        "every cached input block is invalidated"
    );
    assert_eq!((merge.admitted, merge.policy_evictions), (0, 0));
    assert_eq!(
        merge.pages_read, merge.input_blocks,
        "inputs are read once, from the device"
    );
    let outputs = kv.run_blocks();
    let out_pages: u64 = kv.runs().map(|r| r.pages()).sum();
    assert_eq!(merge.output_blocks, pages_of(&outputs).len() as u64);
    assert_eq!(merge.pages_written, out_pages);
    assert!(
        kv.cache().is_empty(),
        "no retired block stays cached, no output is admitted"
    );
    assert_eq!(
        kv.cache().stats().misses,
        cached.len() as u64,
        "merge reads bypass the cache"
    );
    assert_eq!(dev.allocated_pages(), out_pages);
    assert_eq!(kv.stats().invalidations, cached.len() as u64);
    assert_eq!(
        (kv.stats().flushes, kv.stats().compactions, kv.stats().moves),
        (3, 1, 1)
    );
}

#[test]
fn prepopulate_flush_admits_exactly_the_flushed_blocks() {
    let (mut kv, _, a, b) = two_runs(1024, WarmUpKind::PrepopulateFlush);
    // Both flushes admitted their blocks; the move changed nothing.
    assert_eq!(resident(&kv), pages_of(&[a.clone(), b.clone()]));
    assert_eq!(kv.stats().admitted, (a.blocks.len() + b.blocks.len()) as u64);
    assert_eq!(kv.cache().stats().prefetch_admissions, kv.stats().admitted);
    let (flush, merge) = merge_third(&mut kv);
    assert_eq!(flush.admitted, flush.output_blocks);
    assert_eq!(merge.admitted, 0);
    assert_eq!(
        merge.invalidated, merge.input_blocks,
        "every input block was cached"
    );
    assert!(kv.cache().is_empty());
    // Served from admitted blocks: hits that count as prefetch hits, no misses.
    flush_keys(&mut kv, 1000..1010, 4);
    assert_eq!(kv.get(1005).unwrap(), Some(value(1005, 4)));
    let c = kv.cache().stats();
    assert_eq!((c.misses, c.prefetch_hits), (0, 1));
}

#[test]
fn prepopulate_all_admits_every_written_block() {
    let (mut kv, _, _, _) = two_runs(1024, WarmUpKind::PrepopulateAll);
    let (flush, merge) = merge_third(&mut kv);
    assert_eq!(
        (flush.admitted, merge.admitted),
        (flush.output_blocks, merge.output_blocks)
    );
    assert_eq!(resident(&kv), pages_of(&kv.run_blocks()));
    // With a cache of 0 pages nothing can be admitted.
    let (mut kv, _, _, _) = two_runs(0, WarmUpKind::PrepopulateAll);
    let (flush, merge) = merge_third(&mut kv);
    assert_eq!((flush.admitted, merge.admitted), (0, 0));
}

#[test]
fn incremental_warmup_admits_exactly_the_overlapping_outputs() {
    let (mut kv, _, a, b) = two_runs(1024, WarmUpKind::IncrementalWarmup);
    assert!(
        kv.cache().is_empty(),
        "flushes admit nothing: they have no cached inputs"
    );
    // Cache one block of B (key 5) and two of A (keys 150 and 190, which B does not hold).
    for k in [5, 150, 190] {
        kv.get(k).unwrap();
    }
    let cached: Vec<BlockInfo> = a
        .blocks
        .iter()
        .chain(&b.blocks)
        .filter(|blk| kv.cache().contains(blk.page))
        .copied()
        .collect();
    assert_eq!(cached.len(), 3);
    let (flush, merge) = merge_third(&mut kv);
    assert_eq!(flush.admitted, 0);
    let outputs: Vec<BlockInfo> = kv.run_blocks().into_iter().flat_map(|r| r.blocks).collect();
    let want: BTreeSet<PageId> = outputs
        .iter()
        .filter(|o| {
            cached
                .iter()
                .any(|c| c.first_key <= o.last_key && o.first_key <= c.last_key)
        })
        .map(|o| o.page)
        .collect();
    assert!(!want.is_empty() && want.len() < outputs.len());
    assert_eq!(merge.admitted, want.len() as u64);
    assert_eq!(resident(&kv), want, "exactly the overlapping outputs are cached");
    assert_eq!(merge.policy_evictions, 3, "the old blocks are evicted before");
    assert_eq!(merge.invalidated, 0, "nothing cached was left to invalidate");
}

/// A move's or a drop's end does not end the merge the warmer was told of (a timed merge may
/// still be in progress on the store's clock when the next compaction moves a run).
#[test]
fn only_the_operation_a_warmer_began_ends_it() {
    use crate::lsm::{CompactionKind, LifecycleEvent, LifecycleObserver};
    use std::sync::atomic::{AtomicU64, Ordering};
    struct Ends(Arc<AtomicU64>);
    impl WarmUpPolicy for Ends {
        fn name(&self) -> &'static str {
            "ends"
        }
        fn end(&mut self, _now: f64, _ok: bool) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let ends = Arc::new(AtomicU64::new(0));
    let dev: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE));
    let warmer = CacheWarmer::new(Arc::new(BufferCache::new(dev, 8)), Box::new(Ends(ends.clone())));
    let started = |kind| LifecycleEvent::<u64>::CompactionStarted {
        kind,
        inputs: Vec::new(),
        output_level: 1,
    };
    let finished = |kind| LifecycleEvent::<u64>::CompactionFinished {
        kind,
        inputs: Vec::new(),
        outputs: Vec::new(),
    };
    warmer.on_event(&started(CompactionKind::Merge)).unwrap();
    for kind in [CompactionKind::Move, CompactionKind::Drop] {
        warmer.on_event(&started(kind)).unwrap();
        warmer.on_event(&finished(kind)).unwrap();
    }
    assert_eq!(ends.load(Ordering::SeqCst), 0, "the merge is still in progress");
    warmer.on_event(&finished(CompactionKind::Merge)).unwrap();
    assert_eq!(ends.load(Ordering::SeqCst), 1);
}

/// The block of `runs` (at `level`) that holds `key`.
fn block_with(runs: &[RunBlocks], level: usize, key: u64) -> BlockInfo {
    *runs
        .iter()
        .filter(|r| r.level == level)
        .flat_map(|r| &r.blocks)
        .find(|b| b.first_key <= key && key <= b.last_key)
        .unwrap()
}

/// A store of 1,024 cached pages under `kind` whose merges last one virtual second per page read
/// or written when `timed`, at time 0 with two runs flushed: A (keys 0..200, version 1, moved to
/// level 1) and B (0..100, version 2, level 0).
fn two_runs_timed(timed: bool, kind: WarmUpKind) -> (KvStore, Arc<dyn Device>) {
    let dev: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE));
    let cache = Arc::new(BufferCache::new(dev.clone(), 1024));
    let config = KvConfig {
        background_bytes_per_s: timed.then_some(PAGE as f64),
        ..config(1 << 30)
    };
    let mut kv = KvStore::new(cache, config, kind.baseline().unwrap()).unwrap();
    kv.set_now(0.0).unwrap();
    flush_keys(&mut kv, 0..200, 1);
    flush_keys(&mut kv, 0..100, 2);
    (kv, dev)
}

/// A merge that lasts its T1 on the virtual clock, as X-Engine's background compactions do
/// (Leaper §2.2, §6): Incremental Warmup evicts a cached input block when the merge writes the
/// output block that replaces it, but reads go to the inputs until the merge is installed at the
/// end, so a read between the two misses on the old block. Once installed, it hits the new one.
/// The same stream with untimed merges never misses.
#[test]
fn a_read_during_a_timed_merge_misses_where_incremental_warmup_evicted_the_old_block() {
    const KEY: u64 = 60;
    let run = |timed: bool| {
        // A (0..200, level 1 after a trivial move) and B (0..100, level 0); KEY's newest is B's.
        let (mut kv, _) = two_runs_timed(timed, WarmUpKind::IncrementalWarmup);
        assert!(!kv.merging(), "flushes and trivial moves are not timed");
        assert_eq!(kv.get(KEY).unwrap(), Some(value(KEY, 2)));
        let old = block_with(&kv.run_blocks(), 0, KEY);
        assert!(kv.cache().contains(old.page));
        kv.take_background();
        // C (0..50) merges C, B and A into level 1 at t = 10.
        kv.set_now(10.0).unwrap();
        let (_, merge) = merge_third(&mut kv);
        let new = block_with(&kv.run_blocks(), 1, KEY);
        (kv, merge, old, new)
    };

    let (mut kv, merge, old, new) = run(true);
    assert!(kv.merging());
    let t1 = (merge.pages_read + merge.pages_written) as f64;
    let outputs: Vec<BlockInfo> = kv.run_blocks().into_iter().flat_map(|r| r.blocks).collect();
    assert_eq!(
        merge.output_blocks,
        outputs.len() as u64,
        "counted as it was written"
    );
    let n = outputs.len() as f64;
    let j = outputs.iter().position(|b| b.page == new.page).unwrap() as f64;
    assert!(j + 1.0 < n, "the block is not the merge's last");
    // As the merge begins nothing is replaced yet: the old block is cached, a read hits it.
    let misses = kv.cache().stats().misses;
    assert_eq!(kv.get(KEY).unwrap(), Some(value(KEY, 2)));
    assert_eq!(kv.cache().stats().misses, misses);
    // Once the merge has written KEY's output block: the old block is evicted and the new one
    // admitted, but the merge is not installed, so the read goes to B and misses.
    kv.set_now(10.0 + t1 * (j + 1.0) / n + 1e-6).unwrap();
    assert!(kv.merging());
    assert!(kv.cache().contains(new.page) && !kv.cache().contains(old.page));
    assert_eq!(
        kv.get(KEY).unwrap(),
        Some(value(KEY, 2)),
        "answered by the inputs"
    );
    assert_eq!(
        kv.cache().stats().misses,
        misses + 1,
        "the old block read back from the device"
    );
    assert!(kv.cache().contains(old.page));
    // At the end the outputs are installed and the inputs freed: the new block answers, a hit.
    kv.set_now(10.0 + t1).unwrap();
    assert!(!kv.merging());
    assert!(!kv.cache().contains(old.page), "freed with its run");
    assert_eq!(kv.get(KEY).unwrap(), Some(value(KEY, 2)));
    assert_eq!(kv.cache().stats().misses, misses + 1);
    let st = kv.stats();
    assert_eq!(st.admitted, kv.cache().stats().prefetch_admissions);
    assert_eq!(st.invalidations, kv.cache().stats().invalidations);

    // Untimed, the same merge installs at once with the new block admitted: no miss.
    let (mut kv, _, old, new) = run(false);
    assert!(!kv.merging() && kv.cache().contains(new.page) && !kv.cache().contains(old.page));
    let misses = kv.cache().stats().misses;
    assert_eq!(kv.get(KEY).unwrap(), Some(value(KEY, 2)));
    assert_eq!(kv.cache().stats().misses, misses);
}

/// A timed merge keeps no copy of its output blocks while the clock catches up with them: a
/// block the policy admits later is read back from the device, uncounted, so the cache ends up
/// holding the bytes as written and the device counts exactly what the same merge untimed does.
#[test]
fn a_timed_merge_admits_its_blocks_read_back_uncounted() {
    let run = |timed: bool| {
        let (mut kv, dev) = two_runs_timed(timed, WarmUpKind::PrepopulateAll);
        kv.take_background();
        kv.set_now(10.0).unwrap();
        let (_, merge) = merge_third(&mut kv);
        assert_eq!(kv.merging(), timed);
        let before_end = kv.cache().stats().prefetch_admissions;
        kv.set_now(1e9).unwrap();
        assert!(!kv.merging());
        let on_the_clock = kv.cache().stats().prefetch_admissions - before_end;
        (kv, dev, merge, on_the_clock)
    };
    let (timed, timed_dev, timed_merge, on_the_clock) = run(true);
    let (untimed, untimed_dev, untimed_merge, untimed_on_the_clock) = run(false);
    assert!(timed_merge.output_blocks > 2);
    assert_eq!(timed.stats().admitted, untimed.stats().admitted);
    // Timed, every output block was admitted as the clock reached it; untimed, as it was written.
    assert_eq!(
        (on_the_clock, untimed_on_the_clock),
        (timed_merge.output_blocks, 0)
    );
    assert_eq!(
        timed_dev.stats(),
        untimed_dev.stats(),
        "read-backs are not counted"
    );
    assert_eq!(timed_merge.pages_read, untimed_merge.pages_read);
    assert_eq!(resident(&timed), pages_of(&timed.run_blocks()));
    let mut on_device = vec![0u8; PAGE];
    for page in pages_of(&timed.run_blocks()) {
        timed_dev.read_page_uncounted(page, &mut on_device).unwrap();
        assert_eq!(
            &timed.cache().read(page).unwrap()[..],
            &on_device[..],
            "page {page}"
        );
    }
    assert_eq!(timed.cache().stats().misses, 0);
    assert_eq!(timed_dev.stats(), untimed_dev.stats());
}

#[test]
fn bulk_load_fills_the_deepest_level_without_background_operations() {
    let (mut kv, dev) = store(64, WarmUpKind::PrepopulateAll);
    let n = 3000u64;
    kv.bulk_load((0..n).map(|k| (k * 3, value(k * 3, 0)))).unwrap();
    let deepest = kv.config().leveled.max_levels - 1;
    let v = kv.version();
    assert_eq!(v.len(), v.level(deepest).len());
    assert!(v.len() > 10);
    v.check().unwrap();
    for r in kv.runs() {
        assert!(r.data_blocks() <= kv.config().leveled.target_run_pages);
    }
    assert!(kv.take_background().is_empty());
    assert_eq!(kv.stats(), KvStats::default());
    assert!(kv.cache().is_empty(), "no warm-up during a bulk load");
    assert_eq!(kv.get(300).unwrap(), Some(value(300, 0)));
    assert_eq!(kv.get(301).unwrap(), None);
    assert_eq!(kv.scan(0, 29).unwrap().len(), 10);
    let pages: u64 = kv.runs().map(|r| r.pages()).sum();
    assert_eq!(dev.allocated_pages(), pages);
    assert_eq!(kv.live_keys_estimate(), n);
}

#[test]
fn a_bulk_load_cuts_its_runs_as_one_packing_of_every_record_would() {
    // Values of varied sizes, so that blocks hold different numbers of entries: the runs the
    // streamed load writes (batches of about two runs' bytes) are the whole stream's blocks cut
    // every target_run_pages blocks, with every key readable.
    let (mut kv, _dev) = store(64, WarmUpKind::Lru);
    let n = 5000u64;
    let sized = |k: u64| vec![(k % 251) as u8; 8 + (k * 37 % 90) as usize];
    kv.bulk_load((0..n).map(|k| (k * 2, sized(k)))).unwrap();
    let entries: Vec<(u64, super::sst::KvValue)> = (0..n)
        .map(|k| (k * 2, crate::lsm::Slot::Live(sized(k))))
        .collect();
    let blocks = super::sst::pack_blocks(&entries, kv.cache().page_size()).unwrap();
    let per_run = kv.config().leveled.target_run_pages as usize;
    let mut want: Vec<(u64, u64)> = blocks
        .chunks(per_run)
        .map(|c| (entries[c[0].start].0, c.len() as u64))
        .collect();
    let mut got: Vec<(u64, u64)> = kv
        .runs()
        .map(|r| (r.blocks()[0].first_key, r.data_blocks()))
        .collect();
    want.sort_unstable();
    got.sort_unstable();
    assert!(want.len() > 4, "several batches: {}", want.len());
    assert_eq!(got, want);
    for k in (0..n).step_by(97) {
        assert_eq!(kv.get(k * 2).unwrap(), Some(sized(k)));
    }
}

/// Records what the store tells a policy.
#[derive(Default)]
struct Recorder {
    accesses: Vec<(f64, u64, u64, Access)>,
    begins: Vec<(Background, f64, usize, u64)>,
    admits: u64,
    ends: Vec<bool>,
}

struct Recording(Arc<parking_lot::Mutex<Recorder>>);

impl WarmUpPolicy for Recording {
    fn name(&self) -> &'static str {
        "recording"
    }
    fn on_access(&mut self, now: f64, lo: u64, hi: u64, access: Access) {
        self.0.lock().accesses.push((now, lo, hi, access));
    }
    fn begin(&mut self, s: &BackgroundStart<'_>, _: &BufferCache) -> crate::Result<()> {
        let input_blocks: u64 = s.inputs.iter().map(|r| r.blocks.len() as u64).sum();
        assert_eq!(input_blocks, s.blocks_to_merge);
        self.0
            .lock()
            .begins
            .push((s.kind, s.now, s.inputs.len(), s.blocks_to_merge));
        Ok(())
    }
    fn admit(&mut self, _: &BlockInfo, _: &BufferCache) -> bool {
        self.0.lock().admits += 1;
        false
    }
    fn end(&mut self, _: f64, ok: bool) {
        self.0.lock().ends.push(ok);
    }
}

#[test]
fn the_policy_hears_every_access_and_every_rewriting_operation() {
    let rec = Arc::new(parking_lot::Mutex::new(Recorder::default()));
    let cache = Arc::new(BufferCache::new(Arc::new(MemDevice::new(PAGE)), 8));
    let mut kv = KvStore::new(cache, config(1 << 30), Box::new(Recording(rec.clone()))).unwrap();
    kv.set_now(1.5).unwrap();
    kv.put(1, b"x").unwrap();
    kv.delete(2).unwrap();
    kv.get(3).unwrap();
    kv.put(12, b"y").unwrap();
    kv.scan(4, 9).unwrap();
    // A scan is told clipped to the keys the store holds (1..=12); one beyond them is not told.
    kv.scan(0, u64::MAX).unwrap();
    kv.scan(13, 20).unwrap();
    {
        let r = rec.lock();
        assert_eq!(
            r.accesses,
            vec![
                (1.5, 1, 1, Access::Write),
                (1.5, 2, 2, Access::Write),
                (1.5, 3, 3, Access::Read),
                (1.5, 12, 12, Access::Write),
                (1.5, 4, 9, Access::Read),
                (1.5, 1, 12, Access::Read)
            ]
        );
    }
    kv.set_now(2.0).unwrap();
    kv.flush().unwrap();
    flush_keys(&mut kv, 0..100, 1);
    flush_keys(&mut kv, 0..100, 2);
    let ops = kv.take_background();
    let r = rec.lock();
    let rewriting: Vec<_> = ops.iter().filter(|o| !o.trivial_move).collect();
    assert_eq!(r.begins.len(), rewriting.len(), "moves are not told");
    assert_eq!(r.ends, vec![true; rewriting.len()]);
    assert_eq!(r.admits, rewriting.iter().map(|o| o.output_blocks).sum::<u64>());
    assert_eq!(r.begins[0], (Background::Flush, 2.0, 0, 0));
    assert!(r.begins.iter().any(|b| b.0 == Background::Compaction && b.2 >= 2));
    assert_eq!(kv.policy().name(), "recording");
}

#[test]
fn a_scan_reads_the_overlapping_blocks_through_the_cache() {
    let (mut kv, dev) = store(64, WarmUpKind::Lru);
    // 40-byte values: 8 entries per block, so block i holds keys 8i..8i+7.
    flush_keys(&mut kv, 0..400, 1);
    let reads = dev.stats().page_reads;
    assert_eq!(kv.scan(10, 13).unwrap().len(), 4);
    assert_eq!(dev.stats().page_reads - reads, 1, "one block holds 10..=13");
    assert_eq!(kv.scan(6, 17).unwrap().len(), 12);
    assert_eq!(
        dev.stats().page_reads - reads,
        3,
        "blocks 0 and 2 are new, block 1 is cached"
    );
    let c = kv.cache().stats();
    assert_eq!((c.misses, c.hits), (3, 1));
    // Memtable entries are merged in, newest first, and tombstones hide older values.
    kv.put(11, b"new").unwrap();
    kv.delete(12).unwrap();
    let got = kv.scan(10, 13).unwrap();
    assert_eq!(
        got,
        vec![(10, value(10, 1)), (11, b"new".to_vec()), (13, value(13, 1))]
    );
}

#[test]
fn the_store_can_move_between_threads() {
    fn send<T: Send>() {}
    send::<KvStore>();
}

/// A scan of the whole key space under Leaper's policy: the collector counts every key range an
/// access covers, so the store tells it only the keys it holds. Told `0..=u64::MAX`, the collector
/// walked 2^64 / 100 ranges (memory ran out).
#[test]
fn a_scan_of_the_whole_key_space_under_leaper_counts_only_the_held_ranges() {
    use crate::leaper::train::tests::{periodic_history, train_without_log};
    use crate::leaper::{GbdtParams, LeaperParams, LeaperPolicy, TrainParams};
    let params = TrainParams {
        steps: 2,
        gbdt: GbdtParams {
            rounds: 5,
            ..GbdtParams::default()
        },
        ..TrainParams::default()
    };
    let model = train_without_log(&periodic_history(20), &params).unwrap().0;
    let policy = LeaperPolicy::new(
        model,
        LeaperParams {
            sample_p: 1.0,
            ..LeaperParams::default()
        },
    )
    .unwrap();
    let cache = Arc::new(BufferCache::new(Arc::new(MemDevice::new(PAGE)), 8));
    let mut kv = KvStore::new(cache, config(2048), Box::new(policy)).unwrap();
    assert_eq!(kv.scan(0, u64::MAX).unwrap(), vec![], "an empty store");
    for k in 0..500 {
        kv.put(k * 3, &value(k * 3, 1)).unwrap();
    }
    kv.flush().unwrap();
    kv.put(1, &value(1, 2)).unwrap();
    let all = kv.scan(0, u64::MAX).unwrap();
    assert_eq!(all.len(), 501);
    assert_eq!(all[1], (1, value(1, 2)));
}
