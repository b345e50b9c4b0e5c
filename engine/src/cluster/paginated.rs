//! OrientDB's paginated cluster, as `OPaginatedClusterV2` and `OClusterPositionMapV2` do it
//! (orientechnologies/orientdb, core/.../storage/cluster/).
//!
//! - **Position map** (`.cpm`): page 0 is an entry point holding the number of buckets; bucket
//!   pages follow, each a 40-byte header (28-byte durable-page header, next-page pointer, size)
//!   and 13-byte entries (status byte, 8-byte data-page index, 4-byte slot:
//!   `OClusterPositionMapBucket`), `(page_size - 40) / 13` of them: 5,038 per 64 KiB page.
//!   Position `p` lives in bucket `1 + p / entries_per_page`. A new record takes the next entry
//!   of the last bucket (reading and writing the entry point and that bucket); a delete marks its
//!   entry removed, so positions are never reused.
//! - **Data pages** (`.pcl`, [`super::page`] with 8-byte slots): a record is serialised as a
//!   stream (record type byte, 4-byte content size, content) and stored as one or more chunks;
//!   each chunk entry carries OrientDB's 12 bytes of entry header (entry size, slot index, record
//!   version) and, after its part of the stream, a first-chunk flag and an 8-byte pointer
//!   (`page << 16 | slot`) to the next chunk. Chunks are written tail first, each into a page the
//!   free-space map says has room (a new page otherwise), so the map points at the head chunk,
//!   which holds the start of the stream (`serializeRecord`).
//! - **Fetch** reads the bucket page, then the head chunk's page (and further chunks' pages).
//! - **Update** (`updateRecord`): deletes every chunk of the old record, then writes the new
//!   stream tail first into the same pages, in reverse chain order, as much as each still holds;
//!   whatever does not fit goes, as further head-side chunks, into pages the free-space map finds.
//!   The map entry is repointed when the head chunk's place changed. So a record that grew out of
//!   its page ends up as a chain of two or more chunks (head elsewhere, tail in the old page), and
//!   a fetch of it reads the map page plus two data pages.
//! - **Delete** (`deleteRecord`): removes every chunk and marks the map entry removed.
//!
//! The free-space map is kept in memory and not counted ([`super::fsm`]).

use super::page::{get_u32, get_u64, set_u32, set_u64, SlotFormat, Slotted};
use super::{ClusterOptions, ClusterStats, File, Files, Layout, Lookup, RecordCluster, Rid, Space};
use crate::cache::{BufferCache, PageRef};
use crate::storage::PageId;
use crate::{Error, Result};
use std::sync::Arc;

/// Bytes of a position-map bucket header (`OClusterPositionMapBucket.POSITIONS_OFFSET`).
pub const BUCKET_HEADER: usize = 40;
/// Bytes of one position-map entry: status, page index, slot.
pub const MAP_ENTRY: usize = 13;
const SIZE_AT: usize = 36;
const COUNT_AT: usize = 28;

const NOT_EXISTENT: u8 = 0;
const REMOVED: u8 = 1;
const FILLED: u8 = 2;

/// Bytes a chunk adds to its part of the stream besides the page's 4-byte length prefix: slot
/// index and record version (the rest of OrientDB's 12-byte entry header), first-chunk flag and
/// next-chunk pointer.
pub const CHUNK_OVERHEAD: usize = 8 + 1 + 8;
/// Record type byte and content size at the start of the stream.
pub const STREAM_HEADER: usize = 5;
/// A page whose room is at most this is skipped (`MIN_ENTRY_SIZE` over the entry header).
const MIN_ROOM: usize = CHUNK_OVERHEAD;
const NONE: u64 = u64::MAX;

/// Position-map entries per bucket page.
pub fn entries_per_map_page(page_size: usize) -> usize {
    (page_size - BUCKET_HEADER) / MAP_ENTRY
}

fn pointer(page: usize, slot: u32) -> u64 {
    (page as u64) << 16 | u64::from(slot)
}

fn unpoint(p: u64) -> (usize, u32) {
    ((p >> 16) as usize, (p & 0xFFFF) as u32)
}

/// OrientDB's paginated cluster (see the module documentation).
pub struct Paginated {
    files: Files,
    sp: Slotted,
    options: ClusterOptions,
    per_bucket: usize,
    live: u64,
}

impl Paginated {
    /// An empty paginated cluster on `cache`'s device, with its entry-point map page; pages below
    /// 512 bytes are refused.
    pub fn new(cache: Arc<BufferCache>, options: ClusterOptions) -> Result<Self> {
        let sp = Slotted::new(SlotFormat::PAGINATED);
        let ps = cache.page_size();
        if ps < 512 {
            return Err(Error::Config(format!(
                "cluster page size {ps} is below 512 bytes"
            )));
        }
        let mut files = Files::new(cache, sp);
        files.new_page(File::Map);
        files.commit()?;
        Ok(Paginated {
            files,
            sp,
            options,
            per_bucket: entries_per_map_page(ps),
            live: 0,
        })
    }

    fn entry_at(&self, index: usize) -> usize {
        BUCKET_HEADER + index * MAP_ENTRY
    }

    /// Status, page and slot of a position, reading its bucket within the current operation.
    fn map_get(&mut self, position: u64, for_write: bool) -> Result<(u8, usize, u32)> {
        let bucket = 1 + (position / self.per_bucket as u64) as usize;
        if bucket >= self.files.map.len() {
            return Ok((NOT_EXISTENT, 0, 0));
        }
        let index = (position % self.per_bucket as u64) as usize;
        let at = self.entry_at(index);
        let read = |buf: &[u8]| {
            if index >= get_u32(buf, SIZE_AT) as usize {
                (NOT_EXISTENT, 0, 0)
            } else {
                (buf[at], get_u64(buf, at + 1) as usize, get_u32(buf, at + 9))
            }
        };
        Ok(if for_write {
            read(self.files.get(File::Map, bucket)?)
        } else {
            read(&self.files.read(File::Map, bucket)?)
        })
    }

    fn map_set(&mut self, position: u64, status: u8, page: usize, slot: u32) -> Result<()> {
        let bucket = 1 + (position / self.per_bucket as u64) as usize;
        let at = self.entry_at((position % self.per_bucket as u64) as usize);
        let buf = self.files.get_mut(File::Map, bucket)?;
        buf[at] = status;
        set_u64(buf, at + 1, page as u64);
        set_u32(buf, at + 9, slot);
        Ok(())
    }

    /// Appends a map entry (OrientDB's `OClusterPositionMapV2.add`) and returns its position.
    fn map_add(&mut self, page: usize, slot: u32) -> Result<u64> {
        let count = get_u32(self.files.get(File::Map, 0)?, COUNT_AT) as usize;
        let full =
            count == 0 || get_u32(self.files.get(File::Map, count)?, SIZE_AT) as usize >= self.per_bucket;
        let bucket = if full {
            let b = self.files.new_page(File::Map);
            set_u32(self.files.get_mut(File::Map, 0)?, COUNT_AT, b as u32);
            b
        } else {
            count
        };
        let (id, per_bucket) = (self.files.map[bucket], self.per_bucket);
        let buf = self.files.get_mut(File::Map, bucket)?;
        let index = get_u32(buf, SIZE_AT) as usize;
        if index >= per_bucket {
            return Err(Error::Corrupt {
                page: id,
                reason: format!(
                    "paginated cluster: map bucket holds {index} entries, at most {per_bucket} fit"
                ),
            });
        }
        set_u32(buf, SIZE_AT, index as u32 + 1);
        let position = ((bucket - 1) * self.per_bucket + index) as u64;
        self.map_set(position, FILLED, page, slot)?;
        Ok(position)
    }

    fn stream_of(record: &[u8]) -> Vec<u8> {
        let mut s = Vec::with_capacity(record.len() + STREAM_HEADER);
        s.push(0x64); // record type 'd' (document)
        s.extend_from_slice(&(record.len() as u32).to_le_bytes());
        s.extend_from_slice(record);
        s
    }

    /// Writes `stream` tail first, first into `reuse` (in the given order), then into pages with
    /// room. Returns the head chunk's (page, slot) and the number of chunks.
    fn write_stream(&mut self, stream: &[u8], reuse: &[usize]) -> Result<((usize, u32), usize)> {
        let max_empty = self.sp.max_entry_in_empty(self.files.page_size());
        let mut end = stream.len();
        let mut next = NONE;
        let mut head = (0, 0);
        let mut chunks = 0;
        let mut reuse = reuse.iter().copied();
        while end > 0 {
            let page = match reuse.next() {
                Some(p) => p,
                None => self
                    .files
                    .page_with_room((end + CHUNK_OVERHEAD).min(max_empty), None),
            };
            let room = self.files.room_in(page)?;
            if room <= MIN_ROOM {
                continue;
            }
            let part = end.min(room - CHUNK_OVERHEAD);
            let start = end - part;
            let mut entry = Vec::with_capacity(part + CHUNK_OVERHEAD);
            entry.extend_from_slice(&[0u8; 8]);
            entry.extend_from_slice(&stream[start..end]);
            entry.push(u8::from(start == 0));
            entry.extend_from_slice(&next.to_le_bytes());
            let (slot, _) = self.files.put_entry(page, &entry, false)?;
            next = pointer(page, slot);
            head = (page, slot);
            end = start;
            chunks += 1;
        }
        Ok((head, chunks))
    }

    /// Reads a record's chunks from its head, through the cache (read-only operations).
    fn read_chain(&mut self, page: usize, slot: u32, first: Option<PageRef>) -> Result<Vec<u8>> {
        let mut stream = Vec::new();
        let (mut page, mut slot) = (page, slot);
        let mut held = first;
        // A chain visits each chunk once; a corrupt pointer back into it is refused, not followed.
        let mut seen = std::collections::HashSet::new();
        loop {
            if !seen.insert((page, slot)) {
                return Err(Error::Corrupt {
                    page: self.files.data[page],
                    reason: format!("paginated cluster: chunk chain loops back to slot {slot}"),
                });
            }
            let buf = match held.take() {
                Some(b) => b,
                None => self.files.read(File::Data, page)?,
            };
            let e = self.chunk(&buf, page, slot)?;
            stream.extend_from_slice(&e[8..e.len() - 9]);
            let next = get_u64(e, e.len() - 8);
            if next == NONE {
                break;
            }
            (page, slot) = unpoint(next);
        }
        decode_stream(&stream).ok_or_else(|| Error::Corrupt {
            page: self.files.data[page],
            reason: "paginated cluster: record stream shorter than its size".into(),
        })
    }

    /// Removes a record's chunks; returns the pages of the chain in chain order.
    fn remove_chain(&mut self, page: usize, slot: u32) -> Result<Vec<usize>> {
        let (mut page, mut slot) = (page, slot);
        let mut pages = Vec::new();
        loop {
            self.files.get(File::Data, page)?; // refuses a page index past the file
            let data_page = self.files.data[page];
            let sp = self.sp;
            let buf = self.files.get_mut(File::Data, page)?;
            // Removing empties the slot, so a chain that loops back finds it empty here.
            Self::chunk_of(sp, buf, data_page, slot)?;
            let e = sp.remove(buf, slot);
            pages.push(page);
            let next = get_u64(&e, e.len() - 8);
            if next == NONE {
                return Ok(pages);
            }
            (page, slot) = unpoint(next);
        }
    }

    /// The chunk in `slot` of data page `page` (a checked page), refused as corrupt if the slot
    /// is empty or shorter than a chunk's framing.
    fn chunk<'a>(&self, buf: &'a [u8], page: usize, slot: u32) -> Result<&'a [u8]> {
        Self::chunk_of(self.sp, buf, self.files.data[page], slot)
    }

    fn chunk_of(sp: Slotted, buf: &[u8], id: PageId, slot: u32) -> Result<&[u8]> {
        match sp.entry(buf, slot) {
            Some(e) if e.len() >= CHUNK_OVERHEAD => Ok(e),
            Some(e) => Err(Error::Corrupt {
                page: id,
                reason: format!(
                    "paginated cluster: chunk in slot {slot} has {} bytes, less than its framing",
                    e.len()
                ),
            }),
            None => Err(Error::Corrupt {
                page: id,
                reason: format!("paginated cluster: chunk slot {slot} is empty"),
            }),
        }
    }

    fn insert_one(&mut self, record: &[u8]) -> Result<Rid> {
        let stream = Self::stream_of(record);
        let ((page, slot), _) = self.write_stream(&stream, &[])?;
        let position = self.map_add(page, slot)?;
        self.live += 1;
        Ok(Rid {
            cluster: self.options.cluster_id,
            position,
            delversion: 0,
        })
    }
}

fn decode_stream(stream: &[u8]) -> Option<Vec<u8>> {
    let len = u32::from_le_bytes(stream.get(1..5)?.try_into().ok()?) as usize;
    stream.get(5..5 + len).map(|c| c.to_vec())
}

/// The operations, run by [`RecordCluster`]'s fail-stop wrapper (see [`super::fail_stop`]).
impl Paginated {
    fn do_insert(&mut self, record: &[u8]) -> Result<Rid> {
        let rid = self.insert_one(record)?;
        self.files.commit()?;
        Ok(rid)
    }

    fn do_insert_batch(&mut self, records: &[Vec<u8>]) -> Result<Vec<Rid>> {
        let rids = records
            .iter()
            .map(|r| self.insert_one(r))
            .collect::<Result<Vec<_>>>()?;
        self.files.commit()?;
        Ok(rids)
    }

    fn do_fetch(&mut self, rid: Rid) -> Result<Lookup<Vec<u8>>> {
        self.files.stats.fetches += 1;
        if rid.cluster != self.options.cluster_id {
            return Ok(Lookup::Missing);
        }
        let (status, page, slot) = self.map_get(rid.position, false)?;
        match status {
            FILLED => Ok(Lookup::Found(self.read_chain(page, slot, None)?)),
            REMOVED => Ok(Lookup::Deleted),
            _ => Ok(Lookup::Missing),
        }
    }

    fn do_fetch_batch(&mut self, rids: &[Rid]) -> Result<Vec<Lookup<Vec<u8>>>> {
        let mut out: Vec<Lookup<Vec<u8>>> = vec![Lookup::Missing; rids.len()];
        // Map pages in order, each once.
        let mut order: Vec<usize> = (0..rids.len()).collect();
        order.sort_by_key(|&i| rids[i].position);
        let mut located: Vec<(usize, u32, usize)> = Vec::new();
        let mut current: Option<(usize, PageRef)> = None;
        for i in order {
            self.files.stats.fetches += 1;
            let rid = rids[i];
            if rid.cluster != self.options.cluster_id {
                continue;
            }
            let bucket = 1 + (rid.position / self.per_bucket as u64) as usize;
            if bucket >= self.files.map.len() {
                continue;
            }
            let buf: &[u8] = &self.files.read_reusing(File::Map, bucket, &mut current)?;
            let index = (rid.position % self.per_bucket as u64) as usize;
            if index >= get_u32(buf, SIZE_AT) as usize {
                continue;
            }
            let at = self.entry_at(index);
            match buf[at] {
                FILLED => located.push((get_u64(buf, at + 1) as usize, get_u32(buf, at + 9), i)),
                REMOVED => out[i] = Lookup::Deleted,
                _ => {}
            }
        }
        // Then data pages in order, each once (further chunks of chained records as they come).
        located.sort_unstable();
        let mut current: Option<(usize, PageRef)> = None;
        for (page, slot, i) in located {
            let buf = self.files.read_reusing(File::Data, page, &mut current)?;
            out[i] = Lookup::Found(self.read_chain(page, slot, Some(buf))?);
        }
        Ok(out)
    }

    fn do_update(&mut self, rid: Rid, record: &[u8]) -> Result<Lookup<()>> {
        if rid.cluster != self.options.cluster_id {
            return Ok(Lookup::Missing);
        }
        let (status, page, slot) = self.map_get(rid.position, true)?;
        match status {
            FILLED => {}
            REMOVED => {
                self.files.abandon();
                return Ok(Lookup::Deleted);
            }
            _ => {
                self.files.abandon();
                return Ok(Lookup::Missing);
            }
        }
        let old = self.remove_chain(page, slot)?;
        let reuse: Vec<usize> = old.iter().rev().copied().collect();
        let (head, chunks) = self.write_stream(&Self::stream_of(record), &reuse)?;
        if head != (page, slot) {
            self.map_set(rid.position, FILLED, head.0, head.1)?;
        }
        if head.0 != page || chunks > old.len() {
            self.files.stats.moves += 1;
        }
        self.files.commit()?;
        Ok(Lookup::Found(()))
    }

    fn do_delete(&mut self, rid: Rid) -> Result<Lookup<()>> {
        if rid.cluster != self.options.cluster_id {
            return Ok(Lookup::Missing);
        }
        let (status, page, slot) = self.map_get(rid.position, true)?;
        match status {
            FILLED => {}
            REMOVED => {
                self.files.abandon();
                return Ok(Lookup::Deleted);
            }
            _ => {
                self.files.abandon();
                return Ok(Lookup::Missing);
            }
        }
        self.remove_chain(page, slot)?;
        self.map_set(rid.position, REMOVED, page, slot)?;
        self.files.commit()?;
        self.live -= 1;
        Ok(Lookup::Found(()))
    }

    fn do_set_cache(&mut self, cache: Arc<BufferCache>) -> Result<()> {
        self.files.set_cache(cache)
    }

    fn do_space(&self) -> Space {
        Space {
            live_records: self.live,
            ..self.files.space()
        }
    }
}

super::fail_stop!(Paginated, Layout::Paginated);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_64k_map_page_holds_orientdbs_5038_entries() {
        assert_eq!(entries_per_map_page(64 * 1024), 5038);
    }

    #[test]
    fn stream_round_trips() {
        let s = Paginated::stream_of(b"hello");
        assert_eq!(s.len(), 5 + STREAM_HEADER);
        assert_eq!(decode_stream(&s).unwrap(), b"hello");
        let _ = ClusterStats::default();
    }
}
