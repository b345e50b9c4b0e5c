//! Measurement shared by every paper: latency distributions ([`LatencyRecorder`]) and per-interval
//! timelines ([`IntervalSeries`]), both reported in microseconds (`docs/design.md#measuring`), and
//! this thread's and this process's CPU time ([`thread_cpu`], [`process_cpu`]).

mod interval;
mod latency;

pub use interval::{Interval, IntervalPoint, IntervalSeries};
pub use latency::{LatencyRecorder, LatencySummary};

use std::time::Duration;

/// CPU time this thread has used (`CLOCK_THREAD_CPUTIME_ID`): the "measured CPU time" of modelled
/// time, which other processes on a shared machine do not inflate the way they inflate wall time.
pub fn thread_cpu() -> Duration {
    cpu_clock(rustix::time::ClockId::ThreadCPUTime)
}

/// CPU time this process has used (`CLOCK_PROCESS_CPUTIME_ID`): every thread, including those that
/// have ended, user and system ([`crate::usage`]).
pub fn process_cpu() -> Duration {
    cpu_clock(rustix::time::ClockId::ProcessCPUTime)
}

fn cpu_clock(id: rustix::time::ClockId) -> Duration {
    let ts = rustix::time::clock_gettime(id);
    Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32)
}
