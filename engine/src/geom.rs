//! Points, rectangles and the Hilbert curve used to order entries for bulk loading.

use serde::{Deserialize, Serialize};

/// A point in the plane (longitude/latitude or any projected coordinates).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

impl Point {
    pub const fn new(x: f64, y: f64) -> Self {
        Point { x, y }
    }
}

/// An axis-aligned rectangle, closed on all sides (a point on the border is inside).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rect {
    pub min: Point,
    pub max: Point,
}

impl Rect {
    pub const fn new(min_x: f64, min_y: f64, max_x: f64, max_y: f64) -> Self {
        Rect {
            min: Point { x: min_x, y: min_y },
            max: Point { x: max_x, y: max_y },
        }
    }

    /// The degenerate rectangle covering exactly one point.
    pub const fn point(p: Point) -> Self {
        Rect { min: p, max: p }
    }

    /// The identity of [`Rect::union`]: contains nothing, and `empty().union(r) == r`.
    pub const fn empty() -> Self {
        Rect::new(f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY)
    }

    pub fn is_empty(&self) -> bool {
        self.min.x > self.max.x || self.min.y > self.max.y
    }

    pub fn contains_point(&self, p: Point) -> bool {
        p.x >= self.min.x && p.x <= self.max.x && p.y >= self.min.y && p.y <= self.max.y
    }

    pub fn contains_rect(&self, r: &Rect) -> bool {
        r.min.x >= self.min.x && r.max.x <= self.max.x && r.min.y >= self.min.y && r.max.y <= self.max.y
    }

    pub fn intersects(&self, r: &Rect) -> bool {
        self.min.x <= r.max.x && r.min.x <= self.max.x && self.min.y <= r.max.y && r.min.y <= self.max.y
    }

    pub fn union(&self, r: &Rect) -> Rect {
        Rect::new(
            self.min.x.min(r.min.x),
            self.min.y.min(r.min.y),
            self.max.x.max(r.max.x),
            self.max.y.max(r.max.y),
        )
    }

    pub fn union_point(&self, p: Point) -> Rect {
        self.union(&Rect::point(p))
    }

    /// Area; 0 for an empty rectangle.
    pub fn area(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            (self.max.x - self.min.x) * (self.max.y - self.min.y)
        }
    }

    /// How much this rectangle's area grows if it is made to cover `r` (Guttman's ChooseLeaf cost).
    pub fn enlargement(&self, r: &Rect) -> f64 {
        self.union(r).area() - self.area()
    }

    pub fn width(&self) -> f64 {
        self.max.x - self.min.x
    }

    pub fn height(&self) -> f64 {
        self.max.y - self.min.y
    }

    pub fn center(&self) -> Point {
        Point::new((self.min.x + self.max.x) / 2.0, (self.min.y + self.max.y) / 2.0)
    }

    /// The square-ish box of side `fraction` times this rectangle's width and height, centred on
    /// `c` (the query boxes of the LSM RUM-tree paper's Figure 6).
    pub fn box_around(&self, c: Point, fraction: f64) -> Rect {
        let hw = self.width() * fraction / 2.0;
        let hh = self.height() * fraction / 2.0;
        Rect::new(c.x - hw, c.y - hh, c.x + hw, c.y + hh)
    }
}

/// Maps points inside a fixed extent to their position on a Hilbert curve of order 16 (a 65536 x
/// 65536 grid). Flush and merge sort entries by this key before bulk loading a packed R-tree, as
/// the LSM RUM-tree paper's authors do (Section 4.3 of the paper mentions Z-order or Hilbert; their
/// code uses Hilbert). Points outside the extent are clamped to its border.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HilbertCurve {
    extent: Rect,
}

impl HilbertCurve {
    /// Cells per side: 2^ORDER.
    pub const ORDER: u32 = 16;

    pub fn new(extent: Rect) -> Self {
        HilbertCurve { extent }
    }

    pub fn extent(&self) -> Rect {
        self.extent
    }

    fn cell(v: f64, lo: f64, hi: f64) -> u32 {
        let side = (1u32 << Self::ORDER) as f64;
        if hi <= lo || v.is_nan() {
            return 0;
        }
        let t = ((v - lo) / (hi - lo) * side).floor();
        t.clamp(0.0, side - 1.0) as u32
    }

    /// The Hilbert index of `p` (0 .. 4^16).
    pub fn key(&self, p: Point) -> u64 {
        let x = Self::cell(p.x, self.extent.min.x, self.extent.max.x);
        let y = Self::cell(p.y, self.extent.min.y, self.extent.max.y);
        hilbert_index(Self::ORDER, x, y)
    }
}

/// The classic iterative xy-to-d conversion on a 2^order grid.
fn hilbert_index(order: u32, mut x: u32, mut y: u32) -> u64 {
    let n: u32 = 1 << order;
    let mut d: u64 = 0;
    let mut s = n / 2;
    while s > 0 {
        let rx = u32::from(x & s > 0);
        let ry = u32::from(y & s > 0);
        d += (s as u64) * (s as u64) * ((3 * rx) ^ ry) as u64;
        // rotate the quadrant
        if ry == 0 {
            if rx == 1 {
                x = s.wrapping_mul(2).wrapping_sub(1).wrapping_sub(x) & (n - 1);
                y = s.wrapping_mul(2).wrapping_sub(1).wrapping_sub(y) & (n - 1);
            }
            std::mem::swap(&mut x, &mut y);
        }
        s /= 2;
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hilbert_order_1_visits_quadrants_in_u_shape() {
        assert_eq!(hilbert_index(1, 0, 0), 0);
        assert_eq!(hilbert_index(1, 0, 1), 1);
        assert_eq!(hilbert_index(1, 1, 1), 2);
        assert_eq!(hilbert_index(1, 1, 0), 3);
    }

    #[test]
    fn hilbert_is_a_bijection_with_unit_steps_on_small_grid() {
        let order = 4;
        let n = 1u32 << order;
        let mut seen = vec![None; (n * n) as usize];
        for x in 0..n {
            for y in 0..n {
                let d = hilbert_index(order, x, y) as usize;
                assert!(seen[d].is_none(), "index {d} hit twice");
                seen[d] = Some((x, y));
            }
        }
        for w in seen.windows(2) {
            let (a, b) = (w[0].unwrap(), w[1].unwrap());
            let dist = a.0.abs_diff(b.0) + a.1.abs_diff(b.1);
            assert_eq!(dist, 1, "consecutive cells {a:?} {b:?} are not neighbours");
        }
    }

    #[test]
    fn rect_predicates() {
        let r = Rect::new(0.0, 0.0, 10.0, 10.0);
        assert!(r.contains_point(Point::new(10.0, 0.0)));
        assert!(!r.contains_point(Point::new(10.1, 0.0)));
        assert!(r.intersects(&Rect::new(10.0, 10.0, 20.0, 20.0)));
        assert!(!r.intersects(&Rect::new(10.5, 10.0, 20.0, 20.0)));
        assert_eq!(Rect::empty().union(&r), r);
        assert_eq!(r.enlargement(&Rect::new(0.0, 0.0, 20.0, 10.0)), 100.0);
    }
}
