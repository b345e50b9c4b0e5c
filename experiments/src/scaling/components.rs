//! One measurement per component and record count: what it does to `n` records, the work the
//! engine counts for it, its CPU and wall time, and the ratios that drive its mechanism.
//!
//! Engine parameters (page size, memory budgets, cache sizes, memtable sizes) stay fixed while n
//! grows, so a component's cost grows as its algorithm does: a memory R-tree insert descends
//! `height` nodes (log n), a packed bulk load sorts (n log n), an LSM index merges each entry
//! about log(n / memory) times (n log n). The experiment cores keep their experiment's ratios
//! instead: the RUM-tree update stream keeps rum-update's objects per memory page (objects scale
//! with the memory component, not with the records). The time-series store gets the `diol`
//! experiment's memory budget and delays for the x1 data, kept fixed as n grows.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::cluster::{Layout as ClusterLayout, Rid};
use lsmlab_engine::geom::{HilbertCurve, Point, Rect};
use lsmlab_engine::kvstore::{KvConfig, KvStore, NoWarmUp};
use lsmlab_engine::lsm::LeveledParams;
use lsmlab_engine::rtree::{hilbert_sort, DiskRTree, MemRTree, SpatialEntry};
use lsmlab_engine::series::PAPER_POINTS;
use lsmlab_engine::series::{Layout as SeriesLayout, SeriesStore};
use lsmlab_engine::spatial::{LsmRTree, SpatialConfig, Strategy, UpdateMemo};
use lsmlab_engine::storage::{Device, MemDevice};
use lsmlab_workloads::ts::{generate_stream, DelayModel, StreamSpec};
use lsmlab_workloads::{GenSpec, SpatialOp};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::config::StorageConfig;
use crate::experiment::{RowBuilder, Scale};
use crate::measure::thread_cpu;
use crate::rum::{apply, Dataset, IndexConfig};

/// The space the synthetic points live in.
pub const EXTENT: Rect = Rect::new(0.0, 0.0, 1000.0, 1000.0);
/// Page size of the R-trees, the Update Memo's index and the LSM R-tree (the RUM authors' 2 KiB).
pub const RTREE_PAGE: usize = 2048;
/// Page size of the key-value store (a 4 KiB data block, RocksDB's default).
pub const KV_PAGE: usize = 4096;
/// Bytes of a key-value store value.
pub const KV_VALUE_BYTES: usize = 100;
/// Distance between consecutive keys of the key-value store (a scan of `KV_SCAN_KEYS` keys spans
/// `KV_SCAN_KEYS x KV_KEY_STRIDE`).
const KV_KEY_STRIDE: u64 = 1000;
/// Keys a key-value scan covers.
pub const KV_SCAN_KEYS: u64 = 16;
/// Every object of the LSM R-tree and Update Memo streams is written this many times on average.
pub const VERSIONS_PER_OBJECT: u64 = 8;
/// The out-of-order ratio of the time-series stream (the DIOL paper's smallest).
pub const TS_O3_RATIO: f64 = 0.1;
/// Cached fraction of a cluster's data pages during the fetch pass (OEP 7's success metric).
pub const CLUSTER_CACHE_FRACTION: f64 = 0.2;

/// What one component did with n records.
pub(crate) struct Measured {
    /// Operations timed.
    pub ops: u64,
    /// The counted work (what [`Measured::work_what`] says).
    pub work: u64,
    pub work_what: &'static str,
    pub cpu: Duration,
    pub wall: Duration,
    /// Further counted fields and the ratios that drive the mechanism. Each function builds its
    /// ratio fields once and clones them into every measurement: a closure taking and returning
    /// the builder, called twice, was miscompiled by rustc 1.95.0 at opt-level 3 (the two rows
    /// shared one map, which was then freed twice).
    pub extra: RowBuilder,
}

/// Runs `f`, returning its value with the wall and thread-CPU time it took.
fn timed<T>(f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<(T, Duration, Duration)> {
    let cpu = thread_cpu();
    let start = Instant::now();
    let value = f()?;
    Ok((value, start.elapsed(), thread_cpu().saturating_sub(cpu)))
}

fn rng(seed: u64, name: &str) -> Xoshiro256PlusPlus {
    lsmlab_workloads::seeded_rng(seed, name)
}

/// `n` uniform points in [`EXTENT`].
pub fn points(n: u64, seed: u64) -> Vec<Point> {
    let mut r = rng(seed, "scaling/points");
    (0..n)
        .map(|_| Point::new(r.random::<f64>() * 1000.0, r.random::<f64>() * 1000.0))
        .collect()
}

/// `count` query boxes whose side is `side` x the extent's, around uniform points.
pub fn queries(count: usize, side: f64, seed: u64) -> Vec<Rect> {
    points(count as u64, seed ^ 0x5eed)
        .into_iter()
        .map(|p| EXTENT.box_around(p, side))
        .collect()
}

/// The memory R-tree: `n` inserts (Guttman, quadratic split), then the range queries. Work of the
/// inserts: nodes on every insert's descent (the tree's height when it starts) plus splits.
pub(crate) fn mem_rtree(n: u64, qs: &[Rect], seed: u64) -> anyhow::Result<(Measured, Measured)> {
    let pts = points(n, seed);
    let mut tree = MemRTree::new(RTREE_PAGE);
    let (descended, wall, cpu) = timed(|| {
        let mut descended = 0u64;
        for (i, p) in pts.iter().enumerate() {
            descended += tree.height() as u64;
            tree.insert(SpatialEntry::new(*p, i as u64, 1));
        }
        Ok(descended)
    })?;
    let leaves = tree.leaf_count().max(1) as u64;
    let ratios = RowBuilder::new()
        .int("leaf_capacity", tree.leaf_capacity() as u64)
        .num("entries_per_leaf", n as f64 / leaves as f64)
        .int("height", tree.height() as u64);
    let insert = Measured {
        ops: n,
        work: descended + tree.splits(),
        work_what: "nodes descended + splits",
        cpu,
        wall,
        extra: ratios
            .clone()
            .int("splits", tree.splits())
            .int("nodes", tree.node_count() as u64),
    };
    let (results, wall, cpu) = timed(|| {
        let mut results = 0u64;
        for q in qs {
            tree.search(q, |_| results += 1);
        }
        Ok(results)
    })?;
    let query = Measured {
        ops: qs.len() as u64,
        work: results,
        work_what: "entries returned (the memory R-tree counts no nodes)",
        cpu,
        wall,
        extra: ratios.clone().int("results", results),
    };
    Ok((insert, query))
}

/// The packed disk R-tree: the Hilbert sort and bulk load of `n` entries onto a counted memory
/// device (a flush's work), then the range queries on a warm cache holding every page.
pub(crate) fn packed_rtree(n: u64, qs: &[Rect], seed: u64) -> anyhow::Result<(Measured, Measured)> {
    let mut entries: Vec<SpatialEntry> = points(n, seed ^ 1)
        .into_iter()
        .enumerate()
        .map(|(i, p)| SpatialEntry::new(p, i as u64, 1))
        .collect();
    let device: Arc<MemDevice> = Arc::new(MemDevice::new(RTREE_PAGE));
    let curve = HilbertCurve::new(EXTENT);
    let (tree, wall, cpu) = timed(|| {
        hilbert_sort(&curve, &mut entries);
        Ok(DiskRTree::bulk_load(device.as_ref(), entries.drain(..))?)
    })?;
    let io = device.stats();
    let ratios = RowBuilder::new()
        .int("leaf_capacity", DiskRTree::leaf_capacity(RTREE_PAGE) as u64)
        .int("pages", tree.pages())
        .int("height", tree.height() as u64);
    let load = Measured {
        ops: n,
        work: io.page_writes,
        work_what: "pages written",
        cpu,
        wall,
        extra: ratios.clone().int("page_writes", io.page_writes),
    };
    let dev: Arc<dyn Device> = device.clone();
    let cache = BufferCache::new(dev, tree.pages() as usize + 16);
    tree.search(&cache, &EXTENT, |_| {})?;
    let ((visited, results), wall, cpu) = timed(|| {
        let (mut visited, mut results) = (0u64, 0u64);
        for q in qs {
            visited += tree.search_counted(&cache, q, |_| results += 1)?;
        }
        Ok((visited, results))
    })?;
    let search = Measured {
        ops: qs.len() as u64,
        work: visited,
        work_what: "nodes visited (pages read through the warm cache)",
        cpu,
        wall,
        extra: ratios.clone().int("results", results),
    };
    Ok((load, search))
}

/// The Update Memo: `n` updates of `n / 8` objects recorded, each entry's obsolescence checked,
/// then every count released (the lifecycle of a memo entry between an update and the cleaning
/// that removes the obsolete entry).
pub(crate) fn update_memo(n: u64, seed: u64) -> anyhow::Result<Measured> {
    let objects = (n / VERSIONS_PER_OBJECT).max(1);
    let mut r = rng(seed, "scaling/um");
    let oids: Vec<u64> = (0..n).map(|_| r.random_range(0..objects)).collect();
    let um = UpdateMemo::new();
    let ((obsolete, max_len), wall, cpu) = timed(|| {
        for (i, &oid) in oids.iter().enumerate() {
            um.record_obsolete(oid, i as u64 + 1);
        }
        let max_len = um.len() as u64;
        let mut obsolete = 0u64;
        for (i, &oid) in oids.iter().enumerate() {
            obsolete += u64::from(um.is_obsolete(oid, i as u64));
        }
        for &oid in &oids {
            um.release(oid);
        }
        Ok((obsolete, max_len))
    })?;
    anyhow::ensure!(um.is_empty(), "the Update Memo kept entries after every release");
    Ok(Measured {
        ops: 3 * n,
        work: 3 * n,
        work_what: "memo operations (record, lookup, release)",
        cpu,
        wall,
        extra: RowBuilder::new()
            .int("objects", objects)
            .int("um_max_entries", max_len)
            .int("obsolete_lookups", obsolete)
            .num("updates_per_object", n as f64 / objects as f64),
    })
}

/// A moving-object stream of `n` operations over `n / 8` objects: each object's first record an
/// insert, every later one an update by a small random step.
pub fn spatial_stream(n: u64, seed: u64) -> Vec<SpatialOp> {
    let objects = (n / VERSIONS_PER_OBJECT).max(1);
    let mut r = rng(seed, "scaling/stream");
    let mut at = points(objects, seed ^ 2);
    let mut ops: Vec<SpatialOp> = (0..objects)
        .map(|oid| SpatialOp::Insert {
            oid,
            at: at[oid as usize],
        })
        .collect();
    for _ in objects..n {
        let oid = r.random_range(0..objects);
        let from = at[oid as usize];
        let to = Point::new(
            (from.x + r.random::<f64>() * 10.0 - 5.0).clamp(0.0, 1000.0),
            (from.y + r.random::<f64>() * 10.0 - 5.0).clamp(0.0, 1000.0),
        );
        ops.push(SpatialOp::Update { oid, from, to });
        at[oid as usize] = to;
    }
    ops
}

/// The LSM R-tree's update stream under `strategy` with a fixed memory component of
/// `memory_pages` pages (cache = 4 x memory, max mergeable component = 8 x memory, the RUM
/// authors' ratios); flushes and merges run inside the stream.
pub(crate) fn lsm_rtree(ops: &[SpatialOp], strategy: Strategy, memory_pages: u64) -> anyhow::Result<Measured> {
    let storage = StorageConfig::with_cache_pages(memory_pages as usize * 4).open()?;
    let mut index = LsmRTree::new(
        SpatialConfig::new(strategy, EXTENT, memory_pages),
        storage.cache.clone(),
    )?;
    let before = storage.io();
    let ((), wall, cpu) = timed(|| {
        for (i, op) in ops.iter().enumerate() {
            apply(&mut index, op).with_context(|| format!("operation {i} under {strategy}"))?;
        }
        Ok(())
    })?;
    let io = storage.io().since(&before);
    let st = index.stats();
    let objects = ops
        .iter()
        .filter(|o| matches!(o, SpatialOp::Insert { .. }))
        .count() as u64;
    let capacity = memory_pages * DiskRTree::leaf_capacity(RTREE_PAGE) as u64;
    Ok(Measured {
        ops: ops.len() as u64,
        work: io.page_reads + io.page_writes,
        work_what: "device pages read + written",
        cpu,
        wall,
        extra: RowBuilder::new()
            .int("page_reads", io.page_reads)
            .int("page_writes", io.page_writes)
            .int("flushes", st.rtree.flushes)
            .int("merges", st.rtree.merges)
            .int("um_max_entries", st.um_max_entries)
            .int("memory_pages", memory_pages)
            .int("memory_capacity_entries", capacity)
            .int("objects", objects)
            .num("objects_per_memory_capacity", objects as f64 / capacity as f64)
            .num("records_per_memory_capacity", ops.len() as f64 / capacity as f64),
    })
}

/// The key-value store's settings: a fixed memtable and cache; leveled compaction with RocksDB's
/// ratios (level 0 trigger 4, size ratio 10) and a base level of 4 memtables.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KvSizes {
    pub memtable_bytes: u64,
    pub cache_pages: usize,
}

impl KvSizes {
    fn leveled(&self) -> LeveledParams {
        let memtable_pages = (self.memtable_bytes / KV_PAGE as u64).max(1);
        LeveledParams {
            base_level_pages: memtable_pages * 4,
            target_run_pages: memtable_pages,
            ..LeveledParams::default()
        }
    }
}

/// The key-value store: `n` puts of distinct keys in random order (flushes and leveled
/// compactions inside), then `n / 4` gets of random stored keys, then `n / 64` scans of 16 keys.
pub(crate) fn kv_store(n: u64, sizes: KvSizes, seed: u64) -> anyhow::Result<[Measured; 3]> {
    let device = Arc::new(MemDevice::new(KV_PAGE));
    let cache = Arc::new(BufferCache::new(device.clone(), sizes.cache_pages));
    let config = KvConfig {
        memtable_bytes: sizes.memtable_bytes,
        leveled: sizes.leveled(),
        bloom_fp: Some(0.01),
        background_bytes_per_s: None,
    };
    let mut store = KvStore::new(cache.clone(), config, Box::new(NoWarmUp))?;
    let mut r = rng(seed, "scaling/kv");
    let mut keys: Vec<u64> = (0..n).map(|i| i * KV_KEY_STRIDE).collect();
    keys.shuffle(&mut r);
    let value = vec![b'v'; KV_VALUE_BYTES];
    let ((), wall, cpu) = timed(|| {
        for &k in &keys {
            store.put(k, &value)?;
        }
        store.flush()?;
        Ok(())
    })?;
    let st = store.stats();
    let data_blocks = store.data_blocks();
    let memtable_pages = sizes.memtable_bytes as f64 / KV_PAGE as f64;
    let levels = store.version().depth() as u64;
    let ratios = RowBuilder::new()
        .int("memtable_bytes", sizes.memtable_bytes)
        .int("cache_pages", sizes.cache_pages as u64)
        .int("data_blocks", data_blocks)
        .num("data_per_memtable", data_blocks as f64 / memtable_pages)
        .num(
            "cache_per_data",
            sizes.cache_pages as f64 / data_blocks.max(1) as f64,
        )
        .int("levels", levels);
    let put = Measured {
        ops: n,
        work: st.background_pages_read + st.background_pages_written,
        work_what: "flush and compaction pages read + written",
        cpu,
        wall,
        extra: ratios
            .clone()
            .int("flushes", st.flushes)
            .int("compactions", st.compactions)
            .int("page_reads", st.background_pages_read)
            .int("page_writes", st.background_pages_written),
    };
    let gets: Vec<u64> = (0..(n / 4).max(1))
        .map(|_| r.random_range(0..n) * KV_KEY_STRIDE)
        .collect();
    let c0 = cache.stats();
    let (found, wall, cpu) = timed(|| {
        let mut found = 0u64;
        for &k in &gets {
            found += u64::from(store.get(k)?.is_some());
        }
        Ok(found)
    })?;
    anyhow::ensure!(found == gets.len() as u64, "a stored key was not found");
    let c = cache.stats().since(&c0);
    let get = Measured {
        ops: gets.len() as u64,
        work: c.hits + c.misses,
        work_what: "data blocks read through the cache",
        cpu,
        wall,
        extra: ratios
            .clone()
            .int("cache_hits", c.hits)
            .int("cache_misses", c.misses),
    };
    let scans: Vec<u64> = (0..(n / 64).max(1))
        .map(|_| r.random_range(0..n) * KV_KEY_STRIDE)
        .collect();
    let c0 = cache.stats();
    let (blocks, wall, cpu) = timed(|| {
        let mut blocks = 0u64;
        for &lo in &scans {
            blocks += store.scan_blocks(lo, lo + (KV_SCAN_KEYS - 1) * KV_KEY_STRIDE)?;
        }
        Ok(blocks)
    })?;
    let c = cache.stats().since(&c0);
    let scan = Measured {
        ops: scans.len() as u64,
        work: c.hits + c.misses,
        work_what: "data blocks read through the cache",
        cpu,
        wall,
        extra: ratios
            .clone()
            .int("blocks_scanned", blocks)
            .int("cache_hits", c.hits)
            .int("cache_misses", c.misses),
    };
    Ok([put, get, scan])
}

/// The `diol` experiment's setup at `n` points with its memory budget sized for `base` points
/// (the diol experiment's fraction of the x1 data), fixed while n grows.
pub fn ts_setup(n: u64, base: u64) -> crate::diol::Setup {
    crate::diol::Setup {
        points: n,
        memory_scale: base as f64 / n as f64,
        ..crate::diol::Setup::defaults(Scale::Tiny)
    }
}

/// The time-series store under `layout`: the `n` points of one series arriving with
/// [`TS_O3_RATIO`] out of order (the DIOL authors' delay mixture), then `n / 20` point reads and
/// `n / 100` range reads of 64 timestamps at uniform times. The memory level is the diol
/// experiment's for `base` points, fixed while n grows.
pub(crate) fn time_series(
    n: u64,
    base: u64,
    layout: SeriesLayout,
    stream: &[u64],
    seed: u64,
) -> anyhow::Result<(Measured, Measured)> {
    let setup = ts_setup(n, base);
    let config = setup.series_config(layout);
    let budget_fraction = config.budget_points() as f64 / n as f64;
    let device: Arc<dyn Device> = Arc::new(MemDevice::new(setup.page_size as usize));
    let mut store = SeriesStore::new(config, device)?;
    let ((), wall, cpu) = timed(|| {
        for &t in stream {
            store.insert(0, t, 2 * t as i64)?;
        }
        Ok(())
    })?;
    let io = store.io();
    let st = store.stats();
    let ratios = RowBuilder::new()
        .num("o3_ratio", TS_O3_RATIO)
        .num("memory_budget_fraction", budget_fraction)
        .int("page_size", setup.page_size);
    let insert = Measured {
        ops: n,
        work: io.page_reads + io.page_writes,
        work_what: "device pages read + written",
        cpu,
        wall,
        extra: ratios
            .clone()
            .int("flushes", st.flushes)
            .int("delayed_inserts", st.delayed_inserts)
            .int("page_reads", io.page_reads)
            .int("page_writes", io.page_writes),
    };
    let mut r = rng(seed, "scaling/ts");
    let gets: Vec<u64> = (0..(n / 20).max(1)).map(|_| r.random_range(1..=n)).collect();
    let ranges: Vec<u64> = (0..(n / 100).max(1))
        .map(|_| r.random_range(1..=n.saturating_sub(63).max(1)))
        .collect();
    let before = store.io();
    let (found, wall, cpu) = timed(|| {
        let mut found = 0u64;
        for &t in &gets {
            found += u64::from(store.get(0, t)?.is_some());
        }
        for &a in &ranges {
            found += store.range(0, a, a + 63)?.len() as u64;
        }
        Ok(found)
    })?;
    let io = store.io().since(&before);
    let query = Measured {
        ops: (gets.len() + ranges.len()) as u64,
        work: io.page_reads,
        work_what: "device pages read",
        cpu,
        wall,
        extra: ratios
            .clone()
            .int("points_found", found)
            .int("page_reads", io.page_reads),
    };
    Ok((insert, query))
}

/// The arrival order of the time-series stream at `n` points, its bounded delays scaled for
/// `base` points as the diol experiment scales them (a delay keeps its size against a memtable).
pub fn ts_stream(n: u64, base: u64, seed: u64) -> anyhow::Result<Vec<u64>> {
    Ok(generate_stream(
        &StreamSpec {
            points: n,
            o3_ratio: TS_O3_RATIO,
            delay: DelayModel::Diol,
            delay_scale: base as f64 / PAPER_POINTS as f64,
        },
        seed,
    )?)
}

/// A record cluster under `layout`: `n` YCSB-like records loaded (64 KiB pages), then every
/// record fetched once in random order through a cold cache holding 20% of the data pages (and
/// every map page).
pub(crate) fn cluster(n: u64, layout: ClusterLayout, seed: u64) -> anyhow::Result<(Measured, Measured)> {
    let setup = crate::oep7::Setup::defaults(Scale::Tiny, [n, n, n]);
    let mut bed = crate::oep7::Bed::new(layout, setup.page_size)?;
    let ((ids, _), wall, cpu) = timed(|| crate::oep7::ycsb::load_ycsb_records(&mut bed, n, seed))?;
    let io = bed.device.stats();
    let space = bed.cluster.space();
    let per_page = space.live_records as f64 / space.data_pages.max(1) as f64;
    let ratios = RowBuilder::new()
        .num("records_per_data_page", per_page)
        .int("data_pages", space.data_pages)
        .int("map_pages", space.map_pages)
        .int("page_size", setup.page_size as u64);
    let load = Measured {
        ops: n,
        work: io.page_writes,
        work_what: "device pages written",
        cpu,
        wall,
        extra: ratios.clone().int("page_writes", io.page_writes),
    };
    let mut order: Vec<Rid> = ids;
    order.shuffle(&mut rng(seed, "scaling/cluster"));
    let pages = bed.cache_pages_for(CLUSTER_CACHE_FRACTION) + bed.cluster.map_page_ids().len();
    bed.set_cache(pages)?;
    let before = bed.snapshot();
    let ((), wall, cpu) = timed(|| {
        for &rid in &order {
            anyhow::ensure!(bed.cluster.fetch(rid)?.is_found(), "record {rid:?} not found");
        }
        Ok(())
    })?;
    let after = bed.snapshot();
    let accessed = after.cluster.page_reads - before.cluster.page_reads;
    let device_reads = after.io.page_reads - before.io.page_reads;
    let fetch = Measured {
        ops: n,
        work: accessed,
        work_what: "pages read through the cache",
        cpu,
        wall,
        extra: ratios
            .clone()
            .num("cache_fraction", CLUSTER_CACHE_FRACTION)
            .int("cache_pages", pages as u64)
            .int("device_reads", device_reads),
    };
    Ok((load, fetch))
}

/// The `rum-update` stream of `dataset` at `records` records, generated as rum-update generates
/// it: objects from the memory component (the paper's objects per memory page), not from the
/// records, so x2 records means twice the updates of the same objects.
pub(crate) fn rum_stream(index: &IndexConfig, dataset: Dataset, records: u64, seed: u64) -> anyhow::Result<RumData> {
    let objects = index.objects_for(dataset, records as usize);
    let spec = GenSpec::new(records as usize).with_objects(objects);
    let data = lsmlab_workloads::generate_spec(dataset.as_str(), &spec, seed)
        .with_context(|| format!("generating {dataset}"))?;
    Ok(RumData {
        ops: data.to_ops(),
        data,
    })
}

/// A generated RUM dataset and its op stream.
pub(crate) struct RumData {
    pub data: lsmlab_workloads::Trajectories,
    pub ops: Vec<SpatialOp>,
}

/// rum-update's core: one strategy ingests the stream (flushes and merges inside), on rum-update's
/// testbed (cache = 4 x memory, max mergeable = 8 x memory, prefix policy).
pub(crate) fn rum_update(index: &IndexConfig, strategy: Strategy, rum: &RumData) -> anyhow::Result<Measured> {
    let storage = index.storage_defaults();
    let mut bed = index.testbed(&storage, strategy, &rum.data)?;
    let before = bed.io();
    let ((), wall, cpu) = timed(|| {
        for (i, op) in rum.ops.iter().enumerate() {
            apply(&mut bed.index, op).with_context(|| format!("operation {i} under {strategy}"))?;
        }
        Ok(())
    })?;
    let io = bed.io().since(&before);
    let st = bed.index.stats();
    let capacity = index.memory_capacity_entries(&storage);
    let extra = index
        .data_fields(RowBuilder::new(), &rum.data, &storage)
        .num(
            "records_per_memory_capacity",
            rum.ops.len() as f64 / capacity as f64,
        )
        .int("memory_pages", index.memory_pages)
        .int("page_reads", io.page_reads)
        .int("page_writes", io.page_writes)
        .int("flushes", st.rtree.flushes)
        .int("merges", st.rtree.merges)
        .int("um_max_entries", st.um_max_entries);
    Ok(Measured {
        ops: rum.ops.len() as u64,
        work: io.page_reads + io.page_writes,
        work_what: "device pages read + written",
        cpu,
        wall,
        extra,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spatial_stream_inserts_each_object_once_then_updates() {
        let ops = spatial_stream(800, 1);
        assert_eq!(ops.len(), 800);
        let inserts = ops
            .iter()
            .filter(|o| matches!(o, SpatialOp::Insert { .. }))
            .count();
        assert_eq!(inserts, 100);
        assert!(ops[..100].iter().all(|o| matches!(o, SpatialOp::Insert { .. })));
        assert_eq!(spatial_stream(800, 1), ops, "deterministic for a seed");
    }

    #[test]
    fn components_do_what_they_count() {
        let qs = queries(20, 0.1, 3);
        let (ins, q) = mem_rtree(2_000, &qs, 3).unwrap();
        assert_eq!(ins.ops, 2_000);
        assert!(ins.work >= 2_000, "every insert visits at least the root");
        assert!(q.work > 0);
        let (load, search) = packed_rtree(2_000, &qs, 3).unwrap();
        assert!(load.work > 2_000 / 63, "at least one page per 63 entries");
        assert!(search.work >= qs.len() as u64);
        let um = update_memo(800, 3).unwrap();
        assert_eq!(um.ops, 2_400);
    }
}
