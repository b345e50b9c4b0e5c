//! `rum-update`: the update cost of every strategy on every dataset (the LSM RUM-tree paper's
//! Figure 5 breakdown into update / flush / merge time, Table 1's flush and merge counts, Table 2's
//! maximum Update Memo size).

use super::{check_strategies, modelled_note, ms, IndexConfig, PAPER, PHASE_NOTE};
use crate::config::{self, Config, KeyHelp, StorageConfig};
use crate::experiment::{
    Cell, DataSpec, MemoryEstimate, RowBuilder, RunContext, RunOutput, Scale, TypedExperiment,
};
use crate::rum::report as rr;
use anyhow::Context;
use lsmlab_engine::spatial::Strategy;

pub(crate) struct RumUpdate;

lsmlab_harness::config! {
    /// `rum-update`'s parameters.
    pub struct UpdateConfig {
        #[doc = super::strategies_doc!()]
        #[serde(with = "config::text_list")]
        pub strategies: Vec<Strategy>,
        #[serde(flatten)]
        /// The data and index settings every RUM experiment shares (flattened: its keys are top-level
        /// `--set` keys).
        pub index: IndexConfig,
        #[serde(flatten)]
        /// The storage testbed settings (flattened: its keys are top-level `--set` keys).
        pub storage: StorageConfig,
    }
}

impl Config for UpdateConfig {
    fn adjust_help(help: &mut Vec<KeyHelp>) {
        super::strategies_after_datasets(help)
    }

    fn validate(&self) -> anyhow::Result<()> {
        check_strategies(&self.strategies)?;
        self.index.validate()?;
        self.storage.validate()
    }
}

/// Peak RSS per record, measured (see `memory_estimate`): 40 B per held record, 90 B per record
/// for the index's pages on the in-memory device and on the file device below its cap (Eager over
/// a streamed BerlinMOD, the costliest strategy: 689,304 KiB at 8 million records and 1,787,764
/// KiB at 24 million, 80 and 76 B per record beyond the run base).
const PER_RECORD: super::RecordBytes = super::RecordBytes {
    held: 40,
    index: 90,
    query: 0,
};

impl TypedExperiment for RumUpdate {
    type Config = UpdateConfig;

    /// Location records: each --data path one dataset, replacing the generated ones.
    fn data_kind(&self) -> crate::experiment::DataKind {
        crate::experiment::DataKind::Locations
    }

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "rum-update",
            paper: PAPER,
            about: "LSM RUM-tree Fig. 5 / Tables 1-2: update, flush and merge cost, flush/merge counts, max UM size per strategy",
            figures: rr::update_figures,
            report: rr::update_report,
        }
    }

    /// Peak RSS ([`IndexConfig::streamed_memory_estimate`], shared with `rum-query`, `rum-mixed`
    /// and `rum-tuning`), per dataset (the largest counts, as datasets run one after another): the
    /// records it holds, `PER_RECORD.held` each with the operation stream computed as they are
    /// ingested (none for a streamed BerlinMOD dataset, [`super::STREAM_MIN_RECORDS`]), plus the
    /// index's pages, `PER_RECORD.index` per record on the in-memory device, which keeps every
    /// page. On `device = file` the pages live in the file, so the index's part is at most what
    /// stays in memory: the buffer cache, the memory component and a merge's survivors (32 B each,
    /// at most about `max_mergeable_pages` of pages). The per-record figures are upper bounds
    /// rounded up from measured slopes of peak RSS (`/usr/bin/time -v lsmlab run rum-update --scale
    /// small --set datasets=berlinmod` at two `records`); the measurements, and the paper-scale
    /// peak beside the estimate, are in
    /// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
    fn memory_estimate(&self, config: &UpdateConfig, data: &[DataSpec]) -> Option<MemoryEstimate> {
        config
            .index
            .streamed_memory_estimate(&config.storage, PER_RECORD, data)
    }

    fn defaults(&self, scale: Scale) -> UpdateConfig {
        let index = IndexConfig::defaults(scale);
        UpdateConfig {
            strategies: super::reported_strategies(),
            storage: index.storage_defaults_at(scale),
            index,
        }
    }

    /// Dataset x strategy: every strategy ingests the dataset into its own fresh index.
    fn cells(&self, cfg: &UpdateConfig, data: &[DataSpec]) -> Vec<Cell> {
        let mut keys = cfg.index.cell_keys(data);
        keys.push(("strategies", cfg.strategies.len()));
        Cell::grid(&keys)
    }

    fn run(&self, cfg: &UpdateConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let p = &cfg.index;
        let strategies = &cfg.strategies;
        let (datasets, mut notes) = p.streamed_datasets_and_notes(ctx, &cfg.storage, strategies)?;
        ctx.progress.set_total(datasets.len() * strategies.len());
        let mut rows = Vec::new();
        for run_data in &datasets {
            let data = run_data.header();
            let objects = run_data.objects() as u64;
            for &strategy in strategies {
                ctx.progress.begin(format!("{} {strategy}", data.name));
                let mut bed = p.testbed(&cfg.storage, strategy, data)?;
                let cost = run_data
                    .ingest(&mut bed, ctx)
                    .with_context(|| format!("{} under {strategy}", data.name))?;
                let st = bed.index.stats();
                let modelled = ms(cost.total) + bed.storage.modelled_io_ms(cost.io);
                let row = p
                    .objects_fields(
                        RowBuilder::new().str("dataset", &data.name),
                        objects,
                        &cfg.storage,
                    )
                    .str("strategy", strategy.to_string())
                    .int("records", cost.ops)
                    .num("update_ms", ms(cost.update()))
                    .num("flush_ms", ms(cost.flush))
                    .num("merge_ms", ms(cost.merge))
                    .num("total_ms", ms(cost.total))
                    .int("flushes", st.rtree.flushes)
                    .int("merges", st.rtree.merges)
                    .int("um_max_entries", st.um_max_entries)
                    .int("page_reads", cost.io.page_reads)
                    .int("page_writes", cost.io.page_writes)
                    .int("final_components", bed.index.disk_components() as u64)
                    .int("final_disk_entries", bed.index.disk_entries())
                    .num("modelled_ms", modelled);
                rows.push(
                    cost.phases
                        .fields(row, &cost.times(), &bed.storage, false)
                        .build(),
                );
            }
        }
        notes.push(format!(
            "update_ms = total_ms - flush_ms - merge_ms; flushes and merges run synchronously inside the \
             stream. flush_ms and merge_ms include the key index's (Validation's primary key index, or \
             Eager's primary index when eager_primary_lookup=true) flushes and merges; flushes/merges \
             count the LSM R-tree's own. Eager takes the old location from the stream \
             (eager_primary_lookup={}), as the paper did.",
            p.eager_primary_lookup
        ));
        notes.push(modelled_note(&cfg.storage, "modelled_ms"));
        notes.push(PHASE_NOTE.into());
        notes.push(
            "Entries are 32 bytes (x, y, oid, ts) for every strategy, 63 per 2 KiB leaf; the authors' \
             AsterixDB entries were ~41 bytes (~44 per leaf)."
                .into(),
        );
        Ok(RunOutput {
            rows,
            notes,
            extra_config: Default::default(),
        })
    }
}
