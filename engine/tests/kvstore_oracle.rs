//! The block-based key-value store against a `BTreeMap` oracle, with each baseline warm-up policy
//! and caches of 0, a few and many pages, on randomized put/delete/get/scan/flush streams over
//! 512-byte pages that cross many flushes, merges, trivial moves and levels. Besides the answers,
//! every stream checks what the background operations counted: what each policy admitted, that
//! invalidations add up, and that the runs own every allocated page.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::kvstore::{Background, BackgroundOp, KvConfig, KvStats, KvStore, WarmUpKind};
use lsmlab_engine::storage::{Device, MemDevice};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::sync::Arc;

mod common;
use common::small_kv_config;

const PAGE: usize = 512;
const KINDS: [WarmUpKind; 4] = [
    WarmUpKind::Lru,
    WarmUpKind::IncrementalWarmup,
    WarmUpKind::PrepopulateFlush,
    WarmUpKind::PrepopulateAll,
];
/// No cache, a few pages, more pages than the data.
const CAPACITIES: [usize; 3] = [0, 4, 4096];

fn config() -> KvConfig {
    small_kv_config(2048)
}

#[derive(Clone, Debug)]
enum Op {
    /// Key and value length; the bytes derive from the op's position.
    Put(u64, usize),
    Delete(u64),
    Get(u64),
    Scan(u64, u64),
    /// An insert above every key so far (sequential inserts make trivial moves).
    Append(usize),
    Flush,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..3000, 0usize..120).prop_map(|(k, n)| Op::Put(k, n)),
        2 => (0u64..3000).prop_map(Op::Delete),
        3 => (0u64..3200).prop_map(Op::Get),
        1 => (0u64..3000, 0u64..300).prop_map(|(a, w)| Op::Scan(a, a + w)),
        3 => (0usize..120).prop_map(Op::Append),
        1 => Just(Op::Flush),
    ]
}

fn random_ops(seed: u64, n: usize) -> Vec<Op> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n)
        .map(|_| match rng.random_range(0..60) {
            0..24 => Op::Put(rng.random_range(0..3000), rng.random_range(0..120)),
            24..32 => Op::Delete(rng.random_range(0..3000)),
            32..44 => Op::Get(rng.random_range(0..3200)),
            44..48 => {
                let a = rng.random_range(0..3000);
                Op::Scan(a, a + rng.random_range(0..300))
            }
            48..59 => Op::Append(rng.random_range(0..120)),
            _ => Op::Flush,
        })
        .collect()
}

fn bytes(i: usize, key: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|j| (i as u64 ^ key ^ j as u64).wrapping_mul(31) as u8)
        .collect()
}

/// What a stream did, for the callers' count assertions.
struct Outcome {
    stats: KvStats,
    ops: Vec<BackgroundOp>,
    deepest_level: usize,
}

/// Checks one background operation against what its policy promises.
fn check_op(op: &BackgroundOp, kind: WarmUpKind, capacity: usize) {
    assert!(op.admitted <= op.output_blocks, "{op:?}");
    if op.trivial_move {
        assert_eq!(op.kind, Background::Compaction);
        assert_eq!(
            (op.pages_read, op.pages_written, op.invalidated, op.admitted),
            (0, 0, 0, 0)
        );
        return;
    }
    match op.kind {
        Background::Flush => {
            assert_eq!(
                (op.input_blocks, op.pages_read, op.invalidated),
                (0, 0, 0),
                "{op:?}"
            );
            assert!(op.output_blocks >= 1 && op.pages_written > op.output_blocks);
        }
        Background::Compaction => {
            assert_eq!(
                op.pages_read, op.input_blocks,
                "inputs are read once from the device"
            );
            assert!(op.invalidated <= op.input_blocks);
            assert!(op.pages_written >= op.output_blocks);
        }
    }
    if capacity == 0 {
        assert_eq!((op.admitted, op.invalidated, op.policy_evictions), (0, 0, 0));
        return;
    }
    let flush = op.kind == Background::Flush;
    let want_all = match kind {
        WarmUpKind::Lru => false,
        WarmUpKind::PrepopulateFlush => flush,
        WarmUpKind::PrepopulateAll => true,
        _ => {
            // Incremental warm-up: a flush has no cached inputs to follow.
            if flush {
                assert_eq!(op.admitted, 0);
            }
            return;
        }
    };
    let want = if want_all { op.output_blocks } else { 0 };
    assert_eq!(op.admitted, want, "{kind}: {op:?}");
    assert_eq!(op.policy_evictions, 0, "{kind} evicts nothing itself");
}

/// Runs `ops` against the store and the oracle, checking every answer and every operation.
fn run(ops: &[Op], kind: WarmUpKind, capacity: usize) -> Outcome {
    run_with(ops, kind, capacity, None)
}

/// [`run`] with compactions that last `(pages read + written) x PAGE / bytes_per_s` virtual
/// seconds when `timed` is `Some(bytes_per_s)` (one operation takes a millisecond): reads during a
/// merge go to its inputs, and the policy is told of its blocks as the clock reaches them, so the
/// per-operation counts of [`check_op`] are not the operation's and only the totals are checked.
fn run_with(ops: &[Op], kind: WarmUpKind, capacity: usize, timed: Option<f64>) -> Outcome {
    let dev: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE));
    let cache = Arc::new(BufferCache::new(dev.clone(), capacity));
    let config = KvConfig {
        background_bytes_per_s: timed,
        ..config()
    };
    let mut kv = KvStore::new(cache, config, kind.baseline().unwrap()).unwrap();
    let mut merging_reads = 0u64;
    let mut oracle: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut next_append = 1_000_000u64;
    let mut all_ops = Vec::new();
    let mut deepest_level = 0;
    for (i, op) in ops.iter().enumerate() {
        kv.set_now(i as f64 * 0.001).unwrap();
        match *op {
            Op::Put(k, n) => {
                let v = bytes(i, k, n);
                kv.put(k, &v).unwrap();
                oracle.insert(k, v);
            }
            Op::Append(n) => {
                next_append += 1;
                let v = bytes(i, next_append, n);
                kv.put(next_append, &v).unwrap();
                oracle.insert(next_append, v);
            }
            Op::Delete(k) => {
                kv.delete(k).unwrap();
                oracle.remove(&k);
            }
            Op::Get(k) => {
                merging_reads += u64::from(kv.merging());
                assert_eq!(kv.get(k).unwrap().as_ref(), oracle.get(&k), "op {i}: get {k}")
            }
            Op::Scan(a, b) => {
                let want: Vec<(u64, Vec<u8>)> = oracle.range(a..=b).map(|(&k, v)| (k, v.clone())).collect();
                assert_eq!(kv.scan(a, b).unwrap(), want, "op {i}: scan {a}..={b}");
            }
            Op::Flush => kv.flush().unwrap(),
        }
        for op in kv.take_background() {
            if timed.is_none() {
                check_op(&op, kind, capacity);
            }
            all_ops.push(op);
        }
        assert!(kv.cache().len() <= capacity);
        if let Some(l) = kv.version().runs().map(|r| r.level).max() {
            deepest_level = deepest_level.max(l);
        }
    }
    kv.version().check().unwrap();
    // Everything, through every path.
    let all: Vec<(u64, Vec<u8>)> = oracle.iter().map(|(k, v)| (*k, v.clone())).collect();
    assert_eq!(kv.scan(0, u64::MAX).unwrap(), all);
    for k in (0..3100).chain(1_000_000..next_append + 2) {
        assert_eq!(kv.get(k).unwrap().as_ref(), oracle.get(&k), "final get {k}");
    }
    kv.flush().unwrap();
    all_ops.extend(kv.take_background());
    assert_eq!(kv.scan(0, u64::MAX).unwrap(), all);
    // Let any merge in progress end.
    if let Some(t) = kv.merges_end() {
        kv.set_now(t).unwrap();
    }
    assert!(!kv.merging());
    assert_eq!(kv.scan(0, u64::MAX).unwrap(), all);
    if timed.is_some() {
        assert!(merging_reads > 0, "no get met a merge in progress");
    }
    // The runs own every allocated page: nothing leaked by flushes or merges.
    let pages: u64 = kv.runs().map(|r| r.pages()).sum();
    assert_eq!(dev.allocated_pages(), pages);
    // The counters add up.
    let st = kv.stats();
    let count = |f: &dyn Fn(&BackgroundOp) -> bool| all_ops.iter().filter(|o| f(o)).count() as u64;
    assert_eq!(st.flushes, count(&|o| o.kind == Background::Flush));
    assert_eq!(st.moves, count(&|o| o.trivial_move));
    assert_eq!(
        st.compactions,
        count(&|o| o.kind == Background::Compaction && !o.trivial_move)
    );
    let sum = |f: &dyn Fn(&BackgroundOp) -> u64| all_ops.iter().map(f).sum::<u64>();
    if timed.is_none() {
        assert_eq!(st.invalidations, sum(&|o| o.invalidated));
        assert_eq!(st.admitted, sum(&|o| o.admitted));
    }
    assert_eq!(st.invalidations, kv.cache().stats().invalidations);
    assert_eq!(st.admitted, kv.cache().stats().prefetch_admissions);
    assert_eq!(st.failed, 0);
    assert_eq!(kv.data_blocks(), kv.runs().map(|r| r.data_blocks()).sum::<u64>());
    Outcome {
        stats: st,
        ops: all_ops,
        deepest_level,
    }
}

#[test]
fn fixed_seeds_with_every_baseline_and_cache_size_cross_many_flushes_merges_and_levels() {
    for (i, kind) in KINDS.into_iter().enumerate() {
        for (j, capacity) in CAPACITIES.into_iter().enumerate() {
            let seed = 100 + (i * CAPACITIES.len() + j) as u64;
            let out = run(&random_ops(seed, 5000), kind, capacity);
            let st = out.stats;
            let what = format!("{kind}, {capacity} pages, seed {seed}");
            assert!(st.flushes >= 100, "{what}: {} flushes", st.flushes);
            assert!(st.compactions >= 50, "{what}: {} merges", st.compactions);
            assert!(st.moves >= 5, "{what}: {} trivial moves", st.moves);
            assert!(
                out.deepest_level >= 2,
                "{what}: runs reached level {} only",
                out.deepest_level
            );
            if capacity > 4 && kind != WarmUpKind::IncrementalWarmup {
                // With a cache larger than the data, merges retire cached blocks.
                assert!(st.invalidations > 0, "{what}: no invalidation");
            }
            if capacity > 0 && kind != WarmUpKind::Lru {
                assert!(st.admitted > 0, "{what}: nothing admitted");
            }
            if kind == WarmUpKind::IncrementalWarmup && capacity > 4 {
                let merges: Vec<_> = out
                    .ops
                    .iter()
                    .filter(|o| !o.trivial_move && o.kind == Background::Compaction)
                    .collect();
                assert!(
                    merges.iter().any(|o| o.admitted > 0 && o.policy_evictions > 0),
                    "{what}"
                );
            }
        }
    }
}

/// Compactions over virtual time: every answer matches the oracle while merges are in progress
/// (reads go to their inputs) and after, with every baseline and cache size; every page is freed
/// once the merges end; the policies' admissions and the invalidations add up to the cache's.
#[test]
fn timed_merges_answer_like_the_oracle_and_free_every_page() {
    for (i, kind) in KINDS.into_iter().enumerate() {
        for (j, capacity) in CAPACITIES.into_iter().enumerate() {
            let seed = 300 + (i * CAPACITIES.len() + j) as u64;
            // A merge of ~20 pages lasts ~10 operations.
            let out = run_with(
                &random_ops(seed, 3000),
                kind,
                capacity,
                Some(PAGE as f64 * 2_000.0),
            );
            let st = out.stats;
            let what = format!("{kind}, {capacity} pages, seed {seed}");
            assert!(st.compactions >= 20, "{what}: {} merges", st.compactions);
            if capacity > 0 && kind != WarmUpKind::Lru {
                assert!(st.admitted > 0, "{what}: nothing admitted");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    #[test]
    fn random_streams_match_the_oracle(
        ops in proptest::collection::vec(op_strategy(), 300..2500),
        kind in 0usize..4,
        capacity in 0usize..3,
    ) {
        run(&ops, KINDS[kind], CAPACITIES[capacity]);
    }
}

/// `scan_blocks` does the I/O of `scan`: a twin store that answers every scan with it keeps the
/// same cache counters, the same resident pages and the same store counters after every operation,
/// with every baseline policy and cache size; the blocks it reports are the cache reads it made.
#[test]
fn scan_blocks_reads_what_scan_reads() {
    for (i, kind) in KINDS.into_iter().enumerate() {
        for capacity in CAPACITIES {
            let ops = random_ops(500 + i as u64, 1500);
            let open = || {
                let dev: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE));
                let cache = Arc::new(BufferCache::new(dev, capacity));
                KvStore::new(cache, config(), kind.baseline().unwrap()).unwrap()
            };
            let (mut a, mut b) = (open(), open());
            let mut next_append = 1_000_000u64;
            let mut scans = 0;
            for (n, op) in ops.iter().enumerate() {
                for kv in [&mut a, &mut b] {
                    kv.set_now(n as f64 * 0.001).unwrap();
                }
                match *op {
                    Op::Put(k, len) => {
                        let v = bytes(n, k, len);
                        a.put(k, &v).unwrap();
                        b.put(k, &v).unwrap();
                    }
                    Op::Append(len) => {
                        next_append += 1;
                        let v = bytes(n, next_append, len);
                        a.put(next_append, &v).unwrap();
                        b.put(next_append, &v).unwrap();
                    }
                    Op::Delete(k) => {
                        a.delete(k).unwrap();
                        b.delete(k).unwrap();
                    }
                    Op::Get(k) => assert_eq!(a.get(k).unwrap(), b.get(k).unwrap()),
                    Op::Scan(lo, hi) => {
                        a.scan(lo, hi).unwrap();
                        let before = b.cache().stats();
                        let read = b.scan_blocks(lo, hi).unwrap();
                        let d = b.cache().stats().since(&before);
                        assert_eq!(read, d.hits + d.misses, "op {n}: scan {lo}..={hi}");
                        scans += u64::from(read > 0);
                    }
                    Op::Flush => {
                        a.flush().unwrap();
                        b.flush().unwrap();
                    }
                }
                assert_eq!(a.cache().stats(), b.cache().stats(), "{kind}, {capacity}: op {n}");
                assert_eq!(a.take_background(), b.take_background(), "op {n}");
            }
            let mut ra = a.cache().resident();
            let mut rb = b.cache().resident();
            ra.sort_unstable();
            rb.sort_unstable();
            assert_eq!(ra, rb, "{kind}, {capacity}");
            assert_eq!(a.stats(), b.stats());
            assert!(scans >= 50, "{kind}, {capacity}: {scans} scans read blocks");
        }
    }
}
