//! The memory level: the memtables that absorb writes before a flush turns them into runs.

use std::collections::VecDeque;
use std::hash::Hash;

use rustc_hash::FxHashMap;

/// A memtable as the lifecycle sees it: how many pages it would fill on disk (the flush budget is
/// counted in these), and its entries in key order for the flush.
pub trait Memtable {
    /// The key order of the table and of the run it flushes to.
    type Key: Ord + Copy;
    /// The values stored with the keys.
    type Value: Clone;
    /// Pages the table would fill as a run (the measure the flush trigger compares to its budget).
    fn pages(&self) -> u64;
    /// Entries held (one per key).
    fn len(&self) -> usize;
    /// Whether the table holds no entry.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A copy of the entries in strictly increasing key order. The table itself stays readable
    /// until its run is installed, so a failed flush loses nothing.
    fn sorted_entries(&self) -> Vec<(Self::Key, Self::Value)>;
}

/// A memtable whose page count is its entry count over a fixed number of entries per page (a
/// packed B+-tree leaf's capacity). Entries live in a hash map, so a point lookup (the validation
/// of every query candidate) costs one probe instead of a tree descent; key order is produced only
/// when asked for, by the flush ([`Memtable::sorted_entries`]) and by range reads ([`Self::range`]).
#[derive(Clone, Debug)]
pub struct HashMemtable<K, V> {
    map: FxHashMap<K, V>,
    entries_per_page: usize,
}

impl<K: Ord + Copy + Hash, V: Clone> HashMemtable<K, V> {
    /// An empty table that counts `entries_per_page` entries (at least 1) to a page.
    pub fn new(entries_per_page: usize) -> Self {
        HashMemtable {
            map: FxHashMap::default(),
            entries_per_page: entries_per_page.max(1),
        }
    }

    /// Inserts or replaces the value of `key`.
    pub fn insert(&mut self, key: K, value: V) {
        self.map.insert(key, value);
    }

    /// The value of `key`, if held.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    /// The entries with keys in `lo..=hi`, in key order.
    pub fn range(&self, lo: K, hi: K) -> Vec<(K, V)> {
        let mut out: Vec<(K, V)> = self
            .map
            .iter()
            .filter(|(k, _)| lo <= **k && **k <= hi)
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        out.sort_unstable_by_key(|e| e.0);
        out
    }

    /// An empty table with the same page geometry.
    pub fn fresh(&self) -> Self {
        Self::new(self.entries_per_page)
    }
}

impl<K: Ord + Copy + Hash, V: Clone> Memtable for HashMemtable<K, V> {
    type Key = K;
    type Value = V;
    fn pages(&self) -> u64 {
        self.map.len().div_ceil(self.entries_per_page) as u64
    }
    fn len(&self) -> usize {
        self.map.len()
    }
    fn sorted_entries(&self) -> Vec<(K, V)> {
        let mut out: Vec<(K, V)> = self.map.iter().map(|(k, v)| (*k, v.clone())).collect();
        out.sort_unstable_by_key(|e| e.0);
        out
    }
}

/// Which immutable memtable to flush next, given them oldest first.
pub type FlushPicker<M> = Box<dyn Fn(&[&M]) -> usize + Send + Sync>;

/// One active memtable taking writes and the immutable ones waiting for their flush, each with the
/// flush sequence number it was frozen under. A write that makes the active table exceed the budget
/// (in the table's own pages) calls for a flush: the table is frozen, and the flush writes the
/// immutable tables out one at a time, by default the oldest first (the only order that is correct
/// when tables share keys; a picker may choose otherwise for tables with disjoint keys, as DIOL's
/// many memtables need). A table leaves memory only once its run is installed.
pub struct MemoryLevel<M> {
    active: M,
    /// Oldest first.
    immutable: VecDeque<M>,
    budget_pages: u64,
    picker: Option<FlushPicker<M>>,
}

impl<M: Memtable> MemoryLevel<M> {
    /// A level that asks for a flush when the active table needs more than `budget_pages` pages.
    pub fn new(active: M, budget_pages: u64) -> Self {
        MemoryLevel {
            active,
            immutable: VecDeque::new(),
            budget_pages: budget_pages.max(1),
            picker: None,
        }
    }

    /// Chooses the immutable table to flush next instead of the oldest.
    pub fn set_flush_picker(&mut self, picker: FlushPicker<M>) {
        self.picker = Some(picker);
    }

    /// Pages the active table may fill before a flush is due (at least 1).
    pub fn budget_pages(&self) -> u64 {
        self.budget_pages
    }

    /// The table that takes writes.
    pub fn active(&self) -> &M {
        &self.active
    }

    /// The table that takes writes, to write to.
    pub fn active_mut(&mut self) -> &mut M {
        &mut self.active
    }

    /// True when the active table has outgrown the budget.
    pub fn over_budget(&self) -> bool {
        self.active.pages() > self.budget_pages
    }

    /// Pages of every table, active and immutable.
    pub fn pages(&self) -> u64 {
        self.active.pages() + self.immutable.iter().map(Memtable::pages).sum::<u64>()
    }

    /// Whether every table, active and immutable, is empty.
    pub fn is_empty(&self) -> bool {
        self.active.is_empty() && self.immutable.iter().all(Memtable::is_empty)
    }

    /// Makes the active table immutable (if it holds anything) and starts `fresh`.
    pub fn freeze(&mut self, fresh: M) {
        if !self.active.is_empty() {
            let old = std::mem::replace(&mut self.active, fresh);
            self.immutable.push_back(old);
        }
    }

    /// Number of immutable tables waiting for a flush.
    pub fn immutable_count(&self) -> usize {
        self.immutable.len()
    }

    /// Every table, newest first: the order reads consult them.
    pub fn newest_first(&self) -> impl Iterator<Item = &M> {
        std::iter::once(&self.active).chain(self.immutable.iter().rev())
    }

    /// The position (oldest first) of the immutable table to flush next.
    pub fn next_to_flush(&self) -> Option<usize> {
        if self.immutable.is_empty() {
            return None;
        }
        Some(match &self.picker {
            None => 0,
            Some(p) => {
                let tables: Vec<&M> = self.immutable.iter().collect();
                p(&tables).min(tables.len() - 1)
            }
        })
    }

    /// The immutable table at position `at` (oldest first), if any.
    pub fn immutable(&self, at: usize) -> Option<&M> {
        self.immutable.get(at)
    }

    /// Drops an immutable table once its run is installed.
    pub fn remove_flushed(&mut self, at: usize) -> Option<M> {
        self.immutable.remove(at)
    }

    /// Freezes the active table (replacing it with `fresh`) and hands every immutable table, in
    /// flush order, to `flush` as sorted entries. A table leaves the level only after `flush`
    /// succeeded with it, so the first error stops here with nothing lost (fail-stop).
    pub fn flush_all<E>(
        &mut self,
        fresh: M,
        mut flush: impl FnMut(Vec<(M::Key, M::Value)>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.freeze(fresh);
        while let Some(at) = self.next_to_flush() {
            let entries = self.immutable(at).map(M::sorted_entries).unwrap_or_default();
            flush(entries)?;
            self.remove_flushed(at);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freezes_flushes_oldest_first_and_reads_newest_first() {
        let mut m = MemoryLevel::new(HashMemtable::<u64, u64>::new(2), 1);
        m.active_mut().insert(1, 10);
        m.active_mut().insert(2, 20);
        assert!(!m.over_budget());
        m.active_mut().insert(3, 30);
        assert!(m.over_budget());
        let fresh = m.active().fresh();
        m.freeze(fresh);
        m.active_mut().insert(1, 11);
        let fresh = m.active().fresh();
        m.freeze(fresh);
        assert_eq!(m.immutable_count(), 2);
        let first: Vec<_> = m.newest_first().filter_map(|t| t.get(&1).copied()).collect();
        assert_eq!(first, vec![11, 10]);
        assert_eq!(m.next_to_flush(), Some(0));
        assert_eq!(
            m.immutable(0).unwrap().sorted_entries(),
            vec![(1, 10), (2, 20), (3, 30)]
        );
        assert_eq!(m.pages(), 3);
        m.set_flush_picker(Box::new(|t: &[&HashMemtable<u64, u64>]| t.len() - 1));
        assert_eq!(m.next_to_flush(), Some(1));
        m.remove_flushed(1);
        m.remove_flushed(0);
        assert!(m.is_empty());
        assert_eq!(m.next_to_flush(), None);
    }
}
