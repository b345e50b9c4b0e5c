//! Figures as data: an experiment declares each figure as a [`FigureSpec`] (mark, x, y, series,
//! facets, log axes, filters) and [`render_specs`] draws every spec from a result file's rows with
//! the plotters helpers of this module, so one plotter and one palette (one colour and one marker per
//! strategy) serve every experiment.
//!
//! Templates such as `rum-update-fig5-{dataset}` or `q={query_fraction} {query_skew}` are filled with
//! a row's (or a facet's) field values: strings as they are, numbers in JSON form; `{scale}` is the
//! result's scale.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::experiment::Row;
use crate::result::ResultFile;

/// What a figure draws.
#[derive(Clone, Copy, Debug)]
pub enum Mark {
    /// Grouped bars: for each x category, one bar per series of the numeric field `y`.
    Bars { y: &'static str },
    /// Stacked bars: for each x category one bar whose segments are the named fields `(name, field)`
    /// bottom-up (the series are the segments; a missing field counts 0).
    StackedBars {
        parts: &'static [(&'static str, &'static str)],
    },
    /// Lines: x is a numeric field, one line per series of the numeric field `y`, points by x.
    Lines { y: &'static str },
    /// A table image: one line per series, one column per x category, cells filled from `cell`
    /// (`-` where no row matches).
    Table { cell: &'static str },
}

/// Which rows a figure uses.
#[derive(Clone, Copy, Debug)]
pub enum Filter {
    /// The field's text is one of these.
    In(&'static str, &'static [&'static str]),
    /// The field's text starts with this.
    Prefix(&'static str, &'static str),
}

/// One figure (one per facet value combination), declared as data.
#[derive(Clone, Copy, Debug)]
pub struct FigureSpec {
    /// File stem template, e.g. `rum-query-fig6-{dataset}-time` (SVG and PNG are written).
    pub stem: &'static str,
    /// Title template.
    pub title: &'static str,
    pub mark: Mark,
    /// One figure per distinct combination of these fields, in first-seen order.
    pub facets: &'static [&'static str],
    pub filters: &'static [Filter],
    /// For [`Mark::Lines`] a numeric field; otherwise the template of an x category (table column).
    pub x: &'static str,
    /// Axis label of x; for a table, the header of its first column.
    pub x_label: &'static str,
    /// Series template, e.g. `{strategy}` (colours and markers follow the series name); unused by
    /// stacked bars, whose series are the parts.
    pub series: &'static str,
    /// Style key template of a series (colour and marker), e.g. `{strategy}` when the series name
    /// adds more; empty means the series name itself.
    pub style: &'static str,
    pub y_label: &'static str,
    /// Multiplies every y value (e.g. 1e-3 for ms to s).
    pub y_scale: f64,
    pub log_x: bool,
    pub log_y: bool,
}

impl FigureSpec {
    /// A spec with the common defaults (no facets, filters or log axes, y as measured); set the
    /// rest with struct update syntax.
    pub const fn new(stem: &'static str, title: &'static str, mark: Mark) -> FigureSpec {
        FigureSpec {
            stem,
            title,
            mark,
            facets: &[],
            filters: &[],
            x: "{strategy}",
            x_label: "",
            series: "{strategy}",
            style: "",
            y_label: "",
            y_scale: 1.0,
            log_x: false,
            log_y: false,
        }
    }
}

/// A field's text: strings as they are, other values in JSON form.
pub fn text_of(row: &Row, key: &str) -> Option<String> {
    row.get(key).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// `template` with every `{field}` replaced by the row's text (`extra` pairs first, e.g. `scale`);
/// a field the row lacks is left as `{field}`.
pub fn fill(template: &str, row: &Row, extra: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let key = &rest[open + 1..open + close];
        out += &rest[..open];
        match extra.iter().find(|(k, _)| *k == key) {
            Some((_, v)) => out += v,
            None => match text_of(row, key) {
                Some(v) => out += &v,
                None => out += &rest[open..=open + close],
            },
        }
        rest = &rest[open + close + 1..];
    }
    out + rest
}

fn keep(row: &Row, filters: &[Filter]) -> bool {
    filters.iter().all(|f| match f {
        Filter::In(key, values) => text_of(row, key).is_some_and(|t| values.contains(&t.as_str())),
        Filter::Prefix(key, prefix) => text_of(row, key).is_some_and(|t| t.starts_with(prefix)),
    })
}

fn distinct(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn num(row: &Row, key: &str) -> Option<f64> {
    row.get(key).and_then(Value::as_f64)
}

/// The table a [`Mark::Table`] spec draws from `rows` (already filtered): headers and cells. Also
/// used for the same table in Markdown.
pub fn table_cells(spec: &FigureSpec, rows: &[&Row], cell: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let columns = distinct(rows.iter().map(|r| fill(spec.x, r, &[])));
    let lines = distinct(rows.iter().map(|r| fill(spec.series, r, &[])));
    let mut headers = vec![spec.x_label.to_string()];
    headers.extend(columns.iter().cloned());
    let body = lines
        .iter()
        .map(|line| {
            let mut out = vec![line.clone()];
            out.extend(columns.iter().map(|col| {
                rows.iter()
                    .find(|r| &fill(spec.series, r, &[]) == line && &fill(spec.x, r, &[]) == col)
                    .map_or_else(|| "-".to_string(), |r| fill(cell, r, &[]))
            }));
            out
        })
        .collect();
    (headers, body)
}

/// The rows of `result` a spec keeps, grouped by facet (in first-seen order), each with its facet
/// row (the first row of the facet, for filling templates).
pub fn facets<'a>(spec: &FigureSpec, rows: &'a [Row]) -> Vec<Vec<&'a Row>> {
    let kept: Vec<&Row> = rows.iter().filter(|r| keep(r, spec.filters)).collect();
    let key = |r: &Row| -> Vec<Option<String>> { spec.facets.iter().map(|f| text_of(r, f)).collect() };
    let mut groups: Vec<(Vec<Option<String>>, Vec<&Row>)> = Vec::new();
    for r in kept {
        let k = key(r);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, members)) => members.push(r),
            None => groups.push((k, vec![r])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// Renders every spec for `result` into `out_dir` (SVG and PNG per figure); returns the paths.
pub fn render_specs(
    specs: &[FigureSpec],
    result: &ResultFile,
    out_dir: &Path,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    let scale = result.scale.as_str();
    for spec in specs {
        for rows in facets(spec, &result.rows) {
            let first = rows[0];
            let extra = [("scale", scale)];
            let stem = out_dir.join(fill(spec.stem, first, &extra));
            let title = fill(spec.title, first, &extra);
            paths.extend(render_one(spec, &rows, &stem, &title)?);
        }
    }
    Ok(paths)
}

fn render_one(spec: &FigureSpec, rows: &[&Row], stem: &Path, title: &str) -> anyhow::Result<Vec<PathBuf>> {
    let series_of = |r: &Row| fill(spec.series, r, &[]);
    let x_of = |r: &Row| fill(spec.x, r, &[]);
    match spec.mark {
        Mark::StackedBars { parts } => {
            let categories: Vec<String> = distinct(
                rows.iter()
                    .filter(|r| parts.iter().any(|(_, f)| num(r, f).is_some()))
                    .map(|r| x_of(r)),
            );
            let series: Vec<(String, Vec<f64>)> = parts
                .iter()
                .map(|(name, field)| {
                    let values = categories
                        .iter()
                        .map(|c| {
                            rows.iter()
                                .find(|r| &x_of(r) == c)
                                .and_then(|r| num(r, field))
                                .unwrap_or(0.0)
                                * spec.y_scale
                        })
                        .collect();
                    (name.to_string(), values)
                })
                .collect();
            super::stacked_bars(stem, title, spec.y_label, &categories, &series)
        }
        Mark::Bars { y } => {
            let categories = distinct(rows.iter().map(|r| x_of(r)));
            let names = distinct(rows.iter().map(|r| series_of(r)));
            let series: Vec<(String, Vec<f64>)> = names
                .into_iter()
                .map(|s| {
                    let values = categories
                        .iter()
                        .map(|c| {
                            rows.iter()
                                .find(|r| series_of(r) == s && &x_of(r) == c)
                                .and_then(|r| num(r, y))
                                .map_or(f64::NAN, |v| v * spec.y_scale)
                        })
                        .collect();
                    (s, values)
                })
                .collect();
            super::grouped_bars(stem, title, spec.y_label, &categories, &series, spec.log_y)
        }
        Mark::Lines { y } => {
            let names = distinct(rows.iter().map(|r| series_of(r)));
            let mut keys = Vec::new();
            let series: Vec<(String, Vec<(f64, f64)>)> = names
                .into_iter()
                .filter_map(|s| {
                    let members: Vec<&&Row> = rows.iter().filter(|r| series_of(r) == s).collect();
                    let mut points: Vec<(f64, f64)> = members
                        .iter()
                        .filter_map(|r| Some((num(r, spec.x)?, num(r, y)? * spec.y_scale)))
                        .collect();
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    if points.is_empty() {
                        return None;
                    }
                    keys.push(match spec.style {
                        "" => s.clone(),
                        style => fill(style, members[0], &[]),
                    });
                    Some((s, points))
                })
                .collect();
            super::line_chart_keyed(
                stem,
                title,
                spec.x_label,
                spec.y_label,
                (spec.log_x, spec.log_y),
                &series,
                &keys,
            )
        }
        Mark::Table { cell } => {
            let (headers, body) = table_cells(spec, rows, cell);
            super::table_figure(stem, title, &headers, &body)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::RowBuilder;
    use crate::plot::tests::assert_rendered;

    fn rows() -> Vec<Row> {
        let mut out = Vec::new();
        for d in ["gowalla", "berlinmod"] {
            for (i, s) in ["Eager", "UM", "UM+F"].iter().enumerate() {
                for sel in [0.001, 0.027, 0.343] {
                    out.push(
                        RowBuilder::new()
                            .str("dataset", d)
                            .str("strategy", *s)
                            .num("selectivity", sel)
                            .num("avg_query_us", 10.0 * (i + 1) as f64 + sel * 1000.0)
                            .num("update_ms", 100.0)
                            .num("flush_ms", 20.0 * i as f64)
                            .int("flushes", 3u64)
                            .build(),
                    );
                }
            }
        }
        out
    }

    fn result(rows: Vec<Row>) -> ResultFile {
        let mut r = crate::result::tests::sample();
        r.rows = rows;
        r
    }

    const SPECS: &[FigureSpec] = &[
        FigureSpec {
            facets: &["dataset"],
            x: "selectivity",
            x_label: "selectivity",
            y_label: "us",
            log_x: true,
            log_y: true,
            ..FigureSpec::new(
                "q-{dataset}",
                "Queries on {dataset} ({scale})",
                Mark::Lines { y: "avg_query_us" },
            )
        },
        FigureSpec {
            facets: &["dataset"],
            filters: &[Filter::In("selectivity", &["0.001"])],
            y_label: "s",
            y_scale: 1e-3,
            ..FigureSpec::new(
                "u-{dataset}",
                "Update on {dataset}",
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
            filters: &[
                Filter::In("selectivity", &["0.001"]),
                Filter::Prefix("strategy", "UM"),
            ],
            x: "{dataset}",
            x_label: "strategy",
            ..FigureSpec::new(
                "table",
                "Flushes",
                Mark::Table {
                    cell: "{flushes} / {flush_ms}",
                },
            )
        },
        FigureSpec {
            x: "s={selectivity}",
            facets: &["dataset"],
            log_y: true,
            ..FigureSpec::new("bars-{dataset}", "Bars", Mark::Bars { y: "avg_query_us" })
        },
    ];

    #[test]
    fn templates_fill_from_rows_and_extras() {
        let r = &rows()[0];
        assert_eq!(
            fill(
                "q-{dataset}-{selectivity} ({scale}) {missing}",
                r,
                &[("scale", "tiny")]
            ),
            "q-gowalla-0.001 (tiny) {missing}"
        );
    }

    #[test]
    fn every_mark_renders_one_figure_per_facet_to_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let paths = render_specs(SPECS, &result(rows()), dir.path()).unwrap();
        let names: Vec<String> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for stem in [
            "q-gowalla",
            "q-berlinmod",
            "u-gowalla",
            "u-berlinmod",
            "table",
            "bars-gowalla",
            "bars-berlinmod",
        ] {
            assert!(names.contains(&format!("{stem}.svg")), "{names:?}");
            assert!(names.contains(&format!("{stem}.png")), "{names:?}");
        }
        assert_eq!(paths.len(), 14);
        for pair in paths.chunks(2) {
            assert_rendered(pair);
        }
        let svg = std::fs::read_to_string(dir.path().join("q-gowalla.svg")).unwrap();
        assert!(
            svg.contains("Queries on gowalla (tiny)") && svg.contains("UM+F"),
            "title and legend"
        );
        let table = std::fs::read_to_string(dir.path().join("table.svg")).unwrap();
        assert!(
            table.contains("3 / 20") && !table.contains("Eager"),
            "filtered table cells"
        );
    }

    #[test]
    fn table_cells_mark_missing_cells() {
        let mut rs = rows();
        rs.retain(|r| {
            !(text_of(r, "dataset").unwrap() == "berlinmod" && text_of(r, "strategy").unwrap() == "UM")
        });
        let kept: Vec<&Row> = rs
            .iter()
            .filter(|r| num(r, "selectivity") == Some(0.001))
            .collect();
        let (headers, body) = table_cells(&SPECS[2], &kept, "{flushes}");
        assert_eq!(headers, vec!["strategy", "gowalla", "berlinmod"]);
        assert_eq!(body[1], vec!["UM", "3", "-"]);
    }
}
