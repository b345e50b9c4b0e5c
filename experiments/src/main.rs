//! `lsmlab`: list, run, plot and report storage-engine paper experiments.

#![forbid(unsafe_code)]

use std::fmt;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use lsmlab::registry;
use lsmlab_harness::config::{self, ConfigFile};
use lsmlab_harness::experiment::{DataSpec, Experiment, Scale};
use lsmlab_harness::progress::Progress;
use lsmlab_harness::result::ResultFile;
use lsmlab_harness::{report, runner};

/// Reproduce storage-engine papers (LSM RUM-tree, Leaper, DIOL, OrientDB OEP 7): run experiments,
/// write JSON results, render figures and a Markdown report.
#[derive(Parser, Debug)]
#[command(name = "lsmlab", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the experiments.
    List {
        /// Print only the names, one per line (for scripts and the Makefile).
        #[arg(long)]
        names: bool,
        /// Print only the names of TARGET's experiments, one per line: every experiment of a paper
        /// id (rum, leaper, diol, oep7, combined) or the experiment TARGET names. `make TARGET`
        /// runs these; an unknown TARGET is refused.
        #[arg(long, value_name = "TARGET", conflicts_with = "names")]
        of: Option<String>,
        /// The scale whose default grid the cells column counts (paper-scale runs of some
        /// experiments split finer).
        #[arg(long, value_enum, default_value_t = Scale::Small)]
        scale: Scale,
    },
    /// Print an experiment's parameters, their defaults at a scale, and what they mean.
    Params {
        /// The experiment (see `lsmlab list`).
        experiment: String,
        /// The scale whose defaults to show.
        #[arg(long, value_enum, default_value_t = Scale::Small)]
        scale: Scale,
    },
    /// Run one experiment and write DIR/<scale>/<EXPERIMENT>.json.
    Run(RunArgs),
    /// Render the figures of every result file found, into OUT/<scale>/.
    Plot {
        /// Where the result files are (DIR/<scale>/<experiment>.json).
        #[arg(long, value_name = "DIR", default_value = "results")]
        results: PathBuf,
        /// Where to write the figures (OUT/<scale>/<figure>.svg and .png).
        #[arg(long, value_name = "DIR", default_value = "plots")]
        out: PathBuf,
        /// Only this scale (default: every scale found).
        #[arg(long, value_enum)]
        scale: Option<Scale>,
    },
    /// Write a Markdown report: the claim verdicts counted per paper, every claim judged against the
    /// results, then one section per result file, with links to its figures.
    Report {
        /// Where the result files are.
        #[arg(long, value_name = "DIR", default_value = "results")]
        results: PathBuf,
        /// Where `lsmlab plot` wrote the figures.
        #[arg(long, value_name = "DIR", default_value = "plots")]
        plots: PathBuf,
        /// The scale to report (default: every scale found, each in its own report; a report never
        /// mixes scales).
        #[arg(long, value_enum)]
        scale: Option<Scale>,
        /// The report file (default: REPORT.md for the small scale, the committed reference, else
        /// DIR/<scale>/REPORT.md beside that scale's results). Not a .json path, and not REPORT.md
        /// for another scale. A report whose results are unchanged is left as it was.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Print the counted and timed differences of two results of the same experiment, row by row
    /// (rows matched by their string and boolean fields). Exits non-zero when the files are results
    /// of different experiments, and with --check when a counted field differs.
    Compare {
        /// The first result file (A).
        a: PathBuf,
        /// The second result file (B).
        b: PathBuf,
        /// Exit with status 1 when a counted field or the set of rows differs.
        #[arg(long)]
        check: bool,
    },
    /// Join the result files of `run --shard K/N` (every shard of one run) into the one result the
    /// unsharded run writes, and write it to FILE.
    Merge {
        /// The shard result files.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// The merged result file, e.g. results/small/rum-update.json.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Write the operation stream of a workload as a CSV trace (see `--list`), so other systems can
    /// replay exactly what lsmlab runs; `lsmlab run EXPERIMENT --trace FILE` replays one.
    Gen {
        /// The workload: rum-<dataset>, leaper-<workload>, ycsb-<a..f> or diol-<delay model> (see
        /// --list).
        #[arg(required_unless_present = "list")]
        workload: Option<String>,
        /// List the workloads and exit.
        #[arg(long)]
        list: bool,
        /// The trace file to write (CSV with a leading `# lsmlab-trace/1 {...}` description line).
        #[arg(long, value_name = "FILE", required_unless_present = "list")]
        out: Option<PathBuf>,
        /// The scale whose parameters shape the stream (as `lsmlab run --scale`).
        #[arg(long, value_enum, default_value_t = Scale::Small)]
        scale: Scale,
        /// The seed, as `lsmlab run --seed`: the same seed gives the stream that run replays.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Override a parameter of the experiment whose stream it is (rum-update, leaper-online,
        /// oep7-ycsb or diol), e.g. `--set records=100000`; a diol-* trace needs one
        /// `--set o3_ratios=R`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Operations to write for a leaper-* stream (endless; default: 8 warm-up phases, which
        /// covered leaper-online at tiny and small, up to 5.6; a replay that runs out stops).
        #[arg(long, value_name = "N")]
        ops: Option<u64>,
    },
    /// Summarise the criterion benches that run lsmlab beside peer crates (`make bench` runs them)
    /// into one JSON file: each operation's throughputs and the ratio lsmlab / peer.
    BenchSummary {
        /// Criterion's output directory.
        #[arg(long, default_value = "target/criterion")]
        criterion: PathBuf,
        /// The summary file to write.
        #[arg(long, default_value = "results/bench/peers.json")]
        out: PathBuf,
        /// An earlier run's summary (may be OUT itself): each row also gets that run's ratio, and
        /// a row below 1.0 in either run is listed as below the peer.
        #[arg(long)]
        previous: Option<PathBuf>,
        /// The paired rounds' directory (`engine/benches/paired.rs` writes `target/paired`): rows
        /// run paired also get the median of the rounds' ratios and its quartiles.
        #[arg(long, value_name = "DIR")]
        paired: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
struct RunArgs {
    /// The experiment (see `lsmlab list`).
    experiment: String,
    /// Size of the run: tiny (CI, seconds), small (laptop, minutes), paper (the papers' sizes).
    #[arg(long, value_enum, default_value_t = Scale::Small)]
    scale: Scale,
    /// Seed of every random choice; the same seed and parameters give the same counted results.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Override a parameter, e.g. `--set records=100000 --set strategies=Eager,UM+F`
    /// (see `lsmlab params EXPERIMENT`). Repeatable; later ones win; applied over --config.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Read parameters from FILE (JSON, or TOML when it ends in .toml) over the scale's defaults:
    /// a config printed by --print-config, a result file's `config`, or a whole result file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print the effective config (defaults of --scale, then --config, then --set) as JSON and
    /// exit without running.
    #[arg(long)]
    print_config: bool,
    /// The results directory; the file goes to DIR/<scale>/<EXPERIMENT>.json. Created if missing
    /// and checked for writing before the run starts.
    #[arg(long, value_name = "DIR", default_value = "results")]
    out: PathBuf,
    /// Run on your own data instead of the generated datasets (which are then not run). Repeatable.
    ///
    /// PATH is a file, plain or gzipped, or a directory whose files load as one dataset (every file below it
    /// with the most common extension, in path order; e.g. GeoLife's `Data` directory, whose
    /// `<user>/Trajectory/*.plt` files load with the user directory as the object id). Each PATH
    /// is one dataset, named after the file or directory; paths with the same name are
    /// told apart by their parent directories. Every PATH is checked (format, columns, first lines)
    /// before anything runs. Each dataset keeps its first `records` records in time order (see
    /// `lsmlab params`; --set records=0 keeps all), and the run says on stderr which columns it read
    /// and how many records it kept.
    #[arg(long, value_name = "PATH")]
    data: Vec<PathBuf>,
    /// Format of the --data files: snap-gowalla, chicago-csv, csv or geolife-plt (or delays).
    ///
    /// By default guessed from each PATH's name and first line; the diol experiments read only a
    /// file of delays, one integer per line, so for them `delays` is implied.
    #[arg(long, value_name = "F", requires = "data")]
    format: Option<String>,
    /// Columns of csv --data files, e.g. `oid=user,time=ts,x=lon,y=lat`; guessed from the header
    /// by default.
    ///
    /// `oid=COL,time=COL,x=COL,y=COL` (or four COLs in that order), COL a header name or a
    /// 0-based position, each column used once. `time=date+time` joins a
    /// date and a time-of-day column; `oid=@file` or `oid=@dir` takes the object id from each
    /// file's name or its directory's. By default the columns are guessed from the header's names
    /// (id: oid, uid, user, user_id, taxi_id, vehicle, id, ...; time: timestamp, datetime, time,
    /// date, date + time, ...; x: x, lon, lng, long, longitude, ...; y: y, lat, latitude, ...) and
    /// the mapping is printed; a file without a header, or whose names say nothing, stops with an
    /// error that shows its first line and a --columns to start from.
    #[arg(long, value_name = "SPEC", requires = "data")]
    columns: Option<String>,
    /// Skip malformed lines of the --data files (counted in a note) instead of failing.
    #[arg(long, requires = "data")]
    skip_malformed: bool,
    /// Replay a trace written by `lsmlab gen` instead of generating the stream. Repeatable.
    ///
    /// rum-* experiments replay rum-<dataset> traces (under the dataset name they record);
    /// leaper-online and leaper-model leaper-<workload> traces, oep7-ycsb ycsb-<a..f> traces (the
    /// traces' workloads replace the config's `workloads`); diol one diol-<delay model> trace (it
    /// replaces the o3_ratios x delay_models grid). Parameters that shaped the data the run loads
    /// (records, points, value bytes, operation counts) must be the run's: a mismatch is refused
    /// naming the --set that fixes it. Every line is checked before anything runs; a trace of
    /// another experiment's kind, a truncated one or a bad line stops the run with the file, the
    /// line and the field, and no result is written.
    #[arg(long, value_name = "FILE", conflicts_with = "data")]
    trace: Vec<PathBuf>,
    /// Print no progress on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Continue an interrupted run: skip the cells its partial result (`<result>.partial`, written
    /// after every cell) already holds. The run must be the same (experiment, scale, seed,
    /// parameters, shard, repeat, commit).
    #[arg(long)]
    resume: bool,
    /// Run only every N-th cell of the grid, starting with the K-th (1 <= K <= N), into
    /// DIR/<scale>/<EXPERIMENT>.shard-K-of-N.json; `lsmlab merge` joins the shards.
    #[arg(long, value_name = "K/N")]
    shard: Option<lsmlab_harness::cells::Shard>,
    /// Run each cell R times, repetition r with a seed derived from --seed (r = 0: the seed itself),
    /// and write the mean of each numeric field with a 95% interval (`<field>_ci95`).
    #[arg(long, value_name = "R", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
}

/// Standard output was closed by its reader (a broken pipe): the command stops printing and exits
/// quietly with status 0.
#[derive(Debug)]
struct StdoutClosed;

impl fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("standard output was closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Writes `text` to standard output. A closed pipe is [`StdoutClosed`] (never a panic, as
/// `println!` would give); any other write error names stdout.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("writing to standard output")),
    }
}

/// `println!` that ends the command quietly when standard output is closed ([`emit`]).
macro_rules! out {
    ($($arg:tt)*) => {
        emit(&format!("{}\n", format_args!($($arg)*)))?
    };
}

/// `eprintln!` that ignores a closed or failing standard error: what it says is for a reader that
/// may have gone, and it must never stop a command (a run above all).
macro_rules! note {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match execute(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`lsmlab params X | head -1`): what it read was all it wanted, and
        // whatever the command had to do (a run's result file) is done by the time it prints.
        Err(e) if e.is::<StdoutClosed>() => ExitCode::SUCCESS,
        Err(e) => {
            note!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn execute(command: Command) -> anyhow::Result<()> {
    let experiments = registry::all();
    match command {
        Command::List { of: Some(target), .. } => list_target(&target),
        Command::List {
            names,
            of: None,
            scale,
        } => list(&experiments, names, scale),
        Command::Params { experiment, scale } => params(&experiments, &experiment, scale),
        Command::Run(args) => run(&experiments, args),
        Command::Plot { results, out, scale } => {
            let scales: Vec<Scale> = scale.into_iter().collect();
            lsmlab_harness::atomic::remove_stale(&out);
            let paths = runner::plot(&experiments, &results, &out, &scales)?;
            for path in paths {
                out!("{}", path.display());
            }
            Ok(())
        }
        Command::Compare { a, b, check } => {
            let ra = ResultFile::read(&a)?;
            let rb = ResultFile::read(&b)?;
            let comparison = lsmlab_harness::compare::compare(&ra, &rb)
                .with_context(|| format!("comparing {} and {}", a.display(), b.display()))?;
            emit(&lsmlab_harness::compare::render(
                &comparison,
                &a.display().to_string(),
                &b.display().to_string(),
                &ra.experiment,
            ))?;
            if check && comparison.counted_differ() {
                anyhow::bail!(
                    "counted fields differ between {} and {}",
                    a.display(),
                    b.display()
                );
            }
            Ok(())
        }
        Command::Merge { shards, out } => {
            lsmlab_harness::merge::check_out(&shards, &out)?;
            let mut read = Vec::with_capacity(shards.len());
            for path in &shards {
                read.push((path.as_path(), ResultFile::read(path)?));
            }
            let mut merged =
                lsmlab_harness::merge::merge(&read).context("lsmlab merge failed; nothing written")?;
            if let Ok(experiment) = lsmlab::registry::find(&merged.experiment) {
                lsmlab_harness::runner::complete_grid(experiment, &mut merged)
                    .context("lsmlab merge: completing the rows of the whole grid failed; nothing written")?;
            }
            lsmlab_harness::merge::check_replaces(&merged, &out)?;
            merged.write_atomic(&out)?;
            out!("{}", out.display());
            note!(
                "merged {} shard files: {} cells, {} rows",
                shards.len(),
                merged.cells.as_ref().map_or(0, |c| c.done.len()),
                merged.rows.len()
            );
            Ok(())
        }
        Command::Gen {
            workload,
            list,
            out,
            scale,
            seed,
            sets,
            ops,
        } => {
            if list {
                for (name, about) in lsmlab::trace::workloads() {
                    out!("{name:18}  {about}");
                }
                return Ok(());
            }
            let (Some(workload), Some(out)) = (workload, out) else {
                anyhow::bail!("give a WORKLOAD and --out FILE (see lsmlab gen --list)");
            };
            let request = lsmlab::trace::GenRequest {
                workload: &workload,
                scale,
                seed,
                sets: &sets,
                ops,
            };
            let n = lsmlab::trace::generate(&request, &out)?;
            out!("{}", out.display());
            note!("{n} operations of {workload} (scale {scale}, seed {seed})");
            Ok(())
        }
        Command::BenchSummary {
            criterion,
            out,
            previous,
            paired,
        } => {
            let summary = lsmlab_harness::bench::write_summary(
                &criterion,
                &out,
                previous.as_deref(),
                paired.as_deref(),
            )?;
            for r in &summary.rows {
                let before = r
                    .previous_ratio
                    .map(|p| format!(" (previous run {p:.2}x)"))
                    .unwrap_or_default();
                let paired = r
                    .paired_ratio
                    .map(|p| format!(" (paired {p:.2}x)"))
                    .unwrap_or_default();
                out!(
                    "{:32} {:14} vs {:20} {:>6.2}x{before}{paired}",
                    r.operation,
                    r.lsmlab,
                    r.peer,
                    r.ratio
                );
            }
            note!(
                "{} rows, {} below the peer; written to {}",
                summary.rows.len(),
                summary.below_peer.len(),
                out.display()
            );
            Ok(())
        }
        Command::Report {
            results,
            plots,
            scale,
            out,
        } => {
            lsmlab_harness::atomic::remove_stale(&results);
            // One report per scale, never one mixing scales: the scale asked for, else each scale
            // found, each to its own default file (small: REPORT.md, the committed reference).
            let scales = match scale {
                Some(scale) => vec![scale],
                None => report::scales_found(&results)?,
            };
            if scales.is_empty() {
                anyhow::bail!(
                    "no result files under {}; run `lsmlab run EXPERIMENT` or `make` first",
                    results.display()
                );
            }
            if out.is_some() && scales.len() > 1 {
                let names: Vec<&str> = scales.iter().map(|s| s.as_str()).collect();
                anyhow::bail!(
                    "{} holds results of scales {}, and a report covers one scale: give --scale {} \
                     with --out, or leave out --out to write each scale's report to its own file ({})",
                    results.display(),
                    names.join(", "),
                    names.join(" or --scale "),
                    scales
                        .iter()
                        .map(|&s| format!(
                            "{s}: {}",
                            report::default_report_path(&results, Some(s)).display()
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            if !plots.is_dir() {
                anyhow::bail!(
                    "--plots {}: no such folder, so the report would link no figures; run `lsmlab plot \
                     --results {} --out {}` first, or give the folder `lsmlab plot` wrote",
                    plots.display(),
                    results.display(),
                    plots.display()
                );
            }
            let targets: Vec<(Scale, PathBuf)> = scales
                .iter()
                .map(|&s| {
                    let file = out
                        .clone()
                        .unwrap_or_else(|| report::default_report_path(&results, Some(s)));
                    (s, file)
                })
                .collect();
            // Every path checked before any is written.
            for (s, file) in &targets {
                report::check_report_path(&results, *s, file)?;
            }
            let claims = registry::claims()?;
            for (s, file) in &targets {
                if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
                    lsmlab_harness::atomic::remove_stale(dir);
                }
                let done = report::write_report(&experiments, &claims, &results, &plots, *s, file)?;
                out!("{}", file.display());
                note!(
                    "{s} report: {} ({} result file{}); {} {}",
                    done.report.as_str(),
                    done.results,
                    if done.results == 1 { "" } else { "s" },
                    done.claims_path.display(),
                    done.claims.as_str()
                );
            }
            Ok(())
        }
    }
}

/// `lsmlab list --of TARGET`: the experiments `make TARGET` runs.
fn list_target(target: &str) -> anyhow::Result<()> {
    let papers = registry::papers();
    let Some(names) = papers.target(target) else {
        let ids: Vec<&str> = papers.0.iter().map(|p| p.id).collect();
        anyhow::bail!(
            "no paper or experiment called `{target}`: the papers are {}; `lsmlab list` shows the experiments",
            ids.join(", ")
        );
    };
    for name in names {
        out!("{name}");
    }
    Ok(())
}

fn list(experiments: &[&dyn Experiment], names_only: bool, scale: Scale) -> anyhow::Result<()> {
    if names_only {
        for e in experiments {
            out!("{}", e.name());
        }
        return Ok(());
    }
    if experiments.is_empty() {
        out!("no experiments are registered in this build");
        return Ok(());
    }
    let name_width = experiments.iter().map(|e| e.name().len()).max().unwrap_or(0);
    let paper_width = experiments.iter().map(|e| e.paper().len()).max().unwrap_or(0);
    out!(
        "{:name_width$}  {:paper_width$}  {:>5}  what it measures (cells: at scale {scale} with the defaults, what --shard K/N splits)",
        "experiment",
        "paper",
        "cells"
    );
    for e in experiments {
        let cells = runner::default_cells(*e, scale).map_or_else(|_| "?".to_string(), |n| n.to_string());
        out!(
            "{:name_width$}  {:paper_width$}  {:>5}  {}",
            e.name(),
            e.paper(),
            cells,
            e.about()
        );
    }
    Ok(())
}

fn params(experiments: &[&dyn Experiment], name: &str, scale: Scale) -> anyhow::Result<()> {
    let experiment = registry::find_in(experiments, name)?;
    let keys = experiment.keys(scale)?;
    out!(
        "{} ({}) parameters at scale {scale}; change with --set KEY=VALUE or --config FILE:",
        experiment.name(),
        experiment.paper()
    );
    let key_width = keys.iter().map(|k| k.key.len()).max().unwrap_or(0);
    let defaults: Vec<String> = keys
        .iter()
        .map(|k| {
            let ty = config::type_name(&k.default);
            match config::display_value(&k.default) {
                v if v.is_empty() && k.default.is_array() => format!("{ty} = (empty)"),
                v if v.is_empty() => format!("{ty} = \"\""),
                v => format!("{ty} = {v}"),
            }
        })
        .collect();
    let default_width = defaults.iter().map(String::len).max().unwrap_or(0);
    for (key, default) in keys.iter().zip(&defaults) {
        out!(
            "  {:key_width$}  {:default_width$}  {}",
            key.key,
            default,
            key.help
        );
    }
    let cells = runner::default_cell_labels(experiment, scale)?;
    if cells.len() > 1 {
        out!(
            "cells at scale {scale} with these defaults ({n}; `--shard K/{n}` runs the K-th alone, `lsmlab merge` joins them):",
            n = cells.len()
        );
        let width = cells.len().to_string().len();
        for (k, label) in cells.iter().enumerate() {
            out!("  {:>width$}  {label}", k + 1);
        }
    } else {
        out!("cells at scale {scale} with these defaults: 1 (the whole run)");
    }
    Ok(())
}

fn run(experiments: &[&dyn Experiment], args: RunArgs) -> anyhow::Result<()> {
    let experiment = registry::find_in(experiments, &args.experiment)?;
    let mut data: Vec<DataSpec> = args
        .data
        .iter()
        .map(|path| DataSpec {
            path: path.clone(),
            format: args.format.clone(),
            columns: args.columns.clone(),
            skip_malformed: args.skip_malformed,
        })
        .collect();
    data.extend(args.trace.iter().map(|path| DataSpec {
        path: path.clone(),
        format: Some(lsmlab::trace::TRACE_FORMAT.to_string()),
        columns: None,
        skip_malformed: false,
    }));
    let config_file = args.config.as_deref().map(ConfigFile::read).transpose()?;
    let request = runner::RunRequest {
        scale: args.scale,
        seed: args.seed,
        sets: args.sets,
        out_dir: args.out,
        data,
        sweep: runner::Sweep {
            resume: args.resume,
            shard: args.shard,
            repeat: args.repeat,
        },
    };
    // Every trace the run would replay (`--trace`, or a config file's data) is one of the
    // experiment's kind and is read whole, every line checked, before anything runs.
    // `--data` is checked against what the experiment reads (refused where it would be ignored).
    let data = runner::data_for(experiment, &request, config_file.as_ref())?;
    let traces: Vec<std::path::PathBuf> = lsmlab::trace::trace_paths(&data)
        .into_iter()
        .map(std::path::Path::to_path_buf)
        .collect();
    lsmlab::trace::check_for(experiment.name(), &traces)?;
    lsmlab_harness::trace::check_seed(&traces, request.seed)?;
    if args.print_config {
        let config =
            runner::resolve_config(experiment, request.scale, &request.overlay(config_file.as_ref()))?;
        out!("{}", serde_json::to_string_pretty(&config)?);
        return Ok(());
    }
    let progress = Progress::new(args.quiet);
    // Ctrl-C: say what is saved and how to resume, then exit as an interrupted command does (130).
    // Cells are saved atomically after each one, so what the note counts is on disk.
    let _ = ctrlc::set_handler(|| {
        eprintln!("{}", runner::interrupted_note());
        std::process::exit(130);
    });
    lsmlab_harness::atomic::remove_stale(&request.out_dir);
    let path = runner::run_with(experiment, &request, config_file.as_ref(), &progress);
    progress.finish();
    let path =
        path.with_context(|| format!("lsmlab run {} failed; no result file written", experiment.name()))?;
    out!("{}", path.display());
    Ok(())
}
