//! `rum-query`: range-query cost after ingestion, per strategy and selectivity (the LSM RUM-tree
//! paper's Figure 6). Every strategy answers the same queries, and the run fails if any two
//! strategies return different result sets.

use super::{
    check_strategies, IndexConfig, PhaseIo, PhaseTimes, RunData, PAPER, PHASE_NOTE, STREAMED_CENTRES_NOTE,
};
use crate::config::{self, check, check_items, Config, KeyHelp, StorageConfig};
use crate::experiment::{
    Cell, DataSpec, MemoryEstimate, RowBuilder, RunContext, RunOutput, Scale, TypedExperiment,
};
use crate::measure::LatencyRecorder;
use crate::rum::report as rr;
use anyhow::{bail, Context};
use lsmlab_engine::geom::Rect;
use lsmlab_engine::spatial::Strategy;
use lsmlab_engine::storage::IoStats;
use rand::Rng;
use std::time::{Duration, Instant};

/// The paper's query side fractions (area 0.0001% .. 11.76% of the extent).
pub const SELECTIVITIES: [f64; 7] = [0.001, 0.008, 0.027, 0.064, 0.125, 0.216, 0.343];

pub(crate) struct RumQuery;

/// Peak RSS per record, measured (see `memory_estimate`): per held record, per record for the
/// index's pages on the in-memory device, and per record for a query's candidates.
const PER_RECORD: super::RecordBytes = super::RecordBytes {
    held: 40,
    index: 110,
    query: 16,
};

lsmlab_harness::config! {
    /// `rum-query`'s parameters.
    pub struct QueryConfig {
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
        /// queries per selectivity (the paper: 100)
        pub queries: usize,
        /// query side fractions of the data extent
        pub selectivities: Vec<f64>,
    }
}

impl Config for QueryConfig {
    fn adjust_help(help: &mut Vec<KeyHelp>) {
        super::strategies_after_datasets(help)
    }

    fn validate(&self) -> anyhow::Result<()> {
        check_strategies(&self.strategies)?;
        self.index.validate()?;
        self.storage.validate()?;
        check("queries", self.queries, self.queries >= 1, "at least 1 query")?;
        check_items(
            "selectivities",
            &self.selectivities,
            |&s| s > 0.0 && s <= 1.0,
            "side fractions in (0, 1], e.g. 0.001,0.027",
        )
    }
}

/// A query's result set as (fingerprint, size).
type Fingerprint = (u64, usize);

/// Query boxes of side `s` x extent centred on points drawn from the data (hot spots), the same
/// for every strategy of a dataset: one list of `n` per side fraction in `sides`. The records are
/// drawn by position first ([`query_centres`]) and their points read after
/// ([`RunData::points_at`]), so a streamed dataset gets the boxes the held one gets.
pub(crate) fn query_boxes(
    data: &RunData,
    sides: &[f64],
    n: usize,
    seed: u64,
    ctx: &RunContext,
) -> anyhow::Result<Vec<Vec<Rect>>> {
    if n == 0 {
        return Ok(vec![Vec::new(); sides.len()]);
    }
    let header = data.header();
    let positions: Vec<usize> = sides
        .iter()
        .flat_map(|&s| query_centres(&header.name, data.len(), s, n, seed))
        .collect();
    let points = data.points_at(&positions, ctx)?;
    Ok(sides
        .iter()
        .zip(points.chunks(n))
        .map(|(&s, points)| points.iter().map(|&p| header.extent.box_around(p, s)).collect())
        .collect())
}

/// The positions of the `n` records that centre the queries of side `s` on dataset `name` of
/// `records` records, drawn from the seed alone.
pub fn query_centres(name: &str, records: usize, s: f64, n: usize, seed: u64) -> Vec<usize> {
    let mut rng = lsmlab_workloads::seeded_rng(seed, &format!("rum-query/{name}/{s}"));
    (0..n).map(|_| rng.random_range(0..records)).collect()
}

/// An order-independent fingerprint of a result set (sorted object ids, FNV-1a).
pub fn fingerprint(oids: &mut [u64]) -> u64 {
    oids.sort_unstable();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for o in oids.iter() {
        for b in o.to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

impl TypedExperiment for RumQuery {
    type Config = QueryConfig;

    /// Location records: each --data path one dataset, replacing the generated ones.
    fn data_kind(&self) -> crate::experiment::DataKind {
        crate::experiment::DataKind::Locations
    }

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "rum-query",
            paper: PAPER,
            about: "LSM RUM-tree Fig. 6: range-query time, page reads and candidates per strategy and selectivity",
            figures: rr::query_figures,
            report: rr::query_report,
        }
    }

    /// Peak RSS ([`IndexConfig::streamed_memory_estimate`], as `rum-update`): the records it holds,
    /// `PER_RECORD.held` each (none for a streamed BerlinMOD dataset,
    /// [`super::STREAM_MIN_RECORDS`]), plus the index's pages, `PER_RECORD.index` per record on the
    /// in-memory device, capped on `device = file` by the cache, the memory component and a merge's
    /// survivors. `held` rounds the held records up as `rum-update` does; `index` is the rest of
    /// the in-memory slope of peak RSS, rounded up: re-measure with `/usr/bin/time -v lsmlab run
    /// rum-query --scale small --set datasets=berlinmod` at `records=500000` and
    /// `records=1000000`. At settings far below the paper's the cap undercounts (device=file with
    /// a small memory component grows by more than the held records), most of it the queries'
    /// candidates (their vector, doubling as it grows, may hold up to three times their 32 B while
    /// it reallocates). A query gathers every candidate of every component (32 B each) before it
    /// validates any (`LsmRTree::query`), and the largest, side 0.343, finds about 0.39 candidates
    /// per record on BerlinMOD (21,929,237 per query over the whole 56M-record stream).
    /// `PER_RECORD.query` per record, never capped, holds them. The measurements, including the
    /// paper-scale peak against `rum-update`'s, are in
    /// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
    fn memory_estimate(&self, config: &QueryConfig, data: &[DataSpec]) -> Option<MemoryEstimate> {
        config
            .index
            .streamed_memory_estimate(&config.storage, PER_RECORD, data)
    }

    fn defaults(&self, scale: Scale) -> QueryConfig {
        let index = IndexConfig::defaults(scale);
        QueryConfig {
            strategies: super::reported_strategies(),
            storage: index.storage_defaults_at(scale),
            index,
            queries: if scale == Scale::Tiny { 20 } else { 100 },
            selectivities: SELECTIVITIES.to_vec(),
        }
    }

    /// Datasets only: the strategies of a dataset stay in one cell, since each one's answers are
    /// checked against the first strategy's.
    fn cells(&self, cfg: &QueryConfig, data: &[DataSpec]) -> Vec<Cell> {
        Cell::grid(&cfg.index.cell_keys(data))
    }

    fn run(&self, cfg: &QueryConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let p = &cfg.index;
        let strategies = &cfg.strategies;
        let sels = &cfg.selectivities;
        let nq = cfg.queries;
        let (datasets, mut notes) = p.streamed_datasets_and_notes(ctx, &cfg.storage, strategies)?;
        ctx.progress.set_total(datasets.len() * strategies.len());
        let mut rows = Vec::new();
        for run_data in &datasets {
            let data = run_data.header();
            let objects = run_data.objects() as u64;
            let boxes = query_boxes(run_data, sels, nq, ctx.seed, ctx)?;
            // fingerprints[sel][query] of the first strategy, to check the others against
            let mut reference: Option<(Strategy, Vec<Vec<Fingerprint>>)> = None;
            for &strategy in strategies {
                ctx.progress.begin(format!("{} {strategy}", data.name));
                let mut bed = p.testbed(&cfg.storage, strategy, data)?;
                let cost = run_data
                    .ingest(&mut bed, ctx)
                    .with_context(|| format!("{} under {strategy}", data.name))?;
                ctx.progress.message("querying");
                let mut prints = Vec::with_capacity(sels.len());
                for (si, &s) in sels.iter().enumerate() {
                    let mut latency = LatencyRecorder::new();
                    let (mut cands, mut results, mut lookups, mut modelled_us) = (0u64, 0u64, 0u64, 0f64);
                    let (mut query_io, mut query_time) = (IoStats::default(), Duration::ZERO);
                    let mut sel_prints = Vec::with_capacity(nq);
                    for rect in &boxes[si] {
                        let io = bed.io();
                        let start = Instant::now();
                        let out = bed.index.query(rect)?;
                        let took = start.elapsed();
                        let io = bed.io().since(&io);
                        latency.record(took);
                        query_io.page_reads += io.page_reads;
                        query_io.page_writes += io.page_writes;
                        query_time += took;
                        cands += out.candidates;
                        results += out.results.len() as u64;
                        lookups += out.validation_lookups;
                        modelled_us += took.as_secs_f64() * 1e6 + bed.storage.modelled_io_ms(io) * 1e3;
                        let mut oids: Vec<u64> = out.results.iter().map(|e| e.oid).collect();
                        sel_prints.push((fingerprint(&mut oids), oids.len()));
                    }
                    prints.push(sel_prints);
                    let n = nq as f64;
                    let row = p
                        .objects_fields(
                            RowBuilder::new().str("dataset", &data.name),
                            objects,
                            &cfg.storage,
                        )
                        .str("strategy", strategy.to_string())
                        .num("selectivity", s)
                        .int("queries", nq as u64)
                        .num("avg_query_us", latency.mean_us())
                        .num("p95_query_us", latency.quantile_us(0.95))
                        .num("avg_page_reads", query_io.page_reads as f64 / n)
                        .num("avg_candidates", cands as f64 / n)
                        .num("avg_results", results as f64 / n)
                        .num("avg_validation_lookups", lookups as f64 / n)
                        .num("avg_modelled_us", modelled_us / n);
                    let phases = PhaseIo {
                        query: query_io,
                        ..cost.phases
                    };
                    let times = PhaseTimes {
                        query: query_time,
                        ..cost.times()
                    };
                    rows.push(phases.fields(row, &times, &bed.storage, true).build());
                }
                match &reference {
                    None => reference = Some((strategy, prints)),
                    Some((first, expected)) => {
                        for (si, (a, b)) in expected.iter().zip(&prints).enumerate() {
                            if let Some(q) = (0..a.len()).find(|&q| a[q] != b[q]) {
                                bail!(
                                    "{}: {strategy} and {first} disagree on query {q} at selectivity {}: {} vs {} \
                                     results; the index is wrong",
                                    data.name,
                                    sels[si],
                                    b[q].1,
                                    a[q].1
                                );
                            }
                        }
                    }
                }
            }
        }
        notes.push(format!(
            "Queries run after ingesting the whole stream, with the buffer cache as ingestion left it \
             ({} pages). Query boxes are squares of side s x the extent's width/height, centred on \
             points drawn from the data; every strategy answered the same {} queries per selectivity \
             with identical result sets (checked).",
            cfg.storage.cache_pages, nq
        ));
        if datasets.iter().any(RunData::is_streamed) {
            notes.push(STREAMED_CENTRES_NOTE.into());
        }
        notes.push(format!(
            "avg_modelled_us = measured query time + counted page reads x the {} profile.",
            cfg.storage.profile
        ));
        notes.push(format!(
            "{PHASE_NOTE} update, flush and merge are the ingest before the queries (the same in every \
             selectivity's row); query is that selectivity's {nq} queries together."
        ));
        Ok(RunOutput {
            rows,
            notes,
            extra_config: Default::default(),
        })
    }
}
