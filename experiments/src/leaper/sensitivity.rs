//! `leaper-sensitivity`: Leaper against Incremental Warmup as one knob moves (the paper's §7.3.2
//! A-D: Figures 12, 13 and 14): zipf skew, the share of range queries among the reads (read/write
//! fixed), the cache / data ratio and the key-range size. Each cell is a `leaper-online` run of one
//! workload (its own warm-up, calibration, training and measured runs) with the two policies.

use lsmlab_engine::kvstore::WarmUpKind;

use super::learned::LeaperSettings;
use super::beside::Beside;
use super::online::{run_cells, summary_row, Cell, WorkloadRuns};
use super::report::{self as lr, BASELINE, LEAPER};
use super::{check_fractions, KvSetup, Workload, PAPER};
use crate::config::{check_items, Config};
use crate::experiment::{Row, RowBuilder, RunContext, RunOutput, Scale, TypedExperiment};
use crate::plot::{render_specs};

pub(crate) struct LeaperSensitivity;

/// At `--scale small` each cell holds leaper-online's records and warm-up divided by this.
pub const SMALL_CELL_SHRINK: u64 = 4;

lsmlab_harness::config! {
    /// `leaper-sensitivity`'s parameters.
    pub struct SensitivityConfig {
        /// the workload every cell starts from: synthetic (the paper's sensitivity runs), e-commerce or
        /// messaging
        pub workload: Workload,
        /// zipf constants swept, in [0, 1) (the paper: 0 to 1)
        pub zipfs: Vec<f64>,
        /// shares of range queries among the reads, read/write fixed (the paper: 0 to 100%)
        pub range_shares: Vec<f64>,
        /// cache / data ratios swept (the paper: 1, 2, 4, 8 GB of 10 GB)
        pub cache_ratios: Vec<f64>,
        /// key-range sizes swept, in keys (the paper: 1 to 10^5)
        pub range_sizes: Vec<u64>,
        #[serde(flatten)]
        /// The store, clock and run length (flattened: its keys are top-level `--set` keys).
        pub setup: KvSetup,
        #[serde(flatten)]
        /// The Leaper policy's settings (flattened: its keys are top-level `--set` keys).
        pub leaper: LeaperSettings,
        /// the policies run at every grid point (default incremental-warmup, leaper: the gain rows set the
        /// second beside the first)
        #[serde(default = "sensitivity_policies_default")]
        pub policies: Vec<WarmUpKind>,
        /// how the run splits into cells for --shard and --resume: whole (one cell, its grid points side by
        /// side on two workers) or policy (a cell per grid point and policy, each repeating its point's
        /// training pass: about 1 to 1.6 hours a cell at paper scale on 2 cores, against 2.5 to 3 hours a
        /// point); default policy at paper scale, whole below
        #[serde(default)]
        pub cells_by: SensitivityCells,
    }
}

/// The policies of every grid point: Figure 12-14's pair.
pub fn sensitivity_policies_default() -> Vec<WarmUpKind> {
    vec![WarmUpKind::IncrementalWarmup, WarmUpKind::Leaper]
}

/// How `leaper-sensitivity` splits into cells (`cells_by`). Counted figures are the same either
/// way: every training pass and policy run draws from the run's seed and builds its own store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SensitivityCells {
    /// One cell (results written before the key existed ran so). A grid point equal to another
    /// runs once.
    #[default]
    Whole,
    /// A cell per grid point and policy; the gain and best rows, which set policies and points
    /// side by side, are computed once the grid is complete. A grid point equal to another runs
    /// in its own cells.
    Policy,
}

/// The lists a grid point is picked from, in the run's order.
const SWEEP_KEYS: [&str; 4] = ["zipfs", "range_shares", "cache_ratios", "range_sizes"];

impl Config for SensitivityConfig {
    fn validate(&self) -> anyhow::Result<()> {
        check_items(
            "zipfs",
            &self.zipfs,
            |z| (0.0..1.0).contains(z),
            "zipf constants in [0, 1)",
        )?;
        check_fractions("range_shares", &self.range_shares)?;
        check_items(
            "cache_ratios",
            &self.cache_ratios,
            |c| *c > 0.0 && *c <= 1.0,
            "fractions in (0, 1]",
        )?;
        check_items("range_sizes", &self.range_sizes, |s| *s >= 1, "at least 1 key")?;
        crate::config::check(
            "policies",
            "(empty)",
            !self.policies.is_empty(),
            "at least one policy",
        )?;
        self.setup.validate()?;
        self.leaper.validate()
    }
}

/// One cell of a sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Knob {
    Zipf(f64),
    RangeShare(f64),
    CacheRatio(f64),
    RangeSize(u64),
}

impl Knob {
    fn sweep(self) -> &'static str {
        match self {
            Knob::Zipf(_) => "zipf",
            Knob::RangeShare(_) => "range_share",
            Knob::CacheRatio(_) => "cache_ratio",
            Knob::RangeSize(_) => "range_size",
        }
    }

    fn value(self) -> f64 {
        match self {
            Knob::Zipf(v) | Knob::RangeShare(v) | Knob::CacheRatio(v) => v,
            Knob::RangeSize(v) => v as f64,
        }
    }
}

/// The gain row of a grid point from its summary rows: Leaper's QPS speedup in compaction
/// windows, its hit-ratio gain (whole run, in points of ratio) and its cut of misses in windows,
/// against Incremental Warmup; `None` without both policies' rows.
fn gain_row(point: &[&Row]) -> Option<Row> {
    let text = |r: &Row, k: &str| r.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let num = |r: &Row, k: &str| r.get(k).and_then(|v| v.as_f64());
    let find = |policy: &str| point.iter().copied().find(|r| text(r, "policy").as_deref() == Some(policy));
    let (l, b) = (find(LEAPER)?, find(BASELINE)?);
    // A run without time in the windows has no QPS there (the summary row writes 0).
    let in_windows = |r: &Row| num(r, "qps_in_windows").filter(|_| num(r, "window_s").is_some_and(|s| s > 0.0));
    let speedup = match (in_windows(l), in_windows(b)) {
        (Some(x), Some(y)) if y > 0.0 => Some(x / y),
        _ => None,
    };
    let hit = |r: &Row| num(r, "hit_ratio").unwrap_or(0.0);
    // Per operation: the faster policy serves more operations in the same virtual time.
    let (lm, bm) = (num(l, "misses_per_op_in_windows"), num(b, "misses_per_op_in_windows"));
    Some(
        RowBuilder::new()
            .str("kind", "gain")
            .str("sweep", &text(l, "sweep")?)
            .num("value", num(l, "value")?)
            .str("workload", &text(l, "workload")?)
            .opt_num("qps_speedup", speedup)
            .num("hit_ratio_gain", hit(l) - hit(b))
            .opt_num(
                "miss_reduction_in_windows",
                lm.zip(bm.filter(|b| *b > 0.0)).map(|(l, b)| 1.0 - l / b),
            )
            .build(),
    )
}

/// Appends the gain and best rows its summary rows give to `rows` when it has none: a gain row per
/// grid point (in the order the points first appear), then per sweep the value with the largest
/// QPS speedup and the largest hit-ratio gain. A run in one cell adds them itself (under
/// `--repeat` per repetition, then averaged with an interval); a run by policy leaves them to the
/// end of the grid, where under `--repeat` the summary rows are the repetitions' means, so a gain
/// is the ratio of mean figures (no interval of its own). Called again it changes nothing.
fn complete(rows: &mut Vec<Row>) {
    let kind = |r: &Row| r.get("kind").and_then(|v| v.as_str()).map(str::to_string);
    if rows.iter().any(|r| matches!(kind(r).as_deref(), Some("gain" | "best"))) {
        return;
    }
    let key = |r: &Row| {
        let sweep = r.get("sweep").and_then(|v| v.as_str()).unwrap_or("").to_string();
        let value = r.get("value").and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
        (sweep, value.to_bits())
    };
    let mut points: Vec<((String, u64), Vec<&Row>)> = Vec::new();
    for row in rows.iter().filter(|r| kind(r).as_deref() == Some("summary")) {
        let k = key(row);
        match points.iter_mut().find(|(p, _)| *p == k) {
            Some((_, members)) => members.push(row),
            None => points.push((k, vec![row])),
        }
    }
    let gains: Vec<Row> = points.iter().filter_map(|(_, members)| gain_row(members)).collect();
    for sweep in ["zipf", "range_share", "cache_ratio", "range_size"] {
        let mine: Vec<Row> = gains
            .iter()
            .filter(|g| g.get("sweep").and_then(|v| v.as_str()) == Some(sweep))
            .cloned()
            .collect();
        if mine.is_empty() {
            continue;
        }
        rows.push(
            RowBuilder::new()
                .str("kind", "best")
                .str("sweep", sweep)
                .opt_num("best_qps_gain_at", best_at(&mine, "qps_speedup"))
                .opt_num("best_hit_gain_at", best_at(&mine, "hit_ratio_gain"))
                .build(),
        );
    }
    rows.extend(gains);
}

/// The cells of `cells_by = policy`: a cell per grid point and policy, which empties the other
/// sweeps' lists.
fn policy_cells(cfg: &SensitivityConfig) -> Vec<crate::cells::Cell> {
    let lens = [
        cfg.zipfs.len(),
        cfg.range_shares.len(),
        cfg.cache_ratios.len(),
        cfg.range_sizes.len(),
    ];
    let mut cells = Vec::new();
    for (k, (&key, &len)) in SWEEP_KEYS.iter().zip(&lens).enumerate() {
        for i in 0..len {
            for p in 0..cfg.policies.len() {
                let mut cell = crate::cells::Cell {
                    picks: vec![(key.to_string(), i), ("policies".to_string(), p)],
                    sets: Vec::new(),
                };
                for (j, other) in SWEEP_KEYS.iter().enumerate() {
                    if j != k {
                        cell = cell.set(other, serde_json::json!([]));
                    }
                }
                cells.push(cell);
            }
        }
    }
    cells
}

/// The distinct cells of `cells` (indices of their first occurrences) and, for each cell, the
/// position of its distinct cell among them. Two cells are the same when everything that makes
/// their runs is (workload, setup, Leaper settings, policies, cache / data ratio, op stream spec).
fn distinct_cells(cells: &[Cell]) -> (Vec<usize>, Vec<usize>) {
    let same = |a: &Cell, b: &Cell| {
        a.workload == b.workload
            && a.setup == b.setup
            && a.settings == b.settings
            && a.policies == b.policies
            && a.cache_ratio.to_bits() == b.cache_ratio.to_bits()
            && a.spec == b.spec
            && a.peer == b.peer
    };
    let mut firsts: Vec<usize> = Vec::new();
    let of = cells
        .iter()
        .enumerate()
        .map(|(i, c)| match firsts.iter().position(|&f| same(&cells[f], c)) {
            Some(p) => p,
            None => {
                firsts.push(i);
                firsts.len() - 1
            }
        })
        .collect();
    (firsts, of)
}

/// The swept value where `field` is largest among the sweep's gain rows (the first on ties).
fn best_at(gains: &[Row], field: &str) -> Option<f64> {
    gains
        .iter()
        .filter_map(|r| Some((r.get("value")?.as_f64()?, r.get(field)?.as_f64()?)))
        .fold(None, |best: Option<(f64, f64)>, (v, g)| match best {
            Some((_, bg)) if bg >= g => best,
            _ => Some((v, g)),
        })
        .map(|(v, _)| v)
}

impl TypedExperiment for LeaperSensitivity {
    type Config = SensitivityConfig;

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "leaper-sensitivity",
            paper: PAPER,
            about: "Leaper's sensitivity: gain over incremental warm-up against zipf skew, range-query share, cache/data ratio and key-range size",
            figures: |result, out_dir| render_specs(lr::SENSITIVITY_FIGURES, result, out_dir),
            report: lr::sensitivity_report,
        }
    }

    fn memory_estimate(
        &self,
        config: &SensitivityConfig,
        _data: &[crate::experiment::DataSpec],
    ) -> Option<crate::experiment::MemoryEstimate> {
        Some(super::memory_estimate(
            &config.setup,
            super::SENSITIVITY_BYTES_PER_RECORD,
            super::SENSITIVITY_BYTES_PER_WARMUP_OP,
            config.leaper.max_training_rows,
            super::Training::BesideStore,
            "leaper-sensitivity, per cell",
        ))
    }

    /// One cell (`cells_by = whole`), or at paper scale, where a grid point takes 2.5 to 3 hours
    /// on 2 cores, a cell per grid point and policy (`cells_by = policy`, [`policy_cells`]).
    fn cells(&self, cfg: &SensitivityConfig, _data: &[crate::experiment::DataSpec]) -> Vec<crate::cells::Cell> {
        match cfg.cells_by {
            SensitivityCells::Whole => vec![crate::cells::Cell::whole()],
            SensitivityCells::Policy => policy_cells(cfg),
        }
    }

    /// The gain and best rows, from the summary rows of every grid point, where the run's cells
    /// left them out (`cells_by = policy`, [`complete`]).
    fn complete_rows(&self, _cfg: &SensitivityConfig, rows: &mut Vec<Row>) -> anyhow::Result<()> {
        complete(rows);
        Ok(())
    }

    fn defaults(&self, scale: Scale) -> SensitivityConfig {
        let mut setup = KvSetup::defaults(scale);
        if scale == Scale::Small {
            // 21 cells of two policies each: a quarter of leaper-online's data (and warm-up) per
            // cell keeps `make leaper` within its budget; every ratio (cache / data, memtable /
            // data, background operations per run, intervals per run) is kept, only the record
            // count shrinks.
            setup.records /= SMALL_CELL_SHRINK;
            setup.warmup_ops /= SMALL_CELL_SHRINK;
        }
        // The paper's grids; tiny (a smoke test) keeps a value or two the claims name per sweep.
        let tiny = scale == Scale::Tiny;
        SensitivityConfig {
            workload: Workload::Synthetic,
            zipfs: if tiny {
                vec![0.0, 0.99]
            } else {
                vec![0.0, 0.3, 0.5, 0.7, 0.9, 0.99]
            },
            range_shares: if tiny {
                vec![0.0, 0.2]
            } else {
                vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
            },
            cache_ratios: if tiny {
                vec![0.1, 0.3]
            } else {
                vec![0.1, 0.2, 0.4, 0.8]
            },
            // Figure 12 sweeps 1 to 10^5 keys of 50 million; a range of one key makes a model row per
            // key and slot, which the smaller scales cannot afford to train.
            range_sizes: match scale {
                // 50 ranges over the cell's 5,000 records
                Scale::Tiny => vec![100],
                // 1,000, 100 and 10 ranges over the cell's 50,000 records.
                Scale::Small => vec![50, 500, 5000],
                Scale::Paper => vec![1, 10, 100, 1000, 10000, 100000],
            },
            setup,
            leaper: LeaperSettings::defaults(scale),
            policies: sensitivity_policies_default(),
            cells_by: if scale == Scale::Paper {
                SensitivityCells::Policy
            } else {
                SensitivityCells::Whole
            },
        }
    }

    fn run(&self, cfg: &SensitivityConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let mut knobs: Vec<Knob> = cfg.zipfs.iter().map(|&z| Knob::Zipf(z)).collect();
        knobs.extend(cfg.range_shares.iter().map(|&s| Knob::RangeShare(s)));
        knobs.extend(cfg.cache_ratios.iter().map(|&c| Knob::CacheRatio(c)));
        knobs.extend(cfg.range_sizes.iter().map(|&s| Knob::RangeSize(s)));
        ctx.progress.set_total(knobs.len() * (cfg.policies.len() + 2));
        let policies = &cfg.policies;
        let mut out = RunOutput {
            notes: cfg.setup.notes(),
            ..RunOutput::default()
        };
        out.notes.extend(super::learned::notes(&cfg.leaper));
        let cells = knobs
            .iter()
            .map(|&knob| {
                let mut settings = cfg.leaper.clone();
                let mut cache_ratio = cfg.setup.cache_ratio;
                match knob {
                    Knob::RangeSize(s) => settings.range_size = s,
                    Knob::CacheRatio(c) => cache_ratio = c,
                    _ => {}
                }
                let spec_for = move |spec: lsmlab_workloads::kv::KvWorkload| -> anyhow::Result<_> {
                    Ok(match knob {
                        Knob::Zipf(z) => spec.with_zipf(z)?,
                        Knob::RangeShare(s) => spec.with_range_fraction_of_reads(s)?,
                        _ => spec,
                    })
                };
                let label = format!("{}={}", knob.sweep(), knob.value());
                Cell::new(
                    &cfg.setup,
                    &settings,
                    cfg.workload,
                    policies,
                    cache_ratio,
                    &spec_for,
                    &label,
                    false,
                )
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        // A knob at the workload's own value (zipf 0.5 of synthetic, say) makes the same cell as
        // another knob: each distinct cell runs once and answers for all of them (the runs are
        // deterministic, so the rows are those of running it again).
        let (unique, of_knob) = distinct_cells(&cells);
        let runnable: Vec<Cell> = unique.iter().map(|&i| cells[i].clone()).collect();
        let outputs = run_cells(&runnable, ctx, &mut out.notes)?;
        for ((&knob, cell), &u) in knobs.iter().zip(&cells).zip(&of_knob) {
            let label = &cell.label;
            let w = match &outputs[u] {
                Ok(o) => &o.runs,
                // A cell whose warm-up cannot train a classifier (e.g. one key range, accessed in
                // every slot) is reported, not fatal: the other cells still answer.
                Err(e) if format!("{e:#}").contains("cannot train") => {
                    out.notes.push(format!("{label}: not measured: {e:#}."));
                    continue;
                }
                Err(e) => return Err(anyhow::anyhow!("{label}: {e:#}")),
            };
            let w: &WorkloadRuns = w;
            for run in &w.runs {
                let mut row = summary_row(w, run);
                Beside::of_runs(w, run, cfg.setup.spike_factor).write(&mut row);
                row.insert("sweep".into(), knob.sweep().into());
                row.insert(
                    "value".into(),
                    serde_json::Number::from_f64(knob.value()).map_or(serde_json::Value::Null, Into::into),
                );
                out.rows.push(row);
            }
            out.notes.push(format!(
                "{label}: interval {:.3} ms; background operations per run: {}.",
                w.interval_s * 1e3,
                w.runs
                    .iter()
                    .map(|r| format!("{} {}", r.policy.name(), r.ratios.background_ops))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out.notes.push(format!(
            "Every grid point starts from {} with one knob moved (the others at their defaults) and runs each policy \
             (by default {BASELINE} and {LEAPER}) on identical op streams. Rows: kind = summary (as leaper-online's, with sweep and value), gain \
             (qps_speedup = leaper's QPS in compaction windows / {BASELINE}'s, hit_ratio_gain = difference of whole-run \
             hit ratios, miss_reduction_in_windows = 1 - leaper's misses per operation in windows / {BASELINE}'s) and best (the swept \
             value with the largest speedup and the largest hit-ratio gain), both computed from the summary rows (with \
             cells_by = policy once the grid is complete, under --repeat from the repetitions' mean rows). A range_size cell fixes the key-range size \
             instead of Algorithm 1's choice. Range-query shares keep the workload's read/write ratio. Each cell holds \
             {} records and warms up for {} operations (the default at small is leaper-online's / {SMALL_CELL_SHRINK}, \
             to keep the sweep's run time in its budget): only the size shrinks, the ratios in the first note (cache / \
             data, memtable / data, background operations and intervals per run) are leaper-online's. Cells run on up \
             to two worker threads; counted and virtual figures do not depend on it.",
            cfg.workload, cfg.setup.records, cfg.setup.warmup_ops
        ));
        if cfg.cells_by == SensitivityCells::Whole {
            complete(&mut out.rows);
        } else {
            out.notes.push(
                "cells_by = policy: each grid point's policies ran in cells of their own, each after the point's \
                 training pass (the same pass in each: it draws from the run's seed). The gain and best rows set \
                 policies and points side by side, so they are computed from the summary rows once every cell has \
                 run (by the run's last cell, or by lsmlab merge); a shard's own result lacks them."
                    .to_string(),
            );
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_cells_run_once() {
        let cfg = LeaperSensitivity.defaults(Scale::Tiny);
        let cell = |zipf: f64, cache: f64| {
            Cell::new(
                &cfg.setup,
                &cfg.leaper,
                Workload::Synthetic,
                &[WarmUpKind::IncrementalWarmup, WarmUpKind::Leaper],
                cache,
                &move |spec: lsmlab_workloads::kv::KvWorkload| Ok(spec.with_zipf(zipf)?),
                "x",
                false,
            )
            .unwrap()
        };
        // synthetic's own zipf is 0.5 and its cache / data 0.3
        let cells = vec![
            cell(0.0, 0.3),
            cell(0.5, 0.3),
            cell(0.5, 0.1),
            cell(0.5, 0.3),
            cell(0.0, 0.3),
        ];
        assert_eq!(distinct_cells(&cells), (vec![0, 1, 2], vec![0, 1, 2, 1, 0]));
    }

    #[test]
    fn by_policy_a_cell_runs_one_policy_at_one_grid_point() {
        let cfg = LeaperSensitivity.defaults(Scale::Paper);
        assert_eq!(cfg.cells_by, SensitivityCells::Policy);
        assert_eq!(LeaperSensitivity.defaults(Scale::Small).cells_by, SensitivityCells::Whole);
        let cells = LeaperSensitivity.cells(&cfg, &[]);
        assert_eq!(cells.len(), (6 + 6 + 4 + 6) * 2);
        let map = crate::config::to_map(&cfg).unwrap();
        for cell in &cells {
            let c: SensitivityConfig = crate::config::from_map(&cell.narrow(&map).unwrap()).unwrap();
            let points = c.zipfs.len() + c.range_shares.len() + c.cache_ratios.len() + c.range_sizes.len();
            assert_eq!((points, c.policies.len()), (1, 1), "{}", cell.label(&map));
        }
        assert_eq!(cells[3].label(&map), "zipfs=0.3 policies=leaper");
    }

    #[test]
    fn gains_come_from_the_summary_rows_of_each_point() {
        let summary = |policy: &str, value: f64, qps_w: f64, window_s: f64, hit: f64, misses: f64| {
            RowBuilder::new()
                .str("kind", "summary")
                .str("workload", "synthetic")
                .str("policy", policy)
                .str("sweep", "zipf")
                .num("value", value)
                .num("qps_in_windows", qps_w)
                .num("window_s", window_s)
                .num("hit_ratio", hit)
                .num("misses_per_op_in_windows", misses)
                .build()
        };
        let mut rows = vec![
            summary(BASELINE, 0.0, 100.0, 1.0, 0.5, 0.2),
            summary(LEAPER, 0.0, 150.0, 1.0, 0.6, 0.1),
            summary(LEAPER, 0.9, 0.0, 0.0, 0.9, 0.0),
            summary(BASELINE, 0.9, 0.0, 0.0, 0.8, 0.0),
            // A point with one policy only has no gain row.
            summary(LEAPER, 0.99, 10.0, 1.0, 0.9, 0.1),
        ];
        complete(&mut rows);
        let kinds: Vec<&str> = rows.iter().map(|r| r["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["summary"; 5].into_iter().chain(["best", "gain", "gain"]).collect::<Vec<_>>());
        let (best, g0, g9) = (&rows[5], &rows[6], &rows[7]);
        assert_eq!(g0["qps_speedup"], 1.5);
        assert!((g0["hit_ratio_gain"].as_f64().unwrap() - 0.1).abs() < 1e-12);
        assert!((g0["miss_reduction_in_windows"].as_f64().unwrap() - 0.5).abs() < 1e-12);
        // No time in the windows: no speedup and no cut of misses there.
        assert!(g9.get("qps_speedup").is_none() && g9.get("miss_reduction_in_windows").is_none());
        assert_eq!(best["best_qps_gain_at"], 0.0);
        assert_eq!(best["best_hit_gain_at"], 0.0);
        let once = rows.clone();
        complete(&mut rows);
        assert_eq!(rows, once, "idempotent");
    }

    #[test]
    fn the_best_value_is_the_first_largest_gain() {
        let g = |v: f64, s: f64| RowBuilder::new().num("value", v).num("qps_speedup", s).build();
        let rows = vec![g(0.0, 1.0), g(0.2, 1.5), g(0.4, 1.5), g(0.6, 1.2)];
        assert_eq!(best_at(&rows, "qps_speedup"), Some(0.2));
        assert_eq!(best_at(&rows, "missing"), None);
    }
}
