//! Every strategy of the LSM R-tree secondary index against a brute-force oracle, on randomized
//! insert / update / delete / query streams that cross many flushes and merges.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::geom::{Point, Rect};
use lsmlab_engine::lsm::MergePolicyConfig;
use lsmlab_engine::spatial::{
    CleaningCounters, EagerVariant, FlushTrigger, LsmRTree, QueryOutcome, SpatialConfig, Strategy,
    ValidationVariant,
};
use lsmlab_engine::storage::{Device, MemDevice};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::sync::Arc;

mod common;
use common::{small_spatial_config, EXTENT};

/// Small pages (7 entries a leaf) and a tiny memory budget, so that a few hundred operations cross
/// many flushes and merges.
fn small_index(strategy: Strategy, tweak: impl FnOnce(&mut SpatialConfig)) -> (LsmRTree, Arc<dyn Device>) {
    let device: Arc<dyn Device> = Arc::new(MemDevice::new(256));
    let cache = Arc::new(BufferCache::new(device.clone(), 16));
    let mut cfg = small_spatial_config(strategy, 4);
    tweak(&mut cfg);
    (LsmRTree::new(cfg, cache).unwrap(), device)
}

/// A named strategy plus a tweak of its configuration.
type Variant = (String, Strategy, fn(&mut SpatialConfig));

fn variants() -> Vec<Variant> {
    let mut v: Vec<Variant> = Vec::new();
    let names = Strategy::PAPER.iter().chain(
        [
            "Eager(buddy)",
            "Eager(physical)",
            "Validation(key-index)",
            "Validation(repair)",
            "UM+FM",
            "UM+B",
            "UM+V",
            "UM+FBV",
        ]
        .iter(),
    );
    for name in names {
        v.push((name.to_string(), name.parse().unwrap(), |_| {}));
    }
    // Every family of the strategy table, so a strategy added there is checked with no edit here.
    for def in lsmlab_engine::spatial::STRATEGIES {
        let name = (def.name)(0);
        if !v.iter().any(|(n, _, _)| *n == name) {
            v.push((name.clone(), name.parse().unwrap(), |_| {}));
        }
    }
    for name in ["Eager", "Eager(buddy)", "Eager(physical)"] {
        v.push((format!("{name} (primary lookup)"), name.parse().unwrap(), |c| {
            c.eager_primary_lookup = true
        }));
    }
    // The other flush trigger and cleaning counters.
    for name in [
        "Eager",
        "Eager(buddy)",
        "Eager(physical)",
        "Validation",
        "Validation(key-index)",
        "UM+BV",
        "UM+FMBV",
    ] {
        v.push((format!("{name} (live trigger)"), name.parse().unwrap(), |c| {
            c.flush_trigger = FlushTrigger::Live
        }));
    }
    for name in ["UM+B", "UM+BV", "UM+FMBV"] {
        v.push((
            format!("{name} (all-insert counters)"),
            name.parse().unwrap(),
            |c| c.cleaning_counters = CleaningCounters::AllInserts,
        ));
    }
    v.push(("UM+FMBV (no merges)".into(), "UM+FMBV".parse().unwrap(), |c| {
        c.merge_policy = MergePolicyConfig::None
    }));
    // Without Bloom filters the authors' Validation probe finds the keys it would otherwise skip.
    for name in ["Validation", "Eager(buddy)"] {
        v.push(
            (format!("{name} (no Bloom filters)"), name.parse().unwrap(), |c| {
                c.bloom_fp = None
            }),
        );
    }
    v
}

#[derive(Clone, Debug)]
enum Op {
    Insert(Point),
    Update(usize, Point),
    Delete(usize),
    Query(Rect),
}

fn point(rng: &mut impl Rng, hot: bool) -> Point {
    if hot {
        // a hot spot so that leaves collect many versions of the same objects
        Point::new(40.0 + rng.random::<f64>() * 5.0, 40.0 + rng.random::<f64>() * 5.0)
    } else {
        Point::new(rng.random::<f64>() * 100.0, rng.random::<f64>() * 100.0)
    }
}

fn random_ops(seed: u64, n: usize) -> Vec<Op> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut ops = Vec::with_capacity(n);
    let mut objects = 0usize;
    for _ in 0..n {
        let r: f64 = rng.random();
        let hot = rng.random_bool(0.5);
        if objects == 0 || r < 0.12 {
            ops.push(Op::Insert(point(&mut rng, hot)));
            objects += 1;
        } else if r < 0.85 {
            ops.push(Op::Update(rng.random_range(0..objects), point(&mut rng, hot)));
        } else if r < 0.90 {
            ops.push(Op::Delete(rng.random_range(0..objects)));
        } else {
            let a = point(&mut rng, hot);
            let side = rng.random::<f64>() * 40.0;
            ops.push(Op::Query(Rect::new(
                a.x - side / 2.0,
                a.y - side / 2.0,
                a.x + side / 2.0,
                a.y + side / 2.0,
            )));
        }
    }
    ops
}

fn oracle_answer(live: &BTreeMap<u64, Point>, rect: &Rect) -> Vec<(u64, (u64, u64))> {
    live.iter()
        .filter(|(_, p)| rect.contains_point(**p))
        .map(|(&o, p)| (o, (p.x.to_bits(), p.y.to_bits())))
        .collect()
}

fn index_answer(index: &LsmRTree, rect: &Rect) -> Vec<(u64, (u64, u64))> {
    let out = index.query(rect).unwrap();
    let mut v: Vec<_> = out
        .results
        .iter()
        .map(|e| (e.oid, (e.point.x.to_bits(), e.point.y.to_bits())))
        .collect();
    v.sort_unstable();
    v
}

/// Replays `ops` on the index and the oracle; panics at the first disagreement.
fn check_stream(name: &str, index: &mut LsmRTree, ops: &[Op]) {
    let mut live: BTreeMap<u64, Point> = BTreeMap::new();
    let mut next_oid = 0u64;
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Insert(p) => {
                index.insert(next_oid, *p).unwrap();
                live.insert(next_oid, *p);
                next_oid += 1;
            }
            Op::Update(i, p) => {
                let oid = *i as u64;
                if let Some(old) = live.get(&oid).copied() {
                    index.update(oid, Some(old), *p).unwrap();
                    live.insert(oid, *p);
                } else {
                    // a deleted object comes back
                    index.insert(oid, *p).unwrap();
                    live.insert(oid, *p);
                }
            }
            Op::Delete(i) => {
                let oid = *i as u64;
                if let Some(old) = live.remove(&oid) {
                    index.delete(oid, Some(old)).unwrap();
                }
            }
            Op::Query(rect) => {
                assert_eq!(
                    index_answer(index, rect),
                    oracle_answer(&live, rect),
                    "{name}: query {rect:?} at step {step}"
                );
            }
        }
        if let Some(um) = index.update_memo() {
            assert!(
                !um.has_zero_count_entry(),
                "{name}: UM entry with count 0 at step {step}"
            );
        }
    }
    // the whole extent, at the end
    let all = Rect::new(-1.0, -1.0, 101.0, 101.0);
    assert_eq!(
        index_answer(index, &all),
        oracle_answer(&live, &all),
        "{name}: final full scan"
    );
}

#[test]
fn every_strategy_matches_the_oracle_across_flushes_and_merges() {
    for seed in 0..6 {
        let ops = random_ops(seed, 3000);
        for (name, strategy, tweak) in variants() {
            let (mut index, _dev) = small_index(strategy, tweak);
            check_stream(&name, &mut index, &ops);
            let st = index.stats();
            assert!(st.rtree.flushes >= 5, "{name}: only {} flushes", st.rtree.flushes);
            if !name.contains("no merges") {
                assert!(st.rtree.merges >= 1, "{name}: no merge happened");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn random_streams_agree_with_the_oracle(seed in any::<u64>(), n in 50usize..1500, which in 0usize..64) {
        let vs = variants();
        let (name, strategy, tweak) = &vs[which % vs.len()];
        let (mut index, _dev) = small_index(*strategy, *tweak);
        check_stream(name, &mut index, &random_ops(seed, n));
    }
}

#[test]
fn cleaning_strategies_remove_obsolete_entries_and_shrink_the_memo() {
    let ops: Vec<Op> = random_ops(7, 4000)
        .into_iter()
        .filter(|o| !matches!(o, Op::Delete(_)))
        .collect();
    let mut sizes = BTreeMap::new();
    for name in ["UM", "UM+F", "UM+M", "UM+BV", "UM+FMBV"] {
        let (mut index, _dev) = small_index(name.parse().unwrap(), |_| {});
        check_stream(name, &mut index, &ops);
        sizes.insert(name, (index.stats(), index.disk_entries()));
    }
    let (um, um_disk) = sizes["UM"];
    assert_eq!(
        um.cleaned.flush + um.cleaned.merge + um.cleaned.buffered + um.cleaned.vacuum,
        0
    );
    let (f, f_disk) = sizes["UM+F"];
    assert!(
        f.cleaned.flush > 0 && f_disk < um_disk,
        "UM+F keeps obsolete entries out of disk components"
    );
    let (m, _) = sizes["UM+M"];
    assert!(m.cleaned.merge > 0);
    let (bv, _) = sizes["UM+BV"];
    assert!(bv.cleaned.buffered > 0 && bv.cleaned.vacuum > 0);
    assert!(bv.um_max_entries <= um.um_max_entries);
    assert!(
        bv.rtree.flushes <= um.rtree.flushes,
        "cleaning memory leaves delays flushes"
    );
}

#[test]
fn full_merge_with_f_and_m_leaves_an_empty_update_memo() {
    let ops: Vec<Op> = random_ops(11, 3000)
        .into_iter()
        .filter(|o| !matches!(o, Op::Query(_)))
        .collect();
    let (mut index, _dev) = small_index("UM+FM".parse().unwrap(), |c| {
        // merge everything into one component at every flush
        c.merge_policy = MergePolicyConfig::Prefix {
            max_mergeable_pages: u64::MAX / 4,
            max_tolerance_components: 2,
        };
    });
    check_stream("UM+FM", &mut index, &ops);
    index.flush().unwrap();
    assert_eq!(index.disk_components(), 1);
    assert_eq!(index.memory_entries(), 0);
    let um = index.update_memo().unwrap();
    assert!(
        um.is_empty(),
        "UM holds {} entries after a full merge with F and M",
        um.len()
    );
}

/// The worked example of the paper's Figure 2 / Table 1(c): a search from (30,30) to (40,40)
/// returns objects 4 and 2; object 3's entry at (30,30) stamped t4 is obsolete since its delete at t7.
#[test]
fn paper_figure_2_worked_example() {
    for name in Strategy::PAPER {
        let (mut index, _dev) = small_index(name.parse().unwrap(), |c| c.memory_budget_pages = 1000);
        let p = Point::new;
        index.insert(1, p(10.0, 10.0)).unwrap(); // t1
        index.insert(2, p(20.0, 20.0)).unwrap(); // t2
        index.update(1, Some(p(10.0, 10.0)), p(60.0, 60.0)).unwrap(); // t3
        index.insert(3, p(30.0, 30.0)).unwrap(); // t4
        index.insert(4, p(40.0, 40.0)).unwrap(); // t5
        index.update(1, Some(p(60.0, 60.0)), p(70.0, 10.0)).unwrap(); // t6
        index.delete(3, Some(p(30.0, 30.0))).unwrap(); // t7
        index.update(2, Some(p(20.0, 20.0)), p(30.0, 30.0)).unwrap(); // t8
        let out = index.query(&Rect::new(30.0, 30.0, 40.0, 40.0)).unwrap();
        let mut oids: Vec<u64> = out.results.iter().map(|e| e.oid).collect();
        oids.sort_unstable();
        assert_eq!(oids, vec![2, 4], "{name}");
        if name == "UM" {
            assert_eq!(
                out.candidates, 3,
                "UM candidates <(30,30),3,t4>, <(40,40),4,t5>, <(30,30),2,t8>"
            );
            let um = index.update_memo().unwrap();
            assert_eq!(um.get(3).map(|s| (s.ts, s.cnt)), Some((7, 1)));
            assert_eq!(um.get(2).map(|s| (s.ts, s.cnt)), Some((8, 1)));
            assert_eq!(um.get(4), None);
        }
    }
}

#[test]
fn bad_configuration_is_a_typed_error() {
    let device: Arc<dyn Device> = Arc::new(MemDevice::new(256));
    let cache = Arc::new(BufferCache::new(device, 16));
    let mut cfg = SpatialConfig::new("Eager".parse().unwrap(), EXTENT, 0);
    assert!(LsmRTree::new(cfg.clone(), cache.clone()).is_err());
    cfg.memory_budget_pages = 4;
    cfg.key_index_budget_pages = 4;
    cfg.bloom_fp = Some(1.5);
    let e = LsmRTree::new(cfg, cache).err().unwrap();
    assert!(e.to_string().contains("bloom_fp"));
}

#[test]
fn retired_components_return_their_pages() {
    let ops = random_ops(3, 2000);
    let (mut index, device) = small_index("UM+FMBV".parse().unwrap(), |_| {});
    check_stream("UM+FMBV", &mut index, &ops);
    assert_eq!(
        device.allocated_pages(),
        index.disk_pages(),
        "merged-away components were freed"
    );
    drop(index);
    assert_eq!(device.allocated_pages(), 0);
}

/// Concurrent ingestion (Section 5 of the paper): the stream is split by object id over threads;
/// the fresh set equals a single-threaded replay's, and the UM stays consistent with the index.
#[test]
fn concurrent_ingestion_matches_a_single_threaded_replay() {
    use lsmlab_engine::spatial::ConcurrentRumTree;
    // (oid, ts, point, first?) in stream order; 300 objects, 20 moves each
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(99);
    let mut stream = Vec::new();
    let mut ts = 0u64;
    for round in 0..20 {
        for oid in 0..300u64 {
            ts += 1;
            stream.push((oid, ts, point(&mut rng, oid % 3 == 0), round == 0));
        }
    }
    for name in ["UM", "UM+F", "UM+FMBV", "UM+BV"] {
        let run = |threads: u64| {
            let (index, _dev) = small_index(name.parse().unwrap(), |_| {});
            let tree = ConcurrentRumTree::new(index).unwrap();
            std::thread::scope(|s| {
                for t in 0..threads {
                    let tree = &tree;
                    let stream = &stream;
                    s.spawn(move || {
                        for &(oid, ts, p, first) in stream.iter().filter(|op| op.0 % threads == t) {
                            if first {
                                tree.insert(oid, ts, p).unwrap();
                            } else {
                                tree.update(oid, ts, p).unwrap();
                            }
                        }
                    });
                }
            });
            let index = tree.into_inner();
            if let Err(why) = index.audit_update_memo().unwrap() {
                panic!("{name} with {threads} threads: {why}");
            }
            let all = Rect::new(-1.0, -1.0, 101.0, 101.0);
            let mut fresh: Vec<(u64, u64)> = index
                .query(&all)
                .unwrap()
                .results
                .iter()
                .map(|e| (e.oid, e.ts))
                .collect();
            fresh.sort_unstable();
            (fresh, index.update_memo().unwrap().snapshot())
        };
        let (fresh1, um1) = run(1);
        assert_eq!(fresh1.len(), 300);
        for threads in [2, 4] {
            let (fresh, um) = run(threads);
            assert_eq!(fresh, fresh1, "{name}: fresh set with {threads} threads");
            if name == "UM" {
                // no cleaning: the UM's state does not depend on the interleaving
                assert_eq!(um, um1, "{name}: UM state with {threads} threads");
            }
        }
    }
}

/// The same oracle check on real checksummed files: the counted I/O matches the in-memory
/// device's exactly, and the answers are the oracle's.
#[test]
fn file_device_gives_the_same_answers_and_counts_as_memory() {
    use lsmlab_engine::storage::FileDevice;
    let ops = random_ops(21, 2500);
    for name in ["Eager", "Validation", "UM+FMBV"] {
        let dir = tempfile::tempdir().unwrap();
        let file: Arc<dyn Device> = Arc::new(FileDevice::temporary(dir.path(), 256).unwrap());
        let mem: Arc<dyn Device> = Arc::new(MemDevice::new(256));
        let mut counts = Vec::new();
        for device in [file, mem] {
            let cache = Arc::new(BufferCache::new(device.clone(), 16));
            let mut cfg = SpatialConfig::new(name.parse().unwrap(), EXTENT, 4);
            cfg.merge_policy = MergePolicyConfig::Prefix {
                max_mergeable_pages: 40,
                max_tolerance_components: 3,
            };
            cfg.key_index_budget_pages = 2;
            let mut index = LsmRTree::new(cfg, cache).unwrap();
            check_stream(name, &mut index, &ops);
            counts.push(device.stats());
        }
        assert_eq!(
            counts[0], counts[1],
            "{name}: file and memory devices counted different I/O"
        );
        assert!(counts[0].page_writes > 0);
    }
}

/// The Update Memo's audit holds after single-threaded streams under every cleaning variant, and
/// the strategies without a memo have none and nothing to audit.
#[test]
fn update_memo_audit_holds_and_only_um_strategies_have_a_memo() {
    let ops = random_ops(5, 2500);
    for (name, strategy, tweak) in variants() {
        let (mut index, _dev) = small_index(strategy, tweak);
        check_stream(&name, &mut index, &ops);
        assert_eq!(
            index.update_memo().is_some(),
            strategy.uses_update_memo(),
            "{name}"
        );
        assert_eq!(
            index.shared_update_memo().is_some(),
            strategy.uses_update_memo(),
            "{name}"
        );
        if let Err(why) = index.audit_update_memo().unwrap() {
            panic!("{name}: {why}");
        }
    }
}

/// `for_each_fresh`, which holds no candidates, passes exactly the entries a query over the whole
/// plane returns, and sees as many candidates, under every strategy and cleaning variant.
#[test]
fn the_fresh_scan_returns_what_a_whole_plane_query_returns() {
    let key =
        |e: &lsmlab_engine::rtree::SpatialEntry| (e.oid, e.ts, e.point.x.to_bits(), e.point.y.to_bits());
    for seed in [5, 17] {
        let ops = random_ops(seed, 2500);
        for (name, strategy, tweak) in variants() {
            let (mut index, _dev) = small_index(strategy, tweak);
            check_stream(&name, &mut index, &ops);
            let all = Rect::new(f64::MIN, f64::MIN, f64::MAX, f64::MAX);
            let q = index.query(&all).unwrap();
            let mut queried: Vec<_> = q.results.iter().map(key).collect();
            let mut scanned = Vec::new();
            let candidates = index.for_each_fresh(|e| scanned.push(key(e))).unwrap();
            queried.sort_unstable();
            scanned.sort_unstable();
            assert!(!scanned.is_empty(), "{name}");
            assert_eq!(scanned, queried, "{name}, seed {seed}: fresh entries");
            assert_eq!(candidates, q.candidates, "{name}, seed {seed}: candidates");
        }
    }
}

/// The R-tree's flushes and merges run on the framework's executor: an observer sees one finished
/// flush per flush and one finished merge per merge, each component with its R-tree extent and,
/// under Eager(buddy), its deleted-key B+-tree extent, and the extents' pages add up to the disk
/// pages.
#[test]
fn lifecycle_events_report_every_flush_and_merge_with_both_extents() {
    use lsmlab_engine::lsm::{CompactionKind, EventLog, LifecycleEvent};
    let (mut index, device) = small_index("Eager(buddy)".parse().unwrap(), |_| {});
    let log = Arc::new(EventLog::new());
    index.subscribe(log.clone());
    check_stream("Eager(buddy)", &mut index, &random_ops(3, 2000));
    let st = index.stats().rtree;
    let events = log.events();
    let flushed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            LifecycleEvent::FlushFinished { output, .. } => Some(output),
            _ => None,
        })
        .collect();
    let merges = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                LifecycleEvent::CompactionFinished {
                    kind: CompactionKind::Merge,
                    ..
                }
            )
        })
        .count() as u64;
    assert_eq!((flushed.len() as u64, merges), (st.flushes, st.merges));
    assert!(st.merges > 0);
    assert!(
        flushed.iter().any(|r| r.extents.len() == 2),
        "Eager(buddy)'s flushed components carry deleted keys"
    );
    assert!(flushed.iter().all(|r| r.keys.is_none() && !r.extents.is_empty()));
    // Without a key index every allocated page is a component's.
    assert_eq!(device.allocated_pages(), index.disk_pages());
}

/// 10 objects inserted, then moved 200 times each to uniform random places, with a query every
/// 50 operations: memory leaves fill with versions of objects that have moved elsewhere.
fn moving_objects() -> Vec<Op> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2024);
    let mut ops: Vec<Op> = (0..10).map(|_| Op::Insert(point(&mut rng, false))).collect();
    for round in 0..200 {
        for oid in 0..10 {
            ops.push(Op::Update(oid, point(&mut rng, false)));
            if (round * 10 + oid) % 50 == 0 {
                let a = point(&mut rng, false);
                ops.push(Op::Query(Rect::new(
                    a.x - 15.0,
                    a.y - 15.0,
                    a.x + 15.0,
                    a.y + 15.0,
                )));
            }
        }
    }
    ops
}

/// Replays `moving_objects` (checked against the oracle) and returns the index.
fn replay_moving(strategy: &str, tweak: fn(&mut SpatialConfig)) -> LsmRTree {
    let (mut index, _dev) = small_index(strategy.parse().unwrap(), tweak);
    check_stream(strategy, &mut index, &moving_objects());
    index
}

/// Each default is the authors' behaviour, and each switch changes what is counted: `LSMRTree`'s
/// Eager(buddy) keeps every version in memory (more flushes than AsterixDB's physical delete), and the
/// authors' flush trigger counts pages allocated, so cleaning that empties leaves frees no budget
/// (more flushes than counting live nodes).
#[test]
fn defaults_are_the_authors_and_each_switch_changes_the_flush_count() {
    let cfg = SpatialConfig::new("UM+BV".parse().unwrap(), EXTENT, 4);
    assert_eq!(cfg.flush_trigger, FlushTrigger::Allocated);
    assert_eq!(cfg.cleaning_counters, CleaningCounters::Updates);
    assert_eq!(
        "Eager".parse::<Strategy>().unwrap(),
        Strategy::eager(EagerVariant::Antimatter)
    );
    assert_eq!(
        "Validation".parse::<Strategy>().unwrap(),
        Strategy::validation(ValidationVariant::Probe)
    );

    let flushes = |index: &LsmRTree| index.stats().rtree.flushes;
    let authors = replay_moving("Eager(buddy)", |_| {});
    let physical = replay_moving("Eager(physical)", |_| {});
    eprintln!(
        "Eager flushes: authors {} physical {}",
        flushes(&authors),
        flushes(&physical)
    );
    assert!(
        flushes(&authors) > flushes(&physical),
        "authors {} vs physical {}",
        flushes(&authors),
        flushes(&physical)
    );
    let allocated = replay_moving("UM+BV", |_| {});
    let live = replay_moving("UM+BV", |c| c.flush_trigger = FlushTrigger::Live);
    eprintln!(
        "UM+BV flushes: allocated {} live {}",
        flushes(&allocated),
        flushes(&live)
    );
    assert!(
        flushes(&allocated) > flushes(&live),
        "allocated {} vs live {}",
        flushes(&allocated),
        flushes(&live)
    );
}

/// `LSMRTree`'s Eager(buddy) keeps every version in memory and flushes them all; the superseded
/// ones are read and probed as the authors' query reads and probes them (memory candidates
/// unprobed, disk candidates probed against memory's deleted keys) but never returned. AsterixDB's
/// physical delete keeps one entry per object.
#[test]
fn buddy_eager_flushes_superseded_versions_that_are_candidates_but_never_results() {
    let all = Rect::new(-1.0, -1.0, 101.0, 101.0);
    let p = Point::new;
    for (name, versions) in [("Eager(buddy)", 3u64), ("Eager(physical)", 1)] {
        let (mut index, _dev) = small_index(name.parse().unwrap(), |c| c.memory_budget_pages = 1000);
        index.insert(1, p(10.0, 10.0)).unwrap();
        index.update(1, Some(p(10.0, 10.0)), p(20.0, 20.0)).unwrap();
        index.update(1, Some(p(20.0, 20.0)), p(30.0, 30.0)).unwrap();
        let only = |out: &QueryOutcome| out.results.iter().map(|e| (e.oid, e.point)).collect::<Vec<_>>();
        let out = index.query(&all).unwrap();
        assert_eq!(only(&out), vec![(1, p(30.0, 30.0))], "{name}");
        assert_eq!((out.candidates, out.validation_lookups), (versions, 0), "{name}");
        index.flush().unwrap();
        assert_eq!(index.disk_entries(), versions, "{name}");
        assert_eq!(index.stats().superseded_flushed, versions - 1, "{name}");
        let out = index.query(&all).unwrap();
        assert_eq!(only(&out), vec![(1, p(30.0, 30.0))], "{name}");
        // each disk candidate probes memory's deleted keys once (no newer component)
        assert_eq!(
            (out.candidates, out.validation_lookups),
            (versions, versions),
            "{name}"
        );
        index.update(1, Some(p(30.0, 30.0)), p(40.0, 40.0)).unwrap();
        let out = index.query(&all).unwrap();
        assert_eq!(only(&out), vec![(1, p(40.0, 40.0))], "{name}");
        assert_eq!(
            (out.candidates, out.validation_lookups),
            (versions + 1, versions),
            "{name}"
        );
    }
}

/// On a stream of moving objects `LSMRTree`'s Eager(buddy) writes more (its components hold
/// superseded versions) and still answers exactly.
#[test]
fn buddy_eager_writes_superseded_versions_physical_writes_none() {
    let authors = replay_moving("Eager(buddy)", |_| {});
    let physical = replay_moving("Eager(physical)", |_| {});
    assert!(authors.stats().superseded_flushed > 0);
    assert_eq!(physical.stats().superseded_flushed, 0);
    let flushed = |i: &LsmRTree| i.stats().rtree.flushed_entries;
    assert!(flushed(&authors) > flushed(&physical));
    let all = Rect::new(-1.0, -1.0, 101.0, 101.0);
    let out = authors.query(&all).unwrap();
    assert_eq!(out.results.len(), 10);
    assert!(out.candidates > 10, "superseded versions are candidates");
}

/// Buffered and Vacuum counters as the authors' code keeps them (only updates count; Vacuum leaves
/// the cleaned leaf's Buffered counter alone) against counting every insert and resetting on any
/// cleaning. One object moves within a single memory leaf.
#[test]
fn cleaning_counters_follow_the_authors_rule_or_count_every_insert() {
    let p = Point::new;
    let run = |strategy: &str, counters: CleaningCounters, b: u32, v: u32, updates: usize| {
        let (mut index, _dev) = small_index(strategy.parse().unwrap(), |c| {
            c.memory_budget_pages = 1000;
            c.cleaning_counters = counters;
            c.buffered_threshold = b;
            c.vacuum_threshold = v;
        });
        index.insert(1, p(1.0, 1.0)).unwrap();
        for i in 0..updates {
            let from = p(1.0 + i as f64, 1.0);
            index.update(1, Some(from), p(2.0 + i as f64, 1.0)).unwrap();
        }
        let c = index.stats().cleaned;
        (c.buffered, c.vacuum)
    };
    use CleaningCounters::{AllInserts, Updates};
    // Buffered, threshold 2, one update: the first insert counts only under AllInserts.
    assert_eq!(run("UM+B", Updates, 2, 8, 1), (0, 0));
    assert_eq!(run("UM+B", AllInserts, 2, 8, 1), (1, 0));
    // Vacuum, threshold 2, one update: likewise.
    assert_eq!(run("UM+V", Updates, 8, 2, 1), (0, 0));
    assert_eq!(run("UM+V", AllInserts, 8, 2, 1), (0, 1));
    // Both, B threshold 3, V threshold 2, three updates. Authors: the vacuum at the second update
    // removes two versions and leaves the leaf's counter at 2, so the third update's Buffered
    // Cleaning removes the third. AllInserts: the vacuum at the first update resets the counter,
    // which never reaches 3; vacuums remove all three.
    assert_eq!(run("UM+BV", Updates, 3, 2, 3), (1, 2));
    assert_eq!(run("UM+BV", AllInserts, 3, 2, 3), (0, 3));
}

/// `Eager` is the authors' Eager index (`LSMRTreeWithAntiMatterTuples` driven by
/// `UMTest.run_antimatters_test`, updates through `AbstractLSMRTree.modify`). One object, inserted
/// and then updated 80 times, with a 2-page memory component of 256-byte pages (7 entries, or 7
/// antimatter tuples, a leaf): each update removes the old entry from the memory R-tree if it is
/// there (one leaf stays allocated) and adds an antimatter tuple in any case, which counts toward
/// the memory budget, so the memory component passes 2 pages at its 8th antimatter tuple: 10
/// flushes, each writing the current entry and 8 antimatter entries into the disk R-tree. The
/// old entry is in memory for every update but the first after each flush (71 of 80). AsterixDB's
/// physical delete with a buddy B-tree keeps one deleted key and one entry: no flush at all.
#[test]
fn the_default_eager_is_the_authors_antimatter_index() {
    let p = Point::new;
    let run = |name: &str| {
        let (mut index, _dev) = small_index(name.parse().unwrap(), |c| c.memory_budget_pages = 2);
        let mut ops = vec![Op::Insert(p(50.0, 50.0))];
        ops.extend((1..=80).map(|i| Op::Update(0, p(50.0 + f64::from(i) / 100.0, 50.0))));
        ops.push(Op::Query(Rect::new(0.0, 0.0, 100.0, 100.0)));
        check_stream(name, &mut index, &ops);
        index
    };
    let eager = run("Eager");
    let st = eager.stats();
    assert_eq!(st.rtree.flushes, 10);
    assert_eq!(st.antimatter_flushed, 80);
    assert_eq!(st.rtree.flushed_entries, 10 + 80);
    assert_eq!(st.cleaned.memory_deletes, 71);
    assert_eq!(st.superseded_flushed, 0);
    assert_eq!(eager.memory_entries(), 0, "the 80th update flushed");
    assert!(st.rtree.merges > 0);
    let physical = run("Eager(physical)").stats();
    assert_eq!((physical.rtree.flushes, physical.antimatter_flushed), (0, 0));
    let buddy = run("Eager(buddy)").stats();
    assert_eq!(buddy.antimatter_flushed, 0);
    assert!(buddy.superseded_flushed > 0);
}

/// An antimatter entry shadows its target in an older component at query time without a probe (the
/// authors' priority-queue merge of the disk cursors), a surviving disk entry is probed once in
/// the memory antimatter, and memory entries are not probed (the merge rule is pinned in
/// `eager.rs`).
#[test]
fn eager_antimatter_shadows_its_target_at_query_time() {
    let all = Rect::new(-1.0, -1.0, 101.0, 101.0);
    let p = Point::new;
    let (mut index, _dev) = small_index("Eager".parse().unwrap(), |c| {
        c.memory_budget_pages = 1000;
        c.merge_policy = MergePolicyConfig::None;
    });
    index.insert(1, p(10.0, 10.0)).unwrap();
    index.update(1, Some(p(10.0, 10.0)), p(20.0, 20.0)).unwrap();
    index.update(1, Some(p(20.0, 20.0)), p(30.0, 30.0)).unwrap();
    let out = index.query(&all).unwrap();
    // memory: one entry (the old ones removed), unprobed
    assert_eq!(
        (out.results.len(), out.candidates, out.validation_lookups),
        (1, 1, 0)
    );
    index.flush().unwrap();
    // one entry and two antimatter entries (whose targets were removed from memory)
    assert_eq!((index.disk_entries(), index.stats().antimatter_flushed), (3, 2));
    let out = index.query(&all).unwrap();
    assert_eq!(
        (out.results.len(), out.candidates, out.validation_lookups),
        (1, 3, 1)
    );
    index.update(1, Some(p(30.0, 30.0)), p(40.0, 40.0)).unwrap();
    let out = index.query(&all).unwrap();
    // memory 40 unprobed; disk 30 probed and killed by the memory antimatter
    assert_eq!(
        (out.results.len(), out.candidates, out.validation_lookups),
        (1, 4, 1)
    );
    assert_eq!(out.results[0].point, p(40.0, 40.0));
    index.flush().unwrap();
    let out = index.query(&all).unwrap();
    // 40 probed; the antimatter of 30 hides 30 in the older component, unprobed
    assert_eq!(
        (out.results.len(), out.candidates, out.validation_lookups),
        (1, 5, 1)
    );
    assert_eq!(out.results[0].point, p(40.0, 40.0));
    assert_eq!(index.disk_entries(), 5);
}

/// `Validation` is the authors' Validation index (`LSMRTree` driven by `UMTest.runTest`, queried
/// through `LSMRTreeSearchCursor`): each disk candidate probes memory's deleted keys, then every
/// newer component's deleted-key tree whose Bloom filter rules its object out (the inverted
/// test), skipping the one that holds it. Three components, newest first: {4} without deleted
/// keys, {1'} deleting 1, {1, 2, 3}. Candidates 4 and 1' probe memory only; 1 probes memory and
/// skips the tree holding it; 2 and 3 probe memory and that tree (and find nothing). Eager(buddy)
/// counts every newer tree it asks (through its Bloom filter), and Luo & Carey's key index one
/// lookup per candidate. Without Bloom filters the probe path searches every newer tree and stops
/// where it finds the key. Every variant answers exactly.
#[test]
fn the_default_validation_is_the_authors_probe_path() {
    let all = Rect::new(-1.0, -1.0, 101.0, 101.0);
    let p = Point::new;
    let run = |name: &str, bloom: bool| {
        let (mut index, _dev) = small_index(name.parse().unwrap(), |c| {
            c.memory_budget_pages = 1000;
            c.merge_policy = MergePolicyConfig::None;
            if !bloom {
                c.bloom_fp = None;
            }
        });
        for oid in 1..=3 {
            index.insert(oid, p(10.0 * oid as f64, 10.0)).unwrap();
        }
        index.flush().unwrap();
        index.update(1, Some(p(10.0, 10.0)), p(50.0, 50.0)).unwrap();
        index.flush().unwrap();
        index.insert(4, p(60.0, 60.0)).unwrap();
        index.flush().unwrap();
        let out = index.query(&all).unwrap();
        let mut got: Vec<_> = out.results.iter().map(|e| (e.oid, e.point)).collect();
        got.sort_by_key(|g| g.0);
        let want = vec![
            (1, p(50.0, 50.0)),
            (2, p(20.0, 10.0)),
            (3, p(30.0, 10.0)),
            (4, p(60.0, 60.0)),
        ];
        assert_eq!(got, want, "{name}");
        assert_eq!(out.candidates, 5, "{name}");
        out.validation_lookups
    };
    assert_eq!(run("Validation", true), 7);
    assert_eq!(run("Eager(buddy)", true), 8);
    assert_eq!(run("Validation(key-index)", true), 5);
    assert_eq!(run("Validation", false), 8);
}
