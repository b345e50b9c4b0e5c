//! The Leaper experiments (`docs/papers/leaper.md#the-paper-in-brief`; Yang et al., PVLDB 13(11)
//! 2020): a key-value LSM store whose block cache loses the blocks every flush and compaction
//! rewrites, under the cache warm-up policies the paper compares, on a virtual clock ([`clock`]).
//!
//! This module holds what every Leaper experiment shares: the store's settings, sized so that the
//! paper's ratios hold at every scale ([`KvSetup`]: cache / data = 3 GB / 10 GB, memtables / data =
//! 1 GB / 10 GB, about 10 background operations per 200-interval measured run, 200-byte values),
//! the workloads, and the notes that say those ratios and the clock's constants in every result.

mod beside;
mod clock;
mod driver;
mod learned;
mod model;
pub(crate) mod online;
mod pool;
mod report;
mod sensitivity;
mod timeline;
mod variant;

use crate::plot::FixedStyle;
use std::fmt;

use std::path::PathBuf;

use lsmlab_engine::storage::DeviceProfile;
use lsmlab_workloads::kv::KeyDist;
use serde::{Deserialize, Serialize};

use crate::config::DeviceKind;
use crate::config::{check, check_items};
use crate::experiment::{RowBuilder, Scale};

pub(crate) use clock::{CostModel, VirtualClock};
pub(crate) use timeline::{RunRecorder, RunTimeline};

pub(crate) const PAPER: &str = "Leaper";

/// This paper as the registry lists it (see `lsmlab_harness::paper`).
pub fn paper() -> lsmlab_harness::paper::Paper {
    lsmlab_harness::paper::Paper {
        id: "leaper",
        title: PAPER,
        kind: lsmlab_harness::paper::PaperKind::Paper,
        experiments: vec![
            &online::LeaperOnline,
            &model::LeaperModelExperiment,
            &sensitivity::LeaperSensitivity,
        ],
        claims: Some(("leaper.json", include_str!("../../claims/leaper.json"))),
        traces: vec![&crate::trace::LeaperTraces],
        styles: const {
            &[
                FixedStyle::colored("leaper", 1),
                FixedStyle::colored("none", 9),
                FixedStyle::colored("noprefetch", 9),
                FixedStyle::colored("warm-up", 0),
                FixedStyle::colored("prepopulate", 4),
                // The warm-up policies leaper-online compares, each its own hue.
                FixedStyle::colored("lru", 9),
                FixedStyle::colored("incremental-warmup", 0),
                FixedStyle::colored("prepopulate-flush", 4),
                FixedStyle::colored("prepopulate-all", 6),
                // Table 4: one hue per metric, dark for lsmlab's value and light for the paper's.
                FixedStyle::colored("QPS (lsmlab)", 0),
                FixedStyle::colored("QPS (paper)", 10),
                FixedStyle::colored("p95 latency (lsmlab)", 1),
                FixedStyle::colored("p95 latency (paper)", 11),
                FixedStyle::colored("cache misses (lsmlab)", 4),
                FixedStyle::colored("cache misses (paper)", 14),
            ]
        },
        figures: report::figure_specs,
    }
}

/// The paper's online setup (§7.3): 10 GB of data in 200-byte pairs, a 3 GB block cache and 1 GB of
/// memtables.
pub const PAPER_DATA_BYTES: u64 = 10_000_000_000;
pub(crate) const PAPER_CACHE_RATIO: f64 = 0.3;
pub(crate) const PAPER_MEMTABLE_RATIO: f64 = 0.1;
/// "About 10 background operations are triggered" in each 200 s run, reported every second.
pub const PAPER_BACKGROUND_OPS: u64 = 10;
pub(crate) const PAPER_INTERVALS: u64 = 200;

/// The paper's workloads (Table 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum Workload {
    /// SysBench-like: 75% point lookups, 20% updates, 5% inserts, zipf 0.5.
    #[serde(rename = "synthetic")]
    Synthetic,
    /// Tmall-like: 75% point, 10% range, 10% updates, 5% inserts, zipf 0.3, a daily shift.
    #[serde(rename = "e-commerce")]
    Ecommerce,
    /// DingTalk-like: 40% point, 35% updates, 25% inserts, zipf 0.9.
    #[serde(rename = "messaging")]
    Messaging,
}

impl Workload {
    pub const ALL: [Workload; 3] = [Workload::Ecommerce, Workload::Messaging, Workload::Synthetic];

    /// The name results and the workload generator use.
    pub fn as_str(self) -> &'static str {
        match self {
            Workload::Synthetic => "synthetic",
            Workload::Ecommerce => "e-commerce",
            Workload::Messaging => "messaging",
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

lsmlab_harness::config! {
    /// The store, the clock and the run length every Leaper experiment shares; experiment configs
    /// flatten it, so its fields are top-level `--set` keys.
    pub struct KvSetup {
        /// records bulk-loaded before the run (the paper: 10 GB of 200 B pairs = 50,000,000)
        pub records: u64,
        /// value size in bytes (the paper: 200 B pairs)
        pub value_bytes: usize,
        /// data block = device page size in bytes (RocksDB's block_size default: 4096)
        pub page_size: usize,
        /// block cache / initial data (the paper: 3 GB / 10 GB = 0.3)
        pub cache_ratio: f64,
        /// memtable budget / initial data (the paper: 1 GB / 10 GB = 0.1)
        pub memtable_ratio: f64,
        /// level-0 runs that trigger an L0 -> L1 compaction (RocksDB: 4)
        pub l0_trigger: usize,
        /// level 1's target size in memtables (RocksDB: write buffer x L0 trigger)
        pub base_level_memtables: f64,
        /// each level's target / the one above (RocksDB: 10)
        pub size_ratio: u64,
        /// size of the runs compactions write, in memtables (RocksDB: 64 MB files, 64 MB buffers)
        pub target_run_memtables: f64,
        /// levels including level 0; 0 = the fewest whose last level holds the data, as RocksDB's dynamic
        /// level sizing (3 with the kept ratios)
        pub max_levels: usize,
        /// Bloom filter false-positive rate per run
        pub bloom_fp: f64,
        /// device profile pricing a cache miss: nvme, sata-ssd (default: the paper's RAID of two Intel SSDs),
        /// hdd
        #[serde(with = "crate::config::text")]
        pub profile: DeviceProfile,
        /// modelled CPU of an operation besides its block reads, us
        pub cpu_op_us: f64,
        /// modelled cost of a block read the cache answers, us
        pub hit_us: f64,
        /// modelled cost of Leaper's collector per operation, us (the paper's Table 5: < 1 us per query)
        pub collector_us: f64,
        /// flush/compaction I/O bandwidth in MB/s: a window lasts (pages read + written) x page / this
        pub compaction_mb_s: f64,
        /// reported intervals per measured run (the paper: 200 of 1 s)
        pub intervals: u64,
        /// virtual seconds per interval; 0 = calibrated from the warm-up so that a run holds
        /// background_ops_per_run
        pub interval_s: f64,
        /// flushes + compactions a measured run should hold when interval_s is calibrated (the paper: about
        /// 10)
        pub background_ops_per_run: u64,
        /// T2, the recovery time counted after each flush/compaction window, in intervals
        pub t2_intervals: f64,
        /// operations of the warm-up phase (training data of the Leaper model, calibration of interval_s)
        pub warmup_ops: u64,
        /// a latency spike is an interval whose mean latency exceeds this x the median interval mean of the
        /// workload's runs
        pub spike_factor: f64,
        /// where the store's pages live: mem (counted, in memory; tiny and small) or file (an unlinked page
        /// file read through the OS page cache; paper's default); counted figures are the same
        #[serde(default = "mem_device")]
        pub device: DeviceKind,
        /// directory of device=file (default: the system temp dir)
        #[serde(default)]
        pub file_dir: PathBuf,
        /// how reads and updates draw their ids: sysbench-zipfian (default: SysBench's --rand-type=zipfian
        /// with Table 2's zipf as exponent, hot ids lowest), ycsb-zipfian (YCSB's approximate zipfian,
        /// unscrambled), scrambled-zipfian (the same law, ranks hashed over the key space: no key locality),
        /// special (sysbench 1.0's default: 1% of ids in the middle take 75% of draws), uniform, gaussian,
        /// pareto
        #[serde(default)]
        pub key_dist: KeyDist,
        /// closed-loop clients: 1 = the single-client clock (default; the paper gives no client count), N > 1
        /// = N clients queueing for cpu_cores CPU servers and io_channels device channels
        #[serde(default = "one")]
        pub clients: usize,
        /// CPU servers of the queueing clock (clients > 1; the paper's testbed: 2 x 24 cores)
        #[serde(default = "default_cpu_cores")]
        pub cpu_cores: usize,
        /// device reads in flight at once on the queueing clock (clients > 1; an assumption for the paper's
        /// RAID of two SSDs)
        #[serde(default = "default_io_channels")]
        pub io_channels: usize,
        /// when a compaction's work happens: timed (default: over its T1 on the virtual clock, as X-Engine's
        /// background compactions; its inputs answer reads until its outputs are installed at the end, and
        /// the warm-up policy acts on each output block as the compaction writes it) or instant (at once,
        /// inside the write that triggers it)
        #[serde(default)]
        pub compactions: CompactionTiming,
    }
}

impl CompactionTiming {
    /// The name `--set compactions=` takes.
    pub fn name(self) -> &'static str {
        match self {
            CompactionTiming::Timed => "timed",
            CompactionTiming::Instant => "instant",
        }
    }

    /// What the setting does, for the results' notes.
    pub fn describe(self) -> &'static str {
        match self {
            CompactionTiming::Timed => {
                "a compaction that rewrites runs lasts its T1 on the virtual clock, as X-Engine's background \
                 compactions do: its inputs answer reads until its outputs are installed at the end (then the \
                 inputs and their cached blocks are freed), Leaper's phase 1 runs as it begins, and the warm-up \
                 policy is told of output block k of n at start + T1 x k / n (Incremental Warmup evicts the cached \
                 input blocks a new block replaces then, so reads of those keys miss until the end). A flush and a \
                 trivial move run at once inside the triggering write; a compaction still in progress when the \
                 next flush comes is finished first (one background worker)."
            }
            CompactionTiming::Instant => {
                "the engine runs a flush or compaction at once, inside the write that triggers it (so its \
                 invalidations and a policy's admissions happen at the start of its window)."
            }
        }
    }
}

/// When a compaction's work happens on the virtual clock ([`KvSetup::compactions`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompactionTiming {
    /// Over its T1, as X-Engine runs compactions on background threads (Leaper §2.2, §6): the
    /// store's `background_bytes_per_s` is the compaction bandwidth, so the store's merge lasts
    /// the window the clock draws.
    #[default]
    Timed,
    /// At once, inside the triggering write: invalidations and admissions all at the window's
    /// start, the outputs read at once.
    Instant,
}

fn one() -> usize {
    1
}

fn mem_device() -> DeviceKind {
    DeviceKind::Mem
}

/// The paper's testbed: two 24-core Intel Xeon Platinum 8163 (96 hardware threads).
pub const PAPER_CPU_CORES: usize = 48;

/// Random 4 KiB reads in flight on the paper's RAID of two Intel SSDs: an assumption, about 8 per
/// SATA SSD (a SATA data-center SSD's ~75-90k rated random-read IOPS at ~108 us each).
pub const DEFAULT_IO_CHANNELS: usize = 16;

fn default_cpu_cores() -> usize {
    PAPER_CPU_CORES
}

fn default_io_channels() -> usize {
    DEFAULT_IO_CHANNELS
}

impl KvSetup {
    /// The defaults at `scale`: `paper` uses the paper's sizes; smaller scales shrink the data and
    /// keep every ratio.
    pub fn defaults(scale: Scale) -> KvSetup {
        let device = match scale {
            Scale::Paper => DeviceKind::File,
            Scale::Tiny | Scale::Small => DeviceKind::Mem,
        };
        let (records, warmup_ops) = match scale {
            // a smoke test of every step; its size keeps `make test`'s three Leaper runs within ~5 CPU-s
            Scale::Tiny => (5_000, 10_000),
            Scale::Small => (200_000, 400_000),
            Scale::Paper => (PAPER_DATA_BYTES / 200, 100_000_000),
        };
        KvSetup {
            records,
            value_bytes: 200,
            page_size: 4096,
            cache_ratio: PAPER_CACHE_RATIO,
            memtable_ratio: PAPER_MEMTABLE_RATIO,
            l0_trigger: 4,
            base_level_memtables: 4.0,
            size_ratio: 10,
            target_run_memtables: 1.0,
            max_levels: 0,
            bloom_fp: 0.01,
            profile: DeviceProfile::SataSsd,
            cpu_op_us: 2.0,
            hit_us: 0.5,
            collector_us: 0.5,
            compaction_mb_s: 100.0,
            intervals: PAPER_INTERVALS,
            interval_s: 0.0,
            background_ops_per_run: PAPER_BACKGROUND_OPS,
            t2_intervals: 5.0,
            warmup_ops,
            spike_factor: 2.0,
            device,
            file_dir: PathBuf::new(),
            key_dist: KeyDist::default(),
            clients: 1,
            cpu_cores: PAPER_CPU_CORES,
            io_channels: DEFAULT_IO_CHANNELS,
            compactions: CompactionTiming::Timed,
        }
    }

    /// Range checks; errors name the key.
    pub fn validate(&self) -> anyhow::Result<()> {
        check(
            "records",
            self.records,
            self.records >= 100,
            "at least 100 records",
        )?;
        check(
            "value_bytes",
            self.value_bytes,
            (1..=self.page_size / 4).contains(&self.value_bytes),
            "1 to a quarter of page_size bytes",
        )?;
        check(
            "page_size",
            self.page_size,
            (512..=65536).contains(&self.page_size),
            "a page size between 512 and 65536 bytes",
        )?;
        check(
            "cache_ratio",
            self.cache_ratio,
            self.cache_ratio > 0.0 && self.cache_ratio <= 10.0,
            "a positive fraction of the data, at most 10 (a cache larger than the data is allowed)",
        )?;
        check(
            "memtable_ratio",
            self.memtable_ratio,
            self.memtable_ratio > 0.0 && self.memtable_ratio <= 1.0,
            "a fraction in (0, 1]",
        )?;
        check("l0_trigger", self.l0_trigger, self.l0_trigger >= 1, "at least 1")?;
        check(
            "base_level_memtables",
            self.base_level_memtables,
            self.base_level_memtables > 0.0,
            "a positive number",
        )?;
        check("size_ratio", self.size_ratio, self.size_ratio >= 2, "at least 2")?;
        check(
            "target_run_memtables",
            self.target_run_memtables,
            self.target_run_memtables > 0.0,
            "a positive number",
        )?;
        check(
            "max_levels",
            self.max_levels,
            self.max_levels != 1,
            "0 (automatic) or at least 2",
        )?;
        check(
            "bloom_fp",
            self.bloom_fp,
            self.bloom_fp > 0.0 && self.bloom_fp < 1.0,
            "a rate strictly between 0 and 1",
        )?;
        let non_negative = |key: &str, v: f64| check(key, v, v >= 0.0, "a number >= 0");
        non_negative("cpu_op_us", self.cpu_op_us)?;
        non_negative("hit_us", self.hit_us)?;
        non_negative("collector_us", self.collector_us)?;
        non_negative("interval_s", self.interval_s)?;
        non_negative("t2_intervals", self.t2_intervals)?;
        check(
            "compaction_mb_s",
            self.compaction_mb_s,
            self.compaction_mb_s > 0.0,
            "a positive bandwidth",
        )?;
        check(
            "intervals",
            self.intervals,
            self.intervals >= 2,
            "at least 2 intervals",
        )?;
        check(
            "background_ops_per_run",
            self.background_ops_per_run,
            self.background_ops_per_run >= 1,
            "at least 1",
        )?;
        check(
            "warmup_ops",
            self.warmup_ops,
            self.warmup_ops >= 100,
            "at least 100 operations",
        )?;
        check(
            "spike_factor",
            self.spike_factor,
            self.spike_factor > 1.0,
            "a factor above 1",
        )?;
        check(
            "clients",
            self.clients,
            (1..=1_000_000).contains(&self.clients),
            "1 to 1,000,000 clients",
        )?;
        check("cpu_cores", self.cpu_cores, self.cpu_cores >= 1, "at least 1")?;
        check(
            "io_channels",
            self.io_channels,
            self.io_channels >= 1,
            "at least 1",
        )
    }

    /// The queueing clock of `clients > 1` starting at `now_s` (`None` for the single client).
    pub fn queue(&self, now_s: f64) -> Option<clock::Queue> {
        (self.clients > 1).then(|| clock::Queue::new(self.clients, self.cpu_cores, self.io_channels, now_s))
    }

    /// The note on the clock's clients.
    pub fn clients_note(&self) -> String {
        if self.clients <= 1 {
            return "Clients: one closed-loop client (clients = 1, the default: the single-client clock the code \
                    defines; the paper does not state its client count)."
                .to_string();
        }
        format!(
            "Clients: {} closed-loop clients on the queueing clock: operations of the one stream go, in order, to \
             the first free client; each takes its CPU part (cpu_op_us + hits x hit_us [+ collector_us]) on the \
             first free of cpu_cores = {} CPU servers, then its device reads one after another, each on the first \
             free of io_channels = {} channels (FIFO in start order, reserved when the operation starts); latency = \
             start to last read's end, waits included. cpu_cores follows the paper's testbed (2 x 24 cores); \
             io_channels is an assumption (about 8 random reads in flight per SATA SSD of the paper's RAID of two).",
            self.clients, self.cpu_cores, self.io_channels
        )
    }

    /// The directory `device = file` puts its (at once unlinked) page file in.
    pub fn file_dir(&self) -> PathBuf {
        crate::config::dir_or_temp(&self.file_dir)
    }

    /// The note on the store's device.
    pub fn device_note(&self) -> String {
        match self.device {
            DeviceKind::Mem => "Device: mem (every page in memory, every read and write counted).".to_string(),
            DeviceKind::File => format!(
                "Device: file: each store's pages in a file in {} that is unlinked as soon as it is open (nothing \
                 is left behind), read and written with buffered I/O, so the operating system's page cache may \
                 answer a read: the clock is virtual (a miss costs the profile's random read whatever the file \
                 did), so the file only keeps the pages out of the process's memory. Counted figures are those of \
                 device = mem.",
                self.file_dir().display()
            ),
        }
    }

    /// The clock's costs.
    pub fn cost_model(&self) -> CostModel {
        CostModel::new(
            self.profile,
            self.page_size,
            self.cpu_op_us,
            self.hit_us,
            self.collector_us,
            self.compaction_mb_s,
        )
    }

    /// The notes every Leaper result carries about the store, the clock and the ratios.
    pub fn notes(&self) -> Vec<String> {
        let m = self.cost_model();
        let layout = self.layout(self.cache_ratio);
        vec![
            format!(
                "Ratios kept from the paper (10 GB of data in 200 B pairs, a 3 GB block cache, 1 GB of memtables, \
                 about 10 flushes and compactions in each 200 s run reported every second): {} records of {} B \
                 values ({} data blocks of {} B), cache / data = {} ({} pages), memtable / data = {}, levels \
                 {} (L1 = {} memtables, x {} per level, runs of {} memtables), {} intervals per run with {} \
                 background operations per run targeted. Every row carries the \
                 measured cache_data_ratio (cache bytes / the store's data bytes after the bulk load), \
                 memtable_data_ratio and the run's background_ops.",
                self.records,
                self.value_bytes,
                layout.data_blocks,
                self.page_size,
                self.cache_ratio,
                layout.cache_pages,
                self.memtable_ratio,
                layout.leveled.max_levels,
                self.base_level_memtables,
                self.size_ratio,
                self.target_run_memtables,
                self.intervals,
                self.background_ops_per_run,
            ),
            format!(
                "Virtual clock (clients = 1; see the clients note for N > 1): one closed-loop client; an operation costs cpu_op_us {} + hits x hit_us {} + misses x \
                 {:.1} us (a random {} B page read on the {} profile: {}) [+ collector_us {} for leaper]. The \
                 profile is sata-ssd by default because the paper's testbed stores data on a RAID of two Intel SSDs \
                 (hardware RAID of the period pairs SATA/SAS drives; striping adds bandwidth, not lower latency, so \
                 one device's random-read cost applies). cpu_op_us and hit_us are assumptions of the order of an \
                 in-memory RocksDB-style lookup (memtable probe, Bloom filters, index search; a cache lookup and a \
                 search inside a 4 KiB block); collector_us takes the upper bound of the paper's Table 5 (< 1 us per \
                 query). Wall time is recorded beside the virtual figures (wall_s).",
                self.cpu_op_us,
                self.hit_us,
                m.read_us,
                self.page_size,
                self.profile,
                self.profile.describe(),
                self.collector_us,
            ),
            format!(
                "Background windows (compactions = {}): {} On the clock a flush or compaction's window lasts T1 = (pages read + written) x {} B / {} MB/s (compaction_mb_s: background I/O \
                 throttled as RocksDB's rate limiter and X-Engine do; an assumption) and is followed by T2 = {} \
                 intervals of recovery. The paper's Table 4 measures inside the T1 + T2 windows of compactions; \
                 its overhead figure outside every flush and compaction window. Background operations take no time \
                 from the foreground client (they run on other threads in the paper's X-Engine) and do not contend \
                 with its reads. Trivial moves (a run moved down a level without rewriting) invalidate nothing and \
                 are counted apart (moves), not as background operations.",
                self.compactions.name(),
                self.compactions.describe(),
                self.page_size,
                self.compaction_mb_s,
                self.t2_intervals,
            ),
            format!(
                "Latency spike (the paper gives no number): an interval whose mean latency exceeds spike_factor = {} \
                 x the median interval mean of all the workload's runs (every policy's intervals pooled, so that one \
                 threshold judges every policy). The mean, not the p95: with one client an interval's p95 is one \
                 hit's or one miss's latency, a binary quantity, where the mean (the interval's length over its \
                 operations) moves with every miss.",
                self.spike_factor
            ),
            self.keys_note(),
            self.device_note(),
            self.clients_note(),
        ]
    }

    /// The note on how the workloads draw their ids.
    pub fn keys_note(&self) -> String {
        let what = match self.key_dist {
            KeyDist::SysbenchZipfian => {
                "SysBench's --rand-type=zipfian with each workload's Table 2 zipf factor as --rand-zipfian-exp                  (rejection inversion, the exact zipf law): the hottest ids are the lowest and contiguous, where                  SysBench puts them. The paper generates its synthetic workload with SysBench; for e-commerce and                  messaging it publishes only a zipf factor (\"approximately follow power-law distributions\") and                  e-commerce's daily periodicity, so they are drawn the same way, e-commerce's hot set moving with the                  time of day"
            }
            KeyDist::YcsbZipfian => {
                "YCSB's ZipfianGenerator (Gray's approximation) over unscrambled ranks: the hottest ids are the lowest"
            }
            KeyDist::ScrambledZipfian => {
                "the zipf law of SysBench's zipfian with each rank hashed over the key space (FNV-1a, as YCSB's                  ScrambledZipfianGenerator): the same popularity, no key locality"
            }
            KeyDist::Special => {
                "SysBench's special distribution with its defaults (sysbench 1.0's default --rand-type): 75% of the                  draws on 0.75% of the ids, in the middle of the table, the rest a gaussian centred there"
            }
            KeyDist::Uniform => "SysBench's uniform distribution",
            KeyDist::Gaussian => "SysBench's gaussian distribution (12 uniforms summed), centred on the table",
            KeyDist::Pareto => "SysBench's pareto distribution (h = 0.2): the lowest 20% of the ids take 80% of the draws",
        };
        format!(
            "Keys: key_dist = {}: {what}. Reads, scans and updates draw over the initial ids, as SysBench draws over              1..table_size; inserts append new ids (an auto-increment key). The key distribution decides how many              hot keys share a data block and a key range, which is what LRU's hit ratio and Leaper's key-range              predictions depend on: leaper-online's variants run the others beside.",
            self.key_dist
        )
    }
}

/// The memory a Leaper run needs besides its records and operations (the binary, a cell's fixed
/// structures): an upper bound rounded up from the peak RSS of tiny runs (`/usr/bin/time -v lsmlab
/// run leaper-online --scale tiny`, with its variants), the test-profile binary's among them (CI's
/// memory test samples that one). The measurement is in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
pub const RUN_BASE_BYTES: u64 = 80 << 20;

/// Peak memory per loaded record and per warm-up operation of each Leaper experiment, from the
/// peak RSS of its tiny (5,000 records, 10,000 warm-up operations) and small (200,000 and 400,000)
/// runs at their defaults, the slope split evenly between the two (the default warm-up is two
/// operations per record): the stores' device pages and cache (two cells at a time on the
/// worker threads, each with its own store), the warm-up's access log and the models' training
/// rows grow with them. Each is an upper bound rounded up from the slope (re-measure with
/// `/usr/bin/time -v lsmlab run EXPERIMENT --scale tiny`, then `--scale small`); leaper-online's
/// were raised to cover its variants. The measurements are in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
pub const ONLINE_BYTES_PER_RECORD: u64 = 1_700;
pub(crate) const ONLINE_BYTES_PER_WARMUP_OP: u64 = 850;
pub(crate) const SENSITIVITY_BYTES_PER_RECORD: u64 = 1_300;
pub(crate) const SENSITIVITY_BYTES_PER_WARMUP_OP: u64 = 650;
pub(crate) const MODEL_BYTES_PER_RECORD: u64 = 500;
pub(crate) const MODEL_BYTES_PER_WARMUP_OP: u64 = 250;

/// Peak memory of one store on the file device per loaded record: its block cache (0.3 of the
/// data), memtables (0.1), fence keys and Bloom filters: an upper bound rounded up from the peak
/// RSS of a 5-million-record synthetic run on the file device (paper scale with `records`
/// lowered to 5,000,000), measured in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
pub const FILE_STORE_BYTES_PER_RECORD: u64 = 170;
/// The warm-up's access log per operation, Algorithm 1's per-slot intervals built from it and the
/// collector's counts: an upper bound of their exact sizes. The log holds 16 B per point access
/// and 24 B per scan (`lsmlab_engine::leaper::AccessLog`, in chunks: no doubling) and is freed
/// before the models' rows are built; the matrix at most one merged 16 B interval per access.
/// Measured: 60 B per logged operation between 4,000,000 and 20,000,000 logged operations over
/// 28,207 and 38,449 key ranges (`docs/scale.md#memory-estimates-where-the-constants-come-from`).
pub const LOG_BYTES_PER_WARMUP_OP: u64 = 96;
/// Algorithm 2's buffer, whatever the warm-up's length: one pass's range transfers, at most
/// twice [`lsmlab_engine::leaper::TRANSFERS_PER_PASS`] triples of 24 B (the transfers are read
/// from the log in passes instead of being held whole, which cost about 200 B per logged
/// operation).
pub const TRANSFER_PASS_BYTES: u64 = 2 * 24 * lsmlab_engine::leaper::TRANSFERS_PER_PASS;
/// The warm-up's access log alone per operation, at most (24 B per scan, 16 B per point access):
/// what a run holds beside its store before training when the store is freed first.
pub const RAW_LOG_BYTES_PER_WARMUP_OP: u64 = 24;

/// Whether a Leaper experiment trains beside its store (which it keeps for measured runs) or
/// after freeing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Training {
    /// The store stays open through training (leaper-online, leaper-sensitivity).
    BesideStore,
    /// The store is dropped after the warm-up, before training (leaper-model).
    AfterStore,
}

/// One training row of the models (18 features, its slot and range, the per-step copy and the
/// GBDT's matrix): an upper bound rounded up from the peak RSS per row of the same
/// 5-million-record run's training, less the store beside it (measured in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`).
pub const TRAINING_BYTES_PER_ROW: u64 = 850;

/// The peak-memory estimate of a Leaper run over `setup`'s records and warm-up. On the mem
/// device (tiny and small) it is linear in both, with the coefficients measured for each
/// experiment ([`ONLINE_BYTES_PER_RECORD`] and its siblings). On the file device (paper) the
/// store's pages live in the file, so it is the largest of the moments of the two workers: two
/// measured runs side by side, and a training pass (the warm-up's log, Algorithm 2's buffer and
/// the model's training rows, at most `max_training_rows`) beside a store, or, when `training`
/// is [`Training::AfterStore`], after it (then the store and the growing log are the other
/// moment).
pub fn memory_estimate(
    setup: &KvSetup,
    per_record: u64,
    per_op: u64,
    max_training_rows: usize,
    training: Training,
    what: &str,
) -> crate::experiment::MemoryEstimate {
    let thousands = crate::progress::thousands;
    if setup.device == DeviceKind::File {
        let store = setup.records.saturating_mul(FILE_STORE_BYTES_PER_RECORD);
        let log = setup
            .warmup_ops
            .saturating_mul(LOG_BYTES_PER_WARMUP_OP)
            .saturating_add(TRANSFER_PASS_BYTES);
        let rows = if max_training_rows == 0 {
            // every range of every slot: at worst one range per loaded key, over at least the
            // slots the model trains on (a lower bound of the worst case; refused far above 24 GiB)
            setup.records.saturating_mul(online::MIN_TRAINING_SLOTS)
        } else {
            max_training_rows as u64
        };
        let side_by_side = store.saturating_mul(2);
        let pass = log.saturating_add(rows.saturating_mul(TRAINING_BYTES_PER_ROW));
        let (peak, moment) = match training {
            Training::BesideStore => (side_by_side.max(store.saturating_add(pass)), "one store beside"),
            Training::AfterStore => {
                let warming = store.saturating_add(setup.warmup_ops.saturating_mul(RAW_LOG_BYTES_PER_WARMUP_OP));
                (side_by_side.max(warming).max(pass), "a store with its raw log, then")
            }
        };
        return crate::experiment::MemoryEstimate {
            bytes: peak.saturating_add(RUN_BASE_BYTES),
            basis: format!(
                "file device: the largest of two stores ({} records x {FILE_STORE_BYTES_PER_RECORD} B each) and {moment} a training pass ({} warm-up operations x {LOG_BYTES_PER_WARMUP_OP} B of log and counts + {} MiB of Algorithm 2's transfers + {} training rows x {TRAINING_BYTES_PER_ROW} B) ({what}: store and rows measured per record and per row on a 5,000,000-record run, the log and counts bounded from their record sizes above the 60 B per operation measured on 2,000,000-record runs) + {} MiB",
                thousands(setup.records),
                thousands(setup.warmup_ops),
                TRANSFER_PASS_BYTES >> 20,
                thousands(rows),
                RUN_BASE_BYTES >> 20
            ),
        };
    }
    let bytes = setup
        .records
        .saturating_mul(per_record)
        .saturating_add(setup.warmup_ops.saturating_mul(per_op))
        .saturating_add(RUN_BASE_BYTES);
    crate::experiment::MemoryEstimate {
        bytes,
        basis: format!(
            "{} records x {per_record} B + {} warm-up operations x {per_op} B ({what}: measured per record and per warm-up operation at tiny and small) + {} MiB",
            thousands(setup.records),
            thousands(setup.warmup_ops),
            RUN_BASE_BYTES >> 20
        ),
    }
}

/// The ratio fields every Leaper row carries: `cache_data_ratio` and `memtable_data_ratio` (as
/// measured on the store after its bulk load), `background_ops` (flushes + non-trivial
/// compactions of the measured run), `compaction_cache_ratio` (input data blocks per compaction /
/// cache pages) and `cached_inputs_per_compaction` (input blocks cached when a compaction began:
/// the cached blocks each compaction retires before any policy acts).
pub(crate) fn ratio_fields(row: RowBuilder, ratios: &Ratios) -> RowBuilder {
    row.num("cache_data_ratio", ratios.cache_data)
        .num("memtable_data_ratio", ratios.memtable_data)
        .int("background_ops", ratios.background_ops)
        .num("compaction_cache_ratio", ratios.compaction_cache)
        .num(
            "cached_inputs_per_compaction",
            ratios.cached_inputs_per_compaction,
        )
}

/// The ratios of one run, as measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Ratios {
    pub cache_data: f64,
    pub memtable_data: f64,
    pub background_ops: u64,
    /// Input data blocks per compaction / cache pages (0 without a compaction).
    pub compaction_cache: f64,
    /// Input blocks the cache held when a compaction began, per compaction.
    pub cached_inputs_per_compaction: f64,
}

/// Checks a list of workloads is not empty.
pub(crate) fn check_workloads(workloads: &[Workload]) -> anyhow::Result<()> {
    check(
        "workloads",
        "(empty)",
        !workloads.is_empty(),
        "at least one of synthetic, e-commerce, messaging",
    )
}

/// Checks that `key`'s items are fractions in [0, 1].
pub fn check_fractions(key: &str, items: &[f64]) -> anyhow::Result<()> {
    check_items(key, items, |v| (0.0..=1.0).contains(v), "fractions in [0, 1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_keep_the_papers_ratios_at_every_scale() {
        for scale in Scale::ALL {
            let s = KvSetup::defaults(scale);
            s.validate().unwrap();
            let l = s.layout(s.cache_ratio);
            let cache = l.cache_pages as f64 / l.data_blocks as f64;
            assert!((cache - 0.3).abs() < 0.01, "{scale}: {cache}");
            let mem = l.memtable_bytes as f64 / l.data_bytes(s.page_size) as f64;
            assert!((mem - 0.1).abs() < 1e-3, "{scale}: {mem}");
            assert_eq!((s.intervals, s.background_ops_per_run), (200, 10));
            assert_eq!(l.leveled.max_levels, 3, "{scale}");
        }
        assert_eq!(KvSetup::defaults(Scale::Paper).records, 50_000_000);
        assert_eq!(<KvSetup as crate::config::ConfigPart>::help().len(), 29);
        assert_eq!(KvSetup::defaults(Scale::Small).clients, 1);
        // X-Engine's compactions run in the background over their duration.
        assert_eq!(KvSetup::defaults(Scale::Small).compactions, CompactionTiming::Timed);
    }

    #[test]
    fn memory_estimates_grow_with_the_records_and_the_warm_up() {
        let rows = learned::MAX_TRAINING_ROWS;
        let at = |scale| memory_estimate(&KvSetup::defaults(scale), 1_300, 650, rows, Training::BesideStore, "x").bytes;
        let (tiny, small, paper) = (at(Scale::Tiny), at(Scale::Small), at(Scale::Paper));
        assert_eq!(tiny, 5_000 * 1_300 + 10_000 * 650 + RUN_BASE_BYTES);
        assert_eq!(small, 200_000 * 1_300 + 400_000 * 650 + RUN_BASE_BYTES);
        assert!(tiny < small && small < paper);
        // paper: a store of 50 million records (8.5 GB) beside a training pass (100 million
        // operations of log and counts, 9.6 GB; Algorithm 2's buffer, 384 MiB; 4 million rows,
        // 3.4 GB): 20.5 GiB, within a 24 GiB machine
        assert_eq!(
            paper,
            50_000_000 * 170 + 100_000_000 * 96 + (384 << 20) + 4_000_000 * 850 + RUN_BASE_BYTES
        );
        assert!(paper > 20 << 30 && paper < 21 << 30, "{paper}");
        // freed before training (leaper-model's two days of 100 million operations), the store
        // is not counted beside the training pass
        let two_days = KvSetup {
            warmup_ops: 200_000_000,
            ..KvSetup::defaults(Scale::Paper)
        };
        let after = memory_estimate(&two_days, 0, 0, rows, Training::AfterStore, "x");
        assert_eq!(
            after.bytes,
            200_000_000 * 96 + (384 << 20) + 4_000_000 * 850 + RUN_BASE_BYTES
        );
        assert!(after.basis.contains("a store with its raw log, then"), "{}", after.basis);
        // without the rows' bound every logged operation may be a row
        let unbounded = memory_estimate(&KvSetup::defaults(Scale::Paper), 0, 0, 0, Training::BesideStore, "x");
        assert!(unbounded.bytes > 64 << 30, "{}", unbounded.bytes);
        assert!(unbounded.basis.contains("file device"), "{}", unbounded.basis);
        let e = memory_estimate(
            &KvSetup::defaults(Scale::Small),
            1_300,
            650,
            rows,
            Training::BesideStore,
            "leaper-online",
        );
        assert!(
            e.basis.contains("200,000 records") && e.basis.contains("400,000 warm-up"),
            "{}",
            e.basis
        );
    }

    #[test]
    fn workloads_spell_their_names() {
        for w in Workload::ALL {
            let json = serde_json::to_string(&w).unwrap();
            assert_eq!(json, format!("\"{w}\""));
        }
    }
}
