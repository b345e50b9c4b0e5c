//! Figures and Markdown for the RUM experiments, from result rows only, so that `lsmlab plot` and
//! `lsmlab report` can regenerate them from any result file.
//!
//! Each experiment's figures are declared as data ([`FigureSpec`]s) and drawn by the one plotter in
//! [`crate::plot::FigureSpec`]. The paper's claims are not judged here: they are data in
//! `experiments/claims/rum.json`, judged by [`crate::claims`] into REPORT.md's claims table.

use crate::experiment::Row;
use crate::plot::{facets, render_specs, table_cells, FigureSpec, Filter, Mark};
use crate::plot::{markdown_table, TimeUnit};
use crate::result::ResultFile;
use std::path::{Path, PathBuf};

/// Figure 5 (update, flush and merge time per strategy, one stacked chart per dataset), Table 1
/// (flushes / merges) and Table 2 (maximum Update Memo size of the UM variants).
pub const UPDATE_FIGURES: &[FigureSpec] = &[
    FigureSpec {
        facets: &["dataset"],
        x_label: "strategy",
        y_label: "time",
        y_unit: Some(TimeUnit::Ms),
        ..FigureSpec::new(
            "rum-update-fig5-{dataset}",
            "Update cost on {dataset} ({scale} scale)",
            Mark::StackedBars {
                parts: &[
                    ("update", "update_ms"),
                    ("flush", "flush_ms"),
                    ("merge", "merge_ms"),
                ],
            },
        )
    },
    FigureSpec {
        x: "{dataset}",
        x_label: "strategy",
        ..FigureSpec::new(
            "rum-update-table1",
            "Table 1: flushes / merges",
            Mark::Table {
                cell: "{flushes} / {merges}",
            },
        )
    },
    FigureSpec {
        filters: &[Filter::Prefix("strategy", "UM")],
        x: "{dataset}",
        x_label: "strategy",
        ..FigureSpec::new(
            "rum-update-table2",
            "Table 2: maximum Update Memo size",
            Mark::Table {
                cell: "{um_max_entries}",
            },
        )
    },
];

/// Figure 6: query time against selectivity, one line per strategy, log x (and log y when the times
/// span more than two decades), one chart per dataset; measured and modelled (measured + counted
/// reads x device profile) time.
pub const QUERY_FIGURES: &[FigureSpec] = &[
    FigureSpec {
        facets: &["dataset"],
        x: "selectivity",
        x_label: "query side fraction s",
        y_label: "average query time",
        y_unit: Some(TimeUnit::Us),
        log_x: true,
        log_y: true,
        ..FigureSpec::new(
            "rum-query-fig6-{dataset}-time",
            "Range queries on {dataset} ({scale} scale)",
            Mark::Lines { y: "avg_query_us" },
        )
    },
    FigureSpec {
        facets: &["dataset"],
        x: "selectivity",
        x_label: "query side fraction s",
        y_label: "modelled query time",
        y_unit: Some(TimeUnit::Us),
        log_x: true,
        log_y: true,
        ..FigureSpec::new(
            "rum-query-fig6-{dataset}-modelled",
            "Range queries on {dataset} ({scale} scale)",
            Mark::Lines { y: "avg_modelled_us" },
        )
    },
];

/// The mix of a mixed-workload cell, as a bar category, and the axis label naming it.
const MIX: &str = "q={query_fraction} {query_skew}";
const MIX_LABEL: &str = "mix: query fraction q, query skew";

/// Mixed workloads: throughput and p99 update / query latency per mix, one chart per dataset (each on
/// a log axis only when its values span more than two decades).
pub const MIXED_FIGURES: &[FigureSpec] = &[
    FigureSpec {
        facets: &["dataset"],
        x: MIX,
        x_label: MIX_LABEL,
        y_label: "operations / s",
        log_y: true,
        ..FigureSpec::new(
            "rum-mixed-throughput-{dataset}",
            "Mixed workload throughput on {dataset} ({scale} scale)",
            Mark::Bars {
                y: "throughput_ops_s",
            },
        )
    },
    FigureSpec {
        facets: &["dataset"],
        x: MIX,
        x_label: MIX_LABEL,
        y_label: "p99 update latency",
        y_unit: Some(TimeUnit::Us),
        log_y: true,
        ..FigureSpec::new(
            "rum-mixed-latency-{dataset}",
            "p99 latency on {dataset}: updates (incl. flush/merge) ({scale} scale)",
            Mark::Bars { y: "p99_update_us" },
        )
    },
    FigureSpec {
        facets: &["dataset"],
        x: MIX,
        x_label: MIX_LABEL,
        y_label: "p99 query latency",
        y_unit: Some(TimeUnit::Us),
        log_y: true,
        ..FigureSpec::new(
            "rum-mixed-query-latency-{dataset}",
            "p99 query latency on {dataset} ({scale} scale)",
            Mark::Bars { y: "p99_query_us" },
        )
    },
];

/// Concurrent ingestion: throughput against threads, one line per strategy, one chart per dataset;
/// a chart says so when the machine had fewer cores than the threads it plots.
pub const CONCURRENCY_FIGURES: &[FigureSpec] = &[FigureSpec {
    facets: &["dataset"],
    x: "threads",
    x_label: "threads",
    y_label: "operations / s",
    log_x: true,
    log_y: true,
    threads: Some("threads"),
    ..FigureSpec::new(
        "rum-concurrency-{dataset}",
        "Concurrent ingestion on {dataset} ({scale} scale)",
        Mark::Lines {
            y: "throughput_ops_s",
        },
    )
}];

/// A tuning chart of `y` (in `y_unit` when a time) against the swept threshold, one line per
/// strategy and swept knob (y on a log axis when it spans more than two decades); a strategy swept
/// along both knobs keeps its colour, dashed the second time.
const fn tuning(
    stem: &'static str,
    title: &'static str,
    y: &'static str,
    y_label: &'static str,
    y_unit: Option<TimeUnit>,
) -> FigureSpec {
    FigureSpec {
        facets: &["dataset"],
        x: "threshold",
        x_label: "threshold",
        series: "{strategy}, {knob} swept",
        style: "{strategy}",
        y_label,
        y_unit,
        log_x: true,
        log_y: true,
        ..FigureSpec::new(stem, title, Mark::Lines { y })
    }
}

/// Cleaning thresholds: update time, max UM size, flushes and query time against the threshold.
pub const TUNING_FIGURES: &[FigureSpec] = &[
    tuning(
        "rum-tuning-{dataset}-update",
        "Cleaning thresholds on {dataset}: update time ({scale} scale)",
        "update_ms",
        "update time",
        Some(TimeUnit::Ms),
    ),
    tuning(
        "rum-tuning-{dataset}-um",
        "Cleaning thresholds on {dataset}: max UM entries ({scale} scale)",
        "um_max_entries",
        "max UM entries",
        None,
    ),
    tuning(
        "rum-tuning-{dataset}-flushes",
        "Cleaning thresholds on {dataset}: flushes ({scale} scale)",
        "flushes",
        "flushes",
        None,
    ),
    tuning(
        "rum-tuning-{dataset}-query",
        "Cleaning thresholds on {dataset}: query time ({scale} scale)",
        "avg_query_us",
        "query time",
        Some(TimeUnit::Us),
    ),
];

/// A table spec's table over the result's rows, as Markdown.
fn spec_table(spec: &FigureSpec, rows: &[Row]) -> String {
    let Mark::Table { cell } = spec.mark else {
        return String::new();
    };
    let kept: Vec<&Row> = facets(spec, rows).into_iter().flatten().collect();
    let (headers, body) = table_cells(spec, &kept, cell);
    markdown_table(&headers, &body)
}

/// A cell of a report table: strings as they are, floats to one decimal, `-` when absent.
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

pub(crate) fn update_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    render_specs(UPDATE_FIGURES, result, out_dir)
}

/// The REPORT.md section of `rum-update`: every row, then Tables 1 and 2.
pub fn update_report(result: &ResultFile) -> String {
    let rows: Vec<&Row> = result.rows.iter().collect();
    let mut md = format!(
        "Each dataset is ingested under each strategy ({} scale, seed {}); flushes and merges run inside \
         the stream. Times in ms.\n\n",
        result.scale, result.seed
    );
    md += &rows_markdown(
        &rows,
        &[
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
        ],
    );
    md += "\n**Table 1** (flushes / merges)\n\n";
    md += &spec_table(&UPDATE_FIGURES[1], &result.rows);
    md += "\n**Table 2** (maximum Update Memo entries)\n\n";
    md += &spec_table(&UPDATE_FIGURES[2], &result.rows);
    md
}

pub(crate) fn query_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    render_specs(QUERY_FIGURES, result, out_dir)
}

/// The REPORT.md section of `rum-query`: the rows at the largest selectivity.
pub fn query_report(result: &ResultFile) -> String {
    let largest = result
        .rows
        .iter()
        .filter_map(|r| r.get("selectivity").and_then(|v| v.as_f64()))
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
    let Some(largest) = largest else {
        return "No rows.\n".into();
    };
    let rows: Vec<&Row> = result
        .rows
        .iter()
        .filter(|r| r.get("selectivity").and_then(|v| v.as_f64()) == Some(largest))
        .collect();
    let mut md = format!(
        "Range queries after ingestion ({} scale, seed {}). The table shows the largest selectivity, s = {largest}.\n\n",
        result.scale, result.seed
    );
    md += &rows_markdown(
        &rows,
        &[
            "dataset",
            "strategy",
            "avg_query_us",
            "p95_query_us",
            "avg_page_reads",
            "avg_candidates",
            "avg_results",
            "avg_validation_lookups",
            "avg_modelled_us",
        ],
    );
    md
}

pub(crate) fn mixed_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    render_specs(MIXED_FIGURES, result, out_dir)
}

pub(crate) fn mixed_report(result: &ResultFile) -> String {
    let rows: Vec<&Row> = result.rows.iter().collect();
    let mut md = format!(
        "Updates with interleaved range queries ({} scale, seed {}).\n\n",
        result.scale, result.seed
    );
    md += &rows_markdown(
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
    );
    md
}

pub(crate) fn concurrency_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    render_specs(CONCURRENCY_FIGURES, result, out_dir)
}

pub(crate) fn concurrency_report(result: &ResultFile) -> String {
    let rows: Vec<&Row> = result.rows.iter().collect();
    let mut md = format!(
        "Update Memo ingestion with several threads ({} scale, seed {}), checked against a single-threaded replay.\n\n",
        result.scale, result.seed
    );
    md += &rows_markdown(
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
    );
    md
}

pub(crate) fn tuning_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    render_specs(TUNING_FIGURES, result, out_dir)
}

pub(crate) fn tuning_report(result: &ResultFile) -> String {
    let rows: Vec<&Row> = result.rows.iter().collect();
    let mut md = format!(
        "Cleaning thresholds swept ({} scale, seed {}).\n\n",
        result.scale, result.seed
    );
    md += &rows_markdown(
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
    );
    md
}

/// Every RUM experiment's figure specs, by experiment name (for checks that specs name real fields).
pub fn figure_specs(experiment: &str) -> &'static [FigureSpec] {
    match experiment {
        "rum-update" => UPDATE_FIGURES,
        "rum-query" => QUERY_FIGURES,
        "rum-mixed" => MIXED_FIGURES,
        "rum-concurrency" => CONCURRENCY_FIGURES,
        "rum-tuning" => TUNING_FIGURES,
        _ => &[],
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::RowBuilder;
    use crate::rows::{text_of};

    fn update_row(d: &str, s: &str, flushes: u64) -> Row {
        RowBuilder::new()
            .str("dataset", d)
            .str("strategy", s)
            .num("update_ms", 100.0)
            .num("flush_ms", 10.0)
            .num("merge_ms", 1.0)
            .int("flushes", flushes)
            .int("merges", 1u64)
            .int("um_max_entries", 42u64)
            .build()
    }

    #[test]
    fn update_tables_come_from_the_table_specs() {
        let mut result = crate::testing::sample_result();
        result.rows = vec![
            update_row("gowalla", "Eager", 14),
            update_row("gowalla", "UM+BV", 0),
            update_row("chicago", "Eager", 1),
        ];
        let md = update_report(&result);
        assert!(md.contains("| Eager    | 14 / 1  | 1 / 1   |"), "{md}");
        assert!(md.contains("| UM+BV    | 0 / 1   | -       |"), "{md}");
        // Table 2 keeps the UM variants only.
        let table2 = md.split("**Table 2**").nth(1).unwrap();
        assert!(table2.contains("UM+BV") && !table2.contains("Eager"), "{table2}");
    }

    #[test]
    fn spec_fields_list_what_a_spec_reads() {
        assert_eq!(
            lsmlab_harness::plot::spec_fields(&UPDATE_FIGURES[1]),
            vec!["dataset", "flushes", "merges", "strategy"]
        );
        let q = lsmlab_harness::plot::spec_fields(&QUERY_FIGURES[0]);
        assert!(q.contains(&"selectivity".to_string()) && q.contains(&"avg_query_us".to_string()));
        assert!(figure_specs("nope").is_empty());
        assert_eq!(text_of(&update_row("a", "b", 1), "flushes").as_deref(), Some("1"));
    }

    const EXPERIMENTS: [&str; 5] = [
        "rum-update",
        "rum-query",
        "rum-mixed",
        "rum-concurrency",
        "rum-tuning",
    ];

    #[test]
    fn every_bar_chart_names_its_x_axis_and_no_label_says_us() {
        for experiment in EXPERIMENTS {
            for spec in figure_specs(experiment) {
                if matches!(spec.mark, Mark::Bars { .. } | Mark::StackedBars { .. }) {
                    assert!(!spec.x_label.is_empty(), "{} has no x label", spec.stem);
                }
                for text in [spec.title, spec.x_label, spec.y_label] {
                    let words: Vec<&str> = text.split(|c: char| !c.is_alphanumeric()).collect();
                    assert!(!words.contains(&"us"), "{}: `{text}` says us", spec.stem);
                }
                if spec.y_label.contains("time") || spec.y_label.contains("latency") {
                    assert!(spec.y_unit.is_some(), "{}: a time axis without a unit", spec.stem);
                }
            }
        }
    }

    fn strategy_row(strategy: &str) -> RowBuilder {
        RowBuilder::new()
            .str("dataset", "gowalla")
            .str("strategy", strategy)
    }

    fn svg_of(dir: &Path, stem: &str) -> String {
        std::fs::read_to_string(dir.join(format!("{stem}.svg")))
            .unwrap()
            .to_ascii_lowercase()
    }

    fn hex(strategy: &str) -> String {
        let c = crate::plot::color_for(strategy);
        format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
    }

    #[test]
    fn a_strategy_has_one_colour_in_bars_lines_and_tuning_figures() {
        crate::registry::papers(); // installs the papers' figure styles, as the binary does
        let dir = tempfile::tempdir().unwrap();
        let mut result = crate::testing::sample_result();
        let paper = ["Eager", "Validation", "UM", "UM+F", "UM+M", "UM+BV", "UM+FMBV"];
        result.rows = paper
            .iter()
            .enumerate()
            .flat_map(|(i, s)| {
                [0.001, 0.064].map(|sel| {
                    strategy_row(s)
                        .num("selectivity", sel)
                        .num("avg_query_us", 100.0 * (i + 1) as f64)
                        .num("query_fraction", 0.01)
                        .str("query_skew", "hot")
                        .num("throughput_ops_s", 1000.0 * (i + 1) as f64)
                        .build()
                })
            })
            .collect();
        render_specs(&QUERY_FIGURES[..1], &result, dir.path()).unwrap();
        render_specs(&MIXED_FIGURES[..1], &result, dir.path()).unwrap();
        result.rows = [("UM+V", "vacuum_threshold"), ("UM+BV", "vacuum_threshold")]
            .iter()
            .chain(&[("UM+B", "buffered_threshold"), ("UM+BV", "buffered_threshold")])
            .flat_map(|(s, knob)| {
                [2u64, 8].map(|t| {
                    strategy_row(s)
                        .str("knob", *knob)
                        .int("threshold", t)
                        .num("update_ms", 10.0 * t as f64)
                        .build()
                })
            })
            .collect();
        render_specs(&TUNING_FIGURES[..1], &result, dir.path()).unwrap();

        let lines = svg_of(dir.path(), "rum-query-fig6-gowalla-time");
        let bars = svg_of(dir.path(), "rum-mixed-throughput-gowalla");
        let tuning = svg_of(dir.path(), "rum-tuning-gowalla-update");
        for strategy in paper {
            assert!(
                lines.contains(&hex(strategy)) && bars.contains(&hex(strategy)),
                "{strategy}"
            );
        }
        for strategy in ["UM+V", "UM+BV", "UM+B"] {
            assert!(tuning.contains(&hex(strategy)), "{strategy}");
        }
        // No tuning line borrows a baseline's colour.
        assert!(!tuning.contains(&hex("Validation")) && !tuning.contains(&hex("Eager")));
    }

    #[test]
    fn the_concurrency_figure_notes_threads_beyond_the_cores() {
        let dir = tempfile::tempdir().unwrap();
        let mut result = crate::testing::sample_result();
        result.machine.cores = 2;
        result.rows = [1u64, 2, 4, 8]
            .iter()
            .map(|t| {
                strategy_row("UM")
                    .int("threads", *t)
                    .num("throughput_ops_s", 1e5)
                    .build()
            })
            .collect();
        concurrency_figures(&result, dir.path()).unwrap();
        let svg = svg_of(dir.path(), "rum-concurrency-gowalla");
        assert!(
            svg.contains("this machine has 2 cores: the runs with 4 and 8 threads share them"),
            "{svg}"
        );
    }
}
