//! A small fake experiment for the runner's own tests.

use std::path::{Path, PathBuf};

use anyhow::bail;
use serde::{Deserialize, Serialize};

use crate::config::{self, Config, KeyHelp};
use crate::experiment::{RowBuilder, RunContext, RunOutput, Scale, TypedExperiment};
use crate::plot;
use crate::report::rows_table;
use crate::result::ResultFile;

/// Pretends to ingest `records` records per strategy; `fail` makes the run fail.
pub(crate) struct Fake {
    pub name: &'static str,
}

pub(crate) const FAKE: Fake = Fake { name: "fake" };
pub(crate) const OTHER: Fake = Fake { name: "other" };

/// The fake's strategies: a choice, as typed configs spell them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum FakeStrategy {
    Eager,
    Validation,
    #[serde(rename = "UM+F")]
    UmF,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FakeConfig {
    records: u64,
    strategies: Vec<FakeStrategy>,
    ratio: f64,
    fail: bool,
}

impl Config for FakeConfig {
    fn help() -> Vec<KeyHelp> {
        vec![
            ("records", "records per strategy"),
            ("strategies", "strategies to run"),
            ("ratio", "fraction of flush time"),
            ("fail", "fail the run"),
        ]
    }

    fn validate(&self) -> anyhow::Result<()> {
        config::check("records", self.records, self.records >= 1, "an integer >= 1")
    }
}

impl TypedExperiment for Fake {
    type Config = FakeConfig;

    fn name(&self) -> &'static str {
        self.name
    }

    fn paper(&self) -> &'static str {
        "Fake paper"
    }

    fn about(&self) -> &'static str {
        "a fake experiment for tests"
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

    fn report(&self, result: &ResultFile) -> String {
        format!(
            "Fake rows:\n\n{}",
            rows_table(&result.rows, &["strategy", "update_s", "flush_s"])
        )
    }
}
