//! Exact LRU by access stamps: a hit writes one number, the victim search reorders lazily.
//!
//! Every event that makes a frame the most recently used (its page arrived, was read again, or was
//! written in place) gives the frame the next stamp of a counter that only grows. A hit does
//! nothing else: one store, no list surgery (the doubly linked list this replaces moved the frame
//! to the front on every hit, rewriting its two neighbours' links). The order is restored only
//! when a victim is wanted, and only as far as needed:
//!
//! - each resident frame has one *entry*, `(key, frame)`, whose key is a stamp the frame had: the
//!   stamp of its arrival, or a later one. The entry is *fresh* while the key is still the frame's
//!   current stamp, *stale* once the frame was used again since;
//! - an arriving page's entry goes to the back of a FIFO (`arrivals`). Its key is the newest stamp,
//!   so the FIFO is sorted by key;
//! - the victim search looks at the FIFO's front: a stale entry moves, re-keyed with the frame's
//!   current stamp, to a min-heap (`reused`); it looks at the heap's top: a stale entry is re-keyed
//!   in place (and sinks). Once both the front and the top are fresh, the victim is the one with
//!   the smaller key. Entries of frames whose page left are *dead* and dropped where they are met.
//!
//! Why this is exact LRU, the linked list's order bit for bit: the list's order is the order of
//! each resident frame's last arrival or use (each of them moves the frame to the front, nothing
//! else reorders it), which is the order of the frames' current stamps (stamps are handed out in
//! event order and never repeat). Say the search ends with fresh front `a` and fresh top `b`, and
//! `m` is the one with the smaller key. Every other resident frame `x` has its one entry behind `a`
//! in the sorted FIFO or under `b` in the heap, so `stamp(x) >= key(x) >= min(key(a), key(b)) =
//! stamp(m)`, and the inequality is strict as stamps never repeat: `m` is the frame whose last use
//! is the oldest, the list's tail. Each re-keying follows at least one hit, so the search costs
//! O(log n) amortised per hit, and nothing on a hit-only workload.
//!
//! An entry is dead when its frame has no page (current stamp [`EMPTY`]) or its key is older than
//! the frame's page's arrival (a page that left before the frame was reused). Dead entries are
//! dropped when the search meets them or, so that a cache that invalidates more than it evicts
//! does not hoard them, when the entries outnumber twice the resident frames (plus a slack): each
//! arrival adds one entry, so that compaction costs O(1) amortised per arrival. The list policy
//! this replaces is kept as the oracle of a test (`tests::matches_the_linked_list_oracle`) that
//! drives both with random events and checks that they name the same victims.

use super::policy::{Arrival, FrameId, Policy, PolicyDef, ReplacementPolicy};
use crate::storage::PageId;
use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

/// A frame's current stamp while it holds no page (handed-out stamps start at 1).
const EMPTY: u64 = 0;

/// Entries kept beyond twice the resident frames before dead ones are compacted away, so that a
/// small cache does not compact on every other arrival.
const ENTRY_SLACK: usize = 64;

/// A frame's stamps.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// The stamp of the frame's last use ([`EMPTY`] without a page): written by every hit.
    used: u64,
    /// The stamp its page arrived with.
    arrived: u64,
}

/// A frame's place in the victim search: ordered by key (the frame breaks no ties, keys are
/// unique).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    key: u64,
    frame: FrameId,
}

/// What an entry is worth, given its frame's stamps.
enum State {
    /// The frame's current stamp: the entry is in its place.
    Fresh,
    /// The frame was used since; its current stamp is the entry's rightful key.
    Stale(u64),
    /// The frame's page left after the entry was made.
    Dead,
}

/// Least recently used first. Every arrival, prefetched or not, enters as the most recently used,
/// as in the classic policy; the victim is always the page whose last use is the oldest.
#[derive(Debug, Default)]
pub struct Lru {
    /// Frame -> its stamps.
    slots: Vec<Slot>,
    /// Entries of arrivals, sorted by key (each arrived with the newest stamp).
    arrivals: VecDeque<Entry>,
    /// Entries of frames used again after they arrived, keyed by a later stamp: a min-heap.
    reused: BinaryHeap<Reverse<Entry>>,
    /// The last stamp handed out.
    now: u64,
    /// Frames holding a page.
    resident: usize,
}

impl Lru {
    #[inline]
    fn state(&self, e: Entry) -> State {
        let slot = self.slots[e.frame as usize];
        if slot.used == EMPTY || e.key < slot.arrived {
            State::Dead
        } else if e.key == slot.used {
            State::Fresh
        } else {
            State::Stale(slot.used)
        }
    }

    /// A page arrived in `frame` (empty, or just vacated by its victim): its stamps and its entry.
    #[inline]
    fn arrive(&mut self, frame: FrameId) {
        if self.arrivals.len() + self.reused.len() >= 2 * self.resident + ENTRY_SLACK {
            self.compact();
        }
        self.now += 1;
        self.slots[frame as usize] = Slot {
            used: self.now,
            arrived: self.now,
        };
        self.arrivals.push_back(Entry { key: self.now, frame });
    }

    /// Drops the dead entries (each resident frame keeps its one entry).
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        let slots = &self.slots;
        let alive = |e: &Entry| {
            let slot = slots[e.frame as usize];
            slot.used != EMPTY && e.key >= slot.arrived
        };
        self.arrivals.retain(alive);
        self.reused.retain(|Reverse(e)| alive(e));
    }

    /// The FIFO's first fresh entry, after moving the stale ones before it to the heap.
    #[inline]
    fn fresh_arrival(&mut self) -> Option<Entry> {
        while let Some(&e) = self.arrivals.front() {
            match self.state(e) {
                State::Fresh => return Some(e),
                State::Stale(key) => self.reused.push(Reverse(Entry { key, frame: e.frame })),
                State::Dead => {}
            }
            self.arrivals.pop_front();
        }
        None
    }

    /// The heap's top once it is fresh: stale tops are re-keyed (and sink), dead ones dropped.
    #[inline]
    fn fresh_reused(&mut self) -> Option<Entry> {
        loop {
            let top = self.reused.peek()?.0;
            match self.state(top) {
                State::Fresh => return Some(top),
                State::Stale(key) => {
                    if let Some(mut top) = self.reused.peek_mut() {
                        top.0.key = key;
                    }
                }
                State::Dead => {
                    if let Some(top) = self.reused.peek_mut() {
                        PeekMut::pop(top);
                    }
                }
            }
        }
    }

    /// Frames from most to least recently used (for tests).
    #[cfg(test)]
    pub(crate) fn order(&self) -> Vec<FrameId> {
        let mut live: Vec<(u64, FrameId)> = (self.arrivals.iter().copied())
            .chain(self.reused.iter().map(|r| r.0))
            .filter(|&e| !matches!(self.state(e), State::Dead))
            .map(|e| (self.slots[e.frame as usize].used, e.frame))
            .collect();
        live.sort_unstable_by(|a, b| b.cmp(a));
        live.into_iter().map(|(_, f)| f).collect()
    }
}

/// The policy table's row of `lru`.
pub static LRU: PolicyDef = PolicyDef {
    name: "lru",
    about: "exact least-recently-used: the page unused longest leaves (the counted figures' policy)",
    build: || Policy::Lru(Lru::default()),
};

impl ReplacementPolicy for Lru {
    fn name(&self) -> &'static str {
        "lru"
    }

    fn inserted(&mut self, frame: FrameId, _page: PageId, _how: Arrival) {
        let i = frame as usize;
        if i >= self.slots.len() {
            self.slots.resize(i + 1, Slot::default());
        }
        debug_assert_eq!(self.slots[i].used, EMPTY, "frame {frame} inserted twice");
        self.resident += 1;
        self.arrive(frame);
    }

    /// The hit path: the frame's next stamp, nothing more.
    #[inline]
    fn touched(&mut self, frame: FrameId) {
        self.now += 1;
        self.slots[frame as usize].used = self.now;
    }

    fn removed(&mut self, frame: FrameId) {
        self.slots[frame as usize].used = EMPTY;
        self.resident -= 1;
    }

    /// A new arrival in the same frame, which stays resident: the old page's entry is dead (its key
    /// is older than the new arrival).
    #[inline]
    fn replaced(&mut self, frame: FrameId, _page: PageId, _how: Arrival) {
        self.arrive(frame);
    }

    /// The fresh entry with the smaller key of the FIFO's front and the heap's top. The frame keeps
    /// its entry: it is only removed once the cache calls [`ReplacementPolicy::removed`].
    fn victim(&mut self) -> Option<FrameId> {
        let arrival = self.fresh_arrival();
        let reused = self.fresh_reused();
        match (arrival, reused) {
            (Some(a), Some(r)) => Some(if a.key < r.key { a.frame } else { r.frame }),
            (a, r) => a.or(r).map(|e| e.frame),
        }
    }

    fn clear(&mut self) {
        self.slots.clear();
        self.arrivals.clear();
        self.reused.clear();
        self.resident = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn keeps_recency_order_through_touches_and_removals() {
        let mut p = Lru::default();
        for f in 0..4 {
            p.inserted(f, f as PageId, Arrival::Demand);
        }
        assert_eq!(p.order(), [3, 2, 1, 0]);
        p.touched(1);
        p.touched(1);
        assert_eq!(p.order(), [1, 3, 2, 0]);
        assert_eq!(p.victim(), Some(0));
        p.removed(0);
        assert_eq!(p.victim(), Some(2));
        p.removed(3);
        assert_eq!(p.order(), [1, 2]);
        p.touched(2);
        assert_eq!(p.victim(), Some(1));
        p.removed(1);
        p.removed(2);
        assert_eq!(p.victim(), None);
        p.inserted(2, 9, Arrival::Write);
        assert_eq!(p.order(), [2]);
    }

    /// The exact LRU this policy replaced: a doubly linked list of frames in recency order (a hit
    /// moves its frame to the front, the victim is the tail). Kept as the oracle of exactness.
    struct ListLru {
        links: Vec<(FrameId, FrameId)>,
        head: FrameId,
        tail: FrameId,
    }

    const NIL: FrameId = FrameId::MAX;

    impl ListLru {
        fn new() -> Self {
            ListLru {
                links: Vec::new(),
                head: NIL,
                tail: NIL,
            }
        }

        fn unlink(&mut self, f: FrameId) {
            let (prev, next) = self.links[f as usize];
            if prev == NIL {
                self.head = next;
            } else {
                self.links[prev as usize].1 = next;
            }
            if next == NIL {
                self.tail = prev;
            } else {
                self.links[next as usize].0 = prev;
            }
            self.links[f as usize] = (NIL, NIL);
        }

        fn push_front(&mut self, f: FrameId) {
            if f as usize >= self.links.len() {
                self.links.resize(f as usize + 1, (NIL, NIL));
            }
            let old = self.head;
            self.links[f as usize] = (NIL, old);
            if old == NIL {
                self.tail = f;
            } else {
                self.links[old as usize].0 = f;
            }
            self.head = f;
        }

        fn order(&self) -> Vec<FrameId> {
            let mut out = Vec::new();
            let mut f = self.head;
            while f != NIL {
                out.push(f);
                f = self.links[f as usize].1;
            }
            out
        }
    }

    /// Random events (arrivals of every kind, hits, removals, replacements of a victim, victim
    /// queries that are not acted on, clears) on frames used the way the cache uses them: a new
    /// frame is a free one or the next unused number. After every event both policies name the
    /// same victim and, every so often, the same whole order. Long runs on few frames re-key and
    /// compact entries many times.
    #[test]
    fn matches_the_linked_list_oracle() {
        for seed in 0..64u64 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let frames: u32 = [1, 2, 3, 8, 40, 300][seed as usize % 6];
            let mut lru = Lru::default();
            let mut list = ListLru::new();
            let mut resident: Vec<FrameId> = Vec::new();
            let mut free: Vec<FrameId> = Vec::new();
            let mut next_frame: FrameId = 0;
            for step in 0..20_000u32 {
                let arrival = |r: &mut Xoshiro256PlusPlus| match r.random_range(0..3) {
                    0 => Arrival::Demand,
                    1 => Arrival::Prefetch,
                    _ => Arrival::Write,
                };
                let len_before = lru.arrivals.len() + lru.reused.len();
                match rng.random_range(0..100) {
                    // A page arrives in a free frame (the last freed first, as the cache does).
                    0..=19 if (resident.len() as u32) < frames => {
                        let f = free.pop().unwrap_or_else(|| {
                            next_frame += 1;
                            next_frame - 1
                        });
                        let how = arrival(&mut rng);
                        lru.inserted(f, step as PageId, how);
                        list.push_front(f);
                        resident.push(f);
                    }
                    // A hit on a random resident page.
                    20..=69 if !resident.is_empty() => {
                        let f = resident[rng.random_range(0..resident.len())];
                        lru.touched(f);
                        list.unlink(f);
                        list.push_front(f);
                    }
                    // A miss in a full cache: the victim's frame takes the arriving page.
                    70..=84 if !resident.is_empty() => {
                        let f = lru.victim().unwrap();
                        assert_eq!(Some(f), (list.tail != NIL).then_some(list.tail));
                        let how = arrival(&mut rng);
                        lru.replaced(f, step as PageId, how);
                        list.unlink(f);
                        list.push_front(f);
                    }
                    // An eviction, an invalidation or a `BufferCache::evict` of any resident page.
                    85..=96 if !resident.is_empty() => {
                        let i = if rng.random_bool(0.5) {
                            let v = lru.victim().unwrap();
                            resident.iter().position(|&f| f == v).unwrap()
                        } else {
                            rng.random_range(0..resident.len())
                        };
                        let f = resident.swap_remove(i);
                        lru.removed(f);
                        list.unlink(f);
                        free.push(f);
                    }
                    97 => {
                        lru.clear();
                        list = ListLru::new();
                        resident.clear();
                        free.clear();
                        next_frame = 0;
                    }
                    // A victim named and then kept (its dirty write-back failed).
                    _ => {}
                }
                let tail = (list.tail != NIL).then_some(list.tail);
                assert_eq!(lru.victim(), tail, "seed {seed}, step {step}");
                if step % 97 == 0 {
                    assert_eq!(lru.order(), list.order(), "seed {seed}, step {step}");
                }
                // The entries stay within their bound whenever they grow (removals only make entries
                // dead; the next arrival compacts them away if the bound is passed).
                let len = lru.arrivals.len() + lru.reused.len();
                if len > len_before {
                    assert!(len <= 2 * lru.resident + ENTRY_SLACK, "seed {seed}, step {step}");
                }
            }
        }
    }
}
