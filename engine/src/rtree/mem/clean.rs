//! What the LSM RUM-tree's cleaning needs of the memory R-tree: per-leaf update counters
//! (Buffered Cleaning, Section 4.1), a round-robin leaf cursor (Vacuum Cleaning, Section 4.2) and
//! the tree's half of Algorithm 4, cleaning one leaf.
//!
//! # Update counters
//!
//! Every leaf has an update counter, bumped by the caller ([`MemRTree::bump_update_counter`]) and
//! reset by [`MemRTree::clean_leaf`]. "When a new R-tree node is created (e.g., due to a node
//! split) ... we set the node's update counter to 0": the node a split creates, and any reused id,
//! starts at 0. The leaf that was split **keeps** its counter: it is the same page (a paged R-tree
//! splits by allocating one new page beside the old one, which keeps its id), and the updates it
//! buffered have not been cleaned; resetting would postpone the cleaning of exactly the hot leaves
//! Buffered Cleaning targets. The authors' code does the same: the counter lives on the cached
//! page (`VirtualPage.touchCounter`), which the split keeps, and a new page starts at 0.
//!
//! # Leaf cursor
//!
//! The ids of live leaves are kept in a `BTreeSet`, touched only when a leaf is created or freed
//! (a split, an unlink), never on a plain insertion. [`MemRTree::next_leaf`] is one range query,
//! O(log n) whatever the arena looks like (a forward scan of the arena would degrade after large
//! deletions leave many free slots).

use std::ops::Bound;

use super::{MemRTree, Node, NodeId};
use crate::rtree::SpatialEntry;

impl MemRTree {
    fn live_leaf(&self, leaf: NodeId) -> &Node {
        match self.nodes.get(leaf as usize) {
            Some(n) if n.live && n.is_leaf() => n,
            _ => panic!("MemRTree: node {leaf} is not a live leaf"),
        }
    }

    fn live_leaf_mut(&mut self, leaf: NodeId) -> &mut Node {
        match self.nodes.get_mut(leaf as usize) {
            Some(n) if n.live && n.is_leaf() => n,
            _ => panic!("MemRTree: node {leaf} is not a live leaf"),
        }
    }

    /// Buffered Cleaning (Section 4.1): adds 1 to `leaf`'s update counter and returns the new value.
    /// Panics if `leaf` is not a live leaf.
    pub fn bump_update_counter(&mut self, leaf: NodeId) -> u32 {
        let n = self.live_leaf_mut(leaf);
        n.update_counter = n.update_counter.saturating_add(1);
        n.update_counter
    }

    /// `leaf`'s update counter. Panics if `leaf` is not a live leaf.
    pub fn update_counter(&self, leaf: NodeId) -> u32 {
        self.live_leaf(leaf).update_counter
    }

    /// Sets `leaf`'s update counter to 0 (without cleaning). Panics if `leaf` is not a live leaf.
    pub fn reset_update_counter(&mut self, leaf: NodeId) {
        self.live_leaf_mut(leaf).update_counter = 0;
    }

    /// The entries of `leaf`, in no particular order. Panics if `leaf` is not a live leaf.
    pub fn leaf_entries(&self, leaf: NodeId) -> &[SpatialEntry] {
        &self.live_leaf(leaf).entries
    }

    /// Algorithm 4 of the LSM RUM-tree paper, the tree's half: removes every entry of `leaf` for which
    /// `keep` is false, passing each removed entry to `removed` (where the caller decrements the UM
    /// counts); resets the leaf's update counter; tightens MBRs up to the root (unlinking the leaf if
    /// it becomes empty); returns how many were removed. Panics if `leaf` is not a live leaf.
    pub fn clean_leaf(
        &mut self,
        leaf: NodeId,
        keep: impl FnMut(&SpatialEntry) -> bool,
        removed: impl FnMut(SpatialEntry),
    ) -> usize {
        self.clean_leaf_with(leaf, true, keep, removed)
    }

    /// [`Self::clean_leaf`], resetting the leaf's update counter only if `reset_counter` (the
    /// authors' Vacuum Cleaning leaves it as it was).
    pub fn clean_leaf_with(
        &mut self,
        leaf: NodeId,
        reset_counter: bool,
        mut keep: impl FnMut(&SpatialEntry) -> bool,
        mut removed: impl FnMut(SpatialEntry),
    ) -> usize {
        let n = self.live_leaf_mut(leaf);
        if reset_counter {
            n.update_counter = 0;
        }
        let before = n.entries.len();
        n.entries.retain(|e| {
            let k = keep(e);
            if !k {
                removed(*e);
            }
            k
        });
        let count = before - n.entries.len();
        if count > 0 {
            self.len -= count;
            self.after_shrink(leaf);
        }
        count
    }

    /// Vacuum Cleaning's round-robin cursor (Section 4.2): the next live leaf with an id greater than
    /// `after` in id order, wrapping to the smallest live leaf id; `None` if there are no entries at
    /// all. `after` may be a stale id (a leaf freed since). O(log n).
    pub fn next_leaf(&self, after: Option<NodeId>) -> Option<NodeId> {
        if self.len == 0 {
            return None;
        }
        let next = match after {
            Some(a) => self
                .live_leaves
                .range((Bound::Excluded(a), Bound::Unbounded))
                .next(),
            None => None,
        };
        next.or_else(|| self.live_leaves.first()).copied()
    }

    /// Whether `id` names a live leaf now.
    pub fn is_live_leaf(&self, id: NodeId) -> bool {
        self.nodes.get(id as usize).is_some_and(|n| n.live && n.is_leaf())
    }
}
