//! R-trees: the memory R-tree of an LSM memory component and the packed disk R-tree of a disk
//! component, both holding [`SpatialEntry`] values.

pub mod disk;
pub mod mem;

pub use disk::DiskRTree;
pub use mem::{MemRTree, NodeId};

use crate::geom::Point;

/// An object entry of the spatial index, the triplet `<Loc, Oid, ts>` of the LSM RUM-tree paper
/// (Section 3.1): where the object is, which object it is, and the global timestamp of the
/// operation that put it there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpatialEntry {
    pub point: Point,
    pub oid: u64,
    pub ts: u64,
}

impl SpatialEntry {
    /// Bytes of one encoded entry on a page: x, y (f64), oid, ts (u64), little endian.
    pub const ENCODED_SIZE: usize = 32;

    pub fn new(point: Point, oid: u64, ts: u64) -> Self {
        SpatialEntry { point, oid, ts }
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
        let f = |r: std::ops::Range<usize>| -> [u8; 8] { b[r].try_into().expect("8 bytes") };
        SpatialEntry {
            point: Point::new(f64::from_le_bytes(f(0..8)), f64::from_le_bytes(f(8..16))),
            oid: u64::from_le_bytes(f(16..24)),
            ts: u64::from_le_bytes(f(24..32)),
        }
    }
}
