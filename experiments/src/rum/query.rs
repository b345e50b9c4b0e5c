//! `rum-query`: range-query cost after ingestion, per strategy and selectivity (the LSM RUM-tree
//! paper's Figure 6). Every strategy answers the same queries, and the run fails if any two
//! strategies return different result sets.

use super::{index_params, ingest, load_datasets, parse_list, validate_index_params, Testbed, PAPER};
use crate::experiment::{Experiment, ParamSpec, Params, RowBuilder, RunContext, RunOutput, Scale};
use crate::result::ResultFile;
use crate::rum::report as rr;
use anyhow::{bail, Context};
use hdrhistogram::Histogram;
use lsmlab_engine::geom::Rect;
use lsmlab_engine::spatial::Strategy;
use lsmlab_workloads::Trajectories;
use rand::Rng;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The paper's query side fractions (area 0.0001% .. 11.76% of the extent).
pub const SELECTIVITIES: [f64; 7] = [0.001, 0.008, 0.027, 0.064, 0.125, 0.216, 0.343];

pub struct RumQuery;

/// A query's result set as (fingerprint, size).
type Fingerprint = (u64, usize);

/// Query boxes of side `s` x extent centred on points drawn from the data (hot spots), the same
/// for every strategy of a dataset.
pub fn query_boxes(data: &Trajectories, s: f64, n: usize, seed: u64) -> Vec<Rect> {
    let mut rng = lsmlab_workloads::seeded_rng(seed, &format!("rum-query/{}/{s}", data.name));
    (0..n)
        .map(|_| {
            let r = &data.records[rng.random_range(0..data.records.len())];
            data.extent.box_around(r.point, s)
        })
        .collect()
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

impl Experiment for RumQuery {
    fn name(&self) -> &'static str {
        "rum-query"
    }

    fn paper(&self) -> &'static str {
        PAPER
    }

    fn about(&self) -> &'static str {
        "LSM RUM-tree Fig. 6: range-query time, page reads and candidates per strategy and selectivity"
    }

    fn params(&self, scale: Scale) -> Vec<ParamSpec> {
        let mut p = index_params(scale);
        let queries = if scale == Scale::Tiny { 20 } else { 100 };
        p.push(ParamSpec::int(
            "queries",
            queries,
            "queries per selectivity (the paper: 100)",
        ));
        p.push(ParamSpec::list(
            "selectivities",
            &["0.001", "0.008", "0.027", "0.064", "0.125", "0.216", "0.343"],
            "query side fractions of the data extent",
        ));
        p
    }

    fn validate(&self, params: &Params) -> anyhow::Result<()> {
        validate_index_params(params)?;
        params.check("queries", params.int("queries") >= 1, "at least 1 query")?;
        for s in params.list("selectivities") {
            let ok = s.parse::<f64>().is_ok_and(|v| v > 0.0 && v <= 1.0);
            params.check("selectivities", ok, "side fractions in (0, 1], e.g. 0.001,0.027")?;
        }
        Ok(())
    }

    fn run(&self, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let p = ctx.params;
        let strategies: Vec<Strategy> = parse_list(p, "strategies")?;
        let sels: Vec<f64> = parse_list(p, "selectivities")?;
        let nq = p.usize("queries");
        let page_size = p.usize("page_size");
        let (datasets, mut notes) = load_datasets(ctx)?;
        ctx.progress.set_total(datasets.len() * strategies.len());
        let mut rows = Vec::new();
        for data in &datasets {
            let ops = data.to_ops();
            let boxes: Vec<Vec<Rect>> = sels.iter().map(|&s| query_boxes(data, s, nq, ctx.seed)).collect();
            // fingerprints[sel][query] of the first strategy, to check the others against
            let mut reference: Option<(Strategy, Vec<Vec<Fingerprint>>)> = None;
            for &strategy in &strategies {
                ctx.progress.begin(format!("{} {strategy}", data.name));
                let mut bed = Testbed::new(p, strategy, data)?;
                ingest(&mut bed, &ops, ctx).with_context(|| format!("{} under {strategy}", data.name))?;
                ctx.progress.message("querying");
                let mut prints = Vec::with_capacity(sels.len());
                for (si, &s) in sels.iter().enumerate() {
                    let mut hist = Histogram::<u64>::new(3).expect("valid histogram precision");
                    let (mut reads, mut cands, mut results, mut lookups, mut total_us, mut modelled_us) =
                        (0u64, 0u64, 0u64, 0u64, 0f64, 0f64);
                    let mut sel_prints = Vec::with_capacity(nq);
                    for rect in &boxes[si] {
                        let io = bed.io();
                        let start = Instant::now();
                        let out = bed.index.query(rect)?;
                        let us = start.elapsed().as_secs_f64() * 1e6;
                        let io = bed.io().since(&io);
                        hist.record((us.ceil() as u64).max(1)).expect("histogram grows");
                        reads += io.page_reads;
                        cands += out.candidates;
                        results += out.results.len() as u64;
                        lookups += out.validation_lookups;
                        total_us += us;
                        modelled_us += us + bed.profile.modelled_io_ms(io, page_size) * 1e3;
                        let mut oids: Vec<u64> = out.results.iter().map(|e| e.oid).collect();
                        sel_prints.push((fingerprint(&mut oids), oids.len()));
                    }
                    prints.push(sel_prints);
                    let n = nq as f64;
                    rows.push(
                        RowBuilder::new()
                            .str("dataset", &data.name)
                            .str("strategy", strategy.to_string())
                            .num("selectivity", s)
                            .int("queries", nq as u64)
                            .num("avg_query_us", total_us / n)
                            .num("p95_query_us", hist.value_at_quantile(0.95) as f64)
                            .num("avg_page_reads", reads as f64 / n)
                            .num("avg_candidates", cands as f64 / n)
                            .num("avg_results", results as f64 / n)
                            .num("avg_validation_lookups", lookups as f64 / n)
                            .num("avg_modelled_us", modelled_us / n)
                            .build(),
                    );
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
            p.int("cache_pages"),
            nq
        ));
        notes.push(format!(
            "avg_modelled_us = measured query time + counted page reads x the {} profile.",
            p.str("profile")
        ));
        Ok(RunOutput {
            rows,
            notes,
            extra_config: Default::default(),
        })
    }

    fn figures(&self, result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        rr::query_figures(result, out_dir)
    }

    fn report(&self, result: &ResultFile) -> String {
        rr::query_report(result)
    }
}
