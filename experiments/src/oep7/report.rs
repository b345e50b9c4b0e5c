//! Figures and REPORT.md sections of the OEP 7 experiments.

use std::path::{Path, PathBuf};

use crate::experiment::Row;
use crate::plot::{fill, render_specs, FigureSpec, Filter, Mark};
use crate::rows::{distinct_of, text_of};
use crate::plot::{self, Labels};
use crate::report::rows_table;
use crate::result::ResultFile;

const FETCH_CATEGORY: &str = "{cache} {cache_fraction} {order}";

/// The rows of the default setting (position-map pages cached).
const MAP_CACHED_ROWS: &[Filter] = &[Filter::In("map_cache", &["cached"])];

const FETCH_FIGURES: &[FigureSpec] = &[
    FigureSpec {
        facets: &["mode"],
        filters: MAP_CACHED_ROWS,
        x: FETCH_CATEGORY,
        x_label: "cache, cached fraction, order",
        series: "{cluster}",
        y_label: "modelled time (ms)",
        log_y: true,
        ..FigureSpec::new(
            "oep7-fetch-modelled-{mode}",
            "Fetch every record ({mode}): modelled time ({scale})",
            Mark::Bars { y: "modelled_ms" },
        )
    },
    FigureSpec {
        facets: &["mode"],
        filters: MAP_CACHED_ROWS,
        x: FETCH_CATEGORY,
        x_label: "cache, cached fraction, order",
        series: "{cluster}",
        y_label: "wall time (ms)",
        ..FigureSpec::new(
            "oep7-fetch-wall-{mode}",
            "Fetch every record ({mode}): wall time on the memory device ({scale})",
            Mark::Bars { y: "ms" },
        )
    },
    FigureSpec {
        facets: &["mode"],
        filters: MAP_CACHED_ROWS,
        x: FETCH_CATEGORY,
        x_label: "cache, cached fraction, order",
        series: "{cluster}",
        y_label: "device reads",
        ..FigureSpec::new(
            "oep7-fetch-device-reads-{mode}",
            "Fetch every record ({mode}): device reads ({scale})",
            Mark::Bars { y: "device_reads" },
        )
    },
    FigureSpec {
        facets: &["map_cache"],
        filters: &[Filter::In("mode", &["one-by-one"]), Filter::In("cache", &["cold"])],
        x: "{cache_fraction} {order}",
        x_label: "cached fraction, order",
        series: "{cluster}",
        y_label: "device reads",
        ..FigureSpec::new(
            "oep7-fetch-cold-map-{map_cache}",
            "Cold fetch, map pages {map_cache}: device reads ({scale})",
            Mark::Bars { y: "device_reads" },
        )
    },
];

/// Every `oep7-fetch` figure: pages per fetch beside the physical minimum, then the specs.
pub fn fetch_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let rows: Vec<Row> = result
        .rows
        .iter()
        .filter(|r| {
            text_of(r, "mode").as_deref() == Some("one-by-one")
                && text_of(r, "map_cache").is_none_or(|m| m == "cached")
        })
        .cloned()
        .collect();
    let rows = &rows;
    let cats: Vec<String> = {
        let mut seen = Vec::new();
        for r in rows {
            let c = fill(FETCH_CATEGORY, r, &[]);
            if !seen.contains(&c) {
                seen.push(c);
            }
        }
        seen
    };
    let mut series: Vec<(String, Vec<f64>)> = distinct_of(rows.iter(), "cluster")
        .into_iter()
        .map(|cl| {
            let vals = cats
                .iter()
                .map(|c| {
                    rows.iter()
                        .find(|r| {
                            text_of(r, "cluster").as_deref() == Some(&cl)
                                && &fill(FETCH_CATEGORY, r, &[]) == c
                        })
                        .and_then(|r| r.get("pages_per_fetch").and_then(|v| v.as_f64()))
                        .unwrap_or(f64::NAN)
                })
                .collect();
            (cl, vals)
        })
        .collect();
    series.push(("physical minimum (1 page)".into(), vec![1.0; cats.len()]));
    let title = format!("Pages read per fetch, one by one ({} scale)", result.scale);
    let mut paths = plot::grouped_bars(
        &out_dir.join("oep7-fetch-pages"),
        &Labels {
            title: &title,
            x: "cache, cached fraction, order",
            y: "pages per fetch",
            note: Some("page accesses through the cache; the physical minimum is one page per fetch"),
        },
        &cats,
        &series,
        false,
    )?;
    paths.extend(render_specs(FETCH_FIGURES, result, out_dir)?);
    Ok(paths)
}

fn section(result: &ResultFile, intro: &str, columns: &[&str], keep: impl Fn(&Row) -> bool) -> String {
    let rows: Vec<Row> = result.rows.iter().filter(|r| keep(r)).cloned().collect();
    let mut md = format!("{intro} ({} scale, seed {}).\n\n", result.scale, result.seed);
    md += &rows_table(&rows, columns);
    md
}

pub(crate) fn fetch_report(result: &ResultFile) -> String {
    let mut md = section(
        result,
        "Every record fetched one by one and in sorted batches; pages per fetch are page accesses (the physical \
         minimum is 1), device reads are cache misses, modelled time prices them for the configured profile. The \
         POC: warm 2,513 -> 1,845 ms (1.4x), cold 79,950 -> 26,327 ms (3x)",
        &[
            "cluster",
            "cache",
            "cache_fraction",
            "map_cache",
            "order",
            "mode",
            "records",
            "pages_per_fetch",
            "max_pages_per_fetch",
            "one_page_share",
            "device_reads",
            "ms",
            "modelled_ms",
            "modelled_ms_hdd",
        ],
        |_| true,
    );
    md.push('\n');
    md
}

const YCSB_FIGURES: &[FigureSpec] = &[
    FigureSpec {
        facets: &["workload"],
        filters: MAP_CACHED_ROWS,
        x: "cache_fraction",
        x_label: "cached fraction of the data pages",
        series: "{cluster}",
        y_label: "modelled throughput (ops/s)",
        ..FigureSpec::new(
            "oep7-ycsb-{workload}-modelled",
            "{workload}: modelled throughput by cached fraction ({scale})",
            Mark::Lines {
                y: "modelled_ops_per_s",
            },
        )
    },
    FigureSpec {
        facets: &["cache_fraction"],
        filters: MAP_CACHED_ROWS,
        x: "{workload}",
        x_label: "workload",
        series: "{cluster}",
        y_label: "pages per operation",
        ..FigureSpec::new(
            "oep7-ycsb-pages-{cache_fraction}",
            "YCSB: pages read per operation, {cache_fraction} of the data cached ({scale})",
            Mark::Bars { y: "pages_per_op" },
        )
    },
    FigureSpec {
        facets: &["cache_fraction"],
        filters: MAP_CACHED_ROWS,
        x: "{workload}",
        x_label: "workload",
        series: "{cluster}",
        y_label: "device reads",
        ..FigureSpec::new(
            "oep7-ycsb-reads-{cache_fraction}",
            "YCSB: device reads, {cache_fraction} of the data cached ({scale})",
            Mark::Bars { y: "page_reads" },
        )
    },
    FigureSpec {
        facets: &["map_cache"],
        filters: &[Filter::In("cache_fraction", &["0.2"])],
        x: "{workload}",
        x_label: "workload",
        series: "{cluster}",
        y_label: "modelled throughput (ops/s)",
        ..FigureSpec::new(
            "oep7-ycsb-map-{map_cache}",
            "YCSB, 20% cached, map pages {map_cache} ({scale})",
            Mark::Bars { y: "modelled_ops_per_s" },
        )
    },
];

pub(crate) fn ycsb_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    render_specs(YCSB_FIGURES, result, out_dir)
}

pub(crate) fn ycsb_report(result: &ResultFile) -> String {
    section(
        result,
        "YCSB A-F on both layouts with the cache holding a fraction of the data pages (the OEP's success metric: \
         20% cached)",
        &[
            "cluster",
            "workload",
            "cache_fraction",
            "map_cache",
            "ops",
            "pages_per_op",
            "page_reads",
            "cache_hit_ratio",
            "ops_per_s",
            "p95_us",
            "modelled_ops_per_s",
            "modelled_ops_per_s_hdd",
        ],
        |_| true,
    )
}

const SPACE_FIGURES: &[FigureSpec] = &[
    FigureSpec {
        x: "round",
        x_label: "churn round",
        series: "{cluster}",
        y_label: "file size (pages)",
        ..FigureSpec::new(
            "oep7-space-file",
            "Delete/insert churn: file size ({scale})",
            Mark::Lines { y: "file_pages" },
        )
    },
    FigureSpec {
        x: "round",
        x_label: "churn round",
        series: "{cluster}",
        y_label: "data pages in use",
        ..FigureSpec::new(
            "oep7-space-in-use",
            "Delete/insert churn: data pages in use ({scale})",
            Mark::Lines {
                y: "data_pages_in_use",
            },
        )
    },
    FigureSpec {
        x: "round",
        x_label: "churn round",
        series: "{cluster}",
        y_label: "stale record ids detected",
        ..FigureSpec::new(
            "oep7-space-stale",
            "Delete/insert churn: deleted ids answered stale ({scale})",
            Mark::Lines { y: "stale_detected" },
        )
    },
];

pub(crate) fn space_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    render_specs(SPACE_FIGURES, result, out_dir)
}

pub(crate) fn space_report(result: &ResultFile) -> String {
    section(
        result,
        "Delete/insert churn: file size, pages in use and the answers to every deleted id",
        &[
            "cluster",
            "round",
            "inserted",
            "deleted",
            "live_records",
            "file_pages",
            "map_pages",
            "data_pages_in_use",
            "bytes_per_live_record",
            "stale_detected",
            "deleted_detected",
            "wrong_records",
        ],
        |_| true,
    )
}

const GRAPH_FIGURES: &[FigureSpec] = &[
    FigureSpec {
        x: "{query}",
        x_label: "query",
        series: "{cluster}",
        y_label: "device reads",
        ..FigureSpec::new(
            "oep7-graph-reads",
            "Graph traversals: device reads ({scale})",
            Mark::Bars { y: "page_reads" },
        )
    },
    FigureSpec {
        x: "{query}",
        x_label: "query",
        series: "{cluster}",
        y_label: "pages per fetch",
        ..FigureSpec::new(
            "oep7-graph-pages",
            "Graph traversals: pages per record fetch ({scale})",
            Mark::Bars { y: "pages_per_fetch" },
        )
    },
    FigureSpec {
        x: "{query}",
        x_label: "query",
        series: "{cluster}",
        y_label: "modelled time (ms)",
        ..FigureSpec::new(
            "oep7-graph-modelled",
            "Graph traversals: modelled time ({scale})",
            Mark::Bars { y: "modelled_ms" },
        )
    },
];

pub(crate) fn graph_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    render_specs(GRAPH_FIGURES, result, out_dir)
}

pub(crate) fn graph_report(result: &ResultFile) -> String {
    section(
        result,
        "BFS and shortest path over vertex and edge records fetched by record id",
        &[
            "cluster",
            "query",
            "queries",
            "vertices_visited",
            "records_fetched",
            "pages_per_fetch",
            "page_reads",
            "cache_hit_ratio",
            "ms",
            "modelled_ms",
            "modelled_ms_hdd",
            "external_links",
        ],
        |_| true,
    )
}

/// The figure specs of an OEP 7 experiment (`oep7-fetch` also draws its pages-per-fetch figure,
/// with the physical minimum, from code).
pub fn figure_specs(experiment: &str) -> &'static [FigureSpec] {
    match experiment {
        "oep7-fetch" => FETCH_FIGURES,
        "oep7-ycsb" => YCSB_FIGURES,
        "oep7-space" => SPACE_FIGURES,
        "oep7-graph" => GRAPH_FIGURES,
        _ => &[],
    }
}
