//! `oep7-fetch`: every record fetched one by one, in random and in record-id order, with a warm and
//! a cold cache (the OEP 7 POC's "fetch all records one by one": warm 2,513 ms -> 1,845 ms, cold
//! 79,950 ms -> 26,327 ms), plus batch fetches of random ids (each batch sorted by page).

use std::time::Instant;

use lsmlab_engine::cluster::Rid;
use rand::seq::SliceRandom;

use super::ycsb::{load_ycsb_records, record_bytes_note};
use super::{counting_note, ratio_fields, ratios_note, Bed, Cost, Setup, LAYOUT_NOTE, PAPER};
use crate::config::{check, check_items, Config};
use crate::experiment::{RowBuilder, RunContext, RunOutput, Scale, TypedExperiment};

pub(crate) struct Oep7Fetch;

lsmlab_harness::config! {
    /// `oep7-fetch`'s parameters.
    pub struct FetchConfig {
        #[serde(flatten)]
        /// The settings the experiments of this paper share (flattened: its keys are top-level `--set` keys).
        pub setup: Setup,
        /// cache capacity of the cold runs as fractions of the data pages (1 = everything fits; the cache
        /// starts empty)
        pub cold_cache_fractions: Vec<f64>,
        /// record ids per batch fetch (random ids, sorted by page inside the batch)
        pub batch_size: usize,
        /// fraction of records grown by growth_bytes before measuring, so some no longer fit their page (0 =
        /// a fresh load)
        pub grown_fraction: f64,
        /// bytes added to each grown record
        pub growth_bytes: usize,
        /// position-map pages in the cold one-by-one passes: cached (kept, as OrientDB's read cache
        /// does), uncached (evicted after every fetch: a counterfactual)
        pub map_cache: Vec<String>,
    }
}

impl Config for FetchConfig {
    fn validate(&self) -> anyhow::Result<()> {
        self.setup.validate()?;
        check_items(
            "cold_cache_fractions",
            &self.cold_cache_fractions,
            |f| *f > 0.0 && *f <= 1.0,
            "fractions in (0, 1]",
        )?;
        check("batch_size", self.batch_size, self.batch_size >= 1, "at least 1")?;
        super::check_map_cache(&self.map_cache)?;
        check(
            "grown_fraction",
            self.grown_fraction,
            (0.0..=1.0).contains(&self.grown_fraction),
            "a fraction in [0, 1]",
        )?;
        Ok(())
    }
}

/// One measured pass.
struct Pass<'a> {
    cache: &'a str,
    fraction: f64,
    order: &'a str,
    mode: &'a str,
    map: &'a str,
}

/// Peak RSS per record for the memory check: an upper bound, rounded up from the slope of peak RSS
/// between the tiny defaults and ten times their records (re-measure with `/usr/bin/time -v lsmlab
/// run oep7-fetch --scale tiny`, then again with `--set records=30000`). The measured slope is in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
const BYTES_PER_RECORD: u64 = 2400;

impl TypedExperiment for Oep7Fetch {
    type Config = FetchConfig;

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "oep7-fetch",
            paper: PAPER,
            about: "OEP 7 POC: fetch every record one by one (random / RID order, warm / cold cache) and in sorted batches; pages per fetch",
            figures: super::report::fetch_figures,
            report: super::report::fetch_report,
        }
    }

    fn defaults(&self, scale: Scale) -> FetchConfig {
        FetchConfig {
            setup: Setup::defaults(scale, [3_000, 50_000, 1_000_000]),
            cold_cache_fractions: vec![1.0, 0.2],
            batch_size: 1000,
            grown_fraction: 0.05,
            growth_bytes: 1024,
            map_cache: super::MAP_CACHE_VALUES.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// One cell per cluster layout: each loads, grows and fetches its own records.
    fn cells(&self, cfg: &FetchConfig, _data: &[crate::experiment::DataSpec]) -> Vec<crate::cells::Cell> {
        crate::cells::Cell::grid(&[("clusters", cfg.setup.clusters.len())])
    }

    fn run(&self, cfg: &FetchConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let s = &cfg.setup;
        let profile = s.profile()?;
        let ps = s.page_size;
        let mut rows = Vec::new();
        let mut per_page = Vec::new();
        let passes_per_layout =
            2 + cfg.cold_cache_fractions.len() * 2 * cfg.map_cache.len() + 1 + cfg.cold_cache_fractions.len();
        ctx.progress.set_total(s.clusters.len() * passes_per_layout);
        for &layout in &s.clusters {
            let mut bed = Bed::new(layout, ps)?;
            let (ids, _) = load_ycsb_records(&mut bed, s.records, ctx.seed)?;
            grow(&mut bed, &ids, cfg, ctx.seed)?;
            per_page.push((
                layout,
                bed.cluster.space().live_records as f64 / bed.cluster.space().data_pages as f64,
            ));
            let mut random = ids.clone();
            random.shuffle(&mut workloads_rng(ctx.seed, "oep7-fetch/order"));
            let mut passes: Vec<(Pass, usize)> = Vec::new();
            for order in ["random", "rid"] {
                passes.push((
                    Pass {
                        cache: "warm",
                        fraction: 1.0,
                        order,
                        mode: "one-by-one",
                        map: super::MAP_CACHED,
                    },
                    0,
                ));
            }
            for map in &cfg.map_cache {
                for &f in &cfg.cold_cache_fractions {
                    for order in ["random", "rid"] {
                        passes.push((
                            Pass {
                                cache: "cold",
                                fraction: f,
                                order,
                                mode: "one-by-one",
                                map,
                            },
                            0,
                        ));
                    }
                }
            }
            passes.push((
                Pass {
                    cache: "warm",
                    fraction: 1.0,
                    order: "random",
                    mode: "batch",
                    map: super::MAP_CACHED,
                },
                0,
            ));
            for &f in &cfg.cold_cache_fractions {
                passes.push((
                    Pass {
                        cache: "cold",
                        fraction: f,
                        order: "random",
                        mode: "batch",
                        map: super::MAP_CACHED,
                    },
                    0,
                ));
            }
            for (pass, _) in passes {
                ctx.progress.begin(format!(
                    "{layout} {} {} {} {} map cache {}",
                    pass.cache, pass.fraction, pass.order, pass.mode, pass.map
                ));
                let pages = bed.cache_pages_with(pass.fraction, pass.map);
                bed.set_cache(pages)?;
                if pass.cache == "warm" {
                    bed.warm()?;
                }
                let list = if pass.order == "random" { &random } else { &ids };
                let (cost, max_pages, one_page) = if pass.mode == "batch" {
                    (fetch_batches(&mut bed, list, cfg.batch_size)?, None, None)
                } else {
                    let (c, m, o) = fetch_each(&mut bed, list, pass.map)?;
                    (c, Some(m), Some(o))
                };
                let n = list.len() as f64;
                let mut row = RowBuilder::new()
                    .str("cluster", layout.name())
                    .str("cache", pass.cache)
                    .num("cache_fraction", pass.fraction)
                    .str("order", pass.order)
                    .str("mode", pass.mode)
                    .str("map_cache", pass.map)
                    .int("records", list.len() as u64)
                    .num("ms", cost.wall_ms())
                    .num("pages_per_fetch", cost.cluster.page_reads as f64 / n)
                    .int("device_reads", cost.io.page_reads)
                    .num("cache_hit_ratio", cost.hit_ratio())
                    .int("cache_pages", pages as u64);
                if let (Some(m), Some(o)) = (max_pages, one_page) {
                    row = row.int("max_pages_per_fetch", m).num("one_page_share", o);
                }
                row = cost.modelled_fields(row, "modelled_ms", profile, ps);
                row = ratio_fields(row, &bed, ps).int("external_links", bed.cluster.space().external_links);
                rows.push(row.build());
            }
        }
        let notes = vec![
            super::MAP_CACHE_NOTE.to_string(),
            ratios_note(
                ps,
                &record_bytes_note(),
                &per_page,
                &format!(
                    "warm = every page of the cluster resident; cold = the cache emptied before the pass, sized to \
                     cold_cache_fractions x the layout's data pages ({:?}) plus its map pages",
                    cfg.cold_cache_fractions
                ),
            ),
            format!(
                "Before measuring, {:.0}% of the records grew by {} bytes (grown_fraction, growth_bytes): in single-page \
                 those that no longer fit their page moved behind an external link (external_links), in paginated \
                 they were split into a head chunk elsewhere and a tail in the old page. RID order = the order the \
                 load issued the ids (ascending page). Batch rows fetch the random order in batches of {} ids, each \
                 batch sorted by page so every page is read once per batch.",
                cfg.grown_fraction * 100.0,
                cfg.growth_bytes,
                cfg.batch_size
            ),
            counting_note(profile, ps),
            LAYOUT_NOTE.into(),
            format!(
                "The physical minimum is one page per fetch (a record that fits a page cannot be read with less). \
                 The POC fetched all records one by one: warm {} ms -> {} ms (1.4x), cold {} ms -> {} ms (3x); \
                 its record count, cache size and device are not stated.",
                super::POC_WARM_MS.0, super::POC_WARM_MS.1, super::POC_COLD_MS.0, super::POC_COLD_MS.1
            ),
        ];
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

pub(crate) fn workloads_rng(seed: u64, name: &str) -> rand_xoshiro::Xoshiro256PlusPlus {
    lsmlab_workloads::seeded_rng(seed, name)
}

/// Grows `grown_fraction` of the records by `growth_bytes`.
#[allow(clippy::expect_used)] // the ids are of records loaded just before
fn grow(bed: &mut Bed, ids: &[Rid], cfg: &FetchConfig, seed: u64) -> anyhow::Result<()> {
    if cfg.grown_fraction == 0.0 {
        return Ok(());
    }
    let mut pick = ids.to_vec();
    pick.shuffle(&mut workloads_rng(seed, "oep7-fetch/grow"));
    pick.truncate((ids.len() as f64 * cfg.grown_fraction).round() as usize);
    for rid in pick {
        let mut r = bed.cluster.fetch(rid)?.found().expect("a loaded record");
        r.extend(std::iter::repeat_n(b'+', cfg.growth_bytes));
        bed.cluster.update(rid, &r)?;
    }
    bed.cluster.cache().flush_dirty()?;
    Ok(())
}

/// Fetches each id in turn: the cost, the most pages one fetch read, the share of 1-page fetches.
fn fetch_each(bed: &mut Bed, ids: &[Rid], map: &str) -> anyhow::Result<(Cost, u64, f64)> {
    let before = bed.snapshot();
    let mut max = 0;
    let mut one = 0usize;
    let start = Instant::now();
    for &rid in ids {
        let r0 = bed.cluster.stats().page_reads;
        let got = bed.cluster.fetch(rid)?;
        anyhow::ensure!(got.is_found(), "record {rid:?} not found");
        let n = bed.cluster.stats().page_reads - r0;
        bed.forget_map_pages(map)?;
        max = max.max(n);
        one += usize::from(n == 1);
    }
    let wall = start.elapsed();
    Ok((
        Cost::between(&before, &bed.snapshot(), wall),
        max,
        one as f64 / ids.len() as f64,
    ))
}

fn fetch_batches(bed: &mut Bed, ids: &[Rid], batch: usize) -> anyhow::Result<Cost> {
    let before = bed.snapshot();
    let start = Instant::now();
    for chunk in ids.chunks(batch) {
        let got = bed.cluster.fetch_batch(chunk)?;
        anyhow::ensure!(got.iter().all(|g| g.is_found()), "a batch missed records");
    }
    let wall = start.elapsed();
    Ok(Cost::between(&before, &bed.snapshot(), wall))
}
