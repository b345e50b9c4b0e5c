//! Leveled compaction after RocksDB's (the layout Leaper's store uses).

use super::strategy::{Choice, CompactionStrategy};
use super::version::{KeyRange, RunKey, RunMeta, Version};

/// Parameters of [`LeveledStrategy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LeveledParams {
    /// Level-0 run count that triggers an L0 -> L1 compaction (RocksDB's
    /// `level0_file_num_compaction_trigger`, default 4).
    pub l0_trigger: usize,
    /// Target size of level 1 in pages (RocksDB's `max_bytes_for_level_base`).
    pub base_level_pages: u64,
    /// Each level's target is this many times the one above it (`max_bytes_for_level_multiplier`, 10).
    pub size_ratio: u64,
    /// Size of the runs a compaction writes (`target_file_size_base`).
    pub target_run_pages: u64,
    /// Number of levels including level 0 (RocksDB's `num_levels`, 7); the last has no target.
    pub max_levels: usize,
}

impl Default for LeveledParams {
    fn default() -> Self {
        LeveledParams {
            l0_trigger: 4,
            base_level_pages: 256,
            size_ratio: 10,
            target_run_pages: 64,
            max_levels: 7,
        }
    }
}

impl LeveledParams {
    /// Target size of `level >= 1` in pages (`None` for the last level, which may grow freely).
    pub fn target_pages(&self, level: usize) -> Option<u64> {
        if level == 0 || level + 1 >= self.max_levels {
            return None;
        }
        let mut t = self.base_level_pages;
        for _ in 1..level {
            t = t.saturating_mul(self.size_ratio);
        }
        Some(t)
    }

    /// A description of the first out-of-range parameter.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.l0_trigger < 1 {
            return Err(format!("l0_trigger {} must be at least 1", self.l0_trigger));
        }
        if self.base_level_pages < 1 || self.target_run_pages < 1 {
            return Err("base_level_pages and target_run_pages must be at least 1".into());
        }
        if self.size_ratio < 2 {
            return Err(format!("size_ratio {} must be at least 2", self.size_ratio));
        }
        if self.max_levels < 2 {
            return Err(format!("max_levels {} must be at least 2", self.max_levels));
        }
        Ok(())
    }
}

/// RocksDB's leveled compaction. Level 0 is compacted when it holds `l0_trigger` runs: all of them
/// with the level-1 runs they overlap, into level 1. Deeper, the level whose size most exceeds its
/// target (base size times `size_ratio` per level) gives up one run, chosen round-robin by key
/// with a per-level cursor (RocksDB's `kRoundRobin` priority), merged with the runs it overlaps in
/// the next level. Outputs are split at `target_run_pages`. A run that overlaps nothing below is
/// moved down without rewriting (a trivial move); in level 0 only the oldest run may move, so newer
/// data never ends up below older data.
#[derive(Clone, Debug)]
pub struct LeveledStrategy<K> {
    params: LeveledParams,
    /// Per level, the largest key of the last run compacted out of it.
    cursors: Vec<Option<K>>,
}

impl<K: RunKey> LeveledStrategy<K> {
    /// A strategy with `params` (at least two levels of round-robin cursors).
    pub fn new(params: LeveledParams) -> Self {
        LeveledStrategy {
            params,
            cursors: vec![None; params.max_levels.max(2)],
        }
    }

    /// The parameters it was built with.
    pub fn params(&self) -> &LeveledParams {
        &self.params
    }

    /// The level to compact and its score (size over target, or L0 count over trigger), if any
    /// score reaches 1. Ties go to the shallower level.
    fn pick_level(&self, version: &Version<K>) -> Option<usize> {
        let mut best: Option<(usize, u64, u64)> = None; // (level, numerator, denominator)
        let l0 = version.level(0).len() as u64;
        if l0 >= self.params.l0_trigger as u64 {
            best = Some((0, l0, self.params.l0_trigger as u64));
        }
        for level in 1..version.depth() {
            let Some(target) = self.params.target_pages(level) else {
                break;
            };
            let size = version.level_pages(level);
            if size <= target {
                continue;
            }
            // size / target > n / d  <=>  size * d > n * target (exact, no floats)
            let better = best.is_none_or(|(_, n, d)| {
                u128::from(size) * u128::from(d) > u128::from(n) * u128::from(target)
            });
            if better {
                best = Some((level, size, target));
            }
        }
        best.map(|b| b.0)
    }

    fn merge(&self, version: &Version<K>, inputs: Vec<&RunMeta<K>>, output_level: usize) -> Choice {
        let cover = KeyRange::cover(inputs.iter().filter_map(|r| r.keys.as_ref()));
        let inputs: Vec<_> = inputs.iter().map(|r| r.id).collect();
        Choice::Merge {
            bottommost: version.nothing_older_overlaps(&inputs, cover.as_ref()),
            inputs,
            output_level,
            target_run_pages: Some(self.params.target_run_pages),
        }
    }
}

impl<K: RunKey> CompactionStrategy<K> for LeveledStrategy<K> {
    fn name(&self) -> &'static str {
        "leveled"
    }

    fn choose(&mut self, version: &Version<K>) -> Choice {
        let Some(level) = self.pick_level(version) else {
            return Choice::DoNothing;
        };
        let below = level + 1;
        if level == 0 {
            let l0 = version.level(0);
            // `pick_level` picks level 0 only when it holds runs.
            let Some(oldest) = l0.last() else {
                return Choice::DoNothing;
            };
            let blocked = oldest
                .keys
                .is_some_and(|k| !version.overlapping(1, &k).is_empty());
            if !blocked {
                return Choice::Move {
                    run: oldest.id,
                    to_level: 1,
                };
            }
            let cover = KeyRange::cover(l0.iter().filter_map(|r| r.keys.as_ref()));
            let mut inputs: Vec<&RunMeta<K>> = l0.iter().collect();
            if let Some(c) = cover {
                inputs.extend(version.overlapping(1, &c));
            }
            return self.merge(version, inputs, 1);
        }
        let runs = version.level(level);
        let cursor = self.cursors[level];
        let run = runs
            .iter()
            .find(|r| r.keys.is_some_and(|k| cursor.is_none_or(|c| k.min > c)))
            .unwrap_or(&runs[0]);
        self.cursors[level] = run.keys.map(|k| k.max);
        let overlaps = run.keys.map_or_else(Vec::new, |k| version.overlapping(below, &k));
        if overlaps.is_empty() {
            return Choice::Move {
                run: run.id,
                to_level: below,
            };
        }
        let mut inputs = vec![run];
        inputs.extend(overlaps);
        self.merge(version, inputs, below)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsm::version::RunId;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use std::collections::{BTreeMap, BTreeSet};

    /// Keys per page in the simulation.
    const PER_PAGE: u64 = 8;

    /// A simulator: runs are key sets, the version is their metadata; choices are applied as the
    /// executor would, without a device.
    struct Sim {
        version: Version<u64>,
        keys: BTreeMap<RunId, BTreeSet<u64>>,
        next_id: RunId,
        strategy: LeveledStrategy<u64>,
        merges: u64,
        moves: u64,
        rewritten_pages: u64,
    }

    impl Sim {
        fn new(params: LeveledParams) -> Sim {
            Sim {
                version: Version::new(),
                keys: BTreeMap::new(),
                next_id: 0,
                strategy: LeveledStrategy::new(params),
                merges: 0,
                moves: 0,
                rewritten_pages: 0,
            }
        }

        fn meta(&mut self, keys: BTreeSet<u64>) -> RunMeta<u64> {
            let id = self.next_id;
            self.next_id += 1;
            let m = RunMeta {
                id,
                level: 0,
                pages: (keys.len() as u64).div_ceil(PER_PAGE).max(1),
                entries: keys.len() as u64,
                keys: keys.first().map(|&a| KeyRange::new(a, *keys.last().unwrap())),
                seqs: (id, id),
            };
            self.keys.insert(id, keys);
            m
        }

        fn flush(&mut self, keys: BTreeSet<u64>) {
            let m = self.meta(keys);
            self.version.push_flushed(m);
        }

        /// Applies choices until the strategy is satisfied.
        fn settle(&mut self) {
            for _ in 0..10_000 {
                match self.strategy.choose(&self.version) {
                    Choice::DoNothing => return,
                    Choice::Move { run, to_level } => {
                        let m = self.version.get(run).unwrap().clone();
                        assert_eq!(to_level, m.level + 1);
                        self.version.replace(&[run], vec![m], to_level).unwrap();
                        self.moves += 1;
                    }
                    Choice::Merge {
                        inputs,
                        output_level,
                        target_run_pages,
                        ..
                    } => {
                        let levels: BTreeSet<usize> = inputs
                            .iter()
                            .map(|&i| self.version.get(i).unwrap().level)
                            .collect();
                        assert!(levels.iter().all(|&l| l + 1 == output_level || l == output_level));
                        let all: BTreeSet<u64> =
                            inputs.iter().flat_map(|i| self.keys.remove(i).unwrap()).collect();
                        let per_run = (target_run_pages.unwrap() * PER_PAGE) as usize;
                        let all: Vec<u64> = all.into_iter().collect();
                        let mut outputs = Vec::new();
                        for chunk in all.chunks(per_run.max(1)) {
                            outputs.push(self.meta(chunk.iter().copied().collect()));
                            self.rewritten_pages += outputs.last().unwrap().pages;
                        }
                        self.version.replace(&inputs, outputs, output_level).unwrap();
                        self.merges += 1;
                    }
                    Choice::Drop { .. } => panic!("leveled never drops"),
                }
                self.version.check().unwrap();
            }
            panic!("compaction did not settle");
        }
    }

    fn params() -> LeveledParams {
        LeveledParams {
            l0_trigger: 4,
            base_level_pages: 16,
            size_ratio: 4,
            target_run_pages: 4,
            max_levels: 5,
        }
    }

    #[test]
    fn a_stream_of_random_flushes_keeps_every_invariant() {
        for seed in 0..8u64 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let p = params();
            let mut sim = Sim::new(p);
            let mut everything = BTreeSet::new();
            for _ in 0..300 {
                // a flush covers a random key range, sometimes narrow (sequential-ish inserts)
                let width = if rng.random_bool(0.3) { 200 } else { 20_000 };
                let lo = rng.random_range(0..100_000u64);
                let keys: BTreeSet<u64> = (0..40).map(|_| lo + rng.random_range(0..width)).collect();
                everything.extend(keys.iter().copied());
                sim.flush(keys);
                sim.settle();
                let v = &sim.version;
                v.check().unwrap();
                assert!(v.level(0).len() < p.l0_trigger, "the L0 trigger is respected");
                for level in 1..v.depth() {
                    if let Some(t) = p.target_pages(level) {
                        assert!(
                            v.level_pages(level) <= t,
                            "level {level} over its target after settling"
                        );
                    }
                }
                // no key is lost
                let held: BTreeSet<u64> = sim.keys.values().flatten().copied().collect();
                assert_eq!(held, everything);
            }
            assert!(sim.moves > 0, "trivial moves were used");
            assert!(sim.merges > 10);
            // compaction outputs respect the target run size
            for r in sim.version.runs().filter(|r| r.level > 0) {
                assert!(
                    r.pages <= p.target_run_pages.max(5),
                    "run {} has {} pages",
                    r.id,
                    r.pages
                );
            }
        }
    }

    #[test]
    fn a_run_that_overlaps_nothing_below_moves_without_rewriting() {
        // Sequential inserts: every flush lies above everything before it, so nothing is rewritten.
        let mut sim = Sim::new(params());
        for i in 0..200u64 {
            sim.flush((i * 100..i * 100 + 40).collect());
            sim.settle();
        }
        assert_eq!(sim.merges, 0);
        assert_eq!(sim.rewritten_pages, 0);
        assert!(sim.moves >= 200);
        assert!(sim.version.depth() > 2);
    }

    #[test]
    fn l0_waits_for_its_trigger_then_merges_with_overlapping_level_1_runs() {
        let mut s = LeveledStrategy::<u64>::new(params());
        let mut sim = Sim::new(params());
        for _ in 0..3 {
            sim.flush((0..40).collect());
            assert_eq!(s.choose(&sim.version), Choice::DoNothing);
        }
        sim.flush((0..40).collect());
        sim.settle(); // the oldest overlaps nothing in L1: it moves, and L0 is back under its trigger
        assert_eq!((sim.version.level(0).len(), sim.version.level(1).len()), (3, 1));
        assert_eq!((sim.moves, sim.merges), (1, 0));
        sim.flush((500..520).collect());
        match s.choose(&sim.version) {
            Choice::Merge {
                inputs,
                output_level: 1,
                target_run_pages: Some(4),
                bottommost: true,
            } => {
                assert_eq!(inputs.len(), 5, "four L0 runs and the one L1 run they overlap");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn targets_grow_by_the_ratio_and_the_last_level_has_none() {
        let p = params();
        assert_eq!(p.target_pages(0), None);
        assert_eq!(p.target_pages(1), Some(16));
        assert_eq!(p.target_pages(3), Some(256));
        assert_eq!(p.target_pages(4), None);
        assert!(p.validate().is_ok());
        assert!(LeveledParams { size_ratio: 1, ..p }.validate().is_err());
    }
}
