//! Flushes and merges of the LSM R-tree through the framework's executor: entries are ordered
//! along the Hilbert curve and bulk-loaded into packed R-trees; the strategy filters them on the
//! way (its flush and merge filters) and adds its antimatter beside them. Nothing leaves memory and
//! no bookkeeping changes until the new component is installed.

use super::LsmRTree;
use crate::rtree::SpatialEntry;
use crate::spatial::component::SpatialMerger;
use crate::spatial::maintenance::Cleanup;
use crate::Result;

impl LsmRTree {
    pub(super) fn maybe_flush(&mut self) -> Result<()> {
        if self.memory_pages() > self.cfg.memory_budget_pages {
            self.flush()?;
        }
        Ok(())
    }

    /// Flushes the memory component into a new disk component (filtered by the strategy, e.g.
    /// Clean Upon Flush, entries the strategy writes although superseded marked so, then sorted in
    /// Hilbert order), writes the strategy's antimatter beside it,
    /// flushes the key indexes with it, then merges as the policy asks.
    ///
    /// The memory R-tree and the memory antimatter are copied, not taken: they are emptied, and the
    /// strategy's cleanup (Update Memo releases, counters) committed, only once the component is
    /// installed. A key index whose flush fails keeps its memory component (its own executor is
    /// fail-stop) and is flushed again with the next flush, so nothing is lost then either; a
    /// failed merge leaves its inputs in place and is retried by the next flush (even of an empty
    /// memory component; on a healthy device the policy is then already satisfied and nothing
    /// happens).
    pub fn flush(&mut self) -> Result<()> {
        // The queries' kept buffers would add to the peak the flush and its merges set.
        self.scratch.release();
        if self.memory.is_empty() && !self.maintenance.has_memory_antimatter() {
            return self.compact();
        }
        let mut entries: Vec<SpatialEntry> = Vec::with_capacity(self.memory.len());
        self.memory.for_each(|e| entries.push(*e));
        let mut cleanup = Cleanup::default();
        let m = self.maintenance.as_ref();
        entries.retain(|e| m.keep_on_flush(e, &mut cleanup));
        for e in &mut entries {
            if m.superseded_on_flush(e) {
                e.mark_superseded();
                cleanup.superseded += 1;
            }
        }
        // Antimatter entries the strategy keeps in memory go into the disk R-tree beside the
        // entries (AsterixDB's `LSMRTreeWithAntiMatterTuplesFlushCursor`).
        let tombstones = self.maintenance.memory_antimatter_entries();
        cleanup.antimatter += tombstones.len() as u64;
        entries.extend(tombstones);
        self.maintenance.check(&cleanup)?;
        self.store.format().hilbert_sort(&mut entries);
        let antimatter = self.maintenance.memory_antimatter();
        let n = entries.len() as u64;
        let runs = self.store.format();
        let keys = entries
            .first()
            .zip(entries.last())
            .map(|(a, b)| crate::lsm::KeyRange::new(runs.key(a), runs.key(b)));
        self.store.flush_with(n, keys, move |runs, written| {
            runs.build_component(entries, antimatter, written)
        })?;
        self.memory.drain();
        self.maintenance.flushed(cleanup)?;
        self.maintenance.flush_key_indexes()?;
        self.compact()
    }

    /// Merges as the compaction strategy asks, through the strategy's merge filter. A merge whose
    /// filter dropped an entry the strategy's bookkeeping does not count (a garbled entry read
    /// back, [`crate::Error::CorruptEntry`]) fails with its inputs in place, and so does every
    /// retry of it.
    pub(super) fn compact(&mut self) -> Result<()> {
        let mut merger = SpatialMerger::new(self.maintenance.as_mut());
        self.store.compact_with(&mut merger)?;
        merger.into_result()
    }
}
