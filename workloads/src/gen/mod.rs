//! Synthetic stand-ins for the LSM RUM-tree paper's three datasets (PAPERS.md section 1,
//! "Datasets"), deterministic for (records, seed), so that experiments run on any machine without
//! the real files. Each generator reproduces the *shape* the paper's results depend on: how
//! clustered the points are, how far an object moves between two records, and how many records
//! each object has.

pub mod berlinmod;
pub mod chicago;
pub mod gowalla;

pub use berlinmod::{berlinmod, BerlinModParams};
pub use chicago::{chicago, ChicagoParams};
pub use gowalla::{gowalla, GowallaParams};

use crate::{Trajectories, WorkloadError};

/// The names `generate` accepts, in the paper's order.
pub const DATASETS: [&str; 3] = ["gowalla", "chicago", "berlinmod"];

/// Generates `records` records of the named dataset with its default parameters.
pub fn generate(name: &str, records: usize, seed: u64) -> Result<Trajectories, WorkloadError> {
    match name {
        "gowalla" => gowalla(records, seed, &GowallaParams::default()),
        "chicago" => chicago(records, seed, &ChicagoParams::default()),
        "berlinmod" => berlinmod(records, seed, &BerlinModParams::default()),
        _ => Err(WorkloadError::UnknownDataset {
            name: name.to_string(),
            valid: DATASETS.iter().map(|s| s.to_string()).collect(),
        }),
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
