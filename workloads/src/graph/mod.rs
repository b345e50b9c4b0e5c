//! Graphs for the OEP 7 traversal experiment: a synthetic power-law graph and an edge-list loader.
