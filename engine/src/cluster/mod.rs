//! The record clusters of the OrientDB OEP 7 experiments
//! (`docs/papers/oep7.md#the-proposal-in-brief`): OrientDB's paginated cluster (position map + data
//! pages) and OEP 7's single-page cluster, on the engine's shared
//! [`Device`](crate::storage::Device) and [`BufferCache`].
//!
//! Both store records in slotted data pages (`page`) of a configurable size (OrientDB's 64 KiB by
//! default), find pages with room through the same free-space map (`fsm`), chain records larger
//! than a page, and read and write every page through the buffer cache, so that pages read per
//! operation (the primary measure) and device reads (cache misses) are counted the same way for
//! both. They differ in how a record id finds its record:
//!
//! - [`Layout::Paginated`] (`paginated`, OrientDB's `OPaginatedClusterV2` and
//!   `OClusterPositionMapV2`): the record id is a cluster position; a position-map file maps it to
//!   (data page, slot), so a fetch reads a map page and a data page. Positions are never reused.
//! - [`Layout::SinglePage`] (`single`, OEP 7): the record id names the data page, the slot and the
//!   slot's delversion; each data page embeds its own rid -> position map, so a fetch reads one
//!   page, or two when the record grew out of its page and left an external link behind. Deleted
//!   slots are reused with delversion + 1, and a record id with an older delversion is reported
//!   stale.

mod fsm;
pub(crate) mod page;
mod paginated;
mod single;

use crate::cache::{BufferCache, PageNote, PageRef};
use crate::storage::PageId;
use crate::{Error, Result};
use fsm::FreeSpaceMap;
pub use paginated::{entries_per_map_page, Paginated};
use serde::{Deserialize, Serialize};
pub use single::SinglePage;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// OrientDB's default page size (`storage.diskCache.pageSize` = 64 KiB).
pub const DEFAULT_CLUSTER_PAGE_SIZE: usize = 64 * 1024;

/// The two record layouts behind one switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// OrientDB's paginated cluster: position map + data pages.
    Paginated,
    /// OEP 7's single-page cluster: the rid -> position map embedded in each data page.
    SinglePage,
}

impl Layout {
    /// Both layouts.
    pub const ALL: [Layout; 2] = [Layout::Paginated, Layout::SinglePage];

    /// The name configurations and result rows use (`paginated`, `single-page`).
    pub fn name(self) -> &'static str {
        match self {
            Layout::Paginated => "paginated",
            Layout::SinglePage => "single-page",
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Layout {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Layout::ALL
            .into_iter()
            .find(|l| l.name() == s.trim())
            .ok_or_else(|| {
                Error::Config(format!(
                    "unknown cluster layout {s:?}: expected paginated or single-page"
                ))
            })
    }
}

/// A record id.
///
/// - paginated: `position` is the cluster position (OrientDB's `#cluster:position`), `delversion`
///   is always 0;
/// - single-page: `position` packs OEP 7's 6-byte page index and 2-byte slot
///   (`page << 16 | slot`) and `delversion` is the slot's delversion when the record was created.
///
/// Ordering by `position` orders single-page ids by page, which is what a batch fetch sorts by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Rid {
    /// The id of the cluster the record belongs to ([`ClusterOptions::cluster_id`]).
    pub cluster: u32,
    /// The record's position: see the layouts above.
    pub position: u64,
    /// Single-page: the slot's delversion when the record was created; paginated: 0.
    pub delversion: u64,
}

impl Rid {
    /// A single-page id.
    pub fn in_page(cluster: u32, page: u64, slot: u16, delversion: u64) -> Rid {
        Rid {
            cluster,
            position: page << 16 | u64::from(slot),
            delversion,
        }
    }

    /// The data page of a single-page id.
    pub fn page(&self) -> u64 {
        self.position >> 16
    }

    /// The slot of a single-page id.
    pub fn slot(&self) -> u16 {
        (self.position & 0xFFFF) as u16
    }
}

/// What looking a record id up found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup<T> {
    /// The record (or, for an update or delete, its success).
    Found(T),
    /// The record was deleted (paginated: the position is marked removed; single-page: the slot is
    /// empty and its delversion is still the id's).
    Deleted,
    /// Single-page only: the slot was reused since the id was issued (its delversion moved on).
    /// The caller learns the id is stale; it is never handed another record.
    Stale,
    /// The id never named a record of this cluster.
    Missing,
}

impl<T> Lookup<T> {
    /// The found value; `None` for every other answer.
    pub fn found(self) -> Option<T> {
        match self {
            Lookup::Found(t) => Some(t),
            _ => None,
        }
    }

    /// Whether the record was found.
    pub fn is_found(&self) -> bool {
        matches!(self, Lookup::Found(_))
    }

    /// The same status without the payload.
    pub fn status(&self) -> Lookup<()> {
        match self {
            Lookup::Found(_) => Lookup::Found(()),
            Lookup::Deleted => Lookup::Deleted,
            Lookup::Stale => Lookup::Stale,
            Lookup::Missing => Lookup::Missing,
        }
    }
}

/// Counters of a cluster since it was created. Page reads here are page *accesses* through the
/// cache (hits and misses alike); device reads are the cache's misses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterStats {
    /// Pages read through the cache (data and map pages), once per page per operation.
    pub page_reads: u64,
    /// Of those, position-map pages (paginated only).
    pub map_page_reads: u64,
    /// Pages written into the cache.
    pub page_writes: u64,
    /// Records fetched (found or not).
    pub fetches: u64,
    /// Records an update placed away from where they were (paginated: the head chunk moved or a
    /// chunk was added; single-page: the record went out to, or between, other pages).
    pub moves: u64,
    /// Fetches and updates that met a stale record id (single-page).
    pub stale: u64,
}

impl ClusterStats {
    /// `self - e`, for measuring one phase of a run.
    pub fn since(&self, e: &ClusterStats) -> ClusterStats {
        ClusterStats {
            page_reads: self.page_reads - e.page_reads,
            map_page_reads: self.map_page_reads - e.map_page_reads,
            page_writes: self.page_writes - e.page_writes,
            fetches: self.fetches - e.fetches,
            moves: self.moves - e.moves,
            stale: self.stale - e.stale,
        }
    }
}

/// The cluster's footprint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Space {
    /// Every page of the cluster's files (data pages + position-map pages).
    pub file_pages: u64,
    /// Data pages (records and, single-page, their in-page maps).
    pub data_pages: u64,
    /// Position-map pages, the entry-point page included (paginated only).
    pub map_pages: u64,
    /// Data pages holding at least one entry.
    pub data_pages_in_use: u64,
    /// Records inserted and not deleted.
    pub live_records: u64,
    /// Single-page: external links (records living outside their home page).
    pub external_links: u64,
}

/// A record cluster: the operations both layouts offer.
pub trait RecordCluster: Send {
    /// Which layout this cluster is.
    fn layout(&self) -> Layout;
    /// Stores a record and returns its id.
    fn insert(&mut self, record: &[u8]) -> Result<Rid>;
    /// Stores many records as one operation (a bulk load: each page is written to the cache once)
    /// and returns their ids in order; the same placement as inserting them one by one.
    fn insert_batch(&mut self, records: &[Vec<u8>]) -> Result<Vec<Rid>>;
    /// Reads one record by id.
    fn fetch(&mut self, rid: Rid) -> Result<Lookup<Vec<u8>>>;
    /// Reads many records, each page once: ids sorted by page (single-page) or by map page then
    /// data page (paginated). The answers come back in the order of `rids`.
    fn fetch_batch(&mut self, rids: &[Rid]) -> Result<Vec<Lookup<Vec<u8>>>>;
    /// Replaces a record (it may grow or shrink).
    fn update(&mut self, rid: Rid, record: &[u8]) -> Result<Lookup<()>>;
    /// Deletes a record (single-page: its slot may be reused, under a new delversion).
    fn delete(&mut self, rid: Rid) -> Result<Lookup<()>>;
    /// The cluster's counters since it was created.
    fn stats(&self) -> ClusterStats;
    /// The cluster's footprint now.
    fn space(&self) -> Space;
    /// Continues on another cache over the same device (the old one's dirty pages are written
    /// back first): experiments load with one cache and measure with a cache of another size.
    fn set_cache(&mut self, cache: Arc<BufferCache>) -> Result<()>;
    /// The cache the cluster reads and writes through.
    fn cache(&self) -> &Arc<BufferCache>;
    /// Device ids of every data page, in data-page order.
    fn data_page_ids(&self) -> &[PageId];
    /// Device ids of the position-map pages (empty for single-page).
    fn map_page_ids(&self) -> &[PageId];
}

/// Options shared by both layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterOptions {
    /// The id stored in every [`Rid`] the cluster issues; ids of another cluster are [`Lookup::Missing`].
    pub cluster_id: u32,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions { cluster_id: 9 }
    }
}

/// Opens an empty cluster of `layout` on `cache` (its device's page size is the cluster's).
pub fn open(
    layout: Layout,
    cache: Arc<BufferCache>,
    options: ClusterOptions,
) -> Result<Box<dyn RecordCluster>> {
    Ok(match layout {
        Layout::Paginated => Box::new(paginated::Paginated::new(cache, options)?),
        Layout::SinglePage => Box::new(single::SinglePage::new(cache, options)?),
    })
}

/// Implements [`RecordCluster`] for a layout over its `do_*` operations, fail-stop: an update
/// (insert, update, delete) that fails part way may have changed some pages and not others (a
/// failed cache write-back, a read that failed after a page image was modified), so the first
/// failed update drops the operation's page images and stops the cluster, which then refuses
/// every call with [`crate::Error::Stopped`] rather than answer from half-applied state. A failed
/// fetch changes nothing and stops nothing. The cluster's pages stay allocated to it.
macro_rules! fail_stop {
    ($ty:ident, $layout:expr) => {
        impl RecordCluster for $ty {
            fn layout(&self) -> Layout {
                $layout
            }
            fn insert(&mut self, record: &[u8]) -> Result<Rid> {
                self.files.guard()?;
                let r = self.do_insert(record);
                self.files.settle(r)
            }
            fn insert_batch(&mut self, records: &[Vec<u8>]) -> Result<Vec<Rid>> {
                self.files.guard()?;
                let r = self.do_insert_batch(records);
                self.files.settle(r)
            }
            fn fetch(&mut self, rid: Rid) -> Result<Lookup<Vec<u8>>> {
                self.files.guard()?;
                self.do_fetch(rid)
            }
            fn fetch_batch(&mut self, rids: &[Rid]) -> Result<Vec<Lookup<Vec<u8>>>> {
                self.files.guard()?;
                self.do_fetch_batch(rids)
            }
            fn update(&mut self, rid: Rid, record: &[u8]) -> Result<Lookup<()>> {
                self.files.guard()?;
                let r = self.do_update(rid, record);
                self.files.settle(r)
            }
            fn delete(&mut self, rid: Rid) -> Result<Lookup<()>> {
                self.files.guard()?;
                let r = self.do_delete(rid);
                self.files.settle(r)
            }
            fn stats(&self) -> ClusterStats {
                self.files.stats
            }
            fn space(&self) -> Space {
                self.do_space()
            }
            fn set_cache(&mut self, cache: Arc<BufferCache>) -> Result<()> {
                self.files.guard()?;
                self.do_set_cache(cache)
            }
            fn cache(&self) -> &Arc<BufferCache> {
                &self.files.cache
            }
            fn data_page_ids(&self) -> &[PageId] {
                &self.files.data
            }
            fn map_page_ids(&self) -> &[PageId] {
                &self.files.map
            }
        }
    };
}
pub(crate) use fail_stop;

/// Which file of a cluster a page belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum File {
    Data,
    Map,
}

/// A page an operation holds.
pub(crate) enum Held {
    Clean(PageRef),
    Dirty(Vec<u8>),
}

impl Held {
    fn bytes(&self) -> &[u8] {
        match self {
            Held::Clean(p) => p,
            Held::Dirty(b) => b,
        }
    }
}

/// The first word of [`Files::checked_note`] (ASCII "SLOTTED!"): the disk R-tree's notes start
/// with an MBR coordinate's bits, which a cluster never reads, and a cluster page is never read
/// by an R-tree.
const CHECKED_SLOTTED_PAGE: u64 = u64::from_be_bytes(*b"SLOTTED!");

/// The pages of one cluster, the cache it reads them through, and the page images an operation is
/// modifying (each page is read once per operation and written once when it commits).
pub(crate) struct Files {
    pub cache: Arc<BufferCache>,
    pub data: Vec<PageId>,
    pub map: Vec<PageId>,
    pub fsm: FreeSpaceMap,
    /// Live entries per data page.
    pub live: Vec<u32>,
    pub stats: ClusterStats,
    /// Pages of the current operation: read-only ones as the cache's shared copy, modified ones
    /// as a private image (copied on the first write).
    session: BTreeMap<(File, usize), Held>,
    slotted: page::Slotted,
    /// The first failed update's message, once one failed (see [`fail_stop`]).
    stopped: Option<String>,
    /// The page [`Files::read`] read last (named when a pointer decoded from it leads nowhere).
    last_read: PageId,
}

impl Files {
    pub fn new(cache: Arc<BufferCache>, slotted: page::Slotted) -> Self {
        Files {
            cache,
            data: Vec::new(),
            map: Vec::new(),
            fsm: FreeSpaceMap::default(),
            live: Vec::new(),
            stats: ClusterStats::default(),
            session: BTreeMap::new(),
            slotted,
            stopped: None,
            last_read: 0,
        }
    }

    pub fn page_size(&self) -> usize {
        self.cache.page_size()
    }

    fn id(&self, file: File, idx: usize) -> PageId {
        match file {
            File::Data => self.data[idx],
            File::Map => self.map[idx],
        }
    }

    /// Reads a page through the cache (counted), for a read-only operation.
    /// A data page is checked ([`page::Slotted::check`]) before anything decodes it, and an index
    /// past the end of the file (a pointer decoded from a corrupt page) is refused; both are
    /// [`Error::Corrupt`].
    pub fn read(&mut self, file: File, idx: usize) -> Result<PageRef> {
        let len = match file {
            File::Data => self.data.len(),
            File::Map => self.map.len(),
        };
        if idx >= len {
            return Err(Error::Corrupt {
                page: self.last_read,
                reason: format!("a pointer read from this page names {file:?} page {idx} of a file of {len}"),
            });
        }
        self.stats.page_reads += 1;
        if file == File::Map {
            self.stats.map_page_reads += 1;
        }
        let id = self.id(file, idx);
        if file == File::Map {
            let page = self.cache.read(id)?;
            self.last_read = id;
            return Ok(page);
        }
        // A data page is checked once per arrival in the cache: the check walks every slot of a
        // page (hundreds on OrientDB's 64 KiB pages), and a hit on the same bytes passed it
        // already. The cache forgets the note when the bytes change or leave.
        let (page, note) = self.cache.read_noted(id)?;
        self.last_read = id;
        let checked = self.checked_note();
        if note != Some(checked) {
            self.slotted
                .check(&page)
                .map_err(|reason| Error::Corrupt { page: id, reason })?;
            self.cache.set_note(id, &page, checked);
        }
        Ok(page)
    }

    /// The note a data page carries in the cache once it passed [`page::Slotted::check`] with
    /// this cluster's slot format: a tag no other reader of a shared cache writes, and the format.
    fn checked_note(&self) -> PageNote {
        let fmt = self.slotted.fmt;
        [
            CHECKED_SLOTTED_PAGE,
            fmt.ptr_bytes as u64,
            fmt.ver_bytes as u64,
            0,
        ]
    }

    /// [`Files::read`] for a batch that visits pages in order: the page `current` holds when it is
    /// `idx` (not read or counted again), else a read that `current` then holds.
    pub(crate) fn read_reusing(
        &mut self,
        file: File,
        idx: usize,
        current: &mut Option<(usize, PageRef)>,
    ) -> Result<PageRef> {
        match current {
            Some((at, page)) if *at == idx => Ok(page.clone()),
            _ => {
                let page = self.read(file, idx)?;
                *current = Some((idx, page.clone()));
                Ok(page)
            }
        }
    }

    #[allow(clippy::expect_used)] // the page is in the session: it was there or was just inserted
    fn load(&mut self, file: File, idx: usize) -> Result<&mut Held> {
        if !self.session.contains_key(&(file, idx)) {
            let page = self.read(file, idx)?;
            self.session.insert((file, idx), Held::Clean(page));
        }
        Ok(self.session.get_mut(&(file, idx)).expect("just inserted"))
    }

    /// The image of a page this operation modifies (read once, counted, the first time; copied on
    /// the first write; written back when the operation commits).
    pub fn get_mut(&mut self, file: File, idx: usize) -> Result<&mut Vec<u8>> {
        let held = self.load(file, idx)?;
        if let Held::Clean(page) = held {
            *held = Held::Dirty(page.to_vec());
        }
        match held {
            Held::Dirty(buf) => Ok(buf),
            Held::Clean(_) => unreachable!("made dirty above"),
        }
    }

    /// A page for reading within an operation that may modify it (not copied, and written back
    /// only if the operation also asks for it with [`Files::get_mut`]).
    pub fn get(&mut self, file: File, idx: usize) -> Result<&[u8]> {
        Ok(self.load(file, idx)?.bytes())
    }

    /// Allocates a page at the end of a file; data pages come formatted as empty slotted pages.
    pub fn new_page(&mut self, file: File) -> usize {
        let id = self.cache.device().allocate(1);
        let mut buf = vec![0u8; self.page_size()];
        let idx = match file {
            File::Data => {
                self.slotted.init(&mut buf);
                self.data.push(id);
                self.live.push(0);
                self.fsm.push(self.slotted.max_entry(&buf, true));
                self.data.len() - 1
            }
            File::Map => {
                self.map.push(id);
                self.map.len() - 1
            }
        };
        self.session.insert((file, idx), Held::Dirty(buf));
        idx
    }

    /// Writes every page the operation touched back into the cache and updates the free-space
    /// map and live counts of data pages.
    pub fn commit(&mut self) -> Result<()> {
        let session = std::mem::take(&mut self.session);
        for ((file, idx), held) in session {
            let Held::Dirty(buf) = held else { continue };
            if file == File::Data {
                self.fsm.set(idx, self.slotted.max_entry(&buf, true));
                self.live[idx] = self.slotted.live(&buf) as u32;
            }
            self.cache.write(self.id(file, idx), &buf)?;
            self.stats.page_writes += 1;
        }
        Ok(())
    }

    /// Refuses the call if an earlier update failed.
    pub fn guard(&self) -> Result<()> {
        match &self.stopped {
            Some(cause) => Err(crate::Error::Stopped {
                engine: "record cluster",
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Passes an update's result on; a failure drops the operation's images and stops the cluster.
    pub fn settle<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            self.session.clear();
            self.stopped.get_or_insert_with(|| e.to_string());
        }
        r
    }

    /// Drops an operation's images without writing them (a lookup that found nothing to change).
    pub fn abandon(&mut self) {
        self.session.clear();
    }

    /// The room of data page `idx` for an entry: with a reusable empty slot if it has one.
    pub fn room_in(&mut self, idx: usize) -> Result<usize> {
        let sp = self.slotted;
        let buf = self.get(File::Data, idx)?;
        let reuse = sp.first_empty_slot(buf).is_some();
        Ok(sp.max_entry(buf, !reuse))
    }

    /// Puts an entry into data page `idx` (which has room), reusing its lowest empty slot (its
    /// version + 1 when `bump` is set) or adding a slot (version 0). Returns (slot, version).
    pub fn put_entry(&mut self, idx: usize, bytes: &[u8], bump: bool) -> Result<(u32, u64)> {
        let sp = self.slotted;
        let id = self.id(File::Data, idx);
        let buf = self.get_mut(File::Data, idx)?;
        // The free-space map promised room; a page read back with less is corrupt.
        let room = sp.max_entry(buf, sp.first_empty_slot(buf).is_none());
        if room < bytes.len() {
            return Err(Error::Corrupt {
                page: id,
                reason: format!(
                    "{room} bytes of room for a {}-byte entry the free-space map placed here",
                    bytes.len()
                ),
            });
        }
        let (slot, ver) = match sp.first_empty_slot(buf) {
            Some(s) => {
                let v = if bump {
                    sp.version(buf, s) + 1
                } else {
                    sp.version(buf, s)
                };
                (s, v)
            }
            None => (sp.add_slot(buf), 0),
        };
        sp.set_version(buf, slot, ver);
        sp.put(buf, slot, bytes);
        let room = sp.max_entry(buf, true);
        self.fsm.set(idx, room);
        Ok((slot, ver))
    }

    /// A data page with at least `need` bytes of room (leftmost, not `except`), or a new one.
    pub fn page_with_room(&mut self, need: usize, except: Option<usize>) -> usize {
        // The free-space map is conservative (room with a new slot); pages found have room.
        match self.fsm.find(need, except) {
            Some(p) if !self.session.contains_key(&(File::Data, p)) => p,
            Some(p) => {
                let sp = self.slotted;
                let buf = self.session[&(File::Data, p)].bytes();
                if sp.max_entry(buf, true) >= need {
                    p
                } else {
                    self.new_page(File::Data)
                }
            }
            None => self.new_page(File::Data),
        }
    }

    pub fn set_cache(&mut self, cache: Arc<BufferCache>) -> Result<()> {
        self.cache.flush_dirty()?;
        self.cache = cache;
        Ok(())
    }

    pub fn space(&self) -> Space {
        Space {
            file_pages: (self.data.len() + self.map.len()) as u64,
            data_pages: self.data.len() as u64,
            map_pages: self.map.len() as u64,
            data_pages_in_use: self.live.iter().filter(|&&n| n > 0).count() as u64,
            live_records: 0,
            external_links: 0,
        }
    }
}
