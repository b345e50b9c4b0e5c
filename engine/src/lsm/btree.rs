//! An LSM B+-tree: a sorted memory component over immutable bulk-loaded B+-tree components.
//!
//! It serves as the Validation strategy's primary key index (oid -> latest timestamp, Luo & Carey,
//! PVLDB 2019) and as the primary index Eager can consult for an object's old location. Writes are
//! blind upserts; a delete writes a tombstone ([`Slot::Deleted`]) that shadows older components and
//! is dropped by a merge that includes the oldest component.

use super::{ComponentInfo, DiskComponent, DiskComponents, LifecycleStats, MergePolicyConfig};
use crate::btree::{BTreeComponent, FixedValue};
use crate::cache::BufferCache;
use crate::Result;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// A value or a deletion marker (antimatter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot<V> {
    Live(V),
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

impl<V: FixedValue> DiskComponent for BTreeComponent<V> {
    fn info(&self) -> ComponentInfo {
        ComponentInfo {
            pages: self.pages(),
            entries: self.entries(),
        }
    }
}

/// An LSM B+-tree keyed by u64.
pub struct LsmBTree<V: FixedValue> {
    cache: Arc<BufferCache>,
    memory: BTreeMap<u64, Slot<V>>,
    memory_budget_pages: u64,
    leaf_capacity: usize,
    disk: DiskComponents<BTreeComponent<Slot<V>>>,
    bloom_fp: Option<f64>,
    lookups: u64,
}

impl<V: FixedValue> LsmBTree<V> {
    /// An empty tree that flushes when its memory component needs more than `memory_budget_pages`
    /// leaf pages.
    pub fn new(
        cache: Arc<BufferCache>,
        memory_budget_pages: u64,
        policy: MergePolicyConfig,
        bloom_fp: Option<f64>,
    ) -> Self {
        let leaf_capacity = BTreeComponent::<Slot<V>>::leaf_capacity(cache.page_size());
        LsmBTree {
            cache,
            memory: BTreeMap::new(),
            memory_budget_pages: memory_budget_pages.max(1),
            leaf_capacity,
            disk: DiskComponents::new(policy.build()),
            bloom_fp,
            lookups: 0,
        }
    }

    /// Pages the memory component would fill as packed B+-tree leaves.
    pub fn memory_pages(&self) -> u64 {
        self.memory.len().div_ceil(self.leaf_capacity) as u64
    }

    pub fn upsert(&mut self, key: u64, value: V) -> Result<()> {
        self.memory.insert(key, Slot::Live(value));
        self.maybe_flush()
    }

    pub fn delete(&mut self, key: u64) -> Result<()> {
        self.memory.insert(key, Slot::Deleted);
        self.maybe_flush()
    }

    /// The newest value of `key`: memory first, then disk components newest first (each guarded by
    /// its Bloom filter).
    pub fn get(&mut self, key: u64) -> Result<Option<V>> {
        self.lookups += 1;
        Self::lookup(&self.memory, &self.disk, &self.cache, key)
    }

    /// Like [`Self::get`] but through a shared reference (queries), not counted in `lookups`.
    pub fn peek(&self, key: u64) -> Result<Option<V>> {
        Self::lookup(&self.memory, &self.disk, &self.cache, key)
    }

    fn lookup(
        memory: &BTreeMap<u64, Slot<V>>,
        disk: &DiskComponents<BTreeComponent<Slot<V>>>,
        cache: &BufferCache,
        key: u64,
    ) -> Result<Option<V>> {
        let slot = match memory.get(&key) {
            Some(s) => Some(*s),
            None => {
                let mut found = None;
                for c in disk.components() {
                    if let Some(s) = c.get(cache, key)? {
                        found = Some(s);
                        break;
                    }
                }
                found
            }
        };
        Ok(match slot {
            Some(Slot::Live(v)) => Some(v),
            Some(Slot::Deleted) | None => None,
        })
    }

    /// Point lookups made through [`Self::get`].
    pub fn lookups(&self) -> u64 {
        self.lookups
    }

    pub fn stats(&self) -> LifecycleStats {
        self.disk.stats()
    }

    pub fn disk_components(&self) -> usize {
        self.disk.len()
    }

    fn maybe_flush(&mut self) -> Result<()> {
        if self.memory_pages() > self.memory_budget_pages {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the memory component out as a new disk component, then merges as the policy asks.
    pub fn flush(&mut self) -> Result<()> {
        if self.memory.is_empty() {
            return Ok(());
        }
        let start = Instant::now();
        let memory = std::mem::take(&mut self.memory);
        let component =
            BTreeComponent::bulk_load(self.cache.device().as_ref(), memory.into_iter(), self.bloom_fp)?;
        self.disk.add_flushed(component, start.elapsed());
        let cache = self.cache.clone();
        let bloom_fp = self.bloom_fp;
        self.disk.merge_while_needed(|parts, includes_oldest| {
            // Newest wins: insert oldest first so newer values overwrite.
            let mut merged: BTreeMap<u64, Slot<V>> = BTreeMap::new();
            for part in parts.iter().rev() {
                for (k, v) in part.scan(cache.device().as_ref())? {
                    merged.insert(k, v);
                }
            }
            if includes_oldest {
                merged.retain(|_, v| matches!(v, Slot::Live(_)));
            }
            let component = BTreeComponent::bulk_load(cache.device().as_ref(), merged.into_iter(), bloom_fp)?;
            for part in parts {
                part.destroy(&cache);
            }
            Ok(component)
        })
    }
}

impl<V: FixedValue> Drop for LsmBTree<V> {
    fn drop(&mut self) {
        for c in self.disk.take_all() {
            c.destroy(&self.cache);
        }
    }
}
