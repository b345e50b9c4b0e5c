//! Weighted choice by binary search over cumulative weights: deterministic, allocation-free per
//! draw, and independent of any hash order.

use rand::Rng;
use rand_distr::Normal;

/// The standard normal distribution N(0, 1), as the generators draw their Gaussian offsets.
#[allow(clippy::expect_used)] // constant parameters: a finite mean and a positive standard deviation
pub(crate) fn unit_normal() -> Normal<f64> {
    Normal::new(0.0, 1.0).expect("N(0, 1) is a valid normal")
}

/// Picks index `i` with probability `weights[i] / sum(weights)`; also picks within a contiguous
/// sub-range of indices with the weights restricted to it.
#[derive(Clone, Debug)]
pub(crate) struct CumulativeTable {
    /// `cum[i]` = sum of weights `0..=i`.
    cum: Vec<f64>,
}

impl CumulativeTable {
    /// `weights` must be non-empty, finite and non-negative with a positive sum.
    pub(crate) fn new(weights: impl IntoIterator<Item = f64>) -> Self {
        let mut acc = 0.0;
        let cum: Vec<f64> = weights
            .into_iter()
            .map(|w| {
                debug_assert!(w.is_finite() && w >= 0.0);
                acc += w;
                acc
            })
            .collect();
        assert!(
            !cum.is_empty() && acc > 0.0,
            "a weighted choice needs a positive total weight"
        );
        CumulativeTable { cum }
    }

    /// An index drawn over the whole table.
    pub(crate) fn sample<R: Rng>(&self, rng: &mut R) -> usize {
        self.sample_in(rng, 0, self.cum.len())
    }

    /// An index in `lo..hi` drawn with the weights restricted to that range.
    pub(crate) fn sample_in<R: Rng>(&self, rng: &mut R, lo: usize, hi: usize) -> usize {
        debug_assert!(lo < hi && hi <= self.cum.len());
        let base = if lo == 0 { 0.0 } else { self.cum[lo - 1] };
        let top = self.cum[hi - 1];
        let u = base + rng.random::<f64>() * (top - base);
        let i = lo + self.cum[lo..hi].partition_point(|&c| c <= u);
        i.min(hi - 1)
    }
}

/// Zipf weights `1 / rank^s` for ranks `1..=n`.
pub(crate) fn zipf_weights(n: usize, s: f64) -> impl Iterator<Item = f64> {
    (1..=n).map(move |k| (k as f64).powf(-s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;

    #[test]
    fn frequencies_follow_weights() {
        let t = CumulativeTable::new([1.0, 0.0, 3.0]);
        let mut rng = seeded_rng(1, "t");
        let mut n = [0usize; 3];
        for _ in 0..40_000 {
            n[t.sample(&mut rng)] += 1;
        }
        assert_eq!(n[1], 0);
        let share = n[2] as f64 / 40_000.0;
        assert!((0.73..0.77).contains(&share), "share {share}");
        for _ in 0..1000 {
            assert_eq!(t.sample_in(&mut rng, 2, 3), 2);
        }
    }
}
