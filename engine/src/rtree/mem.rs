//! The memory R-tree (being written).
/// Placeholder.
pub struct MemRTree;
/// Placeholder.
pub type NodeId = u32;
