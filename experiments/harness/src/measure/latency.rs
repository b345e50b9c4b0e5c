//! A latency recorder over an HDR histogram: durations in, p50/p95/p99/p99.9/max/mean out, all in
//! microseconds.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::rows::RowBuilder;

/// Records operation latencies at nanosecond resolution with 3 significant digits (HdrHistogram's
/// usual precision: quantiles within 0.1%); the mean is kept exactly.
#[derive(Clone, Debug)]
pub struct LatencyRecorder {
    histogram: Histogram<u64>,
    total: Duration,
}

/// The summary of a [`LatencyRecorder`], in microseconds; all zero when nothing was recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LatencySummary {
    /// Operations recorded.
    pub count: u64,
    /// Exact mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 95th percentile.
    pub p95_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p99_9_us: f64,
    /// Largest.
    pub max_us: f64,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder::new()
    }
}

impl LatencyRecorder {
    /// An empty recorder (3 significant digits, any duration).
    pub fn new() -> Self {
        LatencyRecorder {
            // auto-resizing, so no duration is ever out of range
            #[allow(clippy::expect_used)] // a constant, valid precision
            histogram: Histogram::new(3).expect("3 significant digits is a valid precision"),
            total: Duration::ZERO,
        }
    }

    /// Records one operation's duration (at least 1 ns: the histogram holds no zero).
    pub fn record(&mut self, latency: Duration) {
        let nanos = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
        #[allow(clippy::expect_used)] // auto-resizing: no value is out of range
        self.histogram
            .record(nanos)
            .expect("an auto-resizing histogram accepts every value");
        self.total += latency;
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &LatencyRecorder) {
        #[allow(clippy::expect_used)] // auto-resizing: no value is out of range
        self.histogram
            .add(&other.histogram)
            .expect("an auto-resizing histogram accepts every value");
        self.total += other.total;
    }

    /// Operations recorded.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// The sum of the recorded durations.
    pub fn total(&self) -> Duration {
        self.total
    }

    /// The exact mean in microseconds (0 when empty).
    pub fn mean_us(&self) -> f64 {
        match self.count() {
            0 => 0.0,
            n => self.total.as_secs_f64() * 1e6 / n as f64,
        }
    }

    /// The latency at quantile `q` (0..=1) in microseconds (0 when empty).
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.count() == 0 {
            return 0.0;
        }
        self.histogram.value_at_quantile(q) as f64 / 1e3
    }

    /// The largest recorded latency in microseconds (0 when empty).
    pub fn max_us(&self) -> f64 {
        self.histogram.max() as f64 / 1e3
    }

    /// Count, mean and percentiles at once.
    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            count: self.count(),
            mean_us: self.mean_us(),
            p50_us: self.quantile_us(0.5),
            p95_us: self.quantile_us(0.95),
            p99_us: self.quantile_us(0.99),
            p99_9_us: self.quantile_us(0.999),
            max_us: self.max_us(),
        }
    }
}

impl LatencySummary {
    /// Adds `{prefix}mean_us`, `{prefix}p50_us`, ... `{prefix}max_us` to `row`.
    pub fn add_to(&self, row: RowBuilder, prefix: &str) -> RowBuilder {
        row.num(&format!("{prefix}mean_us"), self.mean_us)
            .num(&format!("{prefix}p50_us"), self.p50_us)
            .num(&format!("{prefix}p95_us"), self.p95_us)
            .num(&format!("{prefix}p99_us"), self.p99_us)
            .num(&format!("{prefix}p99_9_us"), self.p99_9_us)
            .num(&format!("{prefix}max_us"), self.max_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn quantiles_mean_and_max_in_microseconds() {
        let mut r = LatencyRecorder::new();
        for i in 1..=1000 {
            r.record(us(i));
        }
        let s = r.summary();
        assert_eq!(s.count, 1000);
        assert!((s.mean_us - 500.5).abs() < 1e-9, "{s:?}");
        for (got, want) in [
            (s.p50_us, 500.0),
            (s.p95_us, 950.0),
            (s.p99_us, 990.0),
            (s.p99_9_us, 999.0),
        ] {
            assert!((got - want).abs() <= want * 1e-3, "{got} vs {want}");
        }
        assert!((s.max_us - 1000.0).abs() <= 1.0, "{s:?}");
    }

    #[test]
    fn empty_recorder_reports_zeros_and_merge_adds() {
        assert_eq!(LatencyRecorder::new().summary(), LatencySummary::default());
        let (mut a, mut b) = (LatencyRecorder::new(), LatencyRecorder::new());
        a.record(us(10));
        b.record(us(30));
        b.record(Duration::ZERO);
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(a.total(), us(40));
        assert!((a.max_us() - 30.0).abs() < 0.05);
    }

    #[test]
    fn summary_fields_go_into_a_row_with_a_prefix() {
        let mut r = LatencyRecorder::new();
        r.record(us(5));
        let row = r.summary().add_to(RowBuilder::new(), "update_").build();
        let keys: Vec<&str> = row.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "update_max_us",
                "update_mean_us",
                "update_p50_us",
                "update_p95_us",
                "update_p99_9_us",
                "update_p99_us"
            ]
        );
    }
}
