//! Stress test of concurrent ingestion into the LSM RUM-tree (Section 5 of the paper:
//! [`ConcurrentRumTree`], the Update Memo updated outside the tree's lock with CILS and
//! put-if-absent), against a sequential replay of the same operations in their linearization
//! order.
//!
//! Many threads insert and update objects at once, with flushes, merges and the strategy's
//! cleaning running on whichever thread trips them. Every operation takes its timestamp from one
//! global atomic ticket just before it runs. The timestamp is the operation's place in the
//! linearization: the Update Memo keeps the highest timestamp of an object (CILS), so an entry is
//! fresh iff no operation with a higher ticket touched its object, whatever order the threads'
//! tree inserts took. Operations on one object come from one thread (object id modulo the thread
//! count, as `rum-concurrency` splits its stream), so an object's tickets rise in program order;
//! different objects, flushes, merges and cleaning interleave freely. (Two threads updating the
//! same object at once is not checked: by our reading of the code, Buffered or Vacuum Cleaning on
//! one thread may then release an obsolete entry of the object before the other thread's update
//! has added its count to the Update Memo, so the memo can lose the object for a moment and end
//! with a timestamp below the object's newest entry, which the audit rejects, although the fresh
//! entries still follow the tickets.)
//!
//! The run is cut into phases; between phases the threads stop and the index is checked against
//! the oracle (the newest point of each object): every object's fresh entry, queries of random
//! rectangles, the Update Memo audit. At the end every logged operation is replayed in ticket order
//! on a fresh index by one thread through the same code, and the two must have the same fresh
//! entries (object, timestamp, point) and the same query answers, and, for the strategy without
//! cleaning (plain UM, whose memo depends only on the operations), the same Update Memo.
//!
//! `cargo test` runs `STRESS_OPS` (default 24,000) operations per strategy on 8 threads;
//! `make soak` runs millions (`STRESS_OPS=1000000`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::geom::{Point, Rect};
use lsmlab_engine::lsm::MergePolicyConfig;
use lsmlab_engine::spatial::{ConcurrentRumTree, LsmRTree, SpatialConfig, Strategy};
use lsmlab_engine::storage::{Device, MemDevice};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

mod common;
use common::{env_u64, hot_point as point, EXTENT};

const THREADS: usize = 8;
const PHASES: usize = 4;

/// One logged operation: its ticket (timestamp), object, point, and whether it was the insert.
#[derive(Clone, Copy, Debug)]
struct Logged {
    ts: u64,
    oid: u64,
    at: Point,
    insert: bool,
}

fn open(strategy: Strategy) -> LsmRTree {
    let device: Arc<dyn Device> = Arc::new(MemDevice::new(512));
    let cache = Arc::new(BufferCache::new(device, 64));
    let mut cfg = SpatialConfig::new(strategy, EXTENT, 4);
    cfg.merge_policy = MergePolicyConfig::Prefix {
        max_mergeable_pages: 64,
        max_tolerance_components: 3,
    };
    cfg.buffered_threshold = 2;
    cfg.vacuum_threshold = 3;
    LsmRTree::new(cfg, cache).unwrap()
}

type Fresh = Vec<(u64, u64, u64, u64)>;

/// (oid, ts, x bits, y bits) of every answer to `rect`, sorted.
fn answer(index: &LsmRTree, rect: &Rect) -> Fresh {
    let mut v: Fresh = index
        .query(rect)
        .unwrap()
        .results
        .iter()
        .map(|e| (e.oid, e.ts, e.point.x.to_bits(), e.point.y.to_bits()))
        .collect();
    v.sort_unstable();
    v
}

fn expected(oracle: &BTreeMap<u64, (u64, Point)>, rect: &Rect) -> Fresh {
    oracle
        .iter()
        .filter(|(_, (_, p))| rect.contains_point(*p))
        .map(|(&o, &(ts, p))| (o, ts, p.x.to_bits(), p.y.to_bits()))
        .collect()
}

fn rects(seed: u64, n: usize) -> Vec<Rect> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut v = vec![Rect::new(-1.0, -1.0, 101.0, 101.0)];
    v.extend((0..n).map(|_| {
        let c = point(&mut rng);
        EXTENT.box_around(c, rng.random::<f64>() * 0.5)
    }));
    v
}

/// Checks a quiescent index against the oracle; returns why not.
fn check(
    index: &LsmRTree,
    oracle: &BTreeMap<u64, (u64, Point)>,
    rects: &[Rect],
    what: &str,
) -> Result<(), String> {
    for r in rects {
        let (got, want) = (answer(index, r), expected(oracle, r));
        if got != want {
            let first = got.iter().zip(&want).find(|(g, w)| g != w);
            return Err(format!(
                "{what}: query {r:?}: {} answers, the oracle {} (first difference {first:?})",
                got.len(),
                want.len()
            ));
        }
    }
    match index.audit_update_memo() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("{what}: Update Memo audit: {e}")),
        Err(e) => return Err(format!("{what}: Update Memo audit failed: {e}")),
    }
    if index.update_memo().is_some_and(|um| um.has_zero_count_entry()) {
        return Err(format!("{what}: an Update Memo entry with count 0 at rest"));
    }
    Ok(())
}

/// What one run did.
#[derive(Default, Debug)]
struct Counts {
    ops: u64,
    flushes: u64,
    merges: u64,
}

/// `ops` operations on `THREADS` threads in `PHASES` phases, checked between phases; then the
/// sequential replay. Returns the counts.
fn stress(strategy: Strategy, ops: u64, seed: u64) -> Counts {
    let name = strategy.to_string();
    let objects = (ops / 20).clamp(200, 100_000);
    let inserted: Arc<Vec<AtomicBool>> = Arc::new((0..objects).map(|_| AtomicBool::new(false)).collect());
    let ticket = AtomicU64::new(0);
    let probes = rects(seed ^ 0x9e37, 40);
    let mut oracle: BTreeMap<u64, (u64, Point)> = BTreeMap::new();
    let mut log: Vec<Logged> = Vec::with_capacity(ops as usize);
    let mut index = open(strategy);
    let per_thread_phase = ops / (THREADS * PHASES) as u64;
    for phase in 0..PHASES {
        let tree = ConcurrentRumTree::new(index).unwrap();
        let logs: Vec<Vec<Logged>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (tree, ticket, inserted) = (&tree, &ticket, &inserted);
                    s.spawn(move || {
                        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (phase * THREADS + t) as u64);
                        let mut mine: Vec<Logged> = Vec::with_capacity(per_thread_phase as usize);
                        // This thread's objects: oid % THREADS == t.
                        let owned = (objects - t as u64).div_ceil(THREADS as u64);
                        for _ in 0..per_thread_phase {
                            let oid = t as u64 + THREADS as u64 * rng.random_range(0..owned);
                            let at = point(&mut rng);
                            let insert = !inserted[oid as usize].load(Ordering::Relaxed);
                            let ts = ticket.fetch_add(1, Ordering::AcqRel) + 1;
                            if insert {
                                tree.insert(oid, ts, at).unwrap();
                                inserted[oid as usize].store(true, Ordering::Relaxed);
                            } else {
                                tree.update(oid, ts, at).unwrap();
                            }
                            mine.push(Logged { ts, oid, at, insert });
                        }
                        mine
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("an ingesting thread panicked"))
                .collect()
        });
        index = tree.into_inner();
        let mut phase_log: Vec<Logged> = logs.into_iter().flatten().collect();
        phase_log.sort_unstable_by_key(|l| l.ts);
        for l in &phase_log {
            oracle.insert(l.oid, (l.ts, l.at));
        }
        log.extend(phase_log);
        if let Err(e) = check(&index, &oracle, &probes, &format!("{name}, after phase {phase}")) {
            panic!("{e}");
        }
    }
    // Every ticket was taken exactly once.
    assert!(
        log.iter().enumerate().all(|(i, l)| l.ts == i as u64 + 1),
        "{name}: the tickets are not 1..={}",
        log.len()
    );

    // The sequential replay, in ticket order, through the same code on one thread.
    let replay = ConcurrentRumTree::new(open(strategy)).unwrap();
    for l in &log {
        if l.insert {
            replay.insert(l.oid, l.ts, l.at).unwrap();
        } else {
            replay.update(l.oid, l.ts, l.at).unwrap();
        }
    }
    let replay = replay.into_inner();
    check(&replay, &oracle, &probes, &format!("{name}, replay")).unwrap();
    for r in &probes {
        assert_eq!(
            answer(&index, r),
            answer(&replay, r),
            "{name}: query {r:?} differs from the replay"
        );
    }
    let cleaning_free = strategy
        .switches()
        .is_some_and(|s| !(s.flush || s.merge || s.buffered || s.vacuum));
    if cleaning_free {
        assert_eq!(
            index.update_memo().unwrap().snapshot(),
            replay.update_memo().unwrap().snapshot(),
            "{name}: the Update Memo differs from the replay's"
        );
    }
    let st = index.stats().rtree;
    Counts {
        ops: log.len() as u64,
        flushes: st.flushes,
        merges: st.merges,
    }
}

#[test]
fn concurrent_ingestion_equals_its_sequential_replay() {
    let ops = env_u64("STRESS_OPS", 24_000);
    let seed = env_u64("SOAK_SEED", 0);
    let mut total = Counts::default();
    for (i, name) in ["UM", "UM+F", "UM+M", "UM+BV", "UM+FMBV"].iter().enumerate() {
        let c = stress(name.parse().unwrap(), ops, seed.wrapping_add(i as u64));
        assert!(c.flushes > 0 && c.merges > 0, "{name}: no flush or merge: {c:?}");
        total.ops += c.ops;
        total.flushes += c.flushes;
        total.merges += c.merges;
    }
    println!(
        "stress (concurrent RUM-tree, {THREADS} threads): 5 strategies, {} operations checked against the replay, {} flushes, {} merges, 0 mismatches",
        total.ops, total.flushes, total.merges
    );
}
