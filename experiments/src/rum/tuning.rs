//! `rum-tuning`: the cleaning thresholds swept. The Vacuum threshold `th` over 2..64 with Buffered
//! Cleaning off (UM+V) and on (UM+BV), and the Buffered threshold over the same range with Vacuum
//! Cleaning off (UM+B) and on (UM+BV), on each dataset: update time, flushes, maximum UM size, and
//! query time at one middle selectivity (Sections 4.1-4.2 of the LSM RUM-tree paper discuss the
//! trade-off; its authors swept th over 2, 4, 8, 16, 32, 64).

use super::query::query_boxes;
use super::{
    index_params_with, ingest, load_datasets, ms, parse_list, spatial_config, validate_index_params, Testbed,
    PAPER,
};
use crate::experiment::{Experiment, ParamSpec, Params, RowBuilder, RunContext, RunOutput, Scale};
use crate::result::ResultFile;
use crate::rum::report as rr;
use anyhow::Context;
use lsmlab_engine::spatial::Strategy;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub struct RumTuning;

const THRESHOLDS: [&str; 6] = ["2", "4", "8", "16", "32", "64"];

impl Experiment for RumTuning {
    fn name(&self) -> &'static str {
        "rum-tuning"
    }

    fn paper(&self) -> &'static str {
        PAPER
    }

    fn about(&self) -> &'static str {
        "LSM RUM-tree tuning: Vacuum and Buffered thresholds swept, with the other cleaning on and off"
    }

    fn params(&self, scale: Scale) -> Vec<ParamSpec> {
        let mut p: Vec<ParamSpec> = index_params_with(scale, 1_000_000)
            .into_iter()
            .filter(|s| s.key != "strategies")
            .collect();
        p.push(ParamSpec::list(
            "vacuum_thresholds",
            &THRESHOLDS,
            "Vacuum thresholds th to sweep",
        ));
        p.push(ParamSpec::list(
            "buffered_thresholds",
            &THRESHOLDS,
            "Buffered thresholds to sweep",
        ));
        p.push(ParamSpec::float(
            "selectivity",
            0.064,
            "query side fraction for the query-time measure",
        ));
        p.push(ParamSpec::int(
            "queries",
            if scale == Scale::Tiny { 10 } else { 50 },
            "queries after each ingest",
        ));
        p
    }

    fn validate(&self, params: &Params) -> anyhow::Result<()> {
        validate_index_params(params)?;
        for key in ["vacuum_thresholds", "buffered_thresholds"] {
            for t in params.list(key) {
                let ok = t.parse::<u32>().is_ok_and(|v| v >= 1);
                params.check(key, ok, "whole numbers >= 1, e.g. 2,4,8")?;
            }
        }
        let s = params.float("selectivity");
        params.check("selectivity", s > 0.0 && s <= 1.0, "a side fraction in (0, 1]")?;
        params.check("queries", params.int("queries") >= 1, "at least 1 query")
    }

    fn run(&self, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let p = ctx.params;
        let vac: Vec<u32> = parse_list(p, "vacuum_thresholds")?;
        let buf: Vec<u32> = parse_list(p, "buffered_thresholds")?;
        // (knob, threshold, strategy): the knob is swept, the other switch at its configured threshold
        let mut cells: Vec<(&str, u32, Strategy)> = Vec::new();
        for &t in &vac {
            cells.push(("vacuum_threshold", t, "UM+V".parse()?));
            cells.push(("vacuum_threshold", t, "UM+BV".parse()?));
        }
        for &t in &buf {
            cells.push(("buffered_threshold", t, "UM+B".parse()?));
            cells.push(("buffered_threshold", t, "UM+BV".parse()?));
        }
        let (datasets, mut notes) = load_datasets(ctx)?;
        ctx.progress.set_total(datasets.len() * cells.len());
        let sel = p.float("selectivity");
        let nq = p.usize("queries");
        let mut rows = Vec::new();
        for data in &datasets {
            let ops = data.to_ops();
            let boxes = query_boxes(data, sel, nq, ctx.seed);
            for &(knob, threshold, strategy) in &cells {
                ctx.progress
                    .begin(format!("{} {strategy} {knob}={threshold}", data.name));
                let mut cfg = spatial_config(p, strategy, data);
                match knob {
                    "vacuum_threshold" => cfg.vacuum_threshold = threshold,
                    _ => cfg.buffered_threshold = threshold,
                }
                let (b_th, v_th) = (cfg.buffered_threshold, cfg.vacuum_threshold);
                let mut bed = Testbed::with_config(p, cfg)?;
                let cost =
                    ingest(&mut bed, &ops, ctx).with_context(|| format!("{} under {strategy}", data.name))?;
                let io = bed.io();
                let start = Instant::now();
                let mut cands = 0u64;
                for rect in &boxes {
                    cands += bed.index.query(rect)?.candidates;
                }
                let q_us = start.elapsed().as_secs_f64() * 1e6 / nq as f64;
                let q_reads = bed.io().since(&io).page_reads as f64 / nq as f64;
                let st = bed.index.stats();
                rows.push(
                    RowBuilder::new()
                        .str("dataset", &data.name)
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
                        .num("avg_candidates", cands as f64 / nq as f64)
                        .build(),
                );
            }
        }
        notes.push(format!(
            "Sweeping one threshold keeps the other at its configured value (buffered_threshold={}, \
             vacuum_threshold={}). Query time is the mean of {nq} queries of side {sel} x the extent after \
             ingesting the whole stream.",
            p.int("buffered_threshold"),
            p.int("vacuum_threshold")
        ));
        Ok(RunOutput {
            rows,
            notes,
            extra_config: Default::default(),
        })
    }

    fn figures(&self, result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        rr::tuning_figures(result, out_dir)
    }

    fn report(&self, result: &ResultFile) -> String {
        rr::tuning_report(result)
    }
}
