//! The secondary-index maintenance strategies compared by the LSM RUM-tree paper, as values that
//! print and parse exactly as the paper names them: `Eager`, `Validation`, `UM`, `UM+F`, `UM+M`,
//! `UM+BV`, `UM+FMBV` (and any other combination of the four switches, e.g. `UM+FM`).

use super::config::SpatialConfig;
use super::eager::Eager;
use super::maintenance::Maintenance;
use super::memo::UpdateMemoMaintenance;
use super::validation::Validation;
use crate::btree::FixedValue;
use crate::cache::BufferCache;
use crate::lsm::LsmBTree;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Which Update Memo cleaning strategies are on (Section 4 of the paper).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CleaningSwitches {
    /// F, Clean Upon Flush (Section 4.3): drop obsolete entries while sorting for the flush.
    pub flush: bool,
    /// M, Clean Upon Merge (Section 4.4): drop obsolete entries while bulk-loading a merge.
    pub merge: bool,
    /// B, Buffered Cleaning (Section 4.1): clean a memory leaf when its update counter hits a threshold.
    pub buffered: bool,
    /// V, Vacuum Cleaning (Section 4.2): every `th` updates, clean the next leaf in round-robin order.
    pub vacuum: bool,
}

/// A maintenance strategy of the LSM R-tree secondary index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Strategy {
    /// AsterixDB's Eager strategy (Alsubaiee et al. 2014): delete the old entry (physically in
    /// memory, as a deleted key otherwise), insert the new one.
    Eager,
    /// Luo & Carey's Validation (PVLDB 2019): blind inserts, a primary key index of latest
    /// timestamps validates query candidates and repairs merges.
    Validation,
    /// The LSM RUM-tree's Update Memo with its cleaning switches.
    UpdateMemo(CleaningSwitches),
}

impl Strategy {
    /// The seven variants of the paper's Figures 5-6 and Tables 1-2, in the paper's order.
    pub const PAPER: [&'static str; 7] = ["Eager", "Validation", "UM", "UM+F", "UM+M", "UM+BV", "UM+FMBV"];

    pub fn paper_strategies() -> Vec<Strategy> {
        Self::PAPER
            .iter()
            .map(|s| s.parse().expect("paper strategy names parse"))
            .collect()
    }

    pub fn switches(&self) -> Option<CleaningSwitches> {
        match self {
            Strategy::UpdateMemo(s) => Some(*s),
            _ => None,
        }
    }

    pub fn uses_update_memo(&self) -> bool {
        matches!(self, Strategy::UpdateMemo(_))
    }

    /// Builds this strategy's maintenance state from the configuration (its key indexes live in
    /// `cache`).
    pub(crate) fn maintenance(
        &self,
        cfg: &SpatialConfig,
        cache: &Arc<BufferCache>,
    ) -> crate::Result<Box<dyn Maintenance>> {
        fn key_index<V: FixedValue>(
            cfg: &SpatialConfig,
            cache: &Arc<BufferCache>,
        ) -> crate::Result<LsmBTree<V>> {
            LsmBTree::new(
                cache.clone(),
                cfg.key_index_budget_pages,
                cfg.merge_policy,
                cfg.bloom_fp,
            )
        }
        Ok(match *self {
            Strategy::Eager => Box::new(Eager::new(
                cache.page_size(),
                cfg.eager_primary_lookup
                    .then(|| key_index(cfg, cache))
                    .transpose()?,
            )),
            Strategy::Validation => Box::new(Validation::new(
                key_index(cfg, cache)?,
                cfg.validation_merge_repair,
            )),
            Strategy::UpdateMemo(switches) => Box::new(UpdateMemoMaintenance::new(
                switches,
                cfg.buffered_threshold,
                cfg.vacuum_threshold,
            )),
        })
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::Eager => f.write_str("Eager"),
            Strategy::Validation => f.write_str("Validation"),
            Strategy::UpdateMemo(s) => {
                f.write_str("UM")?;
                if s.flush || s.merge || s.buffered || s.vacuum {
                    f.write_str("+")?;
                    for (on, letter) in [(s.flush, "F"), (s.merge, "M"), (s.buffered, "B"), (s.vacuum, "V")] {
                        if on {
                            f.write_str(letter)?;
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

/// Why a strategy name did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown strategy {given:?}: expected Eager, Validation, UM, or UM+ followed by any of the letters \
     F, M, B, V (each at most once), e.g. UM+F, UM+BV, UM+FMBV"
)]
pub struct ParseStrategyError {
    pub given: String,
}

impl FromStr for Strategy {
    type Err = ParseStrategyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseStrategyError { given: s.to_string() };
        let t = s.trim();
        if t.eq_ignore_ascii_case("eager") {
            return Ok(Strategy::Eager);
        }
        if t.eq_ignore_ascii_case("validation") {
            return Ok(Strategy::Validation);
        }
        let rest = t
            .strip_prefix("UM")
            .or_else(|| t.strip_prefix("um"))
            .ok_or_else(err)?;
        let mut sw = CleaningSwitches::default();
        if rest.is_empty() {
            return Ok(Strategy::UpdateMemo(sw));
        }
        let letters = rest.strip_prefix('+').ok_or_else(err)?;
        if letters.is_empty() {
            return Err(err());
        }
        for c in letters.chars() {
            let slot = match c.to_ascii_uppercase() {
                'F' => &mut sw.flush,
                'M' => &mut sw.merge,
                'B' => &mut sw.buffered,
                'V' => &mut sw.vacuum,
                _ => return Err(err()),
            };
            if *slot {
                return Err(err());
            }
            *slot = true;
        }
        Ok(Strategy::UpdateMemo(sw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_names_round_trip() {
        for name in Strategy::PAPER {
            let s: Strategy = name.parse().unwrap();
            assert_eq!(s.to_string(), name);
        }
    }

    #[test]
    fn any_combination_parses_and_prints_canonically() {
        assert_eq!("UM+FM".parse::<Strategy>().unwrap().to_string(), "UM+FM");
        assert_eq!("UM+VBMF".parse::<Strategy>().unwrap().to_string(), "UM+FMBV");
        assert_eq!("um+bv".parse::<Strategy>().unwrap().to_string(), "UM+BV");
        assert_eq!(
            "UM+B".parse::<Strategy>().unwrap(),
            Strategy::UpdateMemo(CleaningSwitches {
                buffered: true,
                ..Default::default()
            })
        );
    }

    #[test]
    fn bad_names_are_rejected_with_the_name() {
        for bad in ["", "UM+", "UM+X", "UM+FF", "UMF", "Eagerly", "UM-F"] {
            let e = bad.parse::<Strategy>().unwrap_err();
            assert_eq!(e.given, bad);
            assert!(e.to_string().contains("UM+FMBV"));
        }
    }
}
