//! TsFile-like runs: a flushed memtable's points in key order, packed into fixed-size pages on the
//! shared device, with each page's key range kept in memory (TsFile's page statistics) so a read
//! fetches only the pages that can hold what it looks for.
//!
//! Page layout: a little-endian `u16` point count, then per point the series (`u32`), the time
//! (`u64`), the value (`i64`) and the sequence number (`u64`), 28 bytes a point.

use std::sync::Arc;

use super::{Key, RunKind, Seq, SeriesId, Timestamp, Value};
use crate::storage::{Device, PageId};
use crate::{Error, Result};

const HEADER: usize = 2;
const POINT: usize = 4 + 8 + 8 + 8;

/// One point as stored.
pub(crate) type Stored = (Key, Value, Seq);

/// What a point read on disk found: the newest version, the versions seen, the pages read.
pub(crate) struct Found {
    pub newest: Option<(Value, Seq)>,
    pub versions: u64,
    pub pages: u64,
}

/// One file.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub id: u64,
    pub kind: RunKind,
    pub first_page: PageId,
    /// Smallest and largest key of every page.
    pub pages: Vec<(Key, Key)>,
    pub min: Key,
    pub max: Key,
    pub points: u64,
    pub max_seq: Seq,
}

impl Run {
    /// Indexes of the pages whose key ranges meet `[lo, hi]`.
    fn pages_meeting(&self, lo: Key, hi: Key) -> std::ops::Range<usize> {
        if hi < self.min || lo > self.max {
            return 0..0;
        }
        // Pages are sorted and disjoint: the first whose max >= lo, up to the last whose min <= hi.
        let start = self.pages.partition_point(|p| p.1 < lo);
        let end = self.pages.partition_point(|p| p.0 <= hi);
        start..end.max(start)
    }
}

/// The files of one store on one device.
pub(crate) struct Disk {
    device: Arc<dyn Device>,
    per_page: usize,
    pub runs: Vec<Run>,
    next_id: u64,
    buf: Vec<u8>,
}

impl Disk {
    pub fn new(device: Arc<dyn Device>) -> Result<Disk> {
        let page = device.page_size();
        if page < HEADER + POINT {
            return Err(Error::Config(format!(
                "page size {page} cannot hold one time-series point ({} bytes)",
                HEADER + POINT
            )));
        }
        let per_page = ((page - HEADER) / POINT).min(u16::MAX as usize);
        Ok(Disk {
            buf: vec![0; page],
            device,
            per_page,
            runs: Vec::new(),
            next_id: 0,
        })
    }

    pub fn device(&self) -> &Arc<dyn Device> {
        &self.device
    }

    /// Writes `points` (strictly ascending keys) as a new run; returns the pages written. A failed
    /// page write or sync frees the run's pages and installs nothing.
    pub fn write_run(&mut self, kind: RunKind, points: &[Stored]) -> Result<u64> {
        if points.is_empty() {
            return Ok(0);
        }
        debug_assert!(points.windows(2).all(|w| w[0].0 < w[1].0));
        let count = points.len().div_ceil(self.per_page) as u64;
        let first = self.device.allocate(count);
        let pages = match self.write_pages(first, points) {
            Ok(pages) => pages,
            Err(e) => {
                // The run is not installed: its extent goes back to the device.
                self.device.free(first, count);
                return Err(e);
            }
        };
        self.runs.push(Run {
            id: self.next_id,
            kind,
            first_page: first,
            pages,
            min: points[0].0,
            max: points[points.len() - 1].0,
            points: points.len() as u64,
            max_seq: points.iter().map(|p| p.2).max().unwrap_or(0),
        });
        self.next_id += 1;
        Ok(count)
    }

    /// Writes `points` as pages from `first` on and syncs; returns each page's key range.
    fn write_pages(&mut self, first: PageId, points: &[Stored]) -> Result<Vec<(Key, Key)>> {
        let mut pages = Vec::with_capacity(points.len().div_ceil(self.per_page));
        let mut page = vec![0u8; self.device.page_size()];
        for (i, chunk) in points.chunks(self.per_page).enumerate() {
            page.fill(0);
            page[..HEADER].copy_from_slice(&(chunk.len() as u16).to_le_bytes());
            for (j, &((s, t), v, q)) in chunk.iter().enumerate() {
                let at = HEADER + j * POINT;
                page[at..at + 4].copy_from_slice(&s.to_le_bytes());
                page[at + 4..at + 12].copy_from_slice(&t.to_le_bytes());
                page[at + 12..at + 20].copy_from_slice(&v.to_le_bytes());
                page[at + 20..at + 28].copy_from_slice(&q.to_le_bytes());
            }
            self.device.write_page(first + i as u64, &page)?;
            pages.push((chunk[0].0, chunk[chunk.len() - 1].0));
        }
        self.device.sync()?;
        Ok(pages)
    }

    /// Reads page `index` of `run` and appends its points to `out`.
    fn read_page(&mut self, run: usize, index: usize, out: &mut Vec<Stored>) -> Result<()> {
        let id = self.runs[run].first_page + index as u64;
        self.device.read_page(id, &mut self.buf)?;
        let n = u16::from_le_bytes([self.buf[0], self.buf[1]]) as usize;
        if n == 0 || n > self.per_page {
            return Err(Error::Corrupt {
                page: id,
                reason: format!("time-series page holds {n} points"),
            });
        }
        let b = &self.buf;
        let u64_at = |at: usize| crate::bytes::u64_le(b, at);
        let start = out.len();
        for j in 0..n {
            let at = HEADER + j * POINT;
            let s = crate::bytes::u32_le(b, at);
            out.push(((s, u64_at(at + 4)), u64_at(at + 12) as i64, u64_at(at + 20)));
        }
        // The keys must ascend strictly from the page's first to its last key as written.
        let (first, last) = self.runs[run].pages[index];
        let points = &out[start..];
        if points[0].0 != first || points[n - 1].0 != last || points.windows(2).any(|w| w[0].0 >= w[1].0) {
            out.truncate(start);
            return Err(Error::Corrupt {
                page: id,
                reason: format!(
                    "time-series page keys are not the ascending {first:?}..={last:?} written there"
                ),
            });
        }
        Ok(())
    }

    /// Every point of run `run`, in key order; returns the pages read.
    pub fn read_run(&mut self, run: usize, out: &mut Vec<Stored>) -> Result<u64> {
        let n = self.runs[run].pages.len();
        for i in 0..n {
            self.read_page(run, i, out)?;
        }
        Ok(n as u64)
    }

    /// The newest version of `key` on disk, the versions found and the pages read. Runs are
    /// visited newest first and the search stops once no older run can hold a newer version.
    pub fn get(&mut self, key: Key) -> Result<Found> {
        let mut order: Vec<usize> = (0..self.runs.len())
            .filter(|&i| self.runs[i].min <= key && key <= self.runs[i].max)
            .collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.runs[i].max_seq));
        let (mut best, mut found, mut reads) = (None::<(Value, Seq)>, 0u64, 0u64);
        let mut scratch = Vec::new();
        for i in order {
            if best.is_some_and(|b| b.1 > self.runs[i].max_seq) {
                break;
            }
            for p in self.runs[i].pages_meeting(key, key) {
                scratch.clear();
                self.read_page(i, p, &mut scratch)?;
                reads += 1;
                if let Ok(at) = scratch.binary_search_by(|x| x.0.cmp(&key)) {
                    let (_, v, s) = scratch[at];
                    found += 1;
                    if best.is_none_or(|b| s > b.1) {
                        best = Some((v, s));
                    }
                }
            }
        }
        Ok(Found {
            newest: best,
            versions: found,
            pages: reads,
        })
    }

    /// Every version on disk of `series` in `[from, to]` (unordered across runs); returns the
    /// pages read.
    pub fn range(
        &mut self,
        series: SeriesId,
        from: Timestamp,
        to: Timestamp,
        out: &mut Vec<Stored>,
    ) -> Result<u64> {
        let (lo, hi) = ((series, from), (series, to));
        let mut reads = 0;
        let mut scratch = Vec::new();
        for i in 0..self.runs.len() {
            for p in self.runs[i].pages_meeting(lo, hi) {
                scratch.clear();
                self.read_page(i, p, &mut scratch)?;
                reads += 1;
                out.extend(scratch.iter().filter(|x| lo <= x.0 && x.0 <= hi));
            }
        }
        Ok(reads)
    }

    /// Drops run `index` and frees its pages.
    pub fn remove_run(&mut self, index: usize) -> Run {
        let run = self.runs.remove(index);
        self.device.free(run.first_page, run.pages.len() as u64);
        run
    }

    pub fn count(&self, kind: RunKind) -> usize {
        self.runs.iter().filter(|r| r.kind == kind).count()
    }
}
