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

use super::axis::{axis_label, wants_log};
use super::{Labels, TimeUnit};
use crate::result::ResultFile;
use crate::rows::{distinct, text_of, Row};

/// What a figure draws.
#[derive(Clone, Copy, Debug)]
pub enum Mark {
    /// Grouped bars: for each x category, one bar per series of the numeric field `y`.
    Bars {
        /// The numeric field each bar shows.
        y: &'static str,
    },
    /// Stacked bars: for each x category one bar whose segments are the named fields `(name, field)`
    /// bottom-up (the series are the segments; a missing field counts 0).
    StackedBars {
        /// The segments, bottom-up, as `(name, field)`.
        parts: &'static [(&'static str, &'static str)],
    },
    /// Lines: x is a numeric field, one line per series of the numeric field `y`, points by x.
    Lines {
        /// The numeric field each line shows.
        y: &'static str,
    },
    /// A table image: one line per series, one column per x category, cells filled from `cell`
    /// (`-` where no row matches).
    Table {
        /// The template of a cell's text.
        cell: &'static str,
    },
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
    /// What the figure draws.
    pub mark: Mark,
    /// One figure per distinct combination of these fields, in first-seen order.
    pub facets: &'static [&'static str],
    /// Which rows it uses (all must hold).
    pub filters: &'static [Filter],
    /// For [`Mark::Lines`] a numeric field; otherwise the template of an x category (table column).
    pub x: &'static str,
    /// Axis label of x (every bar chart names what its categories are); for a table, the header of
    /// its first column.
    pub x_label: &'static str,
    /// Series template, e.g. `{strategy}` (colours and markers follow the series name); unused by
    /// stacked bars, whose series are the parts.
    pub series: &'static str,
    /// Style key template of a series (colour and marker), e.g. `{strategy}` when the series name
    /// adds more; empty means the series name itself.
    pub style: &'static str,
    /// Axis label of y without its unit when [`FigureSpec::y_unit`] is set (the unit is added).
    pub y_label: &'static str,
    /// Multiplies every y value (after which they are in `y_unit`, when set).
    pub y_scale: f64,
    /// The time unit the y values are measured in, when they are times: the axis is then labelled
    /// in the unit that suits the data's range ([`TimeUnit::for_seconds`]), never in `5.00e-6`.
    pub y_unit: Option<TimeUnit>,
    /// A log x axis (for x values laid out in powers, e.g. selectivities or thread counts).
    pub log_x: bool,
    /// A log y axis when the figure's values span more than two decades (`wants_log`), else linear
    /// (grouped bars and lines; stacked bars are always linear).
    pub log_y: bool,
    /// The numeric field holding a thread count: when the machine that produced the result has
    /// fewer cores than the most threads a figure plots, the figure says so under its title.
    pub threads: Option<&'static str>,
    /// A dashed reference line across a line chart at this y (before `y_scale`), with its legend
    /// name: e.g. `(1.0, "no gain (1)")` under a speedup.
    pub reference_y: Option<(f64, &'static str)>,
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
            y_unit: None,
            log_x: false,
            log_y: false,
            threads: None,
            reference_y: None,
        }
    }
}

/// The fields a spec reads from rows (facets, filters, template fields, x and y).
pub fn spec_fields(spec: &FigureSpec) -> Vec<String> {
    let mut out: Vec<String> = spec.facets.iter().map(|s| s.to_string()).collect();
    let mut templates: Vec<&str> = vec![spec.stem, spec.title, spec.x, spec.series, spec.style];
    match spec.mark {
        Mark::Bars { y } | Mark::Lines { y } => out.push(y.to_string()),
        Mark::StackedBars { parts } => out.extend(parts.iter().map(|(_, f)| f.to_string())),
        Mark::Table { cell } => templates.push(cell),
    }
    for f in spec.filters {
        match f {
            Filter::In(k, _) | Filter::Prefix(k, _) => out.push(k.to_string()),
        }
    }
    for t in templates {
        let mut rest = t;
        if !t.contains('{') {
            if t == spec.x && matches!(spec.mark, Mark::Lines { .. }) {
                out.push(t.to_string());
            }
            continue;
        }
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else {
                break;
            };
            let key = &rest[open + 1..open + close];
            if key != "scale" {
                out.push(key.to_string());
            }
            rest = &rest[open + close + 1..];
        }
    }
    out.sort();
    out.dedup();
    out
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
            let note = cores_note(spec, &rows, result.machine.cores);
            paths.extend(render_one(spec, &rows, &stem, &title, note.as_deref())?);
        }
    }
    Ok(paths)
}

/// The note a figure of `spec` over `rows` carries when the machine had `cores` cores (0: unknown)
/// and the figure plots more threads than that.
pub fn cores_note(spec: &FigureSpec, rows: &[&Row], cores: usize) -> Option<String> {
    let field = spec.threads?;
    let mut over: Vec<u64> = rows
        .iter()
        .filter_map(|r| r.get(field).and_then(Value::as_u64))
        .filter(|t| cores > 0 && *t > cores as u64)
        .collect();
    over.sort_unstable();
    over.dedup();
    let list: Vec<String> = over.iter().map(u64::to_string).collect();
    let threads = match list.as_slice() {
        [] => return None,
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    let s = if cores == 1 { "" } else { "s" };
    Some(format!(
        "This machine has {cores} core{s}: the runs with {threads} threads share them (contention, not speed-up)."
    ))
}

/// The factor that turns one figure's y values (as measured, after `y_scale`) into the unit they
/// are shown in, and the y axis label naming that unit. `reference` are the values that set the
/// unit (the bars' or points' heights); `log` says whether the axis is logarithmic.
fn y_axis(spec: &FigureSpec, reference: &[f64], log: bool) -> (f64, String) {
    let Some(measured) = spec.y_unit else {
        return (1.0, spec.y_label.to_string());
    };
    let seconds: Vec<f64> = reference.iter().map(|v| v * measured.seconds()).collect();
    let shown = TimeUnit::for_seconds(&seconds, log);
    (
        measured.seconds() / shown.seconds(),
        axis_label(spec.y_label, Some(shown.symbol()), false),
    )
}

fn render_one(
    spec: &FigureSpec,
    rows: &[&Row],
    stem: &Path,
    title: &str,
    note: Option<&str>,
) -> anyhow::Result<Vec<PathBuf>> {
    // The x-axis title may name the facet's fields (`{sweep}`), as the title does.
    let x_label = rows
        .first()
        .map_or_else(|| spec.x_label.to_string(), |r| fill(spec.x_label, r, &[]));
    fn labels<'a>(x: &'a str, title: &'a str, y: &'a str, note: Option<&'a str>) -> Labels<'a> {
        Labels { title, x, y, note }
    }
    let series_of = |r: &Row| fill(spec.series, r, &[]);
    let x_of = |r: &Row| fill(spec.x, r, &[]);
    match spec.mark {
        Mark::StackedBars { parts } => {
            let categories: Vec<String> = distinct(
                rows.iter()
                    .filter(|r| parts.iter().any(|(_, f)| num(r, f).is_some()))
                    .map(|r| x_of(r)),
            );
            let mut series: Vec<(String, Vec<f64>)> = parts
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
            // The unit follows the bars' heights: each category's stack.
            let totals: Vec<f64> = (0..categories.len())
                .map(|i| series.iter().map(|(_, v)| v[i]).sum())
                .collect();
            // Rows averaged over `--repeat` runs carry `<part>_ci95`: each segment's interval.
            let with_ci = rows.iter().any(|r| {
                parts
                    .iter()
                    .any(|(_, f)| num(r, &format!("{f}{}", crate::repeat::CI_SUFFIX)).is_some())
            });
            let mut errors: Vec<Vec<f64>> = if with_ci {
                parts
                    .iter()
                    .map(|(_, field)| {
                        let ci = format!("{field}{}", crate::repeat::CI_SUFFIX);
                        categories
                            .iter()
                            .map(|c| {
                                rows.iter()
                                    .find(|r| &x_of(r) == c)
                                    .and_then(|r| num(r, &ci))
                                    .map_or(0.0, |v| v * spec.y_scale)
                            })
                            .collect()
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let (factor, y_label) = y_axis(spec, &totals, false);
            for (_, values) in &mut series {
                values.iter_mut().for_each(|v| *v *= factor);
            }
            for values in &mut errors {
                values.iter_mut().for_each(|v| *v *= factor);
            }
            let note = super::interval_note(note, !errors.is_empty());
            super::stacked_bars_with_intervals(
                stem,
                &labels(&x_label, title, &y_label, note.as_deref()),
                &categories,
                &series,
                &errors,
            )
        }
        Mark::Bars { y } => {
            let categories = distinct(rows.iter().map(|r| x_of(r)));
            let names = distinct(rows.iter().map(|r| series_of(r)));
            // Rows averaged over `--repeat` runs carry `<y>_ci95`: drawn as error bars.
            let ci = format!("{y}{}", crate::repeat::CI_SUFFIX);
            let mut errors: Vec<Vec<f64>> = if rows.iter().any(|r| num(r, &ci).is_some()) {
                names
                    .iter()
                    .map(|s| {
                        categories
                            .iter()
                            .map(|c| {
                                rows.iter()
                                    .find(|r| &series_of(r) == s && &x_of(r) == c)
                                    .and_then(|r| num(r, &ci))
                                    .map_or(0.0, |v| v * spec.y_scale)
                            })
                            .collect()
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let mut series: Vec<(String, Vec<f64>)> = names
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
            let all: Vec<f64> = series.iter().flat_map(|(_, v)| v.iter().copied()).collect();
            let log = spec.log_y && wants_log(&all);
            let (factor, y_label) = y_axis(spec, &all, log);
            for (_, values) in &mut series {
                values.iter_mut().for_each(|v| *v *= factor);
            }
            for values in &mut errors {
                values.iter_mut().for_each(|v| *v *= factor);
            }
            let note = super::interval_note(note, !errors.is_empty());
            super::grouped_bars_with_intervals(
                stem,
                &labels(&x_label, title, &y_label, note.as_deref()),
                &categories,
                &series,
                &errors,
                log,
            )
        }
        Mark::Lines { y } => {
            let names = distinct(rows.iter().map(|r| series_of(r)));
            let mut keys = Vec::new();
            // Rows averaged over `--repeat` runs carry `<y>_ci95`: drawn as error bars.
            let ci = format!("{y}{}", crate::repeat::CI_SUFFIX);
            let with_ci = rows.iter().any(|r| num(r, &ci).is_some());
            let mut errors: Vec<Vec<f64>> = Vec::new();
            let mut series: Vec<(String, Vec<(f64, f64)>)> = names
                .into_iter()
                .filter_map(|s| {
                    let members: Vec<&&Row> = rows.iter().filter(|r| series_of(r) == s).collect();
                    let mut points: Vec<(f64, f64, f64)> = members
                        .iter()
                        .filter_map(|r| {
                            let e = num(r, &ci).unwrap_or(0.0) * spec.y_scale;
                            Some((num(r, spec.x)?, num(r, y)? * spec.y_scale, e))
                        })
                        .collect();
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    if points.is_empty() {
                        return None;
                    }
                    keys.push(match spec.style {
                        "" => s.clone(),
                        style => fill(style, members[0], &[]),
                    });
                    if with_ci {
                        errors.push(points.iter().map(|p| p.2).collect());
                    }
                    Some((s, points.into_iter().map(|(x, y, _)| (x, y)).collect()))
                })
                .collect();
            if let Some((y, name)) = spec.reference_y {
                let xs = series.iter().flat_map(|(_, pts)| pts.iter().map(|p| p.0));
                let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                    (lo.min(x), hi.max(x))
                });
                if lo.is_finite() && hi.is_finite() {
                    series.push((
                        name.to_string(),
                        vec![(lo, y * spec.y_scale), (hi, y * spec.y_scale)],
                    ));
                    keys.push(super::palette::REFERENCE.to_string());
                    if with_ci {
                        errors.push(vec![0.0, 0.0]);
                    }
                }
            }
            let ys: Vec<f64> = series
                .iter()
                .flat_map(|(_, pts)| pts.iter())
                .filter(|(x, _)| x.is_finite() && (!spec.log_x || *x > 0.0))
                .map(|(_, y)| *y)
                .collect();
            let log_y = spec.log_y && wants_log(&ys);
            let (factor, y_label) = y_axis(spec, &ys, log_y);
            for (_, points) in &mut series {
                points.iter_mut().for_each(|p| p.1 *= factor);
            }
            for values in &mut errors {
                values.iter_mut().for_each(|v| *v *= factor);
            }
            let note = super::interval_note(note, !errors.is_empty());
            super::line_chart_with_intervals(
                stem,
                &labels(&x_label, title, &y_label, note.as_deref()),
                (spec.log_x, log_y),
                &series,
                &keys,
                &errors,
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
    use crate::plot::tests::{assert_rendered, svg_texts};

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
        let mut r = crate::testing::sample_result();
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
    fn rows_with_intervals_draw_error_bars_on_lines_and_bars() {
        let dir = tempfile::tempdir().unwrap();
        let (plain, with) = (dir.path().join("plain"), dir.path().join("with"));
        std::fs::create_dir_all(&plain).unwrap();
        std::fs::create_dir_all(&with).unwrap();
        let specs = [SPECS[0], SPECS[3]];
        render_specs(&specs, &result(rows()), &plain).unwrap();
        let repeated: Vec<Row> = rows()
            .into_iter()
            .map(|mut r| {
                // Small enough to leave the (log, whole-decade) axes as they were.
                let half = r["avg_query_us"].as_f64().unwrap() * 0.01;
                r.insert("avg_query_us_ci95".into(), serde_json::json!(half));
                r
            })
            .collect();
        let paths = render_specs(&specs, &result(repeated), &with).unwrap();
        for pair in paths.chunks(2) {
            assert_rendered(pair);
        }
        // Each error bar is three strokes (polylines; mesh lines are `<line>`s): 9 points per facet's lines, 9 bars per facet's bars.
        let strokes = |dir: &Path, name: &str| {
            let svg = std::fs::read_to_string(dir.join(name)).unwrap();
            svg.matches("<polyline").count()
        };
        for name in ["q-gowalla.svg", "bars-gowalla.svg"] {
            assert_eq!(strokes(&with, name), strokes(&plain, name) + 27, "{name}");
        }
    }

    #[test]
    fn rows_with_intervals_draw_error_bars_on_stacked_bars_and_say_so() {
        let dir = tempfile::tempdir().unwrap();
        let (plain, with) = (dir.path().join("plain"), dir.path().join("with"));
        std::fs::create_dir_all(&plain).unwrap();
        std::fs::create_dir_all(&with).unwrap();
        let specs = [SPECS[1]];
        render_specs(&specs, &result(rows()), &plain).unwrap();
        let repeated: Vec<Row> = rows()
            .into_iter()
            .map(|mut r| {
                r.insert("update_ms_ci95".into(), serde_json::json!(4.0));
                r.insert("flush_ms_ci95".into(), serde_json::json!(1.0));
                r
            })
            .collect();
        let paths = render_specs(&specs, &result(repeated), &with).unwrap();
        for pair in paths.chunks(2) {
            assert_rendered(pair);
        }
        let svg = |dir: &Path| std::fs::read_to_string(dir.join("u-gowalla.svg")).unwrap();
        let strokes = |dir: &Path| svg(dir).matches("<polyline").count();
        // Two parts with intervals in each of three stacks, three strokes per error bar.
        assert_eq!(strokes(&with), strokes(&plain) + 18);
        let noted = |dir: &Path| {
            svg_texts(&svg(dir))
                .iter()
                .any(|t| t.contains(crate::plot::INTERVAL_NOTE))
        };
        assert!(noted(&with) && !noted(&plain));
    }

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

    fn svg(dir: &Path, name: &str) -> String {
        std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap()
    }

    #[test]
    fn time_axes_take_their_unit_from_the_data() {
        // 5 to 20 µs, measured in ms: drawn in µs, never as 5.00e-6 s or 0.005 ms.
        let rows: Vec<Row> = [("Eager", 0.005), ("UM", 0.02)]
            .iter()
            .map(|(s, ms)| {
                RowBuilder::new()
                    .str("strategy", *s)
                    .num("update_ms", *ms)
                    .num("flush_ms", 0.0)
                    .build()
            })
            .collect();
        const TIMES: &[FigureSpec] = &[
            FigureSpec {
                x_label: "strategy",
                y_label: "time",
                y_unit: Some(TimeUnit::Ms),
                ..FigureSpec::new(
                    "stacked",
                    "Stacked",
                    Mark::StackedBars {
                        parts: &[("update", "update_ms"), ("flush", "flush_ms")],
                    },
                )
            },
            FigureSpec {
                x_label: "strategy",
                y_label: "update time",
                y_unit: Some(TimeUnit::Ms),
                log_y: true,
                ..FigureSpec::new("bars", "Bars", Mark::Bars { y: "update_ms" })
            },
        ];
        let dir = tempfile::tempdir().unwrap();
        render_specs(TIMES, &result(rows), dir.path()).unwrap();
        let stacked = svg(dir.path(), "stacked");
        assert!(stacked.contains("time (µs)"), "{stacked}");
        let bars = svg(dir.path(), "bars");
        // 5 to 20 spans less than two decades: linear, and the label says µs without "log scale".
        assert!(
            bars.contains("update time (µs)") && !bars.contains("log scale"),
            "{bars}"
        );
        for svg in [&stacked, &bars] {
            let texts = svg_texts(svg);
            assert!(texts.iter().all(|t| !t.contains("e-")), "{texts:?}");
            assert!(texts.iter().any(|t| t == "strategy"), "x axis label: {texts:?}");
            assert!(texts.iter().any(|t| t == "20"), "ticks up to 20 µs: {texts:?}");
        }
    }

    #[test]
    fn log_y_is_used_only_when_the_values_span_more_than_two_decades() {
        let dir = tempfile::tempdir().unwrap();
        let mut wide = rows();
        for (i, r) in wide.iter_mut().enumerate() {
            r.insert("avg_query_us".into(), Value::from(10f64.powi(i as i32 % 4)));
        }
        render_specs(&SPECS[3..4], &result(wide), dir.path()).unwrap();
        assert!(svg(dir.path(), "bars-gowalla").contains("log scale"));
        let mut narrow = rows();
        for r in &mut narrow {
            r.insert("avg_query_us".into(), Value::from(5.0));
        }
        render_specs(&SPECS[3..4], &result(narrow), dir.path()).unwrap();
        assert!(!svg(dir.path(), "bars-gowalla").contains("log scale"));
    }

    #[test]
    fn a_figure_says_when_it_plots_more_threads_than_cores() {
        let rows: Vec<Row> = [1u64, 2, 4, 8]
            .iter()
            .map(|t| {
                RowBuilder::new()
                    .str("strategy", "UM")
                    .int("threads", *t)
                    .num("throughput_ops_s", 1000.0)
                    .build()
            })
            .collect();
        const THREADS: FigureSpec = FigureSpec {
            x: "threads",
            x_label: "threads",
            log_x: true,
            threads: Some("threads"),
            ..FigureSpec::new(
                "threads",
                "Threads",
                Mark::Lines {
                    y: "throughput_ops_s",
                },
            )
        };
        let refs: Vec<&Row> = rows.iter().collect();
        assert_eq!(
            cores_note(&THREADS, &refs, 2).as_deref(),
            Some("This machine has 2 cores: the runs with 4 and 8 threads share them (contention, not speed-up).")
        );
        assert!(cores_note(&THREADS, &refs, 1)
            .unwrap()
            .contains("1 core: the runs with 2, 4 and 8 threads"));
        assert_eq!(cores_note(&THREADS, &refs, 8), None);
        assert_eq!(cores_note(&THREADS, &refs, 0), None, "unknown core count");
        let no_field = FigureSpec {
            threads: None,
            ..THREADS
        };
        assert_eq!(cores_note(&no_field, &refs, 2), None);

        let dir = tempfile::tempdir().unwrap();
        let mut two = result(rows.clone());
        two.machine.cores = 2;
        render_specs(&[THREADS], &two, dir.path()).unwrap();
        assert!(svg(dir.path(), "threads").contains("This machine has 2 cores"));
        let mut many = result(rows);
        many.machine.cores = 16;
        render_specs(&[THREADS], &many, dir.path()).unwrap();
        assert!(!svg(dir.path(), "threads").contains("This machine has"));
    }
}
