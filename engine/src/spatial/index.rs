//! [`LsmRTree`]: the memory R-tree, the packed disk R-trees and whatever the strategy needs beside
//! them (deleted-key B+-trees, a primary key index, or the Update Memo).

use super::strategy::{CleaningSwitches, Strategy};
use super::um::UpdateMemo;
use crate::btree::BTreeComponent;
use crate::cache::BufferCache;
use crate::geom::{HilbertCurve, Point, Rect};
use crate::lsm::{ComponentInfo, DiskComponent, DiskComponents, LifecycleStats, LsmBTree, MergePolicyConfig};
use crate::rtree::{DiskRTree, MemRTree, NodeId, SpatialEntry};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Everything that shapes an [`LsmRTree`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpatialConfig {
    pub strategy: Strategy,
    /// The data extent; the Hilbert curve used to order flushes and merges spans it.
    pub extent: Rect,
    /// Flush when the memory component needs more than this many page-sized nodes.
    pub memory_budget_pages: u64,
    pub merge_policy: MergePolicyConfig,
    /// Buffered Cleaning threshold (paper Section 4.1; the authors' default is 4).
    pub buffered_threshold: u32,
    /// Vacuum Cleaning threshold `th` (paper Section 4.2; the authors' default is 8).
    pub vacuum_threshold: u32,
    /// Eager only: look the old location up in an LSM primary index (timed) instead of taking it
    /// from the stream, as the paper did when it excluded that lookup.
    pub eager_primary_lookup: bool,
    /// Validation only: drop obsolete entries during merges after checking them against the primary
    /// key index (Luo & Carey's merge repair).
    pub validation_merge_repair: bool,
    /// Memory budget, in leaf pages, of the B+-tree key indexes (Validation's primary key index,
    /// Eager's primary index). They are also flushed whenever the R-tree flushes, as AsterixDB flushes
    /// every index of a dataset together.
    pub key_index_budget_pages: u64,
    /// Bloom filter false-positive rate of B+-tree components (AsterixDB default 0.01), or none.
    pub bloom_fp: Option<f64>,
}

impl SpatialConfig {
    /// The authors' settings, scaled: prefix policy with 5 tolerated components.
    pub fn new(strategy: Strategy, extent: Rect, memory_budget_pages: u64) -> Self {
        SpatialConfig {
            strategy,
            extent,
            memory_budget_pages,
            merge_policy: MergePolicyConfig::Prefix {
                // the authors' ratio: ~1 GB mergeable components over a 128 MiB memory component
                max_mergeable_pages: memory_budget_pages.saturating_mul(8),
                max_tolerance_components: 5,
            },
            buffered_threshold: 4,
            vacuum_threshold: 8,
            eager_primary_lookup: false,
            validation_merge_repair: true,
            key_index_budget_pages: memory_budget_pages,
            bloom_fp: Some(0.01),
        }
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Config(m));
        if self.memory_budget_pages == 0 {
            return bad("memory_budget_pages must be at least 1".into());
        }
        if self.key_index_budget_pages == 0 {
            return bad("key_index_budget_pages must be at least 1".into());
        }
        if self.buffered_threshold == 0 || self.vacuum_threshold == 0 {
            return bad("cleaning thresholds must be at least 1".into());
        }
        if self.extent.is_empty() || !self.extent.width().is_finite() || !self.extent.height().is_finite() {
            return bad(format!("extent {:?} is empty or not finite", self.extent));
        }
        if let Some(fp) = self.bloom_fp {
            if !(fp > 0.0 && fp < 1.0) {
                return bad(format!("bloom_fp {fp} must lie strictly between 0 and 1"));
            }
        }
        if let MergePolicyConfig::Prefix {
            max_tolerance_components,
            ..
        } = self.merge_policy
        {
            if max_tolerance_components < 2 {
                return bad("the prefix policy needs a tolerance of at least 2 components".into());
            }
        }
        Ok(())
    }
}

/// One disk component: a packed R-tree and, for Eager, the deleted-key B+-tree beside it.
struct SpatialComponent {
    rtree: DiskRTree,
    deleted: Option<BTreeComponent<()>>,
}

impl DiskComponent for SpatialComponent {
    fn info(&self) -> ComponentInfo {
        ComponentInfo {
            pages: self.rtree.pages() + self.deleted.as_ref().map_or(0, |d| d.pages()),
            entries: self.rtree.entries(),
        }
    }
}

impl SpatialComponent {
    fn destroy(self, cache: &BufferCache) {
        self.rtree.destroy(cache);
        if let Some(d) = self.deleted {
            d.destroy(cache);
        }
    }
}

/// Obsolete entries removed, by the mechanism that removed them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleaningCounts {
    pub buffered: u64,
    pub vacuum: u64,
    pub flush: u64,
    pub merge: u64,
    /// Validation's merge repair.
    pub merge_repair: u64,
    /// Eager: entries annihilated with their deleted keys during merges.
    pub annihilated: u64,
    /// Eager: old entries removed physically from the memory R-tree by an update or delete.
    pub memory_deletes: u64,
}

/// What the index did, for result rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpatialStats {
    /// The LSM R-tree's own flushes and merges (the paper's Table 1).
    pub rtree: LifecycleStats,
    /// The key index's (Validation's primary key index or Eager's primary index), if any.
    pub key_index: Option<LifecycleStats>,
    pub um_entries: u64,
    pub um_max_entries: u64,
    pub cleaned: CleaningCounts,
    pub memory_splits: u64,
    pub key_index_lookups: u64,
}

impl SpatialStats {
    /// Flush time of the R-tree plus its key index.
    pub fn flush_time(&self) -> Duration {
        self.rtree.flush_time + self.key_index.map_or(Duration::ZERO, |k| k.flush_time)
    }

    /// Merge time of the R-tree plus its key index.
    pub fn merge_time(&self) -> Duration {
        self.rtree.merge_time + self.key_index.map_or(Duration::ZERO, |k| k.merge_time)
    }
}

/// The result of a range query.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryOutcome {
    /// The fresh entries inside the range: exactly one per live object located there.
    pub results: Vec<SpatialEntry>,
    /// Entries the R-trees produced before validation.
    pub candidates: u64,
    /// Probes made to validate them: deleted-key lookups (Eager), primary key index lookups
    /// (Validation) or Update Memo lookups (UM).
    pub validation_lookups: u64,
}

/// An LSM R-tree secondary index maintained by one [`Strategy`].
pub struct LsmRTree {
    cfg: SpatialConfig,
    cache: Arc<BufferCache>,
    hilbert: HilbertCurve,
    memory: MemRTree,
    /// Eager: the in-memory deleted-key B+-tree, keyed like AsterixDB's by the whole deleted tuple
    /// (oid, x bits, y bits): every update and delete adds one key, so it grows with the stream.
    memory_deleted: BTreeSet<(u64, u64, u64)>,
    deleted_leaf_capacity: usize,
    disk: DiskComponents<SpatialComponent>,
    /// The global timestamp counter (incremented by every insert, update and delete).
    clock: u64,
    um: Option<Arc<UpdateMemo>>,
    switches: CleaningSwitches,
    /// Validation: oid -> latest ts. Eager with `eager_primary_lookup`: oid -> location.
    primary_key_index: Option<LsmBTree<u64>>,
    primary_index: Option<LsmBTree<Point>>,
    vacuum_counter: u32,
    vacuum_cursor: Option<NodeId>,
    cleaned: CleaningCounts,
}

impl LsmRTree {
    pub fn new(cfg: SpatialConfig, cache: Arc<BufferCache>) -> Result<Self> {
        cfg.validate()?;
        let page_size = cache.page_size();
        let key_policy = cfg.merge_policy;
        let primary_key_index = (cfg.strategy == Strategy::Validation).then(|| {
            LsmBTree::new(
                cache.clone(),
                cfg.key_index_budget_pages,
                key_policy,
                cfg.bloom_fp,
            )
        });
        let primary_index = (cfg.strategy == Strategy::Eager && cfg.eager_primary_lookup).then(|| {
            LsmBTree::new(
                cache.clone(),
                cfg.key_index_budget_pages,
                key_policy,
                cfg.bloom_fp,
            )
        });
        Ok(LsmRTree {
            hilbert: HilbertCurve::new(cfg.extent),
            memory: MemRTree::new(page_size),
            memory_deleted: BTreeSet::new(),
            // a deleted tuple is an oid plus a point, 24 bytes, as a B+-tree entry keyed by oid with a Point
            deleted_leaf_capacity: BTreeComponent::<Point>::leaf_capacity(page_size),
            disk: DiskComponents::new(cfg.merge_policy.build()),
            clock: 0,
            um: cfg
                .strategy
                .uses_update_memo()
                .then(|| Arc::new(UpdateMemo::new())),
            switches: cfg.strategy.switches().unwrap_or_default(),
            primary_key_index,
            primary_index,
            vacuum_counter: 0,
            vacuum_cursor: None,
            cleaned: CleaningCounts::default(),
            cfg,
            cache,
        })
    }

    pub fn config(&self) -> &SpatialConfig {
        &self.cfg
    }

    pub fn strategy(&self) -> Strategy {
        self.cfg.strategy
    }

    pub fn update_memo(&self) -> Option<&UpdateMemo> {
        self.um.as_deref()
    }

    /// The Update Memo, shared (for concurrent ingestion outside the tree's lock).
    pub fn shared_update_memo(&self) -> Option<Arc<UpdateMemo>> {
        self.um.clone()
    }

    /// The last timestamp handed out.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// The memory component's size in pages: memory R-tree nodes plus, for Eager, the pages of its
    /// in-memory deleted-key B+-tree.
    pub fn memory_pages(&self) -> u64 {
        self.memory.node_count() as u64
            + self.memory_deleted.len().div_ceil(self.deleted_leaf_capacity) as u64
    }

    pub fn memory_entries(&self) -> usize {
        self.memory.len()
    }

    pub fn disk_components(&self) -> usize {
        self.disk.len()
    }

    pub fn disk_entries(&self) -> u64 {
        self.disk.total_entries()
    }

    pub fn disk_pages(&self) -> u64 {
        self.disk.total_pages()
    }

    pub fn stats(&self) -> SpatialStats {
        let key = self.primary_key_index.as_ref().map(|k| (k.stats(), k.lookups()));
        let key = key.or_else(|| self.primary_index.as_ref().map(|k| (k.stats(), k.lookups())));
        SpatialStats {
            rtree: self.disk.stats(),
            key_index: key.map(|k| k.0),
            um_entries: self.um.as_ref().map_or(0, |u| u.len() as u64),
            um_max_entries: self.um.as_ref().map_or(0, |u| u.max_len() as u64),
            cleaned: self.cleaned,
            memory_splits: self.memory.splits(),
            key_index_lookups: key.map_or(0, |k| k.1),
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Inserts a new object.
    pub fn insert(&mut self, oid: u64, at: Point) -> Result<()> {
        let ts = self.tick();
        match self.cfg.strategy {
            Strategy::Eager => {
                self.memory.insert(SpatialEntry::new(at, oid, ts));
                if let Some(p) = &mut self.primary_index {
                    p.upsert(oid, at)?;
                }
            }
            Strategy::Validation => {
                self.memory.insert(SpatialEntry::new(at, oid, ts));
                self.primary_key_index
                    .as_mut()
                    .expect("validation has a key index")
                    .upsert(oid, ts)?;
            }
            Strategy::UpdateMemo(_) => {
                let leaf = self.memory.insert(SpatialEntry::new(at, oid, ts));
                self.um
                    .as_ref()
                    .expect("UM strategy has a memo")
                    .record_insert(oid, ts);
                self.after_memory_insert(leaf);
            }
        }
        self.maybe_flush()
    }

    /// Moves an object. `from` is its old location as the stream knows it; only Eager uses it (and
    /// only when it does not look the old location up itself).
    pub fn update(&mut self, oid: u64, from: Option<Point>, to: Point) -> Result<()> {
        let ts = self.tick();
        match self.cfg.strategy {
            Strategy::Eager => {
                self.eager_retire_old(oid, from, Some(to))?;
                self.memory.insert(SpatialEntry::new(to, oid, ts));
            }
            Strategy::Validation => {
                self.memory.insert(SpatialEntry::new(to, oid, ts));
                self.primary_key_index
                    .as_mut()
                    .expect("validation has a key index")
                    .upsert(oid, ts)?;
            }
            Strategy::UpdateMemo(_) => {
                // Algorithm 6: insert the new entry, then put-if-absent / CILS + count in the UM.
                let leaf = self.memory.insert(SpatialEntry::new(to, oid, ts));
                self.um
                    .as_ref()
                    .expect("UM strategy has a memo")
                    .record_obsolete(oid, ts);
                self.after_memory_insert(leaf);
            }
        }
        self.maybe_flush()
    }

    /// Deletes an object. `from` as in [`Self::update`].
    pub fn delete(&mut self, oid: u64, from: Option<Point>) -> Result<()> {
        let ts = self.tick();
        match self.cfg.strategy {
            Strategy::Eager => self.eager_retire_old(oid, from, None)?,
            Strategy::Validation => {
                self.primary_key_index
                    .as_mut()
                    .expect("validation has a key index")
                    .delete(oid)?;
            }
            Strategy::UpdateMemo(_) => {
                // Only the UM changes: every entry of the object is now obsolete.
                self.um
                    .as_ref()
                    .expect("UM strategy has a memo")
                    .record_obsolete(oid, ts);
            }
        }
        self.maybe_flush()
    }

    /// Eager's first half of an update (`new` = the new location) or delete (`new` = None): find
    /// the old location (from the stream, or from the primary index, which then records `new`) and
    /// delete the old entry as AsterixDB's LSM R-tree does: remove it from the memory R-tree if it is
    /// there, and insert the deleted tuple into the memory component's deleted-key B+-tree in any
    /// case (it shadows the tuple in older components).
    fn eager_retire_old(&mut self, oid: u64, from: Option<Point>, new: Option<Point>) -> Result<()> {
        let old = match &mut self.primary_index {
            Some(p) => {
                let old = p.get(oid)?;
                match new {
                    Some(to) => p.upsert(oid, to)?,
                    None => p.delete(oid)?,
                }
                old
            }
            None => Some(from.ok_or_else(|| {
                Error::Config(format!(
                    "Eager needs the old location of object {oid} to update or delete it"
                ))
            })?),
        };
        if let Some(old) = old {
            if self.memory.remove(old, oid).is_some() {
                self.cleaned.memory_deletes += 1;
            }
            self.memory_deleted
                .insert((oid, old.x.to_bits(), old.y.to_bits()));
        }
        Ok(())
    }

    /// Buffered and Vacuum Cleaning after an entry entered memory leaf `leaf` (Sections 4.1-4.2).
    /// The paper counts updates; here every entry put into the memory R-tree counts, inserts of new
    /// objects included, since in the LSM RUM-tree an update is an insert of the new version and a
    /// stream's inserts are only each object's first record.
    fn after_memory_insert(&mut self, leaf: NodeId) {
        let um = self.um.as_ref().expect("UM strategy has a memo");
        // Under concurrent ingestion the leaf may have been split away or unlinked meanwhile.
        let live = self.memory.is_live_leaf(leaf);
        if self.switches.buffered
            && live
            && self.memory.bump_update_counter(leaf) >= self.cfg.buffered_threshold
        {
            // Algorithm 4 on the leaf whose counter hit the threshold.
            let n = self
                .memory
                .clean_leaf(leaf, |e| !um.is_obsolete(e.oid, e.ts), |e| um.release(e.oid));
            self.cleaned.buffered += n as u64;
        }
        if self.switches.vacuum {
            self.vacuum_counter += 1;
            if self.vacuum_counter >= self.cfg.vacuum_threshold {
                self.vacuum_counter = 0;
                if let Some(next) = self.memory.next_leaf(self.vacuum_cursor) {
                    let n =
                        self.memory
                            .clean_leaf(next, |e| !um.is_obsolete(e.oid, e.ts), |e| um.release(e.oid));
                    self.cleaned.vacuum += n as u64;
                    self.vacuum_cursor = Some(next);
                }
            }
        }
    }

    /// UM strategies only, for concurrent ingestion ([`super::ConcurrentRumTree`]): puts an entry
    /// stamped by the caller into the memory R-tree and returns its leaf. The caller updates the UM
    /// (outside any lock) and then calls [`Self::finish_external_insert`].
    pub(crate) fn insert_external(&mut self, e: SpatialEntry) -> NodeId {
        debug_assert!(self.um.is_some());
        self.clock = self.clock.max(e.ts);
        self.memory.insert(e)
    }

    /// Buffered/Vacuum Cleaning and the flush check after [`Self::insert_external`].
    pub(crate) fn finish_external_insert(&mut self, leaf: NodeId) -> Result<()> {
        self.after_memory_insert(leaf);
        self.maybe_flush()
    }

    /// Checks the Update Memo against the index's contents (UM strategies): every UM entry's count
    /// equals the number of its object's entries older than its timestamp (its obsolete entries),
    /// no entry is newer than the UM's timestamp, and an object without a UM entry has at most one
    /// entry. Reads every disk component. Returns a description of the first violation.
    pub fn audit_update_memo(&self) -> Result<std::result::Result<(), String>> {
        let Some(um) = &self.um else { return Ok(Ok(())) };
        let mut per_object: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        self.memory
            .for_each(|e| per_object.entry(e.oid).or_default().push(e.ts));
        let device = self.cache.device().clone();
        for c in self.disk.components() {
            for e in c.rtree.scan(device.as_ref())? {
                per_object.entry(e.oid).or_default().push(e.ts);
            }
        }
        for (oid, state) in um.snapshot() {
            let stamps = per_object.get(&oid).map(Vec::as_slice).unwrap_or(&[]);
            let obsolete = stamps.iter().filter(|&&t| t < state.ts).count() as u64;
            if obsolete != state.cnt {
                return Ok(Err(format!(
                    "object {oid}: UM says ts {} cnt {}, but the index holds {obsolete} older entries ({stamps:?})",
                    state.ts, state.cnt
                )));
            }
            if let Some(t) = stamps.iter().find(|&&t| t > state.ts) {
                return Ok(Err(format!(
                    "object {oid}: entry stamped {t} is newer than the UM's ts {}",
                    state.ts
                )));
            }
        }
        for (oid, stamps) in &per_object {
            if stamps.len() > 1 && um.get(*oid).is_none() {
                return Ok(Err(format!(
                    "object {oid} has {} entries but no UM entry",
                    stamps.len()
                )));
            }
        }
        Ok(Ok(()))
    }

    fn maybe_flush(&mut self) -> Result<()> {
        if self.memory_pages() > self.cfg.memory_budget_pages {
            self.flush()?;
        }
        Ok(())
    }

    fn hilbert_sort(&self, entries: &mut [SpatialEntry]) {
        let h = self.hilbert;
        entries.sort_by_cached_key(|e| (h.key(e.point), e.oid, e.ts));
    }

    /// Flushes the memory component into a new disk component (sorted in Hilbert order, cleaned
    /// first under Clean Upon Flush), flushes the key index with it, then merges as the policy asks.
    pub fn flush(&mut self) -> Result<()> {
        if self.memory.is_empty() && self.memory_deleted.is_empty() {
            return Ok(());
        }
        let start = Instant::now();
        let mut entries = self.memory.drain();
        self.vacuum_cursor = None;
        self.vacuum_counter = 0;
        if self.switches.flush {
            // Section 4.3: drop obsolete entries while ordering them for the flush.
            let um = self.um.as_ref().expect("UM strategy has a memo");
            self.cleaned.flush += drop_obsolete(um, &mut entries);
        }
        self.hilbert_sort(&mut entries);
        let device = self.cache.device().clone();
        let rtree = DiskRTree::bulk_load(device.as_ref(), entries.into_iter())?;
        let deleted = if self.memory_deleted.is_empty() {
            None
        } else {
            // On disk one key per object suffices: an Eager update or delete kills every older version
            // of the object, whatever its location (a deviation from AsterixDB's per-tuple keys that
            // only makes the disk deleted-key trees smaller).
            let tuples = std::mem::take(&mut self.memory_deleted);
            let mut keys: Vec<u64> = tuples.into_iter().map(|(oid, _, _)| oid).collect();
            keys.dedup();
            Some(BTreeComponent::bulk_load(
                device.as_ref(),
                keys.into_iter().map(|k| (k, ())),
                self.cfg.bloom_fp,
            )?)
        };
        self.disk
            .add_flushed(SpatialComponent { rtree, deleted }, start.elapsed());
        if let Some(k) = &mut self.primary_key_index {
            k.flush()?;
        }
        if let Some(k) = &mut self.primary_index {
            k.flush()?;
        }
        self.merge_while_needed()
    }

    fn merge_while_needed(&mut self) -> Result<()> {
        // The merge needs `&mut self` (UM, key index, counters) while the components are being
        // merged, so they are moved out for the duration and put back afterwards.
        let mut disk = std::mem::replace(
            &mut self.disk,
            DiskComponents::new(MergePolicyConfig::None.build()),
        );
        let result = disk.merge_while_needed(|parts, includes_oldest| self.merge(parts, includes_oldest));
        self.disk = disk;
        result
    }

    /// Merges components (newest first) into one.
    fn merge(&mut self, parts: Vec<SpatialComponent>, includes_oldest: bool) -> Result<SpatialComponent> {
        let device = self.cache.device().clone();
        let mut deleted_keys: BTreeSet<u64> = BTreeSet::new();
        let mut entries: Vec<SpatialEntry> = Vec::new();
        match self.cfg.strategy {
            Strategy::Eager => {
                // Oldest first: a component's deleted keys annihilate the matter of older ones in the
                // merge; those that find nothing target older components and are kept.
                let mut live: BTreeMap<u64, SpatialEntry> = BTreeMap::new();
                for part in parts.iter().rev() {
                    if let Some(d) = &part.deleted {
                        for (oid, ()) in d.scan(device.as_ref())? {
                            if live.remove(&oid).is_some() {
                                self.cleaned.annihilated += 1;
                            } else {
                                deleted_keys.insert(oid);
                            }
                        }
                    }
                    for e in part.rtree.scan(device.as_ref())? {
                        live.insert(e.oid, e);
                    }
                }
                if includes_oldest {
                    deleted_keys.clear();
                }
                entries.extend(live.into_values());
            }
            Strategy::Validation => {
                for part in &parts {
                    entries.extend(part.rtree.scan(device.as_ref())?);
                }
                if self.cfg.validation_merge_repair {
                    let key_index = self
                        .primary_key_index
                        .as_mut()
                        .expect("validation has a key index");
                    let before = entries.len();
                    let mut keep = Vec::with_capacity(entries.len());
                    for e in entries {
                        if key_index.get(e.oid)? == Some(e.ts) {
                            keep.push(e);
                        }
                    }
                    entries = keep;
                    self.cleaned.merge_repair += (before - entries.len()) as u64;
                }
            }
            Strategy::UpdateMemo(sw) => {
                for part in &parts {
                    entries.extend(part.rtree.scan(device.as_ref())?);
                }
                if sw.merge {
                    // Section 4.4: validate every entry on the fly while bulk-loading the merge.
                    let um = self.um.as_ref().expect("UM strategy has a memo");
                    self.cleaned.merge += drop_obsolete(um, &mut entries);
                }
            }
        }
        self.hilbert_sort(&mut entries);
        let rtree = DiskRTree::bulk_load(device.as_ref(), entries.into_iter())?;
        let deleted = if deleted_keys.is_empty() {
            None
        } else {
            Some(BTreeComponent::bulk_load(
                device.as_ref(),
                deleted_keys.into_iter().map(|k| (k, ())),
                self.cfg.bloom_fp,
            )?)
        };
        for part in parts {
            part.destroy(&self.cache);
        }
        Ok(SpatialComponent { rtree, deleted })
    }

    /// A range query: candidates from the memory R-tree and every disk R-tree, validated by the
    /// strategy (Algorithm 3 for the UM).
    pub fn query(&self, rect: &Rect) -> Result<QueryOutcome> {
        let mut out = QueryOutcome::default();
        let mut candidates: Vec<SpatialEntry> = Vec::new();
        // Memory entries first (component 0), then each disk component; remember where each
        // component's candidates start for Eager's deleted-key checks.
        self.memory.search(rect, |e| candidates.push(*e));
        let mut bounds = vec![candidates.len()];
        for c in self.disk.components() {
            c.rtree.search(&self.cache, rect, |e| candidates.push(*e))?;
            bounds.push(candidates.len());
        }
        out.candidates = candidates.len() as u64;
        match self.cfg.strategy {
            Strategy::Eager => {
                let comps = self.disk.components();
                out.results.extend_from_slice(&candidates[..bounds[0]]);
                for i in 0..comps.len() {
                    'cand: for e in &candidates[bounds[i]..bounds[i + 1]] {
                        out.validation_lookups += 1;
                        if self
                            .memory_deleted
                            .range((e.oid, 0, 0)..=(e.oid, u64::MAX, u64::MAX))
                            .next()
                            .is_some()
                        {
                            continue;
                        }
                        for newer in &comps[..i] {
                            if let Some(d) = &newer.deleted {
                                out.validation_lookups += 1;
                                if d.get(&self.cache, e.oid)?.is_some() {
                                    continue 'cand;
                                }
                            }
                        }
                        out.results.push(*e);
                    }
                }
            }
            Strategy::Validation => {
                let key_index = self
                    .primary_key_index
                    .as_ref()
                    .expect("validation has a key index");
                for e in candidates {
                    out.validation_lookups += 1;
                    if key_index.peek(e.oid)? == Some(e.ts) {
                        out.results.push(e);
                    }
                }
            }
            Strategy::UpdateMemo(_) => {
                let um = self.um.as_ref().expect("UM strategy has a memo");
                for e in candidates {
                    out.validation_lookups += 1;
                    if !um.is_obsolete(e.oid, e.ts) {
                        out.results.push(e);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Algorithm 4's test applied to a batch (Clean Upon Flush and Clean Upon Merge): drops every
/// obsolete entry and releases it in the UM; returns how many were dropped.
fn drop_obsolete(um: &UpdateMemo, entries: &mut Vec<SpatialEntry>) -> u64 {
    let before = entries.len();
    entries.retain(|e| {
        let obsolete = um.is_obsolete(e.oid, e.ts);
        if obsolete {
            um.release(e.oid);
        }
        !obsolete
    });
    (before - entries.len()) as u64
}

impl Drop for LsmRTree {
    fn drop(&mut self) {
        for c in self.disk.take_all() {
            c.destroy(&self.cache);
        }
    }
}
