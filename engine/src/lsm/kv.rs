//! A key-value LSM index on the framework: u64 keys, fixed-size values, tombstones, leveled
//! compaction by default (the store Leaper's experiments grow from).

use super::btree::{drop_tombstones, BTreeRuns, Slot};
use super::config::CompactionConfig;
use super::events::LifecycleObserver;
use super::executor::{RunFormat, RunStore};
use super::memory::{HashMemtable, MemoryLevel};
use super::merge::{EntryStream, KWayMerge};
use super::version::{KeyRange, Version};
use super::LifecycleStats;
use crate::btree::{BTreeComponent, FixedValue};
use crate::cache::BufferCache;
use crate::{Error, Result};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// An LSM key-value store: a hashed memtable (sorted at flush) over bulk-loaded B+-tree runs with
/// Bloom filters, read through the buffer cache. Lookups consult the memtables, then the runs whose
/// key range holds the key, newest first (every level-0 run, at most one run per deeper level).
///
/// Writes go to the memtable first; when it outgrows its budget the write also flushes and
/// compacts. An `Err` from [`Self::put`] or [`Self::delete`] reports that this maintenance failed:
/// the write itself is applied and kept, and the failed flush or compaction changed nothing, so
/// it is simply tried again at the next flush.
pub struct LsmKv<V: FixedValue> {
    cache: Arc<BufferCache>,
    memory: MemoryLevel<HashMemtable<u64, Slot<V>>>,
    store: RunStore<BTreeRuns<Slot<V>>>,
    probe: RunProbe,
}

/// Which runs a point lookup probes, newest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunProbe {
    /// Only the runs whose key range holds the key (LevelDB's and RocksDB's lookup).
    #[default]
    KeyRange,
    /// Every run, the Bloom filter alone deciding (AsterixDB's LSM B+-tree, which the LSM RUM-tree
    /// authors' key indexes ran on).
    EveryRun,
}

impl<V: FixedValue> LsmKv<V> {
    /// An empty store that flushes when its memtable needs more than `memory_budget_pages` leaf
    /// pages, compacts as `compaction` says, and gives each run a Bloom filter of false-positive
    /// rate `bloom_fp` (none if `None`).
    pub fn new(
        cache: Arc<BufferCache>,
        memory_budget_pages: u64,
        compaction: CompactionConfig,
        bloom_fp: Option<f64>,
    ) -> Result<Self> {
        if memory_budget_pages == 0 {
            return Err(Error::Config("memory_budget_pages must be at least 1".into()));
        }
        let leaf_capacity = BTreeComponent::<Slot<V>>::leaf_capacity(cache.page_size());
        if leaf_capacity == 0 {
            return Err(Error::Config(format!(
                "page size {} holds no {}-byte entry",
                cache.page_size(),
                8 + <Slot<V> as FixedValue>::SIZE
            )));
        }
        let device = cache.device().clone();
        Ok(LsmKv {
            memory: MemoryLevel::new(HashMemtable::new(leaf_capacity), memory_budget_pages),
            store: RunStore::new(
                BTreeRuns::new(cache.clone(), bloom_fp),
                compaction.build()?,
                device,
            ),
            cache,
            probe: RunProbe::default(),
        })
    }

    /// The same store, its point lookups probing runs as `probe` says.
    pub fn with_probe(mut self, probe: RunProbe) -> Self {
        self.probe = probe;
        self
    }

    /// Tells `observer` about every flush and compaction from now on.
    pub fn subscribe(&mut self, observer: Arc<dyn LifecycleObserver<u64>>) {
        self.store.subscribe(observer);
    }

    /// Writes `value` for `key`, then flushes and compacts if the memtable outgrew its budget.
    pub fn put(&mut self, key: u64, value: V) -> Result<()> {
        self.memory.active_mut().insert(key, Slot::Live(value));
        self.maybe_flush()
    }

    /// Writes a deletion marker for `key`, then flushes and compacts like [`Self::put`].
    pub fn delete(&mut self, key: u64) -> Result<()> {
        self.memory.active_mut().insert(key, Slot::Deleted);
        self.maybe_flush()
    }

    /// The newest value of `key`.
    pub fn get(&self, key: u64) -> Result<Option<V>> {
        let mut slot = self.memory.newest_first().find_map(|t| t.get(&key).copied());
        if slot.is_none() {
            let runs: Box<dyn Iterator<Item = _>> = match self.probe {
                RunProbe::KeyRange => Box::new(self.store.lookup_order(key)),
                RunProbe::EveryRun => Box::new(self.store.runs()),
            };
            for (_, run) in runs {
                if let Some(s) = run.get(&self.cache, key)? {
                    slot = Some(s);
                    break;
                }
            }
        }
        Ok(match slot {
            Some(Slot::Live(v)) => Some(v),
            _ => None,
        })
    }

    /// Live entries with keys in `range`, in key order: a k-way merge of the memtables and of
    /// every run whose key range meets `range` (each scanned from the device), newest first.
    pub fn scan(&self, range: impl RangeBounds<u64>) -> Result<Vec<(u64, V)>> {
        let lo = match range.start_bound() {
            Bound::Included(&k) => k,
            Bound::Excluded(&k) => match k.checked_add(1) {
                Some(k) => k,
                None => return Ok(Vec::new()),
            },
            Bound::Unbounded => 0,
        };
        let hi = match range.end_bound() {
            Bound::Included(&k) => k,
            Bound::Excluded(&k) => match k.checked_sub(1) {
                Some(k) => k,
                None => return Ok(Vec::new()),
            },
            Bound::Unbounded => u64::MAX,
        };
        if lo > hi {
            return Ok(Vec::new());
        }
        let want = KeyRange::new(lo, hi);
        let mut streams: Vec<EntryStream<'_, u64, Slot<V>>> = Vec::new();
        for t in self.memory.newest_first() {
            streams.push(Box::new(t.range(lo, hi).into_iter().map(Ok)));
        }
        for (meta, run) in self.store.runs() {
            if meta.overlaps(&want) {
                let s = self.store.format().scan(run)?;
                streams.push(Box::new(s.filter(move |e| {
                    e.as_ref().map_or(true, |(k, _)| want.min <= *k && *k <= want.max)
                })));
            }
        }
        let mut out = Vec::new();
        for e in KWayMerge::new(streams)? {
            if let (k, Slot::Live(v)) = e? {
                out.push((k, v));
            }
        }
        Ok(out)
    }

    fn maybe_flush(&mut self) -> Result<()> {
        if self.memory.over_budget() {
            self.flush()?;
        }
        Ok(())
    }

    /// Flushes every memtable (oldest first), then compacts until the strategy is satisfied.
    pub fn flush(&mut self) -> Result<()> {
        if self.memory.is_empty() {
            return Ok(());
        }
        let fresh = self.memory.active().fresh();
        let store = &mut self.store;
        self.memory
            .flush_all(fresh, |entries| store.flush(entries).map(drop))?;
        store.compact(&mut drop_tombstones::<V>)
    }

    /// Runs the compaction strategy until it is satisfied (after a failed compaction, say).
    pub fn compact(&mut self) -> Result<()> {
        self.store.compact(&mut drop_tombstones::<V>)
    }

    /// Flush and merge counters and times so far.
    pub fn stats(&self) -> LifecycleStats {
        self.store.stats()
    }

    /// The current run layout.
    pub fn version(&self) -> &Version<u64> {
        self.store.version()
    }

    /// Pages held by the memtables (active and waiting for a flush).
    pub fn memory_pages(&self) -> u64 {
        self.memory.pages()
    }

    /// Memtables frozen but not flushed yet (non-zero only after a failed flush).
    pub fn pending_memtables(&self) -> usize {
        self.memory.immutable_count()
    }
}
