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
                if contains(rect, e) {
                    f(e);
                }
            }
        } else {
            for (r, &c) in node.rects.iter().zip(&node.children) {
                if meets(rect, r) {
                    self.search_node(c, rect, f);
                }
            }
        }
    }
}

/// [`Rect::contains_point`] without short-circuiting: one predictable branch per entry instead of
/// up to four data-dependent ones.
#[inline(always)]
fn contains(q: &Rect, e: &SpatialEntry) -> bool {
    let p = e.point;
    (p.x >= q.min.x) & (p.x <= q.max.x) & (p.y >= q.min.y) & (p.y <= q.max.y)
}

/// [`Rect::intersects`] without short-circuiting (see [`contains`]).
#[inline(always)]
fn meets(q: &Rect, r: &Rect) -> bool {
    (q.min.x <= r.max.x) & (r.min.x <= q.max.x) & (q.min.y <= r.max.y) & (r.min.y <= q.max.y)
}
