//! The packed disk R-tree (being written).
/// Placeholder.
pub struct DiskRTree;
