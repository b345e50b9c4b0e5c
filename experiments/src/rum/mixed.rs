//! `rum-mixed`: updates with interleaved range queries (the LSM RUM-tree authors' mixed workload:
//! 99.9% updates / 0.1% queries, plus a query-heavier mix and a skewed-query variant). Reports
//! throughput and latency percentiles of both kinds of operation.

use super::{apply, index_params_with, load_datasets, ms, parse_list, validate_index_params, Testbed, PAPER};
use crate::experiment::{Experiment, ParamSpec, Params, RowBuilder, RunContext, RunOutput, Scale};
use crate::result::ResultFile;
use crate::rum::report as rr;
use anyhow::Context;
use hdrhistogram::Histogram;
use lsmlab_engine::geom::{Point, Rect};
use lsmlab_engine::spatial::Strategy;
use lsmlab_workloads::Trajectories;
use rand::Rng;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct RumMixed;

/// Where query boxes are centred.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// The accepted `query_skews` values.
pub const SKEWS: [&str; 3] = ["uniform", "data", "hot"];

impl QuerySkew {
    fn parse(s: &str) -> Option<QuerySkew> {
        match s {
            "uniform" => Some(QuerySkew::Uniform),
            "data" => Some(QuerySkew::Data),
            "hot" => Some(QuerySkew::Hot),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            QuerySkew::Uniform => "uniform",
            QuerySkew::Data => "data",
            QuerySkew::Hot => "hot",
        }
    }
}

/// One step of the mixed stream: the i-th update of the data, or a query box.
enum Step {
    Update(usize),
    Query(Rect),
}

/// The mixed stream: every record in order, and before each one a query with probability `q`
/// (the same stream for every strategy).
fn mixed_stream(data: &Trajectories, q: f64, skew: QuerySkew, s: f64, seed: u64) -> Vec<Step> {
    let mut rng = lsmlab_workloads::seeded_rng(seed, &format!("rum-mixed/{}/{q}/{skew:?}", data.name));
    let ext = data.extent;
    // hot spots: records spread over the stream, so every spot exists from early on
    let n = data.records.len();
    let spots: Vec<Point> = (0..HOT_SPOTS)
        .map(|k| data.records[(k * n / HOT_SPOTS).min(n - 1) / 4].point)
        .collect();
    let zipf_total: f64 = (1..=HOT_SPOTS).map(|r| 1.0 / r as f64).sum();
    let mut steps = Vec::with_capacity(n + (n as f64 * q * 1.2) as usize);
    for i in 0..n {
        if i > 0 && rng.random_bool(q) {
            let centre = match skew {
                QuerySkew::Uniform => Point::new(
                    ext.min.x + rng.random::<f64>() * ext.width(),
                    ext.min.y + rng.random::<f64>() * ext.height(),
                ),
                QuerySkew::Data => data.records[rng.random_range(0..i)].point,
                QuerySkew::Hot => {
                    let mut u = rng.random::<f64>() * zipf_total;
                    let mut rank = 0;
                    while rank + 1 < HOT_SPOTS && u > 1.0 / (rank + 1) as f64 {
                        u -= 1.0 / (rank + 1) as f64;
                        rank += 1;
                    }
                    spots[rank]
                }
            };
            steps.push(Step::Query(ext.box_around(centre, s)));
        }
        steps.push(Step::Update(i));
    }
    steps
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

impl Experiment for RumMixed {
    fn name(&self) -> &'static str {
        "rum-mixed"
    }

    fn paper(&self) -> &'static str {
        PAPER
    }

    fn about(&self) -> &'static str {
        "LSM RUM-tree mixed workload: updates with interleaved range queries, throughput and latency percentiles"
    }

    fn params(&self, scale: Scale) -> Vec<ParamSpec> {
        let mut p = index_params_with(scale, 1_000_000);
        p.push(ParamSpec::list(
            "query_fractions",
            &["0.001", "0.01"],
            "fractions of operations that are queries (the authors: 0.001, i.e. 99.9% updates)",
        ));
        p.push(ParamSpec::list(
            "query_skews",
            &["data", "hot"],
            "query centres: uniform (anywhere in the extent), data (on ingested records) or hot (8 Zipf-popular spots)",
        ));
        p.push(ParamSpec::float(
            "selectivity",
            0.027,
            "query side fraction of the extent",
        ));
        p
    }

    fn validate(&self, params: &Params) -> anyhow::Result<()> {
        validate_index_params(params)?;
        for q in params.list("query_fractions") {
            let ok = q.parse::<f64>().is_ok_and(|v| (0.0..1.0).contains(&v));
            params.check("query_fractions", ok, "fractions in [0, 1), e.g. 0.001,0.01")?;
        }
        params.check_list_choices("query_skews", &SKEWS)?;
        let s = params.float("selectivity");
        params.check("selectivity", s > 0.0 && s <= 1.0, "a side fraction in (0, 1]")
    }

    fn run(&self, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let p = ctx.params;
        let strategies: Vec<Strategy> = parse_list(p, "strategies")?;
        let fractions: Vec<f64> = parse_list(p, "query_fractions")?;
        let skews: Vec<QuerySkew> = p
            .list("query_skews")
            .iter()
            .map(|s| QuerySkew::parse(s).expect("validated"))
            .collect();
        let sel = p.float("selectivity");
        let page_size = p.usize("page_size");
        let (datasets, mut notes) = load_datasets(ctx)?;
        ctx.progress
            .set_total(datasets.len() * fractions.len() * skews.len() * strategies.len());
        let mut rows = Vec::new();
        for data in &datasets {
            let ops = data.to_ops();
            for &q in &fractions {
                for &skew in &skews {
                    let steps = mixed_stream(data, q, skew, sel, ctx.seed);
                    for &strategy in &strategies {
                        ctx.progress
                            .begin(format!("{} {strategy} q={q} {skew:?}", data.name));
                        let mut bed = Testbed::new(p, strategy, data)?;
                        let mut upd = Histogram::<u64>::new(3).expect("valid precision");
                        let mut qry = Histogram::<u64>::new(3).expect("valid precision");
                        let (mut upd_total, mut qry_total) = (Duration::ZERO, Duration::ZERO);
                        let (mut queries, mut q_reads, mut q_cands, mut q_lookups) = (0u64, 0u64, 0u64, 0u64);
                        let io_start = bed.io();
                        let start = Instant::now();
                        for (n, step) in steps.iter().enumerate() {
                            match step {
                                Step::Update(i) => {
                                    let t = Instant::now();
                                    apply(&mut bed.index, &ops[*i]).with_context(|| format!("update {i}"))?;
                                    let d = t.elapsed();
                                    upd_total += d;
                                    upd.record(d.as_nanos().max(1) as u64).expect("histogram grows");
                                }
                                Step::Query(rect) => {
                                    let io = bed.io();
                                    let t = Instant::now();
                                    let out = bed.index.query(rect)?;
                                    let d = t.elapsed();
                                    qry_total += d;
                                    qry.record(d.as_nanos().max(1) as u64).expect("histogram grows");
                                    queries += 1;
                                    q_reads += bed.io().since(&io).page_reads;
                                    q_cands += out.candidates;
                                    q_lookups += out.validation_lookups;
                                }
                            }
                            if n % 65_536 == 0 {
                                ctx.progress.tick(|| format!("{n} / {} operations", steps.len()));
                            }
                        }
                        let elapsed = start.elapsed();
                        let io = bed.io().since(&io_start);
                        let updates = ops.len() as u64;
                        let per = |n: u64| if n == 0 { 1.0 } else { n as f64 };
                        let mut row = RowBuilder::new()
                            .str("dataset", &data.name)
                            .str("strategy", strategy.to_string())
                            .num("query_fraction", q)
                            .str("query_skew", skew.name())
                            .int("ops", steps.len() as u64)
                            .int("queries", queries)
                            .num(
                                "throughput_ops_s",
                                steps.len() as f64 / elapsed.as_secs_f64().max(1e-9),
                            )
                            .num("avg_update_us", us(upd_total) / per(updates))
                            .num("p99_update_us", upd.value_at_quantile(0.99) as f64 / 1e3)
                            .num("p99_9_update_us", upd.value_at_quantile(0.999) as f64 / 1e3)
                            .num("max_update_us", upd.max() as f64 / 1e3);
                        if queries > 0 {
                            row = row
                                .num("avg_query_us", us(qry_total) / queries as f64)
                                .num("p99_query_us", qry.value_at_quantile(0.99) as f64 / 1e3)
                                .num("avg_query_page_reads", q_reads as f64 / queries as f64)
                                .num("avg_candidates", q_cands as f64 / queries as f64)
                                .num("avg_validation_lookups", q_lookups as f64 / queries as f64);
                        }
                        let st = bed.index.stats();
                        rows.push(
                            row.int("page_reads", io.page_reads)
                                .int("page_writes", io.page_writes)
                                .int("flushes", st.rtree.flushes)
                                .int("merges", st.rtree.merges)
                                .num(
                                    "modelled_ms",
                                    ms(elapsed) + bed.profile.modelled_io_ms(io, page_size),
                                )
                                .build(),
                        );
                    }
                }
            }
        }
        notes.push(
            "Update latencies include the flushes and merges that an update triggers (they run inside the \
             stream), which is what p99/max show. A cell with no queries (query_fraction too small for the \
             stream) has no query fields."
                .into(),
        );
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

    fn figures(&self, result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        rr::mixed_figures(result, out_dir)
    }

    fn report(&self, result: &ResultFile) -> String {
        rr::mixed_report(result)
    }
}
