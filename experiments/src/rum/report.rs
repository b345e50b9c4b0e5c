//! Figures, Markdown and observations for the RUM experiments, computed from result rows only, so
//! that `lsmlab plot` and `lsmlab report` can regenerate them from any result file.

use crate::experiment::Row;
use crate::plot::{markdown_table, stacked_bars, table_figure};
use crate::result::ResultFile;
use std::path::{Path, PathBuf};

/// A numeric field of the row of (dataset, strategy).
pub fn field(rows: &[Row], dataset: &str, strategy: &str, key: &str) -> Option<f64> {
    rows.iter()
        .find(|r| str_of(r, "dataset") == Some(dataset) && str_of(r, "strategy") == Some(strategy))
        .and_then(|r| r.get(key))
        .and_then(|v| v.as_f64())
}

pub fn str_of<'a>(row: &'a Row, key: &str) -> Option<&'a str> {
    row.get(key).and_then(|v| v.as_str())
}

/// The values of `key` across rows, as text, in first-seen order (numbers in JSON form).
fn distinct(rows: &[Row], key: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows {
        if let Some(s) = value_str(r, key) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// `a / b` as "12.3x", or an explanation when it is undefined.
fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() => Some(a / b),
        _ => None,
    }
}

/// A ratio `r` = baseline / candidate as words: "2.50x faster" when r >= 1, else "1.60x slower"
/// (with the caller's words for better and worse).
fn relative(r: Option<f64>, better: &str, worse: &str) -> String {
    match r {
        Some(r) if r >= 1.0 => format!("{r:.2}x {better}"),
        Some(r) if r > 0.0 => format!("{:.2}x {worse}", 1.0 / r),
        _ => "n/a".to_string(),
    }
}

fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// What the rows say about each of the paper's update claims, one sentence per dataset and claim.
pub fn update_observations(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    let um_variants: Vec<String> = distinct(rows, "strategy")
        .into_iter()
        .filter(|s| s.starts_with("UM"))
        .collect();
    for d in distinct(rows, "dataset") {
        let total = |s: &str| field(rows, &d, s, "total_ms");
        if let Some((best, best_ms)) = um_variants
            .iter()
            .filter_map(|s| total(s).map(|t| (s.clone(), t)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
        {
            out.push(format!(
                "{d}: the fastest UM variant, {best} ({}), is {} than Eager and {} than Validation in \
                 total ingest time (paper: 3x-9.6x and 1.4x-4x faster).",
                fmt_ms(best_ms) + " ms",
                relative(ratio(total("Eager"), Some(best_ms)), "faster", "slower"),
                relative(ratio(total("Validation"), Some(best_ms)), "faster", "slower"),
            ));
        }
        let f = |s: &str, k: &str| field(rows, &d, s, k);
        if f("UM+F", "flush_ms").is_some() && f("UM", "flush_ms").is_some() {
            out.push(format!(
                "{d}: UM+F flush time is {} than UM's ({} vs {} flushes) (paper: up to 60x lower, same \
                 number of flushes).",
                relative(
                    ratio(f("UM", "flush_ms"), f("UM+F", "flush_ms")),
                    "lower",
                    "higher"
                ),
                f("UM+F", "flushes").unwrap_or(0.0),
                f("UM", "flushes").unwrap_or(0.0),
            ));
        }
        if f("UM+M", "merge_ms").is_some() && f("UM", "merge_ms").is_some() {
            out.push(format!(
                "{d}: UM+M merge time is {} than UM's (paper: ~3x lower).",
                relative(
                    ratio(f("UM", "merge_ms"), f("UM+M", "merge_ms")),
                    "lower",
                    "higher"
                ),
            ));
        }
        if let (Some(bv), Some(um)) = (f("UM+BV", "flushes"), f("UM", "flushes")) {
            out.push(format!(
                "{d}: UM+BV flushed {bv} times and merged {} times vs UM's {um} and {}; its update time is {} \
                 (paper: no flush at all on Gowalla and BerlinMOD, ~2x faster updates on BerlinMOD).",
                f("UM+BV", "merges").unwrap_or(0.0),
                f("UM", "merges").unwrap_or(0.0),
                relative(ratio(f("UM", "update_ms"), f("UM+BV", "update_ms")), "lower", "higher"),
            ));
        }
        if let (Some(bv), Some(um)) = (f("UM+BV", "um_max_entries"), f("UM", "um_max_entries")) {
            let cut = if um > 0.0 {
                format!("{:.0}%", 100.0 * (1.0 - bv / um))
            } else {
                "n/a".into()
            };
            out.push(format!(
                "{d}: UM+BV's maximum UM size is {bv} entries vs UM's {um} ({cut} smaller; paper: up to 92% on \
                 Gowalla and BerlinMOD, little on Chicago)."
            ));
        }
    }
    out
}

/// Figure 5 (one stacked chart per dataset), Table 1 and Table 2 as images.
pub fn update_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let rows = &result.rows;
    let mut paths = Vec::new();
    let strategies = distinct(rows, "strategy");
    for d in distinct(rows, "dataset") {
        let present: Vec<String> = strategies
            .iter()
            .filter(|s| field(rows, &d, s, "total_ms").is_some())
            .cloned()
            .collect();
        let series: Vec<(String, Vec<f64>)> = [
            ("update", "update_ms"),
            ("flush", "flush_ms"),
            ("merge", "merge_ms"),
        ]
        .iter()
        .map(|(name, key)| {
            (
                name.to_string(),
                present
                    .iter()
                    .map(|s| field(rows, &d, s, key).unwrap_or(0.0) / 1e3)
                    .collect(),
            )
        })
        .collect();
        paths.extend(stacked_bars(
            &out_dir.join(format!("rum-update-fig5-{d}")),
            &format!("Update cost on {d} ({} scale)", result.scale),
            "time (s)",
            &present,
            &series,
        )?);
    }
    let (h1, t1) = table1(rows);
    paths.extend(table_figure(
        &out_dir.join("rum-update-table1"),
        "Table 1: flushes / merges",
        &h1,
        &t1,
    )?);
    let (h2, t2) = table2(rows);
    paths.extend(table_figure(
        &out_dir.join("rum-update-table2"),
        "Table 2: maximum Update Memo size",
        &h2,
        &t2,
    )?);
    Ok(paths)
}

/// Table 1: one row per strategy, one "flushes / merges" column per dataset.
fn table1(rows: &[Row]) -> (Vec<String>, Vec<Vec<String>>) {
    per_strategy_table(rows, |d, s| {
        let f = field(rows, d, s, "flushes")?;
        let m = field(rows, d, s, "merges")?;
        Some(format!("{f} / {m}"))
    })
}

/// Table 2: the UM variants' maximum UM size per dataset.
fn table2(rows: &[Row]) -> (Vec<String>, Vec<Vec<String>>) {
    let um_rows: Vec<Row> = rows
        .iter()
        .filter(|r| str_of(r, "strategy").is_some_and(|s| s.starts_with("UM")))
        .cloned()
        .collect();
    per_strategy_table(&um_rows, |d, s| {
        field(&um_rows, d, s, "um_max_entries").map(|v| format!("{v}"))
    })
}

fn per_strategy_table(
    rows: &[Row],
    cell: impl Fn(&str, &str) -> Option<String>,
) -> (Vec<String>, Vec<Vec<String>>) {
    let datasets = distinct(rows, "dataset");
    let mut headers = vec!["strategy".to_string()];
    headers.extend(datasets.iter().cloned());
    let body = distinct(rows, "strategy")
        .into_iter()
        .map(|s| {
            let mut line = vec![s.clone()];
            line.extend(datasets.iter().map(|d| cell(d, &s).unwrap_or_else(|| "-".into())));
            line
        })
        .collect();
    (headers, body)
}

/// The REPORT.md section of `rum-update`.
pub fn update_report(result: &ResultFile) -> String {
    let rows = &result.rows;
    let mut md = String::new();
    md.push_str(&format!(
        "Each dataset is ingested under each strategy ({} scale, seed {}); flushes and merges run inside \
         the stream. Times in ms.\n\n",
        result.scale, result.seed
    ));
    let headers: Vec<String> = [
        "dataset",
        "strategy",
        "records",
        "update_ms",
        "flush_ms",
        "merge_ms",
        "total_ms",
        "modelled_ms",
        "page_reads",
        "page_writes",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            headers
                .iter()
                .map(|h| match r.get(h.as_str()) {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(v) if h.ends_with("_ms") => v.as_f64().map(fmt_ms).unwrap_or_default(),
                    Some(v) => v.to_string(),
                    None => "-".into(),
                })
                .collect()
        })
        .collect();
    md.push_str(&markdown_table(&headers, &body));
    let (h1, t1) = table1(rows);
    md.push_str("\n**Table 1** (flushes / merges)\n\n");
    md.push_str(&markdown_table(&h1, &t1));
    let (h2, t2) = table2(rows);
    md.push_str("\n**Table 2** (maximum Update Memo entries)\n\n");
    md.push_str(&markdown_table(&h2, &t2));
    md.push_str("\n**The paper's claims beside what this run measured**\n\n");
    for o in update_observations(rows) {
        md.push_str(&format!("- {o}\n"));
    }
    md
}

/// A numeric field of the query row (dataset, strategy, selectivity).
pub fn qfield(rows: &[Row], dataset: &str, strategy: &str, sel: f64, key: &str) -> Option<f64> {
    rows.iter()
        .find(|r| {
            str_of(r, "dataset") == Some(dataset)
                && str_of(r, "strategy") == Some(strategy)
                && r.get("selectivity")
                    .and_then(|v| v.as_f64())
                    .is_some_and(|v| (v - sel).abs() < 1e-12)
        })
        .and_then(|r| r.get(key))
        .and_then(|v| v.as_f64())
}

fn selectivities(rows: &[Row]) -> Vec<f64> {
    let mut s: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.get("selectivity").and_then(|v| v.as_f64()))
        .collect();
    s.sort_by(|a, b| a.total_cmp(b));
    s.dedup();
    s
}

/// What the rows say about each of the paper's query claims.
pub fn query_observations(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    let sels = selectivities(rows);
    let Some(&largest) = sels.last() else { return out };
    for d in distinct(rows, "dataset") {
        let t = |s: &str, sel: f64| qfield(rows, &d, s, sel, "avg_query_us");
        let slower = sels
            .iter()
            .filter(|&&sel| matches!((t("Validation", sel), t("Eager", sel)), (Some(v), Some(e)) if v > e))
            .count();
        if t("Validation", largest).is_some() && t("Eager", largest).is_some() {
            out.push(format!(
                "{d}: Validation is slower than Eager at {slower} of {} selectivities (paper: slower).",
                sels.len()
            ));
        }
        let best = |a: &str, b: &str| -> Option<(f64, f64)> {
            sels.iter()
                .filter_map(|&sel| ratio(t(a, sel), t(b, sel)).map(|r| (r, sel)))
                .max_by(|x, y| x.0.total_cmp(&y.0))
        };
        if let Some((r, sel)) = best("Validation", "UM") {
            out.push(format!(
                "{d}: UM's best showing against Validation: {} (at s={sel}) (paper: up to 3x faster).",
                relative(Some(r), "faster", "slower")
            ));
        }
        for (v, vs, claim) in [
            (
                "UM+F",
                "Eager",
                "paper: UM+F up to 424x over Eager/Validation on BerlinMOD at large ranges",
            ),
            ("UM+F", "Validation", "paper: up to 424x"),
            ("UM+FMBV", "UM", "paper: ~200x at larger selectivities"),
        ] {
            if let Some(r) = ratio(t(vs, largest), t(v, largest)) {
                out.push(format!(
                    "{d}: at s={largest}, {v} is {} than {vs} ({} vs {} candidates per query) ({claim}).",
                    relative(Some(r), "faster", "slower"),
                    qfield(rows, &d, v, largest, "avg_candidates").map_or("-".into(), |c| format!("{c:.0}")),
                    qfield(rows, &d, vs, largest, "avg_candidates").map_or("-".into(), |c| format!("{c:.0}")),
                ));
            }
        }
    }
    out
}

/// Figure 6: query time versus selectivity, one line per strategy, log scale, one chart per dataset.
pub fn query_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let rows = &result.rows;
    let mut paths = Vec::new();
    let sels = selectivities(rows);
    for d in distinct(rows, "dataset") {
        for (key, label, stem) in [
            ("avg_query_us", "average query time (us)", "time"),
            ("avg_modelled_us", "modelled query time (us)", "modelled"),
        ] {
            let series: Vec<(String, Vec<(f64, f64)>)> = distinct(rows, "strategy")
                .into_iter()
                .map(|s| {
                    let pts = sels
                        .iter()
                        .filter_map(|&sel| qfield(rows, &d, &s, sel, key).map(|v| (sel, v)))
                        .collect();
                    (s, pts)
                })
                .collect();
            paths.extend(crate::plot::line_chart(
                &out_dir.join(format!("rum-query-fig6-{d}-{stem}")),
                &format!("Range queries on {d} ({} scale)", result.scale),
                "query side fraction s",
                label,
                true,
                true,
                &series,
            )?);
        }
    }
    Ok(paths)
}

/// The REPORT.md section of `rum-query`: the table at the largest selectivity and the claims.
pub fn query_report(result: &ResultFile) -> String {
    let rows = &result.rows;
    let sels = selectivities(rows);
    let mut md = String::new();
    let Some(&largest) = sels.last() else {
        return "No rows.\n".into();
    };
    md.push_str(&format!(
        "Range queries after ingestion ({} scale, seed {}). The table shows the largest selectivity, s = {largest}.\n\n",
        result.scale, result.seed
    ));
    let headers: Vec<String> = [
        "dataset",
        "strategy",
        "avg_query_us",
        "p95_query_us",
        "avg_page_reads",
        "avg_candidates",
        "avg_results",
        "avg_validation_lookups",
        "avg_modelled_us",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut body = Vec::new();
    for d in distinct(rows, "dataset") {
        for s in distinct(rows, "strategy") {
            let mut line = vec![d.clone(), s.clone()];
            for h in &headers[2..] {
                line.push(qfield(rows, &d, &s, largest, h).map_or("-".into(), |v| format!("{v:.1}")));
            }
            body.push(line);
        }
    }
    md.push_str(&markdown_table(&headers, &body));
    md.push_str("\n**The paper's claims beside what this run measured**\n\n");
    for o in query_observations(rows) {
        md.push_str(&format!("- {o}\n"));
    }
    md
}

/// Rows matching every (key, value) string pair.
fn select<'a>(rows: &'a [Row], pairs: &[(&str, &str)]) -> Vec<&'a Row> {
    rows.iter()
        .filter(|r| pairs.iter().all(|(k, v)| value_str(r, k).as_deref() == Some(*v)))
        .collect()
}

/// A field as text (strings as they are, numbers in JSON form).
fn value_str(row: &Row, key: &str) -> Option<String> {
    row.get(key).map(|v| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

fn num_of(row: &Row, key: &str) -> Option<f64> {
    row.get(key).and_then(|v| v.as_f64())
}

fn cell(row: &Row, key: &str) -> String {
    match row.get(key) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => match v.as_f64() {
            Some(f) if v.is_f64() => format!("{f:.1}"),
            _ => v.to_string(),
        },
        None => "-".into(),
    }
}

/// A Markdown table of `keys` over `rows`.
fn rows_markdown(rows: &[&Row], keys: &[&str]) -> String {
    let headers: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| keys.iter().map(|k| cell(r, k)).collect())
        .collect();
    markdown_table(&headers, &body)
}

pub fn mixed_observations(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for d in distinct(rows, "dataset") {
        for q in distinct(rows, "query_fraction") {
            for skew in distinct(rows, "query_skew") {
                let cell_rows = select(
                    rows,
                    &[("dataset", &d), ("query_fraction", &q), ("query_skew", &skew)],
                );
                let best = cell_rows
                    .iter()
                    .filter_map(|r| Some((str_of(r, "strategy")?, num_of(r, "throughput_ops_s")?)))
                    .max_by(|a, b| a.1.total_cmp(&b.1));
                let worst = cell_rows
                    .iter()
                    .filter_map(|r| Some((str_of(r, "strategy")?, num_of(r, "throughput_ops_s")?)))
                    .min_by(|a, b| a.1.total_cmp(&b.1));
                if let (Some(b), Some(w)) = (best, worst) {
                    out.push(format!(
                        "{d}, query fraction {q}, {skew} queries: highest throughput {} ({:.0} ops/s), lowest {} ({:.0} ops/s).",
                        b.0, b.1, w.0, w.1
                    ));
                }
            }
        }
    }
    out
}

pub fn mixed_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let rows = &result.rows;
    let mut paths = Vec::new();
    let strategies = distinct(rows, "strategy");
    for d in distinct(rows, "dataset") {
        let mixes: Vec<(String, String)> = distinct(rows, "query_fraction")
            .into_iter()
            .flat_map(|q| {
                distinct(rows, "query_skew")
                    .into_iter()
                    .map(move |s| (q.clone(), s))
            })
            .collect();
        let categories: Vec<String> = mixes.iter().map(|(q, s)| format!("q={q} {s}")).collect();
        let metric = |key: &str, scale: f64| -> Vec<(String, Vec<f64>)> {
            strategies
                .iter()
                .map(|s| {
                    let vals = mixes
                        .iter()
                        .map(|(q, k)| {
                            select(
                                rows,
                                &[
                                    ("dataset", &d),
                                    ("strategy", s),
                                    ("query_fraction", q),
                                    ("query_skew", k),
                                ],
                            )
                            .first()
                            .and_then(|r| num_of(r, key))
                            .map_or(f64::NAN, |v| v * scale)
                        })
                        .collect();
                    (s.clone(), vals)
                })
                .collect()
        };
        paths.extend(crate::plot::grouped_bars(
            &out_dir.join(format!("rum-mixed-throughput-{d}")),
            &format!("Mixed workload throughput on {d} ({} scale)", result.scale),
            "operations / s",
            &categories,
            &metric("throughput_ops_s", 1.0),
            false,
        )?);
        paths.extend(crate::plot::grouped_bars(
            &out_dir.join(format!("rum-mixed-latency-{d}")),
            &format!(
                "p99 latency on {d}: updates (incl. flush/merge) ({} scale)",
                result.scale
            ),
            "p99 update latency (us, log)",
            &categories,
            &metric("p99_update_us", 1.0),
            true,
        )?);
        paths.extend(crate::plot::grouped_bars(
            &out_dir.join(format!("rum-mixed-query-latency-{d}")),
            &format!("p99 query latency on {d} ({} scale)", result.scale),
            "p99 query latency (us, log)",
            &categories,
            &metric("p99_query_us", 1.0),
            true,
        )?);
    }
    Ok(paths)
}

pub fn mixed_report(result: &ResultFile) -> String {
    let rows: Vec<&Row> = result.rows.iter().collect();
    let mut md = format!(
        "Updates with interleaved range queries ({} scale, seed {}).\n\n",
        result.scale, result.seed
    );
    md.push_str(&rows_markdown(
        &rows,
        &[
            "dataset",
            "strategy",
            "query_fraction",
            "query_skew",
            "throughput_ops_s",
            "avg_update_us",
            "p99_update_us",
            "avg_query_us",
            "p99_query_us",
            "page_reads",
        ],
    ));
    md.push('\n');
    for o in mixed_observations(&result.rows) {
        md.push_str(&format!("- {o}\n"));
    }
    md
}

pub fn concurrency_observations(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for d in distinct(rows, "dataset") {
        for s in distinct(rows, "strategy") {
            let sel = select(rows, &[("dataset", &d), ("strategy", &s)]);
            let one = sel
                .iter()
                .find(|r| num_of(r, "threads") == Some(1.0))
                .and_then(|r| num_of(r, "throughput_ops_s"));
            if let Some(one) = one {
                let parts: Vec<String> = sel
                    .iter()
                    .filter_map(|r| {
                        Some(format!(
                            "{}: {:.2}x",
                            num_of(r, "threads")?,
                            num_of(r, "throughput_ops_s")? / one
                        ))
                    })
                    .collect();
                out.push(format!(
                    "{d} {s}: throughput relative to 1 thread: {}.",
                    parts.join(", ")
                ));
            }
        }
    }
    out
}

pub fn concurrency_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let rows = &result.rows;
    let mut paths = Vec::new();
    for d in distinct(rows, "dataset") {
        let series: Vec<(String, Vec<(f64, f64)>)> = distinct(rows, "strategy")
            .into_iter()
            .map(|s| {
                let pts = select(rows, &[("dataset", &d), ("strategy", &s)])
                    .iter()
                    .filter_map(|r| Some((num_of(r, "threads")?, num_of(r, "throughput_ops_s")?)))
                    .collect();
                (s, pts)
            })
            .collect();
        paths.extend(crate::plot::line_chart(
            &out_dir.join(format!("rum-concurrency-{d}")),
            &format!("Concurrent ingestion on {d} ({} scale)", result.scale),
            "threads",
            "operations / s",
            true,
            false,
            &series,
        )?);
    }
    Ok(paths)
}

pub fn concurrency_report(result: &ResultFile) -> String {
    let rows: Vec<&Row> = result.rows.iter().collect();
    let mut md = format!(
        "Update Memo ingestion with several threads ({} scale, seed {}), checked against a single-threaded replay.\n\n",
        result.scale, result.seed
    );
    md.push_str(&rows_markdown(
        &rows,
        &[
            "dataset",
            "strategy",
            "threads",
            "ops",
            "throughput_ops_s",
            "um_entries_final",
            "um_max_entries",
            "flushes",
        ],
    ));
    md.push('\n');
    for o in concurrency_observations(&result.rows) {
        md.push_str(&format!("- {o}\n"));
    }
    md
}

pub fn tuning_observations(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for d in distinct(rows, "dataset") {
        for knob in distinct(rows, "knob") {
            for s in distinct(rows, "strategy") {
                let sel = select(rows, &[("dataset", &d), ("knob", &knob), ("strategy", &s)]);
                let best = sel
                    .iter()
                    .filter_map(|r| Some((num_of(r, "threshold")?, num_of(r, "total_ms")?)))
                    .min_by(|a, b| a.1.total_cmp(&b.1));
                let um = sel
                    .iter()
                    .filter_map(|r| Some((num_of(r, "threshold")?, num_of(r, "um_max_entries")?)));
                let (lo, hi) = um.fold((None::<(f64, f64)>, None::<(f64, f64)>), |(lo, hi), x| {
                    (
                        Some(lo.map_or(x, |l| if x.0 < l.0 { x } else { l })),
                        Some(hi.map_or(x, |h| if x.0 > h.0 { x } else { h })),
                    )
                });
                if let (Some(b), Some(lo), Some(hi)) = (best, lo, hi) {
                    out.push(format!(
                        "{d} {s}, sweeping {knob}: fastest total ingest at {}={} ({}); max UM size {} at {}={} vs {} at {}={}.",
                        knob, b.0, fmt_ms(b.1) + " ms", lo.1, knob, lo.0, hi.1, knob, hi.0
                    ));
                }
            }
        }
    }
    out
}

pub fn tuning_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let rows = &result.rows;
    let mut paths = Vec::new();
    for d in distinct(rows, "dataset") {
        for (key, label, stem) in [
            ("update_ms", "update time (ms)", "update"),
            ("um_max_entries", "max UM entries", "um"),
            ("flushes", "flushes", "flushes"),
            ("avg_query_us", "query time (us)", "query"),
        ] {
            let mut series = Vec::new();
            for knob in distinct(rows, "knob") {
                for s in distinct(rows, "strategy") {
                    let pts: Vec<(f64, f64)> =
                        select(rows, &[("dataset", &d), ("knob", &knob), ("strategy", &s)])
                            .iter()
                            .filter_map(|r| Some((num_of(r, "threshold")?, num_of(r, key)?)))
                            .collect();
                    if !pts.is_empty() {
                        series.push((format!("{s}, {knob} swept"), pts));
                    }
                }
            }
            paths.extend(crate::plot::line_chart(
                &out_dir.join(format!("rum-tuning-{d}-{stem}")),
                &format!("Cleaning thresholds on {d}: {label} ({} scale)", result.scale),
                "threshold",
                label,
                true,
                false,
                &series,
            )?);
        }
    }
    Ok(paths)
}

pub fn tuning_report(result: &ResultFile) -> String {
    let rows: Vec<&Row> = result.rows.iter().collect();
    let mut md = format!(
        "Cleaning thresholds swept ({} scale, seed {}).\n\n",
        result.scale, result.seed
    );
    md.push_str(&rows_markdown(
        &rows,
        &[
            "dataset",
            "knob",
            "threshold",
            "strategy",
            "update_ms",
            "flushes",
            "merges",
            "um_max_entries",
            "avg_query_us",
        ],
    ));
    md.push('\n');
    for o in tuning_observations(&result.rows) {
        md.push_str(&format!("- {o}\n"));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::RowBuilder;

    fn mixed_row(strategy: &str, q: f64, skew: &str, tput: f64) -> Row {
        RowBuilder::new()
            .str("dataset", "d")
            .str("strategy", strategy)
            .num("query_fraction", q)
            .str("query_skew", skew)
            .num("throughput_ops_s", tput)
            .build()
    }

    #[test]
    fn numeric_dimensions_are_grouped_like_string_ones() {
        let rows = vec![
            mixed_row("UM", 0.001, "hot", 10.0),
            mixed_row("UM+F", 0.001, "hot", 30.0),
            mixed_row("UM", 0.01, "hot", 5.0),
            mixed_row("UM+F", 0.01, "hot", 2.0),
        ];
        assert_eq!(distinct(&rows, "query_fraction"), vec!["0.001", "0.01"]);
        let obs = mixed_observations(&rows);
        assert_eq!(obs.len(), 2);
        assert!(
            obs[0].contains("highest throughput UM+F") && obs[1].contains("highest throughput UM "),
            "{obs:?}"
        );
    }

    #[test]
    fn relative_speed_words_follow_the_ratio() {
        assert_eq!(relative(Some(2.5), "faster", "slower"), "2.50x faster");
        assert_eq!(relative(Some(0.5), "faster", "slower"), "2.00x slower");
        assert_eq!(relative(None, "faster", "slower"), "n/a");
    }

    #[test]
    fn update_observations_compare_against_the_paper_strategies() {
        let row = |s: &str, total: f64, flush: f64| {
            RowBuilder::new()
                .str("dataset", "berlinmod")
                .str("strategy", s)
                .num("total_ms", total)
                .num("update_ms", total - flush)
                .num("flush_ms", flush)
                .num("merge_ms", 0.0)
                .int("flushes", 3u64)
                .int("merges", 0u64)
                .int("um_max_entries", 100u64)
                .build()
        };
        let rows = vec![
            row("Eager", 900.0, 10.0),
            row("Validation", 400.0, 10.0),
            row("UM", 300.0, 60.0),
            row("UM+F", 200.0, 2.0),
        ];
        let obs = update_observations(&rows);
        assert!(
            obs[0].contains("UM+F") && obs[0].contains("4.50x faster than Eager"),
            "{obs:?}"
        );
        assert!(obs[1].contains("30.00x lower"), "{obs:?}");
    }
}
