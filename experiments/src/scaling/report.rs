//! Figures and the REPORT.md section of `scaling`: cost against n on log-log axes, normalised to
//! x1, with n and n log n reference slopes and each component's exponent in its legend entry; a
//! table of exponents and verdicts.

use std::path::{Path, PathBuf};

use crate::experiment::Row;
use crate::plot::{render_specs, FigureSpec, Mark};
use crate::rows::{distinct_of, text_of};
use crate::plot::{self, Labels};
use crate::rows::fmt_num;
use crate::result::ResultFile;

use super::fit;

const SPECS: &[FigureSpec] = &[FigureSpec {
    facets: &["group"],
    x: "n",
    series: "{component}",
    y_label: "CPU time per operation (µs)",
    log_x: true,
    log_y: true,
    ..FigureSpec::new(
        "scaling-per-op-{group}",
        "{group}: CPU time per operation against n ({scale})",
        Mark::Lines { y: "us_per_op" },
    )
}];

/// The figure specs (the normalised log-log figures with reference slopes are drawn by code).
pub fn figure_specs(experiment: &str) -> &'static [FigureSpec] {
    match experiment {
        "scaling" => SPECS,
        _ => &[],
    }
}

fn num(row: &Row, key: &str) -> Option<f64> {
    row.get(key).and_then(|v| v.as_f64())
}

/// The time tolerance the run was configured with (0.15 when absent).
fn time_tolerance(result: &ResultFile) -> f64 {
    result
        .config
        .get("time_tolerance")
        .and_then(|v| v.as_f64())
        .unwrap_or(0.15)
}

/// The time verdict of a component row: its CPU exponent against n log n's with the tolerance.
pub fn time_verdict(row: &Row, tolerance: f64) -> &'static str {
    match (num(row, "cpu_s_exponent"), num(row, "n_log_n_exponent")) {
        (Some(c), Some(r)) => fit::verdict(c, r, tolerance),
        _ => "not fitted",
    }
}

/// The note under every normalised figure's title.
const LEGEND_NOTE: &str = "legend: fitted exponent (least-squares slope of log cost on log n)";

/// The most component lines one normalised figure draws (the two reference lines come on top):
/// more than this and near-identical colours and crossing lines make it unreadable.
const MOST_LINES: usize = 6;

/// The component groups of a paper's rows, in first-seen order.
fn groups_of(rows: &[&Row]) -> Vec<String> {
    distinct_of(rows.iter().copied(), "group")
}

/// A paper's groups split into figures of at most [`MOST_LINES`] components each: consecutive
/// groups share a figure while they fit (a group larger than the limit gets one of its own). A
/// paper within the limit is one figure.
fn panels(rows: &[&Row]) -> Vec<Vec<String>> {
    let size = |g: &str| {
        distinct_of(
            rows.iter()
                .copied()
                .filter(|r| text_of(r, "group").as_deref() == Some(g)),
            "component",
        )
        .len()
    };
    let groups = groups_of(rows);
    if groups.iter().map(|g| size(g)).sum::<usize>() <= MOST_LINES {
        return vec![groups];
    }
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut lines = 0;
    for g in groups {
        let n = size(&g);
        match out.last_mut() {
            Some(last) if lines + n <= MOST_LINES => {
                last.push(g);
                lines += n;
            }
            _ => {
                out.push(vec![g]);
                lines = n;
            }
        }
    }
    out
}

/// One figure per paper (or per panel of its groups, see [`panels`]) and measure: every component's cost divided by its cost at the smallest
/// n, against n / smallest n, with the n and n log n references.
pub fn figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for (measure, field, exponent, what) in [
        ("time", "cpu_s", "cpu_s_exponent", "CPU time"),
        ("work", "work", "work_exponent", "counted work"),
    ] {
        for paper in distinct_of(result.rows.iter(), "paper") {
            let paper_rows: Vec<&Row> = result
                .rows
                .iter()
                .filter(|r| text_of(r, "paper").as_deref() == Some(paper.as_str()))
                .collect();
            for panel in panels(&paper_rows) {
            let rows: Vec<&Row> = paper_rows
                .iter()
                .copied()
                .filter(|r| text_of(r, "group").is_some_and(|g| panel.contains(&g)))
                .collect();
            let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
            let mut base_n = f64::INFINITY;
            let mut top = 1.0f64;
            for component in distinct_of(rows.iter().copied(), "component") {
                let mine: Vec<&&Row> = rows
                    .iter()
                    .filter(|r| text_of(r, "component").as_deref() == Some(component.as_str()))
                    .collect();
                let (Some(n0), Some(y0)) = (num(mine[0], "n"), num(mine[0], field)) else {
                    continue;
                };
                base_n = base_n.min(n0);
                let pts: Vec<(f64, f64)> = mine
                    .iter()
                    .filter_map(|r| Some((num(r, "n")? / n0, num(r, field)? / y0)))
                    .collect();
                top = pts.iter().fold(top, |t, p| t.max(p.0));
                let e = num(mine[0], exponent).map_or("-".into(), |e| format!("{e:.2}"));
                series.push((format!("{component} ({e})"), pts));
            }
            if series.is_empty() {
                continue;
            }
            let ks: Vec<f64> = (0..=top.log2().round() as u32)
                .map(|i| 2f64.powi(i as i32))
                .collect();
            let n0 = if base_n.is_finite() { base_n.max(2.0) } else { 2.0 };
            series.push(("n (slope 1)".into(), ks.iter().map(|&k| (k, k)).collect()));
            series.push((
                "n log n".into(),
                ks.iter().map(|&k| (k, k * (k * n0).log2() / n0.log2())).collect(),
            ));
            let slug: String = paper
                .to_lowercase()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect::<String>()
                .split('-')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("-");
            let title = format!("{paper}: {what} against n, relative to x1 ({} scale)", result.scale);
            let (stem, note) = if panel.len() == groups_of(&paper_rows).len() {
                (format!("scaling-{measure}-{slug}"), LEGEND_NOTE.to_string())
            } else {
                (
                    format!("scaling-{measure}-{slug}-{}", panel.join("-")),
                    format!("{}; {LEGEND_NOTE}", panel.join(", ")),
                )
            };
            let y = format!("{what} / {what} at x1");
            // The last two series are the references (n, n log n), styled as such.
            let mut keys: Vec<String> = series.iter().map(|(name, _)| name.clone()).collect();
            let k = keys.len();
            keys[k - 2] = format!("{} n", plot::REFERENCE);
            keys[k - 1] = format!("{} n log n", plot::REFERENCE);
            paths.extend(plot::line_chart_keyed(
                &out_dir.join(stem),
                &Labels {
                    title: &title,
                    x: "n / n at x1",
                    y: &y,
                    note: Some(&note),
                },
                (true, true),
                &series,
                &keys,
            )?);
            }
        }
    }
    paths.extend(render_specs(SPECS, result, out_dir)?);
    Ok(paths)
}

/// The report section: one line per component with its exponents and verdicts.
pub fn section(result: &ResultFile) -> String {
    let tolerance = time_tolerance(result);
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut flagged: Vec<String> = Vec::new();
    for component in distinct_of(result.rows.iter(), "component") {
        let rows: Vec<&Row> = result
            .rows
            .iter()
            .filter(|r| text_of(r, "component").as_deref() == Some(component.as_str()))
            .collect();
        let (first, last) = (rows[0], rows[rows.len() - 1]);
        let f = |r: &Row, k: &str| num(r, k).map_or("-".to_string(), fmt_num);
        let e = |k: &str| num(first, k).map_or("-".to_string(), |v| format!("{v:.2}"));
        let work_verdict = text_of(first, "verdict").unwrap_or_default();
        let tv = time_verdict(first, tolerance);
        if work_verdict == fit::SUPER || tv == fit::SUPER {
            flagged.push(format!(
                "`{component}` (work exponent {}, CPU exponent {}, n log n {})",
                e("work_exponent"),
                e("cpu_s_exponent"),
                e("n_log_n_exponent")
            ));
        }
        lines.push(vec![
            component.clone(),
            format!("{}-{}", f(first, "n"), f(last, "n")),
            text_of(first, "work_what").unwrap_or_default(),
            format!("{} -> {}", f(first, "work_per_op"), f(last, "work_per_op")),
            e("work_exponent"),
            format!("{} -> {}", f(first, "us_per_op"), f(last, "us_per_op")),
            e("cpu_s_exponent"),
            e("n_log_n_exponent"),
            work_verdict,
            tv.to_string(),
        ]);
    }
    let headers: Vec<String> = [
        "component",
        "n",
        "counted work",
        "work per op",
        "work exponent",
        "µs per op (CPU)",
        "CPU exponent",
        "n log n exponent",
        "verdict (work)",
        "verdict (CPU time)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut md = format!(
        "Every component and rum-update's core at x1, x2, x4, x8 records ({} scale, seed {}): the least-squares \
         slope of log(cost) on log(n) against the slope of n log n over the same n. The work verdict uses the \
         counted work (the same on every run); the time verdict uses CPU time with a tolerance of {tolerance}.\n\n",
        result.scale, result.seed
    );
    md += &plot::markdown_table(&headers, &lines);
    md.push('\n');
    if flagged.is_empty() {
        md += "No component grows faster than n log n.\n";
    } else {
        md += &format!("Faster than n log n: {}.\n", flagged.join("; "));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::RowBuilder;

    #[test]
    fn the_time_verdict_reads_the_row() {
        let row = RowBuilder::new()
            .num("cpu_s_exponent", 1.4)
            .num("n_log_n_exponent", 1.1)
            .build();
        assert_eq!(time_verdict(&row, 0.15), fit::SUPER);
        assert_eq!(time_verdict(&row, 0.35), fit::WITHIN);
        assert_eq!(time_verdict(&RowBuilder::new().build(), 0.1), "not fitted");
    }
}
