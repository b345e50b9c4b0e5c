//! A real peer for the Leaper experiments: the same key-value workloads replayed on `fjall`, a
//! pure-Rust LSM store nobody here wrote, with its block-cache counters read per interval.
//!
//! Leaper (`docs/papers/leaper.md#the-paper-in-brief`; Yang et al., PVLDB 13(11), 2020, Section 1
//! and Figure 1) starts from one observation: flushes and compactions rewrite data into new files,
//! so the block cache's copies of the old files stop being useful and the hit ratio and throughput
//! dip after each background operation. lsmlab's key-value store shows this with its `lru` policy;
//! this module checks it on an engine built by others. fjall's block cache is keyed by (table id,
//! block offset), it never fills the cache from flush or compaction output, and compaction reads
//! its inputs with a sequential scanner that bypasses the cache: after a compaction every block of
//! the new tables is cold, which is the `lru` baseline's setting in the paper.
//!
//! This file holds the plain, serialisable run description and result types (usable without the
//! `fjall` cargo feature); [`fjall`] (feature `fjall`, on by default) holds the driver
//! [`fjall::run_fjall`].
//!
//! # What is measured
//!
//! - **Cache counters** come from `lsm_tree::Metrics` (fjall's `metrics` feature, read through
//!   `Keyspace::metrics()`): `data_block_load_cached` (a data block found in the block cache: a
//!   hit) and `data_block_load_io` (a data block read from its table file and inserted into the
//!   cache: a load, i.e. a miss). Both count foreground reads only: compaction inputs are read
//!   through the table scanner, which neither looks into the cache nor counts. Index and filter
//!   blocks are counted apart and left out of the hit ratio (fjall pins the index blocks of
//!   levels 0 and 1 and the filter blocks of level 0 in memory; deeper ones go through the same
//!   cache and so take part of its capacity). "Loads" are reads from the table file through the
//!   operating system, whose page cache holds the whole data set on this machine: a miss costs a
//!   system call and a copy, not a device read, so wall-clock dips are smaller than on a device
//!   and the counters are the primary measure.
//! - **Intervals** are a fixed number of measured operations ([`FjallRun::interval_ops`]), not a
//!   wall-time span: every run of a spec has the same number of intervals, each with the same op
//!   mix in expectation, so hit ratios of two engines line up interval by interval. Each interval
//!   also records its wall time (ops/s) and its p95 op latency, measured around each fjall call
//!   (the optional answer checks and the background probes are outside the timed section but
//!   inside the interval's wall time).
//! - **Background operations** are observed by probing every [`FjallRun::probe_every`] ops (see
//!   [`fjall`] for the exact signals and their limits): a completed flush (the highest sequence
//!   number persisted in tables grew), a completed merge compaction (a table disappeared), a
//!   trivial move (a table changed level, same file), a flush running or queued (a sealed
//!   memtable exists) and a compaction running (fjall's set of tables under compaction is not
//!   empty).
//!
//! # Threads on a small machine
//!
//! fjall flushes and compacts on its own worker threads (`worker_threads`, default 2 here: one
//! prefers flushes, the other compactions). On a 2-core machine these threads share the cores with
//! the foreground loop (and with whatever else runs), so a compaction also slows the foreground by
//! taking CPU, not only by invalidating the cache; with the foreground thread plus two workers on
//! two cores, per-interval ops/s and p95 during a compaction mix both effects, while the hit
//! ratio (a count) does not depend on scheduling except through *when* the new tables are
//! installed.

#[cfg(feature = "fjall")]
pub(crate) mod fjall;
pub(crate) mod rows;

/// The progress steps a fjall peer run starts: loading, settling after the load, warm-up and the
/// measured run (an experiment counts them in its step total).
pub const FJALL_PEER_STEPS: usize = 4;

use serde::{Deserialize, Serialize};

use lsmlab_workloads::kv::KvWorkload;

/// Bytes of one record as the experiments count data size: an 8-byte key plus the value.
pub const KEY_BYTES: u64 = 8;

/// One run of a key-value workload on fjall: store sizes, phases, intervals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FjallRun {
    /// The workload (its record count and value size give the data size).
    pub workload: KvWorkload,
    /// Seed of the op stream ([`KvWorkload::stream`]).
    pub seed: u64,
    /// Block-cache capacity in bytes (fjall's `cache_size`; blocks weigh their header plus
    /// uncompressed size).
    pub cache_bytes: u64,
    /// Memtable size in bytes at which fjall seals and flushes it (`max_memtable_size`).
    pub memtable_bytes: u64,
    /// Leveled compaction's target table size in bytes (`with_table_target_size`; RocksDB's
    /// `target_file_size_base`).
    pub table_target_bytes: u64,
    /// Level-0 tables that trigger a compaction into level 1 (`with_l0_threshold`).
    pub l0_threshold: u8,
    /// Size ratio between adjacent levels (`with_level_ratio_policy`).
    pub level_ratio: f32,
    /// Data block size in bytes (4 KiB, as lsmlab's pages).
    pub block_bytes: u32,
    /// Ops replayed after loading and before measuring (the cache warms up; not recorded).
    pub warmup_ops: u64,
    /// Measured ops.
    pub measured_ops: u64,
    /// Measured ops per interval (the last interval may be shorter).
    pub interval_ops: u64,
    /// Ops between two probes of fjall's background state.
    pub probe_every: u64,
    /// fjall's background worker threads (flushes and compactions).
    pub worker_threads: usize,
    /// Check the answer of every `verify_every`-th read (0: never): a get must find its key with
    /// the last version written, a scan must return every key of its range, in order.
    pub verify_every: u64,
}

impl FjallRun {
    /// A run of `workload` with the cache and memtable given as fractions of the logical data
    /// size ([`FjallRun::data_bytes`]), a table target size equal to the memtable size (as
    /// RocksDB's defaults pair `write_buffer_size` with `target_file_size_base`), level-0
    /// threshold 4, ratio 10, 4 KiB blocks, two workers, one probe per 32 ops and every 16th read
    /// checked.
    pub fn with_fractions(
        workload: KvWorkload,
        seed: u64,
        cache_fraction: f64,
        memtable_fraction: f64,
        warmup_ops: u64,
        measured_ops: u64,
        interval_ops: u64,
    ) -> anyhow::Result<Self> {
        for (what, f) in [("cache", cache_fraction), ("memtable", memtable_fraction)] {
            if !(f.is_finite() && f > 0.0) {
                anyhow::bail!("the {what} fraction of the data must be a positive number, got {f}");
            }
        }
        let data = logical_data_bytes(&workload) as f64;
        let memtable_bytes = (data * memtable_fraction).round().max(1.0) as u64;
        let run = FjallRun {
            seed,
            cache_bytes: (data * cache_fraction).round().max(1.0) as u64,
            memtable_bytes,
            table_target_bytes: memtable_bytes,
            l0_threshold: 4,
            level_ratio: 10.0,
            block_bytes: 4096,
            warmup_ops,
            measured_ops,
            interval_ops,
            probe_every: 32,
            worker_threads: 2,
            verify_every: 16,
            workload,
        };
        run.validate()?;
        Ok(run)
    }

    /// The logical data size of the initial records: `records * (8 + value_bytes)` bytes (keys
    /// and values only, no per-entry overhead): what cache and memtable fractions refer to.
    pub fn data_bytes(&self) -> u64 {
        logical_data_bytes(&self.workload)
    }

    /// The number of measured intervals: `ceil(measured_ops / interval_ops)`.
    pub fn intervals(&self) -> u64 {
        self.measured_ops.div_ceil(self.interval_ops.max(1))
    }

    /// Checks every field, naming the first bad one.
    pub fn validate(&self) -> anyhow::Result<()> {
        use anyhow::bail;
        self.workload
            .validate()
            .map_err(|e| anyhow::anyhow!("fjall run: bad workload: {e}"))?;
        if self.workload.value_bytes < 16 {
            bail!(
                "fjall run: values of {} bytes cannot be checked (at least 16 bytes name their key and version)",
                self.workload.value_bytes
            );
        }
        if self.cache_bytes == 0 {
            bail!("fjall run: the block cache needs at least 1 byte");
        }
        // fjall accepts any memtable size; below one block every write would seal a memtable.
        if self.memtable_bytes < u64::from(self.block_bytes) {
            bail!(
                "fjall run: a memtable of {} bytes is smaller than one {}-byte block",
                self.memtable_bytes,
                self.block_bytes
            );
        }
        if self.table_target_bytes == 0 {
            bail!("fjall run: the table target size must be at least 1 byte");
        }
        if self.l0_threshold == 0 {
            bail!("fjall run: the level-0 compaction threshold must be at least 1 table");
        }
        if !(self.level_ratio.is_finite() && self.level_ratio > 1.0) {
            bail!(
                "fjall run: the level size ratio must be above 1, got {}",
                self.level_ratio
            );
        }
        // fjall panics outside 1 KiB..=1 MiB.
        if !(1024..=1024 * 1024).contains(&self.block_bytes) {
            bail!(
                "fjall run: the block size must be in 1 KiB..=1 MiB, got {} bytes",
                self.block_bytes
            );
        }
        if self.measured_ops == 0 {
            bail!("fjall run: at least one measured op is needed");
        }
        if self.interval_ops == 0 {
            bail!("fjall run: an interval must hold at least one op");
        }
        if self.probe_every == 0 {
            bail!("fjall run: probe_every must be at least 1 op");
        }
        // fjall panics on 0 workers.
        if self.worker_threads == 0 {
            bail!("fjall run: fjall needs at least one worker thread");
        }
        Ok(())
    }
}

fn logical_data_bytes(workload: &KvWorkload) -> u64 {
    workload
        .records
        .saturating_mul(KEY_BYTES + workload.value_bytes as u64)
}

/// One measured interval of a fjall run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct FjallInterval {
    /// Interval index, from 0.
    pub interval: u64,
    /// Ops in the interval (`interval_ops`, or fewer for the last).
    pub ops: u64,
    /// `data_block_hits / (data_block_hits + data_block_loads)`; `None` when no data block was
    /// read (every read answered from the memtables).
    pub hit_ratio: Option<f64>,
    /// Data blocks found in the block cache.
    pub data_block_hits: u64,
    /// Data blocks read from table files (cache misses).
    pub data_block_loads: u64,
    /// Index blocks found in the cache / read from files (not in the hit ratio).
    pub index_block_hits: u64,
    pub index_block_loads: u64,
    /// Ops per second of wall time over the interval.
    pub ops_per_s: f64,
    /// The interval's 95th-percentile op latency in microseconds (wall time).
    pub p95_us: f64,
    /// Flushes completed in the interval (see [`fjall`] for how they are seen).
    pub flushes: u64,
    /// Merge compactions completed in the interval.
    pub compactions: u64,
    /// Trivial moves (a table changes level without being rewritten) completed in the interval.
    pub moves: u64,
    /// Tables retired by the merges of the interval (their cached blocks can never hit again).
    pub retired_tables: u64,
    /// A flush completed, or one was queued or running at a probe of the interval.
    pub in_flush: bool,
    /// A merge completed, or a compaction was running at a probe of the interval.
    pub in_compaction: bool,
    /// Tables in the tree at the end of the interval.
    pub tables: u64,
    /// Level-0 tables at the end of the interval.
    pub l0_tables: u64,
}

impl FjallInterval {
    /// Whether the interval is in a background window: a flush or a compaction in or overlapping
    /// it.
    pub fn in_window(&self) -> bool {
        self.in_flush || self.in_compaction
    }
}

/// Whole-run figures of the measured phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct FjallSummary {
    /// Data-block hit ratio over the measured phase (`None` if no data block was read).
    pub hit_ratio: Option<f64>,
    pub data_block_hits: u64,
    pub data_block_loads: u64,
    /// Measured ops per second of wall time.
    pub ops_per_s: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub flushes: u64,
    pub compactions: u64,
    pub moves: u64,
    /// Intervals with a flush or compaction in or overlapping them ([`FjallInterval::in_window`]).
    pub window_intervals: u64,
    /// Hit ratio over the window intervals / over the others (`None` when a side read no block).
    pub hit_ratio_in_windows: Option<f64>,
    pub hit_ratio_outside: Option<f64>,
    /// Hit ratio over the intervals in which a merge compaction completed, and the next one (the
    /// first reads of the new tables).
    pub hit_ratio_after_compaction: Option<f64>,
}

/// What a fjall run produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct FjallTimeline {
    /// `fjall x.y.z (lsm-tree a.b.c)`, from the lock file the binary was built with.
    pub engine: String,
    /// The run's parameters.
    pub run: FjallRun,
    /// Logical data size of the initial records ([`FjallRun::data_bytes`]).
    pub data_bytes: u64,
    /// Bytes on disk after loading (tables and journal), from fjall.
    pub disk_bytes_after_load: u64,
    /// Tables per level (0..7) after loading and settling.
    pub levels_after_load: Vec<u64>,
    /// Wall seconds of the load, warm-up and measured phases.
    pub load_secs: f64,
    pub warmup_secs: f64,
    pub measured_secs: f64,
    /// Reads whose answers were checked (all correct, or the run fails).
    pub verified_reads: u64,
    /// Memtables the driver sealed itself because fjall's workers lagged (0 when they keep up;
    /// see `peer::fjall`'s module documentation).
    #[serde(default)]
    pub driver_seals: u64,
    /// Flushes, merges and moves seen during the warm-up phase.
    pub warmup_flushes: u64,
    pub warmup_compactions: u64,
    pub intervals: Vec<FjallInterval>,
    pub summary: FjallSummary,
}

/// How the hit-ratio dips of a timeline line up with background operations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DipAlignment {
    /// The median interval hit ratio.
    pub median_hit_ratio: f64,
    /// Intervals whose hit ratio is below the median by more than the threshold.
    pub dips: u64,
    /// Dips in a window interval or right after one.
    pub dips_in_or_after_window: u64,
    /// Share of intervals that are in a window or right after one (what a dip would hit by
    /// chance).
    pub window_or_next_share: f64,
}

impl FjallTimeline {
    /// Hit-ratio dips (intervals `drop` or more below the median hit ratio) and how many of them
    /// fall in a background window or in the interval after one; `None` when no interval read a
    /// data block.
    pub fn dip_alignment(&self, drop: f64) -> Option<DipAlignment> {
        let points: Vec<(Option<f64>, bool)> = self
            .intervals
            .iter()
            .map(|i| (i.hit_ratio, i.in_window()))
            .collect();
        dip_alignment(&points, drop)
    }
}

/// [`FjallTimeline::dip_alignment`] over any timeline given as (interval hit ratio, in a
/// background window) pairs in interval order: the report applies it to lsmlab's rows too.
pub fn dip_alignment(points: &[(Option<f64>, bool)], drop: f64) -> Option<DipAlignment> {
    let mut ratios: Vec<f64> = points.iter().filter_map(|p| p.0).collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    let near_window = |idx: usize| points[idx].1 || (idx > 0 && points[idx - 1].1);
    let mut dips = 0;
    let mut aligned = 0;
    for (idx, (ratio, _)) in points.iter().enumerate() {
        if ratio.is_some_and(|h| h < median - drop) {
            dips += 1;
            if near_window(idx) {
                aligned += 1;
            }
        }
    }
    let near = (0..points.len()).filter(|&i| near_window(i)).count();
    Some(DipAlignment {
        median_hit_ratio: median,
        dips,
        dips_in_or_after_window: aligned,
        window_or_next_share: near as f64 / points.len() as f64,
    })
}

/// `hits / (hits + loads)`, `None` for no access.
pub fn hit_ratio(hits: u64, loads: u64) -> Option<f64> {
    let total = hits + loads;
    (total > 0).then(|| hits as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> FjallRun {
        let w = KvWorkload::parse("synthetic")
            .unwrap()
            .with_records(1000)
            .unwrap();
        FjallRun::with_fractions(w, 1, 0.3, 0.1, 0, 100, 10).unwrap()
    }

    #[test]
    fn fractions_give_sizes_and_bad_fields_are_named() {
        let run = spec();
        assert_eq!(run.data_bytes(), 1000 * 208);
        assert_eq!(run.cache_bytes, 62_400);
        assert_eq!(run.memtable_bytes, 20_800);
        assert_eq!(run.intervals(), 10);
        let mut odd = run.clone();
        odd.measured_ops = 101;
        assert_eq!(odd.intervals(), 11);

        let w = run.workload.clone();
        let err = FjallRun::with_fractions(w.clone(), 1, 0.0, 0.1, 0, 10, 1).unwrap_err();
        assert!(err.to_string().contains("cache fraction"), "{err}");
        let err = FjallRun::with_fractions(w, 1, 0.3, f64::NAN, 0, 10, 1).unwrap_err();
        assert!(err.to_string().contains("memtable fraction"), "{err}");
        for (edit, word) in [
            (
                Box::new(|r: &mut FjallRun| r.worker_threads = 0) as Box<dyn Fn(&mut FjallRun)>,
                "worker",
            ),
            (Box::new(|r: &mut FjallRun| r.block_bytes = 512), "block size"),
            (Box::new(|r: &mut FjallRun| r.interval_ops = 0), "interval"),
            (Box::new(|r: &mut FjallRun| r.memtable_bytes = 100), "memtable"),
            (
                Box::new(|r: &mut FjallRun| r.workload.value_bytes = 8),
                "values of 8 bytes",
            ),
        ] {
            let mut bad = run.clone();
            edit(&mut bad);
            let err = bad.validate().unwrap_err().to_string();
            assert!(err.contains(word), "{err} should name {word}");
        }
    }

    fn interval(i: u64, ratio: f64, window: bool) -> FjallInterval {
        FjallInterval {
            interval: i,
            ops: 10,
            hit_ratio: Some(ratio),
            data_block_hits: 0,
            data_block_loads: 0,
            index_block_hits: 0,
            index_block_loads: 0,
            ops_per_s: 1.0,
            p95_us: 1.0,
            flushes: 0,
            compactions: u64::from(window),
            moves: 0,
            retired_tables: 0,
            in_flush: false,
            in_compaction: window,
            tables: 1,
            l0_tables: 0,
        }
    }

    #[test]
    fn dips_are_counted_against_windows() {
        let summary = FjallSummary {
            hit_ratio: None,
            data_block_hits: 0,
            data_block_loads: 0,
            ops_per_s: 0.0,
            p95_us: 0.0,
            p99_us: 0.0,
            flushes: 0,
            compactions: 0,
            moves: 0,
            window_intervals: 0,
            hit_ratio_in_windows: None,
            hit_ratio_outside: None,
            hit_ratio_after_compaction: None,
        };
        let run = spec();
        let t = FjallTimeline {
            engine: String::new(),
            data_bytes: run.data_bytes(),
            run,
            disk_bytes_after_load: 0,
            levels_after_load: vec![],
            load_secs: 0.0,
            warmup_secs: 0.0,
            measured_secs: 0.0,
            verified_reads: 0,
            driver_seals: 0,
            warmup_flushes: 0,
            warmup_compactions: 0,
            // median 0.9; dips at 2 (a window), 3 (after it) and 6 (no window near)
            intervals: vec![
                interval(0, 0.9, false),
                interval(1, 0.9, false),
                interval(2, 0.5, true),
                interval(3, 0.7, false),
                interval(4, 0.9, false),
                interval(5, 0.95, false),
                interval(6, 0.6, false),
            ],
            summary,
        };
        let a = t.dip_alignment(0.1).unwrap();
        assert_eq!(a.median_hit_ratio, 0.9);
        assert_eq!(a.dips, 3);
        assert_eq!(a.dips_in_or_after_window, 2);
        assert!((a.window_or_next_share - 2.0 / 7.0).abs() < 1e-12);
        assert_eq!(hit_ratio(0, 0), None);
        assert_eq!(hit_ratio(3, 1), Some(0.75));
    }
}
