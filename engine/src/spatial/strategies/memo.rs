//! The LSM RUM-tree's strategy: blind inserts plus the Update Memo (Section 3), with the four
//! cleaning switches of Section 4: Buffered and Vacuum Cleaning of memory leaves (Algorithm 4),
//! Clean Upon Flush and Clean Upon Merge.

use super::StrategyDef;
use crate::cache::BufferCache;
use crate::geom::Point;
use crate::rtree::{MemRTree, NodeId, SpatialEntry};
use crate::spatial::config::CleaningCounters;
use crate::spatial::maintenance::{
    Cleanup, KeepAll, Maintenance, MaintenanceStats, MemoryWrite, MergeFilter, Source, StampScan,
};
use crate::spatial::stats::CleaningCounts;
use crate::spatial::strategy::CleaningSwitches;
use crate::spatial::um::{MemoState, UpdateMemo};
use crate::Result;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The table's row: `UM`, or `UM+` followed by any of the letters F, M, B, V (each at most once);
/// the option holds the switches ([`CleaningSwitches::to_option`]).
pub(crate) static UPDATE_MEMO: StrategyDef = StrategyDef {
    family: "UM",
    forms:
        "UM, or UM+ followed by any of the letters F, M, B, V (each at most once), e.g. UM+F, UM+BV, UM+FMBV",
    parse: |name| parse_switches(name).map(|s| s.to_option()),
    name: |option| {
        let s = CleaningSwitches::from_option(option);
        let letters: String = [(s.flush, 'F'), (s.merge, 'M'), (s.buffered, 'B'), (s.vacuum, 'V')]
            .into_iter()
            .filter_map(|(on, letter)| on.then_some(letter))
            .collect();
        if letters.is_empty() {
            "UM".to_string()
        } else {
            format!("UM+{letters}")
        }
    },
    build: |option, cfg, _cache| {
        Ok(Box::new(UpdateMemoMaintenance::new(
            CleaningSwitches::from_option(option),
            cfg.buffered_threshold,
            cfg.vacuum_threshold,
            cfg.cleaning_counters,
        )))
    },
};

/// The switches `name` selects: `UM` (or `um`) alone, or followed by `+` and each of F, M, B, V at
/// most once, in any order and case.
fn parse_switches(name: &str) -> Option<CleaningSwitches> {
    let rest = name.strip_prefix("UM").or_else(|| name.strip_prefix("um"))?;
    let mut sw = CleaningSwitches::default();
    if rest.is_empty() {
        return Some(sw);
    }
    let letters = rest.strip_prefix('+').filter(|l| !l.is_empty())?;
    for c in letters.chars() {
        let slot = match c.to_ascii_uppercase() {
            'F' => &mut sw.flush,
            'M' => &mut sw.merge,
            'B' => &mut sw.buffered,
            'V' => &mut sw.vacuum,
            _ => return None,
        };
        if *slot {
            return None;
        }
        *slot = true;
    }
    Some(sw)
}

/// The Update Memo strategy's state: the memo (shared with concurrent ingesting threads), the
/// switches and thresholds, and Vacuum Cleaning's counter and round-robin cursor.
pub(crate) struct UpdateMemoMaintenance {
    um: Arc<UpdateMemo>,
    switches: CleaningSwitches,
    /// Buffered Cleaning threshold (Section 4.1).
    buffered_threshold: u32,
    /// Vacuum Cleaning threshold `th` (Section 4.2).
    vacuum_threshold: u32,
    counters: CleaningCounters,
    vacuum_counter: u32,
    vacuum_cursor: Option<NodeId>,
    cleaned: CleaningCounts,
}

impl UpdateMemoMaintenance {
    pub fn new(
        switches: CleaningSwitches,
        buffered_threshold: u32,
        vacuum_threshold: u32,
        counters: CleaningCounters,
    ) -> Self {
        UpdateMemoMaintenance {
            um: Arc::new(UpdateMemo::new()),
            switches,
            buffered_threshold,
            vacuum_threshold,
            counters,
            vacuum_counter: 0,
            vacuum_cursor: None,
            cleaned: CleaningCounts::default(),
        }
    }

    /// Buffered and Vacuum Cleaning after an entry entered memory leaf `leaf` (Sections 4.1-4.2).
    /// Under [`CleaningCounters::Updates`] (the authors' code) only updates count, an update that
    /// split its leaf does not bump the leaf's counter, and Vacuum Cleaning leaves the cleaned
    /// leaf's counter as it was; under [`CleaningCounters::AllInserts`] every entry put into the
    /// memory R-tree counts and every cleaning resets the leaf's counter. Vacuum Cleaning does not
    /// skip a leaf Buffered Cleaning has just cleaned, as in the authors' code.
    ///
    /// A release the Update Memo does not count (possible only after a garbled disk entry was
    /// merged) is returned as an error once the leaf is cleaned; the cleaning itself stands.
    fn after_memory_insert(&mut self, memory: &mut MemRTree, leaf: NodeId, write: MemoryWrite) -> Result<()> {
        let authors = self.counters == CleaningCounters::Updates;
        if authors && !write.update {
            return Ok(());
        }
        let um = &self.um;
        let mut failed: Option<crate::Error> = None;
        let mut release = |e: SpatialEntry| {
            if let Err(err) = um.try_release(e.oid) {
                failed.get_or_insert(err);
            }
        };
        // Under concurrent ingestion the leaf may have been split away or unlinked meanwhile.
        let live = memory.is_live_leaf(leaf);
        let counts = !(authors && write.split);
        if self.switches.buffered
            && live
            && counts
            && memory.bump_update_counter(leaf) >= self.buffered_threshold
        {
            // Algorithm 4 on the leaf whose counter hit the threshold.
            let n = memory.clean_leaf(leaf, |e| !um.is_obsolete(e.oid, e.ts), &mut release);
            self.cleaned.buffered += n as u64;
        }
        if self.switches.vacuum {
            self.vacuum_counter += 1;
            if self.vacuum_counter >= self.vacuum_threshold {
                self.vacuum_counter = 0;
                if let Some(next) = memory.next_leaf(self.vacuum_cursor) {
                    let n = memory.clean_leaf_with(
                        next,
                        !authors,
                        |e| !um.is_obsolete(e.oid, e.ts),
                        &mut release,
                    );
                    self.cleaned.vacuum += n as u64;
                    self.vacuum_cursor = Some(next);
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Algorithm 4's test on one entry leaving memory or a merge: an obsolete entry is dropped, and
    /// its UM release recorded for when the flush or merge has succeeded. (Deferring the releases
    /// changes no decision: a UM entry goes only when its last obsolete entry is released, and the
    /// object's remaining entry is then fresh either way.)
    fn keep_fresh(um: &UpdateMemo, e: &SpatialEntry, releases: &mut Vec<u64>, dropped: &mut u64) -> bool {
        if um.is_obsolete(e.oid, e.ts) {
            releases.push(e.oid);
            *dropped += 1;
            false
        } else {
            true
        }
    }
}

impl Maintenance for UpdateMemoMaintenance {
    fn insert(&mut self, memory: &mut MemRTree, e: SpatialEntry) -> Result<()> {
        let splits = memory.splits();
        let leaf = memory.insert(e);
        let split = memory.splits() > splits;
        self.um.record_insert(e.oid, e.ts);
        self.after_memory_insert(memory, leaf, MemoryWrite { update: false, split })
    }

    /// Algorithm 6: insert the new entry, then put-if-absent / CILS + count in the UM.
    fn update(&mut self, memory: &mut MemRTree, _from: Option<Point>, e: SpatialEntry) -> Result<()> {
        let splits = memory.splits();
        let leaf = memory.insert(e);
        let split = memory.splits() > splits;
        self.um.record_obsolete(e.oid, e.ts);
        self.after_memory_insert(memory, leaf, MemoryWrite { update: true, split })
    }

    /// Only the UM changes: every entry of the object is now obsolete.
    fn delete(&mut self, _memory: &mut MemRTree, oid: u64, _from: Option<Point>, ts: u64) -> Result<()> {
        self.um.record_obsolete(oid, ts);
        Ok(())
    }

    fn update_memo(&self) -> Option<&Arc<UpdateMemo>> {
        Some(&self.um)
    }

    fn after_external_insert(
        &mut self,
        memory: &mut MemRTree,
        leaf: NodeId,
        write: MemoryWrite,
    ) -> Result<()> {
        self.after_memory_insert(memory, leaf, write)
    }

    /// The memo counts every obsolete entry the flush or merge dropped.
    fn check(&self, cleanup: &Cleanup) -> Result<()> {
        self.um.check_releases(&cleanup.releases)
    }

    fn flushed(&mut self, cleanup: Cleanup) -> Result<()> {
        self.vacuum_cursor = None;
        self.vacuum_counter = 0;
        self.commit(cleanup)
    }

    /// Algorithm 7 for every obsolete entry the flush or merge dropped.
    fn commit(&mut self, cleanup: Cleanup) -> Result<()> {
        self.cleaned.add(&cleanup.cleaned);
        for oid in cleanup.releases {
            self.um.try_release(oid)?;
        }
        Ok(())
    }

    /// Clean Upon Flush (Section 4.3): drop obsolete entries while ordering them for the flush.
    fn keep_on_flush(&self, e: &SpatialEntry, cleanup: &mut Cleanup) -> bool {
        !self.switches.flush
            || Self::keep_fresh(&self.um, e, &mut cleanup.releases, &mut cleanup.cleaned.flush)
    }

    /// Clean Upon Merge (Section 4.4): validate every entry on the fly while bulk-loading the merge.
    fn merge_filter<'a>(&'a mut self, _antimatter: Vec<Vec<u64>>, _: bool) -> Box<dyn MergeFilter + 'a> {
        if !self.switches.merge {
            return Box::new(KeepAll);
        }
        Box::new(CleanUponMerge {
            um: &self.um,
            cleanup: Cleanup::default(),
        })
    }

    /// Algorithm 3: a candidate is fresh unless the UM knows a newer operation on its object.
    fn is_fresh(&self, _: &BufferCache, _: Source<'_>, e: &SpatialEntry, lookups: &mut u64) -> Result<bool> {
        *lookups += 1;
        Ok(!self.um.is_obsolete(e.oid, e.ts))
    }

    fn stats(&self) -> MaintenanceStats {
        MaintenanceStats {
            key_index: None,
            um_entries: self.um.len() as u64,
            um_max_entries: self.um.max_len() as u64,
            cleaned: self.cleaned,
            superseded_flushed: 0,
            antimatter_flushed: 0,
        }
    }

    /// Every UM entry's count equals the number of its object's entries older than its timestamp
    /// (its obsolete entries), no entry is newer than the UM's timestamp, and an object without a UM
    /// entry has at most one entry. The entries go by one at a time; what is kept is a tally per
    /// object, so the audit's memory follows the objects, not the entries.
    fn audit(&self, stamps: &StampScan<'_>) -> Result<std::result::Result<(), String>> {
        /// One object's entries as the audit tallies them.
        #[derive(Default)]
        struct Tally {
            entries: u64,
            /// Entries older than the UM's timestamp (none without a UM entry).
            older: u64,
            /// The first entry seen newer than the UM's timestamp.
            newer: Option<u64>,
        }
        let snapshot = self.um.snapshot();
        let states: FxHashMap<u64, MemoState> = snapshot.iter().copied().collect();
        let mut tallies: FxHashMap<u64, Tally> = FxHashMap::default();
        stamps(&mut |oid, ts| {
            let t = tallies.entry(oid).or_default();
            t.entries += 1;
            if let Some(state) = states.get(&oid) {
                if ts < state.ts {
                    t.older += 1;
                } else if ts > state.ts {
                    t.newer.get_or_insert(ts);
                }
            }
        })?;
        // The UM's entries in oid order, then the objects without one in oid order: the first
        // violation reported does not depend on the hash order.
        for (oid, state) in &snapshot {
            let t = tallies.remove(oid).unwrap_or_default();
            if t.older != state.cnt {
                return Ok(Err(format!(
                    "object {oid}: UM says ts {} cnt {}, but the index holds {} older entries (of {})",
                    state.ts, state.cnt, t.older, t.entries
                )));
            }
            if let Some(newer) = t.newer {
                return Ok(Err(format!(
                    "object {oid}: entry stamped {newer} is newer than the UM's ts {}",
                    state.ts
                )));
            }
        }
        let mut crowded: Vec<(u64, u64)> = tallies
            .into_iter()
            .filter(|(_, t)| t.entries > 1)
            .map(|(oid, t)| (oid, t.entries))
            .collect();
        crowded.sort_unstable();
        if let Some((oid, entries)) = crowded.first() {
            return Ok(Err(format!("object {oid} has {entries} entries but no UM entry")));
        }
        Ok(Ok(()))
    }
}

/// Clean Upon Merge's filter.
struct CleanUponMerge<'a> {
    um: &'a UpdateMemo,
    cleanup: Cleanup,
}

impl MergeFilter for CleanUponMerge<'_> {
    fn keep(&mut self, _: usize, e: &SpatialEntry) -> Result<bool> {
        let c = &mut self.cleanup;
        Ok(UpdateMemoMaintenance::keep_fresh(
            self.um,
            e,
            &mut c.releases,
            &mut c.cleaned.merge,
        ))
    }

    fn finish(self: Box<Self>) -> (Vec<u64>, Cleanup) {
        (Vec::new(), self.cleanup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The audit of a memo where object 1 has one obsolete entry before ts 5, over `stamps`.
    fn audit(stamps: &[(u64, u64)]) -> std::result::Result<(), String> {
        let m = UpdateMemoMaintenance::new(CleaningSwitches::default(), 8, 8, CleaningCounters::Updates);
        m.um.record_obsolete(1, 5);
        let scan = |f: &mut dyn FnMut(u64, u64)| -> Result<()> {
            stamps.iter().for_each(|&(oid, ts)| f(oid, ts));
            Ok(())
        };
        m.audit(&scan).unwrap()
    }

    #[test]
    fn the_audit_finds_each_kind_of_disagreement() {
        // Object 1: one entry older than the UM's ts and the fresh one; object 2: one entry, no UM.
        assert_eq!(audit(&[(1, 2), (2, 3), (1, 5)]), Ok(()));
        let why = audit(&[(1, 2), (1, 3), (1, 5)]).unwrap_err();
        assert!(
            why.contains("object 1") && why.contains("2 older entries (of 3)"),
            "{why}"
        );
        let why = audit(&[(1, 2), (1, 5), (1, 7)]).unwrap_err();
        assert!(why.contains("stamped 7 is newer than the UM's ts 5"), "{why}");
        let why = audit(&[(1, 2), (1, 5), (9, 1), (3, 1), (9, 4), (3, 2)]).unwrap_err();
        assert_eq!(why, "object 3 has 2 entries but no UM entry");
        // A UM entry whose object left no entry in the index at all.
        let why = audit(&[]).unwrap_err();
        assert!(
            why.contains("cnt 1, but the index holds 0 older entries (of 0)"),
            "{why}"
        );
    }
}
