//! `rum-tuning`: the cleaning thresholds swept. The Vacuum threshold `th` over 2..64 with Buffered
//! Cleaning off (UM+V) and on (UM+BV), and the Buffered threshold over the same range with Vacuum
//! Cleaning off (UM+B) and on (UM+BV), on each dataset: update time, flushes, maximum UM size, and
//! query time at one middle selectivity (Sections 4.1-4.2 of the LSM RUM-tree paper discuss the
//! trade-off; its authors swept th over 2, 4, 8, 16, 32, 64).

use super::query::query_boxes;
use super::{
    ms, IndexConfig, PhaseIo, PhaseTimes, RunData, Testbed, PAPER, PHASE_NOTE, STREAMED_CENTRES_NOTE,
};
use crate::config::{check, check_items, Config, StorageConfig};
use crate::experiment::{
    Cell, DataSpec, MemoryEstimate, RowBuilder, RunContext, RunOutput, Scale, TypedExperiment,
};
use crate::rum::report as rr;
use anyhow::Context;
use lsmlab_engine::spatial::Strategy;
use std::time::Instant;

pub(crate) struct RumTuning;

/// Peak RSS per record, measured (see `memory_estimate`): per held record, per record for the
/// index's pages on the in-memory device, and per record for a query's candidates.
const PER_RECORD: super::RecordBytes = super::RecordBytes {
    held: 40,
    index: 90,
    query: 0,
};

const THRESHOLDS: [u32; 6] = [2, 4, 8, 16, 32, 64];

lsmlab_harness::config! {
    /// `rum-tuning`'s parameters (the strategies are fixed: UM+V, UM+B and UM+BV).
    pub struct TuningConfig {
        #[serde(flatten)]
        /// The data and index settings every RUM experiment shares (flattened: its keys are top-level
        /// `--set` keys).
        pub index: IndexConfig,
        #[serde(flatten)]
        /// The storage testbed settings (flattened: its keys are top-level `--set` keys).
        pub storage: StorageConfig,
        /// Vacuum thresholds th to sweep
        pub vacuum_thresholds: Vec<u32>,
        /// Buffered thresholds to sweep
        pub buffered_thresholds: Vec<u32>,
        /// query side fraction for the query-time measure
        pub selectivity: f64,
        /// queries after each ingest
        pub queries: usize,
    }
}

impl Config for TuningConfig {
    fn validate(&self) -> anyhow::Result<()> {
        self.index.validate()?;
        self.storage.validate()?;
        for (key, list) in [
            ("vacuum_thresholds", &self.vacuum_thresholds),
            ("buffered_thresholds", &self.buffered_thresholds),
        ] {
            check_items(key, list, |&t| t >= 1, "whole numbers >= 1, e.g. 2,4,8")?;
        }
        let s = self.selectivity;
        check("selectivity", s, s > 0.0 && s <= 1.0, "a side fraction in (0, 1]")?;
        check("queries", self.queries, self.queries >= 1, "at least 1 query")
    }
}

impl TypedExperiment for RumTuning {
    type Config = TuningConfig;

    /// Location records: each --data path one dataset, replacing the generated ones.
    fn data_kind(&self) -> crate::experiment::DataKind {
        crate::experiment::DataKind::Locations
    }

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "rum-tuning",
            paper: PAPER,
            about: "LSM RUM-tree tuning: Vacuum and Buffered thresholds swept, with the other cleaning on and off",
            figures: rr::tuning_figures,
            report: rr::tuning_report,
        }
    }

    /// Peak RSS ([`IndexConfig::streamed_memory_estimate`], as `rum-update`): the records it holds,
    /// `PER_RECORD.held` each (none for a streamed BerlinMOD dataset,
    /// [`super::STREAM_MIN_RECORDS`]), plus the index's pages, `PER_RECORD.index` per record on the
    /// in-memory device, capped on `device = file` by the cache, the memory component and a merge's
    /// survivors. `index` is the in-memory slope of peak RSS less the held records, rounded up:
    /// re-measure with `/usr/bin/time -v lsmlab run rum-tuning --scale small --set
    /// datasets=berlinmod` at `records=500000` and `records=1000000` (the measurements are in
    /// `docs/scale.md#memory-estimates-where-the-constants-come-from`).
    fn memory_estimate(&self, config: &TuningConfig, data: &[DataSpec]) -> Option<MemoryEstimate> {
        config
            .index
            .streamed_memory_estimate(&config.storage, PER_RECORD, data)
    }

    fn defaults(&self, scale: Scale) -> TuningConfig {
        let index = IndexConfig::defaults_with(scale, 1_000_000);
        TuningConfig {
            storage: index.storage_defaults_at(scale),
            index,
            vacuum_thresholds: THRESHOLDS.to_vec(),
            buffered_thresholds: THRESHOLDS.to_vec(),
            selectivity: 0.064,
            queries: if scale == Scale::Tiny { 10 } else { 50 },
        }
    }

    /// Datasets only (the thresholds of a dataset are one cell, in the run's interleaved order).
    fn cells(&self, cfg: &TuningConfig, data: &[DataSpec]) -> Vec<Cell> {
        Cell::grid(&cfg.index.cell_keys(data))
    }

    fn run(&self, cfg: &TuningConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let p = &cfg.index;
        let (vac, buf) = (&cfg.vacuum_thresholds, &cfg.buffered_thresholds);
        // (knob, threshold, strategy): the knob is swept, the other switch at its configured threshold
        let mut cells: Vec<(&str, u32, Strategy)> = Vec::new();
        for &t in vac {
            cells.push(("vacuum_threshold", t, "UM+V".parse()?));
            cells.push(("vacuum_threshold", t, "UM+BV".parse()?));
        }
        for &t in buf {
            cells.push(("buffered_threshold", t, "UM+B".parse()?));
            cells.push(("buffered_threshold", t, "UM+BV".parse()?));
        }
        let (datasets, mut notes) =
            p.streamed_datasets_and_notes(ctx, &cfg.storage, &cells.iter().map(|c| c.2).collect::<Vec<_>>())?;
        ctx.progress.set_total(datasets.len() * cells.len());
        let sel = cfg.selectivity;
        let nq = cfg.queries;
        let mut rows = Vec::new();
        for run_data in &datasets {
            let data = run_data.header();
            let objects = run_data.objects() as u64;
            let boxes = query_boxes(run_data, &[sel], nq, ctx.seed, ctx)?.remove(0);
            for &(knob, threshold, strategy) in &cells {
                ctx.progress
                    .begin(format!("{} {strategy} {knob}={threshold}", data.name));
                let mut index_cfg = p.spatial_config(strategy, data);
                match knob {
                    "vacuum_threshold" => index_cfg.vacuum_threshold = threshold,
                    _ => index_cfg.buffered_threshold = threshold,
                }
                let (b_th, v_th) = (index_cfg.buffered_threshold, index_cfg.vacuum_threshold);
                let mut bed = Testbed::new(&cfg.storage, index_cfg)?;
                let cost = run_data
                    .ingest(&mut bed, ctx)
                    .with_context(|| format!("{} under {strategy}", data.name))?;
                let io = bed.io();
                let start = Instant::now();
                let mut cands = 0u64;
                for rect in &boxes {
                    cands += bed.index.query(rect)?.candidates;
                }
                let query_time = start.elapsed();
                let query_io = bed.io().since(&io);
                let q_us = query_time.as_secs_f64() * 1e6 / nq as f64;
                let q_reads = query_io.page_reads as f64 / nq as f64;
                let st = bed.index.stats();
                let row = p
                    .objects_fields(
                        RowBuilder::new().str("dataset", &data.name),
                        objects,
                        &cfg.storage,
                    )
                    .str("knob", knob)
                    .int("threshold", threshold)
                    .str("strategy", strategy.to_string())
                    .int("buffered_threshold", b_th)
                    .int("vacuum_threshold", v_th)
                    .num("update_ms", ms(cost.update()))
                    .num("total_ms", ms(cost.total))
                    .int("flushes", st.rtree.flushes)
                    .int("merges", st.rtree.merges)
                    .int("um_max_entries", st.um_max_entries)
                    .int("cleaned_buffered", st.cleaned.buffered)
                    .int("cleaned_vacuum", st.cleaned.vacuum)
                    .num("avg_query_us", q_us)
                    .num("avg_query_page_reads", q_reads)
                    .num("avg_candidates", cands as f64 / nq as f64);
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
        }
        if datasets.iter().any(RunData::is_streamed) {
            notes.push(STREAMED_CENTRES_NOTE.into());
        }
        notes.push(format!(
            "{PHASE_NOTE} query is the {nq} queries after the ingest, together."
        ));
        notes.push(format!(
            "Sweeping one threshold keeps the other at its configured value (buffered_threshold={}, \
             vacuum_threshold={}). Query time is the mean of {nq} queries of side {sel} x the extent after \
             ingesting the whole stream.",
            p.buffered_threshold, p.vacuum_threshold
        ));
        Ok(RunOutput {
            rows,
            notes,
            extra_config: Default::default(),
        })
    }
}
