//! A device that fails on purpose, for testing that an index survives I/O errors (fail-stop).
//!
//! # Fault kinds
//!
//! [`FaultyDevice`] injects one [`Injection`] at a time: a [`FaultKind`] at the accesses a
//! [`Fault`] picks (the n-th, or every one from the n-th). The kinds:
//!
//! | kind | the chosen access | what the caller sees |
//! |---|---|---|
//! | [`FaultKind::ReadError`] | a page read | an I/O error; nothing reaches the buffer |
//! | [`FaultKind::WriteError`] | a page write | an I/O error; nothing reaches the device |
//! | [`FaultKind::SyncError`] | a sync | an I/O error; the inner device is not synced |
//! | [`FaultKind::ShortWrite`] | a page write | an I/O error, and a prefix of the page *did* reach the device (a torn page) |
//! | [`FaultKind::SilentShortWrite`] | a page write | success, though only a prefix reached the device (a torn write the device acknowledged) |
//! | [`FaultKind::BitFlip`] | a page read | success, with one bit of the returned page flipped |
//! | [`FaultKind::DiskFull`] | a write of a page not written since it was allocated | an I/O error of kind [`std::io::ErrorKind::StorageFull`] |
//!
//! The two silent kinds (a silent short write, a flipped bit) return no error at all: only a
//! checksum verified on read catches them, which is what [`super::VerifyingDevice`] stacked on top
//! of this device does. A short write's prefix is between 1 byte and the page size less one byte
//! long, chosen by the access number; the rest of the page keeps what the device held before (or
//! zeros). A full disk models a device whose free space is gone: [`Device::allocate`] only
//! reserves page numbers (it cannot fail), so the lack of space surfaces at the first write into
//! newly allocated space, while pages that already hold data can still be overwritten in place (as
//! on a file system, where overwriting allocated blocks needs no new space). The disk stays full:
//! pages freed and allocated again are new space again.
//!
//! Every injected error is an [`Error::Io`] whose payload is an [`InjectedFault`] naming the
//! kind, the access number, the page and the device ([`InjectedFault::of`] finds it).

use super::{Device, IoStats, PageId};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// When a [`FaultyDevice`] fails one kind of access (reads, writes or syncs), counting from 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fault {
    /// Never fails.
    #[default]
    Never,
    /// Fails the n-th access only; later ones succeed again (a transient error).
    Nth(u64),
    /// Fails the n-th access and every one after it (a dead device).
    From(u64),
}

impl Fault {
    /// The four ways to fail at access `k`, as `(read fault, write fault)`: the k-th write, every
    /// write from the k-th, the k-th read, every read from the k-th. Fault sweeps walk `k` over a
    /// stream and try each.
    pub fn sweep_at(k: u64) -> [(Fault, Fault); 4] {
        [
            (Fault::Never, Fault::Nth(k)),
            (Fault::Never, Fault::From(k)),
            (Fault::Nth(k), Fault::Never),
            (Fault::From(k), Fault::Never),
        ]
    }

    fn fails(self, n: u64) -> bool {
        match self {
            Fault::Never => false,
            Fault::Nth(k) => n == k,
            Fault::From(k) => n >= k,
        }
    }
}

/// What goes wrong at an injected access (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// A page read that fails.
    ReadError,
    /// A page write that fails and writes nothing.
    WriteError,
    /// A sync that fails.
    SyncError,
    /// A torn write that reports an error.
    ShortWrite,
    /// A torn write that reports success.
    SilentShortWrite,
    /// A read that returns one flipped bit and no error.
    BitFlip,
    /// No space left for writes into new space.
    DiskFull,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 7] = [
        FaultKind::ReadError,
        FaultKind::WriteError,
        FaultKind::SyncError,
        FaultKind::ShortWrite,
        FaultKind::SilentShortWrite,
        FaultKind::BitFlip,
        FaultKind::DiskFull,
    ];

    /// The name test reports and error messages use.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::ReadError => "read error",
            FaultKind::WriteError => "write error",
            FaultKind::SyncError => "sync error",
            FaultKind::ShortWrite => "short write",
            FaultKind::SilentShortWrite => "silent short write",
            FaultKind::BitFlip => "flipped bit",
            FaultKind::DiskFull => "full disk",
        }
    }

    /// Whether the kind returns no error at the faulty access (only a checksum can tell).
    pub fn is_silent(self) -> bool {
        matches!(self, FaultKind::SilentShortWrite | FaultKind::BitFlip)
    }

    /// Whether the kind can leave a damaged page on the device (a torn write): reads of that page
    /// keep failing verification after the device is healed, until the page is rewritten or freed.
    pub fn damages_pages(self) -> bool {
        matches!(self, FaultKind::ShortWrite | FaultKind::SilentShortWrite)
    }

    fn access(self) -> Access {
        match self {
            FaultKind::ReadError | FaultKind::BitFlip => Access::Read,
            FaultKind::SyncError => Access::Sync,
            _ => Access::Write,
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Read,
    Write,
    Sync,
}

/// One fault to inject: `kind` at the accesses `at` picks. For [`FaultKind::DiskFull`] the
/// accesses counted are writes into new space, and a transient [`Fault::Nth`] is a disk that is
/// full for one write only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Injection {
    /// What goes wrong.
    pub kind: FaultKind,
    /// Which accesses of the kind's type it hits.
    pub at: Fault,
}

impl Injection {
    /// `kind` at the accesses `at` picks.
    pub fn new(kind: FaultKind, at: Fault) -> Injection {
        Injection { kind, at }
    }

    /// Every kind at access `k`, once ([`Fault::Nth`]) and from then on ([`Fault::From`]); a full
    /// disk only from then on (a disk does not free itself).
    pub fn all_at(k: u64) -> Vec<Injection> {
        let mut out = Vec::new();
        for kind in FaultKind::ALL {
            if kind != FaultKind::DiskFull {
                out.push(Injection::new(kind, Fault::Nth(k)));
            }
            out.push(Injection::new(kind, Fault::From(k)));
        }
        out
    }
}

impl fmt::Display for Injection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Fault::Never => write!(f, "no {}", self.kind),
            Fault::Nth(k) => write!(f, "{} at access {k}", self.kind),
            Fault::From(k) => write!(f, "{} from access {k} on", self.kind),
        }
    }
}

/// The typed payload of an injected error: which fault, at which access, on which page of which
/// device.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("injected {kind}: access {access} ({}) of {device} failed", page.map_or("sync".to_string(), |p| format!("page {p}")))]
pub struct InjectedFault {
    /// What went wrong.
    pub kind: FaultKind,
    /// The page accessed; `None` for a sync.
    pub page: Option<PageId>,
    /// The device's name ([`Device::name`]): a file's path, or "memory device".
    pub device: String,
    /// The access's number, counting from 1 since the fault was armed.
    pub access: u64,
}

impl InjectedFault {
    /// The injected fault an error carries, if it is one.
    pub fn of(e: &Error) -> Option<&InjectedFault> {
        match e {
            Error::Io(io) => io.get_ref()?.downcast_ref::<InjectedFault>(),
            _ => None,
        }
    }
}

/// Counts of one [`FaultyDevice`]'s injected faults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Injected {
    /// Accesses that returned an injected error.
    pub errors: u64,
    /// Accesses that silently returned damaged data or damaged the device (flipped bits, silent
    /// short writes).
    pub silent: u64,
}

impl Injected {
    /// Faults injected in all, reported or silent.
    pub fn total(&self) -> u64 {
        self.errors + self.silent
    }
}

/// Which faults are armed, per access type.
#[derive(Debug, Default)]
struct Armed {
    read: (Fault, Option<FaultKind>),
    write: (Fault, Option<FaultKind>),
    sync: Fault,
    /// Full-disk fault, counted over writes into new space.
    full: Fault,
}

/// Wraps any device and makes chosen reads, writes and/or syncs fail instead of reaching it, or
/// damages them (see the [module docs](self)). Accesses are numbered from 1 in the order they are
/// attempted (failed ones included) from the moment the device is built or [`FaultyDevice::arm`]
/// (reads and writes), [`FaultyDevice::arm_syncs`] (syncs) or [`FaultyDevice::inject`] (all) is
/// called, so a test can replay a workload failing its 1st, 2nd, ... k-th access. Failed accesses
/// are not counted in [`Device::stats`], which are the inner device's; a short write, whose
/// prefix did reach the inner device, is counted as the write it partly was (the read of the old
/// contents it needs is not counted).
pub struct FaultyDevice {
    inner: Arc<dyn Device>,
    reads: AtomicU64,
    writes: AtomicU64,
    syncs: AtomicU64,
    /// Writes into new space (for [`FaultKind::DiskFull`]).
    new_writes: AtomicU64,
    armed: Mutex<Armed>,
    /// Pages written since they were allocated (the rest of the allocated pages are new space).
    written: Mutex<HashSet<PageId>>,
    errors: AtomicU64,
    silent: AtomicU64,
    /// Inner reads done to build torn pages, hidden from the stats.
    hidden_reads: AtomicU64,
}

impl FaultyDevice {
    /// A device that fails nothing until [`FaultyDevice::arm`] or [`FaultyDevice::inject`] is
    /// called.
    pub fn new(inner: Arc<dyn Device>) -> Self {
        FaultyDevice {
            inner,
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            new_writes: AtomicU64::new(0),
            armed: Mutex::new(Armed::default()),
            written: Mutex::new(HashSet::new()),
            errors: AtomicU64::new(0),
            silent: AtomicU64::new(0),
            hidden_reads: AtomicU64::new(0),
        }
    }

    /// Sets which reads and writes fail with an I/O error, numbering accesses from 1 again. Sync
    /// faults are left as they are; a full disk is healed.
    pub fn arm(&self, reads: Fault, writes: Fault) {
        let mut a = self.armed.lock();
        a.read = (reads, Some(FaultKind::ReadError));
        a.write = (writes, Some(FaultKind::WriteError));
        a.full = Fault::Never;
        self.reads.store(0, Ordering::SeqCst);
        self.writes.store(0, Ordering::SeqCst);
        self.new_writes.store(0, Ordering::SeqCst);
    }

    /// Sets which syncs fail, numbering syncs from 1 again.
    pub fn arm_syncs(&self, syncs: Fault) {
        self.armed.lock().sync = syncs;
        self.syncs.store(0, Ordering::SeqCst);
    }

    /// Arms `injection` alone (every other fault is disarmed) and numbers every access from 1
    /// again.
    pub fn inject(&self, injection: Injection) {
        let mut a = self.armed.lock();
        *a = Armed::default();
        let Injection { kind, at } = injection;
        match kind {
            FaultKind::DiskFull => a.full = at,
            FaultKind::SyncError => a.sync = at,
            _ if kind.access() == Access::Read => a.read = (at, Some(kind)),
            _ => a.write = (at, Some(kind)),
        }
        for c in [&self.reads, &self.writes, &self.syncs, &self.new_writes] {
            c.store(0, Ordering::SeqCst);
        }
    }

    /// Stops failing reads, writes and syncs.
    pub fn disarm(&self) {
        self.inject(Injection::new(FaultKind::ReadError, Fault::Never));
    }

    /// Accesses failed (with an error) or damaged (silently) so far.
    pub fn failures(&self) -> u64 {
        self.injected().total()
    }

    /// Accesses failed and damaged so far, apart.
    pub fn injected(&self) -> Injected {
        Injected {
            errors: self.errors.load(Ordering::SeqCst),
            silent: self.silent.load(Ordering::SeqCst),
        }
    }

    fn fault(&self, kind: FaultKind, access: u64, page: Option<PageId>) -> Error {
        self.errors.fetch_add(1, Ordering::SeqCst);
        let io_kind = if kind == FaultKind::DiskFull {
            std::io::ErrorKind::StorageFull
        } else {
            std::io::ErrorKind::Other
        };
        Error::Io(std::io::Error::new(
            io_kind,
            InjectedFault {
                kind,
                page,
                device: self.inner.name(),
                access,
            },
        ))
    }

    /// Writes the first `len` bytes of `data` over page `id` (the rest keeps the device's old
    /// contents, or zeros).
    fn write_prefix(&self, id: PageId, data: &[u8], len: usize) -> Result<()> {
        let mut page = vec![0u8; data.len()];
        if self.inner.read_page(id, &mut page).is_ok() {
            self.hidden_reads.fetch_add(1, Ordering::SeqCst);
        } else {
            page.fill(0);
        }
        page[..len].copy_from_slice(&data[..len]);
        self.inner.write_page(id, &page)
    }
}

/// A number in `1..n` picked from `(a, b)` (deterministic, spread out).
fn pick(a: u64, b: u64, n: usize) -> usize {
    let h = (a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F)).rotate_left(29);
    1 + (h % (n as u64 - 1)) as usize
}

impl Device for FaultyDevice {
    fn page_size(&self) -> usize {
        self.inner.page_size()
    }

    fn name(&self) -> String {
        self.inner.name()
    }

    fn allocate(&self, count: u64) -> PageId {
        let first = self.inner.allocate(count);
        let mut written = self.written.lock();
        for id in first..first + count {
            written.remove(&id);
        }
        first
    }

    fn free(&self, first: PageId, count: u64) {
        let mut written = self.written.lock();
        for id in first..first + count {
            written.remove(&id);
        }
        drop(written);
        self.inner.free(first, count)
    }

    fn write_page(&self, id: PageId, data: &[u8]) -> Result<()> {
        let (at, kind, full) = {
            let a = self.armed.lock();
            (a.write.0, a.write.1, a.full)
        };
        let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if full != Fault::Never && !self.written.lock().contains(&id) {
            let m = self.new_writes.fetch_add(1, Ordering::SeqCst) + 1;
            if full.fails(m) {
                return Err(self.fault(FaultKind::DiskFull, m, Some(id)));
            }
        }
        if at.fails(n) {
            let kind = kind.unwrap_or(FaultKind::WriteError);
            match kind {
                FaultKind::ShortWrite | FaultKind::SilentShortWrite => {
                    let len = pick(n, id, data.len());
                    self.write_prefix(id, data, len)?;
                    self.written.lock().insert(id);
                    if kind == FaultKind::SilentShortWrite {
                        self.silent.fetch_add(1, Ordering::SeqCst);
                        return Ok(());
                    }
                    return Err(self.fault(kind, n, Some(id)));
                }
                _ => return Err(self.fault(kind, n, Some(id))),
            }
        }
        self.inner.write_page(id, data)?;
        self.written.lock().insert(id);
        Ok(())
    }

    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        let (at, kind) = self.armed.lock().read;
        let n = self.reads.fetch_add(1, Ordering::SeqCst) + 1;
        if at.fails(n) {
            if kind == Some(FaultKind::BitFlip) {
                self.inner.read_page(id, buf)?;
                let bit = pick(id, n, buf.len() * 8);
                buf[bit / 8] ^= 1 << (bit % 8);
                self.silent.fetch_add(1, Ordering::SeqCst);
                return Ok(());
            }
            return Err(self.fault(kind.unwrap_or(FaultKind::ReadError), n, Some(id)));
        }
        self.inner.read_page(id, buf)
    }

    fn read_page_uncounted(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.inner.read_page_uncounted(id, buf)
    }

    fn sync(&self) -> Result<()> {
        let at = self.armed.lock().sync;
        let n = self.syncs.fetch_add(1, Ordering::SeqCst) + 1;
        if at.fails(n) {
            return Err(self.fault(FaultKind::SyncError, n, None));
        }
        self.inner.sync()
    }

    fn stats(&self) -> IoStats {
        let mut s = self.inner.stats();
        s.page_reads -= self.hidden_reads.load(Ordering::SeqCst);
        s
    }

    fn allocated_pages(&self) -> u64 {
        self.inner.allocated_pages()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{MemDevice, VerifyingDevice};

    #[test]
    fn fails_exactly_the_chosen_accesses() {
        let dev = FaultyDevice::new(Arc::new(MemDevice::new(64)));
        let p = dev.allocate(4);
        let page = vec![1u8; 64];
        let mut buf = vec![0u8; 64];
        dev.arm(Fault::Nth(2), Fault::From(3));
        assert!(dev.write_page(p, &page).is_ok());
        assert!(dev.write_page(p + 1, &page).is_ok());
        assert!(matches!(dev.write_page(p + 2, &page), Err(Error::Io(_))));
        assert!(dev.write_page(p + 3, &page).is_err());
        assert!(dev.read_page(p, &mut buf).is_ok());
        let e = dev.read_page(p, &mut buf).unwrap_err();
        let f = InjectedFault::of(&e).expect("a typed injected fault");
        assert_eq!(
            (f.kind, f.page, f.access, f.device.as_str()),
            (FaultKind::ReadError, Some(p), 2, "memory device")
        );
        assert!(dev.read_page(p + 1, &mut buf).is_ok());
        assert_eq!(dev.failures(), 3);
        // failed accesses never reach the inner device
        assert_eq!(
            dev.stats(),
            IoStats {
                page_reads: 2,
                page_writes: 2,
                syncs: 0
            }
        );
        dev.disarm();
        assert!(dev.write_page(p + 3, &page).is_ok());
        // Syncs are armed on their own; a failed sync does not reach the inner device.
        dev.arm_syncs(Fault::Nth(2));
        dev.arm(Fault::Never, Fault::Never);
        assert!(dev.sync().is_ok());
        let e = dev.sync().unwrap_err();
        assert_eq!(InjectedFault::of(&e).unwrap().page, None);
        assert!(e.to_string().contains("access 2 (sync)"), "{e}");
        assert!(dev.sync().is_ok());
        assert_eq!((dev.failures(), dev.stats().syncs), (4, 2));
        dev.disarm();
        assert!(dev.sync().is_ok());
    }

    fn page(fill: u8) -> Vec<u8> {
        (0..64)
            .map(|i| fill.wrapping_mul(31).wrapping_add(i as u8))
            .collect()
    }

    #[test]
    fn short_writes_tear_the_page_and_the_silent_one_says_nothing() {
        let dev = FaultyDevice::new(Arc::new(MemDevice::new(64)));
        let p = dev.allocate(2);
        dev.write_page(p, &page(1)).unwrap();
        dev.inject(Injection::new(FaultKind::ShortWrite, Fault::Nth(1)));
        let e = dev.write_page(p, &page(2)).unwrap_err();
        assert_eq!(InjectedFault::of(&e).unwrap().kind, FaultKind::ShortWrite);
        let mut buf = vec![0u8; 64];
        dev.read_page(p, &mut buf).unwrap();
        let len = (0..64).take_while(|&i| buf[i] == page(2)[i]).count();
        assert!(len > 0 && len < 64, "a torn page: {len} new bytes");
        assert_eq!(&buf[len..], &page(1)[len..], "the rest is the old page");
        dev.inject(Injection::new(FaultKind::SilentShortWrite, Fault::Nth(1)));
        dev.write_page(p + 1, &page(3)).unwrap();
        dev.read_page(p + 1, &mut buf).unwrap();
        assert_ne!(buf, page(3));
        assert_eq!(dev.injected(), Injected { errors: 1, silent: 1 });
        // The read that built the torn page is not counted: two writes of page p, one of p + 1.
        assert_eq!((dev.stats().page_reads, dev.stats().page_writes), (2, 3));
    }

    #[test]
    fn a_flipped_bit_is_silent_below_and_a_checksum_error_above_verification() {
        let faulty = Arc::new(FaultyDevice::new(Arc::new(MemDevice::new(64))));
        let p = faulty.allocate(1);
        faulty.write_page(p, &page(5)).unwrap();
        faulty.inject(Injection::new(FaultKind::BitFlip, Fault::Nth(1)));
        let mut buf = vec![0u8; 64];
        faulty.read_page(p, &mut buf).unwrap();
        let diff: u32 = buf.iter().zip(page(5)).map(|(a, b)| (a ^ b).count_ones()).sum();
        assert_eq!(diff, 1);
        let verified = VerifyingDevice::new(faulty.clone());
        verified.write_page(p, &page(5)).unwrap();
        faulty.inject(Injection::new(FaultKind::BitFlip, Fault::Nth(2)));
        verified.read_page(p, &mut buf).unwrap();
        let e = verified.read_page(p, &mut buf).unwrap_err();
        assert!(
            matches!(&e, Error::Checksum { page, device, .. } if *page == p && device == "memory device"),
            "{e}"
        );
        verified.read_page(p, &mut buf).unwrap();
        assert_eq!(buf, page(5));
    }

    #[test]
    fn a_full_disk_refuses_new_space_only_and_stays_full() {
        let dev = FaultyDevice::new(Arc::new(MemDevice::new(64)));
        let old = dev.allocate(1);
        dev.write_page(old, &page(1)).unwrap();
        dev.inject(Injection::new(FaultKind::DiskFull, Fault::From(2)));
        let fresh = dev.allocate(3);
        dev.write_page(fresh, &page(2)).unwrap();
        let e = dev.write_page(fresh + 1, &page(2)).unwrap_err();
        let Error::Io(io) = &e else { panic!("{e}") };
        assert_eq!(io.kind(), std::io::ErrorKind::StorageFull);
        assert_eq!(InjectedFault::of(&e).unwrap().page, Some(fresh + 1));
        // Overwrites need no space.
        dev.write_page(old, &page(3)).unwrap();
        dev.write_page(fresh, &page(3)).unwrap();
        assert!(dev.write_page(fresh + 2, &page(2)).is_err());
        dev.free(fresh, 3);
        let again = dev.allocate(1);
        assert!(
            dev.write_page(again, &page(2)).is_err(),
            "freed space is new space again"
        );
        assert_eq!(dev.failures(), 3);
    }

    #[test]
    fn every_kind_is_injected_at_the_chosen_access() {
        for inj in Injection::all_at(3) {
            let dev = FaultyDevice::new(Arc::new(MemDevice::new(64)));
            dev.inject(inj);
            let p = dev.allocate(8);
            let mut buf = vec![0u8; 64];
            for i in 0..6 {
                let _ = dev.write_page(p + i, &page(i as u8));
                let _ = dev.read_page(p + i, &mut buf);
                let _ = dev.sync();
            }
            let want = match inj.at {
                Fault::Nth(_) => 1,
                _ => 4,
            };
            assert_eq!(dev.failures(), want, "{inj}");
        }
    }
}
