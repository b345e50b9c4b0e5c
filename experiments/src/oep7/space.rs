//! `oep7-space`: delete/insert churn. Each round deletes a fraction of the live records at random
//! and inserts as many new ones (YCSB-sized records whose length varies), then records both
//! layouts' file size and pages in use (OEP 7 promises to reuse the space and slots of deleted
//! records, where OrientDB's position map grows by one entry per insert forever), and fetches
//! every record id ever deleted: a single-page id whose slot was reused must come back stale,
//! never as another record.

use lsmlab_engine::cluster::{Lookup, Rid};
use rand::seq::SliceRandom;
use rand::Rng;

use super::fetch::workloads_rng;
use super::{counting_note, ratio_fields, ratios_note, Bed, Setup, LAYOUT_NOTE, PAPER};
use crate::config::{check, Config};
use crate::experiment::{RowBuilder, RunContext, RunOutput, Scale, TypedExperiment};

pub(crate) struct Oep7Space;

lsmlab_harness::config! {
    /// `oep7-space`'s parameters.
    pub struct SpaceConfig {
        #[serde(flatten)]
        /// The settings the experiments of this paper share (flattened: its keys are top-level `--set` keys).
        pub setup: Setup,
        /// delete/insert rounds
        pub rounds: u64,
        /// fraction of the live records deleted, and as many inserted, per round
        pub churn: f64,
        /// smallest record (sizes uniform between min and max)
        pub min_record_bytes: usize,
        /// largest record
        pub max_record_bytes: usize,
    }
}

impl Config for SpaceConfig {
    fn validate(&self) -> anyhow::Result<()> {
        self.setup.validate()?;
        check("rounds", self.rounds, self.rounds >= 1, "at least 1")?;
        check(
            "churn",
            self.churn,
            self.churn > 0.0 && self.churn < 1.0,
            "a fraction in (0, 1)",
        )?;
        check(
            "max_record_bytes",
            self.max_record_bytes,
            self.max_record_bytes >= self.min_record_bytes && self.min_record_bytes >= 1,
            "at least min_record_bytes (and min_record_bytes at least 1)",
        )?;
        Ok(())
    }
}

/// Peak RSS per record for the memory check: an upper bound, rounded up from the slope of peak RSS
/// between the tiny defaults and ten times their records (re-measure with `/usr/bin/time -v lsmlab
/// run oep7-space --scale tiny`, then again with `--set records=20000`). The measured slope is in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
const BYTES_PER_RECORD: u64 = 2200;

impl TypedExperiment for Oep7Space {
    type Config = SpaceConfig;

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "oep7-space",
            paper: PAPER,
            about: "OEP 7 space reuse: file size and pages in use under delete/insert churn, stale-RID detections",
            figures: super::report::space_figures,
            report: super::report::space_report,
        }
    }

    fn defaults(&self, scale: Scale) -> SpaceConfig {
        SpaceConfig {
            setup: Setup::defaults(scale, [2_000, 40_000, 1_000_000]),
            rounds: match scale {
                Scale::Tiny => 4,
                _ => 10,
            },
            churn: 0.2,
            min_record_bytes: 500,
            max_record_bytes: 1500,
        }
    }

    fn run(&self, cfg: &SpaceConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let s = &cfg.setup;
        let ps = s.page_size;
        let mut rows = Vec::new();
        let mut per_page = Vec::new();
        ctx.progress
            .set_total(s.clusters.len() * (cfg.rounds as usize + 1));
        for &layout in &s.clusters {
            let mut bed = Bed::new(layout, ps)?;
            // The same record sizes and the same choice of victims (by index) for both layouts.
            let mut sizes = workloads_rng(ctx.seed, "oep7-space/sizes");
            let mut victims = workloads_rng(ctx.seed, "oep7-space/victims");
            let mut tag = 0u64;
            let mut make = |n: usize, rng: &mut rand_xoshiro::Xoshiro256PlusPlus| -> Vec<Vec<u8>> {
                (0..n)
                    .map(|_| {
                        tag += 1;
                        let len = rng.random_range(cfg.min_record_bytes..=cfg.max_record_bytes);
                        let mut r = vec![(tag % 251) as u8; len];
                        r[..8.min(len)].copy_from_slice(&tag.to_le_bytes()[..8.min(len)]);
                        r
                    })
                    .collect()
            };
            ctx.progress.begin(format!("{layout} load"));
            let mut live: Vec<Rid> = bed.cluster.insert_batch(&make(s.records as usize, &mut sizes))?;
            per_page.push((
                layout,
                bed.cluster.space().live_records as f64 / bed.cluster.space().data_pages as f64,
            ));
            let mut dead: Vec<Rid> = Vec::new();
            let mut inserted = s.records;
            let mut deleted = 0u64;
            rows.push(space_row(
                &mut bed,
                layout.name(),
                0,
                inserted,
                deleted,
                &dead,
                ps,
            )?);
            for round in 1..=cfg.rounds {
                ctx.progress.begin(format!("{layout} round {round}"));
                live.shuffle(&mut victims);
                let n = (live.len() as f64 * cfg.churn).round() as usize;
                for rid in live.drain(..n) {
                    anyhow::ensure!(bed.cluster.delete(rid)?.is_found(), "delete of {rid:?} failed");
                    dead.push(rid);
                }
                deleted += n as u64;
                for r in make(n, &mut sizes) {
                    live.push(bed.cluster.insert(&r)?);
                }
                inserted += n as u64;
                live.sort_unstable();
                rows.push(space_row(
                    &mut bed,
                    layout.name(),
                    round,
                    inserted,
                    deleted,
                    &dead,
                    ps,
                )?);
            }
        }
        let notes = vec![
            ratios_note(
                ps,
                &format!("{}..{} bytes (uniform)", cfg.min_record_bytes, cfg.max_record_bytes),
                &per_page,
                "no cache limit (space is what is measured)",
            ),
            format!(
                "{} rounds; each deletes {:.0}% of the live records (chosen at random) and inserts as many new ones, \
                 which go to the leftmost page with room (the same free-space map for both layouts). After each round \
                 every id deleted so far is fetched: stale = answered stale (single-page: the slot was reused with a \
                 newer delversion), deleted = answered deleted, wrong_records = answered with a record (must be 0). \
                 Paginated never reuses a position: its map grows by one 13-byte entry per insert ever made.",
                cfg.rounds,
                cfg.churn * 100.0
            ),
            counting_note(s.profile()?, ps),
            LAYOUT_NOTE.into(),
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

fn space_row(
    bed: &mut Bed,
    cluster: &str,
    round: u64,
    inserted: u64,
    deleted: u64,
    dead: &[Rid],
    ps: usize,
) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    let (mut stale, mut gone, mut wrong) = (0u64, 0u64, 0u64);
    for &rid in dead {
        match bed.cluster.fetch(rid)? {
            Lookup::Stale => stale += 1,
            Lookup::Deleted => gone += 1,
            Lookup::Found(_) => wrong += 1,
            Lookup::Missing => {}
        }
    }
    let sp = bed.cluster.space();
    let row = RowBuilder::new()
        .str("cluster", cluster)
        .int("round", round)
        .int("inserted", inserted)
        .int("deleted", deleted)
        .int("live_records", sp.live_records)
        .int("file_pages", sp.file_pages)
        .num("file_mib", sp.file_pages as f64 * ps as f64 / (1024.0 * 1024.0))
        .int("data_pages_in_use", sp.data_pages_in_use)
        .num(
            "bytes_per_live_record",
            sp.file_pages as f64 * ps as f64 / sp.live_records.max(1) as f64,
        )
        .int("stale_detected", stale)
        .int("deleted_detected", gone)
        .int("wrong_records", wrong)
        .int("external_links", sp.external_links);
    Ok(ratio_fields(row, bed, ps).build())
}
