//! User data files (`--data PATH`) turned into datasets.

use crate::experiment::DataSpec;
use anyhow::Context;
use lsmlab_workloads::load::{guess, load, CsvColumns, Format, LoadOptions};
use lsmlab_workloads::Trajectories;

/// Loads one `--data` file; returns the dataset and notes for the result (skipped lines, ...).
/// `limit` keeps the first records in time order (the start of the replayed stream).
pub fn load_trajectories(
    spec: &DataSpec,
    limit: Option<usize>,
) -> anyhow::Result<(Trajectories, Vec<String>)> {
    let format = match &spec.format {
        Some(f) => f.parse::<Format>()?,
        None => guess(&spec.path).with_context(|| {
            format!(
                "cannot tell the format of {} from its name; pass --format snap-gowalla, chicago-csv or csv",
                spec.path.display()
            )
        })?,
    };
    let columns = spec
        .columns
        .as_deref()
        .map(|c| c.parse::<CsvColumns>())
        .transpose()?;
    let opts = LoadOptions {
        format,
        columns,
        skip_malformed: spec.skip_malformed,
        limit,
        taxis: None,
    };
    let (t, report) = load(&spec.path, &opts).with_context(|| format!("loading {}", spec.path.display()))?;
    let mut notes = vec![format!(
        "{}: loaded {} records of {} objects from {} ({} lines, {} malformed lines skipped, {} without \
         coordinates skipped)",
        t.name,
        report.records,
        t.objects(),
        spec.path.display(),
        report.lines,
        report.skipped_malformed,
        report.skipped_missing
    )];
    notes.extend(report.notes.iter().map(|n| format!("{}: {n}", t.name)));
    Ok((t, notes))
}
