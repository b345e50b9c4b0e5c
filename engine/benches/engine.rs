//! Criterion benches of the engine's hot paths: memory R-tree inserts, Update Memo operations,
//! disk R-tree searches and a small ingest under each paper strategy.

// A bench may panic: that is its failure report; `criterion_group!` defines an undocumented `pub fn`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::geom::{HilbertCurve, Point, Rect};
use lsmlab_engine::rtree::{DiskRTree, MemRTree, SpatialEntry};
use lsmlab_engine::spatial::{LsmRTree, SpatialConfig, Strategy, UpdateMemo};
use lsmlab_engine::storage::{Device, MemDevice};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::hint::black_box;
use std::sync::Arc;

const EXTENT: Rect = Rect::new(0.0, 0.0, 1000.0, 1000.0);

fn points(n: usize, seed: u64) -> Vec<Point> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n)
        .map(|_| Point::new(rng.random::<f64>() * 1000.0, rng.random::<f64>() * 1000.0))
        .collect()
}

fn mem_rtree(c: &mut Criterion) {
    let pts = points(20_000, 1);
    c.bench_function("mem_rtree/insert_20k", |b| {
        b.iter(|| {
            let mut t = MemRTree::new(2048);
            for (i, p) in pts.iter().enumerate() {
                t.insert(SpatialEntry::new(*p, i as u64, i as u64));
            }
            black_box(t.node_count())
        })
    });
}

fn update_memo(c: &mut Criterion) {
    c.bench_function("update_memo/record_release_100k", |b| {
        b.iter(|| {
            let um = UpdateMemo::new();
            for i in 0..100_000u64 {
                um.record_obsolete(i % 5_000, i + 1);
            }
            for i in 0..100_000u64 {
                um.release(i % 5_000);
            }
            black_box(um.len())
        })
    });
}

fn disk_rtree(c: &mut Criterion) {
    let h = HilbertCurve::new(EXTENT);
    let mut entries: Vec<SpatialEntry> = points(100_000, 2)
        .into_iter()
        .enumerate()
        .map(|(i, p)| SpatialEntry::new(p, i as u64, 1))
        .collect();
    entries.sort_by_key(|e| h.key(e.point));
    let device: Arc<dyn Device> = Arc::new(MemDevice::new(2048));
    let tree = DiskRTree::bulk_load(device.as_ref(), entries.into_iter()).unwrap();
    let cache = BufferCache::new(device, 1 << 16);
    let queries: Vec<Rect> = points(256, 3)
        .into_iter()
        .map(|p| EXTENT.box_around(p, 0.027))
        .collect();
    c.bench_function("disk_rtree/search_s0.027_warm", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % queries.len();
            let mut n = 0u64;
            tree.search(&cache, &queries[i], |_| n += 1).unwrap();
            black_box(n)
        })
    });
}

fn ingest(c: &mut Criterion) {
    // 2,000 objects moving 10 times each, with small random steps.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let mut pos = points(2_000, 5);
    let mut stream = Vec::new();
    for (oid, p) in pos.iter().enumerate() {
        stream.push((oid as u64, None, *p));
    }
    for _ in 0..10 {
        for (oid, p) in pos.iter_mut().enumerate() {
            let to = Point::new(p.x + rng.random::<f64>() - 0.5, p.y + rng.random::<f64>() - 0.5);
            stream.push((oid as u64, Some(*p), to));
            *p = to;
        }
    }
    let mut group = c.benchmark_group("ingest_22k");
    group.sample_size(10);
    for name in Strategy::PAPER {
        let strategy: Strategy = name.parse().unwrap();
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let device: Arc<dyn Device> = Arc::new(MemDevice::new(2048));
                    let cache = Arc::new(BufferCache::new(device, 256));
                    LsmRTree::new(SpatialConfig::new(strategy, EXTENT, 64), cache).unwrap()
                },
                |mut index| {
                    for &(oid, from, to) in &stream {
                        match from {
                            None => index.insert(oid, to).unwrap(),
                            Some(f) => index.update(oid, Some(f), to).unwrap(),
                        }
                    }
                    black_box(index.stats())
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, mem_rtree, update_memo, disk_rtree, ingest);
criterion_main!(benches);
