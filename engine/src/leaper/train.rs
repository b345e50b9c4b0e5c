//! Offline training (§4.3, §6.1) and evaluation (§7.2).
//!
//! A [`RangeHistory`] of `n` slots gives one row per key range and slot `t` (`t >= 5`, so that all
//! 6 history slots lie in the history): the 18 features of [`super::features`] at the start of
//! slot `t + 1`, and for step `k` the label "accessed in slot `t + k`". The key ranges are every
//! range between the smallest and the largest one accessed in the history (ranges never accessed
//! in between are part of the key space and get all-zero rows).
//!
//! **Held-out tail.** The last `test_fraction` of the label slots are the test set: a row whose
//! label slot lies in the tail is a test row, the others are training rows, for every step.
//! Precursors (Algorithm 2) are computed from the training slots only, so nothing of the tail
//! leaks into training: [`TrainingPrecursors::of`] reads them from the access log the history was
//! collected from, before the log may be dropped and the rows built.
//!
//! **Multi-step prediction** (§6.1): `steps = K` models, model `k` predicting "accessed in slot
//! `t + k`"; the prefetcher combines them per Eq. 4. Each model is reported with precision,
//! recall and AUC on its test rows beside the paper's offline baseline, "a range accessed in the
//! last slot is accessed next" (§7.1: Incremental Warmup's idea), which predicts slot `t + k` from
//! slot `t` alone. Training times are wall time (recorded, never asserted).
//!
//! [`ablation`] retrains the step-1 model on the feature groups R, R/W, R/W/T and R/W/T/P
//! (Figure 8); [`TrainReport::importance`] is the step-1 model's total-gain share per group
//! (Table 3).

use super::collector::{CountSource, RangeHistory};
use super::features::{
    compute_precursors, features_at, FeatureGroup, Precursors, Row, FEATURES, HISTORY_SLOTS, PRECURSORS,
};
use super::model::{GbdtModel, GbdtParams, HotRangeModel};
use super::{AccessRecord, LeaperError, LeaperResult};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Training parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainParams {
    /// Number of step models `K` (model `k` predicts slot `t + k`).
    pub steps: usize,
    /// The classifier's parameters (one set for every step model).
    pub gbdt: GbdtParams,
    /// Share of the label slots held out at the end of the history.
    pub test_fraction: f64,
    /// Probability at or above which a range is predicted hot.
    pub threshold: f64,
    /// Length of a "day" in virtual seconds (the time-of-day features).
    pub day_secs: f64,
    /// Algorithm 2's cosine-similarity threshold `ε` (the paper gives no value).
    pub epsilon: f64,
    /// The most rows (ranges x label slots) the models train and test on; 0 = every range. When
    /// the history has more, a fixed pseudo-random subset of the ranges gives the rows (every
    /// slot of a chosen range, none of the others), so the labels' share is the whole history's
    /// in expectation and memory stays bounded: the dense rows cost about 160 bytes each, plus a
    /// copy per step model. The paper's models trained on about 1,000 ranges; Algorithm 1 on a
    /// large key space can make hundreds of thousands. A deviation only when it applies; the
    /// report says how many ranges were used ([`TrainReport::train_ranges`]).
    #[serde(default)]
    pub max_rows: usize,
}

impl Default for TrainParams {
    fn default() -> Self {
        TrainParams {
            steps: 3,
            gbdt: GbdtParams::default(),
            test_fraction: 0.25,
            threshold: 0.5,
            day_secs: 86_400.0,
            epsilon: 0.5,
            max_rows: 0,
        }
    }
}

impl TrainParams {
    /// Checks the parameters; the error names the bad one.
    pub fn validate(&self) -> LeaperResult<()> {
        self.gbdt.validate()?;
        if self.steps == 0 {
            return Err(LeaperError::Invalid("steps must be at least 1".into()));
        }
        if !(self.test_fraction > 0.0 && self.test_fraction < 1.0) {
            return Err(LeaperError::Invalid(format!(
                "test_fraction must lie in (0, 1), got {}",
                self.test_fraction
            )));
        }
        if !(self.threshold > 0.0 && self.threshold < 1.0) {
            return Err(LeaperError::Invalid(format!(
                "threshold must lie in (0, 1), got {}",
                self.threshold
            )));
        }
        if !(self.day_secs.is_finite() && self.day_secs > 0.0) {
            return Err(LeaperError::Invalid(format!(
                "day_secs must be positive, got {}",
                self.day_secs
            )));
        }
        if !self.epsilon.is_finite() {
            return Err(LeaperError::Invalid("epsilon must be a number".into()));
        }
        Ok(())
    }
}

/// Binary-classification metrics on a test set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// `tp / (tp + fp)`; 0 when nothing is predicted positive.
    pub precision: f64,
    /// `tp / (tp + fn)`; 0 when there is no positive.
    pub recall: f64,
    /// Area under the ROC curve (ties count half); `None` when the test set has one class.
    pub auc: Option<f64>,
    /// True positives.
    pub tp: u64,
    /// False positives.
    pub fp: u64,
    /// False negatives.
    pub fn_: u64,
    /// True negatives.
    pub tn: u64,
}

impl Metrics {
    /// Metrics of `scores` against `labels`, predicted positive at `score >= threshold`.
    pub fn of(scores: &[f64], labels: &[bool], threshold: f64) -> Metrics {
        let mut m = Metrics::default();
        for (&s, &l) in scores.iter().zip(labels) {
            match (s >= threshold, l) {
                (true, true) => m.tp += 1,
                (true, false) => m.fp += 1,
                (false, true) => m.fn_ += 1,
                (false, false) => m.tn += 1,
            }
        }
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        m.precision = ratio(m.tp, m.tp + m.fp);
        m.recall = ratio(m.tp, m.tp + m.fn_);
        m.auc = auc(scores, labels);
        m
    }
}

/// ROC AUC by the rank-sum (Mann-Whitney) formula, tied scores sharing their average rank.
pub fn auc(scores: &[f64], labels: &[bool]) -> Option<f64> {
    let pos = labels.iter().filter(|&&l| l).count();
    let neg = labels.len() - pos;
    if pos == 0 || neg == 0 {
        return None;
    }
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && scores[idx[j + 1]] == scores[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        rank_sum += idx[i..=j].iter().filter(|&&k| labels[k]).count() as f64 * avg;
        i = j + 1;
    }
    let (p, n) = (pos as f64, neg as f64);
    Some((rank_sum - p * (p + 1.0) / 2.0) / (p * n))
}

/// One step model's offline evaluation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    /// The step `k`: the model predicts slot `t + k`.
    pub step: usize,
    /// Training rows.
    pub train_rows: usize,
    /// Training rows labelled accessed.
    pub train_positives: usize,
    /// Test rows.
    pub test_rows: usize,
    /// Test rows labelled accessed.
    pub test_positives: usize,
    /// The model's metrics on the test rows.
    pub model: Metrics,
    /// "Accessed in the last slot will be accessed in slot `t + step`".
    pub baseline: Metrics,
    /// Wall time of fitting this model.
    pub train_secs: f64,
}

/// A feature group's share of the step-1 model's total split gain.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupImportance {
    /// The feature group.
    pub group: FeatureGroup,
    /// Its share of the total split gain, in [0, 1].
    pub share: f64,
}

/// What [`train`] reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainReport {
    /// Slots in the history.
    pub slots: usize,
    /// Key ranges in the history.
    pub ranges: u64,
    /// The ranges whose rows the models trained and were tested on: `ranges`, or fewer when
    /// [`TrainParams::max_rows`] bounded the rows.
    #[serde(default)]
    pub train_ranges: u64,
    /// First test label slot (index into the history).
    pub split_slot: usize,
    /// Ranges with at least one precursor.
    pub precursor_targets: usize,
    /// One report per step model, step 1 first.
    pub steps: Vec<StepReport>,
    /// Total split-gain share per feature group of the step-1 model.
    pub importance: Vec<GroupImportance>,
    /// Wall time of the whole training (features, precursors, every model).
    pub train_secs: f64,
}

/// One row of the feature-group ablation (step 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AblationRow {
    /// "R", "R/W", "R/W/T" or "R/W/T/P".
    pub groups: String,
    /// Feature columns the model read.
    pub columns: usize,
    /// The model's metrics on the test rows.
    pub model: Metrics,
    /// Wall time of fitting the model.
    pub train_secs: f64,
}

/// Row indices of a [`Dataset`], each with its label.
type LabelledRows = Vec<(usize, bool)>;

/// The rows of a history and where the split falls.
struct Dataset {
    rows: Vec<Row>,
    /// Feature slot `t` (history index) of each row.
    t: Vec<usize>,
    /// Range of each row.
    range: Vec<u64>,
    n_slots: usize,
    split: usize,
    ranges: u64,
    /// Ranges that gave rows (see [`TrainParams::max_rows`]).
    used_ranges: u64,
    precursors: Precursors,
}

/// The ranges of `lo..=hi` that give rows when at most `keep` may: all of them, or the `keep`
/// whose fixed hash is smallest (so that the subset follows none of the key order's hot or cold
/// stretches), in key order.
fn kept_ranges(lo: u64, hi: u64, keep: u64) -> Vec<u64> {
    if keep > hi - lo {
        return (lo..=hi).collect();
    }
    // splitmix64's finaliser
    let hash = |r: u64| {
        let mut z = r.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut all: Vec<(u64, u64)> = (lo..=hi).map(|r| (hash(r), r)).collect();
    let keep = keep as usize;
    all.select_nth_unstable(keep - 1);
    let mut kept: Vec<u64> = all[..keep].iter().map(|&(_, r)| r).collect();
    kept.sort_unstable();
    kept
}

/// The first held-out slot of a history of `n` slots: the last `test_fraction` of its label slots
/// (those after the first [`HISTORY_SLOTS`]), at least one, are the test tail.
pub fn held_out_from(n: usize, test_fraction: f64) -> usize {
    let label_slots = n.saturating_sub(HISTORY_SLOTS);
    let test_slots = ((test_fraction * label_slots as f64).round() as usize).max(1);
    n.saturating_sub(test_slots)
}

/// [`held_out_from`], or an error when the history is too short to train and test.
fn training_split(n: usize, params: &TrainParams) -> LeaperResult<usize> {
    params.validate()?;
    let label_slots = n.saturating_sub(HISTORY_SLOTS);
    let split = held_out_from(n, params.test_fraction);
    // Step K needs a training row: t = 5 with t + K < split.
    if label_slots < 2 || split < HISTORY_SLOTS + params.steps {
        return Err(LeaperError::Training(format!(
            "a history of {n} slots is too short for {} history slots, {} steps and a {:.0}% test tail",
            HISTORY_SLOTS,
            params.steps,
            params.test_fraction * 100.0
        )));
    }
    Ok(split)
}

/// Algorithm 2's precursors over the training slots of a history, as [`train`] and [`ablation`]
/// take them: computed from the access log before the log is dropped, and checked against the
/// history and parameters they are used with.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainingPrecursors {
    precursors: Precursors,
    slots: usize,
    split: usize,
    epsilon: f64,
}

impl TrainingPrecursors {
    /// The precursors of `history`'s training slots (those before the held-out tail `params`
    /// sets aside), from `records`, the log the history was collected from
    /// ([`compute_precursors`]; an empty log gives none).
    pub fn of<I>(history: &RangeHistory, records: impl Fn() -> I, params: &TrainParams) -> LeaperResult<Self>
    where
        I: IntoIterator<Item = AccessRecord>,
    {
        let split = training_split(history.len(), params)?;
        Ok(TrainingPrecursors {
            precursors: compute_precursors(records, history, 0..split, PRECURSORS, params.epsilon)?,
            slots: history.len(),
            split,
            epsilon: params.epsilon,
        })
    }

    /// The precursors.
    pub fn precursors(&self) -> &Precursors {
        &self.precursors
    }
}

impl Dataset {
    fn build(
        h: &RangeHistory,
        precursors: &TrainingPrecursors,
        params: &TrainParams,
    ) -> LeaperResult<Dataset> {
        let n = h.len();
        let split = training_split(n, params)?;
        if (precursors.slots, precursors.split, precursors.epsilon) != (n, split, params.epsilon) {
            return Err(LeaperError::Invalid(format!(
                "precursors computed for {} slots split at {} with epsilon {}, not for this history's {n} slots split at {split} with epsilon {}",
                precursors.slots, precursors.split, precursors.epsilon, params.epsilon
            )));
        }
        let Some((lo, hi)) = h.range_bounds() else {
            return Err(LeaperError::Training("the history has no access".into()));
        };
        let precursors = precursors.precursors.clone();
        let ranges = hi - lo + 1;
        let per_range = (n - HISTORY_SLOTS) as u64;
        let keep = if params.max_rows == 0 {
            ranges
        } else {
            (params.max_rows as u64 / per_range).clamp(1, ranges)
        };
        let kept = kept_ranges(lo, hi, keep);
        let mut ds = Dataset {
            rows: Vec::with_capacity(kept.len() * per_range as usize),
            t: Vec::with_capacity(kept.len() * per_range as usize),
            range: Vec::with_capacity(kept.len() * per_range as usize),
            n_slots: n,
            split,
            ranges,
            used_ranges: kept.len() as u64,
            precursors,
        };
        for t in HISTORY_SLOTS - 1..n - 1 {
            let abs = h.first_slot + t as u64;
            let pred_time = (abs + 1) as f64 * h.slot_secs;
            for &r in &kept {
                ds.rows.push(features_at(
                    h,
                    r,
                    Some(abs),
                    pred_time,
                    params.day_secs,
                    ds.precursors.get(r),
                ));
                ds.t.push(t);
                ds.range.push(r);
            }
        }
        Ok(ds)
    }

    /// (train rows, test rows) of step `k`: row indices with their label.
    fn split_step(&self, h: &RangeHistory, k: usize) -> (LabelledRows, LabelledRows) {
        let (mut train, mut test) = (Vec::new(), Vec::new());
        for i in 0..self.rows.len() {
            let label_slot = self.t[i] + k;
            if label_slot >= self.n_slots {
                continue;
            }
            let label = h
                .counts(h.first_slot + label_slot as u64, self.range[i])
                .accessed();
            if label_slot < self.split {
                train.push((i, label));
            } else {
                test.push((i, label));
            }
        }
        (train, test)
    }

    fn gather(&self, idx: &[(usize, bool)]) -> (Vec<Row>, Vec<bool>) {
        (
            idx.iter().map(|&(i, _)| self.rows[i]).collect(),
            idx.iter().map(|&(_, l)| l).collect(),
        )
    }
}

/// The baseline's score of a row: 1 if the range was accessed in the row's last slot.
fn baseline_score(row: &Row) -> f64 {
    if row[0] > 0.0 || row[HISTORY_SLOTS] > 0.0 {
        1.0
    } else {
        0.0
    }
}

/// Trains the multi-step models on a history and evaluates them on its held-out tail, with the
/// precursors of its training slots ([`TrainingPrecursors::of`] with the same parameters).
pub fn train(
    history: &RangeHistory,
    precursors: &TrainingPrecursors,
    params: &TrainParams,
) -> LeaperResult<(LeaperModel, TrainReport)> {
    let start = Instant::now();
    let ds = Dataset::build(history, precursors, params)?;
    let all: Vec<usize> = (0..FEATURES).collect();
    let mut models: Vec<Box<dyn HotRangeModel>> = Vec::new();
    let mut reports = Vec::new();
    let mut importance = Vec::new();
    for k in 1..=params.steps {
        let (train_idx, test_idx) = ds.split_step(history, k);
        let (rows, labels) = ds.gather(&train_idx);
        let t0 = Instant::now();
        let model = GbdtModel::fit(&rows, &labels, &all, &params.gbdt).map_err(|e| match e {
            LeaperError::Training(m) => LeaperError::Training(format!("step {k}: {m}")),
            other => other,
        })?;
        let train_secs = t0.elapsed().as_secs_f64();
        let (test_rows, test_labels) = ds.gather(&test_idx);
        let scores = model.predict_batch(&test_rows);
        let base: Vec<f64> = test_rows.iter().map(baseline_score).collect();
        reports.push(StepReport {
            step: k,
            train_rows: rows.len(),
            train_positives: labels.iter().filter(|&&l| l).count(),
            test_rows: test_rows.len(),
            test_positives: test_labels.iter().filter(|&&l| l).count(),
            model: Metrics::of(&scores, &test_labels, params.threshold),
            baseline: Metrics::of(&base, &test_labels, 0.5),
            train_secs,
        });
        if k == 1 {
            let gains = model.gain_importance();
            importance = FeatureGroup::ALL
                .iter()
                .map(|&g| GroupImportance {
                    group: g,
                    share: g.columns().map(|c| gains.get(&c).copied().unwrap_or(0.0)).sum(),
                })
                .collect();
        }
        models.push(Box::new(model));
    }
    let meta = ModelMeta {
        range_size: history.range_size,
        slot_secs: history.slot_secs,
        day_secs: params.day_secs,
        threshold: params.threshold,
        epsilon: params.epsilon,
    };
    let precursor_targets = ds.precursors.len();
    let model = LeaperModel::new(meta, ds.precursors, models)?;
    let report = TrainReport {
        slots: history.len(),
        ranges: ds.ranges,
        train_ranges: ds.used_ranges,
        split_slot: ds.split,
        precursor_targets,
        steps: reports,
        importance,
        train_secs: start.elapsed().as_secs_f64(),
    };
    Ok((model, report))
}

/// The feature-group ablation of the step-1 model (Figure 8): R, R/W, R/W/T, R/W/T/P.
pub fn ablation(
    history: &RangeHistory,
    precursors: &TrainingPrecursors,
    params: &TrainParams,
) -> LeaperResult<Vec<AblationRow>> {
    let ds = Dataset::build(history, precursors, params)?;
    let (train_idx, test_idx) = ds.split_step(history, 1);
    let (rows, labels) = ds.gather(&train_idx);
    let (test_rows, test_labels) = ds.gather(&test_idx);
    let mut out = Vec::new();
    for n in 1..=FeatureGroup::ALL.len() {
        let groups = &FeatureGroup::ALL[..n];
        let cols: Vec<usize> = groups.iter().flat_map(|g| g.columns()).collect();
        let t0 = Instant::now();
        let model = GbdtModel::fit(&rows, &labels, &cols, &params.gbdt)?;
        let train_secs = t0.elapsed().as_secs_f64();
        let scores = model.predict_batch(&test_rows);
        out.push(AblationRow {
            groups: groups.iter().map(|g| g.letter()).collect::<Vec<_>>().join("/"),
            columns: cols.len(),
            model: Metrics::of(&scores, &test_labels, params.threshold),
            train_secs,
        });
    }
    Ok(out)
}

/// What a [`LeaperModel`] needs besides its step models: how its features were made.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelMeta {
    /// Keys per key range.
    pub range_size: u64,
    /// Length of a slot, in virtual seconds.
    pub slot_secs: f64,
    /// Length of a "day" in virtual seconds (the time-of-day features).
    pub day_secs: f64,
    /// Probability at or above which a range is hot.
    pub threshold: f64,
    /// Algorithm 2's cosine-similarity threshold `ε` the precursors were chosen with.
    pub epsilon: f64,
}

impl ModelMeta {
    fn validate(&self) -> Result<(), String> {
        if self.range_size == 0 {
            return Err("range_size is 0".into());
        }
        if !(self.slot_secs.is_finite() && self.slot_secs > 0.0) {
            return Err(format!("slot_secs is {}", self.slot_secs));
        }
        if !(self.day_secs.is_finite() && self.day_secs > 0.0) {
            return Err(format!("day_secs is {}", self.day_secs));
        }
        if !(self.threshold > 0.0 && self.threshold < 1.0) {
            return Err(format!("threshold is {}", self.threshold));
        }
        Ok(())
    }
}

/// The trained prefetcher model: the features' parameters, the precursors and `K` step models
/// (step `k` predicts slot `t + k`).
pub struct LeaperModel {
    meta: ModelMeta,
    precursors: Precursors,
    models: Vec<Box<dyn HotRangeModel>>,
}

impl std::fmt::Debug for LeaperModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaperModel")
            .field("meta", &self.meta)
            .field("precursor_targets", &self.precursors.len())
            .field("steps", &self.models.len())
            .finish()
    }
}

const MANIFEST: &str = "leaper.json";
const FORMAT: &str = "lsmlab-leaper";
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Manifest {
    format: String,
    version: u32,
    meta: ModelMeta,
    precursors: Precursors,
    models: Vec<ManifestModel>,
}

#[derive(Serialize, Deserialize)]
struct ManifestModel {
    kind: String,
    file: String,
}

impl LeaperModel {
    /// A model of `meta` (validated), `precursors` and the step models, step 1 first; fails without
    /// a step model.
    pub fn new(
        meta: ModelMeta,
        precursors: Precursors,
        models: Vec<Box<dyn HotRangeModel>>,
    ) -> LeaperResult<Self> {
        meta.validate().map_err(LeaperError::Invalid)?;
        if models.is_empty() {
            return Err(LeaperError::Invalid(
                "a Leaper model needs at least one step model".into(),
            ));
        }
        Ok(LeaperModel {
            meta,
            precursors,
            models,
        })
    }

    /// How the model's features are made.
    pub fn meta(&self) -> &ModelMeta {
        &self.meta
    }

    /// The precursors the features read.
    pub fn precursors(&self) -> &Precursors {
        &self.precursors
    }

    /// Number of step models `K`.
    pub fn steps(&self) -> usize {
        self.models.len()
    }

    /// The model of step `k` (1-based).
    pub fn model(&self, k: usize) -> Option<&dyn HotRangeModel> {
        k.checked_sub(1)
            .and_then(|i| self.models.get(i))
            .map(|m| m.as_ref())
    }

    /// (trees, nodes) of every step model together.
    pub fn size(&self) -> (u64, u64) {
        self.models
            .iter()
            .map(|m| m.size())
            .fold((0, 0), |(t, n), (a, b)| (t + a, n + b))
    }

    /// Nodes that predicting `rows` with step `k` (clamped as [`Self::predict`]) visits.
    pub fn nodes_visited(&self, k: usize, rows: &[Row]) -> u64 {
        let i = k.clamp(1, self.models.len()) - 1;
        self.models[i].nodes_visited(rows)
    }

    /// Probabilities of step `k` (1-based, clamped to `1..=K`) for `rows`.
    pub fn predict(&self, k: usize, rows: &[Row]) -> Vec<f64> {
        let i = k.clamp(1, self.models.len()) - 1;
        self.models[i].predict_batch(rows)
    }

    /// Writes the model into directory `dir` (created if absent): `leaper.json` and one file per
    /// step model.
    pub fn save(&self, dir: &Path) -> LeaperResult<()> {
        let io = |path: PathBuf| move |source| LeaperError::Io { path, source };
        std::fs::create_dir_all(dir).map_err(io(dir.into()))?;
        let mut entries = Vec::new();
        for (i, m) in self.models.iter().enumerate() {
            let file = format!("step-{}.json", i + 1);
            m.save(&dir.join(&file))?;
            entries.push(ManifestModel {
                kind: m.name().to_string(),
                file,
            });
        }
        let manifest = Manifest {
            format: FORMAT.into(),
            version: VERSION,
            meta: self.meta,
            precursors: self.precursors.clone(),
            models: entries,
        };
        let text =
            serde_json::to_string_pretty(&manifest).map_err(|e| LeaperError::Invalid(e.to_string()))?;
        let path = dir.join(MANIFEST);
        std::fs::write(&path, text).map_err(io(path.clone()))
    }

    /// Reads a model directory written by [`LeaperModel::save`].
    pub fn load(dir: &Path) -> LeaperResult<Self> {
        let path = dir.join(MANIFEST);
        let corrupt = |reason: String| LeaperError::CorruptModel {
            path: path.clone(),
            reason,
        };
        let text = std::fs::read_to_string(&path).map_err(|source| LeaperError::Io {
            path: path.clone(),
            source,
        })?;
        let m: Manifest =
            serde_json::from_str(&text).map_err(|e| corrupt(format!("not a Leaper manifest: {e}")))?;
        if m.format != FORMAT || m.version != VERSION {
            return Err(corrupt(format!(
                "format {:?} version {}, expected {FORMAT:?} version {VERSION}",
                m.format, m.version
            )));
        }
        m.meta.validate().map_err(corrupt)?;
        if m.models.is_empty() {
            return Err(corrupt("no step models".into()));
        }
        let mut models: Vec<Box<dyn HotRangeModel>> = Vec::new();
        for e in &m.models {
            let plain = !e.file.is_empty()
                && Path::new(&e.file)
                    .file_name()
                    .is_some_and(|f| f == e.file.as_str());
            if !plain {
                return Err(corrupt(format!(
                    "model file {:?} is not a file name inside the model directory",
                    e.file
                )));
            }
            match e.kind.as_str() {
                "forust-gbdt" => models.push(Box::new(GbdtModel::load(&dir.join(&e.file))?)),
                other => return Err(corrupt(format!("unknown model kind {other:?}"))),
            }
        }
        Ok(LeaperModel {
            meta: m.meta,
            precursors: m.precursors,
            models,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `n` slots over ranges 0..60: ranges 0..10 read every slot, ranges 10..30 read only in
    /// slots of their parity (range r in slots s with s % 2 == r % 2), ranges 30..60 never
    /// (range 59 once in slot 0, so the key space reaches it). Writes on the always-hot ranges.
    pub(crate) fn periodic_history(n: usize) -> RangeHistory {
        let mut h = RangeHistory::new(100, 10.0, 0, n).unwrap();
        for s in 0..n {
            for r in 0..10u64 {
                h.add(s, r, 5.0 + (r % 3) as f64, 1.0);
            }
            for r in 10..30u64 {
                if s as u64 % 2 == r % 2 {
                    h.add(s, r, 3.0, 0.0);
                }
            }
        }
        h.add(0, 59, 1.0, 0.0);
        h
    }

    /// Trains on a hand-built history, which has no access log and so no precursors.
    pub(crate) fn train_without_log(
        h: &RangeHistory,
        params: &TrainParams,
    ) -> LeaperResult<(LeaperModel, TrainReport)> {
        train(h, &TrainingPrecursors::of(h, std::iter::empty, params)?, params)
    }

    fn no_precursors(h: &RangeHistory, params: &TrainParams) -> TrainingPrecursors {
        TrainingPrecursors::of(h, std::iter::empty, params).unwrap()
    }

    fn quick() -> TrainParams {
        TrainParams {
            steps: 2,
            gbdt: GbdtParams {
                rounds: 30,
                ..GbdtParams::default()
            },
            ..TrainParams::default()
        }
    }

    #[test]
    fn metrics_and_auc_by_hand() {
        let m = Metrics::of(
            &[0.9, 0.8, 0.3, 0.1, 0.6],
            &[true, false, true, false, false],
            0.5,
        );
        assert_eq!((m.tp, m.fp, m.fn_, m.tn), (1, 2, 1, 1));
        assert_eq!(m.precision, 1.0 / 3.0);
        assert_eq!(m.recall, 0.5);
        // Positives 0.9 and 0.3 against negatives 0.8, 0.1, 0.6: pairs won 3 + 1 of 6.
        assert_eq!(m.auc, Some(4.0 / 6.0));
        // A binary score: ties count half.
        assert_eq!(auc(&[1.0, 1.0, 0.0, 0.0], &[true, false, true, false]), Some(0.5));
        assert_eq!(auc(&[1.0, 0.0], &[true, true]), None);
    }

    #[test]
    fn learns_always_hot_and_periodic_ranges_and_beats_the_baseline() {
        let h = periodic_history(40);
        let (model, report) = train_without_log(&h, &quick()).unwrap();
        assert_eq!(model.steps(), 2);
        assert_eq!(report.ranges, 60);
        // 34 label slots, 25% held out: 9 test slots, split at 31.
        assert_eq!(report.split_slot, 31);
        let s1 = &report.steps[0];
        // Rows t = 5..=38; step 1 labels slot t + 1: 25 training slots (6..=30), 9 test slots.
        assert_eq!((s1.train_rows, s1.test_rows), (25 * 60, 9 * 60));
        // Per test slot 10 always-hot + 10 periodic ranges are accessed.
        assert_eq!(s1.test_positives, 9 * 20);
        assert!(s1.model.recall > 0.9 && s1.model.precision > 0.9, "{s1:?}");
        // The baseline says "hot" for the periodic ranges exactly when they are not accessed next.
        assert_eq!(s1.baseline.recall, 0.5);
        assert_eq!(s1.baseline.precision, 0.5);
        assert!(s1.model.auc.unwrap() > s1.baseline.auc.unwrap());
        // Step 2: periodic ranges come back after two slots, so the baseline is right there.
        let s2 = &report.steps[1];
        assert_eq!(s2.baseline.recall, 1.0);
        assert!(s2.model.recall > 0.9 && s2.model.precision > 0.9, "{s2:?}");
        // Importance shares of the four groups sum to 1, reads dominate.
        let total: f64 = report.importance.iter().map(|g| g.share).sum();
        assert!((total - 1.0).abs() < 1e-4, "{:?}", report.importance);
        assert!(report.importance[0].share > 0.5, "{:?}", report.importance);
    }

    #[test]
    fn max_rows_trains_on_a_fixed_subset_of_whole_ranges() {
        let h = periodic_history(40);
        // 34 rows per range (t = 5..=38); 600 rows allow 17 of the 60 ranges.
        let bounded = TrainParams {
            max_rows: 600,
            ..quick()
        };
        let (_, report) = train_without_log(&h, &bounded).unwrap();
        assert_eq!((report.ranges, report.train_ranges), (60, 17));
        let s1 = &report.steps[0];
        assert_eq!((s1.train_rows, s1.test_rows), (25 * 17, 9 * 17));
        // Every slot of a chosen range, none of another: the same subset for every step.
        let ds = Dataset::build(&h, &no_precursors(&h, &bounded), &bounded).unwrap();
        let mut ranges: Vec<u64> = ds.range.clone();
        ranges.sort_unstable();
        ranges.dedup();
        assert_eq!(ranges.len(), 17);
        for &r in &ranges {
            assert_eq!(ds.range.iter().filter(|&&x| x == r).count(), 34, "range {r}");
        }
        // Not a run of neighbours: the chosen ranges spread over the key order.
        assert!(ranges[0] < 20 && ranges[16] >= 40, "{ranges:?}");
        // A bound above the rows, and 0, change nothing.
        for max_rows in [0, 60 * 34] {
            let (_, r) = train_without_log(&h, &TrainParams { max_rows, ..quick() }).unwrap();
            assert_eq!(r.train_ranges, 60);
            assert_eq!(r.steps[0].train_rows, 25 * 60);
        }
        // A bound below one range's rows still keeps one range.
        let five = TrainParams {
            max_rows: 5,
            ..quick()
        };
        let one = Dataset::build(&h, &no_precursors(&h, &five), &five).unwrap();
        assert_eq!(one.used_ranges, 1);
    }

    #[test]
    fn model_directory_round_trip_and_corruption() {
        let h = periodic_history(30);
        let (model, _) = train_without_log(&h, &quick()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        model.save(dir.path()).unwrap();
        let back = LeaperModel::load(dir.path()).unwrap();
        assert_eq!(back.meta(), model.meta());
        assert_eq!(back.precursors(), model.precursors());
        let rows: Vec<Row> = (0..50)
            .map(|i| {
                let mut r = [0.0; FEATURES];
                r[i % FEATURES] = (i % 7) as f64;
                r
            })
            .collect();
        for k in 1..=2 {
            let (a, b) = (model.predict(k, &rows), back.predict(k, &rows));
            assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
        }
        // Corrupt step file, corrupt manifest, unknown kind, escaping file name, missing dir.
        std::fs::write(dir.path().join("step-2.json"), "{ not json").unwrap();
        let e = LeaperModel::load(dir.path()).unwrap_err();
        assert!(
            matches!(e, LeaperError::CorruptModel { ref path, .. } if path.ends_with("step-2.json")),
            "{e}"
        );
        let manifest = dir.path().join(MANIFEST);
        let text = std::fs::read_to_string(&manifest).unwrap();
        std::fs::write(&manifest, text.replace("forust-gbdt", "mystery")).unwrap();
        assert!(LeaperModel::load(dir.path())
            .unwrap_err()
            .to_string()
            .contains("unknown model kind"));
        std::fs::write(&manifest, text.replace("step-1.json", "../step-1.json")).unwrap();
        assert!(LeaperModel::load(dir.path())
            .unwrap_err()
            .to_string()
            .contains("not a file name"));
        std::fs::write(&manifest, &text[..text.len() / 2]).unwrap();
        assert!(matches!(
            LeaperModel::load(dir.path()),
            Err(LeaperError::CorruptModel { .. })
        ));
        assert!(matches!(
            LeaperModel::load(&dir.path().join("nope")),
            Err(LeaperError::Io { .. })
        ));
    }

    #[test]
    fn short_or_single_class_histories_are_errors() {
        let e = train_without_log(&periodic_history(8), &quick()).unwrap_err();
        assert!(matches!(e, LeaperError::Training(_)), "{e}");
        let mut h = RangeHistory::new(100, 10.0, 0, 30).unwrap();
        for s in 0..30 {
            h.add(s, 3, 1.0, 0.0);
        }
        // One range accessed every slot: every label is positive.
        let e = train_without_log(&h, &quick()).unwrap_err();
        assert!(e.to_string().contains("both classes"), "{e}");
        assert!(train_without_log(&periodic_history(30), &TrainParams { steps: 0, ..quick() }).is_err());
    }

    #[test]
    fn precursors_predict_what_a_ranges_own_history_cannot() {
        // Ranges 0..10 are read at random (probability 0.6 per slot); range 20 + i is read in
        // slot s + 1 exactly when range i was read in slot s, and right after it in the access
        // stream (the transfers). Range 20 + i's own history says nothing about its next slot;
        // its precursor's last slot says everything. Each pair is followed in the log by reads of
        // ranges 50..53, never read in the history (cosine 0), so the window of 3 before any
        // access holds no other candidate Algorithm 2 would accept.
        let n = 60;
        let mut rng = crate::leaper::collector::SplitMix64::new(11);
        let mut h = RangeHistory::new(100, 10.0, 0, n).unwrap();
        let mut log = Vec::new();
        let mut prev = [false; 10];
        for s in 0..n {
            let mut now = [false; 10];
            let t = s as f64 * 10.0 + 5.0;
            for i in 0..10u64 {
                if prev[i as usize] {
                    h.add(s, 20 + i, 2.0, 0.0);
                    for key in [i * 100, (20 + i) * 100, 5_000, 5_100, 5_200] {
                        log.push(AccessRecord::read(t, key));
                    }
                }
                now[i as usize] = rng.next_f64() < 0.6;
                if now[i as usize] {
                    h.add(s, i, 4.0, 0.0);
                }
            }
            prev = now;
        }
        let params = TrainParams {
            steps: 1,
            epsilon: 0.3,
            ..quick()
        };
        let precursors = TrainingPrecursors::of(&h, || log.iter().copied(), &params).unwrap();
        let (model, report) = train(&h, &precursors, &params).unwrap();
        for i in 0..10 {
            assert_eq!(model.precursors().get(20 + i), &[i], "range {}", 20 + i);
        }
        assert!(model.precursors().get(3).is_empty());
        let p = report
            .importance
            .iter()
            .find(|g| g.group == FeatureGroup::Precursor)
            .unwrap();
        assert!(p.share > 0.3, "{:?}", report.importance);
        let rows = ablation(&h, &precursors, &params).unwrap();
        let (without, with) = (rows[2].model.auc.unwrap(), rows[3].model.auc.unwrap());
        assert!(with > without + 0.1, "R/W/T AUC {without}, R/W/T/P AUC {with}");
        // The followers are predicted from their precursors: every follower row right.
        let (ds, k) = (Dataset::build(&h, &precursors, &params).unwrap(), 1);
        let (_, test) = ds.split_step(&h, k);
        let followers: Vec<(usize, bool)> = test.into_iter().filter(|&(i, _)| ds.range[i] >= 20).collect();
        let (rows, labels) = ds.gather(&followers);
        let m = Metrics::of(&model.predict(1, &rows), &labels, 0.5);
        assert_eq!((m.fp, m.fn_), (0, 0), "{m:?}");
        assert!(m.tp > 20, "{m:?}");
        // Precursors computed for other parameters are refused.
        let other = TrainParams {
            epsilon: 0.5,
            ..params.clone()
        };
        let e = train(&h, &precursors, &other).unwrap_err();
        assert!(e.to_string().contains("precursors computed for"), "{e}");
    }

    #[test]
    fn ablation_reports_the_four_groups() {
        let h = periodic_history(30);
        let params = TrainParams {
            gbdt: GbdtParams {
                rounds: 10,
                ..GbdtParams::default()
            },
            ..quick()
        };
        let rows = ablation(&h, &no_precursors(&h, &params), &params).unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.groups.as_str()).collect();
        assert_eq!(names, ["R", "R/W", "R/W/T", "R/W/T/P"]);
        assert_eq!(
            rows.iter().map(|r| r.columns).collect::<Vec<_>>(),
            [6, 12, 15, 18]
        );
        // Reads alone already separate the pattern.
        assert!(rows[0].model.recall > 0.9, "{rows:?}");
    }
}
