//! The k-way merge of sorted runs: a binary heap over one cursor per run, the newest run winning
//! on equal keys ([`KWayMerge`]), or every entry kept in order ([`merge_sorted_runs`]).

use crate::Result;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A sorted stream of entries, as a run scan yields it.
pub type EntryStream<'a, K, V> = Box<dyn Iterator<Item = Result<(K, V)>> + 'a>;

/// Merges streams each in strictly increasing key order into one, yielding each key once with the
/// value of the lowest-numbered stream that holds it (stream 0 is the newest). Every entry of every
/// stream is consumed exactly once, so each run's pages are read once. A stream error is passed on
/// and ends the merge.
pub struct KWayMerge<'a, K, V> {
    streams: Vec<EntryStream<'a, K, V>>,
    /// Heads: (key, stream) smallest first; the head values wait in `values`.
    heap: BinaryHeap<Reverse<(K, usize)>>,
    values: Vec<Option<V>>,
    failed: bool,
}

impl<'a, K: Ord + Copy, V> KWayMerge<'a, K, V> {
    /// `streams` newest first.
    pub fn new(streams: Vec<EntryStream<'a, K, V>>) -> Result<Self> {
        let n = streams.len();
        let mut m = KWayMerge {
            streams,
            heap: BinaryHeap::with_capacity(n),
            values: (0..n).map(|_| None).collect(),
            failed: false,
        };
        for i in 0..n {
            m.advance(i)?;
        }
        Ok(m)
    }

    /// Pulls the next entry of stream `i` into the heap.
    fn advance(&mut self, i: usize) -> Result<()> {
        if let Some(item) = self.streams[i].next() {
            let (k, v) = item?;
            self.values[i] = Some(v);
            self.heap.push(Reverse((k, i)));
        }
        Ok(())
    }

    fn step(&mut self) -> Result<Option<(K, V)>> {
        let Some(Reverse((key, i))) = self.heap.pop() else {
            return Ok(None);
        };
        #[allow(clippy::expect_used)] // `advance` stores a stream's value whenever it pushes its key
        let value = self.values[i].take().expect("a heap head has its value");
        self.advance(i)?;
        // Older streams' versions of the same key are shadowed: consume them.
        while let Some(&Reverse((k, j))) = self.heap.peek() {
            if k != key {
                break;
            }
            self.heap.pop();
            self.values[j] = None;
            self.advance(j)?;
        }
        Ok(Some((key, value)))
    }
}

impl<K: Ord + Copy, V> Iterator for KWayMerge<'_, K, V> {
    type Item = Result<(K, V)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.step() {
            Ok(x) => x.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
/// Merges runs of `(key, value)` pairs, each already sorted by key, into one sorted vector: the
/// result equals concatenating the runs in order and sorting stably by key (equal keys keep run
/// order, then position), as a bulk load after a merge needs, in O(n log k) for `k` runs instead
/// of re-sorting n entries. A run found out of order is not trusted: the whole input is then
/// concatenated and sorted stably, which gives the same result.
pub fn merge_sorted_runs<K: Ord + Copy, V>(mut runs: Vec<Vec<(K, V)>>) -> Vec<(K, V)> {
    runs.retain(|r| !r.is_empty());
    let sorted = runs.iter().all(|r| r.windows(2).all(|w| w[0].0 <= w[1].0));
    if !sorted {
        let mut all: Vec<(K, V)> = runs.into_iter().flatten().collect();
        all.sort_by_key(|(k, _)| *k);
        return all;
    }
    if runs.len() <= 1 {
        return runs.pop().unwrap_or_default();
    }
    let total = runs.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total);
    let mut cursors: Vec<std::vec::IntoIter<(K, V)>> = runs.into_iter().map(Vec::into_iter).collect();
    let mut heads: Vec<Option<V>> = Vec::with_capacity(cursors.len());
    let mut heap = BinaryHeap::with_capacity(cursors.len());
    for (i, c) in cursors.iter_mut().enumerate() {
        // Empty runs were dropped above, so every cursor has a head.
        let head = c.next().map(|(k, v)| {
            heap.push(Reverse((k, i)));
            v
        });
        heads.push(head);
    }
    while let Some(Reverse((k, i))) = heap.pop() {
        #[allow(clippy::expect_used)] // a run's value is stored whenever its key is pushed
        let v = heads[i].take().expect("a heap head has its value");
        out.push((k, v));
        if let Some((k2, v2)) = cursors[i].next() {
            heads[i] = Some(v2);
            heap.push(Reverse((k2, i)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn stream(v: Vec<(u64, u32)>) -> EntryStream<'static, u64, u32> {
        Box::new(v.into_iter().map(Ok))
    }

    #[test]
    fn newest_wins_and_every_key_appears_once() {
        let m = KWayMerge::new(vec![
            stream(vec![(2, 0), (5, 0)]),
            stream(vec![(1, 1), (2, 1), (9, 1)]),
            stream(vec![(2, 2), (5, 2), (7, 2)]),
        ])
        .unwrap();
        let out: Vec<_> = m.map(|r| r.unwrap()).collect();
        assert_eq!(out, vec![(1, 1), (2, 0), (5, 0), (7, 2), (9, 1)]);
    }

    #[test]
    fn an_error_ends_the_merge() {
        let bad: EntryStream<'static, u64, u32> =
            Box::new(vec![Ok((1, 0)), Err(Error::Config("boom".into()))].into_iter());
        let out: Vec<_> = KWayMerge::new(vec![bad, stream(vec![(0, 1), (3, 1)])])
            .unwrap()
            .collect();
        assert!(out.iter().any(|r| r.is_err()));
        assert!(matches!(out.last(), Some(Err(_))));
    }

    proptest! {
        #[test]
        fn matches_applying_runs_oldest_first(runs in proptest::collection::vec(
            proptest::collection::btree_map(0u64..200, any::<u32>(), 0..60), 0..6)) {
            let mut oracle = BTreeMap::new();
            for r in runs.iter().rev() {
                oracle.extend(r.iter().map(|(&k, &v)| (k, v)));
            }
            let streams = runs.iter().map(|r| stream(r.iter().map(|(&k, &v)| (k, v)).collect())).collect();
            let out: Vec<_> = KWayMerge::new(streams).unwrap().map(|r| r.unwrap()).collect();
            prop_assert_eq!(out, oracle.into_iter().collect::<Vec<_>>());
        }
    }
    proptest! {
        #[test]
        fn merging_sorted_runs_equals_a_stable_sort_of_their_concatenation(
            runs in proptest::collection::vec(proptest::collection::vec(0u64..50, 0..40), 0..6),
            shuffle_one in any::<bool>(),
        ) {
            // Values record (run, position) so that the order of equal keys is checked too.
            let mut runs: Vec<Vec<(u64, (usize, usize))>> = runs
                .into_iter()
                .enumerate()
                .map(|(r, mut keys)| {
                    keys.sort_unstable();
                    keys.into_iter().enumerate().map(|(p, k)| (k, (r, p))).collect()
                })
                .collect();
            if shuffle_one {
                if let Some(r) = runs.iter_mut().find(|r| r.len() > 2) {
                    r.reverse();
                }
            }
            let mut want: Vec<_> = runs.iter().flatten().copied().collect();
            want.sort_by_key(|(k, _)| *k);
            prop_assert_eq!(merge_sorted_runs(runs), want);
        }
    }
}
