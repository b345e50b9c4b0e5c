//! YCSB's core workloads A-F for the OEP 7 experiments
//! (`docs/papers/oep7.md#the-proposal-in-brief`), as YCSB's `site.ycsb.workloads.CoreWorkload` and
//! its `workloads/workload[a-f]` property files define them (brianfrankcooper/YCSB; the algorithm,
//! not the code):
//!
//! | workload | read | update | insert | scan | read-modify-write | request distribution |
//! |---|---|---|---|---|---|---|
//! | A | 0.50 | 0.50 | | | | zipfian |
//! | B | 0.95 | 0.05 | | | | zipfian |
//! | C | 1.00 | | | | | zipfian |
//! | D | 0.95 | | 0.05 | | | latest |
//! | E | | | 0.05 | 0.95 (1..=100 records, uniform) | | zipfian |
//! | F | 0.50 | | | | 0.50 | zipfian |
//!
//! - Records have `fieldcount = 10` fields of `fieldlength = 100` bytes; reads read every field
//!   (`readallfields = true`), updates and read-modify-writes write one field chosen uniformly
//!   (`writeallfields = false`).
//! - Keys are `"user" + fnvhash64(keynum)` (`insertorder = hashed`, YCSB's default).
//! - The operation is drawn as YCSB's `DiscreteGenerator` draws it: one uniform number against the
//!   cumulative weights in the order read, update, insert, scan, read-modify-write.
//! - `zipfian` is YCSB's `ScrambledZipfianGenerator(0, recordcount + expectednewkeys)` with
//!   `expectednewkeys = operationcount x insertproportion x 2` ([`ScrambledZipfian`] over
//!   `recordcount + expectednewkeys + 1` items); a draw beyond the newest inserted key is drawn
//!   again (`nextKeynum`). `latest` is `SkewedLatestGenerator` over the insert counter
//!   ([`Latest`]).
//! - Inserts take the next key of the insert counter (starting at `recordcount`), growing the
//!   key space that later requests draw from.

use crate::kv::{ycsb_fnvhash64, Latest, ScrambledZipfian};
use crate::{seeded_rng, WorkloadError};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// YCSB's `fieldcount` default.
pub const FIELD_COUNT: usize = 10;
/// YCSB's `fieldlength` default.
pub const FIELD_LENGTH: usize = 100;
/// Workload E's `maxscanlength`.
pub const MAX_SCAN_LENGTH: u64 = 100;

/// One of YCSB's six core workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Workload {
    #[serde(rename = "ycsb-a")]
    /// Update heavy: 50% reads, 50% updates.
    A,
    #[serde(rename = "ycsb-b")]
    /// Read mostly: 95% reads, 5% updates.
    B,
    #[serde(rename = "ycsb-c")]
    /// Read only.
    C,
    #[serde(rename = "ycsb-d")]
    /// Read latest: 95% reads of recent inserts, 5% inserts.
    D,
    #[serde(rename = "ycsb-e")]
    /// Short ranges: 95% scans, 5% inserts.
    E,
    #[serde(rename = "ycsb-f")]
    /// Read-modify-write: 50% reads, 50% read-modify-writes.
    F,
}

/// Request distribution of a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Scrambled zipfian over the existing keys.
    Zipfian,
    /// Skewed towards the most recently inserted keys.
    Latest,
}

/// Operation proportions, in YCSB's order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Proportions {
    /// Share of reads.
    pub read: f64,
    /// Share of updates.
    pub update: f64,
    /// Share of inserts.
    pub insert: f64,
    /// Share of scans.
    pub scan: f64,
    /// Share of read-modify-writes.
    pub read_modify_write: f64,
}

impl Workload {
    /// Every core workload, A to F.
    pub const ALL: [Workload; 6] = [
        Workload::A,
        Workload::B,
        Workload::C,
        Workload::D,
        Workload::E,
        Workload::F,
    ];

    /// The name configurations and result rows use (`ycsb-a` ... `ycsb-f`).
    pub fn name(self) -> &'static str {
        match self {
            Workload::A => "ycsb-a",
            Workload::B => "ycsb-b",
            Workload::C => "ycsb-c",
            Workload::D => "ycsb-d",
            Workload::E => "ycsb-e",
            Workload::F => "ycsb-f",
        }
    }

    /// The proportions of `workloads/workload[a-f]`.
    pub fn proportions(self) -> Proportions {
        let p = |read, update, insert, scan, read_modify_write| Proportions {
            read,
            update,
            insert,
            scan,
            read_modify_write,
        };
        match self {
            Workload::A => p(0.5, 0.5, 0.0, 0.0, 0.0),
            Workload::B => p(0.95, 0.05, 0.0, 0.0, 0.0),
            Workload::C => p(1.0, 0.0, 0.0, 0.0, 0.0),
            Workload::D => p(0.95, 0.0, 0.05, 0.0, 0.0),
            Workload::E => p(0.0, 0.0, 0.05, 0.95, 0.0),
            Workload::F => p(0.5, 0.0, 0.0, 0.0, 0.5),
        }
    }

    /// The workload's request distribution (latest for D, zipfian for the others).
    pub fn distribution(self) -> Distribution {
        if self == Workload::D {
            Distribution::Latest
        } else {
            Distribution::Zipfian
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = WorkloadError;
    fn from_str(s: &str) -> Result<Self, WorkloadError> {
        let t = s.trim().to_ascii_lowercase();
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == t || w.name().trim_start_matches("ycsb-") == t)
            .ok_or_else(|| WorkloadError::InvalidParameter {
                generator: "ycsb",
                reason: format!(
                    "unknown workload {s:?}: expected one of ycsb-a, ycsb-b, ycsb-c, ycsb-d, ycsb-e, ycsb-f"
                ),
            })
    }
}

/// YCSB's `buildKeyName(keynum, zeropadding = 1, orderedinserts = false)`.
pub fn key_name(keynum: u64) -> String {
    format!("user{}", ycsb_fnvhash64(keynum))
}

/// One operation of a YCSB run. Keys are key numbers; [`key_name`] gives the key YCSB sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Read every field of a record.
    Read {
        /// The record read.
        key: u64,
    },
    /// Write one field.
    Update {
        /// The record written.
        key: u64,
        /// The field written, `0..FIELD_COUNT`.
        field: usize,
        /// The field's new value.
        value: Vec<u8>,
    },
    /// Insert a new record with every field.
    Insert {
        /// The new record (the next insert key).
        key: u64,
    },
    /// Read `len` records in key order from the start key.
    Scan {
        /// The first key read.
        start: u64,
        /// Records read, `1..=MAX_SCAN_LENGTH`.
        len: usize,
    },
    /// Read every field, then write one.
    ReadModifyWrite {
        /// The record read and written.
        key: u64,
        /// The field written, `0..FIELD_COUNT`.
        field: usize,
        /// The field's new value.
        value: Vec<u8>,
    },
}

/// The fields of a new record (`buildValues`): 10 x 100 bytes, deterministic for the key.
pub fn record_fields(keynum: u64) -> Vec<Vec<u8>> {
    let mut rng = seeded_rng(keynum, "ycsb/record");
    (0..FIELD_COUNT).map(|_| field_value(&mut rng)).collect()
}

/// One field value: printable bytes, as YCSB's `RandomByteIterator` produces.
fn field_value(rng: &mut Xoshiro256PlusPlus) -> Vec<u8> {
    (0..FIELD_LENGTH).map(|_| rng.random_range(b' '..=b'~')).collect()
}

/// A deterministic stream of YCSB operations (a single client thread).
#[derive(Clone, Debug)]
pub struct Stream {
    workload: Workload,
    props: Proportions,
    rng: Xoshiro256PlusPlus,
    zipf: Option<ScrambledZipfian>,
    latest: Option<Latest>,
    /// The insert counter's next key (`transactioninsertkeysequence`).
    next_insert: u64,
}

impl Stream {
    /// The run phase of `workload` over `record_count` loaded records and `operation_count`
    /// operations (which sizes the zipfian's key space, as in YCSB).
    pub fn new(
        workload: Workload,
        record_count: u64,
        operation_count: u64,
        seed: u64,
    ) -> Result<Self, WorkloadError> {
        if record_count < 2 {
            return Err(WorkloadError::InvalidParameter {
                generator: "ycsb",
                reason: format!("recordcount must be at least 2, got {record_count}"),
            });
        }
        let props = workload.proportions();
        let (zipf, latest) = match workload.distribution() {
            Distribution::Zipfian => {
                let expected_new = (operation_count as f64 * props.insert * 2.0) as u64;
                (
                    Some(ScrambledZipfian::new(record_count + expected_new + 1)?),
                    None,
                )
            }
            Distribution::Latest => (None, Some(Latest::new(record_count - 1)?)),
        };
        Ok(Stream {
            workload,
            props,
            rng: seeded_rng(seed, &format!("ycsb/{}", workload.name())),
            zipf,
            latest,
            next_insert: record_count,
        })
    }

    /// The workload this generator draws.
    pub fn workload(&self) -> Workload {
        self.workload
    }

    /// The newest key (the insert counter's last value).
    pub fn newest(&self) -> u64 {
        self.next_insert - 1
    }

    /// `nextKeynum`: a key that exists.
    pub fn next_key(&mut self) -> u64 {
        let newest = self.newest();
        if let Some(l) = self.latest.as_mut() {
            return l.sample(&mut self.rng, newest);
        }
        #[allow(clippy::expect_used)] // the constructor sets `latest` or `zipf` for every distribution
        let z = self.zipf.as_ref().expect("zipfian or latest");
        loop {
            let k = z.sample(&mut self.rng);
            if k <= newest {
                return k;
            }
        }
    }

    fn field(&mut self) -> (usize, Vec<u8>) {
        let f = self.rng.random_range(0..FIELD_COUNT);
        (f, field_value(&mut self.rng))
    }

    /// The next operation.
    pub fn next_op(&mut self) -> Op {
        let p = self.props;
        let total = p.read + p.update + p.insert + p.scan + p.read_modify_write;
        let mut u = self.rng.random::<f64>() * total;
        let weights = [p.read, p.update, p.insert, p.scan, p.read_modify_write];
        let mut which = weights.len() - 1;
        for (i, w) in weights.iter().enumerate() {
            if *w > 0.0 && u < *w {
                which = i;
                break;
            }
            u -= w;
        }
        match which {
            0 => Op::Read { key: self.next_key() },
            1 => {
                let key = self.next_key();
                let (field, value) = self.field();
                Op::Update { key, field, value }
            }
            2 => {
                let key = self.next_insert;
                self.next_insert += 1;
                Op::Insert { key }
            }
            3 => {
                let start = self.next_key();
                let len = self.rng.random_range(1..=MAX_SCAN_LENGTH) as usize;
                Op::Scan { start, len }
            }
            _ => {
                let key = self.next_key();
                let (field, value) = self.field();
                Op::ReadModifyWrite { key, field, value }
            }
        }
    }
}

#[cfg(test)]
mod tests;
