//! Typed experiment configs.
//!
//! Each experiment's parameters are one serde struct implementing [`Config`]. A run's config is
//! the scale's defaults, overlaid by a config file (`--config FILE`, JSON or TOML) and then by
//! `--set key=value` arguments ([`Overlay`]); [`resolve`] refuses unknown keys (naming the valid
//! ones), values of the wrong type or out of the type's range (naming key, value and what was
//! expected), then runs the config's own range checks. A result file's `config` is the resolved
//! config serialised, so feeding it back through `--config` repeats the run.
//!
//! `--set` values keep one syntax for every experiment: the type of the default decides how the
//! text is read (integers may contain `_`, lists are `a,b,c`, booleans also yes/no, on/off, 1/0).
//! Choice names are case-insensitive for every key (`merge_policy=PREFIX`, `strategies=um+f`),
//! recorded as `lsmlab params` prints them; a list naming one value twice is refused, and so is a
//! JSON config naming one key twice.

mod define;
mod storage;

pub use define::ConfigPart;
#[doc(hidden)]
pub use define::{doc_line, doc_line_len};
pub use storage::{dir_or_temp, DeviceKind, Storage, StorageConfig};

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::data::DataSpec;

/// A config as JSON: what `--print-config` prints and a result file's `config` holds.
pub type ConfigMap = Map<String, Value>;

/// One key with one line of help.
pub type KeyHelp = (&'static str, &'static str);

/// An experiment's parameters: one serde struct (flattening shared parts such as
/// [`StorageConfig`]) whose field names are the `--set` keys, declared with
/// [`config!`](crate::config!), which writes its help ([`ConfigPart`]) from the fields' docs.
pub trait Config: ConfigPart + Serialize + DeserializeOwned + Clone + Send + Sync + 'static {
    /// Reorders or rewords the keys' help ([`ConfigPart::help`], in field order) where `lsmlab params`
    /// lists them otherwise (a key placed among a flattened part's keys, a part's key that means
    /// something else here).
    fn adjust_help(_help: &mut Vec<KeyHelp>) {}

    /// Range and cross-field checks that the types do not express; use [`check`] so that the error
    /// names the key, the value and what was expected.
    fn validate(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// One key as `lsmlab params` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyInfo {
    /// The key's name, as `--set` and config files spell it.
    pub key: &'static str,
    /// Its default at the scale asked for.
    pub default: Value,
    /// What it means (one line).
    pub help: &'static str,
}

/// Where a run's config comes from beyond the scale's defaults, applied in this order.
#[derive(Clone, Debug, Default)]
pub struct Overlay {
    /// `--config FILE`.
    pub file: Option<ConfigFile>,
    /// Raw `key=value` arguments of `--set`; later ones win.
    pub sets: Vec<String>,
}

impl Overlay {
    /// Only `--set` arguments.
    pub fn sets(sets: &[String]) -> Overlay {
        Overlay {
            file: None,
            sets: sets.to_vec(),
        }
    }
}

/// A config read from a file: a config object (as `--print-config` prints it), or a whole result
/// file, whose `config` is used.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigFile {
    /// The file the config was read from.
    pub path: PathBuf,
    /// The parameter values.
    pub values: ConfigMap,
    /// The `--data` files the recorded run used (a result's `config.data`).
    pub data: Vec<DataSpec>,
    /// The experiment whose result the file is, when it is a whole result file (its config is
    /// that experiment's, and another experiment refuses it: [`ConfigFile::check_experiment`]).
    pub experiment: Option<String>,
}

/// The key under which a result's `config` records the `--data` files.
pub const DATA_KEY: &str = "data";
/// The key under which a result's `config` records what the run derived ([`crate::rows::RunOutput::extra_config`]).
pub const DERIVED_KEY: &str = "derived";

impl ConfigFile {
    /// Reads `path`: TOML when its name ends in `.toml`, JSON otherwise.
    pub fn read(path: &Path) -> anyhow::Result<ConfigFile> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading config {}", path.display()))?;
        // A UTF-8 byte order mark (some editors write one) is not part of the document.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let is_toml = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
        let value: Value = if is_toml {
            toml::from_str(text).with_context(|| format!("parsing {} as TOML", path.display()))?
        } else {
            let checked: UniqueKeys =
                serde_json::from_str(text).with_context(|| format!("parsing {} as JSON", path.display()))?;
            checked.0
        };
        ConfigFile::from_value(path, value)
    }

    /// A config from an already parsed document (see [`ConfigFile::read`]).
    pub fn from_value(path: &Path, value: Value) -> anyhow::Result<ConfigFile> {
        let Value::Object(mut values) = value else {
            bail!("config {}: expected an object of parameters", path.display());
        };
        // A whole result file: take its config.
        let mut experiment = None;
        if values.get("schema").and_then(Value::as_str).is_some() {
            experiment = values
                .get("experiment")
                .and_then(Value::as_str)
                .map(str::to_string);
            match values.remove("config") {
                Some(Value::Object(config)) => values = config,
                _ => bail!(
                    "config {}: a result file without a `config` object",
                    path.display()
                ),
            }
        }
        let data = match values.remove(DATA_KEY) {
            None => vec![],
            Some(v) => serde_json::from_value(v).with_context(|| {
                format!(
                    "config {}: `{DATA_KEY}` lists the --data files of a run: [{{\"path\": ..., \
                     \"skip_malformed\": false}}, ...]",
                    path.display()
                )
            })?,
        };
        // What a run derived is an output, recomputed by every run: not an input.
        values.remove(DERIVED_KEY);
        Ok(ConfigFile {
            path: path.to_path_buf(),
            values,
            data,
            experiment,
        })
    }

    /// Refuses a whole result file of another experiment as the config of `experiment`: their
    /// keys may overlap enough to be accepted, running parameters chosen for something else.
    pub fn check_experiment(&self, experiment: &str) -> anyhow::Result<()> {
        match &self.experiment {
            Some(of) if of != experiment => bail!(
                "config {} is a result of `{of}`, not of `{experiment}`: run `lsmlab run {of} --config {}`, \
                 or give a result of `{experiment}` or a config `lsmlab run {experiment} --print-config` printed",
                self.path.display(),
                self.path.display()
            ),
            _ => Ok(()),
        }
    }
}

/// A JSON document read with every object's keys checked to be distinct: serde_json keeps the
/// last of two equal keys, so `{"records": 100, "records": 200}` would silently run 200.
struct UniqueKeys(Value);

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueVisitor).map(UniqueKeys)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{v} is not a finite number")))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(UniqueKeys(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let UniqueKeys(value) = map.next_value()?;
            if let Some(first) = out.get(&key) {
                return Err(serde::de::Error::custom(format!(
                    "key `{key}` appears twice ({} and {}); give each key once",
                    display_value(first),
                    display_value(&value)
                )));
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// Splits one `--set` argument `key=value` (the value may itself contain `=`).
pub fn parse_assignment(arg: &str) -> anyhow::Result<(String, String)> {
    match arg.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => Ok((key.trim().to_string(), value.to_string())),
        _ => bail!("`--set {arg}`: expected key=value"),
    }
}

/// `config` as a JSON object.
pub fn to_map<C: Serialize>(config: &C) -> anyhow::Result<ConfigMap> {
    match serde_json::to_value(config)? {
        Value::Object(map) => Ok(map),
        other => bail!("a config serialised to {other}, not an object (a bug in the experiment)"),
    }
}

/// The keys of `defaults` with their values and help, in help order. An experiment whose help
/// and fields disagree is a bug, reported as an error.
pub fn keys<C: Config>(defaults: &C) -> anyhow::Result<Vec<KeyInfo>> {
    let map = to_map(defaults)?;
    let mut help = C::help();
    C::adjust_help(&mut help);
    let mut out = Vec::with_capacity(help.len());
    for (key, text) in help {
        if out.iter().any(|k: &KeyInfo| k.key == key) {
            bail!("config key `{key}` has help twice (a bug in the experiment)");
        }
        let default = map.get(key).ok_or_else(|| {
            anyhow!("config help names `{key}`, which is no field (a bug in the experiment)")
        })?;
        out.push(KeyInfo {
            key,
            default: default.clone(),
            help: text,
        });
    }
    if let Some(missing) = map.keys().find(|k| !out.iter().any(|i| i.key == k.as_str())) {
        bail!("config field `{missing}` has no help (a bug in the experiment)");
    }
    Ok(out)
}

/// `defaults` overlaid by `overlay`, type- and range-checked (see the module docs).
pub fn resolve<C: Config>(defaults: &C, overlay: &Overlay) -> anyhow::Result<C> {
    let infos = keys(defaults)?;
    let base = to_map(defaults)?;
    let mut map = base.clone();
    let mut touched: Vec<String> = Vec::new();
    let unknown = |key: &str| {
        let valid: Vec<&str> = infos.iter().map(|k| k.key).collect();
        let valid = if valid.is_empty() {
            "(none)".to_string()
        } else {
            valid.join(", ")
        };
        anyhow!("unknown parameter `{key}`; valid parameters: {valid}")
    };
    if let Some(file) = &overlay.file {
        for (key, value) in &file.values {
            if !base.contains_key(key) {
                return Err(unknown(key)).with_context(|| format!("config {}", file.path.display()));
            }
            let value = coerce(&base[key], value).map_err(|expected| {
                anyhow!(
                    "config {}: parameter `{key}`: cannot use `{}`: {expected}",
                    file.path.display(),
                    display_value(value)
                )
            })?;
            map.insert(key.clone(), value);
            touched.push(key.clone());
        }
    }
    for arg in &overlay.sets {
        let (key, raw) = parse_assignment(arg)?;
        let guide = base.get(&key).ok_or_else(|| unknown(&key))?;
        let value = parse_like(guide, &raw)
            .map_err(|expected| anyhow!("parameter `{key}`: cannot use `{raw}`: {expected}"))?;
        map.insert(key.clone(), value);
        touched.push(key);
    }
    fold_case::<C>(&base, &mut map, &touched);
    let config: C = match serde_json::from_value(Value::Object(map.clone())) {
        Ok(config) => config,
        Err(e) => return Err(blame::<C>(&base, &map, &touched, e)),
    };
    config.validate()?;
    refuse_repeats(&to_map(&config)?)?;
    Ok(config)
}

/// Whether `key` holds a choice (a name from a fixed set, or a list of them) rather than free
/// text such as a path: its default is a non-empty string that is no path, or a list.
fn is_choice(default: &Value) -> bool {
    match default {
        Value::String(s) => !s.is_empty() && !s.contains(['/', '\\']),
        Value::Array(_) => true,
        _ => false,
    }
}

/// Choice names are case-insensitive, as strategies always were (`um+f` is `UM+F`): a touched
/// choice key whose value is refused as given, but accepted in lower case (every other choice name
/// is lower case), takes the lower-case value. Free text (paths) is never changed.
fn fold_case<C: Config>(base: &ConfigMap, map: &mut ConfigMap, touched: &[String]) {
    let accepted = |key: &str, value: &Value| {
        let mut one = base.clone();
        one.insert(key.to_string(), value.clone());
        serde_json::from_value::<C>(Value::Object(one)).is_ok_and(|c| c.validate().is_ok())
    };
    let lower = |v: &Value| match v {
        Value::String(s) => Value::String(s.to_lowercase()),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| match i {
                    Value::String(s) => Value::String(s.to_lowercase()),
                    other => other.clone(),
                })
                .collect(),
        ),
        other => other.clone(),
    };
    for key in touched {
        let (Some(default), Some(value)) = (base.get(key), map.get(key)) else {
            continue;
        };
        let folded = lower(value);
        if !is_choice(default) || &folded == value || accepted(key, value) {
            continue;
        }
        if accepted(key, &folded) {
            map.insert(key.clone(), folded);
        }
    }
}

/// Refuses a list that names one value twice (`strategies=UM,UM`): every list is a set of grid
/// values, and a repeat would run and report the same rows twice. Compared as the config records
/// them, so `UM,um` is a repeat too.
fn refuse_repeats(config: &ConfigMap) -> anyhow::Result<()> {
    for (key, value) in config {
        let Value::Array(items) = value else {
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            if items[..i].contains(item) {
                bail!(
                    "parameter `{key}` = `{}`: `{}` is listed twice; give each value once",
                    display_value(value),
                    display_value(item)
                );
            }
        }
    }
    Ok(())
}

/// A config from its JSON form (already resolved and validated).
pub fn from_map<C: Config>(map: &ConfigMap) -> anyhow::Result<C> {
    serde_json::from_value(Value::Object(map.clone())).map_err(|e| anyhow!("config: {}", explain(&e)))
}

/// Finds the key whose new value does not fit its type, by trying each changed key alone on the
/// defaults: serde reports what was wrong, not where (flattened structs lose the path).
fn blame<C: Config>(
    base: &ConfigMap,
    map: &ConfigMap,
    touched: &[String],
    whole: serde_json::Error,
) -> anyhow::Error {
    for key in touched {
        let mut one = base.clone();
        one.insert(key.clone(), map[key].clone());
        if let Err(e) = serde_json::from_value::<C>(Value::Object(one)) {
            let mut why = explain(&e);
            // The type's range starts at 0, but the config's own check may refuse 0: when that
            // check states a range, it is the one to name (`vacuum_threshold` = -1: from 1, not 0).
            if why.contains("expected an integer from 0 to") {
                let mut zero = base.clone();
                zero.insert(key.clone(), Value::from(0));
                let own = serde_json::from_value::<C>(Value::Object(zero)).map(|c| c.validate());
                if let Ok(Err(refused)) = own {
                    let refused = refused.to_string();
                    if let Some(expected) = refused
                        .strip_prefix(&format!("parameter `{key}` = `0`: "))
                        .filter(|x| x.starts_with("expected") && x.contains("from") && x.contains(" to "))
                    {
                        why = format!("{}{expected}", why.split("expected").next().unwrap_or(""));
                    }
                }
            }
            return anyhow!("parameter `{key}` = `{}`: {why}", display_value(&map[key]));
        }
    }
    anyhow!("the config does not fit the experiment: {}", explain(&whole))
}

/// serde's message, with integer types spelt out as ranges ("expected u32" names no numbers).
fn explain(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    let ranges: [(&str, i128, i128); 10] = [
        ("u8", 0, u8::MAX as i128),
        ("u16", 0, u16::MAX as i128),
        ("u32", 0, u32::MAX as i128),
        ("u64", 0, u64::MAX as i128),
        ("usize", 0, usize::MAX as i128),
        ("i8", i8::MIN as i128, i8::MAX as i128),
        ("i16", i16::MIN as i128, i16::MAX as i128),
        ("i32", i32::MIN as i128, i32::MAX as i128),
        ("i64", i64::MIN as i128, i64::MAX as i128),
        ("isize", isize::MIN as i128, isize::MAX as i128),
    ];
    for (ty, lo, hi) in ranges {
        if let Some(head) = msg.strip_suffix(&format!("expected {ty}")) {
            return format!("{head}expected an integer from {lo} to {hi}");
        }
    }
    msg
}

/// A file's value where the default is a number or a bool but the file has text (result files
/// written before configs were typed kept numeric lists as text, e.g. `"selectivities": ["0.001"]`):
/// read as `--set` would read it. Other values pass unchanged, for serde to check.
fn coerce(guide: &Value, value: &Value) -> Result<Value, String> {
    match (guide, value) {
        (Value::Number(_) | Value::Bool(_), Value::String(text)) => parse_like(guide, text),
        (Value::Array(guides), Value::Array(items)) => match guides.first() {
            Some(guide) => items
                .iter()
                .map(|item| coerce(guide, item).map_err(|e| format!("item `{}`: {e}", display_value(item))))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            None => Ok(value.clone()),
        },
        _ => Ok(value.clone()),
    }
}

/// A JSON value in the form `--set` accepts, so that a printed default can be pasted back.
pub fn display_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(display_value).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// The type's name as `lsmlab params` and errors show it.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "table",
    }
}

/// Reads `raw` as a value of the same JSON type as `guide` (the default); the error says what was
/// expected.
fn parse_like(guide: &Value, raw: &str) -> Result<Value, String> {
    let trimmed = raw.trim();
    let parsed = match guide {
        Value::Bool(_) => match trimmed.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Some(Value::Bool(true)),
            "false" | "no" | "off" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        Value::Number(n) if n.is_f64() => trimmed
            .replace('_', "")
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number),
        Value::Number(_) => parse_integer(trimmed),
        Value::String(_) => Some(Value::String(raw.to_string())),
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let value = match items.first() {
                    Some(guide) => parse_like(guide, item).map_err(|e| format!("item `{item}`: {e}"))?,
                    None => infer(item),
                };
                out.push(value);
            }
            Some(Value::Array(out))
        }
        Value::Null | Value::Object(_) => {
            return Err("a value --set cannot write; give it in a --config file".into());
        }
    };
    parsed.ok_or_else(|| {
        let example = match guide {
            Value::Bool(_) => "true or false (also yes/no, on/off, 1/0)",
            Value::Number(n) if n.is_f64() => "a finite number such as 0.5 or 1e-3",
            _ => "an integer such as 1000000 or 1_000_000",
        };
        format!("expected {} ({example})", type_name(guide))
    })
}

fn parse_integer(text: &str) -> Option<Value> {
    let digits = text.replace('_', "");
    if let Ok(v) = digits.parse::<i64>() {
        return Some(Value::from(v));
    }
    digits.parse::<u64>().ok().map(Value::from)
}

/// An item of a list whose default is empty: a number when it reads as one, text otherwise.
fn infer(item: &str) -> Value {
    if let Some(v) = parse_integer(item) {
        return v;
    }
    match item.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
        Some(n) => Value::Number(n),
        None => Value::String(item.to_string()),
    }
}

/// A range or choice check: `Ok` when `ok`, else an error naming the key, the value and what was
/// expected, e.g. `check("tolerance", t, t >= 2, "at least 2 components")`.
pub fn check(key: &str, value: impl fmt::Display, ok: bool, expected: &str) -> anyhow::Result<()> {
    if ok {
        return Ok(());
    }
    bail!("parameter `{key}` = `{value}`: expected {expected}")
}

/// Checks every item of list `key`: the error names the first item that fails.
pub fn check_items<T: fmt::Display>(
    key: &str,
    items: &[T],
    ok: impl Fn(&T) -> bool,
    expected: &str,
) -> anyhow::Result<()> {
    match items.iter().find(|item| !ok(item)) {
        None => Ok(()),
        Some(item) => bail!("parameter `{key}`: item `{item}`: expected {expected}"),
    }
}

/// Serde adapter for values written as their `Display` text and read with `FromStr` (strategies,
/// device profiles), so configs spell them as the papers and the CLI do.
pub mod text {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::fmt::Display;
    use std::str::FromStr;

    /// Writes `value` as its `Display` text.
    pub fn serialize<T: Display, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(value)
    }

    /// Reads a string and parses it with `FromStr`.
    pub fn deserialize<'de, T, D>(deserializer: D) -> Result<T, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// [`text`] for a list of values.
pub mod text_list {
    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::fmt::Display;
    use std::str::FromStr;

    /// Writes each value as its `Display` text.
    pub fn serialize<T: Display, S: Serializer>(values: &[T], serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(values.len()))?;
        for value in values {
            seq.serialize_element(&value.to_string())?;
        }
        seq.end()
    }

    /// Reads a list of strings and parses each with `FromStr`.
    pub fn deserialize<'de, T, D>(deserializer: D) -> Result<Vec<T>, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        Vec::<String>::deserialize(deserializer)?
            .iter()
            .map(|text| text.parse().map_err(serde::de::Error::custom))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsmlab_engine::spatial::Strategy;
    use serde::Deserialize;

    crate::config! {
        struct Demo {
            /// records
            records: u64,
            /// a threshold
            threshold: u32,
            /// a ratio
            ratio: f64,
            /// clean on flush
            clean: bool,
            /// a name
            name: String,
            /// strategies
            #[serde(with = "text_list")]
            strategies: Vec<Strategy>,
            /// sizes
            sizes: Vec<f64>,
            #[serde(flatten)]
            storage: StorageConfig,
        }
    }

    impl Config for Demo {
        fn validate(&self) -> anyhow::Result<()> {
            check("threshold", self.threshold, self.threshold >= 1, "at least 1")?;
            check_items(
                "sizes",
                &self.sizes,
                |s| *s > 0.0 && *s <= 1.0,
                "fractions in (0, 1]",
            )?;
            self.storage.validate()
        }
    }

    fn demo() -> Demo {
        Demo {
            records: 1000,
            threshold: 8,
            ratio: 0.5,
            clean: true,
            name: "chicago".into(),
            strategies: vec!["Eager".parse().unwrap(), "UM+F".parse().unwrap()],
            sizes: vec![0.001, 0.5],
            storage: StorageConfig::with_cache_pages(16),
        }
    }

    fn sets(args: &[&str]) -> Overlay {
        Overlay::sets(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    fn err(args: &[&str]) -> String {
        format!("{:#}", resolve(&demo(), &sets(args)).unwrap_err())
    }

    #[test]
    fn defaults_are_kept_and_sets_parse_as_the_default_type() {
        assert_eq!(resolve(&demo(), &Overlay::default()).unwrap(), demo());
        let dir = tempfile::tempdir().unwrap();
        let file_dir = format!("file_dir={}", dir.path().display());
        let c = resolve(
            &demo(),
            &sets(&[
                "records=1_500_000",
                "ratio=1e-3",
                "clean=no",
                "name=berlinmod",
                "strategies= Eager, UM+FMBV ,,",
                "sizes=0.25,1",
                "threshold=7",
                "threshold=9",
                "device=file",
                "profile=hdd",
                &file_dir,
            ]),
        )
        .unwrap();
        assert_eq!(c.records, 1_500_000);
        assert_eq!(c.threshold, 9, "later assignments win");
        assert_eq!(c.ratio, 1e-3);
        assert!(!c.clean);
        assert_eq!(c.name, "berlinmod");
        assert_eq!(
            c.strategies,
            vec!["Eager".parse::<Strategy>().unwrap(), "UM+FMBV".parse().unwrap()]
        );
        assert_eq!(c.sizes, vec![0.25, 1.0]);
        assert_eq!(c.storage.device, DeviceKind::File);
        assert_eq!(c.storage.profile, lsmlab_engine::storage::DeviceProfile::Hdd);
        assert_eq!(c.storage.file_dir, dir.path());
    }

    #[test]
    fn config_serialises_with_flat_keys_and_text_values() {
        let map = to_map(&demo()).unwrap();
        assert_eq!(map["strategies"], serde_json::json!(["Eager", "UM+F"]));
        assert_eq!(map["profile"], "nvme");
        assert_eq!(map["device"], "mem");
        assert_eq!(map["file_dir"], "");
        assert_eq!(map["cache_pages"], 16);
        let keys: Vec<&str> = keys(&demo()).unwrap().iter().map(|k| k.key).collect();
        assert_eq!(keys.len(), map.len());
        assert_eq!(from_map::<Demo>(&map).unwrap(), demo());
    }

    #[test]
    fn unknown_keys_are_refused_listing_the_valid_ones() {
        let e = err(&["recods=5"]);
        assert!(e.contains("`recods`"), "{e}");
        for key in ["records", "threshold", "strategies", "page_size", "profile"] {
            assert!(e.contains(key), "{e}");
        }
        // serde refuses them too, flattened fields or not
        let mut map = to_map(&demo()).unwrap();
        map.insert("bogus".into(), Value::from(1));
        assert!(from_map::<Demo>(&map).is_err());
    }

    #[test]
    fn values_that_do_not_parse_name_key_value_and_type() {
        for (arg, needles) in [
            ("records=many", &["records", "many", "integer"][..]),
            ("ratio=nan", &["ratio", "nan", "number"]),
            ("ratio=inf", &["ratio", "inf", "number"]),
            ("clean=maybe", &["clean", "maybe", "bool"]),
            ("sizes=0.1,big", &["sizes", "big", "number"]),
            ("records", &["key=value"]),
        ] {
            let e = err(&[arg]);
            for needle in needles {
                assert!(e.contains(needle), "{arg}: `{e}` lacks `{needle}`");
            }
        }
    }

    #[test]
    fn integers_are_never_truncated() {
        let e = err(&["threshold=4294967297"]);
        assert!(
            e.contains("`threshold`") && e.contains("4294967297") && e.contains("from 0 to 4294967295"),
            "{e}"
        );
        let e = err(&["records=-3"]);
        assert!(
            e.contains("`records`") && e.contains("-3") && e.contains("from 0 to"),
            "{e}"
        );
        let e = err(&["records=99999999999999999999999"]);
        assert!(e.contains("records") && e.contains("integer"), "{e}");
    }

    #[test]
    fn choices_and_ranges_name_the_choices() {
        let e = err(&["device=tape"]);
        assert!(
            e.contains("device") && e.contains("tape") && e.contains("mem"),
            "{e}"
        );
        let e = err(&["profile=floppy"]);
        assert!(
            e.contains("profile") && e.contains("floppy") && e.contains("sata-ssd"),
            "{e}"
        );
        let e = err(&["strategies=Eager,UM+Q"]);
        assert!(e.contains("strategies") && e.contains("UM+Q"), "{e}");
        let e = err(&["threshold=0"]);
        assert!(
            e.contains("threshold") && e.contains("`0`") && e.contains("at least 1"),
            "{e}"
        );
        let e = err(&["sizes=0.5,2"]);
        assert!(
            e.contains("sizes") && e.contains("`2`") && e.contains("(0, 1]"),
            "{e}"
        );
        let e = err(&["page_size=100"]);
        assert!(e.contains("page_size") && e.contains("100"), "{e}");
    }

    #[test]
    fn a_file_is_the_base_and_sets_go_on_top() {
        let path = Path::new("demo.json");
        let file = ConfigFile::from_value(
            path,
            serde_json::json!({"records": 5, "threshold": 3, "data": [{"path": "x.csv", "skip_malformed": true}],
                               "derived": {"anything": 1}}),
        )
        .unwrap();
        assert_eq!(file.data.len(), 1);
        let overlay = Overlay {
            file: Some(file),
            sets: vec!["threshold=4".into()],
        };
        let c = resolve(&demo(), &overlay).unwrap();
        assert_eq!((c.records, c.threshold), (5, 4));

        let bad = ConfigFile::from_value(path, serde_json::json!({"threshold": 4294967297u64})).unwrap();
        let e = format!(
            "{:#}",
            resolve(
                &demo(),
                &Overlay {
                    file: Some(bad),
                    sets: vec![]
                }
            )
            .unwrap_err()
        );
        assert!(e.contains("threshold") && e.contains("4294967295"), "{e}");
        let unknown = ConfigFile::from_value(path, serde_json::json!({"nope": 1})).unwrap();
        let e = format!(
            "{:#}",
            resolve(
                &demo(),
                &Overlay {
                    file: Some(unknown),
                    sets: vec![]
                }
            )
            .unwrap_err()
        );
        assert!(e.contains("demo.json") && e.contains("`nope`"), "{e}");
    }

    #[test]
    fn numbers_written_as_text_by_older_results_are_read_like_set_values() {
        let path = Path::new("old.json");
        let file = ConfigFile::from_value(
            path,
            serde_json::json!({"sizes": ["0.25", "1"], "records": "1_000", "clean": "no", "name": "7"}),
        )
        .unwrap();
        let overlay = Overlay {
            file: Some(file),
            sets: vec![],
        };
        let c = resolve(&demo(), &overlay).unwrap();
        assert_eq!(
            (c.sizes.as_slice(), c.records, c.clean),
            (&[0.25, 1.0][..], 1000, false)
        );
        assert_eq!(c.name, "7");
        let bad = ConfigFile::from_value(path, serde_json::json!({"sizes": ["0.25", "big"]})).unwrap();
        let overlay = Overlay {
            file: Some(bad),
            sets: vec![],
        };
        let e = format!("{:#}", resolve(&demo(), &overlay).unwrap_err());
        assert!(
            e.contains("old.json") && e.contains("sizes") && e.contains("big"),
            "{e}"
        );
    }

    #[test]
    fn a_whole_result_file_gives_its_config_and_toml_reads_too() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        std::fs::write(
            &json,
            r#"{"schema": "lsmlab.result/1", "config": {"records": 7}}"#,
        )
        .unwrap();
        assert_eq!(ConfigFile::read(&json).unwrap().values["records"], 7);
        let toml = dir.path().join("c.toml");
        std::fs::write(&toml, "records = 9\nstrategies = [\"UM\"]\nratio = 0.25\n").unwrap();
        let file = ConfigFile::read(&toml).unwrap();
        let c = resolve(
            &demo(),
            &Overlay {
                file: Some(file),
                sets: vec![],
            },
        )
        .unwrap();
        assert_eq!((c.records, c.ratio), (9, 0.25));
        assert_eq!(c.strategies, vec!["UM".parse().unwrap()]);
        std::fs::write(&json, "[1, 2]").unwrap();
        assert!(ConfigFile::read(&json).is_err());
    }

    #[test]
    fn repeats_duplicate_keys_case_and_byte_order_marks() {
        let e = err(&["strategies=UM,Eager,um"]);
        assert!(
            e.contains("`strategies`") && e.contains("`UM` is listed twice"),
            "{e}"
        );
        let e = err(&["sizes=0.5,0.5"]);
        assert!(
            e.contains("`sizes`") && e.contains("`0.5` is listed twice"),
            "{e}"
        );
        // Choice names in any case; free text (a path) is never folded.
        let c = resolve(&demo(), &sets(&["device=MEM", "profile=HDD", "strategies=eager"])).unwrap();
        assert_eq!(c.storage.device, DeviceKind::Mem);
        assert_eq!(c.storage.profile, lsmlab_engine::storage::DeviceProfile::Hdd);
        let c = resolve(&demo(), &sets(&["name=Chicago"])).unwrap();
        assert_eq!(c.name, "Chicago");
        let dir = tempfile::tempdir().unwrap();
        let twice = dir.path().join("twice.json");
        std::fs::write(&twice, r#"{"records": 1, "nested": {"a": 1, "a": 2}}"#).unwrap();
        let e = format!("{:#}", ConfigFile::read(&twice).unwrap_err());
        assert!(
            e.contains("twice.json") && e.contains("key `a` appears twice (1 and 2)"),
            "{e}"
        );
        let bom = dir.path().join("bom.json");
        std::fs::write(&bom, "\u{feff}{\"records\": 5}").unwrap();
        assert_eq!(ConfigFile::read(&bom).unwrap().values["records"], 5);
        let result = dir.path().join("r.json");
        std::fs::write(
            &result,
            r#"{"schema": "s", "experiment": "rum-update", "config": {}}"#,
        )
        .unwrap();
        let file = ConfigFile::read(&result).unwrap();
        file.check_experiment("rum-update").unwrap();
        let e = file.check_experiment("rum-query").unwrap_err().to_string();
        assert!(e.contains("a result of `rum-update`, not of `rum-query`"), "{e}");
    }

    #[test]
    fn assignment_needs_an_equals_sign() {
        assert_eq!(parse_assignment("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert_eq!(parse_assignment("a=").unwrap(), ("a".into(), "".into()));
        assert!(parse_assignment("novalue").is_err());
        assert!(parse_assignment("=5").is_err());
    }

    #[test]
    fn help_and_fields_must_agree() {
        #[derive(Clone, Serialize, Deserialize)]
        struct Undocumented {
            a: u32,
            b: u32,
        }
        impl ConfigPart for Undocumented {
            fn help() -> Vec<KeyHelp> {
                vec![("a", "documented")]
            }
        }
        impl Config for Undocumented {}
        let e = keys(&Undocumented { a: 1, b: 2 }).unwrap_err().to_string();
        assert!(e.contains("`b`"), "{e}");
    }

    #[test]
    fn display_value_is_the_set_syntax() {
        let map = to_map(&demo()).unwrap();
        assert_eq!(display_value(&map["strategies"]), "Eager,UM+F");
        assert_eq!(display_value(&map["sizes"]), "0.001,0.5");
        assert_eq!(display_value(&map["name"]), "chicago");
        assert_eq!(type_name(&map["ratio"]), "number");
        assert_eq!(type_name(&map["records"]), "integer");
    }
}
