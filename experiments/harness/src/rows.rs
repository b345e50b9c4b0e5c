//! What a run produces: tidy rows (one flat record per measured cell) and notes.

use serde_json::Value;

/// One tidy record: string dimensions plus numeric measures, flat.
pub type Row = serde_json::Map<String, serde_json::Value>;

/// Builds a [`Row`] and refuses non-finite numbers (serde_json would silently write `null`).
///
/// ```
/// use lsmlab_harness::rows::RowBuilder;
/// let row = RowBuilder::new().str("strategy", "UM+F").int("flushes", 3u64).num("update_ms", 1.5).build();
/// assert_eq!(row["flushes"], 3);
/// ```
#[derive(Clone, Debug, Default)]
pub struct RowBuilder {
    row: Row,
}

impl RowBuilder {
    /// An empty row.
    pub fn new() -> Self {
        RowBuilder::default()
    }

    /// A text field.
    pub fn str(mut self, key: &str, value: impl Into<String>) -> Self {
        self.row
            .insert(key.to_string(), serde_json::Value::String(value.into()));
        self
    }

    /// Any integer type (`u64`, `i64`, `usize`, `u32`, ...).
    pub fn int(mut self, key: &str, value: impl Into<serde_json::Number>) -> Self {
        self.row
            .insert(key.to_string(), serde_json::Value::Number(value.into()));
        self
    }

    /// Panics, naming the key, if `value` is NaN or infinite: a measure that is not a number is a
    /// bug in the experiment (a 0/0 ratio must become an explicit 0 or an absent field with a note).
    pub fn num(mut self, key: &str, value: f64) -> Self {
        let number = serde_json::Number::from_f64(value)
            .unwrap_or_else(|| panic!("row field `{key}` is not a finite number: {value}"));
        self.row
            .insert(key.to_string(), serde_json::Value::Number(number));
        self
    }

    /// Like [`RowBuilder::num`], but leaves the field out when `value` is `None`.
    pub fn opt_num(self, key: &str, value: Option<f64>) -> Self {
        match value {
            Some(v) => self.num(key, v),
            None => self,
        }
    }

    /// A boolean field.
    pub fn bool(mut self, key: &str, value: bool) -> Self {
        self.row.insert(key.to_string(), serde_json::Value::Bool(value));
        self
    }

    /// The row.
    pub fn build(self) -> Row {
        self.row
    }
}

/// Whether a row field is timed (measured on the clock, different on every run and machine) rather
/// than counted (deterministic for a seed and config, `docs/design.md#measuring`).
///
/// lsmlab names its fields by their unit, so the name decides: a field is timed when one of its
/// `_`-separated words is a time unit (`ms`, `us`, `ns`), a rate or latency word (`qps`, `latency`,
/// `speedup`, `overhead`, `spike`, `spikes`) or `s` (seconds and per-second rates: `wall_s`,
/// `throughput_ops_s`, `modelled_ops_per_s_hdd`); `ms` alone is timed too. Modelled times
/// (`modelled_ms`) count as timed: they add measured CPU time to counted I/O. Everything else
/// (pages, hits, flushes, ratios of counts, parameters) is counted.
///
/// ```
/// use lsmlab_harness::rows::is_timed;
/// assert!(is_timed("update_ms") && is_timed("modelled_ms_hdd") && is_timed("throughput_ops_s"));
/// assert!(!is_timed("page_reads") && !is_timed("hit_ratio") && !is_timed("selectivity"));
/// ```
pub fn is_timed(key: &str) -> bool {
    const TIMED_WORDS: [&str; 10] = [
        "ms", "us", "ns", "s", "qps", "latency", "speedup", "overhead", "spike", "spikes",
    ];
    key.split('_').any(|w| TIMED_WORDS.contains(&w))
}

/// What a run produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    /// The measured rows, in run order.
    pub rows: Vec<Row>,
    /// Anything a reader must know to interpret the rows (engine limits, substitutions, ...).
    pub notes: Vec<String>,
    /// Settings the run derived from its config (not inputs: `--config` ignores them). The result
    /// file records them under `config.derived`.
    pub extra_config: serde_json::Map<String, serde_json::Value>,
}

// ---- Reading and printing row values (the figures, the claims and the report share these). ----

/// A field's text: strings as they are, other values in JSON form.
pub fn text_of(row: &Row, key: &str) -> Option<String> {
    row.get(key).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// Distinct text values ([`text_of`]) of `key` among `rows`, in first-seen order.
pub fn distinct_of<'a>(rows: impl IntoIterator<Item = &'a Row>, key: &str) -> Vec<String> {
    distinct(rows.into_iter().filter_map(|r| text_of(r, key)))
}

/// `items` without repeats, in first-seen order.
pub(crate) fn distinct(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// A number for an axis, a table cell or a report: at most about four significant digits,
/// thousands grouped, no trailing zeros, scientific notation only for very large or small values.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let a = v.abs();
    let text = if a == 0.0 {
        return "0".to_string();
    } else if !(1e-3..1e12).contains(&a) {
        return format!("{v:.2e}");
    } else if a >= 1000.0 {
        let grouped = crate::progress::thousands(a.round() as u64);
        return if v < 0.0 { format!("-{grouped}") } else { grouped };
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    };
    let trimmed = text.trim_end_matches('0').trim_end_matches('.');
    if trimmed == "-0" {
        "0".to_string()
    } else {
        trimmed.to_string()
    }
}

/// A cell's text: strings as they are, numbers through [`fmt_num`], booleans as words.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => fmt_num(i as f64),
            (_, Some(u)) => fmt_num(u as f64),
            _ => fmt_num(n.as_f64().unwrap_or(0.0)),
        },
        Value::Bool(b) => b.to_string(),
        Value::Null => String::new(),
        Value::Array(items) => items.iter().map(value_text).collect::<Vec<_>>().join(","),
        Value::Object(_) => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_builder_keeps_types() {
        let row = RowBuilder::new()
            .str("dataset", "chicago")
            .int("flushes", 3u64)
            .int("delta", -2i64)
            .num("update_ms", 1.25)
            .opt_num("absent", None)
            .bool("ok", true)
            .build();
        assert_eq!(
            serde_json::to_string(&row).unwrap(),
            r#"{"dataset":"chicago","delta":-2,"flushes":3,"ok":true,"update_ms":1.25}"#
        );
    }

    #[test]
    fn timed_fields_are_told_from_counted_ones_by_name() {
        for timed in [
            "ms",
            "update_ms",
            "avg_query_us",
            "p99_9_update_us",
            "flush_modelled_ms",
            "modelled_ms_nvme",
            "qps",
            "qps_in_windows",
            "wall_s",
            "run_s",
            "throughput_ops_s",
            "modelled_ops_per_s_hdd",
            "qps_speedup",
            "overhead_pct",
            "latency_spikes",
        ] {
            assert!(is_timed(timed), "{timed}");
        }
        for counted in [
            "page_reads",
            "flushes",
            "merges",
            "um_max_entries",
            "hit_ratio",
            "avg_candidates",
            "records",
            "selectivity",
            "strategy",
            "miss_ratio",
            "cache_hits",
            "write_amplification",
            "pages_per_op",
            "users",
            "status",
            "ops",
        ] {
            assert!(!is_timed(counted), "{counted}");
        }
    }

    #[test]
    #[should_panic(expected = "update_ms")]
    fn row_builder_panics_on_nan_naming_the_key() {
        let _ = RowBuilder::new().num("update_ms", f64::NAN);
    }
}
