//! The store: a memory level over a set of runs, with counted reads and the optional disk
//! compaction.

use std::sync::Arc;

use super::disk::{Disk, Stored};
use super::level::Level;
use super::{Key, RunKind, SeriesConfig, SeriesId, SeriesStats, Timestamp, Value};
use crate::storage::{Device, IoStats};
use crate::Result;

/// A time-series store (see the [module docs](super)).
pub struct SeriesStore {
    config: SeriesConfig,
    level: Level,
    disk: Disk,
    /// Sealed memtables' points whose flush failed, oldest first, kept readable and retried by the
    /// next flush (a failed flush loses nothing).
    pending: Vec<(RunKind, Vec<Stored>)>,
    seq: u64,
    stats: SeriesStats,
}

impl SeriesStore {
    /// A store over `device` (which it may share with others; its page reads and writes are
    /// what [`SeriesStore::io`] reports).
    pub fn new(config: SeriesConfig, device: Arc<dyn Device>) -> Result<SeriesStore> {
        config.validate()?;
        Ok(SeriesStore {
            level: Level::new(&config),
            disk: Disk::new(device)?,
            pending: Vec::new(),
            config,
            seq: 0,
            stats: SeriesStats::default(),
        })
    }

    /// The configuration the store was built from.
    pub fn config(&self) -> &SeriesConfig {
        &self.config
    }

    /// Points a full normal and a full delay memtable hold.
    pub fn capacities(&self) -> (u64, u64) {
        self.level.capacities()
    }

    /// Inserts one point; the newest insert of a `(series, ts)` wins. The point is stored even
    /// when the call fails: an error is a flush (a sealed memtable's, or an earlier failed one
    /// retried) or a disk compaction that failed, and the memtable stays in memory for the next.
    pub fn insert(&mut self, series: SeriesId, ts: Timestamp, value: Value) -> Result<()> {
        self.seq += 1;
        let r = self.level.insert((series, ts), value, self.seq);
        self.stats.inserts += 1;
        self.stats.delayed_inserts += r.delayed as u64;
        self.stats.replaced_in_memory += r.replaced as u64;
        let bytes = self.level.mem_points * self.config.point_bytes;
        self.stats.memory_peak_bytes = self.stats.memory_peak_bytes.max(bytes);
        self.drain_flushes()
    }

    /// Writes the memtables waiting for a flush (a failed flush first), oldest first. On a failure
    /// the memtable that failed and those after it stay pending, readable, for the next flush.
    fn drain_flushes(&mut self) -> Result<()> {
        if self.level.to_flush.is_empty() && self.pending.is_empty() {
            return Ok(());
        }
        let mut queue = std::mem::take(&mut self.pending);
        queue.extend(
            std::mem::take(&mut self.level.to_flush)
                .into_iter()
                .map(|m| (m.kind, m.into_sorted())),
        );
        let mut queue = queue.into_iter();
        while let Some((kind, points)) = queue.next() {
            let n = points.len() as u64;
            match self.disk.write_run(kind, &points) {
                Ok(pages) => {
                    if pages > 0 {
                        self.stats.flushes += 1;
                        self.stats.flushed_points += n;
                        self.stats.flush_pages_written += pages;
                    }
                }
                Err(e) => {
                    self.pending.push((kind, points));
                    self.pending.extend(queue);
                    return Err(e);
                }
            }
        }
        if let Some(c) = &self.config.compaction {
            if self.disk.count(RunKind::Delay) >= c.delay_files_trigger {
                self.compact()?;
            }
        }
        Ok(())
    }

    /// The newest value of `(series, ts)`. Memory first (it holds at most one version of a point,
    /// newer than any on disk), then the runs.
    pub fn get(&mut self, series: SeriesId, ts: Timestamp) -> Result<Option<Value>> {
        self.stats.point_lookups += 1;
        if let Some((v, _)) = self.level.get((series, ts)) {
            return Ok(Some(v));
        }
        let key = (series, ts);
        let waiting = self
            .pending
            .iter()
            .filter_map(|(_, points)| points.binary_search_by(|p| p.0.cmp(&key)).ok().map(|i| points[i]))
            .max_by_key(|p| p.2);
        let found = self.disk.get(key)?;
        self.note_disk(found.pages, found.versions);
        Ok(match (found.newest, waiting) {
            (Some(d), Some(w)) => Some(if w.2 > d.1 { w.1 } else { d.0 }),
            (d, w) => d.map(|d| d.0).or(w.map(|w| w.1)),
        })
    }

    fn note_disk(&mut self, pages: u64, points: u64) {
        if pages > 0 {
            self.stats.disk_reads += 1;
        }
        self.stats.lookup_page_reads += pages;
        self.stats.disk_read_points += points;
    }

    /// The newest version of every point of `series` with time in `[from, to]`, ascending. The
    /// disk is skipped when memory already holds every timestamp of the range (the authors'
    /// `results.size() != end - start + 1` test; exact for integer timestamps).
    pub fn range(
        &mut self,
        series: SeriesId,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<(Timestamp, Value)>> {
        self.stats.range_lookups += 1;
        if from > to {
            return Ok(Vec::new());
        }
        let mut found: Vec<Stored> = Vec::new();
        self.level.range(series, from, to, &mut found);
        let (lo, hi) = ((series, from), (series, to));
        for (_, points) in &self.pending {
            let start = points.partition_point(|p| p.0 < lo);
            found.extend(points[start..].iter().take_while(|p| p.0 <= hi));
        }
        let span = (to as u128) - (from as u128) + 1;
        // Memory holds one version of a point; with pending flushes a point may also be there.
        let distinct = if self.pending.is_empty() {
            found.len()
        } else {
            let mut keys: Vec<Key> = found.iter().map(|p| p.0).collect();
            keys.sort_unstable();
            keys.dedup();
            keys.len()
        };
        if (distinct as u128) < span {
            let before = found.len();
            let reads = self.disk.range(series, from, to, &mut found)?;
            self.note_disk(reads, (found.len() - before) as u64);
        }
        // Newest version per timestamp: sort by key then by sequence, keep the last of each key.
        found.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.2.cmp(&b.2)));
        let mut out: Vec<(Timestamp, Value)> = Vec::with_capacity(found.len());
        let mut last: Option<Key> = None;
        for (k, v, _) in found {
            if let Some(newest) = out.last_mut().filter(|_| last == Some(k)) {
                *newest = (k.1, v);
            } else {
                out.push((k.1, v));
                last = Some(k);
            }
        }
        Ok(out)
    }

    /// Flushes every memtable, active ones included.
    pub fn flush_all(&mut self) -> Result<()> {
        self.level.flush_all();
        self.drain_flushes()
    }

    /// Disk compaction: merges every delay (unsequence) file into the normal (sequence) files
    /// whose time ranges its points fall into (a point before every normal file goes to the
    /// first, one in a gap to the file before the gap), rewriting only the normal files that
    /// receive points. With no normal file the delay files become one normal file. Newest version
    /// wins on equal keys. Pages read and written and points rewritten are counted.
    pub fn compact(&mut self) -> Result<()> {
        let delay_ids: Vec<u64> = self
            .disk
            .runs
            .iter()
            .filter(|r| r.kind == RunKind::Delay)
            .map(|r| r.id)
            .collect();
        if delay_ids.is_empty() {
            return Ok(());
        }
        self.stats.disk_compactions += 1;
        let mut delayed: Vec<Stored> = Vec::new();
        for i in 0..self.disk.runs.len() {
            if self.disk.runs[i].kind == RunKind::Delay {
                self.stats.compaction_pages_read += self.disk.read_run(i, &mut delayed)?;
            }
        }
        delayed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.2.cmp(&b.2)));
        dedup_newest(&mut delayed);
        let mut normals: Vec<(Key, u64)> = self
            .disk
            .runs
            .iter()
            .filter(|r| r.kind == RunKind::Normal)
            .map(|r| (r.min, r.id))
            .collect();
        normals.sort_unstable();
        let mut groups: Vec<(Option<u64>, Vec<Stored>)> = Vec::new();
        if normals.is_empty() {
            groups.push((None, delayed));
        } else {
            let mut per: Vec<Vec<Stored>> = vec![Vec::new(); normals.len()];
            for p in delayed {
                let j = normals.partition_point(|n| n.0 <= p.0).saturating_sub(1);
                per[j].push(p);
            }
            for (j, g) in per.into_iter().enumerate() {
                if !g.is_empty() {
                    groups.push((Some(normals[j].1), g));
                }
            }
        }
        for (id, group) in groups {
            let merged = match id {
                None => group,
                Some(id) => {
                    let i = self.position(id);
                    let mut old = Vec::new();
                    self.stats.compaction_pages_read += self.disk.read_run(i, &mut old)?;
                    merge_newest(old, group)
                }
            };
            self.stats.compaction_points_rewritten += merged.len() as u64;
            self.stats.compaction_pages_written += self.disk.write_run(RunKind::Normal, &merged)?;
            // Only once the merged file is written does the file it replaces go: a compaction
            // that fails part way leaves every point readable (a later one merges again, the
            // newest version still winning).
            if let Some(id) = id {
                let i = self.position(id);
                self.disk.remove_run(i);
            }
        }
        for id in delay_ids {
            let i = self.position(id);
            self.disk.remove_run(i);
        }
        Ok(())
    }

    #[allow(clippy::expect_used)] // callers pass the id of a run they just listed
    fn position(&self, id: u64) -> usize {
        self.disk
            .runs
            .iter()
            .position(|r| r.id == id)
            .expect("run listed a moment ago")
    }

    /// The store's counters since it was created, the memory level's compactions included.
    pub fn stats(&self) -> SeriesStats {
        let mut s = self.stats;
        s.memory_compactions = self.level.memory_compactions;
        s.memory_compaction_points = self.level.memory_compaction_points;
        s
    }

    /// The device's counters (page reads and writes of every store sharing it).
    pub fn io(&self) -> IoStats {
        self.disk.device().stats()
    }

    /// Live files: (normal or sequence, delay or unsequence).
    pub fn files(&self) -> (usize, usize) {
        (self.disk.count(RunKind::Normal), self.disk.count(RunKind::Delay))
    }

    /// Points stored in files (every version).
    pub fn disk_points(&self) -> u64 {
        self.disk.runs.iter().map(|r| r.points).sum()
    }

    /// Points currently held by memtables, with those whose flush failed and waits for a retry.
    pub fn memory_points(&self) -> u64 {
        self.level.mem_points + self.pending.iter().map(|(_, p)| p.len() as u64).sum::<u64>()
    }

    /// Pages of the store's files (every page it holds on its device).
    pub fn disk_pages(&self) -> u64 {
        self.disk.runs.iter().map(|r| r.pages.len() as u64).sum()
    }

    /// Memtables currently held, the active ones included.
    pub fn memtables(&self) -> usize {
        self.level.memtables()
    }
}

/// Keeps the last (newest) entry of each run of equal keys in a key-then-seq sorted vector.
fn dedup_newest(v: &mut Vec<Stored>) {
    let mut out: Vec<Stored> = Vec::with_capacity(v.len());
    for p in v.drain(..) {
        match out.last_mut() {
            Some(last) if last.0 == p.0 => *last = p,
            _ => out.push(p),
        }
    }
    *v = out;
}

/// Merges two key-sorted, key-unique vectors keeping the newer version of equal keys.
fn merge_newest(a: Vec<Stored>, b: Vec<Stored>) -> Vec<Stored> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(if a[i].2 >= b[j].2 { a[i] } else { b[j] });
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}
