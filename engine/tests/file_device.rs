//! The file device as experiments use it: many pages round-trip with direct I/O on and off and are
//! counted exactly like the in-memory device's; the page file is unlinked as soon as it is open;
//! every flush and merge of an LSM index ends with one device sync, and a failing sync fails that
//! flush or merge without losing or leaking anything.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::geom::{Point, Rect};
use lsmlab_engine::lsm::{CompactionConfig, LeveledParams, LsmKv, MergePolicyConfig};
use lsmlab_engine::spatial::{LsmRTree, SpatialConfig, Strategy};
use lsmlab_engine::storage::{
    Device, DirectIo, Fault, FaultyDevice, FileDevice, FileDeviceOptions, IoStats, MemDevice, PageId,
};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::sync::Arc;

const DIRECT: FileDeviceOptions = FileDeviceOptions { direct_io: true };
const BUFFERED: FileDeviceOptions = FileDeviceOptions { direct_io: false };

/// Allocates, writes, overwrites, frees and reallocates pages on `dev` at random, reading every live
/// page back in random order against an oracle of their contents. Returns the device's counters.
fn exercise(dev: &dyn Device, seed: u64) -> IoStats {
    let ps = dev.page_size();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut oracle: BTreeMap<PageId, Vec<u8>> = BTreeMap::new();
    let mut extents: Vec<(PageId, u64)> = Vec::new();
    let fill = |rng: &mut Xoshiro256PlusPlus| -> Vec<u8> { (0..ps).map(|_| rng.random()).collect() };
    for round in 0..12 {
        let count = rng.random_range(1..40);
        let first = dev.allocate(count);
        extents.push((first, count));
        for id in first..first + count {
            let page = fill(&mut rng);
            dev.write_page(id, &page).unwrap();
            oracle.insert(id, page);
        }
        // Overwrite a few live pages.
        let ids: Vec<PageId> = oracle.keys().copied().collect();
        for _ in 0..5 {
            let id = ids[rng.random_range(0..ids.len())];
            let page = fill(&mut rng);
            dev.write_page(id, &page).unwrap();
            oracle.insert(id, page);
        }
        // Free an extent every few rounds; its ids come back in later allocations.
        if round % 3 == 2 {
            let (first, count) = extents.swap_remove(rng.random_range(0..extents.len()));
            dev.free(first, count);
            for id in first..first + count {
                oracle.remove(&id);
            }
        }
        dev.sync().unwrap();
    }
    let mut ids: Vec<PageId> = oracle.keys().copied().collect();
    for i in (1..ids.len()).rev() {
        ids.swap(i, rng.random_range(0..=i));
    }
    let mut buf = vec![0u8; ps];
    for id in ids {
        dev.read_page(id, &mut buf).unwrap();
        assert_eq!(buf, oracle[&id], "page {id}");
    }
    assert_eq!(dev.allocated_pages(), extents.iter().map(|e| e.1).sum::<u64>());
    dev.stats()
}

#[test]
fn many_pages_round_trip_with_direct_io_on_and_off_and_count_like_memory() {
    let dir = tempfile::tempdir().unwrap();
    for page_size in [512, 2048, 4096, 8192] {
        let counted = exercise(&MemDevice::new(page_size), page_size as u64);
        assert_eq!(counted.syncs, 12);
        for options in [DIRECT, BUFFERED] {
            let dev = FileDevice::temporary_with(dir.path(), page_size, options).unwrap();
            match (options.direct_io, dev.direct_io()) {
                (true, DirectIo::On { alignment }) => assert_eq!(page_size % alignment, 0),
                // Where the file system refuses O_DIRECT the device must say so, not fail.
                (true, DirectIo::Off(reason)) => {
                    assert!(
                        reason.contains("O_DIRECT") || reason.contains("page size"),
                        "{reason}"
                    );
                    eprintln!("page size {page_size}: direct I/O off here: {reason}");
                }
                (false, d) => assert_eq!(d, &DirectIo::Off("turned off by direct_io = false".into())),
            }
            assert_eq!(
                exercise(&dev, page_size as u64),
                counted,
                "page size {page_size}, direct I/O {}",
                dev.direct_io()
            );
        }
    }
}

#[test]
fn the_page_file_is_unlinked_right_after_the_device_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let dev = FileDevice::temporary(dir.path(), 4096).unwrap();
    let listing = || std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(listing(), 0, "no file in the directory once the device exists");
    assert!(!dev.path().exists());
    let first = dev.allocate(64);
    for id in first..first + 64 {
        dev.write_page(id, &vec![id as u8; 4096]).unwrap();
    }
    dev.sync().unwrap();
    let mut buf = vec![0u8; 4096];
    for id in first..first + 64 {
        dev.read_page(id, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == id as u8), "page {id}");
    }
    assert_eq!(listing(), 0);
    drop(dev);
    assert_eq!(listing(), 0);
}

fn leveled_kv(dev: Arc<dyn Device>) -> LsmKv<u64> {
    let cache = Arc::new(BufferCache::new(dev, 16));
    let cfg = CompactionConfig::Leveled(LeveledParams {
        l0_trigger: 3,
        base_level_pages: 8,
        size_ratio: 3,
        target_run_pages: 3,
        max_levels: 5,
    });
    LsmKv::<u64>::new(cache, 2, cfg, Some(0.01)).unwrap()
}

#[test]
fn every_flush_and_merge_of_a_kv_store_on_a_file_syncs_once() {
    let dir = tempfile::tempdir().unwrap();
    let dev: Arc<dyn Device> = Arc::new(FileDevice::temporary(dir.path(), 512).unwrap());
    let mut kv = leveled_kv(dev.clone());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut oracle = BTreeMap::new();
    for _ in 0..4000 {
        let (k, v) = (rng.random_range(0..2000u64), rng.random());
        kv.put(k, v).unwrap();
        oracle.insert(k, v);
    }
    kv.flush().unwrap();
    let st = kv.stats();
    assert!(st.flushes > 10 && st.merges > 5, "{st:?}");
    assert_eq!(dev.stats().syncs, st.flushes + st.merges);
    assert_eq!((st.flush_io.syncs, st.merge_io.syncs), (st.flushes, st.merges));
    assert!(kv.scan(..).unwrap().into_iter().eq(oracle));
}

#[test]
fn every_flush_and_merge_of_an_lsm_rtree_syncs_once() {
    let dir = tempfile::tempdir().unwrap();
    for strategy in ["UM", "Validation"] {
        let dev: Arc<dyn Device> = Arc::new(FileDevice::temporary(dir.path(), 512).unwrap());
        let cache = Arc::new(BufferCache::new(dev.clone(), 16));
        let mut cfg = SpatialConfig::new(
            strategy.parse::<Strategy>().unwrap(),
            Rect::new(0.0, 0.0, 100.0, 100.0),
            4,
        );
        cfg.merge_policy = MergePolicyConfig::Prefix {
            max_mergeable_pages: 40,
            max_tolerance_components: 3,
        };
        cfg.key_index_budget_pages = 2;
        let mut index = LsmRTree::new(cfg, cache).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut at: Vec<Point> = Vec::new();
        for i in 0..3000u64 {
            let p = Point::new(rng.random::<f64>() * 100.0, rng.random::<f64>() * 100.0);
            if i < 300 {
                index.insert(i, p).unwrap();
                at.push(p);
            } else {
                let oid = rng.random_range(0..300);
                index.update(oid, Some(at[oid as usize]), p).unwrap();
                at[oid as usize] = p;
            }
        }
        index.flush().unwrap();
        let st = index.stats();
        let key = st.key_index.unwrap_or_default();
        assert!(st.rtree.flushes > 5 && st.rtree.merges > 0, "{strategy}: {st:?}");
        assert_eq!(
            dev.stats().syncs,
            st.rtree.flushes + st.rtree.merges + key.flushes + key.merges,
            "{strategy}: one sync per flush and merge of the R-tree and its key index"
        );
        let mut got: Vec<(u64, u64, u64)> = index
            .query(&Rect::new(-1.0, -1.0, 101.0, 101.0))
            .unwrap()
            .results
            .iter()
            .map(|e| (e.oid, e.point.x.to_bits(), e.point.y.to_bits()))
            .collect();
        got.sort_unstable();
        let want: Vec<(u64, u64, u64)> = at
            .iter()
            .enumerate()
            .map(|(o, p)| (o as u64, p.x.to_bits(), p.y.to_bits()))
            .collect();
        assert_eq!(got, want, "{strategy}");
    }
}

/// Fails the k-th sync (once, or from then on) during a stream of puts, deletes and reads on a
/// leveled store: every read answers like the oracle or fails, a failed flush keeps its memtable,
/// and once syncs work again the store holds exactly the oracle with no page leaked.
#[test]
fn a_failed_sync_fails_its_flush_or_merge_and_loses_nothing() {
    let mut failed_steps = 0;
    for k in 1..40 {
        for fault in [Fault::Nth(k), Fault::From(k)] {
            let faulty = Arc::new(FaultyDevice::new(Arc::new(MemDevice::new(256))));
            let dev: Arc<dyn Device> = faulty.clone();
            let mut kv = leveled_kv(dev.clone());
            let mut oracle = BTreeMap::new();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(k);
            faulty.arm_syncs(fault);
            for step in 0..2500 {
                let key = rng.random_range(0..800u64);
                match rng.random_range(0..10) {
                    // A write lands in the memtable before any flush, so it is applied even when
                    // the flush or merge after it fails.
                    0..6 => {
                        let v = rng.random();
                        oracle.insert(key, v);
                        failed_steps += u64::from(kv.put(key, v).is_err());
                    }
                    6..8 => {
                        oracle.remove(&key);
                        failed_steps += u64::from(kv.delete(key).is_err());
                    }
                    _ => assert_eq!(
                        kv.get(key).unwrap(),
                        oracle.get(&key).copied(),
                        "fault {fault:?}, step {step}: get {key}"
                    ),
                }
            }
            assert!(faulty.failures() > 0, "fault {fault:?} never fired");
            faulty.disarm();
            assert!(
                kv.scan(..).unwrap().into_iter().eq(oracle.clone()),
                "fault {fault:?}: healed scan"
            );
            kv.flush().unwrap();
            kv.compact().unwrap();
            assert!(
                kv.scan(..).unwrap().into_iter().eq(oracle),
                "fault {fault:?}: flushed scan"
            );
            assert_eq!(kv.pending_memtables(), 0);
            assert_eq!(
                dev.allocated_pages(),
                kv.version().total_pages(),
                "fault {fault:?}: pages leaked by failed flushes or merges"
            );
            let st = kv.stats();
            assert_eq!(dev.stats().syncs, st.flushes + st.merges, "fault {fault:?}");
        }
    }
    assert!(failed_steps > 100, "only {failed_steps} steps saw a failed sync");
}

/// Every fault kind injected in front of a file device: the injected errors and the checksum
/// errors of the verifying layer above name the page and the page file, a full disk is a
/// no-space error, and after a failed write the page reads back whole (old or new) or not at all
/// (a checksum error, or an unknown page if it was never written).
#[test]
fn every_fault_kind_on_a_file_device_names_page_and_file() {
    use lsmlab_engine::storage::{FaultKind, InjectedFault, Injection, VerifyingDevice};
    use lsmlab_engine::Error;
    let dir = tempfile::tempdir().unwrap();
    for inj in Injection::all_at(2) {
        let file = FileDevice::temporary_with(dir.path(), 512, BUFFERED).unwrap();
        let name = file.name();
        assert!(name.contains(&dir.path().display().to_string()), "{name}");
        let faulty = Arc::new(FaultyDevice::new(Arc::new(file)));
        let dev = VerifyingDevice::new(faulty.clone());
        let first = dev.allocate(4);
        let old = vec![1u8; 512];
        dev.write_page(first, &old).unwrap();
        faulty.inject(inj);
        let mut errors = Vec::new();
        let new: Vec<u8> = (0..512).map(|i| i as u8).collect();
        for p in first..first + 4 {
            errors.extend(dev.write_page(p, &new).err());
            errors.extend(dev.sync().err());
        }
        let mut buf = vec![0u8; 512];
        for p in first..first + 4 {
            match dev.read_page(p, &mut buf) {
                Ok(()) => assert!(buf == new || (p == first && buf == old), "{inj}: page {p}"),
                Err(e) => errors.push(e),
            }
        }
        assert!(faulty.failures() > 0, "{inj}: never fired");
        assert!(!errors.is_empty(), "{inj}: no call failed");
        for e in &errors {
            match (e, InjectedFault::of(e)) {
                (_, Some(f)) => {
                    assert_eq!((f.kind, f.device.as_str()), (inj.kind, name.as_str()), "{e}");
                    if f.kind == FaultKind::DiskFull {
                        let Error::Io(io) = e else { unreachable!() };
                        assert_eq!(io.kind(), std::io::ErrorKind::StorageFull);
                    }
                    assert!(e.to_string().contains(&name), "{e}");
                }
                (Error::Checksum { device, .. }, None) => {
                    assert!(
                        inj.kind.damages_pages() || inj.kind == FaultKind::BitFlip,
                        "{inj}: {e}"
                    );
                    assert_eq!(device, &name);
                    assert!(e.to_string().contains(&name), "{e}");
                }
                // A page whose only write failed was never written.
                (Error::UnknownPage { page }, None) => assert_ne!(*page, first, "{inj}"),
                (other, None) => panic!("{inj}: untyped error {other}"),
            }
        }
    }
}
