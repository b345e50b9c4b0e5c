//! The plug-in contract between the runner and the experiments.
//!
//! An experiment declares its parameters ([`ParamSpec`], defaults per [`Scale`]), runs against a
//! [`RunContext`] and returns tidy rows ([`RunOutput`]). It also knows how to draw its figures and
//! write its report section from a [`ResultFile`], so that plotting and reporting only ever meet the
//! run through the result file (the ann-benchmarks split, DESIGN.md section 7).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{anyhow, bail};
use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::progress::Progress;
use crate::result::ResultFile;

/// How big a run is: `tiny` for CI and quick checks, `small` for a laptop, `paper` for the papers'
/// sizes. Experiments choose their defaults per scale.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    Tiny,
    Small,
    Paper,
}

impl Scale {
    /// Every scale, smallest first.
    pub const ALL: [Scale; 3] = [Scale::Tiny, Scale::Small, Scale::Paper];

    /// The name used on the command line, in file paths and in result files.
    pub fn as_str(self) -> &'static str {
        match self {
            Scale::Tiny => "tiny",
            Scale::Small => "small",
            Scale::Paper => "paper",
        }
    }
}

impl fmt::Display for Scale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scale {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Self> {
        Scale::ALL
            .into_iter()
            .find(|scale| scale.as_str() == s)
            .ok_or_else(|| anyhow!("unknown scale `{s}`: expected one of tiny, small, paper"))
    }
}

/// A parameter value. The default's variant fixes the type that `--set` values must parse as.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Int(i64),
    /// Always finite: parsing rejects `nan` and `inf`.
    Float(f64),
    Bool(bool),
    Str(String),
    /// Parsed from `a,b,c` (items trimmed, empty items dropped).
    List(Vec<String>),
}

impl ParamValue {
    /// The type's name as shown in errors and in `lsmlab params`.
    pub fn type_name(&self) -> &'static str {
        match self {
            ParamValue::Int(_) => "integer",
            ParamValue::Float(_) => "number",
            ParamValue::Bool(_) => "bool",
            ParamValue::Str(_) => "string",
            ParamValue::List(_) => "list",
        }
    }

    /// What a value of this type looks like, for error messages.
    fn expected(&self) -> &'static str {
        match self {
            ParamValue::Int(_) => "an integer such as 1000000 or 1_000_000",
            ParamValue::Float(_) => "a finite number such as 0.5 or 1e-3",
            ParamValue::Bool(_) => "true or false (also yes/no, on/off, 1/0)",
            ParamValue::Str(_) => "any text",
            ParamValue::List(_) => "a comma-separated list such as a,b,c",
        }
    }

    /// Parses `raw` as a value of the same type as `self`.
    pub fn parse_like(&self, raw: &str) -> Result<ParamValue, String> {
        let trimmed = raw.trim();
        let parsed = match self {
            ParamValue::Int(_) => trimmed.replace('_', "").parse::<i64>().ok().map(ParamValue::Int),
            ParamValue::Float(_) => trimmed
                .replace('_', "")
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .map(ParamValue::Float),
            ParamValue::Bool(_) => match trimmed.to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "1" => Some(ParamValue::Bool(true)),
                "false" | "no" | "off" | "0" => Some(ParamValue::Bool(false)),
                _ => None,
            },
            ParamValue::Str(_) => Some(ParamValue::Str(raw.to_string())),
            ParamValue::List(_) => Some(ParamValue::List(
                raw.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
            )),
        };
        parsed.ok_or_else(|| format!("expected {} ({})", self.type_name(), self.expected()))
    }
}

impl fmt::Display for ParamValue {
    /// The form `--set` accepts, so that a printed default can be pasted back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Float(v) => write!(f, "{v}"),
            ParamValue::Bool(v) => write!(f, "{v}"),
            ParamValue::Str(v) => f.write_str(v),
            ParamValue::List(v) => f.write_str(&v.join(",")),
        }
    }
}

impl Serialize for ParamValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ParamValue::Int(v) => serializer.serialize_i64(*v),
            ParamValue::Float(v) if v.is_finite() => serializer.serialize_f64(*v),
            ParamValue::Float(v) => Err(S::Error::custom(format!("non-finite parameter value {v}"))),
            ParamValue::Bool(v) => serializer.serialize_bool(*v),
            ParamValue::Str(v) => serializer.serialize_str(v),
            ParamValue::List(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
        }
    }
}

/// One declared parameter: its key (as used with `--set key=value`), its default (which also fixes
/// its type) and one line of help.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamSpec {
    pub key: &'static str,
    pub default: ParamValue,
    pub help: &'static str,
}

impl ParamSpec {
    pub fn int(key: &'static str, default: i64, help: &'static str) -> Self {
        ParamSpec {
            key,
            default: ParamValue::Int(default),
            help,
        }
    }

    /// Panics if `default` is not finite (a bug in the experiment, not user input).
    pub fn float(key: &'static str, default: f64, help: &'static str) -> Self {
        assert!(
            default.is_finite(),
            "default of parameter `{key}` is not finite: {default}"
        );
        ParamSpec {
            key,
            default: ParamValue::Float(default),
            help,
        }
    }

    pub fn bool(key: &'static str, default: bool, help: &'static str) -> Self {
        ParamSpec {
            key,
            default: ParamValue::Bool(default),
            help,
        }
    }

    pub fn str(key: &'static str, default: &str, help: &'static str) -> Self {
        ParamSpec {
            key,
            default: ParamValue::Str(default.to_string()),
            help,
        }
    }

    pub fn list(key: &'static str, default: &[&str], help: &'static str) -> Self {
        ParamSpec {
            key,
            default: ParamValue::List(default.iter().map(|s| s.to_string()).collect()),
            help,
        }
    }
}

/// Splits one `--set` argument `key=value` (the value may itself contain `=`).
pub fn parse_assignment(arg: &str) -> anyhow::Result<(String, String)> {
    match arg.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => Ok((key.trim().to_string(), value.to_string())),
        _ => bail!("`--set {arg}`: expected key=value"),
    }
}

/// Resolved parameter values: the declared defaults, overridden by `--set`, in declaration order.
///
/// The typed getters panic when asked for an undeclared key or with the wrong type: that is a bug
/// in the experiment, never bad user input (user input was checked by [`Params::resolve`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    values: Vec<(&'static str, ParamValue)>,
}

impl Params {
    /// Starts from the defaults in `specs` and applies `assignments` (`(key, raw value)`, later ones
    /// win). An unknown key or a value that does not parse as the declared type is an error naming
    /// the key, the value and what was expected.
    pub fn resolve(specs: &[ParamSpec], assignments: &[(String, String)]) -> anyhow::Result<Params> {
        let mut values: Vec<(&'static str, ParamValue)> = Vec::with_capacity(specs.len());
        for spec in specs {
            if values.iter().any(|(key, _)| *key == spec.key) {
                bail!(
                    "parameter `{}` is declared twice (a bug in the experiment)",
                    spec.key
                );
            }
            values.push((spec.key, spec.default.clone()));
        }
        for (key, raw) in assignments {
            let Some(slot) = values.iter_mut().find(|(k, _)| k == key) else {
                let valid: Vec<&str> = specs.iter().map(|s| s.key).collect();
                let valid = if valid.is_empty() {
                    "(none)".to_string()
                } else {
                    valid.join(", ")
                };
                bail!("unknown parameter `{key}`; valid parameters: {valid}");
            };
            slot.1 = slot
                .1
                .parse_like(raw)
                .map_err(|expected| anyhow!("parameter `{key}`: cannot use `{raw}`: {expected}"))?;
        }
        Ok(Params { values })
    }

    /// The defaults of `specs`, untouched.
    pub fn defaults(specs: &[ParamSpec]) -> anyhow::Result<Params> {
        Params::resolve(specs, &[])
    }

    /// The value of `key`, if declared.
    pub fn get(&self, key: &str) -> Option<&ParamValue> {
        self.values.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Every `(key, value)` in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &ParamValue)> {
        self.values.iter().map(|(k, v)| (*k, v))
    }

    fn expect(&self, key: &str, wanted: &str) -> &ParamValue {
        self.get(key).unwrap_or_else(|| {
            panic!("experiment asked for parameter `{key}` ({wanted}) that it did not declare")
        })
    }

    fn wrong_type(&self, key: &str, wanted: &str) -> ! {
        let value = self.expect(key, wanted);
        panic!(
            "experiment asked for parameter `{key}` as {wanted}, but it is declared as {}",
            value.type_name()
        )
    }

    pub fn int(&self, key: &str) -> i64 {
        match self.expect(key, "integer") {
            ParamValue::Int(v) => *v,
            _ => self.wrong_type(key, "integer"),
        }
    }

    /// Panics if the value is negative: check it first (`check(key, params.int(key) >= 0, ...)`
    /// in [`Experiment::validate`]).
    pub fn usize(&self, key: &str) -> usize {
        let v = self.int(key);
        usize::try_from(v).unwrap_or_else(|_| {
            panic!("parameter `{key}` is {v}, not a size; the experiment must check it in validate()")
        })
    }

    /// Panics if the value is negative: check it first, as for [`Params::usize`].
    pub fn u64(&self, key: &str) -> u64 {
        let v = self.int(key);
        u64::try_from(v).unwrap_or_else(|_| {
            panic!("parameter `{key}` is {v}, not a count; the experiment must check it in validate()")
        })
    }

    /// A float parameter; an integer parameter is widened.
    pub fn float(&self, key: &str) -> f64 {
        match self.expect(key, "number") {
            ParamValue::Float(v) => *v,
            ParamValue::Int(v) => *v as f64,
            _ => self.wrong_type(key, "number"),
        }
    }

    pub fn bool(&self, key: &str) -> bool {
        match self.expect(key, "bool") {
            ParamValue::Bool(v) => *v,
            _ => self.wrong_type(key, "bool"),
        }
    }

    pub fn str(&self, key: &str) -> &str {
        match self.expect(key, "string") {
            ParamValue::Str(v) => v,
            _ => self.wrong_type(key, "string"),
        }
    }

    pub fn list(&self, key: &str) -> &[String] {
        match self.expect(key, "list") {
            ParamValue::List(v) => v,
            _ => self.wrong_type(key, "list"),
        }
    }

    /// Range/choice checks an experiment does after resolution; the error names key, value and what
    /// was expected, e.g. `check("threshold", t >= 1, "an integer >= 1")`.
    pub fn check(&self, key: &str, ok: bool, expected: &str) -> anyhow::Result<()> {
        if ok {
            return Ok(());
        }
        match self.get(key) {
            Some(value) => bail!("parameter `{key}` = `{value}`: expected {expected}"),
            None => bail!("parameter `{key}`: expected {expected}"),
        }
    }

    /// Checks that every item of list parameter `key` is one of `choices`.
    pub fn check_list_choices(&self, key: &str, choices: &[&str]) -> anyhow::Result<()> {
        for item in self.list(key) {
            if !choices.contains(&item.as_str()) {
                bail!(
                    "parameter `{key}`: unknown item `{item}`; expected items from {}",
                    choices.join(", ")
                );
            }
        }
        Ok(())
    }

    /// The resolved values as a JSON object (the `config` of a result file).
    pub fn to_json(&self) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
        match serde_json::to_value(self)? {
            serde_json::Value::Object(map) => Ok(map),
            other => bail!("parameters serialised to {other}, not an object"),
        }
    }
}

impl Serialize for Params {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.values.len()))?;
        for (key, value) in &self.values {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A user-supplied data file (`--data PATH`, with `--format`, `--columns`, `--skip-malformed`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DataSpec {
    pub path: PathBuf,
    /// The file's format, when the user named it; otherwise the experiment guesses from the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// A column mapping such as `id=0,ts=1,lat=2,lon=3`; the experiment's loader defines the names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<String>,
    /// Skip malformed lines (counting them in a note) instead of failing on the first one.
    pub skip_malformed: bool,
}

/// Everything a run may look at.
pub struct RunContext<'a> {
    pub scale: Scale,
    /// The run's seed; derive one seed per component from it.
    pub seed: u64,
    pub params: &'a Params,
    /// User data files; empty when the experiment should generate or use its default data.
    pub data: &'a [DataSpec],
    pub progress: &'a Progress,
}

/// One tidy record: string dimensions plus numeric measures, flat.
pub type Row = serde_json::Map<String, serde_json::Value>;

/// Builds a [`Row`] and refuses non-finite numbers (serde_json would silently write `null`).
///
/// ```
/// use lsmlab::experiment::RowBuilder;
/// let row = RowBuilder::new().str("strategy", "UM+F").int("flushes", 3u64).num("update_ms", 1.5).build();
/// assert_eq!(row["flushes"], 3);
/// ```
#[derive(Clone, Debug, Default)]
pub struct RowBuilder {
    row: Row,
}

impl RowBuilder {
    pub fn new() -> Self {
        RowBuilder::default()
    }

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

    pub fn bool(mut self, key: &str, value: bool) -> Self {
        self.row.insert(key.to_string(), serde_json::Value::Bool(value));
        self
    }

    pub fn build(self) -> Row {
        self.row
    }
}

/// What a run produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    pub rows: Vec<Row>,
    /// Anything a reader must know to interpret the rows (engine limits, substitutions, ...).
    pub notes: Vec<String>,
    /// Settings the run derived that shaped it beyond the parameters (added to `config`).
    pub extra_config: serde_json::Map<String, serde_json::Value>,
}

/// An experiment reproducing (part of) a paper's evaluation.
pub trait Experiment: Sync {
    /// The command-line name, e.g. `rum-update`.
    fn name(&self) -> &'static str;
    /// The paper it reproduces, e.g. `LSM RUM-tree`.
    fn paper(&self) -> &'static str;
    /// One line for `lsmlab list`.
    fn about(&self) -> &'static str;
    /// The parameters and their defaults at `scale`.
    fn params(&self, scale: Scale) -> Vec<ParamSpec>;
    /// Range and choice checks on the resolved parameters, called before [`Experiment::run`] (and
    /// before anything is loaded), so a bad `--set` fails fast. Use [`Params::check`].
    fn validate(&self, params: &Params) -> anyhow::Result<()> {
        let _ = params;
        Ok(())
    }
    /// Runs the experiment.
    fn run(&self, ctx: &RunContext) -> anyhow::Result<RunOutput>;
    /// Renders this experiment's figures from a result file into out_dir (svg + png), returning the paths.
    fn figures(&self, result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>>;
    /// A Markdown section for REPORT.md: what was run, the key table, and the paper's claims beside what was measured.
    fn report(&self, result: &ResultFile) -> String;
}

impl fmt::Debug for dyn Experiment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Experiment")
            .field("name", &self.name())
            .field("paper", &self.paper())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs() -> Vec<ParamSpec> {
        vec![
            ParamSpec::int("records", 1000, "records to ingest"),
            ParamSpec::float("ratio", 0.5, "a ratio"),
            ParamSpec::bool("clean", true, "clean on flush"),
            ParamSpec::str("dataset", "chicago", "dataset name"),
            ParamSpec::list("strategies", &["Eager", "UM+F"], "strategies to compare"),
        ]
    }

    fn set(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn scale_round_trips_through_text_and_json() {
        for scale in Scale::ALL {
            assert_eq!(scale.to_string().parse::<Scale>().unwrap(), scale);
            let json = serde_json::to_string(&scale).unwrap();
            assert_eq!(json, format!("\"{scale}\""));
        }
        let err = "huge".parse::<Scale>().unwrap_err().to_string();
        assert!(err.contains("huge") && err.contains("tiny"), "{err}");
    }

    #[test]
    fn defaults_are_kept_and_overrides_parse_as_the_declared_type() {
        let p = Params::defaults(&specs()).unwrap();
        assert_eq!(p.int("records"), 1000);
        assert_eq!(p.list("strategies"), ["Eager", "UM+F"]);

        let p = Params::resolve(
            &specs(),
            &set(&[
                ("records", "1_500_000"),
                ("ratio", "1e-3"),
                ("clean", "no"),
                ("dataset", "berlinmod"),
                ("strategies", " Eager, UM+FMBV ,,"),
                ("records", "7"),
            ]),
        )
        .unwrap();
        assert_eq!(p.int("records"), 7, "later assignments win");
        assert_eq!(p.usize("records"), 7);
        assert_eq!(p.u64("records"), 7);
        assert_eq!(p.float("ratio"), 1e-3);
        assert!(!p.bool("clean"));
        assert_eq!(p.str("dataset"), "berlinmod");
        assert_eq!(p.list("strategies"), ["Eager", "UM+FMBV"]);
        assert_eq!(p.float("records"), 7.0, "integers widen to floats");
    }

    #[test]
    fn unknown_key_is_an_error_listing_the_valid_keys() {
        let err = Params::resolve(&specs(), &set(&[("recods", "5")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`recods`"), "{err}");
        for key in ["records", "ratio", "clean", "dataset", "strategies"] {
            assert!(err.contains(key), "{err}");
        }
    }

    #[test]
    fn unparsable_value_is_an_error_naming_key_value_and_type() {
        for (key, raw, ty) in [
            ("records", "many", "integer"),
            ("ratio", "nan", "number"),
            ("ratio", "inf", "number"),
            ("clean", "maybe", "bool"),
        ] {
            let err = Params::resolve(&specs(), &set(&[(key, raw)]))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(key) && err.contains(raw) && err.contains(ty),
                "{err}"
            );
        }
    }

    #[test]
    fn assignment_needs_an_equals_sign() {
        assert_eq!(parse_assignment("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert_eq!(parse_assignment("a=").unwrap(), ("a".into(), "".into()));
        assert!(parse_assignment("novalue").is_err());
        assert!(parse_assignment("=5").is_err());
    }

    #[test]
    fn duplicate_declarations_are_rejected() {
        let specs = vec![ParamSpec::int("a", 1, ""), ParamSpec::int("a", 2, "")];
        assert!(Params::defaults(&specs).is_err());
    }

    #[test]
    fn check_names_key_value_and_expectation() {
        let p = Params::resolve(&specs(), &set(&[("records", "-3")])).unwrap();
        let err = p
            .check("records", p.int("records") >= 0, "a count >= 0")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("records") && err.contains("-3") && err.contains(">= 0"),
            "{err}"
        );
        assert!(p.check("records", true, "anything").is_ok());
        let err = p
            .check_list_choices("strategies", &["Eager"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("UM+F") && err.contains("Eager"), "{err}");
    }

    #[test]
    #[should_panic(expected = "not a size")]
    fn negative_usize_panics_with_the_key() {
        let p = Params::resolve(&specs(), &set(&[("records", "-3")])).unwrap();
        p.usize("records");
    }

    #[test]
    #[should_panic(expected = "did not declare")]
    fn undeclared_key_panics() {
        Params::defaults(&specs()).unwrap().int("nope");
    }

    #[test]
    fn params_serialise_to_a_json_object_in_declaration_order() {
        let p = Params::defaults(&specs()).unwrap();
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(
            json,
            r#"{"records":1000,"ratio":0.5,"clean":true,"dataset":"chicago","strategies":["Eager","UM+F"]}"#
        );
        assert_eq!(p.to_json().unwrap()["records"], 1000);
    }

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
    #[should_panic(expected = "update_ms")]
    fn row_builder_panics_on_nan_naming_the_key() {
        let _ = RowBuilder::new().num("update_ms", f64::NAN);
    }
}
