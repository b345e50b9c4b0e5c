//! A checksumming layer over any device: every page written through it gets a CRC-32 kept in
//! memory beside the device, and every page read through it is verified against it.
//!
//! Page formats and capacities are untouched (the checksum is not stored in the page), and the
//! layer does no I/O of its own, so counted reads, writes and syncs are the inner device's, exactly
//! as without it. The checksum is the one [`super::FileDevice`] keeps: CRC-32 (IEEE) of the page's
//! bytes followed by its page id (little endian), so a page that landed in another page's place is
//! caught as well as a flipped bit or a torn page.
//!
//! A failed write leaves the page's contents unknown: the old version, the new one, or a torn mix
//! of both (a short write). The layer then accepts either whole version on read and reports
//! anything else, so an engine that goes on using the old contents after a failed write still
//! reads them, and a torn page is never served.
//!
//! [`super::FileDevice`] verifies its own pages, which catches damage below it (in the file);
//! this layer catches damage anywhere below it, and is what fault-injection tests put above a
//! [`super::FaultyDevice`] to detect the silent kinds (flipped bits, silent short writes). The
//! experiments' memory device runs without it: memory does not corrupt pages, and the layer costs
//! one CRC-32 pass per page read and written (its cost is recorded in `docs/testing.md#faults`).

use super::{Device, IoStats, PageId};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::sync::Arc;

/// What the layer knows of one page's contents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Sum {
    /// Not written through this layer (never written, or freed): reads are the inner device's.
    #[default]
    None,
    /// The checksum of the last write.
    Known(u32),
    /// The last write failed: the page holds the old version (`None` if there was none known),
    /// the new one, or neither.
    Either(Option<u32>, u32),
}

/// Verifies every page read against the checksum of what was written (see the
/// [module docs](self)).
pub struct VerifyingDevice {
    inner: Arc<dyn Device>,
    sums: Mutex<Vec<Sum>>,
}

impl VerifyingDevice {
    /// Checksums every page written to `inner` and verifies it on every read.
    pub fn new(inner: Arc<dyn Device>) -> VerifyingDevice {
        VerifyingDevice {
            inner,
            sums: Mutex::new(Vec::new()),
        }
    }

    /// The device below.
    pub fn inner(&self) -> &Arc<dyn Device> {
        &self.inner
    }

    fn set(&self, id: PageId, sum: Sum) {
        let mut sums = self.sums.lock();
        let i = id as usize;
        if i >= sums.len() {
            sums.resize(i + 1, Sum::None);
        }
        sums[i] = sum;
    }

    fn get(&self, id: PageId) -> Sum {
        self.sums.lock().get(id as usize).copied().unwrap_or_default()
    }

    /// Checks `buf`, just read as page `id`, against the checksum of its last write.
    fn verify(&self, id: PageId, buf: &[u8]) -> Result<()> {
        let computed = page_checksum(buf, id);
        let stored = match self.get(id) {
            Sum::None => return Ok(()),
            Sum::Known(c) if c == computed => return Ok(()),
            Sum::Either(old, new) if old == Some(computed) || new == computed => return Ok(()),
            Sum::Known(c) | Sum::Either(_, c) => c,
        };
        Err(Error::Checksum {
            page: id,
            device: self.inner.name(),
            stored,
            computed,
        })
    }
}

/// CRC-32 of a page's data bound to the page id it belongs at.
pub(crate) fn page_checksum(data: &[u8], id: PageId) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(data);
    h.update(&id.to_le_bytes());
    h.finalize()
}

impl Device for VerifyingDevice {
    fn page_size(&self) -> usize {
        self.inner.page_size()
    }

    fn name(&self) -> String {
        self.inner.name()
    }

    fn allocate(&self, count: u64) -> PageId {
        self.inner.allocate(count)
    }

    fn free(&self, first: PageId, count: u64) {
        {
            let mut sums = self.sums.lock();
            let end = ((first + count) as usize).min(sums.len());
            for s in sums.iter_mut().take(end).skip(first as usize) {
                *s = Sum::None;
            }
        }
        self.inner.free(first, count)
    }

    fn write_page(&self, id: PageId, data: &[u8]) -> Result<()> {
        let crc = page_checksum(data, id);
        match self.inner.write_page(id, data) {
            Ok(()) => {
                self.set(id, Sum::Known(crc));
                Ok(())
            }
            Err(e) => {
                let old = match self.get(id) {
                    Sum::Known(c) => Some(c),
                    Sum::Either(..) | Sum::None => None,
                };
                // An unknown page (outside every extent) stays unknown.
                if !matches!(e, Error::UnknownPage { .. }) {
                    self.set(id, Sum::Either(old, crc));
                }
                Err(e)
            }
        }
    }

    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.inner.read_page(id, buf)?;
        self.verify(id, buf)
    }

    fn read_page_uncounted(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.inner.read_page_uncounted(id, buf)?;
        self.verify(id, buf)
    }

    fn sync(&self) -> Result<()> {
        self.inner.sync()
    }

    fn stats(&self) -> IoStats {
        self.inner.stats()
    }

    fn allocated_pages(&self) -> u64 {
        self.inner.allocated_pages()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Fault, FaultKind, FaultyDevice, Injection, MemDevice};

    fn page(fill: u8) -> Vec<u8> {
        vec![fill; 64]
    }

    #[test]
    fn counts_nothing_of_its_own_and_passes_good_pages() {
        let dev = VerifyingDevice::new(Arc::new(MemDevice::new(64)));
        let p = dev.allocate(2);
        dev.write_page(p, &page(1)).unwrap();
        let mut buf = page(0);
        dev.read_page(p, &mut buf).unwrap();
        assert_eq!(buf, page(1));
        assert!(matches!(
            dev.read_page(p + 1, &mut buf),
            Err(Error::UnknownPage { .. })
        ));
        assert_eq!((dev.stats().page_reads, dev.stats().page_writes), (1, 1));
        dev.free(p, 2);
        assert_eq!(dev.allocated_pages(), 0);
    }

    #[test]
    fn a_torn_page_is_a_checksum_error_and_a_failed_write_keeps_either_version() {
        let faulty = Arc::new(FaultyDevice::new(Arc::new(MemDevice::new(64))));
        let dev = VerifyingDevice::new(faulty.clone());
        let p = dev.allocate(3);
        for i in 0..3 {
            dev.write_page(p + i, &page(1)).unwrap();
        }
        let mut buf = page(0);
        // Nothing reached the device: the old page still reads.
        faulty.inject(Injection::new(FaultKind::WriteError, Fault::Nth(1)));
        assert!(dev.write_page(p, &page(2)).is_err());
        dev.read_page(p, &mut buf).unwrap();
        assert_eq!(buf, page(1));
        // A reported short write: neither version, caught.
        faulty.inject(Injection::new(FaultKind::ShortWrite, Fault::Nth(1)));
        assert!(dev.write_page(p + 1, &page(2)).is_err());
        let e = dev.read_page(p + 1, &mut buf).unwrap_err();
        assert!(matches!(e, Error::Checksum { page, .. } if page == p + 1), "{e}");
        // A silent one: caught on read too, and a later good write heals the page.
        faulty.inject(Injection::new(FaultKind::SilentShortWrite, Fault::Nth(1)));
        dev.write_page(p + 2, &page(2)).unwrap();
        assert!(matches!(
            dev.read_page(p + 2, &mut buf),
            Err(Error::Checksum { .. })
        ));
        dev.write_page(p + 2, &page(3)).unwrap();
        dev.read_page(p + 2, &mut buf).unwrap();
        assert_eq!(buf, page(3));
    }
}
