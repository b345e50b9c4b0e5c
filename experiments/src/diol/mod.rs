//! The DIOL experiments (PAPERS.md section 3).
