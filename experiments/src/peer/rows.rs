//! A fjall run as result rows beside lsmlab's `leaper-online` rows, and the note that says what
//! its numbers are. Plain functions of a `FjallTimeline` (no `fjall` feature needed), so they
//! are tested on hand-made timelines.
//!
//! Rows carry `engine = "fjall"` and `policy = "fjall"` (lsmlab's own rows say `engine =
//! "lsmlab"`): figures, Table 4 and the claims select lsmlab's policies by name and never compare
//! them with fjall, whose times are wall time, not the virtual clock.

use crate::experiment::{Row, RowBuilder};

use super::{DipAlignment, FjallTimeline};

/// The `engine` and `policy` value of the peer's rows.
pub const FJALL: &str = "fjall";

/// A hit-ratio dip: an interval whose hit ratio is this far below the run's median interval hit
/// ratio (2 percentage points; the figures the report also computes for lsmlab's `lru`).
pub const DIP_DROP: f64 = 0.02;

/// How the peer's run lines up with lsmlab's: the op counts it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PeerPlan {
    /// Warm-up ops (lsmlab's warm-up, every policy's).
    pub warmup_ops: u64,
    /// Measured ops: `interval_ops x intervals`.
    pub measured_ops: u64,
    /// Ops per interval: the measured ops of the lsmlab run matched, over its intervals, rounded
    /// down (at least 1).
    pub interval_ops: u64,
    /// The lsmlab policy whose measured op count was matched, and that count.
    pub matched_policy: &'static str,
    pub matched_ops: u64,
}

impl PeerPlan {
    /// Warm-up `warmup_ops`, then `intervals` intervals of `floor(matched_ops / intervals)` ops
    /// (at least 1): about the matched run's measured ops, in the same number of intervals.
    pub fn new(warmup_ops: u64, matched_policy: &'static str, matched_ops: u64, intervals: u64) -> Self {
        let intervals = intervals.max(1);
        let interval_ops = (matched_ops / intervals).max(1);
        PeerPlan {
            warmup_ops,
            measured_ops: interval_ops * intervals,
            interval_ops,
            matched_policy,
            matched_ops,
        }
    }
}

fn dims(workload: &str, t: &FjallTimeline) -> RowBuilder {
    let data = t.data_bytes.max(1) as f64;
    RowBuilder::new()
        .str("workload", workload)
        .str("policy", FJALL)
        .str("engine", FJALL)
        .num("cache_data_ratio", t.run.cache_bytes as f64 / data)
        .num("memtable_data_ratio", t.run.memtable_bytes as f64 / data)
        .int("background_ops", t.summary.flushes + t.summary.compactions)
}

/// The rows of one fjall run: one `kind = interval` row per interval, then a `kind = summary` row.
pub(crate) fn rows(workload: &str, t: &FjallTimeline) -> Vec<Row> {
    let base = dims(workload, t);
    let mut out: Vec<Row> = t
        .intervals
        .iter()
        .map(|i| {
            base.clone()
                .str("kind", "interval")
                .int("interval", i.interval)
                .int("ops", i.ops)
                .opt_num("hit_ratio", i.hit_ratio)
                .num("ops_per_s", i.ops_per_s)
                .num("p95_us", i.p95_us)
                .bool("in_flush", i.in_flush)
                .bool("in_compaction", i.in_compaction)
                .bool("in_window", i.in_window())
                .int("cache_hits", i.data_block_hits)
                .int("cache_misses", i.data_block_loads)
                .int("flushes", i.flushes)
                .int("compactions", i.compactions)
                .int("moves", i.moves)
                .int("retired_tables", i.retired_tables)
                .build()
        })
        .collect();
    let s = &t.summary;
    let dips = t.dip_alignment(DIP_DROP);
    let mut row = base
        .str("kind", "summary")
        .str("engine_version", &t.engine)
        .int("warmup_ops", t.run.warmup_ops)
        .int("ops", t.run.measured_ops)
        .int("interval_ops", t.run.interval_ops)
        .int("intervals", t.intervals.len() as u64)
        .opt_num("hit_ratio", s.hit_ratio)
        .num("qps", s.ops_per_s)
        .num("p95_us", s.p95_us)
        .num("p99_us", s.p99_us)
        .int("cache_hits", s.data_block_hits)
        .int("cache_misses", s.data_block_loads)
        .int("flushes", s.flushes)
        .int("compactions", s.compactions)
        .int("moves", s.moves)
        .int("window_intervals", s.window_intervals)
        .opt_num("hit_ratio_in_windows", s.hit_ratio_in_windows)
        .opt_num("hit_ratio_outside_windows", s.hit_ratio_outside)
        .opt_num("hit_ratio_after_compaction", s.hit_ratio_after_compaction)
        .num("dip_drop", DIP_DROP)
        .num("wall_s", t.measured_secs)
        .int("verified_reads", t.verified_reads)
        .int("driver_seals", t.driver_seals);
    if let Some(d) = dips {
        row = row
            .num("median_interval_hit_ratio", d.median_hit_ratio)
            .int("dips", d.dips)
            .int("dips_in_or_after_window", d.dips_in_or_after_window)
            .num("window_or_next_share", d.window_or_next_share);
    }
    out.push(row.build());
    out
}

/// The sentence on how the run's hit-ratio dips line up with its background operations, from the
/// measured alignment.
pub fn dip_sentence(d: Option<DipAlignment>) -> String {
    let Some(d) = d else {
        return "no interval read a data block, so no hit-ratio dip could be measured".into();
    };
    let chance = d.window_or_next_share * 100.0;
    if d.dips == 0 {
        return format!(
            "no interval's hit ratio fell more than {:.0} points below the median interval hit ratio {:.3}",
            DIP_DROP * 100.0,
            d.median_hit_ratio
        );
    }
    let share = d.dips_in_or_after_window as f64 / d.dips as f64 * 100.0;
    // Within 10 points of the chance share, the alignment says nothing either way.
    let verdict = if share >= chance + 10.0 {
        "more often than chance would place them"
    } else if share <= chance - 10.0 {
        "less often than chance would place them"
    } else {
        "about as often as chance would place them (within 10 points)"
    };
    format!(
        "{} of {} hit-ratio dips (intervals more than {:.0} points below the median interval hit ratio {:.3}) fall in \
         an interval with a flush or compaction or the one after it ({share:.0}%), while {chance:.0}% of the intervals \
         are such intervals: {verdict}",
        d.dips_in_or_after_window,
        d.dips,
        DIP_DROP * 100.0,
        d.median_hit_ratio,
    )
}

/// The result note of one fjall run.
pub(crate) fn note(workload: &str, plan: &PeerPlan, t: &FjallTimeline) -> String {
    format!(
        "fjall peer, {workload}: {} on the same workload spec and seed, cache / data = {:.3} ({} B) and memtable / \
         data = {:.3} ({} B) of the {} B of logical data, {} warm-up ops and {} measured ops in {} intervals of {} \
         ops ({} measured ops of lsmlab's {} run, rounded down to whole intervals). Its throughput and latencies \
         are wall time on this machine, not the virtual clock, so they are not comparable with lsmlab's qps and \
         p95; its hit ratio counts data blocks only (a hit = found in the block cache, a miss = read from a table \
         file, which the operating system's page cache likely holds). fjall's block cache is not LRU (quick_cache, \
         a scan-resistant S3-FIFO-style policy), and fjall flushes and compacts on {} background threads that \
         share this machine's {} cores with the foreground loop. A window interval is one in which a flush or \
         compaction completed or was running at a probe (every {} ops), not lsmlab's T1 + T2. Measured: {} \
         flushes and {} compactions; {}; every {}th read checked ({} reads, all correct).",
        t.engine,
        t.run.cache_bytes as f64 / t.data_bytes.max(1) as f64,
        t.run.cache_bytes,
        t.run.memtable_bytes as f64 / t.data_bytes.max(1) as f64,
        t.run.memtable_bytes,
        t.data_bytes,
        plan.warmup_ops,
        plan.measured_ops,
        t.intervals.len(),
        plan.interval_ops,
        plan.matched_ops,
        plan.matched_policy,
        t.run.worker_threads,
        std::thread::available_parallelism().map_or(0, usize::from),
        t.run.probe_every,
        t.summary.flushes,
        t.summary.compactions,
        dip_sentence(t.dip_alignment(DIP_DROP)),
        t.run.verify_every,
        t.verified_reads,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::{FjallInterval, FjallRun, FjallSummary};
    use lsmlab_workloads::kv::KvWorkload;
    use serde_json::Value;

    fn interval(i: u64, hits: u64, loads: u64, window: bool) -> FjallInterval {
        FjallInterval {
            interval: i,
            ops: 10,
            hit_ratio: crate::peer::hit_ratio(hits, loads),
            data_block_hits: hits,
            data_block_loads: loads,
            index_block_hits: 0,
            index_block_loads: 0,
            ops_per_s: 100.0,
            p95_us: 5.0,
            flushes: u64::from(window),
            compactions: 0,
            moves: 0,
            retired_tables: 0,
            in_flush: window,
            in_compaction: false,
            tables: 3,
            l0_tables: 1,
        }
    }

    fn timeline() -> FjallTimeline {
        let w = KvWorkload::parse("synthetic")
            .unwrap()
            .with_records(1000)
            .unwrap();
        let run = FjallRun::with_fractions(w, 1, 0.3, 0.1, 50, 40, 10).unwrap();
        // ratios 0.9, 0.5 (a window), 0.8 (after it), 0.9: median 0.9, dips at 1 and 2
        let intervals = vec![
            interval(0, 9, 1, false),
            interval(1, 5, 5, true),
            interval(2, 8, 2, false),
            interval(3, 9, 1, false),
        ];
        FjallTimeline {
            engine: "fjall 3.1.13 (lsm-tree 3.1.10)".into(),
            data_bytes: run.data_bytes(),
            run,
            disk_bytes_after_load: 0,
            levels_after_load: vec![],
            load_secs: 0.0,
            warmup_secs: 0.0,
            measured_secs: 0.4,
            verified_reads: 3,
            driver_seals: 0,
            warmup_flushes: 0,
            warmup_compactions: 0,
            intervals,
            summary: FjallSummary {
                hit_ratio: Some(31.0 / 40.0),
                data_block_hits: 31,
                data_block_loads: 9,
                ops_per_s: 100.0,
                p95_us: 5.0,
                p99_us: 6.0,
                flushes: 1,
                compactions: 0,
                moves: 0,
                window_intervals: 1,
                hit_ratio_in_windows: Some(0.5),
                hit_ratio_outside: Some(26.0 / 30.0),
                hit_ratio_after_compaction: None,
            },
        }
    }

    #[test]
    fn rows_are_the_intervals_then_a_summary_tagged_fjall() {
        let t = timeline();
        let rows = rows("synthetic", &t);
        assert_eq!(rows.len(), 5);
        for r in &rows {
            assert_eq!(r["engine"], FJALL);
            assert_eq!(r["policy"], FJALL);
            assert_eq!(r["workload"], "synthetic");
            assert_eq!(r["background_ops"], 1);
            assert!((r["cache_data_ratio"].as_f64().unwrap() - 0.3).abs() < 1e-9);
        }
        let (intervals, summary) = rows.split_at(4);
        for (n, r) in intervals.iter().enumerate() {
            assert_eq!(r["kind"], "interval");
            assert_eq!(r["interval"], n as u64);
            assert_eq!(r["in_window"], Value::Bool(n == 1));
        }
        let hits: u64 = intervals.iter().map(|r| r["cache_hits"].as_u64().unwrap()).sum();
        let s = &summary[0];
        assert_eq!(s["kind"], "summary");
        assert_eq!(s["cache_hits"].as_u64(), Some(hits));
        assert_eq!(s["dips"], 2);
        assert_eq!(s["dips_in_or_after_window"], 2);
        assert_eq!(s["window_or_next_share"], 0.5);
        assert_eq!(s["hit_ratio_in_windows"], 0.5);
        assert_eq!(s["engine_version"], "fjall 3.1.13 (lsm-tree 3.1.10)");
    }

    #[test]
    fn the_dip_sentence_follows_the_measured_alignment() {
        let t = timeline();
        let s = dip_sentence(t.dip_alignment(DIP_DROP));
        assert!(s.starts_with("2 of 2 hit-ratio dips"), "{s}");
        assert!(s.contains("(100%)") && s.contains("50% of the intervals"), "{s}");
        assert!(s.contains("more often than chance"), "{s}");
        let near = DipAlignment {
            median_hit_ratio: 0.5,
            dips: 4,
            dips_in_or_after_window: 2,
            window_or_next_share: 0.55,
        };
        assert!(dip_sentence(Some(near)).contains("about as often as chance"));
        let against = DipAlignment {
            window_or_next_share: 0.9,
            ..near
        };
        assert!(dip_sentence(Some(against)).contains("less often than chance"));
        let none = DipAlignment {
            dips: 0,
            dips_in_or_after_window: 0,
            ..near
        };
        assert!(dip_sentence(Some(none)).starts_with("no interval's hit ratio fell"));
        assert!(dip_sentence(None).contains("no interval read a data block"));
        let n = note("synthetic", &PeerPlan::new(50, "lru", 43, 4), &t);
        assert!(
            n.contains("fjall 3.1.13") && n.contains("wall time") && n.contains("not LRU"),
            "{n}"
        );
        assert!(
            n.contains("40 measured ops in 4 intervals of 10 ops (43 measured ops of lsmlab's lru run"),
            "{n}"
        );
    }

    #[test]
    fn the_plan_keeps_the_interval_count_and_rounds_ops_down() {
        let p = PeerPlan::new(100, "lru", 1003, 10);
        assert_eq!((p.interval_ops, p.measured_ops, p.warmup_ops), (100, 1000, 100));
        let p = PeerPlan::new(100, "lru", 3, 10);
        assert_eq!((p.interval_ops, p.measured_ops), (1, 10));
    }
}
