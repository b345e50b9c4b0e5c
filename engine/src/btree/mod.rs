//! Bulk-loaded B+-tree components: the immutable disk components of AsterixDB-style LSM B+-trees.
//!
//! One structure serves every B+-tree the strategies need: the primary key index of the
//! Validation strategy (oid -> latest ts and a deleted flag), the deleted-key B+-tree kept beside
//! each LSM R-tree disk component by Eager (oid only, value `()`), and a primary index
//! (oid -> location, value [`Point`]). A component is built once by [`BTreeComponent::bulk_load`]
//! from keys in strictly increasing order, packed full (fill factor 1.0, as AsterixDB's bulk loader
//! packs), and never modified; merges scan components and bulk-load a new one.
//!
//! # Page layout
//!
//! All pages of a component live in one contiguous extent: the leaves first (in key order), then
//! each internal level bottom-up, the root last. Every page starts with a 16-byte header (integers
//! little endian):
//!
//! | offset | size | field                                                        |
//! |--------|------|--------------------------------------------------------------|
//! | 0      | 2    | magic `b"B+"`                                                |
//! | 2      | 1    | kind: 1 = leaf, 2 = internal                                 |
//! | 3      | 1    | level: 0 for leaves, the height above the leaves otherwise   |
//! | 4      | 2    | value size: `V::SIZE` in leaves, 4 in internal nodes         |
//! | 6      | 2    | reserved, zero                                               |
//! | 8      | 4    | entry count                                                  |
//! | 12     | 4    | reserved, zero                                               |
//!
//! followed by `count` keys (u64) and then `count` values. A leaf's values are `V::SIZE` bytes
//! each; an internal node's are u32 child positions relative to the extent's first page, and its
//! key `i` is the smallest key under child `i`. Every header field is checked when a page is read;
//! a mismatch is [`Error::Corrupt`].

mod bloom;

pub use bloom::BloomFilter;

use crate::cache::BufferCache;
use crate::geom::Point;
use crate::storage::{Device, PageId};
use crate::{Error, Result};
use std::marker::PhantomData;

/// A value of fixed encoded size stored beside each key in a leaf.
pub trait FixedValue: Copy + std::fmt::Debug + Send + Sync + 'static {
    /// Encoded size in bytes.
    const SIZE: usize;
    /// Writes the value into `out` (`out.len() == SIZE`).
    fn encode(&self, out: &mut [u8]);
    /// Reads a value from `bytes` (`bytes.len() == SIZE`).
    fn decode(bytes: &[u8]) -> Self;
}

/// No value: a key set, such as the deleted-key B+-tree.
impl FixedValue for () {
    const SIZE: usize = 0;
    fn encode(&self, _out: &mut [u8]) {}
    fn decode(_bytes: &[u8]) -> Self {}
}

impl FixedValue for u64 {
    const SIZE: usize = 8;
    fn encode(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
    fn decode(bytes: &[u8]) -> Self {
        crate::bytes::u64_le(bytes, 0)
    }
}

/// One byte, 0 or 1 (any non-zero byte decodes as `true`).
impl FixedValue for bool {
    const SIZE: usize = 1;
    fn encode(&self, out: &mut [u8]) {
        out[0] = u8::from(*self);
    }
    fn decode(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

/// A location: x then y, each an f64 (16 bytes).
impl FixedValue for Point {
    const SIZE: usize = 16;
    fn encode(&self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.x.to_le_bytes());
        out[8..16].copy_from_slice(&self.y.to_le_bytes());
    }
    fn decode(bytes: &[u8]) -> Self {
        Point::new(crate::bytes::f64_le(bytes, 0), crate::bytes::f64_le(bytes, 8))
    }
}

/// Two values side by side, e.g. `(u64, bool)` for the primary key index's (latest ts, deleted).
impl<A: FixedValue, B: FixedValue> FixedValue for (A, B) {
    const SIZE: usize = A::SIZE + B::SIZE;
    fn encode(&self, out: &mut [u8]) {
        self.0.encode(&mut out[..A::SIZE]);
        self.1.encode(&mut out[A::SIZE..]);
    }
    fn decode(bytes: &[u8]) -> Self {
        (A::decode(&bytes[..A::SIZE]), B::decode(&bytes[A::SIZE..]))
    }
}

const HEADER_SIZE: usize = 16;
const MAGIC: [u8; 2] = *b"B+";
const KIND_LEAF: u8 = 1;
const KIND_INTERNAL: u8 = 2;
const KEY_SIZE: usize = 8;
/// Size of an internal node's child pointer (a page position relative to the extent's start).
const CHILD_SIZE: usize = 4;

/// What a node is expected to be when it is read; checked against its header.
#[derive(Clone, Copy)]
struct NodeShape {
    kind: u8,
    level: u8,
    value_size: usize,
    capacity: usize,
}

/// Writes a header and clears the rest of `page`.
fn write_header(page: &mut [u8], shape: NodeShape, count: usize) {
    page.fill(0);
    page[0..2].copy_from_slice(&MAGIC);
    page[2] = shape.kind;
    page[3] = shape.level;
    page[4..6].copy_from_slice(&(shape.value_size as u16).to_le_bytes());
    page[8..12].copy_from_slice(&(count as u32).to_le_bytes());
}

/// Checks a page's header against the shape the reader expects and returns its entry count.
fn read_header(page: &[u8], id: PageId, shape: NodeShape) -> Result<usize> {
    let corrupt = |reason: String| Error::Corrupt { page: id, reason };
    if page.len() < HEADER_SIZE || page[0..2] != MAGIC {
        return Err(corrupt("not a B+-tree page (bad magic)".into()));
    }
    if page[2] != shape.kind {
        return Err(corrupt(format!(
            "node kind {} where {} was expected",
            page[2], shape.kind
        )));
    }
    if page[3] != shape.level {
        return Err(corrupt(format!(
            "node level {} where {} was expected",
            page[3], shape.level
        )));
    }
    let value_size = u16::from_le_bytes([page[4], page[5]]) as usize;
    if value_size != shape.value_size {
        return Err(corrupt(format!(
            "value size {value_size} where {} was expected",
            shape.value_size
        )));
    }
    let count = crate::bytes::u32_le(page, 8) as usize;
    if count > shape.capacity {
        return Err(corrupt(format!(
            "entry count {count} exceeds the node capacity {}",
            shape.capacity
        )));
    }
    if shape.kind == KIND_INTERNAL && count == 0 {
        return Err(corrupt("internal node without children".into()));
    }
    Ok(count)
}

fn key_at(page: &[u8], i: usize) -> u64 {
    let off = HEADER_SIZE + i * KEY_SIZE;
    crate::bytes::u64_le(page, off)
}

/// Offset of value `i` in a node holding `count` keys with values of `value_size` bytes.
fn value_offset(count: usize, value_size: usize, i: usize) -> usize {
    HEADER_SIZE + count * KEY_SIZE + i * value_size
}

/// Number of the first `count` keys of `page` that are `<= key` (keys are sorted).
fn keys_at_most(page: &[u8], count: usize, key: u64) -> usize {
    let (mut lo, mut hi) = (0, count);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if key_at(page, mid) <= key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// An immutable, bulk-loaded B+-tree stored in one extent of a device, with an optional in-memory
/// Bloom filter. The struct is the component's metadata; its pages stay on the device until
/// [`BTreeComponent::destroy`] (dropping the struct does not free them).
#[derive(Debug)]
pub struct BTreeComponent<V: FixedValue> {
    first: PageId,
    /// Pages per level, leaves first; the last level holds only the root.
    level_pages: Vec<u64>,
    pages: u64,
    entries: u64,
    page_size: usize,
    min_key: Option<u64>,
    max_key: Option<u64>,
    bloom: Option<BloomFilter>,
    _values: PhantomData<fn() -> V>,
}

impl<V: FixedValue> BTreeComponent<V> {
    /// Keys per leaf for a page size (for sizing memory components in pages).
    pub fn leaf_capacity(page_size: usize) -> usize {
        page_size.saturating_sub(HEADER_SIZE) / (KEY_SIZE + V::SIZE)
    }

    /// Children per internal node for a page size.
    pub fn internal_capacity(page_size: usize) -> usize {
        page_size.saturating_sub(HEADER_SIZE) / (KEY_SIZE + CHILD_SIZE)
    }

    fn leaf_shape(page_size: usize) -> NodeShape {
        NodeShape {
            kind: KIND_LEAF,
            level: 0,
            value_size: V::SIZE,
            capacity: Self::leaf_capacity(page_size),
        }
    }

    fn internal_shape(page_size: usize, level: usize) -> NodeShape {
        NodeShape {
            kind: KIND_INTERNAL,
            level: level as u8,
            value_size: CHILD_SIZE,
            capacity: Self::internal_capacity(page_size),
        }
    }

    /// Pages per level for `entries` keys, leaves first (at least one leaf, even when empty).
    fn plan_levels(entries: u64, leaf_cap: usize, internal_cap: usize) -> Vec<u64> {
        let mut top = entries.div_ceil(leaf_cap as u64).max(1);
        let mut levels = vec![top];
        while top > 1 {
            top = top.div_ceil(internal_cap as u64);
            levels.push(top);
        }
        levels
    }

    /// Builds a component from `entries`, whose keys must be strictly increasing (otherwise
    /// [`Error::Config`] names the offending key). Leaves are packed full, internal levels are
    /// built bottom-up, and every page is written to `device` into one freshly allocated extent:
    /// straight to a device (bypassing the cache), or through a [`crate::cache::CacheSink`] that
    /// lets the cache admit the pages. `bloom_fp` is the Bloom filter's false-positive rate
    /// (AsterixDB's default is 0.01); `None` or `Some(0.0)` builds no filter. On error the extent
    /// is freed again.
    pub fn bulk_load<S: crate::cache::PageSink + ?Sized>(
        device: &S,
        entries: impl ExactSizeIterator<Item = (u64, V)>,
        bloom_fp: Option<f64>,
    ) -> Result<Self> {
        let page_size = device.page_size();
        let leaf_cap = Self::leaf_capacity(page_size);
        let internal_cap = Self::internal_capacity(page_size);
        if leaf_cap < 1 || internal_cap < 2 || V::SIZE > u16::MAX as usize {
            return Err(Error::Config(format!(
                "page size {page_size} is too small for a B+-tree with {}-byte values",
                V::SIZE
            )));
        }
        let bloom_fp = bloom_fp.filter(|&fp| fp != 0.0);
        if let Some(fp) = bloom_fp {
            if !(fp > 0.0 && fp < 1.0) {
                return Err(Error::Config(format!(
                    "Bloom filter false-positive rate {fp} is outside [0, 1)"
                )));
            }
        }
        let n = entries.len() as u64;
        let level_pages = Self::plan_levels(n, leaf_cap, internal_cap);
        if level_pages.len() > u8::MAX as usize {
            return Err(Error::Config(format!("{n} entries make a B+-tree too tall")));
        }
        let pages: u64 = level_pages.iter().sum();
        if pages > u32::MAX as u64 {
            return Err(Error::Config(format!("{n} entries need more than 2^32 pages")));
        }
        let first = device.allocate(pages);
        let mut component = BTreeComponent {
            first,
            level_pages,
            pages,
            entries: n,
            page_size,
            min_key: None,
            max_key: None,
            bloom: bloom_fp.map(|fp| BloomFilter::new(n, fp)),
            _values: PhantomData,
        };
        match component.write_pages(device, entries) {
            Ok(()) => Ok(component),
            Err(e) => {
                device.free(first, pages);
                Err(e)
            }
        }
    }

    /// The body of [`Self::bulk_load`] once the extent is allocated.
    fn write_pages<S: crate::cache::PageSink + ?Sized>(
        &mut self,
        device: &S,
        entries: impl Iterator<Item = (u64, V)>,
    ) -> Result<()> {
        let ps = self.page_size;
        let leaf_shape = Self::leaf_shape(ps);
        let cap = leaf_shape.capacity;
        let mut page = vec![0u8; ps];
        let mut keys: Vec<u64> = Vec::with_capacity(cap);
        let mut values = vec![0u8; cap * V::SIZE];
        // Smallest key of each node of the level being built, leaves first.
        let mut node_min_keys: Vec<u64> = Vec::with_capacity(self.level_pages[0] as usize);
        let mut leaves_written = 0u64;
        let mut seen = 0u64;
        let first = self.first;
        // Only called with at most `cap` keys and, thanks to the length checks below, at most
        // `level_pages[0]` times.
        let mut flush_leaf = |keys: &mut Vec<u64>, values: &[u8], leaves_written: &mut u64| -> Result<()> {
            write_header(&mut page, leaf_shape, keys.len());
            for (i, k) in keys.iter().enumerate() {
                let off = HEADER_SIZE + i * KEY_SIZE;
                page[off..off + KEY_SIZE].copy_from_slice(&k.to_le_bytes());
            }
            let vstart = value_offset(keys.len(), V::SIZE, 0);
            page[vstart..vstart + keys.len() * V::SIZE].copy_from_slice(&values[..keys.len() * V::SIZE]);
            device.write_page(first + *leaves_written, &page)?;
            *leaves_written += 1;
            if let Some(&k) = keys.first() {
                node_min_keys.push(k);
            }
            keys.clear();
            Ok(())
        };
        for (key, value) in entries {
            if let Some(prev) = self.max_key {
                if key <= prev {
                    return Err(Error::Config(format!(
                        "bulk load keys must be strictly increasing: key {key} (entry {seen}) follows {prev}"
                    )));
                }
            }
            seen += 1;
            if seen > self.entries {
                return Err(Error::Config(format!(
                    "bulk load input yields more entries than its declared length {}",
                    self.entries
                )));
            }
            self.min_key.get_or_insert(key);
            self.max_key = Some(key);
            if let Some(bloom) = &mut self.bloom {
                bloom.insert(key);
            }
            let slot = keys.len();
            value.encode(&mut values[slot * V::SIZE..(slot + 1) * V::SIZE]);
            keys.push(key);
            if keys.len() == cap {
                flush_leaf(&mut keys, &values, &mut leaves_written)?;
            }
        }
        if seen != self.entries {
            return Err(Error::Config(format!(
                "bulk load input yielded {seen} entries but declared {}",
                self.entries
            )));
        }
        if !keys.is_empty() || leaves_written == 0 {
            flush_leaf(&mut keys, &values, &mut leaves_written)?;
        }
        debug_assert_eq!(leaves_written, self.level_pages[0]);

        // Internal levels, bottom-up: level `l` packs the nodes of level `l - 1` in order.
        let mut child_base = 0u64; // relative position of the level below's first page
        for level in 1..self.level_pages.len() {
            let shape = Self::internal_shape(ps, level);
            let below = self.level_pages[level - 1];
            let base = child_base + below;
            let mut next_min_keys = Vec::with_capacity(self.level_pages[level] as usize);
            for (node, chunk) in node_min_keys.chunks(shape.capacity).enumerate() {
                write_header(&mut page, shape, chunk.len());
                let first_child = child_base + (node * shape.capacity) as u64;
                for (i, &k) in chunk.iter().enumerate() {
                    let off = HEADER_SIZE + i * KEY_SIZE;
                    page[off..off + KEY_SIZE].copy_from_slice(&k.to_le_bytes());
                    let off = value_offset(chunk.len(), CHILD_SIZE, i);
                    let child = (first_child + i as u64) as u32;
                    page[off..off + CHILD_SIZE].copy_from_slice(&child.to_le_bytes());
                }
                device.write_page(self.first + base + node as u64, &page)?;
                next_min_keys.push(chunk[0]);
            }
            debug_assert_eq!(next_min_keys.len() as u64, self.level_pages[level]);
            node_min_keys = next_min_keys;
            child_base = base;
        }
        Ok(())
    }

    /// Relative position of the first page of `level`.
    fn level_start(&self, level: usize) -> u64 {
        self.level_pages[..level].iter().sum()
    }

    /// Point lookup through the buffer cache. The Bloom filter is consulted first, so a negative
    /// costs no page read; otherwise the search descends from the root, one page per level, with a
    /// binary search in each node. An empty component answers without reading.
    pub fn get(&self, cache: &BufferCache, key: u64) -> Result<Option<V>> {
        if !self.may_contain(key) {
            return Ok(None);
        }
        self.get_unfiltered(cache, key)
    }

    /// [`Self::get`] without consulting the Bloom filter: the search descends from the root even
    /// when the filter rules the key out (what a caller that skips or inverts the filter pays).
    pub fn get_unfiltered(&self, cache: &BufferCache, key: u64) -> Result<Option<V>> {
        if self.entries == 0 {
            return Ok(None);
        }
        if cache.page_size() != self.page_size {
            return Err(Error::Config(format!(
                "cache page size {} differs from the component's {}",
                cache.page_size(),
                self.page_size
            )));
        }
        let height = self.level_pages.len();
        let mut node = self.pages - 1; // the root
        for level in (1..height).rev() {
            let id = self.first + node;
            let page = cache.read(id)?;
            let count = read_header(&page, id, Self::internal_shape(self.page_size, level))?;
            let i = keys_at_most(&page, count, key);
            if i == 0 {
                return Ok(None); // smaller than every key under this node
            }
            let off = value_offset(count, CHILD_SIZE, i - 1);
            let child = crate::bytes::u32_le(&page, off) as u64;
            let below = self.level_start(level - 1);
            if !(below..below + self.level_pages[level - 1]).contains(&child) {
                return Err(Error::Corrupt {
                    page: id,
                    reason: format!("child pointer {child} lies outside level {}", level - 1),
                });
            }
            node = child;
        }
        let id = self.first + node;
        let page = cache.read(id)?;
        let count = read_header(&page, id, Self::leaf_shape(self.page_size))?;
        let i = keys_at_most(&page, count, key);
        if i == 0 || key_at(&page, i - 1) != key {
            return Ok(None);
        }
        let off = value_offset(count, V::SIZE, i - 1);
        Ok(Some(V::decode(&page[off..off + V::SIZE])))
    }

    /// Whether the component has a Bloom filter.
    pub fn has_bloom(&self) -> bool {
        self.bloom.is_some()
    }

    /// True unless the Bloom filter rules the key out (always true without a filter).
    pub fn may_contain(&self, key: u64) -> bool {
        self.bloom.as_ref().is_none_or(|b| b.may_contain(key))
    }

    /// Calls `f` on every entry in key order, reading the leaf pages straight from the device (a
    /// merge's sequential scan: counted as page reads, not polluting the cache).
    pub fn scan_with(&self, device: &dyn Device, mut f: impl FnMut(u64, V) -> Result<()>) -> Result<()> {
        if device.page_size() != self.page_size {
            return Err(Error::Config(format!(
                "device page size {} differs from the component's {}",
                device.page_size(),
                self.page_size
            )));
        }
        let shape = Self::leaf_shape(self.page_size);
        let mut page = vec![0u8; self.page_size];
        let mut prev: Option<u64> = None;
        let mut seen = 0u64;
        for leaf in 0..self.level_pages[0] {
            let id = self.first + leaf;
            device.read_page(id, &mut page)?;
            let count = read_header(&page, id, shape)?;
            for i in 0..count {
                let key = key_at(&page, i);
                if let Some(p) = prev.filter(|&p| key <= p) {
                    return Err(Error::Corrupt {
                        page: id,
                        reason: format!("key {key} out of order after {p}"),
                    });
                }
                prev = Some(key);
                let off = value_offset(count, V::SIZE, i);
                f(key, V::decode(&page[off..off + V::SIZE]))?;
            }
            seen += count as u64;
        }
        if seen != self.entries {
            return Err(Error::Corrupt {
                page: self.first,
                reason: format!("leaves hold {seen} entries, the component {}", self.entries),
            });
        }
        Ok(())
    }

    /// Every entry in key order, read like [`Self::scan_with`].
    pub fn scan(&self, device: &dyn Device) -> Result<Vec<(u64, V)>> {
        let mut out = Vec::with_capacity(self.entries as usize);
        self.scan_with(device, |k, v| {
            out.push((k, v));
            Ok(())
        })?;
        Ok(out)
    }

    /// Number of entries.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Pages in the extent (leaves plus internal nodes).
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// Leaf pages (the pages a scan reads).
    pub fn leaf_pages(&self) -> u64 {
        self.level_pages[0]
    }

    /// Levels including the leaves: the page reads of a cold lookup.
    pub fn height(&self) -> usize {
        self.level_pages.len()
    }

    /// First page of the component's extent.
    pub fn first_page(&self) -> PageId {
        self.first
    }

    /// The smallest key in the component; `None` when it is empty.
    pub fn min_key(&self) -> Option<u64> {
        self.min_key
    }

    /// The largest key in the component; `None` when it is empty.
    pub fn max_key(&self) -> Option<u64> {
        self.max_key
    }

    /// The Bloom filter, if the component has one.
    pub fn bloom(&self) -> Option<&BloomFilter> {
        self.bloom.as_ref()
    }

    /// Frees the extent (on the cache's device, which must be the one it was loaded on) and
    /// invalidates its cached pages.
    pub fn destroy(self, cache: &BufferCache) {
        cache.free(self.first, self.pages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemDevice;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    const PS: usize = 256;

    fn setup() -> (Arc<dyn Device>, BufferCache) {
        let dev: Arc<dyn Device> = Arc::new(MemDevice::new(PS));
        let cache = BufferCache::new(dev.clone(), 1 << 20);
        (dev, cache)
    }

    fn reads(dev: &Arc<dyn Device>) -> u64 {
        dev.stats().page_reads
    }

    /// Keys 3i + 1, so 3i and 3i + 2 are absent.
    fn entries(n: u64) -> std::vec::IntoIter<(u64, u64)> {
        (0..n).map(|i| (3 * i + 1, i * i)).collect::<Vec<_>>().into_iter()
    }

    #[test]
    fn capacities_for_the_paper_page_size() {
        assert_eq!(BTreeComponent::<()>::leaf_capacity(2048), 254);
        assert_eq!(BTreeComponent::<u64>::leaf_capacity(2048), 127);
        assert_eq!(BTreeComponent::<Point>::leaf_capacity(2048), 84);
        assert_eq!(BTreeComponent::<u64>::internal_capacity(2048), 169);
        assert_eq!(BTreeComponent::<u64>::leaf_capacity(PS), 15);
        assert_eq!(BTreeComponent::<u64>::internal_capacity(PS), 20);
    }

    #[test]
    fn lookups_find_every_key_and_no_absent_key_across_sizes() {
        let cap = BTreeComponent::<u64>::leaf_capacity(PS) as u64;
        for n in [0, 1, cap, cap + 1, 10_000] {
            let (dev, cache) = setup();
            let t = BTreeComponent::bulk_load(dev.as_ref(), entries(n), None).unwrap();
            assert_eq!(t.entries(), n);
            assert_eq!(t.pages(), dev.allocated_pages());
            assert_eq!(dev.stats().page_writes, t.pages(), "n = {n}");
            assert_eq!(t.leaf_pages(), n.div_ceil(cap).max(1));
            for i in 0..n {
                assert_eq!(
                    t.get(&cache, 3 * i + 1).unwrap(),
                    Some(i * i),
                    "n = {n}, key {}",
                    3 * i + 1
                );
                assert_eq!(t.get(&cache, 3 * i).unwrap(), None);
                assert_eq!(t.get(&cache, 3 * i + 2).unwrap(), None);
            }
            assert_eq!(t.get(&cache, u64::MAX).unwrap(), None);
            assert_eq!(t.min_key(), (n > 0).then_some(1));
            assert_eq!(t.max_key(), n.checked_sub(1).map(|i| 3 * i + 1));
            let scanned = t.scan(dev.as_ref()).unwrap();
            assert_eq!(scanned, entries(n).collect::<Vec<_>>());
            match n {
                0 | 1 => assert_eq!((t.height(), t.pages()), (1, 1)),
                n if n == cap => assert_eq!((t.height(), t.pages()), (1, 1)),
                n if n == cap + 1 => assert_eq!((t.height(), t.pages()), (2, 3)),
                // 667 leaves -> 34 -> 2 -> 1 root.
                _ => assert_eq!((t.height(), t.pages()), (4, 667 + 34 + 2 + 1)),
            }
        }
    }

    #[test]
    fn cold_lookup_reads_one_page_per_level_and_warm_lookup_none() {
        let (dev, cache) = setup();
        let t = BTreeComponent::bulk_load(dev.as_ref(), entries(10_000), Some(0.01)).unwrap();
        assert!(t.height() > 1);
        for key in [1, 3 * 5_000 + 1, 3 * 9_999 + 1] {
            let cold = BufferCache::new(dev.clone(), 64);
            let before = reads(&dev);
            assert!(t.get(&cold, key).unwrap().is_some());
            assert_eq!(reads(&dev) - before, t.height() as u64);
            let before = reads(&dev);
            assert!(t.get(&cold, key).unwrap().is_some());
            assert_eq!(reads(&dev) - before, 0);
            assert_eq!(cold.stats().hits, t.height() as u64);
        }
        // A scan reads every leaf from the device, once, and leaves the cache alone.
        let before = (dev.stats(), cache.stats(), cache.len());
        assert_eq!(t.scan(dev.as_ref()).unwrap().len(), 10_000);
        assert_eq!(dev.stats().since(&before.0).page_reads, t.leaf_pages());
        assert_eq!((cache.stats(), cache.len()), (before.1, before.2));
    }

    #[test]
    fn bloom_negatives_read_no_pages() {
        let (dev, _) = setup();
        let n = 10_000u64;
        let t = BTreeComponent::bulk_load(dev.as_ref(), entries(n), Some(0.01)).unwrap();
        let no_cache = BufferCache::new(dev.clone(), 0);
        // Absent keys strictly inside the key range: a lookup that passes the filter reads a full
        // root-to-leaf path.
        let absent: Vec<u64> = (0..n - 1).map(|i| 3 * i + 2).collect();
        let negatives = absent.iter().filter(|&&k| !t.may_contain(k)).count() as u64;
        let before = reads(&dev);
        for &k in &absent {
            assert_eq!(t.get(&no_cache, k).unwrap(), None);
        }
        let false_positives = absent.len() as u64 - negatives;
        assert_eq!(reads(&dev) - before, false_positives * t.height() as u64);
        assert!(
            false_positives < absent.len() as u64 / 50,
            "{false_positives} false positives"
        );
        // Present keys always pass the filter.
        assert!((0..n).all(|i| t.may_contain(3 * i + 1)));
        // Without a filter (None or 0.0) every absent lookup pays the descent.
        for fp in [None, Some(0.0)] {
            let plain = BTreeComponent::bulk_load(dev.as_ref(), entries(n), fp).unwrap();
            assert!(plain.bloom().is_none());
            let before = reads(&dev);
            assert_eq!(plain.get(&no_cache, 3 * 10 + 2).unwrap(), None);
            assert_eq!(reads(&dev) - before, plain.height() as u64);
        }
        // An empty component with a filter rules everything out.
        let empty = BTreeComponent::<u64>::bulk_load(dev.as_ref(), std::iter::empty(), Some(0.01)).unwrap();
        let before = reads(&dev);
        assert_eq!(empty.get(&no_cache, 7).unwrap(), None);
        assert_eq!(reads(&dev), before);
    }

    #[test]
    fn unsorted_or_duplicate_keys_are_rejected_and_the_extent_freed() {
        let (dev, _) = setup();
        let keys = [(1u64, ()), (5, ()), (4, ())];
        match BTreeComponent::bulk_load(dev.as_ref(), keys.into_iter(), None) {
            Err(Error::Config(msg)) => assert!(msg.contains("key 4") && msg.contains("5"), "{msg}"),
            other => panic!("expected a config error, got {other:?}"),
        }
        let dup = (0..100u32).map(|i| (u64::from(i.min(50)), ()));
        assert!(matches!(
            BTreeComponent::bulk_load(dev.as_ref(), dup, None),
            Err(Error::Config(msg)) if msg.contains("key 50")
        ));
        assert!(matches!(
            BTreeComponent::<u64>::bulk_load(dev.as_ref(), entries(3), Some(1.5)),
            Err(Error::Config(_))
        ));
        assert_eq!(dev.allocated_pages(), 0);
    }

    /// An iterator whose declared length is wrong.
    struct Lying(std::ops::Range<u64>, usize);
    impl Iterator for Lying {
        type Item = (u64, ());
        fn next(&mut self) -> Option<(u64, ())> {
            self.0.next().map(|k| (k, ()))
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            (self.1, Some(self.1))
        }
    }
    impl ExactSizeIterator for Lying {}

    #[test]
    fn an_input_length_that_lies_is_an_error() {
        let (dev, _) = setup();
        for (range, claimed) in [(0..100, 40), (0..10, 40), (0..1000, 0)] {
            assert!(matches!(
                BTreeComponent::bulk_load(dev.as_ref(), Lying(range, claimed), None),
                Err(Error::Config(_))
            ));
            assert_eq!(dev.allocated_pages(), 0);
        }
    }

    #[test]
    fn values_of_every_kind_round_trip() {
        let (dev, cache) = setup();
        let pts = (0..500u32).map(|i| (u64::from(i) * 2, Point::new(f64::from(i) * 0.5, -f64::from(i))));
        let t = BTreeComponent::bulk_load(dev.as_ref(), pts, Some(0.01)).unwrap();
        assert_eq!(t.get(&cache, 300).unwrap(), Some(Point::new(75.0, -150.0)));
        assert_eq!(t.get(&cache, 301).unwrap(), None);
        let flags = (0..500u32).map(u64::from).map(|i| (i, (i * 10, i % 3 == 0)));
        let t = BTreeComponent::<(u64, bool)>::bulk_load(dev.as_ref(), flags, None).unwrap();
        assert_eq!(t.get(&cache, 9).unwrap(), Some((90, true)));
        assert_eq!(t.get(&cache, 10).unwrap(), Some((100, false)));
        let set = (0..500u32).map(|i| (u64::from(i) * 7, ()));
        let t = BTreeComponent::bulk_load(dev.as_ref(), set, None).unwrap();
        assert_eq!(t.get(&cache, 49).unwrap(), Some(()));
        assert_eq!(t.get(&cache, 50).unwrap(), None);
    }

    #[test]
    fn destroy_frees_the_extent_and_drops_cached_pages() {
        let (dev, cache) = setup();
        let keep = BTreeComponent::bulk_load(dev.as_ref(), entries(100), None).unwrap();
        let t = BTreeComponent::bulk_load(dev.as_ref(), entries(1000), None).unwrap();
        assert_ne!(keep.first_page(), t.first_page());
        for i in 0..1000 {
            t.get(&cache, 3 * i + 1).unwrap();
        }
        assert!(!cache.is_empty());
        let pages = t.pages();
        t.destroy(&cache);
        assert!(cache.is_empty());
        assert_eq!(cache.stats().invalidations, pages);
        assert_eq!(dev.allocated_pages(), keep.pages());
        assert_eq!(keep.get(&cache, 1).unwrap(), Some(0));
    }

    #[test]
    fn a_bad_header_is_corruption_not_a_wrong_answer() {
        let (dev, cache) = setup();
        let t = BTreeComponent::bulk_load(dev.as_ref(), entries(1000), None).unwrap();
        let root = t.first_page() + t.pages() - 1;
        // Overwrite the root with a leaf page: the kind check catches it.
        let mut page = vec![0u8; PS];
        dev.read_page(t.first_page(), &mut page).unwrap();
        dev.write_page(root, &page).unwrap();
        assert!(matches!(t.get(&cache, 1), Err(Error::Corrupt { page, .. }) if page == root));
        // A leaf with an impossible count.
        let leaf = t.first_page() + 3;
        dev.read_page(leaf, &mut page).unwrap();
        page[8..12].copy_from_slice(&1000u32.to_le_bytes());
        dev.write_page(leaf, &page).unwrap();
        assert!(matches!(t.scan(dev.as_ref()), Err(Error::Corrupt { page, .. }) if page == leaf));
        page[0] = b'X';
        dev.write_page(leaf, &page).unwrap();
        assert!(matches!(t.scan(dev.as_ref()), Err(Error::Corrupt { page, .. }) if page == leaf));
    }

    #[test]
    fn works_on_a_checksummed_file_device() {
        let dir = tempfile::tempdir().unwrap();
        let dev: Arc<dyn Device> = Arc::new(crate::storage::FileDevice::temporary(dir.path(), PS).unwrap());
        let t = BTreeComponent::bulk_load(dev.as_ref(), entries(2000), Some(0.01)).unwrap();
        let cache = BufferCache::new(dev.clone(), 16);
        for i in (0..2000).step_by(7) {
            assert_eq!(t.get(&cache, 3 * i + 1).unwrap(), Some(i * i));
        }
        assert_eq!(t.scan(dev.as_ref()).unwrap().len(), 2000);
        assert_eq!(dev.stats().page_writes, t.pages());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn matches_a_btreemap_oracle(
            map in proptest::collection::btree_map(0u64..5_000, any::<u64>(), 0..1_500),
            probes in proptest::collection::vec(0u64..5_100, 0..200),
            with_bloom in any::<bool>(),
        ) {
            let (dev, cache) = setup();
            let oracle: BTreeMap<u64, u64> = map;
            let fp = with_bloom.then_some(0.01);
            let t = BTreeComponent::bulk_load(dev.as_ref(), oracle.iter().map(|(&k, &v)| (k, v)), fp).unwrap();
            prop_assert_eq!(t.entries(), oracle.len() as u64);
            for k in probes.iter().copied().chain(oracle.keys().copied()) {
                prop_assert_eq!(t.get(&cache, k).unwrap(), oracle.get(&k).copied());
            }
            let scanned = t.scan(dev.as_ref()).unwrap();
            prop_assert_eq!(scanned, oracle.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>());
            prop_assert_eq!(t.min_key(), oracle.keys().next().copied());
            prop_assert_eq!(t.max_key(), oracle.keys().next_back().copied());
            t.destroy(&cache);
            prop_assert_eq!(dev.allocated_pages(), 0);
        }
    }
}
