//! Guttman's quadratic split (SplitNode with PickSeeds and PickNext): an overfull node's M + 1
//! items go into two groups of at least ⌈40% of capacity⌉ each; the first group stays in the node,
//! the second moves to a new sibling.

use super::{area_ne, margin_ne, MemRTree, NodeId, NO_NODE};
use crate::geom::Rect;

/// Reusable buffers of the quadratic split (no allocation per split once warmed up).
#[derive(Clone, Debug, Default)]
pub(super) struct SplitScratch {
    rects: Vec<Rect>,
    /// Group of each item: 0 (stays in the split node) or 1 (moves to the new node).
    group: Vec<u8>,
    unassigned: Vec<u32>,
}

/// ⌈40%⌉ of a capacity: the minimum fill of each group of a split.
pub(super) fn min_fill_of(capacity: usize) -> usize {
    (capacity * 2).div_ceil(5).max(1)
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
    /// Splits one overfull node: group 0 stays in `n`, group 1 moves to a new node at the same level
    /// (parent link not yet set). Children moved to the new node get their parent link updated.
    pub(super) fn split_one(&mut self, n: NodeId) -> NodeId {
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
}
