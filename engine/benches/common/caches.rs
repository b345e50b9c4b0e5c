//! The buffer cache and its two peers behind one read-through interface, with the inputs the cache
//! benches draw (`cache.rs`, and the paired rounds of `paired.rs`).

use lsmlab_engine::cache::{BufferCache, CacheConfig, PageRef, PolicyKind};
use lsmlab_engine::storage::{Device, MemDevice, PageId};
use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::num::NonZeroUsize;
use std::sync::Arc;

pub const CAPACITY: usize = 10_000;
pub const PAGE_SIZE: usize = 1024;
/// Reads per iteration, drawn ahead of time so that the loop measures only the cache.
pub const BATCH: usize = 4096;
/// Ids in the miss mix's stream: 256 batches (1,048,576 ids, 26x the pages they are drawn from),
/// read batch after batch, round. Far longer than any cache remembers, so that the stream is, to
/// every cache, ids drawn independently and uniformly: each keeps a quarter of the pages, whichever
/// it keeps, and misses three reads in four. A stream of 16 batches, which this replaced, came back
/// every 65,536 reads, and `quick_cache`'s scan-resistant policy learned the pages that recur in
/// it: it read the device for 63.8% of the reads against 74.8% for LRU, CLOCK and `lru`, and the
/// row compared policies on a loop rather than miss paths (device reads per read are in the paired
/// group's file).
pub const MIX_STREAM: usize = 256 * BATCH;

pub fn device(pages: u64) -> Arc<dyn Device> {
    let dev: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE_SIZE));
    let first = dev.allocate(pages);
    for i in 0..pages {
        dev.write_page(first + i, &[i as u8; PAGE_SIZE]).unwrap();
    }
    dev
}

/// A device read into a fresh shared page, as the buffer cache does on a miss.
pub fn read_device(dev: &dyn Device, id: PageId) -> PageRef {
    let mut page: PageRef = std::iter::repeat_n(0u8, PAGE_SIZE).collect();
    dev.read_page(id, Arc::get_mut(&mut page).unwrap()).unwrap();
    page
}

pub fn ids(range: u64, seed: u64) -> Vec<PageId> {
    ids_n(BATCH, range, seed)
}

pub fn ids_n(n: usize, range: u64, seed: u64) -> Vec<PageId> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(0..range)).collect()
}

/// The three caches behind one read-through interface. (Held in a short `Vec` built once; boxing
/// the largest variant, which clippy suggests, would add a pointer chase to one side only.)
#[allow(clippy::large_enum_variant)]
pub enum Peer {
    Ours(BufferCache),
    Quick(quick_cache::sync::Cache<PageId, PageRef>, Arc<dyn Device>),
    MutexLru(Mutex<lru::LruCache<PageId, PageRef>>, Arc<dyn Device>),
}

impl Peer {
    pub fn all(dev: &Arc<dyn Device>) -> Vec<(&'static str, Peer)> {
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
            ("lsmlab-lru", ours(PolicyKind::LRU)),
            ("lsmlab-clock", ours(PolicyKind::CLOCK)),
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
    pub fn read(&self, id: PageId) -> PageRef {
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
                if let Some(p) = c.lock().get(&id) {
                    return p.clone();
                }
                let p = read_device(dev.as_ref(), id);
                c.lock().put(id, p.clone());
                p
            }
        }
    }

    pub fn contains(&self, id: PageId) -> bool {
        match self {
            Peer::Ours(c) => c.contains(id),
            Peer::Quick(c, _) => c.peek(&id).is_some(),
            Peer::MutexLru(c, _) => c.lock().contains(&id),
        }
    }
}

/// CPU time consumed by the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes one timespec through the valid pointer it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The hit benches' input: every cache of [`Peer::all`] over `dev` (a device of [`CAPACITY`]
/// pages) filled before any is measured, so that none runs on a heap or a CPU state the others
/// left behind differently, and per cache a batch of [`BATCH`] ids drawn among the pages it kept
/// (an approximate cache may admit fewer).
pub fn filled_for_hits(dev: &Arc<dyn Device>) -> Vec<(&'static str, Peer, Vec<PageId>)> {
    Peer::all(dev)
        .into_iter()
        .map(|(name, peer)| {
            for id in 0..CAPACITY as u64 {
                peer.read(id);
            }
            let resident: Vec<PageId> = (0..CAPACITY as u64).filter(|&id| peer.contains(id)).collect();
            let batch = ids(resident.len() as u64, 1)
                .into_iter()
                .map(|i| resident[i as usize])
                .collect();
            (name, peer, batch)
        })
        .collect()
}

/// The miss mix's input: a device of 4x [`CAPACITY`] pages (returned, for its read count), every
/// cache of [`Peer::all`] filled from as many distinct ids as the stream draws from (so each starts
/// full), and the stream of [`MIX_STREAM`] ids the caches read batch after batch.
#[allow(clippy::type_complexity)]
pub fn filled_for_misses() -> (Arc<dyn Device>, Vec<(&'static str, Peer)>, Vec<PageId>) {
    let pages = 4 * CAPACITY as u64;
    let dev = device(pages);
    let peers = Peer::all(&dev);
    for (_, peer) in &peers {
        for &id in &ids_n(4 * CAPACITY, pages, 3) {
            peer.read(id);
        }
    }
    (dev, peers, ids_n(MIX_STREAM, pages, 2))
}
