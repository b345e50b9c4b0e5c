//! The LSM RUM-tree experiments (PAPERS.md §1): the secondary index ingests a moving-object stream
//! under each maintenance strategy, and we measure what each strategy costs and what it buys.

pub mod concurrency;
pub mod mixed;
pub mod query;
pub mod report;
pub mod tuning;
pub mod update;

use crate::experiment::{ParamSpec, Params, RunContext, Scale};
use anyhow::Context;
use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::lsm::MergePolicyConfig;
use lsmlab_engine::spatial::{LsmRTree, SpatialConfig, Strategy};
use lsmlab_engine::storage::{Device, DeviceProfile, FileDevice, IoStats, MemDevice};
use lsmlab_workloads::{SpatialOp, Trajectories};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const PAPER: &str = "LSM RUM-tree";

/// Record counts of the paper's datasets (Section 6 of the paper; PAPERS.md §1).
pub fn paper_records(dataset: &str) -> Option<usize> {
    match dataset {
        "gowalla" => Some(6_442_757),
        "chicago" => Some(15_241_413),
        "berlinmod" => Some(56_129_943),
        _ => None,
    }
}

/// Parameters every RUM experiment shares: the data, the strategies and the index's settings.
///
/// The authors ran 2 KiB pages, a 128 MiB memory component (65,536 pages), a 512 MiB buffer cache
/// and the prefix policy with 5 tolerated components and ~1 GB maximum mergeable size. Smaller
/// scales keep the ratios (cache = 4 x memory, max mergeable = 8 x memory) with a memory budget
/// small enough that the stream crosses several flushes and merges.
pub fn index_params(scale: Scale) -> Vec<ParamSpec> {
    index_params_with(scale, 2_000_000)
}

/// [`index_params`] with another record count at the small scale (experiments that ingest many
/// times use fewer records so that `make` stays within minutes).
pub fn index_params_with(scale: Scale, small_records: i64) -> Vec<ParamSpec> {
    let (records, memory_pages) = match scale {
        Scale::Tiny => (20_000, 64),
        Scale::Small => (small_records, 2_048),
        Scale::Paper => (0, 65_536),
    };
    vec![
        ParamSpec::list("datasets", &lsmlab_workloads::DATASETS, "synthetic datasets to run: gowalla, chicago, berlinmod"),
        ParamSpec::list("strategies", &Strategy::PAPER, "strategies: Eager, Validation, UM, or UM+ with any of F, M, B, V"),
        ParamSpec::int(
            "records",
            records,
            "records per dataset (0 = the paper's count: 6,442,757 / 15,241,413 / 56,129,943; for --data, the whole file)",
        ),
        ParamSpec::int("page_size", 2048, "page size in bytes (the authors' 2 KiB)"),
        ParamSpec::int("memory_pages", memory_pages, "memory component budget in pages; a flush starts when it is exceeded"),
        ParamSpec::int("cache_pages", memory_pages * 4, "buffer cache capacity in pages"),
        ParamSpec::int("max_mergeable_pages", memory_pages * 8, "prefix policy: components larger than this are never merged"),
        ParamSpec::int("tolerance", 5, "prefix policy: merge once this many mergeable components exist"),
        ParamSpec::str("merge_policy", "prefix", "prefix (AsterixDB's, as the authors ran) or none (components accumulate)"),
        ParamSpec::int("buffered_threshold", 4, "Buffered Cleaning: clean a memory leaf after this many updates into it"),
        ParamSpec::int("vacuum_threshold", 8, "Vacuum Cleaning: clean the next leaf every this many updates"),
        ParamSpec::bool("eager_primary_lookup", false, "Eager looks the old location up in an LSM primary index (timed)"),
        ParamSpec::bool("validation_merge_repair", true, "Validation drops obsolete entries during merges"),
        ParamSpec::float("bloom_fp", 0.01, "Bloom filter false-positive rate of B+-tree components"),
        ParamSpec::str("device", "mem", "mem (counted, in memory) or file (real checksummed files)"),
        ParamSpec::str("file_dir", "", "directory for device=file (default: the system temp dir)"),
        ParamSpec::str("profile", "nvme", "device profile for modelled time: nvme, sata-ssd, hdd"),
    ]
}

/// The items of list parameter `key` parsed as `T`; a bad item is an error naming the key and item.
pub fn parse_list<T>(p: &Params, key: &str) -> anyhow::Result<Vec<T>>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    p.list(key)
        .iter()
        .map(|s| {
            s.parse::<T>()
                .map_err(|e| anyhow::anyhow!("parameter `{key}`: item `{s}`: {e}"))
        })
        .collect()
}

/// Range and choice checks on [`index_params`].
pub fn validate_index_params(p: &Params) -> anyhow::Result<()> {
    p.check_list_choices("datasets", &lsmlab_workloads::DATASETS)?;
    if p.get("strategies").is_some() {
        for s in p.list("strategies") {
            s.parse::<Strategy>()
                .with_context(|| "bad value in --set strategies=...".to_string())?;
        }
        p.check(
            "strategies",
            !p.list("strategies").is_empty(),
            "at least one strategy",
        )?;
    }
    p.check("records", p.int("records") >= 0, "a record count >= 0")?;
    p.check(
        "page_size",
        (256..=65536).contains(&p.int("page_size")),
        "a page size between 256 and 65536 bytes",
    )?;
    p.check("memory_pages", p.int("memory_pages") >= 1, "at least 1 page")?;
    p.check("cache_pages", p.int("cache_pages") >= 0, "a page count >= 0")?;
    p.check(
        "max_mergeable_pages",
        p.int("max_mergeable_pages") >= 1,
        "at least 1 page",
    )?;
    p.check("tolerance", p.int("tolerance") >= 2, "at least 2 components")?;
    p.check(
        "buffered_threshold",
        p.int("buffered_threshold") >= 1,
        "at least 1",
    )?;
    p.check("vacuum_threshold", p.int("vacuum_threshold") >= 1, "at least 1")?;
    let fp = p.float("bloom_fp");
    p.check(
        "bloom_fp",
        fp > 0.0 && fp < 1.0,
        "a rate strictly between 0 and 1",
    )?;
    p.check("device", matches!(p.str("device"), "mem" | "file"), "mem or file")?;
    p.check(
        "merge_policy",
        matches!(p.str("merge_policy"), "prefix" | "none"),
        "prefix or none",
    )?;
    p.check(
        "profile",
        p.str("profile").parse::<DeviceProfile>().is_ok(),
        "nvme, sata-ssd or hdd",
    )?;
    Ok(())
}

/// The datasets of a run: the synthetic ones named in `datasets`, then every `--data` file.
pub fn load_datasets(ctx: &RunContext) -> anyhow::Result<(Vec<Trajectories>, Vec<String>)> {
    let p = ctx.params;
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let records = p.usize("records");
    for name in p.list("datasets") {
        let n = if records == 0 {
            paper_records(name).expect("validated dataset name")
        } else {
            records
        };
        ctx.progress.message(format!("generating {name} ({n} records)"));
        let t =
            lsmlab_workloads::generate(name, n, ctx.seed).with_context(|| format!("generating {name}"))?;
        out.push(t);
    }
    for spec in ctx.data {
        let limit = (records > 0).then_some(records);
        let (t, report) = crate::data::load_trajectories(spec, limit)?;
        notes.extend(report);
        out.push(t);
    }
    Ok((out, notes))
}

/// The index configuration `p` describes for `strategy` on `data`.
pub fn spatial_config(p: &Params, strategy: Strategy, data: &Trajectories) -> SpatialConfig {
    let mut cfg = SpatialConfig::new(strategy, data.extent, p.u64("memory_pages"));
    cfg.merge_policy = match p.str("merge_policy") {
        "none" => MergePolicyConfig::None,
        _ => MergePolicyConfig::Prefix {
            max_mergeable_pages: p.u64("max_mergeable_pages"),
            max_tolerance_components: p.usize("tolerance"),
        },
    };
    cfg.buffered_threshold = p.int("buffered_threshold") as u32;
    cfg.vacuum_threshold = p.int("vacuum_threshold") as u32;
    cfg.eager_primary_lookup = p.bool("eager_primary_lookup");
    cfg.validation_merge_repair = p.bool("validation_merge_repair");
    cfg.key_index_budget_pages = p.u64("memory_pages");
    cfg.bloom_fp = Some(p.float("bloom_fp"));
    cfg
}

/// A fresh device + cache + index for one cell of a run.
pub struct Testbed {
    pub device: Arc<dyn Device>,
    pub cache: Arc<BufferCache>,
    pub index: LsmRTree,
    pub profile: DeviceProfile,
}

impl Testbed {
    pub fn new(p: &Params, strategy: Strategy, data: &Trajectories) -> anyhow::Result<Testbed> {
        Self::with_config(p, spatial_config(p, strategy, data))
    }

    /// A testbed for an index configured by the caller (the device and cache still come from `p`).
    pub fn with_config(p: &Params, cfg: SpatialConfig) -> anyhow::Result<Testbed> {
        let page_size = p.usize("page_size");
        let device: Arc<dyn Device> = match p.str("device") {
            "file" => {
                let dir = match p.str("file_dir") {
                    "" => std::env::temp_dir(),
                    d => d.into(),
                };
                Arc::new(
                    FileDevice::temporary(&dir, page_size)
                        .with_context(|| format!("creating a file device in {}", dir.display()))?,
                )
            }
            _ => Arc::new(MemDevice::new(page_size)),
        };
        let cache = Arc::new(BufferCache::new(device.clone(), p.usize("cache_pages")));
        let index = LsmRTree::new(cfg, cache.clone())?;
        let profile = p
            .str("profile")
            .parse::<DeviceProfile>()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Testbed {
            device,
            cache,
            index,
            profile,
        })
    }

    pub fn io(&self) -> IoStats {
        self.device.stats()
    }
}

/// What ingesting a stream cost.
#[derive(Clone, Copy, Debug)]
pub struct IngestCost {
    pub ops: u64,
    pub total: Duration,
    pub flush: Duration,
    pub merge: Duration,
    pub io: IoStats,
}

impl IngestCost {
    /// Time outside flushes and merges.
    pub fn update(&self) -> Duration {
        self.total.saturating_sub(self.flush + self.merge)
    }
}

/// Applies one operation of the stream.
pub fn apply(index: &mut LsmRTree, op: &SpatialOp) -> lsmlab_engine::Result<()> {
    match *op {
        SpatialOp::Insert { oid, at } => index.insert(oid, at),
        SpatialOp::Update { oid, from, to } => index.update(oid, Some(from), to),
        SpatialOp::Delete { oid, from } => index.delete(oid, Some(from)),
    }
}

/// Ingests `ops` synchronously (flushes and merges happen inside the stream, as the authors ran
/// them) and splits the wall time into update, flush and merge time.
pub fn ingest(bed: &mut Testbed, ops: &[SpatialOp], ctx: &RunContext) -> anyhow::Result<IngestCost> {
    let io_before = bed.io();
    let before = bed.index.stats();
    let start = Instant::now();
    for (i, op) in ops.iter().enumerate() {
        apply(&mut bed.index, op).with_context(|| format!("operation {i} ({op:?})"))?;
        if i % 65_536 == 0 {
            ctx.progress.tick(|| {
                format!(
                    "{} / {} operations",
                    crate::progress::thousands(i as u64),
                    ops.len()
                )
            });
        }
    }
    let total = start.elapsed();
    let after = bed.index.stats();
    Ok(IngestCost {
        ops: ops.len() as u64,
        total,
        flush: after.flush_time() - before.flush_time(),
        merge: after.merge_time() - before.merge_time(),
        io: bed.io().since(&io_before),
    })
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
