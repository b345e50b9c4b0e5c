//! Unit tests of the memory R-tree: every algorithm against brute force, plus a property test.

use super::*;
use crate::geom::Point;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn entry(x: f64, y: f64, oid: u64, ts: u64) -> SpatialEntry {
    SpatialEntry::new(Point::new(x, y), oid, ts)
}

fn keys(v: impl IntoIterator<Item = SpatialEntry>) -> Vec<(u64, u64)> {
    let mut k: Vec<_> = v.into_iter().map(|e| (e.oid, e.ts)).collect();
    k.sort_unstable();
    k
}

fn search_keys(t: &MemRTree, r: &Rect) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    t.search(r, |e| out.push(*e));
    keys(out)
}

fn oracle_keys(o: &[SpatialEntry], r: &Rect) -> Vec<(u64, u64)> {
    keys(o.iter().copied().filter(|e| r.contains_point(e.point)))
}

/// Every non-root node of an insert-only tree is at least min-fill full.
fn assert_min_fill(t: &MemRTree) {
    for (id, n) in t.nodes.iter().enumerate() {
        if n.live && id as NodeId != t.root {
            let m = if n.is_leaf() {
                t.leaf_min_fill
            } else {
                t.internal_min_fill
            };
            assert!(n.fanout() >= m, "node {id} holds {} < {m}", n.fanout());
        }
    }
}

#[test]
fn capacities_from_page_size() {
    let t = MemRTree::new(2048);
    assert_eq!((t.leaf_capacity(), t.internal_capacity()), (63, 50));
    assert_eq!(t.min_fill(), 26);
    assert_eq!(
        (t.node_count(), t.leaf_count(), t.height(), t.len()),
        (1, 1, 1, 0)
    );
    t.check_invariants().unwrap();
}

#[test]
#[should_panic(expected = ">= 4")]
fn tiny_capacity_panics() {
    MemRTree::with_capacities(3, 8);
}

#[test]
fn insert_returns_the_leaf_holding_the_entry() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut t = MemRTree::with_capacities(4, 4);
    for ts in 0..2000u64 {
        let e = entry(
            rng.random_range(0.0..100.0),
            rng.random_range(0.0..100.0),
            ts % 50,
            ts,
        );
        let leaf = t.insert(e);
        assert!(t.is_live_leaf(leaf));
        assert!(
            t.leaf_entries(leaf).contains(&e),
            "insert #{ts} returned leaf {leaf} without it"
        );
        assert_eq!(t.choose_leaf(e.point), t.choose_leaf(e.point));
    }
    t.check_invariants().unwrap();
    assert_min_fill(&t);
    assert!(t.splits() > 0);
}

#[test]
fn coincident_and_collinear_points_split_validly() {
    let mut t = MemRTree::with_capacities(4, 4);
    for ts in 0..300u64 {
        t.insert(entry(1.0, 1.0, ts, ts));
        t.insert(entry(ts as f64, 5.0, ts, ts + 1000));
    }
    t.check_invariants().unwrap();
    assert_min_fill(&t);
    assert_eq!(search_keys(&t, &Rect::new(1.0, 1.0, 1.0, 1.0)).len(), 300);
    assert_eq!(search_keys(&t, &Rect::new(10.0, 5.0, 19.0, 5.0)).len(), 10);
}

#[test]
fn update_counters_bump_reset_and_start_at_zero() {
    let mut t = MemRTree::with_capacities(4, 4);
    let leaf = t.insert(entry(0.0, 0.0, 1, 1));
    assert_eq!(t.update_counter(leaf), 0);
    assert_eq!(t.bump_update_counter(leaf), 1);
    assert_eq!(t.bump_update_counter(leaf), 2);
    assert_eq!(t.update_counter(leaf), 2);
    t.reset_update_counter(leaf);
    assert_eq!(t.update_counter(leaf), 0);
    t.bump_update_counter(leaf);
    assert_eq!(t.clean_leaf(leaf, |_| true, |_| panic!("nothing removed")), 0);
    assert_eq!(t.update_counter(leaf), 0, "clean_leaf resets the counter");
    // Fill the root leaf with a bumped counter, then split it: the split leaf keeps its counter,
    // the new sibling starts at 0.
    for i in 2..=4 {
        t.insert(entry(i as f64, 0.0, i, i));
    }
    for _ in 0..3 {
        t.bump_update_counter(leaf);
    }
    t.insert(entry(100.0, 0.0, 5, 5));
    assert_eq!(t.leaf_count(), 2);
    let other = t.next_leaf(Some(leaf)).unwrap();
    assert_ne!(other, leaf);
    assert_eq!(t.update_counter(leaf), 3);
    assert_eq!(t.update_counter(other), 0);
}

#[test]
fn reused_ids_start_with_counter_zero() {
    let mut t = MemRTree::with_capacities(4, 4);
    for i in 0..40u64 {
        t.insert(entry(i as f64, (i % 7) as f64, i, i));
    }
    // Empty one leaf through clean_leaf so its id is freed, bumping every leaf first.
    let mut leaves = Vec::new();
    let mut cur = None;
    for _ in 0..t.leaf_count() {
        cur = t.next_leaf(cur);
        leaves.push(cur.unwrap());
    }
    for &l in &leaves {
        t.bump_update_counter(l);
    }
    let victim = leaves[1];
    t.clean_leaf(victim, |_| false, |_| {});
    assert!(!t.is_live_leaf(victim));
    t.check_invariants().unwrap();
    // Insert until the freed id is reused.
    let mut ts = 1000;
    while !t.nodes[victim as usize].live {
        t.insert(entry((ts % 40) as f64, 3.5, ts, ts));
        ts += 1;
        assert!(ts < 10_000, "freed id never reused");
    }
    assert!(
        t.is_live_leaf(victim),
        "the first split after the clean reuses the id for a leaf"
    );
    assert_eq!(t.update_counter(victim), 0);
    t.check_invariants().unwrap();
}

#[test]
fn next_leaf_visits_every_live_leaf_once_per_cycle() {
    let mut t = MemRTree::with_capacities(5, 4);
    assert_eq!(t.next_leaf(None), None, "empty tree has no leaf to clean");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    for ts in 0..1500u64 {
        t.insert(entry(
            rng.random_range(0.0..1.0),
            rng.random_range(0.0..1.0),
            ts,
            ts,
        ));
    }
    // Remove some to free ids and leave gaps in the arena.
    for ts in (0..1500u64).step_by(3) {
        let mut p = None;
        t.for_each(|e| {
            if e.ts == ts {
                p = Some(e.point);
            }
        });
        t.remove(p.unwrap(), ts).unwrap();
    }
    t.check_invariants().unwrap();
    for start in [None, Some(0), Some(17), Some(NodeId::MAX)] {
        let mut seen = std::collections::BTreeSet::new();
        let mut cur = start;
        for _ in 0..t.leaf_count() {
            cur = t.next_leaf(cur);
            let l = cur.unwrap();
            assert!(t.is_live_leaf(l));
            assert!(seen.insert(l), "leaf {l} visited twice in one cycle");
        }
        assert_eq!(seen.len(), t.leaf_count());
        assert_eq!(
            t.next_leaf(cur),
            t.next_leaf(start),
            "a cycle ends where it started"
        );
    }
}

#[test]
fn clean_leaf_removes_exactly_the_rejected_entries() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let mut t = MemRTree::with_capacities(8, 6);
    for ts in 0..800u64 {
        t.insert(entry(
            rng.random_range(0.0..10.0),
            rng.random_range(0.0..10.0),
            ts % 97,
            ts,
        ));
    }
    let mut cur = None;
    let mut total = 0;
    for _ in 0..t.leaf_count() {
        cur = t.next_leaf(cur);
        let leaf = cur.unwrap();
        let before: Vec<SpatialEntry> = t.leaf_entries(leaf).to_vec();
        let expected: Vec<SpatialEntry> = before.iter().copied().filter(|e| e.ts % 3 == 0).collect();
        let mut got = Vec::new();
        t.bump_update_counter(leaf);
        let n = t.clean_leaf(leaf, |e| e.ts % 3 != 0, |e| got.push(e));
        assert_eq!(n, expected.len());
        assert_eq!(keys(got), keys(expected));
        if t.is_live_leaf(leaf) {
            assert_eq!(t.update_counter(leaf), 0);
            assert!(t.leaf_entries(leaf).iter().all(|e| e.ts % 3 != 0));
        }
        total += n;
        t.check_invariants().unwrap();
    }
    assert_eq!(t.len(), 800 - total);
    let mut left = Vec::new();
    t.for_each(|e| left.push(*e));
    assert_eq!(
        keys(left),
        keys(
            (0..800u64)
                .filter(|ts| ts % 3 != 0)
                .map(|ts| entry(0.0, 0.0, ts % 97, ts))
        )
    );
}

#[test]
fn remove_prefers_the_largest_ts_and_empties_back_to_one_leaf() {
    let mut t = MemRTree::with_capacities(4, 4);
    let p = Point::new(2.0, 3.0);
    for ts in [5, 9, 7] {
        t.insert(SpatialEntry::new(p, 42, ts));
    }
    for i in 0..30u64 {
        t.insert(entry(i as f64, -(i as f64), 1000 + i, 100 + i));
    }
    assert_eq!(t.remove(p, 42).map(|e| e.ts), Some(9));
    assert_eq!(t.remove(p, 42).map(|e| e.ts), Some(7));
    assert_eq!(t.remove(Point::new(2.0, 3.0001), 42), None);
    assert_eq!(t.remove(p, 43), None);
    assert_eq!(t.remove(p, 42).map(|e| e.ts), Some(5));
    assert_eq!(t.remove(p, 42), None);
    t.check_invariants().unwrap();
    for i in 0..30u64 {
        assert!(t.remove(Point::new(i as f64, -(i as f64)), 1000 + i).is_some());
        t.check_invariants().unwrap();
    }
    assert!(t.is_empty());
    assert_eq!((t.node_count(), t.leaf_count(), t.height()), (1, 1, 1));
    assert_eq!(t.next_leaf(None), None);
    assert!(t.mbr().is_empty());
}

#[test]
fn drain_returns_everything_and_restarts() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let mut t = MemRTree::with_capacities(6, 5);
    let mut all = Vec::new();
    for ts in 0..1000u64 {
        let e = entry(
            rng.random_range(-5.0..5.0),
            rng.random_range(-5.0..5.0),
            ts / 2,
            ts,
        );
        all.push(e);
        t.insert(e);
    }
    let splits = t.splits();
    let out = t.drain();
    assert_eq!(keys(out), keys(all));
    assert!(t.is_empty());
    assert_eq!(
        (t.node_count(), t.leaf_count(), t.height(), t.splits()),
        (1, 1, 1, splits)
    );
    assert!(t.is_live_leaf(0));
    assert_eq!(t.next_leaf(None), None);
    t.check_invariants().unwrap();
    assert_eq!(t.insert(entry(0.0, 0.0, 1, 1)), 0);
    assert_eq!(t.next_leaf(None), Some(0));
    assert_eq!(t.next_leaf(Some(0)), Some(0));
}

#[test]
fn large_randomized_run_with_2k_pages() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    let mut t = MemRTree::new(2048);
    let mut oracle = Vec::new();
    for ts in 0..50_000u64 {
        // Clustered points: a few hot spots plus uniform noise.
        let (x, y) = if ts % 4 == 0 {
            (rng.random_range(0.0..1000.0), rng.random_range(0.0..1000.0))
        } else {
            let c = (ts % 7) as f64 * 130.0;
            (c + rng.random_range(0.0..20.0), c + rng.random_range(0.0..20.0))
        };
        let e = entry(x, y, ts % 10_000, ts);
        oracle.push(e);
        let leaf = t.insert(e);
        if ts % 5 == 0 {
            t.bump_update_counter(leaf);
        }
    }
    t.check_invariants().unwrap();
    assert_min_fill(&t);
    assert_eq!(t.len(), 50_000);
    let internal = t.node_count() - t.leaf_count();
    assert!(t.leaf_count() >= 50_000 / 63 && t.leaf_count() <= 50_000 / t.min_fill() + 1);
    assert!(
        internal >= 1 && internal * 10 < t.leaf_count(),
        "{internal} internal nodes"
    );
    assert!((3..=4).contains(&t.height()), "height {}", t.height());
    for _ in 0..50 {
        let (x, y) = (rng.random_range(0.0..1000.0), rng.random_range(0.0..1000.0));
        let r = Rect::new(
            x,
            y,
            x + rng.random_range(0.0..200.0),
            y + rng.random_range(0.0..200.0),
        );
        assert_eq!(search_keys(&t, &r), oracle_keys(&oracle, &r));
    }
    // Remove a third, clean with a predicate, re-check.
    for e in oracle.iter().filter(|e| e.ts % 3 == 0) {
        assert_eq!(t.remove(e.point, e.oid), Some(*e));
    }
    oracle.retain(|e| e.ts % 3 != 0);
    let mut cur = None;
    for _ in 0..t.leaf_count() / 2 {
        cur = t.next_leaf(cur);
        t.clean_leaf(cur.unwrap(), |e| e.ts % 5 != 1, |_| {});
    }
    t.check_invariants().unwrap();
    let mut left = Vec::new();
    t.for_each(|e| left.push(*e));
    assert_eq!(left.len(), t.len());
    assert!(left.iter().all(|e| e.ts % 3 != 0));
}

#[derive(Clone, Debug)]
enum Op {
    Insert {
        x: u8,
        y: u8,
        oid: u8,
    },
    /// Removes the `pick`-th oracle entry (modulo its length), or a missing one if `missing`.
    Remove {
        pick: usize,
        missing: bool,
    },
    /// Cleans the leaf the cursor finds after `after`, dropping entries with `(oid + ts) % m == r`.
    Clean {
        after: u32,
        m: u64,
        r: u64,
    },
    Search {
        x: u8,
        y: u8,
        w: u8,
        h: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..24, 0u8..24, 0u8..12).prop_map(|(x, y, oid)| Op::Insert { x, y, oid }),
        2 => (any::<usize>(), prop::bool::weighted(0.1)).prop_map(|(pick, missing)| Op::Remove { pick, missing }),
        1 => (0u32..64, 1u64..4, 0u64..4).prop_map(|(after, m, r)| Op::Clean { after, m, r: r % m }),
        1 => (0u8..24, 0u8..24, 0u8..12, 0u8..12).prop_map(|(x, y, w, h)| Op::Search { x, y, w, h }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn matches_a_brute_force_oracle(
        leaf_cap in 4usize..=8,
        internal_cap in 4usize..=8,
        ops in prop::collection::vec(op(), 1..400),
    ) {
        let mut t = MemRTree::with_capacities(leaf_cap, internal_cap);
        let mut oracle: Vec<SpatialEntry> = Vec::new();
        let everything = Rect::new(-1.0, -1.0, 100.0, 100.0);
        for (ts, op) in ops.into_iter().enumerate() {
            let ts = ts as u64;
            match op {
                Op::Insert { x, y, oid } => {
                    let e = entry(x as f64, y as f64, oid as u64, ts);
                    let leaf = t.insert(e);
                    prop_assert!(t.leaf_entries(leaf).contains(&e));
                    oracle.push(e);
                }
                Op::Remove { pick, missing } => {
                    if missing || oracle.is_empty() {
                        prop_assert_eq!(t.remove(Point::new(0.5, 0.5), 3), None);
                    } else {
                        let target = oracle[pick % oracle.len()];
                        let best = oracle
                            .iter()
                            .enumerate()
                            .filter(|(_, e)| e.point == target.point && e.oid == target.oid)
                            .max_by_key(|(_, e)| e.ts)
                            .map(|(i, _)| i)
                            .unwrap();
                        let expected = oracle.swap_remove(best);
                        prop_assert_eq!(t.remove(target.point, target.oid), Some(expected));
                    }
                }
                Op::Clean { after, m, r } => {
                    let Some(leaf) = t.next_leaf(Some(after)) else {
                        prop_assert!(oracle.is_empty());
                        continue;
                    };
                    let keep = |e: &SpatialEntry| (e.oid + e.ts) % m != r;
                    let expected: Vec<SpatialEntry> =
                        t.leaf_entries(leaf).iter().copied().filter(|e| !keep(e)).collect();
                    let mut got = Vec::new();
                    let n = t.clean_leaf(leaf, keep, |e| got.push(e));
                    prop_assert_eq!(n, got.len());
                    prop_assert_eq!(keys(got.iter().copied()), keys(expected));
                    oracle.retain(|o| !got.iter().any(|g| g.ts == o.ts));
                }
                Op::Search { x, y, w, h } => {
                    let r = Rect::new(x as f64, y as f64, (x + w) as f64, (y + h) as f64);
                    prop_assert_eq!(search_keys(&t, &r), oracle_keys(&oracle, &r));
                }
            }
            if let Err(msg) = t.check_invariants() {
                return Err(TestCaseError::fail(msg));
            }
            prop_assert_eq!(t.len(), oracle.len());
            prop_assert_eq!(search_keys(&t, &everything), oracle_keys(&oracle, &everything));
        }
    }
}

/// Allocated pages count every node ever allocated since the last drain (a freed node's reuse
/// counts again); live nodes shrink when deletions unlink nodes.
#[test]
fn allocated_pages_never_shrink_until_the_tree_is_drained() {
    let mut t = MemRTree::with_capacities(4, 4);
    assert_eq!((t.allocated_pages(), t.node_count()), (1, 1));
    let es: Vec<_> = (0..40u64)
        .map(|i| entry((i % 7) as f64 * 10.0, (i / 7) as f64 * 10.0, i, i + 1))
        .collect();
    for e in &es {
        t.insert(*e);
    }
    let grown = t.allocated_pages();
    assert_eq!(grown, t.node_count() as u64, "nothing freed yet");
    for e in &es[..30] {
        t.remove(e.point, e.oid).unwrap();
    }
    assert!((t.node_count() as u64) < grown);
    assert_eq!(t.allocated_pages(), grown);
    for e in &es[..30] {
        t.insert(*e);
    }
    assert!(t.allocated_pages() > grown, "reused ids count again");
    t.drain();
    assert_eq!((t.allocated_pages(), t.node_count()), (1, 1));
}
