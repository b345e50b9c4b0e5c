//! The merge policy the LSM RUM-tree experiments configure, as serialisable data: AsterixDB's
//! prefix policy or none, each turned into a compaction strategy for a [`super::RunStore`].

use serde::{Deserialize, Serialize};

/// Serialisable choice of merge policy, for configs and result files.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum MergePolicyConfig {
    /// AsterixDB's prefix policy ([`super::PrefixStrategy`]).
    Prefix {
        /// A run larger than this many pages is never merged again.
        max_mergeable_pages: u64,
        /// Merge a sequence of small runs once it holds this many (taken as at least 2).
        max_tolerance_components: usize,
    },
    /// Never merge.
    None,
}

impl MergePolicyConfig {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsm::version::level0_of_pages;
    use crate::lsm::Choice;

    /// The runs (positions, newest first) the configured policy merges next, if any.
    fn pick(cfg: MergePolicyConfig, pages: &[u64]) -> Option<Vec<u64>> {
        match cfg.strategy::<u64>().choose(&level0_of_pages(pages)) {
            Choice::DoNothing => None,
            Choice::Merge { inputs, .. } => Some(inputs),
            other => panic!("a prefix policy chose {other:?}"),
        }
    }

    fn prefix(max_mergeable_pages: u64, max_tolerance_components: usize) -> MergePolicyConfig {
        MergePolicyConfig::Prefix {
            max_mergeable_pages,
            max_tolerance_components,
        }
    }

    #[test]
    fn prefix_waits_for_the_tolerance_count() {
        assert_eq!(pick(prefix(1000, 5), &[10, 10, 10, 10]), None);
        assert_eq!(
            pick(prefix(1000, 5), &[10, 10, 10, 10, 10]),
            Some(vec![0, 1, 2, 3, 4])
        );
    }

    #[test]
    fn prefix_skips_components_that_are_too_big() {
        // newest first: three small ones, then an oversized old one that is never merged again
        assert_eq!(pick(prefix(1000, 3), &[10, 10, 5000]), None);
        assert_eq!(pick(prefix(1000, 3), &[10, 10, 10, 5000]), Some(vec![0, 1, 2]));
        // an oversized component in the middle splits the sequences
        assert_eq!(pick(prefix(1000, 3), &[10, 5000, 10, 10]), None);
    }

    #[test]
    fn prefix_merges_the_oldest_sequence_once_it_outgrows_the_maximum() {
        // oldest first: 60, 50 -> total 110 > 100 after the second: merge those two
        assert_eq!(pick(prefix(100, 10), &[5, 5, 50, 60]), Some(vec![2, 3]));
    }

    #[test]
    fn none_never_merges() {
        assert_eq!(pick(MergePolicyConfig::None, &[1, 1, 1, 1, 1, 1, 1]), None);
    }
}
