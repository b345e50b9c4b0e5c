//! The LSM R-tree secondary index (key = location, value = object id) and its maintenance
//! strategies, each a type behind one trait: AsterixDB's Eager, Luo & Carey's Validation, and the
//! LSM RUM-tree's Update Memo with its four cleaning switches.

mod component;
mod concurrent;
mod config;
mod index;
mod maintenance;
mod stats;
mod strategies;
mod strategy;
mod um;

pub use component::SpatialComponent;
pub use concurrent::ConcurrentRumTree;
pub use config::{CleaningCounters, FlushTrigger, SpatialConfig};
pub use index::{LsmRTree, QueryOutcome};
pub use maintenance::{
    Cleanup, KeepAll, Maintenance, MaintenanceStats, MemoryWrite, MergeFilter, Source, StampScan,
};
pub use stats::{CleaningCounts, SpatialStats};
pub use strategies::{every_strategy_name, StrategyDef, STRATEGIES};
pub use strategy::{CleaningSwitches, EagerVariant, ParseStrategyError, Strategy, ValidationVariant};
pub use um::{cils, MemoState, UpdateMemo};
