//! SSTable-like runs: data blocks of one device page each, an index of the blocks and a Bloom
//! filter, after RocksDB's block-based table (and LevelDB's table format it grew from).
//!
//! A run is one extent: its data blocks in key order, then its index pages. The index (per data
//! block: its page, first key and last key) and the Bloom filter are kept in memory with the run,
//! as RocksDB's table reader pins a table's index and filter blocks in memory; the index is also
//! written to the device (so a run costs its index pages in writes and space) and can be read back
//! with `read_index`. A point lookup asks the Bloom filter, binary-searches the in-memory index
//! and reads at most one data block through the buffer cache; a range scan reads the data blocks
//! that overlap it through the cache; a merge reads whole runs straight from the device (RocksDB's
//! `fill_cache = false` for compaction reads).
//!
//! # Page layout
//!
//! Every page starts with a 16-byte header (integers little endian):
//!
//! | offset | size | field                                                       |
//! |--------|------|-------------------------------------------------------------|
//! | 0      | 2    | magic `b"KV"`                                               |
//! | 2      | 1    | kind: 1 = data block, 2 = index page                        |
//! | 3      | 1    | reserved, zero                                              |
//! | 4      | 4    | entry count                                                 |
//! | 8      | 4    | bytes used (header included), at most the page size         |
//! | 12     | 4    | reserved, zero                                              |
//!
//! A data block then holds `count` 16-byte slots in increasing key order (key u64, value offset
//! u32 from the page start, value length u32, where `u32::MAX` marks a tombstone with no bytes),
//! followed by the values in slot order. An entry costs 16 bytes plus its value, so the largest
//! value a block can hold is the page size minus 32 bytes. An index page holds `count` 24-byte
//! entries (data block page u64, first key u64, last key u64). Every header field, slot bound and
//! key order is checked when a page is read; a mismatch is [`Error::Corrupt`].

use super::warmup::BlockInfo;
use crate::btree::BloomFilter;
use crate::cache::BufferCache;
use crate::lsm::merge::EntryStream;
use crate::lsm::{BlockKeys, BlockSink, WrittenBlock};
use crate::lsm::{Extent, KeyRange, RunFormat, RunInfo, Slot};
use crate::storage::PageId;
use crate::{Error, Result};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::Arc;

/// A stored value or a deletion marker.
pub type KvValue = Slot<Vec<u8>>;

/// Size of every page header.
pub const HEADER_SIZE: usize = 16;
/// Size of a data block's slot (key, value offset, value length).
pub const SLOT_SIZE: usize = 16;
const INDEX_ENTRY_SIZE: usize = 24;
const MAGIC: [u8; 2] = *b"KV";
const KIND_DATA: u8 = 1;
const KIND_INDEX: u8 = 2;
const TOMBSTONE: u32 = u32::MAX;

/// Bytes an entry takes in a data block (its slot and its value).
pub fn entry_size(value: &KvValue) -> usize {
    SLOT_SIZE
        + match value {
            Slot::Live(v) => v.len(),
            Slot::Deleted => 0,
        }
}

/// The largest value an empty data block of `page_size` bytes holds.
pub fn max_value_len(page_size: usize) -> usize {
    page_size.saturating_sub(HEADER_SIZE + SLOT_SIZE)
}

fn write_header(page: &mut [u8], kind: u8, count: usize, used: usize) {
    page.fill(0);
    page[0..2].copy_from_slice(&MAGIC);
    page[2] = kind;
    page[4..8].copy_from_slice(&(count as u32).to_le_bytes());
    page[8..12].copy_from_slice(&(used as u32).to_le_bytes());
}

fn u32_at(page: &[u8], off: usize) -> u32 {
    crate::bytes::u32_le(page, off)
}

fn u64_at(page: &[u8], off: usize) -> u64 {
    crate::bytes::u64_le(page, off)
}

/// Checks a page's header and returns `(count, used)`.
fn read_header(page: &[u8], id: PageId, kind: u8, entry_size: usize) -> Result<(usize, usize)> {
    let corrupt = |reason: String| Error::Corrupt { page: id, reason };
    if page.len() < HEADER_SIZE || page[0..2] != MAGIC {
        return Err(corrupt("not a key-value store page (bad magic)".into()));
    }
    if page[2] != kind {
        return Err(corrupt(format!(
            "page kind {} where {kind} was expected",
            page[2]
        )));
    }
    if page[3] != 0 || page[12..16] != [0; 4] {
        return Err(corrupt("reserved header bytes are not zero".into()));
    }
    let count = u32_at(page, 4) as usize;
    let used = u32_at(page, 8) as usize;
    if used > page.len() {
        return Err(corrupt(format!(
            "{used} bytes used in a page of {} bytes",
            page.len()
        )));
    }
    if HEADER_SIZE + count.saturating_mul(entry_size) > used {
        return Err(corrupt(format!(
            "{count} entries of {entry_size} bytes do not fit the {used} bytes used"
        )));
    }
    Ok((count, used))
}

/// A data block read from a page, its header checked.
struct DataBlock<'a> {
    page: &'a [u8],
    id: PageId,
    count: usize,
    used: usize,
}

impl<'a> DataBlock<'a> {
    fn parse(page: &'a [u8], id: PageId) -> Result<Self> {
        let (count, used) = read_header(page, id, KIND_DATA, SLOT_SIZE)?;
        Ok(DataBlock {
            page,
            id,
            count,
            used,
        })
    }

    fn key(&self, i: usize) -> u64 {
        u64_at(self.page, HEADER_SIZE + i * SLOT_SIZE)
    }

    fn value(&self, i: usize) -> Result<KvValue> {
        let slot = HEADER_SIZE + i * SLOT_SIZE;
        let off = u32_at(self.page, slot + 8) as usize;
        let len = u32_at(self.page, slot + 12);
        if len == TOMBSTONE {
            return Ok(Slot::Deleted);
        }
        let len = len as usize;
        let values_start = HEADER_SIZE + self.count * SLOT_SIZE;
        if off < values_start || off.saturating_add(len) > self.used {
            return Err(Error::Corrupt {
                page: self.id,
                reason: format!(
                    "value {i} at {off}..{} lies outside the value area {values_start}..{}",
                    off.saturating_add(len),
                    self.used
                ),
            });
        }
        Ok(Slot::Live(self.page[off..off + len].to_vec()))
    }

    /// The entry of `key`, found by binary search over the slots.
    fn find(&self, key: u64) -> Result<Option<KvValue>> {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo < self.count && self.key(lo) == key {
            return self.value(lo).map(Some);
        }
        Ok(None)
    }

    /// Entries with keys in `lo..=hi`, in key order, checking the order of every key seen.
    fn entries_in(&self, lo: u64, hi: u64, out: &mut Vec<(u64, KvValue)>) -> Result<()> {
        let mut prev: Option<u64> = None;
        for i in 0..self.count {
            let key = self.key(i);
            if let Some(p) = prev.filter(|&p| key <= p) {
                return Err(Error::Corrupt {
                    page: self.id,
                    reason: format!("key {key} out of order after {p}"),
                });
            }
            prev = Some(key);
            // Every key's order is checked, so a block is never read past its end unchecked.
            if key >= lo && key <= hi {
                out.push((key, self.value(i)?));
            }
        }
        Ok(())
    }

    /// The first and last keys, for checking against the index.
    fn bounds(&self) -> Option<(u64, u64)> {
        (self.count > 0).then(|| (self.key(0), self.key(self.count - 1)))
    }
}

/// Splits entries into data blocks (greedily, each block as full as the next entry allows) and
/// returns each block's entry range. Refuses keys that do not strictly increase and values that
/// do not fit an empty block, naming the key.
pub fn pack_blocks(entries: &[(u64, KvValue)], page_size: usize) -> Result<Vec<Range<usize>>> {
    let room = page_size.saturating_sub(HEADER_SIZE);
    let mut blocks = Vec::new();
    let (mut start, mut used) = (0usize, 0usize);
    for (i, (key, value)) in entries.iter().enumerate() {
        if i > 0 && entries[i - 1].0 >= *key {
            return Err(Error::Config(format!(
                "run entries must have strictly increasing keys: key {key} follows {}",
                entries[i - 1].0
            )));
        }
        let size = entry_size(value);
        if size > room {
            return Err(Error::Config(format!(
                "the value of key {key} ({} bytes) does not fit a data block of {page_size} bytes \
                 (at most {} bytes)",
                size - SLOT_SIZE,
                max_value_len(page_size)
            )));
        }
        if used + size > room {
            blocks.push(start..i);
            start = i;
            used = 0;
        }
        used += size;
    }
    if start < entries.len() {
        blocks.push(start..entries.len());
    }
    Ok(blocks)
}

/// What [`for_each_run`] hands each run's entries to, in key order; an error stops the cutting.
pub type RunSink<'a> = dyn FnMut(&[(u64, KvValue)]) -> Result<()> + 'a;

/// Cuts a stream of entries (strictly increasing keys) into runs of `per_run` data blocks, as
/// one [`pack_blocks`] of every entry would cut them, and hands each run's entries to `emit` in
/// order; without `per_run`, every entry goes to one run. With `per_run` the entries are held a
/// batch of about two runs' bytes at a time: blocks are packed greedily, so a block boundary
/// depends only on the entries since the previous one, and every run but a batch's last is
/// emitted, the last one's entries starting the next batch. So a bulk load or a compaction into
/// the last level holds two runs, not the level.
pub fn for_each_run(
    entries: impl Iterator<Item = Result<(u64, KvValue)>>,
    page_size: usize,
    per_run: Option<usize>,
    emit: &mut RunSink<'_>,
) -> Result<()> {
    let per_run = per_run.map(|p| p.max(1));
    let batch_bytes = per_run.map_or(usize::MAX, |p| p.saturating_mul(page_size).saturating_mul(2));
    let mut entries = entries;
    let mut batch: Vec<(u64, KvValue)> = Vec::new();
    let mut bytes = 0usize;
    loop {
        let next = entries.next().transpose()?;
        let done = next.is_none();
        if let Some(entry) = next {
            bytes += entry_size(&entry.1);
            batch.push(entry);
            if bytes < batch_bytes {
                continue;
            }
        }
        let blocks = pack_blocks(&batch, page_size)?;
        let chunks: Vec<&[Range<usize>]> = blocks.chunks(per_run.unwrap_or(blocks.len().max(1))).collect();
        let complete = if done {
            chunks.len()
        } else {
            chunks.len().saturating_sub(1)
        };
        for chunk in &chunks[..complete] {
            emit(&batch[chunk[0].start..chunk[chunk.len() - 1].end])?;
        }
        if done {
            return Ok(());
        }
        let kept_from = chunks[..complete].last().map_or(0, |c| c[c.len() - 1].end);
        batch.drain(..kept_from);
        bytes = batch.iter().map(|(_, v)| entry_size(v)).sum();
    }
}

/// Writes the data block of `entries` (which fit, see [`pack_blocks`]) into `page`.
fn encode_block(page: &mut [u8], entries: &[(u64, KvValue)]) {
    let mut off = HEADER_SIZE + entries.len() * SLOT_SIZE;
    let mut slots = Vec::with_capacity(entries.len());
    for (_, v) in entries {
        slots.push(off);
        if let Slot::Live(bytes) = v {
            off += bytes.len();
        }
    }
    write_header(page, KIND_DATA, entries.len(), off);
    for (i, ((key, value), &voff)) in entries.iter().zip(&slots).enumerate() {
        let s = HEADER_SIZE + i * SLOT_SIZE;
        page[s..s + 8].copy_from_slice(&key.to_le_bytes());
        page[s + 8..s + 12].copy_from_slice(&(voff as u32).to_le_bytes());
        let len = match value {
            Slot::Live(bytes) => {
                page[voff..voff + bytes.len()].copy_from_slice(bytes);
                bytes.len() as u32
            }
            Slot::Deleted => TOMBSTONE,
        };
        page[s + 12..s + 16].copy_from_slice(&len.to_le_bytes());
    }
}

/// Index entries per index page.
fn index_capacity(page_size: usize) -> usize {
    page_size.saturating_sub(HEADER_SIZE) / INDEX_ENTRY_SIZE
}

/// One run: its extent, its in-memory index and Bloom filter. The pages stay on the device until
/// the format destroys the run.
#[derive(Debug)]
pub struct SstRun {
    first: PageId,
    pages: u64,
    blocks: Vec<BlockInfo>,
    /// The blocks' last keys, searched by lookups instead of `blocks`.
    search: KeySearch,
    entries: u64,
    bloom: Option<BloomFilter>,
    /// Whether a lookup has needed the filter block (slot 0) and each index page (slots 1..) yet:
    /// the first need of each is what [`MetaLookups`] counts as a miss.
    meta_seen: Vec<AtomicBool>,
    /// Index entries per index page.
    index_cap: usize,
}

/// Blocks per fence of [`KeySearch`]: 16 keys, two 64-byte cache lines.
const FENCE: usize = 16;

/// The search keys of a run's in-memory index, apart from its [`BlockInfo`]s: every block's last
/// key, and every [`FENCE`]-th of them again (the last key of each full group of `FENCE`
/// blocks). A binary search over the 24-byte `BlockInfo`s costs a cache miss per halving once a
/// run's index outgrows the CPU caches: at 5 million records on the file device it was about a
/// tenth of a `leaper-online` run's CPU time. The fences, half a byte per block, stay cached, and
/// the search ends in one group's 16 keys (the last keys cost 8 bytes per block beside the
/// block entries). In memory only: the index pages on the device and the index lookups counted in
/// [`MetaLookups`] are unchanged, and the block found is the same.
#[derive(Debug, Default)]
struct KeySearch {
    last_keys: Vec<u64>,
    fences: Vec<u64>,
}

impl KeySearch {
    /// The search keys of `blocks`, in key order.
    fn new(blocks: &[BlockInfo]) -> Self {
        let last_keys: Vec<u64> = blocks.iter().map(|b| b.last_key).collect();
        let fences = last_keys.chunks_exact(FENCE).map(|g| g[FENCE - 1]).collect();
        KeySearch { last_keys, fences }
    }

    /// Position of the first block whose last key is at least `key` (the number of blocks when
    /// none is): the groups before the first fence at least `key` hold only smaller keys, so the
    /// answer is in that group (or in the partial group at the end).
    fn position(&self, key: u64) -> usize {
        let start = self.fences.partition_point(|&k| k < key) * FENCE;
        let end = (start + FENCE).min(self.last_keys.len());
        start + self.last_keys[start..end].partition_point(|&k| k < key)
    }
}

/// Lookups of filter and index blocks, counted beside the data-block reads for the hit-ratio
/// definition of RocksDB with `cache_index_and_filter_blocks = true` (its block-cache hit ratio
/// then counts filter and index blocks as well as data blocks). The store keeps each run's filter
/// and index in memory (RocksDB's pinned table reader); this accounting models them as cache
/// blocks that, once read, stay cached (as `pin_l0_filter_and_index_blocks_in_cache` and
/// high-priority index blocks keep them): the first lookup that needs a run's filter block or
/// one of its index pages is a miss, every later one a hit. It prices nothing on the clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaLookups {
    /// Filter blocks asked (a point lookup into a run whose key range holds the key).
    pub filter_hits: u64,
    /// Filter blocks asked that missed (a run's first).
    pub filter_misses: u64,
    /// Index pages searched (a point lookup the filter let through; a scan, once per run it reads).
    pub index_hits: u64,
    /// Index pages searched that missed (each page's first).
    pub index_misses: u64,
}

impl MetaLookups {
    /// Filter and index lookups that hit.
    pub fn hits(&self) -> u64 {
        self.filter_hits + self.index_hits
    }

    /// Filter and index lookups that missed.
    pub fn misses(&self) -> u64 {
        self.filter_misses + self.index_misses
    }

    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &MetaLookups) {
        self.filter_hits += o.filter_hits;
        self.filter_misses += o.filter_misses;
        self.index_hits += o.index_hits;
        self.index_misses += o.index_misses;
    }
}

impl SstRun {
    /// The data blocks in key order (the in-memory index).
    pub fn blocks(&self) -> &[BlockInfo] {
        &self.blocks
    }

    /// Pages of the extent: data blocks, then index pages.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// Data blocks (one page each).
    pub fn data_blocks(&self) -> u64 {
        self.blocks.len() as u64
    }

    /// Index pages written after the data blocks.
    pub fn index_pages(&self) -> u64 {
        self.pages - self.data_blocks()
    }

    /// The first page of the run's extent.
    pub fn first_page(&self) -> PageId {
        self.first
    }

    /// Entries the run holds, tombstones included.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// The key range of the run's entries; `None` for an empty run.
    pub fn keys(&self) -> Option<KeyRange<u64>> {
        Some(KeyRange::new(
            self.blocks.first()?.first_key,
            self.blocks.last()?.last_key,
        ))
    }

    /// True unless the Bloom filter rules the key out (always true without a filter).
    pub fn may_contain(&self, key: u64) -> bool {
        self.bloom.as_ref().is_none_or(|b| b.may_contain(key))
    }

    /// Position of the first block whose last key is at least `key`.
    fn block_from(&self, key: u64) -> usize {
        self.search.position(key)
    }

    /// Counts one need of meta slot `slot` (0 = filter, 1.. = index pages): a miss the first time.
    fn meta_need(&self, slot: usize) -> bool {
        self.meta_seen
            .get(slot)
            .is_some_and(|seen| !seen.swap(true, AtomicOrdering::Relaxed))
    }

    /// Counts the index page holding block `i` in `meta`.
    fn count_index(&self, i: usize, meta: &mut MetaLookups) {
        let page = 1 + i.min(self.blocks.len().saturating_sub(1)) / self.index_cap.max(1);
        if self.meta_need(page) {
            meta.index_misses += 1;
        } else {
            meta.index_hits += 1;
        }
    }

    /// Point lookup: the Bloom filter, a binary search of the index, at most one data block read
    /// through `cache`.
    pub fn get(&self, cache: &BufferCache, key: u64) -> Result<Option<KvValue>> {
        self.get_counted(cache, key, &mut MetaLookups::default())
    }

    /// [`Self::get`], counting its filter and index lookups into `meta` (see [`MetaLookups`]).
    pub fn get_counted(
        &self,
        cache: &BufferCache,
        key: u64,
        meta: &mut MetaLookups,
    ) -> Result<Option<KvValue>> {
        if self.bloom.is_some() {
            if self.meta_need(0) {
                meta.filter_misses += 1;
            } else {
                meta.filter_hits += 1;
            }
        }
        if !self.may_contain(key) {
            return Ok(None);
        }
        let i = self.block_from(key);
        if !self.blocks.is_empty() {
            self.count_index(i, meta);
        }
        let Some(b) = self.blocks.get(i).filter(|b| b.first_key <= key) else {
            return Ok(None);
        };
        let page = cache.read(b.page)?;
        DataBlock::parse(&page, b.page)?.find(key)
    }

    /// Reads the data blocks [`Self::scan`] reads for `lo..=hi`, through `cache` and in the same
    /// order, checking each block's header but decoding no entry; returns how many it read.
    pub fn touch(&self, cache: &BufferCache, lo: u64, hi: u64) -> Result<u64> {
        self.touch_counted(cache, lo, hi, &mut MetaLookups::default())
    }

    /// [`Self::touch`], counting the index lookup that positions the scan into `meta`.
    pub fn touch_counted(
        &self,
        cache: &BufferCache,
        lo: u64,
        hi: u64,
        meta: &mut MetaLookups,
    ) -> Result<u64> {
        let mut read = 0;
        let from = self.block_from(lo);
        if !self.blocks.is_empty() {
            self.count_index(from, meta);
        }
        for b in self.blocks[from..].iter().take_while(|b| b.first_key <= hi) {
            let page = cache.read(b.page)?;
            DataBlock::parse(&page, b.page)?;
            read += 1;
        }
        Ok(read)
    }

    /// Entries with keys in `lo..=hi` in key order, the overlapping data blocks read through
    /// `cache` (tombstones included: the caller's merge resolves them).
    pub fn scan(&self, cache: &BufferCache, lo: u64, hi: u64) -> Result<Vec<(u64, KvValue)>> {
        self.scan_counted(cache, lo, hi, &mut MetaLookups::default())
    }

    /// [`Self::scan`], counting the index lookup that positions it into `meta` (as
    /// [`Self::touch_counted`] does).
    pub fn scan_counted(
        &self,
        cache: &BufferCache,
        lo: u64,
        hi: u64,
        meta: &mut MetaLookups,
    ) -> Result<Vec<(u64, KvValue)>> {
        let mut out = Vec::new();
        let from = self.block_from(lo);
        if !self.blocks.is_empty() {
            self.count_index(from, meta);
        }
        for b in self.blocks[from..].iter().take_while(|b| b.first_key <= hi) {
            let page = cache.read(b.page)?;
            DataBlock::parse(&page, b.page)?.entries_in(lo, hi, &mut out)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
/// Reads a run's index pages back from the device (the in-memory index is what lookups use; this
/// is the on-device copy, for checking and recovery tools).
pub fn read_index(device: &dyn crate::storage::Device, run: &SstRun) -> Result<Vec<BlockInfo>> {
    let mut out = Vec::with_capacity(run.blocks.len());
    let mut page = vec![0u8; device.page_size()];
    for p in run.first + run.data_blocks()..run.first + run.pages {
        device.read_page(p, &mut page)?;
        let (count, _) = read_header(&page, p, KIND_INDEX, INDEX_ENTRY_SIZE)?;
        for i in 0..count {
            let off = HEADER_SIZE + i * INDEX_ENTRY_SIZE;
            out.push(BlockInfo {
                page: u64_at(&page, off),
                first_key: u64_at(&page, off + 8),
                last_key: u64_at(&page, off + 16),
            });
        }
    }
    Ok(out)
}

/// The run format of the key-value store: builds [`SstRun`]s on the cache's device.
pub struct SstFormat {
    cache: Arc<BufferCache>,
    bloom_fp: Option<f64>,
}

impl SstFormat {
    /// `bloom_fp` is the Bloom filters' false-positive rate (none if `None` or `Some(0.0)`);
    /// a rate outside `[0, 1)` is refused.
    pub fn new(cache: Arc<BufferCache>, bloom_fp: Option<f64>) -> Result<Self> {
        let bloom_fp = bloom_fp.filter(|&fp| fp != 0.0);
        if let Some(fp) = bloom_fp {
            if !(fp > 0.0 && fp < 1.0) {
                return Err(Error::Config(format!(
                    "Bloom filter false-positive rate {fp} is outside [0, 1)"
                )));
            }
        }
        let ps = cache.page_size();
        if max_value_len(ps) == 0 || index_capacity(ps) == 0 {
            return Err(Error::Config(format!(
                "page size {ps} is too small for key-value data blocks"
            )));
        }
        Ok(SstFormat { cache, bloom_fp })
    }

    /// The cache runs are read and written through.
    pub fn cache(&self) -> &Arc<BufferCache> {
        &self.cache
    }

    /// Bytes of a page (a data block).
    pub fn page_size(&self) -> usize {
        self.cache.page_size()
    }

    /// Splits entries into data blocks, see `pack_blocks`.
    pub fn pack(&self, entries: &[(u64, KvValue)]) -> Result<Vec<Range<usize>>> {
        pack_blocks(entries, self.page_size())
    }

    /// Builds a run from `entries` (strictly increasing keys), telling `written` of each data
    /// block (its page, keys and bytes) right after the block is written to the device, where a
    /// warm-up policy may have the cache admit it. Index pages are not told: the store keeps its
    /// index in memory and never reads them through the cache. On error the extent is freed
    /// through the cache, so nothing stays allocated or cached.
    pub fn build_with(&self, entries: &[(u64, KvValue)], written: &mut BlockSink<'_, u64>) -> Result<SstRun> {
        let ps = self.page_size();
        let ranges = self.pack(entries)?;
        let data = ranges.len() as u64;
        let index = data.div_ceil(index_capacity(ps) as u64);
        let mut run = SstRun {
            first: 0,
            pages: data + index,
            blocks: Vec::with_capacity(ranges.len()),
            search: KeySearch::default(),
            entries: entries.len() as u64,
            bloom: self.bloom_fp.map(|fp| BloomFilter::new(entries.len() as u64, fp)),
            meta_seen: (0..1 + index).map(|_| AtomicBool::new(false)).collect(),
            index_cap: index_capacity(ps),
        };
        if run.pages == 0 {
            return Ok(run);
        }
        run.first = self.cache.device().allocate(run.pages);
        match self.write_run(&mut run, entries, &ranges, written) {
            Ok(()) => {
                run.search = KeySearch::new(&run.blocks);
                Ok(run)
            }
            Err(e) => {
                self.cache.free(run.first, run.pages);
                Err(e)
            }
        }
    }

    fn write_run(
        &self,
        run: &mut SstRun,
        entries: &[(u64, KvValue)],
        ranges: &[Range<usize>],
        written: &mut BlockSink<'_, u64>,
    ) -> Result<()> {
        let device = self.cache.device();
        let mut page = vec![0u8; self.page_size()];
        for (i, r) in ranges.iter().enumerate() {
            let block = &entries[r.clone()];
            encode_block(&mut page, block);
            let info = BlockInfo {
                page: run.first + i as u64,
                first_key: block[0].0,
                last_key: block[block.len() - 1].0,
            };
            device.write_page(info.page, &page)?;
            if let Some(bloom) = &mut run.bloom {
                for (k, _) in block {
                    bloom.insert(*k);
                }
            }
            run.blocks.push(info);
            written(&WrittenBlock {
                page: info.page,
                keys: Some(KeyRange::new(info.first_key, info.last_key)),
                bytes: &page,
            })?;
        }
        let cap = index_capacity(self.page_size());
        let index_start = run.first + run.data_blocks();
        for (p, chunk) in (index_start..).zip(run.blocks.chunks(cap)) {
            write_header(
                &mut page,
                KIND_INDEX,
                chunk.len(),
                HEADER_SIZE + chunk.len() * INDEX_ENTRY_SIZE,
            );
            for (i, b) in chunk.iter().enumerate() {
                let off = HEADER_SIZE + i * INDEX_ENTRY_SIZE;
                page[off..off + 8].copy_from_slice(&b.page.to_le_bytes());
                page[off + 8..off + 16].copy_from_slice(&b.first_key.to_le_bytes());
                page[off + 16..off + 24].copy_from_slice(&b.last_key.to_le_bytes());
            }
            device.write_page(p, &page)?;
        }
        Ok(())
    }
}

impl RunFormat for SstFormat {
    type Key = u64;
    type Value = KvValue;
    type Run = SstRun;

    fn build(&self, entries: Vec<(u64, KvValue)>, written: &mut BlockSink<'_, u64>) -> Result<SstRun> {
        self.build_with(&entries, written)
    }

    /// Reads the data blocks one at a time straight from the device (a merge's sequential scan:
    /// counted as device reads, never cached), checking each block against the index.
    fn scan<'a>(&'a self, run: &'a SstRun) -> Result<EntryStream<'a, u64, KvValue>> {
        let device = self.cache.device().clone();
        let mut page = vec![0u8; self.page_size()];
        Ok(Box::new(run.blocks.iter().flat_map(move |b| {
            let read = device.read_page(b.page, &mut page).and_then(|()| {
                let block = DataBlock::parse(&page, b.page)?;
                if block.bounds() != Some((b.first_key, b.last_key)) {
                    return Err(Error::Corrupt {
                        page: b.page,
                        reason: format!(
                            "block holds keys {:?}, the index says {}..={}",
                            block.bounds(),
                            b.first_key,
                            b.last_key
                        ),
                    });
                }
                let mut out = Vec::with_capacity(block.count);
                block.entries_in(0, u64::MAX, &mut out)?;
                Ok(out)
            });
            let items: Vec<Result<(u64, KvValue)>> = match read {
                Ok(entries) => entries.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            items
        })))
    }

    fn destroy(&self, run: SstRun) {
        if run.pages > 0 {
            self.cache.free(run.first, run.pages);
        }
    }

    fn describe(&self, run: &SstRun) -> RunInfo<u64> {
        RunInfo {
            pages: run.pages,
            entries: run.entries,
            keys: run.keys(),
            extents: if run.pages > 0 {
                vec![Extent {
                    first: run.first,
                    pages: run.pages,
                }]
            } else {
                Vec::new()
            },
        }
    }

    /// The run's data blocks with their first and last keys.
    fn blocks(&self, run: &SstRun) -> Vec<BlockKeys<u64>> {
        run.blocks
            .iter()
            .map(|b| BlockKeys {
                page: b.page,
                keys: KeyRange::new(b.first_key, b.last_key),
            })
            .collect()
    }

    /// Entries of empty values that fill `pages` data blocks: an upper bound, since values vary.
    /// The store splits merge outputs by packed data blocks instead (see `KvStore`).
    fn entries_per_run(&self, pages: u64) -> u64 {
        pages * (self.page_size().saturating_sub(HEADER_SIZE) / SLOT_SIZE) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// The fenced search against a binary search of the blocks themselves: random indexes of every
    /// length around the group size (empty, partial groups, whole groups), probed at each last
    /// key, its neighbours, keys between and the ends of the key space.
    #[test]
    fn fenced_search_finds_the_block_a_plain_binary_search_finds() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        for len in (0..=5 * FENCE + 3).chain([257, 1000, 4096]) {
            let mut key = rng.random_range(0..4u64);
            let blocks: Vec<BlockInfo> = (0..len as u64)
                .map(|page| {
                    let first_key = key;
                    key += rng.random_range(0..5u64);
                    let b = BlockInfo {
                        page,
                        first_key,
                        last_key: key,
                    };
                    key += rng.random_range(1..4u64);
                    b
                })
                .collect();
            let search = KeySearch::new(&blocks);
            let mut probes = vec![0, 1, key, key + 1, u64::MAX];
            for b in &blocks {
                probes.extend([
                    b.first_key,
                    b.last_key.saturating_sub(1),
                    b.last_key,
                    b.last_key + 1,
                ]);
            }
            for k in probes {
                let want = blocks.partition_point(|b| b.last_key < k);
                assert_eq!(search.position(k), want, "len {len}, key {k}");
            }
        }
    }
}
