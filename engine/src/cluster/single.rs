//! OEP 7's single-page cluster (`docs/papers/oep7.md#the-proposal-in-brief`): each data page embeds
//! its own rid -> position map, so a record id leads straight to its page.
//!
//! - **Record id** = (cluster, page index, slot, delversion) ([`Rid::in_page`]).
//! - **In-page map**: the page's slot directory, one 10-byte entry per slot (2-byte in-page
//!   pointer + 8-byte delversion; [`super::page`] with [`SlotFormat::SINGLE_PAGE`]).
//! - **Links** (the entry's first byte says which):
//!   - internal: the record is in this page;
//!   - external: the record grew out of its page and lives in another one; the home slot keeps a
//!     10-byte link (page, slot) to it and the record id stays valid. The moved copy carries a
//!     back link to its home. When it grows again beyond its new page it moves on and the home link
//!     is rewritten, never chained, so a fetch reads two pages at most; when an update makes it
//!     fit its home page again it moves back (the OEP is silent on this; lsmlab's choice);
//!   - tombstone: a deleted record's slot: pointer 0, the delversion kept.
//! - **Fetch**: the home page, plus the external page when there is a link: one page in the
//!   common case, two at most. A record id whose delversion is older than the slot's is reported
//!   [`Lookup::Stale`], never served the record now in the slot.
//! - **Insert** goes to the leftmost page with room (the same free-space map as the paginated
//!   cluster) and reuses the lowest empty slot there with delversion + 1, else adds a slot.
//! - **Records larger than a page** are chained: the home slot holds the head (as much as the
//!   page takes) and a link to parts in other pages; a fetch reads every page of the chain.
//!
//! Entry formats, after the page's 4-byte length prefix: internal `[1][content]`; external
//! `[2][page u64][slot u16]`; moved `[3][home page u64][home slot u16][content]`; head
//! `[4][next page u64][next slot u16][content]`; part `[5][next page u64][next slot u16][content]`.
//! An addressable entry is at least 11 bytes, so a home slot can always take an external link in
//! place of its record: records under 10 bytes are stored as a head without parts.

use super::page::{get_u16, get_u64, SlotFormat, Slotted};
use super::{ClusterOptions, ClusterStats, File, Files, Layout, Lookup, RecordCluster, Rid, Space};
use crate::cache::{BufferCache, PageRef};
use crate::storage::PageId;
use crate::{Error, Result};
use std::sync::Arc;

const INTERNAL: u8 = 1;
const EXTERNAL: u8 = 2;
const MOVED: u8 = 3;
const HEAD: u8 = 4;
const PART: u8 = 5;
/// Bytes of a link (page index + slot).
pub const LINK: usize = 10;
/// The smallest addressable entry: kind byte + link.
pub const MIN_ENTRY: usize = 1 + LINK;
const NONE: u64 = u64::MAX;

fn entry_with_link(kind: u8, page: u64, slot: u32, content: &[u8]) -> Vec<u8> {
    let mut e = Vec::with_capacity(MIN_ENTRY + content.len());
    e.push(kind);
    e.extend_from_slice(&page.to_le_bytes());
    e.extend_from_slice(&(slot as u16).to_le_bytes());
    e.extend_from_slice(content);
    e
}

fn link_of(e: &[u8]) -> (u64, u32) {
    (get_u64(e, 1), u32::from(get_u16(e, 9)))
}

/// The internal entry of `content` (a linkless head when the content is under 10 bytes).
fn internal_entry(content: &[u8]) -> Vec<u8> {
    if content.len() >= LINK {
        let mut e = Vec::with_capacity(1 + content.len());
        e.push(INTERNAL);
        e.extend_from_slice(content);
        e
    } else {
        entry_with_link(HEAD, NONE, 0, content)
    }
}

/// Whether `e` is a home entry whole enough to decode: an internal record (kind byte and
/// content), or an external link or chain head (kind byte and link at least).
fn addressable(e: &[u8]) -> bool {
    match e.first() {
        Some(&INTERNAL) => true,
        Some(&EXTERNAL | &HEAD) => e.len() >= MIN_ENTRY,
        _ => false,
    }
}

/// Checks a record id against its home slot in `buf`.
fn check_home(sp: &Slotted, rid: Rid, buf: &[u8]) -> Home {
    let slot = u32::from(rid.slot());
    if slot >= sp.slot_count(buf) {
        return Home::Miss(Lookup::Missing);
    }
    let ver = sp.version(buf, slot);
    if rid.delversion < ver {
        return Home::Miss(Lookup::Stale);
    }
    if rid.delversion > ver {
        return Home::Miss(Lookup::Missing);
    }
    match sp.entry(buf, slot) {
        None => Home::Miss(Lookup::Deleted),
        // A home entry too short for its kind is not one (as an unknown kind is not).
        Some(e) if addressable(e) => Home::Entry(e.to_vec()),
        Some(_) => Home::Miss(Lookup::Missing),
    }
}

/// OEP 7's single-page cluster (see the module documentation).
pub struct SinglePage {
    files: Files,
    sp: Slotted,
    options: ClusterOptions,
    live: u64,
    external: u64,
}

/// What a record id's home slot holds.
enum Home {
    Entry(Vec<u8>),
    Miss(Lookup<()>),
}

impl SinglePage {
    /// An empty single-page cluster on `cache`'s device; the page size must be 512..=65536 bytes.
    pub fn new(cache: Arc<BufferCache>, options: ClusterOptions) -> Result<Self> {
        let ps = cache.page_size();
        if !(512..=65536).contains(&ps) {
            return Err(Error::Config(format!(
                "single-page cluster: page size {ps} must be 512..=65536 bytes (the in-page map's pointers are 2 bytes)"
            )));
        }
        let sp = Slotted::new(SlotFormat::SINGLE_PAGE);
        Ok(SinglePage {
            files: Files::new(cache, sp),
            sp,
            options,
            live: 0,
            external: 0,
        })
    }

    fn max_empty(&self) -> usize {
        self.sp.max_entry_in_empty(self.files.page_size())
    }

    /// Checks a record id against its home slot in `buf`.
    fn check(&mut self, rid: Rid, buf: &[u8]) -> Home {
        let home = check_home(&self.sp, rid, buf);
        if matches!(home, Home::Miss(Lookup::Stale)) {
            self.files.stats.stale += 1;
        }
        home
    }

    /// [`SinglePage::check`] on the page image this operation modifies (no copy of the page).
    fn check_in_session(&mut self, rid: Rid, page: usize) -> Result<Home> {
        let sp = self.sp;
        let home = check_home(&sp, rid, self.files.get(File::Data, page)?);
        if matches!(home, Home::Miss(Lookup::Stale)) {
            self.files.stats.stale += 1;
        }
        Ok(home)
    }

    /// Content bytes an entry of `room` bytes holds after its kind and link; a page chosen for
    /// its room (by the free-space map) that turns out to have less than a link's worth is corrupt.
    fn room_for_content(&self, page: usize, room: usize) -> Result<usize> {
        room.checked_sub(MIN_ENTRY)
            .filter(|&r| r > 0)
            .ok_or_else(|| Error::Corrupt {
                page: self.files.data[page],
                reason: format!(
                    "single-page cluster: {room} bytes of room where the free-space map promised more"
                ),
            })
    }

    /// Removes the entry of `kind` in `slot` of data page `page` (within the operation) and returns
    /// it; an empty slot or an entry of another kind or too short is corrupt.
    fn take(&mut self, page: usize, slot: u32, kind: u8) -> Result<Vec<u8>> {
        let sp = self.sp;
        let buf = self.files.get_mut(File::Data, page)?;
        if !sp
            .entry(buf, slot)
            .is_some_and(|e| e.len() >= MIN_ENTRY && e[0] == kind)
        {
            return Err(Error::Corrupt {
                page: self.files.data[page],
                reason: format!("single-page cluster: slot {slot} holds no entry of kind {kind}"),
            });
        }
        Ok(sp.remove(buf, slot))
    }

    fn home_page(&self, rid: Rid) -> Option<usize> {
        (rid.cluster == self.options.cluster_id && rid.page() < self.files.data.len() as u64)
            .then_some(rid.page() as usize)
    }

    /// Reads the parts of a chain from `next` on.
    fn read_parts(&mut self, mut next: (u64, u32), out: &mut Vec<u8>) -> Result<()> {
        // A chain visits each part once; a corrupt link back into it is refused, not followed.
        let mut seen = std::collections::HashSet::new();
        while next.0 != NONE {
            let buf = self.files.read(File::Data, next.0 as usize)?;
            if !seen.insert(next) {
                return Err(Error::Corrupt {
                    page: self.files.data[next.0 as usize],
                    reason: format!("single-page cluster: record chain loops back to slot {}", next.1),
                });
            }
            let e = self
                .sp
                .entry(&buf, next.1)
                .filter(|e| e.len() >= MIN_ENTRY && e[0] == PART)
                .ok_or_else(|| Error::Corrupt {
                    page: self.files.data[next.0 as usize],
                    reason: format!("single-page cluster: slot {} is not a record part", next.1),
                })?;
            out.extend_from_slice(&e[MIN_ENTRY..]);
            next = link_of(e);
        }
        Ok(())
    }

    /// The record an addressable entry stands for; `linked` is the external page, when read.
    fn resolve(&mut self, home: (usize, u32), e: &[u8], linked: Option<PageRef>) -> Result<Vec<u8>> {
        match e[0] {
            INTERNAL => Ok(e[1..].to_vec()),
            HEAD => {
                let mut out = e[MIN_ENTRY..].to_vec();
                self.read_parts(link_of(e), &mut out)?;
                Ok(out)
            }
            EXTERNAL => {
                let (tp, ts) = link_of(e);
                let buf = match linked {
                    Some(b) => b,
                    None => self.files.read(File::Data, tp as usize)?,
                };
                let m = self
                    .sp
                    .entry(&buf, ts)
                    .filter(|m| {
                        m.len() >= MIN_ENTRY && m[0] == MOVED && link_of(m) == (home.0 as u64, home.1)
                    })
                    .ok_or_else(|| Error::Corrupt {
                        page: self.files.data[tp as usize],
                        reason: format!(
                            "single-page cluster: external link to slot {ts} finds no moved record"
                        ),
                    })?;
                Ok(m[MIN_ENTRY..].to_vec())
            }
            k => Err(Error::Corrupt {
                page: self.files.data[home.0],
                reason: format!("single-page cluster: entry kind {k} in a home slot"),
            }),
        }
    }

    /// Writes `bytes` as parts, tail first, into pages with room other than `except`; returns the
    /// link to the first part.
    fn write_parts(&mut self, bytes: &[u8], except: usize) -> Result<(u64, u32)> {
        let mut end = bytes.len();
        let mut next = (NONE, 0u32);
        while end > 0 {
            let need = (end + MIN_ENTRY).min(self.max_empty());
            let p = self.files.page_with_room(need, Some(except));
            let room = self.files.room_in(p)?;
            let part = end.min(self.room_for_content(p, room)?);
            let (slot, _) = self.files.put_entry(
                p,
                &entry_with_link(PART, next.0, next.1, &bytes[end - part..end]),
                true,
            )?;
            next = (p as u64, slot);
            end -= part;
        }
        Ok(next)
    }

    /// Removes what a home entry owns besides itself (parts, the moved copy); the home slot's entry
    /// was already removed. Returns the external page it used, if any.
    fn free_owned(&mut self, e: &[u8]) -> Result<Option<usize>> {
        match e[0] {
            EXTERNAL => {
                let (tp, ts) = link_of(e);
                self.take(tp as usize, ts, MOVED)?;
                self.external -= 1;
                Ok(Some(tp as usize))
            }
            HEAD => {
                let mut next = link_of(e);
                // Taking a part empties its slot, so a chain that loops back is refused there.
                while next.0 != NONE {
                    let part = self.take(next.0 as usize, next.1, PART)?;
                    next = link_of(&part);
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// Places `content` for the (empty) home slot: in the page, in another page behind an external
    /// link, or as a chain.
    fn place(&mut self, home: (usize, u32), content: &[u8], old_external: Option<usize>) -> Result<()> {
        let entry = internal_entry(content);
        let sp = self.sp;
        let home_room = sp.max_entry(self.files.get(File::Data, home.0)?, false);
        if entry.len() <= home_room {
            let buf = self.files.get_mut(File::Data, home.0)?;
            sp.put(buf, home.1, &entry);
            return Ok(());
        }
        if MIN_ENTRY + content.len() <= self.max_empty() {
            let need = MIN_ENTRY + content.len();
            let target = match old_external {
                Some(t) if t != home.0 && self.files.room_in(t)? >= need => t,
                _ => {
                    self.files.stats.moves += 1;
                    self.files.page_with_room(need, Some(home.0))
                }
            };
            let moved = entry_with_link(MOVED, home.0 as u64, home.1, content);
            let (ts, _) = self.files.put_entry(target, &moved, true)?;
            let link = entry_with_link(EXTERNAL, target as u64, ts, &[]);
            let buf = self.files.get_mut(File::Data, home.0)?;
            sp.put(buf, home.1, &link);
            self.external += 1;
            return Ok(());
        }
        let h = self.room_for_content(home.0, home_room)?;
        let first = self.write_parts(&content[h..], home.0)?;
        let head = entry_with_link(HEAD, first.0, first.1, &content[..h]);
        let buf = self.files.get_mut(File::Data, home.0)?;
        sp.put(buf, home.1, &head);
        Ok(())
    }

    fn insert_one(&mut self, record: &[u8]) -> Result<Rid> {
        let entry = internal_entry(record);
        let max = self.max_empty();
        let (page, slot, ver) = if entry.len() <= max {
            let p = self.files.page_with_room(entry.len(), None);
            let (s, v) = self.files.put_entry(p, &entry, true)?;
            (p, s, v)
        } else {
            let home = self.files.page_with_room(max / 2, None);
            let room = self.files.room_in(home)?;
            let h = self.room_for_content(home, room)?;
            let first = self.write_parts(&record[h..], home)?;
            let head = entry_with_link(HEAD, first.0, first.1, &record[..h]);
            let (s, v) = self.files.put_entry(home, &head, true)?;
            (home, s, v)
        };
        self.live += 1;
        Ok(Rid::in_page(
            self.options.cluster_id,
            page as u64,
            slot as u16,
            ver,
        ))
    }
}

/// The operations, run by [`RecordCluster`]'s fail-stop wrapper (see [`super::fail_stop`]).
impl SinglePage {
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
        let Some(page) = self.home_page(rid) else {
            return Ok(Lookup::Missing);
        };
        let buf = self.files.read(File::Data, page)?;
        match self.check(rid, &buf) {
            Home::Miss(l) => Ok(match l {
                Lookup::Stale => Lookup::Stale,
                Lookup::Deleted => Lookup::Deleted,
                _ => Lookup::Missing,
            }),
            Home::Entry(e) => Ok(Lookup::Found(self.resolve(
                (page, u32::from(rid.slot())),
                &e,
                None,
            )?)),
        }
    }

    fn do_fetch_batch(&mut self, rids: &[Rid]) -> Result<Vec<Lookup<Vec<u8>>>> {
        let mut out: Vec<Lookup<Vec<u8>>> = vec![Lookup::Missing; rids.len()];
        let mut order: Vec<usize> = (0..rids.len()).collect();
        order.sort_by_key(|&i| rids[i].position);
        // (external page, its slot, answer index, home page, home slot, link entry)
        let mut external: Vec<(u64, u32, usize, usize, u32, Vec<u8>)> = Vec::new();
        let mut current: Option<(usize, PageRef)> = None;
        for i in order {
            self.files.stats.fetches += 1;
            let rid = rids[i];
            let Some(page) = self.home_page(rid) else { continue };
            let buf = self.files.read_reusing(File::Data, page, &mut current)?;
            let slot = u32::from(rid.slot());
            out[i] = match self.check(rid, &buf) {
                Home::Miss(Lookup::Stale) => Lookup::Stale,
                Home::Miss(Lookup::Deleted) => Lookup::Deleted,
                Home::Miss(_) => Lookup::Missing,
                Home::Entry(e) if e[0] == EXTERNAL => {
                    let (tp, ts) = link_of(&e);
                    external.push((tp, ts, i, page, slot, e));
                    continue;
                }
                Home::Entry(e) => Lookup::Found(self.resolve((page, slot), &e, Some(buf))?),
            };
        }
        // The external pages in order, each once.
        external.sort_by_key(|x| (x.0, x.1));
        let mut current: Option<(usize, PageRef)> = None;
        for (tp, _, i, page, slot, e) in external {
            let buf = self.files.read_reusing(File::Data, tp as usize, &mut current)?;
            out[i] = Lookup::Found(self.resolve((page, slot), &e, Some(buf))?);
        }
        Ok(out)
    }

    fn do_update(&mut self, rid: Rid, record: &[u8]) -> Result<Lookup<()>> {
        let Some(page) = self.home_page(rid) else {
            return Ok(Lookup::Missing);
        };
        let old = match self.check_in_session(rid, page)? {
            Home::Miss(l) => {
                self.files.abandon();
                return Ok(l);
            }
            Home::Entry(e) => e,
        };
        let slot = u32::from(rid.slot());
        let sp = self.sp;
        sp.remove(self.files.get_mut(File::Data, page)?, slot);
        let old_external = self.free_owned(&old)?;
        self.place((page, slot), record, old_external)?;
        self.files.commit()?;
        Ok(Lookup::Found(()))
    }

    fn do_delete(&mut self, rid: Rid) -> Result<Lookup<()>> {
        let Some(page) = self.home_page(rid) else {
            return Ok(Lookup::Missing);
        };
        let old = match self.check_in_session(rid, page)? {
            Home::Miss(l) => {
                self.files.abandon();
                return Ok(l);
            }
            Home::Entry(e) => e,
        };
        let sp = self.sp;
        sp.remove(self.files.get_mut(File::Data, page)?, u32::from(rid.slot()));
        self.free_owned(&old)?;
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
            external_links: self.external,
            ..self.files.space()
        }
    }
}

super::fail_stop!(SinglePage, Layout::SinglePage);
