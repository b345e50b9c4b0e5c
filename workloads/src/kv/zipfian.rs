//! YCSB's skewed key generators, ported from the algorithm (not the code) of YCSB's
//! `site.ycsb.generator` package: `ZipfianGenerator`, `ScrambledZipfianGenerator` and
//! `SkewedLatestGenerator`.
//!
//! The zipfian draw is the one of Gray, Sundaresan, Englert, Baclawski and Weinberger, "Quickly
//! generating billion-record synthetic databases" (SIGMOD 1994), as YCSB uses it: with
//! `zeta(n, θ) = Σ_{i=1..n} 1/i^θ`, `α = 1/(1-θ)` and
//! `η = (1 - (2/n)^(1-θ)) / (1 - zeta(2, θ)/zeta(n, θ))`, a uniform `u ∈ [0, 1)` gives item 0 when
//! `u·zeta(n) < 1`, item 1 when `u·zeta(n) < 1 + 0.5^θ`, and `⌊n·(η·u - η + 1)^α⌋` otherwise.
//! Items are `0..n`, item 0 the most popular.
//!
//! The algorithm is exact for items 0 and 1 and approximates the tail by a continuous power law:
//! at n = 1000 its item probabilities differ from the zipf pmf `1/((i+1)^θ · zeta(n, θ))` by up to
//! 6% (θ = 0.3), 10% (θ = 0.5) and 17% (θ = 0.99), largest at item 2, with a total variation
//! distance of at most 0.017. [`Zipfian::probability`] gives the algorithm's exact item
//! probabilities, against which the tests check the sampler.
//!
//! **The zipf constant.** YCSB's algorithm divides by `1 - θ`, so θ = 1 has no meaning in it and
//! θ > 1 makes η and α describe no distribution. The supported range is `0 <= θ < 1`; anything
//! else (1.0, negatives, NaN) is an [`WorkloadError::InvalidParameter`] that says so. A sweep
//! "from 0 to 1" (Leaper's Figure 14) runs its last point at 0.99, YCSB's own default constant
//! ([`YCSB_ZIPFIAN_CONSTANT`]). θ = 0 needs no special case: `zeta(n, 0) = n` and `η = 1`, so the
//! draw is `⌊n·u⌋` (with items 0 and 1 taken by the two shortcuts, `u < 1/n` and `u < 2/n`),
//! exactly uniform over `0..n`.

use rand::Rng;

use crate::WorkloadError;

/// YCSB's default zipfian constant (`ZipfianGenerator.ZIPFIAN_CONSTANT`).
pub const YCSB_ZIPFIAN_CONSTANT: f64 = 0.99;

/// The item count YCSB's scrambled zipfian draws from before hashing
/// (`ScrambledZipfianGenerator.ITEM_COUNT`, ten billion).
pub const YCSB_SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;

/// YCSB's precomputed `zeta(10^10, 0.99)` (`ScrambledZipfianGenerator.ZETAN`).
pub const YCSB_SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// Above this many items [`zeta`] switches from the plain sum YCSB computes to an Euler–Maclaurin
/// evaluation (a plain sum of 10^10 powers takes minutes).
const DIRECT_ZETA_LIMIT: u64 = 100_000_000;

/// `Σ_{i=1..n} 1/i^θ`: YCSB's `zetastatic(n, θ)`. Summed term by term (as YCSB does) up to 10^8
/// items; beyond, the first 10^6 terms plus the Euler–Maclaurin remainder (integral, end-point
/// and two Bernoulli correction terms, truncation error below 1e-30), which agrees with YCSB's
/// precomputed `zeta(10^10, 0.99)` to about 1e-12 relative (tested).
pub fn zeta(n: u64, theta: f64) -> f64 {
    if n <= DIRECT_ZETA_LIMIT {
        return zeta_range(0, n, theta, 0.0);
    }
    let m: u64 = 1_000_000;
    let head = zeta_range(0, m - 1, theta, 0.0); // terms 1..m-1
    let (mf, nf) = (m as f64, n as f64);
    let f = |x: f64| x.powf(-theta);
    let f1 = |x: f64| -theta * x.powf(-theta - 1.0);
    let f3 = |x: f64| -theta * (theta + 1.0) * (theta + 2.0) * x.powf(-theta - 3.0);
    let integral = if theta == 1.0 {
        (nf / mf).ln()
    } else {
        (nf.powf(1.0 - theta) - mf.powf(1.0 - theta)) / (1.0 - theta)
    };
    // Σ_{i=m..n} f(i) = ∫_m^n f + (f(m)+f(n))/2 + (f'(n)-f'(m))/12 - (f'''(n)-f'''(m))/720 + ...
    let tail = integral + (f(mf) + f(nf)) / 2.0 + (f1(nf) - f1(mf)) / 12.0 - (f3(nf) - f3(mf)) / 720.0;
    head + tail
}

/// `initial + Σ_{i=from+1..to} 1/i^θ`, summed in increasing `i` (YCSB's four-argument
/// `zetastatic`, used to extend `zeta(from)` to `zeta(to)` when the item count grows).
fn zeta_range(from: u64, to: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in from..to {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// The error for a zipf constant outside `0 <= θ < 1`.
fn check_theta(generator: &'static str, theta: f64) -> Result<(), WorkloadError> {
    if theta.is_finite() && (0.0..1.0).contains(&theta) {
        return Ok(());
    }
    let why = if theta == 1.0 {
        "YCSB's zipfian algorithm divides by 1 - theta, so 1.0 is undefined; use 0.99 (YCSB's default) \
         for the most skewed point"
    } else {
        "the algorithm is defined for 0 <= theta < 1"
    };
    Err(WorkloadError::InvalidParameter {
        generator,
        reason: format!("zipf constant {theta} is outside [0, 1): {why}"),
    })
}

/// YCSB's `ZipfianGenerator` over items `0..items` (see the module documentation).
///
/// The item count can grow between draws ([`Zipfian::sample_with_count`], YCSB's
/// `nextLong(itemcount)`): `zeta` is then extended incrementally. As in YCSB, η is recomputed with
/// the item count the generator was *built* with in its `(2/n)^(1-θ)` term, not the grown one;
/// this only matters for [`Latest`], which grows its count, and is kept so that [`Latest`] draws
/// what YCSB's `SkewedLatestGenerator` draws. A count smaller than the one `zeta` was computed for
/// leaves `zeta` and η as they are (YCSB's default, `allowitemcountdecrease = false`).
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2theta: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: u64,
}

impl Zipfian {
    /// A zipfian over `0..items` with constant `theta` (`0 <= theta < 1`); computes
    /// `zeta(items, theta)` (a sum of `items` powers: time linear in `items`).
    pub fn new(items: u64, theta: f64) -> Result<Self, WorkloadError> {
        check_theta("zipfian", theta)?;
        Self::with_zetan(items, theta, zeta(items, theta))
    }

    /// A zipfian over `0..items` with a precomputed `zeta(items, theta)` (YCSB's five-argument
    /// constructor, which the scrambled generator uses with its constant).
    pub fn with_zetan(items: u64, theta: f64, zetan: f64) -> Result<Self, WorkloadError> {
        check_theta("zipfian", theta)?;
        if items == 0 {
            return Err(WorkloadError::InvalidParameter {
                generator: "zipfian",
                reason: "the item count must be at least 1".into(),
            });
        }
        if !(zetan.is_finite() && zetan >= 1.0) {
            return Err(WorkloadError::InvalidParameter {
                generator: "zipfian",
                reason: format!("zeta(n, theta) must be finite and >= 1, got {zetan}"),
            });
        }
        let zeta2theta = zeta_range(0, 2, theta, 0.0);
        Ok(Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2theta,
            zetan,
            eta: Self::eta(items, theta, zeta2theta, zetan),
            count_for_zeta: items,
        })
    }

    /// Gray's η. For `n <= 2` it is 0/0, but then the two shortcuts take every draw
    /// (`u·zeta(n) < zeta(2)` for every `u < 1`), so η is never used.
    fn eta(n: u64, theta: f64, zeta2theta: f64, zetan: f64) -> f64 {
        (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan)
    }

    /// The item count the generator was built with.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The zipf constant θ.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// `zeta(n, θ)` for the item count last drawn from.
    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    /// One item in `0..items` (YCSB's `nextValue`).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.random();
        Self::draw(u, self.items, self.zetan, self.eta, self.theta, self.alpha)
    }

    /// One item in `0..count` (YCSB's `nextLong(itemcount)`), extending `zeta` if `count` grew
    /// since the last call. `count = 0` is treated as 1 (the draw is 0).
    pub fn sample_with_count<R: Rng + ?Sized>(&mut self, rng: &mut R, count: u64) -> u64 {
        let count = count.max(1);
        if count > self.count_for_zeta {
            self.zetan = zeta_range(self.count_for_zeta, count, self.theta, self.zetan);
            // YCSB recomputes η with the original item count here (see the type's documentation).
            self.eta = Self::eta(self.items, self.theta, self.zeta2theta, self.zetan);
            self.count_for_zeta = count;
        }
        let u: f64 = rng.random();
        Self::draw(u, count, self.zetan, self.eta, self.theta, self.alpha)
    }

    /// Gray's draw for a uniform `u`. The final `min` only guards against `(η·u - η + 1)^α`
    /// rounding up to 1.0 for `u` within an ulp of 1 (YCSB has no such guard).
    fn draw(u: f64, count: u64, zetan: f64, eta: f64, theta: f64, alpha: f64) -> u64 {
        let uz = u * zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(theta) {
            return 1.min(count - 1);
        }
        let x = count as f64 * (eta * u - eta + 1.0).powf(alpha);
        (x as u64).min(count - 1)
    }

    /// The exact probability that [`Zipfian::sample`] returns `item` (the measure of the `u` that
    /// map to it), which differs from the zipf pmf by Gray's tail approximation (module
    /// documentation). Items outside `0..items` have probability 0.
    pub fn probability(&self, item: u64) -> f64 {
        let n = self.items;
        if item >= n {
            return 0.0;
        }
        let first = (1.0 / self.zetan).min(1.0);
        let second = ((1.0 + 0.5f64.powf(self.theta)) / self.zetan).min(1.0);
        match item {
            0 => first,
            1 => second - first,
            _ => {
                // The draw is >= k (k >= 2) iff u >= ((k/n)^(1-θ) - 1)/η + 1, beyond the shortcuts.
                let from = |k: u64| -> f64 {
                    if k >= n {
                        return 1.0;
                    }
                    let u = ((k as f64 / n as f64).powf(1.0 - self.theta) - 1.0) / self.eta + 1.0;
                    u.clamp(second, 1.0)
                };
                from(item + 1) - from(item)
            }
        }
    }
}

/// YCSB's `Utils.fnvhash64`: FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3,
/// xor then multiply) over the eight bytes of `value`, lowest byte first, then the absolute value
/// of the result read as a signed 64-bit integer. YCSB's `Math.abs` leaves `i64::MIN` negative;
/// here its magnitude 2^63 is returned (the one hash value where the two differ).
pub fn ycsb_fnvhash64(value: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in value.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h as i64).unsigned_abs()
}

/// YCSB's `ScrambledZipfianGenerator` over `0..items`: a [`Zipfian`] over YCSB's fixed
/// `10^10 + 1` items (YCSB builds it as `ZipfianGenerator(0, ITEM_COUNT, ...)`, both ends
/// included) with the precomputed `zeta(10^10, 0.99)`, then [`ycsb_fnvhash64`] of the drawn item
/// modulo `items`.
///
/// Popular items are scattered over the key space, and the distribution over `0..items` is *not*
/// the zipfian over `items` items: item `i` of the large space has probability about
/// `1/((i+1)^θ · 26.47)`, and all items beyond the first few land on keys as near-uniform noise.
/// At `items = 1000` and θ = 0.99 the most popular key gets about 3.9% of draws, against 12.9%
/// for the plain [`Zipfian`] over 1000 items (tested); the two profiles converge only as `items`
/// approaches 10^10.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    inner: Zipfian,
    items: u64,
}

impl ScrambledZipfian {
    /// YCSB's scrambled zipfian over `0..items` with its constant 0.99 and precomputed zeta.
    pub fn new(items: u64) -> Result<Self, WorkloadError> {
        Self::build(items, YCSB_ZIPFIAN_CONSTANT)
    }

    /// The scrambled zipfian with another constant (YCSB comments this constructor out because it
    /// has precomputed zeta for 0.99 only; here `zeta(10^10 + 1, theta)` comes from [`zeta`]'s
    /// Euler–Maclaurin evaluation). For 0.99 this is [`ScrambledZipfian::new`].
    pub fn with_constant(items: u64, theta: f64) -> Result<Self, WorkloadError> {
        Self::build(items, theta)
    }

    fn build(items: u64, theta: f64) -> Result<Self, WorkloadError> {
        check_theta("scrambled zipfian", theta)?;
        if items == 0 {
            return Err(WorkloadError::InvalidParameter {
                generator: "scrambled zipfian",
                reason: "the item count must be at least 1".into(),
            });
        }
        let big = YCSB_SCRAMBLED_ITEM_COUNT + 1;
        let zetan = if theta == YCSB_ZIPFIAN_CONSTANT {
            YCSB_SCRAMBLED_ZETAN
        } else {
            zeta(big, theta)
        };
        Ok(ScrambledZipfian {
            inner: Zipfian::with_zetan(big, theta, zetan)?,
            items,
        })
    }

    /// The number of keys drawn over.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// One key in `0..items`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        ycsb_fnvhash64(self.inner.sample(rng)) % self.items
    }
}

/// YCSB's `SkewedLatestGenerator`: the most recently inserted keys are the most popular. Given
/// the newest key `newest` (YCSB's insert counter's last value), a draw is
/// `newest - z` with `z` a [`Zipfian`] draw over `0..newest` items, so it lies in `1..=newest`,
/// `newest` itself the most likely. Like YCSB, key 0 is never drawn, and the zipfian is built for
/// the first `newest` and grows with it (see [`Zipfian`] on how η is then computed).
#[derive(Clone, Debug)]
pub struct Latest {
    zipf: Zipfian,
}

impl Latest {
    /// YCSB's generator (constant 0.99) for a key space whose newest key is `newest` (>= 1).
    pub fn new(newest: u64) -> Result<Self, WorkloadError> {
        Self::with_constant(newest, YCSB_ZIPFIAN_CONSTANT)
    }

    /// The same with another zipf constant in `[0, 1)`.
    pub fn with_constant(newest: u64, theta: f64) -> Result<Self, WorkloadError> {
        if newest == 0 {
            return Err(WorkloadError::InvalidParameter {
                generator: "latest",
                reason: "the newest key must be at least 1 (draws lie in 1..=newest)".into(),
            });
        }
        Ok(Latest {
            zipf: Zipfian::new(newest, theta)?,
        })
    }

    /// One key in `1..=newest`, where `newest` is the newest key now (it may have grown since the
    /// last call). `newest = 0` gives 0.
    pub fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R, newest: u64) -> u64 {
        if newest == 0 {
            return 0;
        }
        newest - self.zipf.sample_with_count(rng, newest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_ycsb_reference_values() {
        // Values printed by YCSB's own `Utils.fnvhash64` (compiled from its source and run).
        let reference: [(u64, u64); 5] = [
            (0, 0x5738_07cd_d7e5_c63b),
            (1, 0x7632_ced6_e2d5_105c),
            (2, 0x1942_79bb_c207_31f9),
            (12345, 0x18e1_4e7a_1d12_33b4),
            (10_000_000_000, 0x10ab_f363_08de_12a4),
        ];
        for (v, h) in reference {
            assert_eq!(ycsb_fnvhash64(v), h, "fnvhash64({v})");
        }
    }

    #[test]
    fn euler_maclaurin_matches_the_direct_sum_and_ycsb_constant() {
        for theta in [0.0, 0.3, 0.5, 0.9, 0.99] {
            // Compare the two evaluations just above the switch-over point's head size.
            let n = 3_000_000u64;
            let direct = zeta_range(0, n, theta, 0.0);
            let m: u64 = 1_000_000;
            let head = zeta_range(0, m - 1, theta, 0.0);
            let (mf, nf) = (m as f64, n as f64);
            let integral = (nf.powf(1.0 - theta) - mf.powf(1.0 - theta)) / (1.0 - theta);
            let approx = head
                + integral
                + (mf.powf(-theta) + nf.powf(-theta)) / 2.0
                + (-theta * nf.powf(-theta - 1.0) + theta * mf.powf(-theta - 1.0)) / 12.0;
            assert!(
                (direct - approx).abs() / direct < 1e-12,
                "theta {theta}: {direct} vs {approx}"
            );
        }
        let z = zeta(YCSB_SCRAMBLED_ITEM_COUNT, 0.99);
        assert!(
            (z - YCSB_SCRAMBLED_ZETAN).abs() / YCSB_SCRAMBLED_ZETAN < 1e-9,
            "{z} vs {YCSB_SCRAMBLED_ZETAN}"
        );
    }

    #[test]
    fn probabilities_sum_to_one() {
        for (n, theta) in [
            (1u64, 0.5),
            (2, 0.5),
            (3, 0.9),
            (1000, 0.0),
            (1000, 0.5),
            (1000, 0.99),
        ] {
            let z = Zipfian::new(n, theta).unwrap();
            let total: f64 = (0..n).map(|i| z.probability(i)).sum();
            assert!((total - 1.0).abs() < 1e-9, "n {n} theta {theta}: {total}");
            assert!((0..n).all(|i| z.probability(i) >= 0.0));
        }
    }
}
