//! The prefetcher (§3.2, §5.2, §6.2) as the store's [`WarmUpPolicy`].
//!
//! - Every foreground access feeds the [`Collector`] (sampled with `P`, the most recent slots
//!   kept).
//! - **Flush** (§3.2): one prediction, by the step-1 model, for the key ranges the flush holds
//!   (`BackgroundStart::keys`); each output block overlapping a hot range is admitted.
//! - **Compaction**, two phases (§6.2, Figure 5): `T1 = α · N` (`N` = blocks to merge, `α` seconds
//!   per block) and `T2` (the paper's `β · Q / S`, given precomputed). With slot length `t`,
//!   `k1 = max(1, ceil(T1 / t))` and `k2 = max(1, ceil(T2 / t))`; Eq. 4 combines the step models:
//!   `hot_T1 = hot_1 ∪ ... ∪ hot_k1`, `hot_T2 = hot_(k1+1) ∪ ... ∪ hot_(k1+k2)`. Steps beyond the
//!   `K` trained models are dropped (the paper trains `C` spare models for this case, Eq. 2); if
//!   every T2 step lies beyond `K`, step `K` stands in for them (counted in
//!   [`LeaperStats::steps_clamped`]). Phase 1 evicts each cached input block that overlaps no
//!   range of `hot_T1`; phase 2 admits each output block that overlaps `hot_T2`, as the block is
//!   completed (no extra I/O: the store holds its bytes).
//!
//! The features of a prediction at time `now` (slot `s`) are those of [`super::features`] with
//! `s - 1` as the last complete slot and `now` as the prediction time; step `i` stands for the
//! `i`-th slot-length interval from `now` (the training rows' step `i` is the `i`-th slot after
//! the last complete one, so online the steps lag by the elapsed part of slot `s`).
//!
//! Only ranges with a non-zero count feature can differ from one another: a range with no access
//! in the last 6 slots and no precursor read in the last slot has the all-zero row (with the
//! prediction's time), predicted once per step. So the model is run on the active ranges inside
//! the operation's key span plus that one row; if the all-zero row is predicted hot, every other
//! range of the span is hot too. Each prediction is exact, not an approximation.

use super::collector::{slot_of, Collector, CollectorConfig, CollectorStats};
use super::features::{features_at, Row, HISTORY_SLOTS};
use super::overlap::{overlapping_blocks, HotSet};
use super::train::LeaperModel;
use super::{LeaperError, LeaperResult};
use crate::cache::BufferCache;
use crate::kvstore::{Access, Background, BackgroundStart, BlockInfo, WarmUpPolicy};
use crate::Result;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

/// The prefetcher's online parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LeaperParams {
    /// `α` of `T1 = α · N`: virtual seconds per block to merge.
    pub alpha_secs_per_block: f64,
    /// `T2`, the cache's recovery time after a compaction, in virtual seconds (`β · Q / S`).
    pub t2_secs: f64,
    /// The collector's sampling probability `P`.
    pub sample_p: f64,
    /// The collector's sampling seed.
    pub seed: u64,
    /// Probability at or above which a range is hot; `None` takes the model's.
    pub threshold: Option<f64>,
}

impl Default for LeaperParams {
    fn default() -> Self {
        LeaperParams {
            alpha_secs_per_block: 0.001,
            t2_secs: 1.0,
            sample_p: 0.01,
            seed: 0x1ea9e5,
            threshold: None,
        }
    }
}

/// Counted work of the prefetcher.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LeaperStats {
    /// Flushes seen.
    pub flushes: u64,
    /// Compactions seen (the store does not tell trivial moves).
    pub compactions: u64,
    /// Model evaluations (rows times step models).
    pub predictions: u64,
    /// Ranges predicted hot: the flush's set, or a compaction's `hot_T2`, summed over operations.
    pub hot_ranges: u64,
    /// Ranges in a compaction's `hot_T1`, summed.
    pub hot_ranges_t1: u64,
    /// Wall time of feature building and inference, in nanoseconds (recorded, not a result).
    pub inference_nanos: u64,
    /// Tree nodes the predictions visited (the counted work of inference).
    pub nodes_visited: u64,
    /// Phase 1: cached input blocks seen, and those evicted.
    pub cached_inputs: u64,
    /// Cached input blocks evicted in phase 1.
    pub blocks_evicted: u64,
    /// Phase 2 (and flushes): output blocks offered, and those admitted.
    pub blocks_offered: u64,
    /// Output blocks admitted.
    pub blocks_admitted: u64,
    /// Compactions whose T2 steps all lay beyond the trained models.
    pub steps_clamped: u64,
    /// The online collector's counters.
    pub collector: CollectorStats,
}

/// Leaper's learned prefetcher: see the module documentation.
pub struct LeaperPolicy {
    model: LeaperModel,
    params: LeaperParams,
    threshold: f64,
    collector: Collector,
    reverse_precursors: FxHashMap<u64, Vec<u64>>,
    /// The hot set output blocks are checked against while an operation runs.
    admit_set: Option<HotSet>,
    stats: LeaperStats,
}

impl std::fmt::Debug for LeaperPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaperPolicy")
            .field("model", &self.model)
            .field("params", &self.params)
            .field("stats", &self.stats)
            .finish()
    }
}

/// Per step, the hot candidates and whether every other range of the span is hot.
struct StepPrediction {
    hot: Vec<bool>,
    rest_hot: bool,
}

impl LeaperPolicy {
    /// A prefetcher running `model` with `params`; the error names a parameter out of range (a
    /// negative `alpha_secs_per_block` or `t2_secs`, a threshold outside (0, 1)).
    pub fn new(model: LeaperModel, params: LeaperParams) -> LeaperResult<Self> {
        let bad = |m: String| Err(LeaperError::Invalid(m));
        if !(params.alpha_secs_per_block.is_finite() && params.alpha_secs_per_block >= 0.0) {
            return bad(format!(
                "alpha_secs_per_block must be >= 0, got {}",
                params.alpha_secs_per_block
            ));
        }
        if !(params.t2_secs.is_finite() && params.t2_secs >= 0.0) {
            return bad(format!("t2_secs must be >= 0, got {}", params.t2_secs));
        }
        let threshold = params.threshold.unwrap_or(model.meta().threshold);
        if !(threshold > 0.0 && threshold < 1.0) {
            return bad(format!("threshold must lie in (0, 1), got {threshold}"));
        }
        let meta = *model.meta();
        let collector = Collector::new(CollectorConfig {
            range_size: meta.range_size,
            slot_secs: meta.slot_secs,
            sample_p: params.sample_p,
            seed: params.seed,
            retain_slots: Some(HISTORY_SLOTS + 1),
        })?;
        let reverse_precursors = model.precursors().reverse();
        Ok(LeaperPolicy {
            model,
            params,
            threshold,
            collector,
            reverse_precursors,
            admit_set: None,
            stats: LeaperStats::default(),
        })
    }

    /// A policy over a model directory written by [`LeaperModel::save`].
    pub fn from_dir(dir: &std::path::Path, params: LeaperParams) -> LeaperResult<Self> {
        LeaperPolicy::new(LeaperModel::load(dir)?, params)
    }

    /// The trained model.
    pub fn model(&self) -> &LeaperModel {
        &self.model
    }

    /// The parameters it was built with.
    pub fn params(&self) -> &LeaperParams {
        &self.params
    }

    /// The online collector the features are read from.
    pub fn collector(&self) -> &Collector {
        &self.collector
    }

    /// The counters so far.
    pub fn stats(&self) -> LeaperStats {
        LeaperStats {
            collector: self.collector.stats(),
            ..self.stats
        }
    }

    /// The steps of T1 and T2 for a compaction beginning now (1-based, within `1..=K`).
    pub fn phase_steps(&self, blocks_to_merge: u64) -> (Vec<usize>, Vec<usize>, bool) {
        let slot = self.model.meta().slot_secs;
        let k = self.model.steps();
        let t1 = self.params.alpha_secs_per_block * blocks_to_merge as f64;
        let k1 = ((t1 / slot).ceil() as usize).max(1);
        let k2 = ((self.params.t2_secs / slot).ceil() as usize).max(1);
        let s1: Vec<usize> = (1..=k1.min(k)).collect();
        let mut s2: Vec<usize> = (k1 + 1..=(k1 + k2).min(k)).collect();
        let clamped = s2.is_empty();
        if clamped {
            s2.push(k);
        }
        (s1, s2, clamped)
    }

    /// Predicts the given steps for the ranges `r_lo..=r_hi` at `now`: the candidate ranges
    /// (ascending) and one prediction per step.
    fn predict(
        &mut self,
        now: f64,
        r_lo: u64,
        r_hi: u64,
        steps: &[usize],
    ) -> (Vec<u64>, Vec<StepPrediction>) {
        let t0 = Instant::now();
        let meta = *self.model.meta();
        let last = slot_of(now, meta.slot_secs).checked_sub(1);
        let mut cands: Vec<u64> = Vec::new();
        if let Some(last) = last {
            let first = last.saturating_sub(HISTORY_SLOTS as u64 - 1);
            cands = self.collector.active_ranges(first, last);
            // Targets whose precursors were read in the last slot.
            for p in self.collector.active_ranges(last, last) {
                if let Some(ts) = self.reverse_precursors.get(&p) {
                    cands.extend_from_slice(ts);
                }
            }
        }
        cands.retain(|&r| r >= r_lo && r <= r_hi);
        cands.sort_unstable();
        cands.dedup();
        let mut rows: Vec<Row> = cands
            .iter()
            .map(|&r| {
                features_at(
                    &self.collector,
                    r,
                    last,
                    now,
                    meta.day_secs,
                    self.model.precursors().get(r),
                )
            })
            .collect();
        // The all-zero row of every other range in the span.
        rows.push(features_at(&self.collector, 0, None, now, meta.day_secs, &[]));
        let mut out = Vec::with_capacity(steps.len());
        for &k in steps {
            let p = self.model.predict(k, &rows);
            self.stats.predictions += rows.len() as u64;
            let rest_hot = p[cands.len()] >= self.threshold;
            out.push(StepPrediction {
                hot: p[..cands.len()].iter().map(|&x| x >= self.threshold).collect(),
                rest_hot,
            });
        }
        self.stats.inference_nanos += t0.elapsed().as_nanos() as u64;
        for &k in steps {
            self.stats.nodes_visited += self.model.nodes_visited(k, &rows);
        }
        (cands, out)
    }

    /// Eq. 4: the union of some steps' hot ranges within `r_lo..=r_hi`, and its number of ranges.
    fn union(&self, r_lo: u64, r_hi: u64, cands: &[u64], preds: &[&StepPrediction]) -> (HotSet, u64) {
        let rs = self.model.meta().range_size;
        let hot = |i: usize| preds.iter().any(|p| p.hot[i]);
        if preds.iter().any(|p| p.rest_hot) {
            // Every range of the span but the candidates predicted cold in all steps.
            let cold: Vec<u64> = (0..cands.len()).filter(|&i| !hot(i)).map(|i| cands[i]).collect();
            let mut iv = Vec::new();
            let mut next = r_lo;
            for &c in &cold {
                if c > next {
                    iv.push((next, c - 1));
                }
                next = c + 1;
            }
            if next <= r_hi {
                iv.push((next, r_hi));
            }
            let n = (r_hi - r_lo + 1) - cold.len() as u64;
            let keys = iv
                .into_iter()
                .map(|(a, b)| (super::range_keys(a, rs).0, super::range_keys(b, rs).1))
                .collect();
            (HotSet::from_intervals(keys), n)
        } else {
            let ranges: Vec<u64> = (0..cands.len()).filter(|&i| hot(i)).map(|i| cands[i]).collect();
            let n = ranges.len() as u64;
            (HotSet::from_ranges(ranges, rs), n)
        }
    }
}

impl WarmUpPolicy for LeaperPolicy {
    fn name(&self) -> &'static str {
        "leaper"
    }

    fn on_access(&mut self, now: f64, lo: u64, hi: u64, access: Access) {
        self.collector.record(now, lo, hi, access);
    }

    fn begin(&mut self, start: &BackgroundStart<'_>, cache: &BufferCache) -> Result<()> {
        let rs = self.model.meta().range_size;
        let span = start.keys.map(|k| (k.min, k.max)).or_else(|| {
            let mut blocks = start.inputs.iter().flat_map(|r| r.blocks.iter());
            let first = blocks.next()?;
            Some(blocks.fold((first.first_key, first.last_key), |(a, b), x| {
                (a.min(x.first_key), b.max(x.last_key))
            }))
        });
        let Some((k_lo, k_hi)) = span else {
            self.admit_set = Some(HotSet::default());
            return Ok(());
        };
        let (r_lo, r_hi) = (k_lo.min(k_hi) / rs, k_lo.max(k_hi) / rs);
        match start.kind {
            Background::Flush => {
                self.stats.flushes += 1;
                let (cands, preds) = self.predict(start.now, r_lo, r_hi, &[1]);
                let (hot, n) = self.union(r_lo, r_hi, &cands, &[&preds[0]]);
                self.stats.hot_ranges += n;
                self.admit_set = Some(hot);
            }
            Background::Compaction => {
                self.stats.compactions += 1;
                let (s1, s2, clamped) = self.phase_steps(start.blocks_to_merge);
                self.stats.steps_clamped += clamped as u64;
                let mut steps = s1.clone();
                steps.extend(s2.iter().filter(|k| !s1.contains(k)));
                let (cands, preds) = self.predict(start.now, r_lo, r_hi, &steps);
                let pick = |ks: &[usize]| -> Vec<&StepPrediction> {
                    ks.iter()
                        .map(|k| &preds[steps.iter().position(|x| x == k).unwrap_or(0)])
                        .collect()
                };
                let (hot_t1, n1) = self.union(r_lo, r_hi, &cands, &pick(&s1));
                let (hot_t2, n2) = self.union(r_lo, r_hi, &cands, &pick(&s2));
                self.stats.hot_ranges_t1 += n1;
                self.stats.hot_ranges += n2;
                // Phase 1: evict cached input blocks predicted cold during the compaction.
                for run in start.inputs {
                    let keys: Vec<(u64, u64)> =
                        run.blocks.iter().map(|b| (b.first_key, b.last_key)).collect();
                    let hot_idx = overlapping_blocks(&keys, &hot_t1);
                    let mut h = hot_idx.iter().peekable();
                    for (i, b) in run.blocks.iter().enumerate() {
                        let is_hot = h.peek() == Some(&&i);
                        if is_hot {
                            h.next();
                        }
                        if cache.contains(b.page) {
                            self.stats.cached_inputs += 1;
                            if !is_hot && cache.evict(b.page)? {
                                self.stats.blocks_evicted += 1;
                            }
                        }
                    }
                }
                self.admit_set = Some(hot_t2);
            }
        }
        Ok(())
    }

    fn admit(&mut self, block: &BlockInfo, _cache: &BufferCache) -> bool {
        self.stats.blocks_offered += 1;
        let yes = self
            .admit_set
            .as_ref()
            .is_some_and(|h| h.overlaps(block.first_key, block.last_key));
        self.stats.blocks_admitted += yes as u64;
        yes
    }

    /// A page without keys of its own (an R-tree's internal node, an antimatter page) is not a
    /// key range the model can rank: admitted, as prepopulation does (`crate::combined`).
    fn admit_unkeyed(&mut self, _page: crate::storage::PageId, _cache: &BufferCache) -> bool {
        true
    }

    fn end(&mut self, _now: f64, _ok: bool) {
        self.admit_set = None;
    }
}

/// Where a [`Published`] Leaper policy puts its counters.
pub type StatsHandle = Arc<Mutex<LeaperStats>>;

/// A Leaper policy that publishes its counters after every background operation, so that they can
/// be read while a store (through its `crate::kvstore::CacheWarmer`) owns the policy.
pub struct Published {
    inner: LeaperPolicy,
    stats: StatsHandle,
}

impl LeaperPolicy {
    /// This policy, publishing its counters on the handle returned beside it.
    pub fn published(self) -> (Published, StatsHandle) {
        let stats: StatsHandle = Arc::new(Mutex::new(self.stats()));
        (
            Published {
                inner: self,
                stats: stats.clone(),
            },
            stats,
        )
    }
}

impl WarmUpPolicy for Published {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn on_access(&mut self, now: f64, lo: u64, hi: u64, access: Access) {
        self.inner.on_access(now, lo, hi, access);
    }

    fn begin(&mut self, start: &BackgroundStart<'_>, cache: &BufferCache) -> Result<()> {
        self.inner.begin(start, cache)
    }

    fn admit(&mut self, block: &BlockInfo, cache: &BufferCache) -> bool {
        self.inner.admit(block, cache)
    }

    fn admit_unkeyed(&mut self, page: crate::storage::PageId, cache: &BufferCache) -> bool {
        self.inner.admit_unkeyed(page, cache)
    }

    fn end(&mut self, now: f64, ok: bool) {
        self.inner.end(now, ok);
        *self.stats.lock() = self.inner.stats();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kvstore::RunBlocks;
    use crate::leaper::model::GbdtParams;
    use crate::leaper::train::{
        tests::periodic_history, tests::train_without_log, train, TrainParams, TrainingPrecursors,
    };
    use crate::lsm::KeyRange;
    use crate::storage::{Device, MemDevice};
    use std::sync::Arc;

    /// Ranges 0..10 (keys 0..1000) always hot, 10..30 periodic, 30..60 cold; range size 100,
    /// slots of 10 s.
    fn model() -> LeaperModel {
        let params = TrainParams {
            steps: 3,
            gbdt: GbdtParams {
                rounds: 30,
                ..GbdtParams::default()
            },
            ..TrainParams::default()
        };
        train_without_log(&periodic_history(30), &params).unwrap().0
    }

    /// The same pattern online for slots 0..10 (exact counts), then `now` = 100.5 (slot 10).
    fn warmed(params: LeaperParams) -> LeaperPolicy {
        let mut p = LeaperPolicy::new(
            model(),
            LeaperParams {
                sample_p: 1.0,
                ..params
            },
        )
        .unwrap();
        for s in 0..10u64 {
            let t = s as f64 * 10.0 + 1.0;
            for r in 0..10u64 {
                for _ in 0..5 {
                    p.on_access(t, r * 100 + 7, r * 100 + 7, Access::Read);
                }
                p.on_access(t, r * 100 + 9, r * 100 + 9, Access::Write);
            }
            for r in 10..30u64 {
                if s % 2 == r % 2 {
                    for _ in 0..3 {
                        p.on_access(t, r * 100 + 50, r * 100 + 50, Access::Read);
                    }
                }
            }
        }
        p
    }

    fn device_and_cache(pages: u64) -> (Arc<dyn Device>, BufferCache, Vec<u64>) {
        let dev: Arc<dyn Device> = Arc::new(MemDevice::new(64));
        let first = dev.allocate(pages);
        for i in 0..pages {
            dev.write_page(first + i, &[i as u8; 64]).unwrap();
        }
        let cache = BufferCache::new(dev.clone(), 1000);
        (dev, cache, (first..first + pages).collect())
    }

    #[test]
    fn compaction_evicts_cold_cached_inputs_and_admits_hot_outputs() {
        // T1 = 0.5 s/block * 10 blocks = 5 s: one step; T2 = 10 s: one step (step 2).
        let mut p = warmed(LeaperParams {
            alpha_secs_per_block: 0.5,
            t2_secs: 10.0,
            ..LeaperParams::default()
        });
        assert_eq!(p.phase_steps(10), (vec![1], vec![2], false));
        // Input run: 10 blocks of 200 keys over ranges 0..20 (block i: ranges 2i, 2i+1), and a
        // second run of 10 blocks over ranges 40..60 (cold). Blocks 0..5 are always hot; blocks
        // 5..10 hold periodic ranges (slot 10 is even: even ranges read in step 1); the cold run
        // is cold.
        let (_dev, cache, pages) = device_and_cache(40);
        let run_a: Vec<BlockInfo> = (0..10)
            .map(|i| BlockInfo {
                page: pages[i],
                first_key: i as u64 * 200,
                last_key: i as u64 * 200 + 199,
            })
            .collect();
        let run_b: Vec<BlockInfo> = (0..10)
            .map(|i| BlockInfo {
                page: pages[10 + i],
                first_key: 4000 + i as u64 * 200,
                last_key: 4000 + i as u64 * 200 + 199,
            })
            .collect();
        // Cache blocks 2, 4, 7 of run a and 0, 3, 9 of run b.
        for &i in &[2usize, 4, 7] {
            cache.read(run_a[i].page).unwrap();
        }
        for &i in &[0usize, 3, 9] {
            cache.read(run_b[i].page).unwrap();
        }
        let inputs = [
            RunBlocks {
                run: 1,
                level: 1,
                blocks: run_a.clone(),
            },
            RunBlocks {
                run: 2,
                level: 2,
                blocks: run_b.clone(),
            },
        ];
        let start = BackgroundStart {
            kind: Background::Compaction,
            now: 100.5,
            inputs: &inputs,
            keys: Some(KeyRange::new(0, 5999)),
            blocks_to_merge: 10,
        };
        p.begin(&start, &cache).unwrap();
        // Run a's cached blocks are hot (always-hot or a periodic range read in step 1); run b's
        // are cold and evicted.
        for &i in &[2usize, 4, 7] {
            assert!(cache.contains(run_a[i].page), "run a block {i}");
        }
        for &i in &[0usize, 3, 9] {
            assert!(!cache.contains(run_b[i].page), "run b block {i}");
        }
        let st = p.stats();
        assert_eq!((st.cached_inputs, st.blocks_evicted), (6, 3));
        // Phase 2: outputs of 50 keys. Step 2 is slot 11 (odd): hot ranges 0..10 and the odd
        // periodic ranges 11, 13, ..., 29.
        let mut want = 0;
        let mut got = 0;
        for j in 0..120u64 {
            let b = BlockInfo {
                page: pages[20 + (j % 20) as usize],
                first_key: j * 50,
                last_key: j * 50 + 49,
            };
            let r = j * 50 / 100;
            let hot = r < 10 || (r < 30 && r % 2 == 1);
            let admitted = p.admit(&b, &cache);
            assert_eq!(admitted, hot, "output block {j} (range {r})");
            want += hot as u64;
            got += admitted as u64;
        }
        assert_eq!(got, want);
        assert_eq!(want, 20 + 20);
        let st = p.stats();
        assert_eq!((st.blocks_offered, st.blocks_admitted), (120, 40));
        assert_eq!(st.compactions, 1);
        // hot_T1: 10 always-hot + 10 even periodic ranges; hot_T2: 10 + 10 odd.
        assert_eq!((st.hot_ranges_t1, st.hot_ranges), (20, 20));
        // Candidates: the 30 ranges active in the last 6 slots, plus the all-zero row, per step.
        assert_eq!(st.predictions, 2 * 31);
        p.end(110.0, true);
        assert!(!p.admit(
            &BlockInfo {
                page: pages[0],
                first_key: 0,
                last_key: 10
            },
            &cache
        ));
    }

    #[test]
    fn flush_admits_blocks_of_the_next_slots_hot_ranges() {
        let mut p = warmed(LeaperParams::default());
        let (_dev, cache, pages) = device_and_cache(4);
        let start = BackgroundStart {
            kind: Background::Flush,
            now: 100.5,
            inputs: &[],
            keys: Some(KeyRange::new(900, 1299)),
            blocks_to_merge: 0,
        };
        p.begin(&start, &cache).unwrap();
        // Ranges 9 (always hot), 10 (periodic, read in even slot 10), 11 (not in slot 10), 12.
        let blocks = [
            (900, 999, true),
            (1000, 1099, true),
            (1100, 1199, false),
            (1200, 1299, true),
        ];
        for (i, &(a, b, hot)) in blocks.iter().enumerate() {
            assert_eq!(
                p.admit(
                    &BlockInfo {
                        page: pages[i],
                        first_key: a,
                        last_key: b
                    },
                    &cache
                ),
                hot,
                "block {a}..={b}"
            );
        }
        let st = p.stats();
        assert_eq!((st.flushes, st.hot_ranges, st.blocks_admitted), (1, 3, 3));
        // Ranges 9..=12 are the candidates, plus the all-zero row.
        assert_eq!(st.predictions, 5);
        assert_eq!(st.cached_inputs, 0);
    }

    #[test]
    fn from_a_sampled_log_to_a_saved_model_to_the_policy() {
        use crate::leaper::{range_size::select_range_size, AccessRecord, RangeHistory, RangeSizeParams};
        // A log of 30 slots of 10 s: ranges 0..10 (keys 0..1000) read 40 times a slot, ranges
        // 10..30 read 20 times in slots of their parity, key 5999 once.
        let mut log = vec![AccessRecord::read(0.0, 5999)];
        let mut rng = crate::leaper::collector::SplitMix64::new(5);
        for s in 0..30u64 {
            for i in 0..800u64 {
                let t = s as f64 * 10.0 + i as f64 / 80.0;
                let r = rng.next_u64() % 30;
                if r < 10 || r % 2 == s % 2 {
                    let key = r * 100 + rng.next_u64() % 100;
                    log.push(if i % 5 == 0 {
                        AccessRecord::write(t, key)
                    } else {
                        AccessRecord::read(t, key)
                    });
                }
            }
        }
        let choice = select_range_size(&log, 6000, 10.0, RangeSizeParams::default()).unwrap();
        assert!((10..=6000).contains(&choice.size), "{choice:?}");
        let cfg = CollectorConfig {
            sample_p: 0.1,
            ..CollectorConfig::offline(100, 10.0)
        };
        let history = RangeHistory::from_log(&log, &cfg).unwrap();
        assert_eq!(history.len(), 30);
        let params = TrainParams {
            steps: 2,
            gbdt: GbdtParams {
                rounds: 30,
                ..GbdtParams::default()
            },
            ..TrainParams::default()
        };
        let precursors = TrainingPrecursors::of(&history, || log.iter().copied(), &params).unwrap();
        let (model, report) = train(&history, &precursors, &params).unwrap();
        assert!(
            report.steps[0].model.recall > 0.9 && report.steps[0].model.precision > 0.9,
            "{report:?}"
        );
        let dir = tempfile::tempdir().unwrap();
        model.save(dir.path()).unwrap();
        let mut p = LeaperPolicy::from_dir(
            dir.path(),
            LeaperParams {
                sample_p: 0.1,
                ..LeaperParams::default()
            },
        )
        .unwrap();
        for rec in log.iter().filter(|r| r.time >= 200.0) {
            p.on_access(rec.time + 100.0, rec.lo, rec.hi, rec.access);
        }
        // Online slots 30..=39 replay slots 20..=29; at 400.5 (slot 40, even) the next slot's
        // hot ranges are 0..10 and the even ranges of 10..30.
        let (_dev, cache, pages) = device_and_cache(1);
        let start = BackgroundStart {
            kind: Background::Flush,
            now: 400.5,
            inputs: &[],
            keys: Some(KeyRange::new(0, 5999)),
            blocks_to_merge: 0,
        };
        p.begin(&start, &cache).unwrap();
        for r in 0..60u64 {
            let hot = r < 10 || (r < 30 && r % 2 == 0);
            let b = BlockInfo {
                page: pages[0],
                first_key: r * 100,
                last_key: r * 100 + 99,
            };
            assert_eq!(p.admit(&b, &cache), hot, "range {r}");
        }
        assert!(LeaperPolicy::from_dir(&dir.path().join("absent"), LeaperParams::default()).is_err());
    }

    #[test]
    fn steps_beyond_the_models_are_clamped_and_bad_params_refused() {
        let p = warmed(LeaperParams {
            alpha_secs_per_block: 1.0,
            t2_secs: 25.0,
            ..LeaperParams::default()
        });
        // T1 = 100 s: 10 steps, beyond K = 3: T1 uses 1..=3, T2 falls back to step 3.
        assert_eq!(p.phase_steps(100), (vec![1, 2, 3], vec![3], true));
        // T1 = 1 s, T2 = 25 s: steps 1 and 2..=3 (4 dropped).
        assert_eq!(p.phase_steps(1), (vec![1], vec![2, 3], false));
        assert!(LeaperPolicy::new(
            model(),
            LeaperParams {
                t2_secs: -1.0,
                ..LeaperParams::default()
            }
        )
        .is_err());
        assert!(LeaperPolicy::new(
            model(),
            LeaperParams {
                sample_p: 0.0,
                ..LeaperParams::default()
            }
        )
        .is_err());
        assert!(LeaperPolicy::new(
            model(),
            LeaperParams {
                threshold: Some(1.0),
                ..LeaperParams::default()
            }
        )
        .is_err());
    }
}
