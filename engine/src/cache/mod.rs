//! The buffer cache: an LRU of whole pages between the indexes and the device.
//!
//! Disk components read every page through a [`BufferCache`]. A hit costs no device I/O; a miss
//! reads the page from the device and may evict the least recently used page. Bulk loads write
//! straight to the device (sequential writes that bypass the cache, as AsterixDB's bulk loader
//! does) and a retired component's pages are invalidated.

use crate::storage::{Device, PageId};
use crate::Result;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// A page as the cache hands it out: shared and immutable.
pub type PageRef = Arc<[u8]>;

/// Hit, miss, eviction and invalidation counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub invalidations: u64,
}

impl CacheStats {
    /// `self - earlier`.
    pub fn since(&self, earlier: &CacheStats) -> CacheStats {
        CacheStats {
            hits: self.hits - earlier.hits,
            misses: self.misses - earlier.misses,
            evictions: self.evictions - earlier.evictions,
            invalidations: self.invalidations - earlier.invalidations,
        }
    }
}

/// An LRU cache of `capacity` pages over one device.
pub struct BufferCache {
    device: Arc<dyn Device>,
    capacity: usize,
    state: Mutex<LruState>,
}

#[derive(Default)]
struct LruState {
    /// page -> (contents, last-use tick)
    pages: HashMap<PageId, (PageRef, u64)>,
    /// last-use tick -> page, oldest first. Ticks are unique, so this is an exact LRU order.
    order: BTreeMap<u64, PageId>,
    tick: u64,
    stats: CacheStats,
}

impl BufferCache {
    /// A cache of `capacity` pages (0 disables caching: every read goes to the device).
    pub fn new(device: Arc<dyn Device>, capacity: usize) -> Self {
        BufferCache {
            device,
            capacity,
            state: Mutex::new(LruState::default()),
        }
    }

    pub fn device(&self) -> &Arc<dyn Device> {
        &self.device
    }

    pub fn page_size(&self) -> usize {
        self.device.page_size()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Reads a page, from the cache if it is there, else from the device (then caches it).
    pub fn read(&self, id: PageId) -> Result<PageRef> {
        {
            let mut guard = self.state.lock().unwrap();
            let st = &mut *guard;
            st.tick += 1;
            let tick = st.tick;
            if let Some((page, last)) = st.pages.get_mut(&id) {
                let page = page.clone();
                let old = std::mem::replace(last, tick);
                st.order.remove(&old);
                st.order.insert(tick, id);
                st.stats.hits += 1;
                return Ok(page);
            }
            st.stats.misses += 1;
        }
        let mut buf = vec![0u8; self.device.page_size()];
        self.device.read_page(id, &mut buf)?;
        let page: PageRef = buf.into();
        if self.capacity > 0 {
            let mut st = self.state.lock().unwrap();
            st.tick += 1;
            let tick = st.tick;
            if let Some((_, old)) = st.pages.insert(id, (page.clone(), tick)) {
                st.order.remove(&old);
            }
            st.order.insert(tick, id);
            while st.pages.len() > self.capacity {
                let (_, victim) = st.order.pop_first().expect("order tracks every cached page");
                st.pages.remove(&victim);
                st.stats.evictions += 1;
            }
        }
        Ok(page)
    }

    /// Drops the cached copies of an extent (a component retired by a merge).
    pub fn invalidate(&self, first: PageId, count: u64) {
        let mut st = self.state.lock().unwrap();
        for id in first..first + count {
            if let Some((_, tick)) = st.pages.remove(&id) {
                st.order.remove(&tick);
                st.stats.invalidations += 1;
            }
        }
    }

    /// Invalidates an extent and returns it to the device.
    pub fn free(&self, first: PageId, count: u64) {
        self.invalidate(first, count);
        self.device.free(first, count);
    }

    pub fn stats(&self) -> CacheStats {
        self.state.lock().unwrap().stats
    }

    /// Pages currently cached.
    pub fn len(&self) -> usize {
        self.state.lock().unwrap().pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemDevice;

    #[test]
    fn lru_hits_misses_and_evicts_the_least_recently_used() {
        let dev: Arc<dyn Device> = Arc::new(MemDevice::new(64));
        let first = dev.allocate(3);
        for i in 0..3 {
            dev.write_page(first + i, &[i as u8; 64]).unwrap();
        }
        let cache = BufferCache::new(dev.clone(), 2);
        assert_eq!(cache.read(first).unwrap()[0], 0); // miss
        cache.read(first + 1).unwrap(); // miss
        cache.read(first).unwrap(); // hit: page 1 is now least recent
        cache.read(first + 2).unwrap(); // miss, evicts page first+1
        cache.read(first).unwrap(); // hit
        cache.read(first + 1).unwrap(); // miss again
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.evictions), (2, 4, 2));
        assert_eq!(dev.stats().page_reads, 4);
        cache.invalidate(first, 3);
        assert!(cache.is_empty());
    }
}
