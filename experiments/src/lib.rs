//! lsmlab: runs storage-engine paper experiments, writes JSON result files, renders paper-style
//! figures and a Markdown report.
//!
//! The pieces meet only through result files (DESIGN.md section 1):
//! [`experiment`] is the plug-in contract, with [`config`] (typed parameters and the shared
//! storage testbed), [`scale`], [`rows`] and [`measure`] (latency recorder, interval series) as
//! its parts; [`registry`] lists the experiments, [`runner`] resolves configs, runs and writes
//! [`result`] files, [`plot`] draws figures, [`claims`] judges the papers' claims and [`report`]
//! writes REPORT.md. The binary (`src/main.rs`) is a thin clap front end over these.

#![forbid(unsafe_code)]

pub mod atomic;
pub mod bench;
pub mod cells;
pub mod claims;
pub mod compare;
pub mod config;
pub mod experiment;
pub mod measure;
pub mod merge;
pub mod plot;
pub mod progress;
pub mod registry;
pub mod repeat;
pub mod report;
pub mod result;
pub mod rows;
pub mod runner;
pub mod scale;
pub mod trace;

// ---- Experiment modules (each registered in registry.rs) ----------------------------------------
pub mod combined;
pub mod data;
pub mod diol;
pub mod leaper;
pub mod oep7;
pub mod peer;
pub mod rum;
pub mod scaling;
// -----------------------------------------------------------------------------------------------------

#[cfg(test)]
mod testing;
