//! The buffer cache's read path against two peers: `quick_cache` (its sync, sharded cache) and the
//! `lru` crate behind a mutex. Every cache holds the same `Arc<[u8]>` pages of one memory device.
//!
//! - `cache_hit`: reads of resident pages only (a 10,000-page cache, ids drawn at random among the
//!   resident pages), the cost of one hit;
//! - `cache_miss_mix`: ids drawn uniformly from 4x the capacity, so about three reads in four miss,
//!   read the device and evict.
//!
//! Run: `cargo bench -p lsmlab-engine --bench cache -- --warm-up-time 1 --measurement-time 3`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lsmlab_engine::cache::{BufferCache, CacheConfig, PageRef, PolicyKind};
use lsmlab_engine::storage::{Device, MemDevice, PageId};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

const CAPACITY: usize = 10_000;
const PAGE_SIZE: usize = 1024;
/// Reads per iteration, drawn ahead of time so that the loop measures only the cache.
const BATCH: usize = 4096;

fn device(pages: u64) -> Arc<dyn Device> {
    let dev: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE_SIZE));
    let first = dev.allocate(pages);
    for i in 0..pages {
        dev.write_page(first + i, &[i as u8; PAGE_SIZE]).unwrap();
    }
    dev
}

/// A device read into a fresh shared page, as the buffer cache does on a miss.
fn read_device(dev: &dyn Device, id: PageId) -> PageRef {
    let mut page: PageRef = std::iter::repeat_n(0u8, PAGE_SIZE).collect();
    dev.read_page(id, Arc::get_mut(&mut page).unwrap()).unwrap();
    page
}

fn ids(range: u64, seed: u64) -> Vec<PageId> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..BATCH).map(|_| rng.random_range(0..range)).collect()
}

/// The three caches behind one read-through interface.
enum Peer {
    Ours(BufferCache),
    Quick(quick_cache::sync::Cache<PageId, PageRef>, Arc<dyn Device>),
    MutexLru(Mutex<lru::LruCache<PageId, PageRef>>, Arc<dyn Device>),
}

impl Peer {
    fn all(dev: &Arc<dyn Device>) -> Vec<(&'static str, Peer)> {
        let ours = |policy| {
            Peer::Ours(BufferCache::from_config(
                dev.clone(),
                &CacheConfig {
                    policy,
                    capacity_pages: CAPACITY,
                },
            ))
        };
        vec![
            ("lsmlab-lru", ours(PolicyKind::Lru)),
            ("lsmlab-clock", ours(PolicyKind::Clock)),
            (
                "quick_cache",
                Peer::Quick(quick_cache::sync::Cache::new(CAPACITY), dev.clone()),
            ),
            (
                "mutex-lru",
                Peer::MutexLru(
                    Mutex::new(lru::LruCache::new(NonZeroUsize::new(CAPACITY).unwrap())),
                    dev.clone(),
                ),
            ),
        ]
    }

    #[inline]
    fn read(&self, id: PageId) -> PageRef {
        match self {
            Peer::Ours(c) => c.read(id).unwrap(),
            Peer::Quick(c, dev) => match c.get(&id) {
                Some(p) => p,
                None => {
                    let p = read_device(dev.as_ref(), id);
                    c.insert(id, p.clone());
                    p
                }
            },
            Peer::MutexLru(c, dev) => {
                if let Some(p) = c.lock().unwrap().get(&id) {
                    return p.clone();
                }
                let p = read_device(dev.as_ref(), id);
                c.lock().unwrap().put(id, p.clone());
                p
            }
        }
    }

    fn contains(&self, id: PageId) -> bool {
        match self {
            Peer::Ours(c) => c.contains(id),
            Peer::Quick(c, _) => c.peek(&id).is_some(),
            Peer::MutexLru(c, _) => c.lock().unwrap().contains(&id),
        }
    }
}

fn hit(c: &mut Criterion) {
    let dev = device(CAPACITY as u64);
    let mut group = c.benchmark_group("cache_hit");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (name, peer) in Peer::all(&dev) {
        for id in 0..CAPACITY as u64 {
            peer.read(id);
        }
        // Draw only among pages the cache actually kept (an approximate cache may admit fewer).
        let resident: Vec<PageId> = (0..CAPACITY as u64).filter(|&id| peer.contains(id)).collect();
        let batch: Vec<PageId> = ids(resident.len() as u64, 1)
            .into_iter()
            .map(|i| resident[i as usize])
            .collect();
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                for &id in &batch {
                    std::hint::black_box(peer.read(id));
                }
            })
        });
    }
    group.finish();
}

fn miss_mix(c: &mut Criterion) {
    let pages = 4 * CAPACITY as u64;
    let dev = device(pages);
    let batch = ids(pages, 2);
    let mut group = c.benchmark_group("cache_miss_mix");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (name, peer) in Peer::all(&dev) {
        for &id in ids(pages, 3).iter().cycle().take(4 * CAPACITY) {
            peer.read(id);
        }
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                for &id in &batch {
                    std::hint::black_box(peer.read(id));
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, hit, miss_mix);
criterion_main!(benches);
