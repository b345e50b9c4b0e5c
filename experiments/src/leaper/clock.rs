//! The virtual clock of the Leaper experiments: every foreground operation advances it by a modelled
//! cost, so per-interval QPS and latency percentiles are the same for the same seed on any machine
//! (counted work in, modelled time out; `docs/design.md#measuring`).
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
//! That single client is the default (`clients = 1`): it is what the code has always modelled, and
//! the paper does not say how many clients its runs had. [`Queue`] is the named alternative of
//! `clients = N > 1`: N closed-loop clients share `cpu_cores` CPU servers and `io_channels` device
//! channels, so that operations wait for one another and the queueing shows in the interval QPS
//! and p95 (the paper's QPS and latencies, by Little's law, imply hundreds of clients in flight).
//!
//! Background flushes and compactions do not occupy the foreground loop (they run on other threads
//! in the paper's X-Engine); their window on the clock lasts `(pages read + pages written) x
//! page_size / compaction bandwidth`, from the moment the engine ran them. With `compactions =
//! timed` (the default) the store's merge lasts that window too: its inputs answer reads until it
//! is installed at its end, and the warm-up policy acts on its output blocks as the clock reaches
//! them; with `compactions = instant` the engine applies it at once, inside the write that
//! triggers it, so its invalidations happen at the start of its window. Flushes are always
//! applied at once.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

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

    /// The CPU part of an operation (all but its device reads), in microseconds.
    pub fn cpu_us(&self, hits: u64, collector: bool) -> f64 {
        self.cpu_op_us + hits as f64 * self.hit_us + if collector { self.collector_us } else { 0.0 }
    }

    /// How long a flush or compaction that read and wrote these pages lasts, in seconds.
    pub fn background_s(&self, pages_read: u64, pages_written: u64) -> f64 {
        (pages_read + pages_written) as f64 * self.page_size as f64 / self.background_bytes_per_s
    }
}

/// Virtual time in seconds, advanced by modelled latencies.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct VirtualClock {
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

/// A min-heap of virtual times (non-negative `f64`s, whose bit patterns order as the numbers do)
/// with a tie-breaking tag.
type TimeHeap = BinaryHeap<Reverse<(u64, usize)>>;

#[allow(clippy::expect_used)] // a queue's heaps are never empty
fn pop_min(h: &mut TimeHeap) -> (f64, usize) {
    let Reverse((bits, tag)) = h.pop().expect("a queue's heaps are never empty");
    (f64::from_bits(bits), tag)
}

fn push(h: &mut TimeHeap, t: f64, tag: usize) {
    h.push(Reverse((t.max(0.0).to_bits(), tag)));
}

/// The multi-client queueing clock (`clients > 1`), deterministic in virtual time.
///
/// `clients` closed-loop clients each issue their next operation the moment their previous one
/// completes; the operations of the one shared op stream go, in order, to the client that is free
/// first (ties: the lowest client number), so operations start in time order and the store sees
/// them one at a time, as before. An operation then takes its CPU part (`cpu_op_us + hits x
/// hit_us [+ collector_us]`) on the first free of `cpu_cores` CPU servers, and after it its
/// device reads one after another, each `read_us` on the first free of `io_channels` device
/// channels, FIFO in the order operations start. Its latency is the time from its start to its
/// last read's end, waits included. Each operation reserves its CPU and device time when it starts
/// (a reservation, not a preemptive scheduler: a later-starting operation never overtakes an
/// earlier one's reservation). With one client no operation ever waits, and the latency is
/// exactly [`CostModel::op_us`].
#[derive(Clone, Debug)]
pub struct Queue {
    clients: TimeHeap,
    cpu: TimeHeap,
    io: TimeHeap,
}

impl Queue {
    /// `clients` clients, all free at `now_s`; servers all idle. Every count is at least 1.
    pub fn new(clients: usize, cpu_cores: usize, io_channels: usize, now_s: f64) -> Queue {
        let heap = |n: usize, t: f64| -> TimeHeap {
            let mut h = TimeHeap::with_capacity(n.max(1));
            for i in 0..n.max(1) {
                push(&mut h, t, i);
            }
            h
        };
        Queue {
            clients: heap(clients, now_s),
            cpu: heap(cpu_cores, 0.0),
            io: heap(io_channels, 0.0),
        }
    }

    /// When the next operation starts (the earliest free client).
    pub fn next_start_s(&self) -> f64 {
        self.clients
            .peek()
            .map_or(0.0, |Reverse((bits, _))| f64::from_bits(*bits))
    }

    /// Serves the next operation: it starts at [`Queue::next_start_s`], uses the CPU for `cpu_us`,
    /// then makes `misses` device reads of `read_us` each. Returns (start, end) in seconds.
    pub fn serve(&mut self, cpu_us: f64, misses: u64, read_us: f64) -> (f64, f64) {
        let (start, client) = pop_min(&mut self.clients);
        let (free, core) = pop_min(&mut self.cpu);
        let mut t = start.max(free) + cpu_us * 1e-6;
        push(&mut self.cpu, t, core);
        for _ in 0..misses {
            let (free, channel) = pop_min(&mut self.io);
            t = t.max(free) + read_us * 1e-6;
            push(&mut self.io, t, channel);
        }
        push(&mut self.clients, t, client);
        (start, t)
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

    #[test]
    fn one_client_never_waits_and_costs_what_the_single_loop_does() {
        let m = CostModel::new(DeviceProfile::SataSsd, 4096, 2.0, 0.5, 0.3, 100.0);
        let mut q = Queue::new(1, 4, 2, 0.0);
        let mut c = VirtualClock::new();
        for (i, (hits, misses)) in [(0u64, 1u64), (3, 0), (1, 2), (0, 0), (2, 5)]
            .into_iter()
            .enumerate()
        {
            let collector = i % 2 == 0;
            let (start, end) = q.serve(m.cpu_us(hits, collector), misses, m.read_us);
            assert!((start - c.now_s()).abs() < 1e-12);
            let single = m.op_us(hits, misses, collector);
            assert!(((end - start) * 1e6 - single).abs() < 1e-6, "{i}");
            c.advance_us(single);
            assert!((q.next_start_s() - c.now_s()).abs() < 1e-12);
        }
    }

    #[test]
    fn clients_queue_on_the_device_channels() {
        // every operation: 10 us of CPU, one read of 100 us; 8 clients, 2 channels, 8 cores
        let mut q = Queue::new(8, 8, 2, 0.0);
        let mut ends = Vec::new();
        let mut last_start = 0.0;
        for _ in 0..8000 {
            let (start, end) = q.serve(10.0, 1, 100.0);
            assert!(start >= last_start, "operations start in time order");
            last_start = start;
            ends.push((start, end));
        }
        // the device bounds the throughput: 2 reads per 100 us
        let span = ends.last().unwrap().1;
        let qps = 8000.0 / span;
        assert!((qps - 20_000.0).abs() / 20_000.0 < 0.01, "{qps}");
        // Little's law: 8 in flight at 20,000 per second = 400 us each, far above the 110 us alone
        let tail: Vec<f64> = ends[4000..].iter().map(|(s, e)| (e - s) * 1e6).collect();
        let mean = tail.iter().sum::<f64>() / tail.len() as f64;
        assert!((mean - 400.0).abs() < 5.0, "{mean}");
        // the same run is the same
        let mut again = Queue::new(8, 8, 2, 0.0);
        for &(s, e) in &ends {
            assert_eq!(again.serve(10.0, 1, 100.0), (s, e));
        }
    }

    #[test]
    fn cpu_bound_clients_queue_on_the_cores() {
        // no reads: 4 clients on 2 cores of 50 us each: 40,000 per second, 100 us latency
        let mut q = Queue::new(4, 2, 1, 0.0);
        let mut last = (0.0, 0.0);
        for _ in 0..4000 {
            last = q.serve(50.0, 0, 100.0);
        }
        assert!((4000.0 / last.1 - 40_000.0).abs() < 100.0, "{}", 4000.0 / last.1);
        assert!(((last.1 - last.0) * 1e6 - 100.0).abs() < 1e-6);
    }
}
