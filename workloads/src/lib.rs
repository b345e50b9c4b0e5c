//! lsmlab-workloads: the record streams lsmlab's experiments replay, from synthetic generators
//! (deterministic for a seed) or from real data files.
//!
//! - [`Trajectories`]: records of moving objects in time order, and [`Trajectories::to_ops`], the
//!   insert-then-updates stream the LSM RUM-tree paper ingests
//!   (`docs/papers/rum.md#the-paper-in-brief`, "Datasets");
//! - [`gen`]: Gowalla-, Chicago-taxi- and BerlinMOD-like generators ([`generate`], [`generate_spec`]
//!   for a chosen number of objects, [`paper_objects`], [`DATASETS`]);
//! - [`load`](mod@load): loaders for SNAP Gowalla, the Chicago taxi CSV and any (object, time, x, y) CSV/TSV,
//!   plain or gzipped;
//! - [`kv`]: key-value workloads: YCSB's zipfian, scrambled zipfian and skewed-latest generators
//!   ([`kv::Zipfian`], [`kv::ScrambledZipfian`], [`kv::Latest`]) and the Leaper paper's three
//!   workloads (`docs/papers/leaper.md#the-paper-in-brief`, the paper's Table 2) as deterministic
//!   op streams ([`KvWorkload`], [`KvStream`] of [`TimedOp`]s carrying a [`KvOp`]);
//! - [`ts`]: out-of-order time-series streams (DIOL, `docs/papers/diol.md#the-project-in-brief`);
//! - [`ycsb`] and [`graph`]: YCSB's core workloads and graphs for OEP 7
//!   (`docs/papers/oep7.md#the-proposal-in-brief`);
//! - [`seeded_rng`]: the per-component random streams everything random here is drawn from.
//!
//! Nothing here needs the real data files in `shared/data`; only tests read them, and skip when
//! they are absent.

#![forbid(unsafe_code)]
// Tests may unwrap: a panic there is the failure report.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod error;
pub mod gen;
pub mod graph;
pub mod kv;
pub mod load;
mod rng;
mod sample;
pub mod time;
mod trajectories;
pub mod ts;
pub mod ycsb;

pub use error::WorkloadError;
pub use gen::{default_objects, generate, generate_spec, paper_objects, paper_records, GenSpec, DATASETS};
pub use kv::{KvOp, KvStream, KvWorkload, TimedOp};
pub use load::{load, ColumnRef, CsvColumns, Format, LoadOptions, LoadReport};
pub use rng::{fnv1a64, seeded_rng, splitmix64};
pub use trajectories::{OpStream, Record, SpatialOp, Trajectories};
