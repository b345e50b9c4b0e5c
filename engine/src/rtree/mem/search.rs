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
/// up to four data-dependent ones. The comparisons are grouped by corner, the query's min corner
/// against the point, then the point against the max corner, so each pair is one two-lane vector
/// comparison of two adjacent fields (ordering them by axis instead made LLVM shuffle the lanes
/// first).
#[inline(always)]
fn contains(q: &Rect, e: &SpatialEntry) -> bool {
    let p = e.point;
    ((q.min.x <= p.x) & (q.min.y <= p.y)) & ((p.x <= q.max.x) & (p.y <= q.max.y))
}

/// [`Rect::intersects`] without short-circuiting, grouped by corner (see [`contains`]).
#[inline(always)]
fn meets(q: &Rect, r: &Rect) -> bool {
    ((q.min.x <= r.max.x) & (q.min.y <= r.max.y)) & ((r.min.x <= q.max.x) & (r.min.y <= q.max.y))
}
