//! The OrientDB OEP 7 experiments (PAPERS.md section 4).
