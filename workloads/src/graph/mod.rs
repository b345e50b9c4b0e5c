//! Graphs for the OEP 7 traversal experiment: a synthetic power-law graph and a loader for a plain
//! edge-list file, so a user can bring a real graph (SNAP's `.txt` edge lists load as they are).
//!
//! A [`Graph`] has vertices `0..vertices` and undirected edges; traversals walk an edge from
//! either end, as OrientDB's `both()` does.

use crate::load::reader::for_each_line;
use crate::{seeded_rng, WorkloadError};
use rand::Rng;
use std::collections::HashMap;
use std::path::Path;

/// Vertices `0..vertices` and edges between them (each edge once, as (from, to)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    /// Number of vertices, numbered `0..vertices`.
    pub vertices: u32,
    /// Edges as (from, to), each once.
    pub edges: Vec<(u32, u32)>,
}

impl Graph {
    /// Edge indices incident to each vertex (either end).
    pub fn incidence(&self) -> Vec<Vec<u32>> {
        let mut inc = vec![Vec::new(); self.vertices as usize];
        for (i, &(a, b)) in self.edges.iter().enumerate() {
            inc[a as usize].push(i as u32);
            if b != a {
                inc[b as usize].push(i as u32);
            }
        }
        inc
    }

    /// Degrees, largest first.
    pub fn degrees_desc(&self) -> Vec<usize> {
        let mut d: Vec<usize> = self.incidence().iter().map(Vec::len).collect();
        d.sort_unstable_by(|a, b| b.cmp(a));
        d
    }

    /// Hop distances from `source` (u32::MAX for unreachable vertices): the oracle of a BFS.
    pub fn distances(&self, source: u32) -> Vec<u32> {
        let inc = self.incidence();
        let mut dist = vec![u32::MAX; self.vertices as usize];
        let mut queue = std::collections::VecDeque::new();
        dist[source as usize] = 0;
        queue.push_back(source);
        while let Some(v) = queue.pop_front() {
            for &e in &inc[v as usize] {
                let (a, b) = self.edges[e as usize];
                let w = if a == v { b } else { a };
                if dist[w as usize] == u32::MAX {
                    dist[w as usize] = dist[v as usize] + 1;
                    queue.push_back(w);
                }
            }
        }
        dist
    }
}

/// A power-law graph by preferential attachment (Barabási-Albert): vertices arrive one by one and
/// each attaches `edges_per_vertex` edges to earlier vertices chosen with probability proportional
/// to their degree (by drawing a uniform endpoint of the edges so far). Degrees follow a power law
/// with exponent about 3; the graph is connected. Deterministic for `seed`.
pub fn power_law(vertices: u32, edges_per_vertex: u32, seed: u64) -> Result<Graph, WorkloadError> {
    if vertices < 2 || edges_per_vertex == 0 {
        return Err(WorkloadError::InvalidParameter {
            generator: "power-law graph",
            reason: format!(
                "need at least 2 vertices and 1 edge per vertex, got {vertices} and {edges_per_vertex}"
            ),
        });
    }
    let mut rng = seeded_rng(seed, "graph/power-law");
    let m = edges_per_vertex as usize;
    let mut edges: Vec<(u32, u32)> = Vec::with_capacity(vertices as usize * m);
    // Every endpoint of every edge so far: a uniform pick is a degree-proportional vertex.
    let mut ends: Vec<u32> = Vec::with_capacity(2 * vertices as usize * m);
    edges.push((1, 0));
    ends.extend([1, 0]);
    for v in 2..vertices {
        let mut chosen: Vec<u32> = Vec::with_capacity(m);
        let want = m.min(v as usize);
        while chosen.len() < want {
            let w = ends[rng.random_range(0..ends.len())];
            if !chosen.contains(&w) {
                chosen.push(w);
            }
        }
        for w in chosen {
            edges.push((v, w));
            ends.extend([v, w]);
        }
    }
    Ok(Graph { vertices, edges })
}

/// Loads an edge list: one edge per line, two vertex ids (non-negative integers) separated by
/// whitespace or a comma, further columns ignored; blank lines and lines starting with `#` or `%`
/// are comments. Vertex ids are renumbered densely in order of first appearance. A line that does
/// not parse (or is longer than [`crate::load::MAX_LINE_BYTES`]) is an error naming the file, the
/// line and what was expected. A gzipped file (told by its magic bytes) reads as well.
pub fn load_edge_list(path: &Path) -> Result<Graph, WorkloadError> {
    let mut ids: HashMap<u64, u32> = HashMap::new();
    let mut edges = Vec::new();
    for_each_line(path, &['#', '%'], |line, t| {
        let mut cols = t
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|c| !c.is_empty());
        let mut id = |what: &str| -> Result<u32, WorkloadError> {
            let col = cols.next().ok_or_else(|| WorkloadError::Malformed {
                path: path.to_path_buf(),
                line,
                reason: format!("expected two vertex ids, found no {what} in {t:?}"),
            })?;
            let raw: u64 = col.parse().map_err(|_| WorkloadError::Malformed {
                path: path.to_path_buf(),
                line,
                reason: format!("the {what} {col:?} is not a non-negative integer vertex id"),
            })?;
            let next = ids.len() as u32;
            Ok(*ids.entry(raw).or_insert(next))
        };
        let a = id("source")?;
        let b = id("target")?;
        edges.push((a, b));
        Ok(())
    })?;
    if edges.is_empty() {
        return Err(WorkloadError::Empty {
            path: path.to_path_buf(),
            expected: "lines of two vertex ids (source target)".into(),
        });
    }
    Ok(Graph {
        vertices: ids.len() as u32,
        edges,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn power_law_graph_is_connected_and_heavy_tailed() {
        let g = power_law(5000, 3, 1).unwrap();
        assert_eq!(g.edges.len(), 1 + 2 + 3 * 4997);
        assert!(g.distances(0).iter().all(|&d| d != u32::MAX));
        let d = g.degrees_desc();
        let mean = 2.0 * g.edges.len() as f64 / 5000.0;
        // A power law: the hub is far above the mean, most vertices sit near the minimum degree.
        assert!(d[0] as f64 > 15.0 * mean, "max degree {} mean {mean}", d[0]);
        let at_min = d.iter().filter(|&&x| x <= 4).count();
        assert!(at_min > 2500, "{at_min}");
        assert_eq!(power_law(5000, 3, 1).unwrap(), g);
        assert_ne!(power_law(5000, 3, 2).unwrap(), g);
        assert!(power_law(1, 3, 0).is_err());
    }

    #[test]
    fn edge_lists_load_and_bad_lines_say_where() {
        let dir = std::env::temp_dir().join(format!("lsmlab-graph-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("g.txt");
        let mut f = std::fs::File::create(&good).unwrap();
        writeln!(f, "# a comment\n10 20\n20\t30 1.5\n\n30,10\n").unwrap();
        let g = load_edge_list(&good).unwrap();
        assert_eq!(g.vertices, 3);
        assert_eq!(g.edges, vec![(0, 1), (1, 2), (2, 0)]);
        let bad = dir.join("bad.txt");
        std::fs::write(&bad, "1 2\n3 x\n").unwrap();
        let err = load_edge_list(&bad).unwrap_err().to_string();
        assert!(err.contains("bad.txt:2") && err.contains("\"x\""), "{err}");
        std::fs::write(&bad, "1 2\n3\n").unwrap();
        let err = load_edge_list(&bad).unwrap_err().to_string();
        assert!(err.contains(":2") && err.contains("target"), "{err}");
        std::fs::write(&bad, "# nothing\n").unwrap();
        assert!(load_edge_list(&bad).unwrap_err().to_string().contains("empty"));
        assert!(load_edge_list(&dir.join("absent.txt")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
