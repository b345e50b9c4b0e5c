//! The time-series store in the soak: every memory level (IoTDB-like, real IoTDB's
//! sequence/unsequence rule, DIOL with the authors' exact-zero and the expired-TTL M1 rule), with
//! and without disk compaction, over several series, with drawn memtable sizes, memtable counts,
//! TTLs, compaction triggers, page sizes and devices, against a map of the newest value of every
//! point (point and range reads). After each stream: every point and every series' whole range,
//! the insert count, the memtable limit, no page held outside the store's files, then everything
//! flushed (memory empty) and compacted (no delay file left), checked again.

use super::{check_stream, env_u64, Mismatch, Totals, DEFAULT_OPS};
use lsmlab_engine::series::{CompactionParams, Layout, M1Pick, SeriesConfig, SeriesStore};
use lsmlab_engine::storage::{Device, FileDevice, MemDevice};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The four memory levels: the layouts, DIOL under both M1 rules.
const VARIANTS: [(Layout, M1Pick); 4] = [
    (Layout::Iotdb, M1Pick::ExactZeroTtl),
    (Layout::IotdbReal, M1Pick::ExactZeroTtl),
    (Layout::Diol, M1Pick::ExactZeroTtl),
    (Layout::Diol, M1Pick::ExpiredTtl),
];

#[derive(Clone, Debug)]
struct Setup {
    file_device: bool,
    page_size: usize,
    config: SeriesConfig,
}

impl Setup {
    fn draw(layout: Layout, pick: M1Pick, compaction: bool, rng: &mut impl Rng) -> Setup {
        let mut c = SeriesConfig::paper(layout);
        let pb = c.point_bytes;
        // Memtables of a few to a few dozen points, so a stream seals, merges and flushes often.
        c.iotdb.memtable_bytes = pb * rng.random_range(3..60);
        c.iotdb.immutable_limit = rng.random_range(1..=5);
        c.diol.normal_bytes = pb * rng.random_range(3..40);
        c.diol.delay_bytes = pb * rng.random_range(1..10);
        c.diol.normal_m1 = rng.random_range(1..=6);
        c.diol.normal_m2 = rng.random_range(1..=6);
        c.diol.delay_m1 = rng.random_range(1..=8);
        c.diol.delay_m2 = rng.random_range(1..=8);
        c.diol.m1_ttl = rng.random_range(1..=4);
        c.diol.m2_ttl = rng.random_range(1..=8);
        c.diol.m1_pick = pick;
        c.compaction = compaction.then(|| CompactionParams {
            delay_files_trigger: rng.random_range(1..=4),
        });
        Setup {
            file_device: rng.random_bool(0.2),
            // 64 bytes hold two points a page; 4 KiB a hundred and forty.
            page_size: [64, 128, 512, 4096][rng.random_range(0..4)],
            config: c,
        }
    }

    fn name(&self) -> String {
        let mut n = self.config.layout.name().to_string();
        if self.config.layout == Layout::Diol {
            n = format!("{n}({})", self.config.diol.m1_pick.name());
        }
        if self.config.compaction.is_some() {
            n.push_str("+compaction");
        }
        n
    }

    /// Memtables the level may hold at once, active ones included.
    fn memtable_limit(&self) -> usize {
        let c = &self.config;
        match c.layout {
            Layout::Iotdb | Layout::IotdbReal => 2 + c.iotdb.immutable_limit,
            Layout::Diol => 2 + c.diol.normal_m1 + c.diol.normal_m2 + c.diol.delay_m1 + c.diol.delay_m2,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Insert(u32, u64, i64),
    Get(u32, u64),
    Range(u32, u64, u64),
    FlushAll,
    Compact,
}

/// A stream over 1 to 4 series: each series' clock advances by 1 to 3; a share of the points
/// (drawn per stream) arrives late by up to a drawn delay, some timestamps are re-inserted with a
/// new value, and point and range reads (of present and absent times) are interleaved.
fn stream(seed: u64, n: u64) -> Vec<Op> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let series = rng.random_range(1..=4u32);
    let late = [0.0, 0.1, 0.3, 0.6][rng.random_range(0..4)];
    let max_delay = [2u64, 20, 300][rng.random_range(0..3)];
    let mut clock = vec![0u64; series as usize];
    (0..n)
        .map(|i| {
            let s = rng.random_range(0..series);
            let now = clock[s as usize];
            match rng.random_range(0..100) {
                0..62 => {
                    clock[s as usize] += rng.random_range(1..=3);
                    let t = clock[s as usize];
                    let t = if rng.random_bool(late) {
                        t.saturating_sub(rng.random_range(1..=max_delay))
                    } else {
                        t
                    };
                    Op::Insert(s, t, (i as i64) << 8 | rng.random_range(0..256))
                }
                62..67 => Op::Insert(s, rng.random_range(0..=now), -(i as i64)),
                67..82 => Op::Get(s, rng.random_range(0..now + 5)),
                82..98 => {
                    let a = rng.random_range(0..now + 5);
                    Op::Range(s, a, a + rng.random_range(0..max_delay.max(10) * 2))
                }
                98 => Op::FlushAll,
                _ => Op::Compact,
            }
        })
        .collect()
}

type Oracle = BTreeMap<(u32, u64), i64>;

fn check_range(s: &mut SeriesStore, oracle: &Oracle, sr: u32, a: u64, b: u64) -> Result<(), String> {
    let got = s.range(sr, a, b).map_err(|e| format!("range failed: {e}"))?;
    let want: Vec<(u64, i64)> = oracle.range((sr, a)..=(sr, b)).map(|(k, v)| (k.1, *v)).collect();
    if got != want {
        let first = got.iter().zip(&want).find(|(g, w)| g != w);
        return Err(format!(
            "range series {sr} [{a}, {b}]: {} points, the oracle {} (first difference: {first:?})",
            got.len(),
            want.len()
        ));
    }
    Ok(())
}

/// Every point and every series' whole range.
fn check_all(s: &mut SeriesStore, oracle: &Oracle, what: &str) -> Result<(), String> {
    for (&(sr, t), &v) in oracle {
        let got = s.get(sr, t).map_err(|e| format!("{what}: get failed: {e}"))?;
        if got != Some(v) {
            return Err(format!("{what}: get ({sr}, {t}) = {got:?}, the oracle {v}"));
        }
    }
    for sr in 0..4 {
        check_range(s, oracle, sr, 0, u64::MAX).map_err(|e| format!("{what}: {e}"))?;
    }
    Ok(())
}

fn replay(setup: &Setup, ops: &[Op], totals: &mut Totals) -> Result<(), Mismatch> {
    let fail = |step: usize, what: String| Mismatch { step, what };
    let dir = setup.file_device.then(|| tempfile::tempdir().unwrap());
    let device: Arc<dyn Device> = match &dir {
        Some(d) => Arc::new(FileDevice::create(&d.path().join("series.pages"), setup.page_size).unwrap()),
        None => Arc::new(MemDevice::new(setup.page_size)),
    };
    let mut s = SeriesStore::new(setup.config.clone(), device.clone())
        .map_err(|e| fail(0, format!("opening: {e}")))?;
    let mut oracle = Oracle::new();
    let mut inserts = 0u64;
    let limit = setup.memtable_limit();
    for (step, op) in ops.iter().enumerate() {
        let err = |e: lsmlab_engine::Error| fail(step, format!("{op:?} failed: {e}"));
        match *op {
            Op::Insert(sr, t, v) => {
                s.insert(sr, t, v).map_err(err)?;
                oracle.insert((sr, t), v);
                inserts += 1;
            }
            Op::Get(sr, t) => {
                totals.queries += 1;
                let got = s.get(sr, t).map_err(err)?;
                if got != oracle.get(&(sr, t)).copied() {
                    return Err(fail(
                        step,
                        format!("get ({sr}, {t}) = {got:?}, the oracle {:?}", oracle.get(&(sr, t))),
                    ));
                }
            }
            Op::Range(sr, a, b) => {
                totals.queries += 1;
                check_range(&mut s, &oracle, sr, a, b).map_err(|e| fail(step, e))?;
            }
            Op::FlushAll => {
                s.flush_all().map_err(err)?;
                if s.memory_points() != 0 {
                    return Err(fail(
                        step,
                        format!("{} points in memory after flushing all", s.memory_points()),
                    ));
                }
            }
            Op::Compact => {
                s.compact().map_err(err)?;
                if s.files().1 != 0 {
                    return Err(fail(
                        step,
                        format!("{} delay files after a compaction", s.files().1),
                    ));
                }
            }
        }
        if s.memtables() > limit {
            return Err(fail(
                step,
                format!("{} memtables, the layout allows {limit}", s.memtables()),
            ));
        }
        totals.ops += 1;
    }
    let end = ops.len();
    let audit = |s: &mut SeriesStore, what: &str| -> Result<(), Mismatch> {
        check_all(s, &oracle, what).map_err(|e| fail(end, e))?;
        if device.allocated_pages() != s.disk_pages() {
            return Err(fail(
                end,
                format!(
                    "{what}: {} pages allocated, {} held by files",
                    device.allocated_pages(),
                    s.disk_pages()
                ),
            ));
        }
        if s.disk_points() + s.memory_points() < oracle.len() as u64 {
            return Err(fail(
                end,
                format!("{what}: fewer points stored than distinct points inserted"),
            ));
        }
        Ok(())
    };
    audit(&mut s, "end of stream")?;
    if s.stats().inserts != inserts {
        return Err(fail(
            end,
            format!("{} inserts counted, {inserts} made", s.stats().inserts),
        ));
    }
    s.flush_all()
        .map_err(|e| fail(end, format!("final flush: {e}")))?;
    if s.memory_points() != 0 {
        return Err(fail(end, "points left in memory after the final flush".into()));
    }
    audit(&mut s, "after flushing all")?;
    s.compact()
        .map_err(|e| fail(end, format!("final compaction: {e}")))?;
    if s.files().1 != 0 {
        return Err(fail(end, "delay files left after the final compaction".into()));
    }
    audit(&mut s, "after compacting")?;
    let st = s.stats();
    totals.flushes += st.flushes;
    totals.merges += st.memory_compactions + st.disk_compactions;
    Ok(())
}

#[test]
fn every_time_series_layout_matches_the_oracle() {
    let ops_per_config = env_u64("SOAK_OPS", DEFAULT_OPS);
    let first_seed = env_u64("SOAK_SEED", 0);
    let mut totals = Totals::default();
    let mut failures = Vec::new();
    let mut i = 0u64;
    for (layout, pick) in VARIANTS {
        for compaction in [false, true] {
            let seed = first_seed.wrapping_add(2000 + i);
            i += 1;
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x7535);
            let setup = Setup::draw(layout, pick, compaction, &mut rng);
            let ops = stream(seed, ops_per_config);
            failures.extend(check_stream(
                &setup.name(),
                seed,
                &setup,
                &ops,
                &mut totals,
                replay,
            ));
        }
    }
    totals.print(
        "time series",
        "point and range reads",
        "flushes",
        "memory and disk compactions",
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        totals.flushes > 0 && totals.merges > 0,
        "the streams crossed no flush or compaction"
    );
}
