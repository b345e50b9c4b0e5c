//! BerlinMOD-like vehicle positions: cars driving home -> work -> (leisure ->) home along a road
//! network, reporting a position every few metres.
//!
//! Shape (`docs/papers/rum.md#the-paper-in-brief`): BerlinMOD at scale factor 1.0 has 2,000
//! vehicles and 56,129,943 positions (~28k each) in lon 13.088..13.742, lat 52.343..52.660.
//! Consecutive positions of a vehicle are metres apart, so the old and the new entry of an update
//! usually fall in the same R-tree leaf (why the paper's Buffered and Vacuum Cleaning pay off most
//! here). BerlinMOD itself drives on OpenStreetMap's Berlin roads; here the network is synthetic:
//! - a grid of junctions every `block_m` metres (default 400 m), each moved by up to 30% of a block,
//!   with every `arterial_every`-th row and column an arterial road (50 km/h, never missing) and
//!   the other streets 30 km/h, 15% of them missing so that routes are not plain staircases;
//! - each vehicle has a home (Gaussian around Mitte, sigma 8 km) and a work place (sigma 4 km: jobs
//!   are more central), as BerlinMOD's home/work nodes drawn by district population and employment;
//! - every day it drives home -> work around 07:30 (sigma 45 min), work -> home around 16:30
//!   (sigma 1 h), and with probability 0.4 it detours to a leisure place first and stays there 0.5-2.5 h
//!   (BerlinMOD's leisure trips; weekends are not modelled). Days start at BerlinMOD's default start,
//!   Monday 2007-05-28;
//! - routes are fastest paths (A* on travel time); a position is emitted every `spacing_m` metres
//!   along the route (default 20 m), from a random phase per drive so that the same commute gives
//!   new points every day, plus the destination, at the time the car is there;
//! - all vehicles are simulated together in time order (an event queue of next positions), so the
//!   stream interleaves vehicles as the real data does when sorted by time.
//!
//! Vehicles: `vehicles`, by default the paper's 28,065 positions per vehicle (56,129,943 / 2,000),
//! at least 50 ([`crate::gen::default_objects`]). Each vehicle reports exactly its share of the
//! records (`records / vehicles`, one more for the first `records mod vehicles`) and then parks, so
//! the stream has exactly `vehicles` objects whatever the ratio: with ~28,000 positions a vehicle
//! drives about four weeks of commutes, as in SF 1.0 (28 days); with 10 it reports the first 200 m
//! of its first morning drive. (BerlinMOD's vehicles all drive the same days and report different
//! numbers of positions; equal shares trade that for an exact record and object count.) A vehicle
//! holds its two commute routes and a cursor along the current route, never a trip's positions, so
//! memory grows with the fleet, not with the records per vehicle.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use lsmlab_engine::geom::{Point, Rect};
use rand::Rng;
use rand_distr::Distribution;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{check_positive, check_probability, resolve_objects, scaled_objects};
use crate::sample::unit_normal;
use crate::time::unix_seconds;
use crate::{seeded_rng, Record, Trajectories, WorkloadError};

/// Positions in BerlinMOD at scale factor 1.0, as the paper ran it
/// (`docs/papers/rum.md#the-paper-in-brief`).
pub const PAPER_RECORDS: usize = 56_129_943;

/// Vehicles in BerlinMOD at scale factor 1.0: 2,000 (`docs/papers/rum.md#the-paper-in-brief`; the
/// BerlinMOD benchmark scales its fleet as 2,000 x sqrt(SF), so SF 1.0 has 2,000 vehicles over 28
/// days).
pub const PAPER_VEHICLES: usize = 2_000;

/// The paper's Berlin bounds.
pub const BERLIN: Rect = Rect::new(13.088, 52.343, 13.742, 52.660);

/// Metres per degree of latitude: the usual 111.32 km (a spherical Earth; good to 0.2% at Berlin).
pub const METRES_PER_DEG_LAT: f64 = 111_320.0;

/// Metres per degree of longitude at the centre of the Berlin bounds (52.50 deg N).
pub fn metres_per_deg_lon() -> f64 {
    METRES_PER_DEG_LAT * ((BERLIN.min.y + BERLIN.max.y) / 2.0).to_radians().cos()
}

/// Ground distance in metres between two points near Berlin (equirectangular approximation, exact
/// to well under 1% at these distances).
pub fn metres_between(a: Point, b: Point) -> f64 {
    let dx = (a.x - b.x) * metres_per_deg_lon();
    let dy = (a.y - b.y) * METRES_PER_DEG_LAT;
    (dx * dx + dy * dy).sqrt()
}

/// Mitte, the centre homes and work places gather around.
const MITTE: Point = Point::new(13.40, 52.52);

/// Parameters of [`berlinmod`]; the defaults and their sources are in the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct BerlinModParams {
    /// Number of vehicles (distinct objects); `None` keeps the paper's positions per vehicle (see
    /// [`BerlinModParams::vehicles_for`]).
    pub vehicles: Option<usize>,
    /// Distance between two reported positions along a route, metres.
    pub spacing_m: f64,
    /// Distance between two junctions of the road grid, metres.
    pub block_m: f64,
    /// Every this many grid rows and columns is an arterial road.
    pub arterial_every: usize,
    /// Driving speed on ordinary streets, km/h.
    pub street_kmh: f64,
    /// Driving speed on arterial roads, km/h.
    pub arterial_kmh: f64,
    /// Fraction of non-arterial street segments left out of the network.
    pub missing_streets: f64,
    /// Probability of a leisure stop on the way home.
    pub leisure_probability: f64,
    /// Standard deviation of homes (and leisure places) around the centre, metres.
    pub home_sigma_m: f64,
    /// Standard deviation of work places around the centre, metres.
    pub work_sigma_m: f64,
    /// Midnight of the first day, Unix seconds.
    pub start: i64,
}

impl Default for BerlinModParams {
    fn default() -> Self {
        BerlinModParams {
            vehicles: None,
            spacing_m: 20.0,
            block_m: 400.0,
            arterial_every: 6,
            street_kmh: 30.0,
            arterial_kmh: 50.0,
            missing_streets: 0.15,
            leisure_probability: 0.4,
            home_sigma_m: 8000.0,
            work_sigma_m: 4000.0,
            start: unix_seconds(2007, 5, 28, 0, 0, 0),
        }
    }
}

impl BerlinModParams {
    /// Vehicles used for `records` positions: `vehicles` if set; else the paper's positions per
    /// vehicle ([`PAPER_RECORDS`] / [`PAPER_VEHICLES`]), at least 50 and at most `records`.
    pub fn vehicles_for(&self, records: usize) -> usize {
        self.vehicles
            .unwrap_or_else(|| scaled_objects(records, PAPER_VEHICLES, PAPER_RECORDS))
    }
}

/// A directed road segment in the network's adjacency list.
#[derive(Clone, Copy, Debug)]
struct Segment {
    to: u32,
    length_m: f64,
    speed_mps: f64,
}

/// The synthetic road network, in metres from the south-west corner of [`BERLIN`].
struct RoadNetwork {
    cols: usize,
    rows: usize,
    block_m: f64,
    junctions: Vec<(f64, f64)>,
    /// Segments leaving junction `j`: `segments[first[j]..first[j + 1]]`.
    first: Vec<u32>,
    segments: Vec<Segment>,
    /// Junctions connected to junction 0 (which lies on two arterials); trips only use these.
    reachable: Vec<bool>,
    max_speed_mps: f64,
}

impl RoadNetwork {
    fn build(seed: u64, p: &BerlinModParams) -> RoadNetwork {
        let mut rng = seeded_rng(seed, "berlinmod/roads");
        let width = BERLIN.width() * metres_per_deg_lon();
        let height = BERLIN.height() * METRES_PER_DEG_LAT;
        let cols = (width / p.block_m) as usize + 1;
        let rows = (height / p.block_m) as usize + 1;
        let jitter = 0.3 * p.block_m;
        let mut junctions = Vec::with_capacity(cols * rows);
        for r in 0..rows {
            for c in 0..cols {
                let x = c as f64 * p.block_m + rng.random_range(-jitter..=jitter);
                let y = r as f64 * p.block_m + rng.random_range(-jitter..=jitter);
                junctions.push((x.clamp(0.0, width), y.clamp(0.0, height)));
            }
        }
        let street = p.street_kmh / 3.6;
        let arterial = p.arterial_kmh / 3.6;
        let k = p.arterial_every.max(1);
        let mut undirected = Vec::new();
        for r in 0..rows {
            for c in 0..cols {
                let a = r * cols + c;
                // East along row r, then north along column c.
                for (b, on_arterial) in [
                    (c + 1 < cols).then(|| (a + 1, r % k == 0)),
                    (r + 1 < rows).then(|| (a + cols, c % k == 0)),
                ]
                .into_iter()
                .flatten()
                {
                    if on_arterial || rng.random::<f64>() >= p.missing_streets {
                        undirected.push((a, b, if on_arterial { arterial } else { street }));
                    }
                }
            }
        }
        let n = junctions.len();
        let mut degree = vec![0u32; n + 1];
        for &(a, b, _) in &undirected {
            degree[a] += 1;
            degree[b] += 1;
        }
        let mut first = vec![0u32; n + 1];
        for j in 0..n {
            first[j + 1] = first[j] + degree[j];
        }
        let mut fill = first.clone();
        let mut segments = vec![
            Segment {
                to: 0,
                length_m: 0.0,
                speed_mps: 1.0
            };
            undirected.len() * 2
        ];
        for &(a, b, speed) in &undirected {
            let (ax, ay) = junctions[a];
            let (bx, by) = junctions[b];
            let length_m = ((ax - bx).powi(2) + (ay - by).powi(2)).sqrt();
            for (from, to) in [(a, b), (b, a)] {
                segments[fill[from] as usize] = Segment {
                    to: to as u32,
                    length_m,
                    speed_mps: speed,
                };
                fill[from] += 1;
            }
        }
        let mut net = RoadNetwork {
            cols,
            rows,
            block_m: p.block_m,
            junctions,
            first,
            segments,
            reachable: vec![false; n],
            max_speed_mps: street.max(arterial),
        };
        let mut queue = VecDeque::from([0u32]);
        net.reachable[0] = true;
        while let Some(j) = queue.pop_front() {
            for s in net.first[j as usize]..net.first[j as usize + 1] {
                let to = net.segments[s as usize].to;
                if !net.reachable[to as usize] {
                    net.reachable[to as usize] = true;
                    queue.push_back(to);
                }
            }
        }
        net
    }

    fn out(&self, j: u32) -> &[Segment] {
        &self.segments[self.first[j as usize] as usize..self.first[j as usize + 1] as usize]
    }

    /// A reachable junction near (x, y) metres: the grid cell's own junction, else the nearest
    /// reachable one in growing square rings around it.
    fn junction_near(&self, x: f64, y: f64) -> u32 {
        let c0 = ((x / self.block_m).round().max(0.0) as usize).min(self.cols - 1) as i64;
        let r0 = ((y / self.block_m).round().max(0.0) as usize).min(self.rows - 1) as i64;
        for radius in 0..(self.cols.max(self.rows) as i64) {
            for r in (r0 - radius)..=(r0 + radius) {
                for c in (c0 - radius)..=(c0 + radius) {
                    let on_ring = (r - r0).abs() == radius || (c - c0).abs() == radius;
                    if on_ring && r >= 0 && c >= 0 && (r as usize) < self.rows && (c as usize) < self.cols {
                        let j = r as usize * self.cols + c as usize;
                        if self.reachable[j] {
                            return j as u32;
                        }
                    }
                }
            }
        }
        0
    }

    fn to_point(&self, x: f64, y: f64) -> Point {
        Point::new(
            (BERLIN.min.x + x / metres_per_deg_lon()).clamp(BERLIN.min.x, BERLIN.max.x),
            (BERLIN.min.y + y / METRES_PER_DEG_LAT).clamp(BERLIN.min.y, BERLIN.max.y),
        )
    }

    /// A reachable junction drawn from a Gaussian of `sigma_m` around Mitte, different from `not`.
    fn draw_junction(&self, rng: &mut Xoshiro256PlusPlus, sigma_m: f64, not: Option<u32>) -> u32 {
        let cx = (MITTE.x - BERLIN.min.x) * metres_per_deg_lon();
        let cy = (MITTE.y - BERLIN.min.y) * METRES_PER_DEG_LAT;
        let unit = unit_normal();
        for _ in 0..32 {
            let j = self.junction_near(cx + sigma_m * unit.sample(rng), cy + sigma_m * unit.sample(rng));
            if Some(j) != not {
                return j;
            }
        }
        // A tiny network or a tiny sigma: take a neighbour, so that a drive always goes somewhere.
        let not = not.unwrap_or(0);
        self.out(not).first().map_or(not, |s| s.to)
    }
}

/// An A* search entry: estimated total travel time, then the junction (for a deterministic order).
#[derive(Clone, Copy, PartialEq)]
struct Frontier {
    estimate: f64,
    junction: u32,
}

impl Eq for Frontier {}

impl Ord for Frontier {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the smallest estimate comes out first.
        other
            .estimate
            .total_cmp(&self.estimate)
            .then(other.junction.cmp(&self.junction))
    }
}

impl PartialOrd for Frontier {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Fastest-path search with reusable buffers (a generation stamp instead of clearing them).
struct Router {
    cost: Vec<f64>,
    via: Vec<u32>,
    seen: Vec<u32>,
    done: Vec<u32>,
    generation: u32,
    heap: BinaryHeap<Frontier>,
}

impl Router {
    fn new(n: usize) -> Router {
        Router {
            cost: vec![0.0; n],
            via: vec![0; n],
            seen: vec![0; n],
            done: vec![0; n],
            generation: 0,
            heap: BinaryHeap::new(),
        }
    }

    /// The segments (indices into `net.segments`) of a fastest route from `from` to `to`; empty if
    /// they are the same junction or not connected. A* with the straight-line distance at the top
    /// speed as heuristic, which is consistent (no segment is shorter than the straight line), so
    /// the first time the target is settled its route is optimal.
    fn route(&mut self, net: &RoadNetwork, from: u32, to: u32) -> Vec<u32> {
        self.generation += 1;
        let g = self.generation;
        let (tx, ty) = net.junctions[to as usize];
        let h = |j: u32| {
            let (x, y) = net.junctions[j as usize];
            ((x - tx).powi(2) + (y - ty).powi(2)).sqrt() / net.max_speed_mps
        };
        self.heap.clear();
        self.cost[from as usize] = 0.0;
        self.seen[from as usize] = g;
        self.via[from as usize] = u32::MAX;
        self.heap.push(Frontier {
            estimate: h(from),
            junction: from,
        });
        while let Some(Frontier { junction: j, .. }) = self.heap.pop() {
            if self.done[j as usize] == g {
                continue;
            }
            self.done[j as usize] = g;
            if j == to {
                break;
            }
            let base = self.cost[j as usize];
            for s in net.first[j as usize]..net.first[j as usize + 1] {
                let seg = net.segments[s as usize];
                let t = seg.to as usize;
                let c = base + seg.length_m / seg.speed_mps;
                if self.done[t] != g && (self.seen[t] != g || c < self.cost[t]) {
                    self.seen[t] = g;
                    self.cost[t] = c;
                    self.via[t] = s;
                    self.heap.push(Frontier {
                        estimate: c + h(seg.to),
                        junction: seg.to,
                    });
                }
            }
        }
        let mut path = Vec::new();
        if self.done[to as usize] != g {
            return path;
        }
        let mut j = to;
        while j != from {
            let s = self.via[j as usize];
            path.push(s);
            // The segment's source: the junction whose adjacency range holds index s.
            j = net.first.partition_point(|&f| f <= s) as u32 - 1;
        }
        path.reverse();
        path
    }
}

/// Where a vehicle is along the route it drives: positions come out one at a time, one every
/// `spacing_m` metres and one at the destination, each with the time the car is there.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    /// Index into the route of the segment being driven.
    seg: usize,
    /// Metres driven to the start of that segment.
    travelled: f64,
    /// Time at the start of that segment, milliseconds.
    clock_ms: f64,
    /// Distance along the route of the next position, metres.
    next: f64,
    /// Start of that segment, metres.
    x: f64,
    y: f64,
    /// The destination has been considered (reported or skipped).
    finished: bool,
}

impl Cursor {
    /// A drive leaving junction `from` at `depart_ms`, whose first position is `first_m` metres
    /// along the route.
    fn start(net: &RoadNetwork, from: u32, depart_ms: i64, first_m: f64) -> Cursor {
        let (x, y) = net.junctions[from as usize];
        Cursor {
            seg: 0,
            travelled: 0.0,
            clock_ms: depart_ms as f64,
            next: first_m,
            x,
            y,
            finished: false,
        }
    }

    /// The next position along `route`, or `None` once the destination has been reported. The
    /// destination is reported unless the last spaced position fell exactly on it.
    fn advance(&mut self, net: &RoadNetwork, route: &[u32], spacing_m: f64) -> Option<(i64, Point)> {
        while let Some(&s) = route.get(self.seg) {
            let seg = net.segments[s as usize];
            let (bx, by) = net.junctions[seg.to as usize];
            if self.next <= self.travelled + seg.length_m {
                let along = self.next - self.travelled;
                let f = if seg.length_m > 0.0 {
                    along / seg.length_m
                } else {
                    1.0
                };
                let t = self.clock_ms + along / seg.speed_mps * 1000.0;
                self.next += spacing_m;
                return Some((
                    t.floor() as i64,
                    net.to_point(self.x + f * (bx - self.x), self.y + f * (by - self.y)),
                ));
            }
            self.travelled += seg.length_m;
            self.clock_ms += seg.length_m / seg.speed_mps * 1000.0;
            self.x = bx;
            self.y = by;
            self.seg += 1;
        }
        if self.finished {
            return None;
        }
        self.finished = true;
        (!route.is_empty() && self.next - spacing_m < self.travelled)
            .then(|| (self.clock_ms.floor() as i64, net.to_point(self.x, self.y)))
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Place {
    Home,
    Work,
    Leisure,
}

/// The route a vehicle is driving: one of its cached commutes, or a route of its own (to or from
/// a leisure place).
#[derive(Debug)]
enum Leg {
    ToWork,
    ToHome,
    Other(Vec<u32>),
}

struct Vehicle {
    home: u32,
    work: u32,
    at: u32,
    place: Place,
    /// The day of the next morning drive to work.
    next_day: i64,
    /// The day of the last morning drive (for the evening departure).
    work_day: i64,
    to_work: Option<Vec<u32>>,
    to_home_from_work: Option<Vec<u32>>,
    leg: Leg,
    cursor: Cursor,
    /// The next position to report (reported when the event queue reaches its time).
    pending: Point,
    /// Positions still to report, this one included.
    remaining: usize,
}

impl Vehicle {
    /// The next position along the current leg, if the leg has one left.
    fn advance(&mut self, net: &RoadNetwork, spacing_m: f64) -> Option<(i64, Point)> {
        let route: &[u32] = match &self.leg {
            Leg::ToWork => self.to_work.as_deref().unwrap_or(&[]),
            Leg::ToHome => self.to_home_from_work.as_deref().unwrap_or(&[]),
            Leg::Other(r) => r,
        };
        self.cursor.advance(net, route, spacing_m)
    }
}

const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;

struct Simulation {
    net: RoadNetwork,
    p: BerlinModParams,
    router: Router,
    rng: Xoshiro256PlusPlus,
    start_ms: i64,
}

impl Simulation {
    /// Departure time on `day` around `mean_h` hours (Gaussian `sigma_min` minutes, clamped to
    /// `lo_h..hi_h`).
    fn around(&mut self, day: i64, mean_h: f64, sigma_min: f64, lo_h: f64, hi_h: f64) -> i64 {
        let z: f64 = unit_normal().sample(&mut self.rng);
        let hours = (mean_h + z * sigma_min / 60.0).clamp(lo_h, hi_h);
        self.start_ms + day * DAY_MS + (hours * HOUR_MS as f64) as i64
    }

    /// Plans the vehicle's next drive after arriving where it is at `arrived_ms`, and returns the
    /// drive's first position.
    fn plan(&mut self, v: &mut Vehicle, mut arrived_ms: i64) -> (i64, Point) {
        let min_stay = 30 * MINUTE_MS;
        loop {
            let (depart, dest, place) = match v.place {
                Place::Home => {
                    let mut depart = self.around(v.next_day, 7.5, 45.0, 5.0, 10.0);
                    while depart < arrived_ms + min_stay {
                        v.next_day += 1;
                        depart = self.around(v.next_day, 7.5, 45.0, 5.0, 10.0);
                    }
                    v.work_day = v.next_day;
                    v.next_day += 1;
                    (depart, v.work, Place::Work)
                }
                Place::Work => {
                    let depart = self
                        .around(v.work_day, 16.5, 60.0, 13.0, 20.0)
                        .max(arrived_ms + min_stay);
                    if self.rng.random::<f64>() < self.p.leisure_probability {
                        let leisure = self
                            .net
                            .draw_junction(&mut self.rng, self.p.home_sigma_m, Some(v.at));
                        (depart, leisure, Place::Leisure)
                    } else {
                        (depart, v.home, Place::Home)
                    }
                }
                Place::Leisure => {
                    let stay = self.rng.random_range(30 * MINUTE_MS..150 * MINUTE_MS);
                    (arrived_ms + stay, v.home, Place::Home)
                }
            };
            v.leg = match (v.place, place) {
                (Place::Home, Place::Work) => {
                    if v.to_work.is_none() {
                        v.to_work = Some(self.router.route(&self.net, v.home, v.work));
                    }
                    Leg::ToWork
                }
                (Place::Work, Place::Home) => {
                    if v.to_home_from_work.is_none() {
                        v.to_home_from_work = Some(self.router.route(&self.net, v.work, v.home));
                    }
                    Leg::ToHome
                }
                _ => Leg::Other(self.router.route(&self.net, v.at, dest)),
            };
            // A random phase for the first position, so that the daily commute along the same route
            // reports new points each day (a GPS unit samples by time, not at fixed marks).
            let first_m = self.p.spacing_m * (1.0 - self.rng.random::<f64>());
            v.cursor = Cursor::start(&self.net, v.at, depart, first_m);
            v.at = dest;
            v.place = place;
            if let Some(first) = v.advance(&self.net, self.p.spacing_m) {
                return first;
            }
            // Nowhere to drive (same junction): stay, and plan the next leg from there.
            arrived_ms = depart;
        }
    }
}

/// Generates `records` BerlinMOD-like vehicle positions (see the module docs for the shape).
pub fn berlinmod(records: usize, seed: u64, p: &BerlinModParams) -> Result<Trajectories, WorkloadError> {
    let stream = berlinmod_stream(records, seed, p)?;
    let mut out = Trajectories {
        name: "berlinmod".to_string(),
        extent: BERLIN,
        records: Vec::with_capacity(records),
    };
    out.records.extend(stream);
    debug_assert_eq!(out.records.len(), records);
    Ok(out)
}

/// The records of [`berlinmod`], in the same order, produced one at a time as the simulation
/// runs: it holds the road network, the fleet and the event queue, never the records, so a stream
/// of any length (the paper's 56 million positions) needs memory for its vehicles only.
pub struct BerlinModStream {
    sim: Simulation,
    fleet: Vec<Vehicle>,
    /// Each vehicle's next position, earliest first, ties by vehicle. A vehicle leaves the queue
    /// once it has reported its share, so the queue empties after `records`.
    queue: BinaryHeap<Reverse<(i64, u32)>>,
    left: usize,
}

/// The extent of every BerlinMOD-like stream (the paper's Berlin bounds).
pub const BERLINMOD_EXTENT: Rect = BERLIN;

/// [`berlinmod`] as a stream of records (see [`BerlinModStream`]); the same checks of `p`.
pub fn berlinmod_stream(
    records: usize,
    seed: u64,
    p: &BerlinModParams,
) -> Result<BerlinModStream, WorkloadError> {
    const G: &str = "berlinmod";
    for (what, v) in [
        ("spacing_m", p.spacing_m),
        ("block_m", p.block_m),
        ("street_kmh", p.street_kmh),
        ("arterial_kmh", p.arterial_kmh),
        ("home_sigma_m", p.home_sigma_m),
        ("work_sigma_m", p.work_sigma_m),
    ] {
        check_positive(G, what, v)?;
    }
    check_probability(G, "missing_streets", p.missing_streets)?;
    check_probability(G, "leisure_probability", p.leisure_probability)?;
    let max_block = (BERLIN.height() * METRES_PER_DEG_LAT).min(BERLIN.width() * metres_per_deg_lon()) / 2.0;
    if !(50.0..=max_block).contains(&p.block_m) {
        return Err(WorkloadError::InvalidParameter {
            generator: G,
            reason: format!("block_m must be in 50..={max_block:.0} m, got {}", p.block_m),
        });
    }
    let vehicles = resolve_objects(G, "vehicles", records, p.vehicles, p.vehicles_for(records))?;
    if records == 0 {
        return Ok(BerlinModStream {
            sim: Simulation {
                net: RoadNetwork {
                    cols: 0,
                    rows: 0,
                    block_m: p.block_m,
                    junctions: Vec::new(),
                    first: Vec::new(),
                    segments: Vec::new(),
                    reachable: Vec::new(),
                    max_speed_mps: 0.0,
                },
                p: p.clone(),
                router: Router::new(0),
                rng: seeded_rng(seed, "berlinmod/schedule"),
                start_ms: p.start * 1000,
            },
            fleet: Vec::new(),
            queue: BinaryHeap::new(),
            left: 0,
        });
    }
    let net = RoadNetwork::build(seed, p);
    let mut place_rng = seeded_rng(seed, "berlinmod/places");
    let mut fleet: Vec<Vehicle> = (0..vehicles)
        .map(|i| {
            let home = net.draw_junction(&mut place_rng, p.home_sigma_m, None);
            let work = net.draw_junction(&mut place_rng, p.work_sigma_m, Some(home));
            Vehicle {
                home,
                work,
                at: home,
                place: Place::Home,
                next_day: 0,
                work_day: 0,
                to_work: None,
                to_home_from_work: None,
                leg: Leg::Other(Vec::new()),
                cursor: Cursor::default(),
                pending: Point::new(0.0, 0.0),
                remaining: records / vehicles + usize::from(i < records % vehicles),
            }
        })
        .collect();
    let mut sim = Simulation {
        router: Router::new(net.junctions.len()),
        net,
        p: p.clone(),
        rng: seeded_rng(seed, "berlinmod/schedule"),
        start_ms: p.start * 1000,
    };
    let mut queue = BinaryHeap::with_capacity(vehicles);
    for (i, v) in fleet.iter_mut().enumerate() {
        let (t, point) = sim.plan(v, sim.start_ms - DAY_MS);
        v.pending = point;
        queue.push(Reverse((t, i as u32)));
    }
    Ok(BerlinModStream {
        sim,
        fleet,
        queue,
        left: records,
    })
}

impl Iterator for BerlinModStream {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        let Reverse((t, i)) = self.queue.pop()?;
        self.left -= 1;
        let v = &mut self.fleet[i as usize];
        let record = Record {
            oid: u64::from(i),
            time: t.div_euclid(1000),
            point: v.pending,
        };
        v.remaining -= 1;
        if v.remaining == 0 {
            // Parked for good: drop its routes.
            v.to_work = None;
            v.to_home_from_work = None;
            v.leg = Leg::Other(Vec::new());
            return Some(record);
        }
        let (next_t, point) = match v.advance(&self.sim.net, self.sim.p.spacing_m) {
            Some(next) => next,
            None => self.sim.plan(v, t),
        };
        v.pending = point;
        self.queue.push(Reverse((next_t, i)));
        Some(record)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for BerlinModStream {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::test_support::check_common;
    use std::collections::HashMap;

    /// The positions of a drive along `route` from junction `from`, leaving at `depart_ms`: at
    /// `first_m` metres and every `spacing_m` metres after, and one at the destination, each with
    /// the time the car is there, all at once (the oracle for [`Cursor`]).
    #[allow(clippy::too_many_arguments)]
    fn drive(
        net: &RoadNetwork,
        from: u32,
        route: &[u32],
        depart_ms: i64,
        first_m: f64,
        spacing_m: f64,
        out: &mut Vec<(i64, Point)>,
    ) {
        out.clear();
        let (mut x, mut y) = net.junctions[from as usize];
        let mut travelled = 0.0;
        let mut clock_ms = depart_ms as f64;
        let mut next = first_m;
        for &s in route {
            let seg = net.segments[s as usize];
            let (bx, by) = net.junctions[seg.to as usize];
            while next <= travelled + seg.length_m {
                let along = next - travelled;
                let f = if seg.length_m > 0.0 {
                    along / seg.length_m
                } else {
                    1.0
                };
                let t = clock_ms + along / seg.speed_mps * 1000.0;
                out.push((t.floor() as i64, net.to_point(x + f * (bx - x), y + f * (by - y))));
                next += spacing_m;
            }
            travelled += seg.length_m;
            clock_ms += seg.length_m / seg.speed_mps * 1000.0;
            x = bx;
            y = by;
        }
        if !route.is_empty() && next - spacing_m < travelled {
            out.push((clock_ms.floor() as i64, net.to_point(x, y)));
        }
    }

    #[test]
    fn cursor_reports_the_positions_of_the_whole_drive() {
        // Oracle: `drive` materialises a trip's positions in one loop; the cursor must give the
        // same positions, bit for bit, one at a time.
        let p = BerlinModParams::default();
        let net = RoadNetwork::build(4, &p);
        let mut router = Router::new(net.junctions.len());
        let mut rng = seeded_rng(4, "test/routes");
        let mut want = Vec::new();
        for k in 0..40 {
            let from = net.draw_junction(&mut rng, p.home_sigma_m, None);
            let to = net.draw_junction(&mut rng, p.work_sigma_m, Some(from));
            let route = if k == 0 {
                Vec::new()
            } else {
                router.route(&net, from, to)
            };
            let spacing = [20.0, 7.5, 400.0, 1000.0][k % 4];
            let first = spacing * [1.0, 0.5, 0.01][k % 3];
            drive(
                &net,
                from,
                &route,
                1_000_000 * k as i64,
                first,
                spacing,
                &mut want,
            );
            let mut cursor = Cursor::start(&net, from, 1_000_000 * k as i64, first);
            let got: Vec<(i64, Point)> =
                std::iter::from_fn(|| cursor.advance(&net, &route, spacing)).collect();
            assert_eq!(got, want, "route {k}");
            assert_eq!(cursor.advance(&net, &route, spacing), None);
        }
    }

    #[test]
    fn deterministic_exact_and_ordered() {
        let p = BerlinModParams::default();
        let a = berlinmod(50_000, 7, &p).unwrap();
        assert_eq!(a, berlinmod(50_000, 7, &p).unwrap());
        assert_ne!(a.records, berlinmod(50_000, 8, &p).unwrap().records);
        check_common(&a, 50_000);
        assert_eq!(p.vehicles_for(50_000), 50);
        assert_eq!(p.vehicles_for(56_129_943), 2000);
        assert_eq!(p.vehicles_for(500), 50);
        assert_eq!(p.vehicles_for(5), 5);
        assert_eq!(a.objects(), 50);
        for n in [1, 2, 999, 1001, 2500] {
            check_common(&berlinmod(n, 1, &p).unwrap(), n);
        }
    }

    #[test]
    fn consecutive_positions_are_metres_apart() {
        let p = BerlinModParams::default();
        let t = berlinmod(100_000, 3, &p).unwrap();
        let mut last = HashMap::new();
        let (mut n, mut total, mut max) = (0usize, 0.0, 0.0f64);
        for r in &t.records {
            if let Some(prev) = last.insert(r.oid, r.point) {
                let d = metres_between(prev, r.point);
                n += 1;
                total += d;
                max = max.max(d);
            }
        }
        assert!(n > 90_000);
        assert!(max <= p.spacing_m * 1.01, "largest step {max} m");
        let mean = total / n as f64;
        assert!(mean > 0.5 * p.spacing_m, "mean step {mean} m");
    }

    #[test]
    fn vehicles_commute_and_come_home() {
        // One vehicle over several days: it leaves home, reaches work, returns home.
        let p = BerlinModParams {
            vehicles: Some(1),
            ..BerlinModParams::default()
        };
        let t = berlinmod(20_000, 9, &p).unwrap();
        let first = t.records[0];
        let days = (t.records.last().unwrap().time - first.time) / 86_400;
        assert!(days >= 2, "{days} days simulated");
        // Positions cluster around two places (home and work): the vehicle is near its start again.
        let near_start = t
            .records
            .iter()
            .filter(|r| metres_between(r.point, first.point) < 100.0)
            .count();
        assert!(near_start >= 4, "{near_start} positions near home");
    }

    #[test]
    fn routes_are_fastest_paths() {
        let p = BerlinModParams::default();
        let net = RoadNetwork::build(1, &p);
        let mut router = Router::new(net.junctions.len());
        let from = net.junction_near(1000.0, 1000.0);
        let to = net.junction_near(30_000.0, 25_000.0);
        let route = router.route(&net, from, to);
        // Connected, and no faster than the straight line at top speed.
        let mut at = from;
        let mut secs = 0.0;
        for &s in &route {
            assert!(net
                .out(at)
                .iter()
                .any(|seg| std::ptr::eq(seg, &net.segments[s as usize])));
            secs += net.segments[s as usize].length_m / net.segments[s as usize].speed_mps;
            at = net.segments[s as usize].to;
        }
        assert_eq!(at, to);
        let (fx, fy) = net.junctions[from as usize];
        let (tx, ty) = net.junctions[to as usize];
        assert!(secs >= ((fx - tx).powi(2) + (fy - ty).powi(2)).sqrt() / net.max_speed_mps);
        // Dijkstra (A* with a zero heuristic) agrees on the travel time.
        let mut best = vec![f64::INFINITY; net.junctions.len()];
        let mut heap = BinaryHeap::new();
        best[from as usize] = 0.0;
        heap.push(Frontier {
            estimate: 0.0,
            junction: from,
        });
        while let Some(Frontier { estimate, junction }) = heap.pop() {
            if estimate > best[junction as usize] {
                continue;
            }
            for seg in net.out(junction) {
                let c = estimate + seg.length_m / seg.speed_mps;
                if c < best[seg.to as usize] {
                    best[seg.to as usize] = c;
                    heap.push(Frontier {
                        estimate: c,
                        junction: seg.to,
                    });
                }
            }
        }
        assert!(
            (best[to as usize] - secs).abs() < 1e-6,
            "dijkstra {} vs a* {secs}",
            best[to as usize]
        );
    }
}
