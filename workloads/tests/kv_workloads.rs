//! The Leaper workloads' op streams checked for degenerate shapes: op shares as specified, many
//! distinct keys (as many as the zipf law predicts), scans inside the key space, fresh insert ids,
//! a hot set that moves with the day, and specs that refuse bad input.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::collections::HashSet;

use lsmlab_workloads::kv::{decode_value, value_for, KeyDist, KvOp, PeriodicShift, Sysbench, SysbenchDist};
use lsmlab_workloads::{KvWorkload, WorkloadError};

const OPS: usize = 100_000;
const RECORDS: u64 = 100_000;

fn scaled(name: &str) -> KvWorkload {
    KvWorkload::parse(name).unwrap().with_records(RECORDS).unwrap()
}

#[test]
fn table_2_workloads_by_name() {
    let names: Vec<String> = KvWorkload::ALL
        .iter()
        .map(|n| KvWorkload::parse(n).unwrap().name)
        .collect();
    assert_eq!(names, ["synthetic", "e-commerce", "messaging"]);
    let s = KvWorkload::parse("synthetic").unwrap();
    assert_eq!(
        (s.shares.get, s.shares.scan, s.shares.update, s.shares.insert),
        (75.0, 0.0, 20.0, 5.0)
    );
    assert_eq!(
        (s.zipf, s.records, s.scan_len, s.value_bytes),
        (0.5, 20_000_000, 100, 200)
    );
    assert!(s.shift.is_none());
    let e: KvWorkload = "E-Commerce".parse().unwrap();
    assert_eq!(
        (e.shares.get, e.shares.scan, e.shares.update, e.shares.insert),
        (75.0, 10.0, 10.0, 5.0)
    );
    assert_eq!((e.zipf, e.records), (0.3, 10_000_000));
    assert!(e.shift.is_some());
    let m = KvWorkload::parse("messaging").unwrap();
    assert_eq!(
        (m.shares.get, m.shares.scan, m.shares.update, m.shares.insert),
        (40.0, 0.0, 35.0, 25.0)
    );
    assert_eq!((m.zipf, m.records), (0.9, 8_000_000));

    let err = KvWorkload::parse("tpcc").unwrap_err().to_string();
    for n in KvWorkload::ALL {
        assert!(err.contains(n), "{err}");
    }
    assert!(err.contains("tpcc"), "{err}");
}

#[test]
fn bad_specs_are_refused_with_the_reason() {
    let s = KvWorkload::parse("synthetic").unwrap();
    let reason = |r: Result<KvWorkload, WorkloadError>| r.unwrap_err().to_string();
    assert!(reason(s.clone().with_shares(75.0, 0.0, 20.0, 6.0)).contains("sum to 101"));
    assert!(reason(s.clone().with_shares(105.0, 0.0, 0.0, -5.0)).contains("insert share is -5"));
    assert!(reason(s.clone().with_shares(f64::NAN, 0.0, 50.0, 50.0)).contains("get share"));
    // YCSB's zipfian is undefined at 1.0; SysBench's (the default) is not
    let ycsb = s.clone().with_keys(KeyDist::YcsbZipfian).unwrap();
    assert!(reason(ycsb.with_zipf(1.0)).contains("0.99"));
    assert!(s.clone().with_zipf(1.0).is_ok());
    assert!(s.clone().with_zipf(-0.2).is_err());
    assert!(reason(s.clone().with_records(0)).contains("record count"));
    assert!(s.clone().with_scan_len(0).is_err());
    assert!(s.clone().with_day_ops(0).is_err());
    assert!(s.clone().with_shift(Some(PeriodicShift { regions: 0 })).is_err());
    assert!(s.clone().with_range_fraction_of_reads(1.5).is_err());
    // A spec edited by hand is checked when its stream is made.
    let mut hand = s.clone();
    hand.shares.update = 30.0;
    assert!(hand.stream(1).is_err());
    // Overrides that are fine.
    let r = s.clone().with_range_fraction_of_reads(0.2).unwrap();
    assert_eq!(
        (r.shares.get, r.shares.scan, r.shares.update, r.shares.insert),
        (60.0, 15.0, 20.0, 5.0)
    );
    let mix = s
        .with_shares(85.0, 0.0, 12.0, 3.0)
        .unwrap()
        .with_zipf(0.0)
        .unwrap();
    assert_eq!(mix.shares.get, 85.0);
}

#[test]
fn op_shares_match_the_spec() {
    let specs = [
        scaled("synthetic"),
        scaled("e-commerce"),
        scaled("messaging"),
        scaled("synthetic").with_range_fraction_of_reads(0.4).unwrap(),
    ];
    for spec in specs {
        let mut n = [0usize; 4];
        for t in spec.stream(7).unwrap().take(OPS) {
            n[match t.op {
                KvOp::Get(_) => 0,
                KvOp::Scan { .. } => 1,
                KvOp::Update(_) => 2,
                KvOp::Insert(_) => 3,
            }] += 1;
        }
        let want = [
            spec.shares.get,
            spec.shares.scan,
            spec.shares.update,
            spec.shares.insert,
        ];
        for (got, want) in n.iter().zip(want) {
            let pct = 100.0 * *got as f64 / OPS as f64;
            // 5 binomial standard deviations in percentage points (0.7 at a 75% share).
            let sd = 100.0 * (want / 100.0 * (1.0 - want / 100.0) / OPS as f64).sqrt();
            assert!((pct - want).abs() <= 5.0 * sd, "{}: {pct}% vs {want}%", spec.name);
            if want == 0.0 {
                assert_eq!(*got, 0, "{}: an op type with share 0 occurred", spec.name);
            }
        }
    }
}

#[test]
fn streams_touch_as_many_distinct_keys_as_the_zipf_law_predicts() {
    for name in ["synthetic", "messaging"] {
        let spec = scaled(name);
        let mut keys = HashSet::new();
        let mut draws = 0u64;
        for t in spec.stream(3).unwrap().take(OPS) {
            match t.op {
                KvOp::Get(k) | KvOp::Update(k) | KvOp::Scan { lo: k, .. } => {
                    keys.insert(k);
                    draws += 1;
                }
                KvOp::Insert(_) => {}
            }
        }
        // E[distinct] = Σ_i 1 - (1 - p_i)^draws over the generator's item probabilities.
        assert_eq!(spec.keys, KeyDist::SysbenchZipfian);
        let pmf = Sysbench::new(SysbenchDist::zipfian(spec.zipf))
            .unwrap()
            .pmf(RECORDS)
            .unwrap();
        let expected: f64 = pmf.iter().map(|p| 1.0 - (1.0 - p).powf(draws as f64)).sum();
        let got = keys.len() as f64;
        assert!(got > 1000.0, "{name}: only {got} distinct keys");
        assert!(
            (got / expected - 1.0).abs() < 0.02,
            "{name}: {got} distinct keys, expected {expected:.0}"
        );
    }
    // E-commerce (shifting hot set, mild skew) spreads over most of a small key space.
    let spec = scaled("e-commerce");
    let keys: HashSet<u64> = spec.stream(3).unwrap().take(OPS).map(|t| t.op.key()).collect();
    assert!(
        keys.len() > 40_000,
        "e-commerce: only {} distinct keys",
        keys.len()
    );
}

#[test]
fn scans_stay_in_the_key_space_and_inserts_are_fresh() {
    let spec = scaled("e-commerce").with_shares(40.0, 40.0, 0.0, 20.0).unwrap();
    let mut stream = spec.stream(5).unwrap();
    let mut next_insert = RECORDS;
    let (mut scans, mut cut, mut inserts) = (0, 0, 0);
    for _ in 0..OPS {
        let existing = stream.key_count();
        let t = stream.next().unwrap();
        match t.op {
            KvOp::Scan { lo, hi } => {
                scans += 1;
                assert!(lo <= hi && hi < existing, "scan {lo}..={hi} with {existing} keys");
                assert!(lo < RECORDS, "scan start {lo} beyond the initial ids");
                if hi - lo + 1 < spec.scan_len {
                    assert_eq!(hi, existing - 1, "a short scan must end at the last key");
                    cut += 1;
                } else {
                    assert_eq!(hi - lo + 1, spec.scan_len);
                }
            }
            KvOp::Insert(k) => {
                inserts += 1;
                assert_eq!(k, next_insert, "inserts append ids in order");
                next_insert += 1;
                assert_eq!(stream.key_count(), next_insert);
            }
            KvOp::Get(k) | KvOp::Update(k) => assert!(k < RECORDS),
        }
    }
    assert!(
        scans > 35_000 && inserts > 15_000,
        "{scans} scans, {inserts} inserts"
    );
    assert!(cut < scans / 10, "{cut} of {scans} scans were cut");
}

#[test]
fn e_commerce_hot_set_moves_with_the_day_and_comes_back() {
    let day = 40_000u64;
    let spec = scaled("e-commerce").with_day_ops(day).unwrap();
    let regions = spec.shift.unwrap().regions as u64;
    assert_eq!(regions, 4);
    let window = RECORDS / 20; // the hottest 5% of ranks
                               // hits[day][quarter][region]: draws in the window starting at region r's offset.
    let mut hits = vec![vec![vec![0u64; regions as usize]; regions as usize]; 2];
    let mut draws = vec![vec![0u64; regions as usize]; 2];
    for t in spec.stream(9).unwrap().take(2 * day as usize) {
        let d = t.day as usize;
        let q = (t.time_of_day * regions as f64) as usize;
        assert_eq!(q as u32, spec.region(t.seq));
        assert!((t.time_of_day - (t.seq % day) as f64 / day as f64).abs() < 1e-12);
        let k = match t.op {
            KvOp::Get(k) | KvOp::Update(k) | KvOp::Scan { lo: k, .. } => k,
            KvOp::Insert(_) => continue,
        };
        draws[d][q] += 1;
        for r in 0..regions {
            let start = r * RECORDS / regions;
            if (start..start + window).contains(&k) {
                hits[d][q][r as usize] += 1;
            }
        }
    }
    // With zipf 0.3 the top 5% of ranks draw about 0.05^0.7 = 12% of keys; any other 5% of the
    // window of ids at least 25% of the key space away about 5%. In each quarter the window at that quarter's offset is by far the hottest,
    // on both days.
    for d in 0..2 {
        for q in 0..regions as usize {
            let share = |r: usize| hits[d][q][r] as f64 / draws[d][q] as f64;
            assert!(
                share(q) > 0.10,
                "day {d} quarter {q}: hot window has {:.3}",
                share(q)
            );
            for r in (0..regions as usize).filter(|&r| r != q) {
                assert!(
                    share(r) < 0.07,
                    "day {d} quarter {q}: region {r} has {:.3}",
                    share(r)
                );
            }
            assert_eq!(
                spec.hot_offset(d as u64 * day + q as u64 * day / regions),
                q as u64 * RECORDS / regions
            );
        }
    }
    // Without the shift the hot set stays at id 0 all day.
    let still = spec.clone().with_shift(None).unwrap();
    assert!((0..2 * day).step_by(997).all(|s| still.hot_offset(s) == 0));
}

#[test]
fn streams_are_deterministic_and_values_checkable() {
    let spec = scaled("messaging");
    let a: Vec<_> = spec.stream(1).unwrap().take(1000).collect();
    let b: Vec<_> = spec.stream(1).unwrap().take(1000).collect();
    let c: Vec<_> = spec.stream(2).unwrap().take(1000).collect();
    assert_eq!(a, b);
    assert_ne!(a, c);
    for t in &a {
        match t.write_version() {
            Some(v) => {
                assert!(t.op.is_write());
                assert_eq!(v, t.seq + 1);
                let val = spec.value_for(t.op.key(), v);
                assert_eq!(val.len(), 200);
                assert_eq!(decode_value(&val), Some((t.op.key(), v)));
            }
            None => assert!(!t.op.is_write()),
        }
    }
    let small = spec.with_records(50).unwrap().with_value_bytes(32);
    let load: Vec<_> = small.initial_records().collect();
    assert_eq!(load.len(), 50);
    assert!(load
        .iter()
        .enumerate()
        .all(|(i, (k, v))| *k == i as u64 && *v == value_for(*k, 0, 32)));
}
