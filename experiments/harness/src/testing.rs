//! A small fake experiment for the runner's own tests.

// Test support: a panic here is a test's failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use anyhow::bail;
use serde::{Deserialize, Serialize};

use crate::config::{self, Config};
use crate::experiment::{Meta, RowBuilder, RunContext, RunOutput, Scale, TypedExperiment};
use crate::plot;
use crate::report::rows_table;
use crate::result::ResultFile;

/// Pretends to ingest `records` records per strategy; `fail` makes the run fail.
pub struct Fake {
    /// The experiment's registry name.
    pub name: &'static str,
}

/// The fake experiment `fake`.
pub const FAKE: Fake = Fake { name: "fake" };
/// A second fake experiment, `other`, for runs of several experiments.
pub const OTHER: Fake = Fake { name: "other" };

/// The fake's strategies: a choice, as typed configs spell them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FakeStrategy {
    /// `Eager`.
    Eager,
    /// `Validation`.
    Validation,
    /// `UM+F`.
    #[serde(rename = "UM+F")]
    UmF,
}

crate::config! {
    /// The fake's config.
    pub struct FakeConfig {
        /// records per strategy
        records: u64,
        /// strategies to run
        strategies: Vec<FakeStrategy>,
        /// fraction of flush time
        ratio: f64,
        /// fail the run
        fail: bool,
    }
}

impl Config for FakeConfig {
    fn validate(&self) -> anyhow::Result<()> {
        config::check("records", self.records, self.records >= 1, "an integer >= 1")
    }
}

impl TypedExperiment for Fake {
    type Config = FakeConfig;

    /// Location records: each --data path one dataset, replacing the generated ones.
    fn data_kind(&self) -> crate::experiment::DataKind {
        crate::experiment::DataKind::Locations
    }

    fn meta(&self) -> Meta {
        Meta {
            name: self.name,
            paper: "Fake paper",
            about: "a fake experiment for tests",
            // `figures` below draws them: it names the files after `self.name`.
            figures: |_, _| Ok(Vec::new()),
            report: fake_report,
        }
    }

    fn defaults(&self, scale: Scale) -> FakeConfig {
        let records = match scale {
            Scale::Tiny => 10,
            Scale::Small => 100,
            Scale::Paper => 1000,
        };
        FakeConfig {
            records,
            strategies: vec![FakeStrategy::Eager, FakeStrategy::UmF],
            ratio: 0.5,
            fail: false,
        }
    }

    fn run(&self, cfg: &FakeConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        if cfg.fail {
            bail!("the fake run failed on purpose");
        }
        ctx.progress.set_total(cfg.strategies.len());
        let mut out = RunOutput::default();
        for (i, strategy) in cfg.strategies.iter().enumerate() {
            let strategy = serde_json::to_value(strategy)?
                .as_str()
                .unwrap_or_default()
                .to_string();
            ctx.progress.begin(&strategy);
            let total = cfg.records as f64 * (i + 1) as f64 + ctx.seed as f64 / 1000.0;
            out.rows.push(
                RowBuilder::new()
                    .str("strategy", strategy)
                    .int("records", cfg.records)
                    .num("update_s", total * (1.0 - cfg.ratio))
                    .num("flush_s", total * cfg.ratio)
                    .build(),
            );
        }
        out.notes.push(format!("{} data files", ctx.data.len()));
        out.extra_config
            .insert("doubled".into(), serde_json::json!(cfg.records * 2));
        Ok(out)
    }

    fn figures(&self, result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        let strategies = result.distinct("strategy");
        let column = |key: &str| -> Vec<f64> {
            result
                .rows
                .iter()
                .map(|r| r[key].as_f64().unwrap_or(0.0))
                .collect()
        };
        let series = vec![
            ("update".to_string(), column("update_s")),
            ("flush".to_string(), column("flush_s")),
        ];
        plot::stacked_bars(
            &out_dir.join(format!("{}-time", self.name)),
            &plot::Labels {
                title: "Time per strategy",
                x: "strategy",
                y: "seconds",
                note: None,
            },
            &strategies,
            &series,
        )
    }
}

fn fake_report(result: &ResultFile) -> String {
    format!(
        "Fake rows:\n\n{}",
        rows_table(&result.rows, &["strategy", "update_s", "flush_s"])
    )
}

/// A small result file of the fake experiment (one row, one note).
pub fn sample_result() -> ResultFile {
    ResultFile {
        schema: crate::result::SCHEMA.to_string(),
        experiment: "fake".to_string(),
        paper: "Fake paper".to_string(),
        scale: Scale::Tiny,
        seed: 42,
        config: serde_json::json!({"records": 10, "strategies": ["Eager"]})
            .as_object()
            .unwrap()
            .clone(),
        machine: crate::result::Machine {
            os: "Linux".into(),
            cpu: "cpu".into(),
            cores: 2,
            memory_bytes: 1 << 30,
        },
        git: crate::result::GitInfo::unknown(),
        started_at: crate::result::rfc3339_utc(0),
        duration_s: 1.5,
        rows: vec![RowBuilder::new()
            .str("strategy", "Eager")
            .num("update_ms", 2.5)
            .int("flushes", 3u64)
            .build()],
        notes: vec!["a note".to_string()],
        provenance: None,
        cells: None,
    }
}

/// The checks every helper's output must pass: both files exist and are non-empty, the PNG is a
/// PNG, the SVG has text.
pub fn assert_rendered(paths: &[PathBuf]) {
    assert_eq!(paths.len(), 2, "{paths:?}");
    let svg = std::fs::read_to_string(&paths[0]).unwrap();
    assert!(paths[0].extension().unwrap() == "svg");
    assert!(svg.contains("<text"), "SVG has no text: {}", paths[0].display());
    let png = std::fs::read(&paths[1]).unwrap();
    assert!(paths[1].extension().unwrap() == "png");
    assert!(png.len() > 1000, "PNG too small: {}", png.len());
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

/// The texts an SVG draws, trimmed, in order.
pub fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}
