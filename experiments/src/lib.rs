//! lsmlab's papers: the experiments of the LSM RUM-tree ([`rum`]), Leaper ([`leaper`]), DIOL
//! ([`diol`]) and OrientDB OEP 7 ([`oep7`]) papers, the cross-paper ones ([`combined`],
//! [`scaling`]), the real peer store ([`peer`]) and the trace files of `lsmlab gen` ([`trace`]),
//! on top of the harness (`lsmlab_harness`: the experiment contract, configs, rows, the runner,
//! result files, figures, claims and the report), which names no paper. [`registry`] lists the
//! experiments and the claim files the binary (`src/main.rs`, a thin clap front end) hands it.

#![forbid(unsafe_code)]

// The harness's modules under their own names, so that every experiment reads `crate::config`,
// `crate::experiment`, ... (private: their one public path is `lsmlab_harness::...`).
#[cfg(test)]
use lsmlab_harness::testing;
#[allow(unused_imports)]
use lsmlab_harness::{
    atomic, cells, claims, config, data, experiment, measure, plot, progress, repeat, report, result, rows,
    runner, scale,
};

pub mod registry;
pub mod trace;

// ---- Experiment modules (each registered in registry.rs) ----------------------------------------
pub mod combined;
pub mod diol;
pub mod leaper;
pub mod oep7;
pub mod peer;
pub mod rum;
pub mod scaling;
// -----------------------------------------------------------------------------------------------------
