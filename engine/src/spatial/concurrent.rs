//! Concurrent ingestion into an LSM RUM-tree (Section 5 of the paper): several threads insert and
//! update objects at once. The memory R-tree, flushes and merges stay behind one lock (the engine's
//! R-tree is not latch-coupled); the Update Memo is updated *outside* that lock, with CILS and
//! put-if-absent, so concurrent updates of the UM are real and exercise Algorithms 5-7.

use super::index::LsmRTree;
use super::maintenance::MemoryWrite;
use super::um::UpdateMemo;
use crate::geom::Point;
use crate::rtree::SpatialEntry;
use crate::{Error, Result};
use parking_lot::{Mutex, MutexGuard};
use std::sync::Arc;

/// An Update Memo LSM R-tree shared by ingesting threads. Timestamps are given by the caller (the
/// position of the operation in the original stream), so a concurrent run and a single-threaded
/// replay of the same stream stamp every entry identically.
pub struct ConcurrentRumTree {
    tree: Mutex<LsmRTree>,
    um: Arc<UpdateMemo>,
}

impl ConcurrentRumTree {
    /// Wraps an index whose strategy uses the Update Memo.
    pub fn new(index: LsmRTree) -> Result<Self> {
        let um = index.shared_update_memo().ok_or_else(|| {
            Error::Config(format!(
                "concurrent ingestion needs an Update Memo strategy, not {}",
                index.strategy()
            ))
        })?;
        Ok(ConcurrentRumTree {
            tree: Mutex::new(index),
            um,
        })
    }

    fn lock(&self) -> MutexGuard<'_, LsmRTree> {
        self.tree.lock()
    }

    /// The first record of an object, stamped `ts`.
    pub fn insert(&self, oid: u64, ts: u64, at: Point) -> Result<()> {
        let (leaf, split) = self.lock().insert_external(SpatialEntry::new(at, oid, ts));
        self.um.record_insert(oid, ts);
        self.lock()
            .finish_external_insert(leaf, MemoryWrite { update: false, split })
    }

    /// A later record of an object, stamped `ts`: insert the entry, then Algorithm 6 on the UM.
    pub fn update(&self, oid: u64, ts: u64, to: Point) -> Result<()> {
        let (leaf, split) = self.lock().insert_external(SpatialEntry::new(to, oid, ts));
        self.um.record_obsolete(oid, ts);
        self.lock()
            .finish_external_insert(leaf, MemoryWrite { update: true, split })
    }

    /// The shared Update Memo (updated outside the index's lock).
    pub fn update_memo(&self) -> &UpdateMemo {
        &self.um
    }

    /// The index back, once every thread is done.
    pub fn into_inner(self) -> LsmRTree {
        self.tree.into_inner()
    }
}
