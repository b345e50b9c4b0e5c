//! Measurement shared by every paper: latency distributions ([`LatencyRecorder`]) and per-interval
//! timelines ([`IntervalSeries`]), both reported in microseconds (DESIGN.md §4).

pub mod interval;
pub mod latency;

pub use interval::{Interval, IntervalPoint, IntervalSeries};
pub use latency::{LatencyRecorder, LatencySummary};
