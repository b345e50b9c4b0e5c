//! lsmlab's stores against fjall, a pure-Rust LSM store (the Leaper experiments' real peer and the
//! only storage engine among lsmlab's dependencies), side by side in one run; `lsmlab
//! bench-summary` puts the groups into `results/bench/peers.json`.
//!
//! - `kv_put`: 50,000 puts of 100-byte values, ascending random-looking keys, into an empty store
//!   (memtable flushes and compactions included);
//! - `kv_get`: 10,000 point reads of present keys on a store loaded with 100,000 records, all of
//!   whose pages fit the cache (warm);
//! - `kv_scan`: 1,000 range scans of 100 consecutive keys on that store.
//!
//! - `series_insert_<layout>`: 200,000 points of 10 series (a tenth of them arriving late, up to
//!   5,000 time units behind) into the time-series store of each memory layout (IoTDB-like,
//!   IoTDB's sequence/unsequence separation, DIOL), the paper's memory budget scaled to the point
//!   count, against fjall inserting the same points keyed by (series, time) big-endian: a general
//!   LSM store is what a time-series LSM layout specialises, so it is the natural yardstick;
//! - `cluster_fetch_<layout>`: 20,000 fetches by record id of 200-byte records in a cluster of
//!   50,000 (OrientDB's paginated cluster and OEP 7's single-page cluster) on a warm cache,
//!   against fjall's point reads of the same records keyed by their insertion number (a store
//!   that finds a record by key through cached blocks, as a cluster does by rid through cached
//!   pages).
//!
//! Not like-for-like: lsmlab's store writes its pages to an in-memory device and reads them
//! through its buffer cache; fjall writes its journal and tables to files in a temporary directory
//! (its journal is not flushed per write: `manual_journal_persist`) and reads through its block
//! cache and the operating system's page cache. fjall runs its flushes and compactions on
//! background threads, lsmlab in the writing thread. Both use 1 MiB memtables and 4 KiB blocks.
//!
//! Run: `make bench`, or `cargo bench -p lsmlab --bench stores`.

// A bench may panic: that is its failure report; `criterion_group!` defines an undocumented `pub fn`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fjall::config::{BlockSizePolicy, CompressionPolicy};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions};
use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::cluster::{self, ClusterOptions, Layout as ClusterLayout};
use lsmlab_engine::kvstore::{KvConfig, KvStore, NoWarmUp};
use lsmlab_engine::series::{Layout as SeriesLayout, SeriesConfig, SeriesStore};
use lsmlab_engine::storage::{Device, MemDevice};

const PAGE_SIZE: usize = 4096;
const VALUE: [u8; 100] = [7u8; 100];
const PUTS: u64 = 50_000;
const LOADED: u64 = 100_000;
const GETS: u64 = 10_000;
const SCANS: u64 = 1_000;
const SCAN_LEN: u64 = 100;
const MEMTABLE_BYTES: u64 = 1 << 20;

/// A bijection of u64 (an odd multiplier), so that keys arrive in no particular order.
fn scatter(i: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn ours() -> KvStore {
    let device: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE_SIZE));
    let cache = Arc::new(BufferCache::new(device, 1 << 16));
    let config = KvConfig {
        memtable_bytes: MEMTABLE_BYTES,
        ..KvConfig::default()
    };
    KvStore::new(cache, config, Box::new(NoWarmUp)).expect("lsmlab store")
}

fn theirs() -> (tempfile::TempDir, Database, Keyspace) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = Database::builder(dir.path())
        .cache_size(256 << 20)
        .manual_journal_persist(true)
        .open()
        .expect("fjall database");
    let ks = db
        .keyspace("kv", || {
            KeyspaceCreateOptions::default()
                .max_memtable_size(MEMTABLE_BYTES)
                .data_block_size_policy(BlockSizePolicy::all(PAGE_SIZE as u32))
                .data_block_compression_policy(CompressionPolicy::all(CompressionType::None))
                .manual_journal_persist(true)
        })
        .expect("fjall keyspace");
    (dir, db, ks)
}

fn kv(c: &mut Criterion) {
    let mut group = c.benchmark_group("kv_put");
    group.sample_size(10).throughput(Throughput::Elements(PUTS));
    group.bench_function("lsmlab", |b| {
        b.iter(|| {
            let mut s = ours();
            for i in 0..PUTS {
                s.put(scatter(i), &VALUE).unwrap();
            }
            black_box(s.memtable_len())
        })
    });
    group.bench_function("fjall", |b| {
        b.iter(|| {
            let (dir, db, ks) = theirs();
            for i in 0..PUTS {
                ks.insert(scatter(i).to_be_bytes(), VALUE).unwrap();
            }
            drop(ks);
            drop(db);
            drop(dir);
        })
    });
    group.finish();

    let mut s = ours();
    let (_dir, _db, ks) = theirs();
    for i in 0..LOADED {
        s.put(i, &VALUE).unwrap();
        ks.insert(i.to_be_bytes(), VALUE).unwrap();
    }
    s.flush().unwrap();
    ks.rotate_memtable_and_wait().unwrap();
    // Warm both caches.
    s.scan(0, LOADED).unwrap();
    assert_eq!(ks.range(0u64.to_be_bytes()..).count() as u64, LOADED);

    let mut group = c.benchmark_group("kv_get");
    group.throughput(Throughput::Elements(GETS));
    group.bench_function("lsmlab", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for i in 0..GETS {
                n += s.get(scatter(i) % LOADED).unwrap().map_or(0, |v| v.len());
            }
            black_box(n)
        })
    });
    group.bench_function("fjall", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for i in 0..GETS {
                n += ks
                    .get((scatter(i) % LOADED).to_be_bytes())
                    .unwrap()
                    .map_or(0, |v| v.len());
            }
            black_box(n)
        })
    });
    group.finish();

    let mut group = c.benchmark_group("kv_scan");
    group.throughput(Throughput::Elements(SCANS));
    group.bench_function("lsmlab", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for i in 0..SCANS {
                let lo = scatter(i) % (LOADED - SCAN_LEN);
                n += s
                    .scan(lo, lo + SCAN_LEN - 1)
                    .unwrap()
                    .iter()
                    .map(|(_, v)| v.len())
                    .sum::<usize>();
            }
            black_box(n)
        })
    });
    group.bench_function("fjall", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for i in 0..SCANS {
                let lo = scatter(i) % (LOADED - SCAN_LEN);
                n += ks
                    .range(lo.to_be_bytes()..=(lo + SCAN_LEN - 1).to_be_bytes())
                    .map(|item| item.value().unwrap().len())
                    .sum::<usize>();
            }
            black_box(n)
        })
    });
    group.finish();
}

const SERIES: u64 = 10;
const POINTS: u64 = 200_000;

/// The arrival stream: (series, time); every tenth point is up to 5,000 time units late.
fn series_points() -> Vec<(u32, u64)> {
    (0..POINTS)
        .map(|i| {
            let series = (i % SERIES) as u32;
            let t = 10_000 + i / SERIES;
            let late = if i % 10 == 3 { scatter(i) % 5_000 } else { 0 };
            (series, t - late)
        })
        .collect()
}

fn series(c: &mut Criterion) {
    let pts = series_points();
    for layout in SeriesLayout::ALL {
        let mut group = c.benchmark_group(format!("series_insert_{}", layout.name()));
        group.sample_size(10).throughput(Throughput::Elements(POINTS));
        group.bench_function("lsmlab", |b| {
            b.iter(|| {
                let dev: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE_SIZE));
                let mut s = SeriesStore::new(SeriesConfig::paper_scaled(layout, POINTS), dev).unwrap();
                for &(id, t) in &pts {
                    s.insert(id, t, 2 * t as i64).unwrap();
                }
                black_box(s.stats())
            })
        });
        group.bench_function("fjall", |b| {
            b.iter(|| {
                let (dir, db, ks) = theirs();
                for &(id, t) in &pts {
                    let mut key = [0u8; 12];
                    key[..4].copy_from_slice(&id.to_be_bytes());
                    key[4..].copy_from_slice(&t.to_be_bytes());
                    ks.insert(key, (2 * t as i64).to_le_bytes()).unwrap();
                }
                drop(ks);
                drop(db);
                drop(dir);
            })
        });
        group.finish();
    }
}

const RECORDS: u64 = 50_000;
const FETCHES: u64 = 20_000;

fn clusters(c: &mut Criterion) {
    let record = vec![5u8; 200];
    let (_dir, _db, ks) = theirs();
    for i in 0..RECORDS {
        ks.insert(i.to_be_bytes(), &record).unwrap();
    }
    ks.rotate_memtable_and_wait().unwrap();
    assert_eq!(ks.range(0u64.to_be_bytes()..).count() as u64, RECORDS);
    for layout in ClusterLayout::ALL {
        let device: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE_SIZE));
        let cache = Arc::new(BufferCache::new(device, 1 << 16));
        let mut cl = cluster::open(layout, cache, ClusterOptions::default()).unwrap();
        let rids: Vec<_> = (0..RECORDS).map(|_| cl.insert(&record).unwrap()).collect();
        // Warm: every page read once.
        for r in &rids {
            cl.fetch(*r).unwrap();
        }
        let mut group = c.benchmark_group(format!("cluster_fetch_{}", layout.name()));
        group.throughput(Throughput::Elements(FETCHES));
        group.bench_function("lsmlab", |b| {
            b.iter(|| {
                let mut n = 0usize;
                for i in 0..FETCHES {
                    let r = rids[(scatter(i) % RECORDS) as usize];
                    n += cl.fetch(r).unwrap().found().map_or(0, |v| v.len());
                }
                black_box(n)
            })
        });
        group.bench_function("fjall", |b| {
            b.iter(|| {
                let mut n = 0usize;
                for i in 0..FETCHES {
                    n += ks
                        .get((scatter(i) % RECORDS).to_be_bytes())
                        .unwrap()
                        .map_or(0, |v| v.len());
                }
                black_box(n)
            })
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = kv, series, clusters
}
criterion_main!(benches);
