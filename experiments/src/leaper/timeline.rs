//! What one measured run (one workload under one warm-up policy) records on the virtual clock: a
//! row per interval (the paper reports every 1 s of a 200 s run) and the run's totals, inside and
//! outside the flush and compaction windows.
//!
//! A window opens when the engine runs a flush or compaction (at the end of the write that triggered
//! it) and lasts T1, the operation's modelled I/O time ([`super::clock::CostModel::background_s`]),
//! plus T2, the recovery time after it. The paper's Table 4 compares QPS, p95 latency and cache
//! misses "during and after compactions", i.e. inside the T1 + T2 windows of compactions (§6, §7.3);
//! its overhead figure is the QPS decline outside every flush and compaction window (Table 5).

use std::time::Duration;

use lsmlab_engine::kvstore::Background;

use crate::experiment::{Row, RowBuilder};
use crate::measure::{Interval, IntervalPoint, IntervalSeries, LatencyRecorder, LatencySummary};

/// One flush or compaction on the virtual clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Window {
    pub kind: Background,
    pub start_s: f64,
    /// End of the operation itself (T1).
    pub t1_end_s: f64,
    /// End of its recovery time (T1 + T2).
    pub end_s: f64,
}

impl Window {
    fn holds(&self, t: f64) -> bool {
        self.start_s <= t && t < self.end_s
    }

    fn overlaps(&self, lo: f64, hi: f64, until: f64) -> bool {
        self.start_s < hi && lo < until
    }
}

/// Counters of one part of a run (all of it, inside windows, outside them).
#[derive(Clone, Debug, Default)]
pub(crate) struct PartStats {
    pub ops: u64,
    pub hits: u64,
    pub misses: u64,
    pub latency: LatencyRecorder,
    /// Filter and index lookups that hit / missed (accounting beside the data blocks; see
    /// [`lsmlab_engine::kvstore::MetaLookups`]).
    pub meta_hits: u64,
    pub meta_misses: u64,
    /// Point and range reads, and those that read nothing from the device (answered by the
    /// memtable, or by cached blocks only).
    pub reads: u64,
    pub reads_without_io: u64,
}

impl PartStats {
    fn add(&mut self, latency: Duration, hits: u64, misses: u64) {
        self.ops += 1;
        self.hits += hits;
        self.misses += misses;
        self.latency.record(latency);
    }

    /// hits / (hits + misses); `None` when nothing was read.
    pub fn hit_ratio(&self) -> Option<f64> {
        (self.hits + self.misses > 0).then(|| self.hits as f64 / (self.hits + self.misses) as f64)
    }

    /// The hit ratio with filter and index lookups counted as block lookups (RocksDB's block-cache
    /// hit ratio with `cache_index_and_filter_blocks = true`); `None` when nothing was looked up.
    pub fn hit_ratio_with_meta(&self) -> Option<f64> {
        let hits = self.hits + self.meta_hits;
        let all = hits + self.misses + self.meta_misses;
        (all > 0).then(|| hits as f64 / all as f64)
    }

    /// Cache misses per operation (every operation counts, reads and writes, as the streams of
    /// every policy are the same operations); `None` without operations. Unlike a raw count over a
    /// fixed virtual time, it does not charge the faster policy for the operations it served more.
    pub fn misses_per_op(&self) -> Option<f64> {
        (self.ops > 0).then(|| self.misses as f64 / self.ops as f64)
    }

    /// The share of reads that read nothing from the device; `None` without reads.
    pub fn reads_without_io_ratio(&self) -> Option<f64> {
        (self.reads > 0).then(|| self.reads_without_io as f64 / self.reads as f64)
    }

    fn add_lookups(&mut self, meta_hits: u64, meta_misses: u64, read: bool, no_io: bool) {
        self.meta_hits += meta_hits;
        self.meta_misses += meta_misses;
        self.reads += u64::from(read);
        self.reads_without_io += u64::from(read && no_io);
    }
}

/// Records one measured run on the virtual clock: each operation in the interval and the windows
/// where it starts (the last operation of a run may end after the run's end), each background
/// operation at its start (the end of the write that triggered it).
#[derive(Clone, Debug)]
pub struct RunRecorder {
    t2_s: f64,
    series: IntervalSeries,
    windows: Vec<Window>,
    all: PartStats,
    /// Inside the T1 + T2 window of a compaction.
    in_windows: PartStats,
    /// Outside every flush and compaction window.
    outside: PartStats,
    prefetch_hits: u64,
    /// Counters of background operations begun after the last recorded operation: they belong to
    /// the interval of the next one, which starts where they start.
    pending: Vec<(&'static str, u64)>,
    /// The last recorded operation: (inside a compaction window, inside any window, its misses).
    last: (bool, bool, u64),
}

/// A finished run.
#[derive(Clone, Debug)]
pub(crate) struct RunTimeline {
    pub end_s: f64,
    pub intervals: Vec<IntervalPoint>,
    pub windows: Vec<Window>,
    pub all: PartStats,
    pub in_windows: PartStats,
    pub outside: PartStats,
    pub prefetch_hits: u64,
}

/// Virtual seconds as a duration, rounded to the nanosecond.
fn dur(s: f64) -> Duration {
    Duration::from_nanos((s.max(0.0) * 1e9).round() as u64)
}

impl RunRecorder {
    /// Intervals of `interval_s` virtual seconds; windows last T1 + `t2_s`. Both must be positive
    /// (the config checks them).
    pub fn new(interval_s: f64, t2_s: f64) -> RunRecorder {
        RunRecorder {
            t2_s,
            series: IntervalSeries::new(Interval::Time(dur(interval_s))),
            windows: Vec::new(),
            all: PartStats::default(),
            in_windows: PartStats::default(),
            outside: PartStats::default(),
            prefetch_hits: 0,
            pending: Vec::new(),
            last: (false, false, 0),
        }
    }

    /// One foreground operation that started at virtual time `start_s` and took `latency_us`, with
    /// its block reads answered by the cache (`hits`) or the device (`misses`), of which
    /// `prefetch_hits` hit a block a policy had put into the cache.
    pub fn op(&mut self, start_s: f64, latency_us: f64, hits: u64, misses: u64, prefetch_hits: u64) {
        let latency = Duration::from_nanos((latency_us * 1e3).round() as u64);
        self.series.record(dur(start_s), latency);
        for (name, n) in std::mem::take(&mut self.pending) {
            self.series.add(name, n);
        }
        self.series.add("cache_hits", hits);
        self.series.add("cache_misses", misses);
        self.series.add("prefetch_hits", prefetch_hits);
        self.all.add(latency, hits, misses);
        self.prefetch_hits += prefetch_hits;
        let mut in_compaction = false;
        let mut in_any = false;
        for w in self.windows.iter().rev() {
            if w.holds(start_s) {
                in_any = true;
                in_compaction |= w.kind == Background::Compaction;
            }
        }
        if in_compaction {
            self.in_windows.add(latency, hits, misses);
        }
        if !in_any {
            self.outside.add(latency, hits, misses);
        }
        self.last = (in_compaction, in_any, misses);
    }

    /// The filter and index lookups of the operation [`RunRecorder::op`] recorded last, and
    /// whether it was a read (counted in the same parts of the run as the operation).
    pub fn lookups(&mut self, meta_hits: u64, meta_misses: u64, read: bool) {
        let (in_compaction, in_any, misses) = self.last;
        let no_io = misses == 0;
        self.all.add_lookups(meta_hits, meta_misses, read, no_io);
        if in_compaction {
            self.in_windows.add_lookups(meta_hits, meta_misses, read, no_io);
        }
        if !in_any {
            self.outside.add_lookups(meta_hits, meta_misses, read, no_io);
        }
    }

    /// A flush or compaction began at `start_s` and lasts `t1_s`; `invalidated` cached blocks of its
    /// retired runs were dropped and `admitted` output blocks put into the cache by the policy.
    pub fn background(&mut self, kind: Background, start_s: f64, t1_s: f64, invalidated: u64, admitted: u64) {
        self.windows.push(Window {
            kind,
            start_s,
            t1_end_s: start_s + t1_s,
            end_s: start_s + t1_s + self.t2_s,
        });
        let started = match kind {
            Background::Flush => "flushes_started",
            Background::Compaction => "compactions_started",
        };
        self.pending.extend([
            (started, 1),
            ("invalidations", invalidated),
            ("prefetched_blocks", admitted),
        ]);
    }

    /// Invalidations and admissions of the operation [`RunRecorder::op`] recorded last that no
    /// [`RunRecorder::background`] carries (a timed merge's, made as the clock reaches them): they
    /// count in that operation's interval.
    pub fn counts(&mut self, invalidated: u64, admitted: u64) {
        self.series.add("invalidations", invalidated);
        self.series.add("prefetched_blocks", admitted);
    }

    /// Closes the run at virtual time `end_s` (the configured run length: operations that started
    /// before it are the run's).
    pub(crate) fn finish(mut self, end_s: f64) -> RunTimeline {
        for (name, n) in std::mem::take(&mut self.pending) {
            self.series.add(name, n);
        }
        RunTimeline {
            end_s,
            intervals: self.series.finish(dur(end_s)),
            windows: self.windows,
            all: self.all,
            in_windows: self.in_windows,
            outside: self.outside,
            prefetch_hits: self.prefetch_hits,
        }
    }
}

/// Total length of the union of `spans`, each clipped to `[0, end]`.
fn union_len(mut spans: Vec<(f64, f64)>, end: f64) -> f64 {
    spans.retain(|(a, b)| b > a);
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut cur: Option<(f64, f64)> = None;
    for (a, b) in spans {
        let (a, b) = (a.clamp(0.0, end), b.clamp(0.0, end));
        match cur {
            Some((ca, cb)) if a <= cb => cur = Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                total += cb - ca;
                cur = Some((a, b));
            }
            None => cur = Some((a, b)),
        }
    }
    if let Some((a, b)) = cur {
        total += b - a;
    }
    total
}

impl RunTimeline {
    /// Seconds inside the T1 + T2 windows of compactions.
    pub fn window_s(&self) -> f64 {
        union_len(
            self.windows
                .iter()
                .filter(|w| w.kind == Background::Compaction)
                .map(|w| (w.start_s, w.end_s))
                .collect(),
            self.end_s,
        )
    }

    /// Seconds outside every flush and compaction window.
    pub fn outside_s(&self) -> f64 {
        self.end_s
            - union_len(
                self.windows.iter().map(|w| (w.start_s, w.end_s)).collect(),
                self.end_s,
            )
    }

    /// The windows of background work of `kind`.
    #[cfg(test)]
    pub(crate) fn count(&self, kind: Background) -> u64 {
        self.windows.iter().filter(|w| w.kind == kind).count() as u64
    }

    /// Operations per second over the whole run.
    pub fn qps(&self) -> f64 {
        per_s(self.all.ops, self.end_s)
    }

    pub fn qps_in_windows(&self) -> Option<f64> {
        let s = self.window_s();
        (s > 0.0).then(|| self.in_windows.ops as f64 / s)
    }

    pub fn qps_outside(&self) -> Option<f64> {
        let s = self.outside_s();
        (s > 0.0).then(|| self.outside.ops as f64 / s)
    }

    /// Whether interval `p` overlaps a flush (T1), a compaction (T1), or a compaction's T1 + T2.
    pub fn flags(&self, p: &IntervalPoint) -> (bool, bool, bool) {
        let (lo, hi) = (p.start.as_secs_f64(), p.end.as_secs_f64());
        let any = |kind: Background, until_t1: bool| {
            self.windows
                .iter()
                .any(|w| w.kind == kind && w.overlaps(lo, hi, if until_t1 { w.t1_end_s } else { w.end_s }))
        };
        (
            any(Background::Flush, true),
            any(Background::Compaction, true),
            any(Background::Compaction, false),
        )
    }

    /// One row per interval: `dims` plus `interval`, `start_s`, `ops`, `qps`, `hit_ratio` (absent
    /// when the interval read no block), `p95_us`, `p99_us`, `in_flush`, `in_compaction`,
    /// `in_window` and the interval's counters (cache hits and misses, prefetch hits, background
    /// operations started, invalidations, prefetched blocks).
    pub fn interval_rows(&self, dims: &RowBuilder) -> Vec<Row> {
        self.intervals
            .iter()
            .map(|p| {
                let (in_flush, in_compaction, in_window) = self.flags(p);
                let mut row = dims
                    .clone()
                    .str("kind", "interval")
                    .int("interval", p.interval)
                    .num("start_s", p.start.as_secs_f64())
                    .int("ops", p.ops())
                    .num("qps", p.ops_per_s())
                    .opt_num("hit_ratio", p.ratio("cache_hits", "cache_misses"))
                    .num("mean_us", p.latency.mean_us)
                    .num("p95_us", p.latency.p95_us)
                    .num("p99_us", p.latency.p99_us)
                    .bool("in_flush", in_flush)
                    .bool("in_compaction", in_compaction)
                    .bool("in_window", in_window);
                for name in [
                    "cache_hits",
                    "cache_misses",
                    "prefetch_hits",
                    "flushes_started",
                    "compactions_started",
                    "invalidations",
                    "prefetched_blocks",
                ] {
                    row = row.int(name, p.counter(name));
                }
                row.build()
            })
            .collect()
    }

    /// The p95 of each interval that ran an operation.
    /// The mean latency of every interval that holds an operation.
    pub fn interval_means(&self) -> Vec<f64> {
        self.intervals
            .iter()
            .filter(|p| p.ops() > 0)
            .map(|p| p.latency.mean_us)
            .collect()
    }

    pub fn summary(&self) -> LatencySummary {
        self.all.latency.summary()
    }
}

fn per_s(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

/// The median of `values` (0 when empty): the mean of the two middle values for an even count.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: f64 = 1e-3;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// 40 operations of 1 ms, starting at 0.5, 1.5, ... ms, in intervals of 4 ms with T2 = 8 ms; those
    /// starting in [12.25, 23.75) ms miss once, the others hit. A compaction starts at 12.25 ms and
    /// lasts 3.5 ms (window until 23.75), a flush at 32.25 ms for 1.5 ms (window until 41.75, past
    /// the run's end at 40).
    fn run() -> RunTimeline {
        let mut r = RunRecorder::new(4.0 * MS, 8.0 * MS);
        for i in 0..40u64 {
            let slow = (12..24).contains(&i);
            r.op(
                (i as f64 + 0.5) * MS,
                1000.0,
                u64::from(!slow),
                u64::from(slow),
                u64::from(i == 5),
            );
            if i == 11 {
                r.background(Background::Compaction, 12.25 * MS, 3.5 * MS, 7, 3);
            }
            if i == 31 {
                r.background(Background::Flush, 32.25 * MS, 1.5 * MS, 2, 0);
            }
        }
        r.finish(40.0 * MS)
    }

    #[test]
    fn intervals_carry_their_counters_and_window_flags() {
        let tl = run();
        assert_eq!(tl.intervals.len(), 10);
        let rows = tl.interval_rows(&RowBuilder::new().str("policy", "lru"));
        assert!(rows.iter().all(|r| r["ops"] == 4 && r["kind"] == "interval"));
        // a background operation's counters belong to the interval where its window starts
        assert_eq!(rows[3]["invalidations"], 7);
        assert_eq!(rows[3]["compactions_started"], 1);
        assert_eq!(rows[3]["prefetched_blocks"], 3);
        assert_eq!(rows[2]["invalidations"], 0);
        assert_eq!(rows[8]["flushes_started"], 1);
        assert_eq!(rows[1]["prefetch_hits"], 1);
        let flags = |i: usize| {
            (
                rows[i]["in_flush"].as_bool().unwrap(),
                rows[i]["in_compaction"].as_bool().unwrap(),
                rows[i]["in_window"].as_bool().unwrap(),
            )
        };
        assert_eq!(flags(2), (false, false, false));
        assert_eq!(flags(3), (false, true, true));
        assert_eq!(flags(4), (false, false, true));
        assert_eq!(flags(5), (false, false, true));
        assert_eq!(flags(6), (false, false, false));
        assert_eq!(flags(8), (true, false, false));
        assert_eq!(flags(9), (false, false, false));
        assert_eq!(rows[4]["hit_ratio"], 0.0);
        assert_eq!(rows[1]["hit_ratio"], 1.0);
        assert!(close(rows[1]["qps"].as_f64().unwrap(), 1000.0));
        assert!(
            (rows[1]["p95_us"].as_f64().unwrap() - 1000.0).abs() < 1.0,
            "HDR precision"
        );
    }

    #[test]
    fn window_parts_split_the_run() {
        let tl = run();
        assert_eq!(
            (tl.count(Background::Flush), tl.count(Background::Compaction)),
            (1, 1)
        );
        assert_eq!((tl.in_windows.ops, tl.in_windows.misses), (12, 12));
        assert!(close(tl.window_s(), 11.5 * MS));
        // outside: 40 ms minus [12.25, 23.75) and [32.25, 40)
        assert!(close(tl.outside_s(), 20.75 * MS), "{}", tl.outside_s());
        assert_eq!((tl.outside.ops, tl.outside.misses), (20, 0));
        assert!(close(tl.qps(), 1000.0));
        assert!(close(tl.qps_in_windows().unwrap(), 12.0 / (11.5 * MS)));
        assert_eq!(tl.in_windows.hit_ratio(), Some(0.0));
        assert_eq!(tl.prefetch_hits, 1);
    }

    #[test]
    fn spikes_count_intervals_whose_mean_is_above_a_threshold() {
        let mut r = RunRecorder::new(10.0 * MS, MS);
        for i in 0..30 {
            // The second interval: four slow operations in ten, a mean of 260 us against 100.
            let latency = if (10..14).contains(&i) { 500.0 } else { 100.0 };
            r.op((i as f64 + 0.5) * MS, latency, 1, 0, 0);
        }
        let tl = r.finish(30.0 * MS);
        let means = tl.interval_means();
        assert_eq!(means.len(), 3);
        assert!((means[1] - 260.0).abs() < 0.5, "{means:?}");
        assert!((median(&means) - 100.0).abs() < 0.5);
        let beside = super::super::beside::Beside::of(&means, &means, 2.0, None, None, None);
        assert_eq!(beside.latency_spikes, 1);
    }

    #[test]
    fn misses_per_operation_do_not_charge_the_policy_that_served_more() {
        let mut slow = PartStats::default();
        let mut fast = PartStats::default();
        for _ in 0..100 {
            slow.add(Duration::from_micros(10), 0, 1);
        }
        for _ in 0..150 {
            fast.add(Duration::from_micros(5), 1, 1);
        }
        // More misses in a window of the same length, and fewer per operation.
        assert!(fast.misses > slow.misses);
        assert_eq!(slow.misses_per_op(), Some(1.0));
        assert_eq!(fast.misses_per_op(), Some(1.0));
        assert_eq!(PartStats::default().misses_per_op(), None);
    }

    #[test]
    fn unions_merge_overlaps_and_clip() {
        assert_eq!(union_len(vec![(0.0, 2.0), (1.0, 3.0), (5.0, 9.0)], 6.0), 4.0);
        assert_eq!(union_len(vec![], 6.0), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
