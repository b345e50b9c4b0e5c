//! Gowalla-like check-ins: users checking in at venues clustered in cities around the world.
//!
//! Shape (`docs/papers/rum.md#the-paper-in-brief`): the SNAP Gowalla dataset has 6,442,757
//! check-ins of ~107k users, clustered in cities; a user mostly moves inside one city and rarely
//! jumps to another. The numbers below were fitted to the NYC subset in `shared/data` (138,957
//! check-ins, 7,115 users, 21,509 venues) where the paper gives none:
//! - activity per user is lognormal with sigma = sqrt(2 ln(mean/median)) = sqrt(2 ln 3.9) = 1.65
//!   (NYC: median 5, mean 19.5). At NYC size (7,115 users, mean 19.5) it gives median 5 and a maximum
//!   of 1,500-3,000 depending on the seed (NYC: 1,794). The number of users is a parameter
//!   (`users`); by default it keeps SNAP's 6,442,757 / 107,092 = 60.2 check-ins per user
//!   ([`crate::gen::default_objects`]);
//! - venue popularity inside a city is Zipf with exponent 0.75 (NYC: the top venue has 1.2% of the
//!   check-ins, the top 100 18%, the top 1,000 41%; Zipf 0.75 over NYC's 21,509 venues gives 2.2%,
//!   20%, 42%), and there is one venue per 6.46 check-ins (NYC: 138,957 / 21,509);
//! - venues sit in Gaussian "districts" (hot spots, sigma 0.003 deg, ~330 m) inside cities of ~5 km
//!   (NYC: standard deviation 0.044 deg of latitude, 0.066 of longitude); a user's next venue is in
//!   the same district with probability 0.6, elsewhere in the same city otherwise. At NYC size this
//!   gives consecutive moves with quartiles 0.004 / 0.008 / 0.04 deg and 90th percentile 0.10
//!   (NYC: 0.002 / 0.0075 / 0.034, 0.089);
//! - a long jump to another city (chosen by city size) happens with probability 0.015 (the brief's
//!   "1-2%"; the paper says only "rare");
//! - 40 cities with Zipf(1) sizes (Zipf's law for cities), centres uniform over populated latitudes
//!   (-45..65) and all longitudes; the extent is the whole world, lon -180..180, lat -90..90;
//! - times uniform over SNAP's span, 2009-02-04 to 2010-10-23.

use lsmlab_engine::geom::{Point, Rect};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_distr::{Distribution, LogNormal};

use super::{check_positive, check_probability, check_time_range, resolve_objects, scaled_objects};
use crate::sample::{unit_normal, zipf_weights, CumulativeTable};
use crate::time::unix_seconds;
use crate::{seeded_rng, Record, Trajectories, WorkloadError};

/// Check-ins in the full SNAP Gowalla dataset (`loc-gowalla_totalCheckins`), as the paper ran it
/// (`docs/papers/rum.md#the-paper-in-brief`).
pub const PAPER_RECORDS: usize = 6_442_757;

/// Users in the full SNAP Gowalla dataset: SNAP's page for `loc-Gowalla` lists 196,591 users in the
/// friendship graph, of whom 107,092 have check-ins in `loc-gowalla_totalCheckins` (the count
/// `docs/papers/rum.md#the-paper-in-brief` gives, "about 107,000 users").
pub const PAPER_USERS: usize = 107_092;

/// Parameters of [`gowalla`]; the defaults and their sources are in the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct GowallaParams {
    /// Distinct users; `None` keeps SNAP's check-ins per user ([`crate::gen::default_objects`]).
    pub users: Option<usize>,
    /// Sigma of the lognormal activity (check-ins per user) distribution.
    pub activity_sigma: f64,
    /// Cities the venues are spread over.
    pub cities: usize,
    /// Zipf exponent of city sizes.
    pub city_zipf: f64,
    /// Check-ins per venue; the number of venues is `records / checkins_per_venue`.
    pub checkins_per_venue: f64,
    /// Zipf exponent of venue popularity inside a city.
    pub venue_zipf: f64,
    /// Venues per district (Gaussian hot spot).
    pub venues_per_district: usize,
    /// Standard deviation of district centres around the largest city's centre, in degrees of
    /// latitude (smaller cities shrink with the fourth root of their relative size).
    pub city_sigma_deg: f64,
    /// Standard deviation of venues around their district's centre, in degrees of latitude.
    pub district_sigma_deg: f64,
    /// Probability that the next check-in stays in the current district.
    pub stay_in_district: f64,
    /// Probability that the next check-in is in another city.
    pub long_jump: f64,
    /// Time range of the check-ins, Unix seconds.
    pub start: i64,
    /// End of the check-ins' time range, Unix seconds.
    pub end: i64,
}

impl Default for GowallaParams {
    fn default() -> Self {
        GowallaParams {
            users: None,
            activity_sigma: (2.0 * (19.53f64 / 5.0).ln()).sqrt(),
            cities: 40,
            city_zipf: 1.0,
            checkins_per_venue: 138_957.0 / 21_509.0,
            venue_zipf: 0.75,
            venues_per_district: 150,
            city_sigma_deg: 0.05,
            district_sigma_deg: 0.003,
            stay_in_district: 0.6,
            long_jump: 0.015,
            start: unix_seconds(2009, 2, 4, 0, 0, 0),
            end: unix_seconds(2010, 10, 23, 0, 0, 0),
        }
    }
}

/// The world, where the check-ins live.
pub const WORLD: Rect = Rect::new(-180.0, -90.0, 180.0, 90.0);

struct Venues {
    points: Vec<Point>,
    /// Popularity, including the city's weight: picking over all venues picks a city by size.
    popularity: CumulativeTable,
    /// Index into `districts` of each venue.
    district_of: Vec<u32>,
    /// Venue index range of each district, and its city.
    districts: Vec<(u32, u32, u32)>,
    /// Venue index range of each city.
    cities: Vec<(u32, u32)>,
}

fn build_venues(venues: usize, seed: u64, p: &GowallaParams) -> Venues {
    let mut rng = seeded_rng(seed, "gowalla/venues");
    let city_weights: Vec<f64> = zipf_weights(p.cities, p.city_zipf).collect();
    let total_city: f64 = city_weights.iter().sum();
    let mut points = Vec::with_capacity(venues);
    let mut weights = Vec::with_capacity(venues);
    let mut district_of = Vec::with_capacity(venues);
    let mut districts = Vec::new();
    let mut cities = Vec::with_capacity(p.cities);
    let unit = unit_normal();
    for (c, &cw) in city_weights.iter().enumerate() {
        let share = cw / total_city;
        let n_venues = ((venues as f64 * share).round() as usize).max(1);
        let centre_lat: f64 = rng.random_range(-45.0..65.0);
        let centre_lon: f64 = rng.random_range(-180.0..180.0);
        // Degrees of longitude per degree of latitude at this latitude, so cities are round on the ground.
        let stretch = 1.0 / centre_lat.to_radians().cos();
        let city_sigma = p.city_sigma_deg * (cw / city_weights[0]).powf(0.25);
        let n_districts = n_venues.div_ceil(p.venues_per_district.max(1));
        let mut ranks: Vec<usize> = (1..=n_venues).collect();
        ranks.shuffle(&mut rng);
        let harmonic: f64 = zipf_weights(n_venues, p.venue_zipf).sum();
        let city_start = points.len() as u32;
        let mut next_rank = ranks.into_iter();
        for d in 0..n_districts {
            let dlat = centre_lat + city_sigma * unit.sample(&mut rng);
            let dlon = centre_lon + city_sigma * stretch * unit.sample(&mut rng);
            let in_district = n_venues / n_districts + usize::from(d < n_venues % n_districts);
            let d_start = points.len() as u32;
            for _ in 0..in_district {
                let lat = dlat + p.district_sigma_deg * unit.sample(&mut rng);
                let lon = dlon + p.district_sigma_deg * stretch * unit.sample(&mut rng);
                points.push(Point::new(
                    lon.clamp(WORLD.min.x, WORLD.max.x),
                    lat.clamp(WORLD.min.y, WORLD.max.y),
                ));
                #[allow(clippy::expect_used)] // the shuffled ranks number the venues, one each
                let rank = next_rank.next().expect("one rank per venue");
                weights.push(share * (rank as f64).powf(-p.venue_zipf) / harmonic);
                district_of.push(districts.len() as u32);
            }
            districts.push((d_start, points.len() as u32, c as u32));
        }
        cities.push((city_start, points.len() as u32));
    }
    Venues {
        points,
        popularity: CumulativeTable::new(weights),
        district_of,
        districts,
        cities,
    }
}

/// Check-ins per user: lognormal weights, scaled to `records` in total, at least one per user,
/// rounded so the total is exact (largest remainders first, ties by user index).
fn activity(records: usize, users: usize, seed: u64, p: &GowallaParams) -> Vec<usize> {
    let mut rng = seeded_rng(seed, "gowalla/activity");
    #[allow(clippy::expect_used)] // `gowalla` checked `activity_sigma` is positive before calling
    let dist = LogNormal::new(0.0, p.activity_sigma).expect("finite sigma");
    let w: Vec<f64> = (0..users).map(|_| dist.sample(&mut rng)).collect();
    let total: f64 = w.iter().sum();
    let exact: Vec<f64> = w.iter().map(|x| x / total * records as f64).collect();
    let mut counts: Vec<usize> = exact.iter().map(|&e| (e.floor() as usize).max(1)).collect();
    let sum: usize = counts.iter().sum();
    if sum < records {
        let mut order: Vec<usize> = (0..users).collect();
        order.sort_by(|&a, &b| {
            (exact[b] - exact[b].floor())
                .total_cmp(&(exact[a] - exact[a].floor()))
                .then(a.cmp(&b))
        });
        let missing = records - sum;
        // `missing` < users because each floor lost less than one.
        for &u in order.iter().cycle().take(missing) {
            counts[u] += 1;
        }
    } else if sum > records {
        // Only possible when many users were raised to one: take back from the most active.
        let mut order: Vec<usize> = (0..users).collect();
        order.sort_by(|&a, &b| counts[b].cmp(&counts[a]).then(a.cmp(&b)));
        let mut excess = sum - records;
        while excess > 0 {
            for &u in &order {
                if excess == 0 {
                    break;
                }
                if counts[u] > 1 {
                    counts[u] -= 1;
                    excess -= 1;
                }
            }
        }
    }
    counts
}

/// Generates `records` Gowalla-like check-ins (see the module docs for the shape and its sources).
pub fn gowalla(records: usize, seed: u64, p: &GowallaParams) -> Result<Trajectories, WorkloadError> {
    const G: &str = "gowalla";
    check_time_range(G, p.start, p.end)?;
    check_positive(G, "checkins_per_venue", p.checkins_per_venue)?;
    check_positive(G, "activity_sigma", p.activity_sigma)?;
    check_probability(G, "stay_in_district", p.stay_in_district)?;
    check_probability(G, "long_jump", p.long_jump)?;
    if p.cities == 0 {
        return Err(WorkloadError::InvalidParameter {
            generator: G,
            reason: "cities must be at least 1".into(),
        });
    }
    let users = resolve_objects(
        G,
        "users",
        records,
        p.users,
        scaled_objects(records, PAPER_USERS, PAPER_RECORDS),
    )?;
    let mut out = Trajectories {
        name: G.to_string(),
        extent: WORLD,
        records: Vec::with_capacity(records),
    };
    if records == 0 {
        return Ok(out);
    }
    let counts = activity(records, users, seed, p);
    let venues = build_venues(
        ((records as f64 / p.checkins_per_venue).ceil() as usize).max(1),
        seed,
        p,
    );

    // Each check-in's time, uniform over the span; then replay in time order.
    let mut trng = seeded_rng(seed, "gowalla/times");
    let mut slots: Vec<(i64, u32)> = Vec::with_capacity(records);
    for (u, &c) in counts.iter().enumerate() {
        for _ in 0..c {
            slots.push((trng.random_range(p.start..p.end), u as u32));
        }
    }
    // (time, user) pairs that compare equal are interchangeable, so an unstable sort is deterministic.
    slots.sort_unstable();

    let mut rng = seeded_rng(seed, "gowalla/walk");
    let mut at: Vec<u32> = vec![u32::MAX; users];
    for (time, u) in slots {
        let cur = at[u as usize];
        let next = if cur == u32::MAX {
            venues.popularity.sample(&mut rng)
        } else {
            let (d_lo, d_hi, city) = venues.districts[venues.district_of[cur as usize] as usize];
            let x: f64 = rng.random();
            if x < p.long_jump {
                // Another city, chosen by size (a few tries; with one city this stays put).
                let mut v = venues.popularity.sample(&mut rng);
                for _ in 0..8 {
                    if venues.districts[venues.district_of[v] as usize].2 != city {
                        break;
                    }
                    v = venues.popularity.sample(&mut rng);
                }
                v
            } else if x < p.long_jump + (1.0 - p.long_jump) * p.stay_in_district {
                venues
                    .popularity
                    .sample_in(&mut rng, d_lo as usize, d_hi as usize)
            } else {
                let (c_lo, c_hi) = venues.cities[city as usize];
                venues
                    .popularity
                    .sample_in(&mut rng, c_lo as usize, c_hi as usize)
            }
        };
        at[u as usize] = next as u32;
        out.records.push(Record {
            oid: u64::from(u),
            time,
            point: venues.points[next],
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::test_support::check_common;

    #[test]
    fn deterministic_exact_and_ordered() {
        let p = GowallaParams::default();
        let a = gowalla(20_000, 7, &p).unwrap();
        let b = gowalla(20_000, 7, &p).unwrap();
        let c = gowalla(20_000, 8, &p).unwrap();
        assert_eq!(a, b);
        assert_ne!(a.records, c.records);
        check_common(&a, 20_000);
        assert_eq!(
            a.objects(),
            (20_000.0 * 107_092.0 / 6_442_757.0f64).round() as usize
        );
        for n in [1, 2, 59, 61, 1000] {
            check_common(&gowalla(n, 1, &p).unwrap(), n);
        }
    }

    #[test]
    fn activity_is_heavy_tailed() {
        // At NYC size with NYC's mean, the fit should land near NYC's median 5 and max 1,794.
        let p = GowallaParams {
            users: Some(7_115),
            ..GowallaParams::default()
        };
        let t = gowalla(138_957, 42, &p).unwrap();
        let mut per_user = std::collections::BTreeMap::<u64, usize>::new();
        for r in &t.records {
            *per_user.entry(r.oid).or_default() += 1;
        }
        let mut counts: Vec<usize> = per_user.values().copied().collect();
        counts.sort_unstable();
        let median = counts[counts.len() / 2];
        let max = *counts.last().unwrap();
        assert_eq!(counts.len(), 7_115);
        assert!((3..=9).contains(&median), "median {median}");
        assert!(max >= 50 * median, "max {max} median {median}");
        assert!((500..=6000).contains(&max), "max {max}");
    }

    #[test]
    fn moves_are_mostly_local_with_rare_long_jumps() {
        let t = gowalla(100_000, 3, &GowallaParams::default()).unwrap();
        let mut last = std::collections::HashMap::new();
        let (mut moves, mut long, mut short) = (0usize, 0usize, 0usize);
        for r in &t.records {
            if let Some(prev) = last.insert(r.oid, r.point) {
                let prev: Point = prev;
                let d = ((prev.x - r.point.x).powi(2) + (prev.y - r.point.y).powi(2)).sqrt();
                moves += 1;
                long += usize::from(d > 2.0);
                short += usize::from(d < 0.03);
            }
        }
        let long_share = long as f64 / moves as f64;
        let short_share = short as f64 / moves as f64;
        assert!((0.005..0.03).contains(&long_share), "long jumps {long_share}");
        assert!(short_share > 0.4, "short moves {short_share}");
    }

    #[test]
    fn cities_are_skewed() {
        let t = gowalla(50_000, 5, &GowallaParams::default()).unwrap();
        // Points per 1-degree cell: the busiest cell holds far more than an even spread would.
        let mut cells = std::collections::BTreeMap::<(i64, i64), usize>::new();
        for r in &t.records {
            *cells
                .entry((r.point.x.floor() as i64, r.point.y.floor() as i64))
                .or_default() += 1;
        }
        let top = *cells.values().max().unwrap();
        assert!(top as f64 > 0.1 * t.records.len() as f64, "top cell {top}");
        assert!(cells.len() < 200, "{} cells", cells.len());
    }
}
