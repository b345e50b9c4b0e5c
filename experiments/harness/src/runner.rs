//! What `lsmlab run` and `lsmlab plot` do, as functions over a list of experiments (so tests can
//! pass fakes). Runner, plotter and report meet only through result files.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use parking_lot::Mutex;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::config::{ConfigFile, ConfigMap, Overlay, DATA_KEY, DERIVED_KEY};
use crate::experiment::find_in;
use crate::experiment::{DataKind, DataSpec, Experiment, MemoryEstimate, RunContext, Scale};
use crate::progress::Progress;
use crate::result::{
    find_result_files, now_rfc3339, CellLog, CellRecord, GitInfo, Machine, Provenance, ResultFile, SCHEMA,
};

/// The effective config of `experiment` at `scale` under `overlay` (`--config`, then `--set`),
/// checked for type and range: what `--print-config` prints and a result's `config` records.
pub fn resolve_config(
    experiment: &dyn Experiment,
    scale: Scale,
    overlay: &Overlay,
) -> anyhow::Result<ConfigMap> {
    if let Some(file) = &overlay.file {
        file.check_experiment(experiment.name())?;
    }
    let config = experiment
        .resolve(scale, overlay)
        .with_context(|| format!("experiment `{}` at scale {scale}", experiment.name()))?;
    for reserved in [DATA_KEY, DERIVED_KEY] {
        if config.contains_key(reserved) {
            bail!(
                "experiment `{}` has a parameter `{reserved}`, a key result files reserve (a bug)",
                experiment.name()
            );
        }
    }
    Ok(config)
}

/// One `lsmlab run`.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// The scale to run at.
    pub scale: Scale,
    /// The run's seed.
    pub seed: u64,
    /// Raw `key=value` arguments of `--set`.
    pub sets: Vec<String>,
    /// The results directory; the file goes to `<out_dir>/<scale>/<experiment>.json`.
    pub out_dir: PathBuf,
    /// `--data` files (a `--config` file may list them instead).
    pub data: Vec<DataSpec>,
    /// `--resume`, `--shard`, `--repeat`.
    pub sweep: Sweep,
}

/// How a run goes through its grid of cells ([`crate::cells`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweep {
    /// Skip the cells a partial result of the same run already holds.
    pub resume: bool,
    /// Run only this shard's cells, into `<experiment>.shard-K-of-N.json`.
    pub shard: Option<crate::cells::Shard>,
    /// Runs per cell, with seeds from [`crate::cells::repeat_seed`]; at least 1.
    pub repeat: u32,
}

impl Default for Sweep {
    fn default() -> Sweep {
        Sweep {
            resume: false,
            shard: None,
            repeat: 1,
        }
    }
}

impl RunRequest {
    /// `file` (`--config`), then the `--set` arguments.
    pub fn overlay(&self, file: Option<&ConfigFile>) -> Overlay {
        Overlay {
            file: file.cloned(),
            sets: self.sets.clone(),
        }
    }

    /// The data files of the run: `--data`, or those the `--config` file lists (not both).
    pub fn data_files(&self, file: Option<&ConfigFile>) -> anyhow::Result<Vec<DataSpec>> {
        match file {
            Some(file) if !file.data.is_empty() => {
                if !self.data.is_empty() {
                    bail!(
                        "both --data and config {} (its `{DATA_KEY}`) name data files; remove one",
                        file.path.display()
                    );
                }
                Ok(file.data.clone())
            }
            _ => Ok(self.data.clone()),
        }
    }
}

/// The data files of a run of `experiment` ([`RunRequest::data_files`]), checked against what the
/// experiment reads ([`Experiment::data_kind`]) before anything runs: `--data` to an experiment
/// that reads none is refused (it would be ignored, yet recorded in the result as if used); a
/// delays reader takes one file, whose `--format delays` is implied; a locations reader refuses
/// `--format delays`. Traces (`--trace`) pass: their family checks them.
pub fn data_for(
    experiment: &dyn Experiment,
    request: &RunRequest,
    config_file: Option<&ConfigFile>,
) -> anyhow::Result<Vec<DataSpec>> {
    let mut data = request.data_files(config_file)?;
    let name = experiment.name();
    let is_trace = |d: &DataSpec| d.format.as_deref() == Some(crate::data::TRACE_FORMAT);
    let given: Vec<usize> = (0..data.len()).filter(|&i| !is_trace(&data[i])).collect();
    let Some(&first) = given.first() else {
        return Ok(data);
    };
    match experiment.data_kind() {
        DataKind::None => bail!(
            "`{name}` reads no --data files (it generates its data from its parameters: `lsmlab params \
             {name}`), so --data {} would be ignored; `lsmlab gen --list` shows the traces an experiment \
             may replay with --trace",
            data[first].path.display()
        ),
        DataKind::Delays => {
            if let [_, second, ..] = given[..] {
                bail!(
                    "`{name}` reads one file of delays, and got two: --data {} and --data {}",
                    data[first].path.display(),
                    data[second].path.display()
                );
            }
            let spec = &mut data[first];
            match spec.format.as_deref() {
                None => spec.format = Some(crate::data::DELAYS_FORMAT.to_string()),
                Some(crate::data::DELAYS_FORMAT) => {}
                Some(other) => bail!(
                    "`{name}` reads --data as a file of delays (one integer per line, --format {}); \
                     --format {other} does not apply to {}",
                    crate::data::DELAYS_FORMAT,
                    spec.path.display()
                ),
            }
            if let Some(columns) = &spec.columns {
                bail!(
                    "`{name}` reads --data as a file of delays, one integer per line: it has no columns \
                     for --columns {columns} to name"
                );
            }
        }
        DataKind::Locations => {
            if let Some(spec) = data
                .iter()
                .find(|d| d.format.as_deref() == Some(crate::data::DELAYS_FORMAT))
            {
                bail!(
                    "`{name}` reads location records (--format {}), and --format {} is a file of \
                     delays (for diol): {}",
                    lsmlab_workloads::load::Format::NAMES.join(", "),
                    crate::data::DELAYS_FORMAT,
                    spec.path.display()
                );
            }
        }
    }
    Ok(data)
}

/// [`run_with`] without a config file.
pub fn run(
    experiment: &dyn Experiment,
    request: &RunRequest,
    progress: &Progress,
) -> anyhow::Result<PathBuf> {
    run_with(experiment, request, None, progress)
}

/// Resolves and validates the config (the scale's defaults, then `config_file`, then the request's
/// `--set`), checks the data files ([`crate::data::preflight`]) and that the results directory is
/// writable, runs the experiment and writes its result file atomically, returning its path.
/// Nothing is written when any step fails, a run without rows included, so a failed run never
/// replaces an earlier result; directories created for the result are removed again.
pub fn run_with(
    experiment: &dyn Experiment,
    request: &RunRequest,
    config_file: Option<&ConfigFile>,
    progress: &Progress,
) -> anyhow::Result<PathBuf> {
    let resolved = resolve_config(experiment, request.scale, &request.overlay(config_file))?;
    let data = data_for(experiment, request, config_file)?;
    crate::data::preflight(&data)?;
    let mut estimate_bytes = None;
    if std::env::var_os(NO_MEMORY_CHECK).is_none() {
        let estimate = experiment.memory_estimate(&resolved, &data)?;
        estimate_bytes = estimate.as_ref().map(|e| e.bytes);
        let available = available_memory();
        check_memory(experiment.name(), estimate.as_ref(), available)?;
        if let Some(e) = &estimate {
            // Said before a long run starts, so that its peak can be checked against it.
            let of = available.map_or(String::new(), |a| format!(" of {} available", gib(a)));
            progress.message(format!(
                "memory estimate: about {} at its peak{of} ({})",
                gib(e.bytes),
                e.basis
            ));
        }
    }
    if request.sweep.repeat == 0 {
        bail!("--repeat 0 runs nothing; give 1 or more");
    }
    if request.sweep.repeat > 1 {
        if let Some(why) = experiment.repeat_refusal() {
            bail!(
                "--repeat {}: `{}` cannot average its repetitions: {why}; nothing was run",
                request.sweep.repeat,
                experiment.name()
            );
        }
    }
    let path = match request.sweep.shard {
        None => ResultFile::path_in(&request.out_dir, request.scale, experiment.name()),
        Some(shard) => ResultFile::path_in(
            &request.out_dir,
            request.scale,
            &format!("{}.{}", experiment.name(), shard.suffix()),
        ),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    // The result (and the partial file beside it) must be writable as files: a directory of that
    // name would be found only when the run is over.
    for p in [path.clone(), partial_path(&path)] {
        if p.exists() && !p.is_file() {
            bail!(
                "{} exists and is not a file, so the result could not be written there; nothing was \
                 run: remove or rename it, or give another --out",
                p.display()
            );
        }
    }
    let created = check_writable(dir)?;
    let written = run_checked(
        experiment,
        request,
        resolved,
        &data,
        estimate_bytes,
        &path,
        progress,
    );
    if written.is_err() {
        // Innermost first; a directory that holds anything (another result) stays.
        for d in created.iter().rev() {
            let _ = fs::remove_dir(d);
        }
    }
    written
}

/// The environment variable that turns [`check_memory`] off (any value).
pub const NO_MEMORY_CHECK: &str = "LSMLAB_NO_MEMORY_CHECK";

/// The memory the operating system says is available, in bytes (`None` when it cannot tell).
pub fn available_memory() -> Option<u64> {
    let mut system = sysinfo::System::new().ok()?;
    system.refresh_memory();
    Some(system.available_memory()).filter(|&b| b > 0)
}

/// Refuses a run whose estimated peak memory exceeds what is available, before it starts, rather
/// than letting the kernel kill it halfway; the error gives the estimate, its basis and the way
/// out. Runs without an estimate, or on a machine that cannot tell its memory, pass.
pub fn check_memory(
    name: &str,
    estimate: Option<&MemoryEstimate>,
    available: Option<u64>,
) -> anyhow::Result<()> {
    let (Some(estimate), Some(available)) = (estimate, available) else {
        return Ok(());
    };
    if estimate.bytes > available {
        bail!(
            "`{name}` would need about {} of memory at its peak ({}), but only {} is available; \
             lower the sizes (for example --set records=...) or set {NO_MEMORY_CHECK}=1 to run anyway",
            gib(estimate.bytes),
            estimate.basis,
            gib(available)
        );
    }
    Ok(())
}

/// The environment variable that turns [`check_disk`] off (any value).
pub const NO_DISK_CHECK: &str = "LSMLAB_NO_DISK_CHECK";

/// The space free for an unprivileged writer on the filesystem that holds `dir`, in bytes: the
/// disk whose mount point is the longest prefix of `dir`'s canonical path (`None` when it cannot
/// tell).
pub fn available_disk(dir: &Path) -> Option<u64> {
    let dir = fs::canonicalize(dir).ok()?;
    let disks = sysinfo::Disks::new_with_refreshed_list().ok()?;
    disks
        .iter()
        .filter(|d| dir.starts_with(d.mount_point()))
        .max_by_key(|d| d.mount_point().as_os_str().len())
        .map(|d| d.available_space())
}

/// Refuses a run whose files would need more disk than `dir`'s filesystem has free, before it
/// starts, rather than letting a write fail hours in; `needed` comes with its basis. Passes when
/// the free space is unknown. The caller skips it when [`NO_DISK_CHECK`] is set, as the runner
/// skips [`check_memory`].
pub fn check_disk(
    what: &str,
    needed: u64,
    basis: &str,
    dir: &Path,
    available: Option<u64>,
) -> anyhow::Result<()> {
    let Some(available) = available else {
        return Ok(());
    };
    if needed > available {
        bail!(
            "{what} would need about {} of disk in {} ({basis}), but its filesystem has {} free; \
             free some space, put the files elsewhere (--set file_dir=...), lower the sizes (for example \
             --set records=...) or set {NO_DISK_CHECK}=1 to run anyway",
            gib(needed),
            dir.display(),
            gib(available)
        );
    }
    Ok(())
}

/// Creates directory `dir`, whose parent exists. Returns whether this call made it: `false` when a
/// directory is there already (another run made it since this one looked), an error when
/// anything else is, or creating it fails.
fn create_dir_unless_made(dir: &Path) -> anyhow::Result<bool> {
    match fs::create_dir(dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(false),
        Err(e) => Err(e).with_context(|| format!("creating {}", dir.display())),
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Makes sure a result can be written into `dir` before a run starts: creates it (and its missing
/// parents) and writes and removes a probe file. Returns the directories it created, outermost
/// first; on failure, removes them again. Runs started side by side into one `--out` (the shards
/// of a sweep under GNU parallel, say) may create the same directories at once: one that another
/// run made meanwhile is used, not counted as created.
pub fn check_writable(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut d = dir;
    while !d.as_os_str().is_empty() && !d.exists() {
        missing.push(d.to_path_buf());
        match d.parent() {
            Some(p) => d = p,
            None => break,
        }
    }
    let mut created = Vec::new();
    let result = (|| -> anyhow::Result<()> {
        for m in missing.iter().rev() {
            if create_dir_unless_made(m)? {
                created.push(m.clone());
            }
        }
        if !dir.as_os_str().is_empty() && !dir.is_dir() {
            bail!("{} exists and is not a directory", dir.display());
        }
        let probe = dir.join(format!(".lsmlab-write-probe.{}", std::process::id()));
        fs::write(&probe, b"").with_context(|| format!("writing {}", probe.display()))?;
        fs::remove_file(&probe).with_context(|| format!("removing {}", probe.display()))?;
        Ok(())
    })();
    match result {
        Ok(()) => Ok(created),
        Err(e) => {
            for d in created.iter().rev() {
                let _ = fs::remove_dir(d);
            }
            Err(e.context(format!(
                "cannot write results to {} (--out); nothing was run",
                dir.display()
            )))
        }
    }
}

/// The test-only hook that stops a run (with an error) after this many cells were written, as an
/// interruption would; `--resume` then continues it. Not for users: a killed run behaves the same.
pub const ABORT_AFTER_CELLS: &str = "LSMLAB_ABORT_AFTER_CELLS";

/// Where a run keeps its cells until the last one is done: `<result>.partial` beside the result
/// (not a `.json` name, so `plot` and `report` never take it for a result).
pub fn partial_path(result: &Path) -> PathBuf {
    let mut name = result.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    result.with_file_name(name)
}

/// Runs `experiment` with its checked config and data, cell by cell ([`crate::cells`]), writing
/// the cells done so far to [`partial_path`] after every cell and the result file at `path` once
/// every cell (of the shard) is done. With `resume`, cells already in the partial file are skipped.
fn run_checked(
    experiment: &dyn Experiment,
    request: &RunRequest,
    resolved: crate::config::ConfigMap,
    data: &[DataSpec],
    memory_estimate_bytes: Option<u64>,
    path: &Path,
    progress: &Progress,
) -> anyhow::Result<PathBuf> {
    let name = experiment.name();
    let sweep = &request.sweep;
    // An empty grid (an empty list) runs as one whole cell, so the experiment itself says what is
    // missing, or produces no rows.
    let cells = match experiment.cells(&resolved, data)? {
        cells if cells.is_empty() => vec![crate::cells::Cell::whole()],
        cells => cells,
    };
    let mut config = resolved.clone();
    if !data.is_empty() {
        config.insert(DATA_KEY.to_string(), serde_json::to_value(data)?);
    }
    let selected: Vec<usize> = (0..cells.len())
        .filter(|&i| sweep.shard.is_none_or(|s| s.runs(i)))
        .collect();
    if selected.is_empty() {
        bail!(
            "shard {} of `{name}` has no cells: the grid has {} cell{}; use at most {} shards",
            sweep.shard.map(|s| s.to_string()).unwrap_or_default(),
            cells.len(),
            if cells.len() == 1 { "" } else { "s" },
            cells.len()
        );
    }
    let partial = partial_path(path);
    let fresh = || ResultFile {
        schema: SCHEMA.to_string(),
        experiment: name.to_string(),
        paper: experiment.paper().to_string(),
        scale: request.scale,
        seed: request.seed,
        config: config.clone(),
        machine: Machine::detect(),
        git: GitInfo::of_build(),
        started_at: now_rfc3339(),
        duration_s: 0.0,
        rows: Vec::new(),
        notes: Vec::new(),
        provenance: Some(Provenance::current()),
        cells: Some(CellLog {
            total: cells.len(),
            shard: sweep.shard,
            repeat: sweep.repeat,
            done: Vec::new(),
            memory_estimate_bytes,
            grid_rows: 0,
        }),
    };
    let mut state = if sweep.resume && partial.exists() {
        let state = ResultFile::read(&partial)?;
        check_resumable(&state, &fresh(), &cells, &resolved).with_context(|| {
            format!(
                "cannot --resume from {}; remove it to start over",
                partial.display()
            )
        })?;
        state
    } else {
        fresh()
    };
    if let Some(log) = state.cells.as_mut() {
        // A partial file written before cell logs kept the estimate gets this run's (the same run).
        log.memory_estimate_bytes = log.memory_estimate_bytes.or(memory_estimate_bytes);
    }
    let done_before = state.cells.as_ref().map_or(0, |c| c.done.len());
    if !sweep.resume && partial.exists() {
        let held = ResultFile::read(&partial)
            .ok()
            .and_then(|p| {
                p.cells
                    .map(|c| format!(" ({} of {} cells)", c.done.len(), c.total))
            })
            .unwrap_or_default();
        progress.message(format!(
            "{} holds an interrupted run{held}; this run starts over and will replace it: stop it and \
             add --resume to continue from those cells instead",
            partial.display()
        ));
    }
    let keeps_partial = cells.len() > 1 || sweep.resume || sweep.shard.is_some();
    *SAVED.lock() = Some(Saved {
        partial: partial.clone(),
        done: if keeps_partial { done_before } else { 0 },
        total: selected.len(),
    });
    let todo: Vec<usize> = selected
        .iter()
        .copied()
        .filter(|i| {
            !state
                .cells
                .as_ref()
                .is_some_and(|c| c.done.iter().any(|d| d.index == *i))
        })
        .collect();
    if done_before > 0 {
        progress.message(format!(
            "resuming: {done_before} of {} cells already done in {}",
            selected.len(),
            partial.display()
        ));
    }
    let abort_after: Option<usize> = std::env::var(ABORT_AFTER_CELLS).ok().and_then(|v| v.parse().ok());
    for (n, &i) in todo.iter().enumerate() {
        let cell = &cells[i];
        let label = cell.label(&resolved);
        // A grid of one cell is the whole run: no cell line. One cell of a larger grid (a shard of
        // one, the last cell resumed) still names itself.
        let shown = if cells.len() > 1 { label.as_str() } else { "" };
        progress.cell(done_before + n + 1, selected.len(), shown);
        let narrowed = cell.narrow(&resolved)?;
        let clock = Instant::now();
        let meter = crate::usage::Meter::start(n == 0);
        let mut runs = Vec::with_capacity(sweep.repeat as usize);
        for r in 0..sweep.repeat {
            let seed = crate::cells::repeat_seed(request.seed, r);
            let ctx = RunContext {
                scale: request.scale,
                seed,
                data,
                progress,
            };
            let output = experiment.run(&narrowed, &ctx).with_context(|| {
                let repetition = if sweep.repeat > 1 {
                    format!(", repetition {} of {}", r + 1, sweep.repeat)
                } else {
                    String::new()
                };
                format!(
                    "running `{name}` at scale {} with seed {seed}{}{repetition}",
                    request.scale,
                    if cells.len() > 1 {
                        format!(", cell {label}")
                    } else {
                        String::new()
                    }
                )
            })?;
            runs.push(output);
        }
        let output = crate::repeat::aggregate(runs)
            .with_context(|| format!("averaging the repetitions of cell {label}"))?;
        let duration_s = clock.elapsed().as_secs_f64();
        let usage = meter.finish();
        progress.cell_done(cell_cost(&label, duration_s, &usage, memory_estimate_bytes));
        add_cell(&mut state, i, label, duration_s, usage, output);
        if keeps_partial {
            // The file and the count it holds change together: an interrupt's note
            // (`interrupted_note`, on the signal handler's thread) waits for both.
            let mut saved = SAVED.lock();
            state
                .write_atomic(&partial)
                .context("writing the cells done so far")?;
            if let Some(saved) = saved.as_mut() {
                saved.done = done_before + n + 1;
            }
        }
        if abort_after.is_some_and(|k| n + 1 >= k) {
            bail!(
                "stopped after {} cell{} as {ABORT_AFTER_CELLS} asks; `--resume` continues from {}",
                n + 1,
                if n == 0 { "" } else { "s" },
                partial.display()
            );
        }
    }
    if state.rows.is_empty() {
        let _ = fs::remove_file(&partial);
        bail!(
            "`{name}` produced no rows; no result written{}",
            if path.exists() {
                format!(" ({} is left as it was)", path.display())
            } else {
                String::new()
            }
        );
    }
    if let Some(log) = state.cells.as_mut() {
        log.done.sort_by_key(|d| d.index);
    }
    complete_grid(experiment, &mut state).context("completing the rows of the whole grid")?;
    state.provenance = Some(Provenance::current());
    state.write_atomic(path)?;
    let _ = fs::remove_file(&partial);
    *SAVED.lock() = None;
    Ok(path.to_path_buf())
}

/// How many cells `experiment` runs at `scale` with its defaults and generated data (the count a
/// `--shard K/N` split divides, or an array job sizes itself by).
pub fn default_cells(experiment: &dyn Experiment, scale: Scale) -> anyhow::Result<usize> {
    Ok(default_cell_labels(experiment, scale)?.len().max(1))
}

/// The labels of the cells `experiment` runs at `scale` with its defaults and generated data, in
/// grid order: `--shard K/N` with N their count runs the K-th alone.
pub fn default_cell_labels(experiment: &dyn Experiment, scale: Scale) -> anyhow::Result<Vec<String>> {
    let config = resolve_config(experiment, scale, &Overlay::default())?;
    Ok(experiment
        .cells(&config, &[])?
        .iter()
        .map(|c| c.label(&config))
        .collect())
}

/// What the run in progress has saved, for [`interrupted_note`].
struct Saved {
    partial: PathBuf,
    done: usize,
    total: usize,
}

static SAVED: Mutex<Option<Saved>> = Mutex::new(None);

/// What an interrupted run (Ctrl-C) tells its user: how many cells are saved where, and how to go
/// on; the binary prints it when the run is interrupted.
pub fn interrupted_note() -> String {
    match SAVED.lock().as_ref() {
        Some(s) if s.done > 0 => format!(
            "interrupted: {} of {} cells are saved in {}; run the same command with --resume to continue from them",
            s.done,
            s.total,
            s.partial.display()
        ),
        Some(_) => "interrupted before a cell finished: nothing saved, no result written".to_string(),
        None => "interrupted: no result written".to_string(),
    }
}

/// When `result` holds every cell of its grid (a shard's result waits for `lsmlab merge`): fills
/// in the fields computed across cells ([`Experiment::complete_rows`]) and appends the
/// experiment's notes on the whole grid ([`Experiment::summary_notes`]), each once.
pub fn complete_grid(experiment: &dyn Experiment, result: &mut ResultFile) -> anyhow::Result<()> {
    let complete = result
        .cells
        .as_ref()
        .is_none_or(|log| log.shard.is_none() && log.done.len() == log.total);
    if !complete {
        return Ok(());
    }
    // The result's config also records the run's data files and derived settings: outputs of
    // the run, not keys of the experiment's config.
    let mut inputs = result.config.clone();
    inputs.remove(DATA_KEY);
    inputs.remove(DERIVED_KEY);
    experiment.complete_rows(&inputs, &mut result.rows)?;
    if let Some(log) = result.cells.as_mut() {
        // The cells' rows come first; what the grid added follows them.
        let cells = log.cell_rows();
        anyhow::ensure!(
            result.rows.len() >= cells,
            "completing the grid left {} rows, fewer than its cells' {cells} (a bug in the experiment)",
            result.rows.len()
        );
        log.grid_rows = result.rows.len() - cells;
    }
    for note in experiment.summary_notes(&result.rows) {
        if !result.notes.contains(&note) {
            result.notes.push(note);
        }
    }
    Ok(())
}

/// Appends one cell's rows, notes (each once) and derived config to `state`.
fn add_cell(
    state: &mut ResultFile,
    index: usize,
    label: String,
    duration_s: f64,
    usage: crate::usage::Usage,
    output: crate::rows::RunOutput,
) {
    let rows = output.rows.len();
    state.rows.extend(output.rows);
    for note in output.notes {
        if !state.notes.contains(&note) {
            state.notes.push(note);
        }
    }
    if !output.extra_config.is_empty() {
        let derived = state
            .config
            .entry(DERIVED_KEY.to_string())
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
        if let serde_json::Value::Object(derived) = derived {
            for (key, value) in output.extra_config {
                match derived.get(&key) {
                    Some(kept) if *kept != value => {
                        let note = format!(
                            "config.derived.{key} differs between cells; the first cell's value is kept"
                        );
                        if !state.notes.contains(&note) {
                            state.notes.push(note);
                        }
                    }
                    Some(_) => {}
                    None => {
                        derived.insert(key, value);
                    }
                }
            }
        }
    }
    state.duration_s += duration_s;
    if let Some(log) = state.cells.as_mut() {
        log.done.push(CellRecord {
            index,
            label,
            rows,
            duration_s,
            cpu_s: Some(usage.cpu_s),
            peak_rss_bytes: usage.peak_rss_bytes,
        });
    }
}

/// What a finished cell cost, as its progress line says it: `datasets=chicago strategies=UM:
/// 12.3 s wall, 20.1 s CPU, peak 1.24 GiB (estimate 1.90 GiB)`.
fn cell_cost(label: &str, wall_s: f64, usage: &crate::usage::Usage, estimate: Option<u64>) -> String {
    let secs = |s: f64| {
        if s < 10.0 {
            format!("{s:.2}")
        } else {
            format!("{s:.1}")
        }
    };
    let mut line = format!("{label}: {} s wall, {} s CPU", secs(wall_s), secs(usage.cpu_s));
    if let Some(peak) = usage.peak_rss_bytes {
        line += &format!(", peak {}", crate::usage::size(peak));
        if let Some(e) = estimate {
            line += &format!(" (estimate {})", crate::usage::size(e));
        }
    }
    line
}

/// A partial result may be resumed when it is the same run: experiment, scale, seed, config, grid,
/// shard, repetitions and code.
fn check_resumable(
    partial: &ResultFile,
    now: &ResultFile,
    cells: &[crate::cells::Cell],
    resolved: &crate::config::ConfigMap,
) -> anyhow::Result<()> {
    let inputs = |r: &ResultFile| {
        let mut c = r.config.clone();
        c.remove(DERIVED_KEY);
        c
    };
    if partial.experiment != now.experiment || partial.scale != now.scale || partial.seed != now.seed {
        bail!(
            "it is `{}` at scale {} with seed {}, this run is `{}` at scale {} with seed {}",
            partial.experiment,
            partial.scale,
            partial.seed,
            now.experiment,
            now.scale,
            now.seed
        );
    }
    if inputs(partial) != inputs(now) {
        bail!("its config differs from this run's (compare its `config` with --print-config)");
    }
    let (Some(was), Some(is)) = (&partial.cells, &now.cells) else {
        bail!("it records no cells");
    };
    if (was.total, was.shard, was.repeat) != (is.total, is.shard, is.repeat) {
        bail!(
            "it has {} cells{}, repeat {}; this run has {} cells{}, repeat {}",
            was.total,
            was.shard.map(|s| format!(" (shard {s})")).unwrap_or_default(),
            was.repeat,
            is.total,
            is.shard.map(|s| format!(" (shard {s})")).unwrap_or_default(),
            is.repeat
        );
    }
    for done in &was.done {
        let label = cells.get(done.index).map(|c| c.label(resolved));
        if label.as_deref() != Some(done.label.as_str()) {
            bail!(
                "its cell {} is `{}`, which this run's grid does not have there",
                done.index,
                done.label
            );
        }
    }
    if partial.git.commit != now.git.commit {
        bail!(
            "it was run by the code of commit {}, this run is commit {}: their cells would not be comparable",
            partial.git.commit,
            now.git.commit
        );
    }
    Ok(())
}

/// Which figures `lsmlab plot` rendered from which result, kept beside the figures as
/// `<experiment>.figures.json` so `lsmlab report` can link them without rendering anything.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FigureManifest {
    /// The experiment the figures belong to.
    pub experiment: String,
    /// The result file they were rendered from.
    pub result: PathBuf,
    /// File names inside the manifest's directory, SVG and PNG.
    pub figures: Vec<String>,
}

impl FigureManifest {
    /// Where the manifest of `experiment` lives in `plot_dir`.
    pub fn path(plot_dir: &Path, experiment: &str) -> PathBuf {
        plot_dir.join(format!("{experiment}.figures.json"))
    }

    /// The manifest for `experiment` in `plot_dir`, if `lsmlab plot` wrote one.
    pub fn read(plot_dir: &Path, experiment: &str) -> anyhow::Result<Option<FigureManifest>> {
        let path = FigureManifest::path(plot_dir, experiment);
        if !path.exists() {
            return Ok(None);
        }
        let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let manifest = serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        Ok(Some(manifest))
    }
}

/// Renders every result file under `results_dir` (for `scales`, all when empty) into
/// `out_dir/<scale>/`, returning the figure paths. A file that fails does not stop the others; the
/// failures are reported together at the end.
pub fn plot(
    experiments: &[&dyn Experiment],
    results_dir: &Path,
    out_dir: &Path,
    scales: &[Scale],
) -> anyhow::Result<Vec<PathBuf>> {
    let files = find_result_files(results_dir, scales)?;
    if files.is_empty() {
        bail!(
            "no result files under {} (looked in {}); run `lsmlab run EXPERIMENT` or `make` first",
            results_dir.display(),
            scale_dirs(scales)
        );
    }
    let mut rendered = Vec::new();
    let mut failures = Vec::new();
    for file in &files {
        match plot_one(experiments, file, out_dir) {
            Ok(paths) => rendered.extend(paths),
            Err(e) => failures.push(format!("{}: {e:#}", file.display())),
        }
    }
    if !failures.is_empty() {
        bail!(
            "{} of {} result files could not be plotted:\n  {}",
            failures.len(),
            files.len(),
            failures.join("\n  ")
        );
    }
    Ok(rendered)
}

fn plot_one(experiments: &[&dyn Experiment], file: &Path, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let result = ResultFile::read(file)?;
    let experiment = find_in(experiments, &result.experiment)?;
    let dir = out_dir.join(result.scale.as_str());
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let paths = experiment
        .figures(&result, &dir)
        .with_context(|| format!("rendering `{}`", result.experiment))?;
    let mut names = Vec::with_capacity(paths.len());
    for path in &paths {
        if !path.is_file() {
            bail!(
                "`{}` reported figure {}, which does not exist",
                result.experiment,
                path.display()
            );
        }
        let in_dir = path.parent().and_then(|p| p.canonicalize().ok()) == dir.canonicalize().ok();
        names.push(match (in_dir, path.file_name()) {
            (true, Some(n)) => n.to_string_lossy().into_owned(),
            _ => path.to_string_lossy().into_owned(),
        });
    }
    let manifest = FigureManifest {
        experiment: result.experiment.clone(),
        result: file.to_path_buf(),
        figures: names,
    };
    let manifest_path = FigureManifest::path(&dir, &result.experiment);
    crate::atomic::write(
        &manifest_path,
        (serde_json::to_string_pretty(&manifest)? + "\n").as_bytes(),
    )?;
    Ok(paths)
}

fn scale_dirs(scales: &[Scale]) -> String {
    let scales = if scales.is_empty() {
        &Scale::ALL[..]
    } else {
        scales
    };
    scales
        .iter()
        .map(|s| format!("{s}/"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FAKE, OTHER};

    fn request(out: &Path, sets: &[&str]) -> RunRequest {
        RunRequest {
            scale: Scale::Tiny,
            seed: 7,
            sets: sets.iter().map(|s| s.to_string()).collect(),
            out_dir: out.to_path_buf(),
            data: vec![],
            sweep: Sweep::default(),
        }
    }

    #[test]
    fn a_run_bigger_than_the_available_memory_is_refused_with_its_estimate() {
        let estimate = MemoryEstimate {
            bytes: 3 << 30,
            basis: "10 records x 1 B".into(),
        };
        let err = check_memory("rum-update", Some(&estimate), Some(2 << 30)).unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("3.0 GiB") && msg.contains("2.0 GiB") && msg.contains("10 records x 1 B"),
            "{msg}"
        );
        assert!(msg.contains(NO_MEMORY_CHECK), "{msg}");
        check_memory("rum-update", Some(&estimate), Some(4 << 30)).unwrap();
        check_memory("rum-update", None, Some(1)).unwrap();
        check_memory("rum-update", Some(&estimate), None).unwrap();
    }

    #[test]
    fn a_run_that_would_fill_its_disk_is_refused_by_name() {
        let dir = Path::new("/some/dir");
        let err = check_disk(
            "leaper-online's page files",
            40 << 30,
            "two stores",
            dir,
            Some(28 << 30),
        )
        .unwrap_err()
        .to_string();
        for part in [
            "40.0 GiB",
            "/some/dir",
            "two stores",
            "28.0 GiB free",
            "file_dir",
            NO_DISK_CHECK,
        ] {
            assert!(err.contains(part), "{part} missing: {err}");
        }
        check_disk("x", 28 << 30, "", dir, Some(28 << 30)).unwrap();
        check_disk("x", 40 << 30, "", dir, None).unwrap();
    }

    #[test]
    fn the_free_disk_of_a_folder_is_found() {
        let dir = tempfile::tempdir().unwrap();
        // Every test machine mounts the temp folder somewhere sysinfo lists.
        assert!(available_disk(dir.path()).is_some_and(|b| b > 0));
        assert_eq!(available_disk(&dir.path().join("missing")), None);
    }

    #[test]
    fn run_writes_the_result_file_with_resolved_config() {
        let dir = tempfile::tempdir().unwrap();
        let path = run(
            &FAKE,
            &request(dir.path(), &["records=5", "strategies=Eager,Validation,UM+F"]),
            &Progress::silent(),
        )
        .unwrap();
        assert_eq!(path, dir.path().join("tiny/fake.json"));
        let result = ResultFile::read(&path).unwrap();
        assert_eq!(
            (result.experiment.as_str(), result.paper.as_str()),
            ("fake", "Fake paper")
        );
        assert_eq!((result.scale, result.seed), (Scale::Tiny, 7));
        assert_eq!(result.config["records"], 5);
        assert_eq!(
            result.config["strategies"],
            serde_json::json!(["Eager", "Validation", "UM+F"])
        );
        assert_eq!(result.config["derived"]["doubled"], 10);
        assert_eq!(result.config["fail"], false);
        assert_eq!(result.rows.len(), 3);
        assert_eq!(result.rows[1]["strategy"], "Validation");
        assert_eq!(result.notes, vec!["0 data files".to_string()]);
        assert!(result.duration_s >= 0.0);
        assert!(result.started_at.ends_with('Z'));
    }

    #[test]
    fn same_seed_gives_the_same_rows() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let pa = run(&FAKE, &request(a.path(), &[]), &Progress::silent()).unwrap();
        let pb = run(&FAKE, &request(b.path(), &[]), &Progress::silent()).unwrap();
        assert_eq!(
            ResultFile::read(&pa).unwrap().rows,
            ResultFile::read(&pb).unwrap().rows
        );
    }

    #[test]
    fn bad_params_fail_before_running_and_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(&[&str], &[&str]); 5] = [
            (&["recods=5"], &["recods", "records, strategies, ratio, fail"]),
            (&["records=lots"], &["records", "lots", "integer"]),
            (&["records=0"], &["records", "0", ">= 1"]),
            (&["strategies=Eager,Bogus"], &["Bogus", "strategies"]),
            (&["records"], &["key=value"]),
        ];
        for (sets, needles) in cases {
            let err = format!(
                "{:#}",
                run(&FAKE, &request(dir.path(), sets), &Progress::silent()).unwrap_err()
            );
            for needle in needles {
                assert!(err.contains(needle), "{sets:?}: `{err}` lacks `{needle}`");
            }
        }
        assert!(!dir.path().join("tiny").exists());
    }

    #[test]
    fn a_failed_run_writes_no_result() {
        let dir = tempfile::tempdir().unwrap();
        let err = format!(
            "{:#}",
            run(&FAKE, &request(dir.path(), &["fail=true"]), &Progress::silent()).unwrap_err()
        );
        assert!(
            err.contains("running `fake`") && err.contains("on purpose"),
            "{err}"
        );
        assert!(!dir.path().join("tiny/fake.json").exists());
    }

    #[test]
    fn data_files_must_exist_and_are_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let mut req = request(dir.path(), &[]);
        let data = DataSpec {
            path: dir.path().join("trips.csv"),
            format: Some("csv".into()),
            columns: Some("id=0,ts=1,x=2,y=3".into()),
            skip_malformed: true,
        };
        req.data = vec![data.clone()];
        let err = run(&FAKE, &req, &Progress::silent()).unwrap_err().to_string();
        assert!(
            err.contains("trips.csv") && err.contains("does not exist"),
            "{err}"
        );
        assert!(
            !dir.path().join("tiny").exists(),
            "a failed check creates nothing"
        );
        fs::write(&data.path, "id,ts,x,y\n1,2,3,4\n").unwrap();
        let result = ResultFile::read(&run(&FAKE, &req, &Progress::silent()).unwrap()).unwrap();
        assert_eq!(result.config["data"][0]["format"], "csv");
        assert_eq!(result.config["data"][0]["skip_malformed"], true);
        assert_eq!(result.notes, vec!["1 data files".to_string()]);

        // Without --format and --columns the spec records no nulls (which results refuse).
        req.data = vec![DataSpec {
            format: None,
            columns: None,
            skip_malformed: false,
            ..data
        }];
        let result = ResultFile::read(&run(&FAKE, &req, &Progress::silent()).unwrap()).unwrap();
        assert!(result.config["data"][0].get("format").is_none());
    }

    #[test]
    fn plot_renders_every_result_and_writes_a_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results");
        let plots = dir.path().join("plots");
        for (exp, scale) in [(&FAKE, Scale::Tiny), (&OTHER, Scale::Tiny), (&FAKE, Scale::Small)] {
            let mut req = request(&results, &[]);
            req.scale = scale;
            run(exp, &req, &Progress::silent()).unwrap();
        }
        let experiments: Vec<&dyn Experiment> = vec![&FAKE, &OTHER];
        let paths = plot(&experiments, &results, &plots, &[Scale::Tiny]).unwrap();
        assert_eq!(paths.len(), 4);
        assert!(plots.join("tiny/fake-time.png").is_file() && plots.join("tiny/other-time.svg").is_file());
        assert!(!plots.join("small").exists());
        let manifest = FigureManifest::read(&plots.join("tiny"), "fake")
            .unwrap()
            .unwrap();
        assert_eq!(
            manifest.figures,
            vec!["fake-time.svg".to_string(), "fake-time.png".to_string()]
        );

        assert_eq!(plot(&experiments, &results, &plots, &[]).unwrap().len(), 6);
    }

    #[test]
    fn plot_reports_unknown_experiments_and_missing_results() {
        let dir = tempfile::tempdir().unwrap();
        let experiments: Vec<&dyn Experiment> = vec![&FAKE];
        let err = plot(&experiments, dir.path(), &dir.path().join("plots"), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no result files"), "{err}");

        run(&OTHER, &request(dir.path(), &[]), &Progress::silent()).unwrap();
        run(&FAKE, &request(dir.path(), &[]), &Progress::silent()).unwrap();
        let err = format!(
            "{:#}",
            plot(&experiments, dir.path(), &dir.path().join("plots"), &[]).unwrap_err()
        );
        assert!(
            err.contains("other.json") && err.contains("unknown experiment `other`"),
            "{err}"
        );
        assert!(
            dir.path().join("plots/tiny/fake-time.png").is_file(),
            "the good file was still plotted"
        );
    }

    #[test]
    fn a_result_config_fed_back_through_config_repeats_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let first = run(
            &FAKE,
            &request(&dir.path().join("a"), &["records=5", "strategies=UM+F,Eager"]),
            &Progress::silent(),
        )
        .unwrap();
        let recorded = ResultFile::read(&first).unwrap();
        let mut expected = recorded.config.clone();
        expected.remove(DERIVED_KEY);

        // the whole result file as --config (its `derived` is an output, ignored)
        let req = request(&dir.path().join("b"), &[]);
        let file = ConfigFile::read(&first).unwrap();
        assert_eq!(
            resolve_config(&FAKE, Scale::Tiny, &req.overlay(Some(&file))).unwrap(),
            expected
        );
        let again =
            ResultFile::read(&run_with(&FAKE, &req, Some(&file), &Progress::silent()).unwrap()).unwrap();
        assert_eq!(again.config, recorded.config);
        assert_eq!(again.rows, recorded.rows);

        // the printed config, saved, read back and given at another scale: the same config
        let printed = dir.path().join("printed.json");
        fs::write(&printed, serde_json::to_string_pretty(&expected).unwrap()).unwrap();
        let mut req = request(&dir.path().join("c"), &["ratio=0.25"]);
        req.scale = Scale::Paper;
        let file = ConfigFile::read(&printed).unwrap();
        let config = resolve_config(&FAKE, Scale::Paper, &req.overlay(Some(&file))).unwrap();
        assert_eq!(config["records"], 5, "the file wins over the scale's defaults");
        assert_eq!(config["ratio"], 0.25, "--set wins over the file");
    }

    #[test]
    fn data_files_come_from_config_or_data_not_both() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("trips.csv");
        fs::write(&csv, "id,t,x,y\n1,2,3,4\n").unwrap();
        let mut req = request(dir.path(), &[]);
        req.data = vec![DataSpec {
            path: csv.clone(),
            format: None,
            columns: None,
            skip_malformed: false,
        }];
        let first = run(&FAKE, &req, &Progress::silent()).unwrap();
        let file = ConfigFile::read(&first).unwrap();
        let err = run_with(&FAKE, &req, Some(&file), &Progress::silent())
            .unwrap_err()
            .to_string();
        assert!(err.contains("--data") && err.contains("fake.json"), "{err}");
        req.data.clear();
        let again =
            ResultFile::read(&run_with(&FAKE, &req, Some(&file), &Progress::silent()).unwrap()).unwrap();
        assert_eq!(again.config["data"][0]["path"], csv.to_str().unwrap());
        assert_eq!(again.notes, vec!["1 data files".to_string()]);
    }

    #[test]
    fn bad_data_fails_before_running_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.csv");
        fs::write(&bad, "who,when,where\n1,2,3\n").unwrap();
        let mut req = request(dir.path(), &[]);
        req.data = vec![DataSpec {
            path: bad,
            format: None,
            columns: None,
            skip_malformed: false,
        }];
        let err = format!("{:#}", run(&FAKE, &req, &Progress::silent()).unwrap_err());
        assert!(
            err.contains("checking --data") && err.contains("bad.csv: cannot tell which columns"),
            "{err}"
        );
        assert!(!dir.path().join("tiny").exists());
    }

    #[test]
    fn a_run_without_rows_keeps_the_previous_result() {
        let dir = tempfile::tempdir().unwrap();
        let path = run(&FAKE, &request(dir.path(), &["records=5"]), &Progress::silent()).unwrap();
        let before = fs::read_to_string(&path).unwrap();
        let err = format!(
            "{:#}",
            run(&FAKE, &request(dir.path(), &["strategies="]), &Progress::silent()).unwrap_err()
        );
        assert!(
            err.contains("produced no rows") && err.contains("fake.json is left as it was"),
            "{err}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), before);
    }

    #[test]
    fn the_results_directory_is_checked_and_created_before_running() {
        let dir = tempfile::tempdir().unwrap();
        // Created when missing, parents too; removed again when the run fails.
        let out = dir.path().join("a/b");
        let err = run(&FAKE, &request(&out, &["fail=true"]), &Progress::silent()).unwrap_err();
        assert!(format!("{err:#}").contains("on purpose"));
        assert!(!dir.path().join("a").exists(), "created directories are removed");
        assert!(run(&FAKE, &request(&out, &[]), &Progress::silent()).is_ok());
        assert!(out.join("tiny/fake.json").is_file());
        // A path below a file cannot be a directory, whoever runs the test.
        let file = dir.path().join("file");
        fs::write(&file, "").unwrap();
        let err = format!(
            "{:#}",
            run(
                &FAKE,
                &request(&file.join("results"), &["fail=true"]),
                &Progress::silent()
            )
            .unwrap_err()
        );
        assert!(
            err.contains("cannot write results to") && err.contains("file/results/tiny (--out)"),
            "{err}"
        );
        assert!(!err.contains("on purpose"), "the run did not start: {err}");
        let err = format!("{:#}", check_writable(&file).unwrap_err());
        assert!(err.contains("exists and is not a directory"), "{err}");
    }

    /// Two shards started at once into a new `--out` both find its directories missing, and the
    /// slower one then finds them made: it uses them (and leaves them to their maker) instead of
    /// failing with "File exists". A file in the way is still an error.
    #[test]
    fn a_directory_another_run_made_meanwhile_is_used() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("results");
        assert!(create_dir_unless_made(&out).unwrap(), "made by this call");
        assert!(
            !create_dir_unless_made(&out).unwrap(),
            "made already: used, not claimed"
        );
        assert!(out.is_dir());
        let file = dir.path().join("file");
        fs::write(&file, "").unwrap();
        let err = format!("{:#}", create_dir_unless_made(&file).unwrap_err());
        assert!(err.contains("creating") && err.contains("file"), "{err}");
    }
}
