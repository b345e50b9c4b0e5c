//! Timelines: operations grouped into intervals of a fixed number of operations or of time, one
//! tidy row per interval (`docs/design.md#measuring`: time series "are rows, one per interval"),
//! such as throughput, cache hit ratio and latency percentiles after each flush or compaction.

use std::time::Duration;

use super::{LatencyRecorder, LatencySummary};
use crate::rows::{Row, RowBuilder};

/// How operations are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    /// Every `n` operations (deterministic: the same stream gives the same intervals).
    Ops(u64),
    /// Every span of run time.
    Time(Duration),
}

/// One closed interval.
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalPoint {
    /// 0, 1, 2, ... in run order.
    pub interval: u64,
    /// Run time at which the interval began and ended.
    pub start: Duration,
    /// See [`IntervalPoint::start`].
    pub end: Duration,
    /// Latencies of the operations that ended in the interval.
    pub latency: LatencySummary,
    /// Counters added during the interval, in the order first added (e.g. `cache_hits`).
    pub counters: Vec<(&'static str, u64)>,
}

impl IntervalPoint {
    /// Operations that ended in the interval.
    pub fn ops(&self) -> u64 {
        self.latency.count
    }

    /// Operations per second over the interval (0 for an interval of no duration).
    pub fn ops_per_s(&self) -> f64 {
        let s = self.end.saturating_sub(self.start).as_secs_f64();
        if s > 0.0 {
            self.ops() as f64 / s
        } else {
            0.0
        }
    }

    /// A counter's value in this interval (0 when never added).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, v)| *v)
    }

    /// `part / (part + rest)` of two counters, e.g. `ratio("cache_hits", "cache_misses")`; `None`
    /// when both are 0.
    pub fn ratio(&self, part: &str, rest: &str) -> Option<f64> {
        let (p, r) = (self.counter(part), self.counter(rest));
        (p + r > 0).then(|| p as f64 / (p + r) as f64)
    }

    /// A tidy row: `dims` (the cell's dimensions) plus `interval`, `start_s`, `ops`, `ops_s`, the
    /// latency summary (`mean_us` ... `max_us`), every counter, and `hit_ratio` when the counters
    /// `cache_hits` and `cache_misses` were added.
    pub fn row(&self, dims: &RowBuilder) -> Row {
        let mut row = dims
            .clone()
            .int("interval", self.interval)
            .num("start_s", self.start.as_secs_f64())
            .int("ops", self.ops())
            .num("ops_s", self.ops_per_s());
        row = self.latency.add_to(row, "");
        for (name, value) in &self.counters {
            row = row.int(name, *value);
        }
        row.opt_num("hit_ratio", self.ratio("cache_hits", "cache_misses"))
            .build()
    }
}

/// Collects [`IntervalPoint`]s from a stream of operations. The caller passes the run time of each
/// operation, so the series needs no clock of its own (and tests can drive it).
#[derive(Clone, Debug)]
pub struct IntervalSeries {
    every: Interval,
    start: Duration,
    latency: LatencyRecorder,
    counters: Vec<(&'static str, u64)>,
    points: Vec<IntervalPoint>,
}

impl IntervalSeries {
    /// Panics on an empty interval (`Ops(0)` or a zero duration): a bug in the experiment, which
    /// checks its config first.
    pub fn new(every: Interval) -> Self {
        assert!(
            every != Interval::Ops(0) && every != Interval::Time(Duration::ZERO),
            "an interval must not be empty"
        );
        IntervalSeries {
            every,
            start: Duration::ZERO,
            latency: LatencyRecorder::new(),
            counters: Vec::new(),
            points: Vec::new(),
        }
    }

    /// Adds `n` to a counter of the current interval (e.g. the cache hits an operation caused).
    pub fn add(&mut self, counter: &'static str, n: u64) {
        match self.counters.iter_mut().find(|(name, _)| *name == counter) {
            Some((_, v)) => *v += n,
            None => self.counters.push((counter, n)),
        }
    }

    /// Records one operation that ended at run time `at` and took `latency`; closes the interval
    /// when it is full.
    pub fn record(&mut self, at: Duration, latency: Duration) {
        if let Interval::Time(span) = self.every {
            // operations that end after the interval belong to the next one
            while at >= self.start + span {
                let end = self.start + span;
                self.close(end);
            }
        }
        self.latency.record(latency);
        if let Interval::Ops(n) = self.every {
            if self.latency.count() >= n {
                self.close(at);
            }
        }
    }

    fn close(&mut self, end: Duration) {
        let latency = std::mem::take(&mut self.latency);
        self.points.push(IntervalPoint {
            interval: self.points.len() as u64,
            start: self.start,
            end,
            latency: latency.summary(),
            counters: std::mem::take(&mut self.counters),
        });
        self.start = end;
    }

    /// The intervals, closing the last one at `end` if it holds anything.
    pub fn finish(mut self, end: Duration) -> Vec<IntervalPoint> {
        if self.latency.count() > 0 || !self.counters.is_empty() {
            self.close(end.max(self.start));
        }
        self.points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn op_intervals_close_every_n_operations() {
        let mut s = IntervalSeries::new(Interval::Ops(3));
        for i in 1..=7u64 {
            s.record(ms(i * 10), Duration::from_micros(i));
            s.add("cache_hits", 1);
            if i % 2 == 0 {
                s.add("cache_misses", 1);
            }
        }
        let points = s.finish(ms(100));
        assert_eq!(points.iter().map(|p| p.ops()).collect::<Vec<_>>(), [3, 3, 1]);
        assert_eq!(points[0].interval, 0);
        assert_eq!((points[0].start, points[0].end), (ms(0), ms(30)));
        assert_eq!((points[2].start, points[2].end), (ms(60), ms(100)));
        assert!((points[0].ops_per_s() - 100.0).abs() < 1e-9);
        // op 3 closed interval 0 before its counters were added
        assert_eq!(points[0].counter("cache_hits"), 2);
        assert_eq!(points[1].ratio("cache_hits", "cache_misses"), Some(3.0 / 4.0));
        let row = points[1].row(&RowBuilder::new().str("strategy", "UM"));
        assert_eq!(row["strategy"], "UM");
        assert_eq!(row["interval"], 1);
        assert_eq!(row["ops"], 3);
        assert_eq!(row["cache_hits"], 3);
        assert!(row.contains_key("p95_us") && row.contains_key("hit_ratio"));
    }

    #[test]
    fn time_intervals_include_empty_spans() {
        let mut s = IntervalSeries::new(Interval::Time(ms(10)));
        s.record(ms(1), Duration::from_micros(1));
        s.record(ms(9), Duration::from_micros(1));
        s.record(ms(35), Duration::from_micros(1));
        let points = s.finish(ms(36));
        assert_eq!(points.iter().map(|p| p.ops()).collect::<Vec<_>>(), [2, 0, 0, 1]);
        assert_eq!(points[3].start, ms(30));
        assert_eq!(points[1].latency, LatencySummary::default());
        let row = points[1].row(&RowBuilder::new());
        assert!(!row.contains_key("hit_ratio"));
    }

    #[test]
    #[should_panic(expected = "empty")]
    fn an_empty_interval_is_a_bug() {
        let _ = IntervalSeries::new(Interval::Ops(0));
    }
}
