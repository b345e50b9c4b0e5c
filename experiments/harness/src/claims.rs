//! The papers' claims as data, and one evaluator that judges them against result rows.
//!
//! Each paper's claims live in one JSON file under `experiments/claims/` (compiled in with
//! `include_str!`, so the binary is self-contained). A claim names the experiment whose rows measure
//! it and says declaratively how: a [`Kind`] of measurement of a field (`a+b` sums fields), for each
//! variant it covers (values of `variant_key`, usually `strategy`) against each baseline, per group of
//! dimensions (`group_by`), on rows kept by `filter` (`$max` / `$min` stand for the largest / smallest
//! value of that dimension in the experiment's rows), optionally reduced (`reduce`: max, min, mean)
//! over the cells of further dimensions (`over`), matched between variant and baseline.
//!
//! Measurements (`m`), oriented so that the paper's direction is up unless `expect.direction` says
//! otherwise:
//! - `ratio`: baseline / variant (`"ratio": "baseline/variant"`, the default: how many times faster or
//!   smaller the variant is) or variant / baseline; x / 0 with x > 0 is infinite, 0 / 0 is undefined.
//! - `reduction`: 1 - variant / baseline (the fraction the variant cuts); undefined when baseline is 0.
//! - `value`: the variant's field itself (e.g. flushes == 0); the baseline only serves the direction.
//!
//! Verdict of one entry (one claim, group, variant and baseline), with `lo` = `expect.min`,
//! `hi` = `expect.max` and `tol` = the claim's tolerance (else the file's):
//! - `reproduced`: `m >= lo x (1 - tol)` (when `lo` is given) and `m <= hi x (1 + tol)` (when `hi` is
//!   given). "Up to X" and "X times" claims give `lo` only; "about X" gives `lo = hi = X`; a range gives
//!   both.
//! - `direction-only`: not reproduced, but `m` lies on the paper's side: `above: x` means `m > x`,
//!   `below: x` means `m < x`, `below_baseline` means the variant's value is below the baseline's,
//!   `none` means a claim that has no direction (it is reproduced or not).
//! - `not-reproduced`: neither.
//! - `not-measured`: the experiment, a variant, a baseline, a filtered group value or a field is
//!   missing from the results, or the measurement is undefined (0 / 0).
//!
//! A claim's summary verdict is `not-measured` when no entry was measured, else the best verdict that
//! more than half of the measured entries reach (reproduced > direction-only > not-reproduced): a
//! claim half of whose entries point the wrong way is not reproduced. Claims
//! about time use wall time; where the rows count I/O, `secondary` names that field and the entry
//! carries the same measurement and rule on it beside the primary one (it does not change the verdict).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize, Serializer};

use crate::plot::markdown_table;
use crate::result::ResultFile;
use crate::rows::{distinct_of, fmt_num, text_of, Row};
use crate::scale::Scale;

/// The `schema` of a claims file (`results/<scale>/claims.json`).
pub const SCHEMA: &str = "lsmlab.claims/1";

/// File name of the evaluation written beside the result files of a scale.
pub const FILE_NAME: &str = crate::result::CLAIMS_FILE_NAME;

/// One paper's claims (the contents of one file under `experiments/claims/`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimSet {
    /// The paper's name as experiments give it in result files (e.g. `LSM RUM-tree`).
    pub paper: String,
    /// The seed text the claims are quoted from.
    #[serde(default)]
    pub seed: Option<String>,
    /// What the paper is and what its claims cover, for the report.
    pub doc: String,
    /// Default relative tolerance of the claims (see the module doc).
    pub tolerance: f64,
    /// Named groups of claims the report tables apart from the paper's own (for example a
    /// like-for-like pairing the paper did not run), each with a sentence saying why it exists.
    #[serde(default)]
    pub groups: BTreeMap<String, String>,
    /// The claims, in the order the report lists them.
    pub claims: Vec<Claim>,
}

/// One claim of a paper.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// Identifier of the claim, unique within its file.
    pub id: String,
    /// Where the paper shows it, e.g. `Fig. 5` or `Table 2`.
    pub source: String,
    /// The claim in the paper's words (or a close paraphrase).
    pub text: String,
    /// The paper's number as the paper states it, e.g. `3x-9.6x`.
    pub paper: String,
    /// The experiment (registry name) whose rows measure the claim.
    pub experiment: String,
    /// How the claim is measured from the experiment's rows.
    pub measure: Measure,
    /// A second field measured the same way, usually counted I/O beside a wall-time claim.
    #[serde(default)]
    pub secondary: Option<String>,
    /// Relative tolerance of this claim, overriding the file's [`ClaimSet::tolerance`].
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// What the paper's number means for the measurement (bounds and direction).
    pub expect: Expect,
    /// The group (a key of [`ClaimSet::groups`]) this claim belongs to; none for the paper's claims.
    #[serde(default)]
    pub group: Option<String>,
}

/// How a claim is measured from rows.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measure {
    /// What is computed from the variant's and baseline's values.
    pub kind: Kind,
    /// Which way a [`Kind::Ratio`] divides (baseline / variant unless said otherwise).
    #[serde(default)]
    pub ratio: RatioOrder,
    /// A field name, or several joined with `+` (summed).
    pub field: String,
    /// The dimension whose values name the variants and baselines (`strategy` unless said otherwise).
    #[serde(default = "default_variant_key")]
    pub variant_key: String,
    /// Every variant the claim covers; each is judged on its own.
    pub variants: Vec<String>,
    /// The values of the variant key each variant is compared against (none for [`Kind::Value`]).
    #[serde(default)]
    pub baselines: Vec<String>,
    /// Dimensions whose every combination of values is judged as its own group.
    #[serde(default)]
    pub group_by: Vec<String>,
    /// Rows kept: a dimension's allowed values (`$max` / `$min` stand for its largest / smallest value).
    #[serde(default)]
    pub filter: BTreeMap<String, Vec<String>>,
    /// Dimensions reduced away with [`Measure::reduce`] before variant and baseline are matched.
    #[serde(default)]
    pub over: Vec<String>,
    /// How the cells of the [`Measure::over`] dimensions are reduced to one value.
    #[serde(default)]
    pub reduce: Option<Reduce>,
}

fn default_variant_key() -> String {
    "strategy".to_string()
}

/// The kind of measurement of a claim (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A quotient of the variant's and the baseline's value (see [`RatioOrder`]).
    Ratio,
    /// `1 - variant / baseline`: the fraction the variant cuts.
    Reduction,
    /// The variant's value itself.
    Value,
}

/// Which way a [`Kind::Ratio`] divides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum RatioOrder {
    /// baseline / variant: how many times faster or smaller the variant is.
    #[default]
    #[serde(rename = "baseline/variant")]
    BaselineOverVariant,
    /// variant / baseline.
    #[serde(rename = "variant/baseline")]
    VariantOverBaseline,
}

/// How several cells' values reduce to one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reduce {
    /// The largest value.
    Max,
    /// The smallest value.
    Min,
    /// The arithmetic mean.
    Mean,
}

/// What the paper's number means for a measurement.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Lower bound of a reproduced measurement (before tolerance), if any.
    #[serde(default)]
    pub min: Option<f64>,
    /// Upper bound of a reproduced measurement (before tolerance), if any.
    #[serde(default)]
    pub max: Option<f64>,
    /// The paper's side, for a direction-only verdict.
    pub direction: Direction,
}

/// The side of a measurement the paper's claim points to.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The measurement is above this value.
    Above(f64),
    /// The measurement is below this value.
    Below(f64),
    /// The variant's value is below the baseline's.
    BelowBaseline,
    /// The claim has no direction: it is reproduced or not.
    None,
}

/// The outcome for one entry or one claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Nothing to judge: the data is missing or the measurement undefined.
    NotMeasured,
    /// Measured, and neither within the bounds nor on the paper's side.
    NotReproduced,
    /// Outside the bounds, but on the paper's side.
    DirectionOnly,
    /// Within the bounds (with tolerance).
    Reproduced,
}

impl Verdict {
    /// The verdict as written in claims files and reports (`reproduced`, `direction-only`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::DirectionOnly => "direction-only",
            Verdict::NotReproduced => "not-reproduced",
            Verdict::NotMeasured => "not-measured",
        }
    }
}

/// Claim files given as (file name, text), parsed and checked (the papers' own are compiled into
/// the binary; see `lsmlab::registry::claim_sources`).
pub fn parse_all(sources: &[(&str, &str)]) -> anyhow::Result<Vec<ClaimSet>> {
    sources.iter().map(|(name, text)| parse(name, text)).collect()
}

/// Parses and checks one claims file; errors name the file and the claim.
pub fn parse(name: &str, text: &str) -> anyhow::Result<ClaimSet> {
    let set: ClaimSet =
        serde_json::from_str(text).with_context(|| format!("claims file {name} does not parse"))?;
    check(&set).with_context(|| format!("claims file {name}"))?;
    Ok(set)
}

fn check(set: &ClaimSet) -> anyhow::Result<()> {
    if !(0.0..1.0).contains(&set.tolerance) {
        bail!("tolerance {} is not in [0, 1)", set.tolerance);
    }
    let mut ids: Vec<&str> = Vec::new();
    for c in &set.claims {
        if ids.contains(&c.id.as_str()) {
            bail!("claim id `{}` appears twice", c.id);
        }
        ids.push(&c.id);
        let m = &c.measure;
        let fail = |what: &str| anyhow::anyhow!("claim `{}`: {what}", c.id);
        if m.variants.is_empty() {
            return Err(fail("no variants"));
        }
        if m.kind != Kind::Value && m.baselines.is_empty() {
            return Err(fail("a ratio or reduction needs baselines"));
        }
        if c.expect.direction == Direction::BelowBaseline && m.baselines.is_empty() {
            return Err(fail("direction below_baseline needs baselines"));
        }
        if !m.over.is_empty() && m.reduce.is_none() {
            return Err(fail("`over` needs `reduce`"));
        }
        if let (Some(lo), Some(hi)) = (c.expect.min, c.expect.max) {
            if lo > hi {
                return Err(fail("expect.min is above expect.max"));
            }
        }
        if c.expect.min.is_none() && c.expect.max.is_none() {
            return Err(fail("expect needs min or max"));
        }
        if let Some(g) = &c.group {
            if !set.groups.contains_key(g) {
                return Err(fail(&format!("group `{g}` is not one of the file's `groups`")));
            }
        }
        if c.tolerance.is_some_and(|t| !(0.0..1.0).contains(&t)) {
            return Err(fail("tolerance is not in [0, 1)"));
        }
        if m.field.split('+').any(|f| f.trim().is_empty()) {
            return Err(fail("empty field name"));
        }
    }
    Ok(())
}

/// A measured number: finite, infinite (x / 0) or undefined; written to JSON as a number, `"inf"` or
/// `null`.
fn ser_measured<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) if x.is_finite() => s.serialize_f64(*x),
        Some(x) if *x > 0.0 => s.serialize_str("inf"),
        Some(_) => s.serialize_str("-inf"),
        None => s.serialize_none(),
    }
}

/// One entry: a claim judged for one group, variant and baseline.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    /// The claim's id.
    pub claim: String,
    /// The group as text: its dimension values, then `variant vs baseline`.
    pub group: String,
    /// The group's dimension values, the variant (under the variant key) and the baseline.
    pub dims: BTreeMap<String, String>,
    /// The measurement: finite, infinite (x / 0) or none when undefined or missing.
    #[serde(serialize_with = "ser_measured")]
    pub measured: Option<f64>,
    /// The paper's number as the paper states it.
    pub paper: String,
    /// This entry's verdict.
    pub verdict: Verdict,
    /// The same measurement of the claim's secondary field, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secondary: Option<Secondary>,
    /// Why the entry was not measured, or other remarks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The second measurement of an entry (counted I/O beside wall time).
#[derive(Clone, Debug, Serialize)]
pub struct Secondary {
    /// The secondary field measured.
    pub field: String,
    /// Its measurement, as [`Entry::measured`].
    #[serde(serialize_with = "ser_measured")]
    pub measured: Option<f64>,
    /// Its verdict under the claim's rule (informative: it does not change the entry's).
    pub verdict: Verdict,
}

/// A claim's summary over its entries.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The claim's id.
    pub claim: String,
    /// The paper's name ([`ClaimSet::paper`]).
    pub paper_name: String,
    /// Where the paper shows it ([`Claim::source`]).
    pub source: String,
    /// The claim's text.
    pub text: String,
    /// The experiment that measures it.
    pub experiment: String,
    /// The kind of measurement.
    pub kind: Kind,
    /// The measured field (or `+`-joined fields).
    pub field: String,
    /// The paper's number as the paper states it.
    pub paper: String,
    /// The smallest measurement over the claim's measured entries, if any.
    #[serde(serialize_with = "ser_measured")]
    pub measured_min: Option<f64>,
    /// The largest measurement over the claim's measured entries, if any.
    #[serde(serialize_with = "ser_measured")]
    pub measured_max: Option<f64>,
    /// The claim's verdict (see the module doc).
    pub verdict: Verdict,
    /// How many entries got each verdict.
    pub counts: BTreeMap<Verdict, usize>,
    /// The claim's group ([`Claim::group`]), if it is not one of the paper's own claims.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// The evaluation of every claim against the results of one scale (`results/<scale>/claims.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Evaluation {
    /// The file's schema, [`SCHEMA`].
    pub schema: String,
    /// The scale whose results were judged.
    pub scale: Scale,
    /// When the evaluation was made (RFC 3339).
    pub generated_at: String,
    /// The verdict rules, as the module doc states them.
    pub rules: String,
    /// One summary per claim.
    pub claims: Vec<Summary>,
    /// Every entry of every claim.
    pub entries: Vec<Entry>,
}

/// The rules in one paragraph, written into every claims file.
pub const RULES: &str =
    "Per entry (claim x group x variant x baseline), with lo = expect.min, hi = expect.max \
and tol the claim's relative tolerance: reproduced when m >= lo*(1-tol) and m <= hi*(1+tol) (each bound \
only when given); direction-only when not reproduced but m lies on the paper's side (above/below a value, \
or below the baseline's value); not-reproduced otherwise; not-measured when the experiment, a variant, a \
baseline, a group value or a field is missing, or the measurement is undefined (0/0). Per claim: \
not-measured when nothing was measured, else the best verdict more than half of the measured entries reach.";

/// Judges every claim of `sets` against `results` (the result files of one scale).
pub fn evaluate(sets: &[ClaimSet], results: &[ResultFile], scale: Scale) -> Evaluation {
    let mut claims = Vec::new();
    let mut entries = Vec::new();
    for set in sets {
        for claim in &set.claims {
            let result = results.iter().find(|r| r.experiment == claim.experiment);
            let tol = claim.tolerance.unwrap_or(set.tolerance);
            let mine = evaluate_claim(claim, result, tol);
            claims.push(summarise(set, claim, &mine));
            entries.extend(mine);
        }
    }
    Evaluation {
        schema: SCHEMA.to_string(),
        scale,
        generated_at: crate::result::now_rfc3339(),
        rules: RULES.to_string(),
        claims,
        entries,
    }
}

fn summarise(set: &ClaimSet, claim: &Claim, entries: &[Entry]) -> Summary {
    let measured: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.verdict != Verdict::NotMeasured)
        .collect();
    let values = measured.iter().filter_map(|e| e.measured);
    let mut counts = BTreeMap::new();
    for e in entries {
        *counts.entry(e.verdict).or_insert(0) += 1;
    }
    let mut verdicts: Vec<Verdict> = measured.iter().map(|e| e.verdict).collect();
    verdicts.sort_by(|a, b| b.cmp(a));
    let verdict = if verdicts.is_empty() {
        Verdict::NotMeasured
    } else {
        // Sorted best first: the verdict at position n/2 is reached by n/2 + 1 entries, a majority.
        verdicts[verdicts.len() / 2]
    };
    Summary {
        claim: claim.id.clone(),
        paper_name: set.paper.clone(),
        source: claim.source.clone(),
        text: claim.text.clone(),
        experiment: claim.experiment.clone(),
        kind: claim.measure.kind,
        field: claim.measure.field.clone(),
        paper: claim.paper.clone(),
        measured_min: values.clone().reduce(f64::min),
        measured_max: values.reduce(f64::max),
        verdict,
        counts,
        group: claim.group.clone(),
    }
}

/// A field expression (`a` or `a+b+...`) on a row; `None` when a part is missing or not a number.
fn number_of(row: &Row, expr: &str) -> Option<f64> {
    expr.split('+').map(|f| row.get(f.trim())?.as_f64()).sum()
}

/// The filter's values with `$max` / `$min` resolved against `rows` (numeric comparison).
fn resolve_filter(filter: &BTreeMap<String, Vec<String>>, rows: &[Row]) -> Vec<(String, Vec<String>)> {
    filter
        .iter()
        .map(|(key, values)| {
            let resolved = values
                .iter()
                .filter_map(|v| {
                    let pick = |better: fn(f64, f64) -> bool| {
                        rows.iter()
                            .filter_map(|r| Some((r.get(key)?.as_f64()?, text_of(r, key)?)))
                            .reduce(|a, b| if better(b.0, a.0) { b } else { a })
                            .map(|(_, t)| t)
                    };
                    match v.as_str() {
                        "$max" => pick(|a, b| a > b),
                        "$min" => pick(|a, b| a < b),
                        _ => Some(v.clone()),
                    }
                })
                .collect();
            (key.clone(), resolved)
        })
        .collect()
}

fn evaluate_claim(claim: &Claim, result: Option<&ResultFile>, tol: f64) -> Vec<Entry> {
    let m = &claim.measure;
    let baselines: Vec<Option<&String>> = if m.baselines.is_empty() {
        vec![None]
    } else {
        m.baselines.iter().map(Some).collect()
    };
    let entry = |dims: BTreeMap<String, String>, group_text: String| Entry {
        claim: claim.id.clone(),
        group: group_text,
        dims,
        measured: None,
        paper: claim.paper.clone(),
        verdict: Verdict::NotMeasured,
        secondary: None,
        note: None,
    };
    let Some(result) = result else {
        let mut out = Vec::new();
        for v in &m.variants {
            for b in &baselines {
                let (dims, text) = group_dims(&[], &m.variant_key, v, *b);
                let mut e = entry(dims, text);
                e.note = Some(format!("no {} result at this scale", claim.experiment));
                out.push(e);
            }
        }
        return out;
    };
    let filter = resolve_filter(&m.filter, &result.rows);
    let rows: Vec<&Row> = result
        .rows
        .iter()
        .filter(|r| {
            filter
                .iter()
                .all(|(k, vals)| text_of(r, k).is_some_and(|t| vals.contains(&t)))
        })
        .collect();
    // Group values: a filtered dimension's listed values (so a missing one shows as not measured),
    // otherwise the values the rows have.
    let mut combos: Vec<Vec<(String, String)>> = vec![vec![]];
    for dim in &m.group_by {
        let values = match filter.iter().find(|(k, _)| k == dim) {
            Some((_, vals)) => vals.clone(),
            None => distinct_of(rows.iter().copied(), dim),
        };
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((dim.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    let mut out = Vec::new();
    for combo in &combos {
        let in_group: Vec<&Row> = rows
            .iter()
            .copied()
            .filter(|r| combo.iter().all(|(k, v)| text_of(r, k).as_deref() == Some(v)))
            .collect();
        for v in &m.variants {
            for b in &baselines {
                let (dims, text) = group_dims(combo, &m.variant_key, v, *b);
                let mut e = entry(dims, text);
                let side = |name: &str| -> Vec<&Row> {
                    in_group
                        .iter()
                        .copied()
                        .filter(|r| text_of(r, &m.variant_key).as_deref() == Some(name))
                        .collect()
                };
                let vrows = side(v);
                let brows = b.map(|b| side(b));
                if vrows.is_empty() {
                    e.note = Some(format!("no rows for {} {v} in this group", m.variant_key));
                } else if brows.as_ref().is_some_and(|r| r.is_empty()) {
                    e.note = Some(format!(
                        "no rows for baseline {} in this group",
                        b.map(String::as_str).unwrap_or("")
                    ));
                } else {
                    match measure(m, &m.field, &vrows, brows.as_deref()) {
                        Ok((value, base)) => {
                            e.measured = value;
                            e.verdict = match value {
                                Some(x) => judge(&claim.expect, tol, x, base),
                                None => Verdict::NotMeasured,
                            };
                            if value.is_none() {
                                e.note = Some("undefined (0 / 0)".to_string());
                            }
                        }
                        Err(why) => e.note = Some(why),
                    }
                    if let Some(field) = &claim.secondary {
                        let (measured, verdict) = match measure(m, field, &vrows, brows.as_deref()) {
                            Ok((Some(x), base)) => (Some(x), judge(&claim.expect, tol, x, base)),
                            _ => (None, Verdict::NotMeasured),
                        };
                        e.secondary = Some(Secondary {
                            field: field.clone(),
                            measured,
                            verdict,
                        });
                    }
                }
                out.push(e);
            }
        }
    }
    out
}

fn group_dims(
    combo: &[(String, String)],
    variant_key: &str,
    variant: &str,
    baseline: Option<&String>,
) -> (BTreeMap<String, String>, String) {
    let mut dims: BTreeMap<String, String> = combo.iter().cloned().collect();
    dims.insert(variant_key.to_string(), variant.to_string());
    let mut text: Vec<String> = combo.iter().map(|(k, v)| format!("{k}={v}")).collect();
    match baseline {
        Some(b) => {
            dims.insert("baseline".to_string(), b.clone());
            text.push(format!("{variant} vs {b}"));
        }
        None => text.push(variant.to_string()),
    }
    (dims, text.join(", "))
}

/// The measurement of `field` for one entry: the value (None when undefined) and the baseline's value
/// (for `below_baseline`), reduced over the `over` cells. Err explains what is missing.
fn measure(
    m: &Measure,
    field: &str,
    vrows: &[&Row],
    brows: Option<&[&Row]>,
) -> Result<(Option<f64>, Option<f64>), String> {
    // Cells: the variant's rows keyed by their `over` values, each matched with the baseline's row
    // of the same values.
    let key = |r: &Row| -> Vec<Option<String>> { m.over.iter().map(|k| text_of(r, k)).collect() };
    let mut cells: Vec<(Option<f64>, Option<f64>)> = Vec::new();
    let vrows: Vec<&Row> = if m.over.is_empty() {
        vrows.iter().take(1).copied().collect()
    } else {
        vrows.to_vec()
    };
    for vr in vrows {
        let v = number_of(vr, field).ok_or_else(|| format!("field `{field}` missing"))?;
        let b = match brows {
            None => None,
            Some(brows) => match brows.iter().find(|br| key(br) == key(vr)) {
                Some(br) => Some(number_of(br, field).ok_or_else(|| format!("field `{field}` missing"))?),
                None => continue,
            },
        };
        let value = match (m.kind, b) {
            (Kind::Value, _) => Some(v),
            (Kind::Ratio, Some(b)) => {
                let (num, den) = match m.ratio {
                    RatioOrder::BaselineOverVariant => (b, v),
                    RatioOrder::VariantOverBaseline => (v, b),
                };
                divide(num, den)
            }
            (Kind::Reduction, Some(b)) => divide(v, b).map(|r| 1.0 - r),
            (_, None) => return Err("no baseline".to_string()),
        };
        cells.push((value, b));
    }
    if cells.is_empty() {
        return Err("no cell of the variant matches one of the baseline".to_string());
    }
    if cells.iter().any(|(v, _)| v.is_none()) && cells.len() == 1 {
        return Ok((None, cells[0].1));
    }
    let values: Vec<f64> = cells.iter().filter_map(|c| c.0).collect();
    let bases: Vec<f64> = cells.iter().filter_map(|c| c.1).collect();
    let reduce = m.reduce.unwrap_or(Reduce::Max);
    Ok((reduce_with(reduce, &values), reduce_with(reduce, &bases)))
}

fn divide(num: f64, den: f64) -> Option<f64> {
    if den != 0.0 {
        Some(num / den)
    } else if num > 0.0 {
        Some(f64::INFINITY)
    } else if num < 0.0 {
        Some(f64::NEG_INFINITY)
    } else {
        None
    }
}

fn reduce_with(reduce: Reduce, values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(match reduce {
        Reduce::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        Reduce::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
        Reduce::Mean => values.iter().sum::<f64>() / values.len() as f64,
    })
}

/// The verdict for measured value `m` (and the baseline's value, for `below_baseline`).
pub fn judge(expect: &Expect, tol: f64, m: f64, baseline: Option<f64>) -> Verdict {
    let above_lo = expect.min.is_none_or(|lo| m >= lo * (1.0 - tol));
    let below_hi = expect.max.is_none_or(|hi| m <= hi * (1.0 + tol));
    if above_lo && below_hi {
        return Verdict::Reproduced;
    }
    let direction = match expect.direction {
        Direction::Above(x) => m > x,
        Direction::Below(x) => m < x,
        Direction::BelowBaseline => baseline.is_some_and(|b| m < b),
        Direction::None => false,
    };
    if direction {
        Verdict::DirectionOnly
    } else {
        Verdict::NotReproduced
    }
}

/// A measured value as the claim's kind reads: `12.3x`, `85%`, or the plain number.
pub fn fmt_measured(kind: Kind, value: Option<f64>) -> String {
    match value {
        None => "-".to_string(),
        Some(v) if v.is_infinite() => match kind {
            Kind::Ratio => "inf".to_string(),
            _ => v.to_string(),
        },
        Some(v) => match kind {
            Kind::Ratio => format!("{}x", fmt_ratio(v)),
            Kind::Reduction => format!("{:.0}%", v * 100.0),
            Kind::Value => fmt_num(v),
        },
    }
}

/// A ratio with two significant decimals below 10 (`1.18`, `0.63`, `0.0051`), one below 100
/// (`67.6`), none above (`5,057`); trailing zeros dropped.
fn fmt_ratio(v: f64) -> String {
    if v.abs() >= 100.0 || v == 0.0 {
        return fmt_num(v.round());
    }
    let digits = if v.abs() >= 10.0 {
        1
    } else if v.abs() >= 0.1 {
        2
    } else {
        (1.0 - v.abs().log10().floor()) as usize
    };
    let text = format!("{v:.digits$}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl Evaluation {
    /// Writes the evaluation atomically ([`crate::atomic`]).
    pub fn write_atomic(&self, path: &Path) -> anyhow::Result<()> {
        let mut json = serde_json::to_string_pretty(self)?;
        json.push('\n');
        crate::atomic::write(path, json.as_bytes())
    }

    /// REPORT.md's claims: one table per paper in `papers` (claim, source, the paper's number, the
    /// measured range over its entries, verdict), each followed by the entries in a folded block.
    pub fn markdown(&self, sets: &[ClaimSet], papers: &[String]) -> String {
        let mut md = String::new();
        for set in sets.iter().filter(|s| papers.contains(&s.paper)) {
            let mut groups: Vec<Option<&String>> = vec![None];
            groups.extend(set.groups.keys().map(Some));
            for group in groups {
                let mine: Vec<&Summary> = self
                    .claims
                    .iter()
                    .filter(|s| s.paper_name == set.paper && s.group.as_ref() == group)
                    .collect();
                // Writing into a String cannot fail.
                match group {
                    None => {
                        let _ = writeln!(md, "### {} claims ({})\n", set.paper, self.scale);
                    }
                    Some(_) if mine.is_empty() => continue,
                    Some(g) => {
                        let _ = writeln!(
                            md,
                            "### {}: {g} ({})\n\n{}\n",
                            set.paper, self.scale, set.groups[g]
                        );
                    }
                }
                self.claims_table(&mut md, &mine);
            }
        }
        md
    }

    /// One table of claims, followed by their entries in a folded block.
    fn claims_table(&self, md: &mut String, mine: &[&Summary]) {
        let headers = [
            "claim", "source", "text", "paper", "measured", "verdict", "entries",
        ]
        .map(String::from);
        let body: Vec<Vec<String>> = mine
            .iter()
            .map(|s| {
                let range = match (s.measured_min, s.measured_max) {
                    (Some(lo), Some(hi)) if lo == hi => fmt_measured(s.kind, Some(lo)),
                    (lo, hi) => format!("{} .. {}", fmt_measured(s.kind, lo), fmt_measured(s.kind, hi)),
                };
                let counts = [
                    Verdict::Reproduced,
                    Verdict::DirectionOnly,
                    Verdict::NotReproduced,
                    Verdict::NotMeasured,
                ]
                .iter()
                .filter_map(|v| s.counts.get(v).map(|n| format!("{n} {}", v.as_str())))
                .collect::<Vec<_>>()
                .join(", ");
                vec![
                    s.claim.clone(),
                    s.source.clone(),
                    s.text.clone(),
                    s.paper.clone(),
                    format!("{range} ({})", s.field),
                    format!("**{}**", s.verdict.as_str()),
                    counts,
                ]
            })
            .collect();
        *md += &markdown_table(&headers, &body);
        *md += "\n<details><summary>Every entry (claim x group x variant)</summary>\n\n";
        let headers = [
            "claim",
            "group",
            "measured",
            "verdict",
            "counted I/O view",
            "note",
        ]
        .map(String::from);
        let body: Vec<Vec<String>> = self
            .entries
            .iter()
            .filter(|e| mine.iter().any(|s| s.claim == e.claim))
            .map(|e| {
                let kind = mine
                    .iter()
                    .find(|s| s.claim == e.claim)
                    .map_or(Kind::Value, |s| s.kind);
                let secondary = e.secondary.as_ref().map_or(String::new(), |s| {
                    format!(
                        "{} ({}): {}",
                        fmt_measured(kind, s.measured),
                        s.field,
                        s.verdict.as_str()
                    )
                });
                vec![
                    e.claim.clone(),
                    e.group.clone(),
                    fmt_measured(kind, e.measured),
                    e.verdict.as_str().to_string(),
                    secondary,
                    e.note.clone().unwrap_or_default(),
                ]
            })
            .collect();
        // The note column only when some entry has a note.
        let (headers, body): (Vec<String>, Vec<Vec<String>>) = if body.iter().all(|l| l[5].is_empty()) {
            let trimmed = body.into_iter().map(|l| l[..5].to_vec()).collect();
            (headers[..5].to_vec(), trimmed)
        } else {
            (headers.to_vec(), body)
        };
        *md += &markdown_table(&headers, &body);
        *md += "\n</details>\n\n";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::RowBuilder;

    fn row(dataset: &str, strategy: &str, sel: f64, ms: f64, io: u64) -> Row {
        RowBuilder::new()
            .str("dataset", dataset)
            .str("strategy", strategy)
            .num("selectivity", sel)
            .num("ms", ms)
            .int("reads", io)
            .int("writes", 1u64)
            .build()
    }

    fn result(experiment: &str, rows: Vec<Row>) -> ResultFile {
        let mut r = crate::testing::sample_result();
        r.experiment = experiment.to_string();
        r.rows = rows;
        r
    }

    /// A claim set from the JSON of its claims (tolerance 0.25).
    fn set(claims: &str) -> ClaimSet {
        parse(
            "test.json",
            &format!(r#"{{"paper": "P", "doc": "d", "tolerance": 0.25, "claims": [{claims}]}}"#),
        )
        .unwrap()
    }

    const FASTER: &str = r#"{"id": "c1", "source": "Fig. 1", "text": "t", "paper": "4x-8x", "experiment": "e",
        "measure": {"kind": "ratio", "field": "ms", "variants": ["A", "B", "C", "D"], "baselines": ["Base"],
                    "group_by": ["dataset"], "filter": {"selectivity": ["0.5"]}},
        "secondary": "reads+writes",
        "expect": {"min": 4.0, "max": 8.0, "direction": {"above": 1.0}}}"#;

    fn rows_for_faster() -> Vec<Row> {
        let mut rows = Vec::new();
        for d in ["x", "y"] {
            rows.push(row(d, "Base", 0.5, 100.0, 99));
            rows.push(row(d, "A", 0.5, 20.0, 4)); // 5x: reproduced
            rows.push(row(d, "B", 0.5, 50.0, 49)); // 2x: right direction only
            rows.push(row(d, "C", 0.5, 200.0, 199)); // 0.5x: wrong direction
            rows.push(row(d, "A", 0.1, 1.0, 1)); // filtered out
        }
        rows
    }

    #[test]
    fn a_claim_half_of_whose_entries_point_the_wrong_way_is_not_reproduced() {
        let verdict_of = |variants: &str| {
            let claims = FASTER.replace(r#"["A", "B", "C", "D"]"#, variants);
            let eval = evaluate(&[set(&claims)], &[result("e", rows_for_faster())], Scale::Tiny);
            eval.claims[0].verdict
        };
        // B is on the paper's side but outside its range, C on the wrong side: a tie is no majority.
        assert_eq!(verdict_of(r#"["B", "C"]"#), Verdict::NotReproduced);
        // Two of four reproduced is no majority either; all four are at least direction-only.
        assert_eq!(verdict_of(r#"["A", "B"]"#), Verdict::DirectionOnly);
        assert_eq!(verdict_of(r#"["A"]"#), Verdict::Reproduced);
    }

    #[test]
    fn every_verdict_is_reachable_and_every_variant_is_judged_per_group() {
        let eval = evaluate(&[set(FASTER)], &[result("e", rows_for_faster())], Scale::Tiny);
        assert_eq!(eval.entries.len(), 8, "2 datasets x 4 variants");
        let verdict = |group: &str| {
            let e = eval.entries.iter().find(|e| e.group == group).unwrap();
            (e.verdict, e.measured)
        };
        assert_eq!(verdict("dataset=x, A vs Base"), (Verdict::Reproduced, Some(5.0)));
        assert_eq!(
            verdict("dataset=y, B vs Base"),
            (Verdict::DirectionOnly, Some(2.0))
        );
        assert_eq!(
            verdict("dataset=x, C vs Base"),
            (Verdict::NotReproduced, Some(0.5))
        );
        assert_eq!(verdict("dataset=y, D vs Base"), (Verdict::NotMeasured, None));
        let d = eval
            .entries
            .iter()
            .find(|e| e.group == "dataset=y, D vs Base")
            .unwrap();
        assert!(
            d.note.as_deref().unwrap().contains("no rows for strategy D"),
            "{d:?}"
        );
        // The secondary (counted) view: (99 + 1) / (4 + 1) = 20x, above the range (8 x 1.25 = 10).
        let a = eval
            .entries
            .iter()
            .find(|e| e.group == "dataset=x, A vs Base")
            .unwrap();
        let s = a.secondary.as_ref().unwrap();
        assert_eq!((s.measured, s.verdict), (Some(20.0), Verdict::DirectionOnly));
        // Summary: 2 R, 2 D, 2 N measured -> the best verdict a majority (4) reach is direction-only.
        let c = &eval.claims[0];
        assert_eq!(c.verdict, Verdict::DirectionOnly);
        assert_eq!((c.measured_min, c.measured_max), (Some(0.5), Some(5.0)));
        assert_eq!(c.counts[&Verdict::NotMeasured], 2);
    }

    #[test]
    fn a_missing_experiment_or_filtered_value_is_not_measured() {
        let eval = evaluate(&[set(FASTER)], &[result("other", rows_for_faster())], Scale::Tiny);
        assert_eq!(eval.entries.len(), 4, "one per variant");
        assert!(eval.entries.iter().all(|e| e.verdict == Verdict::NotMeasured));
        assert!(eval.entries[0].note.as_deref().unwrap().contains("no e result"));
        assert_eq!(eval.claims[0].verdict, Verdict::NotMeasured);

        let only_x = set(&FASTER.replace(
            r#""filter": {"selectivity": ["0.5"]}"#,
            r#""filter": {"selectivity": ["0.5"], "dataset": ["x", "z"]}"#,
        ));
        let eval = evaluate(&[only_x], &[result("e", rows_for_faster())], Scale::Tiny);
        let z: Vec<&Entry> = eval.entries.iter().filter(|e| e.dims["dataset"] == "z").collect();
        assert_eq!(z.len(), 4);
        assert!(z.iter().all(|e| e.verdict == Verdict::NotMeasured));
        assert!(eval.entries.iter().all(|e| e.dims["dataset"] != "y"));
    }

    #[test]
    fn reductions_over_cells_and_the_largest_value_filter() {
        let up_to = r#"{"id": "c2", "source": "Fig. 2", "text": "t", "paper": "up to 10x", "experiment": "e",
            "measure": {"kind": "ratio", "field": "ms", "variants": ["A"], "baselines": ["Base"],
                        "over": ["dataset", "selectivity"], "reduce": "max"},
            "expect": {"min": 10.0, "direction": {"above": 1.0}}}"#;
        let largest = r#"{"id": "c3", "source": "Fig. 2", "text": "t", "paper": "slower", "experiment": "e",
            "measure": {"kind": "ratio", "ratio": "variant/baseline", "field": "ms", "variants": ["C"],
                        "baselines": ["Base"], "group_by": ["selectivity"], "filter": {"selectivity": ["$max"]}},
            "tolerance": 0.0, "expect": {"min": 1.0, "direction": {"above": 1.0}}}"#;
        let mut rows = rows_for_faster();
        rows.push(row("x", "Base", 0.1, 50.0, 1));
        let eval = evaluate(
            &[set(&format!("{up_to}, {largest}"))],
            &[result("e", rows)],
            Scale::Tiny,
        );
        let c2: Vec<&Entry> = eval.entries.iter().filter(|e| e.claim == "c2").collect();
        assert_eq!(c2.len(), 1);
        // Cells: x/0.5 = 5, y/0.5 = 5, x/0.1 = 50 (y/0.1 has no baseline): the largest is 50.
        assert_eq!((c2[0].measured, c2[0].verdict), (Some(50.0), Verdict::Reproduced));
        let c3: Vec<&Entry> = eval.entries.iter().filter(|e| e.claim == "c3").collect();
        assert_eq!(c3.len(), 1);
        assert_eq!(c3[0].dims["selectivity"], "0.5");
        assert_eq!((c3[0].measured, c3[0].verdict), (Some(2.0), Verdict::Reproduced));
    }

    #[test]
    fn counts_reductions_and_zero_denominators() {
        let claims = r#"
            {"id": "none", "source": "Table 1", "text": "t", "paper": "0", "experiment": "e",
             "measure": {"kind": "value", "field": "ms", "variants": ["A", "B", "C"], "baselines": ["Base"],
                         "group_by": ["dataset"], "filter": {"dataset": ["x"]}},
             "expect": {"min": 0.0, "max": 0.0, "direction": "below_baseline"}},
            {"id": "cut", "source": "Table 2", "text": "t", "paper": "up to 90%", "experiment": "e",
             "measure": {"kind": "reduction", "field": "ms", "variants": ["A", "B"], "baselines": ["Base"],
                         "group_by": ["dataset"], "filter": {"dataset": ["x"]}},
             "expect": {"min": 0.9, "direction": {"above": 0.0}}},
            {"id": "inf", "source": "Fig. 5", "text": "t", "paper": "60x", "experiment": "e",
             "measure": {"kind": "ratio", "field": "ms", "variants": ["A", "Z"], "baselines": ["Base"],
                         "group_by": ["dataset"], "filter": {"dataset": ["x"]}},
             "expect": {"min": 60.0, "direction": {"above": 1.0}}}"#;
        let rows = vec![
            row("x", "Base", 0.5, 100.0, 1),
            row("x", "A", 0.5, 0.0, 1),
            row("x", "B", 0.5, 40.0, 1),
            row("x", "C", 0.5, 300.0, 1),
            row("x", "Z", 0.5, 0.0, 1),
        ];
        let mut base_zero = rows.clone();
        base_zero[0] = row("x", "Base", 0.5, 0.0, 1);
        let eval = evaluate(&[set(claims)], &[result("e", rows)], Scale::Tiny);
        let get = |claim: &str, v: &str| {
            let e = eval
                .entries
                .iter()
                .find(|e| e.claim == claim && e.dims["strategy"] == v)
                .unwrap();
            (e.measured, e.verdict)
        };
        assert_eq!(get("none", "A"), (Some(0.0), Verdict::Reproduced));
        assert_eq!(get("none", "B"), (Some(40.0), Verdict::DirectionOnly));
        assert_eq!(get("none", "C"), (Some(300.0), Verdict::NotReproduced));
        assert_eq!(get("cut", "A"), (Some(1.0), Verdict::Reproduced));
        assert_eq!(get("cut", "B"), (Some(0.6), Verdict::DirectionOnly));
        assert_eq!(get("inf", "A"), (Some(f64::INFINITY), Verdict::Reproduced));
        let json = serde_json::to_value(&eval).unwrap();
        assert!(json["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["measured"] == "inf"));

        // 0 / 0 is undefined: not measured, with a note.
        let eval = evaluate(&[set(claims)], &[result("e", base_zero)], Scale::Tiny);
        let e = eval
            .entries
            .iter()
            .find(|e| e.claim == "inf" && e.dims["strategy"] == "A")
            .unwrap();
        assert_eq!((e.measured, e.verdict), (None, Verdict::NotMeasured));
        assert!(e.note.as_deref().unwrap().contains("0 / 0"));
    }

    #[test]
    fn judging_follows_the_documented_tolerance() {
        let about = Expect {
            min: Some(3.0),
            max: Some(3.0),
            direction: Direction::Above(1.0),
        };
        assert_eq!(judge(&about, 0.25, 2.25, None), Verdict::Reproduced);
        assert_eq!(judge(&about, 0.25, 3.75, None), Verdict::Reproduced);
        assert_eq!(judge(&about, 0.25, 2.2, None), Verdict::DirectionOnly);
        assert_eq!(judge(&about, 0.25, 3.8, None), Verdict::DirectionOnly);
        assert_eq!(judge(&about, 0.25, 1.0, None), Verdict::NotReproduced);
        let same = Expect {
            min: Some(1.0),
            max: Some(1.0),
            direction: Direction::None,
        };
        assert_eq!(judge(&same, 0.0, 1.0, None), Verdict::Reproduced);
        assert_eq!(judge(&same, 0.0, 1.1, None), Verdict::NotReproduced);
    }

    #[test]
    fn bad_claim_files_are_refused_with_the_claim_named() {
        let no_baseline = FASTER.replace(r#""baselines": ["Base"],"#, "");
        let text = format!(r#"{{"paper": "P", "doc": "d", "tolerance": 0.25, "claims": [{no_baseline}]}}"#);
        let err = format!("{:#}", parse("bad.json", &text).unwrap_err());
        assert!(
            err.contains("bad.json") && err.contains("c1") && err.contains("baselines"),
            "{err}"
        );
        let twice =
            format!(r#"{{"paper": "P", "doc": "d", "tolerance": 0.25, "claims": [{FASTER}, {FASTER}]}}"#);
        assert!(format!("{:#}", parse("t.json", &twice).unwrap_err()).contains("twice"));
        let typo = FASTER.replace("\"field\"", "\"feild\"");
        let text = format!(r#"{{"paper": "P", "doc": "d", "tolerance": 0.25, "claims": [{typo}]}}"#);
        assert!(parse("typo.json", &text).is_err());
    }

    #[test]
    fn ratios_read_short() {
        let r = |v| fmt_measured(Kind::Ratio, Some(v));
        assert_eq!(
            [
                r(9.0),
                r(1.1785),
                r(0.6316),
                r(67.56),
                r(5056.87),
                r(0.000348),
                r(f64::INFINITY)
            ],
            ["9x", "1.18x", "0.63x", "67.6x", "5,057x", "0.00035x", "inf"]
        );
        assert_eq!(fmt_measured(Kind::Reduction, Some(0.9535)), "95%");
        assert_eq!(fmt_measured(Kind::Value, None), "-");
    }

    #[test]
    fn markdown_shows_one_table_per_paper_with_results() {
        let sets = [set(FASTER)];
        let eval = evaluate(&sets, &[result("e", rows_for_faster())], Scale::Tiny);
        let md = eval.markdown(&sets, &["P".to_string()]);
        assert!(md.contains("### P claims (tiny)"), "{md}");
        assert!(
            md.contains("| c1") && md.contains("**direction-only**") && md.contains("0.5x .. 5x"),
            "{md}"
        );
        assert!(md.contains("dataset=x, A vs Base") && md.contains("20x (reads+writes): direction-only"));
        assert!(eval.markdown(&sets, &["Other".to_string()]).is_empty());
    }

    #[test]
    fn a_claim_group_gets_its_own_table_after_the_papers_claims() {
        let grouped = FASTER.replace(r#""id": "c1""#, r#""id": "g1", "group": "pairing""#);
        let file = |groups: &str| {
            format!(
                r#"{{"paper": "P", "doc": "d", "tolerance": 0.25, "groups": {groups}, "claims": [{FASTER}, {grouped}]}}"#
            )
        };
        let set = parse("test.json", &file(r#"{"pairing": "why the pairing exists"}"#)).unwrap();
        let sets = [set];
        let eval = evaluate(&sets, &[result("e", rows_for_faster())], Scale::Tiny);
        assert_eq!(eval.claims[1].group.as_deref(), Some("pairing"));
        let md = eval.markdown(&sets, &["P".to_string()]);
        let (paper, group) = md
            .split_once("### P: pairing (tiny)")
            .expect("a table for the group");
        assert!(
            group.contains("why the pairing exists") && group.contains("| g1"),
            "{md}"
        );
        assert!(
            paper.contains("| c1") && !paper.contains("| g1") && !group.contains("| c1"),
            "{md}"
        );
        let e = parse("test.json", &file("{}")).unwrap_err();
        assert!(format!("{e:#}").contains("group `pairing`"), "{e:#}");
    }
}
