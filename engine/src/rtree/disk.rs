//! The packed disk R-tree (being written).
