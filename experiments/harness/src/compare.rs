//! `lsmlab compare A.json B.json`: the counted and timed differences of two runs of one
//! experiment, cell by cell.
//!
//! Rows are matched by their key columns: every string and boolean field (the tidy rows'
//! dimensions: dataset, strategy, skew, ...), and, where several rows share those, by their order
//! among them. Numeric fields are measures, split by [`crate::rows::is_timed`]: a counted field
//! differs when its values differ (floats beyond a relative 1e-9, the rounding a different
//! optimisation level gives an average); timed fields always differ a little, so each is shown
//! with the ratio B/A.
//!
//! Rows of a peer engine (an `engine` field other than `lsmlab`, e.g. the fjall peer of
//! `leaper-online`) are set aside and only counted: the peer runs its flushes and compactions on
//! its own threads and its intervals are cut by the wall clock, so how many rows it writes and
//! what they hold differ from run to run of the same code.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::bail;
use serde_json::Value;

use crate::experiment::Row;
use crate::report::value_text;
use crate::result::ResultFile;
use crate::rows::is_timed;

/// One numeric field of one matched row, in A and in B.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldChange {
    /// The matched row's key ([`row_key`]).
    pub row: String,
    /// The field's name.
    pub field: String,
    /// Its value in A (`None` when A's row lacks it).
    pub a: Option<Value>,
    /// Its value in B (`None` when B's row lacks it).
    pub b: Option<Value>,
}

/// What two result files differ in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Scale, seed, config, code and machine differences: context for the numbers.
    pub context: Vec<String>,
    /// How many rows were matched between A and B.
    pub matched_rows: usize,
    /// Changed counted (deterministic) fields: a change here is a change of behaviour.
    pub counted: Vec<FieldChange>,
    /// Changed timed fields (wall time and what derives from it): expected to vary between runs.
    pub timed: Vec<FieldChange>,
    /// Rows of A with no match in B.
    pub only_in_a: Vec<String>,
    /// Rows of B with no match in A.
    pub only_in_b: Vec<String>,
    /// Rows of a peer engine in A and in B ([`is_peer_row`]), not compared.
    pub peer_rows: (usize, usize),
}

/// Whether a row is a peer engine's (its `engine` is not `lsmlab`): wall-clock measurements of
/// another engine's background work, which no two runs repeat.
pub fn is_peer_row(row: &Row) -> bool {
    row.get("engine")
        .and_then(Value::as_str)
        .is_some_and(|e| e != "lsmlab")
}

impl Comparison {
    /// Whether any counted field, or the set of rows, differs.
    pub fn counted_differ(&self) -> bool {
        !self.counted.is_empty() || !self.only_in_a.is_empty() || !self.only_in_b.is_empty()
    }
}

/// The key of a row: its string and boolean fields, `dataset=berlinmod strategy=UM+F`.
pub fn row_key(row: &Row) -> String {
    let key: Vec<String> = row
        .iter()
        .filter(|(_, v)| matches!(v, Value::String(_) | Value::Bool(_)))
        .map(|(k, v)| format!("{k}={}", value_text(v)))
        .collect();
    if key.is_empty() {
        "(row)".to_string()
    } else {
        key.join(" ")
    }
}

/// The rows keyed by [`row_key`], a `#n` appended to the n-th (n >= 2) row sharing a key; in row order.
pub fn keyed_rows(rows: &[Row]) -> Vec<(String, &Row)> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    rows.iter()
        .map(|row| {
            let key = row_key(row);
            let n = seen.entry(key.clone()).or_insert(0);
            *n += 1;
            let key = if *n == 1 { key } else { format!("{key} #{n}") };
            (key, row)
        })
        .collect()
}

/// Whether two counted values are the same (floats to a relative 1e-9).
pub fn same_counted(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y))
            if !((x.is_u64() && y.is_u64()) || (x.is_i64() && y.is_i64())) =>
        {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        }
        _ => a == b,
    }
}

/// Compares two results of the same experiment; a different experiment is an error.
pub fn compare(a: &ResultFile, b: &ResultFile) -> anyhow::Result<Comparison> {
    if a.experiment != b.experiment {
        bail!(
            "the files are results of different experiments (`{}` and `{}`); compare two runs of one experiment",
            a.experiment,
            b.experiment
        );
    }
    let mut out = Comparison {
        context: context(a, b),
        ..Comparison::default()
    };
    let own = |rows: &[Row]| -> Vec<Row> { rows.iter().filter(|r| !is_peer_row(r)).cloned().collect() };
    let (rows_a, rows_b) = (own(&a.rows), own(&b.rows));
    same_field_types(&rows_a, &rows_b)?;
    out.peer_rows = (a.rows.len() - rows_a.len(), b.rows.len() - rows_b.len());
    let keyed_b: BTreeMap<String, &Row> = keyed_rows(&rows_b).into_iter().collect();
    let keys_a: Vec<String> = keyed_rows(&rows_a).into_iter().map(|(k, _)| k).collect();
    for (key, row_a) in keyed_rows(&rows_a) {
        let Some(row_b) = keyed_b.get(&key) else {
            out.only_in_a.push(key);
            continue;
        };
        out.matched_rows += 1;
        let mut fields: Vec<&String> = row_a.keys().chain(row_b.keys()).collect();
        fields.sort();
        fields.dedup();
        for field in fields {
            let (va, vb) = (row_a.get(field), row_b.get(field));
            if !va.or(vb).is_some_and(Value::is_number) {
                continue;
            }
            let change = FieldChange {
                row: key.clone(),
                field: field.clone(),
                a: va.cloned(),
                b: vb.cloned(),
            };
            if is_timed(field) {
                out.timed.push(change);
            } else if !matches!((va, vb), (Some(x), Some(y)) if same_counted(x, y)) {
                out.counted.push(change);
            }
        }
    }
    for (key, _) in keyed_rows(&rows_b) {
        if !keys_a.contains(&key) {
            out.only_in_b.push(key);
        }
    }
    Ok(out)
}

/// What a field holds, as matching sees it: a key (text or a boolean) or a measure (a number).
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Refuses two results in which one field holds values of different kinds (a number in A, text in
/// B): keys are the text and boolean fields, so such a field would silently turn measures into
/// keys and leave every row unmatched. lsmlab writes each field with one kind; a file that breaks
/// that was edited or written by something else.
fn same_field_types(a: &[Row], b: &[Row]) -> anyhow::Result<()> {
    let mut seen: BTreeMap<&str, (&'static str, &Value, char)> = BTreeMap::new();
    for (side, rows) in [('A', a), ('B', b)] {
        for row in rows {
            for (field, value) in row {
                match seen.get(field.as_str()) {
                    None => {
                        seen.insert(field, (kind(value), value, side));
                    }
                    Some(&(k, first, first_side)) if k != kind(value) => bail!(
                        "field `{field}` is {k} in {first_side} ({}) and {} in {side} ({}): a field holds \
                         one kind of value in results lsmlab writes, so one of the files was edited or \
                         written by something else; compare needs both as `lsmlab run` wrote them",
                        first,
                        kind(value),
                        value
                    ),
                    Some(_) => {}
                }
            }
        }
    }
    Ok(())
}

fn context(a: &ResultFile, b: &ResultFile) -> Vec<String> {
    let mut lines = Vec::new();
    if a.scale != b.scale {
        lines.push(format!("scale differs: {} vs {}", a.scale, b.scale));
    }
    if a.seed != b.seed {
        lines.push(format!("seed differs: {} vs {}", a.seed, b.seed));
    }
    let mut keys: Vec<&String> = a.config.keys().chain(b.config.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let (va, vb) = (a.config.get(key), b.config.get(key));
        if va != vb {
            let text = |v: Option<&Value>| v.map(|v| v.to_string()).unwrap_or_else(|| "(absent)".into());
            lines.push(format!("config `{key}` differs: {} vs {}", text(va), text(vb)));
        }
    }
    if a.git != b.git {
        lines.push(format!(
            "code differs: commit {}{} vs {}{}",
            a.git.commit,
            if a.git.dirty { " (dirty)" } else { "" },
            b.git.commit,
            if b.git.dirty { " (dirty)" } else { "" }
        ));
    }
    let build = |r: &ResultFile| {
        r.provenance
            .as_ref()
            .map(|p| format!("lsmlab {} {} ({})", p.lsmlab_version, p.profile, p.rustc))
            .unwrap_or_else(|| "(not recorded)".into())
    };
    if build(a) != build(b) {
        lines.push(format!("build differs: {} vs {}", build(a), build(b)));
    }
    if a.machine != b.machine {
        lines.push(format!(
            "machine differs: {} ({} cores) vs {} ({} cores)",
            a.machine.cpu, a.machine.cores, b.machine.cpu, b.machine.cores
        ));
    }
    lines
}

fn number(v: &Option<Value>) -> String {
    v.as_ref().map(value_text).unwrap_or_else(|| "(absent)".into())
}

/// The comparison as text: context, counted differences, timed fields with their ratio B/A.
pub fn render(c: &Comparison, a_name: &str, b_name: &str, experiment: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "compare `{experiment}`: A = {a_name}, B = {b_name}");
    for line in &c.context {
        let _ = writeln!(s, "  {line}");
    }
    let _ = writeln!(
        s,
        "{} rows matched, {} only in A, {} only in B",
        c.matched_rows,
        c.only_in_a.len(),
        c.only_in_b.len()
    );
    if c.peer_rows != (0, 0) {
        let _ = writeln!(
            s,
            "  not compared: {} and {} rows of a peer engine (timed by the wall clock, with background work on its own threads)",
            c.peer_rows.0, c.peer_rows.1
        );
    }
    for key in &c.only_in_a {
        let _ = writeln!(s, "  only in A: {key}");
    }
    for key in &c.only_in_b {
        let _ = writeln!(s, "  only in B: {key}");
    }
    if c.counted.is_empty() {
        let _ = writeln!(s, "counted fields: identical in every matched row");
    } else {
        let _ = writeln!(s, "counted fields: {} differ", c.counted.len());
        let mut row = "";
        for change in &c.counted {
            if change.row != row {
                row = &change.row;
                let _ = writeln!(s, "  {row}");
            }
            let delta = match (
                change.a.as_ref().and_then(Value::as_f64),
                change.b.as_ref().and_then(Value::as_f64),
            ) {
                (Some(x), Some(y)) if x != 0.0 => {
                    format!(" ({}, {:+.1}%)", signed(y - x), (y - x) / x.abs() * 100.0)
                }
                (Some(x), Some(y)) => format!(" ({})", signed(y - x)),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "    {}: {} -> {}{delta}",
                change.field,
                number(&change.a),
                number(&change.b)
            );
        }
    }
    if c.timed.is_empty() {
        let _ = writeln!(s, "timed fields: none");
    } else {
        let _ = writeln!(s, "timed fields (B/A):");
        let mut row = "";
        for change in &c.timed {
            if change.row != row {
                row = &change.row;
                let _ = writeln!(s, "  {row}");
            }
            let ratio = match (
                change.a.as_ref().and_then(Value::as_f64),
                change.b.as_ref().and_then(Value::as_f64),
            ) {
                (Some(x), Some(y)) if x != 0.0 => format!("  x{:.3}", y / x),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "    {}: {} -> {}{ratio}",
                change.field,
                number(&change.a),
                number(&change.b)
            );
        }
    }
    s
}

/// A signed difference, an integer-valued one without `.0`.
fn signed(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{:+}", x as i64)
    } else {
        format!("{x:+.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::RowBuilder;
    use crate::testing::sample_result as sample;

    fn row(strategy: &str, flushes: u64, ms: f64) -> Row {
        RowBuilder::new()
            .str("dataset", "chicago")
            .str("strategy", strategy)
            .int("flushes", flushes)
            .num("avg_candidates", 1.5)
            .num("update_ms", ms)
            .build()
    }

    #[test]
    fn rows_are_matched_by_key_and_counted_and_timed_fields_told_apart() {
        let mut a = sample();
        a.rows = vec![
            row("Eager", 3, 1.0),
            row("UM+F", 5, 2.0),
            row("UM+F", 6, 2.0),
            row("UM+M", 1, 1.0),
        ];
        let mut b = sample();
        // Another order, one counted change in the second UM+F row, one row swapped for another.
        b.rows = vec![
            row("UM+F", 5, 4.0),
            row("Eager", 3, 0.5),
            row("UM+F", 7, 2.0),
            row("UM+V", 1, 1.0),
        ];
        b.seed = 43;
        let c = compare(&a, &b).unwrap();
        assert_eq!(c.matched_rows, 3);
        assert_eq!(c.only_in_a, vec!["dataset=chicago strategy=UM+M".to_string()]);
        assert_eq!(c.only_in_b, vec!["dataset=chicago strategy=UM+V".to_string()]);
        assert_eq!(c.counted.len(), 1);
        assert_eq!(c.counted[0].row, "dataset=chicago strategy=UM+F #2");
        assert_eq!(c.counted[0].field, "flushes");
        assert_eq!(c.timed.len(), 3, "every matched row's update_ms");
        assert!(c.counted_differ());
        assert_eq!(c.context, vec!["seed differs: 42 vs 43".to_string()]);
        let text = render(&c, "a.json", "b.json", "fake");
        assert!(text.contains("flushes: 6 -> 7 (+1, +16.7%)"), "{text}");
        assert!(text.contains("update_ms: 2 -> 4  x2.000"), "{text}");
        assert!(
            text.contains("only in A: dataset=chicago strategy=UM+M"),
            "{text}"
        );
    }

    #[test]
    fn identical_counts_compare_clean_and_other_experiments_are_refused() {
        let a = sample();
        let mut b = sample();
        b.rows[0].insert("update_ms".into(), serde_json::json!(9.0));
        let c = compare(&a, &b).unwrap();
        assert!(!c.counted_differ());
        assert!(render(&c, "a", "b", "fake").contains("identical in every matched row"));
        // A peer engine's rows are set aside, however many each run wrote and whatever they hold.
        let peer = |ops: u64| {
            RowBuilder::new()
                .str("engine", "fjall")
                .bool("in_flush", ops > 1)
                .int("ops", ops)
                .build()
        };
        let mut a = a.clone();
        a.rows.extend([peer(1), peer(2)]);
        b.rows.push(peer(3));
        let c = compare(&a, &b).unwrap();
        assert!(!c.counted_differ());
        assert_eq!(c.peer_rows, (2, 1));
        assert!(render(&c, "a", "b", "fake").contains("not compared: 2 and 1 rows of a peer engine"));
        // lsmlab's own rows, marked as such, are still compared.
        b.rows[0].insert("engine".into(), serde_json::json!("lsmlab"));
        a.rows[0].insert("engine".into(), serde_json::json!("lsmlab"));
        b.rows[0].insert("flushes".into(), serde_json::json!(99));
        assert!(compare(&a, &b).unwrap().counted_differ());
        b.experiment = "other".into();
        let err = compare(&a, &b).unwrap_err().to_string();
        assert!(
            err.contains("different experiments") && err.contains("`other`"),
            "{err}"
        );
    }
}
