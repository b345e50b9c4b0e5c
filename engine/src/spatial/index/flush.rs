//! Flushes and merges of the LSM R-tree: entries are ordered along the Hilbert curve and
//! bulk-loaded into packed R-trees; the strategy filters them on the way (its flush and merge
//! filters) and adds its antimatter beside them.

use super::LsmRTree;
use crate::lsm::{DiskComponents, MergePolicyConfig};
use crate::rtree::{DiskRTree, SpatialEntry};
use crate::spatial::component::SpatialComponent;
use crate::Result;
use std::time::Instant;

impl LsmRTree {
    pub(super) fn maybe_flush(&mut self) -> Result<()> {
        if self.memory_pages() > self.cfg.memory_budget_pages {
            self.flush()?;
        }
        Ok(())
    }

    fn hilbert_sort(&self, entries: &mut [SpatialEntry]) {
        let h = self.hilbert;
        entries.sort_by_cached_key(|e| (h.key(e.point), e.oid, e.ts));
    }

    /// Flushes the memory component into a new disk component (filtered by the strategy, e.g.
    /// Clean Upon Flush, then sorted in Hilbert order), writes the strategy's antimatter beside it,
    /// flushes the key indexes with it, then merges as the policy asks.
    pub fn flush(&mut self) -> Result<()> {
        if self.memory.is_empty() && !self.maintenance.has_memory_antimatter() {
            return Ok(());
        }
        let start = Instant::now();
        let mut entries = self.memory.drain();
        self.maintenance.memory_drained();
        entries.retain(|e| self.maintenance.keep_on_flush(e));
        self.hilbert_sort(&mut entries);
        let device = self.cache.device().clone();
        let rtree = DiskRTree::bulk_load(device.as_ref(), entries.into_iter())?;
        let antimatter = SpatialComponent::build_antimatter(
            device.as_ref(),
            self.maintenance.take_memory_antimatter(),
            self.cfg.bloom_fp,
        )?;
        self.disk
            .add_flushed(SpatialComponent { rtree, antimatter }, start.elapsed());
        self.maintenance.flush_key_indexes()?;
        self.merge_while_needed()
    }

    fn merge_while_needed(&mut self) -> Result<()> {
        // The merge needs `&mut self` (the strategy's filter) while the components are being merged,
        // so they are moved out for the duration and put back afterwards.
        let mut disk = std::mem::replace(
            &mut self.disk,
            DiskComponents::new(MergePolicyConfig::None.build()),
        );
        let result = disk.merge_while_needed(|parts, includes_oldest| self.merge(parts, includes_oldest));
        self.disk = disk;
        result
    }

    /// Merges components (newest first) into one: every entry passes the strategy's merge filter,
    /// newest component first; the survivors are sorted in Hilbert order and bulk-loaded with the
    /// antimatter the filter keeps.
    fn merge(&mut self, parts: Vec<SpatialComponent>, includes_oldest: bool) -> Result<SpatialComponent> {
        let device = self.cache.device().clone();
        let antimatter = parts
            .iter()
            .map(|p| p.scan_antimatter(device.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        let mut filter = self.maintenance.merge_filter(antimatter, includes_oldest);
        let mut entries: Vec<SpatialEntry> = Vec::new();
        for (input, part) in parts.iter().enumerate() {
            for e in part.rtree.scan(device.as_ref())? {
                if filter.keep(input, &e)? {
                    entries.push(e);
                }
            }
        }
        let kept_antimatter = filter.finish();
        self.hilbert_sort(&mut entries);
        let rtree = DiskRTree::bulk_load(device.as_ref(), entries.into_iter())?;
        let antimatter =
            SpatialComponent::build_antimatter(device.as_ref(), kept_antimatter, self.cfg.bloom_fp)?;
        for part in parts {
            part.destroy(&self.cache);
        }
        Ok(SpatialComponent { rtree, antimatter })
    }
}
