//! The storage every experiment runs on: a device (counted in memory, or real files) behind a
//! buffer cache, with the device profile that turns counted I/O into modelled time (DESIGN.md §4).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::storage::{Device, DeviceProfile, FileDevice, IoStats, MemDevice};
use serde::{Deserialize, Serialize};

use super::{check, KeyHelp};

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
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Mem => "mem",
            DeviceKind::File => "file",
        }
    }
}

/// Storage settings shared by every paper; experiment configs flatten it, so its keys are
/// top-level `--set` keys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StorageConfig {
    /// Page size in bytes.
    pub page_size: usize,
    /// Buffer cache capacity in pages.
    pub cache_pages: usize,
    pub device: DeviceKind,
    /// Directory of `device = file`; empty means the system's temporary directory.
    pub file_dir: PathBuf,
    /// The profile of modelled time.
    #[serde(with = "super::text")]
    pub profile: DeviceProfile,
}

impl StorageConfig {
    /// The keys' help, for [`super::Config::help`].
    pub const HELP: [KeyHelp; 5] = [
        ("page_size", "page size in bytes (the RUM-tree authors ran 2 KiB)"),
        ("cache_pages", "buffer cache capacity in pages"),
        (
            "device",
            "mem (counted, in memory) or file (real checksummed files)",
        ),
        (
            "file_dir",
            "directory for device=file (default: the system temp dir)",
        ),
        ("profile", "device profile for modelled time: nvme, sata-ssd, hdd"),
    ];

    /// 2 KiB pages in memory, the NVMe profile, and a cache of `cache_pages`.
    pub fn with_cache_pages(cache_pages: usize) -> StorageConfig {
        StorageConfig {
            page_size: 2048,
            cache_pages,
            device: DeviceKind::Mem,
            file_dir: PathBuf::new(),
            profile: DeviceProfile::Nvme,
        }
    }

    /// Range checks.
    pub fn validate(&self) -> anyhow::Result<()> {
        check(
            "page_size",
            self.page_size,
            (256..=65536).contains(&self.page_size),
            "a page size between 256 and 65536 bytes",
        )
    }

    /// A fresh device and an empty cache over it.
    pub fn open(&self) -> anyhow::Result<Storage> {
        let device: Arc<dyn Device> = match self.device {
            DeviceKind::Mem => Arc::new(MemDevice::new(self.page_size)),
            DeviceKind::File => {
                let dir = if self.file_dir.as_os_str().is_empty() {
                    std::env::temp_dir()
                } else {
                    self.file_dir.clone()
                };
                Arc::new(
                    FileDevice::temporary(&dir, self.page_size)
                        .with_context(|| format!("creating a file device in {}", dir.display()))?,
                )
            }
        };
        let cache = Arc::new(BufferCache::new(device.clone(), self.cache_pages));
        Ok(Storage {
            device,
            cache,
            profile: self.profile,
            page_size: self.page_size,
        })
    }
}

/// An open device with its cache: what an index is built on.
pub struct Storage {
    pub device: Arc<dyn Device>,
    pub cache: Arc<BufferCache>,
    pub profile: DeviceProfile,
    pub page_size: usize,
}

impl Storage {
    /// The device's counters so far.
    pub fn io(&self) -> IoStats {
        self.device.stats()
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
    }

    #[test]
    fn opens_a_file_device_in_the_given_directory() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = StorageConfig::with_cache_pages(4);
        cfg.device = DeviceKind::File;
        cfg.file_dir = dir.path().to_path_buf();
        assert!(cfg.open().is_ok());
        cfg.file_dir = dir.path().join("missing/deeper");
        let e = format!("{:#}", cfg.open().err().unwrap());
        assert!(e.contains("missing"), "{e}");
    }
}
