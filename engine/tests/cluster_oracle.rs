//! Both record-cluster layouts against a brute-force map oracle on seeded random streams of
//! inserts, growing and shrinking updates, deletes, fetches, batch fetches and fetches of dead
//! record ids (stale ones after slot reuse included), plus the counted page reads the layouts
//! promise.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::cluster::{self, ClusterOptions, Layout, Lookup, RecordCluster, Rid};
use lsmlab_engine::storage::MemDevice;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

fn open(layout: Layout, page_size: usize, cache_pages: usize) -> Box<dyn RecordCluster> {
    let dev = Arc::new(MemDevice::new(page_size));
    let cache = Arc::new(BufferCache::new(dev, cache_pages));
    cluster::open(layout, cache, ClusterOptions::default()).unwrap()
}

fn record(rng: &mut Xoshiro256PlusPlus, page_size: usize, tag: u64) -> Vec<u8> {
    let len = match rng.random_range(0..20) {
        0 => rng.random_range(0..10),                              // tiny
        1 => rng.random_range(page_size..3 * page_size),           // larger than a page: chained
        2..=4 => rng.random_range(page_size / 3..page_size - 100), // fits a page, not many to a page
        _ => rng.random_range(20..page_size / 8),
    };
    let mut r: Vec<u8> = (0..len).map(|i| (tag as usize * 31 + i) as u8).collect();
    if len >= 8 {
        r[..8].copy_from_slice(&tag.to_le_bytes());
    }
    r
}

/// Dead ids: `true` when the slot is known to have been reused (the answer must be Stale).
fn run_oracle(layout: Layout, seed: u64, ops: usize) {
    let page_size = 1024;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut c = open(layout, page_size, 6);
    let mut live: BTreeMap<Rid, Vec<u8>> = BTreeMap::new();
    let mut dead: BTreeMap<Rid, bool> = BTreeMap::new();
    let mut tag = 0u64;
    let pick = |rng: &mut Xoshiro256PlusPlus, m: &BTreeMap<Rid, Vec<u8>>| -> Option<Rid> {
        (!m.is_empty()).then(|| *m.keys().nth(rng.random_range(0..m.len())).unwrap())
    };
    for step in 0..ops {
        match rng.random_range(0..100) {
            0..=29 => {
                tag += 1;
                let r = record(&mut rng, page_size, tag);
                let rid = c.insert(&r).unwrap();
                assert!(!live.contains_key(&rid), "{layout}: id {rid:?} handed out twice");
                if layout == Layout::Paginated {
                    assert!(!dead.contains_key(&rid), "paginated reused position {rid:?}");
                }
                for (d, reused) in dead.iter_mut() {
                    if d.position == rid.position {
                        assert!(d.delversion < rid.delversion, "{layout}: delversion did not grow");
                        *reused = true;
                    }
                }
                live.insert(rid, r);
            }
            30..=49 => {
                if let Some(rid) = pick(&mut rng, &live) {
                    tag += 1;
                    let r = record(&mut rng, page_size, tag);
                    assert_eq!(
                        c.update(rid, &r).unwrap(),
                        Lookup::Found(()),
                        "{layout} step {step}"
                    );
                    live.insert(rid, r);
                }
            }
            50..=64 => {
                if let Some(rid) = pick(&mut rng, &live) {
                    assert_eq!(c.delete(rid).unwrap(), Lookup::Found(()));
                    live.remove(&rid);
                    dead.insert(rid, false);
                }
            }
            65..=84 => {
                if let Some(rid) = pick(&mut rng, &live) {
                    assert_eq!(
                        c.fetch(rid).unwrap().found().as_ref(),
                        live.get(&rid),
                        "{layout} step {step}"
                    );
                }
            }
            85..=94 => {
                if !dead.is_empty() {
                    let (&rid, &reused) = dead.iter().nth(rng.random_range(0..dead.len())).unwrap();
                    let got = c.fetch(rid).unwrap();
                    match layout {
                        Layout::Paginated => assert_eq!(got, Lookup::Deleted),
                        Layout::SinglePage if reused => assert_eq!(got, Lookup::Stale, "{rid:?}"),
                        Layout::SinglePage => {
                            assert!(matches!(got, Lookup::Deleted | Lookup::Stale), "{rid:?}: {got:?}")
                        }
                    }
                    // Updating or deleting a dead id changes nothing.
                    assert!(!c.update(rid, b"zombie record!").unwrap().is_found());
                    assert!(!c.delete(rid).unwrap().is_found());
                }
            }
            _ => {
                let mut ids: Vec<Rid> = live.keys().copied().take(40).collect();
                ids.extend(dead.keys().copied().take(5));
                ids.reverse();
                let got = c.fetch_batch(&ids).unwrap();
                for (rid, g) in ids.iter().zip(got) {
                    match live.get(rid) {
                        Some(r) => assert_eq!(g.found().as_ref(), Some(r)),
                        None => assert!(!g.is_found()),
                    }
                }
            }
        }
    }
    // Everything at the end, after a cold restart of the cache.
    c.cache().clear().unwrap();
    for (rid, r) in &live {
        assert_eq!(c.fetch(*rid).unwrap().found().as_ref(), Some(r));
    }
    let space = c.space();
    assert_eq!(space.live_records, live.len() as u64);
    assert!(
        live.len() > 20 && dead.len() > 20,
        "degenerate stream: {} live {} dead",
        live.len(),
        dead.len()
    );
    let reused = dead.values().filter(|&&r| r).count();
    if layout == Layout::SinglePage {
        assert!(reused > 10, "only {reused} slots reused");
        assert!(c.stats().stale > 0);
    }
    assert!(c.stats().moves > 0, "{layout}: no update moved a record");
}

#[test]
fn paginated_matches_the_oracle() {
    for seed in 0..3 {
        run_oracle(Layout::Paginated, seed, 1500);
    }
}

#[test]
fn single_page_matches_the_oracle() {
    for seed in 0..3 {
        run_oracle(Layout::SinglePage, seed, 1500);
    }
}

fn reads_of(c: &mut Box<dyn RecordCluster>, f: impl FnOnce(&mut Box<dyn RecordCluster>)) -> u64 {
    let before = c.stats();
    f(c);
    c.stats().since(&before).page_reads
}

#[test]
fn a_fetch_reads_one_page_single_page_and_two_paginated() {
    for layout in Layout::ALL {
        let mut c = open(layout, 4096, 64);
        let ids: Vec<Rid> = (0..200).map(|i| c.insert(&vec![i as u8; 300]).unwrap()).collect();
        for &rid in &ids {
            let n = reads_of(&mut c, |c| assert!(c.fetch(rid).unwrap().is_found()));
            assert_eq!(n, if layout == Layout::Paginated { 2 } else { 1 }, "{layout}");
        }
        // Grow every tenth record beyond what its page has left.
        for &rid in ids.iter().step_by(10) {
            assert!(c.update(rid, &vec![7u8; 2500]).unwrap().is_found());
        }
        let mut worst = 0;
        let mut total = 0;
        for &rid in &ids {
            let n = reads_of(&mut c, |c| assert!(c.fetch(rid).unwrap().is_found()));
            worst = worst.max(n);
            total += n;
        }
        match layout {
            Layout::SinglePage => {
                assert_eq!(worst, 2, "a moved record reads its home and its external page");
                assert!(total <= ids.len() as u64 + 20);
                assert!(c.space().external_links > 0);
            }
            // OrientDB splits a grown record: head chunk elsewhere, tail in the old page.
            Layout::Paginated => assert_eq!(worst, 3),
        }
    }
}

#[test]
fn slot_reuse_makes_old_ids_stale_and_positions_are_never_reused() {
    let mut c = open(Layout::SinglePage, 4096, 16);
    let a = c.insert(&[1u8; 100]).unwrap();
    let b = c.insert(&[2u8; 100]).unwrap();
    assert_eq!(c.delete(a).unwrap(), Lookup::Found(()));
    assert_eq!(c.fetch(a).unwrap(), Lookup::Deleted);
    let a2 = c.insert(&[3u8; 100]).unwrap();
    assert_eq!((a2.position, a2.delversion), (a.position, a.delversion + 1));
    assert_eq!(c.fetch(a).unwrap(), Lookup::Stale);
    assert_eq!(c.fetch(a2).unwrap().found().unwrap(), vec![3u8; 100]);
    assert_eq!(c.fetch(b).unwrap().found().unwrap(), vec![2u8; 100]);
    assert_eq!(c.stats().stale, 1);

    let mut p = open(Layout::Paginated, 4096, 16);
    let a = p.insert(&[1u8; 100]).unwrap();
    p.delete(a).unwrap();
    let a2 = p.insert(&[3u8; 100]).unwrap();
    assert!(a2.position > a.position);
    assert_eq!(p.fetch(a).unwrap(), Lookup::Deleted);
}

#[test]
fn a_sorted_batch_reads_each_page_once() {
    for layout in Layout::ALL {
        let mut c = open(layout, 4096, 1000);
        let mut ids: Vec<Rid> = (0..500).map(|i| c.insert(&[i as u8; 200]).unwrap()).collect();
        let space = c.space();
        ids.reverse();
        let n = reads_of(&mut c, |c| {
            let got = c.fetch_batch(&ids).unwrap();
            assert!(got.iter().all(|g| g.is_found()));
        });
        let expected = match layout {
            Layout::SinglePage => space.data_pages,
            Layout::Paginated => space.data_pages + space.map_pages - 1, // not the entry point
        };
        assert_eq!(n, expected, "{layout}");
        let pages: BTreeSet<u64> = c.data_page_ids().iter().copied().collect();
        assert_eq!(pages.len() as u64, space.data_pages);
    }
}

#[test]
fn a_batch_insert_places_records_as_single_inserts_do() {
    for layout in Layout::ALL {
        let records: Vec<Vec<u8>> = (0..300u32)
            .map(|i| vec![i as u8; 50 + (i as usize * 37) % 900])
            .collect();
        let mut one = open(layout, 4096, 8);
        let a: Vec<Rid> = records.iter().map(|r| one.insert(r).unwrap()).collect();
        let mut batch = open(layout, 4096, 8);
        let b = batch.insert_batch(&records).unwrap();
        assert_eq!(a, b, "{layout}");
        assert_eq!(one.space(), batch.space());
        batch.cache().clear().unwrap();
        for (rid, r) in b.iter().zip(&records) {
            assert_eq!(batch.fetch(*rid).unwrap().found().as_ref(), Some(r));
        }
    }
}

#[test]
fn an_update_in_place_reads_the_map_but_writes_only_the_data_page() {
    for layout in Layout::ALL {
        let mut c = open(layout, 4096, 64);
        let rid = c.insert(&[1u8; 300]).unwrap();
        let before = c.stats();
        assert!(c.update(rid, &[2u8; 300]).unwrap().is_found());
        let d = c.stats().since(&before);
        assert_eq!(d.page_writes, 1, "{layout}");
        assert_eq!(
            d.page_reads,
            if layout == Layout::Paginated { 2 } else { 1 },
            "{layout}"
        );
        assert_eq!(d.map_page_reads, u64::from(layout == Layout::Paginated));
    }
}

/// A data page is checked once per arrival in the cache (the check's result is a note the cache
/// keeps with the bytes): a page rewritten in place afterwards is checked again, so garbage
/// written over a page that passed is still refused, and a good rewrite reads as before. Both
/// layouts read data pages the same way; the single-page layout has no map page for the garbage
/// to hit first (a paginated fetch would read a garbled map entry as a missing record).
#[test]
fn a_data_page_rewritten_in_place_is_checked_again() {
    for layout in [Layout::SinglePage] {
        let dev = Arc::new(MemDevice::new(4096));
        let cache = Arc::new(BufferCache::new(dev, 64));
        let mut c = cluster::open(layout, cache.clone(), ClusterOptions::default()).unwrap();
        let rid = c.insert(&[5u8; 300]).unwrap();
        cache.flush_dirty().unwrap();
        // Read twice: the second read is a hit on bytes already checked.
        for _ in 0..2 {
            assert_eq!(c.fetch(rid).unwrap().found().unwrap(), vec![5u8; 300], "{layout}");
        }
        let resident = cache.resident();
        let good: Vec<Vec<u8>> = resident
            .iter()
            .map(|&id| cache.read(id).unwrap().to_vec())
            .collect();
        // Garbage over every resident page: a slot count the page cannot hold.
        let mut bad = vec![0xffu8; 4096];
        bad[..4].copy_from_slice(&60_000u32.to_le_bytes());
        for &id in &resident {
            cache.write(id, &bad).unwrap();
        }
        let e = c.fetch(rid).unwrap_err();
        assert!(matches!(e, lsmlab_engine::Error::Corrupt { .. }), "{layout}: {e}");
        // The good bytes back: the record reads again.
        for (&id, page) in resident.iter().zip(&good) {
            cache.write(id, page).unwrap();
        }
        assert_eq!(c.fetch(rid).unwrap().found().unwrap(), vec![5u8; 300], "{layout}");
    }
}
