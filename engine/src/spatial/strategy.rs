//! The secondary-index maintenance strategies compared by the LSM RUM-tree paper, as values that
//! print and parse exactly as the paper names them: `Eager`, `Validation`, `UM`, `UM+F`, `UM+M`,
//! `UM+BV`, `UM+FMBV` (and any other combination of the four switches, e.g. `UM+FM`). The paper's
//! names mean the baselines as the authors ran them (`Eager`: the LSM R-tree with antimatter
//! entries; `Validation`: the LSM R-tree with buddy deleted-key B-trees probed per candidate); the
//! alternatives carry a suffix: `Eager(buddy)` (`LSMRTree.modify`: deleted keys in a buddy B-tree,
//! every version kept in memory), `Eager(physical)` (AsterixDB's physical memory delete with a
//! buddy B-tree), `Validation(key-index)` (Luo & Carey's primary key index) and
//! `Validation(repair)` (the key index with Luo & Carey's merge repair).

use super::config::SpatialConfig;
use super::maintenance::Maintenance;
use super::strategies::{self, StrategyDef, EAGER, UPDATE_MEMO, VALIDATION};
use crate::cache::BufferCache;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::hash::{Hash, Hasher};
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

impl CleaningSwitches {
    /// The switches as the Update Memo row's option: F, M, B, V as bits 0-3.
    pub fn to_option(self) -> u8 {
        u8::from(self.flush)
            | u8::from(self.merge) << 1
            | u8::from(self.buffered) << 2
            | u8::from(self.vacuum) << 3
    }

    /// The switches of an option [`CleaningSwitches::to_option`] gave.
    pub fn from_option(option: u8) -> Self {
        CleaningSwitches {
            flush: option & 1 != 0,
            merge: option & 2 != 0,
            buffered: option & 4 != 0,
            vacuum: option & 8 != 0,
        }
    }
}

/// Which Eager the index runs (see `eager.rs` for the exact semantics of each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EagerVariant {
    /// As the authors ran their Eager baseline (`LSMRTreeWithAntiMatterTuples`, driven by
    /// `UMTest.run_antimatters_test` of the competitor repository, through
    /// `AbstractLSMRTree.modify`): an update removes the old entry from the memory R-tree if it is
    /// there and writes its antimatter entry in any case, into memory (counted against the memory
    /// budget), then by the flush into the disk R-tree, where it shadows its target and annihilates
    /// with it when a merge brings both together.
    #[default]
    Antimatter,
    /// `LSMRTree.modify` of the competitor repository (the index of the authors' Validation runs):
    /// an update inserts the new entry and records the object id in the memory deleted-key buddy
    /// B-tree, with the memory delete commented out, so the memory component keeps every version
    /// and flushes write them all.
    Buddy,
    /// AsterixDB's Eager with a buddy B-tree: an update or delete removes the old entry physically
    /// from the memory R-tree, so the memory component holds only live objects.
    Physical,
}

impl EagerVariant {
    /// The variant of the Eager row's option (0 = buddy, 1 = physical, anything else =
    /// antimatter; the options of the older variants keep their numbers).
    pub fn from_option(option: u8) -> Self {
        match option {
            0 => EagerVariant::Buddy,
            1 => EagerVariant::Physical,
            _ => EagerVariant::Antimatter,
        }
    }

    fn to_option(self) -> u8 {
        match self {
            EagerVariant::Buddy => 0,
            EagerVariant::Physical => 1,
            EagerVariant::Antimatter => 2,
        }
    }
}

/// Which Validation the index runs (see `validation.rs` and `eager.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ValidationVariant {
    /// As the authors ran their Validation baseline (`UMTest.runTest` on `LSMRTree` of the
    /// competitor repository): blind inserts plus the object id in a buddy deleted-key B-tree, and
    /// per query candidate a probe of every newer component's deleted-key tree
    /// (`LSMRTreeSearchCursor`, its Bloom test inverted as it reads).
    #[default]
    Probe,
    /// Luo & Carey's Validation: a primary key index of latest timestamps, one lookup per
    /// candidate, no merge repair.
    KeyIndex,
    /// The key index with Luo & Carey's merge repair.
    Repair,
}

impl ValidationVariant {
    /// The variant of the Validation row's option (0 = key index, 1 = repair, anything else =
    /// probe; the options of the older variants keep their numbers).
    pub fn from_option(option: u8) -> Self {
        match option {
            0 => ValidationVariant::KeyIndex,
            1 => ValidationVariant::Repair,
            _ => ValidationVariant::Probe,
        }
    }

    fn to_option(self) -> u8 {
        match self {
            ValidationVariant::KeyIndex => 0,
            ValidationVariant::Repair => 1,
            ValidationVariant::Probe => 2,
        }
    }
}

/// A maintenance strategy of the LSM R-tree secondary index: a family of the strategy table
/// ([`super::STRATEGIES`]) and the family's option. It prints and parses exactly as the paper
/// names the strategies, and serialises as that name.
#[derive(Clone, Copy)]
pub struct Strategy {
    def: &'static StrategyDef,
    option: u8,
}

impl Strategy {
    /// The seven variants of the paper's Figures 5-6 and Tables 1-2, in the paper's order (Eager and
    /// Validation as the authors ran them).
    pub const PAPER: [&'static str; 7] = ["Eager", "Validation", "UM", "UM+F", "UM+M", "UM+BV", "UM+FMBV"];

    /// AsterixDB's Eager strategy (Alsubaiee et al. 2014): insert the new entry and record a
    /// deleted key that shadows older components; [`EagerVariant`] says what happens to the old
    /// entry when it is in memory.
    pub fn eager(variant: EagerVariant) -> Self {
        Strategy::from_def(&EAGER, variant.to_option())
    }

    /// Validation: blind inserts with query candidates validated as [`ValidationVariant`] says
    /// (the authors' probes of newer components' deleted-key trees, or Luo & Carey's primary key
    /// index, PVLDB 2019, with or without merge repair).
    pub fn validation(variant: ValidationVariant) -> Self {
        Strategy::from_def(&VALIDATION, variant.to_option())
    }

    /// The LSM RUM-tree's Update Memo with its cleaning switches.
    pub fn update_memo(switches: CleaningSwitches) -> Self {
        Strategy::from_def(&UPDATE_MEMO, switches.to_option())
    }

    /// The strategy of `def`'s family with `option`.
    pub(crate) fn from_def(def: &'static StrategyDef, option: u8) -> Self {
        Strategy { def, option }
    }

    /// The strategies of [`Strategy::PAPER`].
    pub fn paper_strategies() -> Vec<Strategy> {
        Self::PAPER.iter().filter_map(|s| strategies::parse(s)).collect()
    }

    /// The family's name (`Eager`, `Validation`, `UM`, or a family added to the table).
    pub fn family(&self) -> &'static str {
        self.def.family
    }

    /// The cleaning switches, for an Update Memo strategy.
    pub fn switches(&self) -> Option<CleaningSwitches> {
        self.uses_update_memo()
            .then(|| CleaningSwitches::from_option(self.option))
    }

    /// Whether this is an Update Memo strategy (concurrent ingestion needs its memo).
    pub fn uses_update_memo(&self) -> bool {
        std::ptr::eq(self.def, &UPDATE_MEMO)
    }

    /// Builds this strategy's maintenance state from the configuration (its key indexes live in
    /// `cache`).
    pub(crate) fn maintenance(
        &self,
        cfg: &SpatialConfig,
        cache: &Arc<BufferCache>,
    ) -> crate::Result<Box<dyn Maintenance>> {
        (self.def.build)(self.option, cfg, cache)
    }
}

impl PartialEq for Strategy {
    fn eq(&self, other: &Self) -> bool {
        self.def.family == other.def.family && self.option == other.option
    }
}

impl Eq for Strategy {}

impl Hash for Strategy {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.def.family.hash(state);
        self.option.hash(state);
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&(self.def.name)(self.option))
    }
}

impl fmt::Debug for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Strategy({self})")
    }
}

/// Why a strategy name did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown strategy {given:?}: expected {}", strategies::forms())]
pub struct ParseStrategyError {
    /// The name as given.
    pub given: String,
}

impl FromStr for Strategy {
    type Err = ParseStrategyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        strategies::parse(s).ok_or_else(|| ParseStrategyError { given: s.to_string() })
    }
}

impl Serialize for Strategy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Strategy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name a row of the table prints parses back to the same strategy, and every family's
    /// names are its own (no row accepts another row's name).
    #[test]
    fn every_row_of_the_table_prints_names_that_parse_back_to_it() {
        let mut seen = std::collections::HashSet::new();
        for def in super::super::STRATEGIES {
            for option in 0..=u8::MAX {
                let name = (def.name)(option);
                let back: Strategy = name.parse().unwrap();
                assert_eq!(back.family(), def.family, "{name}");
                assert_eq!(back.to_string(), name);
                seen.insert(name);
            }
        }
        // Eager 3, Validation 3, UM 16.
        assert_eq!(seen.len(), 22, "{seen:?}");
        let mut s = Strategy::update_memo(CleaningSwitches::from_option(0b1011));
        assert_eq!(s.to_string(), "UM+FMV");
        assert_eq!(s.switches().map(CleaningSwitches::to_option), Some(0b1011));
        s = Strategy::eager(EagerVariant::Physical);
        assert_eq!((s.family(), s.switches()), ("Eager", None));
    }

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
            Strategy::update_memo(CleaningSwitches {
                buffered: true,
                ..Default::default()
            })
        );
    }

    #[test]
    fn baseline_variants_parse_case_insensitively_and_print_canonically() {
        let cases = [
            ("Eager", Strategy::eager(EagerVariant::Antimatter)),
            ("Eager(buddy)", Strategy::eager(EagerVariant::Buddy)),
            ("Eager(physical)", Strategy::eager(EagerVariant::Physical)),
            ("Validation", Strategy::validation(ValidationVariant::Probe)),
            (
                "Validation(key-index)",
                Strategy::validation(ValidationVariant::KeyIndex),
            ),
            (
                "Validation(repair)",
                Strategy::validation(ValidationVariant::Repair),
            ),
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
        assert_eq!(paper[0], Strategy::eager(EagerVariant::default()));
        assert_eq!(EagerVariant::default(), EagerVariant::Antimatter);
        assert_eq!(paper[1], Strategy::validation(ValidationVariant::default()));
        assert_eq!(ValidationVariant::default(), ValidationVariant::Probe);
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
            for form in [
                "Eager(buddy)",
                "Eager(physical)",
                "Validation(key-index)",
                "Validation(repair)",
                "UM+FMBV",
            ] {
                assert!(msg.contains(form), "{msg}");
            }
        }
    }
}
