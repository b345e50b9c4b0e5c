//! Shared by the engine's integration tests: budgets read from the environment, and the small
//! configurations (tiny pages, tiny memory components, aggressive compaction) that make a short
//! stream cross many flushes, merges and compactions.
//!
//! Each test crate includes it with `mod common;` and uses what it needs.

#![allow(dead_code)]

use lsmlab_engine::geom::{Point, Rect};
use lsmlab_engine::kvstore::KvConfig;
use lsmlab_engine::lsm::{LeveledParams, MergePolicyConfig};
use lsmlab_engine::spatial::{SpatialConfig, Strategy};
use rand::Rng;

/// The square the spatial tests draw their points from.
pub const EXTENT: Rect = Rect::new(0.0, 0.0, 100.0, 100.0);

/// A non-negative integer budget from the environment (`_` separators allowed), else `default`;
/// a value that does not parse stops the test with a message naming the variable.
pub fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a non-negative integer")),
        Err(_) => default,
    }
}

/// Leveled compaction with a 3-run level 0, an 8-page level 1, a size ratio of 3 and 3-page
/// output runs: a few hundred small writes reach four or five levels.
pub fn small_leveled() -> LeveledParams {
    LeveledParams {
        l0_trigger: 3,
        base_level_pages: 8,
        size_ratio: 3,
        target_run_pages: 3,
        max_levels: 5,
    }
}

/// The key-value store over [`small_leveled`] with a `memtable_bytes` memtable and 1% Bloom filters.
pub fn small_kv_config(memtable_bytes: u64) -> KvConfig {
    KvConfig {
        memtable_bytes,
        leveled: small_leveled(),
        bloom_fp: Some(0.01),
        background_bytes_per_s: None,
    }
}

/// The LSM R-tree with a `memory_pages`-page memory component, prefix merges of at most 40 pages
/// with 3 tolerated components, a 2-page key index and low cleaning thresholds (UM's buffered and
/// vacuum thresholds 2 and 3), so that every maintenance path runs within a few hundred updates.
pub fn small_spatial_config(strategy: Strategy, memory_pages: u64) -> SpatialConfig {
    let mut cfg = SpatialConfig::new(strategy, EXTENT, memory_pages);
    cfg.merge_policy = MergePolicyConfig::Prefix {
        max_mergeable_pages: 40,
        max_tolerance_components: 3,
    };
    cfg.key_index_budget_pages = 2;
    cfg.buffered_threshold = 2;
    cfg.vacuum_threshold = 3;
    cfg
}

/// A point in [`EXTENT`], half of them in a 5 x 5 hot spot, so that leaves collect many versions
/// of the same objects.
pub fn hot_point(rng: &mut impl Rng) -> Point {
    if rng.random_bool(0.5) {
        Point::new(40.0 + rng.random::<f64>() * 5.0, 40.0 + rng.random::<f64>() * 5.0)
    } else {
        Point::new(rng.random::<f64>() * 100.0, rng.random::<f64>() * 100.0)
    }
}
