//! `combined`: what none of the four papers measured. Moving objects whose records live in a
//! record cluster (OEP 7), found through a secondary LSM R-tree on location (LSM RUM-tree), with
//! index and record pages sharing one buffer cache under a warm-up switch (plain LRU, prepopulate,
//! Leaper); rows per strategy x cluster layout x cache policy (engine: `lsmlab_engine::combined`).
//!
//! One cell runs one (dataset, strategy, layout, policy): the stream's first `train_fraction` of
//! operations under LRU (the same for every policy, logging Leaper's accesses), then the policy is
//! switched on (Leaper trained on that log) and the rest of the stream is measured: each location
//! update rewrites the record and updates the index (flushes and merges inside the stream), and
//! every `updates_per_query` updates a range query around a current object location validates its
//! candidates and fetches their records in one batch sorted by page.

mod report;

use crate::config::{self, check, Config, KeyHelp, StorageConfig};
use crate::experiment::{
    Cell, DataSpec, MemoryEstimate, RowBuilder, RunContext, RunOutput, Scale, TypedExperiment,
};
use crate::measure::LatencyRecorder;
use crate::rum::{check_strategies, Dataset, IndexConfig};
use anyhow::{bail, Context};
use lsmlab_engine::cluster::Layout;
use lsmlab_engine::combined::{Answer, CachePolicy, CombinedStore, QueryPages, WarmUp};
use lsmlab_engine::geom::{Point, Rect};
use lsmlab_engine::leaper::{
    train, AccessLog, CollectorConfig, GbdtParams, LeaperParams, LeaperPolicy, RangeHistory, TrainParams,
    TrainingPrecursors,
};
use lsmlab_engine::spatial::Strategy;
use lsmlab_engine::storage::IoStats;
use lsmlab_workloads::{SpatialOp, Trajectories};
use rand::Rng;
use std::collections::HashMap as FxHashMap;
use std::time::{Duration, Instant};

pub(crate) const PAPER: &str = "cross-paper";

/// This paper as the registry lists it (see `lsmlab_harness::paper`).
pub fn paper() -> lsmlab_harness::paper::Paper {
    lsmlab_harness::paper::Paper {
        id: "combined",
        title: PAPER,
        kind: lsmlab_harness::paper::PaperKind::CrossPaper,
        experiments: vec![&Combined],
        claims: None,
        traces: Vec::new(),
        styles: &[],
        figures: report::figure_specs,
    }
}

pub(crate) struct Combined;

lsmlab_harness::config! {
    /// `combined`'s parameters.
    pub struct CombinedConfig {
        /// index strategies: Eager, Eager(physical), Validation, Validation(repair), UM, or UM+ with any of
        /// F, M, B, V
        #[serde(with = "config::text_list")]
        pub strategies: Vec<Strategy>,
        #[serde(flatten)]
        /// The data and index settings every RUM experiment shares (flattened: its keys are top-level
        /// `--set` keys).
        pub index: IndexConfig,
        #[serde(flatten)]
        /// The storage testbed settings (flattened: its keys are top-level `--set` keys).
        pub storage: StorageConfig,
        /// record cluster layouts: paginated (position map + data page), single-page
        #[serde(with = "config::text_list")]
        pub layouts: Vec<Layout>,
        /// cache policies: lru, prepopulate (admit every page a flush or merge writes), leaper (Leaper's
        /// prediction for R-tree leaves)
        #[serde(with = "config::text_list")]
        pub policies: Vec<CachePolicy>,
        /// bytes of one object record (object id, version, location, payload)
        pub record_bytes: usize,
        /// location updates between two range queries
        pub updates_per_query: usize,
        /// query box side as a fraction of the extent's width and height
        pub selectivity: f64,
        /// share of the stream run under LRU before the policy is switched on (Leaper trains on its accesses)
        pub train_fraction: f64,
        /// stream operations per Leaper time slot
        pub slot_ops: usize,
        /// Leaper key ranges over the Hilbert key space (the paper: about 1,000)
        pub leaper_ranges: u64,
        /// Leaper: boosting rounds per GBDT step model
        pub gbdt_rounds: usize,
        /// Leaper: step models K (at least 2)
        pub leaper_steps: usize,
        /// check every this many queries against a brute-force scan (0 = never)
        pub check_every: usize,
    }
}

impl Config for CombinedConfig {
    fn adjust_help(help: &mut Vec<KeyHelp>) {
        crate::rum::strategies_after_datasets(help)
    }

    fn validate(&self) -> anyhow::Result<()> {
        check_strategies(&self.strategies)?;
        self.index.validate()?;
        self.storage.validate()?;
        check(
            "layouts",
            self.layouts.len(),
            !self.layouts.is_empty(),
            "at least one layout",
        )?;
        check(
            "policies",
            self.policies.len(),
            !self.policies.is_empty(),
            "at least one policy",
        )?;
        check(
            "record_bytes",
            self.record_bytes,
            (32..=self.storage.page_size / 2).contains(&self.record_bytes),
            "32 bytes up to half a page",
        )?;
        check(
            "updates_per_query",
            self.updates_per_query,
            self.updates_per_query >= 1,
            "at least 1",
        )?;
        check(
            "selectivity",
            self.selectivity,
            self.selectivity > 0.0 && self.selectivity <= 1.0,
            "a side fraction in (0, 1]",
        )?;
        check(
            "train_fraction",
            self.train_fraction,
            self.train_fraction > 0.0 && self.train_fraction < 1.0,
            "a fraction strictly between 0 and 1",
        )?;
        check("slot_ops", self.slot_ops, self.slot_ops >= 1, "at least 1")?;
        check(
            "leaper_ranges",
            self.leaper_ranges,
            (2..=1 << 24).contains(&self.leaper_ranges),
            "2 to 16,777,216 ranges",
        )?;
        check(
            "gbdt_rounds",
            self.gbdt_rounds,
            self.gbdt_rounds >= 1,
            "at least 1",
        )?;
        check(
            "leaper_steps",
            self.leaper_steps,
            self.leaper_steps >= 2,
            "at least 2",
        )
    }
}

/// The Hilbert key space of [`lsmlab_engine::geom::HilbertCurve`]: 4^16 keys.
const HILBERT_KEYS: u64 = 1 << 32;

/// One cell's measured phase.
#[derive(Default)]
struct Measured {
    queries: u64,
    updates: u64,
    pages: QueryPages,
    results: u64,
    candidates: u64,
    lookups: u64,
    query_wall: Duration,
    update_wall: Duration,
    update_io: IoStats,
    checked: u64,
}

/// Leaper's training outcome, for the row.
struct Trained {
    policy: Option<LeaperPolicy>,
    note: String,
    precision: Option<f64>,
    recall: Option<f64>,
    baseline_recall: Option<f64>,
}

fn train_leaper(cfg: &CombinedConfig, log: &AccessLog, seed: u64) -> Trained {
    let range_size = HILBERT_KEYS / cfg.leaper_ranges;
    let fail = |why: String| Trained {
        policy: None,
        note: why,
        precision: None,
        recall: None,
        baseline_recall: None,
    };
    let history = match RangeHistory::from_records(log.iter(), &CollectorConfig::offline(range_size, 1.0)) {
        Ok(h) => h,
        Err(e) => return fail(format!("no history: {e}")),
    };
    let params = TrainParams {
        steps: cfg.leaper_steps,
        gbdt: GbdtParams {
            rounds: cfg.gbdt_rounds,
            seed,
            ..GbdtParams::default()
        },
        ..TrainParams::default()
    };
    let trained = TrainingPrecursors::of(&history, || log.iter(), &params)
        .and_then(|precursors| train(&history, &precursors, &params));
    let (model, report) = match trained {
        Ok(x) => x,
        Err(e) => return fail(format!("not trained: {e}")),
    };
    let s1 = report.steps.first();
    let lp = LeaperParams {
        // T1 is not used (a merge's inputs are retired when it ends), so its admissions are
        // predicted for step 2, the slot after the current one (T2 = one slot).
        alpha_secs_per_block: 0.0,
        t2_secs: 1.0,
        sample_p: 1.0,
        seed,
        threshold: None,
    };
    match LeaperPolicy::new(model, lp) {
        Ok(p) => Trained {
            policy: Some(p),
            note: format!("trained on {} slots x {} ranges", report.slots, report.ranges),
            precision: s1.map(|s| s.model.precision),
            recall: s1.map(|s| s.model.recall),
            baseline_recall: s1.map(|s| s.baseline.recall),
        },
        Err(e) => fail(format!("policy refused the model: {e}")),
    }
}

/// A query box of side `s` around a current object location.
fn query_box(data: &Trajectories, at: Point, s: f64) -> Rect {
    data.extent.box_around(at, s)
}

/// The brute-force answer: every object whose current location lies in `rect`, with version.
fn brute_force(truth: &FxHashMap<u64, (Point, u64)>, rect: &Rect) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = truth
        .iter()
        .filter(|(_, (p, _))| rect.contains_point(*p))
        .map(|(&o, &(_, ver))| (o, ver))
        .collect();
    v.sort_unstable();
    v
}

fn check_answer(
    answer: &Answer,
    truth: &FxHashMap<u64, (Point, u64)>,
    rect: &Rect,
    cfg: &CombinedConfig,
) -> anyhow::Result<()> {
    let want = brute_force(truth, rect);
    let got: Vec<(u64, u64)> = answer.records.iter().map(|r| (r.oid, r.version)).collect();
    if got != want {
        bail!(
            "query {rect:?} answered {} objects, a brute-force scan finds {}; the combined store is wrong",
            got.len(),
            want.len()
        );
    }
    for r in &answer.records {
        let expected = lsmlab_engine::combined::ObjectRecord::new(r.oid, r.version, r.at, cfg.record_bytes);
        if *r != expected || Some(&(r.at, r.version)) != truth.get(&r.oid) {
            bail!(
                "object {}'s record does not hold its current location and payload",
                r.oid
            );
        }
    }
    Ok(())
}

/// Runs one cell and returns its row.
#[allow(clippy::too_many_arguments)]
fn run_cell(
    cfg: &CombinedConfig,
    data: &Trajectories,
    ops: &[SpatialOp],
    strategy: Strategy,
    layout: Layout,
    policy: CachePolicy,
    ctx: &RunContext,
) -> anyhow::Result<crate::experiment::Row> {
    let storage = cfg.storage.open()?;
    let spatial = cfg.index.spatial_config(strategy, data);
    let mut store = CombinedStore::new(
        spatial,
        layout,
        storage.cache.clone(),
        cfg.record_bytes,
        WarmUp::Lru,
    )?;
    let mut rng = lsmlab_workloads::seeded_rng(ctx.seed, &format!("combined/{}", data.name));
    let mut truth: FxHashMap<u64, (Point, u64)> = FxHashMap::default();
    let mut seen: Vec<u64> = Vec::new();
    let train_ops = ((ops.len() as f64 * cfg.train_fraction) as usize).max(1);
    let mut m = Measured::default();
    let mut latency = LatencyRecorder::new();
    let mut trained: Option<Trained> = None;
    let mut since_query = 0usize;
    let mut queries_run = 0usize;
    let mut measured_from = (storage.cache.stats(), store.index.stats(), store.warm_stats());
    store.start_log();
    for (i, op) in ops.iter().enumerate() {
        let measuring = i >= train_ops;
        if i == train_ops {
            // The policy goes on here; everything before ran under LRU, the same in every cell.
            let log = store.take_log();
            let warm = match policy {
                CachePolicy::Lru => WarmUp::Lru,
                CachePolicy::Prepopulate => WarmUp::Prepopulate,
                CachePolicy::Leaper => {
                    ctx.progress.message("training Leaper");
                    let mut t = train_leaper(cfg, &log, ctx.seed);
                    // An untrainable log (one class, too few slots) leaves LRU on; the row says why.
                    let w = t
                        .policy
                        .take()
                        .map_or(WarmUp::Lru, |p| WarmUp::Leaper(Box::new(p)));
                    trained = Some(t);
                    w
                }
            };
            store.set_warm_up(warm);
            measured_from = (storage.cache.stats(), store.index.stats(), store.warm_stats());
        }
        store.set_now(i as f64 / cfg.slot_ops as f64);
        let (oid, to) = match *op {
            SpatialOp::Insert { oid, at } => {
                seen.push(oid);
                (oid, at)
            }
            SpatialOp::Update { oid, to, .. } => (oid, to),
            SpatialOp::Delete { .. } => continue,
        };
        let io0 = store.io();
        let t0 = Instant::now();
        store
            .update(oid, to)
            .with_context(|| format!("operation {i} ({op:?}) under {strategy} {layout} {policy}"))?;
        let took = t0.elapsed();
        let v = truth.get(&oid).map_or(1, |&(_, v)| v + 1);
        truth.insert(oid, (to, v));
        if measuring {
            let io = store.io().since(&io0);
            m.update_io.page_reads += io.page_reads;
            m.update_io.page_writes += io.page_writes;
            m.update_wall += took;
            m.updates += 1;
        }
        since_query += 1;
        if since_query < cfg.updates_per_query {
            continue;
        }
        since_query = 0;
        let at = truth[&seen[rng.random_range(0..seen.len())]].0;
        let rect = query_box(data, at, cfg.selectivity);
        let t0 = Instant::now();
        let answer = store
            .query(&rect)
            .with_context(|| format!("query {rect:?} under {strategy} {layout} {policy}"))?;
        let took = t0.elapsed();
        queries_run += 1;
        if cfg.check_every > 0 && (queries_run - 1).is_multiple_of(cfg.check_every) {
            check_answer(&answer, &truth, &rect, cfg)?;
            m.checked += u64::from(measuring);
        }
        if measuring {
            if answer.cluster_page_reads != answer.pages.records() {
                bail!(
                    "the cluster counted {} page reads, the cache {}",
                    answer.cluster_page_reads,
                    answer.pages.records()
                );
            }
            m.queries += 1;
            m.pages.add(&answer.pages);
            m.results += answer.records.len() as u64;
            m.candidates += answer.candidates;
            m.lookups += answer.validation_lookups;
            m.query_wall += took;
            latency.record(took);
        }
        if i % 8192 == 0 {
            ctx.progress.count(i as u64, Some(ops.len() as u64), "operations");
        }
    }
    if m.queries == 0 {
        bail!(
            "no query was measured: raise records or lower updates_per_query ({})",
            cfg.updates_per_query
        );
    }
    let (c0, s0, w0) = measured_from;
    let cache = storage.cache.stats().since(&c0);
    let s1 = store.index.stats();
    let w = store.warm_stats();
    let nq = m.queries as f64;
    let read_us = storage.modelled_io_ms(IoStats {
        page_reads: 1,
        ..IoStats::default()
    }) * 1e3;
    let query_modelled_us = m.pages.misses() as f64 * read_us / nq;
    let update_modelled_us = storage.modelled_io_ms(m.update_io) * 1e3 / m.updates.max(1) as f64;
    let space = store.cluster.space();
    let index_pages = store.index.disk_pages() + store.index.memory_pages();
    let data_pages = index_pages + space.file_pages;
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let p = &m.pages;
    let mut row = RowBuilder::new()
        .str("dataset", &data.name)
        .str("strategy", strategy.to_string())
        .str("layout", layout.to_string())
        .str("policy", policy.to_string());
    row = cfg.index.data_fields(row, data, &cfg.storage);
    let row = row
        .int("cache_pages", cfg.storage.cache_pages as u64)
        .int("index_pages", index_pages)
        .int("record_pages", space.file_pages)
        .num(
            "cache_data_ratio",
            ratio(cfg.storage.cache_pages as u64, data_pages),
        )
        .int("queries", m.queries)
        .int("updates", m.updates)
        .num("avg_results", m.results as f64 / nq)
        .num("avg_candidates", m.candidates as f64 / nq)
        .num("avg_validation_lookups", m.lookups as f64 / nq)
        .num("avg_index_pages", p.index() as f64 / nq)
        .num("avg_record_pages", p.records() as f64 / nq)
        .num("avg_index_hits", p.index_hits as f64 / nq)
        .num("avg_index_misses", p.index_misses as f64 / nq)
        .num("avg_record_hits", p.record_hits as f64 / nq)
        .num("avg_record_misses", p.record_misses as f64 / nq)
        .num("hit_ratio", ratio(p.index_hits + p.record_hits, p.total()))
        .num("index_hit_ratio", ratio(p.index_hits, p.index()))
        .num("record_hit_ratio", ratio(p.record_hits, p.records()))
        .num("avg_query_modelled_us", query_modelled_us)
        .num("avg_query_wall_us", latency.mean_us())
        .num("update_modelled_us", update_modelled_us)
        .num(
            "updates_per_modelled_s",
            if update_modelled_us > 0.0 {
                1e6 / update_modelled_us
            } else {
                0.0
            },
        )
        .num(
            "updates_per_wall_s",
            m.updates as f64 / m.update_wall.as_secs_f64().max(1e-9),
        )
        .int("flushes", s1.rtree.flushes - s0.rtree.flushes)
        .int("merges", s1.rtree.merges - s0.rtree.merges)
        .int("leaves_offered", w.blocks_offered - w0.blocks_offered)
        .int("leaves_admitted", w.blocks_admitted - w0.blocks_admitted)
        .int("other_pages_admitted", w.other_admitted - w0.other_admitted)
        .int("prefetch_admissions", cache.prefetch_admissions)
        .int("prefetch_hits", cache.prefetch_hits)
        .num(
            "prefetch_precision",
            ratio(cache.prefetch_hits, cache.prefetch_admissions),
        )
        .int("warmup_evictions", w.policy_evictions - w0.policy_evictions)
        .int("checked_queries", m.checked);
    let row = match &trained {
        Some(t) => row
            .str("leaper_model", &t.note)
            .opt_num("leaper_precision", t.precision)
            .opt_num("leaper_recall", t.recall)
            .opt_num("last_slot_recall", t.baseline_recall),
        None => row,
    };
    Ok(row.build())
}

impl TypedExperiment for Combined {
    type Config = CombinedConfig;

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "combined",
            paper: PAPER,
            about: "moving objects: LSM R-tree strategy x record cluster layout x cache policy (LRU, prepopulate, Leaper) end to end",
            figures: report::figures,
            report: report::section,
        }
    }

    #[allow(clippy::expect_used)] // the default strategy names are constants that parse
    fn defaults(&self, scale: Scale) -> CombinedConfig {
        let mut index = IndexConfig::defaults_with(scale, 200_000);
        // BerlinMOD's vehicles move continuously (Gowalla's and Chicago's points sit on venues and
        // centroids, so a box around one object holds a fixed crowd whatever its size).
        index.datasets = vec![Dataset::Berlinmod];
        // Per scale: objects, memory component and cache pages, Leaper slot, records and the query
        // side (shrinking as 1/sqrt(objects) keeps a query's results per object count comparable).
        let (objects, memory_pages, cache_pages, slot_ops, records, selectivity) = match scale {
            Scale::Tiny => (800, 8, 48, 200, 8_000, 0.1),
            Scale::Small => (8_000, 32, 384, 1_000, 80_000, 0.035),
            Scale::Paper => (100_000, 512, 4_096, 20_000, 2_000_000, 0.01),
        };
        index.records = records;
        index.objects = objects;
        index.memory_pages = memory_pages;
        index.max_mergeable_pages = memory_pages * 8;
        CombinedConfig {
            strategies: ["Eager", "Validation", "UM", "UM+FMBV"]
                .iter()
                .map(|s| s.parse().expect("strategy names parse"))
                .collect(),
            layouts: Layout::ALL.to_vec(),
            policies: CachePolicy::ALL.to_vec(),
            storage: StorageConfig::with_cache_pages(cache_pages),
            index,
            record_bytes: 128,
            updates_per_query: 10,
            selectivity,
            train_fraction: 0.5,
            slot_ops,
            leaper_ranges: 1024,
            // fewer rounds at learning rate 0.05 leave every probability near the prior, below 0.5
            gbdt_rounds: if scale == Scale::Tiny { 30 } else { 50 },
            leaper_steps: 2,
            check_every: 50,
        }
    }

    /// Every (dataset, strategy, layout, policy) is its own cell: each runs its stream on its own
    /// store (Leaper trains on its own cell's log).
    fn cells(&self, cfg: &CombinedConfig, data: &[DataSpec]) -> Vec<Cell> {
        let mut keys = cfg.index.cell_keys(data);
        keys.push(("strategies", cfg.strategies.len()));
        keys.push(("layouts", cfg.layouts.len()));
        keys.push(("policies", cfg.policies.len()));
        Cell::grid(&keys)
    }

    /// The stream of every dataset is held at once, with one cell's store and the brute-force
    /// table: 400 B per record is an upper bound rounded up from the slope of peak RSS between
    /// `/usr/bin/time -v lsmlab run combined --scale tiny` and `--scale small` (measured in
    /// `docs/scale.md#memory-estimates-where-the-constants-come-from`).
    fn memory_estimate(&self, cfg: &CombinedConfig, data: &[DataSpec]) -> Option<MemoryEstimate> {
        cfg.index.memory_estimate(400, data)
    }

    fn run(&self, cfg: &CombinedConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let (datasets, mut notes) = cfg.index.datasets_and_notes(ctx, &cfg.storage, &cfg.strategies)?;
        let n = datasets.len() * cfg.strategies.len() * cfg.layouts.len() * cfg.policies.len();
        ctx.progress.set_total(n);
        let mut rows = Vec::new();
        for data in &datasets {
            let ops = data.to_ops();
            for &strategy in &cfg.strategies {
                for &layout in &cfg.layouts {
                    for &policy in &cfg.policies {
                        ctx.progress
                            .begin(format!("{} {strategy} {layout} {policy}", data.name));
                        rows.push(run_cell(cfg, data, &ops, strategy, layout, policy, ctx)?);
                    }
                }
            }
        }
        notes.extend(report::method_notes(cfg));
        Ok(RunOutput {
            rows,
            notes,
            extra_config: Default::default(),
        })
    }

    /// The answer across the grid (which switch matters most, what interferes), from every row.
    fn summary_notes(&self, rows: &[crate::experiment::Row]) -> Vec<String> {
        report::answer_notes(rows)
    }
}
