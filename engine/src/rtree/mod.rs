//! R-trees: the memory R-tree of an LSM memory component and the packed disk R-tree of a disk
//! component, both holding [`SpatialEntry`] values.

pub(crate) mod disk;
mod mem;
mod pack;

pub use disk::DiskRTree;
pub use mem::{MemRTree, NodeId};
pub use pack::hilbert_sort;

use crate::geom::Point;

/// An object entry of the spatial index, the triplet `<Loc, Oid, ts>` of the LSM RUM-tree paper
/// (Section 3.1): where the object is, which object it is, and the global timestamp of the
/// operation that put it there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpatialEntry {
    /// The object's location.
    pub point: Point,
    /// The object's id.
    pub oid: u64,
    /// The global timestamp of the operation that wrote this entry (maybe with [`Self::SUPERSEDED`] set).
    pub ts: u64,
}

impl SpatialEntry {
    /// Bytes of one encoded entry on a page: x, y (f64), oid, ts (u64), little endian.
    pub const ENCODED_SIZE: usize = 32;

    /// The bit of `ts` that marks a superseded entry: one that the authors' `LSMRTree`
    /// (`Eager(buddy)`, `Validation`) wrote to disk although a newer version of its object (or its
    /// deletion) was already in memory. Such an entry occupies its page and is read as a candidate
    /// like any other, but is never a query result. Timestamps stay below 2^63 (the clock counts
    /// operations), so the bit is free.
    pub const SUPERSEDED: u64 = 1 << 63;

    /// The bit of `ts` that marks an antimatter entry: the tombstone of the entry `<point, oid,
    /// ts>` (same point, object and stamp) in an older component, kept in the R-tree itself as
    /// AsterixDB's LSM R-tree with antimatter tuples keeps them (`LSMRTreeWithAntiMatterTuples`).
    /// It shadows its target at query time, is never a query result, and annihilates with its
    /// target when a merge brings both together. Timestamps stay below 2^62, so the bit is free.
    pub const ANTIMATTER: u64 = 1 << 62;

    /// The entry `<point, oid, ts>`.
    pub fn new(point: Point, oid: u64, ts: u64) -> Self {
        SpatialEntry { point, oid, ts }
    }

    /// Marks the entry superseded (see [`Self::SUPERSEDED`]).
    pub fn mark_superseded(&mut self) {
        self.ts |= Self::SUPERSEDED;
    }

    /// Whether the entry is marked superseded.
    pub fn is_superseded(&self) -> bool {
        self.ts & Self::SUPERSEDED != 0
    }

    /// The antimatter entry of `self`: same point, object and stamp, marked [`Self::ANTIMATTER`].
    pub fn antimatter(&self) -> Self {
        SpatialEntry {
            ts: self.stamp() | Self::ANTIMATTER,
            ..*self
        }
    }

    /// Whether the entry is antimatter (see [`Self::ANTIMATTER`]).
    pub fn is_antimatter(&self) -> bool {
        self.ts & Self::ANTIMATTER != 0
    }

    /// The operation's timestamp, without the superseded and antimatter marks.
    pub fn stamp(&self) -> u64 {
        self.ts & !(Self::SUPERSEDED | Self::ANTIMATTER)
    }

    /// Writes the entry into `out[..ENCODED_SIZE]`.
    pub fn encode(&self, out: &mut [u8]) {
        out[0..8].copy_from_slice(&self.point.x.to_le_bytes());
        out[8..16].copy_from_slice(&self.point.y.to_le_bytes());
        out[16..24].copy_from_slice(&self.oid.to_le_bytes());
        out[24..32].copy_from_slice(&self.ts.to_le_bytes());
    }

    /// Reads an entry from `b[..ENCODED_SIZE]`.
    pub fn decode(b: &[u8]) -> Self {
        use crate::bytes::{f64_le, u64_le};
        SpatialEntry {
            point: Point::new(f64_le(b, 0), f64_le(b, 8)),
            oid: u64_le(b, 16),
            ts: u64_le(b, 24),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_superseded_mark_survives_encoding_and_leaves_the_stamp() {
        let mut e = SpatialEntry::new(Point::new(1.5, -2.0), 7, 42);
        assert!(!e.is_superseded());
        e.mark_superseded();
        let mut buf = [0u8; SpatialEntry::ENCODED_SIZE];
        e.encode(&mut buf);
        let d = SpatialEntry::decode(&buf);
        assert_eq!(d, e);
        assert!(d.is_superseded());
        assert_eq!((d.oid, d.stamp()), (7, 42));
    }

    #[test]
    fn the_antimatter_mark_survives_encoding_and_leaves_the_stamp() {
        let e = SpatialEntry::new(Point::new(1.5, -2.0), 7, 42);
        let a = e.antimatter();
        assert!(!e.is_antimatter() && a.is_antimatter() && !a.is_superseded());
        let mut buf = [0u8; SpatialEntry::ENCODED_SIZE];
        a.encode(&mut buf);
        let d = SpatialEntry::decode(&buf);
        assert_eq!(d, a);
        assert_eq!((d.point, d.oid, d.stamp()), (e.point, 7, 42));
    }
}
