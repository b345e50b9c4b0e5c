//! Insertion (Guttman 1984, Insert / ChooseLeaf / AdjustTree).
//!
//! ChooseLeaf descends by least area enlargement, then smallest area. The MBRs on the way down are
//! enlarged as the descent goes (the entry is bound to end up below them), so an insertion without a
//! split touches each level once and never walks back up. An overfull node is split with Guttman's
//! **quadratic split**; each group keeps at least [`MemRTree::min_fill`] = ⌈40% of capacity⌉
//! entries. Splits propagate upwards; a root split grows the tree by one level.
//!
//! For degenerate input (collinear or coincident points, where every area is 0 and Guttman's
//! criteria all tie) the tie-breaks add margin (half-perimeter) enlargement *after* Guttman's own
//! criteria; in non-degenerate input they change nothing but exact ties. Coordinates must not be
//! NaN (a NaN point would never be found again by `search` or `remove`).

use super::{area_ne, margin_ne, max_nn, min_nn, slot_of, MemRTree, NodeId, NO_NODE};
use crate::geom::{Point, Rect};
use crate::rtree::SpatialEntry;

/// Guttman's ChooseSubtree criterion for a point: the index of the rectangle needing the least area
/// enlargement to cover `p`, ties by smallest area, then by least margin enlargement (the last only
/// decides between degenerate, zero-area candidates). `rects` are MBRs of non-empty nodes.
#[inline]
fn choose_subtree(rects: &[Rect], p: Point) -> usize {
    let margin_enlargement = |r: &Rect| margin_ne(&r.union_point(p)) - margin_ne(r);
    let mut best = 0;
    let (mut best_enl, mut best_area) = (f64::INFINITY, f64::INFINITY);
    for (i, r) in rects.iter().enumerate() {
        let area = area_ne(r);
        let grown_w = max_nn(r.max.x, p.x) - min_nn(r.min.x, p.x);
        let grown_h = max_nn(r.max.y, p.y) - min_nn(r.min.y, p.y);
        let enl = grown_w * grown_h - area;
        if enl < best_enl || (enl == best_enl && area < best_area) {
            (best, best_enl, best_area) = (i, enl, area);
        } else if enl == best_enl
            && area == best_area
            && margin_enlargement(r) < margin_enlargement(&rects[best])
        {
            best = i;
        }
    }
    best
}

impl MemRTree {
    /// The leaf an insertion of `point` would descend to now (Guttman's ChooseLeaf), without changing
    /// anything. Lets a strategy look at (or clean) the target leaf before inserting.
    pub fn choose_leaf(&self, point: Point) -> NodeId {
        let mut n = self.root;
        loop {
            let node = &self.nodes[n as usize];
            if node.is_leaf() {
                return n;
            }
            n = node.children[choose_subtree(&node.rects, point)];
        }
    }

    /// Inserts and returns the id of the leaf that holds `e` afterwards (after any split).
    pub fn insert(&mut self, e: SpatialEntry) -> NodeId {
        let p = e.point;
        let mut n = self.root;
        // ChooseLeaf, enlarging each chosen child's MBR on the way down (the entry ends up below it).
        loop {
            let node = &mut self.nodes[n as usize];
            if node.is_leaf() {
                break;
            }
            let i = choose_subtree(&node.rects, p);
            node.rects[i] = node.rects[i].union_point(p);
            n = node.children[i];
        }
        let leaf = &mut self.nodes[n as usize];
        leaf.entries.push(e);
        self.len += 1;
        if leaf.entries.len() <= self.leaf_capacity {
            return n;
        }
        // The new entry is the last one; it stays in `n` or moves to the new sibling.
        let sibling = self.split(n);
        if self.nodes[n as usize].entries.last().is_some_and(|x| *x == e) {
            n
        } else {
            debug_assert!(self.nodes[sibling as usize].entries.contains(&e));
            sibling
        }
    }

    /// Splits the overfull node `n` (quadratic split), attaches the new sibling to the parent and
    /// propagates overflow upwards (AdjustTree). Returns the sibling created from `n`.
    fn split(&mut self, n: NodeId) -> NodeId {
        let first_sibling = self.split_one(n);
        let mut child = n;
        let mut sibling = first_sibling;
        loop {
            let parent = self.nodes[child as usize].parent;
            let child_mbr = self.nodes[child as usize].mbr();
            let sibling_mbr = self.nodes[sibling as usize].mbr();
            if parent == NO_NODE {
                // Root split: grow a new root over the two halves.
                let level = self.nodes[child as usize].level + 1;
                let root = self.alloc_node(NO_NODE, level);
                let r = &mut self.nodes[root as usize];
                r.rects.extend([child_mbr, sibling_mbr]);
                r.children.extend([child, sibling]);
                self.nodes[child as usize].parent = root;
                self.nodes[sibling as usize].parent = root;
                self.root = root;
                break;
            }
            let p = &mut self.nodes[parent as usize];
            let slot = slot_of(&p.children, child);
            p.rects[slot] = child_mbr;
            p.rects.push(sibling_mbr);
            p.children.push(sibling);
            self.nodes[sibling as usize].parent = parent;
            if self.nodes[parent as usize].children.len() <= self.internal_capacity {
                // The parent's own MBR was already enlarged on the way down and covers both halves.
                break;
            }
            child = parent;
            sibling = self.split_one(parent);
        }
        first_sibling
    }
}
