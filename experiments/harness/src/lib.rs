//! lsmlab's harness: everything an experiment runs on, and nothing about any paper.
//!
//! The pieces meet only through result files (`docs/design.md#what-flows-where`): [`experiment`] is
//! the plug-in contract, with [`config`] (typed parameters and the shared storage testbed),
//! [`scale`], [`rows`], [`cells`] and [`measure`] (latency recorder, interval series) as its parts;
//! [`runner`] resolves configs, runs and writes [`result`] files ([`merge`], [`compare`] and
//! [`repeat`] work on them), [`data`] reads users' data files, [`plot`] draws figures, [`claims`]
//! judges claims and [`report`] writes REPORT.md. The papers' experiments live in the crate above
//! (`lsmlab`), which hands the harness its experiments and claim files; Cargo refuses an import
//! from here to there.

#![forbid(unsafe_code)]
// Tests may unwrap: a panic there is the failure report.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod atomic;
pub mod bench;
pub mod cells;
pub mod claims;
pub mod compare;
pub mod config;
pub mod data;
pub mod experiment;
pub mod measure;
pub mod merge;
pub mod paper;
pub mod plot;
pub mod progress;
pub mod repeat;
pub mod report;
pub mod result;
pub mod rows;
pub mod runner;
pub mod scale;
pub mod source_tree;
pub mod trace;
pub mod usage;

/// Fake experiments and a sample result for tests, here and in the crates above (feature
/// `testing`).
#[cfg(any(test, feature = "testing"))]
pub mod testing;
