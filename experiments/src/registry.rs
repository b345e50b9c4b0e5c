//! Every experiment the binary knows, by name: the one place an experiment is registered (the
//! Makefile reads `lsmlab list --names` for its per-experiment targets).

use anyhow::bail;

use crate::experiment::Experiment;

/// All registered experiments, in the order `lsmlab list` prints them (and `make` runs them).
pub fn all() -> Vec<&'static dyn Experiment> {
    vec![
        // ---- Register experiments here (one line each; keep paper order). ----------------------
        // LSM RUM-tree (src/rum/, declared with `mod rum;` in lib.rs):
        &crate::rum::update::RumUpdate,
        &crate::rum::query::RumQuery,
        &crate::rum::mixed::RumMixed,
        &crate::rum::concurrency::RumConcurrency,
        &crate::rum::tuning::RumTuning,
        // Leaper (src/leaper/):
        &crate::leaper::online::LeaperOnline,
        &crate::leaper::model::LeaperModelExperiment,
        &crate::leaper::sensitivity::LeaperSensitivity,
        // DIOL (src/diol/):
        &crate::diol::layouts::DiolLayouts,
        &crate::diol::compaction::DiolCompaction,
        &crate::diol::sizing::DiolSizing,
        // OrientDB OEP 7 (src/oep7/):
        &crate::oep7::fetch::Oep7Fetch,
        &crate::oep7::ycsb::Oep7Ycsb,
        &crate::oep7::space::Oep7Space,
        &crate::oep7::graph::Oep7Graph,
        // Experiments of no paper (each named in STANDALONE_EXPERIMENTS below):
        &crate::scaling::Scaling,
        // Across the papers (src/combined/):
        &crate::combined::Combined,
        // ------------------------------------------------------------------------------------------
    ]
}

/// The paper prefixes of experiment names (`rum-update`); `make <name>` has one rule per prefix. An
/// experiment may also carry its paper's name alone (`diol`): `make <paper>` runs it with the rest.
pub const PAPER_PREFIXES: [&str; 4] = ["rum", "leaper", "diol", "oep7"];

/// Experiments that belong to no paper, by their whole name (one line each): `make <name>` runs
/// one, as the Makefile's `STANDALONE` list says (a test checks the two lists agree).
pub const STANDALONE_EXPERIMENTS: &[&str] = &["scaling"];
/// Prefixes of experiments that belong to no single paper (`combined`); the Makefile has a rule
/// for each beside the papers'.
pub const CROSS_PAPER_PREFIXES: [&str; 1] = ["combined"];

/// The experiment called `name` among `experiments`; an unknown name is an error that lists them.
pub fn find_in<'a>(experiments: &[&'a dyn Experiment], name: &str) -> anyhow::Result<&'a dyn Experiment> {
    if let Some(found) = experiments.iter().find(|e| e.name() == name) {
        return Ok(*found);
    }
    let names: Vec<&str> = experiments.iter().map(|e| e.name()).collect();
    if names.is_empty() {
        bail!("unknown experiment `{name}`: no experiments are registered in this build");
    }
    bail!("unknown experiment `{name}`; experiments: {}", names.join(", "))
}

/// The registered experiment called `name`.
pub fn find(name: &str) -> anyhow::Result<&'static dyn Experiment> {
    find_in(&all(), name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FAKE, OTHER};

    #[test]
    fn names_are_unique_and_well_formed() {
        let all = all();
        for (i, e) in all.iter().enumerate() {
            assert!(
                !all[..i].iter().any(|o| o.name() == e.name()),
                "duplicate {}",
                e.name()
            );
            assert!(e
                .name()
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
        }
    }

    #[test]
    fn names_carry_a_paper_prefix_the_makefile_knows() {
        for e in all() {
            assert!(
                STANDALONE_EXPERIMENTS.contains(&e.name())
                    || PAPER_PREFIXES.iter().chain(&CROSS_PAPER_PREFIXES).any(|p| e
                        .name()
                        .strip_prefix(p)
                        .is_some_and(|rest| rest.is_empty() || (rest.len() > 1 && rest.starts_with('-')))),
                "{} has no paper prefix and is not a standalone experiment",
                e.name()
            );
        }
    }

    #[test]
    fn the_makefile_has_a_rule_per_prefix_and_standalone_name() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../Makefile");
        let makefile = std::fs::read_to_string(path).unwrap();
        for p in PAPER_PREFIXES {
            assert!(
                makefile.lines().any(|l| l.starts_with(&format!("{p}-%:"))),
                "the Makefile has no `{p}-%:` rule"
            );
        }
        let listed: Vec<&str> = makefile
            .lines()
            .filter_map(|l| l.strip_prefix("STANDALONE += "))
            .map(str::trim)
            .collect();
        let mut expected = STANDALONE_EXPERIMENTS.to_vec();
        expected.sort_unstable();
        let mut listed_sorted = listed.clone();
        listed_sorted.sort_unstable();
        assert_eq!(
            listed_sorted, expected,
            "the Makefile's STANDALONE lines and STANDALONE_EXPERIMENTS differ"
        );
        for name in STANDALONE_EXPERIMENTS {
            assert!(
                all().iter().any(|e| e.name() == *name),
                "standalone experiment {name} is not registered"
            );
            assert!(
                !PAPER_PREFIXES
                    .iter()
                    .any(|p| name.starts_with(&format!("{p}-")) || name == p),
                "{name} carries a paper prefix: it needs no Makefile line"
            );
        }
    }

    #[test]
    fn every_experiment_documents_its_keys_and_its_defaults_validate() {
        for e in all() {
            for scale in crate::scale::Scale::ALL {
                let keys = e
                    .keys(scale)
                    .unwrap_or_else(|err| panic!("{} at {scale}: {err:#}", e.name()));
                let config = e
                    .resolve(scale, &crate::config::Overlay::default())
                    .unwrap_or_else(|err| panic!("{} at {scale}: {err:#}", e.name()));
                assert_eq!(keys.len(), config.len(), "{}", e.name());
                assert!(keys.iter().all(|k| !k.help.is_empty()), "{}", e.name());
            }
        }
    }

    #[test]
    fn find_returns_the_experiment_or_lists_the_names() {
        let experiments: Vec<&dyn Experiment> = vec![&FAKE, &OTHER];
        assert_eq!(find_in(&experiments, "fake").unwrap().name(), "fake");
        let err = find_in(&experiments, "nope").unwrap_err().to_string();
        assert!(
            err.contains("`nope`") && err.contains("fake") && err.contains("other"),
            "{err}"
        );
        let none: Vec<&dyn Experiment> = vec![];
        assert!(find_in(&none, "fake")
            .unwrap_err()
            .to_string()
            .contains("no experiments"));
    }
}
