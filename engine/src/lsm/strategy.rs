//! Compaction strategies: a decision, returned as data, about what to do with the runs next.
//!
//! As in fjall's `CompactionStrategy::choose` and mini-lsm's compaction tasks, a strategy only looks
//! at a [`Version`] and answers a [`Choice`]; the executor carries it out. So a strategy can be
//! tested and simulated on run metadata alone, and the same executor serves every strategy.

use super::version::{RunId, RunKey, Version};
use std::fmt::Debug;

/// What to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The layout is as the strategy wants it.
    DoNothing,
    /// Merge `inputs` (k-way, newest wins) into `output_level`, splitting the output into runs of
    /// about `target_run_pages` pages when given (one run otherwise). `bottommost` says that no
    /// older data than the inputs may hold their keys, so deletion markers can be dropped.
    Merge {
        /// The runs to merge.
        inputs: Vec<RunId>,
        /// The level the outputs go to.
        output_level: usize,
        /// Split the output into runs of about this many pages (one run when `None`).
        target_run_pages: Option<u64>,
        /// No older data than the inputs may hold their keys: deletion markers can go.
        bottommost: bool,
    },
    /// Move a run to another level unchanged (RocksDB's trivial move): no page is read or written.
    Move {
        /// The run to move.
        run: RunId,
        /// The level it goes to.
        to_level: usize,
    },
    /// Delete whole runs (a time-to-live or a dropped partition).
    Drop {
        /// The runs to delete.
        runs: Vec<RunId>,
    },
}

/// A compaction decision procedure. `choose` may keep state between calls (a round-robin cursor);
/// it is called again after each choice is carried out, until it answers [`Choice::DoNothing`].
pub trait CompactionStrategy<K: RunKey>: Debug + Send + Sync {
    /// Short name for logs and result files.
    fn name(&self) -> &'static str;
    /// The next thing to do with the runs of `version`.
    fn choose(&mut self, version: &Version<K>) -> Choice;
}

/// Never compacts: runs accumulate in level 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoCompaction;

impl<K: RunKey> CompactionStrategy<K> for NoCompaction {
    fn name(&self) -> &'static str {
        "none"
    }
    fn choose(&mut self, _version: &Version<K>) -> Choice {
        Choice::DoNothing
    }
}
