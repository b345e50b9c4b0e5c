//! What the cache counts.

use serde::{Deserialize, Serialize};

/// Counters of a [`super::BufferCache`] since its creation. Every field is a count of events; take
/// a snapshot before a phase and [`CacheStats::since`] after it to measure the phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheStats {
    /// Reads answered from the cache.
    pub hits: u64,
    /// Reads that went to the device (each is one device page read).
    pub misses: u64,
    /// Pages dropped to make room, or by [`super::BufferCache::evict`].
    pub evictions: u64,
    /// Resident pages dropped because their extent was retired (never written back).
    pub invalidations: u64,
    /// Pages put in without a demand read: [`super::BufferCache::admit`],
    /// [`super::BufferCache::prefetch`] and pages admitted while a run was written.
    pub prefetch_admissions: u64,
    /// Device reads made by [`super::BufferCache::prefetch`] (not counted as misses).
    pub prefetch_reads: u64,
    /// First read hits on pages that arrived by prefetch admission, once per admission.
    pub prefetch_hits: u64,
    /// Pages written into the cache by [`super::BufferCache::write`].
    pub writes: u64,
    /// Device writes the write path made: dirty pages written back (on eviction, flush or clear),
    /// and writes passed straight through by a cache of capacity 0.
    pub write_backs: u64,
}

impl CacheStats {
    /// `self - earlier`.
    pub fn since(&self, earlier: &CacheStats) -> CacheStats {
        CacheStats {
            hits: self.hits - earlier.hits,
            misses: self.misses - earlier.misses,
            evictions: self.evictions - earlier.evictions,
            invalidations: self.invalidations - earlier.invalidations,
            prefetch_admissions: self.prefetch_admissions - earlier.prefetch_admissions,
            prefetch_reads: self.prefetch_reads - earlier.prefetch_reads,
            prefetch_hits: self.prefetch_hits - earlier.prefetch_hits,
            writes: self.writes - earlier.writes,
            write_backs: self.write_backs - earlier.write_backs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_subtracts_every_field() {
        let earlier = CacheStats {
            hits: 1,
            misses: 2,
            evictions: 3,
            invalidations: 4,
            prefetch_admissions: 5,
            prefetch_reads: 6,
            prefetch_hits: 7,
            writes: 8,
            write_backs: 9,
        };
        let later = CacheStats {
            hits: 11,
            misses: 22,
            evictions: 33,
            invalidations: 44,
            prefetch_admissions: 55,
            prefetch_reads: 66,
            prefetch_hits: 77,
            writes: 88,
            write_backs: 99,
        };
        let d = later.since(&earlier);
        assert_eq!(
            d,
            CacheStats {
                hits: 10,
                misses: 20,
                evictions: 30,
                invalidations: 40,
                prefetch_admissions: 50,
                prefetch_reads: 60,
                prefetch_hits: 70,
                writes: 80,
                write_backs: 90,
            }
        );
        assert_eq!(later.since(&later), CacheStats::default());
    }
}
