//! The packed disk R-tree of an LSM disk component.
//!
//! A disk component of the LSM R-tree is immutable: it is written once, by a flush of the memory
//! component or by a merge of older disk components, and only read afterwards. The LSM RUM-tree
//! paper (Section 4.3) sorts the entries of a flush or merge along a space-filling curve and
//! bulk-loads them into a *packed* R-tree; the authors' code uses the Hilbert curve and a fill
//! factor of 1.0. This module is that tree: the caller hands entries already in packing order,
//! [`DiskRTree::bulk_load`] cuts them into full leaves (only the last leaf of the level may be
//! partial) and builds each internal level bottom-up the same way, so the tree's shape is a pure
//! function of the number of entries and the page size.
//!
//! # On the device
//!
//! All pages live in one contiguous extent allocated at once (the page count is known up front):
//! the leaves first, in packing order, then each internal level, the root last. A merge can
//! therefore scan the leaves with sequential device reads ([`DiskRTree::scan`]), while queries go
//! through the [`BufferCache`] from the root ([`DiskRTree::search`]).
//!
//! Every page starts with an 8-byte header, little endian:
//!
//! | bytes | field                                               |
//! |-------|-----------------------------------------------------|
//! | 0..2  | magic `b"DR"`                                       |
//! | 2     | kind: `b'L'` leaf, `b'I'` internal                  |
//! | 3     | level (0 for leaves, the root is `height - 1`)      |
//! | 4..8  | entry count (u32)                                   |
//!
//! followed by fixed-size entries: a leaf holds [`SpatialEntry`] values
//! ([`SpatialEntry::ENCODED_SIZE`] bytes each), an internal node holds its children's MBRs
//! (`min.x, min.y, max.x, max.y` as f64) each followed by the child's [`PageId`] (u64), 40 bytes.
//! The rest of the page is zero.
//!
//! # Corruption
//!
//! Because the tree is packed, the position of a page in its extent determines its level, its
//! entry count and the page ids of its children. Reading a page checks all of them, and also that
//! the MBR of what the page holds equals the MBR its parent recorded for it (for the root: the
//! tree's MBR kept in memory). A page that fails a check yields [`Error::Corrupt`] rather than a
//! wrong answer. These checks are structural; bit-level integrity of a page's payload is the job of
//! the device ([`crate::storage::FileDevice`] verifies a checksum on every read).
//!
//! A search checks a page once per arrival in the cache: the first visit checks the header and
//! the child pointers and computes the node's MBR from its entries, and the cache keeps that MBR
//! with the page (a [`crate::cache::PageNote`]) until the page leaves the cache or its bytes
//! change. A later visit compares the kept MBR with the parent's record, which costs four
//! comparisons instead of a pass over the page, and reads only what the query needs. A page read
//! through a cache of capacity 0 is checked on every visit; [`DiskRTree::scan`] checks every leaf
//! it reads.

use crate::cache::{BufferCache, PageNote};
use crate::geom::Rect;
use crate::rtree::SpatialEntry;
use crate::storage::{Device, PageId};
use crate::{Error, Result};

/// Bytes of the page header (magic, kind, level, count).
pub const HEADER_SIZE: usize = 8;
/// Bytes of one internal entry: the child's MBR (four f64) and its page id (u64).
pub const INTERNAL_ENTRY_SIZE: usize = 40;

const MAGIC: [u8; 2] = *b"DR";

/// A node a search has yet to visit: its level, its index in the level, and the MBR its parent
/// recorded for it.
type Frame = (usize, u64, Rect);

thread_local! {
    /// The allocation of the last search's stack on this thread (see [`DiskRTree::search_counted`]).
    static SEARCH_STACK: std::cell::Cell<Vec<Frame>> = const { std::cell::Cell::new(Vec::new()) };
}
const KIND_LEAF: u8 = b'L';
const KIND_INTERNAL: u8 = b'I';

/// An immutable, packed R-tree stored in one contiguous extent of a [`Device`].
///
/// The struct itself is the component's in-memory metadata: where the extent starts, the shape of
/// the tree and its MBR (which also serves as a filter: a query outside it reads no page).
#[derive(Debug)]
pub struct DiskRTree {
    first: PageId,
    entries: u64,
    page_size: usize,
    leaf_cap: usize,
    internal_cap: usize,
    /// Pages per level, leaves first; the last level holds exactly one page, the root.
    level_pages: Vec<u64>,
    /// Offset from `first` of each level's first page.
    level_start: Vec<u64>,
    mbr: Rect,
}

impl DiskRTree {
    /// Leaf capacity for a page size: (page_size - header) / [`SpatialEntry::ENCODED_SIZE`].
    pub fn leaf_capacity(page_size: usize) -> usize {
        page_size.saturating_sub(HEADER_SIZE) / SpatialEntry::ENCODED_SIZE
    }

    /// Internal-node fan-out for a page size: (page_size - header) / `INTERNAL_ENTRY_SIZE`.
    pub fn internal_capacity(page_size: usize) -> usize {
        page_size.saturating_sub(HEADER_SIZE) / INTERNAL_ENTRY_SIZE
    }

    /// Pages per level (leaves first) of a packed tree of `n` entries. Zero entries still take one
    /// (empty) leaf, which is the root.
    fn layout(n: u64, leaf_cap: usize, internal_cap: usize) -> Vec<u64> {
        let mut levels = vec![n.div_ceil(leaf_cap as u64).max(1)];
        while let Some(&below) = levels.last().filter(|&&p| p > 1) {
            levels.push(below.div_ceil(internal_cap as u64));
        }
        levels
    }

    /// Packs `entries` in the given order into full leaves, builds internal levels bottom-up (each
    /// internal entry = the child's MBR as four f64 + the child's PageId), and writes all pages into
    /// one freshly allocated contiguous extent of `device` (leaves first, in order, then each upper
    /// level, root last). Zero entries is allowed (one empty leaf as root).
    ///
    /// Pages are written sequentially to `device`: straight to a device, bypassing any cache, as
    /// AsterixDB's bulk loader does, or through a [`crate::cache::CacheSink`] that lets the cache
    /// admit them. Fails with [`Error::Config`] if the page size cannot hold one leaf entry
    /// and two internal entries, or if the iterator yields a different number of entries than its
    /// `len()` promised; on any error the extent is freed again.
    pub fn bulk_load<S: crate::cache::PageSink + ?Sized>(
        device: &S,
        entries: impl ExactSizeIterator<Item = SpatialEntry>,
    ) -> Result<Self> {
        let page_size = device.page_size();
        let leaf_cap = Self::leaf_capacity(page_size);
        let internal_cap = Self::internal_capacity(page_size);
        if leaf_cap < 1 || internal_cap < 2 {
            return Err(Error::Config(format!(
                "page size {page_size} is too small for a disk R-tree (leaf capacity {leaf_cap}, \
                 fan-out {internal_cap})"
            )));
        }
        let n = entries.len() as u64;
        let level_pages = Self::layout(n, leaf_cap, internal_cap);
        let level_start = level_pages
            .iter()
            .scan(0u64, |acc, &p| {
                let start = *acc;
                *acc += p;
                Some(start)
            })
            .collect();
        let total: u64 = level_pages.iter().sum();
        let first = device.allocate(total);
        let mut tree = DiskRTree {
            first,
            entries: n,
            page_size,
            leaf_cap,
            internal_cap,
            level_pages,
            level_start,
            mbr: Rect::empty(),
        };
        match tree.write_pages(device, entries) {
            Ok(mbr) => {
                tree.mbr = mbr;
                Ok(tree)
            }
            Err(e) => {
                device.free(first, total);
                Err(e)
            }
        }
    }

    /// Writes every page of the extent in order and returns the root's MBR.
    fn write_pages<S: crate::cache::PageSink + ?Sized>(
        &self,
        device: &S,
        entries: impl Iterator<Item = SpatialEntry>,
    ) -> Result<Rect> {
        let mut buf = vec![0u8; self.page_size];
        let mut mbrs: Vec<Rect> = Vec::with_capacity(self.level_pages[0] as usize);

        // Leaves, filled in the caller's order.
        let mut in_leaf = 0usize;
        let mut leaf_mbr = Rect::empty();
        let mut seen = 0u64;
        for e in entries {
            seen += 1;
            if seen > self.entries {
                return Err(self.length_mismatch(seen));
            }
            let off = HEADER_SIZE + in_leaf * SpatialEntry::ENCODED_SIZE;
            e.encode(&mut buf[off..off + SpatialEntry::ENCODED_SIZE]);
            leaf_mbr = leaf_mbr.union_point(e.point);
            in_leaf += 1;
            if in_leaf == self.leaf_cap {
                self.write_node(device, &mut buf, 0, mbrs.len() as u64, in_leaf)?;
                mbrs.push(leaf_mbr);
                in_leaf = 0;
                leaf_mbr = Rect::empty();
            }
        }
        if seen != self.entries {
            return Err(self.length_mismatch(seen));
        }
        if in_leaf > 0 || self.entries == 0 {
            self.write_node(device, &mut buf, 0, mbrs.len() as u64, in_leaf)?;
            mbrs.push(leaf_mbr);
        }
        debug_assert_eq!(mbrs.len() as u64, self.level_pages[0]);

        // Internal levels, bottom-up: each groups `internal_cap` consecutive nodes of the level below.
        for level in 1..self.height() {
            let mut upper = Vec::with_capacity(self.level_pages[level] as usize);
            for (idx, group) in mbrs.chunks(self.internal_cap).enumerate() {
                let mut node_mbr = Rect::empty();
                for (k, r) in group.iter().enumerate() {
                    let child = self.page_id(level - 1, (idx * self.internal_cap + k) as u64);
                    let off = HEADER_SIZE + k * INTERNAL_ENTRY_SIZE;
                    encode_internal(r, child, &mut buf[off..off + INTERNAL_ENTRY_SIZE]);
                    node_mbr = node_mbr.union(r);
                }
                self.write_node(device, &mut buf, level, idx as u64, group.len())?;
                upper.push(node_mbr);
            }
            debug_assert_eq!(upper.len() as u64, self.level_pages[level]);
            mbrs = upper;
        }
        Ok(mbrs[0])
    }

    /// Stamps the header onto `buf`, writes it as node `idx` of `level`, and zeroes `buf`.
    fn write_node<S: crate::cache::PageSink + ?Sized>(
        &self,
        device: &S,
        buf: &mut [u8],
        level: usize,
        idx: u64,
        count: usize,
    ) -> Result<()> {
        buf[0..2].copy_from_slice(&MAGIC);
        buf[2] = if level == 0 { KIND_LEAF } else { KIND_INTERNAL };
        buf[3] = level as u8;
        buf[4..8].copy_from_slice(&(count as u32).to_le_bytes());
        device.write_page(self.page_id(level, idx), buf)?;
        buf.fill(0);
        Ok(())
    }

    fn length_mismatch(&self, seen: u64) -> Error {
        Error::Config(format!(
            "bulk load: the entry iterator promised {} entries but yielded {}{}",
            self.entries,
            seen,
            if seen > self.entries { " or more" } else { "" }
        ))
    }

    /// Every entry whose point lies in `rect` (closed), reading nodes through the cache from the
    /// root. Entries are reported in packing order. On `Err`, entries already passed to `f` may
    /// come from the corrupt page and must be discarded.
    pub fn search(&self, cache: &BufferCache, rect: &Rect, f: impl FnMut(&SpatialEntry)) -> Result<()> {
        self.search_counted(cache, rect, f).map(|_| ())
    }

    /// [`DiskRTree::search`] that also returns the number of nodes visited (pages read through the
    /// cache, hits and misses alike). Each node is visited at most once, so on a cold cache this is
    /// the query's device reads.
    pub fn search_counted(
        &self,
        cache: &BufferCache,
        rect: &Rect,
        mut f: impl FnMut(&SpatialEntry),
    ) -> Result<u64> {
        if !self.mbr.intersects(rect) {
            return Ok(0);
        }
        // The stack's allocation is kept on the thread between searches, so that a query
        // allocates nothing (a search nested in `f` finds it taken and uses a fresh one).
        let mut stack = SEARCH_STACK.take();
        stack.clear();
        let result = self.search_from_root(cache, rect, &mut f, &mut stack);
        SEARCH_STACK.set(stack);
        result
    }

    /// The body of [`DiskRTree::search_counted`], on a caller-provided empty stack.
    fn search_from_root(
        &self,
        cache: &BufferCache,
        rect: &Rect,
        f: &mut impl FnMut(&SpatialEntry),
        stack: &mut Vec<Frame>,
    ) -> Result<u64> {
        // Depth-first with an explicit stack of (level, index in level, MBR recorded by the parent).
        // It never holds more than one node's children per level.
        stack.reserve(self.height() * self.internal_cap);
        stack.push((self.height() - 1, 0, self.mbr));
        let mut visited = 0u64;
        while let Some((level, idx, expected)) = stack.pop() {
            let id = self.page_id(level, idx);
            let (page, note) = cache.read_noted(id)?;
            visited += 1;
            // A page is checked on its first visit after it arrived in the cache (its header, its
            // children's page ids, and the MBR of what it holds, computed from its bytes); the
            // cache keeps that MBR as the page's note until the page leaves or changes, so later
            // visits only compare it with the MBR the parent recorded. A page read with a cache of
            // capacity 0 is never noted, so it is checked on every visit.
            let actual = match note {
                Some(n) => rect_of_note(&n),
                None => {
                    let actual = self.check_node(id, &page, level, idx)?;
                    cache.set_note(id, &page, note_of_rect(&actual));
                    actual
                }
            };
            self.check_mbr(id, &actual, &expected)?;
            // The header is checked: the count is the one the packed layout gives. Only a result
            // is decoded whole, and nothing is allocated per node.
            let count = read_count(&page);
            if level == 0 {
                search_leaf(&page, count, rect, f);
            } else {
                let mark = stack.len();
                let first_idx = idx * self.internal_cap as u64;
                search_internal(&page, count, rect, |k, r| {
                    stack.push((level - 1, first_idx + k as u64, r));
                });
                // Visit children left to right, i.e. in packing order.
                stack[mark..].reverse();
            }
        }
        Ok(visited)
    }

    /// The structural checks of node `idx` of `level` that depend on its page alone: the header,
    /// and for an internal node every child pointer. Returns the MBR of what the node holds (its
    /// points, or its children's MBRs), for the caller to compare with its parent's record.
    fn check_node(&self, id: PageId, page: &[u8], level: usize, idx: u64) -> Result<Rect> {
        let count = self.check_header(id, page, level, idx)?;
        if level == 0 {
            return Ok(leaf_bounds(page, count));
        }
        let first_idx = idx * self.internal_cap as u64;
        let first_child = self.page_id(level - 1, first_idx);
        let (actual, bad) = internal_bounds(page, count, first_child);
        if bad {
            // Report the first child pointer that is not where the packed layout puts it.
            for (k, chunk) in internal_slots(page, count).enumerate() {
                self.check_child(id, level, first_idx + k as u64, read_u64(chunk, 32))?;
            }
        }
        Ok(actual)
    }

    /// All entries in stored (packing) order, reading the leaf pages straight from the device in
    /// order (a merge's sequential scan: counted as device reads, does not pollute the cache).
    pub fn scan(&self, device: &dyn Device) -> Result<Vec<SpatialEntry>> {
        let mut out = Vec::with_capacity(self.entries as usize);
        self.scan_with(device, |e| out.push(*e))?;
        Ok(out)
    }

    /// [`DiskRTree::scan`] without collecting: `f` sees every entry in packing order, so a merge can
    /// stream a component of any size. On `Err`, entries already passed to `f` must be discarded.
    pub fn scan_with(&self, device: &dyn Device, mut f: impl FnMut(&SpatialEntry)) -> Result<()> {
        let mut buf = vec![0u8; device.page_size()];
        let mut all = Rect::empty();
        for idx in 0..self.leaf_pages() {
            let id = self.page_id(0, idx);
            device.read_page(id, &mut buf)?;
            let count = self.check_header(id, &buf, 0, idx)?;
            for chunk in leaf_slots(&buf, count) {
                let e = SpatialEntry::decode(chunk);
                all = all.union_point(e.point);
                f(&e);
            }
        }
        // The scan does not read the internal levels, so the leaves can only be checked as a whole.
        if all != self.mbr {
            return Err(Error::Corrupt {
                page: self.first,
                reason: format!("leaf level covers {all:?} but the tree's MBR is {:?}", self.mbr),
            });
        }
        Ok(())
    }

    /// Entries stored.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Pages of the extent, all levels.
    pub fn pages(&self) -> u64 {
        self.level_pages.iter().sum()
    }

    /// Pages of the leaf level (what a scan reads).
    pub fn leaf_pages(&self) -> u64 {
        self.level_pages[0]
    }

    /// Levels, leaves included: 1 for a tree whose root is a leaf.
    pub fn height(&self) -> usize {
        self.level_pages.len()
    }

    /// The MBR of all entries' points; [`Rect::empty()`] when there are no entries.
    pub fn mbr(&self) -> Rect {
        self.mbr
    }

    /// First page of the extent (the first leaf).
    pub fn first_page(&self) -> PageId {
        self.first
    }

    /// The root's page (the last page of the extent).
    pub fn root_page(&self) -> PageId {
        self.first + self.pages() - 1
    }

    /// Page size the tree was written with.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Frees the extent and invalidates its cached pages (a component retired by a merge).
    /// `cache` must sit over the device the tree was loaded onto.
    pub fn destroy(self, cache: &BufferCache) {
        cache.free(self.first, self.pages());
    }

    fn page_id(&self, level: usize, idx: u64) -> PageId {
        self.first + self.level_start[level] + idx
    }

    /// Entries node `idx` of `level` must hold: full, except the last node of its level.
    fn expected_count(&self, level: usize, idx: u64) -> u64 {
        let (total, cap) = if level == 0 {
            (self.entries, self.leaf_cap as u64)
        } else {
            (self.level_pages[level - 1], self.internal_cap as u64)
        };
        total.saturating_sub(idx * cap).min(cap)
    }

    /// Checks a page's header against the node it must be and returns its entry count.
    fn check_header(&self, page: PageId, data: &[u8], level: usize, idx: u64) -> Result<usize> {
        let corrupt = |reason: String| Error::Corrupt { page, reason };
        if data.len() != self.page_size {
            return Err(corrupt(format!(
                "page is {} bytes, the tree was written with {}",
                data.len(),
                self.page_size
            )));
        }
        if data[0..2] != MAGIC {
            return Err(corrupt(format!("bad magic {:02x?}", &data[0..2])));
        }
        let (kind, cap) = if level == 0 {
            (KIND_LEAF, self.leaf_cap)
        } else {
            (KIND_INTERNAL, self.internal_cap)
        };
        if data[2] != kind {
            return Err(corrupt(format!(
                "node kind {:#04x}, expected {:#04x} at level {level}",
                data[2], kind
            )));
        }
        if data[3] as usize != level {
            return Err(corrupt(format!("level byte {}, expected {level}", data[3])));
        }
        let count = crate::bytes::u32_le(data, 4) as u64;
        let expected = self.expected_count(level, idx);
        if count != expected {
            return Err(corrupt(format!(
                "entry count {count}, expected {expected} (capacity {cap})"
            )));
        }
        Ok(count as usize)
    }

    /// An internal entry's child pointer must be the page the packed layout puts there.
    fn check_child(&self, page: PageId, level: usize, child_idx: u64, child: PageId) -> Result<()> {
        let expected = self.page_id(level - 1, child_idx);
        if child != expected {
            return Err(Error::Corrupt {
                page,
                reason: format!("child pointer {child}, expected {expected}"),
            });
        }
        Ok(())
    }

    /// A node's contents must cover exactly the MBR its parent recorded for it.
    fn check_mbr(&self, page: PageId, actual: &Rect, expected: &Rect) -> Result<()> {
        if actual != expected {
            return Err(Error::Corrupt {
                page,
                reason: format!("node covers {actual:?} but its parent recorded {expected:?}"),
            });
        }
        Ok(())
    }
}

/// The encoded leaf entries of a page whose header has been checked.
fn leaf_slots(page: &[u8], count: usize) -> std::slice::ChunksExact<'_, u8> {
    page[HEADER_SIZE..HEADER_SIZE + count * SpatialEntry::ENCODED_SIZE]
        .chunks_exact(SpatialEntry::ENCODED_SIZE)
}

/// The encoded internal entries of a page whose header has been checked.
fn internal_slots(page: &[u8], count: usize) -> std::slice::ChunksExact<'_, u8> {
    page[HEADER_SIZE..HEADER_SIZE + count * INTERNAL_ENTRY_SIZE].chunks_exact(INTERNAL_ENTRY_SIZE)
}

fn encode_internal(r: &Rect, child: PageId, out: &mut [u8]) {
    out[0..8].copy_from_slice(&r.min.x.to_le_bytes());
    out[8..16].copy_from_slice(&r.min.y.to_le_bytes());
    out[16..24].copy_from_slice(&r.max.x.to_le_bytes());
    out[24..32].copy_from_slice(&r.max.y.to_le_bytes());
    out[32..40].copy_from_slice(&child.to_le_bytes());
}

/// Reads the little-endian u64 at `b[at..at + 8]`.
#[inline(always)]
fn read_u64(b: &[u8], at: usize) -> u64 {
    crate::bytes::u64_le(b, at)
}

/// A rectangle as the search loops accumulate it from a page's bytes, as two `[x, y]` pairs so
/// that each bound is one two-lane min or max. [`lesser`] and [`greater`] give the bounds
/// [`Rect::union`] gives (equal under `==`) in one instruction each.
#[derive(Clone, Copy)]
struct Bounds {
    min: [f64; 2],
    max: [f64; 2],
}

impl Bounds {
    const EMPTY: Bounds = Bounds {
        min: [f64::INFINITY; 2],
        max: [f64::NEG_INFINITY; 2],
    };

    /// Widens to cover the box `lo..=hi` ([`Rect::union`]; a point is the box `p..=p`).
    #[inline(always)]
    fn cover(&mut self, lo: [f64; 2], hi: [f64; 2]) {
        self.min = [lesser(self.min[0], lo[0]), lesser(self.min[1], lo[1])];
        self.max = [greater(self.max[0], hi[0]), greater(self.max[1], hi[1])];
    }

    /// The union of two accumulators (neither holds a NaN).
    #[inline(always)]
    fn merge(mut self, o: Bounds) -> Bounds {
        self.cover(o.min, o.max);
        self
    }

    fn rect(&self) -> Rect {
        Rect::new(self.min[0], self.min[1], self.max[0], self.max[1])
    }
}

/// `f64::min(acc, v)` for an accumulator that is never NaN (it starts at an infinity and only
/// takes values that compared below it): a NaN `v` leaves it unchanged, as `f64::min` does. The
/// only difference, which of two equal zeros of opposite sign is kept, is invisible to `==`.
#[inline(always)]
fn lesser(acc: f64, v: f64) -> f64 {
    if v < acc {
        v
    } else {
        acc
    }
}

/// `f64::max` for an accumulator that is never NaN (see [`lesser`]).
#[inline(always)]
fn greater(acc: f64, v: f64) -> f64 {
    if v > acc {
        v
    } else {
        acc
    }
}

/// Reads the little-endian f64 at `c[at..at + 8]` of a fixed-size slot (no bounds check once
/// `at` is a constant).
#[inline(always)]
fn f64_at<const S: usize>(c: &[u8; S], at: usize) -> f64 {
    crate::bytes::f64_le(c, at)
}

/// The `[x, y]` pair at `c[at..at + 16]`.
#[inline(always)]
fn pair_at<const S: usize>(c: &[u8; S], at: usize) -> [f64; 2] {
    [f64_at(c, at), f64_at(c, at + 8)]
}

/// The bounds of every slot's box `lo(slot)..=hi(slot)`, alternating between two accumulators so
/// that consecutive slots do not wait on each other's min and max. The loop calls nothing and
/// does not branch on the data, so its accumulators stay in registers.
#[inline(always)]
fn bounds_of<const S: usize>(
    slots: &[[u8; S]],
    lo: impl Fn(&[u8; S]) -> [f64; 2],
    hi: impl Fn(&[u8; S]) -> [f64; 2],
) -> Rect {
    let (pairs, rest) = slots.as_chunks::<2>();
    let mut acc = [Bounds::EMPTY; 2];
    for [a, b] in pairs {
        acc[0].cover(lo(a), hi(a));
        acc[1].cover(lo(b), hi(b));
    }
    if let [r] = rest {
        acc[0].cover(lo(r), hi(r));
    }
    acc[0].merge(acc[1]).rect()
}

/// The entry count of a page whose header has been checked.
#[inline(always)]
fn read_count(page: &[u8]) -> usize {
    crate::bytes::u32_le(page, 4) as usize
}

/// A node's MBR as the cache keeps it ([`PageNote`]): the bits of `min.x, min.y, max.x, max.y`.
fn note_of_rect(r: &Rect) -> PageNote {
    [r.min.x, r.min.y, r.max.x, r.max.y].map(f64::to_bits)
}

/// The MBR kept in a page's note ([`note_of_rect`]).
#[inline(always)]
fn rect_of_note(n: &PageNote) -> Rect {
    let [a, b, c, d] = n.map(f64::from_bits);
    Rect::new(a, b, c, d)
}

/// The MBR of a leaf's points (for the structural check): one pass that only widens bounds (no
/// call, no branch on the data, so its accumulators stay in registers).
fn leaf_bounds(page: &[u8], count: usize) -> Rect {
    const SIZE: usize = SpatialEntry::ENCODED_SIZE;
    let (slots, _) = page[HEADER_SIZE..HEADER_SIZE + count * SIZE].as_chunks::<SIZE>();
    let point = |c: &[u8; SIZE]| pair_at(c, 0);
    bounds_of(slots, point, point)
}

/// The MBR of an internal node's children's MBRs (for the structural check), and whether any child
/// pointer differs from `first_child + slot`.
fn internal_bounds(page: &[u8], count: usize, first_child: PageId) -> (Rect, bool) {
    const SIZE: usize = INTERNAL_ENTRY_SIZE;
    let (slots, _) = page[HEADER_SIZE..HEADER_SIZE + count * SIZE].as_chunks::<SIZE>();
    let mbr = bounds_of(slots, |c| pair_at(c, 0), |c| pair_at(c, 16));
    let mut stray = 0u64;
    for (k, c) in slots.iter().enumerate() {
        stray |= crate::bytes::u64_le(c, 32) ^ (first_child + k as u64);
    }
    (mbr, stray != 0)
}

/// One leaf of a search: passes every entry inside `rect` to `f`, in stored order.
#[inline(always)]
fn search_leaf(page: &[u8], count: usize, rect: &Rect, f: &mut impl FnMut(&SpatialEntry)) {
    const SIZE: usize = SpatialEntry::ENCODED_SIZE;
    let (slots, _) = page[HEADER_SIZE..HEADER_SIZE + count * SIZE].as_chunks::<SIZE>();
    for c in slots {
        let (x, y) = (f64_at(c, 0), f64_at(c, 8));
        // `Rect::contains_point`.
        if (x >= rect.min.x) & (x <= rect.max.x) & (y >= rect.min.y) & (y <= rect.max.y) {
            f(&SpatialEntry::decode(c));
        }
    }
}

/// One internal node of a search: passes `(slot, child MBR)` of every child whose MBR meets `rect`
/// to `visit`, in stored order.
#[inline(always)]
fn search_internal(page: &[u8], count: usize, rect: &Rect, mut visit: impl FnMut(usize, Rect)) {
    const SIZE: usize = INTERNAL_ENTRY_SIZE;
    let (slots, _) = page[HEADER_SIZE..HEADER_SIZE + count * SIZE].as_chunks::<SIZE>();
    for (k, c) in slots.iter().enumerate() {
        let r = [f64_at(c, 0), f64_at(c, 8), f64_at(c, 16), f64_at(c, 24)];
        // `Rect::intersects`.
        if (r[0] <= rect.max.x) & (rect.min.x <= r[2]) & (r[1] <= rect.max.y) & (rect.min.y <= r[3]) {
            visit(k, Rect::new(r[0], r[1], r[2], r[3]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{HilbertCurve, Point};
    use crate::storage::{MemDevice, DEFAULT_PAGE_SIZE};
    use proptest::prelude::*;
    use std::sync::Arc;

    fn device(page_size: usize) -> Arc<dyn Device> {
        Arc::new(MemDevice::new(page_size))
    }

    /// Entries for `points` with oid = position and a ts derived from it, sorted by the Hilbert key
    /// of their extent as a flush would.
    fn hilbert_sorted(points: &[(f64, f64)]) -> Vec<SpatialEntry> {
        let mut es: Vec<SpatialEntry> = points
            .iter()
            .enumerate()
            .map(|(i, &(x, y))| SpatialEntry::new(Point::new(x, y), i as u64, 1000 + (i as u64 * 7) % 13))
            .collect();
        let extent = es.iter().fold(Rect::empty(), |r, e| r.union_point(e.point));
        let curve = HilbertCurve::new(extent);
        es.sort_by_key(|e| curve.key(e.point));
        es
    }

    fn sorted_results(tree: &DiskRTree, cache: &BufferCache, q: &Rect) -> Vec<(u64, u64)> {
        let mut got = Vec::new();
        tree.search(cache, q, |e| got.push((e.oid, e.ts))).unwrap();
        got.sort_unstable();
        got
    }

    fn oracle(es: &[SpatialEntry], q: &Rect) -> Vec<(u64, u64)> {
        let mut want: Vec<(u64, u64)> = es
            .iter()
            .filter(|e| q.contains_point(e.point))
            .map(|e| (e.oid, e.ts))
            .collect();
        want.sort_unstable();
        want
    }

    /// MBRs of every node, level by level (leaves first), recomputed from the input alone.
    fn node_mbrs(es: &[SpatialEntry], page_size: usize) -> Vec<Vec<Rect>> {
        let lc = DiskRTree::leaf_capacity(page_size);
        let ic = DiskRTree::internal_capacity(page_size);
        let mut levels = vec![if es.is_empty() {
            vec![Rect::empty()]
        } else {
            es.chunks(lc)
                .map(|c| c.iter().fold(Rect::empty(), |r, e| r.union_point(e.point)))
                .collect::<Vec<_>>()
        }];
        while levels.last().unwrap().len() > 1 {
            let up = levels
                .last()
                .unwrap()
                .chunks(ic)
                .map(|c| c.iter().fold(Rect::empty(), |a, r| a.union(r)))
                .collect();
            levels.push(up);
        }
        levels
    }

    fn check_shape(tree: &DiskRTree, n: u64, page_size: usize) {
        let lc = DiskRTree::leaf_capacity(page_size) as u64;
        let ic = DiskRTree::internal_capacity(page_size) as u64;
        assert_eq!(tree.entries(), n);
        assert_eq!(tree.leaf_pages(), n.div_ceil(lc).max(1));
        let (mut pages, mut level, mut height) = (tree.leaf_pages(), tree.leaf_pages(), 1);
        while level > 1 {
            level = level.div_ceil(ic);
            pages += level;
            height += 1;
        }
        assert_eq!(tree.pages(), pages);
        assert_eq!(tree.height(), height);
        assert_eq!(tree.root_page(), tree.first_page() + pages - 1);
    }

    fn coord() -> impl Strategy<Value = f64> {
        // A coarse grid half the time, so that points tie with each other and with query borders.
        prop_oneof![(0u32..200).prop_map(|v| v as f64 / 2.0), 0.0f64..100.0]
    }

    fn query() -> impl Strategy<Value = Rect> {
        (coord(), coord(), 0.0f64..40.0, 0.0f64..40.0).prop_map(|(x, y, w, h)| Rect::new(x, y, x + w, y + h))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn search_and_scan_match_a_linear_oracle(
            page_size in prop_oneof![Just(128usize), Just(256), Just(DEFAULT_PAGE_SIZE)],
            points in prop::collection::vec((coord(), coord()), 0..3000),
            queries in prop::collection::vec(query(), 1..6),
        ) {
            let dev = device(page_size);
            let es = hilbert_sorted(&points);
            let tree = DiskRTree::bulk_load(&*dev, es.iter().copied()).unwrap();
            check_shape(&tree, es.len() as u64, page_size);
            prop_assert_eq!(dev.stats().page_writes, tree.pages());
            prop_assert_eq!(dev.allocated_pages(), tree.pages());
            let levels = node_mbrs(&es, page_size);
            prop_assert_eq!(tree.mbr(), levels.last().unwrap()[0]);

            let cache = BufferCache::new(dev.clone(), 0);
            let everything = Rect::new(-1.0, -1.0, 200.0, 200.0);
            for q in queries.iter().chain([&everything, &tree.mbr()]) {
                let before = dev.stats();
                let mut got = Vec::new();
                let visited = tree.search_counted(&cache, q, |e| got.push((e.oid, e.ts))).unwrap();
                got.sort_unstable();
                prop_assert_eq!(got, oracle(&es, q));
                // Exactly the nodes whose MBR meets the query are read (a parent covers its
                // children, so all their ancestors are read too), each once.
                let meeting: usize =
                    levels.iter().flatten().filter(|r| r.intersects(q)).count();
                prop_assert_eq!(visited, meeting as u64);
                prop_assert_eq!(dev.stats().since(&before).page_reads, visited);
                prop_assert!(visited <= tree.pages());
            }

            let before = dev.stats();
            prop_assert_eq!(tree.scan(&*dev).unwrap(), es);
            prop_assert_eq!(dev.stats().since(&before).page_reads, tree.leaf_pages());

            tree.destroy(&cache);
            prop_assert_eq!(dev.allocated_pages(), 0);
        }
    }

    #[test]
    fn capacities_and_shape_at_2_kib() {
        let ps = DEFAULT_PAGE_SIZE;
        let lc = DiskRTree::leaf_capacity(ps);
        let ic = DiskRTree::internal_capacity(ps);
        assert_eq!(lc, (2048 - HEADER_SIZE) / 32);
        assert_eq!(ic, (2048 - HEADER_SIZE) / 40);
        let dev = device(ps);
        let pt = |i: usize| SpatialEntry::new(Point::new(i as f64, 0.0), i as u64, 0);
        let cases = [
            (0, 1, 1),
            (1, 1, 1),
            (lc, 1, 1),
            (lc + 1, 3, 2),
            (lc * ic, ic + 1, 2),
            (lc * ic + 1, (ic + 1) + 2 + 1, 3),
        ];
        for (n, pages, height) in cases {
            let t = DiskRTree::bulk_load(&*dev, (0..n).map(pt)).unwrap();
            assert_eq!(
                (t.entries(), t.pages(), t.height()),
                (n as u64, pages as u64, height),
                "n = {n}"
            );
            check_shape(&t, n as u64, ps);
            t.destroy(&BufferCache::new(dev.clone(), 0));
        }
        assert_eq!(dev.allocated_pages(), 0);
    }

    #[test]
    fn empty_tree_has_one_empty_leaf_and_reads_nothing() {
        let dev = device(DEFAULT_PAGE_SIZE);
        let cache = BufferCache::new(dev.clone(), 8);
        let t = DiskRTree::bulk_load(&*dev, std::iter::empty()).unwrap();
        assert_eq!((t.entries(), t.pages(), t.leaf_pages(), t.height()), (0, 1, 1, 1));
        assert!(t.mbr().is_empty());
        let n = t
            .search_counted(&cache, &Rect::new(-1e300, -1e300, 1e300, 1e300), |_| panic!())
            .unwrap();
        assert_eq!(n, 0);
        assert_eq!(dev.stats().page_reads, 0);
        assert!(t.scan(&*dev).unwrap().is_empty());
        t.destroy(&cache);
        assert_eq!(dev.allocated_pages(), 0);
    }

    /// A grid of distinct points, Hilbert-sorted: most points fall in exactly one leaf's MBR.
    fn grid(side: usize) -> Vec<SpatialEntry> {
        let pts: Vec<(f64, f64)> = (0..side * side)
            .map(|i| ((i % side) as f64, (i / side) as f64))
            .collect();
        hilbert_sorted(&pts)
    }

    #[test]
    fn cold_point_search_reads_one_path_and_warm_search_reads_nothing() {
        let ps = 256;
        let dev = device(ps);
        let es = grid(64);
        let t = DiskRTree::bulk_load(&*dev, es.iter().copied()).unwrap();
        assert_eq!(dev.stats().page_writes, t.pages());
        assert!(t.height() >= 4, "height {}", t.height());
        let levels = node_mbrs(&es, ps);
        let mut single_leaf_points = 0;
        for e in es.iter().step_by(37) {
            let q = Rect::point(e.point);
            let cache = BufferCache::new(dev.clone(), 10_000);
            let before = dev.stats();
            let mut hits = Vec::new();
            t.search(&cache, &q, |x| hits.push(x.oid)).unwrap();
            assert_eq!(hits, vec![e.oid]);
            let cold = dev.stats().since(&before).page_reads;
            assert!(cold >= t.height() as u64 && cold <= t.pages());
            if levels
                .iter()
                .all(|l| l.iter().filter(|r| r.contains_point(e.point)).count() == 1)
            {
                assert_eq!(
                    cold,
                    t.height() as u64,
                    "a point inside one node per level reads one path"
                );
                single_leaf_points += 1;
            }
            let before = dev.stats();
            t.search(&cache, &q, |_| {}).unwrap();
            assert_eq!(
                dev.stats().since(&before).page_reads,
                0,
                "warm search must not touch the device"
            );
        }
        assert!(single_leaf_points > 0);
    }

    #[test]
    fn destroy_frees_the_extent_and_invalidates_cached_pages() {
        let dev = device(256);
        let cache = BufferCache::new(dev.clone(), 10_000);
        let a = grid(20);
        let ta = DiskRTree::bulk_load(&*dev, a.iter().copied()).unwrap();
        let all = Rect::new(-1.0, -1.0, 100.0, 100.0);
        assert_eq!(sorted_results(&ta, &cache, &all).len(), a.len());
        assert_eq!(cache.len() as u64, ta.pages());
        let (first, pages) = (ta.first_page(), ta.pages());
        ta.destroy(&cache);
        assert_eq!(dev.allocated_pages(), 0);
        assert!(cache.is_empty());

        // The same shape again, reusing the extent: stale cached pages would answer for `a`.
        let b: Vec<SpatialEntry> = a
            .iter()
            .map(|e| SpatialEntry::new(e.point, e.oid + 1_000_000, e.ts))
            .collect();
        let tb = DiskRTree::bulk_load(&*dev, b.iter().copied()).unwrap();
        assert_eq!((tb.first_page(), tb.pages()), (first, pages));
        assert_eq!(sorted_results(&tb, &cache, &all), oracle(&b, &all));
    }

    #[test]
    fn a_search_nested_in_another_searchs_callback_answers_correctly() {
        // The search stack's allocation is reused per thread; a search started from `f` must
        // neither disturb the outer search nor see its frames.
        let dev = device(256);
        let cache = BufferCache::new(dev.clone(), 10_000);
        let (a, b) = (grid(25), grid(12));
        let ta = DiskRTree::bulk_load(&*dev, a.iter().copied()).unwrap();
        let tb = DiskRTree::bulk_load(&*dev, b.iter().copied()).unwrap();
        let q = Rect::new(3.0, 2.0, 17.5, 9.0);
        let inner_q = Rect::new(1.0, 1.0, 6.0, 4.0);
        let mut outer = Vec::new();
        let mut inner_runs = 0;
        let visited = ta
            .search_counted(&cache, &q, |e| {
                outer.push((e.oid, e.ts));
                assert_eq!(sorted_results(&tb, &cache, &inner_q), oracle(&b, &inner_q));
                inner_runs += 1;
            })
            .unwrap();
        outer.sort_unstable();
        assert_eq!(outer, oracle(&a, &q));
        assert_eq!(inner_runs, outer.len());
        assert_eq!(visited, ta.search_counted(&cache, &q, |_| {}).unwrap());
    }

    /// Deterministic garbage (xorshift).
    fn garbage(len: usize, mut s: u64) -> Vec<u8> {
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
            .collect()
    }

    #[test]
    fn garbage_on_any_page_is_reported_as_corrupt() {
        let ps = 256;
        let dev = device(ps);
        let es = grid(30);
        let t = DiskRTree::bulk_load(&*dev, es.iter().copied()).unwrap();
        assert!(t.height() >= 3);
        let all = Rect::new(-1.0, -1.0, 100.0, 100.0);
        let mut orig = vec![0u8; ps];
        for p in t.first_page()..t.first_page() + t.pages() {
            dev.read_page(p, &mut orig).unwrap();
            dev.write_page(p, &garbage(ps, p + 1)).unwrap();
            let cache = BufferCache::new(dev.clone(), 0);
            match t.search(&cache, &all, |_| {}) {
                Err(Error::Corrupt { page, .. }) => assert_eq!(page, p),
                other => panic!("page {p}: expected Corrupt, got {other:?}"),
            }
            if p < t.first_page() + t.leaf_pages() {
                assert!(matches!(t.scan(&*dev), Err(Error::Corrupt { page, .. }) if page == p));
            } else {
                assert_eq!(t.scan(&*dev).unwrap(), es, "scan reads only the leaves");
            }
            dev.write_page(p, &orig).unwrap();
        }
        assert_eq!(
            sorted_results(&t, &BufferCache::new(dev.clone(), 0), &all),
            oracle(&es, &all)
        );
    }

    #[test]
    fn plausible_but_wrong_contents_are_reported_as_corrupt() {
        let ps = 256;
        let dev = device(ps);
        let es = grid(30);
        let t = DiskRTree::bulk_load(&*dev, es.iter().copied()).unwrap();
        let all = Rect::new(-1.0, -1.0, 100.0, 100.0);
        let cache = BufferCache::new(dev.clone(), 0);
        let mut page = vec![0u8; ps];
        let corrupt = |t: &DiskRTree| matches!(t.search(&cache, &all, |_| {}), Err(Error::Corrupt { .. }));

        // A leaf point moved outside its leaf's MBR (header intact).
        let leaf = t.first_page() + 3;
        dev.read_page(leaf, &mut page).unwrap();
        let orig = page.clone();
        page[HEADER_SIZE..HEADER_SIZE + 8].copy_from_slice(&1e9f64.to_le_bytes());
        dev.write_page(leaf, &page).unwrap();
        assert!(corrupt(&t));
        assert!(matches!(t.scan(&*dev), Err(Error::Corrupt { .. })));
        dev.write_page(leaf, &orig).unwrap();

        // A wrong entry count in a full leaf.
        page.copy_from_slice(&orig);
        page[4..8].copy_from_slice(&1u32.to_le_bytes());
        dev.write_page(leaf, &page).unwrap();
        assert!(corrupt(&t));
        dev.write_page(leaf, &orig).unwrap();

        // A child pointer of the root redirected to a sibling.
        let root = t.root_page();
        dev.read_page(root, &mut page).unwrap();
        let orig = page.clone();
        let ptr = HEADER_SIZE + 32;
        let child = u64::from_le_bytes(page[ptr..ptr + 8].try_into().unwrap());
        page[ptr..ptr + 8].copy_from_slice(&(child + 1).to_le_bytes());
        dev.write_page(root, &page).unwrap();
        assert!(corrupt(&t));
        dev.write_page(root, &orig).unwrap();

        // A leaf page written where an internal page belongs: the kind and level bytes disagree.
        dev.read_page(t.first_page(), &mut page).unwrap();
        dev.write_page(root, &page).unwrap();
        assert!(corrupt(&t));
        dev.write_page(root, &orig).unwrap();

        assert_eq!(sorted_results(&t, &cache, &all), oracle(&es, &all));
    }

    #[test]
    fn a_checked_page_is_checked_again_once_its_bytes_change_or_it_is_read_again() {
        let ps = 256;
        let dev = device(ps);
        let es = grid(30);
        let t = DiskRTree::bulk_load(&*dev, es.iter().copied()).unwrap();
        let all = Rect::new(-1.0, -1.0, 100.0, 100.0);
        let cache = BufferCache::new(dev.clone(), 10_000);
        let corrupt_at = |t: &DiskRTree| match t.search(&cache, &all, |_| {}) {
            Err(Error::Corrupt { page, .. }) => Some(page),
            Ok(()) => None,
            Err(e) => panic!("{e}"),
        };
        // Every page checked and noted; the warm search answers and visits the same.
        let cold = t.search_counted(&cache, &all, |_| {}).unwrap();
        assert_eq!(sorted_results(&t, &cache, &all), oracle(&es, &all));
        assert_eq!(t.search_counted(&cache, &all, |_| {}).unwrap(), cold);

        // A leaf rewritten in place through the cache: its note is gone, the new bytes are checked.
        let leaf = t.first_page() + 3;
        let orig = cache.read(leaf).unwrap().to_vec();
        let mut bad = orig.clone();
        bad[HEADER_SIZE..HEADER_SIZE + 8].copy_from_slice(&1e9f64.to_le_bytes());
        cache.write(leaf, &bad).unwrap();
        assert_eq!(corrupt_at(&t), Some(leaf));
        cache.write(leaf, &orig).unwrap();
        assert_eq!(corrupt_at(&t), None);

        // Corrupted on the device while a checked copy is cached: the copy answers; once evicted,
        // the page read again is checked again.
        cache.flush_dirty().unwrap();
        dev.write_page(leaf, &bad).unwrap();
        assert_eq!(corrupt_at(&t), None);
        assert!(cache.evict(leaf).unwrap());
        assert_eq!(corrupt_at(&t), Some(leaf));
        dev.write_page(leaf, &orig).unwrap();
        assert!(cache.evict(leaf).unwrap());
        assert_eq!(corrupt_at(&t), None);

        // A parent whose record of a checked child changes: the child's kept MBR no longer matches.
        // Shrink the record of a child that does not bound the root on the right, so the root
        // itself still covers the tree's MBR.
        let root = t.root_page();
        let orig = cache.read(root).unwrap().to_vec();
        let count = read_count(&orig);
        let max_x = |k: usize| f64::from_le_bytes(orig[HEADER_SIZE + k * 40 + 16..][..8].try_into().unwrap());
        let k = (0..count)
            .find(|&k| (0..count).any(|j| j != k && max_x(j) >= max_x(k)))
            .unwrap();
        let child = read_u64(&orig, HEADER_SIZE + k * 40 + 32);
        let mut bad = orig.clone();
        bad[HEADER_SIZE + k * 40 + 16..][..8].copy_from_slice(&(max_x(k) - 0.5).to_le_bytes());
        cache.write(root, &bad).unwrap();
        assert_eq!(corrupt_at(&t), Some(child));
        cache.write(root, &orig).unwrap();
        assert_eq!(sorted_results(&t, &cache, &all), oracle(&es, &all));
    }

    /// An iterator whose `len()` lies.
    struct Lying(std::vec::IntoIter<SpatialEntry>, usize);
    impl Iterator for Lying {
        type Item = SpatialEntry;
        fn next(&mut self) -> Option<SpatialEntry> {
            self.0.next()
        }
    }
    impl ExactSizeIterator for Lying {
        fn len(&self) -> usize {
            self.1
        }
    }

    #[test]
    fn a_lying_iterator_or_a_tiny_page_is_an_error_and_leaks_nothing() {
        let dev = device(256);
        let es = grid(10);
        for claimed in [es.len() - 1, es.len() + 1] {
            let r = DiskRTree::bulk_load(&*dev, Lying(es.clone().into_iter(), claimed));
            assert!(matches!(r, Err(Error::Config(_))), "claimed {claimed}");
            assert_eq!(dev.allocated_pages(), 0);
        }
        let tiny = device(64);
        assert!(matches!(
            DiskRTree::bulk_load(&*tiny, es.into_iter()),
            Err(Error::Config(_))
        ));
        assert_eq!(tiny.allocated_pages(), 0);
    }
}
