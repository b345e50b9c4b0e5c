//! One disk component of the LSM R-tree: a packed R-tree and, when the strategy writes antimatter
//! (Eager's deleted keys), a B+-tree of the oids it deletes from older components. [`SpatialRuns`]
//! is how the framework's executor ([`crate::lsm::RunStore`]) builds, scans and frees them, and
//! [`SpatialMerger`] how it merges them through the strategy.

use super::maintenance::{Cleanup, Maintenance};
use crate::btree::BTreeComponent;
use crate::cache::{BufferCache, PageSink};
use crate::geom::HilbertCurve;
use crate::lsm::merge::EntryStream;
use crate::lsm::{
    BlockKeys, BlockSink, Extent, KeyRange, MergePlan, Merger, RunFormat, RunInfo, WrittenBlock,
};
use crate::rtree::{DiskRTree, SpatialEntry};
use crate::storage::{Device, PageId};
use crate::{Error, Result};
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

/// A packed R-tree and its optional antimatter B+-tree.
pub struct SpatialComponent {
    /// The packed R-tree of the component's entries.
    pub rtree: DiskRTree,
    /// The antimatter B+-tree: object ids whose entries in older components are obsolete (Eager's
    /// deleted keys), if the strategy wrote any.
    pub antimatter: Option<BTreeComponent<()>>,
    /// The R-tree's leaves with the first and last keys each holds, in leaf (key) order, noted as
    /// they were written: what a cache warm-up policy matches its predictions against.
    pub leaves: Vec<BlockKeys<SpatialKey>>,
}

impl SpatialComponent {
    /// Bulk-loads the antimatter B+-tree of `oids` (ascending), or none if there are none.
    pub fn build_antimatter(
        device: &dyn Device,
        oids: Vec<u64>,
        bloom_fp: Option<f64>,
    ) -> Result<Option<BTreeComponent<()>>> {
        Self::build_antimatter_into(device, oids, bloom_fp)
    }

    /// [`SpatialComponent::build_antimatter`] onto any page sink.
    fn build_antimatter_into<S: PageSink + ?Sized>(
        device: &S,
        oids: Vec<u64>,
        bloom_fp: Option<f64>,
    ) -> Result<Option<BTreeComponent<()>>> {
        if oids.is_empty() {
            return Ok(None);
        }
        Ok(Some(BTreeComponent::bulk_load(
            device,
            oids.into_iter().map(|k| (k, ())),
            bloom_fp,
        )?))
    }

    /// The antimatter's oids, ascending (empty if there is none).
    pub fn scan_antimatter(&self, device: &dyn Device) -> Result<Vec<u64>> {
        match &self.antimatter {
            Some(d) => Ok(d.scan(device)?.into_iter().map(|(oid, ())| oid).collect()),
            None => Ok(Vec::new()),
        }
    }

    /// Frees the pages of the R-tree and of the antimatter B+-tree.
    pub fn destroy(self, cache: &BufferCache) {
        self.rtree.destroy(cache);
        if let Some(d) = self.antimatter {
            d.destroy(cache);
        }
    }
}

/// An entry's place in a component: its Hilbert key, then oid and timestamp (unique per entry), the
/// order bulk loads pack entries in.
pub(crate) type SpatialKey = (u64, u64, u64);

/// How the LSM R-tree's components are built: entries in Hilbert order bulk-loaded into a packed
/// R-tree, antimatter into a B+-tree beside it.
pub(crate) struct SpatialRuns {
    cache: Arc<BufferCache>,
    hilbert: HilbertCurve,
    bloom_fp: Option<f64>,
}

impl SpatialRuns {
    pub fn new(cache: Arc<BufferCache>, hilbert: HilbertCurve, bloom_fp: Option<f64>) -> Self {
        SpatialRuns {
            cache,
            hilbert,
            bloom_fp,
        }
    }

    fn device(&self) -> &dyn Device {
        self.cache.device().as_ref()
    }

    pub fn key(&self, e: &SpatialEntry) -> SpatialKey {
        (self.hilbert.key(e.point), e.oid, e.ts)
    }

    /// Sorts entries along the Hilbert curve (ties by oid and timestamp).
    pub fn hilbert_sort(&self, entries: &mut [SpatialEntry]) {
        crate::rtree::hilbert_sort(&self.hilbert, entries);
    }

    /// Every entry of `run`'s R-tree in leaf order, read straight from the device, checked to be
    /// in strictly increasing [`SpatialRuns::key`] order as every component is written: a leaf
    /// that passes its page checks but holds another leaf's entries (a misdirected or stale page)
    /// is [`Error::Corrupt`], not merged (where it would release Update Memo counts twice).
    pub fn scan_in_order(&self, run: &SpatialComponent) -> Result<Vec<SpatialEntry>> {
        let entries = run.rtree.scan(self.device())?;
        let mut prev = None;
        for e in &entries {
            let key = self.key(e);
            if prev.is_some_and(|p| p >= key) {
                return Err(Error::Corrupt {
                    page: run.rtree.first_page(),
                    reason: format!(
                        "R-tree leaves out of Hilbert order: object {} (timestamp {}) after {:?}",
                        e.oid, e.ts, prev
                    ),
                });
            }
            prev = Some(key);
        }
        Ok(entries)
    }

    /// Builds a component of `entries` (already in Hilbert order) and `antimatter` (ascending
    /// oids), telling `written` of every page as it is written. On error nothing stays allocated.
    pub fn build_component(
        &self,
        entries: Vec<SpatialEntry>,
        antimatter: Vec<u64>,
        written: &mut BlockSink<'_, SpatialKey>,
    ) -> Result<SpatialComponent> {
        self.build_component_from(entries.into_iter(), antimatter, written)
    }

    /// [`SpatialRuns::build_component`] from entries as they come (in Hilbert order): the packed
    /// R-tree writes its leaves as it goes, so a merge never holds its output besides its inputs.
    /// Pages are told in the order written: the R-tree's leaves (with their keys), its internal
    /// levels, then the antimatter's pages (the last two without keys).
    fn build_component_from(
        &self,
        entries: impl ExactSizeIterator<Item = SpatialEntry>,
        antimatter: Vec<u64>,
        written: &mut BlockSink<'_, SpatialKey>,
    ) -> Result<SpatialComponent> {
        let sink = Reporting {
            runs: self,
            leaves: RefCell::new(Vec::new()),
            written: RefCell::new(written),
            keyed: true,
        };
        let rtree = DiskRTree::bulk_load(&sink, entries)?;
        let sink = Reporting { keyed: false, ..sink };
        match SpatialComponent::build_antimatter_into(&sink, antimatter, self.bloom_fp) {
            Ok(antimatter) => Ok(SpatialComponent {
                rtree,
                antimatter,
                leaves: sink.leaves.into_inner(),
            }),
            Err(e) => {
                rtree.destroy(&self.cache);
                Err(e)
            }
        }
    }

    /// The first and last keys of a written R-tree leaf page; `None` for an internal node.
    fn leaf_keys(&self, page: &[u8]) -> Option<KeyRange<SpatialKey>> {
        let (first, last) = DiskRTree::leaf_first_last(page)?;
        let (a, b) = (self.key(&first), self.key(&last));
        // Entries arrive in key order, so these are the leaf's bounds (ordered anyway, should a
        // caller break that contract).
        Some(KeyRange::new(a.min(b), a.max(b)))
    }
}

/// The device as a component's bulk loads see it, telling the executor's sink of each page written
/// (and noting the R-tree's leaves with their keys while `keyed`).
struct Reporting<'s, 'w, 'b> {
    runs: &'s SpatialRuns,
    leaves: RefCell<Vec<BlockKeys<SpatialKey>>>,
    written: RefCell<&'w mut BlockSink<'b, SpatialKey>>,
    keyed: bool,
}

impl PageSink for Reporting<'_, '_, '_> {
    fn page_size(&self) -> usize {
        self.runs.device().page_size()
    }

    fn allocate(&self, count: u64) -> PageId {
        self.runs.device().allocate(count)
    }

    fn free(&self, first: PageId, count: u64) {
        self.runs.device().free(first, count)
    }

    fn write_page(&self, id: PageId, data: &[u8]) -> Result<()> {
        self.runs.device().write_page(id, data)?;
        let keys = if self.keyed {
            self.runs.leaf_keys(data)
        } else {
            None
        };
        if let Some(keys) = keys {
            self.leaves.borrow_mut().push(BlockKeys { page: id, keys });
        }
        (self.written.borrow_mut())(&WrittenBlock {
            page: id,
            keys,
            bytes: data,
        })
    }
}

impl RunFormat for SpatialRuns {
    type Key = SpatialKey;
    type Value = SpatialEntry;
    type Run = SpatialComponent;

    /// A component without antimatter.
    fn build(
        &self,
        entries: Vec<(SpatialKey, SpatialEntry)>,
        written: &mut BlockSink<'_, SpatialKey>,
    ) -> Result<SpatialComponent> {
        self.build_component(entries.into_iter().map(|(_, e)| e).collect(), Vec::new(), written)
    }

    /// The R-tree's entries in leaf order (Hilbert order), read straight from the device.
    fn scan<'a>(&'a self, run: &'a SpatialComponent) -> Result<EntryStream<'a, SpatialKey, SpatialEntry>> {
        let entries = self.scan_in_order(run)?;
        Ok(Box::new(entries.into_iter().map(move |e| Ok((self.key(&e), e)))))
    }

    fn destroy(&self, run: SpatialComponent) {
        run.destroy(&self.cache);
    }

    /// Both extents; the pages (what the prefix policy compares) are the R-tree's and the
    /// antimatter's together, the entries the R-tree's. Components overlap in space, so no key
    /// range is reported: every query consults every component.
    fn describe(&self, run: &SpatialComponent) -> RunInfo<SpatialKey> {
        let mut extents = vec![Extent {
            first: run.rtree.first_page(),
            pages: run.rtree.pages(),
        }];
        if let Some(d) = &run.antimatter {
            extents.push(Extent {
                first: d.first_page(),
                pages: d.pages(),
            });
        }
        RunInfo {
            pages: extents.iter().map(|x| x.pages).sum(),
            entries: run.rtree.entries(),
            keys: None,
            extents,
        }
    }

    /// The R-tree's leaves with their Hilbert key intervals.
    fn blocks(&self, run: &SpatialComponent) -> Vec<BlockKeys<SpatialKey>> {
        run.leaves.clone()
    }

    /// Full R-tree leaves of `pages` pages.
    fn entries_per_run(&self, pages: u64) -> u64 {
        DiskRTree::leaf_capacity(self.cache.page_size()) as u64 * pages
    }
}

/// The LSM R-tree's merge: every entry of the inputs (newest input first, each in scan order)
/// passes the strategy's merge filter (Eager's annihilation, Validation's repair, Clean Upon
/// Merge); the survivors, merged in Hilbert order (each input is sorted already), are bulk-loaded
/// with the antimatter the filter keeps. What the filter decided beside the output is checked
/// before the output is built ([`Maintenance::check`]: a merge meeting a garbled entry fails with
/// nothing changed) and committed only once the executor has installed it ([`Merger::committed`]).
pub(crate) struct SpatialMerger<'a> {
    pub maintenance: &'a mut dyn Maintenance,
    pending: Option<Cleanup>,
    /// A commit that failed (only where the check before it would have), for
    /// [`Self::into_result`].
    failed: Option<crate::Error>,
}

impl<'a> SpatialMerger<'a> {
    pub fn new(maintenance: &'a mut dyn Maintenance) -> Self {
        SpatialMerger {
            maintenance,
            pending: None,
            failed: None,
        }
    }

    /// The first commit error of the merges run, if any.
    pub fn into_result(self) -> Result<()> {
        self.failed.map_or(Ok(()), Err)
    }
}

impl Merger<SpatialRuns> for SpatialMerger<'_> {
    fn merge(
        &mut self,
        format: &SpatialRuns,
        inputs: &[&SpatialComponent],
        plan: &MergePlan,
        outputs: &mut Vec<SpatialComponent>,
        written: &mut BlockSink<'_, SpatialKey>,
    ) -> Result<()> {
        self.pending = None;
        let device = format.device();
        let antimatter = inputs
            .iter()
            .map(|p| p.scan_antimatter(device))
            .collect::<Result<Vec<_>>>()?;
        let mut filter = self.maintenance.merge_filter(antimatter, plan.bottommost);
        // Each input is in Hilbert order already (scan_in_order checks it): the survivors are
        // merged, not re-sorted (the same order hilbert_sort gives their concatenation), straight
        // into the bulk load. Only the survivors are held (32 B each; their keys are recomputed as
        // the merge goes), never the merged output too: a merge of Validation's components at the
        // paper's scale peaked at 3.6 GiB when it collected (key, entry) pairs twice and then the
        // entries before the bulk load.
        let mut runs: Vec<Vec<SpatialEntry>> = Vec::with_capacity(inputs.len());
        for (input, part) in inputs.iter().enumerate() {
            let mut kept = format.scan_in_order(part)?;
            let mut failed = None;
            kept.retain(|e| {
                failed.is_none()
                    && filter.keep(input, e).unwrap_or_else(|err| {
                        failed = Some(err);
                        false
                    })
            });
            if let Some(err) = failed {
                return Err(err);
            }
            kept.shrink_to_fit();
            runs.push(kept);
        }
        let (kept_antimatter, cleanup) = filter.finish();
        self.maintenance.check(&cleanup)?;
        let entries = MergedRuns::new(runs, |e: &SpatialEntry| format.key(e));
        outputs.push(format.build_component_from(entries, kept_antimatter, written)?);
        self.pending = Some(cleanup);
        Ok(())
    }

    fn committed(&mut self) {
        if let Some(cleanup) = self.pending.take() {
            if let Err(e) = self.maintenance.commit(cleanup) {
                self.failed.get_or_insert(e);
            }
        }
    }
}

/// The k-way merge of a merge's surviving runs, each in component order (`key`: Hilbert key,
/// oid, timestamp, strictly increasing within a run), yielding entries in that order, ties to the
/// earlier run: the order [`crate::lsm::merge::merge_sorted_runs`] gives. A run's memory is freed
/// as soon as the merge has used it up.
struct MergedRuns<F> {
    cursors: Vec<std::vec::IntoIter<SpatialEntry>>,
    heads: Vec<Option<SpatialEntry>>,
    heap: BinaryHeap<Reverse<(SpatialKey, usize)>>,
    left: usize,
    key: F,
}

impl<F: Fn(&SpatialEntry) -> SpatialKey> MergedRuns<F> {
    fn new(runs: Vec<Vec<SpatialEntry>>, key: F) -> MergedRuns<F> {
        debug_assert!(runs.iter().all(|r| r.windows(2).all(|w| key(&w[0]) < key(&w[1]))));
        let mut merged = MergedRuns {
            cursors: Vec::with_capacity(runs.len()),
            heads: Vec::with_capacity(runs.len()),
            heap: BinaryHeap::with_capacity(runs.len()),
            left: runs.iter().map(Vec::len).sum(),
            key,
        };
        for run in runs.into_iter().filter(|r| !r.is_empty()) {
            let i = merged.cursors.len();
            merged.cursors.push(run.into_iter());
            merged.heads.push(None);
            merged.advance(i);
        }
        merged
    }

    /// Moves run `i`'s next entry into its head and the heap; frees the run once it is used up.
    fn advance(&mut self, i: usize) {
        match self.cursors[i].next() {
            Some(e) => {
                self.heap.push(Reverse(((self.key)(&e), i)));
                self.heads[i] = Some(e);
            }
            None => self.cursors[i] = Vec::new().into_iter(),
        }
    }
}

impl<F: Fn(&SpatialEntry) -> SpatialKey> Iterator for MergedRuns<F> {
    type Item = SpatialEntry;

    fn next(&mut self) -> Option<SpatialEntry> {
        let Reverse((_, i)) = self.heap.pop()?;
        #[allow(clippy::expect_used)] // `advance` stores a run's head whenever it pushes its key
        let e = self.heads[i].take().expect("a run in the heap has its head");
        self.advance(i);
        self.left -= 1;
        Some(e)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<F: Fn(&SpatialEntry) -> SpatialKey> ExactSizeIterator for MergedRuns<F> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Point, Rect};
    use crate::lsm::no_blocks;
    use crate::storage::{Fault, FaultyDevice, MemDevice};

    fn runs() -> (SpatialRuns, Arc<FaultyDevice>) {
        let faulty = Arc::new(FaultyDevice::new(Arc::new(MemDevice::new(256))));
        let cache = Arc::new(BufferCache::new(faulty.clone(), 8));
        let hilbert = HilbertCurve::new(Rect::new(0.0, 0.0, 10.0, 10.0));
        (SpatialRuns::new(cache, hilbert, None), faulty)
    }

    fn entries(n: u64) -> Vec<SpatialEntry> {
        (0..n)
            .map(|i| SpatialEntry::new(Point::new((i % 10) as f64, (i / 10) as f64), i, i + 1))
            .collect()
    }

    /// The streamed merge yields what `merge_sorted_runs` returns: runs with ties across runs
    /// (the same Hilbert key, and the same key, oid and timestamp) and empty runs.
    #[test]
    fn merged_runs_equal_merge_sorted_runs() {
        use rand::{Rng, SeedableRng};
        let key = |e: &SpatialEntry| (e.point.x as u64, e.oid, e.ts);
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for case in 0..300 {
            let runs: Vec<Vec<SpatialEntry>> = (0..rng.random_range(0..6))
                .map(|_| {
                    let mut run: Vec<SpatialEntry> = (0..rng.random_range(0..40))
                        .map(|_| {
                            let x = rng.random_range(0..10) as f64;
                            SpatialEntry::new(
                                Point::new(x, 0.0),
                                rng.random_range(0..8),
                                rng.random_range(0..4),
                            )
                        })
                        .collect();
                    run.sort_by_key(key);
                    run.dedup_by_key(|e| key(e));
                    run
                })
                .collect();
            let keyed = runs
                .iter()
                .map(|r| r.iter().map(|e| (key(e), *e)).collect())
                .collect();
            let expected: Vec<SpatialEntry> = crate::lsm::merge::merge_sorted_runs(keyed)
                .into_iter()
                .map(|(_, e)| e)
                .collect();
            let merged = MergedRuns::new(runs, key);
            assert_eq!(merged.len(), expected.len(), "case {case}");
            assert_eq!(merged.collect::<Vec<_>>(), expected, "case {case}");
        }
    }

    #[test]
    fn a_component_reports_both_extents_and_their_pages() {
        let (runs, faulty) = runs();
        let mut es = entries(30);
        runs.hilbert_sort(&mut es);
        let c = runs
            .build_component(es.clone(), vec![3, 4, 5], &mut no_blocks)
            .unwrap();
        let info = runs.describe(&c);
        assert_eq!(info.extents.len(), 2);
        assert_eq!(info.extents[0].pages, c.rtree.pages());
        assert_eq!(
            info.pages,
            c.rtree.pages() + c.antimatter.as_ref().unwrap().pages()
        );
        assert_eq!((info.entries, info.keys), (30, None));
        assert_eq!(faulty.allocated_pages(), info.pages);
        let leaf = DiskRTree::leaf_capacity(256) as u64;
        assert_eq!(runs.entries_per_run(3), 3 * leaf);
        // The scan gives the entries back in Hilbert order with their keys.
        let scanned: Vec<_> = runs.scan(&c).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(scanned.iter().map(|(_, e)| *e).collect::<Vec<_>>(), es);
        assert!(scanned.windows(2).all(|w| w[0].0 < w[1].0));
        runs.destroy(c);
        assert_eq!(faulty.allocated_pages(), 0);
    }

    #[test]
    fn every_page_written_is_reported_in_order_leaves_with_their_keys() {
        let (runs, _) = runs();
        let mut es = entries(30);
        runs.hilbert_sort(&mut es);
        let mut told: Vec<(PageId, Option<KeyRange<SpatialKey>>, usize)> = Vec::new();
        let c = runs
            .build_component(es.clone(), vec![3, 4, 5], &mut |b| {
                told.push((b.page, b.keys, b.bytes.len()));
                Ok(())
            })
            .unwrap();
        let info = runs.describe(&c);
        // Every page of both extents, once, in page order (leaves, internal levels, antimatter).
        let pages: Vec<PageId> = info
            .extents
            .iter()
            .flat_map(|x| x.first..x.first + x.pages)
            .collect();
        assert_eq!(told.iter().map(|t| t.0).collect::<Vec<_>>(), pages);
        assert!(told.iter().all(|t| t.2 == 256));
        // The leaves come first and carry their keys; the component notes the same.
        let leaves = DiskRTree::leaf_capacity(256);
        let keyed: Vec<BlockKeys<SpatialKey>> = told
            .iter()
            .filter_map(|t| t.1.map(|keys| BlockKeys { page: t.0, keys }))
            .collect();
        assert_eq!(keyed.len(), es.len().div_ceil(leaves));
        assert_eq!(keyed, c.leaves);
        assert_eq!(runs.blocks(&c), c.leaves);
        for (i, leaf) in keyed.iter().enumerate() {
            assert_eq!(leaf.page, pages[i]);
            let chunk = &es[i * leaves..((i + 1) * leaves).min(es.len())];
            let want = KeyRange::new(runs.key(&chunk[0]), runs.key(&chunk[chunk.len() - 1]));
            assert_eq!(leaf.keys, want);
        }
        runs.destroy(c);
    }

    #[test]
    fn a_failed_build_leaves_nothing_allocated() {
        let (runs, faulty) = runs();
        let r_pages = {
            let c = runs
                .build_component(entries(30), Vec::new(), &mut no_blocks)
                .unwrap();
            let p = c.rtree.pages();
            runs.destroy(c);
            p
        };
        // Fail each write in turn: of the R-tree, then of the antimatter B+-tree.
        for k in 1..=r_pages + 1 {
            faulty.arm(Fault::Never, Fault::Nth(k));
            assert!(
                runs.build_component(entries(30), vec![1, 2], &mut no_blocks)
                    .is_err(),
                "write {k}"
            );
            assert_eq!(faulty.allocated_pages(), 0, "write {k}");
        }
        faulty.disarm();
    }
}
