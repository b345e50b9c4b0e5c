//! The memory R-tree of an LSM memory component: a Guttman R-tree (Guttman 1984, "R-trees: a dynamic
//! index structure for spatial searching") over [`SpatialEntry`] points, with the per-leaf update
//! counters of Buffered Cleaning and the round-robin leaf cursor of Vacuum Cleaning (LSM RUM-tree
//! paper, Sections 4.1 and 4.2), and "clean this leaf" (Algorithm 4).
//!
//! # Shape
//!
//! Nodes live in an arena and are addressed by stable [`NodeId`]s; a node is one page, so
//! [`MemRTree::node_count`] is the component's size in pages, the quantity the LSM compares with the
//! memory budget to decide a flush. Node capacities come from a page size ([`MemRTree::new`]).
//! A leaf stores its entries contiguously (`Vec<SpatialEntry>`); an internal node stores its
//! children's MBRs contiguously (`Vec<Rect>`) beside their ids (`Vec<NodeId>`). A node's own MBR is
//! kept only in its parent (the root's is computed on demand, [`MemRTree::mbr`]); every node has a
//! parent pointer so MBRs can be tightened bottom-up after a deletion.
//!
//! # Rooms
//!
//! - `insert.rs`: Guttman's Insert, ChooseLeaf and AdjustTree;
//! - `split.rs`: Guttman's quadratic split (SplitNode, PickSeeds, PickNext);
//! - `remove.rs`: deletion without CondenseTree;
//! - `search.rs`: the range search;
//! - `clean.rs`: update counters, the round-robin leaf cursor and leaf cleaning (Algorithm 4 of the
//!   LSM RUM-tree paper);
//! - `invariants.rs`: the structural checks tests rely on.

mod clean;
mod insert;
mod invariants;
mod remove;
mod search;
mod split;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use super::SpatialEntry;
use crate::geom::Rect;
use split::{min_fill_of, SplitScratch};

/// The stable id of a node in a [`MemRTree`]'s arena.
pub type NodeId = u32;

/// Marks "no node" in parent links (the root's parent, a free node's parent).
const NO_NODE: NodeId = NodeId::MAX;

/// Bytes of a page header the capacity computation reserves.
const PAGE_HEADER: usize = 16;
/// Bytes of one internal-node entry on a page: an MBR of four f64 and an 8-byte child pointer.
const INTERNAL_ENTRY_SIZE: usize = 40;

/// One node (one page). Leaves use `entries`, internal nodes `rects` + `children`; a freed node keeps
/// its (cleared) vectors so that reusing its id does not allocate.
#[derive(Clone, Debug)]
struct Node {
    parent: NodeId,
    /// 0 for a leaf; a node's children are one level lower.
    level: u32,
    live: bool,
    /// Buffered Cleaning's update counter (leaves only).
    update_counter: u32,
    entries: Vec<SpatialEntry>,
    rects: Vec<Rect>,
    children: Vec<NodeId>,
}

impl Node {
    fn new_leaf(parent: NodeId, capacity: usize) -> Self {
        Node {
            parent,
            level: 0,
            live: true,
            update_counter: 0,
            entries: Vec::with_capacity(capacity + 1),
            rects: Vec::new(),
            children: Vec::new(),
        }
    }

    fn is_leaf(&self) -> bool {
        self.level == 0
    }

    /// Number of entries (leaf) or children (internal).
    fn fanout(&self) -> usize {
        if self.is_leaf() {
            self.entries.len()
        } else {
            self.children.len()
        }
    }

    /// The tight MBR of the node's contents (`Rect::empty()` for an empty node).
    fn mbr(&self) -> Rect {
        if self.is_leaf() {
            self.entries
                .iter()
                .fold(Rect::empty(), |r, e| r.union_point(e.point))
        } else {
            self.rects.iter().fold(Rect::empty(), |r, c| r.union(c))
        }
    }
}

/// The memory R-tree of an LSM memory component (see the module documentation).
#[derive(Clone, Debug)]
pub struct MemRTree {
    nodes: Vec<Node>,
    free: Vec<NodeId>,
    live_leaves: BTreeSet<NodeId>,
    root: NodeId,
    len: usize,
    splits: u64,
    /// Nodes allocated since the tree was created or last emptied (the root leaf counts), never
    /// decremented when a node is freed.
    allocated: u64,
    leaf_capacity: usize,
    internal_capacity: usize,
    leaf_min_fill: usize,
    internal_min_fill: usize,
    scratch: SplitScratch,
}

/// Position of `x` in `v` (children lists hold at most a page's worth of ids, so a scan is cheapest).
#[allow(clippy::expect_used)] // every live node is listed in its parent (the tree's invariants)
fn slot_of(v: &[NodeId], x: NodeId) -> usize {
    v.iter()
        .position(|&c| c == x)
        .expect("child is listed in its parent")
}

/// Area of a rectangle known to be non-empty (no emptiness branch: the hot paths below only see
/// MBRs of non-empty nodes and unions of them).
#[inline]
fn area_ne(r: &Rect) -> f64 {
    (r.max.x - r.min.x) * (r.max.y - r.min.y)
}

/// The larger of two numbers that are not NaN, as one compare-and-select (`f64::max` also has to
/// handle NaN, which costs several instructions in the innermost loops). Equal to `f64::max` up to
/// the sign of a zero, which no comparison below distinguishes; stored MBRs still use `Rect::union`.
#[inline(always)]
fn max_nn(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

/// The smaller of two numbers that are not NaN (see [`max_nn`]).
#[inline(always)]
fn min_nn(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

/// Half-perimeter of a rectangle known to be non-empty.
#[inline]
fn margin_ne(r: &Rect) -> f64 {
    (r.max.x - r.min.x) + (r.max.y - r.min.y)
}

impl MemRTree {
    /// Capacities from a page size: leaf = (page_size - 16) / SpatialEntry::ENCODED_SIZE (63 at
    /// 2 KiB), internal = (page_size - 16) / 40 (an MBR of four f64 + an 8-byte child pointer; 50 at
    /// 2 KiB). Panics if either is below 4 (a page this small is a programmer error).
    pub fn new(page_size: usize) -> Self {
        let usable = page_size.saturating_sub(PAGE_HEADER);
        Self::with_capacities(usable / SpatialEntry::ENCODED_SIZE, usable / INTERNAL_ENTRY_SIZE)
    }

    /// A tree whose leaves hold at most `leaf_capacity` entries and internal nodes at most
    /// `internal_capacity` children. Panics if either is below 4.
    pub fn with_capacities(leaf_capacity: usize, internal_capacity: usize) -> Self {
        assert!(
            leaf_capacity >= 4 && internal_capacity >= 4,
            "MemRTree capacities must be >= 4 (leaf {leaf_capacity}, internal {internal_capacity})"
        );
        let mut tree = MemRTree {
            nodes: Vec::new(),
            free: Vec::new(),
            live_leaves: BTreeSet::new(),
            root: 0,
            len: 0,
            splits: 0,
            allocated: 1,
            leaf_capacity,
            internal_capacity,
            leaf_min_fill: min_fill_of(leaf_capacity),
            internal_min_fill: min_fill_of(internal_capacity),
            scratch: SplitScratch::default(),
        };
        tree.reset();
        tree
    }

    /// Empties the tree to a single root leaf with id 0.
    fn reset(&mut self) {
        self.nodes.clear();
        self.free.clear();
        self.live_leaves.clear();
        self.nodes.push(Node::new_leaf(NO_NODE, self.leaf_capacity));
        self.live_leaves.insert(0);
        self.root = 0;
        self.len = 0;
        self.allocated = 1;
    }

    /// Maximum entries of a leaf.
    pub fn leaf_capacity(&self) -> usize {
        self.leaf_capacity
    }

    /// Maximum children of an internal node.
    pub fn internal_capacity(&self) -> usize {
        self.internal_capacity
    }

    /// The minimum fill of a leaf produced by a split: ⌈40%⌉ of the leaf capacity. (Deletions may leave
    /// leaves below it: see the module documentation.)
    pub fn min_fill(&self) -> usize {
        self.leaf_min_fill
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the tree holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Live nodes, leaves and internal: the component's size in pages (an empty tree counts 1, its
    /// root leaf).
    pub fn node_count(&self) -> usize {
        self.nodes.len() - self.free.len()
    }

    /// Nodes allocated since the tree was created or last drained, the root leaf included: what a
    /// paged memory component whose pages are given back only when it is reset (AsterixDB's
    /// virtual buffer cache) has used, whatever was freed since. A freed id reused by a later split
    /// counts again.
    pub fn allocated_pages(&self) -> u64 {
        self.allocated
    }

    /// Live leaves.
    pub fn leaf_count(&self) -> usize {
        self.live_leaves.len()
    }

    /// Levels, 1 for a tree that is a single leaf.
    pub fn height(&self) -> usize {
        self.nodes[self.root as usize].level as usize + 1
    }

    /// Node splits so far (leaf and internal; growing a new root is not counted separately). The count
    /// accumulates over the tree's whole life, across [`MemRTree::drain`].
    pub fn splits(&self) -> u64 {
        self.splits
    }

    /// The MBR of all entries (`Rect::empty()` if there are none).
    pub fn mbr(&self) -> Rect {
        self.nodes[self.root as usize].mbr()
    }

    /// Takes a node id for a new node at `level` (from the free list first), live, counter 0.
    fn alloc_node(&mut self, parent: NodeId, level: u32) -> NodeId {
        self.allocated += 1;
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                #[allow(clippy::expect_used)] // a capacity limit, like a failed allocation
                let id = NodeId::try_from(self.nodes.len()).expect("MemRTree arena exceeds u32 ids");
                assert!(id != NO_NODE, "MemRTree arena exceeds u32 ids");
                self.nodes.push(Node::new_leaf(NO_NODE, 0));
                id
            }
        };
        let (leaf_cap, internal_cap) = (self.leaf_capacity, self.internal_capacity);
        let n = &mut self.nodes[id as usize];
        n.parent = parent;
        n.level = level;
        n.live = true;
        n.update_counter = 0;
        if level == 0 {
            n.entries.reserve_exact(leaf_cap + 1);
            self.live_leaves.insert(id);
        } else {
            n.rects.reserve_exact(internal_cap + 1);
            n.children.reserve_exact(internal_cap + 1);
        }
        id
    }

    /// Returns a node to the free list (its vectors are cleared but keep their allocation).
    fn free_node(&mut self, id: NodeId) {
        let n = &mut self.nodes[id as usize];
        debug_assert!(n.live);
        if n.level == 0 {
            self.live_leaves.remove(&id);
        }
        n.live = false;
        n.parent = NO_NODE;
        n.update_counter = 0;
        n.entries.clear();
        n.rects.clear();
        n.children.clear();
        self.free.push(id);
    }

    /// Calls `f` on every entry (in leaf id order, no order within a leaf).
    pub fn for_each(&self, mut f: impl FnMut(&SpatialEntry)) {
        for &l in &self.live_leaves {
            self.nodes[l as usize].entries.iter().for_each(&mut f);
        }
    }

    /// Takes every entry out, leaving an empty tree (ids restart at 0, the root leaf). Used by flush.
    /// The split count is kept.
    pub fn drain(&mut self) -> Vec<SpatialEntry> {
        let mut out = Vec::with_capacity(self.len);
        for &l in &self.live_leaves {
            out.append(&mut self.nodes[l as usize].entries);
        }
        debug_assert_eq!(out.len(), self.len);
        self.reset();
        out
    }
}

impl Default for MemRTree {
    /// A tree with 2 KiB pages, the LSM RUM-tree paper's setting.
    fn default() -> Self {
        MemRTree::new(2048)
    }
}
