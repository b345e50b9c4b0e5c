//! The buffer cache: page contents in frames, a replacement policy that picks victims, device I/O.

use super::clock::Clock;
use super::lru::Lru;
use super::policy::{Arrival, CacheConfig, FrameId, PolicyKind, ReplacementPolicy};
use super::stats::CacheStats;
use crate::storage::{Device, PageId};
use crate::{Error, Result};
use parking_lot::{Mutex, MutexGuard};
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

/// Device reads a miss makes at most while other threads write or invalidate pages
/// ([`BufferCache::read`]).
const READ_ATTEMPTS: u32 = 16;

/// A page as the cache hands it out: shared and immutable. An in-place write replaces the cached
/// copy; readers holding the old one keep seeing the old bytes.
pub type PageRef = Arc<[u8]>;

/// What a reader established about a resident page's bytes, kept with the page while it stays
/// resident and its bytes stay the same ([`BufferCache::read_noted`], [`BufferCache::set_note`]).
/// An in-place write, an admission over a clean copy, an eviction or an invalidation forgets it, so
/// a page read again from the device is looked at afresh. The disk R-tree keeps the MBR of a node
/// that passed its structural checks here: a later visit neither rechecks the node nor recomputes
/// its MBR.
pub type PageNote = [u64; 4];

/// Page buffers of evicted frames kept for the next misses to read into (a miss then allocates
/// nothing); more than one is only used when several threads miss at once.
const SPARE_PAGES: usize = 4;

/// A cache of `capacity` whole pages over one device, shared by every index of a run
/// (`Arc<BufferCache>`, used from many threads).
///
/// One mutex guards the page table, the frames and the policy, so the policy sees one global
/// order of accesses (exact LRU needs it). A read miss releases the lock while it reads the
/// device, unless the device reads from memory ([`Device::reads_from_memory`]: a copy no longer
/// than the lock's round trip), where it keeps the lock and takes it once. Write-backs of dirty
/// pages, and the writes of a cache of capacity 0, happen under the lock, so no reader can fetch
/// a page from the device while its newer bytes are on their way there unnoticed: a miss that
/// overlapped a write or an invalidation neither caches what it read nor gives up on a failed read
/// at once (see `State::epoch`).
pub struct BufferCache {
    device: Arc<dyn Device>,
    capacity: usize,
    /// The device's [`Device::reads_from_memory`]: a miss then reads it under the lock, taking the
    /// lock once.
    read_locked: bool,
    state: Mutex<State>,
}

/// The policy, with the shipped ones dispatched statically so that the hit path inlines them.
pub(crate) enum Policy {
    Lru(Lru),
    Clock(Clock),
    Custom(Box<dyn ReplacementPolicy>),
}

macro_rules! dispatch {
    ($self:expr, $p:ident => $e:expr) => {
        match $self {
            Policy::Lru($p) => $e,
            Policy::Clock($p) => $e,
            Policy::Custom($p) => $e,
        }
    };
}

impl Policy {
    /// The state of a named policy (its row of the policy table builds it); a policy of the
    /// caller's comes in through [`BufferCache::with_policy`].
    fn of(kind: PolicyKind) -> Self {
        kind.build()
    }

    pub(crate) fn name(&self) -> &'static str {
        dispatch!(self, p => p.name())
    }

    fn inserted(&mut self, frame: FrameId, page: PageId, how: Arrival) {
        dispatch!(self, p => p.inserted(frame, page, how))
    }

    #[inline(always)]
    fn touched(&mut self, frame: FrameId) {
        dispatch!(self, p => p.touched(frame))
    }

    fn removed(&mut self, frame: FrameId) {
        dispatch!(self, p => p.removed(frame))
    }

    fn replaced(&mut self, frame: FrameId, page: PageId, how: Arrival) {
        dispatch!(self, p => p.replaced(frame, page, how))
    }

    fn victim(&mut self) -> Option<FrameId> {
        dispatch!(self, p => p.victim())
    }

    fn clear(&mut self) {
        dispatch!(self, p => p.clear())
    }
}

/// One resident page, kept in the page table itself so that a hit reads one table entry.
struct Frame {
    /// The frame number the policy knows the page by.
    frame: FrameId,
    data: PageRef,
    /// Written in place and not yet written back.
    dirty: bool,
    /// Arrived by prefetch admission and not read since.
    prefetched: bool,
    /// A reader left a note on these bytes (`State::notes` holds it). An arrival starts without
    /// one, so a miss writes this flag in the entry it writes anyway and never touches `notes`.
    noted: bool,
}

struct State {
    /// Resident page -> its frame. Iterated only where the result is sorted by page id.
    table: FxHashMap<PageId, Frame>,
    /// Frame number -> the note a reader left on the page in it, meaningful only while the
    /// frame's entry says `noted` (a page not looked at since it arrived or changed has none).
    /// Kept beside the table so that a plain hit does not read it, and written only by
    /// [`BufferCache::set_note`], so that an arrival does not write it either (40 bytes a frame:
    /// a miss would otherwise touch one more cache line of a large array).
    notes: Vec<PageNote>,
    /// Buffers of evicted pages, for misses to read into if no reader holds them by then (at most
    /// [`SPARE_PAGES`]).
    spare: Vec<PageRef>,
    /// Frame number -> the page in it (meaningful for frames not on the free list), for victims.
    owners: Vec<PageId>,
    /// Frames without a page, reused last-freed first.
    free: Vec<FrameId>,
    policy: Policy,
    stats: CacheStats,
    /// Bumped by every invalidation and every write. A miss whose device read overlapped one does
    /// not cache the page it read: the page's extent may have been retired (and reused), or the
    /// page rewritten (and written back, and evicted), meanwhile. A device read that failed while
    /// the epoch moved is tried again: it may have met a page half-written in place.
    epoch: u64,
    /// Bumped by every arrival ([`State::place`], the only way a page becomes resident). A miss
    /// that finds it unchanged once its device read is done knows, without a lookup, that no other
    /// thread cached the page meanwhile; single-threaded that is every miss.
    arrivals: u64,
}

/// Whether `page` is the only handle on its bytes, by plain loads of its counts (no locked
/// instruction). Once true for a handle its holder keeps to itself, it stays true: no other handle
/// can be made from it without it.
#[inline(always)]
fn is_unshared(page: &PageRef) -> bool {
    Arc::strong_count(page) == 1 && Arc::weak_count(page) == 0
}

/// What a miss saw under the lock before it released it to read the device.
#[derive(Clone, Copy)]
struct MissStart {
    epoch: u64,
    arrivals: u64,
}

impl State {
    /// The read hit path: count, tell the policy, hand out the page.
    #[inline]
    fn hit(&mut self, id: PageId) -> Option<PageRef> {
        self.hit_frame(id).map(|(page, _)| page)
    }

    /// What a miss notes before it releases the lock to read the device.
    #[inline]
    fn miss_start(&self) -> MissStart {
        MissStart {
            epoch: self.epoch,
            arrivals: self.arrivals,
        }
    }

    /// [`State::hit`] that also names the page's frame if the page has a note (kept in `notes`).
    #[inline(always)]
    fn hit_frame(&mut self, id: PageId) -> Option<(PageRef, Option<FrameId>)> {
        let frame = self.table.get_mut(&id)?;
        let page = frame.data.clone();
        if frame.prefetched {
            frame.prefetched = false;
            self.stats.prefetch_hits += 1;
        }
        self.stats.hits += 1;
        let f = frame.frame;
        let noted = frame.noted.then_some(f);
        self.policy.touched(f);
        Some((page, noted))
    }

    /// Makes room for page `id`, which is not resident, and puts it in: the last victim's frame,
    /// if `capacity` required one, else a free frame. The arriving page takes the victim's frame
    /// straight away, as it would from the free list (last freed, first reused), and the policy
    /// hears of both in one call ([`ReplacementPolicy::replaced`]).
    fn place(
        &mut self,
        device: &dyn Device,
        capacity: usize,
        id: PageId,
        data: PageRef,
        how: Arrival,
    ) -> Result<()> {
        let reused = self.make_room(device, capacity)?;
        self.arrive(reused, id, data, how);
        Ok(())
    }

    /// The arrival of page `id`, not resident, once [`State::make_room`] made room: into the frame
    /// it returned (still known to the policy), else a free one.
    #[inline(always)]
    fn arrive(&mut self, reused: Option<FrameId>, id: PageId, data: PageRef, how: Arrival) {
        let f = match reused.or_else(|| self.free.pop()) {
            Some(f) => {
                self.owners[f as usize] = id;
                f
            }
            None => {
                self.owners.push(id);
                (self.owners.len() - 1) as FrameId
            }
        };
        let frame = Frame {
            frame: f,
            data,
            dirty: how == Arrival::Write,
            prefetched: how == Arrival::Prefetch,
            noted: false,
        };
        // Through `entry` rather than `insert`: the same single lookup, and compiled inline here
        // (a plain `insert` was compiled out of line, a call per miss).
        match self.table.entry(id) {
            Entry::Vacant(slot) => {
                slot.insert(frame);
            }
            Entry::Occupied(_) => unreachable!("page {id} installed twice"),
        }
        self.arrivals += 1;
        match reused {
            Some(_) => self.policy.replaced(f, id, how),
            None => self.policy.inserted(f, id, how),
        }
    }

    /// Takes the page out of every structure, if it is resident, and returns its bytes; no
    /// write-back, no counting. One table lookup.
    fn remove(&mut self, id: PageId) -> Option<PageRef> {
        let frame = self.table.remove(&id)?;
        Some(self.release(frame))
    }

    /// The rest of a removal once the page's frame is out of the table: the policy forgets the
    /// frame and it is free for the next arrival (reused last-freed first).
    fn release(&mut self, frame: Frame) -> PageRef {
        self.free_frame(frame.frame);
        frame.data
    }

    /// Frame `f`, whose page left the table, is forgotten by the policy and free for the next
    /// arrival (reused last-freed first).
    fn free_frame(&mut self, f: FrameId) {
        self.policy.removed(f);
        self.free.push(f);
    }

    /// Writes back page `id`, whose frame was just removed from the table, if it is dirty (not
    /// counted as an eviction). So a page leaves with one table lookup, its removal, even when it
    /// is written back. If the write-back fails the frame goes back into the table unchanged: the
    /// page stays resident and dirty, and the policy, told nothing, keeps it where it was.
    #[inline]
    fn write_back_taken(&mut self, device: &dyn Device, id: PageId, frame: Frame) -> Result<Frame> {
        if frame.dirty {
            if let Err(e) = device.write_page(id, &frame.data) {
                self.put_back(id, frame);
                return Err(e);
            }
            self.stats.write_backs += 1;
        }
        Ok(frame)
    }

    /// Puts back a frame [`State::write_back_taken`] could not write back (an error path, out of
    /// line).
    #[cold]
    #[inline(never)]
    fn put_back(&mut self, id: PageId, frame: Frame) {
        self.table.entry(id).or_insert(frame);
    }

    /// Writes a dirty page back and marks it clean (the page stays dirty if the write fails).
    fn write_back(&mut self, device: &dyn Device, id: PageId) -> Result<()> {
        #[allow(clippy::expect_used)] // callers pass a page they just found in the table, under the same lock
        let frame = self.table.get_mut(&id).expect("writing back a resident page");
        if frame.dirty {
            device.write_page(id, &frame.data)?;
            frame.dirty = false;
            self.stats.write_backs += 1;
        }
        Ok(())
    }

    /// Evicts victims until one more page fits in `capacity`, and returns the last victim's frame,
    /// still known to the policy, for the arriving page (any earlier victim's frame is released).
    /// The victim's page id comes from its frame number (`owners`), so each eviction is one table
    /// lookup, its removal.
    #[inline]
    fn make_room(&mut self, device: &dyn Device, capacity: usize) -> Result<Option<FrameId>> {
        let mut reused: Option<FrameId> = None;
        while self.table.len() >= capacity {
            if let Some(f) = reused.take() {
                self.free_frame(f);
            }
            #[allow(clippy::expect_used)] // the policy tracks every resident frame, and the table is full
            let f = self.policy.victim().expect("a full cache has a victim");
            let id = self.owners[f as usize];
            #[allow(clippy::expect_used)] // a victim's owner is in the table until this removal
            let frame = self.table.remove(&id).expect("a victim is resident");
            let data = self.write_back_taken(device, id, frame)?.data;
            self.stats.evictions += 1;
            reused = Some(f);
            // The victim's buffer is kept for the next miss to read into, if no reader holds it
            // by then (`BufferCache::read_device` asks, and drops a buffer still shared). Not asked
            // here: the victim's header is rarely in the CPU cache, and a test of its counts
            // stalls the eviction until memory answers (half of this function's time in a
            // profile of the miss mix); the next miss writes the buffer anyway.
            if self.spare.len() < SPARE_PAGES {
                self.spare.push(data);
            }
        }
        Ok(reused)
    }
}

impl BufferCache {
    /// An exact-LRU cache of `capacity` pages (0 disables caching: every read goes to the device).
    pub fn new(device: Arc<dyn Device>, capacity: usize) -> Self {
        Self::build(device, capacity, Policy::of(PolicyKind::LRU))
    }

    /// The cache a [`CacheConfig`] describes.
    pub fn from_config(device: Arc<dyn Device>, config: &CacheConfig) -> Self {
        Self::build(device, config.capacity_pages, Policy::of(config.policy))
    }

    /// A cache with a replacement policy of the caller's (one not in [`PolicyKind`]).
    pub fn with_policy(device: Arc<dyn Device>, capacity: usize, policy: Box<dyn ReplacementPolicy>) -> Self {
        Self::build(device, capacity, Policy::Custom(policy))
    }

    fn build(device: Arc<dyn Device>, capacity: usize, policy: Policy) -> Self {
        BufferCache {
            read_locked: device.reads_from_memory(),
            device,
            capacity,
            state: Mutex::new(State {
                table: FxHashMap::default(),
                notes: Vec::new(),
                spare: Vec::new(),
                owners: Vec::new(),
                free: Vec::new(),
                policy,
                stats: CacheStats::default(),
                epoch: 0,
                arrivals: 0,
            }),
        }
    }

    #[inline]
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    fn check_len(&self, id: PageId, bytes: &[u8]) -> Result<()> {
        let ps = self.device.page_size();
        if bytes.len() == ps {
            Ok(())
        } else {
            Err(Error::Config(format!(
                "page {id}: {} bytes given to the cache, the page size is {ps}",
                bytes.len()
            )))
        }
    }

    /// Reads a page from the device into `spare` (the buffer of an evicted page, which no one else
    /// holds) or else into a fresh shared page. A fresh buffer comes from `vec!` (a calloc, then
    /// one copy into the shared allocation) rather than an iterator filling it byte by byte. A
    /// device read fills the whole buffer, so nothing of the evicted page shows through.
    fn read_device(&self, id: PageId, spare: Option<PageRef>) -> Result<PageRef> {
        let mut page: PageRef = match spare {
            // A spare a reader still holds is dropped (`State::make_room` keeps victims unasked).
            Some(page) if is_unshared(&page) => page,
            _ => PageRef::from(vec![0u8; self.device.page_size()]),
        };
        #[allow(clippy::expect_used)] // an unshared spare or a page just made
        let buf = Arc::get_mut(&mut page).expect("a spare or fresh page is not shared");
        self.device.read_page(id, buf)?;
        Ok(page)
    }

    /// The device the cache reads from and writes back to.
    pub fn device(&self) -> &Arc<dyn Device> {
        &self.device
    }

    /// The device's page size in bytes.
    pub fn page_size(&self) -> usize {
        self.device.page_size()
    }

    /// Pages the cache may hold; 0 means every read goes to the device.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Name of the replacement policy.
    pub fn policy_name(&self) -> &'static str {
        self.lock().policy.name()
    }

    /// Reads a page, from the cache if it is there (a hit), else from the device (a miss; the page
    /// is then cached, which may evict a victim and write it back if it is dirty).
    #[inline]
    pub fn read(&self, id: PageId) -> Result<PageRef> {
        let (start, spare) = {
            let mut st = self.lock();
            if let Some(page) = st.hit(id) {
                return Ok(page);
            }
            st.stats.misses += 1;
            if self.read_locked {
                return self.read_miss_locked(st, id);
            }
            (st.miss_start(), st.spare.pop())
        };
        self.read_miss(id, start, spare)
    }

    /// [`Self::read`] that also returns the note left on the page by [`Self::set_note`], if the
    /// page is resident, has one and has not changed since (a miss returns none). Counted and
    /// seen by the policy exactly as a read.
    #[inline]
    pub fn read_noted(&self, id: PageId) -> Result<(PageRef, Option<PageNote>)> {
        let (start, spare) = {
            let mut st = self.lock();
            if let Some((page, noted)) = st.hit_frame(id) {
                let note = noted.map(|f| st.notes[f as usize]);
                return Ok((page, note));
            }
            st.stats.misses += 1;
            if self.read_locked {
                return Ok((self.read_miss_locked(st, id)?, None));
            }
            (st.miss_start(), st.spare.pop())
        };
        Ok((self.read_miss(id, start, spare)?, None))
    }

    /// Leaves a note on a page for later [`Self::read_noted`] calls, if the page is resident with
    /// the very bytes `page` (as a read returned them): a page written in place or read afresh
    /// since keeps no note meant for other bytes. Neither counted nor seen by the policy.
    pub fn set_note(&self, id: PageId, page: &PageRef, note: PageNote) {
        let mut st = self.lock();
        let st = &mut *st;
        if let Some(frame) = st.table.get_mut(&id) {
            if Arc::ptr_eq(&frame.data, page) {
                let f = frame.frame as usize;
                frame.noted = true;
                if f >= st.notes.len() {
                    st.notes.resize(f + 1, PageNote::default());
                }
                st.notes[f] = note;
            }
        }
    }

    /// The rest of a miss, kept out of line so that the hit path stays small. A device read that
    /// fails while another thread wrote or invalidated pages (the epoch moved) is tried again, from
    /// the cache first, up to [`READ_ATTEMPTS`] times: it may have met the page half-written by a
    /// write-back or an uncached write (a file device then reports a checksum mismatch), or freed
    /// and not yet rewritten. Single-threaded, the epoch never moves during a read, so a failed read
    /// fails at once.
    ///
    /// Table lookups of a miss that evicts: the one that missed, the victim's removal, the new
    /// page's insertion; the page is looked up again after the device read only if some page
    /// arrived meanwhile (`State::arrivals`).
    #[inline(never)]
    fn read_miss(&self, id: PageId, mut start: MissStart, mut spare: Option<PageRef>) -> Result<PageRef> {
        let mut attempts = 1;
        let page = loop {
            match self.read_device(id, spare.take()) {
                Ok(page) => break page,
                Err(e) => {
                    let mut st = self.lock();
                    if st.epoch == start.epoch || attempts >= READ_ATTEMPTS {
                        return Err(e);
                    }
                    attempts += 1;
                    if let Some(page) = st.hit(id) {
                        return Ok(page);
                    }
                    start = st.miss_start();
                }
            }
        };
        if self.capacity == 0 {
            return Ok(page);
        }
        let mut st = self.lock();
        if st.epoch != start.epoch {
            return Ok(page);
        }
        if st.arrivals != start.arrivals {
            if let Some(frame) = st.table.get(&id) {
                // Another thread cached the page while this one read the device: keep that copy
                // (it may have been written in place since) and count nothing more.
                let (f, page) = (frame.frame, frame.data.clone());
                st.policy.touched(f);
                return Ok(page);
            }
        }
        st.place(&*self.device, self.capacity, id, page.clone(), Arrival::Demand)?;
        Ok(page)
    }

    /// The rest of a miss on a device that reads from memory ([`Device::reads_from_memory`]),
    /// under the lock the miss was found with, so nothing can happen between its steps: the epoch
    /// and arrival checks of [`Self::read_miss`] have nothing to catch and a failed read fails at
    /// once. It makes room first and reads into the frame it freed, the order of a textbook
    /// buffer manager (choose a frame, then read the page into it), so that the page is read into
    /// the victim's own buffer when no reader holds it. On the miss mix of
    /// `engine/benches/cache.rs`, in three alternating runs against evicting after the read, this
    /// order read 9-37% more pages per second under CLOCK and -2% to +7% under LRU. A read that
    /// fails hands the frame back, free (the victim stays evicted, and counted so). Out of line,
    /// as `read_miss`.
    #[inline(never)]
    fn read_miss_locked(&self, mut st: MutexGuard<'_, State>, id: PageId) -> Result<PageRef> {
        if self.capacity == 0 {
            // Nothing is ever evicted, so there are no spares.
            return self.read_device(id, None);
        }
        let reused = st.make_room(&*self.device, self.capacity)?;
        let spare = st.spare.pop();
        match self.read_device(id, spare) {
            Ok(page) => {
                st.arrive(reused, id, page.clone(), Arrival::Demand);
                Ok(page)
            }
            Err(e) => {
                if let Some(f) = reused {
                    st.free_frame(f);
                }
                Err(e)
            }
        }
    }

    /// Updates a page in place: the cached copy becomes `bytes` and is marked dirty; the device
    /// sees it on eviction, [`Self::flush_dirty`] or [`Self::clear`]. A cache of capacity 0
    /// writes straight to the device. Fails if `bytes` is not one page long, or if making room
    /// required writing back a dirty victim and that failed.
    pub fn write(&self, id: PageId, bytes: &[u8]) -> Result<()> {
        self.check_len(id, bytes)?;
        if self.capacity == 0 {
            // Under the lock, as write-backs are: a read overlapping the write sees the epoch move.
            let mut st = self.lock();
            st.epoch += 1;
            self.device.write_page(id, bytes)?;
            st.stats.writes += 1;
            st.stats.write_backs += 1;
            return Ok(());
        }
        let data: PageRef = bytes.into();
        let mut st = self.lock();
        // A miss that read the page's older bytes from the device must not cache them once this
        // write has been written back and evicted.
        st.epoch += 1;
        if let Some(frame) = st.table.get_mut(&id) {
            frame.data = data;
            frame.dirty = true;
            frame.noted = false;
            let f = frame.frame;
            st.policy.touched(f);
        } else {
            st.place(&*self.device, self.capacity, id, data, Arrival::Write)?;
        }
        st.stats.writes += 1;
        Ok(())
    }

    /// Puts a page in without device I/O (a prefetcher that already holds the bytes, or a run
    /// being written). `bytes` must be the device's contents of the page. Returns whether the page
    /// was admitted: a resident page is not (a clean copy takes the given bytes, a dirty one keeps
    /// its newer bytes), nor is any page by a cache of capacity 0.
    pub fn admit(&self, id: PageId, bytes: &[u8]) -> Result<bool> {
        self.check_len(id, bytes)?;
        if self.capacity == 0 {
            return Ok(false);
        }
        let data: PageRef = bytes.into();
        let mut st = self.lock();
        if let Some(frame) = st.table.get_mut(&id) {
            if !frame.dirty {
                frame.data = data;
                frame.noted = false;
            }
            return Ok(false);
        }
        st.place(&*self.device, self.capacity, id, data, Arrival::Prefetch)?;
        st.stats.prefetch_admissions += 1;
        Ok(true)
    }

    /// Reads a page from the device into the cache ahead of use, counted as a prefetch read (not a
    /// miss). Returns whether it was admitted (not if it is already resident, or capacity is 0).
    pub fn prefetch(&self, id: PageId) -> Result<bool> {
        if self.capacity == 0 {
            return Ok(false);
        }
        let (start, spare) = {
            let mut st = self.lock();
            if st.table.contains_key(&id) {
                return Ok(false);
            }
            (st.miss_start(), st.spare.pop())
        };
        let page = self.read_device(id, spare)?;
        let mut st = self.lock();
        st.stats.prefetch_reads += 1;
        if st.epoch != start.epoch || (st.arrivals != start.arrivals && st.table.contains_key(&id)) {
            return Ok(false);
        }
        st.place(&*self.device, self.capacity, id, page, Arrival::Prefetch)?;
        st.stats.prefetch_admissions += 1;
        Ok(true)
    }

    /// Drops one page, writing it back first if it is dirty (counted as an eviction). Returns
    /// whether it was resident.
    pub fn evict(&self, id: PageId) -> Result<bool> {
        let mut st = self.lock();
        let Some(frame) = st.table.remove(&id) else {
            return Ok(false);
        };
        let frame = st.write_back_taken(&*self.device, id, frame)?;
        st.release(frame);
        st.stats.evictions += 1;
        Ok(true)
    }

    /// Drops the cached copies of an extent (a component retired by a merge). Dirty pages are
    /// dropped without write-back: the extent's contents are dead.
    pub fn invalidate(&self, first: PageId, count: u64) {
        Self::invalidate_locked(&mut self.lock(), first, count);
    }

    fn invalidate_locked(st: &mut State, first: PageId, count: u64) {
        st.epoch += 1;
        for id in first..first + count {
            if st.table.is_empty() {
                break;
            }
            if st.remove(id).is_some() {
                st.stats.invalidations += 1;
            }
        }
    }

    /// Invalidates an extent and returns it to the device, under the lock: a miss that began
    /// between the two would otherwise read the dead pages from the device and cache them, to be
    /// served in place of whatever the extent holds once it is reused.
    pub fn free(&self, first: PageId, count: u64) {
        let mut st = self.lock();
        Self::invalidate_locked(&mut st, first, count);
        self.device.free(first, count);
    }

    /// Writes every dirty page back (in page order, so the device sees ascending writes) and keeps
    /// them resident, clean. Returns how many were written. On a device error the pages not yet
    /// written stay dirty.
    pub fn flush_dirty(&self) -> Result<u64> {
        let mut st = self.lock();
        Self::flush_locked(&mut st, &*self.device)
    }

    fn flush_locked(st: &mut State, device: &dyn Device) -> Result<u64> {
        let mut dirty: Vec<PageId> = st
            .table
            .iter()
            .filter(|(_, f)| f.dirty)
            .map(|(&id, _)| id)
            .collect();
        dirty.sort_unstable();
        for &id in &dirty {
            st.write_back(device, id)?;
        }
        Ok(dirty.len() as u64)
    }

    /// Empties the cache for a cold-cache run: dirty pages are written back first, then every page
    /// leaves (not counted as evictions). On a write-back error nothing is dropped.
    pub fn clear(&self) -> Result<()> {
        let mut st = self.lock();
        Self::flush_locked(&mut st, &*self.device)?;
        st.table.clear();
        st.notes.clear();
        st.owners.clear();
        st.free.clear();
        st.policy.clear();
        Ok(())
    }

    /// Whether a page is resident (no effect on the policy or the counters).
    pub fn contains(&self, id: PageId) -> bool {
        self.lock().table.contains_key(&id)
    }

    /// Whether a page is resident and written in place since it was last written back.
    pub fn is_dirty(&self, id: PageId) -> bool {
        self.lock().table.get(&id).is_some_and(|f| f.dirty)
    }

    /// The resident pages, ascending.
    pub fn resident(&self) -> Vec<PageId> {
        let st = self.lock();
        let mut ids: Vec<PageId> = st.table.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Resident pages that are dirty.
    pub fn dirty_len(&self) -> usize {
        self.lock().table.values().filter(|f| f.dirty).count()
    }

    /// A snapshot of the cache's counters since it was created.
    pub fn stats(&self) -> CacheStats {
        self.lock().stats
    }

    /// Pages currently cached.
    pub fn len(&self) -> usize {
        self.lock().table.len()
    }

    /// Whether no page is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
