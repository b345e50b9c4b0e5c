//! The key-value store against fjall, a pure-Rust LSM store (the Leaper experiments' real peer),
//! side by side in one run; `lsmlab bench-summary` puts the groups into `results/bench/peers.json`.
//!
//! - `kv_put`: 50,000 puts of 100-byte values, ascending random-looking keys, into an empty store
//!   (memtable flushes and compactions included);
//! - `kv_get`: 10,000 point reads of present keys on a store loaded with 100,000 records, all of
//!   whose pages fit the cache (warm);
//! - `kv_scan`: 1,000 range scans of 100 consecutive keys on that store.
//!
//! Not like-for-like: lsmlab's store writes its pages to an in-memory device and reads them
//! through its buffer cache; fjall writes its journal and tables to files in a temporary directory
//! (its journal is not flushed per write: `manual_journal_persist`) and reads through its block
//! cache and the operating system's page cache. fjall runs its flushes and compactions on
//! background threads, lsmlab in the writing thread. Both use 1 MiB memtables and 4 KiB blocks.
//!
//! Run: `make bench`, or `cargo bench -p lsmlab --bench kv`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fjall::config::{BlockSizePolicy, CompressionPolicy};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions};
use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::kvstore::{KvConfig, KvStore, NoWarmUp};
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
                n += s.scan(lo, lo + SCAN_LEN - 1).unwrap().len();
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
                    .count();
            }
            black_box(n)
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = kv
}
criterion_main!(benches);
