//! Figures and Markdown of the Leaper experiments, from result rows only (so `lsmlab plot` and
//! `lsmlab report` regenerate them from any result file). The paper's claims are judged from
//! `experiments/claims/leaper.json` by [`crate::claims`], not here.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::experiment::Row;
use crate::peer::rows::{DIP_DROP, FJALL};
use crate::plot::{render_specs, FigureSpec, Filter, Mark};
use crate::rows::{distinct_of, text_of};
use crate::plot::{self, markdown_table, Labels, Panel, Shade};
use crate::rows::fmt_num;
use crate::report::rows_table;
use crate::result::ResultFile;

/// The paper's Table 4 (changes of Leaper against Incremental Warmup during and after compactions),
/// in percent: QPS, p95 latency, cache misses.
pub const PAPER_TABLE4: [(&str, f64, f64, f64); 3] = [
    ("e-commerce", 83.71, -46.35, -40.56),
    ("messaging", 18.30, -7.49, -64.23),
    ("synthetic", 66.16, -62.24, -97.10),
];

/// The paper's overall overhead (Table 5): the QPS decline outside flush and compaction windows, %.
pub const PAPER_OVERHEAD: [(&str, f64); 3] = [("e-commerce", 0.77), ("messaging", 0.95), ("synthetic", 4.68)];

/// The policy Table 4 compares Leaper with.
pub const BASELINE: &str = "incremental-warmup";
pub(crate) const LEAPER: &str = "leaper";

fn num(row: &Row, key: &str) -> Option<f64> {
    row.get(key).and_then(Value::as_f64)
}

/// Copies of the result's rows of `kind`, for a report table.
fn rows_of_kind(result: &ResultFile, kind: &str) -> Vec<Row> {
    result.rows.iter().filter(|r| is_kind(r, kind)).cloned().collect()
}

fn is_kind(row: &Row, kind: &str) -> bool {
    row.get("kind").and_then(Value::as_str) == Some(kind)
}

/// lsmlab's warm-up policies: the figures' and tables' rows. The fjall peer's rows (`engine =
/// fjall`, `policy = fjall`) run on wall time and another cache, so they are shown apart
/// ([`peer_table`]) and never compared with these.
pub const LSMLAB_POLICIES: &[&str] = &[
    "lru",
    "incremental-warmup",
    "prepopulate-flush",
    "prepopulate-all",
    "leaper",
];

/// A row of the fjall peer.
fn is_peer(row: &Row) -> bool {
    row.get("engine").and_then(Value::as_str) == Some(FJALL)
}

/// `leaper-online`'s summary bars: hit ratio and QPS inside the compaction windows, per policy and
/// workload.
pub const ONLINE_FIGURES: &[FigureSpec] = &[
    FigureSpec {
        filters: &[
            Filter::In("kind", &["summary"]),
            Filter::In("policy", LSMLAB_POLICIES),
        ],
        x: "{workload}",
        x_label: "workload",
        series: "{policy}",
        y_label: "block cache hit ratio during and after compactions",
        ..FigureSpec::new(
            "leaper-online-hit-ratio",
            "Hit ratio in compaction windows (T1 + T2), {scale} scale",
            Mark::Bars {
                y: "hit_ratio_in_windows",
            },
        )
    },
    FigureSpec {
        filters: &[
            Filter::In("kind", &["summary"]),
            Filter::In("policy", LSMLAB_POLICIES),
        ],
        x: "{workload}",
        x_label: "workload",
        series: "{policy}",
        y_label: "QPS during and after compactions (virtual clock)",
        ..FigureSpec::new(
            "leaper-online-qps",
            "QPS in compaction windows (T1 + T2), {scale} scale",
            Mark::Bars { y: "qps_in_windows" },
        )
    },
];


/// The policy whose windows a timeline shades: the Table 4 baseline when it ran, else the first.
fn window_policy(policies: &[String]) -> Option<&String> {
    policies
        .iter()
        .find(|p| *p == BASELINE)
        .or_else(|| policies.first())
}

/// The shaded spans of one policy's interval rows: runs of consecutive intervals in a compaction
/// (or, apart, a flush), as [interval, interval + 1) spans.
fn shades_of(rows: &[&Row]) -> Vec<Shade> {
    let mut out = Vec::new();
    for (field, kind) in [("in_compaction", "compaction"), ("in_flush", "flush")] {
        let mut open: Option<f64> = None;
        let mut last = 0.0;
        for r in rows {
            let Some(i) = num(r, "interval") else { continue };
            let on = r.get(field).and_then(Value::as_bool).unwrap_or(false);
            match (on, open) {
                (true, None) => open = Some(i),
                (false, Some(from)) => {
                    out.push(Shade {
                        from,
                        to: i,
                        kind: kind.into(),
                    });
                    open = None;
                }
                _ => {}
            }
            last = i + 1.0;
        }
        if let Some(from) = open {
            out.push(Shade {
                from,
                to: last,
                kind: kind.into(),
            });
        }
    }
    out
}

/// The panels of a timeline: the baseline's hit ratio as measured, then each policy's difference
/// from the baseline per interval in hit ratio (points), QPS (%) and p95 (µs), the baseline itself
/// the zero line. Five policies' absolute lines lie on top of each other (they differ by a point or
/// two of hit ratio); their differences do not. Intervals align across policies: every policy runs
/// the same stream over the same virtual time. Rows averaged over `--repeat` runs carry
/// `<field>_ci95`, drawn as bands on the baseline's panel.
fn difference_panels<'r>(
    policies: &[String],
    baseline: &str,
    of: &dyn Fn(&str) -> Vec<&'r Row>,
) -> Vec<Panel> {
    let by_interval = |p: &str, field: &str| -> Vec<(f64, f64)> {
        of(p)
            .iter()
            .filter_map(|r| Some((num(r, "interval")?, num(r, field)?)))
            .collect()
    };
    let base_rows = of(baseline);
    let ci = format!("hit_ratio{}", crate::repeat::CI_SUFFIX);
    let base_hits: Vec<(f64, f64)> = by_interval(baseline, "hit_ratio")
        .into_iter()
        .map(|(x, y)| (x, y * 100.0))
        .collect();
    let with_ci = base_rows.iter().any(|r| num(r, &ci).is_some());
    let mut panels = vec![Panel {
        y_label: "hit ratio (%)".to_string(),
        series: vec![(baseline.to_string(), base_hits)],
        intervals: if with_ci {
            vec![base_rows
                .iter()
                .filter(|r| num(r, "interval").is_some() && num(r, "hit_ratio").is_some())
                .map(|r| num(r, &ci).unwrap_or(0.0) * 100.0)
                .collect()]
        } else {
            Vec::new()
        },
    }];
    for (field, label, diff) in DIFFERENCES {
        let base: std::collections::BTreeMap<u64, f64> = by_interval(baseline, field)
            .into_iter()
            .map(|(x, y)| (x as u64, y))
            .collect();
        let series = policies
            .iter()
            .map(|p| {
                let pts = by_interval(p, field)
                    .into_iter()
                    .filter_map(|(x, y)| Some((x, diff(y, *base.get(&(x as u64))?)?)))
                    .collect();
                (p.clone(), pts)
            })
            .collect();
        panels.push(Panel {
            y_label: label.to_string(),
            series,
            intervals: Vec::new(),
        });
    }
    panels
}

/// The difference panels under the baseline's hit ratio: field, y label, and the difference of a
/// policy's value from the baseline's (`None` where undefined).
type Difference = (&'static str, &'static str, fn(f64, f64) -> Option<f64>);
const DIFFERENCES: [Difference; 3] = [
    ("hit_ratio", "Δ hit ratio (points)", |v, b| Some((v - b) * 100.0)),
    ("qps", "Δ QPS (%)", |v, b| {
        (b != 0.0).then(|| (v / b - 1.0) * 100.0)
    }),
    ("p95_us", "Δ p95 (µs)", |v, b| Some(v - b)),
];

/// The paper's Figure 1/11-style timelines, one per workload: the Table 4 baseline's hit ratio per
/// interval and every policy's difference from it in hit ratio, QPS and p95
/// ([`difference_panels`]), the baseline's flush and compaction windows (T1) shaded.
pub fn timeline_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let intervals: Vec<&Row> = result
        .rows
        .iter()
        .filter(|r| is_kind(r, "interval") && !is_peer(r))
        .collect();
    let mut paths = Vec::new();
    for workload in distinct_of(intervals.iter().copied(), "workload") {
        let mine: Vec<&Row> = intervals
            .iter()
            .copied()
            .filter(|r| text_of(r, "workload").as_deref() == Some(workload.as_str()))
            .collect();
        let policies = distinct_of(mine.iter().copied(), "policy");
        let of = |policy: &str| -> Vec<&Row> {
            mine.iter()
                .copied()
                .filter(|r| text_of(r, "policy").as_deref() == Some(policy))
                .collect()
        };
        let baseline = window_policy(&policies).cloned().unwrap_or_default();
        let panels = difference_panels(&policies, &baseline, &of);
        let banded = panels.iter().any(|p| !p.intervals.is_empty());
        let shaded = window_policy(&policies);
        let shades = shaded.map(|p| shades_of(&of(p))).unwrap_or_default();
        let interval_s = mine.first().and_then(|r| num(r, "interval_s")).unwrap_or(0.0);
        let note = shaded.map(|p| {
            format!(
                "Δ: policy minus {p}; shaded: {p}'s flush and compaction windows (T1); \
                 one interval = {} ms (virtual)",
                fmt_num(interval_s * 1e3)
            )
        });
        let title = format!(
            "{workload}: hit ratio, QPS and p95 per interval ({} scale)",
            result.scale
        );
        let note = plot::interval_note(note.as_deref(), banded);
        paths.extend(plot::timeline(
            &out_dir.join(format!("leaper-online-timeline-{workload}")),
            &Labels {
                title: &title,
                x: "interval",
                y: "",
                note: note.as_deref(),
            },
            &panels,
            &shades,
        )?);
    }
    Ok(paths)
}

/// One workload's Table 4 line as measured: % change of Leaper against the baseline in QPS, p95 and
/// cache misses inside the compaction windows; `None` where either run lacks the field or the
/// baseline's value is 0.
pub fn table4_measured(result: &ResultFile, workload: &str) -> Option<[Option<f64>; 3]> {
    table4_measured_in(result, workload, "summary")
}

/// [`table4_measured`] over the summary rows of `kind` (`summary`, or the queueing alternative's
/// `clients-summary`).
pub fn table4_measured_in(result: &ResultFile, workload: &str, kind: &str) -> Option<[Option<f64>; 3]> {
    let rows: Vec<&Row> = result
        .rows
        .iter()
        .filter(|r| is_kind(r, kind) && text_of(r, "workload").as_deref() == Some(workload))
        .collect();
    table4_of(&rows)
}

/// The Table 4 chart: for each workload, Leaper's % change against Incremental Warmup in QPS, p95
/// and cache misses during and after compactions, measured beside the paper's.
pub fn table4_figure(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let workloads = distinct_of(result.rows.iter().filter(|r| is_kind(r, "summary")), "workload");
    let measured: Vec<[Option<f64>; 3]> = workloads
        .iter()
        .map(|w| table4_measured(result, w).unwrap_or([None; 3]))
        .collect();
    if measured.iter().all(|m| m.iter().all(Option::is_none)) {
        return Ok(Vec::new());
    }
    let paper = |w: &str, i: usize| {
        PAPER_TABLE4
            .iter()
            .find(|(n, ..)| *n == w)
            .map_or(f64::NAN, |t| [t.1, t.2, t.3][i])
    };
    let mut series = Vec::new();
    for (i, name) in ["QPS", "p95 latency", "cache misses"].iter().enumerate() {
        series.push((
            format!("{name} (lsmlab)"),
            measured.iter().map(|m| m[i].unwrap_or(f64::NAN)).collect(),
        ));
        series.push((
            format!("{name} (paper)"),
            workloads.iter().map(|w| paper(w, i)).collect(),
        ));
    }
    let title = format!("Table 4: leaper vs incremental-warmup ({} scale)", result.scale);
    plot::grouped_bars(
        &out_dir.join("leaper-online-table4"),
        &Labels {
            title: &title,
            x: "workload",
            y: "change (%)",
            note: Some("during and after compactions (T1 + T2); negative latency and misses are better"),
        },
        &workloads,
        &series,
        false,
    )
}

/// Every `leaper-online` figure.
pub fn online_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut paths = timeline_figures(result, out_dir)?;
    paths.extend(table4_figure(result, out_dir)?);
    paths.extend(render_specs(ONLINE_FIGURES, result, out_dir)?);
    Ok(paths)
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:+.1}%"))
}

/// `leaper-online`'s report section: the summary rows, then Table 4 and the overhead beside the
/// paper's.
pub fn online_report(result: &ResultFile) -> String {
    let summaries: Vec<Row> = result
        .rows
        .iter()
        .filter(|r| is_kind(r, "summary") && !is_peer(r))
        .cloned()
        .collect();
    let mut md = format!(
        "Each workload under each warm-up policy on the virtual clock ({} scale, seed {}): whole-run figures, \
         then inside the compaction windows (T1 + T2).\n\n",
        result.scale, result.seed
    );
    md += &rows_table(
        &summaries,
        &[
            "workload",
            "policy",
            "hit_ratio",
            "qps",
            "p95_us",
            "p99_us",
            "hit_ratio_in_windows",
            "qps_in_windows",
            "p95_in_windows_us",
            "cache_misses_in_windows",
            "misses_per_op_in_windows",
            "invalidations",
            "latency_spikes",
            "prefetched_blocks",
            "prefetch_hits",
            "overhead_pct",
            "background_ops",
            "cache_data_ratio",
            "compaction_cache_ratio",
            "cached_inputs_per_compaction",
        ],
    );
    md += "\n### Table 4 and the overhead, beside the paper\n\n";
    let headers = [
        "workload",
        "QPS (paper)",
        "QPS",
        "p95 (paper)",
        "p95",
        "misses (paper)",
        "misses per op",
        "overhead (paper)",
        "overhead",
        "overhead without the collector",
    ]
    .map(String::from);
    let body: Vec<Vec<String>> = distinct_of(summaries.iter(), "workload")
        .iter()
        .map(|w| {
            let m = table4_measured(result, w).unwrap_or([None; 3]);
            let p = PAPER_TABLE4.iter().find(|(n, ..)| n == w);
            let paper = |i: usize| p.map_or("-".into(), |t| pct(Some([t.1, t.2, t.3][i])));
            let leaper = summaries.iter().find(|r| {
                text_of(r, "workload").as_deref() == Some(w.as_str())
                    && text_of(r, "policy").as_deref() == Some(LEAPER)
            });
            let overhead = leaper.and_then(|r| num(r, "overhead_pct"));
            let without = leaper.and_then(|r| num(r, "overhead_pct_without_collector"));
            let paper_overhead = PAPER_OVERHEAD
                .iter()
                .find(|(n, _)| n == w)
                .map_or("-".into(), |(_, v)| format!("{v:.2}%"));
            vec![
                w.clone(),
                paper(0),
                pct(m[0]),
                paper(1),
                pct(m[1]),
                paper(2),
                pct(m[2]),
                paper_overhead,
                overhead.map_or("-".into(), |v| format!("{v:.2}%")),
                without.map_or("-".into(), |v| format!("{v:.2}%")),
            ]
        })
        .collect();
    md += &markdown_table(&headers, &body);
    md += "\nChanges are leaper against incremental-warmup; misses are per operation in the windows (a raw count \
           over a fixed virtual time would charge the faster policy for the operations it served more); the overhead \
           is leaper's QPS decline outside every flush and compaction window (positive = slower), as the paper's \
           Table 5 reports it, and beside it the same decline with leaper's modelled collector time (collector_us \
           per operation, against an operation's cpu_op_us) taken out: the paper sets its collector's '< 1 µs per \
           query' against MySQL queries whose CPU cost it does not give, so the charge is reported both ways.\n";
    md += &queueing_table(result);
    md += &variants_table(result);
    md += &hit_definitions_table(result);
    md += &peer_table(result);
    md
}

/// Table 4 and the overhead of the queueing alternative's rows (`clients-summary`), beside the
/// paper and the single client's; empty without such rows.
fn queueing_table(result: &ResultFile) -> String {
    let rows: Vec<&Row> = result
        .rows
        .iter()
        .filter(|r| is_kind(r, "clients-summary"))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let clients = rows
        .first()
        .and_then(|r| num(r, "clients"))
        .map_or("-".into(), |c| format!("{c}"));
    let mut md = format!("\n### Table 4 with {clients} closed-loop clients (the queueing clock), beside 1 client and the paper\n\n");
    let headers = [
        "workload",
        "QPS (paper)",
        "QPS 1 client",
        "QPS",
        "p95 (paper)",
        "p95 1 client",
        "p95",
        "misses (paper)",
        "misses per op",
        "overhead",
        "qps (iw)",
        "p95_us (iw)",
    ]
    .map(String::from);
    let body: Vec<Vec<String>> = distinct_of(rows.iter().copied(), "workload")
        .iter()
        .map(|w| {
            let one = table4_measured(result, w).unwrap_or([None; 3]);
            let m = table4_measured_in(result, w, "clients-summary").unwrap_or([None; 3]);
            let p = PAPER_TABLE4.iter().find(|(n, ..)| n == w);
            let paper = |i: usize| p.map_or("-".into(), |t| pct(Some([t.1, t.2, t.3][i])));
            let find = |policy: &str| {
                rows.iter().copied().find(|r| {
                    text_of(r, "workload").as_deref() == Some(w.as_str())
                        && text_of(r, "policy").as_deref() == Some(policy)
                })
            };
            let overhead = find(LEAPER).and_then(|r| num(r, "overhead_pct"));
            let base = find(BASELINE);
            vec![
                w.clone(),
                paper(0),
                pct(one[0]),
                pct(m[0]),
                paper(1),
                pct(one[1]),
                pct(m[1]),
                paper(2),
                pct(m[2]),
                overhead.map_or("-".into(), |v| format!("{v:.2}%")),
                base.and_then(|r| num(r, "qps"))
                    .map_or("-".into(), |v| format!("{v:.0}")),
                base.and_then(|r| num(r, "p95_us"))
                    .map_or("-".into(), |v| format!("{v:.0}")),
            ]
        })
        .collect();
    md += &markdown_table(&headers, &body);
    md += "\nThe same comparison (leaper against incremental-warmup in compaction windows) when the clients queue for \
           the modelled CPU and device (see the result's notes); qps (iw) and p95_us (iw) are incremental-warmup's \
           whole-run figures at these clients. The claims read the single client's rows.\n";
    md
}

/// Leaper's Table 4 changes over a set of summary rows (one workload's, of one kind and variant):
/// % change of `leaper` against the baseline in QPS, p95 and cache misses inside the compaction
/// windows; `None` without both runs, and per field where either lacks it or the baseline's value
/// is 0.
fn table4_of(rows: &[&Row]) -> Option<[Option<f64>; 3]> {
    let find = |policy: &str| {
        rows.iter()
            .copied()
            .find(|r| text_of(r, "policy").as_deref() == Some(policy))
    };
    let (leaper, base) = (find(LEAPER)?, find(BASELINE)?);
    let change = |field: &str| {
        let (l, b) = (num(leaper, field)?, num(base, field)?);
        (b != 0.0).then(|| (l / b - 1.0) * 100.0)
    };
    Some([
        change("qps_in_windows"),
        change("p95_in_windows_us"),
        change("misses_per_op_in_windows"),
    ])
}

/// The variants' rows (`variant-summary`): per variant and workload the cache / data ratio, the
/// hit ratio of each policy and Leaper's Table 4 changes, beside the default run's and the paper's;
/// empty without such rows.
fn variants_table(result: &ResultFile) -> String {
    let rows: Vec<&Row> = result
        .rows
        .iter()
        .filter(|r| is_kind(r, "variant-summary"))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut md = "
### Variants: the conditions the verdicts depend on (Table 4 changes of leaper against \
                  incremental-warmup in compaction windows)

"
    .to_string();
    let headers = [
        "variant",
        "workload",
        "cache/data",
        "compaction/cache",
        "hit lru",
        "hit iw",
        "hit leaper",
        "QPS",
        "p95",
        "misses",
        "misses (paper)",
    ]
    .map(String::from);
    let f = |r: Option<&&Row>, k: &str| {
        r.and_then(|r| num(r, k))
            .map_or("-".into(), |v| format!("{v:.3}"))
    };
    let mut body = Vec::new();
    let defaults: Vec<&Row> = result
        .rows
        .iter()
        .filter(|r| is_kind(r, "summary") && !is_peer(r))
        .collect();
    let mut groups: Vec<(String, Vec<&Row>)> = vec![("default".to_string(), defaults)];
    for v in distinct_of(rows.iter().copied(), "variant") {
        let of_v = rows
            .iter()
            .copied()
            .filter(|r| text_of(r, "variant").as_deref() == Some(v.as_str()))
            .collect();
        groups.push((v, of_v));
    }
    for (variant, of_v) in &groups {
        for w in distinct_of(of_v.iter().copied(), "workload") {
            let of_w: Vec<&Row> = of_v
                .iter()
                .copied()
                .filter(|r| text_of(r, "workload").as_deref() == Some(w.as_str()))
                .collect();
            let policy = |p: &str| of_w.iter().find(|r| text_of(r, "policy").as_deref() == Some(p));
            let any = of_w.first();
            let m = table4_of(&of_w).unwrap_or([None; 3]);
            let paper = PAPER_TABLE4.iter().find(|(n, ..)| *n == w).map(|t| t.3);
            body.push(vec![
                variant.clone(),
                w.clone(),
                f(any, "cache_data_ratio"),
                f(any, "compaction_cache_ratio"),
                f(policy("lru"), "hit_ratio"),
                f(policy(BASELINE), "hit_ratio"),
                f(policy(LEAPER), "hit_ratio"),
                pct(m[0]),
                pct(m[1]),
                pct(m[2]),
                pct(paper),
            ]);
        }
    }
    md += &markdown_table(&headers, &body);
    md += "
Each variant changes one condition of the default run (see the result's notes): keys=... draws the ids \
           another way, shape=table2 sizes the data by Table 2's table sizes with the cache and memtables kept in \
           bytes. compaction/cache = input blocks per compaction / cache pages. With one closed-loop client \
           a p95 is one hit's or one miss's latency, so it moves by the ratio of the two (about 44x) when the 95th \
           percentile crosses from hits to misses; misses are counted over each policy's own windows. The claims \
           read the default rows.\n";
    md
}

/// The paper's block-cache hit ratios (Figures 11 and 13(b): 95-99%) beside this run's under each
/// definition the summary rows carry.
fn hit_definitions_table(result: &ResultFile) -> String {
    let rows: Vec<&Row> = result
        .rows
        .iter()
        .filter(|r| is_kind(r, "summary") && !is_peer(r) && r.contains_key("hit_ratio_with_index_filter"))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut md = "\n### Hit-ratio definitions (the paper's block-cache hit ratio: 95-99%; at the synthetic default mixture 97.66% -> 98.59%)\n\n".to_string();
    let headers = [
        "workload",
        "policy",
        "data blocks (hit_ratio)",
        "+ index and filter blocks",
        "reads without device I/O",
    ]
    .map(String::from);
    let f = |r: &Row, k: &str| num(r, k).map_or("-".into(), |v| format!("{v:.4}"));
    let body: Vec<Vec<String>> = rows
        .iter()
        .filter(|r| {
            matches!(
                text_of(r, "policy").as_deref(),
                Some("lru") | Some(BASELINE) | Some(LEAPER)
            )
        })
        .map(|r| {
            vec![
                text_of(r, "workload").unwrap_or_default(),
                text_of(r, "policy").unwrap_or_default(),
                f(r, "hit_ratio"),
                f(r, "hit_ratio_with_index_filter"),
                f(r, "reads_without_io_ratio"),
            ]
        })
        .collect();
    md += &markdown_table(&headers, &body);
    md += "\nhit_ratio counts data-block reads only (the claims' definition). The second column also counts the filter \
           and index lookups of gets and scans, as RocksDB's block-cache hit ratio does with \
           cache_index_and_filter_blocks (a run's filter block or index page misses once, then hits); the third is the \
           share of point and range reads that read nothing from the device (memtable or cached blocks only).\n";
    md
}

/// One engine's interval timeline seen the same way for both engines: hit ratio over all
/// intervals, over those with a flush or compaction (`in_flush` or `in_compaction`) and over the
/// others, from the intervals' counted hits and misses, and the hit-ratio dips' alignment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PeerView {
    pub hit_ratio: Option<f64>,
    pub in_windows: Option<f64>,
    pub outside: Option<f64>,
    pub window_intervals: usize,
    pub intervals: usize,
    pub dips: Option<crate::peer::DipAlignment>,
}

/// [`PeerView`] of one workload's and policy's interval rows.
pub(crate) fn peer_view(result: &ResultFile, workload: &str, policy: &str) -> Option<PeerView> {
    let rows: Vec<&Row> = result
        .rows
        .iter()
        .filter(|r| {
            is_kind(r, "interval")
                && text_of(r, "workload").as_deref() == Some(workload)
                && text_of(r, "policy").as_deref() == Some(policy)
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let flag = |r: &Row, k: &str| r.get(k).and_then(Value::as_bool).unwrap_or(false);
    let window = |r: &Row| flag(r, "in_flush") || flag(r, "in_compaction");
    let count = |r: &Row, k: &str| r.get(k).and_then(Value::as_u64).unwrap_or(0);
    let ratio = |pick: &dyn Fn(&Row) -> bool| {
        let (h, m) = rows.iter().filter(|r| pick(r)).fold((0, 0), |(h, m), r| {
            (h + count(r, "cache_hits"), m + count(r, "cache_misses"))
        });
        crate::peer::hit_ratio(h, m)
    };
    let points: Vec<(Option<f64>, bool)> = rows.iter().map(|r| (num(r, "hit_ratio"), window(r))).collect();
    Some(PeerView {
        hit_ratio: ratio(&|_| true),
        in_windows: ratio(&|r| window(r)),
        outside: ratio(&|r| !window(r)),
        window_intervals: rows.iter().filter(|r| window(r)).count(),
        intervals: rows.len(),
        dips: crate::peer::dip_alignment(&points, DIP_DROP),
    })
}

/// The "fjall beside lsmlab lru" table: per workload with a fjall run, both engines' hit ratios
/// overall, in and outside the intervals with a flush or compaction, and the dips' alignment;
/// empty when the result holds no fjall rows.
pub fn peer_table(result: &ResultFile) -> String {
    let peer_rows = result.rows.iter().filter(|r| is_peer(r));
    let workloads = distinct_of(peer_rows, "workload");
    if workloads.is_empty() {
        return String::new();
    }
    let ratio = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    let mut body = Vec::new();
    for w in &workloads {
        for (engine, policy) in [("lsmlab", "lru"), (FJALL, FJALL)] {
            let Some(v) = peer_view(result, w, policy) else {
                continue;
            };
            let dips = v.dips.map_or("-".to_string(), |d| {
                format!(
                    "{} of {} (chance {:.0}%)",
                    d.dips_in_or_after_window,
                    d.dips,
                    d.window_or_next_share * 100.0
                )
            });
            body.push(vec![
                w.clone(),
                if engine == FJALL {
                    FJALL.to_string()
                } else {
                    format!("{engine} {policy}")
                },
                ratio(v.hit_ratio),
                ratio(v.in_windows),
                ratio(v.outside),
                format!("{} of {}", v.window_intervals, v.intervals),
                dips,
            ]);
        }
    }
    let headers = [
        "workload",
        "engine",
        "hit ratio",
        "in windows",
        "outside windows",
        "window intervals",
        "dips in or after a window",
    ]
    .map(String::from);
    let mut md = "\n### fjall beside lsmlab lru\n\n".to_string();
    md += &markdown_table(&headers, &body);
    md += &format!(
        "\nBoth engines' rows read the same way: a window interval has a flush or compaction in or overlapping it \
         (lsmlab: its T1 on the virtual clock; fjall: seen by probing); hit ratios sum the intervals' counted \
         data-block hits and misses; a dip is an interval more than {:.0} points below the median interval hit \
         ratio, aligned if it is a window interval or the one after, against the share of such intervals \
         (chance). fjall's cache is not LRU and its background work runs on threads in wall time; see the \
         result's notes.\n",
        DIP_DROP * 100.0
    );
    md
}

/// Precision, recall and AUC of `rows` as bar series (one per row, named by `name`).
fn metric_series(rows: &[&Row], name: &dyn Fn(&Row) -> String) -> Vec<(String, Vec<f64>)> {
    rows.iter()
        .map(|r| {
            (
                name(r),
                ["precision", "recall", "auc"]
                    .iter()
                    .map(|k| num(r, k).unwrap_or(f64::NAN))
                    .collect(),
            )
        })
        .collect()
}

/// `leaper-model`'s figures, per workload: the paper's Figure 6 (step-1 model against the last-slot
/// baseline), Figure 8 (feature-group ablation) and Table 3 (feature-group importance beside the
/// paper's).
pub fn model_figures(result: &ResultFile, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let metrics = ["precision".to_string(), "recall".to_string(), "AUC".to_string()];
    let mut paths = Vec::new();
    for workload in distinct_of(result.rows.iter(), "workload") {
        let of = |kind: &str| -> Vec<&Row> {
            result
                .rows
                .iter()
                .filter(|r| is_kind(r, kind) && text_of(r, "workload").as_deref() == Some(workload.as_str()))
                .collect()
        };
        let step1: Vec<&Row> = of("metrics")
            .into_iter()
            .filter(|r| num(r, "step") == Some(1.0))
            .collect();
        // Figures 6 and 8: precision, recall and AUC per series.
        let metric_bars = |stem: String, title: String, series: Vec<(String, Vec<f64>)>| {
            let labels = Labels {
                title: &title,
                x: "metric",
                y: "rate",
                note: None,
            };
            plot::grouped_bars(&out_dir.join(stem), &labels, &metrics, &series, false)
        };
        if !step1.is_empty() {
            paths.extend(metric_bars(
                format!("leaper-model-fig6-{workload}"),
                format!(
                    "Figure 6: {workload}, step-1 model on the held-out day ({} scale)",
                    result.scale
                ),
                metric_series(&step1, &|r| text_of(r, "model").unwrap_or_default()),
            )?);
        }
        let ablation = of("ablation");
        if !ablation.is_empty() {
            paths.extend(metric_bars(
                format!("leaper-model-fig8-{workload}"),
                format!("Figure 8: {workload}, feature groups ({} scale)", result.scale),
                metric_series(&ablation, &|r| text_of(r, "features").unwrap_or_default()),
            )?);
        }
        let importance = of("importance");
        if !importance.is_empty() {
            let groups: Vec<String> = importance.iter().filter_map(|r| text_of(r, "group")).collect();
            let series = vec![
                (
                    "lsmlab".to_string(),
                    importance
                        .iter()
                        .map(|r| num(r, "share_pct").unwrap_or(f64::NAN))
                        .collect(),
                ),
                (
                    "paper".to_string(),
                    importance
                        .iter()
                        .map(|r| num(r, "paper_pct").unwrap_or(f64::NAN))
                        .collect(),
                ),
            ];
            let title = format!("Table 3: {workload}, feature importance ({} scale)", result.scale);
            paths.extend(plot::grouped_bars(
                &out_dir.join(format!("leaper-model-table3-{workload}")),
                &Labels {
                    title: &title,
                    x: "feature group",
                    y: "share of gain (%)",
                    note: None,
                },
                &groups,
                &series,
                false,
            )?);
        }
    }
    Ok(paths)
}

/// `leaper-model`'s report section.
pub fn model_report(result: &ResultFile) -> String {
    let pick = |kind: &str| rows_of_kind(result, kind);
    let mut md = format!(
        "The model offline ({} scale, seed {}): trained on the first days of a logged run, tested on the last.\n\n",
        result.scale, result.seed
    );
    md += &rows_table(
        &pick("metrics"),
        &[
            "workload",
            "model",
            "step",
            "precision",
            "recall",
            "auc",
            "train_s",
            "inference_ms",
            "test_rows",
        ],
    );
    md += "\n### Feature groups (Figure 8) and importance (Table 3)\n\n";
    md += &rows_table(
        &pick("ablation"),
        &["workload", "features", "precision", "recall", "auc", "train_s"],
    );
    md += "\n";
    md += &rows_table(
        &pick("importance"),
        &["workload", "group", "share_pct", "paper_pct"],
    );
    md
}

/// `leaper-sensitivity`'s figures: per sweep, the QPS speedup of Leaper over Incremental Warmup in
/// compaction windows and both policies' hit ratios (the paper's Figures 13 and 14).
pub const SENSITIVITY_FIGURES: &[FigureSpec] = &[
    FigureSpec {
        filters: &[Filter::In("kind", &["gain"])],
        facets: &["sweep"],
        x: "value",
        x_label: "{sweep}",
        series: "leaper / incremental-warmup",
        y_label: "QPS speedup in compaction windows",
        reference_y: Some((1.0, "no gain (1)")),
        ..FigureSpec::new(
            "leaper-sensitivity-speedup-{sweep}",
            "QPS speedup against {sweep} ({scale} scale)",
            Mark::Lines { y: "qps_speedup" },
        )
    },
    FigureSpec {
        filters: &[Filter::In("kind", &["summary"])],
        facets: &["sweep"],
        x: "value",
        x_label: "{sweep}",
        series: "{policy}",
        y_label: "block cache hit ratio",
        ..FigureSpec::new(
            "leaper-sensitivity-hit-ratio-{sweep}",
            "Hit ratio against {sweep} ({scale} scale)",
            Mark::Lines { y: "hit_ratio" },
        )
    },
];

/// `leaper-sensitivity`'s report section.
pub fn sensitivity_report(result: &ResultFile) -> String {
    let pick = |kind: &str| rows_of_kind(result, kind);
    let mut md = format!(
        "Leaper against Incremental Warmup as one knob moves ({} scale, seed {}).\n\n",
        result.scale, result.seed
    );
    md += &rows_table(
        &pick("gain"),
        &[
            "sweep",
            "value",
            "qps_speedup",
            "hit_ratio_gain",
            "miss_reduction_in_windows",
        ],
    );
    md += "\n";
    md += &rows_table(&pick("best"), &["sweep", "best_qps_gain_at", "best_hit_gain_at"]);
    md
}

/// The figure specs of each Leaper experiment, by name (for checks that specs name real fields);
/// the timelines, Table 4 and `leaper-model`'s figures are drawn by code, not specs.
pub fn figure_specs(experiment: &str) -> &'static [FigureSpec] {
    match experiment {
        "leaper-online" => ONLINE_FIGURES,
        "leaper-sensitivity" => SENSITIVITY_FIGURES,
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::RowBuilder;
    use crate::testing::assert_rendered;

    fn interval(policy: &str, i: u64, compaction: bool) -> Row {
        RowBuilder::new()
            .str("workload", "synthetic")
            .str("policy", policy)
            .str("kind", "interval")
            .int("interval", i)
            .num("interval_s", 0.001)
            .num("hit_ratio", if compaction { 0.8 } else { 0.97 })
            .num("qps", 1e5)
            .num("p95_us", if compaction { 110.0 } else { 3.0 })
            .bool("in_flush", i == 1)
            .bool("in_compaction", compaction)
            .build()
    }

    fn summary(policy: &str, qps: f64, p95: f64, misses: u64) -> Row {
        RowBuilder::new()
            .str("workload", "synthetic")
            .str("policy", policy)
            .str("kind", "summary")
            .num("qps_in_windows", qps)
            .num("p95_in_windows_us", p95)
            .int("cache_misses_in_windows", misses)
            .num("misses_per_op_in_windows", misses as f64 / 100.0)
            .num("hit_ratio_in_windows", 0.9)
            .num("overhead_pct", 1.5)
            .build()
    }

    fn result() -> ResultFile {
        let mut r = crate::testing::sample_result();
        r.experiment = "leaper-online".into();
        for p in [BASELINE, LEAPER] {
            for i in 0..10 {
                r.rows.push(interval(p, i, (4..7).contains(&i)));
            }
        }
        r.rows.push(summary(BASELINE, 100.0, 100.0, 200));
        r.rows.push(summary(LEAPER, 150.0, 50.0, 20));
        r
    }

    #[test]
    fn shades_follow_consecutive_window_intervals() {
        let r = result();
        let rows: Vec<&Row> = r
            .rows
            .iter()
            .filter(|r| is_kind(r, "interval"))
            .take(10)
            .collect();
        let shades = shades_of(&rows);
        assert_eq!(
            shades,
            vec![
                Shade {
                    from: 4.0,
                    to: 7.0,
                    kind: "compaction".into()
                },
                Shade {
                    from: 1.0,
                    to: 2.0,
                    kind: "flush".into()
                }
            ]
        );
    }

    #[test]
    fn table4_is_measured_against_the_baseline() {
        let m = table4_measured(&result(), "synthetic").unwrap();
        assert_eq!(m, [Some(50.0), Some(-50.0), Some(-90.0)]);
        assert!(table4_measured(&result(), "messaging").is_none());
        let md = online_report(&result());
        assert!(
            md.contains("+66.2%") && md.contains("+50.0%") && md.contains("-90.0%"),
            "{md}"
        );
        assert!(md.contains("4.68%") && md.contains("1.50%"), "{md}");
    }

    #[test]
    fn online_figures_render() {
        let dir = tempfile::tempdir().unwrap();
        let paths = online_figures(&result(), dir.path()).unwrap();
        let names: Vec<String> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for stem in [
            "leaper-online-timeline-synthetic",
            "leaper-online-table4",
            "leaper-online-hit-ratio",
            "leaper-online-qps",
        ] {
            assert!(names.contains(&format!("{stem}.svg")), "{names:?}");
        }
        for pair in paths.chunks(2) {
            assert_rendered(pair);
        }
        let svg = std::fs::read_to_string(dir.path().join("leaper-online-timeline-synthetic.svg")).unwrap();
        assert!(
            svg.contains("minus incremental-warmup") && svg.contains("flush and compaction windows (T1)"),
            "the note names the shaded run"
        );
        // The baseline's hit ratio, then the differences from it.
        for label in ["hit ratio (%)", "Δ hit ratio (points)", "Δ QPS (%)", "Δ p95 (µs)"] {
            assert!(svg.contains(label), "no panel {label}");
        }
    }

    /// An interval row with counted hits and misses, of lsmlab's `lru` or the fjall peer.
    fn counted(engine: &str, policy: &str, i: u64, window: bool) -> Row {
        let (hits, misses) = if window { (5, 5) } else { (9, 1) };
        RowBuilder::new()
            .str("workload", "synthetic")
            .str("policy", policy)
            .str("engine", engine)
            .str("kind", "interval")
            .int("interval", i)
            .num("hit_ratio", hits as f64 / 10.0)
            .num("qps", 1e5)
            .num("ops_per_s", 1e4)
            .num("p95_us", 3.0)
            .bool("in_flush", window)
            .bool("in_compaction", false)
            .int("cache_hits", hits)
            .int("cache_misses", misses)
            .build()
    }

    fn with_peer() -> ResultFile {
        let mut r = result();
        for i in 0..10 {
            r.rows.push(counted("lsmlab", "lru", i, i == 3));
            // fjall: windows at 2 and 7, a dip at each
            r.rows.push(counted(FJALL, FJALL, i, i == 2 || i == 7));
        }
        r.rows.push(
            RowBuilder::new()
                .str("workload", "synthetic")
                .str("policy", FJALL)
                .str("engine", FJALL)
                .str("kind", "summary")
                .num("hit_ratio_in_windows", 0.5)
                .num("qps", 1e4)
                .build(),
        );
        r
    }

    #[test]
    fn the_lsmlab_policy_list_is_every_warm_up_kind() {
        let names: Vec<&str> = lsmlab_engine::kvstore::WarmUpKind::ALL
            .iter()
            .map(|k| k.name())
            .collect();
        assert_eq!(names, LSMLAB_POLICIES);
        assert!(!LSMLAB_POLICIES.contains(&FJALL));
    }

    #[test]
    fn fjall_rows_stay_out_of_table4_and_the_policy_figures_and_sit_beside_lru() {
        let r = with_peer();
        assert_eq!(
            table4_measured(&r, "synthetic"),
            table4_measured(&result(), "synthetic")
        );
        let lru = peer_view(&r, "synthetic", "lru").unwrap();
        assert_eq!(lru.window_intervals, 1);
        assert_eq!(lru.in_windows, Some(0.5));
        assert_eq!(lru.outside, Some(0.9));
        assert_eq!(lru.hit_ratio, Some(86.0 / 100.0));
        let fj = peer_view(&r, "synthetic", FJALL).unwrap();
        assert_eq!((fj.window_intervals, fj.intervals), (2, 10));
        let d = fj.dips.unwrap();
        assert_eq!((d.dips, d.dips_in_or_after_window), (2, 2));
        assert_eq!(d.window_or_next_share, 0.4);

        let md = online_report(&r);
        let (main, peer) = md
            .split_once("### fjall beside lsmlab lru")
            .expect("the peer table");
        assert!(!main.contains("fjall"), "{main}");
        assert!(
            peer.contains("| lsmlab lru |") && peer.contains("| fjall "),
            "{peer}"
        );
        assert!(
            peer.contains("2 of 2 (chance 40%)") && peer.contains("1 of 10"),
            "{peer}"
        );
        assert!(!online_report(&result()).contains("fjall beside"));

        let dir = tempfile::tempdir().unwrap();
        online_figures(&r, dir.path()).unwrap();
        for stem in [
            "leaper-online-timeline-synthetic",
            "leaper-online-hit-ratio",
            "leaper-online-qps",
        ] {
            let svg = std::fs::read_to_string(dir.path().join(format!("{stem}.svg"))).unwrap();
            // a legend entry is its name on a line of its own
            assert!(!svg.contains("\nfjall\n"), "{stem} draws fjall");
            assert!(svg.contains("\nleaper\n"), "{stem} lost lsmlab's series");
        }
    }
}
