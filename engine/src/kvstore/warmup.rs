//! Cache warm-up policies: what the block cache does about the data blocks a flush or compaction
//! writes and the ones it retires (Leaper, PVLDB 13(11) 2020, §2.2 and §6).
//!
//! A flush or compaction writes new blocks and retires old ones; cached copies of retired blocks
//! are invalidated and the next reads of their keys miss. A [`WarmUpPolicy`] sees every foreground
//! access, is told when a background operation begins (with the input runs' blocks, so it may
//! evict inputs it predicts cold: Leaper's phase 1), and decides for each output block, once the
//! block is complete, whether the cache admits it without a device read (the block is in memory
//! while it is written: prepopulation, incremental warm-up, Leaper's phase 2).
//!
//! A policy is driven by a [`CacheWarmer`]: a lifecycle observer that any index built on the LSM
//! executor ([`crate::lsm::RunStore`]) subscribes, so the same policies serve the key-value store
//! and the LSM R-tree (`crate::combined`) without either calling them itself.

use crate::cache::BufferCache;
use crate::lsm::{
    CompactionKind, KeyRange, LifecycleEvent, LifecycleObserver, RunExtents, RunId, WrittenBlock,
};
use crate::storage::PageId;
use crate::{Error, Result};
use parking_lot::{Mutex, MutexGuard};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// A data block as warm-up policies see it: its page and the keys it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// The block's page on the device.
    pub page: PageId,
    /// The smallest key it holds.
    pub first_key: u64,
    /// The largest key it holds.
    pub last_key: u64,
}

/// A run taking part in a background operation, with its data blocks in key order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunBlocks {
    /// The run's id.
    pub run: RunId,
    /// The level it lies at.
    pub level: usize,
    /// Its data blocks in key order.
    pub blocks: Vec<BlockInfo>,
}

/// The kind of background operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Background {
    /// A memtable written out as a level-0 run.
    Flush,
    /// Runs merged (or moved) into a deeper level.
    Compaction,
}

/// What a policy is told when a flush or compaction begins.
#[derive(Clone, Copy, Debug)]
pub struct BackgroundStart<'a> {
    /// A flush or a compaction.
    pub kind: Background,
    /// The store's virtual time, in seconds (set by the driver, see `KvStore::set_now`).
    pub now: f64,
    /// The runs the operation reads and retires (empty for a flush), blocks in key order.
    pub inputs: &'a [RunBlocks],
    /// The keys the outputs will hold (the memtable's for a flush, the inputs' cover otherwise).
    pub keys: Option<KeyRange<u64>>,
    /// Data blocks the operation reads (a compaction's input blocks; 0 for a flush): the N of
    /// the paper's T1 = alpha * N (§6.2).
    pub blocks_to_merge: u64,
}

/// The kind of a foreground access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A get or a scan.
    Read,
    /// A put or a delete.
    Write,
}

/// A cache warm-up policy. The store calls it synchronously: [`WarmUpPolicy::on_access`] on every
/// foreground operation, [`WarmUpPolicy::begin`] before a flush or compaction writes anything,
/// [`WarmUpPolicy::admit`] once per output data block after the block is written, and
/// [`WarmUpPolicy::end`] when the operation is installed or has failed.
pub trait WarmUpPolicy: Send {
    /// The policy's name, as [`WarmUpKind`] spells it.
    fn name(&self) -> &'static str;

    /// Keys `lo..=hi` were accessed at virtual time `now` (a point operation has `lo == hi`).
    fn on_access(&mut self, _now: f64, _lo: u64, _hi: u64, _access: Access) {}

    /// A background operation begins. The policy may evict pages from `cache` now (Leaper's phase
    /// 1 evicts cached input blocks predicted cold during the operation); the store counts those
    /// evictions apart.
    fn begin(&mut self, _start: &BackgroundStart<'_>, _cache: &BufferCache) -> Result<()> {
        Ok(())
    }

    /// Output `block` of the operation in progress has been written: should the cache admit it
    /// (no extra device I/O)? A policy may also evict pages it replaces (incremental warm-up
    /// evicts the cached input blocks the new block overlaps).
    fn admit(&mut self, _block: &BlockInfo, _cache: &BufferCache) -> bool {
        false
    }

    /// Output page `page` holds no key interval of its own (an R-tree's internal node, an
    /// antimatter page): should the cache admit it? No, unless the policy says so.
    fn admit_unkeyed(&mut self, _page: PageId, _cache: &BufferCache) -> bool {
        false
    }

    /// The operation begun last was installed (`ok`) or failed and changed nothing.
    fn end(&mut self, _now: f64, _ok: bool) {}
}

/// A run key as warm-up policies see it: a point on one `u64` axis, the one access logs and
/// Leaper's key ranges use.
pub trait WarmKey: crate::lsm::RunKey + Send + Sync {
    /// The key on the policies' axis.
    fn warm_key(&self) -> u64;
}

impl WarmKey for u64 {
    fn warm_key(&self) -> u64 {
        *self
    }
}

/// An LSM R-tree entry's place in its component (Hilbert key, object id, timestamp): the Hilbert
/// key is its place on the axis (`crate::combined`'s module docs say why).
impl WarmKey for (u64, u64, u64) {
    fn warm_key(&self) -> u64 {
        self.0
    }
}

fn warm_range<K: WarmKey>(r: &KeyRange<K>) -> KeyRange<u64> {
    KeyRange::new(r.min.warm_key(), r.max.warm_key())
}

/// What a [`CacheWarmer`] did: for one operation ([`CacheWarmer::take_operation`]) or since it
/// was made ([`CacheWarmer::totals`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarmCounts {
    /// Flushes and compactions (merges) the policy was told of.
    pub operations: u64,
    /// Output blocks with keys of their own offered to the policy (a store's data blocks, an
    /// R-tree's leaves).
    pub blocks_offered: u64,
    /// Of those, blocks the cache admitted.
    pub blocks_admitted: u64,
    /// Output pages without keys of their own (index nodes, antimatter) the cache admitted.
    pub other_admitted: u64,
    /// Pages the policy itself evicted, in `begin` and `admit` (evictions that make room for an
    /// admitted block are the cache's and not counted here).
    pub policy_evictions: u64,
}

struct WarmerState {
    policy: Box<dyn WarmUpPolicy>,
    now: f64,
    paused: bool,
    /// The operation in progress the policy was told of (`None` between operations, during a
    /// trivial move or a drop, and while paused).
    current: Option<Background>,
    operation: WarmCounts,
    totals: WarmCounts,
}

/// Drives a [`WarmUpPolicy`] from an LSM index's lifecycle (subscribe it to the index's
/// [`crate::lsm::RunStore`]): `begin` when a flush or merge starts, with the input runs' blocks
/// (so the policy may evict inputs it predicts cold), `admit` for each output block as it is
/// written (admitted without a device read: the bytes are in hand), `end` when the operation is
/// installed or aborted. Trivial moves and drops write nothing and are not told. Foreground
/// accesses reach the policy through [`CacheWarmer::on_access`].
pub struct CacheWarmer {
    cache: Arc<BufferCache>,
    state: Mutex<WarmerState>,
}

impl CacheWarmer {
    /// A warmer admitting into `cache` what `policy` decides.
    pub fn new(cache: Arc<BufferCache>, policy: Box<dyn WarmUpPolicy>) -> Self {
        CacheWarmer {
            cache,
            state: Mutex::new(WarmerState {
                policy,
                now: 0.0,
                paused: false,
                current: None,
                operation: WarmCounts::default(),
                totals: WarmCounts::default(),
            }),
        }
    }

    /// Sets the virtual time, in seconds, the policy is told.
    pub fn set_now(&self, now: f64) {
        self.state.lock().now = now;
    }

    /// Keys `lo..=hi` were accessed (at the time last set).
    pub fn on_access(&self, lo: u64, hi: u64, access: Access) {
        let mut st = self.state.lock();
        let now = st.now;
        st.policy.on_access(now, lo, hi, access);
    }

    /// While paused, operations are not told to the policy (an initial bulk load).
    pub fn pause(&self, paused: bool) {
        self.state.lock().paused = paused;
    }

    /// Replaces the policy (between operations).
    pub fn set_policy(&self, policy: Box<dyn WarmUpPolicy>) {
        self.state.lock().policy = policy;
    }

    /// The policy, locked for as long as the guard lives.
    pub fn policy(&self) -> parking_lot::MappedMutexGuard<'_, dyn WarmUpPolicy> {
        MutexGuard::map(self.state.lock(), |st| &mut *st.policy)
    }

    /// What the warmer did in the operation told last (or in progress), and starts a new count.
    pub fn take_operation(&self) -> WarmCounts {
        std::mem::take(&mut self.state.lock().operation)
    }

    /// What the warmer did since it was made.
    pub fn totals(&self) -> WarmCounts {
        self.state.lock().totals
    }

    /// Counts the evictions `f` makes as the policy's.
    fn counted<R>(
        &self,
        st: &mut WarmerState,
        f: impl FnOnce(&mut dyn WarmUpPolicy, &BufferCache) -> R,
    ) -> R {
        let before = self.cache.stats().evictions;
        let r = f(&mut *st.policy, &self.cache);
        let n = self.cache.stats().evictions - before;
        st.operation.policy_evictions += n;
        st.totals.policy_evictions += n;
        r
    }

    fn begin<K: WarmKey>(
        &self,
        st: &mut WarmerState,
        kind: Background,
        inputs: &[RunExtents<K>],
        keys: Option<KeyRange<u64>>,
    ) -> Result<()> {
        if st.paused {
            return Ok(());
        }
        let inputs: Vec<RunBlocks> = inputs
            .iter()
            .map(|r| RunBlocks {
                run: r.id,
                level: r.level,
                blocks: r
                    .blocks
                    .iter()
                    .map(|b| BlockInfo {
                        page: b.page,
                        first_key: b.keys.min.warm_key(),
                        last_key: b.keys.max.warm_key(),
                    })
                    .collect(),
            })
            .collect();
        let start = BackgroundStart {
            kind,
            now: st.now,
            inputs: &inputs,
            keys,
            blocks_to_merge: inputs.iter().map(|r| r.blocks.len() as u64).sum(),
        };
        st.current = Some(kind);
        st.operation.operations += 1;
        st.totals.operations += 1;
        self.counted(st, |p, cache| p.begin(&start, cache))
    }

    fn end(&self, st: &mut WarmerState, ok: bool) {
        if st.current.take().is_some() {
            let now = st.now;
            st.policy.end(now, ok);
        }
    }
}

impl<K: WarmKey> LifecycleObserver<K> for CacheWarmer {
    fn on_event(&self, event: &LifecycleEvent<K>) -> Result<()> {
        let mut st = self.state.lock();
        match event {
            LifecycleEvent::FlushStarted { keys, .. } => {
                let keys = keys.as_ref().map(warm_range);
                self.begin::<K>(&mut st, Background::Flush, &[], keys)
            }
            LifecycleEvent::CompactionStarted {
                kind: CompactionKind::Merge,
                inputs,
                ..
            } => {
                let ranges: Vec<KeyRange<u64>> = inputs
                    .iter()
                    .filter_map(|r| r.keys.as_ref())
                    .map(warm_range)
                    .collect();
                let keys = KeyRange::cover(&ranges);
                self.begin(&mut st, Background::Compaction, inputs, keys)
            }
            LifecycleEvent::CompactionStarted { .. } => Ok(()),
            LifecycleEvent::FlushFinished { .. }
            | LifecycleEvent::CompactionFinished {
                kind: CompactionKind::Merge,
                ..
            } => {
                self.end(&mut st, true);
                Ok(())
            }
            // A move or a drop began nothing (see above), so it ends nothing: not the merge a
            // store may still have in progress on its clock.
            LifecycleEvent::CompactionFinished { .. } => Ok(()),
            LifecycleEvent::Aborted { .. } => {
                self.end(&mut st, false);
                Ok(())
            }
        }
    }

    fn on_block(&self, block: &WrittenBlock<'_, K>) -> Result<()> {
        self.offer(block.page, block.keys.as_ref(), BlockBytes::InHand(block.bytes))
    }
}

/// Where the bytes of a block offered to the policy are.
enum BlockBytes<'a> {
    /// In the writer's hands (the block is being written).
    InHand(&'a [u8]),
    /// On the device only: a block written earlier and told to the policy later on the virtual
    /// clock; read back uncounted if the policy admits it ([`crate::storage::Device::read_page_uncounted`]).
    Written,
}

impl CacheWarmer {
    /// Offers output block `page` (with its keys when it holds keys of its own) to the policy and
    /// admits it into the cache if the policy says so.
    fn offer<K: WarmKey>(
        &self,
        page: PageId,
        keys: Option<&KeyRange<K>>,
        bytes: BlockBytes<'_>,
    ) -> Result<()> {
        let mut st = self.state.lock();
        if st.current.is_none() {
            return Ok(());
        }
        match keys {
            Some(keys) => {
                st.operation.blocks_offered += 1;
                st.totals.blocks_offered += 1;
                let info = BlockInfo {
                    page,
                    first_key: keys.min.warm_key(),
                    last_key: keys.max.warm_key(),
                };
                let admit = self.counted(&mut st, |p, cache| p.admit(&info, cache));
                if admit && self.admit(page, bytes)? {
                    st.operation.blocks_admitted += 1;
                    st.totals.blocks_admitted += 1;
                }
            }
            None => {
                let admit = self.counted(&mut st, |p, cache| p.admit_unkeyed(page, cache));
                if admit && self.admit(page, bytes)? {
                    st.operation.other_admitted += 1;
                    st.totals.other_admitted += 1;
                }
            }
        }
        Ok(())
    }

    /// Admits `page` into the cache (not counted as a device read: the bytes were in hand).
    fn admit(&self, page: PageId, bytes: BlockBytes<'_>) -> Result<bool> {
        match bytes {
            BlockBytes::InHand(bytes) => self.cache.admit(page, bytes),
            BlockBytes::Written => {
                let mut buf = vec![0u8; self.cache.page_size()];
                self.cache.device().read_page_uncounted(page, &mut buf)?;
                self.cache.admit(page, &buf)
            }
        }
    }

    /// Output block `page` of the operation told last, written earlier and told now (a timed
    /// merge's block, held for the virtual clock): offered to the policy as
    /// [`LifecycleObserver::on_block`] offers a block being written, its bytes read back from the
    /// device, uncounted, only if the policy admits it.
    pub(crate) fn on_written_block(&self, page: PageId, keys: Option<&KeyRange<u64>>) -> Result<()> {
        self.offer(page, keys, BlockBytes::Written)
    }
}

/// The warm-up policies by name: the switch the Leaper experiments compare.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WarmUpKind {
    /// No warm-up: new blocks enter the cache only when read (plain LRU).
    #[default]
    Lru,
    /// X-Engine's incremental warm-up: an output block that overlaps an input block cached when
    /// the operation began is admitted, and the old blocks it replaces are evicted.
    IncrementalWarmup,
    /// RocksDB's `prepopulate_block_cache = kFlushOnly`: every block a flush writes is admitted.
    PrepopulateFlush,
    /// Every block written by a flush or a compaction is admitted.
    PrepopulateAll,
    /// Leaper's learned prefetcher (`crate::leaper`).
    Leaper,
}

impl WarmUpKind {
    /// Every policy.
    pub const ALL: [WarmUpKind; 5] = [
        WarmUpKind::Lru,
        WarmUpKind::IncrementalWarmup,
        WarmUpKind::PrepopulateFlush,
        WarmUpKind::PrepopulateAll,
        WarmUpKind::Leaper,
    ];

    /// The policy's name in configs and result files.
    pub fn name(self) -> &'static str {
        match self {
            WarmUpKind::Lru => "lru",
            WarmUpKind::IncrementalWarmup => "incremental-warmup",
            WarmUpKind::PrepopulateFlush => "prepopulate-flush",
            WarmUpKind::PrepopulateAll => "prepopulate-all",
            WarmUpKind::Leaper => "leaper",
        }
    }
}

impl fmt::Display for WarmUpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for WarmUpKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        WarmUpKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = WarmUpKind::ALL.iter().map(|k| k.name()).collect();
                Error::Config(format!(
                    "unknown warm-up policy {s:?} (expected one of {})",
                    names.join(", ")
                ))
            })
    }
}
