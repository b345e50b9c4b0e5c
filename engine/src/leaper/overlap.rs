//! The overlap check (§5.3, Algorithm 3): which target blocks overlap a predicted-hot key range.
//!
//! Hot key ranges are kept as a [`HotSet`], sorted disjoint inclusive key intervals (adjacent
//! hot ranges merged). Target blocks are `(first_key, last_key)` pairs in key order, pairwise
//! disjoint (the blocks of one run). Algorithm 3 gives two ways:
//! - binary search (lines 1-8), `O(n log m)` for `n` hot intervals and `m` blocks: for each hot
//!   interval, binary-search the first block ending at or after it, then walk the blocks it
//!   covers;
//! - sort-merge (lines 9-17), `O(m + n)`: one pass over both sorted lists.
//!
//! [`overlapping_blocks`] is the hybrid the paper adopts: it picks whichever costs less for the
//! sizes at hand (`n * log2(m)` against `m + n`). The paper writes the overlap test as
//! `Min(B, b) > Max(A, a)`; with inclusive key bounds a block and a range that share one key
//! overlap, so the test here is `>=`. Blocks that are not sorted and disjoint (not one run's)
//! are checked one by one against the hot set instead, which is always correct.

/// Predicted-hot keys: sorted, disjoint, non-adjacent inclusive intervals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HotSet {
    intervals: Vec<(u64, u64)>,
}

impl HotSet {
    /// From any inclusive intervals (sorted and merged here; inverted ones are swapped).
    pub fn from_intervals(mut iv: Vec<(u64, u64)>) -> HotSet {
        for x in iv.iter_mut() {
            if x.0 > x.1 {
                *x = (x.1, x.0);
            }
        }
        iv.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(iv.len());
        for (lo, hi) in iv {
            match out.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        HotSet { intervals: out }
    }

    /// The keys of the given key ranges.
    pub fn from_ranges(ranges: impl IntoIterator<Item = u64>, range_size: u64) -> HotSet {
        HotSet::from_intervals(
            ranges
                .into_iter()
                .map(|r| super::range_keys(r, range_size))
                .collect(),
        )
    }

    /// The hot key intervals `(lo, hi)`, inclusive, sorted and disjoint.
    pub fn intervals(&self) -> &[(u64, u64)] {
        &self.intervals
    }

    /// Whether no key is hot.
    pub fn is_empty(&self) -> bool {
        self.intervals.is_empty()
    }

    /// Whether any hot key lies in `lo..=hi` (binary search).
    pub fn overlaps(&self, lo: u64, hi: u64) -> bool {
        let i = self.intervals.partition_point(|iv| iv.1 < lo);
        i < self.intervals.len() && self.intervals[i].0 <= hi
    }
}

fn sorted_disjoint(blocks: &[(u64, u64)]) -> bool {
    blocks.iter().all(|b| b.0 <= b.1) && blocks.windows(2).all(|w| w[0].1 < w[1].0)
}

/// Algorithm 3, binary search: indices of the blocks overlapping `hot`, ascending. Blocks must be
/// sorted and disjoint.
pub fn overlapping_blocks_binary(blocks: &[(u64, u64)], hot: &HotSet) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let mut start = 0;
    for &(a, b) in hot.intervals() {
        // The first block (from `start`) that ends at or after the range's first key.
        let mut i = start + blocks[start..].partition_point(|blk| blk.1 < a);
        while i < blocks.len() && blocks[i].0 <= b {
            if out.last() != Some(&i) {
                out.push(i);
            }
            i += 1;
        }
        // The last block walked may reach into the next hot range.
        start = i.saturating_sub(1).max(start);
        if start >= blocks.len() {
            break;
        }
    }
    out
}

/// Algorithm 3, sort-merge: indices of the blocks overlapping `hot`, ascending. Blocks must be
/// sorted and disjoint.
pub fn overlapping_blocks_merge(blocks: &[(u64, u64)], hot: &HotSet) -> Vec<usize> {
    let iv = hot.intervals();
    let mut out: Vec<usize> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < blocks.len() && j < iv.len() {
        let ((ba, bb), (ha, hb)) = (blocks[i], iv[j]);
        if bb.min(hb) >= ba.max(ha) && out.last() != Some(&i) {
            out.push(i);
        }
        match bb.cmp(&hb) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// Which way [`overlapping_blocks`] goes for `m` blocks and `n` hot intervals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverlapMethod {
    /// Each hot interval binary-searched among the blocks (fewer hot intervals than blocks).
    BinarySearch,
    /// Blocks and hot intervals walked together in key order.
    SortMerge,
    /// The blocks were not sorted and disjoint: each checked against the hot set.
    PerBlock,
}

/// The hybrid choice: binary search when `n * ceil(log2(m + 1)) < m + n`, sort-merge otherwise.
pub fn choose_method(m: usize, n: usize) -> OverlapMethod {
    let log_m = (usize::BITS - m.leading_zeros()) as usize; // ceil(log2(m + 1))
    if n.saturating_mul(log_m) < m + n {
        OverlapMethod::BinarySearch
    } else {
        OverlapMethod::SortMerge
    }
}

/// Algorithm 3, hybrid: indices of the blocks overlapping `hot`, ascending, and the method used.
pub fn overlapping_blocks_with(blocks: &[(u64, u64)], hot: &HotSet) -> (Vec<usize>, OverlapMethod) {
    if !sorted_disjoint(blocks) {
        let v = (0..blocks.len())
            .filter(|&i| hot.overlaps(blocks[i].0, blocks[i].1))
            .collect();
        return (v, OverlapMethod::PerBlock);
    }
    match choose_method(blocks.len(), hot.intervals().len()) {
        OverlapMethod::BinarySearch => (
            overlapping_blocks_binary(blocks, hot),
            OverlapMethod::BinarySearch,
        ),
        _ => (overlapping_blocks_merge(blocks, hot), OverlapMethod::SortMerge),
    }
}

/// Algorithm 3, hybrid: indices of the blocks overlapping `hot`, ascending.
pub fn overlapping_blocks(blocks: &[(u64, u64)], hot: &HotSet) -> Vec<usize> {
    overlapping_blocks_with(blocks, hot).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute(blocks: &[(u64, u64)], hot_keys: &[(u64, u64)]) -> Vec<usize> {
        (0..blocks.len())
            .filter(|&i| {
                hot_keys
                    .iter()
                    .any(|&(a, b)| a.min(b) <= blocks[i].1 && blocks[i].0 <= a.max(b))
            })
            .collect()
    }

    /// Sorted disjoint blocks from gaps and lengths.
    fn blocks_from(parts: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let mut k = 0u64;
        parts
            .iter()
            .map(|&(gap, len)| {
                let lo = k + gap;
                k = lo + len + 1;
                (lo, lo + len)
            })
            .collect()
    }

    #[test]
    fn hand_case() {
        // Figure 5's example: blocks [1,150], [201,350], [300,500] are of different runs; take
        // one run [1,150], [151,200], [201,350] and hot keys 160..=170 and 350..=400.
        let blocks = [(1, 150), (151, 200), (201, 350)];
        let hot = HotSet::from_intervals(vec![(350, 400), (160, 170)]);
        assert_eq!(overlapping_blocks_binary(&blocks, &hot), vec![1, 2]);
        assert_eq!(overlapping_blocks_merge(&blocks, &hot), vec![1, 2]);
        assert!(hot.overlaps(400, 900) && !hot.overlaps(171, 349) && hot.overlaps(0, 160));
        // Ranges 2, 3 and 5 of size 10 merge to [20, 39] and [50, 59].
        assert_eq!(
            HotSet::from_ranges([5, 2, 3], 10).intervals(),
            &[(20, 39), (50, 59)]
        );
        assert_eq!(choose_method(1000, 3), OverlapMethod::BinarySearch);
        assert_eq!(choose_method(10, 100), OverlapMethod::SortMerge);
        let (_, how) = overlapping_blocks_with(&[(5, 9), (1, 3)], &hot);
        assert_eq!(how, OverlapMethod::PerBlock);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn all_methods_match_brute_force(
            parts in prop::collection::vec((0u64..20, 0u64..30), 0..60),
            hot_keys in prop::collection::vec((0u64..1500, 0u64..1500), 0..40),
        ) {
            let blocks = blocks_from(&parts);
            let hot = HotSet::from_intervals(hot_keys.clone());
            let want = brute(&blocks, &hot_keys);
            prop_assert_eq!(&overlapping_blocks_binary(&blocks, &hot), &want);
            prop_assert_eq!(&overlapping_blocks_merge(&blocks, &hot), &want);
            prop_assert_eq!(&overlapping_blocks(&blocks, &hot), &want);
            for (i, b) in blocks.iter().enumerate() {
                prop_assert_eq!(hot.overlaps(b.0, b.1), want.contains(&i));
            }
            // Unsorted blocks take the per-block path, still exact.
            let mut rev = blocks.clone();
            rev.reverse();
            let want_rev = brute(&rev, &hot_keys);
            prop_assert_eq!(overlapping_blocks(&rev, &hot), want_rev);
        }
    }
}
