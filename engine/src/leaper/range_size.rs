//! Key-range selection (§4.1, Algorithm 1 and Definition 1).
//!
//! For a range size `A`, the access bit matrix has one row per time slot and one column per key
//! range (`ceil(T / A)` ranges over the key space `0..T`); a bit is 1 if any key of the range was
//! accessed in the slot. Doubling `A` ORs neighbouring columns, so the share of zeros can only
//! fall: information is lost.
//!
//! **What `Z` is.** Definition 1 calls an expansion from `L` to `L'` efficient iff
//! `Z(L') / Z(L) >= α` with `Z` *the proportion of zeros* in the matrix. Algorithm 1 (line 2)
//! names `Z(A)` "the number of zeroes" and tests `2 · Z(2A) > α · Z(A)` (line 3) and
//! `A* · Z(A*) > α · A · Z(A)` (line 5). The two readings agree: the matrix for `2A` has half as
//! many cells as the one for `A` (`A*` has `A / A*` times as many), so the factors `2` and `A*`,
//! `A` turn the counts into proportions: `2 · count(2A) / count(A) = prop(2A) / prop(A)`. This
//! implementation therefore uses the proportion `Z(A) = zeros / (slots · ceil(T / A))` and the
//! tests `Z(2A) > α · Z(A)` and `Z(A*) > α · Z(A)`, which are exact even when `T / A` is not an
//! integer (where the count form would be off by the rounding of the last column). The strict `>`
//! is Algorithm 1's (Definition 1 writes `>=`).
//!
//! The loop compares each doubling with the size it doubles (not with the initial size). The
//! doubling stops at the key space (one range holding every key). The final binary search looks
//! for the largest `A*` in `[A, 2A)` with `Z(A*) > α · Z(A)`, assuming `Z` falls with the size
//! (it does along powers of two; between them it almost always does).

use super::{AccessRecord, LeaperError, LeaperResult};
use crate::leaper::collector::slot_of;

/// Algorithm 1's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RangeSizeParams {
    /// Initial range size `A` (the paper: 10).
    pub initial: u64,
    /// Decline threshold `α` (the paper: 0.6).
    pub alpha: f64,
}

impl Default for RangeSizeParams {
    fn default() -> Self {
        RangeSizeParams {
            initial: 10,
            alpha: 0.6,
        }
    }
}

/// Algorithm 1's answer and the sizes it evaluated, in order, with their zero proportions.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeSizeChoice {
    /// The chosen range size, in keys.
    pub size: u64,
    /// Each size evaluated, in order, with its zero proportion.
    pub evaluated: Vec<(u64, f64)>,
}

/// Per-slot accessed key intervals (merged, sorted) over the key space `0..key_space`.
#[derive(Clone, Debug)]
pub struct AccessMatrix {
    key_space: u64,
    slots: Vec<Vec<(u64, u64)>>,
    /// Per slot, the keys that exist by its end (`0..live[s]`), when rows count only the ranges
    /// holding keys ([`AccessMatrix::live_from`]); `None`: every row spans the whole key space.
    live: Option<Vec<u64>>,
}

/// Which key ranges a row of Algorithm 1's matrix counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KeySpace {
    /// Every row spans the total key range `T` (Algorithm 1 as written), here the log's largest
    /// key: on a stream that inserts new keys above the loaded ones, the rows of early slots
    /// count ranges that hold no key yet, zeros that no range size removes.
    #[default]
    Whole,
    /// Each row spans the keys that exist by the end of its slot: the loaded keys and every key
    /// accessed up to then (inserts add keys in increasing order).
    Live,
}

impl AccessMatrix {
    /// From per-slot accessed key intervals (inclusive, any order). Every key must lie in
    /// `0..key_space`.
    pub fn new(key_space: u64, slots: Vec<Vec<(u64, u64)>>) -> LeaperResult<Self> {
        if key_space == 0 {
            return Err(LeaperError::Invalid("key_space must be at least 1".into()));
        }
        if slots.is_empty() {
            return Err(LeaperError::Invalid(
                "the access matrix needs at least one slot".into(),
            ));
        }
        let mut out = Vec::with_capacity(slots.len());
        for (s, mut iv) in slots.into_iter().enumerate() {
            for &(lo, hi) in &iv {
                if lo > hi || hi >= key_space {
                    return Err(LeaperError::Invalid(format!(
                        "slot {s}: keys {lo}..={hi} are not an interval inside the key space 0..{key_space}"
                    )));
                }
            }
            iv.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::with_capacity(iv.len());
            for (lo, hi) in iv {
                match merged.last_mut() {
                    Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                    _ => merged.push((lo, hi)),
                }
            }
            out.push(merged);
        }
        Ok(AccessMatrix {
            key_space,
            slots: out,
            live: None,
        })
    }

    /// The same matrix whose row `s` counts only the ranges of keys `0..live`, where `live` is
    /// the larger of `initial_keys` (the keys loaded before the log) and one past the largest key
    /// accessed in slots `0..=s` (capped at the key space).
    pub fn live_from(mut self, initial_keys: u64) -> Self {
        let mut live = initial_keys.clamp(1, self.key_space);
        let rows = self
            .slots
            .iter()
            .map(|iv| {
                if let Some(&(_, hi)) = iv.last() {
                    live = live.max(hi + 1).min(self.key_space);
                }
                live
            })
            .collect();
        self.live = Some(rows);
        self
    }

    /// From a log: one row per slot from the first record's slot to the last's (empty slots are
    /// rows of zeros).
    pub fn from_log(records: &[AccessRecord], key_space: u64, slot_secs: f64) -> LeaperResult<Self> {
        Self::from_records(records.iter().copied(), key_space, slot_secs)
    }

    /// [`AccessMatrix::from_log`] over records read one after another, twice (the slots' bounds,
    /// then the intervals). Each slot's intervals are sorted and merged as soon as a record of
    /// another slot follows (merging again what is merged, with more, merges the same keys: the
    /// matrix is the same), so a log in time order holds the merged intervals of its slots and
    /// the raw ones of a single slot at a time. A slot with an interval outside the key space is
    /// left as logged, for [`AccessMatrix::new`] to name it.
    pub fn from_records<I>(records: I, key_space: u64, slot_secs: f64) -> LeaperResult<Self>
    where
        I: IntoIterator<Item = AccessRecord>,
        I::IntoIter: Clone,
    {
        if !(slot_secs.is_finite() && slot_secs > 0.0) {
            return Err(LeaperError::Invalid(format!(
                "slot_secs must be positive, got {slot_secs}"
            )));
        }
        let records = records.into_iter();
        let bounds = records.clone().fold(None, |b: Option<(u64, u64)>, r| {
            let s = slot_of(r.time, slot_secs);
            Some(b.map_or((s, s), |(lo, hi)| (lo.min(s), hi.max(s))))
        });
        let Some((first, last)) = bounds else {
            return Err(LeaperError::Invalid("the access log is empty".into()));
        };
        let mut slots: Vec<Vec<(u64, u64)>> = vec![Vec::new(); (last - first + 1) as usize];
        let mut open = None;
        for r in records {
            let s = (slot_of(r.time, slot_secs) - first) as usize;
            if open != Some(s) {
                if let Some(o) = open {
                    merge_in_place(&mut slots[o], key_space);
                }
                open = Some(s);
            }
            slots[s].push((r.lo.min(r.hi), r.lo.max(r.hi)));
        }
        AccessMatrix::new(key_space, slots)
    }

    #[cfg(test)]
    /// Time slots of the matrix.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Definition 1's `Z(A)`: the proportion of zeros in the slots x `T / A` bit matrix of
    /// *whole* ranges of `A` keys (with [`AccessMatrix::live_from`], row `s` has `live_s / A`
    /// cells). When `A` does not divide `T`, the keys above the last whole range form no cell of
    /// the matrix: a leftover range of a few keys would otherwise add a cell that is nearly always
    /// zero and let a range size that leaves such a remainder pass the efficiency test for that
    /// reason alone (Algorithm 1's matrix has `T / A` columns). A row with fewer keys than `A`
    /// counts one cell, its single partial range.
    pub fn zero_proportion(&self, size: u64) -> f64 {
        let columns = |keys: u64| if keys == 0 { 0 } else { (keys / size).max(1) };
        let cells: f64 = match &self.live {
            None => columns(self.key_space) as f64 * self.slots.len() as f64,
            Some(live) => live.iter().map(|&l| columns(l) as f64).sum(),
        };
        let mut ones = 0u64;
        for (s, iv) in self.slots.iter().enumerate() {
            let row_keys = self.live.as_ref().map_or(self.key_space, |l| l[s]);
            let limit = columns(row_keys);
            if limit == 0 {
                continue;
            }
            let last = limit - 1;
            // Intervals are sorted and disjoint, so their range intervals are sorted; merge them.
            let mut cur: Option<(u64, u64)> = None;
            for &(lo, hi) in iv {
                let (a, b) = (lo / size, (hi / size).min(last));
                if a > last {
                    break;
                }
                cur = match cur {
                    Some((ca, cb)) if a <= cb => Some((ca, cb.max(b))),
                    Some((ca, cb)) => {
                        ones += cb - ca + 1;
                        Some((a, b))
                    }
                    None => Some((a, b)),
                };
            }
            if let Some((ca, cb)) = cur {
                ones += cb - ca + 1;
            }
        }
        if cells == 0.0 {
            return 0.0;
        }
        (cells - ones as f64) / cells
    }
}

/// Sorts and merges a slot's intervals (as [`AccessMatrix::new`] does), its memory shrunk to
/// them; left as it is when an interval lies outside `0..key_space`.
fn merge_in_place(iv: &mut Vec<(u64, u64)>, key_space: u64) {
    if iv.iter().any(|&(lo, hi)| lo > hi || hi >= key_space) {
        return;
    }
    iv.sort_unstable();
    let mut n = 0;
    for i in 0..iv.len() {
        let (lo, hi) = iv[i];
        if n > 0 && lo <= iv[n - 1].1.saturating_add(1) {
            iv[n - 1].1 = iv[n - 1].1.max(hi);
        } else {
            iv[n] = (lo, hi);
            n += 1;
        }
    }
    iv.truncate(n);
    iv.shrink_to_fit();
}

/// Algorithm 1 over an access log: the key-range size for the workload.
pub fn select_range_size(
    records: &[AccessRecord],
    key_space: u64,
    slot_secs: f64,
    params: RangeSizeParams,
) -> LeaperResult<RangeSizeChoice> {
    select_range_size_matrix(&AccessMatrix::from_log(records, key_space, slot_secs)?, params)
}

/// Algorithm 1 over an access log whose rows count the ranges `key_space` says, `initial_keys`
/// being the keys loaded before the log (used by [`KeySpace::Live`]).
pub fn select_range_size_in(
    records: &[AccessRecord],
    key_space: u64,
    slot_secs: f64,
    params: RangeSizeParams,
    rows: KeySpace,
    initial_keys: u64,
) -> LeaperResult<RangeSizeChoice> {
    select_range_size_of(
        records.iter().copied(),
        key_space,
        slot_secs,
        params,
        rows,
        initial_keys,
    )
}

/// [`select_range_size_in`] over records read one after another (twice: see
/// [`AccessMatrix::from_records`]).
pub fn select_range_size_of<I>(
    records: I,
    key_space: u64,
    slot_secs: f64,
    params: RangeSizeParams,
    rows: KeySpace,
    initial_keys: u64,
) -> LeaperResult<RangeSizeChoice>
where
    I: IntoIterator<Item = AccessRecord>,
    I::IntoIter: Clone,
{
    let m = AccessMatrix::from_records(records, key_space, slot_secs)?;
    let m = match rows {
        KeySpace::Whole => m,
        KeySpace::Live => m.live_from(initial_keys),
    };
    select_range_size_matrix(&m, params)
}

/// Algorithm 1 over an access bit matrix.
pub fn select_range_size_matrix(m: &AccessMatrix, params: RangeSizeParams) -> LeaperResult<RangeSizeChoice> {
    if params.initial == 0 || params.initial > m.key_space {
        return Err(LeaperError::Invalid(format!(
            "initial range size {} must lie in 1..={}",
            params.initial, m.key_space
        )));
    }
    if !(params.alpha > 0.0 && params.alpha <= 1.0) {
        return Err(LeaperError::Invalid(format!(
            "alpha must lie in (0, 1], got {}",
            params.alpha
        )));
    }
    let mut evaluated = Vec::new();
    let mut z = |size: u64| {
        let v = m.zero_proportion(size);
        evaluated.push((size, v));
        v
    };
    // Lines 1-4: double while the expansion is efficient.
    let mut a = params.initial;
    let mut za = z(a);
    while a.saturating_mul(2) <= m.key_space {
        let a2 = a * 2;
        let z2 = z(a2);
        if z2 > params.alpha * za {
            a = a2;
            za = z2;
        } else {
            break;
        }
    }
    // Line 5: the largest A* in [A, 2A) with Z(A*) > α · Z(A).
    let target = params.alpha * za;
    let mut size = a;
    if za > 0.0 && a < m.key_space {
        let hi_cap = a.saturating_mul(2).min(m.key_space);
        let (mut lo, mut hi) = (a, hi_cap);
        if hi_cap < a.saturating_mul(2) && z(hi_cap) > target {
            // Capped at the key space and still efficient: one range holds every key.
            lo = hi_cap;
            hi = hi_cap;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if z(mid) > target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        size = lo;
    }
    Ok(RangeSizeChoice { size, evaluated })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point_slots(slots: &[&[u64]]) -> Vec<Vec<(u64, u64)>> {
        slots
            .iter()
            .map(|s| s.iter().map(|&k| (k, k)).collect())
            .collect()
    }

    #[test]
    fn zero_proportion_by_hand() {
        let m = AccessMatrix::new(80, point_slots(&[&[0, 20, 40, 60], &[5]])).unwrap();
        // A = 10: 8 ranges per slot; slot 0 has 4 ones, slot 1 one: 11 zeros of 16.
        assert_eq!(m.zero_proportion(10), 11.0 / 16.0);
        // A = 20: 4 ranges; 4 + 1 ones: 3 zeros of 8.
        assert_eq!(m.zero_proportion(20), 3.0 / 8.0);
        // A = 30: 2 whole ranges (keys 60..=79 form no cell); keys 0, 20 -> 0; 40 -> 1; 60 is
        // outside; 5 -> 0: 3 ones, 1 zero of 4.
        assert_eq!(m.zero_proportion(30), 1.0 / 4.0);
        // Scans cover every range they touch.
        let m = AccessMatrix::new(100, vec![vec![(15, 42), (40, 44)]]).unwrap();
        assert_eq!(m.zero_proportion(10), 6.0 / 10.0);
    }

    #[test]
    fn stops_at_once_then_binary_search() {
        // T = 80, one slot with keys 0, 20, 40, 60. Z(10) = 4/8 = 0.5, Z(20) = 0: doubling is not
        // efficient (0 <= 0.3). Binary search in [10, 20) for Z > 0.3 over whole ranges: Z(15) =
        // 1/5 (5 ranges, all but range 3 accessed) fails, Z(12) = Z(13) = 2/6 pass, Z(14) = 1/5
        // fails: the answer is 13.
        let m = AccessMatrix::new(80, point_slots(&[&[0, 20, 40, 60]])).unwrap();
        let c = select_range_size_matrix(&m, RangeSizeParams::default()).unwrap();
        assert_eq!(c.size, 13);
        let sizes: Vec<u64> = c.evaluated.iter().map(|e| e.0).collect();
        assert_eq!(sizes, vec![10, 20, 15, 12, 13, 14]);
    }

    #[test]
    fn doubles_while_efficient() {
        // T = 1280, key 0 accessed in both of two slots. Z(A) = 1 - A/1280 for A a power-of-two
        // multiple of 10: each doubling keeps Z(2A)/Z(A) > 0.6 up to A = 640 (Z = 0.5 vs 0.75);
        // Z(1280) = 0 is not efficient. In (640, 1280) every size has one whole range, always
        // accessed (Z = 0): the answer is 640. (Counting the leftover partial range as a second
        // cell, never accessed, would give Z = 0.5 and the answer 1279: a range size chosen for its
        // remainder.)
        let m = AccessMatrix::new(1280, point_slots(&[&[0], &[3]])).unwrap();
        let c = select_range_size_matrix(&m, RangeSizeParams::default()).unwrap();
        assert_eq!(c.size, 640);
        assert_eq!(
            c.evaluated[..8].iter().map(|e| e.0).collect::<Vec<_>>(),
            vec![10, 20, 40, 80, 160, 320, 640, 1280]
        );
        // A stricter alpha stops earlier: with alpha 0.9, Z(40)/Z(20) = (31/32)/(63/64) = 0.984 ...
        // Z(160)/Z(80) = (7/8)/(15/16) = 0.933 passes, Z(320)/Z(160) = 0.857 fails; binary search in
        // [160, 320) for Z > 0.9 * 7/8 = 0.7875: Z(x) = 1 - 1/floor(1280/x) > 0.7875 needs at least
        // 5 whole ranges, x <= 256: the answer is 256.
        let c = select_range_size_matrix(
            &m,
            RangeSizeParams {
                initial: 10,
                alpha: 0.9,
            },
        )
        .unwrap();
        assert_eq!(c.size, 256);
    }

    #[test]
    fn count_form_would_differ_from_unscaled_counts() {
        // T = 160, keys 0..=39 accessed in one slot. As proportions Z(10) = 12/16 = Z(20) = 6/8
        // = 0.75: the doubling is efficient. Raw zero counts without line 3's factor 2 would
        // compare 6 with 0.6 * 12 = 7.2 and stop at 10.
        let m = AccessMatrix::new(160, vec![vec![(0, 39)]]).unwrap();
        assert_eq!(m.zero_proportion(10), 0.75);
        assert_eq!(m.zero_proportion(20), 0.75);
        assert_eq!(m.zero_proportion(40), 0.75);
        assert_eq!(m.zero_proportion(80), 0.5);
        let c = select_range_size_matrix(&m, RangeSizeParams::default()).unwrap();
        // 10 -> 20 -> 40 -> 80 (0.5 > 0.45) -> 160 (Z = 0, stop); in (80, 160) there is one whole
        // range, accessed (Z = 0 <= 0.3): the answer is 80.
        assert_eq!(c.size, 80);
    }

    #[test]
    fn everything_accessed_stays_at_initial_and_bad_input_is_an_error() {
        let m = AccessMatrix::new(100, vec![vec![(0, 99)]]).unwrap();
        assert_eq!(
            select_range_size_matrix(&m, RangeSizeParams::default())
                .unwrap()
                .size,
            10
        );
        assert!(AccessMatrix::new(100, vec![vec![(0, 100)]]).is_err());
        assert!(AccessMatrix::new(100, vec![]).is_err());
        assert!(select_range_size_matrix(
            &m,
            RangeSizeParams {
                initial: 0,
                alpha: 0.6
            }
        )
        .is_err());
        assert!(select_range_size_matrix(
            &m,
            RangeSizeParams {
                initial: 10,
                alpha: 1.5
            }
        )
        .is_err());
        assert!(select_range_size(&[], 100, 1.0, RangeSizeParams::default()).is_err());
    }

    #[test]
    fn live_rows_count_only_the_ranges_that_hold_keys() {
        // 40 keys loaded; slot 0 reads key 5, slot 1 inserts 40..=79 (scan-like interval), slot
        // 2 reads key 75. Whole: 8 ranges of 10 per row, ones 1 + 4 + 1: 18 zeros of 24. Live:
        // rows of 4, 8 and 8 ranges: 14 zeros of 20.
        let m = AccessMatrix::new(80, vec![vec![(5, 5)], vec![(40, 79)], vec![(75, 75)]]).unwrap();
        assert_eq!(m.zero_proportion(10), 18.0 / 24.0);
        let live = m.live_from(40);
        assert_eq!(live.zero_proportion(10), 14.0 / 20.0);
        // A = 20: rows of 2, 4, 4 ranges; ones 1 + 2 + 1: 6 zeros of 10.
        assert_eq!(live.zero_proportion(20), 6.0 / 10.0);
        // The frontier's zeros keep Z from falling with the size: on a log that appends beyond
        // 1,000 loaded keys and reads every loaded range, Whole doubles to the whole space while
        // Live stays at the initial size.
        let mut log = Vec::new();
        for s in 0..50u64 {
            for k in (0..1000 + 20 * s).step_by(10) {
                log.push(AccessRecord::read(s as f64 + 0.5, k));
            }
        }
        let whole = select_range_size_in(&log, 2000, 1.0, RangeSizeParams::default(), KeySpace::Whole, 1000);
        let live = select_range_size_in(&log, 2000, 1.0, RangeSizeParams::default(), KeySpace::Live, 1000);
        assert!(whole.unwrap().size >= 320);
        assert_eq!(live.unwrap().size, 10);
    }

    #[test]
    fn from_log_rows_are_slots() {
        let log = [
            AccessRecord::read(0.5, 3),
            AccessRecord::scan(2.2, 10, 25),
            AccessRecord::write(2.9, 99),
        ];
        let m = AccessMatrix::from_log(&log, 100, 1.0).unwrap();
        assert_eq!(m.slots(), 3);
        // A = 10: slot 0 one range, slot 1 none, slot 2 ranges 1, 2, 9: 26 zeros of 30.
        assert_eq!(m.zero_proportion(10), 26.0 / 30.0);
    }

    /// The matrix as [`AccessMatrix::from_log`] built it before it merged slots as it went: every
    /// slot's raw intervals, then [`AccessMatrix::new`].
    fn unmerged(log: &[AccessRecord], key_space: u64, slot_secs: f64) -> LeaperResult<AccessMatrix> {
        let slot = |r: &AccessRecord| slot_of(r.time, slot_secs);
        let first = log.iter().map(slot).min().unwrap();
        let last = log.iter().map(slot).max().unwrap();
        let mut slots = vec![Vec::new(); (last - first + 1) as usize];
        for r in log {
            slots[(slot(r) - first) as usize].push((r.lo.min(r.hi), r.lo.max(r.hi)));
        }
        AccessMatrix::new(key_space, slots)
    }

    #[test]
    fn merging_slots_as_they_end_builds_the_same_matrix() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        for case in 0..200 {
            let n = rng.random_range(1..400);
            let key_space = rng.random_range(1..300u64);
            let mut t = 0.0;
            let log: Vec<AccessRecord> = (0..n)
                .map(|_| {
                    // mostly in time order, some records going back (any order is accepted)
                    t = if rng.random_bool(0.1) {
                        rng.random_range(0.0..t + 1.0)
                    } else {
                        t + rng.random_range(0.0..0.7)
                    };
                    let lo = rng.random_range(0..key_space);
                    let hi = if rng.random_bool(0.3) {
                        rng.random_range(0..key_space)
                    } else {
                        lo
                    };
                    if rng.random_bool(0.5) {
                        AccessRecord::scan(t, lo, hi)
                    } else {
                        AccessRecord::write(t, lo)
                    }
                })
                .collect();
            let want = unmerged(&log, key_space, 1.0).unwrap();
            let got = AccessMatrix::from_log(&log, key_space, 1.0).unwrap();
            assert_eq!(got.slots, want.slots, "case {case}");
            assert_eq!(got.key_space, want.key_space);
            let from_compact = AccessMatrix::from_records(
                log.iter().copied().collect::<crate::leaper::AccessLog>().iter(),
                key_space,
                1.0,
            )
            .unwrap();
            assert_eq!(from_compact.slots, want.slots, "case {case}");
        }
        // a key outside the key space is named as before, in its slot, not merged away
        let log = [
            AccessRecord::read(0.5, 3),
            AccessRecord::read(0.6, 5),
            AccessRecord::scan(1.5, 4, 120),
            AccessRecord::read(1.7, 2),
            AccessRecord::read(2.5, 1),
        ];
        let want = unmerged(&log, 100, 1.0).unwrap_err().to_string();
        assert_eq!(
            AccessMatrix::from_log(&log, 100, 1.0).unwrap_err().to_string(),
            want
        );
        assert!(want.contains("slot 1: keys 4..=120"), "{want}");
    }
}
