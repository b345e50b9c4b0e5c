//! The range search: descends every subtree whose MBR meets the query rectangle.

use super::{MemRTree, NodeId};
use crate::geom::Rect;
use crate::rtree::SpatialEntry;

impl MemRTree {
    /// Calls `f` on every entry whose point lies in `rect` (borders included).
    pub fn search(&self, rect: &Rect, mut f: impl FnMut(&SpatialEntry)) {
        self.search_node(self.root, rect, &mut f);
    }

    fn search_node<F: FnMut(&SpatialEntry)>(&self, n: NodeId, rect: &Rect, f: &mut F) {
        let node = &self.nodes[n as usize];
        if node.is_leaf() {
            for e in &node.entries {
                if rect.contains_point(e.point) {
                    f(e);
                }
            }
        } else {
            for (r, &c) in node.rects.iter().zip(&node.children) {
                if rect.intersects(r) {
                    self.search_node(c, rect, f);
                }
            }
        }
    }
}
