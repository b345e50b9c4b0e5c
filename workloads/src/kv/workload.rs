//! The Leaper paper's workloads (PVLDB 13(11), 2020, Section 7.1, Table 2) as deterministic op
//! streams.
//!
//! | name         | point | range | update | insert | zipf | table size |
//! |--------------|-------|-------|--------|--------|------|------------|
//! | `synthetic`  | 75%   | 0%    | 20%    | 5%     | 0.5  | 20 M       |
//! | `e-commerce` | 75%   | 10%   | 10%    | 5%     | 0.3  | 10 M       |
//! | `messaging`  | 40%   | 0%    | 35%    | 25%    | 0.9  | 8 M        |
//!
//! The synthetic workload is SysBench's (the paper generates it with SysBench); e-commerce
//! (Tmall orders) and instant messaging (DingTalk chats) are real traces the paper does not
//! publish, so they are modelled by their Table 2 statistics, plus, for e-commerce, the daily
//! periodicity of its hot set that the paper's Figure 4(c) shows ([`PeriodicShift`]).
//!
//! **Keys** are SysBench's: a single table of ids `0..records` (SysBench numbers them from 1;
//! here from 0), loaded sorted. A point, update or scan draws an id over the *initial* `records`
//! ids with the workload's [`KeyDist`] (plus the hot-set offset, if any). The default,
//! [`KeyDist::SysbenchZipfian`], is SysBench's own `--rand-type=zipfian` with Table 2's zipf
//! factor as `--rand-zipfian-exp` ([`super::sysbench`]): the exact zipf law, the hottest ids the
//! lowest and contiguous, which is where SysBench puts them. That is the synthetic workload as
//! the paper generated it. For e-commerce and messaging the paper publishes no trace, only that
//! their accesses "approximately follow power-law distributions" with the zipf factors of
//! Table 2, plus e-commerce's daily periodicity (Figure 4(c)); they are drawn the same way, so
//! their hot keys share key ranges and blocks as SysBench's do. Neither the locality of the real
//! traces' keys nor SysBench's is a given for every system: [`KeyDist::ScrambledZipfian`] keeps
//! the law and scatters the ranks over the key space (no locality), [`KeyDist::YcsbZipfian`] is
//! YCSB's approximate zipfian over unscrambled ranks (what lsmlab drew before it had SysBench's
//! generators), and [`KeyDist::Special`] is sysbench 1.0's default `--rand-type`. Drawing over
//! the initial ids, not over the ids inserted so far, follows SysBench, whose random ids lie in
//! `1..table_size` for the whole run; inserted ids are then never read nor updated, which changes
//! little because they would sit at the coldest ranks anyway. Inserts append new ids
//! `records, records + 1, ...` (an auto-increment primary key, as SysBench's `oltp_insert`
//! without explicit ids). A scan reads `scan_len` consecutive ids from a drawn start (SysBench's
//! `range_size`, default 100), cut at the largest id existing so far.
//!
//! **Time** is counted in operations: a "day" is [`KvWorkload::day_ops`] operations, and each op
//! carries its time-of-day fraction `(seq mod day_ops) / day_ops` so that Leaper's time features
//! (hour, minute, second of the day) can be computed from it.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::sysbench::{KeyDist, Sysbench};
use super::{value_for, ycsb_fnvhash64, KvOp, Zipfian};
use crate::{seeded_rng, WorkloadError};

/// The share of each op type, in percent of all ops (they must sum to 100).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpShares {
    /// Point lookups.
    pub get: f64,
    /// Range lookups.
    pub scan: f64,
    /// Updates of existing keys.
    pub update: f64,
    /// Inserts of new keys.
    pub insert: f64,
}

impl OpShares {
    /// Shares in percent, checked: each finite and non-negative, summing to 100 (within 1e-6).
    pub fn new(get: f64, scan: f64, update: f64, insert: f64) -> Result<Self, WorkloadError> {
        let s = OpShares {
            get,
            scan,
            update,
            insert,
        };
        s.validate()?;
        Ok(s)
    }

    /// The check [`OpShares::new`] makes.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let named = [
            ("get", self.get),
            ("scan", self.scan),
            ("update", self.update),
            ("insert", self.insert),
        ];
        for (name, v) in named {
            if !v.is_finite() || v < 0.0 {
                return Err(bad(format!(
                    "the {name} share is {v}%; shares must be finite and >= 0"
                )));
            }
        }
        let sum = self.get + self.scan + self.update + self.insert;
        if (sum - 100.0).abs() > 1e-6 {
            return Err(bad(format!(
                "op shares get {} + scan {} + update {} + insert {} sum to {sum}%, not 100%",
                self.get, self.scan, self.update, self.insert
            )));
        }
        Ok(())
    }

    /// Point plus range lookups, in percent.
    pub fn reads(&self) -> f64 {
        self.get + self.scan
    }
}

/// A periodic move of the hot set: the day is cut into `regions` equal parts, and during part
/// `d` (`0 <= d < regions`) every drawn rank `r` maps to id `(r + d·records/regions) mod records`.
/// The hot set thus visits `regions` evenly spaced places of the key space each day and is back
/// at the same place at the same time every day, so the time of day predicts which key ranges are
/// hot. This models the daily periodicity of the paper's e-commerce workload (Figure 4(c)); the
/// paper gives no shape for it, and the step-wise move is this crate's choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeriodicShift {
    /// The number of places the hot set visits per day (>= 1; 1 means no move).
    pub regions: u32,
}

/// A key-value workload: see the module documentation for the key and time model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KvWorkload {
    /// The workload's name (one of [`KvWorkload::ALL`] for the paper's).
    pub name: String,
    /// Op mix in percent.
    pub shares: OpShares,
    /// Zipf constant θ of the key draws (0 is uniform): the exponent of the zipfian
    /// [`KeyDist`]s, in `[0, 1)` for YCSB's and `>= 0` for SysBench's; the other distributions
    /// ignore it.
    pub zipf: f64,
    /// How the read and updated ids are drawn (absent from specs written before lsmlab had
    /// SysBench's generators, which drew YCSB's zipfian).
    #[serde(default = "legacy_key_dist")]
    pub keys: KeyDist,
    /// Initial record count (ids `0..records`).
    pub records: u64,
    /// Keys per scan (SysBench's `range_size`).
    pub scan_len: u64,
    /// Value size in bytes ([`value_for`]).
    pub value_bytes: usize,
    /// Operations per "day" (the period of the time-of-day fraction and of the shift).
    pub day_ops: u64,
    /// The periodic move of the hot set, if any.
    pub shift: Option<PeriodicShift>,
}

/// SysBench's default `range_size`: keys per range query.
pub const DEFAULT_SCAN_LEN: u64 = 100;
/// The paper's key-value pair size (Section 7.3: "a key-value pair size of 200 bytes").
pub const DEFAULT_VALUE_BYTES: usize = 200;
/// Default operations per day: an experiment sets its own so that its training and test phases
/// span whole days.
pub const DEFAULT_DAY_OPS: u64 = 100_000;
/// Default number of places e-commerce's hot set visits per day.
pub const DEFAULT_SHIFT_REGIONS: u32 = 4;

/// What a spec without a `keys` field drew: YCSB's zipfian over unscrambled ranks.
fn legacy_key_dist() -> KeyDist {
    KeyDist::YcsbZipfian
}

fn bad(reason: String) -> WorkloadError {
    WorkloadError::InvalidParameter {
        generator: "kv workload",
        reason,
    }
}

impl KvWorkload {
    /// The paper's workloads, in Table 2's order.
    pub const ALL: [&'static str; 3] = ["synthetic", "e-commerce", "messaging"];

    /// A paper workload by name (Table 2, with the paper's table sizes: scale them with
    /// [`KvWorkload::with_records`]). Unknown names get an error listing the known ones.
    pub fn parse(name: &str) -> Result<Self, WorkloadError> {
        let (canonical, shares, zipf, records, shift) = match name.trim().to_ascii_lowercase().as_str() {
            "synthetic" => ("synthetic", (75.0, 0.0, 20.0, 5.0), 0.5, 20_000_000, None),
            "e-commerce" => (
                "e-commerce",
                (75.0, 10.0, 10.0, 5.0),
                0.3,
                10_000_000,
                Some(PeriodicShift {
                    regions: DEFAULT_SHIFT_REGIONS,
                }),
            ),
            "messaging" => ("messaging", (40.0, 0.0, 35.0, 25.0), 0.9, 8_000_000, None),
            _ => {
                return Err(WorkloadError::UnknownDataset {
                    name: name.to_string(),
                    valid: Self::ALL.iter().map(|s| s.to_string()).collect(),
                })
            }
        };
        let (get, scan, update, insert) = shares;
        Ok(KvWorkload {
            name: canonical.to_string(),
            shares: OpShares {
                get,
                scan,
                update,
                insert,
            },
            zipf,
            keys: KeyDist::SysbenchZipfian,
            records,
            scan_len: DEFAULT_SCAN_LEN,
            value_bytes: DEFAULT_VALUE_BYTES,
            day_ops: DEFAULT_DAY_OPS,
            shift,
        })
    }

    /// Checks every field: shares (see [`OpShares::validate`]), zipf in `[0, 1)`, at least one
    /// record, `scan_len >= 1`, `day_ops >= 1`, shift regions in `1..=records`.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        self.shares.validate()?;
        let ycsb = self.keys == KeyDist::YcsbZipfian;
        if !(self.zipf.is_finite() && self.zipf >= 0.0 && (!ycsb || self.zipf < 1.0)) {
            let hint = if ycsb && self.zipf >= 1.0 {
                " (YCSB's zipfian is undefined at 1.0 and above; use 0.99, or SysBench's zipfian: keys=sysbench-zipfian)"
            } else {
                ""
            };
            let range = if ycsb { "[0, 1)" } else { "[0, inf)" };
            return Err(bad(format!(
                "zipf constant {} is outside {range} for {} keys{hint}",
                self.zipf, self.keys
            )));
        }
        if self.records == 0 {
            return Err(bad("the record count must be at least 1".into()));
        }
        if self.scan_len == 0 {
            return Err(bad("the scan length must be at least 1 key".into()));
        }
        if self.day_ops == 0 {
            return Err(bad("a day must last at least 1 operation".into()));
        }
        if let Some(s) = self.shift {
            if s.regions == 0 || u64::from(s.regions) > self.records {
                return Err(bad(format!(
                    "the periodic shift needs 1..={} regions (one per record at most), got {}",
                    self.records, s.regions
                )));
            }
        }
        Ok(())
    }

    /// The same workload with other op shares (percent; validated).
    pub fn with_shares(
        mut self,
        get: f64,
        scan: f64,
        update: f64,
        insert: f64,
    ) -> Result<Self, WorkloadError> {
        self.shares = OpShares::new(get, scan, update, insert)?;
        Ok(self)
    }

    /// The same workload with range lookups taking `fraction` (in `[0, 1]`) of all lookups, the
    /// read share and the update/insert shares unchanged: the paper's range-query sweep
    /// (Section 7.3.2 A, "the read-write ratio is fixed ... we tune the range query ratio from 0
    /// to 100% of the total read queries").
    pub fn with_range_fraction_of_reads(mut self, fraction: f64) -> Result<Self, WorkloadError> {
        if !(fraction.is_finite() && (0.0..=1.0).contains(&fraction)) {
            return Err(bad(format!(
                "the range fraction of reads must be in [0, 1], got {fraction}"
            )));
        }
        let reads = self.shares.reads();
        self.shares = OpShares::new(
            reads * (1.0 - fraction),
            reads * fraction,
            self.shares.update,
            self.shares.insert,
        )?;
        Ok(self)
    }

    /// The same workload with zipf constant `theta` in `[0, 1)`.
    pub fn with_zipf(mut self, theta: f64) -> Result<Self, WorkloadError> {
        self.zipf = theta;
        self.validate()?;
        Ok(self)
    }

    /// The same workload with its ids drawn by `keys`.
    pub fn with_keys(mut self, keys: KeyDist) -> Result<Self, WorkloadError> {
        self.keys = keys;
        self.validate()?;
        Ok(self)
    }

    /// The same workload over `records` initial records.
    pub fn with_records(mut self, records: u64) -> Result<Self, WorkloadError> {
        self.records = records;
        self.validate()?;
        Ok(self)
    }

    /// The same workload with `scan_len` keys per scan.
    pub fn with_scan_len(mut self, scan_len: u64) -> Result<Self, WorkloadError> {
        self.scan_len = scan_len;
        self.validate()?;
        Ok(self)
    }

    /// The same workload with `value_bytes`-byte values.
    pub fn with_value_bytes(mut self, value_bytes: usize) -> Self {
        self.value_bytes = value_bytes;
        self
    }

    /// The same workload with a day of `day_ops` operations.
    pub fn with_day_ops(mut self, day_ops: u64) -> Result<Self, WorkloadError> {
        self.day_ops = day_ops;
        self.validate()?;
        Ok(self)
    }

    /// The same workload with another periodic shift (`None`: the hot set never moves).
    pub fn with_shift(mut self, shift: Option<PeriodicShift>) -> Result<Self, WorkloadError> {
        self.shift = shift;
        self.validate()?;
        Ok(self)
    }

    /// The time-of-day fraction in `[0, 1)` of op `seq`.
    pub fn time_of_day(&self, seq: u64) -> f64 {
        (seq % self.day_ops) as f64 / self.day_ops as f64
    }

    /// The hot-set region (`0..regions`) op `seq` falls in; 0 without a shift.
    pub fn region(&self, seq: u64) -> u32 {
        match self.shift {
            Some(s) => {
                ((u128::from(seq % self.day_ops) * u128::from(s.regions)) / u128::from(self.day_ops)) as u32
            }
            None => 0,
        }
    }

    /// The id that zipf rank 0 maps to at op `seq` (the start of the hot set); 0 without a shift.
    pub fn hot_offset(&self, seq: u64) -> u64 {
        match self.shift {
            Some(s) => {
                ((u128::from(self.region(seq)) * u128::from(self.records)) / u128::from(s.regions)) as u64
            }
            None => 0,
        }
    }

    /// The initial records in key order, each with its version-0 value: what a store is
    /// bulk-loaded with before the stream starts.
    pub fn initial_records(&self) -> impl Iterator<Item = (u64, Vec<u8>)> + '_ {
        (0..self.records).map(move |k| (k, value_for(k, 0, self.value_bytes)))
    }

    /// The value op `seq` writes for `key` (version `seq + 1`).
    pub fn value_for(&self, key: u64, version: u64) -> Vec<u8> {
        value_for(key, version, self.value_bytes)
    }

    /// The op stream of this workload for `seed` (validates the spec, computes zeta over
    /// `records` items).
    pub fn stream(&self, seed: u64) -> Result<KvStream, WorkloadError> {
        KvStream::new(self, seed)
    }
}

impl std::str::FromStr for KvWorkload {
    type Err = WorkloadError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KvWorkload::parse(s)
    }
}

/// One op of a [`KvStream`] with its place in time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimedOp {
    /// The op's position in the stream, from 0.
    pub seq: u64,
    /// Whole days elapsed before this op (`seq / day_ops`).
    pub day: u64,
    /// The fraction of the day elapsed at this op, in `[0, 1)`.
    pub time_of_day: f64,
    /// The operation.
    pub op: KvOp,
}

impl TimedOp {
    /// The version a write stores ([`value_for`]`(key, version, len)`): `seq + 1`, so that
    /// version 0 stays the bulk-loaded value; `None` for reads.
    pub fn write_version(&self) -> Option<u64> {
        self.op.is_write().then_some(self.seq + 1)
    }
}

/// The infinite, deterministic op stream of a [`KvWorkload`] for a seed: the op type comes from
/// the random stream `kv/<name>/ops` and the keys from `kv/<name>/keys` ([`seeded_rng`]), so a
/// change of shares leaves the sequence of key draws as it was.
#[derive(Clone, Debug)]
pub struct KvStream {
    spec: KvWorkload,
    sampler: Sampler,
    op_rng: Xoshiro256PlusPlus,
    key_rng: Xoshiro256PlusPlus,
    /// Cumulative shares: get, get+scan, get+scan+update (insert takes the rest).
    cum: [f64; 3],
    /// The sum of all shares (100 up to rounding): a draw is uniform in `0..total`, so an op type
    /// with share 0 is never drawn.
    total: f64,
    seq: u64,
    next_id: u64,
}

impl KvStream {
    /// The stream of `spec` for `seed` (see [`KvWorkload::stream`]).
    pub fn new(spec: &KvWorkload, seed: u64) -> Result<Self, WorkloadError> {
        spec.validate()?;
        let s = spec.shares;
        Ok(KvStream {
            sampler: Sampler::new(spec)?,
            op_rng: seeded_rng(seed, &format!("kv/{}/ops", spec.name)),
            key_rng: seeded_rng(seed, &format!("kv/{}/keys", spec.name)),
            cum: [s.get, s.get + s.scan, s.get + s.scan + s.update],
            total: s.get + s.scan + s.update + s.insert,
            seq: 0,
            next_id: spec.records,
            spec: spec.clone(),
        })
    }

    /// The workload this stream draws from.
    pub fn spec(&self) -> &KvWorkload {
        &self.spec
    }

    /// How many ops the stream has yielded (the next op's `seq`).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The number of keys existing now: ids `0..key_count()` (initial records plus inserts).
    pub fn key_count(&self) -> u64 {
        self.next_id
    }

    /// A key drawn at op `seq`: an id of the initial ones by the spec's [`KeyDist`], moved by
    /// the hot-set offset.
    fn draw_key(&mut self) -> u64 {
        let n = self.spec.records;
        let rank = match &self.sampler {
            Sampler::Ycsb(z) => z.sample(&mut self.key_rng),
            Sampler::Sysbench(s) => s.sample(&mut self.key_rng, 0, n - 1),
            Sampler::Scrambled(s) => ycsb_fnvhash64(s.sample(&mut self.key_rng, 0, n - 1)) % n,
        };
        let offset = self.spec.hot_offset(self.seq);
        ((u128::from(rank) + u128::from(offset)) % u128::from(n)) as u64
    }
}

/// The id generator of a [`KeyDist`].
#[derive(Clone, Debug)]
enum Sampler {
    Ycsb(Zipfian),
    Sysbench(Sysbench),
    /// A SysBench zipfian rank hashed over the key space.
    Scrambled(Sysbench),
}

impl Sampler {
    fn new(spec: &KvWorkload) -> Result<Self, WorkloadError> {
        Ok(match (spec.keys, spec.keys.sysbench(spec.zipf)) {
            (KeyDist::ScrambledZipfian, Some(d)) => Sampler::Scrambled(Sysbench::new(d)?),
            (_, Some(d)) => Sampler::Sysbench(Sysbench::new(d)?),
            (_, None) => Sampler::Ycsb(Zipfian::new(spec.records, spec.zipf)?),
        })
    }
}

impl Iterator for KvStream {
    type Item = TimedOp;

    fn next(&mut self) -> Option<TimedOp> {
        let u = self.op_rng.random::<f64>() * self.total;
        let op = if u < self.cum[0] {
            KvOp::Get(self.draw_key())
        } else if u < self.cum[1] {
            let lo = self.draw_key();
            let hi = lo.saturating_add(self.spec.scan_len - 1).min(self.next_id - 1);
            KvOp::Scan { lo, hi }
        } else if u < self.cum[2] {
            KvOp::Update(self.draw_key())
        } else {
            let id = self.next_id;
            self.next_id += 1;
            KvOp::Insert(id)
        };
        let t = TimedOp {
            seq: self.seq,
            day: self.seq / self.spec.day_ops,
            time_of_day: self.spec.time_of_day(self.seq),
            op,
        };
        self.seq += 1;
        Some(t)
    }
}
