//! Line charts (the RUM-tree paper's Figure 6: query time against selectivity, log axes).

use std::ops::Range;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::{axis_label, TickLabels};
use super::{
    axis_desc_font, draw_no_data, label_font, plot_err, render, titled_with_legend, Draw, Labels, Style,
    MARKER_RADIUS,
};

/// One line with point markers per series, points in the given order, a legend. Non-finite points
/// are skipped, and on a log axis so are points whose value on that axis is not positive. An axis
/// drawn on a log scale says so in its label.
pub fn line_chart(
    out_stem: &Path,
    labels: &Labels,
    logs: (bool, bool),
    series: &[(String, Vec<(f64, f64)>)],
) -> anyhow::Result<Vec<PathBuf>> {
    let keys: Vec<String> = series.iter().map(|(n, _)| n.clone()).collect();
    line_chart_keyed(out_stem, labels, logs, series, &keys)
}

/// [`line_chart`] with a style key per series (e.g. its strategy when the series name adds the
/// swept knob): colours and markers follow the keys (see [`super::palette::styles_for`]).
pub fn line_chart_keyed(
    out_stem: &Path,
    labels: &Labels,
    (log_x, log_y): (bool, bool),
    series: &[(String, Vec<(f64, f64)>)],
    keys: &[String],
) -> anyhow::Result<Vec<PathBuf>> {
    line_chart_with_intervals(out_stem, labels, (log_x, log_y), series, keys, &[])
}

/// [`line_chart_keyed`] with an error bar at each point: `errors[j][k]` is the half-width of the
/// interval of series j's k-th point (e.g. a 95% interval of a mean over `--repeat` runs); 0 or a
/// non-finite half-width draws none. `errors` is empty (no error bars) or has one list per series,
/// as long as its points.
pub fn line_chart_with_intervals(
    out_stem: &Path,
    labels: &Labels,
    (log_x, log_y): (bool, bool),
    series: &[(String, Vec<(f64, f64)>)],
    keys: &[String],
    errors: &[Vec<f64>],
) -> anyhow::Result<Vec<PathBuf>> {
    if !errors.is_empty()
        && (errors.len() != series.len()
            || errors
                .iter()
                .zip(series)
                .any(|(e, (_, pts))| e.len() != pts.len()))
    {
        anyhow::bail!(
            "line chart `{}`: the intervals do not match the series",
            labels.title
        );
    }
    if keys.len() != series.len() {
        anyhow::bail!(
            "line chart `{}`: {} style keys for {} series",
            labels.title,
            keys.len(),
            series.len()
        );
    }
    let x_label = axis_label(labels.x, None, log_x);
    let y_label = axis_label(labels.y, None, log_y);
    render(
        out_stem,
        &Lines {
            labels: Labels {
                x: &x_label,
                y: &y_label,
                ..*labels
            },
            log_x,
            log_y,
            series,
            keys,
            errors,
        },
    )
}

struct Lines<'a> {
    labels: Labels<'a>,
    log_x: bool,
    log_y: bool,
    series: &'a [(String, Vec<(f64, f64)>)],
    keys: &'a [String],
    /// Half-widths of intervals, parallel to `series` (empty: none).
    errors: &'a [Vec<f64>],
}

impl Lines<'_> {
    fn usable(&self, (x, y): (f64, f64)) -> bool {
        x.is_finite() && y.is_finite() && (!self.log_x || x > 0.0) && (!self.log_y || y > 0.0)
    }

    fn points(&self, values: &[(f64, f64)]) -> Vec<(f64, f64)> {
        values.iter().copied().filter(|p| self.usable(*p)).collect()
    }
}

/// The axis range for `values` (non-empty): whole decades on a log axis; on a linear axis the data
/// range, from 0 when all values are non-negative and `from_zero`, padded a little.
fn axis_range(values: &[f64], log: bool, from_zero: bool) -> Range<f64> {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if log {
        let (lo, hi) = (10f64.powf(lo.log10().floor()), 10f64.powf(hi.log10().ceil()));
        let hi = if hi <= lo { lo * 10.0 } else { hi };
        // A hair wider than the decades, so that rounding in the axis's own tick arithmetic does not
        // drop the tick and label of the lowest or highest decade.
        return lo * (1.0 - 1e-9)..hi * (1.0 + 1e-9);
    }
    let lo = if from_zero && lo >= 0.0 { 0.0 } else { lo };
    if hi <= lo {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return lo - pad..hi + pad;
    }
    let pad = (hi - lo) * 0.05;
    (if lo == 0.0 { 0.0 } else { lo - pad })..hi + pad
}

/// A log axis over few x values inside two decades (a sweep of x1, x2, x4, x8, say) is drawn
/// over the data's own span with a tick at each value, rather than padded out to whole decades
/// past the last point; `None` for anything else (whole decades, plotters' ticks).
fn log_key_points(values: &[f64]) -> Option<(Range<f64>, Vec<f64>)> {
    let mut keys: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    keys.sort_by(f64::total_cmp);
    keys.dedup_by(|a, b| (*a / *b - 1.0).abs() < 1e-9);
    let (lo, hi) = (*keys.first()?, *keys.last()?);
    if keys.len() < 2 || keys.len() > 12 || hi / lo >= 100.0 {
        return None;
    }
    // Neighbouring ticks closer than an eighth of the span would print into each other.
    let span = (hi / lo).ln();
    if keys.windows(2).any(|w| (w[1] / w[0]).ln() < span / 8.0) {
        return None;
    }
    // A little room beyond the end points so their markers are not cut.
    Some((lo / 1.06..hi * 1.06, keys))
}

impl Draw for Lines<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        // A series with nothing to draw (every value zero on a log axis, say) keeps its legend
        // entry, saying so, rather than a swatch for a line the reader will not find.
        let names: Vec<String> = self
            .series
            .iter()
            .map(|(n, pts)| {
                if self.points(pts).is_empty() {
                    format!("{n}: none")
                } else {
                    n.clone()
                }
            })
            .collect();
        let (plot, styles) = titled_with_legend(root, &self.labels, &names, self.keys, true)?;
        let mut all: Vec<(f64, f64)> = self.series.iter().flat_map(|(_, pts)| self.points(pts)).collect();
        // The axis makes room for the intervals' upper ends.
        for ((_, pts), errors) in self.series.iter().zip(self.errors) {
            for (&(x, y), e) in pts.iter().zip(errors) {
                if e.is_finite() && *e > 0.0 && self.usable((x, y + e)) {
                    all.push((x, y + e));
                }
            }
        }
        if all.is_empty() {
            return draw_no_data(&plot);
        }
        let xs = axis_range(&all.iter().map(|p| p.0).collect::<Vec<_>>(), self.log_x, false);
        let ys = axis_range(&all.iter().map(|p| p.1).collect::<Vec<_>>(), self.log_y, true);
        let x_keys = if self.log_x {
            log_key_points(&all.iter().map(|p| p.0).collect::<Vec<_>>())
        } else {
            None
        };
        match (self.log_x, self.log_y, x_keys) {
            (true, log_y, Some((range, keys))) => {
                let x = LogCoord::from(range.log_scale()).with_key_points(keys);
                if log_y {
                    self.draw_chart(&plot, x, ys.log_scale(), &styles)
                } else {
                    self.draw_chart(&plot, x, ys, &styles)
                }
            }
            (false, false, _) => self.draw_chart(&plot, xs, ys, &styles),
            (true, false, None) => self.draw_chart(&plot, xs.log_scale(), ys, &styles),
            (false, true, _) => self.draw_chart(&plot, xs, ys.log_scale(), &styles),
            (true, true, None) => self.draw_chart(&plot, xs.log_scale(), ys.log_scale(), &styles),
        }
    }
}

impl Lines<'_> {
    fn draw_chart<DB: DrawingBackend, X, Y>(
        &self,
        area: &DrawingArea<DB, Shift>,
        x_spec: X,
        y_spec: Y,
        styles: &[Style],
    ) -> anyhow::Result<()>
    where
        X: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let mut chart = ChartBuilder::on(area)
            .margin(16)
            .x_label_area_size(56)
            .y_label_area_size(90)
            .build_cartesian_2d(x_spec, y_spec)
            .map_err(plot_err)?;
        let (x_ticks, y_ticks) = (TickLabels::new(), TickLabels::new());
        let x_format = |v: &f64| x_ticks.label(*v);
        let y_format = |v: &f64| y_ticks.label(*v);
        chart
            .configure_mesh()
            .x_label_formatter(&x_format)
            .y_label_formatter(&y_format)
            .x_desc(self.labels.x)
            .y_desc(self.labels.y)
            .label_style(label_font())
            .axis_desc_style(axis_desc_font())
            .draw()
            .map_err(plot_err)?;
        for (j, ((_, values), style)) in self.series.iter().zip(styles).enumerate() {
            if let Some(errors) = self.errors.get(j) {
                let area = chart.plotting_area();
                let stroke = style.color.stroke_width(1);
                let mut marks = Vec::new();
                for (&(x, y), &e) in values.iter().zip(errors) {
                    if !(self.usable((x, y)) && e.is_finite() && e > 0.0) {
                        continue;
                    }
                    let low = if self.log_y && y - e <= 0.0 { y } else { y - e };
                    let top = area.map_coordinate(&(x, y + e));
                    let h = area.map_coordinate(&(x, low)).1 - top.1;
                    marks.push(
                        EmptyElement::at((x, y + e))
                            + PathElement::new(vec![(0, 0), (0, h)], stroke)
                            + PathElement::new(vec![(-4, 0), (4, 0)], stroke)
                            + PathElement::new(vec![(-4, h), (4, h)], stroke),
                    );
                }
                chart.draw_series(marks).map_err(plot_err)?;
            }
            let points = self.points(values);
            if points.is_empty() {
                continue;
            }
            let stroke = style.color.stroke_width(2);
            if style.dashed {
                chart
                    .draw_series(DashedLineSeries::new(points.iter().copied(), 8, 5, stroke))
                    .map_err(plot_err)?;
            } else {
                chart
                    .draw_series(LineSeries::new(points.iter().copied(), stroke))
                    .map_err(plot_err)?;
            }
            if style.reference {
                continue;
            }
            let marker = style.marker;
            let style = style.color.filled();
            match marker.polygon(MARKER_RADIUS) {
                None => chart
                    .draw_series(
                        points
                            .iter()
                            .map(|p| Circle::new(*p, MARKER_RADIUS as i32, style)),
                    )
                    .map_err(plot_err)?,
                Some(outline) => chart
                    .draw_series(
                        points
                            .iter()
                            .map(|p| EmptyElement::at(*p) + Polygon::new(outline.clone(), style)),
                    )
                    .map_err(plot_err)?,
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::assert_rendered;

    fn series() -> Vec<(String, Vec<(f64, f64)>)> {
        let sel = [0.0001, 0.0064, 0.0729, 0.4096, 1.5625, 4.6656, 11.7649];
        vec![
            (
                "Eager".into(),
                sel.iter().map(|s| (*s, 10.0 + 100.0 * s)).collect(),
            ),
            ("UM+F".into(), sel.iter().map(|s| (*s, 0.1 + s)).collect()),
            ("broken".into(), vec![(0.0, 1.0), (1.0, f64::NAN), (2.0, -1.0)]),
        ]
    }

    #[test]
    fn line_charts_render_on_every_axis_kind() {
        let dir = tempfile::tempdir().unwrap();
        for (log_x, log_y) in [(false, false), (true, false), (false, true), (true, true)] {
            let stem = dir.path().join(format!("fig6-{log_x}-{log_y}"));
            let labels = Labels {
                title: "Query time, berlinmod",
                x: "selectivity (%)",
                y: "query time (ms)",
                note: log_x.then_some("a note under the title"),
            };
            let paths = line_chart(&stem, &labels, (log_x, log_y), &series()).unwrap();
            assert_rendered(&paths);
            let svg = std::fs::read_to_string(&paths[0]).unwrap();
            assert_eq!(svg.contains("selectivity (%, log scale)"), log_x);
            assert_eq!(svg.contains("query time (ms, log scale)"), log_y);
            assert_eq!(svg.contains("a note under the title"), log_x);
        }
    }

    #[test]
    fn a_chart_with_no_usable_point_still_renders() {
        let dir = tempfile::tempdir().unwrap();
        let only_bad = vec![("x".to_string(), vec![(0.0, -1.0)])];
        assert_rendered(
            &line_chart(
                &dir.path().join("none"),
                &Labels {
                    title: "Nothing",
                    x: "x",
                    y: "y",
                    note: None,
                },
                (true, true),
                &only_bad,
            )
            .unwrap(),
        );
    }

    #[test]
    fn log_ranges_cover_whole_decades() {
        let near = |r: Range<f64>, lo: f64, hi: f64| {
            assert!(r.start <= lo && (r.start - lo).abs() < lo * 1e-6, "{r:?}");
            assert!(r.end >= hi && (r.end - hi).abs() < hi * 1e-6, "{r:?}");
        };
        near(axis_range(&[0.002, 35.0], true, false), 0.001, 100.0);
        near(axis_range(&[5.0], true, false), 1.0, 10.0);
        assert_eq!(axis_range(&[2.0, 4.0], false, true).start, 0.0);
    }

    #[test]
    fn a_short_log_sweep_is_ticked_at_its_own_values() {
        let (range, keys) = log_key_points(&[1.0, 2.0, 4.0, 8.0, 4.0, 1.0]).unwrap();
        assert_eq!(keys, vec![1.0, 2.0, 4.0, 8.0]);
        assert!(range.start < 1.0 && range.start > 0.9 && range.end > 8.0 && range.end < 9.0);
        // Many decades, too many values, or values too close to label apart keep whole decades.
        assert!(log_key_points(&[0.001, 1.0, 10.0]).is_none());
        assert!(log_key_points(&(1..=20).map(f64::from).collect::<Vec<_>>()).is_none());
        assert!(log_key_points(&[1.0, 1.05, 8.0]).is_none());
        assert!(log_key_points(&[3.0]).is_none());
    }
}
