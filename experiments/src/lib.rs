//! lsmlab: runs storage-engine paper experiments, writes JSON result files, renders paper-style
//! figures and a Markdown report.
//!
//! The pieces meet only through result files (DESIGN.md section 1):
//! [`experiment`] is the plug-in contract, [`registry`] lists the experiments, [`runner`] resolves
//! parameters, runs and writes [`result`] files, [`plot`] draws figures, [`claims`] judges the
//! papers' claims and [`report`] writes REPORT.md. The binary (`src/main.rs`) is a thin clap front
//! end over these.

pub mod claims;
pub mod experiment;
pub mod plot;
pub mod progress;
pub mod registry;
pub mod report;
pub mod result;
pub mod runner;

// ---- Experiment modules (each registered in registry.rs) ----------------------------------------
pub mod data;
pub mod rum;
// -----------------------------------------------------------------------------------------------------

#[cfg(test)]
mod testing;
