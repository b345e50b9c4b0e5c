//! A compact warm-up access log: the [`AccessRecord`]s of a warm-up, in the order they were
//! logged, in 16 bytes per point access instead of the record's 32.
//!
//! Each access keeps its virtual time (the `f64` itself, so it reads back exactly) and one word:
//! the key, with the access's kind in the two top bits. A point read or write of a key below
//! 2^62 is that word alone; a read of a key range keeps its first key in the word and its last
//! key in a side table (24 bytes in all); anything else (a key at or above 2^62, a written
//! range) is kept whole in a second side table. The side tables are read back in order, so the
//! log reads back sequentially ([`AccessLog::iter`]); only the times are at hand by index.
//!
//! The values are kept in chunks of [`CHUNK`] values, so that the log grows without copying
//! itself and holds at most one partly filled chunk per sequence beyond its accesses (a `Vec`
//! doubling its capacity holds up to twice its length).

use super::AccessRecord;
use crate::kvstore::Access;

/// Values per chunk of a log's sequences (512 KiB of `u64`s or `f64`s).
pub const CHUNK: usize = 1 << 16;

/// The kind of an access, in the two top bits of its word.
const KIND_SHIFT: u32 = 62;
const KEY_MASK: u64 = (1 << KIND_SHIFT) - 1;
const POINT_READ: u64 = 0;
const POINT_WRITE: u64 = 1;
const RANGE_READ: u64 = 2;
const OTHER: u64 = 3;

/// An append-only sequence kept in chunks of [`CHUNK`] values.
#[derive(Clone, Debug, Default)]
struct Chunks<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T: Copy> Chunks<T> {
    fn push(&mut self, v: T) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(v),
            _ => {
                let mut c = Vec::with_capacity(CHUNK);
                c.push(v);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }

    fn get(&self, i: usize) -> Option<T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK).copied()
    }

    fn capacity_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.capacity()).sum::<usize>() * std::mem::size_of::<T>()
            + self.chunks.capacity() * std::mem::size_of::<Vec<T>>()
    }
}

/// A warm-up's accesses, compact (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct AccessLog {
    times: Chunks<f64>,
    words: Chunks<u64>,
    /// The last keys of the range reads, in order.
    range_his: Chunks<u64>,
    /// The accesses no word can hold, in order.
    others: Vec<AccessRecord>,
}

impl AccessLog {
    /// An empty log.
    pub fn new() -> Self {
        AccessLog::default()
    }

    /// Appends an access.
    pub fn push(&mut self, r: AccessRecord) {
        let word = if r.lo <= KEY_MASK && r.hi <= KEY_MASK {
            match (r.access, r.lo == r.hi) {
                (Access::Read, true) => Some(POINT_READ << KIND_SHIFT | r.lo),
                (Access::Write, true) => Some(POINT_WRITE << KIND_SHIFT | r.lo),
                (Access::Read, false) => {
                    self.range_his.push(r.hi);
                    Some(RANGE_READ << KIND_SHIFT | r.lo)
                }
                (Access::Write, false) => None,
            }
        } else {
            None
        };
        let word = word.unwrap_or_else(|| {
            self.others.push(r);
            OTHER << KIND_SHIFT
        });
        self.times.push(r.time);
        self.words.push(word);
    }

    /// Accesses logged.
    pub fn len(&self) -> usize {
        self.times.len
    }

    /// Whether no access was logged.
    pub fn is_empty(&self) -> bool {
        self.times.len == 0
    }

    /// The time of access `i` (`None` past the end).
    pub fn time(&self, i: usize) -> Option<f64> {
        self.times.get(i)
    }

    /// The index of the first access for which `pred` of its time is false, assuming it is true
    /// for a prefix of the log and false after (as [`slice::partition_point`]).
    pub fn partition_point_time(&self, mut pred: impl FnMut(f64) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.time(mid).is_some_and(&mut pred) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The accesses in the order they were logged.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            log: self,
            next: 0,
            next_hi: 0,
            next_other: 0,
        }
    }

    /// Bytes the log holds on the heap (its chunks' capacity and its side tables').
    pub fn heap_bytes(&self) -> usize {
        self.times.capacity_bytes()
            + self.words.capacity_bytes()
            + self.range_his.capacity_bytes()
            + self.others.capacity() * std::mem::size_of::<AccessRecord>()
    }
}

impl Extend<AccessRecord> for AccessLog {
    fn extend<I: IntoIterator<Item = AccessRecord>>(&mut self, iter: I) {
        for r in iter {
            self.push(r);
        }
    }
}

impl FromIterator<AccessRecord> for AccessLog {
    fn from_iter<I: IntoIterator<Item = AccessRecord>>(iter: I) -> Self {
        let mut log = AccessLog::new();
        log.extend(iter);
        log
    }
}

/// The accesses of an [`AccessLog`], in order.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    log: &'a AccessLog,
    next: usize,
    next_hi: usize,
    next_other: usize,
}

impl Iterator for Iter<'_> {
    type Item = AccessRecord;

    fn next(&mut self) -> Option<AccessRecord> {
        let time = self.log.times.get(self.next)?;
        let word = self.log.words.get(self.next)?;
        self.next += 1;
        let key = word & KEY_MASK;
        match word >> KIND_SHIFT {
            POINT_READ => Some(AccessRecord::read(time, key)),
            POINT_WRITE => Some(AccessRecord::write(time, key)),
            RANGE_READ => {
                let hi = self.log.range_his.get(self.next_hi)?;
                self.next_hi += 1;
                Some(AccessRecord::scan(time, key, hi))
            }
            _ => {
                let r = self.log.others.get(self.next_other).copied()?;
                self.next_other += 1;
                Some(r)
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.log.len() - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_every_kind_of_access_in_order() {
        let big = 1u64 << 62;
        let records = vec![
            AccessRecord::read(0.5, 3),
            AccessRecord::write(0.5, 0),
            AccessRecord::scan(1.25, 10, 25),
            AccessRecord::read(2.0, KEY_MASK),
            AccessRecord::read(2.0, big),
            AccessRecord::write(3.0, u64::MAX),
            AccessRecord::scan(3.5, 7, big),
            AccessRecord {
                time: 4.0,
                lo: 5,
                hi: 9,
                access: Access::Write,
            },
            AccessRecord::scan(4.5, 9, 2),
            AccessRecord::write(f64::NAN, 1),
            AccessRecord::read(-1.0, 8),
        ];
        let log: AccessLog = records.iter().copied().collect();
        assert_eq!(log.len(), records.len());
        let back: Vec<AccessRecord> = log.iter().collect();
        assert_eq!(back.len(), records.len());
        for (a, b) in records.iter().zip(&back) {
            assert_eq!(a.time.to_bits(), b.time.to_bits());
            assert_eq!((a.lo, a.hi, a.access), (b.lo, b.hi, b.access));
        }
        // the point accesses below 2^62 take no side entry, the two range reads below it their
        // last keys; the other four (a key at or above 2^62, a written range) are kept whole
        assert_eq!(log.range_his.len, 2);
        assert_eq!(log.others.len(), 4);
        assert_eq!(log.iter().len(), records.len());
        assert_eq!(log.iter().skip(3).len(), records.len() - 3);
    }

    #[test]
    fn grows_in_chunks_and_finds_times_by_bisection() {
        let n = 2 * CHUNK + 10;
        let log: AccessLog = (0..n as u64)
            .map(|i| AccessRecord::read(i as f64 / 4.0, i))
            .collect();
        assert_eq!(log.len(), n);
        assert_eq!(log.times.chunks.len(), 3);
        assert_eq!(log.time(CHUNK), Some(CHUNK as f64 / 4.0));
        assert_eq!(log.time(n), None);
        // 16 bytes per point access, and a partly filled last chunk
        let bytes = log.heap_bytes();
        assert!(
            (3 * CHUNK * 16..3 * CHUNK * 16 + 1024).contains(&bytes),
            "{bytes}"
        );
        for cut in [0.0, 1.0, 100.25, (n / 4) as f64, n as f64] {
            let want = (0..n).position(|i| i as f64 / 4.0 >= cut).unwrap_or(n);
            assert_eq!(log.partition_point_time(|t| t < cut), want, "{cut}");
        }
        assert!(log
            .iter()
            .zip(0u64..)
            .all(|(r, i)| r.lo == i && r.time == i as f64 / 4.0));
        assert_eq!(AccessLog::new().partition_point_time(|_| true), 0);
        assert!(AccessLog::new().iter().next().is_none());
    }
}
