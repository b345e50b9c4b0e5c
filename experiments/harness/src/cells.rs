//! A run as a grid of cells (dataset x strategy x parameter x seed), the unit of `--resume`,
//! `--shard` and `--repeat`.
//!
//! An experiment declares its grid with [`TypedExperiment::cells`](crate::experiment::TypedExperiment::cells):
//! each [`Cell`] picks one element of some of the config's list-valued keys (`datasets`,
//! `strategies`, ...), and the runner runs the experiment once per cell on the config with those
//! lists narrowed to the picked element, and may set other keys outright ([`Cell::set`]: a list
//! emptied so that a part of the run stays out of this cell). The default is one cell that narrows
//! nothing, which is exactly a whole run. An experiment may only split a key into cells when its run computes
//! nothing across that key's values (rum-query, for instance, checks every strategy's answers
//! against the first strategy's, so its strategies stay in one cell).
//!
//! Cells are enumerated in the order of the run's own loops (the first key outermost), so a run
//! made of cells writes its rows in the same order as one whole run.

use std::fmt;

use anyhow::{bail, Context};
use serde_json::Value;

use crate::config::ConfigMap;
use crate::rows::value_text;

/// One cell: for each named list-valued key, the index of the element this cell runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    /// For each list-valued key the cell narrows, in grid order: the key and the element's index.
    pub picks: Vec<(String, usize)>,
    /// Keys the cell sets to a value of its own after narrowing (not part of its label): an
    /// experiment whose grid is not a plain product empties the lists of the parts of the run a
    /// cell leaves to others, or turns off what only one of them runs.
    pub sets: Vec<(String, Value)>,
}

impl Cell {
    /// The cell that narrows nothing: the whole run.
    pub fn whole() -> Cell {
        Cell::default()
    }

    /// The cartesian product of the given list keys, each with its length, first key outermost.
    /// A key with length 0 gives no cells at all (the run would have no rows for it either).
    ///
    /// ```
    /// use lsmlab_harness::cells::Cell;
    /// let cells = Cell::grid(&[("datasets", 2), ("strategies", 3)]);
    /// assert_eq!(cells.len(), 6);
    /// assert_eq!(cells[1].picks, vec![("datasets".to_string(), 0), ("strategies".to_string(), 1)]);
    /// ```
    pub fn grid(keys: &[(&str, usize)]) -> Vec<Cell> {
        let mut cells = vec![Cell::whole()];
        for &(key, len) in keys {
            cells = cells
                .into_iter()
                .flat_map(|cell| {
                    (0..len).map(move |i| {
                        let mut picks = cell.picks.clone();
                        picks.push((key.to_string(), i));
                        Cell {
                            picks,
                            sets: Vec::new(),
                        }
                    })
                })
                .collect();
        }
        cells
    }

    /// This cell with `key` set to `value` in its config ([`Cell::sets`]).
    pub fn set(mut self, key: &str, value: Value) -> Cell {
        self.sets.push((key.to_string(), value));
        self
    }

    /// `config` with every picked list narrowed to its picked element and every set key set.
    pub fn narrow(&self, config: &ConfigMap) -> anyhow::Result<ConfigMap> {
        let mut narrowed = config.clone();
        for (key, i) in &self.picks {
            let value = match config.get(key) {
                Some(Value::Array(items)) => items.get(*i).cloned().with_context(|| {
                    format!("cell picks element {i} of `{key}`, which has {}", items.len())
                })?,
                Some(other) => {
                    bail!("cell picks from `{key}`, which is {other}, not a list (a bug in the experiment)")
                }
                None => bail!("cell picks from `{key}`, which the config lacks (a bug in the experiment)"),
            };
            narrowed.insert(key.clone(), Value::Array(vec![value]));
        }
        for (key, value) in &self.sets {
            if !config.contains_key(key) {
                bail!("cell sets `{key}`, which the config lacks (a bug in the experiment)");
            }
            narrowed.insert(key.clone(), value.clone());
        }
        Ok(narrowed)
    }

    /// `datasets=berlinmod strategies=UM+F`, or `whole run` for the cell that narrows nothing.
    pub fn label(&self, config: &ConfigMap) -> String {
        if self.picks.is_empty() {
            return "whole run".to_string();
        }
        self.picks
            .iter()
            .map(|(key, i)| {
                let value = config
                    .get(key)
                    .and_then(|v| v.as_array())
                    .and_then(|items| items.get(*i))
                    .map(value_text)
                    .unwrap_or_else(|| format!("#{i}"));
                format!("{key}={value}")
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `--shard K/N`: this process runs the cells whose 0-based grid index `i` has `i % N == K - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    /// 1-based: `1..=count`.
    pub index: usize,
    /// How many shards the grid is split into (at least 1).
    pub count: usize,
}

impl Shard {
    /// Whether this shard runs the cell with 0-based grid index `cell`.
    pub fn runs(&self, cell: usize) -> bool {
        cell % self.count == self.index - 1
    }

    /// The file-name part of a shard's result, `shard-2-of-4`.
    pub fn suffix(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("`{s}` is not a shard: expected K/N with 1 <= K <= N, e.g. 2/4");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = k.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// The seed of repetition `r` (0-based) of a cell under `--repeat`: repetition 0 runs with the
/// run's own seed, so `--repeat 1` is a plain run; repetition `r >= 1` runs with
/// `splitmix64(seed + r)` (the SplitMix64 finaliser of Steele, Lea and Flood, 2014), so repetitions
/// are decorrelated and reproducible from the recorded seed.
pub fn repeat_seed(seed: u64, r: u32) -> u64 {
    if r == 0 {
        return seed;
    }
    let mut z = seed
        .wrapping_add(u64::from(r))
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_is_nested_first_key_outermost_and_narrows_lists() {
        let config: ConfigMap = serde_json::from_value(serde_json::json!({
            "datasets": ["a", "b"], "strategies": ["Eager", "UM+F", "UM+M"], "records": 10
        }))
        .unwrap();
        let cells = Cell::grid(&[("datasets", 2), ("strategies", 3)]);
        let labels: Vec<String> = cells.iter().map(|c| c.label(&config)).collect();
        assert_eq!(labels[0], "datasets=a strategies=Eager");
        assert_eq!(labels[5], "datasets=b strategies=UM+M");
        let narrowed = cells[4].narrow(&config).unwrap();
        assert_eq!(narrowed["datasets"], serde_json::json!(["b"]));
        assert_eq!(narrowed["strategies"], serde_json::json!(["UM+F"]));
        assert_eq!(narrowed["records"], 10);
        assert_eq!(Cell::whole().narrow(&config).unwrap(), config);
        assert_eq!(Cell::whole().label(&config), "whole run");
        assert!(Cell::grid(&[("datasets", 0)]).is_empty());
        let bad = Cell {
            picks: vec![("records".into(), 0)],
            sets: Vec::new(),
        };
        assert!(format!("{:#}", bad.narrow(&config).unwrap_err()).contains("not a list"));
        // A set key replaces its value after narrowing and stays out of the label.
        let set = cells[4].clone().set("datasets", serde_json::json!([]));
        let narrowed = set.narrow(&config).unwrap();
        assert_eq!(narrowed["datasets"], serde_json::json!([]));
        assert_eq!(narrowed["strategies"], serde_json::json!(["UM+F"]));
        assert_eq!(set.label(&config), "datasets=b strategies=UM+F");
        let unknown = Cell::whole().set("nope", serde_json::json!(1));
        assert!(format!("{:#}", unknown.narrow(&config).unwrap_err()).contains("lacks"));
    }

    #[test]
    fn shards_partition_the_cells() {
        let shards: Vec<Shard> = (1..=3).map(|k| format!("{k}/3").parse().unwrap()).collect();
        for cell in 0..10 {
            assert_eq!(shards.iter().filter(|s| s.runs(cell)).count(), 1);
        }
        assert!(shards[0].runs(0) && shards[0].runs(3) && shards[2].runs(2));
        for bad in ["0/3", "4/3", "1/0", "2", "a/b", ""] {
            let err = bad.parse::<Shard>().unwrap_err();
            assert!(err.contains("K/N"), "{bad}: {err}");
        }
        assert_eq!(shards[1].suffix(), "shard-2-of-3");
    }

    #[test]
    fn repeat_seeds_start_at_the_run_seed_and_differ() {
        assert_eq!(repeat_seed(42, 0), 42);
        let seeds: Vec<u64> = (0..50).map(|r| repeat_seed(42, r)).collect();
        let mut unique = seeds.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), seeds.len());
        assert_eq!(repeat_seed(42, 1), repeat_seed(42, 1));
        assert_ne!(repeat_seed(42, 1), repeat_seed(43, 1));
    }
}
