//! AsterixDB's Eager strategy (Alsubaiee et al. 2014): an update or delete removes the old entry
//! physically if it is in the memory R-tree and records a deleted key in any case; the deleted keys
//! are flushed as an antimatter B+-tree beside each disk R-tree, shadow older components at query
//! time, and annihilate their targets when a merge brings both together.

use super::maintenance::{Maintenance, MaintenanceStats, MergeFilter, Source};
use super::stats::CleaningCounts;
use crate::btree::BTreeComponent;
use crate::cache::BufferCache;
use crate::geom::Point;
use crate::lsm::LsmBTree;
use crate::rtree::{MemRTree, SpatialEntry};
use crate::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};

/// Eager's state: the memory component's deleted keys and, optionally, a primary index that gives
/// the old location of an object instead of the stream.
pub(crate) struct Eager {
    /// The in-memory deleted-key B+-tree, keyed like AsterixDB's by the whole deleted tuple
    /// (oid, x bits, y bits): every update and delete adds one key, so it grows with the stream.
    memory_deleted: BTreeSet<(u64, u64, u64)>,
    /// Deleted tuples per B+-tree leaf page, to size the in-memory deleted-key tree in pages.
    deleted_leaf_capacity: usize,
    /// oid -> location, when the old location is looked up (timed) rather than taken from the
    /// stream, as the paper did when it excluded that lookup.
    primary_index: Option<LsmBTree<Point>>,
    cleaned: CleaningCounts,
}

impl Eager {
    pub fn new(page_size: usize, primary_index: Option<LsmBTree<Point>>) -> Self {
        Eager {
            memory_deleted: BTreeSet::new(),
            // a deleted tuple is an oid plus a point, 24 bytes, as a B+-tree entry keyed by oid with a Point
            deleted_leaf_capacity: BTreeComponent::<Point>::leaf_capacity(page_size),
            primary_index,
            cleaned: CleaningCounts::default(),
        }
    }

    /// The first half of an update (`new` = the new location) or delete (`new` = None): find the
    /// old location (from the stream, or from the primary index, which then records `new`) and
    /// delete the old entry as AsterixDB's LSM R-tree does: remove it from the memory R-tree if it is
    /// there, and insert the deleted tuple into the memory component's deleted-key B+-tree in any
    /// case (it shadows the tuple in older components).
    fn retire_old(
        &mut self,
        memory: &mut MemRTree,
        oid: u64,
        from: Option<Point>,
        new: Option<Point>,
    ) -> Result<()> {
        let old = match &mut self.primary_index {
            Some(p) => {
                let old = p.get(oid)?;
                match new {
                    Some(to) => p.upsert(oid, to)?,
                    None => p.delete(oid)?,
                }
                old
            }
            None => Some(from.ok_or_else(|| {
                Error::Config(format!(
                    "Eager needs the old location of object {oid} to update or delete it"
                ))
            })?),
        };
        if let Some(old) = old {
            if memory.remove(old, oid).is_some() {
                self.cleaned.memory_deletes += 1;
            }
            self.memory_deleted
                .insert((oid, old.x.to_bits(), old.y.to_bits()));
        }
        Ok(())
    }
}

impl Maintenance for Eager {
    fn insert(&mut self, memory: &mut MemRTree, e: SpatialEntry) -> Result<()> {
        memory.insert(e);
        if let Some(p) = &mut self.primary_index {
            p.upsert(e.oid, e.point)?;
        }
        Ok(())
    }

    fn update(&mut self, memory: &mut MemRTree, from: Option<Point>, e: SpatialEntry) -> Result<()> {
        self.retire_old(memory, e.oid, from, Some(e.point))?;
        memory.insert(e);
        Ok(())
    }

    fn delete(&mut self, memory: &mut MemRTree, oid: u64, from: Option<Point>, _ts: u64) -> Result<()> {
        self.retire_old(memory, oid, from, None)
    }

    fn memory_antimatter_pages(&self) -> u64 {
        self.memory_deleted.len().div_ceil(self.deleted_leaf_capacity) as u64
    }

    fn has_memory_antimatter(&self) -> bool {
        !self.memory_deleted.is_empty()
    }

    /// On disk one key per object suffices: an Eager update or delete kills every older version of
    /// the object, whatever its location (a deviation from AsterixDB's per-tuple keys that only
    /// makes the disk deleted-key trees smaller).
    fn take_memory_antimatter(&mut self) -> Vec<u64> {
        let tuples = std::mem::take(&mut self.memory_deleted);
        let mut keys: Vec<u64> = tuples.into_iter().map(|(oid, _, _)| oid).collect();
        keys.dedup();
        keys
    }

    fn flush_key_indexes(&mut self) -> Result<()> {
        match &mut self.primary_index {
            Some(k) => k.flush(),
            None => Ok(()),
        }
    }

    fn merge_filter<'a>(
        &'a mut self,
        antimatter: Vec<Vec<u64>>,
        includes_oldest: bool,
    ) -> Box<dyn MergeFilter + 'a> {
        Box::new(Annihilation {
            antimatter,
            includes_oldest,
            input: 0,
            current: Vec::new(),
            shadow: BTreeMap::new(),
            consumed: BTreeSet::new(),
            annihilated: &mut self.cleaned.annihilated,
        })
    }

    /// A memory entry is fresh (the memory R-tree lost the old one on update); a disk entry is fresh
    /// unless a deleted key of memory or of a newer component names its object.
    fn is_fresh(
        &self,
        cache: &BufferCache,
        source: Source<'_>,
        e: &SpatialEntry,
        lookups: &mut u64,
    ) -> Result<bool> {
        let Source::Disk { newer } = source else {
            return Ok(true);
        };
        *lookups += 1;
        if self
            .memory_deleted
            .range((e.oid, 0, 0)..=(e.oid, u64::MAX, u64::MAX))
            .next()
            .is_some()
        {
            return Ok(false);
        }
        for c in newer {
            if let Some(d) = &c.antimatter {
                *lookups += 1;
                if d.get(cache, e.oid)?.is_some() {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn stats(&self) -> MaintenanceStats {
        MaintenanceStats {
            key_index: self.primary_index.as_ref().map(|k| (k.stats(), k.lookups())),
            cleaned: self.cleaned,
            ..MaintenanceStats::default()
        }
    }
}

/// The object's nearest touch in a newer input of the merge: its input and whether that input
/// deletes the object (a deleted key applies before the input's own entries).
#[derive(Clone, Copy)]
struct Touch {
    input: usize,
    deletes: bool,
}

/// Eager's merge filter. Replaying the merged components from the oldest, a deleted key removes
/// the live entry of its object from older inputs (annihilation, counted once per key) or else is
/// kept for older components; a newer entry of an object replaces an older one. Seen newest first,
/// as the filter sees them, an entry survives iff no newer input touches (deletes or holds) its
/// object, and it is annihilated iff the nearest newer input that touches it deletes it. Unless the
/// merge includes the oldest component, deleted keys that annihilated nothing are kept.
struct Annihilation<'a> {
    /// Per input, newest first: the oids it deletes, ascending.
    antimatter: Vec<Vec<u64>>,
    includes_oldest: bool,
    /// The input whose entries are arriving; every newer input is folded into `shadow`.
    input: usize,
    /// Objects of the current input's entries seen so far (folded in when the input ends).
    current: Vec<u64>,
    /// Each object's nearest touch among the inputs folded so far.
    shadow: BTreeMap<u64, Touch>,
    /// Deleted keys (input, oid) that annihilated an entry.
    consumed: BTreeSet<(usize, u64)>,
    annihilated: &'a mut u64,
}

impl Annihilation<'_> {
    /// Folds every input before `input` into the shadow: its entries' objects, then its deleted
    /// keys (a deletion decides the touch's kind: it applies before the input's own entries).
    fn advance_to(&mut self, input: usize) {
        while self.input < input {
            let done = self.input;
            for oid in std::mem::take(&mut self.current) {
                self.shadow.insert(
                    oid,
                    Touch {
                        input: done,
                        deletes: false,
                    },
                );
            }
            for &oid in &self.antimatter[done] {
                self.shadow.insert(
                    oid,
                    Touch {
                        input: done,
                        deletes: true,
                    },
                );
            }
            self.input += 1;
        }
    }
}

impl MergeFilter for Annihilation<'_> {
    fn keep(&mut self, input: usize, e: &SpatialEntry) -> Result<bool> {
        self.advance_to(input);
        self.current.push(e.oid);
        match self.shadow.get(&e.oid) {
            None => Ok(true),
            Some(t) => {
                if t.deletes && self.consumed.insert((t.input, e.oid)) {
                    *self.annihilated += 1;
                }
                Ok(false)
            }
        }
    }

    fn finish(self: Box<Self>) -> Vec<u64> {
        if self.includes_oldest {
            return Vec::new();
        }
        let mut kept = BTreeSet::new();
        for (input, oids) in self.antimatter.iter().enumerate() {
            for &oid in oids {
                if !self.consumed.contains(&(input, oid)) {
                    kept.insert(oid);
                }
            }
        }
        kept.into_iter().collect()
    }
}
