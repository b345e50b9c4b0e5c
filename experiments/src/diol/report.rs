//! The DIOL experiments' figures (declared as [`FigureSpec`]s), report sections and the findings
//! written into the notes, with the paper's numbers beside what was measured.

use serde_json::Value;

use crate::experiment::Row;
use crate::rows::fmt_num;
use crate::plot::{FigureSpec, Filter, Mark};
use crate::report::rows_table;
use crate::result::ResultFile;

/// The paper's workload A insert times (ms) at O3 10/20/30%: (IoTDB-like, DIOL).
pub const PAPER_A_MS: [(f64, f64, f64); 3] = [
    (0.1, 18_890.9, 20_855.8),
    (0.2, 22_708.5, 22_888.5),
    (0.3, 26_022.7, 28_563.9),
];
/// The paper's B and C: (workload, disk reads IoTDB-like, DIOL, read data IoTDB-like, DIOL).
pub const PAPER_READS: [(&str, f64, f64, f64, f64); 2] = [
    ("B", 990_248.0, 961_049.0, 726.7e6, 686.6e6),
    ("C", 2_512_203.0, 2_443_721.0, 1_826.1e6, 1_732.0e6),
];

pub(crate) const LAYOUT_FIGURES: &[FigureSpec] = &[
    FigureSpec {
        filters: &[Filter::In("workload", &["A"])],
        facets: &["delay_model"],
        x: "{o3_ratio}",
        x_label: "out-of-order ratio",
        series: "{layout}",
        y_label: "insert time of the timed half (wall)",
        y_unit: Some(crate::plot::TimeUnit::Ms),
        ..FigureSpec::new(
            "diol-insert-{delay_model}",
            "Workload A insert time, {delay_model} delays ({scale} scale)",
            Mark::Bars { y: "insert_ms" },
        )
    },
    FigureSpec {
        filters: &[
            Filter::In("workload", &["B", "C", "recent"]),
            Filter::In("delay_model", &["diol"]),
        ],
        facets: &["workload"],
        x: "{o3_ratio}",
        x_label: "out-of-order ratio",
        series: "{layout}",
        y_label: "lookups that read disk",
        ..FigureSpec::new(
            "diol-disk-reads-{workload}",
            "Workload {workload}: disk reads, diol delays ({scale} scale)",
            Mark::Bars { y: "disk_reads" },
        )
    },
    FigureSpec {
        filters: &[
            Filter::In("workload", &["B", "C", "recent"]),
            Filter::In("delay_model", &["diol"]),
        ],
        facets: &["workload"],
        x: "{o3_ratio}",
        x_label: "out-of-order ratio",
        series: "{layout}",
        y_label: "points read from disk",
        ..FigureSpec::new(
            "diol-disk-read-points-{workload}",
            "Workload {workload}: points read from disk, diol delays ({scale} scale)",
            Mark::Bars {
                y: "disk_read_points",
            },
        )
    },
    FigureSpec {
        filters: &[Filter::In("workload", &["A"])],
        facets: &["delay_model"],
        x: "{o3_ratio}",
        x_label: "out-of-order ratio",
        series: "{layout}",
        y_label: "pages written by flushes",
        ..FigureSpec::new(
            "diol-page-writes-{delay_model}",
            "Workload A pages written, {delay_model} delays ({scale} scale)",
            Mark::Bars { y: "page_writes" },
        )
    },
];

pub(crate) const COMPACTION_FIGURES: &[FigureSpec] = &[
    FigureSpec {
        filters: &[Filter::In("compaction", &["on"])],
        facets: &["delay_model", "delay_files_trigger"],
        x: "{o3_ratio}",
        x_label: "out-of-order ratio",
        series: "{layout}",
        y_label: "write amplification (pages written / flushed)",
        ..FigureSpec::new(
            "diol-compaction-write-amp-{delay_model}-t{delay_files_trigger}",
            "Write amplification, compaction at {delay_files_trigger} delay files, {delay_model} delays ({scale} scale)",
            Mark::Bars { y: "write_amplification" },
        )
    },
    FigureSpec {
        filters: &[Filter::In("delay_model", &["diol"])],
        facets: &["delay_files_trigger"],
        x: "{o3_ratio}",
        x_label: "out-of-order ratio",
        series: "{layout}",
        y_label: "pages read by lookups",
        ..FigureSpec::new(
            "diol-compaction-lookup-pages-t{delay_files_trigger}",
            "Pages read by lookups, compaction trigger {delay_files_trigger} (0 = off), diol delays ({scale} scale)",
            Mark::Bars { y: "lookup_page_reads" },
        )
    },
];

pub(crate) const SIZING_FIGURES: &[FigureSpec] = &[
    FigureSpec {
        filters: &[Filter::In("kind", &["cell"])],
        facets: &["o3_ratio"],
        x: "delay_memtable_mb",
        x_label: "delay memtable size (MiB at paper scale)",
        series: "{delay_memtables} delay memtables",
        y_label: "lookups that read disk",
        log_x: true,
        ..FigureSpec::new(
            "diol-sizing-disk-reads-{o3_ratio}",
            "DIOL sizing at O3 {o3_ratio}: disk reads ({scale} scale)",
            Mark::Lines { y: "disk_reads" },
        )
    },
    FigureSpec {
        filters: &[Filter::In("kind", &["cell"])],
        facets: &["o3_ratio"],
        x: "delay_memtable_mb",
        x_label: "delay memtable size (MiB at paper scale)",
        series: "{delay_memtables} delay memtables",
        y_label: "pages written",
        log_x: true,
        ..FigureSpec::new(
            "diol-sizing-page-writes-{o3_ratio}",
            "DIOL sizing at O3 {o3_ratio}: pages written ({scale} scale)",
            Mark::Lines { y: "page_writes" },
        )
    },
];

fn text(row: &Row, key: &str) -> String {
    match row.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    }
}

fn num(row: &Row, key: &str) -> Option<f64> {
    row.get(key).and_then(Value::as_f64)
}

/// The row of (workload, o3, delay model, layout) among `rows` (first match), with `extra`
/// fields matching too.
fn find<'a>(
    rows: &'a [Row],
    w: &str,
    o3: f64,
    model: &str,
    layout: &str,
    extra: &[(&str, &str)],
) -> Option<&'a Row> {
    rows.iter().find(|r| {
        text(r, "workload") == w
            && num(r, "o3_ratio").is_some_and(|x| (x - o3).abs() < 1e-9)
            && text(r, "delay_model") == model
            && text(r, "layout") == layout
            && extra.iter().all(|(k, v)| text(r, k) == *v)
    })
}

fn pct(variant: f64, baseline: f64) -> String {
    if baseline == 0.0 {
        return format!("{} against 0", fmt_num(variant));
    }
    format!("{:+.1}%", 100.0 * (variant / baseline - 1.0))
}

fn distinct(rows: &[Row], key: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows {
        let t = text(r, key);
        if !t.is_empty() && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

fn o3s(rows: &[Row]) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for r in rows {
        if let Some(x) = num(r, "o3_ratio") {
            if !out.iter().any(|y| (y - x).abs() < 1e-9) {
                out.push(x);
            }
        }
    }
    out
}

/// One line per (workload, o3) for the authors' generator: DIOL against the authors' baseline, as
/// the paper compares them, with the paper's number where it has one.
pub fn layout_findings(rows: &[Row]) -> Vec<String> {
    let mut notes = Vec::new();
    for model in distinct(rows, "delay_model") {
        for o3 in o3s(rows) {
            let (Some(d), Some(b)) = (
                find(rows, "A", o3, &model, "diol", &[]),
                find(rows, "A", o3, &model, "iotdb", &[]),
            ) else {
                continue;
            };
            let paper = PAPER_A_MS
                .iter()
                .find(|p| (p.0 - o3).abs() < 1e-9 && model == "diol")
                .map(|p| format!(" (paper {})", pct(p.2, p.1)))
                .unwrap_or_default();
            notes.push(format!(
                "A, o3 {o3}, {model}: DIOL insert time {} of iotdb's{paper} (wall); pages written {}, flushes {} vs {}, \
                 DIOL moved {} delay points into normal memtables.",
                pct(num(d, "insert_ms").unwrap_or(0.0), num(b, "insert_ms").unwrap_or(0.0)),
                pct(num(d, "page_writes").unwrap_or(0.0), num(b, "page_writes").unwrap_or(0.0)),
                text(d, "flushes"),
                text(b, "flushes"),
                text(d, "memory_compaction_points"),
            ));
        }
    }
    for w in ["B", "C", "recent"] {
        for model in distinct(rows, "delay_model") {
            for o3 in o3s(rows) {
                let (Some(d), Some(b)) = (
                    find(rows, w, o3, &model, "diol", &[]),
                    find(rows, w, o3, &model, "iotdb", &[]),
                ) else {
                    continue;
                };
                let paper = PAPER_READS
                    .iter()
                    .find(|p| p.0 == w && model == "diol")
                    .map(|p| format!(" (paper {} and {})", pct(p.2, p.1), pct(p.4, p.3)))
                    .unwrap_or_default();
                let expired = find(rows, w, o3, &model, "diol-expired-ttl", &[])
                    .map(|e| {
                        format!(
                            " (diol-expired-ttl: {} and {})",
                            pct(
                                num(e, "disk_reads").unwrap_or(0.0),
                                num(b, "disk_reads").unwrap_or(0.0)
                            ),
                            pct(
                                num(e, "disk_read_points").unwrap_or(0.0),
                                num(b, "disk_read_points").unwrap_or(0.0)
                            ),
                        )
                    })
                    .unwrap_or_default();
                notes.push(format!(
                    "{w}, o3 {o3}, {model}: DIOL disk reads {} and points read from disk {} of iotdb's{paper}{expired}; \
                     {} vs {} lookups read disk out of {}.",
                    pct(num(d, "disk_reads").unwrap_or(0.0), num(b, "disk_reads").unwrap_or(0.0)),
                    pct(num(d, "disk_read_points").unwrap_or(0.0), num(b, "disk_read_points").unwrap_or(0.0)),
                    text(d, "disk_reads"),
                    text(b, "disk_reads"),
                    num(d, "point_reads").unwrap_or(0.0) + num(d, "range_reads").unwrap_or(0.0),
                ));
            }
        }
    }
    notes
}

fn header(result: &ResultFile, what: &str) -> String {
    format!(
        "{what} ({} scale, seed {}, {} points).\n\n",
        result.scale,
        result.seed,
        result
            .rows
            .first()
            .and_then(|r| num(r, "points"))
            .map(fmt_num)
            .unwrap_or_default()
    )
}

/// `diol`'s report section: the paper's tables beside the measured ones.
pub fn layouts_report(result: &ResultFile) -> String {
    let rows = &result.rows;
    let mut md = header(
        result,
        "DIOL against the authors' IoTDB-like baseline and real IoTDB's rule",
    );
    md += "Workload A, the authors' delay generator: insert time of the timed half (wall) and pages written.\n\n";
    let mut cells: Vec<Vec<String>> = Vec::new();
    for p in PAPER_A_MS {
        let get = |layout: &str, f: &str| find(rows, "A", p.0, "diol", layout, &[]).and_then(|r| num(r, f));
        let show = |x: Option<f64>| x.map(fmt_num).unwrap_or_else(|| "-".into());
        cells.push(vec![
            fmt_num(p.0),
            format!("{} / {} ({})", fmt_num(p.1), fmt_num(p.2), pct(p.2, p.1)),
            format!(
                "{} / {} ({})",
                show(get("iotdb", "insert_ms")),
                show(get("diol", "insert_ms")),
                match (get("diol", "insert_ms"), get("iotdb", "insert_ms")) {
                    (Some(d), Some(b)) => pct(d, b),
                    _ => "-".into(),
                }
            ),
            show(get("iotdb-real", "insert_ms")),
            format!(
                "{} / {}",
                show(get("iotdb", "page_writes")),
                show(get("diol", "page_writes"))
            ),
        ]);
    }
    md += &crate::plot::markdown_table(
        &[
            "o3".into(),
            "paper ms iotdb / diol".into(),
            "lsmlab ms iotdb / diol".into(),
            "lsmlab ms iotdb-real".into(),
            "page writes iotdb / diol".into(),
        ],
        &cells,
    );
    md += "\nWorkloads B and C, the authors' delay generator: lookups that read disk and points read from disk.\n\n";
    let mut cells: Vec<Vec<String>> = Vec::new();
    for p in PAPER_READS {
        for o3 in o3s(rows) {
            let get =
                |layout: &str, f: &str| find(rows, p.0, o3, "diol", layout, &[]).and_then(|r| num(r, f));
            let (Some(bd), Some(dd), Some(bp), Some(dp)) = (
                get("iotdb", "disk_reads"),
                get("diol", "disk_reads"),
                get("iotdb", "disk_read_points"),
                get("diol", "disk_read_points"),
            ) else {
                continue;
            };
            cells.push(vec![
                p.0.into(),
                fmt_num(o3),
                format!("{} / {} ({})", fmt_num(p.1), fmt_num(p.2), pct(p.2, p.1)),
                format!("{} / {} ({})", fmt_num(bd), fmt_num(dd), pct(dd, bd)),
                format!("{} / {} ({})", fmt_num(p.3), fmt_num(p.4), pct(p.4, p.3)),
                format!("{} / {} ({})", fmt_num(bp), fmt_num(dp), pct(dp, bp)),
            ]);
        }
    }
    md += &crate::plot::markdown_table(
        &[
            "workload".into(),
            "o3".into(),
            "paper disk reads iotdb / diol".into(),
            "lsmlab disk reads iotdb / diol".into(),
            "paper read data".into(),
            "lsmlab points read".into(),
        ],
        &cells,
    );
    md += "\nEvery run:\n\n";
    md += &rows_table(
        rows,
        &[
            "workload",
            "o3_ratio",
            "delay_model",
            "layout",
            "insert_ms",
            "disk_reads",
            "disk_read_points",
            "page_reads",
            "page_writes",
            "flushes",
            "files_final",
            "memory_peak_bytes",
        ],
    );
    md
}

/// `diol-compaction`'s report section.
pub fn compaction_report(result: &ResultFile) -> String {
    let mut md = header(result, "Disk compaction (DIOL's future work) for every layout");
    md += &rows_table(
        &result.rows,
        &[
            "workload",
            "o3_ratio",
            "delay_model",
            "layout",
            "compaction",
            "delay_files_trigger",
            "disk_compactions",
            "flush_pages_written",
            "compaction_pages_written",
            "compaction_points_rewritten",
            "write_amplification",
            "disk_reads",
            "disk_read_points",
            "page_reads",
            "files_final",
        ],
    );
    md
}

/// `diol-sizing`'s report section.
pub fn sizing_report(result: &ResultFile) -> String {
    let rows = &result.rows;
    let pick = |k: &str| -> Vec<Row> { rows.iter().filter(|r| text(r, "kind") == k).cloned().collect() };
    let mut md = header(
        result,
        "DIOL's delay memtables sized against the O3 ratio under a fixed budget",
    );
    md += "Best setting per ratio:\n\n";
    md += &rows_table(
        &pick("best"),
        &[
            "o3_ratio",
            "objective",
            "delay_memtable_mb",
            "delay_memtables",
            "value",
            "paper_setting_value",
            "iotdb_value",
        ],
    );
    md += "\nEvery cell:\n\n";
    md += &rows_table(
        &pick("cell"),
        &[
            "o3_ratio",
            "delay_memtable_mb",
            "delay_memtables",
            "normal_memtable_mb",
            "disk_reads",
            "disk_read_points",
            "page_writes",
            "flushes",
            "insert_ms",
        ],
    );
    md
}

/// The figure specs of each DIOL experiment, by name (for checks that specs name real fields).
pub fn figure_specs(experiment: &str) -> &'static [FigureSpec] {
    match experiment {
        "diol" => LAYOUT_FIGURES,
        "diol-compaction" => COMPACTION_FIGURES,
        "diol-sizing" => SIZING_FIGURES,
        _ => &[],
    }
}
