//! The trace format: `lsmlab gen WORKLOAD --out FILE` writes the operation stream an experiment
//! runs as CSV, so another system can replay exactly what lsmlab ran, and `lsmlab run --trace FILE`
//! replays one instead of generating it.
//!
//! A trace is plain text: a first line `# lsmlab-trace/1 {...}` whose JSON says what the stream is
//! (workload, the experiment whose stream it is, scale, seed, the parameters that shaped it), then
//! a CSV header with the column names, then one operation per line. Lines are written as they are
//! generated into a temporary file renamed into place once complete.
//!
//! What the streams are belongs to the papers: each [`TraceFamily`] (its workloads are
//! `<family>-<name>`) writes its streams, checks its files line by line, and says which
//! experiments replay it. [`TraceFamilies`] dispatches `gen`, the checks before a run and the
//! refusals over the families the binary registers. This module gives them the format: the
//! header ([`write_header`], [`read_header`]), the data lines ([`Lines`], [`Fields`], at most
//! [`MAX_LINE`] bytes each) and the description's parameters ([`param_u64`], [`must_match`]).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::Value;

use crate::data::TRACE_FORMAT;
use crate::experiment::{DataSpec, Scale};

/// The first word of a trace's first line.
pub const MAGIC: &str = "# lsmlab-trace/1 ";

/// What `lsmlab gen` was asked for.
pub struct GenRequest<'a> {
    /// The experiment (workload) whose operation stream is written.
    pub workload: &'a str,
    /// The scale whose config is used.
    pub scale: Scale,
    /// The seed of the stream.
    pub seed: u64,
    /// `--set` arguments for the experiment whose stream is written.
    pub sets: &'a [String],
    /// Operations to write (Leaper streams, which are endless; default: the warm-up phase's).
    pub ops: Option<u64>,
}

/// Writes a trace's first two lines: the description and the column names.
pub fn write_header(w: &mut impl Write, meta: &Value, columns: &[&str]) -> anyhow::Result<()> {
    writeln!(w, "{MAGIC}{meta}")?;
    writeln!(w, "{}", columns.join(","))?;
    Ok(())
}

/// The header of a trace file: its JSON description and its column names.
pub fn read_header(path: &Path) -> anyhow::Result<(Value, Vec<String>)> {
    let file = File::open(path).with_context(|| format!("opening trace {}", path.display()))?;
    let mut lines = BufReader::new(file).lines();
    let first = lines
        .next()
        .transpose()
        .with_context(|| format!("{}:1: unreadable (not UTF-8 text?)", path.display()))?
        .with_context(|| format!("{}: empty file, not an lsmlab trace", path.display()))?;
    let meta = first.strip_prefix(MAGIC).with_context(|| {
        format!(
            "{}:1: not an lsmlab trace (the first line must start with `{}`; `lsmlab gen` writes them)",
            path.display(),
            MAGIC.trim()
        )
    })?;
    let meta: Value = serde_json::from_str(meta)
        .with_context(|| format!("{}:1: the trace's description is not JSON", path.display()))?;
    let columns = lines
        .next()
        .transpose()
        .with_context(|| format!("{}:2: unreadable (not UTF-8 text?)", path.display()))?
        .with_context(|| format!("{}:2: no column header", path.display()))?;
    Ok((meta, columns.split(',').map(|c| c.trim().to_string()).collect()))
}

/// A trace's data lines read one at a time (the description and column lines skipped), at most
/// [`MAX_LINE`] bytes of a line ever held; each comes with its 1-based line number.
pub struct Lines {
    path: PathBuf,
    reader: BufReader<File>,
    buf: Vec<u8>,
    line: usize,
}

impl Lines {
    /// The data lines of `path` (the first two lines, description and columns, are skipped).
    pub fn open(path: &Path) -> anyhow::Result<Lines> {
        let file = File::open(path).with_context(|| format!("opening trace {}", path.display()))?;
        let mut lines = Lines {
            path: path.to_path_buf(),
            reader: BufReader::new(file),
            buf: Vec::new(),
            line: 0,
        };
        for _ in 0..2 {
            if lines.raw()?.is_none() {
                break;
            }
        }
        Ok(lines)
    }

    fn raw(&mut self) -> anyhow::Result<Option<()>> {
        self.buf.clear();
        self.line += 1;
        let (p, n) = (self.path.display(), self.line);
        let read = (&mut self.reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .with_context(|| format!("{p}:{n}: unreadable line"))?;
        if read == 0 {
            return Ok(None);
        }
        if self.buf.len() > MAX_LINE {
            bail!("{p}:{n}: line longer than {MAX_LINE} bytes");
        }
        Ok(Some(()))
    }

    /// The next data line without its line end, with its line number; `None` at the end.
    pub fn next_line(&mut self) -> anyhow::Result<Option<(usize, &str)>> {
        if self.raw()?.is_none() {
            return Ok(None);
        }
        let n = self.line;
        let line = std::str::from_utf8(&self.buf)
            .map_err(|_| anyhow::anyhow!("{}:{n}: not UTF-8 text", self.path.display()))?
            .trim_end_matches(['\n', '\r']);
        Ok(Some((n, line)))
    }

    /// The line number of the last line read.
    pub fn line(&self) -> usize {
        self.line
    }
}

/// A data line split into its fields, checked against the columns, for parsing with errors that
/// name the file, the line and the field.
pub struct Fields<'a> {
    at: String,
    columns: &'a [&'a str],
    fields: Vec<&'a str>,
}

impl<'a> Fields<'a> {
    /// Splits line `n` of `path` at commas; fails unless it has one field per column.
    pub fn split(path: &Path, n: usize, line: &'a str, columns: &'a [&'a str]) -> anyhow::Result<Fields<'a>> {
        let at = format!("{}:{n}", path.display());
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != columns.len() {
            bail!(
                "{at}: {} fields, expected {} ({})",
                fields.len(),
                columns.len(),
                columns.join(",")
            );
        }
        Ok(Fields { at, columns, fields })
    }

    /// An error saying field `col` is not `what`.
    pub fn bad(&self, col: usize, what: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "{}: field `{}`: `{}` is not {what}",
            self.at,
            self.columns[col],
            self.fields[col]
        )
    }

    /// `file:line`, for errors about the line as a whole.
    pub fn at(&self) -> &str {
        &self.at
    }

    /// Field `col` as text.
    pub fn str(&self, col: usize) -> &'a str {
        self.fields[col]
    }

    /// Field `col` as a `u64`; `what` names the expectation in the error.
    pub fn u64(&self, col: usize, what: &str) -> anyhow::Result<u64> {
        self.fields[col].parse().map_err(|_| self.bad(col, what))
    }
}

/// The trace files among a run's data files (`--trace`).
pub fn trace_paths(data: &[DataSpec]) -> Vec<&Path> {
    data.iter()
        .filter(|d| d.format.as_deref() == Some(TRACE_FORMAT))
        .map(|d| d.path.as_path())
        .collect()
}

/// A number of the description's `params`.
pub fn param_u64(path: &Path, meta: &Value, key: &str) -> anyhow::Result<u64> {
    meta["params"][key].as_u64().with_context(|| {
        format!(
            "{}:1: the description's params lack `{key}` (an integer >= 0)",
            path.display()
        )
    })
}

/// Refuses a trace whose `key` differs from the run's: it shaped the stream or the data it runs on.
pub fn must_match(
    path: &Path,
    key: &str,
    trace: impl std::fmt::Display,
    run: impl std::fmt::Display,
) -> anyhow::Result<()> {
    let (t, r) = (trace.to_string(), run.to_string());
    if t != r {
        bail!(
            "{}: the trace was written with {key} = {t}, the run has {key} = {r}: run with --set {key}={t} \
             (or write the trace with the run's parameters)",
            path.display()
        );
    }
    Ok(())
}

/// Refuses a trace written with another seed than the run's `--seed`: its stream is that seed's,
/// so the run would record one seed and replay another's operations. A description without a
/// seed (a trace from elsewhere) passes.
pub fn check_seed(traces: &[PathBuf], seed: u64) -> anyhow::Result<()> {
    for path in traces {
        let (meta, _) = read_header(path)?;
        if let Some(written) = meta.get("seed").and_then(Value::as_u64) {
            if written != seed {
                bail!(
                    "{}: the trace was written with seed {written}, the run has --seed {seed}: run with \
                     --seed {written} (or write the trace with `lsmlab gen ... --seed {seed}`)",
                    path.display()
                );
            }
        }
    }
    Ok(())
}

/// The longest line a trace reader accepts (as the data loaders cap theirs).
pub const MAX_LINE: usize = 1 << 20;

/// One paper's kind of trace: the workloads `<name>-<...>` it writes and the experiments that
/// replay them.
pub trait TraceFamily: Sync {
    /// The family's name, the prefix of its workloads (`rum` for `rum-gowalla`).
    fn name(&self) -> &'static str;
    /// Its workloads with what each is, as `lsmlab gen --list` shows them.
    fn workloads(&self) -> Vec<(&'static str, &'static str)>;
    /// Whether `experiment` replays this family's traces.
    fn replayed_by(&self, experiment: &str) -> bool;
    /// Who replays them, in words (`rum-* experiments`), for the refusals.
    fn replayers(&self) -> &'static str;
    /// Why `experiment`, one of this family's paper's, replays no trace, when the family can say
    /// more than the general refusal.
    fn refusal(&self, _experiment: &str) -> Option<String> {
        None
    }
    /// Writes the stream of `req.workload` (one of [`TraceFamily::workloads`]): header and
    /// lines; returns the operations written.
    fn generate(&self, req: &GenRequest, w: &mut dyn Write) -> anyhow::Result<u64>;
    /// Reads a trace of this family whole, checking every line.
    fn check(&self, path: &Path) -> anyhow::Result<()>;
}

/// The trace families a build knows, as `lsmlab gen` and `lsmlab run --trace` see them.
#[derive(Clone, Copy)]
pub struct TraceFamilies<'a>(pub &'a [&'a dyn TraceFamily]);

impl<'a> TraceFamilies<'a> {
    /// Every workload of every family, in the families' order.
    pub fn workloads(&self) -> Vec<(&'static str, &'static str)> {
        self.0.iter().flat_map(|f| f.workloads()).collect()
    }

    /// The family of a workload name (`rum-gowalla`: `rum`).
    pub fn family(&self, workload: &str) -> Option<&'a dyn TraceFamily> {
        self.0.iter().copied().find(|f| {
            workload
                .strip_prefix(f.name())
                .is_some_and(|rest| rest.starts_with('-'))
        })
    }

    /// The `workload` of a trace's description, one of a known family.
    pub fn workload_of(&self, path: &Path, meta: &Value) -> anyhow::Result<String> {
        let w = meta["workload"].as_str().with_context(|| {
            format!(
                "{}:1: the description lacks `workload` (a string such as `leaper-synthetic`)",
                path.display()
            )
        })?;
        if self.family(w).is_none() {
            bail!(
                "{}:1: the description's workload `{w}` is none lsmlab writes (`lsmlab gen --list`)",
                path.display()
            );
        }
        Ok(w.to_string())
    }

    /// The family `experiment` replays, or what it says when it replays none.
    pub fn family_of_experiment(&self, experiment: &str) -> Result<&'a dyn TraceFamily, String> {
        if let Some(f) = self.0.iter().copied().find(|f| f.replayed_by(experiment)) {
            return Ok(f);
        }
        if let Some(why) = self.0.iter().find_map(|f| f.refusal(experiment)) {
            return Err(why);
        }
        let replays: Vec<String> = self
            .0
            .iter()
            .map(|f| format!("{} replay {}-* traces", f.replayers(), f.name()))
            .collect();
        Err(format!(
            "`{experiment}` generates no stream a trace holds; {}",
            replays.join(", ")
        ))
    }

    /// Checks that every trace is one `experiment` replays (its description's workload family) and
    /// reads each whole (every line checked), before anything runs.
    pub fn check_for(&self, experiment: &str, traces: &[PathBuf]) -> anyhow::Result<()> {
        if traces.is_empty() {
            return Ok(());
        }
        let want = self
            .family_of_experiment(experiment)
            .map_err(|why| anyhow::anyhow!("--trace: `{experiment}` does not replay traces: {why}"))?;
        for path in traces {
            let (meta, _) = read_header(path)?;
            let w = self.workload_of(path, &meta)?;
            if self.family(&w).map(|f| f.name()) != Some(want.name()) {
                bail!(
                    "{}:1: a {w} trace; `{experiment}` replays {}-* traces (`lsmlab gen --list`)",
                    path.display(),
                    want.name()
                );
            }
            want.check(path)
                .with_context(|| format!("checking --trace {}", path.display()))?;
        }
        Ok(())
    }

    /// Reads a trace whole, checking every line, whatever its family.
    pub fn check(&self, path: &Path) -> anyhow::Result<()> {
        let (meta, _) = read_header(path)?;
        let w = self.workload_of(path, &meta)?;
        self.family(&w)
            .with_context(|| format!("no trace family for workload `{w}`"))?
            .check(path)
    }

    /// Writes the trace of `req.workload` to `out` atomically; returns the operations written.
    pub fn generate(&self, req: &GenRequest, out: &Path) -> anyhow::Result<u64> {
        let family = self
            .family(req.workload)
            .filter(|f| f.workloads().iter().any(|(w, _)| *w == req.workload));
        let Some(family) = family else {
            let names: Vec<&str> = self.workloads().iter().map(|w| w.0).collect();
            bail!(
                "unknown workload `{}`; workloads: {} (`lsmlab gen --list` says what each is)",
                req.workload,
                names.join(", ")
            );
        };
        let mut written = 0;
        crate::atomic::write_with(out, |tmp| {
            let mut w = BufWriter::new(File::create(tmp)?);
            written = family.generate(req, &mut w)?;
            w.flush()?;
            Ok(())
        })
        .with_context(|| format!("writing trace {}", out.display()))?;
        Ok(written)
    }
}
