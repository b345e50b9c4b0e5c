//! The secondary-index maintenance strategies compared by the LSM RUM-tree paper, as values that
//! print and parse exactly as the paper names them: `Eager`, `Validation`, `UM`, `UM+F`, `UM+M`,
//! `UM+BV`, `UM+FMBV` (and any other combination of the four switches, e.g. `UM+FM`). The paper's
//! names mean the baselines as the authors ran them; the alternatives carry a suffix:
//! `Eager(physical)` (AsterixDB's physical memory delete) and `Validation(repair)` (Luo & Carey's
//! merge repair).

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

/// Which Eager the index runs (see `eager.rs` for the exact semantics of each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EagerVariant {
    /// As the authors ran their baseline (`LSMRTree.modify` of the competitor repository, driven
    /// by the RUM repository's `UMTest`): an update inserts the new entry and records the object id
    /// in the memory deleted-key B-tree, with the memory delete commented out, so the memory
    /// component keeps every version and flushes write them all.
    #[default]
    Authors,
    /// AsterixDB's Eager: an update or delete removes the old entry physically from the memory
    /// R-tree, so the memory component holds only live objects.
    Physical,
}

/// A maintenance strategy of the LSM R-tree secondary index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Strategy {
    /// AsterixDB's Eager strategy (Alsubaiee et al. 2014): insert the new entry and record a
    /// deleted key that shadows older components; [`EagerVariant`] says what happens to the old
    /// entry when it is in memory.
    Eager(EagerVariant),
    /// Luo & Carey's Validation (PVLDB 2019): blind inserts, a primary key index of latest
    /// timestamps validates query candidates; with `merge_repair`, merges also drop the entries
    /// the key index shows obsolete (Luo & Carey's merge repair; the RUM-tree paper's baseline
    /// has none).
    Validation { merge_repair: bool },
    /// The LSM RUM-tree's Update Memo with its cleaning switches.
    UpdateMemo(CleaningSwitches),
}

impl Strategy {
    /// The seven variants of the paper's Figures 5-6 and Tables 1-2, in the paper's order (Eager and
    /// Validation as the authors ran them).
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
            Strategy::Eager(variant) => Box::new(Eager::new(
                variant,
                cache.page_size(),
                cfg.eager_primary_lookup
                    .then(|| key_index(cfg, cache))
                    .transpose()?,
            )),
            Strategy::Validation { merge_repair } => {
                Box::new(Validation::new(key_index(cfg, cache)?, merge_repair))
            }
            Strategy::UpdateMemo(switches) => Box::new(UpdateMemoMaintenance::new(
                switches,
                cfg.buffered_threshold,
                cfg.vacuum_threshold,
                cfg.cleaning_counters,
            )),
        })
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::Eager(EagerVariant::Authors) => f.write_str("Eager"),
            Strategy::Eager(EagerVariant::Physical) => f.write_str("Eager(physical)"),
            Strategy::Validation { merge_repair: false } => f.write_str("Validation"),
            Strategy::Validation { merge_repair: true } => f.write_str("Validation(repair)"),
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
    "unknown strategy {given:?}: expected Eager, Eager(physical), Validation, Validation(repair), UM, \
     or UM+ followed by any of the letters F, M, B, V (each at most once), e.g. UM+F, UM+BV, UM+FMBV"
)]
pub struct ParseStrategyError {
    pub given: String,
}

impl FromStr for Strategy {
    type Err = ParseStrategyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseStrategyError { given: s.to_string() };
        let t = s.trim();
        for (name, strategy) in [
            ("eager", Strategy::Eager(EagerVariant::Authors)),
            ("eager(physical)", Strategy::Eager(EagerVariant::Physical)),
            ("validation", Strategy::Validation { merge_repair: false }),
            ("validation(repair)", Strategy::Validation { merge_repair: true }),
        ] {
            if t.eq_ignore_ascii_case(name) {
                return Ok(strategy);
            }
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
    fn baseline_variants_parse_case_insensitively_and_print_canonically() {
        let cases = [
            ("Eager", Strategy::Eager(EagerVariant::Authors)),
            ("Eager(physical)", Strategy::Eager(EagerVariant::Physical)),
            ("Validation", Strategy::Validation { merge_repair: false }),
            ("Validation(repair)", Strategy::Validation { merge_repair: true }),
        ];
        for (name, strategy) in cases {
            assert_eq!(name.parse::<Strategy>().unwrap(), strategy);
            assert_eq!(strategy.to_string(), name);
            assert_eq!(name.to_uppercase().parse::<Strategy>().unwrap(), strategy);
            assert_eq!(
                format!(" {} ", name.to_lowercase()).parse::<Strategy>().unwrap(),
                strategy
            );
        }
        // The paper's names are the authors' baselines.
        let paper = Strategy::paper_strategies();
        assert_eq!(paper[0], Strategy::Eager(EagerVariant::default()));
        assert_eq!(EagerVariant::default(), EagerVariant::Authors);
        assert_eq!(paper[1], Strategy::Validation { merge_repair: false });
    }

    #[test]
    fn bad_names_are_rejected_with_the_name() {
        let bad_names = [
            "",
            "UM+",
            "UM+X",
            "UM+FF",
            "UMF",
            "Eagerly",
            "UM-F",
            "Eager()",
            "Eager(authors",
            "Validation(Repair",
            "Eager (physical)",
            "Validation(physical)",
        ];
        for bad in bad_names {
            let e = bad.parse::<Strategy>().unwrap_err();
            assert_eq!(e.given, bad);
            let msg = e.to_string();
            for form in ["Eager(physical)", "Validation(repair)", "UM+FMBV"] {
                assert!(msg.contains(form), "{msg}");
            }
        }
    }
}
