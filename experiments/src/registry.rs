//! Every paper the binary knows, as `papers!` in `lib.rs` lists them (one name each). Its
//! descriptor (`paper()` in its folder: id, title, experiments, claims file, trace families) gives
//! everything else: the experiments `lsmlab list` prints (the Makefile asks `lsmlab list --of` what
//! a target runs), the claims the report judges and the traces `lsmlab gen` writes.

use std::sync::OnceLock;

use lsmlab_harness::paper::{PaperKind, Papers};
use lsmlab_harness::trace::{TraceFamilies, TraceFamily};

use crate::experiment::Experiment;

pub use lsmlab_harness::experiment::find_in;

/// Every paper, in the order `lsmlab list` prints their experiments (and `make` runs them). The
/// first call installs the papers' fixed figure styles ([`lsmlab_harness::plot::install_styles`]).
pub fn papers() -> Papers {
    let papers = crate::listed();
    static STYLES: OnceLock<()> = OnceLock::new();
    STYLES.get_or_init(|| {
        lsmlab_harness::plot::install_styles(papers.styles());
    });
    papers
}

/// All registered experiments, paper by paper.
pub fn all() -> Vec<&'static dyn Experiment> {
    papers().experiments()
}

/// The registered experiment called `name`.
pub fn find(name: &str) -> anyhow::Result<&'static dyn Experiment> {
    find_in(&all(), name)
}

/// The papers' claim files, compiled into the binary: (file name, text), one per paper.
pub fn claim_sources() -> Vec<(&'static str, &'static str)> {
    papers().claim_sources()
}

/// Every paper's claims, parsed and checked.
pub fn claims() -> anyhow::Result<Vec<lsmlab_harness::claims::ClaimSet>> {
    papers().claims()
}

/// The papers' trace families, as `lsmlab gen` and `--trace` dispatch over them.
pub fn trace_families() -> TraceFamilies<'static> {
    static FAMILIES: OnceLock<Vec<&'static dyn TraceFamily>> = OnceLock::new();
    TraceFamilies(FAMILIES.get_or_init(|| papers().trace_families()))
}

/// The ids of the papers' entries of `kind`.
pub fn ids(kind: PaperKind) -> Vec<&'static str> {
    papers().ids(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FAKE, OTHER};
    use lsmlab_harness::config::Overlay;
    use lsmlab_harness::experiment::{DataSpec, RowBuilder};
    use lsmlab_harness::report::write_report;
    use lsmlab_harness::result::ResultFile;
    use lsmlab_harness::scale::Scale;
    use serde_json::Value;
    use std::fs;

    #[test]
    fn the_built_in_claims_parse() {
        let sets = claims().unwrap();
        assert!(sets
            .iter()
            .any(|s| s.paper == "LSM RUM-tree" && s.claims.len() >= 11));
        assert_eq!(sets.len(), claim_sources().len());
    }

    #[test]
    fn the_papers_list_checks_out() {
        // ids unique, every experiment named after its paper and carrying its title, names unique
        papers().check().unwrap();
        // The four papers come first, in the papers' order; a new paper may follow.
        assert!(ids(PaperKind::Paper).starts_with(&["rum", "leaper", "diol", "oep7"]));
        assert!(all().len() >= 17);
        let families: Vec<&str> = trace_families().0.iter().map(|f| f.name()).collect();
        assert!(
            families.starts_with(&["rum", "leaper", "diol", "ycsb"]),
            "{families:?}"
        );
    }

    #[test]
    fn every_paper_id_and_experiment_is_a_make_target_and_nothing_else_is() {
        let papers = papers();
        for p in &papers.0 {
            let names = papers.target(p.id).unwrap();
            let own: Vec<&str> = p.experiments.iter().map(|e| e.name()).collect();
            assert_eq!(names, own, "make {}", p.id);
        }
        for e in all() {
            // An experiment named as its paper (diol, combined, scaling) stands for the paper:
            // `make diol` runs diol, diol-compaction, ... as it always has.
            if !papers.0.iter().any(|p| p.id == e.name()) {
                assert_eq!(papers.target(e.name()).unwrap(), [e.name()]);
            }
        }
        assert!(papers.target("diol").unwrap().len() > 1);
        for bad in ["", "rum-", "RUM", "rum-updates", "test", "Makefile"] {
            assert_eq!(papers.target(bad), None, "{bad:?}");
        }
        // The Makefile hands every other target to `lsmlab list --of` and names no paper.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../Makefile");
        let makefile = std::fs::read_to_string(path).unwrap();
        assert!(
            makefile.contains("\n%: build\n"),
            "the Makefile lost its catch-all rule"
        );
        assert!(makefile.contains("list --of '$@'"));
        for p in &papers.0 {
            assert!(
                !makefile.lines().any(|l| l.starts_with(&format!("{}-%:", p.id))),
                "the Makefile names {} again",
                p.id
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

    #[test]
    fn report_judges_the_papers_claims_per_scale() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results");
        let mut update = crate::testing::sample_result();
        update.experiment = "rum-update".into();
        update.paper = crate::rum::PAPER.into();
        update.rows = ["Eager", "UM", "UM+F"]
            .iter()
            .zip([900.0, 300.0, 100.0])
            .map(|(s, ms)| {
                RowBuilder::new()
                    .str("dataset", "gowalla")
                    .str("strategy", *s)
                    .num("total_ms", ms)
                    .num("flush_ms", ms / 10.0)
                    .build()
            })
            .collect();
        update
            .write_atomic(&ResultFile::path_in(&results, Scale::Tiny, "rum-update"))
            .unwrap();
        let out = dir.path().join("REPORT.md");
        let experiments = all();
        write_report(
            &experiments,
            &claims().unwrap(),
            &results,
            &dir.path().join("plots"),
            Scale::Tiny,
            &out,
        )
        .unwrap();
        let md = fs::read_to_string(&out).unwrap();
        assert!(
            md.contains("## Claims (tiny)") && md.contains("### LSM RUM-tree claims (tiny)"),
            "{md}"
        );
        assert!(md.contains("(results/tiny/claims.json)"), "{md}");
        // UM+F is 9x faster than Eager: inside 3x-9.6x.
        let line = md
            .lines()
            .find(|l| l.contains("| rum-u1 | dataset=gowalla, UM+F vs Eager"))
            .unwrap();
        assert!(line.contains(" 9x |") && line.contains("| reproduced "), "{line}");
        let claims: Value =
            serde_json::from_str(&fs::read_to_string(results.join("tiny/claims.json")).unwrap()).unwrap();
        let entries = claims["entries"].as_array().unwrap();
        let query = entries.iter().find(|e| e["claim"] == "rum-q1").unwrap();
        assert_eq!(query["verdict"], "not-measured", "no rum-query result");
        let u3 = entries.iter().find(|e| e["claim"] == "rum-u3").unwrap();
        assert_eq!(
            (u3["measured"].as_f64(), &u3["verdict"]),
            (Some(3.0), &Value::from("direction-only"))
        );
    }

    #[test]
    fn rum_estimates_grow_with_the_records_of_the_largest_dataset() {
        let rum = find("rum-update").unwrap();
        let mut small = rum.resolve(Scale::Small, &Overlay::default()).unwrap();
        let at_small = rum.memory_estimate(&small, &[]).unwrap().unwrap();
        small.insert("records".into(), serde_json::json!(0));
        let at_paper = rum.memory_estimate(&small, &[]).unwrap().unwrap();
        // A run goes dataset by dataset: paper scale's largest, BerlinMOD, has 56.1 million
        // records against small's 2 million.
        assert!(at_paper.bytes > 10 * at_small.bytes, "{at_small:?} {at_paper:?}");
        assert!(
            at_paper.basis.contains("56,129,943 records (streamed"),
            "{}",
            at_paper.basis
        );
        // On the file device the index's pages leave memory: only the cache and the memory
        // components stay, so the streamed 56M records fit the paper run's 3 GB budget.
        small.insert("device".into(), serde_json::json!("file"));
        let on_file = rum.memory_estimate(&small, &[]).unwrap().unwrap();
        assert!(on_file.bytes < at_paper.bytes / 4, "{on_file:?}");
        assert!(on_file.basis.contains("device=file"), "{}", on_file.basis);
        let paper = rum.resolve(Scale::Paper, &Overlay::default()).unwrap();
        let paper = rum.memory_estimate(&paper, &[]).unwrap().unwrap();
        assert!(paper.bytes < 3_000_000_000, "{paper:?}");
        // ... and above what the whole paper-scale BerlinMOD run measured (VmHWM 1,219,904 KiB,
        // all nine strategies on device=file).
        let mut berlinmod = rum.resolve(Scale::Paper, &Overlay::default()).unwrap();
        berlinmod.insert("datasets".into(), serde_json::json!(["berlinmod"]));
        let berlinmod = rum.memory_estimate(&berlinmod, &[]).unwrap().unwrap();
        assert!(berlinmod.bytes > 1_219_904 * 1024, "{berlinmod:?}");
        let file = DataSpec {
            path: "x.csv".into(),
            format: None,
            columns: None,
            skip_malformed: false,
        };
        assert_eq!(rum.memory_estimate(&small, &[file]).unwrap(), None);
    }
}
