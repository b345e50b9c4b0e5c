//! lsmlab-workloads
