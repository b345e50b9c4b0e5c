//! The version: which runs an LSM index holds, at which level, in which order.
//!
//! A run is described by metadata alone ([`RunMeta`]), so compaction strategies can be driven and
//! tested without a page. Level 0 holds runs newest first whose key ranges may overlap (the flush
//! target, and the only level of a tiered index such as AsterixDB's); every deeper level holds
//! runs sorted by key whose ranges do not overlap, each level older than the one above it, as in
//! RocksDB's leveled layout.

use crate::{Error, Result};
use std::fmt::Debug;

/// Identifier of a run, unique within one index (never reused).
pub type RunId = u64;

/// The key order an index sorts its runs by (u64 keys, a Hilbert value, a tuple...).
pub trait RunKey: Ord + Copy + Debug + Send + Sync + 'static {}
impl<T: Ord + Copy + Debug + Send + Sync + 'static> RunKey for T {}

/// Inclusive key range `[min, max]` of a non-empty run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRange<K> {
    /// The smallest key.
    pub min: K,
    /// The largest key (`min <= max`).
    pub max: K,
}

impl<K: RunKey> KeyRange<K> {
    /// The range `[min, max]`; `min` must not exceed `max`.
    pub fn new(min: K, max: K) -> Self {
        debug_assert!(min <= max, "key range {min:?}..={max:?} is inverted");
        KeyRange { min, max }
    }

    /// True if the two ranges share a key.
    pub fn overlaps(&self, other: &KeyRange<K>) -> bool {
        self.min <= other.max && other.min <= self.max
    }

    /// The smallest range covering both.
    pub fn union(&self, other: &KeyRange<K>) -> KeyRange<K> {
        KeyRange {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }

    /// The smallest range covering every given range (`None` if there is none).
    pub fn cover<'a>(ranges: impl IntoIterator<Item = &'a KeyRange<K>>) -> Option<KeyRange<K>> {
        ranges.into_iter().fold(None, |acc: Option<KeyRange<K>>, r| {
            Some(acc.map_or(*r, |a| a.union(r)))
        })
    }
}

/// What the lifecycle knows of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunMeta<K> {
    /// The run's id in its store.
    pub id: RunId,
    /// The level it is installed at.
    pub level: usize,
    /// Size on the device (all its extents).
    pub pages: u64,
    /// Entries it holds.
    pub entries: u64,
    /// Key range of its entries; `None` for an empty run.
    pub keys: Option<KeyRange<K>>,
    /// Flush sequence numbers whose data it holds, `(first, last)`: a flush gets the next number,
    /// a merge output covers its inputs' ranges. Time-partitioned strategies read it.
    pub seqs: (u64, u64),
}

impl<K: RunKey> RunMeta<K> {
    /// True if the run may hold keys of `range` (an empty run holds nothing).
    pub fn overlaps(&self, range: &KeyRange<K>) -> bool {
        self.keys.is_some_and(|k| k.overlaps(range))
    }
}

/// The runs of one index by level.
#[derive(Clone, Debug)]
pub struct Version<K> {
    /// `levels[0]` newest first; deeper levels sorted by min key, non-overlapping.
    levels: Vec<Vec<RunMeta<K>>>,
}

impl<K: RunKey> Default for Version<K> {
    fn default() -> Self {
        Version {
            levels: vec![Vec::new()],
        }
    }
}

impl<K: RunKey> Version<K> {
    /// An empty layout (one empty level 0).
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs of `level`: newest first in level 0, by key deeper down (empty beyond the deepest).
    pub fn level(&self, level: usize) -> &[RunMeta<K>] {
        self.levels.get(level).map_or(&[], Vec::as_slice)
    }

    /// Number of levels that exist (at least 1), including empty ones above the deepest run.
    pub fn depth(&self) -> usize {
        self.levels.len()
    }

    /// Pages of the runs of `level`.
    pub fn level_pages(&self, level: usize) -> u64 {
        self.level(level).iter().map(|r| r.pages).sum()
    }

    /// Every run, in the order a lookup consults them: level 0 newest first, then each deeper level
    /// in key order. Older data always comes later.
    pub fn runs(&self) -> impl Iterator<Item = &RunMeta<K>> {
        self.levels.iter().flatten()
    }

    /// Runs in every level.
    pub fn len(&self) -> usize {
        self.levels.iter().map(Vec::len).sum()
    }

    /// Whether no run is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pages of every run.
    pub fn total_pages(&self) -> u64 {
        self.runs().map(|r| r.pages).sum()
    }

    /// Entries of every run (shadowed versions and deletion markers included).
    pub fn total_entries(&self) -> u64 {
        self.runs().map(|r| r.entries).sum()
    }

    /// The run of `id`, if held.
    pub fn get(&self, id: RunId) -> Option<&RunMeta<K>> {
        self.runs().find(|r| r.id == id)
    }

    /// `(level, position)` of a run.
    pub fn position(&self, id: RunId) -> Option<(usize, usize)> {
        self.levels
            .iter()
            .enumerate()
            .find_map(|(l, runs)| runs.iter().position(|r| r.id == id).map(|p| (l, p)))
    }

    /// Runs of `level >= 1` overlapping `range`, in key order.
    pub fn overlapping(&self, level: usize, range: &KeyRange<K>) -> Vec<&RunMeta<K>> {
        self.level(level).iter().filter(|r| r.overlaps(range)).collect()
    }

    /// The runs that may hold a key of `range`, in [`Self::runs`]' order (newest data first):
    /// every overlapping level-0 run, then in each deeper level the overlapping stretch, found by
    /// binary search (those levels are sorted and disjoint), so a short scan costs O(log runs) per
    /// level rather than a test of every run.
    pub fn scan_order<'a>(&'a self, range: &KeyRange<K>) -> impl Iterator<Item = &'a RunMeta<K>> + 'a {
        let range = *range;
        self.level(0)
            .iter()
            .filter(move |r| r.overlaps(&range))
            .chain(self.levels.iter().skip(1).flat_map(move |runs| {
                let i = runs.partition_point(|r| r.keys.is_none_or(|k| k.max < range.min));
                runs[i..]
                    .iter()
                    .take_while(move |r| r.keys.is_none_or(|k| k.min <= range.max))
                    .filter(move |r| r.overlaps(&range))
            }))
    }

    /// The smallest range covering the keys of every run: each level-0 run, and of each deeper
    /// level only its first and last non-empty runs (sorted and disjoint, they bound the level).
    pub fn key_cover(&self) -> Option<KeyRange<K>> {
        let mut bounds: Vec<&KeyRange<K>> = self.level(0).iter().filter_map(|r| r.keys.as_ref()).collect();
        for runs in self.levels.iter().skip(1) {
            bounds.extend(runs.iter().find_map(|r| r.keys.as_ref()));
            bounds.extend(runs.iter().rev().find_map(|r| r.keys.as_ref()));
        }
        KeyRange::cover(bounds)
    }

    /// The runs a point lookup of `key` must consult, newest data first: every level-0 run whose
    /// range holds the key, then at most one run per deeper level.
    pub fn lookup_order(&self, key: K) -> impl Iterator<Item = &RunMeta<K>> {
        let point = KeyRange::new(key, key);
        self.level(0)
            .iter()
            .filter(move |r| r.overlaps(&point))
            .chain(self.levels.iter().skip(1).filter_map(move |runs| {
                let i = runs.partition_point(|r| r.keys.is_none_or(|k| k.max < key));
                runs.get(i).filter(|r| r.overlaps(&point))
            }))
    }

    /// True if no run outside `inputs` that is older than all of them may hold a key of `range`:
    /// a merge of `inputs` then sees the oldest version of every key it holds, so deletion markers
    /// can be dropped. Older means later in level 0 than the oldest level-0 input, or in any level
    /// deeper than the shallowest input's.
    pub fn nothing_older_overlaps(&self, inputs: &[RunId], range: Option<&KeyRange<K>>) -> bool {
        let Some(range) = range else { return true };
        let positions: Vec<(usize, usize)> = inputs.iter().filter_map(|&id| self.position(id)).collect();
        let Some(&(top, _)) = positions.iter().min() else {
            return true;
        };
        let oldest_l0 = positions.iter().filter(|p| p.0 == 0).map(|p| p.1).max();
        self.levels.iter().enumerate().all(|(l, runs)| {
            runs.iter().enumerate().all(|(p, r)| {
                let older = if l == 0 {
                    oldest_l0.is_some_and(|o| p > o)
                } else {
                    l > top
                };
                !older || inputs.contains(&r.id) || !r.overlaps(range)
            })
        })
    }

    /// True if the oldest level-0 run is among `inputs` and nothing lies deeper (AsterixDB's test
    /// for a merge that includes the oldest component, positional and key-blind).
    pub fn includes_oldest_run(&self, inputs: &[RunId]) -> bool {
        self.levels.iter().skip(1).all(Vec::is_empty)
            && self.level(0).last().is_some_and(|r| inputs.contains(&r.id))
    }

    /// Puts a flushed run on top of level 0.
    pub fn push_flushed(&mut self, mut run: RunMeta<K>) {
        run.level = 0;
        self.levels[0].insert(0, run);
    }

    /// Replaces `inputs` by `outputs` in `output_level`. In level 0 the outputs take the place of
    /// the newest level-0 input (or go on top); deeper they are inserted in key order, and an
    /// output that overlaps a remaining run of its level is an error that changes nothing.
    pub fn replace(&mut self, inputs: &[RunId], outputs: Vec<RunMeta<K>>, output_level: usize) -> Result<()> {
        for &id in inputs {
            if self.position(id).is_none() {
                return Err(Error::Config(format!(
                    "compaction input run {id} is not in the version"
                )));
            }
        }
        let mut next = self.clone();
        let at = inputs
            .iter()
            .filter_map(|&id| self.position(id))
            .filter(|p| p.0 == 0)
            .map(|p| p.1)
            .min()
            .unwrap_or(0);
        for runs in &mut next.levels {
            runs.retain(|r| !inputs.contains(&r.id));
        }
        if next.levels.len() <= output_level {
            next.levels.resize_with(output_level + 1, Vec::new);
        }
        if output_level == 0 {
            let at = at.min(next.levels[0].len());
            for (i, mut run) in outputs.into_iter().enumerate() {
                run.level = 0;
                next.levels[0].insert(at + i, run);
            }
        } else {
            for mut run in outputs {
                run.level = output_level;
                let runs = &mut next.levels[output_level];
                if let Some(k) = run.keys {
                    if let Some(clash) = runs.iter().find(|r| r.overlaps(&k)) {
                        return Err(Error::Config(format!(
                            "run {} ({:?}) would overlap run {} ({:?}) in level {output_level}",
                            run.id, k, clash.id, clash.keys
                        )));
                    }
                }
                let i = runs.partition_point(|r| match (r.keys, run.keys) {
                    (Some(a), Some(b)) => a.min < b.min,
                    (None, _) => true,
                    (_, None) => false,
                });
                runs.insert(i, run);
            }
        }
        *self = next;
        Ok(())
    }

    /// Removes runs (a drop), returning their metadata.
    pub fn remove(&mut self, ids: &[RunId]) -> Vec<RunMeta<K>> {
        let mut out = Vec::new();
        for runs in &mut self.levels {
            runs.retain(|r| {
                let hit = ids.contains(&r.id);
                if hit {
                    out.push(r.clone());
                }
                !hit
            });
        }
        out
    }

    /// Checks the layout invariants: deeper levels sorted and non-overlapping, levels recorded in
    /// the runs, ids unique. A description of the first violation, if any.
    pub fn check(&self) -> std::result::Result<(), String> {
        let mut ids: Vec<RunId> = self.runs().map(|r| r.id).collect();
        ids.sort_unstable();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return Err("a run id appears twice".into());
        }
        for (l, runs) in self.levels.iter().enumerate() {
            if let Some(r) = runs.iter().find(|r| r.level != l) {
                return Err(format!(
                    "run {} records level {} but sits in level {l}",
                    r.id, r.level
                ));
            }
            if l == 0 {
                continue;
            }
            let ranges: Vec<KeyRange<K>> = runs.iter().filter_map(|r| r.keys).collect();
            for w in ranges.windows(2) {
                if w[0].max >= w[1].min {
                    return Err(format!(
                        "level {l}: {:?} and {:?} are unsorted or overlap",
                        w[0], w[1]
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Level-0 runs of the given sizes in pages, newest first, each run's id its position: what a
/// size-only merge policy (such as the prefix policy) sees. For tests.
#[cfg(test)]
pub(crate) fn level0_of_pages(pages_newest_first: &[u64]) -> Version<u64> {
    let mut v = Version::new();
    for (i, &p) in pages_newest_first.iter().enumerate().rev() {
        v.push_flushed(RunMeta {
            id: i as u64,
            level: 0,
            pages: p,
            entries: p,
            keys: None,
            seqs: (0, 0),
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: RunId, min: u64, max: u64) -> RunMeta<u64> {
        RunMeta {
            id,
            level: 0,
            pages: 1,
            entries: 1,
            keys: Some(KeyRange::new(min, max)),
            seqs: (id, id),
        }
    }

    /// `scan_order` and `key_cover` take shortcuts through the sorted deeper levels; they must
    /// give exactly what testing every run gives, for every range, on random versions.
    #[test]
    fn scan_order_and_key_cover_equal_testing_every_run() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        for _ in 0..300 {
            let mut v = Version::new();
            let mut id = 0;
            for _ in 0..rng.random_range(0..4) {
                let a = rng.random_range(0..100);
                v.push_flushed(run(id, a, a + rng.random_range(0..40)));
                id += 1;
            }
            for level in 1..4 {
                // disjoint sorted runs, some empty, installed by one replace per level
                let mut outs = Vec::new();
                let mut at = rng.random_range(0..20);
                for _ in 0..rng.random_range(0..6) {
                    if rng.random_bool(0.2) {
                        let mut empty = run(id, 0, 0);
                        empty.keys = None;
                        outs.push(empty);
                    } else {
                        let w = rng.random_range(0..15);
                        outs.push(run(id, at, at + w));
                        at += w + 1 + rng.random_range(0..10);
                    }
                    id += 1;
                }
                v.replace(&[], outs, level).unwrap();
            }
            let all = KeyRange::cover(v.runs().filter_map(|r| r.keys.as_ref()));
            assert_eq!(v.key_cover(), all);
            for _ in 0..20 {
                let lo = rng.random_range(0..160);
                let range = KeyRange::new(lo, lo + rng.random_range(0..50));
                let fast: Vec<RunId> = v.scan_order(&range).map(|r| r.id).collect();
                let slow: Vec<RunId> = v.runs().filter(|r| r.overlaps(&range)).map(|r| r.id).collect();
                assert_eq!(fast, slow, "range {range:?}");
            }
        }
    }

    #[test]
    fn deeper_levels_stay_sorted_and_refuse_overlaps() {
        let mut v = Version::new();
        v.push_flushed(run(1, 0, 10));
        v.push_flushed(run(2, 5, 30));
        v.replace(&[1, 2], vec![run(3, 20, 30), run(4, 0, 10)], 1)
            .unwrap();
        assert!(v.level(0).is_empty());
        assert_eq!(v.level(1).iter().map(|r| r.id).collect::<Vec<_>>(), vec![4, 3]);
        assert!(v.check().is_ok());
        let before = v.clone();
        assert!(v.replace(&[], vec![run(5, 9, 21)], 1).is_err());
        assert_eq!(v.level(1), before.level(1));
        assert!(v.replace(&[77], vec![], 1).is_err());
    }

    #[test]
    fn lookups_visit_newest_data_first() {
        let mut v = Version::new();
        v.push_flushed(run(1, 0, 100));
        v.replace(&[1], vec![run(2, 0, 40), run(3, 50, 100)], 1).unwrap();
        v.push_flushed(run(4, 45, 60));
        v.push_flushed(run(5, 0, 5));
        let order = |k| v.lookup_order(k).map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(order(55), vec![4, 3]);
        assert_eq!(order(3), vec![5, 2]);
        assert_eq!(order(45), vec![4]);
        assert_eq!(order(101), Vec::<RunId>::new());
    }

    #[test]
    fn the_oldest_data_test_follows_levels_positions_and_key_ranges() {
        let mut v = Version::new();
        v.push_flushed(run(1, 0, 100));
        v.replace(&[1], vec![run(2, 0, 40), run(3, 50, 100)], 1).unwrap();
        v.push_flushed(run(4, 45, 48));
        v.push_flushed(run(5, 0, 5));
        let r = |a, b| KeyRange::new(a, b);
        assert!(v.nothing_older_overlaps(&[4], Some(&r(45, 48))));
        assert!(!v.nothing_older_overlaps(&[5], Some(&r(0, 5))));
        assert!(v.nothing_older_overlaps(&[5, 2], Some(&r(0, 40))));
        assert!(!v.includes_oldest_run(&[4, 5]));
        let mut t = Version::new();
        t.push_flushed(run(1, 0, 1));
        t.push_flushed(run(2, 5, 6));
        assert!(t.includes_oldest_run(&[1, 2]));
        assert!(!t.includes_oldest_run(&[2]));
        assert!(t.nothing_older_overlaps(&[2], Some(&r(5, 6))));
    }
}
