//! Runs a key-value store through a workload's op stream on the virtual clock: the store sized by
//! [`KvSetup`], the warm-up phase (which may log every access for the Leaper model and calibrates
//! the interval length) and the measured phase (recorded per interval by a [`RunRecorder`]).

use std::sync::Arc;

use anyhow::Context;
use lsmlab_engine::cache::{BufferCache, CacheStats};
use lsmlab_engine::kvstore::{BLOCK_HEADER_SIZE as HEADER_SIZE, SLOT_SIZE};
use lsmlab_engine::kvstore::{Background, BackgroundOp, KvConfig, KvStore, WarmUpPolicy};
use lsmlab_engine::lsm::LeveledParams;
use lsmlab_engine::storage::{Device, FileDevice, FileDeviceOptions, MemDevice};

use crate::config::DeviceKind;
use crate::progress::{thousands, Progress};
use lsmlab_workloads::kv::{KvOp, KvStream, KvWorkload, TimedOp};

use super::clock::Queue;
use super::{CompactionTiming, CostModel, KvSetup, RunRecorder, RunTimeline, VirtualClock, Workload};
use lsmlab_engine::kvstore::KvStats;

/// The store's sizes for one cache / data ratio, in pages and bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Layout {
    /// Data blocks of the bulk-loaded records (what the ratios are fractions of).
    pub data_blocks: u64,
    pub cache_pages: usize,
    pub memtable_bytes: u64,
    pub leveled: LeveledParams,
}

#[cfg(test)]
impl Layout {
    /// The initial data's bytes on the device (data blocks x page size).
    pub(crate) fn data_bytes(&self, page_size: usize) -> u64 {
        self.data_blocks * page_size as u64
    }
}

impl KvSetup {
    /// Entries one data block holds (every value has `value_bytes`: a block is a header and slots
    /// of 16 bytes plus the value, as the store's run format packs them).
    pub fn entries_per_block(&self) -> u64 {
        ((self.page_size - HEADER_SIZE) / (SLOT_SIZE + self.value_bytes)).max(1) as u64
    }

    /// The sizes for a cache of `cache_ratio` x the initial data: the data blocks the bulk load
    /// writes, the cache and memtable budgets as fractions of them, and the levels in memtables.
    pub(crate) fn layout(&self, cache_ratio: f64) -> Layout {
        let data_blocks = self.records.div_ceil(self.entries_per_block());
        let data_bytes = data_blocks * self.page_size as u64;
        let memtable_bytes = ((data_bytes as f64 * self.memtable_ratio).round() as u64).max(1);
        let memtable_pages = (memtable_bytes as f64 / self.page_size as f64).max(1.0);
        Layout {
            data_blocks,
            cache_pages: ((data_blocks as f64 * cache_ratio).round() as usize).max(1),
            memtable_bytes,
            leveled: LeveledParams {
                l0_trigger: self.l0_trigger,
                base_level_pages: ((memtable_pages * self.base_level_memtables).round() as u64).max(1),
                size_ratio: self.size_ratio,
                target_run_pages: ((memtable_pages * self.target_run_memtables).round() as u64).max(1),
                max_levels: if self.max_levels > 0 {
                    self.max_levels
                } else {
                    self.levels_for(data_blocks, memtable_pages * self.base_level_memtables)
                },
            },
        }
    }

    /// Levels (level 0 included) whose last level holds `data_pages` as RocksDB's dynamic level
    /// sizing lays them out: the bulk load fills the last level, and the level above it may grow
    /// to a `size_ratio`-th of it, down from level 1's `base_pages`. With the ratios kept, level 1
    /// holds 4 memtables = 40% of the data, the last level (2) the data: 3 levels at every scale.
    /// (Bulk-loading into a deeper last level would leave the hot keys' newer versions in the
    /// levels between, with the old ones below, for as long as the run lasts.)
    pub fn levels_for(&self, data_pages: u64, base_pages: f64) -> usize {
        // L0, L1 (the base) and the last level at least: level 0 never compacts into the whole data.
        let mut above_last = base_pages.max(1.0);
        let mut levels = 3;
        while above_last * (self.size_ratio as f64) < data_pages as f64 && levels < 16 {
            above_last *= self.size_ratio as f64;
            levels += 1;
        }
        levels
    }

    /// The workload's op stream spec at this setup's record count and value size; `day_ops` sets
    /// the period of its time of day (and of e-commerce's hot-set shift).
    pub(crate) fn workload_spec(&self, workload: Workload, day_ops: u64) -> anyhow::Result<KvWorkload> {
        let spec = KvWorkload::parse(workload.as_str())?
            .with_records(self.records)?
            .with_value_bytes(self.value_bytes)
            .with_day_ops(day_ops.max(1))?
            .with_keys(self.key_dist)?;
        Ok(spec)
    }
}

/// A store on a fresh device (`setup.device`: counted memory, or an unlinked page file) with a
/// cache of `layout.cache_pages`, bulk-loaded with `spec`'s initial records.
pub(crate) fn open_store(
    setup: &KvSetup,
    layout: &Layout,
    spec: &KvWorkload,
    policy: Box<dyn WarmUpPolicy>,
) -> anyhow::Result<KvStore> {
    let device: Arc<dyn Device> = match setup.device {
        DeviceKind::Mem => Arc::new(MemDevice::new(setup.page_size)),
        DeviceKind::File => {
            let dir = setup.file_dir();
            // Buffered: the clock prices a miss by the profile, so the file is a page store only.
            let options = FileDeviceOptions { direct_io: false };
            Arc::new(
                FileDevice::temporary_with(&dir, setup.page_size, options)
                    .with_context(|| format!("creating the store's page file in {}", dir.display()))?,
            )
        }
    };
    let cache = Arc::new(BufferCache::new(device, layout.cache_pages));
    let config = KvConfig {
        memtable_bytes: layout.memtable_bytes,
        leveled: layout.leveled,
        bloom_fp: Some(setup.bloom_fp),
        // Timed: the store's merges last the windows the clock draws (CostModel::background_s).
        background_bytes_per_s: (setup.compactions == CompactionTiming::Timed)
            .then_some(setup.compaction_mb_s * 1e6),
    };
    let mut store = KvStore::new(cache, config, policy).context("opening the key-value store")?;
    store
        .bulk_load(spec.initial_records())
        .context("bulk-loading the initial records")?;
    Ok(store)
}

/// Applies one operation of the stream (writes store the stream's value of their version).
pub fn apply(store: &mut KvStore, op: &TimedOp, spec: &KvWorkload) -> anyhow::Result<()> {
    match op.op {
        KvOp::Get(k) => {
            store.get(k)?;
        }
        // The answer is not used: the scan's reads through the cache are what the clock prices.
        KvOp::Scan { lo, hi } => {
            store.scan_blocks(lo, hi)?;
        }
        KvOp::Update(k) | KvOp::Insert(k) => {
            let version = op.write_version().unwrap_or(0);
            store.put(k, &spec.value_for(k, version))?;
        }
    }
    Ok(())
}

/// One operation as the clock sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Step {
    pub start_s: f64,
    pub latency_us: f64,
    pub hits: u64,
    pub misses: u64,
    pub prefetch_hits: u64,
    /// Filter and index lookups of the operation that hit / missed (accounting only, see
    /// [`lsmlab_engine::kvstore::MetaLookups`]).
    pub meta_hits: u64,
    pub meta_misses: u64,
    /// A point or range read (not a write).
    pub read: bool,
    /// Cached blocks of retired runs invalidated, output blocks a policy had the cache admit, and
    /// pages a policy evicted itself, during the step: a flush's or an untimed compaction's in
    /// the triggering write, and a timed compaction's as the clock reaches them.
    pub invalidated: u64,
    pub admitted: u64,
    pub policy_evictions: u64,
}

/// Where a driver's operations come from: the workload's generated stream, or a replayed trace
/// (`lsmlab run --trace`, [`crate::trace::KvTrace`]) read line by line.
pub(crate) enum OpSource {
    Generated(KvStream),
    Replayed(crate::trace::KvTraceReader),
}

impl OpSource {
    /// The next operation; the end of a replayed trace is an error naming the file.
    pub fn next_op(&mut self) -> anyhow::Result<TimedOp> {
        match self {
            OpSource::Generated(s) => s.next().context("the op stream ended"),
            OpSource::Replayed(r) => r.next_op()?.ok_or_else(|| {
                let t = r.trace();
                anyhow::anyhow!(
                    "{}: the run needs more than the trace's {} operations; write a longer one with \
                     `lsmlab gen leaper-{} --ops N` (with the run's scale, seed and --set)",
                    t.path.display(),
                    t.ops,
                    t.workload
                )
            }),
        }
    }
}

/// A store driven by a stream on the virtual clock.
pub(crate) struct Driver<'a> {
    pub store: KvStore,
    pub stream: OpSource,
    pub spec: &'a KvWorkload,
    pub cost: CostModel,
    pub clock: VirtualClock,
    /// Whether the collector's cost is charged (the Leaper policy).
    pub collector: bool,
    last: CacheStats,
    /// Background operations since the last [`Driver::take_background`].
    background: Vec<(f64, BackgroundOp)>,
    last_kv: KvStats,
    /// The queueing clock when the setup has more than one client (then `clock` reads the next
    /// operation's start).
    queue: Option<Queue>,
}

impl<'a> Driver<'a> {
    pub fn new(
        store: KvStore,
        spec: &'a KvWorkload,
        seed: u64,
        cost: CostModel,
        collector: bool,
    ) -> anyhow::Result<Self> {
        let last = store.cache().stats();
        let last_kv = store.stats();
        Ok(Driver {
            store,
            stream: OpSource::Generated(spec.stream(seed)?),
            spec,
            cost,
            clock: VirtualClock::new(),
            collector,
            last,
            background: Vec::new(),
            last_kv,
            queue: None,
        })
    }

    /// Replays `trace` instead of the generated stream (none: the generated stream stays).
    pub fn replaying(mut self, trace: Option<&crate::trace::KvTrace>) -> anyhow::Result<Self> {
        if let Some(t) = trace {
            self.stream = OpSource::Replayed(t.reader()?);
        }
        Ok(self)
    }

    /// Drives the operations with `queue` (the multi-client clock) instead of one client.
    pub fn with_queue(mut self, queue: Option<Queue>) -> Self {
        if let Some(q) = &queue {
            self.clock = VirtualClock::at(q.next_start_s());
        }
        self.queue = queue;
        self
    }

    /// Runs the next operation: the store is told the clock's time, the operation's block reads
    /// price its latency, and the clock advances by it.
    pub fn step(&mut self, on_op: &mut dyn FnMut(f64, &TimedOp)) -> anyhow::Result<Step> {
        let op = self.stream.next_op()?;
        let start_s = self.clock.now_s();
        on_op(start_s, &op);
        self.store
            .set_now(start_s)
            .with_context(|| format!("advancing the store's merges to operation {}", op.seq))?;
        apply(&mut self.store, &op, self.spec)
            .with_context(|| format!("operation {} ({:?})", op.seq, op.op))?;
        let now = self.store.cache().stats();
        let d = now.since(&self.last);
        self.last = now;
        let kv = self.store.stats();
        let (meta, last_meta) = (kv.meta(), self.last_kv.meta());
        let (invalidated, admitted, policy_evictions) = (
            kv.invalidations - self.last_kv.invalidations,
            kv.admitted - self.last_kv.admitted,
            kv.policy_evictions - self.last_kv.policy_evictions,
        );
        self.last_kv = kv;
        let (latency_us, end) = match &mut self.queue {
            None => {
                let latency_us = self.cost.op_us(d.hits, d.misses, self.collector);
                (latency_us, self.clock.advance_us(latency_us))
            }
            Some(q) => {
                let (start, end) = q.serve(
                    self.cost.cpu_us(d.hits, self.collector),
                    d.misses,
                    self.cost.read_us,
                );
                debug_assert!((start - start_s).abs() < 1e-12);
                self.clock = VirtualClock::at(q.next_start_s());
                ((end - start) * 1e6, end)
            }
        };
        for b in self.store.take_background() {
            self.background.push((end, b));
        }
        Ok(Step {
            start_s,
            latency_us,
            hits: d.hits,
            misses: d.misses,
            prefetch_hits: d.prefetch_hits,
            meta_hits: meta.hits() - last_meta.hits(),
            meta_misses: meta.misses() - last_meta.misses(),
            read: !op.op.is_write(),
            invalidated,
            admitted,
            policy_evictions,
        })
    }

    /// The background operations finished since the last call, each with the virtual time it began
    /// (the end of the write that triggered it).
    pub fn take_background(&mut self) -> Vec<(f64, BackgroundOp)> {
        std::mem::take(&mut self.background)
    }
}

/// Is this a background operation that rewrote blocks (a flush, or a compaction that is no trivial
/// move)?
pub fn rewrites(op: &BackgroundOp) -> bool {
    op.kind == Background::Flush || !op.trivial_move
}

/// What a warm-up phase measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Warmup {
    pub ops: u64,
    pub writes: u64,
    /// Virtual seconds of the whole phase and of its second half (the cache is cold at its start).
    pub secs: f64,
    pub second_half_ops: u64,
    pub second_half_secs: f64,
    /// Flushes and compactions that rewrote blocks.
    pub background_ops: u64,
    /// Each compaction's T1 (virtual seconds) and input blocks, for the Leaper policy's alpha.
    pub compactions: Vec<(f64, u64)>,
}

impl Warmup {
    /// Mean latency of the second half, in seconds per operation.
    pub fn secs_per_op(&self) -> f64 {
        if self.second_half_ops > 0 {
            self.second_half_secs / self.second_half_ops as f64
        } else if self.ops > 0 {
            self.secs / self.ops as f64
        } else {
            0.0
        }
    }
}

/// Operations between two looks at the progress line (which prints at most every few seconds).
const PROGRESS_EVERY: u64 = 1 << 14;

/// Runs `ops` operations (the warm-up), calling `on_op` with each one's start time.
pub(crate) fn warm_up(
    driver: &mut Driver,
    ops: u64,
    progress: &Progress,
    on_op: &mut dyn FnMut(f64, &TimedOp),
) -> anyhow::Result<Warmup> {
    let mut w = Warmup::default();
    let half = ops / 2;
    let mut half_start = 0.0;
    for i in 0..ops {
        if i == half {
            half_start = driver.clock.now_s();
        }
        if i.is_multiple_of(PROGRESS_EVERY) {
            progress.tick(|| format!("warm-up, {} / {} operations", thousands(i), thousands(ops)));
        }
        warm_step(driver, &mut w, on_op)?;
    }
    w.secs = driver.clock.now_s();
    w.second_half_ops = ops - half;
    w.second_half_secs = w.secs - half_start;
    Ok(w)
}

/// Continues a warm-up until the clock reads `until_s` (the mean latency of `w` stays that of its
/// first part's second half).
pub(crate) fn extend_warm_up(
    driver: &mut Driver,
    w: &mut Warmup,
    until_s: f64,
    progress: &Progress,
    on_op: &mut dyn FnMut(f64, &TimedOp),
) -> anyhow::Result<()> {
    while driver.clock.now_s() < until_s {
        if w.ops.is_multiple_of(PROGRESS_EVERY) {
            progress.tick(|| {
                format!(
                    "warm-up extended to cover the training slots, {:.1} / {until_s:.1} virtual s",
                    driver.clock.now_s()
                )
            });
        }
        warm_step(driver, w, on_op)?;
    }
    w.secs = driver.clock.now_s();
    Ok(())
}

fn warm_step(
    driver: &mut Driver,
    w: &mut Warmup,
    on_op: &mut dyn FnMut(f64, &TimedOp),
) -> anyhow::Result<()> {
    let mut write = false;
    driver.step(&mut |t, op| {
        write = op.op.is_write();
        on_op(t, op);
    })?;
    w.ops += 1;
    w.writes += u64::from(write);
    for (_, b) in driver.take_background() {
        if rewrites(&b) {
            w.background_ops += 1;
            if b.kind == Background::Compaction {
                w.compactions.push((
                    driver.cost.background_s(b.pages_read, b.pages_written),
                    b.input_blocks,
                ));
            }
        }
    }
    Ok(())
}

/// What a measured phase counted besides its timeline.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Measured {
    pub flushes: u64,
    pub compactions: u64,
    pub moves: u64,
    pub invalidations: u64,
    pub admitted: u64,
    pub policy_evictions: u64,
    /// Summed over the non-trivial compactions: their input data blocks, and the input blocks
    /// the cache held when each began (what the compaction retires from the cache, before the
    /// policy acts).
    pub compaction_input_blocks: u64,
    pub compaction_cached_inputs: u64,
    pub wall_s: f64,
}

impl Measured {
    /// Flushes and compactions that rewrote blocks.
    pub fn background_ops(&self) -> u64 {
        self.flushes + self.compactions
    }

    /// Input data blocks per compaction (0 without one).
    pub fn blocks_per_compaction(&self) -> f64 {
        self.compaction_input_blocks as f64 / self.compactions.max(1) as f64
    }

    /// Cached input blocks per compaction when it began (0 without one).
    pub fn cached_inputs_per_compaction(&self) -> f64 {
        self.compaction_cached_inputs as f64 / self.compactions.max(1) as f64
    }
}

/// Runs operations until `run_s` virtual seconds have passed since the phase began, recording each
/// into a timeline of `interval_s` intervals with windows of T1 + `t2_s`.
pub(crate) fn measure(
    driver: &mut Driver,
    run_s: f64,
    interval_s: f64,
    t2_s: f64,
    progress: &Progress,
) -> anyhow::Result<(RunTimeline, Measured)> {
    let t0 = driver.clock.now_s();
    let wall = std::time::Instant::now();
    let mut recorder = RunRecorder::new(interval_s, t2_s);
    let mut m = Measured::default();
    // Timed merges invalidate and admit as the clock goes, not at their start: counted in the
    // interval where it happens. Untimed, the counts ride with the operation's window.
    let timed = driver.store.config().background_bytes_per_s.is_some();
    let mut steps = 0u64;
    while driver.clock.now_s() - t0 < run_s {
        if steps.is_multiple_of(PROGRESS_EVERY) {
            progress.tick(|| format!("measured run, {:.1} / {run_s:.1} virtual s", driver.clock.now_s() - t0));
        }
        steps += 1;
        let s = driver.step(&mut |_, _| {})?;
        recorder.op(s.start_s - t0, s.latency_us, s.hits, s.misses, s.prefetch_hits);
        recorder.lookups(s.meta_hits, s.meta_misses, s.read);
        m.invalidations += s.invalidated;
        m.admitted += s.admitted;
        m.policy_evictions += s.policy_evictions;
        if timed {
            recorder.counts(s.invalidated, s.admitted);
        }
        for (at, b) in driver.take_background() {
            if !rewrites(&b) {
                m.moves += 1;
                continue;
            }
            match b.kind {
                Background::Flush => m.flushes += 1,
                Background::Compaction => {
                    m.compactions += 1;
                    m.compaction_input_blocks += b.input_blocks;
                    m.compaction_cached_inputs += b.cached_inputs;
                }
            }
            let t1 = driver.cost.background_s(b.pages_read, b.pages_written);
            let (invalidated, admitted) = if timed { (0, 0) } else { (b.invalidated, b.admitted) };
            recorder.background(b.kind, at - t0, t1, invalidated, admitted);
        }
    }
    m.wall_s = wall.elapsed().as_secs_f64();
    Ok((recorder.finish(run_s), m))
}

/// The interval length that makes a run of `intervals` intervals hold about `background_ops`
/// flushes and compactions, at the rate and speed the warm-up's second half showed. Without a
/// background operation in the warm-up, the rate is estimated from the memtable: a flush per
/// `memtable_bytes` of written entries.
pub(crate) fn calibrate_interval_s(
    warmup: &Warmup,
    background_ops: u64,
    intervals: u64,
    memtable_bytes: u64,
    entry_bytes: u64,
) -> f64 {
    let per_op = if warmup.background_ops > 0 {
        warmup.background_ops as f64 / warmup.ops.max(1) as f64
    } else {
        let write_share = warmup.writes as f64 / warmup.ops.max(1) as f64;
        write_share.max(1e-6) * entry_bytes as f64 / memtable_bytes.max(1) as f64
    };
    let run_ops = background_ops as f64 / per_op;
    run_ops * warmup.secs_per_op() / intervals.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Scale;
    use lsmlab_engine::kvstore::WarmUpKind;

    fn tiny(records: u64) -> KvSetup {
        KvSetup {
            records,
            ..KvSetup::defaults(Scale::Tiny)
        }
    }

    #[test]
    fn the_layout_predicts_the_bulk_loads_blocks_and_keeps_the_ratios() {
        let setup = tiny(5_000);
        assert_eq!(setup.entries_per_block(), (4096 - 16) / 216);
        let layout = setup.layout(0.3);
        let spec = setup.workload_spec(Workload::Synthetic, 1000).unwrap();
        let store = open_store(&setup, &layout, &spec, WarmUpKind::Lru.baseline().unwrap()).unwrap();
        assert_eq!(store.data_blocks(), layout.data_blocks);
        assert_eq!(layout.data_blocks, 5_000u64.div_ceil(18));
        let cache = layout.cache_pages as f64 / layout.data_blocks as f64;
        assert!((cache - 0.3).abs() < 0.01, "{cache}");
        let mem = layout.memtable_bytes as f64 / store.data_bytes() as f64;
        assert!((mem - 0.1).abs() < 1e-3, "{mem}");
        let base = layout.leveled.base_level_pages as f64 / layout.leveled.target_run_pages as f64;
        assert!((base - 4.0).abs() < 0.1, "level 1 holds 4 memtables: {base}");
        assert_eq!(
            layout.leveled.max_levels, 3,
            "L0, L1 (40% of the data), L2 (the data)"
        );
        assert_eq!(setup.levels_for(1000, 4.0), 5, "L1 4, L2 40, L3 400, L4 the data");
        assert_eq!(setup.levels_for(40, 4.0), 3);
    }

    #[test]
    fn a_warm_up_counts_its_background_operations_and_calibrates_the_interval() {
        let setup = tiny(3_000);
        let layout = setup.layout(0.3);
        let spec = setup.workload_spec(Workload::Messaging, 1000).unwrap();
        let store = open_store(&setup, &layout, &spec, WarmUpKind::Lru.baseline().unwrap()).unwrap();
        let mut d = Driver::new(store, &spec, 7, setup.cost_model(), false).unwrap();
        let mut seen = 0u64;
        let w = warm_up(&mut d, 4_000, &Progress::silent(), &mut |_, _| seen += 1).unwrap();
        assert_eq!((w.ops, seen), (4_000, 4_000));
        // messaging writes 60% of its operations: 2,400 writes of 216 B against a memtable of
        // 0.1 x 167 blocks x 4 KiB = 68 KB flush about 7 times
        let flushes = d.store.stats().flushes;
        assert!(flushes >= 5, "{flushes}");
        assert!(w.background_ops >= flushes, "{w:?}");
        assert!(w.secs > w.second_half_secs && w.second_half_secs > 0.0);
        let interval = calibrate_interval_s(&w, 10, 200, layout.memtable_bytes, 216);
        // a run of 200 intervals then holds ~10 background operations at the warm-up's rate
        let run_ops = 200.0 * interval / w.secs_per_op();
        let expected = run_ops * w.background_ops as f64 / w.ops as f64;
        assert!((expected - 10.0).abs() < 1e-6, "{expected}");
    }

    #[test]
    fn without_background_operations_the_memtable_sets_the_rate() {
        let w = Warmup {
            ops: 1000,
            writes: 250,
            secs: 1.0,
            second_half_ops: 500,
            second_half_secs: 0.4,
            ..Warmup::default()
        };
        // a flush per 10,000 B / 100 B = 100 writes = 400 ops; 10 flushes = 4,000 ops x 0.8 ms
        let s = calibrate_interval_s(&w, 10, 200, 10_000, 100);
        assert!((s - 4000.0 * 0.0008 / 200.0).abs() < 1e-12, "{s}");
    }

    #[test]
    fn identical_streams_give_identical_counted_runs() {
        let setup = tiny(2_000);
        let layout = setup.layout(0.3);
        let spec = setup.workload_spec(Workload::Synthetic, 1000).unwrap();
        let run = || {
            let store = open_store(
                &setup,
                &layout,
                &spec,
                WarmUpKind::IncrementalWarmup.baseline().unwrap(),
            )
            .unwrap();
            let mut d = Driver::new(store, &spec, 3, setup.cost_model(), false).unwrap();
            warm_up(&mut d, 2_000, &Progress::silent(), &mut |_, _| {}).unwrap();
            let (tl, m) = measure(&mut d, 0.05, 0.005, 0.01, &Progress::silent()).unwrap();
            (
                tl.all.ops,
                tl.all.hits,
                tl.all.misses,
                m.flushes,
                m.compactions,
                m.invalidations,
                tl.intervals.len(),
            )
        };
        let a = run();
        assert_eq!(a, run());
        assert_eq!(a.6, 10, "0.05 s in intervals of 5 ms");
        assert!(a.0 > 0 && a.2 > 0, "{a:?}");
    }
}
