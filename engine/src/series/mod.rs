//! The time-series store of the DIOL experiments (PAPERS.md section 3): points, memtables, the
//! IoTDB-like and delay-memtable memory levels, TsFile-like runs and their disk compaction.
