//! Tables: as an image (the papers' Tables 1 and 2 as figures) and as Markdown (for REPORT.md).

use std::path::{Path, PathBuf};

use anyhow::bail;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{ensure_fonts, label_font, plot_err, render, title_font, Draw};

const PAD_X: u32 = 14;
const ROW_HEIGHT: u32 = 30;
const TITLE_HEIGHT: u32 = 56;
const MARGIN: u32 = 20;

/// A table rendered as an image: a bold header row on grey, then one line per row; columns that
/// hold only numbers are right-aligned. Every row must have as many cells as there are headers.
pub fn table_figure(
    out_stem: &Path,
    title: &str,
    headers: &[String],
    rows: &[Vec<String>],
) -> anyhow::Result<Vec<PathBuf>> {
    for (i, row) in rows.iter().enumerate() {
        if row.len() != headers.len() {
            bail!(
                "table `{title}`: row {i} has {} cells for {} headers",
                row.len(),
                headers.len()
            );
        }
    }
    ensure_fonts();
    let header_font = label_font().style(FontStyle::Bold);
    let cell_font = label_font();
    let width_of = |font: &FontDesc, text: &str| font.box_size(text).map(|(w, _)| w).unwrap_or(0);
    let widths: Vec<u32> = (0..headers.len())
        .map(|c| {
            let cells = rows
                .iter()
                .map(|r| width_of(&cell_font, &r[c]))
                .max()
                .unwrap_or(0);
            cells.max(width_of(&header_font, &headers[c])) + 2 * PAD_X
        })
        .collect();
    let table_width: u32 = widths.iter().sum();
    let title_width = width_of(&title_font(), title) + 2 * MARGIN;
    let width = (table_width + 2 * MARGIN).max(title_width).max(320);
    let height = TITLE_HEIGHT + ROW_HEIGHT * (rows.len() as u32 + 1) + MARGIN;
    let right_align = (0..headers.len()).map(|c| numeric_column(rows, c)).collect();
    render(
        out_stem,
        &Table {
            title,
            headers,
            rows,
            widths,
            right_align,
            size: (width, height),
        },
    )
}

struct Table<'a> {
    title: &'a str,
    headers: &'a [String],
    rows: &'a [Vec<String>],
    widths: Vec<u32>,
    right_align: Vec<bool>,
    size: (u32, u32),
}

impl Draw for Table<'_> {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        root.draw_text(self.title, &title_font().color(&BLACK), (MARGIN as i32, 14))
            .map_err(plot_err)?;
        let x0 = MARGIN as i32;
        let table_width: i32 = self.widths.iter().sum::<u32>() as i32;
        let header_font = label_font().style(FontStyle::Bold).color(&BLACK);
        let cell_font = label_font().color(&BLACK);
        let grey = RGBColor(0xe8, 0xe8, 0xe8);
        let line = RGBColor(0xb0, 0xb0, 0xb0);
        let mut y = TITLE_HEIGHT as i32;
        root.draw(&Rectangle::new(
            [(x0, y), (x0 + table_width, y + ROW_HEIGHT as i32)],
            grey.filled(),
        ))
        .map_err(plot_err)?;
        let lines = std::iter::once(self.headers).chain(self.rows.iter().map(|r| r.as_slice()));
        for (r, cells) in lines.enumerate() {
            let style = if r == 0 { &header_font } else { &cell_font };
            let mut x = x0;
            for (c, text) in cells.iter().enumerate() {
                let w = self.widths[c] as i32;
                let text_w = style.font.box_size(text).map(|(w, _)| w as i32).unwrap_or(0);
                let tx = if self.right_align[c] && r > 0 {
                    x + w - PAD_X as i32 - text_w
                } else {
                    x + PAD_X as i32
                };
                root.draw_text(text, style, (tx, y + 7)).map_err(plot_err)?;
                x += w;
            }
            y += ROW_HEIGHT as i32;
            root.draw(&PathElement::new(vec![(x0, y), (x0 + table_width, y)], line))
                .map_err(plot_err)?;
        }
        Ok(())
    }
}

/// A column is numeric when every non-empty cell reads as a number (thousands commas, a trailing
/// `%` or `x` allowed) and at least one cell is not empty.
fn numeric_column(rows: &[Vec<String>], column: usize) -> bool {
    let mut any = false;
    for row in rows {
        let cell = row.get(column).map(|s| s.trim()).unwrap_or("");
        if cell.is_empty() || cell == "-" {
            continue;
        }
        let bare = cell.trim_end_matches(['%', 'x', '×']).replace(',', "");
        if bare.parse::<f64>().is_err() {
            return false;
        }
        any = true;
    }
    any
}

/// A GitHub-flavoured Markdown table; numeric columns are right-aligned, `|` in cells is escaped and
/// line breaks become spaces. Columns are padded so the text reads as a table too.
pub fn markdown_table(headers: &[String], rows: &[Vec<String>]) -> String {
    let clean = |s: &str| s.replace('|', "\\|").replace(['\n', '\r'], " ");
    let headers: Vec<String> = headers.iter().map(|h| clean(h)).collect();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            (0..headers.len())
                .map(|c| r.get(c).map(|s| clean(s)).unwrap_or_default())
                .collect()
        })
        .collect();
    let right: Vec<bool> = (0..headers.len()).map(|c| numeric_column(&rows, c)).collect();
    let widths: Vec<usize> = (0..headers.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([headers[c].chars().count(), 3])
                .max()
                .unwrap_or(3)
        })
        .collect();
    let pad = |text: &str, c: usize| {
        let fill = " ".repeat(widths[c] - text.chars().count());
        if right[c] {
            format!("{fill}{text}")
        } else {
            format!("{text}{fill}")
        }
    };
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = line(headers.iter().enumerate().map(|(c, h)| pad(h, c)).collect());
    out += &line(
        (0..headers.len())
            .map(|c| {
                if right[c] {
                    format!("{}:", "-".repeat(widths[c] - 1))
                } else {
                    "-".repeat(widths[c])
                }
            })
            .collect(),
    );
    for row in &rows {
        out += &line(row.iter().enumerate().map(|(c, v)| pad(v, c)).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::assert_rendered;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn table_figure_renders() {
        let dir = tempfile::tempdir().unwrap();
        let headers = strings(&["dataset", "UM", "UM+BV"]);
        let rows = vec![
            strings(&["gowalla", "12", "0"]),
            strings(&["chicago", "1,204", "1,180"]),
        ];
        let paths = table_figure(&dir.path().join("table1"), "Table 1: flushes", &headers, &rows).unwrap();
        assert_rendered(&paths);
        assert!(std::fs::read_to_string(&paths[0]).unwrap().contains("gowalla"));
    }

    #[test]
    fn table_figure_rejects_ragged_rows() {
        let dir = tempfile::tempdir().unwrap();
        let err = table_figure(
            &dir.path().join("t"),
            "T",
            &strings(&["a", "b"]),
            &[strings(&["1"])],
        )
        .unwrap_err();
        assert!(err.to_string().contains("row 0"), "{err}");
    }

    #[test]
    fn markdown_tables_align_numbers_and_escape_pipes() {
        let table = markdown_table(
            &strings(&["strategy", "update_ms"]),
            &[strings(&["Eager", "1,200"]), strings(&["UM|F", "3.5"])],
        );
        assert_eq!(
            table,
            "| strategy | update_ms |\n\
             | -------- | --------: |\n\
             | Eager    |     1,200 |\n\
             | UM\\|F    |       3.5 |\n"
        );
    }
}
