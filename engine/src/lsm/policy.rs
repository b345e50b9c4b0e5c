//! Merge policies: given the disk components (newest first), which contiguous run to merge. The
//! range-picking interface that [`super::DiskComponents`] drives; the prefix policy is now computed
//! by [`super::PrefixStrategy`].

use super::ComponentInfo;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::ops::Range;

/// A merge decision, separate from its execution so that it can be tested on sizes alone.
pub trait MergePolicy: Debug + Send + Sync {
    /// `components` are newest first; the answer is a range of at least two positions, or `None`.
    fn pick(&self, components: &[ComponentInfo]) -> Option<Range<usize>>;
}

/// Serialisable choice of merge policy, for configs and result files.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum MergePolicyConfig {
    /// AsterixDB's prefix policy.
    Prefix {
        max_mergeable_pages: u64,
        max_tolerance_components: usize,
    },
    /// Never merge.
    None,
}

impl MergePolicyConfig {
    pub fn build(&self) -> Box<dyn MergePolicy> {
        match *self {
            MergePolicyConfig::Prefix {
                max_mergeable_pages,
                max_tolerance_components,
            } => Box::new(PrefixMergePolicy::new(
                max_mergeable_pages,
                max_tolerance_components,
            )),
            MergePolicyConfig::None => Box::new(NoMergePolicy),
        }
    }

    /// The same choice as a compaction strategy for a [`super::RunStore`] (a prefix tolerance
    /// below 2 is taken as 2).
    pub fn strategy<K: super::RunKey>(&self) -> Box<dyn super::CompactionStrategy<K>> {
        match *self {
            MergePolicyConfig::Prefix {
                max_mergeable_pages,
                max_tolerance_components,
            } => Box::new(super::PrefixStrategy::new(
                max_mergeable_pages,
                max_tolerance_components,
            )),
            MergePolicyConfig::None => Box::new(super::NoCompaction),
        }
    }
}

/// AsterixDB's prefix merge policy, the one the LSM RUM-tree authors ran (tolerance 5 components,
/// a maximum mergeable component size of about 1 GB). Looking at the components oldest first,
/// a component larger than the maximum mergeable size is never merged again and starts a new
/// candidate run after it. A run of candidates is merged as soon as its total size exceeds the
/// maximum mergeable size, or, when the run reaches the newest component, as soon as it holds at
/// least `max_tolerance_components` components.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefixMergePolicy {
    max_mergeable_pages: u64,
    max_tolerance_components: usize,
}

impl PrefixMergePolicy {
    pub fn new(max_mergeable_pages: u64, max_tolerance_components: usize) -> Self {
        assert!(
            max_tolerance_components >= 2,
            "a tolerance below 2 components merges nothing"
        );
        PrefixMergePolicy {
            max_mergeable_pages,
            max_tolerance_components,
        }
    }
}

impl MergePolicy for PrefixMergePolicy {
    /// What [`super::PrefixStrategy`] picks among the components' sizes.
    fn pick(&self, components: &[ComponentInfo]) -> Option<Range<usize>> {
        let pages: Vec<u64> = components.iter().map(|c| c.pages).collect();
        super::PrefixStrategy::new(self.max_mergeable_pages, self.max_tolerance_components).pick(&pages)
    }
}

/// A policy that never merges (components accumulate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoMergePolicy;

impl MergePolicy for NoMergePolicy {
    fn pick(&self, _components: &[ComponentInfo]) -> Option<Range<usize>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(pages: &[u64]) -> Vec<ComponentInfo> {
        pages
            .iter()
            .map(|&p| ComponentInfo { pages: p, entries: p })
            .collect()
    }

    #[test]
    fn prefix_waits_for_the_tolerance_count() {
        let p = PrefixMergePolicy::new(1000, 5);
        assert_eq!(p.pick(&sizes(&[10, 10, 10, 10])), None);
        assert_eq!(p.pick(&sizes(&[10, 10, 10, 10, 10])), Some(0..5));
    }

    #[test]
    fn prefix_skips_components_that_are_too_big() {
        let p = PrefixMergePolicy::new(1000, 3);
        // newest first: three small ones, then an oversized old one that is never merged again
        assert_eq!(p.pick(&sizes(&[10, 10, 5000])), None);
        assert_eq!(p.pick(&sizes(&[10, 10, 10, 5000])), Some(0..3));
        // an oversized component in the middle splits the runs
        assert_eq!(p.pick(&sizes(&[10, 5000, 10, 10])), None);
    }

    #[test]
    fn prefix_merges_the_oldest_run_once_it_outgrows_the_maximum() {
        let p = PrefixMergePolicy::new(100, 10);
        // oldest first: 60, 50 -> total 110 > 100 after the second: merge those two
        assert_eq!(p.pick(&sizes(&[5, 5, 50, 60])), Some(2..4));
    }

    #[test]
    fn no_merge_policy_never_merges() {
        assert_eq!(NoMergePolicy.pick(&sizes(&[1, 1, 1, 1, 1, 1, 1])), None);
    }
}
