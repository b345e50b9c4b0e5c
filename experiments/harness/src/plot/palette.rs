//! One colour and one marker per label, the same in every figure (lines, bars, tuning sweeps): the
//! labels a paper fixes ([`FixedStyle`], declared in its descriptor, [`crate::paper::Paper::styles`])
//! keep their colour (and marker) in every figure; any other label gets them from a hash of its
//! name, so it too is stable across figures and runs.
//!
//! The binary installs every paper's styles once ([`install`]); labels are looked up case- and
//! space-blind.

use plotters::style::RGBColor;
use std::sync::OnceLock;

/// Tableau 20: ten hues dark, then the same ten light (index `i + 10` is the light shade of `i`). The
/// palette stays distinguishable in print and for most colour-blind readers; hashed labels take the
/// dark half first.
pub const PALETTE: [RGBColor; 20] = [
    RGBColor(0x4e, 0x79, 0xa7), // 0 blue
    RGBColor(0xf2, 0x8e, 0x2b), // 1 orange
    RGBColor(0xe1, 0x57, 0x59), // 2 red
    RGBColor(0x49, 0x98, 0x94), // 3 teal
    RGBColor(0x59, 0xa1, 0x4f), // 4 green
    RGBColor(0xb6, 0x99, 0x2d), // 5 gold
    RGBColor(0xb0, 0x7a, 0xa1), // 6 purple
    RGBColor(0xd3, 0x72, 0x95), // 7 pink
    RGBColor(0x9d, 0x76, 0x60), // 8 brown
    RGBColor(0x79, 0x70, 0x6e), // 9 grey
    RGBColor(0xa0, 0xcb, 0xe8), // 10 light blue
    RGBColor(0xff, 0xbe, 0x7d), // 11 light orange
    RGBColor(0xff, 0x9d, 0x9a), // 12 light red
    RGBColor(0x86, 0xbc, 0xb6), // 13 light teal
    RGBColor(0x8c, 0xd1, 0x7d), // 14 light green
    RGBColor(0xf1, 0xce, 0x63), // 15 light gold
    RGBColor(0xd4, 0xa6, 0xc8), // 16 light purple
    RGBColor(0xfa, 0xbf, 0xd2), // 17 light pink
    RGBColor(0xd7, 0xb5, 0xa6), // 18 light brown
    RGBColor(0xba, 0xb0, 0xac), // 19 light grey
];

/// A point marker shape for line charts; each strategy keeps one in every figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// A filled circle.
    Circle,
    /// A square.
    Square,
    /// A diamond.
    Diamond,
    /// A triangle pointing up.
    TriangleUp,
    /// A triangle pointing down.
    TriangleDown,
    /// A pentagon.
    Pentagon,
    /// A hexagon.
    Hexagon,
    /// A star.
    Star,
    /// A plus sign.
    Plus,
    /// A cross.
    Cross,
}

impl Marker {
    /// Every marker, in the order hashed labels pick from.
    pub const ALL: [Marker; 10] = [
        Marker::Circle,
        Marker::Square,
        Marker::Diamond,
        Marker::TriangleUp,
        Marker::TriangleDown,
        Marker::Pentagon,
        Marker::Hexagon,
        Marker::Star,
        Marker::Plus,
        Marker::Cross,
    ];

    /// The outline as pixel offsets from the point, for a marker of radius `r`; `None` for the
    /// circle (drawn as a circle).
    pub fn polygon(self, r: f64) -> Option<Vec<(i32, i32)>> {
        let regular = |n: usize, start_deg: f64, radius: &dyn Fn(usize) -> f64| -> Vec<(i32, i32)> {
            (0..n)
                .map(|i| {
                    let a = (start_deg + 360.0 * i as f64 / n as f64).to_radians();
                    let r = radius(i);
                    ((r * a.cos()).round() as i32, (-r * a.sin()).round() as i32)
                })
                .collect()
        };
        Some(match self {
            Marker::Circle => return None,
            Marker::Square => regular(4, 45.0, &|_| r * 1.2),
            Marker::Diamond => regular(4, 90.0, &|_| r * 1.3),
            Marker::TriangleUp => regular(3, 90.0, &|_| r * 1.4),
            Marker::TriangleDown => regular(3, 270.0, &|_| r * 1.4),
            Marker::Pentagon => regular(5, 90.0, &|_| r * 1.2),
            Marker::Hexagon => regular(6, 0.0, &|_| r * 1.25),
            Marker::Star => regular(10, 90.0, &|i| if i % 2 == 0 { r * 1.5 } else { r * 0.65 }),
            Marker::Plus => plus(r * 1.4, r * 0.45, 0.0),
            Marker::Cross => plus(r * 1.4, r * 0.45, 45.0),
        })
    }
}

/// A plus sign of arm length `arm` and half-width `half` as a 12-corner outline, turned by `turn_deg`
/// (45 degrees makes a cross).
fn plus(arm: f64, half: f64, turn_deg: f64) -> Vec<(i32, i32)> {
    let corners = [
        (half, half),
        (arm, half),
        (arm, -half),
        (half, -half),
        (half, -arm),
        (-half, -arm),
        (-half, -half),
        (-arm, -half),
        (-arm, half),
        (-half, half),
        (-half, arm),
        (half, arm),
    ];
    let (sin, cos) = turn_deg.to_radians().sin_cos();
    corners
        .iter()
        .map(|(x, y)| {
            let (x, y) = (x * cos - y * sin, x * sin + y * cos);
            (x.round() as i32, y.round() as i32)
        })
        .collect()
}

/// A label with a fixed style in every figure: a palette index (into [`PALETTE`]) and, for labels
/// drawn as lines beside each other (a paper's strategies), a fixed marker; without one the marker
/// is hashed from the label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedStyle {
    /// The label (matched as the figures canonicalise labels).
    pub label: &'static str,
    /// Index into [`PALETTE`].
    pub color: usize,
    /// The marker when drawn as a line, if fixed.
    pub marker: Option<Marker>,
}

impl FixedStyle {
    /// A label with a fixed colour and marker (a strategy).
    pub const fn marked(label: &'static str, color: usize, marker: Marker) -> Self {
        FixedStyle {
            label,
            color,
            marker: Some(marker),
        }
    }

    /// A label with a fixed colour and a hashed marker (a phase, a system).
    pub const fn colored(label: &'static str, color: usize) -> Self {
        FixedStyle {
            label,
            color,
            marker: None,
        }
    }
}

static FIXED: OnceLock<Vec<FixedStyle>> = OnceLock::new();

/// Fixes the labels of `styles` for this process; the binary installs every paper's
/// ([`crate::paper::Papers::styles`]) before it draws anything. The first call wins: a later one
/// returns false and installs nothing.
pub fn install(styles: Vec<FixedStyle>) -> bool {
    FIXED.set(styles).is_ok()
}

/// The installed styles; none before [`install`] (the harness's own tests draw with a small table
/// of their own).
fn fixed() -> &'static [FixedStyle] {
    FIXED.get().map_or(uninstalled(), Vec::as_slice)
}

/// What a process that installed nothing draws with: no fixed label.
#[cfg(not(test))]
fn uninstalled() -> &'static [FixedStyle] {
    &[]
}

#[cfg(test)]
fn uninstalled() -> &'static [FixedStyle] {
    &tests::STYLES
}

/// The lookup form of a label: lower case without white space.
pub(crate) fn canonical(label: &str) -> String {
    label
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase()
}

fn fixed_style(label: &str) -> Option<&'static FixedStyle> {
    let key = canonical(label);
    fixed().iter().find(|f| canonical(f.label) == key)
}

fn fixed_color(label: &str) -> Option<RGBColor> {
    fixed_style(label).and_then(|f| PALETTE.get(f.color).copied())
}

fn fnv(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The colour of a label: its fixed one, else one of the dark ten picked by a hash of its name
/// (FNV-1a: stable across runs and platforms, where std's hasher is randomly seeded).
pub fn color_for(name: &str) -> RGBColor {
    fixed_color(name).unwrap_or_else(|| PALETTE[(fnv(&canonical(name)) % 10) as usize])
}

/// The marker of a label: its fixed one, else one picked by a hash of its name.
pub fn marker_for(name: &str) -> Marker {
    match fixed_style(name).and_then(|f| f.marker) {
        Some(m) => m,
        None => Marker::ALL[(fnv(&canonical(name)) % Marker::ALL.len() as u64) as usize],
    }
}

/// How one series is drawn: colour (bars and lines), marker and dash (lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    /// Fill and line colour.
    pub color: RGBColor,
    /// Point marker (lines).
    pub marker: Marker,
    /// A second (third, ...) series of the same style key in one figure, e.g. UM+BV once per swept
    /// knob: same colour, another marker, a dashed line.
    pub dashed: bool,
    /// A reference line (see [`REFERENCE`]): dashed, in black or grey, without point markers.
    pub reference: bool,
}

/// The style key prefix of a reference line (`reference`, `reference 2`, ...): a line drawn for
/// comparison, not measured (a slope of n, a speedup of 1). References take [`REFERENCE_COLORS`]
/// in order and are dashed without markers, so no measured series is mistaken for one.
pub const REFERENCE: &str = "reference";

/// The colours of a figure's reference lines, in order: black, then dark grey.
pub const REFERENCE_COLORS: [RGBColor; 2] = [RGBColor(0x20, 0x20, 0x20), RGBColor(0x8a, 0x8a, 0x8a)];

/// Whether a style key names a reference line.
pub fn is_reference(key: &str) -> bool {
    canonical(key).starts_with(REFERENCE)
}

/// The style of a label on its own: [`color_for`] and [`marker_for`], solid.
pub fn style_for(name: &str) -> Style {
    Style {
        color: color_for(name),
        marker: marker_for(name),
        dashed: false,
        reference: false,
    }
}

/// Two colours of one figure closer than this ("redmean" distance, see [`distance`]) are too alike
/// to tell apart: blue against teal is 70, grey against brown 63; distinct hues of [`PALETTE`] are
/// over 100 apart.
pub const MIN_DISTANCE: f64 = 80.0;

/// The "redmean" approximation of the perceived difference of two sRGB colours (0 to about 765).
pub fn distance(a: RGBColor, b: RGBColor) -> f64 {
    let (r1, g1, b1) = (f64::from(a.0), f64::from(a.1), f64::from(a.2));
    let (r2, g2, b2) = (f64::from(b.0), f64::from(b.1), f64::from(b.2));
    let r = (r1 + r2) / 2.0;
    let (dr, dg, db) = (r1 - r2, g1 - g2, b1 - b2);
    ((2.0 + r / 256.0) * dr * dr + 4.0 * dg * dg + (2.0 + (255.0 - r) / 256.0) * db * db).sqrt()
}

/// The style of each series of one figure, from its style key (its strategy):
/// - the first series of a key with a fixed colour gets exactly [`style_for`] the key, whatever else
///   the figure shows, so a strategy looks the same in every figure;
/// - a later series of a key seen before keeps the colour, takes the next marker that colour has not
///   used in this figure, and is dashed;
/// - a key without a fixed colour gets its hashed one unless a colour another key of the figure
///   holds is within [`MIN_DISTANCE`] of it, then the first palette colour at least that far from
///   every colour held.
pub(crate) fn styles_for(keys: &[String]) -> Vec<Style> {
    let canon: Vec<String> = keys.iter().map(|k| canonical(k)).collect();
    let first_of = |i: usize| canon.iter().position(|c| *c == canon[i]).unwrap_or(i);
    // Colours held by keys with a fixed colour, so a hashed key never takes one of them.
    let mut held: Vec<RGBColor> = keys.iter().filter_map(|k| fixed_color(k)).collect();
    let mut out: Vec<Style> = Vec::with_capacity(keys.len());
    let mut references = 0;
    for (i, key) in keys.iter().enumerate() {
        if is_reference(key) {
            out.push(Style {
                color: REFERENCE_COLORS[references.min(REFERENCE_COLORS.len() - 1)],
                marker: Marker::Circle,
                dashed: true,
                reference: true,
            });
            references += 1;
            continue;
        }
        let first = first_of(i);
        if first < i {
            let color = out[first].color;
            let taken: Vec<Marker> = out
                .iter()
                .filter(|s| s.color == color)
                .map(|s| s.marker)
                .collect();
            let marker = Marker::ALL
                .iter()
                .copied()
                .find(|m| !taken.contains(m))
                .unwrap_or(out[first].marker);
            out.push(Style {
                color,
                marker,
                dashed: true,
                reference: false,
            });
            continue;
        }
        let mut style = style_for(key);
        if fixed_color(key).is_none() {
            let apart = |c: &RGBColor| held.iter().all(|h| distance(*h, *c) >= MIN_DISTANCE);
            if !apart(&style.color) {
                if let Some(free) = PALETTE.iter().find(|c| apart(c)) {
                    style.color = *free;
                }
            }
            held.push(style.color);
        }
        out.push(style);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixed styles the harness's own tests draw with (a paper-like table).
    pub(super) const STYLES: [FixedStyle; 12] = [
        FixedStyle::marked("Eager", 9, Marker::Square),
        FixedStyle::marked("Eager(physical)", 19, Marker::Cross),
        FixedStyle::marked("Validation", 5, Marker::Diamond),
        FixedStyle::marked("UM", 2, Marker::Circle),
        FixedStyle::marked("UM+F", 0, Marker::TriangleUp),
        FixedStyle::marked("UM+M", 4, Marker::TriangleDown),
        FixedStyle::marked("UM+BV", 6, Marker::Star),
        FixedStyle::marked("UM+FMBV", 1, Marker::Hexagon),
        FixedStyle::marked("UM+B", 13, Marker::Plus),
        FixedStyle::marked("UM+V", 8, Marker::Cross),
        FixedStyle::colored("update", 0),
        FixedStyle::colored("flush", 1),
    ];

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn eager_and_validation_are_far_apart() {
        let (Style { color: e, .. }, Style { color: v, .. }) = (style_for("Eager"), style_for("Validation"));
        let distance = |a: RGBColor, b: RGBColor| {
            let d = |x: u8, y: u8| (f64::from(x) - f64::from(y)).powi(2);
            (d(a.0, b.0) + d(a.1, b.1) + d(a.2, b.2)).sqrt()
        };
        assert!(distance(e, v) > 80.0, "{e:?} vs {v:?}");
        assert_ne!(marker_for("Eager"), marker_for("Validation"));
    }

    #[test]
    fn labels_are_looked_up_case_space_and_order_blind() {
        assert_eq!(style_for("UM+F"), style_for("um+f"));
        assert_eq!(style_for("Eager(physical)"), style_for("eager (physical)"));
        assert_eq!(style_for("some new strategy"), style_for("some new strategy"));
        assert!(fixed_style("UM+X").is_none());
        // A fixed label without a marker keeps its colour and hashes its marker.
        assert_eq!(color_for("flush"), PALETTE[1]);
        assert_eq!(marker_for("flush"), marker_for("FLUSH"));
        assert_eq!(color_for("Eager"), PALETTE[9]);
    }

    #[test]
    fn a_label_keeps_its_style_whatever_else_the_figure_shows() {
        // A line chart, a bar chart and a tuning sweep each show UM+BV among other series.
        let line = strings(&["Eager", "Validation", "UM", "UM+F", "UM+M", "UM+BV", "UM+FMBV"]);
        let bars = strings(&["UM+BV", "Eager", "Validation"]);
        let tuning = strings(&["UM+V", "UM+BV", "UM+B", "UM+BV"]);
        let with_unknown = strings(&["a label nobody fixed", "another one", "UM+BV", "Validation"]);
        for keys in [&line, &bars, &tuning, &with_unknown] {
            let styles = styles_for(keys);
            for (i, (key, style)) in keys.iter().zip(&styles).enumerate() {
                if fixed_style(key).is_some() && keys.iter().position(|k| k == key) == Some(i) {
                    assert_eq!(*style, style_for(key), "{key} in {keys:?}");
                }
            }
            let bv = keys.iter().position(|k| k == "UM+BV").unwrap();
            assert_eq!(styles[bv], style_for("UM+BV"), "{keys:?}");
        }
        // The tuning sweep's UM+V is not drawn in Validation's colour.
        let tuning_styles = styles_for(&tuning);
        assert!(tuning_styles.iter().all(|s| s.color != color_for("Validation")));
    }

    #[test]
    fn hashed_colours_of_one_figure_stay_apart() {
        // Blue against teal and grey against brown, the pairs a hash can land on.
        assert!(distance(PALETTE[0], PALETTE[3]) < MIN_DISTANCE);
        assert!(distance(PALETTE[9], PALETTE[8]) < MIN_DISTANCE);
        for n in 2..=10 {
            for offset in 0..20 {
                let keys: Vec<String> = (0..n).map(|i| format!("component-{}", i + offset)).collect();
                let styles = styles_for(&keys);
                for (i, a) in styles.iter().enumerate() {
                    for b in &styles[i + 1..] {
                        assert!(
                            distance(a.color, b.color) >= MIN_DISTANCE,
                            "{keys:?}: {a:?} and {b:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn reference_lines_are_dashed_black_then_grey_and_take_no_series_colour() {
        let keys: Vec<String> = ["Eager", "reference n", "UM+F", "Reference n log n"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let styles = styles_for(&keys);
        assert!(styles[1].reference && styles[1].dashed && styles[1].color == REFERENCE_COLORS[0]);
        assert!(styles[3].reference && styles[3].color == REFERENCE_COLORS[1]);
        assert!(!styles[0].reference && !styles[2].reference);
        assert_eq!(styles[0], style_for("Eager"));
        assert!(is_reference("reference") && !is_reference("UM"));
    }

    #[test]
    fn one_strategy_twice_keeps_its_colour_with_another_marker_dashed() {
        let styles = styles_for(&strings(&["UM+BV", "UM+B", "UM+BV"]));
        assert_eq!(styles[0], style_for("UM+BV"));
        assert_eq!(styles[2].color, color_for("UM+BV"));
        assert_ne!(styles[2].marker, styles[0].marker);
        assert!(styles[2].dashed && !styles[0].dashed && !styles[1].dashed);
    }

    #[test]
    fn one_figure_never_repeats_a_colour() {
        let mut names: Vec<String> = (0..10).map(|i| format!("series {i}")).collect();
        names.extend(strings(&["Eager", "UM", "UM+F"]));
        let colors: Vec<RGBColor> = styles_for(&names).into_iter().map(|s| s.color).collect();
        for (i, c) in colors.iter().enumerate() {
            assert!(!colors[..i].contains(c), "colour repeated at {i}: {names:?}");
        }
    }

    #[test]
    fn markers_have_outlines() {
        assert!(Marker::Circle.polygon(4.0).is_none());
        assert_eq!(Marker::Star.polygon(4.0).unwrap().len(), 10);
        assert_eq!(Marker::Plus.polygon(4.0).unwrap().len(), 12);
        assert_ne!(Marker::Plus.polygon(4.0), Marker::Cross.polygon(4.0));
    }
}
