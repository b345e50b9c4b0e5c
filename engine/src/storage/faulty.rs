//! A device that fails on purpose, for testing that an index survives I/O errors (fail-stop).

use super::{Device, IoStats, PageId};
use crate::{Error, Result};
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

/// Wraps any device and makes chosen reads, writes and/or syncs fail with an I/O error instead of
/// reaching it. Accesses are numbered from 1 in the order they are attempted (failed ones
/// included) from the moment the device is built or [`FaultyDevice::arm`] (reads and writes) or
/// [`FaultyDevice::arm_syncs`] (syncs) is called, so a test can replay a workload failing its 1st,
/// 2nd, ... k-th access. Failed accesses are not counted in [`Device::stats`], which are the inner
/// device's.
pub struct FaultyDevice {
    inner: Arc<dyn Device>,
    reads: AtomicU64,
    writes: AtomicU64,
    syncs: AtomicU64,
    read_fault: std::sync::Mutex<Fault>,
    write_fault: std::sync::Mutex<Fault>,
    sync_fault: std::sync::Mutex<Fault>,
    failures: AtomicU64,
}

impl FaultyDevice {
    /// A device that fails nothing until [`FaultyDevice::arm`] is called.
    pub fn new(inner: Arc<dyn Device>) -> Self {
        FaultyDevice {
            inner,
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            read_fault: std::sync::Mutex::new(Fault::Never),
            write_fault: std::sync::Mutex::new(Fault::Never),
            sync_fault: std::sync::Mutex::new(Fault::Never),
            failures: AtomicU64::new(0),
        }
    }

    /// Sets which reads and writes fail, numbering accesses from 1 again. Sync faults are left as
    /// they are.
    pub fn arm(&self, reads: Fault, writes: Fault) {
        *self.read_fault.lock().unwrap() = reads;
        *self.write_fault.lock().unwrap() = writes;
        self.reads.store(0, Ordering::SeqCst);
        self.writes.store(0, Ordering::SeqCst);
    }

    /// Sets which syncs fail, numbering syncs from 1 again.
    pub fn arm_syncs(&self, syncs: Fault) {
        *self.sync_fault.lock().unwrap() = syncs;
        self.syncs.store(0, Ordering::SeqCst);
    }

    /// Stops failing reads, writes and syncs.
    pub fn disarm(&self) {
        self.arm(Fault::Never, Fault::Never);
        self.arm_syncs(Fault::Never);
    }

    /// Accesses failed so far.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::SeqCst)
    }

    /// `target` names what is accessed ("page 7", "the device").
    fn check(&self, what: &str, counter: &AtomicU64, fault: Fault, target: &str) -> Result<()> {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        if fault.fails(n) {
            self.failures.fetch_add(1, Ordering::SeqCst);
            return Err(Error::Io(std::io::Error::other(format!(
                "injected fault: {what} number {n} ({target}) failed"
            ))));
        }
        Ok(())
    }
}

impl Device for FaultyDevice {
    fn page_size(&self) -> usize {
        self.inner.page_size()
    }

    fn allocate(&self, count: u64) -> PageId {
        self.inner.allocate(count)
    }

    fn free(&self, first: PageId, count: u64) {
        self.inner.free(first, count)
    }

    fn write_page(&self, id: PageId, data: &[u8]) -> Result<()> {
        let fault = *self.write_fault.lock().unwrap();
        self.check("write", &self.writes, fault, &format!("page {id}"))?;
        self.inner.write_page(id, data)
    }

    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        let fault = *self.read_fault.lock().unwrap();
        self.check("read", &self.reads, fault, &format!("page {id}"))?;
        self.inner.read_page(id, buf)
    }

    fn sync(&self) -> Result<()> {
        let fault = *self.sync_fault.lock().unwrap();
        self.check("sync", &self.syncs, fault, "the device")?;
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
    use crate::storage::MemDevice;

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
        assert!(dev.read_page(p, &mut buf).is_err());
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
        let e = dev.sync().unwrap_err().to_string();
        assert!(e.contains("sync number 2"), "{e}");
        assert!(dev.sync().is_ok());
        assert_eq!((dev.failures(), dev.stats().syncs), (4, 2));
        dev.disarm();
        assert!(dev.sync().is_ok());
    }
}
