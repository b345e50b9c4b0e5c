//! [`SpatialConfig`]: everything that shapes an [`super::LsmRTree`].

use super::strategy::Strategy;
use crate::geom::Rect;
use crate::lsm::MergePolicyConfig;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// When the memory component is full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlushTrigger {
    /// AsterixDB's, as the authors ran it: the memory component is full once it has allocated its
    /// budget of pages since it was created (`VirtualBufferCache.isFull`: pages pinned new, given
    /// back only when the component is reset after its flush; `VirtualFreePageManager` never
    /// frees a page, and the buddy deleted-key B-tree draws on the same budget). Cleaning that
    /// empties or unlinks a node therefore frees nothing; only the splits it avoids delay a flush.
    /// Two approximations: lsmlab's memory R-tree unlinks a node a delete or a cleaning empties
    /// (AsterixDB's keeps it in place, empty), and a later split that reuses it counts again; and
    /// the component is full when the count exceeds the budget (AsterixDB: reaches it, counting
    /// each tree's metadata page too).
    #[default]
    Allocated,
    /// The pages the memory component uses now: live memory R-tree nodes (a node unlinked by a
    /// delete or a cleaning no longer counts) plus the deleted-key pages.
    Live,
}

/// Which writes advance the Buffered and Vacuum Cleaning counters of the Update Memo strategies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CleaningCounters {
    /// As the authors' code (`LSMRTree.modify` calls `insertClean` / `insertVacuumClean` only for
    /// updates; `VirtualPage.needsClean` is reached only when the entry fits its leaf): only
    /// updates count; an update that splits its leaf does not bump the leaf's counter; Vacuum
    /// Cleaning leaves the cleaned leaf's Buffered counter as it was (`cleanFrame` does not touch
    /// it).
    #[default]
    Updates,
    /// Every entry put into the memory R-tree counts (first inserts too, splitting or not), and any
    /// cleaning of a leaf resets its Buffered counter.
    AllInserts,
}

/// Everything that shapes an [`LsmRTree`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpatialConfig {
    /// The maintenance strategy (Eager, Validation or an Update Memo variant).
    pub strategy: Strategy,
    /// The data extent; the Hilbert curve used to order flushes and merges spans it.
    pub extent: Rect,
    /// Flush when the memory component needs more than this many page-sized nodes (counted as
    /// `flush_trigger` says).
    pub memory_budget_pages: u64,
    /// How the memory component's pages are counted against `memory_budget_pages`.
    pub flush_trigger: FlushTrigger,
    /// When disk components are merged.
    pub merge_policy: MergePolicyConfig,
    /// Buffered Cleaning threshold (paper Section 4.1; the authors' default is 4).
    pub buffered_threshold: u32,
    /// Vacuum Cleaning threshold `th` (paper Section 4.2; the authors' default is 8).
    pub vacuum_threshold: u32,
    /// Which writes advance the Buffered and Vacuum Cleaning counters.
    pub cleaning_counters: CleaningCounters,
    /// Eager only: look the old location up in an LSM primary index (timed) instead of taking it
    /// from the stream, as the paper did when it excluded that lookup.
    pub eager_primary_lookup: bool,
    /// Memory budget, in leaf pages, of the B+-tree key indexes (Validation's primary key index,
    /// Eager's primary index). They are also flushed whenever the R-tree flushes, as AsterixDB flushes
    /// every index of a dataset together.
    pub key_index_budget_pages: u64,
    /// Bloom filter false-positive rate of B+-tree components (AsterixDB default 0.01), or none.
    pub bloom_fp: Option<f64>,
}

impl SpatialConfig {
    /// The authors' settings, scaled: prefix policy with 5 tolerated components.
    pub fn new(strategy: Strategy, extent: Rect, memory_budget_pages: u64) -> Self {
        SpatialConfig {
            strategy,
            extent,
            memory_budget_pages,
            flush_trigger: FlushTrigger::default(),
            merge_policy: MergePolicyConfig::Prefix {
                // the authors' ratio: ~1 GB mergeable components over a 128 MiB memory component
                max_mergeable_pages: memory_budget_pages.saturating_mul(8),
                max_tolerance_components: 5,
            },
            buffered_threshold: 4,
            vacuum_threshold: 8,
            cleaning_counters: CleaningCounters::default(),
            eager_primary_lookup: false,
            key_index_budget_pages: memory_budget_pages,
            bloom_fp: Some(0.01),
        }
    }

    /// Checks that the budgets and cleaning thresholds are at least 1, the extent is finite and not
    /// empty, the Bloom filter rate lies in (0, 1) and a prefix policy tolerates at least 2
    /// components; an [`Error::Config`] says which is not.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Config(m));
        if self.memory_budget_pages == 0 {
            return bad("memory_budget_pages must be at least 1".into());
        }
        if self.key_index_budget_pages == 0 {
            return bad("key_index_budget_pages must be at least 1".into());
        }
        if self.buffered_threshold == 0 || self.vacuum_threshold == 0 {
            return bad("cleaning thresholds must be at least 1".into());
        }
        if self.extent.is_empty() || !self.extent.width().is_finite() || !self.extent.height().is_finite() {
            let e = self.extent;
            return bad(format!(
                "extent x {:?}..{:?}, y {:?}..{:?} is empty or its width or height is not finite",
                e.min.x, e.max.x, e.min.y, e.max.y
            ));
        }
        if let Some(fp) = self.bloom_fp {
            if !(fp > 0.0 && fp < 1.0) {
                return bad(format!("bloom_fp {fp} must lie strictly between 0 and 1"));
            }
        }
        if let MergePolicyConfig::Prefix {
            max_tolerance_components,
            ..
        } = self.merge_policy
        {
            if max_tolerance_components < 2 {
                return bad("the prefix policy needs a tolerance of at least 2 components".into());
            }
        }
        Ok(())
    }
}
