//! The key-value LSM store with leveled compaction against a `BTreeMap` oracle, on randomized
//! put/delete/get/scan streams that cross many flushes, merges and trivial moves.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::lsm::{CompactionConfig, EventLog, LifecycleEvent, LsmKv};
use lsmlab_engine::storage::{Device, MemDevice};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::sync::Arc;

mod common;
use common::small_leveled;

/// 256-byte pages hold 14 entries of a u64 key and a 9-byte slot.
const PAGE: usize = 256;

fn leveled() -> CompactionConfig {
    CompactionConfig::Leveled(small_leveled())
}

fn store(dev: &Arc<dyn Device>) -> LsmKv<u64> {
    let cache = Arc::new(BufferCache::new(dev.clone(), 32));
    LsmKv::new(cache, 2, leveled(), Some(0.01)).unwrap()
}

#[derive(Clone, Debug)]
enum Op {
    Put(u64, u64),
    Delete(u64),
    Get(u64),
    Scan(u64, u64),
    /// An insert above every key so far (sequential loads make trivial moves).
    Append(u64),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..3000, any::<u64>()).prop_map(|(k, v)| Op::Put(k, v)),
        2 => (0u64..3000).prop_map(Op::Delete),
        3 => (0u64..3200).prop_map(Op::Get),
        1 => (0u64..3000, 0u64..400).prop_map(|(a, w)| Op::Scan(a, a + w)),
        3 => any::<u64>().prop_map(Op::Append),
    ]
}

fn random_ops(seed: u64, n: usize) -> Vec<Op> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n)
        .map(|_| match rng.random_range(0..15) {
            0..6 => Op::Put(rng.random_range(0..3000), rng.random()),
            6..8 => Op::Delete(rng.random_range(0..3000)),
            8..11 => Op::Get(rng.random_range(0..3200)),
            11 => {
                let a = rng.random_range(0..3000);
                Op::Scan(a, a + rng.random_range(0..400))
            }
            _ => Op::Append(rng.random()),
        })
        .collect()
}

/// Runs `ops` against the store and the oracle, checking every answer, and returns the store.
fn run(ops: &[Op]) -> (LsmKv<u64>, Arc<dyn Device>) {
    let dev: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE));
    let mut kv = store(&dev);
    let mut oracle: BTreeMap<u64, u64> = BTreeMap::new();
    let mut next_append = 1_000_000u64;
    for op in ops {
        match *op {
            Op::Put(k, v) => {
                kv.put(k, v).unwrap();
                oracle.insert(k, v);
            }
            Op::Append(v) => {
                next_append += 1;
                kv.put(next_append, v).unwrap();
                oracle.insert(next_append, v);
            }
            Op::Delete(k) => {
                kv.delete(k).unwrap();
                oracle.remove(&k);
            }
            Op::Get(k) => assert_eq!(kv.get(k).unwrap(), oracle.get(&k).copied(), "get {k}"),
            Op::Scan(a, b) => {
                let want: Vec<(u64, u64)> = oracle.range(a..=b).map(|(&k, &v)| (k, v)).collect();
                assert_eq!(kv.scan(a..=b).unwrap(), want, "scan {a}..={b}");
            }
        }
        kv.version().check().unwrap();
    }
    // Everything, through every path.
    let all: Vec<(u64, u64)> = oracle.iter().map(|(&k, &v)| (k, v)).collect();
    assert_eq!(kv.scan(..).unwrap(), all);
    for k in (0..3100).chain(1_000_000..next_append + 2) {
        assert_eq!(kv.get(k).unwrap(), oracle.get(&k).copied(), "final get {k}");
    }
    kv.flush().unwrap();
    assert_eq!(kv.scan(..).unwrap(), all);
    // The runs own every allocated page: nothing leaked by merges.
    assert_eq!(dev.allocated_pages(), kv.version().total_pages());
    (kv, dev)
}

#[test]
fn fixed_seeds_cross_many_flushes_merges_and_moves() {
    for seed in [1u64, 2, 3, 42] {
        let (kv, _) = run(&random_ops(seed, 12_000));
        let st = kv.stats();
        assert!(st.flushes >= 250, "seed {seed}: {} flushes", st.flushes);
        assert!(st.merges >= 200, "seed {seed}: {} merges", st.merges);
        assert!(st.moves >= 100, "seed {seed}: {} trivial moves", st.moves);
        assert!(
            kv.version().depth() >= 3,
            "seed {seed}: only {} levels",
            kv.version().depth()
        );
        assert!(st.merge_io.page_reads > 0 && st.merge_io.page_writes > 0 && st.flush_io.page_reads == 0);
    }
}

#[test]
fn level_sizes_settle_within_their_targets_and_the_l0_trigger_holds() {
    let (kv, _) = run(&random_ops(7, 8000));
    let v = kv.version();
    let CompactionConfig::Leveled(p) = leveled() else {
        unreachable!()
    };
    assert!(v.level(0).len() < p.l0_trigger);
    for level in 1..v.depth() {
        if let Some(t) = p.target_pages(level) {
            assert!(
                v.level_pages(level) <= t,
                "level {level}: {} pages > {t}",
                v.level_pages(level)
            );
        }
    }
}

#[test]
fn observers_see_every_flush_and_compaction_with_its_extents() {
    let dev: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE));
    let mut kv = store(&dev);
    let log = Arc::new(EventLog::new());
    kv.subscribe(log.clone());
    for op in random_ops(9, 3000) {
        match op {
            Op::Put(k, v) => kv.put(k, v).unwrap(),
            Op::Delete(k) => kv.delete(k).unwrap(),
            _ => {}
        }
    }
    let events = log.events();
    let st = kv.stats();
    let count = |f: &dyn Fn(&LifecycleEvent<u64>) -> bool| events.iter().filter(|e| f(e)).count() as u64;
    assert_eq!(
        count(&|e| matches!(e, LifecycleEvent::FlushStarted { .. })),
        st.flushes
    );
    assert_eq!(
        count(&|e| matches!(e, LifecycleEvent::FlushFinished { .. })),
        st.flushes
    );
    assert_eq!(
        count(&|e| matches!(e, LifecycleEvent::CompactionFinished { .. })),
        st.merges + st.moves
    );
    for e in &events {
        if let LifecycleEvent::CompactionFinished { inputs, outputs, .. } = e {
            assert!(!inputs.is_empty());
            for r in outputs {
                assert!(r.keys.is_some() && !r.extents.is_empty() && r.extents[0].pages > 0);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn random_streams_match_the_oracle(ops in proptest::collection::vec(op_strategy(), 500..3000)) {
        run(&ops);
    }
}
