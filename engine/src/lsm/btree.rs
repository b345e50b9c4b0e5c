//! An LSM B+-tree: a sorted memory component over immutable bulk-loaded B+-tree runs, merged by
//! AsterixDB's prefix policy through the shared [`RunStore`].
//!
//! It serves as the Validation strategy's primary key index (oid -> latest timestamp, Luo & Carey,
//! PVLDB 2019) and as the primary index Eager can consult for an object's old location. Writes are
//! blind upserts; a delete writes a tombstone ([`Slot::Deleted`]) that shadows older runs and is
//! dropped by a merge that includes the oldest run.

use super::events::{BlockSink, Extent, LifecycleObserver};
use super::executor::{RunFormat, RunInfo};
use super::kv::{LsmKv, RunProbe};
use super::merge::EntryStream;
use super::version::KeyRange;
use super::{LifecycleStats, MergePolicyConfig};
use crate::btree::{BTreeComponent, FixedValue};
use crate::cache::BufferCache;
use crate::Result;
use std::sync::Arc;

/// A value or a deletion marker (antimatter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot<V> {
    /// The newest value of the key.
    Live(V),
    /// The key was deleted: shadows older values until a bottommost merge drops it.
    Deleted,
}

impl<V: FixedValue> FixedValue for Slot<V> {
    const SIZE: usize = V::SIZE + 1;

    fn encode(&self, out: &mut [u8]) {
        match self {
            Slot::Live(v) => {
                out[0] = 1;
                v.encode(&mut out[1..]);
            }
            Slot::Deleted => out[..Self::SIZE].fill(0),
        }
    }

    fn decode(bytes: &[u8]) -> Self {
        if bytes[0] == 1 {
            Slot::Live(V::decode(&bytes[1..]))
        } else {
            Slot::Deleted
        }
    }
}

/// Runs that are bulk-loaded [`BTreeComponent`]s keyed by u64, with an optional Bloom filter,
/// read through a buffer cache (lookups) or straight from the device (merge scans).
pub struct BTreeRuns<T: FixedValue> {
    cache: Arc<BufferCache>,
    bloom_fp: Option<f64>,
    _values: std::marker::PhantomData<fn() -> T>,
}

impl<T: FixedValue> BTreeRuns<T> {
    /// Runs whose pages go through `cache`, each with a Bloom filter of false-positive rate `bloom_fp`
    /// if given.
    pub fn new(cache: Arc<BufferCache>, bloom_fp: Option<f64>) -> Self {
        BTreeRuns {
            cache,
            bloom_fp,
            _values: std::marker::PhantomData,
        }
    }

    /// The cache the runs are read and written through.
    pub fn cache(&self) -> &Arc<BufferCache> {
        &self.cache
    }
}

impl<T: FixedValue> RunFormat for BTreeRuns<T> {
    type Key = u64;
    type Value = T;
    type Run = BTreeComponent<T>;

    /// Reports no written page: no cache warm-up watches a B+-tree LSM.
    fn build(&self, entries: Vec<(u64, T)>, _: &mut BlockSink<'_, u64>) -> Result<BTreeComponent<T>> {
        BTreeComponent::bulk_load(self.cache.device().as_ref(), entries.into_iter(), self.bloom_fp)
    }

    /// Reads every leaf once, straight from the device (a merge's sequential scan).
    fn scan<'a>(&'a self, run: &'a BTreeComponent<T>) -> Result<EntryStream<'a, u64, T>> {
        Ok(Box::new(
            run.scan(self.cache.device().as_ref())?.into_iter().map(Ok),
        ))
    }

    fn destroy(&self, run: BTreeComponent<T>) {
        run.destroy(&self.cache);
    }

    fn describe(&self, run: &BTreeComponent<T>) -> RunInfo<u64> {
        RunInfo {
            pages: run.pages(),
            entries: run.entries(),
            keys: run.min_key().zip(run.max_key()).map(|(a, b)| KeyRange::new(a, b)),
            extents: vec![Extent {
                first: run.first_page(),
                pages: run.pages(),
            }],
        }
    }

    /// Full leaves of `pages` pages (internal nodes come on top).
    fn entries_per_run(&self, pages: u64) -> u64 {
        BTreeComponent::<T>::leaf_capacity(self.cache.page_size()) as u64 * pages
    }
}

/// The merge filter of a tombstone store: antimatter goes once the merge reaches the oldest data.
pub(crate) fn drop_tombstones<V>(_key: &u64, value: &Slot<V>, bottommost: bool) -> Result<bool> {
    Ok(!(bottommost && matches!(value, Slot::Deleted)))
}

/// An LSM B+-tree keyed by u64: an [`LsmKv`] merged by AsterixDB's prefix policy whose lookups
/// probe every run (the Bloom filters decide, as in AsterixDB), counting the lookups made through
/// [`Self::get`].
pub struct LsmBTree<V: FixedValue> {
    kv: LsmKv<V>,
    lookups: u64,
}

impl<V: FixedValue> LsmBTree<V> {
    /// An empty tree that flushes when its memory component needs more than `memory_budget_pages`
    /// leaf pages. Fails on a budget of 0, a page that holds no entry or a bad policy.
    pub fn new(
        cache: Arc<BufferCache>,
        memory_budget_pages: u64,
        policy: MergePolicyConfig,
        bloom_fp: Option<f64>,
    ) -> Result<Self> {
        Ok(LsmBTree {
            kv: LsmKv::new(cache, memory_budget_pages, policy.into(), bloom_fp)?
                .with_probe(RunProbe::EveryRun),
            lookups: 0,
        })
    }

    /// Tells `observer` about every flush and merge from now on.
    pub fn subscribe(&mut self, observer: Arc<dyn LifecycleObserver<u64>>) {
        self.kv.subscribe(observer);
    }

    /// Pages the memory component would fill as packed B+-tree leaves.
    pub fn memory_pages(&self) -> u64 {
        self.kv.memory_pages()
    }

    /// Inserts or replaces the value of `key`, then flushes and merges if the memory component
    /// outgrew its budget (an `Err` reports that maintenance failed; the write is kept).
    pub fn upsert(&mut self, key: u64, value: V) -> Result<()> {
        self.kv.put(key, value)
    }

    /// Deletes `key` (writes a deletion marker), then flushes and merges like [`Self::upsert`].
    pub fn delete(&mut self, key: u64) -> Result<()> {
        self.kv.delete(key)
    }

    /// The newest value of `key`: memory first, then disk runs newest first (each guarded by its
    /// Bloom filter).
    pub fn get(&mut self, key: u64) -> Result<Option<V>> {
        self.lookups += 1;
        self.peek(key)
    }

    /// Like [`Self::get`] but through a shared reference (queries), not counted in `lookups`.
    pub fn peek(&self, key: u64) -> Result<Option<V>> {
        self.kv.get(key)
    }

    /// Point lookups made through [`Self::get`].
    pub fn lookups(&self) -> u64 {
        self.lookups
    }

    /// Flush and merge counters and times.
    pub fn stats(&self) -> LifecycleStats {
        self.kv.stats()
    }

    /// Disk runs (components) currently held.
    pub fn disk_components(&self) -> usize {
        self.kv.version().runs().count()
    }

    /// Writes the memory component out as a new disk run, then merges as the policy asks. A failed
    /// flush keeps the memory component (readable, flushed again next time); a failed merge keeps
    /// its inputs; either way the error is returned and nothing written is lost.
    pub fn flush(&mut self) -> Result<()> {
        self.kv.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsm::{EventLog, LifecycleEvent};
    use crate::storage::{Device, MemDevice};

    /// 256-byte pages: 14 entries of a u64 key and a 9-byte slot per leaf.
    fn tree(tolerance: usize) -> (LsmBTree<u64>, Arc<dyn Device>) {
        let dev: Arc<dyn Device> = Arc::new(MemDevice::new(256));
        let cache = Arc::new(BufferCache::new(dev.clone(), 64));
        let policy = MergePolicyConfig::Prefix {
            max_mergeable_pages: 1000,
            max_tolerance_components: tolerance,
        };
        (LsmBTree::new(cache, 2, policy, None).unwrap(), dev)
    }

    #[test]
    fn flushes_and_merges_read_and_write_exactly_the_runs_pages() {
        let (mut t, dev) = tree(2);
        let log = Arc::new(EventLog::new());
        t.subscribe(log.clone());
        // The 29th entry needs a third leaf (> 2 pages): flush 29 entries = 3 leaves + a root.
        for k in 0..29 {
            t.upsert(k, k).unwrap();
        }
        assert_eq!(
            (t.stats().flushes, t.memory_pages(), t.disk_components()),
            (1, 0, 1)
        );
        assert_eq!(t.stats().flush_io.page_writes, 4);
        for k in 100..129 {
            t.upsert(k, k).unwrap();
        }
        // The second flush makes two runs: the prefix policy merges them, reading their 6 leaves
        // and writing 58 entries as 5 leaves and a root.
        let st = t.stats();
        assert_eq!(
            (st.flushes, st.merges, st.flushed_entries, st.merged_entries),
            (2, 1, 58, 58)
        );
        assert_eq!(st.flush_io.page_writes, 8);
        assert_eq!((st.merge_io.page_reads, st.merge_io.page_writes), (6, 6));
        assert_eq!(dev.allocated_pages(), 6);
        assert_eq!(t.disk_components(), 1);
        let merged = log.events().into_iter().find_map(|e| match e {
            LifecycleEvent::CompactionFinished { inputs, outputs, .. } => Some((inputs, outputs)),
            _ => None,
        });
        let (inputs, outputs) = merged.unwrap();
        assert_eq!(
            inputs.iter().map(|r| r.extents[0].pages).collect::<Vec<_>>(),
            vec![4, 4]
        );
        assert_eq!(outputs[0].keys, Some(KeyRange::new(0, 128)));
        assert_eq!(t.get(5).unwrap(), Some(5));
    }

    #[test]
    fn tombstones_shadow_older_runs_and_go_when_the_oldest_run_is_merged() {
        let (mut t, dev) = tree(3);
        for k in 0..29 {
            t.upsert(k, k).unwrap();
        }
        // Deletes of the first run's keys, flushed as a second run: shadowing, not yet merged.
        for k in 0..20 {
            t.delete(k).unwrap();
        }
        t.flush().unwrap();
        assert_eq!((t.disk_components(), t.stats().merges), (2, 0));
        assert_eq!(t.get(3).unwrap(), None);
        assert_eq!(t.peek(25).unwrap(), Some(25));
        t.upsert(3, 33).unwrap();
        t.flush().unwrap();
        // Three runs: merged with the oldest, so the 19 remaining tombstones vanish.
        assert_eq!((t.disk_components(), t.stats().merges), (1, 1));
        assert_eq!(t.stats().merged_entries, 10);
        assert_eq!(t.get(3).unwrap(), Some(33));
        assert_eq!(t.get(4).unwrap(), None);
        assert_eq!(t.lookups(), 3);
        assert_eq!(dev.allocated_pages(), 1);
    }
}
