//! The file-backed device: real pread/pwrite, a checksum per page verified on every read.
//!
//! # On-disk layout
//!
//! The file is an array of fixed-size *slots*, one per page id; slot `id` starts at byte
//! `id * (page_size + TRAILER_SIZE)`. A slot holds the caller's `page_size` bytes followed by a
//! 16-byte trailer (all integers little endian):
//!
//! | offset in trailer | size | field                                                    |
//! |-------------------|------|----------------------------------------------------------|
//! | 0                 | 8    | page id the slot was written for                         |
//! | 8                 | 4    | format tag [`FORMAT_TAG`]                                |
//! | 12                | 4    | CRC-32 (IEEE) of `data ‖ page id ‖ format tag`           |
//!
//! The CRC is recomputed on every read with the page id the caller *asked for*, not the one
//! stored, so a page written to the wrong slot (a misdirected write, or a slot copied over
//! another) fails verification just like a flipped bit does. The callers' pages keep their full
//! `page_size`: the trailer is the device's own overhead.

use super::{Device, IoCounters, IoStats, PageId};
use crate::{Error, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Bytes the device appends to every page (page id, format tag, CRC-32).
pub const TRAILER_SIZE: usize = 16;

/// Format tag stored in every trailer and covered by the checksum ("LSMP" in ASCII), so that a
/// future layout change cannot be mistaken for this one.
pub const FORMAT_TAG: u32 = u32::from_le_bytes(*b"LSMP");

/// Smallest page size accepted (the same floor as [`super::MemDevice`]).
const MIN_PAGE_SIZE: usize = 64;

/// Lifecycle of one slot, tracked in memory so that reads of unwritten or freed pages are
/// reported as [`Error::UnknownPage`] without touching the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    /// Not part of any allocated extent.
    Free,
    /// Allocated but not yet written.
    Allocated,
    /// Allocated and written at least once.
    Written,
}

#[derive(Debug, Default)]
struct FileState {
    slots: Vec<SlotState>,
    /// Freed extents (first, count), reused first-fit like [`super::MemDevice`] does.
    free: Vec<(PageId, u64)>,
    allocated: u64,
}

/// Pages in a real file, read and written with `pread`/`pwrite` and verified by a per-page CRC-32
/// (see the module docs for the layout). Reads and writes are counted like [`super::MemDevice`]'s,
/// so counted figures agree between the two devices; a read is counted once the bytes have come
/// off the file, whether or not they then verify.
#[derive(Debug)]
pub struct FileDevice {
    page_size: usize,
    file: File,
    path: PathBuf,
    remove_on_drop: bool,
    state: Mutex<FileState>,
    counters: IoCounters,
}

impl FileDevice {
    /// Creates (or truncates) the file at `path` and uses it as an empty device.
    pub fn create(path: &Path, page_size: usize) -> Result<FileDevice> {
        check_page_size(page_size)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Self::with_file(file, path.to_path_buf(), page_size, false))
    }

    /// Creates a fresh, uniquely named file inside `dir`; the file is removed when the device is
    /// dropped. For experiments that want real I/O without leaving files behind.
    pub fn temporary(dir: &Path, page_size: usize) -> Result<FileDevice> {
        check_page_size(page_size)?;
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        loop {
            let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("lsmlab-{}-{n}.pages", std::process::id()));
            match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(file) => return Ok(Self::with_file(file, path, page_size, true)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn with_file(file: File, path: PathBuf, page_size: usize, remove_on_drop: bool) -> FileDevice {
        FileDevice {
            page_size,
            file,
            path,
            remove_on_drop,
            state: Mutex::new(FileState::default()),
            counters: IoCounters::default(),
        }
    }

    /// The backing file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes one page occupies in the file (page plus trailer).
    pub fn slot_size(&self) -> usize {
        self.page_size + TRAILER_SIZE
    }

    /// Forces written pages to stable storage (`fsync`).
    pub fn sync(&self) -> Result<()> {
        self.file.sync_all()?;
        Ok(())
    }

    fn slot_offset(&self, id: PageId) -> u64 {
        id * self.slot_size() as u64
    }

    fn slot_state(&self, id: PageId) -> SlotState {
        let st = self.state.lock().unwrap();
        st.slots.get(id as usize).copied().unwrap_or(SlotState::Free)
    }
}

fn check_page_size(page_size: usize) -> Result<()> {
    if page_size < MIN_PAGE_SIZE {
        return Err(Error::Config(format!(
            "file device page size {page_size} is too small (at least {MIN_PAGE_SIZE} bytes)"
        )));
    }
    Ok(())
}

/// CRC-32 of a page's data bound to the page id it belongs at.
fn page_checksum(data: &[u8], id: PageId) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(data);
    h.update(&id.to_le_bytes());
    h.update(&FORMAT_TAG.to_le_bytes());
    h.finalize()
}

impl Device for FileDevice {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn allocate(&self, count: u64) -> PageId {
        let mut st = self.state.lock().unwrap();
        st.allocated += count;
        let first = if let Some(i) = st.free.iter().position(|&(_, n)| n >= count) {
            let (first, n) = st.free[i];
            if n == count {
                st.free.swap_remove(i);
            } else {
                st.free[i] = (first + count, n - count);
            }
            first
        } else {
            let first = st.slots.len() as PageId;
            let new_len = st.slots.len() + count as usize;
            st.slots.resize(new_len, SlotState::Free);
            first
        };
        for slot in &mut st.slots[first as usize..(first + count) as usize] {
            *slot = SlotState::Allocated;
        }
        first
    }

    fn free(&self, first: PageId, count: u64) {
        let mut st = self.state.lock().unwrap();
        for id in first..first + count {
            let slot = &mut st.slots[id as usize];
            assert_ne!(*slot, SlotState::Free, "page {id} freed twice");
            *slot = SlotState::Free;
        }
        st.allocated -= count;
        st.free.push((first, count));
    }

    /// Writes a page with its trailer; writing a page outside every allocated extent is
    /// [`Error::UnknownPage`] (it would silently resurrect a freed slot).
    fn write_page(&self, id: PageId, data: &[u8]) -> Result<()> {
        assert_eq!(data.len(), self.page_size, "page write of the wrong size");
        if self.slot_state(id) == SlotState::Free {
            return Err(Error::UnknownPage { page: id });
        }
        let mut slot = Vec::with_capacity(self.slot_size());
        slot.extend_from_slice(data);
        slot.extend_from_slice(&id.to_le_bytes());
        slot.extend_from_slice(&FORMAT_TAG.to_le_bytes());
        slot.extend_from_slice(&page_checksum(data, id).to_le_bytes());
        self.file.write_all_at(&slot, self.slot_offset(id))?;
        self.counters.write();
        let mut st = self.state.lock().unwrap();
        if let Some(s @ SlotState::Allocated) = st.slots.get_mut(id as usize) {
            *s = SlotState::Written;
        }
        Ok(())
    }

    /// Reads a page and verifies its checksum against the page id asked for.
    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        assert_eq!(buf.len(), self.page_size, "page read of the wrong size");
        if self.slot_state(id) != SlotState::Written {
            return Err(Error::UnknownPage { page: id });
        }
        let mut slot = vec![0u8; self.slot_size()];
        match self.file.read_exact_at(&mut slot, self.slot_offset(id)) {
            Ok(()) => {}
            // The file was cut short behind our back: the page's bytes are gone.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(Error::Corrupt {
                    page: id,
                    reason: format!("file {} ends inside the page's slot", self.path.display()),
                })
            }
            Err(e) => return Err(e.into()),
        }
        self.counters.read();
        let (data, trailer) = slot.split_at(self.page_size);
        let stored = u32::from_le_bytes(trailer[12..16].try_into().unwrap());
        let computed = page_checksum(data, id);
        if stored != computed {
            return Err(Error::Checksum {
                page: id,
                stored,
                computed,
            });
        }
        buf.copy_from_slice(data);
        Ok(())
    }

    fn stats(&self) -> IoStats {
        self.counters.snapshot()
    }

    fn allocated_pages(&self) -> u64 {
        self.state.lock().unwrap().allocated
    }
}

impl Drop for FileDevice {
    fn drop(&mut self) {
        if self.remove_on_drop {
            // Nothing useful can be done about a failure here; the file is in a temporary dir.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const PS: usize = 128;

    fn page(fill: u8) -> Vec<u8> {
        (0..PS).map(|i| fill.wrapping_add(i as u8)).collect()
    }

    #[test]
    fn round_trip_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let d = FileDevice::create(&dir.path().join("dev"), PS).unwrap();
        let a = d.allocate(3);
        for i in 0..3 {
            d.write_page(a + i, &page(i as u8)).unwrap();
        }
        let mut buf = vec![0u8; PS];
        for i in (0..3).rev() {
            d.read_page(a + i, &mut buf).unwrap();
            assert_eq!(buf, page(i as u8));
        }
        // Overwrites replace the page and keep verifying.
        d.write_page(a + 1, &page(99)).unwrap();
        d.read_page(a + 1, &mut buf).unwrap();
        assert_eq!(buf, page(99));
        assert_eq!(
            d.stats(),
            IoStats {
                page_reads: 4,
                page_writes: 4
            }
        );
        assert_eq!(d.allocated_pages(), 3);
        let len = std::fs::metadata(d.path()).unwrap().len();
        assert_eq!(len, 3 * (PS + TRAILER_SIZE) as u64);
    }

    #[test]
    fn flipped_byte_on_disk_is_a_checksum_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev");
        let d = FileDevice::create(&path, PS).unwrap();
        let a = d.allocate(2);
        d.write_page(a, &page(1)).unwrap();
        d.write_page(a + 1, &page(2)).unwrap();
        // Corrupt one data byte of the second page through an independent handle.
        let f = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let off = d.slot_size() as u64 + 17;
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, off).unwrap();
        f.write_all_at(&[b[0] ^ 0x20], off).unwrap();
        let mut buf = vec![0u8; PS];
        match d.read_page(a + 1, &mut buf) {
            Err(Error::Checksum {
                page,
                stored,
                computed,
            }) => {
                assert_eq!(page, a + 1);
                assert_ne!(stored, computed);
            }
            other => panic!("expected a checksum error, got {other:?}"),
        }
        // The neighbour is intact.
        d.read_page(a, &mut buf).unwrap();
        assert_eq!(buf, page(1));
        // Corrupting the stored checksum itself is caught as well.
        let crc_off = d.slot_size() as u64 - 1;
        f.read_exact_at(&mut b, crc_off).unwrap();
        f.write_all_at(&[b[0] ^ 1], crc_off).unwrap();
        assert!(matches!(d.read_page(a, &mut buf), Err(Error::Checksum { page, .. }) if page == a));
    }

    #[test]
    fn page_copied_to_another_slot_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev");
        let d = FileDevice::create(&path, PS).unwrap();
        let a = d.allocate(2);
        d.write_page(a, &page(5)).unwrap();
        d.write_page(a + 1, &page(6)).unwrap();
        // Copy slot A (data and trailer, a perfectly valid page) over slot B.
        let f = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let mut slot = vec![0u8; d.slot_size()];
        f.read_exact_at(&mut slot, 0).unwrap();
        f.write_all_at(&slot, d.slot_size() as u64).unwrap();
        let mut buf = vec![0u8; PS];
        assert!(matches!(
            d.read_page(a + 1, &mut buf),
            Err(Error::Checksum { page, .. }) if page == a + 1
        ));
        d.read_page(a, &mut buf).unwrap();
        assert_eq!(buf, page(5));
    }

    #[test]
    fn unwritten_freed_and_out_of_range_pages_are_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let d = FileDevice::create(&dir.path().join("dev"), PS).unwrap();
        let mut buf = vec![0u8; PS];
        assert!(matches!(
            d.read_page(0, &mut buf),
            Err(Error::UnknownPage { page: 0 })
        ));
        let a = d.allocate(4);
        assert!(matches!(
            d.read_page(a + 3, &mut buf),
            Err(Error::UnknownPage { .. })
        ));
        for i in 0..4 {
            d.write_page(a + i, &page(i as u8)).unwrap();
        }
        d.free(a, 4);
        assert_eq!(d.allocated_pages(), 0);
        for i in 0..4 {
            assert!(matches!(
                d.read_page(a + i, &mut buf),
                Err(Error::UnknownPage { .. })
            ));
        }
        assert!(matches!(
            d.write_page(a, &page(0)),
            Err(Error::UnknownPage { .. })
        ));
        assert!(matches!(
            d.write_page(100, &page(0)),
            Err(Error::UnknownPage { .. })
        ));
        // First-fit reuse of the freed extent; a reused page is unknown until rewritten.
        assert_eq!(d.allocate(2), a);
        assert_eq!(d.allocate(2), a + 2);
        assert_eq!(d.allocate(1), a + 4);
        assert!(matches!(d.read_page(a, &mut buf), Err(Error::UnknownPage { .. })));
        assert_eq!(d.allocated_pages(), 5);
        assert_eq!(
            d.stats(),
            IoStats {
                page_reads: 0,
                page_writes: 4
            }
        );
    }

    #[test]
    fn temporary_file_is_removed_on_drop_and_device_is_shareable() {
        let dir = tempfile::tempdir().unwrap();
        let d = Arc::new(FileDevice::temporary(dir.path(), PS).unwrap());
        let path = d.path().to_path_buf();
        assert!(path.exists());
        let other = FileDevice::temporary(dir.path(), PS).unwrap();
        assert_ne!(other.path(), path);
        let a = d.allocate(8);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let d = &d;
                s.spawn(move || {
                    for i in [t, t + 4] {
                        d.write_page(a + i, &page(i as u8)).unwrap();
                    }
                });
            }
        });
        let mut buf = vec![0u8; PS];
        for i in 0..8 {
            d.read_page(a + i, &mut buf).unwrap();
            assert_eq!(buf, page(i as u8));
        }
        assert_eq!(
            d.stats(),
            IoStats {
                page_reads: 8,
                page_writes: 8
            }
        );
        drop(d);
        assert!(!path.exists());
        assert!(matches!(
            FileDevice::create(&dir.path().join("x"), 8),
            Err(Error::Config(_))
        ));
    }
}
