//! Bar charts: stacked (the RUM-tree paper's Figure 5, update/flush/merge time per strategy) and
//! grouped (one bar per series inside each category, optionally on a log axis).

use std::path::{Path, PathBuf};

use anyhow::bail;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::element::ComposedElement;
use plotters::prelude::*;

use super::axis::{axis_label, fmt_tick};
use super::{axis_desc_font, draw_no_data, label_font, plot_err, render, titled_with_legend, Draw, Labels};

/// One bar per category, one segment per series stacked bottom-up in series order, a legend, on a
/// linear axis. `series[j].1[i]` is series j's value in category i; values must be finite and
/// non-negative. `labels.x` names what the categories are. A non-zero segment thinner than a few
/// pixels is drawn that tall around its middle, over its neighbours, so it stays visible.
pub fn stacked_bars(
    out_stem: &Path,
    labels: &Labels,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> anyhow::Result<Vec<PathBuf>> {
    stacked_bars_with_intervals(out_stem, labels, categories, series, &[])
}

/// [`stacked_bars`] with an error bar at the top of each segment: `errors[j][i]` is the half-width
/// of series j's interval in category i (e.g. a 95% interval of a mean over `--repeat` runs),
/// drawn around the segment's upper edge (where the stack would end with that segment at its
/// interval's ends); 0 or a non-finite half-width draws none. `errors` is empty (no error bars) or
/// has one list per series.
pub fn stacked_bars_with_intervals(
    out_stem: &Path,
    labels: &Labels,
    categories: &[String],
    series: &[(String, Vec<f64>)],
    errors: &[Vec<f64>],
) -> anyhow::Result<Vec<PathBuf>> {
    check_shape(categories, series)?;
    check_errors(labels, categories, series, errors)?;
    for (name, values) in series {
        for (i, v) in values.iter().enumerate() {
            if !v.is_finite() || *v < 0.0 {
                bail!("stacked bars: series `{name}`, category `{}` has value {v}; expected a finite value >= 0", categories[i]);
            }
        }
    }
    render(
        out_stem,
        &Bars {
            labels: *labels,
            categories,
            series,
            errors,
            stacked: true,
            log_y: false,
        },
    )
}

fn check_errors(
    labels: &Labels,
    categories: &[String],
    series: &[(String, Vec<f64>)],
    errors: &[Vec<f64>],
) -> anyhow::Result<()> {
    if !errors.is_empty()
        && (errors.len() != series.len() || errors.iter().any(|e| e.len() != categories.len()))
    {
        bail!(
            "bar chart `{}`: the intervals do not match the series",
            labels.title
        );
    }
    Ok(())
}

/// One bar per series inside each category, side by side, a legend. Non-finite values are left
/// out; on a log axis (`log_y`, which the y label then states) non-positive values are left out too.
/// `labels.x` names what the categories are.
pub fn grouped_bars(
    out_stem: &Path,
    labels: &Labels,
    categories: &[String],
    series: &[(String, Vec<f64>)],
    log_y: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    grouped_bars_with_intervals(out_stem, labels, categories, series, &[], log_y)
}

/// [`grouped_bars`] with an error bar on each bar: `errors[j][i]` is the half-width of series j's
/// interval in category i (e.g. a 95% interval of a mean over `--repeat` runs), drawn from value -
/// half-width to value + half-width; 0 or a non-finite half-width draws none. `errors` is empty
/// (no error bars) or has one list per series.
pub fn grouped_bars_with_intervals(
    out_stem: &Path,
    labels: &Labels,
    categories: &[String],
    series: &[(String, Vec<f64>)],
    errors: &[Vec<f64>],
    log_y: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    check_shape(categories, series)?;
    check_errors(labels, categories, series, errors)?;
    let y_label = axis_label(labels.y, None, log_y);
    render(
        out_stem,
        &Bars {
            labels: Labels {
                y: &y_label,
                ..*labels
            },
            categories,
            series,
            errors,
            stacked: false,
            log_y,
        },
    )
}

fn check_shape(categories: &[String], series: &[(String, Vec<f64>)]) -> anyhow::Result<()> {
    for (name, values) in series {
        if values.len() != categories.len() {
            bail!(
                "bar chart: series `{name}` has {} values for {} categories",
                values.len(),
                categories.len()
            );
        }
    }
    Ok(())
}

struct Bars<'a> {
    labels: Labels<'a>,
    categories: &'a [String],
    series: &'a [(String, Vec<f64>)],
    /// Half-widths of intervals, parallel to `series` (empty: none).
    errors: &'a [Vec<f64>],
    stacked: bool,
    log_y: bool,
}

impl Bars<'_> {
    fn usable(&self, v: f64) -> bool {
        v.is_finite() && (!self.log_y || v > 0.0)
    }
}

impl Draw for Bars<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        let names: Vec<String> = self.series.iter().map(|(n, _)| n.clone()).collect();
        let (plot, styles) = titled_with_legend(root, &self.labels, &names, &names, false)?;
        let colors: Vec<RGBColor> = styles.iter().map(|s| s.color).collect();
        // The axis makes room for the intervals' upper ends.
        let values = || {
            self.series
                .iter()
                .enumerate()
                .flat_map(move |(j, (_, v))| {
                    v.iter().enumerate().map(move |(i, y)| {
                        let e = self.errors.get(j).map_or(0.0, |e| e[i]);
                        if e.is_finite() && e > 0.0 {
                            y + e
                        } else {
                            *y
                        }
                    })
                })
                .filter(|v| self.usable(*v))
        };
        if self.categories.is_empty() || values().next().is_none() {
            return draw_no_data(&plot);
        }
        if self.stacked {
            // The stack's height, or higher where a segment's interval reaches above it.
            let top = (0..self.categories.len())
                .map(|i| {
                    let mut bottom = 0.0;
                    let mut reach: f64 = 0.0;
                    for (j, (_, v)) in self.series.iter().enumerate() {
                        bottom += v[i];
                        let e = self.errors.get(j).map_or(0.0, |e| e[i]);
                        reach = reach.max(if e.is_finite() && e > 0.0 {
                            bottom + e
                        } else {
                            bottom
                        });
                    }
                    reach
                })
                .fold(0.0, f64::max);
            let top = if top > 0.0 { top * 1.08 } else { 1.0 };
            self.draw_chart(&plot, 0.0..top, 0.0, &colors)
        } else if self.log_y {
            let lo = values().fold(f64::INFINITY, f64::min);
            let hi = values().fold(0.0, f64::max);
            // The baseline sits a decade below the smallest value when that value is a whole
            // decade, so that every bar has a visible height.
            let floor = lo.log10().floor();
            let lo = 10f64.powf(if 10f64.powf(floor) >= lo {
                floor - 1.0
            } else {
                floor
            });
            let hi = 10f64.powf(hi.log10().ceil()).max(lo * 10.0);
            // A hair wider than the decades, so that the lowest and highest decade keep their labels.
            let range = lo * (1.0 - 1e-9)..hi * (1.0 + 1e-9);
            self.draw_chart(&plot, range.log_scale(), lo, &colors)
        } else {
            let lo = values().fold(0.0, f64::min);
            let hi = values().fold(0.0, f64::max);
            let (lo, hi) = (
                lo * 1.08,
                if hi > 0.0 {
                    hi * 1.08
                } else if lo < 0.0 {
                    0.0
                } else {
                    1.0
                },
            );
            self.draw_chart(&plot, lo..hi, 0.0, &colors)
        }
    }
}

/// The least height, in pixels, a non-zero segment of a stacked bar is drawn with.
const MIN_SEGMENT_PX: f64 = 4.0;

/// `text` in lines of at most `width` characters, broken at spaces, and a word longer than `width`
/// also before each `(` (a variant's suffix: `Validation(key-index)` wraps as `Validation` over
/// `(key-index)`); a part longer than `width` keeps its line.
fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        for (k, part) in split_long(word, width).into_iter().enumerate() {
            // the first part of a word follows a space; the parts after it follow no space
            let gap = usize::from(k == 0);
            match lines.last_mut() {
                Some(line)
                    if !line.is_empty() && line.chars().count() + gap + part.chars().count() <= width =>
                {
                    if gap == 1 {
                        line.push(' ');
                    }
                    line.push_str(part);
                }
                _ => lines.push(part.to_string()),
            }
        }
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// `word` whole if it fits `width`, else cut before each `(` that does not start it.
fn split_long(word: &str, width: usize) -> Vec<&str> {
    if word.chars().count() <= width {
        return vec![word];
    }
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, c) in word.char_indices() {
        if c == '(' && i > start {
            parts.push(&word[start..i]);
            start = i;
        }
    }
    parts.push(&word[start..]);
    parts
}

impl Bars<'_> {
    /// The heights stacked segments are drawn with, `[series][category]`: as measured, except that
    /// a non-zero segment thinner than [`MIN_SEGMENT_PX`] (a flush under a long update phase) is
    /// drawn that tall and the bar's largest segment gives up the difference, so every part stays
    /// visible and the bar's total keeps its height. A bar whose largest segment cannot give it up
    /// is drawn as measured. `unit_px` is the pixels of one y unit.
    fn visible_segments(&self, unit_px: f64) -> Vec<Vec<f64>> {
        let mut shown: Vec<Vec<f64>> = self.series.iter().map(|(_, v)| v.clone()).collect();
        if !(unit_px.is_finite() && unit_px > 0.0) {
            return shown;
        }
        let least = MIN_SEGMENT_PX / unit_px;
        for i in 0..self.categories.len() {
            let Some(largest) = (0..shown.len()).max_by(|&a, &b| shown[a][i].total_cmp(&shown[b][i])) else {
                continue;
            };
            let lift: f64 = (0..shown.len())
                .filter(|&j| j != largest && shown[j][i] > 0.0 && shown[j][i] < least)
                .map(|j| least - shown[j][i])
                .sum();
            if lift > 0.0 && shown[largest][i] - lift >= least {
                for (j, segments) in shown.iter_mut().enumerate() {
                    if j != largest && segments[i] > 0.0 && segments[i] < least {
                        segments[i] = least;
                    }
                }
                shown[largest][i] -= lift;
            }
        }
        shown
    }

    fn draw_chart<DB: DrawingBackend, Y>(
        &self,
        area: &DrawingArea<DB, Shift>,
        y_spec: Y,
        baseline: f64,
        colors: &[RGBColor],
    ) -> anyhow::Result<()>
    where
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let n = self.categories.len();
        let categories = self.categories;
        // Category names share the axis: shrink their font (16 down to 11 px) until the longest
        // fits its segment, at ~0.45 em per character; names that do not fit even at 11 px are
        // wrapped at spaces onto as many lines as the longest needs, drawn under the axis below.
        let (margin, y_area) = (16u32, 90u32);
        let segment_px = area.dim_in_pixel().0.saturating_sub(2 * margin + y_area) as f64 / n as f64;
        let longest = categories
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let x_font_size = (segment_px / (0.45 * longest)).clamp(11.0, 16.0);
        let wrapped: Option<Vec<Vec<String>>> = (segment_px < 0.45 * x_font_size * longest).then(|| {
            let width = ((segment_px / (0.45 * x_font_size)).floor() as usize).max(4);
            categories.iter().map(|c| wrap_words(c, width)).collect()
        });
        let lines = wrapped
            .as_ref()
            .map_or(1, |w| w.iter().map(Vec::len).max().unwrap_or(1));
        let line_px = (x_font_size * 1.2).ceil() as u32;
        let mut chart = ChartBuilder::on(area)
            .margin(margin)
            .x_label_area_size(64 + line_px * (lines as u32 - 1))
            .y_label_area_size(y_area)
            // Integer ranges are inclusive in plotters: 0..n-1 gives exactly n segments.
            .build_cartesian_2d((0..n - 1).into_segmented(), y_spec)
            .map_err(plot_err)?;
        let one_line = wrapped.is_none();
        let x_format = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) if one_line => categories.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        let y_format = |v: &f64| fmt_tick(*v);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&x_format)
            .y_label_formatter(&y_format)
            .x_desc(self.labels.x)
            .y_desc(self.labels.y)
            .label_style(label_font())
            .x_label_style(FontDesc::new(
                FontFamily::SansSerif,
                x_font_size,
                FontStyle::Normal,
            ))
            .axis_desc_style(axis_desc_font())
            .draw()
            .map_err(plot_err)?;
        if let Some(wrapped) = &wrapped {
            let font = FontDesc::new(FontFamily::SansSerif, x_font_size, FontStyle::Normal)
                .into_text_style(area)
                .pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Top,
                ));
            let (base_x, base_y) = area.get_base_pixel();
            let plot = chart.plotting_area();
            let axis_y = plot.get_base_pixel().1 + plot.dim_in_pixel().1 as i32;
            for (i, label) in wrapped.iter().enumerate() {
                let (x, _) = chart.backend_coord(&(SegmentValue::CenterOf(i), baseline));
                for (k, line) in label.iter().enumerate() {
                    let y = axis_y + 8 + (k as u32 * line_px) as i32;
                    area.draw(&Text::new(line.clone(), (x - base_x, y - base_y), font.clone()))
                        .map_err(plot_err)?;
                }
            }
        }

        let (plot_width, _) = chart.plotting_area().dim_in_pixel();
        let segment = plot_width as f64 / n as f64;
        let bar_rect = |i: usize, bottom: f64, top: f64, left: u32, right: u32, color: RGBColor| {
            let mut rect = Rectangle::new(
                [
                    (SegmentValue::Exact(i), bottom),
                    (SegmentValue::Exact(i + 1), top),
                ],
                color.filled(),
            );
            rect.set_margin(0, 0, left, right);
            rect
        };
        if self.stacked {
            let side = (segment * 0.15).round() as u32;
            let mut bottoms = vec![baseline; n];
            let mut tops: Vec<Vec<f64>> = Vec::new();
            let px = |y: f64| f64::from(chart.backend_coord(&(SegmentValue::Exact(0), y)).1);
            let shown = self.visible_segments(px(baseline) - px(baseline + 1.0));
            let mut shown_bottoms = vec![baseline; n];
            for (((_, values), shown), color) in self.series.iter().zip(&shown).zip(colors) {
                let bars: Vec<_> = (0..n)
                    .map(|i| {
                        let bar = bar_rect(
                            i,
                            shown_bottoms[i],
                            shown_bottoms[i] + shown[i],
                            side,
                            side,
                            *color,
                        );
                        shown_bottoms[i] += shown[i];
                        bottoms[i] += values[i];
                        bar
                    })
                    .collect();
                chart.draw_series(bars).map_err(plot_err)?;
                tops.push(bottoms.clone());
            }
            // Each segment's interval around its upper edge, at the bar's centre, drawn over
            // every segment so that no later segment hides it.
            let centre = (segment / 2.0).round() as i32;
            let cap = ((segment * 0.7 / 8.0).round() as i32).clamp(2, 8);
            for (errors, tops) in self.errors.iter().zip(&tops) {
                let marks: Vec<_> = (0..n)
                    .filter_map(|i| {
                        let (top, h) =
                            self.error_span(chart.plotting_area(), i, tops[i], errors[i], baseline)?;
                        Some(error_mark::<DB>(i, top, h, centre, cap))
                    })
                    .collect();
                chart.draw_series(marks).map_err(plot_err)?;
            }
        } else {
            let k = self.series.len().max(1);
            let inner = segment * 0.8;
            let width = inner / k as f64;
            for (j, ((_, values), color)) in self.series.iter().zip(colors).enumerate() {
                let left = segment * 0.1 + j as f64 * width;
                let right = (segment - left - width).max(0.0);
                let bars: Vec<_> = (0..n)
                    .filter(|i| self.usable(values[*i]))
                    .map(|i| {
                        let (lo, hi) = if values[i] >= baseline {
                            (baseline, values[i])
                        } else {
                            (values[i], baseline)
                        };
                        bar_rect(i, lo, hi, left.round() as u32, right.round() as u32, *color)
                    })
                    .collect();
                chart.draw_series(bars).map_err(plot_err)?;
                if let Some(errors) = self.errors.get(j) {
                    let centre = (left + width / 2.0).round() as i32;
                    let cap = ((width / 4.0).round() as i32).clamp(2, 8);
                    let marks: Vec<_> = (0..n)
                        .filter(|i| self.usable(values[*i]))
                        .filter_map(|i| {
                            let (top, h) =
                                self.error_span(chart.plotting_area(), i, values[i], errors[i], baseline)?;
                            Some(error_mark::<DB>(i, top, h, centre, cap))
                        })
                        .collect();
                    chart.draw_series(marks).map_err(plot_err)?;
                }
            }
        }
        Ok(())
    }
}

type Segmented = plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordusize>;

impl Bars<'_> {
    /// Where an error bar in category `i` around value `v` with half-width `e` goes (none when `e`
    /// is 0 or not finite): the interval's top, as a value, and its height in pixels.
    #[allow(clippy::too_many_arguments)]
    fn error_span<DB: DrawingBackend, Y>(
        &self,
        area: &DrawingArea<DB, Cartesian2d<Segmented, Y>>,
        i: usize,
        v: f64,
        e: f64,
        baseline: f64,
    ) -> Option<(f64, i32)>
    where
        Y: Ranged<ValueType = f64>,
    {
        if !(e.is_finite() && e > 0.0) {
            return None;
        }
        let low = if self.log_y && v - e <= baseline {
            baseline
        } else {
            v - e
        };
        let top = area.map_coordinate(&(SegmentValue::Exact(i), v + e));
        let bottom = area.map_coordinate(&(SegmentValue::Exact(i), low));
        Some((v + e, bottom.1 - top.1))
    }
}

/// Three strokes anchored at the interval's top: the bar, its upper cap and its lower cap.
type ErrorMark<DB> = ComposedElement<(SegmentValue<usize>, f64), DB, PathElement<(i32, i32)>, Strokes<DB>>;
type Strokes<DB> = ComposedElement<(i32, i32), DB, PathElement<(i32, i32)>, PathElement<(i32, i32)>>;

/// An error bar: a vertical line with caps, `centre` pixels from category `i`'s left edge, from
/// the interval's top (`top`, its anchor) down `h` pixels.
fn error_mark<DB: DrawingBackend>(i: usize, top: f64, h: i32, centre: i32, cap: i32) -> ErrorMark<DB> {
    let stroke = BLACK.stroke_width(1);
    EmptyElement::at((SegmentValue::Exact(i), top))
        + PathElement::new(vec![(centre, 0), (centre, h)], stroke)
        + PathElement::new(vec![(centre - cap, 0), (centre + cap, 0)], stroke)
        + PathElement::new(vec![(centre - cap, h), (centre + cap, h)], stroke)
}

#[cfg(test)]
mod tests {
    use super::wrap_words;

    #[test]
    fn long_names_wrap_at_spaces_and_before_a_variant_suffix() {
        assert_eq!(wrap_words("UM+FMBV", 8), ["UM+FMBV"]);
        assert_eq!(
            wrap_words("Validation(key-index)", 12),
            ["Validation", "(key-index)"]
        );
        assert_eq!(wrap_words("Eager(buddy)", 12), ["Eager(buddy)"]);
        assert_eq!(wrap_words("Eager(physical)", 8), ["Eager", "(physical)"]);
        assert_eq!(wrap_words("a b(c)", 3), ["a b", "(c)"]);
        assert_eq!(wrap_words("", 4), [""]);
    }

    use super::*;
    use crate::plot::tests::assert_rendered;

    fn categories() -> Vec<String> {
        ["Eager", "Validation", "UM", "UM+F"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn labels() -> Labels<'static> {
        Labels {
            title: "Update time, chicago",
            x: "strategy",
            y: "time (s)",
            note: None,
        }
    }

    #[test]
    fn stacked_bars_render_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let series = vec![
            ("update".to_string(), vec![10.0, 6.0, 3.0, 3.0]),
            ("flush".to_string(), vec![5.0, 4.0, 4.0, 0.5]),
            ("merge".to_string(), vec![2.0, 2.0, 1.0, 0.0]),
        ];
        let paths = stacked_bars(&dir.path().join("sub/fig5"), &labels(), &categories(), &series).unwrap();
        assert_rendered(&paths);
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        for text in ["Update time, chicago", "UM+F", "flush", "strategy", "time (s)"] {
            assert!(svg.contains(text), "SVG lacks {text}");
        }
    }

    #[test]
    fn thin_segments_are_drawn_visible_and_bar_totals_kept() {
        let categories = categories();
        let series = vec![
            ("update".to_string(), vec![100.0, 100.0, 0.5, 3.0]),
            ("flush".to_string(), vec![0.1, 5.0, 0.0, 0.1]),
            ("merge".to_string(), vec![0.2, 0.0, 0.5, 0.0]),
        ];
        let bars = Bars {
            labels: labels(),
            categories: &categories,
            series: &series,
            errors: &[],
            stacked: true,
            log_y: false,
        };
        // 1 px per unit: MIN_SEGMENT_PX units is the least visible height.
        let shown = bars.visible_segments(1.0);
        let least = MIN_SEGMENT_PX;
        // Bar 0: flush and merge lifted to the least height, update gives it up.
        assert_eq!((shown[1][0], shown[2][0]), (least, least));
        assert!((shown[0][0] - (100.0 - (least - 0.1) - (least - 0.2))).abs() < 1e-9);
        // Bar 1: nothing thin (a zero stays zero).
        assert_eq!((shown[0][1], shown[1][1], shown[2][1]), (100.0, 5.0, 0.0));
        // Bars 2 and 3: the largest segment cannot give up the lift: drawn as measured.
        assert_eq!((shown[0][2], shown[2][2]), (0.5, 0.5));
        assert_eq!((shown[0][3], shown[1][3]), (3.0, 0.1));
        for i in 0..categories.len() {
            let total: f64 = series.iter().map(|(_, v)| v[i]).sum();
            let drawn: f64 = shown.iter().map(|v| v[i]).sum();
            assert!((total - drawn).abs() < 1e-9, "bar {i}: {total} drawn as {drawn}");
        }
    }

    #[test]
    fn stacked_bars_reject_bad_values_and_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let bad = vec![("update".to_string(), vec![1.0, f64::NAN, 1.0, 1.0])];
        let err = stacked_bars(&dir.path().join("x"), &labels(), &categories(), &bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains("update") && err.contains("Validation"), "{err}");
        let short = vec![("update".to_string(), vec![1.0])];
        assert!(stacked_bars(&dir.path().join("x"), &labels(), &categories(), &short).is_err());
    }

    #[test]
    fn grouped_bars_render_linear_and_log() {
        let dir = tempfile::tempdir().unwrap();
        let groups: Vec<String> = vec!["gowalla".into(), "chicago".into(), "berlinmod".into()];
        let series = vec![
            ("Eager".to_string(), vec![100.0, 250.0, 0.0]),
            ("UM+F".to_string(), vec![1.0, f64::NAN, 0.5]),
        ];
        let labels = Labels {
            title: "Query",
            x: "dataset",
            y: "query time (ms)",
            note: None,
        };
        let lin = grouped_bars(&dir.path().join("lin"), &labels, &groups, &series, false).unwrap();
        assert_rendered(&lin);
        let log = grouped_bars(&dir.path().join("log"), &labels, &groups, &series, true).unwrap();
        assert_rendered(&log);
        let lin = std::fs::read_to_string(&lin[0]).unwrap();
        let log = std::fs::read_to_string(&log[0]).unwrap();
        assert!(
            lin.contains("query time (ms)") && !lin.contains("log scale"),
            "{lin}"
        );
        let texts = crate::plot::tests::svg_texts(&log);
        for text in ["query time (ms, log scale)", "dataset"] {
            assert!(texts.iter().any(|t| t == text), "{texts:?}");
        }
    }

    #[test]
    fn empty_bars_still_render() {
        let dir = tempfile::tempdir().unwrap();
        assert_rendered(&grouped_bars(&dir.path().join("empty"), &labels(), &[], &[], true).unwrap());
        let one = vec!["only".to_string()];
        let series = vec![("Eager".to_string(), vec![3.0])];
        assert_rendered(&stacked_bars(&dir.path().join("one"), &labels(), &one, &series).unwrap());
    }
}
