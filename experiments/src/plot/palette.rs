//! One colour per name, the same in every figure: the strategies and phases the papers name get
//! fixed colours; any other name gets a colour from its hash, so it too is stable across figures.

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
    let hash = lower.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    PALETTE[(hash % PALETTE.len() as u64) as usize]
}

/// Colours for a list of series: the fixed or hashed colour, unless an earlier series in the same
/// figure already has it, in which case the next free palette colour (so one figure never shows two
/// series in one colour while it has at most ten).
pub(crate) fn colors_for(names: &[String]) -> Vec<RGBColor> {
    let mut used: Vec<RGBColor> = Vec::with_capacity(names.len());
    for name in names {
        let mut color = color_for(name);
        if used.contains(&color) {
            if let Some(free) = PALETTE.iter().find(|c| !used.contains(c)) {
                color = *free;
            }
        }
        used.push(color);
    }
    used
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
    fn one_figure_never_repeats_a_colour() {
        let names: Vec<String> = (0..10).map(|i| format!("series {i}")).collect();
        let colors = colors_for(&names);
        for (i, c) in colors.iter().enumerate() {
            assert!(!colors[..i].contains(c), "colour repeated at {i}");
        }
    }
}
