//! Where bulk loads write the pages of a new run, and how the cache gets to see them.
//!
//! A bulk load allocates one extent and writes each page once. It writes through a [`PageSink`]:
//! every [`Device`] is one (the pages go straight to the device, bypassing the cache, as
//! AsterixDB's bulk loader does), and a [`CacheSink`] writes to the device and offers each page to
//! the cache, which admits the ones a [`WarmUp`] rule picks (RocksDB's `prepopulate_block_cache`
//! admits every block written by a flush).

use super::buffer::BufferCache;
use crate::storage::{Device, PageId};
use crate::Result;

/// The target of a bulk load: allocate an extent, write its pages, give it back on failure.
pub trait PageSink {
    /// Size of every page in bytes.
    fn page_size(&self) -> usize;
    /// Reserves `count` consecutive pages and returns the first one's id.
    fn allocate(&self, count: u64) -> PageId;
    /// Returns an extent from [`PageSink::allocate`] (a bulk load that failed).
    fn free(&self, first: PageId, count: u64);
    /// Writes one page of the new run; `data.len()` equals [`PageSink::page_size`].
    fn write_page(&self, id: PageId, data: &[u8]) -> Result<()>;
}

impl<D: Device + ?Sized> PageSink for D {
    fn page_size(&self) -> usize {
        Device::page_size(self)
    }

    fn allocate(&self, count: u64) -> PageId {
        Device::allocate(self, count)
    }

    fn free(&self, first: PageId, count: u64) {
        Device::free(self, first, count)
    }

    fn write_page(&self, id: PageId, data: &[u8]) -> Result<()> {
        Device::write_page(self, id, data)
    }
}

/// Which pages of a run being written the cache admits.
pub trait WarmUp {
    /// Whether the page just written as `page` with contents `data` enters the cache.
    fn admit(&self, page: PageId, data: &[u8]) -> bool;
}

/// Admit every written page (prepopulate on flush).
#[derive(Clone, Copy, Debug, Default)]
pub struct AdmitAll;

impl WarmUp for AdmitAll {
    fn admit(&self, _page: PageId, _data: &[u8]) -> bool {
        true
    }
}

/// Admit nothing: the cache only watches (the sink then behaves like the bare device).
#[derive(Clone, Copy, Debug, Default)]
pub struct AdmitNone;

impl WarmUp for AdmitNone {
    fn admit(&self, _page: PageId, _data: &[u8]) -> bool {
        false
    }
}

/// Any predicate on (page, contents) is a rule, e.g. "internal nodes only" or a learned one.
impl<F: Fn(PageId, &[u8]) -> bool> WarmUp for F {
    fn admit(&self, page: PageId, data: &[u8]) -> bool {
        self(page, data)
    }
}

/// A sink that writes each page to the cache's device and then offers it to the cache: pages the
/// rule picks are admitted as prefetched pages (counted as prefetch admissions, their first hits
/// as prefetch hits), so a warm-up policy's benefit shows in the cache's counters.
pub struct CacheSink<'a, W: WarmUp = AdmitAll> {
    cache: &'a BufferCache,
    rule: W,
    written: std::cell::Cell<u64>,
}

impl<'a> CacheSink<'a, AdmitAll> {
    /// Admits every page written (RocksDB's `prepopulate_block_cache = kFlushOnly`).
    pub fn prepopulate(cache: &'a BufferCache) -> Self {
        Self::new(cache, AdmitAll)
    }
}

impl<'a, W: WarmUp> CacheSink<'a, W> {
    /// A sink writing to `cache`'s device and admitting the pages `rule` picks.
    pub fn new(cache: &'a BufferCache, rule: W) -> Self {
        CacheSink {
            cache,
            rule,
            written: std::cell::Cell::new(0),
        }
    }

    /// Pages written through this sink.
    pub fn pages_written(&self) -> u64 {
        self.written.get()
    }
}

impl<W: WarmUp> PageSink for CacheSink<'_, W> {
    fn page_size(&self) -> usize {
        self.cache.page_size()
    }

    fn allocate(&self, count: u64) -> PageId {
        self.cache.device().allocate(count)
    }

    /// Frees through the cache, so pages admitted from the failed run leave it too.
    fn free(&self, first: PageId, count: u64) {
        self.cache.free(first, count)
    }

    fn write_page(&self, id: PageId, data: &[u8]) -> Result<()> {
        self.cache.device().write_page(id, data)?;
        self.written.set(self.written.get() + 1);
        if self.rule.admit(id, data) {
            self.cache.admit(id, data)?;
        }
        Ok(())
    }
}
