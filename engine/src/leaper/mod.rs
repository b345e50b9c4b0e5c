//! Leaper, the learned prefetcher (Yang et al., PVLDB 13(11) 2020): a collector of per-key-range
//! access counts, key-range selection (Algorithm 1), features, a gradient-boosted classifier and
//! the prefetcher that plugs into the key-value store as a [`crate::kvstore::WarmUpPolicy`].
//!
//! The pieces, in the paper's order:
//! - `collector` (§5.1): one counter per key range and time slot, lazily created, the first
//!   access of a slot always counted and later ones sampled with probability `P`, scaled back by
//!   Eq. 1. Its output offline is a [`RangeHistory`].
//! - `log`: the warm-up's access log, compact ([`AccessLog`]), which the collector, Algorithm 1
//!   and Algorithm 2 (the order of the accesses) read offline.
//! - `range_size` (§4.1, Algorithm 1): the key-range size, chosen from an access log by
//!   doubling while the expansion stays *efficient* (Definition 1), then a binary search.
//! - `features` (§4.2): the 18 features of a (key range, slot) pair (reads and writes in the
//!   last 6 slots, hour/minute/second of the prediction time, reads of 3 precursor ranges chosen
//!   by Algorithm 2) and the labels.
//! - `model` (§4.3): the [`HotRangeModel`] trait and its GBDT implementation on `forust-ml`.
//! - [`train`] (§6.1, §7.2): the multi-step models, offline metrics beside the paper's
//!   "accessed in the last slot" baseline, feature-group ablation and importance, and the
//!   [`LeaperModel`] saved as a directory.
//! - `overlap` (§5.3, Algorithm 3): hot key ranges against block boundaries by binary search or
//!   sort-merge, whichever is cheaper for the sizes at hand.
//! - `policy` (§3.2, §6.2): [`LeaperPolicy`], one prediction per flush and the two-phase
//!   prefetcher (evict cold inputs during T1, admit hot outputs for T2) per compaction.
//!
//! Time is the store's virtual time in seconds (`on_access(now, ..)`, `BackgroundStart::now`).

mod collector;
pub(crate) mod features;
mod log;
mod model;
mod overlap;
mod policy;
mod range_size;
pub(crate) mod train;

pub use collector::{
    slot_of, Collector, CollectorConfig, CountSource, RangeCounts, RangeHistory, SlotCounts,
};
pub use features::{
    compute_precursors, features_at, time_of_day, FeatureGroup, Precursors, Row as FeatureRow, FEATURES,
    HISTORY_SLOTS, PRECURSORS, TRANSFERS_PER_PASS,
};
pub use log::{AccessLog, Iter as AccessLogIter};
pub use model::{GbdtModel, GbdtParams, HotRangeModel};
pub use overlap::{overlapping_blocks, overlapping_blocks_binary, overlapping_blocks_merge, HotSet};
pub use policy::{LeaperParams, LeaperPolicy, LeaperStats, Published, StatsHandle};
pub use range_size::{
    select_range_size, select_range_size_in, select_range_size_of, KeySpace, RangeSizeChoice, RangeSizeParams,
};
pub use train::{
    ablation, held_out_from, train, AblationRow, GroupImportance, LeaperModel, Metrics, ModelMeta,
    StepReport, TrainParams, TrainReport, TrainingPrecursors,
};

use crate::kvstore::Access;
use std::path::PathBuf;

/// One foreground access of a warm-up log: keys `lo..=hi` at virtual time `time` (seconds).
/// A point operation has `lo == hi`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AccessRecord {
    /// Virtual time of the access, in seconds.
    pub time: f64,
    /// The first key accessed.
    pub lo: u64,
    /// The last key accessed.
    pub hi: u64,
    /// Read or write.
    pub access: Access,
}

impl AccessRecord {
    /// A point read of `key` at `time`.
    pub fn read(time: f64, key: u64) -> Self {
        AccessRecord {
            time,
            lo: key,
            hi: key,
            access: Access::Read,
        }
    }

    /// A point write of `key` at `time`.
    pub fn write(time: f64, key: u64) -> Self {
        AccessRecord {
            time,
            lo: key,
            hi: key,
            access: Access::Write,
        }
    }

    /// A scan (a read) of keys `lo..=hi` at `time`.
    pub fn scan(time: f64, lo: u64, hi: u64) -> Self {
        AccessRecord {
            time,
            lo,
            hi,
            access: Access::Read,
        }
    }
}

/// What Leaper's offline and model-file paths fail with.
#[derive(Debug, thiserror::Error)]
pub enum LeaperError {
    /// A parameter or an input is out of range or inconsistent.
    #[error("invalid Leaper input: {0}")]
    Invalid(String),
    /// The training data cannot train a classifier (too few slots, a single class, ...).
    #[error("cannot train: {0}")]
    Training(String),
    /// The gradient-boosting library refused the data or the parameters.
    #[error("GBDT error: {0}")]
    Gbdt(String),
    /// A model file or directory could not be read or written.
    #[error("model file {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A model file exists but does not hold a valid model.
    #[error("corrupt model file {path}: {reason}")]
    CorruptModel {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl From<LeaperError> for crate::Error {
    fn from(e: LeaperError) -> Self {
        match e {
            LeaperError::Io { source, .. } => crate::Error::Io(source),
            other => crate::Error::Config(other.to_string()),
        }
    }
}

/// The result type of Leaper's offline and model-file paths.
pub type LeaperResult<T> = std::result::Result<T, LeaperError>;

/// Key range of `key` for a range size (`range id = key / range_size`).
#[inline]
pub fn range_of(key: u64, range_size: u64) -> u64 {
    key / range_size
}

/// The inclusive keys of range `r`.
#[inline]
pub fn range_keys(r: u64, range_size: u64) -> (u64, u64) {
    let lo = r.saturating_mul(range_size);
    (lo, lo.saturating_add(range_size - 1))
}
