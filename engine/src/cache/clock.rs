//! CLOCK (second chance): frames on a circle, one reference bit each, a hand that sweeps.
//!
//! A hit only sets the frame's reference bit. To find a victim the hand moves around the frames:
//! a referenced frame loses its bit and is passed over (its second chance), the first unreferenced
//! one is the victim (Corbató's CLOCK, as described in Tanenbaum's "Modern Operating Systems",
//! page replacement). A demand or write arrival starts referenced; a prefetched page starts
//! unreferenced, so a prefetch that is never used is the first to go.

use super::policy::{Arrival, FrameId, Policy, PolicyDef, ReplacementPolicy};
use crate::storage::PageId;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Bit {
    #[default]
    Empty,
    Unreferenced,
    Referenced,
}

/// The CLOCK policy over the cache's frames (the circle is the frame numbers in order).
#[derive(Debug, Default)]
pub struct Clock {
    bits: Vec<Bit>,
    hand: usize,
    resident: usize,
}

impl Clock {
    /// A demand or write arrival starts referenced, a prefetched page unreferenced.
    fn arrival_bit(how: Arrival) -> Bit {
        match how {
            Arrival::Prefetch => Bit::Unreferenced,
            Arrival::Demand | Arrival::Write => Bit::Referenced,
        }
    }
}

/// The policy table's row of `clock`.
pub static CLOCK: PolicyDef = PolicyDef {
    name: "clock",
    about: "CLOCK (second chance): an approximation of LRU whose hit only sets a reference bit",
    build: || Policy::Clock(Clock::default()),
};

impl ReplacementPolicy for Clock {
    fn name(&self) -> &'static str {
        "clock"
    }

    fn inserted(&mut self, frame: FrameId, _page: PageId, how: Arrival) {
        let i = frame as usize;
        if i >= self.bits.len() {
            self.bits.resize(i + 1, Bit::Empty);
        }
        debug_assert_eq!(self.bits[i], Bit::Empty, "frame {frame} inserted twice");
        self.bits[i] = Self::arrival_bit(how);
        self.resident += 1;
    }

    #[inline]
    fn touched(&mut self, frame: FrameId) {
        self.bits[frame as usize] = Bit::Referenced;
    }

    fn removed(&mut self, frame: FrameId) {
        self.bits[frame as usize] = Bit::Empty;
        self.resident -= 1;
    }

    /// The frame stays occupied: only its bit changes, to an arrival's.
    #[inline]
    fn replaced(&mut self, frame: FrameId, _page: PageId, how: Arrival) {
        let bit = &mut self.bits[frame as usize];
        debug_assert_ne!(*bit, Bit::Empty, "frame {frame} replaced while empty");
        *bit = Self::arrival_bit(how);
    }

    fn victim(&mut self) -> Option<FrameId> {
        if self.resident == 0 {
            return None;
        }
        // At most two turns: the first clears every reference bit it passes. The hand is at most
        // `n` (it is one past a frame, and the circle never shrinks but on `clear`, which resets
        // it), so wrapping it is a compare, not a division per frame passed.
        let n = self.bits.len();
        loop {
            debug_assert!(self.hand <= n);
            let i = if self.hand < n { self.hand } else { 0 };
            self.hand = i + 1;
            match self.bits[i] {
                Bit::Empty => {}
                Bit::Referenced => self.bits[i] = Bit::Unreferenced,
                Bit::Unreferenced => return Some(i as FrameId),
            }
        }
    }

    fn clear(&mut self) {
        self.bits.clear();
        self.hand = 0;
        self.resident = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn referenced_frames_get_a_second_chance() {
        let mut c = Clock::default();
        for f in 0..3 {
            c.inserted(f, f as PageId, Arrival::Demand);
        }
        // Every frame is referenced: one full turn clears them all, then frame 0 goes.
        assert_eq!(c.victim(), Some(0));
        c.removed(0);
        c.inserted(0, 10, Arrival::Demand);
        // Frame 1 is used again, so it survives the next sweep; frame 2 is the only unreferenced one.
        c.touched(1);
        assert_eq!(c.victim(), Some(2));
        c.removed(2);
        // Frame 1 lost its bit when the hand passed it; frame 0 (new, referenced) loses its bit now.
        assert_eq!(c.victim(), Some(1));
    }

    #[test]
    fn unused_prefetch_goes_first_and_empty_has_no_victim() {
        let mut c = Clock::default();
        assert_eq!(c.victim(), None);
        c.inserted(0, 1, Arrival::Demand);
        c.inserted(1, 2, Arrival::Prefetch);
        c.inserted(2, 3, Arrival::Write);
        assert_eq!(c.victim(), Some(1));
        c.removed(1);
        c.clear();
        assert_eq!(c.victim(), None);
    }
}
