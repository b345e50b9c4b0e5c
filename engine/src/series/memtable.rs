//! One memtable: points ordered by key, with the bookkeeping DIOL's policies read.

use std::collections::BTreeMap;

use super::{Key, RunKind, Seq, SeriesId, Timestamp, Value};

/// A memtable. The authors keep an `unordered_map` and scan it for ranges; an ordered map gives
/// the same answers and lets range reads and DIOL's merges visit only the keys in range.
#[derive(Debug)]
pub(crate) struct Memtable {
    pub kind: RunKind,
    pub points: BTreeMap<Key, (Value, Seq)>,
    /// Smallest and largest key ever held since the last [`Memtable::refresh_bounds`] (a
    /// conservative filter: removals do not shrink it).
    lo: Key,
    hi: Key,
    /// Accesses by reads while immutable (a point read adds 1, a range read the points it found).
    pub access: u64,
    /// DIOL's time to live (M1/M2).
    pub ttl: i64,
    /// DIOL's estimate of delayed points missing from a sealed normal memtable
    /// (`DelayDetector::detect`: span of times minus points held).
    pub delay_count: u64,
}

impl Memtable {
    pub fn new(kind: RunKind) -> Memtable {
        Memtable {
            kind,
            points: BTreeMap::new(),
            lo: (SeriesId::MAX, Timestamp::MAX),
            hi: (0, 0),
            access: 0,
            ttl: 0,
            delay_count: 0,
        }
    }

    pub fn len(&self) -> u64 {
        self.points.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The smallest and largest key held.
    pub fn bounds(&self) -> Option<(Key, Key)> {
        let lo = self.points.first_key_value()?.0;
        let hi = self.points.last_key_value()?.0;
        Some((*lo, *hi))
    }

    /// Whether `key` may be held (cached bounds; no map access).
    pub fn may_hold(&self, key: Key) -> bool {
        self.lo <= key && key <= self.hi
    }

    /// Whether keys in `[lo, hi]` may be held.
    pub fn may_meet(&self, lo: Key, hi: Key) -> bool {
        self.lo <= hi && lo <= self.hi
    }

    /// Recomputes the cached bounds from the points held.
    pub fn refresh_bounds(&mut self) {
        match self.bounds() {
            Some((lo, hi)) => (self.lo, self.hi) = (lo, hi),
            None => (self.lo, self.hi) = ((SeriesId::MAX, Timestamp::MAX), (0, 0)),
        }
    }

    /// Inserts a version; returns true when the key was already present (replaced).
    pub fn put(&mut self, key: Key, value: Value, seq: Seq) -> bool {
        self.lo = self.lo.min(key);
        self.hi = self.hi.max(key);
        self.points.insert(key, (value, seq)).is_some()
    }

    pub fn get(&self, key: Key) -> Option<(Value, Seq)> {
        self.points.get(&key).copied()
    }

    pub fn remove(&mut self, key: Key) -> bool {
        self.points.remove(&key).is_some()
    }

    /// Points of `series` with times in `[from, to]`, ascending.
    pub fn range(
        &self,
        series: SeriesId,
        from: Timestamp,
        to: Timestamp,
    ) -> impl Iterator<Item = (Timestamp, Value, Seq)> + '_ {
        self.points
            .range((series, from)..=(series, to))
            .map(|(k, (v, s))| (k.1, *v, *s))
    }

    /// Points whose keys lie in `[lo, hi]`.
    pub fn count_in(&self, lo: Key, hi: Key) -> u64 {
        if lo > hi {
            return 0;
        }
        self.points.range(lo..=hi).count() as u64
    }

    /// Removes and returns the points whose keys lie in `[lo, hi]`.
    pub fn take_range(&mut self, lo: Key, hi: Key) -> Vec<(Key, (Value, Seq))> {
        if lo > hi {
            return Vec::new();
        }
        let mut tail = self.points.split_off(&lo);
        let mut after = match hi.1.checked_add(1) {
            Some(t) => tail.split_off(&(hi.0, t)),
            None => match hi.0.checked_add(1) {
                Some(s) => tail.split_off(&(s, 0)),
                None => BTreeMap::new(),
            },
        };
        self.points.append(&mut after);
        tail.into_iter().collect()
    }

    /// `DelayDetector::detect` generalised to many series: per series, the span of times held
    /// minus the points held.
    pub fn estimate_delays(&self) -> u64 {
        let mut total = 0u64;
        let mut cur: Option<(SeriesId, Timestamp, Timestamp, u64)> = None;
        for &(s, t) in self.points.keys() {
            match &mut cur {
                Some((cs, _, last, n)) if *cs == s => {
                    *last = t;
                    *n += 1;
                }
                _ => {
                    if let Some((_, first, last, n)) = cur {
                        total += (last - first + 1) - n;
                    }
                    cur = Some((s, t, t, 1));
                }
            }
        }
        if let Some((_, first, last, n)) = cur {
            total += (last - first + 1) - n;
        }
        total
    }

    /// The largest time of every series held.
    pub fn max_times(&self) -> Vec<(SeriesId, Timestamp)> {
        let mut out: Vec<(SeriesId, Timestamp)> = Vec::new();
        for &(s, t) in self.points.keys() {
            match out.last_mut() {
                Some((ls, lt)) if *ls == s => *lt = t,
                _ => out.push((s, t)),
            }
        }
        out
    }

    /// The points in key order, for a flush.
    pub fn into_sorted(self) -> Vec<(Key, Value, Seq)> {
        self.points.into_iter().map(|(k, (v, s))| (k, v, s)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_range_splits_at_both_ends() {
        let mut m = Memtable::new(RunKind::Delay);
        for t in 1..=10 {
            m.put((0, t), t as i64, t);
        }
        m.put((1, 3), 0, 11);
        let taken = m.take_range((0, 3), (0, 6));
        assert_eq!(
            taken.iter().map(|(k, _)| k.1).collect::<Vec<_>>(),
            vec![3, 4, 5, 6]
        );
        assert_eq!(m.len(), 7);
        assert!(m.get((1, 3)).is_some());
        assert_eq!(m.take_range((0, 8), (0, u64::MAX)).len(), 3);
        assert_eq!(m.count_in((0, 0), (0, u64::MAX)), 3);
    }

    #[test]
    fn delay_estimate_counts_gaps_per_series() {
        let mut m = Memtable::new(RunKind::Normal);
        for t in [1, 2, 5, 6] {
            m.put((0, t), 0, t);
        }
        for t in [10, 13] {
            m.put((2, t), 0, t);
        }
        assert_eq!(m.estimate_delays(), 2 + 2);
        assert_eq!(m.max_times(), vec![(0, 6), (2, 13)]);
    }
}
