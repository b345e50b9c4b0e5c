//! The out-of-order streams and the DIOL workloads: shapes, degenerate cases, bad input.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use lsmlab_workloads::ts::{
    build_ops, generate_stream, load_delays, out_of_order_points, DelayModel, OpsSpec, StreamSpec, TsOp,
    TsWorkload,
};

fn spec(points: u64, o3: f64, delay: DelayModel) -> StreamSpec {
    StreamSpec {
        points,
        o3_ratio: o3,
        delay,
        delay_scale: 1.0,
    }
}

fn models() -> Vec<DelayModel> {
    vec![
        DelayModel::Diol,
        DelayModel::PAPER_LOGNORMAL,
        DelayModel::Sample(Arc::new(vec![3, 70, 900, 15_000])),
    ]
}

fn is_permutation(s: &[u64], n: u64) -> bool {
    let mut v = s.to_vec();
    v.sort_unstable();
    v.len() as u64 == n && v.iter().enumerate().all(|(i, &t)| t == i as u64 + 1)
}

#[test]
fn every_model_gives_a_permutation_with_about_the_asked_out_of_order_share() {
    let n = 200_000;
    for model in models() {
        for o3 in [0.1, 0.2, 0.3] {
            let s = generate_stream(&spec(n, o3, model.clone()), 42).unwrap();
            assert!(is_permutation(&s, n), "{model:?} {o3}");
            let late = out_of_order_points(&s) as f64 / n as f64;
            // Every late point arrives after a larger time; a few in-order points can also trail a
            // late run, so the measured share is close to the asked one.
            assert!((late - o3).abs() < 0.02, "{model:?} o3 {o3}: measured {late}");
        }
    }
}

#[test]
fn zero_ratio_is_in_order_and_streams_are_deterministic() {
    for model in models() {
        let s = generate_stream(&spec(5000, 0.0, model.clone()), 1).unwrap();
        assert_eq!(s, (1..=5000).collect::<Vec<_>>());
        let a = generate_stream(&spec(5000, 0.2, model.clone()), 7).unwrap();
        let b = generate_stream(&spec(5000, 0.2, model.clone()), 7).unwrap();
        let c = generate_stream(&spec(5000, 0.2, model.clone()), 8).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c, "{model:?}: the seed must matter");
    }
}

#[test]
fn tiny_streams_are_well_formed() {
    for model in models() {
        for n in [1, 2, 7, 40, 101] {
            for o3 in [0.0, 0.1, 0.5, 0.9] {
                let s = generate_stream(&spec(n, o3, model.clone()), 3).unwrap();
                assert!(is_permutation(&s, n), "{model:?} n {n} o3 {o3}");
            }
        }
    }
}

#[test]
fn the_mixture_has_runs_and_singles_and_far_delays() {
    let n = 100_000;
    let s = generate_stream(&spec(n, 0.2, DelayModel::Diol), 5).unwrap();
    // Late points that arrive right after a late point one time unit before them are in runs.
    let pos: Vec<usize> = {
        let mut p = vec![0; n as usize + 1];
        for (i, &t) in s.iter().enumerate() {
            p[t as usize] = i;
        }
        p
    };
    let mut late_max = 0;
    let mut in_runs = 0u64;
    let mut far = 0u64;
    for (i, &t) in s.iter().enumerate() {
        if t < late_max {
            if t > 1 && pos[t as usize - 1] + 1 == i && s[i - 1] < late_max {
                in_runs += 1;
            }
            // How many later times arrived before it.
            let lateness = late_max - t;
            if lateness > 2000 {
                far += 1;
            }
        }
        late_max = late_max.max(t);
    }
    let late = out_of_order_points(&s);
    assert!(in_runs as f64 > 0.35 * late as f64, "runs {in_runs} of {late}");
    assert!(
        far as f64 > 0.1 * late as f64 && (far as f64) < 0.35 * late as f64,
        "far {far} of {late}"
    );
}

#[test]
fn scaling_shrinks_bounded_delays_only() {
    let n = 100_000;
    let full = generate_stream(&spec(n, 0.2, DelayModel::Sample(Arc::new(vec![1000]))), 9).unwrap();
    let mut small = spec(n, 0.2, DelayModel::Sample(Arc::new(vec![1000])));
    small.delay_scale = 0.01;
    let small = generate_stream(&small, 9).unwrap();
    let max_lateness = |s: &[u64]| {
        let mut m = 0;
        let mut worst = 0;
        for &t in s {
            if t < m {
                worst = worst.max(m - t);
            }
            m = m.max(t);
        }
        worst
    };
    assert_eq!(max_lateness(&full), 1000);
    assert_eq!(max_lateness(&small), 10);
}

#[test]
fn bad_parameters_are_errors() {
    assert!(generate_stream(&spec(0, 0.1, DelayModel::Diol), 1).is_err());
    assert!(generate_stream(&spec(10, 1.0, DelayModel::Diol), 1).is_err());
    assert!(generate_stream(&spec(10, -0.1, DelayModel::Diol), 1).is_err());
    assert!(generate_stream(&spec(10, 0.1, DelayModel::Sample(Arc::new(vec![]))), 1).is_err());
    let mut s = spec(10, 0.1, DelayModel::Diol);
    s.delay_scale = 0.0;
    assert!(generate_stream(&s, 1).is_err());
}

fn ops(w: TsWorkload, n: u64) -> (usize, Vec<TsOp>) {
    let s = generate_stream(&spec(n, 0.2, DelayModel::Diol), 11).unwrap();
    let spec = OpsSpec {
        workload: w,
        range_scale: 1.0,
        recent_window: 10_000,
    };
    build_ops(&s, &spec, 11).unwrap()
}

#[test]
fn workloads_have_the_authors_mix_and_aim() {
    let n = 400_000u64;
    let half = n / 2;
    for w in TsWorkload::ALL {
        let (untimed, ops) = ops(w, n);
        assert_eq!(untimed as u64, half);
        let inserts = ops.iter().filter(|o| matches!(o, TsOp::Insert(_))).count() as u64;
        let gets: Vec<u64> = ops
            .iter()
            .filter_map(|o| if let TsOp::Get(k) = o { Some(*k) } else { None })
            .collect();
        let ranges: Vec<(u64, u64)> = ops
            .iter()
            .filter_map(|o| {
                if let TsOp::Range(a, b) = o {
                    Some((*a, *b))
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(inserts, n - half);
        let reads = (gets.len() + ranges.len()) as f64;
        let share = reads / ops.len() as f64;
        let want = w.read_fraction();
        assert!(
            (share - want).abs() < 0.1 * want + 1e-9,
            "{w:?}: read share {share}"
        );
        if w == TsWorkload::A {
            continue;
        }
        // Point reads and ranges both present, 1 : 1 within collisions.
        let ratio = gets.len() as f64 / ranges.len() as f64;
        assert!((0.8..1.25).contains(&ratio), "{w:?}: gets/ranges {ratio}");
        assert!(ranges.iter().all(|(a, b)| b > a && b - a <= 5000));
        let inserted_before = |target: &TsOp| {
            ops.iter().position(|o| o == target).unwrap() as u64 // timed inserts (and reads) before it
        };
        match w {
            TsWorkload::B | TsWorkload::C => {
                assert!(gets.iter().all(|&k| (1..=half).contains(&k)));
                // A read of k is issued about N/2 inserts after k was due.
                for &k in gets.iter().take(50) {
                    let at = half + inserted_before(&TsOp::Get(k));
                    assert!(at >= half + k && at <= half + k + k / 10 + 10, "read {k} at {at}");
                }
            }
            TsWorkload::Recent => {
                for &k in gets.iter().take(50) {
                    let at = half + inserted_before(&TsOp::Get(k));
                    assert!(
                        k <= at + 1 && k + 10_000 + at / 10 >= at,
                        "recent read {k} at {at}"
                    );
                }
            }
            TsWorkload::A => unreachable!(),
        }
    }
}

#[test]
fn small_streams_have_no_reads_instead_of_failing() {
    let s = generate_stream(&spec(3, 0.0, DelayModel::Diol), 1).unwrap();
    for w in TsWorkload::ALL {
        let (half, ops) = build_ops(
            &s,
            &OpsSpec {
                workload: w,
                range_scale: 0.01,
                recent_window: 1,
            },
            1,
        )
        .unwrap();
        assert_eq!(half, 1);
        assert_eq!(ops.iter().filter(|o| matches!(o, TsOp::Insert(_))).count(), 2);
    }
}

fn temp(name: &str, body: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!("lsmlab-ts-{}-{name}", std::process::id()));
    std::fs::File::create(&p).unwrap().write_all(body).unwrap();
    p
}

#[test]
fn delay_files_load_plain_or_gzip_and_reject_bad_lines() {
    let p = temp("ok.txt", b"12\n\n# comment\n7\n");
    assert_eq!(load_delays(&p).unwrap(), vec![12, 7]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"5\n6\n").unwrap();
    let p = temp("ok.gz", &gz.finish().unwrap());
    assert_eq!(load_delays(&p).unwrap(), vec![5, 6]);
    let p = temp("bad.txt", b"5\nfive\n");
    let err = load_delays(&p).unwrap_err().to_string();
    assert!(err.contains(":2:") && err.contains("five"), "{err}");
    let p = temp("empty.txt", b"\n");
    assert!(load_delays(&p).unwrap_err().to_string().contains("empty"));
    assert!(load_delays(&std::env::temp_dir().join("lsmlab-no-such-delays")).is_err());
}

#[test]
fn the_shared_machinery_delays_load_when_present() {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/machinery_sensor_delays_ms.txt.gz");
    let Ok(d) = load_delays(&p) else {
        eprintln!("skipping: {} not present", p.display());
        return;
    };
    assert_eq!(d.len(), 459_589);
    assert!(d.iter().all(|&x| x >= 1));
}
