//! YCSB's generators checked on statistics that do not depend on the seed: frequencies of the top
//! ranks against the zipf law and against the algorithm's exact item probabilities, chi-square
//! bounds over all items, and the scrambled variant's key profile against the one its definition
//! implies.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use lsmlab_workloads::kv::{
    ycsb_fnvhash64, zeta, Latest, ScrambledZipfian, Zipfian, YCSB_SCRAMBLED_ITEM_COUNT, YCSB_SCRAMBLED_ZETAN,
};
use lsmlab_workloads::{seeded_rng, WorkloadError};

const N: u64 = 1000;
const DRAWS: usize = 1_000_000;

fn counts(mut draw: impl FnMut() -> u64, n: u64, draws: usize) -> Vec<u64> {
    let mut c = vec![0u64; n as usize];
    for _ in 0..draws {
        c[draw() as usize] += 1;
    }
    c
}

/// Pearson's chi-square of `counts` against probabilities `p` (bins with p = 0 must be empty).
fn chi_square(counts: &[u64], p: &[f64], draws: usize) -> f64 {
    counts
        .iter()
        .zip(p)
        .map(|(&c, &pi)| {
            let e = pi * draws as f64;
            assert!(e > 0.0 || c == 0, "a draw landed on an item of probability 0");
            if e > 0.0 {
                (c as f64 - e).powi(2) / e
            } else {
                0.0
            }
        })
        .sum()
}

/// A bound a chi-square with `df` degrees of freedom exceeds with negligible probability
/// (mean + 6 standard deviations).
fn chi_bound(df: usize) -> f64 {
    df as f64 + 6.0 * (2.0 * df as f64).sqrt()
}

#[test]
fn zipfian_follows_its_exact_pmf_and_the_zipf_law() {
    for theta in [0.3, 0.5, 0.9, 0.99] {
        let z = Zipfian::new(N, theta).unwrap();
        let zn = zeta(N, theta);
        assert!((z.zetan() - zn).abs() < 1e-12);
        let mut rng = seeded_rng(11, &format!("zipf/{theta}"));
        let c = counts(|| z.sample(&mut rng), N, DRAWS);
        let alg: Vec<f64> = (0..N).map(|i| z.probability(i)).collect();
        let law: Vec<f64> = (0..N).map(|i| 1.0 / ((i + 1) as f64).powf(theta) / zn).collect();

        // Computed, not sampled: Gray's algorithm is exact for items 0 and 1 and within 18% of
        // the zipf pmf for every item at n = 1000 (its tail is a continuous approximation).
        assert!((alg[0] / law[0] - 1.0).abs() < 1e-12 && (alg[1] / law[1] - 1.0).abs() < 1e-12);
        let worst = alg
            .iter()
            .zip(&law)
            .map(|(a, l)| (a / l - 1.0).abs())
            .fold(0.0, f64::max);
        assert!(worst < 0.18, "theta {theta}: worst relative deviation {worst}");
        // Popularity decreases with the item number.
        assert!(
            alg.windows(2).all(|w| w[0] >= w[1] - 1e-15),
            "theta {theta}: not monotone"
        );

        // Sampled: the top ranks within 5 binomial standard deviations of the algorithm's pmf,
        // and items 0 and 1 of the zipf law itself; the rest of the top ten within 20% of it.
        for i in 0..10 {
            let f = c[i] as f64 / DRAWS as f64;
            let sd = (alg[i] * (1.0 - alg[i]) / DRAWS as f64).sqrt();
            assert!(
                (f - alg[i]).abs() < 5.0 * sd,
                "theta {theta} rank {i}: {f} vs {}",
                alg[i]
            );
            let tol = if i < 2 { 5.0 * sd / law[i] } else { 0.2 };
            assert!(
                (f / law[i] - 1.0).abs() < tol,
                "theta {theta} rank {i}: {f} vs zipf {}",
                law[i]
            );
        }
        // And the whole distribution, every item, by chi-square.
        let x2 = chi_square(&c, &alg, DRAWS);
        assert!(x2 < chi_bound(N as usize - 1), "theta {theta}: chi-square {x2}");
    }
}

#[test]
fn zipf_constant_zero_is_uniform() {
    let z = Zipfian::new(N, 0.0).unwrap();
    assert!((0..N).all(|i| (z.probability(i) - 1.0 / N as f64).abs() < 1e-12));
    let mut rng = seeded_rng(3, "uniform");
    let c = counts(|| z.sample(&mut rng), N, DRAWS);
    let x2 = chi_square(&c, &vec![1.0 / N as f64; N as usize], DRAWS);
    assert!(x2 < chi_bound(N as usize - 1), "chi-square {x2}");
    // A skewed draw fails the same bound (the test can fail).
    let skewed = Zipfian::new(N, 0.3).unwrap();
    let c = counts(|| skewed.sample(&mut rng), N, DRAWS);
    assert!(chi_square(&c, &vec![1.0 / N as f64; N as usize], DRAWS) > chi_bound(N as usize - 1));
}

#[test]
fn tiny_item_counts_stay_in_range() {
    for n in [1u64, 2, 3] {
        for theta in [0.0, 0.5, 0.99] {
            let z = Zipfian::new(n, theta).unwrap();
            let mut rng = seeded_rng(n, "tiny");
            let c = counts(|| z.sample(&mut rng), n, 20_000);
            let p: Vec<f64> = (0..n).map(|i| z.probability(i)).collect();
            assert!(chi_square(&c, &p, 20_000) < chi_bound(n as usize) + 10.0);
        }
    }
}

#[test]
fn constants_outside_zero_to_one_are_refused() {
    for theta in [1.0, 1.5, -0.1, f64::NAN, f64::INFINITY] {
        let e = Zipfian::new(N, theta).unwrap_err();
        assert!(matches!(e, WorkloadError::InvalidParameter { .. }), "{e}");
        assert!(ScrambledZipfian::with_constant(N, theta).is_err());
        assert!(Latest::with_constant(N, theta).is_err());
    }
    let msg = Zipfian::new(N, 1.0).unwrap_err().to_string();
    assert!(msg.contains("0.99") && msg.contains("[0, 1)"), "{msg}");
    assert!(Zipfian::new(0, 0.5).is_err());
    assert!(ScrambledZipfian::new(0).is_err());
    assert!(Latest::new(0).is_err());
}

/// The key probabilities a scrambled zipfian over `n` keys implies: item `i` of YCSB's large
/// space has the plain generator's probability and lands on key `fnvhash64(i) mod n`; the first
/// `head` items are folded exactly, the rest (near-uniform noise over the keys) evenly.
fn scrambled_expectation(n: u64, head: u64) -> Vec<f64> {
    let big = Zipfian::with_zetan(YCSB_SCRAMBLED_ITEM_COUNT + 1, 0.99, YCSB_SCRAMBLED_ZETAN).unwrap();
    let mut q = vec![0.0; n as usize];
    let mut folded = 0.0;
    for i in 0..head {
        let p = big.probability(i);
        folded += p;
        q[(ycsb_fnvhash64(i) % n) as usize] += p;
    }
    let rest = (1.0 - folded) / n as f64;
    q.iter_mut().for_each(|x| *x += rest);
    q
}

#[test]
fn scrambled_zipfian_has_the_profile_its_definition_implies() {
    let s = ScrambledZipfian::new(N).unwrap();
    let mut rng = seeded_rng(5, "scrambled");
    let c = counts(|| s.sample(&mut rng), N, DRAWS);
    let q = scrambled_expectation(N, 200_000);

    // Key by key: the most popular keys are fnvhash64(0), fnvhash64(1), ... mod n.
    let x2 = chi_square(&c, &q, DRAWS);
    assert!(x2 < chi_bound(N as usize - 1), "chi-square {x2}");
    let top = (0..N as usize).max_by_key(|&k| c[k]).unwrap() as u64;
    assert_eq!(top, ycsb_fnvhash64(0) % N);

    // Sorted frequency profile: the ten most frequent keys' shares match the expected sorted
    // profile within 5 standard deviations.
    let mut emp: Vec<f64> = c.iter().map(|&x| x as f64 / DRAWS as f64).collect();
    emp.sort_by(|a, b| b.partial_cmp(a).unwrap());
    let mut exp = q.clone();
    exp.sort_by(|a, b| b.partial_cmp(a).unwrap());
    for r in 0..10 {
        let sd = (exp[r] * (1.0 - exp[r]) / DRAWS as f64).sqrt();
        assert!(
            (emp[r] - exp[r]).abs() < 5.0 * sd + 1e-4,
            "rank {r}: {} vs {}",
            emp[r],
            exp[r]
        );
    }

    // ... which is much flatter than the plain zipfian over the same n keys: the top key has
    // 1/zeta(10^10) + noise (about 3.9%), not 1/zeta(1000) (12.9%).
    let plain = Zipfian::new(N, 0.99).unwrap();
    assert!((exp[0] - 0.0389).abs() < 0.001, "{}", exp[0]);
    assert!(plain.probability(0) > 3.0 * emp[0]);
}

#[test]
fn scrambled_with_another_constant_uses_its_own_zeta() {
    // At 0.5 over 10^10 + 1 items, zeta is about 2e5: every key of 1000 gets ~1/1000.
    let s = ScrambledZipfian::with_constant(N, 0.5).unwrap();
    let mut rng = seeded_rng(6, "scrambled/0.5");
    let c = counts(|| s.sample(&mut rng), N, 200_000);
    let x2 = chi_square(&c, &vec![1.0 / N as f64; N as usize], 200_000);
    assert!(x2 < chi_bound(N as usize - 1), "chi-square {x2}");
    assert!((zeta(YCSB_SCRAMBLED_ITEM_COUNT + 1, 0.5) / 2e5 - 1.0).abs() < 0.01);
}

#[test]
fn latest_favours_the_newest_keys_as_the_count_grows() {
    let mut l = Latest::new(N).unwrap();
    let z = Zipfian::new(N, 0.99).unwrap();
    let mut rng = seeded_rng(9, "latest");
    let mut c = vec![0u64; N as usize + 1];
    for _ in 0..DRAWS / 2 {
        let k = l.sample(&mut rng, N);
        assert!((1..=N).contains(&k), "{k}");
        c[k as usize] += 1;
    }
    assert_eq!(c[0], 0, "YCSB's latest never draws key 0");
    // Key newest - j has the zipfian's probability of item j.
    let p: Vec<f64> = (0..=N)
        .map(|k| if k == 0 { 0.0 } else { z.probability(N - k) })
        .collect();
    let x2 = chi_square(&c, &p, DRAWS / 2);
    assert!(x2 < chi_bound(N as usize - 1), "chi-square {x2}");

    // After growth to 2N keys: the newest key has probability 1/zeta(2N), zeta grown incrementally.
    let grown = 2 * N;
    let mut newest = 0u64;
    let draws = 200_000;
    for _ in 0..draws {
        let k = l.sample(&mut rng, grown);
        assert!((1..=grown).contains(&k));
        newest += u64::from(k == grown);
    }
    let p0 = 1.0 / zeta(grown, 0.99);
    let f = newest as f64 / draws as f64;
    let sd = (p0 * (1.0 - p0) / draws as f64).sqrt();
    assert!((f - p0).abs() < 5.0 * sd, "{f} vs {p0}");
}

#[test]
fn growing_the_count_extends_zeta_incrementally() {
    let mut z = Zipfian::new(500, 0.7).unwrap();
    let mut rng = seeded_rng(1, "grow");
    for _ in 0..1000 {
        assert!(z.sample_with_count(&mut rng, 1500) < 1500);
    }
    assert!((z.zetan() - zeta(1500, 0.7)).abs() < 1e-9);
    assert_eq!(z.items(), 500);
}
