//! Out-of-order time-series streams for the DIOL experiments (PAPERS.md section 3).
