//! Differential soak: long seeded operation streams against every engine configuration, each
//! with engine parameters drawn from the seed, on the counted memory device or on real files,
//! checked operation by operation against a brute-force oracle, audited after each stream, and a
//! failing stream shrunk (shortest failing prefix, then chunks removed while it still fails) and
//! printed with its configuration, so the reproduction is a few operations long.
//!
//! - The LSM R-tree's secondary-index strategies: the 16 combinations of the Update Memo's F, M, B,
//!   V switches, Eager and Validation with their variants, both flush triggers and both
//!   cleaning-counter rules; drawn page size, memory budget, cache size (0 included), merge
//!   tolerance and size limit, cleaning thresholds, Bloom filters. Oracle: a map of live objects,
//!   queried by rectangles. Audits: the Update Memo against the index, no zero-count memo entry,
//!   no leaked page.
//! - The block-based key-value store under every warm-up policy (the four baselines and Leaper,
//!   with a small model trained here and drawn prefetcher parameters); drawn page sizes, memtable
//!   budgets, leveled-compaction shapes, Bloom settings, caches. Oracle: a `BTreeMap` of
//!   put/delete/get/scan/append/flush streams. Audits: the level layout, the runs own every
//!   allocated page, the cache holds no block of a retired run, dropping the store frees every
//!   page.
//! - The time-series store ([`series`]): every memory level, with and without disk compaction.
//! - The record clusters ([`cluster`]): paginated and single-page.
//!
//! `cargo test` runs a short budget; `make soak` a long one: `SOAK_OPS` operations per
//! configuration (default 1,500 under `cargo test`), `SOAK_SEED` to start elsewhere. One summary
//! line per engine (operations checked, flushes, merges or compactions, mismatches) is printed
//! with `--nocapture`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::geom::{Point, Rect};
use lsmlab_engine::kvstore::{KvConfig, KvStore, WarmUpKind, WarmUpPolicy};
use lsmlab_engine::leaper::{
    train, AccessRecord, CollectorConfig, GbdtParams, LeaperParams, LeaperPolicy, RangeHistory, TrainParams,
    TrainingPrecursors,
};
use lsmlab_engine::lsm::{LeveledParams, MergePolicyConfig};
use lsmlab_engine::spatial::{CleaningCounters, FlushTrigger, LsmRTree, SpatialConfig, Strategy};
use lsmlab_engine::storage::{Device, FileDevice, MemDevice};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

mod common;
use common::{env_u64, hot_point, EXTENT};

/// Operations per configuration under `cargo test` (`SOAK_OPS` overrides it).
const DEFAULT_OPS: u64 = 1_500;

/// Every strategy the index knows (the strategy table's names: Eager and Validation with their
/// variants, and UM with each of the 16 subsets of F, M, B, V).
fn strategies() -> Vec<String> {
    lsmlab_engine::spatial::every_strategy_name()
}

/// One configuration: a strategy and the engine parameters drawn for it.
#[derive(Clone, Debug)]
struct Setup {
    strategy: String,
    file_device: bool,
    page_size: usize,
    cache_pages: usize,
    memory_budget_pages: u64,
    key_index_budget_pages: u64,
    tolerance: usize,
    max_mergeable_pages: u64,
    merges: bool,
    buffered_threshold: u32,
    vacuum_threshold: u32,
    bloom_fp: Option<f64>,
    live_trigger: bool,
    all_insert_counters: bool,
    eager_primary_lookup: bool,
}

impl Setup {
    fn draw(strategy: &str, rng: &mut impl Rng) -> Setup {
        Setup {
            strategy: strategy.to_string(),
            file_device: rng.random_bool(0.2),
            page_size: [256, 512, 1024][rng.random_range(0..3)],
            cache_pages: [0, 1, 4, 16, 256][rng.random_range(0..5)],
            memory_budget_pages: rng.random_range(2..=8),
            key_index_budget_pages: rng.random_range(1..=4),
            tolerance: rng.random_range(2..=5),
            max_mergeable_pages: rng.random_range(8..=200),
            merges: rng.random_bool(0.9),
            buffered_threshold: rng.random_range(1..=6),
            vacuum_threshold: rng.random_range(1..=8),
            bloom_fp: [None, Some(0.01), Some(0.3)][rng.random_range(0..3)],
            live_trigger: rng.random_bool(0.3),
            all_insert_counters: rng.random_bool(0.3),
            eager_primary_lookup: rng.random_bool(0.3),
        }
    }

    fn open(&self) -> (LsmRTree, Arc<dyn Device>, Option<tempfile::TempDir>) {
        let (device, dir): (Arc<dyn Device>, _) = if self.file_device {
            let dir = tempfile::tempdir().unwrap();
            let dev = FileDevice::create(&dir.path().join("soak.pages"), self.page_size).unwrap();
            (Arc::new(dev), Some(dir))
        } else {
            (Arc::new(MemDevice::new(self.page_size)), None)
        };
        let cache = Arc::new(BufferCache::new(device.clone(), self.cache_pages));
        let strategy: Strategy = self.strategy.parse().unwrap();
        let mut cfg = SpatialConfig::new(strategy, EXTENT, self.memory_budget_pages);
        cfg.merge_policy = if self.merges {
            MergePolicyConfig::Prefix {
                max_mergeable_pages: self.max_mergeable_pages,
                max_tolerance_components: self.tolerance,
            }
        } else {
            MergePolicyConfig::None
        };
        cfg.key_index_budget_pages = self.key_index_budget_pages;
        cfg.buffered_threshold = self.buffered_threshold;
        cfg.vacuum_threshold = self.vacuum_threshold;
        cfg.bloom_fp = self.bloom_fp;
        if self.live_trigger {
            cfg.flush_trigger = FlushTrigger::Live;
        }
        if self.all_insert_counters {
            cfg.cleaning_counters = CleaningCounters::AllInserts;
        }
        cfg.eager_primary_lookup = self.eager_primary_lookup;
        (LsmRTree::new(cfg, cache).unwrap(), device, dir)
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Insert(Point),
    Update(u64, Point),
    Delete(u64),
    Query(Rect),
}

/// A stream over a few hundred objects: inserts, many updates, deletes, re-inserts of deleted
/// objects (an update of a deleted object) and queries of any size.
fn stream(seed: u64, n: u64) -> Vec<Op> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let objects = rng.random_range(20..400u64);
    (0..n)
        .map(|_| match rng.random_range(0..100) {
            0..10 => Op::Insert(hot_point(&mut rng)),
            10..80 => Op::Update(rng.random_range(0..objects), hot_point(&mut rng)),
            80..86 => Op::Delete(rng.random_range(0..objects)),
            _ => {
                let c = hot_point(&mut rng);
                let side = rng.random::<f64>() * 60.0;
                Op::Query(EXTENT.box_around(c, side / 100.0))
            }
        })
        .collect()
}

/// What went wrong, and where.
#[derive(Debug)]
struct Mismatch {
    step: usize,
    what: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "step {}: {}", self.step, self.what)
    }
}

/// Counts of one engine's streams.
#[derive(Default)]
struct Totals {
    streams: u64,
    ops: u64,
    queries: u64,
    flushes: u64,
    merges: u64,
    mismatches: u64,
    /// Key-value store only: blocks Leaper had the cache admit.
    admitted: u64,
}

impl Totals {
    /// The summary line `make soak` prints for an engine; the labels say what the engine's
    /// reads, flushes and merges are.
    fn print(&self, engine: &str, reads: &str, flushes: &str, merges: &str) {
        println!(
            "soak ({engine}): {} configurations, {} operations checked ({} {reads}), {} {flushes}, {} {merges}, {} mismatches",
            self.streams, self.ops, self.queries, self.flushes, self.merges, self.mismatches
        );
    }
}

// The other engines' streams, in `tests/soak/` (not test targets of their own).
#[path = "soak/cluster.rs"]
mod cluster;
#[path = "soak/series.rs"]
mod series;

fn answer(index: &LsmRTree, rect: &Rect) -> Result<Vec<(u64, u64, u64)>, String> {
    let out = index.query(rect).map_err(|e| format!("query failed: {e}"))?;
    let mut v: Vec<_> = out
        .results
        .iter()
        .map(|e| (e.oid, e.point.x.to_bits(), e.point.y.to_bits()))
        .collect();
    v.sort_unstable();
    Ok(v)
}

fn expected(live: &BTreeMap<u64, Point>, rect: &Rect) -> Vec<(u64, u64, u64)> {
    live.iter()
        .filter(|(_, p)| rect.contains_point(**p))
        .map(|(&o, p)| (o, p.x.to_bits(), p.y.to_bits()))
        .collect()
}

/// Replays `ops` on a fresh index of `setup` against the oracle, then audits it. Counts into `totals`.
fn replay(setup: &Setup, ops: &[Op], totals: &mut Totals) -> Result<(), Mismatch> {
    let (mut index, device, _dir) = setup.open();
    let mut live: BTreeMap<u64, Point> = BTreeMap::new();
    let mut next = 1_000_000u64;
    let fail = |step: usize, what: String| Mismatch { step, what };
    for (step, op) in ops.iter().enumerate() {
        let done = match *op {
            Op::Insert(p) => {
                next += 1;
                live.insert(next, p);
                index.insert(next, p)
            }
            Op::Update(oid, p) => {
                let old = live.insert(oid, p);
                match old {
                    Some(old) => index.update(oid, Some(old), p),
                    None => index.insert(oid, p),
                }
            }
            Op::Delete(oid) => match live.remove(&oid) {
                Some(old) => index.delete(oid, Some(old)),
                None => Ok(()),
            },
            Op::Query(rect) => {
                totals.queries += 1;
                let got = answer(&index, &rect).map_err(|e| fail(step, e))?;
                let want = expected(&live, &rect);
                if got != want {
                    return Err(fail(
                        step,
                        format!("query {rect:?}: {} results, the oracle {}", got.len(), want.len()),
                    ));
                }
                Ok(())
            }
        };
        done.map_err(|e| fail(step, format!("{op:?} failed: {e}")))?;
        totals.ops += 1;
    }
    let end = ops.len();
    let all = Rect::new(-1.0, -1.0, 101.0, 101.0);
    if answer(&index, &all).map_err(|e| fail(end, e))? != expected(&live, &all) {
        return Err(fail(end, "final full scan differs".into()));
    }
    match index.audit_update_memo() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(fail(end, format!("Update Memo audit: {e}"))),
        Err(e) => return Err(fail(end, format!("Update Memo audit failed: {e}"))),
    }
    if index.update_memo().is_some_and(|um| um.has_zero_count_entry()) {
        return Err(fail(end, "an Update Memo entry with count 0".into()));
    }
    if index.stats().key_index.is_none() && device.allocated_pages() != index.disk_pages() {
        return Err(fail(
            end,
            format!(
                "{} pages allocated, {} held by disk components",
                device.allocated_pages(),
                index.disk_pages()
            ),
        ));
    }
    let st = index.stats().rtree;
    totals.flushes += st.flushes;
    totals.merges += st.merges;
    drop(index);
    if device.allocated_pages() != 0 {
        return Err(fail(
            end,
            format!(
                "{} pages still allocated after the index was dropped",
                device.allocated_pages()
            ),
        ));
    }
    Ok(())
}

/// The shortest failing prefix, then chunks removed (halving their size) while the stream still
/// fails; returns the minimal stream and why it fails.
fn shrink(setup: &Setup, ops: &[Op], first: &Mismatch) -> (Vec<Op>, String) {
    let fails = |ops: &[Op]| {
        replay(setup, ops, &mut Totals::default())
            .err()
            .map(|m| m.to_string())
    };
    let prefix = &ops[..(first.step + 1).min(ops.len())];
    let (minimal, why) = shrink_with(prefix, fails);
    (minimal, why.unwrap_or_else(|| first.to_string()))
}

/// Delta debugging over `ops` with the failure test `fails` (which must fail on `ops` itself).
/// Replays `ops` on a fresh engine of `setup`, counting the stream in `totals`; on a mismatch,
/// shrinks the stream to a minimal failing one and returns the failure's report: `name`, the
/// seed, the configuration and the shrunk operations.
fn check_stream<S: fmt::Debug, T: Clone + fmt::Debug>(
    name: &str,
    seed: u64,
    setup: &S,
    ops: &[T],
    totals: &mut Totals,
    replay: impl Fn(&S, &[T], &mut Totals) -> Result<(), Mismatch>,
) -> Option<String> {
    totals.streams += 1;
    let m = replay(setup, ops, totals).err()?;
    totals.mismatches += 1;
    let fails = |ops: &[T]| {
        replay(setup, ops, &mut Totals::default())
            .err()
            .map(|m| m.to_string())
    };
    let (minimal, why) = shrink_with(&ops[..(m.step + 1).min(ops.len())], fails);
    Some(format!(
        "{name} (seed {seed}): {m}\n  config: {setup:?}\n  shrunk to {} ops ({}):\n    {:?}",
        minimal.len(),
        why.unwrap_or_default(),
        minimal
    ))
}

fn shrink_with<T: Clone>(ops: &[T], fails: impl Fn(&[T]) -> Option<String>) -> (Vec<T>, Option<String>) {
    let mut cur = ops.to_vec();
    let mut why = None;
    let mut chunk = cur.len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        while i < cur.len() {
            let mut candidate = cur.clone();
            candidate.drain(i..(i + chunk).min(cur.len()));
            match fails(&candidate) {
                Some(m) => {
                    cur = candidate;
                    why = Some(m);
                }
                None => i += chunk,
            }
        }
        if chunk == 1 {
            return (cur, why);
        }
        chunk /= 2;
    }
}

#[test]
fn every_configuration_matches_the_oracle_on_long_random_streams() {
    let ops_per_config = env_u64("SOAK_OPS", DEFAULT_OPS);
    let first_seed = env_u64("SOAK_SEED", 0);
    let mut totals = Totals::default();
    let mut failures = Vec::new();
    for (i, name) in strategies().iter().enumerate() {
        let seed = first_seed.wrapping_add(i as u64);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x50a4);
        let setup = Setup::draw(name, &mut rng);
        let ops = stream(seed, ops_per_config);
        totals.streams += 1;
        if let Err(m) = replay(&setup, &ops, &mut totals) {
            totals.mismatches += 1;
            let (minimal, why) = shrink(&setup, &ops, &m);
            failures.push(format!(
                "{name} (seed {seed}): {m}\n  config: {setup:?}\n  shrunk to {} ops ({why}):\n    {:?}",
                minimal.len(),
                minimal
            ));
        }
    }
    totals.print("LSM R-tree", "queries", "flushes", "merges");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        totals.flushes > 0 && totals.merges > 0,
        "the streams crossed no flush or merge"
    );
}

#[test]
fn the_shrinker_cuts_a_failing_stream_to_its_cause() {
    // A planted bug stands in for the index: a stream fails when it deletes object 3 and queries
    // afterwards. Of 401 operations, the shrinker must keep exactly that delete and one query.
    let mut ops = stream(9, 400);
    ops.insert(10, Op::Delete(3));
    let bad = |ops: &[Op]| {
        let del = ops.iter().position(|o| matches!(o, Op::Delete(3)))?;
        ops[del..]
            .iter()
            .any(|o| matches!(o, Op::Query(_)))
            .then(|| "delete of 3 then a query".to_string())
    };
    assert!(bad(&ops).is_some());
    let (minimal, why) = shrink_with(&ops, bad);
    assert_eq!(minimal.len(), 2, "{minimal:?}");
    assert!(matches!(minimal[0], Op::Delete(3)) && matches!(minimal[1], Op::Query(_)));
    assert_eq!(why.as_deref(), Some("delete of 3 then a query"));
}

// ---- The key-value store ------------------------------------------------------------------------

const KV_KINDS: [WarmUpKind; 5] = WarmUpKind::ALL;

/// Virtual seconds per operation of a key-value stream, and the Leaper model's slot length: 200
/// operations a slot.
const KV_TICK: f64 = 0.001;
const LEAPER_SLOT_SECS: f64 = 0.2;

/// A small Leaper model, trained once per process on a log shaped like the key-value streams
/// (keys below 5,000 with a hot tenth, key ranges of 100 keys, 60 slots) and saved to a temporary
/// directory that lives as long as the process.
fn leaper_model_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let per_slot = (LEAPER_SLOT_SECS / KV_TICK) as usize;
        let log: Vec<AccessRecord> = (0..60 * per_slot)
            .map(|i| {
                let t = i as f64 * KV_TICK;
                let k = if rng.random_bool(0.3) {
                    rng.random_range(0..500)
                } else {
                    rng.random_range(0..5000)
                };
                match rng.random_range(0..10) {
                    0..5 => AccessRecord::write(t, k),
                    5..9 => AccessRecord::read(t, k),
                    _ => AccessRecord::scan(t, k, k + rng.random_range(0..300)),
                }
            })
            .collect();
        let collector = CollectorConfig {
            sample_p: 1.0,
            ..CollectorConfig::offline(100, LEAPER_SLOT_SECS)
        };
        let history = RangeHistory::from_log(&log, &collector).unwrap();
        let params = TrainParams {
            steps: 2,
            gbdt: GbdtParams {
                rounds: 8,
                ..GbdtParams::default()
            },
            ..TrainParams::default()
        };
        let precursors = TrainingPrecursors::of(&history, || log.iter().copied(), &params).unwrap();
        let (model, _) = train(&history, &precursors, &params).unwrap();
        model.save(dir.path()).unwrap();
        dir
    })
    .path()
}

#[derive(Clone, Debug)]
struct KvSetup {
    kind: WarmUpKind,
    /// Leaper only: the prefetcher's parameters (a threshold near 0 calls nearly every range hot, one
    /// near 1 nearly none).
    leaper: Option<LeaperParams>,
    file_device: bool,
    page_size: usize,
    cache_pages: usize,
    config: KvConfig,
}

impl KvSetup {
    fn draw(kind: WarmUpKind, rng: &mut impl Rng) -> KvSetup {
        let page_size = [512, 1024, 4096][rng.random_range(0..3)];
        KvSetup {
            kind,
            leaper: (kind == WarmUpKind::Leaper).then(|| LeaperParams {
                alpha_secs_per_block: [0.0, 0.001, 0.01][rng.random_range(0..3)],
                t2_secs: [0.0, 0.1, 1.0][rng.random_range(0..3)],
                sample_p: [0.05, 0.5, 1.0][rng.random_range(0..3)],
                seed: rng.random(),
                threshold: [None, Some(0.01), Some(0.3), Some(0.99)][rng.random_range(0..4)],
            }),
            file_device: rng.random_bool(0.2),
            page_size,
            cache_pages: [0, 1, 4, 64, 4096][rng.random_range(0..5)],
            config: KvConfig {
                memtable_bytes: (page_size * rng.random_range(2..8)) as u64,
                leveled: LeveledParams {
                    l0_trigger: rng.random_range(2..=5),
                    base_level_pages: rng.random_range(4..=16),
                    size_ratio: rng.random_range(2..=6),
                    target_run_pages: rng.random_range(1..=6),
                    max_levels: rng.random_range(3..=6),
                },
                bloom_fp: [None, Some(0.01), Some(0.3)][rng.random_range(0..3)],
                // Half the stores run compactions over virtual time, a few ticks long.
                background_bytes_per_s: rng.random_bool(0.5).then_some((page_size as f64) * 2_000.0),
            },
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum KvOp {
    /// Key and value length (the bytes derive from the op's position).
    Put(u64, usize),
    Delete(u64),
    Get(u64),
    Scan(u64, u64),
    /// A put above every key so far (sequential inserts make trivial moves).
    Append(usize),
    Flush,
}

fn kv_stream(seed: u64, n: u64) -> Vec<KvOp> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let keys = rng.random_range(50..5000u64);
    (0..n)
        .map(|_| match rng.random_range(0..100) {
            0..40 => KvOp::Put(rng.random_range(0..keys), rng.random_range(0..200)),
            40..50 => KvOp::Delete(rng.random_range(0..keys)),
            50..75 => KvOp::Get(rng.random_range(0..keys + keys / 10)),
            75..82 => {
                let a = rng.random_range(0..keys);
                KvOp::Scan(a, a + rng.random_range(0..keys / 4 + 1))
            }
            82..99 => KvOp::Append(rng.random_range(0..200)),
            _ => KvOp::Flush,
        })
        .collect()
}

fn value(i: usize, key: u64, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i as u64 ^ key ^ j as u64) as u8).collect()
}

fn kv_replay(setup: &KvSetup, ops: &[KvOp], totals: &mut Totals) -> Result<(), Mismatch> {
    let dir = setup.file_device.then(|| tempfile::tempdir().unwrap());
    let device: Arc<dyn Device> = match &dir {
        Some(d) => Arc::new(FileDevice::create(&d.path().join("kv.pages"), setup.page_size).unwrap()),
        None => Arc::new(MemDevice::new(setup.page_size)),
    };
    let cache = Arc::new(BufferCache::new(device.clone(), setup.cache_pages));
    let fail = |step: usize, what: String| Mismatch { step, what };
    let policy: Box<dyn WarmUpPolicy> = match setup.leaper {
        Some(params) => Box::new(
            LeaperPolicy::from_dir(leaper_model_dir(), params)
                .map_err(|e| fail(0, format!("loading the Leaper model: {e}")))?,
        ),
        None => setup.kind.baseline().expect("a baseline policy"),
    };
    let mut kv = KvStore::new(cache, setup.config, policy).map_err(|e| fail(0, format!("opening: {e}")))?;
    let mut oracle: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut next_append = 1_000_000u64;
    for (i, op) in ops.iter().enumerate() {
        kv.set_now(i as f64 * KV_TICK)
            .map_err(|e| fail(i, format!("advancing the clock to operation {i}: {e}")))?;
        let err = |e: lsmlab_engine::Error| fail(i, format!("{op:?} failed: {e}"));
        match *op {
            KvOp::Put(k, n) => {
                let v = value(i, k, n);
                kv.put(k, &v).map_err(err)?;
                oracle.insert(k, v);
            }
            KvOp::Append(n) => {
                next_append += 1;
                let v = value(i, next_append, n);
                kv.put(next_append, &v).map_err(err)?;
                oracle.insert(next_append, v);
            }
            KvOp::Delete(k) => {
                kv.delete(k).map_err(err)?;
                oracle.remove(&k);
            }
            KvOp::Get(k) => {
                totals.queries += 1;
                if kv.get(k).map_err(err)?.as_ref() != oracle.get(&k) {
                    return Err(fail(i, format!("get {k} differs from the oracle")));
                }
            }
            KvOp::Scan(a, b) => {
                totals.queries += 1;
                let want: Vec<(u64, Vec<u8>)> = oracle.range(a..=b).map(|(&k, v)| (k, v.clone())).collect();
                if kv.scan(a, b).map_err(err)? != want {
                    return Err(fail(i, format!("scan {a}..={b} differs from the oracle")));
                }
            }
            KvOp::Flush => kv.flush().map_err(err)?,
        }
        kv.take_background();
        if i % 256 == 255 {
            kv_cache_audit(&kv).map_err(|e| fail(i, e))?;
        }
        totals.ops += 1;
    }
    let end = ops.len();
    kv.flush().map_err(|e| fail(end, format!("final flush: {e}")))?;
    let all: Vec<(u64, Vec<u8>)> = oracle.iter().map(|(k, v)| (*k, v.clone())).collect();
    if kv
        .scan(0, u64::MAX)
        .map_err(|e| fail(end, format!("final scan: {e}")))?
        != all
    {
        return Err(fail(end, "final full scan differs".into()));
    }
    // Merges still in progress on the virtual clock end: their inputs are freed.
    if let Some(t) = kv.merges_end() {
        kv.set_now(t)
            .map_err(|e| fail(end, format!("ending the merges in progress: {e}")))?;
    }
    if kv.merging() {
        return Err(fail(end, "merges still in progress at the end of time".into()));
    }
    if kv
        .scan(0, u64::MAX)
        .map_err(|e| fail(end, format!("final scan: {e}")))?
        != all
    {
        return Err(fail(end, "final full scan after the merges ended differs".into()));
    }
    kv.version()
        .check()
        .map_err(|e| fail(end, format!("level layout: {e}")))?;
    let pages: u64 = kv.runs().map(|r| r.pages()).sum();
    if device.allocated_pages() != pages {
        return Err(fail(
            end,
            format!(
                "{} pages allocated, {pages} held by runs",
                device.allocated_pages()
            ),
        ));
    }
    kv_cache_audit(&kv).map_err(|e| fail(end, e))?;
    let st = kv.stats();
    totals.flushes += st.flushes;
    totals.merges += st.compactions;
    if setup.leaper.is_some() {
        totals.admitted += st.admitted;
    }
    drop(kv);
    if device.allocated_pages() != 0 {
        return Err(fail(
            end,
            format!(
                "{} pages still allocated after the store was dropped",
                device.allocated_pages()
            ),
        ));
    }
    Ok(())
}

/// Every cached page is a data block of a live run (a retired run's blocks were invalidated), or
/// of a run a merge in progress retired and still reads.
fn kv_cache_audit(kv: &KvStore) -> Result<(), String> {
    let live: Vec<(u64, u64)> = kv
        .runs()
        .chain(kv.retained_runs())
        .map(|r| (r.first_page(), r.first_page() + r.data_blocks()))
        .collect();
    match kv
        .cache()
        .resident()
        .into_iter()
        .find(|p| !live.iter().any(|&(a, b)| (a..b).contains(p)))
    {
        Some(p) => Err(format!("cached page {p} is no data block of a live run")),
        None => Ok(()),
    }
}

#[test]
fn every_warm_up_baseline_of_the_key_value_store_matches_the_oracle() {
    let ops_per_config = env_u64("SOAK_OPS", DEFAULT_OPS);
    let first_seed = env_u64("SOAK_SEED", 0);
    let mut totals = Totals::default();
    let mut failures = Vec::new();
    // Two drawn configurations per policy (Leaper's with a model trained here).
    for (i, kind) in KV_KINDS.iter().chain(KV_KINDS.iter()).enumerate() {
        let seed = first_seed.wrapping_add(1000 + i as u64);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x4b56);
        let setup = KvSetup::draw(*kind, &mut rng);
        let ops = kv_stream(seed, ops_per_config);
        failures.extend(check_stream(
            kind.name(),
            seed,
            &setup,
            &ops,
            &mut totals,
            kv_replay,
        ));
    }
    totals.print("key-value store", "gets and scans", "flushes", "compactions");
    println!(
        "soak (key-value store): Leaper had the cache admit {} blocks",
        totals.admitted
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        totals.flushes > 0 && totals.merges > 0,
        "the streams crossed no flush or compaction"
    );
}
