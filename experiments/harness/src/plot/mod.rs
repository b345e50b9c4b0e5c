//! Paper-style figures with plotters, written as both SVG and PNG.
//!
//! Text is drawn with DejaVu Sans embedded through the `dejavu` crate and registered with plotters'
//! `ab_glyph` backend ([`ensure_fonts`]), so PNG text renders on a machine with no system fonts and
//! no font libraries (`docs/design.md#conventions`). Every helper writes `<stem>.svg` and
//! `<stem>.png` and returns both paths, SVG first.

mod axis;
mod bars;
mod line;
mod palette;
mod spec;
mod table;
mod timeline;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::{anyhow, Context};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

pub use axis::TimeUnit;
pub use bars::{grouped_bars, grouped_bars_with_intervals, stacked_bars, stacked_bars_with_intervals};
pub use line::{line_chart, line_chart_keyed, line_chart_with_intervals};
pub(crate) use palette::canonical;
pub use palette::{
    color_for, install as install_styles, is_reference, marker_for, style_for, FixedStyle, Marker, Style,
    PALETTE, REFERENCE,
};
pub use spec::{cores_note, facets, fill, render_specs, spec_fields, table_cells, FigureSpec, Filter, Mark};
pub use table::{markdown_table, table_figure};
pub use timeline::{timeline, Panel, Shade};

/// What a figure says under its title when it draws the 95% intervals of rows averaged over
/// `--repeat` runs (their `<field>_ci95`), so a reader knows what the bars or bands are.
pub const INTERVAL_NOTE: &str = "error bars and bands: 95% interval of the mean over the repeated runs";

/// `note` with [`INTERVAL_NOTE`] after it when the figure draws intervals.
pub fn interval_note(note: Option<&str>, drawn: bool) -> Option<String> {
    match (note, drawn) {
        (Some(n), true) => Some(format!("{n}; {INTERVAL_NOTE}")),
        (None, true) => Some(INTERVAL_NOTE.to_string()),
        (n, false) => n.map(str::to_string),
    }
}

/// Default canvas size of a chart, in pixels.
pub const CHART_SIZE: (u32, u32) = (1024, 640);

/// The words on a chart: title, axis labels (a bar chart's x label names what its categories are)
/// and an optional note printed under the title (a caveat the reader needs to read the figure).
#[derive(Clone, Copy, Debug, Default)]
pub struct Labels<'a> {
    /// The chart's title.
    pub title: &'a str,
    /// The x axis label.
    pub x: &'a str,
    /// The y axis label.
    pub y: &'a str,
    /// A caveat printed under the title.
    pub note: Option<&'a str>,
}

/// Registers the embedded DejaVu fonts with plotters, once per process. Every helper calls it;
/// call it yourself before drawing with plotters directly.
pub fn ensure_fonts() {
    static FONTS: Once = Once::new();
    FONTS.call_once(|| {
        let sans = dejavu::sans::regular();
        let faces: [(&str, FontStyle, &'static [u8]); 7] = [
            ("sans-serif", FontStyle::Normal, sans),
            ("sans-serif", FontStyle::Bold, dejavu::sans::bold()),
            ("sans-serif", FontStyle::Italic, dejavu::sans::oblique()),
            ("sans-serif", FontStyle::Oblique, dejavu::sans::oblique()),
            // Text that asks for another family still renders, in DejaVu.
            ("serif", FontStyle::Normal, sans),
            ("monospace", FontStyle::Normal, dejavu::sans_mono::regular()),
            ("DejaVu Sans", FontStyle::Normal, sans),
        ];
        for (family, style, bytes) in faces {
            if plotters::style::register_font(family, style, bytes).is_err() {
                // The bytes are compiled in; failing to parse them is a build problem, not input.
                panic!(
                    "embedded DejaVu font for {family} ({}) does not parse",
                    style.as_str()
                );
            }
        }
    });
}

/// `stem` + `.ext`, keeping any dots already in the stem (`fig5.chicago` -> `fig5.chicago.svg`).
pub fn with_suffix(stem: &Path, ext: &str) -> PathBuf {
    let mut name = OsString::from(stem.as_os_str());
    name.push(".");
    name.push(ext);
    PathBuf::from(name)
}

/// Something drawable onto any plotters backend, so one description renders to SVG and PNG alike.
pub(crate) trait Draw {
    fn size(&self) -> (u32, u32) {
        CHART_SIZE
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()>;
}

/// Turns a plotters error (whose type depends on the backend) into an anyhow error.
pub(crate) fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("plotters: {e}")
}

/// Writes `figure` to `<stem>.svg` and `<stem>.png` (each atomically), creating the directory.
pub(crate) fn render(out_stem: &Path, figure: &impl Draw) -> anyhow::Result<Vec<PathBuf>> {
    ensure_fonts();
    if let Some(dir) = out_stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating directory {}", dir.display()))?;
    }
    let size = figure.size();
    let svg = with_suffix(out_stem, "svg");
    crate::atomic::write_with(&svg, |tmp| {
        let root = SVGBackend::new(tmp, size).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        figure.draw(&root).context("drawing")?;
        root.present().map_err(plot_err)
    })?;
    let png = with_suffix(out_stem, "png");
    crate::atomic::write_with(&png, |tmp| {
        let root = BitMapBackend::new(tmp, size).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        figure.draw(&root).context("drawing")?;
        root.present().map_err(plot_err)
    })?;
    Ok(vec![svg, png])
}

pub(crate) fn title_font() -> FontDesc<'static> {
    FontDesc::new(FontFamily::SansSerif, 26.0, FontStyle::Bold)
}

pub(crate) fn label_font() -> FontDesc<'static> {
    FontDesc::new(FontFamily::SansSerif, 16.0, FontStyle::Normal)
}

pub(crate) fn axis_desc_font() -> FontDesc<'static> {
    FontDesc::new(FontFamily::SansSerif, 18.0, FontStyle::Normal)
}

pub(crate) fn note_font() -> FontDesc<'static> {
    FontDesc::new(FontFamily::SansSerif, 16.0, FontStyle::Italic)
}

/// Height of the strip under the title that holds a figure's note, in pixels.
const NOTE_HEIGHT: u32 = 28;

/// The plot area and, when there are series, the legend column beside it.
type PlotAndLegend<DB> = (DrawingArea<DB, Shift>, Option<DrawingArea<DB, Shift>>);

/// Draws the title and splits the rest into the plot area and, when there are series names, a
/// legend column on the right sized to the longest name.
fn title_and_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    note: Option<&str>,
    names: &[String],
) -> anyhow::Result<PlotAndLegend<DB>> {
    let mut body = root.titled(title, title_font()).map_err(plot_err)?;
    if let Some(note) = note {
        let (strip, rest) = body.split_vertically(NOTE_HEIGHT);
        strip
            .draw_text(note, &note_font().color(&RGBColor(0x60, 0x20, 0x20)), (16, 4))
            .map_err(plot_err)?;
        body = rest;
    }
    if names.is_empty() {
        return Ok((body, None));
    }
    let font = label_font();
    let widest = names
        .iter()
        .map(|n| font.box_size(n).map(|(w, _)| w).unwrap_or(0))
        .max()
        .unwrap_or(0);
    let legend_width = (widest + 56).clamp(120, 360);
    let (width, _) = body.dim_in_pixel();
    let (plot, legend) = body.split_horizontally(width.saturating_sub(legend_width));
    Ok((plot, Some(legend)))
}

/// The title, the note, the legend (one entry per series, styled by [`palette::styles_for`] from the
/// series' style keys: a swatch, or for line charts (`markers`) a line, dashed for a repeated key,
/// with the series' marker) and the area left for the chart; returns that area and the series'
/// styles.
pub(crate) fn titled_with_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    labels: &Labels,
    names: &[String],
    keys: &[String],
    markers: bool,
) -> anyhow::Result<(DrawingArea<DB, Shift>, Vec<Style>)> {
    let styles = palette::styles_for(keys);
    let (plot, legend) = title_and_legend(root, labels.title, labels.note, names)?;
    if let Some(legend) = legend {
        let font = label_font();
        for (i, (name, style)) in names.iter().zip(&styles).enumerate() {
            let y = 30 + 26 * i as i32;
            let color = style.color;
            if markers {
                let stroke = color.stroke_width(2);
                if style.dashed {
                    legend
                        .draw(&DashedPathElement::new(
                            vec![(4, y + 8), (32, y + 8)],
                            5,
                            3,
                            stroke,
                        ))
                        .map_err(plot_err)?;
                } else {
                    legend
                        .draw(&PathElement::new(vec![(6, y + 8), (30, y + 8)], stroke))
                        .map_err(plot_err)?;
                }
                if !style.reference {
                    draw_marker(&legend, (18, y + 8), style.marker, color)?;
                }
            } else {
                legend
                    .draw(&Rectangle::new([(8, y), (26, y + 16)], color.filled()))
                    .map_err(plot_err)?;
            }
            legend
                .draw_text(name, &font.color(&BLACK), (36, y))
                .map_err(plot_err)?;
        }
    }
    Ok((plot, styles))
}

/// Radius of a point marker, in pixels.
pub(crate) const MARKER_RADIUS: f64 = 5.0;

/// Draws `marker` centred on the pixel `at` of `area`.
pub(crate) fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    at: (i32, i32),
    marker: Marker,
    color: RGBColor,
) -> anyhow::Result<()> {
    match marker.polygon(MARKER_RADIUS) {
        None => area
            .draw(&Circle::new(at, MARKER_RADIUS as i32, color.filled()))
            .map_err(plot_err),
        Some(points) => {
            let points: Vec<(i32, i32)> = points.iter().map(|(x, y)| (at.0 + x, at.1 + y)).collect();
            area.draw(&Polygon::new(points, color.filled())).map_err(plot_err)
        }
    }
}

/// Writes "no data" where a chart would be (a figure with nothing to plot still renders).
pub(crate) fn draw_no_data<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
    let (w, h) = area.dim_in_pixel();
    area.draw_text(
        "no data",
        &axis_desc_font().color(&BLACK),
        (w as i32 / 2 - 30, h as i32 / 2),
    )
    .map_err(plot_err)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rows::fmt_num;

    pub(crate) use crate::testing::{assert_rendered, svg_texts};

    #[test]
    fn numbers_are_short_and_readable() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(1.0), "1");
        assert_eq!(fmt_num(1.5), "1.5");
        assert_eq!(fmt_num(12.345), "12.35");
        assert_eq!(fmt_num(123.45), "123.5");
        assert_eq!(fmt_num(1_500_000.0), "1,500,000");
        assert_eq!(fmt_num(-2500.0), "-2,500");
        assert_eq!(fmt_num(0.25), "0.25");
        assert_eq!(fmt_num(0.0001), "1.00e-4");
    }

    #[test]
    fn suffix_keeps_dots_in_the_stem() {
        assert_eq!(
            with_suffix(Path::new("a/fig5.chicago"), "svg"),
            PathBuf::from("a/fig5.chicago.svg")
        );
    }
}
