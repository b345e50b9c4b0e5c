//! The classifier (§4.3): a [`HotRangeModel`] trait and its gradient-boosted decision trees on
//! the `forust-ml` crate.
//!
//! The paper trains LightGBM with `num_leaves = 31`, `learning_rate = 0.05`,
//! `bagging_fraction = 0.8`, `feature_fraction = 0.9` and a logarithmic loss. `forust-ml` 0.8 maps
//! onto those settings as follows:
//! - `num_leaves = 31`: `max_leaves = 31` with `GrowPolicy::LossGuide`, which grows the leaf of
//!   largest loss reduction first, as LightGBM's leaf-wise growth does, and no depth limit
//!   (`max_depth = usize::MAX`, LightGBM's `-1`);
//! - `bagging_fraction = 0.8`: `subsample = 0.8` with `SampleMethod::Random` (forust ignores
//!   `subsample` unless a sample method is set). Each row is kept with probability 0.8 afresh for
//!   every tree, as LightGBM with `bagging_freq = 1` does;
//! - `feature_fraction = 0.9`: `colsample_bytree = 0.9` (forust draws `floor(0.9 * columns)`
//!   columns per tree: 16 of 18);
//! - log loss: `ObjectiveType::LogLoss`; the initial score is the log-odds of the labels
//!   (`initialize_base_score`, LightGBM's `boost_from_average`);
//! - LightGBM's `min_data_in_leaf = 20` has no forust counterpart; forust's `min_leaf_weight`
//!   (minimum hessian sum of a leaf) keeps its default 1.0, and its L2 term its default 1.0
//!   (LightGBM's `lambda_l2` default is 0);
//! - a fixed number of rounds (no early stopping) and a fixed seed. Training runs single-threaded
//!   (`parallel = false`) so that it is deterministic regardless of the machine.
//!
//! A model file is JSON: a small envelope (format name, version, the feature columns the booster
//! reads) around forust's own serialisation of the booster, whose floats round-trip exactly
//! (forust enables serde_json's `float_roundtrip`), so a loaded model predicts bit-identically.

use super::features::{Row, FEATURES};
use super::{LeaperError, LeaperResult};
use forust_ml::gradientbooster::GrowPolicy;
use forust_ml::objective::ObjectiveType;
use forust_ml::sampler::SampleMethod;
use forust_ml::{GradientBooster, Matrix};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// A classifier of feature rows: the probability that a key range is accessed.
pub trait HotRangeModel: Send + Sync {
    /// The model's kind, as written in model files.
    fn name(&self) -> &'static str;

    /// The probability that the row's range is accessed in the step the model predicts.
    fn predict(&self, row: &Row) -> f64;

    /// Probabilities of many rows (the same values as [`HotRangeModel::predict`] row by row).
    fn predict_batch(&self, rows: &[Row]) -> Vec<f64> {
        rows.iter().map(|r| self.predict(r)).collect()
    }

    /// Writes the model to a file.
    fn save(&self, path: &Path) -> LeaperResult<()>;

    /// The model's size as counted structure: (trees, nodes); (0, 0) if the model has no trees.
    fn size(&self) -> (u64, u64) {
        (0, 0)
    }

    /// Nodes a prediction of `rows` visits (in every tree, the root to the leaf reached,
    /// both included): the counted work of inference, independent of the machine; 0 if the
    /// model has no trees.
    fn nodes_visited(&self, rows: &[Row]) -> u64 {
        let _ = rows;
        0
    }
}

/// The GBDT's training parameters (defaults: the paper's LightGBM settings, see the module
/// documentation, with 100 rounds and seed 42).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GbdtParams {
    /// Boosting rounds (trees).
    pub rounds: usize,
    /// Shrinkage applied to each tree.
    pub learning_rate: f32,
    /// Leaves per tree (LightGBM's `num_leaves`).
    pub max_leaves: usize,
    /// Share of the rows each tree is trained on (LightGBM's `bagging_fraction`).
    pub subsample: f32,
    /// Share of the columns each tree may split on (LightGBM's `feature_fraction`).
    pub colsample: f64,
    /// Seed of the row and column sampling.
    pub seed: u64,
    /// Histogram bins per feature.
    pub nbins: u16,
}

impl Default for GbdtParams {
    fn default() -> Self {
        GbdtParams {
            rounds: 100,
            learning_rate: 0.05,
            max_leaves: 31,
            subsample: 0.8,
            colsample: 0.9,
            seed: 42,
            nbins: 256,
        }
    }
}

impl GbdtParams {
    /// Checks the parameters; the error names the bad one.
    pub fn validate(&self) -> LeaperResult<()> {
        let bad = |what: String| Err(LeaperError::Invalid(what));
        if self.rounds == 0 {
            return bad("rounds must be at least 1".into());
        }
        if !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            return bad(format!(
                "learning_rate must be positive, got {}",
                self.learning_rate
            ));
        }
        if self.max_leaves < 2 {
            return bad(format!("max_leaves must be at least 2, got {}", self.max_leaves));
        }
        if !(self.subsample > 0.0 && self.subsample <= 1.0) {
            return bad(format!("subsample must lie in (0, 1], got {}", self.subsample));
        }
        if !(self.colsample > 0.0 && self.colsample <= 1.0) {
            return bad(format!("colsample must lie in (0, 1], got {}", self.colsample));
        }
        if self.nbins < 2 {
            return bad(format!("nbins must be at least 2, got {}", self.nbins));
        }
        Ok(())
    }
}

const GBDT_FORMAT: &str = "lsmlab-leaper-gbdt";
const GBDT_VERSION: u32 = 1;

#[derive(Serialize)]
struct EnvelopeOut<'a> {
    format: &'a str,
    version: u32,
    columns: &'a [usize],
    booster: &'a GradientBooster,
}

#[derive(Deserialize)]
struct EnvelopeIn {
    format: String,
    version: u32,
    columns: Vec<usize>,
    booster: GradientBooster,
}

/// A forust-ml gradient-boosted classifier over some of the 18 feature columns (all of them,
/// except in the ablation study).
pub struct GbdtModel {
    booster: GradientBooster,
    columns: Vec<usize>,
}

impl std::fmt::Debug for GbdtModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GbdtModel")
            .field("columns", &self.columns)
            .field("trees", &self.booster.trees.len())
            .finish()
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

impl GbdtModel {
    /// Trains on `rows` (their `columns` only) with 0/1 `labels`.
    pub fn fit(
        rows: &[Row],
        labels: &[bool],
        columns: &[usize],
        params: &GbdtParams,
    ) -> LeaperResult<GbdtModel> {
        params.validate()?;
        if rows.len() != labels.len() {
            return Err(LeaperError::Invalid(format!(
                "{} rows but {} labels",
                rows.len(),
                labels.len()
            )));
        }
        if columns.is_empty() || columns.iter().any(|&c| c >= FEATURES) {
            return Err(LeaperError::Invalid(format!(
                "columns {columns:?} must be a non-empty subset of 0..{FEATURES}"
            )));
        }
        let positives = labels.iter().filter(|&&l| l).count();
        if positives == 0 || positives == labels.len() {
            return Err(LeaperError::Training(format!(
                "{positives} of {} training labels are positive: a classifier needs both classes",
                labels.len()
            )));
        }
        let data = column_major(rows, columns);
        let y: Vec<f64> = labels.iter().map(|&l| if l { 1.0 } else { 0.0 }).collect();
        let matrix = Matrix::new(&data, rows.len(), columns.len());
        let mut booster = GradientBooster::default()
            .set_objective_type(ObjectiveType::LogLoss)
            .set_iterations(params.rounds)
            .set_learning_rate(params.learning_rate)
            .set_max_leaves(params.max_leaves)
            .set_max_depth(usize::MAX)
            .set_nbins(params.nbins)
            .set_subsample(params.subsample)
            .set_sample_method(if params.subsample < 1.0 {
                SampleMethod::Random
            } else {
                SampleMethod::None
            })
            .set_colsample_bytree(params.colsample)
            .set_seed(params.seed)
            .set_initialize_base_score(true)
            .set_parallel(false);
        booster.grow_policy = GrowPolicy::LossGuide;
        booster
            .fit_unweighted(&matrix, &y, None)
            .map_err(|e| LeaperError::Gbdt(e.to_string()))?;
        Ok(GbdtModel {
            booster,
            columns: columns.to_vec(),
        })
    }

    /// Reads a model file written by [`HotRangeModel::save`].
    pub fn load(path: &Path) -> LeaperResult<GbdtModel> {
        let text = std::fs::read_to_string(path).map_err(|source| LeaperError::Io {
            path: path.into(),
            source,
        })?;
        Self::from_json(&text).map_err(|reason| LeaperError::CorruptModel {
            path: path.into(),
            reason,
        })
    }

    /// Parses and checks a model: the envelope, then every tree (split features inside the
    /// columns, children after their parent, so prediction terminates).
    pub fn from_json(text: &str) -> Result<GbdtModel, String> {
        let env: EnvelopeIn = serde_json::from_str(text).map_err(|e| format!("not a GBDT model: {e}"))?;
        if env.format != GBDT_FORMAT {
            return Err(format!("format {:?}, expected {GBDT_FORMAT:?}", env.format));
        }
        if env.version != GBDT_VERSION {
            return Err(format!("version {}, expected {GBDT_VERSION}", env.version));
        }
        if env.columns.is_empty() || env.columns.iter().any(|&c| c >= FEATURES) {
            return Err(format!(
                "columns {:?} are not a subset of 0..{FEATURES}",
                env.columns
            ));
        }
        if !matches!(env.booster.objective_type, ObjectiveType::LogLoss) {
            return Err("the booster is not a log-loss classifier".into());
        }
        if env.booster.trees.is_empty() {
            return Err("the booster has no trees".into());
        }
        for (t, tree) in env.booster.trees.iter().enumerate() {
            if tree.nodes.is_empty() {
                return Err(format!("tree {t} has no nodes"));
            }
            for (i, n) in tree.nodes.iter().enumerate() {
                if n.is_leaf {
                    continue;
                }
                let children = [n.left_child, n.right_child, n.missing_node];
                if n.split_feature >= env.columns.len()
                    || children.iter().any(|&c| c <= i || c >= tree.nodes.len())
                {
                    return Err(format!("tree {t} node {i} is malformed"));
                }
            }
        }
        Ok(GbdtModel {
            booster: env.booster,
            columns: env.columns,
        })
    }

    /// The JSON a model file holds.
    pub fn to_json(&self) -> LeaperResult<String> {
        let env = EnvelopeOut {
            format: GBDT_FORMAT,
            version: GBDT_VERSION,
            columns: &self.columns,
            booster: &self.booster,
        };
        serde_json::to_string(&env).map_err(|e| LeaperError::Gbdt(e.to_string()))
    }

    /// The feature columns the booster reads.
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// Trees in the booster.
    pub fn trees(&self) -> usize {
        self.booster.trees.len()
    }

    /// Total split gain per feature column (of the 18), normalised to sum to 1 (forust's
    /// `ImportanceMethod::TotalGain`); columns never split on are absent.
    pub fn gain_importance(&self) -> HashMap<usize, f64> {
        self.booster
            .calculate_feature_importance(forust_ml::gradientbooster::ImportanceMethod::TotalGain, true)
            .into_iter()
            .map(|(k, v)| (self.columns[k], v as f64))
            .collect()
    }
}

fn column_major(rows: &[Row], columns: &[usize]) -> Vec<f64> {
    let mut data = Vec::with_capacity(rows.len() * columns.len());
    for &c in columns {
        data.extend(rows.iter().map(|r| r[c]));
    }
    data
}

impl HotRangeModel for GbdtModel {
    fn name(&self) -> &'static str {
        "forust-gbdt"
    }

    fn predict(&self, row: &Row) -> f64 {
        self.predict_batch(std::slice::from_ref(row))[0]
    }

    fn predict_batch(&self, rows: &[Row]) -> Vec<f64> {
        if rows.is_empty() {
            return Vec::new();
        }
        let data = column_major(rows, &self.columns);
        let matrix = Matrix::new(&data, rows.len(), self.columns.len());
        self.booster
            .predict(&matrix, false)
            .into_iter()
            .map(sigmoid)
            .collect()
    }

    fn size(&self) -> (u64, u64) {
        let nodes = self.booster.trees.iter().map(|t| t.nodes.len() as u64).sum();
        (self.booster.trees.len() as u64, nodes)
    }

    /// Walks every tree as forust's prediction does (`Node::get_child_idx` on the row's value of
    /// the node's column, forust's missing value), counting the nodes on the way.
    fn nodes_visited(&self, rows: &[Row]) -> u64 {
        let missing = self.booster.missing;
        let mut visited = 0;
        for row in rows {
            for tree in &self.booster.trees {
                let mut i = 0;
                loop {
                    visited += 1;
                    let node = &tree.nodes[i];
                    if node.is_leaf {
                        break;
                    }
                    let v = row[self.columns[node.split_feature]];
                    i = node.get_child_idx(&v, &missing);
                }
            }
        }
        visited
    }

    fn save(&self, path: &Path) -> LeaperResult<()> {
        std::fs::write(path, self.to_json()?).map_err(|source| LeaperError::Io {
            path: path.into(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leaper::collector::SplitMix64;

    /// Rows whose label is "column 0 above 5 or column 15 above 2", with noise columns.
    pub(crate) fn toy(n: usize, seed: u64) -> (Vec<Row>, Vec<bool>) {
        let mut rng = SplitMix64::new(seed);
        let mut rows = Vec::new();
        let mut labels = Vec::new();
        for _ in 0..n {
            let mut r = [0.0; FEATURES];
            for v in r.iter_mut() {
                *v = (rng.next_u64() % 10) as f64;
            }
            labels.push(r[0] > 5.0 || r[15] > 2.0 && r[3] < 2.0);
            rows.push(r);
        }
        (rows, labels)
    }

    #[test]
    fn learns_and_round_trips_bit_identically() {
        let (rows, labels) = toy(2000, 1);
        let all: Vec<usize> = (0..FEATURES).collect();
        let params = GbdtParams {
            rounds: 60,
            ..GbdtParams::default()
        };
        let m = GbdtModel::fit(&rows, &labels, &all, &params).unwrap();
        assert_eq!(m.trees(), 60);
        let (test, truth) = toy(500, 2);
        let p = m.predict_batch(&test);
        let correct = p.iter().zip(&truth).filter(|(p, &t)| (**p >= 0.5) == t).count();
        assert!(correct > 450, "{correct} of 500");
        // Single-row prediction agrees with the batch.
        assert_eq!(m.predict(&test[7]), p[7]);
        // Round trip through a file: identical predictions, bit for bit.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        m.save(&path).unwrap();
        let back = GbdtModel::load(&path).unwrap();
        let q = back.predict_batch(&test);
        assert!(p.iter().zip(&q).all(|(a, b)| a.to_bits() == b.to_bits()));
        // Importance: column 0 carries most of the gain; shares sum to 1.
        let imp = m.gain_importance();
        let best = imp.iter().max_by(|a, b| a.1.total_cmp(b.1)).unwrap();
        assert_eq!(*best.0, 0);
        assert!((imp.values().sum::<f64>() - 1.0).abs() < 1e-4);
    }

    #[test]
    fn nodes_visited_follow_the_paths_forust_predicts_by() {
        let (rows, labels) = toy(1500, 5);
        let cols = [0, 3, 15, 7];
        let params = GbdtParams {
            rounds: 20,
            ..GbdtParams::default()
        };
        let m = GbdtModel::fit(&rows, &labels, &cols, &params).unwrap();
        let (trees, nodes) = m.size();
        assert_eq!(trees, 20);
        assert!(nodes > 3 * trees && nodes <= trees * 61, "{nodes}");
        let (test, _) = toy(200, 6);
        let mut total = 0;
        for row in &test {
            // The oracle: the same walk summing leaf weights gives forust's prediction.
            let mut raw = m.booster.base_score;
            let mut visited = 0;
            for tree in &m.booster.trees {
                let mut i = 0;
                while !tree.nodes[i].is_leaf {
                    visited += 1;
                    let n = &tree.nodes[i];
                    i = if row[cols[n.split_feature]] < n.split_value {
                        n.left_child
                    } else {
                        n.right_child
                    };
                }
                visited += 1;
                raw += tree.nodes[i].weight_value as f64;
            }
            assert!((sigmoid(raw) - m.predict(row)).abs() < 1e-9);
            assert_eq!(m.nodes_visited(std::slice::from_ref(row)), visited);
            assert!(visited >= 2 * trees && visited <= nodes);
            total += visited;
        }
        assert_eq!(m.nodes_visited(&test), total);
    }

    #[test]
    fn training_is_deterministic() {
        let (rows, labels) = toy(800, 3);
        let cols = [0, 3, 15];
        let params = GbdtParams {
            rounds: 20,
            ..GbdtParams::default()
        };
        let a = GbdtModel::fit(&rows, &labels, &cols, &params).unwrap();
        let b = GbdtModel::fit(&rows, &labels, &cols, &params).unwrap();
        assert_eq!(a.to_json().unwrap(), b.to_json().unwrap());
        let c = GbdtModel::fit(&rows, &labels, &cols, &GbdtParams { seed: 9, ..params }).unwrap();
        assert_ne!(
            a.to_json().unwrap(),
            c.to_json().unwrap(),
            "the seed drives bagging"
        );
    }

    #[test]
    fn bad_files_and_inputs_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = GbdtModel::load(&dir.path().join("none.json")).unwrap_err();
        assert!(matches!(missing, LeaperError::Io { .. }), "{missing}");
        let path = dir.path().join("bad.json");
        std::fs::write(&path, "{\"format\": \"lsmlab-leaper-gbdt\", \"version\": 1").unwrap();
        let e = GbdtModel::load(&path).unwrap_err();
        assert!(
            matches!(e, LeaperError::CorruptModel { .. }) && e.to_string().contains("bad.json"),
            "{e}"
        );
        // A valid model with a tampered tree (a split on a column it does not read).
        let (rows, labels) = toy(300, 4);
        let m = GbdtModel::fit(
            &rows,
            &labels,
            &[0, 15],
            &GbdtParams {
                rounds: 3,
                ..GbdtParams::default()
            },
        )
        .unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&m.to_json().unwrap()).unwrap();
        v["booster"]["trees"][0]["nodes"][0]["split_feature"] = 7.into();
        assert!(GbdtModel::from_json(&v.to_string())
            .unwrap_err()
            .contains("malformed"));
        v["format"] = "other".into();
        assert!(GbdtModel::from_json(&v.to_string()).is_err());
        // One class only, mismatched lengths, bad parameters.
        assert!(matches!(
            GbdtModel::fit(&rows, &vec![false; rows.len()], &[0], &GbdtParams::default()),
            Err(LeaperError::Training(_))
        ));
        assert!(GbdtModel::fit(&rows, &labels[1..], &[0], &GbdtParams::default()).is_err());
        assert!(GbdtModel::fit(&rows, &labels, &[18], &GbdtParams::default()).is_err());
        assert!(GbdtModel::fit(
            &rows,
            &labels,
            &[0],
            &GbdtParams {
                subsample: 0.0,
                ..GbdtParams::default()
            }
        )
        .is_err());
    }
}
