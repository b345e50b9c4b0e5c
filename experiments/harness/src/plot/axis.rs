//! Axis choices made from the data: the time unit a seconds axis is labelled in, whether a value axis
//! is logarithmic, and the axis label that says both.

use crate::rows::fmt_num;

/// A unit of time an axis can be labelled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds.
    S,
    /// Milliseconds.
    Ms,
    /// Microseconds.
    Us,
}

impl TimeUnit {
    /// Largest first.
    const ALL: [TimeUnit; 3] = [TimeUnit::S, TimeUnit::Ms, TimeUnit::Us];

    /// One of this unit, in seconds.
    pub fn seconds(self) -> f64 {
        match self {
            TimeUnit::S => 1.0,
            TimeUnit::Ms => 1e-3,
            TimeUnit::Us => 1e-6,
        }
    }

    /// The unit's symbol in axis labels (`s`, `ms`, `µs`).
    pub fn symbol(self) -> &'static str {
        match self {
            TimeUnit::S => "s",
            TimeUnit::Ms => "ms",
            TimeUnit::Us => "µs",
        }
    }

    /// The unit to show `seconds` in: the largest unit in which the largest value is at least 1, so
    /// that tick labels read as plain numbers (`5`..`20` µs, not `5.00e-6`..`2.00e-5` s). On a log
    /// axis, whose ticks reach down to the smallest value, a smaller unit is taken while the smallest
    /// value would still print below 0.001. Non-finite and zero values are ignored; with none left the
    /// unit is seconds.
    pub fn for_seconds(seconds: &[f64], log: bool) -> TimeUnit {
        let magnitudes: Vec<f64> = seconds
            .iter()
            .map(|v| v.abs())
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        let Some(hi) = magnitudes.iter().copied().reduce(f64::max) else {
            return TimeUnit::S;
        };
        let lo = magnitudes.iter().copied().fold(hi, f64::min);
        let mut pick = TimeUnit::ALL
            .iter()
            .position(|u| hi / u.seconds() >= 1.0)
            .unwrap_or(TimeUnit::ALL.len() - 1);
        while log && pick + 1 < TimeUnit::ALL.len() && lo / TimeUnit::ALL[pick].seconds() < 1e-3 {
            pick += 1;
        }
        TimeUnit::ALL[pick]
    }
}

/// A value axis is logarithmic only when its values span more than this factor (two decades):
/// below it a log axis shrinks real differences and lets bars near the baseline vanish.
pub const LOG_SPAN: f64 = 100.0;

/// Whether `values` call for a log axis: every finite value positive (a log axis cannot show zero
/// or less) and the largest more than [`LOG_SPAN`] times the smallest.
pub fn wants_log(values: &[f64]) -> bool {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() || finite.iter().any(|v| *v <= 0.0) {
        return false;
    }
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    hi / lo > LOG_SPAN
}

/// `label` with its unit and, on a log axis, "log scale" in one parenthesis:
/// `query time (ms, log scale)`. A label that already ends in a parenthesis gets the additions inside
/// it; a label that already says "log" is not told again.
pub fn axis_label(label: &str, unit: Option<&str>, log: bool) -> String {
    let mut extra: Vec<&str> = unit.into_iter().collect();
    if log && !label.to_ascii_lowercase().contains("log") {
        extra.push("log scale");
    }
    if extra.is_empty() {
        return label.to_string();
    }
    let extra = extra.join(", ");
    match label.strip_suffix(')') {
        Some(open) if open.contains('(') => format!("{open}, {extra})"),
        _ if label.is_empty() => extra,
        _ => format!("{label} ({extra})"),
    }
}

/// Tick labels of one axis that never print the same text twice in a row: on a log axis plotters
/// may put two key points at one decade (the range is widened by a hair so that its ends keep their
/// ticks), which would print `10` over `10`; the repeat prints nothing.
pub(crate) struct TickLabels(std::cell::RefCell<Option<String>>);

impl TickLabels {
    /// Labels for a new axis.
    pub(crate) fn new() -> Self {
        TickLabels(std::cell::RefCell::new(None))
    }

    /// The label of the tick at `v`, empty when it repeats the previous one.
    pub(crate) fn label(&self, v: f64) -> String {
        let text = fmt_tick(v);
        let mut last = self.0.borrow_mut();
        if last.as_deref() == Some(text.as_str()) {
            return String::new();
        }
        *last = Some(text.clone());
        text
    }
}

/// A tick label: [`fmt_num`], except that a whole power of ten too small or large for plain digits
/// prints as `1e-4` rather than `1.00e-4`.
pub fn fmt_tick(v: f64) -> String {
    let text = fmt_num(v);
    if text.contains('e') && v > 0.0 {
        let exp = v.log10().round();
        if (10f64.powf(exp) - v).abs() <= v * 1e-9 {
            return format!("1e{exp}");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_follows_the_data() {
        assert_eq!(TimeUnit::for_seconds(&[5e-6, 2e-5], false), TimeUnit::Us);
        assert_eq!(TimeUnit::for_seconds(&[5e-6, 2e-5], true), TimeUnit::Us);
        assert_eq!(TimeUnit::for_seconds(&[0.0, 0.004, 0.35], false), TimeUnit::Ms);
        assert_eq!(TimeUnit::for_seconds(&[0.2, 3.5], false), TimeUnit::S);
        assert_eq!(TimeUnit::for_seconds(&[1.0], false), TimeUnit::S);
        assert_eq!(TimeUnit::for_seconds(&[], false), TimeUnit::S);
        assert_eq!(TimeUnit::for_seconds(&[f64::NAN, 0.0], true), TimeUnit::S);
        assert_eq!(TimeUnit::for_seconds(&[3e-9], false), TimeUnit::Us);
        // 60 µs .. 24 ms on a log axis: ms keeps every tick at 0.01 or above.
        assert_eq!(TimeUnit::for_seconds(&[6e-5, 0.024], true), TimeUnit::Ms);
        // 2 µs .. 3 s on a log axis: seconds would print 2e-6, ms 0.002, both fine in µs or ms;
        // ms is the largest unit whose smallest value prints as digits.
        assert_eq!(TimeUnit::for_seconds(&[2e-6, 3.0], true), TimeUnit::Ms);
        assert_eq!(TimeUnit::for_seconds(&[2e-7, 3.0], true), TimeUnit::Us);
        assert_eq!(TimeUnit::Us.symbol(), "µs");
    }

    #[test]
    fn no_tick_in_the_chosen_unit_prints_in_scientific_notation() {
        for seconds in [[5e-6, 2e-5], [1e-4, 9e-4], [0.003, 0.2], [1.5, 40.0]] {
            let unit = TimeUnit::for_seconds(&seconds, false);
            for v in seconds {
                let shown = fmt_num(v / unit.seconds());
                assert!(!shown.contains('e'), "{v} s shows as {shown} {}", unit.symbol());
            }
        }
    }

    #[test]
    fn log_only_past_two_decades_of_positive_values() {
        assert!(!wants_log(&[1.0, 21.0]));
        assert!(!wants_log(&[1.0, 100.0]));
        assert!(wants_log(&[1.0, 101.0, f64::NAN]));
        assert!(!wants_log(&[0.0, 1.0, 1000.0]), "a zero cannot sit on a log axis");
        assert!(!wants_log(&[]));
    }

    #[test]
    fn labels_carry_unit_and_log_scale() {
        assert_eq!(
            axis_label("query time", Some("ms"), true),
            "query time (ms, log scale)"
        );
        assert_eq!(axis_label("time", Some("µs"), false), "time (µs)");
        assert_eq!(
            axis_label("operations / s", None, true),
            "operations / s (log scale)"
        );
        assert_eq!(axis_label("threads", None, false), "threads");
        assert_eq!(
            axis_label("latency (p99)", None, true),
            "latency (p99, log scale)"
        );
        assert_eq!(axis_label("x (log)", None, true), "x (log)");
        assert_eq!(axis_label("", Some("s"), false), "s");
    }

    #[test]
    fn decade_ticks_print_short() {
        assert_eq!(fmt_tick(0.0001), "1e-4");
        assert_eq!(fmt_tick(0.001), "0.001");
        assert_eq!(fmt_tick(0.00025), "2.50e-4");
        assert_eq!(fmt_tick(1e12), "1e12");
    }
}
