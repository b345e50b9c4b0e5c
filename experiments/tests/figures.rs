//! The committed figures (`plots/small/*.svg`) read as a reader sees them: no two labels on one
//! baseline overlap (tick labels printed over each other, category names running into the next
//! bar's), and no two series of one figure (bars or solid lines) are told apart by colours closer
//! than a set distance.
//!
//! Widths are estimated, not measured: a sans-serif character is taken as 0.55 em, a little wider
//! than the DejaVu Sans average, so the check errs toward reporting an overlap. Colour distance is
//! the "redmean" approximation of perceived difference in sRGB (0 to about 765); two distinct hues
//! of the figures' palette are at least 100 apart, and the near-identical pairs the figures once
//! drew (grey-brown against brown, blue against teal) were 63 and 70.

// Tests may unwrap: a panic here is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// Estimated character width, in em.
const CHAR_EM: f64 = 0.55;
/// Two legend colours of one figure closer than this (redmean) are too alike to tell apart.
const MIN_COLOUR_DISTANCE: f64 = 80.0;

/// One `<text>` element: position, anchor, font size and content.
#[derive(Debug)]
struct Label {
    x: f64,
    y: f64,
    anchor: String,
    size: f64,
    text: String,
    rotated: bool,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = tag[start..].find('"')? + start;
    Some(tag[start..end].to_string())
}

fn labels(svg: &str) -> Vec<Label> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let close = t.find('>')?;
            let tag = &t[..close];
            let body = &t[close + 1..];
            let text = body[..body.find("</text>")?].trim().to_string();
            Some(Label {
                x: attr(tag, "x")?.parse().ok()?,
                y: attr(tag, "y")?.parse().ok()?,
                anchor: attr(tag, "text-anchor").unwrap_or_else(|| "start".into()),
                size: attr(tag, "font-size")?.parse().ok()?,
                rotated: tag.contains("transform="),
                text,
            })
        })
        .collect()
}

/// The horizontal extent of a label, estimated.
fn extent(l: &Label) -> (f64, f64) {
    let w = l.text.chars().count() as f64 * l.size * CHAR_EM;
    match l.anchor.as_str() {
        "middle" => (l.x - w / 2.0, l.x + w / 2.0),
        "end" => (l.x - w, l.x),
        _ => (l.x, l.x + w),
    }
}

/// Pairs of non-empty labels on one baseline whose extents overlap by more than a pixel.
fn overlaps(svg: &str) -> Vec<(String, String)> {
    let ls: Vec<Label> = labels(svg)
        .into_iter()
        .filter(|l| !l.rotated && !l.text.is_empty())
        .collect();
    let mut out = Vec::new();
    for (i, a) in ls.iter().enumerate() {
        for b in &ls[i + 1..] {
            let ((al, ar), (bl, br)) = (extent(a), extent(b));
            if (a.y - b.y).abs() < 1.0 && ar.min(br) - al.max(bl) > 1.0 {
                out.push((a.text.clone(), b.text.clone()));
            }
        }
    }
    out
}

/// The legend of a bar chart: each swatch (an 18 x 16 rectangle) with the label after it.
fn legend(svg: &str) -> Vec<(String, (u8, u8, u8))> {
    let mut out = Vec::new();
    for part in svg.split("<rect").skip(1) {
        let Some(close) = part.find("/>") else { continue };
        let tag = &part[..close];
        if attr(tag, "width").as_deref() != Some("18") || attr(tag, "height").as_deref() != Some("16") {
            continue;
        }
        let Some(fill) = attr(tag, "fill").filter(|f| f.len() == 7 && f.starts_with('#')) else {
            continue;
        };
        let hex = |i: usize| u8::from_str_radix(&fill[i..i + 2], 16).unwrap();
        let rest = &part[close..];
        let Some(label) = labels(rest).into_iter().next() else {
            continue;
        };
        out.push((label.text, (hex(1), hex(3), hex(5))));
    }
    out
}

/// The legend of a line chart: each solid line swatch (a 24 px horizontal stroke) with the label
/// after it. Dashed swatches are left out: a dashed line shares its colour with a solid one on
/// purpose (one strategy drawn twice, or a reference line), told apart by dash and marker.
fn line_legend(svg: &str) -> Vec<(String, (u8, u8, u8))> {
    let mut out = Vec::new();
    for part in svg.split("<polyline").skip(1) {
        let Some(close) = part.find("/>") else { continue };
        let tag = &part[..close];
        let Some(points) = attr(tag, "points") else {
            continue;
        };
        let xy: Vec<(i64, i64)> = points
            .split_whitespace()
            .filter_map(|p| {
                let (x, y) = p.split_once(',')?;
                Some((x.parse().ok()?, y.parse().ok()?))
            })
            .collect();
        if xy.len() != 2 || xy[0].1 != xy[1].1 || xy[1].0 - xy[0].0 != 24 {
            continue;
        }
        let Some(stroke) = attr(tag, "stroke").filter(|f| f.len() == 7 && f.starts_with('#')) else {
            continue;
        };
        let hex = |i: usize| u8::from_str_radix(&stroke[i..i + 2], 16).unwrap();
        let Some(label) = labels(&part[close..]).into_iter().next() else {
            continue;
        };
        out.push((label.text, (hex(1), hex(3), hex(5))));
    }
    out
}

fn redmean((r1, g1, b1): (u8, u8, u8), (r2, g2, b2): (u8, u8, u8)) -> f64 {
    let r = (f64::from(r1) + f64::from(r2)) / 2.0;
    let (dr, dg, db) = (
        f64::from(r1) - f64::from(r2),
        f64::from(g1) - f64::from(g2),
        f64::from(b1) - f64::from(b2),
    );
    ((2.0 + r / 256.0) * dr * dr + 4.0 * dg * dg + (2.0 + (255.0 - r) / 256.0) * db * db).sqrt()
}

fn committed_figures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plots/small");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no figures under {}", dir.display());
    files
}

#[test]
fn the_checks_catch_what_they_look_for() {
    let text = |x: u32, anchor: &str, t: &str| {
        format!(r##"<text x="{x}" y="570" text-anchor="{anchor}" font-size="10" fill="#000000">{t}</text>"##)
    };
    // Two 20-character names 90 px apart (each about 110 px wide) overlap; 120 px apart they do not.
    let close = text(100, "middle", "Validation paginated") + &text(190, "middle", "Validation single-pg");
    let apart = text(100, "middle", "Validation paginated") + &text(220, "middle", "Validation single-pg");
    assert_eq!(overlaps(&close).len(), 1);
    assert!(overlaps(&apart).is_empty());
    // A tick label printed twice at one place is an overlap.
    assert_eq!(
        overlaps(&(text(809, "middle", "10") + &text(809, "middle", "10"))).len(),
        1
    );
    let swatch = |fill: &str, t: &str| {
        format!(
            r##"<rect x="881" y="60" width="18" height="16" fill="{fill}" stroke="none"/>{}"##,
            text(909, "start", t)
        )
    };
    let l = legend(&(swatch("#79706E", "iotdb") + &swatch("#9D7660", "diol-expired-ttl")));
    assert_eq!(l.len(), 2);
    let line = |stroke: &str, y: u32, t: &str| {
        format!(
            r##"<polyline fill="none" opacity="1" stroke="{stroke}" stroke-width="2" points="903,{y} 927,{y} "/>{}"##,
            text(939, "start", t)
        )
    };
    let lines = line_legend(&(line("#B6992D", 96, "mem-rtree-insert") + &line("#F1CE63", 122, "n log n")));
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1].0, "n log n");
    assert!(redmean(l[0].1, l[1].1) < MIN_COLOUR_DISTANCE);
    assert!(redmean((0x4e, 0x79, 0xa7), (0xf2, 0x8e, 0x2b)) > MIN_COLOUR_DISTANCE);
}

#[test]
fn no_committed_figure_prints_labels_over_each_other() {
    let mut bad = Vec::new();
    for f in committed_figures() {
        let svg = std::fs::read_to_string(&f).unwrap();
        for (a, b) in overlaps(&svg) {
            bad.push(format!(
                "{}: {a:?} over {b:?}",
                f.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    assert!(bad.is_empty(), "overlapping labels:\n{}", bad.join("\n"));
}

/// Neighbouring labels of one vertical axis (right-aligned at one x) that print the same text:
/// ticks too close for the digits they are given.
fn repeated_ticks(svg: &str) -> Vec<String> {
    let mut axis: Vec<(f64, f64, String)> = labels(svg)
        .into_iter()
        .filter(|l| l.anchor == "end" && !l.rotated && !l.text.is_empty())
        .map(|l| (l.x, l.y, l.text))
        .collect();
    axis.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    axis.windows(2)
        .filter(|w| w[0].0 == w[1].0 && w[0].2 == w[1].2)
        .map(|w| w[0].2.clone())
        .collect()
}

#[test]
fn no_committed_figure_repeats_a_tick_label_on_one_axis() {
    let two = |a: &str, b: &str| {
        format!(
            r##"<text x="96" y="100" text-anchor="end" font-size="12">{a}</text><text x="96" y="130" text-anchor="end" font-size="12">{b}</text>"##
        )
    };
    assert_eq!(repeated_ticks(&two("110.7", "110.7")), ["110.7"]);
    assert!(repeated_ticks(&two("110.5", "111")).is_empty());
    let mut bad = Vec::new();
    for f in committed_figures() {
        let svg = std::fs::read_to_string(&f).unwrap();
        for t in repeated_ticks(&svg) {
            bad.push(format!("{}: {t}", f.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(bad.is_empty(), "repeated tick labels:\n{}", bad.join("\n"));
}

#[test]
fn no_committed_figure_draws_two_series_in_colours_too_alike() {
    let mut bad = Vec::new();
    for f in committed_figures() {
        let svg = std::fs::read_to_string(&f).unwrap();
        let mut l = legend(&svg);
        l.extend(line_legend(&svg));
        for (i, (a, ca)) in l.iter().enumerate() {
            for (b, cb) in &l[i + 1..] {
                let d = redmean(*ca, *cb);
                if d < MIN_COLOUR_DISTANCE {
                    bad.push(format!(
                        "{}: {a} and {b} ({d:.0})",
                        f.file_name().unwrap().to_string_lossy()
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "series too alike:\n{}", bad.join("\n"));
}
