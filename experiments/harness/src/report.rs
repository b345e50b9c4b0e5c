//! `lsmlab report`: REPORT.md, opening with the papers' claims counted by verdict, then the claims
//! judged per paper, then one section per result file, each with its figures.
//!
//! The runner writes each section's level-2 heading and a line of run metadata; an experiment's
//! [`Experiment::report`] supplies the body (use level-3 headings inside it). If the body starts
//! with its own heading, that heading is kept instead of the runner's.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context};

use crate::claims::ClaimSet;
use crate::experiment::{Experiment, Row, Scale};
use crate::plot::markdown_table;
use crate::result::{find_result_files, now_rfc3339, ResultFile};
pub use crate::rows::value_text;
use crate::runner::FigureManifest;

/// A Markdown table of `rows` with the given columns (all columns, in first-seen order, when
/// `columns` is empty); a field a row lacks is left blank.
pub fn rows_table(rows: &[Row], columns: &[&str]) -> String {
    let columns: Vec<String> = if columns.is_empty() {
        let mut seen: Vec<String> = Vec::new();
        for key in rows.iter().flat_map(|r| r.keys()) {
            if !seen.contains(key) {
                seen.push(key.clone());
            }
        }
        seen
    } else {
        columns.iter().map(|c| c.to_string()).collect()
    };
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            columns
                .iter()
                .map(|c| row.get(c).map(value_text).unwrap_or_default())
                .collect()
        })
        .collect();
    markdown_table(&columns, &cells)
}

/// `, 41.2 CPU-s, peak 612 MiB against an estimate of 1.90 GiB`: what the run's cells cost, where
/// each recorded it (results written before lsmlab recorded it say nothing).
fn cost(result: &ResultFile) -> String {
    let Some(log) = &result.cells else {
        return String::new();
    };
    let mut text = log.cpu_s().map_or(String::new(), |s| format!(", {s:.1} CPU-s"));
    if let Some((peak, cell)) = log.peak() {
        text += &format!(", peak {}", crate::usage::size(peak));
        if log.done.len() > 1 {
            text += &format!(" ({})", cell.label);
        }
        if let Some(e) = log.memory_estimate_bytes {
            text += &format!(" against an estimate of {}", crate::usage::size(e));
        }
    }
    text
}

/// The section for a result whose experiment this build does not know: its config and rows.
fn generic_section(result: &ResultFile) -> String {
    let mut out = String::from("_This build has no experiment of this name; showing the raw result._\n\n");
    let config: Vec<Vec<String>> = result
        .config
        .iter()
        .map(|(k, v)| vec![k.clone(), value_text(v)])
        .collect();
    out += &markdown_table(&["parameter".to_string(), "value".to_string()], &config);
    out += "\n";
    out += &rows_table(&result.rows, &[]);
    out
}

/// `target` relative to the directory `base`, for links in the report; absolute when no relative
/// path can be found.
fn relative_link(target: &Path, base: &Path) -> String {
    let (Ok(target_abs), Ok(base_abs)) = (target.canonicalize(), base.canonicalize()) else {
        return target.display().to_string();
    };
    let t: Vec<Component> = target_abs.components().collect();
    let b: Vec<Component> = base_abs.components().collect();
    let common = t.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut rel = PathBuf::new();
    for _ in common..b.len() {
        rel.push("..");
    }
    for c in &t[common..] {
        rel.push(c);
    }
    rel.to_string_lossy().replace('\\', "/")
}

/// Where the report of one scale goes by default: `REPORT.md` (in the working directory, the
/// project root under `make`) for the small scale, whose report is the committed reference, and for
/// a report of every scale (`None`); `<results_dir>/<scale>/REPORT.md` for any other scale, beside
/// that scale's results, so that a tiny or paper run never rewrites the reference.
pub fn default_report_path(results_dir: &Path, scale: Option<Scale>) -> PathBuf {
    match scale {
        None | Some(Scale::Small) => PathBuf::from("REPORT.md"),
        Some(scale) => results_dir.join(scale.as_str()).join("REPORT.md"),
    }
}

/// The scales that have result files under `results_dir`, in [`Scale::ALL`] order.
pub fn scales_found(results_dir: &Path) -> anyhow::Result<Vec<Scale>> {
    let mut found = Vec::new();
    for scale in Scale::ALL {
        if !find_result_files(results_dir, &[scale])?.is_empty() {
            found.push(scale);
        }
    }
    Ok(found)
}

/// Whether [`write_report`] replaced a file or left it as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The file was written (it was missing, or what it says changed).
    Written,
    /// The file already said exactly this (only its generation time would have changed), so it
    /// was left as it was: a report of unchanged results changes no committed file.
    Unchanged,
}

impl Outcome {
    /// `written` or `unchanged`, as the command says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Written => "written",
            Outcome::Unchanged => "unchanged",
        }
    }
}

/// What [`write_report`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The result files the report covers.
    pub results: usize,
    /// The report file.
    pub report: Outcome,
    /// The claims evaluation beside the results ([`crate::claims::FILE_NAME`]).
    pub claims_path: PathBuf,
    /// Whether the claims evaluation was rewritten.
    pub claims: Outcome,
}

/// Refuses a report path that would replace one of the report's inputs or the reference report of
/// another scale: a `.json` path (result files and the claims evaluation are JSON; a report is
/// Markdown), an existing directory, and, for a scale other than small, the small scale's
/// [`default_report_path`] (`REPORT.md`, the committed reference).
pub fn check_report_path(results_dir: &Path, scale: Scale, out_file: &Path) -> anyhow::Result<()> {
    if out_file.is_dir() {
        bail!(
            "--out {} is a directory; give the report's file name, e.g. {}",
            out_file.display(),
            out_file.join("REPORT.md").display()
        );
    }
    if out_file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        bail!(
            "--out {}: a report is Markdown, and a .json path is where results and the claims \
             evaluation live (a report there would replace one, or be read as one); give a .md path such as {}",
            out_file.display(),
            default_report_path(results_dir, Some(scale)).display()
        );
    }
    let reference = default_report_path(results_dir, Some(Scale::Small));
    if scale != Scale::Small && same_file(out_file, &reference) {
        bail!(
            "--out {}: that is the report of scale small (the committed reference), and this is the \
             {scale} report; leave out --out to write {}, or give another file",
            out_file.display(),
            default_report_path(results_dir, Some(scale)).display()
        );
    }
    Ok(())
}

/// Whether two paths name the same file (both absolute, through the working directory, with `.`
/// and `..` resolved as far as the paths exist).
pub fn same_file(a: &Path, b: &Path) -> bool {
    let full = |p: &Path| -> PathBuf {
        if let Ok(c) = p.canonicalize() {
            return c;
        }
        // A missing file: its directory resolved, then its name.
        match (p.parent(), p.file_name()) {
            (Some(dir), Some(name)) => {
                let dir = if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                };
                dir.canonicalize()
                    .map(|d| d.join(name))
                    .unwrap_or_else(|_| p.to_path_buf())
            }
            _ => p.to_path_buf(),
        }
    };
    full(a) == full(b)
}

/// Writes `text` to `path` unless the file already holds it with only its generation time
/// (`stamp`, which occurs in `text`) different; `old_stamp` finds that time in the old text.
fn write_unless_same(
    path: &Path,
    text: &str,
    stamp: &str,
    old_stamp: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<Outcome> {
    if let Ok(old) = fs::read_to_string(path) {
        if let Some(old_stamp) = old_stamp(&old) {
            if text.replacen(stamp, &old_stamp, 1) == old {
                return Ok(Outcome::Unchanged);
            }
        }
    }
    crate::atomic::write(path, text.as_bytes())?;
    Ok(Outcome::Written)
}

/// The text between `before` and `after` in `text`, when both are there.
fn between(text: &str, before: &str, after: &str) -> Option<String> {
    let start = text.find(before)? + before.len();
    let len = text[start..].find(after)?;
    Some(text[start..start + len].to_string())
}

/// Writes the report of the results of `scale` under `results_dir` to `out_file` (one scale per
/// report: a report never mixes scales), linking figures found under `plots_dir` by paths
/// relative to the report's directory, and the claims evaluation beside those results. A file
/// that would change only in its generation time is left as it was ([`Outcome::Unchanged`]).
pub fn write_report(
    experiments: &[&dyn Experiment],
    claims: &[ClaimSet],
    results_dir: &Path,
    plots_dir: &Path,
    scale: Scale,
    out_file: &Path,
) -> anyhow::Result<Written> {
    check_report_path(results_dir, scale, out_file)?;
    let files = find_result_files(results_dir, &[scale])?;
    if files.is_empty() {
        bail!(
            "no result files under {} for scale {scale}; run `lsmlab run EXPERIMENT --scale {scale}` or \
             `make SCALE={scale}` first",
            results_dir.display()
        );
    }
    // A result file that cannot be read is skipped with a warning; the report covers the rest and
    // the call fails after writing it, naming every skipped file.
    let mut results = Vec::with_capacity(files.len());
    let mut unreadable = Vec::new();
    for file in &files {
        match ResultFile::read(file) {
            Ok(result) => results.push(result),
            Err(e) => {
                // A closed stderr must not stop the report (nor panic, as eprintln! would).
                let _ = writeln!(std::io::stderr(), "warning: skipping {}: {e:#}", file.display());
                unreadable.push(format!("{e:#}"));
            }
        }
    }
    if results.is_empty() {
        bail!(
            "none of the {} result files under {} could be read, so no report was written:\n  {}",
            files.len(),
            results_dir.display(),
            unreadable.join("\n  ")
        );
    }
    // Scale, then the registry's (paper) order, so each paper's sections read as its evaluation does;
    // experiments this build does not know go last, by name.
    let rank = |name: &str| {
        experiments
            .iter()
            .position(|e| e.name() == name)
            .unwrap_or(usize::MAX)
    };
    results.sort_by(|a, b| {
        (a.scale, rank(&a.experiment), &a.experiment).cmp(&(b.scale, rank(&b.experiment), &b.experiment))
    });
    let report_dir = match out_file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&report_dir).with_context(|| format!("creating {}", report_dir.display()))?;

    // The papers' claims, judged; the evaluation goes beside the results it judged.
    let sets = claims;
    let mut tallies = String::new();
    let mut claim_sections = String::new();
    let claims_path = results_dir.join(scale.as_str()).join(crate::claims::FILE_NAME);
    let claims_outcome;
    {
        let here = &results;
        let evaluation = crate::claims::evaluate(sets, here, scale);
        let path = claims_path.clone();
        let mut json = serde_json::to_string_pretty(&evaluation)?;
        json.push('\n');
        let stamp = format!("\"generated_at\": \"{}\"", evaluation.generated_at);
        claims_outcome = write_unless_same(&path, &json, &stamp, |old| {
            between(old, "\"generated_at\": \"", "\"").map(|t| format!("\"generated_at\": \"{t}\""))
        })?;
        let mut papers: Vec<String> = here.iter().map(|r| r.paper.clone()).collect();
        papers.dedup();
        let tables = evaluation.markdown(sets, &papers);
        let link = relative_link(&path, &report_dir);
        if !tables.is_empty() {
            let heading = format!("Claims ({scale})");
            writeln!(
                tallies,
                "The papers' claims at scale {scale}, by verdict ([{heading}](#{})); the last row counts, apart \
                 from the total, the claim groups lsmlab adds (like-for-like pairings, other readings of a rule, \
                 counterfactual settings):\n\n{}",
                anchor(&heading),
                evaluation.tally_markdown(sets, &papers)
            )?;
            writeln!(
                claim_sections,
                "\n## {heading}\n\nEach paper claim judged from the rows of this scale's results \
                 ([{link}]({link})); the rules are in `experiments/harness/src/claims.rs`: {}\n",
                crate::claims::RULES
            )?;
            claim_sections += &tables;
        }
    }

    let mut md = String::new();
    writeln!(md, "# lsmlab report\n")?;
    md += &tallies;
    let generated = now_rfc3339();
    writeln!(
        md,
        "Generated {generated} by `lsmlab report` from the result files under `{}`, with figures from `{}`. \
         Counted figures (pages, hits, flushes) are deterministic for a seed; times depend on the \
         machine named in each section.\n",
        results_dir.display(),
        plots_dir.display()
    )?;
    let summary: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            vec![
                format!("[{}](#{})", r.experiment, anchor(&heading(r))),
                r.paper.clone(),
                r.scale.to_string(),
                r.seed.to_string(),
                r.rows.len().to_string(),
                format!("{:.1}", r.duration_s),
                r.started_at.clone(),
            ]
        })
        .collect();
    let headers = [
        "experiment",
        "paper",
        "scale",
        "seed",
        "rows",
        "duration (s)",
        "started",
    ];
    md += &markdown_table(&headers.map(String::from), &summary);
    md += &claim_sections;

    for result in &results {
        md += "\n";
        md += &section(experiments, result, plots_dir, &report_dir)?;
    }
    let stamp = format!("Generated {generated} by `lsmlab report`");
    let report = write_unless_same(out_file, &md, &stamp, |old| {
        between(old, "\nGenerated ", " by `lsmlab report`")
            .map(|t| format!("Generated {t} by `lsmlab report`"))
    })?;
    if !unreadable.is_empty() {
        bail!(
            "wrote {} covering {} result files, but skipped {} it could not read:\n  {}",
            out_file.display(),
            results.len(),
            unreadable.len(),
            unreadable.join("\n  ")
        );
    }
    Ok(Written {
        results: results.len(),
        report,
        claims_path,
        claims: claims_outcome,
    })
}

fn heading(result: &ResultFile) -> String {
    format!("{} ({}, {})", result.experiment, result.paper, result.scale)
}

/// GitHub's heading anchor: lower case, spaces to dashes, punctuation other than `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn section(
    experiments: &[&dyn Experiment],
    result: &ResultFile,
    plots_dir: &Path,
    report_dir: &Path,
) -> anyhow::Result<String> {
    let body = match experiments.iter().find(|e| e.name() == result.experiment) {
        Some(experiment) => experiment.report(result),
        None => generic_section(result),
    };
    let (head, body) = match body.trim_start().strip_prefix('#') {
        Some(_) => {
            let body = body.trim_start();
            let (first, rest) = body.split_once('\n').unwrap_or((body, ""));
            (first.to_string(), rest.to_string())
        }
        None => (format!("## {}", heading(result)), body),
    };
    let mut out = format!("{head}\n\n");
    let git = if result.git.dirty {
        format!("{} (dirty)", result.git.commit)
    } else {
        result.git.commit.clone()
    };
    writeln!(
        out,
        "_Scale {}, seed {}, {} rows in {:.1} s{}, started {}; commit {}; {} ({} cores, {:.1} GiB) on {}._\n",
        result.scale,
        result.seed,
        result.rows.len(),
        result.duration_s,
        cost(result),
        result.started_at,
        git,
        result.machine.cpu,
        result.machine.cores,
        result.machine.memory_bytes as f64 / (1u64 << 30) as f64,
        result.machine.os
    )?;
    out += body.trim();
    out += "\n";
    // Notes the experiment's own section already shows (its observations) are not repeated.
    let notes: Vec<&String> = result
        .notes
        .iter()
        .filter(|n| !body.contains(n.as_str()))
        .collect();
    if !notes.is_empty() {
        out += "\nNotes:\n\n";
        for note in notes {
            writeln!(out, "- {note}")?;
        }
    }
    out += &figures_markdown(result.scale, &result.experiment, plots_dir, report_dir)?;
    Ok(out)
}

fn figures_markdown(
    scale: Scale,
    experiment: &str,
    plots_dir: &Path,
    report_dir: &Path,
) -> anyhow::Result<String> {
    let dir = plots_dir.join(scale.as_str());
    let Some(manifest) = FigureManifest::read(&dir, experiment)? else {
        return Ok(format!(
            "\n_No figures yet: run `lsmlab plot --scale {scale}`._\n"
        ));
    };
    let mut out = String::from("\nFigures:\n\n");
    for png in manifest.figures.iter().filter(|f| f.ends_with(".png")) {
        let path = dir.join(png);
        let stem = png.trim_end_matches(".png");
        let svg = dir.join(format!("{stem}.svg"));
        write!(out, "![{stem}]({})", relative_link(&path, report_dir))?;
        if svg.is_file() {
            write!(out, " ([SVG]({}))", relative_link(&svg, report_dir))?;
        }
        out += "\n\n";
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::RowBuilder;
    use crate::progress::Progress;
    use crate::runner::{plot, run, RunRequest};
    use crate::testing::{FAKE, OTHER};
    use serde_json::Value;

    #[test]
    fn a_sections_line_gives_the_cells_cpu_and_largest_peak_beside_the_estimate() {
        use crate::result::{CellLog, CellRecord};
        let cell = |index: usize, label: &str, cpu_s: f64, peak: u64| CellRecord {
            index,
            label: label.into(),
            rows: 0,
            duration_s: 1.0,
            cpu_s: Some(cpu_s),
            peak_rss_bytes: Some(peak),
        };
        let mut result = crate::testing::sample_result();
        assert_eq!(cost(&result), "", "a result without cells says nothing");
        result.cells = Some(CellLog {
            total: 2,
            shard: None,
            repeat: 1,
            done: vec![
                cell(0, "strategies=Eager", 2.5, 700 << 20),
                cell(1, "strategies=UM", 1.0, 3 << 29),
            ],
            memory_estimate_bytes: Some(2 << 30),
            grid_rows: 0,
        });
        assert_eq!(
            cost(&result),
            ", 3.5 CPU-s, peak 1.50 GiB (strategies=UM) against an estimate of 2.00 GiB"
        );
        // A cell written before cells recorded their cost: no sum, no peak.
        let log = result.cells.as_mut().unwrap();
        log.done[0].cpu_s = None;
        log.done[1].peak_rss_bytes = None;
        assert_eq!(cost(&result), "");
    }

    #[test]
    fn rows_table_uses_all_columns_in_first_seen_order() {
        let rows = vec![
            RowBuilder::new()
                .str("strategy", "Eager")
                .num("ms", 1500.0)
                .build(),
            RowBuilder::new()
                .str("strategy", "UM")
                .int("flushes", 3u64)
                .build(),
        ];
        let table = rows_table(&rows, &[]);
        let header = table.lines().next().unwrap();
        assert!(
            header.contains("ms") && header.contains("strategy") && header.contains("flushes"),
            "{table}"
        );
        assert!(table.contains("1,500"), "{table}");
        assert!(rows_table(&rows, &["strategy"])
            .lines()
            .all(|l| !l.contains("ms")));
    }

    #[test]
    fn report_has_a_section_per_result_with_figure_links() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results");
        let plots = dir.path().join("plots");
        let request = RunRequest {
            scale: Scale::Tiny,
            seed: 42,
            sets: vec![],
            out_dir: results.clone(),
            data: vec![],
            sweep: Default::default(),
        };
        run(&FAKE, &request, &Progress::silent()).unwrap();
        run(&OTHER, &request, &Progress::silent()).unwrap();
        let experiments: Vec<&dyn Experiment> = vec![&FAKE, &OTHER];
        plot(&experiments, &results, &plots, &[]).unwrap();

        let out = dir.path().join("REPORT.md");
        assert_eq!(
            write_report(&experiments, &[], &results, &plots, Scale::Tiny, &out)
                .unwrap()
                .results,
            2
        );
        let md = fs::read_to_string(&out).unwrap();
        assert!(md.starts_with("# lsmlab report"));
        assert!(
            md.contains("## fake (Fake paper, tiny)") && md.contains("## other (Fake paper, tiny)"),
            "{md}"
        );
        assert!(md.contains("](#fake-fake-paper-tiny)"), "{md}");
        assert!(md.contains("Fake rows:") && md.contains("UM+F"), "{md}");
        assert!(md.contains("![fake-time](plots/tiny/fake-time.png)"), "{md}");
        assert!(md.contains("([SVG](plots/tiny/fake-time.svg))"), "{md}");
        assert!(md.contains("- 0 data files"), "{md}");
        // The claims evaluation sits beside the results, and plotting again does not take it for one.
        let claims: Value =
            serde_json::from_str(&fs::read_to_string(results.join("tiny/claims.json")).unwrap()).unwrap();
        assert_eq!(claims["schema"], crate::claims::SCHEMA);
        assert!(
            !md.contains("claims (tiny)"),
            "no paper of these results has claims: {md}"
        );
        plot(&experiments, &results, &plots, &[]).unwrap();

        // Only the registered experiment known: the other gets the generic section.
        let only_fake: Vec<&dyn Experiment> = vec![&FAKE];
        let nested = dir.path().join("docs/REPORT.md");
        write_report(&only_fake, &[], &results, &plots, Scale::Tiny, &nested).unwrap();
        let md = fs::read_to_string(&nested).unwrap();
        assert!(md.contains("no experiment of this name"), "{md}");
        assert!(md.contains("(../plots/tiny/fake-time.png)"), "{md}");
    }

    #[test]
    fn a_corrupt_result_is_skipped_the_rest_reported_and_the_call_fails() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results");
        let good = crate::testing::sample_result();
        good.write_atomic(&ResultFile::path_in(&results, Scale::Tiny, &good.experiment))
            .unwrap();
        let bad = ResultFile::path_in(&results, Scale::Tiny, "broken");
        fs::write(&bad, "{ \"schema\": ").unwrap();
        let out = dir.path().join("REPORT.md");
        let experiments: Vec<&dyn Experiment> = vec![&FAKE];
        let err = write_report(
            &experiments,
            &[],
            &results,
            &dir.path().join("plots"),
            Scale::Tiny,
            &out,
        )
        .unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("broken.json") && msg.contains("skipped 1"), "{msg}");
        let md = fs::read_to_string(&out).unwrap();
        assert!(md.contains(&good.experiment) && !md.contains("broken"), "{md}");

        // With nothing readable, no report is written.
        fs::remove_file(&out).unwrap();
        fs::remove_file(ResultFile::path_in(&results, Scale::Tiny, &good.experiment)).unwrap();
        let err = write_report(
            &experiments,
            &[],
            &results,
            &dir.path().join("plots"),
            Scale::Tiny,
            &out,
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("no report was written"), "{err:#}");
        assert!(!out.exists());
    }

    #[test]
    fn each_scale_has_its_own_report_and_small_is_the_reference() {
        let results = Path::new("res");
        assert_eq!(
            default_report_path(results, Some(Scale::Small)),
            PathBuf::from("REPORT.md")
        );
        assert_eq!(default_report_path(results, None), PathBuf::from("REPORT.md"));
        assert_eq!(
            default_report_path(results, Some(Scale::Tiny)),
            PathBuf::from("res/tiny/REPORT.md")
        );
        assert_eq!(
            default_report_path(results, Some(Scale::Paper)),
            PathBuf::from("res/paper/REPORT.md")
        );
    }

    #[test]
    fn a_report_of_one_scale_covers_only_it_and_links_from_where_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results");
        let plots = dir.path().join("plots");
        for scale in [Scale::Tiny, Scale::Small] {
            let request = RunRequest {
                scale,
                seed: 42,
                sets: vec![],
                out_dir: results.clone(),
                data: vec![],
                sweep: Default::default(),
            };
            run(&FAKE, &request, &Progress::silent()).unwrap();
        }
        let experiments: Vec<&dyn Experiment> = vec![&FAKE];
        plot(&experiments, &results, &plots, &[]).unwrap();

        // The tiny report sits beside the tiny results; the small reference is not written.
        let reference = dir.path().join("REPORT.md");
        let tiny = results.join("tiny").join("REPORT.md");
        assert_eq!(tiny, default_report_path(&results, Some(Scale::Tiny)));
        assert_eq!(
            write_report(&experiments, &[], &results, &plots, Scale::Tiny, &tiny)
                .unwrap()
                .results,
            1
        );
        assert!(!reference.exists());
        let md = fs::read_to_string(&tiny).unwrap();
        assert!(
            md.contains("## fake (Fake paper, tiny)") && !md.contains("small"),
            "{md}"
        );
        assert!(
            md.contains("![fake-time](../../plots/tiny/fake-time.png)"),
            "{md}"
        );
        // The tiny report is not taken for a result file.
        assert_eq!(find_result_files(&results, &[Scale::Tiny]).unwrap().len(), 1);

        assert_eq!(
            write_report(&experiments, &[], &results, &plots, Scale::Small, &reference)
                .unwrap()
                .results,
            1
        );
        let md = fs::read_to_string(&reference).unwrap();
        assert!(
            md.contains("## fake (Fake paper, small)") && !md.contains("tiny"),
            "{md}"
        );
        assert!(md.contains("![fake-time](plots/small/fake-time.png)"), "{md}");

        let err = write_report(
            &experiments,
            &[],
            &results,
            &plots,
            Scale::Paper,
            &dir.path().join("p.md"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("for scale paper"), "{err}");
    }

    #[test]
    fn the_report_opens_with_the_claims_tally_and_ends_each_papers_claims_with_its_notes() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results");
        let request = RunRequest {
            scale: Scale::Tiny,
            seed: 42,
            sets: vec![],
            out_dir: results.clone(),
            data: vec![],
            sweep: Default::default(),
        };
        run(&FAKE, &request, &Progress::silent()).unwrap();
        let claim = |id: &str, form: &str| {
            format!(
                r#"{{"id": "{id}", "source": "s", "text": "t", "quote": "q", "experiment": "fake",
                    "measure": {{"kind": "ratio", "field": "update_s", "variants": ["Eager"],
                                 "baselines": ["UM+F"]}},
                    {form}, "unit": "x", "direction": {{"above": 1.0}}}}"#
            )
        };
        // Eager takes about half of UM+F's time here: 2x, inside [1.5, 2.5]; a 10x claim is only
        // on the paper's side.
        let about2 = claim("two", r#""form": "about", "value": 2.0"#);
        let about10 = claim("ten", r#""form": "about", "value": 10.0, "why": "because""#);
        let text = format!(
            r#"{{"paper": "Fake paper", "doc": "the long notes", "tolerance": 0.25, "claims": [{about2}, {about10}]}}"#
        );
        let sets = vec![crate::claims::parse("fake.json", &text).unwrap()];
        let out = dir.path().join("REPORT.md");
        let experiments: Vec<&dyn Experiment> = vec![&FAKE];
        write_report(
            &experiments,
            &sets,
            &results,
            &dir.path().join("plots"),
            Scale::Tiny,
            &out,
        )
        .unwrap();
        let md = fs::read_to_string(&out).unwrap();
        let after_title = md.strip_prefix("# lsmlab report\n\n").unwrap();
        assert!(
            after_title
                .starts_with("The papers' claims at scale tiny, by verdict ([Claims (tiny)](#claims-tiny));"),
            "{md}"
        );
        let row: Vec<&str> = md
            .lines()
            .find(|l| l.starts_with("| Fake paper"))
            .unwrap()
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(row[1..7], ["Fake paper", "1", "1", "0", "0", "2"], "{md}");
        assert!(md.contains("## Claims (tiny)"), "{md}");
        let claims = md.split_once("## Claims (tiny)").unwrap().1;
        let table = claims.split_once("<details>").unwrap().0;
        assert!(table.contains("| ten") && table.contains("because"), "{md}");
        let notes = claims
            .split_once("### Fake paper claims: notes (tiny)")
            .unwrap()
            .1;
        assert!(notes.trim_start().starts_with("the long notes"), "{md}");
        let claims_json: Value =
            serde_json::from_str(&fs::read_to_string(results.join("tiny/claims.json")).unwrap()).unwrap();
        assert_eq!(claims_json["claims"][1]["why"], "because");
    }

    #[test]
    fn report_without_results_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_report(
            &[],
            &[],
            dir.path(),
            dir.path(),
            Scale::Tiny,
            &dir.path().join("R.md"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("no result files"), "{err}");
    }

    #[test]
    fn anchors_follow_github() {
        assert_eq!(
            anchor("rum-update (LSM RUM-tree, small)"),
            "rum-update-lsm-rum-tree-small"
        );
    }
}
