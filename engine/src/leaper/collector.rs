//! The collector (§5.1): access statistics per key range and time slot.
//!
//! One counter per key range (`range id = key / range_size`), created lazily on the range's first
//! access, per time slot of `slot_secs` virtual seconds, reads and writes apart. In each slot the
//! first read (and the first write) of a range is always counted; each later one is counted with
//! probability `P` (a seeded, deterministic generator), and the estimate of the true count `N`
//! from the sampled count `S` is Eq. 1, `N = (S - 1) / P + 1` (unbiased: `S - 1 ~ B(N - 1, P)`).
//! The always-counted first access keeps the 0/1 "was it accessed" property exact, which is what
//! the classifier's labels need (§7.2.2). `P = 1` counts exactly.
//!
//! The paper's collector is shared by many foreground threads and uses double-checked locking for
//! the lazy creation of counters and atomic increments (Table 1). This engine's store calls the
//! policy synchronously from one thread, so a plain map is enough here: the locking scheme
//! addresses multi-threaded collection, which this engine does not need.
//!
//! A scan counts once in every range it touches. The order of the accesses, which Algorithm 2's
//! range transfers need, is not kept here: [`super::compute_precursors`] reads it from the log.

use super::{range_of, AccessRecord, LeaperError, LeaperResult};
use crate::kvstore::Access;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// A small deterministic generator (SplitMix64) for the sampling decisions.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// How the collector counts.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectorConfig {
    /// Keys per key range (Algorithm 1's output).
    pub range_size: u64,
    /// Length of a time slot, in virtual seconds.
    pub slot_secs: f64,
    /// Sampling probability `P` of every access after a slot's first (the paper: 0.01).
    pub sample_p: f64,
    /// Seed of the sampling decisions.
    pub seed: u64,
    /// Keep only the most recent slots (online); `None` keeps every slot (offline collection).
    pub retain_slots: Option<usize>,
}

impl CollectorConfig {
    /// The paper's sampling (P = 0.01), every slot kept.
    pub fn offline(range_size: u64, slot_secs: f64) -> Self {
        CollectorConfig {
            range_size,
            slot_secs,
            sample_p: 0.01,
            seed: 0x1ea9e5,
            retain_slots: None,
        }
    }

    /// Checks the configuration; the error names the bad parameter.
    pub fn validate(&self) -> LeaperResult<()> {
        if self.range_size == 0 {
            return Err(LeaperError::Invalid("range_size must be at least 1".into()));
        }
        if !(self.slot_secs.is_finite() && self.slot_secs > 0.0) {
            return Err(LeaperError::Invalid(format!(
                "slot_secs must be a positive number of seconds, got {}",
                self.slot_secs
            )));
        }
        if !(self.sample_p > 0.0 && self.sample_p <= 1.0) {
            return Err(LeaperError::Invalid(format!(
                "sample_p must lie in (0, 1], got {}",
                self.sample_p
            )));
        }
        if self.retain_slots == Some(0) {
            return Err(LeaperError::Invalid(
                "retain_slots must keep at least 1 slot".into(),
            ));
        }
        Ok(())
    }
}

/// Estimated reads and writes of one key range in one slot (Eq. 1 applied to the sampled counts).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RangeCounts {
    /// Estimated reads.
    pub reads: f64,
    /// Estimated writes.
    pub writes: f64,
}

impl RangeCounts {
    /// Whether the range was read or written at all (the label of a row).
    pub fn accessed(&self) -> bool {
        self.reads > 0.0 || self.writes > 0.0
    }
}

/// Per-slot statistics: estimated counts per range.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlotCounts {
    /// Estimated counts per key range.
    pub counts: FxHashMap<u64, RangeCounts>,
}

/// Where features read their counts from: a [`Collector`] online, a [`RangeHistory`] offline.
/// Slots are absolute slot numbers (`floor(time / slot_secs)`); an unknown slot or range reads 0.
pub trait CountSource {
    /// The estimated counts of key range `range` in absolute slot `slot` (0 when unknown).
    fn counts(&self, slot: u64, range: u64) -> RangeCounts;
}

/// The access statistics of a warm-up phase, slot by slot (contiguous from `first_slot`): the
/// training input of [`super::train`].
#[derive(Clone, Debug, PartialEq)]
pub struct RangeHistory {
    /// Keys per key range.
    pub range_size: u64,
    /// Length of a slot, in virtual seconds.
    pub slot_secs: f64,
    /// Absolute number of `slots[0]`.
    pub first_slot: u64,
    /// The slots' statistics, `slots[i]` being absolute slot `first_slot + i`.
    pub slots: Vec<SlotCounts>,
}

impl RangeHistory {
    /// An empty history of `n_slots` slots (fill it with [`RangeHistory::add`]).
    pub fn new(range_size: u64, slot_secs: f64, first_slot: u64, n_slots: usize) -> LeaperResult<Self> {
        CollectorConfig {
            range_size,
            slot_secs,
            ..CollectorConfig::offline(range_size, slot_secs)
        }
        .validate()?;
        Ok(RangeHistory {
            range_size,
            slot_secs,
            first_slot,
            slots: vec![SlotCounts::default(); n_slots],
        })
    }

    /// Collects a log: every record through a [`Collector`] with `config` (every slot kept).
    /// Records must be in non-decreasing time order.
    pub fn from_log(records: &[AccessRecord], config: &CollectorConfig) -> LeaperResult<Self> {
        Self::from_records(records.iter().copied(), config)
    }

    /// [`RangeHistory::from_log`] over records read one after another (e.g. from a compact
    /// [`super::AccessLog`]).
    pub fn from_records(
        records: impl IntoIterator<Item = AccessRecord>,
        config: &CollectorConfig,
    ) -> LeaperResult<Self> {
        let mut config = config.clone();
        config.retain_slots = None;
        let mut c = Collector::new(config)?;
        let mut last = f64::NEG_INFINITY;
        for (i, r) in records.into_iter().enumerate() {
            check_record(i, &r, &mut last, c.config.range_size)?;
            c.record(r.time, r.lo, r.hi, r.access);
        }
        Ok(c.into_history())
    }

    /// Adds estimated counts of `range` in slot index `i` (relative to `first_slot`).
    pub fn add(&mut self, i: usize, range: u64, reads: f64, writes: f64) {
        let c = self.slots[i].counts.entry(range).or_default();
        c.reads += reads;
        c.writes += writes;
    }

    /// Slots in the history.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the history has no slot.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The smallest and largest range id with any access.
    pub fn range_bounds(&self) -> Option<(u64, u64)> {
        let mut it = self.slots.iter().flat_map(|s| s.counts.keys().copied());
        let first = it.next()?;
        Some(it.fold((first, first), |(lo, hi), r| (lo.min(r), hi.max(r))))
    }
}

impl CountSource for RangeHistory {
    fn counts(&self, slot: u64, range: u64) -> RangeCounts {
        slot.checked_sub(self.first_slot)
            .and_then(|i| self.slots.get(i as usize))
            .and_then(|s| s.counts.get(&range).copied())
            .unwrap_or_default()
    }
}

/// Sampled counts `S` of one range in one slot.
#[derive(Clone, Copy, Debug, Default)]
struct Sampled {
    reads: u64,
    writes: u64,
}

#[derive(Clone, Debug, Default)]
struct SlotRaw {
    counts: FxHashMap<u64, Sampled>,
}

/// Counted work of a collector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CollectorStats {
    /// Range accesses seen (a scan over 3 ranges is 3).
    pub range_accesses: u64,
    /// Of those, counted (the first of a slot, or sampled).
    pub counted: u64,
    /// Range accesses dropped because their slot was no longer retained (time went backwards).
    pub dropped: u64,
    /// Accesses not counted because they span more than [`MAX_RANGES_PER_ACCESS`] ranges.
    pub too_wide: u64,
    /// Counters created (one per range, kind and slot).
    pub counters: u64,
}

/// The widest access the collector counts, in key ranges (2^20: a million counters).
pub const MAX_RANGES_PER_ACCESS: u64 = 1 << 20;

/// The collector: see the module documentation.
#[derive(Clone, Debug)]
pub struct Collector {
    config: CollectorConfig,
    rng: SplitMix64,
    slots: BTreeMap<u64, SlotRaw>,
    latest: Option<u64>,
    stats: CollectorStats,
}

impl Collector {
    /// A collector of `config` (validated first) with no access counted yet.
    pub fn new(config: CollectorConfig) -> LeaperResult<Self> {
        config.validate()?;
        Ok(Collector {
            rng: SplitMix64::new(config.seed),
            config,
            slots: BTreeMap::new(),
            latest: None,
            stats: CollectorStats::default(),
        })
    }

    /// The configuration it counts with.
    pub fn config(&self) -> &CollectorConfig {
        &self.config
    }

    /// The counters so far.
    pub fn stats(&self) -> CollectorStats {
        self.stats
    }

    /// The slot of a virtual time (negative or NaN times fall in slot 0).
    pub fn slot_of(&self, now: f64) -> u64 {
        slot_of(now, self.config.slot_secs)
    }

    /// The most recent slot with an access.
    pub fn latest_slot(&self) -> Option<u64> {
        self.latest
    }

    /// Keys `lo..=hi` were accessed at `now`. An access spanning more than
    /// `MAX_RANGES_PER_ACCESS` ranges is not counted (only [`CollectorStats::too_wide`] is):
    /// callers clip scans to the keys that exist, so only a scan of a sparse, huge key space gets
    /// there, and walking its ranges would cost time and memory without bound.
    pub fn record(&mut self, now: f64, lo: u64, hi: u64, access: Access) {
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        let span = range_of(hi, self.config.range_size) - range_of(lo, self.config.range_size);
        if span >= MAX_RANGES_PER_ACCESS {
            self.stats.too_wide += 1;
            return;
        }
        let slot = self.slot_of(now);
        if let (Some(keep), Some(latest)) = (self.config.retain_slots, self.latest) {
            if slot + (keep as u64) <= latest {
                self.stats.dropped += span + 1;
                return;
            }
        }
        if self.latest.is_none_or(|l| slot > l) {
            self.latest = Some(slot);
            if let Some(keep) = self.config.retain_slots {
                let oldest = (slot + 1).saturating_sub(keep as u64);
                while let Some((&s, _)) = self.slots.first_key_value() {
                    if s >= oldest {
                        break;
                    }
                    self.slots.pop_first();
                }
            }
        }
        let p = self.config.sample_p;
        let raw = self.slots.entry(slot).or_default();
        for r in range_of(lo, self.config.range_size)..=range_of(hi, self.config.range_size) {
            self.stats.range_accesses += 1;
            let c = raw.counts.entry(r).or_default();
            let s = match access {
                Access::Read => &mut c.reads,
                Access::Write => &mut c.writes,
            };
            if *s == 0 {
                *s = 1;
                self.stats.counters += 1;
                self.stats.counted += 1;
            } else if p >= 1.0 || self.rng.next_f64() < p {
                *s += 1;
                self.stats.counted += 1;
            }
        }
    }

    /// Eq. 1: the estimated count from a sampled one.
    pub fn estimate(&self, sampled: u64) -> f64 {
        estimate(sampled, self.config.sample_p)
    }

    /// Ranges with any access in slots `from..=to`, ascending.
    pub fn active_ranges(&self, from: u64, to: u64) -> Vec<u64> {
        if from > to {
            return Vec::new();
        }
        let mut v: Vec<u64> = self
            .slots
            .range(from..=to)
            .flat_map(|(_, s)| s.counts.keys().copied())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The retained slots as a history (contiguous from the oldest retained slot to the latest).
    pub fn history(&self) -> RangeHistory {
        self.clone().into_history()
    }

    /// [`Collector::history`], consuming the collector.
    pub fn into_history(mut self) -> RangeHistory {
        let (first, last) = match (self.slots.first_key_value(), self.latest) {
            (Some((&f, _)), Some(l)) => (f, l),
            _ => {
                return RangeHistory {
                    range_size: self.config.range_size,
                    slot_secs: self.config.slot_secs,
                    first_slot: 0,
                    slots: Vec::new(),
                }
            }
        };
        let p = self.config.sample_p;
        let mut slots = vec![SlotCounts::default(); (last - first + 1) as usize];
        while let Some((s, raw)) = self.slots.pop_first() {
            let out = &mut slots[(s - first) as usize];
            out.counts = raw
                .counts
                .iter()
                .map(|(&r, c)| {
                    (
                        r,
                        RangeCounts {
                            reads: estimate(c.reads, p),
                            writes: estimate(c.writes, p),
                        },
                    )
                })
                .collect();
        }
        RangeHistory {
            range_size: self.config.range_size,
            slot_secs: self.config.slot_secs,
            first_slot: first,
            slots,
        }
    }
}

impl CountSource for Collector {
    fn counts(&self, slot: u64, range: u64) -> RangeCounts {
        self.slots
            .get(&slot)
            .and_then(|s| s.counts.get(&range))
            .map(|c| RangeCounts {
                reads: self.estimate(c.reads),
                writes: self.estimate(c.writes),
            })
            .unwrap_or_default()
    }
}

/// Eq. 1: `N = (S - 1) / P + 1` for `S >= 1`, and 0 for a range never counted.
pub fn estimate(sampled: u64, p: f64) -> f64 {
    if sampled == 0 {
        0.0
    } else {
        (sampled - 1) as f64 / p + 1.0
    }
}

/// Checks record `i` of a log read in order (`last`: the previous record's time, updated): a
/// finite, non-negative time, not before the previous record's, and at most
/// [`MAX_RANGES_PER_ACCESS`] ranges wide. The error names the record.
pub(crate) fn check_record(i: usize, r: &AccessRecord, last: &mut f64, range_size: u64) -> LeaperResult<()> {
    if !(r.time.is_finite() && r.time >= 0.0) {
        return Err(LeaperError::Invalid(format!("record {i} has time {}", r.time)));
    }
    if r.time < *last {
        return Err(LeaperError::Invalid(format!(
            "record {i} goes back in time ({} after {last})",
            r.time
        )));
    }
    *last = r.time;
    let span = range_of(r.lo.max(r.hi), range_size) - range_of(r.lo.min(r.hi), range_size);
    if span >= MAX_RANGES_PER_ACCESS {
        return Err(LeaperError::Invalid(format!(
            "record {i} spans keys {}..={}, more than {MAX_RANGES_PER_ACCESS} ranges of {range_size} keys",
            r.lo, r.hi
        )));
    }
    Ok(())
}

/// The slot of a virtual time (negative or NaN times fall in slot 0).
pub fn slot_of(now: f64, slot_secs: f64) -> u64 {
    // `as` saturates: NaN and negatives give 0.
    (now / slot_secs).floor() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(p: f64) -> CollectorConfig {
        CollectorConfig {
            range_size: 10,
            slot_secs: 1.0,
            sample_p: p,
            seed: 7,
            retain_slots: None,
        }
    }

    #[test]
    fn p_one_counts_exactly() {
        let mut c = Collector::new(cfg(1.0)).unwrap();
        let mut exact: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new();
        let mut rng = SplitMix64::new(3);
        for i in 0..20_000u64 {
            let now = i as f64 / 5000.0; // 4 slots
            let key = rng.next_u64() % 500;
            let access = if rng.next_u64().is_multiple_of(4) {
                Access::Write
            } else {
                Access::Read
            };
            c.record(now, key, key, access);
            let e = exact.entry((slot_of(now, 1.0), key / 10)).or_default();
            match access {
                Access::Read => e.0 += 1,
                Access::Write => e.1 += 1,
            }
        }
        let h = c.history();
        assert_eq!(h.len(), 4);
        let mut n = 0;
        for (&(slot, r), &(reads, writes)) in &exact {
            let got = h.counts(slot, r);
            assert_eq!(
                got,
                RangeCounts {
                    reads: reads as f64,
                    writes: writes as f64
                },
                "slot {slot} range {r}"
            );
            n += 1;
        }
        let in_history: usize = h.slots.iter().map(|s| s.counts.len()).sum();
        assert_eq!(in_history, n, "no counters beyond the accessed ranges");
        assert_eq!(c.stats().counted, 20_000);
    }

    #[test]
    fn sampling_is_unbiased_and_first_access_exact() {
        // 2000 ranges, range r accessed 50 + (r % 400) times in one slot, sampled with P = 0.05.
        let p = 0.05;
        let mut c = Collector::new(cfg(p)).unwrap();
        let mut truth = Vec::new();
        for r in 0..2000u64 {
            let n = 50 + r % 400;
            for _ in 0..n {
                c.record(0.5, r * 10 + 3, r * 10 + 3, Access::Read);
            }
            truth.push(n);
        }
        let h = c.history();
        let (mut est_sum, mut true_sum, mut var_sum, mut within) = (0.0, 0.0, 0.0, 0usize);
        for (r, &n) in truth.iter().enumerate() {
            let est = h.counts(0, r as u64).reads;
            assert!(est >= 1.0, "an accessed range always has a count");
            est_sum += est;
            true_sum += n as f64;
            let var = (n as f64 - 1.0) * (1.0 - p) / p;
            var_sum += var;
            // The paper's error bound at z = 3.
            if (est - n as f64).abs() <= 3.0 * var.sqrt() {
                within += 1;
            }
        }
        // The total's error is within 4 standard deviations (unbiased estimator).
        let sd = var_sum.sqrt();
        assert!(
            (est_sum - true_sum).abs() < 4.0 * sd,
            "est {est_sum} true {true_sum} sd {sd}"
        );
        assert!(
            within as f64 >= 0.98 * truth.len() as f64,
            "{within} of {} within 3 sd",
            truth.len()
        );
        // Sampling counted far fewer accesses than it saw.
        let st = c.stats();
        assert!(st.counted < st.range_accesses / 10, "{st:?}");
        // Writes were never seen: zero, not estimated.
        assert_eq!(h.counts(0, 5).writes, 0.0);
    }

    #[test]
    fn same_seed_same_counts() {
        let run = |seed| {
            let mut c = Collector::new(CollectorConfig { seed, ..cfg(0.1) }).unwrap();
            for i in 0..5000u64 {
                c.record(0.0, i % 37, i % 37, Access::Read);
            }
            (0..4).map(|r| c.counts(0, r).reads).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    #[test]
    fn scans_count_every_range_once() {
        let mut c = Collector::new(cfg(1.0)).unwrap();
        c.record(0.0, 5, 34, Access::Read); // ranges 0, 1, 2, 3
        c.record(0.0, 12, 12, Access::Write); // range 1
        let h = c.history();
        for r in 0..4 {
            assert_eq!(h.counts(0, r).reads, 1.0);
        }
        assert_eq!(h.counts(0, 1).writes, 1.0);
        assert_eq!(h.counts(0, 4), RangeCounts::default());
    }

    #[test]
    fn accesses_wider_than_the_limit_are_not_counted_and_refused_in_logs() {
        let mut c = Collector::new(CollectorConfig::offline(1, 1.0)).unwrap();
        c.record(0.0, 0, u64::MAX, Access::Read);
        c.record(0.0, 5, 5, Access::Read);
        assert_eq!((c.stats().too_wide, c.stats().range_accesses), (1, 1));
        let log = [AccessRecord::scan(0.0, 0, u64::MAX)];
        let err = RangeHistory::from_log(&log, &CollectorConfig::offline(100, 1.0)).unwrap_err();
        assert!(err.to_string().contains("record 0 spans"), "{err}");
    }

    #[test]
    fn retained_slots_are_pruned_and_late_accesses_dropped() {
        let mut c = Collector::new(CollectorConfig {
            retain_slots: Some(3),
            ..cfg(1.0)
        })
        .unwrap();
        for s in 0..10u64 {
            c.record(s as f64 + 0.5, s * 10, s * 10, Access::Read);
        }
        let h = c.history();
        assert_eq!(h.first_slot, 7);
        assert_eq!(h.len(), 3);
        c.record(2.0, 0, 0, Access::Read);
        assert_eq!(c.stats().dropped, 1);
        assert_eq!(c.counts(2, 0), RangeCounts::default());
        // NaN and negative times fall in slot 0 instead of panicking.
        assert_eq!(c.slot_of(f64::NAN), 0);
        assert_eq!(c.slot_of(-3.0), 0);
    }

    #[test]
    fn bad_config_is_an_error() {
        assert!(Collector::new(CollectorConfig {
            range_size: 0,
            ..cfg(1.0)
        })
        .is_err());
        assert!(Collector::new(cfg(0.0)).is_err());
        assert!(Collector::new(cfg(1.5)).is_err());
        assert!(Collector::new(CollectorConfig {
            slot_secs: 0.0,
            ..cfg(1.0)
        })
        .is_err());
        let log = [AccessRecord::read(2.0, 1), AccessRecord::read(1.0, 1)];
        let e = RangeHistory::from_log(&log, &cfg(1.0)).unwrap_err();
        assert!(e.to_string().contains("back in time"), "{e}");
    }

    #[test]
    fn a_compact_log_collects_the_same_history() {
        let mut log = Vec::new();
        let mut state = 0x9e37_79b9_u64;
        for i in 0..20_000u64 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let key = (state >> 33) % 5_000;
            let t = i as f64 * 0.001;
            log.push(match state % 7 {
                0 => AccessRecord::scan(t, key, key + (state >> 20) % 300),
                1 | 2 => AccessRecord::write(t, key),
                _ => AccessRecord::read(t, key),
            });
        }
        let compact: crate::leaper::AccessLog = log.iter().copied().collect();
        let config = CollectorConfig::offline(37, 0.5);
        let want = RangeHistory::from_log(&log, &config).unwrap();
        assert_eq!(RangeHistory::from_records(compact.iter(), &config).unwrap(), want);
        assert!(want.len() >= 40);
    }
}
