//! Out-of-order time-series streams for the DIOL experiments
//! (`docs/papers/diol.md#the-project-in-brief`).
//!
//! One series with timestamps `1..=N`; a fraction `o3_ratio` of the points arrives late. A late
//! point with time `t` and delay `d` arrives right after the in-order point with time `t + d` (so
//! the arrival order is a permutation of `1..=N`). The delays come from a [`DelayModel`]:
//! - [`DelayModel::Diol`], the DIOL authors' generator (`src/test/DataFactory.cpp`): half of the
//!   late points in runs of consecutive times (a quarter of the runs 10 long, a quarter 30, half 20;
//!   one run per equal stride of the series), half single (one per stride of the in-order points);
//!   each run or point delayed by 30% U[1,500], 30% U[501,1000], 20% U[1001,2000], 20% U[1,N];
//! - [`DelayModel::Lognormal`] (mu 4, sigma 1.5 in "Separation or Not", ICDE 2022): single late
//!   points chosen uniformly;
//! - [`DelayModel::Sample`]: delays drawn uniformly from a sample, e.g. a file of real delays read
//!   by [`load_delays`] (`machinery_sensor_delays_ms.txt.gz`, one delay in ms per line; one point
//!   per ms).
//!
//! Delays are in timestamp units at the authors' scale (100M points) and are multiplied by
//! [`StreamSpec::delay_scale`] (the experiments pass `N / 100M`, at least 1 after rounding) so a
//! delay keeps its size against a memtable, which is what decides whether a late point still
//! lands in the active memtable; the U[1,N] branch is already relative to `N` and is not scaled.
//! Deviation: the authors place a late point after the in-order *line* whose rank is `t + d`
//! (ranks skip the late points); here it is the in-order point whose *time* is `t + d`.
//!
//! [`build_ops`] turns a stream into the authors' workloads: the first half is loaded untimed,
//! the second half is the timed phase with reads spliced in ([`TsWorkload`]).

use std::path::Path;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_distr::{Distribution, LogNormal};

use crate::load::reader::for_each_line;
use crate::{seeded_rng, WorkloadError};

/// Where delays come from.
#[derive(Clone, Debug, PartialEq)]
pub enum DelayModel {
    /// The DIOL authors' runs-and-singles mixture.
    Diol,
    /// Independent lognormal delays.
    Lognormal {
        /// Mean of the delay's logarithm.
        mu: f64,
        /// Standard deviation of the delay's logarithm (at least 0).
        sigma: f64,
    },
    /// Delays drawn uniformly from a sample (e.g. real delays from a file).
    Sample(std::sync::Arc<Vec<u64>>),
}

impl DelayModel {
    /// The lognormal of "Separation or Not" (mu 4, sigma 1.5).
    pub const PAPER_LOGNORMAL: DelayModel = DelayModel::Lognormal { mu: 4.0, sigma: 1.5 };
}

/// A stream to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamSpec {
    /// Points, timestamps `1..=points`.
    pub points: u64,
    /// Fraction of the points that arrive late, in `[0, 1)`.
    pub o3_ratio: f64,
    /// How late the late points arrive, in timestamps (a point `t` delayed by `d` arrives after
    /// `t + d`).
    pub delay: DelayModel,
    /// Factor applied to every delay except the mixture's U[1,N] branch.
    pub delay_scale: f64,
}

fn invalid(reason: String) -> WorkloadError {
    WorkloadError::InvalidParameter {
        generator: "ts",
        reason,
    }
}

impl StreamSpec {
    /// Refuses a spec [`generate_stream`] cannot honour: no points, a ratio outside `[0, 1)`, a delay
    /// scale that is not positive and finite, a lognormal with a non-finite mu or sigma or a negative sigma,
    /// an empty sample.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.points == 0 {
            return Err(invalid("points must be at least 1".into()));
        }
        if !(0.0..1.0).contains(&self.o3_ratio) {
            return Err(invalid(format!("o3_ratio {} is not in [0, 1)", self.o3_ratio)));
        }
        if !(self.delay_scale > 0.0 && self.delay_scale.is_finite()) {
            return Err(invalid(format!(
                "delay_scale {} must be positive",
                self.delay_scale
            )));
        }
        match &self.delay {
            DelayModel::Lognormal { mu, sigma }
                if !(mu.is_finite() && *sigma >= 0.0 && sigma.is_finite()) =>
            {
                Err(invalid(format!("lognormal mu {mu}, sigma {sigma}")))
            }
            DelayModel::Sample(s) if s.is_empty() => Err(invalid("the delay sample is empty".into())),
            _ => Ok(()),
        }
    }

    fn scaled(&self, d: u64) -> u64 {
        ((d as f64 * self.delay_scale).round() as u64).max(1)
    }
}

/// One of the mixture's delays (`setSingleDelayOffset` / `setSegmentDelayOffset`).
fn mixture_delay(rng: &mut impl Rng, spec: &StreamSpec) -> u64 {
    let c = rng.random_range(1..=100u32);
    if c <= 30 {
        spec.scaled(rng.random_range(1..=500))
    } else if c <= 60 {
        spec.scaled(rng.random_range(501..=1000))
    } else if c <= 80 {
        spec.scaled(rng.random_range(1001..=2000))
    } else {
        rng.random_range(1..=spec.points)
    }
}

/// The timestamps `1..=N` in arrival order.
pub fn generate_stream(spec: &StreamSpec, seed: u64) -> Result<Vec<u64>, WorkloadError> {
    spec.validate()?;
    let n = spec.points;
    let late_total = (n as f64 * spec.o3_ratio).floor() as u64;
    // (arrival, late?, time): in-order points arrive at their own time, before late ones there.
    let mut late: Vec<(u64, u64)> = Vec::with_capacity(late_total as usize);
    let mut is_late = vec![false; n as usize + 1];
    match &spec.delay {
        DelayModel::Diol => {
            let mut rng = seeded_rng(seed, "ts/diol-mixture");
            let run_points = late_total / 2;
            let singles = late_total / 2;
            // Run sizes: a quarter 10, a quarter 30, half 20, the remainder as one more run.
            let runs = run_points.div_ceil(20);
            let (q, h) = (runs / 4, runs / 2);
            let mut sizes: Vec<u64> = std::iter::repeat_n(10, q as usize)
                .chain(std::iter::repeat_n(30, q as usize))
                .chain(std::iter::repeat_n(20, h as usize))
                .collect();
            let assigned: u64 = sizes.iter().sum();
            if assigned < run_points {
                sizes.push(run_points - assigned);
            } else if assigned > run_points {
                let mut over = assigned - run_points;
                while over > 0 {
                    let Some(last) = sizes.last_mut() else { break }; // never: assigned > 0 means sizes
                    let cut = over.min(*last);
                    *last -= cut;
                    over -= cut;
                    if *last == 0 {
                        sizes.pop();
                    }
                }
            }
            sizes.shuffle(&mut rng);
            if !sizes.is_empty() {
                let stride = n / sizes.len() as u64;
                for (i, &size) in sizes.iter().enumerate() {
                    let start = i as u64 * stride + 1;
                    let size = size.min(stride.max(1));
                    let first = rng.random_range(start..=start + stride.saturating_sub(size));
                    let last_t = (first + size - 1).min(n);
                    let d = mixture_delay(&mut rng, spec);
                    for t in first..=last_t {
                        if !is_late[t as usize] {
                            is_late[t as usize] = true;
                            late.push((last_t + d, t));
                        }
                    }
                }
            }
            let remaining: Vec<u64> = (1..=n).filter(|&t| !is_late[t as usize]).collect();
            if let Some(stride) = (remaining.len() as u64).checked_div(singles) {
                let stride = stride.max(1);
                let mut i = 0u64;
                while i < singles && i * stride < remaining.len() as u64 {
                    let lo = i * stride;
                    let hi = ((i + 1) * stride).min(remaining.len() as u64) - 1;
                    let t = remaining[rng.random_range(lo..=hi) as usize];
                    is_late[t as usize] = true;
                    late.push((t + mixture_delay(&mut rng, spec), t));
                    i += 1;
                }
            }
        }
        model => {
            let mut rng = seeded_rng(seed, "ts/late-points");
            let chosen = rand::seq::index::sample(&mut rng, n as usize, late_total as usize);
            let mut drng = seeded_rng(seed, "ts/delays");
            let ln = match model {
                DelayModel::Lognormal { mu, sigma } => Some(
                    LogNormal::new(*mu, *sigma)
                        .map_err(|e| invalid(format!("lognormal delays (mu {mu}, sigma {sigma}): {e}")))?,
                ),
                _ => None,
            };
            for i in chosen.iter() {
                let t = i as u64 + 1;
                let raw = match (&ln, model) {
                    (Some(ln), _) => ln.sample(&mut drng).round().min(u64::MAX as f64 / 4.0) as u64,
                    (None, DelayModel::Sample(s)) => s[drng.random_range(0..s.len())],
                    _ => unreachable!("the mixture is handled above"),
                };
                is_late[t as usize] = true;
                late.push((t + spec.scaled(raw), t));
            }
        }
    }
    let mut order: Vec<(u64, bool, u64)> = (1..=n)
        .filter(|&t| !is_late[t as usize])
        .map(|t| (t, false, t))
        .chain(late.into_iter().map(|(a, t)| (a, true, t)))
        .collect();
    order.sort_unstable();
    Ok(order.into_iter().map(|x| x.2).collect())
}

/// Points that arrive after a point with a larger time (the stream's out-of-order points).
pub fn out_of_order_points(stream: &[u64]) -> u64 {
    let mut max = 0;
    let mut n = 0;
    for &t in stream {
        if t < max {
            n += 1;
        }
        max = max.max(t);
    }
    n
}

/// Reads delays, one non-negative integer per line (plain or gzip, told by its magic bytes);
/// blank lines and lines starting with `#` are skipped. A malformed line (or one longer than
/// [`crate::load::MAX_LINE_BYTES`]) is an error naming the file and line.
pub fn load_delays(path: &Path) -> Result<Vec<u64>, WorkloadError> {
    let mut out = Vec::new();
    for_each_line(path, &['#'], |line, s| {
        let d: u64 = s.parse().map_err(|_| WorkloadError::Malformed {
            path: path.to_path_buf(),
            line,
            reason: format!("expected one non-negative integer delay, found {s:?}"),
        })?;
        out.push(d);
        Ok(())
    })?;
    if out.is_empty() {
        return Err(WorkloadError::Empty {
            path: path.to_path_buf(),
            expected: "one integer delay per line".into(),
        });
    }
    Ok(out)
}

/// The authors' workloads, plus the recent-data read workload they proposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TsWorkload {
    /// 100% insert.
    A,
    /// 98% insert, 2% reads (point : range = 1 : 1) aimed about N/2 back.
    B,
    /// 95% insert, 5% reads aimed about N/2 back.
    C,
    /// 98% insert, 2% reads aimed at the most recent `recent_window` timestamps.
    Recent,
}

impl TsWorkload {
    /// Every workload.
    pub const ALL: [TsWorkload; 4] = [TsWorkload::A, TsWorkload::B, TsWorkload::C, TsWorkload::Recent];

    /// The name configurations and result rows use.
    pub fn name(self) -> &'static str {
        match self {
            TsWorkload::A => "A",
            TsWorkload::B => "B",
            TsWorkload::C => "C",
            TsWorkload::Recent => "recent",
        }
    }

    /// The workload called `s` (case-insensitive).
    pub fn parse(s: &str) -> Option<TsWorkload> {
        TsWorkload::ALL
            .into_iter()
            .find(|w| w.name().eq_ignore_ascii_case(s))
    }

    /// Fraction of operations that are reads.
    pub fn read_fraction(self) -> f64 {
        match self {
            TsWorkload::A => 0.0,
            TsWorkload::B | TsWorkload::Recent => 0.02,
            TsWorkload::C => 0.05,
        }
    }
}

/// One operation of the timed phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TsOp {
    /// Insert the point with this timestamp.
    Insert(u64),
    /// Read the point with this timestamp.
    Get(u64),
    /// Inclusive time range.
    Range(u64, u64),
}

/// How reads are built.
#[derive(Clone, Debug, PartialEq)]
pub struct OpsSpec {
    /// Which mix of inserts and reads.
    pub workload: TsWorkload,
    /// Factor on the authors' range lengths (1-500 or 501-5000 points, half each).
    pub range_scale: f64,
    /// Timestamps back from the newest that `Recent` reads aim at.
    pub recent_window: u64,
}

/// A range length: half U[1,500], half U[501,5000] (`generateReadRangeDataset` in IoTDB-lsm),
/// times `scale`, at least 1.
fn range_len(rng: &mut impl Rng, scale: f64) -> u64 {
    let len: u64 = if rng.random_bool(0.5) {
        rng.random_range(1..=500)
    } else {
        rng.random_range(501..=5000)
    };
    ((len as f64 * scale).round() as u64).max(1)
}

/// The untimed load (the stream's first half, returned as a count) and the timed phase: the
/// second half's inserts with reads spliced in. `B`/`C` follow the authors
/// (`generateReadRangeDataset`, `transferLinesToWorkloadFile`): `half * read/insert / 2` point
/// reads of a key `k` uniform in `[1, half]`, issued after the `k`-th insert of the timed phase
/// (so about `N/2` old), and as many ranges starting at a uniform `s` (issued after the `s`-th
/// insert); a position holding both keeps the point read, repeated positions collapse.
/// `Recent` issues the same number of reads at uniform positions, aimed uniformly at the last
/// `recent_window` timestamps inserted.
pub fn build_ops(stream: &[u64], spec: &OpsSpec, seed: u64) -> Result<(usize, Vec<TsOp>), WorkloadError> {
    if !(spec.range_scale > 0.0 && spec.range_scale.is_finite()) {
        return Err(invalid(format!(
            "range_scale {} must be positive",
            spec.range_scale
        )));
    }
    let half = stream.len() / 2;
    let timed = &stream[half..];
    let rf = spec.workload.read_fraction();
    let per_kind = (half as f64 * (rf / (1.0 - rf)) * 0.5).floor() as usize;
    let mut rng = seeded_rng(seed, &format!("ts/ops/{}", spec.workload.name()));
    // reads[p]: the read issued after the p-th timed insert (p counts from 0).
    let mut reads: Vec<Option<TsOp>> = vec![None; timed.len() + 1];
    if per_kind > 0 && half > 0 {
        match spec.workload {
            TsWorkload::A => {}
            TsWorkload::B | TsWorkload::C => {
                for _ in 0..per_kind {
                    let k = rng.random_range(1..=half);
                    if k < reads.len() {
                        reads[k] = Some(TsOp::Get(k as u64));
                    }
                }
                let max_len = (5000.0 * spec.range_scale).round().max(1.0) as usize;
                let top = half.saturating_sub(max_len).max(1);
                for _ in 0..per_kind {
                    let s = rng.random_range(1..=top);
                    let len = range_len(&mut rng, spec.range_scale);
                    if s < reads.len() && reads[s].is_none() {
                        reads[s] = Some(TsOp::Range(s as u64, s as u64 + len));
                    }
                }
            }
            TsWorkload::Recent => {
                let w = spec.recent_window.max(1);
                for i in 0..2 * per_kind {
                    let p = rng.random_range(0..timed.len().max(1));
                    let newest = (half + p + 1) as u64;
                    let lo = newest.saturating_sub(w - 1).max(1);
                    let start = rng.random_range(lo..=newest);
                    reads[p] = Some(if i % 2 == 0 {
                        TsOp::Get(start)
                    } else {
                        TsOp::Range(start, start + range_len(&mut rng, spec.range_scale).min(w))
                    });
                }
            }
        }
    }
    let mut ops = Vec::with_capacity(timed.len() + 2 * per_kind);
    for (p, &t) in timed.iter().enumerate() {
        ops.push(TsOp::Insert(t));
        if let Some(r) = reads[p] {
            ops.push(r);
        }
    }
    Ok((half, ops))
}
