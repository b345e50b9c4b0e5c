//! The file-backed device: whole pages read and written with pread/pwrite, direct I/O where the
//! file system allows it, a checksum per page verified on every read, and `fdatasync` on
//! [`Device::sync`].
//!
//! # Layout
//!
//! The file is an array of pages: page `id` occupies bytes `id * page_size .. (id + 1) *
//! page_size`, and nothing else is in the file. Each page access is one transfer of exactly
//! `page_size` bytes, the unit the device profiles price.
//!
//! # Checksums
//!
//! For every written page the device keeps in memory the CRC-32 (IEEE) of the page's bytes followed
//! by its page id (little endian), and checks every read against it. A flipped bit, a page that
//! landed in another page's place (a misdirected write, or one page copied over another) and a lost
//! write (the file still holding an older version of the page) all fail verification. The
//! checksums live in memory rather than in a per-page trailer on disk so that a page stays one
//! aligned transfer, which direct I/O needs; a device is never reopened, so nothing on disk has to
//! describe itself.
//!
//! # Direct I/O
//!
//! With [`FileDeviceOptions::direct_io`] (the default) the file is opened with `O_DIRECT` (Linux),
//! so page reads and writes bypass the operating system's page cache and reach the device: the
//! buffer cache in front of the device is then the only cache, as in the database systems the
//! experiments model. Direct I/O needs the file offset, the length and the memory buffer aligned to
//! the file system's logical block size; the device finds that size by a probe (an aligned write and
//! read of 512, 1024, 2048 and then 4096 bytes at the start of the still empty file, which is then
//! truncated again) and transfers pages through page-aligned buffers. When the file system refuses
//! `O_DIRECT` (tmpfs on older kernels, some overlay and network file systems), when no probe size
//! works, or when the page size is not a multiple of the alignment, the device uses buffered I/O
//! and says why in [`FileDevice::direct_io`].
//!
//! # Temporary files
//!
//! [`FileDevice::temporary`] creates a uniquely named file, opens it and unlinks it at once: the
//! open handle keeps the pages, and an interrupted run (a crash, a kill) leaves no file behind,
//! since the space is returned when the process's handle closes.

use super::verify::page_checksum;
use super::{Device, IoCounters, IoStats, PageId};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Smallest page size accepted (the same floor as [`super::MemDevice`]).
const MIN_PAGE_SIZE: usize = 64;

/// Alignment of the memory buffers direct I/O goes through: the memory page, which meets every
/// Linux file system's memory alignment for `O_DIRECT`.
const BUFFER_ALIGN: usize = 4096;

/// Block sizes the direct I/O probe tries, smallest first: the logical block sizes of real disks.
const PROBE_BLOCKS: [usize; 4] = [512, 1024, 2048, 4096];

/// Aligned buffers kept for reuse, at most.
const POOLED_BUFFERS: usize = 64;

/// How a [`FileDevice`] is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileDeviceOptions {
    /// Open the file with `O_DIRECT` where the file system and page size allow it (see
    /// [`FileDevice::direct_io`] for what was granted). Default `true`.
    pub direct_io: bool,
}

impl Default for FileDeviceOptions {
    fn default() -> Self {
        FileDeviceOptions { direct_io: true }
    }
}

/// Whether a [`FileDevice`] bypasses the operating system's page cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirectIo {
    /// Pages go to the device with `O_DIRECT`; offsets, lengths and buffers are aligned to
    /// `alignment` bytes (the file system's logical block size).
    On {
        /// The file system's logical block size, in bytes.
        alignment: usize,
    },
    /// Buffered I/O through the page cache, for the reason given.
    Off(String),
}

impl DirectIo {
    /// Whether direct I/O is in use.
    pub fn is_on(&self) -> bool {
        matches!(self, DirectIo::On { .. })
    }
}

impl fmt::Display for DirectIo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirectIo::On { alignment } => write!(f, "on (O_DIRECT, {alignment}-byte alignment)"),
            DirectIo::Off(reason) => write!(f, "off ({reason})"),
        }
    }
}

/// Lifecycle of one page slot, tracked in memory so that reads of unwritten or freed pages are
/// reported as [`Error::UnknownPage`] without touching the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    /// Not part of any allocated extent.
    Free,
    /// Allocated but not yet written.
    Allocated,
    /// Allocated and written; `crc` is the checksum of the last write (see the module docs).
    Written { crc: u32 },
}

#[derive(Debug, Default)]
struct FileState {
    slots: Vec<SlotState>,
    /// Freed extents (first, count), reused first-fit like [`super::MemDevice`] does.
    free: Vec<(PageId, u64)>,
    allocated: u64,
}

/// A page-sized buffer whose start is aligned to [`BUFFER_ALIGN`], carved out of a slightly larger
/// vector (safe code only: the vector never reallocates, so the aligned start stays put).
#[derive(Debug)]
struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        let storage = vec![0u8; len + BUFFER_ALIGN];
        let start = storage.as_ptr().align_offset(BUFFER_ALIGN);
        assert!(start < BUFFER_ALIGN, "a byte pointer can always be aligned");
        AlignedBuf { storage, start, len }
    }

    fn bytes(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

/// Pages in a real file, read and written with `pread`/`pwrite`, with `O_DIRECT` where possible,
/// and verified by a per-page CRC-32 (see the module docs). Reads and writes are counted like
/// [`super::MemDevice`]'s, so counted figures agree between the two devices; a read is counted
/// once the bytes have come off the file, whether or not they then verify.
#[derive(Debug)]
pub struct FileDevice {
    page_size: usize,
    file: File,
    path: PathBuf,
    /// The file's name in messages (marked when it has been unlinked).
    label: String,
    direct: DirectIo,
    state: Mutex<FileState>,
    /// Aligned buffers for direct I/O, reused across accesses.
    buffers: Mutex<Vec<AlignedBuf>>,
    counters: IoCounters,
}

impl FileDevice {
    /// Creates (or truncates) the file at `path` and uses it as an empty device; the file stays
    /// after the device is dropped. Direct I/O as [`FileDeviceOptions::default`] asks.
    pub fn create(path: &Path, page_size: usize) -> Result<FileDevice> {
        Self::create_with(path, page_size, FileDeviceOptions::default())
    }

    /// [`Self::create`] with options.
    pub fn create_with(path: &Path, page_size: usize, options: FileDeviceOptions) -> Result<FileDevice> {
        check_page_size(page_size)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| annotate(e, format!("creating page file {}", path.display())))?;
        let (file, direct) = choose_io(file, path, page_size, options);
        Ok(Self::with_file(
            file,
            path.to_path_buf(),
            path.display().to_string(),
            page_size,
            direct,
        ))
    }

    /// Creates a uniquely named file inside `dir`, opens it and unlinks it at once, so that no
    /// file is left behind however the run ends. Direct I/O as [`FileDeviceOptions::default`]
    /// asks.
    pub fn temporary(dir: &Path, page_size: usize) -> Result<FileDevice> {
        Self::temporary_with(dir, page_size, FileDeviceOptions::default())
    }

    /// [`Self::temporary`] with options.
    pub fn temporary_with(dir: &Path, page_size: usize, options: FileDeviceOptions) -> Result<FileDevice> {
        check_page_size(page_size)?;
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        let (file, path) = loop {
            let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("lsmlab-{}-{n}.pages", std::process::id()));
            match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(file) => break (file, path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(annotate(e, format!("creating a page file in {}", dir.display()))),
            }
        };
        let (file, direct) = choose_io(file, &path, page_size, options);
        std::fs::remove_file(&path)
            .map_err(|e| annotate(e, format!("unlinking page file {}", path.display())))?;
        let label = format!("{} (unlinked)", path.display());
        Ok(Self::with_file(file, path, label, page_size, direct))
    }

    fn with_file(file: File, path: PathBuf, label: String, page_size: usize, direct: DirectIo) -> FileDevice {
        FileDevice {
            page_size,
            file,
            path,
            label,
            direct,
            state: Mutex::new(FileState::default()),
            buffers: Mutex::new(Vec::new()),
            counters: IoCounters::default(),
        }
    }

    /// The file's path; a [`Self::temporary`] device's file no longer has it (it is unlinked).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether pages bypass the page cache, and if not, why.
    pub fn direct_io(&self) -> &DirectIo {
        &self.direct
    }

    fn page_offset(&self, id: PageId) -> u64 {
        id * self.page_size as u64
    }

    fn slot_state(&self, id: PageId) -> SlotState {
        let st = self.state.lock();
        st.slots.get(id as usize).copied().unwrap_or(SlotState::Free)
    }

    /// Reads page `id` and verifies it against the checksum of its last write; counts the read
    /// (once the bytes have come off the file) when `counted`.
    fn read_verified(&self, id: PageId, buf: &mut [u8], counted: bool) -> Result<()> {
        assert_eq!(buf.len(), self.page_size, "page read of the wrong size");
        let SlotState::Written { crc: stored } = self.slot_state(id) else {
            return Err(Error::UnknownPage { page: id });
        };
        match self.read_raw(id, buf) {
            Ok(()) => {}
            // The file was cut short behind our back: the page's bytes are gone.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(Error::Corrupt {
                    page: id,
                    reason: format!("file {} ends inside the page", self.label),
                })
            }
            Err(e) => return Err(self.page_error("reading", id, e)),
        }
        if counted {
            self.counters.read();
        }
        let computed = page_checksum(buf, id);
        if stored != computed {
            return Err(Error::Checksum {
                page: id,
                device: self.label.clone(),
                stored,
                computed,
            });
        }
        Ok(())
    }

    /// An aligned page buffer from the pool (or a new one).
    fn take_buffer(&self) -> AlignedBuf {
        self.buffers
            .lock()
            .pop()
            .unwrap_or_else(|| AlignedBuf::new(self.page_size))
    }

    fn return_buffer(&self, buf: AlignedBuf) {
        let mut pool = self.buffers.lock();
        if pool.len() < POOLED_BUFFERS {
            pool.push(buf);
        }
    }

    /// An OS error on page `id`, naming the page, the file and the access.
    fn page_error(&self, what: &str, id: PageId, e: std::io::Error) -> Error {
        annotate(e, format!("{what} page {id} of {}", self.label))
    }

    /// Reads page `id`'s bytes into `buf` (of page size), through an aligned buffer under direct
    /// I/O unless `buf` happens to be aligned already.
    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> std::io::Result<()> {
        let offset = self.page_offset(id);
        if !self.needs_bounce(buf.as_ptr()) {
            return self.file.read_exact_at(buf, offset);
        }
        let mut aligned = self.take_buffer();
        let result = self.file.read_exact_at(aligned.bytes_mut(), offset);
        if result.is_ok() {
            buf.copy_from_slice(aligned.bytes());
        }
        self.return_buffer(aligned);
        result
    }

    /// Writes `data` as page `id`'s bytes, likewise.
    fn write_raw(&self, id: PageId, data: &[u8]) -> std::io::Result<()> {
        let offset = self.page_offset(id);
        if !self.needs_bounce(data.as_ptr()) {
            return self.file.write_all_at(data, offset);
        }
        let mut aligned = self.take_buffer();
        aligned.bytes_mut().copy_from_slice(data);
        let result = self.file.write_all_at(aligned.bytes(), offset);
        self.return_buffer(aligned);
        result
    }

    /// Whether a transfer from or to `ptr` must go through an aligned buffer.
    fn needs_bounce(&self, ptr: *const u8) -> bool {
        self.direct.is_on() && ptr.align_offset(BUFFER_ALIGN) != 0
    }
}

/// Keeps an OS error's kind and says what was being done.
fn annotate(e: std::io::Error, context: String) -> Error {
    Error::Io(std::io::Error::new(e.kind(), format!("{context}: {e}")))
}

fn check_page_size(page_size: usize) -> Result<()> {
    if page_size < MIN_PAGE_SIZE {
        return Err(Error::Config(format!(
            "file device page size {page_size} is too small (at least {MIN_PAGE_SIZE} bytes)"
        )));
    }
    Ok(())
}

/// The handle pages go through: a second, `O_DIRECT` handle on `path` when `options` ask for it
/// and the file system and page size allow it, else the buffered `file`, with the reason.
fn choose_io(file: File, path: &Path, page_size: usize, options: FileDeviceOptions) -> (File, DirectIo) {
    if !options.direct_io {
        return (file, DirectIo::Off("turned off by direct_io = false".into()));
    }
    match open_direct(path).and_then(|direct| {
        let alignment = probe_alignment(&direct)?;
        if !page_size.is_multiple_of(alignment) {
            return Err(format!(
                "page size {page_size} is not a multiple of the file system's direct I/O alignment of \
                 {alignment} bytes"
            ));
        }
        Ok((direct, alignment))
    }) {
        Ok((direct, alignment)) => (direct, DirectIo::On { alignment }),
        Err(reason) => (file, DirectIo::Off(reason)),
    }
}

#[cfg(target_os = "linux")]
fn open_direct(path: &Path) -> std::result::Result<File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| format!("the file system refused O_DIRECT: {e}"))
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_path: &Path) -> std::result::Result<File, String> {
    Err("O_DIRECT is used on Linux only".into())
}

/// The smallest of [`PROBE_BLOCKS`] that an aligned `O_DIRECT` write and read at offset 0 accept:
/// the file system's logical block size. Leaves the file empty again.
fn probe_alignment(file: &File) -> std::result::Result<usize, String> {
    let largest = PROBE_BLOCKS[PROBE_BLOCKS.len() - 1];
    let mut block = AlignedBuf::new(largest);
    let mut failure = None;
    for size in PROBE_BLOCKS {
        let bytes = &mut block.bytes_mut()[..size];
        match file
            .write_all_at(bytes, 0)
            .and_then(|()| file.read_exact_at(bytes, 0))
        {
            Ok(()) => {
                failure = None;
                block.len = size;
                break;
            }
            Err(e) => failure = Some(e),
        }
    }
    file.set_len(0)
        .map_err(|e| format!("truncating the file after the direct I/O probe failed: {e}"))?;
    match failure {
        None => Ok(block.len),
        Some(e) => Err(format!(
            "O_DIRECT transfers of aligned blocks of {} to {largest} bytes failed: {e}",
            PROBE_BLOCKS[0]
        )),
    }
}

impl Device for FileDevice {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn name(&self) -> String {
        self.label.clone()
    }

    fn allocate(&self, count: u64) -> PageId {
        let mut st = self.state.lock();
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
        let mut st = self.state.lock();
        for id in first..first + count {
            let slot = &mut st.slots[id as usize];
            assert_ne!(*slot, SlotState::Free, "page {id} freed twice");
            *slot = SlotState::Free;
        }
        st.allocated -= count;
        st.free.push((first, count));
    }

    /// Writes a page and records its checksum; writing a page outside every allocated extent is
    /// [`Error::UnknownPage`] (it would silently resurrect a freed slot). After a failed write the
    /// page keeps its previous checksum, so whatever the failed write left in the file is caught
    /// when read.
    fn write_page(&self, id: PageId, data: &[u8]) -> Result<()> {
        assert_eq!(data.len(), self.page_size, "page write of the wrong size");
        if self.slot_state(id) == SlotState::Free {
            return Err(Error::UnknownPage { page: id });
        }
        let crc = page_checksum(data, id);
        self.write_raw(id, data)
            .map_err(|e| self.page_error("writing", id, e))?;
        self.counters.write();
        let mut st = self.state.lock();
        if let Some(slot) = st.slots.get_mut(id as usize) {
            if *slot != SlotState::Free {
                *slot = SlotState::Written { crc };
            }
        }
        Ok(())
    }

    /// Reads a page and verifies it against the checksum of its last write.
    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.read_verified(id, buf, true)
    }

    fn read_page_uncounted(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.read_verified(id, buf, false)
    }

    /// `fdatasync`: the pages written so far, and the file size they need, reach stable storage
    /// (under direct I/O this also flushes the disk's volatile write cache).
    fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| annotate(e, format!("syncing page file {}", self.label)))?;
        self.counters.sync();
        Ok(())
    }

    fn stats(&self) -> IoStats {
        self.counters.snapshot()
    }

    fn allocated_pages(&self) -> u64 {
        self.state.lock().allocated
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

    /// Whether the kernel has `O_DIRECT` set on the device's handle (`/proc/self/fdinfo`).
    #[cfg(target_os = "linux")]
    fn kernel_says_direct(d: &FileDevice) -> bool {
        use std::os::fd::AsRawFd;
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", d.file.as_raw_fd())).unwrap();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .map(|f| i64::from_str_radix(f.trim(), 8).unwrap())
            .unwrap();
        flags & i64::from(libc::O_DIRECT) != 0
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
        d.sync().unwrap();
        assert_eq!(
            d.stats(),
            IoStats {
                page_reads: 4,
                page_writes: 4,
                syncs: 1
            }
        );
        assert_eq!(d.allocated_pages(), 3);
        // Nothing but the pages is in the file.
        let len = std::fs::metadata(d.path()).unwrap().len();
        assert_eq!(len, 3 * PS as u64);
    }

    /// A device at `path` with two pages written, filled with `first` and `second`.
    fn two_pages(path: &Path, first: u8, second: u8) -> (FileDevice, PageId) {
        let d = FileDevice::create(path, PS).unwrap();
        let a = d.allocate(2);
        d.write_page(a, &page(first)).unwrap();
        d.write_page(a + 1, &page(second)).unwrap();
        (d, a)
    }

    #[test]
    fn flipped_byte_on_disk_is_a_checksum_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev");
        let (d, a) = two_pages(&path, 1, 2);
        // Corrupt one data byte of the second page through an independent handle.
        let f = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let off = PS as u64 + 17;
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, off).unwrap();
        f.write_all_at(&[b[0] ^ 0x20], off).unwrap();
        let mut buf = vec![0u8; PS];
        match d.read_page(a + 1, &mut buf) {
            Err(Error::Checksum {
                page,
                device,
                stored,
                computed,
            }) => {
                assert_eq!(page, a + 1);
                assert!(device.contains(&path.display().to_string()), "{device}");
                assert_ne!(stored, computed);
            }
            other => panic!("expected a checksum error, got {other:?}"),
        }
        // An uncounted read verifies alike.
        assert!(matches!(
            d.read_page_uncounted(a + 1, &mut buf),
            Err(Error::Checksum { .. })
        ));
        // The neighbour is intact.
        d.read_page(a, &mut buf).unwrap();
        assert_eq!(buf, page(1));
    }

    #[test]
    fn an_uncounted_read_reads_the_page_and_counts_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (d, a) = two_pages(&dir.path().join("dev"), 5, 6);
        let before = d.stats();
        let mut buf = vec![0u8; PS];
        d.read_page_uncounted(a + 1, &mut buf).unwrap();
        assert_eq!(buf, page(6));
        assert_eq!(d.stats(), before);
        d.read_page(a + 1, &mut buf).unwrap();
        assert_eq!(d.stats().page_reads, before.page_reads + 1);
        d.free(a, 2);
        assert!(matches!(
            d.read_page_uncounted(a, &mut buf),
            Err(Error::UnknownPage { .. })
        ));
    }

    #[test]
    fn a_lost_write_is_a_checksum_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev");
        let d = FileDevice::create(&path, PS).unwrap();
        let a = d.allocate(1);
        d.write_page(a, &page(1)).unwrap();
        let f = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let mut old = vec![0u8; PS];
        f.read_exact_at(&mut old, 0).unwrap();
        d.write_page(a, &page(2)).unwrap();
        // The file ends up holding the older, once valid version of the page.
        f.write_all_at(&old, 0).unwrap();
        let mut buf = vec![0u8; PS];
        assert!(matches!(d.read_page(a, &mut buf), Err(Error::Checksum { page, .. }) if page == a));
    }

    #[test]
    fn page_copied_to_another_slot_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev");
        let (d, a) = two_pages(&path, 5, 6);
        // Copy page A (a perfectly valid page) over page B.
        let f = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let mut slot = vec![0u8; PS];
        f.read_exact_at(&mut slot, 0).unwrap();
        f.write_all_at(&slot, PS as u64).unwrap();
        let mut buf = vec![0u8; PS];
        assert!(matches!(
            d.read_page(a + 1, &mut buf),
            Err(Error::Checksum { page, .. }) if page == a + 1
        ));
        d.read_page(a, &mut buf).unwrap();
        assert_eq!(buf, page(5));
    }

    #[test]
    fn a_truncated_file_is_corruption_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev");
        let (d, a) = two_pages(&path, 5, 6);
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(PS as u64)
            .unwrap();
        let mut buf = vec![0u8; PS];
        match d.read_page(a + 1, &mut buf) {
            Err(Error::Corrupt { page, reason }) => {
                assert_eq!(page, a + 1);
                assert!(reason.contains(&path.display().to_string()), "{reason}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
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
                page_writes: 4,
                syncs: 0
            }
        );
    }

    #[test]
    fn a_temporary_device_is_unlinked_at_once_and_shareable() {
        let dir = tempfile::tempdir().unwrap();
        let d = Arc::new(FileDevice::temporary(dir.path(), PS).unwrap());
        assert!(!d.path().exists());
        let other = FileDevice::temporary(dir.path(), PS).unwrap();
        assert_ne!(other.path(), d.path());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
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
                page_writes: 8,
                syncs: 0
            }
        );
        assert!(matches!(
            FileDevice::create(&dir.path().join("x"), 8),
            Err(Error::Config(_))
        ));
    }

    #[test]
    fn os_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let e = FileDevice::temporary(&missing, PS).unwrap_err().to_string();
        assert!(e.contains(&missing.display().to_string()), "{e}");
        let e = FileDevice::create(&missing.join("dev"), PS)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing/dev") && e.contains("No such file"), "{e}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn direct_io_is_what_the_kernel_has_set() {
        let dir = tempfile::tempdir().unwrap();
        let big = FileDevice::temporary(dir.path(), 4096).unwrap();
        assert_eq!(
            big.direct_io().is_on(),
            kernel_says_direct(&big),
            "{}",
            big.direct_io()
        );
        match big.direct_io() {
            DirectIo::On { alignment } => assert_eq!(4096 % alignment, 0),
            DirectIo::Off(reason) => assert!(reason.contains("O_DIRECT"), "{reason}"),
        }
        // A page smaller than any logical block cannot use it.
        let small = FileDevice::temporary(dir.path(), PS).unwrap();
        assert!(!kernel_says_direct(&small));
        match small.direct_io() {
            DirectIo::Off(reason) => assert!(
                reason.contains("page size 128 is not a multiple") || reason.contains("O_DIRECT"),
                "{reason}"
            ),
            on => panic!("a 128-byte page cannot be transferred directly, yet direct I/O is {on}"),
        }
        // Turned off on request.
        let off =
            FileDevice::temporary_with(dir.path(), 4096, FileDeviceOptions { direct_io: false }).unwrap();
        assert!(!kernel_says_direct(&off));
        assert_eq!(
            off.direct_io(),
            &DirectIo::Off("turned off by direct_io = false".into())
        );
    }
}
