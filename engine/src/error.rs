//! The engine's typed errors.

use crate::storage::PageId;

/// Everything the engine can fail with. Corruption is always a typed error, never a wrong answer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system I/O call failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A page read back from a device does not match the checksum written with it (`device` is
    /// the device's name, a file's path for a file).
    #[error(
        "checksum mismatch on page {page} of {device}: stored {stored:#010x}, computed {computed:#010x}"
    )]
    Checksum {
        /// The page read.
        page: PageId,
        /// The device's name.
        device: String,
        /// The checksum written with the page.
        stored: u32,
        /// The checksum of the bytes read back.
        computed: u32,
    },
    /// A page was read that was never written, or lies beyond the device's end.
    #[error("page {page} is not allocated on this device")]
    UnknownPage {
        /// The page asked for.
        page: PageId,
    },
    /// A page's contents do not decode as the structure that owns it.
    #[error("corrupt page {page}: {reason}")]
    Corrupt {
        /// The page that does not decode.
        page: PageId,
        /// What is wrong with it.
        reason: String,
    },
    /// An entry that decodes but contradicts the index's own bookkeeping: on a device without
    /// checksums, a garbled disk entry (e.g. an LSM R-tree leaf entry decoded as a stale version of
    /// another object, which the Update Memo does not count). The flush or merge that met it is
    /// refused and changes nothing.
    #[error("corrupt entry of object {oid}: {reason}")]
    CorruptEntry {
        /// The object the entry names.
        oid: u64,
        /// What contradicts the bookkeeping.
        reason: String,
    },
    /// An engine that stops at its first failed update (fail-stop) refuses every later call; `cause`
    /// is the first failure's message.
    #[error("{engine} has stopped after a failed operation ({cause}) and refuses every call")]
    Stopped {
        /// The engine that stopped (e.g. "record cluster").
        engine: &'static str,
        /// The first failure's message.
        cause: String,
    },
    /// A configuration value is out of range or inconsistent.
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// The engine's result type.
pub type Result<T> = std::result::Result<T, Error>;
