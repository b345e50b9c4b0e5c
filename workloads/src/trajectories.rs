//! Location records, the time-ordered stream they form, and the index operations it replays as.

use std::collections::{HashMap, HashSet};

use lsmlab_engine::geom::{Point, Rect};
use serde::{Deserialize, Serialize};

/// One observed location of one object: a check-in, a taxi pickup or a vehicle position.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The moving object (user, taxi, vehicle).
    pub oid: u64,
    /// Seconds since the Unix epoch (UTC). Only the order matters: the LSM RUM-tree paper replays
    /// records sorted by time and ignores the gaps between them.
    pub time: i64,
    /// x = longitude, y = latitude for every dataset here.
    pub point: Point,
}

/// One operation on a spatial secondary index (key = location, value = object id).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum SpatialOp {
    /// The object's first location.
    Insert {
        /// The object.
        oid: u64,
        /// Where it first is.
        at: Point,
    },
    /// The object moved. `from` is its previous location: the LSM RUM-tree paper's Eager strategy
    /// is fed the old location rather than looking it up in a primary index (Section 6 of the paper).
    Update {
        /// The object.
        oid: u64,
        /// Where it was.
        from: Point,
        /// Where it is now.
        to: Point,
    },
    /// The object disappears; `from` is its last location.
    Delete {
        /// The object.
        oid: u64,
        /// Where it last was.
        from: Point,
    },
}

impl SpatialOp {
    /// The object the operation is about.
    pub fn oid(&self) -> u64 {
        match *self {
            SpatialOp::Insert { oid, .. } | SpatialOp::Update { oid, .. } | SpatialOp::Delete { oid, .. } => {
                oid
            }
        }
    }
}

/// The LSM RUM-tree paper's operation stream (Section 6) over records in time order, computed one
/// operation at a time: the first record of an object is an insert, every later one an update that
/// carries the object's previous location. It keeps the last location of each object seen so far,
/// so a stream of any length needs memory for its objects only.
pub struct OpStream<I> {
    records: I,
    last: HashMap<u64, Point>,
}

impl<I: Iterator<Item = Record>> OpStream<I> {
    /// The operations of `records`, which must be in time order.
    pub fn new(records: I) -> Self {
        OpStream {
            records,
            last: HashMap::new(),
        }
    }
}

impl<I: Iterator<Item = Record>> Iterator for OpStream<I> {
    type Item = SpatialOp;

    #[inline]
    fn next(&mut self) -> Option<SpatialOp> {
        let r = self.records.next()?;
        Some(match self.last.insert(r.oid, r.point) {
            None => SpatialOp::Insert {
                oid: r.oid,
                at: r.point,
            },
            Some(from) => SpatialOp::Update {
                oid: r.oid,
                from,
                to: r.point,
            },
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.records.size_hint()
    }
}

impl<I: ExactSizeIterator<Item = Record>> ExactSizeIterator for OpStream<I> {}

/// A dataset: records of moving objects in time order, plus the extent of the space they live in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trajectories {
    /// The dataset's name: the generator's name, or a loaded file's stem.
    pub name: String,
    /// The space the objects live in. Generators use the paper's bounds (or the world for Gowalla);
    /// loaders use the bounding box of the loaded points. Query boxes are sized relative to it.
    pub extent: Rect,
    /// Sorted by time; ties keep the order in which the records were produced or read.
    pub records: Vec<Record>,
}

impl Trajectories {
    /// Builds a dataset from records in any order: sorts them by time (stably, so equal times keep
    /// their input order) and sets the extent to the records' bounding box, padded where degenerate
    /// (a single point, or all points on one line) so the extent always has a positive area.
    pub fn from_records(name: impl Into<String>, mut records: Vec<Record>) -> Self {
        records.sort_by_key(|r| r.time);
        let extent = padded_bounds(&records);
        Trajectories {
            name: name.into(),
            extent,
            records,
        }
    }

    /// The stream the LSM RUM-tree paper ingests (Section 6): records in time order, the first record
    /// of an object an insert, every later one an update that carries the object's previous location.
    pub fn to_ops(&self) -> Vec<SpatialOp> {
        self.ops().collect()
    }

    /// The same stream as [`Trajectories::to_ops`], computed as it is consumed: it holds one
    /// location per object, not one operation per record.
    pub fn ops(&self) -> OpStream<std::iter::Copied<std::slice::Iter<'_, Record>>> {
        OpStream::new(self.records.iter().copied())
    }

    /// The number of distinct objects.
    pub fn objects(&self) -> usize {
        let mut oids: HashSet<u64> = HashSet::new();
        for r in &self.records {
            oids.insert(r.oid);
        }
        oids.len()
    }

    /// Keeps the first `n` records in time order (all of them if there are fewer). The extent is
    /// left as it is: it describes the space, not the prefix.
    pub fn truncate(&mut self, n: usize) {
        self.records.truncate(n);
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there is no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// The bounding box of the records' points, widened where it has no width or height (by a
/// millionth of the coordinate's magnitude, at least 1e-9) so that query boxes sized relative to it
/// are never empty. An empty input gives [`Rect::empty`].
pub(crate) fn padded_bounds(records: &[Record]) -> Rect {
    let mut r = records
        .iter()
        .fold(Rect::empty(), |acc, rec| acc.union_point(rec.point));
    if r.is_empty() {
        return r;
    }
    if r.width() <= 0.0 {
        let pad = (r.min.x.abs().max(1.0)) * 1e-6;
        r.min.x -= pad;
        r.max.x += pad;
    }
    if r.height() <= 0.0 {
        let pad = (r.min.y.abs().max(1.0)) * 1e-6;
        r.min.y -= pad;
        r.max.y += pad;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(oid: u64, time: i64, x: f64, y: f64) -> Record {
        Record {
            oid,
            time,
            point: Point::new(x, y),
        }
    }

    #[test]
    fn from_records_sorts_stably_and_bounds() {
        let t = Trajectories::from_records(
            "t",
            vec![
                rec(1, 5, 0.0, 0.0),
                rec(2, 3, 1.0, 2.0),
                rec(3, 5, 2.0, 1.0),
                rec(4, 3, -1.0, 0.5),
            ],
        );
        let oids: Vec<u64> = t.records.iter().map(|r| r.oid).collect();
        assert_eq!(oids, vec![2, 4, 1, 3]);
        assert_eq!(t.extent, Rect::new(-1.0, 0.0, 2.0, 2.0));
        assert_eq!(t.objects(), 4);
    }

    #[test]
    fn degenerate_extent_is_padded() {
        let t = Trajectories::from_records("t", vec![rec(1, 0, 5.0, 5.0), rec(1, 1, 5.0, 5.0)]);
        assert!(t.extent.area() > 0.0);
        assert!(t.extent.contains_point(Point::new(5.0, 5.0)));
    }

    #[test]
    fn ops_insert_first_then_update_from_previous() {
        let t = Trajectories::from_records(
            "t",
            vec![
                rec(1, 0, 0.0, 0.0),
                rec(2, 1, 9.0, 9.0),
                rec(1, 2, 1.0, 1.0),
                rec(1, 3, 2.0, 2.0),
            ],
        );
        let ops = t.to_ops();
        assert_eq!(t.ops().len(), 4);
        assert_eq!(t.ops().collect::<Vec<_>>(), ops);
        assert_eq!(
            ops,
            vec![
                SpatialOp::Insert {
                    oid: 1,
                    at: Point::new(0.0, 0.0)
                },
                SpatialOp::Insert {
                    oid: 2,
                    at: Point::new(9.0, 9.0)
                },
                SpatialOp::Update {
                    oid: 1,
                    from: Point::new(0.0, 0.0),
                    to: Point::new(1.0, 1.0)
                },
                SpatialOp::Update {
                    oid: 1,
                    from: Point::new(1.0, 1.0),
                    to: Point::new(2.0, 2.0)
                },
            ]
        );
        let mut t2 = t.clone();
        t2.truncate(2);
        assert_eq!(t2.len(), 2);
        assert_eq!(t2.objects(), 2);
        assert_eq!(t2.extent, t.extent);
    }
}
