//! Compactions that take time: the machinery of [`super::KvConfig::background_bytes_per_s`].
//!
//! X-Engine runs a compaction on background threads for its duration T1 (Leaper, PVLDB 13(11)
//! 2020, §2.2 and §6): the input runs answer reads until the outputs are installed at the end, and
//! the warm-up policy acts on each output block as the compaction writes it, interleaved with the
//! foreground reads. Incremental Warmup thus evicts a cached input block when the output block
//! that replaces it is written, while reads still go to the inputs: between the two, those reads
//! miss. Leaper's phase 1 runs at the start, its phase 2 as the blocks are written.
//!
//! The store builds a merge's outputs at once (the executor is synchronous) and replays its
//! lifecycle on the virtual clock instead: a [`Gate`] between the executor and the cache warmer
//! holds the merge's events ([`Deferred`]), and a [`Pending`] batch releases them at their due
//! times as the store's clock advances (the start at once, output block k of n at
//! `start + T1 * (k + 1) / n`, the end at `start + T1`), keeps the version from before the merge
//! for reads, and keeps the retired inputs alive until the end. Merges that follow one another in
//! one round of compaction (a cascade) form one batch, one after the other on the clock.

use super::sst::SstRun;
use super::warmup::CacheWarmer;
use crate::lsm::{KeyRange, LifecycleEvent, LifecycleObserver, RunId, Version, WrittenBlock};
use crate::storage::PageId;
use crate::Result;
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// A lifecycle event or written block held for later delivery.
pub(crate) enum Deferred {
    /// An event.
    Event(LifecycleEvent<u64>),
    /// A written block: its page and keys, not its bytes. A merge into a paper-scale store's
    /// last level writes gigabytes; were they copied here, they would all sit in memory until the
    /// clock reaches the merge's end. The warmer reads back the blocks its policy admits.
    Block {
        page: PageId,
        keys: Option<KeyRange<u64>>,
    },
}

impl Deferred {
    /// Whether this is a written block with keys of its own (a data block, as the warmer counts
    /// blocks offered to the policy).
    pub fn is_keyed_block(&self) -> bool {
        matches!(self, Deferred::Block { keys: Some(_), .. })
    }
}

/// Stands between the executor and the [`CacheWarmer`]: passes events through, or, while
/// holding, keeps them for [`Gate::deliver`].
pub(crate) struct Gate {
    warmer: Arc<CacheWarmer>,
    held: Mutex<Option<Vec<Deferred>>>,
}

impl Gate {
    pub fn new(warmer: Arc<CacheWarmer>) -> Self {
        Gate {
            warmer,
            held: Mutex::new(None),
        }
    }

    /// Holds everything from now until [`Gate::release`].
    pub fn hold(&self) {
        *self.held.lock() = Some(Vec::new());
    }

    /// Stops holding and returns what was held, in order.
    pub fn release(&self) -> Vec<Deferred> {
        self.held.lock().take().unwrap_or_default()
    }

    /// Tells the warmer a held event or block now.
    pub fn deliver(&self, d: &Deferred) -> Result<()> {
        match d {
            Deferred::Event(e) => self.warmer.on_event(e),
            Deferred::Block { page, keys } => self.warmer.on_written_block(*page, keys.as_ref()),
        }
    }
}

impl LifecycleObserver<u64> for Gate {
    fn on_event(&self, event: &LifecycleEvent<u64>) -> Result<()> {
        if let Some(held) = self.held.lock().as_mut() {
            held.push(Deferred::Event(event.clone()));
            return Ok(());
        }
        self.warmer.on_event(event)
    }

    fn on_block(&self, block: &WrittenBlock<'_, u64>) -> Result<()> {
        if let Some(held) = self.held.lock().as_mut() {
            held.push(Deferred::Block {
                page: block.page,
                keys: block.keys,
            });
            return Ok(());
        }
        self.warmer.on_block(block)
    }
}

/// Merges in progress on the virtual clock: what reads see until the last ends, the inputs kept
/// for them, and the lifecycle still to tell the warmer.
pub(crate) struct Pending {
    /// The version before the batch's first merge: reads consult its runs until `end_s`.
    pub view: Version<u64>,
    /// Runs the batch retired, alive until `end_s` (the view's inputs, and outputs of an earlier
    /// merge of the batch that a later one merged again).
    pub retired: BTreeMap<RunId, SstRun>,
    /// Held events with their due times, in order.
    pub due: VecDeque<(f64, Deferred)>,
    /// When the batch's last merge ends.
    pub end_s: f64,
    /// The virtual time the batch began at (merges of the same round join it).
    pub began_s: f64,
}

impl Pending {
    /// A batch of no merge yet, begun at `now` over `view`.
    pub fn new(view: Version<u64>, now: f64) -> Self {
        Pending {
            view,
            retired: BTreeMap::new(),
            due: VecDeque::new(),
            end_s: now,
            began_s: now,
        }
    }

    /// Adds a merge that lasts `t1_s`, starting where the batch's previous merge ended: its
    /// started event at once, its written blocks spread evenly over its duration (block k of n
    /// at `start + t1 * (k + 1) / n`), everything after its last block at its end.
    pub fn schedule(&mut self, held: Vec<Deferred>, t1_s: f64) {
        let start = self.end_s;
        let end = start + t1_s.max(0.0);
        let blocks = held
            .iter()
            .filter(|d| matches!(d, Deferred::Block { .. }))
            .count();
        let mut k = 0usize;
        let mut seen_block = false;
        for d in held {
            let at = match &d {
                Deferred::Block { .. } => {
                    k += 1;
                    seen_block = true;
                    start + (end - start) * k as f64 / blocks as f64
                }
                Deferred::Event(_) if !seen_block => start,
                Deferred::Event(_) => end,
            };
            self.due.push_back((at, d));
        }
        self.end_s = end;
    }

    /// The held events due at or before `now`, with their due times, in order.
    pub fn take_due(&mut self, now: f64) -> Vec<(f64, Deferred)> {
        let mut out = Vec::new();
        while self.due.front().is_some_and(|(at, _)| *at <= now) {
            if let Some(d) = self.due.pop_front() {
                out.push(d);
            }
        }
        out
    }

    /// The run `id` of the view: installed in `current`, or retired by the batch.
    pub fn run<'a>(&'a self, id: RunId, current: Option<&'a SstRun>) -> &'a SstRun {
        #[allow(clippy::expect_used)] // a view run is installed or was retired by this batch
        current
            .or_else(|| self.retired.get(&id))
            .expect("a run of the view is alive")
    }
}
