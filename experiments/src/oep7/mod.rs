//! The OrientDB OEP 7 experiments (`docs/papers/oep7.md#the-proposal-in-brief`): OrientDB's
//! paginated cluster against OEP 7's single-page cluster ([`lsmlab_engine::cluster`]) under record
//! fetches, YCSB, delete/insert churn and graph traversals.
//!
//! This module holds what they share: the cluster setup ([`Setup`]: layouts, page size, record
//! count, the device profile modelled time is quoted for), a test bed on a counted memory device
//! and the shared buffer cache (`Bed`), and the notes that state the ratios driving the gap
//! between the layouts in every result: records per data page, position-map entries per map page
//! and the cached fraction of the data.

mod fetch;
mod graph;
mod report;
mod space;
pub(crate) mod ycsb;

use crate::plot::FixedStyle;
use std::sync::Arc;
use std::time::Duration;

use lsmlab_engine::cache::{BufferCache, CacheStats};
use lsmlab_engine::cluster::{
    self, ClusterOptions, Layout, RecordCluster, DEFAULT_CLUSTER_PAGE_SIZE,
};
use lsmlab_engine::storage::{Device, DeviceProfile, IoStats, MemDevice};

use crate::config::{self, check};
use crate::experiment::{MemoryEstimate, RowBuilder, Scale};

pub(crate) const PAPER: &str = "OrientDB OEP 7";

/// This paper as the registry lists it (see `lsmlab_harness::paper`).
pub fn paper() -> lsmlab_harness::paper::Paper {
    lsmlab_harness::paper::Paper {
        id: "oep7",
        title: PAPER,
        kind: lsmlab_harness::paper::PaperKind::Paper,
        experiments: vec![
            &fetch::Oep7Fetch,
            &ycsb::Oep7Ycsb,
            &space::Oep7Space,
            &graph::Oep7Graph,
        ],
        claims: Some(("oep7.json", include_str!("../../claims/oep7.json"))),
        traces: vec![&crate::trace::YcsbTraces],
        styles: const {
            &[
                FixedStyle::colored("paginated", 9),
                FixedStyle::colored("single-page", 1),
            ]
        },
        figures: report::figure_specs,
    }
}

/// The POC's numbers (`docs/papers/oep7.md#the-proposal-in-brief`): fetch every record one by one.
pub const POC_WARM_MS: (f64, f64) = (2513.0, 1845.0);
pub(crate) const POC_COLD_MS: (f64, f64) = (79950.0, 26327.0);

lsmlab_harness::config! {
    /// Settings every OEP 7 experiment shares.
    pub struct Setup {
        /// record cluster layouts: paginated (OrientDB's position map + data pages), single-page (OEP 7's
        /// in-page map)
        #[serde(with = "config::text_list")]
        pub clusters: Vec<Layout>,
        /// bytes per page, both layouts (OrientDB's default 65536; single-page addresses at most 65536)
        pub page_size: usize,
        /// records loaded before measuring
        pub records: u64,
        /// device profile the modelled_* fields are quoted for: nvme, sata-ssd, hdd (every profile also gets
        /// modelled_*_<profile>)
        pub profile: String,
    }
}

/// Memory an OEP 7 run needs besides its records (the binary and the cache's fixed part), rounded
/// up from the peak RSS of tiny runs.
const RUN_BASE_BYTES: u64 = 16 << 20;

impl Setup {
    /// The run's peak memory: one cluster at a time holds its records on its memory device (and
    /// the cache a fraction of them), beside the record ids and the workload's operations, so the
    /// peak grows with `records`; `bytes_per_record` is the experiment's measured slope (peak RSS
    /// between the tiny records and ten times them, every layout).
    pub fn memory_estimate(&self, bytes_per_record: u64) -> MemoryEstimate {
        MemoryEstimate {
            bytes: self.records * bytes_per_record + RUN_BASE_BYTES,
            basis: format!(
                "{} records x {bytes_per_record} B, measured per record, + {} MiB",
                self.records,
                RUN_BASE_BYTES >> 20
            ),
        }
    }

    /// The setup at `scale`, with `records` the tiny, small and paper record counts.
    pub fn defaults(scale: Scale, records: [u64; 3]) -> Setup {
        Setup {
            clusters: Layout::ALL.to_vec(),
            page_size: DEFAULT_CLUSTER_PAGE_SIZE,
            records: match scale {
                Scale::Tiny => records[0],
                Scale::Small => records[1],
                Scale::Paper => records[2],
            },
            profile: DeviceProfile::SataSsd.name().into(),
        }
    }

    /// Refuses a setup no run can use, naming the parameter and the accepted values.
    pub fn validate(&self) -> anyhow::Result<()> {
        check(
            "clusters",
            "(empty)",
            !self.clusters.is_empty(),
            "at least one layout",
        )?;
        check(
            "page_size",
            self.page_size,
            (4096..=65536).contains(&self.page_size) && self.page_size.is_power_of_two(),
            "a power of two in 4096..=65536 (the single-page layout's in-page pointers are 2 bytes)",
        )?;
        check("records", self.records, self.records >= 100, "at least 100")?;
        self.profile().map(|_| ())
    }

    /// The device profile named by `profile`.
    pub fn profile(&self) -> anyhow::Result<DeviceProfile> {
        self.profile
            .parse::<DeviceProfile>()
            .map_err(|e| anyhow::anyhow!("parameter `profile`: {e}"))
    }
}

/// A cluster on its own counted memory device and cache.
pub(crate) struct Bed {
    pub device: Arc<MemDevice>,
    pub cluster: Box<dyn RecordCluster>,
}

impl Bed {
    /// An empty cluster with a cache large enough to load without evicting.
    pub fn new(layout: Layout, page_size: usize) -> anyhow::Result<Bed> {
        let device = Arc::new(MemDevice::new(page_size));
        let dev: Arc<dyn Device> = device.clone();
        let cache = Arc::new(BufferCache::new(dev, 1 << 20));
        let cluster = cluster::open(layout, cache, ClusterOptions::default())?;
        Ok(Bed { device, cluster })
    }

    /// Swaps in an empty cache of `pages` pages (the old one's dirty pages written first).
    pub fn set_cache(&mut self, pages: usize) -> anyhow::Result<()> {
        let dev: Arc<dyn Device> = self.device.clone();
        self.cluster
            .set_cache(Arc::new(BufferCache::new(dev, pages.max(1))))?;
        Ok(())
    }

    /// Reads every page of the cluster into the cache (a warm cache), map pages first.
    pub fn warm(&self) -> anyhow::Result<()> {
        let cache = self.cluster.cache();
        for &id in self
            .cluster
            .map_page_ids()
            .iter()
            .chain(self.cluster.data_page_ids())
        {
            cache.read(id)?;
        }
        Ok(())
    }

    /// A snapshot of the counters a measured phase subtracts.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            cpu: crate::measure::thread_cpu(),
            io: self.device.stats(),
            cache: self.cluster.cache().stats(),
            cluster: self.cluster.stats(),
        }
    }

    /// Cache pages for `fraction` of this cluster's data pages.
    pub fn cache_pages_for(&self, fraction: f64) -> usize {
        ((self.cluster.space().data_pages as f64 * fraction).ceil() as usize).max(1)
    }

    /// The cache of a run at `fraction` of the data pages with map pages `map`: `cached` adds room
    /// for every position-map page (they are few and hot, and an LRU cache keeps them), `uncached`
    /// adds none, since the run drops them after every operation ([`Bed::forget_map_pages`]).
    pub fn cache_pages_with(&self, fraction: f64, map: &str) -> usize {
        let extra = if map == MAP_CACHED {
            self.cluster.map_page_ids().len()
        } else {
            0
        };
        self.cache_pages_for(fraction) + extra
    }

    /// Under `map_cache = uncached`: evicts every cached position-map page (a dirty one is written
    /// back, as a page the cache cannot keep is), so the next operation reads its map page from
    /// the device. A no-op for the single-page layout, which has no map pages.
    pub fn forget_map_pages(&self, map: &str) -> anyhow::Result<()> {
        if map == MAP_CACHED {
            return Ok(());
        }
        let cache = self.cluster.cache();
        for &id in self.cluster.map_page_ids() {
            if cache.contains(id) {
                cache.evict(id)?;
            }
        }
        Ok(())
    }
}

/// `map_cache = cached`: the cache keeps the position map (the default, see [`MAP_CACHE_NOTE`]).
pub(crate) const MAP_CACHED: &str = "cached";

/// `map_cache`'s values.
pub(crate) const MAP_CACHE_VALUES: [&str; 2] = [MAP_CACHED, "uncached"];

/// What the `map_cache` switch means, for the results' notes.
pub(crate) const MAP_CACHE_NOTE: &str = "map_cache: cached (the default, what OrientDB's read cache does: \
     position-map pages go through the same disk cache as data pages, and being few and touched by every \
     fetch they stay in it; the cache gets room for all of them on top of its data fraction) or uncached \
     (a counterfactual: every position-map page is evicted after each operation, so every fetch of the \
     paginated layout reads its map page from the device; the single-page layout has no map pages and is \
     unchanged). The uncached rows show what the POC's cold 3x and the OEP's 20%-cached gain need.";

/// Checks a `map_cache` list.
pub(crate) fn check_map_cache(list: &[String]) -> anyhow::Result<()> {
    crate::config::check_items(
        "map_cache",
        list,
        |m| MAP_CACHE_VALUES.contains(&m.as_str()),
        "cached or uncached",
    )?;
    crate::config::check("map_cache", "(empty)", !list.is_empty(), "at least one of cached, uncached")
}

/// Counters at one moment.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Snapshot {
    pub cpu: Duration,
    pub io: IoStats,
    pub cache: CacheStats,
    pub cluster: lsmlab_engine::cluster::ClusterStats,
}

/// What a measured phase cost.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cost {
    pub wall: Duration,
    /// Thread CPU time of the phase.
    pub cpu: Duration,
    pub io: IoStats,
    pub cache: CacheStats,
    pub cluster: lsmlab_engine::cluster::ClusterStats,
}

impl Cost {
    pub fn between(before: &Snapshot, after: &Snapshot, wall: Duration) -> Cost {
        Cost {
            wall,
            cpu: after.cpu.saturating_sub(before.cpu),
            io: after.io.since(&before.io),
            cache: after.cache.since(&before.cache),
            cluster: after.cluster.since(&before.cluster),
        }
    }

    pub fn wall_ms(&self) -> f64 {
        self.wall.as_secs_f64() * 1e3
    }

    /// Measured CPU time plus the device time `profile` charges for the counted I/O
    /// (`docs/design.md#measuring`).
    pub fn modelled_ms(&self, profile: DeviceProfile, page_size: usize) -> f64 {
        self.cpu.as_secs_f64() * 1e3 + profile.modelled_io_ms(self.io, page_size)
    }

    pub fn hit_ratio(&self) -> f64 {
        let n = self.cache.hits + self.cache.misses;
        if n == 0 {
            0.0
        } else {
            self.cache.hits as f64 / n as f64
        }
    }

    /// `modelled_ms` (for `profile`) and `modelled_ms_<p>` for every profile.
    pub fn modelled_fields(
        &self,
        row: RowBuilder,
        name: &str,
        profile: DeviceProfile,
        page_size: usize,
    ) -> RowBuilder {
        let mut row = row.num(name, self.modelled_ms(profile, page_size));
        for p in DeviceProfile::ALL {
            row = row.num(
                &format!("{name}_{}", p.name().replace('-', "_")),
                self.modelled_ms(p, page_size),
            );
        }
        row
    }
}

/// Position-map entries per map page at this page size (OrientDB: 5,038 per 64 KiB page).
pub fn map_entries_per_page(page_size: usize) -> usize {
    cluster::entries_per_map_page(page_size)
}

/// The ratio fields every row carries.
pub(crate) fn ratio_fields(row: RowBuilder, bed: &Bed, page_size: usize) -> RowBuilder {
    let s = bed.cluster.space();
    let per_page = if s.data_pages == 0 {
        0.0
    } else {
        s.live_records as f64 / s.data_pages as f64
    };
    row.num("records_per_data_page", per_page)
        .int("map_entries_per_page", map_entries_per_page(page_size) as u64)
        .int("data_pages", s.data_pages)
        .int("map_pages", s.map_pages)
}

/// The note stating the driving ratios.
pub fn ratios_note(page_size: usize, record_bytes: &str, per_page: &[(Layout, f64)], cache: &str) -> String {
    let pages: Vec<String> = per_page.iter().map(|(l, n)| format!("{l} {n:.1}")).collect();
    format!(
        "Ratios that drive the gap (kept at every scale): {page_size}-byte pages; records of {record_bytes}; \
         records per data page after the load: {}; position-map entries per map page: {} (OrientDB's 13-byte \
         entries; the single-page layout has no map); {cache}. Every row carries records_per_data_page, \
         map_entries_per_page, data_pages and map_pages.",
        pages.join(", "),
        map_entries_per_page(page_size)
    )
}

/// The note on what is and is not counted.
pub fn counting_note(profile: DeviceProfile, page_size: usize) -> String {
    format!(
        "Pages per fetch/op count page accesses through the buffer cache (hits and misses; each page once \
         per operation); page_reads/device_reads count device reads (cache misses). Both layouts use the \
         same in-memory free-space map (OrientDB keeps one in its own file), not counted. Modelled time = \
         the thread's CPU time on the counted memory device (not wall time, which other processes on a shared \
         machine inflate) + counted device I/O priced by the profile \
         ({}; {}; {}); modelled_* is quoted for {} and modelled_*_<profile> for each. Page size {page_size}.",
        DeviceProfile::Hdd.describe(),
        DeviceProfile::SataSsd.describe(),
        DeviceProfile::Nvme.describe(),
        profile.name()
    )
}

/// The note on the layouts as implemented.
pub const LAYOUT_NOTE: &str = "paginated = OrientDB's OPaginatedClusterV2 + OClusterPositionMapV2: a fetch reads the \
     position-map page and the data page; an update that no longer fits is rewritten tail first into its old page and \
     the rest (the head) goes to another page, the map repointed (so a grown record reads map + 2 data pages); deleted \
     positions are never reused. single-page = OEP 7: 10-byte in-page map entries (2-byte pointer + 8-byte \
     delversion), external links for records that grew out of their page (moved again, never chained, and moved back \
     home when they fit again: lsmlab's choice where the OEP is silent), tombstones, slot reuse with delversion + 1; \
     records larger than a page are chained in both layouts.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratios_hold_at_64k() {
        assert_eq!(map_entries_per_page(65536), 5038);
        let s = Setup::defaults(Scale::Tiny, [100, 200, 300]);
        s.validate().unwrap();
        let mut bad = s.clone();
        bad.page_size = 131072;
        assert!(bad.validate().unwrap_err().to_string().contains("page_size"));
        bad = s.clone();
        bad.profile = "tape".into();
        assert!(bad.validate().unwrap_err().to_string().contains("tape"));
    }

    /// Under `map_cache = uncached` every paginated fetch reads its map page from the device, and
    /// the single-page layout (no map pages) reads exactly what it reads under `cached`.
    #[test]
    fn uncached_map_pages_cost_one_device_read_per_paginated_fetch() {
        let device_reads = |layout: Layout, map: &str| {
            let mut bed = Bed::new(layout, 65536).unwrap();
            let (ids, _) = ycsb::load_ycsb_records(&mut bed, 2_000, 7).unwrap();
            // Room for every data page: only map pages can miss after the first pass.
            bed.set_cache(bed.cache_pages_with(1.0, map)).unwrap();
            for &rid in &ids {
                assert!(bed.cluster.fetch(rid).unwrap().is_found());
            }
            let before = bed.device.stats().page_reads;
            for &rid in &ids {
                assert!(bed.cluster.fetch(rid).unwrap().is_found());
                bed.forget_map_pages(map).unwrap();
            }
            let data_pages = bed.cluster.space().data_pages;
            (bed.device.stats().page_reads - before, ids.len() as u64, data_pages)
        };
        let (cached, _, _) = device_reads(Layout::Paginated, "cached");
        let (uncached, fetches, data_pages) = device_reads(Layout::Paginated, "uncached");
        assert_eq!(cached, 0, "a warm cache with room for the map reads nothing");
        // One map page read per fetch; the map page read in takes a frame, so a few data pages
        // are read again (at most each once per pass).
        assert!(uncached >= fetches && uncached <= fetches + data_pages, "{uncached} reads, {fetches} fetches");
        assert_eq!(device_reads(Layout::SinglePage, "uncached"), device_reads(Layout::SinglePage, "cached"));
    }
}
