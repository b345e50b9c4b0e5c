//! The serialisable choice of compaction strategy, for configs and result files.

use super::leveled::{LeveledParams, LeveledStrategy};
use super::prefix::PrefixStrategy;
use super::strategy::{CompactionStrategy, NoCompaction};
use super::version::RunKey;
use super::MergePolicyConfig;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// Which compaction strategy an index runs. A superset of [`MergePolicyConfig`] that writes the
/// same JSON for `prefix` and `none` (`{"kind":"prefix",...}`, `{"kind":"none"}`), so result files
/// that recorded a merge policy read back as a compaction config.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CompactionConfig {
    /// AsterixDB's prefix policy (see [`PrefixStrategy`]).
    Prefix {
        /// A run larger than this many pages is never merged again.
        max_mergeable_pages: u64,
        /// Merge a sequence of small runs once it holds this many (taken as at least 2).
        max_tolerance_components: usize,
    },
    /// Never merge.
    None,
    /// RocksDB's leveled compaction (see [`LeveledStrategy`]).
    Leveled(LeveledParams),
}

impl CompactionConfig {
    /// Checks the parameters; the error names the bad one.
    pub fn validate(&self) -> Result<()> {
        match self {
            CompactionConfig::Prefix {
                max_tolerance_components,
                ..
            } if *max_tolerance_components < 2 => Err(Error::Config(format!(
                "the prefix policy needs a tolerance of at least 2 components, not {max_tolerance_components}"
            ))),
            CompactionConfig::Leveled(p) => p.validate().map_err(Error::Config),
            _ => Ok(()),
        }
    }

    /// The strategy, for an index whose runs are ordered by `K`.
    pub fn build<K: RunKey>(&self) -> Result<Box<dyn CompactionStrategy<K>>> {
        self.validate()?;
        Ok(match *self {
            CompactionConfig::Prefix {
                max_mergeable_pages,
                max_tolerance_components,
            } => Box::new(PrefixStrategy::new(max_mergeable_pages, max_tolerance_components)),
            CompactionConfig::None => Box::new(NoCompaction),
            CompactionConfig::Leveled(p) => Box::new(LeveledStrategy::<K>::new(p)),
        })
    }
}

impl From<MergePolicyConfig> for CompactionConfig {
    fn from(c: MergePolicyConfig) -> Self {
        match c {
            MergePolicyConfig::Prefix {
                max_mergeable_pages,
                max_tolerance_components,
            } => CompactionConfig::Prefix {
                max_mergeable_pages,
                max_tolerance_components,
            },
            MergePolicyConfig::None => CompactionConfig::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_and_none_read_and_write_the_merge_policy_json() {
        for old in [
            MergePolicyConfig::Prefix {
                max_mergeable_pages: 4096,
                max_tolerance_components: 5,
            },
            MergePolicyConfig::None,
        ] {
            let json = serde_json::to_string(&old).unwrap();
            let new: CompactionConfig = serde_json::from_str(&json).unwrap();
            assert_eq!(new, CompactionConfig::from(old));
            assert_eq!(serde_json::to_string(&new).unwrap(), json);
        }
        let leveled = CompactionConfig::Leveled(LeveledParams::default());
        let json = serde_json::to_string(&leveled).unwrap();
        assert!(json.starts_with(r#"{"kind":"leveled","l0_trigger":4"#), "{json}");
        assert_eq!(serde_json::from_str::<CompactionConfig>(&json).unwrap(), leveled);
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        let bad = CompactionConfig::Prefix {
            max_mergeable_pages: 1,
            max_tolerance_components: 1,
        };
        assert!(matches!(bad.build::<u64>(), Err(Error::Config(m)) if m.contains("tolerance")));
        let bad = CompactionConfig::Leveled(LeveledParams {
            max_levels: 1,
            ..LeveledParams::default()
        });
        assert!(matches!(bad.build::<u64>(), Err(Error::Config(m)) if m.contains("max_levels")));
    }
}
