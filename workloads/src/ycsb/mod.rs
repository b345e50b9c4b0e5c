//! YCSB's core workloads A-F for the OEP 7 experiments (PAPERS.md section 4).
