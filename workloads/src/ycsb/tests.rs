use super::*;
use crate::kv::YCSB_SCRAMBLED_ZETAN;
use std::collections::HashMap;

fn mix(w: Workload, n: usize) -> [f64; 5] {
    let mut s = Stream::new(w, 10_000, n as u64, 7).unwrap();
    let mut c = [0usize; 5];
    for _ in 0..n {
        let i = match s.next_op() {
            Op::Read { .. } => 0,
            Op::Update { .. } => 1,
            Op::Insert { .. } => 2,
            Op::Scan { .. } => 3,
            Op::ReadModifyWrite { .. } => 4,
        };
        c[i] += 1;
    }
    c.map(|x| x as f64 / n as f64)
}

#[test]
fn operation_mixes_follow_the_property_files() {
    for w in Workload::ALL {
        let p = w.proportions();
        let got = mix(w, 20_000);
        let want = [p.read, p.update, p.insert, p.scan, p.read_modify_write];
        for (g, e) in got.iter().zip(want) {
            assert!((g - e).abs() < 0.015, "{w}: {got:?} vs {want:?}");
        }
    }
}

#[test]
fn updates_write_one_field_and_scans_stay_within_100() {
    let mut s = Stream::new(Workload::E, 1000, 5000, 1).unwrap();
    let mut max_len = 0;
    let mut inserts = 0;
    for _ in 0..5000 {
        match s.next_op() {
            Op::Scan { len, start } => {
                assert!((1..=100).contains(&len));
                assert!(start <= s.newest());
                max_len = max_len.max(len);
            }
            Op::Insert { key } => {
                assert_eq!(key, 1000 + inserts);
                inserts += 1;
            }
            op => panic!("workload E does not issue {op:?}"),
        }
    }
    assert!(max_len > 90);
    let mut s = Stream::new(Workload::A, 1000, 100, 1).unwrap();
    for _ in 0..100 {
        if let Op::Update { field, value, .. } = s.next_op() {
            assert!(field < FIELD_COUNT);
            assert_eq!(value.len(), FIELD_LENGTH);
        }
    }
    let fields = record_fields(3);
    assert_eq!(fields.len(), 10);
    assert!(fields.iter().all(|f| f.len() == 100));
    assert_eq!(key_name(0), format!("user{}", 0x5738_07cd_d7e5_c63bu64));
}

/// Key-frequency ranks against YCSB's definition: under the scrambled zipfian the most requested
/// keys are `fnvhash64(i) mod n` for items i = 0, 1, 2 of the 10^10-item zipfian, with
/// probabilities `1/zeta`, `2^-0.99/zeta` and `3^-0.99/zeta` (plus the near-uniform tail).
#[test]
fn zipfian_key_ranks_match_ycsbs_definition() {
    let n = 10_000u64;
    let draws = 400_000;
    let mut s = Stream::new(Workload::C, n, draws, 3).unwrap();
    let mut freq: HashMap<u64, usize> = HashMap::new();
    for _ in 0..draws {
        if let Op::Read { key } = s.next_op() {
            *freq.entry(key).or_default() += 1;
        }
    }
    let mut ranked: Vec<(u64, usize)> = freq.iter().map(|(&k, &c)| (k, c)).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    // Workload C inserts nothing: the key space is recordcount + 1 items, keys >= n redrawn.
    let items = n + 1;
    for (rank, item) in (0..3u64).enumerate() {
        let key = ycsb_fnvhash64(item) % items;
        assert_eq!(ranked[rank].0, key, "rank {rank}");
        let p = 1.0 / ((item + 1) as f64).powf(0.99) / YCSB_SCRAMBLED_ZETAN;
        let got = ranked[rank].1 as f64 / draws as f64;
        assert!((got - p).abs() < 0.2 * p + 0.001, "rank {rank}: {got} vs {p}");
    }
    // Not degenerate: most keys are requested.
    assert!(freq.len() as f64 > 0.9 * n as f64, "{} distinct keys", freq.len());
}

#[test]
fn latest_favours_the_newest_keys_as_they_grow() {
    let mut s = Stream::new(Workload::D, 1000, 20_000, 5).unwrap();
    let mut hits_newest = 0;
    let mut reads = 0;
    for _ in 0..20_000 {
        match s.next_op() {
            Op::Read { key } => {
                assert!(key <= s.newest());
                reads += 1;
                if key == s.newest() {
                    hits_newest += 1;
                }
            }
            Op::Insert { .. } => {}
            op => panic!("workload D does not issue {op:?}"),
        }
    }
    assert!(s.newest() > 1900, "inserts grew the key space to {}", s.newest());
    // The newest key is the zipfian's item 0 over about 1,000-2,000 items: 1/zeta(n) ~ 12-13%.
    let share = hits_newest as f64 / reads as f64;
    assert!((0.10..0.16).contains(&share), "{share}");
}

#[test]
fn bad_names_and_sizes_are_errors() {
    assert_eq!("ycsb-b".parse::<Workload>().unwrap(), Workload::B);
    assert_eq!("F".parse::<Workload>().unwrap(), Workload::F);
    assert!("ycsb-g"
        .parse::<Workload>()
        .unwrap_err()
        .to_string()
        .contains("ycsb-g"));
    assert!(Stream::new(Workload::A, 1, 10, 0).is_err());
}
