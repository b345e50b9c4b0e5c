//! `rum-concurrency`: the Update Memo under 1, 2, 4 and 8 ingesting threads (Section 5 of the LSM
//! RUM-tree paper: atomic ts/cnt, CILS, put-if-absent). The stream is split by object id over the
//! threads, as the authors did. After every run the fresh set and the UM are checked against a
//! single-threaded replay of the same stream, and the run fails if they differ.

use super::{check_strategies, IndexConfig, PhaseIo, PhaseTimes, RunData, Testbed, PAPER, PHASE_NOTE};
use crate::config::Storage;
use crate::config::{self, check_items, Config, KeyHelp, StorageConfig};
use crate::experiment::{
    Cell, DataSpec, MemoryEstimate, RowBuilder, RunContext, RunOutput, Scale, TypedExperiment,
};
use crate::progress::thousands;
use crate::rum::report as rr;
use anyhow::{bail, Context};
use lsmlab_engine::spatial::{ConcurrentRumTree, MemoState, Strategy};
use lsmlab_engine::storage::IoStats;
use lsmlab_workloads::SpatialOp;
use std::time::{Duration, Instant};

pub(crate) struct RumConcurrency;

const UM_VARIANTS: [&str; 5] = ["UM", "UM+F", "UM+M", "UM+BV", "UM+FMBV"];

lsmlab_harness::config! {
    /// `rum-concurrency`'s parameters.
    pub struct ConcurrencyConfig {
        /// Update Memo variants (UM or UM+ any of F, M, B, V)
        #[serde(with = "config::text_list")]
        pub strategies: Vec<Strategy>,
        #[serde(flatten)]
        /// The data and index settings every RUM experiment shares (flattened: its keys are top-level
        /// `--set` keys).
        pub index: IndexConfig,
        #[serde(flatten)]
        /// The storage testbed settings (flattened: its keys are top-level `--set` keys).
        pub storage: StorageConfig,
        /// thread counts
        pub threads: Vec<usize>,
    }
}

impl Config for ConcurrencyConfig {
    fn adjust_help(help: &mut Vec<KeyHelp>) {
        super::strategies_after_datasets(help)
    }

    fn validate(&self) -> anyhow::Result<()> {
        check_strategies(&self.strategies)?;
        check_items(
            "strategies",
            &self.strategies,
            Strategy::uses_update_memo,
            "Update Memo variants only (UM, UM+F, UM+BV, ...)",
        )?;
        self.index.validate()?;
        self.storage.validate()?;
        check_items(
            "threads",
            &self.threads,
            |n| (1..=256).contains(n),
            "thread counts between 1 and 256",
        )
    }
}

/// What a run leaves behind, for comparing runs.
struct Outcome {
    /// Operations ingested.
    ops: u64,
    /// (oid, ts) of every fresh entry, sorted.
    fresh: Vec<(u64, u64)>,
    um: Vec<(u64, MemoState)>,
    um_max: u64,
    flushes: u64,
    merges: u64,
    seconds: f64,
    /// Counted page I/O of the ingest (the final all-covering query excluded), by phase.
    io: IoStats,
    phases: PhaseIo,
    times: PhaseTimes,
    storage: Storage,
}

/// Peak memory per record ([`IndexConfig::streamed_memory_estimate`]): the held records, and the
/// index's pages. Upper bounds rounded up so that they cover the steeper of the slopes of peak RSS
/// measured at small on BerlinMOD, device=mem, all five variants at 1, 2, 4 and 8 threads
/// (re-measure with `/usr/bin/time -v lsmlab run rum-concurrency --scale small --set
/// datasets=berlinmod` at `records=1000000`, `2000000` and `4000000`). The measurements, and the
/// paper-scale peaks beside the estimates, are in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
const PER_RECORD: super::RecordBytes = super::RecordBytes {
    held: 40,
    index: 130,
    query: 0,
};

/// Operations handed to the threads at a time: a batch is read from the dataset (held or
/// streamed) before the threads start on it, so the run holds one batch, never the whole stream,
/// and the generation of a streamed dataset stays out of the timed work. At the default settings of
/// `tiny` and `small` the whole stream is one batch.
const BATCH_OPS: usize = 1 << 20;

// Unit tests shrink the batch on their own thread to run a small dataset in several batches.
super::test_adjustable!(fn batch_ops, fn with_batch_ops, BATCH_FOR_TEST = BATCH_OPS);

#[allow(clippy::expect_used)] // a panicking ingest thread is a bug to report; the UM strategy has a memo
fn run_threads(
    cfg: &ConcurrencyConfig,
    strategy: Strategy,
    data: &RunData,
    ctx: &RunContext,
    threads: usize,
) -> anyhow::Result<Outcome> {
    let bed = cfg.index.testbed(&cfg.storage, strategy, data.header())?;
    let Testbed { index, storage } = bed;
    let (before, io_before) = (index.stats(), storage.io());
    let tree = ConcurrentRumTree::new(index)?;
    let mut stream = data.ops(ctx)?;
    let batch_ops = batch_ops();
    let mut batch: Vec<SpatialOp> = Vec::with_capacity(batch_ops.min(data.len()));
    // The timestamp of the batch's first operation: an operation's position in the stream, from 1.
    let mut first_ts = 1u64;
    let mut busy = Duration::ZERO;
    loop {
        batch.clear();
        batch.extend(stream.by_ref().take(batch_ops));
        if batch.is_empty() {
            break;
        }
        let ops = &batch;
        let start = Instant::now();
        let failures: Vec<anyhow::Error> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let tree = &tree;
                    s.spawn(move || -> anyhow::Result<()> {
                        for (i, op) in ops.iter().enumerate() {
                            if op.oid() as usize % threads != t {
                                continue;
                            }
                            let ts = first_ts + i as u64;
                            match *op {
                                SpatialOp::Insert { oid, at } => tree.insert(oid, ts, at)?,
                                SpatialOp::Update { oid, to, .. } => tree.update(oid, ts, to)?,
                                SpatialOp::Delete { .. } => {
                                    bail!("the concurrency experiment replays inserts and updates only")
                                }
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| h.join().expect("ingesting thread panicked").err())
                .collect()
        });
        busy += start.elapsed();
        if let Some(e) = failures.into_iter().next() {
            return Err(e);
        }
        first_ts += batch.len() as u64;
        ctx.progress
            .count(first_ts - 1, Some(data.len() as u64), "operations");
    }
    let ops = first_ts - 1;
    let seconds = busy.as_secs_f64();
    let index = tree.into_inner();
    let (after, io) = (index.stats(), storage.io().since(&io_before));
    let (flush, merge) = (
        after.flush_time() - before.flush_time(),
        after.merge_time() - before.merge_time(),
    );
    let times = PhaseTimes {
        update: Duration::from_secs_f64(seconds).saturating_sub(flush + merge),
        flush,
        merge,
        query: Duration::ZERO,
    };
    let phases = PhaseIo::split(io, &before, &after, IoStats::default());
    if let Err(why) = index.audit_update_memo()? {
        bail!(
            "{} under {strategy} with {threads} threads: the Update Memo disagrees with the index: {why}",
            data.header().name
        );
    }
    // What a query over the whole plane returns, without holding its candidates (every entry).
    let mut fresh: Vec<(u64, u64)> = Vec::new();
    index.for_each_fresh(|e| fresh.push((e.oid, e.ts)))?;
    fresh.sort_unstable();
    let st = index.stats();
    Ok(Outcome {
        ops,
        fresh,
        um: index.update_memo().expect("UM strategy").snapshot(),
        um_max: st.um_max_entries,
        flushes: st.rtree.flushes,
        merges: st.rtree.merges,
        seconds,
        io,
        phases,
        times,
        storage,
    })
}

impl TypedExperiment for RumConcurrency {
    type Config = ConcurrencyConfig;

    /// Location records: each --data path one dataset, replacing the generated ones.
    fn data_kind(&self) -> crate::experiment::DataKind {
        crate::experiment::DataKind::Locations
    }

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "rum-concurrency",
            paper: PAPER,
            about: "LSM RUM-tree Section 5: Update Memo ingestion under 1-8 threads (CILS), checked against a replay",
            figures: rr::concurrency_figures,
            report: rr::concurrency_report,
        }
    }

    /// Peak RSS ([`IndexConfig::streamed_memory_estimate`], as the other RUM experiments), plus the
    /// batch of operations the threads share ([`BATCH_OPS`] at most).
    fn memory_estimate(&self, config: &ConcurrencyConfig, data: &[DataSpec]) -> Option<MemoryEstimate> {
        let mut e = config
            .index
            .streamed_memory_estimate(&config.storage, PER_RECORD, data)?;
        let records = match config.index.records {
            0 => config
                .index
                .datasets
                .iter()
                .map(|d| d.paper_records())
                .max()
                .unwrap_or(0),
            n => n,
        };
        let batch = (records.min(BATCH_OPS) * std::mem::size_of::<SpatialOp>()) as u64;
        e.bytes += batch;
        e.basis = format!(
            "{}; + {} MiB for a batch of operations",
            e.basis,
            batch.div_ceil(1 << 20)
        );
        Some(e)
    }

    #[allow(clippy::expect_used)] // the default variant names are constants that parse
    fn defaults(&self, scale: Scale) -> ConcurrencyConfig {
        let index = IndexConfig::defaults_with(scale, 1_000_000);
        ConcurrencyConfig {
            strategies: UM_VARIANTS
                .iter()
                .map(|s| s.parse().expect("Update Memo variant names parse"))
                .collect(),
            storage: index.storage_defaults_at(scale),
            index,
            threads: vec![1, 2, 4, 8],
        }
    }

    /// Dataset x strategy; the thread counts of a strategy stay in one cell, since each is checked
    /// against the strategy's single-threaded replay.
    fn cells(&self, cfg: &ConcurrencyConfig, data: &[DataSpec]) -> Vec<Cell> {
        let mut keys = cfg.index.cell_keys(data);
        keys.push(("strategies", cfg.strategies.len()));
        Cell::grid(&keys)
    }

    fn run(&self, cfg: &ConcurrencyConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let p = &cfg.index;
        let (datasets, mut notes) = p.streamed_datasets_and_notes(ctx, &cfg.storage, &cfg.strategies)?;
        ctx.progress.set_total(datasets.len() * cfg.strategies.len());
        let mut rows = Vec::new();
        for data in &datasets {
            let name = &data.header().name;
            for &strategy in &cfg.strategies {
                ctx.progress.begin(format!("{name} {strategy}"));
                let replay = run_threads(cfg, strategy, data, ctx, 1)
                    .with_context(|| format!("{name} under {strategy}, single-threaded replay"))?;
                for &n in &cfg.threads {
                    ctx.progress.message(format!("{n} threads"));
                    let out = run_threads(cfg, strategy, data, ctx, n)
                        .with_context(|| format!("{name} under {strategy} with {n} threads"))?;
                    if out.fresh != replay.fresh {
                        bail!(
                            "{name} under {strategy} with {n} threads: {} fresh entries, the single-threaded replay has {}",
                            out.fresh.len(),
                            replay.fresh.len()
                        );
                    }
                    let cleaning_free = strategy
                        .switches()
                        .is_some_and(|s| !(s.flush || s.merge || s.buffered || s.vacuum));
                    if cleaning_free && out.um != replay.um {
                        bail!(
                            "{name} under {strategy} with {n} threads: the Update Memo differs from the replay's"
                        );
                    }
                    let row = p
                        .objects_fields(
                            RowBuilder::new().str("dataset", name),
                            data.objects() as u64,
                            &cfg.storage,
                        )
                        .str("strategy", strategy.to_string())
                        .int("threads", n as u64)
                        .int("ops", out.ops)
                        .num("throughput_ops_s", out.ops as f64 / out.seconds.max(1e-9))
                        .int("um_entries_final", out.um.len() as u64)
                        .int("um_max_entries", out.um_max)
                        .int("flushes", out.flushes)
                        .int("merges", out.merges)
                        .int("page_reads", out.io.page_reads)
                        .int("page_writes", out.io.page_writes);
                    rows.push(out.phases.fields(row, &out.times, &out.storage, false).build());
                }
            }
        }
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        notes.push(format!(
            "This machine offers {cores} hardware threads; runs with more threads than that measure contention, \
             not parallel speed-up."
        ));
        notes.push(
            "The memory R-tree, flushes and merges sit behind one lock (the engine's R-tree has no latch \
             coupling); the Update Memo is used outside it: its reads take no lock and an update locks one of \
             its 64 shards (put-if-absent, increment and CILS in one store), so only UM work runs in parallel. Each thread replays the operations of the objects with oid mod threads == its \
             index, in stream order; an operation's timestamp is its position in the stream."
                .into(),
        );
        notes.push(format!(
            "Operations reach the threads in batches of {} read from the dataset beforehand (held, or \
             generated when streamed); the threads wait for each other at the end of a batch, and the \
             reading is not timed. A run of one batch (every run of up to {} operations) has no such wait.",
            thousands(BATCH_OPS as u64),
            thousands(BATCH_OPS as u64)
        ));
        notes.push(format!(
            "{PHASE_NOTE} Here update is the threads' wall time outside flushes and merges."
        ));
        notes.push(
            "Checked after every run: the fresh set equals a single-threaded replay's; every UM entry's count \
             equals the obsolete entries left in the index; for UM without cleaning the UM equals the \
             replay's exactly (with cleaning, what has been cleaned depends on the interleaving, so only \
             the invariant is compared)."
                .into(),
        );
        Ok(RunOutput {
            rows,
            notes,
            extra_config: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Overlay;

    /// A run in batches of 700 operations (five batches of 3,000 records) counts what a run in one
    /// batch counts with one thread, and passes every check against the replay with several.
    #[test]
    fn batches_change_no_counted_field() {
        let progress = crate::progress::Progress::silent();
        let ctx = super::super::tests::tiny_ctx(3, &progress);
        let e = crate::registry::find("rum-concurrency").unwrap();
        let run = |threads: &str, batch: usize| {
            let sets: Vec<String> = [
                "datasets=berlinmod",
                "records=3000",
                "memory_pages=8",
                "strategies=UM,UM+FMBV",
                threads,
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            let cfg = e.resolve(Scale::Tiny, &Overlay::sets(&sets)).unwrap();
            with_batch_ops(batch, || e.run(&cfg, &ctx)).unwrap()
        };
        let (whole, batched) = (run("threads=1", BATCH_OPS), run("threads=1", 700));
        assert_eq!(whole.rows.len(), 2);
        for (w, b) in whole.rows.iter().zip(&batched.rows) {
            assert_eq!(w["ops"], 3000);
            for (k, v) in w.iter().filter(|(k, _)| !crate::rows::is_timed(k)) {
                assert_eq!(v, &b[k], "{k} in {w:?}");
            }
        }
        assert!(whole.rows.iter().any(|r| r["flushes"].as_u64().unwrap() > 0));
        // several threads, several batches: the run checks itself against the replay
        let many = run("threads=2,3", 700);
        assert_eq!(many.rows.len(), 4);
        assert!(many.rows.iter().all(|r| r["ops"] == 3000));
    }
}
