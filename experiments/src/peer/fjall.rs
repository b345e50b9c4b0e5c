//! The fjall driver: load a key-value workload, replay a warm-up and a measured phase, and record
//! per-interval block-cache counters, throughput, latency and background operations.
//!
//! # Store set-up
//!
//! One fjall database in a fresh temporary directory, one keyspace, keys the big-endian bytes of
//! the record ids (so key order is id order and a scan `lo..=hi` is a key range). Knobs, from
//! fjall 3.1's builder and keyspace options:
//!
//! - block cache: `Database::builder(..).cache_size(cache_bytes)`;
//! - memtable: `KeyspaceCreateOptions::max_memtable_size(memtable_bytes)` (a write that takes the
//!   active memtable past it asks a worker to seal it and queue a flush); the database-wide write
//!   buffer cap (`max_write_buffer_size`) stays off, as fjall's default;
//! - 4 KiB data blocks (`data_block_size_policy`), no compression at any level (lsmlab stores
//!   plain blocks; the dependency is built without lz4);
//! - leveled compaction (`compaction::Leveled` with the run's table target size, level-0
//!   threshold and level ratio);
//! - `manual_journal_persist(true)`: the journal is still written, but writes do not flush it to
//!   the operating system one by one (durability is not under test);
//! - fjall's defaults otherwise: Bloom filters, index blocks of levels 0-1 and filter blocks of
//!   level 0 pinned in memory.
//!
//! One guard against a hang: while the active memtable is past its limit, every write asks
//! fjall's workers to seal it (a non-blocking send into their queue of 1,000 messages), and a
//! worker that seals one sends the flush into that same queue, blocking while it is full. If the
//! workers get no CPU for about 1,000 writes (a busy machine), the queue fills and every worker
//! and the writer wait on each other for good (fjall 3.1.13). The driver therefore seals the
//! memtable itself when [`SEAL_AFTER_WRITES`] writes in a row found it past its limit, before
//! the queue can fill; the workers' stale requests then find nothing to do. With workers that
//! keep up it never acts, and [`FjallTimeline`] counts the times it did (`driver_seals`).
//!
//! # Loading
//!
//! The initial records are inserted in key order through the normal write path. Because each
//! flushed table is disjoint from everything already in the tree and no intermediate level has
//! data, leveled compaction moves each one, unchanged, to the last level: the load ends as one
//! sorted run of tables of about the memtable's size in the deepest level (as lsmlab's
//! `bulk_load` fills the deepest levels). The driver then flushes the last memtable and waits
//! until no flush is queued and no compaction runs for 50 ms. fjall's bulk ingestion was not used:
//! it writes 64 MiB tables whatever the configured target size.
//!
//! # Seeing flushes and compactions
//!
//! fjall 3.1 has no event listener. Every [`FjallRun::probe_every`] ops (and at each interval's
//! end) the driver reads the tree's current version (table ids per level, and each table's
//! highest sequence number) and compares it with the previous probe:
//!
//! - a **flush** completed if the highest sequence number stored in any table grew (compactions
//!   only copy sequence numbers that tables already held; a flush brings newer ones);
//! - a **merge compaction** completed if a table id disappeared without moving (its blocks are
//!   now dead in the cache);
//! - a **trivial move** completed if a table id is found on another level (no block rewritten, no
//!   invalidation).
//!
//! At each probe, a flush is *running or queued* if the keyspace has a sealed memtable, and a
//! compaction is *running* if fjall's set of tables under compaction is not empty
//! (`Tree::is_compacting`). Limits: two flushes (or two merges) completing between the same two
//! probes count as one; a compaction that starts and ends between two probes is seen only by its
//! result; fjall's own `compactions_completed` counter is not used because it also counts the
//! compaction attempts that found nothing to do.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use fjall::compaction::Leveled;
use fjall::config::{BlockSizePolicy, CompressionPolicy};
use fjall::{AbstractTree, AnyTree, CompressionType, Database, Keyspace, KeyspaceCreateOptions};
use lsmlab_workloads::kv::{decode_value, KvOp, KvStream};

use super::{hit_ratio, FjallInterval, FjallRun, FjallSummary, FjallTimeline};
use crate::measure::LatencyRecorder;
use crate::progress::Progress;

/// Operations (or loaded records) between two progress reports of a phase; each report is
/// rate-limited by [`Progress::count`], so this only bounds how often the lock is taken.
const PROGRESS_EVERY: u64 = 1 << 12;

/// The workspace lock file: the versions this binary was built with.
const CARGO_LOCK: &str = include_str!("../../../Cargo.lock");

/// `fjall x.y.z (lsm-tree a.b.c)`: the fjall and lsm-tree versions this binary was built with,
/// read from the workspace lock file.
pub fn fjall_version() -> String {
    let version_of = |name: &str| {
        let header = format!("name = \"{name}\"\nversion = \"");
        CARGO_LOCK
            .find(&header)
            .and_then(|at| {
                let rest = &CARGO_LOCK[at + header.len()..];
                rest.find('"').map(|end| rest[..end].to_string())
            })
            .unwrap_or_else(|| "unknown".to_string())
    };
    format!(
        "fjall {} (lsm-tree {})",
        version_of("fjall"),
        version_of("lsm-tree")
    )
}

/// The keyspace holding the records.
const KEYSPACE: &str = "kv";
/// Levels of a fjall tree (fixed in 3.x).
const LEVELS: usize = 7;

fn key_bytes(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

/// Snapshot of the block counters of `lsm_tree::Metrics`.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    data_hits: u64,
    data_loads: u64,
    index_hits: u64,
    index_loads: u64,
}

impl Counters {
    fn read(keyspace: &Keyspace) -> Self {
        let m = keyspace.metrics();
        let data_hits = m.data_block_load_cached_count() as u64;
        let index_hits = m.index_block_load_cached_count() as u64;
        Counters {
            data_hits,
            data_loads: (m.data_block_load_count() as u64).saturating_sub(data_hits),
            index_hits,
            index_loads: (m.index_block_load_count() as u64).saturating_sub(index_hits),
        }
    }

    fn minus(self, earlier: Counters) -> Counters {
        Counters {
            data_hits: self.data_hits - earlier.data_hits,
            data_loads: self.data_loads - earlier.data_loads,
            index_hits: self.index_hits - earlier.index_hits,
            index_loads: self.index_loads - earlier.index_loads,
        }
    }
}

/// The background state seen at one probe.
struct TreeState {
    /// Table id -> level.
    tables: HashMap<u64, usize>,
    /// The highest sequence number held by any table.
    persisted_seqno: Option<u64>,
    per_level: [u64; LEVELS],
}

/// What changed between two probes, and what was running at the second.
#[derive(Default, Clone, Copy)]
struct Events {
    flushes: u64,
    merges: u64,
    moves: u64,
    retired_tables: u64,
    flush_active: bool,
    compaction_active: bool,
}

impl Events {
    fn add(&mut self, other: Events) {
        self.flushes += other.flushes;
        self.merges += other.merges;
        self.moves += other.moves;
        self.retired_tables += other.retired_tables;
        self.flush_active |= other.flush_active;
        self.compaction_active |= other.compaction_active;
    }
}

/// Whether fjall is compacting now: its set of tables under compaction is not empty.
fn is_compacting(keyspace: &Keyspace) -> anyhow::Result<bool> {
    match &keyspace.tree {
        AnyTree::Standard(tree) => Ok(tree.is_compacting()),
        AnyTree::Blob(_) => {
            bail!("fjall opened a key-value separated tree; the driver expects a standard one")
        }
    }
}

fn tree_state(keyspace: &Keyspace) -> anyhow::Result<TreeState> {
    let version = keyspace.tree.current_version();
    let mut tables = HashMap::new();
    let mut per_level = [0u64; LEVELS];
    let mut persisted_seqno = None;
    for (level, lvl) in version.iter_levels().enumerate() {
        for run in lvl.iter() {
            for table in run.iter() {
                tables.insert(table.id(), level);
                if let Some(slot) = per_level.get_mut(level) {
                    *slot += 1;
                }
                persisted_seqno = persisted_seqno.max(Some(table.get_highest_seqno()));
            }
        }
    }
    Ok(TreeState {
        tables,
        persisted_seqno,
        per_level,
    })
}

/// Probes the tree and returns the events since `prev`, replacing it.
fn probe(keyspace: &Keyspace, prev: &mut TreeState) -> anyhow::Result<Events> {
    // What runs now is read before the version, so a flush or merge that ends in between is
    // seen at least by its result.
    let flush_active = keyspace.sealed_memtable_count() > 0;
    let compaction_active = is_compacting(keyspace)?;
    let now = tree_state(keyspace)?;
    let mut events = Events {
        flush_active,
        compaction_active,
        ..Events::default()
    };
    if now.persisted_seqno > prev.persisted_seqno {
        events.flushes = 1;
    }
    let mut moved = false;
    for (id, level) in &prev.tables {
        match now.tables.get(id) {
            None => events.retired_tables += 1,
            Some(l) if l != level => moved = true,
            Some(_) => {}
        }
    }
    events.merges = u64::from(events.retired_tables > 0);
    events.moves = u64::from(moved);
    *prev = now;
    Ok(events)
}

/// Waits until no memtable is sealed and no compaction runs for 50 ms in a row (at most
/// `limit`).
fn settle(db: &Database, keyspace: &Keyspace, limit: Duration) -> anyhow::Result<()> {
    let start = Instant::now();
    let mut quiet_since = Instant::now();
    loop {
        let busy =
            keyspace.sealed_memtable_count() > 0 || db.outstanding_flushes() > 0 || is_compacting(keyspace)?;
        if busy {
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= Duration::from_millis(50) {
            return Ok(());
        }
        if start.elapsed() > limit {
            bail!("fjall's flushes and compactions did not settle within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Writes in a row that may find the active memtable past its limit before the driver seals it
/// (each asks fjall's workers once; their queue holds 1,000 messages).
const SEAL_AFTER_WRITES: u32 = 256;

/// Seals fjall's memtable when its workers lag (see the module documentation).
#[derive(Default)]
struct Sealer {
    /// Writes in a row that found the active memtable past its limit.
    over_limit: u32,
    /// Memtables the driver sealed.
    seals: u64,
}

impl Sealer {
    /// Called after each write.
    fn after_write(&mut self, keyspace: &Keyspace, limit: u64) -> anyhow::Result<()> {
        if keyspace.tree.active_memtable().size() <= limit {
            self.over_limit = 0;
            return Ok(());
        }
        self.over_limit += 1;
        if self.over_limit >= SEAL_AFTER_WRITES {
            self.over_limit = 0;
            if keyspace
                .rotate_memtable()
                .context("sealing fjall's memtable while its workers lag")?
            {
                self.seals += 1;
            }
        }
        Ok(())
    }
}

/// The last version written per key, and the number of keys, to check answers.
struct Oracle {
    versions: HashMap<u64, u64>,
    key_count: u64,
}

/// The op stream being replayed, with the answer checks' state.
struct Replay {
    stream: KvStream,
    oracle: Oracle,
    reads: u64,
    verified_reads: u64,
    sealer: Sealer,
}

impl Replay {
    /// Applies the next op; returns its latency (the fjall call alone).
    fn step(&mut self, keyspace: &Keyspace, spec: &FjallRun) -> anyhow::Result<Duration> {
        let op = self.stream.next().ok_or_else(|| anyhow!("the op stream ended"))?;
        let is_read = matches!(op.op, KvOp::Get(_) | KvOp::Scan { .. });
        let check = is_read && spec.verify_every > 0 && {
            self.reads += 1;
            self.reads.is_multiple_of(spec.verify_every)
        };
        let mut latency = Duration::ZERO;
        apply(
            keyspace,
            spec,
            op.op,
            op.write_version(),
            &mut self.oracle,
            check,
            &mut latency,
        )?;
        if op.op.is_write() {
            self.sealer.after_write(keyspace, spec.memtable_bytes)?;
        }
        self.verified_reads += u64::from(check);
        Ok(latency)
    }
}

fn apply(
    keyspace: &Keyspace,
    run: &FjallRun,
    op: KvOp,
    write_version: Option<u64>,
    oracle: &mut Oracle,
    check: bool,
    latency: &mut Duration,
) -> anyhow::Result<()> {
    match op {
        KvOp::Get(k) => {
            let t = Instant::now();
            let got = keyspace
                .get(key_bytes(k))
                .with_context(|| format!("fjall get of key {k}"))?;
            *latency = t.elapsed();
            if check {
                let value = got.ok_or_else(|| anyhow!("fjall found no value for existing key {k}"))?;
                let want = oracle.versions.get(&k).copied().unwrap_or(0);
                match decode_value(&value) {
                    Some((key, version)) if key == k && version == want => {}
                    other => bail!("fjall returned a wrong value for key {k}: decoded {other:?}, expected version {want}"),
                }
            }
        }
        KvOp::Scan { lo, hi } => {
            let t = Instant::now();
            let mut keys = Vec::with_capacity((hi - lo + 1) as usize);
            for item in keyspace.range(key_bytes(lo)..=key_bytes(hi)) {
                let key = item
                    .key()
                    .with_context(|| format!("fjall scan of keys {lo}..={hi}"))?;
                keys.push(key);
            }
            *latency = t.elapsed();
            if check {
                let expected = hi.min(oracle.key_count.saturating_sub(1)).saturating_sub(lo) + 1;
                let in_order = keys
                    .iter()
                    .enumerate()
                    .all(|(i, key)| key.as_ref() == key_bytes(lo + i as u64));
                if keys.len() as u64 != expected || !in_order {
                    bail!(
                        "fjall scan of keys {lo}..={hi} returned {} keys, expected {expected} consecutive ones",
                        keys.len()
                    );
                }
            }
        }
        KvOp::Update(k) | KvOp::Insert(k) => {
            let version = write_version.ok_or_else(|| anyhow!("a write op without a version"))?;
            let value = run.workload.value_for(k, version);
            let t = Instant::now();
            keyspace
                .insert(key_bytes(k), value)
                .with_context(|| format!("fjall insert of key {k}"))?;
            *latency = t.elapsed();
            oracle.versions.insert(k, version);
            if matches!(op, KvOp::Insert(_)) {
                oracle.key_count = oracle.key_count.max(k + 1);
            }
        }
    }
    Ok(())
}

/// Runs `spec` on a fresh fjall database in a temporary directory (removed afterwards); see the
/// module documentation for the set-up and [`super`] for what is measured. Each phase (the load,
/// the settling after it, the warm-up, the measured run) starts a progress step named
/// `label, <phase>` and counts its records or operations with a rate and an ETA, so that a long
/// paper-scale peer run shows how far it has got.
pub(crate) fn run_fjall(spec: &FjallRun, progress: &Progress, label: &str) -> anyhow::Result<FjallTimeline> {
    run_fjall_in(spec, &std::env::temp_dir(), progress, label)
}

/// [`run_fjall`] with the temporary directory created under `parent`.
pub(crate) fn run_fjall_in(
    spec: &FjallRun,
    parent: &std::path::Path,
    progress: &Progress,
    label: &str,
) -> anyhow::Result<FjallTimeline> {
    spec.validate()?;
    let dir = tempfile::Builder::new()
        .prefix("lsmlab-fjall-")
        .tempdir_in(parent)
        .with_context(|| {
            format!(
                "creating a temporary directory for fjall under {}",
                parent.display()
            )
        })?;
    let db = Database::builder(dir.path())
        .cache_size(spec.cache_bytes)
        .worker_threads(spec.worker_threads)
        .manual_journal_persist(true)
        .open()
        .with_context(|| format!("opening a fjall database in {}", dir.path().display()))?;
    let strategy = Leveled::default()
        .with_table_target_size(spec.table_target_bytes)
        .with_l0_threshold(spec.l0_threshold)
        .with_level_ratio_policy(vec![spec.level_ratio]);
    let keyspace = db
        .keyspace(KEYSPACE, || {
            KeyspaceCreateOptions::default()
                .max_memtable_size(spec.memtable_bytes)
                .data_block_size_policy(BlockSizePolicy::all(spec.block_bytes))
                .data_block_compression_policy(CompressionPolicy::all(CompressionType::None))
                .compaction_strategy(Arc::new(strategy))
                .manual_journal_persist(true)
        })
        .context("creating the fjall keyspace")?;
    let timeline = drive(spec, &db, &keyspace, progress, label);
    drop(keyspace);
    drop(db);
    let timeline = timeline?;
    dir.close().context("removing fjall's temporary directory")?;
    Ok(timeline)
}

fn drive(
    spec: &FjallRun,
    db: &Database,
    keyspace: &Keyspace,
    progress: &Progress,
    label: &str,
) -> anyhow::Result<FjallTimeline> {
    let settle_limit = Duration::from_secs(600);

    // Load. Each phase below is one of the `super::FJALL_PEER_STEPS` progress steps.
    progress.begin(format!("{label}, loading"));
    let load_start = Instant::now();
    let mut sealer = Sealer::default();
    let records = spec.workload.records;
    for (n, (k, value)) in spec.workload.initial_records().enumerate() {
        if (n as u64).is_multiple_of(PROGRESS_EVERY) {
            progress.count(n as u64, Some(records), "records");
        }
        keyspace
            .insert(key_bytes(k), value)
            .with_context(|| format!("fjall load of key {k}"))?;
        sealer.after_write(keyspace, spec.memtable_bytes)?;
    }
    progress.begin(format!(
        "{label}, waiting for the load's flushes and compactions to settle"
    ));
    keyspace
        .rotate_memtable_and_wait()
        .context("flushing fjall's last memtable after the load")?;
    settle(db, keyspace, settle_limit).context("after the load")?;
    let load_secs = load_start.elapsed().as_secs_f64();
    let disk_bytes_after_load = db.disk_space().context("reading fjall's disk space")?;
    let mut state = tree_state(keyspace)?;
    let levels_after_load = state.per_level.to_vec();

    let stream = spec
        .workload
        .stream(spec.seed)
        .map_err(|e| anyhow!("building the op stream: {e}"))?;
    let mut replay = Replay {
        stream,
        oracle: Oracle {
            versions: HashMap::new(),
            key_count: spec.workload.records,
        },
        reads: 0,
        verified_reads: 0,
        sealer,
    };

    // Warm-up.
    progress.begin(format!("{label}, warm-up"));
    let warmup_start = Instant::now();
    let mut warmup_events = Events::default();
    for n in 0..spec.warmup_ops {
        if n.is_multiple_of(PROGRESS_EVERY) {
            progress.count(n, Some(spec.warmup_ops), "operations");
        }
        replay.step(keyspace, spec)?;
        if (n + 1).is_multiple_of(spec.probe_every) {
            warmup_events.add(probe(keyspace, &mut state)?);
        }
    }
    warmup_events.add(probe(keyspace, &mut state)?);
    let warmup_secs = warmup_start.elapsed().as_secs_f64();

    // Measured phase.
    progress.begin(format!("{label}, measured run"));
    let mut intervals = Vec::with_capacity(spec.intervals() as usize);
    let mut all = LatencyRecorder::new();
    let measured_start = Instant::now();
    let first = Counters::read(keyspace);
    let mut done = 0u64;
    while done < spec.measured_ops {
        let ops = spec.interval_ops.min(spec.measured_ops - done);
        let mut lat = LatencyRecorder::new();
        let mut events = Events::default();
        let before = Counters::read(keyspace);
        let start = Instant::now();
        for n in 0..ops {
            if (done + n).is_multiple_of(PROGRESS_EVERY) {
                progress.count(done + n, Some(spec.measured_ops), "operations");
            }
            lat.record(replay.step(keyspace, spec)?);
            if (n + 1).is_multiple_of(spec.probe_every) && n + 1 < ops {
                events.add(probe(keyspace, &mut state)?);
            }
        }
        let wall = start.elapsed().as_secs_f64();
        let delta = Counters::read(keyspace).minus(before);
        events.add(probe(keyspace, &mut state)?);
        all.merge(&lat);
        intervals.push(FjallInterval {
            interval: intervals.len() as u64,
            ops,
            hit_ratio: hit_ratio(delta.data_hits, delta.data_loads),
            data_block_hits: delta.data_hits,
            data_block_loads: delta.data_loads,
            index_block_hits: delta.index_hits,
            index_block_loads: delta.index_loads,
            ops_per_s: if wall > 0.0 { ops as f64 / wall } else { 0.0 },
            p95_us: lat.quantile_us(0.95),
            flushes: events.flushes,
            compactions: events.merges,
            moves: events.moves,
            retired_tables: events.retired_tables,
            in_flush: events.flush_active || events.flushes > 0,
            in_compaction: events.compaction_active || events.merges > 0,
            tables: state.tables.len() as u64,
            l0_tables: state.per_level[0],
        });
        done += ops;
    }
    let measured_secs = measured_start.elapsed().as_secs_f64();
    let total = Counters::read(keyspace).minus(first);

    let sum = |pick: &dyn Fn(&FjallInterval) -> bool| {
        let (h, l) = intervals.iter().filter(|i| pick(i)).fold((0, 0), |(h, l), i| {
            (h + i.data_block_hits, l + i.data_block_loads)
        });
        hit_ratio(h, l)
    };
    let after_compaction = |i: &FjallInterval| {
        i.compactions > 0 || (i.interval > 0 && intervals[i.interval as usize - 1].compactions > 0)
    };
    let summary = FjallSummary {
        hit_ratio: hit_ratio(total.data_hits, total.data_loads),
        data_block_hits: total.data_hits,
        data_block_loads: total.data_loads,
        ops_per_s: spec.measured_ops as f64 / measured_secs.max(f64::MIN_POSITIVE),
        p95_us: all.quantile_us(0.95),
        p99_us: all.quantile_us(0.99),
        flushes: intervals.iter().map(|i| i.flushes).sum(),
        compactions: intervals.iter().map(|i| i.compactions).sum(),
        moves: intervals.iter().map(|i| i.moves).sum(),
        window_intervals: intervals.iter().filter(|i| i.in_window()).count() as u64,
        hit_ratio_in_windows: sum(&|i| i.in_window()),
        hit_ratio_outside: sum(&|i| !i.in_window()),
        hit_ratio_after_compaction: sum(&after_compaction),
    };
    Ok(FjallTimeline {
        engine: fjall_version(),
        run: spec.clone(),
        data_bytes: spec.data_bytes(),
        disk_bytes_after_load,
        levels_after_load,
        load_secs,
        warmup_secs,
        measured_secs,
        verified_reads: replay.verified_reads,
        driver_seals: replay.sealer.seals,
        warmup_flushes: warmup_events.flushes,
        warmup_compactions: warmup_events.merges,
        intervals,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsmlab_workloads::kv::KvWorkload;

    fn tiny(name: &str) -> FjallRun {
        let w = KvWorkload::parse(name).unwrap().with_records(20_000).unwrap();
        let mut run = FjallRun::with_fractions(w, 7, 0.3, 0.1, 10_000, 30_000, 1_000).unwrap();
        run.verify_every = 1;
        run
    }

    /// Counted behaviour on a tiny synthetic run: intervals, counter sums, flushes, answers.
    #[test]
    fn tiny_run_counts_are_consistent_and_every_read_is_right() {
        let spec = tiny("synthetic");
        let (progress, lines) = Progress::captured();
        let t = run_fjall(&spec, &progress, "synthetic: fjall peer").unwrap();

        // Each phase announced itself, in order.
        let printed = lines.text();
        let phases = ["loading", "waiting for the load's", "warm-up", "measured run"];
        let at: Vec<usize> = phases
            .iter()
            .map(|p| {
                printed
                    .find(&format!("synthetic: fjall peer, {p}"))
                    .unwrap_or_else(|| panic!("no {p:?} line in {printed:?}"))
            })
            .collect();
        assert!(at.is_sorted(), "{printed:?}");

        // The loaded run sits in the last level (each flushed table moved down unchanged).
        assert_eq!(t.levels_after_load.len(), LEVELS);
        assert!(
            t.levels_after_load[..LEVELS - 1].iter().all(|&n| n == 0),
            "{:?}",
            t.levels_after_load
        );
        assert!(t.levels_after_load[LEVELS - 1] >= 2, "{:?}", t.levels_after_load);

        // One interval per 1000 measured ops.
        assert_eq!(t.intervals.len() as u64, spec.intervals());
        assert_eq!(t.intervals.len(), 30);
        assert_eq!(t.intervals.iter().map(|i| i.ops).sum::<u64>(), spec.measured_ops);
        for (n, i) in t.intervals.iter().enumerate() {
            assert_eq!(i.interval, n as u64);
            assert_eq!(i.hit_ratio, hit_ratio(i.data_block_hits, i.data_block_loads));
            assert!(i.tables > 0);
        }

        // Interval counters add up to the phase totals, and the cache both hits and misses.
        let hits: u64 = t.intervals.iter().map(|i| i.data_block_hits).sum();
        let loads: u64 = t.intervals.iter().map(|i| i.data_block_loads).sum();
        assert_eq!(hits, t.summary.data_block_hits);
        assert_eq!(loads, t.summary.data_block_loads);
        assert!(hits > 0 && loads > 0, "hits {hits}, loads {loads}");
        let s = &t.summary;
        assert_eq!(s.hit_ratio, hit_ratio(hits, loads));
        assert_eq!(s.flushes, t.intervals.iter().map(|i| i.flushes).sum::<u64>());
        assert_eq!(
            s.compactions,
            t.intervals.iter().map(|i| i.compactions).sum::<u64>()
        );
        assert_eq!(
            s.window_intervals,
            t.intervals.iter().filter(|i| i.in_window()).count() as u64
        );
        // Every point read touches at least one data block unless the memtables answer it:
        // fewer block reads than gets would mean the counters miss accesses.
        let mut stream = spec.workload.stream(spec.seed).unwrap();
        let ops: Vec<KvOp> = stream
            .by_ref()
            .take((spec.warmup_ops + spec.measured_ops) as usize)
            .map(|o| o.op)
            .collect();
        let measured = &ops[spec.warmup_ops as usize..];
        let gets = measured.iter().filter(|o| matches!(o, KvOp::Get(_))).count() as u64;
        assert!(
            hits + loads >= gets / 2,
            "{} block reads for {gets} gets",
            hits + loads
        );

        // ~7500 writes of ~216 bytes against a ~416 KB memtable: several flushes in the
        // measured phase.
        assert!(s.flushes >= 1, "no flush seen: {s:?}");
        assert!(t.intervals.iter().any(|i| i.in_flush));

        // Every read (gets and scans, both phases) was checked against the last version written.
        let reads = ops
            .iter()
            .filter(|o| matches!(o, KvOp::Get(_) | KvOp::Scan { .. }))
            .count() as u64;
        assert_eq!(t.verified_reads, reads);
        assert!(t.engine.starts_with("fjall 3.1."), "{}", t.engine);
    }

    #[test]
    fn a_missing_parent_directory_is_named() {
        let spec = tiny("synthetic");
        let silent = Progress::silent();
        let err = run_fjall_in(
            &spec,
            std::path::Path::new("/nonexistent/lsmlab-peer"),
            &silent,
            "peer",
        )
        .unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("temporary directory") && msg.contains("/nonexistent/lsmlab-peer"),
            "{msg}"
        );
        let mut bad = spec;
        bad.worker_threads = 0;
        assert!(run_fjall(&bad, &silent, "peer")
            .unwrap_err()
            .to_string()
            .contains("worker thread"));
    }

    /// The release measurement: synthetic and e-commerce, 200k records of 200 B, cache 30% and
    /// memtable 10% of the data, 100k warm-up and 500k measured ops in intervals of 5000.
    /// `cargo test --release -p lsmlab --lib peer::fjall -- --ignored --nocapture`; writes the
    /// timelines as JSON under `target/peer-fjall/`.
    #[test]
    #[ignore]
    fn measure_leaper_workloads_on_fjall() {
        let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/peer-fjall");
        std::fs::create_dir_all(&out).unwrap();
        for name in ["synthetic", "e-commerce"] {
            let w = KvWorkload::parse(name).unwrap().with_records(200_000).unwrap();
            let spec = FjallRun::with_fractions(w, 42, 0.3, 0.1, 100_000, 500_000, 5_000).unwrap();
            let t = run_fjall(&spec, &Progress::new(false), name).unwrap();
            std::fs::write(
                out.join(format!("{name}.json")),
                serde_json::to_string_pretty(&t).unwrap(),
            )
            .unwrap();
            println!("== {name}: {}", t.engine);
            println!(
                "data {} B, cache {} B, memtable {} B, disk after load {} B, levels {:?}, load {:.1}s warm-up {:.1}s measured {:.1}s",
                t.data_bytes, spec.cache_bytes, spec.memtable_bytes, t.disk_bytes_after_load, t.levels_after_load,
                t.load_secs, t.warmup_secs, t.measured_secs
            );
            println!("summary {:?}", t.summary);
            println!("dips (0.02 below median) {:?}", t.dip_alignment(0.02));
            println!("dips (0.05 below median) {:?}", t.dip_alignment(0.05));
            println!("int  hit    loads   ops/s   p95us  fl cp mv ret win tables l0");
            for i in &t.intervals {
                println!(
                    "{:3} {:.4} {:6} {:8.0} {:6.1} {:2} {:2} {:2} {:3} {:3} {:6} {:2}",
                    i.interval,
                    i.hit_ratio.unwrap_or(f64::NAN),
                    i.data_block_loads,
                    i.ops_per_s,
                    i.p95_us,
                    i.flushes,
                    i.compactions,
                    i.moves,
                    i.retired_tables,
                    if i.in_window() { "W" } else { "." },
                    i.tables,
                    i.l0_tables
                );
            }
        }
    }

    /// With no worker to seal it (fjall's pool emptied), the memtable stays past its limit; the
    /// driver seals it after [`SEAL_AFTER_WRITES`] such writes, once, and not before.
    #[test]
    fn the_driver_seals_a_memtable_its_workers_leave_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path())
            .worker_threads_unchecked(0)
            .manual_journal_persist(true)
            .open()
            .unwrap();
        let limit = 4_096;
        let keyspace = db
            .keyspace(KEYSPACE, || {
                KeyspaceCreateOptions::default()
                    .max_memtable_size(limit)
                    .manual_journal_persist(true)
            })
            .unwrap();
        let mut sealer = Sealer::default();
        let mut over = 0u32;
        for k in 0..2_000u64 {
            keyspace.insert(key_bytes(k), vec![7u8; 100]).unwrap();
            let past = keyspace.tree.active_memtable().size() > limit;
            sealer.after_write(&keyspace, limit).unwrap();
            over = if past { over + 1 } else { 0 };
            if over == SEAL_AFTER_WRITES {
                assert_eq!(sealer.seals, 1, "sealed at write {k}");
                break;
            }
            assert_eq!(sealer.seals, 0, "sealed early, at write {k}");
        }
        assert_eq!(sealer.seals, 1);
        assert_eq!(keyspace.sealed_memtable_count(), 1);
        assert!(keyspace.tree.active_memtable().size() <= limit);
    }
}
