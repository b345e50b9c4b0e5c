//! AsterixDB's prefix merge policy as a compaction strategy over level 0 (a tiered index).

use super::strategy::{Choice, CompactionStrategy};
use super::version::{RunKey, Version};

/// AsterixDB's prefix merge policy, the one the LSM RUM-tree authors ran (tolerance 5 components,
/// a maximum mergeable component size of about 1 GB). Looking at the level-0 runs oldest first, a
/// run larger than the maximum mergeable size is never merged again and starts a new candidate
/// sequence after it. A sequence is merged as soon as its total size exceeds the maximum mergeable
/// size or, when it reaches the newest run, as soon as it holds `max_tolerance_components` runs.
/// The merged run takes the sequence's place; antimatter is dropped when the oldest run is merged
/// (AsterixDB's positional test, blind to key ranges).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefixStrategy {
    max_mergeable_pages: u64,
    max_tolerance_components: usize,
}

impl PrefixStrategy {
    /// `max_tolerance_components` below 2 is raised to 2 (a single run merges into itself).
    pub fn new(max_mergeable_pages: u64, max_tolerance_components: usize) -> Self {
        PrefixStrategy {
            max_mergeable_pages,
            max_tolerance_components: max_tolerance_components.max(2),
        }
    }

    /// The positions (newest first) of the sequence to merge among runs of `pages` (newest first).
    pub fn pick(&self, pages: &[u64]) -> Option<std::ops::Range<usize>> {
        let n = pages.len();
        let mut start = 0usize; // oldest-first index where the current sequence begins
        let mut total = 0u64;
        for (i, &size) in pages.iter().rev().enumerate() {
            if size > self.max_mergeable_pages {
                start = i + 1;
                total = 0;
                continue;
            }
            total += size;
            let len = i + 1 - start;
            let reached_newest = i + 1 == n;
            if len >= 2
                && (total > self.max_mergeable_pages
                    || (reached_newest && len >= self.max_tolerance_components))
            {
                return Some(n - 1 - i..n - start);
            }
        }
        None
    }
}

impl<K: RunKey> CompactionStrategy<K> for PrefixStrategy {
    fn name(&self) -> &'static str {
        "prefix"
    }

    fn choose(&mut self, version: &Version<K>) -> Choice {
        let runs = version.level(0);
        let pages: Vec<u64> = runs.iter().map(|r| r.pages).collect();
        match self.pick(&pages) {
            None => Choice::DoNothing,
            Some(range) => {
                let inputs: Vec<_> = runs[range].iter().map(|r| r.id).collect();
                Choice::Merge {
                    bottommost: version.includes_oldest_run(&inputs),
                    inputs,
                    output_level: 0,
                    target_run_pages: None,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsm::version::level0_of_pages;
    use proptest::prelude::*;

    /// The prefix policy's pick as `PrefixMergePolicy` computed it before the framework (kept
    /// verbatim as the oracle the strategy must agree with).
    fn original_pick(
        max_mergeable_pages: u64,
        max_tolerance_components: usize,
        components: &[u64],
    ) -> Option<std::ops::Range<usize>> {
        let n = components.len();
        let mut run_start = 0usize;
        let mut total = 0u64;
        for i in 0..n {
            let size = components[n - 1 - i];
            if size > max_mergeable_pages {
                run_start = i + 1;
                total = 0;
                continue;
            }
            total += size;
            let run_len = i + 1 - run_start;
            let is_newest = i + 1 == n;
            if run_len >= 2
                && (total > max_mergeable_pages || (is_newest && run_len >= max_tolerance_components))
            {
                return Some(n - 1 - i..n - run_start);
            }
        }
        None
    }

    fn choose(s: PrefixStrategy, pages: &[u64]) -> Option<Vec<u64>> {
        let mut s = s;
        match CompactionStrategy::<u64>::choose(&mut s, &level0_of_pages(pages)) {
            Choice::DoNothing => None,
            Choice::Merge {
                inputs,
                output_level: 0,
                target_run_pages: None,
                ..
            } => Some(inputs),
            other => panic!("prefix chose {other:?}"),
        }
    }

    fn ids(r: std::ops::Range<u64>) -> Option<Vec<u64>> {
        Some(r.collect())
    }

    #[test]
    fn waits_for_the_tolerance_count() {
        let p = PrefixStrategy::new(1000, 5);
        assert_eq!(choose(p, &[10, 10, 10, 10]), None);
        assert_eq!(choose(p, &[10, 10, 10, 10, 10]), ids(0..5));
    }

    #[test]
    fn skips_runs_that_are_too_big() {
        let p = PrefixStrategy::new(1000, 3);
        assert_eq!(choose(p, &[10, 10, 5000]), None);
        assert_eq!(choose(p, &[10, 10, 10, 5000]), ids(0..3));
        assert_eq!(choose(p, &[10, 5000, 10, 10]), None);
    }

    #[test]
    fn merges_the_oldest_sequence_once_it_outgrows_the_maximum() {
        let p = PrefixStrategy::new(100, 10);
        assert_eq!(choose(p, &[5, 5, 50, 60]), ids(2..4));
    }

    #[test]
    fn antimatter_goes_only_when_the_oldest_run_is_merged() {
        let mut p = PrefixStrategy::new(100, 2);
        let bottom = |pages: &[u64], p: &mut PrefixStrategy| match CompactionStrategy::<u64>::choose(
            p,
            &level0_of_pages(pages),
        ) {
            Choice::Merge { bottommost, .. } => bottommost,
            other => panic!("{other:?}"),
        };
        assert!(bottom(&[5, 5], &mut p));
        assert!(!bottom(&[5, 5, 500], &mut p));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The strategy picks exactly what the original policy picks.
        #[test]
        fn agrees_with_the_original_policy(
            pages in proptest::collection::vec(prop_oneof![0u64..40, 0u64..400], 0..14),
            max in 0u64..300,
            tolerance in 2usize..8,
        ) {
            let old = original_pick(max, tolerance, &pages);
            let new = PrefixStrategy::new(max, tolerance);
            prop_assert_eq!(new.pick(&pages), old.clone());
            prop_assert_eq!(choose(new, &pages), old.map(|r| (r.start as u64..r.end as u64).collect()));
        }
    }
}
