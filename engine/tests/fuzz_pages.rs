//! Hostile pages: every page decoder of the engine fed garbage through the device.
//!
//! Each target builds a small structure on a memory device (deterministic from a fixed seed),
//! then arms a [`Hostile`] device that hands back one of the written pages mutated: random bytes,
//! flipped bits, a header word set to an extreme value, a zeroed tail (a torn write), or another
//! page's bytes (a misdirected read). Then reads, scans, more writes, flushes and merges run over
//! it. The property: no panic, no hang, no unbounded allocation; a corrupt page is either rejected
//! with a typed error or decodes into something the structure can still answer from (a memory
//! device has no checksum, so a mutated value can come back as a value). The device decides which
//! page and how; proptest chooses and shrinks a failing case to the minimal mutation.
//!
//! Targets: the block-based key-value store (SST data blocks), the leveled key-value LSM and the
//! prefix-merged LSM B+-tree (B+-tree leaf and internal pages), the LSM R-tree under Eager,
//! Validation and the Update Memo (disk R-tree pages, deleted-key and primary-key B+-trees), the
//! time-series store's series pages under every layout, and both record-cluster layouts (cluster
//! data and map pages).
//!
//! Budget: `FUZZ_CASES` cases per target (default 16, a few seconds in all); `make fuzz` runs
//! many more and prints the executions per target.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::cluster::{self, ClusterOptions, Layout as ClusterLayout, Rid};
use lsmlab_engine::geom::{Point, Rect};
use lsmlab_engine::kvstore::{KvStore, NoWarmUp};
use lsmlab_engine::lsm::{CompactionConfig, LsmBTree, LsmKv, MergePolicyConfig};
use lsmlab_engine::series::{CompactionParams, Layout as SeriesLayout, SeriesConfig, SeriesStore};
use lsmlab_engine::spatial::{LsmRTree, SpatialConfig, Strategy as SpatialStrategy};
use lsmlab_engine::storage::{Device, IoStats, MemDevice, PageId};
use lsmlab_engine::{Error, Result};
use parking_lot::Mutex;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

mod common;
use common::{small_kv_config, small_leveled, small_spatial_config, EXTENT};

/// How a page comes back from the device.
#[derive(Clone, Debug)]
enum Mutation {
    /// Every byte random (from this seed).
    Random(u64),
    /// These bytes (offset modulo the page size) XORed with these non-zero masks.
    Flip(Vec<(usize, u8)>),
    /// A little-endian word of `width` bytes at `at` (modulo the page size) set to `value`.
    Word { at: usize, width: usize, value: u64 },
    /// Every byte from `from` (modulo the page size) zeroed: a torn or short write.
    ZeroTail { from: usize },
    /// The bytes of another written page (index modulo the written pages): a misdirected read.
    Other(usize),
}

impl Mutation {
    fn apply(&self, page: &mut [u8], other: impl Fn(usize, &mut [u8])) {
        let n = page.len();
        match self {
            Mutation::Random(seed) => Xoshiro256PlusPlus::seed_from_u64(*seed).fill(page),
            Mutation::Flip(flips) => {
                for &(at, mask) in flips {
                    page[at % n] ^= mask;
                }
            }
            Mutation::Word { at, width, value } => {
                let at = at % n;
                let bytes = value.to_le_bytes();
                let w = (*width).min(n - at);
                page[at..at + w].copy_from_slice(&bytes[..w]);
            }
            Mutation::ZeroTail { from } => page[from % n..].fill(0),
            Mutation::Other(i) => other(*i, page),
        }
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let extreme = prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::from(u16::MAX)),
        Just(u64::from(u32::MAX)),
        Just(u64::from(u32::MAX) - 1),
        Just(u64::MAX),
        Just(1 << 31),
        0u64..70_000,
        any::<u64>(),
    ];
    prop_oneof![
        any::<u64>().prop_map(Mutation::Random),
        prop::collection::vec((0usize..4096, 1u8..=255), 1..8).prop_map(Mutation::Flip),
        // Header words mostly (the first 64 bytes), anywhere sometimes.
        (
            prop_oneof![3 => 0usize..64, 1 => 0usize..4096],
            prop_oneof![Just(1usize), Just(2), Just(4), Just(8)],
            extreme
        )
            .prop_map(|(at, width, value)| Mutation::Word { at, width, value }),
        (0usize..4096).prop_map(|from| Mutation::ZeroTail { from }),
        any::<usize>().prop_map(Mutation::Other),
    ]
}

/// A memory device that remembers the live pages written and, once armed, returns one of them
/// mutated on every read.
struct Hostile {
    inner: MemDevice,
    written: Mutex<BTreeSet<PageId>>,
    armed: Mutex<Option<(PageId, Mutation)>>,
    /// Reads that returned the mutated page.
    hits: AtomicU64,
}

impl Hostile {
    fn new(page_size: usize) -> Arc<Hostile> {
        Arc::new(Hostile {
            inner: MemDevice::new(page_size),
            written: Mutex::new(BTreeSet::new()),
            armed: Mutex::new(None),
            hits: AtomicU64::new(0),
        })
    }

    /// Arms `m` on the `pick`-th written page (modulo the pages written); false if none was.
    fn arm(&self, pick: usize, m: Mutation) -> bool {
        let written = self.written.lock();
        if written.is_empty() {
            return false;
        }
        let id = *written.iter().nth(pick % written.len()).unwrap();
        *self.armed.lock() = Some((id, m));
        true
    }
}

impl Device for Hostile {
    fn page_size(&self) -> usize {
        self.inner.page_size()
    }
    fn allocate(&self, count: u64) -> PageId {
        self.inner.allocate(count)
    }
    fn free(&self, first: PageId, count: u64) {
        let mut written = self.written.lock();
        for id in first..first + count {
            written.remove(&id);
        }
        self.inner.free(first, count)
    }
    fn write_page(&self, id: PageId, data: &[u8]) -> Result<()> {
        self.inner.write_page(id, data)?;
        self.written.lock().insert(id);
        Ok(())
    }
    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.inner.read_page(id, buf)?;
        let armed = self.armed.lock().clone();
        if let Some((target, m)) = armed.filter(|(t, _)| *t == id) {
            let _ = target;
            self.hits.fetch_add(1, Ordering::Relaxed);
            let written: Vec<PageId> = self.written.lock().iter().copied().collect();
            m.apply(buf, |i, page| {
                let other = written[i % written.len()];
                // A freed page reads as an error; leave the bytes as they are then.
                let _ = self.inner.read_page(other, page);
            });
        }
        Ok(())
    }
    fn read_page_uncounted(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.inner.read_page_uncounted(id, buf)
    }
    fn sync(&self) -> Result<()> {
        self.inner.sync()
    }
    fn stats(&self) -> IoStats {
        self.inner.stats()
    }
    fn allocated_pages(&self) -> u64 {
        self.inner.allocated_pages()
    }
}

/// What the armed part of a case saw.
#[derive(Default)]
struct Tally {
    ok: u64,
    corrupt: u64,
    other_err: u64,
}

impl Tally {
    fn see<T>(&mut self, r: Result<T>) {
        match r {
            Ok(_) => self.ok += 1,
            Err(Error::Corrupt { .. } | Error::CorruptEntry { .. }) => self.corrupt += 1,
            Err(e) => {
                // Every error must say something.
                assert!(!e.to_string().trim().is_empty(), "an error with an empty message");
                self.other_err += 1;
            }
        }
    }
}

/// Cases per target: `FUZZ_CASES`, or a short default for `cargo test`.
fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16)
}

/// Aborts the process (with the case) if one case runs longer than this: a decoder looping on a
/// corrupt page (e.g. a cycle of chained pages) shows up as a failure, not a hung test.
const CASE_LIMIT: Duration = Duration::from_secs(120);

/// One watchdog per target: the case being run and when it started.
struct Watchdog {
    current: Arc<Mutex<Option<(Instant, String)>>>,
}

impl Watchdog {
    fn start(target: &'static str) -> Watchdog {
        let current: Arc<Mutex<Option<(Instant, String)>>> = Arc::new(Mutex::new(None));
        let seen = Arc::downgrade(&current);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            let Some(current) = seen.upgrade() else { return };
            let late = current
                .lock()
                .as_ref()
                .filter(|(at, _)| at.elapsed() > CASE_LIMIT)
                .map(|(_, what)| what.clone());
            if let Some(what) = late {
                eprintln!("{target}: a case ran over {CASE_LIMIT:?} (a loop on a corrupt page?): {what}");
                std::process::abort();
            }
        });
        Watchdog { current }
    }

    fn enter(&self, what: String) {
        *self.current.lock() = Some((Instant::now(), what));
    }

    fn leave(&self) {
        *self.current.lock() = None;
    }
}

/// Runs `cases()` cases of `target`: `build` fills a fresh hostile device, `exercise` runs the
/// armed part and tallies the answers. Prints the executions, how many reads met the mutated
/// page and how the operations ended.
fn fuzz<S>(
    target: &'static str,
    page_size: usize,
    build: impl Fn(Arc<dyn Device>) -> S,
    exercise: impl Fn(&mut S, &mut Tally),
) {
    let dog = Watchdog::start(target);
    let runs = AtomicU64::new(0);
    let hits = AtomicU64::new(0);
    let totals = Mutex::new(Tally::default());
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&(any::<usize>(), mutation()), |(pick, m)| {
        let dev = Hostile::new(page_size);
        let mut s = build(dev.clone());
        if !dev.arm(pick, m.clone()) {
            return Ok(());
        }
        dog.enter(format!("page pick {pick}, {m:?}"));
        let mut tally = Tally::default();
        let outcome = catch_unwind(AssertUnwindSafe(|| exercise(&mut s, &mut tally)));
        dog.leave();
        runs.fetch_add(1, Ordering::Relaxed);
        hits.fetch_add(dev.hits.load(Ordering::Relaxed), Ordering::Relaxed);
        if let Err(panic) = outcome {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            return Err(TestCaseError::fail(format!(
                "{target}: panic on a corrupt page: {msg}"
            )));
        }
        let mut t = totals.lock();
        t.ok += tally.ok;
        t.corrupt += tally.corrupt;
        t.other_err += tally.other_err;
        Ok(())
    });
    let t = totals.into_inner();
    println!(
        "fuzz {target}: {} executions, {} reads of a mutated page; operations: {} answered, {} refused as corrupt, {} other errors",
        runs.load(Ordering::Relaxed),
        hits.load(Ordering::Relaxed),
        t.ok,
        t.corrupt,
        t.other_err
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(runs.load(Ordering::Relaxed) > 0, "{target}: no case ran");
    assert!(
        hits.load(Ordering::Relaxed) > 0,
        "{target}: no read ever met a mutated page"
    );
}

fn rng() -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(7)
}

#[test]
fn kvstore_blocks() {
    let config = small_kv_config(1024);
    fuzz(
        "kvstore (SST data blocks)",
        512,
        |dev| {
            let cache = Arc::new(BufferCache::new(dev, 0));
            let mut kv = KvStore::new(cache, config, Box::new(NoWarmUp)).unwrap();
            let mut r = rng();
            for i in 0..400u64 {
                let k = r.random_range(0..600u64);
                let v: Vec<u8> = (0..r.random_range(0..40)).map(|j| (i + j) as u8).collect();
                if r.random_bool(0.1) {
                    kv.delete(k).unwrap();
                } else {
                    kv.put(k, &v).unwrap();
                }
            }
            kv.flush().unwrap();
            kv
        },
        |kv, t| {
            for k in (0..600u64).step_by(7) {
                t.see(kv.get(k));
            }
            for lo in (0..600u64).step_by(97) {
                t.see(kv.scan(lo, lo + 150));
                t.see(kv.scan_blocks(lo, lo + 150));
            }
            // Writes that flush and compact over the corrupt page.
            for k in 0..200u64 {
                t.see(kv.put(k * 3, &k.to_le_bytes()));
            }
            t.see(kv.flush());
            t.see(kv.scan(0, u64::MAX));
        },
    );
}

fn leveled() -> CompactionConfig {
    CompactionConfig::Leveled(small_leveled())
}

#[test]
fn lsm_kv_btree_pages() {
    fuzz(
        "lsm-kv (B+-tree leaf and internal pages, leveled)",
        256,
        |dev| {
            let cache = Arc::new(BufferCache::new(dev, 0));
            let mut kv = LsmKv::<u64>::new(cache, 2, leveled(), Some(0.01)).unwrap();
            let mut r = rng();
            for i in 0..600u64 {
                let k = r.random_range(0..800u64);
                if r.random_bool(0.1) {
                    kv.delete(k).unwrap();
                } else {
                    kv.put(k, i).unwrap();
                }
            }
            kv.flush().unwrap();
            kv
        },
        |kv, t| {
            for k in (0..800u64).step_by(5) {
                t.see(kv.get(k));
            }
            for lo in (0..800u64).step_by(111) {
                t.see(kv.scan(lo..lo + 200));
            }
            t.see(kv.scan(..));
            for k in 0..300u64 {
                t.see(kv.put(k * 2, k));
            }
            t.see(kv.flush());
            t.see(kv.scan(..));
        },
    );
}

#[test]
fn lsm_btree_pages() {
    fuzz(
        "lsm-btree (B+-tree pages, prefix merges)",
        256,
        |dev| {
            let cache = Arc::new(BufferCache::new(dev, 0));
            let policy = MergePolicyConfig::Prefix {
                max_mergeable_pages: 40,
                max_tolerance_components: 3,
            };
            let mut b = LsmBTree::<u64>::new(cache, 2, policy, Some(0.01)).unwrap();
            let mut r = rng();
            for i in 0..600u64 {
                let k = r.random_range(0..800u64);
                if r.random_bool(0.1) {
                    b.delete(k).unwrap();
                } else {
                    b.upsert(k, i).unwrap();
                }
            }
            b.flush().unwrap();
            b
        },
        |b, t| {
            for k in (0..800u64).step_by(5) {
                t.see(b.get(k));
            }
            for k in 0..300u64 {
                t.see(b.upsert(k * 2, k));
            }
            t.see(b.flush());
            for k in (0..800u64).step_by(9) {
                t.see(b.get(k));
            }
        },
    );
}

fn spatial(strategy: &'static str) {
    let strategy: SpatialStrategy = strategy.parse().unwrap();
    // A leaf entry garbled into another plausible entry (same point, another object) passes every
    // page check on a device without checksums; under the Update Memo the merge that drops it as
    // obsolete is refused with `Error::CorruptEntry` (counted as refused as corrupt; see
    // `regression_update_memo_release_on_a_garbled_leaf_entry`).
    fuzz(
        match strategy.family() {
            "Eager" => "lsm-rtree Eager (R-tree pages, deleted-key B+-tree)",
            "Validation" => "lsm-rtree Validation (R-tree pages, primary key index)",
            _ => "lsm-rtree UM+FMBV (R-tree pages, memo cleaning)",
        },
        512,
        move |dev| {
            let cache = Arc::new(BufferCache::new(dev, 0));
            let mut cfg = small_spatial_config(strategy, 2);
            cfg.bloom_fp = Some(0.01);
            let mut index = LsmRTree::new(cfg, cache).unwrap();
            let mut r = rng();
            let mut at: Vec<Option<Point>> = vec![None; 150];
            for _ in 0..700 {
                let oid = r.random_range(0..150u64);
                let p = Point::new(r.random_range(0.0..100.0), r.random_range(0.0..100.0));
                match at[oid as usize] {
                    Some(old) => index.update(oid, Some(old), p).unwrap(),
                    None => index.insert(oid, p).unwrap(),
                }
                at[oid as usize] = Some(p);
            }
            index.flush().unwrap();
            (index, at)
        },
        |(index, at), t| {
            let mut r = rng();
            for _ in 0..20 {
                let (x, y) = (r.random_range(0.0..90.0), r.random_range(0.0..90.0));
                t.see(index.query(&Rect::new(x, y, x + r.random_range(1.0..50.0), y + 10.0)));
            }
            t.see(index.query(&EXTENT));
            for _ in 0..300 {
                let oid = r.random_range(0..150u64);
                let p = Point::new(r.random_range(0.0..100.0), r.random_range(0.0..100.0));
                let res = match at[oid as usize] {
                    Some(old) => index.update(oid, Some(old), p),
                    None => index.insert(oid, p),
                };
                if res.is_ok() {
                    at[oid as usize] = Some(p);
                }
                t.see(res);
            }
            t.see(index.flush());
            t.see(index.query(&EXTENT));
        },
    );
}

#[test]
fn lsm_rtree_eager_pages() {
    spatial("Eager");
}

#[test]
fn lsm_rtree_validation_pages() {
    spatial("Validation");
}

#[test]
fn lsm_rtree_update_memo_pages() {
    spatial("UM+FMBV");
}

#[test]
fn series_pages() {
    for layout in SeriesLayout::ALL {
        fuzz(
            match layout {
                SeriesLayout::Iotdb => "series iotdb (series pages)",
                SeriesLayout::IotdbReal => "series iotdb-real (series pages)",
                SeriesLayout::Diol => "series diol (series pages)",
            },
            256,
            move |dev| {
                let mut c = SeriesConfig::paper(layout);
                c.iotdb.memtable_bytes = 600;
                c.diol.normal_bytes = 300;
                c.diol.delay_bytes = 60;
                c.compaction = Some(CompactionParams {
                    delay_files_trigger: 2,
                });
                let mut s = SeriesStore::new(c, dev).unwrap();
                let mut r = rng();
                for t in 0..800u64 {
                    let late = if r.random_bool(0.2) {
                        r.random_range(0..60)
                    } else {
                        0
                    };
                    s.insert(r.random_range(0..3), t.saturating_sub(late), t as i64)
                        .unwrap();
                }
                s.flush_all().unwrap();
                s
            },
            |s, t| {
                for ts in (0..820u64).step_by(13) {
                    t.see(s.get((ts % 3) as u32, ts));
                }
                for a in (0..800u64).step_by(90) {
                    t.see(s.range((a % 3) as u32, a, a + 120));
                }
                for ts in 800..1000u64 {
                    t.see(s.insert((ts % 3) as u32, ts - (ts % 7) * 20, -(ts as i64)));
                }
                t.see(s.flush_all());
                t.see(s.compact());
                t.see(s.range(0, 0, u64::MAX));
            },
        );
    }
}

#[test]
fn cluster_pages() {
    for layout in [ClusterLayout::Paginated, ClusterLayout::SinglePage] {
        fuzz(
            match layout {
                ClusterLayout::Paginated => "cluster paginated (data and map pages)",
                ClusterLayout::SinglePage => "cluster single-page (data pages)",
            },
            1024,
            move |dev| {
                let cache = Arc::new(BufferCache::new(dev, 0));
                let mut c = cluster::open(layout, cache, ClusterOptions::default()).unwrap();
                let mut r = rng();
                let mut rids: Vec<Rid> = Vec::new();
                for tag in 0..200u64 {
                    let len = match r.random_range(0..10) {
                        0 => r.random_range(1024..2500), // chained over pages
                        1 => r.random_range(300..900),
                        _ => r.random_range(1..120),
                    };
                    let rec: Vec<u8> = (0..len).map(|i| (tag as usize + i) as u8).collect();
                    rids.push(c.insert(&rec).unwrap());
                }
                for &rid in rids.iter().step_by(5) {
                    c.delete(rid).unwrap();
                }
                (c, rids)
            },
            |(c, rids), t| {
                for &rid in rids.iter() {
                    t.see(c.fetch(rid));
                }
                t.see(c.fetch_batch(&rids[..50]));
                for (i, &rid) in rids.iter().enumerate().step_by(3) {
                    t.see(c.update(rid, &vec![i as u8; (i * 37) % 1500 + 1]));
                }
                for &rid in rids.iter().skip(1).step_by(7) {
                    t.see(c.delete(rid));
                }
                for i in 0..30u8 {
                    t.see(c.insert(&vec![i; 40 * i as usize + 1]));
                }
                t.see(c.fetch_batch(rids));
            },
        );
    }
}

/// A fresh LSM R-tree of `strategy` with the stream every spatial target builds.
fn spatial_index(dev: Arc<dyn Device>, strategy: &str) -> LsmRTree {
    let cache = Arc::new(BufferCache::new(dev, 0));
    let mut cfg = SpatialConfig::new(strategy.parse().unwrap(), EXTENT, 2);
    cfg.merge_policy = MergePolicyConfig::Prefix {
        max_mergeable_pages: 40,
        max_tolerance_components: 3,
    };
    cfg.key_index_budget_pages = 2;
    cfg.buffered_threshold = 2;
    cfg.vacuum_threshold = 3;
    cfg.bloom_fp = Some(0.01);
    LsmRTree::new(cfg, cache).unwrap()
}

/// Updates `n` random objects of 150 (inserting the first time), stopping at the first error.
fn spatial_stream(
    index: &mut LsmRTree,
    at: &mut [Option<Point>],
    r: &mut Xoshiro256PlusPlus,
    n: usize,
) -> Result<()> {
    for _ in 0..n {
        let oid = r.random_range(0..150u64);
        let p = Point::new(r.random_range(0.0..100.0), r.random_range(0.0..100.0));
        match at[oid as usize] {
            Some(old) => index.update(oid, Some(old), p)?,
            None => index.insert(oid, p)?,
        }
        at[oid as usize] = Some(p);
    }
    Ok(())
}

// Regression tests: each crash the fuzzing found, with its minimal input, on the fixed decoder.

/// Runs `ops` on a cluster of `layout` holding 200 records (some chained) after arming `m` on
/// page `pick` of the written pages; returns the errors the operations met.
fn cluster_case(layout: ClusterLayout, pick: usize, m: Mutation) -> Vec<Error> {
    let dev = Hostile::new(1024);
    let cache = Arc::new(BufferCache::new(dev.clone(), 0));
    let mut c = cluster::open(layout, cache, ClusterOptions::default()).unwrap();
    let mut rids = Vec::new();
    for tag in 0..200u64 {
        let len = if tag % 10 == 0 { 2000 } else { 50 };
        rids.push(c.insert(&vec![tag as u8; len]).unwrap());
    }
    assert!(dev.arm(pick, m));
    let mut errors = Vec::new();
    for &rid in &rids {
        if let Err(e) = c.fetch(rid) {
            errors.push(e);
        }
    }
    for &rid in rids.iter().step_by(3) {
        if let Err(e) = c.update(rid, &[7; 1500]) {
            errors.push(e);
        }
    }
    for &rid in rids.iter().skip(1).step_by(3) {
        if let Err(e) = c.delete(rid) {
            errors.push(e);
        }
    }
    errors
}

/// Every error is the corrupt page itself or, once an update met it and stopped the cluster
/// (fail-stop: a failed update refuses every later call), the refusal naming that corruption.
fn all_corrupt(errors: &[Error]) -> bool {
    errors.iter().all(|e| match e {
        Error::Corrupt { .. } => true,
        Error::Stopped { cause, .. } => cause.starts_with("corrupt page"),
        _ => false,
    })
}

/// Was: a slice out of bounds in `Slotted::entry` (a slot pointer past the page end).
#[test]
fn regression_cluster_slot_pointer_past_the_page() {
    for layout in [ClusterLayout::Paginated, ClusterLayout::SinglePage] {
        let mut refused = 0;
        for pick in 0..6 {
            // The first slot's pointer (offset 64) set to a value past any page.
            let errors = cluster_case(
                layout,
                pick,
                Mutation::Word {
                    at: 64,
                    width: 2,
                    value: 0xfff0,
                },
            );
            assert!(all_corrupt(&errors), "{layout} page {pick}: {errors:?}");
            refused += errors.len();
        }
        assert!(refused > 0, "{layout}");
    }
}

/// Was: an index out of bounds in `Files::id` (a map entry or chunk pointer naming a data page
/// past the file) and an overflow in `Slotted::gap` (a slot count past the page).
#[test]
fn regression_cluster_pointer_past_the_file_and_huge_slot_count() {
    let mut refused = 0;
    for pick in 0..8 {
        let errors = cluster_case(ClusterLayout::Paginated, pick, Mutation::Flip(vec![(410, 1)]));
        assert!(all_corrupt(&errors), "page {pick}: {errors:?}");
        let errors = cluster_case(
            ClusterLayout::SinglePage,
            pick,
            Mutation::Word {
                at: 0,
                width: 4,
                value: u64::from(u32::MAX),
            },
        );
        assert!(all_corrupt(&errors), "page {pick}: {errors:?}");
        refused += errors.len();
    }
    assert!(refused > 0);
}

/// Was: "removing an empty slot" and a subtraction overflow on a chained record whose chunk
/// slot was emptied or shortened, and "entry does not fit" when the free-space map promised room
/// a page read back without.
#[test]
fn regression_cluster_random_pages_are_refused() {
    for layout in [ClusterLayout::Paginated, ClusterLayout::SinglePage] {
        let mut refused = 0;
        for pick in 0..12 {
            let errors = cluster_case(layout, pick, Mutation::Random(pick as u64));
            assert!(all_corrupt(&errors), "{layout} page {pick}: {errors:?}");
            refused += errors.len();
        }
        assert!(refused > 0, "{layout}");
    }
}

/// Was: the `points ascend` debug assertion in the time-series run writer, reached by a merge of
/// a page whose tail was zeroed (its keys no longer ascending); now refused when read.
#[test]
fn regression_series_page_with_zeroed_tail() {
    let dev = Hostile::new(256);
    let mut c = SeriesConfig::paper(SeriesLayout::Iotdb);
    c.iotdb.memtable_bytes = 600;
    c.compaction = Some(CompactionParams {
        delay_files_trigger: 2,
    });
    let mut s = SeriesStore::new(c, dev.clone()).unwrap();
    for t in 0..400u64 {
        s.insert(0, t, t as i64).unwrap();
    }
    s.flush_all().unwrap();
    assert!(dev.arm(0, Mutation::ZeroTail { from: 1 }));
    let mut refused = 0;
    for t in 0..400u64 {
        match s.get(0, t) {
            Ok(v) => assert!(v.is_none() || v == Some(t as i64)),
            Err(Error::Corrupt { .. }) => refused += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused > 0);
    assert!(matches!(s.range(0, 0, 400), Err(Error::Corrupt { .. })));
    for t in 400..600u64 {
        let _ = s.insert(0, t - 300, -1);
    }
    assert!(s.compact().is_err() || s.range(0, 0, 400).is_err());
}

/// Was: a leaf copied over another (a misdirected page) merged, releasing Update Memo counts of
/// objects whose entries it repeated; now refused by the merge's Hilbert-order check.
#[test]
fn regression_rtree_leaf_from_another_page_is_refused_by_the_merge() {
    let mut refused = 0;
    for pick in 0..40 {
        let dev = Hostile::new(512);
        let mut index = spatial_index(dev.clone(), "UM+FMBV");
        let mut at = vec![None; 150];
        let mut r = rng();
        spatial_stream(&mut index, &mut at, &mut r, 700).unwrap();
        index.flush().unwrap();
        dev.arm(pick, Mutation::Other(pick + 1));
        match spatial_stream(&mut index, &mut at, &mut r, 300).and_then(|_| index.flush()) {
            Ok(()) => {}
            Err(Error::Corrupt { .. }) => refused += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused > 0);
}

/// Was: a panic in the Update Memo ("released an object the Update Memo does not hold"). A leaf
/// entry whose object id and timestamp are zeroed (same point, so the page, its MBR and its
/// Hilbert order all check out) is merged as a stale entry of object 0, which the memo does not
/// count. The memory device has no checksum (the file device's would refuse the page). Minimal
/// input found by fuzzing: the last 40 bytes of written page #2888903114669 (mod the pages)
/// zeroed, which then held the last entry's object id and timestamp and the block summary; since
/// the summary sits before the slots, the same entry's id and timestamp are the page's last 16
/// bytes, and those are zeroed. Now the merge is refused with `Error::CorruptEntry` naming object
/// 0, before anything is installed, and so is every retry of it; queries keep answering.
#[test]
fn regression_update_memo_release_on_a_garbled_leaf_entry() {
    let dev = Hostile::new(512);
    let mut index = spatial_index(dev.clone(), "UM+FMBV");
    let mut at = vec![None; 150];
    let mut r = rng();
    spatial_stream(&mut index, &mut at, &mut r, 700).unwrap();
    index.flush().unwrap();
    dev.arm(2888903114669, Mutation::ZeroTail { from: 512 - 16 });
    for _ in 0..20 {
        let (x, y) = (r.random_range(0.0..90.0), r.random_range(0.0..90.0));
        let _ = index.query(&Rect::new(x, y, x + r.random_range(1.0..50.0), y + 10.0));
    }
    let _ = index.query(&EXTENT);
    let is_garbled_entry = |e: &Error| {
        matches!(e, Error::CorruptEntry { oid: 0, .. }) && e.to_string().contains("corrupt entry of object 0")
    };
    match spatial_stream(&mut index, &mut at, &mut r, 300) {
        Err(e) => assert!(is_garbled_entry(&e), "{e}"),
        Ok(()) => panic!("the merge of the garbled entry was not refused"),
    }
    let memo = index.shared_update_memo().unwrap().snapshot();
    // The refused merge changed nothing: a retry meets the same entry and is refused again,
    // leaving the Update Memo as it was.
    match index.flush() {
        Err(e) => assert!(is_garbled_entry(&e), "{e}"),
        Ok(()) => panic!("the retried merge was not refused"),
    }
    assert_eq!(index.shared_update_memo().unwrap().snapshot(), memo);
    let mut answered = 0;
    for _ in 0..20 {
        let (x, y) = (r.random_range(0.0..90.0), r.random_range(0.0..90.0));
        match index.query(&Rect::new(x, y, x + r.random_range(1.0..50.0), y + 10.0)) {
            Ok(_) => answered += 1,
            Err(Error::Corrupt { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert!(answered > 0);
}

/// Was: a subtraction overflow in `Slotted::remove` and "pointer out of range" in `Slotted::put`
/// on a page whose used-bytes counter was zeroed (found at 1,500 cases: bytes 6..10 set to 0);
/// now the counter must equal the live entries' bytes when a page is read.
#[test]
fn regression_cluster_used_bytes_counter_zeroed() {
    for layout in [ClusterLayout::Paginated, ClusterLayout::SinglePage] {
        let mut refused = 0;
        for pick in 0..12 {
            let errors = cluster_case(
                layout,
                pick,
                Mutation::Word {
                    at: 6,
                    width: 4,
                    value: 0,
                },
            );
            assert!(all_corrupt(&errors), "{layout} page {pick}: {errors:?}");
            refused += errors.len();
        }
        assert!(refused > 0, "{layout}");
    }
}
