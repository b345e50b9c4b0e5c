//! One colour and one marker per name, the same in every figure: the strategies and phases the
//! papers name get fixed ones; any other name gets them from its hash, so it too is stable across
//! figures.

use plotters::style::RGBColor;

/// Tableau 10, a palette that stays distinguishable in print and for most colour-blind readers.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7), // blue
    RGBColor(0xf2, 0x8e, 0x2b), // orange
    RGBColor(0xe1, 0x57, 0x59), // red
    RGBColor(0x76, 0xb7, 0xb2), // teal
    RGBColor(0x59, 0xa1, 0x4f), // green
    RGBColor(0xed, 0xc9, 0x48), // yellow
    RGBColor(0xb0, 0x7a, 0xa1), // purple
    RGBColor(0xff, 0x9d, 0xa7), // pink
    RGBColor(0x9c, 0x75, 0x5f), // brown
    RGBColor(0x79, 0x70, 0x6e), // grey
];

/// Names with a fixed place in the palette (compared case-insensitively).
const FIXED: &[(&str, usize)] = &[
    // LSM RUM-tree strategies.
    ("eager", 9),
    ("validation", 8),
    ("um", 2),
    ("um+f", 0),
    ("um+m", 4),
    ("um+fm", 3),
    ("um+bv", 6),
    ("um+fmbv", 1),
    // Phases of an update stream (Figure 5 of the RUM-tree paper).
    ("update", 0),
    ("flush", 1),
    ("merge", 4),
    ("query", 6),
    // Leaper and its baselines.
    ("leaper", 1),
    ("none", 9),
    ("no prefetch", 9),
    ("warm-up", 0),
    ("prepopulate", 4),
    // DIOL and OEP 7.
    ("iotdb", 9),
    ("diol", 1),
    ("paginated", 9),
    ("single-page", 1),
];

/// The colour for a series name.
pub fn color_for(name: &str) -> RGBColor {
    let lower = name.trim().to_ascii_lowercase();
    if let Some((_, i)) = FIXED.iter().find(|(n, _)| *n == lower) {
        return PALETTE[*i];
    }
    // FNV-1a: stable across runs and platforms (std's hasher is randomly seeded).
    PALETTE[(fnv(&lower) % PALETTE.len() as u64) as usize]
}

/// A point marker shape for line charts; each strategy keeps one in every figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    Diamond,
    TriangleUp,
    TriangleDown,
    Pentagon,
    Hexagon,
    Star,
}

impl Marker {
    /// Every marker, in the order hashed names pick from.
    pub const ALL: [Marker; 8] = [
        Marker::Circle,
        Marker::Square,
        Marker::Diamond,
        Marker::TriangleUp,
        Marker::TriangleDown,
        Marker::Pentagon,
        Marker::Hexagon,
        Marker::Star,
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
        })
    }
}

/// Strategies with a fixed marker (compared case-insensitively); other names hash to one.
const FIXED_MARKERS: &[(&str, Marker)] = &[
    ("eager", Marker::Square),
    ("validation", Marker::Diamond),
    ("um", Marker::Circle),
    ("um+f", Marker::TriangleUp),
    ("um+m", Marker::TriangleDown),
    ("um+fm", Marker::Pentagon),
    ("um+bv", Marker::Star),
    ("um+fmbv", Marker::Hexagon),
];

fn fnv(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The marker for a series name.
pub fn marker_for(name: &str) -> Marker {
    let lower = name.trim().to_ascii_lowercase();
    match FIXED_MARKERS.iter().find(|(n, _)| *n == lower) {
        Some((_, m)) => *m,
        None => Marker::ALL[(fnv(&lower) % Marker::ALL.len() as u64) as usize],
    }
}

/// Colour and marker per series, keyed by each series' style key (its strategy): the key's own
/// colour and marker; a key seen earlier in the figure keeps its colour and takes the next marker
/// that colour has not used yet (two lines of one strategy stay apart); a different key whose colour
/// is taken gets the next free palette colour.
pub(crate) fn styles_for(keys: &[String]) -> Vec<(RGBColor, Marker)> {
    let mut out: Vec<(RGBColor, Marker)> = Vec::with_capacity(keys.len());
    for (i, key) in keys.iter().enumerate() {
        let mut color = color_for(key);
        let mut marker = marker_for(key);
        let same_key = keys[..i].iter().any(|k| k.eq_ignore_ascii_case(key));
        if same_key {
            let taken: Vec<Marker> = out.iter().filter(|(c, _)| *c == color).map(|(_, m)| *m).collect();
            if taken.contains(&marker) {
                if let Some(free) = Marker::ALL.iter().find(|m| !taken.contains(m)) {
                    marker = *free;
                }
            }
        } else if out.iter().any(|(c, _)| *c == color) {
            if let Some(free) = PALETTE.iter().find(|c| !out.iter().any(|(u, _)| u == *c)) {
                color = *free;
            }
        }
        out.push((color, marker));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_their_colour() {
        assert_eq!(color_for("UM+F"), color_for("um+f"));
        assert_eq!(color_for("some new strategy"), color_for("some new strategy"));
        assert_ne!(color_for("Eager"), color_for("Validation"));
    }

    #[test]
    fn strategies_keep_distinct_markers() {
        let names = ["Eager", "Validation", "UM", "UM+F", "UM+M", "UM+BV", "UM+FMBV"];
        let markers: Vec<Marker> = names.iter().map(|n| marker_for(n)).collect();
        for (i, m) in markers.iter().enumerate() {
            assert!(!markers[..i].contains(m), "marker repeated for {}", names[i]);
        }
        assert_eq!(marker_for("um+f"), marker_for("UM+F"));
        assert_eq!(marker_for("another"), marker_for("another"));
        assert!(Marker::Circle.polygon(4.0).is_none());
        assert_eq!(Marker::Star.polygon(4.0).unwrap().len(), 10);
    }

    #[test]
    fn one_strategy_twice_keeps_its_colour_with_another_marker() {
        let keys: Vec<String> = ["UM+BV", "UM+B", "UM+BV"].iter().map(|s| s.to_string()).collect();
        let styles = styles_for(&keys);
        assert_eq!(styles[0], (color_for("UM+BV"), marker_for("UM+BV")));
        assert_eq!(styles[2].0, color_for("UM+BV"));
        assert_ne!(styles[2].1, styles[0].1);
    }

    #[test]
    fn one_figure_never_repeats_a_colour() {
        let names: Vec<String> = (0..10).map(|i| format!("series {i}")).collect();
        let colors: Vec<RGBColor> = styles_for(&names).into_iter().map(|(c, _)| c).collect();
        for (i, c) in colors.iter().enumerate() {
            assert!(!colors[..i].contains(c), "colour repeated at {i}");
        }
    }
}
