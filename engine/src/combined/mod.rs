//! The four papers' mechanisms composed (the `combined` experiment): moving objects whose records
//! live in a record cluster (OEP 7's paginated or single-page layout,
//! `docs/papers/oep7.md#the-proposal-in-brief`), found through the LSM R-tree secondary index on
//! location (the LSM RUM-tree paper's strategies, `docs/papers/rum.md#the-paper-in-brief`), with
//! index and record pages sharing one buffer cache whose warm-up policy is a switch: plain LRU,
//! prepopulating every page a flush or merge writes (RocksDB's `prepopulate_block_cache`), or
//! Leaper's learned prefetcher (`docs/papers/leaper.md#the-paper-in-brief`) applied to the R-tree's
//! components.
//!
//! - A record holds the object's id, a version, its location and a payload. Its record id is
//!   issued once, when the object first appears, and never changes (both layouts update a record
//!   in place, leaving a link when it no longer fits), so the index's object id leads to the
//!   record id through an in-memory table, as an OrientDB index entry holds the RID itself.
//! - A location update rewrites the record in the cluster and updates the index as its strategy
//!   does (flushes and merges happen inside the stream).
//! - A range query asks the index (each strategy validates its candidates its own way), then
//!   fetches the results' records in one batch sorted by page ([`RecordCluster::fetch_batch`]).
//!   The cache's counters are read between the two steps, so each query's pages split into index
//!   pages and record pages, each into hits and misses.
//!
//! # Leaper on R-tree components
//!
//! Leaper predicts hot *key ranges* and admits the blocks of a new run that overlap them. An LSM
//! R-tree component is bulk-loaded in Hilbert order, so each leaf holds a contiguous interval of
//! Hilbert keys: the leaves are key ranges in Hilbert space, and that is the key space given to
//! Leaper here. Accesses are fed as Hilbert keys: a query reports each result's key as a read, an
//! update its new location's key as a write. A query box, though, covers many disjoint Hilbert
//! intervals and reads every leaf whose bounding box meets it, not only the leaves holding its
//! results; internal nodes cover whole subtrees and the antimatter B+-tree of Eager is keyed by
//! object id. Those pages are not Leaper's to choose: they are admitted whenever a warm-up policy
//! is on (as prepopulation does), and only leaves are admitted by the model's prediction.
//! The record cluster has no flushes or merges: its pages are updated in place through the cache
//! and never invalidated, so a warm-up policy has nothing to do there.
//!
//! The policy is driven by the same [`CacheWarmer`] as the key-value store's, subscribed to the
//! index's lifecycle: it is told when a flush or merge begins (with the input components' leaves
//! and their keys, so Leaper's phase 1 may evict cached input leaves it predicts cold), and of each
//! page of the new component as the bulk loader writes it, bytes in hand, so an admission costs no
//! device read.

use crate::cache::{BufferCache, CacheStats};
use crate::cluster::{self, ClusterOptions, Layout, Lookup, RecordCluster, Rid};
use crate::geom::{HilbertCurve, Point, Rect};
use crate::kvstore::{Access, CacheWarmer, NoWarmUp, PrepopulateAll, WarmCounts, WarmUpPolicy};
use crate::leaper::{AccessLog, AccessRecord, LeaperPolicy, LeaperStats, StatsHandle};
use crate::spatial::{LsmRTree, SpatialConfig};
use crate::storage::IoStats;
use crate::{Error, Result};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Bytes of a record's fixed part: object id, version, x, y.
pub const RECORD_HEADER: usize = 32;

/// One object's record as the cluster stores it.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectRecord {
    /// The object's id.
    pub oid: u64,
    /// 1 when the object first appears, + 1 per update.
    pub version: u64,
    /// The object's location at this version.
    pub at: Point,
    /// Payload bytes (the rest of the object's attributes), a function of oid and version.
    pub payload: Vec<u8>,
}

impl ObjectRecord {
    /// The record of `oid` at `version`, located `at`, padded to `bytes` (at least [`RECORD_HEADER`]).
    pub fn new(oid: u64, version: u64, at: Point, bytes: usize) -> Self {
        let n = bytes.saturating_sub(RECORD_HEADER);
        let seed = oid.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ version;
        let payload = (0..n).map(|i| (seed >> ((i % 8) * 8)) as u8 ^ i as u8).collect();
        ObjectRecord {
            oid,
            version,
            at,
            payload,
        }
    }

    /// The record's bytes: oid, version, x and y (little-endian), then the payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(RECORD_HEADER + self.payload.len());
        out.extend_from_slice(&self.oid.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.at.x.to_le_bytes());
        out.extend_from_slice(&self.at.y.to_le_bytes());
        out.extend_from_slice(&self.payload);
        out
    }

    /// Decodes a record; a record shorter than its fixed part is [`Error::Corrupt`].
    pub fn decode(b: &[u8]) -> Result<Self> {
        if b.len() < RECORD_HEADER {
            return Err(Error::Corrupt {
                page: 0,
                reason: format!(
                    "an object record of {} bytes, shorter than its {RECORD_HEADER}-byte header",
                    b.len()
                ),
            });
        }
        let u = |i: usize| crate::bytes::u64_le(b, i);
        Ok(ObjectRecord {
            oid: u(0),
            version: u(8),
            at: Point::new(f64::from_bits(u(16)), f64::from_bits(u(24))),
            payload: b[RECORD_HEADER..].to_vec(),
        })
    }
}

/// Which pages of a new index component the cache admits as the component is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CachePolicy {
    /// None: new components' pages enter the cache on their first (missed) read; plain LRU.
    Lru,
    /// Every page a flush or merge writes (RocksDB's `prepopulate_block_cache`).
    Prepopulate,
    /// Leaper's prediction for leaves, every internal and antimatter page (see the module docs).
    Leaper,
}

impl CachePolicy {
    /// Every policy.
    pub const ALL: [CachePolicy; 3] = [CachePolicy::Lru, CachePolicy::Prepopulate, CachePolicy::Leaper];

    /// The policy's name in configs and result files.
    pub fn name(self) -> &'static str {
        match self {
            CachePolicy::Lru => "lru",
            CachePolicy::Prepopulate => "prepopulate",
            CachePolicy::Leaper => "leaper",
        }
    }
}

impl fmt::Display for CachePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CachePolicy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        CachePolicy::ALL
            .into_iter()
            .find(|p| p.name() == s.trim())
            .ok_or_else(|| {
                Error::Config(format!(
                    "unknown cache policy {s:?}: expected lru, prepopulate or leaper"
                ))
            })
    }
}

/// The warm-up in force: a [`CachePolicy`] with, for Leaper, its trained prefetcher.
pub enum WarmUp {
    /// See [`CachePolicy::Lru`].
    Lru,
    /// See [`CachePolicy::Prepopulate`].
    Prepopulate,
    /// See [`CachePolicy::Leaper`]; the trained prefetcher that decides.
    Leaper(Box<LeaperPolicy>),
}

impl WarmUp {
    /// The policy this warm-up carries out.
    pub fn policy(&self) -> CachePolicy {
        match self {
            WarmUp::Lru => CachePolicy::Lru,
            WarmUp::Prepopulate => CachePolicy::Prepopulate,
            WarmUp::Leaper(_) => CachePolicy::Leaper,
        }
    }
}

/// What the warm-up did since the store was opened: leaves are the blocks with keys of their own
/// ([`WarmCounts::blocks_offered`]), internal and antimatter pages the others.
pub type WarmStats = WarmCounts;

/// What a query read, from the cache's counters: index pages (the R-tree's, and the key indexes'
/// a strategy validates with) and record pages (the cluster's data and position-map pages).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueryPages {
    /// Index pages found in the cache.
    pub index_hits: u64,
    /// Index pages read from the device.
    pub index_misses: u64,
    /// Record pages found in the cache.
    pub record_hits: u64,
    /// Record pages read from the device.
    pub record_misses: u64,
}

impl QueryPages {
    /// Index pages accessed, hits and misses.
    pub fn index(&self) -> u64 {
        self.index_hits + self.index_misses
    }
    /// Record pages accessed, hits and misses.
    pub fn records(&self) -> u64 {
        self.record_hits + self.record_misses
    }
    /// Every page accessed.
    pub fn total(&self) -> u64 {
        self.index() + self.records()
    }
    /// Pages read from the device, index and records.
    pub fn misses(&self) -> u64 {
        self.index_misses + self.record_misses
    }
    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &QueryPages) {
        self.index_hits += o.index_hits;
        self.index_misses += o.index_misses;
        self.record_hits += o.record_hits;
        self.record_misses += o.record_misses;
    }
}

/// A query's answer: the records of the objects in the box, and what it cost.
#[derive(Clone, Debug, Default)]
pub struct Answer {
    /// Sorted by object id.
    pub records: Vec<ObjectRecord>,
    /// Entries the R-trees produced before validation.
    pub candidates: u64,
    /// Probes made to validate the candidates (see [`QueryOutcome`](crate::spatial::QueryOutcome)).
    pub validation_lookups: u64,
    /// The query's page accesses, index and records.
    pub pages: QueryPages,
    /// The cluster's page accesses for the fetch (its own count; equals `pages.records()`).
    pub cluster_page_reads: u64,
}

/// Moving objects: records in a cluster, a secondary LSM R-tree on location, one shared cache.
pub struct CombinedStore {
    /// The secondary LSM R-tree on location.
    pub index: LsmRTree,
    /// The records, by object.
    pub cluster: Box<dyn RecordCluster>,
    cache: Arc<BufferCache>,
    curve: HilbertCurve,
    warmer: Arc<CacheWarmer>,
    policy: CachePolicy,
    /// Where Leaper publishes its counters, when Leaper is the policy.
    leaper: Option<StatsHandle>,
    now: f64,
    /// Per object: its record id, current location and version.
    objects: FxHashMap<u64, (Rid, Point, u64)>,
    record_bytes: usize,
    /// The access log kept while logging is on (Hilbert keys, virtual time).
    log: Option<AccessLog>,
}

impl CombinedStore {
    /// An empty store: the index of `cfg` and a cluster of `layout` on `cache`, records of
    /// `record_bytes` bytes, warm-up `warm`.
    pub fn new(
        cfg: SpatialConfig,
        layout: Layout,
        cache: Arc<BufferCache>,
        record_bytes: usize,
        warm: WarmUp,
    ) -> Result<Self> {
        if record_bytes < RECORD_HEADER {
            return Err(Error::Config(format!(
                "record_bytes must be at least {RECORD_HEADER} (object id, version, location), got {record_bytes}"
            )));
        }
        let curve = HilbertCurve::new(cfg.extent);
        let mut index = LsmRTree::new(cfg, cache.clone())?;
        let cluster = cluster::open(layout, cache.clone(), ClusterOptions::default())?;
        let warmer = Arc::new(CacheWarmer::new(cache.clone(), Box::new(NoWarmUp)));
        index.subscribe(warmer.clone());
        let mut store = CombinedStore {
            index,
            cluster,
            cache,
            curve,
            warmer,
            policy: CachePolicy::Lru,
            leaper: None,
            now: 0.0,
            objects: FxHashMap::default(),
            record_bytes,
            log: None,
        };
        store.set_warm_up(warm);
        Ok(store)
    }

    /// The cache the index and the cluster share.
    pub fn cache(&self) -> &Arc<BufferCache> {
        &self.cache
    }

    /// The Hilbert key of a point (the key space Leaper sees).
    pub fn key(&self, p: Point) -> u64 {
        self.curve.key(p)
    }

    /// Replaces the warm-up policy (the run trains Leaper on a first part of the stream).
    pub fn set_warm_up(&mut self, warm: WarmUp) {
        self.policy = warm.policy();
        let policy: Box<dyn WarmUpPolicy> = match warm {
            WarmUp::Lru => Box::new(NoWarmUp),
            WarmUp::Prepopulate => Box::new(PrepopulateAll),
            WarmUp::Leaper(p) => {
                let (published, handle) = p.published();
                self.leaper = Some(handle);
                Box::new(published)
            }
        };
        if self.policy != CachePolicy::Leaper {
            self.leaper = None;
        }
        self.warmer.set_policy(policy);
    }

    /// The warm-up policy in force.
    pub fn policy(&self) -> CachePolicy {
        self.policy
    }

    /// The virtual time, in seconds, Leaper's collector and models see.
    pub fn set_now(&mut self, now: f64) {
        self.now = now;
        self.warmer.set_now(now);
    }

    /// What the warm-up did so far.
    pub fn warm_stats(&self) -> WarmStats {
        self.warmer.totals()
    }

    /// Leaper's counters, when Leaper is the policy.
    pub fn leaper_stats(&self) -> Option<LeaperStats> {
        self.leaper.as_ref().map(|h| *h.lock())
    }

    /// Starts keeping the access log (Hilbert keys) that trains Leaper.
    pub fn start_log(&mut self) {
        self.log = Some(AccessLog::new());
    }

    /// The access log so far, ending the logging.
    pub fn take_log(&mut self) -> AccessLog {
        self.log.take().unwrap_or_default()
    }

    fn access(&mut self, key: u64, access: Access) {
        self.warmer.on_access(key, key, access);
        if let Some(log) = &mut self.log {
            log.push(AccessRecord {
                time: self.now,
                lo: key,
                hi: key,
                access,
            });
        }
    }

    /// Objects stored.
    pub fn objects(&self) -> usize {
        self.objects.len()
    }

    /// The current location and version of `oid`.
    pub fn location(&self, oid: u64) -> Option<(Point, u64)> {
        self.objects.get(&oid).map(|&(_, p, v)| (p, v))
    }

    /// Moves `oid` to `to`: its first location inserts its record and index entry; a later one
    /// rewrites the record in place and updates the index by its strategy.
    pub fn update(&mut self, oid: u64, to: Point) -> Result<()> {
        match self.objects.get(&oid).copied() {
            None => {
                let rid = self
                    .cluster
                    .insert(&ObjectRecord::new(oid, 1, to, self.record_bytes).encode())?;
                self.index.insert(oid, to)?;
                self.objects.insert(oid, (rid, to, 1));
            }
            Some((rid, from, version)) => {
                let record = ObjectRecord::new(oid, version + 1, to, self.record_bytes).encode();
                match self.cluster.update(rid, &record)? {
                    Lookup::Found(()) => {}
                    other => {
                        return Err(Error::Config(format!(
                            "object {oid}'s record {rid:?} could not be updated: {other:?}"
                        )))
                    }
                }
                self.index.update(oid, Some(from), to)?;
                self.objects.insert(oid, (rid, to, version + 1));
            }
        }
        self.access(self.curve.key(to), Access::Write);
        Ok(())
    }

    /// The records of the objects whose current location lies in `rect` (closed): the index's
    /// answer (validated by its strategy), then one batch fetch of their records sorted by page.
    pub fn query(&mut self, rect: &Rect) -> Result<Answer> {
        let c0 = self.cache.stats();
        let out = self.index.query(rect)?;
        let c1 = self.cache.stats();
        let mut hits: Vec<(Rid, u64)> = Vec::with_capacity(out.results.len());
        for e in &out.results {
            let &(rid, _, _) = self.objects.get(&e.oid).ok_or_else(|| {
                Error::Config(format!(
                    "the index answered object {}, which has no record",
                    e.oid
                ))
            })?;
            hits.push((rid, e.oid));
        }
        hits.sort_unstable();
        let rids: Vec<Rid> = hits.iter().map(|h| h.0).collect();
        let s0 = self.cluster.stats();
        let fetched = self.cluster.fetch_batch(&rids)?;
        let cluster_page_reads = self.cluster.stats().since(&s0).page_reads;
        let c2 = self.cache.stats();
        let mut records = Vec::with_capacity(fetched.len());
        for ((rid, oid), got) in hits.iter().zip(fetched) {
            let bytes = got.found().ok_or_else(|| {
                Error::Config(format!(
                    "object {oid}'s record {rid:?} is missing from the cluster"
                ))
            })?;
            let rec = ObjectRecord::decode(&bytes)?;
            if rec.oid != *oid {
                return Err(Error::Corrupt {
                    page: 0,
                    reason: format!(
                        "record {rid:?} holds object {} where object {oid} was expected",
                        rec.oid
                    ),
                });
            }
            records.push(rec);
        }
        for r in &records {
            self.access(self.curve.key(r.at), Access::Read);
        }
        records.sort_unstable_by_key(|r| r.oid);
        let (i, f) = (c1.since(&c0), c2.since(&c1));
        Ok(Answer {
            records,
            candidates: out.candidates,
            validation_lookups: out.validation_lookups,
            pages: QueryPages {
                index_hits: i.hits,
                index_misses: i.misses,
                record_hits: f.hits,
                record_misses: f.misses,
            },
            cluster_page_reads,
        })
    }

    /// The shared cache's counters.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// The device's counters (index and records).
    pub fn io(&self) -> IoStats {
        self.cache.device().stats()
    }
}

#[cfg(test)]
mod tests;
