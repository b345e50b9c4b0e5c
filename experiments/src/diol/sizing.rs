//! `diol-sizing`: DIOL's proposed dynamic sizing, measured offline. The delay memtables' size and
//! count are swept against the O3 ratio under the authors' fixed memory budget (the normal
//! memtables, 11 of them, share what the delay memtables leave), and the best setting per ratio is
//! reported for each counted objective.

use lsmlab_engine::series::Layout;
use lsmlab_workloads::ts::TsWorkload;

use super::report;
use super::{base_row, method_notes, run_cell, Setup, Streams, PAPER};
use crate::config::{check, check_items, Config};
use crate::experiment::{Row, RowBuilder, RunContext, RunOutput, Scale, TypedExperiment};

pub(crate) struct DiolSizing;

lsmlab_harness::config! {
    /// `diol-sizing`'s parameters.
    pub struct SizingConfig {
        /// the workload of every cell: A, B, C or recent
        pub workload: String,
        /// delay memtable sizes swept, MiB at paper scale (the paper: 2), scaled with the data
        pub delay_memtable_mb: Vec<f64>,
        /// delay memtable counts swept (the paper: 16 = 1 active + 8 M1 + 7 M2), at least 3
        pub delay_memtables: Vec<usize>,
        #[serde(flatten)]
        /// The settings the experiments of this paper share (flattened: its keys are top-level `--set` keys).
        pub setup: Setup,
    }
}

impl Config for SizingConfig {
    fn validate(&self) -> anyhow::Result<()> {
        check(
            "workload",
            &self.workload,
            TsWorkload::parse(&self.workload).is_some(),
            "A, B, C or recent",
        )?;
        check_items(
            "delay_memtable_mb",
            &self.delay_memtable_mb,
            |m| *m > 0.0 && m.is_finite(),
            "positive sizes",
        )?;
        check_items(
            "delay_memtables",
            &self.delay_memtables,
            |c| *c >= 3,
            "at least 3",
        )?;
        self.setup.validate()
    }
}

const NORMAL_MEMTABLES: u64 = 11;
const OBJECTIVES: [&str; 3] = ["disk_reads", "disk_read_points", "page_writes"];

/// Peak RSS per point for the memory check: an upper bound, rounded up from the slope of peak RSS
/// between 1,000,000 and 3,000,000 points (85 B; re-measure with `/usr/bin/time -v lsmlab run
/// diol-sizing --scale tiny --set points=1000000`, then `--set points=3000000`). A run holds one
/// arrival stream and one workload's operations at a time beside one store's pages; below a
/// million points fixed costs steepen the slope. The measurements are in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
const BYTES_PER_POINT: u64 = 95;

impl TypedExperiment for DiolSizing {
    type Config = SizingConfig;

    /// One file of delays (the `file` delay model), `--format delays` implied.
    fn data_kind(&self) -> crate::experiment::DataKind {
        crate::experiment::DataKind::Delays
    }

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "diol-sizing",
            paper: PAPER,
            about: "DIOL's proposed dynamic sizing: delay memtable size and count against the O3 ratio under a fixed budget, best setting per ratio",
            figures: |result, out_dir| crate::plot::render_specs(report::SIZING_FIGURES, result, out_dir),
            report: report::sizing_report,
        }
    }

    fn defaults(&self, scale: Scale) -> SizingConfig {
        let mut setup = Setup::defaults(scale);
        setup.delay_models = vec!["diol".into()];
        setup.layouts = vec!["iotdb".into(), "diol".into()];
        // The textbook M1 pick: under the authors' exact-zero rule the two normal memtables that
        // never leave M1 grow as the delay memtables shrink, which would confound the sweep.
        setup.diol_m1_picks = vec!["expired-ttl".into()];
        let tiny = scale == Scale::Tiny;
        setup.o3_ratios = if tiny {
            vec![0.1, 0.3]
        } else {
            vec![0.05, 0.1, 0.2, 0.3, 0.4]
        };
        SizingConfig {
            workload: "recent".into(),
            delay_memtable_mb: if tiny {
                vec![0.5, 2.0, 8.0]
            } else {
                vec![0.5, 1.0, 2.0, 4.0, 8.0]
            },
            delay_memtables: if tiny { vec![8, 16] } else { vec![8, 16, 32] },
            setup,
        }
    }

    /// One cell per delay model and out-of-order ratio (the run's loops, model outermost): the
    /// sizes swept in a cell are compared with that cell's iotdb reference only.
    fn cells(&self, cfg: &SizingConfig, data: &[crate::experiment::DataSpec]) -> Vec<crate::cells::Cell> {
        crate::cells::Cell::grid(&cfg.setup.cell_keys(data, true))
    }

    #[allow(clippy::expect_used)] // the workload was validated with the config
    fn run(&self, cfg: &SizingConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let setup = &cfg.setup;
        let mut out = RunOutput {
            notes: setup.ratio_notes(),
            extra_config: setup.derived(),
            ..RunOutput::default()
        };
        let models = setup.delay_models(ctx, &mut out.notes)?;
        let workload = TsWorkload::parse(&cfg.workload).expect("validated");
        let budget = setup.series_config(Layout::Diol).budget_bytes();
        let scale = setup.data_scale() * setup.memory_scale;
        let with_iotdb = setup.layouts().contains(&Layout::Iotdb);
        // The first DIOL M1 pick rule listed (the authors' by default).
        let diol_config = setup
            .variants()
            .into_iter()
            .find(|v| v.layout == Layout::Diol)
            .map(|v| v.config)
            .unwrap_or_else(|| setup.series_config(Layout::Diol));
        out.notes.push(format!(
            "DIOL cells use the M1 pick rule {} (by default the textbook expired-ttl: under the authors' exact-zero \
             rule the first two normal memtables never leave memory and grow as the delay memtables shrink, which \
             would confound the sweep). Workload {}: {}.",
            diol_config.diol.m1_pick.name(),
            workload.name(),
            if workload == TsWorkload::Recent {
                "reads aimed at the newest points, where late points held in (or flushed from) delay memtables matter"
            } else {
                "reads aimed as the authors aimed them"
            }
        ));
        let cells = cfg.delay_memtable_mb.len() * cfg.delay_memtables.len() + with_iotdb as usize;
        ctx.progress
            .set_total(setup.o3_ratios.len() * models.len() * cells);
        let mut streams = Streams::new();
        let mut skipped = Vec::new();
        for (name, model) in &models {
            for &o3 in &setup.o3_ratios {
                let (stream, o3_points) = streams.take(setup, o3, name, model, ctx.seed)?;
                let ops = setup.ops(&stream, workload, ctx.seed)?;
                let mut cell_rows: Vec<Row> = Vec::new();
                let mut iotdb_row: Option<Row> = None;
                if with_iotdb {
                    ctx.progress.begin(format!("o3={o3} {name} iotdb reference"));
                    let m = run_cell(setup.series_config(Layout::Iotdb), setup.page_size, &stream, &ops)?;
                    let row = base_row(workload.name(), o3, name, "iotdb", setup.points, &m, o3_points)
                        .str("kind", "reference")
                        .build();
                    iotdb_row = Some(row.clone());
                    out.rows.push(row);
                }
                for &mb in &cfg.delay_memtable_mb {
                    for &count in &cfg.delay_memtables {
                        ctx.progress
                            .begin(format!("o3={o3} {name} delay {mb} MiB x {count}"));
                        let mut sc = diol_config.clone();
                        let delay_bytes = ((mb * (1u64 << 20) as f64) * scale).round().max(1.0) as u64;
                        let delay_total = delay_bytes * count as u64;
                        if delay_total * 2 > budget {
                            skipped.push(format!("{mb} MiB x {count}"));
                            continue;
                        }
                        sc.diol.delay_bytes = delay_bytes;
                        sc.diol.delay_m1 = count / 2;
                        sc.diol.delay_m2 = count - 1 - count / 2;
                        sc.diol.normal_bytes = (budget - delay_total) / NORMAL_MEMTABLES;
                        let m = run_cell(sc.clone(), setup.page_size, &stream, &ops)?;
                        let row = base_row(workload.name(), o3, name, "diol", setup.points, &m, o3_points)
                            .str("kind", "cell")
                            .num("delay_memtable_mb", mb)
                            .int("delay_memtables", count as u64)
                            .num(
                                "normal_memtable_mb",
                                sc.diol.normal_bytes as f64 / scale / (1u64 << 20) as f64,
                            )
                            .num("delay_memory_share", delay_total as f64 / budget as f64)
                            .build();
                        cell_rows.push(row.clone());
                        out.rows.push(row);
                    }
                }
                for objective in OBJECTIVES {
                    if let Some(best) = best_row(&cell_rows, objective) {
                        let val = |r: &Row| r.get(objective).and_then(|v| v.as_f64());
                        let paper = cell_rows.iter().find(|r| {
                            r.get("delay_memtable_mb").and_then(|v| v.as_f64()) == Some(2.0)
                                && r.get("delay_memtables").and_then(|v| v.as_u64()) == Some(16)
                        });
                        out.rows.push(
                            RowBuilder::new()
                                .str("kind", "best")
                                .str("workload", workload.name())
                                .num("o3_ratio", o3)
                                .str("delay_model", name.as_str())
                                .str("layout", "diol")
                                .str("objective", objective)
                                .opt_num(
                                    "delay_memtable_mb",
                                    best.get("delay_memtable_mb").and_then(|v| v.as_f64()),
                                )
                                .opt_num(
                                    "delay_memtables",
                                    best.get("delay_memtables").and_then(|v| v.as_f64()),
                                )
                                .opt_num("value", val(best))
                                .opt_num("paper_setting_value", paper.and_then(val))
                                .opt_num("iotdb_value", iotdb_row.as_ref().and_then(val))
                                .build(),
                        );
                    }
                }
            }
        }
        if !skipped.is_empty() {
            skipped.dedup();
            out.notes.push(format!(
                "Settings skipped because their delay memory would exceed half the budget: {}.",
                skipped.join(", ")
            ));
        }
        out.notes.push(format!(
            "Every cell keeps DIOL's budget ({budget} bytes here, 384 MiB at paper scale): delay memory = size x count, \
             the 11 normal memtables (1 + 5 + 5) share the rest equally; delay memtables are 1 active, count/2 in M1, the \
             rest in M2. Sizes are given in MiB at paper scale and scaled with the data. Rows: kind = cell (one \
             setting), reference (the iotdb baseline at the same ratio) and best (per ratio and objective, the cell with \
             the smallest value; ties go to the first swept; paper_setting_value = the authors' 2 MiB x 16)."
        ));
        out.notes.extend(method_notes());
        Ok(out)
    }

    fn memory_estimate(
        &self,
        config: &Self::Config,
        _data: &[crate::experiment::DataSpec],
    ) -> Option<crate::experiment::MemoryEstimate> {
        Some(config.setup.memory_estimate(BYTES_PER_POINT))
    }
}

/// The row with the smallest `field` (the first on ties).
fn best_row<'a>(rows: &'a [Row], field: &str) -> Option<&'a Row> {
    rows.iter()
        .filter_map(|r| Some((r, r.get(field)?.as_f64()?)))
        .fold(None, |best: Option<(&Row, f64)>, (r, v)| match best {
            Some((_, bv)) if bv <= v => best,
            _ => Some((r, v)),
        })
        .map(|(r, _)| r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_row_is_the_first_smallest() {
        let r = |v: f64, id: u64| RowBuilder::new().num("disk_reads", v).int("id", id).build();
        let rows = vec![r(5.0, 0), r(3.0, 1), r(3.0, 2), r(4.0, 3)];
        assert_eq!(best_row(&rows, "disk_reads").unwrap()["id"], 1);
        assert!(best_row(&rows, "missing").is_none());
    }
}
