//! The LSM RUM-tree experiments (`docs/papers/rum.md#the-paper-in-brief`): the secondary index
//! ingests a moving-object stream under each maintenance strategy, and we measure what each
//! strategy costs and what it buys.
//!
//! This module holds only what is RUM-specific: the index settings every RUM experiment shares
//! ([`IndexConfig`], flattening the harness's [`StorageConfig`]), the datasets, and the testbed
//! (storage + LSM R-tree) with the ingestion loop.

mod concurrency;
mod mixed;
mod query;
mod report;
mod tuning;
pub(crate) mod update;

use crate::config::{check, DeviceKind, KeyHelp, Storage, StorageConfig};
use crate::experiment::RowBuilder;
use crate::experiment::{DataSpec, MemoryEstimate, RunContext, Scale};
use crate::plot::{FixedStyle, Marker};
use crate::progress::thousands;
use anyhow::Context;
use lsmlab_engine::geom::Point;
use lsmlab_engine::lsm::LifecycleStats;
use lsmlab_engine::lsm::MergePolicyConfig;
use lsmlab_engine::rtree::DiskRTree;
use lsmlab_engine::spatial::{
    CleaningCounters, FlushTrigger, LsmRTree, SpatialConfig, SpatialStats, Strategy,
};
use lsmlab_engine::storage::IoStats;
use lsmlab_workloads::gen::BerlinModStream;
use lsmlab_workloads::{GenSpec, OpStream, Record, SpatialOp, Trajectories};
use serde::{Deserialize, Serialize};
use std::fmt;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) const PAPER: &str = "LSM RUM-tree";

/// This paper as the registry lists it (see `lsmlab_harness::paper`).
/// The RUM-tree figures' fixed styles: the twenty-two strategy labels (Eager and Validation with
/// their variants, UM and its fifteen cleaning combinations) over the twenty palette colours. A
/// baseline's variant takes the light shade of its hue; UM+V and UM+B, drawn beside UM+BV in the
/// tuning sweeps, take hues far from it. Eager(buddy) and Validation(key-index) take the colours
/// of UM+MB and UM+FBV, which no experiment draws unless asked and which keep a colour but no
/// fixed marker (UM+MB shares UM+MBV's), so the marked labels, and every label an experiment draws
/// by default, each own a colour even in a bar chart; Eager(buddy) is far from Eager(physical)'s
/// light grey, which a light brown was not. Then the phases of an update stream (Figure 5).
pub const STYLES: &[FixedStyle] = &[
    FixedStyle::marked("Eager", 9, Marker::Square),
    FixedStyle::marked("Eager(buddy)", 14, Marker::Diamond),
    FixedStyle::marked("Eager(physical)", 19, Marker::Cross),
    FixedStyle::marked("Validation", 5, Marker::Diamond),
    FixedStyle::marked("Validation(key-index)", 17, Marker::Square),
    FixedStyle::marked("Validation(repair)", 15, Marker::Plus),
    FixedStyle::marked("UM", 2, Marker::Circle),
    FixedStyle::marked("UM+F", 0, Marker::TriangleUp),
    FixedStyle::marked("UM+M", 4, Marker::TriangleDown),
    FixedStyle::marked("UM+FM", 3, Marker::Pentagon),
    FixedStyle::marked("UM+BV", 6, Marker::Star),
    FixedStyle::marked("UM+FMBV", 1, Marker::Hexagon),
    FixedStyle::marked("UM+B", 13, Marker::Plus),
    FixedStyle::marked("UM+V", 8, Marker::Cross),
    FixedStyle::marked("UM+FB", 10, Marker::TriangleUp),
    FixedStyle::marked("UM+FV", 11, Marker::Square),
        FixedStyle::marked("UM+MV", 7, Marker::Diamond),
    FixedStyle::marked("UM+FMB", 16, Marker::Pentagon),
    FixedStyle::marked("UM+FMV", 12, Marker::Circle),
    FixedStyle::colored("UM+FBV", 17),
    FixedStyle::colored("UM+MBV", 18),
    FixedStyle::colored("UM+MB", 18),
    FixedStyle::colored("update", 0),
    FixedStyle::colored("flush", 1),
    FixedStyle::colored("merge", 4),
    FixedStyle::colored("query", 6),
];

pub(crate) fn paper() -> lsmlab_harness::paper::Paper {
    lsmlab_harness::paper::Paper {
        id: "rum",
        title: PAPER,
        kind: lsmlab_harness::paper::PaperKind::Paper,
        experiments: vec![
            &update::RumUpdate,
            &query::RumQuery,
            &mixed::RumMixed,
            &concurrency::RumConcurrency,
            &tuning::RumTuning,
        ],
        claims: Some(("rum.json", include_str!("../../claims/rum.json"))),
        traces: vec![&crate::trace::RumTraces],
        styles: STYLES,
        figures: report::figure_specs,
    }
}

/// The authors' memory component in 2 KiB pages (128 MiB).
pub const PAPER_MEMORY_PAGES: u64 = 65_536;

/// The fewest objects a generated dataset gets by default (the tiny scale's ratio would leave
/// BerlinMOD with 2 vehicles).
pub const MIN_OBJECTS: usize = 10;

/// The paper's datasets, generated synthetically (lsmlab_workloads) with their characteristics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Dataset {
    Gowalla,
    Chicago,
    Berlinmod,
}

impl Dataset {
    pub const ALL: [Dataset; 3] = [Dataset::Gowalla, Dataset::Chicago, Dataset::Berlinmod];

    /// The name the generators and results use.
    pub fn as_str(self) -> &'static str {
        match self {
            Dataset::Gowalla => "gowalla",
            Dataset::Chicago => "chicago",
            Dataset::Berlinmod => "berlinmod",
        }
    }

    /// Record counts of the paper's datasets (Section 6 of the paper;
    /// `docs/papers/rum.md#the-paper-in-brief`).
    pub fn paper_records(self) -> usize {
        match self {
            Dataset::Gowalla => 6_442_757,
            Dataset::Chicago => 15_241_413,
            Dataset::Berlinmod => 56_129_943,
        }
    }
}

impl fmt::Display for Dataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which merge policy the index's LSM lifecycle runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MergePolicyChoice {
    /// AsterixDB's prefix policy, as the authors ran.
    Prefix,
    /// No merges: components accumulate.
    None,
}

lsmlab_harness::config! {
    /// The settings every RUM experiment shares: the data and the index's settings. Experiment configs
    /// flatten it beside the harness's [`StorageConfig`] (serde cannot deny unknown keys through nested
    /// flattening), so both sets of keys are top-level `--set` keys.
    ///
    /// The authors ran 2 KiB pages, a 128 MiB memory component (65,536 pages), a 512 MiB buffer cache
    /// and the prefix policy with 5 tolerated components and ~1 GB maximum mergeable size. Smaller
    /// scales keep the ratios (cache = 4 x memory, max mergeable = 8 x memory) with a memory budget
    /// small enough that the stream crosses several flushes and merges.
    pub struct IndexConfig {
        /// synthetic datasets to run: gowalla, chicago, berlinmod
        pub datasets: Vec<Dataset>,
        /// records per dataset (0 = the paper's count: 6,442,757 / 15,241,413 / 56,129,943; for --data, the
        /// whole file)
        pub records: usize,
        /// distinct objects per generated dataset (0 = the real count, 107,092 / 5,000 / 2,000, x
        /// memory_pages / 65,536: the paper's objects per memory page)
        pub objects: usize,
        /// memory component budget in pages; a flush starts when it is exceeded
        pub memory_pages: u64,
        /// prefix policy: components larger than this are never merged
        pub max_mergeable_pages: u64,
        /// prefix policy: merge once this many mergeable components exist
        pub tolerance: usize,
        /// prefix (AsterixDB's, as the authors ran) or none (components accumulate)
        pub merge_policy: MergePolicyChoice,
        /// Buffered Cleaning: clean a memory leaf after this many updates into it
        pub buffered_threshold: u32,
        /// Vacuum Cleaning: clean the next leaf every this many updates
        pub vacuum_threshold: u32,
        /// Eager looks the old location up in an LSM primary index (timed)
        pub eager_primary_lookup: bool,
        /// allocated (a flush once the memory component has allocated memory_pages pages, as AsterixDB and
        /// the authors) or live (once its live nodes exceed them)
        pub flush_trigger: FlushTrigger,
        /// updates (only updates advance the Buffered/Vacuum counters, as the authors' code) or all-inserts
        pub cleaning_counters: CleaningCounters,
        /// Bloom filter false-positive rate of B+-tree components
        pub bloom_fp: f64,
    }
}

impl IndexConfig {
    /// The run's peak memory: a run goes dataset by dataset (each generated dataset is its own
    /// cell, and a process keeps one generated dataset at a time), so the peak grows with the
    /// records of the largest dataset; `--data` files are all loaded at once, so with them it grows
    /// with the records of all files. `bytes_per_record` is the experiment's measured slope (peak
    /// RSS against records at small, all strategies). `None` for `--data` files without a
    /// `records` cap (their size is known only once loaded).
    pub fn memory_estimate(&self, bytes_per_record: u64, data: &[DataSpec]) -> Option<MemoryEstimate> {
        if !data.is_empty() && self.records == 0 {
            return None;
        }
        let records: u64 = if data.is_empty() {
            self.datasets
                .iter()
                .map(|d| match self.records {
                    0 => d.paper_records() as u64,
                    n => n as u64,
                })
                .max()
                .unwrap_or(0)
        } else {
            self.records as u64 * data.len() as u64
        };
        Some(MemoryEstimate {
            bytes: records * bytes_per_record + RUN_BASE_BYTES,
            basis: format!(
                "{} records x {bytes_per_record} B, measured per record, + {} MiB",
                thousands(records),
                RUN_BASE_BYTES >> 20
            ),
        })
    }
}

/// A RUM experiment's peak memory per record, measured ([`IndexConfig::streamed_memory_estimate`]).
#[derive(Clone, Copy, Debug)]
pub struct RecordBytes {
    /// Per record the run holds (none for a streamed dataset).
    pub held: u64,
    /// Per record for the index's pages (capped on `device = file`).
    pub index: u64,
    /// Per record for what one query holds at once (its candidates), never capped.
    pub query: u64,
}

impl IndexConfig {
    /// The peak memory of a run that streams a large generated BerlinMOD dataset
    /// ([`IndexConfig::streamed_datasets_and_notes`]), per dataset (the largest counts, as
    /// datasets run one after another): `b.held` per record the run holds (none when the dataset
    /// is `streams`), plus `b.index` per record for the index's pages, plus `b.query` per record
    /// for a query's candidates. On the in-memory device every page stays in memory; on `device =
    /// file` the pages live in the file, so the index's part is at most what stays in memory: the
    /// buffer cache (each page with the cache's bookkeeping, [`CACHED_PAGE_OVERHEAD`]), the memory
    /// component and a merge's survivors (32 B each, at most about `max_mergeable_pages` of
    /// pages, each with the merge's bookkeeping, [`MERGED_PAGE_OVERHEAD`]). With `--data` files,
    /// [`IndexConfig::memory_estimate`] at the sum of the three (the files are all held).
    pub fn streamed_memory_estimate(
        &self,
        storage: &StorageConfig,
        b: RecordBytes,
        data: &[DataSpec],
    ) -> Option<MemoryEstimate> {
        let (held_b, index_b, query_b) = (b.held, b.index, b.query);
        if !data.is_empty() {
            return self.memory_estimate(held_b + index_b + query_b, data);
        }
        let page = storage.page_size as u64;
        let index_cap = match storage.device {
            DeviceKind::Mem => u64::MAX,
            DeviceKind::File => {
                storage.cache_pages as u64 * (page + CACHED_PAGE_OVERHEAD)
                    + self.memory_pages * page
                    + self.max_mergeable_pages * (page + MERGED_PAGE_OVERHEAD)
            }
        };
        let per_dataset = |d: Dataset| {
            let n = match self.records {
                0 => d.paper_records(),
                n => n,
            } as u64;
            let streamed = streams(d, n as usize);
            let held = if streamed { 0 } else { n * held_b };
            (held + (n * index_b).min(index_cap) + n * query_b, n, streamed)
        };
        let (bytes, n, streamed) = self.datasets.iter().map(|&d| per_dataset(d)).max()?;
        let held = match streamed {
            true => "streamed, none held".to_string(),
            false => format!("{held_b} B per held record"),
        };
        let pages = match storage.device {
            DeviceKind::Mem => format!("{index_b} B per record for the index's pages"),
            DeviceKind::File => format!(
                "{index_b} B per record for the index's pages up to the cache (with \
                 {CACHED_PAGE_OVERHEAD} B of bookkeeping a page), the memory component and a \
                 merge's survivors (with {MERGED_PAGE_OVERHEAD} B a page) ({} MiB, device=file)",
                index_cap >> 20
            ),
        };
        let query = match query_b {
            0 => String::new(),
            b => format!("; {b} B per record for a query's candidates"),
        };
        Some(MemoryEstimate {
            bytes: bytes + RUN_BASE_BYTES,
            basis: format!(
                "{} records ({held}); {pages}{query}; + {} MiB",
                thousands(n),
                RUN_BASE_BYTES >> 20
            ),
        })
    }
}

/// Memory a RUM run needs besides its records (the binary, the cache and memory component of the
/// default settings), rounded up from the peak RSS of tiny runs.
pub(crate) const RUN_BASE_BYTES: u64 = 64 << 20;

/// Memory a buffer-cache page holds beyond its bytes: its page-table entry, its frame's policy
/// state, note and owner, and the shared page's header and allocation. An upper bound of the
/// measured 175-210 B per 2 KiB page (`cargo test -p lsmlab-engine --release --lib -- --ignored
/// --nocapture memory_per_cached_page` fills caches of 65,536 and 262,144 pages); at the paper's
/// 262,144 cached pages it is 64 MiB, which an estimate of pages alone missed (`rum-update`'s
/// costliest paper-scale cell peaked 2% above such an estimate).
pub(crate) const CACHED_PAGE_OVERHEAD: u64 = 256;

/// Memory a merge holds per merged page beyond its survivors' bytes, at its peak: the output's
/// leaf keys, the compaction's extents, the file device's page slots and the output component's
/// build. An upper bound of the 243 B measured in the heap peak of a paper-scale `rum-mixed` cell
/// (BerlinMOD under UM, `--shard 59/84`, under heaptrack): 127 MB beside 1.05 GB of survivors from
/// about 521,000 pages; without it the estimate was 5% under that cell's peak.
pub(crate) const MERGED_PAGE_OVERHEAD: u64 = 256;

/// The help of `strategies` where the experiment takes any strategy: `#[doc = strategies_doc!()]`
/// on the field.
macro_rules! strategies_doc {
    () => {
        "strategies: Eager (the authors' baseline: antimatter entries in the R-trees), Eager(buddy) \
         (LSMRTree.modify: deleted keys in a buddy B-tree, every version kept in memory), \
         Eager(physical) (AsterixDB's memory delete), Validation (the authors' baseline: buddy \
         deleted-key trees probed per candidate), Validation(key-index) (Luo & Carey's key index), \
         Validation(repair) (with Luo & Carey's merge repair), UM, or UM+ with any of F, M, B, V"
    };
}
pub(crate) use strategies_doc;

/// [`Config::adjust_help`](crate::config::Config::adjust_help) of the configs with `strategies`
/// beside a flattened [`IndexConfig`]: `lsmlab params` lists it second, after `datasets`.
pub fn strategies_after_datasets(help: &mut Vec<KeyHelp>) {
    if let Some(at) = help.iter().position(|(key, _)| *key == "strategies") {
        let strategies = help.remove(at);
        let datasets = help.iter().position(|(key, _)| *key == "datasets");
        help.insert(datasets.map_or(0, |d| d + 1), strategies);
    }
}

/// The strategies `rum-update` and `rum-query` report: the paper's seven, each baseline beside its
/// alternatives (Eager(buddy) and Eager(physical) after Eager, Validation(key-index) and
/// Validation(repair) after Validation).
#[allow(clippy::expect_used)] // the reported strategy names are constants that parse
pub fn reported_strategies() -> Vec<Strategy> {
    [
        "Eager",
        "Eager(buddy)",
        "Eager(physical)",
        "Validation",
        "Validation(key-index)",
        "Validation(repair)",
        "UM",
        "UM+F",
        "UM+M",
        "UM+BV",
        "UM+FMBV",
    ]
    .iter()
    .map(|s| s.parse().expect("strategy names parse"))
    .collect()
}

impl IndexConfig {
    /// The defaults at `scale`, with 2,000,000 records at the small scale.
    pub fn defaults(scale: Scale) -> IndexConfig {
        IndexConfig::defaults_with(scale, 2_000_000)
    }

    /// [`IndexConfig::defaults`] with another record count at the small scale (experiments that
    /// ingest many times use fewer records so that `make` stays within minutes).
    pub fn defaults_with(scale: Scale, small_records: usize) -> IndexConfig {
        let (records, memory_pages) = match scale {
            Scale::Tiny => (20_000, 64),
            Scale::Small => (small_records, 2_048),
            Scale::Paper => (0, 65_536),
        };
        IndexConfig {
            datasets: Dataset::ALL.to_vec(),
            records,
            objects: 0,
            memory_pages,
            max_mergeable_pages: memory_pages * 8,
            tolerance: 5,
            merge_policy: MergePolicyChoice::Prefix,
            buffered_threshold: 4,
            vacuum_threshold: 8,
            eager_primary_lookup: false,
            flush_trigger: FlushTrigger::Allocated,
            cleaning_counters: CleaningCounters::Updates,
            bloom_fp: 0.01,
        }
    }

    /// The storage defaults that go with [`IndexConfig::defaults_with`]: the cache holds 4 x the
    /// memory budget, on the counted in-memory device.
    pub fn storage_defaults(&self) -> StorageConfig {
        StorageConfig::with_cache_pages(self.memory_pages as usize * 4)
    }

    /// [`IndexConfig::storage_defaults`] at `scale`. At the paper's scale the pages live in a file
    /// (`device = file`), as the authors' AsterixDB kept its disk components on disk: the in-memory
    /// device would hold every page of every component in RAM (several GB for Eager and
    /// Validation over the 56M-record BerlinMOD stream,
    /// `docs/scale.md#the-rum-tree-at-paper-scale`), while the counted page reads and writes are
    /// the same on both devices. `--set device=mem` brings the in-memory device back.
    pub fn storage_defaults_at(&self, scale: Scale) -> StorageConfig {
        let mut storage = self.storage_defaults();
        if scale == Scale::Paper {
            storage.device = DeviceKind::File;
        }
        storage
    }

    /// Range checks.
    pub fn validate(&self) -> anyhow::Result<()> {
        check(
            "memory_pages",
            self.memory_pages,
            self.memory_pages >= 1,
            "at least 1 page",
        )?;
        check(
            "max_mergeable_pages",
            self.max_mergeable_pages,
            self.max_mergeable_pages >= 1,
            "at least 1 page",
        )?;
        check(
            "tolerance",
            self.tolerance,
            self.tolerance >= 2,
            "at least 2 components",
        )?;
        check(
            "buffered_threshold",
            self.buffered_threshold,
            self.buffered_threshold >= 1,
            "an integer from 1 to 4294967295",
        )?;
        check(
            "vacuum_threshold",
            self.vacuum_threshold,
            self.vacuum_threshold >= 1,
            "an integer from 1 to 4294967295",
        )?;
        check(
            "bloom_fp",
            self.bloom_fp,
            self.bloom_fp > 0.0 && self.bloom_fp < 1.0,
            "a rate strictly between 0 and 1",
        )
    }

    /// The objects a generated dataset gets: `objects` when set, else the real dataset's object
    /// count scaled by `memory_pages / 65,536` (the authors' memory component), so that objects per
    /// memory page (what decides whether cleaning keeps the memory component below its budget) are
    /// the paper's at every scale; at least [`MIN_OBJECTS`] and at most the records.
    pub(crate) fn objects_for(&self, dataset: Dataset, records: usize) -> usize {
        let n = if self.objects > 0 {
            self.objects
        } else {
            self.scaled_objects(dataset).max(MIN_OBJECTS)
        };
        n.min(records)
    }

    /// The real dataset's objects x `memory_pages / 65,536`, rounded.
    #[allow(clippy::expect_used)] // every Dataset is a built-in dataset
    fn scaled_objects(&self, dataset: Dataset) -> usize {
        let real = lsmlab_workloads::paper_objects(dataset.as_str()).expect("a built-in dataset");
        (real as f64 * self.memory_pages as f64 / PAPER_MEMORY_PAGES as f64).round() as usize
    }

    /// Says where a generated dataset's object count came from.
    fn objects_note(&self, dataset: Dataset, records: usize, objects: usize) -> String {
        let how = if self.objects > 0 {
            "set by `objects`".to_string()
        } else {
            let real = lsmlab_workloads::paper_objects(dataset.as_str()).unwrap_or(0);
            format!(
                "the real dataset's {} objects x memory_pages {} / {PAPER_MEMORY_PAGES} (the paper's objects \
                 per memory page){}",
                thousands(real as u64),
                self.memory_pages,
                if self.scaled_objects(dataset) < MIN_OBJECTS {
                    format!(", raised to the minimum of {MIN_OBJECTS}")
                } else {
                    String::new()
                }
            )
        };
        format!(
            "{dataset}: {} objects over {} records ({how}); every row gives objects, \
             memory_capacity_entries and objects_per_memory_capacity.",
            thousands(objects as u64),
            thousands(records as u64)
        )
    }

    /// Entries the memory component holds when its budget is all leaves: `memory_pages` x the
    /// entries of one leaf page.
    pub fn memory_capacity_entries(&self, storage: &StorageConfig) -> u64 {
        self.memory_pages * DiskRTree::leaf_capacity(storage.page_size) as u64
    }

    /// The fields every RUM row carries about the data against the memory component: `objects`
    /// (distinct objects in the data), `memory_capacity_entries` and their ratio.
    pub fn data_fields(&self, row: RowBuilder, data: &Trajectories, storage: &StorageConfig) -> RowBuilder {
        self.objects_fields(row, data.objects() as u64, storage)
    }

    /// [`IndexConfig::data_fields`] for data of `objects` distinct objects.
    pub fn objects_fields(&self, row: RowBuilder, objects: u64, storage: &StorageConfig) -> RowBuilder {
        let capacity = self.memory_capacity_entries(storage);
        row.int("objects", objects)
            .int("memory_capacity_entries", capacity)
            .num(
                "objects_per_memory_capacity",
                objects as f64 / capacity.max(1) as f64,
            )
    }

    /// The index configuration for `strategy` on `data`.
    pub fn spatial_config(&self, strategy: Strategy, data: &Trajectories) -> SpatialConfig {
        let mut cfg = SpatialConfig::new(strategy, data.extent, self.memory_pages);
        cfg.merge_policy = match self.merge_policy {
            MergePolicyChoice::None => MergePolicyConfig::None,
            MergePolicyChoice::Prefix => MergePolicyConfig::Prefix {
                max_mergeable_pages: self.max_mergeable_pages,
                max_tolerance_components: self.tolerance,
            },
        };
        cfg.buffered_threshold = self.buffered_threshold;
        cfg.vacuum_threshold = self.vacuum_threshold;
        cfg.eager_primary_lookup = self.eager_primary_lookup;
        cfg.flush_trigger = self.flush_trigger;
        cfg.cleaning_counters = self.cleaning_counters;
        cfg.key_index_budget_pages = self.memory_pages;
        cfg.bloom_fp = Some(self.bloom_fp);
        cfg
    }

    /// A fresh storage + index for one cell of a run.
    pub(crate) fn testbed(
        &self,
        storage: &StorageConfig,
        strategy: Strategy,
        data: &Trajectories,
    ) -> anyhow::Result<Testbed> {
        Testbed::new(storage, self.spatial_config(strategy, data))
    }

    /// The grid keys every RUM experiment splits its runs by ([`crate::cells`]): each generated
    /// dataset is its own cell (generated from the run's seed alone, and run on its own). `--data`
    /// files replace the `datasets` list, so with them the datasets are not split.
    pub fn cell_keys(&self, data: &[DataSpec]) -> Vec<(&'static str, usize)> {
        if data.is_empty() {
            vec![("datasets", self.datasets.len())]
        } else {
            Vec::new()
        }
    }

    /// What every RUM experiment starts with: its datasets, and the notes a reader needs about
    /// them, the device and the strategies run.
    pub fn datasets_and_notes(
        &self,
        ctx: &RunContext,
        storage: &StorageConfig,
        strategies: &[Strategy],
    ) -> anyhow::Result<(Vec<Arc<Trajectories>>, Vec<String>)> {
        let (datasets, mut notes) = self.load_datasets_shared(ctx)?;
        notes.extend(storage.device_note()?);
        notes.extend(fidelity_notes(self, strategies));
        Ok((datasets, notes))
    }

    /// The datasets of a run: the `--data` files if any (they replace the generated datasets), else
    /// the synthetic ones named in `datasets` ([`crate::data::plan`]).
    pub fn load_datasets(&self, ctx: &RunContext) -> anyhow::Result<(Vec<Trajectories>, Vec<String>)> {
        let (shared, notes) = self.load_datasets_shared(ctx)?;
        Ok((shared.into_iter().map(Arc::unwrap_or_clone).collect(), notes))
    }

    /// [`IndexConfig::load_datasets`], with each generated dataset shared with the next cells of
    /// the run that generate the same one (`generated`).
    pub fn load_datasets_shared(
        &self,
        ctx: &RunContext,
    ) -> anyhow::Result<(Vec<Arc<Trajectories>>, Vec<String>)> {
        if ctx
            .data
            .iter()
            .any(|d| d.format.as_deref() == Some(crate::data::TRACE_FORMAT))
        {
            let (traces, notes) = crate::trace::load_rum_traces(ctx, self.records, self.objects)?;
            return Ok((traces.into_iter().map(Arc::new).collect(), notes));
        }
        let names: Vec<&str> = self.datasets.iter().map(|d| d.as_str()).collect();
        let plan = crate::data::plan(&names, ctx.data)?;
        let (files, mut notes) = crate::data::load_files(&plan, self.records, ctx.scale, ctx.progress)?;
        let mut out: Vec<Arc<Trajectories>> = files.into_iter().map(Arc::new).collect();
        for &dataset in self.datasets.iter().filter(|d| plan.generates(d.as_str())) {
            let n = if self.records == 0 {
                dataset.paper_records()
            } else {
                self.records
            };
            let objects = self.objects_for(dataset, n);
            let t = generated(dataset, n, objects, ctx)?;
            notes.push(self.objects_note(dataset, n, objects));
            out.push(t);
        }
        Ok((out, notes))
    }
}

/// A `usize` constant that a run reads through the function `$get`, and that unit tests may change
/// on their own thread: `$with(value, f)` runs `f` with `$get` answering `value` (the thread-local
/// `$cell` holds it). Outside tests `$get` is the constant.
macro_rules! test_adjustable {
    (fn $get:ident, fn $with:ident, $cell:ident = $value:expr) => {
        #[cfg(not(test))]
        fn $get() -> usize {
            $value
        }

        #[cfg(test)]
        thread_local! {
            static $cell: std::cell::Cell<usize> = const { std::cell::Cell::new($value) };
        }

        #[cfg(test)]
        fn $get() -> usize {
            $cell.get()
        }

        #[cfg(test)]
        pub(crate) fn $with<R>(value: usize, f: impl FnOnce() -> R) -> R {
            let old = $cell.replace(value);
            let out = f();
            $cell.set(old);
            out
        }
    };
}
pub(crate) use test_adjustable;

/// Records from which the RUM experiments (`rum-update`, `rum-query`, `rum-mixed`, `rum-tuning`,
/// `rum-concurrency`) stream a generated BerlinMOD dataset instead of holding it: the paper's
/// 56,129,943 records would take 1.8 GB as records; streamed, the run holds the simulation's
/// vehicles and road network only and generates the stream again for each ingest.
pub const STREAM_MIN_RECORDS: usize = 8_000_000;

/// Whether a RUM run streams generated dataset `d` of `records` records ([`STREAM_MIN_RECORDS`]).
pub(crate) fn streams(d: Dataset, records: usize) -> bool {
    d == Dataset::Berlinmod && records >= stream_min_records()
}

// Unit tests lower the threshold on their own thread to run a small dataset both ways.
test_adjustable!(fn stream_min_records, fn with_stream_min, STREAM_MIN_FOR_TEST = STREAM_MIN_RECORDS);

/// The note of a run that draws query centres from a streamed dataset's records.
pub const STREAMED_CENTRES_NOTE: &str =
    "Query centres drawn from a streamed dataset's records are the records a held dataset gives: \
     their positions are drawn first, from the seed alone, and one more pass of the stream, before \
     the ingests, reads their points.";

/// A dataset of a run that may stream it ([`IndexConfig::streamed_datasets_and_notes`]).
pub(crate) enum RunData {
    /// Held in memory.
    Held(Arc<Trajectories>),
    /// Generated anew each time it is ingested; `header` has the name and extent, no records.
    Streamed {
        header: Trajectories,
        records: usize,
        objects: usize,
    },
}

impl RunData {
    /// The dataset's name and extent (and its records when held).
    pub fn header(&self) -> &Trajectories {
        match self {
            RunData::Held(t) => t,
            RunData::Streamed { header, .. } => header,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            RunData::Held(t) => t.len(),
            RunData::Streamed { records, .. } => *records,
        }
    }

    pub fn is_streamed(&self) -> bool {
        matches!(self, RunData::Streamed { .. })
    }

    /// Distinct objects.
    pub fn objects(&self) -> usize {
        match self {
            RunData::Held(t) => t.objects(),
            RunData::Streamed { objects, .. } => *objects,
        }
    }

    /// A streamed dataset's records, generated from the run's seed: the records the held dataset
    /// of the same records and objects has, in the same order.
    fn stream(records: usize, objects: usize, ctx: &RunContext) -> anyhow::Result<BerlinModStream> {
        let params = lsmlab_workloads::gen::BerlinModParams {
            vehicles: Some(objects),
            ..Default::default()
        };
        lsmlab_workloads::gen::berlinmod_stream(records, ctx.seed, &params).context("generating berlinmod")
    }

    /// The dataset's records in order: the held ones, or a fresh stream.
    pub fn records<'a>(&'a self, ctx: &RunContext) -> anyhow::Result<Box<dyn Iterator<Item = Record> + 'a>> {
        Ok(match self {
            RunData::Held(t) => Box::new(t.records.iter().copied()),
            RunData::Streamed { records, objects, .. } => Box::new(RunData::stream(*records, *objects, ctx)?),
        })
    }

    /// The dataset's operation stream ([`Trajectories::ops`]), computed as it is consumed.
    pub fn ops<'a>(
        &'a self,
        ctx: &RunContext,
    ) -> anyhow::Result<OpStream<Box<dyn Iterator<Item = Record> + 'a>>> {
        Ok(OpStream::new(self.records(ctx)?))
    }

    /// The points of the records at `positions` (any order, repeats allowed), in the order of
    /// `positions`: read from the held records, or caught as one pass of the stream goes by (it
    /// stops after the last position), so that what a run draws from the records (query centres)
    /// is the same whether the dataset is held or streamed.
    pub fn points_at(&self, positions: &[usize], ctx: &RunContext) -> anyhow::Result<Vec<Point>> {
        let n = self.len();
        if let Some(&bad) = positions.iter().find(|&&i| i >= n) {
            anyhow::bail!("{}: record {bad} asked for, of {n}", self.header().name);
        }
        let (records, objects) = match self {
            RunData::Held(t) => return Ok(positions.iter().map(|&i| t.records[i].point).collect()),
            RunData::Streamed { records, objects, .. } => (*records, *objects),
        };
        let mut order: Vec<usize> = (0..positions.len()).collect();
        order.sort_unstable_by_key(|&k| positions[k]);
        let mut points = vec![Point::new(0.0, 0.0); positions.len()];
        let mut next = order.iter().copied().peekable();
        let last = order.last().map_or(0, |&k| positions[k] + 1);
        ctx.progress.message(format!(
            "{}: reading {} records' points from the stream",
            self.header().name,
            thousands(positions.len() as u64)
        ));
        for (i, r) in RunData::stream(records, objects, ctx)?.take(last).enumerate() {
            while let Some(k) = next.next_if(|&k| positions[k] == i) {
                points[k] = r.point;
            }
        }
        anyhow::ensure!(
            next.peek().is_none(),
            "{}: the stream ended before record {}",
            self.header().name,
            next.peek().map_or(0, |&k| positions[k])
        );
        Ok(points)
    }

    /// Ingests the dataset's operation stream ([`ingest_ops`]).
    pub fn ingest(&self, bed: &mut Testbed, ctx: &RunContext) -> anyhow::Result<IngestCost> {
        match self {
            RunData::Held(t) => ingest_ops(bed, t.ops(), t.len(), ctx),
            RunData::Streamed { records, objects, .. } => {
                let stream = RunData::stream(*records, *objects, ctx)?;
                ingest_ops(bed, OpStream::new(stream), *records, ctx)
            }
        }
    }
}

impl IndexConfig {
    /// [`IndexConfig::datasets_and_notes`] for a run that reads each dataset's records in order
    /// only (its ingests, and [`RunData::points_at`] for what it draws from the records): a
    /// generated BerlinMOD dataset of at least [`STREAM_MIN_RECORDS`] records is streamed
    /// ([`RunData::Streamed`]), every other dataset is held.
    pub(crate) fn streamed_datasets_and_notes(
        &self,
        ctx: &RunContext,
        storage: &StorageConfig,
        strategies: &[Strategy],
    ) -> anyhow::Result<(Vec<RunData>, Vec<String>)> {
        let n = |d: Dataset| {
            if self.records == 0 {
                d.paper_records()
            } else {
                self.records
            }
        };
        let names: Vec<&str> = self.datasets.iter().map(|d| d.as_str()).collect();
        let plan = crate::data::plan(&names, ctx.data)?;
        let streams = |d: Dataset| plan.generates(d.as_str()) && streams(d, n(d));
        if !self.datasets.iter().any(|&d| streams(d)) {
            let (t, notes) = self.datasets_and_notes(ctx, storage, strategies)?;
            return Ok((t.into_iter().map(RunData::Held).collect(), notes));
        }
        // Only generated datasets from here (`--data` files replace them all): in their order.
        let (mut out, mut notes) = (Vec::new(), Vec::new());
        for &d in &self.datasets {
            if !streams(d) {
                let one = IndexConfig {
                    datasets: vec![d],
                    ..self.clone()
                };
                let (t, n) = one.load_datasets_shared(ctx)?;
                out.extend(t.into_iter().map(RunData::Held));
                notes.extend(n);
                continue;
            }
            let records = n(d);
            let objects = self.objects_for(d, records);
            notes.push(self.objects_note(d, records, objects));
            notes.push(format!(
                "{d} is streamed: generated anew each time it is ingested, never held \
                 ({} records or more are streamed).",
                thousands(STREAM_MIN_RECORDS as u64)
            ));
            // A streamed dataset holds no records: the one a previous cell generated (kept for
            // that dataset's next cells, which come before this one) would only sit beside it.
            forget_generated();
            out.push(RunData::Streamed {
                header: Trajectories {
                    name: d.as_str().to_string(),
                    extent: lsmlab_workloads::gen::BERLINMOD_EXTENT,
                    records: Vec::new(),
                },
                records,
                objects,
            });
        }
        notes.extend(storage.device_note()?);
        notes.extend(fidelity_notes(self, strategies));
        Ok((out, notes))
    }
}

/// What identifies a generated dataset: the generator, records, objects and seed decide it.
type GenKey = (Dataset, usize, usize, u64);

/// The last generated dataset, kept for the next cell: a run's cells go dataset by dataset (the
/// dataset is the outermost grid key), so every cell of one dataset after the first finds it here
/// instead of generating it again. One dataset at most is kept, so a run holds no more than the
/// cell running needs.
static GENERATED: Mutex<Option<(GenKey, Arc<Trajectories>)>> = Mutex::new(None);

/// Lets the generated dataset kept for the next cell go (the cells holding it keep their own
/// `Arc`). A run of Gowalla, Chicago and BerlinMOD kept Chicago's 15 million records through every
/// BerlinMOD cell: `rum-update` at paper scale peaked at 2.18 GiB, its costliest BerlinMOD cell
/// alone at 1.72 GiB.
fn forget_generated() {
    *GENERATED.lock() = None;
}

/// The dataset `dataset` with `records` records over `objects` objects from the run's seed:
/// generated, or the same one a previous cell of this process generated.
fn generated(
    dataset: Dataset,
    records: usize,
    objects: usize,
    ctx: &RunContext,
) -> anyhow::Result<Arc<Trajectories>> {
    let key = (dataset, records, objects, ctx.seed);
    let mut slot = GENERATED.lock();
    if let Some((k, t)) = slot.as_ref() {
        if *k == key {
            return Ok(Arc::clone(t));
        }
    }
    // Let the previous dataset go before generating the next, so two are never held at once.
    *slot = None;
    ctx.progress.message(format!(
        "generating {dataset} ({records} records, {objects} objects)"
    ));
    let spec = GenSpec::new(records).with_objects(objects);
    let t = Arc::new(
        lsmlab_workloads::generate_spec(dataset.as_str(), &spec, ctx.seed)
            .with_context(|| format!("generating {dataset}"))?,
    );
    *slot = Some((key, Arc::clone(&t)));
    Ok(t)
}

/// What the baselines and the memory component do, and where lsmlab departs from the authors'
/// code: every experiment that runs the strategies writes these notes (the Eager and Validation
/// ones only when `strategies` has them).
pub fn fidelity_notes(p: &IndexConfig, strategies: &[Strategy]) -> Vec<String> {
    let runs = |eager: bool| {
        strategies.iter().any(|s| match s.family() {
            "Eager" => eager,
            "Validation" => !eager,
            _ => false,
        })
    };
    let mut notes = Vec::new();
    if runs(true) {
        notes.push(EAGER_NOTE.to_string());
    }
    if runs(false) {
        notes.push(VALIDATION_NOTE.to_string());
    }
    notes.extend(memory_notes(p));
    notes
}

/// What the Eager variants do, which is the authors' baseline, and where lsmlab departs.
const EAGER_NOTE: &str =
    "Eager is the authors' baseline (their Eager runs, UMTest.run_antimatters_test, build an \
         LSMRTreeWithAntiMatterTuples; an update is a delete of the old tuple through \
         AbstractLSMRTree.modify plus an insert): the old entry is removed from the memory R-tree if it \
         is there and its antimatter tuple is added to the memory component in any case, counted in the \
         memory budget; the flush writes entries and antimatter together into the disk R-tree, \
         antimatter whose target left memory included; a query drops antimatter and the older entries \
         it names while merging the disk components and probes each surviving disk entry in the memory \
         antimatter; a merge annihilates targets with their antimatter and keeps the antimatter unless \
         it includes the oldest component. lsmlab keeps the old entry's location and stamp (the \
         authors' stream gives them) beside the index, uncounted. Eager(buddy) is LSMRTree.modify, the \
         index of the authors' Validation runs: an update inserts the new entry and records the object \
         id in the memory deleted-key buddy B-tree without removing the old entry (the delete is \
         commented out), so the memory component fills with every version, flushes write them all, and \
         a merge drops an entry only when a newer input's deleted keys name its object; lsmlab answers \
         exactly where that code returns stale versions (stale memory entries are skipped by each \
         object's newest timestamp, no I/O; stale flushed entries carry a superseded mark) and probes \
         the deleted keys through the Bloom filter as intended. Eager(physical) removes the old entry \
         from the memory R-tree, as AsterixDB's LSM R-tree with a buddy B-tree does. Deleted keys are \
         object ids for both buddy variants; deletes (absent from the authors' driver) record the \
         object id, or the antimatter of the current entry.";

/// What the Validation variants do, which is the authors' baseline, and where lsmlab departs.
const VALIDATION_NOTE: &str =
    "Validation is the authors' baseline (their Validation runs, UMTest.runTest, build an LSMRTree \
         and keep no primary key index): Eager(buddy)'s writes, flushes and merges, and per query \
         candidate LSMRTreeSearchCursor's probes of the memory deleted-key tree and then of every newer \
         component's, with its Bloom test inverted as the code reads (a tree whose filter may hold the \
         key is skipped, one whose filter rules it out is searched and finds nothing), so no disk \
         deleted-key tree kills a candidate; lsmlab counts those probes and their page reads and answers \
         exactly from each object's current stamp (uncounted) where that code returns stale versions. \
         Validation(key-index) is Luo & Carey's: a primary key index of latest timestamps, one lookup per \
         candidate, no merge repair. Validation(repair) adds Luo & Carey's merge repair, which leaves the \
         same candidates as UM+M (the like-for-like claims pair those two).";

/// The memory component's flush trigger and cleaning counters, and the generated data.
fn memory_notes(p: &IndexConfig) -> Vec<String> {
    vec![
        format!(
            "flush_trigger={}: {} cleaning_counters={}: {}",
            match p.flush_trigger {
                FlushTrigger::Allocated => "allocated",
                FlushTrigger::Live => "live",
            },
            match p.flush_trigger {
                FlushTrigger::Allocated =>
                    "the memory component is full once it has allocated memory_pages pages since it was \
                     created, as AsterixDB's virtual buffer cache counts them (the authors' setting), so \
                     cleaning frees no page and only the splits it avoids delay a flush; lsmlab unlinks a \
                     node that a delete or a cleaning empties and counts a split that reuses it again, which \
                     slightly overstates AsterixDB's count.",
                FlushTrigger::Live =>
                    "the memory component is full once its live nodes plus deleted-key pages exceed \
                     memory_pages (not the authors' setting: cleaning that empties a node frees it).",
            },
            match p.cleaning_counters {
                CleaningCounters::Updates => "updates",
                CleaningCounters::AllInserts => "all-inserts",
            },
            match p.cleaning_counters {
                CleaningCounters::Updates =>
                    "only updates advance the Buffered and Vacuum counters, an update that splits its leaf \
                     does not bump the leaf's counter, and Vacuum Cleaning leaves the cleaned leaf's \
                     Buffered counter as it was, as in the authors' code; Vacuum walks leaves in node order \
                     where theirs follows the right-sibling chain.",
                CleaningCounters::AllInserts =>
                    "every entry put into the memory R-tree advances the counters and any cleaning resets \
                     a leaf's Buffered counter (not the authors' setting).",
            }
        ),
        "Generated data: Chicago's 5,000 taxis are an estimate (about 3,600 working cabs to the 6,999 \
         medallion cap in 2018 press reports; no count of distinct 2019 taxi ids is published); its pickups \
         sit exactly on 800 tract and 77 community-area centroids, as the real data publishes them (the \
         spread switch of the generator is off). BerlinMOD vehicles report equal numbers of positions."
            .to_string(),
    ]
}

/// The note on modelled time every experiment with a `modelled_*` field writes.
pub fn modelled_note(storage: &StorageConfig, field: &str) -> String {
    format!(
        "{field} = total_ms + counted page I/O x the {} profile ({}); with device={} total_ms {}.",
        storage.profile,
        storage.profile.describe(),
        storage.device.as_str(),
        match storage.device {
            DeviceKind::Mem => "is CPU time only (pages live in memory)",
            DeviceKind::File =>
                "already includes real file I/O, so modelled_ms counts I/O twice; compare total_ms",
        }
    )
}

/// Checks that an experiment's strategy list is not empty.
pub fn check_strategies(strategies: &[Strategy]) -> anyhow::Result<()> {
    check(
        "strategies",
        "(empty)",
        !strategies.is_empty(),
        "at least one strategy",
    )
}

/// A fresh storage + LSM R-tree for one cell of a run.
pub(crate) struct Testbed {
    pub storage: Storage,
    pub index: LsmRTree,
}

impl Testbed {
    /// Opens `storage` and builds the index `cfg` describes on it.
    pub fn new(storage: &StorageConfig, cfg: SpatialConfig) -> anyhow::Result<Testbed> {
        let storage = storage.open()?;
        let index = LsmRTree::new(cfg, storage.cache.clone())?;
        Ok(Testbed { storage, index })
    }

    pub fn io(&self) -> IoStats {
        self.storage.io()
    }
}

/// What ingesting a stream cost.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IngestCost {
    pub ops: u64,
    pub total: Duration,
    pub flush: Duration,
    pub merge: Duration,
    pub io: IoStats,
    /// `io` split by phase (no queries run during an ingest).
    pub phases: PhaseIo,
}

impl IngestCost {
    /// Time outside flushes and merges.
    pub fn update(&self) -> Duration {
        self.total.saturating_sub(self.flush + self.merge)
    }

    /// The wall time of each phase, for [`PhaseIo::fields`].
    pub fn times(&self) -> PhaseTimes {
        PhaseTimes {
            update: self.update(),
            flush: self.flush,
            merge: self.merge,
            query: Duration::ZERO,
        }
    }
}

/// Counted page I/O of one run split by phase: flushes and merges (of the R-tree and of its key
/// index), queries, and updates (everything else: Validation's key lookups, Eager's primary index
/// reads, cache write-backs outside flushes).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PhaseIo {
    pub update: IoStats,
    pub flush: IoStats,
    pub merge: IoStats,
    pub query: IoStats,
}

/// Wall time of each phase of a run.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PhaseTimes {
    pub update: Duration,
    pub flush: Duration,
    pub merge: Duration,
    pub query: Duration,
}

fn add_io(to: &mut IoStats, io: IoStats) {
    to.page_reads += io.page_reads;
    to.page_writes += io.page_writes;
    to.syncs += io.syncs;
}

fn sub_io(from: &mut IoStats, io: IoStats) {
    from.page_reads = from.page_reads.saturating_sub(io.page_reads);
    from.page_writes = from.page_writes.saturating_sub(io.page_writes);
    from.syncs = from.syncs.saturating_sub(io.syncs);
}

impl PhaseIo {
    /// Splits `total` (the device I/O between two snapshots of the index's stats) into phases:
    /// flush and merge I/O as the LSM lifecycle counted it, `query` as the caller measured it, and
    /// the rest as update I/O.
    pub fn split(total: IoStats, before: &SpatialStats, after: &SpatialStats, query: IoStats) -> PhaseIo {
        let phase = |io: fn(&LifecycleStats) -> IoStats| {
            let mut sum = IoStats::default();
            add_io(&mut sum, io(&after.rtree).since(&io(&before.rtree)));
            if let Some(k) = &after.key_index {
                let earlier = before.key_index.as_ref().map(io).unwrap_or_default();
                add_io(&mut sum, io(k).since(&earlier));
            }
            sum
        };
        let (flush, merge) = (phase(|s| s.flush_io), phase(|s| s.merge_io));
        let mut update = total;
        for io in [flush, merge, query] {
            sub_io(&mut update, io);
        }
        PhaseIo {
            update,
            flush,
            merge,
            query,
        }
    }

    /// Adds `<phase>_page_reads`, `<phase>_page_writes` and `<phase>_modelled_ms` (the phase's wall
    /// time plus its counted I/O on the storage's device profile) for update, flush and merge, and
    /// for query when `with_query`.
    pub fn fields(
        &self,
        mut row: RowBuilder,
        times: &PhaseTimes,
        storage: &Storage,
        with_query: bool,
    ) -> RowBuilder {
        let mut phases = vec![
            ("update", self.update, times.update),
            ("flush", self.flush, times.flush),
            ("merge", self.merge, times.merge),
        ];
        if with_query {
            phases.push(("query", self.query, times.query));
        }
        for (name, io, time) in phases {
            row = row
                .int(&format!("{name}_page_reads"), io.page_reads)
                .int(&format!("{name}_page_writes"), io.page_writes)
                .num(
                    &format!("{name}_modelled_ms"),
                    ms(time) + storage.modelled_io_ms(io),
                );
        }
        row
    }
}

/// The note every experiment with per-phase fields writes.
pub const PHASE_NOTE: &str =
    "<phase>_page_reads / _page_writes split the counted page I/O by phase: flush and \
     merge (of the R-tree and of its key index, as the LSM lifecycle counts them), query, and update \
     (the rest: key-index lookups, cache write-backs outside flushes). <phase>_modelled_ms = the phase's \
     wall time + its counted I/O on the device profile.";

/// Applies one operation of the stream.
pub fn apply(index: &mut LsmRTree, op: &SpatialOp) -> lsmlab_engine::Result<()> {
    match *op {
        SpatialOp::Insert { oid, at } => index.insert(oid, at),
        SpatialOp::Update { oid, from, to } => index.update(oid, Some(from), to),
        SpatialOp::Delete { oid, from } => index.delete(oid, Some(from)),
    }
}

/// [`ingest`] of a stream computed as it is consumed (for instance [`Trajectories::ops`]), so that
/// a run holds no operation per record; `total` is the stream's length, for the progress display.
pub(crate) fn ingest_ops(
    bed: &mut Testbed,
    ops: impl Iterator<Item = SpatialOp>,
    total: usize,
    ctx: &RunContext,
) -> anyhow::Result<IngestCost> {
    let io_before = bed.io();
    let before = bed.index.stats();
    let start = Instant::now();
    let mut count = 0u64;
    for (i, op) in ops.enumerate() {
        apply(&mut bed.index, &op).with_context(|| format!("operation {i} ({op:?})"))?;
        count += 1;
        if i % 65_536 == 0 {
            ctx.progress.count(i as u64, Some(total as u64), "operations");
        }
    }
    let total = start.elapsed();
    let after = bed.index.stats();
    let io = bed.io().since(&io_before);
    Ok(IngestCost {
        ops: count,
        total,
        flush: after.flush_time() - before.flush_time(),
        merge: after.merge_time() - before.merge_time(),
        io,
        phases: PhaseIo::split(io, &before, &after, IoStats::default()),
    })
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{self, Config, Overlay};

    lsmlab_harness::config! {
        struct Only {
            #[serde(flatten)]
            index: IndexConfig,
            #[serde(flatten)]
            storage: StorageConfig,
        }
    }

    impl Config for Only {
        fn validate(&self) -> anyhow::Result<()> {
            self.index.validate()?;
            self.storage.validate()
        }
    }

    fn resolve(sets: &[&str]) -> anyhow::Result<Only> {
        let index = IndexConfig::defaults(Scale::Tiny);
        let defaults = Only {
            storage: index.storage_defaults(),
            index,
        };
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        config::resolve(&defaults, &Overlay::sets(&sets))
    }

    #[test]
    fn thresholds_keep_their_width() {
        let e = format!("{:#}", resolve(&["vacuum_threshold=4294967297"]).unwrap_err());
        assert!(
            e.contains("vacuum_threshold") && e.contains("1 to 4294967295"),
            "{e}"
        );
        let e = format!("{:#}", resolve(&["buffered_threshold=0"]).unwrap_err());
        assert!(
            e.contains("buffered_threshold") && e.contains("from 1 to 4294967295"),
            "{e}"
        );
        let c = resolve(&["vacuum_threshold=4294967295", "buffered_threshold=70_000"]).unwrap();
        let cfg = c.index.spatial_config(
            "Eager".parse().unwrap(),
            &lsmlab_workloads::generate("gowalla", 10, 1).unwrap(),
        );
        assert_eq!((cfg.vacuum_threshold, cfg.buffered_threshold), (u32::MAX, 70_000));
    }

    #[test]
    fn choices_are_typed() {
        let c = resolve(&["merge_policy=none", "datasets=berlinmod,gowalla"]).unwrap();
        assert_eq!(c.index.merge_policy, MergePolicyChoice::None);
        assert_eq!(c.index.datasets, [Dataset::Berlinmod, Dataset::Gowalla]);
        for (set, needle) in [
            ("merge_policy=leveled", "prefix"),
            ("datasets=chicago,paris", "paris"),
            ("tolerance=1", "at least 2"),
            ("bloom_fp=1", "strictly between"),
            ("page_size=128", "between 256"),
        ] {
            let e = format!("{:#}", resolve(&[set]).unwrap_err());
            assert!(
                e.contains(set.split('=').next().unwrap()) && e.contains(needle),
                "{set}: {e}"
            );
        }
    }

    #[test]
    fn serde_refuses_unknown_keys_beside_two_flattened_parts() {
        let only = resolve(&[]).unwrap();
        let mut map = config::to_map(&only).unwrap();
        assert_eq!(config::from_map::<Only>(&map).unwrap(), only);
        map.insert("vacuum_thresold".into(), serde_json::Value::from(8));
        let e = config::from_map::<Only>(&map).unwrap_err().to_string();
        assert!(e.contains("vacuum_thresold"), "{e}");
    }

    #[test]
    fn defaults_keep_the_authors_ratios() {
        for scale in Scale::ALL {
            let c = IndexConfig::defaults(scale);
            assert_eq!(c.storage_defaults().cache_pages as u64, c.memory_pages * 4);
            assert_eq!(c.max_mergeable_pages, c.memory_pages * 8);
            // only the paper's scale keeps its pages in a file, as the authors' disk components
            let file = c.storage_defaults_at(scale).device == DeviceKind::File;
            assert_eq!(file, scale == Scale::Paper, "{scale:?}");
        }
        assert_eq!(IndexConfig::defaults(Scale::Paper).records, 0);
    }

    #[test]
    fn baseline_notes_only_for_the_baselines_a_run_has() {
        let p = IndexConfig::defaults(Scale::Tiny);
        let parse = |names: &[&str]| {
            names
                .iter()
                .map(|n| n.parse().unwrap())
                .collect::<Vec<Strategy>>()
        };
        let um_only = fidelity_notes(&p, &parse(&["UM", "UM+BV"]));
        assert!(um_only
            .iter()
            .all(|n| !n.starts_with("Eager") && !n.starts_with("Validation")));
        assert!(um_only.iter().any(|n| n.starts_with("flush_trigger=allocated")));
        let all = fidelity_notes(&p, &reported_strategies());
        assert_eq!(all.len(), um_only.len() + 2);
        assert!(all[0].starts_with("Eager is the authors'") && all[1].starts_with("Validation is the authors'"));
    }

    #[test]
    fn default_objects_keep_the_papers_objects_per_memory_page() {
        let at = |scale, dataset: Dataset| {
            let c = IndexConfig::defaults(scale);
            c.objects_for(dataset, dataset.paper_records())
        };
        for dataset in Dataset::ALL {
            let real = lsmlab_workloads::paper_objects(dataset.as_str()).unwrap();
            assert_eq!(at(Scale::Paper, dataset), real);
            // small's memory component is 1/32 of the authors'
            assert_eq!(at(Scale::Small, dataset), (real as f64 / 32.0).round() as usize);
        }
        assert_eq!(at(Scale::Small, Dataset::Chicago), 156);
        // tiny's ratio would give BerlinMOD 2 vehicles: the minimum applies
        assert_eq!(at(Scale::Tiny, Dataset::Berlinmod), MIN_OBJECTS);
        let mut c = IndexConfig::defaults(Scale::Small);
        c.objects = 700;
        assert_eq!(c.objects_for(Dataset::Gowalla, 1_000), 700);
        assert_eq!(
            c.objects_for(Dataset::Gowalla, 500),
            500,
            "never more objects than records"
        );
    }

    /// The RUM experiments that stream a large generated BerlinMOD dataset.
    const STREAMING: [&str; 5] = [
        "rum-update",
        "rum-query",
        "rum-mixed",
        "rum-tuning",
        "rum-concurrency",
    ];

    fn overlay(sets: &[&str]) -> Overlay {
        Overlay::sets(&sets.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    /// A tiny-scale run's context with `seed` and no data files, reporting to `progress`.
    pub(super) fn tiny_ctx(seed: u64, progress: &crate::progress::Progress) -> RunContext<'_> {
        RunContext {
            scale: Scale::Tiny,
            seed,
            data: &[],
            progress,
        }
    }

    /// A streamed dataset's cell lets go of the dataset an earlier cell generated and kept for
    /// the next (it would sit beside the stream for nothing). The kept dataset is one no other
    /// test generates (its own records, objects and seed), so no other test holds it.
    #[test]
    fn a_streamed_cell_lets_the_kept_dataset_go() {
        let progress = crate::progress::Progress::silent();
        let ctx = tiny_ctx(40_973, &progress);
        let kept = {
            let strong = generated(Dataset::Chicago, 1_234, 17, &ctx).unwrap();
            Arc::downgrade(&strong)
        };
        let c = resolve(&["datasets=berlinmod", "records=3000"]).unwrap();
        let strategies = ["UM".parse().unwrap()];
        let (data, _) =
            with_stream_min(1_000, || c.index.streamed_datasets_and_notes(&ctx, &c.storage, &strategies)).unwrap();
        assert!(matches!(data[..], [RunData::Streamed { .. }]));
        assert!(kept.upgrade().is_none(), "the kept dataset is still held");
    }

    #[test]
    fn a_streamed_dataset_counts_what_the_held_one_counts() {
        let progress = crate::progress::Progress::silent();
        let ctx = tiny_ctx(11, &progress);
        for (name, sets) in [
            ("rum-update", &["strategies=Eager,Validation,UM+FMBV"][..]),
            (
                "rum-query",
                &[
                    "strategies=Validation,UM+M",
                    "queries=6",
                    "selectivities=0.01,0.2",
                ],
            ),
            (
                "rum-mixed",
                &[
                    "strategies=Validation,UM+BV",
                    "query_fractions=0.02",
                    "query_skews=uniform,data,hot",
                ],
            ),
            (
                "rum-tuning",
                &["vacuum_thresholds=2,16", "buffered_thresholds=4", "queries=6"],
            ),
            ("rum-concurrency", &["strategies=UM,UM+FMBV", "threads=1"]),
        ] {
            let queries = !["rum-update", "rum-concurrency"].contains(&name);
            let e = crate::registry::find(name).unwrap();
            let mut all = vec!["datasets=gowalla,berlinmod", "records=3000", "memory_pages=8"];
            all.extend(sets);
            let cfg = e.resolve(Scale::Tiny, &overlay(&all)).unwrap();
            let held = e.run(&cfg, &ctx).unwrap();
            // BerlinMOD's 3,000 records are streamed, Gowalla (never streamed) is held
            let streamed = with_stream_min(1_000, || e.run(&cfg, &ctx)).unwrap();
            let says = |notes: &[String], what: &str| notes.iter().any(|n| n.contains(what));
            assert!(says(&streamed.notes, "berlinmod is streamed"), "{name}");
            assert!(!says(&streamed.notes, "gowalla is streamed"), "{name}");
            assert!(!says(&held.notes, "is streamed"), "{name}");
            assert_eq!(
                says(&streamed.notes, "Query centres drawn from a streamed"),
                queries,
                "{name}"
            );
            assert_eq!(held.rows.len(), streamed.rows.len(), "{name}");
            let (mut berlinmod_rows, mut found) = (0, 0.0);
            for (h, s) in held.rows.iter().zip(&streamed.rows) {
                let keys = |r: &crate::rows::Row| r.keys().cloned().collect::<Vec<_>>();
                assert_eq!(keys(h), keys(s), "{name}");
                for (k, v) in h.iter().filter(|(k, _)| !crate::rows::is_timed(k)) {
                    assert_eq!(v, &s[k], "{name}: {k} in {h:?}");
                }
                berlinmod_rows += usize::from(h["dataset"] == "berlinmod");
                if let Some(c) = h.get("avg_candidates") {
                    found += c.as_f64().unwrap();
                }
            }
            assert_eq!(berlinmod_rows * 2, held.rows.len(), "{name}");
            // the queries find something, so equal answers say the boxes are the same
            assert_eq!(found > 0.0, queries, "{name}");
        }
    }

    #[test]
    fn points_at_reads_the_records_a_held_dataset_has() {
        let progress = crate::progress::Progress::silent();
        let ctx = tiny_ctx(5, &progress);
        let held = generated(Dataset::Berlinmod, 500, 10, &ctx).unwrap();
        let streamed = RunData::Streamed {
            header: Trajectories {
                name: "berlinmod".into(),
                extent: held.extent,
                records: Vec::new(),
            },
            records: 500,
            objects: 10,
        };
        let at = [499, 3, 0, 3, 250];
        let points = streamed.points_at(&at, &ctx).unwrap();
        assert_eq!(
            points,
            RunData::Held(Arc::clone(&held)).points_at(&at, &ctx).unwrap()
        );
        assert_eq!(points[1], held.records[3].point);
        assert_eq!(streamed.objects(), held.objects());
        let e = format!("{:#}", streamed.points_at(&[500], &ctx).unwrap_err());
        assert!(e.contains("record 500") && e.contains("of 500"), "{e}");
    }

    #[test]
    fn estimates_follow_the_device_and_what_is_streamed() {
        for name in STREAMING {
            let e = crate::registry::find(name).unwrap();
            let estimate = |scale, sets: &[&str]| {
                let cfg = e.resolve(scale, &overlay(sets)).unwrap();
                e.memory_estimate(&cfg, &[]).unwrap().unwrap()
            };
            // The paper's BerlinMOD is streamed, and on the file device (the paper scale's
            // default) the index's pages leave memory: within the 3 GB budget.
            let file = estimate(Scale::Paper, &["datasets=berlinmod"]);
            assert!(file.bytes < 3_000_000_000, "{name}: {file:?}");
            if name == "rum-query" {
                // Above the measured peak of the whole stream (its queries' candidates included).
                assert!(file.bytes > 1_760_328 * 1024, "{file:?}");
                assert!(file.basis.contains("a query's candidates"), "{}", file.basis);
            }
            if name == "rum-update" {
                // Above the measured peaks of its costliest cell, BerlinMOD under Eager: the whole
                // stream (the cap binds), 24 and 8 million records (docs/scale.md).
                assert!(file.bytes > 1_805_760 * 1024, "{file:?}");
                for (records, peak_kib) in [(24_000_000, 1_787_764), (8_000_000, 689_304)] {
                    let part = estimate(Scale::Paper, &["datasets=berlinmod", &format!("records={records}")]);
                    assert!(part.bytes > peak_kib * 1024, "{records}: {part:?}");
                }
            }
            assert!(
                file.basis.contains("56,129,943 records (streamed") && file.basis.contains("device=file"),
                "{name}: {}",
                file.basis
            );
            // On the in-memory device every page of the index stays.
            let mem = estimate(Scale::Paper, &["datasets=berlinmod", "device=mem"]);
            assert!(mem.bytes > file.bytes, "{name}: {mem:?} {file:?}");
            assert!(!mem.basis.contains("device=file"), "{name}: {}", mem.basis);
            // Below the threshold the records are held and count besides the index.
            let at = |n: usize| format!("records={n}");
            let streamed = estimate(Scale::Paper, &["datasets=berlinmod", &at(STREAM_MIN_RECORDS)]);
            let held = estimate(Scale::Paper, &["datasets=berlinmod", &at(STREAM_MIN_RECORDS - 1)]);
            assert!(held.basis.contains("B per held record"), "{name}: {}", held.basis);
            assert!(
                streamed.basis.contains("streamed, none held"),
                "{name}: {}",
                streamed.basis
            );
            assert!(held.bytes > streamed.bytes, "{name}: {held:?} {streamed:?}");
            // At small the file device keeps less of the index in memory than the in-memory one.
            let small = estimate(Scale::Small, &["datasets=berlinmod", "device=mem"]);
            let small_file = estimate(Scale::Small, &["datasets=berlinmod", "device=file"]);
            assert!(small_file.bytes < small.bytes, "{name}: {small_file:?} {small:?}");
        }
    }
}
