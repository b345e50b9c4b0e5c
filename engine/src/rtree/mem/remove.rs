//! Deletion (remove, and the shrinking that follows a leaf cleaning): no CondenseTree.
//!
//! Guttman's CondenseTree re-inserts the entries of underfull nodes to keep every node at least
//! `m` full. A memory component lives only until its next flush, where it is sorted and bulk-loaded
//! anyway, so this tree does less: it removes the entries, tightens the MBRs on the path to the
//! root, and unlinks a node that becomes **empty** from its parent (recursively up the path). The
//! root stays; if unlinking leaves an internal root with a single child, that child becomes the root
//! (Guttman's "shorten tree" step, D4). Nodes may therefore be underfull after deletions, never
//! empty (except a root leaf of an empty tree). Freed ids go to a free list and are reused by later
//! splits.

use super::{slot_of, MemRTree, NodeId, NO_NODE};
use crate::geom::Point;
use crate::rtree::SpatialEntry;

impl MemRTree {
    /// Removes the entry of object `oid` located exactly at `point` (if several match, the one with
    /// the largest ts), returning it. Descends only subtrees whose MBR contains the point. Afterwards
    /// MBRs on the path are tightened and an emptied node is unlinked (no CondenseTree re-insertion:
    /// see the module documentation).
    pub fn remove(&mut self, point: Point, oid: u64) -> Option<SpatialEntry> {
        let mut best: Option<(NodeId, usize, u64)> = None;
        self.find_for_removal(self.root, point, oid, &mut best);
        let (leaf, idx, _) = best?;
        let e = self.nodes[leaf as usize].entries.swap_remove(idx);
        self.len -= 1;
        self.after_shrink(leaf);
        Some(e)
    }

    fn find_for_removal(&self, n: NodeId, p: Point, oid: u64, best: &mut Option<(NodeId, usize, u64)>) {
        let node = &self.nodes[n as usize];
        if node.is_leaf() {
            for (i, e) in node.entries.iter().enumerate() {
                if e.oid == oid && e.point == p && best.is_none_or(|(_, _, ts)| e.ts > ts) {
                    *best = Some((n, i, e.ts));
                }
            }
        } else {
            for (r, &c) in node.rects.iter().zip(&node.children) {
                if r.contains_point(p) {
                    self.find_for_removal(c, p, oid, best);
                }
            }
        }
    }

    /// Restores the invariants after entries or children were removed from `n`: unlinks `n` if it is
    /// empty (and recursively its emptied ancestors), collapses a single-child root, and tightens the
    /// MBRs on the remaining path.
    pub(super) fn after_shrink(&mut self, mut n: NodeId) {
        while n != self.root && self.nodes[n as usize].fanout() == 0 {
            let parent = self.nodes[n as usize].parent;
            let p = &mut self.nodes[parent as usize];
            let slot = slot_of(&p.children, n);
            p.children.swap_remove(slot);
            p.rects.swap_remove(slot);
            self.free_node(n);
            n = parent;
        }
        if n == self.root {
            self.shorten_root();
        } else {
            self.tighten_from(n);
        }
    }

    /// Guttman's D4: while the root is internal with a single child, that child becomes the root. An
    /// internal root left with no child (not reachable through the public API) becomes an empty leaf.
    fn shorten_root(&mut self) {
        loop {
            let root = &self.nodes[self.root as usize];
            if root.is_leaf() || root.children.len() > 1 {
                return;
            }
            let old = self.root;
            match root.children.first() {
                Some(&child) => {
                    self.free_node(old);
                    self.nodes[child as usize].parent = NO_NODE;
                    self.root = child;
                }
                None => {
                    self.free_node(old);
                    self.root = self.alloc_node(NO_NODE, 0);
                    return;
                }
            }
        }
    }

    /// Recomputes `n`'s MBR into its parent and goes up while the stored MBR changes.
    fn tighten_from(&mut self, mut n: NodeId) {
        loop {
            let parent = self.nodes[n as usize].parent;
            if parent == NO_NODE {
                return;
            }
            let r = self.nodes[n as usize].mbr();
            let p = &mut self.nodes[parent as usize];
            let slot = slot_of(&p.children, n);
            if p.rects[slot] == r {
                return;
            }
            p.rects[slot] = r;
            n = parent;
        }
    }
}
