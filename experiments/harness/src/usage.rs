//! What a cell cost the process that ran it: CPU time over every thread, and the peak resident
//! memory. The runner records both beside each cell's wall time in the result file
//! ([`crate::result::CellRecord`]), so that a result says what producing it took, and a
//! paper-scale run's peak can be set beside the memory estimate it was started with
//! ([`crate::result::CellLog::memory_estimate_bytes`]) without wrapping the run in `time -v`.
//!
//! The CPU time is the process's (`CLOCK_PROCESS_CPUTIME_ID`: user and system, every thread,
//! including threads that have ended), so on a shared machine it is the figure to compare between
//! runs where wall time is not. The peak is Linux's high-water mark of the resident set (`VmHWM`
//! in `/proc/self/status`), which [`Meter::start`] resets (`/proc/self/clear_refs`, value 5) so
//! that it covers the cell alone; where it cannot be reset, only a process's first cell records a
//! peak (it then also covers what the process did before the cell), and elsewhere none is recorded.

use crate::measure::process_cpu;
use std::time::Duration;

/// Measures one cell from [`Meter::start`] to [`Meter::finish`].
#[derive(Debug)]
pub struct Meter {
    cpu_at_start: Duration,
    /// The peak read at the end belongs to this cell: the mark was reset at its start, or nothing
    /// ran in the process before it.
    peak_is_the_cells: bool,
}

/// What [`Meter::finish`] measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Usage {
    /// CPU seconds the process used over the cell, every thread, user and system.
    pub cpu_s: f64,
    /// The largest resident set of the process over the cell, in bytes; `None` where the system
    /// cannot tell it for the cell alone.
    pub peak_rss_bytes: Option<u64>,
}

impl Meter {
    /// Starts measuring a cell. `first_in_process`: no earlier cell ran in this process, so a peak
    /// that cannot be reset still belongs to this cell.
    pub fn start(first_in_process: bool) -> Meter {
        let reset = reset_peak_rss();
        Meter {
            cpu_at_start: process_cpu(),
            peak_is_the_cells: reset || first_in_process,
        }
    }

    /// The CPU time and the peak since [`Meter::start`].
    pub fn finish(&self) -> Usage {
        Usage {
            cpu_s: process_cpu().saturating_sub(self.cpu_at_start).as_secs_f64(),
            peak_rss_bytes: if self.peak_is_the_cells { peak_rss() } else { None },
        }
    }
}

/// The process's peak resident set in bytes (`VmHWM`), where the system reports it.
pub fn peak_rss() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// A `kB` line of this process's `/proc/self/status`, in bytes.
fn status_bytes(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    kib_line_bytes(&status, key)
}

/// A memory size as results and progress lines give it: `612 MiB`, `1.84 GiB`.
pub fn size(bytes: u64) -> String {
    const MIB: f64 = (1u64 << 20) as f64;
    if bytes < 1 << 30 {
        format!("{:.0} MiB", bytes as f64 / MIB)
    } else {
        format!("{:.2} GiB", bytes as f64 / (1024.0 * MIB))
    }
}

/// Resets the kernel's peak-resident-set mark of this process to its current resident set;
/// whether it could.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The line `key   1234 kB` (e.g. `VmHWM:`) of a `/proc/<pid>/status` text, in bytes.
fn kib_line_bytes(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    let mut words = line[key.len()..].split_whitespace();
    let kib: u64 = words.next()?.parse().ok()?;
    (words.next() == Some("kB")).then_some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_is_read_from_the_status_line_in_bytes() {
        let status = "Name:\tlsmlab\nVmPeak:\t  900 kB\nVmHWM:\t    1234 kB\nVmRSS:\t  1000 kB\n";
        assert_eq!(kib_line_bytes(status, "VmHWM:"), Some(1234 * 1024));
        assert_eq!(kib_line_bytes(status, "VmRSS:"), Some(1000 * 1024));
        assert_eq!(kib_line_bytes("VmRSS:\t1000 kB\n", "VmHWM:"), None);
        assert_eq!(kib_line_bytes("VmHWM:\t12 MB\n", "VmHWM:"), None);
        assert_eq!(kib_line_bytes("VmHWM:\tmany kB\n", "VmHWM:"), None);
    }

    /// A cell that touches 64 MiB more than the process held at its start peaks at least that much
    /// above it, whatever earlier cells of the process held (the mark is reset at the start).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_cells_peak_covers_what_it_touched_and_not_what_came_before() {
        const MIB: u64 = 1 << 20;
        // An earlier "cell" that held 768 MiB and let it go.
        let before = vec![1u8; (768 * MIB) as usize];
        std::hint::black_box(&before);
        drop(before);
        let resident_at_start = status_bytes("VmRSS:").expect("VmRSS on Linux");
        let meter = Meter::start(false);
        let held = vec![1u8; (64 * MIB) as usize];
        std::hint::black_box(&held);
        let usage = meter.finish();
        drop(held);
        let peak = usage.peak_rss_bytes.expect("Linux resets and reports the peak");
        assert!(
            peak >= resident_at_start + 60 * MIB,
            "peak {peak} B, {resident_at_start} B at start"
        );
        // Other test threads of this process allocate too, so the bound is loose; the 768 MiB let
        // go before the start must not count.
        assert!(
            peak < resident_at_start + 512 * MIB,
            "peak {peak} B, {resident_at_start} B at start"
        );
    }

    #[test]
    fn cpu_time_grows_with_work_done_and_is_never_negative() {
        let meter = Meter::start(true);
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        std::hint::black_box(x);
        let usage = meter.finish();
        assert!(usage.cpu_s > 0.0, "{usage:?}");
    }
}
