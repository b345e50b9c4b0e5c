//! The claims files against the experiments they name: every claim's experiment is registered, and
//! every field, dimension, variant and baseline it reads is in that experiment's committed small
//! results; judged on those results, every claim entry is measured (or undefined, 0 / 0, on real
//! rows). The figure specs are checked the same way. The committed evaluation,
//! `results/small/claims.json`, is checked against the committed results and the claims files: it is
//! current, every claim it does not judge reproduced says why, and nothing it judges reproduced lies
//! outside its claim's band, recomputed here from the paper's number, form and tolerance.

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

/// The committed evaluation of the small results (`results/small/claims.json`).
fn committed_small_claims() -> serde_json::Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../results/small/claims.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A measured number as claims.json writes it: a number, "inf" / "-inf", or null.
fn measured(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::String(s) if s == "inf" => Some(f64::INFINITY),
        serde_json::Value::String(s) if s == "-inf" => Some(f64::NEG_INFINITY),
        v => v.as_f64(),
    }
}

/// The band of a claim straight from the paper's words as its file states them (form, number,
/// tolerance), written out here rather than taken from the evaluator: (lowest, highest), infinite
/// where unbounded; none for a direction claim.
fn stated_band(claim: &claims::Claim, tol: f64) -> Option<(f64, f64)> {
    use claims::Form;
    let sorted = |a: f64, b: f64| (a.min(b), a.max(b));
    let x = claim.value.unwrap_or(f64::NAN);
    let (inf, neg) = (f64::INFINITY, x < 0.0);
    Some(match claim.form {
        Form::Direction => return None,
        Form::About => sorted(x * (1.0 - tol), x * (1.0 + tol)),
        Form::Range => {
            let (lo, hi) = (claim.lo.unwrap(), claim.hi.unwrap());
            (lo - lo.abs() * tol, hi + hi.abs() * tol)
        }
        Form::AtLeast if neg => (-inf, x * (1.0 - tol)),
        Form::AtLeast => (x * (1.0 - tol), inf),
        Form::AtMost if neg => (x * (1.0 + tol), inf),
        Form::AtMost => (-inf, x * (1.0 + tol)),
        Form::UpTo => sorted(x * (1.0 - tol), x * claim.beyond.unwrap_or(1.0 + tol)),
    })
}

fn unit_text(unit: claims::Unit) -> String {
    serde_json::to_value(unit).unwrap().as_str().unwrap().to_string()
}

#[test]
fn nothing_judged_reproduced_in_the_committed_results_lies_outside_its_claims_stated_band() {
    let sets = lsmlab::registry::claims().unwrap();
    let json = committed_small_claims();
    assert_eq!(json["schema"], claims::SCHEMA, "regenerate with `lsmlab report`");
    let summaries = json["claims"].as_array().unwrap();
    let entries = json["entries"].as_array().unwrap();
    let mut checked = 0;
    for set in &sets {
        for claim in &set.claims {
            let tol = claim.tolerance.unwrap_or(set.tolerance);
            let summary = summaries
                .iter()
                .find(|s| s["claim"] == claim.id.as_str())
                .unwrap_or_else(|| panic!("claims.json lacks {}", claim.id));
            assert_eq!(summary["unit"], unit_text(claim.unit).as_str(), "{}", claim.id);
            assert_eq!(summary["form"], claim.form.as_str(), "{}", claim.id);
            let band = stated_band(claim, tol);
            // The band claims.json states is the one the paper's words give.
            match band {
                None => assert!(summary["band"].is_null(), "{}", claim.id),
                Some((lo, hi)) => {
                    let edge = |v: &serde_json::Value, want: f64| {
                        if want.is_infinite() {
                            v.is_null()
                        } else {
                            (v.as_f64().unwrap() - want).abs() <= 1e-9 * want.abs().max(1.0)
                        }
                    };
                    assert!(
                        edge(&summary["band"]["lo"], lo) && edge(&summary["band"]["hi"], hi),
                        "{}: band {} against ({lo}, {hi})",
                        claim.id,
                        summary["band"]
                    );
                }
            }
            let inside = |m: f64| band.is_none_or(|(lo, hi)| m >= lo && m <= hi);
            let on_side = |m: f64, e: &serde_json::Value| match claim.direction {
                claims::Direction::Above(x) => m > x,
                claims::Direction::Below(x) => m < x,
                // Judged against the baseline's raw value, which claims.json does not carry.
                claims::Direction::BelowBaseline => e["verdict"] != "not-reproduced",
                claims::Direction::None => false,
            };
            let mine: Vec<&serde_json::Value> = entries
                .iter()
                .filter(|e| e["claim"] == claim.id.as_str())
                .collect();
            for e in &mine {
                assert_eq!(
                    e["unit"],
                    unit_text(claim.unit).as_str(),
                    "{} {}",
                    claim.id,
                    e["group"]
                );
                if e["verdict"] != "reproduced" {
                    continue;
                }
                let m = measured(&e["measured"]).unwrap();
                let ok = match band {
                    Some(_) => inside(m),
                    None => on_side(m, e),
                };
                assert!(
                    ok,
                    "{} {}: {m} judged reproduced outside {band:?}",
                    claim.id, e["group"]
                );
                checked += 1;
            }
            if summary["verdict"] != "reproduced" {
                continue;
            }
            let values: Vec<f64> = mine
                .iter()
                .filter(|e| e["verdict"] != "not-measured")
                .filter_map(|e| measured(&e["measured"]))
                .collect();
            assert!(!values.is_empty(), "{}", claim.id);
            if claim.form == claims::Form::UpTo {
                let neg = claim.value.unwrap() < 0.0;
                let extreme = values
                    .iter()
                    .copied()
                    .reduce(if neg { f64::min } else { f64::max })
                    .unwrap();
                assert!(
                    inside(extreme),
                    "{}: extreme {extreme} outside {band:?}",
                    claim.id
                );
                for e in &mine {
                    if let Some(m) = measured(&e["measured"]) {
                        let (lo, hi) = band.unwrap();
                        assert!(if neg { m >= lo } else { m <= hi }, "{}: {m} beyond", claim.id);
                        assert!(on_side(m, e) || inside(m), "{}: {m} wrong side", claim.id);
                    }
                }
            } else {
                for m in values {
                    let ok = match band {
                        Some(_) => inside(m),
                        None => mine
                            .iter()
                            .filter(|e| measured(&e["measured"]) == Some(m))
                            .all(|e| on_side(m, e)),
                    };
                    assert!(ok, "{}: reproduced with {m} outside {band:?}", claim.id);
                }
            }
        }
    }
    assert!(checked > 0, "no reproduced entry was checked");
}

#[test]
fn every_claim_not_reproduced_in_the_committed_results_says_why() {
    let json = committed_small_claims();
    let mut missing = Vec::new();
    for s in json["claims"].as_array().unwrap() {
        let why = s["why"].as_str().map(str::trim).unwrap_or_default();
        if s["verdict"] != "reproduced" && why.is_empty() {
            missing.push(format!("{} ({})", s["claim"], s["verdict"]));
        }
    }
    assert!(missing.is_empty(), "claims without a why: {missing:?}");
}

#[test]
fn the_committed_claims_json_is_the_evaluation_of_the_committed_results() {
    let sets = lsmlab::registry::claims().unwrap();
    let fresh =
        serde_json::to_value(claims::evaluate(&sets, &committed_small_results(), Scale::Small)).unwrap();
    let committed = committed_small_claims();
    let stale = "results/small/claims.json is stale: regenerate it with `lsmlab report --scale small`";
    assert_eq!(fresh["schema"], committed["schema"], "{stale}");
    assert_eq!(fresh["rules"], committed["rules"], "{stale}");
    for key in ["claims", "entries"] {
        let (a, b) = (fresh[key].as_array().unwrap(), committed[key].as_array().unwrap());
        assert_eq!(a.len(), b.len(), "{stale}: {key} differ in number");
        for (x, y) in a.iter().zip(b) {
            assert_eq!(x, y, "{stale}: {key} of {} differ", x["claim"]);
        }
    }
}
