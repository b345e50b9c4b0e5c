//! The storage every experiment runs on: a device (counted in memory, or real files) behind a
//! buffer cache, with the device profile that turns counted I/O into modelled time
//! (`docs/design.md#measuring`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::storage::{
    Device, DeviceProfile, DirectIo, FileDevice, FileDeviceOptions, IoStats, MemDevice,
};
use serde::{Deserialize, Serialize};

use super::check;

/// Which device the pages live on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// In memory, every page read and write counted: deterministic, and what counted figures use.
    Mem,
    /// Real checksummed files in `file_dir`, so wall time includes the operating system's I/O.
    File,
}

impl DeviceKind {
    /// The kind as configs spell it (`mem`, `file`).
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Mem => "mem",
            DeviceKind::File => "file",
        }
    }
}

crate::config! {
    /// Storage settings shared by every paper; experiment configs flatten it, so its keys are
    /// top-level `--set` keys.
    pub struct StorageConfig {
        /// page size in bytes (the RUM-tree authors ran 2 KiB)
        pub page_size: usize,
        /// buffer cache capacity in pages
        pub cache_pages: usize,
        /// mem (counted, in memory) or file (real checksummed files)
        pub device: DeviceKind,
        /// directory for device=file (default: the system temp dir)
        pub file_dir: PathBuf,
        /// device=file bypasses the OS page cache with O_DIRECT where the file system allows it
        /// (true/false; falls back to buffered I/O with a note)
        #[serde(default = "direct_io_default")]
        pub direct_io: bool,
        /// device profile for modelled time: nvme, sata-ssd, hdd
        #[serde(with = "super::text")]
        pub profile: DeviceProfile,
    }
}

impl StorageConfig {
    /// 2 KiB pages in memory, the NVMe profile, and a cache of `cache_pages`.
    pub fn with_cache_pages(cache_pages: usize) -> StorageConfig {
        StorageConfig {
            page_size: 2048,
            cache_pages,
            device: DeviceKind::Mem,
            file_dir: PathBuf::new(),
            direct_io: true,
            profile: DeviceProfile::Nvme,
        }
    }

    /// Range checks, and for `device = file` that `file_dir` is a directory a page file can be
    /// created in (tried with a probe file, removed at once), so a run does not start only to fail
    /// in its first cell.
    pub fn validate(&self) -> anyhow::Result<()> {
        check(
            "page_size",
            self.page_size,
            (256..=65536).contains(&self.page_size),
            "a page size between 256 and 65536 bytes",
        )?;
        if self.device == DeviceKind::File {
            let dir = self.file_dir();
            let probe = dir.join(format!(".lsmlab-file-dir-probe.{}", std::process::id()));
            let writable = dir.is_dir() && std::fs::write(&probe, b"").is_ok();
            let _ = std::fs::remove_file(&probe);
            check(
                "file_dir",
                dir.display(),
                writable,
                "a directory where files can be created (device=file puts its page file there; \
                 empty: the system temp dir)",
            )?;
        }
        Ok(())
    }

    /// The directory `device = file` puts its (at once unlinked) page file in.
    pub fn file_dir(&self) -> PathBuf {
        dir_or_temp(&self.file_dir)
    }

    /// A fresh device and an empty cache over it.
    pub fn open(&self) -> anyhow::Result<Storage> {
        let (device, direct_io): (Arc<dyn Device>, _) = match self.device {
            DeviceKind::Mem => (Arc::new(MemDevice::new(self.page_size)), None),
            DeviceKind::File => {
                let dir = self.file_dir();
                let options = FileDeviceOptions {
                    direct_io: self.direct_io,
                };
                let file = FileDevice::temporary_with(&dir, self.page_size, options)
                    .with_context(|| format!("creating a file device in {}", dir.display()))?;
                let direct_io = file.direct_io().clone();
                (Arc::new(file), Some(direct_io))
            }
        };
        let cache = Arc::new(BufferCache::new(device.clone(), self.cache_pages));
        Ok(Storage {
            device,
            cache,
            profile: self.profile,
            page_size: self.page_size,
            direct_io,
            file_dir: self.file_dir(),
        })
    }

    /// The note an experiment writes about its device (see [`Storage::device_note`]), found by
    /// opening one device and dropping it; `None` for `device = mem`.
    pub fn device_note(&self) -> anyhow::Result<Option<String>> {
        Ok(self.open()?.device_note())
    }
}

/// A `file_dir` setting as a directory: the system's temporary directory when it is empty.
pub fn dir_or_temp(dir: &std::path::Path) -> PathBuf {
    if dir.as_os_str().is_empty() {
        std::env::temp_dir()
    } else {
        dir.to_path_buf()
    }
}

fn direct_io_default() -> bool {
    true
}

/// An open device with its cache: what an index is built on.
pub struct Storage {
    /// The device the pages live on.
    pub device: Arc<dyn Device>,
    /// The buffer cache every index of the run reads through.
    pub cache: Arc<BufferCache>,
    /// The cost model that turns counted I/O into modelled time.
    pub profile: DeviceProfile,
    /// Page size in bytes.
    pub page_size: usize,
    /// Whether a file device bypasses the page cache (`None` for `device = mem`).
    pub direct_io: Option<DirectIo>,
    file_dir: PathBuf,
}

impl Storage {
    /// The device's counters so far.
    pub fn io(&self) -> IoStats {
        self.device.stats()
    }

    /// For `device = file`, one sentence on how its pages reach the disk: the directory, direct I/O
    /// (or why not), and the sync that ends every flush and merge. `None` for `device = mem`.
    pub fn device_note(&self) -> Option<String> {
        let direct = self.direct_io.as_ref()?;
        let cache = match direct {
            DirectIo::On { .. } => "page reads and writes bypass the operating system's page cache",
            DirectIo::Off(_) => {
                "page reads may be served from the operating system's page cache, so total_ms can \
                 understate device time"
            }
        };
        Some(format!(
            "device=file: {}-byte pages in a file in {} that is unlinked as soon as it is open \
             (nothing is left behind); direct I/O {direct}: {cache}; each flush and merge ends with \
             one fdatasync (counted as syncs, not priced in modelled time).",
            self.page_size,
            self.file_dir.display(),
        ))
    }

    /// Milliseconds the configured profile would spend on `io`.
    pub fn modelled_io_ms(&self, io: IoStats) -> f64 {
        self.profile.modelled_io_ms(io, self.page_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_a_counted_memory_device_with_its_cache() {
        let storage = StorageConfig::with_cache_pages(4).open().unwrap();
        assert_eq!(storage.io(), IoStats::default());
        assert_eq!(storage.page_size, 2048);
        assert_eq!(storage.modelled_io_ms(IoStats::default()), 0.0);
        assert_eq!((storage.direct_io.clone(), storage.device_note()), (None, None));
    }

    #[test]
    fn opens_a_file_device_in_the_given_directory() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = StorageConfig::with_cache_pages(4);
        cfg.device = DeviceKind::File;
        cfg.file_dir = dir.path().to_path_buf();
        let storage = cfg.open().unwrap();
        // The page file is unlinked at once; direct I/O is on or says why not.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let note = storage.device_note().unwrap();
        assert!(note.contains(&dir.path().display().to_string()), "{note}");
        match storage.direct_io.as_ref().unwrap() {
            DirectIo::On { .. } => assert!(note.contains("direct I/O on (O_DIRECT"), "{note}"),
            DirectIo::Off(reason) => assert!(note.contains(reason.as_str()), "{note}"),
        }
        cfg.direct_io = false;
        let note = cfg.device_note().unwrap().unwrap();
        assert!(
            note.contains("direct I/O off (turned off by direct_io = false)"),
            "{note}"
        );
        cfg.file_dir = dir.path().join("missing/deeper");
        let e = format!("{:#}", cfg.open().err().unwrap());
        assert!(e.contains("missing"), "{e}");
    }
}
