//! Timelines with shaded windows (the Leaper paper's Figures 1, 10 and 11: hit ratio, QPS and
//! latency over a run, flushes and compactions marked): one panel per measure stacked over a shared
//! x axis, one line per series in every panel, and spans of x shaded behind the lines.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::fmt_tick;
use super::{
    axis_desc_font, draw_no_data, label_font, plot_err, render, titled_with_legend, Draw, Labels, Style,
};

/// One panel: its y axis label and one line per series (points by x; non-finite ones skipped).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Panel {
    /// The panel's y axis label.
    pub y_label: String,
    /// One line per series: its label and its points as (x, y).
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    /// Half-widths of intervals around the lines (e.g. 95% intervals of means over `--repeat`
    /// runs): `intervals[j][k]` belongs to point k of series j and is drawn as a band from
    /// y - half-width to y + half-width in the series' colour; 0 or non-finite draws none there.
    /// Empty: no bands; otherwise one list per series, as long as its points.
    pub intervals: Vec<Vec<f64>>,
}

impl Panel {
    /// The band of series `j`: its points with a usable half-width, as (x, low, high).
    fn band(&self, j: usize) -> Vec<(f64, f64, f64)> {
        let (Some((_, pts)), Some(errs)) = (self.series.get(j), self.intervals.get(j)) else {
            return Vec::new();
        };
        pts.iter()
            .zip(errs)
            .filter(|((x, y), e)| x.is_finite() && y.is_finite() && e.is_finite() && **e > 0.0)
            .map(|(&(x, y), &e)| (x, y - e, y + e))
            .collect()
    }
}

/// A span of x shaded in every panel, with the name its kind has in the legend.
#[derive(Clone, Debug, PartialEq)]
pub struct Shade {
    /// Where the span starts, in x units.
    pub from: f64,
    /// Where the span ends, in x units.
    pub to: f64,
    /// The legend name of the span's kind (spans of one kind share a colour).
    pub kind: String,
}

/// The fill of the n-th kind of shade (light blue, light orange, light grey, ...).
fn shade_color(i: usize) -> RGBAColor {
    const FILLS: [RGBColor; 4] = [
        RGBColor(0xa0, 0xcb, 0xe8),
        RGBColor(0xff, 0xbe, 0x7d),
        RGBColor(0xba, 0xb0, 0xac),
        RGBColor(0x8c, 0xd1, 0x7d),
    ];
    FILLS[i % FILLS.len()].mix(0.45)
}

/// Panels stacked top to bottom sharing the x axis (`labels.x`), lines styled by series name
/// (the same series has the same colour in every panel), `shades` drawn behind the lines, and a
/// legend with the series and the shade kinds. `labels.y` is unused (each panel has its own).
pub fn timeline(
    out_stem: &Path,
    labels: &Labels,
    panels: &[Panel],
    shades: &[Shade],
) -> anyhow::Result<Vec<PathBuf>> {
    render(
        out_stem,
        &Timeline {
            labels: *labels,
            panels,
            shades,
        },
    )
}

struct Timeline<'a> {
    labels: Labels<'a>,
    panels: &'a [Panel],
    shades: &'a [Shade],
}

impl Timeline<'_> {
    fn series_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for p in self.panels {
            for (n, _) in &p.series {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
        names
    }

    fn shade_kinds(&self) -> Vec<String> {
        let mut kinds: Vec<String> = Vec::new();
        for s in self.shades {
            if !kinds.contains(&s.kind) {
                kinds.push(s.kind.clone());
            }
        }
        kinds
    }
}

impl Draw for Timeline<'_> {
    fn size(&self) -> (u32, u32) {
        (1100, 140 + 260 * self.panels.len().max(1) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        let names = self.series_names();
        let kinds = self.shade_kinds();
        let (plot, styles) = titled_with_legend(root, &self.labels, &names, &names, true)?;
        // The shade kinds go under the series in the legend column, right of the plot area (the
        // legend draws its entries 26 px apart from 30 px below the column's top).
        let (px, py) = plot.get_base_pixel();
        let (pw, _) = plot.dim_in_pixel();
        let (root_x, root_y) = root.get_base_pixel();
        let (w, _) = root.dim_in_pixel();
        let x0 = px - root_x + pw as i32 + 8;
        let font = label_font();
        for (i, kind) in kinds.iter().enumerate() {
            let top = py - root_y + 30 + 26 * (names.len() + i) as i32;
            if x0 + 20 < w as i32 {
                root.draw(&Rectangle::new(
                    [(x0, top), (x0 + 18, top + 16)],
                    shade_color(i).filled(),
                ))
                .map_err(plot_err)?;
                root.draw_text(&format!("{kind} (shaded)"), &font.color(&BLACK), (x0 + 28, top))
                    .map_err(plot_err)?;
            }
        }
        let points = || {
            self.panels
                .iter()
                .flat_map(|p| p.series.iter().flat_map(|(_, pts)| pts.iter().copied()))
                .filter(|(x, y)| x.is_finite() && y.is_finite())
        };
        if self.panels.is_empty() || points().next().is_none() {
            return draw_no_data(&plot);
        }
        let lo = points().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let hi = points().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let areas = plot.split_evenly((self.panels.len(), 1));
        let last = self.panels.len() - 1;
        for (i, (panel, area)) in self.panels.iter().zip(&areas).enumerate() {
            self.draw_panel(area, panel, lo..hi, &names, &styles, &kinds, i == last)?;
        }
        Ok(())
    }
}

impl Timeline<'_> {
    #[allow(clippy::too_many_arguments)]
    fn draw_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        panel: &Panel,
        xs: std::ops::Range<f64>,
        names: &[String],
        styles: &[Style],
        kinds: &[String],
        last: bool,
    ) -> anyhow::Result<()> {
        let bands: Vec<Vec<(f64, f64, f64)>> = (0..panel.series.len()).map(|j| panel.band(j)).collect();
        // The axis makes room for the bands' ends.
        let ys: Vec<f64> = panel
            .series
            .iter()
            .flat_map(|(_, pts)| pts.iter())
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|p| p.1)
            .chain(bands.iter().flatten().flat_map(|&(_, lo, hi)| [lo, hi]))
            .collect();
        let (y_lo, y_hi) = match (
            ys.iter().copied().reduce(f64::min),
            ys.iter().copied().reduce(f64::max),
        ) {
            (Some(a), Some(b)) if b > a => {
                // A span under 2% of the values' size is below what a reader should take for a
                // difference: the axis shows at least that much, centred, so near-equal series
                // read as near-equal and neighbouring ticks keep distinct labels.
                let least = 0.02 * a.abs().max(b.abs());
                let (a, b) = if b - a < least {
                    let mid = (a + b) / 2.0;
                    (mid - least / 2.0, mid + least / 2.0)
                } else {
                    (a, b)
                };
                let pad = (b - a) * 0.05;
                (if a >= 0.0 { (a - pad).max(0.0) } else { a - pad }, b + pad)
            }
            (Some(a), _) => (a - a.abs().max(1.0) * 0.1, a + a.abs().max(1.0) * 0.1),
            _ => (0.0, 1.0),
        };
        let mut chart = ChartBuilder::on(area)
            .margin(10)
            .x_label_area_size(if last { 48 } else { 8 })
            .y_label_area_size(90)
            .build_cartesian_2d(xs, y_lo..y_hi)
            .map_err(plot_err)?;
        let format = |v: &f64| fmt_tick(*v);
        let mut mesh = chart.configure_mesh();
        mesh.y_label_formatter(&format)
            .x_label_formatter(&format)
            .y_desc(panel.y_label.as_str())
            .label_style(label_font())
            .axis_desc_style(axis_desc_font());
        if last {
            mesh.x_desc(self.labels.x);
        } else {
            mesh.x_labels(0);
        }
        mesh.draw().map_err(plot_err)?;
        for s in self.shades {
            let k = kinds.iter().position(|k| *k == s.kind).unwrap_or(0);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(s.from, y_lo), (s.to, y_hi)],
                    shade_color(k).filled(),
                )))
                .map_err(plot_err)?;
        }
        for ((name, _), band) in panel.series.iter().zip(&bands) {
            let Some(style) = names.iter().position(|n| n == name).map(|i| styles[i]) else {
                continue;
            };
            if band.len() < 2 {
                continue;
            }
            // Upper edge left to right, then the lower edge back.
            let outline: Vec<(f64, f64)> = band
                .iter()
                .map(|&(x, _, hi)| (x, hi))
                .chain(band.iter().rev().map(|&(x, lo, _)| (x, lo)))
                .collect();
            chart
                .draw_series(std::iter::once(Polygon::new(
                    outline,
                    style.color.mix(0.22).filled(),
                )))
                .map_err(plot_err)?;
        }
        for (name, pts) in &panel.series {
            let Some(style) = names.iter().position(|n| n == name).map(|i| styles[i]) else {
                continue;
            };
            let pts: Vec<(f64, f64)> = pts
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            let stroke = style.color.stroke_width(2);
            if style.dashed {
                chart
                    .draw_series(DashedLineSeries::new(pts, 8, 5, stroke))
                    .map_err(plot_err)?;
            } else {
                chart
                    .draw_series(LineSeries::new(pts, stroke))
                    .map_err(plot_err)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{assert_rendered, svg_texts};

    #[test]
    fn a_timeline_renders_panels_lines_and_shades() {
        let dir = tempfile::tempdir().unwrap();
        let line = |f: fn(f64) -> f64| (0..200).map(|i| (i as f64, f(i as f64))).collect::<Vec<_>>();
        let panels = vec![
            Panel {
                y_label: "hit ratio".into(),
                series: vec![
                    (
                        "incremental-warmup".into(),
                        line(|x| 0.9 + (x / 50.0).sin() * 0.05),
                    ),
                    ("leaper".into(), line(|_| 0.97)),
                ],
                intervals: Vec::new(),
            },
            Panel {
                y_label: "QPS".into(),
                series: vec![
                    ("incremental-warmup".into(), line(|x| 1e5 + x * 100.0)),
                    ("leaper".into(), line(|x| 1.2e5 + x)),
                ],
                intervals: Vec::new(),
            },
        ];
        let shades = vec![
            Shade {
                from: 20.0,
                to: 30.0,
                kind: "compaction".into(),
            },
            Shade {
                from: 50.0,
                to: 52.0,
                kind: "flush".into(),
            },
        ];
        let labels = Labels {
            title: "e-commerce (tiny)",
            x: "interval",
            y: "",
            note: Some("windows of incremental-warmup"),
        };
        let paths = timeline(&dir.path().join("t"), &labels, &panels, &shades).unwrap();
        assert_rendered(&paths);
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        let texts = svg_texts(&svg);
        for want in [
            "hit ratio",
            "QPS",
            "leaper",
            "compaction (shaded)",
            "flush (shaded)",
            "interval",
        ] {
            assert!(texts.iter().any(|t| t == want), "{want}: {texts:?}");
        }
        // Intervals draw one band per series that has them, behind its line.
        let mut banded = panels.clone();
        banded[0].intervals = vec![vec![0.01; 200], vec![0.0; 200]];
        banded[1].intervals = vec![vec![500.0; 200], vec![f64::NAN; 200]];
        let with = timeline(&dir.path().join("banded"), &labels, &banded, &shades).unwrap();
        assert_rendered(&with);
        let polygons = |p: &Path| std::fs::read_to_string(p).unwrap().matches("<polygon").count();
        assert_eq!(polygons(&with[0]), polygons(&paths[0]) + 2);
        // nothing to draw still renders
        assert_rendered(&timeline(&dir.path().join("empty"), &labels, &[], &[]).unwrap());
    }
}
