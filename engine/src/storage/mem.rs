//! The in-memory device: pages in a vector, every access counted.

use super::{Device, IoCounters, IoStats, PageId};
use crate::{Error, Result};
use parking_lot::Mutex;

/// Pages held in memory. Reads and writes are counted exactly like a disk's would be, so counted
/// I/O is deterministic for a seed and independent of the machine.
#[derive(Debug)]
pub struct MemDevice {
    page_size: usize,
    state: Mutex<MemState>,
    counters: IoCounters,
}

#[derive(Debug, Default)]
struct MemState {
    pages: Vec<Option<Box<[u8]>>>,
    /// Freed extents (first, count), reused first-fit.
    free: Vec<(PageId, u64)>,
    allocated: u64,
}

impl MemDevice {
    /// An empty device of `page_size`-byte pages (at least 64).
    pub fn new(page_size: usize) -> Self {
        assert!(page_size >= 64, "page size {page_size} is too small");
        MemDevice {
            page_size,
            state: Mutex::new(MemState::default()),
            counters: IoCounters::default(),
        }
    }

    /// Copies page `id` into `buf`; an unwritten or freed page is [`Error::UnknownPage`].
    fn copy_out(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        let st = self.state.lock();
        // The error is built only when the page is missing (`ok_or` built and dropped one per read).
        let Some(page) = st.pages.get(id as usize).and_then(|p| p.as_ref()) else {
            return Err(Error::UnknownPage { page: id });
        };
        buf.copy_from_slice(page);
        Ok(())
    }
}

impl Device for MemDevice {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn name(&self) -> String {
        "memory device".to_string()
    }

    fn allocate(&self, count: u64) -> PageId {
        let mut st = self.state.lock();
        st.allocated += count;
        if let Some(i) = st.free.iter().position(|&(_, n)| n >= count) {
            let (first, n) = st.free[i];
            if n == count {
                st.free.swap_remove(i);
            } else {
                st.free[i] = (first + count, n - count);
            }
            return first;
        }
        let first = st.pages.len() as PageId;
        let new_len = st.pages.len() + count as usize;
        st.pages.resize_with(new_len, || None);
        first
    }

    fn free(&self, first: PageId, count: u64) {
        let mut st = self.state.lock();
        for id in first..first + count {
            st.pages[id as usize] = None;
        }
        st.allocated -= count;
        st.free.push((first, count));
    }

    fn write_page(&self, id: PageId, data: &[u8]) -> Result<()> {
        assert_eq!(data.len(), self.page_size, "page write of the wrong size");
        let mut st = self.state.lock();
        let slot = st
            .pages
            .get_mut(id as usize)
            .ok_or(Error::UnknownPage { page: id })?;
        *slot = Some(data.into());
        self.counters.write();
        Ok(())
    }

    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.copy_out(id, buf)?;
        self.counters.read();
        Ok(())
    }

    fn read_page_uncounted(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.copy_out(id, buf)
    }

    /// Nothing to make durable; counted all the same, so that counted syncs agree with a file's.
    fn sync(&self) -> Result<()> {
        self.counters.sync();
        Ok(())
    }

    fn stats(&self) -> IoStats {
        self.counters.snapshot()
    }

    fn allocated_pages(&self) -> u64 {
        self.state.lock().allocated
    }

    /// A read is a copy of one page under the device's lock.
    fn reads_from_memory(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reads_and_writes_and_reuses_freed_extents() {
        let d = MemDevice::new(128);
        let a = d.allocate(4);
        let page = vec![7u8; 128];
        for i in 0..4 {
            d.write_page(a + i, &page).unwrap();
        }
        let mut buf = vec![0u8; 128];
        d.read_page(a + 2, &mut buf).unwrap();
        assert_eq!(buf, page);
        d.sync().unwrap();
        assert_eq!(
            d.stats(),
            IoStats {
                page_reads: 1,
                page_writes: 4,
                syncs: 1
            }
        );
        // An uncounted read copies the page and counts nothing.
        buf.fill(0);
        d.read_page_uncounted(a + 3, &mut buf).unwrap();
        assert_eq!((buf.as_slice(), d.stats().page_reads), (page.as_slice(), 1));
        d.free(a, 4);
        assert!(matches!(d.read_page(a, &mut buf), Err(Error::UnknownPage { .. })));
        assert!(matches!(
            d.read_page_uncounted(a, &mut buf),
            Err(Error::UnknownPage { .. })
        ));
        assert_eq!(d.allocate(2), a);
        assert_eq!(d.allocated_pages(), 2);
    }
}
