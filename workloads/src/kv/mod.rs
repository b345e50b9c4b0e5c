//! Key-value workloads: YCSB's skewed key generators and the Leaper paper's three workloads
//! (`docs/papers/leaper.md#the-paper-in-brief`; Yang et al., "Leaper: a learned prefetcher for
//! cache invalidation in LSM-tree based storage engines", PVLDB 13(11), 2020, Table 2) as
//! deterministic op streams.
//!
//! - [`Zipfian`], [`ScrambledZipfian`], [`Latest`]: YCSB's `ZipfianGenerator`,
//!   `ScrambledZipfianGenerator` and `SkewedLatestGenerator` (module `zipfian`);
//! - [`Sysbench`], [`SysbenchDist`]: SysBench's `--rand-type` generators (uniform, gaussian,
//!   special, pareto, zipfian; module `sysbench`), and [`KeyDist`], the switch that picks a
//!   workload's key draws among them and YCSB's;
//! - [`KvWorkload`]: a workload spec (op shares, zipf constant, record count, scan length, value
//!   size, day length and periodic shift of the hot set), by name ([`KvWorkload::parse`],
//!   [`KvWorkload::ALL`]) with overrides for sensitivity sweeps;
//! - [`KvStream`]: the infinite op stream of a spec and a seed, yielding [`TimedOp`]s
//!   (sequence number, time-of-day fraction, [`KvOp`]);
//! - [`value_for`]: the deterministic value bytes of a (key, version), so a store's answers can
//!   be checked.

mod sysbench;
mod workload;
mod zipfian;

pub use sysbench::{KeyDist, Sysbench, SysbenchDist};
pub use workload::{KvStream, KvWorkload, OpShares, PeriodicShift, TimedOp};
pub use zipfian::{
    ycsb_fnvhash64, zeta, Latest, ScrambledZipfian, Zipfian, YCSB_SCRAMBLED_ITEM_COUNT, YCSB_SCRAMBLED_ZETAN,
    YCSB_ZIPFIAN_CONSTANT,
};

use crate::splitmix64;

/// One key-value operation. Keys are record ids (`u64`); see [`KvWorkload`] for how they are
/// drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KvOp {
    /// Point lookup of one key.
    Get(u64),
    /// Range lookup of the keys in `lo..=hi` (both ends included).
    Scan {
        /// The smallest key of the range.
        lo: u64,
        /// The largest key of the range.
        hi: u64,
    },
    /// Overwrite of an existing key's value.
    Update(u64),
    /// Insert of a key that did not exist before.
    Insert(u64),
}

impl KvOp {
    /// Whether the op writes (update or insert).
    pub fn is_write(&self) -> bool {
        matches!(self, KvOp::Update(_) | KvOp::Insert(_))
    }

    /// The key a point op touches, or the first key of a scan.
    pub fn key(&self) -> u64 {
        match *self {
            KvOp::Get(k) | KvOp::Update(k) | KvOp::Insert(k) => k,
            KvOp::Scan { lo, .. } => lo,
        }
    }
}

/// The value of `key` at `version`, `len` bytes long: the key (8 bytes, little-endian), then the
/// version (8 bytes, little-endian), then pseudo-random filler from a splitmix64 chain seeded by
/// both, all cut to `len` bytes. The same (key, version, len) always gives the same bytes, and
/// values of 16 bytes or more name their key and version ([`decode_value`]). [`KvStream`] loads
/// records at version 0 and writes op `seq`'s value at version `seq + 1`
/// ([`TimedOp::write_version`]).
pub fn value_for(key: u64, version: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len.max(16));
    v.extend_from_slice(&key.to_le_bytes());
    v.extend_from_slice(&version.to_le_bytes());
    let mut state = splitmix64(key ^ splitmix64(version));
    while v.len() < len {
        state = splitmix64(state);
        v.extend_from_slice(&state.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// The (key, version) a [`value_for`] value of at least 16 bytes was made for, if its filler
/// matches too; `None` for shorter or altered values.
pub fn decode_value(value: &[u8]) -> Option<(u64, u64)> {
    if value.len() < 16 {
        return None;
    }
    let key = u64::from_le_bytes(value[0..8].try_into().ok()?);
    let version = u64::from_le_bytes(value[8..16].try_into().ok()?);
    (value_for(key, version, value.len()) == value).then_some((key, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_deterministic_sized_and_decodable() {
        let a = value_for(42, 7, 200);
        assert_eq!(a.len(), 200);
        assert_eq!(a, value_for(42, 7, 200));
        assert_ne!(a, value_for(42, 8, 200));
        assert_ne!(a, value_for(43, 7, 200));
        assert_eq!(decode_value(&a), Some((42, 7)));
        let mut b = a.clone();
        b[150] ^= 1;
        assert_eq!(decode_value(&b), None);
        assert_eq!(value_for(42, 7, 5).len(), 5);
        assert_eq!(value_for(42, 7, 0).len(), 0);
        assert_eq!(decode_value(&value_for(42, 7, 15)), None);
        // Filler differs between keys beyond the header.
        assert_ne!(value_for(1, 0, 64)[16..], value_for(2, 0, 64)[16..]);
    }
}
