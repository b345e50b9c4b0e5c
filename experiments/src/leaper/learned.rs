//! The Leaper policy as the experiments build it (the engine's `leaper` module does the work): the
//! warm-up's access log, Algorithm 1's key-range size, the multi-step GBDT models trained on the
//! log, saved as files and loaded back, and the policy built from them with its counters observed.

use std::path::PathBuf;

use anyhow::Context;
use lsmlab_engine::kvstore::WarmUpPolicy;
use lsmlab_engine::leaper::{
    select_range_size_of, AccessRecord, CollectorConfig, GbdtParams, KeySpace, LeaperModel, LeaperParams,
    LeaperPolicy, LeaperStats, RangeHistory, RangeSizeParams, TrainParams, TrainReport,
    TrainingPrecursors,
};
use lsmlab_workloads::kv::{KvOp, KvWorkload};
use serde::{Deserialize, Serialize};

use super::driver::Warmup;
use crate::config::check;
use crate::experiment::{RowBuilder, Scale};

lsmlab_harness::config! {
    /// The Leaper policy's settings (top-level `--set` keys of every Leaper experiment).
    pub struct LeaperSettings {
        /// Leaper: keys per key range; 0 = Algorithm 1 on the warm-up's accesses (initial size 10, alpha 0.6)
        pub range_size: u64,
        /// Leaper: a time slot of the collector and the models, in intervals (the paper: the smallest T2,
        /// reports every second)
        pub slot_intervals: f64,
        /// Leaper: the collector's sampling probability P (the paper: 0.01)
        pub sample_p: f64,
        /// Leaper: step models K; 0 = Eq. 2 (the longest warm-up compaction's T1 + T2 in slots, plus 1; at
        /// most 12)
        pub steps: usize,
        /// Leaper: boosting rounds per GBDT model (learning rate 0.05, 31 leaves, bagging 0.8, feature
        /// fraction 0.9 as the paper)
        pub gbdt_rounds: usize,
        /// Leaper: probability at or above which a key range is predicted hot
        pub hot_threshold: f64,
        /// Leaper: share of the warm-up's slots held out to test the models
        pub test_fraction: f64,
        /// Leaper: the ranges a row of Algorithm 1's access matrix counts: whole (the log's whole key range,
        /// as written) or live (only ranges holding keys by the slot's end: inserts' not-yet-existing keys
        /// are no zeros)
        #[serde(default)]
        pub alg1_key_space: Alg1KeySpace,
        /// Leaper: keys per range as a fraction of the records, replacing Algorithm 1 (0 = off; the paper's:
        /// 10^4 keys of 10^7 rows = 0.001, 1,000 ranges at every scale)
        #[serde(default)]
        pub range_fraction: f64,
        /// Leaper: the most rows (key ranges x slots) the models train and test on; above it a fixed
        /// pseudo-random subset of the ranges is used, said in the notes (0 = every range; default 4,000,000,
        /// which tiny and small runs never reach)
        #[serde(default = "max_training_rows_default")]
        pub max_training_rows: usize,
    }
}

/// `max_training_rows`' default: rows cost about 160 bytes each plus a copy per step model and
/// the GBDT's own matrix, so 4 million keep a model's training within a few GB; tiny and small
/// runs stay below it. It was chosen from the peak RSS of a 5-million-record run's training
/// (`TRAINING_BYTES_PER_ROW` in `leaper/mod.rs`; the measurement is in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`).
pub const MAX_TRAINING_ROWS: usize = 4_000_000;

pub(crate) fn max_training_rows_default() -> usize {
    MAX_TRAINING_ROWS
}

/// `alg1_key_space`'s values (see [`KeySpace`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Alg1KeySpace {
    #[default]
    Whole,
    Live,
}

impl Alg1KeySpace {
    pub fn engine(self) -> KeySpace {
        match self {
            Alg1KeySpace::Whole => KeySpace::Whole,
            Alg1KeySpace::Live => KeySpace::Live,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Alg1KeySpace::Whole => "whole",
            Alg1KeySpace::Live => "live",
        }
    }
}

/// The paper's key ranges (§4.1, §7.3.2 and Table 2): Algorithm 1 chose ranges of 10^4 keys on
/// the e-commerce table of 10^7 rows, i.e. 1,000 ranges, each 0.001 of the keys.
pub const PAPER_RANGE_KEYS: u64 = 10_000;
pub(crate) const PAPER_TABLE_ROWS: u64 = 10_000_000;
pub(crate) const PAPER_RANGE_FRACTION: f64 = PAPER_RANGE_KEYS as f64 / PAPER_TABLE_ROWS as f64;

impl LeaperSettings {
    /// The model settings at `scale` (the authors' defaults, sizes scaled).
    pub fn defaults(scale: Scale) -> LeaperSettings {
        LeaperSettings {
            range_size: 0,
            slot_intervals: 1.0,
            sample_p: 0.01,
            steps: 0,
            gbdt_rounds: match scale {
                // tiny is a smoke test of the pipeline: a few rounds train a usable classifier
                Scale::Tiny => 10,
                _ => 100,
            },
            hot_threshold: 0.5,
            test_fraction: 0.25,
            alg1_key_space: Alg1KeySpace::Whole,
            range_fraction: 0.0,
            max_training_rows: MAX_TRAINING_ROWS,
        }
    }

    /// Refuses settings no training can use, naming the parameter and the accepted values.
    pub fn validate(&self) -> anyhow::Result<()> {
        check(
            "slot_intervals",
            self.slot_intervals,
            self.slot_intervals > 0.0,
            "a positive number of intervals",
        )?;
        check(
            "sample_p",
            self.sample_p,
            self.sample_p > 0.0 && self.sample_p <= 1.0,
            "a probability in (0, 1]",
        )?;
        check(
            "gbdt_rounds",
            self.gbdt_rounds,
            self.gbdt_rounds >= 1,
            "at least 1",
        )?;
        check(
            "hot_threshold",
            self.hot_threshold,
            self.hot_threshold > 0.0 && self.hot_threshold < 1.0,
            "a probability strictly between 0 and 1",
        )?;
        check(
            "test_fraction",
            self.test_fraction,
            self.test_fraction > 0.0 && self.test_fraction < 1.0,
            "a fraction strictly between 0 and 1",
        )?;
        check(
            "range_fraction",
            self.range_fraction,
            (0.0..=1.0).contains(&self.range_fraction),
            "a fraction in [0, 1] (0 = Algorithm 1)",
        )
    }
}

/// The most step models Eq. 2 asks for by default (a longer window uses the last model for its
/// remaining steps, as the policy does beyond its models).
pub const MAX_STEPS: usize = 12;

/// The warm-up's accesses, in time order, as Leaper's offline collection reads them (compact:
/// 16 bytes per point access, 24 per scan; see [`lsmlab_engine::leaper::AccessLog`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct AccessLog {
    pub records: lsmlab_engine::leaper::AccessLog,
    /// One past the largest key accessed.
    pub key_space: u64,
}

impl AccessLog {
    /// Logs one operation starting at virtual time `t`.
    pub fn record(&mut self, t: f64, op: &KvOp) {
        let (r, hi) = match *op {
            KvOp::Get(k) => (AccessRecord::read(t, k), k),
            KvOp::Scan { lo, hi } => (AccessRecord::scan(t, lo, hi), hi),
            KvOp::Update(k) | KvOp::Insert(k) => (AccessRecord::write(t, k), k),
        };
        self.key_space = self.key_space.max(hi + 1);
        self.records.push(r);
    }
}

/// A trained model on disk (in a temporary directory removed when this is dropped), with what
/// training reported.
/// Below this many key ranges a trained model is flagged in the notes as having little to choose
/// among (the paper's e-commerce model had about 1,000).
pub const FEW_RANGES: u64 = 100;

/// A warning for the notes when a model was trained on fewer than [`FEW_RANGES`] key ranges over
/// `records` loaded keys, empty otherwise.
pub fn few_ranges_note(ranges: u64, records: u64) -> String {
    if ranges >= FEW_RANGES {
        return String::new();
    }
    let at_ratio = ((records as f64 * PAPER_RANGE_FRACTION).round() as u64).max(1);
    format!(
        " Only {ranges} key ranges: the model chooses among few, coarse ranges, so hot and cold keys share \
         ranges. The paper: 1,000 ranges of 10^4 keys over 10^7 rows; at its keys-per-range ratio these {records} \
         records would make ranges of {at_ratio} keys (range_fraction = 0.001), at its keys per range {} ranges. \
         Algorithm 1 on a log that inserts new keys counts the not-yet-existing keys' ranges as zeros in every \
         early slot, a share of zeros no range size removes, so it doubles on (alg1_key_space = live counts only \
         the ranges holding keys; leaper-model reports both).",
        records.div_ceil(PAPER_RANGE_KEYS)
    )
}

pub(crate) struct TrainedLeaper {
    /// Records loaded before the warm-up.
    pub records: u64,
    pub dir: PathBuf,
    pub report: TrainReport,
    pub range_size: u64,
    /// Algorithm 1's evaluated sizes and zero proportions (empty when the size was set).
    pub range_sizes_tried: Vec<(u64, f64)>,
    /// Length of one collection slot, in virtual seconds.
    pub slot_s: f64,
    pub steps: usize,
    /// Total bytes of the model files.
    pub model_bytes: u64,
    /// `alpha` of T1 = alpha x N (virtual seconds per block to merge), from the warm-up's compactions.
    pub alpha_s_per_block: f64,
    pub t2_s: f64,
    pub sample_p: f64,
    pub threshold: f64,
}

impl Drop for TrainedLeaper {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl TrainedLeaper {
    /// The model, read back from its files.
    pub fn load(&self) -> anyhow::Result<LeaperModel> {
        LeaperModel::load(&self.dir)
            .with_context(|| format!("loading the Leaper model from {}", self.dir.display()))
    }

    /// Step 1's offline metrics against the last-slot baseline, and a warning when the key
    /// ranges are too few for the model to choose among.
    pub fn note(&self) -> String {
        let s1 = self.report.steps.first();
        let few = few_ranges_note(self.report.ranges, self.records);
        let bounded = if self.report.train_ranges < self.report.ranges {
            format!(
                " The rows were bounded (max_training_rows): the models trained and were tested on {} of the {} ranges, a fixed pseudo-random subset, every slot of each.",
                self.report.train_ranges, self.report.ranges
            )
        } else {
            String::new()
        };
        let note = format!(
            "Leaper model: key ranges of {} keys ({}), slots of {:.3} ms, {} step models trained in {:.2} s on {} slots x \
             {} ranges, saved ({} bytes) and loaded back; step 1 on the held-out slots: precision {}, recall {} \
             (last-slot baseline: recall {}); alpha = {:.3e} s per block.",
            self.range_size,
            if self.range_sizes_tried.is_empty() {
                "set".to_string()
            } else {
                format!(
                    "Algorithm 1 tried {}",
                    self.range_sizes_tried
                        .iter()
                        .map(|(s, z)| format!("{s} ({z:.3} zeros)"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            self.slot_s * 1e3,
            self.steps,
            self.report.train_secs,
            self.report.slots,
            self.report.ranges,
            self.model_bytes,
            s1.map_or("-".into(), |s| format!("{:.3}", s.model.precision)),
            s1.map_or("-".into(), |s| format!("{:.3}", s.model.recall)),
            s1.map_or("-".into(), |s| format!("{:.3}", s.baseline.recall)),
            self.alpha_s_per_block,
        );
        note + &bounded + &few
    }
}

/// Bytes of the files in `dir`.
pub fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|it| {
            it.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// A fresh directory for a model under the system's temporary directory.
pub fn model_dir(label: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let safe: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    std::env::temp_dir().join(format!("lsmlab-leaper-{}-{n}-{safe}", std::process::id()))
}

/// The training inputs of a warm-up: the range size (set, or by Algorithm 1), the collected
/// history, Algorithm 2's precursors over its training slots and the training parameters.
pub(crate) struct TrainingSet {
    pub range_size: u64,
    pub tried: Vec<(u64, f64)>,
    pub history: RangeHistory,
    pub precursors: TrainingPrecursors,
    pub params: TrainParams,
    pub slot_s: f64,
    pub day_s: f64,
}

/// The records of `log` in the slots the models train on: those before the held-out tail that
/// [`lsmlab_engine::leaper::train`] sets aside (the last `test_fraction` of the label slots,
/// after the feature history's first slots), so that Algorithm 1 picks the range size from the
/// training data alone and the test slots stay unseen. The log's records are in time order.
pub(crate) fn training_records(
    log: &AccessLog,
    slot_s: f64,
    test_fraction: f64,
) -> std::iter::Take<lsmlab_engine::leaper::AccessLogIter<'_>> {
    let slot = |t: f64| lsmlab_engine::leaper::slot_of(t, slot_s);
    let n = log.records.len();
    let (Some(first), Some(last)) = (log.records.time(0), n.checked_sub(1).and_then(|i| log.records.time(i)))
    else {
        return log.records.iter().take(n);
    };
    let (f, l) = (slot(first), slot(last));
    let n = (l.saturating_sub(f) + 1) as usize;
    let cut = f + lsmlab_engine::leaper::held_out_from(n, test_fraction) as u64;
    let end = log.records.partition_point_time(|t| slot(t) < cut);
    log.records.iter().take(end.max(1))
}

/// Algorithm 1 (initial size 10, alpha 0.6) on a log over `0..key_space` whose first `records`
/// keys were loaded before it, its matrix rows counting the ranges `rows` says: over the
/// training slots only ([`training_records`] with `test_fraction`).
pub(crate) fn algorithm1(
    log: &AccessLog,
    key_space: u64,
    slot_s: f64,
    rows: Alg1KeySpace,
    records: u64,
    test_fraction: f64,
) -> anyhow::Result<lsmlab_engine::leaper::RangeSizeChoice> {
    select_range_size_of(
        training_records(log, slot_s, test_fraction),
        key_space,
        slot_s,
        RangeSizeParams::default(),
        rows.engine(),
        records,
    )
    .context("Algorithm 1 (key-range size)")
}

/// Builds the training set of a warm-up log (see [`TrainingSet`]).
pub(crate) fn training_set(
    log: &AccessLog,
    warmup: &Warmup,
    s: &LeaperSettings,
    interval_s: f64,
    t2_s: f64,
    spec: &KvWorkload,
    seed: u64,
) -> anyhow::Result<TrainingSet> {
    let slot_s = s.slot_intervals * interval_s;
    let key_space = log.key_space.max(spec.records).max(1);
    let (range_size, tried) = if s.range_size > 0 {
        (s.range_size, Vec::new())
    } else if s.range_fraction > 0.0 {
        (
            ((spec.records as f64 * s.range_fraction).round() as u64).max(1),
            Vec::new(),
        )
    } else {
        let choice = algorithm1(
            log,
            key_space,
            slot_s,
            s.alg1_key_space,
            spec.records,
            s.test_fraction,
        )?;
        (choice.size, choice.evaluated)
    };
    let config = CollectorConfig {
        sample_p: s.sample_p,
        seed,
        ..CollectorConfig::offline(range_size, slot_s)
    };
    let history =
        RangeHistory::from_records(log.records.iter(), &config).context("collecting the warm-up's accesses")?;
    let longest = warmup.compactions.iter().map(|(t1, _)| *t1).fold(0.0, f64::max);
    let steps = if s.steps > 0 {
        s.steps
    } else {
        (((longest + t2_s) / slot_s).ceil() as usize + 1).min(MAX_STEPS)
    };
    let day_s = spec.day_ops as f64 * warmup.secs_per_op();
    let params = TrainParams {
        steps: steps.max(1),
        gbdt: GbdtParams {
            rounds: s.gbdt_rounds,
            ..GbdtParams::default()
        },
        test_fraction: s.test_fraction,
        threshold: s.hot_threshold,
        day_secs: if day_s > 0.0 { day_s } else { 1.0 },
        max_rows: s.max_training_rows,
        ..TrainParams::default()
    };
    let precursors = TrainingPrecursors::of(&history, || log.records.iter(), &params)
        .context("Algorithm 2 (precursors) over the warm-up's accesses")?;
    Ok(TrainingSet {
        range_size,
        tried,
        history,
        precursors,
        params,
        slot_s,
        day_s,
    })
}

/// Trains the models on a warm-up's log, saves them and checks they load back. The log is freed
/// once Algorithm 1, the collector and Algorithm 2 have read it, before the models' rows are built.
#[allow(clippy::too_many_arguments)]
pub(crate) fn train(
    log: AccessLog,
    warmup: &Warmup,
    s: &LeaperSettings,
    interval_s: f64,
    t2_s: f64,
    spec: &KvWorkload,
    seed: u64,
    cost_alpha: f64,
) -> anyhow::Result<TrainedLeaper> {
    let set = training_set(&log, warmup, s, interval_s, t2_s, spec, seed)?;
    drop(log);
    let (model, report) =
        lsmlab_engine::leaper::train(&set.history, &set.precursors, &set.params).context("training the Leaper model")?;
    let dir = model_dir(&spec.name);
    model
        .save(&dir)
        .with_context(|| format!("saving the Leaper model to {}", dir.display()))?;
    let alphas: Vec<f64> = warmup
        .compactions
        .iter()
        .filter(|(_, blocks)| *blocks > 0)
        .map(|(t1, blocks)| t1 / *blocks as f64)
        .collect();
    let trained = TrainedLeaper {
        records: spec.records,
        model_bytes: dir_bytes(&dir),
        dir,
        report,
        range_size: set.range_size,
        range_sizes_tried: set.tried,
        slot_s: set.slot_s,
        steps: set.params.steps,
        alpha_s_per_block: if alphas.is_empty() {
            cost_alpha
        } else {
            alphas.iter().sum::<f64>() / alphas.len() as f64
        },
        t2_s,
        sample_p: s.sample_p,
        threshold: s.hot_threshold,
    };
    trained.load()?;
    Ok(trained)
}

/// The Leaper policy's counters over a run, read from a [`StatsHandle`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct RunStats {
    pub stats: LeaperStats,
}

impl RunStats {
    /// `self - earlier` for the counters the rows report.
    pub fn since(&self, earlier: Option<&RunStats>) -> RunStats {
        let Some(e) = earlier else { return *self };
        let (a, b) = (&self.stats, &e.stats);
        RunStats {
            stats: LeaperStats {
                flushes: a.flushes - b.flushes,
                compactions: a.compactions - b.compactions,
                predictions: a.predictions - b.predictions,
                hot_ranges: a.hot_ranges - b.hot_ranges,
                hot_ranges_t1: a.hot_ranges_t1 - b.hot_ranges_t1,
                inference_nanos: a.inference_nanos - b.inference_nanos,
                nodes_visited: a.nodes_visited - b.nodes_visited,
                cached_inputs: a.cached_inputs - b.cached_inputs,
                blocks_evicted: a.blocks_evicted - b.blocks_evicted,
                blocks_offered: a.blocks_offered - b.blocks_offered,
                blocks_admitted: a.blocks_admitted - b.blocks_admitted,
                steps_clamped: a.steps_clamped - b.steps_clamped,
                collector: a.collector,
            },
        }
    }

    /// `leaper_*` fields: predictions, hot ranges, phase-1 evictions, phase-2 admissions, and the
    /// wall time of inference per flush or compaction (measured, not modelled).
    pub fn fields(&self, row: RowBuilder) -> RowBuilder {
        let s = &self.stats;
        let ops = s.flushes + s.compactions;
        row.int("leaper_predictions", s.predictions)
            .int("leaper_hot_ranges", s.hot_ranges)
            .int("leaper_t1_evictions", s.blocks_evicted)
            .int("leaper_admitted", s.blocks_admitted)
            .num(
                "inference_ms",
                if ops > 0 {
                    s.inference_nanos as f64 / 1e6 / ops as f64
                } else {
                    0.0
                },
            )
            .num(
                "inference_nodes",
                if ops > 0 {
                    s.nodes_visited as f64 / ops as f64
                } else {
                    0.0
                },
            )
            .num(
                "inference_virtual_ms",
                if ops > 0 {
                    inference_virtual_ms(s.nodes_visited) / ops as f64
                } else {
                    0.0
                },
            )
    }
}

/// The modelled cost of visiting one tree node in inference, in nanoseconds: a compare and a
/// branch on a node that is mostly not in the CPU's caches (an assumption of the order of an
/// interpreted LightGBM or forust tree walk; Treelite's compiled trees, which the paper's Table 5
/// reports 3-5x faster, would be cheaper).
pub const NODE_NS: f64 = 5.0;

/// The virtual time of visiting `nodes` tree nodes, in milliseconds.
pub fn inference_virtual_ms(nodes: u64) -> f64 {
    nodes as f64 * NODE_NS / 1e6
}

/// Where the Leaper policy publishes its counters (see [`LeaperPolicy::published`]).
pub use lsmlab_engine::leaper::StatsHandle;

/// A Leaper policy from the trained model (loaded from its files), and the handle its counters
/// appear on.
pub(crate) fn policy(trained: &TrainedLeaper, seed: u64) -> anyhow::Result<(Box<dyn WarmUpPolicy>, StatsHandle)> {
    let params = LeaperParams {
        alpha_secs_per_block: trained.alpha_s_per_block,
        t2_secs: trained.t2_s,
        sample_p: trained.sample_p,
        seed,
        threshold: Some(trained.threshold),
    };
    let (policy, stats) = LeaperPolicy::new(trained.load()?, params)
        .context("building the Leaper policy")?
        .published();
    Ok((Box::new(policy), stats))
}

/// Reads a handle's counters.
pub(crate) fn read(handle: &StatsHandle) -> RunStats {
    RunStats {
        stats: *handle.lock(),
    }
}

/// The notes on how the Leaper policy is built.
pub fn notes(s: &LeaperSettings) -> Vec<String> {
    vec![
        format!(
        "Leaper: the warm-up's accesses (every one logged on the virtual clock) choose the key-range size by \
         Algorithm 1 (start at 10 keys, double while 2 Z(2A) > 0.6 Z(A); matrix rows over the {} key space) unless \
         range_size ({}) or range_fraction ({}: keys per range / records; the paper's 10^4 / 10^7 = 0.001) is set, are \
         collected per range and slot of {} intervals with sampling P = {} (first access of a range in a slot always \
         counted, N = (S - 1) / P + 1), and train the multi-step GBDT models (forust-ml; {} rounds, learning rate \
         0.05, 31 leaves, bagging 0.8, feature fraction 0.9; the 18 features of §4) with the last {} of the slots held \
         out; the models are saved as files, loaded back and drive the two-phase prefetcher (T1 = alpha x blocks to \
         merge with alpha from the warm-up's compactions, T2 = t2_intervals) and the single-phase one for flushes. \
         The paper trained LightGBM on earlier days of the same workload; here the warm-up phase of the same stream \
         plays that part. Time-of-day features use a day of warmup_ops / 2 operations at the warm-up's mean latency \
         (the workloads' day is counted in operations).",
        s.alg1_key_space.name(),
        s.range_size,
        s.range_fraction,
        s.slot_intervals,
        s.sample_p,
        s.gbdt_rounds,
        s.test_fraction,
        ),
        "alg1_key_space = whole (the authors' Algorithm 1 over the key space) is the default; `--set \
         alg1_key_space=live` runs Algorithm 1 over the ranges the log touched, and a run with each, compared \
         with `lsmlab compare`, measures what that changes (docs/papers/leaper.md)."
            .to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm1_sees_the_training_slots_only() {
        // 20 slots of 1 s, one read each: 14 label slots after the 6 of history, a quarter of
        // them (round(3.5) = 4) held out, so the training records are those of slots 0..16.
        let mut log = AccessLog::default();
        for s in 0..20u64 {
            log.record(s as f64 + 0.5, &KvOp::Get(s));
        }
        let train = training_records(&log, 1.0, 0.25);
        assert_eq!(train.len(), 16);
        assert!(train.clone().all(|r| r.time < 16.0));
        // a test share of 1/2: 7 held out
        assert_eq!(training_records(&log, 1.0, 0.5).len(), 13);
        assert_eq!(training_records(&AccessLog::default(), 1.0, 0.25).len(), 0);
    }

    #[test]
    fn few_key_ranges_are_flagged_and_enough_are_not() {
        assert!(few_ranges_note(6, 200_000).contains("Only 6 key ranges"));
        assert!(few_ranges_note(6, 200_000).contains("ranges of 200 keys"));
        assert!(few_ranges_note(6, 200_000).contains("keys per range 20 ranges"));
        assert!(few_ranges_note(FEW_RANGES - 1, 1000).starts_with(" Only"));
        assert_eq!(few_ranges_note(FEW_RANGES, 1000), "");
        assert_eq!(few_ranges_note(5664, 1000), "");
    }
}
