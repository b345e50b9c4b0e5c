//! lsmlab's papers: the experiments of the LSM RUM-tree ([`rum`]), Leaper ([`leaper`]), DIOL
//! ([`diol`]) and OrientDB OEP 7 ([`oep7`]) papers, the cross-paper ones ([`combined`],
//! [`scaling`]), the real peer store ([`peer`]) and the trace files of `lsmlab gen` ([`trace`]),
//! on top of the harness (`lsmlab_harness`: the experiment contract, configs, rows, the runner,
//! result files, figures, claims and the report), which names no paper. [`registry`] hands the
//! experiments and the claim files of the papers `papers!` lists to the binary (`src/main.rs`, a thin clap front end) hands it.

#![forbid(unsafe_code)]
// Tests may unwrap: a panic there is the failure report.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

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

/// Declares each paper's folder as a module and lists the papers, in the order `lsmlab list`
/// prints them and the report sections them ([`registry::papers`]).
macro_rules! papers {
    ($($id:ident),* $(,)?) => {
        $(pub mod $id;)*

        /// Every paper's descriptor (its folder's `paper()`), in the order of `papers!`.
        fn listed() -> lsmlab_harness::paper::Papers {
            lsmlab_harness::paper::Papers(vec![$($id::paper()),*])
        }
    };
}

// ---- The papers: a paper is its folder (with `pub fn paper()`) and its name here. ---------------
papers![rum, leaper, diol, oep7, scaling, combined];
// -----------------------------------------------------------------------------------------------------

/// The real peer store the Leaper experiments can run beside lsmlab's (feature `fjall`).
pub mod peer;
