//! Exact LRU: a doubly linked list of frames in recency order, O(1) per event.
//!
//! The links live in a vector indexed by frame number (an intrusive list over the cache's slab of
//! frames), so a hit is two unlinks and a push to the front with no allocation and no search.

use super::policy::{Arrival, FrameId, Policy, PolicyDef, ReplacementPolicy};
use crate::storage::PageId;

const NIL: FrameId = FrameId::MAX;

#[derive(Clone, Copy, Debug)]
struct Link {
    prev: FrameId,
    next: FrameId,
}

const UNLINKED: Link = Link { prev: NIL, next: NIL };

/// Least recently used first. Every arrival, prefetched or not, enters as the most recently used,
/// as in the classic policy; the victim is always the page whose last use is the oldest.
#[derive(Debug)]
pub struct Lru {
    links: Vec<Link>,
    /// Most recently used frame.
    head: FrameId,
    /// Least recently used frame: the next victim.
    tail: FrameId,
}

impl Default for Lru {
    fn default() -> Self {
        Lru {
            links: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }
}

impl Lru {
    #[inline]
    fn unlink(&mut self, f: FrameId) {
        let Link { prev, next } = self.links[f as usize];
        if prev == NIL {
            self.head = next;
        } else {
            self.links[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.links[next as usize].prev = prev;
        }
    }

    #[inline]
    fn push_front(&mut self, f: FrameId) {
        let old = self.head;
        self.links[f as usize] = Link { prev: NIL, next: old };
        if old == NIL {
            self.tail = f;
        } else {
            self.links[old as usize].prev = f;
        }
        self.head = f;
    }

    /// Frames from most to least recently used (for tests).
    #[cfg(test)]
    pub(crate) fn order(&self) -> Vec<FrameId> {
        let mut out = Vec::new();
        let mut f = self.head;
        while f != NIL {
            out.push(f);
            f = self.links[f as usize].next;
        }
        out
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
        if i >= self.links.len() {
            self.links.resize(i + 1, UNLINKED);
        }
        self.push_front(frame);
    }

    /// The hit path: move `frame` to the front. It is not the head, so it has a predecessor, and
    /// the list is not empty, so there is a head to link behind it.
    #[inline]
    fn touched(&mut self, frame: FrameId) {
        let head = self.head;
        if head == frame {
            return;
        }
        let Link { prev, next } = self.links[frame as usize];
        self.links[prev as usize].next = next;
        if next == NIL {
            self.tail = prev;
        } else {
            self.links[next as usize].prev = prev;
        }
        self.links[frame as usize] = Link {
            prev: NIL,
            next: head,
        };
        self.links[head as usize].prev = frame;
        self.head = frame;
    }

    fn removed(&mut self, frame: FrameId) {
        self.unlink(frame);
        self.links[frame as usize] = UNLINKED;
    }

    /// Unlinking the frame and pushing it to the front is moving it to the front.
    #[inline]
    fn replaced(&mut self, frame: FrameId, _page: PageId, _how: Arrival) {
        self.touched(frame);
    }

    fn victim(&mut self) -> Option<FrameId> {
        (self.tail != NIL).then_some(self.tail)
    }

    fn clear(&mut self) {
        self.links.clear();
        self.head = NIL;
        self.tail = NIL;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
