//! [`KvStore`]: a memtable over leveled SSTable-like runs, read through the shared block cache,
//! with a cache warm-up policy told about every access and every flush and compaction.

use super::sst::{entry_size, for_each_run, max_value_len, KvValue, MetaLookups, SstFormat, SstRun};
use super::timed::{Deferred, Gate, Pending};
use super::warmup::{Access, Background, CacheWarmer, RunBlocks, WarmCounts, WarmUpPolicy};
use crate::cache::{BufferCache, CacheStats};
use crate::lsm::merge::{EntryStream, KWayMerge};
use crate::lsm::{
    BlockSink, Choice, KeyRange, LeveledParams, LeveledStrategy, MergePlan, Merger, RunId, RunStore, Slot,
    Version,
};
use crate::storage::IoStats;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The store's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct KvConfig {
    /// The memtable is flushed once its entries' encoded size (16 bytes per entry plus the value,
    /// as in a data block) reaches this many bytes.
    pub memtable_bytes: u64,
    /// Leveled compaction (sizes in pages; a run's size counts its data blocks and index pages,
    /// and compaction outputs are cut at `target_run_pages` data blocks).
    pub leveled: LeveledParams,
    /// The Bloom filters' false-positive rate (none if `None`); RocksDB's common setting, 10 bits
    /// per key, is about 0.01.
    pub bloom_fp: Option<f64>,
    /// `None` (the default): a flush or compaction runs at once, inside the write that triggers
    /// it. `Some(b)`: a compaction that rewrites runs lasts T1 = (pages read + pages written) x
    /// page size / `b` seconds of the store's virtual clock ([`KvStore::set_now`]), as X-Engine's
    /// background compactions do: its inputs answer reads and its outputs are installed only at
    /// the end, and the warm-up policy is told of each output block as the compaction reaches it
    /// (see the `timed` module). Flushes and trivial moves still run at once.
    #[serde(default)]
    pub background_bytes_per_s: Option<f64>,
}

impl Default for KvConfig {
    fn default() -> Self {
        KvConfig {
            memtable_bytes: 1 << 20,
            leveled: LeveledParams::default(),
            bloom_fp: Some(0.01),
            background_bytes_per_s: None,
        }
    }
}

/// One finished flush or compaction, with what it did to the device and the cache.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackgroundOp {
    /// A flush or a compaction.
    pub kind: Background,
    /// A run moved down a level without being rewritten (no reads, writes or invalidations; the
    /// policy is not called).
    pub trivial_move: bool,
    /// Runs read and retired (0 for a flush).
    pub input_runs: usize,
    /// Data blocks of the input runs (0 for a flush).
    pub input_blocks: u64,
    /// Input data blocks the cache held when the operation began, before the policy acted: the
    /// cached blocks the operation retires, whatever the policy then does about them (0 for a
    /// flush and a trivial move).
    pub cached_inputs: u64,
    /// Data blocks written.
    pub output_blocks: u64,
    /// Device page reads and writes during the operation (inputs' data blocks; outputs' data
    /// blocks and index pages).
    pub pages_read: u64,
    /// Device page writes during the operation.
    pub pages_written: u64,
    /// Cached blocks of retired runs dropped when the inputs were freed (the cache's invalidation
    /// count over the operation).
    pub invalidated: u64,
    /// Output data blocks the policy had the cache admit (without device reads).
    pub admitted: u64,
    /// Pages the policy itself evicted from the cache, in `begin` and `admit` (evictions that
    /// make room for admitted blocks are the cache's and not counted here).
    pub policy_evictions: u64,
    /// The level the outputs were installed at.
    pub output_level: usize,
}

/// Cumulative counters of a [`KvStore`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvStats {
    /// Point lookups.
    pub gets: u64,
    /// Range scans.
    pub scans: u64,
    /// Writes of a value.
    pub puts: u64,
    /// Deletes (tombstone writes).
    pub deletes: u64,
    /// Flushes completed.
    pub flushes: u64,
    /// Compactions that rewrote runs (merges).
    pub compactions: u64,
    /// Trivial moves.
    pub moves: u64,
    /// Flushes or compactions that failed (and changed nothing).
    pub failed: u64,
    /// Data blocks written by flushes.
    pub flushed_blocks: u64,
    /// Data blocks read by compactions that rewrote runs.
    pub compaction_input_blocks: u64,
    /// Data blocks written by compactions that rewrote runs.
    pub compaction_output_blocks: u64,
    /// Device pages read and written by flushes and compactions.
    pub background_pages_read: u64,
    /// Device pages written by flushes and compactions.
    pub background_pages_written: u64,
    /// Cached blocks of retired runs dropped from the cache.
    pub invalidations: u64,
    /// Output blocks the warm-up policy had the cache admit.
    pub admitted: u64,
    /// Pages the warm-up policy itself evicted (see [`BackgroundOp::policy_evictions`]).
    pub policy_evictions: u64,
    /// Filter-block and index-page lookups of gets and scans, as RocksDB counts them with
    /// `cache_index_and_filter_blocks = true` ([`MetaLookups`]: a run's filter block or index
    /// page misses the first time a lookup needs it, then hits). Accounting only: the store keeps
    /// filters and indexes in memory and no read is made or priced for them.
    pub filter_hits: u64,
    /// Filter-block lookups that missed.
    pub filter_misses: u64,
    /// Index-page lookups that hit.
    pub index_hits: u64,
    /// Index-page lookups that missed.
    pub index_misses: u64,
}

impl KvStats {
    /// Filter and index lookups (see the fields' documentation).
    pub fn meta(&self) -> MetaLookups {
        MetaLookups {
            filter_hits: self.filter_hits,
            filter_misses: self.filter_misses,
            index_hits: self.index_hits,
            index_misses: self.index_misses,
        }
    }

    fn add_meta(&mut self, m: &MetaLookups) {
        self.filter_hits += m.filter_hits;
        self.filter_misses += m.filter_misses;
        self.index_hits += m.index_hits;
        self.index_misses += m.index_misses;
    }
}

/// The cache's and its device's counters at the start of a background operation.
struct Counters {
    cache: CacheStats,
    io: IoStats,
}

impl Counters {
    fn of(cache: &BufferCache) -> Self {
        Counters {
            cache: cache.stats(),
            io: cache.device().stats(),
        }
    }

    /// What the operation added to both since [`Counters::of`].
    fn since(&self, cache: &BufferCache) -> (CacheStats, IoStats) {
        (
            cache.stats().since(&self.cache),
            cache.device().stats().since(&self.io),
        )
    }
}

/// The store's merge: a k-way merge of the inputs read straight from the device (newest wins),
/// tombstones dropped when the merge reaches the oldest data, outputs cut every
/// `target_run_pages` data blocks, each output block told to the executor's observers (the cache
/// warmer) as it is written.
struct SstMerger;

impl Merger<SstFormat> for SstMerger {
    fn merge(
        &mut self,
        format: &SstFormat,
        inputs: &[&SstRun],
        plan: &MergePlan,
        outputs: &mut Vec<SstRun>,
        written: &mut BlockSink<'_, u64>,
    ) -> Result<()> {
        let streams = inputs
            .iter()
            .map(|r| crate::lsm::RunFormat::scan(format, r))
            .collect::<Result<Vec<_>>>()?;
        // Without a target size there is one output run (see `for_each_run`).
        let per_run = plan.target_run_pages.map(|t| t as usize);
        let merged =
            KWayMerge::new(streams)?.filter(|e| !(plan.bottommost && matches!(e, Ok((_, Slot::Deleted)))));
        for_each_run(merged, format.page_size(), per_run, &mut |part| {
            outputs.push(format.build_with(part, written)?);
            Ok(())
        })
    }
}

/// A block-based key-value LSM store: u64 keys, byte-string values up to a data block, deletes as
/// tombstones; a memtable over leveled runs of [`SstRun`]s whose data blocks live in the shared
/// [`BufferCache`] by page id. Flushes and compactions rewrite blocks, so their cached copies are
/// invalidated when the inputs are freed; the [`WarmUpPolicy`] decides what the cache does about
/// it (Leaper, PVLDB 13(11) 2020, §2.2), driven by a [`CacheWarmer`] subscribed to the runs'
/// lifecycle like any other observer.
///
/// Foreground reads go through the cache (a point get reads at most one data block per run it
/// consults); compaction inputs are read straight from the device. Writes go to the memtable; a
/// write that fills it also flushes and compacts. An `Err` from [`Self::put`] or [`Self::delete`]
/// reports that this maintenance failed: the write itself is kept, the failed flush or compaction
/// changed nothing (a failed flush keeps the memtable), and it is tried again at the next flush.
pub struct KvStore {
    cache: Arc<BufferCache>,
    config: KvConfig,
    warmer: Arc<CacheWarmer>,
    /// Between the executor and the warmer: holds a timed merge's lifecycle for `pending`.
    gate: Arc<Gate>,
    /// Timed merges in progress ([`KvConfig::background_bytes_per_s`]).
    pending: Option<Pending>,
    memtable: BTreeMap<u64, KvValue>,
    memtable_bytes: u64,
    runs: RunStore<SstFormat>,
    now: f64,
    background: Vec<BackgroundOp>,
    stats: KvStats,
}

impl KvStore {
    /// An empty store whose data blocks are pages of `cache`'s device. Fails on a bad config (a
    /// zero memtable budget, bad leveled parameters, a Bloom rate outside `[0, 1)`, a page too
    /// small for a data block).
    pub fn new(cache: Arc<BufferCache>, config: KvConfig, policy: Box<dyn WarmUpPolicy>) -> Result<Self> {
        if config.memtable_bytes == 0 {
            return Err(Error::Config("memtable_bytes must be at least 1".into()));
        }
        if let Some(b) = config.background_bytes_per_s {
            if !(b.is_finite() && b > 0.0) {
                return Err(Error::Config(format!(
                    "background_bytes_per_s must be a positive number of bytes per second, not {b}"
                )));
            }
        }
        config.leveled.validate().map_err(Error::Config)?;
        let format = SstFormat::new(cache.clone(), config.bloom_fp)?;
        let device = cache.device().clone();
        let mut runs = RunStore::new(
            format,
            Box::new(LeveledStrategy::<u64>::new(config.leveled)),
            device,
        );
        let warmer = Arc::new(CacheWarmer::new(cache.clone(), policy));
        let gate = Arc::new(Gate::new(warmer.clone()));
        runs.subscribe(gate.clone());
        runs.set_retain_retired(config.background_bytes_per_s.is_some());
        Ok(KvStore {
            runs,
            cache,
            config,
            warmer,
            gate,
            pending: None,
            memtable: BTreeMap::new(),
            memtable_bytes: 0,
            now: 0.0,
            background: Vec::new(),
            stats: KvStats::default(),
        })
    }

    /// Loads an initial data set into an empty store: `sorted` (strictly increasing keys) becomes
    /// runs of `target_run_pages` data blocks in the deepest level, as if compacted there long
    /// ago. No policy calls, no background operations, no [`KvStats`] counts. Everything is
    /// checked before the first page is written; a device error midway leaves the runs loaded
    /// so far.
    pub fn bulk_load(&mut self, sorted: impl IntoIterator<Item = (u64, Vec<u8>)>) -> Result<()> {
        if !self.memtable.is_empty() || !self.runs.is_empty() {
            return Err(Error::Config("bulk_load needs an empty store".into()));
        }
        let level = self.config.leveled.max_levels - 1;
        let per_run = self.config.leveled.target_run_pages as usize;
        let page_size = self.cache.page_size();
        let records = sorted.into_iter().map(|(k, v)| Ok((k, Slot::Live(v))));
        let runs = &mut self.runs;
        self.warmer.pause(true);
        // Runs of target_run_pages blocks, about two of them held at a time (see for_each_run).
        let r = for_each_run(records, page_size, Some(per_run), &mut |part| {
            let keys = part
                .first()
                .zip(part.last())
                .map(|(a, b)| KeyRange::new(a.0, b.0));
            let id = runs.flush_with(part.len() as u64, keys, |f, written| f.build_with(part, written))?;
            runs.apply_with(
                Choice::Move {
                    run: id,
                    to_level: level,
                },
                &mut NoMerge,
            )?;
            Ok(())
        });
        self.warmer.pause(false);
        r
    }

    /// The virtual time, in seconds, the policy is told with every access and operation. With
    /// timed compactions ([`KvConfig::background_bytes_per_s`]) it also carries the merges in
    /// progress forward: what of their lifecycle is due by `now_secs` is told to the warm-up
    /// policy, and a batch whose end has come is installed for reads (its inputs freed). An error
    /// is the policy's or the cache's on a deferred step; the store stays usable.
    pub fn set_now(&mut self, now_secs: f64) -> Result<()> {
        self.now = now_secs;
        self.warmer.set_now(now_secs);
        self.advance(now_secs)
    }

    /// Tells the warmer what of the pending merges is due by `now` (at its due time), and ends
    /// the batch when its end has come.
    fn advance(&mut self, now: f64) -> Result<()> {
        self.release(now, now)
    }

    /// Ends the pending batch now (one background worker: the next flush, or a merge of a later
    /// round, waits for it): tells the warmer everything still held, installs the batch for reads
    /// and frees the runs it retired (their cached blocks are invalidated).
    fn complete_pending(&mut self) -> Result<()> {
        let now = self.now;
        self.release(f64::INFINITY, now)
    }

    /// Tells the warmer the pending steps due by `until`, each at its due time but no later than
    /// `now`, and ends the batch once nothing is left and its end is reached (or `until` is past
    /// every step). A step's error is returned after the others are told.
    fn release(&mut self, until: f64, now: f64) -> Result<()> {
        let Some(pending) = self.pending.as_mut() else {
            return Ok(());
        };
        let due = pending.take_due(until);
        let finished = pending.due.is_empty() && (until.is_infinite() || now >= pending.end_s);
        let mut result = Ok(());
        for (at, d) in &due {
            // The policy is told the time the step was due (a merge's end, say), not the time the
            // clock was next set to.
            self.warmer.set_now(at.min(now));
            let r = self.gate.deliver(d);
            if result.is_ok() {
                result = r;
            }
        }
        self.warmer.set_now(now);
        let counts = self.warmer.take_operation();
        self.stats.admitted += counts.blocks_admitted;
        self.stats.policy_evictions += counts.policy_evictions;
        if finished {
            self.finish_pending();
        }
        result
    }

    /// Drops the batch's view and frees its retired runs, counting the invalidations.
    fn finish_pending(&mut self) {
        if let Some(pending) = self.pending.take() {
            let before = self.cache.stats();
            for (_, run) in pending.retired {
                self.runs.destroy_retired(run);
            }
            self.stats.invalidations += self.cache.stats().since(&before).invalidations;
        }
    }

    /// Whether merges are in progress on the virtual clock (their inputs still answer reads).
    pub fn merging(&self) -> bool {
        self.pending.is_some()
    }

    /// When the merges in progress end on the virtual clock (`None` when none is).
    pub fn merges_end(&self) -> Option<f64> {
        self.pending.as_ref().map(|p| p.end_s)
    }

    /// The runs merges in progress have retired and still read until they end (none without
    /// timed merges in progress); [`Self::runs`] gives the installed ones.
    pub fn retained_runs(&self) -> impl Iterator<Item = &SstRun> {
        self.pending.iter().flat_map(|p| p.retired.values())
    }

    /// The store's virtual time, in seconds (see [`Self::set_now`]).
    pub fn now(&self) -> f64 {
        self.now
    }

    /// The newest value of `key`.
    pub fn get(&mut self, key: u64) -> Result<Option<Vec<u8>>> {
        self.stats.gets += 1;
        self.warmer.on_access(key, key, Access::Read);
        if let Some(v) = self.memtable.get(&key) {
            return Ok(live(v.clone()));
        }
        let mut meta = MetaLookups::default();
        let mut found = None;
        match &self.pending {
            // A merge in progress: the runs from before it answer (its outputs are not installed).
            Some(p) => {
                for m in p.view.lookup_order(key) {
                    let run = p.run(m.id, self.runs.run(m.id));
                    if let Some(v) = run.get_counted(&self.cache, key, &mut meta)? {
                        found = Some(v);
                        break;
                    }
                }
            }
            None => {
                for (_, run) in self.runs.lookup_order(key) {
                    if let Some(v) = run.get_counted(&self.cache, key, &mut meta)? {
                        found = Some(v);
                        break;
                    }
                }
            }
        }
        self.stats.add_meta(&meta);
        Ok(found.and_then(live))
    }

    /// What [`Self::scan`] and [`Self::scan_blocks`] both do first: refuse an inverted range,
    /// count the scan and tell the policy the part of `lo..=hi` the store holds.
    fn begin_scan(&mut self, lo: u64, hi: u64) -> Result<KeyRange<u64>> {
        if lo > hi {
            return Err(Error::Config(format!("scan range {lo}..={hi} is inverted")));
        }
        self.stats.scans += 1;
        if let Some(held) = self.key_cover() {
            let (a, b) = (lo.max(held.min), hi.min(held.max));
            if a <= b {
                self.warmer.on_access(a, b, Access::Read);
            }
        }
        Ok(KeyRange::new(lo, hi))
    }

    /// Live entries with keys in `lo..=hi`, in key order: the memtable and the overlapping data
    /// blocks of every run (read through the cache), k-way merged, newest first. `lo > hi` is an
    /// [`Error::Config`].
    ///
    /// The policy is told the part of `lo..=hi` between the smallest and the largest key the
    /// store holds (nothing if that part is empty): Leaper's collector counts every key range of
    /// an access, so a scan of the whole key space (`0..=u64::MAX`) told as such would walk
    /// `u64::MAX / range_size` ranges.
    pub fn scan(&mut self, lo: u64, hi: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        let want = self.begin_scan(lo, hi)?;
        let mut streams: Vec<EntryStream<'_, u64, KvValue>> = vec![Box::new(
            self.memtable.range(lo..=hi).map(|(&k, v)| Ok((k, v.clone()))),
        )];
        let mut lookups = MetaLookups::default();
        for run in self.read_runs(&want) {
            streams.push(Box::new(
                run.scan_counted(&self.cache, lo, hi, &mut lookups)?
                    .into_iter()
                    .map(Ok),
            ));
        }
        self.stats.add_meta(&lookups);
        let mut out = Vec::new();
        for e in KWayMerge::new(streams)? {
            if let (k, Slot::Live(v)) = e? {
                out.push((k, v));
            }
        }
        Ok(out)
    }

    /// Does the I/O of [`Self::scan`] without producing its entries: the policy is told the same
    /// access, and the same data blocks are read through the cache in the same order (every run
    /// overlapping `lo..=hi`, in the order `scan` reads them), but no entry is decoded or merged.
    /// Returns the data blocks read. For callers that need a scan's cost and cache effects, not
    /// its answer (the experiments' op streams); counted the same as a scan in [`KvStats`].
    pub fn scan_blocks(&mut self, lo: u64, hi: u64) -> Result<u64> {
        let want = self.begin_scan(lo, hi)?;
        let mut read = 0;
        let mut lookups = MetaLookups::default();
        for run in self.read_runs(&want) {
            read += run.touch_counted(&self.cache, lo, hi, &mut lookups)?;
        }
        self.stats.add_meta(&lookups);
        Ok(read)
    }

    /// The runs a scan of `want` reads, newest data first: the installed ones, or while merges are
    /// in progress on the virtual clock the ones from before them.
    fn read_runs(&self, want: &KeyRange<u64>) -> Vec<&SstRun> {
        match &self.pending {
            Some(p) => p
                .view
                .scan_order(want)
                .map(|m| p.run(m.id, self.runs.run(m.id)))
                .collect(),
            None => self.runs.scan_order(want).map(|(_, r)| r).collect(),
        }
    }

    /// The smallest range covering every key of the memtable and the runs (tombstones included).
    fn key_cover(&self) -> Option<KeyRange<u64>> {
        let memtable = self
            .memtable
            .first_key_value()
            .zip(self.memtable.last_key_value())
            .map(|((&a, _), (&b, _))| KeyRange::new(a, b));
        let runs = match &self.pending {
            Some(p) => p.view.key_cover(),
            None => self.runs.version().key_cover(),
        };
        KeyRange::cover(memtable.iter().chain(runs.as_ref()))
    }

    /// Writes `key`. A value larger than a data block holds is an [`Error::Config`] (nothing is
    /// written).
    pub fn put(&mut self, key: u64, value: &[u8]) -> Result<()> {
        let max = max_value_len(self.cache.page_size());
        if value.len() > max {
            return Err(Error::Config(format!(
                "the value of key {key} ({} bytes) does not fit a data block of {} bytes (at most {max})",
                value.len(),
                self.cache.page_size()
            )));
        }
        self.stats.puts += 1;
        self.warmer.on_access(key, key, Access::Write);
        self.insert(key, Slot::Live(value.to_vec()))
    }

    /// Deletes `key` (a tombstone until a compaction reaches the bottom).
    pub fn delete(&mut self, key: u64) -> Result<()> {
        self.stats.deletes += 1;
        self.warmer.on_access(key, key, Access::Write);
        self.insert(key, Slot::Deleted)
    }

    fn insert(&mut self, key: u64, value: KvValue) -> Result<()> {
        self.memtable_bytes += entry_size(&value) as u64;
        if let Some(old) = self.memtable.insert(key, value) {
            self.memtable_bytes -= entry_size(&old) as u64;
        }
        if self.memtable_bytes >= self.config.memtable_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// Flushes the memtable (if it holds anything) to a new level-0 run, then compacts until the
    /// leveled strategy is satisfied.
    pub fn flush(&mut self) -> Result<()> {
        // One background worker: merges in progress finish before the next flush (their view
        // would not hold its run).
        if !self.memtable.is_empty() {
            self.complete_pending()?;
            self.flush_memtable()?;
        }
        self.compact()
    }

    fn flush_memtable(&mut self) -> Result<()> {
        let entries: Vec<(u64, KvValue)> = std::mem::take(&mut self.memtable).into_iter().collect();
        let keys = KeyRange::new(entries[0].0, entries[entries.len() - 1].0);
        let before = Counters::of(&self.cache);
        self.warmer.take_operation();
        let result = self
            .runs
            .flush_with(entries.len() as u64, Some(keys), |format, written| {
                format.build_with(&entries, written)
            });
        let counts = self.warmer.take_operation();
        let (cache_delta, io_delta) = before.since(&self.cache);
        match result {
            Ok(_) => {
                self.memtable_bytes = 0;
                self.record(BackgroundOp {
                    kind: Background::Flush,
                    trivial_move: false,
                    input_runs: 0,
                    input_blocks: 0,
                    cached_inputs: 0,
                    output_blocks: counts.blocks_offered,
                    pages_read: io_delta.page_reads,
                    pages_written: io_delta.page_writes,
                    invalidated: cache_delta.invalidations,
                    admitted: counts.blocks_admitted,
                    policy_evictions: counts.policy_evictions,
                    output_level: 0,
                });
                Ok(())
            }
            Err(e) => {
                self.memtable = entries.into_iter().collect();
                self.fail(cache_delta, io_delta, counts);
                Err(e)
            }
        }
    }

    /// Runs the leveled strategy until it is satisfied (after a failed compaction, say).
    pub fn compact(&mut self) -> Result<()> {
        loop {
            let choice = self.runs.next_choice();
            match &choice {
                Choice::DoNothing => return Ok(()),
                Choice::Move { run, to_level } => {
                    let (run, to_level) = (*run, *to_level);
                    let before = Counters::of(&self.cache);
                    let input_blocks = self.runs.run(run).map_or(0, SstRun::data_blocks);
                    let result = self.while_merging(|runs| runs.apply_with(choice, &mut NoMerge));
                    let (cache_delta, io_delta) = before.since(&self.cache);
                    if let Err(e) = result {
                        self.fail(cache_delta, io_delta, WarmCounts::default());
                        return Err(e);
                    }
                    self.record(BackgroundOp {
                        kind: Background::Compaction,
                        trivial_move: true,
                        input_runs: 1,
                        input_blocks,
                        cached_inputs: 0,
                        output_blocks: input_blocks,
                        pages_read: io_delta.page_reads,
                        pages_written: io_delta.page_writes,
                        invalidated: cache_delta.invalidations,
                        admitted: 0,
                        policy_evictions: 0,
                        output_level: to_level,
                    });
                }
                Choice::Merge {
                    inputs, output_level, ..
                } => {
                    let (inputs, output_level) = (inputs.clone(), *output_level);
                    self.merge(choice, &inputs, output_level)?;
                }
                Choice::Drop { .. } => {
                    // The leveled strategy never drops; carried out for completeness, counted.
                    let before = self.cache.stats();
                    self.while_merging(|runs| runs.apply_with(choice, &mut NoMerge))?;
                    self.stats.invalidations += self.cache.stats().since(&before).invalidations;
                }
            }
        }
    }

    /// Runs `f` (a move or a drop) on the executor. While timed merges are in progress, its
    /// lifecycle events are told after theirs, at the batch's end, so that every observer hears
    /// one operation at a time in order; what it retires is kept with the batch's runs.
    fn while_merging(&mut self, f: impl FnOnce(&mut RunStore<SstFormat>) -> Result<()>) -> Result<()> {
        if self.pending.is_none() {
            return f(&mut self.runs);
        }
        self.gate.hold();
        let result = f(&mut self.runs);
        let held = self.gate.release();
        if let Some(pending) = self.pending.as_mut() {
            pending.schedule(held, 0.0);
            pending.retired.extend(self.runs.take_retired());
        }
        result
    }

    /// A merge of runs `ids`: the cache warmer tells the policy as the executor carries it out.
    fn merge(&mut self, choice: Choice, ids: &[RunId], output_level: usize) -> Result<()> {
        let inputs: Vec<&SstRun> = ids.iter().filter_map(|&id| self.runs.run(id)).collect();
        let input_runs = inputs.len();
        let input_blocks: u64 = inputs.iter().map(|r| r.data_blocks()).sum();
        let cached_inputs = inputs
            .iter()
            .flat_map(|r| r.blocks())
            .filter(|b| self.cache.contains(b.page))
            .count() as u64;
        let timed = self.config.background_bytes_per_s;
        if timed.is_some() {
            // Merges of one round (begun at this instant) queue one after the other on the clock;
            // an earlier round still in progress is finished first (one background worker).
            if self.pending.as_ref().is_some_and(|p| p.began_s < self.now) {
                self.complete_pending()?;
            }
            if self.pending.is_none() {
                self.pending = Some(Pending::new(self.runs.version().clone(), self.now));
            }
            self.gate.hold();
        }
        let before = Counters::of(&self.cache);
        self.warmer.take_operation();
        let result = self.runs.apply_with(choice, &mut SstMerger);
        let held = self.gate.release();
        let counts = self.warmer.take_operation();
        let (cache_delta, io_delta) = before.since(&self.cache);
        if let Err(e) = result {
            // Nothing was installed: the warmer is told the events at once, as of an untimed
            // merge. Not the blocks: the failed merge destroyed its outputs, so a block's bytes
            // are gone (an untimed merge's policy was offered them, and the cache invalidated
            // what it admitted when they were destroyed).
            for d in held.iter().filter(|d| matches!(d, Deferred::Event(_))) {
                let _ = self.gate.deliver(d);
            }
            let late = self.warmer.take_operation();
            self.fail(
                cache_delta,
                io_delta,
                WarmCounts {
                    policy_evictions: counts.policy_evictions + late.policy_evictions,
                    ..counts
                },
            );
            return Err(e);
        }
        // A timed merge's blocks are held for the clock: count them here (the warmer has not seen
        // them yet).
        let output_blocks = if timed.is_some() {
            held.iter().filter(|d| d.is_keyed_block()).count() as u64
        } else {
            counts.blocks_offered
        };
        if let (Some(bytes_per_s), Some(pending)) = (timed, self.pending.as_mut()) {
            let pages = io_delta.page_reads + io_delta.page_writes;
            let t1 = pages as f64 * self.cache.page_size() as f64 / bytes_per_s;
            pending.schedule(held, t1);
            pending.retired.extend(self.runs.take_retired());
        }
        self.record(BackgroundOp {
            kind: Background::Compaction,
            trivial_move: false,
            input_runs,
            input_blocks,
            cached_inputs,
            output_blocks,
            pages_read: io_delta.page_reads,
            pages_written: io_delta.page_writes,
            invalidated: cache_delta.invalidations,
            admitted: counts.blocks_admitted,
            policy_evictions: counts.policy_evictions,
            output_level,
        });
        // A timed merge's start is due now (Leaper's phase 1 runs as it begins).
        let now = self.now;
        self.advance(now)
    }

    fn record(&mut self, op: BackgroundOp) {
        let s = &mut self.stats;
        match (op.kind, op.trivial_move) {
            (Background::Flush, _) => {
                s.flushes += 1;
                s.flushed_blocks += op.output_blocks;
            }
            (Background::Compaction, true) => s.moves += 1,
            (Background::Compaction, false) => {
                s.compactions += 1;
                s.compaction_input_blocks += op.input_blocks;
                s.compaction_output_blocks += op.output_blocks;
            }
        }
        s.background_pages_read += op.pages_read;
        s.background_pages_written += op.pages_written;
        s.invalidations += op.invalidated;
        s.admitted += op.admitted;
        s.policy_evictions += op.policy_evictions;
        self.background.push(op);
    }

    /// Counts a failed operation (its work is undone, but the I/O and cache effects happened).
    fn fail(&mut self, cache: CacheStats, io: IoStats, counts: WarmCounts) {
        let s = &mut self.stats;
        s.failed += 1;
        s.background_pages_read += io.page_reads;
        s.background_pages_written += io.page_writes;
        s.invalidations += cache.invalidations;
        s.policy_evictions += counts.policy_evictions;
    }

    /// The flushes and compactions finished since the last call, in order.
    pub fn take_background(&mut self) -> Vec<BackgroundOp> {
        std::mem::take(&mut self.background)
    }

    /// Counters since the store was opened.
    pub fn stats(&self) -> KvStats {
        self.stats
    }

    /// The cache the runs are read through.
    pub fn cache(&self) -> &Arc<BufferCache> {
        &self.cache
    }

    /// The configuration the store was opened with.
    pub fn config(&self) -> &KvConfig {
        &self.config
    }

    /// The current run layout.
    pub fn version(&self) -> &Version<u64> {
        self.runs.version()
    }

    /// Every run with its data blocks (the in-memory indexes), newest data first.
    pub fn run_blocks(&self) -> Vec<RunBlocks> {
        self.runs
            .runs()
            .map(|(m, r)| RunBlocks {
                run: m.id,
                level: m.level,
                blocks: r.blocks().to_vec(),
            })
            .collect()
    }

    /// The runs themselves, newest data first.
    pub fn runs(&self) -> impl Iterator<Item = &SstRun> {
        self.runs.runs().map(|(_, r)| r)
    }

    /// Data blocks of every run.
    pub fn data_blocks(&self) -> u64 {
        self.runs.runs().map(|(_, r)| r.data_blocks()).sum()
    }

    /// Bytes of the data blocks on the device (data blocks times the page size).
    pub fn data_bytes(&self) -> u64 {
        self.data_blocks() * self.cache.page_size() as u64
    }

    /// Entries in the memtable and the runs: an upper bound on live keys (overwritten versions
    /// and tombstones are counted until compactions remove them).
    pub fn live_keys_estimate(&self) -> u64 {
        self.memtable.len() as u64 + self.runs.runs().map(|(_, r)| r.entries()).sum::<u64>()
    }

    /// Entries in the memtable.
    pub fn memtable_len(&self) -> usize {
        self.memtable.len()
    }

    /// Encoded bytes of the memtable's entries.
    pub fn memtable_bytes(&self) -> u64 {
        self.memtable_bytes
    }

    /// The warm-up policy, to inspect or reconfigure (locked while the guard lives).
    pub fn policy(&self) -> parking_lot::MappedMutexGuard<'_, dyn WarmUpPolicy> {
        self.warmer.policy()
    }

    /// The cache warmer that drives the policy (its counts of admissions and evictions).
    pub fn warmer(&self) -> &CacheWarmer {
        &self.warmer
    }
}

fn live(v: KvValue) -> Option<Vec<u8>> {
    match v {
        Slot::Live(v) => Some(v),
        Slot::Deleted => None,
    }
}

/// For choices that merge nothing (moves, drops).
struct NoMerge;

impl Merger<SstFormat> for NoMerge {
    fn merge(
        &mut self,
        _: &SstFormat,
        _: &[&SstRun],
        _: &MergePlan,
        _: &mut Vec<SstRun>,
        _: &mut BlockSink<'_, u64>,
    ) -> Result<()> {
        Err(Error::Config(
            "a merge reached the merger of moves and drops".into(),
        ))
    }
}

impl Drop for KvStore {
    fn drop(&mut self) {
        if let Some(pending) = self.pending.take() {
            for (_, run) in pending.retired {
                self.runs.destroy_retired(run);
            }
        }
    }
}
