//! The packing order of a bulk load: entries sorted by their Hilbert key, ties broken by oid and
//! then timestamp (LSM RUM-tree paper, Section 4.3; the authors' code packs along the Hilbert
//! curve).
//!
//! The order is exactly that of a comparison sort on `(key, oid, ts)` that keeps equal entries in
//! input order; it is computed with one key per entry and a least-significant-digit radix sort on
//! the keys (stable, so input order survives), after which only runs of equal keys, rare for
//! distinct points, are ordered by `(oid, ts)` with a stable sort.

use super::SpatialEntry;
use crate::geom::HilbertCurve;

/// Bits of a Hilbert key: two per level of the curve.
const KEY_BITS: u32 = 2 * HilbertCurve::ORDER;
/// Bits sorted per radix pass: 256 buckets, whose write positions the scatter keeps in cache (2048
/// buckets of 11-bit digits, one pass fewer, scattered about 10% slower over 100k keys).
const DIGIT_BITS: u32 = 8;
const BUCKETS: usize = 1 << DIGIT_BITS;

/// Sorts `entries` into packing order (see the module documentation).
///
/// Up to 2^32 entries, what is sorted is one `u64` per entry, its key above its input position:
/// a fifth of the bytes an (key, entry) pair moves per radix pass, and ties in the key stay in
/// input order as the stable sort keeps them. The entries are then gathered once in that order.
pub fn hilbert_sort(curve: &HilbertCurve, entries: &mut [SpatialEntry]) {
    let tag = u32::try_from(entries.len().saturating_sub(1)).is_ok();
    sort(curve, entries, tag);
}

/// [`hilbert_sort`], sorting tagged keys if `tag` (which needs at most 2^32 entries), else
/// (key, entry) pairs.
fn sort(curve: &HilbertCurve, entries: &mut [SpatialEntry], tag: bool) {
    const { assert!(KEY_BITS <= 32) };
    let n = entries.len();
    if n < 2 {
        return;
    }
    if tag {
        let mut tagged: Vec<u64> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (curve.key(e.point) << 32) | i as u64)
            .collect();
        radix_sort(&mut tagged, |t| t >> 32);
        let input = entries.to_vec();
        for (slot, t) in entries.iter_mut().zip(&tagged) {
            *slot = input[(t & u64::from(u32::MAX)) as usize];
        }
        order_ties(entries, |i| tagged[i] >> 32);
    } else {
        let mut keyed: Vec<(u64, SpatialEntry)> = entries.iter().map(|e| (curve.key(e.point), *e)).collect();
        radix_sort(&mut keyed, |(k, _)| *k);
        for (slot, (_, e)) in entries.iter_mut().zip(&keyed) {
            *slot = *e;
        }
        order_ties(entries, |i| keyed[i].0);
    }
}

/// Orders each run of equal keys (`key(i)` is the key of `entries[i]`, sorted) by `(oid, ts)`,
/// stably.
fn order_ties(entries: &mut [SpatialEntry], key: impl Fn(usize) -> u64) {
    let n = entries.len();
    let mut i = 0;
    while i < n {
        let k = key(i);
        let mut j = i + 1;
        while j < n && key(j) == k {
            j += 1;
        }
        if j - i > 1 {
            entries[i..j].sort_by_key(|e| (e.oid, e.ts));
        }
        i = j;
    }
}

/// Radix passes: enough digits to cover a key.
const PASSES: usize = KEY_BITS.div_ceil(DIGIT_BITS) as usize;

/// Stable LSD radix sort of `v` by `key`, whose values lie below `2^KEY_BITS`.
///
/// One read of `v` counts the digits of every pass at once; a pass whose digit is the same for
/// every key would not move anything and is skipped.
fn radix_sort<T: Copy>(v: &mut Vec<T>, key: impl Fn(&T) -> u64) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let mut counts = vec![[0usize; BUCKETS]; PASSES];
    for item in v.iter() {
        let k = key(item);
        for (p, c) in counts.iter_mut().enumerate() {
            c[(k >> (p as u32 * DIGIT_BITS)) as usize & (BUCKETS - 1)] += 1;
        }
    }
    let mut other: Vec<T> = vec![v[0]; n];
    for (p, c) in counts.iter_mut().enumerate() {
        if c.contains(&n) {
            continue;
        }
        // Counts to starting offsets.
        let mut sum = 0;
        for b in c.iter_mut() {
            let k = *b;
            *b = sum;
            sum += k;
        }
        let shift = p as u32 * DIGIT_BITS;
        for item in v.iter() {
            let d = (key(item) >> shift) as usize & (BUCKETS - 1);
            other[c[d]] = *item;
            c[d] += 1;
        }
        std::mem::swap(v, &mut other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Point, Rect};
    use proptest::prelude::*;

    fn oracle(curve: &HilbertCurve, es: &[SpatialEntry]) -> Vec<SpatialEntry> {
        let mut v = es.to_vec();
        v.sort_by_key(|e| (curve.key(e.point), e.oid, e.ts));
        v
    }

    proptest! {
        #[test]
        fn matches_a_stable_comparison_sort(
            pts in prop::collection::vec(
                (prop_oneof![(0u32..8).prop_map(f64::from), 0.0f64..100.0],
                 prop_oneof![(0u32..8).prop_map(f64::from), 0.0f64..100.0],
                 0u64..20, 0u64..4),
                0..400),
        ) {
            let curve = HilbertCurve::new(Rect::new(0.0, 0.0, 100.0, 100.0));
            let es: Vec<SpatialEntry> =
                pts.iter().map(|&(x, y, oid, ts)| SpatialEntry::new(Point::new(x, y), oid, ts)).collect();
            let mut got = es.clone();
            hilbert_sort(&curve, &mut got);
            prop_assert_eq!(&got, &oracle(&curve, &es));
            let mut untagged = es.clone();
            sort(&curve, &mut untagged, false);
            prop_assert_eq!(untagged, got);
        }
    }

    #[test]
    fn large_inputs_match_too() {
        let curve = HilbertCurve::new(Rect::new(0.0, 0.0, 1.0, 1.0));
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let es: Vec<SpatialEntry> = (0..20_000)
            .map(|i| {
                let (a, b) = (next(), next());
                let p = Point::new((a % 1_000_000) as f64 / 1e6, (b % 1_000_000) as f64 / 1e6);
                SpatialEntry::new(p, i % 5_000, i)
            })
            .collect();
        let mut got = es.clone();
        hilbert_sort(&curve, &mut got);
        assert_eq!(got, oracle(&curve, &es));
        let mut untagged = es.clone();
        sort(&curve, &mut untagged, false);
        assert_eq!(untagged, got);
    }
}
