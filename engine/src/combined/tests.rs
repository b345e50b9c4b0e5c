//! The combined query against a brute-force oracle (every object's current location and record
//! contents kept beside the store) on randomized streams, for every strategy x layout x cache
//! policy; and each query's counted pages against the cache's and the cluster's own counters.

use super::*;
use crate::leaper::features::Row;
use crate::leaper::{HotRangeModel, LeaperModel, LeaperParams, ModelMeta, Precursors};
use crate::spatial::Strategy;
use crate::storage::MemDevice;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A stand-in step model: hot when the range was read in the last slot (feature 0 counts reads
/// there), so some leaves are admitted and some are not.
struct ReadLastSlot;

impl HotRangeModel for ReadLastSlot {
    fn name(&self) -> &'static str {
        "read-last-slot"
    }
    fn predict(&self, row: &Row) -> f64 {
        if row[0] > 0.0 {
            0.9
        } else {
            0.1
        }
    }
    fn save(&self, _path: &std::path::Path) -> crate::leaper::LeaperResult<()> {
        Ok(())
    }
}

fn leaper() -> WarmUp {
    let meta = ModelMeta {
        range_size: 1 << 24,
        slot_secs: 1.0,
        day_secs: 86_400.0,
        threshold: 0.5,
        epsilon: 0.5,
    };
    let models: Vec<Box<dyn HotRangeModel>> = vec![Box::new(ReadLastSlot), Box::new(ReadLastSlot)];
    let model = LeaperModel::new(meta, Precursors::default(), models).unwrap();
    let params = LeaperParams {
        sample_p: 1.0,
        ..LeaperParams::default()
    };
    WarmUp::Leaper(Box::new(LeaperPolicy::new(model, params).unwrap()))
}

fn warm(policy: CachePolicy) -> WarmUp {
    match policy {
        CachePolicy::Lru => WarmUp::Lru,
        CachePolicy::Prepopulate => WarmUp::Prepopulate,
        CachePolicy::Leaper => leaper(),
    }
}

fn strategies() -> Vec<Strategy> {
    [
        "Eager",
        "Eager(buddy)",
        "Eager(physical)",
        "Validation",
        "Validation(key-index)",
        "Validation(repair)",
        "UM",
        "UM+F",
        "UM+FMBV",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect()
}

const EXTENT: Rect = Rect {
    min: Point::new(0.0, 0.0),
    max: Point::new(100.0, 100.0),
};

fn open(strategy: Strategy, layout: Layout, policy: CachePolicy, cache_pages: usize) -> CombinedStore {
    let device = Arc::new(MemDevice::new(1024));
    let cache = Arc::new(BufferCache::new(device, cache_pages));
    let mut cfg = SpatialConfig::new(strategy, EXTENT, 2);
    cfg.key_index_budget_pages = 2;
    CombinedStore::new(cfg, layout, cache, 80, warm(policy)).unwrap()
}

fn oracle(truth: &FxHashMap<u64, (Point, u64)>, rect: &Rect) -> Vec<(u64, u64, Point)> {
    let mut v: Vec<_> = truth
        .iter()
        .filter(|(_, (p, _))| rect.contains_point(*p))
        .map(|(&o, &(p, ver))| (o, ver, p))
        .collect();
    v.sort_unstable_by_key(|x| x.0);
    v
}

/// Runs a random stream of moves and queries; checks every answer against the oracle and the
/// counted pages against the counters; returns the number of queries with a non-empty answer.
fn run(strategy: Strategy, layout: Layout, policy: CachePolicy, seed: u64) -> u64 {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut store = open(strategy, layout, policy, 12);
    let mut truth: FxHashMap<u64, (Point, u64)> = FxHashMap::default();
    let objects = 60u64;
    let mut nonempty = 0;
    for step in 0..900u64 {
        store.set_now(step as f64 * 0.05);
        if rng.random_bool(0.8) {
            let oid = rng.random_range(0..objects);
            // hot corner: a third of the moves land in [0, 20]^2
            let side = if rng.random_bool(0.33) { 20.0 } else { 100.0 };
            let to = Point::new(rng.random_range(0.0..side), rng.random_range(0.0..side));
            store.update(oid, to).unwrap();
            let v = truth.get(&oid).map_or(1, |&(_, v)| v + 1);
            truth.insert(oid, (to, v));
        } else {
            let (x, y) = (rng.random_range(0.0..90.0), rng.random_range(0.0..90.0));
            let w = rng.random_range(1.0..40.0);
            let rect = Rect {
                min: Point::new(x, y),
                max: Point::new(x + w, y + w),
            };
            let (c0, s0) = (store.cache_stats(), store.cluster.stats());
            let answer = store.query(&rect).unwrap();
            let (c1, s1) = (store.cache_stats(), store.cluster.stats());
            let want = oracle(&truth, &rect);
            let got: Vec<_> = answer.records.iter().map(|r| (r.oid, r.version, r.at)).collect();
            assert_eq!(got, want, "{strategy} {layout} {policy} step {step} {rect:?}");
            for r in &answer.records {
                assert_eq!(
                    r,
                    &ObjectRecord::new(r.oid, r.version, r.at, 80),
                    "record contents"
                );
            }
            nonempty += u64::from(!want.is_empty());
            // pages: the split adds up to the cache's reads, the record side is the cluster's count
            let c = c1.since(&c0);
            assert_eq!(answer.pages.total(), c.hits + c.misses);
            assert_eq!(answer.pages.misses(), c.misses);
            assert_eq!(answer.pages.records(), s1.since(&s0).page_reads);
            assert_eq!(answer.cluster_page_reads, answer.pages.records());
            if want.is_empty() {
                assert_eq!(answer.pages.records(), 0);
            } else {
                // each data page once; paginated reads position-map pages too
                let pages = s1.since(&s0);
                assert!(pages.page_reads >= 1);
                assert_eq!(pages.map_page_reads > 0, layout == Layout::Paginated);
            }
        }
    }
    assert!(
        store.index.stats().rtree.merges > 0,
        "the stream flushed and merged"
    );
    nonempty
}

#[test]
fn combined_queries_match_the_oracle_for_every_strategy_layout_and_policy() {
    for strategy in strategies() {
        for layout in Layout::ALL {
            for policy in CachePolicy::ALL {
                for seed in 0..2 {
                    assert!(run(strategy, layout, policy, seed) > 10);
                }
            }
        }
    }
}

#[test]
fn warm_up_policies_admit_what_they_say() {
    let strategy: Strategy = "UM".parse().unwrap();
    let mut admitted = Vec::new();
    for policy in CachePolicy::ALL {
        let mut store = open(strategy, Layout::SinglePage, policy, 64);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        for step in 0..600u64 {
            store.set_now(step as f64 * 0.05);
            let to = Point::new(rng.random_range(0.0..100.0), rng.random_range(0.0..100.0));
            store.update(step % 50, to).unwrap();
            if step % 5 == 0 {
                store
                    .query(&Rect {
                        min: Point::new(0.0, 0.0),
                        max: Point::new(30.0, 30.0),
                    })
                    .unwrap();
            }
        }
        let w = store.warm_stats();
        let c = store.cache_stats();
        assert_eq!(
            w.blocks_admitted + w.other_admitted,
            c.prefetch_admissions,
            "{policy}"
        );
        match policy {
            CachePolicy::Lru => {
                // Told of every flush and merge, it admits and evicts nothing.
                assert!(w.operations > 0 && w.blocks_offered > 0);
                assert_eq!(
                    (w.blocks_admitted, w.other_admitted, w.policy_evictions),
                    (0, 0, 0)
                );
            }
            CachePolicy::Prepopulate => {
                assert!(w.operations > 0);
                // Every leaf and every other page of every new component.
                assert_eq!(w.blocks_admitted, w.blocks_offered);
                assert!(w.blocks_admitted > 0 && w.other_admitted > 0);
                assert_eq!(w.policy_evictions, 0);
            }
            CachePolicy::Leaper => {
                assert!(w.blocks_offered > 0);
                assert!(store.leaper_stats().unwrap().blocks_offered == w.blocks_offered);
            }
        }
        admitted.push(w.blocks_admitted);
    }
    // Leaper admits at most what prepopulation does (it chooses among the same leaves)
    assert!(admitted[2] <= admitted[1], "{admitted:?}");
}

#[test]
fn records_round_trip_and_short_ones_are_refused() {
    let r = ObjectRecord::new(7, 3, Point::new(1.5, -2.0), 50);
    assert_eq!(ObjectRecord::decode(&r.encode()).unwrap(), r);
    assert!(ObjectRecord::decode(&[0u8; 10]).is_err());
    let device = Arc::new(MemDevice::new(1024));
    let cache = Arc::new(BufferCache::new(device, 4));
    let cfg = SpatialConfig::new("UM".parse().unwrap(), EXTENT, 2);
    assert!(CombinedStore::new(cfg, Layout::Paginated, cache, 8, WarmUp::Lru).is_err());
    assert_eq!("leaper".parse::<CachePolicy>().unwrap(), CachePolicy::Leaper);
    assert!("mru".parse::<CachePolicy>().is_err());
}
