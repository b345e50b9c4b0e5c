//! The one flush and compaction executor every index uses.
//!
//! A [`RunStore`] holds an index's runs (built by its [`RunFormat`]) and their [`Version`], asks the
//! [`CompactionStrategy`] what to do and does it. It is fail-stop: outputs are built before inputs
//! are touched and the version is switched only once every output exists and the device has made
//! it durable ([`Device::sync`], once per flush and per merge, after its last page write), so a
//! flush or merge that fails (an I/O error, a failed sync, a filter error) destroys its partial
//! outputs and leaves the store exactly as it was; the error goes to the caller, never a wrong
//! answer.

use super::events::{
    BlockKeys, BlockSink, CompactionKind, Extent, LifecycleEvent, LifecycleObserver, RunExtents, WrittenBlock,
};
use super::merge::{EntryStream, KWayMerge};
use super::strategy::{Choice, CompactionStrategy};
use super::version::{KeyRange, RunId, RunKey, RunMeta, Version};
use super::LifecycleStats;
use crate::storage::{Device, IoStats};
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// What an index's run looks like on the device, as a format describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunInfo<K> {
    /// Size on the device (all its extents).
    pub pages: u64,
    /// Entries it holds.
    pub entries: u64,
    /// Key range of its entries; `None` for an empty run.
    pub keys: Option<KeyRange<K>>,
    /// The pages it occupies.
    pub extents: Vec<Extent>,
}

/// How an index stores a run: build it from sorted entries, scan it back in order, destroy it.
pub trait RunFormat {
    /// The order of entries and runs.
    type Key: RunKey;
    /// The values stored with the keys.
    type Value: Clone;
    /// A built run (its handle on the device).
    type Run;
    /// Builds a run from entries in strictly increasing key order, telling `written` of each page
    /// as it is written (a format may report none). On error nothing stays allocated.
    fn build(
        &self,
        entries: Vec<(Self::Key, Self::Value)>,
        written: &mut BlockSink<'_, Self::Key>,
    ) -> Result<Self::Run>;
    /// The run's entries in key order.
    fn scan<'a>(&'a self, run: &'a Self::Run) -> Result<EntryStream<'a, Self::Key, Self::Value>>;
    /// Frees the run's pages.
    fn destroy(&self, run: Self::Run);
    /// Where the run lies and what it holds.
    fn describe(&self, run: &Self::Run) -> RunInfo<Self::Key>;
    /// Its blocks that hold key intervals, in key order, where the format keeps them (see
    /// [`RunExtents::blocks`]); none by default. Asked only when observers are told of the run.
    fn blocks(&self, _run: &Self::Run) -> Vec<BlockKeys<Self::Key>> {
        Vec::new()
    }
    /// How many entries fill a run of `pages` pages (to split compaction outputs at a target size).
    fn entries_per_run(&self, pages: u64) -> u64;
}

/// Decides, entry by entry, what a merge keeps: told whether the merge sees the oldest data of its
/// keys (`bottommost`), so deletion markers can go. The RUM strategies' cleaning is such a filter.
pub trait MergeFilter<K, V> {
    /// Whether the merge output keeps this entry (`Err` aborts the merge).
    fn keep(&mut self, key: &K, value: &V, bottommost: bool) -> Result<bool>;
}

impl<K, V, F: FnMut(&K, &V, bool) -> Result<bool>> MergeFilter<K, V> for F {
    fn keep(&mut self, key: &K, value: &V, bottommost: bool) -> Result<bool> {
        self(key, value, bottommost)
    }
}

/// Keeps everything.
pub struct KeepAll;

impl<K, V> MergeFilter<K, V> for KeepAll {
    fn keep(&mut self, _: &K, _: &V, _: bool) -> Result<bool> {
        Ok(true)
    }
}

/// How a merge turns its inputs into outputs. [`KWay`] (the k-way merge through a [`MergeFilter`],
/// split at the target size) serves indexes whose runs are one sorted stream; an index whose runs
/// carry more (an R-tree with its deleted-key B+-tree) supplies its own. Outputs go into the sink
/// the executor owns, so on error it destroys whatever was built.
pub trait Merger<F: RunFormat> {
    /// Builds the merge of `inputs` (newest data first) into `outputs`, telling `written` of
    /// each page written (as [`RunFormat::build`] does).
    fn merge(
        &mut self,
        format: &F,
        inputs: &[&F::Run],
        plan: &MergePlan,
        outputs: &mut Vec<F::Run>,
        written: &mut BlockSink<'_, F::Key>,
    ) -> Result<()>;

    /// The outputs of the last [`Self::merge`] are installed and its inputs gone: side effects the
    /// merger held back (an index's bookkeeping) can now be applied. Not called after a failure.
    fn committed(&mut self) {}
}

/// What a merge is asked to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergePlan {
    /// The level the outputs are installed at.
    pub output_level: usize,
    /// Split the output into runs of about this many pages (one run when `None`).
    pub target_run_pages: Option<u64>,
    /// No older data than the inputs holds their keys: antimatter may go.
    pub bottommost: bool,
}

/// The k-way merge (newest run wins on equal keys) through a filter, split at the target size.
/// Without a target it writes exactly one run, even an empty one.
pub struct KWay<'a, K, V>(pub &'a mut dyn MergeFilter<K, V>);

impl<F: RunFormat> Merger<F> for KWay<'_, F::Key, F::Value> {
    fn merge(
        &mut self,
        format: &F,
        inputs: &[&F::Run],
        plan: &MergePlan,
        outputs: &mut Vec<F::Run>,
        written: &mut BlockSink<'_, F::Key>,
    ) -> Result<()> {
        let streams = inputs
            .iter()
            .map(|r| format.scan(r))
            .collect::<Result<Vec<_>>>()?;
        let mut merged = Vec::new();
        for item in KWayMerge::new(streams)? {
            let (k, v) = item?;
            if self.0.keep(&k, &v, plan.bottommost)? {
                merged.push((k, v));
            }
        }
        match plan.target_run_pages {
            None => outputs.push(format.build(merged, written)?),
            Some(pages) => {
                let per_run = format.entries_per_run(pages.max(1)).max(1) as usize;
                let mut rest = merged.into_iter().peekable();
                while rest.peek().is_some() {
                    outputs.push(format.build(rest.by_ref().take(per_run).collect(), written)?);
                }
            }
        }
        Ok(())
    }
}

/// The runs of one index, their version, the strategy that compacts them, and the observers told
/// about it. Dropping the store destroys its runs.
pub struct RunStore<F: RunFormat> {
    format: F,
    device: Arc<dyn Device>,
    version: Version<F::Key>,
    runs: BTreeMap<RunId, F::Run>,
    strategy: Box<dyn CompactionStrategy<F::Key>>,
    observers: Vec<Arc<dyn LifecycleObserver<F::Key>>>,
    stats: LifecycleStats,
    next_id: RunId,
    next_seq: u64,
    /// Whether runs a merge or a drop retires are kept alive for the index ([`Self::take_retired`])
    /// instead of destroyed at once.
    retain_retired: bool,
    retired: Vec<(RunId, F::Run)>,
}

impl<F: RunFormat> RunStore<F> {
    /// `device` is the one the format writes to; its counters attribute I/O to flushes and merges.
    pub fn new(format: F, strategy: Box<dyn CompactionStrategy<F::Key>>, device: Arc<dyn Device>) -> Self {
        RunStore {
            format,
            device,
            version: Version::new(),
            runs: BTreeMap::new(),
            strategy,
            observers: Vec::new(),
            stats: LifecycleStats::default(),
            next_id: 0,
            next_seq: 0,
            retain_retired: false,
            retired: Vec::new(),
        }
    }

    /// With `on`, runs a merge or a drop retires leave the version as usual but are not destroyed:
    /// the index takes them with [`Self::take_retired`], may go on reading them (a background
    /// merge whose outputs are installed only at the end of its virtual duration), and hands each
    /// back to [`Self::destroy_retired`]. Off (the default), they are destroyed at once.
    pub fn set_retain_retired(&mut self, on: bool) {
        self.retain_retired = on;
    }

    /// The runs retired since the last call (with [`Self::set_retain_retired`] on), oldest first.
    pub fn take_retired(&mut self) -> Vec<(RunId, F::Run)> {
        std::mem::take(&mut self.retired)
    }

    /// Destroys a run [`Self::take_retired`] gave out (frees its pages).
    pub fn destroy_retired(&self, run: F::Run) {
        self.format.destroy(run);
    }

    /// Destroys a retired run, or keeps it for [`Self::take_retired`].
    fn retire(&mut self, id: RunId, run: F::Run) {
        if self.retain_retired {
            self.retired.push((id, run));
        } else {
            self.format.destroy(run);
        }
    }

    /// Tells `observer` about every flush and compaction from now on.
    pub fn subscribe(&mut self, observer: Arc<dyn LifecycleObserver<F::Key>>) {
        self.observers.push(observer);
    }

    /// The format the runs are stored in.
    pub fn format(&self) -> &F {
        &self.format
    }

    /// The current run layout.
    pub fn version(&self) -> &Version<F::Key> {
        &self.version
    }

    /// Flush and merge counters and times so far.
    pub fn stats(&self) -> LifecycleStats {
        self.stats
    }

    /// The compaction strategy's short name.
    pub fn strategy_name(&self) -> &'static str {
        self.strategy.name()
    }

    /// The run of `id`, if it is installed.
    pub fn run(&self, id: RunId) -> Option<&F::Run> {
        self.runs.get(&id)
    }

    /// Every run with its metadata, newest data first (level 0 newest first, then deeper levels).
    pub fn runs(&self) -> impl Iterator<Item = (&RunMeta<F::Key>, &F::Run)> {
        self.version.runs().map(|m| (m, &self.runs[&m.id]))
    }

    /// The runs that may hold a key of `range`, newest data first ([`Version::scan_order`]).
    pub fn scan_order<'a>(
        &'a self,
        range: &KeyRange<F::Key>,
    ) -> impl Iterator<Item = (&'a RunMeta<F::Key>, &'a F::Run)> + 'a {
        self.version.scan_order(range).map(|m| (m, &self.runs[&m.id]))
    }

    /// The runs a point lookup of `key` consults, newest data first (key ranges rule out the rest).
    pub fn lookup_order(&self, key: F::Key) -> impl Iterator<Item = (&RunMeta<F::Key>, &F::Run)> {
        self.version.lookup_order(key).map(|m| (m, &self.runs[&m.id]))
    }

    /// Runs currently installed.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether no run is installed.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Tells every observer `event` (a step that is done: what they answer changes nothing).
    fn emit(&self, event: LifecycleEvent<F::Key>) {
        for o in &self.observers {
            // Only a start can be refused (see `LifecycleObserver::on_event`).
            let _ = o.on_event(&event);
        }
    }

    /// Tells every observer that an operation starts; the first refusal, once all were told.
    fn emit_start(&self, event: LifecycleEvent<F::Key>) -> Result<()> {
        let mut first = Ok(());
        for o in &self.observers {
            let r = o.on_event(&event);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    fn extents(&self, meta: &RunMeta<F::Key>) -> RunExtents<F::Key> {
        let run = &self.runs[&meta.id];
        RunExtents {
            id: meta.id,
            level: meta.level,
            entries: meta.entries,
            keys: meta.keys,
            extents: self.format.describe(run).extents,
            blocks: self.format.blocks(run),
        }
    }

    fn meta_of(&mut self, run: &F::Run, level: usize, seqs: (u64, u64)) -> RunMeta<F::Key> {
        let info = self.format.describe(run);
        let id = self.next_id;
        self.next_id += 1;
        RunMeta {
            id,
            level,
            pages: info.pages,
            entries: info.entries,
            keys: info.keys,
            seqs,
        }
    }

    /// Writes `entries` (strictly increasing keys, e.g. a memtable's) as a new run on top of level
    /// 0. Compactions are left to [`Self::compact`]. On error nothing changes.
    pub fn flush(&mut self, entries: Vec<(F::Key, F::Value)>) -> Result<RunId> {
        let n = entries.len() as u64;
        let keys = match (entries.first(), entries.last()) {
            (Some(a), Some(b)) => Some(KeyRange::new(a.0, b.0)),
            _ => None,
        };
        self.flush_with(n, keys, move |format, written| format.build(entries, written))
    }

    /// Like [`Self::flush`] for an index that builds the run itself (`entries` and `keys` are only
    /// reported to observers); `build` tells the sink it is given of each page it writes, and must
    /// leave nothing allocated when it fails.
    pub fn flush_with(
        &mut self,
        entries: u64,
        keys: Option<KeyRange<F::Key>>,
        build: impl FnOnce(&F, &mut BlockSink<'_, F::Key>) -> Result<F::Run>,
    ) -> Result<RunId> {
        let start = Instant::now();
        let io = self.device.stats();
        let seq = self.next_seq;
        if let Err(e) = self.emit_start(LifecycleEvent::FlushStarted { seq, entries, keys }) {
            // An observer refused the flush: nothing was written.
            self.emit(LifecycleEvent::Aborted { error: e.to_string() });
            add_io(&mut self.stats.flush_io, self.device.stats().since(&io));
            return Err(e);
        }
        let observers = &self.observers;
        let mut written = |b: &WrittenBlock<'_, F::Key>| observers.iter().try_for_each(|o| o.on_block(b));
        // The run's pages are durable before the version points at them.
        let built = build(&self.format, &mut written).and_then(|run| match self.device.sync() {
            Ok(()) => Ok(run),
            Err(e) => {
                self.format.destroy(run);
                Err(e)
            }
        });
        let run = match built {
            Ok(run) => run,
            Err(e) => {
                self.emit(LifecycleEvent::Aborted { error: e.to_string() });
                add_io(&mut self.stats.flush_io, self.device.stats().since(&io));
                return Err(e);
            }
        };
        self.next_seq += 1;
        let meta = self.meta_of(&run, 0, (seq, seq));
        let id = meta.id;
        self.stats.flushes += 1;
        self.stats.flushed_entries += meta.entries;
        self.runs.insert(id, run);
        self.version.push_flushed(meta.clone());
        self.stats.flush_time += start.elapsed();
        add_io(&mut self.stats.flush_io, self.device.stats().since(&io));
        self.emit(LifecycleEvent::FlushFinished {
            seq,
            output: self.extents(&meta),
        });
        Ok(id)
    }

    /// Carries out the strategy's choices until it answers [`Choice::DoNothing`]. Stops at the
    /// first error, with the failed step undone.
    pub fn compact(&mut self, filter: &mut dyn MergeFilter<F::Key, F::Value>) -> Result<()> {
        self.compact_with(&mut KWay(filter))
    }

    /// Like [`Self::compact`] with the index's own merger.
    pub fn compact_with(&mut self, merger: &mut dyn Merger<F>) -> Result<()> {
        loop {
            let choice = self.strategy.choose(&self.version);
            if choice == Choice::DoNothing {
                return Ok(());
            }
            self.apply_with(choice, merger)?;
        }
    }

    /// The strategy's next choice for the current version, not carried out: for an index that
    /// must see a merge's inputs before it runs (a cache warm-up policy told which blocks are about
    /// to be retired). The strategy may have advanced its own state (a round-robin cursor), so the
    /// choice should be carried out next with [`Self::apply_with`], as [`Self::compact_with`] does.
    pub fn next_choice(&mut self) -> Choice {
        self.strategy.choose(&self.version)
    }

    /// Carries out one choice, merging with [`KWay`] through `filter`.
    pub fn apply(&mut self, choice: Choice, filter: &mut dyn MergeFilter<F::Key, F::Value>) -> Result<()> {
        self.apply_with(choice, &mut KWay(filter))
    }

    /// Carries out one choice with the given merger.
    pub fn apply_with(&mut self, choice: Choice, merger: &mut dyn Merger<F>) -> Result<()> {
        let start = Instant::now();
        let io = self.device.stats();
        let result = self.apply_inner(choice, merger);
        add_io(&mut self.stats.merge_io, self.device.stats().since(&io));
        if let Err(e) = &result {
            // An observer's refusal of the start included.
            self.emit(LifecycleEvent::Aborted { error: e.to_string() });
        } else {
            self.stats.merge_time += start.elapsed();
        }
        result
    }

    /// The metadata of `ids`, refusing unknown or repeated runs.
    fn inputs(&self, ids: &[RunId]) -> Result<Vec<RunMeta<F::Key>>> {
        let mut seen = std::collections::BTreeSet::new();
        ids.iter()
            .map(|&id| {
                if !seen.insert(id) {
                    return Err(Error::Config(format!(
                        "compaction strategy {} named run {id} twice",
                        self.strategy.name()
                    )));
                }
                self.version.get(id).cloned().ok_or_else(|| {
                    Error::Config(format!(
                        "compaction strategy {} chose run {id}, which the index does not hold",
                        self.strategy.name()
                    ))
                })
            })
            .collect()
    }

    fn apply_inner(&mut self, choice: Choice, merger: &mut dyn Merger<F>) -> Result<()> {
        match choice {
            Choice::DoNothing => Ok(()),
            Choice::Move { run, to_level } => {
                let meta = self.inputs(&[run])?.remove(0);
                let inputs = vec![self.extents(&meta)];
                self.emit_start(LifecycleEvent::CompactionStarted {
                    kind: CompactionKind::Move,
                    inputs: inputs.clone(),
                    output_level: to_level,
                })?;
                self.version.replace(&[run], vec![meta.clone()], to_level)?;
                self.stats.moves += 1;
                #[allow(clippy::expect_used)] // `replace` just installed `run` at `to_level`
                let moved = self.version.get(run).expect("moved run").clone();
                self.emit(LifecycleEvent::CompactionFinished {
                    kind: CompactionKind::Move,
                    inputs,
                    outputs: vec![self.extents(&moved)],
                });
                Ok(())
            }
            Choice::Drop { runs } => {
                let metas = self.inputs(&runs)?;
                let inputs: Vec<_> = metas.iter().map(|m| self.extents(m)).collect();
                self.emit_start(LifecycleEvent::CompactionStarted {
                    kind: CompactionKind::Drop,
                    inputs: inputs.clone(),
                    output_level: 0,
                })?;
                self.version.remove(&runs);
                self.emit(LifecycleEvent::CompactionFinished {
                    kind: CompactionKind::Drop,
                    inputs,
                    outputs: Vec::new(),
                });
                for id in runs {
                    #[allow(clippy::expect_used)] // every run in the version was registered in `runs`
                    let run = self.runs.remove(&id).expect("a version run has its run");
                    self.retire(id, run);
                }
                self.stats.drops += 1;
                Ok(())
            }
            Choice::Merge {
                inputs,
                output_level,
                target_run_pages,
                bottommost,
            } => self.merge(
                inputs,
                MergePlan {
                    output_level,
                    target_run_pages,
                    bottommost,
                },
                merger,
            ),
        }
    }

    fn merge(&mut self, ids: Vec<RunId>, plan: MergePlan, merger: &mut dyn Merger<F>) -> Result<()> {
        let mut metas = self.inputs(&ids)?;
        if metas.is_empty() {
            return Err(Error::Config(format!(
                "compaction strategy {} chose a merge of no runs",
                self.strategy.name()
            )));
        }
        // Newest data first: the order lookups consult the runs in.
        let order: BTreeMap<RunId, usize> = self.version.runs().enumerate().map(|(i, r)| (r.id, i)).collect();
        metas.sort_by_key(|m| order[&m.id]);
        let inputs: Vec<_> = metas.iter().map(|m| self.extents(m)).collect();
        self.emit_start(LifecycleEvent::CompactionStarted {
            kind: CompactionKind::Merge,
            inputs: inputs.clone(),
            output_level: plan.output_level,
        })?;
        let seqs = (
            metas.iter().map(|m| m.seqs.0).min().unwrap_or(0),
            metas.iter().map(|m| m.seqs.1).max().unwrap_or(0),
        );
        // Build every output before touching the inputs.
        let mut built: Vec<F::Run> = Vec::new();
        let runs: Vec<&F::Run> = metas.iter().map(|m| &self.runs[&m.id]).collect();
        let observers = &self.observers;
        let mut written = |b: &WrittenBlock<'_, F::Key>| observers.iter().try_for_each(|o| o.on_block(b));
        let result = merger.merge(&self.format, &runs, &plan, &mut built, &mut written);
        let outputs: Vec<RunMeta<F::Key>> = built
            .iter()
            .map(|r| self.meta_of(r, plan.output_level, seqs))
            .collect();
        // The outputs are durable before the version switches to them.
        let installed = result
            .and_then(|()| self.device.sync())
            .and_then(|()| self.version.replace(&ids, outputs.clone(), plan.output_level));
        if let Err(e) = installed {
            for run in built {
                self.format.destroy(run);
            }
            return Err(e);
        }
        for (meta, run) in outputs.iter().zip(built) {
            self.runs.insert(meta.id, run);
            self.stats.merged_entries += meta.entries;
        }
        self.stats.merges += 1;
        merger.committed();
        let outputs: Vec<_> = outputs.iter().map(|m| self.extents(m)).collect();
        self.emit(LifecycleEvent::CompactionFinished {
            kind: CompactionKind::Merge,
            inputs,
            outputs,
        });
        for id in ids {
            #[allow(clippy::expect_used)] // every run in the version was registered in `runs`
            let run = self.runs.remove(&id).expect("a version run has its run");
            self.retire(id, run);
        }
        Ok(())
    }
}

fn add_io(total: &mut IoStats, delta: IoStats) {
    total.page_reads += delta.page_reads;
    total.page_writes += delta.page_writes;
    total.syncs += delta.syncs;
}

impl<F: RunFormat> Drop for RunStore<F> {
    fn drop(&mut self) {
        for (_, run) in std::mem::take(&mut self.runs)
            .into_iter()
            .chain(std::mem::take(&mut self.retired))
        {
            self.format.destroy(run);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsm::events::EventLog;
    use crate::lsm::strategy::NoCompaction;
    use crate::storage::MemDevice;
    use parking_lot::Mutex;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Runs held in memory; a shared set records which are alive, and the n-th build can be made
    /// to fail.
    #[derive(Default)]
    struct ToyRuns {
        alive: Mutex<std::collections::BTreeSet<u64>>,
        builds: AtomicU64,
        fail_build: AtomicU64,
    }

    struct Toy {
        tag: u64,
        entries: Vec<(u64, i64)>,
    }

    impl RunFormat for Arc<ToyRuns> {
        type Key = u64;
        type Value = i64;
        type Run = Toy;
        fn build(&self, entries: Vec<(u64, i64)>, _: &mut BlockSink<'_, u64>) -> Result<Toy> {
            let n = self.builds.fetch_add(1, Ordering::SeqCst) + 1;
            if n == self.fail_build.load(Ordering::SeqCst) {
                return Err(Error::Config(format!("build {n} fails")));
            }
            self.alive.lock().insert(n);
            Ok(Toy { tag: n, entries })
        }
        fn scan<'a>(&'a self, run: &'a Toy) -> Result<EntryStream<'a, u64, i64>> {
            Ok(Box::new(run.entries.iter().map(|&e| Ok(e))))
        }
        fn destroy(&self, run: Toy) {
            assert!(self.alive.lock().remove(&run.tag), "run destroyed twice");
        }
        fn describe(&self, run: &Toy) -> RunInfo<u64> {
            let n = run.entries.len() as u64;
            RunInfo {
                pages: n.div_ceil(4).max(1),
                entries: n,
                keys: run
                    .entries
                    .first()
                    .map(|a| KeyRange::new(a.0, run.entries.last().unwrap().0)),
                extents: vec![Extent {
                    first: run.tag * 100,
                    pages: n.div_ceil(4).max(1),
                }],
            }
        }
        fn entries_per_run(&self, pages: u64) -> u64 {
            pages * 4
        }
    }

    fn store() -> (RunStore<Arc<ToyRuns>>, Arc<ToyRuns>, Arc<EventLog<u64>>) {
        let runs = Arc::new(ToyRuns::default());
        let mut s = RunStore::new(runs.clone(), Box::new(NoCompaction), Arc::new(MemDevice::new(64)));
        let log = Arc::new(EventLog::new());
        s.subscribe(log.clone());
        // three overlapping flushes: keys 0..10 (value 1), 5..15 (2), 10..20 (3)
        for (i, lo) in [0u64, 5, 10].into_iter().enumerate() {
            s.flush((lo..lo + 10).map(|k| (k, i as i64 + 1)).collect())
                .unwrap();
        }
        (s, runs, log)
    }

    fn merge_all(s: &RunStore<Arc<ToyRuns>>, target: Option<u64>) -> Choice {
        Choice::Merge {
            inputs: s.version().level(0).iter().rev().map(|r| r.id).collect(),
            output_level: 1,
            target_run_pages: target,
            bottommost: true,
        }
    }

    #[test]
    fn retained_inputs_stay_alive_until_handed_back() {
        let (mut s, runs, _log) = store();
        s.set_retain_retired(true);
        let inputs: Vec<RunId> = s.version().level(0).iter().map(|r| r.id).collect();
        let mut keep = |_: &u64, _: &i64, _: bool| Ok(true);
        s.apply(merge_all(&s, None), &mut keep).unwrap();
        // The version holds the output only; the three inputs are alive, given out once.
        assert_eq!(s.version().len(), 1);
        assert_eq!(runs.alive.lock().len(), 4);
        let retired = s.take_retired();
        let mut ids: Vec<RunId> = retired.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        let mut want = inputs.clone();
        want.sort_unstable();
        assert_eq!(ids, want);
        assert!(s.take_retired().is_empty());
        // Their entries are still readable.
        assert_eq!(retired.iter().map(|(_, r)| r.entries.len()).sum::<usize>(), 30);
        for (_, run) in retired {
            s.destroy_retired(run);
        }
        assert_eq!(runs.alive.lock().len(), 1);
        // Dropping the store destroys what it still retains.
        s.flush(vec![(1, 1)]).unwrap();
        let l0: Vec<RunId> = s.version().level(0).iter().map(|r| r.id).collect();
        s.apply(Choice::Drop { runs: l0 }, &mut keep).unwrap();
        assert_eq!(runs.alive.lock().len(), 2);
        drop(s);
        assert!(runs.alive.lock().is_empty());
    }

    #[test]
    fn a_merge_is_k_way_newest_wins_filtered_and_split_at_the_target() {
        let (mut s, runs, log) = store();
        let mut drop_odd = |k: &u64, _: &i64, bottom: bool| Ok(!(bottom && k % 2 == 1));
        s.apply(merge_all(&s, Some(2)), &mut drop_odd).unwrap();
        let level1: Vec<Vec<(u64, i64)>> = s.runs().map(|(_, r)| r.entries.clone()).collect();
        assert_eq!(level1.iter().map(Vec::len).collect::<Vec<_>>(), vec![8, 2]);
        let all: Vec<(u64, i64)> = level1.concat();
        let want: Vec<(u64, i64)> = (0..20)
            .filter(|k| k % 2 == 0)
            .map(|k| {
                (
                    k,
                    if k >= 10 {
                        3
                    } else if k >= 5 {
                        2
                    } else {
                        1
                    },
                )
            })
            .collect();
        assert_eq!(all, want);
        assert_eq!(s.version().level(1).len(), 2);
        assert!(s.version().level(0).is_empty());
        assert_eq!(runs.alive.lock().len(), 2, "inputs destroyed");
        let st = s.stats();
        assert_eq!(
            (st.flushes, st.merges, st.flushed_entries, st.merged_entries),
            (3, 1, 30, 10)
        );
        let events = log.events();
        assert!(
            matches!(&events[6], LifecycleEvent::CompactionStarted { kind: CompactionKind::Merge, inputs, output_level: 1 } if inputs.len() == 3)
        );
        assert!(
            matches!(&events[7], LifecycleEvent::CompactionFinished { outputs, .. } if outputs.len() == 2 && outputs[0].keys == Some(KeyRange::new(0, 14)))
        );
    }

    #[test]
    fn a_failed_output_undoes_the_merge_and_destroys_the_partial_outputs() {
        let (mut s, runs, log) = store();
        runs.fail_build.store(5, Ordering::SeqCst); // the second output of the merge
        let before: Vec<RunId> = s.version().runs().map(|r| r.id).collect();
        let err = s.apply(merge_all(&s, Some(2)), &mut KeepAll).unwrap_err();
        assert!(err.to_string().contains("build 5 fails"));
        assert_eq!(s.version().runs().map(|r| r.id).collect::<Vec<_>>(), before);
        assert_eq!(
            runs.alive.lock().len(),
            3,
            "the first output is destroyed, inputs kept"
        );
        assert_eq!(s.stats().merges, 0);
        assert!(matches!(
            log.events().last(),
            Some(LifecycleEvent::Aborted { .. })
        ));
        // The same merge succeeds once the device is healthy again.
        s.apply(merge_all(&s, Some(2)), &mut KeepAll).unwrap();
        assert_eq!(s.version().total_entries(), 20);
    }

    /// Refuses every operation's start.
    struct Refuser;

    impl LifecycleObserver<u64> for Refuser {
        fn on_event(&self, event: &LifecycleEvent<u64>) -> Result<()> {
            match event {
                LifecycleEvent::FlushStarted { .. } | LifecycleEvent::CompactionStarted { .. } => {
                    Err(Error::Config("refused".into()))
                }
                _ => Ok(()),
            }
        }
    }

    #[test]
    fn an_observer_refusing_a_start_aborts_the_operation_before_it_writes() {
        let (mut s, runs, log) = store();
        let before: Vec<RunId> = s.version().runs().map(|r| r.id).collect();
        let builds = runs.builds.load(Ordering::SeqCst);
        s.subscribe(Arc::new(Refuser));
        let err = s.flush(vec![(100, 1)]).unwrap_err();
        assert!(err.to_string().contains("refused"));
        let err = s.apply(merge_all(&s, None), &mut KeepAll).unwrap_err();
        assert!(err.to_string().contains("refused"));
        assert_eq!(runs.builds.load(Ordering::SeqCst), builds, "nothing was built");
        assert_eq!(s.version().runs().map(|r| r.id).collect::<Vec<_>>(), before);
        // Each refused start is followed by its abort, told to every observer.
        let tail: Vec<_> = log.events().into_iter().rev().take(4).collect();
        assert!(matches!(tail[0], LifecycleEvent::Aborted { .. }));
        assert!(matches!(tail[1], LifecycleEvent::CompactionStarted { .. }));
        assert!(matches!(tail[2], LifecycleEvent::Aborted { .. }));
        assert!(
            matches!(tail[3], LifecycleEvent::FlushStarted { keys: Some(k), .. } if k == KeyRange::new(100, 100))
        );
    }

    #[test]
    fn moves_drops_and_bad_choices() {
        let (mut s, runs, _) = store();
        let oldest = s.version().level(0).last().unwrap().id;
        s.apply(
            Choice::Move {
                run: oldest,
                to_level: 2,
            },
            &mut KeepAll,
        )
        .unwrap();
        assert_eq!(s.version().level(2).len(), 1);
        assert_eq!(s.stats().moves, 1);
        let before = s.version().len();
        for bad in [
            Choice::Move { run: 99, to_level: 1 },
            Choice::Drop {
                runs: vec![oldest, oldest],
            },
            Choice::Merge {
                inputs: vec![],
                output_level: 1,
                target_run_pages: None,
                bottommost: false,
            },
        ] {
            assert!(matches!(s.apply(bad, &mut KeepAll), Err(Error::Config(_))));
            assert_eq!(s.version().len(), before);
        }
        s.apply(Choice::Drop { runs: vec![oldest] }, &mut KeepAll)
            .unwrap();
        assert_eq!((s.version().len(), runs.alive.lock().len()), (2, 2));
        drop(s);
        assert!(
            runs.alive.lock().is_empty(),
            "dropping the store destroys its runs"
        );
    }
}
