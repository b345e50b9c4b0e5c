//! A small fake experiment for the runner's own tests.

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::experiment::{Experiment, ParamSpec, Params, RowBuilder, RunContext, RunOutput, Scale};
use crate::plot;
use crate::report::rows_table;
use crate::result::ResultFile;

/// Pretends to ingest `records` records per strategy; `fail` makes the run fail.
pub(crate) struct Fake {
    pub name: &'static str,
}

pub(crate) const FAKE: Fake = Fake { name: "fake" };
pub(crate) const OTHER: Fake = Fake { name: "other" };

impl Experiment for Fake {
    fn name(&self) -> &'static str {
        self.name
    }

    fn paper(&self) -> &'static str {
        "Fake paper"
    }

    fn about(&self) -> &'static str {
        "a fake experiment for tests"
    }

    fn params(&self, scale: Scale) -> Vec<ParamSpec> {
        let records = match scale {
            Scale::Tiny => 10,
            Scale::Small => 100,
            Scale::Paper => 1000,
        };
        vec![
            ParamSpec::int("records", records, "records per strategy"),
            ParamSpec::list("strategies", &["Eager", "UM+F"], "strategies to run"),
            ParamSpec::float("ratio", 0.5, "fraction of flush time"),
            ParamSpec::bool("fail", false, "fail the run"),
        ]
    }

    fn validate(&self, params: &Params) -> anyhow::Result<()> {
        params.check("records", params.int("records") >= 1, "an integer >= 1")?;
        params.check_list_choices("strategies", &["Eager", "Validation", "UM+F"])
    }

    fn run(&self, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let p = ctx.params;
        if p.bool("fail") {
            bail!("the fake run failed on purpose");
        }
        let records = p.u64("records");
        ctx.progress.set_total(p.list("strategies").len());
        let mut out = RunOutput::default();
        for (i, strategy) in p.list("strategies").iter().enumerate() {
            ctx.progress.begin(strategy);
            let total = records as f64 * (i + 1) as f64 + ctx.seed as f64 / 1000.0;
            out.rows.push(
                RowBuilder::new()
                    .str("strategy", strategy)
                    .int("records", records)
                    .num("update_s", total * (1.0 - p.float("ratio")))
                    .num("flush_s", total * p.float("ratio"))
                    .build(),
            );
        }
        out.notes.push(format!("{} data files", ctx.data.len()));
        out.extra_config
            .insert("derived".into(), serde_json::json!(records * 2));
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
            "Time per strategy",
            "seconds",
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
