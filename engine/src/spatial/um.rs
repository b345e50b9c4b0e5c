//! The Update Memo (UM) of the LSM RUM-tree paper: a memory-resident map from object id to the
//! timestamp of the object's most recent operation and the number of its obsolete entries still in
//! the index (Section 3.1), safe to share between ingesting and querying threads (Section 5).
//!
//! **Reads take no lock.** Section 5 keeps the UM in a concurrent hash map whose lookups never
//! block (the authors' `ConcurrentHashMap`), because every query checks every candidate entry
//! against it. Here too [`UpdateMemo::is_obsolete`] and [`UpdateMemo::get`] are a few atomic loads:
//! no lock, no read-modify-write, no write to memory another thread reads. The map is split into 64
//! shards by object id, each an open-addressing table of slots `(key, state)`, two atomic words:
//!
//! - `state` packs an entry's `<ts, cnt>` into one word (`ts` in the high 40 bits, `cnt` in the low
//!   24; 0 means no entry), so a reader sees a whole entry or none, never a `ts` of one update with
//!   a `cnt` of another;
//! - a slot's `key` is written once, when an object first needs a slot in that table, and never
//!   changes after (an entry whose count drops to 0 leaves its key behind with state 0), so a reader
//!   that found its object's key reads that object's state and nobody else's;
//! - a table is never resized in place: a writer that fills one to 3/4 copies the live entries into
//!   a table twice its size and publishes it. A reader that picked up the old table just before
//!   reads the state as it was when the copy was made, a value current during its read. Old tables
//!   are kept until the memo is dropped (a reader may still be probing one), which costs less than
//!   the current table's size again, since each is half the next.
//!
//! **Writes lock their shard.** Algorithm 6's put-if-absent and increment (with Algorithm 5's
//! compare-if-less-then-swap, a `max`, here: [`cils`] is the bare-atomic form), Algorithm 7's
//! decrement and removal at 0, and an insert's timestamp raise each take their shard's mutex once,
//! compute the new state and store it with one atomic store. Each is therefore atomic as a whole,
//! which covers the three interleavings Section 5 argues (two threads creating the same entry, two
//! raising its timestamp, a release racing an increment; `engine/tests/loom_um.rs` checks them and
//! a reader racing a writer): the state a set of concurrent operations leaves is the state some
//! sequential order of them leaves. Section 5 instead updates an existing entry's `ts` and `cnt`
//! with separate atomics under a read lock; with two threads rarely on one of 64 shards, a shard
//! mutex costs fewer atomic read-modify-writes per update than that. `make bench` measures the
//! memo's record / check / release cycle on one and two threads (`update_memo_1t`/`_2t` in
//! `engine/benches/peers.rs`).
//!
//! **Limits.** Timestamps must be below 2^40 (the index's clock counts operations: a trillion of
//! them) and an object can have at most 2^24 - 1 (16,777,215) obsolete entries counted at once; a
//! record beyond either panics with the object named. A table holds a slot for every object that
//! had an entry since the table was made, live or not, so its size follows the objects the index
//! has seen rather than the entries held now (like a map of every object); [`UpdateMemo::len`]
//! and [`UpdateMemo::max_len`] count entries, as the paper's Table 2 does.

use crate::{Error, Result};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
// The published tables are std's in both builds: a reader reaches one only through its shard's
// `current` index (Acquire), which loom models and which orders the table's creation before the
// reader's probes.
use std::sync::OnceLock;
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

/// Bits of a state word that hold the count; the timestamp has the rest.
const CNT_BITS: u32 = 24;
/// The largest count a state word holds.
const CNT_MAX: u64 = (1 << CNT_BITS) - 1;
/// Timestamps the memo holds are below this (2^40).
const TS_LIMIT: u64 = 1 << (64 - CNT_BITS);

/// `<ts, cnt>` as one state word. `cnt` is at least 1 for an entry, so no entry's word is 0.
#[inline]
fn pack(ts: u64, cnt: u64) -> u64 {
    (ts << CNT_BITS) | cnt
}

#[inline]
fn ts_of(word: u64) -> u64 {
    word >> CNT_BITS
}

#[inline]
fn cnt_of(word: u64) -> u64 {
    word & CNT_MAX
}

/// The entry a state word holds (`None` for 0).
#[inline]
fn unpack(word: u64) -> Option<MemoState> {
    (word != 0).then(|| MemoState {
        ts: ts_of(word),
        cnt: cnt_of(word),
    })
}

fn check_ts(oid: u64, ts: u64) {
    assert!(
        ts < TS_LIMIT,
        "object {oid}: timestamp {ts} is beyond the Update Memo's limit of 2^40 ({TS_LIMIT})"
    );
}

/// A fixed multiplicative hasher for u64 keys: fast, and deterministic (no per-process seed). Used
/// by [`UpdateMemo::check_releases`] to group releases.
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

/// The key of a slot no object has taken. (Object `u64::MAX` has its own word in its shard.)
const VACANT: u64 = u64::MAX;

/// One slot of a table: the object that took it, and its entry's state word.
struct Slot {
    key: AtomicU64,
    state: AtomicU64,
}

/// Slots in a shard's first table (2^3); each next table has twice as many.
const FIRST_TABLE_BITS: u32 = 3;
/// Tables a shard can publish: the last would hold 2^50 slots, more than any machine's memory.
const MAX_TABLES: usize = 48;

const SHARD_BITS: u32 = 6;
const SHARDS: usize = 1 << SHARD_BITS;

/// A multiplicative (Fibonacci) hash of an object id: its top [`SHARD_BITS`] pick the shard, the
/// bits below them the home slot in the shard's table.
#[inline]
fn hash(oid: u64) -> u64 {
    oid.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// An open-addressing table with linear probing; its length is a power of two.
struct Table {
    slots: Box<[Slot]>,
    /// log2 of the length.
    bits: u32,
}

impl Table {
    fn new(bits: u32) -> Self {
        Table {
            slots: (0..1usize << bits)
                .map(|_| Slot {
                    key: AtomicU64::new(VACANT),
                    state: AtomicU64::new(0),
                })
                .collect(),
            bits,
        }
    }

    /// The slot holding `oid`'s key (`true`), or the vacant slot where probing for it stopped
    /// (`false`). The table is never full: writers grow it at 3/4.
    #[inline]
    fn probe(&self, oid: u64) -> (&Slot, bool) {
        let mask = self.slots.len() - 1;
        let mut i = ((hash(oid) << SHARD_BITS) >> (64 - self.bits)) as usize;
        loop {
            let slot = &self.slots[i];
            // Acquire: a key seen here was stored after its state (Release), so the state read next
            // is at least that one.
            match slot.key.load(Ordering::Acquire) {
                k if k == oid => return (slot, true),
                VACANT => return (slot, false),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// `oid`'s state word (0: no entry).
    #[inline]
    fn state(&self, oid: u64) -> u64 {
        match self.probe(oid) {
            (slot, true) => slot.state.load(Ordering::Acquire),
            (_, false) => 0,
        }
    }
}

/// What a shard's writers share under its lock: how many of the current table's slots are taken.
struct Writer {
    taken: usize,
}

/// One shard, its hot words alone on their cache lines (128 bytes: a line and the one the
/// adjacent-line prefetcher pairs with it), so that threads on different shards do not contend
/// for a line.
#[repr(align(128))]
struct Shard {
    /// Which of `tables` readers probe: set after the table it names, with Release.
    current: AtomicUsize,
    /// The state word of object `u64::MAX`, whose id is the tables' vacant key.
    last_oid: AtomicU64,
    writer: Mutex<Writer>,
    /// The tables published so far, each twice the size of the one before; only `current` is
    /// written, the older ones are kept for readers that may still be probing them.
    tables: Box<[OnceLock<Table>]>,
}

#[cfg(loom)]
#[allow(clippy::expect_used)] // loom poisons a lock only after a modelled thread panicked, failing the model
fn lock(shard: &Shard) -> MutexGuard<'_, Writer> {
    shard
        .writer
        .lock()
        .expect("a modelled thread panicked holding a shard")
}

#[cfg(not(loom))]
#[inline]
fn lock(shard: &Shard) -> MutexGuard<'_, Writer> {
    shard.writer.lock()
}

impl Shard {
    fn new() -> Self {
        let tables: Box<[OnceLock<Table>]> = (0..MAX_TABLES).map(|_| OnceLock::new()).collect();
        let _ = tables[0].set(Table::new(FIRST_TABLE_BITS));
        Shard {
            current: AtomicUsize::new(0),
            last_oid: AtomicU64::new(0),
            writer: Mutex::new(Writer { taken: 0 }),
            tables,
        }
    }

    /// Table `i`, which was set before `i` was published.
    #[inline]
    fn table(&self, i: usize) -> &Table {
        match self.tables[i].get() {
            Some(t) => t,
            None => unreachable!("table {i} of an Update Memo shard was published before it was set"),
        }
    }

    /// The table readers probe now.
    #[inline]
    fn current(&self) -> &Table {
        self.table(self.current.load(Ordering::Acquire))
    }

    /// `oid`'s state word, without a lock.
    #[inline]
    fn state(&self, oid: u64) -> u64 {
        if oid == VACANT {
            self.last_oid.load(Ordering::Acquire)
        } else {
            self.current().state(oid)
        }
    }

    /// Under the lock: a table twice the current one's size holding its live entries, published.
    fn grow(&self, writer: &mut Writer) -> &Table {
        let i = self.current.load(Ordering::Relaxed);
        let old = self.table(i);
        assert!(
            i + 1 < MAX_TABLES,
            "an Update Memo shard outgrew {MAX_TABLES} tables"
        );
        let new = Table::new(old.bits + 1);
        let mut live = 0;
        for slot in old.slots.iter() {
            let state = slot.state.load(Ordering::Relaxed);
            if state != 0 {
                let key = slot.key.load(Ordering::Relaxed);
                let (to, _) = new.probe(key);
                to.state.store(state, Ordering::Relaxed);
                to.key.store(key, Ordering::Relaxed);
                live += 1;
            }
        }
        if self.tables[i + 1].set(new).is_err() {
            unreachable!("only the writer holding the shard's lock sets its next table");
        }
        // Release: a reader that sees i + 1 sees the table and every slot copied into it.
        self.current.store(i + 1, Ordering::Release);
        writer.taken = live;
        self.table(i + 1)
    }
}

/// The entry counters, on their own cache lines, apart from the shard table every operation reads.
#[repr(align(128))]
struct Counts {
    len: AtomicUsize,
    max_len: AtomicUsize,
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
    shards: Box<[Shard]>,
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
            shards: (0..SHARDS).map(|_| Shard::new()).collect(),
            counts: Counts {
                len: AtomicUsize::new(0),
                max_len: AtomicUsize::new(0),
            },
        }
    }

    /// The shard of `oid`: the top bits of its hash.
    #[inline]
    fn shard(&self, oid: u64) -> &Shard {
        &self.shards[(hash(oid) >> (64 - SHARD_BITS)) as usize]
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

    /// The entry of `oid`, if the memo holds one. Takes no lock.
    pub fn get(&self, oid: u64) -> Option<MemoState> {
        unpack(self.shard(oid).state(oid))
    }

    /// Algorithm 3's test: an entry of `oid` stamped `ts` is obsolete iff the UM knows a newer
    /// operation on the object. (An entry newer than the UM's ts can only be seen by a concurrent
    /// reader between the R-tree insert and the UM update; it is fresh.) Takes no lock.
    #[inline]
    pub fn is_obsolete(&self, oid: u64, ts: u64) -> bool {
        let word = self.shard(oid).state(oid);
        word != 0 && ts < ts_of(word)
    }

    /// Under `oid`'s shard lock, its state word goes from `old` to `next(old)` in one store;
    /// returns `old`. Keeps the entry counts: 0 to non-0 creates an entry, non-0 to 0 removes it.
    fn modify(&self, oid: u64, next: impl FnOnce(u64) -> Result<u64>) -> Result<u64> {
        let shard = self.shard(oid);
        let mut writer = lock(shard);
        let (old, new) = if oid == VACANT {
            let old = shard.last_oid.load(Ordering::Relaxed);
            let new = next(old)?;
            if new != old {
                shard.last_oid.store(new, Ordering::Release);
            }
            (old, new)
        } else {
            let table = shard.table(shard.current.load(Ordering::Relaxed));
            let (slot, found) = table.probe(oid);
            let old = if found {
                slot.state.load(Ordering::Relaxed)
            } else {
                0
            };
            let new = next(old)?;
            if new != old {
                if found {
                    // Release: a reader that sees this state sees what this thread did before.
                    slot.state.store(new, Ordering::Release);
                } else {
                    let table = if (writer.taken + 1) * 4 > table.slots.len() * 3 {
                        shard.grow(&mut writer)
                    } else {
                        table
                    };
                    let (slot, _) = table.probe(oid);
                    slot.state.store(new, Ordering::Relaxed);
                    // Release: a reader that finds the key finds the state stored before it.
                    slot.key.store(oid, Ordering::Release);
                    writer.taken += 1;
                }
            }
            (old, new)
        };
        // Counted under the lock, so that the count never sees an entry's removal before its creation.
        if old == 0 && new != 0 {
            self.entry_added();
        } else if old != 0 && new == 0 {
            self.counts.len.fetch_sub(1, Ordering::AcqRel);
        }
        Ok(old)
    }

    /// Algorithm 6: an update or delete of `oid` at `ts` made one more entry obsolete: put-if-absent
    /// `(ts, 1)`, else increment the count and raise the timestamp to `ts` if it is older (CILS).
    /// Both land in one store under the shard's lock, so a concurrent cleaning sees the entry
    /// obsolete only together with its incremented count, and never drops more obsolete entries of
    /// the object than the memo counts (which [`Self::try_release`] and [`Self::check_releases`]
    /// would refuse as corruption). Panics if `ts` is not below 2^40 or the object already has
    /// 2^24 - 1 obsolete entries counted.
    pub fn record_obsolete(&self, oid: u64, ts: u64) {
        check_ts(oid, ts);
        let _ = self.modify(oid, |old| {
            Ok(match unpack(old) {
                None => pack(ts, 1),
                Some(e) => {
                    assert!(
                        e.cnt < CNT_MAX,
                        "object {oid} has {CNT_MAX} obsolete entries counted, the most the Update Memo holds"
                    );
                    pack(e.ts.max(ts), e.cnt + 1)
                }
            })
        });
    }

    /// A fresh insert of `oid` at `ts`: no entry becomes obsolete, but if the UM remembers the
    /// object (it was deleted and its old entries are not all cleaned yet) its timestamp must be
    /// raised so that the new entry is the fresh one. Panics if `ts` is not below 2^40.
    pub fn record_insert(&self, oid: u64, ts: u64) {
        check_ts(oid, ts);
        let _ = self.modify(oid, |old| {
            Ok(match unpack(old) {
                None => 0,
                Some(e) => pack(e.ts.max(ts), e.cnt),
            })
        });
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
        self.modify(oid, |old| match unpack(old) {
            None => Err(not_counted(oid, "it holds no entry of the object")),
            Some(e) if e.cnt == 0 => Err(not_counted(oid, "its count of the object is already 0")),
            Some(e) if e.cnt == 1 => Ok(0),
            Some(e) => Ok(pack(e.ts, e.cnt - 1)),
        })
        .map(|_| ())
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

    /// Every entry's `(oid, state word)`, shard by shard, each read under its shard's lock.
    fn words(&self) -> Vec<(u64, u64)> {
        let mut all = Vec::with_capacity(self.len());
        for shard in self.shards.iter() {
            let _writer = lock(shard);
            let last = shard.last_oid.load(Ordering::Relaxed);
            if last != 0 {
                all.push((VACANT, last));
            }
            let table = shard.table(shard.current.load(Ordering::Relaxed));
            for slot in table.slots.iter() {
                let state = slot.state.load(Ordering::Relaxed);
                if state != 0 {
                    all.push((slot.key.load(Ordering::Relaxed), state));
                }
            }
        }
        all
    }

    /// Whether any entry has count 0 (a quiescent UM never does). For tests.
    pub fn has_zero_count_entry(&self) -> bool {
        self.words().iter().any(|&(_, w)| cnt_of(w) == 0)
    }

    /// Every entry, sorted by oid (for comparing states in tests and replays).
    pub fn snapshot(&self) -> Vec<(u64, MemoState)> {
        let mut all: Vec<(u64, MemoState)> = self
            .words()
            .into_iter()
            .filter_map(|(k, w)| unpack(w).map(|e| (k, e)))
            .collect();
        all.sort_unstable_by_key(|(k, _)| *k);
        all
    }
}

/// Loom models of what only this module can set up: a reader racing a writer that grows a table.
/// (`engine/tests/loom_um.rs` has the models of the memo's public operations on one object.)
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// The first `n` object ids that fall in shard 0.
    fn same_shard(n: usize) -> Vec<u64> {
        (0..u64::MAX)
            .filter(|&o| hash(o) >> (64 - SHARD_BITS) == 0)
            .take(n)
            .collect()
    }

    #[test]
    fn a_reader_racing_a_table_growth_finds_every_entry_current() {
        // Six objects fill the first table to its limit; the writer's seventh makes it grow, then
        // raises the first object's stamp in the new table. The reader, probing whichever table it
        // picks up, must find both objects it checks, and never see a stamp go back.
        let oids = same_shard(7);
        assert_eq!(FIRST_TABLE_BITS, 3, "the model fills an 8-slot table");
        let mut model = loom::model::Builder::new();
        model.max_branches = 50_000; // the growth's copy and a model's checks read many slots
        model.check(move || {
            let um = Arc::new(UpdateMemo::new());
            for &o in &oids[..6] {
                um.record_obsolete(o, 10);
            }
            // Both sides in spawned threads: loom's exploration misses interleavings when the
            // model's main thread reads after spawning a thread whose first access is a load.
            let writer = {
                let (um, oids) = (um.clone(), oids.clone());
                loom::thread::spawn(move || {
                    um.record_obsolete(oids[6], 20);
                    um.record_obsolete(oids[0], 30);
                })
            };
            let reader = {
                let (um, oids) = (um.clone(), oids.clone());
                loom::thread::spawn(move || {
                    let first = um.get(oids[0]).map(|e| e.ts);
                    let fifth = um.get(oids[5]);
                    let again = um.get(oids[0]).map(|e| e.ts);
                    assert!(matches!(first, Some(10 | 30)), "{first:?}");
                    assert_eq!(fifth, Some(MemoState { ts: 10, cnt: 1 }));
                    assert!(again >= first, "{first:?} then {again:?}");
                })
            };
            writer.join().unwrap();
            reader.join().unwrap();
            assert_eq!(um.get(oids[0]), Some(MemoState { ts: 30, cnt: 2 }));
            assert_eq!(um.get(oids[6]), Some(MemoState { ts: 20, cnt: 1 }));
            assert_eq!(um.len(), 7);
            assert_eq!(um.shards[0].current.load(Ordering::Relaxed), 1, "the table grew");
        });
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
    fn an_entry_is_one_word_and_object_u64_max_has_its_own() {
        let um = UpdateMemo::new();
        um.record_obsolete(u64::MAX, 7);
        um.record_obsolete(u64::MAX, TS_LIMIT - 1);
        um.record_obsolete(0, 1);
        assert_eq!(
            um.get(u64::MAX),
            Some(MemoState {
                ts: TS_LIMIT - 1,
                cnt: 2
            })
        );
        assert!(um.is_obsolete(u64::MAX, TS_LIMIT - 2));
        assert_eq!(um.get(0), Some(MemoState { ts: 1, cnt: 1 }));
        assert_eq!(um.len(), 2);
        assert_eq!(um.snapshot().last().map(|(k, _)| *k), Some(u64::MAX));
        um.release(u64::MAX);
        um.release(u64::MAX);
        assert_eq!(um.get(u64::MAX), None);
        assert_eq!(um.len(), 1);
    }

    #[test]
    #[should_panic(expected = "beyond the Update Memo's limit of 2^40")]
    fn a_timestamp_beyond_the_limit_is_refused() {
        UpdateMemo::new().record_obsolete(3, TS_LIMIT);
    }

    #[test]
    fn growing_tables_keep_every_entry_and_a_removed_object_comes_back() {
        let um = UpdateMemo::new();
        let mut oracle: HashMap<u64, MemoState> = HashMap::new();
        // 20,000 objects (every shard grows its table several times), then half released to 0
        // and some of those recorded again, reusing their slots.
        for oid in 0..20_000u64 {
            for k in 0..(oid % 3 + 1) {
                um.record_obsolete(oid * 31, oid + k + 1);
            }
            oracle.insert(
                oid * 31,
                MemoState {
                    ts: oid + oid % 3 + 1,
                    cnt: oid % 3 + 1,
                },
            );
        }
        for oid in (0..20_000u64).filter(|o| o % 2 == 0) {
            for _ in 0..(oid % 3 + 1) {
                um.release(oid * 31);
            }
            oracle.remove(&(oid * 31));
        }
        for oid in (0..20_000u64).filter(|o| o % 10 == 0) {
            um.record_insert(oid * 31, 50_000); // no entry: nothing to raise
            um.record_obsolete(oid * 31, 60_000 + oid);
            oracle.insert(
                oid * 31,
                MemoState {
                    ts: 60_000 + oid,
                    cnt: 1,
                },
            );
        }
        let mut want: Vec<(u64, MemoState)> = oracle.into_iter().collect();
        want.sort_unstable_by_key(|(k, _)| *k);
        assert_eq!(um.snapshot(), want);
        assert_eq!(um.len(), want.len());
        assert_eq!(um.max_len(), 20_000);
        for (oid, st) in &want {
            assert_eq!(um.get(*oid), Some(*st));
        }
        assert_eq!(um.get(31 * 20_000), None);
    }

    #[test]
    fn readers_never_block_or_miss_an_entry_while_tables_grow() {
        // Object 7's entry exists throughout; a writer adds 50,000 other objects (every shard's
        // table grows many times) while readers keep checking object 7 and the objects written so
        // far, lock-free: none may ever read an entry missing or its state going backwards.
        let um = Arc::new(UpdateMemo::new());
        um.record_obsolete(7, 100);
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let started = Arc::new(AtomicUsize::new(0));
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let (um, done, written, started) =
                    (um.clone(), done.clone(), written.clone(), started.clone());
                std::thread::spawn(move || {
                    let mut checks = 0u64;
                    loop {
                        let finished = done.load(Ordering::Acquire);
                        assert!(um.is_obsolete(7, 99) && !um.is_obsolete(7, 100));
                        let upto = written.load(Ordering::Acquire);
                        if upto > 0 {
                            let oid = 1_000 + (checks * 7_919 + r) % upto;
                            let st = um.get(oid).unwrap_or_else(|| panic!("object {oid} missing"));
                            assert!(st.cnt >= 1 && st.ts == oid, "object {oid}: {st:?}");
                        }
                        if checks == 0 {
                            started.fetch_add(1, Ordering::AcqRel);
                        }
                        checks += 1;
                        if finished {
                            return checks;
                        }
                    }
                })
            })
            .collect();
        // The writer starts once both readers are reading, so that they race it.
        while started.load(Ordering::Acquire) < 2 {
            std::thread::yield_now();
        }
        for oid in 1_000..51_000u64 {
            um.record_obsolete(oid, oid);
            written.store(oid - 1_000 + 1, Ordering::Release);
            if oid % 3 == 0 {
                um.record_obsolete(oid, oid); // a second obsolete entry, same stamp
            }
        }
        done.store(true, Ordering::Release);
        for r in readers {
            assert!(r.join().unwrap() >= 2);
        }
        assert_eq!(um.len(), 50_001);
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
