//! The time-series store of the DIOL experiments (`docs/papers/diol.md#the-project-in-brief`):
//! points, memtables, the IoTDB-like and delay-memtable memory levels, TsFile-like runs and their
//! disk compaction.
//!
//! A point is `(series, timestamp, value)`. Points enter a memory level made of memtables; full
//! memtables are flushed to TsFile-like sorted runs of fixed-size pages on a shared
//! [`Device`](crate::storage::Device), each page carrying its time range so that reads fetch only
//! the pages that can hold what they look for (every page read and written is counted by the
//! device). Point and time-range reads merge memory and disk; on equal timestamps the newest
//! version wins (every insert carries a sequence number).
//!
//! Three memory levels sit behind one switch, [`Layout`]:
//! - [`Layout::Iotdb`] — the baseline as the DIOL authors' `IoTDB-lsm` code runs it
//!   (`src/core/DBManager.cpp`): one active normal and one active delay memtable of the same size,
//!   a point is *delayed* iff its time is before the first time of the active normal memtable,
//!   and sealed memtables of both kinds wait in one FIFO list that flushes its oldest member when
//!   it holds `immutable_limit` (4) memtables (paper: 6 x 64 MB in all).
//! - [`Layout::IotdbReal`] — real Apache IoTDB's rule: a point is *sequence* data iff its time is
//!   after its series' last flushed time (the largest time of the series' sealed sequence
//!   memtables), else *unsequence*; sequence and unsequence memtables and files are kept apart,
//!   with the same memory structure and budget as `Iotdb`.
//! - [`Layout::Diol`] — the DIOL code (`DBDBDeeep/DIOL`, `src/diol/`): an active normal (M0) and
//!   an active delay memtable; sealed memtables go to M1; when M1 holds its limit of normal
//!   memtables, one of them (the one whose TTL is exactly 0, else the one with the fewest
//!   estimated delays) absorbs the points of the M1 delay memtable that overlaps its time range
//!   most (`CompactProcessor.cpp`) and both move to M2; when M1 holds its limit of delay
//!   memtables the oldest moves to M2; M2 flushes (normal memtables to normal files, delay ones to
//!   delay files) whatever has outlived its TTL, else the memtable read least
//!   (`FlushController.cpp`). Paper: 11 x 32 MB normal (1 + 5 + 5) and 16 x 2 MB delay (1 + 8 + 7).
//!
//! The optional disk compaction ([`CompactionParams`]) is what DIOL left as future work: once
//! `delay_files_trigger` delay (unsequence) files exist they are merged into the normal
//! (sequence) files whose time ranges they fall into, and the pages and points rewritten are
//! counted, so the I/O each layout saves or costs is measured.
//!
//! Deviations from the authors' C++, each of which leaves the paper workloads' counts unchanged
//! or is stated in the experiments' notes: flushes and compactions run synchronously (the C++
//! starts a thread per flush); reads also search the two active memtables (the C++ skips them);
//! range reads search every memtable (the C++ compares memtable *ids* with timestamps in its
//! level filters, so it skips memory for nearly every range); a re-inserted timestamp replaces
//! the older version still in memory (the C++ keeps the first; the paper's streams never repeat a
//! timestamp); every time-to-live-expired M2 memtable is flushed (the C++ erases while iterating).

//! # Why the runs are not on the LSM executor
//!
//! The key-value store and the LSM R-tree keep their runs in [`crate::lsm::RunStore`], whose
//! compaction strategies choose among runs by their key ranges and merge whole inputs into one
//! output level. The series store keeps its files apart on purpose: a file's points are in
//! (series, time) order but the files are cut by *time* (a memtable's time range, across every
//! series), so a file's key range spans nearly every series and says nothing about the time
//! range that decides which files a compaction touches; the memory level decides what to flush
//! and when (time-to-live, M1/M2 limits), not a compaction strategy; and the one disk compaction,
//! merging each delay file into the normal files whose time ranges its points fall into and
//! rewriting only those, keeps the normal files' boundaries rather than re-cutting the output by
//! size. Putting these files on `RunStore` would need time-range metadata and a merge that
//! preserves existing boundaries in the executor, for one caller.

mod disk;
mod level;
mod memtable;
mod store;

pub use store::SeriesStore;

use serde::{Deserialize, Serialize};

/// Which series a point belongs to.
pub type SeriesId = u32;
/// A point's time.
pub type Timestamp = u64;
/// A point's value.
pub type Value = i64;
/// A point's identity: series first, then time (the order of runs and pages).
pub type Key = (SeriesId, Timestamp);
/// Insert order; the largest sequence number of a key is its newest version.
pub type Seq = u64;

/// Bytes one point costs in the authors' memtables: an `unordered_map<uint64_t, int>` entry is
/// counted as `sizeof(uint64_t) + sizeof(int)` by their `IMemtable::getSize`.
pub const AUTHORS_POINT_BYTES: u64 = 12;
/// Points of the authors' runs (100M), against which the memory budget is scaled.
pub const PAPER_POINTS: u64 = 100_000_000;
/// The authors' memory budget: 6 x 64 MiB = 11 x 32 MiB + 16 x 2 MiB = 384 MiB.
pub const PAPER_BUDGET_BYTES: u64 = 384 << 20;

/// The memory level behind the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Layout {
    /// The authors' IoTDB-like baseline (`DBDBDeeep/IoTDB-lsm`).
    Iotdb,
    /// Real IoTDB's sequence/unsequence separation by last flushed time.
    IotdbReal,
    /// DIOL's M0/M1/M2 normal and delay memtables.
    Diol,
}

impl Layout {
    /// Every layout.
    pub const ALL: [Layout; 3] = [Layout::Iotdb, Layout::IotdbReal, Layout::Diol];

    /// The name used on the command line and in result rows.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Iotdb => "iotdb",
            Layout::IotdbReal => "iotdb-real",
            Layout::Diol => "diol",
        }
    }

    /// The layout called `name`.
    pub fn parse(name: &str) -> Option<Layout> {
        Layout::ALL.into_iter().find(|l| l.name() == name)
    }
}

/// The two kinds of memtables and files. For [`Layout::IotdbReal`] `Normal` is IoTDB's
/// sequence space and `Delay` its unsequence space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RunKind {
    /// In-order points (IoTDB-real: the sequence space).
    Normal,
    /// Points that arrived late (IoTDB-real: the unsequence space).
    Delay,
}

/// The IoTDB-like memory level (both `Iotdb` and `IotdbReal`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IotdbParams {
    /// Bytes of every memtable, normal and delay alike (paper: 64 MiB).
    pub memtable_bytes: u64,
    /// Fraction of `memtable_bytes` at which a memtable is full (the authors' `isFull`: 0.8).
    pub fill: f64,
    /// Sealed memtables kept before the oldest is flushed (`memtableNum` = 4; with the two
    /// active memtables, 6 in all).
    pub immutable_limit: usize,
}

/// DIOL's memory level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiolParams {
    /// Bytes of a normal memtable (paper: 32 MiB; the authors' demo build used 3.2 MiB).
    pub normal_bytes: u64,
    /// Fill fraction at which a normal memtable is full (`NormalMemtable::isFull`: 0.8).
    pub normal_fill: f64,
    /// Bytes of a delay memtable (paper: 2 MiB).
    pub delay_bytes: u64,
    /// Fill fraction at which a delay memtable is full (`DelayMemtable::isFull`: 1.0).
    pub delay_fill: f64,
    /// Normal memtables held in M1 (`LIMIT_SIZE_NORMAL_M1` = 5).
    pub normal_m1: usize,
    /// Normal memtables held in M2 (`LIMIT_SIZE_NORMAL_M2` = 5).
    pub normal_m2: usize,
    /// Delay memtables held in M1 (`LIMIT_SIZE_DELAY_M1` = 8).
    pub delay_m1: usize,
    /// Delay memtables held in M2 (paper and the code until its last commit: 7; the last commit
    /// sets 8).
    pub delay_m2: usize,
    /// Time to live given on entering M1 (`INIT_TTL / 2` = 3), decremented whenever another
    /// memtable of the same kind enters M1.
    pub m1_ttl: i64,
    /// Time to live given on entering M2 (`INIT_TTL` = 6), decremented whenever another
    /// memtable of the same kind enters M2.
    pub m2_ttl: i64,
    /// Which M1 normal memtable is merged when M1 is full.
    pub m1_pick: M1Pick,
}

/// How DIOL picks the M1 normal memtable to merge with a delay memtable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum M1Pick {
    /// The authors' `CompactionController::checkTimeOut`: the memtable whose TTL is *exactly* 0,
    /// else the one with the fewest estimated delays. In steady state the memtable that entered
    /// M1 three seals ago always has TTL 0, so the first two normal memtables (whose TTLs went
    /// below 0 before M1 filled) are never picked and stay in memory for the whole run.
    ExactZeroTtl,
    /// The textbook reading of the same rule: the memtable whose TTL ran out first (lowest TTL,
    /// at most 0), else the one with the fewest estimated delays.
    ExpiredTtl,
}

impl M1Pick {
    /// The name configurations and result rows use.
    pub fn name(self) -> &'static str {
        match self {
            M1Pick::ExactZeroTtl => "exact-zero-ttl",
            M1Pick::ExpiredTtl => "expired-ttl",
        }
    }
}

/// Disk compaction (DIOL's future work), for every layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactionParams {
    /// Delay (unsequence) files that trigger merging them into the normal (sequence) files.
    pub delay_files_trigger: usize,
}

/// Everything a [`SeriesStore`] is built from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesConfig {
    /// Which memory level the store runs.
    pub layout: Layout,
    /// Bytes a point costs in a memtable (the authors' accounting: [`AUTHORS_POINT_BYTES`]).
    pub point_bytes: u64,
    /// Parameters of the IoTDB-like levels (used by `Iotdb` and `IotdbReal`).
    pub iotdb: IotdbParams,
    /// Parameters of DIOL's level (used by `Diol`).
    pub diol: DiolParams,
    /// Disk compaction; `None` keeps every flushed file as the authors' code does.
    pub compaction: Option<CompactionParams>,
}

impl SeriesConfig {
    /// The authors' parameters at their scale (384 MiB for 100M points).
    pub fn paper(layout: Layout) -> SeriesConfig {
        SeriesConfig {
            layout,
            point_bytes: AUTHORS_POINT_BYTES,
            iotdb: IotdbParams {
                memtable_bytes: 64 << 20,
                fill: 0.8,
                immutable_limit: 4,
            },
            diol: DiolParams {
                normal_bytes: 32 << 20,
                normal_fill: 0.8,
                delay_bytes: 2 << 20,
                delay_fill: 1.0,
                normal_m1: 5,
                normal_m2: 5,
                delay_m1: 8,
                delay_m2: 7,
                m1_ttl: 3,
                m2_ttl: 6,
                m1_pick: M1Pick::ExactZeroTtl,
            },
            compaction: None,
        }
    }

    /// The paper's parameters with every memtable's bytes multiplied by `points / 100M`, so the
    /// memory budget stays the same fraction of the data (the ratio that drives flushing).
    pub fn paper_scaled(layout: Layout, points: u64) -> SeriesConfig {
        let mut c = SeriesConfig::paper(layout);
        let s = points as f64 / PAPER_POINTS as f64;
        let scale = |b: u64| ((b as f64 * s).round() as u64).max(1);
        c.iotdb.memtable_bytes = scale(c.iotdb.memtable_bytes);
        c.diol.normal_bytes = scale(c.diol.normal_bytes);
        c.diol.delay_bytes = scale(c.diol.delay_bytes);
        c
    }

    /// Points a memtable of `bytes` at `fill` holds: the authors' `isFull` seals a memtable before
    /// the insert that would bring its size to `fill * bytes` (their fixed object header ignored).
    pub fn capacity(&self, bytes: u64, fill: f64) -> u64 {
        let limit = (bytes as f64 * fill / self.point_bytes as f64).ceil() as u64;
        limit.saturating_sub(1).max(1)
    }

    /// Points the whole memory level holds when every memtable is full.
    pub fn budget_points(&self) -> u64 {
        match self.layout {
            Layout::Iotdb | Layout::IotdbReal => {
                let c = self.capacity(self.iotdb.memtable_bytes, self.iotdb.fill);
                c * (2 + self.iotdb.immutable_limit as u64)
            }
            Layout::Diol => {
                let d = &self.diol;
                let n = self.capacity(d.normal_bytes, d.normal_fill);
                let k = self.capacity(d.delay_bytes, d.delay_fill);
                n * (1 + d.normal_m1 + d.normal_m2) as u64 + k * (1 + d.delay_m1 + d.delay_m2) as u64
            }
        }
    }

    /// Bytes of the whole memory level (memtable sizes times counts).
    pub fn budget_bytes(&self) -> u64 {
        match self.layout {
            Layout::Iotdb | Layout::IotdbReal => {
                self.iotdb.memtable_bytes * (2 + self.iotdb.immutable_limit as u64)
            }
            Layout::Diol => {
                let d = &self.diol;
                d.normal_bytes * (1 + d.normal_m1 + d.normal_m2) as u64
                    + d.delay_bytes * (1 + d.delay_m1 + d.delay_m2) as u64
            }
        }
    }

    /// Checks the parameters; a bad one is a [`crate::Error::Config`] naming it.
    pub fn validate(&self) -> crate::Result<()> {
        let bad = |what: &str| Err(crate::Error::Config(what.to_string()));
        if self.point_bytes == 0 {
            return bad("point_bytes must be at least 1");
        }
        let fills = [self.iotdb.fill, self.diol.normal_fill, self.diol.delay_fill];
        if fills.iter().any(|f| !(*f > 0.0 && *f <= 1.0)) {
            return bad("memtable fill fractions must lie in (0, 1]");
        }
        if self.iotdb.immutable_limit == 0 {
            return bad("immutable_limit must be at least 1");
        }
        let d = &self.diol;
        if d.normal_m1 == 0 || d.normal_m2 == 0 || d.delay_m1 == 0 || d.delay_m2 == 0 {
            return bad("every DIOL M1/M2 memtable count must be at least 1");
        }
        if let Some(c) = &self.compaction {
            if c.delay_files_trigger == 0 {
                return bad("delay_files_trigger must be at least 1");
            }
        }
        Ok(())
    }
}

/// What a store has done, counted. Page reads and writes are the device's
/// ([`SeriesStore::io`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesStats {
    /// Points inserted.
    pub inserts: u64,
    /// Inserts classified as delayed (unsequence for `IotdbReal`).
    pub delayed_inserts: u64,
    /// Inserts that replaced an older version of the same point still in memory.
    pub replaced_in_memory: u64,
    /// Point lookups served.
    pub point_lookups: u64,
    /// Range lookups served.
    pub range_lookups: u64,
    /// Lookups (point or range) that read at least one page from disk.
    pub disk_reads: u64,
    /// Points in the queried key or time range that were read from disk pages (every version).
    pub disk_read_points: u64,
    /// Pages read by lookups.
    pub lookup_page_reads: u64,
    /// Memtables flushed to files.
    pub flushes: u64,
    /// Points written by flushes.
    pub flushed_points: u64,
    /// Pages written by flushes.
    pub flush_pages_written: u64,
    /// DIOL M1 merges of a normal memtable with a delay memtable.
    pub memory_compactions: u64,
    /// Points moved from delay memtables into normal memtables by those merges.
    pub memory_compaction_points: u64,
    /// Disk compactions run.
    pub disk_compactions: u64,
    /// Pages read by disk compactions.
    pub compaction_pages_read: u64,
    /// Pages written by disk compactions.
    pub compaction_pages_written: u64,
    /// Points written by disk compactions.
    pub compaction_points_rewritten: u64,
    /// Largest number of bytes held by memtables at once (points x `point_bytes`).
    pub memory_peak_bytes: u64,
}
