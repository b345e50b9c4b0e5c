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
//! # Insertion (Guttman 1984, Insert / ChooseLeaf / AdjustTree / SplitNode)
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
//!
//! # Deletion (remove, clean_leaf): no CondenseTree
//!
//! Guttman's CondenseTree re-inserts the entries of underfull nodes to keep every node at least
//! `m` full. A memory component lives only until its next flush, where it is sorted and bulk-loaded
//! anyway, so this tree does less: it removes the entries, tightens the MBRs on the path to the
//! root, and unlinks a node that becomes **empty** from its parent (recursively up the path). The
//! root stays; if unlinking leaves an internal root with a single child, that child becomes the root
//! (Guttman's "shorten tree" step, D4). Nodes may therefore be underfull after deletions, never
//! empty (except a root leaf of an empty tree). Freed ids go to a free list and are reused by later
//! splits.
//!
//! # Update counters (Section 4.1 of the LSM RUM-tree paper)
//!
//! Every leaf has an update counter, bumped by the caller ([`MemRTree::bump_update_counter`]) and
//! reset by [`MemRTree::clean_leaf`]. "When a new R-tree node is created (e.g., due to a node
//! split) ... we set the node's update counter to 0": the node a split creates, and any reused id,
//! starts at 0. The leaf that was split **keeps** its counter: it is the same page (a paged R-tree
//! splits by allocating one new page beside the old one, which keeps its id), and the updates it
//! buffered have not been cleaned; resetting would postpone the cleaning of exactly the hot leaves
//! Buffered Cleaning targets. (Whether the authors' code does the same is not checked here.)
//!
//! # Leaf cursor (Section 4.2)
//!
//! The ids of live leaves are kept in a `BTreeSet`, touched only when a leaf is created or freed
//! (a split, an unlink), never on a plain insertion. [`MemRTree::next_leaf`] is one range query,
//! O(log n) whatever the arena looks like (a forward scan of the arena would degrade after large
//! deletions leave many free slots).

use std::collections::BTreeSet;
use std::ops::Bound;

use super::SpatialEntry;
use crate::geom::{Point, Rect};

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

/// Reusable buffers of the quadratic split (no allocation per split once warmed up).
#[derive(Clone, Debug, Default)]
struct SplitScratch {
    rects: Vec<Rect>,
    /// Group of each item: 0 (stays in the split node) or 1 (moves to the new node).
    group: Vec<u8>,
    unassigned: Vec<u32>,
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
    leaf_capacity: usize,
    internal_capacity: usize,
    leaf_min_fill: usize,
    internal_min_fill: usize,
    scratch: SplitScratch,
}

/// ⌈40%⌉ of a capacity: the minimum fill of each group of a split.
fn min_fill_of(capacity: usize) -> usize {
    (capacity * 2).div_ceil(5).max(1)
}

/// Position of `x` in `v` (children lists hold at most a page's worth of ids, so a scan is cheapest).
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

/// Half-perimeter of a rectangle known to be non-empty.
#[inline]
fn margin_ne(r: &Rect) -> f64 {
    (r.max.x - r.min.x) + (r.max.y - r.min.y)
}

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
        let grown_w = r.max.x.max(p.x) - r.min.x.min(p.x);
        let grown_h = r.max.y.max(p.y) - r.min.y.min(p.y);
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

/// Guttman's quadratic split of `rects` (M + 1 non-empty items) into two groups of at least
/// `min_fill` each. Writes each item's group (0 or 1) into `scratch.group`; the seeds are the pair
/// wasting the most area together (PickSeeds), then PickNext repeatedly assigns the item with the
/// greatest preference for one group, until one group needs all the remaining items to reach
/// `min_fill`. Margin (half-perimeter) only breaks exact ties, which matter for degenerate input.
fn quadratic_split(scratch: &mut SplitScratch, min_fill: usize) {
    let SplitScratch {
        rects,
        group,
        unassigned,
    } = scratch;
    let k = rects.len();
    debug_assert!(k >= 2 && 2 * min_fill <= k);
    // PickSeeds: the pair whose covering rectangle wastes the most area (ties: the widest pair).
    let (mut s0, mut s1) = (0, 1);
    let mut best_waste = f64::NEG_INFINITY;
    for i in 0..k {
        let (ri, ai) = (rects[i], area_ne(&rects[i]));
        for j in (i + 1)..k {
            let u = ri.union(&rects[j]);
            let waste = area_ne(&u) - ai - area_ne(&rects[j]);
            if waste > best_waste
                || (waste == best_waste && margin_ne(&u) > margin_ne(&rects[s0].union(&rects[s1])))
            {
                (s0, s1, best_waste) = (i, j, waste);
            }
        }
    }
    group.clear();
    group.resize(k, u8::MAX);
    group[s0] = 0;
    group[s1] = 1;
    let mut mbr = [rects[s0], rects[s1]];
    let mut count = [1usize, 1];
    unassigned.clear();
    unassigned.extend((0..k as u32).filter(|&i| i as usize != s0 && i as usize != s1));
    while !unassigned.is_empty() {
        let remaining = unassigned.len();
        // If one group needs every remaining item to reach the minimum fill, it gets them all.
        if let Some(g) = (0..2).find(|&g| count[g] + remaining <= min_fill) {
            for &i in unassigned.iter() {
                group[i as usize] = g as u8;
            }
            break;
        }
        // PickNext: the item with the greatest difference between its enlargements of the groups.
        let (a0, a1) = (area_ne(&mbr[0]), area_ne(&mbr[1]));
        let costs = |r: &Rect| {
            let (u0, u1) = (mbr[0].union(r), mbr[1].union(r));
            let (e0, e1) = (
                margin_ne(&u0) - margin_ne(&mbr[0]),
                margin_ne(&u1) - margin_ne(&mbr[1]),
            );
            (area_ne(&u0) - a0, area_ne(&u1) - a1, e0, e1)
        };
        let mut pick = 0;
        let mut best_diff = f64::NEG_INFINITY;
        for (pos, &i) in unassigned.iter().enumerate() {
            let r = &rects[i as usize];
            let d0 = area_ne(&mbr[0].union(r)) - a0;
            let d1 = area_ne(&mbr[1].union(r)) - a1;
            let diff = (d0 - d1).abs();
            if diff > best_diff {
                (pick, best_diff) = (pos, diff);
            } else if diff == best_diff {
                let (_, _, e0, e1) = costs(r);
                let (_, _, b0, b1) = costs(&rects[unassigned[pick] as usize]);
                if (e0 - e1).abs() > (b0 - b1).abs() {
                    pick = pos;
                }
            }
        }
        let i = unassigned.swap_remove(pick) as usize;
        let (d0, d1, e0, e1) = costs(&rects[i]);
        // Least enlargement, then smaller area, then least margin enlargement, then fewer entries.
        let g = if d0 != d1 {
            usize::from(d1 < d0)
        } else if a0 != a1 {
            usize::from(a1 < a0)
        } else if e0 != e1 {
            usize::from(e1 < e0)
        } else {
            usize::from(count[1] < count[0])
        };
        group[i] = g as u8;
        mbr[g] = mbr[g].union(&rects[i]);
        count[g] += 1;
    }
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

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Live nodes, leaves and internal: the component's size in pages (an empty tree counts 1, its
    /// root leaf).
    pub fn node_count(&self) -> usize {
        self.nodes.len() - self.free.len()
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
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
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

    /// Splits one overfull node: group 0 stays in `n`, group 1 moves to a new node at the same level
    /// (parent link not yet set). Children moved to the new node get their parent link updated.
    fn split_one(&mut self, n: NodeId) -> NodeId {
        self.splits += 1;
        let level = self.nodes[n as usize].level;
        let sibling = self.alloc_node(NO_NODE, level);
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.rects.clear();
        let [node, sib] = self
            .nodes
            .get_disjoint_mut([n as usize, sibling as usize])
            .expect("distinct live nodes");
        if level == 0 {
            scratch
                .rects
                .extend(node.entries.iter().map(|e| Rect::point(e.point)));
            quadratic_split(&mut scratch, self.leaf_min_fill);
            let mut i = 0;
            node.entries.retain(|e| {
                let keep = scratch.group[i] == 0;
                if !keep {
                    sib.entries.push(*e);
                }
                i += 1;
                keep
            });
        } else {
            scratch.rects.extend_from_slice(&node.rects);
            quadratic_split(&mut scratch, self.internal_min_fill);
            let mut w = 0;
            for i in 0..node.children.len() {
                if scratch.group[i] == 0 {
                    node.children[w] = node.children[i];
                    node.rects[w] = node.rects[i];
                    w += 1;
                } else {
                    sib.children.push(node.children[i]);
                    sib.rects.push(node.rects[i]);
                }
            }
            node.children.truncate(w);
            node.rects.truncate(w);
            for idx in 0..self.nodes[sibling as usize].children.len() {
                let c = self.nodes[sibling as usize].children[idx];
                self.nodes[c as usize].parent = sibling;
            }
        }
        self.scratch = scratch;
        sibling
    }

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
    fn after_shrink(&mut self, mut n: NodeId) {
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
        mut keep: impl FnMut(&SpatialEntry) -> bool,
        mut removed: impl FnMut(SpatialEntry),
    ) -> usize {
        let n = self.live_leaf_mut(leaf);
        n.update_counter = 0;
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

    /// Checks the structural invariants: the root has no parent and an internal root has at least two
    /// children; every reachable node is live, links back to its parent and sits one level below it
    /// (so all leaves are at the same depth); no non-root node is empty; capacities are respected;
    /// each MBR stored in a parent is exactly the tight MBR of the child; the entry count, node count,
    /// free list and live-leaf set agree with what is reachable. For tests and debug assertions.
    pub fn check_invariants(&self) -> Result<(), String> {
        let root = self
            .nodes
            .get(self.root as usize)
            .ok_or("root id out of the arena")?;
        if !root.live || root.parent != NO_NODE {
            return Err(format!("root {} is not live or has a parent", self.root));
        }
        if !root.is_leaf() && root.children.len() < 2 {
            return Err(format!(
                "internal root {} has {} children",
                self.root,
                root.children.len()
            ));
        }
        let mut seen = vec![false; self.nodes.len()];
        let (mut entries, mut nodes, mut leaves) = (0usize, 0usize, 0usize);
        let mut stack = vec![self.root];
        while let Some(id) = stack.pop() {
            let n = &self.nodes[id as usize];
            if std::mem::replace(&mut seen[id as usize], true) {
                return Err(format!("node {id} reached twice"));
            }
            if !n.live {
                return Err(format!("node {id} is reachable but free"));
            }
            nodes += 1;
            if id != self.root && n.fanout() == 0 {
                return Err(format!("non-root node {id} is empty"));
            }
            if n.is_leaf() {
                leaves += 1;
                entries += n.entries.len();
                if n.entries.len() > self.leaf_capacity {
                    return Err(format!(
                        "leaf {id} holds {} > {}",
                        n.entries.len(),
                        self.leaf_capacity
                    ));
                }
                if !n.rects.is_empty() || !n.children.is_empty() {
                    return Err(format!("leaf {id} has children"));
                }
                if !self.live_leaves.contains(&id) {
                    return Err(format!("leaf {id} missing from the live-leaf set"));
                }
                continue;
            }
            if !n.entries.is_empty() {
                return Err(format!("internal node {id} holds entries"));
            }
            if n.update_counter != 0 {
                return Err(format!("internal node {id} has an update counter"));
            }
            if n.children.len() > self.internal_capacity || n.children.len() != n.rects.len() {
                return Err(format!(
                    "internal node {id}: {} children, {} rects",
                    n.children.len(),
                    n.rects.len()
                ));
            }
            for (r, &c) in n.rects.iter().zip(&n.children) {
                let child = self
                    .nodes
                    .get(c as usize)
                    .ok_or(format!("child {c} of {id} out of arena"))?;
                if child.parent != id {
                    return Err(format!("child {c} of {id} links to parent {}", child.parent));
                }
                if child.level + 1 != n.level {
                    return Err(format!(
                        "child {c} at level {} under {id} at level {}",
                        child.level, n.level
                    ));
                }
                if *r != child.mbr() {
                    return Err(format!("MBR of {c} in {id} is {r:?}, tight is {:?}", child.mbr()));
                }
                stack.push(c);
            }
        }
        if entries != self.len {
            return Err(format!("len {} but {entries} entries reachable", self.len));
        }
        if nodes != self.node_count() {
            return Err(format!(
                "node_count {} but {nodes} nodes reachable",
                self.node_count()
            ));
        }
        if leaves != self.live_leaves.len() {
            return Err(format!(
                "{} live leaves recorded, {leaves} reachable",
                self.live_leaves.len()
            ));
        }
        let mut in_free = vec![false; self.nodes.len()];
        for &f in &self.free {
            let n = self
                .nodes
                .get(f as usize)
                .ok_or(format!("free id {f} out of arena"))?;
            if n.live || std::mem::replace(&mut in_free[f as usize], true) {
                return Err(format!("free id {f} is live or listed twice"));
            }
        }
        Ok(())
    }
}

impl Default for MemRTree {
    /// A tree with 2 KiB pages, the LSM RUM-tree paper's setting.
    fn default() -> Self {
        MemRTree::new(2048)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn entry(x: f64, y: f64, oid: u64, ts: u64) -> SpatialEntry {
        SpatialEntry::new(Point::new(x, y), oid, ts)
    }

    fn keys(v: impl IntoIterator<Item = SpatialEntry>) -> Vec<(u64, u64)> {
        let mut k: Vec<_> = v.into_iter().map(|e| (e.oid, e.ts)).collect();
        k.sort_unstable();
        k
    }

    fn search_keys(t: &MemRTree, r: &Rect) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        t.search(r, |e| out.push(*e));
        keys(out)
    }

    fn oracle_keys(o: &[SpatialEntry], r: &Rect) -> Vec<(u64, u64)> {
        keys(o.iter().copied().filter(|e| r.contains_point(e.point)))
    }

    /// Every non-root node of an insert-only tree is at least min-fill full.
    fn assert_min_fill(t: &MemRTree) {
        for (id, n) in t.nodes.iter().enumerate() {
            if n.live && id as NodeId != t.root {
                let m = if n.is_leaf() {
                    t.leaf_min_fill
                } else {
                    t.internal_min_fill
                };
                assert!(n.fanout() >= m, "node {id} holds {} < {m}", n.fanout());
            }
        }
    }

    #[test]
    fn capacities_from_page_size() {
        let t = MemRTree::new(2048);
        assert_eq!((t.leaf_capacity(), t.internal_capacity()), (63, 50));
        assert_eq!(t.min_fill(), 26);
        assert_eq!(
            (t.node_count(), t.leaf_count(), t.height(), t.len()),
            (1, 1, 1, 0)
        );
        t.check_invariants().unwrap();
    }

    #[test]
    #[should_panic(expected = ">= 4")]
    fn tiny_capacity_panics() {
        MemRTree::with_capacities(3, 8);
    }

    #[test]
    fn insert_returns_the_leaf_holding_the_entry() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut t = MemRTree::with_capacities(4, 4);
        for ts in 0..2000u64 {
            let e = entry(
                rng.random_range(0.0..100.0),
                rng.random_range(0.0..100.0),
                ts % 50,
                ts,
            );
            let leaf = t.insert(e);
            assert!(t.is_live_leaf(leaf));
            assert!(
                t.leaf_entries(leaf).contains(&e),
                "insert #{ts} returned leaf {leaf} without it"
            );
            assert_eq!(t.choose_leaf(e.point), t.choose_leaf(e.point));
        }
        t.check_invariants().unwrap();
        assert_min_fill(&t);
        assert!(t.splits() > 0);
    }

    #[test]
    fn coincident_and_collinear_points_split_validly() {
        let mut t = MemRTree::with_capacities(4, 4);
        for ts in 0..300u64 {
            t.insert(entry(1.0, 1.0, ts, ts));
            t.insert(entry(ts as f64, 5.0, ts, ts + 1000));
        }
        t.check_invariants().unwrap();
        assert_min_fill(&t);
        assert_eq!(search_keys(&t, &Rect::new(1.0, 1.0, 1.0, 1.0)).len(), 300);
        assert_eq!(search_keys(&t, &Rect::new(10.0, 5.0, 19.0, 5.0)).len(), 10);
    }

    #[test]
    fn update_counters_bump_reset_and_start_at_zero() {
        let mut t = MemRTree::with_capacities(4, 4);
        let leaf = t.insert(entry(0.0, 0.0, 1, 1));
        assert_eq!(t.update_counter(leaf), 0);
        assert_eq!(t.bump_update_counter(leaf), 1);
        assert_eq!(t.bump_update_counter(leaf), 2);
        assert_eq!(t.update_counter(leaf), 2);
        t.reset_update_counter(leaf);
        assert_eq!(t.update_counter(leaf), 0);
        t.bump_update_counter(leaf);
        assert_eq!(t.clean_leaf(leaf, |_| true, |_| panic!("nothing removed")), 0);
        assert_eq!(t.update_counter(leaf), 0, "clean_leaf resets the counter");
        // Fill the root leaf with a bumped counter, then split it: the split leaf keeps its counter,
        // the new sibling starts at 0.
        for i in 2..=4 {
            t.insert(entry(i as f64, 0.0, i, i));
        }
        for _ in 0..3 {
            t.bump_update_counter(leaf);
        }
        t.insert(entry(100.0, 0.0, 5, 5));
        assert_eq!(t.leaf_count(), 2);
        let other = t.next_leaf(Some(leaf)).unwrap();
        assert_ne!(other, leaf);
        assert_eq!(t.update_counter(leaf), 3);
        assert_eq!(t.update_counter(other), 0);
    }

    #[test]
    fn reused_ids_start_with_counter_zero() {
        let mut t = MemRTree::with_capacities(4, 4);
        for i in 0..40u64 {
            t.insert(entry(i as f64, (i % 7) as f64, i, i));
        }
        // Empty one leaf through clean_leaf so its id is freed, bumping every leaf first.
        let mut leaves = Vec::new();
        let mut cur = None;
        for _ in 0..t.leaf_count() {
            cur = t.next_leaf(cur);
            leaves.push(cur.unwrap());
        }
        for &l in &leaves {
            t.bump_update_counter(l);
        }
        let victim = leaves[1];
        t.clean_leaf(victim, |_| false, |_| {});
        assert!(!t.is_live_leaf(victim));
        t.check_invariants().unwrap();
        // Insert until the freed id is reused.
        let mut ts = 1000;
        while !t.nodes[victim as usize].live {
            t.insert(entry((ts % 40) as f64, 3.5, ts, ts));
            ts += 1;
            assert!(ts < 10_000, "freed id never reused");
        }
        assert!(
            t.is_live_leaf(victim),
            "the first split after the clean reuses the id for a leaf"
        );
        assert_eq!(t.update_counter(victim), 0);
        t.check_invariants().unwrap();
    }

    #[test]
    fn next_leaf_visits_every_live_leaf_once_per_cycle() {
        let mut t = MemRTree::with_capacities(5, 4);
        assert_eq!(t.next_leaf(None), None, "empty tree has no leaf to clean");
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for ts in 0..1500u64 {
            t.insert(entry(
                rng.random_range(0.0..1.0),
                rng.random_range(0.0..1.0),
                ts,
                ts,
            ));
        }
        // Remove some to free ids and leave gaps in the arena.
        for ts in (0..1500u64).step_by(3) {
            let mut p = None;
            t.for_each(|e| {
                if e.ts == ts {
                    p = Some(e.point);
                }
            });
            t.remove(p.unwrap(), ts).unwrap();
        }
        t.check_invariants().unwrap();
        for start in [None, Some(0), Some(17), Some(NodeId::MAX)] {
            let mut seen = std::collections::BTreeSet::new();
            let mut cur = start;
            for _ in 0..t.leaf_count() {
                cur = t.next_leaf(cur);
                let l = cur.unwrap();
                assert!(t.is_live_leaf(l));
                assert!(seen.insert(l), "leaf {l} visited twice in one cycle");
            }
            assert_eq!(seen.len(), t.leaf_count());
            assert_eq!(
                t.next_leaf(cur),
                t.next_leaf(start),
                "a cycle ends where it started"
            );
        }
    }

    #[test]
    fn clean_leaf_removes_exactly_the_rejected_entries() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut t = MemRTree::with_capacities(8, 6);
        for ts in 0..800u64 {
            t.insert(entry(
                rng.random_range(0.0..10.0),
                rng.random_range(0.0..10.0),
                ts % 97,
                ts,
            ));
        }
        let mut cur = None;
        let mut total = 0;
        for _ in 0..t.leaf_count() {
            cur = t.next_leaf(cur);
            let leaf = cur.unwrap();
            let before: Vec<SpatialEntry> = t.leaf_entries(leaf).to_vec();
            let expected: Vec<SpatialEntry> = before.iter().copied().filter(|e| e.ts % 3 == 0).collect();
            let mut got = Vec::new();
            t.bump_update_counter(leaf);
            let n = t.clean_leaf(leaf, |e| e.ts % 3 != 0, |e| got.push(e));
            assert_eq!(n, expected.len());
            assert_eq!(keys(got), keys(expected));
            if t.is_live_leaf(leaf) {
                assert_eq!(t.update_counter(leaf), 0);
                assert!(t.leaf_entries(leaf).iter().all(|e| e.ts % 3 != 0));
            }
            total += n;
            t.check_invariants().unwrap();
        }
        assert_eq!(t.len(), 800 - total);
        let mut left = Vec::new();
        t.for_each(|e| left.push(*e));
        assert_eq!(
            keys(left),
            keys(
                (0..800u64)
                    .filter(|ts| ts % 3 != 0)
                    .map(|ts| entry(0.0, 0.0, ts % 97, ts))
            )
        );
    }

    #[test]
    fn remove_prefers_the_largest_ts_and_empties_back_to_one_leaf() {
        let mut t = MemRTree::with_capacities(4, 4);
        let p = Point::new(2.0, 3.0);
        for ts in [5, 9, 7] {
            t.insert(SpatialEntry::new(p, 42, ts));
        }
        for i in 0..30u64 {
            t.insert(entry(i as f64, -(i as f64), 1000 + i, 100 + i));
        }
        assert_eq!(t.remove(p, 42).map(|e| e.ts), Some(9));
        assert_eq!(t.remove(p, 42).map(|e| e.ts), Some(7));
        assert_eq!(t.remove(Point::new(2.0, 3.0001), 42), None);
        assert_eq!(t.remove(p, 43), None);
        assert_eq!(t.remove(p, 42).map(|e| e.ts), Some(5));
        assert_eq!(t.remove(p, 42), None);
        t.check_invariants().unwrap();
        for i in 0..30u64 {
            assert!(t.remove(Point::new(i as f64, -(i as f64)), 1000 + i).is_some());
            t.check_invariants().unwrap();
        }
        assert!(t.is_empty());
        assert_eq!((t.node_count(), t.leaf_count(), t.height()), (1, 1, 1));
        assert_eq!(t.next_leaf(None), None);
        assert!(t.mbr().is_empty());
    }

    #[test]
    fn drain_returns_everything_and_restarts() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let mut t = MemRTree::with_capacities(6, 5);
        let mut all = Vec::new();
        for ts in 0..1000u64 {
            let e = entry(
                rng.random_range(-5.0..5.0),
                rng.random_range(-5.0..5.0),
                ts / 2,
                ts,
            );
            all.push(e);
            t.insert(e);
        }
        let splits = t.splits();
        let out = t.drain();
        assert_eq!(keys(out), keys(all));
        assert!(t.is_empty());
        assert_eq!(
            (t.node_count(), t.leaf_count(), t.height(), t.splits()),
            (1, 1, 1, splits)
        );
        assert!(t.is_live_leaf(0));
        assert_eq!(t.next_leaf(None), None);
        t.check_invariants().unwrap();
        assert_eq!(t.insert(entry(0.0, 0.0, 1, 1)), 0);
        assert_eq!(t.next_leaf(None), Some(0));
        assert_eq!(t.next_leaf(Some(0)), Some(0));
    }

    #[test]
    fn large_randomized_run_with_2k_pages() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
        let mut t = MemRTree::new(2048);
        let mut oracle = Vec::new();
        for ts in 0..50_000u64 {
            // Clustered points: a few hot spots plus uniform noise.
            let (x, y) = if ts % 4 == 0 {
                (rng.random_range(0.0..1000.0), rng.random_range(0.0..1000.0))
            } else {
                let c = (ts % 7) as f64 * 130.0;
                (c + rng.random_range(0.0..20.0), c + rng.random_range(0.0..20.0))
            };
            let e = entry(x, y, ts % 10_000, ts);
            oracle.push(e);
            let leaf = t.insert(e);
            if ts % 5 == 0 {
                t.bump_update_counter(leaf);
            }
        }
        t.check_invariants().unwrap();
        assert_min_fill(&t);
        assert_eq!(t.len(), 50_000);
        let internal = t.node_count() - t.leaf_count();
        assert!(t.leaf_count() >= 50_000 / 63 && t.leaf_count() <= 50_000 / t.min_fill() + 1);
        assert!(
            internal >= 1 && internal * 10 < t.leaf_count(),
            "{internal} internal nodes"
        );
        assert!((3..=4).contains(&t.height()), "height {}", t.height());
        for _ in 0..50 {
            let (x, y) = (rng.random_range(0.0..1000.0), rng.random_range(0.0..1000.0));
            let r = Rect::new(
                x,
                y,
                x + rng.random_range(0.0..200.0),
                y + rng.random_range(0.0..200.0),
            );
            assert_eq!(search_keys(&t, &r), oracle_keys(&oracle, &r));
        }
        // Remove a third, clean with a predicate, re-check.
        for e in oracle.iter().filter(|e| e.ts % 3 == 0) {
            assert_eq!(t.remove(e.point, e.oid), Some(*e));
        }
        oracle.retain(|e| e.ts % 3 != 0);
        let mut cur = None;
        for _ in 0..t.leaf_count() / 2 {
            cur = t.next_leaf(cur);
            t.clean_leaf(cur.unwrap(), |e| e.ts % 5 != 1, |_| {});
        }
        t.check_invariants().unwrap();
        let mut left = Vec::new();
        t.for_each(|e| left.push(*e));
        assert_eq!(left.len(), t.len());
        assert!(left.iter().all(|e| e.ts % 3 != 0));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert {
            x: u8,
            y: u8,
            oid: u8,
        },
        /// Removes the `pick`-th oracle entry (modulo its length), or a missing one if `missing`.
        Remove {
            pick: usize,
            missing: bool,
        },
        /// Cleans the leaf the cursor finds after `after`, dropping entries with `(oid + ts) % m == r`.
        Clean {
            after: u32,
            m: u64,
            r: u64,
        },
        Search {
            x: u8,
            y: u8,
            w: u8,
            h: u8,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u8..24, 0u8..24, 0u8..12).prop_map(|(x, y, oid)| Op::Insert { x, y, oid }),
            2 => (any::<usize>(), prop::bool::weighted(0.1)).prop_map(|(pick, missing)| Op::Remove { pick, missing }),
            1 => (0u32..64, 1u64..4, 0u64..4).prop_map(|(after, m, r)| Op::Clean { after, m, r: r % m }),
            1 => (0u8..24, 0u8..24, 0u8..12, 0u8..12).prop_map(|(x, y, w, h)| Op::Search { x, y, w, h }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn matches_a_brute_force_oracle(
            leaf_cap in 4usize..=8,
            internal_cap in 4usize..=8,
            ops in prop::collection::vec(op(), 1..400),
        ) {
            let mut t = MemRTree::with_capacities(leaf_cap, internal_cap);
            let mut oracle: Vec<SpatialEntry> = Vec::new();
            let everything = Rect::new(-1.0, -1.0, 100.0, 100.0);
            for (ts, op) in ops.into_iter().enumerate() {
                let ts = ts as u64;
                match op {
                    Op::Insert { x, y, oid } => {
                        let e = entry(x as f64, y as f64, oid as u64, ts);
                        let leaf = t.insert(e);
                        prop_assert!(t.leaf_entries(leaf).contains(&e));
                        oracle.push(e);
                    }
                    Op::Remove { pick, missing } => {
                        if missing || oracle.is_empty() {
                            prop_assert_eq!(t.remove(Point::new(0.5, 0.5), 3), None);
                        } else {
                            let target = oracle[pick % oracle.len()];
                            let best = oracle
                                .iter()
                                .enumerate()
                                .filter(|(_, e)| e.point == target.point && e.oid == target.oid)
                                .max_by_key(|(_, e)| e.ts)
                                .map(|(i, _)| i)
                                .unwrap();
                            let expected = oracle.swap_remove(best);
                            prop_assert_eq!(t.remove(target.point, target.oid), Some(expected));
                        }
                    }
                    Op::Clean { after, m, r } => {
                        let Some(leaf) = t.next_leaf(Some(after)) else {
                            prop_assert!(oracle.is_empty());
                            continue;
                        };
                        let keep = |e: &SpatialEntry| (e.oid + e.ts) % m != r;
                        let expected: Vec<SpatialEntry> =
                            t.leaf_entries(leaf).iter().copied().filter(|e| !keep(e)).collect();
                        let mut got = Vec::new();
                        let n = t.clean_leaf(leaf, keep, |e| got.push(e));
                        prop_assert_eq!(n, got.len());
                        prop_assert_eq!(keys(got.iter().copied()), keys(expected));
                        oracle.retain(|o| !got.iter().any(|g| g.ts == o.ts));
                    }
                    Op::Search { x, y, w, h } => {
                        let r = Rect::new(x as f64, y as f64, (x + w) as f64, (y + h) as f64);
                        prop_assert_eq!(search_keys(&t, &r), oracle_keys(&oracle, &r));
                    }
                }
                if let Err(msg) = t.check_invariants() {
                    return Err(TestCaseError::fail(msg));
                }
                prop_assert_eq!(t.len(), oracle.len());
                prop_assert_eq!(search_keys(&t, &everything), oracle_keys(&oracle, &everything));
            }
        }
    }
}
