//! The claims files against the experiments they name: every claim's experiment is registered, and
//! every field, dimension, variant and baseline it reads is in that experiment's committed small
//! results; judged on those results, every claim entry is measured (or undefined, 0 / 0, on real
//! rows). The figure specs are checked the same way.

// Tests may unwrap: a panic here is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use lsmlab_harness::claims::{self, Verdict};
use lsmlab_harness::experiment::Scale;
use lsmlab_harness::result::{find_result_files, ResultFile};

fn committed_small_results() -> Vec<ResultFile> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../results");
    find_result_files(&dir, &[Scale::Small])
        .unwrap()
        .iter()
        .map(|p| ResultFile::read(p).unwrap())
        .collect()
}

fn has_field(result: &ResultFile, field: &str) -> bool {
    result.rows.iter().any(|r| r.contains_key(field))
}

#[test]
fn every_claim_names_a_registered_experiment_and_fields_its_rows_have() {
    let experiments = lsmlab::registry::all();
    let results = committed_small_results();
    let sets = lsmlab::registry::claims().unwrap();
    assert!(!sets.is_empty());
    for set in &sets {
        for claim in &set.claims {
            let experiment = experiments
                .iter()
                .find(|e| e.name() == claim.experiment)
                .unwrap_or_else(|| {
                    panic!("claim {} names unknown experiment {}", claim.id, claim.experiment)
                });
            assert_eq!(experiment.paper(), set.paper, "claim {}", claim.id);
            let result = results
                .iter()
                .find(|r| r.experiment == claim.experiment)
                .unwrap_or_else(|| panic!("no committed small result for {}", claim.experiment));
            let m = &claim.measure;
            let mut fields: Vec<&str> = m.field.split('+').collect();
            if let Some(s) = &claim.secondary {
                fields.extend(s.split('+'));
            }
            fields.push(&m.variant_key);
            fields.extend(m.group_by.iter().map(String::as_str));
            fields.extend(m.over.iter().map(String::as_str));
            fields.extend(m.filter.keys().map(String::as_str));
            for f in fields {
                assert!(
                    has_field(result, f.trim()),
                    "claim {}: rows of {} lack `{f}`",
                    claim.id,
                    claim.experiment
                );
            }
            let variants = result.distinct(&m.variant_key);
            for v in m.variants.iter().chain(&m.baselines) {
                assert!(
                    variants.contains(v),
                    "claim {}: {} rows have no {v}",
                    claim.id,
                    claim.experiment
                );
            }
            for (key, values) in &m.filter {
                let present = result.distinct(key);
                for v in values.iter().filter(|v| !v.starts_with('$')) {
                    assert!(present.contains(v), "claim {}: no {key} = {v}", claim.id);
                }
            }
        }
    }
}

#[test]
fn every_claim_is_measured_on_the_committed_small_results() {
    let sets = lsmlab::registry::claims().unwrap();
    let eval = claims::evaluate(&sets, &committed_small_results(), Scale::Small);
    assert!(!eval.entries.is_empty());
    for e in &eval.entries {
        // A measurement can be undefined on real rows (0 / 0: no latency spike for either policy
        // to eliminate); that still reads every field it names.
        if e.note.as_deref() == Some("undefined (0 / 0)") {
            continue;
        }
        assert_ne!(
            e.verdict,
            Verdict::NotMeasured,
            "{} {}: {:?}",
            e.claim,
            e.group,
            e.note
        );
    }
    let ids: Vec<&str> = eval.claims.iter().map(|c| c.claim.as_str()).collect();
    let expected: usize = sets.iter().map(|s| s.claims.len()).sum();
    assert_eq!(ids.len(), expected);
}

#[test]
fn every_figure_spec_reads_fields_its_rows_have() {
    let papers = lsmlab::registry::papers();
    for result in committed_small_results() {
        let specs = papers.figure_specs(&result.experiment);
        // leaper-model's figures are drawn by code from its rows, not from specs.
        assert!(
            !specs.is_empty() || result.experiment == "leaper-model",
            "{} has no figure specs",
            result.experiment
        );
        for spec in specs {
            for field in lsmlab_harness::plot::spec_fields(spec) {
                assert!(
                    has_field(&result, &field),
                    "{}: spec {} reads missing `{field}`",
                    result.experiment,
                    spec.stem
                );
            }
        }
    }
}
