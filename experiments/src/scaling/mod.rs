//! `scaling`: every engine component and every experiment's core at n = base x 1, 2, 4, 8
//! records, with the growth exponent of its time and of its counted work, judged against n log n.
//!
//! The components are the structures the papers' mechanisms are built from: the memory R-tree
//! (Guttman's insert with quadratic split, range search), the packed disk R-tree (Hilbert sort and
//! bulk load, as every LSM R-tree flush and merge does; search), the Update Memo (LSM RUM-tree
//! Section 3), the LSM R-tree's update stream per maintenance strategy with flushes and merges,
//! the key-value store of the Leaper experiments (puts with flushes and leveled compactions,
//! gets, scans), the time-series store of the DIOL experiments per memory level (inserts of an
//! out-of-order stream, point and range reads) and the record clusters of OEP 7 (load, fetch).
//! The experiment core is `rum-update`'s ingest of its generated stream at x k records with its
//! objects per memory page kept.
//!
//! Each component's exponent is the least-squares slope of log(cost) against log(n) over its rows
//! ([`fit`]); the verdict compares the slope of the counted work (deterministic) with the slope of
//! n log n over the same n. The report also judges CPU time the same way, with a wider tolerance.

mod components;
mod fit;
mod report;

use lsmlab_engine::cluster::Layout as ClusterLayout;
use lsmlab_engine::series::Layout as SeriesLayout;
use lsmlab_engine::spatial::Strategy;

use crate::config::{self, check, check_items, Config};
use crate::experiment::{
    DataSpec, MemoryEstimate, Row, RowBuilder, RunContext, RunOutput, Scale, TypedExperiment,
};
use crate::rum::Dataset;
use components::{KvSizes, Measured};

/// The `paper` of the result: the experiment belongs to no paper.
pub const PAPER: &str = "lsmlab (scaling)";

/// This paper as the registry lists it (see `lsmlab_harness::paper`).
pub fn paper() -> lsmlab_harness::paper::Paper {
    lsmlab_harness::paper::Paper {
        id: "scaling",
        title: PAPER,
        kind: lsmlab_harness::paper::PaperKind::Standalone,
        experiments: vec![&Scaling],
        claims: None,
        traces: Vec::new(),
        styles: &[],
        figures: report::figure_specs,
    }
}

/// The component groups, in run order, with the paper each one's mechanism comes from.
pub const GROUPS: [(&str, &str); 8] = [
    ("mem-rtree", "LSM RUM-tree"),
    ("packed-rtree", "LSM RUM-tree"),
    ("update-memo", "LSM RUM-tree"),
    ("lsm-rtree", "LSM RUM-tree"),
    ("kv-store", "Leaper"),
    ("time-series", "DIOL"),
    ("cluster", "OrientDB OEP 7"),
    ("rum-update", "LSM RUM-tree"),
];

pub(crate) struct Scaling;

lsmlab_harness::config! {
    /// `scaling`'s parameters.
    pub struct ScalingConfig {
        /// records (operations of the streams) at x1
        pub base_records: u64,
        /// multiples of base_records measured (at least two distinct, increasing; default 1,2,4,8)
        pub multipliers: Vec<u64>,
        /// groups to run: mem-rtree, packed-rtree, update-memo, lsm-rtree, kv-store, time-series, cluster,
        /// rum-update
        pub components: Vec<String>,
        /// range queries of the R-tree query components, the same number at every n
        pub queries: usize,
        /// side of a range query as a fraction of the extent's side, in (0, 1]
        pub query_side: f64,
        /// strategies of the lsm-rtree and rum-update groups (Eager, Validation, UM, UM+F, ...)
        #[serde(with = "config::text_list")]
        pub strategies: Vec<Strategy>,
        /// memory component of the lsm-rtree group in 2 KiB pages, fixed while n grows (cache 4x, max
        /// mergeable 8x)
        pub lsm_memory_pages: u64,
        /// memtable budget of the kv-store group in bytes, fixed while n grows (base level 4 memtables, size
        /// ratio 10)
        pub kv_memtable_bytes: u64,
        /// buffer cache of the kv-store group in 4 KiB pages, fixed while n grows
        pub kv_cache_pages: usize,
        /// memory levels of the time-series group: iotdb, iotdb-real, diol (memory level and delays the diol
        /// experiment's for base_records points, fixed while n grows)
        pub ts_layouts: Vec<String>,
        /// record cluster layouts of the cluster group: paginated, single-page
        #[serde(with = "config::text_list")]
        pub clusters: Vec<ClusterLayout>,
        /// records of the rum-update core at x1 (x k records, the same objects: rum-update's objects per
        /// memory page)
        pub rum_records: u64,
        /// memory component of the rum-update core in 2 KiB pages (objects = the real dataset's x
        /// memory_pages / 65,536)
        pub rum_memory_pages: u64,
        /// datasets of the rum-update core: gowalla, chicago, berlinmod
        pub rum_datasets: Vec<Dataset>,
        /// the verdict is super-n-log-n when the work exponent exceeds n log n's over the same n by more than
        /// this
        pub work_tolerance: f64,
        /// the same for the CPU-time exponent (the report's time verdict)
        pub time_tolerance: f64,
    }
}

impl Config for ScalingConfig {
    fn validate(&self) -> anyhow::Result<()> {
        check(
            "base_records",
            self.base_records,
            self.base_records >= 100,
            "at least 100",
        )?;
        let m = &self.multipliers;
        check(
            "multipliers",
            config::display_value(&serde_json::json!(m)),
            m.len() >= 2 && m[0] >= 1 && m.windows(2).all(|w| w[0] < w[1]),
            "at least two strictly increasing multiples, each at least 1 (e.g. 1,2,4,8)",
        )?;
        let top = self.base_records.saturating_mul(*m.last().unwrap_or(&1));
        check(
            "multipliers",
            top,
            top <= 1 << 32,
            "base_records x the largest multiple at most 2^32",
        )?;
        check_items(
            "components",
            &self.components,
            |c| GROUPS.iter().any(|(g, _)| g == c),
            &format!("groups among {}", group_names().join(", ")),
        )?;
        check(
            "components",
            "(empty)",
            !self.components.is_empty(),
            "at least one group",
        )?;
        check("queries", self.queries, self.queries >= 1, "at least 1")?;
        check(
            "query_side",
            self.query_side,
            self.query_side > 0.0 && self.query_side <= 1.0,
            "a fraction in (0, 1]",
        )?;
        check(
            "strategies",
            "(empty)",
            !self.strategies.is_empty(),
            "at least one strategy",
        )?;
        check(
            "lsm_memory_pages",
            self.lsm_memory_pages,
            self.lsm_memory_pages >= 2,
            "at least 2 pages",
        )?;
        check(
            "kv_memtable_bytes",
            self.kv_memtable_bytes,
            self.kv_memtable_bytes >= components::KV_PAGE as u64,
            "at least one 4096-byte page",
        )?;
        check(
            "kv_cache_pages",
            self.kv_cache_pages,
            self.kv_cache_pages >= 1,
            "at least 1 page",
        )?;
        check_items(
            "ts_layouts",
            &self.ts_layouts,
            |l| SeriesLayout::parse(l).is_some(),
            "iotdb, iotdb-real or diol",
        )?;
        check(
            "rum_records",
            self.rum_records,
            self.rum_records >= 100,
            "at least 100",
        )?;
        check(
            "rum_memory_pages",
            self.rum_memory_pages,
            self.rum_memory_pages >= 2,
            "at least 2 pages",
        )?;
        for (key, v) in [
            ("work_tolerance", self.work_tolerance),
            ("time_tolerance", self.time_tolerance),
        ] {
            check(key, v, (0.0..=2.0).contains(&v), "an exponent margin in [0, 2]")?;
        }
        Ok(())
    }
}

fn group_names() -> Vec<&'static str> {
    GROUPS.iter().map(|(g, _)| *g).collect()
}

/// Peak memory per record at the largest n: an upper bound rounded up from the peak RSS of the
/// paper run (`/usr/bin/time -v lsmlab run scaling --scale paper`: 4,000,000 records at x8, where
/// the cluster group's pages and the rum-update stream dominate; about 1,110 B a record beyond
/// the base). The small run's 1,000 B fell short of it. The measurements are in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
const BYTES_PER_RECORD: u64 = 1150;
/// Memory besides the records.
const RUN_BASE_BYTES: u64 = 64 << 20;

impl ScalingConfig {
    fn wants(&self, group: &str) -> bool {
        self.components.iter().any(|c| c == group)
    }

    fn rum_index(&self) -> crate::rum::IndexConfig {
        let mut index = crate::rum::IndexConfig::defaults(Scale::Tiny);
        index.memory_pages = self.rum_memory_pages;
        index.max_mergeable_pages = self.rum_memory_pages * 8;
        index.datasets = self.rum_datasets.clone();
        index
    }
}

impl TypedExperiment for Scaling {
    type Config = ScalingConfig;

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "scaling",
            paper: PAPER,
            about: "every component and rum-update's core at x1, x2, x4, x8 records: time and counted work, growth exponents against n log n",
            figures: report::figures,
            report: report::section,
        }
    }

    #[allow(clippy::expect_used)] // the default strategy names are constants that parse
    fn defaults(&self, scale: Scale) -> ScalingConfig {
        let pick = |t: u64, s: u64, p: u64| match scale {
            Scale::Tiny => t,
            Scale::Small => s,
            Scale::Paper => p,
        };
        ScalingConfig {
            base_records: pick(500, 25_000, 250_000),
            multipliers: vec![1, 2, 4, 8],
            components: group_names().iter().map(|s| s.to_string()).collect(),
            queries: pick(50, 500, 2_000) as usize,
            query_side: 0.027,
            strategies: ["Eager", "Validation", "UM", "UM+FMBV"]
                .iter()
                .map(|s| s.parse().expect("strategy names parse"))
                .collect(),
            lsm_memory_pages: pick(8, 64, 512),
            kv_memtable_bytes: pick(8 << 10, 64 << 10, 1 << 20),
            kv_cache_pages: pick(16, 256, 4096) as usize,
            ts_layouts: vec!["iotdb".into(), "diol".into()],
            clusters: ClusterLayout::ALL.to_vec(),
            rum_records: pick(1_000, 50_000, 500_000),
            rum_memory_pages: pick(8, 256, 2_048),
            rum_datasets: vec![Dataset::Gowalla],
            work_tolerance: 0.05,
            time_tolerance: 0.15,
        }
    }

    fn memory_estimate(&self, config: &ScalingConfig, _data: &[DataSpec]) -> Option<MemoryEstimate> {
        let top = *config.multipliers.last()?;
        let records = config.base_records.max(config.rum_records) * top;
        Some(MemoryEstimate {
            bytes: records * BYTES_PER_RECORD + RUN_BASE_BYTES,
            basis: format!(
                "{records} records (the largest n) x {BYTES_PER_RECORD} B, measured per record, + {} MiB",
                RUN_BASE_BYTES >> 20
            ),
        })
    }

    fn run(&self, cfg: &ScalingConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let groups: Vec<&str> = group_names().into_iter().filter(|g| cfg.wants(g)).collect();
        ctx.progress.set_total(groups.len() * cfg.multipliers.len());
        let qs = components::queries(cfg.queries, cfg.query_side, ctx.seed);
        let ts_layouts: Vec<SeriesLayout> = cfg
            .ts_layouts
            .iter()
            .filter_map(|l| SeriesLayout::parse(l))
            .collect();
        let rum_index = cfg.rum_index();
        let kv = KvSizes {
            memtable_bytes: cfg.kv_memtable_bytes,
            cache_pages: cfg.kv_cache_pages,
        };
        let mut rows: Vec<Row> = Vec::new();
        for &group in &groups {
            let paper = GROUPS.iter().find(|(g, _)| *g == group).map_or("", |(_, p)| *p);
            for &k in &cfg.multipliers {
                let n = cfg.base_records * k;
                ctx.progress.begin(format!("{group} x{k}"));
                let mut out: Vec<(String, &'static str, Measured)> = Vec::new();
                let seed = ctx.seed;
                match group {
                    "mem-rtree" => {
                        let (i, q) = components::mem_rtree(n, &qs, seed)?;
                        out.push(("mem-rtree-insert".into(), "component", i));
                        out.push(("mem-rtree-query".into(), "component", q));
                    }
                    "packed-rtree" => {
                        let (l, s) = components::packed_rtree(n, &qs, seed)?;
                        out.push(("packed-rtree-bulk-load".into(), "component", l));
                        out.push(("packed-rtree-search".into(), "component", s));
                    }
                    "update-memo" => {
                        out.push((
                            "update-memo".into(),
                            "component",
                            components::update_memo(n, seed)?,
                        ));
                    }
                    "lsm-rtree" => {
                        let ops = components::spatial_stream(n, seed);
                        for &s in &cfg.strategies {
                            let m = components::lsm_rtree(&ops, s, cfg.lsm_memory_pages)?;
                            out.push((format!("lsm-rtree-{s}"), "component", m));
                        }
                    }
                    "kv-store" => {
                        let [p, g, s] = components::kv_store(n, kv, seed)?;
                        out.push(("kv-put".into(), "component", p));
                        out.push(("kv-get".into(), "component", g));
                        out.push(("kv-scan".into(), "component", s));
                    }
                    "time-series" => {
                        let stream = components::ts_stream(n, cfg.base_records, seed)?;
                        for &l in &ts_layouts {
                            let (i, q) = components::time_series(n, cfg.base_records, l, &stream, seed)?;
                            out.push((format!("ts-insert-{}", l.name()), "component", i));
                            out.push((format!("ts-query-{}", l.name()), "component", q));
                        }
                    }
                    "cluster" => {
                        for &l in &cfg.clusters {
                            let (load, fetch) = components::cluster(n, l, seed)?;
                            out.push((format!("cluster-load-{}", l.name()), "component", load));
                            out.push((format!("cluster-fetch-{}", l.name()), "oep7-fetch", fetch));
                        }
                    }
                    "rum-update" => {
                        let records = cfg.rum_records * k;
                        for &d in &cfg.rum_datasets {
                            let data = components::rum_stream(&rum_index, d, records, seed)?;
                            for &s in &cfg.strategies {
                                let m = components::rum_update(&rum_index, s, &data)?;
                                out.push((format!("rum-update-{d}-{s}"), "rum-update", m));
                            }
                        }
                    }
                    other => anyhow::bail!("unknown component group {other}"),
                }
                for (component, core, m) in out {
                    let n = if group == "rum-update" {
                        cfg.rum_records * k
                    } else {
                        n
                    };
                    rows.push(base_row(&component, group, paper, core, k, n, &m));
                }
            }
        }
        add_fits(&mut rows, cfg.work_tolerance);
        let notes = notes(cfg);
        Ok(RunOutput {
            rows,
            notes,
            extra_config: Default::default(),
        })
    }
}

/// The fields of one measurement.
fn base_row(component: &str, group: &str, paper: &str, core: &str, k: u64, n: u64, m: &Measured) -> Row {
    let cpu = m.cpu.as_secs_f64();
    let mut row = RowBuilder::new()
        .str("component", component)
        .str("group", group)
        .str("paper", paper)
        .str("core", core)
        .int("multiplier", k)
        .int("n", n)
        .int("ops", m.ops)
        .int("work", m.work)
        .str("work_what", m.work_what)
        .num("cpu_s", cpu)
        .num("wall_s", m.wall.as_secs_f64())
        .num("us_per_op", cpu * 1e6 / m.ops.max(1) as f64)
        .num("work_per_op", m.work as f64 / m.ops.max(1) as f64)
        .build();
    for (key, value) in m.extra.clone().build() {
        row.insert(key, value);
    }
    row
}

/// Writes each component's fitted exponents and verdict into every one of its rows: `work_exponent`
/// and `cpu_s_exponent` / `wall_s_exponent` (least-squares slopes of log cost on log n),
/// `n_log_n_exponent` (the same fit of n log n over the component's n), `cpu_s_over_n_log_n` (the
/// CPU exponent minus n log n's) and `verdict` from the work exponent.
pub fn add_fits(rows: &mut [Row], work_tolerance: f64) {
    let mut names: Vec<String> = Vec::new();
    for r in rows.iter() {
        let c = text(r, "component");
        if !names.contains(&c) {
            names.push(c);
        }
    }
    for name in names {
        let idx: Vec<usize> = (0..rows.len())
            .filter(|&i| text(&rows[i], "component") == name)
            .collect();
        let series = |field: &str| -> Vec<(f64, f64)> {
            idx.iter()
                .map(|&i| (num(&rows[i], "n"), num(&rows[i], field)))
                .collect()
        };
        let ns: Vec<u64> = idx.iter().map(|&i| num(&rows[i], "n") as u64).collect();
        let reference = fit::n_log_n_slope(&ns);
        let work = fit::log_log_slope(&series("work"));
        let cpu = fit::log_log_slope(&series("cpu_s"));
        let wall = fit::log_log_slope(&series("wall_s"));
        let verdict = match (work, reference) {
            (Some(w), Some(r)) => fit::verdict(w, r, work_tolerance),
            _ => "not fitted",
        };
        let fields = RowBuilder::new()
            .opt_num("n_log_n_exponent", reference)
            .opt_num("work_exponent", work)
            .opt_num("cpu_s_exponent", cpu)
            .opt_num("wall_s_exponent", wall)
            .opt_num("cpu_s_over_n_log_n", cpu.zip(reference).map(|(c, r)| c - r))
            .str("verdict", verdict)
            .build();
        for &i in &idx {
            for (k, v) in &fields {
                rows[i].insert(k.clone(), v.clone());
            }
        }
    }
}

fn text(row: &Row, key: &str) -> String {
    row.get(key).and_then(|v| v.as_str()).unwrap_or("").to_string()
}

fn num(row: &Row, key: &str) -> f64 {
    row.get(key).and_then(|v| v.as_f64()).unwrap_or(f64::NAN)
}

fn notes(cfg: &ScalingConfig) -> Vec<String> {
    let ns: Vec<String> = cfg
        .multipliers
        .iter()
        .map(|k| (cfg.base_records * k).to_string())
        .collect();
    vec![
        format!(
            "n = base_records x multipliers = {} records (rum-update: {} x multipliers). Engine parameters stay fixed \
             while n grows: 2 KiB R-tree pages (63 entries per leaf), the lsm-rtree memory component of {} pages \
             (cache 4x, max mergeable component 8x, prefix policy), a kv-store memtable of {} bytes with a base level \
             of 4 memtables and size ratio 10 and a cache of {} pages of 4 KiB, {}-byte values. Each row carries the \
             ratios that drive its mechanism (entries per leaf, records and objects per memory capacity, data per \
             memtable and cache per data, records per data page, the memory budget's fraction of the data).",
            ns.join(", "),
            cfg.rum_records,
            cfg.lsm_memory_pages,
            cfg.kv_memtable_bytes,
            cfg.kv_cache_pages,
            components::KV_VALUE_BYTES
        ),
        format!(
            "Components: mem-rtree-insert (n uniform points into Guttman's R-tree, quadratic split) and mem-rtree-query \
             ({q} range queries of side {s} x the extent, the same at every n, so their results grow with n); \
             packed-rtree-bulk-load (Hilbert sort + packed bulk load of n entries, a flush's work) and \
             packed-rtree-search (the same queries on a warm cache); update-memo (n record-obsolete calls on n/{v} \
             objects, n lookups, n releases); lsm-rtree-<strategy> (n operations, n/{v} objects each inserted then \
             moved, flushes and merges inside); kv-put (n distinct keys in random order, flushes and leveled \
             compactions inside), kv-get (n/4 random stored keys), kv-scan (n/64 scans of {sk} keys); \
             ts-insert-<layout> and ts-query-<layout> (one series of n points arriving {o3} out of order with the DIOL \
             authors' delays; the memory level and the delays are the diol experiment's for base_records points, \
             fixed while n grows; then n/20 point reads and n/100 reads of 64 timestamps); cluster-load-<layout> and cluster-fetch-<layout> (n YCSB-like records, \
             then each fetched once in random order through a cold cache holding {cf} of the data pages); \
             rum-update-<dataset>-<strategy> (rum-update's generated stream at x k records with rum-update's objects \
             per memory page: the same objects updated k times as often).",
            q = cfg.queries,
            s = cfg.query_side,
            v = components::VERSIONS_PER_OBJECT,
            sk = components::KV_SCAN_KEYS,
            o3 = components::TS_O3_RATIO,
            cf = components::CLUSTER_CACHE_FRACTION,
        ),
        format!(
            "Exponents: the least-squares slope of ln(cost) on ln(n) over a component's rows (work_exponent for the \
             counted work, cpu_s_exponent for the thread's CPU time, wall_s_exponent for wall time); \
             n_log_n_exponent is the same fit of n log2 n over the same n (a little above 1: n log n has no constant \
             slope). verdict = \"{}\" when work_exponent <= n_log_n_exponent + {} (work_tolerance), else \"{}\"; the \
             report judges cpu_s_exponent the same way with time_tolerance {} (times are measured, so noisy on a \
             loaded machine; the counted work is the same on every run).",
            fit::WITHIN,
            cfg.work_tolerance,
            fit::SUPER,
            cfg.time_tolerance
        ),
        "Counted work per component (work_what says which): nodes descended plus splits (memory R-tree inserts, \
         the tree's height at each insert), entries returned (memory R-tree queries: the memory R-tree counts no \
         nodes), pages written (bulk load), nodes visited (packed search), memo operations (Update Memo), device \
         pages read + written (LSM R-tree, time-series insert, rum-update), flush and compaction pages (kv-put), data \
         blocks read through the cache (kv-get, kv-scan), device pages read (time-series reads), pages through the \
         cache (cluster fetch), device pages written (cluster load). Every structure lives on a counted memory device."
            .to_string(),
        "Reading a verdict: the exponents are slopes over x1-x8 only. An LSM index with a memory component of M \
         entries costs about n log(n / M), whose slope near n = M is well above n log n's, and its reads start once \
         its disk data outgrows the buffer cache (a one-time step); more multipliers (e.g. 1,2,4,8,16,32) show such \
         slopes falling back towards 1. The DIOL layout's reads visit every delay file that covers the key, and \
         with a fixed memory level the delay files grow with n, so the pages per read grow with n (DIOL without \
         disk compaction)."
            .to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Overlay;
    use crate::experiment::Experiment;
    use crate::progress::Progress;

    fn tiny(sets: &[&str]) -> anyhow::Result<ScalingConfig> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        config::resolve(&Scaling.defaults(Scale::Tiny), &Overlay::sets(&sets))
    }

    #[test]
    fn bad_values_are_refused_by_name() {
        for (set, needle) in [
            ("multipliers=1", "multipliers"),
            ("multipliers=4,2", "increasing"),
            ("multipliers=0,1", "at least 1"),
            ("components=mem-rtree,btree", "btree"),
            ("query_side=0", "query_side"),
            ("ts_layouts=rocks", "ts_layouts"),
            ("strategies=UM+Q", "strategies"),
            ("base_records=10", "at least 100"),
            ("work_tolerance=-1", "work_tolerance"),
        ] {
            let e = format!("{:#}", tiny(&[set]).unwrap_err());
            assert!(e.contains(needle), "{set}: {e}");
        }
        tiny(&["multipliers=1,3,9", "components=update-memo"]).unwrap();
    }

    fn run(sets: &[&str]) -> RunOutput {
        let cfg = tiny(sets).unwrap();
        let map = config::to_map(&cfg).unwrap();
        let progress = Progress::silent();
        let ctx = RunContext {
            scale: Scale::Tiny,
            seed: 7,
            data: &[],
            progress: &progress,
        };
        Experiment::run(&Scaling, &map, &ctx).unwrap()
    }

    #[test]
    fn every_component_has_a_row_per_n_with_monotone_work_and_a_fit() {
        let out = run(&["base_records=200", "rum_records=400", "queries=10"]);
        let mut components: Vec<String> = Vec::new();
        for r in &out.rows {
            let c = text(r, "component");
            if !components.contains(&c) {
                components.push(c);
            }
        }
        // 2 + 2 + 1 + 4 strategies + 3 + 2 layouts x 2 + 2 clusters x 2 + 4 strategies
        assert_eq!(components.len(), 2 + 2 + 1 + 4 + 3 + 4 + 4 + 4, "{components:?}");
        for c in &components {
            let rows: Vec<&Row> = out.rows.iter().filter(|r| &text(r, "component") == c).collect();
            let ks: Vec<u64> = rows.iter().map(|r| num(r, "multiplier") as u64).collect();
            assert_eq!(ks, [1, 2, 4, 8], "{c}");
            let ns: Vec<f64> = rows.iter().map(|r| num(r, "n")).collect();
            assert!(ns.windows(2).all(|w| w[1] == 2.0 * w[0]), "{c}: {ns:?}");
            let work: Vec<f64> = rows.iter().map(|r| num(r, "work")).collect();
            assert!(
                work.windows(2).all(|w| w[0] <= w[1]),
                "{c}: work {work:?} not monotone in n"
            );
            // A component that did no counted work (UM+FMBV never flushes this small) has no fit.
            let worked = work.iter().filter(|w| **w > 0.0).count() >= 2;
            for r in &rows {
                for f in ["n_log_n_exponent", "cpu_s", "us_per_op"] {
                    assert!(r.contains_key(f), "{c} lacks {f}");
                }
                assert_eq!(r.contains_key("work_exponent"), worked, "{c}");
                let v = text(r, "verdict");
                assert!(
                    v == fit::WITHIN || v == fit::SUPER || v == "not fitted",
                    "{c}: {v}"
                );
            }
        }
        // The deterministic parts: the same seed gives the same counted work.
        let again = run(&["base_records=200", "rum_records=400", "queries=10"]);
        let work = |o: &RunOutput| o.rows.iter().map(|r| num(r, "work") as u64).collect::<Vec<_>>();
        assert_eq!(work(&out), work(&again));
    }

    #[test]
    fn fits_recover_synthetic_exponents_per_component() {
        let mut rows: Vec<Row> = Vec::new();
        for (name, power) in [("linear", 1.0), ("quadratic", 2.0)] {
            for k in [1u64, 2, 4, 8] {
                let n = 10_000 * k;
                let m = Measured {
                    ops: n,
                    work: (n as f64).powf(power) as u64,
                    work_what: "synthetic",
                    cpu: std::time::Duration::from_secs_f64(1e-6 * (n as f64).powf(power)),
                    wall: std::time::Duration::from_secs_f64(1e-6 * (n as f64).powf(power)),
                    extra: RowBuilder::new(),
                };
                rows.push(base_row(name, "g", "p", "component", k, n, &m));
            }
        }
        add_fits(&mut rows, 0.05);
        let lin = &rows[0];
        let quad = &rows[4];
        assert!((num(lin, "work_exponent") - 1.0).abs() < 1e-6);
        assert!((num(quad, "work_exponent") - 2.0).abs() < 1e-3);
        assert!((num(quad, "cpu_s_exponent") - 2.0).abs() < 1e-3);
        assert_eq!(text(lin, "verdict"), fit::WITHIN);
        assert_eq!(text(quad, "verdict"), fit::SUPER);
        assert!(rows.iter().all(|r| r.contains_key("cpu_s_over_n_log_n")));
    }

    #[test]
    fn memory_estimate_grows_with_the_largest_n() {
        let small = Scaling.defaults(Scale::Small);
        let tiny = Scaling.defaults(Scale::Tiny);
        let e = |c: &ScalingConfig| TypedExperiment::memory_estimate(&Scaling, c, &[]).unwrap().bytes;
        assert!(e(&small) > e(&tiny));
    }
}
