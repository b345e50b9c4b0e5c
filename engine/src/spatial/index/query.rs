//! Range queries of the LSM R-tree: candidates from the memory R-tree and every disk R-tree, each
//! validated by the strategy (Algorithm 3 for the Update Memo).

use super::LsmRTree;
use crate::geom::Rect;
use crate::rtree::SpatialEntry;
use crate::spatial::maintenance::Source;
use crate::Result;
use std::sync::Mutex;

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

/// The buffers a query gathers its candidates (and the newer components' antimatter keys) in,
/// kept by the index for the next query: that query then gathers into buffers already grown to
/// the size the last one needed, instead of growing a vector and a hash set from empty. Growth
/// from empty costs copies and rehashes (8% of a query-heavy UM cell's time in `rum-mixed`, most
/// of an Eager cell's) and, for a buffer of more than a few hundred KiB, memory the allocator
/// maps afresh each time: a paper-scale `rum-mixed` cell under UM whose queries gathered 697,352
/// candidates each (22 MB) spent a third of its CPU time on 630 million minor page faults while
/// only buffers of up to 2^18 candidates were kept.
///
/// The kept bytes would sit beside a flush's and a merge's, which set the index's peak memory,
/// so [`LsmRTree::flush`] frees them first (see [`QueryScratch::release`]); between flushes they
/// hold no more than the largest query since the last flush held while it ran.
#[derive(Default)]
pub(super) struct QueryScratch {
    /// One set of buffers per query that ran at once (one, unless threads query together).
    idle: Mutex<Vec<Scratch>>,
}

impl QueryScratch {
    fn take(&self) -> Scratch {
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default()
    }

    fn give_back(&self, mut s: Scratch) {
        s.candidates.clear();
        s.shadow.killed.clear();
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(s);
    }

    /// Frees the kept buffers (no query is running: the index is borrowed mutably).
    pub(super) fn release(&mut self) {
        let idle = self.idle.get_mut().unwrap_or_else(|e| e.into_inner());
        *idle = Vec::new();
    }
}

/// The allocations one query uses.
#[derive(Default)]
struct Scratch {
    candidates: Vec<SpatialEntry>,
    shadow: Shadow,
}

impl LsmRTree {
    /// A range query: candidates from the memory R-tree and every disk R-tree (newest first), then
    /// each candidate validated by the strategy, in that order.
    pub fn query(&self, rect: &Rect) -> Result<QueryOutcome> {
        let mut scratch = self.scratch.take();
        let out = self.query_into(rect, &mut scratch.candidates, &mut scratch.shadow);
        self.scratch.give_back(scratch);
        out
    }

    /// The body of [`LsmRTree::query`], gathering the candidates in `candidates` and the newer
    /// components' antimatter in `shadow` (both empty).
    fn query_into(
        &self,
        rect: &Rect,
        candidates: &mut Vec<SpatialEntry>,
        shadow: &mut Shadow,
    ) -> Result<QueryOutcome> {
        let mut out = QueryOutcome::default();
        // Memory entries first, then each disk component; remember where each component's
        // candidates start, since validation may depend on the components newer than a candidate's.
        self.memory.search(rect, |e| candidates.push(*e));
        let mut bounds = vec![candidates.len()];
        let comps: Vec<_> = self.store.runs().map(|(_, c)| c).collect();
        for c in &comps {
            c.rtree.search(&self.cache, rect, |e| candidates.push(*e))?;
            bounds.push(candidates.len());
        }
        out.candidates = candidates.len() as u64;
        let m = self.maintenance.as_ref();
        for e in &candidates[..bounds[0]] {
            if m.is_fresh(&self.cache, Source::Memory, e, &mut out.validation_lookups)? {
                out.results.push(*e);
            }
        }
        // The index of the oldest component's window (none without disk components).
        let last = bounds.len().saturating_sub(2);
        for (i, w) in bounds.windows(2).enumerate() {
            let source = Source::Disk { newer: &comps[..i] };
            let component = &candidates[w[0]..w[1]];
            for e in component {
                if shadow.hides(e) {
                    continue;
                }
                if m.is_fresh(&self.cache, source, e, &mut out.validation_lookups)? {
                    out.results.push(*e);
                }
            }
            // The oldest component's antimatter would hide nothing: no component is older.
            if i < last {
                shadow.add(component);
            }
        }
        Ok(out)
    }
}

/// The antimatter entries of the disk components newer than the one being read, as AsterixDB's
/// LSM search cursor (`LSMIndexSearchCursor.checkPriorityQueue`) applies them: an antimatter entry
/// is never returned, and an entry of an older component with the same point, object and stamp is
/// dropped with it, both before any validation. Empty (and free) unless a strategy writes
/// antimatter entries; antimatter and its target share a point, so a range holding one holds both.
#[derive(Default)]
struct Shadow {
    /// (oid, stamp) of every antimatter entry seen in a newer component.
    killed: rustc_hash::FxHashSet<(u64, u64)>,
}

impl Shadow {
    /// Whether `e` is antimatter or shadowed by the antimatter of a newer component.
    fn hides(&self, e: &SpatialEntry) -> bool {
        e.is_antimatter() || (!self.killed.is_empty() && self.killed.contains(&(e.oid, e.stamp())))
    }

    /// Adds a component's antimatter entries, once its own entries were checked (the set grows
    /// once, to their count, rather than by doubling).
    fn add(&mut self, entries: &[SpatialEntry]) {
        let antimatter = || entries.iter().filter(|e| e.is_antimatter());
        self.killed.reserve(antimatter().count());
        self.killed.extend(antimatter().map(|e| (e.oid, e.stamp())));
    }
}

impl LsmRTree {
    /// Every fresh entry of the index, passed to `f` one at a time: what [`LsmRTree::query`] over
    /// the whole plane returns, in the same order of sources (memory, then each disk component
    /// newest first) and with the same validation, without holding the candidates. A query holds
    /// every candidate at once (32 B each, every entry of the index for the whole plane); this
    /// holds none, so checking what an ingest of any size left needs memory for the fresh entries
    /// only. The disk components' leaves are read straight from the device, in packing order,
    /// bypassing the buffer cache (the leaf reads neither enter it nor count among its accesses;
    /// the device counts them); validation probes go through it as a query's do. Returns the
    /// candidates seen. On `Err`, entries already passed to `f` must be discarded.
    pub fn for_each_fresh(&self, mut f: impl FnMut(&SpatialEntry)) -> Result<u64> {
        let m = self.maintenance.as_ref();
        let (mut candidates, mut lookups) = (0u64, 0u64);
        let mut failed = None;
        let mut visit = |source: Source<'_>, e: &SpatialEntry, hidden: bool| {
            candidates += 1;
            if failed.is_some() || hidden {
                return;
            }
            match m.is_fresh(&self.cache, source, e, &mut lookups) {
                Ok(true) => f(e),
                Ok(false) => {}
                Err(err) => failed = Some(err),
            }
        };
        self.memory.for_each(|e| visit(Source::Memory, e, false));
        let comps: Vec<_> = self.store.runs().map(|(_, c)| c).collect();
        let device = self.cache.device().clone();
        let mut shadow = Shadow::default();
        for (i, c) in comps.iter().enumerate() {
            let source = Source::Disk { newer: &comps[..i] };
            let mut tombstones = Vec::new();
            c.rtree.scan_with(device.as_ref(), |e| {
                if e.is_antimatter() {
                    tombstones.push(*e);
                }
                visit(source, e, shadow.hides(e));
            })?;
            shadow.add(&tombstones);
        }
        match failed {
            Some(err) => Err(err),
            None => Ok(candidates),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::BufferCache;
    use crate::geom::Point;
    use crate::spatial::SpatialConfig;
    use crate::storage::{Device, MemDevice};
    use std::sync::Arc;

    fn kept(index: &mut LsmRTree) -> Vec<usize> {
        let idle = index.scratch.idle.get_mut().unwrap();
        idle.iter().map(|s| s.candidates.capacity()).collect()
    }

    /// A query leaves its grown buffer for the next (empty, whatever its size), a flush frees it,
    /// and a query through reused buffers answers as one through fresh ones.
    #[test]
    fn query_buffers_are_kept_until_a_flush() {
        let device: Arc<dyn Device> = Arc::new(MemDevice::new(256));
        let cache = Arc::new(BufferCache::new(device, 64));
        let extent = Rect::new(0.0, 0.0, 100.0, 100.0);
        let cfg = SpatialConfig::new("UM".parse().unwrap(), extent, 1 << 20);
        let mut index = LsmRTree::new(cfg, cache).unwrap();
        let at = |oid: u64| Point::new((oid % 40) as f64 * 2.5, (oid / 40) as f64 * 2.0);
        for oid in 0..2_000u64 {
            index.insert(oid, at(oid)).unwrap();
        }
        assert!(kept(&mut index).is_empty());
        let all = index.query(&extent).unwrap();
        assert_eq!(all.results.len(), 2_000);
        let grown = kept(&mut index);
        assert_eq!(grown.len(), 1);
        assert!(grown[0] >= 2_000, "{grown:?}");
        let small = Rect::new(0.0, 0.0, 9.9, 9.9);
        let inside = (0..2_000).filter(|&oid| small.contains_point(at(oid))).count();
        assert_eq!(inside, 20);
        let reused = index.query(&small).unwrap();
        assert_eq!(kept(&mut index), grown, "the buffer stays as grown");
        index.scratch.release();
        let fresh = index.query(&small).unwrap();
        assert_eq!(reused, fresh);
        assert_eq!(fresh.results.len(), inside);
        index.flush().unwrap();
        assert!(kept(&mut index).is_empty(), "a flush frees the kept buffers");
        let oids = |o: &QueryOutcome| {
            let mut v: Vec<u64> = o.results.iter().map(|e| e.oid).collect();
            v.sort_unstable();
            v
        };
        assert_eq!(oids(&index.query(&small).unwrap()), oids(&fresh));
    }
}
