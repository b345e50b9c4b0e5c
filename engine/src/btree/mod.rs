//! Bulk-loaded B+-tree components (being written).
