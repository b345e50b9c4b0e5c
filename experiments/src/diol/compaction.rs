//! `diol-compaction`: the disk compaction DIOL left as future work, for every layout. Once
//! `delay_files_trigger` delay (unsequence) files exist they are merged into the normal
//! (sequence) files their points fall into; the pages and points rewritten are counted, and the
//! same runs without compaction sit beside them so the read I/O it saves is measured too.

use lsmlab_engine::series::CompactionParams;

use super::layouts::{delay_memory_points, workloads};
use super::report;
use super::{base_row, method_notes, run_cell, Setup, Streams, PAPER};
use crate::config::{check_items, Config};
use crate::experiment::{RunContext, RunOutput, Scale, TypedExperiment};

pub(crate) struct DiolCompaction;

lsmlab_harness::config! {
    /// `diol-compaction`'s parameters.
    pub struct CompactionConfig {
        /// workloads: A, B, C, recent (B: the paper's reads about N/2 back)
        pub workloads: Vec<String>,
        /// compaction settings run beside each other: off, on (once per trigger)
        pub compaction: Vec<String>,
        /// delay (unsequence) file counts that trigger merging them into the normal (sequence) files, one run
        /// each
        pub delay_files_triggers: Vec<usize>,
        #[serde(flatten)]
        /// The settings the experiments of this paper share (flattened: its keys are top-level `--set` keys).
        pub setup: Setup,
    }
}

impl Config for CompactionConfig {
    fn validate(&self) -> anyhow::Result<()> {
        check_items(
            "workloads",
            &self.workloads,
            |w| lsmlab_workloads::ts::TsWorkload::parse(w).is_some(),
            "A, B, C or recent",
        )?;
        check_items(
            "compaction",
            &self.compaction,
            |c| c == "on" || c == "off",
            "on or off",
        )?;
        check_items(
            "delay_files_triggers",
            &self.delay_files_triggers,
            |t| *t >= 1,
            "at least 1",
        )?;
        self.setup.validate()
    }
}

/// Peak RSS per point for the memory check: an upper bound, rounded up from the slope of peak RSS
/// between 1,000,000 and 3,000,000 points (90 B; re-measure with `/usr/bin/time -v lsmlab run
/// diol-compaction --scale tiny --set points=1000000`, then `--set points=3000000`). A run holds one
/// arrival stream and one workload's operations at a time beside one store's pages; below a
/// million points fixed costs steepen the slope. The measurements are in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
const BYTES_PER_POINT: u64 = 100;

impl TypedExperiment for DiolCompaction {
    type Config = CompactionConfig;

    /// One file of delays (the `file` delay model), `--format delays` implied.
    fn data_kind(&self) -> crate::experiment::DataKind {
        crate::experiment::DataKind::Delays
    }

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "diol-compaction",
            paper: PAPER,
            about: "DIOL's future work: disk compaction of delay/unsequence files into normal/sequence files for every layout, pages and points rewritten",
            figures: |result, out_dir| crate::plot::render_specs(report::COMPACTION_FIGURES, result, out_dir),
            report: report::compaction_report,
        }
    }

    fn defaults(&self, scale: Scale) -> CompactionConfig {
        CompactionConfig {
            workloads: vec!["B".into()],
            compaction: vec!["off".into(), "on".into()],
            delay_files_triggers: vec![1, 4],
            setup: Setup::defaults(scale),
        }
    }

    /// One cell per delay model (the run's outer loop): the findings sum each (layout, model,
    /// trigger) over the out-of-order ratios, so the ratios stay in one cell. With `--data` the
    /// file model joins every run's models ([`super::Setup::delay_models`]): one cell then.
    fn cells(&self, cfg: &CompactionConfig, data: &[crate::experiment::DataSpec]) -> Vec<crate::cells::Cell> {
        if !data.is_empty() {
            return vec![crate::cells::Cell::whole()];
        }
        crate::cells::Cell::grid(&[("delay_models", cfg.setup.delay_models.len())])
    }

    fn run(&self, cfg: &CompactionConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let setup = &cfg.setup;
        let mut out = RunOutput {
            notes: setup.ratio_notes(),
            extra_config: setup.derived(),
            ..RunOutput::default()
        };
        let models = setup.delay_models(ctx, &mut out.notes)?;
        let wls = workloads(&cfg.workloads);
        let variants = setup.variants();
        // (mode, trigger): off once, on once per trigger.
        let mut modes: Vec<(String, usize)> = Vec::new();
        for mode in &cfg.compaction {
            if mode == "on" {
                modes.extend(cfg.delay_files_triggers.iter().map(|&t| ("on".to_string(), t)));
            } else {
                modes.push((mode.clone(), 0));
            }
        }
        ctx.progress
            .set_total(setup.o3_ratios.len() * models.len() * wls.len() * variants.len() * modes.len());
        let mut streams = Streams::new();
        // The delay model outermost: the run's cells are its models.
        for (name, model) in &models {
            for &o3 in &setup.o3_ratios {
                let (stream, o3_points) = streams.take(setup, o3, name, model, ctx.seed)?;
                for &w in &wls {
                    let ops = setup.ops(&stream, w, ctx.seed)?;
                    for v in &variants {
                        for (mode, trigger) in &modes {
                            ctx.progress.begin(format!(
                                "{} o3={o3} {name} {} compaction {mode} {trigger}",
                                w.name(),
                                v.label
                            ));
                            let mut sc = v.config.clone();
                            if mode == "on" {
                                sc.compaction = Some(CompactionParams {
                                    delay_files_trigger: *trigger,
                                });
                            }
                            let m = run_cell(sc, setup.page_size, &stream, &ops)?;
                            let flushed = m.stats.flush_pages_written.max(1) as f64;
                            out.rows.push(
                                base_row(w.name(), o3, name, &v.label, setup.points, &m, o3_points)
                                    .str("compaction", mode.as_str())
                                    .int("delay_files_trigger", *trigger as u64)
                                    .int("disk_compactions", m.stats.disk_compactions)
                                    .int("compaction_pages_read", m.stats.compaction_pages_read)
                                    .int("compaction_pages_written", m.stats.compaction_pages_written)
                                    .int("compaction_points_rewritten", m.stats.compaction_points_rewritten)
                                    .num(
                                        "write_amplification",
                                        (m.stats.flush_pages_written + m.stats.compaction_pages_written)
                                            as f64
                                            / flushed,
                                    )
                                    .build(),
                            );
                        }
                    }
                }
            }
        }
        out.notes.push(format!(
            "Compaction: once {:?} delay (unsequence) files exist (one run per trigger; delay_files_trigger = 0 marks \
             the runs without compaction), every delay file is read and its points merged into the \
             normal (sequence) file whose time range holds them (a point in a gap goes to the file before it, one \
             before every file to the first); only normal files that receive points are rewritten; newest version \
             wins. write_amplification = (pages written by flushes + by compactions) / pages written by flushes. The \
             trigger counts files, so a layout with small delay memtables (diol: {} points of delay memory in all) \
             reaches it more often than one with large ones.",
            cfg.delay_files_triggers,
            delay_memory_points(setup)
        ));
        out.notes.extend(method_notes());
        out.notes.extend(compaction_findings(&out.rows));
        Ok(out)
    }

    fn memory_estimate(
        &self,
        config: &Self::Config,
        _data: &[crate::experiment::DataSpec],
    ) -> Option<crate::experiment::MemoryEstimate> {
        Some(config.setup.memory_estimate(BYTES_PER_POINT))
    }
}

/// Per layout and delay model: mean write amplification with compaction and the change in
/// points read from disk it buys.
fn compaction_findings(rows: &[crate::experiment::Row]) -> Vec<String> {
    use serde_json::Value;
    let t = |r: &crate::experiment::Row, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let n = |r: &crate::experiment::Row, k: &str| r.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let mut notes = Vec::new();
    let mut keys: Vec<(String, String, f64)> = Vec::new();
    for r in rows {
        let k = (t(r, "delay_model"), t(r, "layout"), n(r, "delay_files_trigger"));
        if k.2 > 0.0 && !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (model, layout, trigger) in keys {
        let on: Vec<_> = rows
            .iter()
            .filter(|r| {
                t(r, "delay_model") == model
                    && t(r, "layout") == layout
                    && n(r, "delay_files_trigger") == trigger
            })
            .collect();
        let off: Vec<_> = rows
            .iter()
            .filter(|r| {
                t(r, "delay_model") == model && t(r, "layout") == layout && t(r, "compaction") == "off"
            })
            .collect();
        if on.is_empty() {
            continue;
        }
        let wa = on.iter().map(|r| n(r, "write_amplification")).sum::<f64>() / on.len() as f64;
        let pts_on: f64 = on.iter().map(|r| n(r, "disk_read_points")).sum();
        let pts_off: f64 = off.iter().map(|r| n(r, "disk_read_points")).sum();
        let pages_on: f64 = on.iter().map(|r| n(r, "lookup_page_reads")).sum();
        let pages_off: f64 = off.iter().map(|r| n(r, "lookup_page_reads")).sum();
        let change = |a: f64, b: f64| {
            if b > 0.0 {
                format!("{:+.1}%", 100.0 * (a / b - 1.0))
            } else {
                "n/a".into()
            }
        };
        let compactions: f64 = on.iter().map(|r| n(r, "disk_compactions")).sum();
        notes.push(format!(
            "{layout}, {model}, trigger {trigger}: {compactions} compactions, mean write amplification {wa:.2}; lookup \
             page reads {} and points read from disk {} against no compaction (summed over the O3 ratios).",
            change(pages_on, pages_off),
            change(pts_on, pts_off)
        ));
    }
    notes
}
