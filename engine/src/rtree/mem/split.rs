//! Guttman's quadratic split (SplitNode with PickSeeds and PickNext): an overfull node's M + 1
//! items go into two groups of at least ⌈40% of capacity⌉ each; the first group stays in the node,
//! the second moves to a new sibling.
//!
//! The items are laid out as a structure of arrays (one array per coordinate, plus the areas) so
//! that the inner loops of PickSeeds and PickNext run over contiguous `f64`s and vectorise; PickNext
//! keeps each unassigned item's enlargement of both groups and recomputes only the group that grew.
//! Both compute exactly the values (and take exactly the decisions, ties included) of the textbook
//! formulation, which the tests keep as a reference.

use super::{area_ne, margin_ne, max_nn, min_nn, MemRTree, NodeId, NO_NODE};
use crate::geom::Rect;

/// Reusable buffers of the quadratic split (no allocation per split once warmed up).
#[derive(Clone, Debug, Default)]
pub(super) struct SplitScratch {
    /// The items' rectangles, one array per coordinate, and their areas.
    lo_x: Vec<f64>,
    lo_y: Vec<f64>,
    hi_x: Vec<f64>,
    hi_y: Vec<f64>,
    area: Vec<f64>,
    /// Group of each item: 0 (stays in the split node) or 1 (moves to the new node).
    group: Vec<u8>,
    /// PickNext's unassigned items (indices), and in the same order their coordinates and their
    /// area enlargement of group 0's and group 1's MBR.
    unassigned: Vec<u32>,
    u_lo_x: Vec<f64>,
    u_lo_y: Vec<f64>,
    u_hi_x: Vec<f64>,
    u_hi_y: Vec<f64>,
    enl: [Vec<f64>; 2],
    /// One row of PickSeeds' wastes, or PickNext's preference differences.
    row: Vec<f64>,
}

impl SplitScratch {
    fn clear(&mut self) {
        for v in [
            &mut self.lo_x,
            &mut self.lo_y,
            &mut self.hi_x,
            &mut self.hi_y,
            &mut self.area,
        ] {
            v.clear();
        }
    }

    fn push(&mut self, r: &Rect) {
        self.lo_x.push(r.min.x);
        self.lo_y.push(r.min.y);
        self.hi_x.push(r.max.x);
        self.hi_y.push(r.max.y);
        self.area.push(area_ne(r));
    }

    fn len(&self) -> usize {
        self.lo_x.len()
    }

    fn rect(&self, i: usize) -> Rect {
        Rect::new(self.lo_x[i], self.lo_y[i], self.hi_x[i], self.hi_y[i])
    }
}

/// ⌈40%⌉ of a capacity: the minimum fill of each group of a split.
pub(super) fn min_fill_of(capacity: usize) -> usize {
    (capacity * 2).div_ceil(5).max(1)
}

/// The largest value of `v` (`-inf` for an empty slice), with a comparison that vectorises.
#[inline]
fn max_of(v: &[f64]) -> f64 {
    let mut lanes = [f64::NEG_INFINITY; 4];
    let chunks = v.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..4 {
            lanes[l] = if c[l] > lanes[l] { c[l] } else { lanes[l] };
        }
    }
    for &x in rest {
        lanes[0] = if x > lanes[0] { x } else { lanes[0] };
    }
    let a = if lanes[1] > lanes[0] { lanes[1] } else { lanes[0] };
    let b = if lanes[3] > lanes[2] { lanes[3] } else { lanes[2] };
    if b > a {
        b
    } else {
        a
    }
}

/// `out[j] = area(g ∪ item j) - area(g)` for every item of the given coordinate arrays, computed
/// as `area_ne(&g.union(r)) - a` is.
#[inline]
fn enlargements(g: &Rect, a: f64, lo_x: &[f64], lo_y: &[f64], hi_x: &[f64], hi_y: &[f64], out: &mut [f64]) {
    let n = out.len();
    let (lo_x, lo_y, hi_x, hi_y) = (&lo_x[..n], &lo_y[..n], &hi_x[..n], &hi_y[..n]);
    for j in 0..n {
        let w = max_nn(g.max.x, hi_x[j]) - min_nn(g.min.x, lo_x[j]);
        let h = max_nn(g.max.y, hi_y[j]) - min_nn(g.min.y, lo_y[j]);
        out[j] = w * h - a;
    }
}

/// Guttman's quadratic split of the items in `scratch` (M + 1 non-empty rectangles) into two
/// groups of at least `min_fill` each. Writes each item's group (0 or 1) into `scratch.group`; the
/// seeds are the pair wasting the most area together (PickSeeds), then PickNext repeatedly assigns
/// the item with the greatest preference for one group, until one group needs all the remaining
/// items to reach `min_fill`. Margin (half-perimeter) only breaks exact ties, which matter for
/// degenerate input.
fn quadratic_split(s: &mut SplitScratch, min_fill: usize) {
    let k = s.len();
    debug_assert!(k >= 2 && 2 * min_fill <= k);
    // PickSeeds: the pair whose covering rectangle wastes the most area (ties: the widest pair),
    // the first such pair in (i, j) order. A row whose largest waste is below the best so far
    // cannot change the pick, so only the other rows are scanned pair by pair.
    let (mut s0, mut s1) = (0, 1);
    let mut best_waste = f64::NEG_INFINITY;
    let mut best_margin = f64::NEG_INFINITY;
    s.row.clear();
    s.row.resize(k, 0.0);
    for i in 0..k.saturating_sub(1) {
        let ri = s.rect(i);
        let ai = s.area[i];
        let n = k - i - 1;
        let row = &mut s.row[..n];
        enlargements(
            &ri,
            ai,
            &s.lo_x[i + 1..],
            &s.lo_y[i + 1..],
            &s.hi_x[i + 1..],
            &s.hi_y[i + 1..],
            row,
        );
        for (w, &aj) in row.iter_mut().zip(&s.area[i + 1..]) {
            *w -= aj;
        }
        if max_of(row) < best_waste {
            continue;
        }
        for off in 0..n {
            let waste = s.row[off];
            if waste > best_waste {
                let j = i + 1 + off;
                (s0, s1, best_waste) = (i, j, waste);
                best_margin = margin_ne(&ri.union(&s.rect(j)));
            } else if waste == best_waste {
                let j = i + 1 + off;
                let m = margin_ne(&ri.union(&s.rect(j)));
                if m > best_margin {
                    (s0, s1, best_margin) = (i, j, m);
                }
            }
        }
    }
    s.group.clear();
    s.group.resize(k, u8::MAX);
    s.group[s0] = 0;
    s.group[s1] = 1;
    let mut mbr = [s.rect(s0), s.rect(s1)];
    let mut count = [1usize, 1];
    s.unassigned.clear();
    s.unassigned
        .extend((0..k as u32).filter(|&i| i as usize != s0 && i as usize != s1));
    for (to, from) in [
        (&mut s.u_lo_x, &s.lo_x),
        (&mut s.u_lo_y, &s.lo_y),
        (&mut s.u_hi_x, &s.hi_x),
        (&mut s.u_hi_y, &s.hi_y),
    ] {
        to.clear();
        to.extend(s.unassigned.iter().map(|&i| from[i as usize]));
    }
    let mut area = [area_ne(&mbr[0]), area_ne(&mbr[1])];
    for g in 0..2 {
        s.enl[g].clear();
        s.enl[g].resize(s.unassigned.len(), 0.0);
        enlargements(
            &mbr[g],
            area[g],
            &s.u_lo_x,
            &s.u_lo_y,
            &s.u_hi_x,
            &s.u_hi_y,
            &mut s.enl[g],
        );
    }
    while !s.unassigned.is_empty() {
        let remaining = s.unassigned.len();
        // If one group needs every remaining item to reach the minimum fill, it gets them all.
        if let Some(g) = (0..2).find(|&g| count[g] + remaining <= min_fill) {
            for &i in s.unassigned.iter() {
                s.group[i as usize] = g as u8;
            }
            break;
        }
        // PickNext: the item with the greatest difference between its enlargements of the groups
        // (the first one; among equal differences, a strictly greater difference between its
        // margin enlargements replaces it).
        let margin_diff = |r: &Rect, mbr: &[Rect; 2]| {
            let e0 = margin_ne(&mbr[0].union(r)) - margin_ne(&mbr[0]);
            let e1 = margin_ne(&mbr[1].union(r)) - margin_ne(&mbr[1]);
            (e0, e1)
        };
        let diffs = &mut s.row[..remaining];
        for ((d, &d0), &d1) in diffs.iter_mut().zip(&s.enl[0]).zip(&s.enl[1]) {
            *d = (d0 - d1).abs();
        }
        let best_diff = max_of(diffs);
        let mut pick = usize::MAX;
        let mut pick_margin = 0.0;
        for pos in 0..remaining {
            if s.row[pos] != best_diff {
                continue;
            }
            let r = Rect::new(s.u_lo_x[pos], s.u_lo_y[pos], s.u_hi_x[pos], s.u_hi_y[pos]);
            let (e0, e1) = margin_diff(&r, &mbr);
            let m = (e0 - e1).abs();
            if pick == usize::MAX || m > pick_margin {
                (pick, pick_margin) = (pos, m);
            }
        }
        let i = s.unassigned.swap_remove(pick) as usize;
        let r = Rect::new(
            s.u_lo_x.swap_remove(pick),
            s.u_lo_y.swap_remove(pick),
            s.u_hi_x.swap_remove(pick),
            s.u_hi_y.swap_remove(pick),
        );
        let (d0, d1) = (s.enl[0].swap_remove(pick), s.enl[1].swap_remove(pick));
        let (e0, e1) = margin_diff(&r, &mbr);
        let (a0, a1) = (area[0], area[1]);
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
        s.group[i] = g as u8;
        mbr[g] = mbr[g].union(&r);
        area[g] = area_ne(&mbr[g]);
        count[g] += 1;
        // Only group g's MBR changed: only its enlargements are recomputed.
        enlargements(
            &mbr[g],
            area[g],
            &s.u_lo_x,
            &s.u_lo_y,
            &s.u_hi_x,
            &s.u_hi_y,
            &mut s.enl[g],
        );
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
        scratch.clear();
        #[allow(clippy::expect_used)] // `sibling` was just allocated, so it is not `n`
        let [node, sib] = self
            .nodes
            .get_disjoint_mut([n as usize, sibling as usize])
            .expect("distinct live nodes");
        if level == 0 {
            for e in &node.entries {
                scratch.push(&Rect::point(e.point));
            }
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
            for r in &node.rects {
                scratch.push(r);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook formulation (every enlargement recomputed in every round), against which the
    /// structure-of-arrays split is checked. Guttman's quadratic split of `rects` (M + 1 non-empty items) into two groups of at least
    /// `min_fill` each. Writes each item's group (0 or 1) into `scratch.group`; the seeds are the pair
    /// wasting the most area together (PickSeeds), then PickNext repeatedly assigns the item with the
    /// greatest preference for one group, until one group needs all the remaining items to reach
    /// `min_fill`. Margin (half-perimeter) only breaks exact ties, which matter for degenerate input.
    fn reference_split(rects: &[Rect], min_fill: usize) -> Vec<u8> {
        let mut group = Vec::new();
        let mut unassigned = Vec::new();
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
        group
    }

    /// Rectangles (or points) on a coarse grid, so that exact ties in waste, enlargement, area and
    /// margin are frequent.
    fn items(seed: u64, k: usize, points: bool, grid: f64) -> Vec<Rect> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 11) as f64 / (1u64 << 53) as f64 * grid).floor()
        };
        (0..k)
            .map(|_| {
                let (a, b) = (next(), next());
                if points {
                    Rect::point(crate::geom::Point::new(a, b))
                } else {
                    let (w, h) = (next() / 4.0, next() / 4.0);
                    Rect::new(a, b, a + w, b + h)
                }
            })
            .collect()
    }

    #[test]
    fn the_structure_of_arrays_split_decides_as_the_textbook_one() {
        let mut s = SplitScratch::default();
        for seed in 0..600u64 {
            let k = [5, 9, 51, 64][seed as usize % 4];
            let points = seed % 3 != 0;
            let grid = [3.0, 10.0, 1000.0, 1e9][(seed / 4) as usize % 4];
            let rects = items(seed, k, points, grid);
            let min_fill = min_fill_of(k - 1);
            s.clear();
            for r in &rects {
                s.push(r);
            }
            quadratic_split(&mut s, min_fill);
            assert_eq!(s.group, reference_split(&rects, min_fill), "seed {seed}");
        }
    }
}
