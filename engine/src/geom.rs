//! Points, rectangles and the Hilbert curve used to order entries for bulk loading.

use serde::{Deserialize, Serialize};

/// A point in the plane (longitude/latitude or any projected coordinates).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Horizontal coordinate (longitude, for geographic data).
    pub x: f64,
    /// Vertical coordinate (latitude, for geographic data).
    pub y: f64,
}

impl Point {
    /// The point `(x, y)`.
    pub const fn new(x: f64, y: f64) -> Self {
        Point { x, y }
    }
}

/// An axis-aligned rectangle, closed on all sides (a point on the border is inside).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rect {
    /// The lower-left corner (smallest x and y).
    pub min: Point,
    /// The upper-right corner (largest x and y); below `min` on an axis for an empty rectangle.
    pub max: Point,
}

impl Rect {
    /// The rectangle with corners `(min_x, min_y)` and `(max_x, max_y)`, taken as given (not normalised).
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

    /// Whether the rectangle contains no point (a minimum above its maximum on either axis).
    pub fn is_empty(&self) -> bool {
        self.min.x > self.max.x || self.min.y > self.max.y
    }

    /// Whether `p` lies inside or on the border.
    pub fn contains_point(&self, p: Point) -> bool {
        p.x >= self.min.x && p.x <= self.max.x && p.y >= self.min.y && p.y <= self.max.y
    }

    /// Whether all of `r` lies inside this rectangle (borders may touch).
    pub fn contains_rect(&self, r: &Rect) -> bool {
        r.min.x >= self.min.x && r.max.x <= self.max.x && r.min.y >= self.min.y && r.max.y <= self.max.y
    }

    /// Whether the two rectangles share at least one point (touching borders count).
    pub fn intersects(&self, r: &Rect) -> bool {
        self.min.x <= r.max.x && r.min.x <= self.max.x && self.min.y <= r.max.y && r.min.y <= self.max.y
    }

    /// The smallest rectangle covering both.
    pub fn union(&self, r: &Rect) -> Rect {
        Rect::new(
            self.min.x.min(r.min.x),
            self.min.y.min(r.min.y),
            self.max.x.max(r.max.x),
            self.max.y.max(r.max.y),
        )
    }

    /// The smallest rectangle covering this one and `p`.
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

    /// Extent along x (negative for an empty rectangle).
    pub fn width(&self) -> f64 {
        self.max.x - self.min.x
    }

    /// Extent along y (negative for an empty rectangle).
    pub fn height(&self) -> f64 {
        self.max.y - self.min.y
    }

    /// The midpoint of the two corners.
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

    /// The curve over `extent`.
    pub fn new(extent: Rect) -> Self {
        HilbertCurve { extent }
    }

    /// The rectangle the grid covers.
    pub fn extent(&self) -> Rect {
        self.extent
    }

    /// The grid cell of `v` along an axis spanning `lo..=hi`: `floor((v - lo) / (hi - lo) * 2^16)`
    /// clamped to `0 ..= 2^16 - 1`; 0 for a NaN `v`, a degenerate axis, or a NaN quotient.
    ///
    /// The float-to-int conversion saturates (negative and NaN to 0, too large to `u32::MAX`), so
    /// `(t as u32).min(side - 1)` equals `t.floor().clamp(0, side - 1) as u32` for every `t`
    /// without calling `floor`, which on baseline x86-64 is a library call.
    #[inline]
    fn cell(v: f64, lo: f64, hi: f64) -> u32 {
        const SIDE: u32 = 1 << HilbertCurve::ORDER;
        if hi <= lo || v.is_nan() {
            return 0;
        }
        let t = (v - lo) / (hi - lo) * f64::from(SIDE);
        (t as u32).min(SIDE - 1)
    }

    /// The Hilbert index of `p` (0 .. 4^16).
    pub fn key(&self, p: Point) -> u64 {
        let x = Self::cell(p.x, self.extent.min.x, self.extent.max.x);
        let y = Self::cell(p.y, self.extent.min.y, self.extent.max.y);
        hilbert_index(Self::ORDER, x, y)
    }
}

/// The xy-to-d conversion of the Hilbert curve on a `2^order` grid (`order` <= 16), as a state
/// machine over the levels of the curve, most significant first.
///
/// The classic iterative conversion ([`hilbert_index_bitwise`]) reads, at each level, the
/// quadrant `(rx, ry)` of the point in coordinates transformed by the levels above; the digit of
/// the level is `(3 * rx) ^ ry`, and the transform grows by a swap of the axes when `ry = 0`, after
/// a complement of both (of their remaining bits) when also `rx = 1`. Swaps and complements
/// commute, so the transform is one of four, "swap or not" and "complement or not", and the
/// transformed bits of a level are the raw bits of `x` and `y` at that level, swapped and/or
/// complemented. [`HILBERT_TABLE`] runs that machine over four levels at once: from a state and
/// four raw bits of each coordinate to the eight bits of the four digits and the next state.
fn hilbert_index(order: u32, x: u32, y: u32) -> u64 {
    debug_assert!(order <= 16, "Hilbert order {order} above 16");
    let mut state = 0u32;
    let mut d = 0u64;
    // Levels above a multiple of four, one at a time.
    let mut level = order;
    while !level.is_multiple_of(HILBERT_LEVELS_PER_STEP) {
        level -= 1;
        let (digit, next) = hilbert_step(state, (x >> level) & 1, (y >> level) & 1);
        d = (d << 2) | u64::from(digit);
        state = next;
    }
    while level > 0 {
        level -= HILBERT_LEVELS_PER_STEP;
        let xs = (x >> level) & 0xf;
        let ys = (y >> level) & 0xf;
        let entry = HILBERT_TABLE[((state << 8) | (xs << 4) | ys) as usize];
        d = (d << 8) | u64::from(entry & 0xff);
        state = u32::from(entry >> 8);
    }
    d
}

/// Levels of the Hilbert curve one [`HILBERT_TABLE`] lookup covers.
const HILBERT_LEVELS_PER_STEP: u32 = 4;

/// One level of the state machine of [`hilbert_index`]: from the state (bit 0: the axes are
/// swapped, bit 1: both are complemented) and the raw bits of `x` and `y` at this level, the
/// level's digit and the next state.
const fn hilbert_step(state: u32, bx: u32, by: u32) -> (u32, u32) {
    let swap = state & 1;
    let complement = (state >> 1) & 1;
    let (tx, ty) = if swap == 1 { (by, bx) } else { (bx, by) };
    let rx = tx ^ complement;
    let ry = ty ^ complement;
    let digit = (3 * rx) ^ ry;
    let not_ry = ry ^ 1;
    let next_swap = swap ^ not_ry;
    let next_complement = complement ^ (rx & not_ry);
    (digit, next_swap | (next_complement << 1))
}

/// [`hilbert_step`] over four levels: indexed by `state << 8 | x_bits << 4 | y_bits` (the four
/// levels' raw bits of each coordinate, most significant first), an entry holds the four digits in
/// its low byte (most significant first) and the next state above them.
static HILBERT_TABLE: [u16; 4 << 8] = {
    let mut table = [0u16; 4 << 8];
    let mut i = 0;
    while i < table.len() {
        let mut state = (i >> 8) as u32;
        let xs = ((i >> 4) & 0xf) as u32;
        let ys = (i & 0xf) as u32;
        let mut digits = 0u32;
        let mut level = HILBERT_LEVELS_PER_STEP;
        while level > 0 {
            level -= 1;
            let (digit, next) = hilbert_step(state, (xs >> level) & 1, (ys >> level) & 1);
            digits = (digits << 2) | digit;
            state = next;
        }
        table[i] = (digits | (state << 8)) as u16;
        i += 1;
    }
    table
};

/// The classic iterative xy-to-d conversion on a 2^order grid, one level per step: the reference
/// [`hilbert_index`] is tested against.
#[cfg(test)]
fn hilbert_index_bitwise(order: u32, mut x: u32, mut y: u32) -> u64 {
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
        for (x, y) in [(0, 0), (0, 1), (1, 1), (1, 0)] {
            assert_eq!(hilbert_index(1, x, y), hilbert_index_bitwise(1, x, y));
        }
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

    /// A xorshift64 stream: test inputs without a dependency.
    fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    #[test]
    fn table_driven_index_equals_the_bitwise_one() {
        // Every cell of every grid up to 2^8 x 2^8.
        for order in 1..=8 {
            let n = 1u32 << order;
            for x in 0..n {
                for y in 0..n {
                    assert_eq!(
                        hilbert_index(order, x, y),
                        hilbert_index_bitwise(order, x, y),
                        "order {order} ({x}, {y})"
                    );
                }
            }
        }
        // Larger grids: random cells, and every pair of edge coordinates (0, 1, the middle, max).
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for order in 9..=HilbertCurve::ORDER {
            let n = 1u32 << order;
            let edges = [0, 1, n / 2 - 1, n / 2, n / 2 + 1, n - 2, n - 1];
            for &x in &edges {
                for &y in &edges {
                    assert_eq!(
                        hilbert_index(order, x, y),
                        hilbert_index_bitwise(order, x, y),
                        "order {order} ({x}, {y})"
                    );
                }
            }
            for _ in 0..200_000 {
                let v = next();
                let (x, y) = ((v as u32) & (n - 1), ((v >> 32) as u32) & (n - 1));
                assert_eq!(
                    hilbert_index(order, x, y),
                    hilbert_index_bitwise(order, x, y),
                    "order {order} ({x}, {y})"
                );
            }
        }
    }

    /// The key as first written: `floor`, `clamp`, then the bitwise conversion.
    fn key_reference(curve: &HilbertCurve, p: Point) -> u64 {
        fn cell(v: f64, lo: f64, hi: f64) -> u32 {
            let side = (1u32 << HilbertCurve::ORDER) as f64;
            if hi <= lo || v.is_nan() {
                return 0;
            }
            let t = ((v - lo) / (hi - lo) * side).floor();
            t.clamp(0.0, side - 1.0) as u32
        }
        let e = curve.extent();
        let x = cell(p.x, e.min.x, e.max.x);
        let y = cell(p.y, e.min.y, e.max.y);
        hilbert_index_bitwise(HilbertCurve::ORDER, x, y)
    }

    #[test]
    fn key_equals_the_reference_key() {
        let extents = [
            Rect::new(0.0, 0.0, 1000.0, 1000.0),
            Rect::new(-180.0, -90.0, 180.0, 90.0),
            Rect::new(0.0, 0.0, 1.0, 1.0),
            Rect::new(1e-300, -1e300, 2e-300, 1e300),
            Rect::new(5.0, 5.0, 5.0, 7.0), // degenerate in x
            Rect::new(5.0, 7.0, 6.0, 3.0), // inverted in y
            Rect::new(f64::NEG_INFINITY, 0.0, f64::INFINITY, 1.0),
            Rect::new(0.0, f64::NAN, 1.0, 1.0),
        ];
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let unit = |v: u64| (v >> 11) as f64 / (1u64 << 53) as f64;
        for extent in extents {
            let curve = HilbertCurve::new(extent);
            let (lo, hi) = (extent.min, extent.max);
            // The borders, the cells' borders next to them, points just outside (clamped) and the
            // special values, on each axis.
            let edges = |lo: f64, hi: f64| {
                vec![
                    lo,
                    hi,
                    (lo + hi) / 2.0,
                    lo - 1.0,
                    hi + 1.0,
                    lo.next_down(),
                    hi.next_up(),
                ]
            };
            let (mut xs, mut ys) = (edges(lo.x, hi.x), edges(lo.y, hi.y));
            for k in [1.0, 2.0, 65535.0, 65536.0] {
                xs.push(lo.x + (hi.x - lo.x) * k / 65536.0);
                ys.push(lo.y + (hi.y - lo.y) * k / 65536.0);
            }
            xs.extend(specials);
            ys.extend(specials);
            for &x in &xs {
                for &y in &ys {
                    let p = Point::new(x, y);
                    assert_eq!(curve.key(p), key_reference(&curve, p), "{p:?} in {extent:?}");
                }
            }
            // Random points over the extent and a margin around it.
            for _ in 0..100_000 {
                let (a, b) = (unit(next()), unit(next()));
                let p = Point::new(
                    lo.x + (hi.x - lo.x) * (a * 1.2 - 0.1),
                    lo.y + (hi.y - lo.y) * (b * 1.2 - 0.1),
                );
                assert_eq!(curve.key(p), key_reference(&curve, p), "{p:?} in {extent:?}");
            }
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
