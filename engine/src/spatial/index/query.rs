//! Range queries of the LSM R-tree: candidates from the memory R-tree and every disk R-tree, each
//! validated by the strategy (Algorithm 3 for the Update Memo).

use super::LsmRTree;
use crate::geom::Rect;
use crate::rtree::SpatialEntry;
use crate::spatial::maintenance::Source;
use crate::Result;

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

/// Candidates (and antimatter keys) a query's buffers keep room for once the query is done (8 MiB
/// of candidates, about as much for the keys' set): the next query on the thread then gathers them
/// without growing a vector and a hash set from empty (the growth's copies and rehashes were 8% of
/// a query-heavy UM cell's time in `rum-mixed`, and most of an Eager cell's). A larger buffer, left
/// by a larger query, is freed rather than held: a query that large pays for its growth many times
/// over in validation, and the held bytes would sit beside every later flush and merge (with room
/// for 2^20 candidates, a paper-scale `rum-mixed` cell under Eager peaked 92 MiB higher).
const KEPT_CANDIDATES: usize = 1 << 18;

/// The allocations a query reuses from the last query on its thread.
#[derive(Default)]
struct Scratch {
    candidates: Vec<SpatialEntry>,
    shadow: Shadow,
}

thread_local! {
    /// The last query's buffers on this thread (see [`LsmRTree::query`]); `None` while a query
    /// holds them.
    static SCRATCH: std::cell::Cell<Option<Scratch>> = const { std::cell::Cell::new(None) };
}

impl LsmRTree {
    /// A range query: candidates from the memory R-tree and every disk R-tree (newest first), then
    /// each candidate validated by the strategy, in that order.
    pub fn query(&self, rect: &Rect) -> Result<QueryOutcome> {
        // The buffers are kept on the thread between queries; they are taken out while a query
        // runs, so anything that queried meanwhile on the same thread would start from empty ones.
        let mut scratch = SCRATCH.take().unwrap_or_default();
        scratch.candidates.clear();
        scratch.shadow.killed.clear();
        let out = self.query_into(rect, &mut scratch.candidates, &mut scratch.shadow);
        if scratch.candidates.capacity() <= KEPT_CANDIDATES
            && scratch.shadow.killed.capacity() <= KEPT_CANDIDATES
        {
            SCRATCH.set(Some(scratch));
        }
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
