//! Fixed-size pages on a device.
//!
//! Every index reads and writes whole pages through a [`Device`]. Two devices exist:
//! [`MemDevice`] keeps pages in memory and counts every read and write (deterministic, the
//! default for experiments), [`FileDevice`] keeps them in a real file (direct I/O where the file
//! system allows it) with a checksum per page that is verified on every read. [`VerifyingDevice`]
//! adds the same per-page checksum over any device, and [`FaultyDevice`] injects faults (errors,
//! torn writes, flipped bits, a full disk) for fail-stop tests. [`DeviceProfile`] turns counted I/O
//! into modelled time.

mod cost;
mod faulty;
mod file;
mod mem;
mod verify;

pub use cost::DeviceProfile;
pub use faulty::{Fault, FaultKind, FaultyDevice, Injected, InjectedFault, Injection};
pub use file::{DirectIo, FileDevice, FileDeviceOptions};
pub use mem::MemDevice;
pub use verify::VerifyingDevice;

use crate::Result;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// The number of a page on a device.
pub type PageId = u64;

/// Default page size of the R-tree experiments (2 KiB, as in the LSM RUM-tree authors' setup).
pub const DEFAULT_PAGE_SIZE: usize = 2048;

/// A store of fixed-size pages. Components allocate contiguous extents at bulk-load time and free
/// them when a merge retires them. Implementations are internally synchronised so that one device
/// can be shared (`Arc<dyn Device>`) by every index of a run.
pub trait Device: Send + Sync {
    /// Size of every page in bytes.
    fn page_size(&self) -> usize;
    /// The device's name in error messages: a file's path, "memory device". Wrapping devices
    /// report their inner device's.
    fn name(&self) -> String {
        "device".to_string()
    }
    /// Reserves `count` consecutive pages and returns the first one's id.
    fn allocate(&self, count: u64) -> PageId;
    /// Returns an extent obtained from [`Device::allocate`]; its pages may be reused.
    fn free(&self, first: PageId, count: u64);
    /// Writes one page; `data.len()` must equal [`Device::page_size`].
    fn write_page(&self, id: PageId, data: &[u8]) -> Result<()>;
    /// Reads one page into `buf` (`buf.len() == page_size()`).
    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<()>;
    /// Reads one page as [`Device::read_page`] does (verified alike) but leaves it out of
    /// [`Device::stats`]: a read the modelled system does not make. The key-value store calls it
    /// for a timed merge's output block that the warm-up policy admits later on the virtual clock:
    /// the engine had the block's bytes in hand as it wrote them, and the store reads them back
    /// rather than keep a copy of every block of a merge in memory until the policy is told
    /// (`crate::kvstore` timed merges). A wrapping device forwards it without injecting faults or
    /// delays: those model reads the system makes.
    fn read_page_uncounted(&self, id: PageId, buf: &mut [u8]) -> Result<()>;
    /// Makes every page written so far durable (`fdatasync` on a file; nothing to do in memory).
    /// The LSM executor calls it once at the end of each flush and each merge, before the new
    /// version is installed, so a failed sync fails the flush or merge. Counted in
    /// [`IoStats::syncs`]; a wrapping device must forward it.
    fn sync(&self) -> Result<()>;
    /// Counters since creation.
    fn stats(&self) -> IoStats;
    /// Pages currently allocated (live footprint).
    fn allocated_pages(&self) -> u64;
    /// Whether [`Device::read_page`] is a copy out of memory that never waits on anything but the
    /// device's own short lock. The buffer cache then reads a missing page while it holds its
    /// lock, taking the lock once per miss instead of twice (`BufferCache::read`). A device whose
    /// reads take long (a file, a wrapper that checks or delays them) keeps the default, `false`:
    /// the cache releases its lock for the read so that other threads' hits go on meanwhile.
    fn reads_from_memory(&self) -> bool {
        false
    }
}

/// Counted device I/O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoStats {
    /// Pages read from the device.
    pub page_reads: u64,
    /// Pages written to the device.
    pub page_writes: u64,
    /// Completed [`Device::sync`] calls (one per flush and per merge in an LSM index).
    #[serde(default)]
    pub syncs: u64,
}

impl IoStats {
    /// `self - earlier`, for measuring one phase of a run.
    pub fn since(&self, earlier: &IoStats) -> IoStats {
        IoStats {
            page_reads: self.page_reads - earlier.page_reads,
            page_writes: self.page_writes - earlier.page_writes,
            syncs: self.syncs - earlier.syncs,
        }
    }
}

/// Lock-free counters shared by the device implementations.
#[derive(Debug, Default)]
pub(crate) struct IoCounters {
    reads: AtomicU64,
    writes: AtomicU64,
    syncs: AtomicU64,
}

impl IoCounters {
    pub(crate) fn read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn write(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn sync(&self) {
        self.syncs.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn snapshot(&self) -> IoStats {
        IoStats {
            page_reads: self.reads.load(Ordering::Relaxed),
            page_writes: self.writes.load(Ordering::Relaxed),
            syncs: self.syncs.load(Ordering::Relaxed),
        }
    }
}
