//! [`LsmRTree`]: the memory R-tree, the packed disk R-trees (held and compacted by the framework's
//! executor, [`RunStore`]), the clock, and the strategy's [`Maintenance`] that decides what each
//! write, flush, merge and query does beside them. Flushes and merges are in `flush.rs`, range
//! queries in `query.rs`.
//!
//! Fail-stop: a flush or merge that fails (an I/O error) leaves the R-tree, the memory component
//! and the strategy's bookkeeping exactly as they were and returns the error; the next flush
//! retries. A write that fails before its timestamp is handed out ([`LsmRTree::clock`] unchanged)
//! changed nothing; one that fails afterwards is applied and only a flush or merge that followed it
//! failed. No query answers Ok with a wrong result.

mod flush;
mod query;

pub use query::QueryOutcome;

use super::component::SpatialRuns;
use super::config::{FlushTrigger, SpatialConfig};
use super::maintenance::{Maintenance, MemoryWrite};
use super::stats::SpatialStats;
use super::strategy::Strategy;
use super::um::UpdateMemo;
use crate::cache::BufferCache;
use crate::geom::{HilbertCurve, Point};
use crate::lsm::{LifecycleObserver, RunStore};
use crate::rtree::{MemRTree, NodeId, SpatialEntry};
use crate::Result;
use std::sync::Arc;

/// An LSM R-tree secondary index (key = location, value = object id) maintained by one [`Strategy`].
pub struct LsmRTree {
    cfg: SpatialConfig,
    cache: Arc<BufferCache>,
    memory: MemRTree,
    /// The disk components and the compaction strategy that merges them.
    store: RunStore<SpatialRuns>,
    /// The global timestamp counter (incremented by every insert, update and delete).
    clock: u64,
    /// The strategy. Dynamic dispatch costs one call per write, per flushed or merged entry and per
    /// query candidate: under 0.5% of the instructions of the per-strategy ingest bench.
    maintenance: Box<dyn Maintenance>,
    /// The buffers the last queries gathered their candidates in, for the next ones.
    scratch: query::QueryScratch,
}

impl LsmRTree {
    /// An empty index of `cfg` (validated first) whose pages go through `cache`.
    pub fn new(cfg: SpatialConfig, cache: Arc<BufferCache>) -> Result<Self> {
        cfg.validate()?;
        let runs = SpatialRuns::new(cache.clone(), HilbertCurve::new(cfg.extent), cfg.bloom_fp);
        let maintenance = cfg.strategy.maintenance(&cfg, &cache)?;
        Ok(LsmRTree {
            memory: MemRTree::new(cache.page_size()),
            store: RunStore::new(runs, cfg.merge_policy.strategy(), cache.device().clone()),
            clock: 0,
            maintenance,
            scratch: Default::default(),
            cfg,
            cache,
        })
    }

    /// Tells `observer` about every flush and merge of the R-tree from now on. Runs are keyed by
    /// (Hilbert key, oid, timestamp) and report no key range (components overlap in space); a
    /// component's extents are its R-tree's and, if any, its antimatter B+-tree's.
    pub fn subscribe(&mut self, observer: Arc<dyn LifecycleObserver<(u64, u64, u64)>>) {
        self.store.subscribe(observer);
    }

    /// The configuration the index was built with.
    pub fn config(&self) -> &SpatialConfig {
        &self.cfg
    }

    /// The maintenance strategy.
    pub fn strategy(&self) -> Strategy {
        self.cfg.strategy
    }

    /// The Update Memo, under an Update Memo strategy.
    pub fn update_memo(&self) -> Option<&UpdateMemo> {
        self.maintenance.update_memo().map(|um| um.as_ref())
    }

    /// The Update Memo, shared (for concurrent ingestion outside the tree's lock).
    pub fn shared_update_memo(&self) -> Option<Arc<UpdateMemo>> {
        self.maintenance.update_memo().cloned()
    }

    /// The last timestamp handed out.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// The memory component's size in pages as the flush trigger counts them: memory R-tree nodes
    /// (allocated since the last flush under [`FlushTrigger::Allocated`], live under
    /// [`FlushTrigger::Live`]) plus the pages of whatever the strategy keeps beside it in memory
    /// (a deleted-key B+-tree or antimatter tuples, which only grow until the flush).
    pub fn memory_pages(&self) -> u64 {
        let rtree = match self.cfg.flush_trigger {
            FlushTrigger::Allocated => self.memory.allocated_pages(),
            FlushTrigger::Live => self.memory.node_count() as u64,
        };
        rtree + self.maintenance.memory_antimatter_pages()
    }

    /// Entries in the memory R-tree, obsolete ones included.
    pub fn memory_entries(&self) -> usize {
        self.memory.len()
    }

    /// Disk components (packed R-trees).
    pub fn disk_components(&self) -> usize {
        self.store.len()
    }

    /// Entries in the disk components' R-trees, obsolete ones included.
    pub fn disk_entries(&self) -> u64 {
        self.store.version().total_entries()
    }

    /// Pages of the disk components: R-trees and antimatter B+-trees.
    pub fn disk_pages(&self) -> u64 {
        self.store.version().total_pages()
    }

    /// What the index and its strategy have done so far.
    pub fn stats(&self) -> SpatialStats {
        let m = self.maintenance.stats();
        SpatialStats {
            rtree: self.store.stats(),
            key_index: m.key_index.map(|k| k.0),
            um_entries: m.um_entries,
            um_max_entries: m.um_max_entries,
            cleaned: m.cleaned,
            memory_splits: self.memory.splits(),
            key_index_lookups: m.key_index.map_or(0, |k| k.1),
            superseded_flushed: m.superseded_flushed,
            antimatter_flushed: m.antimatter_flushed,
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Inserts a new object.
    pub fn insert(&mut self, oid: u64, at: Point) -> Result<()> {
        let ts = self.tick();
        self.maintenance
            .insert(&mut self.memory, SpatialEntry::new(at, oid, ts))?;
        self.maybe_flush()
    }

    /// Moves an object. `from` is its old location as the stream knows it; only Eager uses it (and
    /// only when it does not look the old location up itself: that lookup is the one step that can
    /// fail before the write is applied).
    pub fn update(&mut self, oid: u64, from: Option<Point>, to: Point) -> Result<()> {
        let from = self.maintenance.locate(oid, from)?;
        let ts = self.tick();
        self.maintenance
            .update(&mut self.memory, from, SpatialEntry::new(to, oid, ts))?;
        self.maybe_flush()
    }

    /// Deletes an object. `from` as in [`Self::update`].
    pub fn delete(&mut self, oid: u64, from: Option<Point>) -> Result<()> {
        let from = self.maintenance.locate(oid, from)?;
        let ts = self.tick();
        self.maintenance.delete(&mut self.memory, oid, from, ts)?;
        self.maybe_flush()
    }

    /// UM strategies only, for concurrent ingestion ([`super::ConcurrentRumTree`]): puts an entry
    /// stamped by the caller into the memory R-tree and returns its leaf and whether the insert
    /// split it. The caller updates the UM (outside any lock) and then calls
    /// [`Self::finish_external_insert`].
    pub(crate) fn insert_external(&mut self, e: SpatialEntry) -> (NodeId, bool) {
        debug_assert!(self.maintenance.update_memo().is_some());
        self.clock = self.clock.max(e.ts);
        let splits = self.memory.splits();
        let leaf = self.memory.insert(e);
        (leaf, self.memory.splits() > splits)
    }

    /// Buffered/Vacuum Cleaning and the flush check after [`Self::insert_external`] (`write` says
    /// whether it was an update and whether it split its leaf).
    pub(crate) fn finish_external_insert(&mut self, leaf: NodeId, write: MemoryWrite) -> Result<()> {
        self.maintenance
            .after_external_insert(&mut self.memory, leaf, write)?;
        self.maybe_flush()
    }

    /// Checks the strategy's bookkeeping against the index's contents. For the Update Memo: every
    /// UM entry's count equals the number of its object's entries older than its timestamp (its
    /// obsolete entries), no entry is newer than the UM's timestamp, and an object without a UM
    /// entry has at most one entry (reads every disk component). Other strategies have nothing to
    /// check. Returns a description of the first violation.
    pub fn audit_update_memo(&self) -> Result<std::result::Result<(), String>> {
        let stamps = |f: &mut dyn FnMut(u64, u64)| -> Result<()> {
            self.memory.for_each(|e| f(e.oid, e.ts));
            let device = self.cache.device().clone();
            for (_, c) in self.store.runs() {
                c.rtree.scan_with(device.as_ref(), |e| f(e.oid, e.ts))?;
            }
            Ok(())
        };
        self.maintenance.audit(&stamps)
    }
}
