//! Growth exponents: the least-squares slope of log(y) against log(n), and the verdict that
//! compares it with the slope n log n has over the same record counts.
//!
//! Over n = base x 1, 2, 4, 8 the function n log n does not have slope 1 on a log-log plot but
//! slightly more (about 1 + 1 / ln n), so a cost is judged against the slope of n log n fitted over
//! the very same n values, plus a tolerance: a cost that grows as n^1.5 or n^2 exceeds it clearly,
//! one that grows as n log n does not.

/// The verdict text of a cost whose exponent stays within n log n's (plus the tolerance).
pub const WITHIN: &str = "<= n log n";
/// The verdict text of a cost that grows faster than n log n.
pub const SUPER: &str = "super-n-log-n";

/// The least-squares slope of ln(y) against ln(x) over the points with both coordinates positive
/// and finite; `None` with fewer than two such points or when every x is the same.
pub fn log_log_slope(points: &[(f64, f64)]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite() && *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    if sxx <= f64::EPSILON {
        return None;
    }
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    Some(sxy / sxx)
}

/// The slope of n log2 n fitted over these record counts (all at least 2): the reference an
/// exponent is judged against.
pub fn n_log_n_slope(ns: &[u64]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = ns
        .iter()
        .map(|&n| (n as f64, n as f64 * (n.max(2) as f64).log2()))
        .collect();
    log_log_slope(&pts)
}

/// [`WITHIN`] when `exponent` is at most the n log n slope plus `tolerance`, else [`SUPER`].
pub fn verdict(exponent: f64, n_log_n: f64, tolerance: f64) -> &'static str {
    if exponent <= n_log_n + tolerance {
        WITHIN
    } else {
        SUPER
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(ns: &[u64], f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        ns.iter().map(|&n| (n as f64, f(n as f64))).collect()
    }

    const NS: [u64; 4] = [10_000, 20_000, 40_000, 80_000];

    #[test]
    fn power_laws_give_their_exponents() {
        for k in [0.5, 1.0, 1.5, 2.0] {
            let s = log_log_slope(&curve(&NS, |n| 3.0 * n.powf(k))).unwrap();
            assert!((s - k).abs() < 1e-9, "{k}: {s}");
        }
        // A constant factor and noise-free data: exact.
        let s = log_log_slope(&curve(&NS, |n| 7.0 * n)).unwrap();
        assert!((s - 1.0).abs() < 1e-12);
    }

    #[test]
    fn n_log_n_is_a_little_steeper_than_n() {
        let r = n_log_n_slope(&NS).unwrap();
        assert!(r > 1.0 && r < 1.1, "{r}");
        // Over small n the log term weighs more.
        let small = n_log_n_slope(&[100, 200, 400, 800]).unwrap();
        assert!(small > r, "{small} vs {r}");
    }

    #[test]
    fn verdicts_separate_n_log_n_from_quadratic() {
        let r = n_log_n_slope(&NS).unwrap();
        let of = |f: &dyn Fn(f64) -> f64| verdict(log_log_slope(&curve(&NS, f)).unwrap(), r, 0.05);
        assert_eq!(of(&|n| n), WITHIN);
        assert_eq!(of(&|n| n * n.log2()), WITHIN);
        assert_eq!(of(&|n| n.ln().powi(2)), WITHIN);
        assert_eq!(of(&|n| n.powf(1.3)), SUPER);
        assert_eq!(of(&|n| n * n), SUPER);
    }

    #[test]
    fn degenerate_input_has_no_slope() {
        assert_eq!(log_log_slope(&[]), None);
        assert_eq!(log_log_slope(&[(1.0, 2.0)]), None);
        assert_eq!(log_log_slope(&[(4.0, 2.0), (4.0, 3.0)]), None);
        // Zeros and non-finite values are skipped, not fitted.
        assert_eq!(log_log_slope(&[(1.0, 0.0), (2.0, f64::NAN), (4.0, 4.0)]), None);
        let s = log_log_slope(&[(1.0, 0.0), (2.0, 2.0), (4.0, 4.0)]).unwrap();
        assert!((s - 1.0).abs() < 1e-12);
    }
}
