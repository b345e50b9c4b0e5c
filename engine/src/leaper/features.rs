//! The 18 features of a key range at a prediction time (§4.2) and Algorithm 2's precursors.
//!
//! For range `r`, with `t` the last complete slot before the prediction:
//! - columns 0..6: estimated reads of `r` in slots `t, t-1, ..., t-5` (most recent first);
//! - columns 6..12: estimated writes in the same slots;
//! - columns 12..15: hour, minute and second of the day at the prediction time, with a "day" of
//!   `day_secs` virtual seconds mapped onto 24 hours (the workloads' daily-like period);
//! - columns 15..18: reads in slot `t` of `r`'s 3 precursor ranges (0 where `r` has fewer).
//!
//! A slot before the start of the statistics reads 0. The label of step `k` is "`r` is accessed
//! (read or written) in slot `t + k`"; the paper's label is step 1, the multi-step models of §6.1
//! use `k = 1..K`.
//!
//! Precursors (Algorithm 2): the transfer matrix `T[k][p]` counts how often range `p` was among
//! the `γ` accesses before an access of `k` (collected per slot by the
//! [`super::Collector`]); for each target `k`, candidates are taken in descending transfer count
//! (ties by range id) and kept while the cosine similarity of their read-arrival vectors (reads
//! per slot) with `k`'s exceeds the threshold `ε`, up to `γ = 3`. The paper's pseudo-code loops
//! "while count < γ" inside the candidate loop; the evident intent, followed here, is to stop
//! after `γ` accepted candidates. A range is never its own precursor (its reads are columns 0..6
//! already). The paper gives no value for `ε`; it is a parameter.

use super::collector::{CountSource, RangeHistory};
use super::{LeaperError, LeaperResult};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Slots of read and write history per row (the paper's feature length, §7.2.3).
pub const HISTORY_SLOTS: usize = 6;
/// Precursor ranges per row (Algorithm 2's `γ`).
pub const PRECURSORS: usize = 3;
/// Columns of a feature row.
pub const FEATURES: usize = 2 * HISTORY_SLOTS + 3 + PRECURSORS;

/// A feature row.
pub type Row = [f64; FEATURES];

/// The feature groups of the ablation study (Figure 8) and the importance table (Table 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FeatureGroup {
    /// Estimated reads of the range in the last slots.
    Read,
    /// Estimated writes of the range in the last slots.
    Write,
    /// Hour, minute and second of the day at the prediction time.
    Time,
    /// Reads of the range's precursor ranges in the last slot.
    Precursor,
}

impl FeatureGroup {
    /// Every group, in column order.
    pub const ALL: [FeatureGroup; 4] = [
        FeatureGroup::Read,
        FeatureGroup::Write,
        FeatureGroup::Time,
        FeatureGroup::Precursor,
    ];

    /// The columns of the group.
    pub fn columns(self) -> Range<usize> {
        match self {
            FeatureGroup::Read => 0..HISTORY_SLOTS,
            FeatureGroup::Write => HISTORY_SLOTS..2 * HISTORY_SLOTS,
            FeatureGroup::Time => 2 * HISTORY_SLOTS..2 * HISTORY_SLOTS + 3,
            FeatureGroup::Precursor => 2 * HISTORY_SLOTS + 3..FEATURES,
        }
    }

    /// The group column `col` belongs to (a column past the last counts as a precursor column).
    pub fn of_column(col: usize) -> FeatureGroup {
        *FeatureGroup::ALL
            .iter()
            .find(|g| g.columns().contains(&col))
            .unwrap_or(&FeatureGroup::Precursor)
    }

    /// The group's one-letter name in the ablation's labels ("R", "W", "T", "P").
    pub fn letter(self) -> &'static str {
        match self {
            FeatureGroup::Read => "R",
            FeatureGroup::Write => "W",
            FeatureGroup::Time => "T",
            FeatureGroup::Precursor => "P",
        }
    }
}

/// Hour, minute and second of the day at virtual time `time`, for a day of `day_secs` virtual
/// seconds mapped onto 86 400 seconds.
pub fn time_of_day(time: f64, day_secs: f64) -> (f64, f64, f64) {
    let tod = ((time.max(0.0) % day_secs) * (86_400.0 / day_secs)).floor();
    (
        (tod / 3600.0).floor(),
        ((tod % 3600.0) / 60.0).floor(),
        (tod % 60.0).floor(),
    )
}

/// The feature row of `range` when the last complete slot is `last_slot` (`None`: no complete
/// slot yet) and the prediction is made at `pred_time`.
pub fn features_at(
    src: &impl CountSource,
    range: u64,
    last_slot: Option<u64>,
    pred_time: f64,
    day_secs: f64,
    precursors: &[u64],
) -> Row {
    let mut row = [0.0; FEATURES];
    if let Some(t) = last_slot {
        for i in 0..HISTORY_SLOTS {
            if let Some(s) = t.checked_sub(i as u64) {
                let c = src.counts(s, range);
                row[i] = c.reads;
                row[HISTORY_SLOTS + i] = c.writes;
            }
        }
        for (j, &p) in precursors.iter().take(PRECURSORS).enumerate() {
            row[2 * HISTORY_SLOTS + 3 + j] = src.counts(t, p).reads;
        }
    }
    let (h, m, s) = time_of_day(pred_time, day_secs);
    row[2 * HISTORY_SLOTS] = h;
    row[2 * HISTORY_SLOTS + 1] = m;
    row[2 * HISTORY_SLOTS + 2] = s;
    row
}

/// Algorithm 2's output: the precursor ranges of each target range.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "Vec<(u64, Vec<u64>)>", into = "Vec<(u64, Vec<u64>)>")]
pub struct Precursors {
    map: FxHashMap<u64, Vec<u64>>,
}

impl From<Vec<(u64, Vec<u64>)>> for Precursors {
    fn from(v: Vec<(u64, Vec<u64>)>) -> Self {
        Precursors {
            map: v.into_iter().collect(),
        }
    }
}

impl From<Precursors> for Vec<(u64, Vec<u64>)> {
    fn from(p: Precursors) -> Self {
        let mut v: Vec<_> = p.map.into_iter().collect();
        v.sort_unstable();
        v
    }
}

impl Precursors {
    /// The precursors of `target` (empty when it has none).
    pub fn get(&self, target: u64) -> &[u64] {
        self.map.get(&target).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Sets the precursors of `target`, replacing any it had.
    pub fn insert(&mut self, target: u64, precursors: Vec<u64>) {
        self.map.insert(target, precursors);
    }

    /// Targets with at least one precursor.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no range has a precursor.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// `precursor -> targets`, to find the ranges whose precursor features a read makes non-zero.
    pub fn reverse(&self) -> FxHashMap<u64, Vec<u64>> {
        let mut rev: FxHashMap<u64, Vec<u64>> = FxHashMap::default();
        for (&t, ps) in &self.map {
            for &p in ps {
                rev.entry(p).or_default().push(t);
            }
        }
        for v in rev.values_mut() {
            v.sort_unstable();
        }
        rev
    }

    /// Every target with its precursors, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &[u64])> {
        self.map.iter().map(|(&k, v)| (k, v.as_slice()))
    }
}

/// Algorithm 2 over the slots `slots` (indices into `history.slots`): up to `gamma` precursors per
/// range, by transfer count, whose read-arrival cosine similarity exceeds `epsilon`.
pub fn compute_precursors(
    history: &RangeHistory,
    slots: Range<usize>,
    gamma: usize,
    epsilon: f64,
) -> LeaperResult<Precursors> {
    if slots.end > history.len() || slots.start > slots.end {
        return Err(LeaperError::Invalid(format!(
            "slots {slots:?} lie outside the history's {} slots",
            history.len()
        )));
    }
    // Lines 1-3: the transfer matrix, aggregated over the slots.
    let mut transfer: FxHashMap<u64, FxHashMap<u64, u64>> = FxHashMap::default();
    // Line 4: read arrival vectors, sparse (slot, reads), slots ascending.
    let mut reads: FxHashMap<u64, Vec<(usize, f64)>> = FxHashMap::default();
    for i in slots {
        let s = &history.slots[i];
        for (&(target, prec), &n) in &s.transfers {
            *transfer.entry(target).or_default().entry(prec).or_default() += n;
        }
        for (&r, c) in &s.counts {
            if c.reads > 0.0 {
                reads.entry(r).or_default().push((i, c.reads));
            }
        }
    }
    let norm = |v: &[(usize, f64)]| v.iter().map(|x| x.1 * x.1).sum::<f64>().sqrt();
    let cosine = |a: &[(usize, f64)], b: &[(usize, f64)]| {
        let (na, nb) = (norm(a), norm(b));
        if na == 0.0 || nb == 0.0 {
            return 0.0;
        }
        let (mut i, mut j, mut dot) = (0, 0, 0.0);
        while i < a.len() && j < b.len() {
            match a[i].0.cmp(&b[j].0) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    dot += a[i].1 * b[j].1;
                    i += 1;
                    j += 1;
                }
            }
        }
        dot / (na * nb)
    };
    // Lines 5-11.
    let mut out = Precursors::default();
    let empty = Vec::new();
    for (&target, cands) in &transfer {
        let mut cands: Vec<(u64, u64)> = cands
            .iter()
            .map(|(&p, &n)| (p, n))
            .filter(|&(p, _)| p != target)
            .collect();
        cands.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let vt = reads.get(&target).unwrap_or(&empty);
        let mut chosen = Vec::new();
        for (p, _) in cands {
            if chosen.len() >= gamma {
                break;
            }
            if cosine(vt, reads.get(&p).unwrap_or(&empty)) > epsilon {
                chosen.push(p);
            }
        }
        if !chosen.is_empty() {
            out.insert(target, chosen);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_of_day_maps_a_virtual_day() {
        // A day of 100 virtual seconds: 25 s is 06:00:00, 50.5 s is 12:07:12.
        assert_eq!(time_of_day(25.0, 100.0), (6.0, 0.0, 0.0));
        assert_eq!(time_of_day(50.5, 100.0), (12.0, 7.0, 12.0));
        assert_eq!(time_of_day(150.5, 100.0), (12.0, 7.0, 12.0));
        assert_eq!(time_of_day(86_399.0, 86_400.0), (23.0, 59.0, 59.0));
    }

    /// A hand-built history: 8 slots, range 1 read 1..8 times (slot i: i + 1 reads), written in
    /// even slots; range 2 read 10x in slot 7; range 3 read in slot 6 only.
    fn history() -> RangeHistory {
        let mut h = RangeHistory::new(100, 10.0, 0, 8).unwrap();
        for i in 0..8 {
            h.add(i, 1, (i + 1) as f64, if i % 2 == 0 { 2.0 } else { 0.0 });
        }
        h.add(7, 2, 10.0, 0.0);
        h.add(6, 3, 4.0, 0.0);
        h
    }

    #[test]
    fn features_of_a_hand_built_history() {
        let h = history();
        let row = features_at(&h, 1, Some(7), 80.0, 320.0, &[2, 3]);
        // Reads in slots 7, 6, ..., 2; writes in even slots.
        assert_eq!(&row[0..6], &[8.0, 7.0, 6.0, 5.0, 4.0, 3.0]);
        assert_eq!(&row[6..12], &[0.0, 2.0, 0.0, 2.0, 0.0, 2.0]);
        // 80 of a 320 s day: 06:00:00.
        assert_eq!(&row[12..15], &[6.0, 0.0, 0.0]);
        // Precursor reads in slot 7: range 2 read 10x, range 3 not, no third precursor.
        assert_eq!(&row[15..18], &[10.0, 0.0, 0.0]);
        // Near the start of the history the missing slots read 0.
        let row = features_at(&h, 1, Some(2), 30.0, 320.0, &[]);
        assert_eq!(&row[0..6], &[3.0, 2.0, 1.0, 0.0, 0.0, 0.0]);
        // No complete slot: only the time columns.
        let row = features_at(&h, 1, None, 0.0, 320.0, &[2]);
        assert!(row.iter().all(|&x| x == 0.0));
        for g in FeatureGroup::ALL {
            for c in g.columns() {
                assert_eq!(FeatureGroup::of_column(c), g);
            }
        }
        assert_eq!(FEATURES, 18);
    }

    #[test]
    fn precursors_by_transfer_count_and_similarity() {
        // Ranges 10, 11, 12, 13 over 4 slots. Range 10's reads (1, 0, 1, 0); 11 the same pattern
        // (cosine 1); 12 the opposite (0, 1, 0, 1: cosine 0); 13 (1, 1, 1, 1: cosine 0.707).
        let mut h = RangeHistory::new(100, 1.0, 0, 4).unwrap();
        for i in 0..4 {
            if i % 2 == 0 {
                h.add(i, 10, 1.0, 0.0);
                h.add(i, 11, 3.0, 0.0);
            } else {
                h.add(i, 12, 1.0, 0.0);
            }
            h.add(i, 13, 2.0, 0.0);
        }
        // Transfers into 10: 12 most often, then 13, then 11; 10 itself never counts.
        h.add_transfer(0, 10, 12, 9);
        h.add_transfer(1, 10, 13, 5);
        h.add_transfer(2, 10, 11, 2);
        h.add_transfer(3, 10, 10, 50);
        let p = compute_precursors(&h, 0..4, 3, 0.5).unwrap();
        assert_eq!(p.get(10), &[13, 11]);
        // A stricter threshold keeps only the identical pattern; gamma 1 keeps the first accepted.
        assert_eq!(compute_precursors(&h, 0..4, 3, 0.9).unwrap().get(10), &[11]);
        assert_eq!(compute_precursors(&h, 0..4, 1, 0.5).unwrap().get(10), &[13]);
        // Only slots 0..2 seen: the transfers of slots 2 and 3 (into 10 from 11) are not counted.
        assert_eq!(compute_precursors(&h, 0..2, 3, 0.5).unwrap().get(10), &[13]);
        assert!(compute_precursors(&h, 0..5, 3, 0.5).is_err());
        // Round trip through JSON.
        let json = serde_json::to_string(&p).unwrap();
        let back: Precursors = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        assert_eq!(p.reverse().get(&13).map(Vec::as_slice), Some(&[10u64][..]));
    }
}
