//! `leaper-model`: the Leaper model offline (the paper's §7.2: Figures 6 and 8, Table 3). Per
//! workload, a store runs the workload for `days` days on the virtual clock while every access is
//! logged; the first `days - 1` days train the multi-step models and the last one tests them (the
//! paper: three days of e-commerce to train, the fourth to test), against the "accessed in the last
//! slot" baseline. Also the feature-group ablation (R, R/W, R/W/T, R/W/T/P), the importance of each
//! feature group, Algorithm 1's key-range sizes, training time, and inference time per compaction.

use std::time::Instant;

use anyhow::Context;
use lsmlab_engine::kvstore::WarmUpKind;
use lsmlab_engine::leaper::FeatureRow;
use lsmlab_engine::leaper::{ablation, features_at, FeatureGroup, Metrics};

use super::driver::{calibrate_interval_s, extend_warm_up, open_store, warm_up, Driver};
use super::learned::{self, AccessLog, LeaperSettings};
use super::online::{day_ops, MIN_TRAINING_SLOTS};
use super::report as lr;
use super::{check_workloads, KvSetup, Workload, PAPER};
use crate::config::{check, Config, KeyHelp};
use crate::experiment::{RowBuilder, RunContext, RunOutput, Scale, TypedExperiment};

pub(crate) struct LeaperModelExperiment;

/// The paper's Table 3: importance of each feature group, %.
pub const PAPER_IMPORTANCE: [(&str, f64); 4] = [
    ("read", 35.61),
    ("write", 23.53),
    ("time", 9.88),
    ("precursor", 30.98),
];

/// The paper's Table 5 (storage): the LightGBM model object per workload, in KB.
pub const PAPER_MODEL_KB: [(&str, f64); 3] = [("synthetic", 3.2), ("e-commerce", 16.3), ("messaging", 8.9)];

lsmlab_harness::config! {
    /// `leaper-model`'s parameters.
    pub struct ModelConfig {
        /// workloads to run: e-commerce, messaging, synthetic
        pub workloads: Vec<Workload>,
        /// days of the logged run (a day = warmup_ops / 2 operations); the last is held out to test (the
        /// paper: 3 + 1)
        pub days: u64,
        #[serde(flatten)]
        /// The store, clock and run length (flattened: its keys are top-level `--set` keys).
        pub setup: KvSetup,
        #[serde(flatten)]
        /// The Leaper policy's settings (flattened: its keys are top-level `--set` keys).
        pub leaper: LeaperSettings,
    }
}

impl Config for ModelConfig {
    fn adjust_help(help: &mut Vec<KeyHelp>) {
        help.retain(|(key, _)| *key != "test_fraction");
        help.push(("test_fraction", "ignored here: the held-out share is 1 / days"));
    }

    fn validate(&self) -> anyhow::Result<()> {
        check_workloads(&self.workloads)?;
        check("days", self.days, self.days >= 2, "at least 2 days")?;
        self.setup.validate()?;
        self.leaper.validate()
    }
}

fn group_name(g: FeatureGroup) -> &'static str {
    match g.letter() {
        "R" => "read",
        "W" => "write",
        "T" => "time",
        _ => "precursor",
    }
}

fn metric_fields(row: RowBuilder, m: &Metrics) -> RowBuilder {
    row.num("precision", m.precision)
        .num("recall", m.recall)
        .opt_num("auc", m.auc)
        .int("tp", m.tp)
        .int("fp", m.fp)
        .int("fn", m.fn_)
        .int("tn", m.tn)
}

impl TypedExperiment for LeaperModelExperiment {
    type Config = ModelConfig;

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "leaper-model",
            paper: PAPER,
            about: "Leaper's model offline: precision, recall, AUC, training and inference time against the last-slot baseline; feature ablation and importance",
            figures: lr::model_figures,
            report: lr::model_report,
        }
    }

    fn memory_estimate(
        &self,
        config: &ModelConfig,
        _data: &[crate::experiment::DataSpec],
    ) -> Option<crate::experiment::MemoryEstimate> {
        // the logged run spans `days` days of warmup_ops / 2 operations
        let setup = KvSetup {
            warmup_ops: config
                .setup
                .warmup_ops
                .max(config.days.saturating_mul(config.setup.warmup_ops) / 2),
            ..config.setup.clone()
        };
        Some(super::memory_estimate(
            &setup,
            super::MODEL_BYTES_PER_RECORD,
            super::MODEL_BYTES_PER_WARMUP_OP,
            config.leaper.max_training_rows,
            super::Training::AfterStore,
            "leaper-model",
        ))
    }

    fn defaults(&self, scale: Scale) -> ModelConfig {
        ModelConfig {
            workloads: Workload::ALL.to_vec(),
            days: 4,
            setup: KvSetup::defaults(scale),
            leaper: LeaperSettings::defaults(scale),
        }
    }

    /// One cell per workload: each trains and measures its own model on its own store and stream,
    /// nothing is computed across workloads (Leaper §7.2, Figures 6 and 8, Table 3 per workload).
    /// With `--trace` the traces' workloads replace the config's: one whole cell.
    fn cells(&self, cfg: &ModelConfig, data: &[crate::experiment::DataSpec]) -> Vec<crate::cells::Cell> {
        if !crate::trace::trace_paths(data).is_empty() {
            return vec![crate::cells::Cell::whole()];
        }
        crate::cells::Cell::grid(&[("workloads", cfg.workloads.len())])
    }

    #[allow(clippy::expect_used)] // LRU is a baseline policy by definition
    fn run(&self, cfg: &ModelConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        // Replayed traces (`--trace`) replace the generated streams: the run's workloads become the
        // traces'.
        let traces = crate::trace::kv_traces(ctx.data, &|w| cfg.setup.workload_spec(w, day_ops(&cfg.setup)))?;
        let mut replayed;
        let cfg = if traces.is_empty() {
            cfg
        } else {
            replayed = cfg.clone();
            replayed.workloads = traces.iter().map(|t| t.workload).collect();
            &replayed
        };
        ctx.progress.set_total(cfg.workloads.len());
        let setup = &cfg.setup;
        let mut settings = cfg.leaper.clone();
        settings.test_fraction = 1.0 / cfg.days as f64;
        let mut out = RunOutput::default();
        out.notes
            .extend(traces.iter().map(|t| super::online::replay_note(t, ctx.seed)));
        for &workload in &cfg.workloads {
            ctx.progress.begin(format!("{workload}: {} days", cfg.days));
            let spec = setup.workload_spec(workload, day_ops(setup))?;
            let layout = setup.layout(setup.cache_ratio);
            ctx.progress.message(format!("bulk-loading {} records", crate::progress::thousands(setup.records)));
            let store = open_store(setup, &layout, &spec, WarmUpKind::Lru.baseline().expect("lru"))?;
            let trace = traces.iter().find(|t| t.workload == workload);
            let mut driver = Driver::new(store, &spec, ctx.seed, setup.cost_model(), false)?
                .replaying(trace.map(|t| &**t))?;
            let mut log = AccessLog::default();
            let ops = cfg.days * spec.day_ops;
            let mut run = warm_up(&mut driver, ops, ctx.progress, &mut |t, op| log.record(t, &op.op))?;
            // The same slots as leaper-online: the interval calibrated on the first two days.
            let interval_s = if setup.interval_s > 0.0 {
                setup.interval_s
            } else {
                calibrate_interval_s(
                    &run,
                    setup.background_ops_per_run,
                    setup.intervals,
                    layout.memtable_bytes,
                    (lsmlab_engine::kvstore::SLOT_SIZE + setup.value_bytes) as u64,
                )
            };
            let t2_s = setup.t2_intervals * interval_s;
            // As in leaper-online, the log covers at least MIN_TRAINING_SLOTS slots (then its last
            // 1 / days is held out, whole days or not).
            let slot_s = settings.slot_intervals * interval_s;
            extend_warm_up(
                &mut driver,
                &mut run,
                MIN_TRAINING_SLOTS as f64 * slot_s,
                ctx.progress,
                &mut |t, op| log.record(t, &op.op),
            )?;
            drop(driver);
            ctx.progress.message(format!(
                "key ranges (Algorithm 1), counts and precursors (Algorithm 2) of {} logged operations",
                crate::progress::thousands(run.ops)
            ));
            let set = learned::training_set(&log, &run, &settings, interval_s, t2_s, &spec, ctx.seed)?;
            // Algorithm 1 under both matrix-row readings (the key_ranges row below), before the
            // log is freed: the models' rows are not built beside it.
            let key_space = log.key_space.max(spec.records).max(1);
            let mut alg1 = Vec::new();
            for rows in [learned::Alg1KeySpace::Whole, learned::Alg1KeySpace::Live] {
                let c = learned::algorithm1(
                    &log,
                    key_space,
                    set.slot_s,
                    rows,
                    spec.records,
                    settings.test_fraction,
                )?;
                alg1.push((rows, c.size));
            }
            drop(log);
            ctx.progress.message(format!(
                "training {} step models on {} slots",
                set.params.steps,
                set.history.len()
            ));
            let started = Instant::now();
            let (model, report) = lsmlab_engine::leaper::train(&set.history, &set.precursors, &set.params)
                .with_context(|| format!("training on {workload}"))?;
            let train_s = started.elapsed().as_secs_f64();
            // Inference per compaction: every range active in the history, one prediction per step
            // model, at the last slot (the online prefetcher predicts only the compaction's span).
            let last = set.history.first_slot + set.history.len() as u64 - 1;
            let rows: Vec<FeatureRow> = match set.history.range_bounds() {
                Some((lo, hi)) => (lo..=hi)
                    .map(|r| {
                        features_at(
                            &set.history,
                            r,
                            Some(last),
                            run.secs,
                            set.day_s,
                            model.precursors().get(r),
                        )
                    })
                    .collect(),
                None => Vec::new(),
            };
            let t = Instant::now();
            for k in 1..=model.steps() {
                std::hint::black_box(model.predict(k, &rows));
            }
            let inference_ms = t.elapsed().as_secs_f64() * 1e3;
            let inference_nodes: u64 = (1..=model.steps()).map(|k| model.nodes_visited(k, &rows)).sum();
            let (model_trees, model_nodes) = model.size();
            // The model files' size, as leaper-online saves them.
            let dir = learned::model_dir(&format!("model-{workload}"));
            model
                .save(&dir)
                .with_context(|| format!("saving the model to {}", dir.display()))?;
            let model_bytes = learned::dir_bytes(&dir);
            let _ = std::fs::remove_dir_all(&dir);
            let paper_kb = PAPER_MODEL_KB
                .iter()
                .find(|(w, _)| *w == workload.as_str())
                .map(|p| p.1);
            let dims = |kind: &str| {
                RowBuilder::new()
                    .str("workload", workload.as_str())
                    .str("kind", kind)
                    .int("range_size", set.range_size)
                    .num("slot_s", set.slot_s)
            };
            for s in &report.steps {
                let step = |m: &str| {
                    dims("metrics")
                        .str("model", m)
                        .int("step", s.step as u64)
                        .int("train_rows", s.train_rows as u64)
                        .int("test_rows", s.test_rows as u64)
                        .int("test_positives", s.test_positives as u64)
                };
                out.rows.push(
                    metric_fields(step("leaper"), &s.model)
                        .num("train_s", s.train_secs)
                        .num("inference_ms", inference_ms)
                        .int("inference_nodes", inference_nodes)
                        .num(
                            "inference_virtual_ms",
                            learned::inference_virtual_ms(inference_nodes),
                        )
                        .int("model_trees", model_trees)
                        .int("model_nodes", model_nodes)
                        .int("model_bytes", model_bytes)
                        .opt_num("paper_model_kb", paper_kb)
                        .int("ranges", rows.len() as u64)
                        .build(),
                );
                out.rows
                    .push(metric_fields(step("last-slot"), &s.baseline).build());
            }
            ctx.progress.message("feature ablation (four step-1 models)");
            for a in ablation(&set.history, &set.precursors, &set.params).context("feature ablation")? {
                out.rows.push(
                    metric_fields(dims("ablation").str("features", &a.groups), &a.model)
                        .int("columns", a.columns as u64)
                        .num("train_s", a.train_secs)
                        .build(),
                );
            }
            let total: f64 = report.importance.iter().map(|g| g.share).sum();
            for g in &report.importance {
                let name = group_name(g.group);
                let paper = PAPER_IMPORTANCE.iter().find(|(n, _)| *n == name).map(|p| p.1);
                out.rows.push(
                    dims("importance")
                        .str("group", name)
                        .num(
                            "share_pct",
                            if total > 0.0 { g.share / total * 100.0 } else { 0.0 },
                        )
                        .opt_num("paper_pct", paper)
                        .build(),
                );
            }
            // Algorithm 1 under both matrix-row readings, and the paper's ratio, beside the size used.
            let mut key_ranges = dims("key_ranges")
                .str("used_key_space", settings.alg1_key_space.name())
                .int("records", spec.records)
                .int("key_space", key_space)
                .int("ranges", report.ranges)
                .int("paper_range_keys", learned::PAPER_RANGE_KEYS)
                .int("paper_table_rows", learned::PAPER_TABLE_ROWS)
                .int(
                    "paper_ranges",
                    learned::PAPER_TABLE_ROWS / learned::PAPER_RANGE_KEYS,
                )
                .int(
                    "paper_ratio_range_keys",
                    ((spec.records as f64 * learned::PAPER_RANGE_FRACTION).round() as u64).max(1),
                );
            for (rows, size) in alg1 {
                key_ranges = key_ranges.int(&format!("alg1_{}_size", rows.name()), size).int(
                    &format!("alg1_{}_ranges", rows.name()),
                    key_space.div_ceil(size),
                );
            }
            out.rows.push(key_ranges.build());
            for (size, zeros) in &set.tried {
                out.rows.push(
                    dims("range_size")
                        .int("size", *size)
                        .num("zero_proportion", *zeros)
                        .bool("chosen", *size == set.range_size)
                        .build(),
                );
            }
            out.notes.push(format!(
                "{workload}: {} operations ({} days of {} operations, or more to cover {MIN_TRAINING_SLOTS} slots; {:.3} \
                 virtual s, slots of {:.3} ms), the last 1 / days of the slots held out; {} slots x {} ranges of {} keys; {} step models trained in {:.2} s (all steps: {:.2} s); inference for {} ranges x {} \
                 steps: {:.2} ms (wall).{}",
                run.ops,
                cfg.days,
                spec.day_ops,
                run.secs,
                set.slot_s * 1e3,
                report.slots,
                report.ranges,
                set.range_size,
                report.steps.len(),
                report.steps.first().map_or(0.0, |s| s.train_secs),
                train_s,
                rows.len(),
                model.steps(),
                inference_ms,
                learned::few_ranges_note(report.ranges, spec.records),
            ));
        }
        out.notes.extend(setup.notes().into_iter().take(2));
        out.notes.extend(learned::notes(&settings));
        out.notes.push(format!(
            "Rows: kind = metrics (per step model k, predicting slot t + k: the model with threshold {} and the \
             last-slot baseline, 'accessed in the last slot will be accessed in the next', on the held-out last day), \
             ablation (the step-1 model on feature groups R, R/W, R/W/T, R/W/T/P: the paper's Figure 8), importance \
             (gain share of each feature group in the step-1 model: the paper's Table 3 by LightGBM's split gain) and \
             range_size (Algorithm 1's evaluated sizes with the share of zeros in the slot x range access matrix) and \
             key_ranges (per workload: the size Algorithm 1 chooses with matrix rows over the whole key space, as \
             written, and over the live one, the keys that exist by each slot's end, with their range counts over the \
             log's key space; the paper's 10^4 keys of 10^7 rows, 1,000 ranges, and the range size at its ratio here). \
             inference_ms predicts every range active in the log with every step model, more than one compaction \
             needs (the prefetcher predicts the ranges of the compaction's key span); times are wall time. Counted \
             beside them: inference_nodes = tree nodes those predictions visit (root to leaf in every tree), \
             inference_virtual_ms = inference_nodes x {} ns (NODE_NS, an assumed cost of one node visit of an \
             interpreted tree walk), model_trees / model_nodes = the step models' trees and nodes, model_bytes = the \
             model files' bytes (forust's JSON: every node with its statistics, far larger than a compact encoding) \
             beside paper_model_kb, the paper's Table 5 model object (3.2 / 16.3 / 8.9 KB for synthetic / e-commerce / \
             messaging).",
            settings.hot_threshold,
            learned::NODE_NS
        ));
        Ok(out)
    }
}
