//! The memory R-tree (being written).
