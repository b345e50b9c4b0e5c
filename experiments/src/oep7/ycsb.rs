//! `oep7-ycsb`: YCSB's core workloads A-F on both layouts, with the cache holding a swept fraction
//! of the data pages (the OEP's success metric: "YCSB when only 20% of the data is cached").
//!
//! A record is YCSB's: its key (`user<fnv hash>`) and 10 fields of 100 bytes, stored as one
//! record. Keys find record ids through an in-memory index (a hash map for point operations, an
//! ordered map for scans), the same for both layouts and not counted: OrientDB's YCSB binding
//! looks keys up in an index whose pages would be the same for both clusters.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use lsmlab_engine::cluster::Rid;
use lsmlab_workloads::ycsb::{key_name, record_fields, Op, Stream, Workload, FIELD_COUNT, FIELD_LENGTH};

use super::{counting_note, ratio_fields, ratios_note, Bed, Cost, Setup, LAYOUT_NOTE, PAPER};
use crate::config::{self, check, check_items, Config};
use crate::experiment::{RowBuilder, RunContext, RunOutput, Scale, TypedExperiment};
use crate::measure::LatencyRecorder;

pub(crate) struct Oep7Ycsb;

/// A YCSB record as stored: key length, key, then the fields back to back.
pub fn encode(keynum: u64, fields: &[Vec<u8>]) -> Vec<u8> {
    let key = key_name(keynum);
    let mut r = Vec::with_capacity(1 + key.len() + FIELD_COUNT * FIELD_LENGTH);
    r.push(key.len() as u8);
    r.extend_from_slice(key.as_bytes());
    for f in fields {
        r.extend_from_slice(f);
    }
    r
}

/// Overwrites field `field` of an encoded record.
pub fn set_field(record: &mut [u8], field: usize, value: &[u8]) {
    let at = 1 + record[0] as usize + field * FIELD_LENGTH;
    record[at..at + FIELD_LENGTH].copy_from_slice(value);
}

pub(crate) fn record_bytes_note() -> String {
    format!(
        "YCSB records: key (\"user\" + 19-20 digits) + {FIELD_COUNT} fields x {FIELD_LENGTH} B, about {} bytes",
        encode(0, &record_fields(0)).len()
    )
}

/// Loads YCSB records `0..n` (bulk insert); returns their ids in key order and the key index.
pub(crate) fn load_ycsb_records(bed: &mut Bed, n: u64, _seed: u64) -> anyhow::Result<(Vec<Rid>, Vec<u64>)> {
    let keys: Vec<u64> = (0..n).collect();
    let mut ids = Vec::with_capacity(n as usize);
    for chunk in keys.chunks(10_000) {
        let records: Vec<Vec<u8>> = chunk.iter().map(|&k| encode(k, &record_fields(k))).collect();
        ids.extend(bed.cluster.insert_batch(&records)?);
    }
    bed.cluster.cache().flush_dirty()?;
    Ok((ids, keys))
}

lsmlab_harness::config! {
    /// `oep7-ycsb`'s parameters.
    pub struct YcsbConfig {
        #[serde(flatten)]
        /// The settings the experiments of this paper share (flattened: its keys are top-level `--set` keys).
        pub setup: Setup,
        /// YCSB core workloads: ycsb-a .. ycsb-f
        #[serde(with = "config::text_list")]
        pub workloads: Vec<Workload>,
        /// cache capacity as fractions of the layout's data pages (0.2 = the OEP's 20% cached), plus the map
        /// pages for paginated
        pub cache_fractions: Vec<f64>,
        /// measured operations per run (YCSB operationcount)
        pub operations: u64,
        /// operations of the same workload run first, unmeasured, to warm the cache
        pub warmup_operations: u64,
        /// measured operations of workload E, whose operations scan up to 100 records each (half as many warm
        /// up)
        pub scan_operations: u64,
        /// position-map pages: cached (kept, as OrientDB's read cache does), uncached (evicted after every
        /// operation: a counterfactual)
        pub map_cache: Vec<String>,
    }
}

impl Config for YcsbConfig {
    fn validate(&self) -> anyhow::Result<()> {
        self.setup.validate()?;
        check(
            "workloads",
            "(empty)",
            !self.workloads.is_empty(),
            "at least one workload",
        )?;
        check_items(
            "cache_fractions",
            &self.cache_fractions,
            |f| *f > 0.0 && *f <= 1.0,
            "fractions in (0, 1]",
        )?;
        check("operations", self.operations, self.operations >= 1, "at least 1")?;
        super::check_map_cache(&self.map_cache)?;
        check(
            "scan_operations",
            self.scan_operations,
            self.scan_operations >= 1,
            "at least 1",
        )?;
        Ok(())
    }
}

/// Peak RSS per record for the memory check: an upper bound, rounded up from the paper-scale run's
/// largest cell (paginated, everything cached: 4,582 B per record over a million records), which
/// passed the slope between the tiny defaults and ten times their records (3,694 B). Both are in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
const BYTES_PER_RECORD: u64 = 4800;

impl TypedExperiment for Oep7Ycsb {
    type Config = YcsbConfig;

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "oep7-ycsb",
            paper: PAPER,
            about: "OEP 7 success metric: YCSB A-F on both layouts with a swept cached fraction of the data (20% the OEP's)",
            figures: super::report::ycsb_figures,
            report: super::report::ycsb_report,
        }
    }

    fn defaults(&self, scale: Scale) -> YcsbConfig {
        let (ops, scans, fractions) = match scale {
            Scale::Tiny => (2_000, 200, vec![0.2]),
            Scale::Small => (10_000, 1_000, vec![0.05, 0.2, 0.5]),
            Scale::Paper => (1_000_000, 100_000, vec![0.05, 0.1, 0.2, 0.5, 1.0]),
        };
        YcsbConfig {
            setup: Setup::defaults(scale, [3_000, 50_000, 1_000_000]),
            workloads: Workload::ALL.to_vec(),
            cache_fractions: fractions,
            operations: ops,
            warmup_operations: ops / 2,
            scan_operations: scans,
            map_cache: super::MAP_CACHE_VALUES.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// One cell per cluster layout and cached fraction: each loads its own records and runs the
    /// workloads in YCSB's order on them (the workloads share the load, so they stay in one cell).
    fn cells(&self, cfg: &YcsbConfig, _data: &[crate::experiment::DataSpec]) -> Vec<crate::cells::Cell> {
        crate::cells::Cell::grid(&[
            ("clusters", cfg.setup.clusters.len()),
            ("cache_fractions", cfg.cache_fractions.len()),
        ])
    }

    #[allow(clippy::expect_used)] // the store is loaded just above
    fn run(&self, cfg: &YcsbConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let s = &cfg.setup;
        let profile = s.profile()?;
        let ps = s.page_size;
        let mut rows = Vec::new();
        let mut per_page = Vec::new();
        // YCSB's documented order: load, run A, B, C, F, D on the same data; reload, run E.
        let order = [
            Workload::A,
            Workload::B,
            Workload::C,
            Workload::F,
            Workload::D,
            Workload::E,
        ];
        // Replayed traces (`--trace`) replace the generated run phases: the run's workloads become
        // the traces', run in the same order.
        let run_ops = |w: Workload| {
            if w == Workload::E {
                (cfg.scan_operations / 2, cfg.scan_operations)
            } else {
                (cfg.warmup_operations, cfg.operations)
            }
        };
        let traces = crate::trace::ycsb_traces(ctx.data, s.records, &run_ops)?;
        let workloads: Vec<Workload> = if traces.is_empty() {
            cfg.workloads.clone()
        } else {
            traces.iter().map(|t| t.workload).collect()
        };
        let selected: Vec<Workload> = order.into_iter().filter(|w| workloads.contains(w)).collect();
        ctx.progress.set_total(
            s.clusters.len() * workloads.len() * cfg.cache_fractions.len() * cfg.map_cache.len(),
        );
        for &layout in &s.clusters {
            for (map, &fraction) in cfg
                .map_cache
                .iter()
                .flat_map(|m| cfg.cache_fractions.iter().map(move |f| (m.as_str(), f)))
            {
                let mut loaded: Option<(Bed, Driver, usize, u64)> = None;
                for &w in &selected {
                    ctx.progress.begin(format!("{layout} {w} cache {fraction} map {map}"));
                    if loaded.is_none() || w == Workload::E {
                        let mut bed = Bed::new(layout, ps)?;
                        let (ids, keys) = load_ycsb_records(&mut bed, s.records, ctx.seed)?;
                        if per_page.iter().all(|(l, _)| *l != layout) {
                            let sp = bed.cluster.space();
                            per_page.push((layout, sp.live_records as f64 / sp.data_pages as f64));
                        }
                        let cache_pages = bed.cache_pages_with(fraction, map);
                        bed.set_cache(cache_pages)?;
                        loaded = Some((bed, Driver::new(&ids, &keys), cache_pages, s.records));
                    }
                    let (bed, driver, cache_pages, record_count) = loaded.as_mut().expect("loaded above");
                    let (warmup, operations) = run_ops(w);
                    let mut stream = match traces.iter().find(|t| t.workload == w) {
                        Some(t) => OpSource::Replayed(t.reader()?),
                        None => {
                            OpSource::Generated(Stream::new(w, *record_count, warmup + operations, ctx.seed)?)
                        }
                    };
                    for _ in 0..warmup {
                        driver.apply(bed, stream.next_op()?)?;
                        bed.forget_map_pages(map)?;
                    }
                    let mut lat = LatencyRecorder::new();
                    let before = bed.snapshot();
                    let start = Instant::now();
                    for i in 0..operations {
                        let op = stream.next_op()?;
                        let t = Instant::now();
                        driver.apply(bed, op)?;
                        bed.forget_map_pages(map)?;
                        lat.record(t.elapsed());
                        if i % 1024 == 0 {
                            ctx.progress.count(i, Some(operations), "operations");
                        }
                    }
                    let wall = start.elapsed();
                    *record_count = stream.newest() + 1;
                    let cost = Cost::between(&before, &bed.snapshot(), wall);
                    let ops = operations as f64;
                    let mut row = RowBuilder::new()
                        .str("cluster", layout.name())
                        .str("workload", w.name())
                        .num("cache_fraction", fraction)
                        .str("map_cache", map)
                        .int("ops", operations)
                        .num("ops_per_s", ops / wall.as_secs_f64())
                        .num("pages_per_op", cost.cluster.page_reads as f64 / ops)
                        .int("page_reads", cost.io.page_reads)
                        .int("page_writes", cost.io.page_writes)
                        .num("cache_hit_ratio", cost.hit_ratio())
                        .num("p95_us", lat.quantile_us(0.95))
                        .int("records_fetched", cost.cluster.fetches)
                        .int("cache_pages", *cache_pages as u64);
                    row = row.num("modelled_ops_per_s", ops / (cost.modelled_ms(profile, ps) / 1e3));
                    for p in lsmlab_engine::storage::DeviceProfile::ALL {
                        row = row.num(
                            &format!("modelled_ops_per_s_{}", p.name().replace('-', "_")),
                            ops / (cost.modelled_ms(p, ps) / 1e3),
                        );
                    }
                    row =
                        ratio_fields(row, bed, ps).int("external_links", bed.cluster.space().external_links);
                    rows.push(row.build());
                }
            }
        }
        let mut notes = vec![
            super::MAP_CACHE_NOTE.to_string(),
            ratios_note(
                ps,
                &record_bytes_note(),
                &per_page,
                &format!(
                    "cache = cache_fraction x the layout's data pages (+ its position-map pages), swept over {:?}; \
                     the cache starts empty after the load; {} operations of the same workload warm it before {} \
                     measured ones (workload E: {} before {}: each of its operations scans up to 100 records)",
                    cfg.cache_fractions,
                    cfg.warmup_operations,
                    cfg.operations,
                    cfg.scan_operations / 2,
                    cfg.scan_operations
                ),
            ),
            "YCSB as CoreWorkload defines it: proportions of workloads/workload[a-f], scrambled zipfian (0.99, FNV) \
             over recordcount + 2 x insertproportion x operationcount keys with redraws beyond the newest key, latest \
             for D, scans of 1..100 records (uniform) for E, read-modify-write for F, 10 fields x 100 B, updates \
             write one field (the record is fetched, the field replaced, the record written back), inserts grow the \
             key space. One client thread. Workloads run in YCSB's documented order on one load per layout \
             and cached fraction: load, run A, B, C, F, D; reload, run E. Keys find record ids through an in-memory index (ordered for scans), \
             the same for both layouts and not counted; scans fetch their records one by one."
                .into(),
            counting_note(profile, ps),
            LAYOUT_NOTE.into(),
        ];
        notes.extend(traces.iter().map(|t| {
            format!(
                "{}: operations replayed from trace {} (written by `lsmlab gen {}`: {} warm-up + {} measured), not \
                 generated; the run's workloads are the traces'.",
                t.workload.name(),
                t.path.display(),
                t.workload.name(),
                t.warmup,
                t.operations
            )
        }));
        Ok(RunOutput {
            rows,
            notes,
            extra_config: Default::default(),
        })
    }

    fn memory_estimate(
        &self,
        config: &Self::Config,
        _data: &[crate::experiment::DataSpec],
    ) -> Option<crate::experiment::MemoryEstimate> {
        Some(config.setup.memory_estimate(BYTES_PER_RECORD))
    }
}

/// Where a run phase's operations come from: the workload's generated stream, or a replayed trace
/// (`lsmlab run --trace`, [`crate::trace::YcsbTrace`]) read line by line.
enum OpSource {
    Generated(Stream),
    Replayed(crate::trace::YcsbTraceReader),
}

impl OpSource {
    fn next_op(&mut self) -> anyhow::Result<lsmlab_workloads::ycsb::Op> {
        match self {
            OpSource::Generated(s) => Ok(s.next_op()),
            OpSource::Replayed(r) => r.next_op(),
        }
    }

    fn newest(&self) -> u64 {
        match self {
            OpSource::Generated(s) => s.newest(),
            OpSource::Replayed(r) => r.newest(),
        }
    }
}

/// Applies YCSB operations to a cluster through the key index.
pub(crate) struct Driver {
    ids: HashMap<u64, Rid>,
    ordered: BTreeMap<String, u64>,
}

impl Driver {
    pub fn new(ids: &[Rid], keys: &[u64]) -> Driver {
        Driver {
            ids: keys.iter().copied().zip(ids.iter().copied()).collect(),
            ordered: keys.iter().map(|&k| (key_name(k), k)).collect(),
        }
    }

    fn rid(&self, key: u64) -> anyhow::Result<Rid> {
        self.ids
            .get(&key)
            .copied()
            .ok_or_else(|| anyhow::anyhow!("YCSB key {key} was never inserted"))
    }

    fn read(bed: &mut Bed, rid: Rid) -> anyhow::Result<Vec<u8>> {
        bed.cluster
            .fetch(rid)?
            .found()
            .ok_or_else(|| anyhow::anyhow!("record {rid:?} not found"))
    }

    pub fn apply(&mut self, bed: &mut Bed, op: Op) -> anyhow::Result<()> {
        match op {
            Op::Read { key } => {
                Self::read(bed, self.rid(key)?)?;
            }
            Op::Update { key, field, value } | Op::ReadModifyWrite { key, field, value } => {
                let rid = self.rid(key)?;
                let mut r = Self::read(bed, rid)?;
                set_field(&mut r, field, &value);
                anyhow::ensure!(
                    bed.cluster.update(rid, &r)?.is_found(),
                    "update of {rid:?} failed"
                );
            }
            Op::Insert { key } => {
                let rid = bed.cluster.insert(&encode(key, &record_fields(key)))?;
                self.ids.insert(key, rid);
                self.ordered.insert(key_name(key), key);
            }
            Op::Scan { start, len } => {
                let keys: Vec<u64> = self
                    .ordered
                    .range(key_name(start)..)
                    .take(len)
                    .map(|(_, &k)| k)
                    .collect();
                for k in keys {
                    Self::read(bed, self.rid(k)?)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_encode_and_take_one_field_updates() {
        let mut r = encode(7, &record_fields(7));
        assert_eq!(r.len(), 1 + key_name(7).len() + 1000);
        set_field(&mut r, 9, &[b'z'; 100]);
        assert!(r.ends_with(&[b'z'; 100]));
    }
}
