//! `rum-mixed`: updates with interleaved range queries (the LSM RUM-tree authors' mixed workload:
//! 99.9% updates / 0.1% queries, plus a query-heavier mix and a skewed-query variant). Reports
//! throughput and latency percentiles of both kinds of operation.

use super::{
    apply, check_strategies, ms, IndexConfig, PhaseIo, PhaseTimes, RunData, PAPER, PHASE_NOTE,
    STREAMED_CENTRES_NOTE,
};
use crate::config::{self, check, check_items, Config, KeyHelp, StorageConfig};
use crate::experiment::{
    Cell, DataSpec, MemoryEstimate, RowBuilder, RunContext, RunOutput, Scale, TypedExperiment,
};
use crate::measure::LatencyRecorder;
use crate::rum::report as rr;
use anyhow::Context;
use lsmlab_engine::geom::{Point, Rect};
use lsmlab_engine::spatial::Strategy;
use lsmlab_engine::storage::IoStats;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

pub(crate) struct RumMixed;

/// Peak RSS per record, measured (see `memory_estimate`): per held record, per record for the
/// index's pages on the in-memory device, and per record for a query's candidates.
const PER_RECORD: super::RecordBytes = super::RecordBytes {
    held: 40,
    index: 80,
    query: 0,
};

/// Where query boxes are centred.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuerySkew {
    /// Anywhere in the data extent, uniformly (many queries fall where there is no data).
    Uniform,
    /// On an already ingested record drawn uniformly: queries follow the data's density.
    Data,
    /// Concentrated on a few hot spots: one of [`HOT_SPOTS`] ingested locations, chosen with
    /// Zipf(1) popularity, so most queries hit the same regions again and again.
    Hot,
}

/// How many hot spots the skewed-query variant uses.
pub const HOT_SPOTS: usize = 8;

impl QuerySkew {
    fn name(self) -> &'static str {
        match self {
            QuerySkew::Uniform => "uniform",
            QuerySkew::Data => "data",
            QuerySkew::Hot => "hot",
        }
    }
}

lsmlab_harness::config! {
    /// `rum-mixed`'s parameters.
    pub struct MixedConfig {
        #[doc = super::strategies_doc!()]
        #[serde(with = "config::text_list")]
        pub strategies: Vec<Strategy>,
        #[serde(flatten)]
        /// The data and index settings every RUM experiment shares (flattened: its keys are top-level
        /// `--set` keys).
        pub index: IndexConfig,
        #[serde(flatten)]
        /// The storage testbed settings (flattened: its keys are top-level `--set` keys).
        pub storage: StorageConfig,
        /// fractions of operations that are queries (the authors: 0.001, i.e. 99.9% updates)
        pub query_fractions: Vec<f64>,
        /// query centres: uniform (anywhere in the extent), data (on ingested records) or hot (8 Zipf-popular
        /// spots)
        pub query_skews: Vec<QuerySkew>,
        /// query side fraction of the extent
        pub selectivity: f64,
    }
}

impl Config for MixedConfig {
    fn adjust_help(help: &mut Vec<KeyHelp>) {
        super::strategies_after_datasets(help)
    }

    fn validate(&self) -> anyhow::Result<()> {
        check_strategies(&self.strategies)?;
        self.index.validate()?;
        self.storage.validate()?;
        check_items(
            "query_fractions",
            &self.query_fractions,
            |q| (0.0..1.0).contains(q),
            "fractions in [0, 1), e.g. 0.001,0.01",
        )?;
        let s = self.selectivity;
        check("selectivity", s, s > 0.0 && s <= 1.0, "a side fraction in (0, 1]")
    }
}

/// The mixed stream's queries: the box of each, and the update it comes before (the index of
/// the record in the data). The updates themselves are the data's operation stream in order.
type Queries = Vec<(usize, Rect)>;

/// Where a query of the mixed stream is centred: a point, or the point of the data's record at a
/// position (read once the whole schedule is drawn, [`RunData::points_at`]).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Centre {
    At(Point),
    Record(usize),
}

/// The mixed stream of a dataset `name` of `n` records in `ext`: every record in order, and before
/// each one a query with probability `q` (the same stream for every strategy). Only the queries are
/// returned, each with its centre: drawn from the seed alone, so a streamed dataset gets the
/// queries the held one gets.
fn mixed_schedule(
    name: &str,
    n: usize,
    ext: Rect,
    q: f64,
    skew: QuerySkew,
    seed: u64,
) -> Vec<(usize, Centre)> {
    let mut rng = lsmlab_workloads::seeded_rng(seed, &format!("rum-mixed/{name}/{q}/{skew:?}"));
    // hot spots: records spread over the stream, so every spot exists from early on
    let spots: Vec<usize> = (0..HOT_SPOTS)
        .map(|k| (k * n / HOT_SPOTS).min(n.saturating_sub(1)) / 4)
        .collect();
    let zipf_total: f64 = (1..=HOT_SPOTS).map(|r| 1.0 / r as f64).sum();
    let mut steps = Vec::with_capacity((n as f64 * q * 1.2) as usize);
    for i in 0..n {
        if i > 0 && rng.random_bool(q) {
            let centre = match skew {
                QuerySkew::Uniform => Centre::At(Point::new(
                    ext.min.x + rng.random::<f64>() * ext.width(),
                    ext.min.y + rng.random::<f64>() * ext.height(),
                )),
                QuerySkew::Data => Centre::Record(rng.random_range(0..i)),
                QuerySkew::Hot => {
                    let mut u = rng.random::<f64>() * zipf_total;
                    let mut rank = 0;
                    while rank + 1 < HOT_SPOTS && u > 1.0 / (rank + 1) as f64 {
                        u -= 1.0 / (rank + 1) as f64;
                        rank += 1;
                    }
                    Centre::Record(spots[rank])
                }
            };
            steps.push((i, centre));
        }
    }
    steps
}

/// The queries of every schedule of `data` ([`mixed_schedule`]), boxes of side `s`: the records'
/// points read in one go ([`RunData::points_at`], one pass of a streamed dataset for them all).
#[allow(clippy::expect_used)] // one point is drawn per record centre
fn mixed_queries(
    data: &RunData,
    schedules: Vec<Vec<(usize, Centre)>>,
    s: f64,
    ctx: &RunContext,
) -> anyhow::Result<Vec<Queries>> {
    let positions: Vec<usize> = schedules
        .iter()
        .flatten()
        .filter_map(|(_, c)| match *c {
            Centre::Record(j) => Some(j),
            Centre::At(_) => None,
        })
        .collect();
    let mut points = data.points_at(&positions, ctx)?.into_iter();
    let ext = data.header().extent;
    Ok(schedules
        .into_iter()
        .map(|steps| {
            steps
                .into_iter()
                .map(|(i, c)| {
                    let centre = match c {
                        Centre::At(p) => p,
                        Centre::Record(_) => points.next().expect("one point per record centre"),
                    };
                    (i, ext.box_around(centre, s))
                })
                .collect()
        })
        .collect())
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

impl TypedExperiment for RumMixed {
    type Config = MixedConfig;

    /// Location records: each --data path one dataset, replacing the generated ones.
    fn data_kind(&self) -> crate::experiment::DataKind {
        crate::experiment::DataKind::Locations
    }

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "rum-mixed",
            paper: PAPER,
            about: "LSM RUM-tree mixed workload: updates with interleaved range queries, throughput and latency percentiles",
            figures: rr::mixed_figures,
            report: rr::mixed_report,
        }
    }

    /// Peak RSS ([`IndexConfig::streamed_memory_estimate`], as `rum-update`): the records it holds,
    /// `PER_RECORD.held` each (none for a streamed BerlinMOD dataset,
    /// [`super::STREAM_MIN_RECORDS`]), plus the index's pages, `PER_RECORD.index` per record on the
    /// in-memory device, capped on `device = file` by the cache, the memory component and a merge's
    /// survivors. The query schedules (40 B per query: 0.4 B per record at the query fraction 0.01)
    /// are within the slopes. `held` rounds the held records up as `rum-update` does; `index` is
    /// the rest of the in-memory slope of peak RSS, rounded up: re-measure with `/usr/bin/time -v
    /// lsmlab run rum-mixed --scale small --set datasets=berlinmod --set query_fractions=0.01` at
    /// `records=500000` and `records=1000000` (the measurements are in
    /// `docs/scale.md#memory-estimates-where-the-constants-come-from`).
    fn memory_estimate(&self, config: &MixedConfig, data: &[DataSpec]) -> Option<MemoryEstimate> {
        config
            .index
            .streamed_memory_estimate(&config.storage, PER_RECORD, data)
    }

    fn defaults(&self, scale: Scale) -> MixedConfig {
        let index = IndexConfig::defaults_with(scale, 1_000_000);
        MixedConfig {
            strategies: Strategy::paper_strategies(),
            storage: index.storage_defaults_at(scale),
            index,
            query_fractions: vec![0.001, 0.01],
            query_skews: vec![QuerySkew::Data, QuerySkew::Hot],
            selectivity: 0.027,
        }
    }

    /// Dataset x query fraction x query skew x strategy, the run's own loop order: each
    /// combination's stream is drawn from the seed alone and run on a fresh index.
    fn cells(&self, cfg: &MixedConfig, data: &[DataSpec]) -> Vec<Cell> {
        let mut keys = cfg.index.cell_keys(data);
        keys.extend([
            ("query_fractions", cfg.query_fractions.len()),
            ("query_skews", cfg.query_skews.len()),
            ("strategies", cfg.strategies.len()),
        ]);
        Cell::grid(&keys)
    }

    fn run(&self, cfg: &MixedConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let p = &cfg.index;
        let strategies = &cfg.strategies;
        let fractions = &cfg.query_fractions;
        let skews = &cfg.query_skews;
        let sel = cfg.selectivity;
        let (datasets, mut notes) = p.streamed_datasets_and_notes(ctx, &cfg.storage, strategies)?;
        ctx.progress
            .set_total(datasets.len() * fractions.len() * skews.len() * strategies.len());
        let mut rows = Vec::new();
        for run_data in &datasets {
            let data = run_data.header();
            let objects = run_data.objects() as u64;
            let combos: Vec<(f64, QuerySkew)> = fractions
                .iter()
                .flat_map(|&q| skews.iter().map(move |&skew| (q, skew)))
                .collect();
            let schedules = combos
                .iter()
                .map(|&(q, skew)| mixed_schedule(&data.name, run_data.len(), data.extent, q, skew, ctx.seed))
                .collect();
            let queries = mixed_queries(run_data, schedules, sel, ctx)?;
            for (&(q, skew), queries_at) in combos.iter().zip(&queries) {
                let steps = run_data.len() + queries_at.len();
                for &strategy in strategies {
                    ctx.progress
                        .begin(format!("{} {strategy} q={q} {skew:?}", data.name));
                    let mut bed = p.testbed(&cfg.storage, strategy, data)?;
                    let (mut upd, mut qry) = (LatencyRecorder::new(), LatencyRecorder::new());
                    let (mut queries, mut q_reads, mut q_cands, mut q_lookups) = (0u64, 0u64, 0u64, 0u64);
                    let io_start = bed.io();
                    let stats_start = bed.index.stats();
                    let mut q_io = IoStats::default();
                    let start = Instant::now();
                    let mut next_query = queries_at.iter().peekable();
                    let mut n = 0usize;
                    for (i, op) in run_data.ops(ctx)?.enumerate() {
                        while let Some((_, rect)) = next_query.next_if(|(at, _)| *at == i) {
                            let io = bed.io();
                            let t = Instant::now();
                            let out = bed.index.query(rect)?;
                            qry.record(t.elapsed());
                            queries += 1;
                            let io = bed.io().since(&io);
                            q_reads += io.page_reads;
                            q_io.page_reads += io.page_reads;
                            q_io.page_writes += io.page_writes;
                            q_cands += out.candidates;
                            q_lookups += out.validation_lookups;
                            n += 1;
                        }
                        let t = Instant::now();
                        apply(&mut bed.index, &op).with_context(|| format!("update {i}"))?;
                        upd.record(t.elapsed());
                        if n.is_multiple_of(65_536) {
                            ctx.progress.count(n as u64, Some(steps as u64), "operations");
                        }
                        n += 1;
                    }
                    let elapsed = start.elapsed();
                    let io = bed.io().since(&io_start);
                    let updates = run_data.len() as u64;
                    let per = |n: u64| if n == 0 { 1.0 } else { n as f64 };
                    let mut row = p
                        .objects_fields(
                            RowBuilder::new().str("dataset", &data.name),
                            objects,
                            &cfg.storage,
                        )
                        .str("strategy", strategy.to_string())
                        .num("query_fraction", q)
                        .str("query_skew", skew.name())
                        .int("ops", steps as u64)
                        .int("queries", queries)
                        .num("throughput_ops_s", steps as f64 / elapsed.as_secs_f64().max(1e-9))
                        .num("avg_update_us", us(upd.total()) / per(updates))
                        .num("p99_update_us", upd.quantile_us(0.99))
                        .num("p99_9_update_us", upd.quantile_us(0.999))
                        .num("max_update_us", upd.max_us());
                    if queries > 0 {
                        row = row
                            .num("avg_query_us", qry.mean_us())
                            .num("p99_query_us", qry.quantile_us(0.99))
                            .num("avg_query_page_reads", q_reads as f64 / queries as f64)
                            .num("avg_candidates", q_cands as f64 / queries as f64)
                            .num("avg_validation_lookups", q_lookups as f64 / queries as f64);
                    }
                    let st = bed.index.stats();
                    let row = row
                        .int("page_reads", io.page_reads)
                        .int("page_writes", io.page_writes)
                        .int("flushes", st.rtree.flushes)
                        .int("merges", st.rtree.merges)
                        .num("modelled_ms", ms(elapsed) + bed.storage.modelled_io_ms(io));
                    let phases = PhaseIo::split(io, &stats_start, &st, q_io);
                    let (flush, merge) = (
                        st.flush_time() - stats_start.flush_time(),
                        st.merge_time() - stats_start.merge_time(),
                    );
                    let times = PhaseTimes {
                        update: elapsed.saturating_sub(flush + merge + qry.total()),
                        flush,
                        merge,
                        query: qry.total(),
                    };
                    rows.push(phases.fields(row, &times, &bed.storage, true).build());
                }
            }
        }
        if datasets.iter().any(RunData::is_streamed) {
            notes.push(STREAMED_CENTRES_NOTE.into());
        }
        notes.push(
            "Update latencies include the flushes and merges that an update triggers (they run inside the \
             stream), which is what p99/max show. A cell with no queries (query_fraction too small for the \
             stream) has no query fields."
                .into(),
        );
        notes.push(format!(
            "{PHASE_NOTE} Here update_modelled_ms is the stream's wall time outside flushes, merges and \
             queries (it includes the harness's per-operation timing)."
        ));
        notes.push(format!(
            "Query boxes have side {sel} x the extent; 'data' centres them on an already ingested record \
             (the data's density), 'hot' on one of {HOT_SPOTS} ingested locations with Zipf(1) popularity, \
             'uniform' anywhere in the extent."
        ));
        Ok(RunOutput {
            rows,
            notes,
            extra_config: Default::default(),
        })
    }
}
