//! The Update Memo (UM) of the LSM RUM-tree paper: a memory-resident map from object id to the
//! timestamp of the object's most recent operation and the number of its obsolete entries still in
//! the index (Section 3.1), safe to share between ingesting and querying threads (Section 5).
//!
//! Locking: the map is split into 64 shards by object id, each a small hash map behind its own
//! mutex, on its own cache line. Every operation locks the one shard of its object once and does all
//! its work there: Algorithm 6's put-if-absent and increment, Algorithm 5's compare-if-less-then-swap
//! (a `max` under the lock, [`cils`] on a bare atomic), Algorithm 7's decrement and removal at 0.
//! Each operation is therefore atomic as a whole, which covers the three interleavings Section 5
//! argues (two threads creating the same entry, two raising its timestamp, a release racing an
//! increment; `engine/tests/loom_um.rs` checks them): the state a set of concurrent operations
//! leaves is the state some sequential order of them leaves.
//!
//! Section 5 instead updates an existing entry's `ts` and `cnt` with atomics while the map is only
//! read-locked, so that threads on different objects never exclude each other. That costs four
//! atomic read-modify-write instructions per update (read lock, increment, CILS, unlock) and three
//! to five per release, against two for a shard mutex, while a shard's critical section is a few
//! map operations, so that two threads rarely meet on one of 64 shards: the shard mutexes are the
//! cheaper design here. `make bench` measures the memo's record / check / release cycle on one and
//! two threads (`update_memo_1t`/`_2t` in `engine/benches/peers.rs`).

use crate::{Error, Result};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
// Under `--cfg loom` the locks and atomics are loom's, so that `engine/tests/loom_um.rs` can
// explore every interleaving of the memo's operations (`make loom`).
#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
use parking_lot::{Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The error of a release the memo does not count.
fn not_counted(oid: u64, why: &str) -> Error {
    Error::CorruptEntry {
        oid,
        reason: format!(
            "an obsolete entry of it was dropped but the Update Memo cannot release it ({why}): \
             an entry read back is not one the index wrote"
        ),
    }
}

/// One UM entry `<ts, cnt>`: the timestamp of the object's newest operation, and how many of its entries
/// older than that are still in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoState {
    /// The timestamp of the object's newest operation.
    pub ts: u64,
    /// How many of the object's entries older than `ts` are still in the index.
    pub cnt: u64,
}

/// A fixed multiplicative hasher for u64 keys: fast, and deterministic (no per-process seed).
#[derive(Default)]
struct OidHasher(u64);

impl Hasher for OidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        self.0 ^= self.0 >> 32;
    }
}

type Map = HashMap<u64, MemoState, BuildHasherDefault<OidHasher>>;

/// One shard, alone on its cache lines (128 bytes: a line and the one the adjacent-line prefetcher
/// pairs with it), so that threads on different shards do not contend for a line.
#[repr(align(128))]
struct Shard(Mutex<Map>);

const SHARD_BITS: u32 = 6;
const SHARDS: usize = 1 << SHARD_BITS;

/// The entry counters, on their own cache lines, apart from the shard table every operation reads.
#[repr(align(128))]
struct Counts {
    len: AtomicUsize,
    max_len: AtomicUsize,
}

#[cfg(loom)]
#[allow(clippy::expect_used)] // loom poisons a lock only after a modelled thread panicked, failing the model
fn lock(shard: &Shard) -> MutexGuard<'_, Map> {
    shard
        .0
        .lock()
        .expect("a modelled thread panicked holding a shard")
}

#[cfg(not(loom))]
#[inline]
fn lock(shard: &Shard) -> MutexGuard<'_, Map> {
    shard.0.lock()
}

/// CILS (Algorithm 5): raises `cell` to `val` unless it already holds `val` or more. Returns
/// whether this call raised it. (The memo's timestamps are raised under their shard's lock, where
/// this is a `max`; the lock-free form is kept for callers sharing a bare atomic.)
pub fn cils(cell: &AtomicU64, val: u64) -> bool {
    let mut curr = cell.load(Ordering::Acquire);
    loop {
        if curr >= val {
            return false;
        }
        match cell.compare_exchange_weak(curr, val, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return true,
            Err(actual) => curr = actual,
        }
    }
}

/// The Update Memo.
pub struct UpdateMemo {
    shards: Box<[Shard; SHARDS]>,
    counts: Counts,
}

impl Default for UpdateMemo {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for UpdateMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdateMemo").field("len", &self.len()).finish()
    }
}

impl UpdateMemo {
    /// An empty memo.
    pub fn new() -> Self {
        UpdateMemo {
            shards: Box::new(std::array::from_fn(|_| Shard(Mutex::new(Map::default())))),
            counts: Counts {
                len: AtomicUsize::new(0),
                max_len: AtomicUsize::new(0),
            },
        }
    }

    /// The shard of `oid`: the top bits of a multiplicative hash (the shard's map hashes the oid
    /// differently, with [`OidHasher`]).
    #[inline]
    fn shard(&self, oid: u64) -> &Shard {
        let h = oid.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SHARD_BITS);
        &self.shards[h as usize]
    }

    /// Entries currently held.
    pub fn len(&self) -> usize {
        self.counts.len.load(Ordering::Relaxed)
    }

    /// Whether the memo holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest number of entries held at any time so far (the paper's Table 2).
    pub fn max_len(&self) -> usize {
        self.counts.max_len.load(Ordering::Relaxed)
    }

    /// An entry was created: count it, and raise the maximum if the count passed it. (The maximum
    /// only grows, so a stale read of it that is already at least `len` needs no update.)
    fn entry_added(&self) {
        let len = self.counts.len.fetch_add(1, Ordering::AcqRel) + 1;
        if len > self.counts.max_len.load(Ordering::Acquire) {
            self.counts.max_len.fetch_max(len, Ordering::AcqRel);
        }
    }

    /// The entry of `oid`, if the memo holds one.
    pub fn get(&self, oid: u64) -> Option<MemoState> {
        lock(self.shard(oid)).get(&oid).copied()
    }

    /// Algorithm 3's test: an entry of `oid` stamped `ts` is obsolete iff the UM knows a newer
    /// operation on the object. (An entry newer than the UM's ts can only be seen by a concurrent
    /// reader between the R-tree insert and the UM update; it is fresh.)
    #[inline]
    pub fn is_obsolete(&self, oid: u64, ts: u64) -> bool {
        lock(self.shard(oid)).get(&oid).is_some_and(|e| ts < e.ts)
    }

    /// Algorithm 6: an update or delete of `oid` at `ts` made one more entry obsolete: put-if-absent
    /// `(ts, 1)`, else increment the count and raise the timestamp to `ts` if it is older (CILS).
    /// Both happen under the shard's lock, so a concurrent cleaning sees the entry obsolete only
    /// together with its incremented count, and never drops more obsolete entries of the object
    /// than the memo counts (which [`Self::try_release`] and [`Self::check_releases`] would refuse
    /// as corruption).
    pub fn record_obsolete(&self, oid: u64, ts: u64) {
        let mut shard = lock(self.shard(oid));
        match shard.get_mut(&oid) {
            Some(e) => {
                e.cnt += 1;
                e.ts = e.ts.max(ts);
            }
            None => {
                shard.insert(oid, MemoState { ts, cnt: 1 });
                // Counted under the lock, so that the count never sees this entry's removal first.
                self.entry_added();
            }
        }
    }

    /// A fresh insert of `oid` at `ts`: no entry becomes obsolete, but if the UM remembers the
    /// object (it was deleted and its old entries are not all cleaned yet) its timestamp must be
    /// raised so that the new entry is the fresh one.
    pub fn record_insert(&self, oid: u64, ts: u64) {
        if let Some(e) = lock(self.shard(oid)).get_mut(&oid) {
            e.ts = e.ts.max(ts);
        }
    }

    /// Algorithm 7: one obsolete entry of `oid` was removed from the index: decrement the count and
    /// remove the UM entry when it reaches 0. Panics if the memo holds no obsolete entry of `oid`
    /// (see [`Self::try_release`]).
    pub fn release(&self, oid: u64) {
        if let Err(e) = self.try_release(oid) {
            panic!("{e}");
        }
    }

    /// [`Self::release`], but a release the memo does not count (no entry for `oid`, or its count
    /// already 0) is an [`Error::CorruptEntry`] naming the object and changes nothing. Healthy data
    /// never meets it: an entry is released only after the memo saw it become obsolete. A garbled
    /// disk entry that still decodes (a device without checksums) can.
    pub fn try_release(&self, oid: u64) -> Result<()> {
        let mut shard = lock(self.shard(oid));
        let Some(e) = shard.get_mut(&oid) else {
            return Err(not_counted(oid, "it holds no entry of the object"));
        };
        if e.cnt == 0 {
            return Err(not_counted(oid, "its count of the object is already 0"));
        }
        e.cnt -= 1;
        if e.cnt == 0 {
            shard.remove(&oid);
            self.counts.len.fetch_sub(1, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Whether every release of `releases` (an oid per obsolete entry dropped, repeats allowed)
    /// could be applied now: the memo counts at least that many obsolete entries of each object.
    /// Checked before a flush or merge installs its output, so that one meeting an entry the memo
    /// does not count fails with nothing changed. (Concurrent ingestion only ever adds counts.)
    pub fn check_releases(&self, releases: &[u64]) -> Result<()> {
        let mut wanted: HashMap<u64, u64, BuildHasherDefault<OidHasher>> = HashMap::default();
        for &oid in releases {
            *wanted.entry(oid).or_default() += 1;
        }
        for (oid, n) in wanted {
            let held = self.get(oid).map_or(0, |s| s.cnt);
            if held < n {
                return Err(not_counted(
                    oid,
                    &format!("it counts {held} obsolete entries of the object, not {n}"),
                ));
            }
        }
        Ok(())
    }

    /// Whether any entry has count 0 (a quiescent UM never does). For tests.
    pub fn has_zero_count_entry(&self) -> bool {
        self.shards.iter().any(|s| lock(s).values().any(|e| e.cnt == 0))
    }

    /// Every entry, sorted by oid (for comparing states in tests and replays).
    pub fn snapshot(&self) -> Vec<(u64, MemoState)> {
        let mut all: Vec<(u64, MemoState)> = Vec::with_capacity(self.len());
        for s in self.shards.iter() {
            all.extend(lock(s).iter().map(|(&k, &e)| (k, e)));
        }
        all.sort_unstable_by_key(|(k, _)| *k);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn cils_only_raises() {
        let a = AtomicU64::new(5);
        assert!(!cils(&a, 4));
        assert!(!cils(&a, 5));
        assert!(cils(&a, 9));
        assert_eq!(a.load(Ordering::Relaxed), 9);
    }

    #[test]
    fn counts_and_removal_follow_algorithms_6_and_7() {
        let um = UpdateMemo::new();
        um.record_obsolete(3, 7);
        assert_eq!(um.get(3), Some(MemoState { ts: 7, cnt: 1 }));
        um.record_obsolete(3, 9);
        um.record_obsolete(3, 8); // an older stamp never lowers ts
        assert_eq!(um.get(3), Some(MemoState { ts: 9, cnt: 3 }));
        assert!(um.is_obsolete(3, 8));
        assert!(!um.is_obsolete(3, 9));
        assert!(!um.is_obsolete(4, 1));
        um.release(3);
        um.release(3);
        assert_eq!(um.len(), 1);
        um.release(3);
        assert_eq!(um.get(3), None);
        assert!(um.is_empty());
        assert_eq!(um.max_len(), 1);
    }

    #[test]
    fn a_release_the_memo_does_not_count_is_an_error_that_changes_nothing() {
        let um = UpdateMemo::new();
        um.record_obsolete(3, 7);
        um.record_obsolete(3, 9);
        assert!(um.check_releases(&[3, 3]).is_ok());
        let err = um.check_releases(&[3, 5, 3, 3]).unwrap_err();
        assert!(matches!(err, Error::CorruptEntry { oid: 3, .. }), "{err}");
        assert!(err
            .to_string()
            .contains("counts 2 obsolete entries of the object, not 3"));
        assert!(matches!(
            um.try_release(5),
            Err(Error::CorruptEntry { oid: 5, .. })
        ));
        um.try_release(3).unwrap();
        um.try_release(3).unwrap();
        assert!(um.is_empty());
        let err = um.try_release(3).unwrap_err();
        assert!(err.to_string().starts_with("corrupt entry of object 3:"), "{err}");
        assert!(um.is_empty() && !um.has_zero_count_entry());
    }

    #[test]
    fn concurrent_updates_keep_the_highest_timestamp_and_every_increment() {
        let um = Arc::new(UpdateMemo::new());
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let um = um.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        // every thread hammers the same 16 objects with interleaved stamps
                        um.record_obsolete(i % 16, i * 4 + t + 1);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let snap = um.snapshot();
        assert_eq!(snap.len(), 16);
        for (oid, st) in snap {
            assert_eq!(st.cnt, 4 * 10_000 / 16, "object {oid}");
            let last_i = (0..10_000u64).filter(|i| i % 16 == oid).max().unwrap();
            assert_eq!(st.ts, last_i * 4 + 4, "object {oid}");
        }
        // concurrent releases drain everything and remove every entry exactly once
        let threads: Vec<_> = (0..4u64)
            .map(|_| {
                let um = um.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        um.release(i % 16);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(um.is_empty());
        assert!(!um.has_zero_count_entry());
    }
}
