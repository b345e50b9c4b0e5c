//! The slotted data page both cluster layouts store records in.
//!
//! Layout (OrientDB's `OClusterPage`, `docs/papers/oep7.md#what-lsmlab-implements`): a header, then
//! a slot directory that grows up from the header, then free space, then entries that grow down
//! from the end of the page. A slot holds an in-page pointer to its entry and a version field; a
//! pointer of 0 marks an empty slot (deleted, reusable: the header occupies offset 0, so no entry
//! starts there). Every entry is stored as a 4-byte length followed by its bytes; what the bytes
//! mean is the layout's business. A delete leaves a hole; when the contiguous gap is too small for
//! a new entry but the page's total free space suffices, the page is compacted (OrientDB's
//! `doDefragmentation`).
//!
//! The two layouts differ only in the slot's widths ([`SlotFormat`]):
//! - `paginated` (OrientDB): 4-byte pointer + 4-byte record version = 8 bytes
//!   (`OClusterPage.INDEX_ITEM_SIZE`);
//! - `single-page` (OEP 7): 2-byte pointer + 8-byte delversion = 10 bytes (the OEP's in-page
//!   rid -> position map entry). A 2-byte pointer addresses pages of at most 64 KiB.

/// Bytes of the page header: OrientDB's durable-page header (magic, CRC, WAL position: 28 B) plus
/// the cluster-page header (next/previous page, free-list head, free position, free space,
/// entry count, slot count: 36 B). lsmlab uses three of the fields and keeps the rest reserved, so
/// that both layouts pay OrientDB's per-page overhead.
pub const HEADER: usize = 64;

const SLOT_COUNT: usize = 0;
const FREE_POS: usize = 4;
const USED: usize = 8;
/// Bytes of the length prefix of every entry.
pub const LEN_PREFIX: usize = 4;

/// The widths of a slot-directory entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotFormat {
    /// Bytes of the in-page pointer (2 or 4).
    pub ptr_bytes: usize,
    /// Bytes of the version field (4: record version; 8: delversion).
    pub ver_bytes: usize,
}

impl SlotFormat {
    /// OrientDB's slot: 4-byte pointer + 4-byte record version.
    pub const PAGINATED: SlotFormat = SlotFormat {
        ptr_bytes: 4,
        ver_bytes: 4,
    };
    /// OEP 7's in-page map entry: 2-byte pointer + 8-byte delversion.
    pub const SINGLE_PAGE: SlotFormat = SlotFormat {
        ptr_bytes: 2,
        ver_bytes: 8,
    };

    pub fn slot_bytes(self) -> usize {
        self.ptr_bytes + self.ver_bytes
    }
}

fn get(buf: &[u8], at: usize, n: usize) -> u64 {
    let mut v = 0u64;
    for (i, b) in buf[at..at + n].iter().enumerate() {
        v |= u64::from(*b) << (8 * i);
    }
    v
}

fn set(buf: &mut [u8], at: usize, n: usize, v: u64) {
    for (i, b) in buf[at..at + n].iter_mut().enumerate() {
        *b = (v >> (8 * i)) as u8;
    }
}

pub(crate) fn get_u32(buf: &[u8], at: usize) -> u32 {
    get(buf, at, 4) as u32
}

pub(crate) fn set_u32(buf: &mut [u8], at: usize, v: u32) {
    set(buf, at, 4, u64::from(v))
}

pub(crate) fn get_u64(buf: &[u8], at: usize) -> u64 {
    get(buf, at, 8)
}

pub(crate) fn set_u64(buf: &mut [u8], at: usize, v: u64) {
    set(buf, at, 8, v)
}

pub(crate) fn get_u16(buf: &[u8], at: usize) -> u16 {
    get(buf, at, 2) as u16
}

/// Operations on one page image (`buf` is the whole page).
#[derive(Clone, Copy, Debug)]
pub struct Slotted {
    pub fmt: SlotFormat,
}

impl Slotted {
    pub fn new(fmt: SlotFormat) -> Self {
        Slotted { fmt }
    }

    /// Formats an empty page.
    pub fn init(&self, buf: &mut [u8]) {
        buf.fill(0);
        set_u32(buf, SLOT_COUNT, 0);
        set_u32(buf, FREE_POS, buf.len() as u32);
        set_u32(buf, USED, 0);
    }

    pub fn slot_count(&self, buf: &[u8]) -> u32 {
        get_u32(buf, SLOT_COUNT)
    }

    fn slot_at(&self, slot: u32) -> usize {
        HEADER + slot as usize * self.fmt.slot_bytes()
    }

    fn ptr(&self, buf: &[u8], slot: u32) -> usize {
        get(buf, self.slot_at(slot), self.fmt.ptr_bytes) as usize
    }

    fn set_ptr(&self, buf: &mut [u8], slot: u32, ptr: usize) {
        set(buf, self.slot_at(slot), self.fmt.ptr_bytes, ptr as u64)
    }

    /// The version field of a slot (record version or delversion).
    pub fn version(&self, buf: &[u8], slot: u32) -> u64 {
        get(buf, self.slot_at(slot) + self.fmt.ptr_bytes, self.fmt.ver_bytes)
    }

    pub fn set_version(&self, buf: &mut [u8], slot: u32, v: u64) {
        set(
            buf,
            self.slot_at(slot) + self.fmt.ptr_bytes,
            self.fmt.ver_bytes,
            v,
        )
    }

    /// Checks a page image read from the device: the slot directory fits before the free
    /// position, the used bytes fit the page, and every occupied slot points at an entry that lies
    /// inside the entry area. Every other method may assume a checked page; a page that fails is
    /// corrupt (the reason says what is wrong).
    pub fn check(&self, buf: &[u8]) -> std::result::Result<(), String> {
        if buf.len() < HEADER {
            return Err(format!("page of {} bytes is shorter than the header", buf.len()));
        }
        let count = self.slot_count(buf) as usize;
        let free = get_u32(buf, FREE_POS) as usize;
        let dir_end = count
            .checked_mul(self.fmt.slot_bytes())
            .and_then(|d| d.checked_add(HEADER))
            .filter(|&d| d <= free && free <= buf.len())
            .ok_or_else(|| {
                format!(
                    "{count} slots and free position {free} do not fit a page of {} bytes",
                    buf.len()
                )
            })?;
        let used = get_u32(buf, USED) as usize;
        if used > buf.len() - dir_end {
            return Err(format!("{used} bytes used, {} available", buf.len() - dir_end));
        }
        let mut live = 0;
        for slot in 0..count as u32 {
            let p = self.ptr(buf, slot);
            if p == 0 {
                continue;
            }
            let end = (p >= free && p + LEN_PREFIX <= buf.len())
                .then(|| p + LEN_PREFIX + get_u32(buf, p) as usize)
                .filter(|&end| end <= buf.len());
            let Some(end) = end else {
                return Err(format!(
                    "slot {slot} points at {p}, outside the entries {free}..{}",
                    buf.len()
                ));
            };
            live += end - p;
        }
        // The used bytes are exactly the live entries' (what a put adds and a remove takes).
        if live != used {
            return Err(format!("{used} bytes used, but the live entries take {live}"));
        }
        Ok(())
    }

    /// Whether `slot` exists and holds an entry.
    pub fn occupied(&self, buf: &[u8], slot: u32) -> bool {
        slot < self.slot_count(buf) && self.ptr(buf, slot) != 0
    }

    /// The bytes of the entry in `slot`, if it holds one.
    pub fn entry<'a>(&self, buf: &'a [u8], slot: u32) -> Option<&'a [u8]> {
        if !self.occupied(buf, slot) {
            return None;
        }
        let p = self.ptr(buf, slot);
        let len = get_u32(buf, p) as usize;
        Some(&buf[p + LEN_PREFIX..p + LEN_PREFIX + len])
    }

    /// Bytes not taken by the header, the slot directory or live entries.
    pub fn free_bytes(&self, buf: &[u8]) -> usize {
        buf.len()
            - HEADER
            - self.slot_count(buf) as usize * self.fmt.slot_bytes()
            - get_u32(buf, USED) as usize
    }

    /// The longest entry that fits, in an existing empty slot (`new_slot = false`) or a new one.
    pub fn max_entry(&self, buf: &[u8], new_slot: bool) -> usize {
        let extra = if new_slot { self.fmt.slot_bytes() } else { 0 } + LEN_PREFIX;
        self.free_bytes(buf).saturating_sub(extra)
    }

    /// The longest entry an empty page of `page_size` bytes takes (one slot).
    pub fn max_entry_in_empty(&self, page_size: usize) -> usize {
        page_size - HEADER - self.fmt.slot_bytes() - LEN_PREFIX
    }

    /// The lowest empty slot, if any.
    pub fn first_empty_slot(&self, buf: &[u8]) -> Option<u32> {
        (0..self.slot_count(buf)).find(|&s| self.ptr(buf, s) == 0)
    }

    /// Live entries.
    pub fn live(&self, buf: &[u8]) -> usize {
        (0..self.slot_count(buf))
            .filter(|&s| self.ptr(buf, s) != 0)
            .count()
    }

    fn gap(&self, buf: &[u8]) -> usize {
        get_u32(buf, FREE_POS) as usize - self.slot_at(self.slot_count(buf))
    }

    /// Appends an empty slot (version 0) and returns it. The caller checked the room.
    pub fn add_slot(&self, buf: &mut [u8]) -> u32 {
        if self.gap(buf) < self.fmt.slot_bytes() {
            self.compact(buf);
        }
        let s = self.slot_count(buf);
        assert!(self.gap(buf) >= self.fmt.slot_bytes(), "no room for a slot");
        set_u32(buf, SLOT_COUNT, s + 1);
        self.set_ptr(buf, s, 0);
        self.set_version(buf, s, 0);
        s
    }

    /// Stores `bytes` as the entry of the empty slot `slot`. The caller checked the room
    /// ([`Slotted::max_entry`] with `new_slot = false`).
    pub fn put(&self, buf: &mut [u8], slot: u32, bytes: &[u8]) {
        debug_assert!(slot < self.slot_count(buf) && self.ptr(buf, slot) == 0);
        let need = bytes.len() + LEN_PREFIX;
        assert!(
            self.free_bytes(buf) >= need,
            "entry of {} B does not fit",
            bytes.len()
        );
        if self.gap(buf) < need {
            self.compact(buf);
        }
        let p = get_u32(buf, FREE_POS) as usize - need;
        assert!(
            p > 0 && p < (1usize << (8 * self.fmt.ptr_bytes)),
            "pointer {p} out of range"
        );
        set_u32(buf, p, bytes.len() as u32);
        buf[p + LEN_PREFIX..p + need].copy_from_slice(bytes);
        set_u32(buf, FREE_POS, p as u32);
        set_u32(buf, USED, get_u32(buf, USED) + need as u32);
        self.set_ptr(buf, slot, p);
    }

    /// Empties `slot` (its version stays) and returns the entry's bytes. Panics when `slot` is
    /// empty: callers remove only an entry they have just read.
    #[allow(clippy::expect_used)] // removing an empty slot is a caller's bug, not a page's corruption
    pub fn remove(&self, buf: &mut [u8], slot: u32) -> Vec<u8> {
        let bytes = self.entry(buf, slot).expect("removing an empty slot").to_vec();
        let need = bytes.len() + LEN_PREFIX;
        set_u32(buf, USED, get_u32(buf, USED) - need as u32);
        self.set_ptr(buf, slot, 0);
        bytes
    }

    /// Moves every live entry to the end of the page, closing the holes deletes left.
    pub fn compact(&self, buf: &mut [u8]) {
        let n = self.slot_count(buf);
        let live: Vec<(u32, Vec<u8>)> = (0..n)
            .filter_map(|s| self.entry(buf, s).map(|e| (s, e.to_vec())))
            .collect();
        let mut p = buf.len();
        for (s, e) in live {
            p -= e.len() + LEN_PREFIX;
            set_u32(buf, p, e.len() as u32);
            buf[p + LEN_PREFIX..p + LEN_PREFIX + e.len()].copy_from_slice(&e);
            self.set_ptr(buf, s, p);
        }
        set_u32(buf, FREE_POS, p as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_remove_compact_keep_entries_and_account_space() {
        for fmt in [SlotFormat::PAGINATED, SlotFormat::SINGLE_PAGE] {
            let sp = Slotted::new(fmt);
            let mut buf = vec![0u8; 1024];
            sp.init(&mut buf);
            let empty = sp.free_bytes(&buf);
            assert_eq!(empty, 1024 - HEADER);
            let mut slots = Vec::new();
            for i in 0..6u8 {
                let s = sp.add_slot(&mut buf);
                sp.put(&mut buf, s, &[i; 100]);
                slots.push(s);
            }
            assert_eq!(sp.free_bytes(&buf), empty - 6 * (fmt.slot_bytes() + 104));
            sp.remove(&mut buf, slots[1]);
            sp.remove(&mut buf, slots[3]);
            assert_eq!(sp.first_empty_slot(&buf), Some(1));
            // 300 B only fit after compaction.
            let big = vec![9u8; sp.max_entry(&buf, false)];
            assert!(big.len() > 200);
            sp.put(&mut buf, 1, &big);
            assert_eq!(sp.entry(&buf, 1).unwrap(), &big[..]);
            for (i, s) in [(0u8, 0u32), (2, 2), (4, 4), (5, 5)] {
                assert_eq!(sp.entry(&buf, s).unwrap(), &vec![i; 100][..]);
            }
            assert_eq!(sp.entry(&buf, 3), None);
            assert_eq!(sp.live(&buf), 5);
            assert_eq!(sp.max_entry(&buf, false), 0);
        }
    }
}
