//! Chicago-taxi-like pickups: many taxis picking up passengers at census-tract centroids.
//!
//! Shape (PAPERS.md section 1): Chicago taxi trips 2019, 15,241,413 pickups in lat 41.660..42.021,
//! lon -87.914..-87.531; the public data reports pickups at ~800 census-tract centroids with very
//! skewed popularity (top centroid ~10%); the next pickup of a taxi is anywhere in the city, so
//! consecutive records of an object are unrelated (the reason the paper's Buffered and Vacuum
//! Cleaning barely shrink the Update Memo on this dataset, Table 2).
//! - popularity is Zipf-Mandelbrot, weight(rank) = (rank + 8)^-1.9, fitted to the 2013-2016 sample
//!   in `shared/data` (top centroid 10.1%, top 10 46%, top 50 88%; the fit gives 9.9%, 52%, 84%);
//! - centroids are uniform in the bounds (Lake Michigan is not carved out) and ranked by distance to
//!   the Loop with lognormal noise, so the popular ones are downtown, as in the data;
//! - each pickup picks a taxi uniformly and a centroid by popularity, independently of the taxi's
//!   previous pickup;
//! - the paper does not say how many taxis there are: by default `records / 2000` clamped to
//!   50..8,000 (8,000 is about the size of Chicago's licensed fleet);
//! - times are uniform over 2019.

use lsmlab_engine::geom::{Point, Rect};
use rand::Rng;
use rand_distr::{Distribution, LogNormal};

use super::{check_positive, check_time_range, sorted_uniform_times};
use crate::sample::CumulativeTable;
use crate::time::unix_seconds;
use crate::{seeded_rng, Record, Trajectories, WorkloadError};

/// The paper's Chicago bounds.
pub const CHICAGO: Rect = Rect::new(-87.914, 41.660, -87.531, 42.021);

/// The Loop, Chicago's downtown, where the busiest centroids are.
const LOOP: Point = Point::new(-87.6298, 41.8781);

/// Parameters of [`chicago`]; the defaults and their sources are in the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct ChicagoParams {
    pub centroids: usize,
    /// q in the Zipf-Mandelbrot popularity (rank + q)^-s.
    pub popularity_offset: f64,
    /// s in the Zipf-Mandelbrot popularity (rank + q)^-s.
    pub popularity_exponent: f64,
    /// Number of taxis; `None` scales with the records (see [`ChicagoParams::taxis_for`]).
    pub taxis: Option<usize>,
    pub start: i64,
    pub end: i64,
}

impl Default for ChicagoParams {
    fn default() -> Self {
        ChicagoParams {
            centroids: 800,
            popularity_offset: 8.0,
            popularity_exponent: 1.9,
            taxis: None,
            start: unix_seconds(2019, 1, 1, 0, 0, 0),
            end: unix_seconds(2020, 1, 1, 0, 0, 0),
        }
    }
}

impl ChicagoParams {
    /// The number of taxis used for `records` pickups: `taxis` if set, else `records / 2000`
    /// clamped to 50..=8000; never more than `records`.
    pub fn taxis_for(&self, records: usize) -> usize {
        self.taxis
            .unwrap_or_else(|| (records / 2000).clamp(50, 8000))
            .clamp(1, records.max(1))
    }
}

/// The pickup centroids, most popular first.
fn centroids(seed: u64, p: &ChicagoParams) -> Vec<Point> {
    let mut rng = seeded_rng(seed, "chicago/centroids");
    let noise = LogNormal::new(0.0, 0.5).expect("finite sigma");
    // Distances on the ground: a degree of longitude is cos(41.84 deg) = 0.745 of a degree of latitude.
    let kx = 41.84f64.to_radians().cos();
    let mut ranked: Vec<(f64, Point)> = (0..p.centroids)
        .map(|_| {
            let pt = Point::new(
                rng.random_range(CHICAGO.min.x..CHICAGO.max.x),
                rng.random_range(CHICAGO.min.y..CHICAGO.max.y),
            );
            let d = (((pt.x - LOOP.x) * kx).powi(2) + (pt.y - LOOP.y).powi(2)).sqrt();
            (d * noise.sample(&mut rng), pt)
        })
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    ranked.into_iter().map(|(_, pt)| pt).collect()
}

/// Generates `records` Chicago-like taxi pickups (see the module docs for the shape and its sources).
pub fn chicago(records: usize, seed: u64, p: &ChicagoParams) -> Result<Trajectories, WorkloadError> {
    const G: &str = "chicago";
    check_time_range(G, p.start, p.end)?;
    check_positive(G, "popularity_exponent", p.popularity_exponent)?;
    if p.centroids == 0 || p.taxis == Some(0) || !(0.0..f64::INFINITY).contains(&p.popularity_offset) {
        return Err(WorkloadError::InvalidParameter {
            generator: G,
            reason: "centroids and taxis must be at least 1 and popularity_offset non-negative".into(),
        });
    }
    let points = centroids(seed, p);
    let popularity = CumulativeTable::new(
        (1..=points.len()).map(|k| (k as f64 + p.popularity_offset).powf(-p.popularity_exponent)),
    );
    let taxis = p.taxis_for(records) as u64;
    let times = sorted_uniform_times(&mut seeded_rng(seed, "chicago/times"), records, p.start, p.end);
    let mut rng = seeded_rng(seed, "chicago/pickups");
    let records = times
        .into_iter()
        .map(|time| {
            let oid = rng.random_range(0..taxis);
            Record {
                oid,
                time,
                point: points[popularity.sample(&mut rng)],
            }
        })
        .collect();
    Ok(Trajectories {
        name: G.to_string(),
        extent: CHICAGO,
        records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::test_support::check_common;
    use std::collections::{BTreeMap, HashMap};

    #[test]
    fn deterministic_exact_and_ordered() {
        let p = ChicagoParams::default();
        let a = chicago(30_000, 7, &p).unwrap();
        assert_eq!(a, chicago(30_000, 7, &p).unwrap());
        assert_ne!(a.records, chicago(30_000, 8, &p).unwrap().records);
        check_common(&a, 30_000);
        assert_eq!(a.objects(), 50);
        assert_eq!(p.taxis_for(15_241_413), 7_620);
        assert_eq!(p.taxis_for(10), 10);
        for n in [1, 2, 49, 51] {
            check_common(&chicago(n, 1, &p).unwrap(), n);
        }
    }

    #[test]
    fn popularity_is_skewed() {
        let t = chicago(200_000, 11, &ChicagoParams::default()).unwrap();
        let mut per_point = BTreeMap::<(u64, u64), usize>::new();
        for r in &t.records {
            *per_point
                .entry((r.point.x.to_bits(), r.point.y.to_bits()))
                .or_default() += 1;
        }
        let mut counts: Vec<usize> = per_point.values().copied().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top = counts[0] as f64 / t.records.len() as f64;
        assert!((0.05..0.20).contains(&top), "top centroid share {top}");
        assert!(
            counts.len() <= 800 && counts.len() > 300,
            "{} centroids used",
            counts.len()
        );
    }

    #[test]
    fn consecutive_pickups_of_a_taxi_are_not_local() {
        let t = chicago(100_000, 13, &ChicagoParams::default()).unwrap();
        let dist = |a: Point, b: Point| ((a.x - b.x).powi(2) + (a.y - b.y).powi(2)).sqrt();
        let mut last = HashMap::new();
        let (mut consecutive, mut n) = (0.0, 0usize);
        for r in &t.records {
            if let Some(prev) = last.insert(r.oid, r.point) {
                consecutive += dist(prev, r.point);
                n += 1;
            }
        }
        let consecutive = consecutive / n as f64;
        // Baseline: two pickups far apart in the stream, which are unrelated by construction.
        let half = t.records.len() / 2;
        let baseline = (0..half)
            .map(|i| dist(t.records[i].point, t.records[i + half].point))
            .sum::<f64>()
            / half as f64;
        let ratio = consecutive / baseline;
        assert!(
            (0.9..1.1).contains(&ratio),
            "consecutive {consecutive} vs unrelated {baseline}"
        );
    }
}
