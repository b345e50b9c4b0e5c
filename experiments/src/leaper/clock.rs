//! The virtual clock of the Leaper experiments: every foreground operation advances it by a modelled
//! cost, so per-interval QPS and latency percentiles are the same for the same seed on any machine
//! (counted work in, modelled time out; DESIGN.md section 4).
//!
//! The model, per foreground operation:
//!
//! ```text
//! latency_us = cpu_op_us + hits x hit_us + misses x profile.read_us(page_size) [+ collector_us]
//! ```
//!
//! where `hits` and `misses` are the operation's data-block reads answered by the block cache or by
//! the device (each miss is one random page read), and `collector_us` is charged to the Leaper policy
//! only (its per-access statistics; the paper's Table 5 gives "< 1 us per query"). The client is one
//! closed loop: the next operation starts when the previous one ends, so the clock is the sum of the
//! latencies and an interval's QPS is its operations over its length.
//!
//! Background flushes and compactions do not occupy the foreground loop (they run on other threads
//! in the paper's X-Engine); their window on the clock lasts `(pages read + pages written) x
//! page_size / compaction bandwidth`, from the moment the engine ran them. The engine applies a
//! flush or compaction at once, inside the write that triggers it, so its invalidations happen at the
//! start of its window, not spread over it.

use lsmlab_engine::storage::DeviceProfile;

/// The modelled costs, in microseconds (and bytes per second for background I/O).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    /// CPU of one operation outside its block reads: memtable probe, Bloom filters, index search.
    pub cpu_op_us: f64,
    /// One data-block read answered by the block cache (lookup plus search inside the block).
    pub hit_us: f64,
    /// One data-block read from the device: the profile's random-read cost of one page.
    pub read_us: f64,
    /// Leaper's collector, per operation (charged to the Leaper policy only).
    pub collector_us: f64,
    /// Background I/O bandwidth of flushes and compactions, bytes per second.
    pub background_bytes_per_s: f64,
    /// Page (data block) size in bytes.
    pub page_size: usize,
}

impl CostModel {
    /// A model whose device reads cost `profile`'s random read of one `page_size` page.
    pub fn new(
        profile: DeviceProfile,
        page_size: usize,
        cpu_op_us: f64,
        hit_us: f64,
        collector_us: f64,
        background_mb_s: f64,
    ) -> CostModel {
        CostModel {
            cpu_op_us,
            hit_us,
            read_us: profile.read_us(page_size),
            collector_us,
            background_bytes_per_s: background_mb_s * 1e6,
            page_size,
        }
    }

    /// The modelled latency of one foreground operation, in microseconds.
    pub fn op_us(&self, hits: u64, misses: u64, collector: bool) -> f64 {
        self.cpu_op_us
            + hits as f64 * self.hit_us
            + misses as f64 * self.read_us
            + if collector { self.collector_us } else { 0.0 }
    }

    /// How long a flush or compaction that read and wrote these pages lasts, in seconds.
    pub fn background_s(&self, pages_read: u64, pages_written: u64) -> f64 {
        (pages_read + pages_written) as f64 * self.page_size as f64 / self.background_bytes_per_s
    }
}

/// Virtual time in seconds, advanced by modelled latencies.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VirtualClock {
    now_s: f64,
}

impl VirtualClock {
    pub fn new() -> VirtualClock {
        VirtualClock::default()
    }

    /// A clock that reads `now_s`.
    pub fn at(now_s: f64) -> VirtualClock {
        VirtualClock { now_s }
    }

    pub fn now_s(&self) -> f64 {
        self.now_s
    }

    /// Advances the clock by `us` microseconds; returns the new time.
    pub fn advance_us(&mut self, us: f64) -> f64 {
        self.now_s += us * 1e-6;
        self.now_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_costs_cpu_plus_its_block_reads() {
        let m = CostModel::new(DeviceProfile::SataSsd, 4096, 2.0, 0.5, 0.3, 100.0);
        // sata-ssd: 100 us + 4096 B / 500 B/us = 108.192 us per page read
        assert!((m.read_us - 108.192).abs() < 1e-9);
        assert!((m.op_us(0, 0, false) - 2.0).abs() < 1e-12);
        assert!((m.op_us(2, 1, false) - (2.0 + 1.0 + 108.192)).abs() < 1e-9);
        assert!((m.op_us(2, 1, true) - (2.3 + 1.0 + 108.192)).abs() < 1e-9);
        // 25 pages read + 25 written of 4 KiB at 100 MB/s: 204,800 B / 1e8 B/s
        assert!((m.background_s(25, 25) - 0.002048).abs() < 1e-12);
    }

    #[test]
    fn the_clock_adds_microseconds() {
        let mut c = VirtualClock::new();
        c.advance_us(1500.0);
        assert!((c.advance_us(500.0) - 0.002).abs() < 1e-15);
        assert_eq!(VirtualClock::at(3.0).now_s(), 3.0);
    }
}
