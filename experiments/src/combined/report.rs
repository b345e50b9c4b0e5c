//! The `combined` experiment's notes, figures and REPORT.md section, and its answer to "which of
//! the four ideas matter most when combined, and do any interfere", computed from the rows.

use std::path::{Path, PathBuf};

use super::CombinedConfig;
use crate::experiment::Row;
use crate::plot::{render_specs, FigureSpec, Mark};
use crate::rows::{text_of};
use crate::report::rows_table;
use crate::result::ResultFile;

const FIGURES: &[FigureSpec] = &[
    FigureSpec {
        facets: &["dataset", "policy"],
        x: "{strategy} {layout}",
        x_label: "strategy, cluster layout",
        y_label: "pages per query",
        ..FigureSpec::new(
            "combined-pages-{dataset}-{policy}",
            "Where a query's pages go, cache policy {policy} ({dataset}, {scale})",
            Mark::StackedBars {
                parts: &[
                    ("index hits", "avg_index_hits"),
                    ("index misses", "avg_index_misses"),
                    ("record hits", "avg_record_hits"),
                    ("record misses", "avg_record_misses"),
                ],
            },
        )
    },
    FigureSpec {
        facets: &["dataset"],
        x: "{strategy} {layout}",
        x_label: "strategy, cluster layout",
        series: "{policy}",
        y_label: "modelled query latency (us)",
        ..FigureSpec::new(
            "combined-latency-{dataset}",
            "End-to-end query latency, modelled from cache misses ({dataset}, {scale})",
            Mark::Bars {
                y: "avg_query_modelled_us",
            },
        )
    },
    FigureSpec {
        facets: &["dataset"],
        x: "{strategy} {layout}",
        x_label: "strategy, cluster layout",
        series: "{policy}",
        y_label: "modelled I/O per update (us)",
        ..FigureSpec::new(
            "combined-update-{dataset}",
            "Location update cost, modelled from device I/O ({dataset}, {scale})",
            Mark::Bars {
                y: "update_modelled_us",
            },
        )
    },
];

/// The figure specs of `experiment` (every figure of `combined` is drawn from one).
pub fn figure_specs(experiment: &str) -> &'static [FigureSpec] {
    match experiment {
        "combined" => FIGURES,
        _ => &[],
    }
}

pub(crate) fn figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    render_specs(FIGURES, result, out_dir)
}

/// How the rows were made, for the result's notes.
pub fn method_notes(cfg: &CombinedConfig) -> Vec<String> {
    vec![
        format!(
            "Each cell runs the whole stream on a fresh store: the first {:.0}% of operations under LRU (the same \
             in every cell; Leaper's training log), then the cell's cache policy is switched on and the rest is \
             measured. A range query (box side {} of the extent, centred on a current object location) follows \
             every {} updates; it asks the LSM R-tree (each strategy validates its candidates its own way) and \
             fetches the results' records in one batch sorted by page. Records are {} bytes.",
            cfg.train_fraction * 100.0,
            cfg.selectivity,
            cfg.updates_per_query,
            cfg.record_bytes
        ),
        "Pages per query are page accesses through the shared cache, split by when they happen: the index step \
         (R-tree nodes and the key index a strategy validates with) and the record fetch (data pages, plus \
         position-map pages for paginated); each split into hits and misses. The record side equals the \
         cluster's own count (checked on every query). avg_query_modelled_us = the query's cache misses x one \
         random page read of the device profile (counted, deterministic); avg_query_wall_us is measured beside it. \
         update_modelled_us = the device reads and writes of the measured updates (record rewrite, index update, \
         flushes, merges, write-backs) priced by the profile, per update."
            .to_string(),
        "Cache policies: lru admits nothing a flush or merge writes (new components enter the cache on a missed \
         read); prepopulate admits every page a flush or merge writes; leaper admits the R-tree leaves whose \
         Hilbert key interval overlaps a key range Leaper's model predicts hot (step 1 for a flush, step 2 for a \
         merge), and every internal and antimatter page (which are not Hilbert key ranges); when a merge begins it \
         also evicts the cached leaves of the merge's inputs it predicts cold during the merge (its phase 1: \
         warmup_evictions). Leaper's key space is the Hilbert curve's 4^16 keys in leaper_ranges ranges; accesses \
         are each query result's Hilbert key (a read) and each update's new key (a write), one time slot per \
         slot_ops operations, counted exactly (P = 1). The cluster has no flushes or merges (records are \
         rewritten in place through the cache), so no policy acts on record pages. Every policy is driven by the \
         same cache warmer as the key-value store's, subscribed to the index's lifecycle: pages are offered as the \
         bulk loader writes them, bytes in hand, so an admission costs no device read."
            .to_string(),
        "cache_data_ratio = cache pages / (index pages + record file pages at the end); objects_per_memory_capacity \
         = objects / the entries the memory component holds. DIOL (time-series delay memtables) has no switch in \
         this composition: the location stream is in time order and no series store is involved."
            .to_string(),
    ]
}

fn num(r: &Row, k: &str) -> Option<f64> {
    r.get(k).and_then(|v| v.as_f64())
}

fn key(r: &Row, dims: &[&str]) -> Vec<String> {
    dims.iter().map(|d| text_of(r, d).unwrap_or_default()).collect()
}

/// For dimension `dim`: every group of rows equal in the other dimensions, the ratio of the
/// largest to the smallest `field` across `dim`'s values. Returns (geometric mean, max, groups).
fn spread(rows: &[Row], dim: &str, field: &str) -> Option<(f64, f64, usize)> {
    let others: Vec<&str> = ["dataset", "strategy", "layout", "policy"]
        .into_iter()
        .filter(|d| *d != dim)
        .collect();
    let mut groups: Vec<(Vec<String>, Vec<f64>)> = Vec::new();
    for r in rows {
        let Some(v) = num(r, field) else { continue };
        let k = key(r, &others);
        match groups.iter_mut().find(|g| g.0 == k) {
            Some(g) => g.1.push(v),
            None => groups.push((k, vec![v])),
        }
    }
    let ratios: Vec<f64> = groups
        .iter()
        .filter(|g| g.1.len() > 1)
        .filter_map(|g| {
            let lo = g.1.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = g.1.iter().cloned().fold(0.0, f64::max);
            (lo > 0.0).then_some(hi / lo)
        })
        .collect();
    if ratios.is_empty() {
        return None;
    }
    let gm = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
    let max = ratios.iter().cloned().fold(0.0, f64::max);
    Some((gm, max, ratios.len()))
}

/// The value of `dim` with the lowest `field` in most groups.
fn best_value(rows: &[Row], dim: &str, field: &str) -> Option<(String, usize, usize)> {
    let others: Vec<&str> = ["dataset", "strategy", "layout", "policy"]
        .into_iter()
        .filter(|d| *d != dim)
        .collect();
    let mut groups: Vec<(Vec<String>, String, f64)> = Vec::new();
    for r in rows {
        let (Some(v), Some(val)) = (num(r, field), text_of(r, dim)) else {
            continue;
        };
        let k = key(r, &others);
        match groups.iter_mut().find(|g| g.0 == k) {
            Some(g) if v < g.2 => {
                g.1 = val;
                g.2 = v;
            }
            Some(_) => {}
            None => groups.push((k, val, v)),
        }
    }
    let mut wins: Vec<(String, usize)> = Vec::new();
    for g in &groups {
        match wins.iter_mut().find(|w| w.0 == g.1) {
            Some(w) => w.1 += 1,
            None => wins.push((g.1.clone(), 1)),
        }
    }
    wins.sort_by_key(|w| std::cmp::Reverse(w.1));
    wins.first().map(|w| (w.0.clone(), w.1, groups.len()))
}

/// Mean over matched (dataset, strategy, layout) pairs of `field` under `policy` minus under lru.
fn policy_delta(rows: &[Row], policy: &str, field: &str) -> Option<(f64, usize)> {
    let dims = ["dataset", "strategy", "layout"];
    let mut sum = 0.0;
    let mut n = 0;
    for r in rows
        .iter()
        .filter(|r| text_of(r, "policy").as_deref() == Some(policy))
    {
        let k = key(r, &dims);
        let base = rows
            .iter()
            .find(|b| text_of(b, "policy").as_deref() == Some("lru") && key(b, &dims) == k);
        if let (Some(b), Some(v)) = (base, num(r, field)) {
            if let Some(bv) = num(b, field) {
                sum += v - bv;
                n += 1;
            }
        }
    }
    (n > 0).then(|| (sum / n as f64, n))
}

/// Ratio of `field` under `a` to under `b` of dimension `dim`, per group of the other dimensions
/// named in `per`: (min, max) over those groups.
fn ratio_range(
    rows: &[Row],
    dim: &str,
    a: &str,
    b: &str,
    field: &str,
    per: &[&str],
) -> Option<(f64, f64, usize)> {
    let others: Vec<&str> = ["dataset", "strategy", "layout", "policy"]
        .into_iter()
        .filter(|d| *d != dim)
        .collect();
    let mut by: Vec<(Vec<String>, Vec<f64>)> = Vec::new();
    for r in rows.iter().filter(|r| text_of(r, dim).as_deref() == Some(a)) {
        let k = key(r, &others);
        let Some(o) = rows
            .iter()
            .find(|o| text_of(o, dim).as_deref() == Some(b) && key(o, &others) == k)
        else {
            continue;
        };
        let (Some(x), Some(y)) = (num(r, field), num(o, field)) else {
            continue;
        };
        if y <= 0.0 {
            continue;
        }
        let pk = key(r, per);
        match by.iter_mut().find(|g| g.0 == pk) {
            Some(g) => g.1.push(x / y),
            None => by.push((pk, vec![x / y])),
        }
    }
    // per group of `per`, the geometric mean; then min and max over the groups
    let means: Vec<f64> = by
        .iter()
        .map(|g| (g.1.iter().map(|v| v.ln()).sum::<f64>() / g.1.len() as f64).exp())
        .collect();
    if means.is_empty() {
        return None;
    }
    Some((
        means.iter().cloned().fold(f64::INFINITY, f64::min),
        means.iter().cloned().fold(0.0, f64::max),
        means.len(),
    ))
}

const IDEAS: [(&str, &str); 3] = [
    ("strategy", "the LSM RUM-tree's index strategy"),
    ("layout", "OEP 7's cluster layout"),
    ("policy", "the cache policy (prepopulate, Leaper)"),
];

/// The answer, computed from the rows of the whole grid.
pub fn answer_notes(rows: &[Row]) -> Vec<String> {
    let mut notes = Vec::new();
    let q = "avg_query_modelled_us";
    let u = "update_modelled_us";
    let mut ranked: Vec<(f64, String)> = Vec::new();
    for (dim, what) in IDEAS {
        let (Some((gq, mq, n)), su) = (spread(rows, dim, q), spread(rows, dim, u)) else {
            continue;
        };
        let best = best_value(rows, dim, q)
            .map(|(v, w, of)| format!("; lowest query latency: {v} in {w} of {of} groups"))
            .unwrap_or_default();
        let upd = su
            .map(|(g, m, _)| format!("; update cost spread {g:.2}x (max {m:.2}x)"))
            .unwrap_or_default();
        ranked.push((
            gq,
            format!("{what}: query latency spread {gq:.2}x (max {mq:.2}x over {n} groups){best}{upd}"),
        ));
    }
    if ranked.is_empty() {
        return notes;
    }
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    notes.push(format!(
        "Answer, which idea matters most when combined (the largest/smallest modelled query latency across one \
         switch, holding the others fixed; geometric mean over the groups): {}.",
        ranked.iter().map(|r| r.1.clone()).collect::<Vec<_>>().join(" > ")
    ));
    // Interference 1: index warm-up against record pages in the shared cache.
    let mut parts = Vec::new();
    for policy in ["prepopulate", "leaper"] {
        let (Some((di, n)), Some((dr, _))) = (
            policy_delta(rows, policy, "avg_index_misses"),
            policy_delta(rows, policy, "avg_record_misses"),
        ) else {
            continue;
        };
        let dq = policy_delta(rows, policy, q).map(|x| x.0).unwrap_or(0.0);
        let verdict = if di < 0.0 && dr > 0.0 {
            format!("interferes: it saves index misses but the pages it admits evict record pages ({:.0}% of the index saving given back)", 100.0 * dr / -di)
        } else if dr > 0.0 {
            "interferes: record misses rose and index misses did not fall".to_string()
        } else {
            "no interference on record pages".to_string()
        };
        parts.push(format!(
            "{policy} vs lru over {n} (strategy, layout) pairs: index misses per query {di:+.2}, record misses {dr:+.2}, \
             modelled latency {dq:+.1} us; {verdict}"
        ));
    }
    if !parts.is_empty() {
        notes.push(format!("Interference in the shared cache: {}.", parts.join("; ")));
    }
    // Leaper on R-tree components: does it pay off?
    let prec = |p: &str| {
        let v: Vec<f64> = rows
            .iter()
            .filter(|r| text_of(r, "policy").as_deref() == Some(p))
            .filter_map(|r| num(r, "prefetch_precision"))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let admitted = |p: &str| -> u64 {
        rows.iter()
            .filter(|r| text_of(r, "policy").as_deref() == Some(p))
            .filter_map(|r| r.get("leaves_admitted").and_then(|v| v.as_u64()))
            .sum()
    };
    if let Some((lo, hi, n)) = ratio_range(rows, "policy", "leaper", "lru", q, &["strategy"]) {
        let vs_pre = ratio_range(rows, "policy", "leaper", "prepopulate", q, &["strategy"]);
        notes.push(format!(
            "Leaper on R-tree components (leaves as Hilbert key ranges): modelled query latency leaper/lru {lo:.3}..{hi:.3} \
             across {n} strategies{}; it admitted {} leaves where prepopulate admitted {}, with prefetch precision \
             (first hits / admissions) {} vs {}. {}",
            vs_pre
                .map(|(a, b, _)| format!(", leaper/prepopulate {a:.3}..{b:.3}"))
                .unwrap_or_default(),
            admitted("leaper"),
            admitted("prepopulate"),
            prec("leaper").map_or("-".into(), |p| format!("{p:.3}")),
            prec("prepopulate").map_or("-".into(), |p| format!("{p:.3}")),
            if hi < 0.99 {
                "It pays off against plain LRU in every strategy."
            } else if lo < 0.99 {
                "It pays off against plain LRU for some strategies only."
            } else {
                "It does not pay off against plain LRU here."
            }
        ));
    }
    // Interactions between the index and the layout.
    if let Some((lo, hi, n)) = ratio_range(
        rows,
        "layout",
        "paginated",
        "single-page",
        "avg_record_pages",
        &["strategy"],
    ) {
        let lat = ratio_range(rows, "layout", "paginated", "single-page", q, &["strategy"]);
        notes.push(format!(
            "Cluster layout across strategies: record pages per query paginated/single-page {lo:.2}..{hi:.2} over {n} \
             strategies{}; {}",
            lat.map(|(a, b, _)| format!(", modelled latency {a:.2}..{b:.2}")).unwrap_or_default(),
            // judged on latency (the end-to-end effect), else on record pages
            match lat.map_or((lo, hi), |(a, b, _)| (a, b)) {
                (a, b) if b / a.max(1e-9) > 1.1 =>
                    "the layout's effect on latency depends on the strategy (they interact).",
                _ => "the layout's effect is the same whatever the strategy (no interaction).",
            }
        ));
    }
    notes
}

/// The REPORT.md section.
pub fn section(result: &ResultFile) -> String {
    let mut md = format!(
        "Moving objects end to end: a range query on the secondary LSM R-tree validates its candidates by \
         strategy and fetches the records from the cluster by RID, sorted by page; location updates rewrite \
         the record and update the index; one buffer cache under a cache policy ({} scale, seed {}).\n\n",
        result.scale, result.seed
    );
    md += "### The answer (computed from the rows)\n\n";
    for n in answer_notes(&result.rows) {
        md += &format!("- {n}\n");
    }
    md += "\n### Rows\n\n";
    md += &rows_table(
        &result.rows,
        &[
            "dataset",
            "strategy",
            "layout",
            "policy",
            "cache_data_ratio",
            "objects_per_memory_capacity",
            "avg_results",
            "avg_index_pages",
            "avg_record_pages",
            "avg_index_misses",
            "avg_record_misses",
            "hit_ratio",
            "avg_query_modelled_us",
            "avg_query_wall_us",
            "update_modelled_us",
            "updates_per_wall_s",
            "leaves_admitted",
            "prefetch_precision",
        ],
    );
    md.push('\n');
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::RowBuilder;

    /// Rows where the strategy triples the latency, the layout adds 10% and the policy nothing
    /// but swaps index misses for record misses.
    fn rows() -> Vec<Row> {
        let mut out = Vec::new();
        for (s, sf) in [("Eager", 3.0), ("UM", 1.0)] {
            for (l, lf) in [("paginated", 1.1), ("single-page", 1.0)] {
                for (p, im, rm) in [("lru", 4.0, 10.0), ("prepopulate", 3.0, 11.0)] {
                    out.push(
                        RowBuilder::new()
                            .str("dataset", "d")
                            .str("strategy", s)
                            .str("layout", l)
                            .str("policy", p)
                            .num("avg_query_modelled_us", 100.0 * sf * lf)
                            .num("update_modelled_us", 10.0)
                            .num("avg_index_misses", im)
                            .num("avg_record_misses", rm)
                            .num("avg_record_pages", 20.0 * lf)
                            .build(),
                    );
                }
            }
        }
        out
    }

    #[test]
    fn the_answer_ranks_the_switches_by_their_measured_spread() {
        let notes = answer_notes(&rows());
        let rank = &notes[0];
        let (s, l, p) = (
            rank.find("index strategy").unwrap(),
            rank.find("cluster layout").unwrap(),
            rank.find("cache policy").unwrap(),
        );
        assert!(s < l && l < p, "{rank}");
        assert!(
            rank.contains("spread 3.00x") && rank.contains("UM in 4 of 4"),
            "{rank}"
        );
        let interference = notes.iter().find(|n| n.starts_with("Interference")).unwrap();
        assert!(
            interference.contains("-1.00") && interference.contains("+1.00"),
            "{interference}"
        );
        assert!(
            interference.contains("100% of the index saving given back"),
            "{interference}"
        );
        let layout = notes.iter().find(|n| n.starts_with("Cluster layout")).unwrap();
        assert!(layout.contains("no interaction"), "{layout}");
    }

    #[test]
    fn no_rows_no_answer() {
        assert!(answer_notes(&[]).is_empty());
    }
}
