//! What several benches share: their inputs and the caches and trees they set side by side.
//! Each bench uses part of it.
#![allow(dead_code)]

pub mod caches;
pub mod spatial;
