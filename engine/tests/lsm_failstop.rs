//! Fail-stop: with a device that fails the k-th write or read (once, or from then on), every
//! operation of an LSM index either errors or answers exactly like an oracle, and once the device
//! works again nothing written is missing and no page has leaked. The `*_under_every_fault_kind`
//! sweeps add short writes (reported and silent), flipped bits, sync errors and a full disk on a
//! checksum-verified device, and check that every failed call returns a typed error.
//!
//! Budget: `FAULT_CASES` positions per fault kind for those sweeps (default 3, seconds).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

mod failstop_common;

use failstop_common::{cases, plan, stack, Sweep, Tally};
use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::lsm::{CompactionConfig, LeveledParams, LsmBTree, LsmKv, MergePolicyConfig};
use lsmlab_engine::storage::{Device, Fault, FaultyDevice, Injection, MemDevice};
use lsmlab_engine::Result;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::sync::Arc;

const PAGE: usize = 256;
const KEYS: u64 = 1500;

/// The operations both indexes offer.
trait Index {
    fn put(&mut self, k: u64, v: u64) -> Result<()>;
    fn del(&mut self, k: u64) -> Result<()>;
    fn read(&mut self, k: u64) -> Result<Option<u64>>;
    /// All live entries, if the index can scan.
    fn all(&mut self) -> Option<Result<Vec<(u64, u64)>>>;
    fn flush_all(&mut self) -> Result<()>;
    fn run_pages(&self) -> u64;
}

impl Index for LsmKv<u64> {
    fn put(&mut self, k: u64, v: u64) -> Result<()> {
        LsmKv::put(self, k, v)
    }
    fn del(&mut self, k: u64) -> Result<()> {
        self.delete(k)
    }
    fn read(&mut self, k: u64) -> Result<Option<u64>> {
        self.get(k)
    }
    fn all(&mut self) -> Option<Result<Vec<(u64, u64)>>> {
        Some(self.scan(..))
    }
    fn flush_all(&mut self) -> Result<()> {
        self.flush()?;
        self.compact()
    }
    fn run_pages(&self) -> u64 {
        self.version().total_pages()
    }
}

impl Index for LsmBTree<u64> {
    fn put(&mut self, k: u64, v: u64) -> Result<()> {
        self.upsert(k, v)
    }
    fn del(&mut self, k: u64) -> Result<()> {
        self.delete(k)
    }
    fn read(&mut self, k: u64) -> Result<Option<u64>> {
        self.get(k)
    }
    fn all(&mut self) -> Option<Result<Vec<(u64, u64)>>> {
        None
    }
    fn flush_all(&mut self) -> Result<()> {
        self.flush()
    }
    fn run_pages(&self) -> u64 {
        u64::MAX // not exposed; the leak check uses the kv store
    }
}

fn kv(dev: Arc<dyn Device>) -> Box<dyn Index> {
    let cache = Arc::new(BufferCache::new(dev, 16));
    let cfg = CompactionConfig::Leveled(LeveledParams {
        l0_trigger: 3,
        base_level_pages: 8,
        size_ratio: 3,
        target_run_pages: 3,
        max_levels: 5,
    });
    Box::new(LsmKv::<u64>::new(cache, 2, cfg, Some(0.01)).unwrap())
}

fn btree(dev: Arc<dyn Device>) -> Box<dyn Index> {
    let cache = Arc::new(BufferCache::new(dev, 16));
    let policy = MergePolicyConfig::Prefix {
        max_mergeable_pages: 40,
        max_tolerance_components: 3,
    };
    Box::new(LsmBTree::<u64>::new(cache, 2, policy, Some(0.01)).unwrap())
}

/// What one faulty stream saw.
#[derive(Default)]
struct Outcome {
    failed_writes: u64,
    failed_reads: u64,
    injected: u64,
}

/// Runs a warm-up on a healthy device, then `ops` random operations with `fault` armed, checking
/// every answer; then heals the device and checks that the index holds exactly the oracle.
fn stream(build: fn(Arc<dyn Device>) -> Box<dyn Index>, seed: u64, reads: Fault, writes: Fault) -> Outcome {
    let faulty = Arc::new(FaultyDevice::new(Arc::new(MemDevice::new(PAGE))));
    let dev: Arc<dyn Device> = faulty.clone();
    let mut index = build(dev.clone());
    let mut oracle: BTreeMap<u64, u64> = BTreeMap::new();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut out = Outcome::default();
    for step in 0..3000 {
        if step == 1200 {
            faulty.arm(reads, writes);
        }
        let k = rng.random_range(0..KEYS);
        match rng.random_range(0..10) {
            // A write lands in the memtable before any flush, so an error (a failed flush or
            // compaction) still leaves it applied.
            0..5 => {
                let v = rng.random();
                oracle.insert(k, v);
                out.failed_writes += u64::from(index.put(k, v).is_err());
            }
            5..7 => {
                oracle.remove(&k);
                out.failed_writes += u64::from(index.del(k).is_err());
            }
            7..9 => match index.read(k) {
                Ok(v) => assert_eq!(v, oracle.get(&k).copied(), "seed {seed}, step {step}: get {k}"),
                Err(_) => out.failed_reads += 1,
            },
            _ => match index.all() {
                Some(Ok(all)) => {
                    assert!(
                        all.iter().copied().eq(oracle.iter().map(|(&k, &v)| (k, v))),
                        "seed {seed}, step {step}: scan"
                    )
                }
                Some(Err(_)) => out.failed_reads += 1,
                None => {}
            },
        }
    }
    out.injected = faulty.failures();
    faulty.disarm();
    let check = |index: &mut Box<dyn Index>, when: &str| {
        for k in 0..KEYS {
            assert_eq!(
                index.read(k).unwrap(),
                oracle.get(&k).copied(),
                "seed {seed}, {when}: get {k}"
            );
        }
        if let Some(all) = index.all() {
            assert!(
                all.unwrap().into_iter().eq(oracle.iter().map(|(&k, &v)| (k, v))),
                "{when}: scan"
            );
        }
    };
    check(&mut index, "healed");
    index.flush_all().unwrap();
    check(&mut index, "healed and flushed");
    let pages = index.run_pages();
    if pages != u64::MAX {
        assert_eq!(
            dev.allocated_pages(),
            pages,
            "seed {seed}: pages leaked by failed steps"
        );
    }
    drop(index);
    assert_eq!(
        dev.allocated_pages(),
        0,
        "seed {seed}: dropping the index frees every run"
    );
    out
}

fn sweep(build: fn(Arc<dyn Device>) -> Box<dyn Index>) {
    let (mut maintenance_failures, mut read_failures) = (0, 0);
    for k in (1..400).step_by(11) {
        for (i, (r, w)) in Fault::sweep_at(k).into_iter().enumerate() {
            let o = stream(build, k * 10 + i as u64, r, w);
            assert!(o.injected > 0, "k {k}: the fault {r:?}/{w:?} never fired");
            maintenance_failures += o.failed_writes;
            read_failures += o.failed_reads;
        }
    }
    assert!(
        maintenance_failures > 50,
        "only {maintenance_failures} failed flushes or merges"
    );
    assert!(read_failures > 50, "only {read_failures} failed reads");
}

#[test]
fn the_leveled_kv_store_loses_nothing_when_the_device_fails() {
    sweep(kv);
}

#[test]
fn the_prefix_merged_btree_loses_nothing_when_the_device_fails() {
    sweep(btree);
}

#[test]
fn a_failed_flush_keeps_the_memtable_readable_and_retries_it() {
    let faulty = Arc::new(FaultyDevice::new(Arc::new(MemDevice::new(PAGE))));
    let dev: Arc<dyn Device> = faulty.clone();
    let cache = Arc::new(BufferCache::new(dev.clone(), 16));
    let mut kv = LsmKv::<u64>::new(cache, 100, CompactionConfig::None, None).unwrap();
    for k in 0..50 {
        kv.put(k, k * 2).unwrap();
    }
    faulty.arm(Fault::Never, Fault::Nth(2));
    assert!(kv.flush().is_err());
    assert_eq!(
        (kv.pending_memtables(), kv.version().len(), dev.allocated_pages()),
        (1, 0, 0)
    );
    assert_eq!(kv.stats().flushes, 0);
    kv.put(7, 1).unwrap();
    assert_eq!(kv.get(7).unwrap(), Some(1));
    assert_eq!(kv.get(8).unwrap(), Some(16));
    kv.flush().unwrap();
    assert_eq!((kv.pending_memtables(), kv.version().len()), (0, 2));
    assert_eq!(
        kv.get(7).unwrap(),
        Some(1),
        "the newer memtable's run shadows the older one"
    );
    assert_eq!(kv.scan(..).unwrap().len(), 50);
}

/// A stream like [`stream`]'s on the verified faulty stack with one injection of any kind. Every
/// failed call must return a typed error; once healed the index matches the oracle and flushes,
/// unless a torn write left a damaged page in a run, whose reads (and the merges that read it)
/// keep failing with checksum errors while every answer given is still right. Pages are audited
/// (the kv store's runs own every allocated page) and dropping the index frees them all.
fn stream_kind(build: fn(Arc<dyn Device>) -> Box<dyn Index>, seed: u64, inj: Injection) -> Tally {
    let s = stack(PAGE);
    let mut index = build(s.dev.clone());
    let mut oracle: BTreeMap<u64, u64> = BTreeMap::new();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut t = Tally::default();
    let what = format!("seed {seed}, {inj}");
    let audit = |index: &dyn Index, what: &str| {
        let pages = index.run_pages();
        if pages != u64::MAX {
            assert_eq!(s.dev.allocated_pages(), pages, "{what}: pages leaked");
        }
    };
    for step in 0..2400 {
        if step == 1200 {
            assert_eq!(t.failed_calls, 0, "{what}: failed while healthy");
            s.faulty.inject(inj);
        }
        if step == 2000 {
            t.injected_from(&s.faulty);
            s.faulty.disarm();
        }
        let k = rng.random_range(0..KEYS);
        match rng.random_range(0..10) {
            0..5 => {
                let v = rng.random();
                oracle.insert(k, v);
                if let Err(e) = index.put(k, v) {
                    t.failed(&e, &what);
                }
            }
            5..7 => {
                oracle.remove(&k);
                if let Err(e) = index.del(k) {
                    t.failed(&e, &what);
                }
            }
            7..9 => match index.read(k) {
                Ok(v) => {
                    assert_eq!(v, oracle.get(&k).copied(), "{what}, step {step}: get {k}");
                    t.checked += 1;
                }
                Err(e) => t.failed(&e, &what),
            },
            _ => match index.all() {
                Some(Ok(all)) => {
                    assert!(
                        all.iter().copied().eq(oracle.iter().map(|(&k, &v)| (k, v))),
                        "{what}, step {step}: scan"
                    );
                    t.checked += 1;
                }
                Some(Err(e)) => t.failed(&e, &what),
                None => {}
            },
        }
        audit(index.as_ref(), &what);
    }
    let damaged = inj.kind.damages_pages();
    let before = t.failed_calls;
    if let Err(e) = index.flush_all() {
        assert!(damaged, "{what}, healed: flush failed: {e}");
        t.failed(&e, &what);
    }
    audit(index.as_ref(), &what);
    for k in 0..KEYS {
        match index.read(k) {
            Ok(v) => assert_eq!(v, oracle.get(&k).copied(), "{what}, healed: get {k}"),
            Err(e) => t.failed(&e, &what),
        }
    }
    if !damaged {
        assert_eq!(
            t.failed_calls, before,
            "{what}: a call failed on the healed device"
        );
    }
    drop(index);
    assert_eq!(
        s.dev.allocated_pages(),
        0,
        "{what}: dropping the index frees every run"
    );
    t
}

/// Every fault kind at `FAULT_CASES` positions (default 3) over the armed part of the stream.
fn sweep_kinds(name: &str, build: fn(Arc<dyn Device>) -> Box<dyn Index>) {
    let mut sweep = Sweep::new(name);
    for (c, inj) in plan(cases(3), 300) {
        sweep.record(inj, stream_kind(build, 7000 + c as u64, inj));
    }
    sweep.check();
}

#[test]
fn the_leveled_kv_store_fails_stop_under_every_fault_kind() {
    sweep_kinds("lsm kv (leveled)", kv);
}

#[test]
fn the_prefix_merged_btree_fails_stop_under_every_fault_kind() {
    sweep_kinds("lsm btree (prefix)", btree);
}
