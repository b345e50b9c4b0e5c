//! One disk component of the LSM R-tree: a packed R-tree and, when the strategy writes antimatter
//! (Eager's deleted keys), a B+-tree of the oids it deletes from older components.

use crate::btree::BTreeComponent;
use crate::cache::BufferCache;
use crate::lsm::{ComponentInfo, DiskComponent};
use crate::rtree::DiskRTree;
use crate::storage::Device;
use crate::Result;

/// A packed R-tree and its optional antimatter B+-tree.
pub(crate) struct SpatialComponent {
    pub rtree: DiskRTree,
    pub antimatter: Option<BTreeComponent<()>>,
}

impl DiskComponent for SpatialComponent {
    fn info(&self) -> ComponentInfo {
        ComponentInfo {
            pages: self.rtree.pages() + self.antimatter.as_ref().map_or(0, |d| d.pages()),
            entries: self.rtree.entries(),
        }
    }
}

impl SpatialComponent {
    /// Bulk-loads the antimatter B+-tree of `oids` (ascending), or none if there are none.
    pub fn build_antimatter(
        device: &dyn Device,
        oids: Vec<u64>,
        bloom_fp: Option<f64>,
    ) -> Result<Option<BTreeComponent<()>>> {
        if oids.is_empty() {
            return Ok(None);
        }
        Ok(Some(BTreeComponent::bulk_load(
            device,
            oids.into_iter().map(|k| (k, ())),
            bloom_fp,
        )?))
    }

    /// The antimatter's oids, ascending (empty if there is none).
    pub fn scan_antimatter(&self, device: &dyn Device) -> Result<Vec<u64>> {
        match &self.antimatter {
            Some(d) => Ok(d.scan(device)?.into_iter().map(|(oid, ())| oid).collect()),
            None => Ok(Vec::new()),
        }
    }

    pub fn destroy(self, cache: &BufferCache) {
        self.rtree.destroy(cache);
        if let Some(d) = self.antimatter {
            d.destroy(cache);
        }
    }
}
