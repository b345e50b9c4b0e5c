//! The strategy table: every maintenance strategy the LSM R-tree can run, one row per family.
//!
//! A row ([`StrategyDef`]) says which names select the family (and which of its options), how a
//! selected strategy prints, and how it builds its [`Maintenance`]. [`Strategy`] values are a row
//! plus an option, so parsing, printing and building a strategy all go through this table and
//! nothing else names a family. Adding a strategy is one file here implementing [`Maintenance`]
//! (with its `DEF`) and two lines below: its `mod` and its row in [`STRATEGIES`] (the steps are in
//! `docs/extending.md`).

mod eager;
mod memo;
mod validation;

use super::config::SpatialConfig;
use super::maintenance::Maintenance;
use super::strategy::Strategy;
use crate::btree::FixedValue;
use crate::cache::BufferCache;
use crate::lsm::LsmBTree;
use crate::Result;
use std::sync::Arc;

pub(crate) use eager::EAGER;
pub(crate) use memo::UPDATE_MEMO;
pub(crate) use validation::VALIDATION;

/// One family of strategies in the table.
///
/// The option is the family's own encoding of its variants (Eager's two semantics, Validation's
/// merge repair, the Update Memo's four cleaning switches); a family without variants uses 0.
pub struct StrategyDef {
    /// The family's name, as results group strategies (`Eager`, `Validation`, `UM`).
    pub family: &'static str,
    /// The names the family accepts, for the error that lists every accepted name.
    pub forms: &'static str,
    /// The option `name` selects if it names this family (`name` is trimmed; families match
    /// case-insensitively), or `None`.
    pub parse: fn(name: &str) -> Option<u8>,
    /// The canonical name of the family's `option`; parsing it gives the option back.
    pub name: fn(option: u8) -> String,
    /// The maintenance state of `option` for an index configured by `cfg`, whose pages (and any
    /// key index's) live in `cache`.
    pub build: BuildMaintenance,
}

/// How a row builds a strategy's state: from its option, the index's configuration and the cache
/// its pages (and any key index's) live in.
pub type BuildMaintenance =
    fn(option: u8, cfg: &SpatialConfig, cache: &Arc<BufferCache>) -> Result<Box<dyn Maintenance>>;

/// Every strategy family, in the order the parse error lists them.
pub static STRATEGIES: &[&StrategyDef] = &[&EAGER, &VALIDATION, &UPDATE_MEMO];

/// The family that accepts `name`, with the option it selects.
pub(crate) fn parse(name: &str) -> Option<Strategy> {
    let name = name.trim();
    STRATEGIES
        .iter()
        .find_map(|def| (def.parse)(name).map(|option| Strategy::from_def(def, option)))
}

/// The canonical name of every strategy the table knows, family by family (each option whose name
/// parses back to it), e.g. for a test that runs them all.
pub fn every_strategy_name() -> Vec<String> {
    let mut names = Vec::new();
    for def in STRATEGIES {
        for option in 0..=u8::MAX {
            let name = (def.name)(option);
            if (def.parse)(&name) == Some(option) && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// Every family's accepted names, as one list.
pub(crate) fn forms() -> String {
    STRATEGIES.iter().map(|d| d.forms).collect::<Vec<_>>().join(", ")
}

/// A primary key index as Eager's old-location lookup and Validation keep it beside the R-tree:
/// an LSM B+-tree in `cache` with the index's key-index budget, merge policy and Bloom filters.
pub(crate) fn key_index<V: FixedValue>(cfg: &SpatialConfig, cache: &Arc<BufferCache>) -> Result<LsmBTree<V>> {
    LsmBTree::new(
        cache.clone(),
        cfg.key_index_budget_pages,
        cfg.merge_policy,
        cfg.bloom_fp,
    )
}

/// A `parse` for a family of fixed names: the option of the name (case-insensitive) in `names`.
pub(crate) fn by_names(name: &str, names: &[(&str, u8)]) -> Option<u8> {
    names
        .iter()
        .find(|(n, _)| name.eq_ignore_ascii_case(n))
        .map(|&(_, option)| option)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_name_lists_each_variant_once_and_each_parses_back() {
        let names = every_strategy_name();
        // Eager x3, Validation x3, UM with the 16 subsets of F, M, B, V.
        assert_eq!(names.len(), 22, "{names:?}");
        for want in ["Eager", "Eager(buddy)", "Validation(key-index)", "UM", "UM+FMBV"] {
            assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
        }
        for name in &names {
            let s = parse(name).unwrap_or_else(|| panic!("{name} does not parse"));
            assert_eq!(&s.to_string(), name);
        }
    }
}
