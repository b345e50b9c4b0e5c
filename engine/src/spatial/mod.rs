//! The LSM R-tree secondary index (key = location, value = object id) and its maintenance
//! strategies: AsterixDB's Eager, Luo & Carey's Validation, and the LSM RUM-tree's Update Memo with
//! its four cleaning switches.

mod concurrent;
mod index;
mod strategy;
mod um;

pub use concurrent::ConcurrentRumTree;
pub use index::{CleaningCounts, LsmRTree, QueryOutcome, SpatialConfig, SpatialStats};
pub use strategy::{CleaningSwitches, ParseStrategyError, Strategy};
pub use um::{cils, MemoState, UpdateMemo};
