//! Synthetic stand-ins for the LSM RUM-tree paper's three datasets
//! (`docs/papers/rum.md#the-paper-in-brief`, "Datasets"), deterministic for (records, objects,
//! seed), so that experiments run on any machine without the real files. Each generator reproduces
//! the *shape* the paper's results depend on: how clustered the points are, how far an object moves
//! between two records, and how many records each object has.
//!
//! The number of distinct objects (users, taxis, vehicles) is a parameter of its own
//! ([`GenSpec::objects`]): the paper's mechanisms hinge on how many live objects there are relative
//! to the memory component's capacity, so an experiment scales it with the capacity rather than
//! with the record count. [`paper_objects`] and [`paper_records`] give the real datasets' figures.

mod berlinmod;
mod chicago;
mod gowalla;

pub use berlinmod::{
    berlinmod, berlinmod_stream, metres_between, BerlinModParams, BerlinModStream, BERLINMOD_EXTENT,
    PAPER_RECORDS as BERLINMOD_PAPER_RECORDS, PAPER_VEHICLES as BERLINMOD_PAPER_VEHICLES,
};
pub use chicago::{chicago, ChicagoParams};
pub use gowalla::{gowalla, GowallaParams};

use crate::{Trajectories, WorkloadError};

/// The names `generate` accepts, in the paper's order.
pub const DATASETS: [&str; 3] = ["gowalla", "chicago", "berlinmod"];

/// The fewest objects a default object count gives (fewer only when there are fewer records): a
/// small run keeps a population of objects even where the paper's records per object would leave
/// one or two.
pub const MIN_DEFAULT_OBJECTS: usize = 50;

/// What to generate: how many records, and over how many distinct objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenSpec {
    /// Records in the stream.
    pub records: usize,
    /// Distinct objects in the stream; `None` takes [`default_objects`]. Every object has at least
    /// one record, so it must be in `1..=records`.
    pub objects: Option<usize>,
}

impl GenSpec {
    /// `records` records over the dataset's default number of objects.
    pub fn new(records: usize) -> GenSpec {
        GenSpec {
            records,
            objects: None,
        }
    }

    /// The same records over exactly `objects` distinct objects.
    pub fn with_objects(self, objects: usize) -> GenSpec {
        GenSpec {
            objects: Some(objects),
            ..self
        }
    }
}

fn unknown(name: &str) -> WorkloadError {
    WorkloadError::UnknownDataset {
        name: name.to_string(),
        valid: DATASETS.iter().map(|s| s.to_string()).collect(),
    }
}

/// Records in the real dataset the paper ran (`docs/papers/rum.md#the-paper-in-brief`): 6,442,757
/// Gowalla check-ins, 15,241,413 Chicago taxi pickups (2019), 56,129,943 BerlinMOD positions (SF
/// 1.0).
pub fn paper_records(name: &str) -> Result<usize, WorkloadError> {
    match name {
        "gowalla" => Ok(gowalla::PAPER_RECORDS),
        "chicago" => Ok(chicago::PAPER_RECORDS),
        "berlinmod" => Ok(berlinmod::PAPER_RECORDS),
        _ => Err(unknown(name)),
    }
}

/// Distinct objects in the real dataset the paper ran; the sources are on each constant:
/// [`gowalla::PAPER_USERS`], [`chicago::PAPER_TAXIS`] (an estimate: no published count of 2019's
/// distinct taxi ids was found), [`berlinmod::PAPER_VEHICLES`].
pub fn paper_objects(name: &str) -> Result<usize, WorkloadError> {
    match name {
        "gowalla" => Ok(gowalla::PAPER_USERS),
        "chicago" => Ok(chicago::PAPER_TAXIS),
        "berlinmod" => Ok(berlinmod::PAPER_VEHICLES),
        _ => Err(unknown(name)),
    }
}

/// The objects `generate` uses for `records` records when none are asked for: the real dataset's
/// records per object (`records x paper_objects / paper_records`, rounded), but at least
/// [`MIN_DEFAULT_OBJECTS`] and at most `records`.
pub fn default_objects(name: &str, records: usize) -> Result<usize, WorkloadError> {
    Ok(scaled_objects(
        records,
        paper_objects(name)?,
        paper_records(name)?,
    ))
}

/// `records x paper_objects / paper_records`, rounded, within `min(50, records)..=records`.
pub(crate) fn scaled_objects(records: usize, paper_objects: usize, paper_records: usize) -> usize {
    let scaled = (records as f64 * paper_objects as f64 / paper_records as f64).round() as usize;
    scaled.clamp(MIN_DEFAULT_OBJECTS.min(records), records)
}

/// Generates `records` records of the named dataset with its default parameters and objects.
pub fn generate(name: &str, records: usize, seed: u64) -> Result<Trajectories, WorkloadError> {
    generate_spec(name, &GenSpec::new(records), seed)
}

/// Generates the named dataset as `spec` says, with the dataset's default parameters otherwise.
pub fn generate_spec(name: &str, spec: &GenSpec, seed: u64) -> Result<Trajectories, WorkloadError> {
    match name {
        "gowalla" => gowalla(
            spec.records,
            seed,
            &GowallaParams {
                users: spec.objects,
                ..GowallaParams::default()
            },
        ),
        "chicago" => chicago(
            spec.records,
            seed,
            &ChicagoParams {
                taxis: spec.objects,
                ..ChicagoParams::default()
            },
        ),
        "berlinmod" => berlinmod(
            spec.records,
            seed,
            &BerlinModParams {
                vehicles: spec.objects,
                ..BerlinModParams::default()
            },
        ),
        _ => Err(unknown(name)),
    }
}

/// The object count a generator uses: `asked` if given (checked to be in `1..=records`), else
/// `default`. `what` names the objects in the error ("users", "taxis", "vehicles").
pub(crate) fn resolve_objects(
    generator: &'static str,
    what: &str,
    records: usize,
    asked: Option<usize>,
    default: usize,
) -> Result<usize, WorkloadError> {
    match asked {
        None => Ok(default),
        Some(0) => Err(WorkloadError::InvalidParameter {
            generator,
            reason: format!("{what} (objects) must be at least 1, got 0"),
        }),
        Some(n) if n > records => Err(WorkloadError::InvalidParameter {
            generator,
            reason: format!(
                "{what} (objects) = {n} exceeds records = {records}: every object needs at least one record"
            ),
        }),
        Some(n) => Ok(n),
    }
}

/// Sorted uniform instants in `[start, end)`: the arrival times of a Poisson process conditioned on
/// `n` arrivals (normalised exponential spacings), floored to whole seconds.
pub(crate) fn sorted_uniform_times<R: rand::Rng>(rng: &mut R, n: usize, start: i64, end: i64) -> Vec<i64> {
    use rand_distr::{Distribution, Exp1};
    let gaps: Vec<f64> = (0..=n).map(|_| Exp1.sample(rng)).collect();
    let total: f64 = gaps.iter().sum();
    let span = (end - start) as f64;
    let mut acc = 0.0;
    gaps[..n]
        .iter()
        .map(|g| {
            acc += g;
            start + ((acc / total) * span).floor() as i64
        })
        .collect()
}

pub(crate) fn check_time_range(generator: &'static str, start: i64, end: i64) -> Result<(), WorkloadError> {
    if end <= start {
        return Err(WorkloadError::InvalidParameter {
            generator,
            reason: format!("time range is empty: start {start} >= end {end}"),
        });
    }
    Ok(())
}

pub(crate) fn check_positive(generator: &'static str, what: &str, v: f64) -> Result<(), WorkloadError> {
    if !(v.is_finite() && v > 0.0) {
        return Err(WorkloadError::InvalidParameter {
            generator,
            reason: format!("{what} must be a positive number, got {v}"),
        });
    }
    Ok(())
}

pub(crate) fn check_probability(generator: &'static str, what: &str, v: f64) -> Result<(), WorkloadError> {
    if !(0.0..=1.0).contains(&v) {
        return Err(WorkloadError::InvalidParameter {
            generator,
            reason: format!("{what} must be a probability in [0, 1], got {v}"),
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::Trajectories;

    /// Asserts the invariants every generated dataset must satisfy.
    pub fn check_common(t: &Trajectories, records: usize) {
        assert_eq!(t.records.len(), records, "{}: record count", t.name);
        assert!(
            t.records.windows(2).all(|w| w[0].time <= w[1].time),
            "{}: time order",
            t.name
        );
        for r in &t.records {
            assert!(
                t.extent.contains_point(r.point),
                "{}: {:?} outside {:?}",
                t.name,
                r.point,
                t.extent
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generate_dispatches_and_rejects_unknown_names() {
        for name in DATASETS {
            let t = generate(name, 1000, 1).unwrap();
            assert_eq!(t.name, name);
            assert_eq!(t.records.len(), 1000);
        }
        let err = generate("nyc", 10, 1).unwrap_err().to_string();
        assert!(
            err.contains("\"nyc\"") && err.contains("gowalla, chicago, berlinmod"),
            "{err}"
        );
    }

    #[test]
    fn object_counts_are_checked_and_defaulted() {
        for name in DATASETS {
            let spec = GenSpec::new(1000).with_objects(0);
            let err = generate_spec(name, &spec, 1).unwrap_err().to_string();
            assert!(err.contains("at least 1") && err.contains(name), "{err}");
            let err = generate_spec(name, &GenSpec::new(10).with_objects(11), 1)
                .unwrap_err()
                .to_string();
            assert!(err.contains("11 exceeds records = 10"), "{err}");
            let t = generate_spec(name, &GenSpec::new(10).with_objects(10), 1).unwrap();
            assert_eq!(t.objects(), 10, "{name}");
            assert_eq!(default_objects(name, 7).unwrap(), 7);
            assert_eq!(default_objects(name, 1000).unwrap(), 50);
            let paper = paper_records(name).unwrap();
            assert_eq!(
                default_objects(name, paper).unwrap(),
                paper_objects(name).unwrap()
            );
        }
        assert_eq!(default_objects("gowalla", 20_000).unwrap(), 332);
        assert!(paper_objects("nyc").is_err() && default_objects("nyc", 5).is_err());
    }

    #[test]
    fn zero_records_is_an_empty_stream() {
        for name in DATASETS {
            let t = generate(name, 0, 1).unwrap();
            assert!(t.records.is_empty());
            assert!(t.extent.area() > 0.0);
        }
    }

    #[test]
    fn sorted_times_stay_in_range() {
        let mut rng = crate::seeded_rng(3, "t");
        let t = sorted_uniform_times(&mut rng, 1000, 100, 200);
        assert_eq!(t.len(), 1000);
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
        assert!(t.iter().all(|&x| (100..200).contains(&x)));
    }
}
