//! `oep7-graph`: BFS and shortest-path queries over a graph stored as vertex and edge records (the
//! OEP's second success metric, "graph traversals (shortest path)").
//!
//! As in OrientDB's graph model with regular edges, a vertex record holds its properties and the
//! record ids of its edges, an edge record the ids of its two vertices; vertices and edges live in
//! two clusters (OrientDB's `V` and `E` classes) on one device and cache. Traversals fetch every
//! record by id: a vertex, its edges, their other ends. The graph is a synthetic power-law graph
//! (preferential attachment) unless `edge_list` names a plain edge-list file.
//!
//! Loading follows OrientDB's order: vertices are created first, then edges, and each vertex is
//! then updated with its edge ids, so vertex records grow after they were placed (with
//! `grow_vertices = false` they are created with room for their links instead).

use std::collections::{HashSet, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::cluster::{self, ClusterOptions, Layout, RecordCluster, Rid};
use lsmlab_engine::storage::{Device, MemDevice};
use lsmlab_workloads::graph::{load_edge_list, power_law, Graph};
use rand::Rng;

use super::fetch::workloads_rng;
use super::{counting_note, map_entries_per_page, Cost, Setup, Snapshot, LAYOUT_NOTE, PAPER};
use crate::config::{check, Config, KeyHelp};
use crate::experiment::{RowBuilder, RunContext, RunOutput, Scale, TypedExperiment};

pub(crate) struct Oep7Graph;

lsmlab_harness::config! {
    /// `oep7-graph`'s parameters.
    pub struct GraphConfig {
        /// `records` is the vertex count of the synthetic graph.
        #[serde(flatten)]
        pub setup: Setup,
        /// edges each new vertex attaches to earlier ones (preferential attachment; mean degree = 2x)
        pub edges_per_vertex: u32,
        /// path of a plain edge-list file (two vertex ids per line, # comments) to use instead of the
        /// synthetic graph; empty = synthetic
        pub edge_list: String,
        /// cache capacity as a fraction of the data pages of the vertex and edge clusters (0.2 = the OEP's
        /// 20%)
        pub cache_fraction: f64,
        /// queries of each kind (BFS, shortest path), from random vertices
        pub queries: u64,
        /// a BFS stops after visiting this many vertices
        pub bfs_limit: u64,
        /// true: vertices are created, then edges, then each vertex updated with its edge ids (OrientDB's
        /// order; records grow); false: vertices created with room for their links
        pub grow_vertices: bool,
        /// property bytes per vertex record
        pub vertex_bytes: usize,
        /// property bytes per edge record
        pub edge_bytes: usize,
    }
}

impl Config for GraphConfig {
    /// The setup's `records` are the graph's vertices here.
    fn adjust_help(help: &mut Vec<KeyHelp>) {
        for (key, text) in help.iter_mut() {
            if *key == "records" {
                *text = "vertices of the synthetic power-law graph (ignored with edge_list)";
            }
        }
    }

    fn validate(&self) -> anyhow::Result<()> {
        self.setup.validate()?;
        check(
            "edges_per_vertex",
            self.edges_per_vertex,
            self.edges_per_vertex >= 1,
            "at least 1",
        )?;
        check(
            "cache_fraction",
            self.cache_fraction,
            self.cache_fraction > 0.0 && self.cache_fraction <= 1.0,
            "a fraction in (0, 1]",
        )?;
        check("queries", self.queries, self.queries >= 1, "at least 1")?;
        check("bfs_limit", self.bfs_limit, self.bfs_limit >= 2, "at least 2")?;
        if !self.edge_list.is_empty() {
            check(
                "edge_list",
                &self.edge_list,
                Path::new(&self.edge_list).is_file(),
                "an existing edge-list file",
            )?;
        }
        Ok(())
    }
}

/// Bytes of a record id inside a record: paginated 12 (cluster + position), single-page 20
/// (cluster + page/slot + delversion, OEP 7's RID).
fn rid_bytes(layout: Layout) -> usize {
    match layout {
        Layout::Paginated => 12,
        Layout::SinglePage => 20,
    }
}

fn put_rid(out: &mut Vec<u8>, rid: Rid, layout: Layout) {
    out.extend_from_slice(&rid.cluster.to_le_bytes());
    out.extend_from_slice(&rid.position.to_le_bytes());
    if layout == Layout::SinglePage {
        out.extend_from_slice(&rid.delversion.to_le_bytes());
    }
}

#[allow(clippy::expect_used)] // fixed-width slices of a record this module encoded
fn get_rid(b: &[u8], layout: Layout) -> Rid {
    Rid {
        cluster: u32::from_le_bytes(b[0..4].try_into().expect("4 bytes")),
        position: u64::from_le_bytes(b[4..12].try_into().expect("8 bytes")),
        delversion: if layout == Layout::SinglePage {
            u64::from_le_bytes(b[12..20].try_into().expect("8 bytes"))
        } else {
            0
        },
    }
}

/// A vertex record: id, properties, link count, edge ids.
fn vertex_record(v: u32, props: usize, links: &[Rid], room: usize, layout: Layout) -> Vec<u8> {
    let mut r = Vec::with_capacity(8 + props + room * rid_bytes(layout));
    r.extend_from_slice(&v.to_le_bytes());
    r.extend(std::iter::repeat_n(b'v', props));
    r.extend_from_slice(&(links.len() as u32).to_le_bytes());
    for &l in links {
        put_rid(&mut r, l, layout);
    }
    r.resize(r.len() + (room - links.len()) * rid_bytes(layout), 0);
    r
}

#[allow(clippy::expect_used)] // fixed-width slices of a record this module encoded
fn vertex_links(r: &[u8], props: usize, layout: Layout) -> Vec<Rid> {
    let at = 4 + props;
    let n = u32::from_le_bytes(r[at..at + 4].try_into().expect("4 bytes")) as usize;
    let w = rid_bytes(layout);
    (0..n).map(|i| get_rid(&r[at + 4 + i * w..], layout)).collect()
}

struct GraphBed {
    device: Arc<MemDevice>,
    vertices: Box<dyn RecordCluster>,
    edges: Box<dyn RecordCluster>,
    vids: Vec<Rid>,
}

impl GraphBed {
    fn load(layout: Layout, g: &Graph, cfg: &GraphConfig) -> anyhow::Result<GraphBed> {
        let device = Arc::new(MemDevice::new(cfg.setup.page_size));
        let dev: Arc<dyn Device> = device.clone();
        let cache = Arc::new(BufferCache::new(dev, 1 << 20));
        let mut vertices = cluster::open(layout, cache.clone(), ClusterOptions { cluster_id: 10 })?;
        let mut edges = cluster::open(layout, cache.clone(), ClusterOptions { cluster_id: 11 })?;
        let inc = g.incidence();
        let recs: Vec<Vec<u8>> = (0..g.vertices)
            .map(|v| {
                let room = if cfg.grow_vertices {
                    0
                } else {
                    inc[v as usize].len()
                };
                vertex_record(v, cfg.vertex_bytes, &[], room, layout)
            })
            .collect();
        let vids = vertices.insert_batch(&recs)?;
        let erecs: Vec<Vec<u8>> = g
            .edges
            .iter()
            .map(|&(a, b)| {
                let mut r = Vec::new();
                put_rid(&mut r, vids[a as usize], layout);
                put_rid(&mut r, vids[b as usize], layout);
                r.extend(std::iter::repeat_n(b'e', cfg.edge_bytes));
                r
            })
            .collect();
        let eids = edges.insert_batch(&erecs)?;
        for (v, links) in inc.iter().enumerate() {
            let l: Vec<Rid> = links.iter().map(|&e| eids[e as usize]).collect();
            let r = vertex_record(v as u32, cfg.vertex_bytes, &l, l.len(), layout);
            anyhow::ensure!(vertices.update(vids[v], &r)?.is_found(), "vertex {v} vanished");
        }
        cache.flush_dirty()?;
        Ok(GraphBed {
            device,
            vertices,
            edges,
            vids,
        })
    }

    fn data_pages(&self) -> u64 {
        self.vertices.space().data_pages + self.edges.space().data_pages
    }

    fn set_cache(&mut self, pages: usize) -> anyhow::Result<()> {
        let dev: Arc<dyn Device> = self.device.clone();
        let cache = Arc::new(BufferCache::new(dev, pages.max(1)));
        self.vertices.set_cache(cache.clone())?;
        self.edges.set_cache(cache)?;
        Ok(())
    }

    fn snapshot(&self) -> Snapshot {
        let mut c = self.vertices.stats();
        let e = self.edges.stats();
        c.page_reads += e.page_reads;
        c.map_page_reads += e.map_page_reads;
        c.fetches += e.fetches;
        Snapshot {
            cpu: crate::measure::thread_cpu(),
            io: self.device.stats(),
            cache: self.vertices.cache().stats(),
            cluster: c,
        }
    }

    /// BFS from `source`, stopping after `limit` visits or when `target` is reached; returns the
    /// vertices visited and the target's hop distance.
    fn bfs(
        &mut self,
        layout: Layout,
        props: usize,
        source: u32,
        target: Option<u32>,
        limit: u64,
    ) -> anyhow::Result<(u64, Option<u32>)> {
        let target_rid = target.map(|t| self.vids[t as usize]);
        let start = self.vids[source as usize];
        let mut seen: HashSet<Rid> = HashSet::from([start]);
        let mut queue = VecDeque::from([(start, 0u32)]);
        let mut visited = 0u64;
        if target_rid == Some(start) {
            return Ok((0, Some(0)));
        }
        while let Some((v, d)) = queue.pop_front() {
            let rec = self
                .vertices
                .fetch(v)?
                .found()
                .ok_or_else(|| anyhow::anyhow!("vertex {v:?} not found"))?;
            visited += 1;
            for e in vertex_links(&rec, props, layout) {
                let er = self
                    .edges
                    .fetch(e)?
                    .found()
                    .ok_or_else(|| anyhow::anyhow!("edge {e:?} not found"))?;
                let w = rid_bytes(layout);
                let (a, b) = (get_rid(&er, layout), get_rid(&er[w..], layout));
                let other = if a == v { b } else { a };
                if seen.insert(other) {
                    if Some(other) == target_rid {
                        return Ok((visited, Some(d + 1)));
                    }
                    queue.push_back((other, d + 1));
                }
            }
            if target.is_none() && visited >= limit {
                break;
            }
        }
        Ok((visited, None))
    }
}

/// Peak RSS per record for the memory check: an upper bound, rounded up from the slope of peak RSS
/// between the tiny defaults and ten times their records (re-measure with `/usr/bin/time -v lsmlab
/// run oep7-graph --scale tiny`, then again with `--set records=20000`). The measured slope is in
/// `docs/scale.md#memory-estimates-where-the-constants-come-from`.
const BYTES_PER_RECORD: u64 = 3000;

impl TypedExperiment for Oep7Graph {
    type Config = GraphConfig;

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "oep7-graph",
            paper: PAPER,
            about: "OEP 7 success metric: BFS and shortest path over vertex and edge records fetched by RID, 20% of the data cached",
            figures: super::report::graph_figures,
            report: super::report::graph_report,
        }
    }

    fn defaults(&self, scale: Scale) -> GraphConfig {
        GraphConfig {
            setup: Setup::defaults(scale, [2_000, 10_000, 1_000_000]),
            edges_per_vertex: 5,
            edge_list: String::new(),
            cache_fraction: 0.2,
            queries: match scale {
                Scale::Tiny => 5,
                Scale::Small => 10,
                Scale::Paper => 100,
            },
            bfs_limit: match scale {
                Scale::Tiny => 200,
                Scale::Small => 1_000,
                Scale::Paper => 10_000,
            },
            grow_vertices: true,
            vertex_bytes: 100,
            edge_bytes: 32,
        }
    }

    fn run(&self, cfg: &GraphConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        let s = &cfg.setup;
        let profile = s.profile()?;
        let ps = s.page_size;
        let (g, source) = if cfg.edge_list.is_empty() {
            (
                power_law(s.records as u32, cfg.edges_per_vertex, ctx.seed)?,
                format!(
                    "synthetic power-law graph (preferential attachment, {} edges per new vertex)",
                    cfg.edges_per_vertex
                ),
            )
        } else {
            (
                load_edge_list(Path::new(&cfg.edge_list))?,
                format!("edge list {}", cfg.edge_list),
            )
        };
        // The same queries for both layouts.
        let mut rng = workloads_rng(ctx.seed, "oep7-graph/queries");
        let bfs_sources: Vec<u32> = (0..cfg.queries)
            .map(|_| rng.random_range(0..g.vertices))
            .collect();
        let pairs: Vec<(u32, u32)> = (0..cfg.queries)
            .map(|_| (rng.random_range(0..g.vertices), rng.random_range(0..g.vertices)))
            .collect();
        let expected: Vec<Option<u32>> = pairs
            .iter()
            .map(|&(a, b)| Some(g.distances(a)[b as usize]).filter(|&d| d != u32::MAX))
            .collect();
        let mut rows = Vec::new();
        let mut notes_pages = Vec::new();
        // Per layout: the load, then the two queries.
        ctx.progress.set_total(s.clusters.len() * 3);
        for &layout in &s.clusters {
            ctx.progress.begin(format!("{layout} load"));
            let mut bed = GraphBed::load(layout, &g, cfg)?;
            let cache_pages = ((bed.data_pages() as f64 * cfg.cache_fraction).ceil() as usize).max(1)
                + bed.vertices.map_page_ids().len()
                + bed.edges.map_page_ids().len();
            let vs = bed.vertices.space();
            let es = bed.edges.space();
            let vertex_moves = bed.vertices.stats().moves;
            notes_pages.push(format!(
                "{layout}: {} vertex pages ({:.1} vertices/page, {} external links), {} edge pages ({:.1} edges/page), {} map pages",
                vs.data_pages,
                vs.live_records as f64 / vs.data_pages as f64,
                vs.external_links,
                es.data_pages,
                es.live_records as f64 / es.data_pages as f64,
                vs.map_pages + es.map_pages
            ));
            for query in ["bfs", "shortest-path"] {
                ctx.progress.begin(format!("{layout} {query}"));
                bed.set_cache(cache_pages)?;
                let before = bed.snapshot();
                let start = Instant::now();
                let mut visited = 0u64;
                for q in 0..cfg.queries as usize {
                    if query == "bfs" {
                        visited += bed
                            .bfs(layout, cfg.vertex_bytes, bfs_sources[q], None, cfg.bfs_limit)?
                            .0;
                    } else {
                        let (a, b) = pairs[q];
                        let (n, hops) = bed.bfs(layout, cfg.vertex_bytes, a, Some(b), u64::MAX)?;
                        anyhow::ensure!(
                            hops == expected[q],
                            "shortest path {a}->{b}: {hops:?} hops, expected {:?}",
                            expected[q]
                        );
                        visited += n;
                    }
                }
                let wall = start.elapsed();
                let cost = Cost::between(&before, &bed.snapshot(), wall);
                let mut row = RowBuilder::new()
                    .str("cluster", layout.name())
                    .str("query", query)
                    .int("queries", cfg.queries)
                    .int("vertices_visited", visited)
                    .int("records_fetched", cost.cluster.fetches)
                    .int("page_reads", cost.io.page_reads)
                    .num(
                        "pages_per_fetch",
                        cost.cluster.page_reads as f64 / cost.cluster.fetches.max(1) as f64,
                    )
                    .num("cache_hit_ratio", cost.hit_ratio())
                    .num("ms", cost.wall_ms())
                    .num("cache_fraction", cfg.cache_fraction)
                    .int("cache_pages", cache_pages as u64)
                    .int("data_pages", bed.data_pages())
                    .int("map_pages", vs.map_pages + es.map_pages)
                    .int("map_entries_per_page", map_entries_per_page(ps) as u64)
                    .num(
                        "vertices_per_data_page",
                        vs.live_records as f64 / vs.data_pages as f64,
                    )
                    .num(
                        "edges_per_data_page",
                        es.live_records as f64 / es.data_pages as f64,
                    )
                    .int("external_links", vs.external_links + es.external_links)
                    .int("vertices_moved_on_load", vertex_moves);
                row = cost.modelled_fields(row, "modelled_ms", profile, ps);
                rows.push(row.build());
            }
        }
        let degrees = g.degrees_desc();
        let notes = vec![
            format!(
                "Graph: {source}: {} vertices, {} edges, max degree {}, mean degree {:.1}. Vertex records: 4-byte id + \
                 {} property bytes + link count + one record id per edge (12 bytes paginated: cluster + position; 20 \
                 bytes single-page: cluster + page/slot + delversion); edge records: two vertex ids + {} property bytes.",
                g.vertices,
                g.edges.len(),
                degrees.first().copied().unwrap_or(0),
                2.0 * g.edges.len() as f64 / g.vertices.max(1) as f64,
                cfg.vertex_bytes,
                cfg.edge_bytes
            ),
            format!(
                "Ratios that drive the gap: {ps}-byte pages; {}; position-map entries per map page {}; cache = {} x \
                 the data pages of both clusters (+ map pages), emptied before each query kind, shared by both clusters.",
                notes_pages.join("; "),
                map_entries_per_page(ps),
                cfg.cache_fraction
            ),
            format!(
                "grow_vertices = {}: {}. {} BFS queries (each stops after {} vertices) and {} shortest-path queries \
                 (BFS until the target is reached; hop counts checked against an in-memory BFS) from the same random \
                 vertices for both layouts; every vertex and edge is fetched by record id, one by one. page_reads = \
                 device reads (cache misses). vertices_moved_on_load counts vertex updates that no longer fit where the \
                 record was: paginated splits such a record (head chunk in another page, tail left behind, so a fetch \
                 reads the map page and two data pages), single-page moves it whole behind an external link (two \
                 pages).",
                cfg.grow_vertices,
                if cfg.grow_vertices {
                    "vertices were created, then the edges, then each vertex was updated with its edge ids, so vertex \
                     records grew after placement (OrientDB's order when edges are added)"
                } else {
                    "vertices were created with room for their edge ids"
                },
                cfg.queries,
                cfg.bfs_limit,
                cfg.queries
            ),
            counting_note(profile, ps),
            LAYOUT_NOTE.into(),
        ];
        Ok(RunOutput {
            rows,
            notes,
            extra_config: Default::default(),
        })
    }

    /// `None` for an edge-list file (its size is known only once loaded).
    fn memory_estimate(
        &self,
        config: &Self::Config,
        data: &[crate::experiment::DataSpec],
    ) -> Option<crate::experiment::MemoryEstimate> {
        (config.edge_list.is_empty() && data.is_empty())
            .then(|| config.setup.memory_estimate(BYTES_PER_RECORD))
    }
}
