//! Fail-stop of the block-based key-value store under every cache warm-up policy: with a device
//! that fails the k-th read, write or sync (once, or from then on), every operation either errors
//! or answers exactly like a `BTreeMap` oracle, and a write that errors is still kept (its flush or
//! compaction failed, see `KvStore::put`). After every operation the runs own every allocated page
//! and the cache holds no block of a retired run. Once the device works again, more operations and
//! a flush match the oracle, nothing fails any more and nothing has leaked. The sweeps count the
//! failed flushes, compactions, gets and scans per policy, so they cannot pass without reaching the
//! fault paths.
//!
//! `every_fault_kind_*` sweeps add short writes (reported and silent), flipped bits and a full disk
//! on a checksum-verified device and check that every failed call returns a typed error; after
//! healing, a store with a page torn by a short write may keep failing reads and compactions of
//! that page with checksum errors, never with a wrong answer. Budget: `FAULT_CASES` positions per
//! fault kind (default 2, seconds).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

mod failstop_common;

use failstop_common::{cases, plan, stack, Sweep};
use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::kvstore::{KvConfig, KvStore, WarmUpKind, WarmUpPolicy};
use lsmlab_engine::leaper::{
    train, AccessRecord, CollectorConfig, GbdtParams, LeaperParams, LeaperPolicy, RangeHistory, TrainParams,
    TrainingPrecursors,
};
use lsmlab_engine::storage::{Device, Fault, FaultyDevice, Injection, MemDevice};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

mod common;
use common::small_kv_config;

const PAGE: usize = 512;
/// Keys `0..KEYS`; a quarter of the accesses go to the hot keys `0..HOT`.
const KEYS: u64 = 4000;
const HOT: u64 = 300;
/// Healthy operations, then operations with the fault armed, then healthy ones again.
const WARM_UP: usize = 400;
const ARMED: usize = 600;
const HEALED: usize = 200;
/// Virtual seconds per operation, and the Leaper model's slot length: 20 operations a slot, so
/// the hot keys' ranges are read in every slot and most other ranges in few.
const TICK: f64 = 0.1;
const SLOT_SECS: f64 = 2.0;
/// No cache, and a few dozen pages.
const CAPACITIES: [usize; 2] = [0, 32];

/// A 1 KiB memtable (about 25 entries, two or three data blocks) and small leveled targets, so a
/// stream crosses dozens of flushes, merges and trivial moves.
fn config() -> KvConfig {
    small_kv_config(1024)
}

/// A key of the stream's distribution: hot keys a quarter of the time.
fn key(rng: &mut impl Rng) -> u64 {
    if rng.random_bool(0.25) {
        rng.random_range(0..HOT)
    } else {
        rng.random_range(0..KEYS)
    }
}

/// The faults armed for the middle part of a stream: reads, writes, syncs.
type Faults = (Fault, Fault, Fault);

/// What one stream (or a sweep of them) saw.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    /// Writes (or explicit flushes) whose flush failed (the memtable was kept).
    failed_flushes: u64,
    /// Writes (or explicit flushes) whose flush succeeded or was not needed, and a compaction
    /// failed.
    failed_compactions: u64,
    failed_gets: u64,
    failed_scans: u64,
    /// Accesses the device failed.
    injected: u64,
    /// Blocks the policy had the cache admit, and pages it evicted itself.
    admitted: u64,
    policy_evictions: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.failed_flushes += o.failed_flushes;
        self.failed_compactions += o.failed_compactions;
        self.failed_gets += o.failed_gets;
        self.failed_scans += o.failed_scans;
        self.injected += o.injected;
        self.admitted += o.admitted;
        self.policy_evictions += o.policy_evictions;
    }

    fn failures(&self) -> u64 {
        self.failed_flushes + self.failed_compactions + self.failed_gets + self.failed_scans
    }
}

/// The store, its oracle and the stream driving both.
struct Run {
    kv: KvStore,
    dev: Arc<dyn Device>,
    oracle: BTreeMap<u64, Vec<u8>>,
    rng: Xoshiro256PlusPlus,
    step: usize,
    tally: Tally,
    what: String,
    /// The typed errors failed calls returned.
    typed: failstop_common::Tally,
}

impl Run {
    /// One random operation, checked against the oracle, then the store's invariants.
    fn step(&mut self) {
        self.step += 1;
        // A deferred step of a timed merge that fails leaves the store usable (the invariants
        // below check it); these stores run untimed merges, so nothing is deferred.
        let _ = self.kv.set_now(self.step as f64 * TICK);
        let what = format!("{}, step {}", self.what, self.step);
        let failed_before = self.kv.stats().failed;
        let r = self.rng.random_range(0..100);
        let write = match r {
            0..45 => {
                let k = key(&mut self.rng);
                let v: Vec<u8> = (0..self.rng.random_range(0..48))
                    .map(|j| (k as usize ^ self.step ^ j) as u8)
                    .collect();
                // Kept even if the flush or compaction it started failed.
                self.oracle.insert(k, v.clone());
                Some(self.kv.put(k, &v))
            }
            45..55 => {
                let k = key(&mut self.rng);
                self.oracle.remove(&k);
                Some(self.kv.delete(k))
            }
            55..58 => Some(self.kv.flush()),
            58..88 => {
                let k = key(&mut self.rng);
                match self.kv.get(k) {
                    Ok(v) => assert_eq!(v.as_ref(), self.oracle.get(&k), "{what}: get {k}"),
                    Err(e) => {
                        self.typed.failed(&e, &what);
                        self.tally.failed_gets += 1
                    }
                }
                None
            }
            _ => {
                let lo = key(&mut self.rng);
                let hi = lo + self.rng.random_range(0..200);
                match self.kv.scan(lo, hi) {
                    Ok(got) => {
                        let want: Vec<(u64, Vec<u8>)> =
                            self.oracle.range(lo..=hi).map(|(&k, v)| (k, v.clone())).collect();
                        assert!(got == want, "{what}: scan {lo}..={hi}");
                    }
                    Err(e) => {
                        self.typed.failed(&e, &what);
                        self.tally.failed_scans += 1
                    }
                }
                None
            }
        };
        let failed = self.kv.stats().failed - failed_before;
        match write {
            Some(Err(e)) => {
                self.typed.failed(&e, &what);
                // One flush or compaction failed, and the store stopped there.
                assert_eq!(failed, 1, "{what}: failed background operations");
                if self.kv.memtable_len() > 0 {
                    self.tally.failed_flushes += 1;
                } else {
                    self.tally.failed_compactions += 1;
                }
            }
            _ => assert_eq!(failed, 0, "{what}: a failure that reached no caller"),
        }
        self.kv.take_background();
        self.check_pages(&what);
    }

    /// The runs own every allocated page, and every cached page is a data block of a live run.
    fn check_pages(&self, what: &str) {
        let run_pages: u64 = self.kv.runs().map(|r| r.pages()).sum();
        assert_eq!(
            self.dev.allocated_pages(),
            run_pages,
            "{what}: pages allocated outside the runs"
        );
        assert_eq!(run_pages, self.kv.version().total_pages(), "{what}");
        let live: Vec<(u64, u64)> = self
            .kv
            .runs()
            .map(|r| (r.first_page(), r.first_page() + r.data_blocks()))
            .collect();
        for page in self.kv.cache().resident() {
            assert!(
                live.iter().any(|&(a, b)| (a..b).contains(&page)),
                "{what}: cached page {page} is no data block of a live run"
            );
        }
    }

    /// Every key and the whole key space against the oracle; nothing may fail.
    fn check_all(&mut self, what: &str) {
        let all = self.kv.scan(0, u64::MAX).unwrap();
        assert!(
            all.iter().map(|(k, v)| (k, v)).eq(self.oracle.iter()),
            "{what}: full scan"
        );
        for k in (0..KEYS).step_by(7) {
            assert_eq!(
                self.kv.get(k).unwrap().as_ref(),
                self.oracle.get(&k),
                "{what}: get {k}"
            );
        }
    }
}

/// A warm-up on a healthy device, `ARMED` operations with `faults`, then the device healed, the
/// store checked, more operations, a flush, and the store checked again.
fn stream(
    name: &str,
    policy: &dyn Fn() -> Box<dyn WarmUpPolicy>,
    capacity: usize,
    seed: u64,
    (reads, writes, syncs): Faults,
) -> Tally {
    let faulty = Arc::new(FaultyDevice::new(Arc::new(MemDevice::new(PAGE))));
    let dev: Arc<dyn Device> = faulty.clone();
    let cache = Arc::new(BufferCache::new(dev.clone(), capacity));
    let mut run = Run {
        kv: KvStore::new(cache, config(), policy()).unwrap(),
        dev: dev.clone(),
        oracle: BTreeMap::new(),
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        step: 0,
        tally: Tally::default(),
        what: format!("{name}, cache {capacity}, seed {seed}, faults {reads:?}/{writes:?}/{syncs:?}"),
        typed: failstop_common::Tally::default(),
    };
    for _ in 0..WARM_UP {
        run.step();
    }
    assert_eq!(run.tally.failures(), 0, "{}: failed while healthy", run.what);
    faulty.arm(reads, writes);
    faulty.arm_syncs(syncs);
    for _ in 0..ARMED {
        run.step();
    }
    run.tally.injected = faulty.failures();
    faulty.disarm();
    let healed = format!("{}, healed", run.what);
    run.check_all(&healed);
    let failures = run.tally.failures();
    let (flushes, compactions) = (run.kv.stats().flushes, run.kv.stats().compactions);
    for _ in 0..HEALED {
        run.step();
    }
    run.kv.flush().unwrap();
    run.check_pages(&healed);
    run.check_all(&healed);
    assert_eq!(
        run.tally.failures(),
        failures,
        "{healed}: an operation failed on a healthy device"
    );
    let st = run.kv.stats();
    assert!(
        st.flushes > flushes && st.compactions > compactions,
        "{healed}: no flush or compaction after healing"
    );
    assert!(
        run.kv.memtable_len() == 0 && run.kv.memtable_bytes() == 0,
        "{healed}: memtable"
    );
    run.tally.admitted = st.admitted;
    run.tally.policy_evictions = st.policy_evictions;
    drop(run.kv);
    assert_eq!(
        dev.allocated_pages(),
        0,
        "{healed}: dropping the store frees every page"
    );
    run.tally
}

/// Sweeps the fault over the armed part of the stream (about 180 page writes, 110 to 260 page
/// reads and 30 syncs in 20 flushes and a dozen merges): the k-th write, every write from the
/// k-th, the k-th read, every read from the k-th (k = 1, 5, ..., 117), and the k-th sync, every
/// sync from the k-th (k = 1, 3, ..., 29); for each cache size, 150 streams. Returns the sweep's
/// tally per cache size.
fn sweep(name: &str, policy: &dyn Fn() -> Box<dyn WarmUpPolicy>) -> Vec<Tally> {
    let mut out = Vec::new();
    for capacity in CAPACITIES {
        let mut total = Tally::default();
        let mut faults: Vec<Faults> = Vec::new();
        for k in (1..=120).step_by(4) {
            faults.extend(Fault::sweep_at(k).map(|(r, w)| (r, w, Fault::Never)));
        }
        for k in (1..=30).step_by(2) {
            faults.push((Fault::Never, Fault::Never, Fault::Nth(k)));
            faults.push((Fault::Never, Fault::Never, Fault::From(k)));
        }
        // Failures of transient faults (the k-th access only) and of sync faults, apart.
        let (mut transient, mut sync) = (Tally::default(), Tally::default());
        for (i, &f) in faults.iter().enumerate() {
            let o = stream(name, policy, capacity, 1000 + i as u64, f);
            assert!(
                o.injected > 0,
                "{name}, cache {capacity}: the fault {f:?} never fired"
            );
            total.add(&o);
            if f.2 != Fault::Never {
                sync.add(&o);
            } else if matches!(f, (Fault::Nth(_), _, _) | (_, Fault::Nth(_), _)) {
                transient.add(&o);
            }
        }
        assert!(
            transient.failed_flushes >= 5 && transient.failed_compactions >= 10,
            "{name}, cache {capacity}: transient faults failed only {transient:?}"
        );
        assert!(
            sync.failed_flushes >= 5 && sync.failed_compactions >= 5,
            "{name}, cache {capacity}: sync faults failed only {sync:?}"
        );
        assert!(
            total.failed_flushes > 100,
            "{name}, cache {capacity}: only {} failed flushes",
            total.failed_flushes
        );
        assert!(
            total.failed_compactions > 100,
            "{name}, cache {capacity}: only {} failed compactions",
            total.failed_compactions
        );
        assert!(
            total.failed_gets > 30 && total.failed_scans > 100,
            "{name}, cache {capacity}: only {} failed gets and {} failed scans",
            total.failed_gets,
            total.failed_scans
        );
        out.push(total);
    }
    out
}

fn baseline(kind: WarmUpKind) -> Vec<Tally> {
    sweep(kind.name(), &|| kind.baseline().expect("a baseline policy"))
}

#[test]
fn lru_loses_nothing_when_the_device_fails() {
    let t = baseline(WarmUpKind::Lru);
    assert_eq!(t[1].admitted, 0, "plain LRU admits nothing");
}

#[test]
fn incremental_warmup_loses_nothing_when_the_device_fails() {
    let t = baseline(WarmUpKind::IncrementalWarmup);
    assert!(t[1].admitted > 0 && t[1].policy_evictions > 0, "{:?}", t[1]);
}

#[test]
fn prepopulate_flush_loses_nothing_when_the_device_fails() {
    let t = baseline(WarmUpKind::PrepopulateFlush);
    assert!(t[1].admitted > 0, "{:?}", t[1]);
}

#[test]
fn prepopulate_all_loses_nothing_when_the_device_fails() {
    let t = baseline(WarmUpKind::PrepopulateAll);
    assert!(t[1].admitted > 0, "{:?}", t[1]);
}

/// Trains a small Leaper model on a log of the streams' key distribution (60 slots, key ranges of
/// 100 keys) and saves it to `dir`.
fn train_leaper(dir: &Path) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut log = Vec::new();
    for i in 0..60 * 20 {
        let t = i as f64 * TICK;
        let k = key(&mut rng);
        log.push(match rng.random_range(0..10) {
            0..5 => AccessRecord::write(t, k),
            5..9 => AccessRecord::read(t, k),
            _ => AccessRecord::scan(t, k, k + rng.random_range(0..200)),
        });
    }
    let history = RangeHistory::from_log(
        &log,
        &CollectorConfig {
            sample_p: 1.0,
            ..CollectorConfig::offline(100, SLOT_SECS)
        },
    )
    .unwrap();
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
    model.save(dir).unwrap();
}

#[test]
fn leaper_loses_nothing_when_the_device_fails() {
    let dir = tempfile::tempdir().unwrap();
    train_leaper(dir.path());
    let params = LeaperParams {
        sample_p: 1.0,
        ..LeaperParams::default()
    };
    let t = sweep("leaper", &|| {
        Box::new(LeaperPolicy::from_dir(dir.path(), params).expect("the saved model"))
    });
    assert!(t[1].admitted > 0 && t[1].policy_evictions > 0, "{:?}", t[1]);
}

/// A stream like [`stream`]'s on the verified faulty stack with one injection of any kind: every
/// failed call returns a typed error (checked in `Run::step`), every answer given is the oracle's
/// and the pages are audited after every step. Once healed, the store matches the oracle and
/// flushes, unless a torn write left a damaged page in a run, whose reads and compactions keep
/// failing with checksum errors (answers given are still checked).
fn stream_kind(
    name: &str,
    policy: &dyn Fn() -> Box<dyn WarmUpPolicy>,
    capacity: usize,
    seed: u64,
    inj: Injection,
) -> failstop_common::Tally {
    let s = stack(PAGE);
    let cache = Arc::new(BufferCache::new(s.dev.clone(), capacity));
    let mut run = Run {
        kv: KvStore::new(cache, config(), policy()).unwrap(),
        dev: s.dev.clone(),
        oracle: BTreeMap::new(),
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        step: 0,
        tally: Tally::default(),
        what: format!("{name}, cache {capacity}, seed {seed}, {inj}"),
        typed: failstop_common::Tally::default(),
    };
    for _ in 0..WARM_UP {
        run.step();
    }
    assert_eq!(run.tally.failures(), 0, "{}: failed while healthy", run.what);
    s.faulty.inject(inj);
    for _ in 0..ARMED {
        run.step();
    }
    run.typed.injected_from(&s.faulty);
    s.faulty.disarm();
    for _ in 0..HEALED {
        run.step();
    }
    let healed = format!("{}, healed", run.what);
    if inj.kind.damages_pages() {
        if let Err(e) = run.kv.flush() {
            run.typed.failed(&e, &healed);
        }
        run.kv.take_background();
        run.check_pages(&healed);
        for k in (0..KEYS).step_by(7) {
            match run.kv.get(k) {
                Ok(v) => assert_eq!(v.as_ref(), run.oracle.get(&k), "{healed}: get {k}"),
                Err(e) => run.typed.failed(&e, &healed),
            }
        }
    } else {
        run.kv.flush().unwrap();
        run.check_pages(&healed);
        run.check_all(&healed);
    }
    run.typed.checked = run.step as u64;
    drop(run.kv);
    assert_eq!(
        s.dev.allocated_pages(),
        0,
        "{healed}: dropping the store frees every page"
    );
    run.typed
}

/// Every fault kind at `FAULT_CASES` positions (default 2) over the armed part of the stream, with
/// no cache and a small one.
fn sweep_kinds(name: &str, policy: &dyn Fn() -> Box<dyn WarmUpPolicy>) {
    let mut sweep = Sweep::new(name);
    for (c, inj) in plan(cases(2), 120) {
        let capacity = CAPACITIES[c % 2];
        sweep.record(inj, stream_kind(name, policy, capacity, 9000 + c as u64, inj));
    }
    sweep.check();
}

#[test]
fn every_fault_kind_under_lru() {
    sweep_kinds("kv store (lru)", &|| {
        WarmUpKind::Lru.baseline().expect("a baseline policy")
    });
}

#[test]
fn every_fault_kind_under_prepopulate_all() {
    let kind = WarmUpKind::PrepopulateAll;
    sweep_kinds("kv store (prepopulate-all)", &|| {
        kind.baseline().expect("a baseline policy")
    });
}
