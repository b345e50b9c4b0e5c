//! The record clusters in the soak: OrientDB's paginated cluster and OEP 7's single-page cluster,
//! with drawn page sizes, caches (0 included) and devices, on create/read/update/delete streams
//! whose records range from empty to three pages long (chained across page boundaries), with
//! single and batch inserts and fetches, reads of deleted ids and cold restarts of the cache,
//! against a map of the live records. After each stream: every record after a cold cache, the live
//! count, every allocated page a page of the cluster's files, and every cached page one of them.

use super::{check_stream, env_u64, Mismatch, Totals, DEFAULT_OPS};
use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::cluster::{self, ClusterOptions, Layout, Lookup, Rid};
use lsmlab_engine::storage::{Device, FileDevice, MemDevice};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

#[derive(Clone, Debug)]
struct Setup {
    layout: Layout,
    file_device: bool,
    page_size: usize,
    cache_pages: usize,
}

impl Setup {
    fn draw(layout: Layout, rng: &mut impl Rng) -> Setup {
        Setup {
            layout,
            file_device: rng.random_bool(0.2),
            page_size: [512, 1024, 4096][rng.random_range(0..3)],
            cache_pages: [0, 1, 2, 8, 64][rng.random_range(0..5)],
        }
    }
}

/// Records are named by their position among the live (or deleted) ids in creation order, modulo
/// how many there are, so a shrunk stream still names records. A length is in thousandths of a
/// page (up to 3,000: three pages).
#[derive(Clone, Copy, Debug)]
enum Op {
    Create(u32),
    CreateBatch(u8, u32),
    Read(usize),
    Update(usize, u32),
    Delete(usize),
    ReadDead(usize),
    ReadBatch(usize, u8),
    ColdCache,
}

fn length(rng: &mut impl Rng) -> u32 {
    match rng.random_range(0..20) {
        0 => rng.random_range(0..5),
        1..=2 => rng.random_range(1000..3000),
        3..=5 => rng.random_range(300..950),
        _ => rng.random_range(5..150),
    }
}

fn stream(seed: u64, n: u64) -> Vec<Op> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let k = rng.random_range(0..1usize << 20);
            match rng.random_range(0..100) {
                0..25 => Op::Create(length(&mut rng)),
                25..27 => Op::CreateBatch(rng.random_range(1..20), length(&mut rng)),
                27..47 => Op::Update(k, length(&mut rng)),
                47..59 => Op::Delete(k),
                59..84 => Op::Read(k),
                84..93 => Op::ReadDead(k),
                93..99 => Op::ReadBatch(k, rng.random_range(1..40)),
                _ => Op::ColdCache,
            }
        })
        .collect()
}

/// A record of `thousandths` of a page whose bytes name the step that wrote it.
fn record(page_size: usize, step: usize, thousandths: u32, j: usize) -> Vec<u8> {
    let len = page_size * thousandths as usize / 1000;
    let tag = (step as u64) << 16 | j as u64;
    let mut r: Vec<u8> = (0..len).map(|i| (tag as usize * 31 + i) as u8).collect();
    if len >= 8 {
        r[..8].copy_from_slice(&tag.to_le_bytes());
    }
    r
}

fn found(l: &Lookup<Vec<u8>>) -> Option<&Vec<u8>> {
    match l {
        Lookup::Found(r) => Some(r),
        _ => None,
    }
}

fn replay(setup: &Setup, ops: &[Op], totals: &mut Totals) -> Result<(), Mismatch> {
    let fail = |step: usize, what: String| Mismatch { step, what };
    let dir = setup.file_device.then(|| tempfile::tempdir().unwrap());
    let device: Arc<dyn Device> = match &dir {
        Some(d) => Arc::new(FileDevice::create(&d.path().join("cluster.pages"), setup.page_size).unwrap()),
        None => Arc::new(MemDevice::new(setup.page_size)),
    };
    let cache = Arc::new(BufferCache::new(device.clone(), setup.cache_pages));
    let mut c = cluster::open(setup.layout, cache.clone(), ClusterOptions::default())
        .map_err(|e| fail(0, format!("opening: {e}")))?;
    let ps = setup.page_size;
    let mut oracle: HashMap<Rid, Vec<u8>> = HashMap::new();
    let mut live: Vec<Rid> = Vec::new();
    let mut dead: Vec<Rid> = Vec::new();
    let created =
        |rid: Rid, r: Vec<u8>, oracle: &mut HashMap<Rid, Vec<u8>>, live: &mut Vec<Rid>, step: usize| {
            if oracle.insert(rid, r).is_some() {
                return Err(fail(step, format!("id {rid:?} handed out twice")));
            }
            live.push(rid);
            Ok(())
        };
    // Whether a lookup of a deleted id answered as the layout promises.
    let dead_ok = |got: &Lookup<()>| match setup.layout {
        Layout::Paginated => *got == Lookup::Deleted,
        Layout::SinglePage => matches!(got, Lookup::Deleted | Lookup::Stale),
    };
    for (step, op) in ops.iter().enumerate() {
        let err = |e: lsmlab_engine::Error| fail(step, format!("{op:?} failed: {e}"));
        match *op {
            Op::Create(len) => {
                let r = record(ps, step, len, 0);
                let rid = c.insert(&r).map_err(err)?;
                created(rid, r, &mut oracle, &mut live, step)?;
            }
            Op::CreateBatch(n, len) => {
                let rs: Vec<Vec<u8>> = (0..n as usize)
                    .map(|j| record(ps, step, (len + 97 * j as u32) % 3000, j))
                    .collect();
                let rids = c.insert_batch(&rs).map_err(err)?;
                if rids.len() != rs.len() {
                    return Err(fail(step, format!("{} ids for {} records", rids.len(), rs.len())));
                }
                for (rid, r) in rids.into_iter().zip(rs) {
                    created(rid, r, &mut oracle, &mut live, step)?;
                }
            }
            Op::Read(k) if !live.is_empty() => {
                totals.queries += 1;
                let rid = live[k % live.len()];
                let got = c.fetch(rid).map_err(err)?;
                if found(&got) != oracle.get(&rid) {
                    return Err(fail(step, format!("fetch {rid:?}: {:?}", got.status())));
                }
            }
            Op::Update(k, len) if !live.is_empty() => {
                let rid = live[k % live.len()];
                let r = record(ps, step, len, 0);
                let got = c.update(rid, &r).map_err(err)?;
                if got != Lookup::Found(()) {
                    return Err(fail(step, format!("update of live {rid:?}: {got:?}")));
                }
                oracle.insert(rid, r);
            }
            Op::Delete(k) if !live.is_empty() => {
                let rid = live.remove(k % live.len());
                let got = c.delete(rid).map_err(err)?;
                if got != Lookup::Found(()) {
                    return Err(fail(step, format!("delete of live {rid:?}: {got:?}")));
                }
                oracle.remove(&rid);
                dead.push(rid);
            }
            Op::ReadDead(k) if !dead.is_empty() => {
                totals.queries += 1;
                let rid = dead[k % dead.len()];
                let got = c.fetch(rid).map_err(err)?.status();
                let upd = c.update(rid, b"a record written to a dead id").map_err(err)?;
                let del = c.delete(rid).map_err(err)?;
                if !dead_ok(&got) || upd.is_found() || del.is_found() {
                    return Err(fail(
                        step,
                        format!("dead {rid:?}: fetch {got:?}, update {upd:?}, delete {del:?}"),
                    ));
                }
            }
            Op::ReadBatch(k, n) if !live.is_empty() => {
                totals.queries += 1;
                let mut ids: Vec<Rid> = (0..n as usize).map(|j| live[(k + j * 7) % live.len()]).collect();
                if !dead.is_empty() {
                    ids.push(dead[k % dead.len()]);
                }
                let got = c.fetch_batch(&ids).map_err(err)?;
                for (rid, g) in ids.iter().zip(&got) {
                    let ok = match oracle.get(rid) {
                        Some(r) => found(g) == Some(r),
                        None => dead_ok(&g.status()),
                    };
                    if !ok {
                        return Err(fail(step, format!("batch fetch of {rid:?}: {:?}", g.status())));
                    }
                }
                if got.len() != ids.len() {
                    return Err(fail(step, format!("{} answers for {} ids", got.len(), ids.len())));
                }
            }
            Op::ColdCache => cache.clear().map_err(err)?,
            _ => {}
        }
        totals.ops += 1;
    }
    let end = ops.len();
    let files: BTreeSet<u64> = c
        .data_page_ids()
        .iter()
        .chain(c.map_page_ids())
        .copied()
        .collect();
    if let Some(p) = cache.resident().into_iter().find(|p| !files.contains(p)) {
        return Err(fail(
            end,
            format!("cached page {p} belongs to no file of the cluster"),
        ));
    }
    let space = c.space();
    if device.allocated_pages() != space.file_pages || files.len() as u64 != space.file_pages {
        return Err(fail(
            end,
            format!(
                "{} pages allocated, {} distinct file pages, {} counted",
                device.allocated_pages(),
                files.len(),
                space.file_pages
            ),
        ));
    }
    if space.live_records != oracle.len() as u64 {
        return Err(fail(
            end,
            format!(
                "{} live records counted, {} live",
                space.live_records,
                oracle.len()
            ),
        ));
    }
    cache
        .clear()
        .map_err(|e| fail(end, format!("final cache clear: {e}")))?;
    for (rid, r) in &oracle {
        let got = c
            .fetch(*rid)
            .map_err(|e| fail(end, format!("final fetch: {e}")))?;
        if found(&got) != Some(r) {
            return Err(fail(
                end,
                format!("final fetch of {rid:?} after a cold cache: {:?}", got.status()),
            ));
        }
    }
    let st = c.stats();
    totals.flushes += cache.stats().write_backs;
    totals.merges += st.moves;
    Ok(())
}

#[test]
fn both_cluster_layouts_match_the_oracle() {
    let ops_per_config = env_u64("SOAK_OPS", DEFAULT_OPS);
    let first_seed = env_u64("SOAK_SEED", 0);
    let mut totals = Totals::default();
    let mut failures = Vec::new();
    // Two drawn configurations per layout.
    for (i, layout) in Layout::ALL.iter().chain(Layout::ALL.iter()).enumerate() {
        let seed = first_seed.wrapping_add(3000 + i as u64);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xc105);
        let setup = Setup::draw(*layout, &mut rng);
        let ops = stream(seed, ops_per_config);
        failures.extend(check_stream(
            &layout.to_string(),
            seed,
            &setup,
            &ops,
            &mut totals,
            replay,
        ));
    }
    totals.print("record clusters", "fetches", "page write-backs", "record moves");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(totals.merges > 0, "no update moved a record");
}
