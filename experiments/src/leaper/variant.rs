//! Named alternatives to `leaper-online`'s default setup, run beside it so that a result shows
//! which condition a Leaper verdict depends on:
//!
//! - `keys=<dist>`: the workloads' ids drawn by another [`KeyDist`] (`scrambled-zipfian` keeps
//!   the zipf law and removes key locality; `special` is sysbench 1.0's default distribution).
//! - `shape=table2`: the data sized by Table 2's table sizes (20 M, 10 M and 8 M rows of 200 B:
//!   4, 2 and 1.6 GB) instead of §7.3's "initial data size is 10 GB", with the same 3 GB block
//!   cache and 1 GB of memtables. The paper states both; they disagree by a factor 2.5-6, and
//!   the cache / data ratio they give (0.75, 1.5 and 1.9 against 0.3) decides how many of the
//!   cache's misses are capacity misses rather than invalidations.

use std::fmt;
use std::str::FromStr;

use lsmlab_workloads::kv::{KeyDist, KvWorkload};
use serde::{Deserialize, Serialize};

use super::{KvSetup, Workload, PAPER_DATA_BYTES};

/// The record size the paper's data is measured in (§7.3: "a key-value pair size of 200 bytes").
const PAPER_PAIR_BYTES: u64 = 200;

/// One named alternative (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Variant {
    /// The ids drawn by this distribution.
    Keys(KeyDist),
    /// The data sized by Table 2's table sizes, the cache and memtables kept in bytes.
    Table2Shape,
}

impl Variant {
    /// The names `variants` accepts, for help and errors.
    pub const SYNTAX: &'static str = "keys=<sysbench-zipfian|ycsb-zipfian|scrambled-zipfian|special|uniform|gaussian|pareto> or shape=table2";

    /// The setup of `workload` under this variant, from the default `setup`.
    pub(crate) fn apply(&self, setup: &KvSetup, workload: Workload) -> anyhow::Result<KvSetup> {
        let mut s = setup.clone();
        match *self {
            Variant::Keys(k) => s.key_dist = k,
            Variant::Table2Shape => {
                let f = table2_fraction(workload)?;
                s.records = ((setup.records as f64 * f).round() as u64).max(100);
                s.cache_ratio = setup.cache_ratio / f;
                s.memtable_ratio = (setup.memtable_ratio / f).min(1.0);
            }
        }
        s.validate()?;
        Ok(s)
    }

    /// What the variant changes, for the notes.
    pub fn describe(&self) -> String {
        match self {
            Variant::Keys(k) => format!("ids drawn by {k} instead of the default key distribution"),
            Variant::Table2Shape => "records = Table 2's table size x the scale's records / 50 M (the 10 GB of \
                 §7.3 in 200 B pairs), the cache and memtables kept at the default's size in bytes, so cache / data \
                 = 0.3 x 50 M / rows and memtable / data = 0.1 x 50 M / rows"
                .to_string(),
        }
    }
}

/// Table 2's table size of `workload` as a fraction of §7.3's 10 GB of 200 B pairs.
pub(crate) fn table2_fraction(workload: Workload) -> anyhow::Result<f64> {
    let rows = KvWorkload::parse(workload.as_str())?.records;
    Ok(rows as f64 / (PAPER_DATA_BYTES / PAPER_PAIR_BYTES) as f64)
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Variant::Keys(k) => write!(f, "keys={k}"),
            Variant::Table2Shape => f.write_str("shape=table2"),
        }
    }
}

impl FromStr for Variant {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Self> {
        let bad = || anyhow::anyhow!("unknown variant {s:?}: expected {}", Variant::SYNTAX);
        let (key, value) = s.trim().split_once('=').ok_or_else(bad)?;
        match key.trim().to_ascii_lowercase().as_str() {
            "keys" => Ok(Variant::Keys(
                value.parse().map_err(|e| anyhow::anyhow!("variant {s:?}: {e}"))?,
            )),
            "shape" if value.trim().eq_ignore_ascii_case("table2") => Ok(Variant::Table2Shape),
            _ => Err(bad()),
        }
    }
}

impl TryFrom<String> for Variant {
    type Error = anyhow::Error;
    fn try_from(s: String) -> anyhow::Result<Self> {
        s.parse()
    }
}

impl From<Variant> for String {
    fn from(v: Variant) -> String {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Scale;

    #[test]
    fn variants_parse_print_and_refuse_what_they_do_not_know() {
        for text in ["keys=scrambled-zipfian", "keys=special", "shape=table2"] {
            let v: Variant = text.parse().unwrap();
            assert_eq!(v.to_string(), text);
        }
        assert_eq!(
            "KEYS = Special".parse::<Variant>().unwrap(),
            Variant::Keys(KeyDist::Special)
        );
        for bad in ["keys", "keys=zipf", "shape=table3", "cache=0.5"] {
            let e = bad.parse::<Variant>().unwrap_err().to_string();
            assert!(e.contains(bad.trim()), "{e}");
        }
    }

    #[test]
    fn table2_shape_keeps_the_cache_and_memtables_in_bytes() {
        let setup = KvSetup::defaults(Scale::Small);
        let v = Variant::Table2Shape;
        // synthetic: 20 M of 50 M rows -> 0.4 of the records, cache / data 0.3 / 0.4 = 0.75
        let s = v.apply(&setup, Workload::Synthetic).unwrap();
        assert_eq!(s.records, 80_000);
        assert!((s.cache_ratio - 0.75).abs() < 1e-12 && (s.memtable_ratio - 0.25).abs() < 1e-12);
        // messaging: 8 M rows -> the cache is 1.875 x the data
        let m = v.apply(&setup, Workload::Messaging).unwrap();
        assert_eq!(m.records, 32_000);
        assert!((m.cache_ratio - 1.875).abs() < 1e-12);
        let bytes = |s: &KvSetup| s.records as f64 * s.cache_ratio;
        assert!(
            (bytes(&m) - bytes(&setup)).abs() < 1e-6,
            "the cache's size is kept"
        );
        let k = Variant::Keys(KeyDist::Special)
            .apply(&setup, Workload::Synthetic)
            .unwrap();
        assert_eq!((k.key_dist, k.records), (KeyDist::Special, setup.records));
    }
}
