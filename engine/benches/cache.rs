//! The buffer cache's read path against two peers: `quick_cache` (its sync, sharded cache) and the
//! `lru` crate behind a mutex. Every cache holds the same `Arc<[u8]>` pages of one memory device.
//!
//! - `cache_hit`: reads of resident pages only (a 10,000-page cache, ids drawn at random among the
//!   resident pages), the cost of one hit;
//! - `cache_miss_mix`: ids drawn uniformly from 4x the capacity, so about three reads in four miss,
//!   read the device and evict. Each iteration reads the next [`BATCH`] ids of one stream of
//!   [`MIX_STREAM`] ids, far more than the cache holds, so the reads keep missing however many
//!   iterations criterion runs. (The row used to reread one batch of 4,096 ids every iteration: from
//!   the second iteration on every page of it was resident, and the row measured hits only. Then
//!   it cycled a stream of 16 batches, whose recurring pages one peer's policy learned; see
//!   [`MIX_STREAM`].)
//!
//! Times are the benchmarking thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), not wall time: on a
//! shared machine the wall clock also counts the time the thread waits to be scheduled, which
//! swamps a 100 ns operation. Each benchmark is single-threaded, so on an idle machine both agree.
//!
//! Run: `cargo bench -p lsmlab-engine --bench cache -- --warm-up-time 1 --measurement-time 3`.

// A bench may panic: that is its failure report; `criterion_group!` defines an undocumented `pub fn`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

mod common;
use common::caches::{device, filled_for_hits, filled_for_misses, thread_cpu_ns, BATCH, CAPACITY};

/// Criterion measurement: the benchmarking thread's CPU time.
struct ThreadCpuTime;

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns() - start
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuNanos
    }
}

/// Formats nanoseconds of CPU time the way criterion formats durations.
struct CpuNanos;

impl ValueFormatter for CpuNanos {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = match typical {
            t if t < 1e3 => (1.0, "ns"),
            t if t < 1e6 => (1e-3, "µs"),
            t if t < 1e9 => (1e-6, "ms"),
            _ => (1e-9, "s"),
        };
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }

    fn scale_throughputs(&self, _typical: f64, throughput: &Throughput, values: &mut [f64]) -> &'static str {
        let per_iter = match *throughput {
            Throughput::Elements(n)
            | Throughput::Bytes(n)
            | Throughput::BytesDecimal(n)
            | Throughput::Bits(n) => n as f64,
        };
        // Millions of elements (or bytes, bits) per CPU second.
        values.iter_mut().for_each(|v| *v = per_iter * 1e3 / *v);
        match throughput {
            Throughput::Elements(_) => "Melem/s",
            _ => "M/s",
        }
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

type Crit = Criterion<ThreadCpuTime>;

fn hit(c: &mut Crit) {
    let dev = device(CAPACITY as u64);
    let mut group = c.benchmark_group("cache_hit");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (name, peer, batch) in &filled_for_hits(&dev) {
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                for &id in batch {
                    std::hint::black_box(peer.read(id));
                }
            })
        });
    }
    group.finish();
}

fn miss_mix(c: &mut Crit) {
    let mut group = c.benchmark_group("cache_miss_mix");
    group.throughput(Throughput::Elements(BATCH as u64));
    let (_, peers, stream) = filled_for_misses();
    for (name, peer) in &peers {
        let mut batches = stream.chunks_exact(BATCH).cycle();
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                for &id in batches.next().expect("the stream cycles") {
                    std::hint::black_box(peer.read(id));
                }
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = hit, miss_mix
}
criterion_main!(benches);
