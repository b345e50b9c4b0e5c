//! Chicago-taxi-like pickups: many taxis picking up passengers at census-tract centroids.
//!
//! Shape (`docs/papers/rum.md#the-paper-in-brief`): Chicago taxi trips 2019, 15,241,413 pickups in
//! lat 41.660..42.021, lon -87.914..-87.531. The data portal publishes no exact pickup point:
//! "Pickup Centroid Latitude/Longitude" is the centroid of the pickup's census tract, or of its
//! community area when the tract is hidden for privacy. Popularity is very skewed (top point ~10%),
//! and the next pickup of a taxi is anywhere in the city, so consecutive records of an object are
//! unrelated (the reason the paper's Buffered and Vacuum Cleaning barely shrink the Update Memo on
//! this dataset, Table 2).
//!
//! What the 2013-2016 sample in `shared/data` shows (15,000 trips with coordinates): every pickup
//! sits exactly on one of only 236 distinct points, none in between; each point belongs to one
//! community area (62 areas seen); the top point has 10.1% of the pickups, the top 10 46%, the top 50
//! 88%, the top 100 97%; the busiest points are community-area centroids (the Loop's, Near North
//! Side's, O'Hare's). The generator follows that structure:
//! - 77 community-area centroids, uniform in the bounds (Lake Michigan is not carved out), and 800
//!   tract centroids (`docs/papers/rum.md`: about 800), tract `i` in area `i mod 77`, each a
//!   Gaussian of `tract_sigma_m` = 840 m around its area's centroid. Measured: in the sample, a
//!   community area's other points lie a median 985 m from its busiest point, and a 2-D Gaussian's
//!   median radius is 1.177 sigma;
//! - tract popularity is Zipf-Mandelbrot, weight(rank) = (rank + q)^-s, tracts ranked by distance to
//!   the Loop with lognormal noise so the popular ones are downtown; q = 34 and s = 3.6 are fitted
//!   so that the points' top-k shares match the sample's (the fit is on the constants below; the
//!   test `chicago_generator_matches_the_sample` in `tests/generator_shapes.rs` checks it);
//! - a pickup's tract is hidden, and the pickup reported at its community area's centroid, with
//!   probability `community_share` = 0.4: in the sample, 40.4% of the pickups sit on their
//!   community area's busiest point, which is the area's centroid where the centroid is known
//!   (a proxy: the sample's tract column is blank, so hidden tracts cannot be counted directly);
//! - `spread_share` of the pickups are moved off their centroid, uniformly within `spread_radius_m`
//!   = 480 m (the radius of a disc of one tract's mean area: Chicago's ~589 km2 of land over ~800
//!   tracts), for studies that want distinct pickup points. The default is 0 because the data has
//!   none: the real stream, like the sample, has fewer than 900 distinct points (800 tracts plus 77
//!   areas), so that is the faithful shape;
//! - each pickup picks a taxi and a point independently of the taxi's previous pickup; every taxi
//!   has at least one pickup and the others are dealt uniformly, so the stream has exactly `taxis`
//!   objects;
//! - times are uniform over 2019.

use lsmlab_engine::geom::{Point, Rect};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_distr::{Distribution, LogNormal};

use super::{
    check_positive, check_probability, check_time_range, resolve_objects, scaled_objects,
    sorted_uniform_times,
};
use crate::sample::{unit_normal, CumulativeTable};
use crate::time::unix_seconds;
use crate::{seeded_rng, Record, Trajectories, WorkloadError};

/// Pickups in the paper's Chicago 2019 taxi dataset (`docs/papers/rum.md#the-paper-in-brief`).
pub const PAPER_RECORDS: usize = 15_241_413;

/// Distinct taxis in the 2019 trips: an estimate, since no published count of 2019's distinct
/// `taxi_id`s was found. Chicago caps taxi medallions at 6,999 (Chicago Tribune, 2018-08-23, "Nearly
/// half of the city's 6,999 licensed cabs are in foreclosure or idled"; the portal's Taxi ID is one
/// per medallion), which bounds the count from above; about half of them (~3,600) were working in
/// 2018, which bounds a year's distinct ids from below, since cabs come and go over a year. 5,000 is
/// the middle of that range, and ~3,000 trips per taxi over the year.
pub const PAPER_TAXIS: usize = 5_000;

/// The paper's Chicago bounds.
pub const CHICAGO: Rect = Rect::new(-87.914, 41.660, -87.531, 42.021);

/// The Loop, Chicago's downtown, where the busiest centroids are.
const LOOP: Point = Point::new(-87.6298, 41.8781);

/// Metres per degree of latitude (spherical Earth).
const METRES_PER_DEG_LAT: f64 = 111_320.0;

/// Degrees of longitude per degree of latitude at Chicago (41.84 deg N), for distances on the ground.
fn lon_scale() -> f64 {
    41.84f64.to_radians().cos()
}

/// Parameters of [`chicago`]; the defaults and their sources are in the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct ChicagoParams {
    /// Number of taxis (distinct objects); `None` keeps the paper's pickups per taxi (see
    /// [`ChicagoParams::taxis_for`]).
    pub taxis: Option<usize>,
    /// Chicago's community areas: the coarse places pickups are drawn around.
    pub community_areas: usize,
    /// Census-tract centroids, spread over the community areas.
    pub tracts: usize,
    /// Standard deviation of a tract centroid around its community area's centroid, metres.
    pub tract_sigma_m: f64,
    /// q in the Zipf-Mandelbrot tract popularity (rank + q)^-s.
    pub popularity_offset: f64,
    /// s in the Zipf-Mandelbrot tract popularity (rank + q)^-s.
    pub popularity_exponent: f64,
    /// Probability that a pickup's tract is hidden and it is reported at its community area's centroid.
    pub community_share: f64,
    /// Probability that a pickup is moved off its centroid (0: every pickup on a centroid, as published).
    pub spread_share: f64,
    /// Radius of the disc a moved pickup lands in uniformly, metres.
    pub spread_radius_m: f64,
    /// Start of the pickups' time range, Unix seconds.
    pub start: i64,
    /// End of the pickups' time range, Unix seconds.
    pub end: i64,
}

impl Default for ChicagoParams {
    fn default() -> Self {
        ChicagoParams {
            taxis: None,
            community_areas: 77,
            tracts: 800,
            tract_sigma_m: 840.0,
            popularity_offset: POPULARITY_OFFSET,
            popularity_exponent: POPULARITY_EXPONENT,
            community_share: 0.4,
            spread_share: 0.0,
            spread_radius_m: 480.0,
            start: unix_seconds(2019, 1, 1, 0, 0, 0),
            end: unix_seconds(2020, 1, 1, 0, 0, 0),
        }
    }
}

/// Fitted to the sample's point shares: over a grid of q in 2..34 and s in 1.3..4.0 (15,000
/// pickups, 4 seeds each), q = 34, s = 3.6 gives top-1/10/50/100 shares of 10.4/46.1/88.6/96.6%
/// against the sample's 10.1/46.3/87.9/96.7%, and 284 distinct points against its 236. The top
/// share depends on the seed's layout (which area's tracts lie nearest the Loop): over seeds 1-20
/// at 40,000 pickups it is 6-17%, mean 11.6%, and the top 10's 41-54%, mean 47.6%.
const POPULARITY_OFFSET: f64 = 34.0;
const POPULARITY_EXPONENT: f64 = 3.6;

impl ChicagoParams {
    /// The number of taxis used for `records` pickups: `taxis` if set, else the paper's pickups per
    /// taxi (`PAPER_RECORDS` / `PAPER_TAXIS`), at least 50 and at most `records`
    /// ([`crate::gen::default_objects`]).
    pub fn taxis_for(&self, records: usize) -> usize {
        self.taxis
            .unwrap_or_else(|| scaled_objects(records, PAPER_TAXIS, PAPER_RECORDS))
    }
}

/// The places pickups are reported at.
struct Places {
    /// Community-area centroids.
    areas: Vec<Point>,
    /// Tract centroids, most popular first, with the index of their community area.
    tracts: Vec<(Point, u32)>,
}

fn places(seed: u64, p: &ChicagoParams) -> Places {
    let mut rng = seeded_rng(seed, "chicago/centroids");
    #[allow(clippy::expect_used)] // constant parameters: a finite mu and a positive sigma
    let noise = LogNormal::new(0.0, 0.5).expect("finite sigma");
    let unit = unit_normal();
    let kx = lon_scale();
    let areas: Vec<Point> = (0..p.community_areas)
        .map(|_| {
            Point::new(
                rng.random_range(CHICAGO.min.x..CHICAGO.max.x),
                rng.random_range(CHICAGO.min.y..CHICAGO.max.y),
            )
        })
        .collect();
    let sigma_lat = p.tract_sigma_m / METRES_PER_DEG_LAT;
    let mut ranked: Vec<(f64, Point, u32)> = (0..p.tracts)
        .map(|i| {
            let a = i % areas.len();
            let pt = Point::new(
                (areas[a].x + sigma_lat / kx * unit.sample(&mut rng)).clamp(CHICAGO.min.x, CHICAGO.max.x),
                (areas[a].y + sigma_lat * unit.sample(&mut rng)).clamp(CHICAGO.min.y, CHICAGO.max.y),
            );
            let d = (((pt.x - LOOP.x) * kx).powi(2) + (pt.y - LOOP.y).powi(2)).sqrt();
            (d * noise.sample(&mut rng), pt, a as u32)
        })
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    Places {
        areas,
        tracts: ranked.into_iter().map(|(_, pt, a)| (pt, a)).collect(),
    }
}

/// The taxi of each pickup: every taxi once, the rest uniform, in random order.
fn taxi_sequence(records: usize, taxis: usize, seed: u64) -> Vec<u32> {
    let mut rng = seeded_rng(seed, "chicago/taxis");
    let mut oids: Vec<u32> = (0..taxis as u32).collect();
    oids.extend((taxis..records).map(|_| rng.random_range(0..taxis as u32)));
    oids.shuffle(&mut rng);
    oids
}

/// Generates `records` Chicago-like taxi pickups (see the module docs for the shape and its sources).
pub fn chicago(records: usize, seed: u64, p: &ChicagoParams) -> Result<Trajectories, WorkloadError> {
    const G: &str = "chicago";
    check_time_range(G, p.start, p.end)?;
    check_positive(G, "popularity_exponent", p.popularity_exponent)?;
    check_positive(G, "tract_sigma_m", p.tract_sigma_m)?;
    check_positive(G, "spread_radius_m", p.spread_radius_m)?;
    check_probability(G, "community_share", p.community_share)?;
    check_probability(G, "spread_share", p.spread_share)?;
    if p.tracts == 0 || p.community_areas == 0 || !(0.0..f64::INFINITY).contains(&p.popularity_offset) {
        return Err(WorkloadError::InvalidParameter {
            generator: G,
            reason: format!(
                "tracts ({}) and community_areas ({}) must be at least 1 and popularity_offset ({}) \
                 non-negative",
                p.tracts, p.community_areas, p.popularity_offset
            ),
        });
    }
    let taxis = resolve_objects(G, "taxis", records, p.taxis, p.taxis_for(records))?;
    let places = places(seed, p);
    let popularity = CumulativeTable::new(
        (1..=places.tracts.len()).map(|k| (k as f64 + p.popularity_offset).powf(-p.popularity_exponent)),
    );
    let oids = taxi_sequence(records, taxis, seed);
    let times = sorted_uniform_times(&mut seeded_rng(seed, "chicago/times"), records, p.start, p.end);
    let mut rng = seeded_rng(seed, "chicago/pickups");
    let (spread_lat, kx) = (p.spread_radius_m / METRES_PER_DEG_LAT, lon_scale());
    let records = times
        .into_iter()
        .zip(oids)
        .map(|(time, oid)| {
            let (tract, area) = places.tracts[popularity.sample(&mut rng)];
            let mut point = if rng.random::<f64>() < p.community_share {
                places.areas[area as usize]
            } else {
                tract
            };
            if p.spread_share > 0.0 && rng.random::<f64>() < p.spread_share {
                let r = spread_lat * rng.random::<f64>().sqrt();
                let angle = std::f64::consts::TAU * rng.random::<f64>();
                point = Point::new(
                    (point.x + r * angle.cos() / kx).clamp(CHICAGO.min.x, CHICAGO.max.x),
                    (point.y + r * angle.sin()).clamp(CHICAGO.min.y, CHICAGO.max.y),
                );
            }
            Record {
                oid: u64::from(oid),
                time,
                point,
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
        assert_eq!(p.taxis_for(15_241_413), PAPER_TAXIS);
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
        // Every pickup on a tract or community-area centroid.
        assert!(
            counts.len() <= 877 && counts.len() > 300,
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

    #[test]
    fn hidden_tracts_and_spread_place_pickups_as_configured() {
        let distinct = |t: &Trajectories| {
            let mut pts: Vec<(u64, u64)> = t
                .records
                .iter()
                .map(|r| (r.point.x.to_bits(), r.point.y.to_bits()))
                .collect();
            pts.sort_unstable();
            pts.dedup();
            pts.len()
        };
        // Every tract hidden: only community-area centroids.
        let all_areas = ChicagoParams {
            community_share: 1.0,
            ..ChicagoParams::default()
        };
        let t = chicago(20_000, 3, &all_areas).unwrap();
        assert!(distinct(&t) <= 77, "{}", distinct(&t));
        // No tract hidden: only tract centroids.
        let no_areas = ChicagoParams {
            community_share: 0.0,
            ..ChicagoParams::default()
        };
        assert!(distinct(&chicago(20_000, 3, &no_areas).unwrap()) <= 800);
        // Every pickup spread: (almost) all distinct, each within the radius of a centroid.
        let spread = ChicagoParams {
            spread_share: 1.0,
            ..ChicagoParams::default()
        };
        let t = chicago(20_000, 3, &spread).unwrap();
        check_common(&t, 20_000);
        assert!(distinct(&t) > 19_900, "{}", distinct(&t));
        let places = places(3, &spread);
        let centroids: Vec<Point> = places
            .areas
            .iter()
            .copied()
            .chain(places.tracts.iter().map(|&(pt, _)| pt))
            .collect();
        let kx = lon_scale();
        for r in t.records.iter().take(500) {
            let nearest = centroids
                .iter()
                .map(|c| (((c.x - r.point.x) * kx).powi(2) + (c.y - r.point.y).powi(2)).sqrt())
                .fold(f64::INFINITY, f64::min)
                * METRES_PER_DEG_LAT;
            assert!(
                nearest <= spread.spread_radius_m + 1e-6,
                "{nearest} m from any centroid"
            );
        }
    }
}
