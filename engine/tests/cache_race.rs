//! A page read racing its page's invalidation, reuse and in-place rewrite in the shared buffer
//! cache ([`BufferCache`] is one `Arc` used by every thread of a run: one lock over the table,
//! device reads of misses outside it).
//!
//! Every page's bytes encode (page id, generation) in every 16-byte word, so a reader can tell a
//! page of another id, a torn mix of generations, and a stale generation. Writer threads own pages
//! and, at random, either retire one (unpublish it, free it through the cache, allocate a page,
//! which may be an id just freed by anyone, write a new generation straight to the device, as a
//! flush or merge writes a new run, maybe admit it to the cache, publish it), or rewrite a live
//! page in place through the cache with a new generation (as a cluster updates a page), or evict
//! or write back dirty pages. Reader threads read random page ids through the cache. A reader
//! must never get:
//! - the bytes of another page id, or a page whose words disagree (torn);
//! - a generation older than the one published before its read started (a stale page: the cache
//!   must not keep, or install, bytes a later write replaced);
//! - an error, unless the page was retired (freed, possibly reused) while it read.
//!
//! The device under the cache yields the processor inside each read and free, so misses stay out
//! of the lock long enough for writers to act meanwhile. Run on the memory device and on a real file,
//! with caches of 0, 4 and 64 pages over 96 pages. `cargo test` runs `CACHE_RACE_OPS` (default
//! 10,000) reads per reader thread and configuration; `make soak` runs more.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::storage::{Device, FileDevice, IoStats, MemDevice, PageId};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

mod common;
use common::env_u64;

const PAGE: usize = 256;
const WRITERS: usize = 2;
const READERS: usize = 4;
const PAGES_PER_WRITER: usize = 48;
const IDS: usize = WRITERS * PAGES_PER_WRITER;

/// A device that yields the processor in the middle of every read (after the bytes are read,
/// before the cache takes its lock again) and before every free, to widen the windows of a miss.
struct Yielding(Arc<dyn Device>);

impl Device for Yielding {
    fn page_size(&self) -> usize {
        self.0.page_size()
    }
    fn allocate(&self, count: u64) -> PageId {
        self.0.allocate(count)
    }
    fn free(&self, first: PageId, count: u64) {
        // Also between the cache's invalidation of a freed extent and the device's freeing it.
        std::thread::yield_now();
        self.0.free(first, count)
    }
    fn write_page(&self, id: PageId, data: &[u8]) -> lsmlab_engine::Result<()> {
        self.0.write_page(id, data)
    }
    fn read_page(&self, id: PageId, buf: &mut [u8]) -> lsmlab_engine::Result<()> {
        std::thread::yield_now();
        let r = self.0.read_page(id, buf);
        std::thread::yield_now();
        r
    }
    fn read_page_uncounted(&self, id: PageId, buf: &mut [u8]) -> lsmlab_engine::Result<()> {
        self.0.read_page_uncounted(id, buf)
    }
    fn sync(&self) -> lsmlab_engine::Result<()> {
        self.0.sync()
    }
    fn stats(&self) -> IoStats {
        self.0.stats()
    }
    fn allocated_pages(&self) -> u64 {
        self.0.allocated_pages()
    }
}

fn encode(id: PageId, generation: u64) -> Vec<u8> {
    let mut page = vec![0u8; PAGE];
    for w in page.chunks_mut(16) {
        w[..8].copy_from_slice(&id.to_le_bytes());
        w[8..].copy_from_slice(&generation.to_le_bytes());
    }
    page
}

/// The (id, generation) every word of `page` agrees on, or why not.
fn decode(page: &[u8]) -> Result<(PageId, u64), String> {
    let word = |w: &[u8]| {
        (
            u64::from_le_bytes(w[..8].try_into().unwrap()),
            u64::from_le_bytes(w[8..16].try_into().unwrap()),
        )
    };
    if page.len() != PAGE {
        return Err(format!("a page of {} bytes", page.len()));
    }
    let first = word(&page[..16]);
    match page.chunks(16).map(word).find(|w| *w != first) {
        Some(other) => Err(format!("torn page: words {first:?} and {other:?}")),
        None => Ok(first),
    }
}

/// What readers may know of a page id: the generation last published (0: never), whether it is
/// live, and how many times it was retired.
struct Published {
    generation: Vec<AtomicU64>,
    live: Vec<AtomicBool>,
    retired: Vec<AtomicU64>,
}

/// What a configuration's readers and writers did.
#[derive(Default, Debug)]
struct Counts {
    reads: u64,
    errors_after_retire: u64,
    retired: u64,
    rewritten: u64,
    evictions: u64,
}

fn race(device: Arc<dyn Device>, capacity: usize, retire: bool, reads_per_reader: u64, seed: u64) -> Counts {
    let dev: Arc<dyn Device> = Arc::new(Yielding(device));
    let cache = Arc::new(BufferCache::new(dev.clone(), capacity));
    let next_gen = AtomicU64::new(1);
    let pubd = Published {
        generation: (0..IDS).map(|_| AtomicU64::new(0)).collect(),
        live: (0..IDS).map(|_| AtomicBool::new(false)).collect(),
        retired: (0..IDS).map(|_| AtomicU64::new(0)).collect(),
    };
    // Every writer's first pages, written and published.
    let first = dev.allocate(IDS as u64);
    assert_eq!(first, 0);
    for id in 0..IDS as u64 {
        let g = next_gen.fetch_add(1, SeqCst);
        dev.write_page(id, &encode(id, g)).unwrap();
        pubd.generation[id as usize].store(g, SeqCst);
        pubd.live[id as usize].store(true, SeqCst);
    }
    let done = AtomicBool::new(false);
    let what = format!("cache {capacity}, retire {retire}, seed {seed}");
    let mut counts = Counts::default();
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (cache, dev, pubd, next_gen, done) = (&cache, &dev, &pubd, &next_gen, &done);
                s.spawn(move || {
                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (100 + w as u64));
                    let mut owned: Vec<PageId> =
                        ((w * PAGES_PER_WRITER) as u64..((w + 1) * PAGES_PER_WRITER) as u64).collect();
                    let (mut retired, mut rewritten) = (0u64, 0u64);
                    while !done.load(SeqCst) {
                        let i = rng.random_range(0..owned.len());
                        let p = owned[i];
                        match rng.random_range(if retire { 0 } else { 4 }..10) {
                            0..4 => {
                                // Retire p (unpublish, then free through the cache), then write a
                                // new generation on a freshly allocated page and publish it.
                                pubd.live[p as usize].store(false, SeqCst);
                                pubd.retired[p as usize].fetch_add(1, SeqCst);
                                cache.free(p, 1);
                                let q = dev.allocate(1);
                                assert!((q as usize) < IDS, "the device grew to page {q}");
                                let g = next_gen.fetch_add(1, SeqCst);
                                let bytes = encode(q, g);
                                dev.write_page(q, &bytes).unwrap();
                                if rng.random_bool(0.5) {
                                    cache.admit(q, &bytes).unwrap();
                                }
                                pubd.generation[q as usize].store(g, SeqCst);
                                pubd.live[q as usize].store(true, SeqCst);
                                owned[i] = q;
                                retired += 1;
                            }
                            4..9 => {
                                // Rewrite p in place through the cache.
                                let g = next_gen.fetch_add(1, SeqCst);
                                cache.write(p, &encode(p, g)).unwrap();
                                pubd.generation[p as usize].store(g, SeqCst);
                                rewritten += 1;
                            }
                            _ => {
                                if rng.random_bool(0.5) {
                                    cache.evict(p).unwrap();
                                } else {
                                    cache.flush_dirty().unwrap();
                                }
                            }
                        }
                        if rng.random_bool(0.3) {
                            std::thread::yield_now();
                        }
                    }
                    (retired, rewritten)
                })
            })
            .collect();
        let readers: Vec<_> = (0..READERS)
            .map(|r| {
                let (cache, pubd, what) = (&cache, &pubd, &what);
                s.spawn(move || {
                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (200 + r as u64));
                    let mut excused = 0u64;
                    for _ in 0..reads_per_reader {
                        let id = rng.random_range(0..IDS as u64);
                        let at = id as usize;
                        let retired0 = pubd.retired[at].load(SeqCst);
                        let live0 = pubd.live[at].load(SeqCst);
                        let gen0 = pubd.generation[at].load(SeqCst);
                        let got = cache.read(id);
                        let retired1 = pubd.retired[at].load(SeqCst);
                        let was_retired = !live0 || retired1 != retired0;
                        match got {
                            Ok(page) => {
                                let (pid, g) = decode(&page).unwrap_or_else(|e| panic!("{what}: page {id}: {e}"));
                                assert_eq!(pid, id, "{what}: asked for page {id}, got page {pid}'s bytes");
                                if !was_retired {
                                    assert!(
                                        g >= gen0,
                                        "{what}: page {id}: generation {g}, but {gen0} was published before the read"
                                    );
                                }
                            }
                            Err(e) => {
                                assert!(was_retired, "{what}: reading live page {id} failed: {e}");
                                excused += 1;
                            }
                        }
                    }
                    excused
                })
            })
            .collect();
        let read: Vec<_> = readers.into_iter().map(|h| h.join()).collect();
        // Stop the writers whatever the readers found, then report it.
        done.store(true, SeqCst);
        for h in writers {
            let (a, b) = h.join().expect("a writer panicked");
            counts.retired += a;
            counts.rewritten += b;
        }
        for r in read {
            counts.errors_after_retire += r.expect("a reader panicked");
        }
    });
    counts.reads = reads_per_reader * READERS as u64;
    counts.evictions = cache.stats().evictions;
    // At rest every live page reads back as its published generation.
    for id in 0..IDS as u64 {
        if pubd.live[id as usize].load(SeqCst) {
            let (pid, g) = decode(&cache.read(id).unwrap()).unwrap();
            assert_eq!(
                (pid, g),
                (id, pubd.generation[id as usize].load(SeqCst)),
                "{what}: at rest"
            );
        }
    }
    assert_eq!(dev.allocated_pages(), IDS as u64, "{what}: pages leaked or lost");
    counts
}

fn run(file: bool) {
    let reads = env_u64("CACHE_RACE_OPS", 10_000);
    let seed = env_u64("SOAK_SEED", 0);
    let mut total = Counts::default();
    let configs = [0usize, 4, 64].into_iter().flat_map(|c| [(c, true), (c, false)]);
    for (i, (capacity, retire)) in configs.enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let device: Arc<dyn Device> = if file {
            Arc::new(FileDevice::create(&dir.path().join("race.pages"), PAGE).unwrap())
        } else {
            Arc::new(MemDevice::new(PAGE))
        };
        let c = race(device, capacity, retire, reads, seed.wrapping_add(i as u64));
        assert!(
            c.rewritten > 0 && (c.retired > 0) == retire,
            "cache {capacity}: the writers did not do what they should: {c:?}"
        );
        total.reads += c.reads;
        total.errors_after_retire += c.errors_after_retire;
        total.retired += c.retired;
        total.rewritten += c.rewritten;
        total.evictions += c.evictions;
    }
    println!(
        "cache race ({} device): {} reads checked ({} failed on a page retired meanwhile), {} pages retired and reused, {} rewritten in place, {} evictions, 0 mismatches",
        if file { "file" } else { "memory" },
        total.reads,
        total.errors_after_retire,
        total.retired,
        total.rewritten,
        total.evictions
    );
}

#[test]
fn reads_racing_invalidation_and_reuse_see_their_own_page_whole_and_fresh_on_the_memory_device() {
    run(false);
}

#[test]
fn reads_racing_invalidation_and_reuse_see_their_own_page_whole_and_fresh_on_a_file() {
    run(true);
}
