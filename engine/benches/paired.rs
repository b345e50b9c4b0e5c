//! Paired rounds: lsmlab and its peers timed alternately, for the rows whose criterion ratio sits
//! near 1.0.
//!
//! Criterion takes all of one function's samples, then all of the next's. On a shared machine the
//! load can change between the two, moving one side's throughput and not the other's, and a row
//! near 1.0 then lands on either side of it from run to run (the cache's hit row measured 1.43 in
//! one quiet run and 0.82 in the next, same code). Here every round times each side once, back
//! to back on the thread's CPU time, in an order that rotates from round to round, so the ratio
//! of a round compares measurements taken milliseconds apart; a round the machine disturbed
//! disturbs one ratio, and the summary takes the median of the rounds' ratios and its quartiles.
//! Each timed run follows an untimed run of the same work, so that it finds its own data in the
//! CPU's caches, as criterion's back-to-back iterations do, and not the other sides'. Each group
//! runs in a process of its own, on a fresh heap.
//!
//! Groups, each named and laid out as its criterion group (`cache.rs`, `peers.rs`):
//! - `cache_hit`: each side reads [`HIT_BATCHES`] batches of resident pages per round;
//! - `cache_miss_mix`: each side reads the next batch of its own stream of mostly missing ids;
//! - `mem_rtree_range_<s>` and `packed_rtree_search_<s>`: each side answers the 64 queries of
//!   side fraction `s` [`SEARCH_REPEATS`] times per round.
//!
//! Each group writes `target/paired/<group>.json` (every side's CPU nanoseconds per round and, for
//! the cache groups, the shared device's page reads in each of its timed runs), which
//! `lsmlab bench-summary --paired target/paired` turns into a median ratio beside criterion's.
//!
//! Run: `make bench` (after the criterion benches), or `cargo bench -p lsmlab-engine --bench
//! paired [-- FILTER]` (only the groups whose name contains FILTER).

// A bench may panic: that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::path::Path;

use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::geom::Rect;
use lsmlab_engine::rtree::MemRTree;
use rstar::RTree;

mod common;
use common::caches::{device, filled_for_hits, filled_for_misses, thread_cpu_ns, BATCH, CAPACITY};
use common::spatial::{
    aabb, entries, packed, points, queries, SameNodeSize, EXTENT, PAGE_SIZE, POINTS, QUERIES, SELECTIVITIES,
};

/// Rounds kept per group (odd, so the median is one round's ratio).
const ROUNDS: usize = 101;
/// Rounds run first and dropped: the caches' and the CPU's state settle.
const WARM_UP_ROUNDS: usize = 10;
/// Batches of [`BATCH`] hits one side reads per round (a batch alone takes about 0.1 ms).
const HIT_BATCHES: usize = 4;
/// Untimed batches before each timed one of the miss mix: about 3,000 misses a batch, so four turn
/// over the whole cache and the timed batch meets the steady state the side left, not the one the
/// other caches' rounds left in the CPU's caches and the allocator.
const MIX_UNTIMED: usize = 4;
/// Times one side answers its 64 queries per round.
const SEARCH_REPEATS: usize = 8;

/// Where the groups' rounds are written, relative to the workspace root.
const OUT_DIR: &str = "target/paired";

/// One side of a group: its function name and one round's work.
type Side<'a> = (&'a str, Box<dyn FnMut() + 'a>);

/// The device's count of page reads, for groups whose sides read one shared device: read before and
/// after each timed run, it tells how much of a side's time went to device reads (a cache whose
/// policy keeps more of the stream reads the device less, and is faster for that, not for its code).
type Reads<'a> = Option<&'a dyn Fn() -> u64>;

/// Times every side once per round, each timed run after `untimed` untimed runs of the same work,
/// for [`WARM_UP_ROUNDS`] + [`ROUNDS`] rounds, round `r` starting with side `r mod sides`; writes
/// the kept rounds to `<OUT_DIR>/<group>.json` (with each timed run's device reads, given `reads`)
/// and prints each lsmlab side's median ratio to every peer. `elements` is what one timed run
/// processes.
fn run_group(group: &str, elements: u64, untimed: usize, mut sides: Vec<Side<'_>>, reads: Reads<'_>) {
    let n = sides.len();
    let mut ns = vec![Vec::with_capacity(ROUNDS); n];
    let mut device_reads = vec![Vec::with_capacity(ROUNDS); n];
    let count = || reads.map_or(0, |r| r());
    for round in 0..WARM_UP_ROUNDS + ROUNDS {
        for k in 0..n {
            let s = (round + k) % n;
            for _ in 0..untimed {
                (sides[s].1)();
            }
            let before = count();
            let start = thread_cpu_ns();
            (sides[s].1)();
            let took = thread_cpu_ns() - start;
            if round >= WARM_UP_ROUNDS {
                ns[s].push(took.max(1));
                device_reads[s].push(count() - before);
            }
        }
    }
    let names: Vec<&str> = sides.iter().map(|s| s.0).collect();
    let per_side = |values: &[Vec<u64>]| -> serde_json::Value {
        let map: serde_json::Map<String, serde_json::Value> = names
            .iter()
            .zip(values)
            .map(|(name, v)| (name.to_string(), serde_json::json!(v)))
            .collect();
        map.into()
    };
    let mut doc = serde_json::json!({
        "schema": "lsmlab.paired/1",
        "group": group,
        "elements": elements,
        "rounds_ns": per_side(&ns),
    });
    if reads.is_some() {
        doc["device_reads"] = per_side(&device_reads);
        for (name, v) in names.iter().zip(&device_reads) {
            let per_element = v.iter().sum::<u64>() as f64 / (v.len() as u64 * elements) as f64;
            println!("{group}: {name}: {per_element:.4} device reads per element");
        }
    }
    let dir = workspace_root().join(OUT_DIR);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{group}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    for (i, ours) in names.iter().enumerate().filter(|(_, n)| n.starts_with("lsmlab")) {
        for (j, peer) in names.iter().enumerate().filter(|(_, n)| !n.starts_with("lsmlab")) {
            let mut r: Vec<f64> = ns[i]
                .iter()
                .zip(&ns[j])
                .map(|(a, b)| *b as f64 / *a as f64)
                .collect();
            r.sort_by(f64::total_cmp);
            println!(
                "{group}: {ours} vs {peer}: median ratio {:.3} (quartiles {:.3}-{:.3}, {ROUNDS} rounds)",
                r[r.len() / 2],
                r[r.len() / 4],
                r[3 * r.len() / 4]
            );
        }
    }
    println!("  -> {}", path.display());
}

/// The workspace root (the engine crate's parent), wherever the bench is started from.
fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn cache_hit() {
    let dev = device(CAPACITY as u64);
    let caches = filled_for_hits(&dev);
    let sides = caches
        .iter()
        .map(|(name, peer, batch)| {
            let work = move || {
                for _ in 0..HIT_BATCHES {
                    for &id in batch {
                        black_box(peer.read(id));
                    }
                }
            };
            (*name, Box::new(work) as Box<dyn FnMut()>)
        })
        .collect();
    run_group(
        "cache_hit",
        (HIT_BATCHES * BATCH) as u64,
        1,
        sides,
        Some(&|| dev.stats().page_reads),
    );
}

fn cache_miss_mix() {
    let (dev, peers, stream) = filled_for_misses();
    let sides = peers
        .iter()
        .map(|(name, peer)| {
            let mut batches = stream.chunks_exact(BATCH).cycle();
            let work = move || {
                for &id in batches.next().expect("the stream cycles") {
                    black_box(peer.read(id));
                }
            };
            (*name, Box::new(work) as Box<dyn FnMut()>)
        })
        .collect();
    run_group(
        "cache_miss_mix",
        BATCH as u64,
        MIX_UNTIMED,
        sides,
        Some(&|| dev.stats().page_reads),
    );
}

/// The packed R-tree search's groups, one per selectivity.
fn search_groups() -> impl Iterator<Item = (String, f64)> {
    SELECTIVITIES
        .into_iter()
        .map(|s| (format!("packed_rtree_search_{s}"), s))
}

/// The memory R-tree's range-query groups, one per selectivity.
fn range_groups() -> impl Iterator<Item = (String, f64)> {
    SELECTIVITIES
        .into_iter()
        .map(|s| (format!("mem_rtree_range_{s}"), s))
}

/// A range-query group: lsmlab's `search` (one query, returning its results' count) beside rstar's
/// two trees, each side answering the 64 queries of side fraction `side` [`SEARCH_REPEATS`] times
/// per round.
fn run_range_group(
    group: &str,
    side: f64,
    mut search: impl FnMut(&Rect) -> u64,
    peer: &RTree<[f64; 2]>,
    peer_same: &RTree<[f64; 2], SameNodeSize>,
) {
    let qs = queries(side);
    let qs = &qs;
    let ours = move || {
        for _ in 0..SEARCH_REPEATS {
            black_box(qs.iter().map(&mut search).sum::<u64>());
        }
    };
    let rstar = move || {
        for _ in 0..SEARCH_REPEATS {
            black_box(
                qs.iter()
                    .map(|q| peer.locate_in_envelope(&aabb(q)).count())
                    .sum::<usize>(),
            );
        }
    };
    let rstar_same = move || {
        for _ in 0..SEARCH_REPEATS {
            let n: usize = qs
                .iter()
                .map(|q| peer_same.locate_in_envelope(&aabb(q)).count())
                .sum();
            black_box(n);
        }
    };
    let sides: Vec<Side<'_>> = vec![
        ("lsmlab", Box::new(ours)),
        ("rstar", Box::new(rstar)),
        ("rstar_same_node", Box::new(rstar_same)),
    ];
    run_group(group, (SEARCH_REPEATS * QUERIES) as u64, 1, sides, None);
}

fn packed_rtree_search(group: &str, side: f64) {
    let pts = points(POINTS, 2);
    let raw: Vec<[f64; 2]> = pts.iter().map(|p| [p.x, p.y]).collect();
    let (tree, device) = packed(&pts);
    let cache = BufferCache::new(device, 1 << 16);
    tree.search(&cache, &EXTENT, |_| {}).unwrap();
    let peer = RTree::bulk_load(raw.clone());
    let peer_same: RTree<[f64; 2], SameNodeSize> = RTree::bulk_load_with_params(raw);
    let search = |q: &Rect| {
        let mut n = 0u64;
        tree.search(&cache, q, |_| n += 1).unwrap();
        n
    };
    run_range_group(group, side, search, &peer, &peer_same);
}

fn mem_rtree_range(group: &str, side: f64) {
    // The trees `peers.rs` builds: the same points inserted one by one into each.
    let pts = points(POINTS, 1);
    let mut ours = MemRTree::new(PAGE_SIZE);
    for e in entries(&pts) {
        ours.insert(e);
    }
    let mut peer = RTree::new();
    let mut peer_same: RTree<[f64; 2], SameNodeSize> = RTree::new_with_params();
    for p in &pts {
        peer.insert([p.x, p.y]);
        peer_same.insert([p.x, p.y]);
    }
    let search = |q: &Rect| {
        let mut n = 0u64;
        ours.search(q, |_| n += 1);
        n
    };
    run_range_group(group, side, search, &peer, &peer_same);
}

/// Runs group `name` in this process.
fn run_named(name: &str) {
    match name {
        "cache_hit" => cache_hit(),
        "cache_miss_mix" => cache_miss_mix(),
        _ => {
            if let Some((_, side)) = search_groups().find(|(g, _)| g == name) {
                packed_rtree_search(name, side)
            } else if let Some((_, side)) = range_groups().find(|(g, _)| g == name) {
                mem_rtree_range(name, side)
            } else {
                panic!("no paired group {name:?}")
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(name) = args.iter().find_map(|a| a.strip_prefix("--group=")) {
        run_named(name);
        return;
    }
    // `cargo bench` passes `--bench` (and `make bench` criterion's `--noplot`); the first other
    // argument, if any, filters the groups by name. Each group runs in a process of its own: what
    // an earlier group allocated and freed would otherwise shape where the next one's data lands,
    // and rstar's tree of small nodes measured 3.17 ms per 64 queries (side 0.343) after the
    // memory R-tree groups had run in the same process against 2.20 ms in a fresh one.
    let filter = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .cloned()
        .unwrap_or_default();
    let exe = std::env::current_exe().unwrap();
    let names = ["cache_hit".to_string(), "cache_miss_mix".to_string()]
        .into_iter()
        .chain(range_groups().map(|(g, _)| g))
        .chain(search_groups().map(|(g, _)| g));
    for name in names.filter(|n| n.contains(&filter)) {
        let status = std::process::Command::new(&exe)
            .arg(format!("--group={name}"))
            .status()
            .unwrap();
        assert!(status.success(), "paired group {name} failed: {status}");
    }
}
