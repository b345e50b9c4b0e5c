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
//! Every claim states what the paper's words mean as data: the paper's words (`quote`), the
//! [`Unit`] the comparison is made in, the [`Form`] of the paper's number, the number itself
//! (`value`, or `lo` and `hi` for a range), the relative tolerance (the claim's, else the file's)
//! and the paper's side ([`Direction`], in the same unit).
//!
//! Measurements, converted into the claim's unit:
//! - `ratio`: baseline / variant (`"ratio": "baseline/variant"`, the default: how many times faster or
//!   smaller the variant is) or variant / baseline; x / 0 with x > 0 is infinite, 0 / 0 is undefined.
//!   In unit `x` the ratio itself; in unit `%` the change `100 (ratio - 1)`.
//! - `reduction`: `1 - variant / baseline`, undefined when the baseline is 0; only in unit `%`, as
//!   the change of the variant against the baseline, `100 (variant / baseline - 1)`, so a cut is
//!   negative, as papers write it ("-2.9%").
//! - `value`: the variant's field itself, taken to be in the claim's unit; the baseline only serves
//!   the direction `below_baseline`.
//!
//! The band of a claim, with `t` its tolerance: an edge `e` widens outwards by `|e| t` (for a positive
//! `e`, the lower edge `e (1 - t)` and the upper `e (1 + t)`):
//! - `about x`: `[x (1 - t), x (1 + t)]`, two-sided: a value far beyond "about x" is not reproduced.
//! - `range lo..hi`: `[lo (1 - t), hi (1 + t)]`.
//! - `at_least x`: `m >= x (1 - t)`, no upper bound; `at_most x`: `m <= x (1 + t)`, no lower bound.
//! - `up_to x`: "up to" names the paper's best case, so the band is `[x (1 - t), x beyond]`
//!   (`beyond` defaults to `1 + t`, so the band is `about x`'s: a best case measured far above
//!   the paper's is not its best case reproduced) and it applies to the claim's extreme entry.
//! - `direction`: no band; only the side counts.
//!
//! A negative `x` (a cut in `%`) mirrors `at_least`, `at_most` and `up_to`: "at least" then means at
//! least as large a cut, and the extreme entry of `up_to` is the smallest.
//!
//! Verdict of one entry (one claim, group, variant and baseline) with measurement `m`:
//! - `reproduced`: `m` lies inside the band (for `direction`, on the paper's side).
//! - `direction-only`: outside the band, but on the paper's side: `above: x` means `m > x`,
//!   `below: x` means `m < x`, `below_baseline` means the variant's value is below the baseline's,
//!   `none` means a claim that has no side (it is reproduced or not).
//! - `not-reproduced`: neither.
//! - `not-measured`: the experiment, a variant, a baseline, a filtered group value or a field is
//!   missing from the results, or the measurement is undefined (0 / 0).
//!
//! A claim's summary verdict is `not-measured` when no entry was measured. Otherwise it is
//! `reproduced` when every measured entry is (for `up_to`: when the extreme entry lies in the band
//! and no entry lies beyond it or on the wrong side), else `direction-only` when more than half of
//! the measured entries lie on the paper's side, else `not-reproduced`: a claim half of whose entries
//! point the wrong way is not reproduced. A claim that is not reproduced carries a `why` in its file,
//! one sentence on what differs from the paper's setting. Claims about time use wall time; where the
//! rows count I/O, `secondary` names that field and the entry carries the same measurement, in the
//! same unit and under the same rule, beside the primary one (it does not change the verdict).

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
pub const SCHEMA: &str = "lsmlab.claims/2";

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
    /// The claim as lsmlab reads it: what is compared, on which rows.
    pub text: String,
    /// The paper's own words the number comes from.
    pub quote: String,
    /// The experiment (registry name) whose rows measure the claim.
    pub experiment: String,
    /// How the claim is measured from the experiment's rows.
    pub measure: Measure,
    /// A second field measured the same way, usually counted I/O beside a wall-time claim.
    #[serde(default)]
    pub secondary: Option<String>,
    /// The form of the paper's number (see the module doc).
    pub form: Form,
    /// The unit the paper's number and the measurement are compared in.
    pub unit: Unit,
    /// The paper's number, for every form but `range` and `direction`.
    #[serde(default)]
    pub value: Option<f64>,
    /// The lower end of a `range`.
    #[serde(default)]
    pub lo: Option<f64>,
    /// The upper end of a `range`.
    #[serde(default)]
    pub hi: Option<f64>,
    /// For `up_to`: how many times the paper's number the extreme entry may reach
    /// (`1 + t`, the claim's tolerance, when absent).
    #[serde(default)]
    pub beyond: Option<f64>,
    /// The paper's side, in the claim's unit.
    pub direction: Direction,
    /// Relative tolerance of this claim, overriding the file's [`ClaimSet::tolerance`].
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// One sentence on what differs from the paper's setting, for a claim that is not reproduced.
    #[serde(default)]
    pub why: Option<String>,
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

/// The form of a paper's number: what "reproduced" means for it (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// "About x": a two-sided band around `value`.
    About,
    /// "lo to hi": the band from `lo` to `hi`.
    Range,
    /// "At least x" (or "x times" read as a floor): `value` is a lower bound only.
    AtLeast,
    /// "At most x": `value` is an upper bound only.
    AtMost,
    /// "Up to x": the paper's best case; the claim's extreme entry must reach it, and not exceed
    /// `beyond` times it.
    UpTo,
    /// No number: only the side counts.
    Direction,
}

impl Form {
    /// The form as claims files write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Form::About => "about",
            Form::Range => "range",
            Form::AtLeast => "at_least",
            Form::AtMost => "at_most",
            Form::UpTo => "up_to",
            Form::Direction => "direction",
        }
    }
}

/// The unit a claim is compared and printed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum Unit {
    /// A ratio, printed `3.2x`.
    #[serde(rename = "x")]
    Times,
    /// A change in percent of the baseline (or a field already in percent), printed `-2.9%`.
    #[serde(rename = "%")]
    Percent,
    /// A count.
    #[serde(rename = "count")]
    Count,
    /// Milliseconds.
    #[serde(rename = "ms")]
    Ms,
    /// Pages.
    #[serde(rename = "pages")]
    Pages,
    /// A fraction (a share between 0 and 1).
    #[serde(rename = "fraction")]
    Fraction,
}

/// The side of a measurement the paper's claim points to, in the claim's unit.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The measurement is above this value.
    Above(f64),
    /// The measurement is below this value.
    Below(f64),
    /// The variant's value is below the baseline's.
    BelowBaseline,
    /// The claim has no side: it is reproduced or not.
    None,
}

impl Direction {
    /// Whether `m` (and the baseline's value, for `below_baseline`) lies on this side.
    pub fn holds(self, m: f64, baseline: Option<f64>) -> bool {
        match self {
            Direction::Above(x) => m > x,
            Direction::Below(x) => m < x,
            Direction::BelowBaseline => baseline.is_some_and(|b| m < b),
            Direction::None => false,
        }
    }
}

/// The values a claim counts as reproduced, in its unit; an absent edge is unbounded.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Band {
    /// The lowest value inside the band, if bounded below.
    pub lo: Option<f64>,
    /// The highest value inside the band, if bounded above.
    pub hi: Option<f64>,
}

impl Band {
    /// Whether `m` lies inside the band (edges included).
    pub fn contains(&self, m: f64) -> bool {
        self.lo.is_none_or(|lo| m >= lo) && self.hi.is_none_or(|hi| m <= hi)
    }
}

impl Claim {
    /// The claim's band at tolerance `tol` (see the module doc); none for [`Form::Direction`] or a
    /// claim missing its number (which [`parse`] refuses).
    pub fn band(&self, tol: f64) -> Option<Band> {
        let down = |e: f64| e - e.abs() * tol;
        let up = |e: f64| e + e.abs() * tol;
        let x = self.value;
        let band = |lo, hi| Some(Band { lo, hi });
        match self.form {
            Form::Direction => None,
            Form::Range => band(Some(down(self.lo?)), Some(up(self.hi?))),
            Form::About => band(Some(down(x?)), Some(up(x?))),
            Form::AtLeast if x? >= 0.0 => band(Some(down(x?)), None),
            Form::AtLeast => band(None, Some(up(x?))),
            Form::AtMost if x? >= 0.0 => band(None, Some(up(x?))),
            Form::AtMost => band(Some(down(x?)), None),
            Form::UpTo => {
                let cap = x? * self.beyond.unwrap_or(1.0 + tol);
                if x? >= 0.0 {
                    band(Some(down(x?)), Some(cap))
                } else {
                    band(Some(cap), Some(up(x?)))
                }
            }
        }
    }

    /// Whether the extreme entry of an `up_to` claim is the smallest (a negative number: a cut).
    fn extreme_is_min(&self) -> bool {
        self.value.is_some_and(|x| x < 0.0)
    }

    /// The paper's number as the claim's form and unit state it, e.g. `3x .. 9.6x`, `about -2.9%`
    /// (`exactly 0` when the tolerance `tol` is 0).
    pub fn paper_text(&self, tol: f64) -> String {
        let f = |v: Option<f64>| fmt_in(self.unit, v);
        match self.form {
            Form::About if tol == 0.0 => format!("exactly {}", f(self.value)),
            Form::About => format!("about {}", f(self.value)),
            Form::Range => format!("{} .. {}", f(self.lo), f(self.hi)),
            Form::AtLeast => format!("at least {}", f(self.value)),
            Form::AtMost => format!("at most {}", f(self.value)),
            Form::UpTo => format!("up to {}", f(self.value)),
            Form::Direction => match self.direction {
                Direction::Above(x) => format!("above {}", f(Some(x))),
                Direction::Below(x) => format!("below {}", f(Some(x))),
                Direction::BelowBaseline => "below the baseline".to_string(),
                Direction::None => "-".to_string(),
            },
        }
    }
}

/// A band as text in `unit`: `2.25x .. 12x`, `>= 1.05x`, `<= 5.85%`; `-` for none.
pub fn band_text(unit: Unit, band: Option<&Band>) -> String {
    let f = |v: f64| fmt_in(unit, Some(v));
    match band {
        None => "-".to_string(),
        Some(Band {
            lo: Some(lo),
            hi: Some(hi),
        }) if lo == hi => f(*lo),
        Some(Band {
            lo: Some(lo),
            hi: Some(hi),
        }) => format!("{} .. {}", f(*lo), f(*hi)),
        Some(Band {
            lo: Some(lo),
            hi: None,
        }) => format!(">= {}", f(*lo)),
        Some(Band {
            lo: None,
            hi: Some(hi),
        }) => format!("<= {}", f(*hi)),
        Some(Band { lo: None, hi: None }) => "any".to_string(),
    }
}

/// The outcome for one entry or one claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Nothing to judge: the data is missing or the measurement undefined.
    NotMeasured,
    /// Measured, and neither within the band nor on the paper's side.
    NotReproduced,
    /// Outside the band, but on the paper's side.
    DirectionOnly,
    /// Within the band (with tolerance).
    Reproduced,
}

impl Verdict {
    /// Every verdict, best first.
    pub const ALL: [Verdict; 4] = [
        Verdict::Reproduced,
        Verdict::DirectionOnly,
        Verdict::NotReproduced,
        Verdict::NotMeasured,
    ];

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
        if c.direction == Direction::BelowBaseline && (m.baselines.is_empty() || m.kind != Kind::Value) {
            return Err(fail(
                "direction below_baseline needs a value measured against baselines",
            ));
        }
        if !m.over.is_empty() && m.reduce.is_none() {
            return Err(fail("`over` needs `reduce`"));
        }
        match (m.kind, c.unit) {
            (Kind::Ratio, Unit::Times | Unit::Percent)
            | (Kind::Reduction, Unit::Percent)
            | (Kind::Value, _) => {}
            (kind, _) => {
                return Err(fail(&format!(
                    "a {kind:?} is compared in unit `x` or `%` (a reduction only in `%`)"
                )))
            }
        }
        let numbers = (c.value.is_some(), c.lo.is_some() || c.hi.is_some());
        match c.form {
            Form::Range => {
                let (Some(lo), Some(hi)) = (c.lo, c.hi) else {
                    return Err(fail("a range needs `lo` and `hi`"));
                };
                if lo > hi {
                    return Err(fail("`lo` is above `hi`"));
                }
                if numbers.0 {
                    return Err(fail("a range takes `lo` and `hi`, not `value`"));
                }
            }
            Form::Direction => {
                if numbers != (false, false) {
                    return Err(fail("a direction claim takes no number"));
                }
                if c.direction == Direction::None {
                    return Err(fail("a direction claim needs a direction"));
                }
            }
            _ => {
                if numbers != (true, false) {
                    return Err(fail(&format!("form {} takes `value` only", c.form.as_str())));
                }
            }
        }
        if c.beyond.is_some() && c.form != Form::UpTo {
            return Err(fail("`beyond` applies to up_to only"));
        }
        if c.beyond.is_some_and(|b| b.is_nan() || b <= 1.0) {
            return Err(fail("`beyond` must be above 1"));
        }
        if [c.value, c.lo, c.hi].iter().flatten().any(|v| !v.is_finite()) {
            return Err(fail("the paper's number must be finite"));
        }
        if c.quote.trim().is_empty() {
            return Err(fail("empty quote"));
        }
        if c.why.as_ref().is_some_and(|w| w.trim().is_empty()) {
            return Err(fail("empty why"));
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
    /// The measurement in the claim's unit: finite, infinite (x / 0) or none when undefined or
    /// missing.
    #[serde(serialize_with = "ser_measured")]
    pub measured: Option<f64>,
    /// The claim's unit.
    pub unit: Unit,
    /// The paper's number in the claim's unit ([`Claim::paper_text`]).
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

/// The second measurement of an entry (counted I/O beside wall time), in the claim's unit.
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
    /// The paper's words ([`Claim::quote`]).
    pub quote: String,
    /// The experiment that measures it.
    pub experiment: String,
    /// The kind of measurement.
    pub kind: Kind,
    /// The measured field (or `+`-joined fields).
    pub field: String,
    /// The form of the paper's number.
    pub form: Form,
    /// The unit of the paper's number, the band and every measurement.
    pub unit: Unit,
    /// The tolerance the band was widened by.
    pub tolerance: f64,
    /// The paper's number in the claim's unit ([`Claim::paper_text`]).
    pub paper: String,
    /// The band a reproduced entry lies in (none for a direction claim).
    pub band: Option<Band>,
    /// The paper's side.
    pub direction: Direction,
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
    /// Where the measured entries lie against the band and the side, in words.
    pub condition: String,
    /// What differs from the paper's setting ([`Claim::why`]), if the file says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
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
pub const RULES: &str = "Every claim states its form, its unit and its tolerance t; paper value, band and \
measurements are in that unit (x: a ratio; %: the change against the baseline, negative for a cut). \
Bands: about x is [x(1-t), x(1+t)]; range lo..hi is [lo(1-t), hi(1+t)]; at_least x is m >= x(1-t); \
at_most x is m <= x(1+t); up_to x is [x(1-t), x*beyond] (beyond 1+t unless stated), applied to the \
claim's extreme entry; direction has no band (edges widen away from zero, so negative numbers mirror). \
Per entry (claim x group x variant x baseline): reproduced inside the band (a direction claim: on the \
paper's side); direction-only outside it but on the paper's side; not-reproduced otherwise; not-measured \
when the experiment, a variant, a baseline, a group value or a field is missing, or the measurement is \
undefined (0/0). Per claim: not-measured when nothing was measured; reproduced when every measured entry \
is (up_to: the extreme entry is inside the band and none beyond it or on the wrong side); else \
direction-only when more than half of the measured entries are on the paper's side; else not-reproduced.";

/// Judges every claim of `sets` against `results` (the result files of one scale).
pub fn evaluate(sets: &[ClaimSet], results: &[ResultFile], scale: Scale) -> Evaluation {
    let mut claims = Vec::new();
    let mut entries = Vec::new();
    for set in sets {
        for claim in &set.claims {
            let result = results.iter().find(|r| r.experiment == claim.experiment);
            let tol = claim.tolerance.unwrap_or(set.tolerance);
            let mine = evaluate_claim(claim, result, tol);
            claims.push(summarise(set, claim, tol, &mine));
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

/// The summary verdict of a claim over its entries (see the module doc).
pub fn summary_verdict(claim: &Claim, tol: f64, entries: &[Entry]) -> Verdict {
    let measured: Vec<(f64, Verdict)> = entries
        .iter()
        .filter(|e| e.verdict != Verdict::NotMeasured)
        .filter_map(|e| Some((e.measured?, e.verdict)))
        .collect();
    if measured.is_empty() {
        return Verdict::NotMeasured;
    }
    let n = measured.len();
    let on_side = measured
        .iter()
        .filter(|(_, v)| *v >= Verdict::DirectionOnly)
        .count();
    let reproduced = match (claim.form, claim.band(tol)) {
        (Form::UpTo, Some(band)) => {
            let values = measured.iter().map(|(m, _)| *m);
            let extreme = if claim.extreme_is_min() {
                values.fold(f64::INFINITY, f64::min)
            } else {
                values.fold(f64::NEG_INFINITY, f64::max)
            };
            let beyond = |m: f64| {
                if claim.extreme_is_min() {
                    band.lo.is_some_and(|lo| m < lo)
                } else {
                    band.hi.is_some_and(|hi| m > hi)
                }
            };
            band.contains(extreme)
                && measured
                    .iter()
                    .all(|(m, v)| *v >= Verdict::DirectionOnly && !beyond(*m))
        }
        _ => measured.iter().all(|(_, v)| *v == Verdict::Reproduced),
    };
    if reproduced {
        Verdict::Reproduced
    } else if 2 * on_side > n {
        Verdict::DirectionOnly
    } else {
        Verdict::NotReproduced
    }
}

/// Where the measured entries lie, in words: `2 of 12 in band, 9 below; 1 on the wrong side`.
fn condition(claim: &Claim, tol: f64, entries: &[Entry]) -> String {
    let measured: Vec<(f64, Verdict)> = entries
        .iter()
        .filter(|e| e.verdict != Verdict::NotMeasured)
        .filter_map(|e| Some((e.measured?, e.verdict)))
        .collect();
    let missing = entries.len() - measured.len();
    let n = measured.len();
    let mut parts: Vec<String> = Vec::new();
    match claim.band(tol) {
        _ if n == 0 => {}
        None => {
            let side = measured.iter().filter(|(_, v)| *v == Verdict::Reproduced).count();
            parts.push(format!("{side} of {n} on the paper's side"));
        }
        Some(band) => {
            let inside = measured.iter().filter(|(m, _)| band.contains(*m)).count();
            let above = measured
                .iter()
                .filter(|(m, _)| band.hi.is_some_and(|hi| *m > hi))
                .count();
            let below = n - inside - above;
            let mut text = format!("{inside} of {n} in band");
            if above > 0 {
                let _ = write!(text, ", {above} above");
            }
            if below > 0 {
                let _ = write!(text, ", {below} below");
            }
            parts.push(text);
            let wrong = measured
                .iter()
                .filter(|(_, v)| *v == Verdict::NotReproduced)
                .count();
            if wrong > 0 && claim.direction != Direction::None {
                parts.push(format!("{wrong} on the wrong side"));
            }
        }
    }
    if missing > 0 {
        parts.push(format!("{missing} not measured"));
    }
    parts.join("; ")
}

fn summarise(set: &ClaimSet, claim: &Claim, tol: f64, entries: &[Entry]) -> Summary {
    let values = entries
        .iter()
        .filter(|e| e.verdict != Verdict::NotMeasured)
        .filter_map(|e| e.measured);
    let mut counts = BTreeMap::new();
    for e in entries {
        *counts.entry(e.verdict).or_insert(0) += 1;
    }
    Summary {
        claim: claim.id.clone(),
        paper_name: set.paper.clone(),
        source: claim.source.clone(),
        text: claim.text.clone(),
        quote: claim.quote.clone(),
        experiment: claim.experiment.clone(),
        kind: claim.measure.kind,
        field: claim.measure.field.clone(),
        form: claim.form,
        unit: claim.unit,
        tolerance: tol,
        paper: claim.paper_text(tol),
        band: claim.band(tol),
        direction: claim.direction,
        measured_min: values.clone().reduce(f64::min),
        measured_max: values.reduce(f64::max),
        verdict: summary_verdict(claim, tol, entries),
        counts,
        condition: condition(claim, tol, entries),
        why: claim.why.clone(),
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
        unit: claim.unit,
        paper: claim.paper_text(tol),
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
                            let value = value.map(|v| in_unit(m.kind, claim.unit, v));
                            e.measured = value;
                            e.verdict = match value {
                                Some(x) => judge(claim, tol, x, base),
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
                            Ok((Some(x), base)) => {
                                let x = in_unit(m.kind, claim.unit, x);
                                (Some(x), judge(claim, tol, x, base))
                            }
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

/// A measurement of `kind` in the claim's `unit` (see the module doc): a ratio as is (`x`) or as a
/// change `100 (ratio - 1)` (`%`); a reduction `r` as the change `-100 r`; a value as is.
pub fn in_unit(kind: Kind, unit: Unit, raw: f64) -> f64 {
    match (kind, unit) {
        (Kind::Ratio, Unit::Percent) => 100.0 * (raw - 1.0),
        (Kind::Reduction, _) => -100.0 * raw,
        _ => raw,
    }
}

/// The verdict of one entry of `claim` at tolerance `tol`, for measurement `m` in the claim's unit
/// (and the baseline's value, for `below_baseline`).
pub fn judge(claim: &Claim, tol: f64, m: f64, baseline: Option<f64>) -> Verdict {
    let on_side = claim.direction.holds(m, baseline);
    match claim.band(tol) {
        Some(band) if band.contains(m) => Verdict::Reproduced,
        None if on_side => Verdict::Reproduced,
        Some(_) if on_side => Verdict::DirectionOnly,
        _ => Verdict::NotReproduced,
    }
}

/// A number in `unit`: `12.3x`, `-2.9%`, `+10.4%`, `21 ms`, `2 pages`, or the plain number; `-` when
/// absent.
pub fn fmt_in(unit: Unit, value: Option<f64>) -> String {
    let Some(v) = value else {
        return "-".to_string();
    };
    if v.is_infinite() {
        let text = if v > 0.0 { "inf" } else { "-inf" };
        return match unit {
            Unit::Percent if v > 0.0 => "+inf%".to_string(),
            Unit::Percent => "-inf%".to_string(),
            _ => text.to_string(),
        };
    }
    match unit {
        Unit::Times => format!("{}x", fmt_ratio(v)),
        Unit::Percent => fmt_percent(v),
        Unit::Count | Unit::Fraction => fmt_num(v),
        Unit::Ms => format!("{} ms", fmt_num(v)),
        Unit::Pages => format!("{} pages", fmt_num(v)),
    }
}

/// A signed percentage with three significant digits from 1 up (`+4.68%`, `+10.4%`, `-121%`), two
/// below (`-0.08%`), trailing zeros dropped; `0%` for zero.
fn fmt_percent(v: f64) -> String {
    let a = v.abs();
    let digits = if a >= 100.0 || a == 0.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        (1.0 - a.log10().floor()) as usize
    };
    let text = format!("{a:.digits$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    if text == "0" {
        return "0%".to_string();
    }
    let sign = if v > 0.0 { "+" } else { "-" };
    format!("{sign}{text}%")
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

    /// How many of each paper's own claims (in the order of `sets`, papers in `papers` only) got
    /// each summary verdict. Claims in a group (lsmlab's own readings and counterfactuals, not the
    /// paper's words as it measured them) are left out; [`Self::group_tally`] counts them.
    pub fn tally(&self, sets: &[ClaimSet], papers: &[String]) -> Vec<(String, BTreeMap<Verdict, usize>)> {
        self.tally_where(sets, papers, |s| s.group.is_none())
    }

    /// [`Self::tally`] for the claims in groups.
    pub fn group_tally(
        &self,
        sets: &[ClaimSet],
        papers: &[String],
    ) -> Vec<(String, BTreeMap<Verdict, usize>)> {
        self.tally_where(sets, papers, |s| s.group.is_some())
    }

    fn tally_where(
        &self,
        sets: &[ClaimSet],
        papers: &[String],
        keep: impl Fn(&Summary) -> bool,
    ) -> Vec<(String, BTreeMap<Verdict, usize>)> {
        sets.iter()
            .filter(|s| papers.contains(&s.paper))
            .map(|set| {
                let mut counts = BTreeMap::new();
                for s in self
                    .claims
                    .iter()
                    .filter(|s| s.paper_name == set.paper && keep(s))
                {
                    *counts.entry(s.verdict).or_insert(0) += 1;
                }
                (set.paper.clone(), counts)
            })
            .filter(|(_, counts)| !counts.is_empty())
            .collect()
    }

    /// The tally as a Markdown table: one row per paper and a total of the papers' own claims, then
    /// one row for the claims in groups (outside the total), one column per verdict; empty when no
    /// paper in `papers` has claims.
    pub fn tally_markdown(&self, sets: &[ClaimSet], papers: &[String]) -> String {
        let tally = self.tally(sets, papers);
        if tally.is_empty() {
            return String::new();
        }
        let mut headers = vec!["paper".to_string()];
        headers.extend(Verdict::ALL.iter().map(|v| v.as_str().to_string()));
        headers.push("total".to_string());
        let row = |name: String, counts: &BTreeMap<Verdict, usize>| {
            let mut line = vec![name];
            line.extend(
                Verdict::ALL
                    .iter()
                    .map(|v| counts.get(v).copied().unwrap_or(0).to_string()),
            );
            line.push(counts.values().sum::<usize>().to_string());
            line
        };
        let mut all = BTreeMap::new();
        let mut body = Vec::new();
        for (paper, counts) in &tally {
            for (v, n) in counts {
                *all.entry(*v).or_insert(0) += n;
            }
            body.push(row(paper.clone(), counts));
        }
        body.push(row("**all**".to_string(), &all));
        let mut grouped = BTreeMap::new();
        for (_, counts) in self.group_tally(sets, papers) {
            for (v, n) in counts {
                *grouped.entry(v).or_insert(0) += n;
            }
        }
        if !grouped.is_empty() {
            body.push(row(
                "groups (lsmlab's readings, counterfactuals)".to_string(),
                &grouped,
            ));
        }
        markdown_table(&headers, &body)
    }

    /// REPORT.md's claims: per paper in `papers`, a table of its claims (claim, source, the paper's
    /// number and band, the measured range, verdict and where the entries lie, why), the entries in a
    /// folded block, a table per claim group, and last the file's notes with each claim's reading and
    /// the paper's words.
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
            let _ = writeln!(
                md,
                "### {} claims: notes ({})\n\n{}\n",
                set.paper, self.scale, set.doc
            );
            for c in &set.claims {
                let _ = writeln!(
                    md,
                    "- **{}** ({}): {} The paper: \"{}\"",
                    c.id, c.source, c.text, c.quote
                );
            }
            md += "\n";
        }
        md
    }

    /// One table of claims, followed by their entries in a folded block.
    fn claims_table(&self, md: &mut String, mine: &[&Summary]) {
        let headers = ["claim", "source", "paper", "measured", "verdict", "why"].map(String::from);
        let body: Vec<Vec<String>> = mine
            .iter()
            .map(|s| {
                let f = |v| fmt_in(s.unit, v);
                let range = match (s.measured_min, s.measured_max) {
                    (Some(lo), Some(hi)) if lo != hi => format!("{} .. {}", f(Some(lo)), f(Some(hi))),
                    (lo, _) => f(lo),
                };
                let paper = match &s.band {
                    Some(band) => format!("{} (band {})", s.paper, band_text(s.unit, Some(band))),
                    None => s.paper.clone(),
                };
                vec![
                    s.claim.clone(),
                    s.source.clone(),
                    paper,
                    format!("{range} ({})", s.field),
                    format!("**{}**: {}", s.verdict.as_str(), s.condition),
                    s.why.clone().unwrap_or_default(),
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
            "secondary (same unit)",
            "note",
        ]
        .map(String::from);
        let body: Vec<Vec<String>> = self
            .entries
            .iter()
            .filter(|e| mine.iter().any(|s| s.claim == e.claim))
            .map(|e| {
                let secondary = e.secondary.as_ref().map_or(String::new(), |s| {
                    format!(
                        "{} ({}): {}",
                        fmt_in(e.unit, s.measured),
                        s.field,
                        s.verdict.as_str()
                    )
                });
                vec![
                    e.claim.clone(),
                    e.group.clone(),
                    fmt_in(e.unit, e.measured),
                    e.verdict.as_str().to_string(),
                    secondary,
                    e.note.clone().unwrap_or_default(),
                ]
            })
            .collect();
        // The secondary and note columns only when some entry has one.
        let keep: Vec<usize> = (0..headers.len())
            .filter(|&i| i < 4 || body.iter().any(|l| !l[i].is_empty()))
            .collect();
        let pick = |line: &[String]| keep.iter().map(|&i| line[i].clone()).collect::<Vec<_>>();
        let body: Vec<Vec<String>> = body.iter().map(|l| pick(l)).collect();
        *md += &markdown_table(&pick(&headers), &body);
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

    const FASTER: &str = r#"{"id": "c1", "source": "Fig. 1", "text": "t", "quote": "4x to 8x", "experiment": "e",
        "measure": {"kind": "ratio", "field": "ms", "variants": ["A", "B", "C", "D"], "baselines": ["Base"],
                    "group_by": ["dataset"], "filter": {"selectivity": ["0.5"]}},
        "secondary": "reads+writes",
        "form": "range", "unit": "x", "lo": 4.0, "hi": 8.0, "direction": {"above": 1.0}}"#;

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

    /// Judges one claim of variant `A` against `Base` with `fields` (form, unit, numbers, direction,
    /// ...) on hand-made rows: dataset `d<i>` measures `values[i]` (None: 0 / 0). In unit `x` the
    /// claim is a ratio Base / A (A's time is 100 / v); in `%` a reduction, so A's value is
    /// 100 (1 + v / 100), a change of v%. Returns each entry's verdict and the claim's.
    fn judged(fields: &str, values: &[Option<f64>]) -> (Vec<Verdict>, Verdict) {
        let percent = fields.contains(r#""unit": "%""#);
        let kind = if percent { "reduction" } else { "ratio" };
        let claim = format!(
            r#"{{"id": "f", "source": "s", "text": "t", "quote": "q", "experiment": "e",
                "measure": {{"kind": "{kind}", "field": "ms", "variants": ["A"], "baselines": ["Base"],
                             "group_by": ["dataset"]}}, {fields}}}"#
        );
        let mut rows = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let d = format!("d{i}");
            let (base, a) = match v {
                None => (0.0, 0.0),
                Some(v) if percent => (100.0, 100.0 * (1.0 + v / 100.0)),
                Some(v) if v.is_infinite() => (100.0, 0.0),
                Some(v) => (100.0, 100.0 / v),
            };
            rows.push(row(&d, "Base", 0.5, base, 1));
            rows.push(row(&d, "A", 0.5, a, 1));
        }
        let eval = evaluate(&[set(&claim)], &[result("e", rows)], Scale::Tiny);
        let mut entries: Vec<&Entry> = eval.entries.iter().collect();
        entries.sort_by_key(|e| e.dims["dataset"][1..].parse::<usize>().unwrap());
        (
            entries.iter().map(|e| e.verdict).collect(),
            eval.claims[0].verdict,
        )
    }

    use Verdict::{DirectionOnly as D, NotMeasured as M, NotReproduced as N, Reproduced as R};

    #[test]
    fn about_is_a_two_sided_band() {
        let about = r#""form": "about", "unit": "x", "value": 3.0, "direction": {"above": 1.0}"#;
        // Band [2.25, 3.75]: inside, just outside each edge, far beyond, wrong side, undefined.
        let values = [3.0, 2.26, 3.74, 2.24, 3.76, 300.0, 0.5];
        let (v, claim) = judged(about, &values.map(Some));
        assert_eq!(v, [R, R, R, D, D, D, N]);
        assert_eq!(claim, D, "6 of 7 on the paper's side, not all in band");
        assert_eq!(judged(about, &[Some(2.26), Some(3.74)]), (vec![R, R], R));
        assert_eq!(
            judged(about, &[Some(300.0)]),
            (vec![D], D),
            "far beyond is never reproduced"
        );
        assert_eq!(judged(about, &[Some(0.5), Some(0.9), Some(3.0)]).1, N);
        assert_eq!(judged(about, &[None]), (vec![M], M));
        // A measurement that cannot be undone does not count: one undefined, one in band.
        assert_eq!(judged(about, &[None, Some(3.0)]), (vec![M, R], R));
    }

    #[test]
    fn about_a_negative_change_mirrors_the_band() {
        let cut = r#""form": "about", "unit": "%", "value": -2.9, "direction": {"below": 0.0}"#;
        // Band [-3.625, -2.175].
        let values = [-2.9, -3.6, -2.2, -3.7, -2.1, -14.0, 0.5];
        let (v, claim) = judged(cut, &values.map(Some));
        assert_eq!(v, [R, R, R, D, D, D, N]);
        assert_eq!(claim, D);
    }

    #[test]
    fn a_range_widens_each_end_by_the_tolerance() {
        let range = r#""form": "range", "unit": "x", "lo": 4.0, "hi": 8.0, "direction": {"above": 1.0}"#;
        // Band [3, 10].
        let values = [4.0, 8.0, 3.01, 9.99, 2.99, 10.01, 1000.0, 0.9];
        let (v, claim) = judged(range, &values.map(Some));
        assert_eq!(v, [R, R, R, R, D, D, D, N]);
        assert_eq!(claim, D);
        assert_eq!(judged(range, &[Some(3.01), Some(9.99)]).1, R);
        assert_eq!(judged(range, &[None, None]).1, M);
        // A claim half of whose entries point the wrong way is not reproduced.
        assert_eq!(judged(range, &[Some(5.0), Some(0.9)]).1, N);
    }

    #[test]
    fn at_least_and_at_most_bound_one_side_only() {
        let at_least = r#""form": "at_least", "unit": "x", "value": 10.0, "direction": {"above": 1.0}"#;
        let values = [
            Some(7.51),
            Some(7.49),
            Some(1e6),
            Some(f64::INFINITY),
            Some(0.5),
            None,
        ];
        assert_eq!(judged(at_least, &values).0, [R, D, R, R, N, M]);
        assert_eq!(judged(at_least, &[Some(7.51), Some(1e6)]).1, R);

        let at_most = r#""form": "at_most", "unit": "%", "value": 4.0, "direction": "none""#;
        // Band: m <= 5; no side, so outside is not reproduced.
        let values = [Some(4.99), Some(5.01), Some(-50.0), Some(400.0), None];
        assert_eq!(judged(at_most, &values).0, [R, N, R, N, M]);
        assert_eq!(judged(at_most, &[Some(4.99), Some(-50.0)]).1, R);
        assert_eq!(judged(at_most, &[Some(4.99), Some(5.01)]).1, N);
    }

    #[test]
    fn up_to_judges_the_extreme_entry_and_caps_it() {
        let up_to = r#""form": "up_to", "unit": "x", "value": 60.0, "direction": {"above": 1.0}"#;
        // Band [45, 75] for the extreme entry; the others only need the paper's side.
        assert_eq!(judged(up_to, &[Some(30.0), Some(46.0)]), (vec![D, R], R));
        assert_eq!(judged(up_to, &[Some(30.0), Some(44.0)]), (vec![D, D], D));
        assert_eq!(judged(up_to, &[Some(30.0), Some(74.0)]), (vec![D, R], R));
        assert_eq!(judged(up_to, &[Some(30.0), Some(76.0)]), (vec![D, D], D));
        assert_eq!(
            judged(up_to, &[Some(116.0)]),
            (vec![D], D),
            "116x is not 'up to 60x'"
        );
        assert_eq!(judged(up_to, &[Some(1e5)]), (vec![D], D), "far beyond");
        assert_eq!(
            judged(up_to, &[Some(0.5), Some(50.0), Some(55.0)]),
            (vec![N, R, R], D)
        );
        assert_eq!(judged(up_to, &[Some(0.5), Some(0.9), Some(55.0)]).1, N);
        assert_eq!(judged(up_to, &[None, Some(50.0)]), (vec![M, R], R));
        let stated =
            r#""form": "up_to", "unit": "x", "value": 60.0, "beyond": 1.5, "direction": {"above": 1.0}"#;
        assert_eq!(judged(stated, &[Some(89.0)]).1, R);
        assert_eq!(judged(stated, &[Some(91.0)]).1, D);

        // A cut: the extreme entry is the smallest change, band [-115, -69].
        let cut = r#""form": "up_to", "unit": "%", "value": -92.0, "direction": {"below": 0.0}"#;
        assert_eq!(judged(cut, &[Some(-94.0), Some(-30.0)]), (vec![R, D], R));
        assert_eq!(judged(cut, &[Some(-60.0)]), (vec![D], D));
        assert_eq!(judged(cut, &[Some(-200.0)]), (vec![D], D));
        assert_eq!(judged(cut, &[Some(10.0), Some(-70.0)]).1, N);
    }

    #[test]
    fn a_direction_claim_is_reproduced_on_the_papers_side() {
        let slower = r#""form": "direction", "unit": "x", "direction": {"above": 1.0}"#;
        assert_eq!(judged(slower, &[Some(1.01), Some(1e4)]), (vec![R, R], R));
        assert_eq!(
            judged(slower, &[Some(1.01), Some(0.99), Some(1.0)]),
            (vec![R, N, N], N)
        );
        assert_eq!(
            judged(slower, &[Some(1.01), Some(1.02), Some(0.5)]),
            (vec![R, R, N], D)
        );
        assert_eq!(judged(slower, &[None]).1, M);
    }

    #[test]
    fn measurements_take_the_claims_unit_and_sign() {
        let base = row("x", "Base", 0.5, 200.0, 1);
        let a = row("x", "A", 0.5, 194.2, 1);
        let claim = |kind: &str, ratio: &str, unit: &str| {
            format!(
                r#"{{"id": "u", "source": "s", "text": "t", "quote": "q", "experiment": "e",
                    "measure": {{"kind": "{kind}", "ratio": "{ratio}", "field": "ms", "variants": ["A"],
                                 "baselines": ["Base"]}},
                    "form": "about", "unit": "{unit}", "value": -2.9, "direction": {{"below": 0.0}}}}"#
            )
        };
        let m = |c: String| {
            let e = evaluate(
                &[set(&c)],
                &[result("e", vec![base.clone(), a.clone()])],
                Scale::Tiny,
            );
            e.entries[0].measured.unwrap()
        };
        // A cut of 2.9% reads -2.9% as a reduction and as a variant/baseline ratio in `%`.
        let close = |x: f64, y: f64| (x - y).abs() < 1e-9;
        assert!(close(m(claim("reduction", "baseline/variant", "%")), -2.9));
        assert!(close(m(claim("ratio", "variant/baseline", "%")), -2.9));
        assert!(close(m(claim("ratio", "variant/baseline", "x")), 0.971));
        assert_eq!(fmt_in(Unit::Percent, Some(-2.9)), "-2.9%");
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
        // Two of four reproduced is not all of them; all four are at least direction-only.
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
        // The secondary (counted) view: (99 + 1) / (4 + 1) = 20x, above the band (8 x 1.25 = 10).
        let a = eval
            .entries
            .iter()
            .find(|e| e.group == "dataset=x, A vs Base")
            .unwrap();
        let s = a.secondary.as_ref().unwrap();
        assert_eq!((s.measured, s.verdict), (Some(20.0), Verdict::DirectionOnly));
        // Summary: 2 R, 2 D, 2 N measured -> 4 of 6 on the paper's side: direction-only.
        let c = &eval.claims[0];
        assert_eq!(c.verdict, Verdict::DirectionOnly);
        assert_eq!((c.measured_min, c.measured_max), (Some(0.5), Some(5.0)));
        assert_eq!(c.counts[&Verdict::NotMeasured], 2);
        assert_eq!(
            c.band,
            Some(Band {
                lo: Some(3.0),
                hi: Some(10.0)
            })
        );
        assert_eq!(
            c.condition,
            "2 of 6 in band, 4 below; 2 on the wrong side; 2 not measured"
        );
    }

    #[test]
    fn a_missing_experiment_or_filtered_value_is_not_measured() {
        let eval = evaluate(&[set(FASTER)], &[result("other", rows_for_faster())], Scale::Tiny);
        assert_eq!(eval.entries.len(), 4, "one per variant");
        assert!(eval.entries.iter().all(|e| e.verdict == Verdict::NotMeasured));
        assert!(eval.entries[0].note.as_deref().unwrap().contains("no e result"));
        assert_eq!(eval.claims[0].verdict, Verdict::NotMeasured);
        assert_eq!(eval.claims[0].condition, "4 not measured");
        let md = eval.markdown(&[set(FASTER)], &["P".to_string()]);
        assert!(md.contains("| - (ms) "), "{md}");

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
        let up_to = r#"{"id": "c2", "source": "Fig. 2", "text": "t", "quote": "up to 40x", "experiment": "e",
            "measure": {"kind": "ratio", "field": "ms", "variants": ["A"], "baselines": ["Base"],
                        "over": ["dataset", "selectivity"], "reduce": "max"},
            "form": "up_to", "unit": "x", "value": 40.0, "direction": {"above": 1.0}}"#;
        let largest = r#"{"id": "c3", "source": "Fig. 2", "text": "t", "quote": "slower", "experiment": "e",
            "measure": {"kind": "ratio", "ratio": "variant/baseline", "field": "ms", "variants": ["C"],
                        "baselines": ["Base"], "group_by": ["selectivity"], "filter": {"selectivity": ["$max"]}},
            "form": "direction", "unit": "x", "direction": {"above": 1.0}}"#;
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
            {"id": "none", "source": "Table 1", "text": "t", "quote": "no flush", "experiment": "e",
             "measure": {"kind": "value", "field": "ms", "variants": ["A", "B", "C"], "baselines": ["Base"],
                         "group_by": ["dataset"], "filter": {"dataset": ["x"]}},
             "form": "about", "unit": "count", "value": 0.0, "direction": "below_baseline"},
            {"id": "cut", "source": "Table 2", "text": "t", "quote": "up to 90%", "experiment": "e",
             "measure": {"kind": "reduction", "field": "ms", "variants": ["A", "B"], "baselines": ["Base"],
                         "group_by": ["dataset"], "filter": {"dataset": ["x"]}},
             "form": "up_to", "unit": "%", "value": -90.0, "direction": {"below": 0.0}},
            {"id": "inf", "source": "Fig. 5", "text": "t", "quote": "60x", "experiment": "e",
             "measure": {"kind": "ratio", "field": "ms", "variants": ["A", "Z"], "baselines": ["Base"],
                         "group_by": ["dataset"], "filter": {"dataset": ["x"]}},
             "form": "at_least", "unit": "x", "value": 60.0, "direction": {"above": 1.0}}"#;
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
        assert_eq!(get("cut", "A"), (Some(-100.0), Verdict::Reproduced));
        assert_eq!(get("cut", "B"), (Some(-60.0), Verdict::DirectionOnly));
        assert_eq!(get("inf", "A"), (Some(f64::INFINITY), Verdict::Reproduced));
        let json = serde_json::to_value(&eval).unwrap();
        assert!(json["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["measured"] == "inf"));
        assert_eq!(json["schema"], SCHEMA);
        assert_eq!(json["claims"][1]["form"], "up_to");
        assert_eq!(json["claims"][1]["unit"], "%");
        assert_eq!(json["claims"][1]["band"]["lo"], -112.5);

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
    fn bad_claim_files_are_refused_with_the_claim_named() {
        let refused = |claim: &str| {
            let text = format!(r#"{{"paper": "P", "doc": "d", "tolerance": 0.25, "claims": [{claim}]}}"#);
            format!("{:#}", parse("bad.json", &text).unwrap_err())
        };
        let err = refused(&FASTER.replace(r#""baselines": ["Base"],"#, ""));
        assert!(
            err.contains("bad.json") && err.contains("c1") && err.contains("baselines"),
            "{err}"
        );
        assert!(refused(&format!("{FASTER}, {FASTER}")).contains("twice"));
        assert!(refused(&FASTER.replace("\"field\"", "\"feild\"")).contains("feild"));
        assert!(refused(&FASTER.replace(r#""quote": "4x to 8x", "#, "")).contains("quote"));
        assert!(refused(&FASTER.replace(r#""quote": "4x to 8x""#, r#""quote": " ""#)).contains("quote"));
        assert!(refused(&FASTER.replace(r#""unit": "x", "#, "")).contains("unit"));
        assert!(refused(&FASTER.replace(r#""form": "range""#, r#""form": "about""#)).contains("value"));
        assert!(refused(&FASTER.replace(r#""lo": 4.0"#, r#""lo": 9.0"#)).contains("above"));
        assert!(refused(&FASTER.replace(r#""lo": 4.0,"#, r#""lo": 4.0, "beyond": 2.0,"#)).contains("beyond"));
        assert!(refused(&FASTER.replace(r#""kind": "ratio""#, r#""kind": "reduction""#)).contains("unit"));
        let direction = FASTER.replace(r#""form": "range""#, r#""form": "direction""#);
        assert!(refused(&direction).contains("no number"));
        assert!(refused(&FASTER.replace(
            r#""direction": {"above": 1.0}"#,
            r#""direction": {"above": 1.0}, "why": """#
        ))
        .contains("why"));
    }

    #[test]
    fn numbers_read_short_in_their_unit() {
        let r = |v| fmt_in(Unit::Times, Some(v));
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
        let p = |v| fmt_in(Unit::Percent, Some(v));
        assert_eq!(
            [
                p(-2.9),
                p(10.4),
                p(-94.07),
                p(4.68),
                p(-121.4),
                p(0.0797),
                p(-0.0002),
                p(30.0),
                p(0.0)
            ],
            ["-2.9%", "+10.4%", "-94.1%", "+4.68%", "-121%", "+0.08%", "-0.0002%", "+30%", "0%"]
        );
        assert_eq!(fmt_in(Unit::Ms, Some(21.0)), "21 ms");
        assert_eq!(fmt_in(Unit::Pages, Some(2.0)), "2 pages");
        assert_eq!(fmt_in(Unit::Count, None), "-");
        let band = Band {
            lo: Some(2.25),
            hi: None,
        };
        assert_eq!(band_text(Unit::Times, Some(&band)), ">= 2.25x");
    }

    #[test]
    fn markdown_shows_the_tally_and_one_table_per_paper_with_results() {
        let sets = [set(FASTER)];
        let eval = evaluate(&sets, &[result("e", rows_for_faster())], Scale::Tiny);
        let md = eval.markdown(&sets, &["P".to_string()]);
        assert!(md.contains("### P claims (tiny)"), "{md}");
        assert!(
            md.contains("| claim | source | paper")
                || md.lines().any(|l| l.starts_with("| claim") && l.contains("why")),
            "{md}"
        );
        assert!(
            md.contains("| c1")
                && md.contains("**direction-only**: 2 of 6 in band")
                && md.contains("0.5x .. 5x (ms)")
                && md.contains("4x .. 8x (band 3x .. 10x)"),
            "{md}"
        );
        assert!(md.contains("dataset=x, A vs Base") && md.contains("20x (reads+writes): direction-only"));
        // The notes come last: the file's doc and each claim's reading with the paper's words.
        let notes = md.split_once("### P claims: notes (tiny)").expect("notes").1;
        assert!(
            notes.contains("- **c1** (Fig. 1): t The paper: \"4x to 8x\""),
            "{md}"
        );
        assert!(eval.markdown(&sets, &["Other".to_string()]).is_empty());

        let tally = eval.tally_markdown(&sets, &["P".to_string()]);
        let header = tally.lines().next().unwrap();
        assert!(
            header.contains("reproduced") && header.contains("not-measured") && header.contains("total"),
            "{tally}"
        );
        let p = tally.lines().find(|l| l.starts_with("| P")).unwrap();
        let cells: Vec<&str> = p.split('|').map(str::trim).collect();
        assert_eq!(cells[1..7], ["P", "0", "1", "0", "0", "1"], "{tally}");
        assert!(eval.tally_markdown(&sets, &["Other".to_string()]).is_empty());
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
        let group = group.split_once("### P claims: notes").unwrap().0;
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
        // The tally counts the paper's own claim in its row and total, the group's apart.
        let tally = eval.tally_markdown(&sets, &["P".to_string()]);
        let cells = |prefix: &str| -> Vec<String> {
            let line = tally.lines().find(|l| l.starts_with(prefix)).expect(prefix);
            line.split('|').map(|c| c.trim().to_string()).collect()
        };
        assert_eq!(cells("| P")[6], "1", "{tally}");
        assert_eq!(cells("| **all**")[6], "1", "{tally}");
        assert_eq!(cells("| groups")[6], "1", "{tally}");
    }
}
