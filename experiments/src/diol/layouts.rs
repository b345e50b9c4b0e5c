//! `diol`: the paper's evaluation (workloads A, B, C at O3 ratios 10/20/30%) and the recent-data
//! read workload, for every delay model and memory level, one row per run.

use lsmlab_workloads::ts::TsWorkload;

use super::report;
use super::{base_row, method_notes, run_cell, Setup, Streams, PAPER};
use crate::config::{check_items, Config};
use crate::experiment::{RunContext, RunOutput, Scale, TypedExperiment};

pub(crate) struct DiolLayouts;

lsmlab_harness::config! {
    /// `diol`'s parameters.
    pub struct LayoutsConfig {
        /// workloads: A (100% insert), B (98/2), C (95/5) with reads aimed about N/2 back, recent (98/2,
        /// reads of recent data)
        pub workloads: Vec<String>,
        #[serde(flatten)]
        /// The settings the experiments of this paper share (flattened: its keys are top-level `--set` keys).
        pub setup: Setup,
    }
}

impl Config for LayoutsConfig {
    fn validate(&self) -> anyhow::Result<()> {
        check_items(
            "workloads",
            &self.workloads,
            |w| TsWorkload::parse(w).is_some(),
            "A, B, C or recent",
        )?;
        self.setup.validate()
    }
}

/// Parses the workload names (validated).
pub fn workloads(names: &[String]) -> Vec<TsWorkload> {
    names.iter().filter_map(|w| TsWorkload::parse(w)).collect()
}

/// Peak RSS per point for the memory check: an upper bound, rounded up from the slope of peak RSS
/// between 1,000,000 and 3,000,000 points (92 B; re-measure with `/usr/bin/time -v lsmlab run
/// diol --scale tiny --set points=1000000`, then `--set points=3000000`). A run holds one
/// arrival stream and one workload's operations at a time beside one store's pages; below a
/// million points fixed costs steepen the slope. The measurements are in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
const BYTES_PER_POINT: u64 = 100;

impl TypedExperiment for DiolLayouts {
    type Config = LayoutsConfig;

    /// One file of delays (the `file` delay model), `--format delays` implied.
    fn data_kind(&self) -> crate::experiment::DataKind {
        crate::experiment::DataKind::Delays
    }

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "diol",
            paper: PAPER,
            about: "DIOL vs the authors' IoTDB-like baseline and real IoTDB's rule: insert time and counted disk reads per workload, O3 ratio and delay model",
            figures: |result, out_dir| crate::plot::render_specs(report::LAYOUT_FIGURES, result, out_dir),
            report: report::layouts_report,
        }
    }

    fn defaults(&self, scale: Scale) -> LayoutsConfig {
        LayoutsConfig {
            workloads: ["A", "B", "C", "recent"].iter().map(|s| s.to_string()).collect(),
            setup: Setup::defaults(scale),
        }
    }

    /// One cell per out-of-order ratio and delay model (the run's outer loops): each draws its own
    /// arrival stream and runs every workload and layout on it; the findings compare layouts within
    /// one (ratio, model), so they stay whole.
    fn cells(&self, cfg: &LayoutsConfig, data: &[crate::experiment::DataSpec]) -> Vec<crate::cells::Cell> {
        crate::cells::Cell::grid(&cfg.setup.cell_keys(data, false))
    }

    fn run(&self, cfg: &LayoutsConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let (replayed, replay) = match cfg.setup.replay(ctx)? {
            Some(r) => (r.setup, Some((r.models, r.streams, r.note))),
            None => (cfg.setup.clone(), None),
        };
        let setup = &replayed;
        let mut out = RunOutput {
            notes: setup.ratio_notes(),
            extra_config: setup.derived(),
            ..RunOutput::default()
        };
        let (models, mut streams) = match replay {
            Some((models, streams, note)) => {
                out.notes.push(note);
                (models, streams)
            }
            None => (setup.delay_models(ctx, &mut out.notes)?, Streams::new()),
        };
        let wls = workloads(&cfg.workloads);
        let variants = setup.variants();
        ctx.progress
            .set_total(setup.o3_ratios.len() * models.len() * wls.len() * variants.len());
        for &o3 in &setup.o3_ratios {
            for (name, model) in &models {
                let (stream, o3_points) = streams.take(setup, o3, name, model, ctx.seed)?;
                out.notes.push(format!(
                    "o3 {o3}, {name}: {} of {} points arrive after a later point ({:.1}%); DIOL's delay memory holds {:.1}% \
                     of them.",
                    o3_points,
                    setup.points,
                    100.0 * o3_points as f64 / setup.points as f64,
                    100.0 * delay_memory_points(setup) as f64 / o3_points.max(1) as f64
                ));
                for &w in &wls {
                    let ops = setup.ops(&stream, w, ctx.seed)?;
                    for v in &variants {
                        ctx.progress
                            .begin(format!("{} o3={o3} {name} {}", w.name(), v.label));
                        let m = run_cell(v.config.clone(), setup.page_size, &stream, &ops)?;
                        out.rows.push(
                            base_row(w.name(), o3, name, &v.label, setup.points, &m, o3_points).build(),
                        );
                    }
                }
            }
        }
        out.notes.extend(method_notes());
        out.notes.extend(report::layout_findings(&out.rows));
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

/// Points DIOL's delay memtables hold when full.
pub fn delay_memory_points(setup: &Setup) -> u64 {
    let c = setup.series_config(lsmlab_engine::series::Layout::Diol);
    let (_, d) = super::capacities(&c);
    d * (1 + c.diol.delay_m1 + c.diol.delay_m2) as u64
}
