//! SysBench's generators checked against their definitions (`sb_rand.c`): each formula on
//! scripted uniforms, then the statistics a definition implies on seeded draws (share of draws on
//! the hottest 1% of ids, the top id's share, chi-square over every id where the law is
//! closed-form, Irwin–Hall masses for the gaussian parts), and the key streams built on them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use lsmlab_workloads::kv::{KeyDist, KvOp, KvWorkload, Sysbench, SysbenchDist};
use lsmlab_workloads::seeded_rng;
use rand::RngCore;

/// An RNG that yields given uniforms: each `u` in `[0, 1)` comes back from SysBench's
/// `uniform double` (53 bits of a `u64`) exactly, for `u` a multiple of 2^-53.
struct Scripted(Vec<f64>, usize);

impl RngCore for Scripted {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    fn next_u64(&mut self) -> u64 {
        let u = self.0[self.1 % self.0.len()];
        self.1 += 1;
        ((u * (1u64 << 53) as f64) as u64) << 11
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

fn scripted(us: &[f64]) -> Scripted {
    Scripted(us.to_vec(), 0)
}

fn draw_counts(g: &Sysbench, n: u64, draws: usize, seed: &str) -> Vec<u64> {
    let mut rng = seeded_rng(5, seed);
    let mut c = vec![0u64; n as usize];
    for _ in 0..draws {
        let id = g.sample(&mut rng, 1, n);
        assert!((1..=n).contains(&id), "{id} outside 1..={n}");
        c[(id - 1) as usize] += 1;
    }
    c
}

/// The share of draws on the `k` most drawn ids.
fn top_share(counts: &[u64], k: usize) -> f64 {
    let mut c = counts.to_vec();
    c.sort_unstable_by(|a, b| b.cmp(a));
    c[..k].iter().sum::<u64>() as f64 / counts.iter().sum::<u64>() as f64
}

/// Irwin–Hall CDF: P(sum of `m` uniforms on [0, 1) <= x).
fn irwin_hall_cdf(m: u32, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= f64::from(m) {
        return 1.0;
    }
    let fact: f64 = (1..=m).map(f64::from).product();
    let mut sum = 0.0;
    let mut binom = 1.0;
    for k in 0..=(x.floor() as u32) {
        if k > 0 {
            binom *= f64::from(m - k + 1) / f64::from(k);
        }
        let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
        sum += sign * binom * (x - f64::from(k)).powi(m as i32);
    }
    sum / fact
}

/// Mean + 6 standard deviations of a chi-square with `df` degrees of freedom.
fn chi_bound(df: usize) -> f64 {
    df as f64 + 6.0 * (2.0 * df as f64).sqrt()
}

#[test]
fn each_formula_gives_sysbenchs_id_for_given_uniforms() {
    let (a, b) = (1u64, 1_000u64);
    // uniform: a + u (b - a + 1), truncated
    let u = Sysbench::new(SysbenchDist::Uniform).unwrap();
    assert_eq!(u.sample(&mut scripted(&[0.0]), a, b), 1);
    assert_eq!(u.sample(&mut scripted(&[0.5]), a, b), 501);
    assert_eq!(u.sample(&mut scripted(&[0.999]), a, b), 1000);
    // gaussian: a + (Σ u_i (b - a + 1)) / iter, truncated
    let g = Sysbench::new(SysbenchDist::Gaussian { iter: 4 }).unwrap();
    assert_eq!(g.sample(&mut scripted(&[0.25, 0.5, 0.75, 0.125]), a, b), 1 + 406);
    // special, t = b - a = 999: u = 0.1 < (100 - 75) / 100 takes the gaussian branch with the
    // next 12 uniforms: a + Σ u_i t / 12
    let s = Sysbench::new(SysbenchDist::SPECIAL).unwrap();
    let mut us = vec![0.1];
    us.extend([0.5; 12]);
    assert_eq!(s.sample(&mut scripted(&us), a, b), 1 + 499);
    // u = 0.6 takes the band: a + u (d + 1) + t/2 - t pct/200 with d = t pct/100 = 9.99:
    // 1 + trunc(6.594 + 499.5 - 4.995) = 502
    assert_eq!(s.sample(&mut scripted(&[0.6]), a, b), 502);
    // the band's ends: u -> 0.25 gives 1 + trunc(2.7475 + 494.505) = 498, u -> 1 gives 506
    assert_eq!(s.sample(&mut scripted(&[0.25]), a, b), 498);
    assert_eq!(s.sample(&mut scripted(&[1.0 - 2f64.powi(-53)]), a, b), 506);
    // pareto: a + (b - a + 1) u^(ln h / ln(1 - h)); u = 0.5 with h = 0.2: 1000 x 0.5^7.2126 = 6.7
    let p = Sysbench::new(SysbenchDist::PARETO).unwrap();
    let power = 0.2f64.ln() / 0.8f64.ln();
    assert_eq!(
        p.sample(&mut scripted(&[0.5]), a, b),
        1 + (1000.0 * 0.5f64.powf(power)) as u64
    );
    // zipfian: u -> 1 puts the inverse integral at H(1.5) - 1, whose rank is 1 (the lowest id)
    let z = Sysbench::new(SysbenchDist::zipfian(0.5)).unwrap();
    assert_eq!(z.sample(&mut scripted(&[1.0 - 2f64.powi(-53)]), a, b), 1);
    assert_eq!(
        z.sample(&mut scripted(&[0.0]), a, b),
        1000,
        "u = 0 is the far end"
    );
    // one-id intervals
    for d in [
        SysbenchDist::Uniform,
        SysbenchDist::GAUSSIAN,
        SysbenchDist::SPECIAL,
        SysbenchDist::PARETO,
        SysbenchDist::zipfian(0.9),
    ] {
        let g = Sysbench::new(d).unwrap();
        assert_eq!(g.sample(&mut scripted(&[0.7, 0.2]), 7, 7), 7, "{d}");
    }
}

#[test]
fn zipfian_is_the_exact_zipf_law_with_the_hottest_ids_lowest() {
    let n = 1_000u64;
    let draws = 1_000_000;
    for exp in [0.0, 0.5, 0.9, 1.0, 1.3] {
        let g = Sysbench::new(SysbenchDist::zipfian(exp)).unwrap();
        let p = g.pmf(n).unwrap();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let c = draw_counts(&g, n, draws, &format!("zipf/{exp}"));
        let chi: f64 = c
            .iter()
            .zip(&p)
            .map(|(&o, &pi)| (o as f64 - pi * draws as f64).powi(2) / (pi * draws as f64))
            .sum();
        assert!(chi < chi_bound(n as usize - 1), "exp {exp}: chi-square {chi}");
        // the top id's share is 1 / H(n, exp), on id 1
        let top = c[0] as f64 / draws as f64;
        let sd = (p[0] * (1.0 - p[0]) / draws as f64).sqrt();
        assert!(
            (top - p[0]).abs() < 5.0 * sd,
            "exp {exp}: top share {top} vs {}",
            p[0]
        );
        if exp > 0.0 {
            assert_eq!(c.iter().enumerate().max_by_key(|&(_, &v)| v).unwrap().0, 0);
            // the hottest 1% of ids are ids 1..=10, and take Σ_{k<=10} k^-e / H of the draws
            let want: f64 = p[..10].iter().sum();
            let got = c[..10].iter().sum::<u64>() as f64 / draws as f64;
            let sd = (want * (1.0 - want) / draws as f64).sqrt();
            assert!((got - want).abs() < 5.0 * sd, "exp {exp}: {got} vs {want}");
        }
    }
    // at exp 0.5 over 1000 ids the hottest 1% take 8.1% of the draws (the law, computed)
    let g = Sysbench::new(SysbenchDist::zipfian(0.5)).unwrap();
    let hot: f64 = g.pmf(1000).unwrap()[..10].iter().sum();
    assert!((hot - 0.0812).abs() < 0.001, "{hot}");
}

#[test]
fn special_puts_three_quarters_of_the_draws_on_one_percent_of_the_ids_in_the_middle() {
    let n = 100_000u64;
    let draws = 1_000_000;
    let g = Sysbench::new(SysbenchDist::SPECIAL).unwrap();
    let c = draw_counts(&g, n, draws, "special");
    // The band: t = n - 1, d = t / 100; u in [0.25, 1) maps to [0.25 (d + 1), d + 1) + t/2 - t/200.
    let t = (n - 1) as f64;
    let (d, shift) = (t / 100.0, t / 2.0 - t / 200.0);
    let (lo, hi) = ((0.25 * (d + 1.0) + shift) as usize, ((d + 1.0) + shift) as usize);
    assert_eq!((lo, hi), (49_749, 50_500));
    let band = c[lo..=hi].iter().sum::<u64>() as f64 / draws as f64;
    // the gaussian quarter's mass on the band: sum of 12 uniforms in [12 lo/t, 12 (hi+1)/t)
    let gauss_band =
        irwin_hall_cdf(12, 12.0 * (hi + 1) as f64 / t) - irwin_hall_cdf(12, 12.0 * lo as f64 / t);
    let want = 0.75 + 0.25 * gauss_band;
    let sd = (want * (1.0 - want) / draws as f64).sqrt();
    assert!((band - want).abs() < 5.0 * sd, "band {band} vs {want}");
    // the hottest 1% of ids (1,000): the 752 band ids and the 248 next ones, near the centre
    let hottest = top_share(&c, 1_000);
    assert!((0.755..0.77).contains(&hottest), "{hottest}");
    // the top id: a band id takes u in a slice of width 1 / (d + 1) of [0.25, 1), plus its
    // gaussian share (0.25 x 12 / sqrt(2 pi) / t)
    let top = *c.iter().max().unwrap() as f64 / draws as f64;
    let per_id = 1.0 / (d + 1.0) + 0.25 * 12.0 / (2.0 * std::f64::consts::PI).sqrt() / t;
    assert!((top / per_id - 1.0).abs() < 0.2, "top {top} vs about {per_id}");
    // nothing of the band lies at the low ids, where zipfian and pareto put their hot ids
    assert!(
        c[..1_000].iter().sum::<u64>() < 50,
        "the low ids are cold under special"
    );
}

#[test]
fn gaussian_is_an_irwin_hall_sum_centred_on_the_interval() {
    let n = 100_000u64;
    let draws = 400_000;
    let g = Sysbench::new(SysbenchDist::GAUSSIAN).unwrap();
    let c = draw_counts(&g, n, draws, "gaussian");
    let mean = c
        .iter()
        .enumerate()
        .map(|(i, &v)| i as f64 * v as f64)
        .sum::<f64>()
        / draws as f64;
    // mean (n - 1) / 2 up to truncation; sd = n / 12 (12 uniforms, each of variance 1/12, / 12)
    assert!((mean - (n as f64 - 1.0) / 2.0).abs() < 5.0 * (n as f64 / 12.0) / (draws as f64).sqrt() + 1.0);
    // the central 1% holds P(5.94 <= S < 6.06) of the draws
    let (lo, hi) = (49_500usize, 50_500usize);
    let got = c[lo..hi].iter().sum::<u64>() as f64 / draws as f64;
    let want =
        irwin_hall_cdf(12, 12.0 * hi as f64 / n as f64) - irwin_hall_cdf(12, 12.0 * lo as f64 / n as f64);
    let sd = (want * (1.0 - want) / draws as f64).sqrt();
    assert!((got - want).abs() < 5.0 * sd, "{got} vs {want}");
}

#[test]
fn pareto_and_uniform_follow_their_closed_forms() {
    let n = 1_000u64;
    let draws = 400_000;
    for (d, seed) in [
        (SysbenchDist::PARETO, "pareto"),
        (SysbenchDist::Uniform, "uniform"),
    ] {
        let g = Sysbench::new(d).unwrap();
        let p = g.pmf(n).unwrap();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{d}");
        let c = draw_counts(&g, n, draws, seed);
        let (df, chi) = c.iter().zip(&p).filter(|(_, &pi)| pi * draws as f64 >= 5.0).fold(
            (0usize, 0.0),
            |(k, s), (&o, &pi)| {
                (
                    k + 1,
                    s + (o as f64 - pi * draws as f64).powi(2) / (pi * draws as f64),
                )
            },
        );
        assert!(chi < chi_bound(df), "{d}: chi-square {chi} over {df} bins");
    }
    // pareto with h = 0.2: the lowest 20% of the ids take 80% of the draws
    let g = Sysbench::new(SysbenchDist::PARETO).unwrap();
    let low: f64 = g.pmf(1000).unwrap()[..200].iter().sum();
    assert!((low - 0.8).abs() < 1e-9, "{low}");
}

#[test]
fn bad_parameters_are_refused_with_the_option_named() {
    let err = |d: SysbenchDist| Sysbench::new(d).unwrap_err().to_string();
    assert!(err(SysbenchDist::zipfian(-0.1)).contains("--rand-zipfian-exp"));
    assert!(err(SysbenchDist::zipfian(f64::NAN)).contains("--rand-zipfian-exp"));
    assert!(err(SysbenchDist::Pareto { h: 1.0 }).contains("--rand-pareto-h"));
    assert!(err(SysbenchDist::Special {
        iter: 12,
        pct: 1,
        res: 100
    })
    .contains("--rand-spec-res"));
    assert!(err(SysbenchDist::Gaussian { iter: 0 }).contains("--rand-spec-iter"));
    assert!("nope"
        .parse::<KeyDist>()
        .unwrap_err()
        .to_string()
        .contains("sysbench-zipfian"));
    for k in KeyDist::ALL {
        assert_eq!(k.name().parse::<KeyDist>().unwrap(), k);
    }
}

/// The most drawn key of `spec`'s first `ops` reads and updates, and the share of the reads and
/// updates on keys below `records / 100`.
fn stream_profile(spec: &KvWorkload, ops: usize) -> (u64, f64, usize) {
    let mut counts = std::collections::HashMap::<u64, u64>::new();
    let (mut low, mut total) = (0u64, 0u64);
    for op in spec.stream(3).unwrap().take(ops) {
        if let KvOp::Get(k) | KvOp::Update(k) = op.op {
            *counts.entry(k).or_default() += 1;
            total += 1;
            low += u64::from(k < spec.records / 100);
        }
    }
    let top = counts
        .iter()
        .max_by_key(|&(k, v)| (*v, std::cmp::Reverse(*k)))
        .unwrap()
        .0;
    (*top, low as f64 / total as f64, counts.len())
}

#[test]
fn key_streams_put_the_hot_ids_where_each_generator_does() {
    let base = KvWorkload::parse("synthetic")
        .unwrap()
        .with_records(100_000)
        .unwrap();
    assert_eq!(
        base.keys,
        KeyDist::SysbenchZipfian,
        "Table 2's synthetic workload is SysBench's zipfian"
    );
    let ops = 200_000;
    // SysBench's zipfian at 0.5: id 0 hottest, the lowest 1% of ids take sqrt(0.01) ~ 10% of draws
    let (top, low, _) = stream_profile(&base, ops);
    assert_eq!(top, 0);
    assert!((0.08..0.12).contains(&low), "{low}");
    // YCSB's zipfian over unscrambled ranks: the same place, nearly the same law
    let (top, low_ycsb, _) = stream_profile(&base.clone().with_keys(KeyDist::YcsbZipfian).unwrap(), ops);
    assert_eq!(top, 0);
    assert!((low_ycsb - low).abs() < 0.02, "{low_ycsb} vs {low}");
    // scrambled: the law kept, the hot ids scattered: the lowest 1% of ids get about 1% of draws
    let scrambled = base.clone().with_keys(KeyDist::ScrambledZipfian).unwrap();
    let (top, low_s, distinct_s) = stream_profile(&scrambled, ops);
    assert_ne!(top, 0);
    assert!(low_s < 0.03, "{low_s}");
    let (_, _, distinct) = stream_profile(&base, ops);
    assert!(
        distinct_s as f64 > 0.5 * distinct as f64,
        "hash collisions may merge ranks, but not most of them: {distinct_s} vs {distinct}"
    );
    // special: the hot ids in the middle of the table
    let special = base.clone().with_keys(KeyDist::Special).unwrap();
    let (top, low_sp, _) = stream_profile(&special, ops);
    assert!((49_000..51_000).contains(&top), "{top}");
    assert!(low_sp < 0.01);
    // the YCSB zipfian refuses 1.0; SysBench's takes it
    assert!(base
        .clone()
        .with_keys(KeyDist::YcsbZipfian)
        .unwrap()
        .with_zipf(1.0)
        .is_err());
    assert!(base.with_zipf(1.0).is_ok());
}
