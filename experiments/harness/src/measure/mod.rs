//! Measurement shared by every paper: latency distributions ([`LatencyRecorder`]) and per-interval
//! timelines ([`IntervalSeries`]), both reported in microseconds (`docs/design.md#measuring`), and
//! this thread's CPU time ([`thread_cpu`]).

mod interval;
mod latency;

pub use interval::{Interval, IntervalPoint, IntervalSeries};
pub use latency::{LatencyRecorder, LatencySummary};

use std::time::Duration;

/// CPU time this thread has used (`CLOCK_THREAD_CPUTIME_ID`): the "measured CPU time" of modelled
/// time, which other processes on a shared machine do not inflate the way they inflate wall time.
pub fn thread_cpu() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32)
}
