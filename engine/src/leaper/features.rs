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
//! the `γ` accesses before an access of `k` (read from the access log, over the training slots
//! only; see [`compute_precursors`]); for each target `k`, candidates are taken in descending transfer count
//! (ties by range id) and kept while the cosine similarity of their read-arrival vectors (reads
//! per slot) with `k`'s exceeds the threshold `ε`, up to `γ = 3`. The paper's pseudo-code loops
//! "while count < γ" inside the candidate loop; the evident intent, followed here, is to stop
//! after `γ` accepted candidates. A range is never its own precursor (its reads are columns 0..6
//! already). The paper gives no value for `ε`; it is a parameter.

use super::collector::{check_record, slot_of, CountSource, RangeHistory};
use super::{range_of, AccessRecord, LeaperError, LeaperResult};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
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

/// Range transfers one pass of Algorithm 2 gathers (24 B each, target, precursor and count:
/// 192 MiB; see [`compute_precursors`]).
pub const TRANSFERS_PER_PASS: u64 = 1 << 23;

/// Algorithm 2 over the slots `slots` (indices into `history.slots`) of an access log: up to
/// `gamma` precursors per range, by transfer count, whose read-arrival cosine similarity exceeds
/// `epsilon`.
///
/// `records` gives the log from its start, in time order, each time it is called (the log the
/// history was collected from: its slots are counted from `history.first_slot`). Lines 1-3, the
/// transfer matrix, count for each access of range `k` the `gamma` range accesses before it
/// (`T[k][p] += 1` for each of those ranges `p`, `p != k`; a scan is one access per range, in
/// key order); accesses in `slots` count, earlier ones only fill the window. Line 4, the
/// read-arrival vectors, are `history`'s estimated reads per slot of `slots`.
///
/// The matrix is not held whole: a warm-up over many ranges has nearly as many distinct
/// `(target, precursor)` pairs as transfers (a 4,000,000-operation run over 55,590 target ranges
/// had 11.2 million pairs from 15.9 million transfers), about 200 B per operation in hash maps.
/// A first pass counts each target's transfers; the targets are then cut, in key order, into
/// groups of at most [`TRANSFERS_PER_PASS`] transfers (a target with more is a group alone), and
/// one pass per group gathers its transfers, sorting and summing equal pairs whenever its buffer
/// fills, and chooses its targets' precursors. The memory is one group's buffer (at most twice
/// [`TRANSFERS_PER_PASS`] when its distinct pairs fill half of it; a lone hot target's distinct
/// pairs are at most the ranges), whatever the log's length; the result is the same for any
/// number of passes.
pub fn compute_precursors<I>(
    records: impl Fn() -> I,
    history: &RangeHistory,
    slots: Range<usize>,
    gamma: usize,
    epsilon: f64,
) -> LeaperResult<Precursors>
where
    I: IntoIterator<Item = AccessRecord>,
{
    compute_precursors_in_passes(records, history, slots, gamma, epsilon, TRANSFERS_PER_PASS)
}

/// [`compute_precursors`] with groups of at most `per_pass` transfers.
pub(crate) fn compute_precursors_in_passes<I>(
    records: impl Fn() -> I,
    history: &RangeHistory,
    slots: Range<usize>,
    gamma: usize,
    epsilon: f64,
    per_pass: u64,
) -> LeaperResult<Precursors>
where
    I: IntoIterator<Item = AccessRecord>,
{
    if slots.end > history.len() || slots.start > slots.end {
        return Err(LeaperError::Invalid(format!(
            "slots {slots:?} lie outside the history's {} slots",
            history.len()
        )));
    }
    // Line 4: read arrival vectors, sparse (slot, reads), slots ascending.
    let mut reads: FxHashMap<u64, Vec<(usize, f64)>> = FxHashMap::default();
    for i in slots.clone() {
        for (&r, c) in &history.slots[i].counts {
            if c.reads > 0.0 {
                reads.entry(r).or_default().push((i, c.reads));
            }
        }
    }
    // Transfers per target, then the targets cut into groups (first, last, transfers).
    let mut per_target: FxHashMap<u64, u64> = FxHashMap::default();
    for_each_transfer(records(), history, &slots, gamma, |target, _| {
        *per_target.entry(target).or_default() += 1;
    })?;
    let mut targets: Vec<(u64, u64)> = per_target.into_iter().collect();
    targets.sort_unstable();
    let mut groups: Vec<(u64, u64, u64)> = Vec::new();
    for (target, n) in targets {
        match groups.last_mut() {
            Some(g) if g.2 + n <= per_pass => {
                g.1 = target;
                g.2 += n;
            }
            _ => groups.push((target, target, n)),
        }
    }
    let mut out = Precursors::default();
    for (first, last, n) in groups {
        // (target, precursor, count), equal pairs summed whenever the buffer fills.
        let mut buf: Vec<(u64, u64, u64)> = Vec::with_capacity(n.min(per_pass).max(1) as usize);
        for_each_transfer(records(), history, &slots, gamma, |target, prec| {
            if !(first..=last).contains(&target) {
                return;
            }
            if buf.len() == buf.capacity() {
                sum_equal_pairs(&mut buf);
                if buf.len() > buf.capacity() / 2 {
                    buf.reserve(buf.capacity());
                }
            }
            buf.push((target, prec, 1));
        })?;
        sum_equal_pairs(&mut buf);
        for group in buf.chunk_by(|a, b| a.0 == b.0) {
            let target = group[0].0;
            // Lines 5-11 for one target: candidates by descending count, ties by range id.
            let mut cands: Vec<(u64, u64)> = group.iter().map(|&(_, p, c)| (p, c)).collect();
            cands.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let vt = reads.get(&target).map(Vec::as_slice).unwrap_or(&[]);
            let mut chosen = Vec::new();
            for (p, _) in cands {
                if chosen.len() >= gamma {
                    break;
                }
                if cosine(vt, reads.get(&p).map(Vec::as_slice).unwrap_or(&[])) > epsilon {
                    chosen.push(p);
                }
            }
            if !chosen.is_empty() {
                out.insert(target, chosen);
            }
        }
    }
    Ok(out)
}

/// Sorts `(target, precursor, count)` triples and sums the counts of equal pairs.
fn sum_equal_pairs(buf: &mut Vec<(u64, u64, u64)>) {
    buf.sort_unstable_by_key(|&(t, p, _)| (t, p));
    buf.dedup_by(|later, kept| {
        let same = (later.0, later.1) == (kept.0, kept.1);
        if same {
            kept.2 += later.2;
        }
        same
    });
}

/// Lines 1-3 of Algorithm 2 as a stream: `f(target, precursor)` for each of the `gamma` range
/// accesses before each range access in `slots` (a precursor equal to its target is skipped).
/// Records are checked as the collector checks them.
fn for_each_transfer(
    records: impl IntoIterator<Item = AccessRecord>,
    history: &RangeHistory,
    slots: &Range<usize>,
    gamma: usize,
    mut f: impl FnMut(u64, u64),
) -> LeaperResult<()> {
    let mut recent: VecDeque<u64> = VecDeque::with_capacity(gamma + 1);
    let mut last = f64::NEG_INFINITY;
    for (i, r) in records.into_iter().enumerate() {
        check_record(i, &r, &mut last, history.range_size)?;
        let abs = slot_of(r.time, history.slot_secs);
        let Some(slot) = abs.checked_sub(history.first_slot) else {
            return Err(LeaperError::Invalid(format!(
                "record {i} lies in slot {abs}, before the history's first slot {}",
                history.first_slot
            )));
        };
        if slot >= slots.end as u64 {
            break;
        }
        let counted = slot >= slots.start as u64;
        let (lo, hi) = (r.lo.min(r.hi), r.lo.max(r.hi));
        for k in range_of(lo, history.range_size)..=range_of(hi, history.range_size) {
            if counted {
                for &p in &recent {
                    if p != k {
                        f(k, p);
                    }
                }
            }
            recent.push_front(k);
            recent.truncate(gamma);
        }
    }
    Ok(())
}

/// Cosine similarity of two sparse vectors with ascending indices (0 when either is zero).
fn cosine(a: &[(usize, f64)], b: &[(usize, f64)]) -> f64 {
    let norm = |v: &[(usize, f64)]| v.iter().map(|x| x.1 * x.1).sum::<f64>().sqrt();
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
        // The log: in slot 0, 9 times "12, 99, 99, 10"; in slot 1, 5 times 13 before 10; in
        // slot 2, twice 11; in slot 3, range 10 fifty times in a row. Range 99 is never read
        // (cosine 0), so the transfers into 10 that can be chosen come from 12 (9), 13 (5) and
        // 11 (2); 10 itself never counts.
        let mut log = Vec::new();
        for (slot, prec, times) in [(0u64, 12u64, 9), (1, 13, 5), (2, 11, 2)] {
            for _ in 0..times {
                for r in [prec, 99, 99, 10] {
                    log.push(AccessRecord::read(slot as f64 + 0.5, r * 100));
                }
            }
        }
        log.extend((0..50).map(|_| AccessRecord::read(3.5, 1_000)));
        let records = || log.iter().copied();
        let p = compute_precursors(records, &h, 0..4, 3, 0.5).unwrap();
        assert_eq!(p.get(10), &[13, 11]);
        // A stricter threshold keeps only the identical pattern.
        assert_eq!(
            compute_precursors(records, &h, 0..4, 3, 0.9).unwrap().get(10),
            &[11]
        );
        // gamma is the window too: with 1, the access before each 10 is 99's.
        assert!(compute_precursors(records, &h, 0..4, 1, 0.5)
            .unwrap()
            .get(10)
            .is_empty());
        // Only slots 0..2 seen: the transfers of slots 2 and 3 (into 10 from 11) are not counted.
        assert_eq!(
            compute_precursors(records, &h, 0..2, 3, 0.5).unwrap().get(10),
            &[13]
        );
        assert!(compute_precursors(records, &h, 0..5, 3, 0.5).is_err());
        // A log out of time order is refused, naming the record.
        let back = [AccessRecord::read(1.5, 0), AccessRecord::read(0.5, 0)];
        let e = compute_precursors(|| back.iter().copied(), &h, 0..4, 3, 0.5).unwrap_err();
        assert!(e.to_string().contains("record 1 goes back in time"), "{e}");
        // Round trip through JSON.
        let json = serde_json::to_string(&p).unwrap();
        let back: Precursors = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        assert_eq!(p.reverse().get(&13).map(Vec::as_slice), Some(&[10u64][..]));
    }

    #[test]
    fn transfers_follow_the_order_of_the_ranges_accessed() {
        // A scan over ranges 0, 1, 2, 3 (in key order), then a write to range 1, window 2.
        let log = [AccessRecord::scan(0.0, 5, 34), AccessRecord::write(0.0, 12)];
        let h = RangeHistory::from_log(&log, &super::super::CollectorConfig::offline(10, 1.0)).unwrap();
        let mut got = Vec::new();
        for_each_transfer(log, &h, &(0..1), 2, |t, p| got.push((t, p))).unwrap();
        got.sort_unstable();
        // 1 <- 0; 2 <- 1, 0; 3 <- 2, 1; then range 1 <- 3, 2.
        assert_eq!(got, [(1, 0), (1, 2), (1, 3), (2, 0), (2, 1), (3, 1), (3, 2)]);
    }

    /// Algorithm 2 written out plainly: the whole transfer matrix in a map, every target's
    /// candidates sorted, the read vectors dense.
    fn brute_force_precursors(
        log: &[AccessRecord],
        h: &RangeHistory,
        slots: Range<usize>,
        gamma: usize,
        epsilon: f64,
    ) -> Vec<(u64, Vec<u64>)> {
        let mut t: std::collections::BTreeMap<u64, std::collections::BTreeMap<u64, u64>> = Default::default();
        let mut window: Vec<u64> = Vec::new();
        for r in log {
            let slot = (r.time / h.slot_secs).floor() as usize - h.first_slot as usize;
            for k in r.lo / h.range_size..=r.hi / h.range_size {
                if slots.contains(&slot) {
                    for &p in window.iter().rev().take(gamma) {
                        if p != k {
                            *t.entry(k).or_default().entry(p).or_default() += 1;
                        }
                    }
                }
                window.push(k);
            }
        }
        let vector = |r: u64| -> Vec<f64> {
            slots
                .clone()
                .map(|s| h.counts(h.first_slot + s as u64, r).reads)
                .collect()
        };
        let cos = |a: &[f64], b: &[f64]| {
            let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            let (na, nb) = (
                a.iter().map(|x| x * x).sum::<f64>().sqrt(),
                b.iter().map(|x| x * x).sum::<f64>().sqrt(),
            );
            if na == 0.0 || nb == 0.0 {
                0.0
            } else {
                dot / (na * nb)
            }
        };
        let mut out = Vec::new();
        for (k, cands) in t {
            let mut c: Vec<(u64, u64)> = cands.into_iter().collect();
            c.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let chosen: Vec<u64> = c
                .into_iter()
                .map(|(p, _)| p)
                .filter(|&p| cos(&vector(k), &vector(p)) > epsilon)
                .take(gamma)
                .collect();
            if !chosen.is_empty() {
                out.push((k, chosen));
            }
        }
        out
    }

    #[test]
    fn precursors_in_passes_match_a_brute_force_oracle() {
        let mut rng = crate::leaper::collector::SplitMix64::new(5);
        for case in 0..6u64 {
            let range_size = 1 + case * 3;
            let mut log = Vec::new();
            for i in 0..3_000u64 {
                // A skewed key stream with scans, over about 40 ranges, 12 slots.
                let x = rng.next_u64();
                let key = (x % 7) * (x % 13) * range_size + (x >> 40) % range_size;
                let t = i as f64 * 0.004;
                log.push(if x.is_multiple_of(11) {
                    AccessRecord::scan(t, key, key + (x >> 20) % (3 * range_size))
                } else if x.is_multiple_of(5) {
                    AccessRecord::write(t, key)
                } else {
                    AccessRecord::read(t, key)
                });
            }
            let config = super::super::CollectorConfig {
                sample_p: 1.0,
                ..super::super::CollectorConfig::offline(range_size, 1.0)
            };
            let h = RangeHistory::from_log(&log, &config).unwrap();
            assert_eq!(h.len(), 12);
            for (slots, gamma, epsilon) in [(0..12, 3, 0.1), (0..9, 3, 0.5), (2..7, 2, 0.0), (0..12, 5, 0.8)]
            {
                let want = brute_force_precursors(&log, &h, slots.clone(), gamma, epsilon);
                assert!(!want.is_empty(), "case {case}: a trivial oracle");
                for per_pass in [1, 50, 977, u64::MAX] {
                    let got = compute_precursors_in_passes(
                        || log.iter().copied(),
                        &h,
                        slots.clone(),
                        gamma,
                        epsilon,
                        per_pass,
                    )
                    .unwrap();
                    assert_eq!(
                        Vec::from(got),
                        want,
                        "case {case} slots {slots:?} per pass {per_pass}"
                    );
                }
            }
        }
    }
}
