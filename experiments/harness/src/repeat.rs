//! `--repeat R`: a cell's R runs (seeds from [`crate::cells::repeat_seed`]) folded into one set of
//! rows: each numeric field becomes the mean of its R values and, where the values differ, gains a
//! `<field>_ci95` field, the half-width of a 95% confidence interval for the mean (Student's t with
//! R - 1 degrees of freedom: `t * s / sqrt(R)`, `s` the sample standard deviation). Each row also
//! gets `repeats = R`. Figures draw `mean +- <field>_ci95` where a row has it.

use anyhow::bail;
use serde_json::{Number, Value};

use crate::rows::RunOutput;

/// The suffix of a field's 95% interval half-width.
pub const CI_SUFFIX: &str = "_ci95";

/// The field that records how many runs a row averages.
pub const REPEATS: &str = "repeats";

/// The two-sided 97.5% quantile of Student's t distribution with `df` degrees of freedom (so
/// `mean +- t * s / sqrt(n)` is a 95% interval), from the standard table; between tabulated
/// degrees of freedom the smaller one's (larger, so conservative) value is used.
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        31..=39 => 2.042,
        40..=59 => 2.021,
        60..=119 => 2.000,
        120..=999 => 1.980,
        _ => 1.960,
    }
}

/// Mean and 95% interval half-width of `values` (half-width 0 for a single value).
pub fn mean_ci95(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, t_975(n - 1) * (var / n as f64).sqrt())
}

/// Folds the runs of one cell into one output. One run is returned as it is. The runs must have
/// the same rows with the same non-numeric fields (the same cell under other seeds); notes are
/// kept once each, the derived config of the first run.
pub fn aggregate(mut runs: Vec<RunOutput>) -> anyhow::Result<RunOutput> {
    if runs.len() <= 1 {
        return Ok(runs.pop().unwrap_or_default());
    }
    let r = runs.len();
    let first = &runs[0];
    for (k, run) in runs.iter().enumerate().skip(1) {
        if run.rows.len() != first.rows.len() {
            bail!(
                "repetition {} wrote {} rows, repetition 1 wrote {}: rows cannot be paired",
                k + 1,
                run.rows.len(),
                first.rows.len()
            );
        }
    }
    let mut out = RunOutput {
        extra_config: first.extra_config.clone(),
        ..RunOutput::default()
    };
    for run in &runs {
        for note in &run.notes {
            if !out.notes.contains(note) {
                out.notes.push(note.clone());
            }
        }
    }
    for (i, row) in first.rows.iter().enumerate() {
        let mut folded = row.clone();
        for (key, value) in row {
            let values: Vec<&Value> = runs.iter().filter_map(|run| run.rows[i].get(key)).collect();
            if !value.is_number() {
                if values.len() != r || values.iter().any(|v| *v != value) {
                    bail!(
                        "row {} field `{key}` is {value} in repetition 1 but differs in another: rows cannot be paired",
                        i + 1
                    );
                }
                continue;
            }
            if values.len() != r {
                bail!(
                    "row {} field `{key}` is missing from some repetitions: rows cannot be paired",
                    i + 1
                );
            }
            if values.iter().all(|v| *v == value) {
                continue; // the same in every run: kept as it is (an integer stays an integer)
            }
            let numbers: Vec<f64> = values.iter().filter_map(|v| v.as_f64()).collect();
            let (mean, half) = mean_ci95(&numbers);
            folded.insert(key.clone(), number(mean, key)?);
            folded.insert(format!("{key}{CI_SUFFIX}"), number(half, key)?);
        }
        folded.insert(REPEATS.to_string(), Value::from(r as u64));
        out.rows.push(folded);
    }
    Ok(out)
}

fn number(x: f64, key: &str) -> anyhow::Result<Value> {
    match Number::from_f64(x) {
        Some(n) => Ok(Value::Number(n)),
        None => bail!("the mean of `{key}` is not a finite number"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::RowBuilder;

    #[test]
    fn t_quantiles_match_the_table() {
        assert_eq!(t_975(1), 12.706);
        assert_eq!(t_975(2), 4.303);
        assert_eq!(t_975(9), 2.262);
        assert_eq!(t_975(35), 2.042);
        assert_eq!(t_975(10_000), 1.960);
    }

    #[test]
    fn mean_and_interval_of_known_numbers() {
        // 2, 4, 6: mean 4, s = 2, t(2) = 4.303, half-width 4.303 * 2 / sqrt(3) = 4.9687
        let (mean, half) = mean_ci95(&[2.0, 4.0, 6.0]);
        assert_eq!(mean, 4.0);
        assert!((half - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-12, "{half}");
        assert!((half - 4.9687).abs() < 1e-4, "{half}");
        // 10 values 1..=10: mean 5.5, s = 3.02765, t(9) = 2.262, half-width 2.1658
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let (mean, half) = mean_ci95(&ten);
        assert_eq!(mean, 5.5);
        assert!((half - 2.1658).abs() < 1e-4, "{half}");
        assert_eq!(mean_ci95(&[7.0]), (7.0, 0.0));
    }

    fn run(flushes: u64, ms: f64) -> RunOutput {
        RunOutput {
            rows: vec![RowBuilder::new()
                .str("strategy", "UM+F")
                .int("records", 100u64)
                .int("flushes", flushes)
                .num("update_ms", ms)
                .build()],
            notes: vec!["n".into()],
            extra_config: Default::default(),
        }
    }

    #[test]
    fn repetitions_fold_into_means_with_intervals_where_values_differ() {
        let folded = aggregate(vec![run(2, 1.0), run(4, 2.0), run(6, 3.0)]).unwrap();
        let row = &folded.rows[0];
        assert_eq!(row["records"], 100, "identical values stay as they are");
        assert!(row.get("records_ci95").is_none());
        assert_eq!(row["flushes"], 4.0);
        assert!((row["flushes_ci95"].as_f64().unwrap() - 4.9687).abs() < 1e-4);
        assert_eq!(row["update_ms"], 2.0);
        assert!((row["update_ms_ci95"].as_f64().unwrap() - 2.4843).abs() < 1e-4);
        assert_eq!(row["repeats"], 3);
        assert_eq!(folded.notes, vec!["n".to_string()]);
        assert_eq!(aggregate(vec![run(2, 1.0)]).unwrap(), run(2, 1.0));

        let mut other = run(2, 1.0);
        other.rows[0].insert("strategy".into(), "Eager".into());
        let err = aggregate(vec![run(2, 1.0), other]).unwrap_err().to_string();
        assert!(
            err.contains("`strategy`") && err.contains("cannot be paired"),
            "{err}"
        );
    }
}
