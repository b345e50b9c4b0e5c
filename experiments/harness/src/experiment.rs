//! The plug-in contract between the runner and the experiments.
//!
//! An experiment implements [`TypedExperiment`]: its parameters are one [`Config`] struct with
//! defaults per [`Scale`], it runs against a [`RunContext`] and returns tidy rows ([`RunOutput`]).
//! It also knows how to draw its figures and write its report section from a [`ResultFile`], so
//! that plotting and reporting only ever meet the run through the result file (the
//! ann-benchmarks split, `docs/design.md#what-flows-where`). The runner, the registry and the
//! report see every experiment as a [`dyn Experiment`](Experiment), whose config is JSON.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::config::{self, Config, ConfigMap, KeyInfo, Overlay};
use crate::progress::Progress;
use crate::result::ResultFile;

pub use crate::cells::Cell;
pub use crate::data::DataSpec;
pub use crate::rows::{Row, RowBuilder, RunOutput};
pub use crate::scale::Scale;

/// Everything a run may look at besides its config.
pub struct RunContext<'a> {
    /// The scale the run was asked for.
    pub scale: Scale,
    /// The run's seed; derive one seed per component from it.
    pub seed: u64,
    /// User data files; empty when the experiment should generate or use its default data.
    pub data: &'a [DataSpec],
    /// Where the run reports what it is doing.
    pub progress: &'a Progress,
}

/// The memory a run is expected to need at its peak, and how that figure was worked out (said in
/// the refusal when the machine has less available; see [`crate::runner::check_memory`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryEstimate {
    /// Expected peak memory, bytes.
    pub bytes: u64,
    /// How the figure was worked out (for the refusal message).
    pub basis: String,
}

/// What `--data` files an experiment reads ([`TypedExperiment::data_kind`]); the runner refuses
/// the others before anything runs ([`crate::runner::data_for`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataKind {
    /// None: its data is generated from its parameters, so `--data` is refused (not ignored).
    None,
    /// Location records (`--format` snap-gowalla, chicago-csv, csv, geolife-plt), each path one
    /// dataset replacing the generated ones.
    Locations,
    /// One file of delays, one integer per line (`--format delays`, implied).
    Delays,
}

/// What names an experiment and where its figures and report come from: data, so that an
/// experiment states it in one struct literal instead of five methods.
#[derive(Clone, Copy)]
pub struct Meta {
    /// The command-line name, e.g. `rum-update`; it starts with its paper's prefix (`rum-`,
    /// `leaper-`, `diol-`, `oep7-`), which `make <name>` relies on.
    pub name: &'static str,
    /// The paper it reproduces, e.g. `LSM RUM-tree`.
    pub paper: &'static str,
    /// One line for `lsmlab list`.
    pub about: &'static str,
    /// Renders the figures from a result file into out_dir (svg + png), returning the paths;
    /// usually the paper's plotting function (a closure without captures also fits).
    pub figures: fn(&ResultFile, &Path) -> anyhow::Result<Vec<PathBuf>>,
    /// A Markdown section for REPORT.md: what was run, the key table, and the paper's claims
    /// beside what was measured; usually the paper's report function.
    pub report: fn(&ResultFile) -> String,
}

/// An experiment reproducing (part of) a paper's evaluation, with its typed config.
pub trait TypedExperiment: Sync {
    /// The experiment's parameters (declared with [`config!`](crate::config!)).
    type Config: Config;
    /// Its name, paper, one-line description, figures and report ([`Meta`]).
    fn meta(&self) -> Meta;
    /// The parameters' defaults at `scale`.
    fn defaults(&self, scale: Scale) -> Self::Config;
    /// Runs the experiment with a resolved, validated config.
    fn run(&self, config: &Self::Config, ctx: &RunContext) -> anyhow::Result<RunOutput>;
    /// The `--data` files it reads; by default none, so `--data` is refused.
    fn data_kind(&self) -> DataKind {
        DataKind::None
    }
    /// Renders this experiment's figures from a result file into out_dir: [`Meta::figures`]
    /// unless the experiment needs more than the result file.
    fn figures(&self, result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        (self.meta().figures)(result, out_dir)
    }
    /// The experiment's section of REPORT.md: [`Meta::report`] unless the experiment needs more
    /// than the result file.
    fn report(&self, result: &ResultFile) -> String {
        (self.meta().report)(result)
    }
    /// The run's peak memory for `config`, when the experiment can tell; `None` skips the check.
    fn memory_estimate(&self, _config: &Self::Config, _data: &[DataSpec]) -> Option<MemoryEstimate> {
        None
    }
    /// The grid of the run ([`crate::cells`]): the runner runs the experiment once per cell, on the
    /// config with the cell's list-valued keys narrowed to one element, and writes the result after
    /// every cell (`--resume`, `--shard`, `--repeat` work per cell). Only keys whose values the run
    /// treats independently may be split. The default, one cell narrowing nothing, is one whole run.
    fn cells(&self, _config: &Self::Config, _data: &[DataSpec]) -> Vec<Cell> {
        vec![Cell::whole()]
    }
    /// Why `--repeat` above 1 cannot average this experiment's runs, when it cannot (its rows do
    /// not pair up between seeds): the runner refuses such a run before it starts, rather than
    /// after its first cell's repetitions.
    fn repeat_refusal(&self) -> Option<&'static str> {
        None
    }
    /// Fields computed from the rows of several cells (a policy's overhead against a baseline run
    /// in another cell, say), filled in once a result covers the whole grid: by the runner when
    /// its last cell is done, and by `lsmlab merge` when the shards are joined, before
    /// [`TypedExperiment::summary_notes`]. A cell's own run sees only its own rows. Called again on
    /// its own output it must change nothing.
    fn complete_rows(&self, _config: &Self::Config, _rows: &mut Vec<Row>) -> anyhow::Result<()> {
        Ok(())
    }
    /// Notes computed from the rows of every cell together (a finding across the grid), appended
    /// once a result covers the whole grid: by the runner when its last cell is done, and by
    /// `lsmlab merge` when the shards are joined. A cell's own run sees only its own rows.
    fn summary_notes(&self, _rows: &[Row]) -> Vec<String> {
        Vec::new()
    }
}

/// An experiment as the runner, registry and report see it: its config travels as JSON.
/// Every [`TypedExperiment`] is one.
pub trait Experiment: Sync {
    /// The experiment's name in the registry and on the command line (e.g. `rum-update`).
    fn name(&self) -> &'static str;
    /// The paper's name, as result files and claims give it.
    fn paper(&self) -> &'static str;
    /// One line on what the experiment measures, as `lsmlab list` shows it.
    fn about(&self) -> &'static str;
    /// The keys, their defaults at `scale` and their help, as `lsmlab params` lists them.
    fn keys(&self, scale: Scale) -> anyhow::Result<Vec<KeyInfo>>;
    /// The effective config: the defaults at `scale` under `overlay`, checked for type and range.
    fn resolve(&self, scale: Scale, overlay: &Overlay) -> anyhow::Result<ConfigMap>;
    /// Runs with a config [`Experiment::resolve`] returned.
    fn run(&self, config: &ConfigMap, ctx: &RunContext) -> anyhow::Result<RunOutput>;
    /// The `--data` files it reads ([`TypedExperiment::data_kind`]).
    fn data_kind(&self) -> DataKind;
    /// Renders the result's figures into `out_dir`; returns the files written.
    fn figures(&self, result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>>;
    /// The result's section of the Markdown report.
    fn report(&self, result: &ResultFile) -> String;
    /// The run's peak memory for a config [`Experiment::resolve`] returned, when the experiment can tell.
    fn memory_estimate(
        &self,
        config: &ConfigMap,
        data: &[DataSpec],
    ) -> anyhow::Result<Option<MemoryEstimate>>;
    /// The cells of a config [`Experiment::resolve`] returned ([`TypedExperiment::cells`]).
    fn cells(&self, config: &ConfigMap, data: &[DataSpec]) -> anyhow::Result<Vec<Cell>>;
    /// Why `--repeat` above 1 is refused ([`TypedExperiment::repeat_refusal`]).
    fn repeat_refusal(&self) -> Option<&'static str> {
        None
    }
    /// Fills the fields computed across cells into the rows of the whole grid, for a config
    /// [`Experiment::resolve`] returned ([`TypedExperiment::complete_rows`]).
    fn complete_rows(&self, _config: &ConfigMap, _rows: &mut Vec<Row>) -> anyhow::Result<()> {
        Ok(())
    }
    /// Notes from the rows of the whole grid ([`TypedExperiment::summary_notes`]).
    fn summary_notes(&self, _rows: &[Row]) -> Vec<String> {
        Vec::new()
    }
}

impl<T: TypedExperiment> Experiment for T {
    fn name(&self) -> &'static str {
        self.meta().name
    }

    fn paper(&self) -> &'static str {
        self.meta().paper
    }

    fn about(&self) -> &'static str {
        self.meta().about
    }

    fn keys(&self, scale: Scale) -> anyhow::Result<Vec<KeyInfo>> {
        config::keys(&self.defaults(scale))
    }

    fn resolve(&self, scale: Scale, overlay: &Overlay) -> anyhow::Result<ConfigMap> {
        config::to_map(&config::resolve(&self.defaults(scale), overlay)?)
    }

    fn run(&self, config: &ConfigMap, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let config: T::Config = config::from_map(config)?;
        TypedExperiment::run(self, &config, ctx)
    }

    fn figures(&self, result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        TypedExperiment::figures(self, result, out_dir)
    }

    fn data_kind(&self) -> DataKind {
        TypedExperiment::data_kind(self)
    }

    fn report(&self, result: &ResultFile) -> String {
        TypedExperiment::report(self, result)
    }

    fn memory_estimate(
        &self,
        config: &ConfigMap,
        data: &[DataSpec],
    ) -> anyhow::Result<Option<MemoryEstimate>> {
        let config: T::Config = config::from_map(config)?;
        Ok(TypedExperiment::memory_estimate(self, &config, data))
    }

    fn cells(&self, config: &ConfigMap, data: &[DataSpec]) -> anyhow::Result<Vec<Cell>> {
        let config: T::Config = config::from_map(config)?;
        Ok(TypedExperiment::cells(self, &config, data))
    }

    fn repeat_refusal(&self) -> Option<&'static str> {
        TypedExperiment::repeat_refusal(self)
    }

    fn complete_rows(&self, config: &ConfigMap, rows: &mut Vec<Row>) -> anyhow::Result<()> {
        let config: T::Config = config::from_map(config)?;
        TypedExperiment::complete_rows(self, &config, rows)
    }

    fn summary_notes(&self, rows: &[Row]) -> Vec<String> {
        TypedExperiment::summary_notes(self, rows)
    }
}

/// The experiment called `name` among `experiments`; the error lists the names there are.
pub fn find_in<'a>(experiments: &[&'a dyn Experiment], name: &str) -> anyhow::Result<&'a dyn Experiment> {
    if let Some(found) = experiments.iter().find(|e| e.name() == name) {
        return Ok(*found);
    }
    let names: Vec<&str> = experiments.iter().map(|e| e.name()).collect();
    if names.is_empty() {
        anyhow::bail!("unknown experiment `{name}`: no experiments are registered in this build");
    }
    anyhow::bail!("unknown experiment `{name}`; experiments: {}", names.join(", "))
}

impl fmt::Debug for dyn Experiment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Experiment")
            .field("name", &self.name())
            .field("paper", &self.paper())
            .finish()
    }
}
