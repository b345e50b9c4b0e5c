//! The record clusters of the OrientDB OEP 7 experiments (PAPERS.md section 4): OrientDB's
//! paginated cluster (position map + data pages) and OEP 7's single-page cluster.
