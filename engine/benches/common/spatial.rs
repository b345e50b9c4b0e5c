//! The packed R-tree search's input and its `rstar` peers (`peers.rs`, and the paired rounds of
//! `paired.rs`).

use lsmlab_engine::geom::{HilbertCurve, Point, Rect};
use lsmlab_engine::rtree::{hilbert_sort, DiskRTree, SpatialEntry};
use lsmlab_engine::storage::{Device, MemDevice};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rstar::{RStarInsertionStrategy, RTreeParams, AABB};
use std::sync::Arc;

pub const EXTENT: Rect = Rect::new(0.0, 0.0, 1000.0, 1000.0);
pub const PAGE_SIZE: usize = 2048;
pub const POINTS: usize = 100_000;
/// The side fractions of the RUM-tree paper's range queries (Figure 6).
pub const SELECTIVITIES: [f64; 7] = [0.001, 0.008, 0.027, 0.064, 0.125, 0.216, 0.343];
pub const QUERIES: usize = 64;

/// `rstar` with our memory R-tree's leaf capacity (63 entries of a 2 KiB page), R* insertion.
pub struct SameNodeSize;
impl RTreeParams for SameNodeSize {
    const MIN_SIZE: usize = 25;
    const MAX_SIZE: usize = 63;
    const REINSERTION_COUNT: usize = 19;
    type DefaultInsertionStrategy = RStarInsertionStrategy;
}

pub fn points(n: usize, seed: u64) -> Vec<Point> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n)
        .map(|_| Point::new(rng.random::<f64>() * 1000.0, rng.random::<f64>() * 1000.0))
        .collect()
}

pub fn entries(pts: &[Point]) -> Vec<SpatialEntry> {
    pts.iter()
        .enumerate()
        .map(|(i, p)| SpatialEntry::new(*p, i as u64, 1))
        .collect()
}

pub fn aabb(r: &Rect) -> AABB<[f64; 2]> {
    AABB::from_corners([r.min.x, r.min.y], [r.max.x, r.max.y])
}

pub fn queries(side: f64) -> Vec<Rect> {
    points(QUERIES, 7)
        .into_iter()
        .map(|p| EXTENT.box_around(p, side))
        .collect()
}

/// Our packed R-tree of `pts`: the packing order a flush uses (one Hilbert key per entry, radix
/// sorted), then the bulk load onto a memory device.
pub fn packed(pts: &[Point]) -> (DiskRTree, Arc<dyn Device>) {
    let mut es = entries(pts);
    hilbert_sort(&HilbertCurve::new(EXTENT), &mut es);
    let device: Arc<dyn Device> = Arc::new(MemDevice::new(PAGE_SIZE));
    let tree = DiskRTree::bulk_load(device.as_ref(), es.into_iter()).unwrap();
    (tree, device)
}
